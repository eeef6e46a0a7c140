/*-------------------------------------------------------------------------
 *
 * processor_step.c
 *	  Helpers that make a stream processor's step (eventlog.run_processor,
 *	  sql/install/streams.sql) cheaper, without changing what it computes:
 *
 *	  - el_processor_exec runs a statement a step generated through a plan
 *		kept for the session, keyed by the statement's text and its
 *		parameters' types, so that a step does not parse and plan its
 *		statements again (a window step's statement is some 5 kB of CTEs).
 *		The plan cache (utils/cache/plancache.c) keeps the plan valid: it
 *		analyzes and plans it again when an object it uses changes, when
 *		the search_path differs from the one it was analyzed under, or when
 *		row security makes it depend on the role.  Privileges are checked
 *		at each execution, as the current user, as for any statement.  A
 *		prepared statement (PREPARE) would do the same but is refused in a
 *		security-restricted operation, which is how the processor worker
 *		runs steps.
 *
 *	  - el_processor_running_max gives, for the records of a poll in the
 *		order the poll returns them (each partition's in offset order), the
 *		largest event time among the records of the same partition before
 *		the record: the window function max(ts) OVER (PARTITION BY partition
 *		ORDER BY offset ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
 *		without sorting the batch.  Its state is per call site (fn_extra),
 *		so per execution of the statement; a record whose offset is not
 *		greater than the one before it in its partition is an internal error
 *		rather than a wrong answer.
 *
 *	  - el_processor_record_watermark is the same running max, made the
 *		greater of it and the partition's largest event time before the
 *		batch (passed once per statement as arrays, read at the first
 *		call): the record's watermark before max_out_of_orderness, which a
 *		window step otherwise computes by joining every record with the
 *		progress rows.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shmem.h"

PG_FUNCTION_INFO_V1(el_processor_exec);
PG_FUNCTION_INFO_V1(el_processor_running_max);
PG_FUNCTION_INFO_V1(el_processor_record_watermark);

/*
 * How many statements a session keeps plans of (the least recently used
 * go).  A processor has five; a window step's plan takes some 700 kB and
 * its closing statement's some 170 kB, so that a session running many
 * processors (the processor worker) keeps at most some 20 MB.
 */
#define EL_STEP_PLANS_MAX 128
/* A kept plan unused for this long may make room for another. */
#define EL_STEP_PLAN_IDLE_MS (60 * 1000)
#define EL_STEP_MAX_ARGS 32

typedef struct ElStepPlan
{
	uint32		hash;			/* of the text */
	Oid			userid;			/* the role it was planned as */
	char	   *sql;			/* in TopMemoryContext */
	int			nargs;
	Oid			argtypes[EL_STEP_MAX_ARGS];
	SPIPlanPtr	plan;			/* kept (SPI_keepplan) */
	uint64		used;			/* the last use, for eviction */
	TimestampTz used_at;		/* and when */
	int			running;		/* executions under way (never evicted then) */
} ElStepPlan;

static ElStepPlan el_step_plans[EL_STEP_PLANS_MAX];
static int	el_step_nplans = 0;
static uint64 el_step_clock = 0;

/*
 * The kept plan of sql with these argument types, prepared on first use,
 * or NULL when every slot holds a plan under way (a statement of a step
 * that runs a step) or used in the last EL_STEP_PLAN_IDLE_MS: the caller
 * plans it for this execution only.
 */
