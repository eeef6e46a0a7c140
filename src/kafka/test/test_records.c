/*-------------------------------------------------------------------------
 *
 * test_records.c
 *	  Tests of records.c: batches written by kafka-python and librdkafka
 *	  (fixtures/), byte-identical re-encoding of them, builder round trips
 *	  with every codec, and every decoder error with its Kafka error code.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "records.h"
#include "test_util.h"

static const char *codec_names[] = {"none", "gzip", "snappy", "lz4", "zstd"};

#define BASE_TS 1700000000000LL

static KSlice
S(const char *s)
{
	KSlice		k = {(const uint8_t *) s, s ? (int32_t) strlen(s) : -1};

	return k;
}

static const KSlice NUL = {NULL, -1};

/* Recompute the CRC of the batch at b (after a test changed it). */
static void
fix_crc(uint8_t *b)
{
	uint32_t	len = ((uint32_t) b[8] << 24) | (b[9] << 16) | (b[10] << 8) | b[11];
	uint32_t	crc = k_crc32c(0, b + 21, len + 12 - 21);

	b[17] = (uint8_t) (crc >> 24);
	b[18] = (uint8_t) (crc >> 16);
	b[19] = (uint8_t) (crc >> 8);
	b[20] = (uint8_t) crc;
}

/*
 * A batch around a hand-written records section: header fields as given,
 * a correct batchLength and CRC.
 */
static void
raw_batch(KWriter *w, int16_t attrs, int32_t last_delta, int32_t count,
		  const uint8_t *sec, size_t seclen)
{
	size_t		at = w->len;

	kw_int64(w, 0);
	kw_int32(w, (int32_t) (49 + seclen));
	kw_int32(w, 0);
	kw_int8(w, 2);
	kw_uint32(w, 0);
	kw_int16(w, attrs);
	kw_int32(w, last_delta);
	kw_int64(w, BASE_TS);
	kw_int64(w, BASE_TS);
	kw_int64(w, -1);
	kw_int16(w, -1);
	kw_int32(w, -1);
	kw_int32(w, count);
	kw_raw(w, sec, seclen);
	fix_crc(w->buf + at);
}

/* A record, written by hand so that tests can break any part of it. */
static void
raw_record(KWriter *w, int32_t len_adjust, int32_t odelta, int32_t keylen,
		   int32_t nheaders, int32_t hkeylen)
{
	KWriter		body;

	kw_init(&body, 4096);
	kw_int8(&body, 0);
	kw_varlong(&body, 3);
	kw_varint(&body, odelta);
	kw_varint(&body, keylen);
	for (int32_t i = 0; i < keylen; i++)
		kw_int8(&body, 'k');
	kw_varint(&body, 1);
	kw_int8(&body, 'v');
	kw_varint(&body, nheaders);
	for (int32_t h = 0; h < nheaders && h < 4; h++)
	{
		kw_varint(&body, hkeylen);
		for (int32_t i = 0; i < hkeylen; i++)
			kw_int8(&body, 'h');
		kw_varint(&body, -1);
	}
	kw_varint(w, (int32_t) body.len + len_adjust);
	kw_raw(w, body.buf, body.len);
	kw_free(&body);
}

static KRecError
decode(const uint8_t *buf, size_t len, KRecordSet *set)
{
	return k_records_decode(buf, len, NULL, set);
}

