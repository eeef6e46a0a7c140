/*-------------------------------------------------------------------------
 *
 * api_join_group.c
 *	  JoinGroup (key 11), versions 0 to 9: one CALL of the procedure
 *	  eventlog.kafka_join_group, which waits (in PostgreSQL, committing
 *	  while it sleeps) until the group's join phase completes.
 *
 * The connection's thread blocks in the CALL for up to the rebalance
 * timeout, as a Kafka broker holds a JoinGroup: the client sends nothing
 * else on this connection meanwhile.  Shutdown cancels the CALL (it is a
 * query in flight, see main.c), and the client gets
 * COORDINATOR_NOT_AVAILABLE if the answer can still go out.  From v4 a
 * member without an id gets MEMBER_ID_REQUIRED and its id first (KIP-394,
 * require_known_member_id); v5 adds static membership (group_instance_id,
 * KIP-345); v7 the protocol type in the response; v8 a reason (logged at
 * debug level, not stored); v9 skip_assignment, always false: the leader
 * always computes the assignment.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

static const char *const join_sql =
"CALL eventlog.kafka_join_group($1, $2, $3, $4, $5::eventlog.kafka_protocol[],"
" $6::pg_catalog.int4, $7::pg_catalog.int4, $8, $9, $10::pg_catalog.bool)";

KHandlerResult
khandle_join_group(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KSlice		group_id;
	int32_t		session_timeout;
	int32_t		rebalance_timeout = -1;
	KSlice		member_id;
	KSlice		instance_id = {NULL, -1};
	KSlice		protocol_type;
	int32_t		nprotocols;
	KBuf		protocols;
	KParams		p;
	char		host[128];
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		error;
	KHandlerResult result = KH_OK;

	group_id = kr_string_v(r, flex);
	session_timeout = kr_int32(r);
	if (v >= 1)
		rebalance_timeout = kr_int32(r);
	member_id = kr_string_v(r, flex);
	if (v >= 5)
		instance_id = kr_nullable_string_v(r, flex);
	protocol_type = kr_string_v(r, flex);
	nprotocols = kr_array_len_v(r, flex, flex ? 3 : 6);
	if (nprotocols > K_MAX_GROUP_ITEMS)
		return kgroup_too_many(conn, "JoinGroup", nprotocols);
	kb_init(&protocols);
	kb_char(&protocols, '{');
	for (int32_t i = 0; i < nprotocols && !r->error; i++)
	{
		KRowBuf		row;
		KSlice		name = kr_string_v(r, flex);
		KSlice		metadata = kr_bytes_v(r, flex);

		kr_tags_v(r, flex);
		if (i > 0)
			kb_char(&protocols, ',');
		krow_begin(&row);
		krow_text(&row, name);
		krow_bytea(&row, metadata);
		krow_end(&row, &protocols);
		if (!kslice_is_text(name))
			protocols.error = true;
	}
	kb_char(&protocols, '}');
	if (v >= 8)
	{
		KSlice		reason = kr_nullable_string_v(r, flex);

		if (!r->error && !KSLICE_IS_NULL(reason) && klog_enabled(KLOG_DEBUG))
		{
			char		buf[256];

			klog(KLOG_DEBUG, "conn %llu (%s): JoinGroup reason: %s",
				 (unsigned long long) conn->id, conn->peer,
				 klog_printable(reason.ptr, reason.len, buf, sizeof(buf)));
		}
	}
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		kb_free(&protocols);
		return KH_MALFORMED;
	}
	if (protocols.error && protocols.data == NULL)
		return kgroup_no_memory(conn, "JoinGroup");

	kgroup_client_host(conn, host, sizeof(host));
	kp_init(&p);
	kp_slice(&p, group_id);
	kp_slice(&p, member_id);
	kp_slice(&p, instance_id);
	kp_slice(&p, protocol_type);
	kp_buf(&p, &protocols);
	kp_int(&p, session_timeout);
	kp_int(&p, rebalance_timeout);
	kp_slice(&p, KSLICE_IS_NULL(req->client_id) ? (KSlice) {(const uint8_t *) "", 0} : req->client_id);
	kp_static(&p, host);
	/* KIP-394: from v4 a new member must come back with its id. */
	kp_static(&p, v >= 4 ? "true" : "false");
	if (p.bad)
		error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec_binary(conn, join_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			error = kgroup_sql_error(sqlstate);
		else if (PQntuples(res) != 1 || PQnfields(res) != 7)
		{
			klog(KLOG_WARNING, "conn %llu (%s): JoinGroup: unexpected result shape",
				 (unsigned long long) conn->id, conn->peer);
			error = KERR_UNKNOWN_SERVER_ERROR;
		}
		else
			error = (int16_t) kpg_int(res, 0, 0);
	}

	if (v >= 2)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_int16(w, error);
	if (res != NULL && PQntuples(res) == 1 && PQnfields(res) == 7)
	{
		KBin		members;
		int32_t		nmembers;

		kw_int32(w, PQgetisnull(res, 0, 1) ? -1 : kpg_int(res, 0, 1));
		if (v >= 7)
			kw_string_v(w, flex, PQgetvalue(res, 0, 2),
						PQgetisnull(res, 0, 2) ? -1 : PQgetlength(res, 0, 2));
		kw_string_v(w, flex, PQgetvalue(res, 0, 3),
					PQgetisnull(res, 0, 3) ? (v >= 7 ? -1 : 0) : PQgetlength(res, 0, 3));
		kw_string_v(w, flex, PQgetvalue(res, 0, 4), PQgetlength(res, 0, 4));
		if (v >= 9)
			kw_bool(w, false);	/* skip_assignment */
		kw_string_v(w, flex, PQgetvalue(res, 0, 5), PQgetlength(res, 0, 5));
		kbin_init(&members, PQgetvalue(res, 0, 6),
				  PQgetisnull(res, 0, 6) ? 0 : PQgetlength(res, 0, 6));
		nmembers = PQgetisnull(res, 0, 6) ? 0 : kbin_array_begin(&members);
		if (nmembers < 0)
		{
			klog(KLOG_WARNING, "conn %llu (%s): JoinGroup: malformed member list from PostgreSQL: closing",
				 (unsigned long long) conn->id, conn->peer);
			result = KH_CLOSE;
			goto done;
		}
		kw_array_len_v(w, flex, nmembers);
		for (int32_t i = 0; i < nmembers && !w->error; i++)
		{
			KBin		row;
			KSlice		mid;
			KSlice		inst;
			KSlice		meta;

			if (kbin_row_begin(&members, &row) != 3)
			{
				result = KH_CLOSE;
				goto done;
			}
			mid = kbin_field(&row);
			inst = kbin_field(&row);
			meta = kbin_field(&row);
			if (row.error)
			{
				result = KH_CLOSE;
				goto done;
			}
			kw_string_v(w, flex, (const char *) mid.ptr, mid.len < 0 ? 0 : mid.len);
			if (v >= 5)
				kw_string_v(w, flex, (const char *) inst.ptr, inst.len);
			kw_bytes_v(w, flex, meta.ptr, meta.len < 0 ? 0 : meta.len);
			kw_tags_v(w, flex);
		}
	}
	else
	{
		kw_int32(w, -1);		/* generation_id */
		if (v >= 7)
			kw_string_v(w, flex, NULL, -1);
		kw_string_v(w, flex, v >= 7 ? NULL : "", v >= 7 ? -1 : 0);
		kw_string_v(w, flex, "", 0);	/* leader */
		if (v >= 9)
			kw_bool(w, false);
		kw_string_v(w, flex, (const char *) member_id.ptr, member_id.len);
		kw_array_len_v(w, flex, 0);
	}
	kw_tags_v(w, flex);

done:
	if (result == KH_CLOSE)
		klog(KLOG_WARNING, "conn %llu (%s): JoinGroup: cannot read PostgreSQL's answer: closing",
			 (unsigned long long) conn->id, conn->peer);
	PQclear(res);
	kp_free(&p);
	return result;
}
