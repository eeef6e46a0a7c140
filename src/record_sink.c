/*-------------------------------------------------------------------------
 *
 * record_sink.c
 *	  Turning segment rows into eventlog.record rows (eventlog.binary_record
 *	  rows for a binary topic) of a result tuplestore, for eventlog.read,
 *	  read_binary and the consumer groups' polls.
 *
 * A function in FROM returns its rows through a tuplestore whatever its
 * mode (the executor materialises a value-per-call function's rows too),
 * so every record is copied once, from the segment's buffer into the
 * store; the aim is that this copy is all a record costs on top of the
 * index scan.  Taking a row apart into datums and forming a new one from
 * them (tuplestore_putvalues) cost more than the scan itself.
 *
 * A record row is (topic, partition, offset_id, key, value, headers,
 * event_time, append_time); a segment row is the last six of those, with
 * the same types in the same order.  The same holds of a binary topic's
 * segment row and eventlog.binary_record, whose key, value and headers are
 * bytea, bytea and eventlog.header[] instead.  So a record row's data is the topic
 * and the partition, padded to offset_id's alignment, followed by the
 * segment row's data byte for byte: every column after the padding lies at
 * the same offset modulo its alignment as in the segment row, which is all
 * that deforming a row depends on.  The null bitmap is the segment row's,
 * shifted by two.  The row is assembled in a buffer reused for every row
 * and copied once into the store.
 *
 * Rows that do not fit that mould take the general way, datum by datum: a
 * value stored out of line (TOAST), which must be fetched now because the
 * result outlives the scan's snapshot; a segment row with more than six
 * columns (columns added and dropped again); a record type with attributes
 * added and dropped again.  A record type changed in any other way is
 * refused.  What such a row needs
 * (fetched values) lives in a memory context reset after each row, so a
 * call reading many large values holds one at a time, not all of them.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "record_sink.h"
#include "segment.h"
#include "topic.h"

/* Columns of a record row before the segment's columns. */
#define EL_RECORD_PREFIX_NATTS (EL_RECORD_NATTS - EL_SEG_NATTS)

/* Column types of eventlog.record, by column number - 1. */
static const Oid el_record_types[EL_RECORD_NATTS] = {
	TEXTOID, INT4OID, INT8OID, TEXTOID, JSONBOID, JSONBOID,
	TIMESTAMPTZOID, TIMESTAMPTZOID
};

/* Column types of eventlog.binary_record: key, value and headers differ. */
static Oid
el_record_type(int i, bool binary)
{
	if (binary && i == 3)
		return BYTEAOID;
	if (binary && i == 4)
		return BYTEAOID;
	if (binary && i == 5)
		return el_header_array_type();
	return el_record_types[i];
}

static void
el_record_map_error(TupleDesc tupdesc, int col, bool binary)
{
	if (binary)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("type %s does not have the columns of an event log binary record",
						format_type_be(tupdesc->tdtypeid)),
				 errdetail("Column %d differs from topic text, partition integer, offset_id bigint, key bytea, value bytea, headers eventlog.header[], event_time timestamptz, append_time timestamptz, which must be the only columns, in this order.",
						   col),
				 errhint("Undo the ALTER TYPE that changed the type: drop attributes added to it and give its attributes back their types.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("type %s does not have the columns of an event log record",
					format_type_be(tupdesc->tdtypeid)),
			 errdetail("Column %d differs from topic text, partition integer, offset_id bigint, key text, value jsonb, headers jsonb, event_time timestamptz, append_time timestamptz, which must be the only columns, in this order.",
					   col),
			 errhint("Undo the ALTER TYPE that changed the type: drop attributes added to it and give its attributes back their types.")));
}

/*
 * Map the columns of a record to those of "tupdesc", the result type as the
 * caller sees it: eventlog.record (eventlog.binary_record if "binary"), whose
 * owner (the extension owner, or a
 * superuser) can ALTER it.  Attributes added and dropped again are allowed
 * (they stay in the type, always NULL); anything else would have read put
 * datums of the wrong type in the result, so it raises a clear error.
 * Returns whether the type is exactly as the install script made it.
 */
