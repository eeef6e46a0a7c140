/*-------------------------------------------------------------------------
 *
 * compress.h
 *	  Kafka's compression codecs, as the low three bits of a RecordBatch's
 *	  attributes name them: 1 gzip (zlib), 2 snappy (libsnappy), 3 lz4
 *	  (liblz4's frame format), 4 zstd (libzstd).
 *
 * Decompression is bounded: it never produces, nor allocates for output,
 * more than the caller's limit plus one byte; a stream that would expand
 * past the limit (a "decompression bomb") fails with K_COMP_TOO_LARGE.
 * The libraries' own working memory is bounded too (zlib's 32 KB window,
 * lz4's 4 MB blocks at most, zstd's window capped; see compress.c).
 *
 * Errors come with a short static message (the library's where it has
 * one); the caller names the codec around it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_COMPRESS_H
#define KAFKA_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

typedef enum KCodec
{
	K_CODEC_NONE = 0,
	K_CODEC_GZIP = 1,
	K_CODEC_SNAPPY = 2,
	K_CODEC_LZ4 = 3,
	K_CODEC_ZSTD = 4
} KCodec;

typedef enum KCompStatus
{
	K_COMP_OK = 0,
	K_COMP_CORRUPT,				/* malformed, truncated or failing a checksum */
	K_COMP_TOO_LARGE,			/* output would pass the limit */
	K_COMP_UNSUPPORTED,			/* a codec number this code does not know */
	K_COMP_NOMEM				/* out of memory (or the writer's limit) */
} KCompStatus;

/*
 * Decompress srclen bytes of codec into a malloc'd buffer (*out, free()
 * it; never NULL on success, even for empty output) of *outlen <= limit
 * bytes.  Snappy accepts raw snappy and the xerial (snappy-java) framing;
 * gzip, lz4 and zstd accept several concatenated members/frames.
 */
extern KCompStatus k_decompress(int codec, const void *src, size_t srclen,
								size_t limit, uint8_t **out, size_t *outlen,
								const char **errmsg);

/*
 * Append srclen bytes compressed with codec to w.  level 0 is the codec's
 * default.  Snappy is written in the xerial framing (32 KB blocks), which
 * every Kafka client reads; lz4 as one frame of independent 64 KB blocks
 * without content checksum (what Kafka's Java client writes).
 */
extern KCompStatus k_compress(int codec, int level, const void *src,
							  size_t srclen, KWriter *w, const char **errmsg);

/* "none", "gzip", "snappy", "lz4", "zstd", or "unknown". */
extern const char *k_codec_name(int codec);

#endif							/* KAFKA_COMPRESS_H */
