/*-------------------------------------------------------------------------
 *
 * produce.c
 *	  eventlog.produce and eventlog.produce_batch: append records to a
 *	  topic in the caller's transaction; and the steps that binary topics'
 *	  functions (produce_binary.c) share with them.
 *
 * The order of the steps matters:
 *	1. look the topic up, check every record and the privilege, and pick
 *	   each record's partition (no side effects);
 *	2. take offsets, which also registers the transaction's in-flight entry
 *	   and routes the offsets to a segment;
 *	3. open that segment with RowExclusiveLock and insert.  An error here
 *	   (the topic dropped meanwhile, say) leaves a gap of aborted offsets,
 *	   never a record readers could have skipped.
 * Every check that can fail on bad input runs before step 2.
 *
 * The *_idempotent functions (a producer's sequence numbers, producer.c)
 * run the same C functions with three more arguments: between steps 1 and
 * 2 they check the batch against the producer's state in its partition (a
 * retry of a kept batch returns its original offsets and stops there), and
 * after step 3 they record it.  The plain functions only test the argument
 * count.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "acl.h"
#include "hash.h"
#include "partition.h"
#include "produce.h"
#include "producer.h"
#include "segment.h"
#include "topic.h"

PG_FUNCTION_INFO_V1(el_produce);
PG_FUNCTION_INFO_V1(el_produce_batch);

/* Per-backend round-robin position for records without a key. */
static uint32 el_round_robin = 0;
static bool el_round_robin_set = false;

/*
 * A compacted topic keeps the latest record of each key: a record without
 * one could never be superseded, so it is refused, as Kafka refuses it
 * (every produce path and change capture choose a partition here).
 */
static void
el_check_compacted_key(ElTopic *topic, const ElRecordIn *rec)
{
	if (topic->compacted && rec->key == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("topic \"%s\" is compacted and refuses records without a key",
						topic->name),
				 errdetail("Compaction keeps the latest record of each key, so every record needs one."),
				 errhint("Give the record a key, or change the topic's cleanup_policy to 'delete'.")));
}

static int32
el_choose_partition(ElTopic *topic, const ElRecordIn *rec, bool explicit_set,
					int32 explicit_partition)
{
	el_check_compacted_key(topic, rec);
	if (explicit_set)
	{
		el_check_partition(topic, explicit_partition);
		return explicit_partition;
	}
	if (rec->key)
		return el_partition_for_key(VARDATA_ANY(rec->key),
									VARSIZE_ANY_EXHDR(rec->key),
									topic->npartitions);
	if (!el_round_robin_set)
	{
		/* Start each backend elsewhere, so that short sessions spread too. */
		el_round_robin = (uint32) MyProcPid;
		el_round_robin_set = true;
	}
	return (int32) (el_round_robin++ % (uint32) topic->npartitions);
}

void
el_check_writable(void)
{
	el_refuse_in_recovery(EL_USE_PRODUCE);
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot produce to an event log in a read-only transaction")));
}

/*
 * Open segment "segno" of a partition for insertion, reloading the topic's
 * metadata if the segment is newer than the cached list (a maintenance
 * round has just rolled the partition).
 *
 * The offsets were taken from the partition of the topic the caller looked
 * up: if the reload finds another topic under its name (the cached one was
 * dropped, and created again, since it was cached), they belong to no
 * partition of the new topic, and must not be written to its segments: they
 * would repeat offsets of its own, and no in-flight entry of its partition
 * would hold its readers back from them.
 */
static Relation
el_open_segment(ElTopic **topic_io, text *name, int32 partition, int32 segno)
{
	int32		topic_id = (*topic_io)->topic_id;
	int			attempt;

	for (attempt = 0; attempt < 2; attempt++)
	{
		ElSegment  *seg = el_find_segment(*topic_io, partition, segno);
		Relation	rel;

		if (seg != NULL && OidIsValid(seg->relid) &&
			(rel = try_relation_open(seg->relid, RowExclusiveLock)) != NULL)
			return rel;
		/* Not cached yet, or gone: read the catalog again. */
		el_topic_invalidate();
		*topic_io = el_topic_get(name);
		if ((*topic_io)->topic_id != topic_id)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("topic \"%s\" was dropped while records were produced to it",
							(*topic_io)->name),
					 errdetail("Another transaction dropped it and created it again under the same name.")));
		el_check_partition(*topic_io, partition);
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("segment %d of partition %d of topic \"%s\" does not exist",
					segno, partition, (*topic_io)->name),
			 errdetail("Shared memory routes new records to a segment the catalog does not list."),
			 errhint("Run eventlog.enforce_retention() to let maintenance repair the partition, then retry.")));
	return NULL;				/* keep compiler quiet */
}

