/*-------------------------------------------------------------------------
 *
 * group.c
 *	  Consumer groups, transactional style: eventlog.poll without a member
 *	  (the C body of eventlog._poll, behind the gate of src/acl.c), and what
 *	  the member style (group_member.c) shares with it: arguments, the
 *	  group's locks, the lost-records check, reading a partition for a
 *	  group, the long poll.
 *
 * A transactional poll takes partitions with transaction-level locks
 * (pg_eventlog's own advisory locks, locks.c), so another poll of the same
 * group skips them without waiting, reads from the group's positions and
 * moves them in the caller's transaction.  Per call it costs, whatever the
 * partition count: one index scan of the group's positions, one look at
 * each partition's stable offset in shared memory (no catalog access), and
 * for each partition it takes, a probe of its position under the lock and
 * the read; then the new positions are written (in place, or with one
 * statement for all).  Partitions with nothing past the group's position
 * are never locked nor read.
 *
 * Until 0.3.0 this was PL/pgSQL (a statement per partition, a row copied
 * through PL/pgSQL per record, about 0.3-0.4x a hand-written consumer of a
 * plain table).  Its semantics are kept to the letter, errors included; the
 * comments say where a step's snapshot or lock matters.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "acl.h"
#include "group.h"
#include "locks.h"

PG_FUNCTION_INFO_V1(el_group_poll);
PG_FUNCTION_INFO_V1(el_group_poll_binary);
PG_FUNCTION_INFO_V1(el_group_lock_key_sql);

/*
 * What eventlog._authorize(topic, 'consume') did first in the PL/pgSQL
 * bodies: the topic's id, if the gate's caller may consume from it.
 */
int32
el_group_authorize(FunctionCallInfo fcinfo, text **name)
{
	ElTopic    *topic;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topic name must not be null")));
	*name = PG_GETARG_TEXT_PP(0);
	topic = el_topic_lookup(*name);
	el_require_topic_privilege(topic, el_caller(), EL_PRIV_CONSUME);
	return topic->topic_id;
}

/* Whether a name is 1 to 200 characters; if not, *quoted shows it. */
static bool
el_name_ok(text *t, char **quoted)
{
	const char *s = VARDATA_ANY(t);
	int			len = VARSIZE_ANY_EXHDR(t);

	if (len > 0 && pg_mbstrlen_with_len(s, len) <= EL_GROUP_NAME_MAX)
		return true;
	/* As left(name, 210) showed it. */
	*quoted = pnstrdup(s, pg_mbcharcliplen(s, len, EL_GROUP_NAME_MAX + 10));
	return false;
}

/* The group_name argument: 22004 if NULL, 22023 if not 1 to 200 characters. */
char *
el_group_name_arg(FunctionCallInfo fcinfo, int argno)
{
	char	   *shown;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("group_name must not be null")));
	if (!el_name_ok(PG_GETARG_TEXT_PP(argno), &shown))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid group name \"%s\"", shown),
				 errdetail("A group name is 1 to 200 characters.")));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/* A member name (not NULL): 22023 if not 1 to 200 characters. */
void
el_check_member_name(text *member)
{
	char	   *shown;

	if (!el_name_ok(member, &shown))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid member name \"%s\"", shown),
				 errdetail("A member name is 1 to 200 characters.")));
}

/* Compare two intervals as SQL does. */
int
el_interval_cmp(Interval *a, Interval *b)
{
	return DatumGetInt32(DirectFunctionCall2(interval_cmp,
											 IntervalPGetDatum(a),
											 IntervalPGetDatum(b)));
}

/* An interval in milliseconds, as eventlog._await_records counts it. */
long
el_interval_ms(Interval *iv)
{
	double		ms = (iv->time / 1000.0) +
		(iv->day + iv->month * (double) DAYS_PER_MONTH) * (double) (USECS_PER_DAY / 1000);

	return ms <= 0 ? 0 : (long) ms;
}

/*
 * The hash of a lock's name: hashtextextended() (of a deterministic
 * collation, which a database's default always is) with seed 7, which is
 * what eventlog._group_lock_key was in SQL before 0.3.0.
 */
