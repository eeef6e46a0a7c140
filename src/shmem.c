/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  pg_eventlog's shared memory: per-partition offset counters, the
 *	  in-flight table, and the last stable offset computed from them.
 *
 * Why this exists (DESIGN.md, invariant 1): offsets are handed out when a
 * record is inserted, but transactions commit in any order.  If offset 7 is
 * still in flight when 8 commits, a reader that returned 8 and moved on to
 * 9 would never see 7.  So each partition publishes a last stable offset:
 * the lowest offset still held by an in-flight transaction, or the high
 * watermark when there is none.  Readers never return records at or above
 * it, and they scan with a snapshot taken after computing it.
 *
 * Locking protocol:
 *	- Partition state lives in a fixed array of slots (eventlog.max_partitions)
 *	  whose LWLocks are initialised once; a hash table maps a partition's key
 *	  to its slot.  el_shared->hash_lock (shared to look up, exclusive to
 *	  assign or free a slot) protects the hash table.  Assigning or freeing a
 *	  slot also takes the slot's lock, always after hash_lock.
 *	- Each slot's lock protects that partition's counter and its list of
 *	  in-flight entries.  A producer takes it exclusively just long enough to
 *	  take offsets and, the first time in its transaction, link its ElInflight
 *	  entry; readers take it shared.  No other lock is acquired while holding
 *	  it, nothing under it can raise an error, and no I/O happens under it.
 *	- Slots are a cache of counters: a slot without in-flight entries may be
 *	  freed (when its topic is dropped, or to make room) and its counter is
 *	  recovered from the catalog on next use, exactly as after a restart.
 *	  Backends refer to slots by (pointer, incarnation) and re-attach when
 *	  the incarnation changed.
 *
 * An entry is removed from the list by its owner at XACT_EVENT_COMMIT or
 * XACT_EVENT_ABORT.  PostgreSQL calls those after ProcArrayEndTransaction,
 * so by then new snapshots already see the outcome.  Between the two, and
 * for an entry leaked by a bug, readers treat an entry whose owner's PGPROC
 * no longer carries the entry's xid as gone: a finished transaction can
 * never hold a partition back.
 *
 * Counters start uninitialised after every server start; the first backend
 * to use a partition recovers the counter from the catalog (topic.c) and
 * installs it with el_partition_set_initial.  Nothing here reads catalogs.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/transam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "common/hashfn.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "notify.h"
#include "shmem.h"
#include "worker.h"

ElSharedState *el_shared = NULL;
static ElPartitionState *el_slots = NULL;	/* [el_max_partitions] */
static ElDbPins *el_pin_dbs = NULL; /* [el_max_partitions], see el_pin_slot */
static HTAB *el_partition_hash = NULL;

/* Hash table entry: a partition's key and the slot it occupies. */
typedef struct ElPartitionHashEntry
{
	ElPartitionKey key;
	int			slotno;
} ElPartitionHashEntry;

int			el_max_partitions = 1024;
int			el_max_transaction_partitions = 128;

/*
 * Test only: at transaction end, forget this backend's in-flight entries
 * without unlinking them, as a bug or an unforeseen exit path would.  The
 * tests use it to show that a leaked entry never holds a partition back.
 * Only in a build for the tests (EL_TEST_HOOKS, see the Makefile).
 */
#ifdef EL_TEST_HOOKS
static bool el_debug_leak_inflight = false;
#endif

static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
#ifdef EL_HAVE_SHMEM_REQUEST_HOOK
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif

/* Set once the area has been requested, i.e. the library was preloaded. */
static bool el_shmem_requested = false;

/* This backend's entries in use by its current transaction: slice[0..n). */
static int	el_nheld = 0;
static bool el_slice_checked = false;

/* Topics dropped by the current transaction, forgotten at its commit. */
static List *el_forget_topics = NIL;
static bool el_forget_database = false;
/* The database's slots were freed before the drop committed: free at abort too. */
static bool el_forget_database_on_abort = false;

/*
 * Segment activations requested by the current transaction (a maintenance
 * round that rolled a partition), applied at its commit: the new segment
 * table is then committed, so producers routed to it can open it; and an
 * aborted round activates nothing.
 */
typedef struct ElPendingActivation
{
	ElPartitionKey key;
	int32		segno;
	int			nest_level;		/* subtransaction that asked */
} ElPendingActivation;
static List *el_pending_activations = NIL;

static void el_xact_callback(XactEvent event, void *arg);
static void el_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								SubTransactionId parentSubid, void *arg);

