/*-------------------------------------------------------------------------
 *
 * relay.c
 *	  pg_eventlog relay T [T...] --group G --to-kafka BOOTSTRAP: consumes
 *	  the topics as a member of group G and produces every record to the
 *	  topic of the same name and the partition of the same number in
 *	  Apache Kafka (relay_kafka.c), committing G's positions only once
 *	  Kafka acknowledged the records.  -e ends once caught up; otherwise
 *	  it follows the topics with the long poll.
 *
 * At least once: a crash between Kafka's acknowledgement and the commit
 * sends the records again on restart; each Kafka record's headers
 * pg_eventlog.topic, .partition and .offset name its source, so that a
 * reader drops the duplicates.
 *
 * --exactly-once: each poll's records and the positions they reach go to
 * Kafka in one Kafka transaction (relay_txn.c), and Kafka's positions are
 * the truth; at start the relay fences the previous instance
 * (init_transactions), takes the group's partitions over from members that
 * instance left behind and moves the group to Kafka's positions (seek).
 * The transaction's commit runs while the next poll runs in the server,
 * one batch at a time.
 *
 * A pipeline: each poll (eventlog.poll or poll_binary, the records fetched
 * in binary so that binary topics' bytes pass unchanged) is sent to the
 * server before the previous poll's records are produced, so the server
 * reads the next batch while this process hands the last one to librdkafka
 * and librdkafka delivers the ones before; up to MAX_BATCHES batches are in
 * flight.  relay_batch.c commits each batch's positions once Kafka
 * acknowledged it and every batch before it.  When a round of polls finds
 * nothing, the relay waits for every acknowledgement and commits the fetch
 * positions (past rolled-back offsets), then -e ends if the group is at
 * the end, or the relay waits in the server: in the poll's long poll with
 * one topic, and with several in one wait over all of them (await_topics),
 * so that a record on any topic wakes it.
 *
 *-------------------------------------------------------------------------
 */
#include "relay.h"
#include "relay_from_kafka.h"

#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUND_RECORDS 10000
#define MAX_BATCHES 4

/*
 * A batch is kept whole until Kafka acknowledged it (librdkafka sends the
 * values from the poll's result), and MAX_BATCHES + 1 of them can be held
 * at once: the records a poll asks for are bounded by their bytes too, so
 * that records of megabytes do not make a poll of gigabytes.  Per topic,
 * the first poll asks for FIRST_ROUND_RECORDS; each next one for as many as
 * fit in ROUND_BYTES at the average size of the topic's last poll, at most
 * twice as many as that poll (and at most ROUND_RECORDS).  The bound
 * follows the sizes seen: records that grow from bytes to megabytes from
 * one poll to the next still make one large poll.
 */
#define ROUND_BYTES (16 * 1024 * 1024)
#define FIRST_ROUND_RECORDS 16
/* 2000-01-01 (PostgreSQL's timestamp epoch) in Unix milliseconds. */
#define PG_EPOCH_MS INT64_C(946684800000)
#define DEFAULT_WAIT_S 10
#define MIN_SESSION_TIMEOUT_S 30

typedef struct RelayTopic
{
	const char *name;
	int			partitions;
	bool		binary;
	char	   *created;		/* created_at in Unix microseconds, as text */
	int			round_records;	/* what the next poll asks for */
	char		sql[1024];
} RelayTopic;

/* After a poll of t's of n records of "bytes" in all: the next poll's size. */
static void
relay_round_size(RelayTopic *t, int n, int64_t bytes)
{
	int64_t		avg = n > 0 ? bytes / n : 0;
	int64_t		fit = ROUND_BYTES / (avg > 0 ? avg : 1);
	int64_t		next = (int64_t) t->round_records * 2;

	if (n == 0)
		return;
	if (next > fit)
		next = fit;
	if (next > ROUND_RECORDS)
		next = ROUND_RECORDS;
	t->round_records = next < 1 ? 1 : (int) next;
}

