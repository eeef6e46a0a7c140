/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  pg_eventlog's background worker: registration, signal handling and
 *	  the main loop.
 *
 * One worker, "pg_eventlog launcher", starts with the server when the
 * library is preloaded.  It wakes every eventlog.maintenance_interval,
 * re-reads the configuration on SIGHUP and exits promptly on SIGTERM or
 * postmaster death.  If it dies or is terminated, the postmaster starts it
 * again after EL_WORKER_RESTART_SECS.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"

#include "shmem.h"

#define EL_WORKER_RESTART_SECS 1

int			el_maintenance_interval_ms = 5000;

PGDLLEXPORT void el_launcher_main(Datum main_arg);

void
el_worker_init(void)
{
	BackgroundWorker worker;

	DefineCustomIntVariable("eventlog.maintenance_interval",
							"Time between two rounds of the pg_eventlog background worker.",
							"The worker also wakes up at once when signalled.",
							&el_maintenance_interval_ms,
							5000, 100, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = EL_WORKER_RESTART_SECS;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_eventlog");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "el_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_eventlog launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_eventlog launcher");
	RegisterBackgroundWorker(&worker);
}

static void
el_launcher_shutdown(int code, Datum arg)
{
	if (el_shared && el_shared->launcher_pid == MyProcPid)
		el_shared->launcher_pid = 0;
}

void
el_launcher_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * Connect to no database in particular: enough to read shared catalogs
	 * (pg_database) and to show in pg_stat_activity.
	 */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	el_shared->launcher_pid = MyProcPid;
	on_shmem_exit(el_launcher_shutdown, (Datum) 0);

	ereport(LOG, (errmsg("pg_eventlog launcher started")));

	for (;;)
	{
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 el_maintenance_interval_ms,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);

		CHECK_FOR_INTERRUPTS();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			ereport(DEBUG1,
					(errmsg("pg_eventlog launcher reloaded its configuration")));
		}
	}
}
