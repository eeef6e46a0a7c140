/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  Change capture, shared between its files:
 *	    capture.c			the row trigger and the snapshot (entry points)
 *	    capture_keys.c		how key columns compare and print (key forms)
 *	    capture_envelope.c	a table's description and the change envelope
 *	    capture_batch.c		changes buffered per statement, produced in
 *							batches per partition
 *	    capture_ddl.c		the ALTER TABLE guard on captured keys
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_CAPTURE_H
#define PG_EVENTLOG_CAPTURE_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "catalog/pg_attribute.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"

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

/* How a column is written in a row image (capture_envelope.c). */
typedef enum ElImageForm
{
	EL_IMAGE_BOOL,
	EL_IMAGE_INT2,
	EL_IMAGE_INT4,
	EL_IMAGE_INT8,
	EL_IMAGE_TEXT,				/* text, varchar, bpchar: the text itself */
	EL_IMAGE_DATETIME,			/* date, timestamp, timestamptz */
	EL_IMAGE_JSONB,
	EL_IMAGE_GENERIC			/* through to_jsonb() of the value */
} ElImageForm;

/*
 * What describing a change of one table needs, built once per statement
 * (cached in the trigger's fn_extra) or per snapshot: no catalog look-up,
 * and no JSON text printed or parsed, per row.  Values of types without a
 * direct form become jsonb through to_jsonb(), called with an expression
 * that tells it the argument's type.
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
	Oid		   *key_types;		/* [nkeys] base types */
	Oid		   *key_collations; /* [nkeys] */
	FmgrInfo   *key_eq;			/* [nkeys], for the forms compared by equality */
	FmgrInfo   *key_to_jsonb;	/* [nkeys] */

	/* The row image: columns in jsonb key order, their keys prebuilt. */
	TupleDesc	image_desc;		/* with the defaults of added columns */
	int			nimage;			/* columns not dropped */
	int		   *image_order;	/* [nimage] column indexes, in key order */
	ElImageForm *image_forms;	/* [natts] */
	Oid		   *image_types;	/* [natts] base types */
	FmgrInfo   *image_to_jsonb; /* [natts], for EL_IMAGE_GENERIC */
	JEntry	   *image_key_entries;	/* [nimage] */
	char	   *image_keys;		/* the keys, one after another */
	int			image_keys_len;
	Datum	   *values;			/* [natts] the row being written */
	bool	   *nulls;

	char	   *dbname;
	char	   *schema;
	char	   *table;
} ElCapture;

/* capture_keys.c */
extern ElKeyForm el_key_form(Form_pg_attribute att, ElKeyRefusal *refusal,
							 Oid *eq_func);
extern bool el_key_by_equality(ElKeyForm form);
extern text *el_row_key(ElCapture *cap, HeapTuple tuple);
extern bool el_same_key(ElCapture *cap, HeapTuple a, HeapTuple b);

/* capture_envelope.c */
extern void el_capture_describe(ElCapture *cap, Relation rel, const char *topic,
								int nkeys, char **key_names, MemoryContext cxt);
extern void el_to_jsonb_info(FmgrInfo *finfo, Oid argtype, MemoryContext cxt);
extern Jsonb *el_capture_envelope(ElCapture *cap, char op, HeapTuple before,
								  HeapTuple after, bool snapshot);

/* capture_batch.c (and el_capture_flush in pg_eventlog.h) */
extern void el_capture_change(ElCapture *cap, char op, HeapTuple before,
							  HeapTuple after, text *key, bool snapshot);

#endif							/* PG_EVENTLOG_CAPTURE_H */
