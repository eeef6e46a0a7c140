/*-------------------------------------------------------------------------
 *
 * records.h
 *	  Kafka's RecordBatch (magic 2, KIP-98): decoding the batches of a
 *	  Produce request and building batches for Fetch responses.
 *
 * A batch is a 61-byte header (baseOffset, batchLength, partitionLeader-
 * Epoch, magic, a CRC-32C over everything after it, attributes, lastOffset-
 * Delta, base and max timestamps, producer id/epoch, base sequence, record
 * count) and a records section, compressed as a whole when the attributes
 * name a codec.  Each record is a varint length, then attributes, varlong
 * timestampDelta, varint offsetDelta, key and value (varint length, -1
 * null), and headers (varint count; string key, nullable bytes value).
 *
 * Decoding checks everything before the caller sees anything: framing,
 * CRC, magic, codec, the record count against the bytes and the batch's
 * lastOffsetDelta, every record's length, offset deltas 0..n-1.  Keys,
 * values and headers are KSlices pointing into the caller's buffer (which
 * must outlive the set) or, for a compressed batch, into the batch's own
 * decompressed buffer.  Memory is bounded by the limits: decompressed
 * bytes, and the number of records and of headers (about 80 and 32 bytes
 * each in the arrays).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_RECORDS_H
#define KAFKA_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compress.h"
#include "wire.h"

/* Attribute bits of a batch. */
#define K_ATTR_CODEC_MASK		0x07
#define K_ATTR_LOG_APPEND_TIME	0x08	/* timestampType 1 */
#define K_ATTR_TRANSACTIONAL	0x10
#define K_ATTR_CONTROL			0x20
#define K_ATTR_DELETE_HORIZON	0x40	/* KIP-724, set by compaction only */

/* Bytes of a batch header; of a batch before its batchLength field ends. */
#define K_BATCH_HEADER_LEN		61
#define K_BATCH_LOG_OVERHEAD	12

/* Kafka error codes the decoder's errors map to. */
#define K_ERR_UNKNOWN_SERVER_ERROR			(-1)
#define K_ERR_CORRUPT_MESSAGE				2
#define K_ERR_MESSAGE_TOO_LARGE				10
#define K_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT 43
#define K_ERR_UNSUPPORTED_COMPRESSION_TYPE	76
#define K_ERR_INVALID_RECORD				87

typedef enum KRecError
{
	KREC_OK = 0,
	KREC_CORRUPT,				/* framing, lengths, varints, decompression */
	KREC_CRC,					/* CRC-32C mismatch */
	KREC_OLD_MAGIC,				/* a magic 0 or 1 message set */
	KREC_UNSUPPORTED_COMPRESSION,	/* codec 5-7 */
	KREC_INVALID_RECORD,		/* well-formed but not a valid producer batch */
	KREC_TOO_LARGE,				/* a limit of KRecLimits */
	KREC_NOMEM
} KRecError;

typedef struct KRecordHeader
{
	KSlice		key;			/* never null */
	KSlice		value;			/* len -1: null */
} KRecordHeader;

typedef struct KRecord
{
	int64_t		offset_delta;	/* 0..n-1 (checked) */
	int64_t		timestamp;		/* baseTimestamp + timestampDelta */
	KSlice		key;			/* len -1: null */
	KSlice		value;			/* len -1: null (a tombstone) */
	int32_t		nheaders;
	const KRecordHeader *headers;	/* in order, duplicates kept */
	int8_t		attributes;		/* unused by Kafka so far */
} KRecord;

typedef struct KRecordBatch
{
	int64_t		base_offset;
	int32_t		batch_length;
	int32_t		partition_leader_epoch;
	int8_t		magic;
	uint32_t	crc;
	int16_t		attributes;
	int			codec;			/* attributes & K_ATTR_CODEC_MASK */
	int32_t		last_offset_delta;
	int64_t		base_timestamp;
	int64_t		max_timestamp;
	int64_t		producer_id;
	int16_t		producer_epoch;
	int32_t		base_sequence;
	int32_t		record_count;
	KRecord    *records;		/* record_count of them */
	KRecordHeader *headers;		/* every record's headers, one array */
	int64_t		nheaders;
	uint8_t    *decompressed;	/* owned; slices point here if codec != 0 */
	size_t		decompressed_len;
	const uint8_t *raw;			/* the whole batch in the caller's buffer */
	size_t		raw_len;
} KRecordBatch;

