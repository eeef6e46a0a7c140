/*-------------------------------------------------------------------------
 *
 * pgvalue.c
 *	  Values between the Kafka wire and PostgreSQL (see pgvalue.h): text
 *	  parameters with PostgreSQL's array and composite quoting, and the
 *	  binary forms of integers and arrays of composites in results.
 *
 * Binary results are read with bounds checks: a value shorter than its
 * headers say sets the reader's sticky error, as KReader does.
 *
 *-------------------------------------------------------------------------
 */
#include "pgvalue.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
kb_init(KBuf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->error = false;
}

void
kb_free(KBuf *b)
{
	free(b->data);
	kb_init(b);
}

static bool
kb_grow(KBuf *b, size_t n)
{
	size_t		ncap;
	char	   *nd;

	if (b->error)
		return false;
	if (b->len + n + 1 <= b->cap)
		return true;
	ncap = b->cap ? b->cap : 256;
	while (ncap < b->len + n + 1)
	{
		if (ncap > SIZE_MAX / 2)
		{
			b->error = true;
			return false;
		}
		ncap *= 2;
	}
	nd = realloc(b->data, ncap);
	if (nd == NULL)
	{
		b->error = true;
		return false;
	}
	b->data = nd;
	b->cap = ncap;
	return true;
}

