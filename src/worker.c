/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  pg_eventlog's background workers: a launcher, and one maintenance
 *	  worker per database where the extension is installed.
 *
 * The launcher ("pg_eventlog launcher") starts with the server when the
 * library is preloaded.  It connects to no database in particular, so it
 * can read pg_database and shows in pg_stat_activity.  It keeps one
 * maintenance worker ("pg_eventlog maintenance") per database that has the
 * extension, without any configuration:
 *	- at start, and every eventlog.database_probe_interval, it starts a
 *	  worker in each database without one; a worker that finds no extension
 *	  there says so in shared memory and exits;
 *	- CREATE EXTENSION pg_eventlog and CREATE DATABASE wake it at commit, so
 *	  a new database gets its worker at once;
 *	- a worker that dies or is terminated is started again (once a second at
 *	  most); one that exits because the extension is gone is not;
 *	- DROP DATABASE stops the database's workers first; ALTER DATABASE
 *	  RENAME / SET TABLESPACE and CREATE DATABASE ... TEMPLATE keep them
 *	  away while they run (utility.c), as these refuse to run while anyone
 *	  is connected.
 *
 * The registry has eventlog.max_databases entries, and a probe takes one
 * while it runs.  Databases to probe wait in a queue (first in, first out)
 * and are let in as entries free up, EL_MAX_PROBES at a time: every
 * database gets probed, however many there are before it in pg_database.
 *
 * CREATE EXTENSION starts its database's workers itself at commit, so that
 * it can warn at once when no background worker slot is free; the launcher
 * then keeps them running.
 *
 * Once a maintenance worker has found the extension, the launcher also
 * keeps a notifier ("pg_eventlog notifier", notifier.c) in that database
 * while eventlog.notify is on (el_supervise_notifier, notify.c).
 *
 * A maintenance worker runs a round every eventlog.maintenance_interval:
 * for each topic, in a transaction of its own, eventlog._maintain_topic()
 * (sql/install/retention.sql) records active segments, applies retention and
 * rolls segments.  An error in one topic is logged with its context,
 * recorded for the eventlog.maintenance view, and retried next round.
 *
 * Every worker reloads its configuration on SIGHUP and exits promptly on
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
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "commands/dbcommands.h"

#include "notify.h"
#include "shmem.h"
#include "worker.h"

#define EL_LAUNCHER_RESTART_SECS 1
/* Probes running at once: each takes a registry entry and a worker slot. */
#define EL_MAX_PROBES 4
/* A probe that ends this many times without an answer is given up. */
#define EL_MAX_PROBE_FAILURES 3
/* How often the launcher logs, per database and kind, that no slot is free. */
#define EL_SLOT_REPORT_MS (60 * 1000)

int			el_maintenance_interval_ms = 5000;
int			el_database_probe_interval_ms = 60000;
int			el_max_databases = 16;

PGDLLEXPORT void el_launcher_main(Datum main_arg);
PGDLLEXPORT void el_maintenance_main(Datum main_arg);

static void el_worker_xact_callback(XactEvent event, void *arg);
static void el_worker_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									   SubTransactionId parentSubid, void *arg);

/* Shared registry of databases and their workers (in shmem.c's area). */
ElWorkerRegistry *el_registry = NULL;

Size
el_worker_shmem_size(void)
{
	return add_size(offsetof(ElWorkerRegistry, dbs),
					mul_size(el_max_databases, sizeof(ElDbWorker)));
}

void
el_worker_shmem_init(void *area, bool found)
{
	el_registry = (ElWorkerRegistry *) area;
	if (!found)
	{
		memset(el_registry, 0, el_worker_shmem_size());
		SpinLockInit(&el_registry->mutex);
	}
}