/*
 * Append records[0..count) to one partition for role "userid": consecutive
 * offsets from the returned first one, in the segment the offsets were
 * routed to.
 */
static int64
el_append(ElTopic **topic_io, text *name, int32 partition,
		  const ElRecordIn *records, int count, Oid userid)
{
	Relation	rel;
	ElAppender	app;
	TimestampTz append_time;
	int64		first;
	int32		segno;

	/* Refuse without the produce privilege, before any offset is taken. */
	el_require_topic_privilege(*topic_io, userid, EL_PRIV_PRODUCE);
	first = el_take_offsets(*topic_io, partition, count, &segno, &append_time);
	rel = el_open_segment(topic_io, name, partition, segno);
	el_appender_begin(&app, rel, (*topic_io)->binary);
	if (count == 1)
		el_appender_insert(&app, &records[0], first, append_time);
	else
		el_appender_insert_many(&app, records, count, first, append_time);
	el_appender_end(&app);

	/* Keep the lock until the end of the transaction, like any insert. */
	relation_close(rel, NoLock);
	return first;
}

/*
 * el_append for a producer's batch: checked against the producer's state
 * first (a retry of a kept batch returns its original first offset, and
 * nothing is appended), recorded in it after.  The privilege comes first,
 * so that a role without it learns nothing of the state.
 */
static int64
el_append_idempotent(ElTopic **topic_io, text *name, int32 partition,
					 const ElRecordIn *records, int count,
					 const ElIdempotence *idem)
{
	ElProducerBatch batch;
	int64		first;

	el_require_topic_privilege(*topic_io, GetUserId(), EL_PRIV_PRODUCE);
	if (el_producer_check(*topic_io, partition, idem, count, &batch, &first))
		return first;
	first = el_append(topic_io, name, partition, records, count, GetUserId());
	el_producer_record(&batch, first);
	return first;
}

static Datum
el_position_datum(TupleDesc tupdesc, int32 partition, int64 offset)
{
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = Int32GetDatum(partition);
	values[1] = Int64GetDatum(offset);
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

/*
 * Append one record, checked, to the partition "explicit_partition" if
 * "explicit_set", else to the one its key picks, and return its position as
 * an eventlog.position datum: the end of produce and produce_binary.
 */
Datum
el_produce_one(FunctionCallInfo fcinfo, ElTopic *topic, text *name,
			   const ElRecordIn *rec, bool explicit_set,
			   int32 explicit_partition, const ElIdempotence *idem)
{
	TupleDesc	tupdesc;
	Oid			rettype;
	int32		partition;
	int64		offset;
	Datum		result;

	partition = el_choose_partition(topic, rec, explicit_set, explicit_partition);

	/*
	 * eventlog.position's descriptor, from the type cache when the call
	 * site names the result type (as the executor's calls do):
	 * get_call_result_type would look the function up and copy the
	 * descriptor on every call.
	 */
	rettype = get_fn_expr_rettype(fcinfo->flinfo);
	if (OidIsValid(rettype) && rettype != RECORDOID)
		tupdesc = lookup_rowtype_tupdesc(rettype, -1);
	else
	{
		rettype = InvalidOid;
		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		tupdesc = BlessTupleDesc(tupdesc);
	}

	if (idem->on)
		offset = el_append_idempotent(&topic, name, partition, rec, 1, idem);
	else
		offset = el_append(&topic, name, partition, rec, 1, GetUserId());
	result = el_position_datum(tupdesc, partition, offset);
	if (OidIsValid(rettype))
		ReleaseTupleDesc(tupdesc);
	return result;
}

/*
 * eventlog.produce(topic text, key text, value jsonb, headers jsonb,
 *                  partition integer, event_time timestamptz)
 *		-> eventlog.position
 * and eventlog.produce_idempotent(the same, producer_id bigint,
 *                  producer_epoch integer, sequence integer)
 */
Datum
el_produce(PG_FUNCTION_ARGS)
{
	text	   *name;
	ElTopic    *topic;
	ElRecordIn	rec;
	ElIdempotence idem;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topic must not be null")));
	name = PG_GETARG_TEXT_PP(0);
	topic = el_topic_lookup(name);
	el_require_format(topic, false, EL_FORMAT_PRODUCE);
	el_check_writable();
	el_idempotence_args(fcinfo, 6, !PG_ARGISNULL(4), &idem);

	memset(&rec, 0, sizeof(rec));
	rec.key = PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_PP(1);
	rec.value = PG_ARGISNULL(2) ? NULL : (struct varlena *) PG_GETARG_JSONB_P(2);
	rec.headers = PG_ARGISNULL(3) ? NULL : (struct varlena *) PG_GETARG_JSONB_P(3);
	if (!PG_ARGISNULL(5))
	{
		rec.has_event_time = true;
		rec.event_time = PG_GETARG_TIMESTAMPTZ(5);
	}
	el_check_json_record(&rec);
	PG_RETURN_DATUM(el_produce_one(fcinfo, topic, name, &rec, !PG_ARGISNULL(4),
								   PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4), &idem));
}

