/*-------------------------------------------------------------------------
 *
 * record_sink.h
 *	  Turning segment rows into eventlog.record rows of a result tuplestore
 *	  (record_sink.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_RECORD_SINK_H
#define PG_EVENTLOG_RECORD_SINK_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "utils/tuplestore.h"

/* Columns of eventlog.record. */
#define EL_RECORD_NATTS 8

/* Appends the rows of one partition's scan to a result tuplestore. */
typedef struct ElRecordSink
{
	Tuplestorestate *store;
	TupleDesc	tupdesc;		/* eventlog.record or binary_record, as the
								 * caller blessed it */
	Datum		topic;			/* text */
	int32		partition;
	bool		copy_ok;		/* tupdesc is eventlog.record as built */
	int			natts;			/* tupdesc's, dropped columns included */
	int			attno[EL_RECORD_NATTS];	/* where column i of a record is
										 * in tupdesc, from 0 */
	Datum	   *values;			/* one row, taken apart (natts) */
	bool	   *nulls;
	Size		data_start;		/* where the segment row's data goes in buf */
	HeapTupleData row;			/* buf, as the row to store */
	Size		buf_size;
	MemoryContext cxt;			/* the caller's, for buf */
	MemoryContext rowcxt;		/* what one row needs, reset after it */
} ElRecordSink;

extern void el_record_sink_begin(ElRecordSink *sink, Tuplestorestate *store,
								 TupleDesc tupdesc, const char *topic,
								 int32 partition, bool binary);
extern void el_record_sink_put(ElRecordSink *sink, TupleTableSlot *slot,
							   int64 offset);
extern void el_record_sink_end(ElRecordSink *sink);

#endif							/* PG_EVENTLOG_RECORD_SINK_H */
