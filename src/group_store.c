/*-------------------------------------------------------------------------
 *
 * group_store.c
 *	  Writing the consumer-group tables (group_offsets, group_members) for
 *	  the C group code; group_scan.c reads them.
 *
 * Writes go through SPI, one saved plan per kind of write, each a single
 * statement whatever the number of partitions (arrays unnested), so that
 * the executor keeps doing what it did for the PL/pgSQL code: row locks,
 * the re-check of a row another transaction updated meanwhile (READ
 * COMMITTED) or the serialization failure (REPEATABLE READ), ON CONFLICT,
 * foreign keys, statistics, the refusal in a read-only transaction.  Their
 * SQL names every operator and function with its schema, so no search_path
 * can change what they do.  The one exception, a transactional poll's
 * position row updated in place, says below why it is safe.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "group.h"

typedef enum ElGroupStmt
{
	EL_STMT_POSITIONS,
	EL_STMT_FETCH,
	EL_STMT_ADD_ROWS,
	EL_STMT_ASSIGN,
	EL_STMT_EXPIRE,
	EL_STMT_HEARTBEAT,
	EL_STMT_FORGET_FETCH,
	EL_STMT_LOCK_ROW,
	EL_STMT_COMMIT_ROW,
	EL_STMT_LOCK_FETCHED,
	EL_STMT_COMMIT_FETCHED,
	EL_NSTMTS
} ElGroupStmt;

#define EL_GROUP_KEY(alias) \
	" " alias ".topic_id OPERATOR(pg_catalog.=) $1" \
	" AND " alias ".group_name OPERATOR(pg_catalog.=) $2"

static const struct
{
	const char *sql;
	int			nargs;
	Oid			argtypes[5];
	int			expect;			/* SPI result code */
}			el_group_stmts[EL_NSTMTS] =
{
	/*
	 * A transactional poll's new positions (what _set_position did per
	 * partition).
	 */
	[EL_STMT_POSITIONS] = {
		"INSERT INTO " EL_SCHEMA_NAME ".group_offsets AS o"
		"       (topic_id, group_name, partition, next_offset, committed_at)"
		" SELECT $1, $2, u.partition, u.next_offset, pg_catalog.now()"
		"   FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4))"
		"        AS u(partition, next_offset)"
		" ON CONFLICT (topic_id, group_name, partition) DO UPDATE"
		"    SET next_offset = excluded.next_offset,"
		"        committed_at = excluded.committed_at",
		4, {INT4OID, TEXTOID, INT4ARRAYOID, INT8ARRAYOID}, SPI_OK_INSERT
	},
	/* A member's fetch positions, after its poll. */
	[EL_STMT_FETCH] = {
		"UPDATE " EL_SCHEMA_NAME ".group_offsets AS go"
		"   SET fetch_offset = u.fetch_offset"
		"  FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4))"
		"       AS u(partition, fetch_offset)"
		" WHERE" EL_GROUP_KEY("go")
		"   AND go.partition OPERATOR(pg_catalog.=) u.partition",
		4, {INT4OID, TEXTOID, INT4ARRAYOID, INT8ARRAYOID}, SPI_OK_UPDATE
	},
	/* Rebalance: every partition has a position row. */
	[EL_STMT_ADD_ROWS] = {
		"INSERT INTO " EL_SCHEMA_NAME ".group_offsets"
		"       (topic_id, group_name, partition, next_offset)"
		" SELECT $1, $2, u.partition, u.next_offset"
		"   FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4))"
		"        AS u(partition, next_offset)"
		" ON CONFLICT DO NOTHING",
		4, {INT4OID, TEXTOID, INT4ARRAYOID, INT8ARRAYOID}, SPI_OK_INSERT
	},
	/*
	 * Rebalance: new owners (NULL: released), each change bumping the
	 * generation once, and the fetch position back to the committed one.
	 */
	[EL_STMT_ASSIGN] = {
		"UPDATE " EL_SCHEMA_NAME ".group_offsets AS o"
		"   SET owner_member = u.owner_member, fetch_offset = NULL,"
		"       generation = o.generation OPERATOR(pg_catalog.+) u.bumps"
		"  FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4),"
		"                  pg_catalog.unnest($5)) AS u(partition, owner_member, bumps)"
		" WHERE" EL_GROUP_KEY("o")
		"   AND o.partition OPERATOR(pg_catalog.=) u.partition",
		5, {INT4OID, TEXTOID, INT4ARRAYOID, TEXTARRAYOID, INT8ARRAYOID}, SPI_OK_UPDATE
	},
	/* Rebalance: members whose heartbeat is older than their timeout. */
	[EL_STMT_EXPIRE] = {
		"DELETE FROM " EL_SCHEMA_NAME ".group_members AS gm"
		" WHERE" EL_GROUP_KEY("gm")
		"   AND gm.last_heartbeat OPERATOR(pg_catalog.<)"
		"       (pg_catalog.now() OPERATOR(pg_catalog.-) gm.session_timeout)",
		2, {INT4OID, TEXTOID}, SPI_OK_DELETE
	},
	/* A member's poll: join, or heartbeat. */
	[EL_STMT_HEARTBEAT] = {
		"INSERT INTO " EL_SCHEMA_NAME ".group_members AS gm"
		"       (topic_id, group_name, member, session_timeout, session)"
		" VALUES ($1, $2, $3, $4, $5)"
		" ON CONFLICT ON CONSTRAINT group_members_pkey DO UPDATE"
		"    SET last_heartbeat = pg_catalog.now(),"
		"        session_timeout = excluded.session_timeout,"
		"        session = excluded.session",
		5, {INT4OID, TEXTOID, TEXTOID, INTERVALOID, TEXTOID}, SPI_OK_INSERT
	},
	/* A restarted member: what its old session polled comes again. */
	[EL_STMT_FORGET_FETCH] = {
		"UPDATE " EL_SCHEMA_NAME ".group_offsets AS go SET fetch_offset = NULL"
		" WHERE" EL_GROUP_KEY("go")
		"   AND go.owner_member OPERATOR(pg_catalog.=) $3"
		"   AND go.fetch_offset IS NOT NULL",
		3, {INT4OID, TEXTOID, TEXTOID}, SPI_OK_UPDATE
	},
	/* A member's commit in one partition: the row, locked. */
	[EL_STMT_LOCK_ROW] = {
		"SELECT go.owner_member, go.generation, go.fetch_offset, go.next_offset"
		"  FROM " EL_SCHEMA_NAME ".group_offsets AS go"
		" WHERE" EL_GROUP_KEY("go")
		"   AND go.partition OPERATOR(pg_catalog.=) $3"
		"   FOR UPDATE",
		3, {INT4OID, TEXTOID, INT4OID}, SPI_OK_SELECT
	},
	[EL_STMT_COMMIT_ROW] = {
		"UPDATE " EL_SCHEMA_NAME ".group_offsets AS go"
		"   SET next_offset = $4, committed_at = pg_catalog.now(),"
		"       metadata = coalesce($5, go.metadata)"
		" WHERE" EL_GROUP_KEY("go")
		"   AND go.partition OPERATOR(pg_catalog.=) $3",
		5, {INT4OID, TEXTOID, INT4OID, INT8OID, TEXTOID}, SPI_OK_UPDATE
	},
	/*
	 * A member's commit of what its polls returned, in all it owns: the rows
	 * locked in partition order first (as the PL/pgSQL loop did, which is
	 * also the error a read-only transaction gets), then moved.
	 */
	[EL_STMT_LOCK_FETCHED] = {
		"SELECT go.partition FROM " EL_SCHEMA_NAME ".group_offsets AS go"
		" WHERE" EL_GROUP_KEY("go")
		"   AND go.owner_member OPERATOR(pg_catalog.=) $3"
		"   AND go.fetch_offset IS NOT NULL"
		" ORDER BY go.partition FOR UPDATE",
		3, {INT4OID, TEXTOID, TEXTOID}, SPI_OK_SELECT
	},
	[EL_STMT_COMMIT_FETCHED] = {
		"UPDATE " EL_SCHEMA_NAME ".group_offsets AS go"
		"   SET next_offset = go.fetch_offset, committed_at = pg_catalog.now(),"
		"       metadata = coalesce($4, go.metadata)"
		" WHERE" EL_GROUP_KEY("go")
		"   AND go.owner_member OPERATOR(pg_catalog.=) $3"
		"   AND go.fetch_offset IS NOT NULL"
		" RETURNING go.partition, go.next_offset",
		4, {INT4OID, TEXTOID, TEXTOID, TEXTOID}, SPI_OK_UPDATE_RETURNING
	},
};

