/*-------------------------------------------------------------------------
 *
 * sqlarray.c
 *	  PostgreSQL array literals for query parameters, and binary result
 *	  values (sqlarray.h).
 *
 *-------------------------------------------------------------------------
 */
#include "sqlarray.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
ksa_init(KSqlArray *a)
{
	a->buf = NULL;
	a->len = 0;
	a->cap = 0;
	a->error = false;
}

static bool
ksa_reserve(KSqlArray *a, size_t n)
{
	char		sep;

	if (a->error)
		return false;
	if (a->len + n + 2 > a->cap)
	{
		size_t		cap = a->cap ? a->cap : 256;
		char	   *buf;

		while (a->len + n + 2 > cap)
			cap *= 2;
		buf = realloc(a->buf, cap);
		if (buf == NULL)
		{
			free(a->buf);
			a->buf = NULL;
			a->error = true;
			return false;
		}
		a->buf = buf;
		a->cap = cap;
	}
	/* "{" before the first element, "," before the others. */
	sep = a->len == 0 ? '{' : ',';
	a->buf[a->len++] = sep;
	return true;
}

void
ksa_add_name(KSqlArray *a, KSlice name)
{
	if (!ksa_reserve(a, (size_t) name.len + 2))
		return;
	a->buf[a->len++] = '"';
	memcpy(a->buf + a->len, name.ptr, (size_t) name.len);
	a->len += (size_t) name.len;
	a->buf[a->len++] = '"';
}

void
ksa_add_int(KSqlArray *a, int64_t v)
{
	if (!ksa_reserve(a, 24))
		return;
	a->len += (size_t) snprintf(a->buf + a->len, 24, "%lld", (long long) v);
}

char *
ksa_finish(KSqlArray *a)
{
	char	   *s;

	if (a->error)
		return NULL;
	if (a->len == 0)
		return strdup("{}");
	if (!ksa_reserve(a, 0))
		return NULL;
	/* ksa_reserve wrote a ',' for an element to come: make it the end. */
	a->buf[a->len - 1] = '}';
	a->buf[a->len] = '\0';
	s = a->buf;
	a->buf = NULL;
	return s;
}

int16_t
kpg_get_int16(const char *p)
{
	const uint8_t *u = (const uint8_t *) p;

	return (int16_t) (((uint16_t) u[0] << 8) | u[1]);
}

int32_t
kpg_get_int32(const char *p)
{
	const uint8_t *u = (const uint8_t *) p;

	return (int32_t) (((uint32_t) u[0] << 24) | ((uint32_t) u[1] << 16) |
					  ((uint32_t) u[2] << 8) | u[3]);
}

int64_t
kpg_get_int64(const char *p)
{
	return (int64_t) (((uint64_t) (uint32_t) kpg_get_int32(p) << 32) |
					  (uint32_t) kpg_get_int32(p + 4));
}

/* Seconds from 1970-01-01 to 2000-01-01, PostgreSQL's epoch. */
#define K_PG_EPOCH_MS INT64_C(946684800000)

int64_t
kpg_timestamp_ms(const char *p)
{
	int64_t		us = kpg_get_int64(p);

	/* infinity and -infinity: no timestamp */
	if (us == INT64_MAX || us == INT64_MIN)
		return -1;
	return (us >= 0 ? us / 1000 : -((-us + 999) / 1000)) + K_PG_EPOCH_MS;
}
