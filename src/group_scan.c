/*-------------------------------------------------------------------------
 *
 * group_scan.c
 *	  Reading the consumer-group tables (group_offsets, group_members,
 *	  group_catalog) for the C group code; group_store.c writes them.
 *
 * Reads go straight to the tables through their primary keys: one index
 * scan returns every position of a group (ordered by partition), one probe
 * a single row.  They take the snapshot the caller gives, which is what a
 * PL/pgSQL statement would have used (el_group_statement_snapshot_push),
 * so a READ COMMITTED poll sees what committed before each step and a
 * REPEATABLE READ poll its transaction's snapshot, as before the group code
 * moved to C; the table and index AMs take SERIALIZABLE's predicate locks as
 * the executor's scans did.  No privilege applies: the tables are the
 * extension owner's and the callers are its SECURITY DEFINER functions,
 * which checked the caller's topic privilege first.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "group.h"

/*
 * A "statement" of the group code: push a snapshot as PL/pgSQL would take
 * one for its next statement (fresh in READ COMMITTED, the transaction's in
 * REPEATABLE READ and SERIALIZABLE), seeing what this transaction wrote so
 * far.  The caller reads with GetActiveSnapshot() and pops it.
 */
void
el_group_statement_snapshot_push(void)
{
	PushCopiedSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
}

/* ---------------------------------------------------------------------
 * Reads
 * --------------------------------------------------------------------- */

/* An index scan of one group's rows in one of the three tables. */
typedef struct ElGroupScan
{
	Relation	rel;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
} ElGroupScan;

AttrNumber
el_group_attnum(Relation rel, const char *name)
{
	AttrNumber	attnum = attnameAttNum(rel, name, false);

	if (attnum == InvalidAttrNumber)
		elog(ERROR, "column \"%s\" of \"%s\" is missing", name,
			 RelationGetRelationName(rel));
	return attnum;
}

/*
 * Scan "relname" through its primary key, whose first columns are
 * (topic_id, group_name[, "third"]), for the rows of one group (and one
 * partition or member, when "third" is given).  Rows come in key order.
 */
static void
el_group_scan_begin(ElGroupScan *gs, const char *relname, Snapshot snapshot,
					int32 topic_id, const char *group,
					const char *third, Datum third_value)
{
	Oid			nsp = get_namespace_oid(EL_SCHEMA_NAME, false);
	Oid			relid = get_relname_relid(relname, nsp);
	Oid			pk;
	ScanKeyData keys[3];
	int			nkeys = third ? 3 : 2;
	int			i;

	if (!OidIsValid(relid))
		elog(ERROR, "table %s.%s is missing", EL_SCHEMA_NAME, relname);
	gs->rel = table_open(relid, AccessShareLock);
	pk = el_primary_key_index(gs->rel);
	if (!OidIsValid(pk))
		elog(ERROR, "table \"%s\" has no primary key", relname);
	gs->index = index_open(pk, AccessShareLock);

	/* The key's columns must be the ones named, in that order. */
	if (gs->index->rd_index->indnkeyatts < nkeys ||
		gs->index->rd_index->indkey.values[0] != el_group_attnum(gs->rel, "topic_id") ||
		gs->index->rd_index->indkey.values[1] != el_group_attnum(gs->rel, "group_name") ||
		(third && gs->index->rd_index->indkey.values[2] != el_group_attnum(gs->rel, third)))
		elog(ERROR, "the primary key of \"%s\" is not the one expected", relname);

	ScanKeyEntryInitialize(&keys[0], 0, 1, BTEqualStrategyNumber, InvalidOid,
						   gs->index->rd_indcollation[0], F_INT4EQ,
						   Int32GetDatum(topic_id));
	ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   gs->index->rd_indcollation[1], F_TEXTEQ,
						   CStringGetTextDatum(group));
	if (third)
	{
		Oid			typid = TupleDescAttr(gs->rel->rd_att,
										  gs->index->rd_index->indkey.values[2] - 1)->atttypid;

		ScanKeyEntryInitialize(&keys[2], 0, 3, BTEqualStrategyNumber, InvalidOid,
							   gs->index->rd_indcollation[2],
							   typid == INT4OID ? F_INT4EQ : F_TEXTEQ,
							   third_value);
	}
	for (i = 0; i < nkeys; i++)
		Assert(OidIsValid(keys[i].sk_func.fn_oid));
	gs->slot = table_slot_create(gs->rel, NULL);
	gs->scan = el_index_beginscan(gs->rel, gs->index, snapshot, nkeys, 0);
	index_rescan(gs->scan, keys, nkeys, NULL, 0);
}

