/*-------------------------------------------------------------------------
 *
 * topic.c
 *	  Topic metadata for the hot paths: a per-backend cache of the catalog
 *	  tables, its lookups and its invalidation.  The shared state of a
 *	  partition (its offset counter, recovered after a server start) is
 *	  reached through partition.c.
 *
 * The cache maps a topic name to its id, partition count and, per
 * partition, the segment tables (by OID, resolved from the names stored in
 * segment_catalog).  Row triggers on the three catalog tables send a
 * relcache invalidation of an empty row type, eventlog.catalog_signal
 * (el_catalog_changed); the callback below bumps el_cache_generation, and
 * the next lookup reloads.  Callers that open a segment table compare the
 * generation before and after taking the lock, as the lock is where pending
 * invalidations are processed.
 *
 * The catalog is read through its indexes with a fresh snapshot, not the
 * transaction's, so that a REPEATABLE READ transaction never caches a stale
 * segment list.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "topic.h"

uint64		el_cache_generation = 1;

static HTAB *el_topic_cache = NULL;
static MemoryContext el_cache_cxt = NULL;
static uint64 el_cache_loaded_generation = 0;

/*
 * OIDs of the catalog tables and of the signal row type (InvalidOid in a
 * catalog older than 0.3.0), known once the cache has been loaded.
 */
static Oid	el_catalog_relids[3];
static Oid	el_catalog_signal_relid = InvalidOid;

/*
 * The segment schema, looked up when first needed (two catalog scans: it
 * must belong to the extension) and forgotten when the catalog tables
 * themselves change (the extension dropped, created or updated) or a caller
 * finds the cache stale; not when only the catalog's rows change.
 */
static Oid	el_cache_segnsp = InvalidOid;

/* The type eventlog.header[], forgotten with el_cache_segnsp. */
static Oid	el_cache_header_array = InvalidOid;

static Oid	el_schema_oid(void);
static void el_find_catalog(Oid nsp);

static void
el_relcache_callback(Datum arg, Oid relid)
{
	if (OidIsValid(relid) && relid == el_catalog_signal_relid)
		el_cache_generation++;
	else if (relid == InvalidOid ||
			 relid == el_catalog_relids[0] ||
			 relid == el_catalog_relids[1] ||
			 relid == el_catalog_relids[2])
	{
		el_cache_generation++;
		el_cache_segnsp = InvalidOid;
		el_cache_header_array = InvalidOid;
	}
}

void
el_topic_cache_init(void)
{
	CacheRegisterRelcacheCallback(el_relcache_callback, (Datum) 0);
}

/*
 * Note the OIDs the relcache callback watches: the catalog tables (their
 * own invalidations come with DDL on them, as ALTER EXTENSION UPDATE or
 * DROP EXTENSION make) and the signal row type, which the catalog triggers
 * invalidate when rows change (el_catalog_changed).
 */
static void
el_find_catalog(Oid nsp)
{
	el_catalog_relids[0] = get_relname_relid("topic_catalog", nsp);
	el_catalog_relids[1] = get_relname_relid("partition_catalog", nsp);
	el_catalog_relids[2] = get_relname_relid("segment_catalog", nsp);
	el_catalog_signal_relid = get_relname_relid(EL_CATALOG_SIGNAL, nsp);
}

/*
 * Watch the catalog tables for changes (el_cache_generation) without
 * loading a topic: for the notifier, which caches topic names.  In a
 * transaction.
 */
void
el_watch_catalog(void)
{
	el_find_catalog(el_schema_oid());
}

/* Make the next lookup read the catalog again. */
void
el_topic_invalidate(void)
{
	el_cache_generation++;
	el_cache_segnsp = InvalidOid;
	el_cache_header_array = InvalidOid;
}

