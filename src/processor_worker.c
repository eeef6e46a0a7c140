/*-------------------------------------------------------------------------
 *
 * processor_worker.c
 *	  The processor worker ("pg_eventlog processors"): one background
 *	  worker per database with enabled stream processors, which runs their
 *	  steps continuously.  When it is started and how producers wake it is
 *	  in processors.c; a step is eventlog.run_processor
 *	  (sql/install/streams.sql, docs/streams.md).
 *
 * A round looks at every enabled processor, in processor id order, and
 * runs one step of those that have something to do: new records in a
 * source topic (the wake-up bits producers set, processors.c), a full
 * previous step (more records wait), a window processor that had no step
 * for eventlog.processor_idle_interval (so that processing-time windows and
 * those idle partitions let close do close), or a processor seen for the
 * first time.  One step at most per processor and round, so a processor
 * with a backlog does not starve the others.  Then it sleeps on its latch
 * until a producer, a change of the catalog, a retry or a tick is due.
 *
 * A step is one transaction: SELECT eventlog.run_processor(name,
 * eventlog.processor_max_records, false), which runs the step as the
 * processor's owner in a security-restricted operation (processor_owner.c,
 * as autovacuum and REFRESH MATERIALIZED VIEW run a table owner's code):
 * the owner's SQL runs with the owner's privileges only, and cannot SET
 * ROLE or SET SESSION AUTHORIZATION out of them, though this worker's
 * session is a superuser's.  Settings the owner's SQL changes are undone
 * after the step, so they never reach another processor's.
 *
 * A step that fails is rolled back (positions, state and sink move
 * together, or not at all), logged, and recorded in
 * eventlog.processor_runtime (failures, last_error, last_error_at, shown by
 * eventlog.processors); the processor is retried after 1 s, 2 s, 4 s, ... up
 * to a minute, while the others keep running.  Its first successful step
 * sets failures back to 0.  A step that finds another step of the
 * processor in progress (someone called run_processor) is retried shortly.
 * A step that eventlog.processor_step_timeout canceled is retried with half
 * the records (el_step_records), so that a processor whose records cost
 * much still moves; its steps grow back while they stay well under the
 * timeout.
 *
 * The worker exits when the database has no enabled processor left, when
 * eventlog.processors_enabled goes off, when the extension is dropped, and
 * promptly on SIGTERM (DROP DATABASE and the commands that need the
 * database to themselves terminate it, worker.c) or postmaster death.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "processors.h"
#include "shmem.h"
#include "worker.h"

/* Retries of a failing processor: 1 s, doubling, up to this. */
#define EL_PROCESSOR_RETRY_MAX_MS (60 * 1000)
/* A step that found another step of the processor in progress: retry after. */
#define EL_PROCESSOR_BUSY_RETRY_MS 250
/* The catalog is read again at least this often (and at each change). */
#define EL_PROCESSOR_RELOAD_MS (10 * 1000)
/* The longest sleep. */
#define EL_PROCESSOR_SLEEP_MS (10 * 1000)

PGDLLEXPORT void el_processor_worker_main(Datum main_arg);

/* One processor, as the worker knows it. */
typedef struct ElProc
{
	int32		id;
	char	   *name;
	Oid			owner;
	bool		window;			/* a window or join processor: ticks when idle */
	bool		enabled;
	int			failures;		/* consecutive failed steps */
	uint64		bits;			/* its source topics' wake-up bits */
	TimestampTz retry_at;		/* no step before this (0: none) */
	TimestampTz last_step;		/* when its last step began */
	bool		more;			/* step again: a full step, a retry */
	int32		step_records;	/* most records its next step reads (0: the
								 * setting's), below the setting after a step
								 * that eventlog.processor_step_timeout
								 * canceled */
} ElProc;

static ElDbWorker *el_my_entry = NULL;
static ElProc *el_procs = NULL;
static int	el_nprocs = 0;
static MemoryContext el_list_cxt = NULL;

static void
el_processor_worker_detach(int code, Datum arg)
{
	if (el_my_entry == NULL)
		return;
	SpinLockAcquire(&el_registry->mutex);
	if (el_my_entry->processor_pid == MyProcPid)
	{
		el_my_entry->processor_pid = 0;
		el_my_entry->processor_latch = NULL;
		pg_atomic_write_u64(&el_my_entry->processor_interest, 0);
	}
	SpinLockRelease(&el_registry->mutex);
	el_my_entry = NULL;
}

