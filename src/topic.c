/*-------------------------------------------------------------------------
 *
 * topic.c
 *	  Topic metadata for the hot paths: a per-backend cache of the catalog
 *	  tables, its invalidation, and the recovery of a partition's offset
 *	  counter after a server start.
 *
 * The cache maps a topic name to its id, partition count and, per
 * partition, the segment tables (by OID, resolved from the names stored in
 * segment_catalog).  Statement triggers on the three catalog tables send a
 * relcache invalidation of the table they fire on; the callback below bumps
 * el_cache_generation, and the next lookup reloads.  Callers that open a
 * segment table compare the generation before and after taking the lock, as
 * the lock is where pending invalidations are processed.
 *
 * The catalog is read with a fresh snapshot, not the transaction's, so that
 * a REPEATABLE READ transaction never caches a stale segment list.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogdefs.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "storage/lock.h"

#include "locks.h"
#include "segment.h"

#include "topic.h"

uint64		el_cache_generation = 1;

static HTAB *el_topic_cache = NULL;
static MemoryContext el_cache_cxt = NULL;
static uint64 el_cache_loaded_generation = 0;

/* OIDs of the catalog tables, known once the cache has been loaded. */
static Oid	el_catalog_relids[3];

static Oid	el_schema_oid(void);

static void
el_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid ||
		relid == el_catalog_relids[0] ||
		relid == el_catalog_relids[1] ||
		relid == el_catalog_relids[2])
		el_cache_generation++;
}

void
el_topic_cache_init(void)
{
	CacheRegisterRelcacheCallback(el_relcache_callback, (Datum) 0);
}

/*
 * Watch the catalog tables for changes (el_cache_generation) without
 * loading a topic: for the notifier, which caches topic names.  In a
 * transaction.
 */
void
el_watch_catalog(void)
{
	Oid			nsp = el_schema_oid();

	el_catalog_relids[0] = get_relname_relid("topic_catalog", nsp);
	el_catalog_relids[1] = get_relname_relid("partition_catalog", nsp);
	el_catalog_relids[2] = get_relname_relid("segment_catalog", nsp);
}

/* Make the next lookup read the catalog again. */
void
el_topic_invalidate(void)
{
	el_cache_generation++;
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

/* Validate a topic name argument: 22023 outside Kafka's alphabet. */
void
el_check_topic_name(const char *name, int len)
{
	int			i;
	bool		ok = (len >= 1 && len <= EL_TOPIC_NAME_MAX);

	for (i = 0; ok && i < len; i++)
	{
		char		c = name[i];

		ok = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-');
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid topic name \"%.*s\"", Min(len, 210), name),
				 errdetail("A topic name is 1 to 200 characters, each a letter (A-Z, a-z), a digit, \".\", \"_\" or \"-\".")));
}

/*
 * Fetch a text argument that must not be NULL, as a C string.
 */
char *
el_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/*
 * Copy the oid[] in column "col" of "tup" into *roles (palloc'd in the
 * current context), *nroles elements; NULL elements are skipped.
 */
static void
el_load_roles(HeapTuple tup, TupleDesc desc, int col, int *nroles, Oid **roles)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;

	*nroles = 0;
	*roles = NULL;
	if (isnull)
		return;
	deconstruct_array(DatumGetArrayTypeP(d), OIDOID, sizeof(Oid), true,
					  TYPALIGN_INT, &elems, &nulls, &n);
	*roles = palloc(sizeof(Oid) * Max(n, 1));
	for (i = 0; i < n; i++)
		if (!nulls[i])
			(*roles)[(*nroles)++] = DatumGetObjectId(elems[i]);
}

