/*-------------------------------------------------------------------------
 *
 * wire.c
 *	  Reading and writing the Kafka protocol's primitive types (see wire.h
 *	  for the rules: sticky errors, no reads past the end, bounded writes).
 *
 *-------------------------------------------------------------------------
 */
#include "wire.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Reading
 * ------------------------------------------------------------------------ */

void
kr_init(KReader *r, const void *buf, size_t len)
{
	r->p = buf;
	/* NULL + 0 is undefined behaviour in C (UBSan reports it). */
	r->end = len ? r->p + len : r->p;
	r->error = false;
}

size_t
kr_remaining(const KReader *r)
{
	return r->error ? 0 : (size_t) (r->end - r->p);
}

void
kr_fail(KReader *r)
{
	r->error = true;
	r->p = r->end;
}

const uint8_t *
kr_take(KReader *r, size_t n)
{
	const uint8_t *at;

	if (r->error || (size_t) (r->end - r->p) < n)
	{
		kr_fail(r);
		return NULL;
	}
	at = r->p;
	r->p += n;
	return at;
}

int8_t
kr_int8(KReader *r)
{
	const uint8_t *b = kr_take(r, 1);

	return b ? (int8_t) b[0] : 0;
}

bool
kr_bool(KReader *r)
{
	return kr_int8(r) != 0;
}

int16_t
kr_int16(KReader *r)
{
	const uint8_t *b = kr_take(r, 2);

	return b ? (int16_t) (((uint16_t) b[0] << 8) | b[1]) : 0;
}

uint32_t
kr_uint32(KReader *r)
{
	const uint8_t *b = kr_take(r, 4);

	if (b == NULL)
		return 0;
	return ((uint32_t) b[0] << 24) | ((uint32_t) b[1] << 16) |
		((uint32_t) b[2] << 8) | b[3];
}

int32_t
kr_int32(KReader *r)
{
	return (int32_t) kr_uint32(r);
}

int64_t
kr_int64(KReader *r)
{
	uint64_t	hi = kr_uint32(r);
	uint64_t	lo = kr_uint32(r);

	/* 4 to 7 bytes left: hi was read, but the contract is 0 on error. */
	if (r->error)
		return 0;
	return (int64_t) ((hi << 32) | lo);
}

/*
 * Unsigned LEB128 of at most max_bytes bytes; a longer one (or one whose
 * last byte carries bits the type cannot hold) is malformed.
 */
static uint64_t
read_uleb(KReader *r, int max_bytes, int bits)
{
	uint64_t	v = 0;
	int			shift = 0;

	for (int i = 0; i < max_bytes; i++)
	{
		const uint8_t *b = kr_take(r, 1);

		if (b == NULL)
			return 0;
		/* The 10th byte of a 64-bit varint may only hold bit 63. */
		if (shift == 63 && (b[0] & 0x7e) != 0)
			break;
		v |= (uint64_t) (b[0] & 0x7f) << shift;
		if ((b[0] & 0x80) == 0)
		{
			if (bits < 64 && (v >> bits) != 0)
				break;
			return v;
		}
		shift += 7;
	}
	kr_fail(r);
	return 0;
}

uint32_t
kr_uvarint(KReader *r)
{
	return (uint32_t) read_uleb(r, 5, 32);
}

uint64_t
kr_uvarlong(KReader *r)
{
	return read_uleb(r, 10, 64);
}

int32_t
kr_varint(KReader *r)
{
	uint32_t	u = kr_uvarint(r);

	return (int32_t) ((u >> 1) ^ (~(u & 1) + 1));
}

int64_t
kr_varlong(KReader *r)
{
	uint64_t	u = kr_uvarlong(r);

	return (int64_t) ((u >> 1) ^ (~(u & 1) + 1));
}

/* len bytes from the buffer as a slice; len < 0 (null) only if nullable. */
static KSlice
slice_of(KReader *r, int64_t len, bool nullable)
{
	KSlice		s = {NULL, -1};

	if (r->error)
		return s;
	if (len < 0)
	{
		if (len != -1 || !nullable)
			kr_fail(r);
		return s;
	}
	if (len > INT32_MAX)
	{
		kr_fail(r);
		return s;
	}
	s.ptr = kr_take(r, (size_t) len);
	if (s.ptr == NULL)
		return (KSlice) {NULL, -1};
	s.len = (int32_t) len;
	return s;
}

KSlice
kr_string(KReader *r)
{
	return slice_of(r, kr_int16(r), false);
}

KSlice
kr_nullable_string(KReader *r)
{
	return slice_of(r, kr_int16(r), true);
}

