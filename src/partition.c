/*-------------------------------------------------------------------------
 *
 * partition.c
 *	  The attached partition handle: the one place where a backend's cached
 *	  partition (ElPartitionMeta, topic.h) meets its slot in shared memory
 *	  (slots.c).  It attaches, recovers the partition's offset counter from
 *	  the catalog after a server start or a freed slot, and runs every
 *	  operation on the shared state (taking offsets, routing, the last stable
 *	  offset) through el_with_partition.  No other file reads or keeps an
 *	  ElSlotRef.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "locks.h"
#include "partition.h"
#include "segment.h"
#include "standby.h"

/*
 * The offset a partition's counter resumes at after a server start, a
 * promotion, or a freed slot: the largest of the persisted floor, the log
 * start offset, the largest stored offset plus one, and (with consumer
 * groups) the largest committed position.  Offsets that no reader could
 * have seen, trailing aborted ones, may thus be handed out again; an offset
 * any reader or group could have seen never is.
 *
 * The catalog and the segments are read with one fresh snapshot, and the
 * segments through the table AM, without privilege checks: a producer needs
 * no SELECT privilege, and row security must not hide the largest offset.
 */
/*
 * The lock that orders a partition's counter recovery with maintenance
 * rounds: a round holds it (eventlog._lock_routing in
 * eventlog._maintain_topic; locks.c) from reading the routing until it has
 * recorded the active segment's base offset and committed; recovery takes
 * it for the time it reads the catalog.  So recovery never routes offsets
 * below a base a round is about to record.
 */
static void
el_routing_locktag(LOCKTAG *tag, ElTopic *topic, int32 partition)
{
	el_locktag(tag, EL_LOCK_ROUTING, el_routing_lock_key(topic->topic_id, partition));
}

static int64 el_recover_locked(ElTopic *topic, int32 partition, ElRouting *routing);

/* Whether eventlog.published_offsets exists (0.3.0 on). */
static bool
el_publication_exists(void)
{
	Oid			nsp = get_namespace_oid(EL_SCHEMA_NAME, true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("published_offsets", nsp));
}
static bool el_stable_offset_unslotted(ElTopic *topic, int32 partition,
									   ElStableOffset *out);

