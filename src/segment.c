/*-------------------------------------------------------------------------
 *
 * segment.c
 *	  Segment tables: the append path used by produce, the record size
 *	  limit, and the trigger that refuses every other write.
 *
 * A segment is a plain heap table (docs/design.md says why not a
 * declarative partition) with a primary key on offset_id.  produce
 * inserts through the table AM and the executor's index insertion, which
 * fires no triggers; so a row-level BEFORE trigger enabled ALWAYS can refuse
 * INSERT, UPDATE, DELETE and COPY from SQL, and logical replication apply
 * (which runs with session_replication_role = replica), without costing the
 * produce path anything.  A statement-level BEFORE TRUNCATE trigger does the
 * same for TRUNCATE.  Direct writes would bypass the in-flight table and
 * break the last stable offset.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "segment.h"

int			el_max_record_bytes = 1024 * 1024;

void
el_segment_init(void)
{
	DefineCustomIntVariable("eventlog.max_record_bytes",
							"Largest record produce accepts: key, value and headers together.",
							"Like Kafka's message.max.bytes (default 1 MB).",
							&el_max_record_bytes,
							1024 * 1024, 1024, MaxAllocSize / 2,
							PGC_SUSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}

Size
el_record_size(const ElRecordIn *rec)
{
	Size		size = 0;

	if (rec->key)
		size += VARSIZE_ANY_EXHDR(rec->key);
	if (rec->value)
		size += VARSIZE_ANY_EXHDR(rec->value);
	if (rec->headers)
		size += VARSIZE_ANY_EXHDR(rec->headers);
	return size;
}

void
el_check_record_size(const ElRecordIn *rec)
{
	Size		size = el_record_size(rec);

	if (size > (Size) el_max_record_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("record is too large"),
				 errdetail("The record's key, value and headers take %zu bytes; eventlog.max_record_bytes is %d.",
						   size, el_max_record_bytes),
				 errhint("Split the value, or raise eventlog.max_record_bytes.")));
	if (rec->headers && !JB_ROOT_IS_OBJECT(rec->headers))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("record headers must be a JSON object"),
				 errdetail("Headers map names to values, for example {\"trace-id\": \"abc\"}.")));
}

/*
 * Prepare to insert into "rel", which the caller has opened with
 * RowExclusiveLock.  The executor state exists only to let the executor
 * maintain every index of the table, including any an administrator added.
 */
void
el_appender_begin(ElAppender *app, Relation rel)
{
	app->rel = rel;
	app->estate = CreateExecutorState();
	app->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(app->rri, rel, 1, NULL, 0);
	ExecOpenIndices(app->rri, false);
	app->slot = ExecInitExtraTupleSlot(app->estate, RelationGetDescr(rel),
									   &TTSOpsVirtual);
}

void
el_appender_insert(ElAppender *app, const ElRecordIn *rec, int64 offset,
				   TimestampTz append_time)
{
	TupleTableSlot *slot = app->slot;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, 0, sizeof(bool) * EL_SEG_NATTS);
	slot->tts_values[EL_SEG_OFFSET - 1] = Int64GetDatum(offset);
	if (rec->key)
		slot->tts_values[EL_SEG_KEY - 1] = PointerGetDatum(rec->key);
	else
		slot->tts_isnull[EL_SEG_KEY - 1] = true;
	if (rec->value)
		slot->tts_values[EL_SEG_VALUE - 1] = PointerGetDatum(rec->value);
	else
		slot->tts_isnull[EL_SEG_VALUE - 1] = true;
	if (rec->headers)
		slot->tts_values[EL_SEG_HEADERS - 1] = PointerGetDatum(rec->headers);
	else
		slot->tts_isnull[EL_SEG_HEADERS - 1] = true;
	slot->tts_values[EL_SEG_EVENT_TIME - 1] =
		TimestampTzGetDatum(rec->has_event_time ? rec->event_time : append_time);
	slot->tts_values[EL_SEG_APPEND_TIME - 1] = TimestampTzGetDatum(append_time);
	ExecStoreVirtualTuple(slot);

	table_tuple_insert(app->rel, slot, GetCurrentCommandId(true), 0, NULL);
	if (app->rri->ri_NumIndices > 0)
		(void) el_insert_index_tuples(app->rri, slot, app->estate);
	ResetPerTupleExprContext(app->estate);
}

void
el_appender_end(ElAppender *app)
{
	ExecCloseIndices(app->rri);
	ExecDropSingleTupleTableSlot(app->slot);
	FreeExecutorState(app->estate);
}

/*
 * The largest (or smallest) offset in a segment visible to "snapshot",
 * from one end of its primary key through the index AM: no privilege or row
 * security check applies, as this serves counter recovery, not a reader.
 * False if the segment holds nothing visible or no longer exists.
 */
bool
el_segment_edge_offset(Oid relid, Snapshot snapshot, bool largest,
					   int64 *offset)
{
	Relation	rel;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	Oid			pk;
	bool		found = false;

	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return false;
	pk = el_primary_key_index(rel);
	if (!OidIsValid(pk))
		elog(ERROR, "segment \"%s\" has no primary key",
			 RelationGetRelationName(rel));
	index = index_open(pk, AccessShareLock);
	slot = table_slot_create(rel, NULL);
	scan = el_index_beginscan(rel, index, snapshot, 0, 0);
	index_rescan(scan, NULL, 0, NULL, 0);
	if (index_getnext_slot(scan, largest ? BackwardScanDirection : ForwardScanDirection,
						   slot))
	{
		bool		isnull;

		*offset = DatumGetInt64(slot_getattr(slot, EL_SEG_OFFSET, &isnull));
		found = true;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	relation_close(rel, AccessShareLock);
	return found;
}

PG_FUNCTION_INFO_V1(el_segment_guard);

/*
 * Trigger on segment tables: only produce may write records, and only
 * retention may remove them.
 */
Datum
el_segment_guard(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	const char *op;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "el_segment_guard must be called as a trigger");

	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		op = "insert into";
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		op = "update";
	else if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		op = "delete from";
	else
		op = "truncate";

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s event log segment \"%s\"", op,
					RelationGetRelationName(trigdata->tg_relation)),
			 errdetail("Segment tables are append-only and written only by eventlog.produce, which tracks in-flight offsets; retention removes whole segments."),
			 errhint("Use eventlog.produce or eventlog.produce_batch to append records.")));
	PG_RETURN_NULL();
}
