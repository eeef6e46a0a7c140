/*-------------------------------------------------------------------------
 *
 * read.c
 *	  Reading a partition: eventlog.read and eventlog.read_binary (the same
 *	  read, of a JSON or a binary topic), eventlog.offset_for_time and the
 *	  offset functions.
 *
 * Every reader follows the same two steps (docs/design.md, invariant 1):
 *	1. compute the partition's last stable offset (inflight.c);
 *	2. scan with a snapshot taken after step 1, never the transaction's
 *	   snapshot, and return nothing at or above the stable offset.
 * Whatever committed below the stable offset committed before step 1
 * ended, so the fresh snapshot sees it; in-flight records are at or above
 * it.  Hence no reader, whatever its isolation level, returns offset N
 * while a lower offset may still commit.  The scan of step 2 is scan.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "catalog/pg_type.h"
#include "pgstat.h"
#include "access/xlog.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "acl.h"
#include "partition.h"
#include "read.h"
#include "record_sink.h"
#include "scan.h"
#include "segment.h"
#include "standby.h"
#include "topic.h"

PG_FUNCTION_INFO_V1(el_read);
PG_FUNCTION_INFO_V1(el_read_binary);
PG_FUNCTION_INFO_V1(el_offset_for_time);
PG_FUNCTION_INFO_V1(el_last_stable_offset_sql);
PG_FUNCTION_INFO_V1(el_high_watermark_sql);
PG_FUNCTION_INFO_V1(el_log_start_offset_sql);
PG_FUNCTION_INFO_V1(el_partition_state);
PG_FUNCTION_INFO_V1(el_await_records);

/*
 * Test-only fault injection: readers use the high watermark instead of the
 * last stable offset.  The isolation specs and the stress test show they
 * fail with it on, which proves they test the stable offset.  Only in a
 * build for the tests (EL_TEST_HOOKS, see the Makefile): a release build
 * has no way to turn the guarantee off.
 */
#ifdef EL_TEST_HOOKS
static bool el_debug_ignore_stable_offset = false;
#endif

void
el_read_init(void)
{
#ifdef EL_TEST_HOOKS
	DefineCustomBoolVariable("eventlog.debug_ignore_stable_offset",
							 "Test only: let readers return records at or above the last stable offset.",
							 "This breaks the no-skipped-record guarantee; it exists to show that the tests catch it.",
							 &el_debug_ignore_stable_offset,
							 false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
#endif
}

static int32
el_partition_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("partition must not be null")));
	return PG_GETARG_INT32(argno);
}

/* The topic (argument 0) and partition (argument 1) of a call. */
static ElTopic *
el_topic_partition_args(FunctionCallInfo fcinfo, int32 *partition)
{
	ElTopic    *topic;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topic must not be null")));
	topic = el_topic_lookup(PG_GETARG_TEXT_PP(0));
	*partition = el_partition_arg(fcinfo, 1);
	el_check_partition(topic, *partition);
	return topic;
}

/*
 * Take the read point of a partition of "topic" (looked up by "name").
 *
 * Every offset below the stable offset lies in a segment up to the active
 * one.  A maintenance round may have rolled the partition since this backend
 * cached its segment list (the commit that activates a segment reaches
 * shared memory before other backends process the catalog invalidation):
 * then the catalog is read again, and point->topic is the new cache entry
 * (pointers into the old one are dead).
 */
void
el_point_at(text *name, ElTopic *topic, int32 partition, ElReadPoint *point)
{
	ElStableOffset so;

	el_read_stable_offset(topic, partition, &so);
	/* On a standby, no publication yet: no segment to look for. */
	if (so.active_segno >= 0 &&
		el_find_segment(topic, partition, so.active_segno) == NULL)
	{
		int32		topic_id = topic->topic_id;

		el_topic_invalidate();
		topic = el_topic_lookup(name);
		if (topic->topic_id != topic_id)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("topic \"%s\" was dropped while being read", topic->name),
					 errdetail("Another transaction dropped it and created it again under the same name.")));
		el_check_partition(topic, partition);
	}
	point->topic = topic;
	point->partition = partition;
	point->log_start = topic->parts[partition].log_start_offset;
	point->stable = so.stable;
	point->high_watermark = so.high_watermark;
	point->holder_pid = so.holder_pid;
#ifdef EL_TEST_HOOKS
	if (el_debug_ignore_stable_offset)
		point->stable = point->high_watermark;
