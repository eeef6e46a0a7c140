/*-------------------------------------------------------------------------
 *
 * produce_store.h
 *	  Storing one Produce partition's decoded records in PostgreSQL: one
 *	  statement, so one transaction, per partition batch.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_PRODUCE_STORE_H
#define KAFKA_PRODUCE_STORE_H

#include "records.h"
#include "server.h"

/* Records named in one partition's record_errors, at most. */
#define K_MAX_RECORD_FAULTS		100

typedef struct KRecordFault
{
	int32_t		index;			/* the record's index in the batch */
	char		msg[256];
} KRecordFault;

typedef struct KProduceResult
{
	int16_t		error;			/* a Kafka error code, 0 if stored */
	int64_t		base_offset;	/* the first record's offset, else -1 */
	int64_t		log_start_offset;	/* -1 if unknown */
	char		errmsg[512];	/* "" or the error's explanation */
	int32_t		nfaults;		/* record_errors */
	KRecordFault faults[K_MAX_RECORD_FAULTS];
} KProduceResult;

/*
 * Store every record of set in partition of topic (a NUL-terminated legal
 * topic name), a binary topic or a JSON one, in one statement run as the
 * connection's role, committed with the synchronous_commit that acks asks
 * for (0: off, 1: local, -1: on).  Fills out; nothing is stored unless
 * out->error is 0.
 */
extern void kproduce_store(KConn *conn, const char *topic, int32_t partition,
						   bool binary, int16_t acks, const KRecordSet *set,
						   KProduceResult *out);

/* The Kafka error for a failed statement's SQLSTATE ("" if it never ran). */
extern int16_t kproduce_error_for_sqlstate(const char *sqlstate);

#endif							/* KAFKA_PRODUCE_STORE_H */
