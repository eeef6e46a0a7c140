/*-------------------------------------------------------------------------
 *
 * compact.c
 *	  Log compaction's rewrite (eventlog._compact_segments): which records
 *	  of a partition's sealed segments survive, and the new segment tables
 *	  holding them.  The catalog side (which segments, when, the swap, the
 *	  metrics) is sql/install/compaction.sql.
 *
 * Two passes over the segments named, oldest first:
 *	1. a map from each key to its latest record (offset, append time,
 *	   whether it is a tombstone), and for each segment how many of its
 *	   records a later one of the same key supersedes;
 *	2. for each segment that loses records, a new table (created LIKE the
 *	   segment) receiving the survivors: the latest record of each key,
 *	   tombstones appended at or after the horizon, and records without a
 *	   key (kept: only records produced before the topic became compacted
 *	   have none).
 *
 * The map holds 128 bits of hash per key (two seeds of hash_bytes_extended),
 * not the key: its size does not depend on the keys' sizes, as Kafka's
 * offset map holds a digest.  Two keys colliding on 128 bits would lose the
 * older key's records; the odds are negligible, as for Kafka.
 *
 * The survivors are inserted FROZEN (the table was created in this
 * transaction, as COPY FREEZE requires).  Readers depend on it: a reader
 * takes its snapshot, then opens a segment; if compaction swapped that
 * segment in between, the reader finds the new table (scan.c), whose rows
 * a snapshot older than the swap's commit could not see were they not
 * frozen.  Every record they copy committed before the round began, so no
 * reader may see a record it should not.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "segment.h"
#include "topic.h"

PG_FUNCTION_INFO_V1(el_compact_segments);

#define EL_COMPACT_BATCH	1000

typedef struct ElKeyHash
{
	uint64		h[2];
} ElKeyHash;

typedef struct ElKeyEntry
{
	ElKeyHash	key;			/* hash key: must be first */
	int64		offset;			/* the key's latest record */
	TimestampTz append_time;
	int			segment;		/* index of the segment holding it */
	bool		tombstone;
} ElKeyEntry;

static void
el_key_hash(Datum key, ElKeyHash *out)
{
	struct varlena *v = PG_DETOAST_DATUM_PACKED(key);
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(v);
	int			len = VARSIZE_ANY_EXHDR(v);

	memset(out, 0, sizeof(*out));
	out->h[0] = DatumGetUInt64(hash_bytes_extended(p, len, 0x5eed0001));
	out->h[1] = DatumGetUInt64(hash_bytes_extended(p, len, 0x5eed0002));
	if ((Pointer) v != DatumGetPointer(key))
		pfree(v);
}

static Relation
el_open_segment_by_name(const char *nspname, const char *name, LOCKMODE mode)
{
	Oid			relid = RangeVarGetRelid(makeRangeVar((char *) nspname, (char *) name, -1),
										 mode, false);
	Relation	rel = table_open(relid, NoLock);

	return rel;
}

/*
 * eventlog._compact_segments(topic_id integer, partition integer,
 *     segments name[], horizon timestamptz)
 *   -> SETOF (segment name, new_table name, records_before bigint,
 *             records_after bigint, oldest_tombstone timestamptz)
 *
 * One row per segment scanned: new_table is the table holding its
 * survivors (NULL if it loses nothing), oldest_tombstone the append time of
 * the oldest tombstone it keeps.  The caller swaps the new tables in.
 */