#endif
}

/* Look up topic and partition arguments, and take the read point. */
static void
el_read_point(FunctionCallInfo fcinfo, ElReadPoint *point)
{
	ElTopic    *topic;
	int32		partition;

	topic = el_topic_partition_args(fcinfo, &partition);
	el_point_at(PG_GETARG_TEXT_PP(0), topic, partition, point);
}

void
el_offset_out_of_range(ElReadPoint *point, int64 offset)
{
	if (offset < point->log_start)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("offset " INT64_FORMAT " is before the log start offset of partition %d of topic \"%s\"",
						offset, point->partition, point->topic->name),
				 errdetail("Retention has removed the records below offset " INT64_FORMAT ".",
						   point->log_start),
				 errhint("Read from offset " INT64_FORMAT ", the partition's log start offset.",
						 point->log_start)));
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("offset " INT64_FORMAT " is beyond the high watermark of partition %d of topic \"%s\"",
					offset, point->partition, point->topic->name),
			 errdetail("The next offset the partition will assign is " INT64_FORMAT ".",
					   point->high_watermark),
			 errhint("Read from offset " INT64_FORMAT " or lower.",
					 point->high_watermark)));
}

/*
 * The optional "wait" interval argument of a long poll, in milliseconds
 * (0: do not wait).
 */