static void
test_fixtures(void)
{
	for (int c = 0; c <= 4; c++)
	{
		char		name[32];
		size_t		len;
		uint8_t    *buf;
		KRecordSet	set;
		KRecError	e;

		snprintf(name, sizeof(name), "kp-%s.hex", codec_names[c]);
		buf = t_fixture(name, &len);
		e = decode(buf, len, &set);
		if (OK(e == KREC_OK && set.nbatches == 1 && set.nrecords == 3,
			   "kafka-python %s batch decodes: %s", codec_names[c], set.errmsg))
		{
			KRecordBatch *b = &set.batches[0];
			KRecord    *r = b->records;

			OK(b->codec == c && b->magic == 2 && b->producer_id == -1 &&
			   b->producer_epoch == -1 && b->base_sequence == -1 &&
			   b->base_timestamp == BASE_TS && b->max_timestamp == BASE_TS + 5 &&
			   b->last_offset_delta == 2 && b->raw == buf && b->raw_len == len,
			   "kafka-python %s: batch header fields", codec_names[c]);
			OK(t_slice_is(r[0].key, "k0") && t_slice_is(r[0].value, "hello") &&
			   r[0].timestamp == BASE_TS && r[0].nheaders == 2 &&
			   t_slice_is(r[0].headers[0].key, "h1") && t_slice_is(r[0].headers[0].value, "v1") &&
			   t_slice_is(r[0].headers[1].key, "h1") && t_slice_is(r[0].headers[1].value, ""),
			   "kafka-python %s: record 0 (key, value, duplicate headers, empty value)",
			   codec_names[c]);
			OK(KSLICE_IS_NULL(r[1].key) && r[1].value.len == 300 && r[1].value.ptr[299] == 'x' &&
			   r[1].timestamp == BASE_TS + 1 && r[1].nheaders == 0 && r[1].headers == NULL,
			   "kafka-python %s: record 1 (null key, 300-byte value)", codec_names[c]);
			OK(t_slice_is(r[2].key, "k2") && KSLICE_IS_NULL(r[2].value) &&
			   r[2].timestamp == BASE_TS + 5 && r[2].nheaders == 1 &&
			   t_slice_is(r[2].headers[0].key, "empty") && KSLICE_IS_NULL(r[2].headers[0].value),
			   "kafka-python %s: record 2 (tombstone, header with null value)", codec_names[c]);
		}
		k_records_free(&set);
		free(buf);

		snprintf(name, sizeof(name), "rd-%s.hex", codec_names[c]);
		buf = t_fixture(name, &len);
		e = decode(buf, len, &set);
		if (OK(e == KREC_OK && set.nbatches == 1 && set.nrecords == 2,
			   "librdkafka %s batch decodes: %s", codec_names[c], set.errmsg))
		{
			KRecordBatch *b = &set.batches[0];
			KRecord    *r = b->records;
			bool		hdrs = true;

			for (int i = 0; i < 2; i++)
				hdrs &= r[i].nheaders == 2 &&
					t_slice_is(r[i].headers[0].key, "h1") && t_slice_is(r[i].headers[0].value, "v1") &&
					t_slice_is(r[i].headers[1].key, "h2") && t_slice_is(r[i].headers[1].value, "v2");
			OK(b->codec == c && t_slice_is(r[0].key, "k0") && t_slice_is(r[0].value, "hello") &&
			   t_slice_is(r[1].key, "k1") && r[1].value.len == 300 && hdrs &&
			   r[0].timestamp == b->base_timestamp && b->max_timestamp >= b->base_timestamp &&
			   b->base_timestamp > BASE_TS,
			   "librdkafka %s: keys, values, headers, timestamps", codec_names[c]);
			if (c != 0)
				OK(b->decompressed != NULL && r[1].value.ptr >= b->decompressed &&
				   r[1].value.ptr + 300 <= b->decompressed + b->decompressed_len,
				   "librdkafka %s: values point into the decompressed buffer", codec_names[c]);
		}
		k_records_free(&set);
		free(buf);
	}
	{
		size_t		len;
		uint8_t    *buf = t_fixture("rd-v1.hex", &len);
		KRecordSet	set;
		KRecError	e = decode(buf, len, &set);

		OK(e == KREC_OLD_MAGIC && k_rec_error_code(e) == 43 && set.nbatches == 0 &&
		   set.error_batch == 0,
		   "librdkafka's magic 1 message set: UNSUPPORTED_FOR_MESSAGE_FORMAT (%s)", set.errmsg);
		k_records_free(&set);
		free(buf);
	}
}