/* PGPROC slots: backends, auxiliary processes and prepared transactions. */
static int
el_proc_slots(void)
{
	return EL_MAX_BACKENDS() + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static Size
el_shmem_size(void)
{
	Size		size;

	size = offsetof(ElSharedState, inflight);
	size = add_size(size, mul_size(mul_size(el_proc_slots(),
											el_max_transaction_partitions),
								   sizeof(ElInflight)));
	size = MAXALIGN(size);
	size = add_size(size, mul_size(el_max_partitions, sizeof(ElPartitionState)));
	size = add_size(size, mul_size(el_max_partitions, sizeof(ElDbPins)));
	size = add_size(size, hash_estimate_size(el_max_partitions,
											 sizeof(ElPartitionHashEntry)));
	size = add_size(size, el_worker_shmem_size());
	return size;
}

static void
el_shmem_request(void)
{
#ifdef EL_HAVE_SHMEM_REQUEST_HOOK
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	RequestAddinShmemSpace(el_shmem_size());
	RequestNamedLWLockTranche("pg_eventlog", 1);
}

static void
el_shmem_startup(void)
{
	bool		found;
	HASHCTL		info;
	int			nprocs = el_proc_slots();

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	el_shared = ShmemInitStruct("pg_eventlog",
								offsetof(ElSharedState, inflight) +
								sizeof(ElInflight) * nprocs *
								el_max_transaction_partitions,
								&found);
	if (!found)
	{
		el_shared->launcher_pid = 0;
		el_shared->hash_lock = &(GetNamedLWLockTranche("pg_eventlog"))->lock;
		el_shared->next_incarnation = 1;
		el_shared->clock_hand = 0;
		el_shared->nprocs = nprocs;
		SpinLockInit(&el_shared->pin_lock);
		el_shared->npin_dbs = 0;
		for (int i = 0; i < EL_TOPIC_WAKEUPS; i++)
			ConditionVariableInit(&el_shared->topic_wakeup[i]);
		/* From 1: a long poll's first look (0) always reads the catalog. */
		pg_atomic_init_u64(&el_shared->topic_drops, 1);
		memset(el_shared->inflight, 0,
			   sizeof(ElInflight) * nprocs * el_max_transaction_partitions);
	}

	el_slots = ShmemInitStruct("pg_eventlog partition slots",
							   mul_size(el_max_partitions, sizeof(ElPartitionState)),
							   &found);
	if (!found)
	{
		int			tranche = LWLockNewTrancheId();
		int			i;

		for (i = 0; i < el_max_partitions; i++)
		{
			memset(&el_slots[i], 0, sizeof(ElPartitionState));
			LWLockInitialize(&el_slots[i].lock, tranche);
			dlist_init(&el_slots[i].inflight);
			el_slots[i].notify_lo = el_slots[i].notify_hi = -1;
		}
		LWLockRegisterTranche(tranche, "pg_eventlog_partition");
	}

	el_pin_dbs = ShmemInitStruct("pg_eventlog database pins",
								 mul_size(el_max_partitions, sizeof(ElDbPins)),
								 &found);

	{
		void	   *registry = ShmemInitStruct("pg_eventlog workers",
											   el_worker_shmem_size(), &found);

		el_worker_shmem_init(registry, found);
	}

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(ElPartitionKey);
	info.entrysize = sizeof(ElPartitionHashEntry);
	el_partition_hash = ShmemInitHash("pg_eventlog partitions",
									  el_max_partitions, el_max_partitions,
									  &info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Define the settings that size shared memory and install the hooks that
 * request and attach it: at server start only, as a request made later
 * would be refused.
 */
void
el_shmem_init(void)
{
	RegisterXactCallback(el_xact_callback, NULL);
	RegisterSubXactCallback(el_subxact_callback, NULL);

#ifdef EL_TEST_HOOKS
	DefineCustomBoolVariable("eventlog.debug_leak_inflight",
							 "Test only: leave in-flight entries behind at transaction end.",
							 "Simulates a leak, to show that readers treat an entry of a finished transaction as gone.",
							 &el_debug_leak_inflight,
							 false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
#endif

	/*
	 * Settings that size shared memory can only be defined at server start
	 * (later, PostgreSQL refuses PGC_POSTMASTER variables with a FATAL).
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("eventlog.max_partitions",
							"Maximum number of partitions, over all topics and databases, that can be in use.",
							"Sizes shared memory at server start.",
							&el_max_partitions,
							1024, 1, 1024 * 1024,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("eventlog.max_transaction_partitions",
							"Maximum number of partitions one transaction can produce to.",
							"Each connection reserves this many in-flight entries in shared memory at server start.",
							&el_max_transaction_partitions,
							128, 1, 65536,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	el_shmem_requested = true;
#ifdef EL_HAVE_SHMEM_REQUEST_HOOK
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = el_shmem_request;
#else
	el_shmem_request();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = el_shmem_startup;
}

bool
el_shmem_attached(void)
{
	return el_shmem_requested && el_shared != NULL;
}

/*
 * Raise the documented error when a function that needs the shared state is
 * called in a server that did not preload the library.
 */
void
el_require_shmem(void)
{
	if (!el_shmem_attached())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_eventlog must be loaded via shared_preload_libraries"),
				 errdetail("The event log keeps its offsets in shared memory, which is only set up when the library is loaded at server start."),
				 errhint("Add pg_eventlog to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* This backend's slice of the in-flight table. */
static inline ElInflight *
el_my_slice(void)
{
	Assert(EL_MY_PROCNO < el_shared->nprocs);
	return &el_shared->inflight[(Size) EL_MY_PROCNO * el_max_transaction_partitions];
}

/*
 * Free slot "slotno" if no transaction has an in-flight entry in it (and,
 * unless "even_unannounced", the notifier has announced its records; unless
 * "even_recovering", its counter is recovered).  The caller holds hash_lock
 * exclusively.  Returns whether it was freed.
 */
static bool
el_free_slot(int slotno, bool even_unannounced, bool even_recovering)
{
	ElPartitionState *slot = &el_slots[slotno];
	bool		freed = false;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (slot->incarnation != 0 && dlist_is_empty(&slot->inflight) &&
		(even_unannounced || slot->notify_lo < 0) &&
		(even_recovering || slot->initialized))
	{
		hash_search(el_partition_hash, &slot->key, HASH_REMOVE, NULL);
		slot->incarnation = 0;
		slot->initialized = false;
		slot->notify_lo = slot->notify_hi = -1;
		freed = true;
	}
	LWLockRelease(&slot->lock);
	return freed;
}

/*
 * A free slot, freeing the first one without in-flight entries if none is
 * (clock order), preferring one whose records the notifier has announced:
 * freeing a slot forgets what LISTENers have not been told yet.
 *
 * A slot whose counter is still being recovered (given to its partition a
 * moment ago; recovery reads the catalog, which takes milliseconds) is
 * freed last, and never for a reader ("reader"), which can do without a
 * slot: freeing it makes its backend find it stale and attach again, freeing
 * another backend's slot under recovery in turn, and with more partitions in
 * use than slots every backend could go round like that until its retries
 * ran out (test/t/049_slot_churn.pl).  A slot left uninitialised by a
 * backend that failed during recovery is still freed by a producer's last
 * pass.
 *
 * The caller holds hash_lock exclusively.  -1 if every slot has a
 * transaction in flight (or, for a reader, is being recovered).
 */
static int
el_find_free_slot(bool reader)
{
	int			pass;
	int			i;

	for (pass = 0; pass < (reader ? 3 : 4); pass++)
	{
		for (i = 0; i < el_max_partitions; i++)
		{
			int			slotno = (el_shared->clock_hand + i) % el_max_partitions;

			if (el_slots[slotno].incarnation == 0 ||
				(pass > 0 && el_free_slot(slotno, pass >= 2, pass == 3)))
			{
				el_shared->clock_hand = (slotno + 1) % el_max_partitions;
				return slotno;
			}
		}
	}
	return -1;
}

/*
 * Slots pinned per database (issue 13, item 6).  Slots are a cache, but a
 * slot with offsets in flight cannot be freed until their transactions end,
 * so one database with enough open producing transactions could pin every
 * slot and leave every other database's producers (and, before readers
 * learnt to do without a slot, its readers) failing with 53400.  So a
 * database may pin at most its share of the slots:
 *
 *		(eventlog.max_partitions - reserve) / (1 + databases pinning besides it)
 *
 * with reserve = max_partitions / 8 (at least 1): alone, a database can pin
 * all but the reserve, which a newcomer can always have at once; when
 * several produce, each may pin an equal part, and a database above its
 * share (it pinned before the others came) pins no new slot until its own
 * transactions have brought it below.  The count changes only when a slot's
 * list of in-flight entries goes from empty to not empty or back (under the
 * slot's lock): once per partition per producing transaction at most, a
 * spinlock and a scan of the few databases pinning at that moment.
 */
static int
el_pin_reserve(void)
{
	return Max(1, el_max_partitions / 8);
}

/* The share of a database while "others" other databases pin slots. */
static int
el_pin_share_of(int others)
{
	return Max(1, (el_max_partitions - el_pin_reserve()) / (1 + others));
}

/* The entry of "dbid" (NULL if it pins nothing) and how many others pin. */
static ElDbPins *
el_pin_entry(Oid dbid, int *others)
{
	ElDbPins   *mine = NULL;
	int			i;

	*others = 0;
	for (i = 0; i < el_shared->npin_dbs; i++)
	{
		if (el_pin_dbs[i].dbid == dbid)
			mine = &el_pin_dbs[i];
		else
			(*others)++;
	}
	return mine;
}

/*
 * Count one more slot pinned by "dbid", unless that would take it past its
 * share: false then, with nothing counted.  Called under the slot's lock.
 */
static bool
el_pin_slot(Oid dbid)
{
	ElDbPins   *mine;
	int			others;
	bool		ok;

	SpinLockAcquire(&el_shared->pin_lock);
	mine = el_pin_entry(dbid, &others);
	ok = (mine ? mine->pinned : 0) < el_pin_share_of(others);
	if (ok)
	{
		if (mine == NULL)
		{
			/* Each pinning database pins a slot of its own: room for all. */
			Assert(el_shared->npin_dbs < el_max_partitions);
			mine = &el_pin_dbs[el_shared->npin_dbs++];
			mine->dbid = dbid;
			mine->pinned = 0;
		}
		mine->pinned++;
	}
	SpinLockRelease(&el_shared->pin_lock);
	return ok;
}

/* A slot of "dbid" has no in-flight entry any more. */
static void
el_unpin_slot(Oid dbid)
{
	ElDbPins   *mine;
	int			others;

	SpinLockAcquire(&el_shared->pin_lock);
	mine = el_pin_entry(dbid, &others);
	Assert(mine != NULL && mine->pinned > 0);
	if (mine != NULL && --mine->pinned <= 0)
		*mine = el_pin_dbs[--el_shared->npin_dbs];
	SpinLockRelease(&el_shared->pin_lock);
}

/*
 * For messages and monitoring: the slots the current database pins, its
 * share, and how many other databases pin slots now.
 */
void
el_pin_share(int *pinned, int *share, int *others)
{
	ElDbPins   *mine;

	SpinLockAcquire(&el_shared->pin_lock);
	mine = el_pin_entry(MyDatabaseId, others);
	*pinned = mine ? mine->pinned : 0;
	*share = el_pin_share_of(*others);
	SpinLockRelease(&el_shared->pin_lock);
}

/* Raise the error of a producer whose database has pinned its share. */
static void
el_report_share_exceeded(void)
{
	int			pinned;
	int			share;
	int			others;
	char	   *dbname = get_database_name(MyDatabaseId);

	el_pin_share(&pinned, &share, &others);
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("too many event log partitions have transactions in flight in database \"%s\"",
					dbname ? dbname : "?"),
			 errdetail("Open transactions of this database are producing to %d partitions. A database may have transactions in flight in at most %d of the %d partition slots while %d other databases do too, so that %d slots stay available to the others.",
					   pinned, share, el_max_partitions, others, el_pin_reserve()),
			 errhint("Commit or roll back the long-running producing transactions (idle_in_transaction_session_timeout caps them), or raise eventlog.max_partitions and restart the server.")));
}

static bool el_partition_attach_internal(const ElPartitionKey *key,
										 ElSlotRef *ref, bool reader);

/* Whether the partition of "key" has a slot now. */
bool
el_partition_has_slot(const ElPartitionKey *key)
{
	bool		found;

	el_require_shmem();
	LWLockAcquire(el_shared->hash_lock, LW_SHARED);
	found = (hash_search(el_partition_hash, key, HASH_FIND, NULL) != NULL);
	LWLockRelease(el_shared->hash_lock);
	return found;
}

/*
 * Point "ref" at the slot of "key", assigning one (with its counter not yet
 * recovered) if the partition has none.  Raises 53400 when every slot has
 * transactions in flight.
 */
void
el_partition_attach(const ElPartitionKey *key, ElSlotRef *ref)
{
	if (!el_partition_attach_internal(key, ref, false))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many event log partitions are in use"),
				 errdetail("All %d partition slots of shared memory have transactions in flight.",
						   el_max_partitions),
				 errhint("Raise eventlog.max_partitions and restart the server.")));
}

/*
 * el_partition_attach, but false (ref untouched) instead of an error when
 * every slot has transactions in flight or its counter being recovered
 * (el_find_free_slot): a reader can then do without one (topic.c,
 * el_stable_offset_unslotted).
 */
bool
el_partition_try_attach(const ElPartitionKey *key, ElSlotRef *ref)
{
	return el_partition_attach_internal(key, ref, true);
}

static bool
el_partition_attach_internal(const ElPartitionKey *key, ElSlotRef *ref,
							 bool reader)
{
	ElPartitionHashEntry *entry;
	bool		found;
	int			slotno;

	el_require_shmem();

	LWLockAcquire(el_shared->hash_lock, LW_SHARED);
	entry = hash_search(el_partition_hash, key, HASH_FIND, NULL);
	if (entry)
	{
		ref->slot = &el_slots[entry->slotno];
		ref->incarnation = ref->slot->incarnation;
		LWLockRelease(el_shared->hash_lock);
		return true;
	}
	LWLockRelease(el_shared->hash_lock);

	LWLockAcquire(el_shared->hash_lock, LW_EXCLUSIVE);
	entry = hash_search(el_partition_hash, key, HASH_FIND, NULL);
	if (entry == NULL)
	{
		ElPartitionState *slot;

		slotno = el_find_free_slot(reader);
		if (slotno < 0)
		{
			LWLockRelease(el_shared->hash_lock);
			return false;
		}
		entry = hash_search(el_partition_hash, key, HASH_ENTER_NULL, &found);
		if (entry == NULL)
		{
			LWLockRelease(el_shared->hash_lock);
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of shared memory for event log partitions"),
					 errhint("Raise eventlog.max_partitions and restart the server.")));
		}
		entry->slotno = slotno;
		slot = &el_slots[slotno];
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		Assert(dlist_is_empty(&slot->inflight));
		slot->key = *key;
		slot->incarnation = el_shared->next_incarnation++;
		slot->initialized = false;
		slot->next_offset = 0;
		slot->last_append_time = 0;
		slot->commit_lsn = InvalidXLogRecPtr;
		slot->active_segno = 0;
		slot->active_base = 0;
		slot->notify_lo = slot->notify_hi = -1;
		LWLockRelease(&slot->lock);
	}
	ref->slot = &el_slots[entry->slotno];
	ref->incarnation = ref->slot->incarnation;
	LWLockRelease(el_shared->hash_lock);
	return true;
}

/* Lock the slot of "ref"; false (and not locked) if it is stale. */
static bool
el_lock_ref(const ElSlotRef *ref, LWLockMode mode)
{
	if (ref->slot == NULL)
		return false;
	LWLockAcquire(&ref->slot->lock, mode);
	if (ref->slot->incarnation != ref->incarnation || ref->incarnation == 0)
	{
		LWLockRelease(&ref->slot->lock);
		return false;
	}
	return true;
}

ElSlotStatus
el_partition_status(const ElSlotRef *ref)
{
	ElSlotStatus status;

	if (!el_lock_ref(ref, LW_SHARED))
		return EL_SLOT_STALE;
	status = ref->slot->initialized ? EL_SLOT_READY : EL_SLOT_UNINITIALIZED;
	LWLockRelease(&ref->slot->lock);
	return status;
}

/*
 * The end of the WAL inserted so far, as a position XLogFlush accepts.
 * GetXLogInsertRecPtr() gives the position where the next record will
 * start: right after the page header when the last record ended exactly at
 * a page boundary.  Asking XLogFlush for that position, before anything is
 * written past the header, fails ("xlog flush request ... is not
 * satisfied"); the page boundary before the header covers the same records.
 */
XLogRecPtr
el_wal_insert_end(void)
{
	XLogRecPtr	ptr = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(ptr, wal_segment_size) == SizeOfXLogLongPHD)
		ptr -= SizeOfXLogLongPHD;
	else if (ptr % XLOG_BLCKSZ == SizeOfXLogShortPHD &&
			 XLogSegmentOffset(ptr, wal_segment_size) > XLOG_BLCKSZ)
		ptr -= SizeOfXLogShortPHD;
	return ptr;
}