/*
 * Change capture (capture_batch.c), when it captures a change: the checks
 * eventlog.produce makes of a record before it takes an offset, for the
 * current user, and the partition the record's key picks.  The record is
 * produced later, with others, by el_produce_to_partition, given the
 * topic's id ("*topic_id") so that it can tell the topic from one created
 * again under its name meanwhile.  Does not produce the changes captured
 * so far, as eventlog.produce does first.
 */
int32
el_produce_route(text *name, const ElRecordIn *rec, int32 *topic_id)
{
	ElTopic    *topic = el_topic_get(name);

	/* The topic may have been dropped and created again as a binary one. */
	el_require_format(topic, false, EL_FORMAT_CAPTURE);
	el_check_writable();
	el_check_json_record(rec);
	el_require_topic_privilege(topic, GetUserId(), EL_PRIV_PRODUCE);
	*topic_id = topic->topic_id;
	return el_choose_partition(topic, rec, false, 0);
}

/*
 * Change capture's batch of records for one partition, in order, checked
 * by el_produce_route when they were captured, produced for the role that
 * captured them ("userid", who may not be the current user when a
 * statement run by another role produces them).
 *
 * Their partition was chosen from the key and the partition count of the
 * topic "topic_id" when they were captured.  If another transaction has
 * dropped that topic and created one under its name since, that choice
 * means nothing for the new topic (its count may differ, a partition may
 * not exist): the statement fails, as a produce call does in that case.
 */
void
el_produce_to_partition(text *name, int32 topic_id, int32 partition,
						const ElRecordIn *records, int count, Oid userid)
{
	ElTopic    *topic = el_topic_get(name);

	if (topic->topic_id != topic_id)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("topic \"%s\" was dropped while records were produced to it",
						topic->name),
				 errdetail("Another transaction dropped it and created it again under the same name after this statement captured changes for it.")));
	el_require_format(topic, false, EL_FORMAT_CAPTURE);
	el_check_writable();
	el_check_partition(topic, partition);
	(void) el_append(&topic, name, partition, records, count, userid);
}

/* Deconstruct an optional array argument, checking its length. */
static void
el_batch_array(FunctionCallInfo fcinfo, int argno, const char *argname,
			   Oid elemtype, int expected, Datum **elems, bool **nulls)
{
	ArrayType  *arr;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			n;

	*elems = NULL;
	*nulls = NULL;
	if (PG_ARGISNULL(argno))
		return;
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("argument \"%s\" must be a one-dimensional array", argname)));
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign, elems, nulls, &n);
	if (n != expected)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("argument \"%s\" has %d elements but argument \"value\" has %d",
						argname, n, expected),
				 errdetail("Element i of each array describes record i, so the arrays must be of equal length.")));
}

/*
 * The partition of record "rec" of a batch: as el_choose_partition, except
 * that keyless records of one batch stick to one partition, as with Kafka's
 * sticky partitioner; successive batches go round-robin.  A transaction
 * then claims one partition per batch, not one per record.  "*sticky"
 * starts at -1.
 */
int32
el_batch_partition(ElTopic *topic, const ElRecordIn *rec, bool explicit_set,
				   int32 explicit_partition, int32 *sticky)
{
	if (rec->key == NULL && !explicit_set)
	{
		el_check_compacted_key(topic, rec);
		if (*sticky < 0)
			*sticky = el_choose_partition(topic, rec, false, 0);
		return *sticky;
	}
	return el_choose_partition(topic, rec, explicit_set, explicit_partition);
}

/*
 * Append records[0..n), checked, each to its partition parts[i], and put
 * their positions in "store", in input order.  Records going to one
 * partition get consecutive offsets, taken in one step, in input order.
 * A producer's batch ("idem" on) goes to one partition, named by the
 * caller, as one batch of the producer's.
 */
