/*-------------------------------------------------------------------------
 *
 * notifier.c
 *	  The notifier: one background worker per database that announces
 *	  newly readable records on their topics' channels (LISTEN/NOTIFY).
 *	  What producers, the launcher and eventlog.maintenance do about it is
 *	  in notify.c, which also says why producers never NOTIFY themselves.
 *
 * Producers' commits flag their partitions in shared memory and set this
 * worker's latch (notify.c, el_wake_notifier).  The notifier then collects
 * the partitions whose last stable offset has passed committed,
 * unannounced records (an abort can be what moves it: committed records
 * waiting behind aborted offsets become readable), and sends one
 * notification per topic, in a transaction of its own with
 * synchronous_commit off: notifications are a hint, never a promise, and
 * need not wait for a WAL flush while holding NOTIFY's lock.
 *
 * When to send: at once, unless records come under load.  Each round
 * counts the records it announces; one that finds them coming faster than
 * one per tenth of eventlog.notify_interval over it and the round before
 * (2,000 a second at the default 5 ms; once coalescing, one per three
 * twentieths, 1,333 a second) is busy, and the notifier starts to
 * coalesce: a commit that wakes it less than "delay" after its last round
 * waits until then, and what commits meanwhile is announced together by
 * the next round.  The delay is a tenth of the interval after the first
 * busy round and doubles with each busy round after it, up to the
 * interval; each round that is not busy takes a tenth of the interval off
 * it, down to none (el_coalesce_after says why not half).  So a
 * commit that finds the notifier idle (no round for longer than the delay,
 * which is none unless records came that fast) is announced at once, and
 * adds only the notifier's own round trip; a steady stream faster than
 * 2,000 records a second gets one round per interval, as every stream did
 * when each round that sent something was followed by a whole interval's
 * sleep; and the last commit of a burst is always announced by the next
 * round.  What the wait costs is latency; what it saves is one NOTIFY
 * transaction, and a wake-up of every listening session, per commit.
 *
 * Each round that announces partitions first publishes their stable
 * offsets for hot standbys, in a transaction of its own (standby.c), and
 * at its start the notifier publishes every partition's: the rounds'
 * timing is the publication's.  The notifier runs while either is wanted
 * (eventlog.notify, eventlog.publish_stable_offsets): with notifications
 * off, its rounds only publish, so that standbys still get new records.
 *
 * The payload is JSON:
 *		{"topic": "orders", "partitions": {"0": 120, "3": 57}}
 * mapping each partition to its last stable offset: records below it are
 * readable.  A topic with very many partitions may get several
 * notifications in one round, each under NOTIFY's 8000-byte limit.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "notify.h"
#include "shmem.h"
#include "standby.h"
#include "topic.h"
#include "worker.h"

/* Partitions collected per round (more wait for the next round). */
#define EL_NOTIFY_BATCH 1024
/* Keep each payload well under NOTIFY's limit (NOTIFY_PAYLOAD_MAX_LENGTH). */
#define EL_PAYLOAD_MAX 7000
/* How often a publication put off is tried again (standby.c). */
#define EL_PUBLISH_RETRY_MS 1000

/* The last publication failed: the next failures are logged at DEBUG1. */
static bool publish_failing = false;

PGDLLEXPORT void el_notifier_main(Datum main_arg);

/* ------------------------------------------------------------------------
 * The notifier's entry in the launcher's registry (worker.h)
 * ------------------------------------------------------------------------ */

static ElDbWorker *el_notifier_entry = NULL;	/* this notifier's database's */

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
static bool
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
static bool
el_notifier_wanted(void)
{
	bool		wanted;

	SpinLockAcquire(&el_registry->mutex);
	wanted = el_notifier_needed() &&
		el_notifier_entry->dbid == MyDatabaseId &&
		el_notifier_entry->notifier_pid == MyProcPid &&
		el_notifier_entry->wanted && el_notifier_entry->installed &&
		!el_notifier_entry->dropping && el_notifier_entry->paused == 0;
	SpinLockRelease(&el_registry->mutex);
	return wanted;
}

