/*-------------------------------------------------------------------------
 *
 * api_fetch.c
 *	  Fetch (key 1), versions 4 to 12: the records of the requested
 *	  partitions as RecordBatch v2, after a long poll in the server when
 *	  none is readable.
 *
 * One query per request: eventlog._kafka_fetch (src/kafka_fetch.c) reads
 * every partition as eventlog.read_binary (or read, for a JSON topic) does,
 * as the connection's role, and when nothing is readable waits as
 * eventlog._kafka_await does, in the server, until a commit
 * makes records readable in any requested partition or max_wait_ms passes:
 * no loop here, no CPU while waiting.  Both isolation levels stop at the
 * last stable offset (PostgreSQL never shows uncommitted rows): the high
 * watermark and the last stable offset of a response are the same number,
 * taken after the partition's records were read, so every record returned
 * lies below it.  min_bytes is met by any record: a response returns as
 * soon as one is readable.
 *
 * The results come in PostgreSQL's binary format, so keys, values and
 * headers arrive as their bytes (no hex) and go into the batches as they
 * are: one uncompressed batch per partition, its offsets those of the
 * records (offsets rolled back leave gaps, as compaction does in Kafka).
 * The records come packed, many in a row (_kafka_fetch's packed: a row
 * per record cost the backend and libpq here more than the rest of a
 * consumer's read): unpack_records indexes them, in place.
 *
 * Limits: partition_max_bytes per partition and max_bytes per response,
 * except that each partition returns its first record even when larger
 * than partition_max_bytes, and a response its first record even when
 * larger than max_bytes (so a consumer always progresses, as Kafka's
 * KIP-74).  How many rows to ask PostgreSQL for follows from the average
 * size of the records the connection fetched before, and PostgreSQL stops
 * each partition's rows at its byte limit, and every partition's once the
 * rows reach the response's, so records far larger than that average, or
 * a thousand partitions, do not bring the gateway thousands of times what
 * it can send.
 *
 * Idle consumers: a consumer with nothing to read sends a Fetch every
 * fetch.wait.max.ms (librdkafka: 500 ms), each a query of about 330 us in
 * the server.  So a Fetch that waited its whole max_wait_ms and found
 * nothing in any partition (no records, no error) leaves
 * eventlog._kafka_await running on the session for the same partitions and
 * offsets (pg.c: kpg_await_start), and the next Fetch with the same ones,
 * in any order (librdkafka rotates a consumer's partitions from one Fetch
 * to the next), waits on that instead of querying (kpg_await_wait): if it
 * ends within
 * max_wait_ms (a record readable, a topic dropped, an error), the Fetch
 * reads as usual with the rest of its wait; one that ends empty after its
 * --idle-await-ms is sent again and the Fetch goes on waiting; else the
 * answer is empty, with the marks (log start, stable offset) of the answer
 * that started the await, and the await goes on.  A commit while the await
 * runs ends it, one before it started is seen by its first look, so no
 * record comes later than without it.  Any other use of the session ends it
 * first (kpg_connect), and so does the connection's end (kpg_close).
 *
 * Consumers reading a backlog: a Fetch whose partitions have more records
 * readable than its response takes sends, before its response is built,
 * the query of the Fetch the client will send next (the same partitions
 * and limits, from the offset after each one's last record, no wait), and
 * that Fetch takes its rows instead of querying (pg.c: kpg_fetch_ahead):
 * the backend reads while the gateway builds and sends the response and
 * the client decodes it, instead of all three taking turns.  A read-ahead
 * is used only if it has records and no error; one that the next Fetch
 * does not match is dropped, and the next K_AHEAD_BACKOFF chances pass.
 *
 * Fetch sessions (KIP-227): none are created.  A request with session id
 * 0 is answered in full with session id 0, which tells the client that no
 * session exists, so it keeps sending full requests; forgotten topics only
 * concern sessions and are decoded and ignored.  A request naming a
 * session gets FETCH_SESSION_ID_NOT_FOUND, and an incremental epoch without
 * a session INVALID_FETCH_SESSION_EPOCH.  rack_id is decoded and ignored
 * (preferred_read_replica is always -1): every gateway serves every
 * partition.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "log.h"
#include "records.h"
#include "server.h"
#include "sqlarray.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Partitions one request may name; more closes the connection. */
#define K_MAX_FETCH_PARTITIONS	100000
/* A response's bytes of records at most, whatever max_bytes says. */
#define K_FETCH_MAX_BYTES		(64 * 1024 * 1024)
/* Rows asked of PostgreSQL: per partition, and per request. */
#define K_FETCH_MAX_ROWS_PART	100000
#define K_FETCH_MAX_ROWS		1000000
/* A record's bytes in a batch beyond its key, value and headers, at most. */
#define K_RECORD_FRAMING		32

typedef struct FetchPart
{
	int32_t		partition;
	int64_t		offset;
	int32_t		max_bytes;
	int16_t		error;
	int64_t		log_start;		/* -1 if unknown */
	int64_t		stable;			/* -1 if unknown */
	int			first_row;		/* its records: recs[first_row..] */
	int			nrows;
	int			last_row;		/* the result's row they were last in */
	int			nfit;			/* of which the response takes (plan_rows) */
	KSlice		topic;
	int64_t		query_rows;		/* the query's max_records and max_bytes */
	int64_t		query_bytes;
} FetchPart;

