/*-------------------------------------------------------------------------
 *
 * maintenance.c
 *	  The maintenance worker of one database ("pg_eventlog maintenance"):
 *	  a round every eventlog.maintenance_interval.
 *
 * The launcher (launcher.c) starts it, also to probe a database for the
 * extension: a worker that finds none frees its registry entry and exits.
 * A round runs, for each topic, in a transaction of its own,
 * eventlog._maintain_topic() (sql/install/retention.sql), which records
 * active segments, applies retention and rolls segments, and for a
 * compacted topic eventlog._compact_topic() (sql/install/compaction.sql) in
 * another transaction.  An error in one
 * topic is logged with its context, recorded for the eventlog.maintenance
 * view, and retried next round.  After the topics, the round expires
 * abandoned Kafka group members and idle idempotent producers
 * (producer.c).
 *
 * The worker reloads its configuration on SIGHUP (and runs a round at once,
 * so that a new interval applies now) and exits promptly on SIGTERM or
 * postmaster death.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "shmem.h"
#include "worker.h"

PGDLLEXPORT void el_maintenance_main(Datum main_arg);

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
el_topics_or_exit(List **compacted)
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
		/*
		 * Compacted topics get a compaction round too.  The policy is read
		 * through to_jsonb so that a catalog older than 0.3.0, which has
		 * no such column, reads as no compaction.
		 */
		SPI_execute("SELECT t.topic_id, coalesce(pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'cleanup_policy'"
					" OPERATOR(pg_catalog.~~) 'compact%', false)"
					" FROM " EL_SCHEMA_NAME ".topic_catalog t ORDER BY 1",
					true, 0);
		for (i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
										  1, &isnull);
			Datum		c = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
										  2, &isnull);
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			topics = lappend_int(topics, DatumGetInt32(d));
			if (DatumGetBool(c))
				*compacted = lappend_int(*compacted, DatumGetInt32(d));
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
		 *
		 * A notifier or processor worker still attached to the entry (the
		 * extension was dropped) is woken to see that it is no longer
		 * wanted: asleep, it
		 * would stay connected for up to its 10 s timeout, and outlive the
		 * entry, making a DROP DATABASE meanwhile fail.
		 */
		Latch	   *notifier_latch;
		Latch	   *processor_latch;

		SpinLockAcquire(&el_registry->mutex);
		notifier_latch = el_my_entry->notifier_latch;
		processor_latch = el_my_entry->processor_latch;
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
		if (notifier_latch)
			SetLatch(notifier_latch);
		if (processor_latch)
			SetLatch(processor_latch);
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
el_maintain_one(int32 topic_id, MemoryContext round_cxt, bool new_round,
				const char *sql)
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
		if (SPI_execute_with_args(sql, 1, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not run \"%s\"", sql);
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
		ErrorData  *edata = el_worker_recover(round_cxt);

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
		List	   *compacted = NIL;
		ListCell   *lc;
		TimestampTz next_round;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		MemoryContextReset(round_cxt);
		topics = el_topics_or_exit(&compacted);

		if (topics == NIL)
			el_record_round(0, 0, NULL, true);
		foreach(lc, topics)
		{
			CHECK_FOR_INTERRUPTS();
			el_maintain_one(lfirst_int(lc), round_cxt, lc == list_head(topics),
							"SELECT action FROM " EL_SCHEMA_NAME "._maintain_topic($1)");
		}

		/*
		 * Compaction in transactions of their own, after the topic's
		 * round: a rewrite can take a while, and must not hold the
		 * partitions' routing locks that the round takes (counter recovery
		 * waits for them).
		 */
		foreach(lc, compacted)
		{
			CHECK_FOR_INTERRUPTS();
			el_maintain_one(lfirst_int(lc), round_cxt, false,
							"SELECT action FROM " EL_SCHEMA_NAME "._compact_topic($1, false)");
		}
		list_free(topics);
		list_free(compacted);
		el_kafka_expire_groups(round_cxt);
		el_expire_producers(round_cxt);
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
