/*-------------------------------------------------------------------------
 *
 * agg_state.c
 *	  Window states of aggregates whose transition state is internal
 *	  (stddev of numeric, sum and avg of bigint, ...), kept by a window
 *	  processor as sealed bytea (docs/streams.md, "Aggregates").
 *
 * An internal state is a pointer, not a value: only the aggregate's serial
 * function can turn it into bytes, and only its deserial function back.
 * Both are C functions that run inside an aggregate (AggCheckCallContext),
 * so a processor's aggregates (sql/install/streams_windows.sql,
 * _processor_create_state) call them through the two functions here, which
 * take the real functions from their own aggregate's pg_aggregate row
 * (AggGetAggref(fcinfo)->aggfnoid):
 *
 *	_agg_state_seal(internal) -> bytea, a final function: the state through
 *		the serial function, sealed;
 *	_agg_state_merge(internal, bytea) -> internal, a transition function: a
 *		sealed state checked, through the deserial function, and combined
 *		into the aggregate's state with the combine function.
 *
 * Why the seal.  The window table holding the bytes is its processor's
 * owner's, who can write anything into it; and deserial functions trust
 * their input (PostgreSQL 16's array_agg_deserialize reads the element
 * type from the bytes, numeric's does not check its digits).  So a sealed
 * state is
 *
 *	major version (1 byte) | HMAC-SHA256 (32 bytes) | the serial function's bytes
 *
 * The first byte is the major version of the PostgreSQL server that wrote
 * the state (15 for 15.x).  A serial format is a private matter of one
 * server version, as parallel query passes states between processes of one
 * binary; PostgreSQL 16 changed numeric's, and reads the old bytes without
 * a check.  A state written by another major version (a dump restored into
 * a newer server, pg_upgrade) is refused before its bytes are read, with
 * its own error: its processor is reset, and computes it again.
 *
 * where the HMAC, keyed with the database's 32 secret bytes in
 * eventlog.processor_state_key (no privileges for PUBLIC; read here with
 * table_open, not as the caller), covers a context and the bytes.  The
 * context binds the serial function (schema-qualified name) and the
 * aggregate's "slot": processor_<id>_<i> for the processor's partial,
 * combine and final aggregates of its aggregate i, else the aggregate's
 * own qualified name.  A merge recomputes the HMAC with its own
 * aggregate's serial function and slot and refuses anything else before a
 * deserial function sees a byte: bytes changed, cut, or taken from
 * another aggregate, processor or serial function.  Names rather than
 * OIDs: function and database OIDs change in a dump and restore (and
 * pg_upgrade before 15), which would make every stored state unreadable;
 * the key is per database already, and a name cannot be pointed at
 * another C function but by a superuser.
 *
 * Who can reach these functions: they take internal, so SQL can call them
 * only through an aggregate, and only a superuser may create an aggregate
 * whose state is internal (CREATE AGGREGATE refuses anyone else).  Even
 * so, an aggregate with _agg_state_seal as final function and some other
 * serial function seals bytes only that serial function's deserial
 * function will be given; pairing a serial function with the deserial
 * function of the same aggregate is what PostgreSQL's own parallel
 * aggregation does with the states it passes between processes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "pg_eventlog.h"

PG_FUNCTION_INFO_V1(el_agg_state_seal);
PG_FUNCTION_INFO_V1(el_agg_state_merge);

#define EL_STATE_KEY_TABLE	"processor_state_key"
#define EL_STATE_KEY_LEN	32
#define EL_STATE_MAC_LEN	PG_SHA256_DIGEST_LENGTH
#define EL_STATE_VERSION	1		/* of the format, in the HMAC's context */
#define EL_STATE_MAJOR		(PG_VERSION_NUM / 10000)	/* the first byte */
#define EL_STATE_HEADER		(1 + EL_STATE_MAC_LEN)

/* What a support function finds once per query (fn_extra). */
typedef struct ElAggStateFns
{
	Oid			aggfnoid;		/* the aggregate calling */
	FmgrInfo	serialfn;
	FmgrInfo	deserialfn;
	FmgrInfo	combinefn;
	StringInfoData context;		/* what the HMAC covers before the bytes */
	char	   *aggname;		/* for messages */
	uint8		key[EL_STATE_KEY_LEN];
} ElAggStateFns;