typedef struct FetchTopic
{
	KSlice		name;
	int32_t		first;			/* its partitions: parts[first..] */
	int32_t		nparts;
} FetchTopic;

/*
 * Bytes per record in this connection's earlier fetches (each connection
 * has its own thread), to size the next fetch's row counts.
 */
static _Thread_local double avg_record_bytes = 0;

/*
 * Read-ahead chances this connection lets pass (start_ahead): after a
 * read-ahead the next Fetch did not take (a client that left a partition
 * out of it, or seeked), the next K_AHEAD_BACKOFF, so that a client whose
 * Fetches cannot be guessed costs the server at most a read in that many
 * more.
 */
#define K_AHEAD_BACKOFF		16
static _Thread_local int ahead_skip = 0;

static const char *const fetch_sql =
"SELECT k_item, k_error, k_log_start, k_stable, k_offset, k_time, k_key, k_value, k_headers"
"  FROM eventlog._kafka_fetch($1::pg_catalog.text[], $2::pg_catalog.int4[],"
"                             $3::pg_catalog.int8[], $4::pg_catalog.int4[], $5::pg_catalog.int4,"
"                             $6::pg_catalog.int8[], $7::pg_catalog.int8, true)";

/*
 * A record of the result, unpacked (kafka_fetch.c: fetch_pack_put): its
 * fields point into the result.
 */
typedef struct FetchRec
{
	int64_t		offset;
	const char *time;			/* a timestamptz's 8 bytes, NULL if null */
	KSlice		key;			/* len -1: null */
	KSlice		value;			/* len -1: null */
	const char *headers;		/* an eventlog.header[] in binary format */
	int32_t		hlen;			/* -1: null */
} FetchRec;

#define K_PACK_TIME		0x01
#define K_PACK_KEY		0x02
#define K_PACK_VALUE	0x04
#define K_PACK_HEADERS	0x08

/* A length and its bytes of a packed record; false if it does not fit. */
static bool
unpack_field(KReader *r, const uint8_t **ptr, int32_t *len)
{
	*len = kr_int32(r);
	if (r->error || *len < 0)
		return false;
	*ptr = *len > 0 ? kr_take(r, (size_t) *len) : (const uint8_t *) "";
	return *ptr != NULL;
}

/*
 * The records of a packed row appended to *recs; false if they do not
 * parse, or memory ran out.
 */
static bool
unpack_records(const char *data, int len, FetchRec **recs, int *nrecs, int *cap)
{
	KReader		r;

	kr_init(&r, data, (size_t) len);
	while (kr_remaining(&r) > 0)
	{
		FetchRec   *rec;
		uint8_t		flags;

		if (*nrecs >= *cap)
		{
			int			ncap = *cap ? *cap * 2 : 1024;
			FetchRec   *n = realloc(*recs, sizeof(FetchRec) * (size_t) ncap);

			if (n == NULL)
				return false;
			*recs = n;
			*cap = ncap;
		}
		rec = &(*recs)[*nrecs];
		rec->offset = kr_int64(&r);
		flags = (uint8_t) kr_int8(&r);
		rec->time = NULL;
		rec->key.ptr = rec->value.ptr = NULL;
		rec->key.len = rec->value.len = -1;
		rec->headers = NULL;
		rec->hlen = -1;
		if (r.error)
			return false;
		if ((flags & K_PACK_TIME) && (rec->time = (const char *) kr_take(&r, 8)) == NULL)
			return false;
		if ((flags & K_PACK_KEY) && !unpack_field(&r, &rec->key.ptr, &rec->key.len))
			return false;
		if ((flags & K_PACK_VALUE) && !unpack_field(&r, &rec->value.ptr, &rec->value.len))
			return false;
		if (flags & K_PACK_HEADERS)
		{
			const uint8_t *h;

			if (!unpack_field(&r, &h, &rec->hlen))
				return false;
			rec->headers = (const char *) h;
		}
		(*nrecs)++;
	}
	return !r.error;
}

/*
 * The headers of a record: an eventlog.header[] in binary format (ndim,
 * flags, element type, dimensions, then each element: a composite of two
 * columns, each an oid, a length and the bytes).  Slices point into the
 * result.  False if it does not parse.
 */