Datum
el_compact_segments(PG_FUNCTION_ARGS)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(2);
	TimestampTz horizon = PG_GETARG_TIMESTAMPTZ(3);
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	Datum	   *names;
	bool	   *nulls;
	int			nsegs;
	int			i;
	char	   *nspname = get_namespace_name(el_segment_schema_oid());
	HASHCTL		ctl;
	HTAB	   *map;
	int64	   *total;
	int64	   *dropped;
	TimestampTz *oldest_tomb;
	Snapshot	snapshot;
	MemoryContext rowcxt;

	store = el_materialized_srf(fcinfo, "_compact_segments", &tupdesc);
	deconstruct_array(arr, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &names, &nulls, &nsegs);
	total = palloc0(sizeof(int64) * Max(nsegs, 1));
	dropped = palloc0(sizeof(int64) * Max(nsegs, 1));
	oldest_tomb = palloc(sizeof(TimestampTz) * Max(nsegs, 1));
	for (i = 0; i < nsegs; i++)
		oldest_tomb[i] = DT_NOEND;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(ElKeyHash);
	ctl.entrysize = sizeof(ElKeyEntry);
	ctl.hcxt = CurrentMemoryContext;
	map = hash_create("pg_eventlog compaction map", 1024, &ctl,
					  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "pg_eventlog compaction row",
								   ALLOCSET_DEFAULT_SIZES);

	/* Every record of a sealed segment committed before the round began. */
	snapshot = RegisterSnapshot(GetLatestSnapshot());

	/* Pass 1: the latest record of each key. */
	for (i = 0; i < nsegs; i++)
	{
		Relation	rel;
		TableScanDesc scan;
		TupleTableSlot *slot;

		if (nulls[i])
			elog(ERROR, "segment names must not be null");
		rel = el_open_segment_by_name(nspname, NameStr(*DatumGetName(names[i])),
									  AccessShareLock);
		el_segment_check_shape(rel, TupleDescAttr(RelationGetDescr(rel), EL_SEG_KEY - 1)->atttypid == BYTEAOID);
		slot = table_slot_create(rel, NULL);
		scan = table_beginscan(rel, snapshot, 0, NULL);
		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			Datum		key;
			ElKeyHash	h;
			ElKeyEntry *e;
			bool		found;
			int64		off;

			CHECK_FOR_INTERRUPTS();
			total[i]++;
			key = slot_getattr(slot, EL_SEG_KEY, &isnull);
			if (isnull)
				continue;
			off = DatumGetInt64(slot_getattr(slot, EL_SEG_OFFSET, &isnull));
			el_key_hash(key, &h);
			e = hash_search(map, &h, HASH_ENTER, &found);
			if (found && e->offset > off)
			{
				/* An older record of a key already seen. */
				dropped[i]++;
				continue;
			}
			if (found)
				dropped[e->segment]++;
			e->offset = off;
			e->segment = i;
			(void) slot_getattr(slot, EL_SEG_VALUE, &isnull);
			e->tombstone = isnull;
			e->append_time = DatumGetTimestampTz(slot_getattr(slot, EL_SEG_APPEND_TIME, &isnull));
		}
		table_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		table_close(rel, NoLock);
	}

	/*
	 * Tombstones older than the horizon go too; of those that stay, each
	 * segment's oldest says when a round will next have work.
	 */
	{
		HASH_SEQ_STATUS seq;
		ElKeyEntry *e;

		hash_seq_init(&seq, map);
		while ((e = hash_seq_search(&seq)) != NULL)
		{
			if (!e->tombstone)
				continue;
			if (e->append_time < horizon)
				dropped[e->segment]++;
			else if (e->append_time < oldest_tomb[e->segment])
				oldest_tomb[e->segment] = e->append_time;
		}
	}

	/* Pass 2: the survivors of each segment that loses records. */
	for (i = 0; i < nsegs; i++)
	{
		const char *segname = NameStr(*DatumGetName(names[i]));
		Datum		values[5];
		bool		rnulls[5] = {false, false, false, false, true};
		char		newname[NAMEDATALEN];
		int64		kept = 0;

		if (dropped[i] > 0)
		{
			Relation	rel;
			Relation	newrel;
			TableScanDesc scan;
			TupleTableSlot *slot;
			TupleTableSlot **batch;
			BulkInsertState bistate;
			CommandId	cid;
			int			nbatch = 0;
			int			j;
			char	   *sql;

			snprintf(newname, sizeof(newname), "%s_c", segname);
			if (strlen(segname) + 2 >= NAMEDATALEN)
				elog(ERROR, "segment name \"%s\" is too long to compact", segname);
			sql = psprintf("CREATE TABLE %s.%s (LIKE %s.%s)",
						   quote_identifier(nspname), quote_identifier(newname),
						   quote_identifier(nspname), quote_identifier(segname));
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
				elog(ERROR, "could not create the compacted segment \"%s\"", newname);
			SPI_finish();
			CommandCounterIncrement();

			rel = el_open_segment_by_name(nspname, segname, AccessShareLock);
			newrel = el_open_segment_by_name(nspname, newname, AccessExclusiveLock);
			slot = table_slot_create(rel, NULL);
			batch = palloc(sizeof(TupleTableSlot *) * EL_COMPACT_BATCH);
			for (j = 0; j < EL_COMPACT_BATCH; j++)
				batch[j] = table_slot_create(newrel, NULL);
			bistate = GetBulkInsertState();
			cid = GetCurrentCommandId(true);
			scan = table_beginscan(rel, snapshot, 0, NULL);
			while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
			{
				bool		isnull;
				Datum		key;

				CHECK_FOR_INTERRUPTS();
				key = slot_getattr(slot, EL_SEG_KEY, &isnull);
				if (!isnull)
				{
					ElKeyHash	h;
					ElKeyEntry *e;
					int64		off = DatumGetInt64(slot_getattr(slot, EL_SEG_OFFSET, &isnull));

					MemoryContextReset(rowcxt);
					{
						MemoryContext old = MemoryContextSwitchTo(rowcxt);

						el_key_hash(key, &h);
						MemoryContextSwitchTo(old);
					}
					e = hash_search(map, &h, HASH_FIND, NULL);
					if (e == NULL || e->offset != off)
						continue;
					if (e->tombstone && e->append_time < horizon)
						continue;
				}
				ExecClearTuple(batch[nbatch]);
				ExecCopySlot(batch[nbatch], slot);
				nbatch++;
				kept++;
				if (nbatch == EL_COMPACT_BATCH)
				{
					table_multi_insert(newrel, batch, nbatch, cid, TABLE_INSERT_FROZEN, bistate);
					nbatch = 0;
				}
			}
			if (nbatch > 0)
				table_multi_insert(newrel, batch, nbatch, cid, TABLE_INSERT_FROZEN, bistate);
			table_endscan(scan);
			FreeBulkInsertState(bistate);
			table_finish_bulk_insert(newrel, TABLE_INSERT_FROZEN);
			for (j = 0; j < EL_COMPACT_BATCH; j++)
				ExecDropSingleTupleTableSlot(batch[j]);
			pfree(batch);
			ExecDropSingleTupleTableSlot(slot);
			table_close(newrel, NoLock);
			table_close(rel, NoLock);
			values[1] = DirectFunctionCall1(namein, CStringGetDatum(newname));
		}
		else
		{
			kept = total[i];
			rnulls[1] = true;
			values[1] = (Datum) 0;
		}
		values[0] = names[i];
		values[2] = Int64GetDatum(total[i]);
		values[3] = Int64GetDatum(kept);
		if (oldest_tomb[i] != DT_NOEND)
		{
			rnulls[4] = false;
			values[4] = TimestampTzGetDatum(oldest_tomb[i]);
		}
		tuplestore_putvalues(store, tupdesc, values, rnulls);
	}
	UnregisterSnapshot(snapshot);
	hash_destroy(map);
	MemoryContextDelete(rowcxt);
	return (Datum) 0;
}
