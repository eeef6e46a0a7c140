/*-------------------------------------------------------------------------
 *
 * test_wire.c
 *	  Tests of wire.c: every primitive type at its boundaries, exact
 *	  encodings, zigzag, over-long varints, null and compact forms, array
 *	  counts that cannot fit, tagged fields, the writer's limit, and a
 *	  structure of every type truncated at every byte.
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static bool
bytes_are(const KWriter *w, const char *hex)
{
	size_t		n = strlen(hex) / 2;

	if (w->error || w->len != n)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		unsigned	b;

		if (sscanf(hex + 2 * i, "%2x", &b) != 1 || w->buf[i] != b)
			return false;
	}
	return true;
}

static void
reader_of(KReader *r, const uint8_t *b, size_t n)
{
	kr_init(r, b, n);
}

#define READER(r, ...) \
	static const uint8_t r##_bytes[] = {__VA_ARGS__}; \
	KReader r; \
	reader_of(&r, r##_bytes, sizeof(r##_bytes))

static void
test_fixed(void)
{
	static const int8_t i8[] = {INT8_MIN, -1, 0, 1, INT8_MAX};
	static const int16_t i16[] = {INT16_MIN, -1, 0, 1, INT16_MAX};
	static const int32_t i32[] = {INT32_MIN, -1, 0, 1, INT32_MAX};
	static const int64_t i64[] = {INT64_MIN, -1, 0, 1, INT64_MAX};
	KWriter		w;
	KReader		r;
	bool		good = true;

	kw_init(&w, 1 << 20);
	for (int i = 0; i < 5; i++)
	{
		kw_int8(&w, i8[i]);
		kw_int16(&w, i16[i]);
		kw_int32(&w, i32[i]);
		kw_uint32(&w, (uint32_t) i32[i]);
		kw_int64(&w, i64[i]);
		kw_bool(&w, i & 1);
	}
	kr_init(&r, w.buf, w.len);
	for (int i = 0; i < 5; i++)
	{
		good &= kr_int8(&r) == i8[i];
		good &= kr_int16(&r) == i16[i];
		good &= kr_int32(&r) == i32[i];
		good &= kr_uint32(&r) == (uint32_t) i32[i];
		good &= kr_int64(&r) == i64[i];
		good &= kr_bool(&r) == (i & 1);
	}
	OK(good && !r.error && kr_remaining(&r) == 0,
	   "int8/16/32/64, uint32, bool round trip at their boundaries");

	kw_reset(&w);
	kw_int16(&w, 0x0102);
	kw_int32(&w, 0x03040506);
	kw_int64(&w, 0x0708090a0b0c0d0eLL);
	OK(bytes_are(&w, "0102030405060708090a0b0c0d0e"), "integers are big-endian");
	kw_free(&w);

	{
		READER(b, 0x02);

		OK(kr_bool(&b) == true && !b.error, "bool: any non-zero byte is true");
	}
	{
		READER(t, 0x01, 0x02, 0x03);

		(void) kr_int32(&t);
		OK(t.error && kr_remaining(&t) == 0, "int32 from 3 bytes fails");
		OK(kr_int8(&t) == 0 && t.error, "errors are sticky, reads return 0");
	}
	{
		READER(t, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07);

		OK(kr_int64(&t) == 0 && t.error, "int64 from 7 bytes fails with 0");
	}
	{
		READER(t, 0x01, 0x02, 0x03);

		OK(kr_take(&t, 3) == t_bytes && kr_take(&t, 0) != NULL && !t.error &&
		   kr_take(&t, 1) == NULL && t.error, "kr_take: exact, empty, then past the end");
	}
}

static void
test_varints(void)
{
	static const struct
	{
		uint32_t	v;
		const char *hex;
	}			uv[] = {
		{0, "00"}, {1, "01"}, {127, "7f"}, {128, "8001"}, {300, "ac02"},
		{16383, "ff7f"}, {16384, "808001"}, {UINT32_MAX, "ffffffff0f"},
	};
	static const struct
	{
		int32_t		v;
		const char *hex;
	}			zz[] = {
		{0, "00"}, {-1, "01"}, {1, "02"}, {-2, "03"}, {63, "7e"}, {-64, "7f"},
		{64, "8001"}, {INT32_MAX, "feffffff0f"}, {INT32_MIN, "ffffffff0f"},
	};
	static const struct
	{
		int64_t		v;
		const char *hex;
	}			zl[] = {
		{0, "00"}, {-1, "01"}, {1, "02"},
		{INT64_MAX, "feffffffffffffffff01"}, {INT64_MIN, "ffffffffffffffffff01"},
	};
	KWriter		w;

	kw_init(&w, 64);
	for (size_t i = 0; i < sizeof(uv) / sizeof(uv[0]); i++)
	{
		KReader		r;

		kw_reset(&w);
		kw_uvarint(&w, uv[i].v);
		OK(bytes_are(&w, uv[i].hex) && k_uvarint_size(uv[i].v) == w.len,
		   "uvarint %u is %s", uv[i].v, uv[i].hex);
		kr_init(&r, w.buf, w.len);
		OK(kr_uvarint(&r) == uv[i].v && !r.error && kr_remaining(&r) == 0,
		   "uvarint %u reads back", uv[i].v);
	}
	for (size_t i = 0; i < sizeof(zz) / sizeof(zz[0]); i++)
	{
		KReader		r;

		kw_reset(&w);
		kw_varint(&w, zz[i].v);
		OK(bytes_are(&w, zz[i].hex), "varint (zigzag) %d is %s", zz[i].v, zz[i].hex);
		kr_init(&r, w.buf, w.len);
		OK(kr_varint(&r) == zz[i].v && !r.error, "varint %d reads back", zz[i].v);
	}
	for (size_t i = 0; i < sizeof(zl) / sizeof(zl[0]); i++)
	{
		KReader		r;

		kw_reset(&w);
		kw_varlong(&w, zl[i].v);
		OK(bytes_are(&w, zl[i].hex), "varlong %lld is %s", (long long) zl[i].v, zl[i].hex);
		kr_init(&r, w.buf, w.len);
		OK(kr_varlong(&r) == zl[i].v && !r.error, "varlong %lld reads back",
		   (long long) zl[i].v);
	}
	kw_reset(&w);
	kw_uvarlong(&w, UINT64_MAX);
	OK(bytes_are(&w, "ffffffffffffffffff01"), "uvarlong UINT64_MAX takes 10 bytes");
	kw_free(&w);

	{
		READER(r, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);

		(void) kr_uvarint(&r);
		OK(r.error, "uvarint of 6 bytes is malformed");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xff, 0x1f);

		(void) kr_uvarint(&r);
		OK(r.error, "uvarint with bits past 32 is malformed");
	}
	{
		READER(r, 0x80, 0x00);

		OK(kr_uvarint(&r) == 0 && !r.error, "a padded (non-minimal) uvarint is accepted, as Kafka does");
	}
	{
		READER(r, 0x80, 0x80);

		(void) kr_uvarint(&r);
		OK(r.error, "uvarint cut short is malformed");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);

		(void) kr_varlong(&r);
		OK(r.error, "varlong of 11 bytes is malformed");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02);

		(void) kr_uvarlong(&r);
		OK(r.error, "varlong whose 10th byte has bits past 64 is malformed");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xff, 0x0f);

		OK(kr_varint(&r) == INT32_MIN && !r.error, "varint ffffffff0f is INT32_MIN");
	}
}

static void
test_strings(void)
{
	KWriter		w;

	kw_init(&w, 1 << 20);
	kw_string(&w, "abc", 3);
	OK(bytes_are(&w, "0003616263"), "string: int16 length");
	kw_reset(&w);
	kw_string(&w, NULL, -1);
	OK(bytes_are(&w, "ffff"), "null string: length -1");
	kw_reset(&w);
	kw_compact_string(&w, "abc", 3);
	OK(bytes_are(&w, "04616263"), "compact string: uvarint length + 1");
	kw_reset(&w);
	kw_compact_string(&w, NULL, -1);
	OK(bytes_are(&w, "00"), "compact null string: 0");
	kw_reset(&w);
	kw_bytes(&w, "ab", 2);
	kw_bytes(&w, NULL, -1);
	kw_bytes(&w, "", 0);
	OK(bytes_are(&w, "000000026162ffffffff00000000"), "bytes, null bytes, empty bytes");
	kw_reset(&w);
	kw_compact_bytes(&w, "ab", 2);
	kw_compact_bytes(&w, NULL, -1);
	kw_compact_bytes(&w, "", 0);
	OK(bytes_are(&w, "0361620001"), "compact bytes, null, empty");
	kw_reset(&w);
	kw_cstring_v(&w, false, "x");
	kw_cstring_v(&w, true, "x");
	kw_cstring_v(&w, true, NULL);
	kw_string_v(&w, false, NULL, -1);
	kw_bytes_v(&w, true, "y", 1);
	kw_bytes_v(&w, false, "y", 1);
	kw_array_len_v(&w, true, 2);
	kw_array_len_v(&w, false, -1);
	kw_tags_v(&w, true);
	kw_tags_v(&w, false);
	OK(bytes_are(&w, "000178027800ffff02790000000179" "03" "ffffffff" "00"),
	   "the _v writers pick compact or classic forms");
	kw_reset(&w);
	{
		char	   *big = calloc(1, 40000);

		kw_string(&w, big, 40000);
		OK(w.error, "a string over 32767 bytes fails the writer");
		kw_reset(&w);
		memset(big, 'a', 39999);
		kw_cstring_v(&w, true, big);
		OK(w.error, "kw_cstring_v refuses over 32767 bytes too");
		free(big);
	}
	kw_free(&w);

	{
		READER(r, 0x00, 0x03, 'a', 'b', 'c', 0xff, 0xff);
		KSlice		s = kr_string(&r);
		KSlice		n = kr_nullable_string(&r);

		OK(t_slice_is(s, "abc") && KSLICE_IS_NULL(n) && !r.error,
		   "string and nullable null string read");
	}
	{
		READER(r, 0xff, 0xff);

		(void) kr_string(&r);
		OK(r.error, "a null non-nullable string is an error");
	}
	{
		READER(r, 0xff, 0xfe);

		(void) kr_nullable_string(&r);
		OK(r.error, "string length -2 is an error");
	}
	{
		READER(r, 0x00, 0x04, 'a', 'b', 'c');

		(void) kr_string(&r);
		OK(r.error, "string longer than the bytes left is an error");
	}
	{
		READER(r, 0x04, 'a', 'b', 'c', 0x00, 0x01);
		KSlice		s = kr_compact_string(&r);
		KSlice		n = kr_compact_nullable_string(&r);
		KSlice		e = kr_compact_string(&r);

		OK(t_slice_is(s, "abc") && KSLICE_IS_NULL(n) && t_slice_is(e, "") && !r.error,
		   "compact string, compact null, compact empty read");
	}
	{
		READER(r, 0x00);

		(void) kr_compact_string(&r);
		OK(r.error, "a compact null non-nullable string is an error");
	}
	{
		READER(r, 0x00, 0x00, 0x00, 0x02, 'a', 'b', 0xff, 0xff, 0xff, 0xff);
		KSlice		b = kr_bytes(&r);
		KSlice		n = kr_nullable_bytes(&r);

		OK(t_slice_is(b, "ab") && KSLICE_IS_NULL(n) && !r.error, "bytes and null bytes read");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xff);

		(void) kr_bytes(&r);
		OK(r.error, "null non-nullable bytes is an error");
	}
	{
		READER(r, 0x80, 0x00, 0x00, 0x00);

		(void) kr_nullable_bytes(&r);
		OK(r.error, "bytes length INT32_MIN is an error");
	}
	{
		READER(r, 0x7f, 0xff, 0xff, 0xff, 0x00);

		(void) kr_nullable_bytes(&r);
		OK(r.error, "bytes length INT32_MAX past the end is an error");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xff, 0x0f);

		(void) kr_compact_nullable_bytes(&r);
		OK(r.error, "compact bytes length UINT32_MAX - 1 is an error");
	}
	{
		READER(r, 0x03, 'a', 'b', 0x00, 0x01);
		KSlice		b = kr_compact_bytes(&r);
		KSlice		n = kr_compact_nullable_bytes(&r);
		KSlice		e = kr_compact_bytes(&r);

		OK(t_slice_is(b, "ab") && KSLICE_IS_NULL(n) && t_slice_is(e, "") && !r.error,
		   "compact bytes, null, empty read");
	}
	{
		READER(r, 0x00, 0x01, 'x', 0x02, 'x', 0x00, 0x00, 0x00, 0x01, 'y', 0x02, 'y');

		OK(t_slice_is(kr_string_v(&r, false), "x") &&
		   t_slice_is(kr_string_v(&r, true), "x") &&
		   t_slice_is(kr_bytes_v(&r, false), "y") &&
		   t_slice_is(kr_nullable_bytes_v(&r, true), "y") && !r.error,
		   "the _v readers pick compact or classic forms");
	}
}

static void
test_arrays_and_tags(void)
{
	{
		READER(r, 0x00, 0x00, 0x00, 0x02, 1, 2, 3, 4, 5, 6, 7, 8);

		OK(kr_array_len(&r, 4) == 2 && !r.error, "array of 2 four-byte elements in 8 bytes");
	}
	{
		READER(r, 0x00, 0x00, 0x00, 0x03, 1, 2, 3, 4, 5, 6, 7, 8);

		OK(kr_array_len(&r, 4) == 0 && r.error, "array of 3 four-byte elements in 8 bytes fails");
	}
	{
		READER(r, 0x7f, 0xff, 0xff, 0xff);

		(void) kr_array_len(&r, 0);
		OK(r.error, "array count INT32_MAX fails even with elements of no size");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xff, 0x00);

		OK(kr_array_len(&r, 4) == -1 && !r.error, "array count -1 is a null array");
		OK(kr_compact_array_len(&r, 4) == -1 && !r.error, "compact array count 0 is a null array");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xfe);

		(void) kr_array_len(&r, 1);
		OK(r.error, "array count -2 fails");
	}
	{
		READER(r, 0x03, 0xaa, 0xbb);

		OK(kr_compact_array_len(&r, 1) == 2 && !r.error, "compact array count n+1");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xff, 0x0f);

		(void) kr_compact_array_len(&r, 1);
		OK(r.error, "compact array count UINT32_MAX - 1 fails");
	}
	{
		READER(r, 0x01, 0x01);

		OK(kr_array_len_v(&r, true, 1) == 0 && !r.error && kr_remaining(&r) == 1,
		   "kr_array_len_v flexible: compact empty array");
	}
	{
		/* Two tagged fields: tag 0 with 2 bytes, tag 5 with none; then 0x77. */
		READER(r, 0x02, 0x00, 0x02, 0xaa, 0xbb, 0x05, 0x00, 0x77);

		kr_skip_tagged_fields(&r);
		OK(!r.error && kr_int8(&r) == 0x77, "tagged fields are skipped");
	}
	{
		READER(r, 0x01, 0x00, 0x05, 0xaa);

		kr_skip_tagged_fields(&r);
		OK(r.error, "a tagged field longer than the bytes left fails");
	}
	{
		READER(r, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00);

		kr_skip_tagged_fields(&r);
		OK(r.error, "a huge tagged field count fails at the end of the bytes");
	}
	{
		READER(r, 0x00, 0x00, 0x42);

		kr_tags_v(&r, false);
		OK(kr_int8(&r) == 0, "kr_tags_v reads nothing in a classic version");
		kr_tags_v(&r, true);
		OK(kr_int8(&r) == 0x42 && !r.error, "kr_tags_v skips tags in a flexible version");
	}
}

