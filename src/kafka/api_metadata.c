/*-------------------------------------------------------------------------
 *
 * api_metadata.c
 *	  Metadata (key 3), versions 0 to 12: the brokers (this gateway, or
 *	  every gateway of --brokers), the cluster id, the controller, and the
 *	  topics of eventlog.topic_catalog with their partitions and leaders.
 *
 * The catalog is read as the connection's role, so a client sees what
 * that role sees in SQL (the catalog is public metadata, as pg_class is,
 * and authorized operations follow the topic's privileges).  A requested
 * topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION: topics are
 * never created by asking for them (allow_auto_topic_creation is ignored).
 * Every partition has one replica, its leader, always in sync: PostgreSQL
 * does the replication, below the protocol.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "log.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Topics one request may name; more closes the connection. */
#define K_MAX_METADATA_TOPICS	100000

/* Kafka's authorized operations (AclOperation codes) as bits. */
#define KOP(code)			(1 << (code))
#define KOP_READ			KOP(3)
#define KOP_WRITE			KOP(4)
#define KOP_DELETE			KOP(6)
#define KOP_ALTER			KOP(7)
#define KOP_DESCRIBE		KOP(8)
#define KOP_DESCRIBE_CONFIGS KOP(10)
#define KOP_ALTER_CONFIGS	KOP(11)
#define KOPS_NOT_REQUESTED	INT32_MIN

typedef struct MdRequested
{
	KSlice		name;			/* null if asked for by id */
	uint8_t		uuid[16];		/* zero if asked for by name */
	int16_t		error;
	int			row;			/* in the result, or -1 */
} MdRequested;

static const uint8_t zero_uuid[16];

