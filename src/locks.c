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
 * or 2 for pg_advisory_*, and EL_LOCK_SPACE + kind here.  pg_locks shows
 * them as advisory locks with objsubid 0x4501 and up.
 *
 * The SQL entry points name what they lock, one per kind and way of taking
 * it (eventlog._lock_routing, _lock_maintenance, _try_lock_maintenance,
 * _lock_group_membership, _try_lock_group_membership,
 * _lock_group_partition, _try_lock_group_partition), and compute the key
 * here, as the C callers do: the PL/pgSQL bodies pass no kind number and
 * build no key, so ElLockKind (locks.h) stays the only place a kind has a
 * number.  They are executable by the extension's owner only, and called
 * from its SECURITY DEFINER bodies.  el_xact_lock and el_try_xact_lock, the
 * kind-numbered entry points of 0.2.0, stay for that version's script.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"

#include "group.h"
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
	if (kind < EL_LOCK_ROUTING || kind > EL_LOCK_KAFKA_GROUP)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown pg_eventlog lock kind %d", kind)));
	return (ElLockKind) kind;
}

/*
 * eventlog._xact_lock(kind integer, key bigint, shared boolean DEFAULT false)
 * -> void, of the 0.2.0 script: waits for the lock, held until the
 * transaction ends.
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
 * eventlog._try_xact_lock(kind integer, key bigint) -> boolean, of the 0.2.0
 * script: takes the lock exclusively if no one holds it, without waiting.
 */
PG_FUNCTION_INFO_V1(el_try_xact_lock);
Datum
el_try_xact_lock(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;

	el_locktag(&tag, el_lock_kind_arg(fcinfo), PG_GETARG_INT64(1));
	PG_RETURN_BOOL(LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL);
}

/*
 * The named entry points below.  Each takes its lock exclusively, held to
 * the end of the transaction; "try" returns false instead of waiting.  A
 * NULL argument is an error rather than STRICT's NULL result, which a
 * caller's "IF NOT ..." would take for a lock it holds.
 */
static void
el_lock_args_not_null(FunctionCallInfo fcinfo)
{
	for (int i = 0; i < PG_NARGS(); i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("pg_eventlog lock arguments must not be null")));
}

static bool
el_xact_lock_named(ElLockKind kind, int64 key, bool wait)
{
	LOCKTAG		tag;

	el_locktag(&tag, kind, key);
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

/* The key of the maintenance lock: the topic's id. */
static int64
el_maintenance_lock_key(FunctionCallInfo fcinfo)
{
	el_lock_args_not_null(fcinfo);
	return (int64) PG_GETARG_INT32(0);
}

/*
 * The key of a group lock: the membership's (partition -1 in
 * el_group_lock_key), or, with a partition argument, that partition's,
 * which must not be negative (-1 would name the membership).
 */
static int64
el_group_lock_key_args(FunctionCallInfo fcinfo, bool membership)
{
	int32		partition = -1;

	el_lock_args_not_null(fcinfo);
	if (!membership)
	{
		partition = PG_GETARG_INT32(2);
		if (partition < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("group lock partition %d is negative", partition)));
	}
	return el_group_lock_key(PG_GETARG_INT32(0),
							 text_to_cstring(PG_GETARG_TEXT_PP(1)), partition);
}

/*
 * eventlog._lock_routing(topic_id integer, partition integer) -> void: the
 * partition's EL_LOCK_ROUTING lock, with the key counter recovery
 * (partition.c) takes it with.
 */
PG_FUNCTION_INFO_V1(el_lock_routing);
Datum
el_lock_routing(PG_FUNCTION_ARGS)
{
	el_lock_args_not_null(fcinfo);
	(void) el_xact_lock_named(EL_LOCK_ROUTING,
							  el_routing_lock_key(PG_GETARG_INT32(0),
												  PG_GETARG_INT32(1)),
							  true);
	PG_RETURN_VOID();
}

/* eventlog._lock_maintenance(topic_id integer) -> void */
PG_FUNCTION_INFO_V1(el_lock_maintenance);
Datum
el_lock_maintenance(PG_FUNCTION_ARGS)
{
	(void) el_xact_lock_named(EL_LOCK_MAINTENANCE,
							  el_maintenance_lock_key(fcinfo), true);
	PG_RETURN_VOID();
}

/* eventlog._try_lock_maintenance(topic_id integer) -> boolean */
PG_FUNCTION_INFO_V1(el_try_lock_maintenance);
Datum
el_try_lock_maintenance(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(el_xact_lock_named(EL_LOCK_MAINTENANCE,
									  el_maintenance_lock_key(fcinfo), false));
}

/*
 * eventlog._lock_group_membership(topic_id integer, group_name text) ->
 * void: exclusive, as a member's poll takes it (group.c, el_group_lock).
 */
PG_FUNCTION_INFO_V1(el_lock_group_membership);
Datum
el_lock_group_membership(PG_FUNCTION_ARGS)
{
	(void) el_xact_lock_named(EL_LOCK_GROUP,
							  el_group_lock_key_args(fcinfo, true), true);
	PG_RETURN_VOID();
}

/* eventlog._try_lock_group_membership(topic_id integer, group_name text) -> boolean */
PG_FUNCTION_INFO_V1(el_try_lock_group_membership);
Datum
el_try_lock_group_membership(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(el_xact_lock_named(EL_LOCK_GROUP,
									  el_group_lock_key_args(fcinfo, true), false));
}

/*
 * eventlog._lock_group_partition(topic_id integer, group_name text,
 * partition integer) -> void
 */
PG_FUNCTION_INFO_V1(el_lock_group_partition);
Datum
el_lock_group_partition(PG_FUNCTION_ARGS)
{
	(void) el_xact_lock_named(EL_LOCK_GROUP,
							  el_group_lock_key_args(fcinfo, false), true);
	PG_RETURN_VOID();
}

/*
 * eventlog._try_lock_group_partition(topic_id integer, group_name text,
 * partition integer) -> boolean
 */
PG_FUNCTION_INFO_V1(el_try_lock_group_partition);
Datum
el_try_lock_group_partition(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(el_xact_lock_named(EL_LOCK_GROUP,
									  el_group_lock_key_args(fcinfo, false), false));
}
