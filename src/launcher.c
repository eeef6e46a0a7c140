/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The launcher ("pg_eventlog launcher"): it keeps one maintenance
 *	  worker (maintenance.c) and one notifier (notifier.c) running in every
 *	  database where the extension is installed.
 *
 * The launcher starts with the server when the library is preloaded.  It
 * connects to no database in particular, so it can read pg_database and
 * shows in pg_stat_activity.  It keeps one maintenance worker ("pg_eventlog
 * maintenance") per database that has the extension, without any
 * configuration:
 *	- at start, and every eventlog.database_probe_interval, it starts a
 *	  worker in each database without one; a worker that finds no extension
 *	  there says so in shared memory and exits;
 *	- CREATE EXTENSION pg_eventlog and CREATE DATABASE wake it at commit, so
 *	  a new database gets its worker at once;
 *	- a worker that dies or is terminated is started again (once a second at
 *	  most); one that exits because the extension is gone is not;
 *	- DROP DATABASE stops the database's workers first; ALTER DATABASE
 *	  RENAME / SET TABLESPACE and CREATE DATABASE ... TEMPLATE keep them
 *	  away while they run (utility.c, worker.c), as these refuse to run
 *	  while anyone is connected.
 *
 * The registry (worker.c) has eventlog.max_databases entries, and a probe
 * takes one while it runs.  Databases to probe wait in a queue (first in,
 * first out) and are let in as entries free up, EL_MAX_PROBES at a time:
 * every database gets probed, however many there are before it in
 * pg_database.
 *
 * Once a maintenance worker has found the extension, the launcher also
 * keeps a notifier ("pg_eventlog notifier", notifier.c) in that database
 * while eventlog.notify is on (el_supervise_notifier, notify.c), and a
 * processor worker while it has stream processors to run
 * (el_supervise_processors, processors.c).
 *
 * The launcher reloads its configuration on SIGHUP and exits promptly on
 * SIGTERM or postmaster death.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "notify.h"
#include "processors.h"
#include "shmem.h"
#include "worker.h"

/* Probes running at once: each takes a registry entry and a worker slot. */
#define EL_MAX_PROBES 4
/* A probe that ends this many times without an answer is given up. */
#define EL_MAX_PROBE_FAILURES 3
/* How often the launcher logs, per database and kind, that no slot is free. */
#define EL_SLOT_REPORT_MS (60 * 1000)

PGDLLEXPORT void el_launcher_main(Datum main_arg);

/* Launcher-local: the handle of each entry's workers. */
static BackgroundWorkerHandle **el_handles = NULL;
/* The database each el_handles entry was started for (entries get reused). */
static Oid *el_handle_dbids = NULL;

static void
el_launcher_shutdown(int code, Datum arg)
{
	if (el_shared && el_shared->launcher_pid == MyProcPid)
		el_shared->launcher_pid = 0;
	if (el_registry)
	{
		SpinLockAcquire(&el_registry->mutex);
		el_registry->launcher_latch = NULL;
		SpinLockRelease(&el_registry->mutex);
	}
}

/*
 * The first step of supervising one of entry i's child workers (the
 * notifier, notify.c; the processor worker, processors.c), whose handle the
 * launcher keeps in *handle and whose pid and latch the entry holds in
 * *pidp and *latchp: false while the child started with that handle still
 * runs.  Otherwise forget the handle, and clear the pid and latch of a
 * child that died without detaching (a previous launcher's child, whose
 * handle this launcher never had), so that the caller may start another.
 * In the launcher only.
 */
bool
el_child_stopped(BackgroundWorkerHandle **handle, pid_t *pidp, Latch **latchp)
{
	pid_t		pid;

	if (*handle)
	{
		if (GetBackgroundWorkerPid(*handle, &pid) != BGWH_STOPPED)
			return false;
		pfree(*handle);
		*handle = NULL;
	}
	SpinLockAcquire(&el_registry->mutex);
	pid = *pidp;
	SpinLockRelease(&el_registry->mutex);
	if (pid != 0 && kill(pid, 0) != 0)
	{
		SpinLockAcquire(&el_registry->mutex);
		if (*pidp == pid)
		{
			*pidp = 0;
			*latchp = NULL;
		}
		SpinLockRelease(&el_registry->mutex);
	}
	return true;
}

/*
 * Start the maintenance worker (or, with "notifier", the notifier) of entry
 * i, and return its handle in *handle; false if no slot was free.  The
 * outcome shows in eventlog.maintenance; a failure is also logged, at most
 * once a minute per database and kind.  In the launcher only.
 */
bool
el_start_worker(int i, Oid dbid, bool notifier, BackgroundWorkerHandle **handle)
{
	ElDbWorker *db = &el_registry->dbs[i];
	bool		ok;
	bool		report = false;
	TimestampTz now = GetCurrentTimestamp();

	ok = el_register_worker(dbid, notifier, MyProcPid, handle);

	SpinLockAcquire(&el_registry->mutex);
	if (db->dbid == dbid)
	{
		if (notifier)
			db->notifier_no_slot = !ok;
		else
			db->no_slot = !ok;
		if (!ok && (db->slot_report[notifier] == 0 ||
					TimestampDifferenceExceeds(db->slot_report[notifier], now,
											   EL_SLOT_REPORT_MS)))
		{
			db->slot_report[notifier] = now;
			report = true;
		}
	}
	SpinLockRelease(&el_registry->mutex);

	if (!ok)
	{
		/*
		 * The launcher retries every second; say so once a minute, not
		 * every second, so the log stays readable.
		 */
		if (report && notifier)
			ereport(LOG,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not start a pg_eventlog notifier worker for database %u", dbid),
					 errdetail("No background worker slot is free; the launcher retries every second and reports this at most once a minute per database."),
					 errhint("Raise max_worker_processes: pg_eventlog needs two workers per database that uses it (one with eventlog.notify off), plus its launcher.")));
		else if (report)
			ereport(LOG,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not start a pg_eventlog maintenance worker for database %u", dbid),
					 errdetail("No background worker slot is free; the launcher retries every second and reports this at most once a minute per database."),
					 errhint("Raise max_worker_processes: pg_eventlog needs two workers per database that uses it (one with eventlog.notify off), plus its launcher.")));
		return false;
	}
	return true;
}

