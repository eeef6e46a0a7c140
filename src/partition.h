/*-------------------------------------------------------------------------
 *
 * partition.h
 *	  Operations on a partition's shared state, through its attached handle
 *	  (partition.c): taking offsets, routing, the last stable offset, and
 *	  the recovery of the offset counter.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_PARTITION_H
#define PG_EVENTLOG_PARTITION_H

#include "topic.h"

extern int64 el_take_offsets(ElTopic *topic, int32 partition, int count,
							 int32 *segno, TimestampTz *append_time);
extern void el_get_routing(ElTopic *topic, int32 partition, ElRouting *routing);
extern void el_read_stable_offset(ElTopic *topic, int32 partition,
								  ElStableOffset *out);
extern int64 el_recover_next_offset(ElTopic *topic, int32 partition,
									ElRouting *routing);

#endif							/* PG_EVENTLOG_PARTITION_H */
