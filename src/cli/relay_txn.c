/*-------------------------------------------------------------------------
 *
 * relay_txn.c
 *	  relay --to-kafka --exactly-once: each poll's records and the source
 *	  positions they reach go to Kafka in one Kafka transaction, the
 *	  positions as records of a compacted positions topic (one partition,
 *	  key ["GROUP","TOPIC",PARTITION,"CREATED"], CREATED the topic's
 *	  created_at in Unix microseconds, so that a topic dropped and created
 *	  again, whose offsets start at 0 again, has positions of its own; value
 *	  the next source offset as decimal text), and at start the relay reads
 *	  its positions back from there.
 *
 * Why the positions live in Kafka: a commit in PostgreSQL and a commit in
 * Kafka are two transactions, and a crash between them either re-sends
 * (positions committed after Kafka's) or loses (before).  With the
 * positions written in the Kafka transaction that writes the records, a
 * read_committed reader sees both or neither; the group's positions in
 * PostgreSQL, still committed afterwards for lag and -e, are only a view,
 * and at start the relay moves them to Kafka's (relay.c).
 *
 * Why a positions topic and not send_offsets_to_transaction (offsets of a
 * Kafka consumer group, keyed by topic and partition like ours): Kafka
 * expires a group's offsets once it has had no member for
 * offsets.retention.minutes (7 days by default), and pg_eventlog's own
 * gateway refuses offsets above the destination partition's high
 * watermark, which source offsets past rolled-back ones exceed
 * (OFFSET_OUT_OF_RANGE).  A compacted topic keeps the last value of each
 * key for ever, as Kafka Connect's offset storage does.
 *
 * Reading to the end: relay_kafka_open's init_transactions fenced the
 * previous producer of this transactional.id and aborted its open
 * transaction; then the relay commits a start marker (key
 * ["start","TRANSACTIONAL ID"], a value new each start) and reads the
 * positions topic with isolation.level=read_committed until it sees that
 * marker.  Every position this transactional.id ever committed is before
 * it.  The high watermark is no end to wait for: a read_committed reader
 * stops at a transaction still open (another relay's) and, against the
 * gateway, never reaches a high watermark that ends in rolled-back
 * offsets (no abort marker fills them).
 *
 *-------------------------------------------------------------------------
 */
#include "relay.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#define TXN_TIMEOUT_MS 60000
#define READ_TIMEOUT_MS 60000

struct RelayTxn
{
	RelayKafka *k;
	rd_kafka_t *rk;
	const char *positions_topic;
	const char *transactional_id;
	int			ntopics;
	const int  *partitions;
	char	 ***keys;			/* per topic and partition: its position's key */
	int64_t   **positions;		/* per topic and partition: from Kafka, or -1 */
	bool		open;			/* a transaction begun and not ended */
};

/* Room for extra more bytes after *len in buf (cli_malloc'd, *size grown). */
static void
reserve(char **buf, size_t len, size_t *size, size_t extra)
{
	if (len + extra > *size)
	{
		char	   *n = cli_malloc((len + extra) * 2);

		memcpy(n, *buf, len);
		free(*buf);
		*buf = n;
		*size = (len + extra) * 2;
	}
}

/* Appends s as a JSON string to buf (cli_malloc'd, *size grown). */
static void
json_string(char **buf, size_t *len, size_t *size, const char *s)
{
	reserve(buf, *len, size, strlen(s) * 6 + 3);
	(*buf)[(*len)++] = '"';
	for (const unsigned char *c = (const unsigned char *) s; *c; c++)
	{
		if (*c == '"' || *c == '\\')
		{
			(*buf)[(*len)++] = '\\';
			(*buf)[(*len)++] = (char) *c;
		}
		else if (*c < 0x20)
			*len += sprintf(*buf + *len, "\\u%04x", *c);
		else
			(*buf)[(*len)++] = (char) *c;
	}
	(*buf)[(*len)++] = '"';
	(*buf)[*len] = '\0';
}

/*
 * ["A","B",N,"C"], or ["A","B"] with n < 0 and c NULL: text that is valid
 * JSON, since the positions topic may be a JSON topic of pg_eventlog's
 * gateway.
 */
static char *
make_key(const char *a, const char *b, int n, const char *c)
{
	size_t		size = 64;
	size_t		len = 1;
	char	   *buf = cli_malloc(size);

	buf[0] = '[';
	json_string(&buf, &len, &size, a);
	buf[len++] = ',';
	json_string(&buf, &len, &size, b);
	reserve(&buf, len, &size, 16);
	if (n >= 0)
		len += sprintf(buf + len, ",%d", n);
	if (c != NULL)
	{
		buf[len++] = ',';
		json_string(&buf, &len, &size, c);
	}
	reserve(&buf, len, &size, 2);
	buf[len++] = ']';
	buf[len] = '\0';
	return buf;
}

