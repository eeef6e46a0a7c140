/*-------------------------------------------------------------------------
 *
 * relay.h
 *	  What relay.c (the loop: poll as a group, produce, commit),
 *	  relay_batch.c (the batches in flight and the positions they commit),
 *	  relay_kafka.c (librdkafka: the producer, the topics, the delivery
 *	  reports) and relay_txn.c (--exactly-once's Kafka transactions and
 *	  positions) share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RELAY_H
#define RELAY_H

#include "cli.h"

typedef struct RelayKafka RelayKafka;

/*
 * One poll's records, from their production to Kafka until their
 * positions are committed.  Batches are committed in the order they were
 * polled, each only once Kafka acknowledged every record of it and of
 * every batch before it (relay_batch.c).
 */
typedef struct RelayBatch
{
	struct RelayBatch *next;
	int			topic;			/* index into relay.c's topics */
	int			nrecords;
	int			unacked;		/* records Kafka has not acknowledged yet */
	bool		failed;			/* Kafka refused one: never committed */
	int			nparts;
	int64_t    *next_offset;	/* per partition: one past its last record, or -1 */
	struct RelaySent *sent;		/* per record, the delivery report's opaque */
	PGresult   *res;			/* the poll's result: librdkafka sends its
								 * values from there, uncopied */
} RelayBatch;

/* A record in flight: its batch, and its source offset for error messages. */
typedef struct RelaySent
{
	RelayBatch *batch;
	int64_t		offset;
} RelaySent;

/* One record to send, its bytes pointing into its batch's PGresult. */
typedef struct RelayRecord
{
	const char *topic;
	int32_t		partition;
	int64_t		offset;
	int64_t		ts_ms;			/* Kafka's CreateTime, or -1 */
	const char *key;			/* NULL: a null key */
	size_t		key_len;
	const char *value;			/* NULL: a null value */
	size_t		value_len;
	const char *headers;		/* relay.c's encoding (relay_kafka.c) */
	size_t		headers_len;
	const char *topic_created;	/* the topic's created_at, Unix microseconds */
} RelayRecord;

extern RelayKafka *relay_kafka_open(const char *bootstrap, int nprops,
									char **props, const char *transactional_id);
extern void relay_kafka_topic(RelayKafka *k, const char *topic, int partitions,
							  bool compact);
extern const char *relay_kafka_failure(RelayKafka *k);
extern struct rd_kafka_s *relay_kafka_handle(RelayKafka *k);
extern bool relay_kafka_send(RelayKafka *k, const RelayRecord *r, RelaySent *s);
extern const char *relay_kafka_serve(RelayKafka *k, int timeout_ms);
extern const char *relay_kafka_wait(RelayKafka *k);
extern const char *relay_kafka_abandon(RelayKafka *k);
extern void relay_kafka_close(RelayKafka *k);

/* relay_batch.c */
typedef struct RelayPipe RelayPipe;

extern RelayPipe *relay_pipe_new(PGconn *conn, const char *group,
								 const char *member, int ntopics,
								 const char *const *names, const int *partitions);
extern RelayBatch *relay_pipe_add(RelayPipe *p, int topic, PGresult *res);
extern void relay_pipe_sent(RelayBatch *b, const char *topic, int32_t partition,
							int64_t offset);
extern int	relay_pipe_batches(RelayPipe *p);
extern void relay_pipe_commit(RelayPipe *p);
extern void relay_pipe_commit_fetched(RelayPipe *p);

/* relay_txn.c: --exactly-once */
typedef struct RelayTxn RelayTxn;

extern RelayTxn *relay_txn_start(RelayKafka *k, const char *bootstrap,
								 int nprops, char **props,
								 const char *transactional_id,
								 const char *positions_topic, const char *group,
								 int ntopics, const char *const *names,
								 const int *partitions, const char *const *created);
extern int64_t relay_txn_position(RelayTxn *t, int topic, int partition);
extern void relay_txn_begin(RelayTxn *t);
extern void relay_txn_commit(RelayTxn *t, RelayBatch *b);

#endif							/* RELAY_H */