/* Become the processor worker of "dbid": false if another one runs there. */
static bool
el_processor_worker_attach(Oid dbid)
{
	ElDbWorker *db;
	pid_t		other = 0;

	SpinLockAcquire(&el_registry->mutex);
	db = el_registry_entry(dbid, false);
	if (db)
	{
		other = db->processor_pid;
		if (other != 0 && other != MyProcPid && kill(other, 0) != 0)
			other = 0;			/* it died without detaching */
		if (other == 0 || other == MyProcPid)
		{
			db->processor_pid = MyProcPid;
			db->processor_latch = MyLatch;
		}
	}
	SpinLockRelease(&el_registry->mutex);
	if (db == NULL || (other != 0 && other != MyProcPid))
		return false;
	el_my_entry = db;
	on_shmem_exit(el_processor_worker_detach, (Datum) 0);
	return true;
}

/* Whether this worker should go on running. */
static bool
el_processor_worker_wanted(void)
{
	bool		wanted;

	SpinLockAcquire(&el_registry->mutex);
	wanted = el_processors_enabled &&
		el_my_entry->dbid == MyDatabaseId &&
		el_my_entry->processor_pid == MyProcPid &&
		el_my_entry->wanted && el_my_entry->installed &&
		!el_my_entry->dropping && el_my_entry->paused == 0;
	SpinLockRelease(&el_registry->mutex);
	return wanted;
}

/*
 * Nothing to run here (no enabled processor, or no extension): say so, so
 * that the launcher starts no worker until the catalog changes, and exit;
 * unless it changed meanwhile.
 */
static void
el_processor_worker_exit_if_unchanged(void)
{
	bool		leave = false;

	SpinLockAcquire(&el_registry->mutex);
	if (pg_atomic_read_u32(&el_my_entry->processors_changed) == 0)
	{
		el_my_entry->processors_checked = true;
		el_my_entry->processors_wanted = false;
		leave = true;
	}
	SpinLockRelease(&el_registry->mutex);
	if (leave)
		proc_exit(0);
}

static int64
el_retry_delay_ms(int failures)
{
	return Min((int64) 1000 << Min(Max(failures - 1, 0), 16),
			   (int64) EL_PROCESSOR_RETRY_MAX_MS);
}

/*
 * Read the processors from the catalog, keeping what the worker knew of
 * those it knew; false if the extension (or a catalog with
 * processor_runtime) is not there.  Publishes the source topics' wake-up
 * bits.
 */