void
el_worker_init(void)
{
	BackgroundWorker worker;

	DefineCustomIntVariable("eventlog.maintenance_interval",
							"Time between two maintenance rounds in each database.",
							"A round records active segments, removes expired segments and rolls full ones.",
							&el_maintenance_interval_ms,
							5000, 100, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("eventlog.database_probe_interval",
							"Time between two checks of every database for the extension.",
							"CREATE EXTENSION, CREATE DATABASE and DROP DATABASE trigger a check at once; this catches the rest.",
							&el_database_probe_interval_ms,
							60000, 1000, 24 * 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	RegisterXactCallback(el_worker_xact_callback, NULL);
	RegisterSubXactCallback(el_worker_subxact_callback, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("eventlog.max_databases",
							"Maximum number of databases pg_eventlog maintains.",
							"Each needs a background worker slot (max_worker_processes).",
							&el_max_databases,
							16, 1, 1024,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = EL_LAUNCHER_RESTART_SECS;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_eventlog");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "el_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_eventlog launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_eventlog launcher");
	RegisterBackgroundWorker(&worker);
}

/* ------------------------------------------------------------------------
 * The registry
 * ------------------------------------------------------------------------ */

/*
 * The entry of "dbid", creating it if "create"; NULL if none (or full).
 * The caller holds the registry's mutex.
 */
ElDbWorker *
el_registry_entry(Oid dbid, bool create)
{
	ElDbWorker *free_entry = NULL;
	int			i;

	for (i = 0; i < el_max_databases; i++)
	{
		ElDbWorker *db = &el_registry->dbs[i];

		if (db->dbid == dbid)
			return db;
		if (db->dbid == InvalidOid && free_entry == NULL)
			free_entry = db;
	}
	if (create && free_entry)
	{
		memset(free_entry, 0, sizeof(ElDbWorker));
		pg_atomic_init_u32(&free_entry->notify_pending, 0);
		free_entry->dbid = dbid;
	}
	return create ? free_entry : NULL;
}

/* Wake the launcher (for instance after CREATE EXTENSION committed). */
void
el_wake_launcher(bool probe_all)
{
	Latch	   *latch = NULL;

	if (el_registry == NULL)
		return;
	SpinLockAcquire(&el_registry->mutex);
	if (probe_all)
		el_registry->probe_requested = true;
	latch = el_registry->launcher_latch;
	SpinLockRelease(&el_registry->mutex);
	if (latch)
		SetLatch(latch);
}

/*
 * Register the maintenance worker (or, with "notifier", the notifier) of
 * "dbid"; false if no background worker slot was free.  "notify_pid" and
 * "handle" are the launcher's (0 and NULL from a backend).
 */
static bool
el_register_worker(Oid dbid, bool notifier, pid_t notify_pid,
				   BackgroundWorkerHandle **handle)
{
	BackgroundWorker worker;
	const char *kind = notifier ? "notifier" : "maintenance";

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_eventlog");
	snprintf(worker.bgw_function_name, BGW_MAXLEN,
			 notifier ? "el_notifier_main" : "el_maintenance_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_eventlog %s (database %u)", kind, dbid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_eventlog %s", kind);
	worker.bgw_main_arg = ObjectIdGetDatum(dbid);
	worker.bgw_notify_pid = notify_pid;
	return RegisterDynamicBackgroundWorker(&worker, handle);
}

/*
 * Whether a registry entry is taken by a probe that has not answered yet
 * (it frees the entry when the database has no extension).
 */
static bool
el_registry_has_probe(void)
{
	int			i;

	for (i = 0; i < el_max_databases; i++)
		if (el_registry->dbs[i].dbid != InvalidOid &&
			el_registry->dbs[i].probing && !el_registry->dbs[i].installed)
			return true;
	return false;
}

/*
 * The current database has just committed CREATE EXTENSION (this runs in
 * the commit callback): record it, and start its workers here rather than
 * through the launcher, so that the user hears at once when no background
 * worker slot is free.  The launcher keeps them running from then on.
 * Nothing here may fail: the transaction has committed.
 */
void
el_request_worker(Oid dbid)
{
	ElDbWorker *db;
	bool		start_worker = false;
	bool		start_notifier = false;
	bool		probe_pending = false;
	bool		worker_ok = true;
	bool		notifier_ok = true;
	TimestampTz later;

	/* Single-user mode starts no background workers: nothing to warn about. */
	if (el_registry == NULL || !IsUnderPostmaster)
		return;
	/* Not under the spinlock: a system call. */
	later = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), EL_WORKER_RESTART_MS);
	SpinLockAcquire(&el_registry->mutex);
	db = el_registry_entry(dbid, true);
	if (db)
	{
		db->wanted = true;
		db->requested = true;
		/* It is committed: the notifier need not wait for the worker. */
		db->installed = true;
		db->probe_failures = 0;
		if (db->paused == 0 && !db->dropping)
		{
			start_worker = (db->pid == 0);
			start_notifier = el_notify_enabled && db->notifier_pid == 0;
			/* The launcher leaves these starts to us for a moment. */
			if (start_worker)
				db->next_start = later;
			if (start_notifier)
				db->notifier_next_start = later;
		}
	}
	else
		probe_pending = el_registry_has_probe();
	if (probe_pending)
		el_registry->probe_requested = true;
	SpinLockRelease(&el_registry->mutex);

	if (db == NULL)
	{
		/*
		 * A probe holding an entry will free it: the launcher then probes
		 * this database (queued by the probe asked for above).
		 */
		if (!probe_pending)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("pg_eventlog cannot maintain another database"),
					 errdetail("All %d entries of the worker registry are in use.", el_max_databases),
					 errhint("Raise eventlog.max_databases and restart the server.")));
		el_wake_launcher(false);
		return;
	}

	if (start_worker)
		worker_ok = el_register_worker(dbid, false, 0, NULL);
	if (start_notifier)
		notifier_ok = el_register_worker(dbid, true, 0, NULL);

	SpinLockAcquire(&el_registry->mutex);
	if (db->dbid == dbid)
	{
		if (start_worker)
		{
			db->no_slot = !worker_ok;
			if (!worker_ok)
				db->next_start = 0;
		}
		if (start_notifier)
		{
			db->notifier_no_slot = !notifier_ok;
			if (!notifier_ok)
				db->notifier_next_start = 0;
		}
	}
	SpinLockRelease(&el_registry->mutex);

	if (!worker_ok && !notifier_ok)
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("no background worker slot is free for the pg_eventlog maintenance worker and notifier of this database"),
				 errdetail("Retention and notifications wait until slots are free; the launcher retries every second, and eventlog.maintenance shows the workers' status."),
				 errhint("Raise max_worker_processes: pg_eventlog needs two background workers per database that uses it (one with eventlog.notify off), plus its launcher.")));
	else if (!worker_ok)
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("no background worker slot is free for the pg_eventlog maintenance worker of this database"),
				 errdetail("Retention waits until a slot is free; the launcher retries every second, and eventlog.maintenance shows the worker's status."),
				 errhint("Raise max_worker_processes: pg_eventlog needs two background workers per database that uses it (one with eventlog.notify off), plus its launcher.")));
	else if (!notifier_ok)
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("no background worker slot is free for the pg_eventlog notifier of this database"),
				 errdetail("Notifications wait until a slot is free; the launcher retries every second, and eventlog.maintenance shows the notifier's status."),
				 errhint("Raise max_worker_processes: pg_eventlog needs two background workers per database that uses it (one with eventlog.notify off), plus its launcher.")));
	el_wake_launcher(false);
}