/*
 * Install a recovered counter, unless another backend got there first (its
 * value came from the same catalog state, and it may already have handed
 * out offsets above it).  False if the reference is stale.
 *
 * The partition's newest commit LSN is not known any more (the slot that
 * knew it was recycled, or the server restarted): start from the current
 * WAL insert position, which is past every commit of the partition so far,
 * so that the first reader flushes all of them before returning a record
 * (with synchronous_commit = off a commit is visible before it is durable).
 * After a restart that WAL is flushed already and it costs a comparison.
 */
bool
el_partition_set_initial(const ElSlotRef *ref, int64 next_offset,
						 const ElRouting *routing)
{
	XLogRecPtr	insert_lsn = el_wal_insert_end();

	if (!el_lock_ref(ref, LW_EXCLUSIVE))
		return false;
	if (!ref->slot->initialized)
	{
		ref->slot->next_offset = next_offset;
		ref->slot->active_segno = routing->active_segno;
		ref->slot->active_base = routing->active_base;
		if (ref->slot->commit_lsn < insert_lsn)
			ref->slot->commit_lsn = insert_lsn;
		ref->slot->initialized = true;
	}
	LWLockRelease(&ref->slot->lock);
	return true;
}

/* Where new records of the partition go.  False if stale or uninitialised. */
bool
el_partition_routing(const ElSlotRef *ref, ElRouting *routing)
{
	bool		ok;

	if (!el_lock_ref(ref, LW_SHARED))
		return false;
	ok = ref->slot->initialized;
	routing->active_segno = ref->slot->active_segno;
	routing->active_base = ref->slot->active_base;
	LWLockRelease(&ref->slot->lock);
	return ok;
}