static int64
el_lock_name_hash(char *name)
{
	int64		key = DatumGetInt64(hash_any_extended((unsigned char *) name,
													  strlen(name), 7));

	pfree(name);
	return key;
}

/*
 * The lock key of (topic, group, partition), partition -1 for the group's
 * membership: 64 bits of hash of 'pg_eventlog/<topic>/<partition>/<group>'.
 * The lock functions of locks.c that seek, delete_group and leave call,
 * and eventlog._group_lock_key (which shows the key to tests), use it.
 */
int64
el_group_lock_key(int32 topic_id, const char *group, int32 partition)
{
	return el_lock_name_hash(psprintf("pg_eventlog/%d/%d/%s", topic_id,
									  partition, group));
}

/*
 * eventlog._group_lock_key(topic_id integer, group_name text, partition
 * integer) -> bigint.  NULLs count as empty, as format() showed them.
 */
Datum
el_group_lock_key_sql(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_INT64(el_lock_name_hash(psprintf("pg_eventlog/%s/%s/%s",
												   PG_ARGISNULL(0) ? "" : psprintf("%d", PG_GETARG_INT32(0)),
												   PG_ARGISNULL(2) ? "" : psprintf("%d", PG_GETARG_INT32(2)),
												   PG_ARGISNULL(1) ? "" : text_to_cstring(PG_GETARG_TEXT_PP(1)))));
	PG_RETURN_INT64(el_group_lock_key(PG_GETARG_INT32(0),
									  text_to_cstring(PG_GETARG_TEXT_PP(1)),
									  PG_GETARG_INT32(2)));
}

/*
 * The group's membership lock: shared for transactional polls and member
 * commits, exclusive for members' polls and leave; delete_group tries it
 * exclusively.  Held to the end of the transaction.
 */
void
el_group_lock(int32 topic_id, const char *group, bool shared)
{
	LOCKTAG		tag;

	el_locktag(&tag, EL_LOCK_GROUP, el_group_lock_key(topic_id, group, -1));
	(void) LockAcquire(&tag, shared ? ShareLock : ExclusiveLock, false, false);
}

/* Take a partition for the group if no other transaction holds it. */
static bool
el_group_try_partition(int32 topic_id, const char *group, int32 partition)
{
	LOCKTAG		tag;

	el_locktag(&tag, EL_LOCK_GROUP, el_group_lock_key(topic_id, group, partition));
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Take a group's membership lock for a poll, refusing to go on with a
 * group that delete_group removed while this waited: the poll would write
 * positions for the partitions it reads and bring the group back with
 * those only (the others starting over).  "Existed" is judged in the
 * caller's snapshot, so a REPEATABLE READ poll whose snapshot still shows
 * the deleted group is refused too; "exists now" with a snapshot taken now.
 * A group deleted before the poll began is simply new to it.
 */
void
el_group_lock_checked(int32 topic_id, const char *topic, const char *group,
					  bool shared)
{
	bool		existed;

	el_group_statement_snapshot_push();
	existed = el_group_exists(topic_id, group, GetActiveSnapshot());
	PopActiveSnapshot();
	el_group_lock(topic_id, group, shared);
	if (existed && !el_group_exists_latest(topic_id, group))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("group \"%s\" of topic \"%s\" was deleted during this poll",
						group, topic),
				 errdetail("eventlog.delete_group committed while this poll waited for the group, or after this transaction's snapshot was taken."),
				 errhint("Retry the transaction: the group then starts afresh, as a new group.")));
}

/* Whether a group exists as committed now (or written by this transaction). */
bool
el_group_exists_latest(int32 topic_id, const char *group)
{
	Snapshot	now = RegisterSnapshot(GetLatestSnapshot());
	bool		exists = el_group_exists(topic_id, group, now);

	UnregisterSnapshot(now);
	return exists;
}

/*
 * The topic of a poll, looked up again (a cached entry lives until the next
 * lookup): the one the call started with, or 42704.
 */
