/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  Change capture: the row trigger eventlog.capture() puts on a table,
 *	  and the snapshot of its existing rows.  Each row change becomes one
 *	  record, produced in the writing transaction, so a change is in the
 *	  topic if and only if it committed.
 *
 * The record's value is a change envelope in Debezium's shape:
 *	{"before": {...} | null, "after": {...} | null,
 *	 "source": {"version", "connector", "name", "ts_ms", "snapshot", "db",
 *				"schema", "table", "txId", "lsn"},
 *	 "op": "c" | "u" | "d" | "r", "ts_ms": ...}
 * where a row image is to_jsonb() of the row (so the envelope follows
 * ALTER TABLE: it is always the row's current shape).  The record's key is
 * the compact JSON object of the key columns (to_jsonb() of each value),
 * e.g. {"id":1}, as Debezium's key payload, and is hashed like any key: all changes of one row go to one
 * partition, in order.  An UPDATE that changes the key produces a delete
 * under the old key and a create under the new one, as Debezium does.
 *
 * source.lsn is the WAL insert position when the change was captured (its
 * own WAL record is already written: the trigger runs AFTER the row
 * change), cheap to read and increasing within a transaction; source.ts_ms
 * and ts_ms are the time of the change (a trigger cannot know the commit
 * time).  source.txId is the top-level transaction ID.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "segment.h"

PG_FUNCTION_INFO_V1(el_capture_trigger);
PG_FUNCTION_INFO_V1(el_capture_snapshot);

/*
 * What describing a change of one table needs, built once per statement
 * (cached in the trigger's fn_extra) or per snapshot.  Rows and key values
 * become jsonb through to_jsonb(), called with an expression that tells it
 * the argument's type: no JSON text is printed or parsed per row.
 */
typedef struct ElCapture
{
	Oid			relid;
	TupleDesc	tupdesc;
	text	   *topic;
	int			nkeys;
	char	  **key_names;
	AttrNumber *key_attnums;
	FmgrInfo   *key_to_jsonb;	/* [nkeys] */
	FmgrInfo	row_to_jsonb;
	char	   *dbname;
	char	   *schema;
	char	   *table;
} ElCapture;

/* An FmgrInfo of to_jsonb(anyelement) for arguments of type "argtype". */
static void
el_to_jsonb_info(FmgrInfo *finfo, Oid argtype, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);

	fmgr_info_cxt(F_TO_JSONB, finfo, cxt);
	finfo->fn_expr = (Node *) makeFuncExpr(F_TO_JSONB, JSONBOID,
										   list_make1(makeNullConst(argtype, -1, InvalidOid)),
										   InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	MemoryContextSwitchTo(old);
}

static void
el_capture_init(ElCapture *cap, Relation rel, const char *topic, int nkeys,
				char **key_names, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	int			i;

	cap->relid = RelationGetRelid(rel);
	cap->tupdesc = CreateTupleDescCopy(RelationGetDescr(rel));
	cap->topic = cstring_to_text(topic);
	cap->nkeys = nkeys;
	cap->key_names = palloc(sizeof(char *) * Max(nkeys, 1));
	cap->key_attnums = palloc(sizeof(AttrNumber) * Max(nkeys, 1));
	cap->key_to_jsonb = palloc0(sizeof(FmgrInfo) * Max(nkeys, 1));
	for (i = 0; i < nkeys; i++)
	{
		AttrNumber	attnum = InvalidAttrNumber;
		int			a;

		cap->key_names[i] = pstrdup(key_names[i]);
		for (a = 0; a < cap->tupdesc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(cap->tupdesc, a);

			if (!att->attisdropped && strcmp(NameStr(att->attname), key_names[i]) == 0)
				attnum = att->attnum;
		}
		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column \"%s\" of captured table \"%s\" does not exist",
							key_names[i], RelationGetRelationName(rel)),
					 errhint("Run eventlog.uncapture() and eventlog.capture() again with the table's current key.")));
		cap->key_attnums[i] = attnum;
		el_to_jsonb_info(&cap->key_to_jsonb[i],
						 TupleDescAttr(cap->tupdesc, attnum - 1)->atttypid, cxt);
	}
	el_to_jsonb_info(&cap->row_to_jsonb, cap->tupdesc->tdtypeid, cxt);
	cap->dbname = get_database_name(MyDatabaseId);
	cap->schema = get_namespace_name(RelationGetNamespace(rel));
	cap->table = pstrdup(RelationGetRelationName(rel));
	MemoryContextSwitchTo(old);
}