static bool
el_record_map(TupleDesc tupdesc, int *attno, bool binary)
{
	int			live = 0;
	int			i;

	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped)
			continue;
		if (live >= EL_RECORD_NATTS || att->atttypid != el_record_type(live, binary))
			el_record_map_error(tupdesc, i + 1, binary);
		attno[live++] = i;
	}
	if (live < EL_RECORD_NATTS)
		el_record_map_error(tupdesc, tupdesc->natts + 1, binary);
	return tupdesc->natts == EL_RECORD_NATTS;
}

/* Grow the row buffer to hold "size" bytes, keeping what it holds. */
static void
el_record_sink_reserve(ElRecordSink *sink, Size size)
{
	size = Max(size, Max(2 * sink->buf_size, 1024));
	if (sink->row.t_data == NULL)
		sink->row.t_data = MemoryContextAllocZero(sink->cxt, size);
	else
		sink->row.t_data = repalloc(sink->row.t_data, size);
	sink->buf_size = size;
}

void
el_record_sink_begin(ElRecordSink *sink, Tuplestorestate *store,
					 TupleDesc tupdesc, const char *topic, int32 partition,
					 bool binary)
{
	memset(sink, 0, sizeof(*sink));
	sink->store = store;
	sink->tupdesc = tupdesc;
	sink->topic = CStringGetTextDatum(topic);
	sink->partition = partition;
	sink->copy_ok = el_record_map(tupdesc, sink->attno, binary);
	sink->natts = tupdesc->natts;
	sink->values = palloc(sizeof(Datum) * tupdesc->natts);
	sink->nulls = palloc(sizeof(bool) * tupdesc->natts);
	sink->cxt = CurrentMemoryContext;
	sink->rowcxt = AllocSetContextCreate(CurrentMemoryContext,
										 "pg_eventlog record row",
										 ALLOCSET_DEFAULT_SIZES);
	ItemPointerSetInvalid(&sink->row.t_self);
	sink->row.t_tableOid = InvalidOid;
	if (sink->copy_ok)
	{
		/*
		 * The part of every row that does not change: the header, with a
		 * null bitmap (which costs no space: the header's size is aligned
		 * up anyway), then the topic and the partition laid out as
		 * heap_fill_tuple lays out the first two columns of a record row
		 * (the topic takes a short header when it fits in one), padded to
		 * offset_id's alignment.
		 */
		TupleDesc	pdesc = CreateTemplateTupleDesc(EL_RECORD_PREFIX_NATTS);
		Datum		values[EL_RECORD_PREFIX_NATTS];
		bool		nulls[EL_RECORD_PREFIX_NATTS] = {false, false};
		Size		hoff = MAXALIGN(SizeofHeapTupleHeader + BITMAPLEN(EL_RECORD_NATTS));
		Size		len;
		uint16		infomask = 0;
		HeapTupleHeader dst;
		int			i;

		for (i = 1; i <= EL_RECORD_PREFIX_NATTS; i++)
			TupleDescCopyEntry(pdesc, i, tupdesc, i);
		values[0] = sink->topic;
		values[1] = Int32GetDatum(partition);
		len = heap_compute_data_size(pdesc, values, nulls);
		sink->data_start = hoff +
			att_align_nominal(len, TupleDescAttr(tupdesc, EL_RECORD_PREFIX_NATTS)->attalign);
		el_record_sink_reserve(sink, sink->data_start);
		dst = sink->row.t_data;
		HeapTupleHeaderSetNatts(dst, EL_RECORD_NATTS);
		dst->t_hoff = hoff;
		heap_fill_tuple(pdesc, values, nulls, (char *) dst + hoff, len,
						&infomask, NULL);
		FreeTupleDesc(pdesc);
	}
}

/*
 * The general way: column by column, values stored out of line fetched
 * into the row's memory context.
 */