/*
 * The database's key, read as the extension sees it, whatever the
 * caller's privileges (the table grants PUBLIC nothing).
 */
static void
el_read_state_key(uint8 *key)
{
	Oid			nsp = get_namespace_oid(EL_SCHEMA_NAME, true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid(EL_STATE_KEY_TABLE, nsp) : InvalidOid;
	Relation	rel;
	Snapshot	snap;
	TableScanDesc scan;
	TupleTableSlot *slot;
	AttrNumber	att;
	bool		found = false;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s.%s\" does not exist", EL_SCHEMA_NAME, EL_STATE_KEY_TABLE),
				 errdetail("Window states of aggregates with an internal state are sealed with the key that table holds."),
				 errhint("Update the extension: ALTER EXTENSION pg_eventlog UPDATE.")));
	rel = table_open(relid, AccessShareLock);
	att = get_attnum(relid, "key");
	if (att == InvalidAttrNumber)
		elog(ERROR, "table \"%s.%s\" has no column \"key\"", EL_SCHEMA_NAME, EL_STATE_KEY_TABLE);
	/*
	 * The statement's snapshot (a parallel worker has the leader's): the
	 * key is made in the transaction that creates the first processor
	 * needing it, before any statement of its steps.
	 */
	snap = RegisterSnapshot(ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot());
	scan = table_beginscan(rel, snap, 0, NULL);
	slot = table_slot_create(rel, NULL);
	while (!found && table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, att, &isnull);
		bytea	   *b;

		if (isnull)
			continue;
		b = DatumGetByteaPP(d);
		if (VARSIZE_ANY_EXHDR(b) != EL_STATE_KEY_LEN)
			continue;
		memcpy(key, VARDATA_ANY(b), EL_STATE_KEY_LEN);
		found = true;
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snap);
	table_close(rel, AccessShareLock);
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the key sealing window states is missing"),
				 errdetail("Table \"%s.%s\" holds no key of %d bytes; it is made when the first window processor with an aggregate whose state is internal is created.",
						   EL_SCHEMA_NAME, EL_STATE_KEY_TABLE, EL_STATE_KEY_LEN),
				 errhint("Restore the table's row from a dump of this database; without it, drop and create again the processors whose aggregates have an internal state.")));
}

/*
 * The aggregate's slot: processor_<id>_<i> for a processor's
 * processor_<id>_(partial|combine|final)_<i>, so that its three
 * aggregates accept each other's states and nothing else does; the
 * aggregate's own name otherwise.
 */
static char *
el_agg_slot(const char *name)
{
	static const char *const roles[] = {"_partial_", "_combine_", "_final_"};
	const char *p = name;
	int			r;

	if (strncmp(p, "processor_", 10) != 0)
		return pstrdup(name);
	p += 10;
	if (!isdigit((unsigned char) *p))
		return pstrdup(name);
	while (isdigit((unsigned char) *p))
		p++;
	for (r = 0; r < lengthof(roles); r++)
	{
		size_t		n = strlen(roles[r]);
		const char *q = p + n;

		if (strncmp(p, roles[r], n) != 0 || !isdigit((unsigned char) *q))
			continue;
		while (isdigit((unsigned char) *q))
			q++;
		if (*q != '\0')
			break;
		return psprintf("%.*s_%s", (int) (p - name), name, p + n);
	}
	return pstrdup(name);
}

/*
 * The calling aggregate's functions, its context and the key; refuses a
 * call from anywhere but an aggregate's support function.
 */