/*
 * A backend's entries are always unlinked at the end of its transaction.
 * Should one have been left linked (by a previous owner of this PGPROC slot
 * that exited without aborting, or by eventlog.debug_leak_inflight), unlink
 * it before the slot is reused, so that no node is ever on two lists.
 */
static void
el_check_my_slice(void)
{
	ElInflight *slice = el_my_slice();
	int			i;

	for (i = 0; i < el_max_transaction_partitions; i++)
	{
		ElInflight *entry = &slice[i];

		if (entry->part == NULL)
			continue;
		LWLockAcquire(&entry->part->lock, LW_EXCLUSIVE);
		dlist_delete(&entry->node);
		if (dlist_is_empty(&entry->part->inflight))
			el_unpin_slot(entry->part->key.dbid);
		LWLockRelease(&entry->part->lock);
		entry->part = NULL;
	}
	el_slice_checked = true;
}

/*
 * Take "count" consecutive offsets in the partition of "ref" for the current
 * top-level transaction, returning the first in *first and the segment they
 * go to in *segno.  The same critical section registers the transaction's
 * in-flight entry, so no reader can ever compute a stable offset above an
 * offset that is taken but not yet committed; and it routes the offsets, so
 * every offset in a segment is below every offset in the next one.  False, with nothing taken, if the reference is stale or the
 * counter not recovered: the caller attaches again.
 *
 * The top-level xid is assigned first: a subtransaction's xid is never the
 * key, and readers recognise a finished owner by its PGPROC's xid changing.
 * Every check that can fail happens before the counter moves.
 */
