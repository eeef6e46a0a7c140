/*-------------------------------------------------------------------------
 *
 * reqmem.h
 *	  The gateway-wide budget of memory for request frames
 *	  (--max-request-memory, as Kafka's queued.max.request.bytes): a
 *	  connection about to read a large frame reserves its size first, and
 *	  waits, reading nothing more, while the budget is spent.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_REQMEM_H
#define KAFKA_REQMEM_H

#include <stdbool.h>
#include <stddef.h>

struct KConn;

/*
 * Reserves n bytes of --max-request-memory for a frame, waiting (in the
 * order the connections asked) until they are free.  False only if the
 * gateway is shutting down meanwhile.  n is at most the budget (options.c
 * refuses a --max-request-bytes above it), so the wait always ends: the
 * bytes held are those of frames being read or handled, which need no more.
 */
extern bool kreqmem_acquire(struct KConn *conn, size_t n);

/* Gives back what kreqmem_acquire reserved, once the request is done. */
extern void kreqmem_release(size_t n);

#endif							/* KAFKA_REQMEM_H */
