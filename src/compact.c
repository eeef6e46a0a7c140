/*-------------------------------------------------------------------------
 *
 * compact.c
 *	  Log compaction's rewrite (eventlog._compact_segments): which records
 *	  of a partition's sealed segments survive, and the new segment tables
 *	  holding them.  The catalog side (which segments, when, the swap, the
 *	  metrics) is sql/install/compaction.sql.
 *
 * A round is one pass, as a pass of Kafka's log cleaner:
 *	1. a map from each key of the dirty records (at or after dirty_from,
 *	   where the last pass stopped) to its latest offset, oldest segment
 *	   first, bounded by eventlog.compaction_memory
 *	   (log.cleaner.dedupe.buffer.size);
 *	2. the clean records (below dirty_from) are checked against it: one
 *	   whose key the map holds has a later record;
 *	3. for each segment that loses records, a new table (created LIKE the
 *	   segment) receiving the survivors: records whose key has no later
 *	   record in the map, except tombstones appended before the horizon,
 *	   and records without a key (kept: only records produced before the
 *	   topic became compacted have none).
 *
 * When the keys of the dirty records do not all fit, the pass ends at the
 * cutoff: the lowest offset whose key found the map full.  The map is then
 * rebuilt from the records below the cutoff only (their keys are a subset
 * of those that fitted), so that it holds, for each key, its latest offset
 * below the cutoff: the pass leaves every record at or after the cutoff
 * untouched, and below it, as a complete pass would, only the latest
 * record of each key.  The next pass starts at the cutoff, which may lie
 * inside a segment.  A record is dropped only if the map holds a later
 * offset of its key, so the latest record of a key is never dropped; an
 * expired tombstone only below the cutoff, where every earlier record of
 * its key is gone (this pass or an earlier one removed them).
 *
 * The map holds 128 bits of hash per key (two seeds of
 * hash_bytes_extended), not the key: its size does not depend on the keys'
 * sizes, as Kafka's offset map holds a digest.  Two keys colliding on 128
 * bits would lose the older key's records; the odds are negligible, as for
 * Kafka.  Its memory (entries, buckets, directory) comes from a context of
 * its own, whose allocated blocks are what the setting bounds.
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
#include "utils/guc.h"
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

/*
 * The map's memory: blocks of 8 kB at most, so that a new key costs at most
 * one element chunk and one bucket segment (about 2 kB each, their own
 * blocks) beyond what the context holds: the map takes no new key once
 * less than EL_MAP_SLACK is left.  Each key costs about EL_MAP_KEY_BYTES
 * (its element, 16 B of header and 40 B of entry, and a bucket pointer).
 */
#define EL_MAP_BLOCK		8192
#define EL_MAP_SLACK		(16 * 1024)
#define EL_MAP_KEY_BYTES	64
#define EL_MAP_SEGSIZE		256 /* dynahash's DEF_SEGSIZE */

int			el_compaction_memory_kb = 64 * 1024;

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

/* What a pass knows of each segment it covers. */
typedef struct ElSegPass
{
	int64		total;			/* its records */
	int64		dropped;		/* of them, those the pass drops */
	TimestampTz oldest_tomb;	/* the oldest tombstone it keeps */
	bool		mapped;			/* scanned while building the map */
} ElSegPass;

typedef struct ElCompactMap
{
	MemoryContext cxt;
	HTAB	   *htab;
	Size		limit;			/* bytes */
	bool		full;
} ElCompactMap;

/* The context dynahash allocates from (one map at a time per backend). */
static MemoryContext el_map_alloc_cxt = NULL;

