/*-------------------------------------------------------------------------
 *
 * srf.c
 *	  The set-returning functions' common start: check that the caller
 *	  accepts a materialised set, and make the result tuplestore.
 *
 * (PostgreSQL 15 has InitMaterializedSRF for this; 14 does not, and this
 * one also names the function in its error.)
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "utils/tuplestore.h"

/*
 * Set up "fcinfo" to return a materialised set: the tuplestore to fill and
 * its descriptor, both in per-query memory.
 */
Tuplestorestate *
el_materialized_srf(FunctionCallInfo fcinfo, const char *funcname,
					TupleDesc *tupdesc)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Tuplestorestate *store;
	MemoryContext oldcxt;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set"),
				 errdetail("Function %s returns a set; call it in the FROM clause.", funcname)));

	oldcxt = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	if (get_call_result_type(fcinfo, NULL, tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	*tupdesc = BlessTupleDesc(*tupdesc);
	store = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(oldcxt);

	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = *tupdesc;
	return store;
}