/* Throw the whole cache away if the catalog changed since it was built. */
static void
el_cache_reset_if_stale(void)
{
	HASHCTL		info;

	if (el_topic_cache != NULL && el_cache_loaded_generation == el_cache_generation)
		return;

	if (el_cache_cxt == NULL)
		el_cache_cxt = AllocSetContextCreate(TopMemoryContext,
											 "pg_eventlog topic cache",
											 ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(el_cache_cxt);

	memset(&info, 0, sizeof(info));
	info.keysize = EL_TOPIC_NAME_MAX + 1;
	info.entrysize = sizeof(ElTopic);
	info.hcxt = el_cache_cxt;
	el_topic_cache = hash_create("pg_eventlog topics", 16, &info,
								 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	el_cache_loaded_generation = el_cache_generation;
}

static Oid
el_schema_oid(void)
{
	Oid			nsp = get_namespace_oid(EL_SCHEMA_NAME, true);

	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"pg_eventlog\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION pg_eventlog.")));
	return nsp;
}

/*
 * The schema holding the segment tables: eventlog_segments from 0.3.0 on,
 * the extension's own schema in a database whose extension has not been
 * updated yet.  A schema named eventlog_segments counts only if it belongs
 * to the extension: one made by another role is never used, so records are
 * never written to (or read from) tables that role owns.
 */
Oid
el_segment_schema_oid(void)
{
	Oid			nsp = get_namespace_oid(EL_SEGMENT_SCHEMA_NAME, true);
	Oid			ext = get_extension_oid(EL_EXTENSION_NAME, true);

	if (OidIsValid(nsp) && OidIsValid(ext) &&
		getExtensionOfObject(NamespaceRelationId, nsp) == ext)
		return nsp;
	return el_schema_oid();
}

/*
 * Copy the regrole[] "d" (unless "isnull") into *roles (palloc'd in the
 * current context), *nroles elements; NULL elements are skipped.
 */
static void
el_load_roles(Datum d, bool isnull, int *nroles, Oid **roles)
{
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;

	*nroles = 0;
	*roles = NULL;
	if (isnull)
		return;
	arr = DatumGetArrayTypeP(d);
	/* regrole is an oid: same length, by value, int alignment */
	deconstruct_array(arr, ARR_ELEMTYPE(arr), sizeof(Oid), true,
					  TYPALIGN_INT, &elems, &nulls, &n);
	*roles = palloc(sizeof(Oid) * Max(n, 1));
	for (i = 0; i < n; i++)
		if (!nulls[i])
			(*roles)[(*nroles)++] = DatumGetObjectId(elems[i]);
}

/* A column's number in a catalog table, or an error naming it. */
static AttrNumber
el_catalog_attnum(Oid relid, const char *column)
{
	AttrNumber	attnum = get_attnum(relid, column);

	if (attnum == InvalidAttrNumber)
		elog(ERROR, "column \"%s\" of pg_eventlog's catalog table \"%s\" is missing",
			 column, get_rel_name(relid));
	return attnum;
}

/*
 * Begin a scan of a catalog table for the rows whose first "nkeys" columns
 * of its index "index_name" equal "values" (integers): through that index
 * when it exists, else with a sequential scan.
 */
static SysScanDesc
el_catalog_scan(Relation rel, const char *index_name, Oid nsp, Snapshot snapshot,
				int nkeys, const char *const *columns, const Datum *values,
				ScanKeyData *keys)
{
	Oid			index = get_relname_relid(index_name, nsp);
	int			i;

	for (i = 0; i < nkeys; i++)
		ScanKeyInit(&keys[i], el_catalog_attnum(RelationGetRelid(rel), columns[i]),
					BTEqualStrategyNumber, F_INT4EQ, values[i]);
	return systable_beginscan(rel, index, OidIsValid(index), snapshot, nkeys, keys);
}

/* One segment row, while a topic is loaded. */
typedef struct ElSegmentRow
{
	int32		partition;
	ElSegment	seg;
} ElSegmentRow;

static int
el_segment_row_cmp(const void *a, const void *b)
{
	const ElSegmentRow *x = a;
	const ElSegmentRow *y = b;

	if (x->partition != y->partition)
		return x->partition < y->partition ? -1 : 1;
	if (x->seg.segment_no != y->seg.segment_no)
		return x->seg.segment_no < y->seg.segment_no ? -1 : 1;
	return 0;
}

/*
 * The table of a segment as the catalog names it now, InvalidOid if the
 * segment is gone.  Compaction swaps a segment's table for a new one of the
 * same name (compaction.sql): a reader whose cached segment list holds the
 * old table's OID finds the new one here (scan.c), and updates its cache
 * entry in place, as the reload the swap's invalidation brings would.
 */
