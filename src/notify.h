/*-------------------------------------------------------------------------
 *
 * notify.h
 *	  LISTEN/NOTIFY wake-ups: the settings, channel names, a producer's
 *	  wake-up of the notifier and the launcher's and eventlog.maintenance's
 *	  view of it (notify.c).  The notifier itself is in notifier.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_NOTIFY_H
#define PG_EVENTLOG_NOTIFY_H

#include "pg_config_manual.h"
#include "utils/timestamp.h"

struct ElDbWorker;

/* "eventlog." + topic, or "eventlog.md5:" + 32 hex digits: < NAMEDATALEN */
#define EL_CHANNEL_PREFIX "eventlog."

extern bool el_notify_enabled;
extern bool el_publish_enabled;
extern int	el_notify_interval_ms;
#ifdef EL_TEST_HOOKS
extern int	el_debug_notifier_clock_offset_ms;
#endif

extern void el_notify_init(void);
extern bool el_notifier_needed(void);
extern void el_channel_name(const char *topic, char *channel);

/* a transaction that ended with committed records to announce (shmem.c) */
extern void el_wake_notifier(void);

/* the launcher, for each registry entry (launcher.c) */
extern void el_supervise_notifier(int i, TimestampTz now);

/* eventlog.maintenance (worker.c) */
extern const char *el_notifier_status(const struct ElDbWorker *db, bool launcher);

#endif							/* PG_EVENTLOG_NOTIFY_H */
