/*-------------------------------------------------------------------------
 *
 * wire.h
 *	  The Kafka protocol's primitive types: reading them from a request
 *	  and writing them into a response.
 *
 * Kafka's protocol (https://kafka.apache.org/protocol) is built from
 * big-endian integers, unsigned and zigzag varints, strings and byte
 * strings with an int16/int32 length (or, in the "flexible" versions of
 * KIP-482, an unsigned varint length plus one, where 0 means null), arrays
 * with an int32 count (or a compact count plus one), and tagged fields.
 *
 * A KReader never reads past its end: every read past it, and every
 * malformed value (a negative length that is not null, a varint longer
 * than its type, an array count that cannot fit in the bytes left), sets
 * r->error and returns a zero value.  The error is sticky, so a decoder
 * reads a whole structure and checks once at the end; nothing it returned
 * after the first error is meaningful.  Strings and byte strings are
 * returned as pointers into the request buffer (KSlice), never copied.
 *
 * A KWriter grows its buffer as it writes, up to a limit set at init; past
 * the limit (or when memory runs out) it sets w->error, stops writing, and
 * the response must not be sent.
 *
 * The *_v variants take the request's "flexible" flag and pick the compact
 * or classic encoding, so one decoder serves every version of a message.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_WIRE_H
#define KAFKA_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes inside a buffer; len < 0 is a null string or null bytes. */
typedef struct KSlice
{
	const uint8_t *ptr;
	int32_t		len;
} KSlice;

#define KSLICE_IS_NULL(s)	((s).len < 0)

typedef struct KReader
{
	const uint8_t *p;			/* next byte to read */
	const uint8_t *end;			/* one past the last byte */
	bool		error;			/* sticky: a read failed */
} KReader;

extern void kr_init(KReader *r, const void *buf, size_t len);
extern size_t kr_remaining(const KReader *r);
extern const uint8_t *kr_take(KReader *r, size_t n);	/* NULL on error */
extern void kr_fail(KReader *r);

extern int8_t kr_int8(KReader *r);
extern bool kr_bool(KReader *r);
extern int16_t kr_int16(KReader *r);
extern int32_t kr_int32(KReader *r);
extern uint32_t kr_uint32(KReader *r);
extern int64_t kr_int64(KReader *r);
extern uint32_t kr_uvarint(KReader *r);
extern int32_t kr_varint(KReader *r);	/* zigzag */
extern int64_t kr_varlong(KReader *r);	/* zigzag */
extern uint64_t kr_uvarlong(KReader *r);

/* STRING / NULLABLE_STRING (int16 length), COMPACT_ forms (uvarint). */
extern KSlice kr_string(KReader *r);
extern KSlice kr_nullable_string(KReader *r);
extern KSlice kr_compact_string(KReader *r);
extern KSlice kr_compact_nullable_string(KReader *r);
/* BYTES / NULLABLE_BYTES (int32 length), COMPACT_ forms. */
extern KSlice kr_bytes(KReader *r);
extern KSlice kr_nullable_bytes(KReader *r);
extern KSlice kr_compact_bytes(KReader *r);
extern KSlice kr_compact_nullable_bytes(KReader *r);

/*
 * Array counts: -1 for a null array.  min_elem_size is the fewest bytes
 * one element can take; a count that could not fit in the bytes left is
 * an error, so a hostile count cannot make the caller allocate for it.
 */
extern int32_t kr_array_len(KReader *r, size_t min_elem_size);
extern int32_t kr_compact_array_len(KReader *r, size_t min_elem_size);

/* Tagged fields (KIP-482): skip every one (none is understood yet). */
extern void kr_skip_tagged_fields(KReader *r);

/* Version-dependent forms: flexible picks the compact encoding. */
extern KSlice kr_string_v(KReader *r, bool flexible);
extern KSlice kr_nullable_string_v(KReader *r, bool flexible);
extern KSlice kr_bytes_v(KReader *r, bool flexible);
extern KSlice kr_nullable_bytes_v(KReader *r, bool flexible);
extern int32_t kr_array_len_v(KReader *r, bool flexible, size_t min_elem_size);
extern void kr_tags_v(KReader *r, bool flexible);	/* skip tags if flexible */

typedef struct KWriter
{
	uint8_t    *buf;
	size_t		len;			/* bytes written */
	size_t		cap;			/* bytes allocated */
	size_t		limit;			/* most bytes this writer may hold */
	bool		error;			/* sticky: over the limit or out of memory */
} KWriter;

extern void kw_init(KWriter *w, size_t limit);
extern void kw_free(KWriter *w);
extern void kw_reset(KWriter *w);	/* len = 0, error = false, keeps buf */
extern bool kw_reserve(KWriter *w, size_t n);

extern void kw_raw(KWriter *w, const void *data, size_t n);
extern void kw_int8(KWriter *w, int8_t v);
extern void kw_bool(KWriter *w, bool v);
extern void kw_int16(KWriter *w, int16_t v);
extern void kw_int32(KWriter *w, int32_t v);
extern void kw_uint32(KWriter *w, uint32_t v);
extern void kw_int64(KWriter *w, int64_t v);
extern void kw_uvarint(KWriter *w, uint32_t v);
extern void kw_varint(KWriter *w, int32_t v);
extern void kw_varlong(KWriter *w, int64_t v);
extern void kw_uvarlong(KWriter *w, uint64_t v);

/* len < 0 writes null (the nullable forms). */
extern void kw_string(KWriter *w, const char *s, int32_t len);
extern void kw_compact_string(KWriter *w, const char *s, int32_t len);
extern void kw_bytes(KWriter *w, const void *b, int32_t len);
extern void kw_compact_bytes(KWriter *w, const void *b, int32_t len);
extern void kw_array_len(KWriter *w, int32_t n);	/* -1: null */
extern void kw_compact_array_len(KWriter *w, int32_t n);
extern void kw_empty_tagged_fields(KWriter *w);

extern void kw_string_v(KWriter *w, bool flexible, const char *s, int32_t len);
extern void kw_cstring_v(KWriter *w, bool flexible, const char *s);	/* NULL: null */
extern void kw_bytes_v(KWriter *w, bool flexible, const void *b, int32_t len);
extern void kw_array_len_v(KWriter *w, bool flexible, int32_t n);
extern void kw_tags_v(KWriter *w, bool flexible);	/* empty tags if flexible */

/*
 * Sizes known only after their content: reserve 4 bytes, write, then patch
 * the int32 in place.  Returns the position of the placeholder.
 */
extern size_t kw_placeholder_int32(KWriter *w);
extern void kw_patch_int32(KWriter *w, size_t at, int32_t v);

/* Bytes an unsigned varint takes. */
extern size_t k_uvarint_size(uint64_t v);

#endif							/* KAFKA_WIRE_H */