Oid
el_segment_relid_now(ElTopic *topic, int32 partition, int32 segment_no)
{
	Oid			nsp = el_schema_oid();
	Snapshot	snapshot;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData keys[3];
	HeapTuple	tup;
	Datum		values[3];
	Oid			relid = InvalidOid;
	static const char *const by_segment[] = {"topic_id", "partition", "segment_no"};

	el_find_catalog(nsp);
	if (!OidIsValid(el_catalog_relids[2]))
		return InvalidOid;
	if (!OidIsValid(el_cache_segnsp))
		el_cache_segnsp = el_segment_schema_oid();
	values[0] = Int32GetDatum(topic->topic_id);
	values[1] = Int32GetDatum(partition);
	values[2] = Int32GetDatum(segment_no);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	rel = table_open(el_catalog_relids[2], AccessShareLock);
	scan = el_catalog_scan(rel, "segment_catalog_pkey", nsp, snapshot,
						   3, by_segment, values, keys);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup,
									 el_catalog_attnum(el_catalog_relids[2], "table_name"),
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			relid = get_relname_relid(NameStr(*DatumGetName(d)), el_cache_segnsp);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	UnregisterSnapshot(snapshot);
	return relid;
}

/*
 * Load one topic from the catalog into "entry"; false if there is none.
 *
 * Through the catalog tables' indexes (genam), not SPI: every backend
 * reloads its cache after each change of the catalog, a maintenance round
 * rolling a segment included, and SQL would parse and plan its queries
 * afresh each time (the change invalidates plans over the catalog too);
 * an index lookup costs a few microseconds.  Columns are found by name,
 * since a catalog updated from 0.1.0 has its privilege columns at the end.
 */