static bool
parse_headers(const char *data, int len, KRecordHeader **buf, int32_t *cap, int32_t *n)
{
	KReader		r;
	int32_t		ndim;
	int32_t		count;

	*n = 0;
	kr_init(&r, data, (size_t) len);
	ndim = kr_int32(&r);
	(void) kr_int32(&r);		/* has nulls */
	(void) kr_uint32(&r);		/* element type */
	if (ndim == 0)
		return !r.error;
	if (ndim != 1)
		return false;
	count = kr_int32(&r);
	(void) kr_int32(&r);		/* lower bound */
	if (r.error || count < 0 || (size_t) count > kr_remaining(&r) / 4)
		return false;
	if (count > *cap)
	{
		KRecordHeader *nb = realloc(*buf, sizeof(KRecordHeader) * (size_t) count);

		if (nb == NULL)
			return false;
		*buf = nb;
		*cap = count;
	}
	for (int32_t i = 0; i < count; i++)
	{
		int32_t		elen = kr_int32(&r);
		const uint8_t *ep;
		KReader		e;
		int32_t		klen;
		int32_t		vlen;
		KRecordHeader *h = &(*buf)[i];

		if (r.error || elen < 0)
			return false;
		ep = kr_take(&r, (size_t) elen);
		if (ep == NULL)
			return false;
		kr_init(&e, ep, (size_t) elen);
		if (kr_int32(&e) != 2)
			return false;
		(void) kr_uint32(&e);
		klen = kr_int32(&e);
		h->key.len = klen < 0 ? 0 : klen;	/* a header's name is never null */
		h->key.ptr = klen > 0 ? kr_take(&e, (size_t) klen) : (const uint8_t *) "";
		(void) kr_uint32(&e);
		vlen = kr_int32(&e);
		h->value.len = vlen < 0 ? -1 : vlen;
		h->value.ptr = vlen > 0 ? kr_take(&e, (size_t) vlen) : (const uint8_t *) "";
		if (e.error || kr_remaining(&e) != 0)
			return false;
	}
	*n = count;
	return !r.error;
}

/* A record's size in a batch, at most (Kafka's framing is smaller). */
static int64_t
record_size(const FetchRec *rec)
{
	int64_t		size = K_RECORD_FRAMING + (rec->key.len > 0 ? rec->key.len : 0) +
		(rec->value.len > 0 ? rec->value.len : 0);

	if (rec->hlen > 0)
		size += rec->hlen;
	return size;
}

/*
 * The records of a partition into out (the records field's content), within
 * its limit and the response's (*used of budget so far); false if a row
 * does not parse.
 */
static bool
build_records(KConn *conn, const FetchRec *recs, FetchPart *p, KWriter *out,
			  int64_t budget, int64_t *used, int64_t *nrecords,
			  KRecordHeader **hbuf, int32_t *hcap)
{
	KBatchBuilder b;
	int64_t		pbytes = K_BATCH_HEADER_LEN;
	int			row = p->first_row;

	k_batch_begin(&b, out, recs[row].offset,
				  recs[row].time == NULL ? -1 : kpg_timestamp_ms(recs[row].time),
				  K_CODEC_NONE, 0);
	for (; row < p->first_row + p->nfit; row++)
	{
		const FetchRec *rec = &recs[row];
		int64_t		size = record_size(rec);
		int32_t		nh = 0;

		/*
		 * A partition's first record goes in whatever its size, unless the
		 * response is full; the response's first record always does.
		 */
		if (b.count > 0 && pbytes + size > p->max_bytes)
			break;
		if (*used + pbytes + size > budget && !(*used == 0 && b.count == 0))
			break;
		if (rec->headers != NULL &&
			!parse_headers(rec->headers, rec->hlen, hbuf, hcap, &nh))
		{
			klog(KLOG_WARNING, "conn %llu (%s): Fetch: a record's headers do not parse",
				 (unsigned long long) conn->id, conn->peer);
			k_batch_abort(&b);
			return false;
		}
		if (!k_batch_add(&b, rec->offset,
						 rec->time == NULL ? -1 : kpg_timestamp_ms(rec->time),
						 rec->key, rec->value, *hbuf, nh))
			break;
		pbytes += size;
		(*nrecords)++;
	}
	if (!k_batch_end(&b))
	{
		klog(KLOG_WARNING, "conn %llu (%s): Fetch: cannot build a batch: %s",
			 (unsigned long long) conn->id, conn->peer, b.errmsg);
		return false;
	}
	*used += (int64_t) out->len;
	return true;
}

/*
 * How many of a partition's rows the response takes: build_records' limits
 * on the same estimates, the response's bytes so far (*used) counted as
 * estimated too, so known before any batch is built (the read-ahead needs
 * the next offsets early).  The estimates are never below the batches'
 * real sizes, so build_records takes them all (barring an error).
 */
static int
plan_rows(const FetchRec *recs, const FetchPart *p, int64_t budget, int64_t *used)
{
	int64_t		pbytes = K_BATCH_HEADER_LEN;
	int			n = 0;

	for (; n < p->nrows; n++)
	{
		int64_t		size = record_size(&recs[p->first_row + n]);

		if (n > 0 && pbytes + size > p->max_bytes)
			break;
		if (*used + pbytes + size > budget && !(*used == 0 && n == 0))
			break;
		pbytes += size;
	}
	if (n > 0)
		*used += pbytes;
	return n;
}

/*
 * What tells one Fetch's reads from another's: the query's names,
 * partitions, offsets, byte limits and the response's (its row estimates
 * and its wait do not change what a read-ahead returns), joined by '|'.
 */
