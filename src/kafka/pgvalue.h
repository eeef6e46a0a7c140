/*-------------------------------------------------------------------------
 *
 * pgvalue.h
 *	  Values between the Kafka wire and PostgreSQL: text-format query
 *	  parameters built from request fields (strings, bytea, arrays and
 *	  arrays of composite values, with PostgreSQL's quoting), and values
 *	  read from binary-format results (integers, arrays of composites).
 *
 * The gateway passes every client value as a parameter, never in the SQL
 * text.  Parameters are C strings, so a value with a NUL byte cannot be
 * passed as text: kb_text refuses it (the caller answers with an error
 * code), and bytea goes as hex.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_PGVALUE_H
#define KAFKA_PGVALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* A growing NUL-terminated string; error is sticky (out of memory). */
typedef struct KBuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
	bool		error;
} KBuf;

extern void kb_init(KBuf *b);
extern void kb_free(KBuf *b);
extern void kb_raw(KBuf *b, const char *s, size_t n);
extern void kb_char(KBuf *b, char c);
extern void kb_int(KBuf *b, long long v);

/* True if the bytes can be a text value (no NUL byte). */
extern bool kslice_is_text(KSlice s);

/*
 * A malloc'd C string of a slice (NULL for a null slice or out of memory:
 * *ok tells which); false in *ok too for a NUL byte inside.
 */
extern char *kslice_cstring(KSlice s, bool *ok);

/*
 * Quoting levels: a value as an element of an array or a field of a
 * composite is written double-quoted with '"' and '\' escaped; inside an
 * array of composites, the composite's text is quoted once more.  These
 * append one quoted element (text or bytea in hex) to b.
 */
extern void kb_quoted(KBuf *b, const char *s, size_t n);
extern void kb_bytea_hex(KBuf *b, const uint8_t *p, size_t n);

/*
 * Arrays of composites: kb_row_begin/field.../kb_row_end write one
 * composite, quoted as an array element.  A null field is an empty one.
 */
typedef struct KRowBuf
{
	KBuf		row;			/* the composite's own text */
	int			nfields;
} KRowBuf;

extern void krow_begin(KRowBuf *r);
extern void krow_text(KRowBuf *r, KSlice s); /* null slice: null */
extern void krow_ctext(KRowBuf *r, const char *s);	/* NULL: null */
extern void krow_int(KRowBuf *r, long long v);
extern void krow_bytea(KRowBuf *r, KSlice s);	/* null slice: null */
extern void krow_end(KRowBuf *r, KBuf *array);	/* appends, frees r */

/*
 * A query's parameters: each a C string (or NULL for SQL NULL), owned or
 * not.  A value that cannot be text (a NUL byte) or memory running out
 * sets bad: the caller answers with an error code instead of querying.
 */
#define KP_MAX	12

typedef struct KParams
{
	const char *v[KP_MAX];
	char	   *owned[KP_MAX];
	int			n;
	bool		bad;
} KParams;

extern void kp_init(KParams *p);
extern void kp_free(KParams *p);
extern void kp_slice(KParams *p, KSlice s);	/* null slice: NULL */
extern void kp_static(KParams *p, const char *s);	/* not copied */
extern void kp_int(KParams *p, long long v);
extern void kp_buf(KParams *p, KBuf *b);	/* takes b's string */

/* Reading a binary-format result value. */
typedef struct KBin
{
	const uint8_t *p;
	const uint8_t *end;
	bool		error;
} KBin;

extern void kbin_init(KBin *b, const char *value, int len);
extern int32_t kbin_int32(KBin *b);

/* A binary int2 or int4 column of a result row (0 if null). */
extern int32_t kpg_int(const void *res, int row, int col);

/*
 * A binary array of composites: kbin_array_begin reads the header and
 * returns the number of elements (-1 on error; 0 for an empty or null
 * array); kbin_row_begin reads one element's header (number of fields; -1
 * for a null element or an error), kbin_field one field (a null field has
 * len -1).
 */
extern int32_t kbin_array_begin(KBin *b);
extern int32_t kbin_row_begin(KBin *b, KBin *row);
extern KSlice kbin_field(KBin *row);

#endif							/* KAFKA_PGVALUE_H */
