/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  pg_eventlog's shared memory: per-partition offset counters and the
 *	  in-flight table from which the last stable offset is computed.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_SHMEM_H
#define PG_EVENTLOG_SHMEM_H

#include "lib/ilist.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

/* Identifies one partition of one topic in one database. */
typedef struct ElPartitionKey
{
	Oid			dbid;
	int32		topic_id;
	int32		partition;
} ElPartitionKey;

/*
 * Shared state of one partition, an entry of the shared hash table.  Every
 * field after the key is protected by "lock".  Entries never move while they
 * exist, so backends may remember their address; an entry is removed only
 * after its topic was dropped (and never while it has in-flight entries).
 */
typedef struct ElPartitionState
{
	ElPartitionKey key;			/* hash key: must be first */
	LWLock		lock;
	bool		initialized;	/* next_offset has been recovered */
	int64		next_offset;	/* the high watermark: next offset to assign */
	TimestampTz last_append_time;	/* append_time never goes backwards */
	dlist_head	inflight;		/* ElInflight, ascending first_offset */
} ElPartitionState;

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
} ElInflight;

typedef struct ElSharedState
{
	pid_t		launcher_pid;	/* running launcher, 0 if none */
	LWLock	   *hash_lock;		/* protects the partition hash table */
	int			partition_tranche;	/* tranche of ElPartitionState.lock */
	int			npartitions;	/* entries in the hash (under hash_lock) */
	int			nprocs;			/* PGPROC slots covered by inflight[] */
	ElInflight	inflight[FLEXIBLE_ARRAY_MEMBER];
} ElSharedState;

extern ElSharedState *el_shared;

/* settings */
extern int	el_max_partitions;
extern int	el_max_transaction_partitions;

extern ElPartitionState *el_partition_attach(Oid dbid, int32 topic_id,
											 int32 partition);
extern bool el_partition_initialized(ElPartitionState *part);
extern void el_partition_set_initial(ElPartitionState *part, int64 next_offset);
extern int64 el_allocate_offsets(ElPartitionState *part,
								 const ElPartitionKey *key, int count,
								 TimestampTz *append_time);
extern int64 el_last_stable_offset(ElPartitionState *part, int64 *high_watermark,
								   int *holder_pid);
extern void el_forget_topic_at_commit(int32 topic_id);
extern void el_forget_database_at_commit(void);

/* A test-only switch (eventlog.debug_ignore_stable_offset) lives in read.c. */

#endif							/* PG_EVENTLOG_SHMEM_H */