/*
 * Terminate the processes "pid" and "notifier_pid" (0: none) and wait (5 s
 * at most) until they have gone.
 */
static void
el_terminate_and_wait(pid_t pid, pid_t notifier_pid)
{
	int			i;

	if (pid != 0)
		(void) kill(pid, SIGTERM);
	if (notifier_pid != 0)
		(void) kill(notifier_pid, SIGTERM);
	for (i = 0; i < 500; i++)
	{
		bool		alive = (pid != 0 && kill(pid, 0) == 0) ||
			(notifier_pid != 0 && kill(notifier_pid, 0) == 0);

		if (!alive)
			break;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000L);
	}
}

/*
 * Stop the worker of a database about to be dropped, and wait (5 s at
 * most) until it has gone, as DROP DATABASE refuses while anyone is
 * connected.
 */
void
el_stop_worker(Oid dbid)
{
	pid_t		pid = 0;
	pid_t		notifier_pid = 0;

	if (el_registry == NULL)
		return;
	SpinLockAcquire(&el_registry->mutex);
	{
		ElDbWorker *db = el_registry_entry(dbid, false);

		if (db)
		{
			db->wanted = false;
			db->dropping = true;
			pid = db->pid;
			notifier_pid = db->notifier_pid;
		}
	}
	SpinLockRelease(&el_registry->mutex);
	el_terminate_and_wait(pid, notifier_pid);
}

