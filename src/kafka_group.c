/*-------------------------------------------------------------------------
 *
 * kafka_group.c
 *	  The C side of Kafka's classic group protocol (sql/install/
 *	  kafka_groups.sql holds the state machine): the waits of JoinGroup and
 *	  SyncGroup, the wake-ups at the commit of a group's change, the
 *	  coordinator's settings, the parse of a consumer's subscription, and
 *	  the maintenance worker's expiry of abandoned groups.
 *
 * A JoinGroup or SyncGroup request waits for other members (their joins,
 * the leader's assignment).  The state lives in tables, so that every
 * gateway sees it; a waiter must therefore commit its own change, then
 * sleep until another transaction commits a change of the same group, and
 * look again.  Each group hashes (with its database) to one of
 * EL_KAFKA_GROUP_WAKEUPS condition variables and an epoch counter in shared
 * memory.  A transaction that changed a group calls _kafka_group_touch; at
 * its commit (XACT_EVENT_COMMIT: the change is visible to new snapshots by
 * then) the epoch is bumped and the condition variable broadcast.  A waiter
 * reads the epoch BEFORE it looks at the state, and sleeps only while the
 * epoch is unchanged, so a change committed between its look and its sleep
 * is never missed.  Groups sharing a slot wake each other for nothing: the
 * waiter looks again and sleeps again.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "locks.h"
#include "shmem.h"
#include "worker.h"

PG_FUNCTION_INFO_V1(el_kafka_group_epoch);
PG_FUNCTION_INFO_V1(el_kafka_group_touch);
PG_FUNCTION_INFO_V1(el_kafka_group_wait);
PG_FUNCTION_INFO_V1(el_kafka_subscription_topics);

/* Kafka's group.initial.rebalance.delay.ms, group.min/max.session.timeout.ms */
static int	el_kafka_initial_rebalance_delay = 3000;
static int	el_kafka_min_session_timeout = 6000;
static int	el_kafka_max_session_timeout = 1800000;

/* Slots (bits) whose groups this transaction changed. */
static uint64 el_kafka_touched = 0;
static bool el_kafka_callback_registered = false;

StaticAssertDecl(EL_KAFKA_GROUP_WAKEUPS <= 64, "touched slots are bits of a uint64");

static int
el_kafka_group_slot(text *group)
{
	uint32		h = hash_any((unsigned char *) VARDATA_ANY(group), VARSIZE_ANY_EXHDR(group));

	h ^= hash_uint32((uint32) MyDatabaseId);
	return h % EL_KAFKA_GROUP_WAKEUPS;
}

