/*-------------------------------------------------------------------------
 *
 * kafka_await.c
 *	  eventlog._kafka_await: the long poll of the Kafka gateway's Fetch,
 *	  over partitions of any number of topics at once.
 *
 * eventlog._await_records (read.c) sleeps on its topic's condition
 * variable, and a backend can sleep on one condition variable at a time, so
 * a wait over several topics needs one that every producing transaction of
 * the database broadcasts: the database's wake-up (shmem.h, db_wakeup).
 * Producers broadcast it only while a backend waits on it for one of the
 * topics they produced to (its "interest" bits), so a database where no
 * Fetch waits pays a barrier and an atomic read per producing transaction,
 * and a commit to a topic no Fetch waits on (or hashing with one) wakes
 * none.  The check before each sleep is the stable offsets' (the
 * in-flight-offset trap: a commit behind an open transaction makes nothing
 * readable), and a wake-up that brings nothing readable (a rollback, a
 * commit in a partition it does not wait on) sleeps again.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "acl.h"
#include "kafka.h"
#include "read.h"
#include "shmem.h"
#include "standby.h"
#include "topic.h"

PG_FUNCTION_INFO_V1(el_kafka_await);

/*
 * Whether some item is readable now; moves positions past rolled-back
 * offsets.  Also _kafka_fetch's check before it reads anything (kafka.h).
 */
bool
el_kafka_any_readable(int n, text **names, const int32 *topic_ids,
					  const int32 *partitions, int64 *positions, uint64 *drops)
{
	ElTopic    *topic = NULL;

	for (int i = 0; i < n; i++)
	{
		ElReadPoint point;

		/* Items of a topic are adjacent (the gateway sends them so): look it up once. */
		if (i == 0 || topic_ids[i] != topic_ids[i - 1])
			topic = el_topic_recheck(names[i], topic_ids[i], &drops[i]);
		el_point_at(names[i], topic, partitions[i], &point);
		topic = point.topic;	/* reloaded after a roll */
		if (point.stable <= positions[i])
			continue;
		if (positions[i] < point.log_start || el_readable_from(&point, positions[i]))
			return true;
		/* Nothing from there to the stable offset: rolled back. */
		positions[i] = point.stable;
	}
	return false;
}

/*
 * eventlog._kafka_await(topics text[], partitions integer[], positions
 * bigint[], timeout_ms integer) -> boolean
 *
 * True as soon as some partitions[i] of topics[i] has a readable record at
 * or after positions[i] (or retention removed records there), or a topic of
 * the database was dropped (the caller reads again and finds out); false
 * when timeout_ms passes first.  Query cancel, statement_timeout and
 * pg_terminate_backend end it at once (the sleep checks for interrupts).
 * Each topic needs the consume privilege, as reading it does.
 */
Datum
el_kafka_await(PG_FUNCTION_ARGS)
{
	Datum	   *name_datums;
	Datum	   *part_datums;
	Datum	   *pos_datums;
	bool	   *nulls;
	int			n;
	int			nparts;
	int			npos;
	text	  **names;
	int32	   *partitions;
	int64	   *positions;
	uint64		drops;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topics, partitions, positions and timeout_ms must not be null")));
	el_require_shmem();

	/*
	 * The drops counted before el_kafka_wait looks the topics up: a drop
	 * after this makes its checks look the topic up again, and without one
	 * they need not (an idle consumer's await then runs no catalog query).
	 */
	drops = el_topic_drop_count();
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, -1, false, TYPALIGN_INT,
					  &name_datums, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("topics must not contain nulls")));
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), INT4OID, 4, true, TYPALIGN_INT,
					  &part_datums, &nulls, &nparts);
	for (int i = 0; i < nparts; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("partitions must not contain nulls")));
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &pos_datums, &nulls, &npos);
	for (int i = 0; i < npos; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("positions must not contain nulls")));
	if (nparts != n || npos != n)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("topics, partitions and positions must have the same length")));

	names = palloc(sizeof(text *) * Max(n, 1));
	partitions = palloc(sizeof(int32) * Max(n, 1));
	positions = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		names[i] = DatumGetTextPP(name_datums[i]);
		partitions[i] = DatumGetInt32(part_datums[i]);
		positions[i] = DatumGetInt64(pos_datums[i]);
	}
	PG_RETURN_BOOL(el_kafka_wait(n, names, partitions, positions, PG_GETARG_INT32(3), drops));
}

/* The wait of el_kafka_await, for it and for _kafka_fetch (kafka.h). */
bool
el_kafka_wait(int n, text **names, const int32 *partitions_in,
			  const int64 *positions_in, int32 timeout_ms, uint64 drops_seen)
{
	int32	   *topic_ids;
	int32	   *partitions;
	int64	   *positions;
	uint64	   *drops;
	TimestampTz deadline;
	uint64		drops_at_start;
	uint64		interest = 0;
	ElDbWakeup *wakeup;
	volatile bool ready = false;

	el_require_shmem();
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), Max(timeout_ms, 0));
	topic_ids = palloc(sizeof(int32) * Max(n, 1));
	partitions = palloc(sizeof(int32) * Max(n, 1));
	positions = palloc(sizeof(int64) * Max(n, 1));
	drops = palloc(sizeof(uint64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		ElTopic    *topic;

		topic = el_topic_lookup(names[i]);
		el_require_topic_privilege(topic, GetUserId(), EL_PRIV_CONSUME);
		partitions[i] = partitions_in[i];
		el_check_partition(topic, partitions[i]);
		topic_ids[i] = topic->topic_id;
		positions[i] = positions_in[i];
		drops[i] = drops_seen;
	}

	drops_at_start = el_topic_drop_count();
	for (int i = 0; i < n; i++)
		interest |= UINT64CONST(1) << el_topic_wakeup_index(topic_ids[i]);

	/*
	 * Count this backend as a waiter before the first look (shmem.c): a
	 * commit after the look then broadcasts.
	 */
	wakeup = el_db_wakeup_register(interest);
	PG_TRY();
	{
		for (;;)
		{
			long		remaining;

			/* Prepare first, so that no broadcast is missed between the check and the sleep. */
			ConditionVariablePrepareToSleep(&wakeup->cv);
			if (el_topic_drop_count() != drops_at_start ||
				el_kafka_any_readable(n, names, topic_ids, partitions, positions, drops))
			{
				ready = true;
				break;
			}
			remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
			if (remaining <= 0)
				break;
			/* On a hot standby, replay wakes it (standby_wake.c), or it polls. */
			if (RecoveryInProgress())
				remaining = el_standby_sleep_ms(remaining);
			(void) ConditionVariableTimedSleep(&wakeup->cv, remaining, PG_WAIT_EXTENSION);
		}
	}
	PG_FINALLY();
	{
		el_db_wakeup_unregister(wakeup);
	}
	PG_END_TRY();
	ConditionVariableCancelSleep();
	pfree(topic_ids);
	pfree(partitions);
	pfree(positions);
	pfree(drops);
	return ready;
}
