/*-------------------------------------------------------------------------
 *
 * producer.c
 *	  Idempotent producers: the sequence-number check of a producer's batch
 *	  in a partition before it is appended, the record of the batch after
 *	  (eventlog.producer_state, in the producing transaction), the
 *	  producer's locks, eventlog.producer_id_expiration and the maintenance
 *	  worker's expiry (docs/delivery.md says what it guarantees).
 *
 * A producer (eventlog.init_producer, sql/install/producers.sql) numbers
 * the records it sends to each partition 0, 1, 2, ... (wrapping from
 * 2147483647 to 0, as Kafka); a batch carries its first record's number.
 * Per producer and partition the server keeps the last 5 batches stored
 * (first and last sequence number, first offset).  A batch that repeats
 * one of them exactly is a retry: its original offsets are returned and
 * nothing is stored.  Otherwise it must start right after the last one
 * (at 0 for the producer's first batch in the partition under its epoch);
 * anything else is an error, as is an epoch older than the producer's.
 *
 * Concurrency: the check runs under two of pg_eventlog's locks (locks.h):
 * the producer's (kind 5), shared, which init_producer takes exclusively to
 * bump the epoch, and the producer's partition's (kind 6), exclusive, both
 * to the end of the transaction.  So a second batch of the same producer
 * and partition waits for the first's transaction to end, and then reads
 * the state with a snapshot taken after the wait (not the transaction's:
 * a REPEATABLE READ caller would miss what the first committed): a retry
 * whose first attempt committed gets its offsets, one whose first attempt
 * rolled back is stored.  The state row found with that snapshot is the
 * one updated (so a REPEATABLE READ transaction updates the newest
 * version), in the transaction that appends the records: it commits or
 * rolls back with them, and is as durable as they are.
 *
 * The caller has no privilege on the state tables, and needs none: they
 * are read and updated through the table AM, after produce's own checks
 * (the produce privilege, checked before anything is looked up, so that a
 * role without it learns nothing); the first batch's INSERT runs as their
 * owner.  The producer must be the caller's (its owner, or a role the
 * caller has the privileges of).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "locks.h"
#include "producer.h"
#include "worker.h"

PG_FUNCTION_INFO_V1(el_lock_producer);
PG_FUNCTION_INFO_V1(el_try_lock_producer);

/* SQLSTATEs of pg_eventlog's own class KP (docs/reference.md). */
#define EL_ERRCODE_OUT_OF_ORDER_SEQUENCE	MAKE_SQLSTATE('K','P','0','0','1')
#define EL_ERRCODE_DUPLICATE_SEQUENCE		MAKE_SQLSTATE('K','P','0','0','2')
#define EL_ERRCODE_PRODUCER_FENCED			MAKE_SQLSTATE('K','P','0','0','3')
#define EL_ERRCODE_UNKNOWN_PRODUCER			MAKE_SQLSTATE('K','P','0','0','4')

/* Sequence numbers run from 0 to INT32_MAX, then wrap to 0. */
#define EL_SEQ_MODULUS		((int64) PG_INT32_MAX + 1)

/* eventlog.producer_id_expiration, in seconds (Kafka's default, 1 day). */
static int	el_producer_id_expiration = 86400;

/*
 * The first batch of a producer in a partition inserts its state row with
 * a statement (foreign keys checked, as the tables' owner); later ones read
 * and update it directly through the table and index AMs: a statement's
 * executor start and end cost more than the rest of the check together.
 */
static const char *const el_producer_insert_sql =
"INSERT INTO " EL_SCHEMA_NAME ".producer_state"
"       (producer_id, topic_id, partition, epoch, first_sequence,"
"        last_sequence, first_offset, last_used)"
" VALUES ($1, $2, $3, $4, $5, $6, $7, pg_catalog.now())";