static bool
el_load_processors(void)
{
	ElProc	   *procs = NULL;
	int			n = 0;
	bool		present;
	uint64		interest = 0;
	MemoryContext new_cxt;

	new_cxt = AllocSetContextCreate(TopMemoryContext, "pg_eventlog processor list",
									ALLOCSET_SMALL_SIZES);
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "eventlog processor worker: reading processors");
	if (SPI_execute("SELECT pg_catalog.to_regclass('" EL_SCHEMA_NAME ".processor_runtime') IS NOT NULL",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not look for eventlog.processor_runtime");
	{
		bool		isnull;

		present = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	if (present)
	{
		uint64		i;

		/*
		 * The topics a processor reads are its catalog row's *_topic_id
		 * columns, and a join's right_topic_id in its join_spec.  Windows
		 * and joins also step when idle: their watermark moves with time
		 * (idle_timeout, processing time), closing windows.
		 */
		if (SPI_execute("SELECT c.processor_id, c.name, c.owner::pg_catalog.oid,"
						" c.kind OPERATOR(pg_catalog.=) ANY (ARRAY['window', 'join']),"
						" coalesce(r.enabled, true), coalesce(r.failures, 0),"
						" coalesce(r.last_error_at, '-infinity'),"
						" ARRAY(SELECT j.value::pg_catalog.int4"
						"   FROM pg_catalog.jsonb_each_text(pg_catalog.to_jsonb(c) OPERATOR(pg_catalog.||)"
						"                                   COALESCE(c.join_spec, '{}'::pg_catalog.jsonb)) AS j"
						"  WHERE j.key OPERATOR(pg_catalog.~~) '%topic\\_id' AND j.value IS NOT NULL)"
						" FROM " EL_SCHEMA_NAME ".processor_catalog c"
						" LEFT JOIN " EL_SCHEMA_NAME ".processor_runtime r"
						" ON r.processor_id OPERATOR(pg_catalog.=) c.processor_id"
						" ORDER BY c.processor_id", true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read eventlog.processor_catalog");
		procs = MemoryContextAllocZero(new_cxt, sizeof(ElProc) * Max(SPI_processed, 1));
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			ElProc	   *p = &procs[n];
			bool		isnull;
			ArrayType  *topics;
			Datum	   *elems;
			int			nelems;
			TimestampTz last_error_at;
			int			k;

			p->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
			p->name = MemoryContextStrdup(new_cxt, SPI_getvalue(tup, desc, 2));
			p->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
			p->window = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
			p->enabled = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
			p->failures = DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull));
			last_error_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 7, &isnull));
			topics = DatumGetArrayTypeP(SPI_getbinval(tup, desc, 8, &isnull));
			deconstruct_array(topics, INT4OID, 4, true, TYPALIGN_INT, &elems, NULL, &nelems);
			for (k = 0; k < nelems; k++)
				p->bits |= UINT64CONST(1) << el_topic_wakeup_index(DatumGetInt32(elems[k]));

			/*
			 * What the worker knew of it: when it last stepped, and when it
			 * may step again, unless its failures were cleared meanwhile
			 * (resume_processor).  Each processor gets a step after a
			 * reload: a processor seen for the first time or resumed has
			 * records the wake-ups did not announce (they came before its
			 * interest, or while it was paused), and the periodic reload
			 * makes up for any wake-up missed otherwise.
			 */
			p->more = true;
			for (k = 0; k < el_nprocs; k++)
			{
				if (el_procs[k].id == p->id)
				{
					p->last_step = el_procs[k].last_step;
					p->step_records = el_procs[k].step_records;
					if (p->failures > 0 || el_procs[k].failures == 0)
						p->retry_at = el_procs[k].retry_at;
					break;
				}
			}
			/* Failures (also a previous worker's) delay the next try. */
			if (p->failures > 0 && last_error_at != DT_NOBEGIN)
			{
				p->retry_at = Max(p->retry_at,
								  TimestampTzPlusMilliseconds(last_error_at,
															  el_retry_delay_ms(p->failures)));
				p->more = true;
			}
			if (p->enabled)
				interest |= p->bits;
			n++;
		}
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();

	if (el_list_cxt)
		MemoryContextDelete(el_list_cxt);
	el_list_cxt = new_cxt;
	el_procs = procs;
	el_nprocs = n;

	/*
	 * Publish the interest before the round's steps look at the records: a
	 * commit after that finds it and wakes us.
	 */
	pg_atomic_write_u64(&el_my_entry->processor_interest, interest);
	pg_memory_barrier();
	return present;
}

