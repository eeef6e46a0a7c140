/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  The launcher's registry of databases and their maintenance workers
 *	  (worker.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_WORKER_H
#define PG_EVENTLOG_WORKER_H

#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

/*
 * One database's workers: its maintenance worker and its notifier
 * (notify.c).  Every field but notify_pending is under the registry mutex.
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
} ElDbWorker;

typedef struct ElWorkerRegistry
{
	slock_t		mutex;
	Latch	   *launcher_latch; /* NULL if no launcher runs */
	bool		probe_requested;
	ElDbWorker	dbs[FLEXIBLE_ARRAY_MEMBER];	/* eventlog.max_databases */
} ElWorkerRegistry;

extern int	el_max_databases;
extern int	el_database_probe_interval_ms;

extern Size el_worker_shmem_size(void);
extern void el_worker_shmem_init(void *area, bool found);
extern void el_wake_launcher(bool probe_all);
extern void el_request_worker(Oid dbid);
extern void el_stop_worker(Oid dbid);
extern void el_unstop_worker(Oid dbid);
extern void el_pause_workers(Oid dbid, volatile bool *counted);
extern void el_resume_workers(Oid dbid, bool counted);
extern void el_request_worker_at_commit(void);
extern void el_probe_at_commit(void);

/* the notifier's side of the registry */
extern void el_wake_notifier(void);
extern bool el_notifier_attach(Oid dbid);
extern bool el_notifier_wanted(void);
extern void el_notifier_begin_round(void);

#endif							/* PG_EVENTLOG_WORKER_H */
