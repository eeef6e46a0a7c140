/*-------------------------------------------------------------------------
 *
 * txn.h
 *	  Kafka transactions (issue 16 part 2): one PostgreSQL transaction per
 *	  producer transaction, in a libpq session of the gateway's own per
 *	  transactional id (txn.c; docs/delivery.md says why and what it
 *	  guarantees).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_TXN_H
#define KAFKA_TXN_H

#include <pthread.h>

#include "server.h"

/* A partition the open transaction stored batches in. */
typedef struct KTxnPart
{
	char	   *topic;
	int32_t		partition;
	int32_t		last_sequence;	/* of the last batch stored in it */
} KTxnPart;

/*
 * A transactional id this gateway coordinates: made by InitProducerId,
 * kept for the life of the process.  Every field but tid and next is
 * under mu, which a request holds while it uses the transaction.
 */
typedef struct KTxn
{
	char	   *tid;
	pthread_mutex_t mu;
	KConn		session;		/* its PostgreSQL session: pg, and who */
	int64_t		producer_id;	/* -1 until InitProducerId succeeded */
	int16_t		epoch;
	int32_t		timeout_ms;		/* InitProducerId's transaction_timeout_ms */
	bool		ongoing;		/* BEGIN is open */
	bool		failed;			/* a statement failed in it: it can only
								 * roll back */
	bool		lost;			/* rolled back under the client (timeout,
								 * session lost, failed commit): only
								 * EndTxn(abort) ends it */
	struct timespec started;	/* CLOCK_MONOTONIC, at BEGIN */
	struct timespec idle_since; /* when the last transaction ended */
	char		xid[24];		/* the open transaction's id (txid_current) */
	int32_t		nparts;
	int32_t		capparts;
	KTxnPart   *parts;
	struct KTxn *next;			/* the registry's list (never shrinks) */
} KTxn;

/*
 * The transaction of a transactional id, locked; with create, made if this
 * gateway has none.  NULL if there is none (or no memory).
 */
extern KTxn *ktxn_acquire(KSlice tid, bool create);
extern void ktxn_release(KTxn *t);

/* Whether a client connection is the role the transaction runs as. */
extern bool ktxn_same_role(const KTxn *t, const KConn *conn);

/*
 * The Kafka error of a request of producer (id, epoch) for transaction t
 * from conn, before anything is done (0: go on).
 */
extern int16_t ktxn_check(KTxn *t, KConn *conn, int64_t producer_id, int16_t epoch);

/* Opens BEGIN if need be (AddPartitionsToTxn, AddOffsetsToTxn). */
extern int16_t ktxn_begin(KTxn *t);

/* Whether statements may run in the open transaction now (Produce,
 * TxnOffsetCommit): 0, or the Kafka error. */
extern int16_t ktxn_usable(KTxn *t);

/* After a statement in the transaction failed: mark it failed or lost. */
extern void ktxn_statement_failed(KTxn *t);

/* A batch stored in the transaction (for the sequence numbers after an abort). */
extern bool ktxn_note_batch(KTxn *t, const char *topic, int32_t partition,
							int32_t last_sequence);

/*
 * EndTxn: commit or roll back; the Kafka error.  conn is the client's
 * connection, whose session asks PostgreSQL what became of a commit whose
 * answer was lost.
 */
extern int16_t ktxn_end(KTxn *t, KConn *conn, bool commit);

/* Roll back whatever is open (fencing by InitProducerId); no carry-over. */
extern void ktxn_fence(KTxn *t);

/* Starts the transaction.timeout.ms reaper once. */
extern void ktxn_start_reaper(void);

#endif							/* KAFKA_TXN_H */
