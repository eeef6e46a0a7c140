/*-------------------------------------------------------------------------
 *
 * relay_from_kafka.c
 *	  pg_eventlog relay T [T...] --from-kafka BOOTSTRAP: consumes the Kafka
 *	  topics with librdkafka (read_committed) and stores every record into
 *	  the binary topic of the same name and the partition of the same
 *	  number here, keys, values, headers and timestamps byte for byte, in
 *	  Kafka's order.  -e ends once every partition reached the high
 *	  watermark it had when the relay started; otherwise it follows.
 *
 * Exactly once into PostgreSQL: the Kafka positions live here, in
 * eventlog.kafka_source_offsets, and each round stores its records and the
 * positions after them in one transaction (relay_from_kafka_pg.c).  On
 * start the relay reads those positions and assigns the partitions at them
 * (rd_kafka_assign, no group rebalance): whatever a crash interrupted
 * either committed, records with positions, or left nothing.  Kafka's
 * group offsets (--group) are written after each transaction for
 * monitoring only and never read.  Positions are keyed by the source, by
 * default the Kafka cluster's id (--source names it otherwise).
 *
 *-------------------------------------------------------------------------
 */
#include "relay.h"
#include "relay_from_kafka.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#define KAFKA_TIMEOUT_MS 10000
/* A round stores at most this many records or bytes in one transaction. */
#define ROUND_RECORDS 10000
#define ROUND_BYTES (32 * 1024 * 1024)
/* How often new partitions and deleted topics are looked for. */
#define METADATA_SECONDS 3

typedef struct FkRelay
{
	rd_kafka_t *rk;
	PGconn	   *conn;
	const char *source;
	const char *group;
	FkTopic    *topics;
	int			ntopics;
	bool		exit_at_end;
	int64_t		npending;
	size_t		pending_bytes;
} FkRelay;

static void
fk_help(void)
{
	printf("usage: pg_eventlog relay TOPIC [TOPIC]... --from-kafka BOOTSTRAP [OPTION]...\n\n"
		   "Stores every record of the Apache Kafka topics into the binary topics of the\n"
		   "same names here: the same partition numbers, in order, keys, values, headers\n"
		   "and timestamps byte for byte, committed Kafka transactions only.  Exactly\n"
		   "once: the Kafka positions are stored here (eventlog.kafka_source_positions)\n"
		   "in the transaction of the records.  Missing topics are created (binary, with\n"
		   "Kafka's partition count); partitions Kafka adds are added.  Without -e it\n"
		   "follows the topics until Ctrl-C or SIGTERM, which end after storing what was\n"
		   "received.\n\n"
		   "Options:\n"
		   "  -b, --from-kafka=BOOTSTRAP  Kafka's bootstrap servers (host:port,...)\n"
		   "  -s, --source=NAME           names the Kafka cluster in the stored positions\n"
		   "                              (default: its cluster id)\n"
		   "  -g, --group=GROUP           also commit the positions to Kafka as GROUP's\n"
		   "                              (for Kafka's monitoring; never read back)\n"
		   "  -X PROPERTY=VALUE           a librdkafka consumer property (repeatable)\n"
		   "  -e                          exit once every record Kafka had at start is stored\n"
		   "  -d, --dbname=CONNINFO       database name or connection string\n"
		   "  --help                      print this help\n");
}

/*
 * SIGINT/SIGTERM only set the flag: unlike the other commands, nothing is
 * cancelled, so that a transaction in progress commits, and the loop then
 * stores what was received and exits 0.
 */
static void
fk_signal(int sig)
{
	(void) sig;
	cli_interrupted = 1;
}

static void
set_property(rd_kafka_conf_t *conf, const char *name, const char *value)
{
	char		errstr[512];

	if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
		cli_usage("relay", "-X %s=%s: %s", name, value, errstr);
}

/* The properties the relay's guarantee rests on: -X cannot change them. */
static const char *const fixed_properties[] = {
	"isolation.level", "enable.auto.commit", "enable.auto.offset.store",
	"enable.partition.eof", "group.id", "bootstrap.servers", "metadata.broker.list",
	NULL
};