/*
 * Launcher-local: databases waiting for a probe, oldest first.  A rescan of
 * pg_database appends those not queued yet and keeps the order, so that
 * every database gets its turn however many come before it.
 */
static Oid *el_probe_queue = NULL;
static int	el_probe_queue_len = 0;
static int	el_probe_queue_cap = 0;

static void
el_probe_enqueue(Oid dbid)
{
	int			i;

	for (i = 0; i < el_probe_queue_len; i++)
		if (el_probe_queue[i] == dbid)
			return;
	if (el_probe_queue_len == el_probe_queue_cap)
	{
		el_probe_queue_cap = Max(64, el_probe_queue_cap * 2);
		if (el_probe_queue == NULL)
			el_probe_queue = MemoryContextAlloc(TopMemoryContext,
												sizeof(Oid) * el_probe_queue_cap);
		else
			el_probe_queue = repalloc(el_probe_queue, sizeof(Oid) * el_probe_queue_cap);
	}
	el_probe_queue[el_probe_queue_len++] = dbid;
}

/*
 * Queue a probe of every database that allows connections, is not a
 * template and has no registry entry (an entry means it is known to have
 * the extension, or is being probed).
 *
 * Databases queued before and not seen by this scan (dropped, made a
 * template, or closed to connections meanwhile) leave the queue: let in,
 * each would hold a registry entry for EL_MAX_PROBE_FAILURES failed probes,
 * a second apart, before the databases behind it got their turn.
 */
