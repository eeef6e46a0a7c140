/*-------------------------------------------------------------------------
 *
 * test_util.h
 *	  A tiny TAP harness for test_codec: OK(cond, fmt, ...) prints
 *	  "ok N - ..." or "not ok N - ... (file:line)", and fixture loading.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_TEST_UTIL_H
#define KAFKA_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

extern int	t_failed;

extern bool t_ok(bool cond, const char *file, int line, const char *fmt,...)
	__attribute__((format(printf, 4, 5)));

#define OK(cond, ...) t_ok((cond), __FILE__, __LINE__, __VA_ARGS__)

/* A fixture's bytes (hex in FIXTURE_DIR/name), malloc'd; exits if absent. */
extern uint8_t *t_fixture(const char *name, size_t *len);

/* Bytes equal to a C string (not its NUL). */
extern bool t_slice_is(KSlice s, const char *str);

/* Deterministic pseudo-random bytes. */
extern uint64_t t_rand(uint64_t *state);
extern void t_fill_random(uint8_t *buf, size_t len, uint64_t seed);

/* The test groups, one file each. */
extern void test_wire(void);
extern void test_crc32c(void);
extern void test_compress(void);
extern void test_records(void);
extern void test_json(void);

#endif							/* KAFKA_TEST_UTIL_H */
