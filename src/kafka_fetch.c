/*-------------------------------------------------------------------------
 *
 * kafka_fetch.c
 *	  eventlog._kafka_fetch: the Kafka gateway's Fetch, one call per request
 *	  (src/kafka/api_fetch.c).  The records of each requested partition, and
 *	  each partition's Kafka error code, log start and last stable offset,
 *	  after a long poll when nothing is readable.
 *
 * It was PL/pgSQL over eventlog.read_binary (read, for a JSON topic) with a
 * window function for the running byte count; this is the same function
 * (its comment in sql/install/kafka_fetch.sql says what it returns) on
 * read.c's two steps and scan.c's scan, so that:
 *	- a partition's rows stop at its byte limit: the record that takes the
 *	  bytes of the ones before it to max_bytes is the last one read, none
 *	  after it is read or copied (read_binary read max_records of them, and
 *	  the window function dropped the rest);
 *	- a record is copied once, from the segment into the result;
 *	- when nothing is readable (the stable offsets in shared memory say so:
 *	  el_kafka_any_readable, kafka_await.c), nothing is read before the
 *	  wait: the idle consumers' Fetch goes straight to the long poll.
 *
 * Each item is read in a subtransaction, as the PL/pgSQL's BEGIN ...
 * EXCEPTION block did, so that its errors become its Kafka error code by
 * the same mapping (fetch_error below) and the same warning.  The rows of
 * the result go to a tuplestore owned by the call's resource owner, not the
 * subtransaction's: a store that spilled to a temporary file during one
 * item's subtransaction must not lose it when that subtransaction ends
 * (PL/pgSQL does the same for RETURN QUERY).
 *
 * Packed rows (packed => true, what the gateway asks for): a partition's
 * records come as a few rows whose k_value holds many records one after
 * the other (fetch_pack_put says how), instead of a row per record.  A row
 * per record cost the backend a tuple in the store and six send functions
 * per record, and the gateway libpq's parsing of nine fields per record:
 * reading 1,000,000 records of 100 B through the gateway took the backend
 * and the gateway more than the same read_binary from SQL took the backend.
 * The bytes are those of the send functions the rows went through (big
 * endian integers, a timestamptz's microseconds, the headers' array_send),
 * so the gateway builds the same batches from either.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "acl.h"
#include "kafka.h"
#include "read.h"
#include "scan.h"
#include "segment.h"
#include "shmem.h"
#include "topic.h"

PG_FUNCTION_INFO_V1(el_kafka_fetch);

/* Kafka's error codes of an item. */
#define KFETCH_OK						0
#define KFETCH_OFFSET_OUT_OF_RANGE		1
#define KFETCH_UNKNOWN_TOPIC			3
#define KFETCH_NOT_AUTHORIZED			29
#define KFETCH_OTHER					(-1)

/* Columns of the result. */
#define KFETCH_NATTS	9

/*
 * A packed row's records, at most (one record larger than this is a row
 * of its own): rows of 1 MiB keep the store's rows and the gateway's
 * buffers small whatever a Fetch's byte limits.
 */
#define KFETCH_PACK_BYTES	(1024 * 1024)

/* The flags byte of a packed record: which of its fields are there. */
#define KFETCH_PACK_TIME	0x01
#define KFETCH_PACK_KEY		0x02
#define KFETCH_PACK_VALUE	0x04
#define KFETCH_PACK_HEADERS 0x08

/* An array argument, read as PL/pgSQL reads a[i] and array_length(a, 1). */
typedef struct ArrayArg
{
	Datum	   *values;
	bool	   *nulls;
	int			nelems;
	int			ndim;
	int			lbound;
	int			length;			/* array_length(a, 1), 0 for NULL */
} ArrayArg;

/* One (topic, partition) of the request. */
typedef struct FetchItem
{
	text	   *name;			/* NULL if null */
	bool		part_null;
	int32		partition;
	bool		offset_null;
	int64		offset;
	bool		max_null;
	int32		max_records;
	bool		bytes_null;		/* no byte limit */
	int64		max_bytes;
	int16		error;
	bool		have_offsets;	/* log_start and stable taken after the read */
	int64		log_start;
	int64		stable;
} FetchItem;

