/*-------------------------------------------------------------------------
 *
 * acl.c
 *	  Topic privileges: who may produce to, consume from and administer a
 *	  topic, and the gate through which the SQL API acts for its caller.
 *
 * A topic has an owner (the role that created it) and two lists of roles,
 * producers and consumers, kept in topic_catalog and changed with
 * eventlog.grant, eventlog.revoke and eventlog.set_topic_owner.  InvalidOid
 * in a list stands for PUBLIC.  A role has a privilege if it is a
 * superuser, has the privileges of the owner, or has the privileges of a
 * role in the list (PostgreSQL's own rule for table privileges, so GRANT of
 * a role and NOINHERIT work as a DBA expects).
 *
 * Why a gate: the catalog tables, group positions and segment tables are
 * the extension owner's, and no other role may write them directly, or it
 * could move any group's position or forge records.  The API functions
 * that write them are SECURITY DEFINER, but a SECURITY DEFINER function
 * cannot tell who called it, which is the role whose privileges count.  So
 * each such public function is this C function, el_gate, run as the
 * caller: it notes the caller and calls the implementation ("_" + its name,
 * same arguments), which is SECURITY DEFINER, executable by its owner only
 * (fmgr calls skip the EXECUTE check; the executor's do not), and asks
 * eventlog._authorize or eventlog._caller for the caller.
 *
 * produce and read are C functions running as the caller, and check with
 * GetUserId() directly.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "acl.h"
#include "topic.h"

/* The caller of the innermost gate in progress, or InvalidOid. */
static Oid	el_gate_caller = InvalidOid;

/* The role whose privileges count: the gate's caller, or the current user. */
Oid
el_caller(void)
{
	return OidIsValid(el_gate_caller) ? el_gate_caller : GetUserId();
}

static bool
el_role_in(Oid role, int nroles, const Oid *roles)
{
	int			i;

	for (i = 0; i < nroles; i++)
		if (!OidIsValid(roles[i]) || has_privs_of_role(role, roles[i]))
			return true;
	return false;
}

/*
 * A topic of a database still at 0.1.0 (see el_topic_load): 0.1.0's rule,
 * INSERT (produce) or SELECT (consume) on the newest segment table of the
 * topic's first partition, or owning it.
 */
static bool
el_legacy_allows(ElTopic *topic, Oid role, ElPrivilege priv)
{
	ElPartitionMeta *meta = &topic->parts[0];
	Oid			relid;

	if (topic->npartitions < 1 || meta->nsegments == 0)
		return superuser_arg(role);
	relid = meta->segments[meta->nsegments - 1].relid;
	if (!OidIsValid(relid))
		return superuser_arg(role);
	switch (priv)
	{
		case EL_PRIV_PRODUCE:
			return pg_class_aclcheck(relid, role, ACL_INSERT) == ACLCHECK_OK;
		case EL_PRIV_CONSUME:
			return pg_class_aclcheck(relid, role, ACL_SELECT) == ACLCHECK_OK;
		case EL_PRIV_OWNER:
			return el_relation_ownercheck(relid, role);
	}
	return false;
}

bool
el_topic_allows(ElTopic *topic, Oid role, ElPrivilege priv)
{
	if (topic->legacy_acl)
		return el_legacy_allows(topic, role, priv);
	if (superuser_arg(role) || has_privs_of_role(role, topic->owner))
		return true;
	switch (priv)
	{
		case EL_PRIV_PRODUCE:
			return el_role_in(role, topic->nproducers, topic->producers);
		case EL_PRIV_CONSUME:
			return el_role_in(role, topic->nconsumers, topic->consumers);
		case EL_PRIV_OWNER:
			return false;
	}
	return false;
}

/* A role's name for a message, or its OID if it no longer exists. */
static const char *
el_role_name(Oid role)
{
	const char *name = GetUserNameFromId(role, true);

	return name ? name : psprintf("%u", role);
}

void
el_require_topic_privilege(ElTopic *topic, Oid role, ElPrivilege priv)
{
	if (el_topic_allows(topic, role, priv))
		return;
	if (priv == EL_PRIV_OWNER)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of topic \"%s\"", topic->name),
				 errdetail("Role \"%s\" is not the topic's owner \"%s\", nor a member of it.",
						   el_role_name(role), el_role_name(topic->owner)),
				 errhint("A superuser can hand the topic over with eventlog.set_topic_owner().")));
	if (priv == EL_PRIV_PRODUCE)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to produce to topic \"%s\"", topic->name),
				 errdetail("Role \"%s\" does not have the produce privilege on the topic.",
						   el_role_name(role)),
				 errhint("The topic's owner can grant it with eventlog.grant('%s', 'produce', role).",
						 topic->name)));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to consume from topic \"%s\"", topic->name),
			 errdetail("Role \"%s\" does not have the consume privilege on the topic.",
					   el_role_name(role)),
			 errhint("The topic's owner can grant it with eventlog.grant('%s', 'consume', role).",
					 topic->name)));
}

/* Parse a privilege name: produce, consume or owner, in any case. */
static ElPrivilege
el_parse_privilege(text *t)
{
	char	   *s = text_to_cstring(t);

	if (pg_strcasecmp(s, "produce") == 0)
		return EL_PRIV_PRODUCE;
	if (pg_strcasecmp(s, "consume") == 0)
		return EL_PRIV_CONSUME;
	if (pg_strcasecmp(s, "owner") == 0)
		return EL_PRIV_OWNER;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized topic privilege \"%s\"", s),
			 errhint("A topic privilege is produce or consume; owner tests ownership.")));
	return EL_PRIV_OWNER;		/* keep the compiler quiet */
}

