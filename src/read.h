/*-------------------------------------------------------------------------
 *
 * read.h
 *	  Reading a partition (read.c), for the other readers: consumer groups
 *	  (group.c, group_member.c) read through the same two steps as
 *	  eventlog.read.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_READ_H
#define PG_EVENTLOG_READ_H

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

#include "topic.h"

/* Offsets of one partition, as a reader sees them at one moment. */
typedef struct ElReadPoint
{
	ElTopic    *topic;			/* the cache entry the point was taken with */
	int32		partition;
	int64		log_start;
	int64		stable;			/* last stable offset */
	int64		high_watermark;
	int			holder_pid;
} ElReadPoint;

/* Step 1: the stable offset (and the log's edges) of a partition, now. */
extern void el_point_at(text *name, ElTopic *topic, int32 partition,
						ElReadPoint *point);
/* The error of a read from outside [log start, high watermark]. */
extern void el_offset_out_of_range(ElReadPoint *point, int64 offset);
/* Step 2: records from "from" up to the point's stable offset. */
extern int32 el_read_into(ElReadPoint *point, int64 from, int32 max_records,
						  Tuplestorestate *store, TupleDesc tupdesc,
						  int64 *next);

/* The checks of read's from_offset and max_records arguments. */
extern void el_check_read_args(bool from_null, int64 from, bool max_null,
							   int32 max_records);

/* Whether a record is readable at or after "from" (or retention removed it). */
extern bool el_readable_from(ElReadPoint *point, int64 from);

/* eventlog._await_records, the long poll over several partitions. */
extern Datum el_await_records(PG_FUNCTION_ARGS);

#endif							/* PG_EVENTLOG_READ_H */
