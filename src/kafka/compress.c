/*-------------------------------------------------------------------------
 *
 * compress.c
 *	  Bounded decompression and compression for Kafka's four codecs,
 *	  through Debian's zlib, libsnappy (C API), liblz4 (frame API) and
 *	  libzstd.
 *
 * Every decompressor writes into an OutBuf that grows by doubling up to
 * limit + 1 bytes: reaching the extra byte proves the output is larger
 * than the limit without ever holding more, so a bomb costs at most the
 * limit in memory and the time to expand that much.
 *
 *-------------------------------------------------------------------------
 */
#include "compress.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

/* snappy-java's stream header: magic, then int32 version and compat. */
static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

#define XERIAL_HEADER_LEN	16
#define XERIAL_BLOCK		(32 * 1024)
#define SNAPPY_MAX_RATIO	32

/*
 * zstd's window is memory the decoder must hold; a hostile frame header
 * can ask for up to 2 GB.  Allow what the limit needs, but at least 8 MB
 * (the window zstd's levels up to 19 pick for a stream of unknown size,
 * as Kafka's Java producer writes them) and at most 128 MB (libzstd's own
 * default cap).
 */
#define ZSTD_MIN_WINDOW_LOG 23
#define ZSTD_MAX_WINDOW_LOG 27

typedef struct OutBuf
{
	uint8_t    *buf;
	size_t		len;
	size_t		cap;
	size_t		max;			/* limit + 1 */
} OutBuf;

static bool
ob_init(OutBuf *ob, size_t srclen, size_t limit)
{
	size_t		first;

	ob->max = limit == SIZE_MAX ? SIZE_MAX : limit + 1;
	first = srclen > SIZE_MAX / 4 ? SIZE_MAX : srclen * 4;
	if (first < 1024)
		first = 1024;
	if (first > ob->max)
		first = ob->max;
	ob->buf = malloc(first);
	ob->len = 0;
	ob->cap = first;
	return ob->buf != NULL;
}

/* More room; false at the limit (*status TOO_LARGE) or out of memory. */
static bool
ob_grow(OutBuf *ob, KCompStatus *status, const char **errmsg)
{
	size_t		ncap;
	uint8_t    *nbuf;

	if (ob->cap >= ob->max)
	{
		*status = K_COMP_TOO_LARGE;
		*errmsg = "decompressed data exceeds the size limit";
		return false;
	}
	ncap = ob->cap > ob->max / 2 ? ob->max : ob->cap * 2;
	nbuf = realloc(ob->buf, ncap);
	if (nbuf == NULL)
	{
		*status = K_COMP_NOMEM;
		*errmsg = "out of memory";
		return false;
	}
	ob->buf = nbuf;
	ob->cap = ncap;
	return true;
}

static uint32_t
load32_be(const uint8_t *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
		((uint32_t) p[2] << 8) | p[3];
}

/* ------------------------------------------------------------------------
 * gzip
 * ------------------------------------------------------------------------ */

static KCompStatus
gzip_decompress(const uint8_t *src, size_t srclen, OutBuf *ob,
				const char **errmsg)
{
	z_stream	zs;
	KCompStatus st = K_COMP_OK;

	if (srclen > UINT_MAX)
	{
		*errmsg = "compressed data too large";
		return K_COMP_TOO_LARGE;
	}
	memset(&zs, 0, sizeof(zs));
	/* 16 + window bits: gzip framing only, as Kafka's producers write. */
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
	{
		*errmsg = "out of memory";
		return K_COMP_NOMEM;
	}
	zs.next_in = (Bytef *) src;
	zs.avail_in = (uInt) srclen;
	for (;;)
	{
		size_t		room;
		int			ret;

		if (ob->len == ob->cap && !ob_grow(ob, &st, errmsg))
			break;
		room = ob->cap - ob->len;
		if (room > UINT_MAX)
			room = UINT_MAX;
		zs.next_out = ob->buf + ob->len;
		zs.avail_out = (uInt) room;
		ret = inflate(&zs, Z_NO_FLUSH);
		ob->len += room - zs.avail_out;
		if (ret == Z_STREAM_END)
		{
			if (zs.avail_in == 0)
				break;
			/* Another gzip member follows (gzip files may concatenate). */
			if (inflateReset(&zs) != Z_OK)
			{
				st = K_COMP_CORRUPT;
				*errmsg = "invalid gzip data";
				break;
			}
		}
		else if (ret == Z_OK)
			continue;
		else if (ret == Z_BUF_ERROR && zs.avail_out == 0)
			continue;			/* grow and go on */
		else if (ret == Z_BUF_ERROR)
		{
			st = K_COMP_CORRUPT;
			*errmsg = "truncated gzip data";
			break;
		}
		else
		{
			st = ret == Z_MEM_ERROR ? K_COMP_NOMEM : K_COMP_CORRUPT;
			*errmsg = zs.msg ? zs.msg : "invalid gzip data";
			break;
		}
	}
	inflateEnd(&zs);
	return st;
}

