/*-------------------------------------------------------------------------
 *
 * api_group_admin.c
 *	  The administrative group APIs, each one call of the extension's SQL:
 *	  DescribeGroups (key 15, versions 0 to 5: eventlog.kafka_describe_groups),
 *	  ListGroups (key 16, versions 0 to 4: eventlog.kafka_list_groups, v4
 *	  with the states filter) and DeleteGroups (key 42, versions 0 to 2:
 *	  eventlog.kafka_delete_groups).
 *
 * A group is what Kafka would see: one with a coordinator state, or with
 * committed positions only (Empty, as Kafka shows a group that only
 * commits), SQL consumers' groups included; the role sees and may delete
 * the groups whose topics it may consume.  DescribeGroups' authorized
 * operations (v3+, if asked) are READ, DESCRIBE and DELETE for a group the
 * role may use: its privileges are the topics'.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

#define KOP(code)			(1 << (code))
#define KOPS_GROUP			(KOP(3) | KOP(6) | KOP(8))	/* READ, DELETE, DESCRIBE */
#define KOPS_NOT_REQUESTED	INT32_MIN

static const char *const describe_sql =
"SELECT group_name, error_code, state, protocol_type, protocol_data, members"
"  FROM eventlog.kafka_describe_groups($1::pg_catalog.text[])";

static const char *const list_sql =
"SELECT group_name, protocol_type, state"
"  FROM eventlog.kafka_list_groups($1::pg_catalog.text[])";

static const char *const delete_sql =
"SELECT error_code FROM eventlog.kafka_delete_groups($1::pg_catalog.text[])";

/*
 * Reads an array of strings into a text[] parameter (in the request's
 * order); *n is its count (-1 for null).  False if there are too many.
 */
static bool
read_names(KReader *r, bool flex, KBuf *arr, int32_t *n)
{
	*n = kr_array_len_v(r, flex, 1);
	if (*n > K_MAX_GROUP_ITEMS)
		return false;
	kb_init(arr);
	kb_char(arr, '{');
	for (int32_t i = 0; i < *n && !r->error; i++)
	{
		KSlice		s = kr_string_v(r, flex);

		if (i > 0)
			kb_char(arr, ',');
		/* A name cut short is a null slice: the body is malformed. */
		if (r->error || KSLICE_IS_NULL(s) || !kslice_is_text(s))
			arr->error = true;
		else
			kb_quoted(arr, (const char *) s.ptr, (size_t) s.len);
	}
	kb_char(arr, '}');
	return true;
}

static void
write_empty_group(KWriter *w, bool flex, int16_t v, KSlice name, int16_t error)
{
	kw_int16(w, error);
	kw_string_v(w, flex, (const char *) name.ptr, name.len);
	kw_string_v(w, flex, "Dead", 4);
	kw_string_v(w, flex, "", 0);
	kw_string_v(w, flex, "", 0);
	kw_array_len_v(w, flex, 0);
	if (v >= 3)
		kw_int32(w, KOPS_NOT_REQUESTED);
	kw_tags_v(w, flex);
}