/* Record a failed step of "p" (in a transaction of its own). */
static void
el_record_failure(ElProc *p, ErrorData *edata, MemoryContext cxt)
{
	PG_TRY();
	{
		Oid			argtypes[2] = {INT4OID, TEXTOID};
		Datum		args[2];

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		args[0] = Int32GetDatum(p->id);
		args[1] = CStringGetTextDatum(edata->message ? edata->message : "unknown error");
		/* Only for a processor that still exists (it may have been dropped). */
		if (SPI_execute_with_args("INSERT INTO " EL_SCHEMA_NAME ".processor_runtime AS r"
								  " (processor_id, failures, last_error, last_error_at)"
								  " SELECT c.processor_id, 1, $2, pg_catalog.now()"
								  "   FROM " EL_SCHEMA_NAME ".processor_catalog c"
								  "  WHERE c.processor_id OPERATOR(pg_catalog.=) $1"
								  " ON CONFLICT (processor_id) DO UPDATE"
								  " SET failures = r.failures OPERATOR(pg_catalog.+) 1,"
								  " last_error = excluded.last_error,"
								  " last_error_at = excluded.last_error_at",
								  2, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not record the failure of processor \"%s\"", p->name);
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *e2 = el_worker_recover(cxt);

		ereport(LOG,
				(errcode(e2->sqlerrcode),
				 errmsg("pg_eventlog processor worker could not record the failure of processor \"%s\": %s",
						p->name, e2->message)));
		FreeErrorData(e2);
	}
	PG_END_TRY();
}

/*
 * The most records the next step of "p" reads: eventlog.processor_max_records,
 * or less after steps that eventlog.processor_step_timeout canceled.  A step
 * of a processor whose records each cost much would otherwise time out at
 * every retry, at the same size, and never move; so a canceled step halves
 * the size, and a full step that took under a quarter of the timeout
 * doubles it back (el_step_done), so that the size settles where steps
 * finish instead of swinging back into the timeout.
 */
static int32
el_step_records(ElProc *p)
{
	if (p->step_records <= 0 || el_processor_step_timeout_ms <= 0)
		return el_processor_max_records;
	return Min(p->step_records, el_processor_max_records);
}

/*
 * After a step of "p" that read n records (-2: failed) in elapsed_ms; true
 * when a canceled step halved the size, and the next, smaller, step may
 * come at once (no back-off: the failure was the size's).
 */
static bool
el_step_done(ElProc *p, int64 n, bool canceled, long elapsed_ms)
{
	int32		asked = el_step_records(p);

	if (canceled && el_processor_step_timeout_ms > 0 && asked > 1)
	{
		p->step_records = asked / 2;
		ereport(LOG,
				(errmsg("pg_eventlog processor \"%s\": steps of at most %d records after a step canceled by eventlog.processor_step_timeout",
						p->name, p->step_records)));
		return true;
	}
	else if (n >= asked && p->step_records > 0 && p->step_records < el_processor_max_records
			 && elapsed_ms < el_processor_step_timeout_ms / 4)
		p->step_records = Min((int64) p->step_records * 2, el_processor_max_records);
	return false;
}

/*
 * One step of "p": returns the records it read, 0 for none; -1 when another
 * step of it was in progress; -2 when it failed (recorded and logged).
 * *canceled: it failed because eventlog.processor_step_timeout canceled it.
 */
static int64
el_step(ElProc *p, MemoryContext cxt, bool *canceled)
{
	volatile int64 result = 0;

	PG_TRY();
	{
		Oid			argtypes[2] = {TEXTOID, INT4OID};
		Datum		args[2];
		bool		isnull = true;
		char	   *activity;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		activity = psprintf("eventlog processor step: %s", p->name);
		pgstat_report_activity(STATE_RUNNING, activity);
		args[0] = CStringGetTextDatum(p->name);
		args[1] = Int32GetDatum(el_step_records(p));

		/*
		 * A background worker runs no client statements, so nothing arms
		 * statement_timeout: eventlog.processor_step_timeout does, so that
		 * one slow processor cannot hold the others up for ever.
		 */
		if (el_processor_step_timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, el_processor_step_timeout_ms);
		if (SPI_execute_with_args("SELECT " EL_SCHEMA_NAME ".run_processor($1, $2, false)",
								  2, argtypes, args, NULL, false, 1) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "could not run a step of processor \"%s\"", p->name);
		if (el_processor_step_timeout_ms > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			result = isnull ? -1 : DatumGetInt64(d);
		}
		/* Healthy again: in the step's transaction, as this worker. */
		if (!isnull && p->failures > 0)
		{
			Oid			idtype[1] = {INT4OID};
			Datum		id[1] = {Int32GetDatum(p->id)};

			if (SPI_execute_with_args("UPDATE " EL_SCHEMA_NAME ".processor_runtime SET failures = 0"
									  " WHERE processor_id OPERATOR(pg_catalog.=) $1",
									  1, idtype, id, NULL, false, 0) != SPI_OK_UPDATE)
				elog(ERROR, "could not record the recovery of processor \"%s\"", p->name);
		}
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
		if (!isnull)
			p->failures = 0;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		disable_timeout(STATEMENT_TIMEOUT, false);
		edata = el_worker_recover(cxt);
		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_eventlog processor \"%s\" failed: %s", p->name, edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
				 edata->context ? errcontext("%s", edata->context) : 0));
		*canceled = edata->sqlerrcode == ERRCODE_QUERY_CANCELED;
		el_record_failure(p, edata, cxt);
		FreeErrorData(edata);
		result = -2;
	}
	PG_END_TRY();
	return result;
}