/* The state row's columns (sql/install/producers.sql), checked on use. */
#define EL_STATE_NATTS 8
static const Oid el_state_types[EL_STATE_NATTS] = {
	INT8OID, INT4OID, INT4OID, INT2OID, INT4ARRAYOID, INT4ARRAYOID,
	INT8ARRAYOID, TIMESTAMPTZOID
};
#define EL_CATALOG_NATTS 5
static const Oid el_catalog_types[EL_CATALOG_NATTS] = {
	INT8OID, INT2OID, TEXTOID, REGROLEOID, TIMESTAMPTZOID
};

/* The INSERT's saved plan, prepared on first use. */
static SPIPlanPtr el_producer_insert_plan = NULL;

/*
 * The OIDs of the state tables and their primary keys, looked up on first
 * use and forgotten by the relcache callback when any of them (or every
 * relation) is invalidated: DROP EXTENSION, ALTER EXTENSION UPDATE.
 */
enum
{
	EL_REL_CATALOG,
	EL_REL_CATALOG_PKEY,
	EL_REL_STATE,
	EL_REL_STATE_PKEY,
	EL_NRELS
};
static const char *const el_rel_names[EL_NRELS] = {
	"producer_catalog", "producer_catalog_pkey", "producer_state", "producer_state_pkey"
};
static Oid	el_rel_oids[EL_NRELS];

/*
 * Where this backend last saw the rows it uses, so that the next batch
 * reads them by TID, without descending the primary keys: a direct-mapped
 * cache of the catalog rows (by producer) and of the state rows (by
 * producer and partition).  A hint only: a row fetched at a remembered TID
 * is used only if the check's snapshot sees it and its key is the one
 * looked for, and then it is the row's one visible version, the one the
 * index would have found; otherwise the primary key is searched.
 */
#define EL_TID_CACHE_SIZE 64
typedef struct ElTidHint
{
	int64		producer_id;
	int32		topic_id;		/* -1 in the catalog cache */
	int32		partition;
	ItemPointerData tid;
} ElTidHint;
static ElTidHint el_catalog_hints[EL_TID_CACHE_SIZE];
static ElTidHint el_state_hints[EL_TID_CACHE_SIZE];

static void
el_producer_forget(void)
{
	int			i;

	for (i = 0; i < EL_NRELS; i++)
		el_rel_oids[i] = InvalidOid;
	for (i = 0; i < EL_TID_CACHE_SIZE; i++)
	{
		ItemPointerSetInvalid(&el_catalog_hints[i].tid);
		ItemPointerSetInvalid(&el_state_hints[i].tid);
	}
}

static void
el_producer_relcache_callback(Datum arg, Oid relid)
{
	int			i;

	for (i = 0; i < EL_NRELS; i++)
		if (!OidIsValid(relid) || relid == el_rel_oids[i])
		{
			el_producer_forget();
			return;
		}
}