int64
el_recover_next_offset(ElTopic *topic, int32 partition, ElRouting *routing)
{
	LOCKTAG		tag;
	volatile int64 next = 0;

	el_routing_locktag(&tag, topic, partition);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	PG_TRY();
	{
		next = el_recover_locked(topic, partition, routing);
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();
	return next;
}

static int64
el_recover_locked(ElTopic *topic, int32 partition, ElRouting *routing)
{
	Oid			nsp = el_segment_schema_oid();
	Snapshot	snapshot;
	Oid			argtypes[2] = {INT4OID, INT4OID};
	Datum		args[2];
	int64		next = 0;
	int			nsegs = 0;
	Oid		   *relids = NULL;
	int32	   *segnos = NULL;
	int64	   *bases = NULL;
	int			i;
	int			ret;
	int			pin;
	bool		listed = false;

	snapshot = RegisterSnapshot(GetLatestSnapshot());

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	pin = el_pin_search_path();
	PushActiveSnapshot(snapshot);
	args[0] = Int32GetDatum(topic->topic_id);
	args[1] = Int32GetDatum(partition);
	/*
	 * The floor, the log start, and every group's committed position and
	 * members' fetch positions: a group may have moved past trailing aborted
	 * offsets, which must then never be handed out again.  And the stable
	 * offset published for standbys (standby.c): a standby reader may have
	 * waited past trailing aborted offsets up to it.  (Not in a database
	 * whose extension predates 0.3.0, without the table.)
	 */
	ret = SPI_execute_with_args(el_publication_exists() ?
		"SELECT greatest(p.offset_floor, p.log_start_offset,"
		"                (SELECT max(greatest(o.next_offset, o.fetch_offset))"
		"                   FROM " EL_SCHEMA_NAME ".group_offsets o"
		"                  WHERE o.topic_id = p.topic_id AND o.partition = p.partition),"
		"                (SELECT s.stable_offset"
		"                   FROM " EL_SCHEMA_NAME ".published_offsets s"
		"                  WHERE s.topic_id = p.topic_id AND s.partition = p.partition))"
		"  FROM " EL_SCHEMA_NAME ".partition_catalog p"
		" WHERE p.topic_id = $1 AND p.partition = $2" :
		"SELECT greatest(p.offset_floor, p.log_start_offset,"
		"                (SELECT max(greatest(o.next_offset, o.fetch_offset))"
		"                   FROM " EL_SCHEMA_NAME ".group_offsets o"
		"                  WHERE o.topic_id = p.topic_id AND o.partition = p.partition))"
		"  FROM " EL_SCHEMA_NAME ".partition_catalog p"
		" WHERE p.topic_id = $1 AND p.partition = $2",
		2, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read eventlog.partition_catalog: %s",
			 SPI_result_code_string(ret));
	if (SPI_processed == 1)
	{
		bool		isnull;

		listed = true;
		next = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	}
	ret = SPI_execute_with_args(
		"SELECT s.table_name, s.segment_no, s.base_offset"
		"  FROM " EL_SCHEMA_NAME ".segment_catalog s"
		" WHERE s.topic_id = $1 AND s.partition = $2"
		" ORDER BY s.segment_no",
		2, argtypes, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read eventlog.segment_catalog: %s",
			 SPI_result_code_string(ret));
	nsegs = (int) SPI_processed;
	relids = palloc0(sizeof(Oid) * Max(nsegs, 1));
	segnos = palloc0(sizeof(int32) * Max(nsegs, 1));
	bases = palloc0(sizeof(int64) * Max(nsegs, 1));
	for (i = 0; i < nsegs; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		relids[i] = get_relname_relid(SPI_getvalue(tup, desc, 1), nsp);
		segnos[i] = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		bases[i] = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		if (isnull)
			bases[i] = EL_BASE_UNKNOWN;
	}
	PopActiveSnapshot();
	el_unpin_search_path(pin);
	SPI_finish();

	/*
	 * A partition always has a segment, and a segment its guard trigger,
	 * both created in the transaction that creates it.  Without them, the
	 * catalog or the segment is being restored (pg_restore loads the
	 * catalog tables, then the records, and creates the triggers last):
	 * counting now would hand out offsets the records still to come hold,
	 * and the counter is recovered once.  Refuse; the caller retries later.
	 * (A partition no longer listed was dropped: its callers find that out
	 * and say so.)
	 */
	if (listed && nsegs == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("partition %d of topic \"%s\" has no segment", partition, topic->name),
				 errdetail("Every partition has a segment table in eventlog.segment_catalog; a restore that has not loaded them yet leaves it without."),
				 errhint("Retry once pg_restore has finished.")));
	for (i = 0; i < nsegs; i++)
	{
		if (OidIsValid(relids[i]) && !el_segment_guarded(relids[i]))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("segment %d of partition %d of topic \"%s\" is still being restored",
							segnos[i], partition, topic->name),
					 errdetail("Its table has no segment_guard trigger yet: pg_restore creates it after loading the records."),
					 errhint("Retry once pg_restore has finished.")));
	}

	/*
	 * Routing: the newest segment with a recorded base offset is active,
	 * unless a newer one (activated, its base not yet recorded) already
	 * holds records; its base is then its smallest offset.
	 */
	routing->active_segno = nsegs > 0 ? segnos[0] : 0;
	routing->active_base = 0;
	for (i = 0; i < nsegs; i++)
	{
		if (bases[i] != EL_BASE_UNKNOWN)
		{
			routing->active_segno = segnos[i];
			routing->active_base = bases[i];
		}
		else if (OidIsValid(relids[i]))
		{
			int64		min_offset;

			if (el_segment_edge_offset(relids[i], snapshot, false, &min_offset))
			{
				routing->active_segno = segnos[i];
				routing->active_base = min_offset;
			}
		}
	}

	/* The newest segment that holds anything has the largest offset. */
	for (i = nsegs - 1; i >= 0; i--)
	{
		int64		max_offset;

		if (OidIsValid(relids[i]) &&
			el_segment_edge_offset(relids[i], snapshot, true, &max_offset))
		{
			next = Max(next, max_offset + 1);
			break;
		}
	}
	next = Max(next, routing->active_base);
	UnregisterSnapshot(snapshot);
	return next;
}

/*
 * The attached partition handle.  Each cached partition (ElPartitionMeta)
 * keeps a reference (slot pointer, incarnation) to its partition's slot in
 * shared memory; a new cache entry (after every reload of the topic cache)
 * starts unattached, and a slot may be freed or given to another partition
 * at any time (its topic dropped, or room needed: slots.c).  So no code
 * outside el_with_partition touches that reference: every operation on a
 * partition's shared state goes through it, and it attaches, recovers the
 * counter after a server start, and attaches again whenever the slot turned
 * out stale.
 *
 * "op" does the work under the slot's lock and returns false, having done
 * nothing, if the reference is stale or the counter not recovered (the
 * slots.c and inflight.c functions taking an ElSlotRef all behave so).  The
 * usual case, attached and ready, costs one lock.  Never recovers a counter
 * during recovery: a standby's counters would be stale at promotion.
 *
 * A reader ("reader") never needs a slot (issue 13, item 6): when every slot
 * has transactions in flight, it gets false, with nothing run, instead of an
 * error, and does without (el_stable_offset_unslotted).  Otherwise true,
 * once "op" has run.
 */