static void
relay_help(void)
{
	printf("usage: pg_eventlog relay TOPIC [TOPIC]... --group GROUP --to-kafka BOOTSTRAP [OPTION]...\n\n"
		   "Produces every record of the topics to Apache Kafka: the same topic name,\n"
		   "the same partition number, in order, with the idempotent producer.  Reads\n"
		   "as a member of GROUP and commits its positions once Kafka acknowledged the\n"
		   "records (at least once: headers pg_eventlog.topic, pg_eventlog.partition,\n"
		   "pg_eventlog.offset and pg_eventlog.topic_created name each record's source).\n"
		   "Missing Kafka topics are\n"
		   "created with the same partition count.  Without -e it follows the topics\n"
		   "until Ctrl-C or SIGTERM.\n\n"
		   "Options:\n"
		   "  -g, --group=GROUP         the consumer group whose positions say what was sent\n"
		   "  -b, --to-kafka=BOOTSTRAP  Kafka's bootstrap servers (host:port,...)\n"
		   "  -X PROPERTY=VALUE         a librdkafka producer property (repeatable)\n"
		   "  --exactly-once            each poll's records and the new positions in one\n"
		   "                            Kafka transaction; positions read from Kafka\n"
		   "                            (readers use isolation.level=read_committed)\n"
		   "  --transactional-id=ID     the transactional.id (implies --exactly-once;\n"
		   "                            default pg_eventlog-relay:GROUP:TOPIC,...)\n"
		   "  --positions-topic=TOPIC   Kafka topic of the positions (--exactly-once;\n"
		   "                            default pg_eventlog_relay_positions)\n"
		   "  -e                        exit once every record is sent\n"
		   "  --wait=SECONDS            longest idle wait in the server between polls\n"
		   "                            (default 10; the member's session timeout is\n"
		   "                            the larger of 30 s and 3 waits)\n"
		   "  -d, --dbname=CONNINFO     database name or connection string\n"
		   "  --help                    print this help\n\n"
		   "pg_eventlog relay --from-kafka --help: the opposite direction.\n");
}

/* The whole record in binary: bytes as they are, headers in one bytea. */
static void
topic_query(RelayTopic *t)
{
	const char *headers = t->binary
		? "(SELECT pg_catalog.string_agg(pg_catalog.int4send(pg_catalog.octet_length(pg_catalog.convert_to(h.name, 'UTF8')))"
		"  OPERATOR(pg_catalog.||) pg_catalog.convert_to(h.name, 'UTF8')"
		"  OPERATOR(pg_catalog.||) pg_catalog.int4send(coalesce(pg_catalog.octet_length(h.value), -1))"
		"  OPERATOR(pg_catalog.||) coalesce(h.value, ''::bytea), ''::bytea ORDER BY h.i)"
		" FROM pg_catalog.unnest(r.headers) WITH ORDINALITY AS h(name, value, i))"
		: "(SELECT pg_catalog.string_agg(pg_catalog.int4send(pg_catalog.octet_length(pg_catalog.convert_to(h.key, 'UTF8')))"
		"  OPERATOR(pg_catalog.||) pg_catalog.convert_to(h.key, 'UTF8')"
		"  OPERATOR(pg_catalog.||) pg_catalog.int4send(coalesce(pg_catalog.octet_length(pg_catalog.convert_to(h.value, 'UTF8')), -1))"
		"  OPERATOR(pg_catalog.||) coalesce(pg_catalog.convert_to(h.value, 'UTF8'), ''::bytea), ''::bytea)"
		" FROM pg_catalog.jsonb_each_text(r.headers) AS h(key, value))";

	/*
	 * Columns the server sends cheaply and this process decodes: key as
	 * text or bytea (binary text is its bytes, in UTF8, the client encoding
	 * the relay sets), value as jsonb (a version byte, then its text) or
	 * bytea, event_time as microseconds since 2000.  Headers are built
	 * only for records that have some.
	 */
	snprintf(t->sql, sizeof(t->sql),
			 "SELECT r.partition, r.offset_id, r.key, r.value,"
			 " CASE WHEN r.headers IS NOT NULL THEN %s END, r.event_time,"
			 " (SELECT (pg_catalog.extract('epoch', t.created_at) OPERATOR(pg_catalog.*) 1000000)::bigint::text"
			 "    FROM eventlog.topic_catalog t WHERE t.name OPERATOR(pg_catalog.=) $1)"
			 " FROM eventlog.%s($1, $2, $3::integer, $4::integer, member => $5,"
			 " session_timeout => $7::interval, wait => $6::interval) AS r",
			 headers, t->binary ? "poll_binary" : "poll");
}