/*
 * Keep the workers of "dbid" away while a command that needs the database
 * free of other connections runs (ALTER DATABASE RENAME / SET TABLESPACE,
 * CREATE DATABASE ... TEMPLATE): stop them, and start none until
 * el_resume_workers.  Several such commands may overlap: a count.
 *
 * "*counted" says whether this command added to the count (only when the
 * database has a registry entry); it is set before anything can fail, and
 * is what the command gives el_resume_workers, so that a command that did
 * not count cannot take away another one's pause (the entry may appear
 * while it runs).
 */
void
el_pause_workers(Oid dbid, volatile bool *counted)
{
	pid_t		pid = 0;
	pid_t		notifier_pid = 0;

	*counted = false;
	if (el_registry == NULL)
		return;
	SpinLockAcquire(&el_registry->mutex);
	{
		ElDbWorker *db = el_registry_entry(dbid, false);

		if (db)
		{
			db->paused++;
			*counted = true;
			pid = db->pid;
			notifier_pid = db->notifier_pid;
		}
	}
	SpinLockRelease(&el_registry->mutex);
	el_terminate_and_wait(pid, notifier_pid);
}

/*
 * The command of el_pause_workers has ended: the workers may come back.
 * "counted" is what el_pause_workers said: undo only its own pause.
 */
void
el_resume_workers(Oid dbid, bool counted)
{
	ElDbWorker *db;

	if (el_registry == NULL || !counted)
		return;
	SpinLockAcquire(&el_registry->mutex);
	db = el_registry_entry(dbid, false);
	if (db && db->paused > 0)
	{
		db->paused--;
		db->next_start = 0;
		db->notifier_next_start = 0;
	}
	SpinLockRelease(&el_registry->mutex);
	el_wake_launcher(false);
}

/*
 * Requests made by the current transaction (CREATE EXTENSION, CREATE
 * DATABASE), sent to the launcher only if it commits.
 *
 * CREATE EXTENSION may run in a subtransaction: the request belongs to the
 * (sub)transaction level that made it (0: none), goes to the parent when
 * that commits and is forgotten when it aborts, so that an extension rolled
 * back to a savepoint starts no worker (nor warns about a full registry).
 * CREATE and DROP DATABASE cannot run in a transaction block: a flag will do.
 */
static int	el_worker_request_level = 0;
static bool el_probe_requested = false;

void
el_request_worker_at_commit(void)
{
	/* An earlier request is at this level or an outer one: keep it. */
	if (el_worker_request_level == 0)
		el_worker_request_level = GetCurrentTransactionNestLevel();
}

void
el_probe_at_commit(void)
{
	el_probe_requested = true;
}

static void
el_worker_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT)
	{
		if (el_worker_request_level > 0)
			el_request_worker(MyDatabaseId);
		if (el_probe_requested)
			el_wake_launcher(true);
	}
	/*
	 * PREPARE TRANSACTION too: its requests must not leak into this
	 * session's next transaction.  COMMIT PREPARED, in any session, does
	 * not run them: the launcher's next probe of every database finds the
	 * extension.
	 */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		el_worker_request_level = 0;
		el_probe_requested = false;
	}
}

static void
el_worker_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (event == SUBXACT_EVENT_ABORT_SUB && el_worker_request_level >= level)
		el_worker_request_level = 0;
	else if (event == SUBXACT_EVENT_COMMIT_SUB && el_worker_request_level == level)
		el_worker_request_level = level - 1;
}