static long
el_wait_arg(FunctionCallInfo fcinfo, int argno)
{
	Interval   *wait;
	double		ms;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return 0;
	wait = PG_GETARG_INTERVAL_P(argno);
	ms = (wait->time / 1000.0) +
		(wait->day + wait->month * (double) DAYS_PER_MONTH) * (double) (USECS_PER_DAY / 1000);
	if (ms < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait must not be negative")));
	if (ms > (double) 24 * 3600 * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait must be at most 1 day")));
	return (long) ms;
}

/*
 * The first readable record at or after "from" and below "to": its offset
 * and append_time.  False if there is none.
 */
static bool
el_first_record(ElReadPoint *point, Snapshot snapshot, int64 from, int64 to,
				int64 *offset, TimestampTz *append_time)
{
	ElScan		scan;
	TupleTableSlot *slot;
	bool		found = false;

	el_scan_begin(&scan, point, from, snapshot);
	slot = el_scan_next(&scan, offset);
	if (slot != NULL && *offset < to)
	{
		bool		isnull;

		*append_time = DatumGetTimestampTz(slot_getattr(slot, EL_SEG_APPEND_TIME, &isnull));
		found = true;
	}
	el_scan_end(&scan);
	return found;
}

/*
 * Whether a record is readable in the partition of "point" at or after
 * "from" (and below its stable offset), with a snapshot taken now (after the
 * stable offset, as for any read).  A segment removed meanwhile counts as
 * "readable": the caller's read finds out what retention did.
 */
bool
el_readable_from(ElReadPoint *point, int64 from)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ElScan		scan;
	int64		offset;
	bool		found;

	el_scan_begin(&scan, point, from, snapshot);
	scan.missing_ok = true;
	found = (el_scan_next(&scan, &offset) != NULL) || scan.missing;
	el_scan_end(&scan);
	UnregisterSnapshot(snapshot);
	return found;
}

/*
 * Long poll of eventlog.read: sleep until the stable offset of the
 * partition of "point" moves past "from", then true with "point" taken
 * again; false when "deadline" comes first.  Every producing transaction
 * that ends broadcasts its topic's wake-up condition variable (inflight.c), so
 * the wait costs no CPU and ends as soon as records can be readable.
 *
 * Not a condition variable of the partition's slot in shared memory: a
 * slot can be freed and given to another partition at any time (more
 * partitions in use than eventlog.max_partitions), and a read sleeping on
 * it would then miss its producers' broadcasts; while waking it on each
 * freeing made two waiting reads whose partitions share a slot take it from
 * each other in turn (each wake-up attaches again, which frees the other's
 * slot), until one failed.  The topic's wake-up condition variable never
 * moves.  The price: a commit in any partition of the topic (or of a topic
 * sharing the condition variable) wakes the read, which takes the stable
 * offset again (one lock) and sleeps again.  Query
 * cancel and pg_terminate_backend end it at once (the sleep checks for
 * interrupts), and so does the topic's drop (42704, el_topic_recheck).  The
 * caller's own transaction never holds the stable offset back, so a call
 * never waits on its own records.
 */
static bool
el_wait_for_stable(text *name, ElReadPoint *point, int64 from,
				   TimestampTz deadline)
{
	int32		topic_id = point->topic->topic_id;
	int32		partition = point->partition;
	ConditionVariable *cv = el_topic_wakeup(topic_id);
	uint64		drops = 0;
	bool		moved = false;
	XLogRecPtr	replayed = InvalidXLogRecPtr;

	for (;;)
	{
		ElTopic    *topic;
		long		remaining;
		bool		standby = RecoveryInProgress();

		/* Prepare first, so that no broadcast is missed between the check and the sleep. */
		ConditionVariablePrepareToSleep(cv);

		/*
		 * On a hot standby no producer broadcasts: replay changes the
		 * published stable offset (standby.c), and the replay of the
		 * primary's wake-up record that follows each publication broadcasts
		 * (standby_wake.c).  Look again only when replay has moved since the
		 * last look (read before it, so no publication is missed).  After a
		 * promotion, the primary's way.
		 */
		if (standby)
		{
			XLogRecPtr	now = el_standby_replayed();

			if (now == replayed)
				goto wait_more;
			replayed = now;
		}
		topic = el_topic_recheck(name, topic_id, &drops);
		el_point_at(name, topic, partition, point);
		if (point->stable > from)
		{
			moved = true;
			break;
		}
wait_more:
		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (remaining <= 0)
			break;
		if (standby)
			remaining = el_standby_sleep_ms(remaining);
		(void) ConditionVariableTimedSleep(cv, remaining, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return moved;
}

/*
 * eventlog._await_records(topic text, partitions integer[], positions
 * bigint[], wait interval) -> boolean
 *
 * The long poll of eventlog.poll, over several partitions: true as soon as
 * some partitions[i] has a readable record at or after positions[i] (or
 * retention removed records there: the poll handles that), false when the
 * wait ends first.  It sleeps on the topic's wake-up condition variable
 * (inflight.c), which every producing transaction of the topic broadcasts when
 * it ends: no CPU while nothing happens, and a wake-up per commit or abort
 * of the topic while it waits.  A wake-up that brings nothing readable (a
 * rollback, a commit in another partition, a commit behind an open
 * transaction) sleeps again: offsets below a stable offset that hold no
 * record were rolled back and never appear, so the wait goes on past them.
 * The topic's drop ends it with 42704 (el_topic_recheck).
 */
Datum
el_await_records(PG_FUNCTION_ARGS)
{
	text	   *name;
	ArrayType  *parts_arr;
	ArrayType  *pos_arr;
	Datum	   *parts;
	Datum	   *positions;
	bool	   *nulls;
	int			nparts;
	int			npos;
	long		wait_ms = el_wait_arg(fcinfo, 3);
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	ElTopic    *topic;
	ConditionVariable *cv;
	int32		topic_id;
	uint64		drops = 0;
	bool		ready = false;
	int			i;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topic, partitions and positions must not be null")));
	name = PG_GETARG_TEXT_PP(0);
	parts_arr = PG_GETARG_ARRAYTYPE_P(1);
	pos_arr = PG_GETARG_ARRAYTYPE_P(2);
	deconstruct_array(parts_arr, INT4OID, 4, true, TYPALIGN_INT, &parts, &nulls, &nparts);
	for (i = 0; i < nparts; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("partitions must not contain nulls")));
	deconstruct_array(pos_arr, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &positions, &nulls, &npos);
	if (npos != nparts)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("partitions and positions must have the same length")));
	for (i = 0; i < npos; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("positions must not contain nulls")));

	topic = el_topic_lookup(name);
	el_require_topic_privilege(topic, GetUserId(), EL_PRIV_CONSUME);
	topic_id = topic->topic_id;
	for (i = 0; i < nparts; i++)
		el_check_partition(topic, DatumGetInt32(parts[i]));
	cv = el_topic_wakeup(topic_id);

	for (;;)
	{
		long		remaining;

		/* Prepare first, so that no broadcast is missed between the check and the sleep. */
		ConditionVariablePrepareToSleep(cv);
		topic = el_topic_recheck(name, topic_id, &drops);
		for (i = 0; i < nparts && !ready; i++)
		{
			ElReadPoint point;
			int64		pos = DatumGetInt64(positions[i]);

			el_point_at(name, topic, DatumGetInt32(parts[i]), &point);
			topic = point.topic;	/* reloaded after a roll */
			if (point.stable <= pos)
				continue;
			if (pos < point.log_start || el_readable_from(&point, pos))
				ready = true;
			else
				positions[i] = Int64GetDatum(point.stable);
		}
		if (ready)
			break;
		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (remaining <= 0)
			break;
		/* On a hot standby, replay wakes it (standby_wake.c), or it polls. */
		if (RecoveryInProgress())
			remaining = el_standby_sleep_ms(remaining);
		(void) ConditionVariableTimedSleep(cv, remaining, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	PG_RETURN_BOOL(ready);
}

/*
 * Append up to "max_records" records of the partition of "point", from
 * "from" on, to "store"; returns how many.  If "next" is not NULL, it is set
 * to the offset after the last record returned (or "from" if none).
 */
int32
el_read_into(ElReadPoint *point, int64 from, int32 max_records,
			 Tuplestorestate *store, TupleDesc tupdesc, int64 *next)
{
	ElScan		scan;
	ElRecordSink sink;
	Snapshot	snapshot;
	TupleTableSlot *slot;
	int64		offset;
	int32		n = 0;

	if (next)
		*next = from;
	/* Step 2: a snapshot taken after the stable offset was computed. */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	el_record_sink_begin(&sink, store, tupdesc, point->topic->name,
						 point->partition, point->topic->binary);
	el_scan_begin(&scan, point, from, snapshot);
	while (n < max_records && (slot = el_scan_next(&scan, &offset)) != NULL)
	{
		el_record_sink_put(&sink, slot, offset);
		n++;
		if (next)
			*next = offset + 1;
	}
	el_scan_end(&scan);
	el_record_sink_end(&sink);
	UnregisterSnapshot(snapshot);
	return n;
}

/*
 * The checks of read's from_offset and max_records (a NULL one is given as
 * its null flag), in this order; _kafka_fetch (kafka_fetch.c) makes them too,
 * and maps their SQLSTATEs to Kafka error codes.
 */
void
el_check_read_args(bool from_null, int64 from, bool max_null, int32 max_records)
{
	if (from_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("from_offset must not be null")));
	if (from < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from_offset must not be negative"),
				 errdetail("The value given was " INT64_FORMAT ".", from)));
	if (max_null || max_records < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_records must be at least 1")));
}

