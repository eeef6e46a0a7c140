/*-------------------------------------------------------------------------
 *
 * export.c
 *	  pg_eventlog export TOPIC --group G --dir D: the topic's records from
 *	  the group's committed positions up to the end, into files named by
 *	  topic, partition and offset range (TOPIC-P-FIRST-LAST.jsonl or .csv,
 *	  offsets 20 digits so that names sort), then the group's positions
 *	  moved past them.  Run again, it continues where it stopped.
 *
 * Every record is in exactly one file, whatever the moment the program is
 * killed: a file is written under a temporary name (TOPIC-P-FIRST.ext.tmp),
 * fsynced, renamed, the directory fsynced, and only then the group's
 * position of the partition moved (eventlog.seek) to LAST + 1.  A kill
 * before the rename leaves a temporary file, removed by the next run; a
 * kill between the rename and the commit leaves a file whose range is at
 * or past the committed position, which the next run takes as written: it
 * commits LAST + 1 before reading anything.  One export at a time per
 * directory (a lock file) and per topic and group (an advisory lock on
 * the server); the group should be the export's own (seek
 * refuses partitions a member or transaction of the group holds).
 *
 * Progress (records, records/s, bytes, ETA) goes to standard error when it
 * is a terminal, and nowhere otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define READ_RECORDS "10000"

typedef struct Export
{
	PGconn	   *conn;
	const char *topic;
	const char *group;
	const char *dir;
	int			dirfd;
	bool		csv;
	int64_t		file_records;
	int			nparts;
	int64_t    *pos;			/* next offset to export, per partition */
	int64_t    *end;			/* last stable offset at start */
	/* progress */
	bool		progress;
	int64_t		total;
	int64_t		done;
	int64_t		bytes;
	double		started;
	double		shown;
	int			renames;
} Export;

static void
export_help(void)
{
	printf("usage: pg_eventlog export TOPIC --group GROUP --dir DIR [OPTION]...\n\n"
		   "Writes TOPIC's records, from GROUP's committed positions to the end, into\n"
		   "files DIR/TOPIC-PARTITION-FIRST-LAST.jsonl (or .csv), then moves GROUP's\n"
		   "positions past them.  Run again, it continues: every record is in exactly\n"
		   "one file, even if a run is killed.\n\n"
		   "Options:\n"
		   "  --group GROUP        the group whose positions the export keeps (required)\n"
		   "  --dir DIR            the directory of the files (required; created if missing)\n"
		   "  --format jsonl|csv   one JSON object per line (default), or CSV with a header\n"
		   "  --file-records N     records per file at most (default 100000)\n"
		   "  -d, --dbname=CONNINFO   database name or connection string\n"
		   "  --help               print this help\n");
}

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
show_progress(Export *e, bool last)
{
	double		t = now_seconds();
	double		rate;
	char		eta[32];

	if (!e->progress || (!last && t - e->shown < 0.2))
		return;
	e->shown = t;
	rate = t > e->started ? e->done / (t - e->started) : 0;
	if (rate > 0 && e->total > e->done)
		snprintf(eta, sizeof(eta), "%.0fs", (e->total - e->done) / rate);
	else
		snprintf(eta, sizeof(eta), "0s");
	fprintf(stderr, "\r%lld/%lld records, %.0f records/s, %.1f MB, ETA %s   ",
			(long long) e->done, (long long) e->total, rate, e->bytes / 1048576.0, eta);
	if (last)
		fputc('\n', stderr);
	fflush(stderr);
}

/*
 * "P-FIRST-LAST.ext" or "P-FIRST.ext.tmp" after "TOPIC-": the partition and
 * offsets; false for any other name.
 */