/* DROP DATABASE failed after el_stop_worker: ask for the worker again. */
void
el_unstop_worker(Oid dbid)
{
	ElDbWorker *db;

	if (el_registry == NULL)
		return;
	SpinLockAcquire(&el_registry->mutex);
	db = el_registry_entry(dbid, false);

	/*
	 * The launcher forgets a database being dropped once its workers have
	 * gone, without waiting for the DROP to end (it cannot tell whether the
	 * database still exists).  A DROP that waited for a client to leave
	 * finds the entry gone: take one again, as a probe, so that the workers
	 * come back now rather than at the next probe of every database.
	 */
	if (db == NULL)
	{
		db = el_registry_entry(dbid, true);
		if (db)
			db->probing = true;
	}
	if (db)
	{
		db->dropping = false;
		db->wanted = true;
		db->next_start = 0;
	}
	SpinLockRelease(&el_registry->mutex);
	el_wake_launcher(false);
}

/* ------------------------------------------------------------------------
 * The launcher
 * ------------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------------
 * The maintenance worker of one database
 * ------------------------------------------------------------------------ */

static ElDbWorker *el_my_entry = NULL;

static void
el_maintenance_shutdown(int code, Datum arg)
{
	if (el_my_entry)
	{
		SpinLockAcquire(&el_registry->mutex);
		if (el_my_entry->pid == MyProcPid)
			el_my_entry->pid = 0;
		SpinLockRelease(&el_registry->mutex);
	}
}

/*
 * Record the outcome of one topic's maintenance for eventlog.maintenance;
 * "new_round" counts the round (once, with its first topic).
 */
static void
el_record_round(int64 rolled, int64 removed, const char *error, bool new_round)
{
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&el_registry->mutex);
	el_my_entry->last_run = now;
	if (new_round)
		el_my_entry->rounds++;
	el_my_entry->segments_rolled += rolled;
	el_my_entry->segments_removed += removed;
	if (error)
	{
		strlcpy(el_my_entry->last_error, error, sizeof(el_my_entry->last_error));
		el_my_entry->last_error_time = now;
	}
	else
		el_my_entry->last_success = now;
	SpinLockRelease(&el_registry->mutex);
}

/*
 * Whether the extension is installed here; if not, say so and exit.  Also
 * returns the topics to maintain.
 */
static List *
el_topics_or_exit(void)
{
	List	   *topics = NIL;
	bool		installed;
	uint64		i;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	SPI_execute("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_eventlog'",
				true, 1);
	installed = (SPI_processed == 1);
	if (installed)
	{
		SPI_execute("SELECT topic_id FROM " EL_SCHEMA_NAME ".topic_catalog ORDER BY 1",
					true, 0);
		for (i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
										  1, &isnull);
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			topics = lappend_int(topics, DatumGetInt32(d));
			MemoryContextSwitchTo(old);
		}
	}
	if (installed)
	{
		bool		first;

		SpinLockAcquire(&el_registry->mutex);
		first = el_my_entry->probing || !el_my_entry->installed ||
			el_my_entry->requested;
		el_my_entry->probing = false;
		el_my_entry->requested = false;
		el_my_entry->installed = true;
		SpinLockRelease(&el_registry->mutex);
		if (first)
		{
			ereport(LOG,
					(errmsg("pg_eventlog maintenance worker started in database \"%s\"",
							get_database_name(MyDatabaseId))));
			el_wake_launcher(false);	/* to start the notifier */
		}
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();

	if (!installed)
	{
		/*
		 * Nothing to do here.  Free the entry, so that databases without
		 * the extension do not fill the registry; unless CREATE EXTENSION
		 * asked for a worker meanwhile (then the launcher starts one again).
		 */
		SpinLockAcquire(&el_registry->mutex);
		el_my_entry->probing = false;
		el_my_entry->installed = false;
		el_my_entry->pid = 0;
		if (el_my_entry->requested)
			el_my_entry->requested = false;
		else
		{
			el_my_entry->wanted = false;
			el_my_entry->dbid = InvalidOid;
		}
		SpinLockRelease(&el_registry->mutex);
		el_my_entry = NULL;
		proc_exit(0);
	}
	return topics;
}

/*
 * One topic's maintenance in a transaction of its own.  Errors are caught,
 * logged with their context, and recorded; the next round retries.
 */