void
el_producer_init(void)
{
	DefineCustomIntVariable("eventlog.producer_id_expiration",
							"How long an idempotent producer is kept after its last use.",
							"A producer that neither init_producer returned nor stored a batch "
							"for this long is removed with its state by the maintenance worker "
							"(Kafka's producer.id.expiration.ms).",
							&el_producer_id_expiration,
							86400, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	el_producer_forget();
	CacheRegisterRelcacheCallback(el_producer_relcache_callback, (Datum) 0);
}

/* The first sequence number after "seq" plus "n" records. */
static int32
el_seq_add(int32 seq, int64 n)
{
	return (int32) (((int64) seq + n) % EL_SEQ_MODULUS);
}

/*
 * The producer arguments of a *_idempotent function, from argument
 * "first_arg" on (producer_id, producer_epoch, sequence); the plain
 * functions (fewer arguments) share the C code and get "on" false.
 */
void
el_idempotence_args(FunctionCallInfo fcinfo, int first_arg,
					bool partition_given, ElIdempotence *idem)
{
	static const char *const names[3] = {"producer_id", "producer_epoch", "sequence"};
	int32		epoch;
	int			i;

	memset(idem, 0, sizeof(*idem));
	if (PG_NARGS() < first_arg + 3)
		return;
	for (i = 0; i < 3; i++)
		if (PG_ARGISNULL(first_arg + i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not be null", names[i]),
					 errdetail("An idempotent produce needs the producer's ID and epoch and the sequence number of its first record.")));
	/*
	 * Sequence numbers are per partition, and a retry must go where its
	 * first attempt went: the caller names the partition (as a Kafka
	 * client does), rather than a key hashed over a count that may grow.
	 */
	if (!partition_given)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("partition must not be null in an idempotent produce"),
				 errdetail("A producer's sequence numbers are per partition, so a retry must name the partition of its first attempt."),
				 errhint("eventlog.partition_for_key() gives the partition a key picks.")));
	idem->producer_id = PG_GETARG_INT64(first_arg);
	epoch = PG_GETARG_INT32(first_arg + 1);
	if (epoch < 0 || epoch > PG_INT16_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("producer epoch %d is out of range", epoch),
				 errdetail("A producer epoch is between 0 and %d.", PG_INT16_MAX)));
	idem->epoch = (int16) epoch;
	idem->sequence = PG_GETARG_INT32(first_arg + 2);
	if (idem->sequence < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sequence number %d is negative", idem->sequence),
				 errdetail("Sequence numbers run from 0 to 2147483647, then start again at 0.")));
	idem->on = true;
}

static void
el_producer_locktag(LOCKTAG *tag, const ElIdempotence *idem, int32 topic_id,
					int32 partition, bool whole_producer)
{
	int64		key = idem->producer_id;

	if (!whole_producer)
		key = (int64) hash_combine64((uint64) idem->producer_id,
									 (uint64) el_routing_lock_key(topic_id, partition));
	el_locktag(tag, whole_producer ? EL_LOCK_PRODUCER : EL_LOCK_PRODUCER_PARTITION, key);
}

/* A relation of the extension's schema (EL_REL_*), cached. */
static Oid
el_producer_relid(int which)
{
	Oid			relid = el_rel_oids[which];

	if (OidIsValid(relid))
		return relid;
	relid = get_relname_relid(el_rel_names[which],
							  get_namespace_oid(EL_SCHEMA_NAME, false));
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("idempotent producers need pg_eventlog 0.3.0"),
				 errhint("Run ALTER EXTENSION pg_eventlog UPDATE.")));
	el_rel_oids[which] = relid;
	return relid;
}

/* Refuse a table whose columns are not those the code reads by number. */
static void
el_producer_check_shape(Relation rel, int natts, const Oid *types)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		ok = (desc->natts == natts);
	int			i;

	for (i = 0; ok && i < natts; i++)
		ok = !TupleDescAttr(desc, i)->attisdropped &&
			TupleDescAttr(desc, i)->atttypid == types[i];
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s does not have the columns pg_eventlog made it with",
						RelationGetRelationName(rel)),
				 errhint("Undo the ALTER TABLE that changed it.")));
}

/*
 * The row of "index" (a primary key of "rel") equal to keys[0..nkeys), as
 * "snap" sees it, copied; NULL if there is none.
 */
static HeapTuple
el_producer_fetch(Relation rel, int index, Snapshot snap,
				  int nkeys, ScanKey keys)
{
	SysScanDesc scan;
	HeapTuple	tup;

	scan = systable_beginscan(rel, el_producer_relid(index), true, snap, nkeys, keys);
	tup = systable_getnext(scan);
	if (tup)
		tup = heap_copytuple(tup);
	systable_endscan(scan);
	return tup;
}

static ElTidHint *
el_hint_slot(ElTidHint *cache, int64 producer_id, int32 topic_id, int32 partition)
{
	uint64		h = hash_combine64((uint64) producer_id,
								   ((uint64) (uint32) topic_id << 32) | (uint32) partition);

	return &cache[hash_bytes_uint32((uint32) (h ^ (h >> 32))) % EL_TID_CACHE_SIZE];
}

