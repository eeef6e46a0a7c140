/*-------------------------------------------------------------------------
 *
 * pg_eventlog.h
 *	  Declarations shared by the pg_eventlog subsystems: module init entry
 *	  points, settings, and the error codes the extension raises.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_H
#define PG_EVENTLOG_H

#include "compat.h"

#include "access/tupdesc.h"
#include "fmgr.h"

#define EL_EXTENSION_NAME	"pg_eventlog"
#define EL_SCHEMA_NAME		"eventlog"
/* Segment tables, from 0.3.0 on (topic.c: el_segment_schema_oid). */
#define EL_SEGMENT_SCHEMA_NAME	"eventlog_segments"
#define EL_VERSION			"0.3.0"

/* Subsystem initialisation, called from _PG_init (pg_eventlog.c). */
extern void el_shmem_init(void);
extern void el_worker_init(void);
extern void el_topic_cache_init(void);
extern void el_segment_init(void);
extern void el_read_init(void);
extern void el_utility_init(void);
extern void el_dependents_init(void);
extern void el_notify_init(void);
extern void el_processors_init(void);
extern void el_capture_batch_init(void);
extern void el_kafka_group_init(void);
extern void el_producer_init(void);
extern void el_compact_init(void);
extern void el_expire_producers(MemoryContext round_cxt);
extern void el_kafka_expire_groups(MemoryContext round_cxt);

/* capture_ddl.c: ALTER TABLE must not give a captured table's key a refused type */
struct ElCaptureAlter;
extern struct ElCaptureAlter *el_capture_before_alter(Node *parsetree);
extern void el_capture_after_alter(struct ElCaptureAlter *check);

/* capture_batch.c: produce the changes captured so far */
extern void el_capture_flush(void);

/* shmem.c */
extern bool el_shmem_attached(void);
extern void el_require_shmem(void);

/* search_path.c */
extern int	el_pin_search_path(void);
extern void el_unpin_search_path(int level);
extern void el_pin_search_path_for_process(void);

/* committed.c */
extern Datum el_catalog_value_now(const char *sql, int nargs, Oid *argtypes,
								  Datum *args, const char *what, bool *isnull);

/* info.c: this server session, as eventlog._session_id() shows it */
extern char *el_session_string(void);

/* srf.c */
struct Tuplestorestate;
extern struct Tuplestorestate *el_materialized_srf(FunctionCallInfo fcinfo,
												   const char *funcname,
												   TupleDesc *tupdesc);

/* worker.c: settings */
extern int	el_maintenance_interval_ms;

#endif							/* PG_EVENTLOG_H */
