/*-------------------------------------------------------------------------
 *
 * processor_owner.c
 *	  The gate through which a stream processor's owner's SQL runs: the C
 *	  body of eventlog.run_processor, eventlog.reset_processor and
 *	  eventlog.processor_windows.
 *
 * A step runs SQL the processor's owner wrote: its expressions, the
 * functions of its aggregates, the triggers of the tables it writes; a
 * reset truncates tables the owner may have put triggers on; the final
 * functions processor_windows calls are the owner's too.  Run as the
 * caller, that code would have the caller's privileges.  Run as the owner
 * through SET ROLE, all PL/pgSQL can do, it could SET ROLE or RESET
 * SESSION AUTHORIZATION back to the session user's roles: a superuser who
 * ran another role's processor was that role's to take.  So, as REFRESH
 * MATERIALIZED VIEW and autovacuum run a table owner's code, the gate runs
 * the body ("_" + its own name, same arguments) as the owner in a
 * security-restricted operation, which refuses SET ROLE, SET SESSION
 * AUTHORIZATION, temporary objects, cursors WITH HOLD and deferred
 * triggers, inside a GUC nest level that undoes the settings the owner's
 * code changed.  The processor worker steps processors through this gate
 * too (processor_worker.c).
 *
 * The caller must be a member of the owner (run, reset) or have its
 * privileges (processor_windows), checked here, as the caller, before any
 * of the owner's code runs.  The bodies are executable by the extension's
 * owner only (an fmgr call skips the EXECUTE check; the executor's does
 * not) and begin with eventlog._processor_owner_step(processor_id), which
 * raises an error outside this gate's call for that processor.  Gates do
 * not nest: the owner's code cannot start a step, a reset or a read of
 * windows from inside one.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/portal.h"

#include "acl.h"
#include "processors.h"

PG_FUNCTION_INFO_V1(el_processor_owner_gate);
PG_FUNCTION_INFO_V1(el_processor_owner_step);

/*
 * The gate's call in progress: the processor and its owner, 0 and
 * InvalidOid outside one; body_checked once the body asked.
 */
static int32 el_gate_processor = 0;
static Oid	el_gate_owner = InvalidOid;
static bool el_gate_body_checked = false;

/* A cursor of the caller's, shielded for the gate's call, and how it was. */
typedef struct ElShieldedPortal
{
	Portal		portal;
	PortalStatus status;
	PortalStrategy strategy;
	bool		visible;
} ElShieldedPortal;

typedef struct ElOwnerGateCache
{
	FmgrInfo	body;
	int			nargs;
	char	   *name;			/* the function's own name */
	bool		windows;		/* processor_windows: the owner's privileges */
} ElOwnerGateCache;

static ElOwnerGateCache *
el_owner_gate_lookup(FunctionCallInfo fcinfo)
{
	ElOwnerGateCache *cache = (ElOwnerGateCache *) fcinfo->flinfo->fn_extra;
	Oid			body;

	if (cache != NULL)
		return cache;

	cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ElOwnerGateCache));
	body = el_gate_body(fcinfo->flinfo->fn_oid, fcinfo->flinfo->fn_mcxt,
						&cache->name, &cache->nargs);
	cache->windows = strcmp(cache->name, "processor_windows") == 0;
	fmgr_info_cxt(body, &cache->body, fcinfo->flinfo->fn_mcxt);
	fcinfo->flinfo->fn_extra = cache;
	return cache;
}

/*
 * sql's plan, prepared on first use and kept for the session: every step
 * pays a gate's fixed cost.
 */
static SPIPlanPtr
el_owner_gate_plan(SPIPlanPtr *kept, const char *sql, int nargs, Oid *argtypes)
{
	if (*kept == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare \"%s\": %s", sql,
				 SPI_result_code_string(SPI_result));
		*kept = plan;
	}
	return *kept;
}

