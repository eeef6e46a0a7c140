/*-------------------------------------------------------------------------
 *
 * produce.c
 *	  pg_eventlog produce TOPIC: records from standard input, one per line
 *	  (or per -D delimiter), each value JSON, appended by produce_batch in
 *	  transactions of --batch records.
 *
 * The arrays travel in libpq's binary format (a text[] is a length and
 * the bytes per element), so a line is copied once and never escaped, and
 * the server parses each value as JSON once: 1M lines go at
 * produce_batch's own speed.  While the server appends one batch, the next
 * is read from standard input (one query in flight, PQsendQueryParams).
 *
 * A bad line (not JSON, invalid UTF-8, too large, no key delimiter):
 * every record before it is committed, none from it on, and the message
 * names the line and how many records were committed, so that the input
 * can be fixed and resumed at that line.  Which line of a failed batch is
 * bad is found by producing its records one by one in a transaction that
 * is rolled back (only after a failure); the records before it are then
 * produced again and committed.
 *
 *-------------------------------------------------------------------------
 */
/* memmem */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEXTARRAYOID 1009
#define TEXTOID 25
#define JSONBOID 3802
#define INT4OID 23

/* A batch is sent when it holds this many bytes, whatever --batch says. */
#define BATCH_MAX_BYTES (64 * 1024 * 1024)

typedef struct Record
{
	size_t		key_off;
	int64_t		key_len;		/* -1: NULL key */
	size_t		val_off;
	int64_t		val_len;		/* -1: NULL value (a tombstone) */
	int64_t		line;
} Record;

typedef struct Batch
{
	Record	   *recs;
	int			n;
	int			cap;
	char	   *data;			/* keys and values, back to back */
	size_t		used;
	size_t		size;
} Batch;

typedef struct Input
{
	char	   *buf;
	size_t		start;			/* first byte not returned yet */
	size_t		end;			/* bytes in buf */
	size_t		size;
	bool		eof;
} Input;

typedef struct Producer
{
	PGconn	   *conn;
	const char *topic;
	const char *partition;		/* text, or NULL */
	const char *fixed_key;
	const char *delim;
	size_t		delim_len;
	const char *key_delim;
	size_t		key_delim_len;
	char	   *headers;		/* a JSON object, or NULL */
	bool		null_empty;
	bool		echo;
	int			batch_size;
	int64_t		committed;		/* records committed so far */
	/* growing buffers for the arrays of a query */
	char	   *arr[2];
	size_t		arr_size[2];
} Producer;

static void
produce_help(void)
{
	printf("usage: pg_eventlog produce TOPIC [OPTION]...\n\n"
		   "Produces the records read from standard input, one per line, each value\n"
		   "JSON (empty lines are skipped).  Records before a bad line are committed,\n"
		   "none from it on; the error names the line.\n\n"
		   "Options:\n"
		   "  -D DELIM         record delimiter instead of a newline (\\n \\t \\0 escapes)\n"
		   "  -K DELIM         split each record into key DELIM value at the first DELIM\n"
		   "  -k KEY           the key of every record\n"
		   "  -p N             the partition (default: by key, keyless round-robin)\n"
		   "  -H NAME=VALUE    a header of every record (repeatable; a JSON string value)\n"
		   "  -Z               an empty value is a NULL value (a tombstone), not skipped\n"
		   "  --batch N        records per transaction (default 5000)\n"
		   "  -T               echo the records produced to standard output\n"
		   "  -d, --dbname=CONNINFO   database name or connection string\n"
		   "  --help           print this help\n");
}

static void
put32(char *p, uint32_t v)
{
	p[0] = (char) (v >> 24);
	p[1] = (char) (v >> 16);
	p[2] = (char) (v >> 8);
	p[3] = (char) v;
}

