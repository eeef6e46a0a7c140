/*-------------------------------------------------------------------------
 *
 * api_offset_delete.c
 *	  OffsetDelete (key 47), version 0: eventlog.kafka_offset_delete
 *	  forgets the group's positions in partitions of topics its members do
 *	  not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).  A group's
 *	  error (GROUP_ID_NOT_FOUND, GROUP_AUTHORIZATION_FAILED,
 *	  NON_EMPTY_GROUP...) is the top-level one, with no topics, as Kafka
 *	  answers.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

static const char *const delete_sql =
"SELECT error_code, partition_error_code"
"  FROM eventlog.kafka_offset_delete($1, $2::eventlog.kafka_topic_partition[])";

KHandlerResult
khandle_offset_delete(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	KReader		again;
	KSlice		group_id;
	int32_t		ntopics;
	int32_t		nparts = 0;
	KBuf		arr;
	KParams		p;
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		error = KERR_NONE;

	group_id = kr_string(r);
	ntopics = kr_array_len(r, 6);
	if (ntopics > K_MAX_GROUP_ITEMS)
		return kgroup_too_many(conn, "OffsetDelete", ntopics);
	again = *r;
	kb_init(&arr);
	kb_char(&arr, '{');
	for (int32_t t = 0; t < ntopics && !r->error; t++)
	{
		KSlice		name = kr_string(r);
		int32_t		np = kr_array_len(r, 4);

		if (!kslice_is_text(name))
			arr.error = true;
		for (int32_t i = 0; i < np && !r->error; i++)
		{
			KRowBuf		row;

			if (nparts++ > 0)
				kb_char(&arr, ',');
			krow_begin(&row);
			krow_text(&row, name);
			krow_int(&row, kr_int32(r));
			krow_end(&row, &arr);
		}
		if (nparts > K_MAX_GROUP_ITEMS)
		{
			kb_free(&arr);
			return kgroup_too_many(conn, "OffsetDelete", nparts);
		}
	}
	kb_char(&arr, '}');
	if (!khandler_body_done(req) || ntopics < 0)
	{
		kb_free(&arr);
		return KH_MALFORMED;
	}

	kp_init(&p);
	kp_slice(&p, group_id);
	kp_buf(&p, &arr);
	if (p.bad)
		error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec(conn, delete_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			error = kgroup_sql_error(sqlstate);
		else if (PQntuples(res) >= 1 && PQgetisnull(res, 0, 1))
			error = (int16_t) atoi(PQgetvalue(res, 0, 0));	/* the group's */
		else if (PQntuples(res) != nparts)
		{
			klog(KLOG_WARNING, "conn %llu (%s): OffsetDelete: %d results for %d partitions",
				 (unsigned long long) conn->id, conn->peer, PQntuples(res), nparts);
			error = KERR_UNKNOWN_SERVER_ERROR;
		}
	}
	kp_free(&p);

	kw_int16(w, error);
	kw_int32(w, 0);				/* throttle_time_ms */
	if (error != KERR_NONE)
		kw_array_len(w, 0);
	else
	{
		int32_t		k = 0;

		kw_array_len(w, ntopics);
		for (int32_t t = 0; t < ntopics && !w->error; t++)
		{
			KSlice		name = kr_string(&again);
			int32_t		np = kr_array_len(&again, 4);

			kw_string(w, (const char *) name.ptr, name.len);
			kw_array_len(w, np);
			for (int32_t i = 0; i < np; i++, k++)
			{
				kw_int32(w, kr_int32(&again));
				kw_int16(w, (int16_t) atoi(PQgetvalue(res, k, 1)));
			}
		}
	}
	PQclear(res);
	return KH_OK;
}
