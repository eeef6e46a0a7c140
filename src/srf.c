/*-------------------------------------------------------------------------
 *
 * srf.c
 *	  The set-returning functions' common start: check that the caller
 *	  accepts a materialised set, and make the result tuplestore.
 *
 * (PostgreSQL 15 has InitMaterializedSRF for this; 14 does not, and this
 * one also names the function in its error.)
 *
 * It also keeps freed heap memory mapped in the backends that call these
 * functions (el_keep_heap_mapped below): the sets they return are built in
 * a tuplestore that is freed at the end of each call, and glibc's default
 * malloc hands the top of the heap back to the kernel (brk down) as soon
 * as more than 128 kB of it is free.  A read or poll of 1,000 records of
 * ~200 bytes builds a 256 kB block, so every call paid the brk round trip
 * and a page fault for each page of its result: perf on read showed 30% of
 * the backend's time in brk, sysmalloc and page faults, and the in-server
 * read cost 1.9x an index range scan whose executor frees nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "utils/tuplestore.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

/*
 * Up to this much free memory at the top of the heap stays mapped, and
 * blocks below the mmap threshold come from the heap rather than from
 * mmap (whose munmap at free would return them at once).  A backend thus
 * keeps at most EL_TRIM_THRESHOLD of freed memory, less than two work_mem
 * of the default.
 */
#define EL_MMAP_THRESHOLD	(4 * 1024 * 1024)
#define EL_TRIM_THRESHOLD	(8 * 1024 * 1024)

/*
 * Tune the backend's malloc once, the first time it returns a set.  Only
 * backends that read the log are changed, never the postmaster.  Setting
 * either threshold turns glibc's dynamic thresholds off, hence both.
 */
static void
el_keep_heap_mapped(void)
{
#ifdef __GLIBC__
	static bool done = false;

	if (!done)
	{
		mallopt(M_MMAP_THRESHOLD, EL_MMAP_THRESHOLD);
		mallopt(M_TRIM_THRESHOLD, EL_TRIM_THRESHOLD);
		done = true;
	}
#endif
}

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

	el_keep_heap_mapped();
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