void
el_compact_init(void)
{
	DefineCustomIntVariable("eventlog.compaction_memory",
							"Memory the key map of a compaction round may use, per partition.",
							"Like Kafka's log.cleaner.dedupe.buffer.size: about 64 bytes per key, whatever its size. "
							"When the keys of a partition's dirty records do not fit, a round compacts the records "
							"whose keys fit and leaves the rest to the next rounds.",
							&el_compaction_memory_kb,
							64 * 1024, 64, MAX_KILOBYTES,
							PGC_SIGHUP, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

static void *
el_map_alloc(Size size)
{
	return MemoryContextAlloc(el_map_alloc_cxt, size);
}

/*
 * A map of at most limit bytes.  Its directory is sized for the keys the
 * limit can hold and never grows: dynahash would reallocate it with pfree,
 * which only its own allocator may.
 */
static void
el_map_create(ElCompactMap *m, Size limit)
{
	HASHCTL		ctl;
	long		dsize = 1;
	long		keys = (long) Min(limit / EL_MAP_KEY_BYTES, (Size) LONG_MAX / 2);

	while (dsize * EL_MAP_SEGSIZE < keys && dsize < (1L << 20))
		dsize <<= 1;
	m->cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_eventlog compaction map",
								   0, EL_MAP_BLOCK, EL_MAP_BLOCK);
	m->limit = limit;
	m->full = false;
	el_map_alloc_cxt = m->cxt;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(ElKeyHash);
	ctl.entrysize = sizeof(ElKeyEntry);
	ctl.hcxt = m->cxt;
	ctl.alloc = el_map_alloc;
	ctl.dsize = dsize;
	ctl.max_dsize = dsize;
	m->htab = hash_create("pg_eventlog compaction map", EL_MAP_SEGSIZE, &ctl,
						  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT | HASH_ALLOC | HASH_DIRSIZE);
}

static void
el_map_destroy(ElCompactMap *m)
{
	MemoryContextDelete(m->cxt);
	el_map_alloc_cxt = NULL;
	m->htab = NULL;
}

/* Whether the map may take one more key. */
static bool
el_map_has_room(ElCompactMap *m)
{
	if (!m->full &&
		MemoryContextMemAllocated(m->cxt, true) + EL_MAP_SLACK > m->limit)
		m->full = true;
	return !m->full;
}

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

/* The map's entry for a record's key (NULL: none, or no key). */
static ElKeyEntry *
el_map_find(ElCompactMap *m, TupleTableSlot *slot, MemoryContext rowcxt,
			ElKeyHash *h)
{
	bool		isnull;
	Datum		key = slot_getattr(slot, EL_SEG_KEY, &isnull);
	MemoryContext old;

	if (isnull)
		return NULL;
	MemoryContextReset(rowcxt);
	old = MemoryContextSwitchTo(rowcxt);
	el_key_hash(key, h);
	MemoryContextSwitchTo(old);
	return hash_search(m->htab, h, HASH_FIND, NULL);
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
 * A scan in physical order from the first block (no synchronized scan: a
 * rebuild of the map must meet the records in the order the first build
 * did).
 */
static TableScanDesc
el_segment_scan(Relation rel, Snapshot snapshot)
{
	return table_beginscan_strat(rel, snapshot, 0, NULL, true, false);
}

typedef struct ElPass
{
	const char *nspname;
	Datum	   *names;
	int64	   *bases;
	int64	   *nexts;
	int			nsegs;
	int64		dirty_from;
	TimestampTz horizon;
	Snapshot	snapshot;
	MemoryContext rowcxt;
	ElSegPass  *segs;
} ElPass;

/*
 * Maps the keys of the dirty records below upto, segment by segment up to
 * *last.  Returns PG_INT64_MAX if they all fit, otherwise the cutoff (the
 * lowest offset whose key found the map full), with *last set to the
 * segment holding it: the caller rebuilds the map below the cutoff.
 */
static int64
el_map_build(ElPass *ps, ElCompactMap *m, int64 upto, int *last)
{
	int64		cutoff = PG_INT64_MAX;
	int			i;

	for (i = 0; i < ps->nsegs; i++)
	{
		ps->segs[i].total = 0;
		ps->segs[i].dropped = 0;
		ps->segs[i].oldest_tomb = DT_NOEND;
		ps->segs[i].mapped = false;
	}

	for (i = 0; i <= *last; i++)
	{
		Relation	rel;
		TableScanDesc scan;
		TupleTableSlot *slot;

		if (ps->nexts[i] <= ps->dirty_from)
			continue;
		ps->segs[i].mapped = true;
		rel = el_open_segment_by_name(ps->nspname, NameStr(*DatumGetName(ps->names[i])),
									  AccessShareLock);
		el_segment_check_shape(rel, TupleDescAttr(RelationGetDescr(rel), EL_SEG_KEY - 1)->atttypid == BYTEAOID);
		slot = table_slot_create(rel, NULL);
		scan = el_segment_scan(rel, ps->snapshot);
		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			ElKeyHash	h;
			ElKeyEntry *e;
			int64		off;

			CHECK_FOR_INTERRUPTS();
			ps->segs[i].total++;
			off = DatumGetInt64(slot_getattr(slot, EL_SEG_OFFSET, &isnull));
			if (off < ps->dirty_from || off >= upto)
				continue;
			(void) slot_getattr(slot, EL_SEG_KEY, &isnull);
			if (isnull)
				continue;
			e = el_map_find(m, slot, ps->rowcxt, &h);
			if (e == NULL)
			{
				bool		found;

				if (!el_map_has_room(m))
				{
					cutoff = Min(cutoff, off);
					continue;
				}
				e = hash_search(m->htab, &h, HASH_ENTER, &found);
			}
			else if (e->offset > off)
			{
				/* An older record of a key already seen. */
				ps->segs[i].dropped++;
				continue;
			}
			else
				ps->segs[e->segment].dropped++;
			e->offset = off;
			e->segment = i;
			(void) slot_getattr(slot, EL_SEG_VALUE, &isnull);
			e->tombstone = isnull;
			e->append_time = DatumGetTimestampTz(slot_getattr(slot, EL_SEG_APPEND_TIME, &isnull));
		}
		table_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		table_close(rel, NoLock);
		if (cutoff != PG_INT64_MAX)
		{
			*last = i;
			return cutoff;
		}
	}
	return PG_INT64_MAX;
}

/*
 * Whether a record survives the pass (its key's entry e, if any): a record
 * at or after the cutoff, or without a key, always does.
 */
static bool
el_survives(ElPass *ps, TupleTableSlot *slot, ElKeyEntry *e, int64 off, int64 upto)
{
	bool		isnull;

	if (off >= upto)
		return true;
	(void) slot_getattr(slot, EL_SEG_KEY, &isnull);
	if (isnull)
		return true;
	if (e != NULL && e->offset > off)
		return false;
	(void) slot_getattr(slot, EL_SEG_VALUE, &isnull);
	if (isnull &&
		DatumGetTimestampTz(slot_getattr(slot, EL_SEG_APPEND_TIME, &isnull)) < ps->horizon)
		return false;
	return true;
}

/*
 * The clean records (below dirty_from) of segments 0 to last: which go,
 * with the complete map.
 */
static void
el_count_clean(ElPass *ps, ElCompactMap *m, int last)
{
	int			i;

	for (i = 0; i <= last; i++)
	{
		Relation	rel;
		TableScanDesc scan;
		TupleTableSlot *slot;

		if (ps->bases[i] >= ps->dirty_from)
			continue;
		rel = el_open_segment_by_name(ps->nspname, NameStr(*DatumGetName(ps->names[i])),
									  AccessShareLock);
		el_segment_check_shape(rel, TupleDescAttr(RelationGetDescr(rel), EL_SEG_KEY - 1)->atttypid == BYTEAOID);
		slot = table_slot_create(rel, NULL);
		scan = el_segment_scan(rel, ps->snapshot);
		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			ElKeyHash	h;
			int64		off;

			CHECK_FOR_INTERRUPTS();
			if (!ps->segs[i].mapped)
				ps->segs[i].total++;
			off = DatumGetInt64(slot_getattr(slot, EL_SEG_OFFSET, &isnull));
			if (off >= ps->dirty_from)
				continue;
			if (!el_survives(ps, slot, el_map_find(m, slot, ps->rowcxt, &h), off, ps->dirty_from))
				ps->segs[i].dropped++;
			else
			{
				(void) slot_getattr(slot, EL_SEG_KEY, &isnull);
				if (isnull)
					continue;
				(void) slot_getattr(slot, EL_SEG_VALUE, &isnull);
				if (isnull)
				{
					TimestampTz at = DatumGetTimestampTz(slot_getattr(slot, EL_SEG_APPEND_TIME, &isnull));

					ps->segs[i].oldest_tomb = Min(ps->segs[i].oldest_tomb, at);
				}
			}
		}
		table_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		table_close(rel, NoLock);
	}
}