bool
el_allocate_offsets(const ElSlotRef *ref, int count, int64 *first,
					int32 *segno, TimestampTz *append_time)
{
	TransactionId xid = GetTopTransactionId();
	ElInflight *slice = el_my_slice();
	ElInflight *mine = NULL;
	ElPartitionState *part = ref->slot;
	TimestampTz now;
	int			i;

	if (!el_slice_checked)
		el_check_my_slice();

	for (i = 0; i < el_nheld; i++)
	{
		if (slice[i].part == part)
		{
			mine = &slice[i];
			break;
		}
	}
	if (mine == NULL && el_nheld >= el_max_transaction_partitions)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("transaction produced to too many partitions"),
				 errdetail("One transaction can produce to at most %d partitions.",
						   el_max_transaction_partitions),
				 errhint("Split the transaction, or raise eventlog.max_transaction_partitions and restart the server.")));

	now = GetCurrentTimestamp();

	if (!el_lock_ref(ref, LW_EXCLUSIVE))
		return false;
	if (!part->initialized)
	{
		LWLockRelease(&part->lock);
		return false;
	}
	/* The first entry pins the slot: within the database's share only. */
	if (mine == NULL && dlist_is_empty(&part->inflight) &&
		!el_pin_slot(part->key.dbid))
	{
		LWLockRelease(&part->lock);
		el_report_share_exceeded();
	}
	*first = part->next_offset;
	*segno = part->active_segno;
	part->next_offset += count;
	if (now < part->last_append_time)
		now = part->last_append_time;
	part->last_append_time = now;
	if (mine == NULL)
	{
		mine = &slice[el_nheld];
		mine->part = part;
		mine->xid = xid;
		mine->pgprocno = EL_MY_PROCNO;
		mine->first_offset = *first;
		dlist_push_tail(&part->inflight, &mine->node);
		el_nheld++;
	}
	mine->end_offset = *first + count;
	LWLockRelease(&part->lock);

	*append_time = now;
	return true;
}

