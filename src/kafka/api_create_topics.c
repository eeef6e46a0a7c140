/*-------------------------------------------------------------------------
 *
 * api_create_topics.c
 *	  CreateTopics (key 19), versions 0 to 7: each topic becomes
 *	  eventlog.create_topic(..., format => 'binary'), run as the
 *	  connection's role, so a Kafka client creates exactly the topics that
 *	  role may create in SQL (EXECUTE on create_topic).
 *
 * Topics created over Kafka are binary: keys, values and headers are kept
 * byte for byte.  num_partitions -1 gives K_DEFAULT_PARTITIONS (1, Kafka's
 * num.partitions default).  The replication factor must be -1 or 1: every
 * partition has one replica as far as Kafka can see (PostgreSQL does the
 * replication, below the protocol), so asking for more is refused with
 * INVALID_REPLICATION_FACTOR rather than silently given less.  Manual
 * assignments are refused (the gateways decide leaders).  Configs map to
 * create_topic's settings: retention.ms, retention.bytes, segment.ms,
 * segment.bytes, cleanup.policy (delete, compact or both),
 * delete.retention.ms, min.compaction.lag.ms and max.compaction.lag.ms;
 * any other config is INVALID_CONFIG, so nothing a client asked for is
 * silently dropped.
 *
 * Each topic is one create_topic call, a transaction of its own: a topic
 * is created whole or not at all, and topics are independent of each other
 * as in Kafka (one topic's error does not stop the others).  validate_only
 * runs the same call in a transaction block that is rolled back, so that
 * every check the extension makes (privileges, existence, limits) is made.
 *
 *-------------------------------------------------------------------------
 */
#include "admin.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Milliseconds taken as "never": about 31,700 years.  Kafka writes
 * Long.MAX_VALUE for "never" (max.compaction.lag.ms's default; tools that
 * copy a topic's configs send it), which overflows an interval (int64
 * microseconds, and interval_mul computes in float8).  From this value on,
 * retention.ms and max.compaction.lag.ms are NULL, none; the other
 * settings become this many milliseconds, never reached, instead of an
 * "interval out of range" error.
 */
#define K_MAX_INTERVAL_MS	"1000000000000000"

typedef struct CtTopic
{
	KSlice		name;
	int32_t		num_partitions;
	int16_t		replication_factor;
	bool		has_retention_ms;
	bool		has_retention_bytes;
	bool		has_segment_ms;
	bool		has_segment_bytes;
	int64_t		retention_ms;
	int64_t		retention_bytes;
	int64_t		segment_ms;
	int64_t		segment_bytes;
	const char *cleanup_policy; /* NULL: the default */
	bool		has_delete_retention_ms;
	bool		has_min_lag_ms;
	bool		has_max_lag_ms;
	int64_t		delete_retention_ms;
	int64_t		min_lag_ms;
	int64_t		max_lag_ms;
	int16_t		error;
	char		message[240];
	bool		have_settings;
	KTopicSettings settings;
} CtTopic;

/* The first error of a topic is the one it gets. */
static void
ct_fail(CtTopic *t, int16_t error, const char *fmt, const char *arg)
{
	if (t->error != KERR_NONE)
		return;
	t->error = error;
	snprintf(t->message, sizeof(t->message), fmt, arg);
}

/* A Kafka long, as Kafka parses one (surrounding blanks allowed). */
static bool
parse_long(KSlice v, int64_t *out)
{
	char		buf[32];
	char	   *end;
	int			len = v.len;
	const uint8_t *p = v.ptr;

	while (len > 0 && (p[0] == ' ' || p[0] == '\t'))
		p++, len--;
	while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	if (len <= 0 || len >= (int) sizeof(buf))
		return false;
	memcpy(buf, p, (size_t) len);
	buf[len] = '\0';
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return errno == 0 && *end == '\0';
}

static bool
slice_is(KSlice s, const char *lit)
{
	size_t		n = strlen(lit);

	return s.len == (int32_t) n && memcmp(s.ptr, lit, n) == 0;
}