static bool
parse_name(Export *e, const char *name, bool *tmp, int *part, int64_t *first, int64_t *last)
{
	size_t		tlen = strlen(e->topic);
	char		rest[128];
	char		ext[16];
	int			consumed = 0;
	unsigned long long a,
				b;

	if (strncmp(name, e->topic, tlen) != 0 || name[tlen] != '-' ||
		strlen(name + tlen + 1) >= sizeof(rest))
		return false;
	strcpy(rest, name + tlen + 1);
	for (char *p = rest; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || (*p >= 'a' && *p <= 'z')))
			return false;
	if (sscanf(rest, "%d-%20llu-%20llu.%15[a-z]%n", part, &a, &b, ext, &consumed) == 4 &&
		rest[consumed] == '\0' && strchr(rest, '-') != NULL &&
		(strcmp(ext, "jsonl") == 0 || strcmp(ext, "csv") == 0))
	{
		/* exactly two dashes: "a-1" is not a partition of topic "a" */
		if (strchr(strchr(strchr(rest, '-') + 1, '-') + 1, '-') != NULL)
			return false;
		*tmp = false;
		*first = (int64_t) a;
		*last = (int64_t) b;
		return *part >= 0 && *part < e->nparts;
	}
	consumed = 0;
	if (sscanf(rest, "%d-%20llu.%15[a-z].tmp%n", part, &a, ext, &consumed) == 3 &&
		rest[consumed] == '\0' &&
		strchr(strchr(rest, '-') + 1, '-') == NULL)
	{
		*tmp = true;
		*first = (int64_t) a;
		*last = -1;
		return *part >= 0 && *part < e->nparts;
	}
	return false;
}

/* Moves the group's position of a partition (the commit of an export). */
static void
commit_position(Export *e, int part, int64_t next)
{
	char		off[24];
	char		p[16];

	snprintf(off, sizeof(off), "%lld", (long long) next);
	snprintf(p, sizeof(p), "%d", part);
	PQclear(cli_query(e->conn, "SELECT eventlog.seek($1, $2, $3, $4::integer)", 4,
					  (const char *[]) {e->topic, e->group, off, p}));
}

/*
 * What an earlier run left: temporary files go; a file renamed but not
 * committed is committed now.
 */
static void
recover(Export *e)
{
	DIR		   *d = fdopendir(dup(e->dirfd));
	struct dirent *de;
	int64_t    *last = cli_malloc(sizeof(int64_t) * e->nparts);

	if (d == NULL)
		cli_error("could not read directory \"%s\": %s", e->dir, strerror(errno));
	for (int i = 0; i < e->nparts; i++)
		last[i] = -1;
	while ((de = readdir(d)) != NULL)
	{
		bool		tmp;
		int			part;
		int64_t		first,
					l;

		if (!parse_name(e, de->d_name, &tmp, &part, &first, &l))
			continue;
		if (tmp)
		{
			if (unlinkat(e->dirfd, de->d_name, 0) != 0)
				cli_error("could not remove \"%s/%s\": %s", e->dir, de->d_name, strerror(errno));
		}
		else if (l > last[part])
			last[part] = l;
	}
	closedir(d);
	for (int i = 0; i < e->nparts; i++)
	{
		if (last[i] >= e->pos[i])
		{
			commit_position(e, i, last[i] + 1);
			e->pos[i] = last[i] + 1;
		}
	}
	free(last);
}

static void
write_record(Export *e, FILE *f, PGresult *res, int r)
{
	const char *key = PQgetvalue(res, r, 1);
	const char *val = PQgetvalue(res, r, 2);
	const char *hdr = PQgetvalue(res, r, 3);
	const char *ts = PQgetvalue(res, r, 4);
	char		part[16];

	if (e->csv)
	{
		fputs(e->topic, f);
		fprintf(f, ",%s,%s,", PQgetvalue(res, r, 5), PQgetvalue(res, r, 0));
		cli_csv_field(f, key, PQgetlength(res, r, 1));
		fputc(',', f);
		cli_csv_field(f, val, PQgetlength(res, r, 2));
		fputc(',', f);
		cli_csv_field(f, hdr, PQgetlength(res, r, 3));
		/* the timestamp's JSON string without its quotes */
		fprintf(f, ",%.*s\n", PQgetlength(res, r, 4) - 2, ts + 1);
		return;
	}
	snprintf(part, sizeof(part), "%s", PQgetvalue(res, r, 5));
	fputs("{\"topic\":", f);
	cli_json_string(f, e->topic, strlen(e->topic));
	fprintf(f, ",\"partition\":%s,\"offset\":%s,\"key\":", part, PQgetvalue(res, r, 0));
	if (PQgetisnull(res, r, 1))
		fputs("null", f);
	else
		cli_json_string(f, key, PQgetlength(res, r, 1));
	fprintf(f, ",\"value\":%s,\"headers\":%s,\"event_time\":%s}\n",
			PQgetisnull(res, r, 2) ? "null" : val,
			PQgetisnull(res, r, 3) ? "null" : hdr, ts);
}

/*
 * The temporary file being written, removed when the run fails (a query
 * refused for lack of privileges, the server gone): an error leaves
 * nothing partial behind.  Only a kill leaves it, for the next run.
 */