static void
el_maintain_one(int32 topic_id, MemoryContext round_cxt, bool new_round)
{
	volatile int64 rolled = 0;
	volatile int64 removed = 0;

	PG_TRY();
	{
		Oid			argtypes[1] = {INT4OID};
		Datum		args[1];
		uint64		i;

		/* now() in the round must be now: bgworkers run no client statements. */
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "eventlog maintenance round");
		args[0] = Int32GetDatum(topic_id);
		if (SPI_execute_with_args("SELECT action FROM " EL_SCHEMA_NAME "._maintain_topic($1)",
								  1, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not run eventlog._maintain_topic");
		for (i = 0; i < SPI_processed; i++)
		{
			char	   *action = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);

			if (strcmp(action, "rolled") == 0)
				rolled++;
			else if (strcmp(action, "removed") == 0)
				removed++;
		}
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
		/* So that autovacuum sees the catalog rows the round changed. */
		(void) el_report_stat(false);
		el_record_round(rolled, removed, NULL, new_round);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(round_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		(void) el_report_stat(false);
		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_eventlog maintenance of topic %d failed: %s",
						topic_id, edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
				 edata->context ? errcontext("%s", edata->context) : 0));
		el_record_round(0, 0, edata->message, new_round);
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

void
el_maintenance_main(Datum main_arg)
{
	Oid			dbid = DatumGetObjectId(main_arg);
	MemoryContext round_cxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * Take the entry, unless another worker already serves this database
	 * (the launcher and CREATE EXTENSION may both have started one): the
	 * check and the claim are one step under the mutex.
	 */
	for (;;)
	{
		pid_t		other;

		SpinLockAcquire(&el_registry->mutex);
		el_my_entry = el_registry_entry(dbid, false);
		other = el_my_entry ? el_my_entry->pid : 0;
		if (el_my_entry && (other == 0 || other == MyProcPid))
			el_my_entry->pid = MyProcPid;
		SpinLockRelease(&el_registry->mutex);
		if (el_my_entry == NULL)
			proc_exit(0);
		if (other == 0 || other == MyProcPid)
			break;
		if (kill(other, 0) == 0)
		{
			el_my_entry = NULL;
			proc_exit(0);
		}
		/* It died without clearing its pid: clear it and try again. */
		SpinLockAcquire(&el_registry->mutex);
		if (el_my_entry->pid == other)
			el_my_entry->pid = 0;
		SpinLockRelease(&el_registry->mutex);
	}
	on_shmem_exit(el_maintenance_shutdown, (Datum) 0);

	BackgroundWorkerInitializeConnectionByOid(dbid, InvalidOid, 0);
	el_pin_search_path_for_process();

	/*
	 * A command that needs the database to itself (utility.c) may have
	 * begun while this worker was starting: leave at once.
	 */
	{
		bool		away;

		SpinLockAcquire(&el_registry->mutex);
		away = el_my_entry->paused > 0 || el_my_entry->dropping;
		SpinLockRelease(&el_registry->mutex);
		if (away)
			proc_exit(0);
	}

	round_cxt = AllocSetContextCreate(TopMemoryContext, "pg_eventlog maintenance round",
									  ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		List	   *topics;
		ListCell   *lc;
		TimestampTz next_round;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		MemoryContextReset(round_cxt);
		topics = el_topics_or_exit();

		if (topics == NIL)
			el_record_round(0, 0, NULL, true);
		foreach(lc, topics)
		{
			CHECK_FOR_INTERRUPTS();
			el_maintain_one(lfirst_int(lc), round_cxt, lc == list_head(topics));
		}
		list_free(topics);
		pgstat_report_activity(STATE_IDLE, NULL);

		/*
		 * Flush the round's table statistics before sleeping: the calls
		 * above are rate-limited and may have held some back, and
		 * autovacuum only sees what is flushed.
		 */
		(void) el_report_stat(true);

		/*
		 * Sleep until the next round is due, or a reload (which runs one at
		 * once, so that a new interval applies now).  Other wake-ups do
		 * not start a round: the latch is also set by interrupts unrelated
		 * to us, such as the shared invalidation queue asking an idle
		 * backend to catch up after much DDL.
		 */
		next_round = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												 el_maintenance_interval_ms);
		for (;;)
		{
			long		remaining;

			remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), next_round);
			if (remaining <= 0 || ConfigReloadPending)
				break;
			(void) WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 remaining, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
}