/*
 * The last stable offset of the partition of "ref": the lowest offset held
 * by another backend's transaction that is still in progress, else the high
 * watermark.  The caller's own transaction never holds itself back.  Also
 * the high watermark, the PID holding the stable offset back (0 if none),
 * and the commit LSN readers must flush to.  False if the reference is
 * stale or the counter not recovered.
 */
bool
el_stable_offset(const ElSlotRef *ref, ElStableOffset *out)
{
	ElPartitionState *part = ref->slot;
	dlist_iter	iter;

	if (!el_lock_ref(ref, LW_SHARED))
		return false;
	if (!part->initialized)
	{
		LWLockRelease(&part->lock);
		return false;
	}
	out->stable = part->next_offset;
	out->holder_pid = 0;
	dlist_foreach(iter, &part->inflight)
	{
		ElInflight *entry = dlist_container(ElInflight, node, iter.cur);
		PGPROC	   *proc;
		TransactionId current;

		if (entry->pgprocno == EL_MY_PROCNO)
			continue;
		proc = GetPGProcByNumber(entry->pgprocno);
		current = *((volatile TransactionId *) &proc->xid);
		if (!TransactionIdEquals(current, entry->xid))
			continue;			/* finished: its outcome is visible */
		out->stable = entry->first_offset;
		out->holder_pid = proc->pid;
		break;
	}
	out->high_watermark = part->next_offset;
	out->commit_lsn = part->commit_lsn;
	out->active_segno = part->active_segno;
	LWLockRelease(&part->lock);
	return true;
}

/*
 * Unlink every entry this backend holds: its transaction has ended.  At
 * commit, also record the commit record's end in each partition, so that
 * readers flush WAL that far before returning these records: with
 * synchronous_commit = off a commit is visible before it is durable, and a
 * record a reader returned must not vanish in a crash and have its offset
 * handed out again.
 *
 * Then wake whoever waits for records: long polls (condition variables)
 * and, when committed records are waiting to be announced, the database's
 * notifier (notify.c).  An abort can make committed records readable too,
 * when they were waiting behind the aborted offsets.  Nothing here sends a
 * notification: that would serialise every producing commit on NOTIFY's
 * cluster-wide lock.
 */
static void
el_release_inflight(bool committed)
{
	ElInflight *slice;
	int			i;
	bool		announce = false;
	bool		notify = el_notify_enabled;
	int32		last_topic_id = 0;

	if (el_nheld == 0)
		return;
#ifdef EL_TEST_HOOKS
	if (el_debug_leak_inflight)
	{
		/* Leave them linked; the next allocation here unlinks them. */
		el_nheld = 0;
		el_slice_checked = false;
		return;
	}
#endif
	slice = el_my_slice();
	for (i = 0; i < el_nheld; i++)
	{
		ElInflight *entry = &slice[i];
		ElPartitionState *part = entry->part;

		int32		topic_id;

		LWLockAcquire(&part->lock, LW_EXCLUSIVE);
		dlist_delete(&entry->node);
		if (dlist_is_empty(&part->inflight))
			el_unpin_slot(part->key.dbid);
		if (committed && part->commit_lsn < XactLastCommitEnd)
			part->commit_lsn = XactLastCommitEnd;
		if (notify && committed)
		{
			if (part->notify_lo < 0 || entry->first_offset < part->notify_lo)
				part->notify_lo = entry->first_offset;
			if (entry->end_offset - 1 > part->notify_hi)
				part->notify_hi = entry->end_offset - 1;
		}
		if (notify && part->notify_lo >= 0)
			announce = true;
		topic_id = part->key.topic_id;
		LWLockRelease(&part->lock);
		entry->part = NULL;

		/*
		 * Wake long polls (read and poll): the stable offset may have
		 * moved.  Each topic's condition variable once (entries of a topic
		 * are usually adjacent).
		 */
		if (i == 0 || topic_id != last_topic_id)
			ConditionVariableBroadcast(el_topic_wakeup(topic_id));
		last_topic_id = topic_id;
	}
	el_nheld = 0;
	if (announce)
		el_wake_notifier();
}

