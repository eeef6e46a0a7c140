/*-------------------------------------------------------------------------
 *
 * api_list_offsets.c
 *	  ListOffsets (key 2), versions 0 to 6: a partition's earliest offset,
 *	  latest offset, or first offset at or after a time.
 *
 * One query per request, eventlog._kafka_list_offsets (sql/install/
 * kafka_fetch.sql), as the connection's role:
 *	-2 (earliest): the log start offset;
 *	-1 (latest): the last stable offset, for both isolation levels (a
 *	   record at or above it is not readable yet);
 *	t >= 0: eventlog.offset_for_time, the first offset whose append_time
 *	   is at or after t, with that record's append_time; offset -1 and
 *	   timestamp -1 when there is none, as Kafka.
 * -3 (the record of the largest timestamp, KIP-734) is version 7's and is
 * not advertised; any other negative timestamp gets INVALID_REQUEST.  A
 * version 0 request gets at most one offset in old_style_offsets.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "log.h"
#include "server.h"
#include "sqlarray.h"

#include <stdlib.h>
#include <string.h>

/* Partitions one request may name; more closes the connection. */
#define K_MAX_LIST_OFFSETS_PARTITIONS	100000

typedef struct LoPart
{
	int32_t		partition;
	int64_t		timestamp;		/* asked */
	int32_t		max_num_offsets;	/* v0 */
	int16_t		error;
	int64_t		offset;
	int64_t		found_timestamp;
} LoPart;

typedef struct LoTopic
{
	KSlice		name;
	int32_t		first;
	int32_t		nparts;
} LoTopic;

static const char *const list_offsets_sql =
"SELECT k_item, k_error, k_offset, k_timestamp"
"  FROM eventlog._kafka_list_offsets($1::pg_catalog.text[], $2::pg_catalog.int4[],"
"                                    $3::pg_catalog.int8[])";

