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
 * the compact JSON object of the key columns, e.g. {"id":1}, as Debezium's
 * key payload, and is hashed like any key: all changes of one row go to one
 * partition, in order.  An UPDATE that changes the key produces a delete
 * under the old key and a create under the new one, as Debezium does.
 *
 * "Changes the key" means by the type's equality (its default btree
 * operator class, under the column's collation), not by the stored bytes,
 * and each key value is written in one canonical text: numeric 1 and 1.00,
 * citext 'a' and 'A', float 0 and -0 are one key, one key text, so one
 * partition.  Were they not, an UPDATE from 1 to 1.00 would become a delete
 * and a create under two keys in two partitions, which a consumer (e.g.
 * apply_changes) may apply in either order, losing the row.  el_key_form()
 * says, per key column, how: by image where the btree "equalimage" support
 * function promises that equality is image equality, else by a canonical
 * form this file knows (numeric, float4/8, citext, unpadded bpchar).  Keys
 * with neither (nondeterministic collations, interval, jsonb, arrays, ...)
 * are refused by capture(), and by ALTER TABLE on a captured table (the
 * ProcessUtility hook calls el_capture_before_alter/_after_alter); a table
 * captured before 0.3.0 keeps working with them, compared by image as
 * before.
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

#include <math.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/nbtree.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
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
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/formatting.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "segment.h"

PG_FUNCTION_INFO_V1(el_capture_trigger);
PG_FUNCTION_INFO_V1(el_capture_snapshot);
PG_FUNCTION_INFO_V1(el_capture_check_keys);

/*
 * How a key column's values are compared (is an UPDATE a "u", or a "d" and
 * a "c"?) and written in the record's key.
 */
typedef enum ElKeyForm
{
	EL_KEY_IMAGE,				/* equal iff same image; to_jsonb() text */
	EL_KEY_TIMESTAMPTZ,			/* by image; text in UTC, whatever TimeZone */
	EL_KEY_BYTEA,				/* by image; hex text, whatever bytea_output */
	EL_KEY_NUMERIC,				/* by equality; text of trim_scale() */
	EL_KEY_FLOAT4,				/* by equality; shortest exact digits, -0 as 0 */
	EL_KEY_FLOAT8,
	EL_KEY_CITEXT,				/* by equality; lower() as citext's equality does */
	EL_KEY_BPCHAR,				/* by equality; trailing blanks removed */
	EL_KEY_IMAGE_INEXACT		/* no canonical form (capture() refuses it) */
} ElKeyForm;

/* Why capture() refuses a key column (EL_KEY_IMAGE_INEXACT). */
typedef enum ElKeyRefusal
{
	EL_KEY_OK,
	EL_KEY_NONDETERMINISTIC,
	EL_KEY_NO_EQUALITY,
	EL_KEY_NO_CANONICAL_FORM
} ElKeyRefusal;

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
	ElKeyForm  *key_forms;		/* [nkeys] */
	Oid		   *key_collations; /* [nkeys] */
	FmgrInfo   *key_eq;			/* [nkeys], for the forms compared by equality */
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

/* Whether keys of this form are compared by the type's equality function. */
static inline bool
el_key_by_equality(ElKeyForm form)
{
	return form == EL_KEY_NUMERIC || form == EL_KEY_FLOAT4 || form == EL_KEY_FLOAT8 ||
		form == EL_KEY_CITEXT || form == EL_KEY_BPCHAR;
}

/*
 * Whether "funcid" is citext's equality function (the citext extension's
 * citext_eq, whatever schema the extension is in).
 */
static bool
el_is_citext_eq(Oid funcid)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	bool		result = false;

	if (HeapTupleIsValid(tup))
	{
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tup);
		bool		isnull;
		Datum		src;

		if (proc->prolang == ClanguageId)
		{
			src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
			result = !isnull && strcmp(TextDatumGetCString(src), "citext_eq") == 0;
		}
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * How values of key column "att" are compared and written (see the top of
 * this file), and through *refusal why capture() refuses it, if it does.
 * *eq_func is the type's equality function for the forms compared by
 * equality.  Catalog look-ups only (the type cache and syscaches), once per
 * statement: never per row.
 */
