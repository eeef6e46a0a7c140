/*-------------------------------------------------------------------------
 *
 * kafka.h
 *	  The server side of the Kafka gateway's Fetch: the long poll of
 *	  kafka_await.c, which eventlog._kafka_fetch (kafka_fetch.c) calls
 *	  without going through SQL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_KAFKA_H
#define PG_EVENTLOG_KAFKA_H

/*
 * Whether some item (topic names[i], whose id is topic_ids[i], partition
 * partitions[i]) has a readable record at or after positions[i] now, from
 * the stable offsets in shared memory (a scan only where the stable offset
 * passed the position); moves positions past rolled-back offsets.  drops[i]
 * is el_topic_recheck's.
 */
extern bool el_kafka_any_readable(int n, text **names, const int32 *topic_ids,
								  const int32 *partitions, int64 *positions,
								  uint64 *drops);

/*
 * The long poll of eventlog._kafka_await over n items: true as soon as one
 * is readable (or a topic was dropped), false after timeout_ms.  Raises
 * 42704, 42501 and 22023 for a topic that does not exist, without the
 * consume privilege, or a partition that does not exist.  drops_seen: the
 * count of topic drops (el_topic_drop_count) the caller's lookups of the
 * topics already account for, or 0 to make the first look read the catalog
 * (el_topic_recheck).
 */
extern bool el_kafka_wait(int n, text **names, const int32 *partitions,
						  const int64 *positions, int32 timeout_ms,
						  uint64 drops_seen);

#endif							/* PG_EVENTLOG_KAFKA_H */
