/*-------------------------------------------------------------------------
 *
 * produce_batch.c
 *	  Group commit of the Produce requests a client pipelines on one
 *	  connection: one PostgreSQL transaction, one commit, for the requests
 *	  that were already waiting in the socket.
 *
 * A connection serves its requests one at a time, and a Produce alone is
 * a transaction of its own, so a producer sending small requests without
 * waiting for their answers (librdkafka with linger.ms=0 sends every
 * record on its own while up to max.in.flight are unanswered) gets at most
 * one commit's worth of requests a commit: when records come faster, the
 * requests queue up in the socket and their latency grows without bound.
 * Here, when a whole Produce frame already waits behind the one being
 * handled, the requests run inside one BEGIN, their responses are held,
 * and one COMMIT makes them all durable before any response goes out: the
 * more requests queue up, the fewer commits they cost, so the queue
 * drains.  What a response promises is unchanged: it is sent only after
 * the commit that stored its records.
 *
 * The batch never waits for the client: a request joins only if it was
 * already whole in the socket (kio_frame_pending), a Produce without a
 * transactional id whose copy fits, so an open transaction
 * (which holds the stable offset of its partitions back for every reader)
 * lasts no longer than the statements it runs.  At most
 * K_BATCH_MAX_REQUESTS share one, whose frames, which are copied, hold at
 * most K_BATCH_MAX_BYTES together.
 *
 * A request is stored exactly as on its own, except when a statement of
 * the batch fails (a privilege, a record PostgreSQL refuses...): that
 * aborts the transaction, so it is rolled back, the held responses are
 * dropped, and every frame of the batch is handled again on its own, each
 * in its own transaction and with its own response, in order.  A failed
 * COMMIT closes the connection without any of the responses: nothing of
 * the batch was stored, and the client sends its requests again.  A
 * request of another API commits the batch first, so responses keep the
 * order of the requests.  A connection that closes with a batch open (a
 * refused next frame, a request that closes it, a client gone) commits it
 * first: its requests succeeded, and would have been committed on their
 * own.
 *
 * The commit's durability is the strongest the batch's requests asked
 * for (acks=-1: synchronous_commit on; 1: local; 0: off).
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "io.h"
#include "log.h"
#include "produce_batch.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct KBatch
{
	int			count;			/* requests in the open transaction */
	int			sync_rank;		/* -1 none yet, 0 off, 1 local, 2 on */
	uint8_t    *frames;			/* [int32 size][bytes]... of each request */
	size_t		frames_len;
	size_t		frames_cap;
	KWriter		out;			/* the held responses, back to back */
	bool		replaying;		/* handling the frames again, one by one */
	uint64_t	generation;		/* of the open transaction (kbatch_generation) */
} KBatch;

/* Batches opened by this process, so that no two have the same number. */
static _Atomic uint64_t batch_generations;

static const char *const sync_names[] = {"off", "local", "on"};

/* Held responses' buffer grown past this is freed after its commit. */
#define K_BATCH_KEEP_OUT_BYTES	(256 * 1024)

/*
 * Whether the next request, already whole in the socket, may join: a
 * Produce whose copy fits beside `held` bytes of copies.  (A transactional
 * one is refused by kbatch_join when its turn comes.)
 */
static bool
next_joins(KConn *conn, size_t held)
{
	int32_t		size;
	int16_t		api_key;

	return kio_frame_pending(conn, &size, &api_key) && api_key == KAPI_PRODUCE &&
		held + 4 + (size_t) size <= K_BATCH_MAX_BYTES;
}

/* A Produce request with a transactional id: its records go elsewhere. */
static bool
transactional(const KRequest *req)
{
	KReader		r = req->body;
	KSlice		tid;

	if (req->api_version < 3)
		return false;
	tid = kr_nullable_string_v(&r, req->flexible);
	return r.error || !KSLICE_IS_NULL(tid);
}

static bool
append_frame(KBatch *b, const uint8_t *frame, int32_t size)
{
	size_t		need = b->frames_len + 4 + (size_t) size;

	if (need > b->frames_cap)
	{
		size_t		ncap = b->frames_cap ? b->frames_cap : 16 * 1024;
		uint8_t    *n;

		while (ncap < need)
			ncap *= 2;
		n = realloc(b->frames, ncap);
		if (n == NULL)
			return false;
		b->frames = n;
		b->frames_cap = ncap;
	}
	memcpy(b->frames + b->frames_len, &size, 4);
	memcpy(b->frames + b->frames_len + 4, frame, (size_t) size);
	b->frames_len = need;
	return true;
}

static void
reset(KConn *conn)
{
	KBatch	   *b = conn->batch;

	conn->batch_open = false;
	conn->batch_failed = false;
	conn->pinned = false;
	b->count = 0;
	b->sync_rank = -1;
	b->frames_len = 0;
	/* Many responses held once need not stay allocated. */
	if (b->out.cap > K_BATCH_KEEP_OUT_BYTES)
		kw_free(&b->out);
	kw_reset(&b->out);
}

