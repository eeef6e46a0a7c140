/*-------------------------------------------------------------------------
 *
 * group.c
 *	  pg_eventlog group list|describe|reset|delete: consumer groups as
 *	  kafka-consumer-groups shows and moves them, over the
 *	  eventlog.consumer_groups view, eventlog.seek and eventlog.delete_group
 *	  (docs/consumer-groups.md).
 *
 * A group in pg_eventlog has positions per topic; a group name with
 * positions in several topics is one group here, as in Kafka.  reset
 * prints its plan and changes nothing without --execute; with it, every
 * partition of the plan moves in one transaction, or none does.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void
group_help(void)
{
	printf("usage: pg_eventlog group list\n"
		   "       pg_eventlog group describe GROUP\n"
		   "       pg_eventlog group reset GROUP --topic TOPIC[:P,P...] TARGET [--execute]\n"
		   "       pg_eventlog group delete GROUP [--topic TOPIC]\n\n"
		   "reset's TARGET (one of):\n"
		   "  --to-earliest        the log start offset\n"
		   "  --to-latest          the last stable offset\n"
		   "  --to-offset N        offset N (kept between log start and high watermark)\n"
		   "  --to-datetime TIME   the first offset appended at or after TIME (ISO 8601)\n"
		   "  --shift-by N         N offsets forward (negative: back) from the committed one\n"
		   "reset prints the plan and changes nothing unless --execute is given.\n"
		   "--topic may be repeated; without :P lists, every partition of the topic.\n\n"
		   "Options:\n"
		   "  -d, --dbname=CONNINFO   database name or connection string\n"
		   "  --help                  print this help\n");
}

static void
simple_opts(const char *cmd, int argc, char **argv)
{
	static struct option opts[] = {
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	int			c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:", opts, NULL)) != -1)
	{
		if (c == 'd')
			cli_conninfo = optarg;
		else
			cli_bad_option(cmd, c, argv);
	}
}

static int
group_list(int argc, char **argv)
{
	static const char *const header[] = {"GROUP", "TOPICS", "PARTITIONS", "LAG", "MEMBERS"};
	PGconn	   *conn;
	PGresult   *res;
	CliTable	t;

	simple_opts("group list", argc, argv);
	if (optind < argc)
		cli_usage("group list", "unexpected argument \"%s\"", argv[optind]);
	conn = cli_connect();
	res = cli_query(conn,
					"SELECT g.group_name, pg_catalog.string_agg(DISTINCT g.topic, ','),"
					" pg_catalog.count(*), pg_catalog.sum(g.lag),"
					" pg_catalog.count(DISTINCT g.owner_member)"
					" FROM eventlog.consumer_groups g GROUP BY g.group_name"
					" ORDER BY g.group_name COLLATE \"C\"", 0, NULL);
	cli_table_init(&t, 5, header);
	cli_table_add_result(&t, res);
	cli_table_print(&t);
	PQclear(res);
	PQfinish(conn);
	return 0;
}

static int
group_describe(int argc, char **argv)
{
	static const char *const header[] = {"TOPIC", "PARTITION", "COMMITTED", "HIGH_WATERMARK",
	"STABLE_OFFSET", "LAG", "LAG_TIME", "MEMBER", "LAST_COMMIT"};
	const char *group;
	PGconn	   *conn;
	PGresult   *res;
	CliTable	t;

	simple_opts("group describe", argc, argv);
	if (optind >= argc)
		cli_usage("group describe", "a group name is required");
	if (optind + 1 < argc)
		cli_usage("group describe", "unexpected argument \"%s\"", argv[optind + 1]);
	group = argv[optind];
	conn = cli_connect();
	res = cli_query(conn,
					"SELECT g.topic, g.partition, g.committed_offset, g.high_watermark,"
					" g.last_stable_offset, g.lag, pg_catalog.date_trunc('second', g.lag_time),"
					" g.owner_member, pg_catalog.date_trunc('second', g.last_commit)"
					" FROM eventlog.consumer_groups g WHERE g.group_name OPERATOR(pg_catalog.=) $1"
					" ORDER BY g.topic COLLATE \"C\", g.partition", 1, &group);
	if (PQntuples(res) == 0)
		cli_error("group \"%s\" has no positions in any topic you may consume", group);
	cli_table_init(&t, 9, header);
	cli_table_add_result(&t, res);
	cli_table_print(&t);
	PQclear(res);
	PQfinish(conn);
	return 0;
}

/* "TOPIC" or "TOPIC:1,2": the topic, and the partitions as "{1,2}" or NULL. */
static const char *
split_topic(char *spec, const char **parts)
{
	char	   *colon = strrchr(spec, ':');
	char	   *buf;
	size_t		n = 0;
	char	   *tok;
	char	   *save;

	*parts = NULL;
	if (colon == NULL)
		return spec;
	*colon = '\0';
	buf = cli_malloc(strlen(colon + 1) * 2 + 4);
	buf[n++] = '{';
	for (tok = strtok_r(colon + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		cli_int_arg("group reset", "--topic", tok, 0, 2147483647);
		n += sprintf(buf + n, "%s%s", n > 1 ? "," : "", tok);
	}
	if (n == 1)
		cli_usage("group reset", "no partition after \"%s:\"", spec);
	buf[n++] = '}';
	buf[n] = '\0';
	*parts = buf;
	return spec;
}

static int
group_reset(int argc, char **argv)
{
	static struct option opts[] = {
		{"topic", required_argument, NULL, 't'},
		{"to-earliest", no_argument, NULL, 'E'},
		{"to-latest", no_argument, NULL, 'L'},
		{"to-offset", required_argument, NULL, 'O'},
		{"to-datetime", required_argument, NULL, 'D'},
		{"shift-by", required_argument, NULL, 'S'},
		{"execute", no_argument, NULL, 'x'},
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	static const char *const header[] = {"GROUP", "TOPIC", "PARTITION", "CURRENT", "NEW"};
	const char *cmd = "group reset";
	char	  **topics = NULL;
	int			ntopics = 0;
	const char *mode = NULL;
	const char *arg = NULL;
	bool		execute = false;
	const char *group;
	PGconn	   *conn;
	CliTable	t;
	PGresult  **plans;
	int			c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:", opts, NULL)) != -1)
	{
		const char *m = NULL;

		switch (c)
		{
			case 'd':
				cli_conninfo = optarg;
				break;
			case 't':
				topics = cli_realloc(topics, sizeof(char *) * (ntopics + 1));
				topics[ntopics++] = optarg;
				break;
			case 'E':
				m = "earliest";
				break;
			case 'L':
				m = "latest";
				break;
			case 'O':
				cli_int_arg(cmd, "--to-offset", optarg, 0, INT64_MAX);
				m = "offset";
				break;
			case 'D':
				m = "datetime";
				break;
			case 'S':
				cli_int_arg(cmd, "--shift-by", optarg, INT64_MIN + 1, INT64_MAX);
				m = "shift";
				break;
			case 'x':
				execute = true;
				break;
			default:
				cli_bad_option(cmd, c, argv);
		}
		if (m)
		{
			if (mode)
				cli_usage(cmd, "give one target: --to-earliest, --to-latest, --to-offset, --to-datetime or --shift-by");
			mode = m;
			arg = optarg;
		}
	}
	if (optind >= argc)
		cli_usage(cmd, "a group name is required");
	if (optind + 1 < argc)
		cli_usage(cmd, "unexpected argument \"%s\"", argv[optind + 1]);
	group = argv[optind];
	if (ntopics == 0)
		cli_usage(cmd, "--topic is required");
	if (mode == NULL)
		cli_usage(cmd, "a target is required: --to-earliest, --to-latest, --to-offset, --to-datetime or --shift-by");

	conn = cli_connect();
	/* One transaction: the plan and its execution see the same positions. */
	cli_begin(conn);
	cli_table_init(&t, 5, header);
	plans = cli_malloc(sizeof(PGresult *) * ntopics);
	for (int i = 0; i < ntopics; i++)
	{
		const char *parts;
		const char *topic = split_topic(topics[i], &parts);
		const char *values[5] = {topic, group, parts, mode, arg};
		PGresult   *res;

		/* numeric: a large --shift-by is clamped, not a bigint overflow */
		res = cli_query(conn,
						"SELECT $2::text, $1::text, u.p, g.committed_offset,"
						" GREATEST(eventlog.log_start_offset($1, u.p), LEAST(eventlog.high_watermark($1, u.p),"
						"  CASE $4::text"
						"   WHEN 'earliest' THEN eventlog.log_start_offset($1, u.p)"
						"   WHEN 'latest' THEN eventlog.last_stable_offset($1, u.p)"
						"   WHEN 'offset' THEN $5::text::bigint"
						"   WHEN 'datetime' THEN eventlog.offset_for_time($1, u.p, $5::text::timestamptz)"
						"   ELSE coalesce(g.committed_offset, eventlog.log_start_offset($1, u.p))"
						"        + $5::text::numeric END))::bigint"
						" FROM pg_catalog.unnest(coalesce($3::integer[],"
						"   (SELECT pg_catalog.array_agg(s.p) FROM pg_catalog.generate_series(0,"
						"      (SELECT t.partitions - 1 FROM eventlog.topic_catalog t"
						"        WHERE t.name OPERATOR(pg_catalog.=) $1)) AS s(p)))) AS u(p)"
						" LEFT JOIN eventlog.consumer_groups g ON g.group_name OPERATOR(pg_catalog.=) $2"
						"   AND g.topic OPERATOR(pg_catalog.=) $1 AND g.partition OPERATOR(pg_catalog.=) u.p"
						" ORDER BY u.p",
						5, values);
		if (PQntuples(res) == 0)
		{
			/* Raises the server's message for an unknown topic or partition. */
			PQclear(cli_query(conn, "SELECT eventlog.high_watermark($1, 0)", 1, &topic));
			cli_error("topic \"%s\" does not exist", topic);
		}
		cli_table_add_result(&t, res);
		plans[i] = res;
	}
	cli_table_print(&t);
	if (!execute)
	{
		PQclear(PQexec(conn, "ROLLBACK"));
		fprintf(stderr, "pg_eventlog: dry run: nothing changed; add --execute to move the group\n");
		PQfinish(conn);
		return 0;
	}
	for (int i = 0; i < ntopics; i++)
	{
		for (int r = 0; r < PQntuples(plans[i]); r++)
		{
			const char *values[4] = {PQgetvalue(plans[i], r, 1), group,
			PQgetvalue(plans[i], r, 4), PQgetvalue(plans[i], r, 2)};

			PQclear(cli_query(conn, "SELECT eventlog.seek($1, $2, $3, $4::integer)", 4, values));
		}
		PQclear(plans[i]);
	}
	cli_commit(conn);
	PQfinish(conn);
	return 0;
}

static int
group_delete(int argc, char **argv)
{
	static struct option opts[] = {
		{"topic", required_argument, NULL, 't'},
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	const char *topic = NULL;
	const char *group;
	PGconn	   *conn;
	PGresult   *res;
	int			c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:", opts, NULL)) != -1)
	{
		if (c == 'd')
			cli_conninfo = optarg;
		else if (c == 't')
			topic = optarg;
		else
			cli_bad_option("group delete", c, argv);
	}
	if (optind >= argc)
		cli_usage("group delete", "a group name is required");
	if (optind + 1 < argc)
		cli_usage("group delete", "unexpected argument \"%s\"", argv[optind + 1]);
	group = argv[optind];
	conn = cli_connect();
	cli_begin(conn);
	res = cli_query(conn,
					"SELECT DISTINCT g.topic FROM eventlog.consumer_groups g"
					" WHERE g.group_name OPERATOR(pg_catalog.=) $1"
					" AND ($2::text IS NULL OR g.topic OPERATOR(pg_catalog.=) $2)",
					2, (const char *[]) {group, topic});
	if (PQntuples(res) == 0)
		cli_error("group \"%s\" has no positions%s%s%s", group,
				  topic ? " in topic \"" : "", topic ? topic : "", topic ? "\"" : "");
	for (int r = 0; r < PQntuples(res); r++)
		PQclear(cli_query(conn, "SELECT eventlog.delete_group($1, $2)", 2,
						  (const char *[]) {PQgetvalue(res, r, 0), group}));
	PQclear(res);
	cli_commit(conn);
	PQfinish(conn);
	return 0;
}

int
cmd_group(int argc, char **argv)
{
	const char *sub;

	if (argc < 2)
		cli_usage("group", "a group command is required: list, describe, reset or delete");
	if (cli_is_help(argc, argv))
	{
		group_help();
		return 0;
	}
	sub = argv[1];
	argc--;
	argv++;
	if (strcmp(sub, "list") == 0)
		return group_list(argc, argv);
	if (strcmp(sub, "describe") == 0)
		return group_describe(argc, argv);
	if (strcmp(sub, "reset") == 0)
		return group_reset(argc, argv);
	if (strcmp(sub, "delete") == 0)
		return group_delete(argc, argv);
	cli_usage("group", "unknown group command \"%s\"", sub);
}