ElTopic *
el_group_topic(text *name, int32 topic_id)
{
	ElTopic    *topic = el_topic_lookup(name);

	if (topic->topic_id != topic_id)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("topic \"%s\" was dropped while being read", topic->name),
				 errdetail("Another transaction dropped it and created it again under the same name.")));
	return topic;
}

/*
 * Step 1 of a read (read.c) for a partition of the poll's topic, with the
 * checks eventlog.read made: the partition exists; and no recovery, since
 * a poll writes the group's positions.
 */
void
el_group_point(text *name, int32 topic_id, int32 partition, ElReadPoint *point)
{
	ElTopic    *topic = el_group_topic(name, topic_id);

	el_check_partition(topic, partition);
	el_refuse_in_recovery(EL_USE_GROUP);
	el_point_at(name, topic, partition, point);
}

/*
 * Where a group reads a partition from: its position, unless retention
 * removed records below the log start offset that the group had not read;
 * then the automatic reset, or the lost-records error (never a silent skip).
 */
int64
el_group_checked_position(ElReadPoint *point, const char *group, int64 pos,
						  ElGroupFrom auto_reset)
{
	if (pos >= point->log_start)
		return pos;
	if (auto_reset == EL_FROM_EARLIEST)
		return point->log_start;
	if (auto_reset == EL_FROM_LATEST)
		return point->stable;
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("group \"%s\" has lost records in partition %d of topic \"%s\"",
					group, point->partition, point->topic->name),
			 errdetail("Its position is " INT64_FORMAT ", but retention removed the records below offset " INT64_FORMAT ".",
					   pos, point->log_start),
			 errhint("Move the group on with eventlog.seek(), or create it with auto_reset => 'earliest'.")));
	return pos;					/* keep the compiler quiet */
}

/*
 * Read a partition for a group: up to *remaining records from "pos" into
 * the result, *remaining decreased by what was returned.  Returns the new
 * position: past the last record returned, or, when the partition was read
 * to its end, the stable offset (past trailing aborted offsets: everything
 * below it had ended before the scan's snapshot was taken, read.c).
 */
int64
el_group_read(ElReadPoint *point, int64 pos, int32 *remaining,
			  Tuplestorestate *store, TupleDesc tupdesc)
{
	int64		next;
	int32		got;

	if (pos < point->log_start || pos > point->high_watermark)
		el_offset_out_of_range(point, pos);
	got = el_read_into(point, pos, *remaining, store, tupdesc, &next);
	if (got < *remaining)
		next = Max(Max(pos, next), point->stable);
	*remaining -= got;
	return next;
}

/*
 * The long poll: eventlog._await_records over partitions[i] from
 * positions[i], for up to wait_ms.  True as soon as one has a readable
 * record (or lost records), false when the wait ended first.
 */
bool
el_group_await(text *topic, int n, const int32 *partitions,
			   const int64 *positions, long wait_ms)
{
	Datum	   *p = palloc(sizeof(Datum) * n);
	Datum	   *o = palloc(sizeof(Datum) * n);
	Interval   *wait = palloc0(sizeof(Interval));
	int			i;

	for (i = 0; i < n; i++)
	{
		p[i] = Int32GetDatum(partitions[i]);
		o[i] = Int64GetDatum(positions[i]);
	}
	wait->time = (int64) wait_ms * 1000;
	return DatumGetBool(DirectFunctionCall4(el_await_records,
											PointerGetDatum(topic),
											PointerGetDatum(construct_array(p, n, INT4OID, 4, true, TYPALIGN_INT)),
											PointerGetDatum(construct_array(o, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)),
											IntervalPGetDatum(wait)));
}

/*
 * eventlog._poll(topic text, group_name text, max_records integer,
 *                partitions integer, member text, session_timeout interval,
 *                wait interval) -> SETOF eventlog.record
 * eventlog._poll_binary(the same) -> SETOF eventlog.binary_record
 *
 * SECURITY DEFINER, called through el_gate: el_caller() is the role the
 * call is for.  "binary" says which of the two was called: each polls
 * topics of its format only.
 */
