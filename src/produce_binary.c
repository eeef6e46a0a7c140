/*-------------------------------------------------------------------------
 *
 * produce_binary.c
 *	  eventlog.produce_binary and eventlog.produce_binary_batch: append
 *	  records to a binary topic, whose keys and values are bytea and whose
 *	  headers are eventlog.header[] (Kafka's records, byte for byte).
 *
 * Everything but building a record is produce.c's: the same partition
 * choice (Kafka's murmur2 over the key's bytes, so that a bytea key and a
 * text key of the same bytes land in the same partition), privileges,
 * in-flight offsets and segments.  NULL and empty keys, values and header
 * arrays are kept apart: a record is stored as it came.
 *
 * produce_binary_batch takes an array of eventlog.message, the composite a
 * Kafka gateway sends in binary with libpq; each element is taken apart
 * once, in place (no copy unless a field was compressed).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/htup_details.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "produce.h"
#include "segment.h"
#include "topic.h"

PG_FUNCTION_INFO_V1(el_produce_binary);
PG_FUNCTION_INFO_V1(el_produce_binary_batch);

/* Columns of eventlog.message. */
#define EL_MESSAGE_NATTS 4

/*
 * Check a record's headers: a one-dimensional (or empty) array of headers,
 * none of them NULL and none without a name.  A header's value may be NULL
 * (Kafka's null header value), and names may repeat.
 */
static void
el_check_headers(struct varlena *headers)
{
	ArrayType  *arr = (ArrayType *) headers;
	Datum	   *elems;
	bool	   *nulls;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			n;
	int			i;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("record headers must be a one-dimensional array")));
	get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
	deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign,
					  &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		HeapTupleHeader td;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("record headers must not contain null elements"),
					 errdetail("Header %d is NULL; a header's value may be NULL, the header itself may not.",
							   i + 1)));
		td = DatumGetHeapTupleHeader(elems[i]);
		if (HeapTupleHeaderGetNatts(td) < 1 ||
			((td->t_infomask & HEAP_HASNULL) && att_isnull(0, td->t_bits)))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("a record header's name must not be null"),
					 errdetail("Header %d has a NULL name.", i + 1)));
	}
	pfree(elems);
	pfree(nulls);
}

/* The checks a binary record passes before any offset is taken. */
static void
el_check_binary_record(const ElRecordIn *rec)
{
	el_check_record_size(rec);
	if (rec->headers)
		el_check_headers(rec->headers);
}

/*
 * eventlog.produce_binary(topic text, key bytea, value bytea,
 *                         headers eventlog.header[], partition integer,
 *                         event_time timestamptz) -> eventlog.position
 * and eventlog.produce_binary_idempotent(the same, producer_id bigint,
 *                         producer_epoch integer, sequence integer)
 */
Datum
el_produce_binary(PG_FUNCTION_ARGS)
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
	el_require_format(topic, true, EL_FORMAT_PRODUCE);
	el_check_writable();
	el_idempotence_args(fcinfo, 6, !PG_ARGISNULL(4), &idem);

	memset(&rec, 0, sizeof(rec));
	rec.key = PG_ARGISNULL(1) ? NULL : PG_GETARG_BYTEA_PP(1);
	rec.value = PG_ARGISNULL(2) ? NULL : PG_GETARG_BYTEA_PP(2);
	/* Flat, never an expanded array: the segment stores it as it is. */
	rec.headers = PG_ARGISNULL(3) ? NULL : (struct varlena *) PG_GETARG_ARRAYTYPE_P(3);
	if (!PG_ARGISNULL(5))
	{
		rec.has_event_time = true;
		rec.event_time = PG_GETARG_TIMESTAMPTZ(5);
	}
	el_check_binary_record(&rec);
	PG_RETURN_DATUM(el_produce_one(fcinfo, topic, name, &rec, !PG_ARGISNULL(4),
								   PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4), &idem));
}

/*
 * Check that "tupdesc" is eventlog.message as the install script made it:
 * its owner can ALTER it, and its fields are taken by position.
 */
