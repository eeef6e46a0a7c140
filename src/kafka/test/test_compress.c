/*-------------------------------------------------------------------------
 *
 * test_compress.c
 *	  Tests of crc32c.c (the standard vectors, pieces, both
 *	  implementations) and compress.c (round trips, limits and bombs,
 *	  truncation, garbage, raw and xerial snappy, concatenated members).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>

#include "compress.h"
#include "crc32c.h"
#include "test_util.h"

/* Snappy's best ratio is 64/3; zeros reach about 21 (compress.c allows 32). */
#define SNAPPY_RATIO_SEEN 20

void
test_crc32c(void)
{
	uint8_t		buf[32];
	uint8_t    *big;
	bool		same = true;
	bool		pieces = true;

	OK(k_crc32c(0, "123456789", 9) == 0xE3069283, "crc32c(\"123456789\") = e3069283 (%s)",
	   k_crc32c_impl());
	OK(k_crc32c_sw(0, "123456789", 9) == 0xE3069283, "slice-by-8 agrees");
	OK(k_crc32c(0, "", 0) == 0, "crc32c of nothing is 0");
	memset(buf, 0, 32);
	OK(k_crc32c(0, buf, 32) == 0x8A9136AA, "RFC 3720 B.4: 32 zero bytes");
	memset(buf, 0xff, 32);
	OK(k_crc32c(0, buf, 32) == 0x62A8AB43, "RFC 3720 B.4: 32 0xff bytes");
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t) i;
	OK(k_crc32c(0, buf, 32) == 0x46DD794E, "RFC 3720 B.4: 32 incrementing bytes");
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t) (31 - i);
	OK(k_crc32c(0, buf, 32) == 0x113FDB5C, "RFC 3720 B.4: 32 decrementing bytes");

	big = malloc(5000);
	t_fill_random(big, 5000, 42);
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len < 300; len += 7)
			same &= k_crc32c(0, big + off, len) == k_crc32c_sw(0, big + off, len);
	for (size_t cut = 0; cut <= 100; cut++)
		pieces &= k_crc32c(k_crc32c(0, big, cut), big + cut, 100 - cut) ==
			k_crc32c(0, big, 100);
	OK(same, "both implementations agree at every alignment and length");
	OK(pieces, "a crc taken in two pieces equals the one-shot crc");
	free(big);
}

/* Compress then decompress; true if the output equals the input. */
static bool
round_trip(int codec, const uint8_t *data, size_t len, size_t *clen)
{
	KWriter		w;
	const char *msg;
	uint8_t    *out;
	size_t		outlen;
	bool		good;

	kw_init(&w, 64 << 20);
	if (k_compress(codec, 0, data, len, &w, &msg) != K_COMP_OK)
	{
		kw_free(&w);
		return false;
	}
	*clen = w.len;
	good = k_decompress(codec, w.buf, w.len, len, &out, &outlen, &msg) == K_COMP_OK &&
		outlen == len && out != NULL && (len == 0 || memcmp(out, data, len) == 0);
	free(out);
	kw_free(&w);
	return good;
}