static ElKeyForm
el_key_form(Form_pg_attribute att, ElKeyRefusal *refusal, Oid *eq_func)
{
	int32		typmod = att->atttypmod;
	Oid			base = getBaseTypeAndTypmod(att->atttypid, &typmod);
	Oid			collation = att->attcollation;
	TypeCacheEntry *tc;
	Oid			equalimage;

	*refusal = EL_KEY_OK;
	*eq_func = InvalidOid;

	/*
	 * Under a nondeterministic collation, equal strings differ in their
	 * bytes, and no text is the canonical one of its class (the ICU sort
	 * key is canonical but is not a value of the column, which a consumer
	 * must be able to look the row up by).
	 */
	if (OidIsValid(collation) && !get_collation_isdeterministic(collation))
	{
		*refusal = EL_KEY_NONDETERMINISTIC;
		return EL_KEY_IMAGE_INEXACT;
	}
	tc = lookup_type_cache(base, TYPECACHE_BTREE_OPFAMILY | TYPECACHE_EQ_OPR);
	if (!OidIsValid(tc->btree_opf) || !OidIsValid(tc->eq_opr))
	{
		*refusal = EL_KEY_NO_EQUALITY;
		return EL_KEY_IMAGE_INEXACT;
	}
	*eq_func = get_opcode(tc->eq_opr);
	switch (base)
	{
		case NUMERICOID:
			return EL_KEY_NUMERIC;
		case FLOAT4OID:
			return EL_KEY_FLOAT4;
		case FLOAT8OID:
			return EL_KEY_FLOAT8;
		case TIMESTAMPTZOID:
			return EL_KEY_TIMESTAMPTZ;
		case BYTEAOID:
			return EL_KEY_BYTEA;
		case BPCHAROID:

			/*
			 * char(n) pads every value to n characters, so equal values
			 * have one image; unconstrained bpchar keeps trailing blanks,
			 * which its equality ignores (although its opclass claims
			 * equalimage).
			 */
			return typmod >= 0 ? EL_KEY_IMAGE : EL_KEY_BPCHAR;
		case CASHOID:
			/* Equal by image, but the text follows lc_monetary. */
			*refusal = EL_KEY_NO_CANONICAL_FORM;
			return EL_KEY_IMAGE_INEXACT;
		default:
			break;
	}

	/*
	 * The OID alias types (regclass, regtype, regrole, ...) borrow oid's
	 * operator class (no other built-in type does: integer has its own), so
	 * they pass as equal by image; but their text is the object's name as
	 * the session's search_path qualifies it, and follows renames: one key
	 * would go out as "s.x" from one session and as "x" from another, to two
	 * partitions.
	 */
	if (base != OIDOID && tc->btree_opintype == OIDOID)
	{
		*refusal = EL_KEY_NO_CANONICAL_FORM;
		return EL_KEY_IMAGE_INEXACT;
	}
	if (el_is_citext_eq(*eq_func))
		return EL_KEY_CITEXT;
	equalimage = get_opfamily_proc(tc->btree_opf, tc->btree_opintype, tc->btree_opintype,
								   BTEQUALIMAGE_PROC);
	if (OidIsValid(equalimage) &&
		DatumGetBool(OidFunctionCall1Coll(equalimage, collation,
										  ObjectIdGetDatum(tc->btree_opintype))))
		return EL_KEY_IMAGE;
	*refusal = EL_KEY_NO_CANONICAL_FORM;
	return EL_KEY_IMAGE_INEXACT;
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
static Jsonb *
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

/*
 * A float key value as JSON: the shortest digits that read back exactly
 * (what to_jsonb() writes with the default extra_float_digits, which a
 * session may lower until distinct values print alike), through numeric
 * as to_jsonb() does, so -0 is 0; NaN and infinities as to_jsonb()'s
 * strings.
 */
static void
el_append_float_key(StringInfo buf, double value, bool is_float4)
{
	char		digits[32];

	if (isnan(value))
		appendStringInfoString(buf, "\"NaN\"");
	else if (isinf(value))
		appendStringInfoString(buf, value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	else
	{
		if (is_float4)
			(void) float_to_shortest_decimal_buf((float) value, digits);
		else
			(void) double_to_shortest_decimal_buf(value, digits);
		appendStringInfoString(buf,
							   DatumGetCString(DirectFunctionCall1(numeric_out,
																   DirectFunctionCall3(numeric_in,
																					   CStringGetDatum(digits),
																					   ObjectIdGetDatum(InvalidOid),
																					   Int32GetDatum(-1)))));
	}
}

/* One key value, not null, as canonical JSON (see ElKeyForm). */
static void
el_append_key_value(ElCapture *cap, int i, StringInfo buf, Datum d)
{
	Jsonb	   *jb;

	switch (cap->key_forms[i])
	{
		case EL_KEY_NUMERIC:
			d = DirectFunctionCall1(numeric_trim_scale, d);
			break;
		case EL_KEY_FLOAT4:
			el_append_float_key(buf, DatumGetFloat4(d), true);
			return;
		case EL_KEY_FLOAT8:
			el_append_float_key(buf, DatumGetFloat8(d), false);
			return;
		case EL_KEY_CITEXT:
			{
				text	   *t = DatumGetTextPP(d);

				/* What citext_eq() compares (PostgreSQL's contrib/citext/citext.c). */
				escape_json(buf, str_tolower(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t),
											 DEFAULT_COLLATION_OID));
				return;
			}
		case EL_KEY_BPCHAR:
			{
				char	   *str = TextDatumGetCString(d);
				size_t		len = strlen(str);

				while (len > 0 && str[len - 1] == ' ')
					len--;
				str[len] = '\0';
				escape_json(buf, str);
				return;
			}
		case EL_KEY_TIMESTAMPTZ:
			{
				int			utc = 0;

				escape_json(buf, JsonEncodeDateTime(NULL, d, TIMESTAMPTZOID, &utc));
				return;
			}
		case EL_KEY_BYTEA:
			{
				bytea	   *b = DatumGetByteaPP(d);
				const unsigned char *p = (const unsigned char *) VARDATA_ANY(b);
				size_t		len = VARSIZE_ANY_EXHDR(b);
				StringInfoData hex;
				size_t		k;

				initStringInfo(&hex);
				appendStringInfoString(&hex, "\\x");
				for (k = 0; k < len; k++)
					appendStringInfo(&hex, "%02x", p[k]);
				escape_json(buf, hex.data);
				return;
			}
		case EL_KEY_IMAGE:
		case EL_KEY_IMAGE_INEXACT:
			break;
	}
	jb = DatumGetJsonbP(FunctionCall1(&cap->key_to_jsonb[i], d));
	(void) JsonbToCString(buf, &jb->root, VARSIZE(jb));
}

/*
 * The compact JSON key of a row: {"col":value,...} in key column order,
 * one text for all values equal under the key types' equality.
 */
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
			el_append_key_value(cap, i, &buf, d);
	}
	appendStringInfoChar(&buf, '}');
	return cstring_to_text_with_len(buf.data, buf.len);
}

