/*-------------------------------------------------------------------------
 *
 * consume.c
 *	  pg_eventlog consume TOPIC and tail TOPIC: kcat's consumer.  -o picks
 *	  where to start in each partition, -e ends at the end, -c after COUNT
 *	  records; otherwise it follows the topic with the long poll.  -g GROUP
 *	  consumes as a member of a consumer group and commits what it printed.
 *
 * Without a group, each round is one query reading every partition from
 * its position (eventlog.read, LATERAL over the partitions).  Each
 * partition's last stable offset is taken just before its read, so a
 * partition whose read returns nothing below that offset holds only
 * rolled-back offsets there and its position moves past them; the long
 * poll (eventlog._await_records) then sleeps until one partition has
 * records past its position: no busy loop, no CPU while idle.
 *
 * With a group, eventlog.poll as a named member (wait shorter than the
 * session timeout), and once the records are written and flushed, a
 * commit of what the poll returned (or, when -c cut a poll short, of each
 * partition's next offset): what was not printed is never committed.  The
 * member leaves at the end, and at once when the reader goes away.
 *
 * --read-dsn CONNINFO reads on another server, typically a hot standby of
 * -d's primary: every read and long poll goes there.  With -g, a standby
 * cannot write the group's positions (nor join it: a poll writes them), so
 * the consumer reads there from the positions committed on the primary,
 * as consume without a group does, and stores each partition's next offset
 * on the primary with eventlog.seek once what it read is written and
 * flushed: no membership (seek refuses partitions a member owns), at least
 * once (docs/consumer-groups.md, "Reading from a hot standby").
 *
 *-------------------------------------------------------------------------
 */
#include "format.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUND_RECORDS 10000

typedef struct Consumer
{
	PGconn	   *conn;			/* -d: the primary */
	PGconn	   *read_conn;		/* --read-dsn's, or conn */
	const char *topic;
	const char *group;
	char		member[128];
	int			nparts;			/* partitions read (all, or -p's one) */
	int		   *parts;
	int64_t    *pos;
	int64_t    *stored;			/* --read-dsn with -g: positions on the
								 * primary */
	bool		exit_at_end;
	int64_t		count;			/* -c, or -1 */
	int64_t		printed;
	Format		fmt;
} Consumer;

static void
consume_help(bool tail)
{
	if (tail)
	{
		printf("usage: pg_eventlog tail TOPIC [OPTION]...\n\n"
			   "Prints the records produced to TOPIC from now on, in every partition\n"
			   "(consume TOPIC -o end); ends on Ctrl-C.  Takes consume's -p, -c, -f and -J.\n\n"
			   "  -d, --dbname=CONNINFO   database name or connection string\n"
			   "  --read-dsn=CONNINFO     read there instead (a hot standby of -d's server)\n");
		return;
	}
	printf("usage: pg_eventlog consume TOPIC [OPTION]...\n\n"
		   "Prints the records of TOPIC, by default each value and a newline.\n"
		   "Without -e it follows the topic until Ctrl-C, waiting in the server.\n\n"
		   "Options:\n"
		   "  -p N           only partition N (default: all)\n"
		   "  -o OFFSET      where to start in each partition: beginning (default),\n"
		   "                 end, stored (the group's position, with -g), N (an offset),\n"
		   "                 -N (N before the end), @TIME (milliseconds since 1970 or\n"
		   "                 ISO 8601, e.g. @2026-01-31T12:00:00Z)\n"
		   "  -e             exit once every partition is read to its end\n"
		   "  -c COUNT       exit after COUNT records\n"
		   "  -f FORMAT      kcat's format: %%t topic, %%p partition, %%o offset, %%k key,\n"
		   "                 %%s value, %%h headers (name=value,...), %%T timestamp (ms),\n"
		   "                 %%K key length, %%S value length, %%%% a %%; \\n \\t escapes\n"
		   "  -J             one JSON object per record (topic, partition, offset, ts,\n"
		   "                 key, headers, payload)\n"
		   "  -g GROUP       consume as a member of GROUP from its committed positions,\n"
		   "                 committing what was printed\n"
		   "  -d, --dbname=CONNINFO   database name or connection string\n"
		   "  --read-dsn=CONNINFO     read there (a hot standby of -d's server); with -g,\n"
		   "                 positions are read from and stored on -d's server\n"
		   "  --help         print this help\n");
}

