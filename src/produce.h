/*-------------------------------------------------------------------------
 *
 * produce.h
 *	  The steps of producing that eventlog.produce and produce_batch
 *	  (produce.c) share with their binary topics' counterparts
 *	  (produce_binary.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_PRODUCE_H
#define PG_EVENTLOG_PRODUCE_H

#include "access/tupdesc.h"
#include "fmgr.h"
#include "utils/tuplestore.h"

#include "producer.h"
#include "segment.h"
#include "topic.h"

extern void el_check_writable(void);
extern Datum el_produce_one(FunctionCallInfo fcinfo, ElTopic *topic,
							text *name, const ElRecordIn *rec,
							bool explicit_set, int32 explicit_partition,
							const ElIdempotence *idem);
extern int32 el_batch_partition(ElTopic *topic, const ElRecordIn *rec,
								bool explicit_set, int32 explicit_partition,
								int32 *sticky);
extern void el_produce_records(ElTopic *topic, text *name,
							   const ElRecordIn *recs, const int32 *parts,
							   int n, Tuplestorestate *store,
							   TupleDesc tupdesc, const ElIdempotence *idem);

#endif							/* PG_EVENTLOG_PRODUCE_H */
