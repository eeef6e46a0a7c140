/*-------------------------------------------------------------------------
 *
 * pg_eventlog.c
 *	  Module initialisation for pg_eventlog: it only delegates to the
 *	  subsystems, each of which owns its settings and hooks.
 *
 * Most of pg_eventlog needs shared memory and a background worker, which
 * exist only when the library is in shared_preload_libraries.  Loading it
 * any other way (LOAD, or a first call of one of its functions) installs
 * nothing shared; the functions that need shared state then fail with a
 * clear error instead (see el_require_shmem).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "standby.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	/*
	 * Nothing to do in pg_upgrade's binary-upgrade mode: the worker would
	 * only get in the way, and no log is produced or read.
	 */
	if (IsBinaryUpgrade)
		return;

	el_shmem_init();
	el_topic_cache_init();
	el_segment_init();
	el_read_init();
	el_utility_init();
	el_dependents_init();
	el_worker_init();
	el_notify_init();
	el_processors_init();
	el_capture_batch_init();
	el_kafka_group_init();
	el_producer_init();
	el_compact_init();
	el_standby_wake_init();

	MarkGUCPrefixReserved("eventlog");
}