/* Writes the survivors of a segment into newname; returns how many. */
static int64
el_rewrite_segment(ElPass *ps, ElCompactMap *m, const char *segname,
				   const char *newname, int64 upto)
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
	int64		kept = 0;
	char	   *sql;

	sql = psprintf("CREATE TABLE %s.%s (LIKE %s.%s)",
				   quote_identifier(ps->nspname), quote_identifier(newname),
				   quote_identifier(ps->nspname), quote_identifier(segname));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create the compacted segment \"%s\"", newname);
	SPI_finish();
	CommandCounterIncrement();

	rel = el_open_segment_by_name(ps->nspname, segname, AccessShareLock);
	newrel = el_open_segment_by_name(ps->nspname, newname, AccessExclusiveLock);
	slot = table_slot_create(rel, NULL);
	batch = palloc(sizeof(TupleTableSlot *) * EL_COMPACT_BATCH);
	for (j = 0; j < EL_COMPACT_BATCH; j++)
		batch[j] = table_slot_create(newrel, NULL);
	bistate = GetBulkInsertState();
	cid = GetCurrentCommandId(true);
	scan = el_segment_scan(rel, ps->snapshot);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		ElKeyHash	h;
		int64		off;

		CHECK_FOR_INTERRUPTS();
		off = DatumGetInt64(slot_getattr(slot, EL_SEG_OFFSET, &isnull));
		if (!el_survives(ps, slot, off < upto ? el_map_find(m, slot, ps->rowcxt, &h) : NULL,
						 off, upto))
			continue;
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
	return kept;
}

