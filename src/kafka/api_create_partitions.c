/*-------------------------------------------------------------------------
 *
 * api_create_partitions.c
 *	  CreatePartitions (key 37), versions 0 to 3: a topic grows to the
 *	  requested count with eventlog.alter_topic(topic, partitions => count)
 *	  as the connection's role (the topic's owner may grow it).
 *
 * The count must grow, as in Kafka: a count equal to or below the
 * current one is INVALID_PARTITIONS (alter_topic itself accepts an equal
 * count as a no-op).  Manual assignments are refused, as in CreateTopics.
 * validate_only runs alter_topic in a transaction block that is rolled
 * back, so every check the extension makes is made.  Each topic is a
 * transaction of its own; topics are independent, as in Kafka.
 *
 *-------------------------------------------------------------------------
 */
#include "admin.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct CpTopic
{
	KSlice		name;
	int32_t		count;
	int16_t		error;
	char		message[200];
} CpTopic;

static void
cp_fail(CpTopic *t, int16_t error, const char *msg)
{
	if (t->error != KERR_NONE)
		return;
	t->error = error;
	snprintf(t->message, sizeof(t->message), "%s", msg);
}

static int
compare_by_name(const void *x, const void *y)
{
	return kslice_cmp((*(CpTopic *const *) x)->name, (*(CpTopic *const *) y)->name);
}

static void
grow_one(KConn *conn, CpTopic *t, bool validate_only)
{
	KTopicSettings s;
	char		sqlstate[6];
	char		msg[200];
	char		countbuf[16];
	const char *params[2];
	char	   *name = kslice_dup(t->name);
	PGresult   *res;
	int			found;
	char		sql[256];

	if (name == NULL)
	{
		cp_fail(t, KERR_UNKNOWN_SERVER_ERROR, "out of memory");
		return;
	}
	found = kadmin_topic_settings(conn, name, 0, &s, sqlstate);
	if (found < 0)
		cp_fail(t, KERR_UNKNOWN_SERVER_ERROR, "cannot read the topic catalog");
	else if (found == 0)
		cp_fail(t, KERR_UNKNOWN_TOPIC_OR_PARTITION, "no such topic");
	else if (t->count <= s.partitions)
	{
		snprintf(msg, sizeof(msg), "the topic has %d partitions, and %d were asked for: the count can only grow",
				 s.partitions, t->count);
		cp_fail(t, KERR_INVALID_PARTITIONS, msg);
	}
	if (t->error != KERR_NONE)
	{
		free(name);
		return;
	}

	snprintf(countbuf, sizeof(countbuf), "%d", t->count);
	params[0] = name;
	params[1] = countbuf;
	snprintf(sql, sizeof(sql),
			 "SELECT eventlog.alter_topic($1::pg_catalog.text, partitions => $2::pg_catalog.int4)%s",
			 validate_only ? K_VALIDATE_GUARD : "");
	if (validate_only && !kadmin_validate_begin(conn))
	{
		cp_fail(t, KERR_UNKNOWN_SERVER_ERROR, "cannot reach PostgreSQL");
		free(name);
		return;
	}
	res = kpg_exec_msg(conn, sql, 2, params, sqlstate, msg, sizeof(msg));
	if (res == NULL)
	{
		if (strcmp(sqlstate, "42501") == 0)
			cp_fail(t, KERR_TOPIC_AUTHORIZATION_FAILED, msg);
		else if (strcmp(sqlstate, "42704") == 0)
			cp_fail(t, KERR_UNKNOWN_TOPIC_OR_PARTITION, msg);
		else if (strcmp(sqlstate, "53400") == 0 || strcmp(sqlstate, "22023") == 0)
			cp_fail(t, KERR_INVALID_PARTITIONS, msg);
		else
			cp_fail(t, KERR_UNKNOWN_SERVER_ERROR, msg[0] ? msg : "cannot reach PostgreSQL");
	}
	else if (PQntuples(res) != 1)
		cp_fail(t, KERR_UNKNOWN_SERVER_ERROR, "the PostgreSQL session was replaced during validation");
	PQclear(res);
	if (validate_only)
		kadmin_validate_end(conn);
	free(name);
}

