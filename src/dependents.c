/*-------------------------------------------------------------------------
 *
 * dependents.c
 *	  Refuse objects that other roles make depend on a segment table.
 *
 * Retention removes a segment with DROP TABLE ... CASCADE, which drops,
 * and so must lock, every object depending on the segment.  Segment tables
 * live in eventlog_segments, a schema no other role may use, so no role
 * without privileges can name one; but a constant of type regclass or
 * regtype given as a number looks no name up, and PostgreSQL records a
 * dependency on the object it denotes.  A temporary view over
 * '<oid>'::regclass, a column default, a check constraint, a function body
 * or a policy holding such a constant would then depend on the segment (or
 * on its row type, its primary key index or its TOAST table), and a lock on
 * that object held open would make every retention round skip the segment
 * (and the newer ones of its partition) for as long as the role liked.
 *
 * So: the object access hook notes every object created or altered in the
 * transaction by a role that is not a superuser, and after each utility
 * statement (the only way to create such objects) the dependencies of the
 * noted objects are looked up by depender, through pg_depend's index.  A
 * normal dependency on a segment object is refused (42501), which rolls the
 * statement back.  The extension owner and superusers are exempt: they own
 * the segments and could lock them directly anyway; the extension's own
 * machinery runs as the owner (and, in pg_restore, as a superuser), and
 * creates only internal and automatic dependencies on segments.
 *
 * Checking after the statement, not in the hook: PostgreSQL records some
 * dependencies after it announces the object (a table's defaults and
 * constraints after the table), and the check must see them all.  Nothing
 * here runs in the produce or read path: the hook only appends to a list,
 * and only for DDL.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_attrdef.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "dependents.h"

static object_access_hook_type prev_object_access_hook = NULL;

/*
 * Objects created or altered in this transaction by roles that are not
 * superusers, not checked yet: ObjectAddresses in TopTransactionContext,
 * forgotten at the end of the transaction.
 */
static List *el_new_objects = NIL;

static void
el_object_access(ObjectAccessType access, Oid classId, Oid objectId,
				 int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if ((access == OAT_POST_CREATE || access == OAT_POST_ALTER) &&
		IsTransactionState() && !superuser())
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
		ObjectAddress *addr = palloc(sizeof(ObjectAddress));

		addr->classId = classId;
		addr->objectId = objectId;
		addr->objectSubId = subId;
		el_new_objects = lappend(el_new_objects, addr);
		MemoryContextSwitchTo(old);
	}
}

static void
el_dependents_xact_callback(XactEvent event, void *arg)
{
	/* The list lived in TopTransactionContext, which goes now. */
	el_new_objects = NIL;
}

/*
 * The segment table that relation "relid" belongs to (itself, one of its
 * indexes, its TOAST table or the TOAST table's index), or InvalidOid if it
 * belongs to none.
 */
static Oid
el_segment_of_relation(Oid relid, Oid segnsp)
{
	Oid			nsp = get_rel_namespace(relid);
	unsigned int owner;
	char	   *name;

	if (nsp == segnsp)
		return relid;
	if (nsp != PG_TOAST_NAMESPACE)
		return InvalidOid;
	if (get_rel_relkind(relid) == RELKIND_INDEX)
		relid = IndexGetRelation(relid, true);
	/* A TOAST table is named after its table (create_toast_table). */
	name = get_rel_name(relid);
	if (name == NULL || sscanf(name, "pg_toast_%u", &owner) != 1)
		return InvalidOid;
	return get_rel_namespace(owner) == segnsp ? owner : InvalidOid;
}

