/*-------------------------------------------------------------------------
 *
 * relay_batch.c
 *	  relay --to-kafka's batches in flight (one per poll, in the order
 *	  polled) and the group positions they commit.
 *
 * The relay polls the next batch while Kafka is still acknowledging the
 * previous ones.  That needs no change to the group's semantics: a member's
 * poll continues from its fetch position in this server session, not from
 * the committed position (docs/consumer-groups.md), so polls may run ahead
 * of commits.  What must not run ahead is the commit: "what the polls
 * returned" (eventlog.commit without an offset) would include batches Kafka
 * has not acknowledged, so each batch commits explicit offsets, one past
 * its last record in each partition, and only once Kafka acknowledged every
 * record of it and of every batch polled before it.  Acknowledgements of
 * different partitions arrive in any order; committing whole batches in
 * poll order keeps every committed position below the first record not yet
 * acknowledged, in every partition.
 *
 * Explicit offsets stop at a partition's last record: rolled-back offsets
 * after it are passed only by committing the fetch positions, which the
 * relay does when nothing is in flight any more (relay_pipe_commit_fetched),
 * so that -e sees the group at the last stable offset.
 *
 *-------------------------------------------------------------------------
 */
#include "relay.h"

#include <stdlib.h>
#include <string.h>

#define SQLSTATE_NOT_IN_PREREQUISITE_STATE "55000"

struct RelayPipe
{
	PGconn	   *conn;
	const char *group;
	const char *member;
	int			ntopics;
	const char *const *names;
	const int  *partitions;
	RelayBatch *head;			/* oldest batch not yet committed */
	RelayBatch *tail;
	int			nbatches;
	int64_t   **commit;			/* per topic and partition: to commit, or -1 */
	int64_t   **committed;		/* per topic and partition: highest committed */
};

RelayPipe *
relay_pipe_new(PGconn *conn, const char *group, const char *member,
			   int ntopics, const char *const *names, const int *partitions)
{
	RelayPipe  *p = cli_malloc(sizeof(RelayPipe));

	memset(p, 0, sizeof(*p));
	p->conn = conn;
	p->group = group;
	p->member = member;
	p->ntopics = ntopics;
	p->names = names;
	p->partitions = partitions;
	p->commit = cli_malloc(sizeof(int64_t *) * ntopics);
	p->committed = cli_malloc(sizeof(int64_t *) * ntopics);
	for (int t = 0; t < ntopics; t++)
	{
		p->commit[t] = cli_malloc(sizeof(int64_t) * partitions[t]);
		p->committed[t] = cli_malloc(sizeof(int64_t) * partitions[t]);
		for (int i = 0; i < partitions[t]; i++)
			p->commit[t][i] = p->committed[t][i] = -1;
	}
	return p;
}

/*
 * A new batch, last in the queue: a poll's result (the batch owns it until
 * Kafka acknowledged all of its records).
 */
RelayBatch *
relay_pipe_add(RelayPipe *p, int topic, PGresult *res)
{
	RelayBatch *b = cli_malloc(sizeof(RelayBatch));
	int			nrecords = PQntuples(res);

	memset(b, 0, sizeof(*b));
	b->topic = topic;
	b->res = res;
	b->nrecords = nrecords;
	b->unacked = nrecords;
	b->nparts = p->partitions[topic];
	b->next_offset = cli_malloc(sizeof(int64_t) * b->nparts);
	for (int i = 0; i < b->nparts; i++)
		b->next_offset[i] = -1;
	b->sent = cli_malloc(sizeof(RelaySent) * (nrecords > 0 ? nrecords : 1));
	for (int i = 0; i < nrecords; i++)
		b->sent[i].batch = b;
	if (p->tail)
		p->tail->next = b;
	else
		p->head = b;
	p->tail = b;
	p->nbatches++;
	return b;
}

/* The batch holds the record at offset of partition. */
void
relay_pipe_sent(RelayBatch *b, const char *topic, int32_t partition, int64_t offset)
{
	/* Kafka's topic was created or checked with the count at the start. */
	if (partition < 0 || partition >= b->nparts)
		cli_error("topic \"%s\" has partition %d now, and had %d partitions when the relay started: restart the relay",
				  topic, (int) partition, b->nparts);
	if (offset + 1 > b->next_offset[partition])
		b->next_offset[partition] = offset + 1;
}

/* Batches produced and not yet committed. */
int
relay_pipe_batches(RelayPipe *p)
{
	return p->nbatches;
}

static void
batch_free(RelayBatch *b)
{
	PQclear(b->res);
	free(b->next_offset);
	free(b->sent);
	free(b);
}

/*
 * Commits one partition's position; a partition this member no longer
 * owns (it missed its session timeout) is skipped: its new owner starts
 * from the committed position, so Kafka gets those records again, and
 * nothing is lost.
 */
