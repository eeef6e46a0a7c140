/*-------------------------------------------------------------------------
 *
 * api_sync_group.c
 *	  SyncGroup (key 14), versions 0 to 5: one CALL of the procedure
 *	  eventlog.kafka_sync_group.  The leader's call stores every member's
 *	  assignment; a follower's waits (in PostgreSQL, as JoinGroup does)
 *	  until the leader's has, and gets its own.
 *
 * v3 adds group_instance_id (static membership), v5 the protocol type and
 * name, which must match the group's (INCONSISTENT_GROUP_PROTOCOL) and are
 * returned.  A leader's assignment for a member that is not in the group
 * is ignored; a member the leader left out gets an empty assignment.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

static const char *const sync_sql =
"CALL eventlog.kafka_sync_group($1, $2::pg_catalog.int4, $3, $4, $5, $6,"
" $7::eventlog.kafka_assignment[])";

KHandlerResult
khandle_sync_group(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KSlice		group_id;
	int32_t		generation;
	KSlice		member_id;
	KSlice		instance_id = {NULL, -1};
	KSlice		protocol_type = {NULL, -1};
	KSlice		protocol_name = {NULL, -1};
	int32_t		nassign;
	KBuf		assignments;
	KParams		p;
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		error;
	bool		have_row = false;

	group_id = kr_string_v(r, flex);
	generation = kr_int32(r);
	member_id = kr_string_v(r, flex);
	if (v >= 3)
		instance_id = kr_nullable_string_v(r, flex);
	if (v >= 5)
	{
		protocol_type = kr_nullable_string_v(r, flex);
		protocol_name = kr_nullable_string_v(r, flex);
	}
	nassign = kr_array_len_v(r, flex, flex ? 3 : 6);
	if (nassign > K_MAX_GROUP_ITEMS)
		return kgroup_too_many(conn, "SyncGroup", nassign);
	kb_init(&assignments);
	kb_char(&assignments, '{');
	for (int32_t i = 0; i < nassign && !r->error; i++)
	{
		KRowBuf		row;
		KSlice		mid = kr_string_v(r, flex);
		KSlice		assignment = kr_bytes_v(r, flex);

		kr_tags_v(r, flex);
		if (i > 0)
			kb_char(&assignments, ',');
		krow_begin(&row);
		krow_text(&row, mid);
		krow_bytea(&row, assignment);
		krow_end(&row, &assignments);
		if (!kslice_is_text(mid))
			assignments.error = true;
	}
	kb_char(&assignments, '}');
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		kb_free(&assignments);
		return KH_MALFORMED;
	}
	if (assignments.error && assignments.data == NULL)
		return kgroup_no_memory(conn, "SyncGroup");

	kp_init(&p);
	kp_slice(&p, group_id);
	kp_int(&p, generation);
	kp_slice(&p, member_id);
	kp_slice(&p, instance_id);
	kp_slice(&p, protocol_type);
	kp_slice(&p, protocol_name);
	kp_buf(&p, &assignments);
	if (p.bad)
		error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec_binary(conn, sync_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			error = kgroup_sql_error(sqlstate);
		else if (PQntuples(res) != 1 || PQnfields(res) != 4)
		{
			klog(KLOG_WARNING, "conn %llu (%s): SyncGroup: unexpected result shape",
				 (unsigned long long) conn->id, conn->peer);
			error = KERR_UNKNOWN_SERVER_ERROR;
		}
		else
		{
			error = (int16_t) kpg_int(res, 0, 0);
			have_row = true;
		}
	}

	if (v >= 1)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_int16(w, error);
	if (v >= 5)
	{
		if (have_row && error == KERR_NONE)
		{
			kw_string_v(w, flex, PQgetvalue(res, 0, 1),
						PQgetisnull(res, 0, 1) ? -1 : PQgetlength(res, 0, 1));
			kw_string_v(w, flex, PQgetvalue(res, 0, 2),
						PQgetisnull(res, 0, 2) ? -1 : PQgetlength(res, 0, 2));
		}
		else
		{
			kw_string_v(w, flex, NULL, -1);
			kw_string_v(w, flex, NULL, -1);
		}
	}
	if (have_row && error == KERR_NONE && !PQgetisnull(res, 0, 3))
		kw_bytes_v(w, flex, PQgetvalue(res, 0, 3), PQgetlength(res, 0, 3));
	else
		kw_bytes_v(w, flex, "", 0);
	kw_tags_v(w, flex);
	PQclear(res);
	kp_free(&p);
	return KH_OK;
}
