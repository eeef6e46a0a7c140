/*-------------------------------------------------------------------------
 *
 * produce_store.c
 *	  Storing one Produce partition's decoded records in PostgreSQL: the
 *	  checks the records pass first, the parameters in PostgreSQL's binary
 *	  format, the one statement, and what its failure means to Kafka.
 *
 * A binary topic gets eventlog.produce_binary_batch(topic, messages,
 * partition) with messages an eventlog.message[] in binary format: keys,
 * values and header values go as they came, byte for byte, with no
 * escaping and no parsing on either side (the text form of a bytea inside
 * a composite inside an array is quoted twice and costs more to write and
 * to parse than the bytes themselves).  A JSON topic gets
 * eventlog.produce_batch(topic, keys text[], values jsonb[], headers
 * jsonb[], partition, event_times timestamptz[]), arrays in binary format
 * (jsonb's binary form is a version byte and the JSON text).  Both are the
 * SQL producers' own functions, so privileges, partition checks, record
 * sizes and offsets are exactly theirs.
 *
 * A batch of an idempotent producer (producer id >= 0, InitProducerId)
 * goes to the *_idempotent variants of the same functions, with its
 * producer id, epoch and base sequence: src/producer.c checks the sequence
 * in the storing transaction, a retry of one of the producer's last 5
 * batches gets its original offsets, and the KP00x SQLSTATEs become
 * Kafka's errors.  Other batches keep the plain functions: a producer that
 * is not idempotent pays nothing.
 *
 * The statement also sets synchronous_commit for its own transaction
 * (set_config(..., true): the implicit transaction of the statement) from
 * the request's acks, and reads the partition's log start offset: one
 * round trip per partition batch.
 *
 * eventlog.message and eventlog.header have OIDs of their own database,
 * which the binary format names: they are looked up once per session and
 * again if PostgreSQL says they changed (the extension was dropped and
 * created again).
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "json_check.h"
#include "log.h"
#include "produce_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built-in types' OIDs (pg_type.dat; never change). */
#define K_OID_BYTEA			17
#define K_OID_TEXT			25
#define K_OID_TIMESTAMPTZ	1184
#define K_OID_JSONB			3802

/*
 * PostgreSQL's timestamptz range in Unix milliseconds, [min, end): Kafka's
 * timestamps (int64 milliseconds) outside it cannot be stored.
 */
#define K_PG_MIN_TS_MS		(-210866803200000LL)
#define K_PG_END_TS_MS		(9224318016000000LL)
/* Microseconds from the Unix epoch to PostgreSQL's (2000-01-01). */
#define K_PG_EPOCH_US		(946684800000000LL)

/* PostgreSQL's largest value (MaxAllocSize). */
#define K_PARAM_LIMIT		((size_t) 0x3fffffff)

/* Header counts up to this are checked for duplicates pairwise. */
#define K_PAIRWISE_HEADERS	16

/* The session's OIDs of eventlog.message, eventlog.header, its array. */
typedef struct KTypeOids
{
	PGconn	   *pg;				/* the session they were read in */
	uint32_t	message;
	uint32_t	header;
	uint32_t	header_array;
} KTypeOids;

/* One thread per connection: a thread's cache is its connection's. */
static _Thread_local KTypeOids type_oids;

static const char *const binary_sql =
"SELECT pg_catalog.set_config('synchronous_commit', $4::pg_catalog.text, true),"
"       (SELECT pg_catalog.min(p.offset_id)"
"          FROM eventlog.produce_binary_batch($1::pg_catalog.text,"
"               $2::eventlog.message[], $3::pg_catalog.int4) p),"
"       eventlog.log_start_offset($1::pg_catalog.text, $3::pg_catalog.int4)";

static const char *const json_sql =
"SELECT pg_catalog.set_config('synchronous_commit', $7::pg_catalog.text, true),"
"       (SELECT pg_catalog.min(p.offset_id)"
"          FROM eventlog.produce_batch($1::pg_catalog.text, $2::pg_catalog.text[],"
"               $3::pg_catalog.jsonb[], $4::pg_catalog.jsonb[], $5::pg_catalog.int4,"
"               $6::pg_catalog.timestamptz[]) p),"
"       eventlog.log_start_offset($1::pg_catalog.text, $5::pg_catalog.int4)";

