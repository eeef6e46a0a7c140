/*-------------------------------------------------------------------------
 *
 * relay_from_kafka.h
 *	  What relay_from_kafka.c (librdkafka: the consumer, its assignment,
 *	  the loop) and relay_from_kafka_pg.c (PostgreSQL: the topics, the
 *	  stored positions, the transaction that stores records and positions
 *	  together) share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RELAY_FROM_KAFKA_H
#define RELAY_FROM_KAFKA_H

#include "cli.h"

/* A growing byte buffer: a partition's pending records, binary encoded. */
typedef struct FkBuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} FkBuf;

/* One partition of a topic being copied. */
typedef struct FkPart
{
	/* The stored position (what the next transaction expects), if any. */
	bool		stored;
	int64_t		stored_next;
	/* The next Kafka offset to copy: after the last record buffered. */
	int64_t		next;
	/* -e: the high watermark when the partition was assigned. */
	int64_t		target;
	bool		caught_up;
	/* Records received, not yet stored: eventlog.message elements. */
	FkBuf		pending;
	int			npending;
} FkPart;

typedef struct FkTopic
{
	const char *name;
	int			npartitions;	/* assigned, = Kafka's count */
	FkPart	   *parts;
} FkTopic;

/* relay_from_kafka.c: relay --from-kafka (relay.c dispatches). */
extern int	cmd_relay_from_kafka(int argc, char **argv);

/* relay_from_kafka_pg.c */
extern void fk_pg_init(PGconn *conn);
extern void fk_pg_topic(PGconn *conn, FkTopic *t, int kafka_partitions,
						bool at_start);
extern void fk_pg_load_positions(PGconn *conn, const char *source, FkTopic *t,
								 int from_partition);
extern void fk_pg_add_message(FkPart *p, const void *key, size_t key_len,
							  const void *value, size_t value_len,
							  int nheaders, const char *const *hnames,
							  const void *const *hvalues, const size_t *hlens,
							  int64_t ts_ms);
extern int64_t fk_pg_store(PGconn *conn, const char *source, FkTopic *topics,
						   int ntopics);

#endif							/* RELAY_FROM_KAFKA_H */
