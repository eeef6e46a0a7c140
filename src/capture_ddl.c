/*-------------------------------------------------------------------------
 *
 * capture_ddl.c
 *	  The ALTER TABLE guard of change capture: ALTER TABLE (or RENAME
 *	  COLUMN) must not give a captured table's key column a type or
 *	  collation capture() refuses (capture_keys.c), as that key's changes
 *	  could then go out under different key texts for equal keys, to
 *	  different partitions.  The ProcessUtility hook (utility.c) calls
 *	  el_capture_before_alter before the statement and
 *	  el_capture_after_alter after it.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "capture.h"

/*
 * The key column names of "relid"'s capture trigger (eventlog_capture,
 * calling el_capture_trigger), or NIL if the table is not captured.  Reads
 * pg_trigger through its index, without locking the table: the ALTER TABLE
 * hook below calls it before ALTER TABLE has locked anything.
 */
static List *
el_captured_key_names(Oid relid)
{
	Relation	tgrel;
	ScanKeyData skey[2];
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *names = NIL;

	tgrel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyInit(&skey[0], Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&skey[1], Anum_pg_trigger_tgname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("eventlog_capture"));
	scan = systable_beginscan(tgrel, TriggerRelidNameIndexId, true, NULL, 2, skey);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Form_pg_trigger trig = (Form_pg_trigger) GETSTRUCT(tup);
		HeapTuple	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(trig->tgfoid));
		bool		is_capture = false;

		if (HeapTupleIsValid(proc))
		{
			bool		isnull;
			Datum		src = SysCacheGetAttr(PROCOID, proc, Anum_pg_proc_prosrc, &isnull);

			is_capture = ((Form_pg_proc) GETSTRUCT(proc))->prolang == ClanguageId &&
				!isnull && strcmp(TextDatumGetCString(src), "el_capture_trigger") == 0;
			ReleaseSysCache(proc);
		}
		if (is_capture && trig->tgnargs >= 2)
		{
			bool		isnull;
			Datum		args = heap_getattr(tup, Anum_pg_trigger_tgargs,
											RelationGetDescr(tgrel), &isnull);

			if (!isnull)
			{
				bytea	   *val = DatumGetByteaPP(args);
				char	   *p = VARDATA_ANY(val);
				char	   *end = p + VARSIZE_ANY_EXHDR(val);
				int			i;

				/* tgargs: the arguments, each ended by a NUL; skip the topic. */
				for (i = 0; i < trig->tgnargs && p < end; i++)
				{
					if (i > 0)
						names = lappend(names, pstrdup(p));
					p += strlen(p) + 1;
				}
			}
		}
	}
	systable_endscan(scan);
	table_close(tgrel, AccessShareLock);
	return names;
}

/* Whether capture() would accept every key column in "names" of "relid". */
static bool
el_captured_keys_ok(Oid relid, List *names)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		HeapTuple	tup = SearchSysCacheAttName(relid, (char *) lfirst(lc));
		ElKeyRefusal refusal = EL_KEY_OK;
		Oid			eq_func;

		if (!HeapTupleIsValid(tup))
			continue;			/* the trigger reports a missing key column */
		(void) el_key_form((Form_pg_attribute) GETSTRUCT(tup), &refusal, &eq_func);
		ReleaseSysCache(tup);
		if (refusal != EL_KEY_OK)
			return false;
	}
	return true;
}

/*
 * What the ALTER TABLE hook keeps between before and after the statement:
 * the table it names, and the captured tables among it and its inheritors
 * whose key capture() refused already (captured before 0.3.0), which keep
 * working as they did.
 */
struct ElCaptureAlter
{
	Oid			relid;
	List	   *exempt;
};

/*
 * Before an ALTER TABLE (or a column's RENAME) runs, or NULL for another
 * statement.  Takes no lock: the statement has not checked its privileges
 * yet.
 */
struct ElCaptureAlter *
el_capture_before_alter(Node *parsetree)
{
	RangeVar   *rv;
	struct ElCaptureAlter *check;
	List	   *rels;
	Oid			relid;
	ListCell   *lc;

	/* ALTER TABLE, and RENAME COLUMN (another column could become "id"). */
	if (IsA(parsetree, AlterTableStmt) &&
		((AlterTableStmt *) parsetree)->objtype == OBJECT_TABLE)
		rv = ((AlterTableStmt *) parsetree)->relation;
	else if (IsA(parsetree, RenameStmt) &&
			 ((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN &&
			 ((RenameStmt *) parsetree)->relationType == OBJECT_TABLE)
		rv = ((RenameStmt *) parsetree)->relation;
	else
		return NULL;
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(relid))
		return NULL;
	check = palloc0(sizeof(struct ElCaptureAlter));
	check->relid = relid;
	rels = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, rels)
	{
		Oid			child = lfirst_oid(lc);
		List	   *names = el_captured_key_names(child);

		if (names != NIL && !el_captured_keys_ok(child, names))
			check->exempt = lappend_oid(check->exempt, child);
	}
	return check;
}

/*
 * After the ALTER TABLE: refuse it (its transaction rolls back) if it gave
 * a key column of a captured table a type or collation capture() refuses,
 * e.g. ALTER COLUMN email TYPE text COLLATE case_insensitive: that key's
 * changes would again go out under different key texts for equal keys, to
 * different partitions, and a mirror would lose rows.  The tables are
 * found again now that the ALTER holds its lock on them: one captured
 * while the ALTER waited for that lock is checked too.
 */
void
el_capture_after_alter(struct ElCaptureAlter *check)
{
	List	   *rels;
	ListCell   *lc;

	CommandCounterIncrement();	/* see what the ALTER changed */
	if (get_rel_relkind(check->relid) == '\0')
		return;					/* gone */
	rels = find_all_inheritors(check->relid, NoLock, NULL);
	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);
		List	   *names;
		ListCell   *nc;

		if (list_member_oid(check->exempt, relid))
			continue;
		names = el_captured_key_names(relid);

		foreach(nc, names)
		{
			char	   *name = (char *) lfirst(nc);
			HeapTuple	tup = SearchSysCacheAttName(relid, name);
			Form_pg_attribute att;
			ElKeyRefusal refusal = EL_KEY_OK;
			Oid			eq_func;

			if (!HeapTupleIsValid(tup))
				continue;
			att = (Form_pg_attribute) GETSTRUCT(tup);
			(void) el_key_form(att, &refusal, &eq_func);
			if (refusal == EL_KEY_NONDETERMINISTIC)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot give key column \"%s\" of captured table \"%s\" the nondeterministic collation \"%s\"",
								name, get_rel_name(relid), get_collation_name(att->attcollation)),
						 errdetail("Values equal under a nondeterministic collation can differ in their text: one row's changes could go out under different keys, to different partitions, and be applied out of order."),
						 errhint("Run eventlog.uncapture() first, or keep a deterministic collation on the key column.")));
			else if (refusal != EL_KEY_OK)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot change key column \"%s\" of captured table \"%s\" to type %s",
								name, get_rel_name(relid), format_type_be(att->atttypid)),
						 errdetail("Change capture has no canonical key text for this type: one row's changes could go out under different keys, to different partitions, and be applied out of order."),
						 errhint("Run eventlog.uncapture() first, or give the key column a type docs/capture.md lists as accepted.")));
			ReleaseSysCache(tup);
		}
	}
}
