/*-------------------------------------------------------------------------
 *
 * producer.h
 *	  Idempotent producers (producer.c): the producer arguments of the
 *	  *_idempotent produce functions, and the check and record of a
 *	  producer's batches in a partition that produce.c wraps around its
 *	  append.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_PRODUCER_H
#define PG_EVENTLOG_PRODUCER_H

#include "fmgr.h"
#include "storage/itemptr.h"

#include "topic.h"

/* Batches kept per producer and partition (Kafka keeps 5 too). */
#define EL_PRODUCER_KEPT_BATCHES 5

/* The producer arguments of a call; "on" false for the plain functions. */
typedef struct ElIdempotence
{
	bool		on;
	int64		producer_id;
	int16		epoch;
	int32		sequence;		/* the first record's */
} ElIdempotence;

/* What el_producer_check found, for el_producer_record. */
typedef struct ElProducerBatch
{
	int64		producer_id;
	int32		topic_id;
	int32		partition;
	int16		epoch;
	int32		first_sequence; /* of the new batch */
	int32		last_sequence;
	bool		exists;			/* a producer_state row exists */
	ItemPointerData tid;		/* where, if it does */
	int			nkept;			/* kept batches of the same epoch */
	int32		kept_first[EL_PRODUCER_KEPT_BATCHES];
	int32		kept_last[EL_PRODUCER_KEPT_BATCHES];
	int64		kept_offset[EL_PRODUCER_KEPT_BATCHES];
} ElProducerBatch;

extern void el_producer_init(void);
extern void el_idempotence_args(FunctionCallInfo fcinfo, int first_arg,
								bool partition_given, ElIdempotence *idem);
extern bool el_producer_check(ElTopic *topic, int32 partition,
							  const ElIdempotence *idem, int count,
							  ElProducerBatch *batch, int64 *first_offset);
extern void el_producer_record(ElProducerBatch *batch, int64 first_offset);
extern void el_expire_producers(MemoryContext round_cxt);

#endif							/* PG_EVENTLOG_PRODUCER_H */
