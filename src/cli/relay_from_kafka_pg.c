/*-------------------------------------------------------------------------
 *
 * relay_from_kafka_pg.c
 *	  relay --from-kafka's side of PostgreSQL: the topics (a missing one
 *	  created binary with Kafka's partition count, one with fewer
 *	  partitions grown, a JSON topic or one with more partitions refused),
 *	  the positions stored by earlier runs, and the transaction that stores
 *	  a round's records (eventlog.produce_binary_batch) together with the
 *	  Kafka positions after them (eventlog.set_kafka_source_position).
 *
 * Records travel as one binary eventlog.message[] parameter per partition,
 * encoded here in PostgreSQL's binary send format (array_recv, record_recv,
 * bytea and timestamptz): no escaping, keys, values and header values pass
 * as the bytes Kafka returned, NULL kept apart from empty.
 *
 *-------------------------------------------------------------------------
 */
#include "relay_from_kafka.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define BYTEAOID 17
#define TEXTOID 25
#define TIMESTAMPTZOID 1184
/* Microseconds from the Unix epoch to PostgreSQL's (2000-01-01). */
#define PG_EPOCH_MS INT64_C(946684800000)

static unsigned int message_oid;
static unsigned int message_array_oid;
static unsigned int header_oid;
static unsigned int header_array_oid;

/* The types' OIDs, which record_recv and array_recv check. */
void
fk_pg_init(PGconn *conn)
{
	PGresult   *res = cli_query(conn,
								"SELECT 'eventlog.message'::pg_catalog.regtype::pg_catalog.oid,"
								" 'eventlog.message[]'::pg_catalog.regtype::pg_catalog.oid,"
								" 'eventlog.header'::pg_catalog.regtype::pg_catalog.oid,"
								" 'eventlog.header[]'::pg_catalog.regtype::pg_catalog.oid",
								0, NULL);

	message_oid = (unsigned int) strtoul(PQgetvalue(res, 0, 0), NULL, 10);
	message_array_oid = (unsigned int) strtoul(PQgetvalue(res, 0, 1), NULL, 10);
	header_oid = (unsigned int) strtoul(PQgetvalue(res, 0, 2), NULL, 10);
	header_array_oid = (unsigned int) strtoul(PQgetvalue(res, 0, 3), NULL, 10);
	PQclear(res);
}

static void
buf_need(FkBuf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return;
	while (b->len + n > b->cap)
		b->cap = b->cap ? b->cap * 2 : 65536;
	b->data = cli_realloc(b->data, b->cap);
}

static void
put32(FkBuf *b, uint32_t v)
{
	uint32_t	n = htonl(v);

	buf_need(b, 4);
	memcpy(b->data + b->len, &n, 4);
	b->len += 4;
}

static void
put64(FkBuf *b, int64_t v)
{
	put32(b, (uint32_t) ((uint64_t) v >> 32));
	put32(b, (uint32_t) v);
}