typedef struct KRecLimits
{
	size_t		max_batch_bytes;	/* one batch, header included */
	size_t		max_decompressed;	/* all batches' records sections */
	int64_t		max_records;	/* all batches together */
	int64_t		max_headers;	/* all records' headers together */
} KRecLimits;

/* Used for a NULL limits argument. */
#define K_REC_DEFAULT_MAX_BATCH_BYTES	(64 * 1024 * 1024)
#define K_REC_DEFAULT_MAX_DECOMPRESSED	(64 * 1024 * 1024)
#define K_REC_DEFAULT_MAX_RECORDS		(1024 * 1024)
#define K_REC_DEFAULT_MAX_HEADERS		(1024 * 1024)

typedef struct KRecordSet
{
	int32_t		nbatches;
	KRecordBatch *batches;
	int64_t		nrecords;		/* all batches together */
	int64_t		nheaders;		/* all batches together */
	size_t		decompressed_total;
	KRecError	error;
	int32_t		error_batch;	/* index of the batch that failed, or -1 */
	char		errmsg[160];	/* lower case, no period */
} KRecordSet;

/*
 * Decode len bytes (a Produce partition's records field: zero or more
 * batches back to back) into set.  On error every batch is freed, set->error
 * and set->errmsg say why and the return value is the error.  Always call
 * k_records_free afterwards (it is idempotent).
 */
extern KRecError k_records_decode(const uint8_t *buf, size_t len,
								  const KRecLimits *limits, KRecordSet *set);
extern void k_records_free(KRecordSet *set);

/* The Kafka error code for an error (KREC_OK: 0). */
extern int16_t k_rec_error_code(KRecError e);

/*
 * Building one batch into a KWriter:
 *
 *		k_batch_begin(&b, w, base_offset, base_timestamp, codec, level);
 *		k_batch_add(&b, offset, timestamp, key, value, headers, nheaders);
 *		...
 *		if (!k_batch_end(&b))  ... b.errmsg ...
 *
 * Offsets must increase, from base_offset, by at most INT32_MAX in all.
 * The fields producer_id/epoch/base_sequence (-1 by default: not
 * idempotent), partition_leader_epoch (-1) and attributes (OR in
 * K_ATTR_LOG_APPEND_TIME, ...; the codec bits come from codec) may be set
 * any time before k_batch_end, which writes the header.  A batch without
 * records writes nothing.  On failure (writer's limit, bad offsets) the
 * writer is cut back to where the batch began.
 */
typedef struct KBatchBuilder
{
	KWriter    *out;
	KWriter		recs;			/* the records section, when compressing */
	size_t		start;			/* where the batch begins in out */
	int			codec;
	int			level;
	int64_t		base_offset;
	int64_t		base_timestamp;
	int64_t		max_timestamp;
	int64_t		last_delta;
	int32_t		count;
	int16_t		attributes;
	int32_t		partition_leader_epoch;
	int64_t		producer_id;
	int16_t		producer_epoch;
	int32_t		base_sequence;
	bool		failed;
	bool		out_failed_before;	/* out->error was set at begin */
	char		errmsg[120];
} KBatchBuilder;

extern void k_batch_begin(KBatchBuilder *b, KWriter *out, int64_t base_offset,
						  int64_t base_timestamp, int codec, int level);
extern bool k_batch_add(KBatchBuilder *b, int64_t offset, int64_t timestamp,
						KSlice key, KSlice value,
						const KRecordHeader *headers, int32_t nheaders);
extern bool k_batch_end(KBatchBuilder *b);
/* Give up on a batch (the writer is cut back); k_batch_end's failure does it. */
extern void k_batch_abort(KBatchBuilder *b);

#endif							/* KAFKA_RECORDS_H */