static pg_noinline ElStepPlan *
el_step_plan(const char *sql, int nargs, Oid *argtypes)
{
	uint32		hash = hash_bytes((const unsigned char *) sql, strlen(sql));
	Oid			userid = GetUserId();
	ElStepPlan *slot = NULL;
	SPIPlanPtr	plan;
	char	   *sqlcopy;
	int			i;

	for (i = 0; i < el_step_nplans; i++)
	{
		ElStepPlan *e = &el_step_plans[i];

		/*
		 * Per role too: a plan is made with the privileges of the role that
		 * planned it (an inlined SQL function's EXECUTE is checked then,
		 * not at each execution), so one role's plan is never another's.
		 */
		if (e->hash == hash && e->userid == userid && e->nargs == nargs &&
			memcmp(e->argtypes, argtypes, nargs * sizeof(Oid)) == 0 &&
			strcmp(e->sql, sql) == 0)
		{
			e->used = ++el_step_clock;
			e->used_at = GetCurrentTimestamp();
			return e;
		}
	}

	if (el_step_nplans < EL_STEP_PLANS_MAX)
		slot = &el_step_plans[el_step_nplans];
	else
	{
		/*
		 * The least recently used that is not running, if it has not been
		 * used for EL_STEP_PLAN_IDLE_MS: a session cycling through more
		 * statements than it keeps (a worker with many processors) would
		 * otherwise evict each plan before its next use and prepare every
		 * statement every time, which costs more than not keeping it.
		 * Those past the cache run unkept instead, as before the cache.
		 */
		TimestampTz now = GetCurrentTimestamp();

		for (i = 0; i < el_step_nplans; i++)
			if (el_step_plans[i].running == 0 &&
				(slot == NULL || el_step_plans[i].used < slot->used))
				slot = &el_step_plans[i];
		if (slot == NULL ||
			!TimestampDifferenceExceeds(slot->used_at, now, EL_STEP_PLAN_IDLE_MS))
			return NULL;
	}

	/*
	 * A generic plan: a step's parameters are intervals, names and counts
	 * that do not change which plan is best, and a custom plan would plan
	 * the statement at every step again.
	 */
	plan = SPI_prepare_cursor(sql, nargs, argtypes, CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	sqlcopy = MemoryContextStrdup(TopMemoryContext, sql);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");

	if (slot == &el_step_plans[el_step_nplans])
		el_step_nplans++;
	else
	{
		SPI_freeplan(slot->plan);
		pfree(slot->sql);
	}
	slot->hash = hash;
	slot->userid = userid;
	slot->sql = sqlcopy;
	slot->nargs = nargs;
	memcpy(slot->argtypes, argtypes, nargs * sizeof(Oid));
	slot->plan = plan;
	slot->used = ++el_step_clock;
	slot->used_at = GetCurrentTimestamp();
	slot->running = 0;
	return slot;
}

/*
 * eventlog._processor_exec(sql text, result anyelement, VARIADIC args "any")
 * RETURNS anyelement: runs sql with args as $1, $2, ... through the
 * session's plan of it and returns the first column of its first row (of
 * the type of result, which is only a type) or NULL when it returns no row.
 * It runs as the current user, as the plain statement would.
 */
Datum
el_processor_exec(PG_FUNCTION_ARGS)
{
	char	   *sql;
	Oid			restype = get_fn_expr_argtype(fcinfo->flinfo, 1);
	int			nargs = PG_NARGS() - 2;
	Oid			argtypes[EL_STEP_MAX_ARGS];
	Datum		values[EL_STEP_MAX_ARGS];
	char		nulls[EL_STEP_MAX_ARGS];
	ElStepPlan *entry;
	int			rc;
	Datum		result = (Datum) 0;
	bool		isnull = true;
	int16		typlen;
	bool		typbyval;
	int			i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("statement must not be null")));
	if (!OidIsValid(restype) || nargs > EL_STEP_MAX_ARGS || get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid arguments for a step's statement"),
				 errdetail("The result's type must be known, and at most %d arguments follow it, one by one, not as an array.",
						   EL_STEP_MAX_ARGS)));
	sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	for (i = 0; i < nargs; i++)
	{
		argtypes[i] = get_fn_expr_argtype(fcinfo->flinfo, i + 2);
		if (!OidIsValid(argtypes[i]) || argtypes[i] == UNKNOWNOID)
			ereport(ERROR,
					(errcode(ERRCODE_INDETERMINATE_DATATYPE),
					 errmsg("could not determine the data type of the statement's argument %d", i + 1),
					 errhint("Cast the argument to a type.")));
		values[i] = PG_ARGISNULL(i + 2) ? (Datum) 0 : PG_GETARG_DATUM(i + 2);
		nulls[i] = PG_ARGISNULL(i + 2) ? 'n' : ' ';
	}
	get_typlenbyval(restype, &typlen, &typbyval);

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	entry = el_step_plan(sql, nargs, argtypes);
	if (entry == NULL)
		rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	else
	{
		entry->running++;
		PG_TRY();
		{
			rc = SPI_execute_plan(entry->plan, values, nulls, false, 0);
		}
		PG_FINALLY();
		{
			entry->running--;
		}
		PG_END_TRY();
	}
	if (rc < 0)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
	if (SPI_tuptable != NULL && SPI_processed > 0)
	{
		if (SPI_tuptable->tupdesc->natts < 1 ||
			SPI_gettypeid(SPI_tuptable->tupdesc, 1) != restype)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("the statement's result is not of type %s",
							format_type_be(restype))));
		result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
			result = SPI_datumTransfer(result, typbyval, typlen);
	}
	SPI_finish();
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/*
 * el_processor_running_max's (and el_processor_record_watermark's) state:
 * per partition, what came before.
 */
