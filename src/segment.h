/*-------------------------------------------------------------------------
 *
 * segment.h
 *	  Segment tables: appending records and guarding against direct writes
 *	  (segment.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_SEGMENT_H
#define PG_EVENTLOG_SEGMENT_H

#include "utils/jsonb.h"
#include "utils/rel.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

/* Column numbers of a segment table (1-based, as in the catalog). */
#define EL_SEG_OFFSET		1
#define EL_SEG_KEY			2
#define EL_SEG_VALUE		3
#define EL_SEG_HEADERS		4
#define EL_SEG_EVENT_TIME	5
#define EL_SEG_APPEND_TIME	6
#define EL_SEG_NATTS		6

/*
 * A record to append; NULL pointers are SQL NULLs.  In a JSON topic the key
 * is text and the value and headers jsonb; in a binary topic the key and the
 * value are bytea and the headers an eventlog.header[] (segment.c).
 */
typedef struct ElRecordIn
{
	struct varlena *key;
	struct varlena *value;
	struct varlena *headers;
	bool		has_event_time;
	TimestampTz event_time;
} ElRecordIn;

/* Inserts into one segment table, indexes included. */
typedef struct ElAppender
{
	Relation	rel;
	struct EState *estate;
	struct ResultRelInfo *rri;
	struct TupleTableSlot *slot;
} ElAppender;

extern void el_appender_begin(ElAppender *app, Relation rel, bool binary);
extern void el_appender_insert(ElAppender *app, const ElRecordIn *rec,
							   int64 offset, TimestampTz append_time);
extern void el_appender_insert_many(ElAppender *app, const ElRecordIn *records,
									int count, int64 first,
									TimestampTz append_time);
extern void el_appender_end(ElAppender *app);
extern bool el_segment_edge_offset(Oid relid, Snapshot snapshot, bool largest,
								   int64 *offset);
extern void el_segment_check_shape(Relation rel, bool binary);
extern bool el_segment_guarded(Oid relid);
extern Size el_record_size(const ElRecordIn *rec);
extern void el_check_record_size(const ElRecordIn *rec);
extern void el_check_json_record(const ElRecordIn *rec);

extern int	el_max_record_bytes;

/* produce.c: what change capture (capture_batch.c) produces through */
extern int32 el_produce_route(text *name, const ElRecordIn *rec,
							   int32 *topic_id);
extern void el_produce_to_partition(text *name, int32 topic_id, int32 partition,
									const ElRecordIn *records, int count,
									Oid userid);

#endif							/* PG_EVENTLOG_SEGMENT_H */
