/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  The registry of databases and their workers (worker.c), used by the
 *	  launcher (launcher.c), each database's maintenance worker
 *	  (maintenance.c) and its notifier (notify.c, notifier.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_WORKER_H
#define PG_EVENTLOG_WORKER_H

#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

/*
 * One database's workers: its maintenance worker and its notifier
 * (notifier.c).  Every field but notify_pending is under the registry mutex.
 */
typedef struct ElDbWorker
{
	Oid			dbid;			/* InvalidOid: free entry */
	pid_t		pid;			/* running maintenance worker, 0 if none */
	pid_t		notifier_pid;	/* running notifier, 0 if none */
	Latch	   *notifier_latch; /* its latch, NULL if none */
	TimestampTz notifier_next_start;	/* no (re)start before this */
	pg_atomic_uint32 notify_pending;	/* producers woke the notifier and it
										 * has not started its round yet */
	bool		wanted;			/* the launcher should keep a worker here */
	bool		probing;		/* started to check for the extension */
	bool		installed;		/* the worker found the extension */
	bool		dropping;		/* DROP DATABASE in progress */
	bool		requested;		/* CREATE EXTENSION asked for a worker */
	bool		no_slot;		/* the last start of its maintenance worker
								 * found no free background worker slot */
	bool		notifier_no_slot;	/* the same for its notifier */
	int			paused;			/* commands running that need the database
								 * free of connections (utility.c) */
	int			probe_failures; /* probes that ended without an answer */
	TimestampTz slot_report[2]; /* last "no slot" log line, per worker kind
								 * (maintenance, notifier) */
	TimestampTz next_start;		/* no (re)start before this */
	TimestampTz last_run;
	TimestampTz last_success;
	TimestampTz last_error_time;
	int64		rounds;
	int64		segments_rolled;
	int64		segments_removed;
	char		last_error[256];

	/*
	 * The processor worker (processors.c, processor_worker.c): it runs
	 * while the database has enabled stream processors.  Until one has
	 * looked (processors_checked), the launcher starts it to find out.
	 * The atomics are read by producers without the mutex.
	 */
	pid_t		processor_pid;	/* running processor worker, 0 if none */
	Latch	   *processor_latch;	/* its latch, NULL if none */
	TimestampTz processor_next_start;	/* no (re)start before this */
	bool		processors_checked; /* a worker looked for processors */
	bool		processors_wanted;	/* and found enabled ones (or one was
									 * created or resumed since) */
	bool		processor_no_slot;	/* its last start found no free slot */
	pg_atomic_uint64 processor_interest;	/* its source topics' wake-up
											 * bits (el_topic_wakeup_index) */
	pg_atomic_uint64 processor_woken;	/* bits of those that commits moved
										 * since its round began */
	pg_atomic_uint32 processors_changed;	/* the processor catalog changed */
#ifdef EL_TEST_HOOKS
	/* eventlog.debug_notifier_delays (notify.c, notifier.c) */
	int64		notifier_busy_rounds;	/* rounds that found records coming
										 * fast enough to coalesce */
	int64		notifier_delays;	/* rounds the notifier delayed */
#endif
} ElDbWorker;

typedef struct ElWorkerRegistry
{
	slock_t		mutex;
	Latch	   *launcher_latch; /* NULL if no launcher runs */
	bool		probe_requested;
	ElDbWorker	dbs[FLEXIBLE_ARRAY_MEMBER];	/* eventlog.max_databases */
} ElWorkerRegistry;

/* A worker that ended is started again, at most once per this. */
#define EL_WORKER_RESTART_MS 1000

/* Why a worker does not run, as eventlog.maintenance says it. */
#define EL_STATUS_NO_SLOT "no background worker slot free (max_worker_processes)"
#define EL_STATUS_AWAY "stopped while a command needs the database free of connections"
#define EL_STATUS_NO_ENTRY "not running: waiting for the launcher's probe or a free registry entry (eventlog.max_databases)"

extern int	el_max_databases;
extern int	el_database_probe_interval_ms;

/* Under the registry's mutex (el_registry->mutex). */
extern ElWorkerRegistry *el_registry;
extern ElDbWorker *el_registry_entry(Oid dbid, bool create);

extern Size el_worker_shmem_size(void);
extern void el_worker_shmem_init(void *area, bool found);
extern void el_wake_launcher(bool probe_all);
extern void el_request_worker(Oid dbid);
extern ErrorData *el_worker_recover(MemoryContext cxt);
extern void el_stop_worker(Oid dbid);
extern void el_unstop_worker(Oid dbid);
extern void el_pause_workers(Oid dbid, volatile bool *counted);
extern void el_resume_workers(Oid dbid, bool counted);
extern void el_request_worker_at_commit(void);
extern void el_probe_at_commit(void);

/* the launcher's (launcher.c; it starts the notifier too: notify.c) */
extern bool el_start_worker(int i, Oid dbid, bool notifier,
							BackgroundWorkerHandle **handle);
extern bool el_child_stopped(BackgroundWorkerHandle **handle, pid_t *pidp,
							 Latch **latchp);
/* both a backend's (CREATE EXTENSION) and the launcher's */
extern bool el_register_worker(Oid dbid, bool notifier, pid_t notify_pid,
							   BackgroundWorkerHandle **handle);

#endif							/* PG_EVENTLOG_WORKER_H */
