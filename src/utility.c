/*-------------------------------------------------------------------------
 *
 * utility.c
 *	  A ProcessUtility hook so that DROP EXTENSION pg_eventlog leaves
 *	  nothing behind.
 *
 * Segment tables are created at run time, so they are not members of the
 * extension (members' rows would be left out of pg_dump).  DROP EXTENSION
 * would therefore leave them behind; this hook drops them first, in the
 * same transaction, so a failed DROP EXTENSION keeps them too; and only
 * once it has checked that the role owns the extension, so that another
 * role gets PostgreSQL's own error and nothing is dropped.  It also frees
 * the database's partition slots in shared memory at commit, so that
 * topics of a re-created extension start again at offset 0.
 *
 * It also keeps pg_eventlog's workers (worker.c) out of a database while a
 * command that refuses to run when anyone else is connected to it runs:
 * DROP DATABASE, ALTER DATABASE ... RENAME TO / SET TABLESPACE, and CREATE
 * DATABASE from it as a template.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/tablespace.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "utils/syscache.h"
#include "catalog/pg_authid.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "dependents.h"
#include "processors.h"
#include "shmem.h"
#include "topic.h"
#include "worker.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Does the statement drop "name" (an extension or a schema)? */
static bool
el_drop_names(DropStmt *stmt, ObjectType type, const char *name)
{
	ListCell   *lc;

	if (stmt->removeType != type)
		return false;
	foreach(lc, stmt->objects)
	{
		Node	   *obj = lfirst(lc);

		if (IsA(obj, String) && strcmp(strVal(obj), name) == 0)
			return OidIsValid(get_extension_oid(EL_EXTENSION_NAME, true));
	}
	return false;
}

/*
 * Drop every segment table, and every stream processor's state table, with
 * CASCADE if the DROP EXTENSION said so: an object built over a segment (by
 * the extension owner, or by anyone before 0.3.0) then goes with it, as it
 * would go with the extension.
 */