typedef bool (*ElSlotOp) (const ElSlotRef *ref, void *arg);

static bool
el_with_partition(ElTopic *topic, int32 partition, bool reader, ElSlotOp op,
				  void *arg)
{
	ElSlotRef  *ref = &topic->parts[partition].ref;
	int			attempt;

	/*
	 * Each turn either succeeds or finds the slot freed or reassigned since
	 * the last.  Under heavy slot churn (far more partitions in use than
	 * eventlog.max_partitions, producers taking slots others are still
	 * recovering) that can happen many times in a row: after ten quick
	 * turns, pause a millisecond between turns to let the others finish,
	 * and give up only after about a second.
	 */
	for (attempt = 0; attempt < 1000; attempt++)
	{
		if (attempt >= 10)
		{
			CHECK_FOR_INTERRUPTS();
			pg_usleep(1000L);
		}
		if (ref->slot != NULL && op(ref, arg))
			return true;
		if (ref->slot == NULL)
		{
			ElPartitionKey key;

			memset(&key, 0, sizeof(key));
			key.dbid = MyDatabaseId;
			key.topic_id = topic->topic_id;
			key.partition = partition;
			if (!reader)
				el_partition_attach(&key, ref);
			else if (!el_partition_try_attach(&key, ref))
				return false;
		}
		switch (el_partition_status(ref))
		{
			case EL_SLOT_READY:
				break;			/* run op on the next turn */
			case EL_SLOT_UNINITIALIZED:
				{
					ElRouting	routing;
					int64		next;

					el_refuse_in_recovery(EL_USE_COUNTER);
					next = el_recover_next_offset(topic, partition, &routing);
					if (el_partition_set_initial(ref, next, &routing))
						break;
				}
				/* FALLTHROUGH */
			case EL_SLOT_STALE:
				ref->slot = NULL;	/* attach again */
				break;
		}
	}
	elog(ERROR, "could not attach to the shared state of partition %d of topic \"%s\"",
		 partition, topic->name);
	return false;				/* keep compiler quiet */
}

typedef struct ElTakeOffsetsArg
{
	int			count;
	int64		first;
	int32	   *segno;
	TimestampTz *append_time;
} ElTakeOffsetsArg;

static bool
el_take_offsets_op(const ElSlotRef *ref, void *arg)
{
	ElTakeOffsetsArg *a = arg;

	return el_allocate_offsets(ref, a->count, &a->first, a->segno, a->append_time);
}

/*
 * Take "count" consecutive offsets in a partition for the current
 * transaction; see el_allocate_offsets.
 */
int64
el_take_offsets(ElTopic *topic, int32 partition, int count, int32 *segno,
				TimestampTz *append_time)
{
	ElTakeOffsetsArg a;

	a.count = count;
	a.first = 0;
	a.segno = segno;
	a.append_time = append_time;
	(void) el_with_partition(topic, partition, false, el_take_offsets_op, &a);
	return a.first;
}

static bool
el_routing_op(const ElSlotRef *ref, void *arg)
{
	return el_partition_routing(ref, (ElRouting *) arg);
}

/* Whether a partition has a shared slot now (see el_stable_offset_unslotted). */
static bool
el_has_slot(ElTopic *topic, int32 partition)
{
	ElPartitionKey key;

	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.topic_id = topic->topic_id;
	key.partition = partition;
	return el_partition_has_slot(&key);
}

/* Where a partition's new records go now. */
void
el_get_routing(ElTopic *topic, int32 partition, ElRouting *routing)
{
	int			attempt;

	for (attempt = 0; attempt < 10; attempt++)
	{
		if (el_with_partition(topic, partition, true, el_routing_op, routing))
			return;

		/*
		 * No slot to be had: the routing is what recovery computes, as a
		 * slot attached now would start with (see el_stable_offset_unslotted).
		 */
		(void) el_recover_next_offset(topic, partition, routing);
		if (!el_has_slot(topic, partition))
			return;
	}
	elog(ERROR, "could not read the routing of partition %d of topic \"%s\"",
		 partition, topic->name);
}
static bool
el_stable_offset_op(const ElSlotRef *ref, void *arg)
{
	return el_stable_offset(ref, (ElStableOffset *) arg);
}