static rd_kafka_t *
fk_open(const char *bootstrap, const char *group, int nprops, char **props)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char		errstr[512];
	rd_kafka_t *rk;

	set_property(conf, "bootstrap.servers", bootstrap);
	set_property(conf, "client.id", "pg_eventlog-relay");
	set_property(conf, "log_level", "0");
	/* Aborted transactions' records never reach PostgreSQL. */
	set_property(conf, "isolation.level", "read_committed");
	set_property(conf, "enable.auto.commit", "false");
	set_property(conf, "enable.auto.offset.store", "false");
	/* -e: a partition's end is seen even when its last records were aborted. */
	set_property(conf, "enable.partition.eof", "true");
	/*
	 * A stored position Kafka no longer has (retention deleted records not
	 * yet copied, the topic was recreated) stops the relay instead of
	 * silently skipping: -X auto.offset.reset=earliest chooses to skip.
	 */
	set_property(conf, "auto.offset.reset", "error");
	/* librdkafka's consumer needs a group id even for assign(). */
	set_property(conf, "group.id", group ? group : "pg_eventlog-relay");
	for (int i = 0; i < nprops; i++)
	{
		char	   *eq = strchr(props[i], '=');

		if (eq == NULL || eq == props[i])
			cli_usage("relay", "-X needs PROPERTY=VALUE, not \"%s\"", props[i]);
		*eq = '\0';
		for (const char *const *f = fixed_properties; *f; f++)
			if (strcmp(props[i], *f) == 0)
				cli_usage("relay", "-X %s cannot be set: the relay's guarantee depends on it", props[i]);
		set_property(conf, props[i], eq + 1);
		*eq = '=';
	}
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (rk == NULL)
		cli_error("cannot create a Kafka consumer: %s", errstr);
	rd_kafka_poll_set_consumer(rk);
	return rk;
}

static const rd_kafka_metadata_topic_t *
find_topic(const rd_kafka_metadata_t *md, const char *name)
{
	for (int i = 0; i < md->topic_cnt; i++)
		if (strcmp(md->topics[i].topic, name) == 0)
			return &md->topics[i];
	return NULL;
}

/*
 * Assigns partitions FROM and up of T at their stored positions (the
 * beginning where none is stored), and for -e notes each one's high
 * watermark now: the end the relay stops at.
 */
static void
assign_from(FkRelay *r, FkTopic *t, int from)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(t->npartitions - from);
	rd_kafka_error_t *error;

	for (int i = from; i < t->npartitions; i++)
	{
		FkPart	   *p = &t->parts[i];

		int64_t		lo,
					hi;
		rd_kafka_resp_err_t err;

		rd_kafka_topic_partition_list_add(l, t->name, i)->offset =
			p->stored ? p->next : RD_KAFKA_OFFSET_BEGINNING;
		err = rd_kafka_query_watermark_offsets(r->rk, t->name, i, &lo, &hi, KAFKA_TIMEOUT_MS);
		if (err)
			cli_error("cannot read the offsets of Kafka topic \"%s\" partition %d: %s",
					  t->name, i, rd_kafka_err2str(err));

		/*
		 * Kafka's log ends before what was copied: the topic was recreated
		 * (or truncated).  Resuming would skip its first records.
		 */
		if (p->stored && p->next > hi)
			cli_error("Kafka topic \"%s\" partition %d ends at offset %lld, before the stored position %lld: "
					  "it was recreated or truncated (eventlog.set_kafka_source_position moves the position)",
					  t->name, i, (long long) hi, (long long) p->next);
		/* -e: Kafka's end now (Kafka transactions open then: their end). */
		p->target = hi;
		p->caught_up = (p->stored ? p->next : lo) >= hi;
	}
	error = rd_kafka_incremental_assign(r->rk, l);
	if (error)
		cli_error("cannot assign Kafka topic \"%s\": %s", t->name, rd_kafka_error_string(error));
	rd_kafka_topic_partition_list_destroy(l);
}

