/*-------------------------------------------------------------------------
 *
 * api_produce.c
 *	  Produce (key 0), versions 0 to 9: each partition's RecordBatch v2
 *	  records appended to a pg_eventlog topic, in one statement (so one
 *	  transaction) per partition, as the connection's PostgreSQL role.
 *
 * Versions 0 to 2 are advertised because librdkafka decides from them
 * whether it may compress (it compresses only if Produce v0 is there);
 * what those versions' clients send, old message sets (magic 0 and 1), is
 * refused per partition with UNSUPPORTED_FOR_MESSAGE_FORMAT, while a
 * RecordBatch v2 in them is accepted, as Kafka's broker does.  From v3 a
 * partition's records must be exactly one batch (Kafka's rule).
 *
 * Refused per partition, nothing stored (the response says why; from v8
 * with an error_message, and record_errors naming the records at fault):
 *  - a topic that does not exist or a partition out of range:
 *    UNKNOWN_TOPIC_OR_PARTITION; an illegal topic name:
 *    INVALID_TOPIC_EXCEPTION; a role without the produce privilege:
 *    TOPIC_AUTHORIZATION_FAILED;
 *  - records that do not decode (records.c): CORRUPT_MESSAGE and friends;
 *  - control batches, and transactional batches outside a request with a
 *    transactional id: UNSUPPORTED_FOR_MESSAGE_FORMAT, what a Kafka broker
 *    answers when its log format cannot hold them (clients report it as a
 *    permanent, not retriable, error);
 *  - a request with a transactional id (txn.c): its batches must be
 *    transactional, of the transaction's producer id and epoch, and are
 *    stored in its PostgreSQL transaction, which must be open (an
 *    AddPartitionsToTxn came first); else INVALID_PRODUCER_ID_MAPPING (an
 *    id this gateway does not coordinate: another gateway's, or it
 *    restarted), INVALID_PRODUCER_EPOCH (fenced), INVALID_TXN_STATE (no
 *    transaction open, or it failed or timed out), or
 *    TRANSACTIONAL_ID_AUTHORIZATION_FAILED (another role's);
 *  - an idempotent batch (producer id >= 0) that is not alone in its
 *    partition, or has a negative epoch or base sequence: INVALID_RECORD;
 *    its sequence check (produce_store.c) answers OUT_OF_ORDER_SEQUENCE_NUMBER,
 *    DUPLICATE_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH or
 *    UNKNOWN_PRODUCER_ID, and a retry of a batch stored before gets its
 *    original base offset with no error;
 *  - records PostgreSQL cannot hold (produce_store.c): INVALID_RECORD.
 *
 * acks=0 gets no response (Kafka's rule); when something fails in such a
 * request the connection is closed instead, as Kafka's broker does, so the
 * client learns that something went wrong.  acks other than -1, 0 and 1:
 * INVALID_REQUIRED_ACKS.  timeout_ms is read and not used: it bounds a
 * Kafka leader's wait for its replicas, and PostgreSQL's counterpart (the
 * commit's wait for synchronous standbys) cannot be bounded per statement
 * (statement_timeout does not cover it, and a cancelled wait leaves the
 * commit done locally).
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "log.h"
#include "produce_batch.h"
#include "produce_store.h"
#include "records.h"
#include "server.h"
#include "txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Partitions one request may name, all topics together; more closes. */
#define K_MAX_PRODUCE_PARTITIONS	100000

typedef struct PrPartition
{
	int32_t		index;
	KSlice		records;		/* nullable */
	int16_t		error;
	int64_t		base_offset;
	int64_t		log_start_offset;
	char	   *errmsg;			/* malloc'd, or NULL */
	KRecordFault *faults;		/* malloc'd, or NULL */
	int32_t		nfaults;
} PrPartition;

typedef struct PrTopic
{
	KSlice		name;
	char	   *cname;			/* NUL-terminated copy, if legal */
	int16_t		error;			/* for every partition, if set */
	int32_t		npartitions;	/* the topic's, from the catalog */
	bool		binary;
	int32_t		nparts;
	PrPartition *parts;
} PrTopic;

static const char *const lookup_sql =
"SELECT t.name, t.partitions, t.format OPERATOR(pg_catalog.=) 'binary'"
"  FROM eventlog.topic_catalog t"
" WHERE t.name OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])"
" ORDER BY t.name COLLATE \"C\"";

static void
set_error(PrPartition *p, int16_t error, const char *msg)
{
	p->error = error;
	free(p->errmsg);
	p->errmsg = msg ? strdup(msg) : NULL;
}

