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
 *	- DROP DATABASE stops the database's worker first (utility.c).
 *
 * Once a maintenance worker has found the extension, the launcher also
 * keeps a notifier ("pg_eventlog notifier", notify.c) in that database
 * while eventlog.notify is on.
 *
 * A maintenance worker runs a round every eventlog.maintenance_interval:
 * for each topic, in a transaction of its own, eventlog._maintain_topic()
 * (sql/pg_eventlog.sql) records active segments, applies retention and
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
#define EL_WORKER_RESTART_MS 1000

int			el_maintenance_interval_ms = 5000;
int			el_database_probe_interval_ms = 60000;
int			el_max_databases = 16;

PGDLLEXPORT void el_launcher_main(Datum main_arg);
PGDLLEXPORT void el_maintenance_main(Datum main_arg);
PGDLLEXPORT void el_notifier_main(Datum main_arg);

static void el_worker_xact_callback(XactEvent event, void *arg);

/* Shared registry of databases and their workers (in shmem.c's area). */
static ElWorkerRegistry *el_registry = NULL;

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
							"CREATE EXTENSION and CREATE DATABASE trigger a check at once; this catches the rest.",
							&el_database_probe_interval_ms,
							60000, 1000, 24 * 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	RegisterXactCallback(el_worker_xact_callback, NULL);

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

/* The entry of "dbid", creating it if "create"; NULL if none (or full). */
static ElDbWorker *
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
 * Ask for a worker in the current database (after CREATE EXTENSION
 * committed): the launcher starts it at once.
 */
void
el_request_worker(Oid dbid)
{
	ElDbWorker *db;

	if (el_registry == NULL)
		return;
	SpinLockAcquire(&el_registry->mutex);
	db = el_registry_entry(dbid, true);
	if (db)
	{
		db->wanted = true;
		db->requested = true;
		db->next_start = 0;
	}
	SpinLockRelease(&el_registry->mutex);
	if (db == NULL)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("pg_eventlog cannot maintain another database"),
				 errdetail("All %d entries of the worker registry are in use.", el_max_databases),
				 errhint("Raise eventlog.max_databases and restart the server.")));
	el_wake_launcher(false);
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
	int			i;

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
 * Requests made by the current transaction (CREATE EXTENSION, CREATE
 * DATABASE), sent to the launcher only if it commits.
 */
static bool el_worker_requested = false;
static bool el_probe_requested = false;

void
el_request_worker_at_commit(void)
{
	el_worker_requested = true;
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
		if (el_worker_requested)
			el_request_worker(MyDatabaseId);
		if (el_probe_requested)
			el_wake_launcher(true);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		el_worker_requested = el_probe_requested = false;
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
static BackgroundWorkerHandle **el_notifier_handles = NULL;

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
 * i; false if no slot was free.
 */
static bool
el_start_worker(int i, Oid dbid, bool notifier)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
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
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		/*
		 * The launcher retries every second; say so once a minute, not
		 * every second, so the log stays readable.
		 */
		static TimestampTz last_report = 0;
		TimestampTz now = GetCurrentTimestamp();

		if (last_report == 0 || TimestampDifferenceExceeds(last_report, now, 60 * 1000))
		{
			last_report = now;
			ereport(LOG,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not start a pg_eventlog %s worker for database %u", kind, dbid),
					 errdetail("No background worker slot is free; the launcher retries every second and reports this at most once a minute."),
					 errhint("Raise max_worker_processes: pg_eventlog needs two workers per database that uses it (one with eventlog.notify off), plus its launcher.")));
		}
		return false;
	}
	if (notifier)
		el_notifier_handles[i] = handle;
	else
		el_handles[i] = handle;
	return true;
}