static void
el_probe_all_databases(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	int			nqueued = el_probe_queue_len;
	bool	   *seen;
	int			i;
	int			kept;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	/* In the transaction's memory: freed at its commit. */
	seen = palloc0(sizeof(bool) * Max(nqueued, 1));
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		ElDbWorker *entry;

		if (!db->datallowconn || db->datistemplate)
			continue;
		for (i = 0; i < nqueued; i++)
		{
			if (el_probe_queue[i] == db->oid)
			{
				seen[i] = true;
				break;
			}
		}
		SpinLockAcquire(&el_registry->mutex);
		entry = el_registry_entry(db->oid, false);
		SpinLockRelease(&el_registry->mutex);
		if (entry == NULL)
			el_probe_enqueue(db->oid);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);

	/* Keep the order; those appended by this scan were all seen. */
	kept = 0;
	for (i = 0; i < el_probe_queue_len; i++)
	{
		if (i < nqueued && !seen[i])
			continue;
		el_probe_queue[kept++] = el_probe_queue[i];
	}
	el_probe_queue_len = kept;
	pfree(seen);
	CommitTransactionCommand();
	(void) el_report_stat(false);
}

/*
 * Let queued probes in while registry entries are free, EL_MAX_PROBES at
 * a time (each also takes a background worker slot while it runs).  A
 * probe frees its entry when it finds no extension, which lets the next
 * one in.
 */
static void
el_admit_probes(void)
{
	int			nprobes = 0;
	int			nfree = 0;
	int			next = 0;
	int			i;

	if (el_probe_queue_len == 0)
		return;
	SpinLockAcquire(&el_registry->mutex);
	for (i = 0; i < el_max_databases; i++)
	{
		ElDbWorker *db = &el_registry->dbs[i];

		if (db->dbid == InvalidOid)
			nfree++;
		else if (db->probing && !db->installed)
			nprobes++;
	}
	while (next < el_probe_queue_len && nfree > 0 && nprobes < EL_MAX_PROBES)
	{
		Oid			dbid = el_probe_queue[next++];

		if (el_registry_entry(dbid, false) == NULL)
		{
			ElDbWorker *entry = el_registry_entry(dbid, true);

			entry->wanted = true;	/* probe: the worker checks */
			entry->probing = true;
			nfree--;
			nprobes++;
		}
	}
	SpinLockRelease(&el_registry->mutex);

	if (next > 0)
	{
		memmove(el_probe_queue, el_probe_queue + next,
				sizeof(Oid) * (el_probe_queue_len - next));
		el_probe_queue_len -= next;
	}
	else if (nfree == 0 && nprobes == 0)
	{
		/* Entries all belong to databases with the extension. */
		static TimestampTz last_report = 0;
		TimestampTz now = GetCurrentTimestamp();

		if (last_report == 0 || TimestampDifferenceExceeds(last_report, now, EL_SLOT_REPORT_MS))
		{
			last_report = now;
			ereport(LOG,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg_plural("pg_eventlog cannot check %d database for the extension",
								   "pg_eventlog cannot check %d databases for the extension",
								   el_probe_queue_len, el_probe_queue_len),
					 errdetail("All %d entries of the worker registry belong to databases with the extension.",
							   el_max_databases),
					 errhint("Raise eventlog.max_databases and restart the server.")));
		}
	}
}