KHandlerResult
khandle_describe_groups(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	KReader		again;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KBuf		arr;
	int32_t		n;
	bool		want_ops = false;
	KParams		p;
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		error = KERR_NONE;
	KHandlerResult result = KH_OK;

	again = *r;
	if (!read_names(r, flex, &arr, &n))
		return kgroup_too_many(conn, "DescribeGroups", n);
	if (v >= 3)
		want_ops = kr_bool(r);
	kr_tags_v(r, flex);
	if (!khandler_body_done(req) || n < 0)
	{
		kb_free(&arr);
		return KH_MALFORMED;
	}
	(void) kr_array_len_v(&again, flex, 1);

	kp_init(&p);
	kp_buf(&p, &arr);
	if (p.bad)
		error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec_binary(conn, describe_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			error = kgroup_sql_error(sqlstate);
		else if (PQntuples(res) != n || PQnfields(res) != 6)
		{
			klog(KLOG_WARNING, "conn %llu (%s): DescribeGroups: %d results for %d groups",
				 (unsigned long long) conn->id, conn->peer, PQntuples(res), n);
			error = KERR_UNKNOWN_SERVER_ERROR;
		}
	}
	kp_free(&p);

	if (v >= 1)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_array_len_v(w, flex, n);
	for (int32_t i = 0; i < n && !w->error; i++)
	{
		KSlice		name = kr_string_v(&again, flex);
		int16_t		gerr;
		KBin		members;
		int32_t		nmembers;

		if (error != KERR_NONE)
		{
			write_empty_group(w, flex, v, name, error);
			continue;
		}
		gerr = (int16_t) kpg_int(res, i, 1);
		kw_int16(w, gerr);
		kw_string_v(w, flex, (const char *) name.ptr, name.len);
		kw_string_v(w, flex, PQgetvalue(res, i, 2), PQgetlength(res, i, 2));
		kw_string_v(w, flex, PQgetvalue(res, i, 3), PQgetlength(res, i, 3));
		kw_string_v(w, flex, PQgetvalue(res, i, 4), PQgetlength(res, i, 4));
		kbin_init(&members, PQgetvalue(res, i, 5),
				  PQgetisnull(res, i, 5) ? 0 : PQgetlength(res, i, 5));
		nmembers = PQgetisnull(res, i, 5) ? 0 : kbin_array_begin(&members);
		if (nmembers < 0)
		{
			result = KH_CLOSE;
			break;
		}
		kw_array_len_v(w, flex, nmembers);
		for (int32_t m = 0; m < nmembers && !w->error; m++)
		{
			KBin		row;
			KSlice		f[6];

			if (kbin_row_begin(&members, &row) != 6)
			{
				result = KH_CLOSE;
				break;
			}
			for (int k = 0; k < 6; k++)
				f[k] = kbin_field(&row);
			if (row.error)
			{
				result = KH_CLOSE;
				break;
			}
			kw_string_v(w, flex, (const char *) f[0].ptr, f[0].len < 0 ? 0 : f[0].len);
			if (v >= 4)
				kw_string_v(w, flex, (const char *) f[1].ptr, f[1].len);
			kw_string_v(w, flex, (const char *) f[2].ptr, f[2].len < 0 ? 0 : f[2].len);
			kw_string_v(w, flex, (const char *) f[3].ptr, f[3].len < 0 ? 0 : f[3].len);
			kw_bytes_v(w, flex, f[4].ptr, f[4].len < 0 ? 0 : f[4].len);
			kw_bytes_v(w, flex, f[5].ptr, f[5].len < 0 ? 0 : f[5].len);
			kw_tags_v(w, flex);
		}
		if (result != KH_OK)
			break;
		if (v >= 3)
			kw_int32(w, want_ops && gerr == KERR_NONE ? KOPS_GROUP : KOPS_NOT_REQUESTED);
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	if (result != KH_OK)
		klog(KLOG_WARNING, "conn %llu (%s): DescribeGroups: malformed member list from PostgreSQL: closing",
			 (unsigned long long) conn->id, conn->peer);
	PQclear(res);
	return result;
}

KHandlerResult
khandle_list_groups(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KBuf		arr;
	int32_t		n = -1;
	KParams		p;
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		error = KERR_NONE;
	int			ntuples = 0;

	kb_init(&arr);
	if (v >= 4 && !read_names(r, flex, &arr, &n))
		return kgroup_too_many(conn, "ListGroups", n);
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		kb_free(&arr);
		return KH_MALFORMED;
	}

	kp_init(&p);
	if (n < 0)
	{
		kb_free(&arr);
		kp_static(&p, NULL);
	}
	else
		kp_buf(&p, &arr);
	if (p.bad)
		error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec(conn, list_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			error = kgroup_sql_error(sqlstate);
		else
			ntuples = PQntuples(res);
	}
	kp_free(&p);

	if (v >= 1)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_int16(w, error);
	kw_array_len_v(w, flex, ntuples);
	for (int i = 0; i < ntuples && !w->error; i++)
	{
		kw_string_v(w, flex, PQgetvalue(res, i, 0), PQgetlength(res, i, 0));
		kw_string_v(w, flex, PQgetvalue(res, i, 1), PQgetlength(res, i, 1));
		if (v >= 4)
			kw_string_v(w, flex, PQgetvalue(res, i, 2), PQgetlength(res, i, 2));
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	PQclear(res);
	return KH_OK;
}

KHandlerResult
khandle_delete_groups(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	KReader		again;
	bool		flex = req->flexible;
	KBuf		arr;
	int32_t		n;
	KParams		p;
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		error = KERR_NONE;

	again = *r;
	if (!read_names(r, flex, &arr, &n))
		return kgroup_too_many(conn, "DeleteGroups", n);
	kr_tags_v(r, flex);
	if (!khandler_body_done(req) || n < 0)
	{
		kb_free(&arr);
		return KH_MALFORMED;
	}
	(void) kr_array_len_v(&again, flex, 1);

	kp_init(&p);
	kp_buf(&p, &arr);
	if (p.bad)
		error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec(conn, delete_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			error = kgroup_sql_error(sqlstate);
		else if (PQntuples(res) != n)
		{
			klog(KLOG_WARNING, "conn %llu (%s): DeleteGroups: %d results for %d groups",
				 (unsigned long long) conn->id, conn->peer, PQntuples(res), n);
			error = KERR_UNKNOWN_SERVER_ERROR;
		}
	}
	kp_free(&p);

	kw_int32(w, 0);				/* throttle_time_ms */
	kw_array_len_v(w, flex, n);
	for (int32_t i = 0; i < n && !w->error; i++)
	{
		KSlice		name = kr_string_v(&again, flex);

		kw_string_v(w, flex, (const char *) name.ptr, name.len);
		kw_int16(w, error != KERR_NONE ? error : (int16_t) atoi(PQgetvalue(res, i, 0)));
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	PQclear(res);
	return KH_OK;
}