static int	tmp_dirfd = -1;
static char tmp_current[512];

static void
remove_tmp(void)
{
	if (tmp_dirfd >= 0 && tmp_current[0] != '\0')
		unlinkat(tmp_dirfd, tmp_current, 0);
}

/* One file of partition p from e->pos[p]; false when nothing was left. */
static bool
export_file(Export *e, int p)
{
	const char *ext = e->csv ? "csv" : "jsonl";
	char		tmpname[512];
	char		name[512];
	char		part[16];
	char		from[24];
	int64_t		first = -1;
	int64_t		last = -1;
	int64_t		written = 0;
	FILE	   *f;
	int			fd;

	snprintf(part, sizeof(part), "%d", p);
	snprintf(tmpname, sizeof(tmpname), "%s-%d-%020lld.%s.tmp", e->topic, p, (long long) e->pos[p], ext);
	fd = openat(e->dirfd, tmpname, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL)
		cli_error("could not create \"%s/%s\": %s", e->dir, tmpname, strerror(errno));
	tmp_dirfd = e->dirfd;
	snprintf(tmp_current, sizeof(tmp_current), "%s", tmpname);
	if (e->csv)
		fputs("topic,partition,offset,key,value,headers,event_time\n", f);

	while (written < e->file_records && e->pos[p] < e->end[p])
	{
		char		max[24];
		int64_t		want = e->file_records - written;
		PGresult   *res;
		int			n;

		snprintf(max, sizeof(max), "%lld", (long long) (want < 10000 ? want : 10000));
		snprintf(from, sizeof(from), "%lld", (long long) e->pos[p]);
		res = cli_query(e->conn,
						"SELECT r.offset_id, r.key, r.value::text, r.headers::text,"
						" pg_catalog.to_json(r.event_time)::text, r.partition"
						" FROM eventlog.read($1, $2::integer, $3::bigint, $4::integer) AS r",
						4, (const char *[]) {e->topic, part, from, max});
		n = PQntuples(res);
		for (int r = 0; r < n; r++)
		{
			write_record(e, f, res, r);
			e->bytes += PQgetlength(res, r, 2) + PQgetlength(res, r, 1) + PQgetlength(res, r, 3);
		}
		if (n > 0)
		{
			if (first < 0)
				first = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
			last = strtoll(PQgetvalue(res, n - 1, 0), NULL, 10);
			e->done += last + 1 - e->pos[p];
			e->pos[p] = last + 1;
			written += n;
		}
		PQclear(res);
		show_progress(e, false);
		if (n == 0)
			break;				/* rolled-back offsets to the end */
	}
	if (ferror(f) || fflush(f) != 0 || fsync(fd) != 0)
		cli_error("could not write \"%s/%s\": %s", e->dir, tmpname, strerror(errno));
	fclose(f);
	if (written == 0)
	{
		unlinkat(e->dirfd, tmpname, 0);
		tmp_current[0] = '\0';
		return false;
	}
	snprintf(name, sizeof(name), "%s-%d-%020lld-%020lld.%s", e->topic, p,
			 (long long) first, (long long) last, ext);
	if (renameat(e->dirfd, tmpname, e->dirfd, name) != 0 || fsync(e->dirfd) != 0)
		cli_error("could not rename \"%s/%s\": %s", e->dir, tmpname, strerror(errno));
	tmp_current[0] = '\0';
#ifdef EL_TEST_HOOKS
	{
		/* Test builds: die between the rename and the commit (test/t). */
		const char *crash = getenv("PG_EVENTLOG_TEST_CRASH_AFTER_RENAME");

		if (crash && ++e->renames == atoi(crash))
			raise(SIGKILL);
	}
#endif
	commit_position(e, p, last + 1);
	return true;
}

