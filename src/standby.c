/*-------------------------------------------------------------------------
 *
 * standby.c
 *	  Reads on hot standbys: the primary's notifier publishes each
 *	  partition's last stable offset in eventlog.published_offsets, and a
 *	  reader on a standby serves records up to the published offset, never
 *	  past it (docs/design.md, "Reads on hot standbys").
 *
 * Why a published offset is safe to read up to on a standby: the notifier
 * computes it on the primary (el_take_announcement: the lowest offset in
 * flight, or the high watermark), so every offset below it belonged to a
 * transaction that had ended, its commit record already in WAL.  The
 * publishing transaction starts after that, so its commit record comes
 * later in WAL.  A standby replays commits in WAL order, so a standby
 * snapshot that sees the publication sees each of those commits too; the
 * reader reads the publication first and scans with a snapshot taken after
 * (as on the primary, read.c), which is newer still.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#if PG_VERSION_NUM >= 150000
#include "access/xlogrecovery.h"
#endif
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "shmem.h"
#include "standby.h"

/* Columns of eventlog.published_offsets. */
#define EL_PUB_STABLE		3
#define EL_PUB_SEGMENT		4

/*
 * A round's publication (el_publish_stable_offsets); $1..$4 are arrays.
 * It returns how many rows it wrote, and how many of the round's
 * partitions it skipped because another transaction holds their catalog
 * row (SKIP LOCKED: a drop_topic in progress, mostly): those are put off,
 * not forgotten, since the round has already taken their announcements.
 */
#define EL_PUBLISH_SQL \
	"WITH i AS (SELECT * FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)," \
	"                                    pg_catalog.unnest($3), pg_catalog.unnest($4))" \
	"                AS i(topic_id, partition, stable, segno))," \
	" j AS (SELECT p.topic_id, p.partition, i.stable, i.segno" \
	"         FROM i JOIN " EL_SCHEMA_NAME ".partition_catalog p" \
	"           ON p.topic_id OPERATOR(pg_catalog.=) i.topic_id" \
	"          AND p.partition OPERATOR(pg_catalog.=) i.partition" \
	"          FOR KEY SHARE OF p SKIP LOCKED)," \
	" w AS (INSERT INTO " EL_SCHEMA_NAME ".published_offsets AS o" \
	"              (topic_id, partition, stable_offset, active_segment, published_at)" \
	"       SELECT j.topic_id, j.partition, j.stable, j.segno, pg_catalog.clock_timestamp() FROM j" \
	"       ON CONFLICT (topic_id, partition) DO UPDATE" \
	"          SET stable_offset = excluded.stable_offset," \
	"              active_segment = excluded.active_segment," \
	"              published_at = excluded.published_at" \
	"        WHERE o.stable_offset OPERATOR(pg_catalog.<) excluded.stable_offset" \
	"       RETURNING 1)" \
	" SELECT (SELECT pg_catalog.count(*) FROM w)," \
	"        (SELECT pg_catalog.count(*) FROM i JOIN " EL_SCHEMA_NAME ".partition_catalog p" \
	"            ON p.topic_id OPERATOR(pg_catalog.=) i.topic_id" \
	"           AND p.partition OPERATOR(pg_catalog.=) i.partition)" \
	"        OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM j)"

/* Its plan, kept for the notifier's life. */
static SPIPlanPtr el_publish_plan = NULL;

/* Whether this database's extension has eventlog.published_offsets. */
static bool
el_publication_installed(void)
{
	Oid			nsp = get_namespace_oid(EL_SCHEMA_NAME, true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("published_offsets", nsp));
}

/*
 * After a publishing transaction's commit: if it changed a publication, the
 * record that wakes standbys' long polls on topics[0..n) (all if n is 0)
 * when replayed, which comes after the commit in WAL (standby_wake.c); then
 * flush both.
 */
static void
el_publish_flush(bool changed, const int32 *topics, int n)
{
	XLogRecPtr	end = XactLastCommitEnd;

	if (changed)
	{
		XLogRecPtr	wake = el_standby_wake_log(topics, n);

		if (!XLogRecPtrIsInvalid(wake))
			end = wake;
	}
	if (!XLogRecPtrIsInvalid(end))
		XLogFlush(end);
}