/*
 * Whether two row versions have the same key: by the type's equality
 * (under the column's collation), which for the image forms is image
 * equality.
 */
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
		if (null_a)
			continue;
		if (el_key_by_equality(cap->key_forms[i]))
		{
			if (!DatumGetBool(FunctionCall2Coll(&cap->key_eq[i], cap->key_collations[i], da, db)))
				return false;
		}
		else if (!datum_image_eq(da, db, att->attbyval, att->attlen))
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

/*
 * eventlog._capture_check_keys(source regclass, key_columns text[]):
 * capture() calls it before it creates the trigger, once it holds its lock
 * on the table (so that no ALTER TABLE changes the key's type after the
 * check), to refuse key columns whose values change capture cannot compare
 * and write canonically (see el_key_form()): their changes could go out
 * under different key texts for one row, to different partitions, and be
 * applied out of order.  It reads the catalog only and takes no lock of
 * its own: anyone may call it, and a lock held by a role without
 * privileges must never stand in the way of DDL (a segment table's
 * retention, for one).
 */
Datum
el_capture_check_keys(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ArrayType  *keys_arr = PG_GETARG_ARRAYTYPE_P(1);
	Datum	   *key_datums;
	bool	   *key_nulls;
	int			nkeys;
	char	   *relname = get_rel_name(relid);
	int			i;

	if (relname == NULL)
		PG_RETURN_VOID();		/* dropped meanwhile: capture() reports it */
	deconstruct_array(keys_arr, TEXTOID, -1, false, TYPALIGN_INT, &key_datums, &key_nulls, &nkeys);
	for (i = 0; i < nkeys; i++)
	{
		char	   *name;
		HeapTuple	tup;
		Form_pg_attribute att;
		ElKeyRefusal refusal;
		Oid			eq_func;

		if (key_nulls[i])
			continue;			/* capture() reports it */
		name = TextDatumGetCString(key_datums[i]);
		tup = SearchSysCacheAttName(relid, name);
		if (!HeapTupleIsValid(tup))
			continue;			/* capture() reports it */
		att = (Form_pg_attribute) GETSTRUCT(tup);
		(void) el_key_form(att, &refusal, &eq_func);
		switch (refusal)
		{
			case EL_KEY_OK:
				break;
			case EL_KEY_NONDETERMINISTIC:
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot capture table \"%s\" keyed by column \"%s\", which has the nondeterministic collation \"%s\"",
								relname, name, get_collation_name(att->attcollation)),
						 errdetail("Values equal under a nondeterministic collation can differ in their text, and no canonical text is exactly the collation's equality: one row's changes could go out under different keys, to different partitions, and be applied out of order."),
						 errhint("Give the key column a deterministic collation, or key the capture by other columns with key_columns.")));
				break;
			case EL_KEY_NO_EQUALITY:
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot capture table \"%s\" keyed by column \"%s\" of type %s",
								relname, name, format_type_be(att->atttypid)),
						 errdetail("The type has no default btree operator class, so change capture cannot tell whether two keys are equal."),
						 errhint("Key the capture by columns of another type with key_columns; docs/capture.md lists the accepted types.")));
				break;
			case EL_KEY_NO_CANONICAL_FORM:
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot capture table \"%s\" keyed by column \"%s\" of type %s",
								relname, name, format_type_be(att->atttypid)),
						 errdetail("Equal values of this type do not always have the same text, and change capture has no canonical text for it: one row's changes could go out under different keys, to different partitions, and be applied out of order."),
						 errhint("Key the capture by columns of another type with key_columns; docs/capture.md lists the accepted types.")));
				break;
		}
		ReleaseSysCache(tup);
	}
	PG_RETURN_VOID();
}