void
el_processor_worker_main(Datum main_arg)
{
	Oid			dbid = DatumGetObjectId(main_arg);
	MemoryContext step_cxt;
	TimestampTz next_reload = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (!el_processor_worker_attach(dbid))
		proc_exit(0);
	BackgroundWorkerInitializeConnectionByOid(dbid, InvalidOid, 0);
	el_pin_search_path_for_process();

	/*
	 * Steps of one processor serialize on its lock and read from where the
	 * last one committed: READ COMMITTED, whatever the server's default
	 * (in REPEATABLE READ a step after a concurrent one fails with 40001).
	 */
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);

	step_cxt = AllocSetContextCreate(TopMemoryContext, "pg_eventlog processor step",
									 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		uint64		woken;
		TimestampTz now;
		long		timeout = EL_PROCESSOR_SLEEP_MS;
		bool		again = false;
		int			i;

		/*
		 * Reset the latch first, then look at interrupts, the settings and
		 * the wake-up flags: whatever arrives after this sets it again.
		 */
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!el_processor_worker_wanted())
			proc_exit(0);

		now = GetCurrentTimestamp();
		if (pg_atomic_exchange_u32(&el_my_entry->processors_changed, 0) != 0 ||
			now >= next_reload || el_procs == NULL)
		{
			bool		present;
			bool		any = false;

			present = el_load_processors();
			next_reload = TimestampTzPlusMilliseconds(now, EL_PROCESSOR_RELOAD_MS);
			for (i = 0; i < el_nprocs; i++)
				any |= el_procs[i].enabled;
			if (!present || !any)
				el_processor_worker_exit_if_unchanged();
			else
			{
				SpinLockAcquire(&el_registry->mutex);
				el_my_entry->processors_checked = true;
				el_my_entry->processors_wanted = true;
				SpinLockRelease(&el_registry->mutex);
			}
		}

		/* Commits after this set the bits (and the latch) again. */
		woken = pg_atomic_exchange_u64(&el_my_entry->processor_woken, 0);

		for (i = 0; i < el_nprocs; i++)
		{
			ElProc	   *p = &el_procs[i];
			bool		due;
			int64		n;
			bool		full;
			bool		halved;

			if (!p->enabled)
				continue;
			now = GetCurrentTimestamp();
			if (p->retry_at > now)
				continue;
			due = p->more || (p->bits & woken) != 0 ||
				(p->window &&
				 TimestampDifferenceExceeds(p->last_step, now, el_processor_idle_interval_ms));
			if (!due)
				continue;
			CHECK_FOR_INTERRUPTS();
			p->last_step = now;
			p->more = false;
			p->retry_at = 0;
			{
				int32		asked = el_step_records(p);
				bool		canceled = false;
				TimestampTz began = now;
				long		secs;
				int			usecs;

				n = el_step(p, step_cxt, &canceled);
				MemoryContextReset(step_cxt);
				now = GetCurrentTimestamp();
				TimestampDifference(began, now, &secs, &usecs);
				halved = el_step_done(p, n, canceled, secs * 1000 + usecs / 1000);
				full = n >= asked;
			}
			if (n == -1)
			{
				p->more = true;
				p->retry_at = TimestampTzPlusMilliseconds(now, EL_PROCESSOR_BUSY_RETRY_MS);
			}
			else if (n == -2)
			{
				p->failures++;
				p->more = true;
				p->retry_at = halved ? now : TimestampTzPlusMilliseconds(now, el_retry_delay_ms(p->failures));
			}
			else if (full)
				p->more = true;
		}
		pgstat_report_activity(STATE_IDLE, NULL);

		/* When the next step is due, if no producer wakes us first. */
		now = GetCurrentTimestamp();
		for (i = 0; i < el_nprocs; i++)
		{
			ElProc	   *p = &el_procs[i];
			TimestampTz due = 0;

			if (!p->enabled)
				continue;
			if (p->more)
				due = Max(p->retry_at, now);
			else if (p->window)
				due = Max(TimestampTzPlusMilliseconds(p->last_step, el_processor_idle_interval_ms),
						  p->retry_at);
			else
				continue;
			if (due <= now)
			{
				again = true;
				break;
			}
			timeout = Min(timeout, (long) ((due - now + 999) / 1000));
		}
		if (again)
			continue;

		/*
		 * A step may have reset the latch after a producer set it (a lock
		 * wait does, such as NOTIFY's at the commit of a sink's trigger):
		 * the flags, which stay until the next round takes them, say
		 * whether to sleep.
		 */
		if ((pg_atomic_read_u64(&el_my_entry->processor_woken) &
			 pg_atomic_read_u64(&el_my_entry->processor_interest)) != 0 ||
			pg_atomic_read_u32(&el_my_entry->processors_changed) != 0 ||
			ConfigReloadPending)
			continue;
		{
			long		stats_due = el_report_stat(false);

			if (stats_due > 0)
				timeout = Min(timeout, stats_due);
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(timeout, 1L), PG_WAIT_EXTENSION);
	}
}
