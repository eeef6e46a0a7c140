/*-------------------------------------------------------------------------
 *
 * slots.c
 *	  The partition slots of shared memory: finding, assigning and freeing a
 *	  partition's slot, the per-database pin counts that keep one database
 *	  from taking them all, installing a recovered counter, freeing the
 *	  slots of dropped topics at commit, and what a slot has for the
 *	  notifier to announce (el_take_announcement; notifier.c decides when).
 *
 * Locking protocol:
 *	- Partition state lives in a fixed array of slots (eventlog.max_partitions)
 *	  whose LWLocks are initialised once; a hash table maps a partition's key
 *	  to its slot.  el_shared->hash_lock (shared to look up, exclusive to
 *	  assign or free a slot) protects the hash table.  Assigning or freeing a
 *	  slot also takes the slot's lock, always after hash_lock.
 *	- Slots are a cache of counters: a slot without in-flight entries may be
 *	  freed (when its topic is dropped, or to make room) and its counter is
 *	  recovered from the catalog on next use, exactly as after a restart.
 *	  Backends refer to slots by (pointer, incarnation) and re-attach when
 *	  the incarnation changed.
 *
 * Counters start uninitialised after every server start; the first backend
 * to use a partition recovers the counter from the catalog (partition.c) and
 * installs it with el_partition_set_initial.  Nothing here reads catalogs.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "shmem_internal.h"

/* Topics dropped by the current transaction, forgotten at its commit. */
List	   *el_forget_topics = NIL;
bool		el_forget_database = false;
/* The database's slots were freed before the drop committed: free at abort too. */
bool		el_forget_database_on_abort = false;
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
bool
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
void
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
void
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
 * (el_find_free_slot): a reader can then do without one (partition.c,
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
bool
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
 * For the notifier of the current database (notifier.c): whether slot
 * "slotno" holds committed records of this database that became readable
 * since they were last announced.  If so, *item gets the partition and its
 * last stable offset now, and the records below it count as announced.
 * *pending says whether committed records are still held back there by an
 * earlier offset in flight: its holder wakes the notifier when it ends.
 */
bool
el_take_announcement(int slotno, ElNotifyItem *item, bool *pending)
{
	ElPartitionState *part = &el_slots[slotno];
	int64		stable;
	dlist_iter	iter;
	bool		taken = false;

	*pending = false;

	/*
	 * An unlocked look first (a stale value only costs a lock): most slots
	 * have nothing to announce, or belong to another database.
	 */
	if (*((volatile int64 *) &part->notify_lo) < 0 ||
		*((volatile Oid *) &part->key.dbid) != MyDatabaseId)
		return false;
	LWLockAcquire(&part->lock, LW_EXCLUSIVE);
	if (part->incarnation == 0 || part->key.dbid != MyDatabaseId ||
		part->notify_lo < 0 || !part->initialized)
	{
		LWLockRelease(&part->lock);
		return false;
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
		item->topic_id = part->key.topic_id;
		item->partition = part->key.partition;
		item->stable = stable;
		item->records = stable - part->notify_lo;
		item->active_segno = part->active_segno;
		taken = true;
		/* Committed records above the stable offset are still to come. */
		part->notify_lo = (part->notify_hi >= stable) ? stable : -1;
		if (part->notify_lo >= 0)
			part->notify_hi = Max(part->notify_hi, stable);
	}
	if (part->notify_lo >= 0)
		*pending = true;
	LWLockRelease(&part->lock);
	return taken;
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
void
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
	/* And the database-wide ones: they look their topics up again. */
	for (i = 0; i < EL_DB_WAKEUPS; i++)
		ConditionVariableBroadcast(&el_shared->db_wakeup[i].cv);
}