/* Load one topic from the catalog into "entry"; false if there is none. */
static bool
el_topic_load(ElTopic *entry, const char *name)
{
	Oid			nsp = el_schema_oid();
	Oid			segnsp = el_segment_schema_oid();
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	MemoryContext old;
	bool		found = false;
	int			ret;
	int			pin;
	uint64		i;

	el_catalog_relids[0] = get_relname_relid("topic_catalog", nsp);
	el_catalog_relids[1] = get_relname_relid("partition_catalog", nsp);
	el_catalog_relids[2] = get_relname_relid("segment_catalog", nsp);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	pin = el_pin_search_path();
	PushActiveSnapshot(GetLatestSnapshot());

	args[0] = CStringGetTextDatum(name);

	/*
	 * A database still at version 0.1.0 (this library installed, ALTER
	 * EXTENSION UPDATE not run yet) has no privilege columns: load it as
	 * 0.1.0 did, with privileges on the segment tables (acl.c).
	 */
	entry->legacy_acl = (get_attnum(el_catalog_relids[0], "owner") == InvalidAttrNumber);
	ret = SPI_execute_with_args(
		entry->legacy_acl ?
		"SELECT t.topic_id, t.partitions, 0::oid, NULL::oid[], NULL::oid[]"
		"  FROM " EL_SCHEMA_NAME ".topic_catalog t"
		" WHERE t.name = $1" :
		"SELECT t.topic_id, t.partitions, t.owner::oid,"
		"       t.producers::oid[], t.consumers::oid[]"
		"  FROM " EL_SCHEMA_NAME ".topic_catalog t"
		" WHERE t.name = $1",
		1, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read eventlog.topic_catalog: %s",
			 SPI_result_code_string(ret));

	if (SPI_processed == 1)
	{
		bool		isnull;
		Oid			argtypes2[1] = {INT4OID};
		Datum		args2[1];
		int32		npartitions;

		found = true;
		entry->topic_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
													  SPI_tuptable->tupdesc, 1, &isnull));
		npartitions = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
												  SPI_tuptable->tupdesc, 2, &isnull));
		entry->owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
													  SPI_tuptable->tupdesc, 3, &isnull));

		old = MemoryContextSwitchTo(el_cache_cxt);
		entry->parts = palloc0(sizeof(ElPartitionMeta) * npartitions);
		el_load_roles(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4,
					  &entry->nproducers, &entry->producers);
		el_load_roles(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5,
					  &entry->nconsumers, &entry->consumers);
		MemoryContextSwitchTo(old);
		entry->npartitions = npartitions;

		args2[0] = Int32GetDatum(entry->topic_id);
		ret = SPI_execute_with_args(
			"SELECT p.partition, p.log_start_offset, p.offset_floor,"
			"       s.segment_no, s.base_offset, s.table_name,"
			"       count(*) OVER (PARTITION BY p.partition)::integer"
			"  FROM " EL_SCHEMA_NAME ".partition_catalog p"
			"  LEFT JOIN " EL_SCHEMA_NAME ".segment_catalog s USING (topic_id, partition)"
			" WHERE p.topic_id = $1"
			" ORDER BY p.partition, s.segment_no",
			1, argtypes2, args2, NULL, true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "could not read eventlog.segment_catalog: %s",
				 SPI_result_code_string(ret));

		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			int32		p = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
			ElPartitionMeta *meta;
			ElSegment  *seg;
			char	   *relname;

			if (p < 0 || p >= npartitions)
				continue;		/* a partition being added right now */
			meta = &entry->parts[p];
			if (meta->segments == NULL)
			{
				int			n = DatumGetInt32(SPI_getbinval(tup, desc, 7, &isnull));

				meta->log_start_offset = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
				meta->offset_floor = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
				meta->segments = MemoryContextAllocZero(el_cache_cxt,
														sizeof(ElSegment) * n);
			}
			(void) SPI_getbinval(tup, desc, 4, &isnull);
			if (isnull)
				continue;		/* a partition without segments */
			seg = &meta->segments[meta->nsegments++];
			seg->segment_no = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
			seg->base_offset = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
			if (isnull)
				seg->base_offset = EL_BASE_UNKNOWN;
			relname = SPI_getvalue(tup, desc, 6);
			seg->relid = get_relname_relid(relname, segnsp);
		}
	}

	PopActiveSnapshot();
	el_unpin_search_path(pin);
	SPI_finish();
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

ElTopic *
el_topic_lookup(text *name_text)
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
 * The commit of a drop wakes long polls (shmem.c) before PostgreSQL sends
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

void
el_check_partition(ElTopic *topic, int32 partition)
{
	if (partition < 0 || partition >= topic->npartitions)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition %d of topic \"%s\" does not exist",
						partition, topic->name),
				 errdetail("The topic has %d partitions, numbered 0 to %d.",
						   topic->npartitions, topic->npartitions - 1)));
}

