/*-------------------------------------------------------------------------
 *
 * segment.c
 *	  Segment tables: the append path used by produce, the record size
 *	  limit, the trigger that refuses every other write, the check that a
 *	  segment still has a segment's columns, the lock-free look at
 *	  segments behind the monitoring views, and the append times a
 *	  maintenance round checks.
 *
 * A segment is a plain heap table (docs/design.md says why not a
 * declarative partition) with a primary key on offset_id.  A JSON topic's
 * segments have a text key and jsonb value and headers; a binary topic's a
 * bytea key and value and eventlog.header[] headers, otherwise the same
 * columns in the same places.  produce
 * inserts through the table AM and the executor's index insertion, which
 * fires no triggers; so a row-level BEFORE trigger enabled ALWAYS can refuse
 * INSERT, UPDATE, DELETE and COPY from SQL, and logical replication apply
 * (which runs with session_replication_role = replica), without costing the
 * produce path anything.  A statement-level BEFORE TRUNCATE trigger does the
 * same for TRUNCATE.  Direct writes would bypass the in-flight table and
 * break the last stable offset.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "segment.h"
#include "topic.h"

int			el_max_record_bytes = 1024 * 1024;

void
el_segment_init(void)
{
	DefineCustomIntVariable("eventlog.max_record_bytes",
							"Largest record produce accepts: key, value and headers together.",
							"Like Kafka's message.max.bytes (default 1 MB).",
							&el_max_record_bytes,
							1024 * 1024, 1024, MaxAllocSize / 2,
							PGC_SUSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}

Size
el_record_size(const ElRecordIn *rec)
{
	Size		size = 0;

	if (rec->key)
		size += VARSIZE_ANY_EXHDR(rec->key);
	if (rec->value)
		size += VARSIZE_ANY_EXHDR(rec->value);
	if (rec->headers)
		size += VARSIZE_ANY_EXHDR(rec->headers);
	return size;
}

void
el_check_record_size(const ElRecordIn *rec)
{
	Size		size = el_record_size(rec);

	if (size > (Size) el_max_record_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("record is too large"),
				 errdetail("The record's key, value and headers take %zu bytes; eventlog.max_record_bytes is %d.",
						   size, el_max_record_bytes),
				 errhint("Split the value, or raise eventlog.max_record_bytes.")));
}

/* el_check_record_size, and a JSON record's headers must be an object. */
void
el_check_json_record(const ElRecordIn *rec)
{
	el_check_record_size(rec);
	if (rec->headers && !JB_ROOT_IS_OBJECT((Jsonb *) rec->headers))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("record headers must be a JSON object"),
				 errdetail("Headers map names to values, for example {\"trace-id\": \"abc\"}.")));
}

/*
 * Column types of a segment table of a JSON topic, by column number - 1.
 * A binary topic's (el_seg_type) differ in the key, value and headers.
 */
static const Oid el_seg_types[EL_SEG_NATTS] = {
	INT8OID, TEXTOID, JSONBOID, JSONBOID, TIMESTAMPTZOID, TIMESTAMPTZOID
};

static Oid
el_seg_type(int i, bool binary)
{
	if (!binary)
		return el_seg_types[i];
	switch (i + 1)
	{
		case EL_SEG_KEY:
		case EL_SEG_VALUE:
			return BYTEAOID;
		case EL_SEG_HEADERS:
			return el_header_array_type();
	}
	return el_seg_types[i];
}

/*
 * Does "rel" still have the columns of a segment table of a topic of that
 * format?  Its owner (the extension owner, or a superuser) can ALTER it; the
 * appender and the readers address columns by number and store datums of
 * the types above.  Columns added and dropped again are allowed (they read
 * as NULL).
 */
static bool
el_segment_shape_ok(Relation rel, bool binary, int *badcol)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (i < EL_SEG_NATTS ?
			(att->attisdropped || att->atttypid != el_seg_type(i, binary)) :
			!att->attisdropped)
		{
			*badcol = i + 1;
			return false;
		}
	}
	if (desc->natts < EL_SEG_NATTS)
	{
		*badcol = desc->natts + 1;
		return false;
	}
	return true;
}

