/*-------------------------------------------------------------------------
 *
 * capture_keys.c
 *	  Change capture's keys: how each key column's values are compared and
 *	  written, the record key of a row, and the check capture() makes of
 *	  the key columns before it creates the trigger.
 *
 * The record's key is the compact JSON object of the key columns, e.g.
 * {"id":1}, as Debezium's key payload, and is hashed like any key: all
 * changes of one row go to one partition, in order.  An UPDATE that
 * changes the key produces a delete under the old key and a create under
 * the new one, as Debezium does.
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
 * are refused by capture(), and by ALTER TABLE on a captured table
 * (capture_ddl.c); a table captured before 0.3.0 keeps working with them,
 * compared by image as before.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/formatting.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "capture.h"

PG_FUNCTION_INFO_V1(el_capture_check_keys);

/* Whether keys of this form are compared by the type's equality function. */
bool
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
ElKeyForm
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
			/* The commonest keys without to_jsonb(): the same text. */
			switch (cap->key_types[i])
			{
				case INT2OID:
					appendStringInfo(buf, "%d", (int) DatumGetInt16(d));
					return;
				case INT4OID:
					appendStringInfo(buf, "%d", DatumGetInt32(d));
					return;
				case INT8OID:
					appendStringInfo(buf, INT64_FORMAT, DatumGetInt64(d));
					return;
				case TEXTOID:
				case VARCHAROID:
					escape_json(buf, TextDatumGetCString(d));
					return;
				default:
					break;
			}
			break;
	}
	jb = DatumGetJsonbP(FunctionCall1(&cap->key_to_jsonb[i], d));
	(void) JsonbToCString(buf, &jb->root, VARSIZE(jb));
}

/*
 * The compact JSON key of a row: {"col":value,...} in key column order,
 * one text for all values equal under the key types' equality.
 */
text *
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
bool
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