static bool
el_group_scan_next(ElGroupScan *gs)
{
	return index_getnext_slot(gs->scan, ForwardScanDirection, gs->slot);
}

static void
el_group_scan_end(ElGroupScan *gs)
{
	index_endscan(gs->scan);
	ExecDropSingleTupleTableSlot(gs->slot);
	index_close(gs->index, AccessShareLock);
	table_close(gs->rel, AccessShareLock);
}

/* Column numbers of group_offsets, looked up by name. */
typedef struct ElRowColumns
{
	AttrNumber	partition;
	AttrNumber	next_offset;
	AttrNumber	fetch_offset;
	AttrNumber	owner;
	AttrNumber	generation;
} ElRowColumns;

static void
el_row_columns(Relation rel, ElRowColumns *cols)
{
	cols->partition = el_group_attnum(rel, "partition");
	cols->next_offset = el_group_attnum(rel, "next_offset");
	cols->fetch_offset = el_group_attnum(rel, "fetch_offset");
	cols->owner = el_group_attnum(rel, "owner_member");
	cols->generation = el_group_attnum(rel, "generation");
}

static void
el_row_fetch(TupleTableSlot *slot, const ElRowColumns *cols, ElGroupRow *row)
{
	bool		isnull;
	Datum		d;

	ItemPointerCopy(&slot->tts_tid, &row->tid);
	row->partition = DatumGetInt32(slot_getattr(slot, cols->partition, &isnull));
	row->next_offset = DatumGetInt64(slot_getattr(slot, cols->next_offset, &isnull));
	d = slot_getattr(slot, cols->fetch_offset, &isnull);
	row->has_fetch = !isnull;
	row->fetch_offset = isnull ? 0 : DatumGetInt64(d);
	d = slot_getattr(slot, cols->owner, &isnull);
	row->owner = isnull ? NULL : TextDatumGetCString(d);
	row->generation = DatumGetInt64(slot_getattr(slot, cols->generation, &isnull));
}

/*
 * Every group_offsets row of a group, ascending partition; returns how
 * many (*rows palloc'd, NULL if none).
 */
int
el_group_rows(int32 topic_id, const char *group, Snapshot snapshot,
			  ElGroupRow **rows)
{
	ElGroupScan gs;
	ElRowColumns cols;
	int			n = 0;
	int			size = 8;

	*rows = palloc(sizeof(ElGroupRow) * size);
	el_group_scan_begin(&gs, "group_offsets", snapshot, topic_id, group, NULL, 0);
	el_row_columns(gs.rel, &cols);
	while (el_group_scan_next(&gs))
	{
		if (n == size)
		{
			size *= 2;
			*rows = repalloc(*rows, sizeof(ElGroupRow) * size);
		}
		el_row_fetch(gs.slot, &cols, &(*rows)[n++]);
	}
	el_group_scan_end(&gs);
	return n;
}

/* The group_offsets row of one partition of a group, if there is one. */
bool
el_group_row(int32 topic_id, const char *group, int32 partition,
			 Snapshot snapshot, ElGroupRow *row)
{
	ElGroupScan gs;
	ElRowColumns cols;
	bool		found;

	el_group_scan_begin(&gs, "group_offsets", snapshot, topic_id, group,
						"partition", Int32GetDatum(partition));
	el_row_columns(gs.rel, &cols);
	found = el_group_scan_next(&gs);
	if (found)
		el_row_fetch(gs.slot, &cols, row);
	el_group_scan_end(&gs);
	return found;
}