static void
el_record_sink_put_datums(ElRecordSink *sink, TupleTableSlot *slot,
						  int64 offset)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(sink->rowcxt);
	Datum	   *values = sink->values;
	bool	   *nulls = sink->nulls;
	int			i;

	/* Dropped attributes of the type are NULL. */
	memset(nulls, true, sizeof(bool) * sink->natts);
	slot_getsomeattrs(slot, EL_SEG_NATTS);
	values[sink->attno[0]] = sink->topic;
	nulls[sink->attno[0]] = false;
	values[sink->attno[1]] = Int32GetDatum(sink->partition);
	nulls[sink->attno[1]] = false;
	for (i = 0; i < EL_SEG_NATTS; i++)
	{
		int			j = sink->attno[EL_RECORD_PREFIX_NATTS + i];
		Datum		d = slot->tts_values[i];
		bool		isnull = slot->tts_isnull[i];
		Form_pg_attribute att = TupleDescAttr(slot->tts_tupleDescriptor, i);

		if (!isnull && att->attlen == -1 &&
			VARATT_IS_EXTERNAL(DatumGetPointer(d)))
			d = PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(d)));
		values[j] = d;
		nulls[j] = isnull;
	}
	values[sink->attno[EL_RECORD_PREFIX_NATTS]] = Int64GetDatum(offset);
	/* The store forms and keeps its row in its own memory. */
	tuplestore_putvalues(sink->store, sink->tupdesc, values, nulls);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(sink->rowcxt);
}

/*
 * Append the segment row in "slot", whose offset_id is "offset", as a
 * record row.
 */
void
el_record_sink_put(ElRecordSink *sink, TupleTableSlot *slot, int64 offset)
{
	HeapTuple	htup;
	HeapTupleHeader src;
	HeapTupleHeader dst;
	Size		datalen;
	bits8		bits;

	if (!sink->copy_ok || !TTS_IS_BUFFERTUPLE(slot) ||
		(htup = ((BufferHeapTupleTableSlot *) slot)->base.tuple) == NULL ||
		HeapTupleHeaderGetNatts(htup->t_data) != EL_SEG_NATTS ||
		HeapTupleHasExternal(htup))
	{
		el_record_sink_put_datums(sink, slot, offset);
		return;
	}

	/* The row in the buffer (the slot keeps it pinned), not a copy. */
	src = htup->t_data;
	datalen = htup->t_len - src->t_hoff;
	if (sink->data_start + datalen > sink->buf_size)
		el_record_sink_reserve(sink, sink->data_start + datalen);
	dst = sink->row.t_data;

	/*
	 * The segment's null bits after the topic's and the partition's (never
	 * null): eight columns, one byte.  A row without nulls gets all bits
	 * set, so that the header keeps one size.
	 */
	StaticAssertStmt(EL_RECORD_NATTS <= 8, "a record row's null bitmap is one byte");
	bits = HeapTupleHasNulls(htup) ? src->t_bits[0] : 0xFF;
	dst->t_bits[0] = (bits8) (((1 << EL_RECORD_PREFIX_NATTS) - 1) |
							  ((bits & ((1 << EL_SEG_NATTS) - 1)) << EL_RECORD_PREFIX_NATTS));
	/* The topic is variable-width; the segment row has no TOAST pointer. */
	dst->t_infomask = HEAP_HASVARWIDTH | HEAP_HASNULL;
	memcpy((char *) dst + sink->data_start, (char *) src + src->t_hoff, datalen);
	sink->row.t_len = sink->data_start + datalen;

	/* Copied into the store's memory as a minimal tuple. */
	tuplestore_puttuple(sink->store, &sink->row);
}

void
el_record_sink_end(ElRecordSink *sink)
{
	if (sink->row.t_data)
		pfree(sink->row.t_data);
	pfree(sink->values);
	pfree(sink->nulls);
	MemoryContextDelete(sink->rowcxt);
	sink->row.t_data = NULL;
	sink->rowcxt = NULL;
}
