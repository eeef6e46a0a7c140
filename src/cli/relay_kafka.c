/*-------------------------------------------------------------------------
 *
 * relay_kafka.c
 *	  relay's side of Apache Kafka, through librdkafka: the idempotent
 *	  producer, the topics (created with the source's partition count, or
 *	  refused when a count differs), each record sent to the partition of
 *	  the same number with headers naming its source, and the delivery
 *	  reports, which count each batch's acknowledged records down
 *	  (relay_batch.c commits a batch's positions only once they all came).
 *
 * The idempotent producer (enable.idempotence=true, which implies acks=all
 * and at most 5 requests in flight per partition) keeps each partition's
 * order across retries, so the relay may produce the next polls' records
 * before the previous ones are acknowledged.  -X enable.idempotence=false,
 * for brokers without it, keeps the order with one request in flight per
 * broker instead; -X cannot change acks or the requests in flight.
 *
 * With --exactly-once the producer is transactional (transactional.id,
 * which implies idempotence): relay_kafka_open's init_transactions fences
 * any earlier producer of the same id and aborts its open transaction, and
 * relay_txn.c runs the transactions.
 *
 *-------------------------------------------------------------------------
 */
#include "relay.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <librdkafka/rdkafka.h>

#define METADATA_TIMEOUT_MS 10000
#define ADMIN_TIMEOUT_MS 30000
#define SERVE_EVERY 1000
/* init_transactions: also waits for the fenced producer's abort. */
#define TXN_TIMEOUT_MS 60000

struct RelayKafka
{
	rd_kafka_t *rk;
	const char *bootstrap;
	const rd_kafka_metadata_t *md;	/* every topic, once */
	/* The first delivery failure: the relay ends. */
	bool		failed;
	char		failure[512];
	int			unserved;		/* records produced since the last poll */
	const char *transactional_id;	/* NULL: not transactional */
};

/*
 * A delivery report: one more record of its batch acknowledged, or the
 * batch failed (it will never be committed, nor any after it).
 */
static void
delivered(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	RelayKafka *k = opaque;
	RelaySent  *s = m->_private;

	(void) rk;
	if (s == NULL)
	{
		/* relay_txn.c's positions: a failure fails the commit anyway. */
		if (m->err && !k->failed)
		{
			k->failed = true;
			snprintf(k->failure, sizeof(k->failure),
					 "Kafka did not acknowledge a position in topic \"%s\": %s",
					 rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err));
		}
		return;
	}
	if (m->err)
	{
		s->batch->failed = true;
		if (!k->failed)
		{
			k->failed = true;
			snprintf(k->failure, sizeof(k->failure),
					 "Kafka did not acknowledge offset %lld of topic \"%s\" partition %d: %s",
					 (long long) s->offset, rd_kafka_topic_name(m->rkt),
					 (int) m->partition, rd_kafka_err2str(m->err));
		}
	}
	else
		s->batch->unacked--;
}

static void
set_property(rd_kafka_conf_t *conf, const char *name, const char *value)
{
	char		errstr[512];

	if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
		cli_usage("relay", "-X %s=%s: %s", name, value, errstr);
}

