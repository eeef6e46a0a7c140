/*-------------------------------------------------------------------------
 *
 * inflight.c
 *	  The in-flight table: taking offsets for a transaction, the last stable
 *	  offset computed from the offsets still in flight, their release when
 *	  the transaction ends, and the segment activations a transaction asks
 *	  for at its commit.
 *
 * Why this exists (docs/design.md, invariant 1): offsets are handed out when
 * a record is inserted, but transactions commit in any order.  If offset 7 is
 * still in flight when 8 commits, a reader that returned 8 and moved on to
 * 9 would never see 7.  So each partition publishes a last stable offset:
 * the lowest offset still held by an in-flight transaction, or the high
 * watermark when there is none.  Readers never return records at or above
 * it, and they scan with a snapshot taken after computing it.
 *
 * Each slot's lock protects that partition's counter and its list of
 * in-flight entries.  A producer takes it exclusively just long enough to
 * take offsets and, the first time in its transaction, link its ElInflight
 * entry; readers take it shared.  No other lock is acquired while holding
 * it, nothing under it can raise an error, and no I/O happens under it.
 *
 * An entry is removed from the list by its owner at XACT_EVENT_COMMIT or
 * XACT_EVENT_ABORT.  PostgreSQL calls those after ProcArrayEndTransaction,
 * so by then new snapshots already see the outcome.  Between the two, and
 * for an entry leaked by a bug, readers treat an entry whose owner's PGPROC
 * no longer carries the entry's xid as gone: a finished transaction can
 * never hold a partition back.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "notify.h"
#include "processors.h"
#include "shmem_internal.h"
#include "worker.h"

/* This backend's entries in use by its current transaction: slice[0..n). */
int			el_nheld = 0;
static bool el_slice_checked = false;
List	   *el_pending_activations = NIL;

/* This backend's slice of the in-flight table. */
static inline ElInflight *
el_my_slice(void)
{
	Assert(EL_MY_PROCNO < el_shared->nprocs);
	return &el_shared->inflight[(Size) EL_MY_PROCNO * el_max_transaction_partitions];
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
 * notifier (notifier.c).  An abort can make committed records readable too,
 * when they were waiting behind the aborted offsets.  Nothing here sends a
 * notification: that would serialise every producing commit on NOTIFY's
 * cluster-wide lock.
 */
void
el_release_inflight(bool committed)
{
	ElInflight *slice;
	int			i;
	bool		announce = false;
	bool		notify = el_notifier_needed();
	int32		last_topic_id = 0;
	uint64		topics = 0;		/* their wake-up indexes, as bits */

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
		{
			ConditionVariableBroadcast(el_topic_wakeup(topic_id));
			topics |= UINT64CONST(1) << el_topic_wakeup_index(topic_id);
		}
		last_topic_id = topic_id;
	}
	el_nheld = 0;
	el_wake_database_waiters(topics);
	el_wake_processors(topics);
	if (announce)
		el_wake_notifier();
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
void
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