/*
 * Refuse to run during recovery: a hot standby has no in-flight table.  One
 * complete message per use, as the error message style guide asks (a verb
 * pasted into a sentence cannot be translated).
 */
void
el_refuse_in_recovery(ElRecoveryUse use)
{
	if (!RecoveryInProgress())
		return;
	switch (use)
	{
		case EL_USE_PRODUCE:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot produce to an event log during recovery"),
					 errdetail("A hot standby does not know which offsets are still in flight on the primary, so it cannot tell which records are stable."),
					 errhint("Connect to the primary.")));
			break;
		case EL_USE_READ:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot read an event log during recovery"),
					 errdetail("A hot standby does not know which offsets are still in flight on the primary, so it cannot tell which records are stable."),
					 errhint("Connect to the primary.")));
			break;
		case EL_USE_MAINTAIN:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot maintain an event log during recovery"),
					 errdetail("A hot standby does not know which offsets are still in flight on the primary, so it cannot tell which records are stable."),
					 errhint("Connect to the primary; its maintenance worker runs there.")));
			break;
		case EL_USE_COUNTER:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot recover an event log partition's offset counter during recovery"),
					 errdetail("A counter recovered on a hot standby would be stale at promotion."),
					 errhint("Connect to the primary.")));
			break;
	}
}

/*
 * The offset a partition's counter resumes at after a server start, a
 * promotion, or a freed slot: the largest of the persisted floor, the log
 * start offset, the largest stored offset plus one, and (with consumer
 * groups) the largest committed position.  Offsets that no reader could
 * have seen, trailing aborted ones, may thus be handed out again; an offset
 * any reader or group could have seen never is.
 *
 * The catalog and the segments are read with one fresh snapshot, and the
 * segments through the table AM, without privilege checks: a producer needs
 * no SELECT privilege, and row security must not hide the largest offset.
 */
/*
 * The lock that orders a partition's counter recovery with maintenance
 * rounds: a round holds it (eventlog._xact_lock(1, ...) in
 * eventlog._maintain_topic; locks.c) from reading the routing until it has
 * recorded the active segment's base offset and committed; recovery takes
 * it for the time it reads the catalog.  So recovery never routes offsets
 * below a base a round is about to record.
 */
static void
el_routing_locktag(LOCKTAG *tag, ElTopic *topic, int32 partition)
{
	el_locktag(tag, EL_LOCK_ROUTING, el_routing_lock_key(topic->topic_id, partition));
}

static int64 el_recover_locked(ElTopic *topic, int32 partition, ElRouting *routing);
static bool el_stable_offset_unslotted(ElTopic *topic, int32 partition,
									   ElStableOffset *out);