/*
 * An idempotent producer's batch (producer id >= 0): the *_idempotent
 * functions, with the batch's producer id, epoch and base sequence.  A
 * retry of a batch stored before returns its original offsets and stores
 * nothing, so min() is the original base offset Kafka answers with.
 */
static const char *const binary_idem_sql =
"SELECT pg_catalog.set_config('synchronous_commit', $4::pg_catalog.text, true),"
"       (SELECT pg_catalog.min(p.offset_id)"
"          FROM eventlog.produce_binary_batch_idempotent($1::pg_catalog.text,"
"               $2::eventlog.message[], $3::pg_catalog.int4, $5::pg_catalog.int8,"
"               $6::pg_catalog.int4, $7::pg_catalog.int4) p),"
"       eventlog.log_start_offset($1::pg_catalog.text, $3::pg_catalog.int4)";

static const char *const json_idem_sql =
"SELECT pg_catalog.set_config('synchronous_commit', $7::pg_catalog.text, true),"
"       (SELECT pg_catalog.min(p.offset_id)"
"          FROM eventlog.produce_batch_idempotent($1::pg_catalog.text, $2::pg_catalog.text[],"
"               $3::pg_catalog.jsonb[], $4::pg_catalog.jsonb[], $5::pg_catalog.int4,"
"               $6::pg_catalog.timestamptz[], $8::pg_catalog.int8, $9::pg_catalog.int4,"
"               $10::pg_catalog.int4) p),"
"       eventlog.log_start_offset($1::pg_catalog.text, $5::pg_catalog.int4)";

static const char *const oids_sql =
"SELECT 'eventlog.message'::pg_catalog.regtype::pg_catalog.oid,"
"       'eventlog.header'::pg_catalog.regtype::pg_catalog.oid,"
"       'eventlog.header[]'::pg_catalog.regtype::pg_catalog.oid";

int16_t
kproduce_error_for_sqlstate(const char *st)
{
	/* Never ran, or the session broke: the outcome is unknown, retry. */
	if (st[0] == '\0' || strncmp(st, "08", 2) == 0 || strncmp(st, "57P", 3) == 0)
		return KERR_REQUEST_TIMED_OUT;
	if (strcmp(st, "42501") == 0)
		return KERR_TOPIC_AUTHORIZATION_FAILED;
	/* An idempotent producer's batch refused (src/producer.c). */
	if (strcmp(st, "KP001") == 0)
		return KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
	if (strcmp(st, "KP002") == 0)
		return KERR_DUPLICATE_SEQUENCE_NUMBER;
	if (strcmp(st, "KP003") == 0)
		return KERR_INVALID_PRODUCER_EPOCH;
	if (strcmp(st, "KP004") == 0)
		return KERR_UNKNOWN_PRODUCER_ID;
	/* The topic was dropped after the request looked it up. */
	if (strcmp(st, "42704") == 0)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	/* Dropped and created again as the other format: look it up again. */
	if (strcmp(st, "42809") == 0)
		return KERR_LEADER_NOT_AVAILABLE;
	if (strcmp(st, "54000") == 0)
		return KERR_MESSAGE_TOO_LARGE;
	if (strcmp(st, "57014") == 0)
		return KERR_REQUEST_TIMED_OUT;
	/* A standby, or a read-only session: the client retries elsewhere. */
	if (strcmp(st, "25006") == 0 || strcmp(st, "0A000") == 0)
		return KERR_NOT_LEADER_OR_FOLLOWER;
	/* Serialization failure, deadlock: retrying stores it. */
	if (strncmp(st, "40", 2) == 0)
		return KERR_REQUEST_TIMED_OUT;
	/* Data exceptions: a value PostgreSQL refuses. */
	if (strncmp(st, "22", 2) == 0 || strcmp(st, "54001") == 0)
		return KERR_INVALID_RECORD;
	return KERR_UNKNOWN_SERVER_ERROR;
}

static void
add_fault(KProduceResult *out, int64_t *total, int32_t index, const char *msg)
{
	if (out->nfaults < K_MAX_RECORD_FAULTS)
	{
		out->faults[out->nfaults].index = index;
		snprintf(out->faults[out->nfaults].msg, sizeof(out->faults[0].msg), "%s", msg);
		out->nfaults++;
	}
	(*total)++;
	out->error = KERR_INVALID_RECORD;
}

