/*-------------------------------------------------------------------------
 *
 * api_leave_group.c
 *	  LeaveGroup (key 13), versions 0 to 5: eventlog.kafka_leave_group
 *	  removes members and starts a rebalance of the others.  Up to v2 one
 *	  member (by member id); from v3 a batch, each by member id or by group
 *	  instance id with an empty member id (KIP-345), each with its own
 *	  error code; v5 adds a reason per member (logged at debug level).
 *
 * The response's top-level error is the group's (INVALID_GROUP_ID,
 * GROUP_AUTHORIZATION_FAILED, or the query's) when every member got it,
 * as Kafka's coordinator answers a request it refuses as a whole; up to
 * v2 it is the one member's error.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

static const char *const leave_sql =
"SELECT member_id, group_instance_id, error_code"
"  FROM eventlog.kafka_leave_group($1, $2::eventlog.kafka_member_identity[])";

typedef struct LgMember
{
	KSlice		member_id;
	KSlice		instance_id;
} LgMember;

KHandlerResult
khandle_leave_group(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KSlice		group_id;
	int32_t		n = 1;
	LgMember	one;
	LgMember   *members = &one;
	KBuf		arr;
	KParams		p;
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		error = KERR_NONE;
	int16_t		query_error = KERR_NONE;

	group_id = kr_string_v(r, flex);
	if (v <= 2)
	{
		one.member_id = kr_string_v(r, flex);
		one.instance_id = (KSlice) {NULL, -1};
	}
	else
	{
		n = kr_array_len_v(r, flex, flex ? 3 : 4);
		if (n > K_MAX_GROUP_ITEMS)
			return kgroup_too_many(conn, "LeaveGroup", n);
		if (n < 0)
			return KH_MALFORMED;
		members = n > 0 ? calloc((size_t) n, sizeof(LgMember)) : NULL;
		if (n > 0 && members == NULL)
			return kgroup_no_memory(conn, "LeaveGroup");
		for (int32_t i = 0; i < n && !r->error; i++)
		{
			members[i].member_id = kr_string_v(r, flex);
			members[i].instance_id = kr_nullable_string_v(r, flex);
			if (v >= 5)
				(void) kr_nullable_string_v(r, flex);	/* reason */
			kr_tags_v(r, flex);
		}
	}
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		if (members != &one)
			free(members);
		return KH_MALFORMED;
	}

	kb_init(&arr);
	kb_char(&arr, '{');
	for (int32_t i = 0; i < n; i++)
	{
		KRowBuf		row;

		if (i > 0)
			kb_char(&arr, ',');
		krow_begin(&row);
		krow_text(&row, members[i].member_id);
		krow_text(&row, members[i].instance_id);
		krow_end(&row, &arr);
		if (!kslice_is_text(members[i].member_id) || !kslice_is_text(members[i].instance_id))
			arr.error = true;
	}
	kb_char(&arr, '}');
	kp_init(&p);
	kp_slice(&p, group_id);
	kp_buf(&p, &arr);
	if (p.bad)
		query_error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec(conn, leave_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			query_error = kgroup_sql_error(sqlstate);
		else if (PQntuples(res) != n)
		{
			klog(KLOG_WARNING, "conn %llu (%s): LeaveGroup: %d results for %d members",
				 (unsigned long long) conn->id, conn->peer, PQntuples(res), n);
			query_error = KERR_UNKNOWN_SERVER_ERROR;
		}
	}
	kp_free(&p);

	if (query_error != KERR_NONE)
		error = query_error;
	else if (n > 0)
	{
		/* The group's error if every member got it (see above). */
		int16_t		first = (int16_t) atoi(PQgetvalue(res, 0, 2));

		error = first;
		for (int32_t i = 1; i < n; i++)
			if (atoi(PQgetvalue(res, i, 2)) != first)
				error = KERR_NONE;
		if (v >= 3 && error != KERR_INVALID_GROUP_ID && error != KERR_GROUP_AUTHORIZATION_FAILED)
			error = KERR_NONE;
	}

	if (v >= 1)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_int16(w, error);
	if (v >= 3)
	{
		kw_array_len_v(w, flex, n);
		for (int32_t i = 0; i < n && !w->error; i++)
		{
			kw_string_v(w, flex, (const char *) members[i].member_id.ptr, members[i].member_id.len);
			kw_string_v(w, flex, (const char *) members[i].instance_id.ptr, members[i].instance_id.len);
			kw_int16(w, query_error != KERR_NONE ? query_error :
					 (int16_t) atoi(PQgetvalue(res, i, 2)));
			kw_tags_v(w, flex);
		}
	}
	kw_tags_v(w, flex);
	PQclear(res);
	if (members != &one)
		free(members);
	return KH_OK;
}
