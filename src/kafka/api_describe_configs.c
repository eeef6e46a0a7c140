/*-------------------------------------------------------------------------
 *
 * api_describe_configs.c
 *	  DescribeConfigs (key 32), versions 0 to 4: a topic's settings from
 *	  eventlog.topic_catalog as Kafka's topic configs (admin.c lists
 *	  them), and a short, honest list for a broker.
 *
 * A topic's configs are cleanup.policy, retention.ms, retention.bytes,
 * segment.ms, segment.bytes, delete.retention.ms, min.compaction.lag.ms,
 * max.compaction.lag.ms, and eventlog.format (not Kafka's: binary or
 * json).  Their source is
 * DEFAULT_CONFIG when the value is create_topic's default and
 * DYNAMIC_TOPIC_CONFIG otherwise.  The catalog is public (anyone may read
 * eventlog.topics), so any role may describe any topic.
 *
 * A broker (resource name "" or the id of one of the --brokers) has no
 * settings of its own: the list says what the gateway does (topics are
 * not auto-created, a created topic's defaults), all read-only.  Broker
 * loggers and other resource types are INVALID_REQUEST.
 *
 *-------------------------------------------------------------------------
 */
#include "admin.h"
#include "config.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KRES_TOPIC	2
#define KRES_BROKER 4

#define K_BROKER_NCONFIGS 10

typedef struct DcResource
{
	int8_t		type;
	KSlice		name;
	int32_t		nkeys;			/* -1: every config */
	KReader		keys;			/* where the keys start, to read again */
	int16_t		error;
	char		message[160];
	int			nconfigs;
	KConfigEntry configs[K_BROKER_NCONFIGS];
} DcResource;

static void
dc_fail(DcResource *res, int16_t error, const char *msg)
{
	res->error = error;
	snprintf(res->message, sizeof(res->message), "%s", msg);
}

/*
 * Which of a resource's configs the request's keys name (bit c for
 * configs[c]), in one pass over the keys however many there are.
 */
static uint32_t
wanted_mask(const DcResource *res, bool flex)
{
	KReader		r = res->keys;
	uint32_t	mask = 0;

	if (res->nkeys < 0)
		return (1u << res->nconfigs) - 1;
	for (int32_t i = 0; i < res->nkeys && !r.error; i++)
	{
		KSlice		k = kr_string_v(&r, flex);

		for (int c = 0; c < res->nconfigs && !r.error; c++)
			if (k.len == (int32_t) strlen(res->configs[c].name) &&
				memcmp(k.ptr, res->configs[c].name, (size_t) k.len) == 0)
				mask |= 1u << c;
	}
	return mask;
}

static void
broker_entry(KConfigEntry *e, const char *name, const char *value, int8_t source,
			 int8_t type, const char *doc)
{
	e->name = name;
	snprintf(e->value, sizeof(e->value), "%s", value);
	e->read_only = true;
	e->source = source;
	e->type = type;
	e->doc = doc;
}

static int
broker_configs(KConfigEntry *c, int32_t broker_id)
{
	int			n = 0;
	char		id[16];
	char		v[32];

	snprintf(id, sizeof(id), "%d", broker_id);
	broker_entry(&c[n++], "broker.id", id, KCFG_SOURCE_STATIC_BROKER, KCFG_TYPE_INT,
				 "This gateway's place in --brokers.");
	broker_entry(&c[n++], "auto.create.topics.enable", "false", KCFG_SOURCE_STATIC_BROKER,
				 KCFG_TYPE_BOOLEAN, "Topics are never created by asking for them.");
	broker_entry(&c[n++], "delete.topic.enable", "true", KCFG_SOURCE_DEFAULT,
				 KCFG_TYPE_BOOLEAN, "DeleteTopics drops topics (eventlog.drop_topic).");
	snprintf(v, sizeof(v), "%d", K_DEFAULT_PARTITIONS);
	broker_entry(&c[n++], "num.partitions", v, KCFG_SOURCE_DEFAULT, KCFG_TYPE_INT,
				 "The partitions of a topic created with num_partitions -1.");
	broker_entry(&c[n++], "default.replication.factor", "1", KCFG_SOURCE_DEFAULT,
				 KCFG_TYPE_SHORT, "One replica per partition: PostgreSQL replicates below the protocol.");
	snprintf(v, sizeof(v), "%lld", K_DEFAULT_RETENTION_MS);
	broker_entry(&c[n++], "log.retention.ms", v, KCFG_SOURCE_DEFAULT, KCFG_TYPE_LONG,
				 "The retention of a topic created without retention.ms.");
	snprintf(v, sizeof(v), "%lld", K_DEFAULT_RETENTION_BYTES);
	broker_entry(&c[n++], "log.retention.bytes", v, KCFG_SOURCE_DEFAULT, KCFG_TYPE_LONG,
				 "The size limit of a topic created without retention.bytes.");
	snprintf(v, sizeof(v), "%lld", K_DEFAULT_SEGMENT_MS);
	broker_entry(&c[n++], "log.roll.ms", v, KCFG_SOURCE_DEFAULT, KCFG_TYPE_LONG,
				 "The segment.ms of a topic created without it.");
	snprintf(v, sizeof(v), "%lld", K_DEFAULT_SEGMENT_BYTES);
	broker_entry(&c[n++], "log.segment.bytes", v, KCFG_SOURCE_DEFAULT, KCFG_TYPE_INT,
				 "The segment.bytes of a topic created without it.");
	broker_entry(&c[n++], "log.cleanup.policy", "delete", KCFG_SOURCE_DEFAULT, KCFG_TYPE_LIST,
				 "Only delete: pg_eventlog has no compaction.");
	return n;
}

