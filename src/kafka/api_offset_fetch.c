/*-------------------------------------------------------------------------
 *
 * api_offset_fetch.c
 *	  OffsetFetch (key 9), versions 0 to 8: eventlog.kafka_offset_fetch
 *	  reads the group's committed positions, the rows of
 *	  eventlog.group_offsets that SQL consumers of the same group name
 *	  use, -1 where there is none.
 *
 * From v2 the topics may be null (every position of the group, in topics
 * the role may consume) and the response has a top-level error; up to v1
 * a group's error is in each partition.  v5 adds the leader epoch (-1:
 * leadership never moves), v7 require_stable (always true here:
 * PostgreSQL never shows an uncommitted position), v8 several groups in
 * one request (one query each).
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

static const char *const fetch_sql =
"SELECT topic, partition, committed_offset, metadata, error_code"
"  FROM eventlog.kafka_offset_fetch($1, $2::eventlog.kafka_topic_partition[])";

/* One group of the request: its id and where its topics are in the body. */
typedef struct OfGroup
{
	KSlice		group_id;
	int32_t		ntopics;		/* -1: all */
	KReader		topics;			/* positioned at its first topic */
} OfGroup;

/* Reads a group's topics (after the count), appending each to arr. */
static void
read_topics(KReader *r, bool flex, int32_t ntopics, KBuf *arr, int32_t *nparts)
{
	for (int32_t t = 0; t < ntopics && !r->error; t++)
	{
		KSlice		name = kr_string_v(r, flex);
		int32_t		np = kr_array_len_v(r, flex, 4);

		if (!kslice_is_text(name))
			arr->error = true;
		for (int32_t i = 0; i < np && !r->error; i++)
		{
			KRowBuf		row;
			int32_t		partition = kr_int32(r);

			if ((*nparts)++ > 0)
				kb_char(arr, ',');
			krow_begin(&row);
			krow_text(&row, name);
			krow_int(&row, partition);
			krow_end(&row, arr);
		}
		kr_tags_v(r, flex);
		if (*nparts > K_MAX_GROUP_ITEMS)
			r->error = true;
	}
}

static void
write_partition(KWriter *w, bool flex, int16_t v, int32_t partition, int64_t offset,
				const char *metadata, int metalen, int16_t error)
{
	kw_int32(w, partition);
	kw_int64(w, offset);
	if (v >= 5)
		kw_int32(w, -1);		/* committed_leader_epoch */
	kw_string_v(w, flex, metadata, metalen);
	kw_int16(w, error);
	kw_tags_v(w, flex);
}

/*
 * One group: query, then write its topics (in the request's order, or
 * the query's for all) and return its top-level error.  False if the
 * request cannot be answered (memory).
 */
