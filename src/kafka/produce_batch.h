/*-------------------------------------------------------------------------
 *
 * produce_batch.h
 *	  Group commit of the Produce requests a client pipelines on one
 *	  connection (produce_batch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_PRODUCE_BATCH_H
#define KAFKA_PRODUCE_BATCH_H

#include "server.h"

/* At most this many requests share a transaction. */
#define K_BATCH_MAX_REQUESTS	32
/*
 * The frames of a batch are copied (for a replay), at most this many bytes
 * together: a connection holds at most this much beyond its own 64 KiB
 * buffer, outside --max-request-memory.
 */
#define K_BATCH_MAX_BYTES		(64 * 1024)

/* Handles one frame on its own, as if no batch existed (conn.c). */
typedef bool (*KBatchReplay) (KConn *conn, const uint8_t *frame, int32_t size, KWriter *w);

/*
 * Before a request is dispatched: 1 if it joins the connection's batch
 * (opening one if a whole frame waits behind it), 0 if it runs on its own
 * (an open batch was committed and its responses sent first), -1 if the
 * connection must close (a commit failed).
 */
extern int	kbatch_join(KConn *conn, const KRequest *req, const uint8_t *frame, int32_t size);

/*
 * After a joined request's handler: hold its response (w, or NULL when it
 * has none) until the commit; commit when no whole frame waits or the
 * batch is full.  If a statement of the batch failed, roll back and handle
 * each of its frames on its own with replay.  False: close.
 */
extern bool kbatch_hold(KConn *conn, KWriter *w);
extern bool kbatch_replay(KConn *conn, KWriter *w, KBatchReplay replay);

/*
 * Which batch the connection has open: a number of its own for each
 * transaction, 0 when none is open (what a request of it may reuse from
 * the one before, api_produce.c).
 */
extern uint64_t kbatch_generation(KConn *conn);

/* The strongest acks of the batch decides its commit's durability. */
extern void kbatch_note_acks(KConn *conn, int16_t acks);

/*
 * At the connection's end: commits an open batch whose requests all
 * succeeded (as each would have been committed on its own) and sends what
 * it can of their responses, then frees what it holds.
 */
extern void kbatch_end(KConn *conn);

#endif							/* KAFKA_PRODUCE_BATCH_H */
