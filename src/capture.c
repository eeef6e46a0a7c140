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
 * where a row image is row_to_json() of the row (so the envelope follows
 * ALTER TABLE: it is always the row's current shape).  The record's key is
 * the compact JSON object of the key columns, e.g. {"id":1}, as Debezium's
 * key payload, and is hashed like any key: all changes of one row go to one
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
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "segment.h"

PG_FUNCTION_INFO_V1(el_capture_trigger);
PG_FUNCTION_INFO_V1(el_capture_snapshot);

/* What one change needs to be described. */
typedef struct ElCapture
{
	Relation	rel;
	text	   *topic;
	int			nkeys;
	char	  **key_names;
	char	   *dbname;
	char	   *schema;
	char	   *table;
} ElCapture;

/* row_to_json() of a row of the captured table, as text. */
static char *
el_row_json(ElCapture *cap, HeapTuple tuple)
{
	Datum		row = heap_copy_tuple_as_datum(tuple, RelationGetDescr(cap->rel));

	return text_to_cstring(DatumGetTextPP(DirectFunctionCall1(row_to_json, row)));
}

static int64
el_epoch_ms(TimestampTz ts)
{
	return ts / 1000 +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
}

/*
 * The compact JSON key of a row image in "env" ("before" or "after"):
 * {"col":value,...} in the key columns' order.
 */
static text *
el_envelope_key(ElCapture *cap, Jsonb *env, const char *image)
{
	JsonbValue	k;
	JsonbValue *row;
	StringInfoData buf;
	int			i;

	k.type = jbvString;
	k.val.string.val = (char *) image;
	k.val.string.len = strlen(image);
	row = findJsonbValueFromContainer(&env->root, JB_FOBJECT, &k);
	if (row == NULL || row->type != jbvBinary)
		elog(ERROR, "change envelope has no \"%s\" row", image);

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (i = 0; i < cap->nkeys; i++)
	{
		JsonbValue *v;

		k.val.string.val = cap->key_names[i];
		k.val.string.len = strlen(cap->key_names[i]);
		v = findJsonbValueFromContainer(row->val.binary.data, JB_FOBJECT, &k);
		if (i > 0)
			appendStringInfoChar(&buf, ',');
		escape_json(&buf, cap->key_names[i]);
		appendStringInfoChar(&buf, ':');
		if (v == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column \"%s\" of captured table \"%s.%s\" does not exist",
							cap->key_names[i], cap->schema, cap->table),
					 errhint("Run eventlog.uncapture() and eventlog.capture() again with the table's current key.")));
		if (v->type == jbvBinary)
			(void) JsonbToCString(&buf, v->val.binary.data, v->val.binary.len);
		else
		{
			Jsonb	   *scalar = JsonbValueToJsonb(v);

			(void) JsonbToCString(&buf, &scalar->root, VARSIZE(scalar));
		}
	}
	appendStringInfoChar(&buf, '}');
	return cstring_to_text_with_len(buf.data, buf.len);
}

/* Produce one change envelope; "before"/"after" are row JSON or NULL. */
static void
el_capture_emit(ElCapture *cap, char op, const char *before, const char *after,
				const char *snapshot)
{
	StringInfoData buf;
	int64		now_ms = el_epoch_ms(GetCurrentTimestamp());
	TransactionId xid = GetTopTransactionIdIfAny();
	Jsonb	   *env;
	text	   *key;
	int32		partition;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"before\": %s, \"after\": %s, \"source\": {\"version\": \"%s\", "
					 "\"connector\": \"pg_eventlog\", \"name\": ",
					 before ? before : "null", after ? after : "null", EL_VERSION);
	escape_json(&buf, cap->dbname);
	appendStringInfo(&buf, ", \"ts_ms\": " INT64_FORMAT ", \"snapshot\": \"%s\", \"db\": ",
					 now_ms, snapshot);
	escape_json(&buf, cap->dbname);
	appendStringInfoString(&buf, ", \"schema\": ");
	escape_json(&buf, cap->schema);
	appendStringInfoString(&buf, ", \"table\": ");
	escape_json(&buf, cap->table);
	appendStringInfo(&buf, ", \"txId\": %u, \"lsn\": " UINT64_FORMAT "}, \"op\": \"%c\", "
					 "\"ts_ms\": " INT64_FORMAT "}",
					 xid, (uint64) GetXLogInsertRecPtr(), op, now_ms);
	env = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
	key = el_envelope_key(cap, env, op == 'd' ? "before" : "after");
	(void) el_produce_record(cap->topic, key, env, NULL, &partition);
}

static void
el_capture_describe(ElCapture *cap, Relation rel, const char *topic,
					int nkeys, char **key_names)
{
	cap->rel = rel;
	cap->topic = cstring_to_text(topic);
	cap->nkeys = nkeys;
	cap->key_names = key_names;
	cap->dbname = get_database_name(MyDatabaseId);
	cap->schema = get_namespace_name(RelationGetNamespace(rel));
	cap->table = RelationGetRelationName(rel);
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
	ElCapture	cap;
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

	el_capture_describe(&cap, td->tg_relation, tg->tgargs[0], tg->tgnargs - 1, &tg->tgargs[1]);

	if (TRIGGER_FIRED_BY_INSERT(ev))
		el_capture_emit(&cap, 'c', NULL, el_row_json(&cap, td->tg_trigtuple), "false");
	else if (TRIGGER_FIRED_BY_DELETE(ev))
		el_capture_emit(&cap, 'd', el_row_json(&cap, td->tg_trigtuple), NULL, "false");
	else if (TRIGGER_FIRED_BY_UPDATE(ev))
	{
		char	   *before = el_row_json(&cap, td->tg_trigtuple);
		char	   *after = el_row_json(&cap, td->tg_newtuple);
		StringInfoData both;
		Jsonb	   *env;
		text	   *old_key;
		text	   *new_key;

		/* Compare the keys of both images (one parse for both). */
		initStringInfo(&both);
		appendStringInfo(&both, "{\"before\": %s, \"after\": %s}", before, after);
		env = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(both.data)));
		old_key = el_envelope_key(&cap, env, "before");
		new_key = el_envelope_key(&cap, env, "after");
		if (VARSIZE_ANY_EXHDR(old_key) == VARSIZE_ANY_EXHDR(new_key) &&
			memcmp(VARDATA_ANY(old_key), VARDATA_ANY(new_key), VARSIZE_ANY_EXHDR(old_key)) == 0)
			el_capture_emit(&cap, 'u', before, after, "false");
		else
		{
			el_capture_emit(&cap, 'd', before, NULL, "false");
			el_capture_emit(&cap, 'c', NULL, after, "false");
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
		key_names[i] = TextDatumGetCString(key_datums[i]);

	rel = table_open(relid, AccessShareLock);
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(rel))));
	el_capture_describe(&cap, rel, topic, nkeys, key_names);
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
		el_capture_emit(&cap, 'r', NULL, el_row_json(&cap, tuple), "true");
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
		n++;
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	PG_RETURN_INT64(n);
}