/* Next record of standard input; false at the end. */
static bool
next_record(Producer *pr, Input *in, char **rec, size_t *len)
{
	size_t		scan = in->start;

	for (;;)
	{
		char	   *found = NULL;
		ssize_t		got;

		if (in->end > scan)
		{
			if (pr->delim_len == 1)
				found = memchr(in->buf + scan, pr->delim[0], in->end - scan);
			else
				found = memmem(in->buf + scan, in->end - scan, pr->delim, pr->delim_len);
		}
		if (found)
		{
			*rec = in->buf + in->start;
			*len = found - *rec;
			in->start = (found - in->buf) + pr->delim_len;
			return true;
		}
		if (in->eof)
		{
			if (in->end == in->start)
				return false;
			*rec = in->buf + in->start;
			*len = in->end - in->start;
			in->start = in->end;
			return true;
		}
		/* Keep the partial record, make room, read more. */
		scan = in->end - in->start;
		scan = scan >= pr->delim_len ? scan - pr->delim_len + 1 : 0;
		if (in->start > 0)
		{
			memmove(in->buf, in->buf + in->start, in->end - in->start);
			in->end -= in->start;
			in->start = 0;
		}
		if (in->end == in->size)
		{
			in->size *= 2;
			in->buf = cli_realloc(in->buf, in->size);
		}
		got = read(STDIN_FILENO, in->buf + in->end, in->size - in->end);
		if (got < 0)
		{
			if (errno == EINTR)
				continue;
			cli_error("could not read standard input: %s", strerror(errno));
		}
		if (got == 0)
			in->eof = true;
		in->end += got;
	}
}

static void
batch_add(Batch *b, const char *key, int64_t key_len, const char *val,
		  int64_t val_len, int64_t line)
{
	size_t		need = (key_len > 0 ? key_len : 0) + (val_len > 0 ? val_len : 0);
	Record	   *r;

	if (b->n == b->cap)
	{
		b->cap = b->cap ? b->cap * 2 : 1024;
		b->recs = cli_realloc(b->recs, sizeof(Record) * b->cap);
	}
	if (b->used + need > b->size)
	{
		while (b->used + need > b->size)
			b->size = b->size ? b->size * 2 : 1 << 20;
		b->data = cli_realloc(b->data, b->size);
	}
	r = &b->recs[b->n++];
	r->line = line;
	r->key_len = key_len;
	r->key_off = b->used;
	if (key_len > 0)
	{
		memcpy(b->data + b->used, key, key_len);
		b->used += key_len;
	}
	r->val_len = val_len;
	r->val_off = b->used;
	if (val_len > 0)
	{
		memcpy(b->data + b->used, val, val_len);
		b->used += val_len;
	}
}

/*
 * A one-dimensional text[] in binary format: per element its length (-1:
 * NULL) and its bytes.  kind 0: the records' keys (or -k's), 1: values.
 */
static int
build_array(Producer *pr, int which, Batch *b, int from, int to, int kind)
{
	size_t		need = 20;
	size_t		pos = 20;
	bool		hasnull = false;
	char	   *p;
	const char *fixed = kind == 0 ? pr->fixed_key : NULL;
	size_t		flen = fixed ? strlen(fixed) : 0;

	for (int i = from; i < to; i++)
	{
		int64_t		len = fixed ? (int64_t) flen
			: kind == 0 ? b->recs[i].key_len : b->recs[i].val_len;

		need += 4 + (len > 0 ? len : 0);
	}
	if (need > pr->arr_size[which])
	{
		pr->arr_size[which] = need;
		pr->arr[which] = cli_realloc(pr->arr[which], need);
	}
	p = pr->arr[which];
	for (int i = from; i < to; i++)
	{
		const char *data;
		int64_t		len;

		if (fixed)
		{
			data = fixed;
			len = (int64_t) flen;
		}
		else if (kind == 0)
		{
			data = b->data + b->recs[i].key_off;
			len = b->recs[i].key_len;
		}
		else
		{
			data = b->data + b->recs[i].val_off;
			len = b->recs[i].val_len;
		}
		if (len < 0)
		{
			put32(p + pos, 0xFFFFFFFF);
			pos += 4;
			hasnull = true;
			continue;
		}
		put32(p + pos, (uint32_t) len);
		pos += 4;
		memcpy(p + pos, data, len);
		pos += len;
	}
	put32(p, 1);
	put32(p + 4, hasnull ? 1 : 0);
	put32(p + 8, TEXTOID);
	put32(p + 12, (uint32_t) (to - from));
	put32(p + 16, 1);
	return (int) pos;
}