typedef struct FetchState
{
	int			n;
	FetchItem  *items;
	Tuplestorestate *store;
	TupleDesc	tupdesc;
	ResourceOwner store_owner;	/* the call's: the store's files outlive subxacts */
	MemoryContext cxt;			/* the call's */
	MemoryContext rowcxt;		/* one row's values, reset after it */
	int64		got;			/* records returned */
	bool		total_null;		/* no response-level byte limit */
	int64		total_max;		/* the response-level byte limit */
	int64		total_rows;		/* records read so far, over the items */
	int64		total_bytes;	/* their bytes, as the byte limits count them */
	uint64		drops_at_start; /* el_topic_drop_count() when the call began */
	/* eventlog.header, for a JSON topic's headers (looked up when needed) */
	Oid			header_type;
	TupleDesc	header_desc;
	int16		header_len;
	bool		header_byval;
	char		header_align;
	/* packed rows: the records not yet in the store (pack.data[0..3] for
	 * the varlena header), the item and the first offset they are of */
	bool		packed;
	StringInfoData pack;
	int			pack_item;
	int64		pack_first;
	bool		header_send_ready;
	FmgrInfo	header_send;	/* array_send, for eventlog.header[] */
} FetchState;

static void
array_arg(FunctionCallInfo fcinfo, int argno, Oid elemtype, ArrayArg *a)
{
	ArrayType  *arr;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	memset(a, 0, sizeof(*a));
	if (PG_ARGISNULL(argno))
		return;
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	a->ndim = ARR_NDIM(arr);
	if (a->ndim == 0)
		return;
	a->length = ARR_DIMS(arr)[0];
	a->lbound = ARR_LBOUND(arr)[0];
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign,
					  &a->values, &a->nulls, &a->nelems);
}

/*
 * a[i], i from 1: false for NULL, as PL/pgSQL's a[i] is NULL outside the
 * array's bounds or with one subscript on a multidimensional array.
 */
static bool
array_arg_get(const ArrayArg *a, int i, Datum *value)
{
	int			k = i - a->lbound;

	if (a->ndim != 1 || k < 0 || k >= a->nelems || a->nulls[k])
		return false;
	*value = a->values[k];
	return true;
}

/* bytea of a string of the database's encoding, in UTF-8 (convert_to). */
static bytea *
utf8_bytea(const char *s, int len)
{
	char	   *conv = (char *) pg_do_encoding_conversion((unsigned char *) s, len,
														  GetDatabaseEncoding(), PG_UTF8);
	int			clen = (conv == s) ? len : (int) strlen(conv);
	bytea	   *b = palloc(VARHDRSZ + clen);

	SET_VARSIZE(b, VARHDRSZ + clen);
	memcpy(VARDATA(b), conv, clen);
	return b;
}

/* A jsonb's text (value::text), and its length in *len. */
static char *
jsonb_text(Jsonb *jb, int *len)
{
	StringInfoData buf;

	initStringInfo(&buf);
	(void) JsonbToCString(&buf, &jb->root, VARSIZE(jb));
	*len = buf.len;
	return buf.data;
}

/*
 * A JSON topic's headers as eventlog.header[]: NULL unless an object; each
 * member (in jsonb's order) a header named by its key, whose value is NULL
 * for null, a string's text, or other JSON's text, in UTF-8.
 */
static bool
json_headers(FetchState *st, Jsonb *jb, Datum *result)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	Datum	   *elems;
	int			nelems = 0;
	int			cap;

	if (!JB_ROOT_IS_OBJECT(jb))
		return false;
	if (!OidIsValid(st->header_type))
	{
		MemoryContext old = MemoryContextSwitchTo(st->cxt);

		st->header_type = get_element_type(el_header_array_type());
		if (!OidIsValid(st->header_type))
			elog(ERROR, "type eventlog.header does not exist");
		st->header_desc = lookup_rowtype_tupdesc_copy(st->header_type, -1);
		get_typlenbyvalalign(st->header_type, &st->header_len,
							 &st->header_byval, &st->header_align);
		MemoryContextSwitchTo(old);
	}
	cap = Max(JB_ROOT_COUNT(jb), 1);
	elems = palloc(sizeof(Datum) * cap);
	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		if (tok != WJB_KEY)
			continue;
		values[0] = PointerGetDatum(cstring_to_text_with_len(v.val.string.val,
															 v.val.string.len));
		tok = JsonbIteratorNext(&it, &v, true);
		Assert(tok == WJB_VALUE);
		if (v.type == jbvNull)
			nulls[1] = true;
		else if (v.type == jbvString)
			values[1] = PointerGetDatum(utf8_bytea(v.val.string.val, v.val.string.len));
		else
		{
			int			len;
			char	   *s = jsonb_text(JsonbValueToJsonb(&v), &len);

			values[1] = PointerGetDatum(utf8_bytea(s, len));
		}
		if (nelems >= cap)
		{
			cap *= 2;
			elems = repalloc(elems, sizeof(Datum) * cap);
		}
		elems[nelems++] = HeapTupleGetDatum(heap_form_tuple(st->header_desc, values, nulls));
	}
	if (nelems == 0)
		*result = PointerGetDatum(construct_empty_array(st->header_type));
	else
		*result = PointerGetDatum(construct_array(elems, nelems, st->header_type,
												  st->header_len, st->header_byval,
												  st->header_align));
	return true;
}

