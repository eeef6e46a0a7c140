/*-------------------------------------------------------------------------
 *
 * admin.h
 *	  What the administrative APIs (CreateTopics, DeleteTopics,
 *	  CreatePartitions, DescribeConfigs) share: Kafka's topic name rule,
 *	  the mapping of PostgreSQL's SQLSTATEs to Kafka's error codes, a
 *	  topic's settings in Kafka's units and as Kafka's topic configs, and
 *	  the transaction that lets validate_only run the real command and
 *	  undo it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_ADMIN_H
#define KAFKA_ADMIN_H

#include "server.h"

/*
 * Topics (or resources) one administrative request may name; more closes
 * the connection, as Metadata does past its own bound.  Each is one SQL
 * command or two, so this bounds a request's work too.
 */
#define K_MAX_ADMIN_TOPICS	10000

/* The longest topic name the extension accepts (Kafka's is 249). */
#define K_EXT_MAX_TOPIC_NAME	200

/* Kafka's config sources (DescribeConfigs v1+, CreateTopics v5+). */
#define KCFG_SOURCE_TOPIC			1	/* DYNAMIC_TOPIC_CONFIG */
#define KCFG_SOURCE_STATIC_BROKER	4	/* STATIC_BROKER_CONFIG */
#define KCFG_SOURCE_DEFAULT			5	/* DEFAULT_CONFIG */

/* Kafka's config types (DescribeConfigs v3+). */
#define KCFG_TYPE_BOOLEAN	1
#define KCFG_TYPE_STRING	2
#define KCFG_TYPE_INT		3
#define KCFG_TYPE_SHORT		4
#define KCFG_TYPE_LONG		5
#define KCFG_TYPE_LIST		7

/*
 * The defaults of eventlog.create_topic (sql/install/topics.sql), in
 * Kafka's units: a setting equal to its default is reported with the
 * source DEFAULT_CONFIG, any other as a topic override (the catalog does
 * not record whether a value was given or defaulted).
 */
#define K_DEFAULT_RETENTION_MS		604800000LL /* '7 days' */
#define K_DEFAULT_RETENTION_BYTES	(-1LL)	/* NULL: no limit */
#define K_DEFAULT_SEGMENT_MS		86400000LL	/* '1 day' */
#define K_DEFAULT_SEGMENT_BYTES		1073741824LL
#define K_DEFAULT_DELETE_RETENTION_MS	86400000LL	/* '1 day' */
#define K_NO_MAX_COMPACTION_LAG		9223372036854775807LL	/* Kafka's Long.MAX_VALUE */
/* Partitions of a topic created with num_partitions -1. */
#define K_DEFAULT_PARTITIONS		1

/* A topic's row of eventlog.topic_catalog, in Kafka's units. */
typedef struct KTopicSettings
{
	int32_t		topic_id;
	int32_t		partitions;
	int64_t		created_us;
	int64_t		retention_ms;	/* -1: none */
	int64_t		retention_bytes;	/* -1: none */
	int64_t		segment_ms;
	int64_t		segment_bytes;
	char		format[8];		/* "json" or "binary" */
	char		cleanup_policy[16]; /* delete, compact or compact,delete */
	int64_t		delete_retention_ms;
	int64_t		min_compaction_lag_ms;
	int64_t		max_compaction_lag_ms;	/* K_NO_MAX_COMPACTION_LAG: none */
} KTopicSettings;

/* One topic config, as DescribeConfigs and CreateTopics v5+ write it. */
typedef struct KConfigEntry
{
	const char *name;
	char		value[32];
	bool		read_only;
	int8_t		source;
	int8_t		type;
	const char *doc;
} KConfigEntry;

#define K_TOPIC_NCONFIGS	9

/* A NUL-terminated copy of a slice (malloc), NULL when out of memory. */
extern char *kslice_dup(KSlice s);

/* Equal, for sorting and finding duplicates: 0 if equal. */
extern int	kslice_cmp(KSlice a, KSlice b);

/*
 * A topic's settings by name (by_id false) or catalog id: 1 found, 0 not
 * found, -1 the query failed (sqlstate set).
 */
extern int	kadmin_topic_settings(KConn *conn, const char *name, int32_t topic_id,
								  KTopicSettings *out, char sqlstate[6]);

/* The topic configs of a topic's settings, in out; returns how many. */
extern int	kadmin_topic_configs(const KTopicSettings *t, KConfigEntry out[K_TOPIC_NCONFIGS]);

/* The catalog id in a topic's Kafka id (see ktopic_uuid). */
extern int32_t kuuid_topic_id(const uint8_t uuid[16]);

/*
 * validate_only: kadmin_validate_begin opens a transaction block, the
 * command runs in it guarded by K_VALIDATE_GUARD (so that, should the
 * session have been replaced in between, it runs nowhere rather than
 * committing on its own: in a statement of its own transaction now() is
 * the statement's start, in a block it is the block's earlier start), and
 * kadmin_validate_end rolls it back.  A guarded command that returns no
 * row did not run.
 */
#define K_VALIDATE_GUARD \
	" WHERE pg_catalog.now() OPERATOR(pg_catalog.<>) pg_catalog.statement_timestamp()"
extern bool kadmin_validate_begin(KConn *conn);
extern void kadmin_validate_end(KConn *conn);

#endif							/* KAFKA_ADMIN_H */