/* Start the notifier of entry i if it should run and does not. */
static void
el_supervise_notifier(int i, TimestampTz now)
{
	ElDbWorker *db = &el_registry->dbs[i];
	Oid			dbid;
	pid_t		pid;
	bool		start = false;

	if (el_notifier_handles[i])
	{
		if (GetBackgroundWorkerPid(el_notifier_handles[i], &pid) != BGWH_STOPPED)
			return;
		pfree(el_notifier_handles[i]);
		el_notifier_handles[i] = NULL;
	}
	SpinLockAcquire(&el_registry->mutex);
	pid = db->notifier_pid;
	SpinLockRelease(&el_registry->mutex);
	if (pid != 0 && kill(pid, 0) != 0)
	{
		/* It died without detaching (a previous launcher's child). */
		SpinLockAcquire(&el_registry->mutex);
		if (db->notifier_pid == pid)
		{
			db->notifier_pid = 0;
			db->notifier_latch = NULL;
		}
		SpinLockRelease(&el_registry->mutex);
	}

	SpinLockAcquire(&el_registry->mutex);
	dbid = db->dbid;
	if (el_notify_enabled && dbid != InvalidOid && db->wanted && db->installed &&
		!db->dropping && db->notifier_pid == 0 && db->notifier_next_start <= now)
	{
		start = true;
		db->notifier_next_start = TimestampTzPlusMilliseconds(now, EL_WORKER_RESTART_MS);
	}
	SpinLockRelease(&el_registry->mutex);
	if (start)
		(void) el_start_worker(i, dbid, true);
}

/*
 * Make sure every database that allows connections and is not a template
 * has an entry, and mark it for a probe (a worker start).
 */
static void
el_probe_all_databases(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		ElDbWorker *entry;

		if (!db->datallowconn || db->datistemplate)
			continue;
		SpinLockAcquire(&el_registry->mutex);
		entry = el_registry_entry(db->oid, true);
		if (entry && !entry->dropping && !entry->wanted && entry->pid == 0)
		{
			entry->wanted = true;	/* probe: the worker checks */
			entry->probing = true;
		}
		SpinLockRelease(&el_registry->mutex);
		if (entry == NULL)
			ereport(LOG,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("pg_eventlog cannot maintain database \"%s\"", NameStr(db->datname)),
					 errhint("Raise eventlog.max_databases (currently %d) and restart the server.",
							 el_max_databases)));
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	(void) el_report_stat(false);
}