/* A varlena column of the segment row, fetched if stored out of line. */
static inline Datum
fetched(TupleTableSlot *slot, int attno)
{
	Datum		d = slot->tts_values[attno - 1];

	if (VARATT_IS_EXTERNAL(DatumGetPointer(d)))
		d = PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(d)));
	return d;
}

/* The packed records so far as a row of the store, if there are any. */
static void
fetch_pack_flush(FetchState *st)
{
	Datum		values[KFETCH_NATTS];
	bool		nulls[KFETCH_NATTS];
	ResourceOwner oldowner;

	if (st->pack.len <= VARHDRSZ)
		return;
	memset(nulls, true, sizeof(nulls));
	values[0] = Int32GetDatum(st->pack_item);
	nulls[0] = false;
	values[4] = Int64GetDatum(st->pack_first);
	nulls[4] = false;
	SET_VARSIZE(st->pack.data, st->pack.len);
	values[7] = PointerGetDatum(st->pack.data);
	nulls[7] = false;
	oldowner = CurrentResourceOwner;
	CurrentResourceOwner = st->store_owner;
	tuplestore_putvalues(st->store, st->tupdesc, values, nulls);
	CurrentResourceOwner = oldowner;
	st->pack.len = VARHDRSZ;
}

static inline void
pack_int64(StringInfo buf, int64 v)
{
	uint64		n = pg_hton64((uint64) v);

	appendBinaryStringInfoNT(buf, (const char *) &n, 8);
}

static inline void
pack_bytes(StringInfo buf, const char *data, int32 len)
{
	uint32		n = pg_hton32((uint32) len);

	appendBinaryStringInfoNT(buf, (const char *) &n, 4);
	appendBinaryStringInfoNT(buf, data, len);
}

/*
 * A record row's values (fetch_put_row's) appended to the packed records:
 * its offset (int8), a flags byte saying which of the rest are there
 * (KFETCH_PACK_*), the time (int8, a timestamptz's microseconds), then the
 * key, the value and the headers (array_send's bytes), each as an int4
 * length and its bytes: what the row's columns would have sent, in their
 * order.  The rows go to the store at KFETCH_PACK_BYTES, at the end of the
 * item's read (fetch_rows) and before another item's records.
 */
static void
fetch_pack_put(FetchState *st, int item_no, int64 offset, Datum *values, bool *nulls)
{
	bytea	   *key = nulls[6] ? NULL : DatumGetByteaPP(values[6]);
	bytea	   *value = nulls[7] ? NULL : DatumGetByteaPP(values[7]);
	bytea	   *headers = NULL;
	int64		need = 8 + 1 + 8 + 12;
	uint8		flags = 0;

	if (!nulls[8])
	{
		if (!st->header_send_ready)
		{
			Oid			send;
			bool		varlena;

			getTypeBinaryOutputInfo(el_header_array_type(), &send, &varlena);
			fmgr_info_cxt(send, &st->header_send, st->cxt);
			st->header_send_ready = true;
		}
		headers = SendFunctionCall(&st->header_send, values[8]);
		need += VARSIZE(headers) - VARHDRSZ;
		flags |= KFETCH_PACK_HEADERS;
	}
	if (key != NULL)
	{
		need += VARSIZE_ANY_EXHDR(key);
		flags |= KFETCH_PACK_KEY;
	}
	if (value != NULL)
	{
		need += VARSIZE_ANY_EXHDR(value);
		flags |= KFETCH_PACK_VALUE;
	}
	if (!nulls[5])
		flags |= KFETCH_PACK_TIME;
	if (st->pack.len > VARHDRSZ &&
		(st->pack_item != item_no || st->pack.len + need > KFETCH_PACK_BYTES))
		fetch_pack_flush(st);
	if (st->pack.len == VARHDRSZ)
	{
		st->pack_item = item_no;
		st->pack_first = offset;
	}
	enlargeStringInfo(&st->pack, (int) Min(need, (int64) MaxAllocSize));
	pack_int64(&st->pack, offset);
	appendStringInfoCharMacro(&st->pack, (char) flags);
	if (flags & KFETCH_PACK_TIME)
		pack_int64(&st->pack, DatumGetInt64(values[5]));
	if (key != NULL)
		pack_bytes(&st->pack, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	if (value != NULL)
		pack_bytes(&st->pack, VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value));
	if (headers != NULL)
		pack_bytes(&st->pack, VARDATA(headers), VARSIZE(headers) - VARHDRSZ);
}

