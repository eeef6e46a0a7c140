/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Differences between the PostgreSQL major versions pg_eventlog builds
 *	  against (14 to 18), kept in one place.
 *
 * Each guard names the upstream change behind it, so that the day a version
 * leaves support its block can simply be deleted.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_COMPAT_H
#define PG_EVENTLOG_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 140000
#error "pg_eventlog requires PostgreSQL 14 or later"
#endif

/*
 * PostgreSQL 15 added shmem_request_hook; before it, shared memory was
 * requested directly from _PG_init.  (commit 4f2400cb3f1)
 */
#if PG_VERSION_NUM >= 150000
#define EL_HAVE_SHMEM_REQUEST_HOOK 1
#endif

/*
 * PostgreSQL 15 added MarkGUCPrefixReserved; 14 has the older
 * EmitWarningsOnPlaceholders, which only warns.
 */
#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/*
 * PostgreSQL 16 made simple_heap_update say which indexes need new
 * entries (commit 19d8e2308bc); pg_eventlog tests HeapTupleIsHeapOnly.
 */
#if PG_VERSION_NUM >= 160000
#define el_simple_heap_update(rel, otid, tup) \
	do { \
		TU_UpdateIndexes el_update_indexes_; \
		simple_heap_update((rel), (otid), (tup), &el_update_indexes_); \
	} while (0)
#else
#define el_simple_heap_update(rel, otid, tup) simple_heap_update((rel), (otid), (tup))
#endif

/* PostgreSQL 16 moved the varlena macros into varatt.h. */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * PostgreSQL 16 replaced the per-class ownership checks with
 * object_ownercheck (acl.c).
 */
#if PG_VERSION_NUM >= 160000
#define el_relation_ownercheck(relid, role) \
	object_ownercheck(RelationRelationId, (relid), (role))
#else
#define el_relation_ownercheck(relid, role) pg_class_ownercheck((relid), (role))
#endif

/*
 * PostgreSQL 17 added custom wait events for extensions
 * (WaitEventExtensionNew); earlier versions only have the generic
 * PG_WAIT_EXTENSION.
 */
#if PG_VERSION_NUM >= 170000
#define EL_HAVE_CUSTOM_WAIT_EVENTS 1
#endif

/*
 * PostgreSQL 17 replaced PGPROC.pgprocno by MyProcNumber/GetNumberFromPGProc
 * (commit 024c521117).
 */
#if PG_VERSION_NUM >= 170000
#define EL_MY_PROCNO			MyProcNumber
#else
#define EL_MY_PROCNO			(MyProc->pgprocno)
#endif

/* PostgreSQL 18 added an instrumentation argument to index_beginscan. */
#if PG_VERSION_NUM >= 180000
#define el_index_beginscan(heap, index, snap, nkeys, norderbys) \
	index_beginscan((heap), (index), (snap), NULL, (nkeys), (norderbys))
#else
#define el_index_beginscan(heap, index, snap, nkeys, norderbys) \
	index_beginscan((heap), (index), (snap), (nkeys), (norderbys))
#endif

/*
 * MaxBackends is only known once shared_preload_libraries have been
 * processed; PostgreSQL 15 computes it before shmem_request_hook runs.  On
 * 14 the same sum is made from the settings it is derived from.
 */
#if PG_VERSION_NUM >= 150000
#define EL_MAX_BACKENDS()		(MaxBackends)
#else
#define EL_MAX_BACKENDS() \
	(MaxConnections + autovacuum_max_workers + 1 + max_worker_processes + max_wal_senders)
#endif

/* PostgreSQL 16 added the onlySummarizing argument to ExecInsertIndexTuples. */
#if PG_VERSION_NUM >= 160000
#define el_insert_index_tuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#else
#define el_insert_index_tuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif

/* PostgreSQL 18 added deferrable_ok to RelationGetPrimaryKeyIndex. */
#if PG_VERSION_NUM >= 180000
#define el_primary_key_index(rel)	RelationGetPrimaryKeyIndex((rel), false)
#else
#define el_primary_key_index(rel)	RelationGetPrimaryKeyIndex(rel)
#endif

/* PostgreSQL 16 replaced pg_database_ownercheck by object_ownercheck. */
#if PG_VERSION_NUM >= 160000
#define el_database_ownercheck(dbid, roleid) \
	object_ownercheck(DatabaseRelationId, (dbid), (roleid))
#else
#define el_database_ownercheck(dbid, roleid) pg_database_ownercheck((dbid), (roleid))
#endif

/* PostgreSQL 16 replaced pg_tablespace_aclcheck by object_aclcheck. */
#if PG_VERSION_NUM >= 160000
#define el_tablespace_aclcheck(spcid, roleid, mode) \
	object_aclcheck(TableSpaceRelationId, (spcid), (roleid), (mode))
#else
#define el_tablespace_aclcheck(spcid, roleid, mode) \
	pg_tablespace_aclcheck((spcid), (roleid), (mode))
#endif

/* PostgreSQL 16 replaced pg_extension_ownercheck by object_ownercheck (utility.c). */
#if PG_VERSION_NUM >= 160000
#define el_extension_ownercheck(extid, roleid) \
	object_ownercheck(ExtensionRelationId, (extid), (roleid))
#else
#define el_extension_ownercheck(extid, roleid) pg_extension_ownercheck((extid), (roleid))
#endif

/* PostgreSQL 15 added an error-string argument to pg_md5_hash (commit b69aba7457). */
#if PG_VERSION_NUM >= 150000
#define el_md5_hex(buf, len, hex, errstr)	pg_md5_hash((buf), (len), (hex), (errstr))
#else
#define el_md5_hex(buf, len, hex, errstr)	(*(errstr) = NULL, pg_md5_hash((buf), (len), (hex)))
#endif

/*
 * PostgreSQL 15 made pgstat_report_stat return how many milliseconds to
 * wait before flushing what it held back (0: nothing pending); on 14 it
 * returns nothing and the next call sends what was held back.
 */
#if PG_VERSION_NUM >= 150000
#define el_report_stat(force)	pgstat_report_stat(force)
#else
#define el_report_stat(force)	(pgstat_report_stat(force), 0L)
#endif

/*
 * PostgreSQL 16 made table_tuple_update report which indexes need new
 * entries as TU_UpdateIndexes, where 15 had a bool: TU_Summarizing means a
 * HOT update that must still insert into the summarizing (BRIN) indexes,
 * which ExecInsertIndexTuples does when told onlySummarizing.  pg_eventlog
 * creates no summarizing index, but a user may add one to group_offsets.
 * "update" stays false although the entries are for an UPDATE: true makes
 * ExecInsertIndexTuples ask which columns the UPDATE changed, through the
 * range table, and the in-place update's EState has none (it crashed).
 * (Macros: the type lives in access/tableam.h, which this header does not
 * include.)
 */
#if PG_VERSION_NUM >= 160000
#define ElUpdateIndexes TU_UpdateIndexes
#define EL_UPDATE_NEEDS_INDEXES(u)	((u) != TU_None)
#define el_update_index_tuples(rri, slot, estate, u) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, \
						  (u) == TU_Summarizing)
#else
#define ElUpdateIndexes bool
#define EL_UPDATE_NEEDS_INDEXES(u)	(u)
#define el_update_index_tuples(rri, slot, estate, u) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif

#endif							/* PG_EVENTLOG_COMPAT_H */