/*
 * eventlog.has_topic_privilege([role regrole,] topic text, privilege text)
 *		-> boolean
 */
PG_FUNCTION_INFO_V1(el_has_topic_privilege);
Datum
el_has_topic_privilege(PG_FUNCTION_ARGS)
{
	int			base = (PG_NARGS() == 3) ? 1 : 0;
	Oid			role;
	ElTopic    *topic;
	ElPrivilege priv;

	if (PG_ARGISNULL(base) || PG_ARGISNULL(base + 1) || (base == 1 && PG_ARGISNULL(0)))
		PG_RETURN_NULL();
	role = (base == 1) ? PG_GETARG_OID(0) : GetUserId();
	priv = el_parse_privilege(PG_GETARG_TEXT_PP(base + 1));
	topic = el_topic_lookup(PG_GETARG_TEXT_PP(base));
	PG_RETURN_BOOL(el_topic_allows(topic, role, priv));
}

/*
 * eventlog._authorize(topic text, privilege text) -> integer: the topic's
 * id, if the caller has the privilege; 42501 otherwise, 42704 if there is no
 * such topic.
 */
PG_FUNCTION_INFO_V1(el_authorize);
Datum
el_authorize(PG_FUNCTION_ARGS)
{
	ElTopic    *topic;
	ElPrivilege priv;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("privilege must not be null")));
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topic name must not be null")));
	priv = el_parse_privilege(PG_GETARG_TEXT_PP(1));
	topic = el_topic_lookup(PG_GETARG_TEXT_PP(0));
	el_require_topic_privilege(topic, el_caller(), priv);
	PG_RETURN_INT32(topic->topic_id);
}

/* eventlog._caller() -> regrole */
PG_FUNCTION_INFO_V1(el_caller_sql);
Datum
el_caller_sql(PG_FUNCTION_ARGS)
{
	PG_RETURN_OID(el_caller());
}

/*
 * The gate: the C body of each public function that acts on the catalog
 * for its caller.  Calls "_<own name>" in the same schema with the same
 * arguments, with el_gate_caller set to the current user.
 */
typedef struct ElGateCache
{
	FmgrInfo	impl;
	int			nargs;
	bool		moves_group;	/* poll, poll_binary, commit or seek */
} ElGateCache;

/*
 * The body of the gate function fn_oid: "_" + its name, in its schema,
 * with its arguments.  *name is the gate's own name (palloc'd in cxt),
 * *nargs its number of arguments.  Also used by the processors' gate
 * (processor_owner.c).
 */
Oid
el_gate_body(Oid fn_oid, MemoryContext cxt, char **name, int *nargs)
{
	HeapTuple	tup;
	Form_pg_proc proc;
	List	   *qualified;
	Oid			body;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn_oid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", fn_oid);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	qualified = list_make2(makeString(get_namespace_name(proc->pronamespace)),
						   makeString(psprintf("_%s", NameStr(proc->proname))));
	body = LookupFuncName(qualified, proc->pronargs, proc->proargtypes.values, false);
	*name = MemoryContextStrdup(cxt, NameStr(proc->proname));
	*nargs = proc->pronargs;
	ReleaseSysCache(tup);
	return body;
}

static ElGateCache *
el_gate_lookup(FunctionCallInfo fcinfo)
{
	ElGateCache *cache = (ElGateCache *) fcinfo->flinfo->fn_extra;
	char	   *name;
	int			nargs;
	Oid			impl;

	if (cache != NULL)
		return cache;

	impl = el_gate_body(fcinfo->flinfo->fn_oid, fcinfo->flinfo->fn_mcxt, &name, &nargs);
	cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ElGateCache));
	cache->nargs = nargs;
	cache->moves_group = (strcmp(name, "poll") == 0 ||
						  strcmp(name, "poll_binary") == 0 ||
						  strcmp(name, "commit") == 0 ||
						  strcmp(name, "seek") == 0);
	fmgr_info_cxt(impl, &cache->impl, fcinfo->flinfo->fn_mcxt);
	fcinfo->flinfo->fn_extra = cache;
	return cache;
}

PG_FUNCTION_INFO_V1(el_gate);
Datum
el_gate(PG_FUNCTION_ARGS)
{
	ElGateCache *cache = el_gate_lookup(fcinfo);
	LOCAL_FCINFO(impl_fcinfo, FUNC_MAX_ARGS);
	Oid			saved_caller = el_gate_caller;
	Datum		result;
	int			i;

	/*
	 * On a hot standby, group positions cannot be written: say so, with
	 * where to write them, before the body fails on a lock or a write.
	 */
	if (cache->moves_group)
		el_refuse_in_recovery(EL_USE_GROUP);

	InitFunctionCallInfoData(*impl_fcinfo, &cache->impl, cache->nargs,
							 fcinfo->fncollation, fcinfo->context,
							 fcinfo->resultinfo);
	for (i = 0; i < cache->nargs; i++)
		impl_fcinfo->args[i] = fcinfo->args[i];

	el_gate_caller = GetUserId();
	PG_TRY();
	{
		result = FunctionCallInvoke(impl_fcinfo);
	}
	PG_FINALLY();
	{
		el_gate_caller = saved_caller;
	}
	PG_END_TRY();

	fcinfo->isnull = impl_fcinfo->isnull;
	return result;
}