/* "{1,2,3}" of the partitions or positions. */
static char *
array_text(Consumer *c, bool positions, const bool *only)
{
	size_t		size = 16 + (size_t) c->nparts * 22;
	char	   *buf = cli_malloc(size);
	size_t		n = 0;
	bool		first = true;

	buf[n++] = '{';
	for (int i = 0; i < c->nparts; i++)
	{
		if (only && !only[i])
			continue;
		n += snprintf(buf + n, size - n, "%s%lld", first ? "" : ",",
					  positions ? (long long) c->pos[i] : (long long) c->parts[i]);
		first = false;
	}
	buf[n++] = '}';
	buf[n] = '\0';
	return buf;
}

static int
part_index(Consumer *c, int partition)
{
	for (int i = 0; i < c->nparts; i++)
		if (c->parts[i] == partition)
			return i;
	return -1;
}

/* -o's kind, and its number or time; checked before connecting. */
typedef struct OffsetSpec
{
	const char *kind;
	const char *num;
	const char *ts;
} OffsetSpec;

static void
parse_offset(const char *cmd, const char *spec, OffsetSpec *o)
{
	o->num = NULL;
	o->ts = NULL;
	if (strcmp(spec, "beginning") == 0 || strcmp(spec, "end") == 0 || strcmp(spec, "stored") == 0)
		o->kind = spec;
	else if (spec[0] == '@' && spec[1] != '\0')
	{
		const char *p = spec + 1;

		while (*p >= '0' && *p <= '9')
			p++;
		if (*p == '\0')
		{
			cli_int_arg(cmd, "-o", spec + 1, 0, INT64_MAX / 1000);
			o->kind = "ms";
			o->num = spec + 1;
		}
		else
		{
			o->kind = "time";
			o->ts = spec + 1;
		}
	}
	else if (spec[0] == '-' && spec[1] != '\0')
	{
		cli_int_arg(cmd, "-o", spec + 1, 0, INT64_MAX);
		o->kind = "relative";
		o->num = spec + 1;
	}
	else if (spec[0] >= '0' && spec[0] <= '9')
	{
		cli_int_arg(cmd, "-o", spec, 0, INT64_MAX);
		o->kind = "absolute";
		o->num = spec;
	}
	else
		cli_usage(cmd, "invalid offset \"%s\": beginning, end, stored, N, -N or @TIME expected", spec);
}

/* -o: the starting position of every partition read. */
static void
start_positions(Consumer *c, OffsetSpec *o)
{
	const char *values[4];
	const char *kind = o->kind;
	const char *num = o->num;
	const char *ts = o->ts;
	PGresult   *res;
	char	   *parts;

	parts = array_text(c, false, NULL);
	values[0] = c->topic;
	values[1] = parts;
	values[2] = num;
	values[3] = ts;
	res = cli_query(c->read_conn,
					"SELECT CASE $5"
					" WHEN 'beginning' THEN eventlog.log_start_offset($1, u.p)"
					" WHEN 'end' THEN eventlog.last_stable_offset($1, u.p)"
					" WHEN 'absolute' THEN $3::bigint"
					" WHEN 'relative' THEN GREATEST(eventlog.last_stable_offset($1, u.p) - $3::bigint,"
					"   eventlog.log_start_offset($1, u.p))"
					" WHEN 'ms' THEN eventlog.offset_for_time($1, u.p, pg_catalog.to_timestamp($3::bigint::float8 / 1000))"
					" ELSE eventlog.offset_for_time($1, u.p, $4::timestamptz) END"
					" FROM pg_catalog.unnest($2::integer[]) WITH ORDINALITY AS u(p, i) ORDER BY u.i",
					5, (const char *[]) {values[0], values[1], values[2], values[3], kind});
	for (int i = 0; i < c->nparts; i++)
		c->pos[i] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
	PQclear(res);
	free(parts);
}

/* Prints a result's records; false once -c is reached. */
static bool
print_rows(Consumer *c, PGresult *res, bool track)
{
	for (int r = 0; r < PQntuples(res); r++)
	{
		int			i;

		if (PQgetisnull(res, r, COL_OFFSET))
			continue;
		format_record(&c->fmt, c->topic, res, r);
		if (track)
		{
			i = part_index(c, atoi(PQgetvalue(res, r, COL_PARTITION)));
			if (i >= 0)
				c->pos[i] = strtoll(PQgetvalue(res, r, COL_OFFSET), NULL, 10) + 1;
		}
		c->printed++;
		if (c->count >= 0 && c->printed >= c->count)
			return false;
	}
	return true;
}