/* Whether a producer woke the notifier since its last round began. */
static bool
el_notifier_woken(void)
{
	return pg_atomic_read_u32(&el_notifier_entry->notify_pending) != 0;
}

/* The notifier starts looking: later commits must wake it again. */
static void
el_notifier_begin_round(void)
{
	(void) pg_atomic_exchange_u32(&el_notifier_entry->notify_pending, 0);
}

/* ------------------------------------------------------------------------
 * Collecting and sending
 * ------------------------------------------------------------------------ */

static int
el_item_cmp(const void *a, const void *b)
{
	const ElNotifyItem *x = a;
	const ElNotifyItem *y = b;

	if (x->topic_id != y->topic_id)
		return x->topic_id < y->topic_id ? -1 : 1;
	if (x->partition != y->partition)
		return x->partition < y->partition ? -1 : 1;
	return 0;
}

/* Start a payload for "topic" in "buf". */
static void
el_payload_begin(StringInfo buf, const char *topic)
{
	resetStringInfo(buf);
	appendStringInfoString(buf, "{\"topic\": ");
	escape_json(buf, topic);
	appendStringInfoString(buf, ", \"partitions\": {");
}

/*
 * Topic names by ID, so that a round reads no catalog: rebuilt when the
 * catalog tables change (el_cache_generation, bumped by their relcache
 * invalidations, which StartTransactionCommand processes).
 */
typedef struct ElTopicName
{
	int32		topic_id;		/* hash key */
	char		name[EL_TOPIC_NAME_MAX + 1];
} ElTopicName;

static HTAB *el_topic_names = NULL;
static uint64 el_topic_names_generation = 0;