static KCompStatus
gzip_compress(int level, const uint8_t *src, size_t srclen, KWriter *w,
			  const char **errmsg)
{
	z_stream	zs;
	uLong		bound;
	int			ret;

	if (srclen > UINT_MAX / 2)
	{
		*errmsg = "data too large to compress";
		return K_COMP_NOMEM;
	}
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, level ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED,
					 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
	{
		*errmsg = "cannot initialize gzip";
		return K_COMP_NOMEM;
	}
	bound = deflateBound(&zs, (uLong) srclen);
	if (!kw_reserve(w, bound))
	{
		deflateEnd(&zs);
		*errmsg = "compressed data exceeds the writer's limit";
		return K_COMP_NOMEM;
	}
	zs.next_in = (Bytef *) src;
	zs.avail_in = (uInt) srclen;
	zs.next_out = w->buf + w->len;
	zs.avail_out = (uInt) bound;
	ret = deflate(&zs, Z_FINISH);
	if (ret != Z_STREAM_END)
	{
		deflateEnd(&zs);
		*errmsg = "gzip compression failed";
		return K_COMP_NOMEM;
	}
	w->len += zs.total_out;
	deflateEnd(&zs);
	return K_COMP_OK;
}

/* ------------------------------------------------------------------------
 * snappy
 * ------------------------------------------------------------------------ */

/* One raw snappy block into ob, its size checked against the limit first. */
static KCompStatus
snappy_block(const uint8_t *src, size_t srclen, OutBuf *ob,
			 const char **errmsg)
{
	size_t		n;
	size_t		got;

	if (snappy_uncompressed_length((const char *) src, srclen, &n) != SNAPPY_OK)
	{
		*errmsg = "invalid snappy length header";
		return K_COMP_CORRUPT;
	}
	/*
	 * Snappy's densest element, a 3-byte copy, yields 64 bytes: a length
	 * over SNAPPY_MAX_RATIO times the input is a lie, refused before its
	 * buffer is allocated.
	 */
	if (n / SNAPPY_MAX_RATIO > srclen)
	{
		*errmsg = "snappy length header exceeds what the data can hold";
		return K_COMP_CORRUPT;
	}
	if (n >= ob->max - ob->len)
	{
		*errmsg = "decompressed data exceeds the size limit";
		return K_COMP_TOO_LARGE;
	}
	while (ob->cap - ob->len < n)
	{
		KCompStatus st;

		if (!ob_grow(ob, &st, errmsg))
			return st;
	}
	got = n;
	if (snappy_uncompress((const char *) src, srclen,
						  (char *) ob->buf + ob->len, &got) != SNAPPY_OK ||
		got != n)
	{
		*errmsg = "invalid snappy data";
		return K_COMP_CORRUPT;
	}
	ob->len += n;
	return K_COMP_OK;
}

static KCompStatus
snappy_decompress(const uint8_t *src, size_t srclen, OutBuf *ob,
				  const char **errmsg)
{
	size_t		pos;

	if (srclen < XERIAL_HEADER_LEN ||
		memcmp(src, xerial_magic, sizeof(xerial_magic)) != 0)
		return snappy_block(src, srclen, ob, errmsg);

	/*
	 * xerial framing: the header (whose version and compat fields every
	 * reader ignores), then blocks of an int32 length and raw snappy.
	 */
	pos = XERIAL_HEADER_LEN;
	while (pos < srclen)
	{
		uint32_t	blen;
		KCompStatus st;

		if (srclen - pos < 4)
		{
			*errmsg = "truncated snappy block length";
			return K_COMP_CORRUPT;
		}
		blen = load32_be(src + pos);
		pos += 4;
		if (blen == 0 || blen > srclen - pos)
		{
			*errmsg = "invalid snappy block length";
			return K_COMP_CORRUPT;
		}
		st = snappy_block(src + pos, blen, ob, errmsg);
		if (st != K_COMP_OK)
			return st;
		pos += blen;
	}
	return K_COMP_OK;
}