/* One config of a topic: checked and recorded, or the topic's error. */
static void
take_config(CtTopic *t, KSlice name, KSlice value)
{
	char		shown[64];
	int64_t		v = 0;

	snprintf(shown, sizeof(shown), "%.*s", name.len > 48 ? 48 : name.len,
			 (const char *) name.ptr);
	for (char *c = shown; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	if (KSLICE_IS_NULL(value))
	{
		ct_fail(t, KERR_INVALID_CONFIG, "config %s has a null value", shown);
		return;
	}
	if (slice_is(name, "cleanup.policy"))
	{
		if (slice_is(value, "delete"))
			t->cleanup_policy = "delete";
		else if (slice_is(value, "compact"))
			t->cleanup_policy = "compact";
		else if (slice_is(value, "compact,delete") || slice_is(value, "delete,compact"))
			t->cleanup_policy = "compact,delete";
		else
			ct_fail(t, KERR_INVALID_CONFIG,
					"cleanup.policy must be delete, compact or compact,delete%s", "");
		return;
	}
	if (!slice_is(name, "retention.ms") && !slice_is(name, "retention.bytes") &&
		!slice_is(name, "segment.ms") && !slice_is(name, "segment.bytes") &&
		!slice_is(name, "delete.retention.ms") && !slice_is(name, "min.compaction.lag.ms") &&
		!slice_is(name, "max.compaction.lag.ms"))
	{
		ct_fail(t, KERR_INVALID_CONFIG,
				"unsupported topic config %s: pg_eventlog knows retention.*, segment.*, cleanup.policy, delete.retention.ms and *.compaction.lag.ms", shown);
		return;
	}
	if (!parse_long(value, &v))
	{
		ct_fail(t, KERR_INVALID_CONFIG, "config %s is not an integer", shown);
		return;
	}
	if (slice_is(name, "retention.ms") || slice_is(name, "retention.bytes"))
	{
		/* -1 is Kafka's "no limit"; 0 and other negatives are not limits. */
		if (v == 0 || v < -1)
		{
			ct_fail(t, KERR_INVALID_CONFIG, "config %s must be positive or -1", shown);
			return;
		}
		if (slice_is(name, "retention.ms"))
			t->has_retention_ms = true, t->retention_ms = v;
		else
			t->has_retention_bytes = true, t->retention_bytes = v;
		return;
	}
	if (slice_is(name, "delete.retention.ms") || slice_is(name, "min.compaction.lag.ms"))
	{
		/* create_topic checks the rest (22023: INVALID_CONFIG). */
		if (slice_is(name, "delete.retention.ms"))
			t->has_delete_retention_ms = true, t->delete_retention_ms = v;
		else
			t->has_min_lag_ms = true, t->min_lag_ms = v;
		return;
	}
	if (v <= 0)
	{
		ct_fail(t, KERR_INVALID_CONFIG, "config %s must be positive", shown);
		return;
	}
	if (slice_is(name, "max.compaction.lag.ms"))
	{
		/* Kafka's default, Long.MAX_VALUE, is no maximum. */
		t->has_max_lag_ms = v != K_NO_MAX_COMPACTION_LAG;
		t->max_lag_ms = v;
		return;
	}
	if (slice_is(name, "segment.ms"))
		t->has_segment_ms = true, t->segment_ms = v;
	else
		t->has_segment_bytes = true, t->segment_bytes = v;
}

static int16_t
create_error(const char *sqlstate)
{
	if (strcmp(sqlstate, "42710") == 0)
		return KERR_TOPIC_ALREADY_EXISTS;
	if (strcmp(sqlstate, "42501") == 0)
		return KERR_TOPIC_AUTHORIZATION_FAILED;
	if (strcmp(sqlstate, "53400") == 0)
		return KERR_INVALID_PARTITIONS;
	/* Invalid settings (22023) and values out of range (22008, 22003). */
	if (strncmp(sqlstate, "22", 2) == 0)
		return KERR_INVALID_CONFIG;
	return KERR_UNKNOWN_SERVER_ERROR;
}

/* Run create_topic for one topic (its checks passed). */
static void
create_one(KConn *conn, CtTopic *t, bool validate_only)
{
	char		sql[1024];
	char		pbuf[9][32];
	const char *params[10];
	int			np = 0;
	char		sqlstate[6];
	char		msg[200];
	char	   *name = kslice_dup(t->name);
	PGresult   *res;
	int			found;

	if (name == NULL)
	{
		ct_fail(t, KERR_UNKNOWN_SERVER_ERROR, "out of memory%s", "");
		return;
	}
	/* Only fixed text goes into the SQL; the values are parameters. */
	params[np++] = name;
	snprintf(pbuf[0], sizeof(pbuf[0]), "%d", t->num_partitions);
	params[np++] = pbuf[0];
	snprintf(sql, sizeof(sql),
			 "SELECT eventlog.create_topic($1::pg_catalog.text, partitions => $2::pg_catalog.int4, format => 'binary'");
	if (t->has_retention_ms)
	{
		/* -1: NULL, kept forever. */
		snprintf(pbuf[1], sizeof(pbuf[1]), "%lld", (long long) t->retention_ms);
		params[np++] = pbuf[1];
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
				 ", retention => pg_catalog.justify_hours(CASE WHEN $%d::pg_catalog.int8 OPERATOR(pg_catalog.<) " K_MAX_INTERVAL_MS " THEN NULLIF($%d::pg_catalog.int8, -1) END * interval '1 millisecond')",
				 np, np);
	}
	if (t->has_retention_bytes)
	{
		snprintf(pbuf[2], sizeof(pbuf[2]), "%lld", (long long) t->retention_bytes);
		params[np++] = pbuf[2];
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
				 ", retention_bytes => NULLIF($%d::pg_catalog.int8, -1)", np);
	}
	if (t->has_segment_ms)
	{
		snprintf(pbuf[3], sizeof(pbuf[3]), "%lld", (long long) t->segment_ms);
		params[np++] = pbuf[3];
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
				 ", segment_interval => pg_catalog.justify_hours(pg_catalog.int8smaller($%d::pg_catalog.int8, " K_MAX_INTERVAL_MS ") * interval '1 millisecond')",
				 np);
	}
	if (t->has_segment_bytes)
	{
		snprintf(pbuf[4], sizeof(pbuf[4]), "%lld", (long long) t->segment_bytes);
		params[np++] = pbuf[4];
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
				 ", segment_bytes => $%d::pg_catalog.int8", np);
	}
	if (t->cleanup_policy)
	{
		params[np++] = t->cleanup_policy;
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
				 ", cleanup_policy => $%d::pg_catalog.text", np);
	}
	if (t->has_delete_retention_ms)
	{
		snprintf(pbuf[5], sizeof(pbuf[5]), "%lld", (long long) t->delete_retention_ms);
		params[np++] = pbuf[5];
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
				 ", delete_retention => pg_catalog.justify_hours(pg_catalog.int8smaller($%d::pg_catalog.int8, " K_MAX_INTERVAL_MS ") * interval '1 millisecond')",
				 np);
	}
	if (t->has_min_lag_ms)
	{
		snprintf(pbuf[6], sizeof(pbuf[6]), "%lld", (long long) t->min_lag_ms);
		params[np++] = pbuf[6];
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
				 ", min_compaction_lag => pg_catalog.justify_hours(pg_catalog.int8smaller($%d::pg_catalog.int8, " K_MAX_INTERVAL_MS ") * interval '1 millisecond')",
				 np);
	}
	if (t->has_max_lag_ms)
	{
		snprintf(pbuf[7], sizeof(pbuf[7]), "%lld", (long long) t->max_lag_ms);
		params[np++] = pbuf[7];
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
				 ", max_compaction_lag => pg_catalog.justify_hours(CASE WHEN $%d::pg_catalog.int8 OPERATOR(pg_catalog.<) " K_MAX_INTERVAL_MS " THEN $%d::pg_catalog.int8 END * interval '1 millisecond')",
				 np, np);
	}
	snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), ")%s",
			 validate_only ? K_VALIDATE_GUARD : "");

	if (validate_only && !kadmin_validate_begin(conn))
	{
		ct_fail(t, KERR_UNKNOWN_SERVER_ERROR, "cannot reach PostgreSQL%s", "");
		free(name);
		return;
	}
	res = kpg_exec_msg(conn, sql, np, params, sqlstate, msg, sizeof(msg));
	if (res == NULL)
		ct_fail(t, create_error(sqlstate), "%s", msg[0] ? msg : "cannot reach PostgreSQL");
	else if (PQntuples(res) != 1)
		ct_fail(t, KERR_UNKNOWN_SERVER_ERROR,
				"the PostgreSQL session was replaced during validation%s", "");
	PQclear(res);
	if (t->error == KERR_NONE)
	{
		found = kadmin_topic_settings(conn, name, 0, &t->settings, sqlstate);
		t->have_settings = found == 1;
	}
	if (validate_only)
		kadmin_validate_end(conn);
	free(name);
}