/*
 * Append the segment row in "slot" (offset "offset") as a record row of
 * item "item_no"; returns its bytes as the byte limit counts them: a binary
 * record's octet_length(key) + octet_length(value) + pg_column_size(headers),
 * a JSON record's key, value::text and headers::text's octet_length.
 */
static int64
fetch_put_row(FetchState *st, bool binary, int item_no, TupleTableSlot *slot,
			  int64 offset)
{
	Datum		values[KFETCH_NATTS];
	bool		nulls[KFETCH_NATTS];
	int64		bytes = 0;
	MemoryContext old = MemoryContextSwitchTo(st->rowcxt);
	ResourceOwner oldowner;
	bool	   *isnull = slot->tts_isnull;

	slot_getsomeattrs(slot, EL_SEG_NATTS);
	values[0] = Int32GetDatum(item_no);
	nulls[0] = false;
	values[1] = Int16GetDatum(KFETCH_OK);
	nulls[1] = false;
	nulls[2] = nulls[3] = true;
	values[2] = values[3] = (Datum) 0;
	values[4] = Int64GetDatum(offset);
	nulls[4] = false;
	values[5] = slot->tts_values[EL_SEG_EVENT_TIME - 1];
	nulls[5] = isnull[EL_SEG_EVENT_TIME - 1];
	nulls[6] = isnull[EL_SEG_KEY - 1];
	nulls[7] = isnull[EL_SEG_VALUE - 1];
	nulls[8] = isnull[EL_SEG_HEADERS - 1];
	values[6] = values[7] = values[8] = (Datum) 0;
	if (binary)
	{
		if (!nulls[6])
		{
			values[6] = fetched(slot, EL_SEG_KEY);
			bytes += toast_raw_datum_size(values[6]) - VARHDRSZ;
		}
		if (!nulls[7])
		{
			values[7] = fetched(slot, EL_SEG_VALUE);
			bytes += toast_raw_datum_size(values[7]) - VARHDRSZ;
		}
		if (!nulls[8])
		{
			values[8] = fetched(slot, EL_SEG_HEADERS);
			bytes += toast_datum_size(values[8]);
		}
	}
	else
	{
		if (!nulls[6])
		{
			text	   *key = DatumGetTextPP(fetched(slot, EL_SEG_KEY));

			bytes += VARSIZE_ANY_EXHDR(key);
			values[6] = PointerGetDatum(utf8_bytea(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)));
		}
		if (!nulls[7])
		{
			int			len;
			char	   *s = jsonb_text(DatumGetJsonbP(fetched(slot, EL_SEG_VALUE)), &len);

			bytes += len;
			values[7] = PointerGetDatum(utf8_bytea(s, len));
		}
		if (!nulls[8])
		{
			Jsonb	   *jb = DatumGetJsonbP(fetched(slot, EL_SEG_HEADERS));
			int			len;

			(void) jsonb_text(jb, &len);
			bytes += len;
			nulls[8] = !json_headers(st, jb, &values[8]);
		}
	}
	if (st->packed)
		fetch_pack_put(st, item_no, offset, values, nulls);
	else
	{
		oldowner = CurrentResourceOwner;
		CurrentResourceOwner = st->store_owner;
		tuplestore_putvalues(st->store, st->tupdesc, values, nulls);
		CurrentResourceOwner = oldowner;
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->rowcxt);
	return bytes;
}

