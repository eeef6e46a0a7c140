/*-------------------------------------------------------------------------
 *
 * capture_envelope.c
 *	  Change capture's values: the description of a captured table, built
 *	  once per statement, and the change envelope with its row images.
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
 * The envelope is written in jsonb's binary form directly (el_write_object
 * below), row images included, instead of being built value by value
 * with pushJsonbValue() around row images from to_jsonb(): that unpacked
 * each image and encoded it again, sorted each row's keys, and looked each
 * column's type up, for every row.  The bytes are the ones to_jsonb() and
 * JsonbValueToJsonb() write (jsonb_util.c, convertJsonbObject): keys in
 * jsonb's order (shorter first, then by bytes), sorted once per
 * statement; each column written as to_jsonb() writes it, directly for
 * the types whose form is the same in every PostgreSQL version this
 * builds for (boolean, integers, text types, dates and times, jsonb), and
 * through to_jsonb() of the column's value for any other type.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
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
 * How a column whose type is, or is a domain over, "basetype" is written in
 * a row image: as to_jsonb() categorizes it (jsonb.c, which looks through
 * domains), directly where that form is the same in PostgreSQL 14 to 18.
 */
static ElImageForm
el_image_form(Oid basetype)
{
	switch (basetype)
	{
		case BOOLOID:
			return EL_IMAGE_BOOL;
		case INT2OID:
			return EL_IMAGE_INT2;
		case INT4OID:
			return EL_IMAGE_INT4;
		case INT8OID:
			return EL_IMAGE_INT8;
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
			return EL_IMAGE_TEXT;
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return EL_IMAGE_DATETIME;
		case JSONBOID:
			return EL_IMAGE_JSONB;
		default:
			return EL_IMAGE_GENERIC;
	}
}

/* jsonb's order of object keys: shorter first, then by bytes. */
static int
el_jsonb_key_cmp(const char *a, int la, const char *b, int lb)
{
	if (la != lb)
		return la < lb ? -1 : 1;
	return memcmp(a, b, la);
}

static TupleDesc el_sort_desc;	/* for el_image_order_cmp */

static int
el_image_order_cmp(const void *a, const void *b)
{
	const char *na = NameStr(TupleDescAttr(el_sort_desc, *(const int *) a)->attname);
	const char *nb = NameStr(TupleDescAttr(el_sort_desc, *(const int *) b)->attname);

	return el_jsonb_key_cmp(na, strlen(na), nb, strlen(nb));
}

/* Store "meta", turned into an end offset every JB_OFFSET_STRIDE'th entry. */
static void
el_put_jentry(char *entries, int i, JEntry meta, int totallen)
{
	if ((i % JB_OFFSET_STRIDE) == 0)
		meta = (meta & JENTRY_TYPEMASK) | totallen | JENTRY_HAS_OFF;
	memcpy(entries + i * sizeof(JEntry), &meta, sizeof(JEntry));
}

/*
 * The row image's constant part: the columns in key order, their keys'
 * bytes and JEntries (the same for every row), and how each is written.
 */