static int
compare_by_name(const void *x, const void *y)
{
	const CtTopic *a = *(CtTopic *const *) x;
	const CtTopic *b = *(CtTopic *const *) y;

	return kslice_cmp(a->name, b->name);
}

static void
write_configs(KWriter *w, const CtTopic *t)
{
	KConfigEntry cfg[K_TOPIC_NCONFIGS];
	int			n;

	if (!t->have_settings)
	{
		kw_compact_array_len(w, 0);
		return;
	}
	n = kadmin_topic_configs(&t->settings, cfg);
	kw_compact_array_len(w, n);
	for (int i = 0; i < n; i++)
	{
		kw_cstring_v(w, true, cfg[i].name);
		kw_cstring_v(w, true, cfg[i].value);
		kw_bool(w, cfg[i].read_only);
		kw_int8(w, cfg[i].source);
		kw_bool(w, false);		/* is_sensitive */
		kw_empty_tagged_fields(w);
	}
}

KHandlerResult
khandle_create_topics(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	int32_t		n;
	bool		validate_only = false;
	CtTopic    *topics = NULL;
	CtTopic   **sorted = NULL;

	/* Each: a name, num_partitions, replication_factor, two arrays. */
	n = kr_array_len_v(r, flex, flex ? 10 : 16);
	if (n > K_MAX_ADMIN_TOPICS)
	{
		klog(KLOG_WARNING, "conn %llu (%s): CreateTopics request names %d topics, more than %d: closing",
			 (unsigned long long) conn->id, conn->peer, n, K_MAX_ADMIN_TOPICS);
		return KH_CLOSE;
	}
	if (n < 0)
		n = 0;					/* null is no topic (malformed below if v0-4) */
	if (n > 0)
	{
		topics = calloc((size_t) n, sizeof(CtTopic));
		sorted = calloc((size_t) n, sizeof(CtTopic *));
		if (topics == NULL || sorted == NULL)
		{
			klog(KLOG_WARNING, "conn %llu (%s): out of memory for a CreateTopics request: closing",
				 (unsigned long long) conn->id, conn->peer);
			free(topics);
			free(sorted);
			return KH_CLOSE;
		}
	}
	for (int32_t i = 0; i < n && !r->error; i++)
	{
		CtTopic    *t = &topics[i];
		int32_t		na;
		int32_t		nc;

		t->name = kr_string_v(r, flex);
		t->num_partitions = kr_int32(r);
		t->replication_factor = kr_int16(r);
		/* Assignments: a partition index and an array of broker ids. */
		na = kr_array_len_v(r, flex, flex ? 6 : 8);
		for (int32_t a = 0; a < na && !r->error; a++)
		{
			int32_t		nb;

			(void) kr_int32(r);
			nb = kr_array_len_v(r, flex, 4);
			for (int32_t b = 0; b < nb && !r->error; b++)
				(void) kr_int32(r);
			kr_tags_v(r, flex);
		}
		if (na > 0)
			ct_fail(t, KERR_INVALID_REPLICA_ASSIGNMENT,
					"manual replica assignment is not supported: the gateways lead every partition%s", "");
		nc = kr_array_len_v(r, flex, flex ? 3 : 4);
		for (int32_t c = 0; c < nc && !r->error; c++)
		{
			KSlice		cname = kr_string_v(r, flex);
			KSlice		cvalue = kr_nullable_string_v(r, flex);

			kr_tags_v(r, flex);
			if (!r->error)
				take_config(t, cname, cvalue);
		}
		kr_tags_v(r, flex);
		sorted[i] = t;
	}
	(void) kr_int32(r);			/* timeout_ms: each topic is done when answered */
	if (v >= 1)
		validate_only = kr_bool(r);
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		free(topics);
		free(sorted);
		return KH_MALFORMED;
	}

	/* A name given twice is an invalid request for each entry, as in Kafka. */
	if (n > 1)
	{
		qsort(sorted, (size_t) n, sizeof(CtTopic *), compare_by_name);
		for (int32_t i = 1; i < n; i++)
			if (kslice_cmp(sorted[i - 1]->name, sorted[i]->name) == 0)
			{
				sorted[i - 1]->error = sorted[i]->error = KERR_NONE;
				ct_fail(sorted[i - 1], KERR_INVALID_REQUEST, "topic named more than once in the request%s", "");
				ct_fail(sorted[i], KERR_INVALID_REQUEST, "topic named more than once in the request%s", "");
			}
	}

	for (int32_t i = 0; i < n; i++)
	{
		CtTopic    *t = &topics[i];

		if (!kvalid_topic_name(t->name))
		{
			t->error = KERR_NONE;	/* the name's error comes first */
			ct_fail(t, KERR_INVALID_TOPIC_EXCEPTION,
					"invalid topic name: 1 to 249 characters of [a-zA-Z0-9._-], not \".\" or \"..\"%s", "");
			continue;
		}
		if (t->name.len > K_EXT_MAX_TOPIC_NAME)
			ct_fail(t, KERR_INVALID_TOPIC_EXCEPTION,
					"topic names are at most 200 characters in pg_eventlog%s", "");
		if (t->num_partitions == -1)
			t->num_partitions = K_DEFAULT_PARTITIONS;
		else if (t->num_partitions < 1)
			ct_fail(t, KERR_INVALID_PARTITIONS, "the number of partitions must be at least 1 (or -1 for the default, 1)%s", "");
		if (t->replication_factor != -1 && t->replication_factor != 1)
			ct_fail(t, KERR_INVALID_REPLICATION_FACTOR,
					"the replication factor must be 1 (or -1): each partition has one replica, PostgreSQL replicates below the protocol%s", "");
		if (t->error == KERR_NONE)
			create_one(conn, t, validate_only);
	}

	if (v >= 2)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_array_len_v(w, flex, n);
	for (int32_t i = 0; i < n && !w->error; i++)
	{
		CtTopic    *t = &topics[i];

		kw_string_v(w, flex, (const char *) t->name.ptr, t->name.len < 0 ? 0 : t->name.len);
		if (v >= 7)
		{
			uint8_t		uuid[16] = {0};

			if (t->error == KERR_NONE && t->have_settings && !validate_only)
				ktopic_uuid(t->settings.topic_id, t->settings.created_us, uuid);
			kw_raw(w, uuid, 16);
		}
		kw_int16(w, t->error);
		if (v >= 1)
			kw_cstring_v(w, flex, t->error == KERR_NONE ? NULL : t->message);
		if (v >= 5)
		{
			bool		ok = t->error == KERR_NONE && t->have_settings;

			kw_int32(w, ok ? t->settings.partitions : -1);
			kw_int16(w, ok ? 1 : -1);
			if (ok)
				write_configs(w, t);
			else
				kw_compact_array_len(w, 0);
		}
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	free(topics);
	free(sorted);
	return KH_OK;
}