static void
txn_check(RelayTxn *t, rd_kafka_error_t *error, const char *what)
{
	if (error == NULL)
		return;
	cli_error("Kafka transaction of transactional.id \"%s\" failed (%s): %s",
			  t->transactional_id, what, rd_kafka_error_string(error));
}

/* Produces one record to the positions topic, in the open transaction. */
static void
produce_position(RelayTxn *t, const char *key, const char *value)
{
	rd_kafka_resp_err_t err;

	for (;;)
	{
		err = rd_kafka_producev(t->rk,
								RD_KAFKA_V_TOPIC(t->positions_topic),
								RD_KAFKA_V_PARTITION(0),
								RD_KAFKA_V_KEY(key, strlen(key)),
								RD_KAFKA_V_VALUE((void *) value, strlen(value)),
								RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
								RD_KAFKA_V_OPAQUE(NULL),
								RD_KAFKA_V_END);
		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			break;
		rd_kafka_poll(t->rk, 100);
	}
	if (err)
		cli_error("cannot send a position to Kafka topic \"%s\": %s",
				  t->positions_topic, rd_kafka_err2str(err));
}

void
relay_txn_begin(RelayTxn *t)
{
	txn_check(t, rd_kafka_begin_transaction(t->rk), "begin");
	t->open = true;
}

/*
 * Commits the open transaction; a failure ends the relay, whose restart
 * reads what Kafka committed (a commit whose outcome is unknown included).
 */
static void
commit(RelayTxn *t)
{
	rd_kafka_error_t *error = rd_kafka_commit_transaction(t->rk, TXN_TIMEOUT_MS);

	t->open = false;
	if (error && rd_kafka_error_txn_requires_abort(error))
	{
		const char *failure = relay_kafka_failure(t->k);

		(void) rd_kafka_abort_transaction(t->rk, TXN_TIMEOUT_MS);
		if (failure)
			cli_error("%s", failure);
	}
	txn_check(t, error, "commit");
}

/*
 * The batch's records were produced in the open transaction: add the
 * positions they reach (one past each partition's last record) and commit
 * both.  A record Kafka refused aborts the transaction: none of it is in
 * Kafka, and the positions stay where they were.
 */
void
relay_txn_commit(RelayTxn *t, RelayBatch *b)
{
	const char *failure = relay_kafka_failure(t->k);

	if (failure)
	{
		rd_kafka_error_t *error = rd_kafka_abort_transaction(t->rk, TXN_TIMEOUT_MS);

		t->open = false;
		txn_check(t, error, "abort");
		cli_error("%s", failure);
	}
	for (int i = 0; i < b->nparts; i++)
	{
		char		value[24];

		/* Never backwards (relay.c skips records below the position). */
		if (b->next_offset[i] <= t->positions[b->topic][i])
			continue;
		snprintf(value, sizeof(value), "%lld", (long long) b->next_offset[i]);
		produce_position(t, t->keys[b->topic][i], value);
		t->positions[b->topic][i] = b->next_offset[i];
	}
	commit(t);

	/*
	 * The commit flushed every record: serve their delivery reports, so
	 * that relay_batch.c commits the batch in PostgreSQL too.
	 */
	while (b->unacked > 0 && !relay_kafka_failure(t->k))
		relay_kafka_serve(t->k, 100);
}

/*
 * Reads the positions topic up to the marker just committed: the last
 * value of each of our keys is where the relay starts.
 */