/* Stores what is pending; then, with --group, tells Kafka (async, unread). */
static void
store(FkRelay *r)
{
	rd_kafka_topic_partition_list_t *l;

	if (r->npending == 0)
		return;
	fk_pg_store(r->conn, r->source, r->topics, r->ntopics);
	r->npending = 0;
	r->pending_bytes = 0;
	if (r->group == NULL)
		return;
	l = rd_kafka_topic_partition_list_new(8);
	for (int i = 0; i < r->ntopics; i++)
		for (int j = 0; j < r->topics[i].npartitions; j++)
			if (r->topics[i].parts[j].stored)
				rd_kafka_topic_partition_list_add(l, r->topics[i].name, j)->offset =
					r->topics[i].parts[j].stored_next;
	if (l->cnt > 0)
		(void) rd_kafka_commit(r->rk, l, 1);
	rd_kafka_topic_partition_list_destroy(l);
}

/*
 * New partitions (stored here first, then assigned) and deleted topics
 * (what was received is stored, then the relay stops: a topic recreated
 * under the same name would restart its offsets).
 */
static void
check_metadata(FkRelay *r)
{
	const rd_kafka_metadata_t *md;

	if (rd_kafka_metadata(r->rk, 1, NULL, &md, KAFKA_TIMEOUT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return;					/* unreachable for now: librdkafka retries */
	for (int i = 0; i < r->ntopics; i++)
	{
		FkTopic    *t = &r->topics[i];
		const rd_kafka_metadata_topic_t *mt = find_topic(md, t->name);
		int			old = t->npartitions;

		if (mt == NULL || mt->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
		{
			store(r);
			cli_error("Kafka topic \"%s\" no longer exists (every record received before was stored)", t->name);
		}
		if (mt->err || mt->partition_cnt <= old)
			continue;
		store(r);
		fk_pg_topic(r->conn, t, mt->partition_cnt, false);
		fk_pg_load_positions(r->conn, r->source, t, old);
		assign_from(r, t, old);
	}
	rd_kafka_metadata_destroy(md);
}

static FkPart *
find_part(FkRelay *r, const rd_kafka_message_t *m, const char **name)
{
	const char *topic = m->rkt ? rd_kafka_topic_name(m->rkt) : NULL;

	*name = topic;
	if (topic == NULL)
		return NULL;
	for (int i = 0; i < r->ntopics; i++)
		if (strcmp(r->topics[i].name, topic) == 0 &&
			m->partition >= 0 && m->partition < r->topics[i].npartitions)
			return &r->topics[i].parts[m->partition];
	return NULL;
}

/* A Kafka error: transient ones librdkafka retries; others end the relay. */
static void
kafka_error(FkRelay *r, const rd_kafka_message_t *m, FkPart *p, const char *topic)
{
	char		fatal[512];

	if (rd_kafka_fatal_error(r->rk, fatal, sizeof(fatal)))
	{
		store(r);
		cli_error("Kafka consumer failed: %s", fatal);
	}
	switch (m->err)
	{
		case RD_KAFKA_RESP_ERR__TRANSPORT:
		case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
		case RD_KAFKA_RESP_ERR__RESOLVE:
		case RD_KAFKA_RESP_ERR__TIMED_OUT:
		case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
		case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
		case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
		case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
		case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
			return;
		default:
			break;
	}
	store(r);
	if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
		m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE)
		cli_error("Kafka topic \"%s\" partition %d no longer has offset %lld, where the relay resumes "
				  "(retention deleted records not copied yet, or the topic was recreated): "
				  "-X auto.offset.reset=earliest skips to the first record left",
				  topic ? topic : "?", (int) m->partition, (long long) (p ? p->next : -1));
	if (m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
		m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
		m->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION)
		cli_error("Kafka topic \"%s\" no longer exists (every record received before was stored)",
				  topic ? topic : "?");
	if (topic)
		cli_error("cannot consume Kafka topic \"%s\" partition %d: %s", topic, (int) m->partition,
				  rd_kafka_message_errstr(m));
	cli_error("cannot consume from Kafka: %s", rd_kafka_message_errstr(m));
}

static void
take(FkRelay *r, const rd_kafka_message_t *m)
{
	const char *topic;
	FkPart	   *p = find_part(r, m, &topic);
	rd_kafka_headers_t *hdrs = NULL;
	int			nh = 0;
	const char **hnames = NULL;
	const void **hvalues = NULL;
	size_t	   *hlens = NULL;

	if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
	{
		if (p && m->offset >= p->target)
			p->caught_up = true;
		return;
	}
	if (m->err)
	{
		kafka_error(r, m, p, topic);	/* returns for a transient one */
		return;
	}
	if (p == NULL)
		return;

	/*
	 * At or after the next offset only: a record below it is stored
	 * already.  Above it is a gap Kafka made (compaction, transaction
	 * markers, aborted records), not a loss.
	 */
	if (p->next >= 0 && m->offset < p->next)
		return;
	if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		nh = (int) rd_kafka_header_cnt(hdrs);
		hnames = cli_malloc(sizeof(char *) * (nh + 1));
		hvalues = cli_malloc(sizeof(void *) * (nh + 1));
		hlens = cli_malloc(sizeof(size_t) * (nh + 1));
		for (int i = 0; i < nh; i++)
			if (rd_kafka_header_get_all(hdrs, i, &hnames[i], &hvalues[i], &hlens[i]))
				cli_error("cannot read a header of offset %lld of Kafka topic \"%s\" partition %d",
						  (long long) m->offset, topic, (int) m->partition);
	}
	fk_pg_add_message(p, m->key, m->key_len, m->payload, m->len, nh,
					  hnames, hvalues, hlens, rd_kafka_message_timestamp(m, NULL));
	free(hnames);
	free((void *) hvalues);
	free(hlens);
	p->next = m->offset + 1;
	if (p->next >= p->target)
		p->caught_up = true;
	r->npending++;
	r->pending_bytes += m->len + m->key_len + 64;
}

static bool
all_caught_up(FkRelay *r)
{
	for (int i = 0; i < r->ntopics; i++)
		for (int j = 0; j < r->topics[i].npartitions; j++)
			if (!r->topics[i].parts[j].caught_up)
				return false;
	return true;
}

int
cmd_relay_from_kafka(int argc, char **argv)
{
	static struct option opts[] = {
		{"help", no_argument, NULL, '?'},
		{"from-kafka", required_argument, NULL, 'b'},
		{"source", required_argument, NULL, 's'},
		{"group", required_argument, NULL, 'g'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	FkRelay		r = {0};
	const char *bootstrap = NULL;
	char	  **props = cli_malloc(sizeof(char *) * argc);
	int			nprops = 0;
	const rd_kafka_metadata_t *md;
	rd_kafka_resp_err_t err;
	struct sigaction sa;
	time_t		last_metadata;
	int64_t		round_records;
	int			opt;

	if (cli_is_help(argc, argv))
	{
		fk_help();
		return 0;
	}
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":d:g:b:s:X:e", opts, NULL)) != -1)
	{
		switch (opt)
		{
			case 'd':
				cli_conninfo = optarg;
				break;
			case 'g':
				r.group = optarg;
				break;
			case 'b':
				bootstrap = optarg;
				break;
			case 's':
				r.source = optarg;
				break;
			case 'X':
				props[nprops++] = optarg;
				break;
			case 'e':
				r.exit_at_end = true;
				break;
			default:
				cli_bad_option("relay", opt, argv);
		}
	}
	if (optind >= argc)
		cli_usage("relay", "a topic is required");
	if (bootstrap == NULL || bootstrap[0] == '\0')
		cli_usage("relay", "--from-kafka needs Kafka's bootstrap servers");
	if (r.group != NULL && r.group[0] == '\0')
		cli_usage("relay", "--group must not be empty");
	if (r.source != NULL && (r.source[0] == '\0' || strlen(r.source) > 200))
		cli_usage("relay", "--source must be 1 to 200 characters");
	r.ntopics = argc - optind;
	r.topics = cli_malloc(sizeof(FkTopic) * r.ntopics);
	memset(r.topics, 0, sizeof(FkTopic) * r.ntopics);
	for (int i = 0; i < r.ntopics; i++)
	{
		r.topics[i].name = argv[optind + i];
		for (int j = 0; j < i; j++)
			if (strcmp(r.topics[j].name, r.topics[i].name) == 0)
				cli_usage("relay", "topic \"%s\" is named twice", r.topics[i].name);
	}

	r.rk = fk_open(bootstrap, r.group, nprops, props);
	r.conn = cli_connect();
	fk_pg_init(r.conn);
	err = rd_kafka_metadata(r.rk, 1, NULL, &md, KAFKA_TIMEOUT_MS);
	if (err)
		cli_error("cannot reach Kafka at %s: %s", bootstrap, rd_kafka_err2str(err));
	if (r.source == NULL)
	{
		r.source = rd_kafka_clusterid(r.rk, KAFKA_TIMEOUT_MS);
		if (r.source == NULL || r.source[0] == '\0')
			cli_error("Kafka at %s reports no cluster id: name the source with --source", bootstrap);
	}
	for (int i = 0; i < r.ntopics; i++)
	{
		const rd_kafka_metadata_topic_t *mt = find_topic(md, r.topics[i].name);

		if (mt == NULL || mt->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
			cli_error("Kafka topic \"%s\" does not exist", r.topics[i].name);
		if (mt->err)
			cli_error("Kafka topic \"%s\" is not usable: %s", r.topics[i].name, rd_kafka_err2str(mt->err));
		fk_pg_topic(r.conn, &r.topics[i], mt->partition_cnt, true);
		fk_pg_load_positions(r.conn, r.source, &r.topics[i], 0);
	}
	rd_kafka_metadata_destroy(md);
	for (int i = 0; i < r.ntopics; i++)
		assign_from(&r, &r.topics[i], 0);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fk_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	round_records = ROUND_RECORDS;
#ifdef EL_TEST_HOOKS
	/* Test builds: small rounds, so that a kill -9 lands between two. */
	if (getenv("PG_EVENTLOG_TEST_ROUND_RECORDS"))
		round_records = atoi(getenv("PG_EVENTLOG_TEST_ROUND_RECORDS"));
#endif
	last_metadata = time(NULL);
	while (!cli_interrupted)
	{
		rd_kafka_message_t *m;

		if (time(NULL) - last_metadata >= METADATA_SECONDS)
		{
			check_metadata(&r);
			last_metadata = time(NULL);
		}
		/* While records are pending, take what is there, then store. */
		m = rd_kafka_consumer_poll(r.rk, r.npending > 0 ? 0 : 200);
		if (m == NULL)
		{
			if (r.npending > 0)
				store(&r);
			else if (r.exit_at_end && all_caught_up(&r))
				break;
			continue;
		}
		take(&r, m);
		rd_kafka_message_destroy(m);
		if (r.npending >= round_records || r.pending_bytes >= ROUND_BYTES)
			store(&r);
	}
	store(&r);
	PQfinish(r.conn);

	/*
	 * Nothing of Kafka's needs closing: the positions are here, and the
	 * consumer never joined its group.  --group's last offsets are sent
	 * synchronously.  No rd_kafka_destroy: librdkafka 2.0.2 sometimes
	 * asserts in it (rd_kafka_broker_destroy_final, thrd_is_current) after
	 * watermark queries, which would turn a clean stop into SIGABRT.
	 */
	if (r.group)
	{
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);

		for (int i = 0; i < r.ntopics; i++)
			for (int j = 0; j < r.topics[i].npartitions; j++)
				if (r.topics[i].parts[j].stored)
					rd_kafka_topic_partition_list_add(l, r.topics[i].name, j)->offset =
						r.topics[i].parts[j].stored_next;
		if (l->cnt > 0)
			(void) rd_kafka_commit(r.rk, l, 0);
		rd_kafka_topic_partition_list_destroy(l);
	}
	return 0;
}