/* ------------------------------------------------------------------------
 * eventlog.maintenance
 * ------------------------------------------------------------------------ */

PG_FUNCTION_INFO_V1(el_maintenance_status);

/* Why the maintenance worker of "db" runs or not, for eventlog.maintenance. */
static const char *
el_worker_status(const ElDbWorker *db, bool launcher)
{
	if (db->pid != 0)
		return "running";
	if (db->dropping || db->paused > 0)
		return EL_STATUS_AWAY;
	if (db->no_slot)
		return EL_STATUS_NO_SLOT;
	if (!launcher)
		return "not running: the pg_eventlog launcher is not running";
	return "starting";
}

/*
 * eventlog._maintenance_status() -> SETOF (database, pid, ...), one row per
 * database with the extension; always one for the current database, which
 * has it, even while it has no registry entry.
 *
 * As pg_stat_activity does for other users' sessions, a role that is
 * neither superuser nor member of pg_read_all_stats sees only the current
 * database's row: other databases' names and errors are theirs.
 */
Datum
el_maintenance_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	int			i;
	bool		all_databases;
	bool		launcher;
	bool		seen_mine = false;

	el_require_shmem();
	store = el_materialized_srf(fcinfo, "_maintenance_status", &tupdesc);
	all_databases = superuser() ||
		has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	SpinLockAcquire(&el_registry->mutex);
	launcher = el_registry->launcher_latch != NULL;
	SpinLockRelease(&el_registry->mutex);

	for (i = 0; i <= el_max_databases; i++)
	{
		ElDbWorker	db;
		Datum		values[12];
		bool		nulls[12] = {false};
		char	   *datname;

		if (i < el_max_databases)
		{
			SpinLockAcquire(&el_registry->mutex);
			db = el_registry->dbs[i];
			SpinLockRelease(&el_registry->mutex);
			if (db.dbid == InvalidOid)
				continue;
			if (db.dbid != MyDatabaseId && (!all_databases || !db.installed))
				continue;
			if (db.dbid == MyDatabaseId)
			{
				if (seen_mine)
					continue;
				seen_mine = true;
			}
		}
		else
		{
			/*
			 * No entry: the database waits for its probe (after a restart),
			 * or the registry is full (eventlog.max_databases).
			 */
			if (seen_mine)
				break;
			memset(&db, 0, sizeof(db));
			db.dbid = MyDatabaseId;
		}
		datname = get_database_name(db.dbid);
		if (datname == NULL)
			continue;
		values[0] = CStringGetTextDatum(datname);
		if (db.pid)
			values[1] = Int32GetDatum(db.pid);
		else
			nulls[1] = true;
		values[2] = Int64GetDatum(db.rounds);
		if (db.last_run)
			values[3] = TimestampTzGetDatum(db.last_run);
		else
			nulls[3] = true;
		if (db.last_success)
			values[4] = TimestampTzGetDatum(db.last_success);
		else
			nulls[4] = true;
		values[5] = Int64GetDatum(db.segments_rolled);
		values[6] = Int64GetDatum(db.segments_removed);
		if (db.last_error[0])
		{
			values[7] = CStringGetTextDatum(db.last_error);
			values[8] = TimestampTzGetDatum(db.last_error_time);
		}
		else
			nulls[7] = nulls[8] = true;
		if (db.notifier_pid)
			values[9] = Int32GetDatum(db.notifier_pid);
		else
			nulls[9] = true;
		if (i == el_max_databases)
		{
			values[10] = CStringGetTextDatum(EL_STATUS_NO_ENTRY);
			values[11] = CStringGetTextDatum(EL_STATUS_NO_ENTRY);
		}
		else
		{
			values[10] = CStringGetTextDatum(el_worker_status(&db, launcher));
			values[11] = CStringGetTextDatum(el_notifier_status(&db, launcher));
		}
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