/* The name of topic "topic_id", or NULL if it does not exist (any more). */
static const char *
el_topic_name(int32 topic_id, bool *spi_connected)
{
	ElTopicName *entry;
	bool		found;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(topic_id)};

	if (el_topic_names == NULL || el_topic_names_generation != el_cache_generation)
	{
		HASHCTL		ctl;

		if (el_topic_names)
		{
			hash_destroy(el_topic_names);
			el_topic_names = NULL;
		}
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(ElTopicName);
		el_topic_names = hash_create("pg_eventlog notifier topic names", 64, &ctl,
									 HASH_ELEM | HASH_BLOBS);
		el_watch_catalog();
		el_topic_names_generation = el_cache_generation;
	}
	entry = hash_search(el_topic_names, &topic_id, HASH_FIND, NULL);
	if (entry)
		return entry->name;

	if (!*spi_connected)
	{
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		*spi_connected = true;
	}
	if (SPI_execute_with_args("SELECT name FROM " EL_SCHEMA_NAME ".topic_catalog WHERE topic_id = $1",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read eventlog.topic_catalog");
	if (SPI_processed == 0)
		return NULL;
	entry = hash_search(el_topic_names, &topic_id, HASH_ENTER, &found);
	strlcpy(entry->name, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
			sizeof(entry->name));
	return entry->name;
}

/*
 * The partitions of this database whose committed records became readable
 * since they were last announced, with their last stable offset now (up to
 * "max_items"; the rest wait for the next call), and in *records how many
 * offsets they announce.  Each is marked announced up to that offset.
 * *blocked tells whether some partition has committed
 * records still held back by an earlier offset in flight: its holder wakes
 * the notifier when it ends.
 */
static int
el_collect_notifications(ElNotifyItem *items, int max_items, bool *blocked,
						 int64 *records)
{
	static int	start = 0;		/* rotates, so that no slot is starved */
	int			n = 0;
	int			k;

	*blocked = false;
	*records = 0;
	for (k = 0; k < el_max_partitions && n < max_items; k++)
	{
		bool		pending;

		if (el_take_announcement((start + k) % el_max_partitions, &items[n], &pending))
			*records += items[n++].records;
		if (pending)
			*blocked = true;
	}
	start = (start + k) % el_max_partitions;
	return n;
}

/*
 * Send one notification per topic for items[0..n), in one transaction.
 * A topic dropped meanwhile is skipped.
 */
static void
el_send_notifications(ElNotifyItem *items, int n)
{
	StringInfoData payload;
	bool		spi_connected = false;
	int			i = 0;

	qsort(items, n, sizeof(ElNotifyItem), el_item_cmp);
	/* In the caller's round context: the transaction's memory ends at commit. */
	initStringInfo(&payload);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, "eventlog notifier round");

	while (i < n)
	{
		int32		topic_id = items[i].topic_id;
		char		channel[NAMEDATALEN];
		const char *topic = el_topic_name(topic_id, &spi_connected);
		bool		first = true;

		if (topic == NULL)
		{
			while (i < n && items[i].topic_id == topic_id)
				i++;
			continue;
		}
		el_channel_name(topic, channel);
		el_payload_begin(&payload, topic);
		for (; i < n && items[i].topic_id == topic_id; i++)
		{
			if (payload.len > EL_PAYLOAD_MAX)
			{
				appendStringInfoString(&payload, "}}");
				Async_Notify(channel, payload.data);
				el_payload_begin(&payload, topic);
				first = true;
			}
			appendStringInfo(&payload, "%s\"%d\": " INT64_FORMAT,
							 first ? "" : ", ", items[i].partition, items[i].stable);
			first = false;
		}
		appendStringInfoString(&payload, "}}");
		Async_Notify(channel, payload.data);
	}

	if (spi_connected)
	{
		SPI_finish();
		PopActiveSnapshot();
	}
	CommitTransactionCommand();
	/* So that autovacuum sees what the round's catalog reads cost. */
	(void) el_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Send items[0..n) in one transaction, in "round_cxt" (reset after).  A
 * failure is logged, and those notifications are lost: they are a hint.
 */
static void
el_send_round(ElNotifyItem *items, int n, MemoryContext round_cxt)
{
	MemoryContext old = MemoryContextSwitchTo(round_cxt);

	PG_TRY();
	{
		el_send_notifications(items, n);
	}
	PG_CATCH();
	{
		ErrorData  *edata = el_worker_recover(round_cxt);

		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_eventlog notifier could not send notifications: %s",
						edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextReset(round_cxt);
}

/*
 * Publish the round's stable offsets for hot standbys (standby.c), before
 * the notifications; with no items, every partition's (the notifier's
 * start: el_publish_catch_up).  A failure is logged, and the next round
 * publishes every partition first (el_publish_pending).
 */
static void
el_publish_round(ElNotifyItem *items, int n, MemoryContext round_cxt)
{
	MemoryContext old = MemoryContextSwitchTo(round_cxt);
	volatile bool failed = false;

	PG_TRY();
	{
		pgstat_report_activity(STATE_RUNNING, "eventlog notifier publication");
		if (n > 0)
			el_publish_stable_offsets(items, n);
		else
			el_publish_catch_up();
		pgstat_report_activity(STATE_IDLE, NULL);
	}
	PG_CATCH();
	{
		ErrorData  *edata = el_worker_recover(round_cxt);

		/*
		 * What this round would have published: all of it, later.  Logged
		 * once while it keeps failing (retried every second: a restore in
		 * progress fails each catch-up until it is done).
		 */
		el_publish_set_pending();
		ereport(publish_failing ? DEBUG1 : LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_eventlog notifier could not publish stable offsets: %s",
						edata->message)));
		FreeErrorData(edata);
		failed = true;
	}
	PG_END_TRY();
	publish_failing = failed;
	MemoryContextSwitchTo(old);
	MemoryContextReset(round_cxt);
}

/*
 * Coalescing (see the header comment).  The notifier's state: when its last
 * round that sent something began collecting and ended, and the current
 * delay in microseconds (0: send at once).
 */
typedef struct ElCoalesce
{
	TimestampTz collected;
	TimestampTz sent;
	int64		delay;
	TimestampTz collected_before;	/* the round before that began */
	int64		records;		/* what that round found */
} ElCoalesce;