static KCompStatus
snappy_compress_xerial(const uint8_t *src, size_t srclen, KWriter *w,
					   const char **errmsg)
{
	static const uint8_t version[8] = {0, 0, 0, 1, 0, 0, 0, 1};

	kw_raw(w, xerial_magic, sizeof(xerial_magic));
	kw_raw(w, version, sizeof(version));
	for (size_t pos = 0; pos < srclen;)
	{
		size_t		n = srclen - pos < XERIAL_BLOCK ? srclen - pos : XERIAL_BLOCK;
		size_t		clen = snappy_max_compressed_length(n);
		size_t		at;

		if (!kw_reserve(w, 4 + clen))
			break;
		at = kw_placeholder_int32(w);
		if (snappy_compress((const char *) src + pos, n,
							(char *) w->buf + w->len, &clen) != SNAPPY_OK)
		{
			*errmsg = "snappy compression failed";
			return K_COMP_NOMEM;
		}
		w->len += clen;
		kw_patch_int32(w, at, (int32_t) clen);
		pos += n;
	}
	if (w->error)
	{
		*errmsg = "compressed data exceeds the writer's limit";
		return K_COMP_NOMEM;
	}
	return K_COMP_OK;
}

/* ------------------------------------------------------------------------
 * lz4 (frame format)
 * ------------------------------------------------------------------------ */

static KCompStatus
lz4_decompress(const uint8_t *src, size_t srclen, OutBuf *ob,
			   const char **errmsg)
{
	LZ4F_dctx  *dctx;
	KCompStatus st = K_COMP_OK;
	size_t		pos = 0;
	size_t		hint = 1;

	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
	{
		*errmsg = "out of memory";
		return K_COMP_NOMEM;
	}
	for (;;)
	{
		size_t		dst;
		size_t		in;

		if (ob->len == ob->cap && !ob_grow(ob, &st, errmsg))
			break;
		dst = ob->cap - ob->len;
		in = srclen - pos;
		hint = LZ4F_decompress(dctx, ob->buf + ob->len, &dst,
							   src + pos, &in, NULL);
		if (LZ4F_isError(hint))
		{
			st = K_COMP_CORRUPT;
			*errmsg = LZ4F_getErrorName(hint);
			break;
		}
		pos += in;
		ob->len += dst;
		/* Done when every frame ended and all input was read. */
		if (hint == 0 && pos == srclen)
			break;
		/* Output full: grow and flush the rest. */
		if (ob->len == ob->cap)
			continue;
		if (pos == srclen)
		{
			st = K_COMP_CORRUPT;
			*errmsg = "truncated lz4 frame";
			break;
		}
		if (in == 0 && dst == 0)
		{
			st = K_COMP_CORRUPT;	/* no progress: never loop forever */
			*errmsg = "invalid lz4 frame";
			break;
		}
	}
	LZ4F_freeDecompressionContext(dctx);
	return st;
}

static KCompStatus
lz4_compress(int level, const uint8_t *src, size_t srclen, KWriter *w,
			 const char **errmsg)
{
	LZ4F_preferences_t prefs;
	size_t		bound;
	size_t		n;

	memset(&prefs, 0, sizeof(prefs));
	prefs.frameInfo.blockSizeID = LZ4F_max64KB;
	prefs.frameInfo.blockMode = LZ4F_blockIndependent;
	prefs.compressionLevel = level;
	bound = LZ4F_compressFrameBound(srclen, &prefs);
	if (!kw_reserve(w, bound))
	{
		*errmsg = "compressed data exceeds the writer's limit";
		return K_COMP_NOMEM;
	}
	n = LZ4F_compressFrame(w->buf + w->len, bound, src, srclen, &prefs);
	if (LZ4F_isError(n))
	{
		*errmsg = LZ4F_getErrorName(n);
		return K_COMP_NOMEM;
	}
	w->len += n;
	return K_COMP_OK;
}

/* ------------------------------------------------------------------------
 * zstd
 * ------------------------------------------------------------------------ */