void
kb_raw(KBuf *b, const char *s, size_t n)
{
	if (!kb_grow(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
kb_char(KBuf *b, char c)
{
	kb_raw(b, &c, 1);
}

void
kb_int(KBuf *b, long long v)
{
	char		tmp[32];
	int			n = snprintf(tmp, sizeof(tmp), "%lld", v);

	kb_raw(b, tmp, (size_t) n);
}

bool
kslice_is_text(KSlice s)
{
	return s.len <= 0 || memchr(s.ptr, '\0', (size_t) s.len) == NULL;
}

char *
kslice_cstring(KSlice s, bool *ok)
{
	char	   *out;

	*ok = true;
	if (KSLICE_IS_NULL(s))
		return NULL;
	if (!kslice_is_text(s))
	{
		*ok = false;
		return NULL;
	}
	out = malloc((size_t) s.len + 1);
	if (out == NULL)
	{
		*ok = false;
		return NULL;
	}
	if (s.len > 0)
		memcpy(out, s.ptr, (size_t) s.len);
	out[s.len] = '\0';
	return out;
}

void
kb_quoted(KBuf *b, const char *s, size_t n)
{
	/* At most twice the bytes and the quotes: reserve once. */
	if (n > (SIZE_MAX - 8) / 2 || !kb_grow(b, 2 * n + 2))
	{
		b->error = true;
		return;
	}
	b->data[b->len++] = '"';
	for (size_t i = 0; i < n; i++)
	{
		if (s[i] == '"' || s[i] == '\\')
			b->data[b->len++] = '\\';
		b->data[b->len++] = s[i];
	}
	b->data[b->len++] = '"';
	b->data[b->len] = '\0';
}

void
kb_bytea_hex(KBuf *b, const uint8_t *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	/* "\x" and two digits a byte, quoted: '\' is escaped. */
	if (n > (SIZE_MAX - 8) / 2 || !kb_grow(b, 2 * n + 5))
	{
		b->error = true;
		return;
	}
	b->data[b->len++] = '"';
	b->data[b->len++] = '\\';
	b->data[b->len++] = '\\';
	b->data[b->len++] = 'x';
	for (size_t i = 0; i < n; i++)
	{
		b->data[b->len++] = hex[p[i] >> 4];
		b->data[b->len++] = hex[p[i] & 15];
	}
	b->data[b->len++] = '"';
	b->data[b->len] = '\0';
}

void
krow_begin(KRowBuf *r)
{
	kb_init(&r->row);
	kb_char(&r->row, '(');
	r->nfields = 0;
}

static void
krow_sep(KRowBuf *r)
{
	if (r->nfields++ > 0)
		kb_char(&r->row, ',');
}

void
krow_text(KRowBuf *r, KSlice s)
{
	krow_sep(r);
	if (!KSLICE_IS_NULL(s))
		kb_quoted(&r->row, (const char *) s.ptr, (size_t) s.len);
}

void
krow_ctext(KRowBuf *r, const char *s)
{
	krow_sep(r);
	if (s != NULL)
		kb_quoted(&r->row, s, strlen(s));
}

void
krow_int(KRowBuf *r, long long v)
{
	krow_sep(r);
	kb_int(&r->row, v);
}

void
krow_bytea(KRowBuf *r, KSlice s)
{
	krow_sep(r);
	if (!KSLICE_IS_NULL(s))
		kb_bytea_hex(&r->row, s.ptr, (size_t) s.len);
}

void
krow_end(KRowBuf *r, KBuf *array)
{
	kb_char(&r->row, ')');
	if (r->row.error)
		array->error = true;
	else
		kb_quoted(array, r->row.data, r->row.len);
	kb_free(&r->row);
}

void
kp_init(KParams *p)
{
	memset(p, 0, sizeof(*p));
}

void
kp_free(KParams *p)
{
	for (int i = 0; i < p->n; i++)
		free(p->owned[i]);
	kp_init(p);
}

static void
kp_add(KParams *p, const char *v, char *owned)
{
	if (p->n == KP_MAX)
	{
		free(owned);
		p->bad = true;
		return;
	}
	p->v[p->n] = v;
	p->owned[p->n] = owned;
	p->n++;
}

void
kp_slice(KParams *p, KSlice s)
{
	bool		ok;
	char	   *c = kslice_cstring(s, &ok);

	if (!ok)
		p->bad = true;
	kp_add(p, c, c);
}

void
kp_static(KParams *p, const char *s)
{
	kp_add(p, s, NULL);
}

void
kp_int(KParams *p, long long v)
{
	char	   *c = malloc(24);

	if (c == NULL)
		p->bad = true;
	else
		snprintf(c, 24, "%lld", v);
	kp_add(p, c, c);
}

void
kp_buf(KParams *p, KBuf *b)
{
	if (b->error || b->data == NULL)
	{
		p->bad = true;
		kb_free(b);
		kp_add(p, NULL, NULL);
		return;
	}
	kp_add(p, b->data, b->data);
	kb_init(b);
}

void
kbin_init(KBin *b, const char *value, int len)
{
	b->p = (const uint8_t *) value;
	b->end = b->p + (len > 0 ? len : 0);
	b->error = false;
}

int32_t
kbin_int32(KBin *b)
{
	uint32_t	v;

	if (b->error || b->end - b->p < 4)
	{
		b->error = true;
		return 0;
	}
	v = ((uint32_t) b->p[0] << 24) | ((uint32_t) b->p[1] << 16) |
		((uint32_t) b->p[2] << 8) | b->p[3];
	b->p += 4;
	return (int32_t) v;
}

int32_t
kpg_int(const void *result, int row, int col)
{
	const PGresult *res = result;
	const uint8_t *v = (const uint8_t *) PQgetvalue(res, row, col);
	int			len = PQgetlength(res, row, col);

	if (PQgetisnull(res, row, col))
		return 0;
	if (len == 2)
		return (int16_t) (((uint16_t) v[0] << 8) | v[1]);
	if (len == 4)
		return (int32_t) (((uint32_t) v[0] << 24) | ((uint32_t) v[1] << 16) |
						  ((uint32_t) v[2] << 8) | v[3]);
	return 0;
}

int32_t
kbin_array_begin(KBin *b)
{
	int32_t		ndim = kbin_int32(b);
	int32_t		n;

	(void) kbin_int32(b);		/* has nulls */
	(void) kbin_int32(b);		/* element type */
	if (b->error || ndim < 0 || ndim > 1)
		return -1;
	if (ndim == 0)
		return 0;
	n = kbin_int32(b);
	(void) kbin_int32(b);		/* lower bound */
	/* Each element takes at least its length. */
	if (b->error || n < 0 || (size_t) n > (size_t) (b->end - b->p) / 4)
		return -1;
	return n;
}

int32_t
kbin_row_begin(KBin *b, KBin *row)
{
	int32_t		len = kbin_int32(b);

	if (b->error || len < 0 || len > b->end - b->p)
	{
		b->error = true;
		return -1;
	}
	row->p = b->p;
	row->end = b->p + len;
	row->error = false;
	b->p += len;
	return kbin_int32(row);
}

KSlice
kbin_field(KBin *row)
{
	KSlice		s = {NULL, -1};
	int32_t		len;

	(void) kbin_int32(row);		/* the field's type */
	len = kbin_int32(row);
	if (row->error || len > row->end - row->p)
	{
		row->error = true;
		return s;
	}
	if (len < 0)
		return s;
	s.ptr = row->p;
	s.len = len;
	row->p += len;
	return s;
}