/*
 * Whether a segment is laid out as a binary topic's (a bytea key), for the
 * callers that read only offset_id and append_time, which both formats keep
 * in the same places: they check the shape the segment claims.
 */
static bool
el_segment_is_binary(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	return desc->natts >= EL_SEG_KEY &&
		!TupleDescAttr(desc, EL_SEG_KEY - 1)->attisdropped &&
		TupleDescAttr(desc, EL_SEG_KEY - 1)->atttypid == BYTEAOID;
}

/*
 * Raise a clear error, instead of writing or reading garbage, if a segment
 * opened for insertion or reading no longer has the columns of a segment of
 * its topic's format.
 */
void
el_segment_check_shape(Relation rel, bool binary)
{
	int			badcol;

	if (el_segment_shape_ok(rel, binary, &badcol))
		return;
	if (binary)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("event log segment \"%s\" does not have the columns of a binary topic's segment",
						RelationGetRelationName(rel)),
				 errdetail("Column %d differs from offset_id bigint, key bytea, value bytea, headers eventlog.header[], event_time timestamptz, append_time timestamptz, which must be the only columns, in this order.",
						   badcol),
				 errhint("Undo the ALTER TABLE that changed the segment: drop columns added to it and give its columns back their types.")));
	else
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("event log segment \"%s\" does not have the columns of a segment table",
						RelationGetRelationName(rel)),
				 errdetail("Column %d differs from offset_id bigint, key text, value jsonb, headers jsonb, event_time timestamptz, append_time timestamptz, which must be the only columns, in this order.",
						   badcol),
				 errhint("Undo the ALTER TABLE that changed the segment: drop columns added to it and give its columns back their types.")));
}

/*
 * Prepare to insert into "rel", which the caller has opened with
 * RowExclusiveLock.  The executor state exists only to let the executor
 * maintain every index of the table, including any an administrator added.
 */
void
el_appender_begin(ElAppender *app, Relation rel, bool binary)
{
	el_segment_check_shape(rel, binary);
	app->rel = rel;
	app->estate = CreateExecutorState();
	app->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(app->rri, rel, 1, NULL, 0);
	ExecOpenIndices(app->rri, false);
	app->slot = ExecInitExtraTupleSlot(app->estate, RelationGetDescr(rel),
									   &TTSOpsVirtual);
}

/* Fill "slot" with the segment row of record "rec" at "offset". */
static void
el_appender_fill(TupleTableSlot *slot, const ElRecordIn *rec, int64 offset,
				 TimestampTz append_time)
{
	ExecClearTuple(slot);
	/* Columns dropped after the sixth (el_segment_check_shape) are NULL. */
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	memset(slot->tts_isnull, false, sizeof(bool) * EL_SEG_NATTS);
	slot->tts_values[EL_SEG_OFFSET - 1] = Int64GetDatum(offset);
	if (rec->key)
		slot->tts_values[EL_SEG_KEY - 1] = PointerGetDatum(rec->key);
	else
		slot->tts_isnull[EL_SEG_KEY - 1] = true;
	if (rec->value)
		slot->tts_values[EL_SEG_VALUE - 1] = PointerGetDatum(rec->value);
	else
		slot->tts_isnull[EL_SEG_VALUE - 1] = true;
	if (rec->headers)
		slot->tts_values[EL_SEG_HEADERS - 1] = PointerGetDatum(rec->headers);
	else
		slot->tts_isnull[EL_SEG_HEADERS - 1] = true;
	slot->tts_values[EL_SEG_EVENT_TIME - 1] =
		TimestampTzGetDatum(rec->has_event_time ? rec->event_time : append_time);
	slot->tts_values[EL_SEG_APPEND_TIME - 1] = TimestampTzGetDatum(append_time);
	ExecStoreVirtualTuple(slot);
}

void
el_appender_insert(ElAppender *app, const ElRecordIn *rec, int64 offset,
				   TimestampTz append_time)
{
	TupleTableSlot *slot = app->slot;

	el_appender_fill(slot, rec, offset, append_time);
	table_tuple_insert(app->rel, slot, GetCurrentCommandId(true), 0, NULL);
	if (app->rri->ri_NumIndices > 0)
		(void) el_insert_index_tuples(app->rri, slot, app->estate);
	ResetPerTupleExprContext(app->estate);
}