/* A broker resource's name: "" or the id of one of the brokers. */
static bool
broker_name(KSlice name, int32_t *id)
{
	int32_t		v = 0;

	if (name.len == 0)
	{
		*id = kconf.node_id;
		return true;
	}
	if (name.len < 0 || name.len > 9)
		return false;
	for (int i = 0; i < name.len; i++)
	{
		if (name.ptr[i] < '0' || name.ptr[i] > '9')
			return false;
		v = v * 10 + (name.ptr[i] - '0');
	}
	if (v >= kconf.nbrokers)
		return false;
	*id = v;
	return true;
}

static void
describe_one(KConn *conn, DcResource *res)
{
	int32_t		broker_id;

	if (res->type == KRES_BROKER)
	{
		if (!broker_name(res->name, &broker_id))
			dc_fail(res, KERR_INVALID_REQUEST, "no such broker: a broker is named by its id in --brokers");
		else
			res->nconfigs = broker_configs(res->configs, broker_id);
	}
	else if (res->type == KRES_TOPIC)
	{
		KTopicSettings s;
		char		sqlstate[6];
		char	   *name;
		int			found;

		if (!kvalid_topic_name(res->name))
		{
			dc_fail(res, KERR_INVALID_TOPIC_EXCEPTION, "invalid topic name");
			return;
		}
		name = kslice_dup(res->name);
		if (name == NULL)
		{
			dc_fail(res, KERR_UNKNOWN_SERVER_ERROR, "out of memory");
			return;
		}
		found = kadmin_topic_settings(conn, name, 0, &s, sqlstate);
		free(name);
		if (found < 0)
			dc_fail(res, KERR_UNKNOWN_SERVER_ERROR, "cannot read the topic catalog");
		else if (found == 0)
			dc_fail(res, KERR_UNKNOWN_TOPIC_OR_PARTITION, "no such topic");
		else
			res->nconfigs = kadmin_topic_configs(&s, res->configs);
	}
	else
		dc_fail(res, KERR_INVALID_REQUEST, "only topic and broker configs can be described");
}

KHandlerResult
khandle_describe_configs(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	int32_t		n;
	bool		synonyms = false;
	bool		docs = false;
	DcResource *res = NULL;

	/* Each: a type, a name, a nullable array. */
	n = kr_array_len_v(r, flex, flex ? 4 : 7);
	if (n > K_MAX_ADMIN_TOPICS)
	{
		klog(KLOG_WARNING, "conn %llu (%s): DescribeConfigs request names %d resources, more than %d: closing",
			 (unsigned long long) conn->id, conn->peer, n, K_MAX_ADMIN_TOPICS);
		return KH_CLOSE;
	}
	if (n < 0)
		n = 0;
	if (n > 0 && (res = calloc((size_t) n, sizeof(DcResource))) == NULL)
	{
		klog(KLOG_WARNING, "conn %llu (%s): out of memory for a DescribeConfigs request: closing",
			 (unsigned long long) conn->id, conn->peer);
		return KH_CLOSE;
	}
	for (int32_t i = 0; i < n && !r->error; i++)
	{
		res[i].type = kr_int8(r);
		res[i].name = kr_string_v(r, flex);
		res[i].nkeys = kr_array_len_v(r, flex, flex ? 1 : 2);
		res[i].keys = *r;
		for (int32_t k = 0; k < res[i].nkeys && !r->error; k++)
			(void) kr_string_v(r, flex);
		kr_tags_v(r, flex);
	}
	if (v >= 1)
		synonyms = kr_bool(r);
	if (v >= 3)
		docs = kr_bool(r);
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		free(res);
		return KH_MALFORMED;
	}

	for (int32_t i = 0; i < n; i++)
		describe_one(conn, &res[i]);

	kw_int32(w, 0);				/* throttle_time_ms */
	kw_array_len_v(w, flex, n);
	for (int32_t i = 0; i < n && !w->error; i++)
	{
		DcResource *d = &res[i];
		uint32_t	mask = wanted_mask(d, flex);
		int			nout = 0;

		kw_int16(w, d->error);
		kw_cstring_v(w, flex, d->error == KERR_NONE ? NULL : d->message);
		kw_int8(w, d->type);
		kw_string_v(w, flex, (const char *) d->name.ptr, d->name.len < 0 ? 0 : d->name.len);
		for (int c = 0; c < d->nconfigs; c++)
			if (mask & (1u << c))
				nout++;
		kw_array_len_v(w, flex, nout);
		for (int c = 0; c < d->nconfigs; c++)
		{
			const KConfigEntry *e = &d->configs[c];

			if (!(mask & (1u << c)))
				continue;
			kw_cstring_v(w, flex, e->name);
			kw_cstring_v(w, flex, e->value);
			kw_bool(w, e->read_only);
			if (v == 0)
				kw_bool(w, e->source == KCFG_SOURCE_DEFAULT);	/* is_default */
			else
				kw_int8(w, e->source);
			kw_bool(w, false);	/* is_sensitive */
			if (v >= 1)
			{
				/* The synonyms, most specific first: just the value itself. */
				kw_array_len_v(w, flex, synonyms ? 1 : 0);
				if (synonyms)
				{
					kw_cstring_v(w, flex, e->name);
					kw_cstring_v(w, flex, e->value);
					kw_int8(w, e->source);
					kw_tags_v(w, flex);
				}
			}
			if (v >= 3)
			{
				kw_int8(w, e->type);
				kw_cstring_v(w, flex, docs ? e->doc : NULL);
			}
			kw_tags_v(w, flex);
		}
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	free(res);
	return KH_OK;
}
