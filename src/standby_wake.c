/*-------------------------------------------------------------------------
 *
 * standby_wake.c
 *	  Waking long polls on hot standbys from WAL replay: a custom WAL
 *	  resource manager (PostgreSQL 15 and later) whose one record follows
 *	  each publication of stable offsets (standby.c) and whose redo
 *	  broadcasts the published topics' wake-up condition variables.
 *
 * On a standby nothing commits: the producers' broadcasts that end long
 * polls on the primary (inflight.c) never happen there, and PostgreSQL
 * offers no hook in replay.  A custom resource manager is the one piece of
 * extension code that replay runs.  The primary's notifier writes the record
 * right after its publishing transaction committed, so a standby replays it
 * after that commit, when a new snapshot sees the publication; the redo
 * (in the startup process, which inherits the shared memory and this
 * library from the postmaster) broadcasts, and every long poll that
 * prepared to sleep before it wakes and finds the new stable offset.
 *
 * The price: WAL holding such a record can only be replayed by a server
 * that registered the same resource manager, i.e. that preloads the
 * library with the same eventlog.standby_wakeup_rmgr_id (a standby, crash
 * recovery of the primary, point-in-time recovery).  Setting it to 0
 * registers nothing and writes nothing; standbys then look at their replay
 * position every EL_STANDBY_POLL_MS instead (docs/operations.md).
 * PostgreSQL 14 has no custom resource managers: always that fallback.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xlog.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#if PG_VERSION_NUM >= 150000
#include "access/xlog_internal.h"
#include "access/rmgr.h"
#endif
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "shmem.h"
#include "standby.h"

/* The record's info bits (the high nibble is ours). */
#define XLOG_EL_PUBLISHED	0x00

/*
 * The record: the database and the topics whose publication moved (none:
 * all of the database's, as after the notifier's catch-up).
 */
typedef struct xl_el_published
{
	Oid			dbid;
	int32		ntopics;
	int32		topic_ids[FLEXIBLE_ARRAY_MEMBER];
} xl_el_published;

#define SizeOfElPublished	offsetof(xl_el_published, topic_ids)

/* eventlog.standby_wakeup_rmgr_id: 0, or the custom resource manager ID. */
#if PG_VERSION_NUM >= 150000
static int	el_wakeup_rmgr_id = RM_EXPERIMENTAL_ID;
#else
static int	el_wakeup_rmgr_id = 0;
#endif

/* Whether this server registered the resource manager (at its start). */
static bool el_wakeup_registered = false;

/*
 * Test only: how long a long poll on a standby with the wake-up records
 * sleeps before it looks at replay again (EL_STANDBY_RECHECK_MS).  The
 * tests make it an hour, so that only replay can wake it.
 */
#ifdef EL_TEST_HOOKS
static int	el_debug_standby_recheck_ms = EL_STANDBY_RECHECK_MS;
#endif

#if PG_VERSION_NUM >= 150000

static void
el_wake_redo(XLogReaderState *record)
{
	xl_el_published *xlrec = (xl_el_published *) XLogRecGetData(record);
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info != XLOG_EL_PUBLISHED ||
		XLogRecGetDataLen(record) < SizeOfElPublished ||
		xlrec->ntopics < 0 ||
		XLogRecGetDataLen(record) != SizeOfElPublished + sizeof(int32) * xlrec->ntopics)
		elog(PANIC, "pg_eventlog: unknown or malformed WAL record (info %u)", info);
	el_wake_replayed(xlrec->dbid, xlrec->topic_ids, xlrec->ntopics);
}

static void
el_wake_desc(StringInfo buf, XLogReaderState *record)
{
	xl_el_published *xlrec = (xl_el_published *) XLogRecGetData(record);

	if (XLogRecGetDataLen(record) < SizeOfElPublished)
		return;
	appendStringInfo(buf, "db %u; topics", xlrec->dbid);
	if (xlrec->ntopics == 0)
		appendStringInfoString(buf, " all");
	for (int i = 0; i < xlrec->ntopics &&
		 SizeOfElPublished + sizeof(int32) * (i + 1) <= XLogRecGetDataLen(record); i++)
		appendStringInfo(buf, " %d", xlrec->topic_ids[i]);
}

