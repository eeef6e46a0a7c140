/*-------------------------------------------------------------------------
 *
 * topic.c
 *	  pg_eventlog topic create|list|describe|alter|delete: the topic
 *	  functions and views of the SQL API (docs/reference.md#topics).
 *
 * create and alter name only the settings given (named arguments), so
 * the extension's defaults apply to the others; "none" removes a limit.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void
topic_help(void)
{
	printf("usage: pg_eventlog topic create TOPIC [--partitions N] [SETTING]...\n"
		   "       pg_eventlog topic list\n"
		   "       pg_eventlog topic describe TOPIC\n"
		   "       pg_eventlog topic alter TOPIC [--partitions N] [SETTING]...\n"
		   "       pg_eventlog topic delete TOPIC [--if-exists]\n\n"
		   "Settings (create and alter):\n"
		   "  --partitions N             partitions (alter: only more)\n"
		   "  --retention DURATION       how long records are kept: 7d, 12h, 30m, 45s,\n"
		   "                             \"2 days 3 hours\", or none (forever)\n"
		   "  --retention-bytes SIZE     size limit per partition (1GB, 512MB, ...) or none\n"
		   "  --segment-interval DURATION, --segment-bytes SIZE\n"
		   "                             when a partition's active segment rolls\n"
		   "  --format json|binary       the records' format (create only; default json)\n\n"
		   "Options:\n"
		   "  -d, --dbname=CONNINFO      database name or connection string\n"
		   "  --help                     print this help\n");
}

/* The settings of create and alter, as named SQL arguments. */
typedef struct TopicArgs
{
	char		sql[1024];
	const char *values[8];
	int			n;
} TopicArgs;

static void
add_arg(TopicArgs *a, const char *name, const char *cast, const char *value)
{
	size_t		len = strlen(a->sql);

	a->values[a->n] = value;
	a->n++;
	snprintf(a->sql + len, sizeof(a->sql) - len, ", %s => $%d::%s", name, a->n, cast);
}