/*
 * The values travel as text and become jsonb one row at a time, so that
 * each value's parse garbage goes with its row (jsonb[]'s binary input
 * keeps every element's until the end of the query: page faults that made
 * a batch twice as slow).  The headers, the same for every record, travel
 * once.
 */
static const char *produce_sql =
"SELECT pg_catalog.count(*) FROM eventlog.produce_batch($1, $2,"
" (SELECT pg_catalog.array_agg(u.v::jsonb ORDER BY u.i)"
"   FROM pg_catalog.unnest($3::text[]) WITH ORDINALITY AS u(v, i)),"
" CASE WHEN $4::jsonb IS NOT NULL"
"  THEN pg_catalog.array_fill($4::jsonb, ARRAY[pg_catalog.cardinality($3::text[])]) END,"
" $5)";

/* Sends records [from, to) of the batch as one produce_batch. */
static void
send_range(Producer *pr, Batch *b, int from, int to)
{
	static const unsigned int types[] = {TEXTOID, TEXTARRAYOID, TEXTARRAYOID, JSONBOID, INT4OID};
	static const int formats[] = {0, 1, 1, 0, 0};
	const char *values[5];
	int			lengths[5] = {0, 0, 0, 0, 0};
	bool		keys = pr->fixed_key != NULL || pr->key_delim != NULL;

	values[0] = pr->topic;
	values[1] = NULL;
	values[3] = NULL;
	values[4] = pr->partition;
	if (keys)
	{
		lengths[1] = build_array(pr, 0, b, from, to, 0);
		values[1] = pr->arr[0];
	}
	lengths[2] = build_array(pr, 1, b, from, to, 1);
	values[2] = pr->arr[1];
	values[3] = pr->headers;
	if (!PQsendQueryParams(pr->conn, produce_sql, 5, types, values, lengths, formats, 0))
		cli_error("%s", cli_result_message(pr->conn, NULL));
}

/* The result of the query in flight; NULL when it succeeded. */
static PGresult *
finish_send(Producer *pr)
{
	PGresult   *res;
	PGresult   *failed = NULL;

	while ((res = PQgetResult(pr->conn)) != NULL)
	{
		if (!cli_result_ok(res) && failed == NULL)
			failed = res;
		else
			PQclear(res);
	}
	if (failed == NULL && PQstatus(pr->conn) != CONNECTION_OK)
		failed = PQmakeEmptyPGresult(pr->conn, PGRES_FATAL_ERROR);
	return failed;
}

static void
echo_range(Producer *pr, Batch *b, int from, int to)
{
	for (int i = from; i < to && pr->echo; i++)
	{
		Record	   *r = &b->recs[i];

		if (pr->key_delim && r->key_len >= 0)
		{
			cli_write(b->data + r->key_off, r->key_len);
			cli_write(pr->key_delim, pr->key_delim_len);
		}
		if (r->val_len > 0)
			cli_write(b->data + r->val_off, r->val_len);
		cli_write("\n", 1);
	}
	if (pr->echo)
		cli_flush();
}

/*
 * A batch failed: find its first bad record, commit the records before
 * it, and fail naming its line.
 */