static int64 *
el_int8_array(ArrayType *arr, int n, const char *what)
{
	Datum	   *elems;
	bool	   *nulls;
	int			count;
	int64	   *out;
	int			i;

	deconstruct_array(arr, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &count);
	if (count != n)
		elog(ERROR, "%s must have one element per segment", what);
	out = palloc(sizeof(int64) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		if (nulls[i])
			elog(ERROR, "%s must not be null", what);
		out[i] = DatumGetInt64(elems[i]);
	}
	return out;
}

/*
 * eventlog._compact_segments(topic_id integer, partition integer,
 *     segments name[], first_offsets bigint[], next_offsets bigint[],
 *     dirty_from bigint, horizon timestamptz)
 *   -> SETOF (segment name, new_table name, records_before bigint,
 *             records_after bigint, oldest_tombstone timestamptz,
 *             cleaned_to bigint)
 *
 * segments are a partition's cleanable sealed segments, oldest first, with
 * the offsets they hold; dirty_from is where the last pass stopped.  One row
 * per segment the pass covers: new_table is the table holding its
 * survivors (NULL if it loses nothing), oldest_tombstone the append time of
 * the oldest tombstone it keeps, cleaned_to where the pass stopped (NULL:
 * after the last segment; otherwise the last row's segment holds it).  The
 * caller swaps the new tables in.
 */