static void
el_drop_all_segments(bool cascade)
{
	int			ret;
	int			pin;
	uint64		i;
	uint64		nsegments;
	SPITupleTable *segments;
	char	   *segnsp;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	pin = el_pin_search_path();
	segnsp = get_namespace_name(el_segment_schema_oid());
	ret = SPI_execute("SELECT table_name FROM " EL_SCHEMA_NAME ".segment_catalog"
					  " ORDER BY 1", false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read eventlog.segment_catalog: %s",
			 SPI_result_code_string(ret));
	/* Each DROP below replaces SPI_tuptable: keep the list. */
	segments = SPI_tuptable;
	nsegments = SPI_processed;
	for (i = 0; i < nsegments; i++)
	{
		char	   *relname = SPI_getvalue(segments->vals[i],
										   segments->tupdesc, 1);
		char	   *sql = psprintf("DROP TABLE IF EXISTS %s.%s%s",
								   quote_identifier(segnsp),
								   quote_identifier(relname),
								   cascade ? " CASCADE" : "");

		ret = SPI_execute(sql, false, 0);
		if (ret != SPI_OK_UTILITY)
			elog(ERROR, "could not drop segment \"%s\": %s", relname,
				 SPI_result_code_string(ret));
	}

	/*
	 * Stream processors' state tables (sql/install/streams.sql; a join's
	 * sides, streams_join.sql; a sliding window's record buffer,
	 * streams_windows.sql) live in the extension's schema but, created at
	 * run time, are not its members: they go with it too, or the schema
	 * would stay behind.  Only the API creates tables of these names there
	 * (PUBLIC may not create in it).
	 */
	ret = SPI_execute("SELECT c.relname FROM pg_catalog.pg_class c"
					  " WHERE c.relnamespace OPERATOR(pg_catalog.=) '" EL_SCHEMA_NAME "'::pg_catalog.regnamespace"
					  "   AND c.relkind OPERATOR(pg_catalog.=) 'r'"
					  "   AND c.relname OPERATOR(pg_catalog.~) '^processor_[0-9]+_(progress|windows|records|left|right)$'"
					  " ORDER BY 1", false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not list processor state tables: %s",
			 SPI_result_code_string(ret));
	segments = SPI_tuptable;
	nsegments = SPI_processed;
	for (i = 0; i < nsegments; i++)
	{
		char	   *relname = SPI_getvalue(segments->vals[i],
										   segments->tupdesc, 1);
		char	   *sql = psprintf("DROP TABLE IF EXISTS %s.%s%s",
								   quote_identifier(EL_SCHEMA_NAME),
								   quote_identifier(relname),
								   cascade ? " CASCADE" : "");

		ret = SPI_execute(sql, false, 0);
		if (ret != SPI_OK_UTILITY)
			elog(ERROR, "could not drop processor state \"%s\": %s", relname,
				 SPI_result_code_string(ret));
	}

	/*
	 * And the partial and combine aggregates of window processors'
	 * aggregates with a combine function (sql/install/streams_windows.sql),
	 * made at run time too.
	 */
	ret = SPI_execute("SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text FROM pg_catalog.pg_proc p"
					  " WHERE p.pronamespace OPERATOR(pg_catalog.=) '" EL_SCHEMA_NAME "'::pg_catalog.regnamespace"
					  "   AND p.prokind OPERATOR(pg_catalog.=) 'a'"
					  "   AND p.proname OPERATOR(pg_catalog.~) '^processor_[0-9]+_(partial|combine|final)_[0-9]+$'"
					  " ORDER BY 1", false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not list processor aggregates: %s",
			 SPI_result_code_string(ret));
	segments = SPI_tuptable;
	nsegments = SPI_processed;
	for (i = 0; i < nsegments; i++)
	{
		/* regprocedure's text is qualified and quoted (search_path pinned) */
		char	   *aggname = SPI_getvalue(segments->vals[i],
										   segments->tupdesc, 1);
		char	   *sql = psprintf("DROP AGGREGATE IF EXISTS %s%s", aggname,
								   cascade ? " CASCADE" : "");

		ret = SPI_execute(sql, false, 0);
		if (ret != SPI_OK_UTILITY)
			elog(ERROR, "could not drop processor aggregate \"%s\": %s", aggname,
				 SPI_result_code_string(ret));
	}
	el_unpin_search_path(pin);
	SPI_finish();
}

/*
 * CREATE EXTENSION created the schema (pg_eventlog.control names it), but
 * PostgreSQL does not record it as a member, so DROP EXTENSION leaves it.
 * Drop it too when nothing is left in it.
 */
static void
el_drop_empty_schema(void)
{
	int			ret;
	int			pin;

	CommandCounterIncrement();	/* see the extension's objects gone */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	pin = el_pin_search_path();
	ret = SPI_execute("SELECT FROM pg_catalog.pg_namespace n"
					  " WHERE n.nspname = '" EL_SCHEMA_NAME "'"
					  "   AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d"
					  "                    WHERE d.refclassid = 'pg_catalog.pg_namespace'::pg_catalog.regclass"
					  "                      AND d.refobjid = n.oid)",
					  false, 1);
	if (ret == SPI_OK_SELECT && SPI_processed == 1)
		SPI_execute("DROP SCHEMA " EL_SCHEMA_NAME, false, 0);
	el_unpin_search_path(pin);
	SPI_finish();
}

