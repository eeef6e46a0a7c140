/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  pg_eventlog's shared memory: per-partition offset counters and the
 *	  in-flight table from which the last stable offset is computed.  Its
 *	  code is in three files: shmem.c (sizing, start-up, transaction
 *	  callbacks), slots.c (the slot table) and inflight.c (offsets in
 *	  flight); shmem_internal.h is what they share with no one else.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_SHMEM_H
#define PG_EVENTLOG_SHMEM_H

#include "access/xlogdefs.h"
#include "lib/ilist.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

/* Identifies one partition of one topic in one database. */
typedef struct ElPartitionKey
{
	Oid			dbid;
	int32		topic_id;
	int32		partition;
} ElPartitionKey;

/*
 * Shared state of one partition: a slot of a fixed array.  Its LWLock is
 * initialised once at server start and never again, so a backend holding a
 * stale pointer can always lock it safely.  Every other field is protected
 * by that lock.  A slot is (re)assigned to a partition with a new
 * incarnation; a backend remembers (slot, incarnation) in an ElSlotRef and
 * every operation checks the incarnation under the lock, so a slot that was
 * freed or given to another partition is never mistaken for the old one.
 * A slot is freed (its counter forgotten, to be recovered from the catalog
 * on next use) only while no transaction has an in-flight entry in it.
 */
typedef struct ElPartitionState
{
	LWLock		lock;
	uint64		incarnation;	/* 0: the slot is free */
	ElPartitionKey key;			/* valid while assigned */
	bool		initialized;	/* next_offset has been recovered */
	int64		next_offset;	/* the high watermark: next offset to assign */
	TimestampTz last_append_time;	/* append_time never goes backwards */
	XLogRecPtr	commit_lsn;		/* end of the newest commit record of a
								 * transaction that produced here */
	int32		active_segno;	/* segment new offsets go to */
	int64		active_base;	/* first offset routed to it */
	dlist_head	inflight;		/* ElInflight, ascending first_offset */
	int64		notify_lo;		/* lowest committed offset not yet announced
								 * to LISTENers, -1 if none (notifier.c) */
	int64		notify_hi;		/* highest committed offset not yet announced */
} ElPartitionState;

/* Where a partition's new records go, as recovered or last activated. */
typedef struct ElRouting
{
	int32		active_segno;
	int64		active_base;
} ElRouting;

/* A backend's reference to a partition's slot. */
typedef struct ElSlotRef
{
	ElPartitionState *slot;		/* NULL: not attached */
	uint64		incarnation;
} ElSlotRef;

typedef enum ElSlotStatus
{
	EL_SLOT_STALE,				/* reassigned or freed: attach again */
	EL_SLOT_UNINITIALIZED,		/* counter not recovered yet */
	EL_SLOT_READY
} ElSlotStatus;

/* What a reader needs from a partition at one moment. */
typedef struct ElStableOffset
{
	int64		stable;			/* last stable offset */
	int64		high_watermark;
	int			holder_pid;		/* backend holding it back, 0 if none */
	XLogRecPtr	commit_lsn;		/* flush WAL to here before returning rows */
	int32		active_segno;	/* newest segment that may hold records */
} ElStableOffset;

/*
 * One backend's claim on a partition for its current top-level
 * transaction: the lowest offset it took there.  Each backend owns a fixed
 * slice of these (eventlog.max_transaction_partitions), indexed by its
 * pgprocno, and links one into a partition's list the first time the
 * transaction produces to that partition.  Only the owner links or unlinks
 * its entries, always under the partition's lock.
 */
typedef struct ElInflight
{
	dlist_node	node;
	ElPartitionState *part;		/* NULL when the entry is free */
	TransactionId xid;			/* owner's top-level xid */
	int			pgprocno;		/* owner's PGPROC number */
	int64		first_offset;	/* lowest offset the owner took here */
	int64		end_offset;		/* one past the highest it took here */
} ElInflight;

/*
 * Condition variables that long polls over several partitions of a topic
 * sleep on (a backend can sleep on one condition variable at a time).  A
 * topic maps to one of them by hash; a producing transaction broadcasts the
 * ones of the topics it touched when it ends.  A collision only costs a
 * spurious wakeup.
 */
#define EL_TOPIC_WAKEUPS 64

/*
 * Database-wide wake-ups for long polls over partitions of several topics
 * (the Kafka gateway's Fetch, kafka_await.c): a condition variable per hash
 * of the database.  A producing transaction's end broadcasts its database's
 * only while someone waits on it for one of the topics it produced to:
 * "interest" holds the topics' wake-up indexes (el_topic_wakeup_index) as
 * bits, OR-ed in by each waiter and cleared when the last one leaves (both
 * under "mutex"), so producers pay a barrier and an atomic read when no one
 * waits, and a producer to a topic nobody waits on (or to a topic hashing
 * with one) wakes nobody.
 */