/* The row of the lookup (sorted by name, in C order) of a name, or -1. */
static int
find_row(PGresult *res, const char *name)
{
	int			lo = 0;
	int			hi = PQntuples(res) - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = strcmp(name, PQgetvalue(res, mid, 0));

		if (c == 0)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

/*
 * The lookup of the last request of the connection's open batch, when it
 * named one topic that was found: the batch's next requests (the same
 * producer, most often the same topic) reuse it instead of a query of
 * their own, which halves the round trips of a batch of one-record
 * requests.  Only within one batch, a transaction that lasts only as long
 * as its statements: what the produce statement checks itself (the
 * privilege, the partition, the topic's existence) it still checks, and a
 * failure rolls the batch back and handles each request on its own, with
 * its own lookup.  One connection per thread: a thread's is its own.
 */
typedef struct PrLookupCache
{
	uint64_t	generation;		/* kbatch_generation when stored; 0: none */
	char		name[256];		/* a legal name has at most 249 bytes */
	int32_t		npartitions;
	bool		binary;
} PrLookupCache;

static _Thread_local PrLookupCache lookup_cache;

/* Fills the request's one legal topic from the cache; false if it cannot. */
static bool
lookup_cached(KConn *conn, PrTopic *topics, int32_t ntopics, int32_t nlegal)
{
	uint64_t	gen = kbatch_generation(conn);

	if (nlegal != 1 || gen == 0 || lookup_cache.generation != gen)
		return false;
	for (int32_t t = 0; t < ntopics; t++)
		if (topics[t].cname != NULL)
		{
			if (strcmp(topics[t].cname, lookup_cache.name) != 0)
				return false;
			topics[t].npartitions = lookup_cache.npartitions;
			topics[t].binary = lookup_cache.binary;
		}
	return true;
}

/*
 * Find every legal topic of the request in the catalog, in one query: its
 * partition count and format, or the topic's error.  The names go as a
 * text[] in binary format (no quoting).  False if out of memory.
 */
static bool
lookup_topics(KConn *conn, PrTopic *topics, int32_t ntopics)
{
	KWriter		w;
	int32_t		nlegal = 0;
	const char *params[1];
	int			lengths[1];
	int			formats[1] = {1};
	char		sqlstate[6];
	PGresult   *res;

	for (int32_t t = 0; t < ntopics; t++)
	{
		if (!kvalid_topic_name(topics[t].name))
		{
			topics[t].error = KERR_INVALID_TOPIC_EXCEPTION;
			continue;
		}
		topics[t].cname = malloc((size_t) topics[t].name.len + 1);
		if (topics[t].cname == NULL)
			return false;
		memcpy(topics[t].cname, topics[t].name.ptr, (size_t) topics[t].name.len);
		topics[t].cname[topics[t].name.len] = '\0';
		nlegal++;
	}
	if (nlegal == 0 || lookup_cached(conn, topics, ntopics, nlegal))
		return true;

	kw_init(&w, (size_t) 0x3fffffff);
	kw_int32(&w, 1);
	kw_int32(&w, 0);			/* no nulls */
	kw_uint32(&w, 25);			/* text */
	kw_int32(&w, nlegal);
	kw_int32(&w, 1);
	for (int32_t t = 0; t < ntopics; t++)
		if (topics[t].cname)
		{
			kw_int32(&w, topics[t].name.len);
			kw_raw(&w, topics[t].name.ptr, (size_t) topics[t].name.len);
		}
	if (w.error)
	{
		kw_free(&w);
		return false;
	}
	params[0] = (const char *) w.buf;
	lengths[0] = (int) w.len;
	res = kpg_exec_params(conn, lookup_sql, 1, params, lengths, formats, sqlstate, NULL, 0);
	kw_free(&w);

	for (int32_t t = 0; t < ntopics; t++)
	{
		int			row;

		if (topics[t].cname == NULL)
			continue;
		if (res == NULL)
		{
			/* A role that may not read the catalog may not produce either. */
			topics[t].error = strcmp(sqlstate, "42501") == 0 ?
				KERR_TOPIC_AUTHORIZATION_FAILED :
				(strcmp(sqlstate, "3F000") == 0 || strcmp(sqlstate, "42P01") == 0) ?
				KERR_UNKNOWN_TOPIC_OR_PARTITION : KERR_REQUEST_TIMED_OUT;
			continue;
		}
		row = find_row(res, topics[t].cname);
		if (row < 0)
		{
			topics[t].error = KERR_UNKNOWN_TOPIC_OR_PARTITION;
			continue;
		}
		topics[t].npartitions = (int32_t) strtol(PQgetvalue(res, row, 1), NULL, 10);
		topics[t].binary = PQgetvalue(res, row, 2)[0] == 't';
		if (nlegal == 1 && topics[t].name.len < (int32_t) sizeof(lookup_cache.name))
		{
			/* For the batch's next requests (kbatch_generation is 0 outside one). */
			lookup_cache.generation = kbatch_generation(conn);
			strcpy(lookup_cache.name, topics[t].cname);
			lookup_cache.npartitions = topics[t].npartitions;
			lookup_cache.binary = topics[t].binary;
		}
	}
	PQclear(res);
	return true;
}

/*
 * What the batches of a partition must be before anything is stored,
 * beyond what the decoder checks: one batch from v3, and no producer id,
 * transaction or control batch.  Sets the partition's error if not.
 */
static bool
check_batches(PrPartition *p, const KRecordSet *set, int16_t version, KTxn *txn)
{
	char		msg[200];

	if (set->nbatches == 0)
	{
		set_error(p, KERR_INVALID_RECORD, "the partition's records hold no record batch");
		return false;
	}
	if (version >= 3 && set->nbatches != 1)
	{
		snprintf(msg, sizeof(msg), "Produce v%d must carry exactly one record batch per partition, not %d",
				 version, set->nbatches);
		set_error(p, KERR_INVALID_RECORD, msg);
		return false;
	}
	for (int32_t b = 0; b < set->nbatches; b++)
	{
		const KRecordBatch *batch = &set->batches[b];

		if (batch->attributes & K_ATTR_CONTROL)
		{
			set_error(p, KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT,
					  "control batches are written by the transaction coordinator, not by producers");
			return false;
		}
		if (txn == NULL && (batch->attributes & K_ATTR_TRANSACTIONAL))
		{
			set_error(p, KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT,
					  "a transactional batch needs the request's transactional id");
			return false;
		}
		if (txn != NULL)
		{
			if (!(batch->attributes & K_ATTR_TRANSACTIONAL) || batch->producer_id < 0)
			{
				set_error(p, KERR_INVALID_RECORD,
						  "a request with a transactional id carries transactional batches only");
				return false;
			}
			if (batch->producer_id != txn->producer_id)
			{
				set_error(p, KERR_INVALID_PRODUCER_ID_MAPPING,
						  "the batch's producer id is not the transactional id's on this gateway");
				return false;
			}
			if (batch->producer_epoch != txn->epoch)
			{
				set_error(p, KERR_INVALID_PRODUCER_EPOCH,
						  "the batch's producer epoch is not the transactional id's current one");
				return false;
			}
		}
		if (batch->producer_id >= 0)
		{
			/*
			 * An idempotent batch (produce_store.c): one per partition, as
			 * the sequence numbers are the batch's (Kafka's rule too), and
			 * an identity the SQL functions can hold.
			 */
			if (set->nbatches != 1)
			{
				set_error(p, KERR_INVALID_RECORD,
						  "an idempotent producer's records must be exactly one record batch per partition");
				return false;
			}
			if (batch->producer_epoch < 0 || batch->base_sequence < 0)
			{
				snprintf(msg, sizeof(msg),
						 "producer %lld's batch has epoch %d and base sequence %d: an idempotent batch needs both, 0 or more",
						 (long long) batch->producer_id, batch->producer_epoch,
						 batch->base_sequence);
				set_error(p, KERR_INVALID_RECORD, msg);
				return false;
			}
		}
	}
	return true;
}

/* Decode, check and store one partition's records. */
static void
produce_partition(KConn *conn, const KRequest *req, PrTopic *t, PrPartition *p,
				  int16_t acks, KTxn *txn)
{
	KRecordSet	set;
	KProduceResult *out;

	if (p->index < 0 || p->index >= t->npartitions)
	{
		set_error(p, KERR_UNKNOWN_TOPIC_OR_PARTITION, NULL);
		return;
	}
	if (KSLICE_IS_NULL(p->records) || p->records.len == 0)
	{
		set_error(p, KERR_INVALID_RECORD, "the partition's records are empty");
		return;
	}
	memset(&set, 0, sizeof(set));
	if (k_records_decode(p->records.ptr, (size_t) p->records.len, NULL, &set) != KREC_OK)
	{
		set_error(p, k_rec_error_code(set.error), set.errmsg);
		k_records_free(&set);
		return;
	}
	if (!check_batches(p, &set, req->api_version, txn))
	{
		k_records_free(&set);
		return;
	}
	if (txn != NULL && ktxn_usable(txn) != KERR_NONE)
	{
		set_error(p, ktxn_usable(txn),
				  "the transaction is not open on this gateway (no AddPartitionsToTxn, or it failed or timed out)");
		k_records_free(&set);
		return;
	}
	out = malloc(sizeof(KProduceResult));
	if (out == NULL)
	{
		set_error(p, KERR_UNKNOWN_SERVER_ERROR, "out of memory");
		k_records_free(&set);
		return;
	}
	if (txn != NULL)
	{
		/* In the transaction's session; its commit is EndTxn's. */
		kproduce_store(&txn->session, t->cname, p->index, t->binary, -1, &set, out);
		if (out->error != KERR_NONE)
			ktxn_statement_failed(txn);
		else if (!ktxn_note_batch(txn, t->cname, p->index,
								  (int32_t) (((int64_t) set.batches[0].base_sequence +
											  set.batches[0].record_count - 1) % ((int64_t) INT32_MAX + 1))))
			klog(KLOG_WARNING, "conn %llu (%s): out of memory noting a transaction's batch",
				 (unsigned long long) conn->id, conn->peer);
	}
	else
		kproduce_store(conn, t->cname, p->index, t->binary, acks, &set, out);
	k_records_free(&set);
	set_error(p, out->error, out->errmsg[0] ? out->errmsg : NULL);
	p->base_offset = out->base_offset;
	p->log_start_offset = out->log_start_offset;
	if (out->nfaults > 0)
	{
		p->faults = malloc((size_t) out->nfaults * sizeof(KRecordFault));
		if (p->faults)
		{
			memcpy(p->faults, out->faults, (size_t) out->nfaults * sizeof(KRecordFault));
			p->nfaults = out->nfaults;
		}
	}
	free(out);
}

static void
write_response(KWriter *w, const KRequest *req, PrTopic *topics, int32_t ntopics)
{
	bool		flex = req->flexible;
	int16_t		v = req->api_version;

	kw_array_len_v(w, flex, ntopics);
	for (int32_t i = 0; i < ntopics && !w->error; i++)
	{
		PrTopic    *t = &topics[i];

		kw_string_v(w, flex, (const char *) t->name.ptr, t->name.len);
		kw_array_len_v(w, flex, t->nparts);
		for (int32_t j = 0; j < t->nparts && !w->error; j++)
		{
			PrPartition *p = &t->parts[j];

			kw_int32(w, p->index);
			kw_int16(w, p->error);
			kw_int64(w, p->error == KERR_NONE ? p->base_offset : -1);
			if (v >= 2)
				kw_int64(w, -1);	/* log_append_time: records keep CreateTime */
			if (v >= 5)
				kw_int64(w, p->error == KERR_NONE ? p->log_start_offset : -1);
			if (v >= 8)
			{
				kw_array_len_v(w, flex, p->nfaults);
				for (int32_t k = 0; k < p->nfaults; k++)
				{
					kw_int32(w, p->faults[k].index);
					kw_cstring_v(w, flex, p->faults[k].msg);
					kw_tags_v(w, flex);
				}
				kw_cstring_v(w, flex, p->errmsg);
			}
			kw_tags_v(w, flex);
		}
		kw_tags_v(w, flex);
	}
	if (v >= 1)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_tags_v(w, flex);
}

static void
free_topics(PrTopic *topics, int32_t ntopics)
{
	if (topics == NULL)
		return;
	for (int32_t i = 0; i < ntopics; i++)
	{
		for (int32_t j = 0; j < topics[i].nparts; j++)
		{
			free(topics[i].parts[j].errmsg);
			free(topics[i].parts[j].faults);
		}
		free(topics[i].parts);
		free(topics[i].cname);
	}
	free(topics);
}

KHandlerResult
khandle_produce(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KSlice		transactional_id = {NULL, -1};
	int16_t		acks;
	int32_t		ntopics;
	int64_t		total_parts = 0;
	PrTopic    *topics = NULL;
	KHandlerResult result = KH_OK;
	bool		failed = false;
	const char *request_error = NULL;
	int16_t		request_code = KERR_NONE;
	unsigned long long id = (unsigned long long) conn->id;
	KTxn	   *txn = NULL;

	if (v >= 3)
		transactional_id = kr_nullable_string_v(r, flex);
	acks = kr_int16(r);
	kbatch_note_acks(conn, acks);
	(void) kr_int32(r);			/* timeout_ms: see the file's comment */
	/* A topic: a name and a partition array (and tags). */
	ntopics = kr_array_len_v(r, flex, flex ? 3 : 6);
	if (ntopics < 0)
		return KH_MALFORMED;
	if (ntopics > 0)
	{
		topics = calloc((size_t) ntopics, sizeof(PrTopic));
		if (topics == NULL)
		{
			klog(KLOG_WARNING, "conn %llu (%s): out of memory for a Produce request: closing",
				 id, conn->peer);
			return KH_CLOSE;
		}
	}
	for (int32_t i = 0; i < ntopics && !r->error; i++)
	{
		PrTopic    *t = &topics[i];

		t->name = kr_string_v(r, flex);
		/* A partition: an index and records (and tags). */
		t->nparts = kr_array_len_v(r, flex, flex ? 6 : 8);
		if (t->nparts < 0)
		{
			t->nparts = 0;
			kr_fail(r);
			break;
		}
		total_parts += t->nparts;
		if (total_parts > K_MAX_PRODUCE_PARTITIONS)
		{
			klog(KLOG_WARNING, "conn %llu (%s): Produce request names more than %d partitions: closing",
				 id, conn->peer, K_MAX_PRODUCE_PARTITIONS);
			t->nparts = 0;
			free_topics(topics, ntopics);
			return KH_CLOSE;
		}
		if (t->nparts > 0)
		{
			t->parts = calloc((size_t) t->nparts, sizeof(PrPartition));
			if (t->parts == NULL)
			{
				klog(KLOG_WARNING, "conn %llu (%s): out of memory for a Produce request: closing",
					 id, conn->peer);
				t->nparts = 0;
				free_topics(topics, ntopics);
				return KH_CLOSE;
			}
		}
		for (int32_t j = 0; j < t->nparts && !r->error; j++)
		{
			t->parts[j].index = kr_int32(r);
			t->parts[j].records = kr_nullable_bytes_v(r, flex);
			t->parts[j].base_offset = -1;
			t->parts[j].log_start_offset = -1;
			kr_tags_v(r, flex);
		}
		kr_tags_v(r, flex);
	}
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		free_topics(topics, ntopics);
		return KH_MALFORMED;
	}

	/* Refusals of the whole request: every partition gets the error. */
	if (acks != 0 && acks != 1 && acks != -1)
	{
		request_code = KERR_INVALID_REQUIRED_ACKS;
		request_error = "acks must be -1 (all), 0 or 1";
	}
	else if (!KSLICE_IS_NULL(transactional_id))
	{
		txn = ktxn_acquire(transactional_id, false);
		if (txn == NULL)
		{
			request_code = KERR_INVALID_PRODUCER_ID_MAPPING;
			request_error = "this gateway does not coordinate the transactional id (it is another gateway's, this one restarted since InitProducerId, or evicted it unused)";
			klog(KLOG_INFO, "conn %llu (%s): Produce with transactional id \"%.*s\", which this gateway does not coordinate: refused (a transaction is served by one gateway: docs/delivery.md)",
				 id, conn->peer, transactional_id.len > 100 ? 100 : (int) transactional_id.len,
				 (const char *) transactional_id.ptr);
		}
		else if (!ktxn_same_role(txn, conn))
		{
			request_code = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
			request_error = "another role initialised this transactional id";
		}
	}

	if (request_code == KERR_NONE && !lookup_topics(conn, topics, ntopics))
	{
		klog(KLOG_WARNING, "conn %llu (%s): out of memory for a Produce request: closing",
			 id, conn->peer);
		if (txn != NULL)
			ktxn_release(txn);
		free_topics(topics, ntopics);
		return KH_CLOSE;
	}

	for (int32_t i = 0; i < ntopics; i++)
	{
		PrTopic    *t = &topics[i];

		for (int32_t j = 0; j < t->nparts; j++)
		{
			PrPartition *p = &t->parts[j];

			if (request_code != KERR_NONE)
				set_error(p, request_code, request_error);
			else if (t->error != KERR_NONE)
				set_error(p, t->error, NULL);
			else
				produce_partition(conn, req, t, p, acks, txn);
			if (p->error != KERR_NONE)
				failed = true;
		}
	}

	if (txn != NULL)
		ktxn_release(txn);

	if (acks == 0)
	{
		/*
		 * No response; a failure closes the connection, the one way a
		 * client that asked for no answer can learn of it.
		 */
		if (failed)
		{
			klog(KLOG_WARNING, "conn %llu (%s): a Produce request with acks=0 failed: closing",
				 id, conn->peer);
			result = KH_CLOSE;
		}
		else
			result = KH_NO_RESPONSE;
	}
	else
		write_response(w, req, topics, ntopics);
	free_topics(topics, ntopics);
	return result;
}