static void
el_check_message_type(TupleDesc tupdesc)
{
	Oid			types[EL_MESSAGE_NATTS] = {BYTEAOID, BYTEAOID,
	el_header_array_type(), TIMESTAMPTZOID};
	int			i;
	bool		ok = (tupdesc->natts == EL_MESSAGE_NATTS);

	for (i = 0; ok && i < EL_MESSAGE_NATTS; i++)
		ok = !TupleDescAttr(tupdesc, i)->attisdropped &&
			TupleDescAttr(tupdesc, i)->atttypid == types[i];
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("type %s does not have the columns of an event log message",
						format_type_be(tupdesc->tdtypeid)),
				 errdetail("Its columns must be key bytea, value bytea, headers eventlog.header[], event_time timestamptz, in this order."),
				 errhint("Undo the ALTER TYPE that changed the type.")));
}

/*
 * eventlog.produce_binary_batch(topic text, messages eventlog.message[],
 *                               partition integer)
 *		-> SETOF eventlog.position, in input order
 * and eventlog.produce_binary_batch_idempotent(the same, producer_id bigint,
 *                               producer_epoch integer, sequence integer)
 *
 * As produce_batch: keyless records of one call go to one partition (the
 * next in round-robin order), and every record is checked before any is
 * appended.
 */
Datum
el_produce_binary_batch(PG_FUNCTION_ARGS)
{
	text	   *name;
	ElTopic    *topic;
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *elem_nulls;
	int			n, i;
	int32		sticky = -1;
	ElRecordIn *recs;
	int32	   *parts;
	TupleDesc	msgdesc;
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	bool		explicit_set = !PG_ARGISNULL(2);
	int32		explicit_partition = explicit_set ? PG_GETARG_INT32(2) : 0;
	ElIdempotence idem;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topic must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("messages must not be null"),
				 errdetail("The messages argument is the array of records to append.")));
	name = PG_GETARG_TEXT_PP(0);
	topic = el_topic_lookup(name);
	el_require_format(topic, true, EL_FORMAT_PRODUCE);
	el_check_writable();
	el_idempotence_args(fcinfo, 3, explicit_set, &idem);
	/* Even for an empty batch: a partition that does not exist is an error. */
	if (explicit_set)
		el_check_partition(topic, explicit_partition);

	arr = PG_GETARG_ARRAYTYPE_P(1);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("argument \"messages\" must be a one-dimensional array")));
	msgdesc = lookup_rowtype_tupdesc(ARR_ELEMTYPE(arr), -1);
	el_check_message_type(msgdesc);
	get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
	deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign,
					  &elems, &elem_nulls, &n);

	store = el_materialized_srf(fcinfo, "produce_binary_batch", &tupdesc);

	/* Build and check every record, and pick partitions, before writing. */
	recs = palloc0(sizeof(ElRecordIn) * Max(n, 1));
	parts = palloc(sizeof(int32) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		ElRecordIn *rec = &recs[i];
		HeapTupleData tuple;
		Datum		values[EL_MESSAGE_NATTS];
		bool		nulls[EL_MESSAGE_NATTS];

		if (elem_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("messages must not contain null elements"),
					 errdetail("Message %d is NULL; a message's key, value, headers and event_time may be NULL, the message itself may not.",
							   i + 1)));
		tuple.t_data = DatumGetHeapTupleHeader(elems[i]);
		tuple.t_len = HeapTupleHeaderGetDatumLength(tuple.t_data);
		ItemPointerSetInvalid(&tuple.t_self);
		tuple.t_tableOid = InvalidOid;
		heap_deform_tuple(&tuple, msgdesc, values, nulls);

		/* Decompressed if need be; a short header is kept as it is. */
		if (!nulls[0])
			rec->key = DatumGetByteaPP(values[0]);
		if (!nulls[1])
			rec->value = DatumGetByteaPP(values[1]);
		if (!nulls[2])
			rec->headers = (struct varlena *) DatumGetArrayTypeP(values[2]);
		if (!nulls[3])
		{
			rec->has_event_time = true;
			rec->event_time = DatumGetTimestampTz(values[3]);
		}
		el_check_binary_record(rec);
		parts[i] = el_batch_partition(topic, rec, explicit_set, explicit_partition,
									  &sticky);
	}
	ReleaseTupleDesc(msgdesc);
	el_produce_records(topic, name, recs, parts, n, store, tupdesc, &idem);
	return (Datum) 0;
}