static void
el_describe_image(ElCapture *cap, Relation rel, MemoryContext cxt)
{
	TupleDesc	desc;
	StringInfoData keys;
	int			natts;
	int			n = 0;
	int			i;

	/* With the defaults of columns added since a row was written. */
	desc = cap->image_desc = CreateTupleDescCopyConstr(RelationGetDescr(rel));
	natts = desc->natts;
	cap->image_order = palloc(sizeof(int) * Max(natts, 1));
	cap->image_forms = palloc(sizeof(ElImageForm) * Max(natts, 1));
	cap->image_types = palloc(sizeof(Oid) * Max(natts, 1));
	cap->image_to_jsonb = palloc0(sizeof(FmgrInfo) * Max(natts, 1));
	cap->values = palloc(sizeof(Datum) * Max(natts, 1));
	cap->nulls = palloc(sizeof(bool) * Max(natts, 1));
	for (i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		cap->image_order[n++] = i;
		cap->image_types[i] = getBaseType(att->atttypid);
		cap->image_forms[i] = el_image_form(cap->image_types[i]);
		if (cap->image_forms[i] == EL_IMAGE_GENERIC)
			el_to_jsonb_info(&cap->image_to_jsonb[i], att->atttypid, cxt);
	}
	cap->nimage = n;
	el_sort_desc = desc;
	qsort(cap->image_order, n, sizeof(int), el_image_order_cmp);

	initStringInfo(&keys);
	cap->image_key_entries = palloc(sizeof(JEntry) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		const char *name = NameStr(TupleDescAttr(desc, cap->image_order[i])->attname);
		int			len = strlen(name);

		appendBinaryStringInfo(&keys, name, len);
		el_put_jentry((char *) cap->image_key_entries, i, JENTRY_ISSTRING | len, keys.len);
	}
	cap->image_keys = keys.data;
	cap->image_keys_len = keys.len;
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
	/*
	 * With the defaults of columns added since a row was written (its tuple
	 * is shorter than the descriptor): a key column added with a default
	 * before capture() began must read as that default, not as NULL, or an
	 * old row's change would go out under a NULL key, and its UPDATE as a
	 * delete and a create under two keys.
	 */
	cap->tupdesc = CreateTupleDescCopyConstr(RelationGetDescr(rel));
	cap->topic = cstring_to_text(topic);
	cap->nkeys = nkeys;
	cap->key_names = palloc(sizeof(char *) * Max(nkeys, 1));
	cap->key_attnums = palloc(sizeof(AttrNumber) * Max(nkeys, 1));
	cap->key_forms = palloc(sizeof(ElKeyForm) * Max(nkeys, 1));
	cap->key_types = palloc(sizeof(Oid) * Max(nkeys, 1));
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
		cap->key_types[i] = getBaseType(att->atttypid);
		cap->key_collations[i] = att->attcollation;
		if (el_key_by_equality(cap->key_forms[i]))
			fmgr_info_cxt(eq_func, &cap->key_eq[i], cxt);
		el_to_jsonb_info(&cap->key_to_jsonb[i], att->atttypid, cxt);
	}
	el_describe_image(cap, rel, cxt);
	cap->dbname = get_database_name(MyDatabaseId);
	cap->schema = get_namespace_name(RelationGetNamespace(rel));
	cap->table = pstrdup(RelationGetRelationName(rel));
	MemoryContextSwitchTo(old);
}

static int64
el_epoch_ms(TimestampTz ts)
{
	return ts / 1000 +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
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
 * Writing jsonb.  A field of an object being written; the fields of an
 * object are given in jsonb's key order, without duplicates.
 */
typedef enum ElFieldKind
{
	EL_FIELD_NULL,
	EL_FIELD_STRING,
	EL_FIELD_NUMERIC,
	EL_FIELD_OBJECT,			/* fields of a nested object */
	EL_FIELD_ROW				/* the image of a row */
} ElFieldKind;

typedef struct ElField
{
	const char *key;
	ElFieldKind kind;
	const char *str;			/* EL_FIELD_STRING */
	Numeric		num;			/* EL_FIELD_NUMERIC */
	const struct ElField *fields;	/* EL_FIELD_OBJECT */
	int			nfields;
	HeapTuple	row;			/* EL_FIELD_ROW */
} ElField;

/* Pad "buf" to a 4-byte boundary with zeros; how many bytes were added. */
static int
el_pad_int(StringInfo buf)
{
	int			pad = INTALIGN(buf->len) - buf->len;

	if (pad > 0)
	{
		static const char zeros[4] = {0, 0, 0, 0};

		appendBinaryStringInfo(buf, zeros, pad);
	}
	return pad;
}

/* Count "len" more bytes into a container's data, as jsonb limits it. */
static void
el_add_length(int *totallen, int len)
{
	*totallen += len;
	if (*totallen > JENTRY_OFFLENMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("total size of jsonb object elements exceeds the maximum of %d bytes",
						JENTRY_OFFLENMASK)));
}

/* Append a string value; its JEntry. */
static JEntry
el_write_string(StringInfo buf, const char *str, int len)
{
	if (len > JENTRY_OFFLENMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("string too long to represent as jsonb string"),
				 errdetail("Due to an implementation restriction, jsonb strings cannot exceed %d bytes.",
						   JENTRY_OFFLENMASK)));
	appendBinaryStringInfo(buf, str, len);
	return JENTRY_ISSTRING | len;
}

static JEntry
el_write_numeric(StringInfo buf, Numeric num)
{
	int			pad = el_pad_int(buf);

	appendBinaryStringInfo(buf, (const char *) num, VARSIZE_ANY(num));
	return JENTRY_ISNUMERIC | (pad + VARSIZE_ANY(num));
}

/*
 * Append jsonb value "jb" as a value in a container: its root container,
 * or its scalar, as to_jsonb() puts a jsonb column in a row.
 */