static bool
el_topic_load(ElTopic *entry, const char *name)
{
	Oid			nsp = el_schema_oid();
	Oid			segnsp;
	Snapshot	snapshot;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData keys[2];
	HeapTuple	tup;
	TupleDesc	desc;
	Oid			index;
	AttrNumber	name_att;
	Datum		values[2];
	bool		isnull;
	bool		found = false;
	int32		npartitions = 0;
	ElSegmentRow *rows = NULL;
	int			nrows = 0;
	int			maxrows = 0;
	int			i;
	static const char *const by_topic[] = {"topic_id", "partition"};

	el_find_catalog(nsp);
	if (!OidIsValid(el_catalog_relids[0]) || !OidIsValid(el_catalog_relids[1]) ||
		!OidIsValid(el_catalog_relids[2]))
		elog(ERROR, "pg_eventlog's catalog tables are missing");

	if (!OidIsValid(el_cache_segnsp))
		el_cache_segnsp = el_segment_schema_oid();
	segnsp = el_cache_segnsp;

	/*
	 * A fresh snapshot, not the transaction's: a REPEATABLE READ transaction
	 * must not cache a stale segment list.
	 */
	snapshot = RegisterSnapshot(GetLatestSnapshot());

	/* The topic, by name (the UNIQUE constraint's index). */
	rel = table_open(el_catalog_relids[0], AccessShareLock);
	desc = RelationGetDescr(rel);
	index = get_relname_relid("topic_catalog_name_key", nsp);
	name_att = el_catalog_attnum(el_catalog_relids[0], "name");
	ScanKeyInit(&keys[0], name_att, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(name));
	/* Compare in the column's collation, as its UNIQUE index does. */
	keys[0].sk_collation = TupleDescAttr(desc, name_att - 1)->attcollation;
	scan = systable_beginscan(rel, index, OidIsValid(index), snapshot, 1, keys);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		AttrNumber	owner_att = get_attnum(el_catalog_relids[0], "owner");
		AttrNumber	format_att = get_attnum(el_catalog_relids[0], "format");
		MemoryContext old;

		found = true;
		entry->topic_id = DatumGetInt32(heap_getattr(tup,
													 el_catalog_attnum(el_catalog_relids[0], "topic_id"),
													 desc, &isnull));
		npartitions = DatumGetInt32(heap_getattr(tup,
												 el_catalog_attnum(el_catalog_relids[0], "partitions"),
												 desc, &isnull));
		/* A catalog older than 0.3.0 has no format: every topic is JSON. */
		entry->binary = false;
		if (format_att != InvalidAttrNumber)
		{
			Datum		format = heap_getattr(tup, format_att, desc, &isnull);

			entry->binary = !isnull &&
				strcmp(TextDatumGetCString(format), "binary") == 0;
		}

		/* A catalog older than 0.3.0 has no compaction. */
		entry->compacted = false;
		{
			AttrNumber	policy_att = get_attnum(el_catalog_relids[0], "cleanup_policy");

			if (policy_att != InvalidAttrNumber)
			{
				Datum		policy = heap_getattr(tup, policy_att, desc, &isnull);

				entry->compacted = !isnull &&
					strncmp(TextDatumGetCString(policy), "compact", 7) == 0;
			}
		}

		/*
		 * A database still at version 0.1.0 (this library installed, ALTER
		 * EXTENSION UPDATE not run yet) has no privilege columns: load it as
		 * 0.1.0 did, with privileges on the segment tables (acl.c).
		 */
		entry->legacy_acl = (owner_att == InvalidAttrNumber);
		old = MemoryContextSwitchTo(el_cache_cxt);
		entry->parts = palloc0(sizeof(ElPartitionMeta) * npartitions);
		if (entry->legacy_acl)
		{
			entry->owner = InvalidOid;
			el_load_roles((Datum) 0, true, &entry->nproducers, &entry->producers);
			el_load_roles((Datum) 0, true, &entry->nconsumers, &entry->consumers);
		}
		else
		{
			Datum		d;

			entry->owner = DatumGetObjectId(heap_getattr(tup, owner_att, desc, &isnull));
			d = heap_getattr(tup, el_catalog_attnum(el_catalog_relids[0], "producers"),
							 desc, &isnull);
			el_load_roles(d, isnull, &entry->nproducers, &entry->producers);
			d = heap_getattr(tup, el_catalog_attnum(el_catalog_relids[0], "consumers"),
							 desc, &isnull);
			el_load_roles(d, isnull, &entry->nconsumers, &entry->consumers);
		}
		MemoryContextSwitchTo(old);
		entry->npartitions = npartitions;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	if (found)
	{
		AttrNumber	part_att;
		AttrNumber	lso_att;
		AttrNumber	floor_att;
		AttrNumber	segno_att;
		AttrNumber	base_att;
		AttrNumber	table_att;

		values[0] = Int32GetDatum(entry->topic_id);

		/* Its partitions. */
		rel = table_open(el_catalog_relids[1], AccessShareLock);
		desc = RelationGetDescr(rel);
		part_att = el_catalog_attnum(el_catalog_relids[1], "partition");
		lso_att = el_catalog_attnum(el_catalog_relids[1], "log_start_offset");
		floor_att = el_catalog_attnum(el_catalog_relids[1], "offset_floor");
		scan = el_catalog_scan(rel, "partition_catalog_pkey", nsp, snapshot,
							   1, by_topic, values, keys);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			int32		p = DatumGetInt32(heap_getattr(tup, part_att, desc, &isnull));
			ElPartitionMeta *meta;

			if (p < 0 || p >= npartitions)
				continue;		/* a partition being added right now */
			meta = &entry->parts[p];
			meta->log_start_offset = DatumGetInt64(heap_getattr(tup, lso_att, desc, &isnull));
			meta->offset_floor = DatumGetInt64(heap_getattr(tup, floor_att, desc, &isnull));
		}
		systable_endscan(scan);
		table_close(rel, AccessShareLock);

		/* Its segments, sorted by partition and segment number. */
		rel = table_open(el_catalog_relids[2], AccessShareLock);
		desc = RelationGetDescr(rel);
		part_att = el_catalog_attnum(el_catalog_relids[2], "partition");
		segno_att = el_catalog_attnum(el_catalog_relids[2], "segment_no");
		base_att = el_catalog_attnum(el_catalog_relids[2], "base_offset");
		table_att = el_catalog_attnum(el_catalog_relids[2], "table_name");
		scan = el_catalog_scan(rel, "segment_catalog_pkey", nsp, snapshot,
							   1, by_topic, values, keys);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			ElSegmentRow *row;
			Datum		base;

			if (nrows == maxrows)
			{
				maxrows = Max(16, maxrows * 2);
				rows = rows ? repalloc(rows, sizeof(ElSegmentRow) * maxrows)
					: palloc(sizeof(ElSegmentRow) * maxrows);
			}
			row = &rows[nrows++];
			row->partition = DatumGetInt32(heap_getattr(tup, part_att, desc, &isnull));
			row->seg.segment_no = DatumGetInt32(heap_getattr(tup, segno_att, desc, &isnull));
			base = heap_getattr(tup, base_att, desc, &isnull);
			row->seg.base_offset = isnull ? EL_BASE_UNKNOWN : DatumGetInt64(base);
			row->seg.relid = get_relname_relid(NameStr(*DatumGetName(heap_getattr(tup, table_att,
																				  desc, &isnull))),
											   segnsp);
		}
		systable_endscan(scan);
		table_close(rel, AccessShareLock);

		if (nrows > 1)
			qsort(rows, nrows, sizeof(ElSegmentRow), el_segment_row_cmp);
		for (i = 0; i < nrows; i++)
		{
			ElPartitionMeta *meta;
			int			n = 1;

			if (rows[i].partition < 0 || rows[i].partition >= npartitions)
				continue;		/* a partition being added right now */
			meta = &entry->parts[rows[i].partition];
			if (meta->segments == NULL)
			{
				while (i + n < nrows && rows[i + n].partition == rows[i].partition)
					n++;
				meta->segments = MemoryContextAllocZero(el_cache_cxt,
														sizeof(ElSegment) * n);
			}
			meta->segments[meta->nsegments++] = rows[i].seg;
		}
	}

	UnregisterSnapshot(snapshot);
	return found;
}