static void
el_member_fetch(ElGroupScan *gs, ElGroupMember *m)
{
	bool		isnull;
	Datum		d;

	m->member = TextDatumGetCString(slot_getattr(gs->slot, el_group_attnum(gs->rel, "member"), &isnull));
	m->last_heartbeat = DatumGetTimestampTz(slot_getattr(gs->slot, el_group_attnum(gs->rel, "last_heartbeat"), &isnull));
	m->session_timeout = *DatumGetIntervalP(slot_getattr(gs->slot, el_group_attnum(gs->rel, "session_timeout"), &isnull));
	d = slot_getattr(gs->slot, el_group_attnum(gs->rel, "session"), &isnull);
	m->session = isnull ? NULL : TextDatumGetCString(d);
}

/* Every member of a group, in key order; returns how many. */
int
el_group_members(int32 topic_id, const char *group, Snapshot snapshot,
				 ElGroupMember **members)
{
	ElGroupScan gs;
	int			n = 0;
	int			size = 4;

	*members = palloc(sizeof(ElGroupMember) * size);
	el_group_scan_begin(&gs, "group_members", snapshot, topic_id, group, NULL, 0);
	while (el_group_scan_next(&gs))
	{
		if (n == size)
		{
			size *= 2;
			*members = repalloc(*members, sizeof(ElGroupMember) * size);
		}
		el_member_fetch(&gs, &(*members)[n++]);
	}
	el_group_scan_end(&gs);
	return n;
}

/* One member of a group, if it is in it. */
bool
el_group_member(int32 topic_id, const char *group, const char *member,
				Snapshot snapshot, ElGroupMember *out)
{
	ElGroupScan gs;
	bool		found;

	el_group_scan_begin(&gs, "group_members", snapshot, topic_id, group,
						"member", CStringGetTextDatum(member));
	found = el_group_scan_next(&gs);
	if (found && out)
		el_member_fetch(&gs, out);
	el_group_scan_end(&gs);
	return found;
}

static ElGroupFrom
el_from_value(TupleTableSlot *slot, AttrNumber attnum)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, attnum, &isnull);
	char	   *s;

	if (isnull)
		return EL_FROM_NONE;
	s = TextDatumGetCString(d);
	/* The table's CHECK constraints allow nothing else. */
	return strcmp(s, "latest") == 0 ? EL_FROM_LATEST : EL_FROM_EARLIEST;
}

/* A group's settings; without a group_catalog row, EL_FROM_NONE for both. */
void
el_group_settings(int32 topic_id, const char *group, Snapshot snapshot,
				  ElGroupSettings *out)
{
	ElGroupScan gs;

	out->start_from = EL_FROM_NONE;
	out->auto_reset = EL_FROM_NONE;
	el_group_scan_begin(&gs, "group_catalog", snapshot, topic_id, group, NULL, 0);
	if (el_group_scan_next(&gs))
	{
		out->start_from = el_from_value(gs.slot, el_group_attnum(gs.rel, "start_from"));
		out->auto_reset = el_from_value(gs.slot, el_group_attnum(gs.rel, "auto_reset"));
	}
	el_group_scan_end(&gs);
}

static bool
el_group_any_row(const char *relname, int32 topic_id, const char *group,
				 Snapshot snapshot)
{
	ElGroupScan gs;
	bool		found;

	el_group_scan_begin(&gs, relname, snapshot, topic_id, group, NULL, 0);
	found = el_group_scan_next(&gs);
	el_group_scan_end(&gs);
	return found;
}

/* Whether a group has members in "snapshot". */
bool
el_group_has_members(int32 topic_id, const char *group, Snapshot snapshot)
{
	return el_group_any_row("group_members", topic_id, group, snapshot);
}

/*
 * Whether a group has settings, positions or members in "snapshot".  The
 * settings first: a group made by create_group is found there without
 * walking the versions every poll leaves of its position rows.
 */
bool
el_group_exists(int32 topic_id, const char *group, Snapshot snapshot)
{
	return el_group_any_row("group_catalog", topic_id, group, snapshot) ||
		el_group_any_row("group_offsets", topic_id, group, snapshot) ||
		el_group_any_row("group_members", topic_id, group, snapshot);
}
