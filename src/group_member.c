/*-------------------------------------------------------------------------
 *
 * group_member.c
 *	  Consumer groups, member style: a member's poll (heartbeat, rebalance,
 *	  records from its fetch positions), the rebalance, and eventlog.commit.
 *
 * Named members do their work outside the database.  Partitions are
 * assigned to live members (sticky: an owner keeps its partitions while it
 * heartbeats, and only orphaned or surplus partitions move), each
 * assignment has a generation, and commits by a member that no longer owns
 * a partition are refused (fencing).  Membership changes of a group are
 * serialised by its membership lock, taken exclusively by members' polls
 * and leave (group.c).
 *
 * Like group.c, these read the group tables with one index scan each
 * (group_scan.c) and write them with one statement per kind of change
 * (group_store.c); the rebalance is computed in memory from one read of the
 * members and the positions.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "group.h"

PG_FUNCTION_INFO_V1(el_group_commit);
PG_FUNCTION_INFO_V1(el_group_rebalance_sql);

/*
 * A member's poll: heartbeat (joining if new), rebalance, and up to
 * max_records from the partitions it owns, from its fetch positions, which
 * move on (the group's positions move only when the member commits).  With
 * a wait, it first sleeps until one of the partitions it owns has records:
 * before joining, since the poll holds the group's membership lock to the
 * end of its transaction and other members must not wait for it.  A member
 * that owns nothing yet (its first poll) does not wait.
 */
void
el_group_poll_member(text *name, int32 topic_id, const char *group,
					 text *member_text, int32 max_records,
					 Interval *session_timeout, Interval *wait,
					 Tuplestorestate *store, TupleDesc tupdesc)
{
	char	   *topic_name = text_to_cstring(name);
	char	   *member = text_to_cstring(member_text);
	char	   *this_session;
	Interval	zero = {0};
	ElGroupMember old;
	bool		known;
	ElGroupSettings settings;
	ElGroupRow *rows;
	int			nrows;
	ElGroupMove *moves;
	int			nmoves = 0;
	int32		remaining = max_records;
	int			i;

	if (wait && el_interval_cmp(wait, &zero) > 0)
	{
		int32	   *parts;
		int64	   *positions;
		int			nowned = 0;

		el_group_statement_snapshot_push();
		nrows = el_group_rows(topic_id, group, GetActiveSnapshot(), &rows);
		PopActiveSnapshot();
		parts = palloc(sizeof(int32) * Max(nrows, 1));
		positions = palloc(sizeof(int64) * Max(nrows, 1));
		for (i = 0; i < nrows; i++)
			if (rows[i].owner && strcmp(rows[i].owner, member) == 0)
			{
				parts[nowned] = rows[i].partition;
				positions[nowned++] = rows[i].has_fetch ? rows[i].fetch_offset : rows[i].next_offset;
			}
		if (nowned > 0)
			(void) el_group_await(name, nowned, parts, positions,
								  el_interval_ms(wait));
	}

	el_check_member_name(member_text);
	if (session_timeout == NULL || el_interval_cmp(session_timeout, &zero) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("session_timeout must be a positive interval")));

	/* Membership changes of a group are serialised (briefly). */
	el_group_lock_checked(topic_id, topic_name, group, false);
	this_session = el_session_string();
	el_group_statement_snapshot_push();
	known = el_group_member(topic_id, group, member, GetActiveSnapshot(), &old);
	PopActiveSnapshot();
	el_group_heartbeat(topic_id, group, member, session_timeout, this_session);

	/*
	 * A known member polling from another session is a restarted consumer
	 * (or a pooled connection): what it polled before and did not commit
	 * comes again, from the committed position.  Else those records would
	 * be skipped, breaking at least once.
	 */
	if (known && (old.session == NULL || strcmp(old.session, this_session) != 0))
		el_group_forget_fetch(topic_id, group, member);
	el_group_rebalance(name, topic_id, group);

	el_group_statement_snapshot_push();
	el_group_settings(topic_id, group, GetActiveSnapshot(), &settings);
	nrows = el_group_rows(topic_id, group, GetActiveSnapshot(), &rows);
	PopActiveSnapshot();
	moves = palloc(sizeof(ElGroupMove) * Max(nrows, 1));
	for (i = 0; i < nrows && remaining > 0; i++)
	{
		ElGroupRow *row = &rows[i];
		ElReadPoint point;
		int64		pos;

		if (row->owner == NULL || strcmp(row->owner, member) != 0)
			continue;
		el_group_point(name, topic_id, row->partition, &point);
		pos = el_group_checked_position(&point, group,
										row->has_fetch ? row->fetch_offset : row->next_offset,
										settings.auto_reset);
		moves[nmoves].partition = row->partition;
		moves[nmoves++].offset = el_group_read(&point, pos, &remaining, store, tupdesc);
	}
	el_group_store_fetch_positions(topic_id, group, nmoves, moves);
}