static void
read_positions(RelayTxn *t, int nprops, char **props, const char *bootstrap,
			   const char *marker_key, const char *marker)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char		errstr[512];
	rd_kafka_t *c;
	rd_kafka_topic_partition_list_t *tp;
	struct timespec start;
	struct timespec now;

	/*
	 * The producer's -X (security settings above all) apply here as well;
	 * those only a producer knows are refused by the consumer's
	 * configuration, and skipped.
	 */
	/* Errors are one line, as the producer's (-X log_level overrides). */
	(void) rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
	for (int i = 0; i < nprops; i++)
	{
		char	   *eq = strchr(props[i], '=');

		*eq = '\0';
		(void) rd_kafka_conf_set(conf, props[i], eq + 1, errstr, sizeof(errstr));
		*eq = '=';
	}
	if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof(errstr)) ||
		rd_kafka_conf_set(conf, "client.id", "pg_eventlog-relay", errstr, sizeof(errstr)) ||
		rd_kafka_conf_set(conf, "group.id", t->transactional_id, errstr, sizeof(errstr)) ||
		rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof(errstr)) ||
		rd_kafka_conf_set(conf, "isolation.level", "read_committed", errstr, sizeof(errstr)) ||
		rd_kafka_conf_set(conf, "auto.offset.reset", "error", errstr, sizeof(errstr)))
		cli_error("cannot create a Kafka consumer: %s", errstr);
	c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (c == NULL)
		cli_error("cannot create a Kafka consumer: %s", errstr);
	tp = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(tp, t->positions_topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
	if (rd_kafka_assign(c, tp))
		cli_error("cannot read Kafka topic \"%s\"", t->positions_topic);
	rd_kafka_topic_partition_list_destroy(tp);

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;)
	{
		rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 500);

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (m == NULL)
		{
			if (cli_interrupted)
				cli_error("interrupted while reading the relay's positions from Kafka topic \"%s\"",
						  t->positions_topic);
			if ((now.tv_sec - start.tv_sec) * 1000 > READ_TIMEOUT_MS)
				cli_error("cannot read the relay's positions from Kafka topic \"%s\": the start marker did not come within %d s",
						  t->positions_topic, READ_TIMEOUT_MS / 1000);
			continue;
		}
		if (m->err)
		{
			if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
			{
				rd_kafka_message_destroy(m);
				continue;
			}
			cli_error("cannot read the relay's positions from Kafka topic \"%s\": %s",
					  t->positions_topic, rd_kafka_message_errstr(m));
		}
		if (m->key && m->key_len == strlen(marker_key) &&
			memcmp(m->key, marker_key, m->key_len) == 0)
		{
			bool		ours = m->payload && m->len == strlen(marker) &&
				memcmp(m->payload, marker, m->len) == 0;

			rd_kafka_message_destroy(m);
			if (ours)
				break;
			continue;
		}
		for (int ti = 0; m->key && ti < t->ntopics; ti++)
			for (int p = 0; p < t->partitions[ti]; p++)
			{
				const char *key = t->keys[ti][p];
				char		value[24];

				if (m->key_len != strlen(key) || memcmp(m->key, key, m->key_len) != 0)
					continue;
				/* A tombstone (compaction's delete): no position. */
				if (m->payload == NULL || m->len == 0 || m->len >= sizeof(value))
					t->positions[ti][p] = -1;
				else
				{
					memcpy(value, m->payload, m->len);
					value[m->len] = '\0';
					t->positions[ti][p] = strtoll(value, NULL, 10);
				}
			}
		rd_kafka_message_destroy(m);
	}
	rd_kafka_consumer_close(c);
	rd_kafka_destroy(c);
}

/*
 * The positions topic is created if missing (compacted, one partition);
 * the start marker is committed, and the positions are read back up to it.
 */
RelayTxn *
relay_txn_start(RelayKafka *k, const char *bootstrap, int nprops, char **props,
				const char *transactional_id, const char *positions_topic,
				const char *group, int ntopics, const char *const *names,
				const int *partitions, const char *const *created)
{
	RelayTxn   *t = cli_malloc(sizeof(RelayTxn));
	char	   *marker_key;
	char		marker[96];
	struct timespec now;

	memset(t, 0, sizeof(*t));
	t->k = k;
	t->rk = relay_kafka_handle(k);
	t->positions_topic = positions_topic;
	t->transactional_id = transactional_id;
	t->ntopics = ntopics;
	t->partitions = partitions;
	t->keys = cli_malloc(sizeof(char **) * ntopics);
	t->positions = cli_malloc(sizeof(int64_t *) * ntopics);
	for (int ti = 0; ti < ntopics; ti++)
	{
		t->keys[ti] = cli_malloc(sizeof(char *) * partitions[ti]);
		t->positions[ti] = cli_malloc(sizeof(int64_t) * partitions[ti]);
		for (int p = 0; p < partitions[ti]; p++)
		{
			t->keys[ti][p] = make_key(group, names[ti], p, created[ti]);
			t->positions[ti][p] = -1;
		}
	}
	relay_kafka_topic(k, positions_topic, 1, true);

	/* A value no earlier start wrote: the process and the time. */
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(marker, sizeof(marker), "\"%d-%lld.%09ld\"", (int) getpid(),
			 (long long) now.tv_sec, now.tv_nsec);
	marker_key = make_key("start", transactional_id, -1, NULL);
	relay_txn_begin(t);
	produce_position(t, marker_key, marker);
	commit(t);
	read_positions(t, nprops, props, bootstrap, marker_key, marker);
	free(marker_key);
	return t;
}

/* Where Kafka says the relay is in a partition, or -1: nothing committed there. */
int64_t
relay_txn_position(RelayTxn *t, int topic, int partition)
{
	return t->positions[topic][partition];
}