/*
 * A round collected "records" at "now": was it busy?  Adjusts the delay for
 * the rounds that follow.
 *
 * Busy means that over this round and the one before (this one alone
 * after a pause longer than the interval), records came faster than one
 * per tenth of the interval; once coalescing (a delay), faster
 * than one per three twentieths of it (2,000 and 1,333 a second at the
 * default 5 ms).  A round that is not busy takes a tenth of the interval
 * off the delay.  Judged on one round, with one threshold, and halving the
 * delay, a stream near that rate was busy and not busy by turns (commits
 * arrive in clumps, one per WAL flush, and a round sees a few of them), and
 * each round that was not cut the wait: 16 producers that a loaded two-core
 * machine held to about 2,000 commits a second got 1.5 times the rounds of
 * the notifier that always waited an interval, each a NOTIFY transaction
 * and a wake-up of every listener.  1,000 commits a second is below both
 * rates: they are never delayed from idle, and a notifier coalescing when
 * they begin stops within ten rounds.
 */
static void
el_coalesce_after(ElCoalesce *co, TimestampTz now, int64 records)
{
	int64		interval = (int64) el_notify_interval_ms * 1000;
	int64		quiet = interval / 10;
	int64		gap = (co->delay > 0) ? interval * 3 / 20 : quiet;
	TimestampTz since = co->collected_before;

	/*
	 * After a pause longer than the interval, or with no round before the
	 * last one to judge by (the notifier's second round), this round alone.
	 */
	if (now - co->collected > interval || co->collected_before == 0)
	{
		since = co->collected;
		co->records = 0;
	}
	if (interval > 0 && since != 0 &&
		(records + co->records) * gap > now - since)
	{
		co->delay = (co->delay == 0) ? quiet : Min(co->delay * 2, interval);
#ifdef EL_TEST_HOOKS
		SpinLockAcquire(&el_registry->mutex);
		el_notifier_entry->notifier_busy_rounds++;
		SpinLockRelease(&el_registry->mutex);
#endif
	}
	else if (interval > 0)
		co->delay = Max(co->delay - quiet, 0);
	else
		co->delay = 0;
	co->collected_before = co->collected;
	co->records = records;
	co->collected = now;
}

/*
 * The wall clock, as the notifier reads it for coalescing.  A test build
 * can move it (eventlog.debug_notifier_clock_offset), to step it back
 * between two rounds as NTP or an administrator may.
 */
static TimestampTz
el_notifier_clock(void)
{
#ifdef EL_TEST_HOOKS
	return GetCurrentTimestamp() + (int64) el_debug_notifier_clock_offset_ms * 1000;
#else
	return GetCurrentTimestamp();
#endif
}

/*
 * A producer woke the notifier: under load, wait until the last round is
 * "delay" old.  What commits meanwhile goes into the round that follows;
 * producers' wake-ups are reset here (that round looks anyway); SIGTERM
 * ends the sleep at once.
 *
 * The timestamps are the wall clock's, which can be stepped back (NTP, an
 * administrator): the wait is never longer than the delay from now, and
 * ends if the clock goes back during it.  Otherwise a clock set back an
 * hour while the notifier coalesced would hold every notification for an
 * hour: the producers, finding it woken, do not wake it again.
 */