/* to_jsonb() of a row of the captured table. */
static Jsonb *
el_row_jsonb(ElCapture *cap, HeapTuple tuple)
{
	Datum		row = heap_copy_tuple_as_datum(tuple, cap->tupdesc);

	return DatumGetJsonbP(FunctionCall1(&cap->row_to_jsonb, row));
}

static int64
el_epoch_ms(TimestampTz ts)
{
	return ts / 1000 +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
}

/* The compact JSON key of a row: {"col":value,...} in key column order. */
static text *
el_row_key(ElCapture *cap, HeapTuple tuple)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (i = 0; i < cap->nkeys; i++)
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, cap->key_attnums[i], cap->tupdesc, &isnull);

		if (i > 0)
			appendStringInfoChar(&buf, ',');
		escape_json(&buf, cap->key_names[i]);
		appendStringInfoChar(&buf, ':');
		if (isnull)
			appendStringInfoString(&buf, "null");
		else
		{
			Jsonb	   *jb = DatumGetJsonbP(FunctionCall1(&cap->key_to_jsonb[i], d));

			(void) JsonbToCString(&buf, &jb->root, VARSIZE(jb));
		}
	}
	appendStringInfoChar(&buf, '}');
	return cstring_to_text_with_len(buf.data, buf.len);
}

/* Whether two row versions have the same key (by the stored image). */
static bool
el_same_key(ElCapture *cap, HeapTuple a, HeapTuple b)
{
	int			i;

	for (i = 0; i < cap->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(cap->tupdesc, cap->key_attnums[i] - 1);
		bool		null_a;
		bool		null_b;
		Datum		da = heap_getattr(a, cap->key_attnums[i], cap->tupdesc, &null_a);
		Datum		db = heap_getattr(b, cap->key_attnums[i], cap->tupdesc, &null_b);

		if (null_a != null_b)
			return false;
		if (!null_a && !datum_image_eq(da, db, att->attbyval, att->attlen))
			return false;
	}
	return true;
}

static void
el_push_key(JsonbParseState **st, const char *key)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) key;
	v.val.string.len = strlen(key);
	(void) pushJsonbValue(st, WJB_KEY, &v);
}

static void
el_push_string(JsonbParseState **st, const char *key, const char *value)
{
	JsonbValue	v;

	el_push_key(st, key);
	v.type = jbvString;
	v.val.string.val = (char *) value;
	v.val.string.len = strlen(value);
	(void) pushJsonbValue(st, WJB_VALUE, &v);
}

static void
el_push_int8(JsonbParseState **st, const char *key, int64 value)
{
	JsonbValue	v;

	el_push_key(st, key);
	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall1(int8_numeric, Int64GetDatum(value)));
	(void) pushJsonbValue(st, WJB_VALUE, &v);
}

static void
el_push_row(JsonbParseState **st, const char *key, Jsonb *row)
{
	JsonbValue	v;

	el_push_key(st, key);
	if (row == NULL)
		v.type = jbvNull;
	else
	{
		v.type = jbvBinary;
		v.val.binary.data = &row->root;
		v.val.binary.len = VARSIZE(row) - VARHDRSZ;
	}
	(void) pushJsonbValue(st, WJB_VALUE, &v);
}

