/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The registry of databases and their background workers, in shared
 *	  memory; what backends ask of it; pg_eventlog's settings for the
 *	  workers and the launcher's registration (_PG_init); and the
 *	  eventlog.maintenance view.
 *
 * The registry has eventlog.max_databases entries (ElDbWorker, worker.h),
 * one per database that has the extension or is being probed for it, under
 * one spinlock.  The launcher (launcher.c) keeps each entry's workers
 * running: its maintenance worker (maintenance.c) and its notifier
 * (notifier.c), which claim the entry when they start.
 *
 * What backends ask: CREATE EXTENSION starts its database's workers itself
 * at commit, so that it can warn at once when no background worker slot is
 * free (the launcher then keeps them running); CREATE DATABASE and DROP
 * DATABASE wake the launcher; DROP DATABASE stops the database's workers
 * first, and ALTER DATABASE RENAME / SET TABLESPACE and CREATE DATABASE ...
 * TEMPLATE keep them away while they run (utility.c), as these refuse to
 * run while anyone is connected.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "notify.h"
#include "shmem.h"
#include "worker.h"

#define EL_LAUNCHER_RESTART_SECS 1

int			el_maintenance_interval_ms = 5000;
int			el_database_probe_interval_ms = 60000;
int			el_max_databases = 16;

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
		pg_atomic_init_u64(&free_entry->processor_interest, 0);
		pg_atomic_init_u64(&free_entry->processor_woken, 0);
		pg_atomic_init_u32(&free_entry->processors_changed, 0);
		free_entry->dbid = dbid;
	}
	return create ? free_entry : NULL;
}

/*
 * The PG_CATCH of a background worker's unit of work: take the error out
 * of the error context (a copy in "cxt", which the caller frees or resets)
 * and abort the transaction, so that the worker logs it and goes on with
 * its next unit instead of exiting.
 */
ErrorData *
el_worker_recover(MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	return edata;
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
bool
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
			start_notifier = el_notifier_needed() && db->notifier_pid == 0;
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
 * Terminate the processes "pid", "notifier_pid" and "processor_pid" (0:
 * none) and wait (5 s at most) until they have gone.
 */
static void
el_terminate_and_wait(pid_t pid, pid_t notifier_pid, pid_t processor_pid)
{
	int			i;

	if (pid != 0)
		(void) kill(pid, SIGTERM);
	if (notifier_pid != 0)
		(void) kill(notifier_pid, SIGTERM);
	if (processor_pid != 0)
		(void) kill(processor_pid, SIGTERM);
	for (i = 0; i < 500; i++)
	{
		bool		alive = (pid != 0 && kill(pid, 0) == 0) ||
			(notifier_pid != 0 && kill(notifier_pid, 0) == 0) ||
			(processor_pid != 0 && kill(processor_pid, 0) == 0);

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
	pid_t		processor_pid = 0;

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
			processor_pid = db->processor_pid;
		}
	}
	SpinLockRelease(&el_registry->mutex);
	el_terminate_and_wait(pid, notifier_pid, processor_pid);
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
	pid_t		processor_pid = 0;

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
			processor_pid = db->processor_pid;
		}
	}
	SpinLockRelease(&el_registry->mutex);
	el_terminate_and_wait(pid, notifier_pid, processor_pid);
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
		db->processor_next_start = 0;
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