/* Start workers that are wanted and not running; reap those that ended. */
static void
el_supervise(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			i;

	el_admit_probes();
	for (i = 0; i < el_max_databases; i++)
	{
		ElDbWorker *db = &el_registry->dbs[i];
		Oid			dbid;
		bool		start = false;

		if (el_handles[i])
		{
			pid_t		pid;

			if (GetBackgroundWorkerPid(el_handles[i], &pid) == BGWH_STOPPED)
			{
				pfree(el_handles[i]);
				el_handles[i] = NULL;
				SpinLockAcquire(&el_registry->mutex);

				/*
				 * Its pid was cleared by the worker on exit (or is, below,
				 * if it died); the entry may already serve another database.
				 *
				 * A probe that ended without an answer (its database was
				 * dropped, or refuses connections): give up after a few, so
				 * that it does not hold the entry forever.
				 */
				if (db->dbid == el_handle_dbids[i] && db->pid == 0 &&
					db->probing && !db->installed && !db->requested &&
					++db->probe_failures >= EL_MAX_PROBE_FAILURES)
				{
					db->wanted = false;
					db->probing = false;
					db->dbid = InvalidOid;
				}
				SpinLockRelease(&el_registry->mutex);
			}
			else
				continue;
		}

		/* A worker a previous launcher started may still run. */
		{
			pid_t		pid;

			SpinLockAcquire(&el_registry->mutex);
			pid = db->pid;
			SpinLockRelease(&el_registry->mutex);
			if (pid != 0 && kill(pid, 0) != 0)
			{
				SpinLockAcquire(&el_registry->mutex);
				if (db->pid == pid)
					db->pid = 0;
				SpinLockRelease(&el_registry->mutex);
			}
		}

		SpinLockAcquire(&el_registry->mutex);
		dbid = db->dbid;
		if (dbid != InvalidOid && db->wanted && !db->dropping && db->paused == 0 &&
			db->pid == 0 && db->next_start <= now)
		{
			start = true;
			db->next_start = TimestampTzPlusMilliseconds(now, EL_WORKER_RESTART_MS);
		}
		else if (dbid != InvalidOid && !db->wanted && db->pid == 0 && db->dropping)
			db->dbid = InvalidOid;	/* forget a dropped database */
		SpinLockRelease(&el_registry->mutex);

		if (start)
		{
			BackgroundWorkerHandle *handle;

			if (el_start_worker(i, dbid, false, &handle))
			{
				el_handles[i] = handle;
				el_handle_dbids[i] = dbid;
			}
		}
	}
	for (i = 0; i < el_max_databases; i++)
		el_supervise_notifier(i, now);
	for (i = 0; i < el_max_databases; i++)
		el_supervise_processors(i, now);
}

void
el_launcher_main(Datum main_arg)
{
	TimestampTz next_probe = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * Connect to no database in particular: enough to read shared catalogs
	 * (pg_database) and to show in pg_stat_activity.
	 */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	el_shared->launcher_pid = MyProcPid;
	el_handles = MemoryContextAllocZero(TopMemoryContext,
										sizeof(BackgroundWorkerHandle *) * el_max_databases);
	el_handle_dbids = MemoryContextAllocZero(TopMemoryContext, sizeof(Oid) * el_max_databases);
	SpinLockAcquire(&el_registry->mutex);
	el_registry->launcher_latch = MyLatch;
	SpinLockRelease(&el_registry->mutex);
	on_shmem_exit(el_launcher_shutdown, (Datum) 0);

	ereport(LOG, (errmsg("pg_eventlog launcher started")));

	for (;;)
	{
		TimestampTz now;
		bool		probe;
		long		timeout;

		CHECK_FOR_INTERRUPTS();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			ereport(DEBUG1,
					(errmsg("pg_eventlog launcher reloaded its configuration")));
		}

		now = GetCurrentTimestamp();
		SpinLockAcquire(&el_registry->mutex);
		probe = el_registry->probe_requested || now >= next_probe;
		el_registry->probe_requested = false;
		SpinLockRelease(&el_registry->mutex);
		if (probe)
		{
			pgstat_report_activity(STATE_RUNNING, "probing databases");
			el_probe_all_databases();
			next_probe = TimestampTzPlusMilliseconds(now, el_database_probe_interval_ms);
		}
		el_supervise();
		pgstat_report_activity(STATE_IDLE, NULL);

		/* Wake for the next probe, a restart due, or a signal. */
		timeout = Min((long) EL_WORKER_RESTART_MS, (long) el_database_probe_interval_ms);
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