static void
el_coalesce_before(ElCoalesce *co)
{
	TimestampTz start;
	TimestampTz until;
	TimestampTz now;
	int64		delay;

	if (co->delay == 0 || el_notify_interval_ms == 0)
		return;
	delay = Min(co->delay, (int64) el_notify_interval_ms * 1000);
	start = el_notifier_clock();
	until = co->sent + delay;
	if (start >= until)
		return;
	until = Min(until, start + delay);
#ifdef EL_TEST_HOOKS
	SpinLockAcquire(&el_registry->mutex);
	el_notifier_entry->notifier_delays++;
	SpinLockRelease(&el_registry->mutex);
#endif
	while ((now = el_notifier_clock()) < until && now >= start)
	{
		int64		remaining = until - now;

		/* WaitLatch counts milliseconds: the last one's rest in a sleep. */
		if (remaining >= 1000)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 (long) (remaining / 1000), PG_WAIT_EXTENSION);
		else
			pg_usleep((long) remaining);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The notifier of one database.  Started by the launcher (notify.c) once
 * the database's maintenance worker has found the extension; exits when
 * the extension or eventlog.notify goes away.
 */
void
el_notifier_main(Datum main_arg)
{
	Oid			dbid = DatumGetObjectId(main_arg);
	ElNotifyItem *items;
	MemoryContext round_cxt;
	ElCoalesce	co = {0};
	bool		publishing;
	TimestampTz publish_tried = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (!el_notifier_attach(dbid))
		proc_exit(0);
	BackgroundWorkerInitializeConnectionByOid(dbid, InvalidOid, 0);
	el_pin_search_path_for_process();

	/* A notification is a hint: never wait for a WAL flush to send one. */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);

	items = MemoryContextAlloc(TopMemoryContext, sizeof(ElNotifyItem) * EL_NOTIFY_BATCH);
	round_cxt = AllocSetContextCreate(TopMemoryContext, "pg_eventlog notifier round",
									  ALLOCSET_DEFAULT_SIZES);
	publishing = el_publish_enabled;
	if (publishing)
		el_publish_round(NULL, 0, round_cxt);

	for (;;)
	{
		bool		blocked = false;
		int			n;
		int64		records;
		TimestampTz now;

		/*
		 * Reset the latch first, then look at interrupts, the settings and
		 * the wake-up flag: whatever arrives after this sets it again.
		 */
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!el_notifier_wanted())
			proc_exit(0);

		/*
		 * Publication turned on while running: what committed while it was
		 * off is published now, as at the notifier's start.
		 */
		if (el_publish_enabled && !publishing)
			el_publish_round(NULL, 0, round_cxt);
		publishing = el_publish_enabled;

		/*
		 * A publication put off (a lock not free, a partition skipped, a
		 * failure): retried every second, not only at the next round, which
		 * on a primary where nothing else commits might never come.
		 */
		if (publishing && el_publish_pending() &&
			TimestampDifferenceExceeds(publish_tried, GetCurrentTimestamp(),
									   EL_PUBLISH_RETRY_MS))
		{
			publish_tried = GetCurrentTimestamp();
			el_publish_round(NULL, 0, round_cxt);
		}

		/* Woken by a producer: under load, wait to coalesce. */
		if (el_notifier_woken())
			el_coalesce_before(&co);

		/* A producer that commits after this sets the flag (and the latch) again. */
		el_notifier_begin_round();
		now = el_notifier_clock();
		n = el_collect_notifications(items, EL_NOTIFY_BATCH, &blocked, &records);
		if (n > 0)
		{
			el_coalesce_after(&co, now, records);
			if (el_publish_enabled)
				el_publish_round(items, n, round_cxt);
			if (el_notify_enabled)
				el_send_round(items, n, round_cxt);
			co.sent = el_notifier_clock();
			/* A full batch: the rest is collected at once. */
			if (n == EL_NOTIFY_BATCH)
				continue;
		}

		/*
		 * Sleep until a producer wakes us (at once if one did during the
		 * round).  A partition whose committed records wait behind an offset
		 * in flight is woken by that transaction's end; the timeout only
		 * covers a holder that vanished without ending normally.
		 */
		{
			long		timeout = blocked ? 1000L : 10000L;
			long		stats_due;

			/*
			 * Statistics held back by the rate limit of pgstat_report_stat
			 * must not wait for the next commit: wake when they are due.
			 */
			stats_due = el_report_stat(false);
			if (stats_due > 0)
				timeout = Min(timeout, stats_due);
			if (publishing && el_publish_pending())
				timeout = Min(timeout, EL_PUBLISH_RETRY_MS);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 timeout, PG_WAIT_EXTENSION);
		}
	}
}
