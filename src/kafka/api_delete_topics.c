/*-------------------------------------------------------------------------
 *
 * api_delete_topics.c
 *	  DeleteTopics (key 20), versions 0 to 6: each topic is dropped with
 *	  eventlog.drop_topic as the connection's role (its owner may drop
 *	  it), named by name or, from v6, by topic id.
 *
 * A topic is first looked up (its catalog id, and for an id given by the
 * client, the creation time that the rest of the id hashes, so that a
 * stale id of a dropped topic is UNKNOWN_TOPIC_ID), then dropped by its
 * catalog id, which is never reused: a topic dropped and created again in
 * between is not dropped in its place.  Each drop is a transaction of its
 * own; topics are independent, as in Kafka.  A topic named twice gets
 * INVALID_REQUEST for each entry and is left alone, as Kafka's controller
 * does.
 *
 *-------------------------------------------------------------------------
 */
#include "admin.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct DtTopic
{
	KSlice		name;			/* null if by id */
	uint8_t		uuid[16];		/* zero if by name */
	int16_t		error;
	char		message[200];
	char	   *resolved;		/* the name of a topic found by id */
} DtTopic;

static const uint8_t zero_uuid[16];

static void
dt_fail(DtTopic *t, int16_t error, const char *msg)
{
	if (t->error != KERR_NONE)
		return;
	t->error = error;
	snprintf(t->message, sizeof(t->message), "%s", msg);
}

static int
compare_entries(const void *x, const void *y)
{
	const DtTopic *a = *(DtTopic *const *) x;
	const DtTopic *b = *(DtTopic *const *) y;
	int			c = kslice_cmp(a->name, b->name);

	return c != 0 ? c : memcmp(a->uuid, b->uuid, 16);
}

static const char *const drop_sql =
"SELECT t.name, eventlog.drop_topic(t.name) FROM eventlog.topic_catalog t"
" WHERE t.topic_id OPERATOR(pg_catalog.=) $1::pg_catalog.int4";

static void
delete_one(KConn *conn, DtTopic *t)
{
	KTopicSettings s;
	char		sqlstate[6];
	char		msg[200];
	char		idbuf[16];
	const char *params[1];
	char	   *name = NULL;
	int			found;
	PGresult   *res;

	if (!KSLICE_IS_NULL(t->name))
	{
		name = kslice_dup(t->name);
		if (name == NULL)
		{
			dt_fail(t, KERR_UNKNOWN_SERVER_ERROR, "out of memory");
			return;
		}
		found = kadmin_topic_settings(conn, name, 0, &s, sqlstate);
	}
	else
		found = kadmin_topic_settings(conn, NULL, kuuid_topic_id(t->uuid), &s, sqlstate);
	if (found == 1 && KSLICE_IS_NULL(t->name))
	{
		uint8_t		uuid[16];

		ktopic_uuid(s.topic_id, s.created_us, uuid);
		if (memcmp(uuid, t->uuid, 16) != 0)
			found = 0;
	}
	if (found < 0)
		dt_fail(t, KERR_UNKNOWN_SERVER_ERROR, "cannot read the topic catalog");
	else if (found == 0)
		dt_fail(t, KSLICE_IS_NULL(t->name) ? KERR_UNKNOWN_TOPIC_ID : KERR_UNKNOWN_TOPIC_OR_PARTITION,
				"no such topic");
	if (t->error != KERR_NONE)
	{
		free(name);
		return;
	}
	ktopic_uuid(s.topic_id, s.created_us, t->uuid);

	snprintf(idbuf, sizeof(idbuf), "%d", s.topic_id);
	params[0] = idbuf;
	res = kpg_exec_msg(conn, drop_sql, 1, params, sqlstate, msg, sizeof(msg));
	if (res == NULL)
	{
		if (strcmp(sqlstate, "42501") == 0)
			dt_fail(t, KERR_TOPIC_AUTHORIZATION_FAILED, msg);
		else if (strcmp(sqlstate, "42704") == 0)
			dt_fail(t, KERR_UNKNOWN_TOPIC_OR_PARTITION, msg);
		else
			dt_fail(t, KERR_UNKNOWN_SERVER_ERROR, msg[0] ? msg : "cannot reach PostgreSQL");
	}
	else if (PQntuples(res) != 1)
		dt_fail(t, KSLICE_IS_NULL(t->name) ? KERR_UNKNOWN_TOPIC_ID : KERR_UNKNOWN_TOPIC_OR_PARTITION,
				"no such topic");
	/* Answer a topic asked for by id with its name, as Kafka does. */
	else if (KSLICE_IS_NULL(t->name))
		t->resolved = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	free(name);
}

