/*-------------------------------------------------------------------------
 *
 * search_path.c
 *	  Pinning search_path around the SQL that pg_eventlog's C code runs.
 *
 * Why: the queries C code sends through SPI name operators, functions and
 * aggregates ("=", count(*), max()) that are resolved through search_path.
 * A schema placed before pg_catalog in it (by the caller, or by ALTER
 * DATABASE ... SET search_path, which background workers obey too) could
 * otherwise put its own "=" into them; in the background workers, which
 * run as the bootstrap superuser, that would run a database owner's code
 * as superuser.  So C code pins search_path to "pg_catalog, pg_temp" while
 * it runs SQL (PostgreSQL's "Security Considerations for Extensions"), and
 * the workers pin it for their whole life.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "utils/guc.h"

#define EL_SAFE_SEARCH_PATH "pg_catalog, pg_temp"

/*
 * Pin search_path until el_unpin_search_path(level); an error before that
 * restores it with the (sub)transaction's abort.
 */
int
el_pin_search_path(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", EL_SAFE_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
el_unpin_search_path(int level)
{
	AtEOXact_GUC(true, level);
}

/* For a background worker: pin it for the whole process. */
void
el_pin_search_path_for_process(void)
{
	SetConfigOption("search_path", EL_SAFE_SEARCH_PATH, PGC_SUSET, PGC_S_OVERRIDE);
}
