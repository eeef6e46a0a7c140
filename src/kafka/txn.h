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
 * kept until the registry is full and it is evicted (txn.c says when).
 * tid is fixed; refs, last_used and the links are under the registry's
 * lock; every other field is under mu, which a request holds while it
 * uses the transaction.  An entry is freed only at refs 0, so a pointer
 * from ktxn_acquire stays valid until ktxn_release.
 */
typedef struct KTxn
{
	char	   *tid;
	uint32_t	hash;			/* of tid: its bucket */
	int			refs;			/* ktxn_acquire's and the reaper's */
	struct timespec last_used;	/* CLOCK_MONOTONIC, at the last acquire */
	struct KTxn *hnext;			/* its bucket's chain */
	struct KTxn *newer;			/* the LRU list: most recently used first */
	struct KTxn *older;
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
} KTxn;

/*
 * The transaction of a transactional id, locked and referenced; with
 * create, made if this gateway has none (evicting an idle one if the
 * registry is full).  NULL if there is none (nor room for it, or no
 * memory).  ktxn_release unlocks it and drops the reference; an entry
 * whose InitProducerId never succeeded is forgotten then.
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