/* The segment table that object "classid"/"objid" belongs to, if any. */
static Oid
el_segment_of_object(Oid classid, Oid objid, Oid segnsp)
{
	if (classid == RelationRelationId)
		return el_segment_of_relation(objid, segnsp);
	if (classid == TypeRelationId)
	{
		HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(objid));
		Oid			relid = InvalidOid;

		if (HeapTupleIsValid(tup))
		{
			Form_pg_type typ = (Form_pg_type) GETSTRUCT(tup);

			/* The row type, or the array type of the row type. */
			if (typ->typnamespace == segnsp)
				relid = OidIsValid(typ->typrelid) ? typ->typrelid :
					get_typ_typrelid(typ->typelem);
			ReleaseSysCache(tup);
		}
		return OidIsValid(relid) ? el_segment_of_relation(relid, segnsp) : InvalidOid;
	}
	if (classid == ConstraintRelationId)
	{
		HeapTuple	tup = SearchSysCache1(CONSTROID, ObjectIdGetDatum(objid));
		Oid			relid = InvalidOid;

		if (HeapTupleIsValid(tup))
		{
			relid = ((Form_pg_constraint) GETSTRUCT(tup))->conrelid;
			ReleaseSysCache(tup);
		}
		return OidIsValid(relid) ? el_segment_of_relation(relid, segnsp) : InvalidOid;
	}
	return InvalidOid;
}

/*
 * Refuse if object "depender" (every sub-object of it) has a normal
 * dependency on a segment.
 */
static void
el_check_depender(const ObjectAddress *depender, Oid segnsp)
{
	Relation	depRel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;

	depRel = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(depender->classId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(depender->objectId));
	/* SnapshotSelf: the statement's own rows, even before a CCI. */
	scan = systable_beginscan(depRel, DependDependerIndexId, true,
							  SnapshotSelf, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);
		Oid			seg;

		if (dep->deptype != DEPENDENCY_NORMAL)
			continue;
		seg = el_segment_of_object(dep->refclassid, dep->refobjid, segnsp);
		if (OidIsValid(seg))
		{
			ObjectAddress obj;

			obj.classId = dep->classid;
			obj.objectId = dep->objid;
			obj.objectSubId = dep->objsubid;
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("cannot make %s depend on event log segment \"%s\"",
							getObjectDescription(&obj, false),
							get_rel_name(seg)),
					 errdetail("Retention drops a segment with the objects that depend on it, and must not wait for another role's locks on them."),
					 errhint("Read records with eventlog.read or eventlog.poll; only the extension owner may build objects over segments.")));
		}
	}
	systable_endscan(scan);
	table_close(depRel, AccessShareLock);
}

/*
 * A column default is announced as (pg_attrdef, table, column): check the
 * defaults of that table, whose dependencies are recorded under their own
 * OIDs.
 */
static void
el_check_attrdefs(Oid relid, Oid segnsp)
{
	Relation	adRel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *defaults = NIL;
	ListCell   *lc;

	adRel = table_open(AttrDefaultRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_attrdef_adrelid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(adRel, AttrDefaultIndexId, true,
							  SnapshotSelf, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		defaults = lappend_oid(defaults, ((Form_pg_attrdef) GETSTRUCT(tup))->oid);
	systable_endscan(scan);
	table_close(adRel, AccessShareLock);

	foreach(lc, defaults)
	{
		ObjectAddress addr;

		addr.classId = AttrDefaultRelationId;
		addr.objectId = lfirst_oid(lc);
		addr.objectSubId = 0;
		el_check_depender(&addr, segnsp);
	}
}

/*
 * After a utility statement: refuse if an object created or altered by it
 * (or earlier in the transaction, by a statement this hook did not see
 * end) depends on a segment.  Cheap when nothing was created: one test.
 */
void
el_check_new_dependents(void)
{
	List	   *objects = el_new_objects;
	Oid			segnsp;
	Oid			extid;
	ListCell   *lc;

	if (objects == NIL || !IsTransactionState())
		return;
	el_new_objects = NIL;

	/* Only the extension's own schema counts (never one made by another). */
	segnsp = get_namespace_oid(EL_SEGMENT_SCHEMA_NAME, true);
	extid = get_extension_oid(EL_EXTENSION_NAME, true);
	if (!OidIsValid(segnsp) || !OidIsValid(extid) ||
		getExtensionOfObject(NamespaceRelationId, segnsp) != extid)
		return;
	if (superuser() || el_extension_ownercheck(extid, GetUserId()))
		return;

	foreach(lc, objects)
	{
		ObjectAddress *addr = lfirst(lc);

		if (addr->classId == AttrDefaultRelationId)
			el_check_attrdefs(addr->objectId, segnsp);
		else
			el_check_depender(addr, segnsp);
	}
}

void
el_dependents_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = el_object_access;
	RegisterXactCallback(el_dependents_xact_callback, NULL);
}