/* Saved plans, prepared on first use (they survive DROP EXTENSION: the
 * plan cache parses them again when the tables change). */
static SPIPlanPtr el_group_plans[EL_NSTMTS];

/*
 * Run one statement; the caller has connected to SPI.  Returns the number
 * of rows processed.
 */
static uint64
el_group_execute(ElGroupStmt which, Datum *values, const char *nulls)
{
	int			ret;

	if (el_group_plans[which] == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(el_group_stmts[which].sql,
									   el_group_stmts[which].nargs,
									   (Oid *) el_group_stmts[which].argtypes);

		if (plan == NULL)
			elog(ERROR, "could not prepare a consumer group statement: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "could not keep a consumer group statement");
		el_group_plans[which] = plan;
	}
	ret = SPI_execute_plan(el_group_plans[which], values, nulls, false, 0);
	if (ret != el_group_stmts[which].expect)
		elog(ERROR, "a consumer group statement failed: %s",
			 SPI_result_code_string(ret));
	return SPI_processed;
}

static void
el_group_connect(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static Datum
el_int4_array(int n, const ElGroupMove *moves)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		d[i] = Int32GetDatum(moves[i].partition);
	return PointerGetDatum(construct_array(d, n, INT4OID, 4, true, TYPALIGN_INT));
}

static Datum
el_int8_array(int n, const ElGroupMove *moves, bool bumps)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		d[i] = Int64GetDatum(bumps ? moves[i].bumps : moves[i].offset);
	return PointerGetDatum(construct_array(d, n, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/* (topic_id, group, partitions[], offsets[]): one statement. */
static void
el_group_execute_moves(ElGroupStmt which, int32 topic_id, const char *group,
					   int nmoves, const ElGroupMove *moves)
{
	Datum		values[4];

	if (nmoves == 0)
		return;
	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(group);
	values[2] = el_int4_array(nmoves, moves);
	values[3] = el_int8_array(nmoves, moves, false);
	el_group_connect();
	(void) el_group_execute(which, values, NULL);
	SPI_finish();
}

/*
 * Update one position row in place: the version at "tid", which this
 * transaction read under the partition's lock, gets next_offset and
 * committed_at = now(), as the upsert's DO UPDATE would set them.  False
 * when that version is no longer the latest (only possible in READ
 * COMMITTED through writers that do not take the partition's lock, such as
 * drop_topic's cascade): then the caller lets the upsert statement find
 * the latest version, as it always did.  In REPEATABLE READ and
 * SERIALIZABLE that is the upsert's own serialization failure, raised here.
 */
static bool
el_group_update_in_place(Relation rel, ResultRelInfo *rri, EState *estate,
						 TupleTableSlot *oldslot, TupleTableSlot *newslot,
						 const ElGroupMove *move)
{
	AttrNumber	next_col = el_group_attnum(rel, "next_offset");
	AttrNumber	at_col = el_group_attnum(rel, "committed_at");
	int			natts = RelationGetDescr(rel)->natts;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	ElUpdateIndexes update_indexes;
	TM_Result	result;
	ItemPointerData tid = move->tid;

	if (!table_tuple_fetch_row_version(rel, &tid, SnapshotAny, oldslot))
		return false;
	slot_getallattrs(oldslot);
	ExecClearTuple(newslot);
	memcpy(newslot->tts_values, oldslot->tts_values, sizeof(Datum) * natts);
	memcpy(newslot->tts_isnull, oldslot->tts_isnull, sizeof(bool) * natts);
	newslot->tts_values[next_col - 1] = Int64GetDatum(move->offset);
	newslot->tts_isnull[next_col - 1] = false;
	newslot->tts_values[at_col - 1] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	newslot->tts_isnull[at_col - 1] = false;
	ExecStoreVirtualTuple(newslot);

	result = table_tuple_update(rel, &tid, newslot, GetCurrentCommandId(true),
								InvalidSnapshot, InvalidSnapshot, true,
								&tmfd, &lockmode, &update_indexes);
	switch (result)
	{
		case TM_Ok:
			if (EL_UPDATE_NEEDS_INDEXES(update_indexes) && rri->ri_NumIndices > 0)
				(void) el_update_index_tuples(rri, newslot, estate, update_indexes);
			return true;
		case TM_Updated:
		case TM_Deleted:
			if (IsolationUsesXactSnapshot())
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not serialize access due to concurrent update")));
			return false;
		case TM_SelfModified:
			return false;
		default:
			elog(ERROR, "unexpected result %d updating a consumer group position",
				 (int) result);
	}
	return false;
}

/*
 * Whether an UPDATE of "rel" would fire a trigger of its own: one someone
 * added (an audit trigger, say), row or statement level.  The foreign key's
 * internal triggers do nothing when the key does not change, as here.  The
 * upsert statement fires such triggers; an update in place would skip them.
 */
static bool
el_group_update_fires_triggers(Relation rel)
{
	TriggerDesc *trigdesc = rel->trigdesc;
	int			i;

	if (trigdesc == NULL)
		return false;
	for (i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *trig = &trigdesc->triggers[i];

		if (!trig->tgisinternal && TRIGGER_FOR_UPDATE(trig->tgtype))
			return true;
	}
	return false;
}

/*
 * A transactional poll's new positions.  The rows it read under the
 * partitions' locks are updated in place (no statement, no second index
 * probe); the others (a group's first poll of a partition, or a row that
 * moved meanwhile) go through one upsert statement, which inserts or
 * updates them as _set_position did.
 */
void
el_group_store_positions(int32 topic_id, const char *group, int nmoves,
						 ElGroupMove *moves)
{
	int			nleft = 0;
	int			i;

	for (i = 0; i < nmoves; i++)
		if (ItemPointerIsValid(&moves[i].tid))
			break;

	/*
	 * A read-only transaction may not move a position: the statement raises
	 * the error the executor raises for it (25006).
	 */
	if (i < nmoves && !XactReadOnly)
	{
		Oid			relid = get_relname_relid("group_offsets",
											  get_namespace_oid(EL_SCHEMA_NAME, false));
		Relation	rel;
		EState	   *estate = CreateExecutorState();
		ResultRelInfo *rri = makeNode(ResultRelInfo);
		TupleTableSlot *oldslot;
		TupleTableSlot *newslot;

		if (!OidIsValid(relid))
			elog(ERROR, "table %s.group_offsets is missing", EL_SCHEMA_NAME);
		rel = table_open(relid, RowExclusiveLock);
		if (el_group_update_fires_triggers(rel))
		{
			/* The statement fires them, as it did for every poll. */
			table_close(rel, RowExclusiveLock);
			FreeExecutorState(estate);
			pfree(rri);
			el_group_execute_moves(EL_STMT_POSITIONS, topic_id, group, nmoves, moves);
			return;
		}
		InitResultRelInfo(rri, rel, 1, NULL, 0);
		ExecOpenIndices(rri, false);
		oldslot = table_slot_create(rel, NULL);
		newslot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
		for (i = 0; i < nmoves; i++)
			if (!ItemPointerIsValid(&moves[i].tid) ||
				!el_group_update_in_place(rel, rri, estate, oldslot, newslot, &moves[i]))
				moves[nleft++] = moves[i];
		ExecDropSingleTupleTableSlot(oldslot);
		ExecDropSingleTupleTableSlot(newslot);
		ExecCloseIndices(rri);
		FreeExecutorState(estate);
		table_close(rel, RowExclusiveLock);
		/* Later steps of this transaction see the new versions. */
		CommandCounterIncrement();
	}
	else
		nleft = nmoves;
	el_group_execute_moves(EL_STMT_POSITIONS, topic_id, group, nleft, moves);
}

/* A member's fetch positions. */
void
el_group_store_fetch_positions(int32 topic_id, const char *group, int nmoves,
							   const ElGroupMove *moves)
{
	el_group_execute_moves(EL_STMT_FETCH, topic_id, group, nmoves, moves);
}

/* Position rows for partitions that have none (others' rows are kept). */
void
el_group_add_rows(int32 topic_id, const char *group, int nmoves,
				  const ElGroupMove *moves)
{
	el_group_execute_moves(EL_STMT_ADD_ROWS, topic_id, group, nmoves, moves);
}

/* New owners: moves[i].owner (NULL: none), generation + moves[i].bumps. */
void
el_group_assign(int32 topic_id, const char *group, int nmoves,
				const ElGroupMove *moves)
{
	Datum		values[5];
	Datum	   *owners;
	bool	   *owner_nulls;
	int			dims[1];
	int			lbs[1] = {1};
	int			i;

	if (nmoves == 0)
		return;
	owners = palloc(sizeof(Datum) * nmoves);
	owner_nulls = palloc(sizeof(bool) * nmoves);
	for (i = 0; i < nmoves; i++)
	{
		owner_nulls[i] = (moves[i].owner == NULL);
		owners[i] = owner_nulls[i] ? (Datum) 0 : CStringGetTextDatum(moves[i].owner);
	}
	dims[0] = nmoves;
	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(group);
	values[2] = el_int4_array(nmoves, moves);
	values[3] = PointerGetDatum(construct_md_array(owners, owner_nulls, 1, dims, lbs,
												   TEXTOID, -1, false, TYPALIGN_INT));
	values[4] = el_int8_array(nmoves, moves, true);
	el_group_connect();
	(void) el_group_execute(EL_STMT_ASSIGN, values, NULL);
	SPI_finish();
}

/* Delete the members whose heartbeat is older than their session timeout. */
void
el_group_expire_members(int32 topic_id, const char *group)
{
	Datum		values[2];

	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(group);
	el_group_connect();
	(void) el_group_execute(EL_STMT_EXPIRE, values, NULL);
	SPI_finish();
}

/* A member joins or heartbeats, from server session "session". */
void
el_group_heartbeat(int32 topic_id, const char *group, const char *member,
				   Interval *session_timeout, const char *session)
{
	Datum		values[5];

	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(group);
	values[2] = CStringGetTextDatum(member);
	values[3] = IntervalPGetDatum(session_timeout);
	values[4] = CStringGetTextDatum(session);
	el_group_connect();
	(void) el_group_execute(EL_STMT_HEARTBEAT, values, NULL);
	SPI_finish();
}

/* Forget a member's fetch positions: its next poll starts from commits. */
void
el_group_forget_fetch(int32 topic_id, const char *group, const char *member)
{
	Datum		values[3];

	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(group);
	values[2] = CStringGetTextDatum(member);
	el_group_connect();
	(void) el_group_execute(EL_STMT_FORGET_FETCH, values, NULL);
	SPI_finish();
}

/*
 * Lock a partition's position row (FOR UPDATE) and return it; false if
 * there is none.  row->partition is set; row->owner is palloc'd in the
 * caller's memory.
 */
bool
el_group_lock_row(int32 topic_id, const char *group, int32 partition,
				  ElGroupRow *row)
{
	Datum		values[3];
	bool		found;

	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(group);
	values[2] = Int32GetDatum(partition);
	el_group_connect();
	found = el_group_execute(EL_STMT_LOCK_ROW, values, NULL) > 0;
	if (found)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		d;

		row->partition = partition;
		d = SPI_getbinval(tup, desc, 1, &isnull);
		row->owner = NULL;
		if (!isnull)
		{
			/* Into the caller's memory, out of SPI's. */
			char	   *s = TextDatumGetCString(d);

			row->owner = SPI_palloc(strlen(s) + 1);
			strcpy(row->owner, s);
		}
		row->generation = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		d = SPI_getbinval(tup, desc, 3, &isnull);
		row->has_fetch = !isnull;
		row->fetch_offset = isnull ? 0 : DatumGetInt64(d);
		row->next_offset = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	}
	SPI_finish();
	return found;
}

/* Commit "offset" in one partition (metadata NULL: keep the old one). */
void
el_group_commit_row(int32 topic_id, const char *group, int32 partition,
					int64 offset, text *metadata)
{
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(group);
	values[2] = Int32GetDatum(partition);
	values[3] = Int64GetDatum(offset);
	values[4] = PointerGetDatum(metadata);
	if (metadata == NULL)
		nulls[4] = 'n';
	el_group_connect();
	(void) el_group_execute(EL_STMT_COMMIT_ROW, values, nulls);
	SPI_finish();
}

static int
el_move_cmp(const void *a, const void *b)
{
	int32		pa = ((const ElGroupMove *) a)->partition;
	int32		pb = ((const ElGroupMove *) b)->partition;

	return (pa > pb) - (pa < pb);
}

/*
 * Commit a member's fetch positions in every partition it owns that has
 * one; returns how many, *moves (partition, committed offset) ascending.
 */
int
el_group_commit_fetched(int32 topic_id, const char *group, const char *member,
						text *metadata, ElGroupMove **moves)
{
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	uint64		n;
	uint64		i;

	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(group);
	values[2] = CStringGetTextDatum(member);
	values[3] = PointerGetDatum(metadata);
	if (metadata == NULL)
		nulls[3] = 'n';
	el_group_connect();
	(void) el_group_execute(EL_STMT_LOCK_FETCHED, values, NULL);
	n = el_group_execute(EL_STMT_COMMIT_FETCHED, values, nulls);
	*moves = SPI_palloc(sizeof(ElGroupMove) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		isnull;

		(*moves)[i].partition = DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		(*moves)[i].offset = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
		(*moves)[i].owner = NULL;
		(*moves)[i].bumps = 0;
	}
	SPI_finish();
	qsort(*moves, n, sizeof(ElGroupMove), el_move_cmp);
	return (int) n;
}
