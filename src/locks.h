/*-------------------------------------------------------------------------
 *
 * locks.h
 *	  pg_eventlog's own transaction-level locks (locks.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_LOCKS_H
#define PG_EVENTLOG_LOCKS_H

#include "storage/lock.h"

/* What a lock orders; the numbers are part of the SQL interface. */
typedef enum ElLockKind
{
	EL_LOCK_ROUTING = 1,		/* a partition's counter recovery vs a maintenance round */
	EL_LOCK_MAINTENANCE = 2,	/* one maintenance round per topic */
	EL_LOCK_GROUP = 3			/* a consumer group's partition, or its membership */
} ElLockKind;

extern void el_locktag(LOCKTAG *tag, ElLockKind kind, int64 key);
extern int64 el_routing_lock_key(int32 topic_id, int32 partition);

#endif							/* PG_EVENTLOG_LOCKS_H */