static void
relay_poll_start(PGconn *conn, RelayTopic *t, const char *group,
				 const char *member, const char *wait, const char *session_timeout)
{
	char		max[16];
	char		nparts[16];
	const char *values[7] = {t->name, group, max, nparts, member, wait, session_timeout};

	snprintf(max, sizeof(max), "%d", t->round_records);
	snprintf(nparts, sizeof(nparts), "%d", t->partitions);
	if (!PQsendQueryParams(conn, t->sql, 7, NULL, values, NULL, NULL, 1))
		cli_fail_result(conn, NULL);
}

/* The poll's records; NULL when SIGTERM's cancel ended it. */
static PGresult *
relay_poll_result(PGconn *conn, RelayTopic *t)
{
	PGresult   *res = PQgetResult(conn);
	PGresult   *extra;

	while ((extra = PQgetResult(conn)) != NULL)
		PQclear(extra);
	if (!cli_result_ok(res))
	{
		if (cli_interrupted)
		{
			PQclear(res);
			return NULL;
		}
		cli_fail_result(conn, res);
	}
	if (PQnfields(res) != 7)
		cli_error("unexpected result from the server's poll");
	{
		int64_t		bytes = 0;
		int			n = PQntuples(res);

		for (int row = 0; row < n; row++)
			for (int col = 2; col <= 4; col++)
				bytes += PQgetlength(res, row, col);
		relay_round_size(t, n, bytes);
	}
	return res;
}

/* A binary integer of 4 or 8 bytes, big-endian. */
static int64_t
get_int(PGresult *res, int row, int col)
{
	const unsigned char *p = (const unsigned char *) PQgetvalue(res, row, col);
	int			len = PQgetlength(res, row, col);
	uint64_t	v = 0;

	for (int i = 0; i < len; i++)
		v = (v << 8) | p[i];
	if (len == 4)
		return (int32_t) v;
	return (int64_t) v;
}

/*
 * A record's event_time (binary timestamptz: microseconds since 2000) in
 * Unix milliseconds, rounded down; -1 (no timestamp) for infinity.
 */
static int64_t
get_time_ms(PGresult *res, int row, int col)
{
	int64_t		us;
	int64_t		ms;

	if (PQgetisnull(res, row, col))
		return -1;
	us = get_int(res, row, col);
	if (us == INT64_MAX || us == INT64_MIN)
		return -1;
	ms = us / 1000;
	if (us % 1000 < 0)
		ms--;
	return ms + PG_EPOCH_MS;
}

/*
 * Produces one poll's records as a batch of the pipe, which keeps res
 * until Kafka acknowledged them all.
 */
static RelayBatch *
relay_produce(RelayPipe *pipe, RelayKafka *k, RelayTxn *txn, RelayTopic *topics,
			  int ti, PGresult *res)
{
	RelayTopic *t = &topics[ti];
	int			n = PQntuples(res);
	RelayBatch *b = relay_pipe_add(pipe, ti, res);

	for (int r = 0; r < n; r++)
	{
		RelayRecord rec;

		rec.topic = t->name;
		rec.partition = (int32_t) get_int(res, r, 0);
		rec.offset = get_int(res, r, 1);
		rec.topic_created = PQgetisnull(res, r, 6) ? "" : PQgetvalue(res, r, 6);

		/*
		 * The topic dropped and created again since the relay started: its
		 * offsets start at 0 again, the partition count may differ, and
		 * with --exactly-once Kafka's positions are the old topic's.
		 * Starting again sorts it out (new positions, a new count check).
		 */
		if (strcmp(rec.topic_created, t->created) != 0)
			cli_error("topic \"%s\" was dropped and created again while the relay ran: start the relay again",
					  t->name);

		/*
		 * --exactly-once: a record below Kafka's position is in Kafka
		 * already.  The group polls it again when its position in
		 * PostgreSQL went back behind Kafka's: a partition lost (the member
		 * missed its session timeout) and regained from the committed
		 * position, whose last commit may have been refused, or a seek.
		 */
		if (txn && rec.partition >= 0 && rec.partition < t->partitions &&
			rec.offset < relay_txn_position(txn, ti, rec.partition))
		{
			b->unacked--;
			continue;
		}
		relay_pipe_sent(b, t->name, rec.partition, rec.offset);
		rec.key = PQgetisnull(res, r, 2) ? NULL : PQgetvalue(res, r, 2);
		rec.key_len = PQgetlength(res, r, 2);
		rec.value = PQgetisnull(res, r, 3) ? NULL : PQgetvalue(res, r, 3);
		rec.value_len = PQgetlength(res, r, 3);
		if (!t->binary && rec.value)
		{
			/* jsonb's binary form: version 1, then the text */
			if (rec.value_len < 1 || rec.value[0] != 1)
				cli_error("unexpected jsonb format in offset %lld of topic \"%s\"",
						  (long long) rec.offset, t->name);
			rec.value++;
			rec.value_len--;
		}
		rec.headers = PQgetisnull(res, r, 4) ? NULL : PQgetvalue(res, r, 4);
		rec.headers_len = PQgetlength(res, r, 4);
		rec.ts_ms = get_time_ms(res, r, 5);
		if (!relay_kafka_send(k, &rec, &b->sent[r]))
			break;
	}
	return b;
}

