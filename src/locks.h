/*-------------------------------------------------------------------------
 *
 * locks.h
 *	  pg_eventlog's own transaction-level locks (locks.c), and below, every
 *	  lock the extension takes and the order it takes them in.
 *
 * SQL functions named here are in the install script's per-concern files
 * (sql/install/: topics.sql, retention.sql, groups.sql, group_members.sql,
 * capture.sql, privileges.sql); C functions in src/.  "Never waits" means a conditional acquire (NOWAIT, a try, or a
 * bounded lock_timeout): such a lock may be taken out of the order below,
 * since it cannot close a cycle of waits.
 *
 * 1. Spinlocks (innermost; nothing is acquired under them, no error raised)
 *	- el_shared->pin_lock (shmem.h, slots.c): the per-database pin counts
 *	  (ElDbPins).  Taken by el_pin_slot / el_unpin_slot under a slot's
 *	  LWLock, and by el_pin_share alone.
 *	- el_registry->mutex (worker.h; worker.c, notify.c, notifier.c): the
 *	  worker registry.  Taken alone, by the launcher, the workers, a
 *	  producing transaction's end waking the notifier (el_wake_notifier,
 *	  after its slot locks are released), utility.c's hooks and the
 *	  eventlog.maintenance view; no other lock is held with it.
 *
 * 2. LWLocks (never held across a heavyweight lock wait, I/O or an error)
 *	- tranche "pg_eventlog" (one lock, el_shared->hash_lock): the partition
 *	  key -> slot hash table and slot assignment.  Shared to look up
 *	  (el_partition_has_slot, el_partition_attach, el_apply_activations),
 *	  exclusive to assign or free a slot (el_partition_attach_internal,
 *	  el_find_free_slot, el_forget_partitions, el_free_database_slots_now).
 *	- tranche "pg_eventlog_partition" (one per slot, ElPartitionState.lock):
 *	  the slot's counter, routing, commit LSN, in-flight list and notify
 *	  range.  Exclusive: el_allocate_offsets (producers), el_release_inflight
 *	  and el_check_my_slice (a transaction's end), el_partition_set_initial,
 *	  el_apply_activations, el_take_announcement (the notifier),
 *	  el_free_slot and slot assignment.  Shared: el_stable_offset (readers),
 *	  el_partition_routing, el_partition_status.
 *	- AddinShmemInitLock (PostgreSQL's), exclusive in el_shmem_startup only.
 *	Order: hash_lock, then one slot lock, then pin_lock.  At most one slot
 *	lock is held at a time (loops over slots release each before the next);
 *	a slot lock is never held while hash_lock is requested.
 *
 * 3. Condition variables (a wait, not a lock): el_shared->kafka_group_wakeup[]
 *	(kafka_group.c), one per hash of (database, Kafka group): a waiting
 *	JoinGroup or SyncGroup sleeps on it with no lock and no snapshot, after
 *	its procedure committed; broadcast at the commit of a change of a group.
 *	And el_shared->topic_wakeup[],
 *	one per hash of (database, topic).  Long polls (read.c) sleep on them
 *	holding whatever heavyweight locks their transaction has (a
 *	transactional poll: its group membership lock, shared, and the group
 *	partitions it took); el_release_inflight and el_forget_partitions
 *	broadcast them after releasing their LWLocks.
 *
 * 4. pg_eventlog's advisory locks (ElLockKind below; locks.c).  Advisory
 *	LOCKTAGs in a key space of their own, transaction-level.  SQL takes them
 *	through one function per kind and way (eventlog._lock_<what> waits,
 *	_try_lock_<what> never waits; both exclusive, and both compute the key in
 *	C), never by number; C takes them by LockAcquire on el_locktag: kind 1
 *	in counter recovery, kind 3 in the C group code (group.c).
 *	- kind 1, EL_LOCK_ROUTING, key el_routing_lock_key(topic_id, partition)
 *	  (topic_id << 32 | partition): orders a partition's counter recovery
 *	  with a maintenance round.  Exclusive, waited for: by
 *	  el_recover_next_offset (partition.c) as a session lock released as
 *	  soon as the catalog has been read, with no LWLock held; by
 *	  eventlog._maintain_topic (_lock_routing) for each partition in
 *	  ascending order, held to commit (its own routing read may recover a
 *	  counter under it: a backend's session and transaction locks on one tag
 *	  do not conflict).
 *	- kind 2, EL_LOCK_MAINTENANCE, key topic_id: one maintenance round per
 *	  topic.  Exclusive, never waits (_try_lock_maintenance in
 *	  _maintain_topic); waited for (_lock_maintenance) by drop_topic, after
 *	  its topic row lock, held to its commit, so that no round of the topic
 *	  runs beside the drop.
 *	  eventlog.enforce_retention() without a topic takes the kind 2 and 1
 *	  locks of several topics in one transaction, in ascending topic_id.
 *	- kind 3, EL_LOCK_GROUP, key el_group_lock_key(topic_id, group, p)
 *	  (group.c): p = -1 is a group's membership lock, p >= 0 a group's
 *	  partition.
 *	  Membership: shared and waited for by a transactional poll
 *	  (el_group_lock_checked, group.c) and a member's commit
 *	  (el_group_commit, group_member.c); exclusive and waited for by a
 *	  member's poll (el_group_poll_member via el_group_lock_checked) and
 *	  leave (_leave: _lock_group_membership); exclusive, never waits, in
 *	  delete_group (_try_lock_group_membership).
 *	  Partitions: exclusive; tried (never waits) by a transactional poll in
 *	  any order, by delete_group and by seek (_try_lock_group_partition);
 *	  waited for, in ascending partition order, by seek(force => true)
 *	  (_lock_group_partition), which takes no membership lock.
 *	  Order: membership before partitions.
 *	- kind 4, EL_LOCK_KAFKA_GROUP, key a hash of the group name: a Kafka
 *	  group's coordinator state (sql/install/kafka_groups.sql;
 *	  eventlog._lock_kafka_group, _try_lock_kafka_group, kafka_group.c).  Exclusive, waited for, held to the end of the
 *	  transaction, by every kafka_* call of the group; never held while a
 *	  JoinGroup or SyncGroup waits (the procedures commit first).  Several
 *	  groups (kafka_list_groups, kafka_describe_groups, kafka_delete_groups)
 *	  in ascending name order.  Under it: kafka_delete_groups takes the SQL
 *	  groups' kind 3 locks (never waits, eventlog._delete_group), and an
 *	  OffsetCommit the group_offsets row locks (it may wait for an SQL
 *	  transactional poll of the same group name, which never takes kind 4).
 *	- kind 5, EL_LOCK_PRODUCER, key the producer ID (producer.c): shared and
 *	  waited for by an idempotent produce, held to the end of its
 *	  transaction; exclusive and waited for by init_producer when it bumps
 *	  the epoch (_lock_producer, sql/install/producers.sql, after the
 *	  producer_catalog row lock), so that no batch of the older epoch
 *	  commits after it; exclusive, never waits, by the expiry
 *	  (_try_lock_producer in _expire_producers, after the producer_catalog
 *	  row, FOR UPDATE SKIP LOCKED: init_producer's order).
 *	- kind 6, EL_LOCK_PRODUCER_PARTITION, key el_producer_partition_key
 *	  (a hash of producer ID, topic and partition; producer.c): exclusive,
 *	  waited for, held to the end of the transaction, by an idempotent
 *	  produce after its kind 5 lock and before taking offsets: two batches
 *	  of one producer in one partition check and store their sequence
 *	  numbers one after the other, the second seeing what the first
 *	  committed (a retry waits for its first attempt's transaction).
 *	  Several partitions of one producer in one transaction: in the order
 *	  the calls name them (a cycle is a deadlock PostgreSQL reports).
 *
 * 5. Heavyweight table locks and row locks, in the order taken:
 *	- eventlog.topic_catalog IN SHARE ROW EXCLUSIVE MODE (LOCK TABLE):
 *	  create_topic (also from capture, when it creates the topic) and
 *	  alter_topic growth (_add_partitions), always before any topic row lock
 *	  (alter_topic takes it first, see there); serialises topic creation and
 *	  the eventlog.max_partitions check.
 *	- a topic_catalog row FOR UPDATE: drop_topic and alter_topic; grants and
 *	  revokes of topic privileges update it.
 *	- a captured source table IN SHARE ROW EXCLUSIVE MODE: capture(), after
 *	  the topic_catalog lock when it creates the topic, before creating its
 *	  trigger; the snapshot of existing rows (capture.c) then opens it with
 *	  AccessShareLock.
 *	- segment tables (eventlog_segments.seg_*): RowExclusiveLock by produce
 *	  and change capture's batches (produce.c, el_open_segment: after taking
 *	  offsets, so after any kind 1 wait of that call; a batch is produced at
 *	  a flush point of capture_batch.c, one partition after another, as
 *	  produce_batch does), then on the segment's indexes (segment.c,
 *	  el_appender_begin), both held to the end of the transaction;
 *	  AccessShareLock by
 *	  read (read.c) and by counter recovery (segment.c,
 *	  el_segment_edge_offset, under the kind 1 lock); AccessShareLock taken
 *	  conditionally (never waits) by the monitoring views (segment.c);
 *	  AccessShareLock, waited for, by _maintain_topic (under kind 2 and
 *	  kind 1; it conflicts only with a DROP): held to commit by its
 *	  append-time lookups (eventlog._segment_times), oldest segment first,
 *	  released at once by its size queries (pg_total_relation_size);
 *	  AccessExclusiveLock NOWAIT, then DROP under a lock_timeout of at most
 *	  50 ms, by retention in _maintain_topic (under kind 2 and kind 1);
 *	  DROP TABLE, waiting, in (partition, segment) order, by drop_topic
 *	  (after its topic row lock and kind 2) and by DROP EXTENSION (utility.c,
 *	  el_drop_all_segments).
 *	- the catalog tables (topic_catalog, partition_catalog, segment_catalog,
 *	  group_catalog, group_offsets, group_members): AccessShareLock for every
 *	  read (index scans: topic.c, group_scan.c; SPI: partition.c,
 *	  committed.c, notifier.c, maintenance.c), RowExclusiveLock and row
 *	  locks for every change.  Row locks on group_offsets: UPDATE (in place,
 *	  or the upsert) by a transactional poll and by seek under the
 *	  partition's kind 3 lock; FOR UPDATE (ascending partition) by a
 *	  member's commit, and the rebalance's UPDATE (group_member.c), under
 *	  the membership lock.
 *	- PostgreSQL catalogs, AccessShareLock, alone: pg_database (launcher),
 *	  pg_depend and pg_attrdef (dependents.c), pg_trigger (capture_ddl.c).
 *	- NOTIFY's lock (PreCommit_Notify: AccessExclusiveLock on "database 0"):
 *	  taken only by the notifier's own transactions, never by producers
 *	  (notify.c says why).
 *
 * Whole order, outermost first: topic_catalog table lock > topic row >
 * captured table > kind 2 > kind 4 > kind 3 membership > kind 3 partitions >
 * kind 5 > kind 6 > kind 1 > segment and catalog table locks, row locks > (no heavyweight wait from
 * here on) hash_lock > one slot lock > pin_lock.  One exception:
 *	- a transaction that produced or read holds segment locks when a later
 *	  call waits for a kind 1 lock in recovery, the reverse of a maintenance
 *	  round; but the round never waits for a lock a producer or reader holds
 *	  (NOWAIT, a bounded lock_timeout, or AccessShareLock, which conflicts
 *	  only with a DROP), so that cycle cannot close.
 * (drop_topic waits for the topic's kind 2 lock: beside a round, the
 * segment the round created outlived the topic, and the two deadlocked, the
 * round waiting for a segment drop_topic had dropped while drop_topic's
 * cascade waited for the catalog rows the round had changed.)
 * The worker registry mutex is never held with any other lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_LOCKS_H
#define PG_EVENTLOG_LOCKS_H

#include "storage/lock.h"

/*
 * What a lock orders.  The number is the LOCKTAG's fourth field less
 * EL_LOCK_SPACE (locks.c; pg_locks.objsubid shows it), so it must not change
 * for a kind; SQL never passes it (the functions in locks.c name the kind).
 */
typedef enum ElLockKind
{
	EL_LOCK_ROUTING = 1,		/* a partition's counter recovery vs a maintenance round */
	EL_LOCK_MAINTENANCE = 2,	/* one maintenance round per topic */
	EL_LOCK_GROUP = 3,			/* a consumer group's partition, or its membership */
	EL_LOCK_KAFKA_GROUP = 4,	/* a Kafka group's coordinator state */
	EL_LOCK_PRODUCER = 5,		/* an idempotent producer's epoch */
	EL_LOCK_PRODUCER_PARTITION = 6	/* a producer's state in one partition */
} ElLockKind;

extern void el_locktag(LOCKTAG *tag, ElLockKind kind, int64 key);
extern int64 el_routing_lock_key(int32 topic_id, int32 partition);

#endif							/* PG_EVENTLOG_LOCKS_H */