RelayKafka *
relay_kafka_open(const char *bootstrap, int nprops, char **props,
				 const char *transactional_id)
{
	RelayKafka *k = cli_malloc(sizeof(RelayKafka));
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char		errstr[512];
	rd_kafka_resp_err_t err;
	bool		idempotent = true;
	bool		gapless_set = false;

	memset(k, 0, sizeof(*k));
	k->bootstrap = bootstrap;
	k->transactional_id = transactional_id;
	set_property(conf, "bootstrap.servers", bootstrap);
	set_property(conf, "client.id", "pg_eventlog-relay");
	/* Errors are one line (cli_error); -X log_level=6 brings the log back. */
	set_property(conf, "log_level", "0");
	for (int i = 0; i < nprops; i++)
	{
		char	   *eq = strchr(props[i], '=');

		if (eq == NULL || eq == props[i])
			cli_usage("relay", "-X needs PROPERTY=VALUE, not \"%s\"", props[i]);
		*eq = '\0';
		if (strcmp(props[i], "transactional.id") == 0)
			cli_usage("relay", "-X transactional.id cannot be set: use --transactional-id");
		/*
		 * As librdkafka reads a boolean ("true", "t", "1", "false", "f",
		 * "0", in any case; anything else it refuses below).
		 */
		if (strcmp(props[i], "enable.idempotence") == 0)
			idempotent = !(strcasecmp(eq + 1, "false") == 0 || strcasecmp(eq + 1, "f") == 0 ||
						   strcmp(eq + 1, "0") == 0);
		else if (strcmp(props[i], "enable.gapless.guarantee") == 0)
			gapless_set = true;
		else if (strcmp(props[i], "max.in.flight.requests.per.connection") == 0 ||
				 strcmp(props[i], "max.in.flight") == 0 || strcmp(props[i], "acks") == 0 ||
				 strcmp(props[i], "request.required.acks") == 0)
			cli_usage("relay", "-X %s cannot be set: the relay sets it to keep each partition's order", props[i]);
		set_property(conf, props[i], eq + 1);
		*eq = '=';
	}
	if (transactional_id)
	{
		/*
		 * A transaction is committed whole or aborted whole, and a refused
		 * record makes the commit fail: the gapless guarantee has nothing
		 * to add (librdkafka ignores it for a transactional producer).
		 */
		if (!idempotent)
			cli_usage("relay", "--exactly-once needs the idempotent producer: -X enable.idempotence=false cannot be set with it");
		set_property(conf, "transactional.id", transactional_id);
	}
	else if (idempotent)
	{
		set_property(conf, "enable.idempotence", "true");

		/*
		 * A record Kafka refuses must not be followed in its partition by
		 * later ones (the pipeline has later batches in librdkafka): with
		 * the gapless guarantee a gap is a fatal error, and nothing after
		 * it is delivered.
		 */
		if (!gapless_set)
			set_property(conf, "enable.gapless.guarantee", "true");
	}
	else
	{
		/*
		 * Brokers without InitProducerId (pg_eventlog's own gateway): one
		 * request in flight per broker, so that a retry cannot overtake.
		 */
		set_property(conf, "max.in.flight.requests.per.connection", "1");
		set_property(conf, "acks", "all");
	}
	rd_kafka_conf_set_dr_msg_cb(conf, delivered);
	rd_kafka_conf_set_opaque(conf, k);
	k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (k->rk == NULL)
		cli_error("cannot create a Kafka producer: %s", errstr);

	/* Every topic (no auto-creation by asking for one), or Kafka is unreachable. */
	err = rd_kafka_metadata(k->rk, 1, NULL, &k->md, METADATA_TIMEOUT_MS);
	if (err)
		cli_error("cannot reach Kafka at %s: %s", bootstrap, rd_kafka_err2str(err));
	if (transactional_id)
	{
		rd_kafka_error_t *error = rd_kafka_init_transactions(k->rk, TXN_TIMEOUT_MS);

		if (error)
			cli_error("cannot start Kafka transactions as transactional.id \"%s\": %s",
					  transactional_id, rd_kafka_error_string(error));
	}
	return k;
}

/* librdkafka's handle, for relay_txn.c's transactions. */
rd_kafka_t *
relay_kafka_handle(RelayKafka *k)
{
	return k->rk;
}

/* The first delivery failure, or NULL. */
const char *
relay_kafka_failure(RelayKafka *k)
{
	return k->failed ? k->failure : NULL;
}

/*
 * Creates TOPIC with PARTITIONS partitions (the broker's replication
 * factor).  False if it exists already (made meanwhile by another relay,
 * or by someone else): the caller checks its partition count then.
 */
