/*-------------------------------------------------------------------------
 *
 * crc32c.h
 *	  CRC-32C (Castagnoli), the checksum of Kafka's RecordBatch (magic 2).
 *
 * k_crc32c(0, buf, len) is the CRC of buf; passing a previous result as
 * crc continues it over more bytes, so a CRC can be taken in pieces.  It
 * uses the CPU's crc32 instruction (SSE4.2) when the CPU has it, checked
 * once at run time, else a table-driven "slice-by-8" loop.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_CRC32C_H
#define KAFKA_CRC32C_H

#include <stddef.h>
#include <stdint.h>

extern uint32_t k_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable loop alone, whatever the CPU (tests and benchmarks). */
extern uint32_t k_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* Which implementation k_crc32c uses: "sse4.2" or "slice-by-8". */
extern const char *k_crc32c_impl(void);

#endif							/* KAFKA_CRC32C_H */