/*
 * The row of "rel" at the TID remembered in "hint" for the key
 * (producer_id, topic_id, partition) (topic_id -1: the catalog, keyed by
 * producer alone), copied, if "snap" sees it and it has that key; NULL
 * otherwise.  The relation is locked, so it cannot be truncated under the
 * fetch, but it may have been before: the TID's block may be gone.
 */
static HeapTuple
el_producer_fetch_hint(Relation rel, const ElTidHint *hint, Snapshot snap,
					   int64 producer_id, int32 topic_id, int32 partition)
{
	ItemPointerData tid = hint->tid;
	Buffer		buf;
	TupleTableSlot *slot;
	HeapTuple	result = NULL;
	bool		isnull;

	if (!ItemPointerIsValid(&hint->tid) || hint->producer_id != producer_id ||
		hint->topic_id != topic_id || hint->partition != partition)
		return NULL;

	/*
	 * A block in shared buffers exists: a truncation drops the relation's
	 * buffers past its new end, and none can run while the caller holds
	 * its lock (asking the file for its size instead is a system call,
	 * which cost more than the index scan saved).  A block not in shared
	 * buffers is looked up through the index.
	 */
	if (!BufferIsValid(PrefetchBuffer(rel, MAIN_FORKNUM,
									  ItemPointerGetBlockNumber(&hint->tid)).recent_buffer))
		return NULL;

	/*
	 * Prune the page first, as an index scan does on its way to the row:
	 * each batch leaves a dead version of the row behind, and the update
	 * stays heap-only (no index entries) only while the page has room.
	 */
	buf = ReadBuffer(rel, ItemPointerGetBlockNumber(&tid));
	heap_page_prune_opt(rel, buf);
	ReleaseBuffer(buf);

	slot = table_slot_create(rel, NULL);
	if (table_tuple_fetch_row_version(rel, &tid, snap, slot))
	{
		HeapTuple	tuple = ExecFetchSlotHeapTuple(slot, false, NULL);
		TupleDesc	desc = RelationGetDescr(rel);

		if (DatumGetInt64(heap_getattr(tuple, 1, desc, &isnull)) == producer_id &&
			(topic_id < 0 ||
			 (DatumGetInt32(heap_getattr(tuple, 2, desc, &isnull)) == topic_id &&
			  DatumGetInt32(heap_getattr(tuple, 3, desc, &isnull)) == partition)))
			result = heap_copytuple(tuple);
	}
	ExecDropSingleTupleTableSlot(slot);
	return result;
}

static void
el_hint_set(ElTidHint *hint, int64 producer_id, int32 topic_id, int32 partition,
			ItemPointer tid)
{
	hint->producer_id = producer_id;
	hint->topic_id = topic_id;
	hint->partition = partition;
	hint->tid = *tid;
}

/* The state tables' owner, as whom the INSERT runs. */
static Oid
el_producer_tables_owner(void)
{
	Oid			relid = el_producer_relid(EL_REL_STATE);
	HeapTuple	tup;
	Oid			owner;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Insert the index entries of "tup", a new version of a row of "rel" that
 * is not heap-only, as CatalogTupleUpdate does (the state's indexes are
 * plain btrees on columns).
 */
static void
el_producer_index_tuple(Relation rel, HeapTuple tup)
{
	CatalogIndexState indstate = CatalogOpenIndexes(rel);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(rel),
													&TTSOpsHeapTuple);
	int			i;

	ExecStoreHeapTuple(tup, slot, false);
	for (i = 0; i < indstate->ri_NumIndices; i++)
	{
		Relation	index = indstate->ri_IndexRelationDescs[i];
		IndexInfo  *info = indstate->ri_IndexRelationInfo[i];
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];

		if (info->ii_Expressions != NIL || info->ii_Predicate != NIL)
			elog(ERROR, "index \"%s\" of producer state is not a plain index",
				 RelationGetRelationName(index));
		FormIndexDatum(info, slot, NULL, values, isnull);
		index_insert(index, values, isnull, &tup->t_self, rel,
					 index->rd_index->indisunique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
					 false, info);
	}
	ExecDropSingleTupleTableSlot(slot);
	CatalogCloseIndexes(indstate);
}

