/*-------------------------------------------------------------------------
 *
 * processors.c
 *	  Stream processors in the background, as the rest of pg_eventlog sees
 *	  them: the settings, the wake-ups that producers and changes to the
 *	  processor catalog send to the database's processor worker, the
 *	  launcher's supervision of that worker.  The worker itself is in
 *	  processor_worker.c, the gate its steps go through in
 *	  processor_owner.c; processors are in
 *	  sql/install/streams.sql and docs/streams.md.
 *
 * When it runs: a database gets a processor worker ("pg_eventlog
 * processors") while it has enabled processors and eventlog.processors_enabled
 * is on.  The launcher cannot read a database's catalog, so the registry
 * entry (worker.h) says: until a worker has looked (processors_checked), the
 * launcher starts one to find out; a worker that finds no enabled
 * processor clears processors_wanted and exits; a commit that changed the
 * processor catalog (a statement trigger on it and on processor_runtime)
 * sets processors_wanted again and wakes the worker, or the launcher.
 *
 * How it learns about records: the worker publishes the wake-up bits of
 * its processors' source topics (el_topic_wakeup_index) in
 * processor_interest.  Every transaction that produced, at its end (after
 * its partitions' stable offsets moved, inflight.c), ORs the bits it
 * shares with that into processor_woken and sets the worker's latch, but
 * only when one of those bits was not set yet: under load, one SetLatch per
 * worker round, and a database without processors pays an atomic read per
 * producing transaction.  The worker takes processor_woken at the start of
 * a round (exchange with 0) and steps the processors whose sources it
 * names: a commit after that sets it, and the latch, again.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "processors.h"
#include "worker.h"

/* How often the launcher logs, per database, that no slot is free. */
#define EL_PROCESSOR_SLOT_REPORT_MS (60 * 1000)

bool		el_processors_enabled = true;
int			el_processor_max_records = 10000;
int			el_processor_idle_interval_ms = 1000;
int			el_processor_step_timeout_ms = 0;

PG_FUNCTION_INFO_V1(el_processors_changed);

static bool el_catalog_changed = false;

static void el_processors_xact_callback(XactEvent event, void *arg);

void
el_processors_init(void)
{
	DefineCustomBoolVariable("eventlog.processors_enabled",
							 "Runs stream processors continuously in a background worker per database.",
							 "Off, processors run only when eventlog.run_processor is called.",
							 &el_processors_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("eventlog.processor_max_records",
							"Most records the processor worker reads in one step of a processor.",
							"A step is one transaction; a full step is followed at once by the next.",
							&el_processor_max_records,
							10000, 1, 1000000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("eventlog.processor_idle_interval",
							"Time after which the processor worker runs a step of a window processor that got no records.",
							"Such a step closes the windows that processing time or idle partitions let close.",
							&el_processor_idle_interval_ms,
							1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("eventlog.processor_step_timeout",
							"Longest time a step of a processor may take in the processor worker; 0 means none.",
							"A step that takes longer is canceled, recorded as a failure and retried; the processors of a database share one worker.",
							&el_processor_step_timeout_ms,
							0, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	RegisterXactCallback(el_processors_xact_callback, NULL);
}

/* ------------------------------------------------------------------------
 * Producers' side: wake the worker
 * ------------------------------------------------------------------------ */

static ElDbWorker *el_processor_entry = NULL;	/* this backend's database's */

/*
 * A transaction that touched partitions of "topics" (their wake-up bits)
 * ended: their stable offsets may have moved.  Runs in the commit and abort
 * callbacks: nothing here can fail.
 */
void
el_wake_processors(uint64 topics)
{
	static TimestampTz retry_after = 0;
	ElDbWorker *db = el_processor_entry;
	uint64		hits;
	Latch	   *latch;

	if (el_registry == NULL || topics == 0)
		return;
	if (db == NULL || db->dbid != MyDatabaseId)
	{
		/* Not cached: look it up, at most once a second while it has no entry. */
		TimestampTz now = GetCurrentTimestamp();

		if (now < retry_after)
			return;
		SpinLockAcquire(&el_registry->mutex);
		db = el_registry_entry(MyDatabaseId, false);
		SpinLockRelease(&el_registry->mutex);
		el_processor_entry = db;
		if (db == NULL)
		{
			retry_after = TimestampTzPlusMilliseconds(now, 1000);
			return;
		}
	}
	/* Orders our partitions' release before the reads below (as shmem.c's). */
	pg_memory_barrier();
	hits = pg_atomic_read_u64(&db->processor_interest) & topics;
	if (hits == 0)
		return;
	if ((pg_atomic_read_u64(&db->processor_woken) & hits) == hits)
		return;
	if ((pg_atomic_fetch_or_u64(&db->processor_woken, hits) & hits) == hits)
		return;
	SpinLockAcquire(&el_registry->mutex);
	latch = (db->dbid == MyDatabaseId) ? db->processor_latch : NULL;
	SpinLockRelease(&el_registry->mutex);
	if (latch)
		SetLatch(latch);
}

/* ------------------------------------------------------------------------
 * Changes to the processor catalog
 * ------------------------------------------------------------------------ */

/*
 * eventlog._processors_changed(): a statement trigger on processor_catalog
 * and processor_runtime.  At commit, the worker (or the launcher, to start
 * one) hears of it.
 */
Datum
el_processors_changed(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" was not called by trigger manager",
						"eventlog._processors_changed")));
	el_catalog_changed = true;
	return PointerGetDatum(NULL);
}

/*
 * The commit of a change to the processor catalog: the database wants a
 * worker, which re-reads the catalog.  In the commit callback: nothing here
 * may fail.  A change rolled back wakes nobody (an abort clears the flag; a
 * subtransaction's rollback does not, and then costs a useless re-read).
 */
static void
el_processors_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && el_catalog_changed && el_registry != NULL)
	{
		ElDbWorker *db;
		Latch	   *latch = NULL;
		bool		launcher = false;

		SpinLockAcquire(&el_registry->mutex);
		db = el_registry_entry(MyDatabaseId, false);
		if (db)
		{
			db->processors_wanted = true;
			db->processor_next_start = 0;
			pg_atomic_write_u32(&db->processors_changed, 1);
			latch = db->processor_latch;
			launcher = (db->processor_pid == 0);
		}
		SpinLockRelease(&el_registry->mutex);
		if (latch)
			SetLatch(latch);
		if (launcher)
			el_wake_launcher(false);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
		el_catalog_changed = false;
}

