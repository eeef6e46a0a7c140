/*-------------------------------------------------------------------------
 *
 * limits.c
 *	  The catalog side of eventlog.max_partitions: how many partitions a
 *	  database's topics have, as committed right now.
 *
 * eventlog._add_partitions checks a topic's growth against the limit under
 * a SHARE ROW EXCLUSIVE lock on topic_catalog (the lock create_topic takes),
 * so that two sessions cannot each find room and together exceed it.  The
 * count must then see everything committed before the lock was granted:
 * the caller's snapshot would not in REPEATABLE READ or SERIALIZABLE (taken
 * before it waited), so the count reads the catalog with a fresh snapshot.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/snapmgr.h"

PG_FUNCTION_INFO_V1(el_partitions_in_use);

/*
 * eventlog._partitions_in_use(except_topic integer) -> bigint: the
 * partitions of every topic of this database but "except_topic", as
 * committed now.
 */
Datum
el_partitions_in_use(PG_FUNCTION_ARGS)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	int64		total = 0;
	int			ret;
	int			pin;

	args[0] = PG_GETARG_DATUM(0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	pin = el_pin_search_path();
	PushActiveSnapshot(GetLatestSnapshot());
	ret = SPI_execute_with_args(
		"SELECT coalesce(sum(t.partitions), 0)::bigint"
		"  FROM " EL_SCHEMA_NAME ".topic_catalog t"
		" WHERE t.topic_id <> $1",
		1, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read eventlog.topic_catalog: %s",
			 SPI_result_code_string(ret));
	{
		bool		isnull;

		total = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull));
	}
	PopActiveSnapshot();
	el_unpin_search_path(pin);
	SPI_finish();
	PG_RETURN_INT64(total);
}