/*
 * --read-dsn with -g: the group's committed positions on the primary (a
 * partition without one: its log start), where the reads start.
 */
static void
stored_positions(Consumer *c)
{
	char	   *parts = array_text(c, false, NULL);
	PGresult   *res;

	res = cli_query(c->conn,
					"SELECT coalesce((SELECT o.next_offset FROM eventlog.group_offsets o"
					"   JOIN eventlog.topic_catalog t USING (topic_id)"
					"  WHERE t.name OPERATOR(pg_catalog.=) $1"
					"    AND o.group_name OPERATOR(pg_catalog.=) $2"
					"    AND o.partition OPERATOR(pg_catalog.=) u.p),"
					"   eventlog.log_start_offset($1, u.p))"
					" FROM pg_catalog.unnest($3::integer[]) WITH ORDINALITY AS u(p, i)"
					" WHERE EXISTS (SELECT FROM eventlog.group_catalog g"
					"   JOIN eventlog.topic_catalog t USING (topic_id)"
					"  WHERE t.name OPERATOR(pg_catalog.=) $1"
					"    AND g.group_name OPERATOR(pg_catalog.=) $2)"
					" ORDER BY u.i",
					3, (const char *[]) {c->topic, c->group, parts});
	if (PQntuples(res) != c->nparts)
		cli_error("consumer group \"%s\" of topic \"%s\" does not exist", c->group, c->topic);
	c->stored = cli_malloc(sizeof(int64_t) * c->nparts);
	for (int i = 0; i < c->nparts; i++)
		c->stored[i] = c->pos[i] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
	PQclear(res);
	free(parts);
}

/*
 * --read-dsn with -g: store on the primary the positions that moved, once
 * what was read is written and flushed (the caller's cli_flush).
 */
static void
store_positions(Consumer *c)
{
	if (c->stored == NULL)
		return;
	for (int i = 0; i < c->nparts; i++)
	{
		char		part[16];
		char		next[24];
		PGresult   *res;

		if (c->pos[i] == c->stored[i])
			continue;
		snprintf(part, sizeof(part), "%d", c->parts[i]);
		snprintf(next, sizeof(next), "%lld", (long long) c->pos[i]);
		res = cli_query(c->conn, "SELECT pg_catalog.count(*) FROM eventlog.seek($1, $2, $3, $4::integer)",
						4, (const char *[]) {c->topic, c->group, next, part});
		PQclear(res);
		c->stored[i] = c->pos[i];
	}
}

static void
consume_reads(Consumer *c)
{
	char		sql[2048];
	char		per_part[16];
	int			per = ROUND_RECORDS / c->nparts;

	if (per < 100)
		per = 100;
	snprintf(per_part, sizeof(per_part), "%d", per);
	snprintf(sql, sizeof(sql),
			 "WITH s AS MATERIALIZED ("
			 " SELECT u.p, u.o, eventlog.last_stable_offset($1, u.p) AS lso"
			 " FROM ROWS FROM (pg_catalog.unnest($2::integer[]), pg_catalog.unnest($3::bigint[])) WITH ORDINALITY AS u(p, o, i) ORDER BY u.i)"
			 " SELECT %s, s.p, s.lso FROM s"
			 " LEFT JOIN LATERAL eventlog.read($1, s.p, s.o, $4) AS r ON true",
			 format_columns(&c->fmt));

	while (!cli_interrupted)
	{
		char	   *parts = array_text(c, false, NULL);
		char	   *pos = array_text(c, true, NULL);
		const char *values[4] = {c->topic, parts, pos, per_part};
		PGresult   *res = PQexecParams(c->read_conn, sql, 4, NULL, values, NULL, NULL, 0);
		bool		any = false;
		int			ncol = PQnfields(res);

		free(parts);
		free(pos);
		if (!cli_result_ok(res))
		{
			if (cli_interrupted)
				break;
			cli_fail_result(c->read_conn, res);
		}
		for (int r = 0; r < PQntuples(res); r++)
		{
			if (!PQgetisnull(res, r, COL_OFFSET))
				any = true;
			else
			{
				/* Nothing readable below lso: rolled-back offsets only. */
				int			i = part_index(c, atoi(PQgetvalue(res, r, ncol - 2)));
				int64_t		lso = strtoll(PQgetvalue(res, r, ncol - 1), NULL, 10);

				if (i >= 0 && lso > c->pos[i])
					c->pos[i] = lso;
			}
		}
		if (!print_rows(c, res, true))
		{
			PQclear(res);
			break;
		}
		PQclear(res);
		cli_flush();
		store_positions(c);
		if (any)
			continue;
		if (c->exit_at_end)
			break;
		/* The long poll: sleeps in the server until a partition has records. */
		parts = array_text(c, false, NULL);
		pos = array_text(c, true, NULL);
		values[1] = parts;
		values[2] = pos;
		res = PQexecParams(c->read_conn,
						   "SELECT eventlog._await_records($1, $2::integer[], $3::bigint[], interval '30 seconds')",
						   3, NULL, values, NULL, NULL, 0);
		free(parts);
		free(pos);
		if (!cli_result_ok(res) && !cli_interrupted)
			cli_fail_result(c->read_conn, res);
		PQclear(res);
	}
	cli_flush();
	store_positions(c);
}