static ElAggStateFns *
el_agg_state_fns(FunctionCallInfo fcinfo)
{
	ElAggStateFns *f = (ElAggStateFns *) fcinfo->flinfo->fn_extra;
	Aggref	   *aggref;
	HeapTuple	tup;
	Form_pg_aggregate agg;
	MemoryContext old;
	char	   *schema;
	char	   *name;

	aggref = AggCheckCallContext(fcinfo, NULL) == AGG_CONTEXT_AGGREGATE ? AggGetAggref(fcinfo) : NULL;
	if (aggref == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("window state functions run only as support functions of an aggregate"),
				 errdetail("They call the serial, deserial and combine functions of the aggregate that calls them; they are never called directly nor by a window function.")));
	if (f != NULL && f->aggfnoid == aggref->aggfnoid)
		return f;

	old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	f = palloc0(sizeof(ElAggStateFns));
	f->aggfnoid = aggref->aggfnoid;
	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggref->aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggref->aggfnoid);
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	name = get_func_name(aggref->aggfnoid);
	schema = get_namespace_name(get_func_namespace(aggref->aggfnoid));
	f->aggname = quote_qualified_identifier(schema, name);
	if (agg->aggtranstype != INTERNALOID || !OidIsValid(agg->aggserialfn)
		|| !OidIsValid(agg->aggdeserialfn) || !OidIsValid(agg->aggcombinefn))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate \"%s\" cannot keep a sealed window state", f->aggname),
				 errdetail("Sealed window states are for aggregates whose state is internal, with a combine, a serial and a deserial function.")));
	fmgr_info_cxt(agg->aggserialfn, &f->serialfn, fcinfo->flinfo->fn_mcxt);
	fmgr_info_cxt(agg->aggdeserialfn, &f->deserialfn, fcinfo->flinfo->fn_mcxt);
	fmgr_info_cxt(agg->aggcombinefn, &f->combinefn, fcinfo->flinfo->fn_mcxt);

	/*
	 * The context: a tag with the format's version, the serial function,
	 * the slot, each ended by a NUL (none holds one), so that no two
	 * contexts run into each other.
	 */
	initStringInfo(&f->context);
	appendStringInfo(&f->context, "pg_eventlog window state %d, PostgreSQL %d",
					 EL_STATE_VERSION, EL_STATE_MAJOR);
	appendStringInfoChar(&f->context, '\0');
	appendStringInfoString(&f->context, format_procedure_qualified(agg->aggserialfn));
	appendStringInfoChar(&f->context, '\0');
	appendStringInfoString(&f->context, quote_qualified_identifier(schema, el_agg_slot(name)));
	appendStringInfoChar(&f->context, '\0');
	ReleaseSysCache(tup);
	el_read_state_key(f->key);
	MemoryContextSwitchTo(old);
	fcinfo->flinfo->fn_extra = f;
	return f;
}

#if PG_VERSION_NUM >= 150000
#define el_hmac_error(ctx) pg_hmac_error(ctx)
#else
#define el_hmac_error(ctx) "HMAC failed"
#endif