/* ------------------------------------------------------------------------
 * The launcher's side: keep a processor worker where processors are
 * ------------------------------------------------------------------------ */

/* Launcher-local: the handle of each registry entry's processor worker. */
static BackgroundWorkerHandle **el_processor_handles = NULL;

static bool
el_register_processor_worker(Oid dbid, BackgroundWorkerHandle **handle)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_eventlog");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "el_processor_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_eventlog processors (database %u)", dbid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_eventlog processors");
	worker.bgw_main_arg = ObjectIdGetDatum(dbid);
	worker.bgw_notify_pid = MyProcPid;
	return RegisterDynamicBackgroundWorker(&worker, handle);
}

/*
 * Start the processor worker of registry entry i if it should run and does
 * not (the launcher calls this for every entry, each time it looks).
 */
void
el_supervise_processors(int i, TimestampTz now)
{
	static TimestampTz last_report = 0;
	ElDbWorker *db = &el_registry->dbs[i];
	Oid			dbid;
	bool		start = false;
	bool		ok;

	if (el_processor_handles == NULL)
		el_processor_handles = MemoryContextAllocZero(TopMemoryContext,
													  sizeof(BackgroundWorkerHandle *) * el_max_databases);
	if (!el_child_stopped(&el_processor_handles[i], &db->processor_pid, &db->processor_latch))
		return;

	SpinLockAcquire(&el_registry->mutex);
	dbid = db->dbid;
	if (el_processors_enabled && dbid != InvalidOid && db->wanted && db->installed &&
		!db->dropping && db->paused == 0 && db->processor_pid == 0 &&
		(!db->processors_checked || db->processors_wanted) &&
		db->processor_next_start <= now)
	{
		start = true;
		db->processor_next_start = TimestampTzPlusMilliseconds(now, EL_WORKER_RESTART_MS);
	}
	SpinLockRelease(&el_registry->mutex);
	if (!start)
		return;

	ok = el_register_processor_worker(dbid, &el_processor_handles[i]);
	if (!ok)
		el_processor_handles[i] = NULL;
	SpinLockAcquire(&el_registry->mutex);
	if (db->dbid == dbid)
		db->processor_no_slot = !ok;
	SpinLockRelease(&el_registry->mutex);
	if (!ok && (last_report == 0 ||
				TimestampDifferenceExceeds(last_report, now, EL_PROCESSOR_SLOT_REPORT_MS)))
	{
		last_report = now;
		ereport(LOG,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start a pg_eventlog processor worker for database %u", dbid),
				 errdetail("No background worker slot is free; the launcher retries every second and reports this at most once a minute."),
				 errhint("Raise max_worker_processes: pg_eventlog needs a third background worker in each database with stream processors.")));
	}
}