/*
 * The records of an item from its offset on, below the stable offset of
 * "point": at most max_records, and while the bytes of those before a
 * record are below max_bytes and below what is left of the call's
 * total_max_bytes.  Returns how many.
 */
static int64
fetch_rows(FetchState *st, FetchItem *it, int item_no, ElReadPoint *point)
{
	ElScan		scan;
	Snapshot	snapshot;
	TupleTableSlot *slot;
	int64		offset;
	int64		n = 0;
	int64		bytes = 0;
	bool		unlimited = it->bytes_null;
	int64		limit = it->max_bytes;

	/*
	 * The response's limit: what the items before this one left of it.  The
	 * call's first record is read whatever its size (Kafka returns it, so
	 * that a consumer progresses); once a record was read, an item finds
	 * nothing left when the bytes read reach the limit, and is not scanned.
	 */
	if (!st->total_null)
	{
		int64		left = st->total_rows > 0 ?
			st->total_max - st->total_bytes : Max(st->total_max, 1);

		if (unlimited || left < limit)
		{
			limit = left;
			unlimited = false;
		}
	}

	/* Nothing stable at or after the offset: no snapshot, no scan. */
	if (it->offset >= point->stable || (!unlimited && limit <= 0))
		return 0;
	/* Step 2 of read.c: a snapshot taken after the stable offset was. */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	/* What an item that failed midway packed is not its records. */
	if (st->packed)
		st->pack.len = VARHDRSZ;
	el_scan_begin(&scan, point, it->offset, snapshot);
	while (n < it->max_records && (unlimited || bytes < limit) &&
		   (slot = el_scan_next(&scan, &offset)) != NULL)
	{
		int64		b = fetch_put_row(st, point->topic->binary, item_no, slot, offset);

		bytes += b;
		st->total_bytes += b;
		st->total_rows++;
		n++;
		CHECK_FOR_INTERRUPTS();
	}
	if (st->packed)
		fetch_pack_flush(st);
	el_scan_end(&scan);
	UnregisterSnapshot(snapshot);
	return n;
}

/*
 * Read item "item_no" (from 1) as eventlog.read_binary (or read) reads it,
 * raising what it raises, in the same order; then take its log start and
 * stable offset.  Returns its error code when it is one without an error
 * (no such topic; an offset out of the log's range), and the count of its
 * records in *nrows.
 */
static int16
fetch_item(FetchState *st, FetchItem *it, int item_no, int64 *nrows)
{
	ElTopic    *topic;
	ElReadPoint point;
	int16		error = KFETCH_OK;

	*nrows = 0;
	/* The PL/pgSQL looked the name up in topic_catalog first. */
	if (it->name == NULL ||
		!el_topic_name_valid(VARDATA_ANY(it->name), VARSIZE_ANY_EXHDR(it->name)))
		return KFETCH_UNKNOWN_TOPIC;
	topic = el_topic_lookup(it->name);

	/*
	 * A topic dropped during the call (during the wait, mostly): its drop
	 * wakes the wait before this backend gets its catalog invalidation, so
	 * the catalog itself says whether the topic is still there (42704).
	 */
	if (el_topic_drop_count() != st->drops_at_start)
	{
		uint64		drops = 0;

		topic = el_topic_recheck(it->name, topic->topic_id, &drops);
	}
	el_check_read_args(it->offset_null, it->offset, it->max_null, it->max_records);
	if (it->part_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("partition must not be null")));
	el_check_partition(topic, it->partition);
	el_point_at(it->name, topic, it->partition, &point);
	el_require_topic_privilege(point.topic, GetUserId(), EL_PRIV_CONSUME);
	/*
	 * As read does (read.c): a standby knows no high watermark but the
	 * published stable offset, which may lag behind a position committed on
	 * the primary (or read on a standby ahead of this one); a Fetch from
	 * above it finds nothing yet, instead of sending the client back to its
	 * offset reset policy.
	 */
	if (it->offset < point.log_start ||
		(it->offset > point.high_watermark && !RecoveryInProgress()))
		error = KFETCH_OFFSET_OUT_OF_RANGE;
	else
		*nrows = fetch_rows(st, it, item_no, &point);

	/* After the read: every record returned lies below this stable offset. */
	topic = el_topic_lookup(it->name);
	el_check_partition(topic, it->partition);
	el_point_at(it->name, topic, it->partition, &point);
	it->log_start = point.log_start;
	it->stable = point.stable;
	it->have_offsets = true;
	return error;
}