static char *
fetch_key(const char *names, const char *partitions, const char *offsets,
		  const char *bytes, const char *budget)
{
	const char *const f[5] = {names, partitions, offsets, bytes, budget};
	size_t		len = 0;
	char	   *key;
	char	   *p;

	for (int i = 0; i < 5; i++)
		len += strlen(f[i]) + 1;
	key = malloc(len);
	if (key == NULL)
		return NULL;
	p = key;
	for (int i = 0; i < 5; i++)
	{
		size_t		l = strlen(f[i]);

		memcpy(p, f[i], l);
		p += l;
		*p++ = i < 4 ? '|' : '\0';
	}
	return key;
}

/*
 * A read-ahead's result is used only if it has records and no error: one
 * without records would answer at once a Fetch that is to wait for them,
 * and the Fetch's own query reports errors as they are now.
 */
static bool
ahead_usable(PGresult *res)
{
	bool		records = false;

	if (PQnfields(res) != 9)
		return false;
	for (int row = 0; row < PQntuples(res); row++)
	{
		if (!PQgetisnull(res, row, 4))
			records = true;
		else if (PQgetisnull(res, row, 1) || PQgetlength(res, row, 1) != 2 ||
				 kpg_get_int16(PQgetvalue(res, row, 1)) != KERR_NONE)
			return false;
	}
	return records;
}

/*
 * The order of a read-ahead's items: by topic and partition, as clients
 * change the order of the partitions from one Fetch to the next
 * (librdkafka starts each one at the next partition, so that none
 * starves).  order[] gets the parts' indexes; false if one partition is
 * named twice (no read-ahead then) or memory ran out.
 */
typedef struct AheadItem
{
	KSlice		topic;
	int32_t		partition;
	int			part;
} AheadItem;

static int
ahead_item_cmp(const void *a, const void *b)
{
	const AheadItem *x = a;
	const AheadItem *y = b;
	int			c = memcmp(x->topic.ptr, y->topic.ptr,
						   (size_t) (x->topic.len < y->topic.len ? x->topic.len : y->topic.len));

	if (c != 0)
		return c;
	if (x->topic.len != y->topic.len)
		return x->topic.len < y->topic.len ? -1 : 1;
	return x->partition < y->partition ? -1 : x->partition > y->partition;
}

static bool
ahead_order(const FetchPart *parts, const int *items, int nitems, int *order)
{
	AheadItem  *a = malloc(sizeof(AheadItem) * (size_t) (nitems > 0 ? nitems : 1));

	if (a == NULL)
		return false;
	for (int i = 0; i < nitems; i++)
	{
		a[i].topic = parts[items[i]].topic;
		a[i].partition = parts[items[i]].partition;
		a[i].part = items[i];
	}
	qsort(a, (size_t) nitems, sizeof(AheadItem), ahead_item_cmp);
	for (int i = 0; i < nitems; i++)
	{
		if (i > 0 && ahead_item_cmp(&a[i - 1], &a[i]) == 0)
		{
			free(a);
			return false;
		}
		order[i] = a[i].part;
	}
	free(a);
	return true;
}

/* The offset after the last record a partition's batch takes. */
static int64_t
next_offset(const FetchRec *recs, const FetchPart *p)
{
	return p->nfit > 0 ? recs[p->first_row + p->nfit - 1].offset + 1 : p->offset;
}

/*
 * The query's arrays for the parts in order[] (names, partitions, offsets,
 * max_records, max_bytes; the offsets after the records taken from res if
 * res is given), and the key of a read-ahead of them; false if memory ran
 * out (all freed).
 */
static bool
ahead_arrays(const FetchPart *parts, const int *order, int n, const FetchRec *recs,
			 const char *budget_text, char *out[5], char **key)
{
	KSqlArray	a[5];
	bool		ok = true;

	for (int i = 0; i < 5; i++)
		ksa_init(&a[i]);
	for (int i = 0; i < n; i++)
	{
		const FetchPart *p = &parts[order[i]];

		ksa_add_name(&a[0], p->topic);
		ksa_add_int(&a[1], p->partition);
		ksa_add_int(&a[2], recs != NULL ? next_offset(recs, p) : p->offset);
		ksa_add_int(&a[3], p->query_rows);
		ksa_add_int(&a[4], p->query_bytes);
	}
	for (int i = 0; i < 5; i++)
		ok &= (out[i] = ksa_finish(&a[i])) != NULL;
	*key = ok ? fetch_key(out[0], out[1], out[2], out[4], budget_text) : NULL;
	if (*key == NULL)
	{
		for (int i = 0; i < 5; i++)
		{
			free(out[i]);
			out[i] = NULL;
		}
		return false;
	}
	return true;
}

/*
 * After a Fetch's rows were read: if its partitions have more records
 * readable than the response takes (a consumer reading a backlog), the
 * query of the Fetch the client sends next, from the offset after the
 * last record of each, without a wait, sent now (pg.c: kpg_fetch_ahead).
 */
