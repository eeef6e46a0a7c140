/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  pg_eventlog stats: a top-like view, every --interval seconds, of the
 *	  records/s produced to each topic (its high watermarks' growth), and per
 *	  group and topic the records/s committed and the lag.  Two samples of
 *	  the eventlog.partitions and eventlog.consumer_groups views; nothing
 *	  is counted in the server for it.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Sample
{
	int			n;
	char	  **name;			/* "topic" or "group\ttopic" */
	int64_t    *value;			/* high watermarks, or committed offsets */
	int64_t    *lag;
} Sample;

static void
stats_help(void)
{
	printf("usage: pg_eventlog stats [--interval SECONDS] [--count N]\n\n"
		   "Prints, every interval (default 2 s), the records/s produced to each\n"
		   "topic, and per group and topic the records/s committed and the lag, until\n"
		   "Ctrl-C or N reports.\n\n"
		   "  -d, --dbname=CONNINFO   database name or connection string\n"
		   "  --help                  print this help\n");
}

static void
take(PGconn *conn, Sample *topics, Sample *groups)
{
	PGresult   *res;

	res = cli_query(conn,
					"SELECT p.topic, pg_catalog.sum(p.high_watermark)::bigint, 0"
					" FROM eventlog.partitions p GROUP BY p.topic ORDER BY p.topic COLLATE \"C\"", 0, NULL);
	topics->n = PQntuples(res);
	topics->name = cli_malloc(sizeof(char *) * topics->n);
	topics->value = cli_malloc(sizeof(int64_t) * topics->n);
	topics->lag = cli_malloc(sizeof(int64_t) * topics->n);
	for (int i = 0; i < topics->n; i++)
	{
		topics->name[i] = cli_strdup(PQgetvalue(res, i, 0));
		topics->value[i] = strtoll(PQgetvalue(res, i, 1), NULL, 10);
		topics->lag[i] = 0;
	}
	PQclear(res);
	res = cli_query(conn,
					"SELECT g.group_name || E'\\t' || g.topic, pg_catalog.sum(g.committed_offset)::bigint,"
					" pg_catalog.sum(g.lag)::bigint"
					" FROM eventlog.consumer_groups g GROUP BY g.group_name, g.topic"
					" ORDER BY g.group_name COLLATE \"C\", g.topic COLLATE \"C\"", 0, NULL);
	groups->n = PQntuples(res);
	groups->name = cli_malloc(sizeof(char *) * groups->n);
	groups->value = cli_malloc(sizeof(int64_t) * groups->n);
	groups->lag = cli_malloc(sizeof(int64_t) * groups->n);
	for (int i = 0; i < groups->n; i++)
	{
		groups->name[i] = cli_strdup(PQgetvalue(res, i, 0));
		groups->value[i] = strtoll(PQgetvalue(res, i, 1), NULL, 10);
		groups->lag[i] = strtoll(PQgetvalue(res, i, 2), NULL, 10);
	}
	PQclear(res);
}

static void
release(Sample *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->name[i]);
	free(s->name);
	free(s->value);
	free(s->lag);
}

/* The rate of name between two samples (0 for a name new in the later). */
static double
rate(Sample *before, Sample *after, int i, double seconds)
{
	for (int j = 0; j < before->n; j++)
		if (strcmp(before->name[j], after->name[i]) == 0)
			return (after->value[i] - before->value[j]) / seconds;
	return 0;
}

int
cmd_stats(int argc, char **argv)
{
	static struct option opts[] = {
		{"interval", required_argument, NULL, 'i'},
		{"count", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	int64_t		interval = 2;
	int64_t		count = -1;
	PGconn	   *conn;
	Sample		t0,
				g0;
	int			c;

	if (cli_is_help(argc, argv))
	{
		stats_help();
		return 0;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:", opts, NULL)) != -1)
	{
		if (c == 'd')
			cli_conninfo = optarg;
		else if (c == 'i')
			interval = cli_int_arg("stats", "--interval", optarg, 1, 3600);
		else if (c == 'n')
			count = cli_int_arg("stats", "--count", optarg, 1, INT64_MAX);
		else
			cli_bad_option("stats", c, argv);
	}
	if (optind < argc)
		cli_usage("stats", "unexpected argument \"%s\"", argv[optind]);
	conn = cli_connect();
	cli_install_interrupt(conn);
	take(conn, &t0, &g0);
	for (int64_t k = 0; (count < 0 || k < count) && !cli_interrupted; k++)
	{
		struct timespec ts = {(time_t) interval, 0};
		static const char *const th[] = {"TOPIC", "IN/S"};
		static const char *const gh[] = {"GROUP", "TOPIC", "OUT/S", "LAG"};
		Sample		t1,
					g1;
		CliTable	t;
		char		buf[4][64];

		if (nanosleep(&ts, NULL) != 0 && cli_interrupted)
			break;
		take(conn, &t1, &g1);
		cli_table_init(&t, 2, th);
		for (int i = 0; i < t1.n; i++)
		{
			snprintf(buf[0], sizeof(buf[0]), "%.1f", rate(&t0, &t1, i, (double) interval));
			cli_table_add(&t, (const char *const[]) {t1.name[i], buf[0]});
		}
		cli_table_print(&t);
		cli_puts("\n");
		cli_table_init(&t, 4, gh);
		for (int i = 0; i < g1.n; i++)
		{
			char	   *tab = strchr(g1.name[i], '\t');

			snprintf(buf[0], sizeof(buf[0]), "%.*s", (int) (tab - g1.name[i]), g1.name[i]);
			snprintf(buf[1], sizeof(buf[1]), "%.1f", rate(&g0, &g1, i, (double) interval));
			snprintf(buf[2], sizeof(buf[2]), "%lld", (long long) g1.lag[i]);
			cli_table_add(&t, (const char *const[]) {buf[0], tab + 1, buf[1], buf[2]});
		}
		cli_table_print(&t);
		cli_puts("\n");
		cli_flush();
		release(&t0);
		release(&g0);
		t0 = t1;
		g0 = g1;
	}
	PQfinish(conn);
	return 0;
}