/* Run fn(st, arg) in a subtransaction; on error, its data (else NULL). */
typedef void (*FetchStep) (FetchState *st, void *arg);

static ErrorData *
fetch_in_subxact(FetchState *st, FetchStep fn, void *arg)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		fn(st, arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	return edata;
}

/* What PL/pgSQL's WHEN OTHERS does not catch: raise it again. */
static void
fetch_rethrow_uncaught(ErrorData *edata)
{
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
		edata->sqlerrcode == ERRCODE_ASSERT_FAILURE)
		ReThrowError(edata);
}

typedef struct ReadArg
{
	int			i;				/* from 0 */
	int64		nrows;
	int16		error;
} ReadArg;

static void
fetch_read_step(FetchState *st, void *arg)
{
	ReadArg    *a = (ReadArg *) arg;

	a->error = fetch_item(st, &st->items[a->i], a->i + 1, &a->nrows);
}

/* Item i's error code for a read that raised edata (the PL/pgSQL's handlers). */
static int16
fetch_error(FetchItem *it, ErrorData *edata)
{
	switch (edata->sqlerrcode)
	{
		case ERRCODE_UNDEFINED_OBJECT:
			return KFETCH_UNKNOWN_TOPIC;
		case ERRCODE_INVALID_PARAMETER_VALUE:
			/* A partition that does not exist; a negative offset. */
			return (!it->offset_null && it->offset < 0) ?
				KFETCH_OFFSET_OUT_OF_RANGE : KFETCH_UNKNOWN_TOPIC;
		case ERRCODE_INSUFFICIENT_PRIVILEGE:
			return KFETCH_NOT_AUTHORIZED;
		case ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE:
			return KFETCH_OFFSET_OUT_OF_RANGE;
		default:
			break;
	}
	fetch_rethrow_uncaught(edata);
	if (it->part_null)
		ereport(WARNING,
				(errmsg("fetch of partition <NULL> of topic %s failed: %s",
						text_to_cstring(it->name), edata->message)));
	else
		ereport(WARNING,
				(errmsg("fetch of partition %d of topic %s failed: %s",
						it->partition, text_to_cstring(it->name), edata->message)));
	return KFETCH_OTHER;
}

/* One pass over the items without an error; the records it returned. */
static int64
fetch_pass(FetchState *st)
{
	int64		got = 0;

	for (int i = 0; i < st->n; i++)
	{
		FetchItem  *it = &st->items[i];
		ReadArg		a;
		ErrorData  *edata;

		if (it->error != KFETCH_OK)
			continue;
		a.i = i;
		a.nrows = 0;
		a.error = KFETCH_OK;
		it->have_offsets = false;
		edata = fetch_in_subxact(st, fetch_read_step, &a);
		if (edata != NULL)
		{
			it->error = fetch_error(it, edata);
			FreeErrorData(edata);
		}
		else
		{
			it->error = a.error;
			got += a.nrows;
		}
	}
	return got;
}

typedef struct WaitArg
{
	text	  **names;
	int32	   *partitions;
	int64	   *positions;
	int32		wait_ms;
	bool		ready;
} WaitArg;

/*
 * Whether nothing is readable and nothing would fail: then the first pass
 * would read nothing and the call would wait, so it waits at once.  Only the
 * cache and shared memory are looked at; any error says "read and see".
 */
static void
fetch_empty_step(FetchState *st, void *arg)
{
	WaitArg    *w = (WaitArg *) arg;
	int32	   *topic_ids = palloc(sizeof(int32) * st->n);
	uint64	   *drops = palloc(sizeof(uint64) * st->n);
	int64	   *positions = palloc(sizeof(int64) * st->n);

	w->ready = true;			/* "read first" unless shown otherwise */
	if (RecoveryInProgress())
		return;
	for (int i = 0; i < st->n; i++)
	{
		FetchItem  *it = &st->items[i];
		ElTopic    *topic;
		ElReadPoint point;

		if (it->name == NULL || it->part_null || it->offset_null || it->offset < 0 ||
			it->max_null || it->max_records < 1 ||
			!el_topic_name_valid(VARDATA_ANY(it->name), VARSIZE_ANY_EXHDR(it->name)))
			return;
		topic = el_topic_lookup(it->name);
		if (it->partition < 0 || it->partition >= topic->npartitions ||
			!el_topic_allows(topic, GetUserId(), EL_PRIV_CONSUME))
			return;
		el_point_at(it->name, topic, it->partition, &point);
		if (it->offset < point.log_start || it->offset > point.high_watermark)
			return;
		topic_ids[i] = point.topic->topic_id;
		drops[i] = el_topic_drop_count();
		positions[i] = it->offset;
	}
	w->ready = el_kafka_any_readable(st->n, w->names, topic_ids, w->partitions,
									 positions, drops);
}