/*
 * eventlog.read(topic text, partition integer, from_offset bigint,
 *               max_records integer, wait interval) -> SETOF eventlog.record
 * eventlog.read_binary(the same) -> SETOF eventlog.binary_record
 *
 * "binary" says which of the two was called: each reads topics of its
 * format only.
 *
 * With a wait, it returns as soon as a record is readable at or after
 * from_offset, or nothing when the wait ends.  Offsets below the stable
 * offset that hold no record were rolled back and never appear: after a scan
 * that found nothing, the wait goes on for the stable offset to pass the
 * one that scan stopped at (a reader resuming at a rolled-back offset sleeps
 * rather than spinning).  Only a scan that returned nothing is followed by
 * another, so no record comes twice.
 */
static Datum
el_read_common(FunctionCallInfo fcinfo, bool binary)
{
	ElReadPoint point;
	int64		from;
	int32		max_records;
	long		wait_ms;
	TimestampTz deadline;
	TupleDesc	tupdesc;
	Tuplestorestate *store;

	from = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
	max_records = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	el_check_read_args(PG_ARGISNULL(2), from, PG_ARGISNULL(3), max_records);
	wait_ms = el_wait_arg(fcinfo, 4);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);

	el_read_point(fcinfo, &point);
	el_require_format(point.topic, binary, EL_FORMAT_READ);
	el_require_topic_privilege(point.topic, GetUserId(), EL_PRIV_CONSUME);
	/*
	 * A standby knows no high watermark but the published stable offset,
	 * which may lag behind a position committed on the primary: reading from
	 * above it finds nothing yet (or waits), as at the high watermark.
	 */
	if (from < point.log_start ||
		(from > point.high_watermark && !RecoveryInProgress()))
		el_offset_out_of_range(&point, from);

	store = el_materialized_srf(fcinfo, binary ? "read_binary" : "read", &tupdesc);
	for (;;)
	{
		if (wait_ms > 0 && point.stable <= from)
		{
			if (!el_wait_for_stable(PG_GETARG_TEXT_PP(0), &point, from, deadline))
				break;			/* the wait ended: nothing */
			/* The cache may have been reloaded: check the privilege again. */
			el_require_topic_privilege(point.topic, GetUserId(), EL_PRIV_CONSUME);

			/*
			 * Retention may have removed the segment holding "from" during
			 * the wait (once the records waited for committed).  Reading on
			 * would return the records after the gap as if they followed
			 * from_offset: fail as a read from there fails.
			 */
			if (from < point.log_start)
				el_offset_out_of_range(&point, from);
		}
		if (el_read_into(&point, from, max_records, store, tupdesc, NULL) > 0 ||
			wait_ms == 0)
			break;
		/* Nothing from "from" to the stable offset: rolled back. */
		from = Max(from, point.stable);
	}
	return (Datum) 0;
}