KSlice
kr_compact_string(KReader *r)
{
	return slice_of(r, (int64_t) kr_uvarint(r) - 1, false);
}

KSlice
kr_compact_nullable_string(KReader *r)
{
	return slice_of(r, (int64_t) kr_uvarint(r) - 1, true);
}

KSlice
kr_bytes(KReader *r)
{
	return slice_of(r, kr_int32(r), false);
}

KSlice
kr_nullable_bytes(KReader *r)
{
	return slice_of(r, kr_int32(r), true);
}

KSlice
kr_compact_bytes(KReader *r)
{
	return slice_of(r, (int64_t) kr_uvarint(r) - 1, false);
}

KSlice
kr_compact_nullable_bytes(KReader *r)
{
	return slice_of(r, (int64_t) kr_uvarint(r) - 1, true);
}

static int32_t
checked_count(KReader *r, int64_t n, size_t min_elem_size)
{
	if (r->error)
		return 0;
	/* A compact count can reach UINT32_MAX - 1: more than int32 holds. */
	if (n < -1 || n > INT32_MAX)
	{
		kr_fail(r);
		return 0;
	}
	if (n > 0 && (uint64_t) n * (min_elem_size ? min_elem_size : 1) >
		(uint64_t) (r->end - r->p))
	{
		kr_fail(r);
		return 0;
	}
	return (int32_t) n;
}

int32_t
kr_array_len(KReader *r, size_t min_elem_size)
{
	return checked_count(r, kr_int32(r), min_elem_size);
}

int32_t
kr_compact_array_len(KReader *r, size_t min_elem_size)
{
	return checked_count(r, (int64_t) kr_uvarint(r) - 1, min_elem_size);
}

void
kr_skip_tagged_fields(KReader *r)
{
	uint32_t	n = kr_uvarint(r);

	for (uint32_t i = 0; i < n && !r->error; i++)
	{
		(void) kr_uvarint(r);	/* tag */
		(void) kr_take(r, kr_uvarint(r));
	}
}

KSlice
kr_string_v(KReader *r, bool flexible)
{
	return flexible ? kr_compact_string(r) : kr_string(r);
}

KSlice
kr_nullable_string_v(KReader *r, bool flexible)
{
	return flexible ? kr_compact_nullable_string(r) : kr_nullable_string(r);
}

KSlice
kr_bytes_v(KReader *r, bool flexible)
{
	return flexible ? kr_compact_bytes(r) : kr_bytes(r);
}

KSlice
kr_nullable_bytes_v(KReader *r, bool flexible)
{
	return flexible ? kr_compact_nullable_bytes(r) : kr_nullable_bytes(r);
}

int32_t
kr_array_len_v(KReader *r, bool flexible, size_t min_elem_size)
{
	return flexible ? kr_compact_array_len(r, min_elem_size) :
		kr_array_len(r, min_elem_size);
}

void
kr_tags_v(KReader *r, bool flexible)
{
	if (flexible)
		kr_skip_tagged_fields(r);
}

/* ------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------ */

void
kw_init(KWriter *w, size_t limit)
{
	w->buf = NULL;
	w->len = 0;
	w->cap = 0;
	w->limit = limit;
	w->error = false;
}

void
kw_free(KWriter *w)
{
	free(w->buf);
	kw_init(w, w->limit);
}

void
kw_reset(KWriter *w)
{
	w->len = 0;
	w->error = false;
}

bool
kw_reserve(KWriter *w, size_t n)
{
	size_t		want;
	uint8_t    *nbuf;

	if (w->error)
		return false;
	if (n > w->limit || w->len > w->limit - n)
	{
		w->error = true;
		return false;
	}
	want = w->len + n;
	if (want <= w->cap)
		return true;
	/* Double, but never past the limit. */
	{
		size_t		ncap = w->cap ? w->cap : 256;

		while (ncap < want)
			ncap = ncap > w->limit / 2 ? w->limit : ncap * 2;
		nbuf = realloc(w->buf, ncap);
		if (nbuf == NULL)
		{
			w->error = true;
			return false;
		}
		w->buf = nbuf;
		w->cap = ncap;
	}
	return true;
}

void
kw_raw(KWriter *w, const void *data, size_t n)
{
	if (n == 0 || !kw_reserve(w, n))
		return;
	memcpy(w->buf + w->len, data, n);
	w->len += n;
}

void
kw_int8(KWriter *w, int8_t v)
{
	uint8_t		b = (uint8_t) v;

	kw_raw(w, &b, 1);
}

void
kw_bool(KWriter *w, bool v)
{
	kw_int8(w, v ? 1 : 0);
}