/*
 * The key column names of "relid"'s capture trigger (eventlog_capture,
 * calling el_capture_trigger), or NIL if the table is not captured.  Reads
 * pg_trigger through its index, without locking the table: the ALTER TABLE
 * hook below calls it before ALTER TABLE has locked anything.
 */
static List *
el_captured_key_names(Oid relid)
{
	Relation	tgrel;
	ScanKeyData skey[2];
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *names = NIL;

	tgrel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyInit(&skey[0], Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&skey[1], Anum_pg_trigger_tgname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("eventlog_capture"));
	scan = systable_beginscan(tgrel, TriggerRelidNameIndexId, true, NULL, 2, skey);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Form_pg_trigger trig = (Form_pg_trigger) GETSTRUCT(tup);
		HeapTuple	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(trig->tgfoid));
		bool		is_capture = false;

		if (HeapTupleIsValid(proc))
		{
			bool		isnull;
			Datum		src = SysCacheGetAttr(PROCOID, proc, Anum_pg_proc_prosrc, &isnull);

			is_capture = ((Form_pg_proc) GETSTRUCT(proc))->prolang == ClanguageId &&
				!isnull && strcmp(TextDatumGetCString(src), "el_capture_trigger") == 0;
			ReleaseSysCache(proc);
		}
		if (is_capture && trig->tgnargs >= 2)
		{
			bool		isnull;
			Datum		args = heap_getattr(tup, Anum_pg_trigger_tgargs,
											RelationGetDescr(tgrel), &isnull);

			if (!isnull)
			{
				bytea	   *val = DatumGetByteaPP(args);
				char	   *p = VARDATA_ANY(val);
				char	   *end = p + VARSIZE_ANY_EXHDR(val);
				int			i;

				/* tgargs: the arguments, each ended by a NUL; skip the topic. */
				for (i = 0; i < trig->tgnargs && p < end; i++)
				{
					if (i > 0)
						names = lappend(names, pstrdup(p));
					p += strlen(p) + 1;
				}
			}
		}
	}
	systable_endscan(scan);
	table_close(tgrel, AccessShareLock);
	return names;
}

/* Whether capture() would accept every key column in "names" of "relid". */
static bool
el_captured_keys_ok(Oid relid, List *names)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		HeapTuple	tup = SearchSysCacheAttName(relid, (char *) lfirst(lc));
		ElKeyRefusal refusal = EL_KEY_OK;
		Oid			eq_func;

		if (!HeapTupleIsValid(tup))
			continue;			/* the trigger reports a missing key column */
		(void) el_key_form((Form_pg_attribute) GETSTRUCT(tup), &refusal, &eq_func);
		ReleaseSysCache(tup);
		if (refusal != EL_KEY_OK)
			return false;
	}
	return true;
}

