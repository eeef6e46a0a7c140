/*-------------------------------------------------------------------------
 *
 * locks.c
 *	  pg_eventlog's own transaction-level locks, out of reach of SQL.
 *
 * Why: PostgreSQL's pg_advisory_lock functions are open to every role.  Had
 * pg_eventlog used them, any role that can connect could take the same keys
 * (they are computable) and stall producers' counter recovery, retention,
 * or a consumer group.  These locks are advisory locks too, but in a key
 * space SQL's functions cannot reach: LOCKTAG_ADVISORY's fourth field is 1
 * or 2 for pg_advisory_*, and EL_LOCK_SPACE + kind here.  The SQL entry
 * points (eventlog._xact_lock, _try_xact_lock) are executable by the
 * extension's owner only, and called from its SECURITY DEFINER bodies and
 * workers.  pg_locks shows them as advisory locks with objsubid 0x4501 and
 * up.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "miscadmin.h"
#include "storage/lock.h"

#include "locks.h"

/* The fourth field of the LOCKTAG: above anything pg_advisory_* uses. */
#define EL_LOCK_SPACE 0x4500

void
el_locktag(LOCKTAG *tag, ElLockKind kind, int64 key)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) ((uint64) key >> 32),
						 (uint32) key, EL_LOCK_SPACE + (uint16) kind);
}

int64
el_routing_lock_key(int32 topic_id, int32 partition)
{
	return (int64) (((uint64) (uint32) topic_id << 32) | (uint32) partition);
}

static ElLockKind
el_lock_kind_arg(FunctionCallInfo fcinfo)
{
	int32		kind;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("lock kind and key must not be null")));
	kind = PG_GETARG_INT32(0);
	if (kind < EL_LOCK_ROUTING || kind > EL_LOCK_GROUP)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown pg_eventlog lock kind %d", kind)));
	return (ElLockKind) kind;
}

/*
 * eventlog._xact_lock(kind integer, key bigint, shared boolean DEFAULT false)
 * -> void: waits for the lock, held until the transaction ends.
 */
PG_FUNCTION_INFO_V1(el_xact_lock);
Datum
el_xact_lock(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;
	bool		shared = !PG_ARGISNULL(2) && PG_GETARG_BOOL(2);

	el_locktag(&tag, el_lock_kind_arg(fcinfo), PG_GETARG_INT64(1));
	(void) LockAcquire(&tag, shared ? ShareLock : ExclusiveLock, false, false);
	PG_RETURN_VOID();
}

/*
 * eventlog._try_xact_lock(kind integer, key bigint) -> boolean: takes the
 * lock exclusively if no one holds it, without waiting.
 */
PG_FUNCTION_INFO_V1(el_try_xact_lock);
Datum
el_try_xact_lock(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;

	el_locktag(&tag, el_lock_kind_arg(fcinfo), PG_GETARG_INT64(1));
	PG_RETURN_BOOL(LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL);
}