static JEntry
el_write_jsonb(StringInfo buf, Jsonb *jb)
{
	JsonbValue	v;
	int			pad;

	if (!JB_ROOT_IS_SCALAR(jb))
	{
		pad = el_pad_int(buf);
		appendBinaryStringInfo(buf, (const char *) &jb->root, VARSIZE(jb) - VARHDRSZ);
		return JENTRY_ISCONTAINER | (pad + VARSIZE(jb) - VARHDRSZ);
	}
	(void) JsonbExtractScalar(&jb->root, &v);
	switch (v.type)
	{
		case jbvNull:
			return JENTRY_ISNULL;
		case jbvBool:
			return v.val.boolean ? JENTRY_ISBOOL_TRUE : JENTRY_ISBOOL_FALSE;
		case jbvNumeric:
			return el_write_numeric(buf, v.val.numeric);
		case jbvString:
			appendBinaryStringInfo(buf, v.val.string.val, v.val.string.len);
			return JENTRY_ISSTRING | v.val.string.len;
		default:
			elog(ERROR, "unexpected jsonb scalar type %d", (int) v.type);
	}
	return JENTRY_ISNULL;		/* keep compiler quiet */
}

/* Append column "i" of the row being written; its JEntry. */
static JEntry
el_write_column(StringInfo buf, ElCapture *cap, int i)
{
	Datum		d = cap->values[i];

	if (cap->nulls[i])
		return JENTRY_ISNULL;
	switch (cap->image_forms[i])
	{
		case EL_IMAGE_BOOL:
			return DatumGetBool(d) ? JENTRY_ISBOOL_TRUE : JENTRY_ISBOOL_FALSE;
		case EL_IMAGE_INT2:
			return el_write_numeric(buf, int64_to_numeric(DatumGetInt16(d)));
		case EL_IMAGE_INT4:
			return el_write_numeric(buf, int64_to_numeric(DatumGetInt32(d)));
		case EL_IMAGE_INT8:
			return el_write_numeric(buf, int64_to_numeric(DatumGetInt64(d)));
		case EL_IMAGE_TEXT:
			{
				text	   *t = DatumGetTextPP(d);

				return el_write_string(buf, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
			}
		case EL_IMAGE_DATETIME:
			{
				char	   *s = JsonEncodeDateTime(NULL, d, cap->image_types[i], NULL);

				return el_write_string(buf, s, strlen(s));
			}
		case EL_IMAGE_JSONB:
			return el_write_jsonb(buf, DatumGetJsonbP(d));
		case EL_IMAGE_GENERIC:
		default:
			return el_write_jsonb(buf, DatumGetJsonbP(FunctionCall1(&cap->image_to_jsonb[i], d)));
	}
}

/* Write the image of row "tuple" to "buf" (see the top of this file). */
static JEntry
el_write_row(StringInfo buf, ElCapture *cap, HeapTuple tuple)
{
	int			n = cap->nimage;
	int			base = buf->len;
	uint32		header = (uint32) n | JB_FOBJECT;
	int			entries;
	int			totallen = cap->image_keys_len;
	int			i;

	heap_deform_tuple(tuple, cap->image_desc, cap->values, cap->nulls);
	(void) el_pad_int(buf);
	appendBinaryStringInfo(buf, (const char *) &header, sizeof(uint32));
	entries = buf->len;
	appendBinaryStringInfo(buf, (const char *) cap->image_key_entries, sizeof(JEntry) * n);
	enlargeStringInfo(buf, sizeof(JEntry) * n);
	buf->len += sizeof(JEntry) * n;
	appendBinaryStringInfo(buf, cap->image_keys, cap->image_keys_len);
	for (i = 0; i < n; i++)
	{
		JEntry		meta = el_write_column(buf, cap, cap->image_order[i]);

		el_add_length(&totallen, JBE_OFFLENFLD(meta));
		el_put_jentry(buf->data + entries, i + n, meta, totallen);
	}
	if (buf->len - base > JENTRY_OFFLENMASK)
		el_add_length(&totallen, buf->len - base);	/* raises the error */
	return JENTRY_ISCONTAINER | (buf->len - base);
}

/* Write an object of fields[0..n) to "buf"; its JEntry in the parent. */
static JEntry
el_write_object(StringInfo buf, ElCapture *cap, const ElField *fields, int n)
{
	int			base = buf->len;
	uint32		header = (uint32) n | JB_FOBJECT;
	int			entries;
	int			totallen = 0;
	int			i;

	(void) el_pad_int(buf);
	appendBinaryStringInfo(buf, (const char *) &header, sizeof(uint32));
	entries = buf->len;
	enlargeStringInfo(buf, sizeof(JEntry) * n * 2);
	buf->len += sizeof(JEntry) * n * 2;

	for (i = 0; i < n; i++)
	{
		int			len = strlen(fields[i].key);

		appendBinaryStringInfo(buf, fields[i].key, len);
		el_add_length(&totallen, len);
		el_put_jentry(buf->data + entries, i, JENTRY_ISSTRING | len, totallen);
	}
	for (i = 0; i < n; i++)
	{
		const ElField *f = &fields[i];
		JEntry		meta;

		switch (f->kind)
		{
			case EL_FIELD_NULL:
				meta = JENTRY_ISNULL;
				break;
			case EL_FIELD_STRING:
				meta = el_write_string(buf, f->str, strlen(f->str));
				break;
			case EL_FIELD_NUMERIC:
				meta = el_write_numeric(buf, f->num);
				break;
			case EL_FIELD_ROW:
				meta = el_write_row(buf, cap, f->row);
				break;
			case EL_FIELD_OBJECT:
			default:
				meta = el_write_object(buf, cap, f->fields, f->nfields);
				break;
		}
		el_add_length(&totallen, JBE_OFFLENFLD(meta));
		el_put_jentry(buf->data + entries, i + n, meta, totallen);
	}
	/* A container's length counts the padding before it, as jsonb's does. */
	if (buf->len - base > JENTRY_OFFLENMASK)
		el_add_length(&totallen, buf->len - base);	/* raises the error */
	return JENTRY_ISCONTAINER | (buf->len - base);
}

/* The envelope into "buf" (el_capture_envelope). */
static void
el_write_envelope(StringInfo buf, ElCapture *cap, char op, HeapTuple before,
				  HeapTuple after, bool snapshot)
{
	int64		now_ms = el_epoch_ms(GetCurrentTimestamp());
	Numeric		ts_ms = int64_to_numeric(now_ms);
	char		opstr[2] = {op, '\0'};

	/* jsonb's key order: by length, then by bytes. */
	ElField		source[] = {
		{.key = "db", .kind = EL_FIELD_STRING, .str = cap->dbname},
		{.key = "lsn", .kind = EL_FIELD_NUMERIC, .num = int64_to_numeric(el_change_lsn())},
		{.key = "name", .kind = EL_FIELD_STRING, .str = cap->dbname},
		{.key = "txId", .kind = EL_FIELD_NUMERIC,
		.num = int64_to_numeric((int64) GetTopTransactionIdIfAny())},
		{.key = "table", .kind = EL_FIELD_STRING, .str = cap->table},
		{.key = "ts_ms", .kind = EL_FIELD_NUMERIC, .num = ts_ms},
		{.key = "schema", .kind = EL_FIELD_STRING, .str = cap->schema},
		{.key = "version", .kind = EL_FIELD_STRING, .str = EL_VERSION},
		{.key = "snapshot", .kind = EL_FIELD_STRING, .str = snapshot ? "true" : "false"},
		{.key = "connector", .kind = EL_FIELD_STRING, .str = "pg_eventlog"},
	};
	ElField		envelope[] = {
		{.key = "op", .kind = EL_FIELD_STRING, .str = opstr},
		{.key = "after", .kind = after ? EL_FIELD_ROW : EL_FIELD_NULL, .row = after},
		{.key = "ts_ms", .kind = EL_FIELD_NUMERIC, .num = ts_ms},
		{.key = "before", .kind = before ? EL_FIELD_ROW : EL_FIELD_NULL, .row = before},
		{.key = "source", .kind = EL_FIELD_OBJECT, .fields = source,
		.nfields = lengthof(source)},
	};

	buf->len = VARHDRSZ;		/* the varlena header, set by the caller */
	(void) el_write_object(buf, cap, envelope, lengthof(envelope));
}

/*
 * The change envelope of one change (see the top of this file), with the
 * images of rows "before" and "after" (either may be NULL), in the
 * current memory context.
 *
 * Floats in the images are written with their shortest exact digits even
 * when the writing session lowered extra_float_digits below 1, which
 * would round them (0.30000000000000004 as 0.3): a mirror must get the
 * value the source has.
 */
Jsonb *
el_capture_envelope(ElCapture *cap, char op, HeapTuple before, HeapTuple after,
					bool snapshot)
{
	StringInfoData buf;
	int			saved = extra_float_digits;

	/* Room for the usual envelope: twice the stored rows, and the rest. */
	initStringInfo(&buf);
	enlargeStringInfo(&buf, VARHDRSZ + 400 +
					  (before ? Min(before->t_len, BLCKSZ) * 2 : 0) +
					  (after ? Min(after->t_len, BLCKSZ) * 2 : 0));
	if (saved >= 1)
		el_write_envelope(&buf, cap, op, before, after, snapshot);
	else
	{
		extra_float_digits = 1;
		PG_TRY();
		{
			el_write_envelope(&buf, cap, op, before, after, snapshot);
		}
		PG_FINALLY();
		{
			extra_float_digits = saved;
		}
		PG_END_TRY();
	}
	SET_VARSIZE(buf.data, buf.len);
	return (Jsonb *) buf.data;
}