void
kw_int16(KWriter *w, int16_t v)
{
	uint8_t		b[2] = {(uint8_t) ((uint16_t) v >> 8), (uint8_t) v};

	kw_raw(w, b, 2);
}

void
kw_uint32(KWriter *w, uint32_t v)
{
	uint8_t		b[4] = {(uint8_t) (v >> 24), (uint8_t) (v >> 16),
	(uint8_t) (v >> 8), (uint8_t) v};

	kw_raw(w, b, 4);
}

void
kw_int32(KWriter *w, int32_t v)
{
	kw_uint32(w, (uint32_t) v);
}

void
kw_int64(KWriter *w, int64_t v)
{
	kw_uint32(w, (uint32_t) ((uint64_t) v >> 32));
	kw_uint32(w, (uint32_t) v);
}

void
kw_uvarlong(KWriter *w, uint64_t v)
{
	uint8_t		b[10];
	size_t		n = 0;

	while (v >= 0x80)
	{
		b[n++] = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	b[n++] = (uint8_t) v;
	kw_raw(w, b, n);
}

void
kw_uvarint(KWriter *w, uint32_t v)
{
	kw_uvarlong(w, v);
}

void
kw_varint(KWriter *w, int32_t v)
{
	kw_uvarint(w, ((uint32_t) v << 1) ^ (uint32_t) (v >> 31));
}

void
kw_varlong(KWriter *w, int64_t v)
{
	kw_uvarlong(w, ((uint64_t) v << 1) ^ (uint64_t) (v >> 63));
}

size_t
k_uvarint_size(uint64_t v)
{
	size_t		n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

void
kw_string(KWriter *w, const char *s, int32_t len)
{
	if (len < 0)
	{
		kw_int16(w, -1);
		return;
	}
	if (len > INT16_MAX)
	{
		w->error = true;
		return;
	}
	kw_int16(w, (int16_t) len);
	kw_raw(w, s, (size_t) len);
}

void
kw_compact_string(KWriter *w, const char *s, int32_t len)
{
	kw_compact_bytes(w, s, len);
}

void
kw_bytes(KWriter *w, const void *b, int32_t len)
{
	kw_int32(w, len < 0 ? -1 : len);
	if (len > 0)
		kw_raw(w, b, (size_t) len);
}

void
kw_compact_bytes(KWriter *w, const void *b, int32_t len)
{
	kw_uvarint(w, len < 0 ? 0 : (uint32_t) len + 1);
	if (len > 0)
		kw_raw(w, b, (size_t) len);
}

void
kw_array_len(KWriter *w, int32_t n)
{
	kw_int32(w, n < 0 ? -1 : n);
}

void
kw_compact_array_len(KWriter *w, int32_t n)
{
	kw_uvarint(w, n < 0 ? 0 : (uint32_t) n + 1);
}

void
kw_empty_tagged_fields(KWriter *w)
{
	kw_uvarint(w, 0);
}

void
kw_string_v(KWriter *w, bool flexible, const char *s, int32_t len)
{
	if (flexible)
		kw_compact_string(w, s, len);
	else
		kw_string(w, s, len);
}

void
kw_cstring_v(KWriter *w, bool flexible, const char *s)
{
	size_t		len = s ? strlen(s) : 0;

	if (len > INT16_MAX)
	{
		w->error = true;
		return;
	}
	kw_string_v(w, flexible, s, s ? (int32_t) len : -1);
}

void
kw_bytes_v(KWriter *w, bool flexible, const void *b, int32_t len)
{
	if (flexible)
		kw_compact_bytes(w, b, len);
	else
		kw_bytes(w, b, len);
}

void
kw_array_len_v(KWriter *w, bool flexible, int32_t n)
{
	if (flexible)
		kw_compact_array_len(w, n);
	else
		kw_array_len(w, n);
}

void
kw_tags_v(KWriter *w, bool flexible)
{
	if (flexible)
		kw_empty_tagged_fields(w);
}

size_t
kw_placeholder_int32(KWriter *w)
{
	size_t		at = w->len;

	kw_int32(w, 0);
	return at;
}

void
kw_patch_int32(KWriter *w, size_t at, int32_t v)
{
	uint32_t	u = (uint32_t) v;

	if (w->error || at + 4 > w->len)
		return;
	w->buf[at] = (uint8_t) (u >> 24);
	w->buf[at + 1] = (uint8_t) (u >> 16);
	w->buf[at + 2] = (uint8_t) (u >> 8);
	w->buf[at + 3] = (uint8_t) u;
}