static Datum
el_group_poll_common(FunctionCallInfo fcinfo, bool binary)
{
	text	   *name;
	int32		topic_id = el_group_authorize(fcinfo, &name);
	char	   *topic_name = text_to_cstring(name);
	char	   *group;
	int32		max_records;
	int32		max_partitions;
	Interval   *wait = NULL;
	Interval	zero = {0};
	Interval	one_day = {0};
	TimestampTz deadline;
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	ElGroupSettings settings;
	int			n;
	bool	   *held;
	int			taken = 0;
	int32		remaining;
	int32	   *await_p;
	int64	   *await_pos;
	ElGroupMove *moves;
	MemoryContext pass_cxt;
	MemoryContext outer_cxt;

	/* The topic's format, before anything else about the call. */
	el_require_format(el_group_topic(name, topic_id), binary, EL_FORMAT_POLL);
	group = el_group_name_arg(fcinfo, 1);
	if (PG_ARGISNULL(2) || PG_GETARG_INT32(2) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_records must be at least 1")));
	max_records = PG_GETARG_INT32(2);
	if (PG_ARGISNULL(3) || PG_GETARG_INT32(3) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partitions must be at least 1"),
				 errhint("It is how many partitions one poll may take.")));
	max_partitions = PG_GETARG_INT32(3);
	one_day.day = 1;
	if (!PG_ARGISNULL(6))
	{
		wait = PG_GETARG_INTERVAL_P(6);
		if (el_interval_cmp(wait, &zero) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("wait must not be negative")));
		if (el_interval_cmp(wait, &one_day) > 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("wait must be at most 1 day")));
	}
	deadline = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
													   TimestampTzGetDatum(GetCurrentTimestamp()),
													   IntervalPGetDatum(wait ? wait : &zero)));
	store = el_materialized_srf(fcinfo, "poll", &tupdesc);

	if (!PG_ARGISNULL(4))
	{
		Interval   *session_timeout = PG_ARGISNULL(5) ? NULL : PG_GETARG_INTERVAL_P(5);

		if (wait && session_timeout && el_interval_cmp(wait, session_timeout) >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("wait must be shorter than session_timeout"),
					 errdetail("A member that waits longer than its session timeout misses its heartbeat and loses its partitions.")));
		el_group_poll_member(name, topic_id, group, PG_GETARG_TEXT_PP(4),
							 max_records, session_timeout, wait,
							 store, tupdesc);
		return (Datum) 0;
	}

	/*
	 * Shared with other transactional polls, exclusive with members' polls:
	 * a member cannot join while this transaction consumes the group, and
	 * delete_group refuses to delete it.
	 */
	el_group_lock_checked(topic_id, topic_name, group, true);
	el_group_statement_snapshot_push();
	if (el_group_has_members(topic_id, group, GetActiveSnapshot()))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("group \"%s\" of topic \"%s\" has member consumers",
						group, topic_name),
				 errhint("A group is consumed either by transactions or by members: pass member => to poll as one.")));
	el_group_settings(topic_id, group, GetActiveSnapshot(), &settings);
	PopActiveSnapshot();

	n = el_group_topic(name, topic_id)->npartitions;
	held = palloc0(sizeof(bool) * n);
	await_p = palloc(sizeof(int32) * n);
	await_pos = palloc(sizeof(int64) * n);
	moves = palloc(sizeof(ElGroupMove) * n);
	remaining = max_records;

	/*
	 * What a pass allocates (positions read, values read, the wait's
	 * arrays) goes with it: a long poll may look again every second for a
	 * day.
	 */
	pass_cxt = AllocSetContextCreate(CurrentMemoryContext,
									 "pg_eventlog poll pass",
									 ALLOCSET_DEFAULT_SIZES);
	outer_cxt = MemoryContextSwitchTo(pass_cxt);
	for (;;)
	{
		int			nawait = 0;
		int			nmoves = 0;
		bool		others_hold = false;
		int			first_p;
		ElGroupRow *rows;
		int			nrows;
		int64	   *position;
		bool	   *has_row;
		int			i;
		long		wait_ms;

		/*
		 * Every position of the group, in one scan.  Where each partition
		 * looked at must get to for a new poll to find something goes to
		 * await_p/await_pos: past the position when it was empty, past the
		 * stable offset seen when another transaction held it.
		 */
		el_group_statement_snapshot_push();
		nrows = el_group_rows(topic_id, group, GetActiveSnapshot(), &rows);
		PopActiveSnapshot();
		position = palloc(sizeof(int64) * n);
		has_row = palloc0(sizeof(bool) * n);
		for (i = 0; i < nrows; i++)
			if (rows[i].partition >= 0 && rows[i].partition < n)
			{
				has_row[rows[i].partition] = true;
				position[rows[i].partition] = rows[i].next_offset;
			}

		/* Start somewhere else each time, so that consumers spread. */
		first_p = n > 0 ? (int) (random() % n) : 0;
		for (i = 0; i < n && remaining > 0; i++)
		{
			int32		p = (first_p + i) % n;
			ElReadPoint point;
			ElGroupRow	row;
			int64		pos;

			/*
			 * Partitions this call took in an earlier pass stay its own; it
			 * takes at most "partitions" of them.
			 */
			if (taken >= max_partitions && !held[p])
				continue;
			el_group_point(name, topic_id, p, &point);

			/*
			 * Nothing to read: leave the partition free.  Unless the group
			 * has no position there yet and starts from the latest offset:
			 * then it takes the partition to record where "latest" was, so
			 * that nothing produced from now on is skipped.
			 */
			if (has_row[p] || settings.start_from != EL_FROM_LATEST)
			{
				pos = has_row[p] ? position[p] : point.log_start;
				if (pos >= point.stable)
				{
					await_p[nawait] = p;
					await_pos[nawait++] = pos;
					continue;
				}
			}
			if (!held[p])
			{
				/* Taken by another transaction of this group: skip it, never wait. */
				if (!el_group_try_partition(topic_id, group, p))
				{
					await_p[nawait] = p;
					await_pos[nawait++] = point.stable;
					others_hold = true;
					continue;
				}
				held[p] = true;
				taken++;
			}

			/*
			 * Ours now: read the position again (it may have moved before we
			 * took the partition), and the stable offset, as eventlog.read
			 * took it after the lock.
			 */
			el_group_statement_snapshot_push();
			if (el_group_row(topic_id, group, p, GetActiveSnapshot(), &row))
				pos = row.next_offset;
			else
			{
				pos = -1;
				ItemPointerSetInvalid(&row.tid);
			}
			PopActiveSnapshot();
			el_group_point(name, topic_id, p, &point);
			if (pos < 0)
				pos = (settings.start_from == EL_FROM_LATEST) ? point.stable : point.log_start;
			pos = el_group_checked_position(&point, group, pos, settings.auto_reset);
			pos = el_group_read(&point, pos, &remaining, store, tupdesc);
			moves[nmoves].partition = p;
			moves[nmoves].tid = row.tid;
			moves[nmoves++].offset = pos;
			await_p[nawait] = p;
			await_pos[nawait++] = pos;
		}
		/* The new positions, in the caller's transaction: one statement. */
		el_group_store_positions(topic_id, group, nmoves, moves);

		/*
		 * Long poll: when nothing was found, sleep until a partition looked
		 * at gets past where it was, then look again.  No commit announces
		 * that another transaction released a partition: while one is held,
		 * look again every second.
		 */
		if (remaining < max_records || GetCurrentTimestamp() >= deadline ||
			nawait == 0)
			break;
		wait_ms = Max(TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline), 0);
		if (others_hold)
			wait_ms = Min(wait_ms, 1000);
		if (!el_group_await(name, nawait, await_p, await_pos, wait_ms) &&
			!others_hold)
			break;
		MemoryContextReset(pass_cxt);
	}
	MemoryContextSwitchTo(outer_cxt);
	MemoryContextDelete(pass_cxt);
	return (Datum) 0;
}

Datum
el_group_poll(PG_FUNCTION_ARGS)
{
	return el_group_poll_common(fcinfo, false);
}

Datum
el_group_poll_binary(PG_FUNCTION_ARGS)
{
	return el_group_poll_common(fcinfo, true);
}
