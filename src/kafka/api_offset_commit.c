/*-------------------------------------------------------------------------
 *
 * api_offset_commit.c
 *	  OffsetCommit (key 8), versions 0 to 8: eventlog.kafka_offset_commit
 *	  stores the group's positions, the rows of eventlog.group_offsets
 *	  that SQL consumers of the same group name use (eventlog.consumer_groups
 *	  shows them).
 *
 * v0 has no generation or member (a commit outside group management, as
 * generation -1 is from v1); v1 alone a commit timestamp, v2-4 a
 * retention time, both ignored (positions stay until the group is
 * deleted); v6 a leader epoch, ignored (leadership never moves); v7
 * group_instance_id.  One error code per partition, in the request's
 * order: the SQL function returns one row per partition in that order.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

static const char *const commit_sql =
"SELECT error_code FROM eventlog.kafka_offset_commit($1, $2::pg_catalog.int4, $3, $4,"
" $5::eventlog.kafka_offset[])";

typedef struct OcPartition
{
	int32_t		partition;
} OcPartition;

typedef struct OcTopic
{
	KSlice		name;
	int32_t		first;			/* index of its first partition */
	int32_t		npartitions;
} OcTopic;

KHandlerResult
khandle_offset_commit(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KSlice		group_id;
	int32_t		generation = -1;
	KSlice		member_id = {(const uint8_t *) "", 0};
	KSlice		instance_id = {NULL, -1};
	int32_t		ntopics;
	OcTopic    *topics = NULL;
	OcPartition *parts = NULL;
	int32_t		nparts = 0;
	int32_t		cap = 0;
	KBuf		arr;
	KParams		p;
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		query_error = KERR_NONE;
	KHandlerResult result = KH_OK;

	group_id = kr_string_v(r, flex);
	if (v >= 1)
	{
		generation = kr_int32(r);
		member_id = kr_string_v(r, flex);
	}
	if (v >= 7)
		instance_id = kr_nullable_string_v(r, flex);
	if (v >= 2 && v <= 4)
		(void) kr_int64(r);		/* retention_time_ms */
	ntopics = kr_array_len_v(r, flex, flex ? 2 : 6);
	if (ntopics > K_MAX_GROUP_ITEMS)
		return kgroup_too_many(conn, "OffsetCommit", ntopics);
	if (ntopics > 0 && (topics = calloc((size_t) ntopics, sizeof(OcTopic))) == NULL)
		return kgroup_no_memory(conn, "OffsetCommit");
	kb_init(&arr);
	kb_char(&arr, '{');
	for (int32_t t = 0; t < ntopics && !r->error; t++)
	{
		int32_t		np;

		topics[t].name = kr_string_v(r, flex);
		if (!kslice_is_text(topics[t].name))
			arr.error = true;
		np = kr_array_len_v(r, flex, 14);
		if (np < 0)
			np = 0;
		if (np > K_MAX_GROUP_ITEMS - nparts)
		{
			free(topics);
			free(parts);
			kb_free(&arr);
			return kgroup_too_many(conn, "OffsetCommit", nparts + np);
		}
		topics[t].first = nparts;
		topics[t].npartitions = np;
		if (nparts + np > cap)
		{
			int32_t		ncap = nparts + np + 64;
			OcPartition *n2 = realloc(parts, (size_t) ncap * sizeof(OcPartition));

			if (n2 == NULL)
			{
				free(topics);
				free(parts);
				kb_free(&arr);
				return kgroup_no_memory(conn, "OffsetCommit");
			}
			parts = n2;
			cap = ncap;
		}
		for (int32_t i = 0; i < np && !r->error; i++)
		{
			KRowBuf		row;
			int32_t		partition = kr_int32(r);
			int64_t		offset = kr_int64(r);
			KSlice		metadata;

			if (v >= 6)
				(void) kr_int32(r); /* committed_leader_epoch */
			if (v == 1)
				(void) kr_int64(r); /* commit_timestamp */
			metadata = kr_nullable_string_v(r, flex);
			kr_tags_v(r, flex);
			if (!kslice_is_text(metadata))
				arr.error = true;
			parts[nparts++].partition = partition;
			if (nparts > 1)
				kb_char(&arr, ',');
			krow_begin(&row);
			krow_text(&row, topics[t].name);
			krow_int(&row, partition);
			krow_int(&row, offset);
			krow_text(&row, metadata);
			krow_end(&row, &arr);
		}
		kr_tags_v(r, flex);
	}
	kb_char(&arr, '}');
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		free(topics);
		free(parts);
		kb_free(&arr);
		return KH_MALFORMED;
	}
	if (ntopics < 0)
		ntopics = 0;

	kp_init(&p);
	kp_slice(&p, group_id);
	kp_int(&p, generation);
	kp_slice(&p, member_id);
	kp_slice(&p, instance_id);
	kp_buf(&p, &arr);
	if (p.bad)
		query_error = KERR_INVALID_REQUEST;
	else
	{
		res = kpg_exec(conn, commit_sql, p.n, p.v, sqlstate);
		if (res == NULL)
			query_error = kgroup_sql_error(sqlstate);
		else if (PQntuples(res) != nparts)
		{
			klog(KLOG_WARNING, "conn %llu (%s): OffsetCommit: %d results for %d partitions",
				 (unsigned long long) conn->id, conn->peer, PQntuples(res), nparts);
			query_error = KERR_UNKNOWN_SERVER_ERROR;
		}
	}
	kp_free(&p);

	if (v >= 3)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_array_len_v(w, flex, ntopics);
	for (int32_t t = 0; t < ntopics && !w->error; t++)
	{
		kw_string_v(w, flex, (const char *) topics[t].name.ptr, topics[t].name.len);
		kw_array_len_v(w, flex, topics[t].npartitions);
		for (int32_t i = 0; i < topics[t].npartitions; i++)
		{
			int32_t		k = topics[t].first + i;

			kw_int32(w, parts[k].partition);
			kw_int16(w, query_error != KERR_NONE ? query_error :
					 (int16_t) atoi(PQgetvalue(res, k, 0)));
			kw_tags_v(w, flex);
		}
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	PQclear(res);
	free(topics);
	free(parts);
	return result;
}