typedef struct ElRunningMax
{
	int			npartitions;	/* allocated */
	bool	   *seen;			/* a record of the partition came */
	int64	   *last_offset;
	bool	   *has_max;
	TimestampTz *max;
	bool		based;			/* base/has_base were set (watermark only) */
	bool	   *has_base;		/* the progress table's max for the partition */
	TimestampTz *base;
} ElRunningMax;

/*
 * The state of flinfo's call site, with room for partition (a number below
 * eventlog.max_partitions, else an error: the functions are callable by
 * anyone, so a number past it is an error, not an allocation).
 */
static ElRunningMax *
el_running_max_state(FmgrInfo *flinfo, int32 part)
{
	ElRunningMax *st = (ElRunningMax *) flinfo->fn_extra;

	if (part < 0 || part >= el_max_partitions)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("partition %d is out of range", part),
				 errdetail("A partition number is at least 0 and below eventlog.max_partitions (%d).",
						   el_max_partitions)));

	if (st == NULL || part >= st->npartitions)
	{
		MemoryContext old = MemoryContextSwitchTo(flinfo->fn_mcxt);
		int64		n = Max((int64) part + 1, 8);
		ElRunningMax *nst;

		if (st != NULL)
			n = Max(n, (int64) st->npartitions * 2);
		n = Min(n, (int64) el_max_partitions);
		nst = palloc0(sizeof(ElRunningMax));
		nst->npartitions = (int) n;
		nst->seen = palloc0(n * sizeof(bool));
		nst->last_offset = palloc0(n * sizeof(int64));
		nst->has_max = palloc0(n * sizeof(bool));
		nst->max = palloc0(n * sizeof(TimestampTz));
		nst->has_base = palloc0(n * sizeof(bool));
		nst->base = palloc0(n * sizeof(TimestampTz));
		if (st != NULL)
		{
			memcpy(nst->seen, st->seen, st->npartitions * sizeof(bool));
			memcpy(nst->last_offset, st->last_offset, st->npartitions * sizeof(int64));
			memcpy(nst->has_max, st->has_max, st->npartitions * sizeof(bool));
			memcpy(nst->max, st->max, st->npartitions * sizeof(TimestampTz));
			memcpy(nst->has_base, st->has_base, st->npartitions * sizeof(bool));
			memcpy(nst->base, st->base, st->npartitions * sizeof(TimestampTz));
			nst->based = st->based;
		}
		MemoryContextSwitchTo(old);
		flinfo->fn_extra = st = nst;
	}
	return st;
}

/*
 * Counts the record (part, off, ts, ts_null) in st; returns whether a
 * record of part with a non-null time came before it, and in *prev the
 * largest such time.
 */
