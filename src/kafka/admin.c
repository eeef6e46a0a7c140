/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  What the administrative APIs share (admin.h): a topic's settings
 *	  read from eventlog.topic_catalog in Kafka's units and written as
 *	  Kafka's topic configs, and validate_only's rolled-back transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "admin.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *
kslice_dup(KSlice s)
{
	size_t		len = s.len > 0 ? (size_t) s.len : 0;
	char	   *d = malloc(len + 1);

	if (d == NULL)
		return NULL;
	if (len > 0)
		memcpy(d, s.ptr, len);
	d[len] = '\0';
	return d;
}

int
kslice_cmp(KSlice a, KSlice b)
{
	int			alen = a.len > 0 ? a.len : 0;
	int			blen = b.len > 0 ? b.len : 0;
	int			c;

	if (KSLICE_IS_NULL(a) || KSLICE_IS_NULL(b))
		return KSLICE_IS_NULL(b) - KSLICE_IS_NULL(a);
	c = memcmp(a.ptr, b.ptr, (size_t) (alen < blen ? alen : blen));
	return c != 0 ? c : (alen > blen) - (alen < blen);
}

int32_t
kuuid_topic_id(const uint8_t uuid[16])
{
	return (int32_t) (((uint32_t) uuid[12] << 24) | ((uint32_t) uuid[13] << 16) |
					  ((uint32_t) uuid[14] << 8) | uuid[15]);
}

/*
 * Intervals in milliseconds, rounded as Kafka's longs are whole: the
 * catalog keeps microseconds, which a Kafka client cannot name anyway.
 */
static const char *const settings_sql =
"SELECT t.topic_id, t.partitions,"
"       (EXTRACT(epoch FROM t.created_at) * 1000000)::pg_catalog.int8,"
"       coalesce((EXTRACT(epoch FROM t.retention) * 1000)::pg_catalog.int8, -1),"
"       coalesce(t.retention_bytes, -1),"
"       (EXTRACT(epoch FROM t.segment_interval) * 1000)::pg_catalog.int8,"
"       t.segment_bytes, t.format, t.cleanup_policy,"
"       (EXTRACT(epoch FROM t.delete_retention) * 1000)::pg_catalog.int8,"
"       (EXTRACT(epoch FROM t.min_compaction_lag) * 1000)::pg_catalog.int8,"
"       coalesce((EXTRACT(epoch FROM t.max_compaction_lag) * 1000)::pg_catalog.int8,"
"                9223372036854775807)"
"  FROM eventlog.topic_catalog t"
" WHERE ($1::pg_catalog.text IS NOT NULL AND t.name OPERATOR(pg_catalog.=) $1::pg_catalog.text)"
"    OR t.topic_id OPERATOR(pg_catalog.=) $2::pg_catalog.int4";

int
kadmin_topic_settings(KConn *conn, const char *name, int32_t topic_id,
					  KTopicSettings *out, char sqlstate[6])
{
	char		idbuf[16];
	const char *params[2];
	PGresult   *res;

	snprintf(idbuf, sizeof(idbuf), "%d", name ? -1 : topic_id);
	params[0] = name;
	params[1] = idbuf;
	res = kpg_exec(conn, settings_sql, 2, params, sqlstate);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1)
	{
		PQclear(res);
		return 0;
	}
	memset(out, 0, sizeof(*out));
	out->topic_id = (int32_t) strtol(PQgetvalue(res, 0, 0), NULL, 10);
	out->partitions = (int32_t) strtol(PQgetvalue(res, 0, 1), NULL, 10);
	out->created_us = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
	out->retention_ms = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
	out->retention_bytes = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
	out->segment_ms = strtoll(PQgetvalue(res, 0, 5), NULL, 10);
	out->segment_bytes = strtoll(PQgetvalue(res, 0, 6), NULL, 10);
	snprintf(out->format, sizeof(out->format), "%s", PQgetvalue(res, 0, 7));
	snprintf(out->cleanup_policy, sizeof(out->cleanup_policy), "%s", PQgetvalue(res, 0, 8));
	out->delete_retention_ms = strtoll(PQgetvalue(res, 0, 9), NULL, 10);
	out->min_compaction_lag_ms = strtoll(PQgetvalue(res, 0, 10), NULL, 10);
	out->max_compaction_lag_ms = strtoll(PQgetvalue(res, 0, 11), NULL, 10);
	PQclear(res);
	return 1;
}