/* A live member and how many partitions it holds, for the rebalance. */
typedef struct ElLiveMember
{
	char	   *member;
	int			owned;
} ElLiveMember;

/* Members holding more first, then by name (the column's collation). */
static int
el_live_member_cmp(const void *a, const void *b)
{
	const ElLiveMember *ma = a;
	const ElLiveMember *mb = b;

	if (ma->owned != mb->owned)
		return (ma->owned > mb->owned) ? -1 : 1;
	return varstr_cmp(ma->member, strlen(ma->member),
					  mb->member, strlen(mb->member), DEFAULT_COLLATION_OID);
}

static bool
el_same_member(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* How many rows "member" owns in the rebalance's state. */
static int
el_owned_by(char **owner, int nrows, const char *member)
{
	int			count = 0;
	int			i;

	for (i = 0; i < nrows; i++)
		if (el_same_member(owner[i], member))
			count++;
	return count;
}

/*
 * Expire members whose heartbeat is older than their session timeout and
 * reassign partitions: every live member keeps what it owns up to its fair
 * share, and orphaned or surplus partitions go to members below theirs.  A
 * partition changing hands gets a new generation (one per change: released
 * and given again is two), and its fetch position goes back to the
 * committed one (at-least-once).  The caller holds the group's membership
 * lock exclusively, so nothing else changes owners meanwhile.
 */
void
el_group_rebalance(text *name, int32 topic_id, const char *group)
{
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	ElGroupMember *members;
	int			nmembers;
	ElLiveMember *live;
	int			m = 0;
	bool		expired = false;
	ElTopic    *topic;
	int			n;
	ElGroupRow *rows;
	int			nrows;
	char	  **owner;
	int64	   *bumps;
	ElGroupMove *moves;
	int			nmoves = 0;
	int			i;
	int			j;

	el_group_statement_snapshot_push();
	nmembers = el_group_members(topic_id, group, GetActiveSnapshot(), &members);
	nrows = el_group_rows(topic_id, group, GetActiveSnapshot(), &rows);
	PopActiveSnapshot();

	/* last_heartbeat < now() - session_timeout: gone. */
	live = palloc(sizeof(ElLiveMember) * Max(nmembers, 1));
	for (i = 0; i < nmembers; i++)
	{
		TimestampTz limit;

		limit = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
														TimestampTzGetDatum(now),
														IntervalPGetDatum(&members[i].session_timeout)));
		if (members[i].last_heartbeat < limit)
		{
			expired = true;
			continue;
		}
		live[m].member = members[i].member;
		live[m].owned = 0;
		for (j = 0; j < nrows; j++)
			if (el_same_member(rows[j].owner, live[m].member))
				live[m].owned++;
		m++;
	}
	if (expired)
		el_group_expire_members(topic_id, group);

	/*
	 * Members holding more come first, so that the n % m larger shares go
	 * to them and as few partitions as possible move.
	 */
	qsort(live, m, sizeof(ElLiveMember), el_live_member_cmp);

	/* Every partition has a position row (from the log start offset). */
	topic = el_group_topic(name, topic_id);
	n = topic->npartitions;
	moves = palloc(sizeof(ElGroupMove) * Max(n + nrows, 1));
	for (i = 0, j = 0; i < n; i++)
	{
		while (j < nrows && rows[j].partition < i)
			j++;
		if (j < nrows && rows[j].partition == i)
			continue;
		moves[nmoves].partition = i;
		moves[nmoves++].offset = topic->parts[i].log_start_offset;
	}
	if (nmoves > 0)
	{
		el_group_add_rows(topic_id, group, nmoves, moves);
		el_group_statement_snapshot_push();
		nrows = el_group_rows(topic_id, group, GetActiveSnapshot(), &rows);
		PopActiveSnapshot();
		moves = repalloc(moves, sizeof(ElGroupMove) * Max(nrows, 1));
		nmoves = 0;
	}

	/* The new owners, computed here, written at the end in one statement. */
	owner = palloc(sizeof(char *) * Max(nrows, 1));
	bumps = palloc0(sizeof(int64) * Max(nrows, 1));
	for (i = 0; i < nrows; i++)
	{
		owner[i] = rows[i].owner;
		if (owner[i] == NULL)
			continue;
		/* Partitions of members that are gone are orphaned. */
		for (j = 0; j < m; j++)
			if (el_same_member(owner[i], live[j].member))
				break;
		if (j == m)
		{
			owner[i] = NULL;
			bumps[i]++;
		}
	}
	if (m > 0)
	{
		int		   *quota = palloc(sizeof(int) * m);

		/*
		 * Members keep what they own up to their share (the first n % m
		 * members in that order may hold one more); the surplus, their
		 * highest partitions, is released.
		 */
		for (j = 0; j < m; j++)
		{
			int			kept = 0;

			quota[j] = n / m + (j < n % m ? 1 : 0);
			for (i = 0; i < nrows; i++)
				if (el_same_member(owner[i], live[j].member) && ++kept > quota[j])
				{
					owner[i] = NULL;
					bumps[i]++;
				}
		}

		/* Unowned partitions go to members below their share, in order. */
		{
			bool	   *unowned = palloc(sizeof(bool) * Max(nrows, 1));

			for (i = 0; i < nrows; i++)
				unowned[i] = (owner[i] == NULL);
			for (i = 0; i < nrows; i++)
			{
				if (!unowned[i])
					continue;
				for (j = 0; j < m; j++)
					if (el_owned_by(owner, nrows, live[j].member) < quota[j])
						break;
				if (j == m)
					break;
				owner[i] = live[j].member;
				bumps[i]++;
			}
		}
	}

	for (i = 0; i < nrows; i++)
		if (bumps[i] > 0)
		{
			moves[nmoves].partition = rows[i].partition;
			moves[nmoves].owner = owner[i];
			moves[nmoves++].bumps = bumps[i];
		}
	el_group_assign(topic_id, group, nmoves, moves);
}

