/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  LISTEN/NOTIFY wake-ups, as the rest of pg_eventlog sees them: the
 *	  settings, channel names (eventlog.channel()), a producer's wake-up of
 *	  its database's notifier, and the launcher's and eventlog.maintenance's
 *	  view of the notifier.  The notifier itself, one background worker per
 *	  database, is in notifier.c.
 *
 * Why producers never send NOTIFY themselves: PreCommit_Notify locks
 * "database 0" in AccessExclusiveLock and holds it through the commit's
 * WAL flush, so notifying transactions commit one at a time, cluster-wide,
 * with no group commit.  Instead a producing transaction, at the end of its
 * commit, records in the partition's shared state (under the lock it
 * takes there anyway, inflight.c) which committed offsets nobody has
 * announced yet, and wakes this database's notifier (el_wake_notifier
 * below); a flag makes that at most one SetLatch per notifier round,
 * however many producers commit.
 *
 * The channel of a topic is "eventlog.<topic>", or "eventlog.md5:<md5 of
 * the name>" when that would exceed NAMEDATALEN - 1 bytes (topic names
 * reach 200 characters, channel names 63).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "common/md5.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "notify.h"
#include "topic.h"
#include "worker.h"

bool		el_notify_enabled = true;
bool		el_publish_enabled = true;
int			el_notify_interval_ms = 5;

PG_FUNCTION_INFO_V1(el_channel);

/*
 * Whether a notifier runs: it sends the notifications and publishes the
 * stable offsets for hot standbys (standby.c), and either is reason enough.
 */
bool
el_notifier_needed(void)
{
	return el_notify_enabled || el_publish_enabled;
}

#ifdef EL_TEST_HOOKS
/*
 * Test only, read-only: eventlog.debug_notifier_busy_rounds and
 * eventlog.debug_notifier_delays show how many rounds this database's
 * notifier found busy, and how many it delayed to coalesce commits
 * (notifier.c), so that a test can tell that an idle notifier sent at once
 * without timing it.  The variables themselves are never used.
 */
static int	el_debug_notifier_busy_rounds = 0;
static int	el_debug_notifier_delays = 0;

/*
 * Test only: eventlog.debug_notifier_clock_offset moves the wall clock as
 * the notifier reads it (el_notifier_clock, notifier.c), so that a test
 * can step it back between two rounds as NTP or an administrator would.
 */
int			el_debug_notifier_clock_offset_ms = 0;

static const char *
el_show_notifier_counter(bool delays)
{
	static char buf[32];
	int64		value = 0;

	if (el_registry)
	{
		ElDbWorker *db;

		SpinLockAcquire(&el_registry->mutex);
		db = el_registry_entry(MyDatabaseId, false);
		if (db)
			value = delays ? db->notifier_delays : db->notifier_busy_rounds;
		SpinLockRelease(&el_registry->mutex);
	}
	snprintf(buf, sizeof(buf), INT64_FORMAT, value);
	return buf;
}

static const char *
el_show_notifier_busy_rounds(void)
{
	return el_show_notifier_counter(false);
}

static const char *
el_show_notifier_delays(void)
{
	return el_show_notifier_counter(true);
}
#endif

