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
 *	- el_shared->hash_lock (shared to look up, exclusive to add or remove)
 *	  protects the hash table of ElPartitionState entries.
 *	- Each ElPartitionState.lock protects that partition's counter and its
 *	  list of in-flight entries.  A producer takes it exclusively just long
 *	  enough to take offsets and, the first time in its transaction, link
 *	  its ElInflight entry; readers take it shared.  No other lock is ever
 *	  acquired while holding it, and no I/O happens under it.
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
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "shmem.h"

ElSharedState *el_shared = NULL;
static HTAB *el_partition_hash = NULL;

int			el_max_partitions = 1024;
int			el_max_transaction_partitions = 128;

/*
 * Test only: at transaction end, forget this backend's in-flight entries
 * without unlinking them, as a bug or an unforeseen exit path would.  The
 * tests use it to show that a leaked entry never holds a partition back.
 */
static bool el_debug_leak_inflight = false;

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

static void el_xact_callback(XactEvent event, void *arg);

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
	size = add_size(size, hash_estimate_size(el_max_partitions,
											 sizeof(ElPartitionState)));
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
		el_shared->partition_tranche = LWLockNewTrancheId();
		el_shared->npartitions = 0;
		el_shared->nprocs = nprocs;
		memset(el_shared->inflight, 0,
			   sizeof(ElInflight) * nprocs * el_max_transaction_partitions);
	}

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(ElPartitionKey);
	info.entrysize = sizeof(ElPartitionState);
	el_partition_hash = ShmemInitHash("pg_eventlog partitions",
									  el_max_partitions, el_max_partitions,
									  &info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);

	LWLockRegisterTranche(el_shared->partition_tranche, "pg_eventlog_partition");
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

	DefineCustomBoolVariable("eventlog.debug_leak_inflight",
							 "Test only: leave in-flight entries behind at transaction end.",
							 "Simulates a leak, to show that readers treat an entry of a finished transaction as gone.",
							 &el_debug_leak_inflight,
							 false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

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
 * Find the entry for "key", creating it (uninitialised) if needed.
 */
ElPartitionState *
el_partition_attach(Oid dbid, int32 topic_id, int32 partition)
{
	ElPartitionKey key;
	ElPartitionState *part;
	bool		found;

	el_require_shmem();

	memset(&key, 0, sizeof(key));
	key.dbid = dbid;
	key.topic_id = topic_id;
	key.partition = partition;

	LWLockAcquire(el_shared->hash_lock, LW_SHARED);
	part = hash_search(el_partition_hash, &key, HASH_FIND, NULL);
	LWLockRelease(el_shared->hash_lock);
	if (part)
		return part;

	LWLockAcquire(el_shared->hash_lock, LW_EXCLUSIVE);
	part = hash_search(el_partition_hash, &key, HASH_FIND, NULL);
	if (part == NULL)
	{
		if (el_shared->npartitions >= el_max_partitions)
		{
			LWLockRelease(el_shared->hash_lock);
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("too many event log partitions are in use"),
					 errdetail("All %d partition slots of shared memory are taken.",
							   el_max_partitions),
					 errhint("Raise eventlog.max_partitions and restart the server, or drop topics that are no longer used.")));
		}
		part = hash_search(el_partition_hash, &key, HASH_ENTER_NULL, &found);
		if (part == NULL)
		{
			LWLockRelease(el_shared->hash_lock);
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of shared memory for event log partitions"),
					 errhint("Raise eventlog.max_partitions and restart the server.")));
		}
		LWLockInitialize(&part->lock, el_shared->partition_tranche);
		part->initialized = false;
		part->next_offset = 0;
		part->last_append_time = 0;
		dlist_init(&part->inflight);
		el_shared->npartitions++;
	}
	LWLockRelease(el_shared->hash_lock);
	return part;
}

bool
el_partition_initialized(ElPartitionState *part)
{
	bool		result;

	LWLockAcquire(&part->lock, LW_SHARED);
	result = part->initialized;
	LWLockRelease(&part->lock);
	return result;
}

/*
 * Install a recovered counter, unless another backend got there first (its
 * value came from the same catalog state, and it may already have handed
 * out offsets above it).
 */
void
el_partition_set_initial(ElPartitionState *part, int64 next_offset)
{
	LWLockAcquire(&part->lock, LW_EXCLUSIVE);
	if (!part->initialized)
	{
		part->next_offset = next_offset;
		part->initialized = true;
	}
	LWLockRelease(&part->lock);
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
		LWLockRelease(&entry->part->lock);
		entry->part = NULL;
	}
	el_slice_checked = true;
}