static void
set_entry(KConfigEntry *e, const char *name, int64_t value, int64_t dflt,
		  int8_t type, const char *doc)
{
	e->name = name;
	snprintf(e->value, sizeof(e->value), "%lld", (long long) value);
	e->read_only = false;		/* eventlog.alter_topic changes it */
	e->source = value == dflt ? KCFG_SOURCE_DEFAULT : KCFG_SOURCE_TOPIC;
	e->type = type;
	e->doc = doc;
}

int
kadmin_topic_configs(const KTopicSettings *t, KConfigEntry out[K_TOPIC_NCONFIGS])
{
	int			n = 0;

	out[n].name = "cleanup.policy";
	snprintf(out[n].value, sizeof(out[n].value), "%s", t->cleanup_policy);
	out[n].read_only = false;	/* eventlog.alter_topic changes it */
	out[n].source = strcmp(t->cleanup_policy, "delete") == 0 ?
		KCFG_SOURCE_DEFAULT : KCFG_SOURCE_TOPIC;
	out[n].type = KCFG_TYPE_LIST;
	out[n].doc = "delete: retention drops whole segments; compact: compaction keeps the latest record of each key (eventlog.topics.cleanup_policy).";
	n++;
	set_entry(&out[n++], "retention.ms", t->retention_ms, K_DEFAULT_RETENTION_MS,
			  KCFG_TYPE_LONG, "The topic's retention (eventlog.topics.retention); -1: forever.");
	set_entry(&out[n++], "retention.bytes", t->retention_bytes, K_DEFAULT_RETENTION_BYTES,
			  KCFG_TYPE_LONG, "The size limit of each partition (eventlog.topics.retention_bytes); -1: none.");
	set_entry(&out[n++], "segment.ms", t->segment_ms, K_DEFAULT_SEGMENT_MS,
			  KCFG_TYPE_LONG, "The age at which a partition's segment rolls (eventlog.topics.segment_interval).");
	set_entry(&out[n++], "segment.bytes", t->segment_bytes, K_DEFAULT_SEGMENT_BYTES,
			  KCFG_TYPE_LONG, "The size at which a partition's segment rolls (eventlog.topics.segment_bytes).");
	set_entry(&out[n++], "delete.retention.ms", t->delete_retention_ms,
			  K_DEFAULT_DELETE_RETENTION_MS, KCFG_TYPE_LONG,
			  "How long compaction keeps a tombstone (eventlog.topics.delete_retention).");
	set_entry(&out[n++], "min.compaction.lag.ms", t->min_compaction_lag_ms, 0,
			  KCFG_TYPE_LONG,
			  "The age below which records are not compacted (eventlog.topics.min_compaction_lag).");
	set_entry(&out[n++], "max.compaction.lag.ms", t->max_compaction_lag_ms,
			  K_NO_MAX_COMPACTION_LAG, KCFG_TYPE_LONG,
			  "The age by which a record can be compacted (eventlog.topics.max_compaction_lag).");
	/* Not a Kafka config: what SQL sees of the records. */
	out[n].name = "eventlog.format";
	snprintf(out[n].value, sizeof(out[n].value), "%s", t->format);
	out[n].read_only = true;
	out[n].source = KCFG_SOURCE_TOPIC;
	out[n].type = KCFG_TYPE_STRING;
	out[n].doc = "pg_eventlog's record format, fixed at creation: binary (Kafka's bytes) or json.";
	n++;
	return n;
}

bool
kadmin_validate_begin(KConn *conn)
{
	char		sqlstate[6];
	PGresult   *res = kpg_exec(conn, "BEGIN", 0, NULL, sqlstate);

	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

void
kadmin_validate_end(KConn *conn)
{
	char		sqlstate[6];
	PGresult   *res = kpg_exec(conn, "ROLLBACK", 0, NULL, sqlstate);

	/* On failure kpg_exec has dropped a broken session; a live one is idle. */
	PQclear(res);
}