/*
 * Rows per table_multi_insert call: enough to fill several pages per call,
 * few enough that the tuples formed for a call stay in a few cached
 * blocks of memory.
 */
#define EL_MULTI_INSERT_ROWS	100

/*
 * Insert records[0..count) at offsets first, first + 1, ...: through
 * table_multi_insert, which fills a page at a time (one WAL record and
 * one buffer lock per page, not per row), then their index entries, in
 * offset order.  What produce_batch and change capture's batches use.
 */
void
el_appender_insert_many(ElAppender *app, const ElRecordIn *records, int count,
						int64 first, TimestampTz append_time)
{
	int			nslots = Min(count, EL_MULTI_INSERT_ROWS);
	TupleTableSlot **slots = palloc(sizeof(TupleTableSlot *) * Max(nslots, 1));
	CommandId	cid = GetCurrentCommandId(true);
	int			done = 0;
	int			i;

	for (i = 0; i < nslots; i++)
		slots[i] = table_slot_create(app->rel, NULL);
	while (done < count)
	{
		int			n = Min(count - done, nslots);

		for (i = 0; i < n; i++)
		{
			el_appender_fill(slots[i], &records[done + i], first + done + i, append_time);
			/* The table AM's own tuple, formed in the slot's memory. */
			ExecMaterializeSlot(slots[i]);
		}
		table_multi_insert(app->rel, slots, n, cid, 0, NULL);
		if (app->rri->ri_NumIndices > 0)
		{
			for (i = 0; i < n; i++)
			{
				(void) el_insert_index_tuples(app->rri, slots[i], app->estate);
				ResetPerTupleExprContext(app->estate);
			}
		}
		for (i = 0; i < n; i++)
			ExecClearTuple(slots[i]);
		done += n;
	}
	for (i = 0; i < nslots; i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	pfree(slots);
}

void
el_appender_end(ElAppender *app)
{
	ResultRelInfo *rri = app->rri;
	int			i;

	/*
	 * ExecCloseIndices, except that the indexes' locks are kept until the
	 * end of the transaction, as the segment's own: the next produce to
	 * the segment in this transaction then finds them held instead of
	 * taking them again.  Only DDL on the indexes could notice, and it
	 * waits for the segment's lock anyway.
	 */
	for (i = 0; i < rri->ri_NumIndices; i++)
	{
		if (rri->ri_IndexRelationDescs[i] == NULL)
			continue;
#if PG_VERSION_NUM >= 170000
		index_insert_cleanup(rri->ri_IndexRelationDescs[i],
							 rri->ri_IndexRelationInfo[i]);
#endif
		index_close(rri->ri_IndexRelationDescs[i], NoLock);
	}
	ExecDropSingleTupleTableSlot(app->slot);
	FreeExecutorState(app->estate);
}

/*
 * The largest (or smallest) offset in a segment visible to "snapshot",
 * from one end of its primary key through the index AM: no privilege or row
 * security check applies, as this serves counter recovery, not a reader.
 * False if the segment holds nothing visible or no longer exists.
 */
bool
el_segment_edge_offset(Oid relid, Snapshot snapshot, bool largest,
					   int64 *offset)
{
	Relation	rel;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	Oid			pk;
	bool		found = false;

	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return false;
	el_segment_check_shape(rel, el_segment_is_binary(rel));
	pk = el_primary_key_index(rel);
	if (!OidIsValid(pk))
		elog(ERROR, "segment \"%s\" has no primary key",
			 RelationGetRelationName(rel));
	index = index_open(pk, AccessShareLock);
	slot = table_slot_create(rel, NULL);
	scan = el_index_beginscan(rel, index, snapshot, 0, 0);
	index_rescan(scan, NULL, 0, NULL, 0);
	if (index_getnext_slot(scan, largest ? BackwardScanDirection : ForwardScanDirection,
						   slot))
	{
		bool		isnull;

		*offset = DatumGetInt64(slot_getattr(slot, EL_SEG_OFFSET, &isnull));
		found = true;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	relation_close(rel, AccessShareLock);
	return found;
}

/*
 * The monitoring views (eventlog.partitions, topics, consumer_groups) look
 * at segments without ever waiting for a lock or keeping one: a view left
 * open in a transaction by any role must not pin segments (retention would
 * skip them, "skipped (busy)", as long as it stays open), and a view must
 * not queue behind retention.  A segment that someone holds in a
 * conflicting mode, which can only be retention or drop_topic removing it,
 * or an administrator's DDL, counts as gone.
 */
static Relation
el_segment_open_now(Oid relid)
{
	Relation	rel;

	if (!OidIsValid(relid) || !ConditionalLockRelationOid(relid, AccessShareLock))
		return NULL;
	rel = try_relation_open(relid, NoLock);
	if (rel == NULL)
	{
		UnlockRelationOid(relid, AccessShareLock);
		return NULL;
	}
	if (rel->rd_rel->relkind != RELKIND_RELATION)
	{
		relation_close(rel, AccessShareLock);
		return NULL;
	}
	return rel;
}

typedef enum ElEdge
{
	EL_EDGE_NONE,				/* nothing here (or the segment is gone) */
	EL_EDGE_FOUND,				/* the record in range nearest the start */
	EL_EDGE_BEYOND				/* the nearest record is out of range */
} ElEdge;

/*
 * The append time of the first record of segment "relid" with an offset in
 * [from, below) (the last one if "newest"), read through the primary key
 * as read.c does, the locks released at once.
 */
static ElEdge
el_segment_append_time(Oid relid, Snapshot snapshot, int64 from, int64 below,
					   bool newest, TimestampTz *ts)
{
	Relation	rel;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	ScanKeyData key;
	Oid			pk;
	int			badcol;
	ElEdge		edge = EL_EDGE_NONE;

	rel = el_segment_open_now(relid);
	if (rel == NULL)
		return EL_EDGE_NONE;
	pk = el_primary_key_index(rel);
	if (!OidIsValid(pk) ||
		!el_segment_shape_ok(rel, el_segment_is_binary(rel), &badcol) ||
		!ConditionalLockRelationOid(pk, AccessShareLock))
	{
		relation_close(rel, AccessShareLock);
		return EL_EDGE_NONE;
	}
	index = index_open(pk, NoLock);
	slot = table_slot_create(rel, NULL);
	scan = el_index_beginscan(rel, index, snapshot, 1, 0);
	if (newest)
		ScanKeyInit(&key, 1, BTLessStrategyNumber, F_INT8LT, Int64GetDatum(below));
	else
		ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(from));
	index_rescan(scan, &key, 1, NULL, 0);
	if (index_getnext_slot(scan, newest ? BackwardScanDirection : ForwardScanDirection,
						   slot))
	{
		bool		isnull;
		int64		off = DatumGetInt64(slot_getattr(slot, EL_SEG_OFFSET, &isnull));

		if (newest ? off < from : off >= below)
			edge = EL_EDGE_BEYOND;
		else
		{
			*ts = DatumGetTimestampTz(slot_getattr(slot, EL_SEG_APPEND_TIME, &isnull));
			edge = EL_EDGE_FOUND;
		}
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	relation_close(rel, AccessShareLock);
	return edge;
}

PG_FUNCTION_INFO_V1(el_append_time_sql);

/*
 * eventlog._append_time(topic, partition, from_offset, below_offset,
 * newest): the append time of the first (or, if newest, the last) record
 * of the partition with an offset in [from_offset, below_offset), NULL if
 * none.  For the monitoring views: callers pass the last stable offset as
 * below_offset, so every offset below it is committed or aborted and a
 * fresh snapshot sees exactly the readable ones.
 */
Datum
el_append_time_sql(PG_FUNCTION_ARGS)
{
	ElTopic    *topic = el_topic_lookup(PG_GETARG_TEXT_PP(0));
	int32		partition = PG_GETARG_INT32(1);
	int64		from = PG_GETARG_INT64(2);
	int64		below = PG_GETARG_INT64(3);
	bool		newest = PG_GETARG_BOOL(4);
	ElPartitionMeta *meta;
	int			nsegs;
	Oid		   *relids;
	int64	   *bases;
	Snapshot	snapshot;
	TimestampTz ts = 0;
	ElEdge		edge = EL_EDGE_NONE;
	int			start = 0;
	int			i;

	el_check_partition(topic, partition);
	if (from >= below)
		PG_RETURN_NULL();
	/* Copied: taking a lock may process invalidations of the cache. */
	meta = &topic->parts[partition];
	nsegs = meta->nsegments;
	relids = palloc(sizeof(Oid) * Max(nsegs, 1));
	bases = palloc(sizeof(int64) * Max(nsegs, 1));
	for (i = 0; i < nsegs; i++)
	{
		relids[i] = meta->segments[i].relid;
		bases[i] = meta->segments[i].base_offset;
		/* Forward: from the last segment whose base is at or below "from". */
		if (bases[i] != EL_BASE_UNKNOWN && bases[i] <= from)
			start = i;
	}

	snapshot = RegisterSnapshot(GetLatestSnapshot());
	if (newest)
	{
		for (i = nsegs - 1; i >= 0 && edge == EL_EDGE_NONE; i--)
			if (bases[i] == EL_BASE_UNKNOWN || bases[i] < below)
				edge = el_segment_append_time(relids[i], snapshot, from, below,
											  true, &ts);
	}
	else
	{
		for (i = start; i < nsegs && edge == EL_EDGE_NONE; i++)
			edge = el_segment_append_time(relids[i], snapshot, from, below,
										  false, &ts);
	}
	UnregisterSnapshot(snapshot);
	if (edge != EL_EDGE_FOUND)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(ts);
}

PG_FUNCTION_INFO_V1(el_segment_times_sql);

/*
 * eventlog._segment_times(segment name, OUT oldest timestamptz,
 * OUT newest timestamptz): the append times of the first and the last
 * record of a segment (NULL if it holds none) visible to the active
 * snapshot, for maintenance rounds.  Two lookups at the ends of the primary
 * key: the queries this replaces named the segment at run time, so every
 * round parsed and planned them afresh for every partition.  The segment is
 * locked as those queries locked it (ACCESS SHARE, to the end of the
 * transaction), and a missing one is the same error (42P01).
 */
Datum
el_segment_times_sql(PG_FUNCTION_ARGS)
{
	Name		segname = PG_GETARG_NAME(0);
	char	   *nspname = get_namespace_name(el_segment_schema_oid());
	TupleDesc	tupdesc;
	Datum		values[2] = {0, 0};
	bool		nulls[2] = {true, true};
	Relation	rel;
	Relation	index;
	TupleTableSlot *slot;
	Oid			relid;
	Oid			pk;
	int			i;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	relid = RangeVarGetRelid(makeRangeVar(nspname, NameStr(*segname), -1),
							 AccessShareLock, false);
	rel = relation_open(relid, NoLock);
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		elog(ERROR, "\"%s\" is not a segment table", RelationGetRelationName(rel));
	el_segment_check_shape(rel, el_segment_is_binary(rel));
	pk = el_primary_key_index(rel);
	if (!OidIsValid(pk))
		elog(ERROR, "segment \"%s\" has no primary key",
			 RelationGetRelationName(rel));
	index = index_open(pk, AccessShareLock);
	slot = table_slot_create(rel, NULL);
	for (i = 0; i < 2; i++)
	{
		IndexScanDesc scan = el_index_beginscan(rel, index, GetActiveSnapshot(), 0, 0);

		index_rescan(scan, NULL, 0, NULL, 0);
		if (index_getnext_slot(scan, i == 0 ? ForwardScanDirection : BackwardScanDirection,
							   slot))
		{
			/* Copied out of the slot: by reference where int64 is. */
			TimestampTz ts = DatumGetTimestampTz(slot_getattr(slot, EL_SEG_APPEND_TIME,
															  &nulls[i]));

			if (!nulls[i])
				values[i] = TimestampTzGetDatum(ts);
		}
		index_endscan(scan);
	}
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	relation_close(rel, NoLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

PG_FUNCTION_INFO_V1(el_partition_bytes_sql);

/*
 * eventlog._partition_bytes(topic, partition): the bytes of the partition's
 * segments (tables, indexes and TOAST), without waiting for or keeping a
 * lock: a segment being removed counts as gone.
 */
Datum
el_partition_bytes_sql(PG_FUNCTION_ARGS)
{
	ElTopic    *topic = el_topic_lookup(PG_GETARG_TEXT_PP(0));
	int32		partition = PG_GETARG_INT32(1);
	ElPartitionMeta *meta;
	int			nsegs;
	Oid		   *relids;
	int64		bytes = 0;
	int			i;

	el_check_partition(topic, partition);
	meta = &topic->parts[partition];
	nsegs = meta->nsegments;
	relids = palloc(sizeof(Oid) * Max(nsegs, 1));
	for (i = 0; i < nsegs; i++)
		relids[i] = meta->segments[i].relid;
	for (i = 0; i < nsegs; i++)
	{
		Relation	rel = el_segment_open_now(relids[i]);

		if (rel == NULL)
			continue;
		/* Under our lock: pg_total_relation_size's own is granted at once. */
		bytes += DatumGetInt64(DirectFunctionCall1(pg_total_relation_size,
												   ObjectIdGetDatum(relids[i])));
		relation_close(rel, AccessShareLock);
	}
	PG_RETURN_INT64(bytes);
}

/*
 * Whether segment table relid has its guard trigger (or is gone: nothing to
 * say of it).  Every segment is created with it, in the transaction that
 * creates the table (_create_segment, and compaction's replacement), so a
 * segment without it is one that pg_restore is still filling: it creates
 * triggers after loading the records.  Counter recovery (partition.c)
 * refuses such a partition rather than count its records too early.
 */
bool
el_segment_guarded(Oid relid)
{
	Relation	trig;
	SysScanDesc scan;
	ScanKeyData key[2];
	bool		guarded;

	/*
	 * From pg_trigger, not the relation's trigger list: no lock on the
	 * segment, which the caller's routing lock must never wait behind (a
	 * VACUUM FULL of an old segment, compaction's swap).
	 */
	trig = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_trigger_tgrelid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_pg_trigger_tgname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("segment_guard"));
	scan = systable_beginscan(trig, TriggerRelidNameIndexId, true, NULL, 2, key);
	guarded = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(trig, AccessShareLock);
	/* Dropped meanwhile (retention, compaction): its triggers went with it. */
	return guarded || !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid));
}

PG_FUNCTION_INFO_V1(el_segment_guard);

/*
 * Trigger on segment tables: only produce may write records, and only
 * retention may remove them.
 */
Datum
el_segment_guard(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	const char *name;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "el_segment_guard must be called as a trigger");
	name = RelationGetRelationName(trigdata->tg_relation);

	/* One complete message per statement kind (error message style guide). */
	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot insert into event log segment \"%s\"", name),
				 errdetail("Segment tables are append-only and written only by eventlog.produce, which tracks in-flight offsets; retention removes whole segments."),
				 errhint("Use eventlog.produce or eventlog.produce_batch to append records.")));
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot update event log segment \"%s\"", name),
				 errdetail("Segment tables are append-only and written only by eventlog.produce, which tracks in-flight offsets; retention removes whole segments."),
				 errhint("Use eventlog.produce or eventlog.produce_batch to append records.")));
	else if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot delete from event log segment \"%s\"", name),
				 errdetail("Segment tables are append-only and written only by eventlog.produce, which tracks in-flight offsets; retention removes whole segments."),
				 errhint("Use eventlog.produce or eventlog.produce_batch to append records.")));
	else
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot truncate event log segment \"%s\"", name),
				 errdetail("Segment tables are append-only and written only by eventlog.produce, which tracks in-flight offsets; retention removes whole segments."),
				 errhint("Use eventlog.produce or eventlog.produce_batch to append records.")));
	PG_RETURN_NULL();
}