static void
test_codec(int codec)
{
	const char *name = k_codec_name(codec);
	size_t		biglen = 300000;
	uint8_t    *rnd = malloc(biglen);
	uint8_t    *text = malloc(biglen);
	size_t		clen;
	KWriter		w;
	const char *msg;
	uint8_t    *out;
	size_t		outlen;
	KCompStatus st;
	size_t		bad = 0;
	bool		good;

	t_fill_random(rnd, biglen, 7);
	for (size_t i = 0; i < biglen; i++)
		text[i] = "the quick brown fox "[i % 20] + (i % 1000 == 0);

	OK(round_trip(codec, (const uint8_t *) "", 0, &clen), "%s: empty input round trip", name);
	OK(round_trip(codec, (const uint8_t *) "a", 1, &clen), "%s: one byte round trip", name);
	OK(round_trip(codec, rnd, biglen, &clen), "%s: 300 KB of random bytes round trip", name);
	good = round_trip(codec, text, biglen, &clen);
	OK(good && clen < biglen / 10,
	   "%s: 300 KB of text round trip, compressed to %zu bytes", name, clen);

	kw_init(&w, 64 << 20);
	k_compress(codec, 0, text, 100000, &w, &msg);
	st = k_decompress(codec, w.buf, w.len, 100000, &out, &outlen, &msg);
	OK(st == K_COMP_OK && outlen == 100000, "%s: output exactly at the limit is fine", name);
	free(out);
	st = k_decompress(codec, w.buf, w.len, 99999, &out, &outlen, &msg);
	OK(st == K_COMP_TOO_LARGE && out == NULL, "%s: one byte over the limit fails: %s", name, msg);
	st = k_decompress(codec, w.buf, w.len, 0, &out, &outlen, &msg);
	OK(st == K_COMP_TOO_LARGE, "%s: limit 0 fails", name);

	/* Every cut of a one-block stream fails (xerial: past its header). */
	for (size_t cut = codec == K_CODEC_SNAPPY ? 17 : 0; cut < w.len; cut += 1 + cut / 64)
	{
		uint8_t    *p = malloc(cut ? cut : 1);

		memcpy(p, w.buf, cut);
		st = k_decompress(codec, p, cut, 200000, &out, &outlen, &msg);
		if (st == K_COMP_OK && codec == K_CODEC_SNAPPY && outlen < 100000)
			st = K_COMP_CORRUPT;	/* xerial: a cut between blocks is valid */
		if (st != K_COMP_CORRUPT)
			bad++;
		free(out);
		free(p);
	}
	OK(bad == 0, "%s: truncated streams fail as corrupt (%zu did not)", name, bad);
	kw_free(&w);

	st = k_decompress(codec, rnd, 1000, 1 << 20, &out, &outlen, &msg);
	OK(st == K_COMP_CORRUPT && out == NULL && msg != NULL, "%s: random bytes are corrupt: %s",
	   name, msg ? msg : "");

	/* A bomb: 8 MB of zeros against a 1 MB limit. */
	{
		uint8_t    *zeros = calloc(1, 8 << 20);

		kw_init(&w, 64 << 20);
		k_compress(codec, 0, zeros, 8 << 20, &w, &msg);
		st = k_decompress(codec, w.buf, w.len, 1 << 20, &out, &outlen, &msg);
		OK(st == K_COMP_TOO_LARGE, "%s: 8 MB of zeros (%zu bytes compressed) over a 1 MB limit fails",
		   name, w.len);
		kw_free(&w);
		free(zeros);
	}

	/* The writer's limit is honoured. */
	kw_init(&w, 100);
	st = k_compress(codec, 0, rnd, 1000, &w, &msg);
	OK(st == K_COMP_NOMEM && w.len <= 100, "%s: compressing past the writer's limit fails", name);
	kw_free(&w);

	free(rnd);
	free(text);
}

