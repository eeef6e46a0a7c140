/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  Change capture's entry points: the row trigger eventlog.capture()
 *	  puts on a table, and the snapshot of its existing rows.  Each row
 *	  change becomes one record, produced in the writing transaction, so a
 *	  change is in the topic if and only if it committed.
 *
 * The trigger describes the table once per statement (capture_envelope.c),
 * builds each change's key (capture_keys.c) and envelope, and hands the
 * change to the statement's batch (capture_batch.c), which produces the
 * statement's changes together, per partition, in the order they fired.
 * The ALTER TABLE guard on captured keys is in capture_ddl.c.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "capture.h"

PG_FUNCTION_INFO_V1(el_capture_trigger);
PG_FUNCTION_INFO_V1(el_capture_snapshot);

/*
 * eventlog._capture_trigger(): AFTER INSERT OR UPDATE OR DELETE, FOR EACH
 * ROW, with arguments (topic, key column, ...).
 */
Datum
el_capture_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	Trigger    *tg;
	ElCapture  *cap;
	TriggerEvent ev;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" was not called by trigger manager",
						"eventlog._capture_trigger")));
	ev = td->tg_event;
	tg = td->tg_trigger;
	if (!TRIGGER_FIRED_AFTER(ev) || !TRIGGER_FIRED_FOR_ROW(ev) || tg->tgnargs < 2)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("trigger \"%s\" of table \"%s\" is not a capture trigger",
						tg->tgname, RelationGetRelationName(td->tg_relation)),
				 errdetail("The capture trigger function fires AFTER each row, with a topic and the key columns as arguments."),
				 errhint("Use eventlog.capture to capture a table.")));

	/*
	 * The table's description, built once per statement: its shape cannot
	 * change within one (ALTER TABLE waits for the statement's lock).
	 */
	cap = (ElCapture *) fcinfo->flinfo->fn_extra;
	if (cap == NULL || cap->relid != RelationGetRelid(td->tg_relation) ||
		cap->tupdesc->natts != RelationGetDescr(td->tg_relation)->natts)
	{
		cap = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ElCapture));
		el_capture_describe(cap, td->tg_relation, tg->tgargs[0], tg->tgnargs - 1,
							&tg->tgargs[1], fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = cap;
	}

	/* Buffered, and produced with the statement's other changes. */
	if (TRIGGER_FIRED_BY_INSERT(ev))
		el_capture_change(cap, 'c', NULL, td->tg_trigtuple,
						  el_row_key(cap, td->tg_trigtuple), false);
	else if (TRIGGER_FIRED_BY_DELETE(ev))
		el_capture_change(cap, 'd', td->tg_trigtuple, NULL,
						  el_row_key(cap, td->tg_trigtuple), false);
	else if (TRIGGER_FIRED_BY_UPDATE(ev))
	{
		HeapTuple	before = td->tg_trigtuple;
		HeapTuple	after = td->tg_newtuple;

		if (el_same_key(cap, before, after))
			el_capture_change(cap, 'u', before, after, el_row_key(cap, after), false);
		else
		{
			el_capture_change(cap, 'd', before, NULL, el_row_key(cap, before), false);
			el_capture_change(cap, 'c', NULL, after, el_row_key(cap, after), false);
		}
	}
	return PointerGetDatum(NULL);
}

/*
 * eventlog._capture_snapshot(source regclass, topic text, key_columns
 * text[]) -> bigint: every row of the table, as "r" records, read with the
 * caller's snapshot.  eventlog.capture() calls it in the transaction that
 * creates the trigger, holding a lock that keeps writers out, so the
 * snapshot and the stream that follows neither miss nor repeat a change.
 */
Datum
el_capture_snapshot(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *topic = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ArrayType  *keys_arr = PG_GETARG_ARRAYTYPE_P(2);
	Datum	   *key_datums;
	bool	   *key_nulls;
	int			nkeys;
	char	  **key_names;
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	MemoryContext row_cxt;
	MemoryContext old;
	ElCapture	cap;
	int64		n = 0;
	int			i;

	deconstruct_array(keys_arr, TEXTOID, -1, false, TYPALIGN_INT, &key_datums, &key_nulls, &nkeys);
	key_names = palloc(sizeof(char *) * Max(nkeys, 1));
	for (i = 0; i < nkeys; i++)
	{
		if (key_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key_columns must not contain nulls")));
		key_names[i] = TextDatumGetCString(key_datums[i]);
	}
	/* A snapshot taken before the caller locked the table could miss commits. */
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("capture with snapshot needs READ COMMITTED")));

	rel = table_open(relid, AccessShareLock);
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read table \"%s\"", RelationGetRelationName(rel)),
				 errdetail("A snapshot of a captured table produces all its rows.")));
	/* The snapshot scans the heap: it would not apply row security. */
	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot snapshot table \"%s\", which has row-level security for this role",
						RelationGetRelationName(rel)),
				 errdetail("A snapshot produces every row of the table, including rows the role's policies hide."),
				 errhint("Take the snapshot as a role that bypasses row-level security (BYPASSRLS), or capture without a snapshot.")));
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(rel))));
	el_capture_describe(&cap, rel, topic, nkeys, key_names, CurrentMemoryContext);
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_eventlog capture snapshot row",
									ALLOCSET_DEFAULT_SIZES);
	slot = table_slot_create(rel, NULL);
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		should_free;
		HeapTuple	tuple;

		CHECK_FOR_INTERRUPTS();
		old = MemoryContextSwitchTo(row_cxt);
		tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
		el_capture_change(&cap, 'r', NULL, tuple, el_row_key(&cap, tuple), true);
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
		n++;
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	/* capture() calls this in an expression: no statement's end flushes. */
	el_capture_flush();
	PG_RETURN_INT64(n);
}
