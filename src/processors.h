/*-------------------------------------------------------------------------
 *
 * processors.h
 *	  The background execution of stream processors: the settings, the
 *	  wake-ups producers and the processor catalog send to a database's
 *	  processor worker, and the launcher's supervision of it
 *	  (processors.c); the worker itself is in processor_worker.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_PROCESSORS_H
#define PG_EVENTLOG_PROCESSORS_H

#include "utils/timestamp.h"

struct ElDbWorker;

extern bool el_processors_enabled;
extern int	el_processor_max_records;
extern int	el_processor_idle_interval_ms;
extern int	el_processor_step_timeout_ms;

/* a transaction that released partitions of these topics (inflight.c) */
extern void el_wake_processors(uint64 topics);

/* in a processor gate's call: the owner's SQL runs (processor_owner.c) */
extern bool el_in_processor_gate(void);

/* the launcher, for each registry entry (launcher.c) */
extern void el_supervise_processors(int i, TimestampTz now);

#endif							/* PG_EVENTLOG_PROCESSORS_H */
