/*-------------------------------------------------------------------------
 *
 * scan.c
 *	  A scan over a partition's segments in offset order, from an offset,
 *	  never at or above the read point's stable offset (read.c, step 2).
 *	  Moved out of read.c as it was, to keep that file small.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "scan.h"
#include "segment.h"
#include "topic.h"

static void
el_scan_close_segment(ElScan *s)
{
	LOCKMODE	unlock;

	if (s->scan)
		index_endscan(s->scan);
	if (s->slot)
		ExecDropSingleTupleTableSlot(s->slot);
	/*
	 * Keep the locks of a segment that returned records until the end of the
	 * transaction, as any read does: a transaction that read records keeps
	 * retention from removing their segment until it ends (retention skips a
	 * segment someone holds).  A segment that returned nothing is let go
	 * (the lock this scan took; one the transaction held before stays): a
	 * long poll that found nothing must not keep retention or drop_topic
	 * waiting while it sleeps.
	 */
	unlock = s->returned ? NoLock : AccessShareLock;
	if (s->index)
		index_close(s->index, unlock);
	if (s->rel)
		relation_close(s->rel, unlock);
	s->scan = NULL;
	s->slot = NULL;
	s->index = NULL;
	s->rel = NULL;
	s->returned = false;
}

/* Position the scan on the segment that may hold s->next. */
void
el_scan_begin(ElScan *s, ElReadPoint *point, int64 from, Snapshot snapshot)
{
	ElPartitionMeta *meta = &point->topic->parts[point->partition];
	int			i;

	memset(s, 0, sizeof(*s));
	s->point = point;
	s->snapshot = snapshot;
	s->next = from;
	/*
	 * Start at the last segment whose recorded base offset is at or below
	 * "from"; a segment whose base is not recorded yet is only read on the
	 * way forward (every offset of a segment is below the next one's).
	 */
	s->segno = 0;
	for (i = 0; i < meta->nsegments; i++)
		if (meta->segments[i].base_offset != EL_BASE_UNKNOWN &&
			meta->segments[i].base_offset <= from)
			s->segno = i;
}

static bool
el_scan_open_segment(ElScan *s)
{
	ElPartitionMeta *meta = &s->point->topic->parts[s->point->partition];
	ElSegment  *seg;
	Oid			pk;
	ScanKeyData key;

	if (s->segno >= meta->nsegments)
		return false;
	seg = &meta->segments[s->segno];
	s->rel = OidIsValid(seg->relid) ?
		try_relation_open(seg->relid, AccessShareLock) : NULL;

	/*
	 * Compaction replaces a segment's table by a new one of the same name
	 * (compaction.sql), in a transaction that holds the old one exclusively
	 * until it commits: a reader whose segment list predates the swap waits
	 * for that commit in try_relation_open, finds the old table gone, and
	 * reads on in the new one.  Its rows are frozen (compact.c), so the
	 * snapshot this scan took before the swap sees them.  Retried, in case
	 * another round swapped the segment again meanwhile.
	 */
	for (int retry = 0; s->rel == NULL && retry < 3; retry++)
	{
		Oid			relid = el_segment_relid_now(s->point->topic,
												 s->point->partition,
												 seg->segment_no);

		if (!OidIsValid(relid) || relid == seg->relid)
			break;
		seg->relid = relid;
		s->rel = try_relation_open(relid, AccessShareLock);
	}
	if (s->rel == NULL)
	{
		if (s->missing_ok)
		{
			s->missing = true;
			return false;
		}
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("offset " INT64_FORMAT " of partition %d of topic \"%s\" is no longer stored",
						s->next, s->point->partition, s->point->topic->name),
				 errdetail("Retention removed the segment holding it while it was being read."),
				 errhint("Read from the partition's log start offset (eventlog.log_start_offset).")));
	}

	/* The record sink copies the row as the topic's format lays it out. */
	el_segment_check_shape(s->rel, s->point->topic->binary);
	pk = el_primary_key_index(s->rel);
	if (!OidIsValid(pk))
		elog(ERROR, "segment \"%s\" has no primary key",
			 RelationGetRelationName(s->rel));
	s->index = index_open(pk, AccessShareLock);
	s->slot = table_slot_create(s->rel, NULL);
	s->scan = el_index_beginscan(s->rel, s->index, s->snapshot, 1, 0);
	ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber, F_INT8GE,
				Int64GetDatum(s->next));
	index_rescan(s->scan, &key, 1, NULL, 0);
	return true;
}

/*
 * offset_id of the row in the scan's slot.  Straight from the row in the
 * buffer when the slot holds one: deforming the slot for one column costs
 * more per row than anything else read.c does.
 */
static inline int64
el_slot_offset(ElScan *s)
{
	bool		isnull;

	if (TTS_IS_BUFFERTUPLE(s->slot))
	{
		HeapTuple	tuple = ((BufferHeapTupleTableSlot *) s->slot)->base.tuple;

		if (tuple != NULL)
			return DatumGetInt64(heap_getattr(tuple, EL_SEG_OFFSET,
											  RelationGetDescr(s->rel), &isnull));
	}
	return DatumGetInt64(slot_getattr(s->slot, EL_SEG_OFFSET, &isnull));
}

/*
 * The next record below the stable offset, in offset order, or NULL.  The
 * returned slot stays valid until the next call.
 */
TupleTableSlot *
el_scan_next(ElScan *s, int64 *offset)
{
	ElPartitionMeta *meta = &s->point->topic->parts[s->point->partition];

	for (;;)
	{
		if (s->next >= s->point->stable)
			return NULL;
		if (s->scan == NULL)
		{
			if (!el_scan_open_segment(s))
				return NULL;
		}
		if (index_getnext_slot(s->scan, ForwardScanDirection, s->slot))
		{
			int64		off = el_slot_offset(s);

			if (off >= s->point->stable)
			{
				s->next = s->point->stable;
				return NULL;
			}
			s->next = off + 1;
			s->returned = true;
			*offset = off;
			return s->slot;
		}
		/* This segment is exhausted: go on with the next one. */
		el_scan_close_segment(s);
		s->segno++;
		if (s->segno >= meta->nsegments)
			return NULL;		/* the rest, up to the stable offset, aborted */
	}
}

void
el_scan_end(ElScan *s)
{
	el_scan_close_segment(s);
}
