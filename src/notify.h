/*-------------------------------------------------------------------------
 *
 * notify.h
 *	  LISTEN/NOTIFY wake-ups: channel names and the notifier (notify.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_NOTIFY_H
#define PG_EVENTLOG_NOTIFY_H

#include "pg_config_manual.h"

/* "eventlog." + topic, or "eventlog.md5:" + 32 hex digits: < NAMEDATALEN */
#define EL_CHANNEL_PREFIX "eventlog."

extern bool el_notify_enabled;
extern int	el_notify_interval_ms;

extern void el_notify_init(void);
extern void el_channel_name(const char *topic, char *channel);

#endif							/* PG_EVENTLOG_NOTIFY_H */
