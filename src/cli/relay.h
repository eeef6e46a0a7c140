/*-------------------------------------------------------------------------
 *
 * relay.h
 *	  What relay.c (the loop: poll as a group, produce, commit) and
 *	  relay_kafka.c (librdkafka: the producer, the topics, the delivery
 *	  reports) share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RELAY_H
#define RELAY_H

#include "cli.h"

typedef struct RelayKafka RelayKafka;

/* One record to send, its bytes pointing into a PGresult. */
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
} RelayRecord;

extern RelayKafka *relay_kafka_open(const char *bootstrap, int nprops,
									char **props);
extern void relay_kafka_topic(RelayKafka *k, const char *topic, int partitions);
extern void relay_kafka_send(RelayKafka *k, const RelayRecord *r);
extern void relay_kafka_wait(RelayKafka *k);
extern void relay_kafka_close(RelayKafka *k);

#endif							/* RELAY_H */