/*
 * The cached metadata of a topic, loading it if needed.  Raises 22004 for a
 * NULL name, 22023 for an invalid one and 42704 if there is no such topic
 * (unless "missing_ok": then NULL).  The result stays valid until the next
 * call.
 */
static ElTopic *
el_topic_lookup_internal(text *name_text, bool missing_ok)
{
	char		name[EL_TOPIC_NAME_MAX + 1];
	int			len = VARSIZE_ANY_EXHDR(name_text);
	ElTopic    *entry;
	bool		found;

	el_require_shmem();
	el_check_topic_name(VARDATA_ANY(name_text), len);
	memcpy(name, VARDATA_ANY(name_text), len);
	name[len] = '\0';

	el_cache_reset_if_stale();
	entry = hash_search(el_topic_cache, name, HASH_FIND, NULL);
	if (entry)
		return entry;

	/* Not cached: load it, and cache it only if it exists. */
	{
		ElTopic		loaded;

		memset(&loaded, 0, sizeof(loaded));
		if (!el_topic_load(&loaded, name))
		{
			if (missing_ok)
				return NULL;
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("topic \"%s\" does not exist", name),
					 errhint("Create it with eventlog.create_topic(), or list topics in eventlog.topics.")));
		}
		/*
		 * Should an invalidation have arrived during the load, the entry
		 * lands in a cache already marked stale and is used only once.
		 */
		entry = hash_search(el_topic_cache, name, HASH_ENTER, &found);
		entry->topic_id = loaded.topic_id;
		entry->npartitions = loaded.npartitions;
		entry->binary = loaded.binary;
		entry->compacted = loaded.compacted;
		entry->parts = loaded.parts;
		entry->legacy_acl = loaded.legacy_acl;
		entry->owner = loaded.owner;
		entry->nproducers = loaded.nproducers;
		entry->producers = loaded.producers;
		entry->nconsumers = loaded.nconsumers;
		entry->consumers = loaded.consumers;
	}
	return entry;
}

/*
 * The topic an SQL function acts on.  The changes captured so far in this
 * transaction are produced first (capture_batch.c): a function that
 * produces appends after them, as it did when each change was produced at
 * once, and one that reads sees them.
 */
ElTopic *
el_topic_lookup(text *name_text)
{
	el_capture_flush();
	return el_topic_lookup_internal(name_text, false);
}

/* The same, for change capture itself: it must not produce what it buffers. */
ElTopic *
el_topic_get(text *name_text)
{
	return el_topic_lookup_internal(name_text, false);
}