static void
test_codec_specifics(void)
{
	const char *msg;
	uint8_t    *out;
	size_t		outlen;
	KCompStatus st;
	uint8_t		raw[8192];
	size_t		rawlen = sizeof(raw);
	KWriter		w;

	/* Raw snappy, as librdkafka writes it. */
	snappy_compress("hello hello hello hello", 23, (char *) raw, &rawlen);
	st = k_decompress(K_CODEC_SNAPPY, raw, rawlen, 100, &out, &outlen, &msg);
	OK(st == K_COMP_OK && outlen == 23 && memcmp(out, "hello hello hello hello", 23) == 0,
	   "snappy: raw (unframed) snappy is accepted");
	free(out);

	/* Xerial with several blocks. */
	{
		uint8_t    *text = malloc(100000);
		size_t		clen;

		for (size_t i = 0; i < 100000; i++)
			text[i] = (uint8_t) (i * 7 / 3);
		OK(round_trip(K_CODEC_SNAPPY, text, 100000, &clen), "snappy: 4-block xerial stream round trip");
		kw_init(&w, 1 << 20);
		k_compress(K_CODEC_SNAPPY, 0, text, 100000, &w, &msg);
		OK(w.len > 16 && memcmp(w.buf, "\x82SNAPPY\0\0\0\0\1\0\0\0\1", 16) == 0,
		   "snappy: compression writes the xerial header");
		w.buf[19] ^= 0xff;		/* first block's length */
		st = k_decompress(K_CODEC_SNAPPY, w.buf, w.len, 1 << 20, &out, &outlen, &msg);
		OK(st == K_COMP_CORRUPT, "snappy: a bad xerial block length is corrupt: %s", msg);
		kw_free(&w);
		free(text);
	}
	{
		static const uint8_t hdr_only[] = "\x82SNAPPY\0\0\0\0\1\0\0\0\1";
		static const uint8_t zero_block[] = "\x82SNAPPY\0\0\0\0\1\0\0\0\1\0\0\0\0";

		st = k_decompress(K_CODEC_SNAPPY, hdr_only, 16, 100, &out, &outlen, &msg);
		OK(st == K_COMP_OK && outlen == 0, "snappy: a xerial header alone is empty data");
		free(out);
		st = k_decompress(K_CODEC_SNAPPY, zero_block, 20, 100, &out, &outlen, &msg);
		OK(st == K_COMP_CORRUPT, "snappy: a zero-length xerial block is corrupt");
		st = k_decompress(K_CODEC_SNAPPY, zero_block, 18, 100, &out, &outlen, &msg);
		OK(st == K_COMP_CORRUPT, "snappy: a cut xerial block length is corrupt");
	}
	{
		/* A raw snappy header claiming 2^32-1 bytes. */
		static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};

		uint8_t    *zeros = calloc(1, 100000);
		size_t		cap = snappy_max_compressed_length(100000);
		uint8_t    *zraw = malloc(cap);

		st = k_decompress(K_CODEC_SNAPPY, huge, sizeof(huge), 1 << 20, &out, &outlen, &msg);
		OK(st == K_COMP_CORRUPT, "snappy: a claimed length 32 times the input is refused: %s", msg);
		rawlen = cap;
		st = snappy_compress((const char *) zeros, 100000, (char *) zraw, &rawlen) == SNAPPY_OK ?
			K_COMP_OK : K_COMP_CORRUPT;
		OK(st == K_COMP_OK && rawlen < 100000 / SNAPPY_RATIO_SEEN, "snappy: 100 KB of zeros take %zu bytes", rawlen);
		st = k_decompress(K_CODEC_SNAPPY, zraw, rawlen, 100000, &out, &outlen, &msg);
		OK(st == K_COMP_OK && outlen == 100000, "snappy: raw, exactly at the limit");
		free(out);
		st = k_decompress(K_CODEC_SNAPPY, zraw, rawlen, 99999, &out, &outlen, &msg);
		OK(st == K_COMP_TOO_LARGE, "snappy: raw, over the limit: %s", msg);
		free(zeros);
		free(zraw);
	}

	/* Two gzip members back to back, as gzip(1) allows. */
	{
		KWriter		w2;

		kw_init(&w2, 1 << 20);
		k_compress(K_CODEC_GZIP, 0, "abc", 3, &w2, &msg);
		k_compress(K_CODEC_GZIP, 9, "def", 3, &w2, &msg);
		st = k_decompress(K_CODEC_GZIP, w2.buf, w2.len, 100, &out, &outlen, &msg);
		OK(st == K_COMP_OK && outlen == 6 && memcmp(out, "abcdef", 6) == 0,
		   "gzip: concatenated members decompress to both");
		free(out);
		w2.buf[w2.len - 5] ^= 1;	/* the second member's CRC */
		st = k_decompress(K_CODEC_GZIP, w2.buf, w2.len, 100, &out, &outlen, &msg);
		OK(st == K_COMP_CORRUPT, "gzip: a bad member CRC is corrupt: %s", msg);
		kw_free(&w2);
	}
	{
		/* zlib framing (not gzip) is refused: Kafka's gzip is gzip. */
		uint8_t		z[64];
		uLongf		zl = sizeof(z);

		compress(z, &zl, (const Bytef *) "abc", 3);
		st = k_decompress(K_CODEC_GZIP, z, zl, 100, &out, &outlen, &msg);
		OK(st == K_COMP_CORRUPT, "gzip: zlib framing is refused: %s", msg);
	}
	{
		/* lz4 and zstd: two frames back to back. */
		for (int codec = K_CODEC_LZ4; codec <= K_CODEC_ZSTD; codec++)
		{
			KWriter		w2;

			kw_init(&w2, 1 << 20);
			k_compress(codec, 0, "abc", 3, &w2, &msg);
			k_compress(codec, 0, "def", 3, &w2, &msg);
			st = k_decompress(codec, w2.buf, w2.len, 100, &out, &outlen, &msg);
			OK(st == K_COMP_OK && outlen == 6 && memcmp(out, "abcdef", 6) == 0,
			   "%s: two frames decompress to both", k_codec_name(codec));
			free(out);
			kw_free(&w2);
		}
	}
	{
		/* A zstd frame asking for a 2 GB window: refused before allocating. */
		static const uint8_t zwin[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa8, 0x01, 0x00, 0x00};

		st = k_decompress(K_CODEC_ZSTD, zwin, sizeof(zwin), 1 << 20, &out, &outlen, &msg);
		OK(st == K_COMP_TOO_LARGE, "zstd: a 2 GB window is refused: %s", msg);
	}
	{
		/* An lz4 frame with a content checksum, which liblz4 verifies. */
		LZ4F_preferences_t prefs;
		uint8_t		payload[1000];
		uint8_t		frame[2048];
		size_t		n;

		memset(&prefs, 0, sizeof(prefs));
		prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
		memset(payload, 'q', sizeof(payload));
		n = LZ4F_compressFrame(frame, sizeof(frame), payload, sizeof(payload), &prefs);
		st = k_decompress(K_CODEC_LZ4, frame, n, 1000, &out, &outlen, &msg);
		OK(st == K_COMP_OK && outlen == 1000, "lz4: a frame with a content checksum");
		free(out);
		frame[n - 1] ^= 1;
		st = k_decompress(K_CODEC_LZ4, frame, n, 1000, &out, &outlen, &msg);
		OK(st == K_COMP_CORRUPT, "lz4: a wrong content checksum is corrupt: %s", msg);
	}
	st = k_decompress(5, "x", 1, 100, &out, &outlen, &msg);
	OK(st == K_COMP_UNSUPPORTED && out == NULL, "codec 5 is unsupported");
	st = k_decompress(K_CODEC_NONE, "x", 1, 100, &out, &outlen, &msg);
	OK(st == K_COMP_UNSUPPORTED, "k_decompress does not take codec 0");
	kw_init(&w, 100);
	st = k_compress(K_CODEC_NONE, 0, "xyz", 3, &w, &msg);
	OK(st == K_COMP_OK && w.len == 3, "k_compress with codec 0 copies");
	st = k_compress(9, 0, "xyz", 3, &w, &msg);
	OK(st == K_COMP_UNSUPPORTED, "k_compress refuses codec 9");
	kw_free(&w);
	OK(strcmp(k_codec_name(4), "zstd") == 0 && strcmp(k_codec_name(-1), "unknown") == 0,
	   "codec names");
}

void
test_compress(void)
{
	for (int codec = K_CODEC_GZIP; codec <= K_CODEC_ZSTD; codec++)
		test_codec(codec);
	test_codec_specifics();
}