KHandlerResult
khandle_list_offsets(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	int32_t		ntopics;
	LoTopic    *topics = NULL;
	LoPart	   *parts = NULL;
	int32_t		nparts = 0;
	int32_t		cap = 0;
	int		   *items = NULL;
	int			nitems = 0;
	PGresult   *res = NULL;
	char	   *params[3] = {NULL, NULL, NULL};
	KHandlerResult result = KH_OK;

	(void) kr_int32(r);			/* replica_id */
	if (v >= 2)
	{
		int8_t		isolation = kr_int8(r);

		/* Both levels stop at the last stable offset. */
		if (!r->error && isolation != 0 && isolation != 1)
			return KH_MALFORMED;
	}
	ntopics = kr_array_len_v(r, flex, flex ? 2 : 6);
	if (ntopics > 0)
	{
		topics = calloc((size_t) ntopics, sizeof(LoTopic));
		if (topics == NULL)
			goto oom;
	}
	for (int32_t t = 0; t < ntopics && !r->error; t++)
	{
		int32_t		np;

		topics[t].name = kr_string_v(r, flex);
		np = kr_array_len_v(r, flex, 12);
		topics[t].first = nparts;
		topics[t].nparts = np < 0 ? 0 : np;
		if (np > 0 && (int64_t) nparts + np > K_MAX_LIST_OFFSETS_PARTITIONS)
		{
			klog(KLOG_WARNING, "conn %llu (%s): ListOffsets request names more than %d partitions: closing",
				 (unsigned long long) conn->id, conn->peer, K_MAX_LIST_OFFSETS_PARTITIONS);
			result = KH_CLOSE;
			goto done;
		}
		if (np > 0 && nparts + np > cap)
		{
			int32_t		ncap = cap ? cap : 16;
			LoPart	   *nb;

			while (ncap < nparts + np)
				ncap *= 2;
			nb = realloc(parts, sizeof(LoPart) * (size_t) ncap);
			if (nb == NULL)
				goto oom;
			parts = nb;
			cap = ncap;
		}
		for (int32_t i = 0; i < np && !r->error; i++)
		{
			LoPart	   *p = &parts[nparts++];

			memset(p, 0, sizeof(*p));
			p->partition = kr_int32(r);
			if (v >= 4)
				(void) kr_int32(r); /* current_leader_epoch */
			p->timestamp = kr_int64(r);
			p->max_num_offsets = v == 0 ? kr_int32(r) : 1;
			p->offset = -1;
			p->found_timestamp = -1;
			kr_tags_v(r, flex);
		}
		kr_tags_v(r, flex);
	}
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		result = KH_MALFORMED;
		goto done;
	}

	if (nparts > 0)
	{
		KSqlArray	a_names, a_parts, a_ts;
		char		sqlstate[6];

		items = malloc(sizeof(int) * (size_t) nparts);
		if (items == NULL)
			goto oom;
		ksa_init(&a_names);
		ksa_init(&a_parts);
		ksa_init(&a_ts);
		for (int32_t t = 0; t < ntopics; t++)
		{
			bool		valid = !KSLICE_IS_NULL(topics[t].name) && kvalid_topic_name(topics[t].name);

			for (int32_t i = 0; i < topics[t].nparts; i++)
			{
				LoPart	   *p = &parts[topics[t].first + i];

				if (!valid || p->partition < 0)
				{
					p->error = KERR_UNKNOWN_TOPIC_OR_PARTITION;
					continue;
				}
				ksa_add_name(&a_names, topics[t].name);
				ksa_add_int(&a_parts, p->partition);
				ksa_add_int(&a_ts, p->timestamp);
				items[nitems++] = topics[t].first + i;
			}
		}
		params[0] = ksa_finish(&a_names);
		params[1] = ksa_finish(&a_parts);
		params[2] = ksa_finish(&a_ts);
		if (params[0] == NULL || params[1] == NULL || params[2] == NULL)
			goto oom;
		if (nitems > 0)
		{
			res = kpg_exec(conn, list_offsets_sql, 3, (const char *const *) params, sqlstate);
			if (res == NULL)
			{
				int16_t		e;

				if (kshutting_down())
				{
					result = KH_CLOSE;
					goto done;
				}
				if (strcmp(sqlstate, "42501") == 0)
					e = KERR_TOPIC_AUTHORIZATION_FAILED;
				else if (strcmp(sqlstate, "3F000") == 0 || strcmp(sqlstate, "42P01") == 0 ||
						 strcmp(sqlstate, "42883") == 0)
					e = KERR_UNKNOWN_TOPIC_OR_PARTITION;
				else
					e = KERR_LEADER_NOT_AVAILABLE;
				for (int i = 0; i < nitems; i++)
					parts[items[i]].error = e;
			}
			else
			{
				for (int row = 0; row < PQntuples(res) && PQnfields(res) == 4; row++)
				{
					int			item = atoi(PQgetvalue(res, row, 0));
					LoPart	   *p;

					if (item < 1 || item > nitems)
						continue;
					p = &parts[items[item - 1]];
					p->error = (int16_t) atoi(PQgetvalue(res, row, 1));
					p->offset = strtoll(PQgetvalue(res, row, 2), NULL, 10);
					p->found_timestamp = strtoll(PQgetvalue(res, row, 3), NULL, 10);
				}
			}
		}
	}

	if (v >= 2)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_array_len_v(w, flex, ntopics < 0 ? 0 : ntopics);
	for (int32_t t = 0; t < ntopics && !w->error; t++)
	{
		kw_string_v(w, flex, (const char *) topics[t].name.ptr,
					KSLICE_IS_NULL(topics[t].name) ? -1 : topics[t].name.len);
		kw_array_len_v(w, flex, topics[t].nparts);
		for (int32_t i = 0; i < topics[t].nparts && !w->error; i++)
		{
			LoPart	   *p = &parts[topics[t].first + i];

			kw_int32(w, p->partition);
			kw_int16(w, p->error);
			if (v == 0)
			{
				bool		one = p->error == KERR_NONE && p->offset >= 0 && p->max_num_offsets > 0;

				kw_array_len_v(w, flex, one ? 1 : 0);
				if (one)
					kw_int64(w, p->offset);
			}
			else
			{
				kw_int64(w, p->found_timestamp);
				kw_int64(w, p->offset);
				if (v >= 4)
					kw_int32(w, p->error == KERR_NONE ? 0 : -1);	/* leader_epoch */
			}
			kw_tags_v(w, flex);
		}
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	goto done;

oom:
	klog(KLOG_WARNING, "conn %llu (%s): out of memory for a ListOffsets request: closing",
		 (unsigned long long) conn->id, conn->peer);
	result = KH_CLOSE;
done:
	for (int i = 0; i < 3; i++)
		free(params[i]);
	PQclear(res);
	free(items);
	free(parts);
	free(topics);
	return result;
}