/*
 * Publish items[0..n) (the notifier's round, notifier.c): one statement in
 * a transaction of its own, whose commit record is flushed before this
 * returns, so that the standbys get it now rather than when the WAL writer
 * gets round to an asynchronous commit (the notifier commits with
 * synchronous_commit off).  It does not wait for synchronous standbys: it
 * is no user's commit.
 *
 * A partition dropped meanwhile is skipped, and so is one whose catalog
 * row another transaction holds (SKIP LOCKED: a drop_topic in progress):
 * the notifier never waits for a drop_topic.  A partition skipped so puts
 * the publication off (a catch-up publishes it if it is still there).  A
 * published offset never goes back (the WHERE of the update).
 */
/*
 * Set when a publication was put off (el_publication_lock), skipped a
 * partition or failed: the notifier publishes every partition
 * (el_publish_catch_up) every second until one commits with nothing
 * skipped (notifier.c), so that records committed before it reach standbys
 * even on a primary where nothing else commits; rounds go on publishing
 * their own partitions meanwhile.  A catch-up while pg_restore fills a
 * database fails (partition.c refuses to recover the counter of a
 * partition still being restored) and is retried.  Cleared once a
 * catch-up commits.
 */
static bool el_publish_put_off = false;

/*
 * Takes the locks a publication needs, without waiting: its statements
 * write published_offsets and read topic_catalog and partition_catalog
 * (FOR KEY SHARE).  A statement takes them in its own order, and DROP
 * EXTENSION in another, so a publication that waited for one of them while
 * holding another could deadlock with a DROP EXTENSION (seen in
 * regress/drop_extension: the notifier held published_offsets and waited
 * for partition_catalog, which the DROP held while it waited for
 * published_offsets).  Holding all three first, the statement waits for
 * none of them.  False if one is not free now (a DROP EXTENSION or another
 * exclusive lock is in the way): the publication is put off.
 */
/*
 * A publication waits at most EL_PUBLISH_LOCK_TIMEOUT_MS for any lock,
 * then fails (and is put off, el_publish_round): well before the deadlock
 * detector runs (deadlock_timeout, 1 s by default), so a DROP EXTENSION
 * that took some relation before the extension itself (its event trigger
 * drops the segment tables first) never deadlocks with it, whatever the
 * order.  For the publication's transaction only.
 */
#define EL_PUBLISH_LOCK_TIMEOUT_MS "100"

static void
el_publication_lock_timeout(void)
{
	(void) set_config_option("lock_timeout", EL_PUBLISH_LOCK_TIMEOUT_MS,
							 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
							 true, 0, false);
}

static bool
el_publication_lock(void)
{
	static const char *const names[] = {"published_offsets", "topic_catalog", "partition_catalog"};
	static const LOCKMODE modes[] = {RowExclusiveLock, AccessShareLock, RowShareLock};
	Oid			nsp = get_namespace_oid(EL_SCHEMA_NAME, true);
	Oid			ext = get_extension_oid("pg_eventlog", true);

	/*
	 * First the extension itself: DROP EXTENSION locks it before any of its
	 * objects, so while this is held it cannot have begun, and whatever
	 * else the statements read (segment_catalog, through the functions the
	 * catch-up calls) is not being dropped under them.
	 */
	el_publication_lock_timeout();
	if (!OidIsValid(nsp) || !OidIsValid(ext) ||
		!ConditionalLockDatabaseObject(ExtensionRelationId, ext, 0, AccessShareLock))
	{
		el_publish_put_off = true;
		return false;
	}
	for (int i = 0; i < lengthof(names); i++)
	{
		Oid			relid = get_relname_relid(names[i], nsp);

		if (!OidIsValid(relid) || !ConditionalLockRelationOid(relid, modes[i]))
		{
			el_publish_put_off = true;
			return false;
		}
	}
	return true;
}

