/*-------------------------------------------------------------------------
 *
 * capture_envelope.c
 *	  Change capture's values: the description of a captured table, built
 *	  once per statement, the row images, and the change envelope.
 *
 * The record's value is a change envelope in Debezium's shape:
 *	{"before": {...} | null, "after": {...} | null,
 *	 "source": {"version", "connector", "name", "ts_ms", "snapshot", "db",
 *				"schema", "table", "txId", "lsn"},
 *	 "op": "c" | "u" | "d" | "r", "ts_ms": ...}
 * where a row image is to_jsonb() of the row (so the envelope follows
 * ALTER TABLE: it is always the row's current shape).
 *
 * source.lsn is the WAL insert position when the change was captured (its
 * own WAL record is already written: the trigger runs AFTER the row
 * change), cheap to read and increasing within a transaction (see
 * el_change_lsn); source.ts_ms and ts_ms are the time of the change (a
 * trigger cannot know the commit time).  source.txId is the top-level
 * transaction ID.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "capture.h"

/* An FmgrInfo of to_jsonb(anyelement) for arguments of type "argtype". */
void
el_to_jsonb_info(FmgrInfo *finfo, Oid argtype, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);

	fmgr_info_cxt(F_TO_JSONB, finfo, cxt);
	finfo->fn_expr = (Node *) makeFuncExpr(F_TO_JSONB, JSONBOID,
										   list_make1(makeNullConst(argtype, -1, InvalidOid)),
										   InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	MemoryContextSwitchTo(old);
}

/*
 * Describe captured table "rel" for changes to "topic" keyed by
 * key_names[0..nkeys), in memory of "cxt".  Catalog look-ups only (the
 * type cache and syscaches), once per statement: never per row.
 */
void
el_capture_describe(ElCapture *cap, Relation rel, const char *topic, int nkeys,
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
	cap->key_forms = palloc(sizeof(ElKeyForm) * Max(nkeys, 1));
	cap->key_collations = palloc(sizeof(Oid) * Max(nkeys, 1));
	cap->key_eq = palloc0(sizeof(FmgrInfo) * Max(nkeys, 1));
	cap->key_to_jsonb = palloc0(sizeof(FmgrInfo) * Max(nkeys, 1));
	for (i = 0; i < nkeys; i++)
	{
		AttrNumber	attnum = InvalidAttrNumber;
		int			a;
		Form_pg_attribute att;
		ElKeyRefusal refusal;
		Oid			eq_func;

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
		att = TupleDescAttr(cap->tupdesc, attnum - 1);

		/*
		 * A key capture() would refuse now (it accepted any type before
		 * 0.3.0) is compared by image, as then: writes to the table must
		 * not start failing when the library is updated.
		 */
		cap->key_forms[i] = el_key_form(att, &refusal, &eq_func);
		cap->key_collations[i] = att->attcollation;
		if (el_key_by_equality(cap->key_forms[i]))
			fmgr_info_cxt(eq_func, &cap->key_eq[i], cxt);
		el_to_jsonb_info(&cap->key_to_jsonb[i], att->atttypid, cxt);
	}
	el_to_jsonb_info(&cap->row_to_jsonb, cap->tupdesc->tdtypeid, cxt);
	cap->dbname = get_database_name(MyDatabaseId);
	cap->schema = get_namespace_name(RelationGetNamespace(rel));
	cap->table = pstrdup(RelationGetRelationName(rel));
	MemoryContextSwitchTo(old);
}

/*
 * to_jsonb() of a row of the captured table.  Floats are written with
 * their shortest exact digits even when the writing session lowered
 * extra_float_digits below 1, which would round them (0.30000000000000004
 * as 0.3): a mirror must get the value the source has.
 */
Jsonb *
el_row_jsonb(ElCapture *cap, HeapTuple tuple)
{
	Datum		row = heap_copy_tuple_as_datum(tuple, cap->tupdesc);
	int			saved = extra_float_digits;
	Datum		result;

	if (saved >= 1)
		return DatumGetJsonbP(FunctionCall1(&cap->row_to_jsonb, row));
	extra_float_digits = 1;
	PG_TRY();
	{
		result = FunctionCall1(&cap->row_to_jsonb, row);
	}
	PG_FINALLY();
	{
		extra_float_digits = saved;
	}
	PG_END_TRY();
	return DatumGetJsonbP(result);
}

static int64
el_epoch_ms(TimestampTz ts)
{
	return ts / 1000 +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
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

/*
 * source.lsn of a change captured now: the WAL insert position, or one
 * more than the last change's of this transaction if WAL has not moved
 * since.  A statement's changes are buffered and produced together
 * (capture_batch.c), so no WAL is written between two of them: without
 * this, consecutive changes would share one position, where consumers
 * expect them to increase within a transaction, as they did when each
 * change was produced at once.
 */
static int64
el_change_lsn(void)
{
	static TransactionId last_xid = InvalidTransactionId;
	static XLogRecPtr last_lsn = InvalidXLogRecPtr;
	TransactionId xid = GetTopTransactionIdIfAny();
	XLogRecPtr	lsn = GetXLogInsertRecPtr();

	if (xid == last_xid && lsn <= last_lsn)
		lsn = last_lsn + 1;
	last_xid = xid;
	last_lsn = lsn;
	return (int64) lsn;
}

/*
 * The change envelope of one change (see the top of this file), in the
 * current memory context.
 */
Jsonb *
el_capture_envelope(ElCapture *cap, char op, Jsonb *before, Jsonb *after,
					bool snapshot)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;
	int64		now_ms = el_epoch_ms(GetCurrentTimestamp());
	char		opstr[2] = {op, '\0'};

	(void) pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	el_push_row(&st, "before", before);
	el_push_row(&st, "after", after);
	el_push_key(&st, "source");
	(void) pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	el_push_string(&st, "version", EL_VERSION);
	el_push_string(&st, "connector", "pg_eventlog");
	el_push_string(&st, "name", cap->dbname);
	el_push_int8(&st, "ts_ms", now_ms);
	el_push_string(&st, "snapshot", snapshot ? "true" : "false");
	el_push_string(&st, "db", cap->dbname);
	el_push_string(&st, "schema", cap->schema);
	el_push_string(&st, "table", cap->table);
	el_push_int8(&st, "txId", (int64) GetTopTransactionIdIfAny());
	el_push_int8(&st, "lsn", el_change_lsn());
	(void) pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	el_push_string(&st, "op", opstr);
	el_push_int8(&st, "ts_ms", now_ms);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}