/* Decode a fixture and build it again: the bytes must be the same. */
static void
test_reencode(const char *fixture)
{
	size_t		len;
	uint8_t    *buf = t_fixture(fixture, &len);
	KRecordSet	set;
	KWriter		w;
	KBatchBuilder bb;
	KRecordBatch *b;

	decode(buf, len, &set);
	b = &set.batches[0];
	kw_init(&w, 1 << 20);
	k_batch_begin(&bb, &w, b->base_offset, b->base_timestamp, K_CODEC_NONE, 0);
	bb.partition_leader_epoch = b->partition_leader_epoch;
	for (int i = 0; i < b->record_count; i++)
	{
		KRecord    *r = &b->records[i];

		k_batch_add(&bb, b->base_offset + r->offset_delta, r->timestamp,
					r->key, r->value, r->headers, r->nheaders);
	}
	OK(k_batch_end(&bb) && w.len == len && memcmp(w.buf, buf, len) == 0,
	   "%s built again by the builder is byte-identical", fixture);
	kw_free(&w);
	k_records_free(&set);
	free(buf);
}

static void
test_builder(void)
{
	KRecordHeader h2[2] = {{S("dup"), S("1")}, {S("dup"), NUL}};
	KRecordHeader h1[1] = {{S(""), S("")}};
	char		big[5000];

	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	for (int c = 0; c <= 4; c++)
	{
		KWriter		w;
		KBatchBuilder bb;
		KRecordSet	set;
		bool		built;

		kw_init(&w, 1 << 20);
		kw_int32(&w, 0x11223344);	/* something before the batch */
		k_batch_begin(&bb, &w, 1000, BASE_TS, c, 0);
		bb.attributes = K_ATTR_LOG_APPEND_TIME;
		k_batch_add(&bb, 1000, BASE_TS, S("key"), S("value"), h2, 2);
		k_batch_add(&bb, 1001, BASE_TS - 10, NUL, NUL, NULL, 0);
		k_batch_add(&bb, 1002, BASE_TS + 7, S(""), S(big), h1, 1);
		built = k_batch_end(&bb);
		k_batch_begin(&bb, &w, 1003, BASE_TS + 100, c, 0);
		k_batch_add(&bb, 1003, BASE_TS + 100, S("second"), S("batch"), NULL, 0);
		built &= k_batch_end(&bb);
		OK(built, "%s: two batches built", codec_names[c]);
		if (OK(decode(w.buf + 4, w.len - 4, &set) == KREC_OK && set.nbatches == 2 &&
			   set.nrecords == 4, "%s: and decoded: %s", codec_names[c], set.errmsg))
		{
			KRecordBatch *b = &set.batches[0];
			KRecord    *r = b->records;

			OK(b->base_offset == 1000 && b->codec == c &&
			   (b->attributes & K_ATTR_LOG_APPEND_TIME) && b->last_offset_delta == 2 &&
			   b->base_timestamp == BASE_TS && b->max_timestamp == BASE_TS + 7 &&
			   b->producer_id == -1 && b->producer_epoch == -1 && b->base_sequence == -1 &&
			   b->partition_leader_epoch == -1 && b->magic == 2,
			   "%s: header fields", codec_names[c]);
			OK(t_slice_is(r[0].key, "key") && t_slice_is(r[0].value, "value") &&
			   r[0].nheaders == 2 && t_slice_is(r[0].headers[0].key, "dup") &&
			   t_slice_is(r[0].headers[0].value, "1") && t_slice_is(r[0].headers[1].key, "dup") &&
			   KSLICE_IS_NULL(r[0].headers[1].value),
			   "%s: record with duplicate headers, one null", codec_names[c]);
			OK(KSLICE_IS_NULL(r[1].key) && KSLICE_IS_NULL(r[1].value) &&
			   r[1].timestamp == BASE_TS - 10 && r[1].nheaders == 0,
			   "%s: record with null key and value, earlier timestamp", codec_names[c]);
			OK(t_slice_is(r[2].key, "") && t_slice_is(r[2].value, big) &&
			   r[2].nheaders == 1 && t_slice_is(r[2].headers[0].key, "") &&
			   t_slice_is(r[2].headers[0].value, ""),
			   "%s: empty key, 5 KB value, empty header", codec_names[c]);
			OK(set.batches[1].base_offset == 1003 &&
			   t_slice_is(set.batches[1].records[0].key, "second"),
			   "%s: second batch", codec_names[c]);
		}
		k_records_free(&set);
		kw_free(&w);
	}

	test_reencode("kp-none.hex");
	test_reencode("rd-none.hex");

	{
		KWriter		w;
		KBatchBuilder bb;

		kw_init(&w, 1 << 20);
		k_batch_begin(&bb, &w, 10, BASE_TS, K_CODEC_NONE, 0);
		OK(k_batch_end(&bb) && w.len == 0, "a batch without records writes nothing");
		k_batch_begin(&bb, &w, 10, BASE_TS, K_CODEC_NONE, 0);
		k_batch_add(&bb, 11, BASE_TS, S("a"), S("b"), NULL, 0);
		OK(!k_batch_add(&bb, 11, BASE_TS, S("a"), S("b"), NULL, 0) && bb.failed,
		   "a repeated offset fails: %s", bb.errmsg);
		OK(!k_batch_end(&bb) && w.len == 0 && !w.error, "and the writer is cut back");
		k_batch_begin(&bb, &w, 10, BASE_TS, K_CODEC_NONE, 0);
		OK(!k_batch_add(&bb, 9, BASE_TS, S("a"), S("b"), NULL, 0), "an offset below the base fails");
		k_batch_abort(&bb);
		k_batch_begin(&bb, &w, 10, BASE_TS, K_CODEC_NONE, 0);
		OK(!k_batch_add(&bb, 10 + (int64_t) INT32_MAX + 1, BASE_TS, S("a"), S("b"), NULL, 0),
		   "an offset delta past INT32_MAX fails");
		k_batch_abort(&bb);
		k_batch_begin(&bb, &w, 10, BASE_TS, K_CODEC_NONE, 0);
		{
			KRecordHeader nullkey = {NUL, S("v")};

			OK(!k_batch_add(&bb, 10, BASE_TS, S("a"), S("b"), &nullkey, 1),
			   "a null header key fails");
		}
		k_batch_abort(&bb);
		OK(w.len == 0, "aborted batches leave nothing");
		k_batch_begin(&bb, &w, 10, BASE_TS, 6, 0);
		OK(bb.failed && !k_batch_end(&bb), "codec 6 fails");
		kw_free(&w);

		/* Offsets with gaps are fine to build, not to produce. */
		kw_init(&w, 1 << 20);
		k_batch_begin(&bb, &w, 10, BASE_TS, K_CODEC_NONE, 0);
		k_batch_add(&bb, 10, BASE_TS, S("a"), S("b"), NULL, 0);
		k_batch_add(&bb, 12, BASE_TS, S("a"), S("b"), NULL, 0);
		OK(k_batch_end(&bb), "a batch with an offset gap builds (a compacted log's)");
		{
			KRecordSet	set;
			KRecError	e = decode(w.buf, w.len, &set);

			OK(e == KREC_INVALID_RECORD, "but fails the producer checks: %s", set.errmsg);
			k_records_free(&set);
		}
		kw_free(&w);

		/* The writer's limit, uncompressed and compressed. */
		for (int c = 0; c <= 4; c += 4)
		{
			kw_init(&w, 200);
			kw_int32(&w, 7);
			k_batch_begin(&bb, &w, 0, BASE_TS, c, 0);
			k_batch_add(&bb, 0, BASE_TS, S("a"), S(big), NULL, 0);
			OK(!k_batch_end(&bb) && w.len == 4 && !w.error,
			   "%s: a batch over the writer's limit fails, the writer keeps what came before",
			   codec_names[c]);
			kw_free(&w);
		}
		kw_init(&w, 10);
		kw_int64(&w, 0);
		kw_int64(&w, 0);
		k_batch_begin(&bb, &w, 0, BASE_TS, 0, 0);
		OK(bb.failed && w.error, "a builder on a failed writer fails and leaves it failed");
		k_batch_abort(&bb);
		OK(w.error, "even after abort");
		kw_free(&w);
	}
}

