/*-------------------------------------------------------------------------
 *
 * committed.c
 *	  Catalog questions answered from what is committed now, not from the
 *	  caller's snapshot: for checks made under a lock, where a REPEATABLE
 *	  READ or SERIALIZABLE caller's snapshot (taken before it waited for the
 *	  lock) would miss what the lock's previous holder committed.
 *
 * eventlog._partitions_in_use: eventlog._add_partitions checks a topic's growth against the limit under
 * a SHARE ROW EXCLUSIVE lock on topic_catalog (the lock create_topic takes),
 * so that two sessions cannot each find room and together exceed it.  The
 * count must then see everything committed before the lock was granted:
 * the caller's snapshot would not in REPEATABLE READ or SERIALIZABLE (taken
 * before it waited), so the count reads the catalog with a fresh snapshot.
 *
 * el_catalog_value_now serves it, and the long polls' check that their
 * topic was not dropped (topic.c).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "group.h"

PG_FUNCTION_INFO_V1(el_partitions_in_use);
PG_FUNCTION_INFO_V1(el_group_exists_now);

/*
 * The one value of a one-row catalog query, read with a snapshot taken now
 * and pg_eventlog's search path pinned; *isnull if the query returned no
 * row or a NULL.  "what" names the catalog in the internal error.
 */
Datum
el_catalog_value_now(const char *sql, int nargs, Oid *argtypes, Datum *args,
					 const char *what, bool *isnull)
{
	Datum		value = (Datum) 0;
	int			ret;
	int			pin;

	*isnull = true;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	pin = el_pin_search_path();
	PushActiveSnapshot(GetLatestSnapshot());
	ret = SPI_execute_with_args(sql, nargs, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read %s: %s", what, SPI_result_code_string(ret));
	if (SPI_processed == 1)
	{
		int16		typlen;
		bool		typbyval;

		value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
							  isnull);
		/* Out of SPI's memory (bigint is by reference on 32-bit builds). */
		get_typlenbyval(SPI_gettypeid(SPI_tuptable->tupdesc, 1), &typlen, &typbyval);
		if (!*isnull)
			value = SPI_datumTransfer(value, typbyval, typlen);
	}
	PopActiveSnapshot();
	el_unpin_search_path(pin);
	SPI_finish();
	return value;
}

/*
 * eventlog._partitions_in_use(except_topic integer) -> bigint: the
 * partitions of every topic of this database but "except_topic", as
 * committed now.
 */
Datum
el_partitions_in_use(PG_FUNCTION_ARGS)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {PG_GETARG_DATUM(0)};
	bool		isnull;
	Datum		total;

	total = el_catalog_value_now("SELECT coalesce(sum(t.partitions), 0)::bigint"
								 "  FROM " EL_SCHEMA_NAME ".topic_catalog t"
								 " WHERE t.topic_id <> $1",
								 1, argtypes, args, "eventlog.topic_catalog", &isnull);
	PG_RETURN_INT64(isnull ? 0 : DatumGetInt64(total));
}

/*
 * eventlog._group_exists_now(topic_id integer, group_name text) -> boolean:
 * whether the group has settings, positions or members, as committed now
 * (or written by the caller's own transaction).  The polls ask
 * el_group_exists_latest (group.c) directly, and no SQL function binds
 * this symbol once a database is at 0.3.0; the 0.2.0--0.3.0 script creates
 * the function before it drops it, which needs the symbol.
 */
Datum
el_group_exists_now(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(el_group_exists_latest(PG_GETARG_INT32(0),
										  text_to_cstring(PG_GETARG_TEXT_PP(1))));
}