/* Copy a NOT NULL int4[] or int8[] of at most EL_PRODUCER_KEPT_BATCHES. */
static int
el_kept_array(Datum d, bool is64, void *out)
{
	ArrayType  *arr = DatumGetArrayTypeP(d);
	Datum	   *elems;
	bool	   *nulls;
	int			n, i;

	if (ARR_NDIM(arr) > 1)
		elog(ERROR, "producer state holds a multidimensional array");
	if (is64)
		deconstruct_array(arr, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &elems, &nulls, &n);
	else
		deconstruct_array(arr, INT4OID, 4, true, TYPALIGN_INT, &elems, &nulls, &n);
	n = Min(n, EL_PRODUCER_KEPT_BATCHES);
	for (i = 0; i < n; i++)
	{
		if (nulls[i])
			elog(ERROR, "producer state holds a NULL batch");
		if (is64)
			((int64 *) out)[i] = DatumGetInt64(elems[i]);
		else
			((int32 *) out)[i] = DatumGetInt32(elems[i]);
	}
	return n;
}

static void
el_out_of_order(ElTopic *topic, const ElProducerBatch *b, int32 expected,
				bool fresh)
{
	ereport(ERROR,
			(errcode(EL_ERRCODE_OUT_OF_ORDER_SEQUENCE),
			 errmsg("out-of-order sequence number %d for producer %lld in partition %d of topic \"%s\"",
					b->first_sequence, (long long) b->producer_id, b->partition,
					topic->name),
			 fresh ?
			 errdetail("The producer has stored nothing in this partition under epoch %d, so its first batch there must start at sequence number 0.",
					   b->epoch) :
			 errdetail("The next sequence number expected is %d.", expected)));
}

/*
 * Check a batch of "count" records of producer "idem" for "partition" of
 * "topic" (the caller checked the produce privilege), under the locks
 * described at the top, which this takes.  Returns true for a retry of a
 * kept batch, with its first offset in "*first_offset": nothing is to be
 * stored.  Returns false for a batch to append, after which the caller
 * calls el_producer_record in the same transaction.  Raises the errors of
 * a bad batch.
 */
