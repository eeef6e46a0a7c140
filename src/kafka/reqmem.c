/*-------------------------------------------------------------------------
 *
 * reqmem.c
 *	  The budget of memory for request frames (--max-request-memory): the
 *	  bytes of the frames being read or handled at once, over every
 *	  connection, stay within it.
 *
 * Without it, each connection bounds its own frame (--max-request-bytes)
 * but not their sum: a thousand connections sending 100 MiB frames, even
 * slowly, would take 100 GB.  conn.c reserves a frame's whole size here
 * after reading its size and before reading any of its body, and gives it
 * back after the response (Kafka's broker does the same with its memory
 * pool and queued.max.request.bytes).  A connection whose frame does not
 * fit waits, reading nothing, so its client's bytes stay in its socket
 * buffers; it never fails for want of budget.
 *
 * No deadlock: a connection holds a reservation only while it reads or
 * handles the frame it reserved for, and never asks for more while it
 * holds one, so every holder ends without waiting here.  No starvation:
 * waiters are served in the order they came (a ticket each), so a large
 * frame is not passed over for ever by smaller ones that fit; a frame is
 * never larger than the whole budget (options.c), so the first in line
 * always fits once the holders are done.
 *
 * Small frames (conn.c's K_SMALL_FRAME_BYTES, 64 KiB) do not come here:
 * they are read into the connection's own small buffer, so heartbeats,
 * metadata and fetch requests go on while large produce requests wait.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "log.h"
#include "reqmem.h"
#include "server.h"

#include <pthread.h>
#include <time.h>

static pthread_mutex_t reqmem_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reqmem_changed = PTHREAD_COND_INITIALIZER;
static int64_t reqmem_used;
static uint64_t next_ticket;	/* the next waiter's */
static uint64_t now_serving;	/* the ticket whose turn it is */

bool
kreqmem_acquire(KConn *conn, size_t n)
{
	uint64_t	ticket;
	bool		waited = false;

	pthread_mutex_lock(&reqmem_mutex);
	ticket = next_ticket++;
	while (ticket != now_serving || reqmem_used + (int64_t) n > kconf.max_request_memory)
	{
		struct timespec tick;

		if (kshutting_down())
		{
			/* The gateway is ending: the order of the others is moot. */
			pthread_mutex_unlock(&reqmem_mutex);
			return false;
		}
		if (!waited)
		{
			klog(KLOG_DEBUG, "conn %llu (%s): waits for request memory for a request of %zu bytes (%lld of %lld bytes in use, %llu requests before it; --max-request-memory)",
				 (unsigned long long) conn->id, conn->peer, n,
				 (long long) reqmem_used, (long long) kconf.max_request_memory,
				 (unsigned long long) (ticket - now_serving));
			waited = true;
		}
		/* Woken by every change; the tick notices a shutdown. */
		clock_gettime(CLOCK_REALTIME, &tick);
		tick.tv_sec += 1;
		pthread_cond_timedwait(&reqmem_changed, &reqmem_mutex, &tick);
	}
	reqmem_used += (int64_t) n;
	now_serving++;
	pthread_cond_broadcast(&reqmem_changed);
	pthread_mutex_unlock(&reqmem_mutex);
	if (waited)
		klog(KLOG_DEBUG, "conn %llu (%s): got request memory for a request of %zu bytes",
			 (unsigned long long) conn->id, conn->peer, n);
	return true;
}

void
kreqmem_release(size_t n)
{
	pthread_mutex_lock(&reqmem_mutex);
	reqmem_used -= (int64_t) n;
	pthread_cond_broadcast(&reqmem_changed);
	pthread_mutex_unlock(&reqmem_mutex);
}