static int
compare_name(const uint8_t *a, int alen, const uint8_t *b, int blen)
{
	int			c = memcmp(a, b, (size_t) (alen < blen ? alen : blen));

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

static int
compare_requested(const void *x, const void *y)
{
	const MdRequested *a = x;
	const MdRequested *b = y;

	if (KSLICE_IS_NULL(a->name) && KSLICE_IS_NULL(b->name))
		return memcmp(a->uuid, b->uuid, 16);
	if (KSLICE_IS_NULL(a->name) || KSLICE_IS_NULL(b->name))
		return KSLICE_IS_NULL(b->name) - KSLICE_IS_NULL(a->name);
	return compare_name(a->name.ptr, a->name.len, b->name.ptr, b->name.len);
}

/* A row's topic id, to find the rows of topics requested by id. */
typedef struct MdRowUuid
{
	uint8_t		uuid[16];
	int			row;
} MdRowUuid;

static int
compare_row_uuid(const void *x, const void *y)
{
	return memcmp(((const MdRowUuid *) x)->uuid, ((const MdRowUuid *) y)->uuid, 16);
}

/* The row of a topic id in uuids (sorted), or -1. */
static int
find_uuid_row(const MdRowUuid *uuids, int n, const uint8_t uuid[16])
{
	MdRowUuid	key;
	const MdRowUuid *hit;

	if (uuids == NULL)
		return -1;
	memcpy(key.uuid, uuid, 16);
	hit = bsearch(&key, uuids, (size_t) n, sizeof(MdRowUuid), compare_row_uuid);
	return hit ? hit->row : -1;
}

/* The row of the result (sorted by name, in C order) holding a name. */
static int
find_row(PGresult *res, KSlice name)
{
	int			lo = 0;
	int			hi = PQntuples(res) - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const char *v = PQgetvalue(res, mid, 1);
		int			c = compare_name(name.ptr, name.len, (const uint8_t *) v, (int) strlen(v));

		if (c == 0)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

static void
row_uuid(PGresult *res, int row, uint8_t out[16])
{
	ktopic_uuid((int32_t) strtol(PQgetvalue(res, row, 0), NULL, 10),
				strtoll(PQgetvalue(res, row, 3), NULL, 10), out);
}

static int32_t
row_authorized_operations(PGresult *res, int row)
{
	int32_t		ops = KOP_DESCRIBE | KOP_DESCRIBE_CONFIGS;

	if (PQgetisnull(res, row, 4))
		return KOPS_NOT_REQUESTED;
	if (PQgetvalue(res, row, 4)[0] == 't')
		ops |= KOP_READ | KOP_WRITE | KOP_DELETE | KOP_ALTER | KOP_ALTER_CONFIGS;
	if (PQgetvalue(res, row, 5)[0] == 't')
		ops |= KOP_WRITE;
	if (PQgetvalue(res, row, 6)[0] == 't')
		ops |= KOP_READ;
	return ops;
}

/* A topic of the result, with its partitions. */
static void
write_topic(KWriter *w, const KRequest *req, PGresult *res, int row)
{
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	const char *name = PQgetvalue(res, row, 1);
	int			namelen = (int) strlen(name);
	int32_t		npart = (int32_t) strtol(PQgetvalue(res, row, 2), NULL, 10);

	kw_int16(w, KERR_NONE);
	kw_string_v(w, flex, name, namelen);
	if (v >= 10)
	{
		uint8_t		uuid[16];

		row_uuid(res, row, uuid);
		kw_raw(w, uuid, 16);
	}
	if (v >= 1)
		kw_bool(w, false);		/* is_internal */
	kw_array_len_v(w, flex, npart);
	for (int32_t p = 0; p < npart && !w->error; p++)
	{
		int32_t		leader = kpartition_leader(name, namelen, p);

		kw_int16(w, KERR_NONE);
		kw_int32(w, p);
		kw_int32(w, leader);
		if (v >= 7)
			kw_int32(w, 0);		/* leader_epoch: leadership never moves */
		kw_array_len_v(w, flex, 1);
		kw_int32(w, leader);	/* replicas */
		kw_array_len_v(w, flex, 1);
		kw_int32(w, leader);	/* in-sync replicas */
		if (v >= 5)
			kw_array_len_v(w, flex, 0); /* offline replicas */
		kw_tags_v(w, flex);
	}
	if (v >= 8)
		kw_int32(w, row_authorized_operations(res, row));
	kw_tags_v(w, flex);
}

/* A requested topic that is not in the result. */
static void
write_missing_topic(KWriter *w, const KRequest *req, const MdRequested *t)
{
	bool		flex = req->flexible;
	int16_t		v = req->api_version;

	kw_int16(w, t->error);
	if (KSLICE_IS_NULL(t->name))
		kw_string_v(w, flex, NULL, -1);
	else
		kw_string_v(w, flex, (const char *) t->name.ptr, t->name.len);
	if (v >= 10)
		kw_raw(w, t->uuid, 16);
	if (v >= 1)
		kw_bool(w, false);
	kw_array_len_v(w, flex, 0);
	if (v >= 8)
		kw_int32(w, KOPS_NOT_REQUESTED);
	kw_tags_v(w, flex);
}

/*
 * The query's first two parameters: a text[] of the requested names and
 * an int4[] of the catalog ids of topics requested by id.  The names are
 * legal topic names ([A-Za-z0-9._-]), quoted all the same so that a topic
 * named NULL stays a name.
 */
static bool
build_params(MdRequested *req, int n, char **names, char **ids)
{
	size_t		nlen = 3;
	size_t		ilen = 3;
	char	   *np;
	char	   *ip;

	for (int i = 0; i < n; i++)
	{
		if (!KSLICE_IS_NULL(req[i].name))
			nlen += (size_t) req[i].name.len + 3;
		else
			ilen += 12;
	}
	*names = np = malloc(nlen);
	*ids = ip = malloc(ilen);
	if (np == NULL || ip == NULL)
		return false;
	*np++ = '{';
	*ip++ = '{';
	for (int i = 0; i < n; i++)
	{
		if (req[i].error != KERR_NONE && req[i].error != KERR_UNKNOWN_TOPIC_ID)
			continue;
		if (!KSLICE_IS_NULL(req[i].name))
		{
			if (np[-1] != '{')
				*np++ = ',';
			*np++ = '"';
			memcpy(np, req[i].name.ptr, (size_t) req[i].name.len);
			np += req[i].name.len;
			*np++ = '"';
		}
		else
		{
			const uint8_t *u = req[i].uuid;
			uint32_t	id = ((uint32_t) u[12] << 24) | ((uint32_t) u[13] << 16) |
				((uint32_t) u[14] << 8) | u[15];

			ip += sprintf(ip, "%s%d", ip[-1] == '{' ? "" : ",", (int32_t) id);
		}
	}
	*np++ = '}';
	*np = '\0';
	*ip++ = '}';
	*ip = '\0';
	return true;
}

static const char *const metadata_sql =
"SELECT t.topic_id, t.name, t.partitions,"
"       (EXTRACT(epoch FROM t.created_at) * 1000000)::pg_catalog.int8,"
"       CASE WHEN $3::pg_catalog.bool THEN eventlog.has_topic_privilege(t.name, 'owner') END,"
"       CASE WHEN $3::pg_catalog.bool THEN eventlog.has_topic_privilege(t.name, 'produce') END,"
"       CASE WHEN $3::pg_catalog.bool THEN eventlog.has_topic_privilege(t.name, 'consume') END"
"  FROM eventlog.topic_catalog t"
" WHERE $1::pg_catalog.text[] IS NULL"
"    OR t.name OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])"
"    OR t.topic_id OPERATOR(pg_catalog.=) ANY ($2::pg_catalog.int4[])"
" ORDER BY t.name COLLATE \"C\"";

KHandlerResult
khandle_metadata(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	int32_t		n;
	bool		all_topics;
	bool		want_ops = false;
	MdRequested *topics = NULL;
	int			nuniq = 0;
	char	   *names = NULL;
	char	   *ids = NULL;
	const char *params[3];
	char		sqlstate[6];
	PGresult   *res;
	int16_t		query_error = KERR_NONE;
	const char *cluster_id;
	KHandlerResult result = KH_OK;
	MdRowUuid  *uuids = NULL;
	int			nids = 0;

	/* Each entry: at least a name's length (and v10+: an id, its tags). */
	n = kr_array_len_v(r, flex, v >= 10 ? 18 : (flex ? 1 : 2));
	if (v == 0 && n < 0)
		return KH_MALFORMED;	/* v0 has no null array */
	all_topics = n < 0 || (v == 0 && n == 0);
	if (n > K_MAX_METADATA_TOPICS)
	{
		klog(KLOG_WARNING, "conn %llu (%s): Metadata request names %d topics, more than %d: closing",
			 (unsigned long long) conn->id, conn->peer, n, K_MAX_METADATA_TOPICS);
		return KH_CLOSE;
	}
	if (n > 0)
	{
		topics = calloc((size_t) n, sizeof(MdRequested));
		if (topics == NULL)
		{
			klog(KLOG_WARNING, "conn %llu (%s): out of memory for a Metadata request: closing",
				 (unsigned long long) conn->id, conn->peer);
			return KH_CLOSE;
		}
	}
	for (int32_t i = 0; i < n && !r->error; i++)
	{
		if (v >= 10)
		{
			const uint8_t *u = kr_take(r, 16);

			if (u)
				memcpy(topics[i].uuid, u, 16);
			topics[i].name = kr_nullable_string_v(r, flex);
		}
		else
			topics[i].name = kr_string_v(r, flex);
		kr_tags_v(r, flex);
		topics[i].row = -1;
	}
	if (v >= 4)
		(void) kr_bool(r);		/* allow_auto_topic_creation: never */
	if (v >= 8 && v <= 10)
		(void) kr_bool(r);		/* include_cluster_authorized_operations */
	if (v >= 8)
		want_ops = kr_bool(r);
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		free(topics);
		return KH_MALFORMED;
	}

	/* Each topic once (Kafka's broker takes them as a set), in name order. */
	if (n > 0)
	{
		qsort(topics, (size_t) n, sizeof(MdRequested), compare_requested);
		for (int32_t i = 0; i < n; i++)
		{
			if (nuniq > 0 && compare_requested(&topics[nuniq - 1], &topics[i]) == 0)
				continue;
			topics[nuniq] = topics[i];
			if (KSLICE_IS_NULL(topics[nuniq].name))
			{
				topics[nuniq].error = memcmp(topics[nuniq].uuid, zero_uuid, 16) == 0 ?
					KERR_INVALID_REQUEST : KERR_UNKNOWN_TOPIC_ID;
				nids++;
			}
			else if (!kvalid_topic_name(topics[nuniq].name))
				topics[nuniq].error = KERR_INVALID_TOPIC_EXCEPTION;
			nuniq++;
		}
	}

	if (!all_topics && !build_params(topics, nuniq, &names, &ids))
	{
		klog(KLOG_WARNING, "conn %llu (%s): out of memory for a Metadata request: closing",
			 (unsigned long long) conn->id, conn->peer);
		free(names);
		free(ids);
		free(topics);
		return KH_CLOSE;
	}
	params[0] = all_topics ? NULL : names;
	params[1] = all_topics ? "{}" : ids;
	params[2] = want_ops ? "true" : "false";
	res = NULL;
	if (all_topics || nuniq > 0)
	{
		res = kpg_exec(conn, metadata_sql, 3, params, sqlstate);
		if (res == NULL)
		{
			/*
			 * A role that may not read the catalog sees no topic; a database
			 * without the extension has none; anything else (no database,
			 * shutdown) is worth a retry: the client gets LEADER_NOT_AVAILABLE
			 * for the topics it named, and a closed connection if it named
			 * none, rather than a list without them.
			 */
			if (strcmp(sqlstate, "42501") == 0)
				query_error = KERR_TOPIC_AUTHORIZATION_FAILED;
			else if (strcmp(sqlstate, "3F000") == 0 || strcmp(sqlstate, "42P01") == 0 ||
					 strcmp(sqlstate, "42883") == 0)
				query_error = KERR_UNKNOWN_TOPIC_OR_PARTITION;
			else if (all_topics)
			{
				klog(KLOG_WARNING, "conn %llu (%s): cannot list the topics for Metadata: closing",
					 (unsigned long long) conn->id, conn->peer);
				result = KH_CLOSE;
				goto done;
			}
			else
				query_error = KERR_LEADER_NOT_AVAILABLE;
		}
	}

	/*
	 * The rows' topic ids, computed and sorted once if a topic is asked for
	 * by id: a loop over the rows for each such topic made a request of
	 * 100000 ids (1.8 MB) cost the gateway seconds of CPU per thousand
	 * topics.
	 */
	if (res != NULL && nids > 0 && PQntuples(res) > 0)
	{
		uuids = malloc((size_t) PQntuples(res) * sizeof(MdRowUuid));
		if (uuids == NULL)
		{
			klog(KLOG_WARNING, "conn %llu (%s): out of memory for a Metadata request: closing",
				 (unsigned long long) conn->id, conn->peer);
			result = KH_CLOSE;
			goto done;
		}
		for (int row = 0; row < PQntuples(res); row++)
		{
			row_uuid(res, row, uuids[row].uuid);
			uuids[row].row = row;
		}
		qsort(uuids, (size_t) PQntuples(res), sizeof(MdRowUuid), compare_row_uuid);
	}

	/* Match each requested topic to its row. */
	for (int i = 0; i < nuniq; i++)
	{
		if (topics[i].error != KERR_NONE && topics[i].error != KERR_UNKNOWN_TOPIC_ID)
			continue;
		if (res == NULL)
		{
			topics[i].error = query_error;
			continue;
		}
		if (!KSLICE_IS_NULL(topics[i].name))
			topics[i].row = find_row(res, topics[i].name);
		else
			topics[i].row = find_uuid_row(uuids, PQntuples(res), topics[i].uuid);
		if (topics[i].row < 0 && topics[i].error == KERR_NONE)
			topics[i].error = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		if (topics[i].row >= 0)
			topics[i].error = KERR_NONE;
	}

	cluster_id = v >= 2 ? kpg_cluster_id(conn) : NULL;

	if (v >= 3)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_array_len_v(w, flex, kconf.nbrokers);
	for (int i = 0; i < kconf.nbrokers; i++)
	{
		kw_int32(w, i);
		kw_cstring_v(w, flex, kconf.brokers[i].host);
		kw_int32(w, kconf.brokers[i].port);
		if (v >= 1)
			kw_cstring_v(w, flex, NULL);	/* rack */
		kw_tags_v(w, flex);
	}
	if (v >= 2)
		kw_cstring_v(w, flex, cluster_id);
	/* Any gateway serves administrative requests: each names itself. */
	if (v >= 1)
		kw_int32(w, kconf.node_id);
	if (all_topics)
	{
		int			ntuples = res ? PQntuples(res) : 0;

		kw_array_len_v(w, flex, ntuples);
		for (int row = 0; row < ntuples && !w->error; row++)
			write_topic(w, req, res, row);
	}
	else
	{
		kw_array_len_v(w, flex, nuniq);
		for (int i = 0; i < nuniq && !w->error; i++)
		{
			if (topics[i].row >= 0)
				write_topic(w, req, res, topics[i].row);
			else
				write_missing_topic(w, req, &topics[i]);
		}
	}
	if (v >= 8 && v <= 10)
		kw_int32(w, KOPS_NOT_REQUESTED);	/* cluster_authorized_operations */
	kw_tags_v(w, flex);

done:
	free(uuids);
	PQclear(res);
	free(names);
	free(ids);
	free(topics);
	return result;
}