static void
start_ahead(KConn *conn, const FetchRec *recs, const FetchPart *parts, const int *items,
			int nitems, const char *budget_text)
{
	bool		more = false;
	int		   *order;
	char	   *a[5];
	char	   *key;

	for (int i = 0; i < nitems; i++)
	{
		const FetchPart *p = &parts[items[i]];

		if (p->error != KERR_NONE)
			return;
		if (p->nfit > 0 && p->stable >= 0 && next_offset(recs, p) < p->stable)
			more = true;
	}
	if (!more)
		return;
	if (ahead_skip > 0)
	{
		ahead_skip--;
		return;
	}
	order = malloc(sizeof(int) * (size_t) nitems);
	if (order == NULL)
		return;
	if (ahead_order(parts, items, nitems, order) &&
		ahead_arrays(parts, order, nitems, recs, budget_text, a, &key))
	{
		const char *const p7[7] = {a[0], a[1], a[2], a[3], "0", a[4], budget_text};

		kpg_fetch_ahead(conn, key, 7, p7);
		free(key);
		for (int i = 0; i < 5; i++)
			free(a[i]);
	}
	free(order);
}

/* The Kafka error for a query that failed as a whole. */
static int16_t
query_error(const char *sqlstate)
{
	if (strcmp(sqlstate, "42501") == 0)
		return KERR_TOPIC_AUTHORIZATION_FAILED;
	if (strcmp(sqlstate, "3F000") == 0 || strcmp(sqlstate, "42P01") == 0 ||
		strcmp(sqlstate, "42883") == 0)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	/* Retriable: no session, a cancel, a server going down. */
	return KERR_LEADER_NOT_AVAILABLE;
}

/*
 * The key of an idle Fetch's await: the names, partitions and offsets of
 * its parts in order[] (by topic and partition: ahead_order), joined by
 * '|', and those arrays in params[0..2] for the await's query; NULL if
 * memory ran out (all freed).  In that order, not the request's, because
 * librdkafka starts each Fetch of a consumer at the next partition: a key
 * in the request's order never matched the next Fetch of a consumer of
 * several partitions, which then ended the await and queried every time.
 */
static char *
await_key_of(const FetchPart *parts, const int *order, int n, char *params[3])
{
	KSqlArray	a[3];
	char	   *key = NULL;
	size_t		len[3];

	for (int i = 0; i < 3; i++)
		ksa_init(&a[i]);
	for (int i = 0; i < n; i++)
	{
		const FetchPart *p = &parts[order[i]];

		ksa_add_name(&a[0], p->topic);
		ksa_add_int(&a[1], p->partition);
		ksa_add_int(&a[2], p->offset);
	}
	for (int i = 0; i < 3; i++)
		params[i] = ksa_finish(&a[i]);
	if (params[0] != NULL && params[1] != NULL && params[2] != NULL)
	{
		for (int i = 0; i < 3; i++)
			len[i] = strlen(params[i]);
		key = malloc(len[0] + len[1] + len[2] + 3);
	}
	if (key == NULL)
	{
		for (int i = 0; i < 3; i++)
		{
			free(params[i]);
			params[i] = NULL;
		}
		return NULL;
	}
	memcpy(key, params[0], len[0]);
	key[len[0]] = '|';
	memcpy(key + len[0] + 1, params[1], len[1]);
	key[len[0] + 1 + len[1]] = '|';
	memcpy(key + len[0] + len[1] + 2, params[2], len[2] + 1);
	return key;
}

/*
 * After a Fetch that found nothing readable anywhere after its whole wait,
 * the await for the next ones (pg.c), with the log start and stable offsets
 * they answer with while it is pending, in the key's order (order[]).
 */
static void
start_await(KConn *conn, const char *key, const FetchPart *parts, const int *order,
			int nitems, char *const *params)
{
	char	   *marks;

	for (int i = 0; i < nitems; i++)
		if (parts[order[i]].error != KERR_NONE || parts[order[i]].nrows > 0)
			return;
	marks = malloc((size_t) nitems * 16);
	if (marks == NULL)
		return;
	for (int i = 0; i < nitems; i++)
	{
		memcpy(marks + 16 * i, &parts[order[i]].log_start, 8);
		memcpy(marks + 16 * i + 8, &parts[order[i]].stable, 8);
	}
	kpg_await_start(conn, key, marks, (size_t) nitems * 16,
					(const char *const *) params);
	free(marks);
}

