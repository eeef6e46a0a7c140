/*-------------------------------------------------------------------------
 *
 * scan.h
 *	  A scan over a partition's segments in offset order, below a read
 *	  point's stable offset (scan.c): what every reader of read.c and the
 *	  consumer groups go through.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_SCAN_H
#define PG_EVENTLOG_SCAN_H

#include "access/genam.h"
#include "executor/tuptable.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "read.h"

/* A scan over a partition's segments in offset order, from an offset. */
typedef struct ElScan
{
	ElReadPoint *point;
	Snapshot	snapshot;
	int64		next;			/* next offset wanted */
	int			segno;			/* index in meta->segments */
	Relation	rel;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	bool		returned;		/* the open segment returned a record */
	bool		missing_ok;		/* a removed segment ends the scan... */
	bool		missing;		/* ...and sets this, instead of an error */
} ElScan;

extern void el_scan_begin(ElScan *s, ElReadPoint *point, int64 from,
						  Snapshot snapshot);
extern TupleTableSlot *el_scan_next(ElScan *s, int64 *offset);
extern void el_scan_end(ElScan *s);

#endif							/* PG_EVENTLOG_SCAN_H */