static void
el_kafka_xact_callback(XactEvent event, void *arg)
{
	uint64		touched = el_kafka_touched;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_PARALLEL_COMMIT &&
		event != XACT_EVENT_ABORT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	el_kafka_touched = 0;
	if (touched == 0 || event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		return;
	for (int i = 0; i < EL_KAFKA_GROUP_WAKEUPS; i++)
	{
		if ((touched & (UINT64CONST(1) << i)) == 0)
			continue;
		pg_atomic_fetch_add_u64(&el_shared->kafka_group_epoch[i], 1);
		ConditionVariableBroadcast(&el_shared->kafka_group_wakeup[i]);
	}
}

void
el_kafka_group_init(void)
{
	DefineCustomIntVariable("eventlog.kafka_initial_rebalance_delay",
							"How long the first rebalance of an empty Kafka group waits for more members to join.",
							"Kafka's group.initial.rebalance.delay.ms; each new member in the wait extends it, up to the rebalance timeout.",
							&el_kafka_initial_rebalance_delay,
							3000, 0, 300000,
							/*
							 * Not USERSET: it is the group's, not the
							 * session's, and a member could otherwise
							 * rush a rebalance the others wait for.
							 */
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("eventlog.kafka_min_session_timeout",
							"Shortest session timeout a Kafka group member may ask for.",
							"Kafka's group.min.session.timeout.ms; a JoinGroup outside the bounds gets INVALID_SESSION_TIMEOUT.",
							&el_kafka_min_session_timeout,
							6000, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("eventlog.kafka_max_session_timeout",
							"Longest session timeout a Kafka group member may ask for.",
							"Kafka's group.max.session.timeout.ms.",
							&el_kafka_max_session_timeout,
							1800000, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/* eventlog._kafka_group_epoch(group_name text) -> bigint */
Datum
el_kafka_group_epoch(PG_FUNCTION_ARGS)
{
	el_require_shmem();
	PG_RETURN_INT64((int64) pg_atomic_read_u64(
											   &el_shared->kafka_group_epoch[el_kafka_group_slot(PG_GETARG_TEXT_PP(0))]));
}

/*
 * eventlog._kafka_group_touch(group_name text): wake the group's waiters
 * when this transaction commits.
 */
Datum
el_kafka_group_touch(PG_FUNCTION_ARGS)
{
	el_require_shmem();
	if (!el_kafka_callback_registered)
	{
		RegisterXactCallback(el_kafka_xact_callback, NULL);
		el_kafka_callback_registered = true;
	}
	el_kafka_touched |= UINT64CONST(1) << el_kafka_group_slot(PG_GETARG_TEXT_PP(0));
	PG_RETURN_VOID();
}

/*
 * CALL eventlog._kafka_group_wait(group_name text, epoch bigint, until
 * timestamptz): sleeps until a change of the group (or of a group sharing
 * its slot) commits after the epoch was read, or until "until".  A
 * procedure: called from the non-atomic kafka_join_group and
 * kafka_sync_group, it commits first, which drops the portal snapshot the
 * CALL took, so that a member waiting for its group (up to its rebalance
 * timeout) holds back no vacuum (backend_xmin is NULL while it sleeps).
 * Query cancel and termination end it at once (the sleep checks for
 * interrupts).
 */
Datum
el_kafka_group_wait(PG_FUNCTION_ARGS)
{
	int			slot;
	ConditionVariable *cv;
	int64		epoch;
	TimestampTz until;

	el_require_shmem();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("group name, epoch and deadline must not be null")));
	slot = el_kafka_group_slot(PG_GETARG_TEXT_PP(0));
	epoch = PG_GETARG_INT64(1);
	until = PG_GETARG_TIMESTAMPTZ(2);
	cv = &el_shared->kafka_group_wakeup[slot];
	if (fcinfo->context && IsA(fcinfo->context, CallContext) &&
		!((CallContext *) fcinfo->context)->atomic)
	{
		SPI_connect_ext(SPI_OPT_NONATOMIC);
		SPI_commit();
#if PG_VERSION_NUM < 150000
		SPI_start_transaction();
#endif
		SPI_finish();
	}
	ConditionVariablePrepareToSleep(cv);
	for (;;)
	{
		long		remaining;

		if ((int64) pg_atomic_read_u64(&el_shared->kafka_group_epoch[slot]) != epoch)
			break;
		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until);
		if (remaining <= 0)
			break;
		(void) ConditionVariableTimedSleep(cv, remaining, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	PG_RETURN_VOID();
}

/*
 * eventlog._kafka_subscription_topics(metadata bytea) -> text[]: the topics
 * of a ConsumerProtocolSubscription (every version starts with an int16
 * version and an array of int16-length strings), or NULL if the bytes are
 * not one.
 */
Datum
el_kafka_subscription_topics(PG_FUNCTION_ARGS)
{
	bytea	   *meta = PG_GETARG_BYTEA_PP(0);
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(meta);
	size_t		len = VARSIZE_ANY_EXHDR(meta);
	size_t		pos = 2;
	int32		n;
	Datum	   *topics;

	if (len < 6)
		PG_RETURN_NULL();
	n = (int32) (((uint32) p[2] << 24) | ((uint32) p[3] << 16) | ((uint32) p[4] << 8) | p[5]);
	pos = 6;
	/* Each topic takes at least its 2-byte length. */
	if (n < 0 || (size_t) n > (len - pos) / 2)
		PG_RETURN_NULL();
	topics = palloc(sizeof(Datum) * (n > 0 ? n : 1));
	for (int i = 0; i < n; i++)
	{
		int			tlen;

		if (len - pos < 2)
			PG_RETURN_NULL();
		tlen = (int16) ((p[pos] << 8) | p[pos + 1]);
		pos += 2;
		if (tlen < 0 || (size_t) tlen > len - pos)
			PG_RETURN_NULL();
		if (pg_encoding_verifymbstr(GetDatabaseEncoding(), (const char *) p + pos, tlen) != tlen)
			PG_RETURN_NULL();
		topics[i] = PointerGetDatum(cstring_to_text_with_len((const char *) p + pos, tlen));
		pos += tlen;
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(topics, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* The coordinator's settings, for the SQL side. */
PG_FUNCTION_INFO_V1(el_kafka_group_settings);
Datum
el_kafka_group_settings(PG_FUNCTION_ARGS)
{
	Datum		vals[3];

	vals[0] = Int32GetDatum(el_kafka_initial_rebalance_delay);
	vals[1] = Int32GetDatum(el_kafka_min_session_timeout);
	vals[2] = Int32GetDatum(el_kafka_max_session_timeout);
	PG_RETURN_ARRAYTYPE_P(construct_array(vals, 3, INT4OID, 4, true, TYPALIGN_INT));
}

/*
 * The maintenance worker's part (maintenance.c, once per round): expire the
 * members of groups nobody sends requests to any more, so that an abandoned
 * group does not stay Stable forever (eventlog._kafka_expire_groups, which
 * skips a group whose lock is taken: a request is serving it).  In a
 * transaction of its own; a database still at 0.2.0 has no such function
 * and is skipped; errors are logged and the next round retries.
 */
void
el_kafka_expire_groups(MemoryContext round_cxt)
{
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "eventlog maintenance: Kafka groups");
		if (SPI_execute("SELECT 1 FROM pg_catalog.pg_proc WHERE proname = '_kafka_expire_groups'"
						" AND pronamespace = '" EL_SCHEMA_NAME "'::pg_catalog.regnamespace",
						true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		{
			if (SPI_execute("SELECT " EL_SCHEMA_NAME "._kafka_expire_groups()", false, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not run eventlog._kafka_expire_groups");
		}
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata = el_worker_recover(round_cxt);

		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_eventlog expiry of Kafka group members failed: %s", edata->message),
				 edata->context ? errcontext("%s", edata->context) : 0));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/*
 * eventlog._lock_kafka_group(group_name text) and _try_lock_kafka_group:
 * a Kafka group's lock (kind 4, EL_LOCK_KAFKA_GROUP, src/locks.h),
 * exclusive, to the end of the transaction; the key is a hash of the name.
 */
static bool
el_kafka_group_lock(FunctionCallInfo fcinfo, bool wait)
{
	text	   *name;
	LOCKTAG		tag;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pg_eventlog lock arguments must not be null")));
	name = PG_GETARG_TEXT_PP(0);
	el_locktag(&tag, EL_LOCK_KAFKA_GROUP,
			   (int64) DatumGetUInt64(hash_any_extended((unsigned char *) VARDATA_ANY(name),
														VARSIZE_ANY_EXHDR(name), 4)));
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

PG_FUNCTION_INFO_V1(el_lock_kafka_group);
Datum
el_lock_kafka_group(PG_FUNCTION_ARGS)
{
	(void) el_kafka_group_lock(fcinfo, true);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(el_try_lock_kafka_group);
Datum
el_try_lock_kafka_group(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(el_kafka_group_lock(fcinfo, false));
}