static void
test_writer(void)
{
	KWriter		w;
	size_t		at;

	kw_init(&w, 10);
	kw_int64(&w, 1);
	kw_int16(&w, 2);
	OK(!w.error && w.len == 10, "a writer fills up to its limit");
	kw_int8(&w, 3);
	OK(w.error && w.len == 10, "one byte past the limit fails and writes nothing");
	kw_int8(&w, 3);
	OK(w.error && w.len == 10, "and stays failed");
	kw_reset(&w);
	OK(!w.error && w.len == 0 && w.buf != NULL, "kw_reset keeps the buffer");
	at = kw_placeholder_int32(&w);
	kw_int16(&w, 7);
	kw_patch_int32(&w, at, 0x01020304);
	OK(bytes_are(&w, "010203040007"), "a placeholder is patched in place");
	kw_patch_int32(&w, 4, 5);
	OK(bytes_are(&w, "010203040007"), "a patch past the end is ignored");
	kw_free(&w);
	OK(w.buf == NULL && w.len == 0 && w.limit == 10, "kw_free keeps the limit");

	kw_init(&w, 100);
	OK(!kw_reserve(&w, SIZE_MAX) && w.error, "a reservation past the limit fails cleanly");
	kw_free(&w);
	kw_init(&w, 1 << 20);
	for (int i = 0; i < 100000; i++)
		kw_int32(&w, i);
	OK(!w.error && w.len == 400000 && w.cap <= (1 << 20), "the buffer grows by doubling under the limit");
	kw_free(&w);
	kw_init(&w, 0);
	kw_raw(&w, NULL, 0);
	OK(!w.error && w.len == 0, "writing nothing into a zero-limit writer is fine");
	kw_int8(&w, 1);
	OK(w.error, "writing a byte into it fails");
	kw_free(&w);
	{
		KReader		r;

		kr_init(&r, NULL, 0);
		OK(kr_remaining(&r) == 0 && kr_int8(&r) == 0 && r.error, "a reader of nothing");
	}
}

