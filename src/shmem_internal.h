/*-------------------------------------------------------------------------
 *
 * shmem_internal.h
 *	  What the three files of the shared state share with each other and
 *	  with nothing else: shmem.c (sizing, start-up, transaction callbacks),
 *	  slots.c (the slot table) and inflight.c (the in-flight table).  Other
 *	  files use shmem.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_SHMEM_INTERNAL_H
#define PG_EVENTLOG_SHMEM_INTERNAL_H

#include "nodes/pg_list.h"
#include "utils/hsearch.h"

#include "shmem.h"

/* Hash table entry: a partition's key and the slot it occupies. */
typedef struct ElPartitionHashEntry
{
	ElPartitionKey key;
	int			slotno;
} ElPartitionHashEntry;

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

/* shmem.c: the areas, attached at start-up */
extern ElPartitionState *el_slots;
extern ElDbPins *el_pin_dbs;
extern HTAB *el_partition_hash;
#ifdef EL_TEST_HOOKS
extern bool el_debug_leak_inflight;
#endif

/* slots.c */
extern List *el_forget_topics;
extern bool el_forget_database;
extern bool el_forget_database_on_abort;
extern bool el_lock_ref(const ElSlotRef *ref, LWLockMode mode);
extern bool el_pin_slot(Oid dbid);
extern void el_unpin_slot(Oid dbid);
extern void el_report_share_exceeded(void);
extern void el_forget_partitions(void);

/* inflight.c */
extern int	el_nheld;
extern List *el_pending_activations;
extern void el_release_inflight(bool committed);
extern void el_apply_activations(void);

#endif							/* PG_EVENTLOG_SHMEM_INTERNAL_H */