ConditionVariable *
el_topic_wakeup(int32 topic_id)
{
	uint32		h = hash_uint32((uint32) topic_id) ^ hash_uint32((uint32) MyDatabaseId);

	return &el_shared->topic_wakeup[h % EL_TOPIC_WAKEUPS];
}

uint64
el_topic_drop_count(void)
{
	el_require_shmem();
	return pg_atomic_read_u64(&el_shared->topic_drops);
}

/*
 * For the notifier of the current database: the partitions whose committed
 * records became readable since they were last announced, with their last
 * stable offset now (up to "max_items"; the rest wait for the next call).
 * Each is marked announced up to that offset.  *blocked tells whether some
 * partition has committed records still held back by an earlier offset in
 * flight: its holder wakes the notifier when it ends.
 */
int
el_collect_notifications(ElNotifyItem *items, int max_items, bool *blocked)
{
	static int	start = 0;		/* rotates, so that no slot is starved */
	int			n = 0;
	int			k;

	*blocked = false;
	for (k = 0; k < el_max_partitions && n < max_items; k++)
	{
		int			i = (start + k) % el_max_partitions;
		ElPartitionState *part = &el_slots[i];
		int64		stable;
		dlist_iter	iter;

		/*
		 * An unlocked look first (a stale value only costs a lock): most
		 * slots have nothing to announce, or belong to another database.
		 */
		if (*((volatile int64 *) &part->notify_lo) < 0 ||
			*((volatile Oid *) &part->key.dbid) != MyDatabaseId)
			continue;
		LWLockAcquire(&part->lock, LW_EXCLUSIVE);
		if (part->incarnation == 0 || part->key.dbid != MyDatabaseId ||
			part->notify_lo < 0 || !part->initialized)
		{
			LWLockRelease(&part->lock);
			continue;
		}
		stable = part->next_offset;
		dlist_foreach(iter, &part->inflight)
		{
			ElInflight *entry = dlist_container(ElInflight, node, iter.cur);
			PGPROC	   *proc = GetPGProcByNumber(entry->pgprocno);

			if (TransactionIdEquals(*((volatile TransactionId *) &proc->xid), entry->xid))
			{
				stable = entry->first_offset;
				break;
			}
		}
		if (part->notify_lo < stable)
		{
			items[n].topic_id = part->key.topic_id;
			items[n].partition = part->key.partition;
			items[n].stable = stable;
			n++;
			/* Committed records above the stable offset are still to come. */
			part->notify_lo = (part->notify_hi >= stable) ? stable : -1;
			if (part->notify_lo >= 0)
				part->notify_hi = Max(part->notify_hi, stable);
		}
		if (part->notify_lo >= 0)
			*blocked = true;
		LWLockRelease(&part->lock);
	}
	start = (start + k) % el_max_partitions;
	return n;
}

void
el_activate_segment_at_commit(int32 topic_id, int32 partition, int32 segno)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	ElPendingActivation *pa = palloc0(sizeof(ElPendingActivation));

	pa->key.dbid = MyDatabaseId;
	pa->key.topic_id = topic_id;
	pa->key.partition = partition;
	pa->segno = segno;
	pa->nest_level = GetCurrentTransactionNestLevel();
	el_pending_activations = lappend(el_pending_activations, pa);
	MemoryContextSwitchTo(old);
}

/*
 * Route a partition's new offsets to segment "segno" from now on, starting
 * at the current high watermark.  Runs in the commit callback, so it must
 * not fail: a partition without a recovered counter is skipped (its routing
 * will be recovered from the catalog) and nothing here raises an error.
 */
static void
el_apply_activations(void)
{
	ListCell   *lc;

	if (!el_shmem_attached())
		return;
	foreach(lc, el_pending_activations)
	{
		ElPendingActivation *pa = lfirst(lc);
		ElPartitionHashEntry *entry;
		ElPartitionState *slot = NULL;

		LWLockAcquire(el_shared->hash_lock, LW_SHARED);
		entry = hash_search(el_partition_hash, &pa->key, HASH_FIND, NULL);
		if (entry)
			slot = &el_slots[entry->slotno];
		LWLockRelease(el_shared->hash_lock);
		if (slot == NULL)
			continue;
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		if (slot->incarnation != 0 && slot->initialized &&
			memcmp(&slot->key, &pa->key, sizeof(ElPartitionKey)) == 0 &&
			slot->active_segno < pa->segno)
		{
			slot->active_segno = pa->segno;
			slot->active_base = slot->next_offset;
		}
		LWLockRelease(&slot->lock);
	}
}