/*
 * Kafka refused a record: drop the records not sent yet, wait for those in
 * flight, commit the batches before its batch that Kafka acknowledged (each
 * commit needs its batch and every batch before it acknowledged), then end.
 */
static void
relay_check(RelayPipe *pipe, RelayKafka *k, const char *failure)
{
	if (failure == NULL)
		return;
	(void) relay_kafka_abandon(k);
	relay_pipe_commit(pipe);
	cli_error("%s", failure);
}

/*
 * -e's end: the group's positions are at every partition's last stable
 * offset.  An empty poll is not enough: a member that died a moment ago
 * still holds its partitions until its session times out, and this member
 * is assigned the others only.
 */
/* The topics' names as a text[] literal. */
static char *
topic_array(RelayTopic *topics, int ntopics)
{
	size_t		size = 3;
	char	   *names;

	for (int i = 0; i < ntopics; i++)
		size += strlen(topics[i].name) * 2 + 4;
	names = cli_malloc(size);
	strcpy(names, "{");
	for (int i = 0; i < ntopics; i++)
	{
		char	   *p = names + strlen(names);

		*p++ = '"';
		for (const char *c = topics[i].name; *c; c++)
		{
			if (*c == '"' || *c == '\\')
				*p++ = '\\';
			*p++ = *c;
		}
		*p++ = '"';
		*p++ = i + 1 < ntopics ? ',' : '}';
		*p = '\0';
	}
	return names;
}

/*
 * -e's end: the group's positions are at every partition's last stable
 * offset.  An empty poll is not enough: a member that died a moment ago
 * still holds its partitions until its session times out, and this member
 * is assigned the others only.
 */
static bool
caught_up(PGconn *conn, const char *names, const char *group)
{
	PGresult   *res;
	bool		done;

	res = cli_query(conn,
					"SELECT pg_catalog.count(*) OPERATOR(pg_catalog.=) 0"
					" FROM eventlog.topics t CROSS JOIN LATERAL pg_catalog.generate_series(0, t.partitions - 1) AS p(p)"
					" LEFT JOIN eventlog.consumer_groups g ON g.group_name OPERATOR(pg_catalog.=) $1"
					"  AND g.topic OPERATOR(pg_catalog.=) t.topic AND g.partition OPERATOR(pg_catalog.=) p.p"
					" WHERE t.topic OPERATOR(pg_catalog.=) ANY ($2::text[])"
					"  AND coalesce(g.committed_offset, eventlog.log_start_offset(t.topic, p.p))"
					"   OPERATOR(pg_catalog.<) eventlog.last_stable_offset(t.topic, p.p)",
					2, (const char *[]) {group, names});
	done = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return done;
}

