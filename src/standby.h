/*-------------------------------------------------------------------------
 *
 * standby.h
 *	  Reads on hot standbys (standby.c): the primary publishes each
 *	  partition's last stable offset, standbys read up to it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_STANDBY_H
#define PG_EVENTLOG_STANDBY_H

#include "access/xlogdefs.h"

#include "shmem.h"
#include "topic.h"

/*
 * A long poll on a standby looks at the publication only when replay
 * moved.  Replay wakes it (standby_wake.c), and it looks again at least
 * every EL_STANDBY_RECHECK_MS for what no wake-up record announces; on a
 * server without the wake-up records (eventlog.standby_wakeup_rmgr_id = 0,
 * PostgreSQL 14), it looks every EL_STANDBY_POLL_MS.
 */
#define EL_STANDBY_POLL_MS	2
#define EL_STANDBY_RECHECK_MS	1000

extern void el_publish_stable_offsets(ElNotifyItem *items, int n);
extern void el_publish_catch_up(void);
/* A publication was put off or failed: the notifier retries every partition. */
extern bool el_publish_pending(void);
extern void el_publish_set_pending(void);
extern void el_standby_stable_offset(ElTopic *topic, int32 partition,
									 ElStableOffset *out);
extern XLogRecPtr el_standby_replayed(void);

/* standby_wake.c */
extern void el_standby_wake_init(void);
extern XLogRecPtr el_standby_wake_log(const int32 *topic_ids, int n);
extern long el_standby_sleep_ms(long remaining);

#endif							/* PG_EVENTLOG_STANDBY_H */