/*
 * Take "count" consecutive offsets in "part" for the current top-level
 * transaction and return the first.  The same critical section registers
 * the transaction's in-flight entry, so no reader can ever compute a stable
 * offset above an offset that is taken but not yet committed.
 *
 * The top-level xid is assigned first: a subtransaction's xid is never the
 * key, and readers recognise a finished owner by its PGPROC's xid changing.
 * Every check that can fail happens before the counter moves.
 */
int64
el_allocate_offsets(ElPartitionState *part, const ElPartitionKey *key,
					int count, TimestampTz *append_time)
{
	TransactionId xid = GetTopTransactionId();
	ElInflight *slice = el_my_slice();
	ElInflight *mine = NULL;
	TimestampTz now;
	int64		first;
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

	LWLockAcquire(&part->lock, LW_EXCLUSIVE);
	if (!part->initialized || memcmp(&part->key, key, sizeof(*key)) != 0)
	{
		LWLockRelease(&part->lock);
		elog(ERROR, "pg_eventlog partition state is not ready");
	}
	first = part->next_offset;
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
		mine->first_offset = first;
		dlist_push_tail(&part->inflight, &mine->node);
		el_nheld++;
	}
	LWLockRelease(&part->lock);

	*append_time = now;
	return first;
}

/*
 * The last stable offset of "part": the lowest offset held by another
 * backend's transaction that is still in progress, else the high watermark.
 * The caller's own transaction never holds itself back.  Also returns the
 * high watermark, and the PID holding the stable offset back (0 if none).
 */
int64
el_last_stable_offset(ElPartitionState *part, int64 *high_watermark,
					  int *holder_pid)
{
	int64		lso;
	int			pid = 0;
	dlist_iter	iter;

	LWLockAcquire(&part->lock, LW_SHARED);
	lso = part->next_offset;
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
		lso = entry->first_offset;
		pid = proc->pid;
		break;
	}
	if (high_watermark)
		*high_watermark = part->next_offset;
	LWLockRelease(&part->lock);

	if (holder_pid)
		*holder_pid = pid;
	return lso;
}

/* Unlink every entry this backend holds: its transaction has ended. */
static void
el_release_inflight(void)
{
	ElInflight *slice;
	int			i;

	if (el_nheld == 0)
		return;
	if (el_debug_leak_inflight)
	{
		/* Leave them linked; the next allocation here unlinks them. */
		el_nheld = 0;
		el_slice_checked = false;
		return;
	}
	slice = el_my_slice();
	for (i = 0; i < el_nheld; i++)
	{
		ElInflight *entry = &slice[i];

		LWLockAcquire(&entry->part->lock, LW_EXCLUSIVE);
		dlist_delete(&entry->node);
		LWLockRelease(&entry->part->lock);
		entry->part = NULL;
	}
	el_nheld = 0;
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

/*
 * Remove the shared state of partitions whose topic this transaction
 * dropped, so that their slots can be reused.  Dropping a topic takes
 * ACCESS EXCLUSIVE locks on its segment tables, which wait for every
 * producer, so no entry can still be in flight; one that is (a leak) keeps
 * its slot rather than be freed under it.
 */
static void
el_forget_partitions(void)
{
	HASH_SEQ_STATUS status;
	ElPartitionState *part;

	if (!el_shmem_attached())
		return;
	LWLockAcquire(el_shared->hash_lock, LW_EXCLUSIVE);
	hash_seq_init(&status, el_partition_hash);
	while ((part = hash_seq_search(&status)) != NULL)
	{
		if (part->key.dbid != MyDatabaseId)
			continue;
		if (!el_forget_database &&
			!list_member_int(el_forget_topics, part->key.topic_id))
			continue;
		if (!dlist_is_empty(&part->inflight))
			continue;
		hash_search(el_partition_hash, &part->key, HASH_REMOVE, NULL);
		el_shared->npartitions--;
	}
	LWLockRelease(el_shared->hash_lock);
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
			el_release_inflight();
			if (el_forget_topics != NIL || el_forget_database)
				el_forget_partitions();
			list_free(el_forget_topics);
			el_forget_topics = NIL;
			el_forget_database = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			el_release_inflight();
			list_free(el_forget_topics);
			el_forget_topics = NIL;
			el_forget_database = false;
			break;
		default:
			break;
	}
}