static void
el_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	/*
	 * A subtransaction that aborts takes its activations with it (its
	 * segment tables are gone).  One that commits hands them to its parent:
	 * they must then survive a later rollback of a sibling subtransaction
	 * at the same level, and only go when the parent itself aborts.
	 */
	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, el_pending_activations)
		{
			ElPendingActivation *pa = lfirst(lc);

			if (pa->nest_level >= level)
				pa->nest_level = level - 1;
		}
		return;
	}
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, el_pending_activations)
	{
		ElPendingActivation *pa = lfirst(lc);

		if (pa->nest_level >= level)
			el_pending_activations = foreach_delete_current(el_pending_activations, lc);
	}
}

void
el_forget_topic_at_commit(int32 topic_id)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	el_forget_topics = lappend_int(el_forget_topics, topic_id);
	MemoryContextSwitchTo(old);
}

void
el_forget_database_at_commit(void)
{
	el_forget_database = true;
}

/* Whether this transaction dropped the extension. */
bool
el_forget_database_pending(void)
{
	return el_forget_database;
}

/*
 * CREATE EXTENSION in the transaction that dropped it: the new extension
 * numbers its topics from 1 again, so the dropped topics' slots must go now,
 * not at commit, or the new topics would take over their counters and their
 * routes to segments that no longer exist.  Freeing is safe (see
 * el_forget_partitions).  Other backends cannot attach meanwhile: the drop
 * holds the old catalog's locks until this transaction ends.  Should the
 * transaction abort, the dropped extension comes back while the slots may
 * hold the new topics' counters: they are freed at abort too.  Only at the
 * top level (the caller checks), so that no subtransaction's rollback can
 * bring the dropped extension back before that.  False if a slot of this
 * database keeps in-flight entries (this transaction produced before the
 * drop): the caller refuses the creation.
 */
bool
el_free_database_slots_now(void)
{
	bool		all = true;
	int			i;

	if (!el_forget_database || !el_shmem_attached())
		return true;
	el_forget_database_on_abort = true;
	LWLockAcquire(el_shared->hash_lock, LW_EXCLUSIVE);
	for (i = 0; i < el_max_partitions; i++)
	{
		ElPartitionState *slot = &el_slots[i];

		if (slot->incarnation == 0 || slot->key.dbid != MyDatabaseId)
			continue;
		if (!el_free_slot(i, true, true))
			all = false;
	}
	LWLockRelease(el_shared->hash_lock);
	return all;
}

/*
 * Free the slots of partitions whose topic this transaction dropped (or of
 * the whole database, after DROP EXTENSION), so that they can be reused and
 * a topic of a re-created extension starts at offset 0.  Freeing a slot is
 * always safe, even should the drop have been rolled back in a
 * subtransaction: the counter is recovered from the catalog on next use.
 * A slot with in-flight entries is left alone.
 *
 * Then end the long polls of those topics: count the drop and wake every
 * read(wait) and poll(wait) of them (they sleep on the topics' wake-up
 * condition variables).  They look their topic up again and raise
 * "dropped while waiting" (topic.c, el_topic_recheck).  This runs after the
 * drop became visible to new snapshots, and a waiter always prepares to
 * sleep before it reads the count, so none misses the drop.
 */
static void
el_forget_partitions(void)
{
	ListCell   *lc;
	int			i;

	if (!el_shmem_attached())
		return;
	pg_atomic_fetch_add_u64(&el_shared->topic_drops, 1);
	LWLockAcquire(el_shared->hash_lock, LW_EXCLUSIVE);
	for (i = 0; i < el_max_partitions; i++)
	{
		ElPartitionState *slot = &el_slots[i];

		/* Fields are stable under hash_lock while the slot is assigned. */
		if (slot->incarnation == 0 || slot->key.dbid != MyDatabaseId)
			continue;
		if (!el_forget_database &&
			!list_member_int(el_forget_topics, slot->key.topic_id))
			continue;
		(void) el_free_slot(i, true, true);
	}
	LWLockRelease(el_shared->hash_lock);
	if (el_forget_database)
	{
		for (i = 0; i < EL_TOPIC_WAKEUPS; i++)
			ConditionVariableBroadcast(&el_shared->topic_wakeup[i]);
	}
	else
	{
		foreach(lc, el_forget_topics)
			ConditionVariableBroadcast(el_topic_wakeup(lfirst_int(lc)));
	}
}

static void
el_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (el_nheld > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that produced to an event log"),
						 errdetail("A prepared transaction would hold its partitions' last stable offset back until it is resolved, and its offsets are tracked only in the memory of this session."),
						 errhint("Produce in a transaction that commits directly.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			el_release_inflight(true);
			if (el_pending_activations != NIL)
				el_apply_activations();
			list_free_deep(el_pending_activations);
			el_pending_activations = NIL;
			if (el_forget_topics != NIL || el_forget_database)
				el_forget_partitions();
			list_free(el_forget_topics);
			el_forget_topics = NIL;
			el_forget_database = false;
			el_forget_database_on_abort = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			el_release_inflight(false);
			list_free_deep(el_pending_activations);
			el_pending_activations = NIL;
			list_free(el_forget_topics);
			el_forget_topics = NIL;
			if (el_forget_database_on_abort)
				el_forget_partitions();	/* el_free_database_slots_now */
			el_forget_database = false;
			el_forget_database_on_abort = false;
			break;
		default:
			break;
	}
}