static void
fetch_wait_step(FetchState *st, void *arg)
{
	WaitArg    *w = (WaitArg *) arg;

	/*
	 * The first look trusts the cache as of the call's start, rather than
	 * reading the catalog as _kafka_await's does (an SPI query per topic:
	 * a fifth of an idle consumer's cost in the server).  A drop counted
	 * since then still makes it read the catalog; one that committed just
	 * before the call, whose invalidation this backend had not received
	 * yet, ends the wait at its timeout instead of at once, and the second
	 * pass reports it.
	 */
	w->ready = el_kafka_wait(st->n, w->names, w->partitions, w->positions, w->wait_ms,
							 st->drops_at_start);
}

/*
 * The long poll between the passes: a topic dropped, a privilege revoked or
 * a partition gone meanwhile only ends it (the second pass says so).
 */
static void
fetch_wait(FetchState *st, WaitArg *w)
{
	ErrorData  *edata = fetch_in_subxact(st, fetch_wait_step, w);

	if (edata == NULL)
		return;
	if (edata->sqlerrcode != ERRCODE_UNDEFINED_OBJECT &&
		edata->sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE &&
		edata->sqlerrcode != ERRCODE_INVALID_PARAMETER_VALUE)
		ReThrowError(edata);
	FreeErrorData(edata);
}

/* The log start and stable offset of an item whose read did not take them. */
static void
fetch_offsets_step(FetchState *st, void *arg)
{
	FetchItem  *it = (FetchItem *) arg;
	ElTopic    *topic;
	ElReadPoint point;

	topic = el_topic_lookup(it->name);
	el_check_partition(topic, it->partition);
	el_point_at(it->name, topic, it->partition, &point);
	it->log_start = point.log_start;
	it->stable = point.stable;
	it->have_offsets = true;
}

/*
 * eventlog._kafka_fetch(topics text[], partitions integer[], offsets
 * bigint[], max_records integer[], wait_ms integer, max_bytes bigint[],
 * total_max_bytes bigint)
 *		-> SETOF (k_item, k_error, k_log_start, k_stable, k_offset, k_time,
 *				  k_key, k_value, k_headers), or with packed (total_max_bytes,
 *				  packed boolean) the records packed (fetch_pack_put)
 */