static KCompStatus
zstd_decompress(const uint8_t *src, size_t srclen, OutBuf *ob, size_t limit,
				const char **errmsg)
{
	ZSTD_DCtx  *dctx = ZSTD_createDCtx();
	ZSTD_inBuffer in = {src, srclen, 0};
	KCompStatus st = K_COMP_OK;
	int			wlog = ZSTD_MIN_WINDOW_LOG;

	if (dctx == NULL)
	{
		*errmsg = "out of memory";
		return K_COMP_NOMEM;
	}
	while (wlog < ZSTD_MAX_WINDOW_LOG && ((size_t) 1 << wlog) < limit)
		wlog++;
	ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, wlog);
	for (;;)
	{
		ZSTD_outBuffer out;
		size_t		ret;

		if (ob->len == ob->cap && !ob_grow(ob, &st, errmsg))
			break;
		out.dst = ob->buf;
		out.size = ob->cap;
		out.pos = ob->len;
		ret = ZSTD_decompressStream(dctx, &out, &in);
		ob->len = out.pos;
		if (ZSTD_isError(ret))
		{
			st = ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge ?
				K_COMP_TOO_LARGE : K_COMP_CORRUPT;
			*errmsg = ZSTD_getErrorName(ret);
			break;
		}
		if (ret == 0 && in.pos == in.size)
			break;				/* the last frame ended with the input */
		if (in.pos == in.size && out.pos < out.size)
		{
			st = K_COMP_CORRUPT;
			*errmsg = "truncated zstd frame";
			break;
		}
	}
	ZSTD_freeDCtx(dctx);
	return st;
}

static KCompStatus
zstd_compress(int level, const uint8_t *src, size_t srclen, KWriter *w,
			  const char **errmsg)
{
	size_t		bound = ZSTD_compressBound(srclen);
	size_t		n;

	if (!kw_reserve(w, bound))
	{
		*errmsg = "compressed data exceeds the writer's limit";
		return K_COMP_NOMEM;
	}
	n = ZSTD_compress(w->buf + w->len, bound, src, srclen,
					  level ? level : ZSTD_CLEVEL_DEFAULT);
	if (ZSTD_isError(n))
	{
		*errmsg = ZSTD_getErrorName(n);
		return K_COMP_NOMEM;
	}
	w->len += n;
	return K_COMP_OK;
}

/* ------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------ */

KCompStatus
k_decompress(int codec, const void *src, size_t srclen, size_t limit,
			 uint8_t **out, size_t *outlen, const char **errmsg)
{
	OutBuf		ob;
	KCompStatus st;

	*out = NULL;
	*outlen = 0;
	*errmsg = NULL;
	if (codec < K_CODEC_GZIP || codec > K_CODEC_ZSTD)
	{
		*errmsg = "unknown compression codec";
		return K_COMP_UNSUPPORTED;
	}
	if (!ob_init(&ob, srclen, limit))
	{
		*errmsg = "out of memory";
		return K_COMP_NOMEM;
	}
	switch (codec)
	{
		case K_CODEC_GZIP:
			st = gzip_decompress(src, srclen, &ob, errmsg);
			break;
		case K_CODEC_SNAPPY:
			st = snappy_decompress(src, srclen, &ob, errmsg);
			break;
		case K_CODEC_LZ4:
			st = lz4_decompress(src, srclen, &ob, errmsg);
			break;
		default:
			st = zstd_decompress(src, srclen, &ob, limit, errmsg);
			break;
	}
	if (st == K_COMP_OK && ob.len > limit)
	{
		st = K_COMP_TOO_LARGE;
		*errmsg = "decompressed data exceeds the size limit";
	}
	if (st != K_COMP_OK)
	{
		free(ob.buf);
		return st;
	}
	*out = ob.buf;
	*outlen = ob.len;
	return K_COMP_OK;
}

KCompStatus
k_compress(int codec, int level, const void *src, size_t srclen, KWriter *w,
		   const char **errmsg)
{
	*errmsg = NULL;
	if (w->error)
	{
		*errmsg = "writer already failed";
		return K_COMP_NOMEM;
	}
	switch (codec)
	{
		case K_CODEC_NONE:
			kw_raw(w, src, srclen);
			if (w->error)
			{
				*errmsg = "data exceeds the writer's limit";
				return K_COMP_NOMEM;
			}
			return K_COMP_OK;
		case K_CODEC_GZIP:
			return gzip_compress(level, src, srclen, w, errmsg);
		case K_CODEC_SNAPPY:
			return snappy_compress_xerial(src, srclen, w, errmsg);
		case K_CODEC_LZ4:
			return lz4_compress(level, src, srclen, w, errmsg);
		case K_CODEC_ZSTD:
			return zstd_compress(level, src, srclen, w, errmsg);
	}
	*errmsg = "unknown compression codec";
	return K_COMP_UNSUPPORTED;
}

const char *
k_codec_name(int codec)
{
	switch (codec)
	{
		case K_CODEC_NONE:
			return "none";
		case K_CODEC_GZIP:
			return "gzip";
		case K_CODEC_SNAPPY:
			return "snappy";
		case K_CODEC_LZ4:
			return "lz4";
		case K_CODEC_ZSTD:
			return "zstd";
	}
	return "unknown";
}