/*
 * The processor named name's id and owner, looked up as the caller (the
 * catalog is readable by all); raises 42704 when there is none.
 */
static void
el_owner_gate_processor(text *name, int32 *processor_id, Oid *owner,
						List **cursors)
{
	static SPIPlanPtr lookup = NULL;
	static SPIPlanPtr list_cursors = NULL;
	MemoryContext caller_cxt = CurrentMemoryContext;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {PointerGetDatum(name)};
	bool		isnull;
	int			rc;
	uint64		i;

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	rc = SPI_execute_plan(el_owner_gate_plan(&lookup,
											 "SELECT processor_id, owner::pg_catalog.oid FROM "
											 EL_SCHEMA_NAME ".processor_catalog"
											 " WHERE name OPERATOR(pg_catalog.=) $1",
											 1, argtypes),
						  args, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not look up a processor: %s", SPI_result_code_string(rc));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("processor \"%s\" does not exist", text_to_cstring(name))));
	*processor_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
												SPI_tuptable->tupdesc, 1, &isnull));
	*owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 2, &isnull));

	/* The caller's cursors, which the gate shields from the owner's code. */
	rc = SPI_execute_plan(el_owner_gate_plan(&list_cursors,
											 "SELECT name FROM pg_catalog.pg_cursors",
											 0, NULL),
						  NULL, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not list cursors: %s", SPI_result_code_string(rc));
	*cursors = NIL;
	for (i = 0; i < SPI_processed; i++)
	{
		char	   *cursor = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		MemoryContext spi_cxt;

		if (cursor == NULL)
			continue;
		spi_cxt = MemoryContextSwitchTo(caller_cxt);
		*cursors = lappend(*cursors, pstrdup(cursor));
		MemoryContextSwitchTo(spi_cxt);
	}
	SPI_finish();
}