/*
 * One structure with every type, classic and flexible: every prefix of it
 * must fail to decode, the whole must decode to what was written.
 */
static void
write_all(KWriter *w, bool flex)
{
	kw_int8(w, -5);
	kw_bool(w, true);
	kw_int16(w, -300);
	kw_int32(w, 123456789);
	kw_uint32(w, 0xdeadbeef);
	kw_int64(w, -1234567890123LL);
	kw_uvarint(w, 300);
	kw_varint(w, -70000);
	kw_varlong(w, INT64_MIN);
	kw_uvarlong(w, 1ULL << 40);
	kw_string_v(w, flex, "topic", 5);
	kw_string_v(w, flex, NULL, -1);
	kw_bytes_v(w, flex, "\x00\x01\x02", 3);
	kw_bytes_v(w, flex, NULL, -1);
	kw_array_len_v(w, flex, 2);
	kw_int32(w, 1);
	kw_int32(w, 2);
	if (flex)
	{
		kw_uvarint(w, 1);		/* one tagged field */
		kw_uvarint(w, 3);		/* tag */
		kw_uvarint(w, 3);		/* size */
		kw_raw(w, "tag", 3);
	}
	kw_tags_v(w, flex);
}

static bool
read_all(const uint8_t *buf, size_t len, bool flex)
{
	KReader		r;
	bool		v = true;
	int32_t		n;

	kr_init(&r, buf, len);
	v &= kr_int8(&r) == -5;
	v &= kr_bool(&r);
	v &= kr_int16(&r) == -300;
	v &= kr_int32(&r) == 123456789;
	v &= kr_uint32(&r) == 0xdeadbeef;
	v &= kr_int64(&r) == -1234567890123LL;
	v &= kr_uvarint(&r) == 300;
	v &= kr_varint(&r) == -70000;
	v &= kr_varlong(&r) == INT64_MIN;
	v &= kr_uvarlong(&r) == 1ULL << 40;
	v &= t_slice_is(kr_string_v(&r, flex), "topic");
	v &= KSLICE_IS_NULL(kr_nullable_string_v(&r, flex));
	v &= kr_bytes_v(&r, flex).len == 3;
	v &= KSLICE_IS_NULL(kr_nullable_bytes_v(&r, flex));
	n = kr_array_len_v(&r, flex, 4);
	v &= n == 2;
	for (int32_t i = 0; i < n; i++)
		v &= kr_int32(&r) == i + 1;
	kr_tags_v(&r, flex);
	kr_tags_v(&r, flex);
	return v && !r.error && kr_remaining(&r) == 0;
}

static void
test_truncation(void)
{
	for (int flex = 0; flex <= 1; flex++)
	{
		KWriter		w;
		size_t		bad = 0;

		kw_init(&w, 4096);
		write_all(&w, flex);
		OK(read_all(w.buf, w.len, flex), "%s structure of every type reads back",
		   flex ? "flexible" : "classic");
		for (size_t cut = 0; cut < w.len; cut++)
		{
			/* A copy of exactly cut bytes, so ASan sees any over-read. */
			uint8_t    *p = malloc(cut ? cut : 1);

			memcpy(p, w.buf, cut);
			if (read_all(p, cut, flex))
				bad++;
			free(p);
		}
		OK(bad == 0, "%s structure truncated at each of its %zu bytes fails (%zu did not)",
		   flex ? "flexible" : "classic", w.len, bad);
		kw_free(&w);
	}
}

void
test_wire(void)
{
	test_fixed();
	test_varints();
	test_strings();
	test_arrays_and_tags();
	test_writer();
	test_truncation();
}
