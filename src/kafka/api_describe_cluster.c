/*-------------------------------------------------------------------------
 *
 * api_describe_cluster.c
 *	  DescribeCluster (key 60), versions 0 and 1: the brokers (every
 *	  gateway of --brokers, else this one), the cluster id (kpg_cluster_id,
 *	  the same as Metadata's), and this gateway as the controller (any
 *	  gateway serves administrative requests, as Metadata says).
 *
 * Only the broker endpoints exist (v1's endpoint type 1): there is no
 * separate controller quorum, so asking for controllers is
 * UNSUPPORTED_ENDPOINT_TYPE.  The cluster's authorized operations, when
 * asked for, are DESCRIBE and DESCRIBE_CONFIGS for everyone, and CREATE
 * for a role that may execute eventlog.create_topic.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "log.h"
#include "server.h"

#include <string.h>

#define KOP_CREATE			(1 << 5)
#define KOP_DESCRIBE		(1 << 8)
#define KOP_DESCRIBE_CONFIGS (1 << 10)
#define KOPS_NOT_REQUESTED	INT32_MIN

static const char *const may_create_sql =
"SELECT pg_catalog.has_function_privilege("
"'eventlog.create_topic(pg_catalog.text, pg_catalog.int4, pg_catalog.interval, pg_catalog.int8,"
" pg_catalog.interval, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.interval,"
" pg_catalog.interval, pg_catalog.interval)', 'EXECUTE')";

KHandlerResult
khandle_describe_cluster(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	int16_t		v = req->api_version;
	bool		want_ops;
	int8_t		endpoint_type = 1;
	int16_t		error = KERR_NONE;
	const char *message = NULL;
	const char *cluster_id;
	int32_t		ops = KOPS_NOT_REQUESTED;

	want_ops = kr_bool(r);
	if (v >= 1)
		endpoint_type = kr_int8(r);
	kr_tags_v(r, true);
	if (!khandler_body_done(req))
		return KH_MALFORMED;

	if (endpoint_type != 1)
	{
		error = KERR_UNSUPPORTED_ENDPOINT_TYPE;
		message = "only brokers can be described: the gateways have no separate controllers";
	}
	cluster_id = kpg_cluster_id(conn);
	if (cluster_id == NULL && error == KERR_NONE)
	{
		error = KERR_UNKNOWN_SERVER_ERROR;
		message = "cannot reach PostgreSQL for the cluster id";
	}
	if (want_ops && error == KERR_NONE)
	{
		char		sqlstate[6];
		PGresult   *res = kpg_exec(conn, may_create_sql, 0, NULL, sqlstate);

		ops = KOP_DESCRIBE | KOP_DESCRIBE_CONFIGS;
		if (res != NULL && PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't')
			ops |= KOP_CREATE;
		PQclear(res);
	}

	kw_int32(w, 0);				/* throttle_time_ms */
	kw_int16(w, error);
	kw_cstring_v(w, true, message);
	if (v >= 1)
		kw_int8(w, endpoint_type);
	kw_cstring_v(w, true, cluster_id ? cluster_id : "");
	kw_int32(w, error == KERR_NONE ? kconf.node_id : -1);	/* controller */
	kw_compact_array_len(w, error == KERR_NONE ? kconf.nbrokers : 0);
	for (int i = 0; i < kconf.nbrokers && error == KERR_NONE; i++)
	{
		kw_int32(w, i);
		kw_cstring_v(w, true, kconf.brokers[i].host);
		kw_int32(w, kconf.brokers[i].port);
		kw_cstring_v(w, true, NULL);	/* rack */
		kw_empty_tagged_fields(w);
	}
	kw_int32(w, ops);
	kw_empty_tagged_fields(w);
	return KH_OK;
}