static const char *
el_wake_identify(uint8 info)
{
	if ((info & ~XLR_INFO_MASK) == XLOG_EL_PUBLISHED)
		return "PUBLISHED";
	return NULL;
}

static const RmgrData el_wake_rmgr = {
	.rm_name = "pg_eventlog",
	.rm_redo = el_wake_redo,
	.rm_desc = el_wake_desc,
	.rm_identify = el_wake_identify,
	/* No logical decoding callback: decoding skips the record. */
};

#endif							/* PG_VERSION_NUM >= 150000 */

static bool
el_check_rmgr_id(int *newval, void **extra, GucSource source)
{
	if (*newval == 0)
		return true;
#if PG_VERSION_NUM >= 150000
	if (*newval < RM_MIN_CUSTOM_ID || *newval > RM_MAX_CUSTOM_ID)
	{
		GUC_check_errdetail("A custom WAL resource manager ID is between %d and %d.",
							RM_MIN_CUSTOM_ID, RM_MAX_CUSTOM_ID);
		return false;
	}
	return true;
#else
	GUC_check_errdetail("PostgreSQL 14 has no custom WAL resource managers.");
	return false;
#endif
}

/*
 * The setting, and the resource manager's registration when the library
 * is preloaded (the only time PostgreSQL allows it).
 */
void
el_standby_wake_init(void)
{
	/*
	 * A PGC_POSTMASTER variable can only be defined at server start: a
	 * backend that loads the library later (not preloaded) would get a
	 * FATAL.  It then writes no records (el_wakeup_registered stays false).
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomIntVariable("eventlog.standby_wakeup_rmgr_id",
								"Custom WAL resource manager ID of the records that wake long polls on hot standbys (0: none).",
								"Every server that replays this server's WAL needs the same value; with 0, long polls on standbys look at replay every 2 ms.",
								&el_wakeup_rmgr_id,
#if PG_VERSION_NUM >= 150000
								RM_EXPERIMENTAL_ID,
#else
								0,
#endif
								0, 255,
								PGC_POSTMASTER, 0,
								el_check_rmgr_id, NULL, NULL);
#ifdef EL_TEST_HOOKS
	DefineCustomIntVariable("eventlog.debug_standby_recheck_ms",
							"Test only: longest sleep of a long poll on a hot standby that replay wakes.",
							NULL,
							&el_debug_standby_recheck_ms,
							EL_STANDBY_RECHECK_MS, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
#endif
#if PG_VERSION_NUM >= 150000
	if (process_shared_preload_libraries_in_progress && el_wakeup_rmgr_id != 0)
	{
		RegisterCustomRmgr((RmgrId) el_wakeup_rmgr_id, (RmgrData *) &el_wake_rmgr);
		el_wakeup_registered = true;
	}
#endif
}

/*
 * On the primary, after the commit of a publication of topics
 * topic_ids[0..n) of this database (n = 0: all of them): write the record
 * that wakes standbys' long polls when replayed.  Returns its end, to be
 * flushed, or InvalidXLogRecPtr when no record is written.
 */
XLogRecPtr
el_standby_wake_log(const int32 *topic_ids, int n)
{
#if PG_VERSION_NUM >= 150000
	xl_el_published xlrec;

	if (!el_wakeup_registered || !XLogInsertAllowed())
		return InvalidXLogRecPtr;
	xlrec.dbid = MyDatabaseId;
	xlrec.ntopics = n;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfElPublished);
	if (n > 0)
		XLogRegisterData((char *) topic_ids, sizeof(int32) * n);
	return XLogInsert((RmgrId) el_wakeup_rmgr_id, XLOG_EL_PUBLISHED);
#else
	return InvalidXLogRecPtr;
#endif
}

/*
 * How long a long poll on a standby sleeps before it looks at replay
 * again, at most.  With the wake-up records, replay wakes it: the timeout
 * only covers what no record announces (a primary configured without
 * them, a promotion, a topic dropped); without, it polls.
 */
long
el_standby_sleep_ms(long remaining)
{
	long		recheck = EL_STANDBY_RECHECK_MS;

#ifdef EL_TEST_HOOKS
	recheck = el_debug_standby_recheck_ms;
#endif
	return Min(remaining, el_wakeup_registered ? recheck : EL_STANDBY_POLL_MS);
}
