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
 * A long poll on a standby looks at the replay position this often (no
 * replay wakes it: see docs/design.md), and at the publication only when
 * replay moved.
 */
#define EL_STANDBY_POLL_MS	2

extern void el_publish_stable_offsets(ElNotifyItem *items, int n);
extern void el_publish_catch_up(void);
extern void el_standby_stable_offset(ElTopic *topic, int32 partition,
									 ElStableOffset *out);
extern XLogRecPtr el_standby_replayed(void);

#endif							/* PG_EVENTLOG_STANDBY_H */