static void
put_bytes(FkBuf *b, const void *p, size_t n)
{
	buf_need(b, n);
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* A field of a record: its type, then its length (-1: NULL) and bytes. */
static void
put_field(FkBuf *b, unsigned int type, const void *p, size_t n)
{
	put32(b, type);
	if (p == NULL)
	{
		put32(b, (uint32_t) -1);
		return;
	}
	put32(b, (uint32_t) n);
	put_bytes(b, p, n);
}

/* Patches a length word written as a placeholder at OFFSET. */
static void
patch_len(FkBuf *b, size_t offset)
{
	uint32_t	n = htonl((uint32_t) (b->len - offset - 4));

	memcpy(b->data + offset, &n, 4);
}

static void
put_array_header(FkBuf *b, unsigned int elemtype, int n)
{
	put32(b, 1);				/* dimensions */
	put32(b, 0);				/* no NULL elements */
	put32(b, elemtype);
	put32(b, (uint32_t) n);
	put32(b, 1);				/* lower bound */
}

/*
 * One eventlog.message (key, value, headers, event_time) at the end of
 * P's pending records.  No headers: NULL, as read_binary returns a record
 * produced without them.  Kafka's timestamp (-1: none, then the append
 * time) becomes event_time, to the millisecond.
 */
void
fk_pg_add_message(FkPart *p, const void *key, size_t key_len,
				  const void *value, size_t value_len,
				  int nheaders, const char *const *hnames,
				  const void *const *hvalues, const size_t *hlens,
				  int64_t ts_ms)
{
	FkBuf	   *b = &p->pending;
	size_t		elem = b->len;

	put32(b, 0);				/* the element's length, patched below */
	put32(b, 4);				/* columns */
	put_field(b, BYTEAOID, key, key_len);
	put_field(b, BYTEAOID, value, value_len);
	put32(b, header_array_oid);
	if (nheaders == 0)
		put32(b, (uint32_t) -1);
	else
	{
		size_t		arr = b->len;

		put32(b, 0);
		put_array_header(b, header_oid, nheaders);
		for (int i = 0; i < nheaders; i++)
		{
			size_t		h = b->len;

			put32(b, 0);
			put32(b, 2);
			put_field(b, TEXTOID, hnames[i], strlen(hnames[i]));
			put_field(b, BYTEAOID, hvalues[i], hlens[i]);
			patch_len(b, h);
		}
		patch_len(b, arr);
	}
	put32(b, TIMESTAMPTZOID);
	if (ts_ms < 0)
		put32(b, (uint32_t) -1);
	else
	{
		put32(b, 8);
		put64(b, (ts_ms - PG_EPOCH_MS) * 1000);
	}
	patch_len(b, elem);
	p->npending++;
}

static void
init_parts(FkTopic *t, int from, int to)
{
	for (int i = from; i < to; i++)
	{
		memset(&t->parts[i], 0, sizeof(FkPart));
		t->parts[i].next = -1;
		t->parts[i].target = -1;
	}
}

/*
 * The topic here for Kafka's topic of KAFKA_PARTITIONS partitions: created
 * (binary, the server's defaults otherwise) if missing, grown if it has
 * fewer partitions (Kafka's partitions only grow, and partition N must go
 * to partition N), refused if it has more or is a JSON topic (jsonb values
 * and text keys cannot hold arbitrary bytes).  Then the produce privilege,
 * checked before anything is consumed.
 */
void
fk_pg_topic(PGconn *conn, FkTopic *t, int kafka_partitions, bool at_start)
{
	char		n[16];
	const char *params[2] = {t->name, n};
	PGresult   *res;
	int			here;

	snprintf(n, sizeof(n), "%d", kafka_partitions);
	res = cli_query(conn,
					"SELECT t.partitions, t.format FROM eventlog.topic_catalog t"
					" WHERE t.name OPERATOR(pg_catalog.=) $1", 1, params);
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		if (!at_start)
			cli_error("topic \"%s\" was dropped while the relay copied into it", t->name);
		PQclear(cli_query(conn, "SELECT eventlog.create_topic($1, $2::integer, format => 'binary')",
						  2, params));
		here = kafka_partitions;
	}
	else
	{
		here = atoi(PQgetvalue(res, 0, 0));
		if (strcmp(PQgetvalue(res, 0, 1), "binary") != 0)
			cli_error("topic \"%s\" is a JSON topic: Kafka's keys, values and headers need a binary topic (format 'binary')",
					  t->name);
		PQclear(res);
		if (here > kafka_partitions)
			cli_error("topic \"%s\" has %d partitions, the Kafka topic has %d: partition numbers must match",
					  t->name, here, kafka_partitions);
		if (here < kafka_partitions)
			PQclear(cli_query(conn, "SELECT eventlog.alter_topic($1, partitions => $2::integer)",
							  2, params));
	}
	res = cli_query(conn, "SELECT eventlog.has_topic_privilege($1, 'produce')", 1, params);
	if (PQgetvalue(res, 0, 0)[0] != 't')
		cli_error("permission denied to produce to topic \"%s\"", t->name);
	PQclear(res);

	t->parts = cli_realloc(t->parts, sizeof(FkPart) * kafka_partitions);
	init_parts(t, at_start ? 0 : t->npartitions, kafka_partitions);
	t->npartitions = kafka_partitions;
}