Datum
el_processor_owner_gate(PG_FUNCTION_ARGS)
{
	ElOwnerGateCache *cache = el_owner_gate_lookup(fcinfo);
	LOCAL_FCINFO(body_fcinfo, FUNC_MAX_ARGS);
	text	   *name;
	int32		processor_id;
	Oid			owner;
	const char *owner_name;
	Oid			caller = GetUserId();
	Oid			save_userid;
	int			save_sec;
	int			nest;
	volatile Datum result = (Datum) 0;
	int			i;
	List	   *cursors;
	ElShieldedPortal *shielded;
	volatile int nshielded = 0;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("processor name must not be null")));
	name = PG_GETARG_TEXT_PP(0);
	if (el_gate_processor != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot call %s inside a step of a processor", cache->name),
				 errdetail("The processor's own SQL runs as its owner inside eventlog.run_processor, eventlog.reset_processor or eventlog.processor_windows, and cannot start another.")));
	el_owner_gate_processor(name, &processor_id, &owner, &cursors);

	/*
	 * As the caller: may it act as the owner?  Running and resetting are
	 * what SET ROLE to the owner would allow (on 16 and later a membership
	 * may withhold SET); reading windows, what the owner's privileges
	 * would.  A dropped owner's processor runs for nobody.
	 */
	owner_name = GetUserNameFromId(owner, true);
	if (owner_name == NULL ||
		(cache->windows ? !has_privs_of_role(caller, owner) :
#if PG_VERSION_NUM >= 160000
		 !member_can_set_role(caller, owner)
#else
		 !is_member_of_role(caller, owner)
#endif
		 ))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for processor \"%s\"", text_to_cstring(name)),
				 cache->windows ?
				 errdetail("Only roles with the privileges of the processor's owner role %s may see its windows.",
						   owner_name ? owner_name : psprintf("%u", owner)) :
				 errdetail("Only members of the processor's owner role %s may run, reset or drop it.",
						   owner_name ? owner_name : psprintf("%u", owner))));

	InitFunctionCallInfoData(*body_fcinfo, &cache->body, cache->nargs,
							 fcinfo->fncollation, fcinfo->context,
							 fcinfo->resultinfo);
	for (i = 0; i < cache->nargs; i++)
		body_fcinfo->args[i] = fcinfo->args[i];

	/*
	 * As the owner, in a security-restricted operation; its settings end
	 * with the call.  An error restores both (the (sub)transaction's abort
	 * does, as for REFRESH MATERIALIZED VIEW).
	 */
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(owner, save_sec | SECURITY_RESTRICTED_OPERATION);
	nest = NewGUCNestLevel();
	el_gate_processor = processor_id;
	el_gate_owner = owner;
	el_gate_body_checked = false;
	shielded = palloc(sizeof(ElShieldedPortal) * Max(list_length(cursors), 1));
	PG_TRY();
	{
		ListCell   *lc;

		/*
		 * Active: PostgreSQL refuses to run (FETCH, MOVE) or drop (CLOSE)
		 * an active portal, so a new one cannot take its name either; the
		 * caller's running portals are active already.  WHERE CURRENT OF
		 * looks a portal up by name whatever its status, and reads the
		 * row it is on if its strategy is PORTAL_ONE_SELECT: another
		 * strategy makes it refuse (nothing else reads the strategy of a
		 * portal no one can run or drop).
		 */
		foreach(lc, cursors)
		{
			Portal		portal = GetPortalByName((const char *) lfirst(lc));

			if (!PortalIsValid(portal) || portal->status == PORTAL_ACTIVE)
				continue;
			shielded[nshielded].portal = portal;
			shielded[nshielded].status = portal->status;
			shielded[nshielded].strategy = portal->strategy;
			shielded[nshielded].visible = portal->visible;
			nshielded++;
			portal->status = PORTAL_ACTIVE;
			portal->strategy = PORTAL_MULTI_QUERY;
			portal->visible = false;
		}
		result = FunctionCallInvoke(body_fcinfo);
	}
	PG_FINALLY();
	{
		/* Before any (sub)transaction abort cleans portals up. */
		for (i = 0; i < nshielded; i++)
		{
			shielded[i].portal->status = shielded[i].status;
			shielded[i].portal->strategy = shielded[i].strategy;
			shielded[i].portal->visible = shielded[i].visible;
		}
		el_gate_processor = 0;
		el_gate_owner = InvalidOid;
	}
	PG_END_TRY();
	AtEOXact_GUC(false, nest);
	SetUserIdAndSecContext(save_userid, save_sec);

	fcinfo->isnull = body_fcinfo->isnull;
	return result;
}

/*
 * Whether a gate's call is in progress: the owner's SQL may be running.
 * The utility hook (utility.c) refuses SET CONSTRAINTS there: deferring
 * constraints is the transaction's state, which neither the restricted
 * operation nor the GUC nest level undoes, so the caller's later
 * statements would have their checks deferred to commit.
 */
bool
el_in_processor_gate(void)
{
	return el_gate_processor != 0;
}

/*
 * eventlog._processor_owner_step(processor_id integer) RETURNS void: the
 * first statement of each body the gate calls.  Returns only inside the
 * gate's call for that processor, as its owner in a security-restricted
 * operation, and once (the owner's code, which runs after, cannot pass);
 * raises 42501 everywhere else.
 */
Datum
el_processor_owner_step(PG_FUNCTION_ARGS)
{
	int32		processor_id = PG_ARGISNULL(0) ? 0 : PG_GETARG_INT32(0);

	if (el_gate_processor == 0 || el_gate_processor != processor_id ||
		el_gate_body_checked || GetUserId() != el_gate_owner ||
		!InSecurityRestrictedOperation())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("a processor's internal functions run only through its gate"),
				 errdetail("Call eventlog.run_processor, eventlog.reset_processor or eventlog.processor_windows.")));
	el_gate_body_checked = true;
	PG_RETURN_VOID();
}