bool
el_producer_check(ElTopic *topic, int32 partition, const ElIdempotence *idem,
				  int count, ElProducerBatch *b, int64 *first_offset)
{
	LOCKTAG		tag;
	Snapshot	snap;
	Relation	rel;
	ScanKeyData keys[3];
	bool		isnull;
	HeapTuple	row;
	ElTidHint  *hint;
	int16		cur_epoch;
	Oid			owner;
	int32		expected;
	int			i;

	Assert(count > 0);
	memset(b, 0, sizeof(*b));
	b->producer_id = idem->producer_id;
	b->topic_id = topic->topic_id;
	b->partition = partition;
	b->epoch = idem->epoch;
	b->first_sequence = idem->sequence;
	b->last_sequence = el_seq_add(idem->sequence, count - 1);

	el_producer_locktag(&tag, idem, 0, 0, true);
	(void) LockAcquire(&tag, ShareLock, false, false);
	el_producer_locktag(&tag, idem, topic->topic_id, partition, false);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);

	/*
	 * Read with a snapshot taken now, after the locks, seeing this
	 * transaction's own earlier batches (hence the command counter).
	 */
	CommandCounterIncrement();
	snap = RegisterSnapshot(GetLatestSnapshot());
	rel = table_open(el_producer_relid(EL_REL_CATALOG), AccessShareLock);
	el_producer_check_shape(rel, EL_CATALOG_NATTS, el_catalog_types);
	hint = el_hint_slot(el_catalog_hints, idem->producer_id, -1, 0);
	row = el_producer_fetch_hint(rel, hint, snap, idem->producer_id, -1, 0);
	if (row == NULL)
	{
		ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ,
					Int64GetDatum(idem->producer_id));
		row = el_producer_fetch(rel, EL_REL_CATALOG_PKEY, snap, 1, keys);
		if (row != NULL)
			el_hint_set(hint, idem->producer_id, -1, 0, &row->t_self);
	}
	if (row == NULL)
		ereport(ERROR,
				(errcode(EL_ERRCODE_UNKNOWN_PRODUCER),
				 errmsg("producer %lld does not exist", (long long) idem->producer_id),
				 errdetail("It was never obtained, or it expired unused (eventlog.producer_id_expiration)."),
				 errhint("Obtain a producer with eventlog.init_producer().")));
	cur_epoch = DatumGetInt16(heap_getattr(row, 2, RelationGetDescr(rel), &isnull));
	owner = DatumGetObjectId(heap_getattr(row, 4, RelationGetDescr(rel), &isnull));
	table_close(rel, AccessShareLock);

	/* Someone else's producer: as if there were none to tell about. */
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for producer %lld", (long long) idem->producer_id),
				 errdetail("Only the role that obtained a producer, its members and superusers may produce with it.")));
	if (idem->epoch < cur_epoch)
		ereport(ERROR,
				(errcode(EL_ERRCODE_PRODUCER_FENCED),
				 errmsg("producer %lld has been fenced", (long long) idem->producer_id),
				 errdetail("Epoch %d is older than the producer's current epoch %d.",
						   idem->epoch, cur_epoch),
				 errhint("Another client obtained the producer's transactional ID again; this one must stop.")));
	if (idem->epoch > cur_epoch)
		ereport(ERROR,
				(errcode(EL_ERRCODE_UNKNOWN_PRODUCER),
				 errmsg("producer %lld has no epoch %d", (long long) idem->producer_id,
						idem->epoch),
				 errdetail("The producer's current epoch is %d.", cur_epoch)));

	rel = table_open(el_producer_relid(EL_REL_STATE), RowExclusiveLock);
	el_producer_check_shape(rel, EL_STATE_NATTS, el_state_types);
	hint = el_hint_slot(el_state_hints, idem->producer_id, topic->topic_id, partition);
	row = el_producer_fetch_hint(rel, hint, snap, idem->producer_id,
								 topic->topic_id, partition);
	if (row == NULL)
	{
		ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ,
					Int64GetDatum(idem->producer_id));
		ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(topic->topic_id));
		ScanKeyInit(&keys[2], 3, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(partition));
		row = el_producer_fetch(rel, EL_REL_STATE_PKEY, snap, 3, keys);
		if (row != NULL)
			el_hint_set(hint, idem->producer_id, topic->topic_id, partition,
						&row->t_self);
	}
	UnregisterSnapshot(snap);
	b->exists = (row != NULL);
	if (b->exists)
	{
		TupleDesc	desc = RelationGetDescr(rel);

		b->tid = row->t_self;
		if (DatumGetInt16(heap_getattr(row, 4, desc, &isnull)) == idem->epoch)
		{
			int			nf, nl, no;

			nf = el_kept_array(heap_getattr(row, 5, desc, &isnull), false, b->kept_first);
			nl = el_kept_array(heap_getattr(row, 6, desc, &isnull), false, b->kept_last);
			no = el_kept_array(heap_getattr(row, 7, desc, &isnull), true, b->kept_offset);
			if (nf != nl || nf != no)
				elog(ERROR, "producer state of producer %lld has arrays of different lengths",
					 (long long) idem->producer_id);
			b->nkept = nf;
		}
	}
	/* Kept to the end of the transaction, as an UPDATE would. */
	table_close(rel, NoLock);

	/*
	 * A retry of a kept batch: its offsets, nothing stored.  A batch kept
	 * with offset -1 stands for a Kafka transaction's batches rolled back
	 * (kafka_producer_aborted): nothing to return, and no retry of them.
	 */
	for (i = 0; i < b->nkept; i++)
		if (b->kept_first[i] == b->first_sequence && b->kept_last[i] == b->last_sequence &&
			b->kept_offset[i] >= 0)
		{
			*first_offset = b->kept_offset[i];
			return true;
		}

	expected = b->nkept > 0 ? el_seq_add(b->kept_last[b->nkept - 1], 1) : 0;
	if (b->first_sequence == expected)
		return false;
	if (b->nkept == 0)
		el_out_of_order(topic, b, 0, true);

	/*
	 * Behind the expected number (half the sequence space, as serial
	 * number arithmetic decides it): a repeat that is not a kept batch.
	 */
	if ((((int64) b->first_sequence - expected + EL_SEQ_MODULUS) % EL_SEQ_MODULUS) >=
		EL_SEQ_MODULUS / 2)
		ereport(ERROR,
				(errcode(EL_ERRCODE_DUPLICATE_SEQUENCE),
				 errmsg("duplicate sequence number %d for producer %lld in partition %d of topic \"%s\"",
						b->first_sequence, (long long) b->producer_id, partition,
						topic->name),
				 errdetail("Sequence numbers %d to %d repeat numbers the producer used before, but do not match one of its last %d batches in the partition, the only ones whose offsets are kept.",
						   b->first_sequence, b->last_sequence, EL_PRODUCER_KEPT_BATCHES),
				 errhint("The next sequence number expected is %d.", expected)));
	el_out_of_order(topic, b, expected, false);
	return false;				/* keep the compiler quiet */
}

