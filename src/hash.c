/*-------------------------------------------------------------------------
 *
 * hash.c
 *	  Key hashing compatible with Apache Kafka's default partitioner.
 *
 * The Java client's default partitioner (librdkafka's "murmur2_random")
 * puts a keyed record in partition
 *		(murmur2(key bytes) & 0x7fffffff) % partition count
 * with Kafka's own murmur2 variant (seed 0x9747b28c).  Hashing the key's
 * UTF-8 bytes the same way makes a key land in the partition a Kafka
 * producer would choose for a topic of the same size (in a SQL_ASCII
 * database, whose text has no declared encoding, the bytes as stored).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "hash.h"

/* Kafka's org.apache.kafka.common.utils.Utils.murmur2, on unsigned ints. */
int32
el_murmur2(const unsigned char *data, int length)
{
	const uint32 seed = 0x9747b28c;
	const uint32 m = 0x5bd1e995;
	const int	r = 24;
	uint32		h = seed ^ (uint32) length;
	int			nblocks = length / 4;
	int			i;
	const unsigned char *tail;

	for (i = 0; i < nblocks; i++)
	{
		const unsigned char *b = data + i * 4;
		uint32		k = (uint32) b[0] | ((uint32) b[1] << 8) |
			((uint32) b[2] << 16) | ((uint32) b[3] << 24);

		k *= m;
		k ^= k >> r;
		k *= m;
		h *= m;
		h ^= k;
	}

	tail = data + nblocks * 4;
	switch (length % 4)
	{
		case 3:
			h ^= (uint32) tail[2] << 16;
			/* FALLTHROUGH */
		case 2:
			h ^= (uint32) tail[1] << 8;
			/* FALLTHROUGH */
		case 1:
			h ^= (uint32) tail[0];
			h *= m;
	}

	h ^= h >> 13;
	h *= m;
	h ^= h >> 15;

	return (int32) h;
}

/*
 * The bytes a Kafka client would send for the key "key" (of "len" bytes in
 * the server encoding): its UTF-8 encoding, since Kafka's string serialiser
 * writes UTF-8.  In a UTF8 database text already is UTF-8.  SQL_ASCII
 * declares no encoding at all: its text is whatever bytes the client sent,
 * so those bytes are hashed as they are (a key that is not valid UTF-8 is
 * still a key, and Kafka hashes bytes, not characters).  In any other
 * server encoding the key is converted first, so that it hashes as the same
 * string sent by a Kafka client does.
 */
static const unsigned char *
el_key_bytes(const char *key, int *len)
{
	int			encoding = GetDatabaseEncoding();

	if (encoding != PG_UTF8 && encoding != PG_SQL_ASCII)
	{
		char	   *utf8 = pg_server_to_any(key, *len, PG_UTF8);

		if (utf8 != key)
		{
			*len = strlen(utf8);
			return (const unsigned char *) utf8;
		}
	}
	return (const unsigned char *) key;
}

/* The partition of a key: see el_key_bytes for which bytes are hashed. */
int32
el_partition_for_key(const char *key, int len, int32 partitions)
{
	const unsigned char *bytes = el_key_bytes(key, &len);
	int32		hash = el_murmur2(bytes, len);

	return (int32) (((uint32) hash & 0x7fffffff) % (uint32) partitions);
}

PG_FUNCTION_INFO_V1(el_murmur2_sql);
PG_FUNCTION_INFO_V1(el_partition_for_key_sql);

/* eventlog.murmur2(key text) -> integer */
Datum
el_murmur2_sql(PG_FUNCTION_ARGS)
{
	text	   *key = PG_GETARG_TEXT_PP(0);
	int			len = VARSIZE_ANY_EXHDR(key);
	const unsigned char *bytes = el_key_bytes(VARDATA_ANY(key), &len);

	PG_RETURN_INT32(el_murmur2(bytes, len));
}

/* eventlog.partition_for_key(key text, partitions integer) -> integer */
Datum
el_partition_for_key_sql(PG_FUNCTION_ARGS)
{
	text	   *key = PG_GETARG_TEXT_PP(0);
	int32		partitions = PG_GETARG_INT32(1);

	if (partitions < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partitions must be at least 1"),
				 errdetail("The value given was %d.", partitions)));
	PG_RETURN_INT32(el_partition_for_key(VARDATA_ANY(key),
										 VARSIZE_ANY_EXHDR(key), partitions));
}