static bool
create_topic(RelayKafka *k, const char *topic, int partitions, bool compact)
{
	char		errstr[512];
	rd_kafka_NewTopic_t *nt;
	rd_kafka_queue_t *q = rd_kafka_queue_new(k->rk);
	rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(k->rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_event_t *ev;
	const rd_kafka_CreateTopics_result_t *res;
	const rd_kafka_topic_result_t **tr;
	size_t		n;
	bool		created = true;

	nt = rd_kafka_NewTopic_new(topic, partitions, -1, errstr, sizeof(errstr));
	if (nt == NULL)
		cli_error("cannot create Kafka topic \"%s\": %s", topic, errstr);
	if (compact &&
		rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact") != RD_KAFKA_RESP_ERR_NO_ERROR)
		cli_error("cannot create Kafka topic \"%s\": cannot set cleanup.policy", topic);
	rd_kafka_AdminOptions_set_operation_timeout(opts, ADMIN_TIMEOUT_MS, errstr, sizeof(errstr));
	rd_kafka_CreateTopics(k->rk, &nt, 1, opts, q);
	ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS + 5000);
	if (ev == NULL)
		cli_error("cannot create Kafka topic \"%s\": no answer from Kafka", topic);
	if (rd_kafka_event_error(ev))
		cli_error("cannot create Kafka topic \"%s\": %s", topic, rd_kafka_event_error_string(ev));
	res = rd_kafka_event_CreateTopics_result(ev);
	tr = rd_kafka_CreateTopics_result_topics(res, &n);
	for (size_t i = 0; i < n; i++)
	{
		if (rd_kafka_topic_result_error(tr[i]) == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
			created = false;
		else if (rd_kafka_topic_result_error(tr[i]))
			cli_error("cannot create Kafka topic \"%s\": %s", topic,
					  rd_kafka_topic_result_error_string(tr[i]) ?
					  rd_kafka_topic_result_error_string(tr[i]) :
					  rd_kafka_err2str(rd_kafka_topic_result_error(tr[i])));
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_NewTopic_destroy(nt);
	rd_kafka_AdminOptions_destroy(opts);
	rd_kafka_queue_destroy(q);
	return created;
}

/* TOPIC's partition count as Kafka has it now, or -1 if not known. */
static int
topic_partitions(RelayKafka *k, const char *topic)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(k->rk, topic, NULL);
	const rd_kafka_metadata_t *md = NULL;
	int			count = -1;

	if (rkt == NULL)
		return -1;
	if (rd_kafka_metadata(k->rk, 0, rkt, &md, METADATA_TIMEOUT_MS) == RD_KAFKA_RESP_ERR_NO_ERROR &&
		md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR)
		count = md->topics[0].partition_cnt;
	if (md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	return count;
}

/*
 * The Kafka topic of the same name must have the source's partition count:
 * partition N goes to partition N, so a different count would either drop
 * partitions or leave Kafka's extra ones empty while keys move.
 */
void
relay_kafka_topic(RelayKafka *k, const char *topic, int partitions, bool compact)
{
	for (int i = 0; i < k->md->topic_cnt; i++)
	{
		const rd_kafka_metadata_topic_t *t = &k->md->topics[i];

		if (strcmp(t->topic, topic) != 0)
			continue;
		if (t->err)
			cli_error("Kafka topic \"%s\" is not usable: %s", topic, rd_kafka_err2str(t->err));
		if (t->partition_cnt != partitions)
			cli_error("Kafka topic \"%s\" has %d partitions, the topic here has %d: partition numbers must match",
					  topic, t->partition_cnt, partitions);
		return;
	}
	if (!create_topic(k, topic, partitions, compact))
	{
		/* Made meanwhile (two relays starting at once): its count, now. */
		int			count = topic_partitions(k, topic);

		if (count < 0)
			cli_error("Kafka topic \"%s\" exists, but its partition count cannot be read", topic);
		if (count != partitions)
			cli_error("Kafka topic \"%s\" has %d partitions, the topic here has %d: partition numbers must match",
					  topic, count, partitions);
	}
}

static void
add_header(rd_kafka_headers_t *h, const char *name, const char *value, ssize_t len)
{
	rd_kafka_header_add(h, name, -1, value, len);
}

static uint32_t
be32(const char *p)
{
	const unsigned char *u = (const unsigned char *) p;

	return ((uint32_t) u[0] << 24) | ((uint32_t) u[1] << 16) | ((uint32_t) u[2] << 8) | u[3];
}

/*
 * The record's own headers (relay.c's encoding: per header a 4-byte name
 * length, the name, a 4-byte value length or -1 for NULL, the value), then
 * the source's.
 */
static rd_kafka_headers_t *
make_headers(const RelayRecord *r)
{
	rd_kafka_headers_t *h = rd_kafka_headers_new(8);
	const char *p = r->headers;
	const char *end = r->headers ? r->headers + r->headers_len : NULL;
	char		num[32];

	while (p && p + 4 <= end)
	{
		uint32_t	nlen = be32(p);
		const char *name = p + 4;
		int32_t		vlen;
		char	   *cname;

		if (nlen > (size_t) (end - name) || end - name - nlen < 4)
			cli_error("malformed headers in offset %lld of topic \"%s\"", (long long) r->offset, r->topic);
		vlen = (int32_t) be32(name + nlen);
		p = name + nlen + 4;
		if (vlen > 0 && vlen > end - p)
			cli_error("malformed headers in offset %lld of topic \"%s\"", (long long) r->offset, r->topic);
		cname = cli_malloc(nlen + 1);
		memcpy(cname, name, nlen);
		cname[nlen] = '\0';
		rd_kafka_header_add(h, cname, nlen, vlen < 0 ? NULL : p, vlen < 0 ? 0 : vlen);
		free(cname);
		if (vlen > 0)
			p += vlen;
	}
	add_header(h, "pg_eventlog.topic", r->topic, -1);
	snprintf(num, sizeof(num), "%d", (int) r->partition);
	add_header(h, "pg_eventlog.partition", num, -1);
	snprintf(num, sizeof(num), "%lld", (long long) r->offset);
	add_header(h, "pg_eventlog.offset", num, -1);
	/*
	 * Offsets start again at 0 in a topic dropped and created again: the
	 * topic's creation time tells the two apart.
	 */
	add_header(h, "pg_eventlog.topic_created", r->topic_created, -1);
	return h;
}

/*
 * Produces one record; its delivery report will count it acknowledged in
 * s's batch.  False when librdkafka refused it at once (too large, say):
 * the batch failed, and relay_kafka_serve returns why.
 */
bool
relay_kafka_send(RelayKafka *k, const RelayRecord *r, RelaySent *s)
{
	rd_kafka_headers_t *h = make_headers(r);
	rd_kafka_resp_err_t err;

	s->offset = r->offset;
	for (;;)
	{
		err = rd_kafka_producev(k->rk,
								RD_KAFKA_V_TOPIC(r->topic),
								RD_KAFKA_V_PARTITION(r->partition),
								RD_KAFKA_V_KEY((const void *) r->key, r->key ? r->key_len : 0),
								RD_KAFKA_V_VALUE((void *) r->value, r->value ? r->value_len : 0),
								/* the batch keeps the value until acknowledged */
								RD_KAFKA_V_MSGFLAGS(0),
								RD_KAFKA_V_TIMESTAMP(r->ts_ms > 0 ? r->ts_ms : 0),
								RD_KAFKA_V_HEADERS(h),
								RD_KAFKA_V_OPAQUE(s),
								RD_KAFKA_V_END);
		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			break;
		/* librdkafka's queue is full: let deliveries drain it. */
		rd_kafka_poll(k->rk, 100);
	}
	if (err == RD_KAFKA_RESP_ERR__FATAL &&
		rd_kafka_fatal_error(k->rk, k->failure, sizeof(k->failure)))
		cli_error("Kafka producer failed: %s", k->failure);
	if (err)
	{
		rd_kafka_headers_destroy(h);
		s->batch->failed = true;
		if (!k->failed)
		{
			k->failed = true;
			snprintf(k->failure, sizeof(k->failure),
					 "cannot send offset %lld of topic \"%s\" partition %d to Kafka: %s",
					 (long long) r->offset, r->topic, (int) r->partition, rd_kafka_err2str(err));
		}
		return false;
	}
	/* Serve the delivery reports now and then, not per record. */
	if (++k->unserved >= SERVE_EVERY)
	{
		k->unserved = 0;
		rd_kafka_poll(k->rk, 0);
	}
	return true;
}

/*
 * Serves the delivery reports that came, waiting up to timeout_ms for one
 * if none did; returns the first failure, or NULL.
 */
const char *
relay_kafka_serve(RelayKafka *k, int timeout_ms)
{
	char		errstr[512];

	rd_kafka_poll(k->rk, timeout_ms);
	if (rd_kafka_fatal_error(k->rk, errstr, sizeof(errstr)))
		cli_error("Kafka producer failed: %s", errstr);
	return k->failed ? k->failure : NULL;
}

/*
 * Waits until Kafka acknowledged (or refused) every record produced; returns
 * the first failure, or NULL.  Even after SIGTERM: what was produced is
 * acknowledged and committed, so a stop re-sends nothing.
 */
const char *
relay_kafka_wait(RelayKafka *k)
{
	char		errstr[512];

	while (rd_kafka_outq_len(k->rk) > 0)
	{
		rd_kafka_flush(k->rk, 1000);
		if (rd_kafka_fatal_error(k->rk, errstr, sizeof(errstr)))
			cli_error("Kafka producer failed: %s", errstr);
	}
	rd_kafka_poll(k->rk, 0);
	return k->failed ? k->failure : NULL;
}

/*
 * After a refused record: drops the records not yet sent (so that none of a
 * later batch reaches Kafka after the refused one), waits for those in
 * flight, and returns the first failure.
 */
const char *
relay_kafka_abandon(RelayKafka *k)
{
	rd_kafka_purge(k->rk, RD_KAFKA_PURGE_F_QUEUE);
	return relay_kafka_wait(k);
}

void
relay_kafka_close(RelayKafka *k)
{
	const char *failure = relay_kafka_wait(k);

	if (failure)
		cli_error("%s", failure);
	rd_kafka_metadata_destroy(k->md);
	rd_kafka_destroy(k->rk);
	free(k);
}