/* Commits each partition's next offset after the rows of a poll. */
static void
commit_printed(Consumer *c, bool *touched)
{
	bool		any = false;
	char	   *parts;
	char	   *pos;
	PGresult   *res;

	for (int i = 0; i < c->nparts; i++)
		any |= touched[i];
	if (!any)
		return;
	parts = array_text(c, false, touched);
	pos = array_text(c, true, touched);
	res = PQexecParams(c->conn,
					   "SELECT pg_catalog.count(*) FROM ROWS FROM (pg_catalog.unnest($4::integer[]), pg_catalog.unnest($5::bigint[])) AS u(p, o),"
					   " LATERAL eventlog.commit($1, $2, $3, u.p, u.o) AS c",
					   5, NULL, (const char *[]) {c->topic, c->group, c->member, parts, pos}, NULL, NULL, 0);
	free(parts);
	free(pos);
	if (!cli_result_ok(res))
		cli_fail_result(c->conn, res);
	PQclear(res);
	memset(touched, 0, sizeof(bool) * c->nparts);
}

/* The member leaves at once, committing nothing, when the reader has gone. */
static Consumer *leaving;

static void
leave_group(void)
{
	Consumer   *c = leaving;

	leaving = NULL;
	if (c)
		PQclear(PQexecParams(c->conn, "SELECT eventlog.leave($1, $2, $3)", 3, NULL,
							 (const char *[]) {c->topic, c->group, c->member}, NULL, NULL, 0));
}

static void
consume_group(Consumer *c)
{
	char		sql[2048];
	char		nparts[16];
	char		max[16];
	bool	   *touched = calloc(c->nparts, sizeof(bool));
	PGresult   *res;
	bool		more = true;

	if (touched == NULL)
		cli_error("out of memory");
	snprintf(nparts, sizeof(nparts), "%d", c->nparts);
	snprintf(max, sizeof(max), "%d", ROUND_RECORDS);
	snprintf(sql, sizeof(sql),
			 "SELECT %s FROM eventlog.poll($1, $2, $3::integer, $4::integer, member => $5,"
			 " wait => $6::interval) AS r",
			 format_columns(&c->fmt));
	for (int i = 0; i < c->nparts; i++)
		c->pos[i] = -1;
	leaving = c;
	cli_reader_gone_hook = leave_group;

	while (more && !cli_interrupted)
	{
		const char *values[6] = {c->topic, c->group, max, nparts, c->member,
		c->exit_at_end ? NULL : "10 seconds"};
		int			n;

		res = PQexecParams(c->conn, sql, 6, NULL, values, NULL, NULL, 0);
		if (!cli_result_ok(res))
		{
			if (cli_interrupted)
				break;
			cli_fail_result(c->conn, res);
		}
		n = PQntuples(res);
		for (int r = 0; r < n && more; r++)
		{
			int			p = atoi(PQgetvalue(res, r, COL_PARTITION));
			int			i = part_index(c, p);

			format_record(&c->fmt, c->topic, res, r);
			if (i >= 0)
			{
				c->pos[i] = strtoll(PQgetvalue(res, r, COL_OFFSET), NULL, 10) + 1;
				touched[i] = true;
			}
			c->printed++;
			if (c->count >= 0 && c->printed >= c->count)
				more = false;
		}
		PQclear(res);
		/*
		 * What reached the reader, and only that, is committed: all the
		 * poll returned (the member's fetch positions, which also move
		 * past rolled-back offsets), or, when -c cut it short, each
		 * partition's next offset.
		 */
		cli_flush();
		if (more)
		{
			res = PQexecParams(c->conn, "SELECT pg_catalog.count(*) FROM eventlog.commit($1, $2, $3)",
							   3, NULL, (const char *[]) {c->topic, c->group, c->member}, NULL, NULL, 0);
			if (!cli_result_ok(res))
				cli_fail_result(c->conn, res);
			PQclear(res);
			memset(touched, 0, sizeof(bool) * c->nparts);
		}
		else
			commit_printed(c, touched);
		if (n == 0 && c->exit_at_end)
			break;
	}
	leave_group();
	free(touched);
}

