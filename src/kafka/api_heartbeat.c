/*-------------------------------------------------------------------------
 *
 * api_heartbeat.c
 *	  Heartbeat (key 12), versions 0 to 4: eventlog.kafka_heartbeat keeps
 *	  a member alive and says whether the group is rebalancing
 *	  (REBALANCE_IN_PROGRESS asks the member to rejoin).  v3 adds
 *	  group_instance_id (static membership, FENCED_INSTANCE_ID).
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"
#include "log.h"

static const char *const heartbeat_sql =
"SELECT eventlog.kafka_heartbeat($1, $2::pg_catalog.int4, $3, $4)";

KHandlerResult
khandle_heartbeat(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KSlice		group_id;
	int32_t		generation;
	KSlice		member_id;
	KSlice		instance_id = {NULL, -1};
	KParams		p;
	char		sqlstate[6];
	PGresult   *res;
	int16_t		error;

	group_id = kr_string_v(r, flex);
	generation = kr_int32(r);
	member_id = kr_string_v(r, flex);
	if (v >= 3)
		instance_id = kr_nullable_string_v(r, flex);
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
		return KH_MALFORMED;

	kp_init(&p);
	kp_slice(&p, group_id);
	kp_int(&p, generation);
	kp_slice(&p, member_id);
	kp_slice(&p, instance_id);
	if (p.bad)
		error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec_binary(conn, heartbeat_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			error = kgroup_sql_error(sqlstate);
		else
			error = PQntuples(res) == 1 ? (int16_t) kpg_int(res, 0, 0) : KERR_UNKNOWN_SERVER_ERROR;
		PQclear(res);
	}
	kp_free(&p);

	if (v >= 1)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_int16(w, error);
	kw_tags_v(w, flex);
	return KH_OK;
}