int
cmd_export(int argc, char **argv)
{
	static struct option opts[] = {
		{"group", required_argument, NULL, 'g'},
		{"dir", required_argument, NULL, 'D'},
		{"format", required_argument, NULL, 'F'},
		{"file-records", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	Export		e;
	PGresult   *res;
	char		nparts[16];
	int			lockfd;
	int			c;

	if (cli_is_help(argc, argv))
	{
		export_help();
		return 0;
	}
	memset(&e, 0, sizeof(e));
	e.file_records = 100000;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:g:", opts, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				cli_conninfo = optarg;
				break;
			case 'g':
				e.group = optarg;
				break;
			case 'D':
				e.dir = optarg;
				break;
			case 'F':
				if (strcmp(optarg, "csv") == 0)
					e.csv = true;
				else if (strcmp(optarg, "jsonl") != 0)
					cli_usage("export", "invalid format \"%s\": jsonl or csv expected", optarg);
				break;
			case 'n':
				e.file_records = cli_int_arg("export", "--file-records", optarg, 1, INT64_MAX);
				break;
			default:
				cli_bad_option("export", c, argv);
		}
	}
	e.topic = cli_require_topic("export", argc, argv);
	if (e.group == NULL)
		cli_usage("export", "--group is required");
	if (e.dir == NULL)
		cli_usage("export", "--dir is required");
	/* The name is part of file names: Kafka's alphabet only, as topics have. */
	if (strspn(e.topic, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
		!= strlen(e.topic) || strcmp(e.topic, ".") == 0 || strcmp(e.topic, "..") == 0)
		cli_error("invalid topic name \"%s\"", e.topic);

	if (mkdir(e.dir, 0755) != 0 && errno != EEXIST)
		cli_error("could not create directory \"%s\": %s", e.dir, strerror(errno));
	e.dirfd = open(e.dir, O_RDONLY | O_DIRECTORY);
	if (e.dirfd < 0)
		cli_error("could not open directory \"%s\": %s", e.dir, strerror(errno));
	lockfd = openat(e.dirfd, ".pg_eventlog-export.lock", O_RDWR | O_CREAT, 0644);
	if (lockfd < 0)
		cli_error("could not create \"%s/.pg_eventlog-export.lock\": %s", e.dir, strerror(errno));
	if (flock(lockfd, LOCK_EX | LOCK_NB) != 0)
		cli_error("another export is writing to \"%s\"", e.dir);

	atexit(remove_tmp);
	e.conn = cli_connect();
	e.nparts = cli_topic_partitions(e.conn, e.topic);

	/*
	 * One export per topic and group, whatever the directory: two would
	 * read the same positions and write the same records into both
	 * directories.  A session-level lock, released when the run ends or
	 * dies.
	 */
	res = cli_query(e.conn,
					"SELECT pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext($1),"
					" pg_catalog.hashtext($2))", 2, (const char *[]) {e.topic, e.group});
	if (strcmp(PQgetvalue(res, 0, 0), "t") != 0)
		cli_error("another export of topic \"%s\" for group \"%s\" is running", e.topic, e.group);
	PQclear(res);
	e.pos = cli_malloc(sizeof(int64_t) * e.nparts);
	e.end = cli_malloc(sizeof(int64_t) * e.nparts);
	snprintf(nparts, sizeof(nparts), "%d", e.nparts);
	res = cli_query(e.conn,
					"SELECT coalesce(g.committed_offset, eventlog.log_start_offset($1, s.p)),"
					" eventlog.last_stable_offset($1, s.p)"
					" FROM pg_catalog.generate_series(0, $3::integer - 1) AS s(p)"
					" LEFT JOIN eventlog.consumer_groups g ON g.group_name OPERATOR(pg_catalog.=) $2"
					"  AND g.topic OPERATOR(pg_catalog.=) $1 AND g.partition OPERATOR(pg_catalog.=) s.p"
					" ORDER BY s.p", 3, (const char *[]) {e.topic, e.group, nparts});
	for (int i = 0; i < e.nparts; i++)
	{
		e.pos[i] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
		e.end[i] = strtoll(PQgetvalue(res, i, 1), NULL, 10);
	}
	PQclear(res);
	recover(&e);

	e.progress = isatty(STDERR_FILENO);
	e.started = now_seconds();
	for (int i = 0; i < e.nparts; i++)
		if (e.end[i] > e.pos[i])
			e.total += e.end[i] - e.pos[i];
	for (int i = 0; i < e.nparts; i++)
	{
		while (e.pos[i] < e.end[i] && export_file(&e, i))
			;
		/*
		 * A read that returned nothing below the end (a last stable offset
		 * taken before it) saw rolled-back offsets only: move past them.
		 */
		if (e.pos[i] < e.end[i])
		{
			commit_position(&e, i, e.end[i]);
			e.done += e.end[i] - e.pos[i];
			e.pos[i] = e.end[i];
		}
	}
	show_progress(&e, true);
	PQfinish(e.conn);
	close(lockfd);
	return 0;
}
