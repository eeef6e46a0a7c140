/*-------------------------------------------------------------------------
 *
 * sqlarray.h
 *	  Building PostgreSQL array literals ("{a,b}") to pass lists as text
 *	  parameters of one query, and reading PostgreSQL's binary result
 *	  format (integers, timestamps, arrays of a composite).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_SQLARRAY_H
#define KAFKA_SQLARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

typedef struct KSqlArray
{
	char	   *buf;
	size_t		len;
	size_t		cap;
	bool		error;			/* out of memory: buf is NULL */
} KSqlArray;

extern void ksa_init(KSqlArray *a);
/* A legal topic name (kvalid_topic_name), quoted. */
extern void ksa_add_name(KSqlArray *a, KSlice name);
extern void ksa_add_int(KSqlArray *a, int64_t v);
/* The literal, NUL-terminated (NULL if memory ran out); free() it. */
extern char *ksa_finish(KSqlArray *a);

/* Binary result values (network byte order). */
extern int16_t kpg_get_int16(const char *p);
extern int32_t kpg_get_int32(const char *p);
extern int64_t kpg_get_int64(const char *p);

/* A timestamptz in binary format (microseconds since 2000) in Kafka's milliseconds since 1970. */
extern int64_t kpg_timestamp_ms(const char *p);

#endif							/* KAFKA_SQLARRAY_H */