static void
batch_failed(Producer *pr, Batch *b, PGresult *res)
{
	char	   *msg;
	int			bad = -1;
	PGresult   *r2;

	msg = cli_strdup(cli_result_message(pr->conn, res));
	PQclear(res);
	if (PQstatus(pr->conn) != CONNECTION_OK)
		cli_error("%s (records committed: %lld, and lines %lld to %lld may or may not be)",
				  msg, (long long) pr->committed, (long long) b->recs[0].line,
				  (long long) b->recs[b->n - 1].line);

	cli_begin(pr->conn);
	for (int i = 0; i < b->n && bad < 0; i++)
	{
		send_range(pr, b, i, i + 1);
		if ((r2 = finish_send(pr)) != NULL)
		{
			const char *state = PQresultErrorField(r2, PG_DIAG_SQLSTATE);

			bad = i;
			free(msg);
			msg = cli_strdup(cli_result_message(pr->conn, r2));
			/* Not the line's fault (privileges, the server): no line number. */
			if (state == NULL || (strncmp(state, "22", 2) != 0 && strncmp(state, "54", 2) != 0))
				cli_error("%s (records committed before line %lld: %lld)",
						  msg, (long long) b->recs[0].line, (long long) pr->committed);
			PQclear(r2);
		}
	}
	PQclear(PQexec(pr->conn, "ROLLBACK"));
	if (bad < 0)
		cli_error("lines %lld to %lld: %s (records committed before them: %lld)",
				  (long long) b->recs[0].line, (long long) b->recs[b->n - 1].line,
				  msg, (long long) pr->committed);
	if (bad > 0)
	{
		send_range(pr, b, 0, bad);
		if ((r2 = finish_send(pr)) != NULL)
			cli_error("line %lld: %s (records committed: %lld, not lines %lld to %lld before it: %s)",
					  (long long) b->recs[bad].line, msg, (long long) pr->committed,
					  (long long) b->recs[0].line, (long long) b->recs[bad - 1].line,
					  cli_result_message(pr->conn, r2));
		pr->committed += bad;
		echo_range(pr, b, 0, bad);
	}
	cli_error("line %lld: %s (records committed before it: %lld)",
			  (long long) b->recs[bad].line, msg, (long long) pr->committed);
}

/* Waits for the batch in flight, if any, then empties it. */
static void
complete(Producer *pr, Batch *b, bool *in_flight)
{
	PGresult   *res;

	if (!*in_flight)
		return;
	*in_flight = false;
	if ((res = finish_send(pr)) != NULL)
		batch_failed(pr, b, res);
	pr->committed += b->n;
	echo_range(pr, b, 0, b->n);
	b->n = 0;
	b->used = 0;
}

/*
 * -T and the reader of standard output went away (produce -T | head):
 * the rest of the input is not produced, which must not look like
 * success.  Nothing is in flight when records are echoed, so the count is
 * exact and the input can be resumed after it.
 */
static Producer *echo_producer;

static void
echo_reader_gone(void)
{
	cli_error("standard output was closed while echoing: the rest of the input was not produced (records committed: %lld)",
			  (long long) echo_producer->committed);
}

/* "name=value" pairs as a JSON object of strings. */
static char *
headers_json(char **pairs, int n)
{
	char	   *buf = NULL;
	size_t		len = 0;
	FILE	   *f = open_memstream(&buf, &len);

	if (f == NULL)
		cli_error("out of memory");
	fputc('{', f);
	for (int i = 0; i < n; i++)
	{
		char	   *eq = strchr(pairs[i], '=');

		if (eq == NULL || eq == pairs[i])
			cli_usage("produce", "invalid header \"%s\": NAME=VALUE expected", pairs[i]);
		if (i > 0)
			fputs(", ", f);
		cli_json_string(f, pairs[i], eq - pairs[i]);
		fputs(": ", f);
		cli_json_string(f, eq + 1, strlen(eq + 1));
	}
	fputc('}', f);
	fclose(f);
	return buf;
}