KHandlerResult
khandle_delete_topics(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	int32_t		n;
	DtTopic    *topics = NULL;
	DtTopic   **sorted = NULL;

	/* v6: a nullable name and an id; before: a name. */
	n = kr_array_len_v(r, flex, v >= 6 ? 18 : (flex ? 1 : 2));
	if (n > K_MAX_ADMIN_TOPICS)
	{
		klog(KLOG_WARNING, "conn %llu (%s): DeleteTopics request names %d topics, more than %d: closing",
			 (unsigned long long) conn->id, conn->peer, n, K_MAX_ADMIN_TOPICS);
		return KH_CLOSE;
	}
	if (n < 0)
		n = 0;
	if (n > 0)
	{
		topics = calloc((size_t) n, sizeof(DtTopic));
		sorted = calloc((size_t) n, sizeof(DtTopic *));
		if (topics == NULL || sorted == NULL)
		{
			klog(KLOG_WARNING, "conn %llu (%s): out of memory for a DeleteTopics request: closing",
				 (unsigned long long) conn->id, conn->peer);
			free(topics);
			free(sorted);
			return KH_CLOSE;
		}
	}
	for (int32_t i = 0; i < n && !r->error; i++)
	{
		DtTopic    *t = &topics[i];

		if (v >= 6)
		{
			const uint8_t *u;

			t->name = kr_nullable_string_v(r, flex);
			u = kr_take(r, 16);
			if (u)
				memcpy(t->uuid, u, 16);
			kr_tags_v(r, flex);
			/* Kafka's rule: an id, if given, names the topic. */
			if (memcmp(t->uuid, zero_uuid, 16) != 0)
				t->name.len = -1;
		}
		else
			t->name = kr_string_v(r, flex);
		sorted[i] = t;
	}
	(void) kr_int32(r);			/* timeout_ms */
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		free(topics);
		free(sorted);
		return KH_MALFORMED;
	}

	if (n > 1)
	{
		qsort(sorted, (size_t) n, sizeof(DtTopic *), compare_entries);
		for (int32_t i = 1; i < n; i++)
			if (compare_entries(&sorted[i - 1], &sorted[i]) == 0)
			{
				dt_fail(sorted[i - 1], KERR_INVALID_REQUEST, "topic named more than once in the request");
				dt_fail(sorted[i], KERR_INVALID_REQUEST, "topic named more than once in the request");
			}
	}
	for (int32_t i = 0; i < n; i++)
	{
		DtTopic    *t = &topics[i];

		if (t->error != KERR_NONE)
			continue;
		if (KSLICE_IS_NULL(t->name) && memcmp(t->uuid, zero_uuid, 16) == 0)
			dt_fail(t, KERR_INVALID_REQUEST, "neither a topic name nor a topic id");
		else if (!KSLICE_IS_NULL(t->name) && !kvalid_topic_name(t->name))
			dt_fail(t, KERR_INVALID_TOPIC_EXCEPTION, "invalid topic name");
		else
			delete_one(conn, t);
	}

	if (v >= 1)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_array_len_v(w, flex, n);
	for (int32_t i = 0; i < n && !w->error; i++)
	{
		DtTopic    *t = &topics[i];

		if (KSLICE_IS_NULL(t->name) && v >= 6)
			kw_cstring_v(w, flex, t->resolved);
		else
			kw_string_v(w, flex, (const char *) t->name.ptr, t->name.len < 0 ? 0 : t->name.len);
		if (v >= 6)
			kw_raw(w, t->uuid, 16);
		kw_int16(w, t->error);
		if (v >= 5)
			kw_cstring_v(w, flex, t->error == KERR_NONE ? NULL : t->message);
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	for (int32_t i = 0; i < n; i++)
		free(topics[i].resolved);
	free(topics);
	free(sorted);
	return KH_OK;
}