static bool
el_running_max_step(ElRunningMax *st, int32 part, int64 off, bool ts_null,
					TimestampTz ts, TimestampTz *prev)
{
	bool		had;

	if (st->seen[part] && off <= st->last_offset[part])
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("offset " INT64_FORMAT " of partition %d came after offset " INT64_FORMAT,
						off, part, st->last_offset[part]),
				 errdetail("A partition's records must come in the order of their offsets.")));
	st->seen[part] = true;
	st->last_offset[part] = off;

	had = st->has_max[part];
	if (had)
		*prev = st->max[part];
	if (!ts_null && (!st->has_max[part] || ts > st->max[part]))
	{
		st->max[part] = ts;
		st->has_max[part] = true;
	}
	return had;
}

/*
 * eventlog._processor_running_max(partition integer, offset_id bigint, ts
 * timestamptz) RETURNS timestamptz: the largest non-null ts of the records
 * of partition this call site saw before (NULL if none), then counts ts.
 */
Datum
el_processor_running_max(PG_FUNCTION_ARGS)
{
	ElRunningMax *st;
	int32		part;
	TimestampTz prev = 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("partition and offset must not be null")));
	part = PG_GETARG_INT32(0);
	st = el_running_max_state(fcinfo->flinfo, part);
	if (!el_running_max_step(st, part, PG_GETARG_INT64(1), PG_ARGISNULL(2),
							 PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), &prev))
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(prev);
}

/*
 * eventlog._processor_record_watermark(partition integer, offset_id bigint,
 * ts timestamptz, partitions integer[], maxes timestamptz[]) RETURNS
 * timestamptz: the greater of the partition's entry in maxes (its largest
 * event time before the batch, from the progress table; the arrays are
 * the same at every call of a statement's execution and are read at the
 * first) and _processor_running_max's answer, or -infinity when neither
 * is known.  A window step computed this with a join of the batch with the
 * progress rows, which cost more than the lookup.
 */
Datum
el_processor_record_watermark(PG_FUNCTION_ARGS)
{
	ElRunningMax *st;
	int32		part;
	TimestampTz prev = 0;
	bool		had;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("partition and offset must not be null")));
	part = PG_GETARG_INT32(0);
	st = el_running_max_state(fcinfo->flinfo, part);
	if (!st->based)
	{
		Datum	   *parts = NULL;
		Datum	   *maxes = NULL;
		bool	   *pnulls = NULL;
		bool	   *mnulls = NULL;
		int			np = 0;
		int			nm = 0;
		int			i;

		if (!PG_ARGISNULL(3))
			deconstruct_array(PG_GETARG_ARRAYTYPE_P(3), INT4OID, 4, true, TYPALIGN_INT,
							  &parts, &pnulls, &np);
		if (!PG_ARGISNULL(4))
			deconstruct_array(PG_GETARG_ARRAYTYPE_P(4), TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL,
							  TYPALIGN_DOUBLE, &maxes, &mnulls, &nm);
		if (np != nm)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("the partitions and their watermark times differ in length"),
					 errdetail("There are %d partitions and %d times.", np, nm)));
		for (i = 0; i < np; i++)
		{
			int32		p;

			if (pnulls[i] || mnulls[i])
				continue;
			p = DatumGetInt32(parts[i]);
			st = el_running_max_state(fcinfo->flinfo, p);
			st->has_base[p] = true;
			st->base[p] = DatumGetTimestampTz(maxes[i]);
		}
		st = el_running_max_state(fcinfo->flinfo, part);
		st->based = true;
	}
	had = el_running_max_step(st, part, PG_GETARG_INT64(1), PG_ARGISNULL(2),
							  PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), &prev);
	if (st->has_base[part] && (!had || st->base[part] > prev))
	{
		prev = st->base[part];
		had = true;
	}
	if (!had)
		TIMESTAMP_NOBEGIN(prev);
	PG_RETURN_TIMESTAMPTZ(prev);
}
