/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  pg_eventlog's shared memory: the settings that size it, the hooks that
 *	  request and attach it at server start, and the transaction callbacks
 *	  that give back what a transaction held there when it ends.
 *
 * The area holds a fixed array of partition slots with a hash table from a
 * partition's key to its slot (slots.c), the in-flight table from which a
 * partition's last stable offset is computed (inflight.c), the long polls'
 * wake-up condition variables, and the worker registry (worker.c).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/hsearch.h"

#include "shmem_internal.h"
#include "worker.h"

ElSharedState *el_shared = NULL;
ElPartitionState *el_slots = NULL;	/* [el_max_partitions] */
ElDbPins   *el_pin_dbs = NULL;		/* [el_max_partitions], see el_pin_slot */
HTAB	   *el_partition_hash = NULL;

int			el_max_partitions = 1024;
int			el_max_transaction_partitions = 128;
/*
 * Test only: at transaction end, forget this backend's in-flight entries
 * without unlinking them, as a bug or an unforeseen exit path would.  The
 * tests use it to show that a leaked entry never holds a partition back.
 * Only in a build for the tests (EL_TEST_HOOKS, see the Makefile).
 */
#ifdef EL_TEST_HOOKS
bool		el_debug_leak_inflight = false;
#endif

static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
#ifdef EL_HAVE_SHMEM_REQUEST_HOOK
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif

/* Set once the area has been requested, i.e. the library was preloaded. */
static bool el_shmem_requested = false;
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
		for (int i = 0; i < EL_KAFKA_GROUP_WAKEUPS; i++)
		{
			ConditionVariableInit(&el_shared->kafka_group_wakeup[i]);
			pg_atomic_init_u64(&el_shared->kafka_group_epoch[i], 0);
		}
		for (int i = 0; i < EL_DB_WAKEUPS; i++)
		{
			ConditionVariableInit(&el_shared->db_wakeup[i].cv);
			SpinLockInit(&el_shared->db_wakeup[i].mutex);
			pg_atomic_init_u32(&el_shared->db_wakeup[i].waiters, 0);
			pg_atomic_init_u64(&el_shared->db_wakeup[i].interest, 0);
		}
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

/* The index of the wake-up condition variable of topic "topic_id" of database "dbid". */
static int
el_topic_wakeup_index_in(Oid dbid, int32 topic_id)
{
	uint32		h = hash_uint32((uint32) topic_id) ^ hash_uint32((uint32) dbid);

	StaticAssertStmt(EL_TOPIC_WAKEUPS <= 64, "interest bits must fit in 64 bits");
	return (int) (h % EL_TOPIC_WAKEUPS);
}

/* The index of a topic's wake-up condition variable (of this database's topic). */
int
el_topic_wakeup_index(int32 topic_id)
{
	return el_topic_wakeup_index_in(MyDatabaseId, topic_id);
}

ConditionVariable *
el_topic_wakeup(int32 topic_id)
{
	return &el_shared->topic_wakeup[el_topic_wakeup_index(topic_id)];
}

static ElDbWakeup *
el_db_wakeup_in(Oid dbid)
{
	return &el_shared->db_wakeup[hash_uint32((uint32) dbid) % EL_DB_WAKEUPS];
}

static ElDbWakeup *
el_db_wakeup(void)
{
	return el_db_wakeup_in(MyDatabaseId);
}

/*
 * Count this backend as a waiter of its database's wake-up, for the topics
 * whose bits are in "interest", before it looks at their stable offsets:
 * the barrier orders the registration before that look, and
 * el_wake_database_waiters orders a producer's release of its partitions
 * before its read of the registration, so either the waiter sees the
 * producer's offsets or the producer sees the waiter and broadcasts.
 */
ElDbWakeup *
el_db_wakeup_register(uint64 interest)
{
	ElDbWakeup *w = el_db_wakeup();

	SpinLockAcquire(&w->mutex);
	pg_atomic_fetch_add_u32(&w->waiters, 1);
	pg_atomic_fetch_or_u64(&w->interest, interest);
	SpinLockRelease(&w->mutex);
	pg_memory_barrier();
	return w;
}

/* The last waiter to leave clears the interest (under the mutex: none is lost). */
void
el_db_wakeup_unregister(ElDbWakeup *w)
{
	SpinLockAcquire(&w->mutex);
	if (pg_atomic_fetch_sub_u32(&w->waiters, 1) == 1)
		pg_atomic_write_u64(&w->interest, 0);
	SpinLockRelease(&w->mutex);
}

/*
 * Wake the database-wide long polls (kafka_await.c) of this backend's
 * database that wait on one of "topics" (bits of el_topic_wakeup_index):
 * called after a transaction's end released its partitions, whose stable
 * offsets may have moved.
 */
void
el_wake_database_waiters(uint64 topics)
{
	ElDbWakeup *w = el_db_wakeup();

	pg_memory_barrier();
	if (pg_atomic_read_u32(&w->waiters) > 0 &&
		(pg_atomic_read_u64(&w->interest) & topics) != 0)
		ConditionVariableBroadcast(&w->cv);
}

/*
 * Wake the long polls of database "dbid" that wait on one of topics
 * topic_ids[0..n), or on any of its topics if n is 0, from a process of
 * any database: the startup process of a hot standby, replaying the
 * primary's wake-up record after a publication (standby_wake.c).  A
 * collision of hashes only costs a spurious wake-up.
 */
void
el_wake_replayed(Oid dbid, const int32 *topic_ids, int n)
{
	uint64		topics = 0;
	ElDbWakeup *w;

	if (el_shared == NULL)
		return;
	if (n == 0)
		topics = ~UINT64CONST(0);
	for (int i = 0; i < n; i++)
		topics |= UINT64CONST(1) << el_topic_wakeup_index_in(dbid, topic_ids[i]);
	for (int i = 0; i < EL_TOPIC_WAKEUPS; i++)
		if (topics & (UINT64CONST(1) << i))
			ConditionVariableBroadcast(&el_shared->topic_wakeup[i]);
	w = el_db_wakeup_in(dbid);
	pg_memory_barrier();
	if (pg_atomic_read_u32(&w->waiters) > 0 &&
		(pg_atomic_read_u64(&w->interest) & topics) != 0)
		ConditionVariableBroadcast(&w->cv);
}

uint64
el_topic_drop_count(void)
{
	el_require_shmem();
	return pg_atomic_read_u64(&el_shared->topic_drops);
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
