/*-------------------------------------------------------------------------
 *
 * info.c
 *	  SQL functions that describe the running extension itself.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "shmem.h"

PG_FUNCTION_INFO_V1(el_version_info);
PG_FUNCTION_INFO_V1(el_session_id);

/*
 * eventlog.version_info() -> (version text, shared_memory boolean,
 *                             launcher_pid integer)
 *
 * Works with or without preloading, so that an operator can always ask.
 */
Datum
el_version_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	values[0] = CStringGetTextDatum(EL_VERSION);
	values[1] = BoolGetDatum(el_shmem_attached());
	if (el_shmem_attached() && el_shared->launcher_pid != 0)
		values[2] = Int32GetDatum(el_shared->launcher_pid);
	else
		nulls[2] = true;

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * eventlog._session_id() -> text: this server session, as "pid.start" (the
 * backend's PID and start time), unique across the server's sessions.  A
 * member consumer's fetch position belongs to the session that polled.
 */
char *
el_session_string(void)
{
	return psprintf("%d." INT64_FORMAT, MyProcPid, (int64) MyStartTimestamp);
}

Datum
el_session_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(el_session_string()));
}