/*
 * Idle with several topics: one wait over all of them.  A poll's long poll
 * waits on its own topic only, so waiting in each topic's poll in turn
 * would leave a record on another topic unsent for up to a whole wait.
 * eventlog._kafka_await (the Kafka gateway's wait over partitions of any
 * topics, docs/waking-consumers.md) returns as soon as one of the partitions
 * this member owns has a readable record at or after the group's position
 * there, or when the wait ends.  The member's partitions and positions are
 * the group's rows (the polls before this gave every partition one, and the
 * relay commits what it polled, so the committed position is where its next
 * poll reads): a partition of another member cannot wake it, and an
 * assignment that changes meanwhile costs one poll round.  A member that
 * owns nothing waits the whole wait, then polls: that is its heartbeat.
 */
static void
await_topics(PGconn *conn, const char *names, const char *group,
			 const char *member, const char *wait_ms)
{
	PGresult   *res;

	res = PQexecParams(conn,
					   "SELECT eventlog._kafka_await("
					   "  coalesce(pg_catalog.array_agg(t.name ORDER BY t.name, go.partition), '{}'),"
					   "  coalesce(pg_catalog.array_agg(go.partition ORDER BY t.name, go.partition), '{}'),"
					   "  coalesce(pg_catalog.array_agg(go.next_offset ORDER BY t.name, go.partition), '{}'),"
					   "  $4::integer)"
					   " FROM eventlog.group_offsets go JOIN eventlog.topic_catalog t"
					   "   ON t.topic_id OPERATOR(pg_catalog.=) go.topic_id"
					   " WHERE go.group_name OPERATOR(pg_catalog.=) $1"
					   "   AND t.name OPERATOR(pg_catalog.=) ANY ($2::text[])"
					   "   AND go.owner_member OPERATOR(pg_catalog.=) $3",
					   4, NULL, (const char *[]) {group, names, member, wait_ms}, NULL, NULL, 0);
	if (!cli_result_ok(res) && !cli_interrupted)
		cli_fail_result(conn, res);
	PQclear(res);
}

/*
 * --exactly-once's default transactional.id: the group and the topics,
 * sorted, so that the same relay restarted fences its previous instance
 * whatever the order of its arguments.
 */
static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static char *
default_transactional_id(const char *group, const char **tnames, int ntopics)
{
	const char **sorted = cli_malloc(sizeof(char *) * ntopics);
	size_t		size = strlen(group) + 32;
	char	   *id;

	memcpy(sorted, tnames, sizeof(char *) * ntopics);
	qsort(sorted, ntopics, sizeof(char *), cmp_names);
	for (int i = 0; i < ntopics; i++)
		size += strlen(sorted[i]) + 1;
	id = cli_malloc(size);
	snprintf(id, size, "pg_eventlog-relay:%s:", group);
	for (int i = 0; i < ntopics; i++)
	{
		if (i > 0)
			strcat(id, ",");
		strcat(id, sorted[i]);
	}
	free(sorted);
	return id;
}

/*
 * --exactly-once's start, after init_transactions fenced the previous
 * instance: the members of the group on these topics are that instance's
 * (or another relay's, now fenced and failing), so they leave at once
 * rather than hold their partitions until their session times out; then
 * each partition Kafka has a position for is moved there.  Kafka's
 * position is where its read_committed readers' records end: PostgreSQL's
 * may be behind it (a crash between the two commits) or past it only over
 * rolled-back offsets (fetch positions committed while idle).
 */