int64
el_recover_next_offset(ElTopic *topic, int32 partition, ElRouting *routing)
{
	LOCKTAG		tag;
	volatile int64 next = 0;

	el_routing_locktag(&tag, topic, partition);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	PG_TRY();
	{
		next = el_recover_locked(topic, partition, routing);
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();
	return next;
}

static int64
el_recover_locked(ElTopic *topic, int32 partition, ElRouting *routing)
{
	Oid			nsp = el_segment_schema_oid();
	Snapshot	snapshot;
	Oid			argtypes[2] = {INT4OID, INT4OID};
	Datum		args[2];
	int64		next = 0;
	int			nsegs = 0;
	Oid		   *relids = NULL;
	int32	   *segnos = NULL;
	int64	   *bases = NULL;
	int			i;
	int			ret;
	int			pin;

	snapshot = RegisterSnapshot(GetLatestSnapshot());

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	pin = el_pin_search_path();
	PushActiveSnapshot(snapshot);
	args[0] = Int32GetDatum(topic->topic_id);
	args[1] = Int32GetDatum(partition);
	/*
	 * The floor, the log start, and every group's committed position and
	 * members' fetch positions: a group may have moved past trailing aborted
	 * offsets, which must then never be handed out again.
	 */
	ret = SPI_execute_with_args(
		"SELECT greatest(p.offset_floor, p.log_start_offset,"
		"                (SELECT max(greatest(o.next_offset, o.fetch_offset))"
		"                   FROM " EL_SCHEMA_NAME ".group_offsets o"
		"                  WHERE o.topic_id = p.topic_id AND o.partition = p.partition))"
		"  FROM " EL_SCHEMA_NAME ".partition_catalog p"
		" WHERE p.topic_id = $1 AND p.partition = $2",
		2, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read eventlog.partition_catalog: %s",
			 SPI_result_code_string(ret));
	if (SPI_processed == 1)
	{
		bool		isnull;

		next = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	}
	ret = SPI_execute_with_args(
		"SELECT s.table_name, s.segment_no, s.base_offset"
		"  FROM " EL_SCHEMA_NAME ".segment_catalog s"
		" WHERE s.topic_id = $1 AND s.partition = $2"
		" ORDER BY s.segment_no",
		2, argtypes, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read eventlog.segment_catalog: %s",
			 SPI_result_code_string(ret));
	nsegs = (int) SPI_processed;
	relids = palloc0(sizeof(Oid) * Max(nsegs, 1));
	segnos = palloc0(sizeof(int32) * Max(nsegs, 1));
	bases = palloc0(sizeof(int64) * Max(nsegs, 1));
	for (i = 0; i < nsegs; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		relids[i] = get_relname_relid(SPI_getvalue(tup, desc, 1), nsp);
		segnos[i] = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		bases[i] = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		if (isnull)
			bases[i] = EL_BASE_UNKNOWN;
	}
	PopActiveSnapshot();
	el_unpin_search_path(pin);
	SPI_finish();

	/*
	 * Routing: the newest segment with a recorded base offset is active,
	 * unless a newer one (activated, its base not yet recorded) already
	 * holds records; its base is then its smallest offset.
	 */
	routing->active_segno = nsegs > 0 ? segnos[0] : 0;
	routing->active_base = 0;
	for (i = 0; i < nsegs; i++)
	{
		if (bases[i] != EL_BASE_UNKNOWN)
		{
			routing->active_segno = segnos[i];
			routing->active_base = bases[i];
		}
		else if (OidIsValid(relids[i]))
		{
			int64		min_offset;

			if (el_segment_edge_offset(relids[i], snapshot, false, &min_offset))
			{
				routing->active_segno = segnos[i];
				routing->active_base = min_offset;
			}
		}
	}

	/* The newest segment that holds anything has the largest offset. */
	for (i = nsegs - 1; i >= 0; i--)
	{
		int64		max_offset;

		if (OidIsValid(relids[i]) &&
			el_segment_edge_offset(relids[i], snapshot, true, &max_offset))
		{
			next = Max(next, max_offset + 1);
			break;
		}
	}
	next = Max(next, routing->active_base);
	UnregisterSnapshot(snapshot);
	return next;
}

/*
 * The attached partition handle.  Each cached partition (ElPartitionMeta)
 * keeps a reference (slot pointer, incarnation) to its partition's slot in
 * shared memory; a new cache entry (after every reload of the topic cache)
 * starts unattached, and a slot may be freed or given to another partition
 * at any time (its topic dropped, or room needed: shmem.c).  So no code
 * outside el_with_partition touches that reference: every operation on a
 * partition's shared state goes through it, and it attaches, recovers the
 * counter after a server start, and attaches again whenever the slot turned
 * out stale.
 *
 * "op" does the work under the slot's lock and returns false, having done
 * nothing, if the reference is stale or the counter not recovered (the
 * shmem.c functions taking an ElSlotRef all behave so).  The usual case,
 * attached and ready, costs one lock.  Never recovers a counter during
 * recovery: a standby's counters would be stale at promotion.
 *
 * A reader ("reader") never needs a slot (issue 13, item 6): when every slot
 * has transactions in flight, it gets false, with nothing run, instead of an
 * error, and does without (el_stable_offset_unslotted).  Otherwise true,
 * once "op" has run.
 */
typedef bool (*ElSlotOp) (const ElSlotRef *ref, void *arg);

static bool
el_with_partition(ElTopic *topic, int32 partition, bool reader, ElSlotOp op,
				  void *arg)
{
	ElSlotRef  *ref = &topic->parts[partition].ref;
	int			attempt;

	/*
	 * Each turn either succeeds or finds the slot freed or reassigned since
	 * the last.  Under heavy slot churn (far more partitions in use than
	 * eventlog.max_partitions, producers taking slots others are still
	 * recovering) that can happen many times in a row: after ten quick
	 * turns, pause a millisecond between turns to let the others finish,
	 * and give up only after about a second.
	 */
	for (attempt = 0; attempt < 1000; attempt++)
	{
		if (attempt >= 10)
		{
			CHECK_FOR_INTERRUPTS();
			pg_usleep(1000L);
		}
		if (ref->slot != NULL && op(ref, arg))
			return true;
		if (ref->slot == NULL)
		{
			ElPartitionKey key;

			memset(&key, 0, sizeof(key));
			key.dbid = MyDatabaseId;
			key.topic_id = topic->topic_id;
			key.partition = partition;
			if (!reader)
				el_partition_attach(&key, ref);
			else if (!el_partition_try_attach(&key, ref))
				return false;
		}
		switch (el_partition_status(ref))
		{
			case EL_SLOT_READY:
				break;			/* run op on the next turn */
			case EL_SLOT_UNINITIALIZED:
				{
					ElRouting	routing;
					int64		next;

					el_refuse_in_recovery(EL_USE_COUNTER);
					next = el_recover_next_offset(topic, partition, &routing);
					if (el_partition_set_initial(ref, next, &routing))
						break;
				}
				/* FALLTHROUGH */
			case EL_SLOT_STALE:
				ref->slot = NULL;	/* attach again */
				break;
		}
	}
	elog(ERROR, "could not attach to the shared state of partition %d of topic \"%s\"",
		 partition, topic->name);
	return false;				/* keep compiler quiet */
}

typedef struct ElTakeOffsetsArg
{
	int			count;
	int64		first;
	int32	   *segno;
	TimestampTz *append_time;
} ElTakeOffsetsArg;

static bool
el_take_offsets_op(const ElSlotRef *ref, void *arg)
{
	ElTakeOffsetsArg *a = arg;

	return el_allocate_offsets(ref, a->count, &a->first, a->segno, a->append_time);
}

/*
 * Take "count" consecutive offsets in a partition for the current
 * transaction; see el_allocate_offsets.
 */
int64
el_take_offsets(ElTopic *topic, int32 partition, int count, int32 *segno,
				TimestampTz *append_time)
{
	ElTakeOffsetsArg a;

	a.count = count;
	a.first = 0;
	a.segno = segno;
	a.append_time = append_time;
	(void) el_with_partition(topic, partition, false, el_take_offsets_op, &a);
	return a.first;
}

static bool
el_routing_op(const ElSlotRef *ref, void *arg)
{
	return el_partition_routing(ref, (ElRouting *) arg);
}

/* Whether a partition has a shared slot now (see el_stable_offset_unslotted). */
static bool
el_has_slot(ElTopic *topic, int32 partition)
{
	ElPartitionKey key;

	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.topic_id = topic->topic_id;
	key.partition = partition;
	return el_partition_has_slot(&key);
}

/* Where a partition's new records go now. */
void
el_get_routing(ElTopic *topic, int32 partition, ElRouting *routing)
{
	int			attempt;

	for (attempt = 0; attempt < 10; attempt++)
	{
		if (el_with_partition(topic, partition, true, el_routing_op, routing))
			return;

		/*
		 * No slot to be had: the routing is what recovery computes, as a
		 * slot attached now would start with (see el_stable_offset_unslotted).
		 */
		(void) el_recover_next_offset(topic, partition, routing);
		if (!el_has_slot(topic, partition))
			return;
	}
	elog(ERROR, "could not read the routing of partition %d of topic \"%s\"",
		 partition, topic->name);
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

static bool
el_stable_offset_op(const ElSlotRef *ref, void *arg)
{
	return el_stable_offset(ref, (ElStableOffset *) arg);
}

/*
 * A partition's last stable offset and high watermark, for a reader.  Also
 * flushes WAL up to the newest commit of a producing transaction, so that
 * no record a reader is about to return can be lost in a crash (see
 * el_release_inflight); with synchronous commits it is already flushed and
 * this costs a comparison.
 */
void
el_read_stable_offset(ElTopic *topic, int32 partition, ElStableOffset *out)
{
	int			attempt;

	for (attempt = 0; attempt < 10; attempt++)
	{
		if (el_with_partition(topic, partition, true, el_stable_offset_op, out))
		{
			if (!XLogRecPtrIsInvalid(out->commit_lsn))
				XLogFlush(out->commit_lsn);
			return;
		}
		/* A reader does without a slot rather than fail. */
		if (el_stable_offset_unslotted(topic, partition, out))
			return;
	}
	elog(ERROR, "could not read the offsets of partition %d of topic \"%s\"",
		 partition, topic->name);
}

/*
 * A reader's offsets for a partition that has no shared slot and cannot
 * get one, every slot being pinned by transactions in flight (of other
 * databases, perhaps: issue 13, item 6) or having its counter recovered by
 * another backend (shmem.c, el_find_free_slot).  Readers never need to pin
 * a slot.
 * Offsets are only ever taken under a slot, in the critical section that
 * registers their in-flight entry, and a slot is freed only while it has no
 * entry: so a partition without a slot has no offset in flight, and its
 * stable offset is its high watermark, which counter recovery computes from
 * the catalog and the segments.  The order matters: recovery reads with a
 * snapshot taken first, the check that no slot exists comes after it.  An
 * offset in flight when the snapshot was taken would need a slot that still
 * existed then; if it is gone by the check, that transaction has ended and
 * is visible to the reader's later scan snapshot, or never will be; offsets
 * taken after the check come from a counter recovered at least this high.
 * False if the partition has a slot by then: the caller attaches to it.
 *
 * Without a slot, the newest commit LSN of the partition is not known: flush
 * all WAL written so far instead (as el_read_stable_offset flushes to the
 * partition's, so that no record returned can vanish in a crash).  This costs
 * recovery queries on every call: it is the exception, while slots are
 * exhausted.
 */
static bool
el_stable_offset_unslotted(ElTopic *topic, int32 partition, ElStableOffset *out)
{
	ElRouting	routing;
	int64		next;

	el_refuse_in_recovery(EL_USE_COUNTER);
	next = el_recover_next_offset(topic, partition, &routing);
	if (el_has_slot(topic, partition))
		return false;
	out->stable = next;
	out->high_watermark = next;
	out->holder_pid = 0;
	out->commit_lsn = InvalidXLogRecPtr;
	out->active_segno = routing.active_segno;
	XLogFlush(el_wal_insert_end());
	return true;
}

/* ------------------------------------------------------------------------
 * SQL-callable helpers of the catalog functions
 * ------------------------------------------------------------------------ */

PG_FUNCTION_INFO_V1(el_partition_routing_sql);
PG_FUNCTION_INFO_V1(el_activate_segment_at_commit_sql);
PG_FUNCTION_INFO_V1(el_catalog_changed);
PG_FUNCTION_INFO_V1(el_require_shmem_sql);
PG_FUNCTION_INFO_V1(el_forget_topic);

/*
 * eventlog._partition_routing(topic text, partition integer)
 *		-> (active_segment integer, active_base bigint)
 */
Datum
el_partition_routing_sql(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	ElTopic    *topic;
	int32		partition = PG_GETARG_INT32(1);
	ElRouting	routing;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	topic = el_topic_lookup(PG_GETARG_TEXT_PP(0));
	el_check_partition(topic, partition);
	el_refuse_in_recovery(EL_USE_MAINTAIN);
	el_get_routing(topic, partition, &routing);
	values[0] = Int32GetDatum(routing.active_segno);
	values[1] = Int64GetDatum(routing.active_base);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* eventlog._activate_segment_at_commit(topic_id, partition, segment_no) */
Datum
el_activate_segment_at_commit_sql(PG_FUNCTION_ARGS)
{
	el_require_shmem();
	el_activate_segment_at_commit(PG_GETARG_INT32(0), PG_GETARG_INT32(1),
								  PG_GETARG_INT32(2));
	PG_RETURN_VOID();
}

/* Trigger on the catalog tables: every backend must reload its cache. */
Datum
el_catalog_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "el_catalog_changed must be called as a trigger");
	CacheInvalidateRelcache(trigdata->tg_relation);
	return PointerGetDatum(NULL);
}

Datum
el_require_shmem_sql(PG_FUNCTION_ARGS)
{
	el_require_shmem();
	PG_RETURN_VOID();
}

Datum
el_forget_topic(PG_FUNCTION_ARGS)
{
	el_forget_topic_at_commit(PG_GETARG_INT32(0));
	PG_RETURN_VOID();
}