Datum
el_read(PG_FUNCTION_ARGS)
{
	return el_read_common(fcinfo, false);
}

Datum
el_read_binary(PG_FUNCTION_ARGS)
{
	return el_read_common(fcinfo, true);
}

/*
 * eventlog.offset_for_time(topic text, partition integer, ts timestamptz)
 *		-> bigint
 *
 * append_time never decreases along a partition's offsets (inflight.c hands it
 * out with the offsets), so a binary search over the offset range finds
 * the first record at or after ts in O(log n) index probes.
 */
Datum
el_offset_for_time(PG_FUNCTION_ARGS)
{
	ElReadPoint point;
	TimestampTz ts;
	Snapshot	snapshot;
	int64		lo, hi, answer;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ts must not be null")));
	ts = PG_GETARG_TIMESTAMPTZ(2);
	el_read_point(fcinfo, &point);
	el_require_topic_privilege(point.topic, GetUserId(), EL_PRIV_CONSUME);

	snapshot = RegisterSnapshot(GetLatestSnapshot());
	lo = point.log_start;
	hi = point.stable;
	answer = point.stable;
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;
		int64		offset;
		TimestampTz t;

		if (!el_first_record(&point, snapshot, mid, hi, &offset, &t))
			hi = mid;
		else if (t >= ts)
		{
			answer = offset;
			hi = mid;
		}
		else
			lo = offset + 1;
	}
	UnregisterSnapshot(snapshot);
	PG_RETURN_INT64(answer);
}

Datum
el_last_stable_offset_sql(PG_FUNCTION_ARGS)
{
	ElReadPoint point;

	el_read_point(fcinfo, &point);
	PG_RETURN_INT64(point.stable);
}

Datum
el_high_watermark_sql(PG_FUNCTION_ARGS)
{
	ElReadPoint point;

	el_read_point(fcinfo, &point);
	PG_RETURN_INT64(point.high_watermark);
}

Datum
el_log_start_offset_sql(PG_FUNCTION_ARGS)
{
	int32		partition;
	ElTopic    *topic = el_topic_partition_args(fcinfo, &partition);

	PG_RETURN_INT64(topic->parts[partition].log_start_offset);
}

/*
 * eventlog._partition_state(topic text, partition integer)
 *		-> (high_watermark, last_stable_offset, stable_offset_holder_pid)
 *
 * For the eventlog.partitions view.  During recovery it shows what the
 * counter would resume at, without installing it, and the stable offset
 * the primary published (standby.c).
 */
Datum
el_partition_state(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	ElTopic    *topic;
	int32		partition = PG_GETARG_INT32(1);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	topic = el_topic_lookup(PG_GETARG_TEXT_PP(0));
	el_check_partition(topic, partition);
	if (RecoveryInProgress())
	{
		ElRouting	routing;
		ElStableOffset so;
		int64		next;

		/* The publication first, so that what is stored covers it. */
		el_read_stable_offset(topic, partition, &so);
		next = el_recover_next_offset(topic, partition, &routing);
		values[0] = Int64GetDatum(Max(next, so.stable));
		values[1] = Int64GetDatum(so.stable);
		nulls[2] = true;
	}
	else
	{
		ElStableOffset so;

		el_read_stable_offset(topic, partition, &so);
		values[0] = Int64GetDatum(so.high_watermark);
		values[1] = Int64GetDatum(so.stable);
		if (so.holder_pid == 0)
			nulls[2] = true;
		else
			values[2] = Int32GetDatum(so.holder_pid);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