/* The id of topic "name" in the catalog now (a fresh snapshot), 0 if none. */
static int32
el_topic_id_now(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;
	Datum		topic_id;

	(void) el_schema_oid();
	args[0] = CStringGetTextDatum(name);
	topic_id = el_catalog_value_now("SELECT topic_id FROM " EL_SCHEMA_NAME ".topic_catalog"
									" WHERE name = $1",
									1, argtypes, args, "eventlog.topic_catalog", &isnull);
	return isnull ? 0 : DatumGetInt32(topic_id);
}

/*
 * For a long poll, before each sleep: the topic "name", which must still be
 * the topic "topic_id" the call started with; raises 42704 if it was
 * dropped (or dropped and created again under the same name) meanwhile.
 *
 * The commit of a drop wakes long polls (slots.c) before PostgreSQL sends
 * its catalog invalidations, so the cache cannot tell yet.  The catalog
 * itself is read, with a fresh snapshot, on the first look (*drops == 0) and
 * whenever the cluster's count of topic drops has moved since the last look
 * (*drops): the drop is visible to new snapshots before it counts and
 * broadcasts.  Drops are rare; the other wake-ups cost no catalog access.
 */
ElTopic *
el_topic_recheck(text *name_text, int32 topic_id, uint64 *drops)
{
	uint64		now = el_topic_drop_count();
	ElTopic    *topic;

	AcceptInvalidationMessages();
	if (*drops != now)
	{
		*drops = now;
		if (el_topic_id_now(text_to_cstring(name_text)) != topic_id)
			topic = NULL;
		else
			topic = el_topic_lookup_internal(name_text, true);
	}
	else
		topic = el_topic_lookup_internal(name_text, true);
	if (topic == NULL || topic->topic_id != topic_id)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("topic \"%s\" was dropped while waiting",
						text_to_cstring(name_text)),
				 errdetail("Another transaction dropped the topic while this call waited for its records.")));
	return topic;
}

/*
 * The type eventlog.header[] (the headers column of a binary topic's
 * segments), or InvalidOid in a database whose extension predates 0.3.0.
 */
Oid
el_header_array_type(void)
{
	if (!OidIsValid(el_cache_header_array))
	{
		Oid			header = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
											 CStringGetDatum("header"),
											 ObjectIdGetDatum(el_schema_oid()));

		if (OidIsValid(header))
			el_cache_header_array = get_array_type(header);
	}
	return el_cache_header_array;
}

/* The cached segment "segno" of a partition, or NULL. */
ElSegment *
el_find_segment(ElTopic *topic, int32 partition, int32 segno)
{
	ElPartitionMeta *meta = &topic->parts[partition];
	int			i;

	for (i = meta->nsegments - 1; i >= 0; i--)
		if (meta->segments[i].segment_no == segno)
			return &meta->segments[i];
	return NULL;
}

/* ------------------------------------------------------------------------
 * SQL-callable helpers of the catalog functions
 * ------------------------------------------------------------------------ */

PG_FUNCTION_INFO_V1(el_catalog_changed);
PG_FUNCTION_INFO_V1(el_require_shmem_sql);

/*
 * Trigger on the catalog tables: every backend must reload its cache.
 *
 * The invalidation sent is the signal row type's (eventlog.catalog_signal),
 * not the changed table's: a relcache invalidation of a catalog table would
 * also make every backend rebuild its relcache entries of that table and
 * replan every cached plan over it (consumers' polls, maintenance rounds),
 * though only rows changed; nothing is cached for the row type.  A catalog
 * older than 0.3.0 has no signal: the table's own invalidation then.
 * Several rows of one transaction send one message.
 */
Datum
el_catalog_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Oid			signal;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "el_catalog_changed must be called as a trigger");
	signal = get_relname_relid(EL_CATALOG_SIGNAL,
							   RelationGetNamespace(trigdata->tg_relation));
	if (OidIsValid(signal))
		CacheInvalidateRelcacheByRelid(signal);
	else
		CacheInvalidateRelcache(trigdata->tg_relation);
	return PointerGetDatum(NULL);
}

Datum
el_require_shmem_sql(PG_FUNCTION_ARGS)
{
	el_require_shmem();
	PG_RETURN_VOID();
}