/* The positions earlier runs stored, for partitions FROM_PARTITION and up. */
void
fk_pg_load_positions(PGconn *conn, const char *source, FkTopic *t, int from_partition)
{
	const char *params[2] = {source, t->name};
	PGresult   *res = cli_query(conn,
								"SELECT s.partition, s.next_offset FROM eventlog.kafka_source_positions s"
								" WHERE s.source OPERATOR(pg_catalog.=) $1 AND s.topic OPERATOR(pg_catalog.=) $2",
								2, params);

	for (int r = 0; r < PQntuples(res); r++)
	{
		int			part = atoi(PQgetvalue(res, r, 0));
		FkPart	   *p;

		if (part < from_partition || part >= t->npartitions)
			continue;
		p = &t->parts[part];
		p->stored = true;
		p->stored_next = strtoll(PQgetvalue(res, r, 1), NULL, 10);
		p->next = p->stored_next;
	}
	PQclear(res);
}

/*
 * Stores every partition's pending records and its new position in one
 * transaction; returns how many records.  Any error ends the relay: the
 * connection closes, the transaction rolls back, and the positions stored
 * still name the first record not stored.
 */
int64_t
fk_pg_store(PGconn *conn, const char *source, FkTopic *topics, int ntopics)
{
	static const char *sql =
		"WITH b AS (SELECT pg_catalog.count(*) AS n"
		" FROM eventlog.produce_binary_batch($1, $2::eventlog.message[], $3::integer))"
		" SELECT b.n, eventlog.set_kafka_source_position($4, $1, $3::integer, $5::bigint, $6::bigint) FROM b";
	int64_t		total = 0;
	FkBuf		arr = {0};

	for (int i = 0; i < ntopics; i++)
		for (int j = 0; j < topics[i].npartitions; j++)
			total += topics[i].parts[j].npending;
	if (total == 0)
		return 0;

	cli_begin(conn);
	for (int i = 0; i < ntopics; i++)
	{
		for (int j = 0; j < topics[i].npartitions; j++)
		{
			FkPart	   *p = &topics[i].parts[j];
			char		part[16];
			char		expected[24];
			char		next[24];
			const char *values[6] = {topics[i].name, NULL, part, source,
			p->stored ? expected : NULL, next};
			int			lengths[6] = {0};
			int			formats[6] = {0, 1, 0, 0, 0, 0};
			unsigned int types[6] = {0, message_array_oid, 0, 0, 0, 0};
			PGresult   *res;

			if (p->npending == 0)
				continue;
			arr.len = 0;
			put_array_header(&arr, message_oid, p->npending);
			put_bytes(&arr, p->pending.data, p->pending.len);
			values[1] = arr.data;
			lengths[1] = (int) arr.len;
			snprintf(part, sizeof(part), "%d", j);
			snprintf(expected, sizeof(expected), "%lld", (long long) p->stored_next);
			snprintf(next, sizeof(next), "%lld", (long long) p->next);
			res = cli_query_params(conn, sql, 6, values, lengths, formats, types);
			if (!cli_result_ok(res))
				cli_fail_result(conn, res);
			if (strtoll(PQgetvalue(res, 0, 0), NULL, 10) != p->npending)
				cli_error("topic \"%s\" partition %d stored %s records of %d", topics[i].name, j,
						  PQgetvalue(res, 0, 0), p->npending);
			PQclear(res);
		}
	}
#ifdef EL_TEST_HOOKS
	{
		/* Test builds: die with the round stored but not committed (test/t). */
		static int	rounds = 0;
		const char *kill_at = getenv("PG_EVENTLOG_TEST_KILL_BEFORE_COMMIT");

		if (kill_at && ++rounds == atoi(kill_at))
			raise(SIGKILL);
	}
#endif
	cli_commit(conn);
	free(arr.data);

	for (int i = 0; i < ntopics; i++)
		for (int j = 0; j < topics[i].npartitions; j++)
		{
			FkPart	   *p = &topics[i].parts[j];

			if (p->npending == 0)
				continue;
			p->stored = true;
			p->stored_next = p->next;
			p->npending = 0;
			p->pending.len = 0;
		}
	return total;
}