static int
compare_slices(const void *x, const void *y)
{
	const KSlice *a = x;
	const KSlice *b = y;
	int			c = memcmp(a->ptr, b->ptr, (size_t) (a->len < b->len ? a->len : b->len));

	return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

/* True if two of a record's headers have the same name. */
static bool
duplicate_names(const KRecord *rec, KSlice *scratch)
{
	int32_t		n = rec->nheaders;

	if (n <= K_PAIRWISE_HEADERS)
	{
		for (int32_t i = 0; i < n; i++)
			for (int32_t j = i + 1; j < n; j++)
				if (compare_slices(&rec->headers[i].key, &rec->headers[j].key) == 0)
					return true;
		return false;
	}
	for (int32_t i = 0; i < n; i++)
		scratch[i] = rec->headers[i].key;
	qsort(scratch, (size_t) n, sizeof(KSlice), compare_slices);
	for (int32_t i = 1; i < n; i++)
		if (compare_slices(&scratch[i - 1], &scratch[i]) == 0)
			return true;
	return false;
}

/*
 * What PostgreSQL would refuse, record by record, so that record_errors
 * can name them: timestamps out of its range, header names that are not
 * UTF-8 text (both formats: eventlog.header's name is text), and for JSON
 * topics keys and header values that are not UTF-8, values that are not
 * JSON, and header names that repeat (a JSON object's keys cannot).
 * False (and out filled) if any record is at fault.
 */
static bool
check_records(const KRecordSet *set, bool binary, KProduceResult *out)
{
	int64_t		total = 0;
	int32_t		index = 0;
	int32_t		maxh = 0;
	KSlice	   *scratch = NULL;
	char		why[96];
	char		msg[256];

	for (int32_t b = 0; b < set->nbatches; b++)
		for (int32_t r = 0; r < set->batches[b].record_count; r++)
			if (set->batches[b].records[r].nheaders > maxh)
				maxh = set->batches[b].records[r].nheaders;
	if (!binary && maxh > K_PAIRWISE_HEADERS)
	{
		scratch = malloc((size_t) maxh * sizeof(KSlice));
		if (scratch == NULL)
		{
			out->error = KERR_UNKNOWN_SERVER_ERROR;
			snprintf(out->errmsg, sizeof(out->errmsg), "out of memory");
			return false;
		}
	}

	for (int32_t b = 0; b < set->nbatches; b++)
	{
		const KRecordBatch *batch = &set->batches[b];

		for (int32_t r = 0; r < batch->record_count; r++, index++)
		{
			const KRecord *rec = &batch->records[r];
			bool		bad = false;

			if (rec->timestamp < K_PG_MIN_TS_MS || rec->timestamp >= K_PG_END_TS_MS)
			{
				snprintf(msg, sizeof(msg), "timestamp %lld is out of range for PostgreSQL",
						 (long long) rec->timestamp);
				add_fault(out, &total, index, msg);
				continue;
			}
			for (int32_t h = 0; h < rec->nheaders && !bad; h++)
			{
				const KRecordHeader *hd = &rec->headers[h];

				if (!k_utf8_valid(hd->key.ptr, (size_t) hd->key.len, why, sizeof(why)))
				{
					snprintf(msg, sizeof(msg), "header %d's name: %s", h, why);
					bad = true;
				}
				else if (!binary && !KSLICE_IS_NULL(hd->value) &&
						 !k_utf8_valid(hd->value.ptr, (size_t) hd->value.len, why, sizeof(why)))
				{
					snprintf(msg, sizeof(msg), "header %d's value is not text for a JSON topic: %s",
							 h, why);
					bad = true;
				}
			}
			if (!bad && !binary)
			{
				if (!KSLICE_IS_NULL(rec->key) &&
					!k_utf8_valid(rec->key.ptr, (size_t) rec->key.len, why, sizeof(why)))
				{
					snprintf(msg, sizeof(msg), "the key is not text for a JSON topic: %s", why);
					bad = true;
				}
				else if (!KSLICE_IS_NULL(rec->value) &&
						 !k_json_valid(rec->value.ptr, (size_t) rec->value.len, why, sizeof(why)))
				{
					snprintf(msg, sizeof(msg), "the value is not JSON: %s", why);
					bad = true;
				}
				else if (rec->nheaders > 1 && duplicate_names(rec, scratch))
				{
					snprintf(msg, sizeof(msg), "two headers have the same name, which a JSON topic's headers (an object) cannot hold");
					bad = true;
				}
			}
			if (bad)
				add_fault(out, &total, index, msg);
		}
	}
	free(scratch);
	if (total == 0)
		return true;
	if (total == 1)
		snprintf(out->errmsg, sizeof(out->errmsg), "record %d is invalid, so none of the batch was stored: %s",
				 out->faults[0].index, out->faults[0].msg);
	else
		snprintf(out->errmsg, sizeof(out->errmsg), "%lld records are invalid, so none of the batch was stored; record %d: %s",
				 (long long) total, out->faults[0].index, out->faults[0].msg);
	return false;
}

/* A nullable value of an array or composite: its length, its bytes. */
static void
put_slice(KWriter *w, KSlice s)
{
	if (KSLICE_IS_NULL(s))
		kw_int32(w, -1);
	else
	{
		kw_int32(w, s.len);
		kw_raw(w, s.ptr, (size_t) s.len);
	}
}

/*
 * A one-dimensional array's header (array_recv): dimensions, a flag saying
 * whether it holds nulls (returned: its position, to set afterwards), the
 * element type, the length and lower bound.
 */
static size_t
array_header(KWriter *w, uint32_t elemtype, int32_t n)
{
	size_t		hasnull_at;

	kw_int32(w, 1);
	hasnull_at = kw_placeholder_int32(w);
	kw_uint32(w, elemtype);
	kw_int32(w, n);
	kw_int32(w, 1);
	return hasnull_at;
}

static int64_t
pg_timestamp(int64_t ms)
{
	return ms * 1000 - K_PG_EPOCH_US;
}

/* eventlog.message[] of every record, in PostgreSQL's binary format. */
static void
build_messages(KWriter *w, const KRecordSet *set)
{
	array_header(w, type_oids.message, (int32_t) set->nrecords);
	for (int32_t b = 0; b < set->nbatches; b++)
	{
		const KRecordBatch *batch = &set->batches[b];

		for (int32_t r = 0; r < batch->record_count && !w->error; r++)
		{
			const KRecord *rec = &batch->records[r];
			size_t		at = kw_placeholder_int32(w);

			kw_int32(w, 4);
			kw_uint32(w, K_OID_BYTEA);
			put_slice(w, rec->key);
			kw_uint32(w, K_OID_BYTEA);
			put_slice(w, rec->value);
			kw_uint32(w, type_oids.header_array);
			/* A record without headers has NULL headers, as the SQL default. */
			if (rec->nheaders == 0)
				kw_int32(w, -1);
			else
			{
				size_t		harr = kw_placeholder_int32(w);

				array_header(w, type_oids.header, rec->nheaders);
				for (int32_t h = 0; h < rec->nheaders; h++)
				{
					size_t		hat = kw_placeholder_int32(w);

					kw_int32(w, 2);
					kw_uint32(w, K_OID_TEXT);
					put_slice(w, rec->headers[h].key);
					kw_uint32(w, K_OID_BYTEA);
					put_slice(w, rec->headers[h].value);
					kw_patch_int32(w, hat, (int32_t) (w->len - hat - 4));
				}
				kw_patch_int32(w, harr, (int32_t) (w->len - harr - 4));
			}
			kw_uint32(w, K_OID_TIMESTAMPTZ);
			kw_int32(w, 8);
			kw_int64(w, pg_timestamp(rec->timestamp));
			kw_patch_int32(w, at, (int32_t) (w->len - at - 4));
		}
	}
}

/* A record's headers as a JSON object (jsonb's binary form). */
static void
put_json_headers(KWriter *w, const KRecord *rec)
{
	size_t		need = 1 + 2;
	uint8_t    *o;
	size_t		at;

	for (int32_t h = 0; h < rec->nheaders; h++)
		need += 6 * (size_t) rec->headers[h].key.len + 2 + 1 +
			(KSLICE_IS_NULL(rec->headers[h].value) ? 4 : 6 * (size_t) rec->headers[h].value.len + 2) + 1;
	at = kw_placeholder_int32(w);
	if (need > K_PARAM_LIMIT || !kw_reserve(w, need))
	{
		w->error = true;
		return;
	}
	o = w->buf + w->len;
	*o++ = 1;					/* jsonb's binary format version */
	*o++ = '{';
	for (int32_t h = 0; h < rec->nheaders; h++)
	{
		const KRecordHeader *hd = &rec->headers[h];

		if (h > 0)
			*o++ = ',';
		o += k_json_quote(hd->key.ptr, (size_t) hd->key.len, o);
		*o++ = ':';
		if (KSLICE_IS_NULL(hd->value))
		{
			memcpy(o, "null", 4);
			o += 4;
		}
		else
			o += k_json_quote(hd->value.ptr, (size_t) hd->value.len, o);
	}
	*o++ = '}';
	w->len = (size_t) (o - w->buf);
	kw_patch_int32(w, at, (int32_t) (w->len - at - 4));
}

/*
 * The arrays of produce_batch: keys text[], values jsonb[], headers
 * jsonb[] (headers_any false if no record has any: then NULL), event
 * times timestamptz[].
 */
static void
build_json(KWriter *keys, KWriter *values, KWriter *headers, KWriter *times,
		   const KRecordSet *set, bool *headers_any)
{
	int32_t		n = (int32_t) set->nrecords;
	size_t		knull = array_header(keys, K_OID_TEXT, n);
	size_t		vnull = array_header(values, K_OID_JSONB, n);
	size_t		hnull = 0;

	*headers_any = false;
	for (int32_t b = 0; b < set->nbatches && !*headers_any; b++)
		for (int32_t r = 0; r < set->batches[b].record_count; r++)
			if (set->batches[b].records[r].nheaders > 0)
			{
				*headers_any = true;
				break;
			}
	if (*headers_any)
		hnull = array_header(headers, K_OID_JSONB, n);
	array_header(times, K_OID_TIMESTAMPTZ, n);

	for (int32_t b = 0; b < set->nbatches; b++)
	{
		const KRecordBatch *batch = &set->batches[b];

		for (int32_t r = 0; r < batch->record_count; r++)
		{
			const KRecord *rec = &batch->records[r];

			put_slice(keys, rec->key);
			if (KSLICE_IS_NULL(rec->key))
				kw_patch_int32(keys, knull, 1);
			if (KSLICE_IS_NULL(rec->value))
			{
				kw_int32(values, -1);
				kw_patch_int32(values, vnull, 1);
			}
			else
			{
				kw_int32(values, rec->value.len + 1);
				kw_int8(values, 1);
				kw_raw(values, rec->value.ptr, (size_t) rec->value.len);
			}
			if (*headers_any)
			{
				if (rec->nheaders == 0)
				{
					kw_int32(headers, -1);
					kw_patch_int32(headers, hnull, 1);
				}
				else
					put_json_headers(headers, rec);
			}
			kw_int32(times, 8);
			kw_int64(times, pg_timestamp(rec->timestamp));
		}
	}
}

/* Read the session's OIDs of the extension's types if not known. */
static bool
load_type_oids(KConn *conn, bool force)
{
	PGresult   *res;
	char		sqlstate[6];

	if (!force && type_oids.pg != NULL && type_oids.pg == conn->pg)
		return true;
	res = kpg_exec(conn, oids_sql, 0, NULL, sqlstate);
	if (res == NULL || PQntuples(res) != 1)
	{
		PQclear(res);
		return false;
	}
	type_oids.message = (uint32_t) strtoul(PQgetvalue(res, 0, 0), NULL, 10);
	type_oids.header = (uint32_t) strtoul(PQgetvalue(res, 0, 1), NULL, 10);
	type_oids.header_array = (uint32_t) strtoul(PQgetvalue(res, 0, 2), NULL, 10);
	type_oids.pg = conn->pg;
	PQclear(res);
	return true;
}

static const char *
synchronous_commit_for(int16_t acks)
{
	if (acks == 0)
		return "off";
	if (acks == 1)
		return "local";
	return "on";
}

static void
oom(KProduceResult *out)
{
	out->error = KERR_UNKNOWN_SERVER_ERROR;
	snprintf(out->errmsg, sizeof(out->errmsg),
			 "the gateway could not build the statement for this batch (out of memory or over 1 GB)");
}

void
kproduce_store(KConn *conn, const char *topic, int32_t partition, bool binary,
			   int16_t acks, const KRecordSet *set, KProduceResult *out)
{
	char		partbuf[16];
	char		idbuf[24];
	char		epochbuf[8];
	char		seqbuf[16];
	const char *params[10];
	int			lengths[10];
	int			formats[10];
	bool		idem = set->nbatches == 1 && set->batches[0].producer_id >= 0;
	const char *sql = NULL;
	int			nparams;
	char		sqlstate[6];
	KWriter		w[4];
	PGresult   *res = NULL;
	int			nw = binary ? 1 : 4;

	out->error = KERR_NONE;
	out->base_offset = -1;
	out->log_start_offset = -1;
	out->errmsg[0] = '\0';
	out->nfaults = 0;

	if (!check_records(set, binary, out))
		return;

	snprintf(partbuf, sizeof(partbuf), "%d", partition);
	if (idem)
	{
		snprintf(idbuf, sizeof(idbuf), "%lld", (long long) set->batches[0].producer_id);
		snprintf(epochbuf, sizeof(epochbuf), "%d", set->batches[0].producer_epoch);
		snprintf(seqbuf, sizeof(seqbuf), "%d", set->batches[0].base_sequence);
	}
	for (int i = 0; i < nw; i++)
		kw_init(&w[i], K_PARAM_LIMIT);
	memset(formats, 0, sizeof(formats));

	for (int attempt = 0; attempt < 2; attempt++)
	{
		if (binary)
		{
			if (!load_type_oids(conn, attempt > 0))
			{
				out->error = KERR_REQUEST_TIMED_OUT;
				snprintf(out->errmsg, sizeof(out->errmsg), "the database cannot be reached");
				break;
			}
			kw_reset(&w[0]);
			build_messages(&w[0], set);
			if (w[0].error)
			{
				oom(out);
				break;
			}
			params[0] = topic;
			params[1] = (const char *) w[0].buf;
			lengths[1] = (int) w[0].len;
			formats[1] = 1;
			params[2] = partbuf;
			params[3] = synchronous_commit_for(acks);
			nparams = 4;
			sql = binary_sql;
			if (idem)
			{
				params[4] = idbuf;
				params[5] = epochbuf;
				params[6] = seqbuf;
				formats[4] = formats[5] = formats[6] = 0;
				nparams = 7;
				sql = binary_idem_sql;
			}
		}
		else
		{
			bool		headers_any;

			build_json(&w[0], &w[1], &w[2], &w[3], set, &headers_any);
			if (w[0].error || w[1].error || w[2].error || w[3].error)
			{
				oom(out);
				break;
			}
			params[0] = topic;
			for (int i = 0; i < 4; i++)
			{
				params[1 + i] = (const char *) w[i].buf;
				lengths[1 + i] = (int) w[i].len;
				formats[1 + i] = 1;
			}
			if (!headers_any)
				params[3] = NULL;
			/* $5 is the partition, after the arrays but for event times. */
			params[5] = params[4];
			lengths[5] = lengths[4];
			formats[5] = 1;
			params[4] = partbuf;
			formats[4] = 0;
			params[6] = synchronous_commit_for(acks);
			nparams = 7;
			sql = json_sql;
			if (idem)
			{
				params[7] = idbuf;
				params[8] = epochbuf;
				params[9] = seqbuf;
				nparams = 10;
				sql = json_idem_sql;
			}
		}
		res = kpg_exec_params(conn, sql, nparams, params,
							  lengths, formats, sqlstate, out->errmsg, sizeof(out->errmsg));
		if (res != NULL)
			break;
		/* "wrong data type", "wrong element type": the types were made again. */
		if (binary && attempt == 0 && strcmp(sqlstate, "42804") == 0)
			continue;
		out->error = kproduce_error_for_sqlstate(sqlstate);
		if (out->errmsg[0] == '\0')
			snprintf(out->errmsg, sizeof(out->errmsg), "the database cannot be reached");
		break;
	}
	if (res != NULL)
	{
		if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 1))
		{
			out->base_offset = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
			if (!PQgetisnull(res, 0, 2))
				out->log_start_offset = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
		}
		else
		{
			/* Cannot happen (a batch has records): say so rather than lie. */
			out->error = KERR_UNKNOWN_SERVER_ERROR;
			snprintf(out->errmsg, sizeof(out->errmsg), "the database returned no offset");
		}
		PQclear(res);
	}
	for (int i = 0; i < nw; i++)
		kw_free(&w[i]);
}