static void
take_over(PGconn *conn, RelayTxn *txn, RelayTopic *topics, int ntopics,
		  const char *names, const char *group)
{
	PQclear(cli_query(conn,
					  "SELECT pg_catalog.count(eventlog.leave(t.name, m.group_name, m.member))"
					  " FROM eventlog.group_members m JOIN eventlog.topic_catalog t USING (topic_id)"
					  " WHERE t.name OPERATOR(pg_catalog.=) ANY ($1::text[])"
					  "   AND m.group_name OPERATOR(pg_catalog.=) $2",
					  2, (const char *[]) {names, group}));
	for (int i = 0; i < ntopics; i++)
		for (int p = 0; p < topics[i].partitions; p++)
		{
			int64_t		pos = relay_txn_position(txn, i, p);
			char		ps[16];
			char		os[24];

			if (pos < 0)
				continue;
			snprintf(ps, sizeof(ps), "%d", p);
			snprintf(os, sizeof(os), "%lld", (long long) pos);

			/*
			 * Kafka's position past this partition's end: the topic here is
			 * not the one Kafka's records came from (dropped and created
			 * again, or a failover that lost its last records).  Skipping
			 * "what Kafka has" would then skip records it never got.
			 */
			{
				PGresult   *hw = cli_query(conn,
										   "SELECT eventlog.high_watermark($1, $2::integer) OPERATOR(pg_catalog.<) $3::bigint",
										   3, (const char *[]) {topics[i].name, ps, os});
				bool		past = PQgetvalue(hw, 0, 0)[0] == 't';

				PQclear(hw);
				if (past)
					cli_error("Kafka's position %lld for partition %d of topic \"%s\" is past the end of the topic here: "
							  "was the topic dropped and created again? Relay it with another --positions-topic "
							  "or --transactional-id, or delete its positions",
							  (long long) pos, p, topics[i].name);
			}
			PQclear(cli_query(conn,
							  "SELECT pg_catalog.count(*) FROM eventlog.seek($1, $2, $3, $4::integer, force => true)",
							  4, (const char *[]) {topics[i].name, group, os, ps}));
		}
}

static void
leave(PGconn *conn, RelayTopic *topics, int ntopics, const char *group, const char *member)
{
	for (int i = 0; i < ntopics; i++)
		PQclear(PQexecParams(conn, "SELECT eventlog.leave($1, $2, $3)", 3, NULL,
							 (const char *[]) {topics[i].name, group, member}, NULL, NULL, 0));
}