void
el_produce_records(ElTopic *topic, text *name, const ElRecordIn *recs,
				   const int32 *parts, int n, Tuplestorestate *store,
				   TupleDesc tupdesc, const ElIdempotence *idem)
{
	int			i, p, nparts;
	int64	   *offsets;
	int		   *count_per_part;
	int		   *order;
	ElRecordIn *sorted;

	if (idem->on)
	{
		int64		first;

		if (n == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("an idempotent batch must contain at least one record")));
		first = el_append_idempotent(&topic, name, parts[0], recs, n, idem);
		for (i = 0; i < n; i++)
		{
			Datum		values[2];
			bool		nulls[2] = {false, false};

			values[0] = Int32GetDatum(parts[0]);
			values[1] = Int64GetDatum(first + i);
			tuplestore_putvalues(store, tupdesc, values, nulls);
		}
		return;
	}

	/*
	 * Group by partition, keeping input order inside each group.  The count
	 * is taken now: the topic may be reloaded (and grow) while appending.
	 */
	nparts = topic->npartitions;
	count_per_part = palloc0(sizeof(int) * (nparts + 1));
	for (i = 0; i < n; i++)
		count_per_part[parts[i] + 1]++;
	for (p = 0; p < nparts; p++)
		count_per_part[p + 1] += count_per_part[p];
	order = palloc(sizeof(int) * Max(n, 1));
	sorted = palloc(sizeof(ElRecordIn) * Max(n, 1));
	{
		int		   *fill = palloc(sizeof(int) * nparts);

		memcpy(fill, count_per_part, sizeof(int) * nparts);
		for (i = 0; i < n; i++)
		{
			int			pos = fill[parts[i]]++;

			order[pos] = i;
			sorted[pos] = recs[i];
		}
	}

	offsets = palloc(sizeof(int64) * Max(n, 1));
	for (p = 0; p < nparts; p++)
	{
		int			start = count_per_part[p];
		int			end = count_per_part[p + 1];
		int64		first;

		if (start == end)
			continue;
		first = el_append(&topic, name, p, &sorted[start], end - start, GetUserId());
		for (i = start; i < end; i++)
			offsets[order[i]] = first + (i - start);
	}

	for (i = 0; i < n; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Int32GetDatum(parts[i]);
		values[1] = Int64GetDatum(offsets[i]);
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
}

/*
 * eventlog.produce_batch(topic text, key text[], value jsonb[],
 *                        headers jsonb[], partition integer,
 *                        event_time timestamptz[])
 *		-> SETOF eventlog.position, in input order
 * and eventlog.produce_batch_idempotent(the same, producer_id bigint,
 *                        producer_epoch integer, sequence integer)
 *
 * Keyless records of one call all go to one partition (the next in
 * round-robin order).
 */
Datum
el_produce_batch(PG_FUNCTION_ARGS)
{
	text	   *name;
	ElTopic    *topic;
	ArrayType  *values_arr;
	Datum	   *value_elems, *key_elems, *header_elems, *time_elems;
	bool	   *value_nulls, *key_nulls, *header_nulls, *time_nulls;
	int			n, i;
	int32		sticky = -1;
	ElRecordIn *recs;
	int32	   *parts;
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	bool		explicit_set = !PG_ARGISNULL(4);
	int32		explicit_partition = explicit_set ? PG_GETARG_INT32(4) : 0;
	ElIdempotence idem;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topic must not be null")));
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("value must not be null"),
				 errdetail("The value argument is the array of record values: an element may be NULL, the array may not.")));
	name = PG_GETARG_TEXT_PP(0);
	topic = el_topic_lookup(name);
	el_require_format(topic, false, EL_FORMAT_PRODUCE);
	el_check_writable();
	el_idempotence_args(fcinfo, 6, explicit_set, &idem);

	values_arr = PG_GETARG_ARRAYTYPE_P(2);
	if (ARR_NDIM(values_arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("argument \"value\" must be a one-dimensional array")));
	deconstruct_array(values_arr, JSONBOID, -1, false, TYPALIGN_INT,
					  &value_elems, &value_nulls, &n);
	el_batch_array(fcinfo, 1, "key", TEXTOID, n, &key_elems, &key_nulls);
	el_batch_array(fcinfo, 3, "headers", JSONBOID, n, &header_elems, &header_nulls);
	el_batch_array(fcinfo, 5, "event_time", TIMESTAMPTZOID, n, &time_elems, &time_nulls);

	store = el_materialized_srf(fcinfo, "produce_batch", &tupdesc);

	/* Build and check every record, and pick partitions, before writing. */
	recs = palloc0(sizeof(ElRecordIn) * Max(n, 1));
	parts = palloc(sizeof(int32) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		ElRecordIn *rec = &recs[i];

		if (key_elems && !key_nulls[i])
			rec->key = DatumGetTextPP(key_elems[i]);
		if (!value_nulls[i])
			rec->value = (struct varlena *) DatumGetJsonbP(value_elems[i]);
		if (header_elems && !header_nulls[i])
			rec->headers = (struct varlena *) DatumGetJsonbP(header_elems[i]);
		if (time_elems && !time_nulls[i])
		{
			rec->has_event_time = true;
			rec->event_time = DatumGetTimestampTz(time_elems[i]);
		}
		el_check_json_record(rec);
		parts[i] = el_batch_partition(topic, rec, explicit_set, explicit_partition,
									  &sticky);
	}
	el_produce_records(topic, name, recs, parts, n, store, tupdesc, &idem);
	return (Datum) 0;
}