Datum
el_kafka_fetch(PG_FUNCTION_ARGS)
{
	ArrayArg	a_topics, a_parts, a_offsets, a_max, a_bytes;
	int32		wait_ms = PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4);
	FetchState	st;
	WaitArg		w;
	bool		skip_first = false;
	int			n;

	memset(&st, 0, sizeof(st));
	array_arg(fcinfo, 0, TEXTOID, &a_topics);
	array_arg(fcinfo, 1, INT4OID, &a_parts);
	array_arg(fcinfo, 2, INT8OID, &a_offsets);
	array_arg(fcinfo, 3, INT4OID, &a_max);
	array_arg(fcinfo, 5, INT8OID, &a_bytes);
	/* A NULL limit is none; a limit below 1 is 1: the first record. */
	st.total_null = PG_NARGS() < 7 || PG_ARGISNULL(6);
	st.total_max = st.total_null ? 0 : PG_GETARG_INT64(6);
	st.packed = PG_NARGS() >= 8 && !PG_ARGISNULL(7) && PG_GETARG_BOOL(7);
	n = a_topics.length;
	if (a_parts.length != n || a_offsets.length != n || a_max.length != n)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("topics, partitions, offsets and max_records must have the same length")));

	st.n = n;
	st.cxt = CurrentMemoryContext;
	st.drops_at_start = el_topic_drop_count();
	st.store = el_materialized_srf(fcinfo, "_kafka_fetch", &st.tupdesc);
	st.store_owner = CurrentResourceOwner;
	st.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "pg_eventlog fetch row",
									  ALLOCSET_DEFAULT_SIZES);
	if (st.packed)
	{
		initStringInfo(&st.pack);
		appendBinaryStringInfoNT(&st.pack, "\0\0\0\0", VARHDRSZ);
	}
	st.items = palloc0(sizeof(FetchItem) * Max(n, 1));
	w.names = palloc(sizeof(text *) * Max(n, 1));
	w.partitions = palloc(sizeof(int32) * Max(n, 1));
	w.positions = palloc(sizeof(int64) * Max(n, 1));
	w.wait_ms = wait_ms;
	for (int i = 0; i < n; i++)
	{
		FetchItem  *it = &st.items[i];
		Datum		d;

		it->name = array_arg_get(&a_topics, i + 1, &d) ? DatumGetTextPP(d) : NULL;
		it->part_null = !array_arg_get(&a_parts, i + 1, &d);
		it->partition = it->part_null ? 0 : DatumGetInt32(d);
		it->offset_null = !array_arg_get(&a_offsets, i + 1, &d);
		it->offset = it->offset_null ? 0 : DatumGetInt64(d);
		it->max_null = !array_arg_get(&a_max, i + 1, &d);
		it->max_records = it->max_null ? 0 : DatumGetInt32(d);
		it->bytes_null = !array_arg_get(&a_bytes, i + 1, &d);
		it->max_bytes = it->bytes_null ? 0 : DatumGetInt64(d);
		w.names[i] = it->name;
		w.partitions[i] = it->partition;
		w.positions[i] = it->offset;
	}

	/* Nothing readable and nothing wrong: no first pass, the wait at once. */
	if (wait_ms > 0 && n > 0)
	{
		ErrorData  *edata = fetch_in_subxact(&st, fetch_empty_step, &w);

		if (edata != NULL)
		{
			if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
				ReThrowError(edata);
			FreeErrorData(edata);
		}
		else
			skip_first = !w.ready;
	}

	for (int pass = 1; pass <= 2; pass++)
	{
		bool		any_error = false;

		if (pass == 2 || !skip_first)
			st.got += fetch_pass(&st);
		for (int i = 0; i < n; i++)
			any_error |= (st.items[i].error != KFETCH_OK);
		if (pass == 2 || st.got > 0 || wait_ms <= 0 || n == 0 || any_error)
			break;
		fetch_wait(&st, &w);
		AcceptInvalidationMessages();
	}

	/* Each item's outcome. */
	for (int i = 0; i < n; i++)
	{
		FetchItem  *it = &st.items[i];
		Datum		values[KFETCH_NATTS];
		bool		nulls[KFETCH_NATTS];
		ResourceOwner oldowner;

		if ((it->error == KFETCH_OK || it->error == KFETCH_OFFSET_OUT_OF_RANGE) &&
			!it->offset_null && it->offset >= 0 && !it->have_offsets)
		{
			ErrorData  *edata = fetch_in_subxact(&st, fetch_offsets_step, it);

			if (edata != NULL)
			{
				if (edata->sqlerrcode != ERRCODE_UNDEFINED_OBJECT &&
					edata->sqlerrcode != ERRCODE_INVALID_PARAMETER_VALUE)
					ReThrowError(edata);
				if (it->error == KFETCH_OK)
					it->error = KFETCH_UNKNOWN_TOPIC;
				FreeErrorData(edata);
			}
		}
		memset(nulls, true, sizeof(nulls));
		values[0] = Int32GetDatum(i + 1);
		nulls[0] = false;
		values[1] = Int16GetDatum(it->error);
		nulls[1] = false;
		if (it->have_offsets &&
			(it->error == KFETCH_OK || it->error == KFETCH_OFFSET_OUT_OF_RANGE) &&
			!it->offset_null && it->offset >= 0)
		{
			values[2] = Int64GetDatum(it->log_start);
			nulls[2] = false;
			values[3] = Int64GetDatum(it->stable);
			nulls[3] = false;
		}
		oldowner = CurrentResourceOwner;
		CurrentResourceOwner = st.store_owner;
		tuplestore_putvalues(st.store, st.tupdesc, values, nulls);
		CurrentResourceOwner = oldowner;
	}
	MemoryContextDelete(st.rowcxt);
	return (Datum) 0;
}