Datum
el_compact_segments(PG_FUNCTION_ARGS)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(2);
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	bool	   *nulls;
	int			i;
	ElPass		ps;
	ElCompactMap m;
	int64		upto = PG_INT64_MAX;
	int			last;

	memset(&ps, 0, sizeof(ps));
	store = el_materialized_srf(fcinfo, "_compact_segments", &tupdesc);
	ps.nspname = get_namespace_name(el_segment_schema_oid());
	deconstruct_array(arr, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &ps.names, &nulls, &ps.nsegs);
	for (i = 0; i < ps.nsegs; i++)
		if (nulls[i])
			elog(ERROR, "segment names must not be null");
	ps.bases = el_int8_array(PG_GETARG_ARRAYTYPE_P(3), ps.nsegs, "first offsets");
	ps.nexts = el_int8_array(PG_GETARG_ARRAYTYPE_P(4), ps.nsegs, "next offsets");
	ps.dirty_from = PG_GETARG_INT64(5);
	ps.horizon = PG_GETARG_TIMESTAMPTZ(6);
	ps.segs = palloc(sizeof(ElSegPass) * Max(ps.nsegs, 1));
	ps.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "pg_eventlog compaction row",
									  ALLOCSET_DEFAULT_SIZES);

	/* Every record of a sealed segment committed before the round began. */
	ps.snapshot = RegisterSnapshot(GetLatestSnapshot());

	/*
	 * 1. The map, rebuilt below the cutoff when the keys did not all fit (the
	 * rebuild fits: its keys are among those the first build took before it
	 * was full; should it not, the cutoff only moves down).
	 */
	last = ps.nsegs - 1;
	for (;;)
	{
		int64		cutoff;

		el_map_create(&m, (Size) el_compaction_memory_kb * 1024);
		cutoff = el_map_build(&ps, &m, upto, &last);
		if (cutoff == PG_INT64_MAX)
			break;
		upto = cutoff;
		el_map_destroy(&m);
	}

	/*
	 * Tombstones expired go too, below the cutoff (all the map holds); of
	 * those that stay, each segment's oldest says when a round will next have
	 * work.
	 */
	{
		HASH_SEQ_STATUS seq;
		ElKeyEntry *e;

		hash_seq_init(&seq, m.htab);
		while ((e = hash_seq_search(&seq)) != NULL)
		{
			if (!e->tombstone)
				continue;
			if (e->append_time < ps.horizon)
				ps.segs[e->segment].dropped++;
			else if (e->append_time < ps.segs[e->segment].oldest_tomb)
				ps.segs[e->segment].oldest_tomb = e->append_time;
		}
	}

	/* 2. The clean records. */
	el_count_clean(&ps, &m, last);

	/* 3. The survivors of each segment that loses records. */
	for (i = 0; i <= last; i++)
	{
		const char *segname = NameStr(*DatumGetName(ps.names[i]));
		Datum		values[6];
		bool		rnulls[6] = {false, false, false, false, true, true};
		char		newname[NAMEDATALEN];
		int64		kept;

		if (ps.segs[i].dropped > 0)
		{
			if (strlen(segname) + 2 >= NAMEDATALEN)
				elog(ERROR, "segment name \"%s\" is too long to compact", segname);
			snprintf(newname, sizeof(newname), "%s_c", segname);
			kept = el_rewrite_segment(&ps, &m, segname, newname, upto);
			values[1] = DirectFunctionCall1(namein, CStringGetDatum(newname));
		}
		else
		{
			kept = ps.segs[i].total;
			rnulls[1] = true;
			values[1] = (Datum) 0;
		}
		values[0] = ps.names[i];
		values[2] = Int64GetDatum(ps.segs[i].total);
		values[3] = Int64GetDatum(kept);
		if (ps.segs[i].oldest_tomb != DT_NOEND)
		{
			rnulls[4] = false;
			values[4] = TimestampTzGetDatum(ps.segs[i].oldest_tomb);
		}
		if (upto != PG_INT64_MAX)
		{
			rnulls[5] = false;
			values[5] = Int64GetDatum(upto);
		}
		tuplestore_putvalues(store, tupdesc, values, rnulls);
	}
	UnregisterSnapshot(ps.snapshot);
	el_map_destroy(&m);
	MemoryContextDelete(ps.rowcxt);
	return (Datum) 0;
}