int
cmd_consume(int argc, char **argv, bool tail)
{
	static struct option opts[] = {
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{"read-dsn", required_argument, NULL, 'R'},
		{NULL, 0, NULL, 0}
	};
	const char *read_dsn = NULL;
	const char *cmd = tail ? "tail" : "consume";
	Consumer	c;
	OffsetSpec	ospec;
	const char *offset = tail ? "end" : "beginning";
	const char *format = NULL;
	bool		json = false;
	int			partition = -1;
	int			total;
	int			opt;
	char		host[64];

	if (cli_is_help(argc, argv))
	{
		consume_help(tail);
		return 0;
	}
	memset(&c, 0, sizeof(c));
	c.count = -1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, tail ? ":d:p:c:f:J" : ":d:p:o:ec:f:Jg:", opts, NULL)) != -1)
	{
		switch (opt)
		{
			case 'd':
				cli_conninfo = optarg;
				break;
			case 'p':
				partition = (int) cli_int_arg(cmd, "-p", optarg, 0, 2147483647);
				break;
			case 'o':
				offset = optarg;
				break;
			case 'e':
				c.exit_at_end = true;
				break;
			case 'c':
				c.count = cli_int_arg(cmd, "-c", optarg, 1, INT64_MAX);
				break;
			case 'f':
				format = optarg;
				break;
			case 'J':
				json = true;
				break;
			case 'g':
				c.group = optarg;
				break;
			case 'R':
				read_dsn = optarg;
				break;
			default:
				cli_bad_option(cmd, opt, argv);
		}
	}
	c.topic = cli_require_topic(cmd, argc, argv);
	if (format && json)
		cli_usage(cmd, "-f and -J cannot be used together");
	if (c.group && partition >= 0)
		cli_usage(cmd, "-p cannot be used with -g: the group assigns the partitions");
	if (c.group && strcmp(offset, "beginning") != 0 && strcmp(offset, "stored") != 0)
		cli_usage(cmd, "-o cannot be used with -g: the group's committed positions are used (move them with \"group reset\")");
	if (!c.group && strcmp(offset, "stored") == 0)
		cli_usage(cmd, "-o stored needs -g GROUP");
	parse_offset(cmd, offset, &ospec);
	format_parse(&c.fmt, format, json);

	c.conn = cli_connect();
	c.read_conn = c.conn;
	if (read_dsn)
	{
		const char *primary = cli_conninfo;

		cli_conninfo = read_dsn;
		c.read_conn = cli_connect();
		cli_conninfo = primary;
	}
	total = cli_topic_partitions(c.conn, c.topic);
	if (partition >= total)
		cli_error("partition %d of topic \"%s\" does not exist (it has %d partitions)",
				  partition, c.topic, total);
	c.nparts = partition >= 0 ? 1 : total;
	c.parts = cli_malloc(sizeof(int) * c.nparts);
	c.pos = cli_malloc(sizeof(int64_t) * c.nparts);
	for (int i = 0; i < c.nparts; i++)
		c.parts[i] = partition >= 0 ? partition : i;
	/* The long poll runs on the read connection: Ctrl-C cancels it there. */
	cli_install_interrupt(c.read_conn);

	if (c.group && read_dsn)
	{
		stored_positions(&c);
		consume_reads(&c);
	}
	else if (c.group)
	{
		if (gethostname(host, sizeof(host)) != 0)
			strcpy(host, "localhost");
		host[sizeof(host) - 1] = '\0';
		snprintf(c.member, sizeof(c.member), "pg_eventlog-%s-%d", host, (int) getpid());
		consume_group(&c);
	}
	else
	{
		start_positions(&c, &ospec);
		consume_reads(&c);
	}
	if (c.read_conn != c.conn)
		PQfinish(c.read_conn);
	PQfinish(c.conn);
	return 0;
}
