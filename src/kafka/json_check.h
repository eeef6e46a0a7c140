/*-------------------------------------------------------------------------
 *
 * json_check.h
 *	  Checking bytes a Kafka client sends to a JSON topic before they go
 *	  to PostgreSQL: UTF-8 text, and JSON that jsonb accepts.
 *
 * PostgreSQL stays the judge (a value it refuses fails the statement and
 * so the batch); these checks run first so that the gateway can name the
 * records at fault in Produce's record_errors, which an error of the
 * whole statement cannot.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_JSON_CHECK_H
#define KAFKA_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest nesting accepted (PostgreSQL's own limit is its stack depth). */
#define K_JSON_MAX_DEPTH	1000

/*
 * True if the bytes are valid UTF-8 without a NUL byte (PostgreSQL's text
 * cannot hold one).  On false, errmsg says why.
 */
extern bool k_utf8_valid(const uint8_t *s, size_t len, char *errmsg, size_t errlen);

/*
 * True if the bytes are one JSON value (RFC 8259) that jsonb accepts:
 * valid UTF-8, no \u0000 escape, surrogate escapes in pairs.  On false,
 * errmsg says why and where (a byte offset).
 */
extern bool k_json_valid(const uint8_t *s, size_t len, char *errmsg, size_t errlen);

/*
 * Append s as a JSON string (quotes, escapes) to out, which must have room
 * for 6 * len + 2 bytes; returns the bytes written.  s must be valid UTF-8.
 */
extern size_t k_json_quote(const uint8_t *s, size_t len, uint8_t *out);

#endif							/* KAFKA_JSON_CHECK_H */