/* The HMAC of state bytes "data" in f's context. */
static void
el_state_mac(ElAggStateFns *f, const char *data, size_t len, uint8 *mac)
{
	pg_hmac_ctx *ctx = pg_hmac_create(PG_SHA256);

	if (ctx == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	if (pg_hmac_init(ctx, f->key, EL_STATE_KEY_LEN) < 0
		|| pg_hmac_update(ctx, (const uint8 *) f->context.data, f->context.len) < 0
		|| pg_hmac_update(ctx, (const uint8 *) data, len) < 0
		|| pg_hmac_final(ctx, mac, EL_STATE_MAC_LEN) < 0)
	{
		const char *why = el_hmac_error(ctx);

		pg_hmac_free(ctx);
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute the seal of a window state: %s", why)));
	}
	pg_hmac_free(ctx);
}

/*
 * _agg_state_seal(internal) RETURNS bytea, STRICT: the final function of a
 * processor's partial and combine aggregates.
 */
Datum
el_agg_state_seal(PG_FUNCTION_ARGS)
{
	ElAggStateFns *f = el_agg_state_fns(fcinfo);
	LOCAL_FCINFO(sfc, 1);
	Datum		d;
	bytea	   *raw;
	bytea	   *out;
	size_t		n;

	/* As nodeAgg calls a serial function: the aggregate's context. */
	InitFunctionCallInfoData(*sfc, &f->serialfn, 1, InvalidOid, fcinfo->context, NULL);
	sfc->args[0].value = PG_GETARG_DATUM(0);
	sfc->args[0].isnull = false;
	d = FunctionCallInvoke(sfc);
	if (sfc->isnull)
		PG_RETURN_NULL();
	raw = DatumGetByteaPP(d);
	n = VARSIZE_ANY_EXHDR(raw);
	out = palloc(VARHDRSZ + EL_STATE_HEADER + n);
	SET_VARSIZE(out, VARHDRSZ + EL_STATE_HEADER + n);
	((uint8 *) VARDATA(out))[0] = EL_STATE_MAJOR;
	memcpy(VARDATA(out) + EL_STATE_HEADER, VARDATA_ANY(raw), n);
	el_state_mac(f, VARDATA_ANY(raw), n, (uint8 *) VARDATA(out) + 1);
	PG_RETURN_BYTEA_P(out);
}

/*
 * _agg_state_merge(internal, bytea) RETURNS internal, not strict: the
 * transition function of a processor's combine and final aggregates.  A
 * NULL state (no records) changes nothing.
 */
Datum
el_agg_state_merge(PG_FUNCTION_ARGS)
{
	ElAggStateFns *f = el_agg_state_fns(fcinfo);
	bytea	   *sealed;
	size_t		n;
	uint8		mac[EL_STATE_MAC_LEN];
	uint8		diff = 0;
	bytea	   *raw;
	Datum		state;
	LOCAL_FCINFO(dfc, 2);
	LOCAL_FCINFO(cfc, 2);
	int			k;

	if (PG_ARGISNULL(1))
	{
		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	}
	sealed = PG_GETARG_BYTEA_PP(1);
	n = VARSIZE_ANY_EXHDR(sealed);
	/* a major version (10 to 99): another's state; anything else, bytes changed */
	if (n >= EL_STATE_HEADER && ((const uint8 *) VARDATA_ANY(sealed))[0] != EL_STATE_MAJOR
		&& ((const uint8 *) VARDATA_ANY(sealed))[0] >= 10 && ((const uint8 *) VARDATA_ANY(sealed))[0] <= 99)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("window state of processor aggregate \"%s\" was written by PostgreSQL %d", f->aggname,
						((const uint8 *) VARDATA_ANY(sealed))[0]),
				 errdetail("This server is PostgreSQL %d; a state is kept in the serial format of the major version that wrote it, which another one may read differently.",
						   EL_STATE_MAJOR),
				 errhint("Reset the processor (eventlog.reset_processor) to compute its windows again from its source topic.")));
	if (n >= EL_STATE_HEADER && ((const uint8 *) VARDATA_ANY(sealed))[0] == EL_STATE_MAJOR)
	{
		el_state_mac(f, VARDATA_ANY(sealed) + EL_STATE_HEADER, n - EL_STATE_HEADER, mac);
		/* in constant time: nothing to learn from how long a guess took */
		for (k = 0; k < EL_STATE_MAC_LEN; k++)
			diff |= mac[k] ^ ((const uint8 *) VARDATA_ANY(sealed))[1 + k];
	}
	else
		diff = 1;
	if (diff != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("window state of processor aggregate \"%s\" is not one this extension wrote", f->aggname),
				 errdetail("Its seal does not match its bytes: the state was changed, cut short, or copied from another aggregate or processor since the processor wrote it."),
				 errhint("Reset the processor (eventlog.reset_processor) to compute its windows again from its source topic.")));

	/* The bytes without the header, as the serial function wrote them. */
	raw = palloc(VARHDRSZ + n - EL_STATE_HEADER);
	SET_VARSIZE(raw, VARHDRSZ + n - EL_STATE_HEADER);
	memcpy(VARDATA(raw), VARDATA_ANY(sealed) + EL_STATE_HEADER, n - EL_STATE_HEADER);

	/*
	 * As nodeAgg deserializes and combines: in the current (per-input
	 * tuple) memory, with the AggState as context, so that the combine
	 * function's AggCheckCallContext finds the aggregate's memory context
	 * to keep the combined state in.  The deserial function's second
	 * argument is a dummy.
	 */
	InitFunctionCallInfoData(*dfc, &f->deserialfn, 2, InvalidOid, fcinfo->context, NULL);
	dfc->args[0].value = PointerGetDatum(raw);
	dfc->args[0].isnull = false;
	dfc->args[1].value = PointerGetDatum(NULL);
	dfc->args[1].isnull = false;
	state = FunctionCallInvoke(dfc);

	InitFunctionCallInfoData(*cfc, &f->combinefn, 2, PG_GET_COLLATION(), fcinfo->context, NULL);
	cfc->args[0].value = PG_ARGISNULL(0) ? (Datum) 0 : PG_GETARG_DATUM(0);
	cfc->args[0].isnull = PG_ARGISNULL(0);
	cfc->args[1].value = state;
	cfc->args[1].isnull = dfc->isnull;
	state = FunctionCallInvoke(cfc);
	if (cfc->isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(state);
}