/* Start workers that are wanted and not running; reap those that ended. */
static void
el_supervise(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			i;

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
				db->pid = 0;
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
		if (dbid != InvalidOid && db->wanted && !db->dropping && db->pid == 0 &&
			db->next_start <= now)
		{
			start = true;
			db->next_start = TimestampTzPlusMilliseconds(now, EL_WORKER_RESTART_MS);
		}
		else if (dbid != InvalidOid && !db->wanted && db->pid == 0 && db->dropping)
			db->dbid = InvalidOid;	/* forget a dropped database */
		SpinLockRelease(&el_registry->mutex);

		if (start)
			(void) el_start_worker(i, dbid, false);
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
	el_notifier_handles = MemoryContextAllocZero(TopMemoryContext,
												 sizeof(BackgroundWorkerHandle *) * el_max_databases);
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
		first = el_my_entry->probing || !el_my_entry->installed;
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

	{
		pid_t		other = 0;

		SpinLockAcquire(&el_registry->mutex);
		el_my_entry = el_registry_entry(dbid, false);
		if (el_my_entry)
			other = el_my_entry->pid;
		SpinLockRelease(&el_registry->mutex);
		/* Another worker already serves this database: leave it be. */
		if (el_my_entry == NULL ||
			(other != 0 && other != MyProcPid && kill(other, 0) == 0))
			proc_exit(0);
		SpinLockAcquire(&el_registry->mutex);
		el_my_entry->pid = MyProcPid;
		SpinLockRelease(&el_registry->mutex);
	}
	on_shmem_exit(el_maintenance_shutdown, (Datum) 0);

	BackgroundWorkerInitializeConnectionByOid(dbid, InvalidOid, 0);
	el_pin_search_path_for_process();

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
 * The notifier's side of the registry (the notifier itself is in notify.c)
 * ------------------------------------------------------------------------ */

static ElDbWorker *el_notifier_entry = NULL;	/* in the notifier */
static ElDbWorker *el_producer_entry = NULL;	/* in a producing backend */

static void
el_notifier_detach(int code, Datum arg)
{
	if (el_notifier_entry == NULL)
		return;
	SpinLockAcquire(&el_registry->mutex);
	if (el_notifier_entry->notifier_pid == MyProcPid)
	{
		el_notifier_entry->notifier_pid = 0;
		el_notifier_entry->notifier_latch = NULL;
	}
	SpinLockRelease(&el_registry->mutex);
	el_notifier_entry = NULL;
}

/*
 * Become the notifier of "dbid": false if another one runs there or the
 * database has no entry.
 */
bool
el_notifier_attach(Oid dbid)
{
	ElDbWorker *db;
	pid_t		other = 0;

	SpinLockAcquire(&el_registry->mutex);
	db = el_registry_entry(dbid, false);
	if (db)
	{
		other = db->notifier_pid;
		if (other == 0 || other == MyProcPid)
		{
			db->notifier_pid = MyProcPid;
			db->notifier_latch = MyLatch;
		}
	}
	SpinLockRelease(&el_registry->mutex);
	if (db == NULL || (other != 0 && other != MyProcPid))
		return false;
	el_notifier_entry = db;
	on_shmem_exit(el_notifier_detach, (Datum) 0);
	return true;
}

/* Whether this notifier should go on running. */
bool
el_notifier_wanted(void)
{
	bool		wanted;

	SpinLockAcquire(&el_registry->mutex);
	wanted = el_notify_enabled &&
		el_notifier_entry->dbid == MyDatabaseId &&
		el_notifier_entry->notifier_pid == MyProcPid &&
		el_notifier_entry->wanted && el_notifier_entry->installed &&
		!el_notifier_entry->dropping;
	SpinLockRelease(&el_registry->mutex);
	return wanted;
}

/* The notifier starts looking: later commits must wake it again. */
void
el_notifier_begin_round(void)
{
	(void) pg_atomic_exchange_u32(&el_notifier_entry->notify_pending, 0);
}

/*
 * Called by a transaction that ended with committed records to announce:
 * wake the database's notifier, unless a commit since its last round
 * already did.  Runs in the commit callback: nothing here can fail.
 */
void
el_wake_notifier(void)
{
	static TimestampTz retry_after = 0;
	ElDbWorker *db = el_producer_entry;
	Latch	   *latch;

	if (el_registry == NULL)
		return;
	if (db == NULL || db->dbid != MyDatabaseId)
	{
		/*
		 * Not cached: look the database up, but not on every commit while
		 * it has no entry (the registry is full, or the launcher has not
		 * seen the database yet): at most once a second.
		 */
		TimestampTz now = GetCurrentTimestamp();

		if (now < retry_after)
			return;
		SpinLockAcquire(&el_registry->mutex);
		db = el_registry_entry(MyDatabaseId, false);
		SpinLockRelease(&el_registry->mutex);
		el_producer_entry = db;
		if (db == NULL)
		{
			retry_after = TimestampTzPlusMilliseconds(now, 1000);
			return;
		}
	}
	if (pg_atomic_read_u32(&db->notify_pending) != 0 ||
		pg_atomic_exchange_u32(&db->notify_pending, 1) != 0)
		return;
	SpinLockAcquire(&el_registry->mutex);
	latch = (db->dbid == MyDatabaseId) ? db->notifier_latch : NULL;
	SpinLockRelease(&el_registry->mutex);
	if (latch)
		SetLatch(latch);
}

/* ------------------------------------------------------------------------
 * eventlog.maintenance
 * ------------------------------------------------------------------------ */

PG_FUNCTION_INFO_V1(el_maintenance_status);

/*
 * eventlog._maintenance_status() -> SETOF (database, pid, ...), one row per
 * database with the extension.
 */
Datum
el_maintenance_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	int			i;

	el_require_shmem();
	store = el_materialized_srf(fcinfo, "_maintenance_status", &tupdesc);

	for (i = 0; i < el_max_databases; i++)
	{
		ElDbWorker	db;
		Datum		values[9];
		bool		nulls[9] = {false};
		char	   *datname;

		SpinLockAcquire(&el_registry->mutex);
		db = el_registry->dbs[i];
		SpinLockRelease(&el_registry->mutex);
		if (db.dbid == InvalidOid || !db.installed)
			continue;
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
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