/*
 * Record batch "b", whose records were appended from "first_offset" on, in
 * the producer's state, in the caller's transaction (under the locks
 * el_producer_check took): the kept batches with this one last, the oldest
 * dropped beyond EL_PRODUCER_KEPT_BATCHES.
 */
void
el_producer_record(ElProducerBatch *b, int64 first_offset)
{
	Datum		firsts[EL_PRODUCER_KEPT_BATCHES];
	Datum		lasts[EL_PRODUCER_KEPT_BATCHES];
	Datum		offsets[EL_PRODUCER_KEPT_BATCHES];
	Datum		args[EL_STATE_NATTS];
	int			skip = (b->nkept == EL_PRODUCER_KEPT_BATCHES) ? 1 : 0;
	int			n = 0;
	int			i;
	Oid			save_userid;
	int			save_sec;

	for (i = skip; i < b->nkept; i++, n++)
	{
		firsts[n] = Int32GetDatum(b->kept_first[i]);
		lasts[n] = Int32GetDatum(b->kept_last[i]);
		offsets[n] = Int64GetDatum(b->kept_offset[i]);
	}
	firsts[n] = Int32GetDatum(b->first_sequence);
	lasts[n] = Int32GetDatum(b->last_sequence);
	offsets[n] = Int64GetDatum(first_offset);
	n++;

	args[0] = Int64GetDatum(b->producer_id);
	args[1] = Int32GetDatum(b->topic_id);
	args[2] = Int32GetDatum(b->partition);
	args[3] = Int16GetDatum(b->epoch);
	args[4] = PointerGetDatum(construct_array(firsts, n, INT4OID, 4, true, TYPALIGN_INT));
	args[5] = PointerGetDatum(construct_array(lasts, n, INT4OID, 4, true, TYPALIGN_INT));
	args[6] = PointerGetDatum(construct_array(offsets, n, INT8OID, 8, FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));

	if (b->exists)
	{
		/*
		 * The version read under the lock is the newest: every writer of the
		 * row holds the lock, but the expiry and drop_topic, which cannot
		 * run beside this transaction (the producer's lock; the segment
		 * this transaction appended to).  No trigger of the table's fires
		 * (the foreign keys' do nothing when the keys do not change).
		 */
		Relation	rel = table_open(el_producer_relid(EL_REL_STATE), RowExclusiveLock);
		bool		nulls[EL_STATE_NATTS] = {false};
		HeapTuple	tup;

		el_producer_check_shape(rel, EL_STATE_NATTS, el_state_types);
		args[7] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
		tup = heap_form_tuple(RelationGetDescr(rel), args, nulls);
		el_simple_heap_update(rel, &b->tid, tup);

		/*
		 * No indexed column changes, so the new version is usually on the
		 * same page, heap-only (the fill factor leaves room): the indexes
		 * are opened only when it is not, to point them at it.
		 */
		if (!HeapTupleIsHeapOnly(tup))
			el_producer_index_tuple(rel, tup);
		el_hint_set(el_hint_slot(el_state_hints, b->producer_id, b->topic_id, b->partition),
					b->producer_id, b->topic_id, b->partition, &tup->t_self);
		heap_freetuple(tup);
		table_close(rel, NoLock);
		return;
	}

	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(el_producer_tables_owner(),
						   save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (el_producer_insert_plan == NULL)
	{
		int			pin = el_pin_search_path();
		SPIPlanPtr	plan = SPI_prepare(el_producer_insert_sql, 7, (Oid *) el_state_types);

		if (plan == NULL)
			elog(ERROR, "could not prepare a producer statement: %s",
				 SPI_result_code_string(SPI_result));
		el_unpin_search_path(pin);
		SPI_keepplan(plan);
		el_producer_insert_plan = plan;
	}
	if (SPI_execute_plan(el_producer_insert_plan, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record a producer's batch");
	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec);
}

static Datum
el_producer_lock(FunctionCallInfo fcinfo, bool wait)
{
	ElIdempotence idem;
	LOCKTAG		tag;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pg_eventlog lock arguments must not be null")));
	idem.producer_id = PG_GETARG_INT64(0);
	el_producer_locktag(&tag, &idem, 0, 0, true);
	PG_RETURN_BOOL(LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL);
}

/* eventlog._lock_producer(producer_id bigint) -> void */
Datum
el_lock_producer(PG_FUNCTION_ARGS)
{
	(void) el_producer_lock(fcinfo, true);
	PG_RETURN_VOID();
}

/* eventlog._try_lock_producer(producer_id bigint) -> boolean */
Datum
el_try_lock_producer(PG_FUNCTION_ARGS)
{
	return el_producer_lock(fcinfo, false);
}

/*
 * The maintenance worker's expiry of producers unused for
 * eventlog.producer_id_expiration, in a transaction of its own after each
 * round.  A database whose extension is older than 0.3.0 has no
 * _expire_producers: nothing to do.  Errors are logged, and retried next
 * round.
 */
void
el_expire_producers(MemoryContext round_cxt)
{
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "eventlog maintenance: producers");
		if (SPI_execute("SELECT 1 FROM pg_catalog.pg_proc WHERE proname = '_expire_producers'"
						" AND pronamespace = '" EL_SCHEMA_NAME "'::pg_catalog.regnamespace",
						true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		{
			Oid			argtypes[1] = {FLOAT8OID};
			Datum		args[1];

			args[0] = Float8GetDatum((double) el_producer_id_expiration);
			if (SPI_execute_with_args("SELECT " EL_SCHEMA_NAME "._expire_producers("
									  "$1 OPERATOR(pg_catalog.*) '1 second'::pg_catalog.interval)",
									  1, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not run eventlog._expire_producers");
		}
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata = el_worker_recover(round_cxt);

		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_eventlog expiry of idempotent producers failed: %s", edata->message),
				 edata->context ? errcontext("%s", edata->context) : 0));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}
