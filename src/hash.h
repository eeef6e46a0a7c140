/*-------------------------------------------------------------------------
 *
 * hash.h
 *	  Kafka-compatible key hashing (hash.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_HASH_H
#define PG_EVENTLOG_HASH_H

extern int32 el_murmur2(const unsigned char *data, int length);
extern int32 el_partition_for_key(const char *key, int len, int32 partitions);

#endif							/* PG_EVENTLOG_HASH_H */