/* Produce one change envelope under "key". */
static void
el_capture_emit(ElCapture *cap, char op, Jsonb *before, Jsonb *after,
				text *key, const char *snapshot)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;
	int64		now_ms = el_epoch_ms(GetCurrentTimestamp());
	char		opstr[2] = {op, '\0'};
	int32		partition;

	(void) pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	el_push_row(&st, "before", before);
	el_push_row(&st, "after", after);
	el_push_key(&st, "source");
	(void) pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	el_push_string(&st, "version", EL_VERSION);
	el_push_string(&st, "connector", "pg_eventlog");
	el_push_string(&st, "name", cap->dbname);
	el_push_int8(&st, "ts_ms", now_ms);
	el_push_string(&st, "snapshot", snapshot);
	el_push_string(&st, "db", cap->dbname);
	el_push_string(&st, "schema", cap->schema);
	el_push_string(&st, "table", cap->table);
	el_push_int8(&st, "txId", (int64) GetTopTransactionIdIfAny());
	el_push_int8(&st, "lsn", (int64) GetXLogInsertRecPtr());
	(void) pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	el_push_string(&st, "op", opstr);
	el_push_int8(&st, "ts_ms", now_ms);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);

	(void) el_produce_record(cap->topic, key, JsonbValueToJsonb(res), NULL, &partition);
}

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
				 errmsg("eventlog._capture_trigger() must be called as a trigger")));
	ev = td->tg_event;
	tg = td->tg_trigger;
	if (!TRIGGER_FIRED_AFTER(ev) || !TRIGGER_FIRED_FOR_ROW(ev) || tg->tgnargs < 2)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("eventlog._capture_trigger() must fire AFTER each row, with a topic and key columns as arguments"),
				 errhint("Use eventlog.capture() to capture a table.")));

	/*
	 * The table's description, built once per statement: its shape cannot
	 * change within one (ALTER TABLE waits for the statement's lock).
	 */
	cap = (ElCapture *) fcinfo->flinfo->fn_extra;
	if (cap == NULL || cap->relid != RelationGetRelid(td->tg_relation) ||
		cap->tupdesc->natts != RelationGetDescr(td->tg_relation)->natts)
	{
		cap = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ElCapture));
		el_capture_init(cap, td->tg_relation, tg->tgargs[0], tg->tgnargs - 1,
						&tg->tgargs[1], fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = cap;
	}

	if (TRIGGER_FIRED_BY_INSERT(ev))
		el_capture_emit(cap, 'c', NULL, el_row_jsonb(cap, td->tg_trigtuple),
						el_row_key(cap, td->tg_trigtuple), "false");
	else if (TRIGGER_FIRED_BY_DELETE(ev))
		el_capture_emit(cap, 'd', el_row_jsonb(cap, td->tg_trigtuple), NULL,
						el_row_key(cap, td->tg_trigtuple), "false");
	else if (TRIGGER_FIRED_BY_UPDATE(ev))
	{
		Jsonb	   *before = el_row_jsonb(cap, td->tg_trigtuple);
		Jsonb	   *after = el_row_jsonb(cap, td->tg_newtuple);

		if (el_same_key(cap, td->tg_trigtuple, td->tg_newtuple))
			el_capture_emit(cap, 'u', before, after, el_row_key(cap, td->tg_newtuple), "false");
		else
		{
			el_capture_emit(cap, 'd', before, NULL, el_row_key(cap, td->tg_trigtuple), "false");
			el_capture_emit(cap, 'c', NULL, after, el_row_key(cap, td->tg_newtuple), "false");
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
	el_capture_init(&cap, rel, topic, nkeys, key_names, CurrentMemoryContext);
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
		el_capture_emit(&cap, 'r', NULL, el_row_jsonb(&cap, tuple), el_row_key(&cap, tuple), "true");
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
		n++;
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	PG_RETURN_INT64(n);
}