static bool
fetch_group(KConn *conn, KRequest *req, KWriter *w, OfGroup *g, int16_t *group_error)
{
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KBuf		arr;
	KParams		p;
	int32_t		nparts = 0;
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		error = KERR_NONE;
	KReader		r = g->topics;

	kb_init(&arr);
	kp_init(&p);
	kp_slice(&p, g->group_id);
	if (g->ntopics < 0)
		kp_static(&p, NULL);
	else
	{
		kb_char(&arr, '{');
		read_topics(&r, flex, g->ntopics, &arr, &nparts);
		kb_char(&arr, '}');
		kp_buf(&p, &arr);
	}
	if (p.bad)
		error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec(conn, fetch_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			error = kgroup_sql_error(sqlstate);
		else if (g->ntopics >= 0 && PQntuples(res) != nparts)
		{
			klog(KLOG_WARNING, "conn %llu (%s): OffsetFetch: %d results for %d partitions",
				 (unsigned long long) conn->id, conn->peer, PQntuples(res), nparts);
			error = KERR_UNKNOWN_SERVER_ERROR;
		}
		else if (PQntuples(res) > 0)
		{
			/* A group's error: every row has it (one row, topic NULL, for all). */
			int16_t		first = (int16_t) atoi(PQgetvalue(res, 0, 4));

			if (first == KERR_INVALID_GROUP_ID || first == KERR_GROUP_AUTHORIZATION_FAILED)
				error = first;
		}
	}
	kp_free(&p);

	if (g->ntopics < 0)
	{
		/* All: the rows, by topic (they come sorted by topic, partition). */
		int			n = (res != NULL && error == KERR_NONE) ? PQntuples(res) : 0;
		int			ntopics = 0;

		for (int i = 0; i < n; i++)
			if (i == 0 || strcmp(PQgetvalue(res, i, 0), PQgetvalue(res, i - 1, 0)) != 0)
				ntopics++;
		kw_array_len_v(w, flex, ntopics);
		for (int i = 0; i < n && !w->error;)
		{
			const char *topic = PQgetvalue(res, i, 0);
			int			j = i;

			while (j < n && strcmp(PQgetvalue(res, j, 0), topic) == 0)
				j++;
			kw_string_v(w, flex, topic, (int32_t) strlen(topic));
			kw_array_len_v(w, flex, j - i);
			for (int k = i; k < j; k++)
				write_partition(w, flex, v, atoi(PQgetvalue(res, k, 1)),
								strtoll(PQgetvalue(res, k, 2), NULL, 10),
								PQgetvalue(res, k, 3),
								PQgetisnull(res, k, 3) ? -1 : PQgetlength(res, k, 3),
								(int16_t) atoi(PQgetvalue(res, k, 4)));
			kw_tags_v(w, flex);
			i = j;
		}
	}
	else if (v >= 2 && error != KERR_NONE)
		kw_array_len_v(w, flex, 0);
	else
	{
		int32_t		k = 0;

		/* The request's topics again, each partition with its row. */
		r = g->topics;
		kw_array_len_v(w, flex, g->ntopics);
		for (int32_t t = 0; t < g->ntopics && !w->error; t++)
		{
			KSlice		name = kr_string_v(&r, flex);
			int32_t		np = kr_array_len_v(&r, flex, 4);

			kw_string_v(w, flex, (const char *) name.ptr, name.len);
			kw_array_len_v(w, flex, np < 0 ? 0 : np);
			for (int32_t i = 0; i < np; i++, k++)
			{
				int32_t		partition = kr_int32(&r);

				if (error != KERR_NONE)
					write_partition(w, flex, v, partition, -1, "", 0, error);
				else
					write_partition(w, flex, v, partition,
									strtoll(PQgetvalue(res, k, 2), NULL, 10),
									PQgetvalue(res, k, 3),
									PQgetisnull(res, k, 3) ? -1 : PQgetlength(res, k, 3),
									(int16_t) atoi(PQgetvalue(res, k, 4)));
			}
			kr_tags_v(&r, flex);
			kw_tags_v(w, flex);
		}
	}
	PQclear(res);
	*group_error = error;
	return true;
}

KHandlerResult
khandle_offset_fetch(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	int32_t		ngroups = 1;
	OfGroup		one;
	OfGroup    *groups = &one;
	KHandlerResult result = KH_OK;

	/*
	 * Decode once to check the body (and find each group's topics); the
	 * topics are read again while the response is written.
	 */
	if (v >= 8)
	{
		ngroups = kr_array_len_v(r, flex, 3);
		if (ngroups > K_MAX_GROUP_ITEMS)
			return kgroup_too_many(conn, "OffsetFetch", ngroups);
		if (ngroups < 0)
			return KH_MALFORMED;
		groups = ngroups > 0 ? calloc((size_t) ngroups, sizeof(OfGroup)) : NULL;
		if (ngroups > 0 && groups == NULL)
			return kgroup_no_memory(conn, "OffsetFetch");
	}
	for (int32_t gi = 0; gi < ngroups && !r->error; gi++)
	{
		KBuf		scratch;
		int32_t		nparts = 0;

		groups[gi].group_id = kr_string_v(r, flex);
		groups[gi].ntopics = kr_array_len_v(r, flex, 2);
		if (v < 2 && groups[gi].ntopics < 0)
			r->error = true;
		groups[gi].topics = *r;
		/* Skip its topics: read them into a scratch buffer. */
		kb_init(&scratch);
		read_topics(r, flex, groups[gi].ntopics, &scratch, &nparts);
		kb_free(&scratch);
		if (v >= 8)
			kr_tags_v(r, flex);
	}
	if (v >= 7)
		(void) kr_bool(r);		/* require_stable */
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		if (groups != &one)
			free(groups);
		return KH_MALFORMED;
	}

	if (v >= 3)
		kw_int32(w, 0);			/* throttle_time_ms */
	if (v >= 8)
		kw_array_len_v(w, flex, ngroups);
	for (int32_t gi = 0; gi < ngroups && !w->error; gi++)
	{
		int16_t		error;

		if (v >= 8)
			kw_string_v(w, flex, (const char *) groups[gi].group_id.ptr, groups[gi].group_id.len);
		if (!fetch_group(conn, req, w, &groups[gi], &error))
		{
			result = kgroup_no_memory(conn, "OffsetFetch");
			break;
		}
		if (v >= 2)
			kw_int16(w, error);
		if (v >= 8)
			kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	if (groups != &one)
		free(groups);
	return result;
}