static int
topic_create_alter(int argc, char **argv, bool create)
{
	static struct option opts[] = {
		{"partitions", required_argument, NULL, 'p'},
		{"retention", required_argument, NULL, 'r'},
		{"retention-bytes", required_argument, NULL, 'b'},
		{"segment-interval", required_argument, NULL, 'i'},
		{"segment-bytes", required_argument, NULL, 's'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	const char *cmd = create ? "topic create" : "topic alter";
	TopicArgs	a;
	const char *topic;
	PGconn	   *conn;
	int			c;
	bool		any = false;
	char	   *num;

	memset(&a, 0, sizeof(a));
	snprintf(a.sql, sizeof(a.sql), "SELECT eventlog.%s(topic => $1::text",
			 create ? "create_topic" : "alter_topic");
	a.n = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:", opts, NULL)) != -1)
	{
		any = true;
		switch (c)
		{
			case 'd':
				cli_conninfo = optarg;
				any = false;
				break;
			case 'p':
				num = cli_malloc(32);
				snprintf(num, 32, "%lld", (long long) cli_int_arg(cmd, "--partitions", optarg, 1, 2147483647));
				add_arg(&a, "partitions", "integer", num);
				break;
			case 'r':
			case 'i':
				if (strcmp(optarg, "none") == 0 && c == 'r')
					add_arg(&a, "retention", "interval", create ? NULL : "-1 second");
				else
					add_arg(&a, c == 'r' ? "retention" : "segment_interval", "interval",
							cli_interval_arg(cmd, c == 'r' ? "--retention" : "--segment-interval", optarg));
				break;
			case 'b':
			case 's':
				if (strcmp(optarg, "none") == 0 && c == 'b')
					add_arg(&a, "retention_bytes", "bigint", create ? NULL : "-1");
				else
				{
					num = cli_malloc(32);
					snprintf(num, 32, "%lld", (long long) cli_bytes_arg(cmd, c == 'b' ? "--retention-bytes" : "--segment-bytes", optarg));
					add_arg(&a, c == 'b' ? "retention_bytes" : "segment_bytes", "bigint", num);
				}
				break;
			case 'f':
				if (!create)
					cli_usage(cmd, "a topic's format cannot change");
				add_arg(&a, "format", "text", optarg);
				break;
			default:
				cli_bad_option(cmd, c, argv);
		}
	}
	topic = cli_require_topic(cmd, argc, argv);
	if (!create && !any)
		cli_usage(cmd, "nothing to change: give at least one setting");
	a.values[0] = topic;
	strncat(a.sql, ")", sizeof(a.sql) - strlen(a.sql) - 1);

	conn = cli_connect();
	PQclear(cli_query(conn, a.sql, a.n, a.values));
	PQfinish(conn);
	return 0;
}

static int
topic_list(int argc, char **argv)
{
	static struct option opts[] = {
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	static const char *const header[] = {"TOPIC", "PARTITIONS", "RECORDS", "BYTES",
	"RETENTION", "RETENTION_BYTES", "FORMAT", "OWNER"};
	PGconn	   *conn;
	PGresult   *res;
	CliTable	t;
	int			c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:", opts, NULL)) != -1)
	{
		if (c == 'd')
			cli_conninfo = optarg;
		else
			cli_bad_option("topic list", c, argv);
	}
	if (optind < argc)
		cli_usage("topic list", "unexpected argument \"%s\"", argv[optind]);
	conn = cli_connect();
	res = cli_query(conn,
					"SELECT t.topic, t.partitions, t.records, t.bytes,"
					" coalesce(t.retention::text, 'none'), coalesce(t.retention_bytes::text, 'none'),"
					" t.format, t.owner::text"
					" FROM eventlog.topics t ORDER BY t.topic COLLATE \"C\"", 0, NULL);
	cli_table_init(&t, 8, header);
	cli_table_add_result(&t, res);
	cli_table_print(&t);
	PQclear(res);
	PQfinish(conn);
	return 0;
}

static int
topic_describe(int argc, char **argv)
{
	static struct option opts[] = {
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	static const char *const header[] = {"PARTITION", "LOG_START", "HIGH_WATERMARK",
		"STABLE_OFFSET", "STABLE_OFFSET_HOLDER", "RECORDS", "BYTES", "SEGMENTS",
	"NEWEST_APPEND_TIME"};
	const char *topic;
	PGconn	   *conn;
	PGresult   *res;
	CliTable	t;
	int			c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:", opts, NULL)) != -1)
	{
		if (c == 'd')
			cli_conninfo = optarg;
		else
			cli_bad_option("topic describe", c, argv);
	}
	topic = cli_require_topic("topic describe", argc, argv);
	conn = cli_connect();
	res = cli_query(conn,
					"SELECT t.topic, t.partitions, t.format, coalesce(t.retention::text, 'none'),"
					" coalesce(t.retention_bytes::text, 'none'), t.segment_interval, t.segment_bytes,"
					" t.owner::text, t.created_at"
					" FROM eventlog.topics t WHERE t.topic OPERATOR(pg_catalog.=) $1",
					1, &topic);
	if (PQntuples(res) == 0)
		cli_error("topic \"%s\" does not exist", topic);
	printf("topic %s: %s partitions, format %s, retention %s, retention bytes %s,\n"
		   "  segment interval %s, segment bytes %s, owner %s, created %s\n\n",
		   PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2),
		   PQgetvalue(res, 0, 3), PQgetvalue(res, 0, 4), PQgetvalue(res, 0, 5),
		   PQgetvalue(res, 0, 6), PQgetvalue(res, 0, 7), PQgetvalue(res, 0, 8));
	PQclear(res);
	res = cli_query(conn,
					"SELECT p.partition, p.log_start_offset, p.high_watermark, p.last_stable_offset,"
					" p.stable_offset_holder_pid, p.records, p.bytes, p.segments, p.newest_append_time"
					" FROM eventlog.partitions p WHERE p.topic OPERATOR(pg_catalog.=) $1"
					" ORDER BY p.partition", 1, &topic);
	cli_table_init(&t, 9, header);
	cli_table_add_result(&t, res);
	cli_table_print(&t);
	PQclear(res);
	PQfinish(conn);
	return 0;
}

static int
topic_delete(int argc, char **argv)
{
	static struct option opts[] = {
		{"if-exists", no_argument, NULL, 'x'},
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	const char *values[2];
	PGconn	   *conn;
	int			c;

	values[1] = "false";
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:", opts, NULL)) != -1)
	{
		if (c == 'd')
			cli_conninfo = optarg;
		else if (c == 'x')
			values[1] = "true";
		else
			cli_bad_option("topic delete", c, argv);
	}
	values[0] = cli_require_topic("topic delete", argc, argv);
	conn = cli_connect();
	PQclear(cli_query(conn, "SELECT eventlog.drop_topic($1::text, $2::boolean)", 2, values));
	PQfinish(conn);
	return 0;
}

int
cmd_topic(int argc, char **argv)
{
	const char *sub;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-?") == 0)
	{
		if (argc < 2)
			cli_usage("topic", "a topic command is required: create, list, describe, alter or delete");
		topic_help();
		return 0;
	}
	if (cli_is_help(argc - 1, argv + 1))
	{
		topic_help();
		return 0;
	}
	sub = argv[1];
	argc--;
	argv++;
	if (strcmp(sub, "create") == 0)
		return topic_create_alter(argc, argv, true);
	if (strcmp(sub, "alter") == 0)
		return topic_create_alter(argc, argv, false);
	if (strcmp(sub, "list") == 0)
		return topic_list(argc, argv);
	if (strcmp(sub, "describe") == 0)
		return topic_describe(argc, argv);
	if (strcmp(sub, "delete") == 0)
		return topic_delete(argc, argv);
	cli_usage("topic", "unknown topic command \"%s\"", sub);
}