static bool
commit_one(RelayPipe *p, int t, int part, int64_t next)
{
	char		ps[16];
	char		ns[24];
	PGresult   *res;
	bool		ok;

	snprintf(ps, sizeof(ps), "%d", part);
	snprintf(ns, sizeof(ns), "%lld", (long long) next);
	res = PQexecParams(p->conn,
					   "SELECT pg_catalog.count(*) FROM eventlog.commit($1, $2, $3, $4::integer, $5::bigint)",
					   5, NULL, (const char *[]) {p->names[t], p->group, p->member, ps, ns}, NULL, NULL, 0);
	ok = cli_result_ok(res);
	if (!ok && !cli_interrupted)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (state == NULL || strcmp(state, SQLSTATE_NOT_IN_PREREQUISITE_STATE) != 0)
			cli_fail_result(p->conn, res);
	}
	PQclear(res);
	return ok;
}

/*
 * Commits the positions of a topic's partitions gathered in p->commit[t]:
 * one statement for all of them, or, when the member lost one of them,
 * each that it still owns.
 */
static void
commit_topic(RelayPipe *p, int t)
{
	int64_t    *c = p->commit[t];
	size_t		size = 8;
	char	   *parts;
	char	   *nexts;
	char	   *pp;
	char	   *np;
	int			n = 0;
	PGresult   *res;

	/*
	 * Never backwards: a member that lost a partition and got it back
	 * polls again from the committed position, so a batch polled then may
	 * end before one polled earlier.
	 */
	for (int i = 0; i < p->partitions[t]; i++)
	{
		if (c[i] <= p->committed[t][i])
			c[i] = -1;
		if (c[i] >= 0)
			size += 32;
	}
	if (size == 8)
		return;
	parts = cli_malloc(size);
	nexts = cli_malloc(size);
	pp = parts + sprintf(parts, "{");
	np = nexts + sprintf(nexts, "{");
	for (int i = 0; i < p->partitions[t]; i++)
	{
		if (c[i] < 0)
			continue;
		pp += sprintf(pp, "%s%d", n ? "," : "", i);
		np += sprintf(np, "%s%lld", n ? "," : "", (long long) c[i]);
		n++;
	}
	strcpy(pp, "}");
	strcpy(np, "}");
	res = PQexecParams(p->conn,
					   "SELECT pg_catalog.count(*) FROM ROWS FROM (pg_catalog.unnest($4::integer[]), pg_catalog.unnest($5::bigint[])) AS u(p, o),"
					   " LATERAL eventlog.commit($1, $2, $3, u.p, u.o) AS c",
					   5, NULL, (const char *[]) {p->names[t], p->group, p->member, parts, nexts}, NULL, NULL, 0);
	free(parts);
	free(nexts);
	if (!cli_result_ok(res))
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		/*
		 * SIGTERM's cancel hit the commit: the relay's last commit tries
		 * again (the positions stay in p->commit).
		 */
		if (cli_interrupted && state && strcmp(state, "57014") == 0)
		{
			PQclear(res);
			return;
		}
		if (state == NULL || strcmp(state, SQLSTATE_NOT_IN_PREREQUISITE_STATE) != 0)
			cli_fail_result(p->conn, res);
		PQclear(res);
		/* A refused commit (a partition lost) does not count as committed. */
		for (int i = 0; i < p->partitions[t]; i++)
			if (c[i] >= 0 && !commit_one(p, t, i, c[i]))
				c[i] = -1;
	}
	else
		PQclear(res);
	for (int i = 0; i < p->partitions[t]; i++)
	{
		if (c[i] > p->committed[t][i])
			p->committed[t][i] = c[i];
		c[i] = -1;
	}
}

/*
 * Commits every batch at the head of the queue that Kafka acknowledged
 * whole, up to the first that it did not (yet): one commit per topic for
 * all of them.
 */
void
relay_pipe_commit(RelayPipe *p)
{
	while (p->head && p->head->unacked == 0 && !p->head->failed)
	{
		RelayBatch *b = p->head;

		for (int i = 0; i < b->nparts; i++)
			if (b->next_offset[i] > p->commit[b->topic][i])
				p->commit[b->topic][i] = b->next_offset[i];
		p->head = b->next;
		if (p->head == NULL)
			p->tail = NULL;
		p->nbatches--;
		batch_free(b);
	}
	/* Also positions that an interrupted commit left. */
	for (int t = 0; t < p->ntopics; t++)
		commit_topic(p, t);
}

/*
 * Nothing in flight, every record polled acknowledged and committed: the
 * fetch positions, which also move past rolled-back offsets after each
 * partition's last record, are now safe to commit ("what the polls
 * returned").  The caller has just polled every topic and got nothing.
 */
void
relay_pipe_commit_fetched(RelayPipe *p)
{
	if (p->nbatches != 0)
		cli_error("internal error: fetch positions committed with batches in flight");
	for (int t = 0; t < p->ntopics && !cli_interrupted; t++)
	{
		PGresult   *res = PQexecParams(p->conn, "SELECT pg_catalog.count(*) FROM eventlog.commit($1, $2, $3)",
									   3, NULL, (const char *[]) {p->names[t], p->group, p->member},
									   NULL, NULL, 0);

		if (!cli_result_ok(res) && !cli_interrupted)
			cli_fail_result(p->conn, res);
		PQclear(res);
	}
}