void
el_publish_stable_offsets(ElNotifyItem *items, int n)
{
	Datum	   *topics = palloc(sizeof(Datum) * n);
	Datum	   *parts = palloc(sizeof(Datum) * n);
	Datum	   *stables = palloc(sizeof(Datum) * n);
	Datum	   *segnos = palloc(sizeof(Datum) * n);
	int32	   *topic_ids = palloc(sizeof(int32) * n);
	int			ntopics = 0;
	Oid			argtypes[4] = {INT4ARRAYOID, INT4ARRAYOID, INT8ARRAYOID, INT4ARRAYOID};
	Datum		args[4];
	int			ret;
	uint64		published;
	int64		skipped;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (i == 0 || items[i].topic_id != items[i - 1].topic_id)
			topic_ids[ntopics++] = items[i].topic_id;
		topics[i] = Int32GetDatum(items[i].topic_id);
		parts[i] = Int32GetDatum(items[i].partition);
		stables[i] = Int64GetDatum(items[i].stable);
		segnos[i] = Int32GetDatum(items[i].active_segno);
	}
	args[0] = PointerGetDatum(construct_array(topics, n, INT4OID, 4, true, TYPALIGN_INT));
	args[1] = PointerGetDatum(construct_array(parts, n, INT4OID, 4, true, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(stables, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[3] = PointerGetDatum(construct_array(segnos, n, INT4OID, 4, true, TYPALIGN_INT));

	/*
	 * A publication put off is the notifier's to retry (every second,
	 * el_publish_catch_up), apart from this round's: a catch-up that cannot
	 * finish (a drop_topic holding a partition) must not hold up every other
	 * partition's publication.
	 */
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (!el_publication_installed() || !el_publication_lock())
	{
		/* An extension older than 0.3.0 here (nothing to publish to), or put off. */
		CommitTransactionCommand();
		return;
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	/*
	 * Planned once per notifier: a round at 1,000 commits a second would
	 * otherwise parse and plan it a thousand times a second.  The plan
	 * cache replans it after DDL on the tables it names.
	 */
	if (el_publish_plan == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(EL_PUBLISH_SQL, 4, argtypes);

		if (plan == NULL)
			elog(ERROR, "could not prepare the publication of stable offsets: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "could not keep the plan of the publication of stable offsets");
		el_publish_plan = plan;
	}
	ret = SPI_execute_plan(el_publish_plan, args, NULL, false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not publish stable offsets: %s", SPI_result_code_string(ret));
	{
		bool		isnull;

		published = (uint64) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
														 SPI_tuptable->tupdesc, 1, &isnull));
		skipped = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	/* Partitions skipped: every partition, on the next try. */
	if (skipped > 0)
		el_publish_put_off = true;
	el_publish_flush(published > 0, topic_ids, ntopics);
}

/*
 * At the notifier's start: publish every partition whose last stable offset
 * is past the published one.  Rounds publish only what they announce, and
 * records committed before a restart (or a crash) of the primary are
 * announced by no round; without this, standbys would not serve them until
 * the partition's next commit.  The stable offsets are computed by
 * eventlog.last_stable_offset inside this transaction, so its commit comes
 * after the commits of the records below them, as for a round; the active
 * segment is read after them, so it is at least as new as theirs.  Writes
 * nothing for a partition whose publication is current.
 */
void
el_publish_catch_up(void)
{
	int			ret;
	uint64		published;
	int64		skipped;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (!el_publication_installed())
	{
		el_publish_put_off = false;
		CommitTransactionCommand();
		return;
	}
	if (!el_publication_lock())
	{
		CommitTransactionCommand();
		return;
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	/*
	 * A partition whose catalog row another transaction holds (a drop_topic
	 * in progress) is skipped, as by a round, and the catch-up stays
	 * pending for it: waiting for it would fail the whole catch-up at the
	 * lock timeout, every partition with it.
	 */
	ret = SPI_execute(
		"WITH x AS (SELECT t.topic_id, p.partition, t.name"
		"             FROM " EL_SCHEMA_NAME ".topic_catalog t"
		"             JOIN " EL_SCHEMA_NAME ".partition_catalog p USING (topic_id)"
		"              FOR KEY SHARE OF p SKIP LOCKED),"
		" s AS (SELECT x.topic_id, x.partition, x.name,"
		"              " EL_SCHEMA_NAME ".last_stable_offset(x.name, x.partition) AS stable"
		"         FROM x OFFSET 0),"
		" w AS (INSERT INTO " EL_SCHEMA_NAME ".published_offsets AS o"
		"              (topic_id, partition, stable_offset, active_segment, published_at)"
		"       SELECT s.topic_id, s.partition, s.stable,"
		"              (" EL_SCHEMA_NAME "._partition_routing(s.name, s.partition)).active_segment,"
		"              pg_catalog.clock_timestamp()"
		"         FROM s"
		"        WHERE NOT EXISTS (SELECT FROM " EL_SCHEMA_NAME ".published_offsets c"
		"                           WHERE c.topic_id OPERATOR(pg_catalog.=) s.topic_id"
		"                             AND c.partition OPERATOR(pg_catalog.=) s.partition"
		"                             AND c.stable_offset OPERATOR(pg_catalog.>=) s.stable)"
		"       ON CONFLICT (topic_id, partition) DO UPDATE"
		"          SET stable_offset = excluded.stable_offset,"
		"              active_segment = excluded.active_segment,"
		"              published_at = excluded.published_at"
		"        WHERE o.stable_offset OPERATOR(pg_catalog.<) excluded.stable_offset"
		"       RETURNING 1)"
		" SELECT (SELECT pg_catalog.count(*) FROM w),"
		"        (SELECT pg_catalog.count(*) FROM " EL_SCHEMA_NAME ".partition_catalog)"
		"        OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM x)",
		false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not publish stable offsets: %s", SPI_result_code_string(ret));
	{
		bool		isnull;

		published = (uint64) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
														 SPI_tuptable->tupdesc, 1, &isnull));
		skipped = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	/* Only now: a catch-up that failed or skipped leaves the retry pending. */
	el_publish_put_off = skipped > 0;
	el_publish_flush(published > 0, NULL, 0);
}

bool
el_publish_pending(void)
{
	return el_publish_put_off;
}

void
el_publish_set_pending(void)
{
	el_publish_put_off = true;
}

/*
 * A reader's offsets on a hot standby: the published stable offset of the
 * partition (at least its log start offset: nothing below that is read),
 * read with a fresh snapshot, which the caller's scan snapshot follows.
 * No publication yet: nothing is readable.  The high watermark is the
 * stable offset (the standby knows no other), the holder unknown.
 */
void
el_standby_stable_offset(ElTopic *topic, int32 partition, ElStableOffset *out)
{
	Oid			nsp = get_namespace_oid(EL_SCHEMA_NAME, false);
	Oid			relid = get_relname_relid("published_offsets", nsp);
	Oid			indexid = get_relname_relid("published_offsets_pkey", nsp);
	int64		log_start = topic->parts[partition].log_start_offset;
	Snapshot	snapshot;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData keys[2];
	HeapTuple	tuple;

	out->stable = log_start;
	out->holder_pid = 0;
	out->commit_lsn = InvalidXLogRecPtr;
	out->active_segno = -1;
	if (!OidIsValid(relid) || !OidIsValid(indexid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot read an event log on a hot standby before its primary publishes stable offsets"),
				 errdetail("The extension on the primary predates version 0.3.0."),
				 errhint("Update the extension on the primary with ALTER EXTENSION pg_eventlog UPDATE.")));

	snapshot = RegisterSnapshot(GetLatestSnapshot());
	rel = table_open(relid, AccessShareLock);
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(topic->topic_id));
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(partition));
	scan = systable_beginscan(rel, indexid, true, snapshot, 2, keys);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		int64		published;

		published = DatumGetInt64(heap_getattr(tuple, EL_PUB_STABLE,
											   RelationGetDescr(rel), &isnull));
		out->active_segno = DatumGetInt32(heap_getattr(tuple, EL_PUB_SEGMENT,
													   RelationGetDescr(rel), &isnull));
		out->stable = Max(published, log_start);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	UnregisterSnapshot(snapshot);
	out->high_watermark = out->stable;
}

/* How far this standby has replayed: a long poll looks again only past it. */
XLogRecPtr
el_standby_replayed(void)
{
	return GetXLogReplayRecPtr(NULL);
}