/* COMMIT, then send the held responses.  False: close the connection. */
static bool
commit_batch(KConn *conn)
{
	KBatch	   *b = conn->batch;
	char		sql[64];
	PGresult   *res;
	bool		ok;
	int			count = b->count;

	snprintf(sql, sizeof(sql), "SET LOCAL synchronous_commit TO %s; COMMIT",
			 sync_names[b->sync_rank < 0 ? 2 : b->sync_rank]);
	res = conn->pg != NULL ? PQexec(conn->pg, sql) : NULL;
	/* An aborted transaction's COMMIT answers ROLLBACK, not an error. */
	ok = PQresultStatus(res) == PGRES_COMMAND_OK &&
		strcmp(PQcmdStatus(res), "COMMIT") == 0;
	if (!ok)
		klog(KLOG_WARNING, "conn %llu (%s): the commit of %d pipelined Produce requests failed: closing without their responses (the client sends them again): %s",
			 (unsigned long long) conn->id, conn->peer, count,
			 conn->pg == NULL ? "no session" :
			 res != NULL && PQresultStatus(res) != PGRES_COMMAND_OK ?
			 kpg_trimmed(PQresultErrorMessage(res)) : "the transaction had failed");
	PQclear(res);
	if (!ok)
	{
		reset(conn);
		kpg_close(conn);
		return false;
	}
	if (klog_enabled(KLOG_DEBUG))
		klog(KLOG_DEBUG, "conn %llu (%s): %d pipelined Produce requests committed in one transaction",
			 (unsigned long long) conn->id, conn->peer, count);
	ok = b->out.len == 0 || kio_send(conn, b->out.buf, b->out.len);
	if (!ok)
		klog(KLOG_DEBUG, "conn %llu (%s): cannot send a response: %s",
			 (unsigned long long) conn->id, conn->peer, strerror(errno));
	reset(conn);
	return ok;
}

int
kbatch_join(KConn *conn, const KRequest *req, const uint8_t *frame, int32_t size)
{
	KBatch	   *b = conn->batch;
	PGresult   *res;
	char		sqlstate[6];

	if (b != NULL && b->replaying)
		return 0;
	if (req->api_key != KAPI_PRODUCE || (size_t) size + 4 > K_BATCH_MAX_BYTES ||
		transactional(req) ||
		(conn->batch_open &&
		 (b->count >= K_BATCH_MAX_REQUESTS ||
		  b->frames_len + 4 + (size_t) size > K_BATCH_MAX_BYTES)))
		return conn->batch_open ? (commit_batch(conn) ? 0 : -1) : 0;
	if (!conn->batch_open)
	{
		/* Worth a transaction only if another request is already here. */
		if (conn->pinned || !next_joins(conn, (size_t) size + 4))
			return 0;
		if (b == NULL)
		{
			b = calloc(1, sizeof(KBatch));
			if (b == NULL)
				return 0;
			kw_init(&b->out, (size_t) K_BATCH_MAX_REQUESTS * 16 * 1024 * 1024);
			b->sync_rank = -1;
			conn->batch = b;
		}
		res = kpg_exec(conn, "BEGIN", 0, NULL, sqlstate);
		if (res == NULL)
			return 0;			/* logged; the request runs on its own */
		PQclear(res);
		conn->batch_open = true;
		conn->batch_failed = false;
		conn->pinned = true;
		b->generation = ++batch_generations;
	}
	if (!append_frame(b, frame, size))
	{
		/* Out of memory for the copy: this one runs on its own. */
		return commit_batch(conn) ? 0 : -1;
	}
	b->count++;
	return 1;
}

bool
kbatch_hold(KConn *conn, KWriter *w)
{
	KBatch	   *b = conn->batch;

	if (w != NULL)
	{
		kw_raw(&b->out, w->buf, w->len);
		if (b->out.error)
		{
			klog(KLOG_WARNING, "conn %llu (%s): out of memory holding Produce responses: closing",
				 (unsigned long long) conn->id, conn->peer);
			return false;
		}
	}
	if (b->count < K_BATCH_MAX_REQUESTS && next_joins(conn, b->frames_len))
		return true;
	return commit_batch(conn);
}

bool
kbatch_replay(KConn *conn, KWriter *w, KBatchReplay replay)
{
	KBatch	   *b = conn->batch;
	uint8_t    *frames = b->frames;
	size_t		len = b->frames_len;
	int			count = b->count;
	bool		ok = true;
	PGresult   *res;

	klog(KLOG_DEBUG, "conn %llu (%s): a statement failed among %d pipelined Produce requests: rolling back and handling each on its own",
		 (unsigned long long) conn->id, conn->peer, count);
	res = conn->pg != NULL ? PQexec(conn->pg, "ROLLBACK") : NULL;
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		PQclear(res);
		res = NULL;
		reset(conn);
		kpg_close(conn);		/* the next statement connects again */
	}
	PQclear(res);
	/* The frames are handled from this copy; the batch's buffer is free. */
	b->frames = NULL;
	b->frames_cap = 0;
	reset(conn);
	b->replaying = true;
	for (size_t at = 0; ok && at < len;)
	{
		int32_t		size;

		memcpy(&size, frames + at, 4);
		ok = replay(conn, frames + at + 4, size, w);
		at += 4 + (size_t) size;
	}
	b->replaying = false;
	free(frames);
	return ok;
}

uint64_t
kbatch_generation(KConn *conn)
{
	return conn->batch_open && !conn->batch_failed ? conn->batch->generation : 0;
}

void
kbatch_note_acks(KConn *conn, int16_t acks)
{
	int			rank = acks == 0 ? 0 : acks == 1 ? 1 : 2;

	if (conn->batch_open && rank > conn->batch->sync_rank)
		conn->batch->sync_rank = rank;
}

void
kbatch_end(KConn *conn)
{
	KBatch	   *b = conn->batch;

	if (b == NULL)
		return;
	/*
	 * Closing with a batch open (the next frame was refused, a request
	 * closed the connection, the client left): its requests succeeded, and
	 * on their own they would have been committed already.
	 */
	if (conn->batch_open && !conn->batch_failed)
		(void) commit_batch(conn);
	free(b->frames);
	kw_free(&b->out);
	free(b);
	conn->batch = NULL;
	conn->batch_open = false;
	conn->pinned = false;
}