/* Whether the current role may create databases (as createdb checks). */
static bool
el_has_createdb(void)
{
	HeapTuple	tup;
	bool		result = false;

	if (superuser())
		return true;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_authid) GETSTRUCT(tup))->rolcreatedb;
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * The database whose workers must stay away while "parsetree" runs, as it
 * refuses to run while anyone else is connected there: the database
 * renamed or moved by ALTER DATABASE, or the template of CREATE DATABASE.
 * Else InvalidOid.
 *
 * Only for a command that gets as far as counting the connections: the
 * current role may run it, and PostgreSQL's own checks that come first
 * (transaction block, names taken, current database, tablespace rights)
 * pass.  Otherwise a command bound to fail would stop the workers, and a
 * role (the owner of a database without CREATEDB, say) could keep the
 * maintenance worker from ever finishing a round by repeating it.  The
 * checks below follow createdb, RenameDatabase and movedb (PostgreSQL's
 * src/backend/commands/dbcommands.c).
 */
static Oid
el_database_to_free(Node *parsetree, bool isTopLevel)
{
	const char *dbname = NULL;
	const char *tablespace = NULL;
	Oid			dbid;
	HeapTuple	tup;
	bool		is_template;
	Oid			db_tablespace;
	ListCell   *lc;

	if (IsA(parsetree, RenameStmt) &&
		((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
	{
		RenameStmt *stmt = (RenameStmt *) parsetree;

		if (!el_has_createdb() ||
			OidIsValid(get_database_oid(stmt->newname, true)))
			return InvalidOid;
		dbname = stmt->subname;
	}
	else if (IsA(parsetree, AlterDatabaseStmt))
	{
		AlterDatabaseStmt *stmt = (AlterDatabaseStmt *) parsetree;

		foreach(lc, stmt->options)
		{
			DefElem    *opt = (DefElem *) lfirst(lc);

			if (strcmp(opt->defname, "tablespace") == 0 && opt->arg != NULL)
			{
				dbname = stmt->dbname;
				tablespace = defGetString(opt);
			}
		}
		if (dbname == NULL || !isTopLevel || IsTransactionBlock())
			return InvalidOid;
	}
	else if (IsA(parsetree, CreatedbStmt))
	{
		CreatedbStmt *stmt = (CreatedbStmt *) parsetree;

		if (!isTopLevel || IsTransactionBlock() || !el_has_createdb() ||
			OidIsValid(get_database_oid(stmt->dbname, true)))
			return InvalidOid;
		/* Without TEMPLATE, CREATE DATABASE copies template1. */
		dbname = "template1";
		foreach(lc, stmt->options)
		{
			DefElem    *opt = (DefElem *) lfirst(lc);

			if (strcmp(opt->defname, "template") == 0 && opt->arg != NULL)
				dbname = defGetString(opt);
		}
	}
	if (dbname == NULL)
		return InvalidOid;

	dbid = get_database_oid(dbname, true);
	if (!OidIsValid(dbid))
		return InvalidOid;
	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dbid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	is_template = ((Form_pg_database) GETSTRUCT(tup))->datistemplate;
	db_tablespace = ((Form_pg_database) GETSTRUCT(tup))->dattablespace;
	ReleaseSysCache(tup);

	if (IsA(parsetree, CreatedbStmt))
	{
		/* A template copies for anyone with CREATEDB, others for owners. */
		if (is_template || el_database_ownercheck(dbid, GetUserId()))
			return dbid;
		return InvalidOid;
	}

	/* RENAME and SET TABLESPACE: the owner, from another database. */
	if (!el_database_ownercheck(dbid, GetUserId()) || dbid == MyDatabaseId)
		return InvalidOid;
	if (tablespace)
	{
		Oid			spcid = get_tablespace_oid(tablespace, true);

		/* Unknown, not allowed, or where it already is (nothing to do). */
		if (!OidIsValid(spcid) || spcid == db_tablespace ||
			el_tablespace_aclcheck(spcid, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
			return InvalidOid;
	}
	return dbid;
}

/* DROP DATABASE failed, or its session exits: ask the workers back. */
static void
el_unstop_worker_callback(int code, Datum arg)
{
	el_unstop_worker(DatumGetObjectId(arg));
}

/*
 * Error or exit while the workers were kept away: let them come back.  The
 * argument points to el_process_utility's record of the pause, in its
 * frame, which is live whenever this runs (PG_CATCH, or an exit from
 * within the command).
 */
typedef struct ElPause
{
	Oid			dbid;
	bool		counted;		/* set by el_pause_workers */
} ElPause;

static void
el_resume_workers_callback(int code, Datum arg)
{
	volatile ElPause *pause = (volatile ElPause *) DatumGetPointer(arg);

	el_resume_workers(pause->dbid, pause->counted);
}

/*
 * Run the statement with the next hook, or PostgreSQL's own; then produce
 * the changes it captured (capture_batch.c): COPY FROM fires row triggers
 * outside the executor, whose hook produces a statement's changes.
 */
static void
el_run_utility(PlannedStmt *pstmt, const char *queryString,
			   bool readOnlyTree, ProcessUtilityContext context,
			   ParamListInfo params, QueryEnvironment *queryEnv,
			   DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
	el_capture_flush();
}

static void
el_process_utility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	volatile bool dropping_extension = false;
	volatile Oid stopped_dbid = InvalidOid;
	struct ElCaptureAlter *captured = el_capture_before_alter(parsetree);
	volatile Oid paused_dbid = InvalidOid;
	volatile ElPause pause;

	/*
	 * A processor's owner's SQL, inside its gate (processor_owner.c), must
	 * not change how the caller's transaction checks constraints after the
	 * call: the GUC nest level does not undo SET CONSTRAINTS.
	 */
	if (IsA(parsetree, ConstraintsSetStmt) && el_in_processor_gate())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot execute SET CONSTRAINTS inside a step of a processor"),
				 errdetail("The processor's own SQL runs as its owner in the caller's transaction, whose constraint checking it may not change.")));

	if (IsA(parsetree, DropStmt))
	{
		DropStmt   *stmt = (DropStmt *) parsetree;

		if (el_drop_names(stmt, OBJECT_EXTENSION, EL_EXTENSION_NAME))
		{
			Oid			extid = get_extension_oid(EL_EXTENSION_NAME, false);

			/*
			 * PostgreSQL checks ownership of the extension only once it
			 * runs the DROP, after this hook: check it first, so that a
			 * role that may not drop the extension gets PostgreSQL's own
			 * error rather than one about the first segment table, and so
			 * that nothing is dropped or scheduled on its behalf.
			 */
			if (!el_extension_ownercheck(extid, GetUserId()))
				aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_EXTENSION,
							   EL_EXTENSION_NAME);
			dropping_extension = true;
			el_drop_all_segments(stmt->behavior == DROP_CASCADE);
			el_forget_database_at_commit();
		}
		/* DROP SCHEMA eventlog CASCADE drops segments and extension alike. */
		else if (el_drop_names(stmt, OBJECT_SCHEMA, EL_SCHEMA_NAME))
			el_forget_database_at_commit();
	}

	/*
	 * A database being dropped must lose its maintenance worker first (a
	 * connected worker makes DROP DATABASE fail).  Only for a DROP that can
	 * succeed: its owner, outside a transaction block and a function (as a
	 * top-level statement); and should it fail all the same, the worker is
	 * asked back.
	 */
	if (IsA(parsetree, DropdbStmt) && context == PROCESS_UTILITY_TOPLEVEL &&
		!IsTransactionBlock())
	{
		Oid			dbid = get_database_oid(((DropdbStmt *) parsetree)->dbname, true);

		if (OidIsValid(dbid) && el_database_ownercheck(dbid, GetUserId()))
			stopped_dbid = dbid;
	}

	/*
	 * The partition slots of a dropped extension's topics are freed when the
	 * drop commits (slots.c), and a re-created extension numbers its topics
	 * from 1 again: re-created in the same transaction (pg_restore --clean
	 * --single-transaction), its topics would take over the old slots (their
	 * counters, and routes to segments that no longer exist).  Free them now.
	 */
	if (IsA(parsetree, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) parsetree)->extname, EL_EXTENSION_NAME) == 0 &&
		!OidIsValid(get_extension_oid(EL_EXTENSION_NAME, true)) &&
		el_forget_database_pending() && GetCurrentTransactionNestLevel() > 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot create extension \"pg_eventlog\" in a subtransaction of the transaction that dropped it"),
				 errdetail("A rollback to a savepoint could bring the dropped extension back while shared memory holds the new extension's partition state."),
				 errhint("Create the extension outside savepoints, or commit the DROP EXTENSION first.")));
	if (IsA(parsetree, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) parsetree)->extname, EL_EXTENSION_NAME) == 0 &&
		!OidIsValid(get_extension_oid(EL_EXTENSION_NAME, true)) &&
		!el_free_database_slots_now())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot create extension \"pg_eventlog\" in the transaction that dropped it after producing"),
				 errdetail("This transaction's records of the dropped topics keep their partition state in shared memory until it ends, and the new extension's topics would take it over."),
				 errhint("Commit the DROP EXTENSION first, then create the extension in a new transaction.")));

	/*
	 * The other commands that need a database to themselves keep the
	 * workers away while they run, then let them back whatever happens
	 * (error, cancel, or this backend exiting).  A worker starting again
	 * before a RENAME in a transaction block commits waits for its lock.
	 */
	if (!OidIsValid(stopped_dbid))
		paused_dbid = el_database_to_free(parsetree,
										  context == PROCESS_UTILITY_TOPLEVEL);
	if (OidIsValid(stopped_dbid))
	{
		/*
		 * Should the DROP fail, be cancelled or its session be terminated
		 * (which skips PG_CATCH), the workers are asked back: else the
		 * launcher would forget the database as dropped until its next
		 * probe of every database.
		 */
		PG_ENSURE_ERROR_CLEANUP(el_unstop_worker_callback, ObjectIdGetDatum(stopped_dbid));
		{
			el_stop_worker(stopped_dbid);
			el_run_utility(pstmt, queryString, readOnlyTree, context,
						   params, queryEnv, dest, qc);
		}
		PG_END_ENSURE_ERROR_CLEANUP(el_unstop_worker_callback, ObjectIdGetDatum(stopped_dbid));
	}
	else if (OidIsValid(paused_dbid))
	{
		pause.dbid = paused_dbid;
		pause.counted = false;
		PG_ENSURE_ERROR_CLEANUP(el_resume_workers_callback, PointerGetDatum(&pause));
		{
			el_pause_workers(paused_dbid, &pause.counted);
			el_run_utility(pstmt, queryString, readOnlyTree, context,
						   params, queryEnv, dest, qc);
		}
		PG_END_ENSURE_ERROR_CLEANUP(el_resume_workers_callback, PointerGetDatum(&pause));
		el_resume_workers(pause.dbid, pause.counted);
	}
	else
		el_run_utility(pstmt, queryString, readOnlyTree, context,
					   params, queryEnv, dest, qc);

	/*
	 * The statement may have made an object depend on a segment table
	 * (dependents.c): refuse that now, so that the statement rolls back.
	 */
	el_check_new_dependents();

	if (dropping_extension)
		el_drop_empty_schema();
	if (captured != NULL)
		el_capture_after_alter(captured);

	/* Start this database's maintenance worker once the creation commits. */
	if (IsA(parsetree, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) parsetree)->extname, EL_EXTENSION_NAME) == 0)
		el_request_worker_at_commit();
	/*
	 * A new database may come with the extension (from its template); a
	 * dropped one must leave the launcher's probe queue, where it would
	 * hold up the databases behind it.
	 */
	if (IsA(parsetree, CreatedbStmt) || IsA(parsetree, DropdbStmt))
		el_probe_at_commit();
}

void
el_utility_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = el_process_utility;
}