int
cmd_relay(int argc, char **argv)
{
	static struct option opts[] = {
		{"help", no_argument, NULL, '?'},
		{"group", required_argument, NULL, 'g'},
		{"to-kafka", required_argument, NULL, 'b'},
		{"wait", required_argument, NULL, 'w'},
		{"exactly-once", no_argument, NULL, 'x'},
		{"transactional-id", required_argument, NULL, 't'},
		{"positions-topic", required_argument, NULL, 'p'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	const char *group = NULL;
	const char *bootstrap = NULL;
	char	  **props = cli_malloc(sizeof(char *) * argc);
	int			nprops = 0;
	bool		exit_at_end = false;
	bool		exactly_once = false;
	const char *transactional_id = NULL;
	const char *positions_topic = NULL;
	RelayTxn   *txn = NULL;
	RelayTopic *topics;
	int			ntopics;
	RelayKafka *k;
	PGconn	   *conn;
	char		host[64];
	char		member[128];
	int64_t		wait_s = DEFAULT_WAIT_S;
	char		wait[32];
	char		wait_ms[32];
	char		session_timeout[32];
	char	   *names;
	const char **tnames;
	int		   *tparts;
	RelayPipe  *pipe;
	PGresult   *pending = NULL;	/* polled, not yet produced */
	int			pending_topic = 0;
	int			next = 0;		/* the topic to poll next */
	int			empty = 0;		/* polls in a row that found nothing */
#ifdef EL_TEST_HOOKS
	int			produced = 0;
#endif
	int			opt;

	/* The opposite direction: relay_from_kafka.c. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--from-kafka") == 0 || strncmp(argv[i], "--from-kafka=", 13) == 0)
			return cmd_relay_from_kafka(argc, argv);
	if (cli_is_help(argc, argv))
	{
		relay_help();
		return 0;
	}
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":d:g:b:X:e", opts, NULL)) != -1)
	{
		switch (opt)
		{
			case 'd':
				cli_conninfo = optarg;
				break;
			case 'g':
				group = optarg;
				break;
			case 'b':
				bootstrap = optarg;
				break;
			case 'X':
				props[nprops++] = optarg;
				break;
			case 'e':
				exit_at_end = true;
				break;
			case 'w':
				wait_s = cli_int_arg("relay", "--wait", optarg, 1, 86400);
				break;
			case 'x':
				exactly_once = true;
				break;
			case 't':
				if (optarg[0] == '\0')
					cli_usage("relay", "--transactional-id cannot be empty");
				transactional_id = optarg;
				exactly_once = true;
				break;
			case 'p':
				if (optarg[0] == '\0')
					cli_usage("relay", "--positions-topic cannot be empty");
				positions_topic = optarg;
				break;
			default:
				cli_bad_option("relay", opt, argv);
		}
	}
	if (optind >= argc)
		cli_usage("relay", "a topic is required");
	if (group == NULL)
		cli_usage("relay", "--group is required: its positions say what Kafka has");
	if (bootstrap == NULL)
		cli_usage("relay", "--to-kafka is required");
	if (positions_topic && !exactly_once)
		cli_usage("relay", "--positions-topic needs --exactly-once");
	if (exactly_once && positions_topic == NULL)
		positions_topic = "pg_eventlog_relay_positions";
	ntopics = argc - optind;
	topics = cli_malloc(sizeof(RelayTopic) * ntopics);
	/* A member's wait must stay below its session timeout (docs/waking-consumers.md). */
	snprintf(wait, sizeof(wait), "%lld seconds", (long long) wait_s);
	snprintf(wait_ms, sizeof(wait_ms), "%lld", (long long) wait_s * 1000);
	snprintf(session_timeout, sizeof(session_timeout), "%lld seconds",
			 (long long) (wait_s * 3 > MIN_SESSION_TIMEOUT_S ? wait_s * 3 : MIN_SESSION_TIMEOUT_S));

	conn = cli_connect();
	/* Keys and values pass as the bytes of their UTF8 text (topic_query). */
	if (PQsetClientEncoding(conn, "UTF8") != 0)
		cli_fail_result(conn, NULL);
	tnames = cli_malloc(sizeof(char *) * ntopics);
	tparts = cli_malloc(sizeof(int) * ntopics);
	for (int i = 0; i < ntopics; i++)
	{
		const char *name = argv[optind + i];
		PGresult   *res = cli_query(conn,
									"SELECT t.partitions, t.format OPERATOR(pg_catalog.=) 'binary',"
									" (pg_catalog.extract('epoch', t.created_at) OPERATOR(pg_catalog.*) 1000000)::bigint::text"
									" FROM eventlog.topic_catalog t WHERE t.name OPERATOR(pg_catalog.=) $1",
									1, &name);

		if (PQntuples(res) == 0)
			cli_error("topic \"%s\" does not exist", name);
		if (exactly_once && strcmp(name, positions_topic) == 0)
			cli_usage("relay", "topic \"%s\" is the positions topic: it cannot be relayed", name);
		topics[i].name = name;
		topics[i].partitions = atoi(PQgetvalue(res, 0, 0));
		topics[i].binary = PQgetvalue(res, 0, 1)[0] == 't';
		topics[i].created = cli_strdup(PQgetvalue(res, 0, 2));
		topics[i].round_records = FIRST_ROUND_RECORDS;
		PQclear(res);
		topic_query(&topics[i]);
		tnames[i] = topics[i].name;
		tparts[i] = topics[i].partitions;
	}
	names = topic_array(topics, ntopics);
	if (exactly_once && transactional_id == NULL)
		transactional_id = default_transactional_id(group, tnames, ntopics);
	k = relay_kafka_open(bootstrap, nprops, props, exactly_once ? transactional_id : NULL);
	for (int i = 0; i < ntopics; i++)
		relay_kafka_topic(k, topics[i].name, topics[i].partitions, false);
	if (exactly_once)
	{
		{
			const char **tcreated = cli_malloc(sizeof(char *) * ntopics);

			for (int i = 0; i < ntopics; i++)
				tcreated[i] = topics[i].created;
			txn = relay_txn_start(k, bootstrap, nprops, props, transactional_id,
								  positions_topic, group, ntopics, tnames, tparts, tcreated);
		}
		take_over(conn, txn, topics, ntopics, names, group);
	}

	if (gethostname(host, sizeof(host)) != 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	/*
	 * The host and pid name the member for people; the clock's nanoseconds
	 * keep two relays apart where both are the same (containers, where
	 * every relay may be pid 1 on a host of the same name), which would
	 * otherwise share one member and its partitions.
	 */
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		snprintf(member, sizeof(member), "pg_eventlog-relay-%s-%d-%08lx", host, (int) getpid(),
				 (unsigned long) (now.tv_nsec ^ (now.tv_sec << 20)) & 0xffffffffUL);
	}
	cli_install_interrupt(conn);

	/*
	 * What this process allocates per poll (libpq's result, librdkafka's
	 * copies) is freed by the next: keep it instead of giving it back to
	 * the kernel and faulting it in again, which in a threaded process
	 * also costs every CPU a TLB flush (the profile of a relay of 200,000
	 * records spent half of its own CPU time there).
	 */
#ifdef M_TRIM_THRESHOLD
	mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
	mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
#endif
	pipe = relay_pipe_new(conn, group, member, ntopics, tnames, tparts);
	while (!cli_interrupted)
	{
		PGresult   *res;

		/* What Kafka acknowledged, in poll order, is committed. */
		relay_check(pipe, k, relay_kafka_serve(k, 0));
		relay_pipe_commit(pipe);
		while (relay_pipe_batches(pipe) >= MAX_BATCHES && !cli_interrupted)
		{
			relay_check(pipe, k, relay_kafka_serve(k, 100));
			relay_pipe_commit(pipe);
		}
		if (cli_interrupted)
			break;

		/*
		 * The next poll runs in the server while the previous one's
		 * records go to librdkafka.
		 */
		relay_poll_start(conn, &topics[next], group, member, NULL, session_timeout);
		if (pending)
		{
			RelayBatch *b;

			if (txn)
				relay_txn_begin(txn);
			b = relay_produce(pipe, k, txn, topics, pending_topic, pending);
			pending = NULL;
#ifdef EL_TEST_HOOKS
			{
				/* Test builds: kill -9 mid-pipeline (086). */
				const char *crash = getenv("PG_EVENTLOG_TEST_RELAY_CRASH_AFTER_BATCH");

				if (++produced == (crash ? atoi(crash) : -1))
					raise(SIGKILL);
			}
#endif
			if (txn)
			{
				/*
				 * Records and positions committed in Kafka; the batch's
				 * commit in PostgreSQL follows at the next round.
				 */
				relay_txn_commit(txn, b);
#ifdef EL_TEST_HOOKS
				{
					/* Test builds: kill -9 between the two commits (086_relay_exactly_once). */
					const char *crash = getenv("PG_EVENTLOG_TEST_RELAY_CRASH_AFTER_TXN");

					if (crash && produced == atoi(crash))
						raise(SIGKILL);
				}
#endif
			}
		}
		res = relay_poll_result(conn, &topics[next]);
		if (res == NULL)
			break;
		if (PQntuples(res) > 0)
		{
			pending = res;
			pending_topic = next;
			empty = 0;
		}
		else
		{
			PQclear(res);
			empty++;
		}
		next = (next + 1) % ntopics;
		if (empty < ntopics)
			continue;

		/*
		 * Every topic polled empty in a row: wait for every acknowledgement,
		 * commit it all, and the fetch positions (past rolled-back offsets
		 * after the last records).
		 */
		empty = 0;
		relay_check(pipe, k, relay_kafka_wait(k));
		relay_pipe_commit(pipe);
		relay_pipe_commit_fetched(pipe);
		if (exit_at_end && caught_up(conn, names, group))
			break;
		if (cli_interrupted)
			break;

		/*
		 * Idle: one topic waits in its poll's long poll; several wait
		 * together, then poll each again.
		 */
		if (ntopics == 1)
		{
			relay_poll_start(conn, &topics[0], group, member, wait, session_timeout);
			res = relay_poll_result(conn, &topics[0]);
			if (res == NULL)
				break;
			if (PQntuples(res) > 0)
			{
				pending = res;
				pending_topic = 0;
			}
			else
				PQclear(res);
		}
		else
			await_topics(conn, names, group, member, wait_ms);
	}

	/*
	 * Polled but not produced: not committed either, the next run polls
	 * them again.  What was produced is acknowledged and committed, even
	 * after SIGTERM, so that a stop re-sends nothing.
	 */
	if (pending)
		PQclear(pending);
	relay_check(pipe, k, relay_kafka_wait(k));
	relay_pipe_commit(pipe);
	leave(conn, topics, ntopics, group, member);
	relay_kafka_close(k);
	PQfinish(conn);
	free(names);
	return 0;
}