int
cmd_produce(int argc, char **argv)
{
	static struct option opts[] = {
		{"batch", required_argument, NULL, 'b'},
		{"help", no_argument, NULL, '?'},
		CLI_DBNAME_OPTION,
		{NULL, 0, NULL, 0}
	};
	Producer	pr;
	Batch		batches[2];
	int			cur = 0;
	bool		in_flight = false;
	Input		in;
	char	  **hdrs = NULL;
	int			nhdrs = 0;
	int64_t		line = 0;
	int			nparts;
	char	   *rec;
	size_t		len;
	int			c;

	if (cli_is_help(argc, argv))
	{
		produce_help();
		return 0;
	}
	memset(&pr, 0, sizeof(pr));
	memset(batches, 0, sizeof(batches));
	pr.delim = "\n";
	pr.delim_len = 1;
	pr.batch_size = 5000;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:D:K:k:p:H:ZT", opts, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				cli_conninfo = optarg;
				break;
			case 'D':
				pr.delim = cli_unescape(optarg, &pr.delim_len);
				if (pr.delim_len == 0)
					cli_usage("produce", "the delimiter of -D must not be empty");
				break;
			case 'K':
				pr.key_delim = cli_unescape(optarg, &pr.key_delim_len);
				if (pr.key_delim_len == 0)
					cli_usage("produce", "the delimiter of -K must not be empty");
				break;
			case 'k':
				pr.fixed_key = optarg;
				break;
			case 'p':
				cli_int_arg("produce", "-p", optarg, 0, 2147483647);
				pr.partition = optarg;
				break;
			case 'H':
				hdrs = cli_realloc(hdrs, sizeof(char *) * (nhdrs + 1));
				hdrs[nhdrs++] = optarg;
				break;
			case 'Z':
				pr.null_empty = true;
				break;
			case 'T':
				pr.echo = true;
				break;
			case 'b':
				pr.batch_size = (int) cli_int_arg("produce", "--batch", optarg, 1, 1000000);
				break;
			default:
				cli_bad_option("produce", c, argv);
		}
	}
	pr.topic = cli_require_topic("produce", argc, argv);
	if (pr.fixed_key && pr.key_delim)
		cli_usage("produce", "-k and -K cannot be used together");
	if (nhdrs > 0)
		pr.headers = headers_json(hdrs, nhdrs);

	if (pr.echo)
	{
		echo_producer = &pr;
		cli_reader_gone_hook = echo_reader_gone;
	}
	pr.conn = cli_connect();
	nparts = cli_topic_partitions(pr.conn, pr.topic);
	if (pr.partition && atoi(pr.partition) >= nparts)
		cli_error("partition %s of topic \"%s\" does not exist (it has %d partitions)",
				  pr.partition, pr.topic, nparts);
	in.size = 1 << 20;
	in.buf = cli_malloc(in.size);
	in.start = in.end = 0;
	in.eof = false;

	while (next_record(&pr, &in, &rec, &len))
	{
		Batch	   *b = &batches[cur];
		const char *key = NULL;
		int64_t		key_len = -1;
		const char *val = rec;
		int64_t		val_len = (int64_t) len;

		line++;
		if (pr.key_delim)
		{
			char	   *sep = pr.key_delim_len == 1 ? memchr(rec, pr.key_delim[0], len)
				: memmem(rec, len, pr.key_delim, pr.key_delim_len);

			if (sep == NULL && len > 0)
			{
				/* What is before it goes first, so that the count is exact. */
				complete(&pr, &batches[1 - cur], &in_flight);
				if (b->n > 0)
				{
					send_range(&pr, b, 0, b->n);
					in_flight = true;
					complete(&pr, b, &in_flight);
				}
				cli_error("line %lld: no key delimiter in the line (records committed before it: %lld)",
						  (long long) line, (long long) pr.committed);
			}
			if (sep)
			{
				key = rec;
				key_len = sep - rec;
				val = sep + pr.key_delim_len;
				val_len = (int64_t) (len - key_len - pr.key_delim_len);
			}
		}
		if (val_len == 0)
		{
			if (!pr.null_empty)
				continue;
			val_len = -1;
		}
		batch_add(b, key, key_len, val, val_len, line);
		if (b->n >= pr.batch_size || b->used >= BATCH_MAX_BYTES)
		{
			/* The previous batch first: one query in flight at a time. */
			complete(&pr, &batches[1 - cur], &in_flight);
			send_range(&pr, b, 0, b->n);
			in_flight = true;
			cur = 1 - cur;
		}
	}
	complete(&pr, &batches[1 - cur], &in_flight);
	if (batches[cur].n > 0)
	{
		send_range(&pr, &batches[cur], 0, batches[cur].n);
		in_flight = true;
		complete(&pr, &batches[cur], &in_flight);
	}
	PQfinish(pr.conn);
	return 0;
}