/*
 * What the ALTER TABLE hook keeps between before and after the statement:
 * the table it names, and the captured tables among it and its inheritors
 * whose key capture() refused already (captured before 0.3.0), which keep
 * working as they did.
 */
struct ElCaptureAlter
{
	Oid			relid;
	List	   *exempt;
};

/*
 * Before an ALTER TABLE (or a column's RENAME) runs, or NULL for another
 * statement.  Takes no lock: the statement has not checked its privileges
 * yet.
 */
struct ElCaptureAlter *
el_capture_before_alter(Node *parsetree)
{
	RangeVar   *rv;
	struct ElCaptureAlter *check;
	List	   *rels;
	Oid			relid;
	ListCell   *lc;

	/* ALTER TABLE, and RENAME COLUMN (another column could become "id"). */
	if (IsA(parsetree, AlterTableStmt) &&
		((AlterTableStmt *) parsetree)->objtype == OBJECT_TABLE)
		rv = ((AlterTableStmt *) parsetree)->relation;
	else if (IsA(parsetree, RenameStmt) &&
			 ((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN &&
			 ((RenameStmt *) parsetree)->relationType == OBJECT_TABLE)
		rv = ((RenameStmt *) parsetree)->relation;
	else
		return NULL;
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(relid))
		return NULL;
	check = palloc0(sizeof(struct ElCaptureAlter));
	check->relid = relid;
	rels = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, rels)
	{
		Oid			child = lfirst_oid(lc);
		List	   *names = el_captured_key_names(child);

		if (names != NIL && !el_captured_keys_ok(child, names))
			check->exempt = lappend_oid(check->exempt, child);
	}
	return check;
}

/*
 * After the ALTER TABLE: refuse it (its transaction rolls back) if it gave
 * a key column of a captured table a type or collation capture() refuses,
 * e.g. ALTER COLUMN email TYPE text COLLATE case_insensitive: that key's
 * changes would again go out under different key texts for equal keys, to
 * different partitions, and a mirror would lose rows.  The tables are
 * found again now that the ALTER holds its lock on them: one captured
 * while the ALTER waited for that lock is checked too.
 */
void
el_capture_after_alter(struct ElCaptureAlter *check)
{
	List	   *rels;
	ListCell   *lc;

	CommandCounterIncrement();	/* see what the ALTER changed */
	if (get_rel_relkind(check->relid) == '\0')
		return;					/* gone */
	rels = find_all_inheritors(check->relid, NoLock, NULL);
	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);
		List	   *names;
		ListCell   *nc;

		if (list_member_oid(check->exempt, relid))
			continue;
		names = el_captured_key_names(relid);

		foreach(nc, names)
		{
			char	   *name = (char *) lfirst(nc);
			HeapTuple	tup = SearchSysCacheAttName(relid, name);
			Form_pg_attribute att;
			ElKeyRefusal refusal = EL_KEY_OK;
			Oid			eq_func;

			if (!HeapTupleIsValid(tup))
				continue;
			att = (Form_pg_attribute) GETSTRUCT(tup);
			(void) el_key_form(att, &refusal, &eq_func);
			if (refusal == EL_KEY_NONDETERMINISTIC)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot give key column \"%s\" of captured table \"%s\" the nondeterministic collation \"%s\"",
								name, get_rel_name(relid), get_collation_name(att->attcollation)),
						 errdetail("Values equal under a nondeterministic collation can differ in their text: one row's changes could go out under different keys, to different partitions, and be applied out of order."),
						 errhint("Run eventlog.uncapture() first, or keep a deterministic collation on the key column.")));
			else if (refusal != EL_KEY_OK)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot change key column \"%s\" of captured table \"%s\" to type %s",
								name, get_rel_name(relid), format_type_be(att->atttypid)),
						 errdetail("Change capture has no canonical key text for this type: one row's changes could go out under different keys, to different partitions, and be applied out of order."),
						 errhint("Run eventlog.uncapture() first, or give the key column a type docs/capture.md lists as accepted.")));
			ReleaseSysCache(tup);
		}
	}
}