#define EL_DB_WAKEUPS 16

typedef struct ElDbWakeup
{
	ConditionVariable cv;
	slock_t		mutex;			/* registering and leaving waiters */
	pg_atomic_uint32 waiters;	/* backends waiting on cv */
	pg_atomic_uint64 interest;	/* bits of the topics they wait on */
} ElDbWakeup;

/* Kafka groups' wake-ups (kafka_group.c): condition variables and epochs per hash of (database, group). */
#define EL_KAFKA_GROUP_WAKEUPS 64

/* A partition whose newly readable records the notifier announces. */
typedef struct ElNotifyItem
{
	int32		topic_id;
	int32		partition;
	int64		stable;			/* its last stable offset now */
	int64		records;		/* offsets it announces that no earlier
								 * notification did (rolled-back ones too) */
	int32		active_segno;	/* its active segment then: every record
								 * below "stable" is in it or an older one */
} ElNotifyItem;

/*
 * How many partition slots one database pins: slots with at least one
 * in-flight entry of that database's transactions, which cannot be freed
 * until those transactions end.  One entry per database that pins any;
 * an array of eventlog.max_partitions entries (no more databases can pin at
 * once), the first npin_dbs in use, under pin_lock.
 */
typedef struct ElDbPins
{
	Oid			dbid;
	int			pinned;
} ElDbPins;

typedef struct ElSharedState
{
	pid_t		launcher_pid;	/* running launcher, 0 if none */
	LWLock	   *hash_lock;		/* protects the key -> slot hash table, and
								 * slot assignment (with the slot's lock) */
	uint64		next_incarnation;	/* under hash_lock */
	int			clock_hand;		/* next slot to consider (under hash_lock) */
	int			nprocs;			/* PGPROC slots covered by inflight[] */
	slock_t		pin_lock;		/* protects npin_dbs and the ElDbPins array */
	int			npin_dbs;		/* databases pinning slots now */
	ConditionVariable topic_wakeup[EL_TOPIC_WAKEUPS];
	pg_atomic_uint64 topic_drops;	/* topics dropped (plus 1), counted at
									 * the drop's commit: long polls look
									 * their topic up again when it moves */
	ConditionVariable kafka_group_wakeup[EL_KAFKA_GROUP_WAKEUPS];
	/* bumped by each commit that changed a group hashing there */
	pg_atomic_uint64 kafka_group_epoch[EL_KAFKA_GROUP_WAKEUPS];
	ElDbWakeup	db_wakeup[EL_DB_WAKEUPS];
	ElInflight	inflight[FLEXIBLE_ARRAY_MEMBER];
} ElSharedState;

/* shmem.c: the area, its settings, and the long polls' wake-ups */
extern ElSharedState *el_shared;
extern int	el_max_partitions;
extern int	el_max_transaction_partitions;
extern ConditionVariable *el_topic_wakeup(int32 topic_id);
extern uint64 el_topic_drop_count(void);
extern int	el_topic_wakeup_index(int32 topic_id);
extern ElDbWakeup *el_db_wakeup_register(uint64 interest);
extern void el_db_wakeup_unregister(ElDbWakeup *wakeup);
extern void el_wake_database_waiters(uint64 topics);
extern void el_wake_replayed(Oid dbid, const int32 *topic_ids, int n);

/*
 * slots.c: a partition's slot.  Only partition.c (el_with_partition) holds
 * an ElSlotRef and calls the functions taking one.
 */
extern void el_partition_attach(const ElPartitionKey *key, ElSlotRef *ref);
extern bool el_partition_try_attach(const ElPartitionKey *key, ElSlotRef *ref);
extern bool el_partition_has_slot(const ElPartitionKey *key);
extern void el_pin_share(int *pinned, int *share, int *others);
extern ElSlotStatus el_partition_status(const ElSlotRef *ref);
extern XLogRecPtr el_wal_insert_end(void);
extern bool el_partition_set_initial(const ElSlotRef *ref, int64 next_offset,
									 const ElRouting *routing);
extern bool el_partition_routing(const ElSlotRef *ref, ElRouting *routing);
extern bool el_take_announcement(int slotno, ElNotifyItem *item,
								 bool *pending);
extern void el_forget_topic_at_commit(int32 topic_id);
extern void el_forget_database_at_commit(void);
extern bool el_forget_database_pending(void);
extern bool el_free_database_slots_now(void);

/* inflight.c: offsets in flight */
extern bool el_allocate_offsets(const ElSlotRef *ref, int count, int64 *first,
								int32 *segno, TimestampTz *append_time);
extern bool el_stable_offset(const ElSlotRef *ref, ElStableOffset *out);
extern void el_activate_segment_at_commit(int32 topic_id, int32 partition,
										  int32 segno);

#endif							/* PG_EVENTLOG_SHMEM_H */