KHandlerResult
khandle_create_partitions(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int32_t		n;
	bool		validate_only;
	CpTopic    *topics = NULL;
	CpTopic   **sorted = NULL;

	/* Each: a name, a count, a nullable array. */
	n = kr_array_len_v(r, flex, flex ? 7 : 10);
	if (n > K_MAX_ADMIN_TOPICS)
	{
		klog(KLOG_WARNING, "conn %llu (%s): CreatePartitions request names %d topics, more than %d: closing",
			 (unsigned long long) conn->id, conn->peer, n, K_MAX_ADMIN_TOPICS);
		return KH_CLOSE;
	}
	if (n < 0)
		n = 0;
	if (n > 0)
	{
		topics = calloc((size_t) n, sizeof(CpTopic));
		sorted = calloc((size_t) n, sizeof(CpTopic *));
		if (topics == NULL || sorted == NULL)
		{
			klog(KLOG_WARNING, "conn %llu (%s): out of memory for a CreatePartitions request: closing",
				 (unsigned long long) conn->id, conn->peer);
			free(topics);
			free(sorted);
			return KH_CLOSE;
		}
	}
	for (int32_t i = 0; i < n && !r->error; i++)
	{
		CpTopic    *t = &topics[i];
		int32_t		na;

		t->name = kr_string_v(r, flex);
		t->count = kr_int32(r);
		na = kr_array_len_v(r, flex, flex ? 2 : 4);
		for (int32_t a = 0; a < na && !r->error; a++)
		{
			int32_t		nb = kr_array_len_v(r, flex, 4);

			for (int32_t b = 0; b < nb && !r->error; b++)
				(void) kr_int32(r);
			kr_tags_v(r, flex);
		}
		if (na > 0)
			cp_fail(t, KERR_INVALID_REPLICA_ASSIGNMENT,
					"manual replica assignment is not supported: the gateways lead every partition");
		kr_tags_v(r, flex);
		sorted[i] = t;
	}
	(void) kr_int32(r);			/* timeout_ms */
	validate_only = kr_bool(r);
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		free(topics);
		free(sorted);
		return KH_MALFORMED;
	}

	if (n > 1)
	{
		qsort(sorted, (size_t) n, sizeof(CpTopic *), compare_by_name);
		for (int32_t i = 1; i < n; i++)
			if (kslice_cmp(sorted[i - 1]->name, sorted[i]->name) == 0)
			{
				sorted[i - 1]->error = sorted[i]->error = KERR_NONE;
				cp_fail(sorted[i - 1], KERR_INVALID_REQUEST, "topic named more than once in the request");
				cp_fail(sorted[i], KERR_INVALID_REQUEST, "topic named more than once in the request");
			}
	}
	for (int32_t i = 0; i < n; i++)
	{
		CpTopic    *t = &topics[i];

		if (!kvalid_topic_name(t->name))
		{
			t->error = KERR_NONE;
			cp_fail(t, KERR_INVALID_TOPIC_EXCEPTION, "invalid topic name");
		}
		if (t->count < 1)
			cp_fail(t, KERR_INVALID_PARTITIONS, "the number of partitions must be at least 1");
		if (t->error == KERR_NONE)
			grow_one(conn, t, validate_only);
	}

	kw_int32(w, 0);				/* throttle_time_ms */
	kw_array_len_v(w, flex, n);
	for (int32_t i = 0; i < n && !w->error; i++)
	{
		CpTopic    *t = &topics[i];

		kw_string_v(w, flex, (const char *) t->name.ptr, t->name.len < 0 ? 0 : t->name.len);
		kw_int16(w, t->error);
		kw_cstring_v(w, flex, t->error == KERR_NONE ? NULL : t->message);
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	free(topics);
	free(sorted);
	return KH_OK;
}