KHandlerResult
khandle_fetch(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	int32_t		max_wait_ms;
	int32_t		min_bytes;
	int32_t		max_bytes;
	int8_t		isolation;
	int32_t		session_id;
	int32_t		session_epoch;
	int32_t		ntopics;
	FetchTopic *topics = NULL;
	FetchPart  *parts = NULL;
	int32_t		nparts = 0;
	int32_t		cap = 0;
	int16_t		top_error = KERR_NONE;
	int		   *items = NULL;	/* query item (0-based) -> part */
	int			nitems = 0;
	PGresult   *res = NULL;
	KRecordHeader *hbuf = NULL;
	int32_t		hcap = 0;
	KWriter		scratch;
	KHandlerResult result = KH_OK;
	char	   *params[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
	char		budget_text[24];
	char	   *await_key = NULL;
	int		   *await_order = NULL; /* the await key's order of the parts */
	char	   *await_params[3] = {NULL, NULL, NULL};
	int		   *row_parts = NULL;	/* a read-ahead's item (0-based) -> part */
	FetchRec   *recs = NULL;	/* the result's records, unpacked */
	int			nrecs = 0;
	int			rcap = 0;

	kw_init(&scratch, (size_t) K_FETCH_MAX_BYTES * 2);

	(void) kr_int32(r);			/* replica_id: served as a consumer's */
	max_wait_ms = kr_int32(r);
	min_bytes = kr_int32(r);
	max_bytes = kr_int32(r);
	isolation = kr_int8(r);
	session_id = v >= 7 ? kr_int32(r) : 0;
	session_epoch = v >= 7 ? kr_int32(r) : -1;
	/* Each topic: at least a name's length and a partition count. */
	ntopics = kr_array_len_v(r, flex, flex ? 3 : 6);
	if (ntopics > 0)
	{
		topics = calloc((size_t) ntopics, sizeof(FetchTopic));
		if (topics == NULL)
			goto oom;
	}
	for (int32_t t = 0; t < ntopics && !r->error; t++)
	{
		int32_t		np;

		topics[t].name = kr_string_v(r, flex);
		np = kr_array_len_v(r, flex, 16);
		topics[t].first = nparts;
		topics[t].nparts = np < 0 ? 0 : np;
		if (np > 0 && (int64_t) nparts + np > K_MAX_FETCH_PARTITIONS)
		{
			klog(KLOG_WARNING, "conn %llu (%s): Fetch request names more than %d partitions: closing",
				 (unsigned long long) conn->id, conn->peer, K_MAX_FETCH_PARTITIONS);
			result = KH_CLOSE;
			goto done;
		}
		if (np > 0 && nparts + np > cap)
		{
			int32_t		ncap = cap ? cap : 16;
			FetchPart  *np_parts;

			while (ncap < nparts + np)
				ncap *= 2;
			np_parts = realloc(parts, sizeof(FetchPart) * (size_t) ncap);
			if (np_parts == NULL)
				goto oom;
			parts = np_parts;
			cap = ncap;
		}
		for (int32_t i = 0; i < np && !r->error; i++)
		{
			FetchPart  *p = &parts[nparts++];

			memset(p, 0, sizeof(*p));
			p->partition = kr_int32(r);
			p->topic = topics[t].name;
			if (v >= 9)
				(void) kr_int32(r); /* current_leader_epoch: leadership never moves */
			p->offset = kr_int64(r);
			if (v >= 12)
				(void) kr_int32(r); /* last_fetched_epoch */
			if (v >= 5)
				(void) kr_int64(r); /* log_start_offset: a follower's */
			p->max_bytes = kr_int32(r);
			p->log_start = -1;
			p->stable = -1;
			kr_tags_v(r, flex);
		}
		kr_tags_v(r, flex);
	}
	if (v >= 7)
	{
		int32_t		nforgotten = kr_array_len_v(r, flex, flex ? 3 : 6);

		for (int32_t t = 0; t < nforgotten && !r->error; t++)
		{
			int32_t		np;

			(void) kr_string_v(r, flex);
			np = kr_array_len_v(r, flex, 4);
			for (int32_t i = 0; i < np && !r->error; i++)
				(void) kr_int32(r);
			kr_tags_v(r, flex);
		}
	}
	if (v >= 11)
		(void) kr_string_v(r, flex);	/* rack_id */
	kr_tags_v(r, flex);
	if (!khandler_body_done(req) || (isolation != 0 && isolation != 1))
	{
		result = KH_MALFORMED;
		goto done;
	}

	if (session_id != 0)
		top_error = KERR_FETCH_SESSION_ID_NOT_FOUND;
	else if (session_epoch != 0 && session_epoch != -1)
		top_error = KERR_INVALID_FETCH_SESSION_EPOCH;

	/* What to ask PostgreSQL: every partition with a legal name and offset. */
	if (top_error == KERR_NONE && nparts > 0)
	{
		KSqlArray	a_names, a_parts, a_offsets, a_max, a_bytes;
		double		avg = avg_record_bytes > 16 ? avg_record_bytes : 64;
		int64_t		budget = max_bytes < 1 ? 1 : (max_bytes > K_FETCH_MAX_BYTES ? K_FETCH_MAX_BYTES : max_bytes);
		int64_t		rows_left = (int64_t) (budget / avg * 1.1) + nparts;
		int32_t		wait_ms = (min_bytes > 0 && max_wait_ms > 0) ? max_wait_ms : 0;
		char		wait_text[16];
		char		sqlstate[6];

		if (rows_left > K_FETCH_MAX_ROWS)
			rows_left = K_FETCH_MAX_ROWS;
		items = malloc(sizeof(int) * (size_t) nparts);
		if (items == NULL)
			goto oom;
		ksa_init(&a_names);
		ksa_init(&a_parts);
		ksa_init(&a_offsets);
		ksa_init(&a_max);
		ksa_init(&a_bytes);
		for (int32_t t = 0; t < ntopics; t++)
		{
			bool		valid = !KSLICE_IS_NULL(topics[t].name) && kvalid_topic_name(topics[t].name);

			for (int32_t i = 0; i < topics[t].nparts; i++)
			{
				FetchPart  *p = &parts[topics[t].first + i];
				int64_t		n;

				if (!valid || p->partition < 0)
				{
					p->error = KERR_UNKNOWN_TOPIC_OR_PARTITION;
					continue;
				}
				if (p->offset < 0)
				{
					p->error = KERR_OFFSET_OUT_OF_RANGE;
					continue;
				}
				n = (int64_t) ((p->max_bytes > 0 ? p->max_bytes : 0) / avg * 1.1) + 1;
				if (n > K_FETCH_MAX_ROWS_PART)
					n = K_FETCH_MAX_ROWS_PART;
				if (n > rows_left)
					n = rows_left > 1 ? rows_left : 1;
				rows_left -= n;
				p->query_rows = n;
				/* The bytes to read: what the partition may return (its first record whatever its size). */
				p->query_bytes = p->max_bytes < 1 ? 1 : (p->max_bytes < budget ? p->max_bytes : budget);
				ksa_add_name(&a_names, topics[t].name);
				ksa_add_int(&a_parts, p->partition);
				ksa_add_int(&a_offsets, p->offset);
				ksa_add_int(&a_max, n);
				ksa_add_int(&a_bytes, p->query_bytes);
				items[nitems++] = topics[t].first + i;
			}
		}
		params[0] = ksa_finish(&a_names);
		params[1] = ksa_finish(&a_parts);
		params[2] = ksa_finish(&a_offsets);
		params[3] = ksa_finish(&a_max);
		params[5] = ksa_finish(&a_bytes);
		snprintf(wait_text, sizeof(wait_text), "%d", (int) wait_ms);
		if (params[0] == NULL || params[1] == NULL || params[2] == NULL || params[3] == NULL ||
			params[5] == NULL)
			goto oom;
		/* An idle consumer's Fetch: every partition queried, and a wait. */
		if (nitems > 0 && nitems == nparts && wait_ms > 0)
		{
			await_order = malloc(sizeof(int) * (size_t) nitems);
			if (await_order == NULL)
				goto oom;
			/* A partition named twice: no await (ahead_order says). */
			if (ahead_order(parts, items, nitems, await_order))
			{
				await_key = await_key_of(parts, await_order, nitems, await_params);
				if (await_key == NULL)
					goto oom;
			}
		}
		if (nitems > 0 && await_key != NULL)
		{
			int32_t		left = wait_ms;
			const void *extra;

			if (kpg_await_wait(conn, await_key, &left, &extra))
			{
				/* Nothing readable yet: empty, with the marks of the last answer. */
				for (int i = 0; i < nitems && extra != NULL; i++)
				{
					memcpy(&parts[await_order[i]].log_start, (const char *) extra + 16 * i, 8);
					memcpy(&parts[await_order[i]].stable, (const char *) extra + 16 * i + 8, 8);
				}
				nitems = 0;
			}
			snprintf(wait_text, sizeof(wait_text), "%d", (int) left);
		}
		if (nitems > 0)
		{
			/*
			 * The response's limit too: PostgreSQL stops reading partitions
			 * once their records reach it (their bytes count less than here,
			 * so it reads at least what the response can hold).
			 */
			const char *const p7[7] = {params[0], params[1], params[2], params[3], wait_text,
			params[5], budget_text};

			snprintf(budget_text, sizeof(budget_text), "%lld", (long long) budget);
			/* The read-ahead of this Fetch, if the one before started it. */
			if (conn->ahead_pending)
			{
				char	   *a[5];
				char	   *key = NULL;

				row_parts = malloc(sizeof(int) * (size_t) nitems);
				if (row_parts != NULL && ahead_order(parts, items, nitems, row_parts) &&
					ahead_arrays(parts, row_parts, nitems, NULL, budget_text, a, &key))
				{
					res = kpg_fetch_ahead_take(conn, key);
					free(key);
					for (int i = 0; i < 5; i++)
						free(a[i]);
				}
				if (res != NULL && !ahead_usable(res))
				{
					PQclear(res);
					res = NULL;
				}
				if (res == NULL)
					ahead_skip = K_AHEAD_BACKOFF;
			}
			/* Its items are in the read-ahead's order, the query's in items'. */
			if (res == NULL)
			{
				free(row_parts);
				row_parts = NULL;
			}
			if (res == NULL)
				res = kpg_exec_fetch(conn, fetch_sql, 7, p7, sqlstate);
			if (res == NULL)
			{
				int16_t		e = query_error(sqlstate);

				if (kshutting_down())
				{
					result = KH_CLOSE;
					goto done;
				}
				for (int i = 0; i < nitems; i++)
					parts[items[i]].error = e;
			}
			else if (PQnfields(res) != 9)
			{
				klog(KLOG_WARNING, "conn %llu (%s): Fetch: unexpected result shape: closing",
					 (unsigned long long) conn->id, conn->peer);
				result = KH_CLOSE;
				goto done;
			}
			else
			{
				for (int row = 0; row < PQntuples(res); row++)
				{
					int32_t		item;
					FetchPart  *p;

					if (PQgetisnull(res, row, 0) || PQgetlength(res, row, 0) != 4)
						continue;
					item = kpg_get_int32(PQgetvalue(res, row, 0));
					if (item < 1 || item > nitems)
						continue;
					p = &parts[row_parts != NULL ? row_parts[item - 1] : items[item - 1]];
					if (PQgetisnull(res, row, 4))
					{
						p->error = kpg_get_int16(PQgetvalue(res, row, 1));
						if (!PQgetisnull(res, row, 2))
							p->log_start = kpg_get_int64(PQgetvalue(res, row, 2));
						if (!PQgetisnull(res, row, 3))
							p->stable = kpg_get_int64(PQgetvalue(res, row, 3));
					}
					else if (p->nrows == 0 || row == p->last_row + 1)
					{
						/* A partition's rows follow each other. */
						int			first = nrecs;

						if (PQgetisnull(res, row, 7) ||
							!unpack_records(PQgetvalue(res, row, 7), PQgetlength(res, row, 7),
											&recs, &nrecs, &rcap))
						{
							klog(KLOG_WARNING, "conn %llu (%s): Fetch: packed records do not parse: closing",
								 (unsigned long long) conn->id, conn->peer);
							result = KH_CLOSE;
							goto done;
						}
						if (p->nrows == 0)
							p->first_row = first;
						p->nrows += nrecs - first;
						p->last_row = row;
					}
				}
				/* The rows each partition's batch takes, in the response's order. */
				{
					int64_t		used = 0;

					for (int32_t i = 0; i < nparts; i++)
						if (parts[i].error == KERR_NONE && parts[i].nrows > 0)
							parts[i].nfit = plan_rows(recs, &parts[i], budget, &used);
				}
				if (await_key != NULL)
					start_await(conn, await_key, parts, await_order, nitems, await_params);
				start_ahead(conn, recs, parts, items, nitems, budget_text);
			}
		}
	}

	/* The response. */
	{
		int64_t		budget = max_bytes < 1 ? 1 : (max_bytes > K_FETCH_MAX_BYTES ? K_FETCH_MAX_BYTES : max_bytes);
		int64_t		used = 0;
		int64_t		nrecords = 0;

		kw_int32(w, 0);			/* throttle_time_ms */
		if (v >= 7)
		{
			kw_int16(w, top_error);
			kw_int32(w, 0);		/* session_id: no session */
		}
		kw_array_len_v(w, flex, top_error == KERR_NONE ? ntopics : 0);
		for (int32_t t = 0; t < ntopics && top_error == KERR_NONE && !w->error; t++)
		{
			kw_string_v(w, flex, (const char *) topics[t].name.ptr,
						KSLICE_IS_NULL(topics[t].name) ? -1 : topics[t].name.len);
			kw_array_len_v(w, flex, topics[t].nparts);
			for (int32_t i = 0; i < topics[t].nparts && !w->error; i++)
			{
				FetchPart  *p = &parts[topics[t].first + i];

				kw_reset(&scratch);
				if (p->error == KERR_NONE && p->nfit > 0 && res != NULL &&
					!build_records(conn, recs, p, &scratch, budget, &used, &nrecords, &hbuf, &hcap))
				{
					kw_reset(&scratch);
					p->error = KERR_UNKNOWN_SERVER_ERROR;
				}
				kw_int32(w, p->partition);
				kw_int16(w, p->error);
				kw_int64(w, p->stable); /* high_watermark: the last stable offset */
				kw_int64(w, p->stable);
				if (v >= 5)
					kw_int64(w, p->log_start);
				/* aborted_transactions: none (null for read_uncommitted, as Kafka) */
				kw_array_len_v(w, flex, isolation == 1 ? 0 : -1);
				if (v >= 11)
					kw_int32(w, -1);	/* preferred_read_replica */
				kw_bytes_v(w, flex, scratch.buf ? scratch.buf : (const uint8_t *) "",
						   (int32_t) scratch.len);
				kw_tags_v(w, flex);
			}
			kw_tags_v(w, flex);
		}
		kw_tags_v(w, flex);
		if (nrecords > 0)
		{
			double		sample = (double) used / (double) nrecords;

			avg_record_bytes = avg_record_bytes > 0 ?
				avg_record_bytes * 0.5 + sample * 0.5 : sample;
		}
	}
	goto done;

oom:
	klog(KLOG_WARNING, "conn %llu (%s): out of memory for a Fetch request: closing",
		 (unsigned long long) conn->id, conn->peer);
	result = KH_CLOSE;
done:
	for (int i = 0; i < 6; i++)
		free(params[i]);
	free(await_key);
	free(await_order);
	for (int i = 0; i < 3; i++)
		free(await_params[i]);
	free(row_parts);
	free(recs);
	PQclear(res);
	free(items);
	free(hbuf);
	free(parts);
	free(topics);
	kw_free(&scratch);
	return result;
}