/*
 * A partition's last stable offset and high watermark, for a reader.  Also
 * flushes WAL up to the newest commit of a producing transaction, so that
 * no record a reader is about to return can be lost in a crash (see
 * el_release_inflight); with synchronous commits it is already flushed and
 * this costs a comparison.
 */
void
el_read_stable_offset(ElTopic *topic, int32 partition, ElStableOffset *out)
{
	int			attempt;

	/* A hot standby serves what the primary published (standby.c). */
	if (RecoveryInProgress())
	{
		el_standby_stable_offset(topic, partition, out);
		return;
	}
	for (attempt = 0; attempt < 10; attempt++)
	{
		if (el_with_partition(topic, partition, true, el_stable_offset_op, out))
		{
			if (!XLogRecPtrIsInvalid(out->commit_lsn))
				XLogFlush(out->commit_lsn);
			return;
		}
		/* A reader does without a slot rather than fail. */
		if (el_stable_offset_unslotted(topic, partition, out))
			return;
	}
	elog(ERROR, "could not read the offsets of partition %d of topic \"%s\"",
		 partition, topic->name);
}

/*
 * A reader's offsets for a partition that has no shared slot and cannot
 * get one, every slot being pinned by transactions in flight (of other
 * databases, perhaps: issue 13, item 6) or having its counter recovered by
 * another backend (slots.c, el_find_free_slot).  Readers never need to pin
 * a slot.
 * Offsets are only ever taken under a slot, in the critical section that
 * registers their in-flight entry, and a slot is freed only while it has no
 * entry: so a partition without a slot has no offset in flight, and its
 * stable offset is its high watermark, which counter recovery computes from
 * the catalog and the segments.  The order matters: recovery reads with a
 * snapshot taken first, the check that no slot exists comes after it.  An
 * offset in flight when the snapshot was taken would need a slot that still
 * existed then; if it is gone by the check, that transaction has ended and
 * is visible to the reader's later scan snapshot, or never will be; offsets
 * taken after the check come from a counter recovered at least this high.
 * False if the partition has a slot by then: the caller attaches to it.
 *
 * Without a slot, the newest commit LSN of the partition is not known: flush
 * all WAL written so far instead (as el_read_stable_offset flushes to the
 * partition's, so that no record returned can vanish in a crash).  This costs
 * recovery queries on every call: it is the exception, while slots are
 * exhausted.
 */
static bool
el_stable_offset_unslotted(ElTopic *topic, int32 partition, ElStableOffset *out)
{
	ElRouting	routing;
	int64		next;

	el_refuse_in_recovery(EL_USE_COUNTER);
	next = el_recover_next_offset(topic, partition, &routing);
	if (el_has_slot(topic, partition))
		return false;
	out->stable = next;
	out->high_watermark = next;
	out->holder_pid = 0;
	out->commit_lsn = InvalidXLogRecPtr;
	out->active_segno = routing.active_segno;
	XLogFlush(el_wal_insert_end());
	return true;
}
/* ------------------------------------------------------------------------
 * SQL-callable helpers of the catalog functions
 * ------------------------------------------------------------------------ */

PG_FUNCTION_INFO_V1(el_partition_routing_sql);
PG_FUNCTION_INFO_V1(el_activate_segment_at_commit_sql);
PG_FUNCTION_INFO_V1(el_forget_topic);

/*
 * eventlog._partition_routing(topic text, partition integer)
 *		-> (active_segment integer, active_base bigint)
 */
Datum
el_partition_routing_sql(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	ElTopic    *topic;
	int32		partition = PG_GETARG_INT32(1);
	ElRouting	routing;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	topic = el_topic_lookup(PG_GETARG_TEXT_PP(0));
	el_check_partition(topic, partition);
	el_refuse_in_recovery(EL_USE_MAINTAIN);
	el_get_routing(topic, partition, &routing);
	values[0] = Int32GetDatum(routing.active_segno);
	values[1] = Int64GetDatum(routing.active_base);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* eventlog._activate_segment_at_commit(topic_id, partition, segment_no) */
Datum
el_activate_segment_at_commit_sql(PG_FUNCTION_ARGS)
{
	el_require_shmem();
	el_activate_segment_at_commit(PG_GETARG_INT32(0), PG_GETARG_INT32(1),
								  PG_GETARG_INT32(2));
	PG_RETURN_VOID();
}

Datum
el_forget_topic(PG_FUNCTION_ARGS)
{
	el_forget_topic_at_commit(PG_GETARG_INT32(0));
	PG_RETURN_VOID();
}