void
el_notify_init(void)
{
	DefineCustomBoolVariable("eventlog.notify",
							 "Sends a notification on a topic's channel when records become readable.",
							 "One notifier per database sends them, outside producers' commits.",
							 &el_notify_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("eventlog.publish_stable_offsets",
							 "Publishes each partition's last stable offset for hot standbys, which read up to it.",
							 "The notifier publishes it when records become readable, whether eventlog.notify is on or not.",
							 &el_publish_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("eventlog.notify_interval",
							"Longest time the notifier waits to announce commits while records come faster than one per tenth of it.",
							"An idle notifier announces a commit at once; under load it coalesces, with waits that double from a tenth of this up to this.",
							&el_notify_interval_ms,
							5, 0, 10000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
#ifdef EL_TEST_HOOKS
	DefineCustomIntVariable("eventlog.debug_notifier_busy_rounds",
							"Test only: rounds of this database's notifier that found records coming fast enough to coalesce.",
							NULL,
							&el_debug_notifier_busy_rounds,
							0, 0, INT_MAX,
							PGC_INTERNAL,
							GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							NULL, NULL, el_show_notifier_busy_rounds);
	DefineCustomIntVariable("eventlog.debug_notifier_delays",
							"Test only: rounds this database's notifier delayed to coalesce commits.",
							NULL,
							&el_debug_notifier_delays,
							0, 0, INT_MAX,
							PGC_INTERNAL,
							GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							NULL, NULL, el_show_notifier_delays);
	DefineCustomIntVariable("eventlog.debug_notifier_clock_offset",
							"Test only: moves the wall clock as the notifier reads it by this much.",
							NULL,
							&el_debug_notifier_clock_offset_ms,
							0, -86400000, 86400000,
							PGC_SIGHUP,
							GUC_UNIT_MS | GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
#endif
}

/* The channel of "topic" into "channel" (NAMEDATALEN bytes). */
void
el_channel_name(const char *topic, char *channel)
{
	size_t		len = strlen(topic);

	if (len <= NAMEDATALEN - 1 - strlen(EL_CHANNEL_PREFIX))
		snprintf(channel, NAMEDATALEN, EL_CHANNEL_PREFIX "%s", topic);
	else
	{
		char		hex[33];
		const char *errstr = NULL;

		if (!el_md5_hex(topic, len, hex, &errstr))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not compute the channel name of topic \"%s\": %s",
							topic, errstr ? errstr : "out of memory")));
		snprintf(channel, NAMEDATALEN, EL_CHANNEL_PREFIX "md5:%s", hex);
	}
}

/*
 * eventlog.channel(topic text) -> text: the channel LISTENers of the topic
 * use.  It depends on the name only, so one can LISTEN before the topic
 * exists (and across a drop and re-create).
 */
Datum
el_channel(PG_FUNCTION_ARGS)
{
	char	   *topic = el_text_arg(fcinfo, 0, "topic");
	char		channel[NAMEDATALEN];

	el_check_topic_name(topic, strlen(topic));
	el_channel_name(topic, channel);
	PG_RETURN_TEXT_P(cstring_to_text(channel));
}

/* ------------------------------------------------------------------------
 * A producer's side: wake the notifier
 * ------------------------------------------------------------------------ */

static ElDbWorker *el_producer_entry = NULL;	/* this backend's database's */

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
 * The launcher's side: keep a notifier running where it is wanted
 * ------------------------------------------------------------------------ */

/* Launcher-local: the handle of each registry entry's notifier. */
static BackgroundWorkerHandle **el_notifier_handles = NULL;

/*
 * Start the notifier of registry entry i if it should run and does not (the
 * launcher calls this for every entry, each time it looks at them).
 */
void
el_supervise_notifier(int i, TimestampTz now)
{
	ElDbWorker *db = &el_registry->dbs[i];
	Oid			dbid;
	bool		start = false;

	if (el_notifier_handles == NULL)
		el_notifier_handles = MemoryContextAllocZero(TopMemoryContext,
													 sizeof(BackgroundWorkerHandle *) * el_max_databases);
	if (!el_child_stopped(&el_notifier_handles[i], &db->notifier_pid, &db->notifier_latch))
		return;

	SpinLockAcquire(&el_registry->mutex);
	dbid = db->dbid;
	if (el_notifier_needed() && dbid != InvalidOid && db->wanted && db->installed &&
		!db->dropping && db->paused == 0 && db->notifier_pid == 0 &&
		db->notifier_next_start <= now)
	{
		start = true;
		db->notifier_next_start = TimestampTzPlusMilliseconds(now, EL_WORKER_RESTART_MS);
	}
	SpinLockRelease(&el_registry->mutex);
	if (start)
	{
		BackgroundWorkerHandle *handle;

		if (el_start_worker(i, dbid, true, &handle))
			el_notifier_handles[i] = handle;
	}
}

/* ------------------------------------------------------------------------
 * eventlog.maintenance's side
 * ------------------------------------------------------------------------ */

/* Why the notifier of "db" runs or not, for eventlog.maintenance. */
const char *
el_notifier_status(const ElDbWorker *db, bool launcher)
{
	if (db->notifier_pid != 0)
		return "running";
	if (!el_notifier_needed())
		return "off (eventlog.notify and eventlog.publish_stable_offsets)";
	if (db->dropping || db->paused > 0)
		return EL_STATUS_AWAY;
	if (db->notifier_no_slot)
		return EL_STATUS_NO_SLOT;
	if (!launcher)
		return "not running: the pg_eventlog launcher is not running";
	if (!db->installed)
		return "waiting for the maintenance worker";
	return "starting";
}