/*
 * eventlog._rebalance(tid integer, topic text, group_name text) -> void:
 * for eventlog._leave, which hands a leaving member's partitions over at
 * once.  The caller holds the group's membership lock.
 */
Datum
el_group_rebalance_sql(PG_FUNCTION_ARGS)
{
	el_group_rebalance(PG_GETARG_TEXT_PP(1), PG_GETARG_INT32(0),
					   text_to_cstring(PG_GETARG_TEXT_PP(2)));
	PG_RETURN_VOID();
}

static void
el_put_position(Tuplestorestate *store, TupleDesc tupdesc, int32 partition,
				int64 offset)
{
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = Int32GetDatum(partition);
	values[1] = Int64GetDatum(offset);
	tuplestore_putvalues(store, tupdesc, values, nulls);
}

/*
 * eventlog._commit(topic text, group_name text, member text, partition
 *                  integer, next_offset bigint, generation bigint,
 *                  metadata text) -> SETOF eventlog.position
 *
 * A member commits its position: in one partition (next_offset, or what
 * its polls returned; fenced by ownership and, if given, the generation),
 * or what its polls returned in every partition it owns.  SECURITY
 * DEFINER, called through el_gate.
 */
Datum
el_group_commit(PG_FUNCTION_ARGS)
{
	text	   *name;
	int32		topic_id = el_group_authorize(fcinfo, &name);
	char	   *topic_name = text_to_cstring(name);
	char	   *group = el_group_name_arg(fcinfo, 1);
	char	   *member;
	text	   *metadata = PG_ARGISNULL(6) ? NULL : PG_GETARG_TEXT_PP(6);
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	ElGroupMember m;
	bool		found;
	ElGroupMove *moves;
	int			nmoves;
	int			i;

	if (PG_ARGISNULL(2) || VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(2)) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("member must be given"),
				 errhint("Transactional consumers commit with their transaction; members commit with their name.")));
	member = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (!PG_ARGISNULL(4) && PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("next_offset needs a partition")));
	if (!PG_ARGISNULL(4) && PG_GETARG_INT64(4) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("next_offset must not be negative")));
	store = el_materialized_srf(fcinfo, "commit", &tupdesc);

	/*
	 * The group's membership lock, shared: it waits for member polls in
	 * progress (they hold it exclusively), and keeps delete_group away while
	 * this transaction holds the group's rows (it refuses instead of waiting
	 * for them, and deadlocking with this member's next poll).
	 */
	el_group_lock(topic_id, group, true);

	/*
	 * Committing "what the polls returned" is only safe in the session that
	 * polled: a member restarted in another session got those records again
	 * (el_group_poll_member), and the fetch positions are now its.
	 */
	if (PG_ARGISNULL(4))
	{
		el_group_statement_snapshot_push();
		found = el_group_member(topic_id, group, member, GetActiveSnapshot(), &m);
		PopActiveSnapshot();
		if (found && (m.session == NULL || strcmp(m.session, el_session_string()) != 0))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("member \"%s\" of group \"%s\" of topic \"%s\" last polled from another session",
							member, group, topic_name),
					 errdetail("That session was given again what this one polled and did not commit; committing the fetch positions could skip records it has not processed."),
					 errhint("Poll again from this session, or commit explicit offsets with partition and next_offset.")));
	}

	if (!PG_ARGISNULL(3))
	{
		int32		partition = PG_GETARG_INT32(3);
		ElGroupRow	row;
		ElReadPoint point;
		int64		pos;

		found = el_group_lock_row(topic_id, group, partition, &row);
		if (!found || !el_same_member(row.owner, member) ||
			(!PG_ARGISNULL(5) && row.generation != PG_GETARG_INT64(5)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("member \"%s\" does not own partition %d of topic \"%s\" in group \"%s\"",
							member, partition, topic_name, group),
					 errdetail("The partition is assigned to %s in generation %s.",
							   (found && row.owner) ? quote_literal_cstr(row.owner) : "no member",
							   found ? psprintf(INT64_FORMAT, row.generation) : "0"),
					 errhint("The member lost the partition (it left, or missed its session timeout); poll again to get an assignment.")));
		pos = !PG_ARGISNULL(4) ? PG_GETARG_INT64(4) :
			row.has_fetch ? row.fetch_offset : row.next_offset;
		el_group_point(name, topic_id, partition, &point);
		if (pos > point.high_watermark)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("offset " INT64_FORMAT " is beyond the high watermark of partition %d of topic \"%s\"",
							pos, partition, topic_name)));
		el_group_commit_row(topic_id, group, partition, pos, metadata);
		el_put_position(store, tupdesc, partition, pos);
		return (Datum) 0;
	}

	/*
	 * A member that is no longer in the group owns nothing: say so, rather
	 * than commit nothing in silence (the same fencing as for one partition).
	 */
	el_group_statement_snapshot_push();
	found = el_group_member(topic_id, group, member, GetActiveSnapshot(), NULL);
	PopActiveSnapshot();
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("member \"%s\" is not in group \"%s\" of topic \"%s\"",
						member, group, topic_name),
				 errhint("The member left, or missed its session timeout; poll again to rejoin the group.")));
	/* Everything the member's last polls returned, in the partitions it owns. */
	nmoves = el_group_commit_fetched(topic_id, group, member, metadata, &moves);
	for (i = 0; i < nmoves; i++)
		el_put_position(store, tupdesc, moves[i].partition, moves[i].offset);
	return (Datum) 0;
}