/* Append a copy of the writer's content to itself. */
static void
twice(KWriter *w)
{
	size_t		n = w->len;
	uint8_t    *copy = malloc(n);

	memcpy(copy, w->buf, n);
	kw_raw(w, copy, n);
	free(copy);
}

/* Expect an error from a buffer; report the message. */
static void
expect(const uint8_t *buf, size_t len, const KRecLimits *lim, KRecError want,
	   int16_t code, const char *what)
{
	KRecordSet	set;
	KRecError	e = k_records_decode(buf, len, lim, &set);

	OK(e == want && set.error == want && k_rec_error_code(e) == code &&
	   set.nbatches == 0 && set.batches == NULL && set.errmsg[0] != 0,
	   "%s: error %d (code %d): %s", what, e, k_rec_error_code(e), set.errmsg);
	k_records_free(&set);
}

static void
test_errors(void)
{
	KWriter		w,
				sec;
	uint8_t    *p;

	/* A valid 2-batch buffer, cut at every byte. */
	{
		KBatchBuilder bb;
		size_t		first_end,
					bad = 0;

		kw_init(&w, 1 << 20);
		k_batch_begin(&bb, &w, 0, BASE_TS, K_CODEC_NONE, 0);
		k_batch_add(&bb, 0, BASE_TS, S("k"), S("v"), NULL, 0);
		k_batch_end(&bb);
		first_end = w.len;
		k_batch_begin(&bb, &w, 1, BASE_TS, K_CODEC_ZSTD, 0);
		k_batch_add(&bb, 1, BASE_TS, S("k"), S("v"), NULL, 0);
		k_batch_end(&bb);
		for (size_t cut = 0; cut < w.len; cut++)
		{
			KRecordSet	set;
			KRecError	e;

			p = malloc(cut ? cut : 1);
			memcpy(p, w.buf, cut);
			e = decode(p, cut, &set);
			if (cut == 0 || cut == first_end ? e != KREC_OK : e != KREC_CORRUPT)
				bad++;
			k_records_free(&set);
			free(p);
		}
		OK(bad == 0, "two batches cut at each of %zu bytes: corrupt, except between batches", w.len);

		/* Any single bit flipped: CRC or corrupt, never accepted. */
		bad = 0;
		for (size_t i = 0; i < w.len * 8; i++)
		{
			KRecordSet	set;
			KRecError	e;

			w.buf[i / 8] ^= 1 << (i % 8);
			e = decode(w.buf, w.len, &set);
			/* Flips in base offsets and epochs are not covered by the CRC. */
			if (e == KREC_OK &&
				!(i / 8 < 8 || (i / 8 >= 12 && i / 8 < 16) ||
				  (i / 8 >= first_end && i / 8 < first_end + 8) ||
				  (i / 8 >= first_end + 12 && i / 8 < first_end + 16)))
				bad++;
			k_records_free(&set);
			w.buf[i / 8] ^= 1 << (i % 8);
		}
		OK(bad == 0, "every bit flipped outside base offsets and leader epochs is caught");
		kw_free(&w);
	}

	kw_init(&w, 1 << 20);
	kw_init(&sec, 1 << 20);

#define RESET() (kw_reset(&w), kw_reset(&sec))

	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	{
		KRecordSet	set;

		OK(decode(w.buf, w.len, &set) == KREC_OK && set.nrecords == 1,
		   "the hand-made batch that the next tests break is valid");
		k_records_free(&set);
	}
	w.buf[30] ^= 1;
	expect(w.buf, w.len, NULL, KREC_CRC, 2, "crc mismatch");

	for (int magic = 0; magic <= 1; magic++)
	{
		RESET();
		raw_record(&sec, 0, 0, 1, 0, 0);
		raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
		w.buf[16] = (uint8_t) magic;
		expect(w.buf, w.len, NULL, KREC_OLD_MAGIC, 43, magic ? "magic 1" : "magic 0");
	}
	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	w.buf[16] = 3;
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "magic 3");
	w.buf[16] = 0xff;
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "magic -1");

	for (int codec = 5; codec <= 7; codec++)
	{
		RESET();
		raw_record(&sec, 0, 0, 1, 0, 0);
		raw_batch(&w, (int16_t) codec, 0, 1, sec.buf, sec.len);
		expect(w.buf, w.len, NULL, KREC_UNSUPPORTED_COMPRESSION, 76, "codec 5-7");
	}

	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	w.buf[8] = 0, w.buf[9] = 0, w.buf[10] = 0, w.buf[11] = 48;
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "batch length 48 (under a header)");
	w.buf[11] = 4;
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "batch length 4 (before the magic)");
	w.buf[8] = 0x80;
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "negative batch length");
	w.buf[8] = 0x7f, w.buf[9] = 0xff, w.buf[10] = 0xff, w.buf[11] = 0xff;
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "batch length INT32_MAX");
	expect(w.buf, 11, NULL, KREC_CORRUPT, 2, "11 bytes");
	{
		KRecLimits	lim = {60, 1 << 20, 100, 100};

		RESET();
		raw_record(&sec, 0, 0, 1, 0, 0);
		raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
		expect(w.buf, w.len, &lim, KREC_TOO_LARGE, 10, "batch over max_batch_bytes");
	}

	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_batch(&w, 0, 0, -1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "record count -1");
	RESET();
	raw_batch(&w, 0, -1, 0, NULL, 0);
	expect(w.buf, w.len, NULL, KREC_INVALID_RECORD, 87, "no records");
	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_batch(&w, 0, 1, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_INVALID_RECORD, 87, "last offset delta 1 with 1 record");
	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_batch(&w, 0, 1, 2, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "2 records counted, 1 present");
	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_batch(&w, 0, 99999, 100000, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "100000 records counted in 11 bytes");
	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_record(&sec, 0, 1, 1, 0, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "1 record counted, 2 present");
	RESET();
	raw_record(&sec, 0, 1, 1, 0, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_INVALID_RECORD, 87, "offset delta 1 for record 0");
	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_batch(&w, 0, 1, 2, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_INVALID_RECORD, 87, "repeated offset delta");
	RESET();
	raw_record(&sec, -1, 0, 1, 0, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "record length one short");
	RESET();
	raw_record(&sec, 1, 0, 1, 0, 0);
	kw_int8(&sec, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "record length one long");
	RESET();
	raw_record(&sec, 100, 0, 1, 0, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "record length past the section");
	RESET();
	kw_varint(&sec, 5);
	for (int i = 0; i < 6; i++)
		kw_int8(&sec, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "record length 5 (under the minimum)");
	RESET();
	raw_record(&sec, 0, 0, -2, 0, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "key length -2");
	RESET();
	raw_record(&sec, 0, 0, 1, -1, 0);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "header count -1");
	RESET();
	raw_record(&sec, 0, 0, 1, 1000, 1);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "header count 1000 in a few bytes");
	RESET();
	raw_record(&sec, 0, 0, 1, 1, -1);
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_INVALID_RECORD, 87, "null header key");
	RESET();
	raw_record(&sec, -20, 0, 1, 1, 50);
	sec.len -= 20;				/* the record's length is right, its header key's is not */
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "header key past the record");
	RESET();
	kw_varint(&sec, 12);
	kw_int8(&sec, 0);
	for (int i = 0; i < 11; i++)
		kw_int8(&sec, (int8_t) 0xff);	/* a varlong that never ends */
	raw_batch(&w, 0, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "over-long timestamp delta varlong");

	/* Compressed sections. */
	RESET();
	raw_record(&sec, 0, 0, 1, 0, 0);
	raw_batch(&w, K_CODEC_GZIP, 0, 1, sec.buf, sec.len);
	expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, "gzip flag on uncompressed records");
	for (int c = 1; c <= 4; c++)
	{
		KWriter		z;
		const char *msg;
		KRecLimits	lim = {1 << 20, 100000, 1000, 1000};
		char		what[64];

		RESET();
		kw_init(&z, 1 << 20);
		/* One record with a 200 KB value of zeros. */
		{
			KWriter		body;
			uint8_t    *zeros = calloc(1, 200000);

			kw_init(&body, 1 << 20);
			kw_int8(&body, 0);
			kw_varlong(&body, 0);
			kw_varint(&body, 0);
			kw_varint(&body, -1);
			kw_varint(&body, 200000);
			kw_raw(&body, zeros, 200000);
			kw_varint(&body, 0);
			kw_varint(&sec, (int32_t) body.len);
			kw_raw(&sec, body.buf, body.len);
			kw_free(&body);
			free(zeros);
		}
		k_compress(c, 0, sec.buf, sec.len, &z, &msg);
		raw_batch(&w, (int16_t) c, 0, 1, z.buf, z.len);
		snprintf(what, sizeof(what), "%s bomb (%zu bytes to 200 KB, limit 100 KB)",
				 codec_names[c], z.len);
		expect(w.buf, w.len, &lim, KREC_TOO_LARGE, 10, what);
		{
			KRecordSet	set;

			lim.max_decompressed = 300000;
			OK(k_records_decode(w.buf, w.len, &lim, &set) == KREC_OK &&
			   set.decompressed_total == sec.len, "%s: under a 300 KB limit it decodes",
			   codec_names[c]);
			k_records_free(&set);
			/* Twice: the limit is for all batches together. */
			twice(&w);
			snprintf(what, sizeof(what), "%s: two batches over the total limit", codec_names[c]);
			expect(w.buf, w.len, &lim, KREC_TOO_LARGE, 10, what);
		}
		RESET();
		memset(z.buf + z.len / 2, 0x55, z.len - z.len / 2);
		raw_batch(&w, (int16_t) c, 0, 1, z.buf, z.len);
		snprintf(what, sizeof(what), "%s: damaged compressed records", codec_names[c]);
		expect(w.buf, w.len, NULL, KREC_CORRUPT, 2, what);
		kw_free(&z);
	}
	{
		KRecLimits	lim = {1 << 20, 1 << 20, 3, 1000};

		RESET();
		raw_record(&sec, 0, 0, 1, 0, 0);
		raw_record(&sec, 0, 1, 1, 0, 0);
		raw_batch(&w, 0, 1, 2, sec.buf, sec.len);
		twice(&w);
		expect(w.buf, w.len, &lim, KREC_TOO_LARGE, 10, "4 records over max_records 3");
		lim.max_records = 4;
		{
			KRecordSet	set;

			OK(k_records_decode(w.buf, w.len, &lim, &set) == KREC_OK && set.nbatches == 2 &&
			   set.nrecords == 4, "4 records at max_records 4");
			k_records_free(&set);
		}
	}
	{
		KRecLimits	lim = {1 << 20, 1 << 20, 1000, 5};
		KRecordSet	set;

		/* Two records of 3 headers: 6 headers over a limit of 5, then at 6. */
		RESET();
		raw_record(&sec, 0, 0, 1, 3, 1);
		raw_record(&sec, 0, 1, 1, 3, 1);
		raw_batch(&w, 0, 1, 2, sec.buf, sec.len);
		expect(w.buf, w.len, &lim, KREC_TOO_LARGE, 10, "6 headers over max_headers 5");
		lim.max_headers = 6;
		OK(k_records_decode(w.buf, w.len, &lim, &set) == KREC_OK && set.nheaders == 6 &&
		   set.batches[0].records[1].nheaders == 3 &&
		   set.batches[0].records[1].headers == set.batches[0].headers + 3,
		   "6 headers at max_headers 6, each record pointing at its own");
		k_records_free(&set);
	}
	{
		KRecordSet	set;

		OK(decode(NULL, 0, &set) == KREC_OK && set.nbatches == 0, "no bytes: no batches");
		k_records_free(&set);
		k_records_free(&set);
		OK(set.batches == NULL, "k_records_free is idempotent");
	}
	OK(k_rec_error_code(KREC_OK) == 0 && k_rec_error_code(KREC_NOMEM) == -1,
	   "error codes of success and out of memory");
	kw_free(&w);
	kw_free(&sec);
}

void
test_records(void)
{
	test_fixtures();
	test_builder();
	test_errors();
}
