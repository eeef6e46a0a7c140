/*-------------------------------------------------------------------------
 *
 * server.h
 *	  What the parts of the gateway share: a client connection, a decoded
 *	  request header, the table of APIs that both dispatches requests and
 *	  is what ApiVersions advertises, and the connection's PostgreSQL
 *	  session.
 *
 * Adding an API: write src/kafka/api_<name>.c with a handler of type
 * KHandler, declare it below, and add one row to kapis[] in api_table.c
 * (versions from min to max, the first flexible version).  The row is all
 * ApiVersions needs to advertise it and all the dispatcher needs to parse
 * the request header and write the response header of each version.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_SERVER_H
#define KAFKA_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <libpq-fe.h>

#include "wire.h"

/* Kafka's error codes that the gateway uses. */
#define KERR_UNKNOWN_SERVER_ERROR		(-1)
#define KERR_NONE						0
#define KERR_OFFSET_OUT_OF_RANGE		1
#define KERR_CORRUPT_MESSAGE			2
#define KERR_UNKNOWN_TOPIC_OR_PARTITION 3
#define KERR_LEADER_NOT_AVAILABLE		5
#define KERR_NOT_LEADER_OR_FOLLOWER		6
#define KERR_REQUEST_TIMED_OUT			7
#define KERR_MESSAGE_TOO_LARGE			10
#define KERR_COORDINATOR_NOT_AVAILABLE	15
#define KERR_INVALID_TOPIC_EXCEPTION	17
#define KERR_INVALID_REQUIRED_ACKS		21
#define KERR_INVALID_GROUP_ID			24
#define KERR_TOPIC_AUTHORIZATION_FAILED 29
#define KERR_GROUP_AUTHORIZATION_FAILED 30
#define KERR_CLUSTER_AUTHORIZATION_FAILED 31
#define KERR_UNSUPPORTED_SASL_MECHANISM 33
#define KERR_ILLEGAL_SASL_STATE			34
#define KERR_UNSUPPORTED_VERSION		35
#define KERR_TOPIC_ALREADY_EXISTS		36
#define KERR_INVALID_PARTITIONS			37
#define KERR_INVALID_REPLICATION_FACTOR 38
#define KERR_INVALID_REPLICA_ASSIGNMENT 39
#define KERR_INVALID_CONFIG				40
#define KERR_INVALID_REQUEST			42
#define KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT 43
#define KERR_OUT_OF_ORDER_SEQUENCE_NUMBER 45
#define KERR_DUPLICATE_SEQUENCE_NUMBER	46
#define KERR_INVALID_PRODUCER_EPOCH		47
#define KERR_INVALID_TXN_STATE			48
#define KERR_INVALID_PRODUCER_ID_MAPPING 49
#define KERR_INVALID_TRANSACTION_TIMEOUT 50
#define KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED 53
#define KERR_SASL_AUTHENTICATION_FAILED 58
#define KERR_UNKNOWN_PRODUCER_ID		59
#define KERR_FETCH_SESSION_ID_NOT_FOUND 70
#define KERR_INVALID_FETCH_SESSION_EPOCH 71
#define KERR_INVALID_RECORD				87
#define KERR_UNKNOWN_TOPIC_ID			100
#define KERR_UNSUPPORTED_ENDPOINT_TYPE	115

/* API keys of the implemented APIs. */
#define KAPI_PRODUCE		0
#define KAPI_FETCH			1
#define KAPI_LIST_OFFSETS	2
#define KAPI_METADATA		3
#define KAPI_OFFSET_COMMIT	8
#define KAPI_OFFSET_FETCH	9
#define KAPI_FIND_COORDINATOR 10
#define KAPI_JOIN_GROUP		11
#define KAPI_HEARTBEAT		12
#define KAPI_LEAVE_GROUP	13
#define KAPI_SYNC_GROUP		14
#define KAPI_DESCRIBE_GROUPS 15
#define KAPI_LIST_GROUPS	16
#define KAPI_SASL_HANDSHAKE	17
#define KAPI_API_VERSIONS	18
#define KAPI_CREATE_TOPICS	19
#define KAPI_DELETE_TOPICS	20
#define KAPI_INIT_PRODUCER_ID	22
#define KAPI_ADD_PARTITIONS_TO_TXN	24
#define KAPI_ADD_OFFSETS_TO_TXN	25
#define KAPI_END_TXN		26
#define KAPI_TXN_OFFSET_COMMIT	28
#define KAPI_DESCRIBE_CONFIGS	32
#define KAPI_SASL_AUTHENTICATE	36
#define KAPI_CREATE_PARTITIONS	37
#define KAPI_DELETE_GROUPS	42
#define KAPI_OFFSET_DELETE	47
#define KAPI_DESCRIBE_CLUSTER	60

/* One client connection; its thread owns every field but those marked. */
typedef struct KConn
{
	uint64_t	id;				/* for the log: "conn 12" */
	int			fd;				/* the client's socket; -1 once closed
								 * (under the registry's lock) */
	char		peer[96];		/* "127.0.0.1:54321", for the log */
	PGconn	   *pg;				/* NULL until a request needs it */
	PGcancel   *pg_cancel;		/* under the registry's lock */
	bool		in_query;		/* under the registry's lock */
	bool		fetch_prepared; /* pg has Fetch's statement prepared (pg.c) */
	bool		await_pending;	/* pg runs an idle Fetch's await (pg.c) */
	bool		pinned;			/* a Kafka transaction's session with BEGIN
								 * open (txn.c): pg.c never replaces it */
	bool		batch_open;		/* Produce requests share an open BEGIN on pg
								 * (produce_batch.c); pinned meanwhile */
	bool		batch_failed;	/* a statement failed in it (pg.c sets it) */
	struct KBatch *batch;		/* its held frames and responses, or NULL */
	char	   *await_key;		/* what it waits for (kpg_await_start), then
								 * its extra bytes */
	int			await_renewals; /* times it was sent again (pg.c) */
	bool		ahead_pending;	/* pg runs a Fetch's read-ahead (pg.c) */
	char	   *ahead_key;		/* the Fetch it reads for (kpg_fetch_ahead) */
	/*
	 * --read-dsn: the other session, swapped with the fields above
	 * while Fetch or ListOffsets runs (kpg_read_session), so that pg.c
	 * serves either the same way.  "reading" tells which is in.
	 */
	PGconn	   *other_pg;
	PGcancel   *other_cancel;	/* under the registry's lock */
	bool		other_fetch_prepared;
	bool		other_await_pending;
	bool		other_pinned;
	char	   *other_await_key;
	int			other_await_renewals;
	bool		other_ahead_pending;
	char	   *other_ahead_key;
	bool		reading;
	struct KConn *prev;			/* the registry's list, under its lock */
	struct KConn *next;
	struct ssl_st *ssl;			/* TLS (io.c); NULL on plain TCP */
	uint8_t    *rbuf;			/* bytes received, not read yet (io.c) */
	size_t		rbuf_pos;		/* rbuf[rbuf_pos..rbuf_len) are unread */
	size_t		rbuf_len;
	/* SASL (sasl.c): authenticated is true from the start without --sasl */
	bool		authenticated;
	bool		close_after_response;	/* a handler's answer is the last */
	struct KSasl *sasl;			/* the exchange in progress, or NULL */
	/*
	 * Who the PostgreSQL session is (pg.c), set by authentication and kept
	 * for reconnecting: PLAIN logs in as pg_user with pg_password; SCRAM
	 * logs in as --dsn's role and sets pg_role.  All NULL: --dsn's role.
	 */
	char	   *pg_user;
	char	   *pg_password;
	char	   *pg_role;
	/*
	 * With --sasl, the CLOCK_MONOTONIC second by which the client must have
	 * authenticated (main.c shuts it down then); 0 once it did, or without
	 * --sasl.  Under the registry's lock.
	 */
	time_t		auth_deadline;
} KConn;

/* A request whose header is decoded; body is positioned after it. */
typedef struct KRequest
{
	int16_t		api_key;
	int16_t		api_version;
	int32_t		correlation_id;
	KSlice		client_id;		/* nullable */
	bool		flexible;		/* compact encodings, tagged fields */
	KReader		body;
} KRequest;

typedef enum KHandlerResult
{
	KH_OK,						/* the response body is in the writer */
	KH_MALFORMED,				/* the body did not decode: close */
	KH_CLOSE,					/* the handler logged why: close */
	KH_NO_RESPONSE				/* done, and no response is sent (acks=0) */
} KHandlerResult;

/*
 * A handler decodes the whole body (khandler_body_done() says whether it
 * decoded to the last byte), does its work, and writes the response body;
 * the dispatcher has written the response header and sends the frame.
 */
typedef KHandlerResult (*KHandler) (KConn *conn, KRequest *req, KWriter *resp);

typedef struct KApi
{
	int16_t		api_key;
	const char *name;
	int16_t		min_version;
	int16_t		max_version;
	int16_t		first_flexible_version; /* INT16_MAX: none */
	KHandler	handler;
} KApi;

extern const KApi kapis[];
extern const int knapis;

extern const KApi *kapi_find(int16_t api_key);

/* Why a known Kafka API is not implemented, or NULL (api_unsupported.c). */
extern const char *kapi_unsupported_reason(int16_t api_key);

/* True if the body decoded without error and to its last byte. */
extern bool khandler_body_done(KRequest *req);

/* Handlers, one file each (api_*.c). */
extern KHandlerResult khandle_api_versions(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_fetch(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_list_offsets(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_metadata(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_create_topics(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_delete_topics(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_describe_configs(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_create_partitions(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_describe_cluster(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_produce(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_init_producer_id(KConn *conn, KRequest *req, KWriter *resp);
/* Kafka transactions (api_txn.c). */
extern KHandlerResult khandle_add_partitions_to_txn(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_add_offsets_to_txn(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_end_txn(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_txn_offset_commit(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_sasl_handshake(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_sasl_authenticate(KConn *conn, KRequest *req, KWriter *resp);

/*
 * SASL's gate (sasl.c).  ksasl_allows: whether a request of this API may
 * be served now (before authentication, only ApiVersions and the SASL
 * APIs).  ksasl_raw_pending: whether the next frame is a bare SASL token
 * (after a SaslHandshake v0), which ksasl_raw_token answers; false from
 * it closes the connection.  ksasl_end frees what a connection holds.
 */
extern bool ksasl_allows(KConn *conn, int16_t api_key);
extern bool ksasl_raw_pending(KConn *conn);
extern bool ksasl_raw_token(KConn *conn, const uint8_t *token, int32_t len, KWriter *w);
extern void ksasl_end(KConn *conn);
/* The consumer-group APIs (group.h). */
extern KHandlerResult khandle_offset_commit(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_offset_fetch(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_find_coordinator(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_join_group(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_heartbeat(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_leave_group(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_sync_group(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_describe_groups(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_list_groups(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_delete_groups(KConn *conn, KRequest *req, KWriter *resp);
extern KHandlerResult khandle_offset_delete(KConn *conn, KRequest *req, KWriter *resp);

/*
 * Kafka's rule for a legal topic name (Topic.validate): [A-Za-z0-9._-], 1
 * to 249 bytes, not "." or "..".  Such a name is safe to quote in an array
 * literal (topic_name.c).
 */
extern bool kvalid_topic_name(KSlice name);

/* The connection thread (conn.c). */
extern void *kconn_main(void *arg);

/*
 * The registry of open connections (main.c): how many, and shutdown's
 * view of them.  Every field marked "under the registry's lock" is read
 * and written with it held.
 */
extern void kregistry_lock(void);
extern void kregistry_unlock(void);
extern void kregistry_remove(KConn *conn);
extern bool kshutting_down(void);

/*
 * The connection's PostgreSQL session (pg.c).  kpg_exec runs one query
 * with text parameters, connecting first if need be; its result is freed
 * with PQclear.  On failure it returns NULL with the SQLSTATE in sqlstate
 * ("" if the query never ran: no connection, shutdown) and has logged why.
 * A connection found broken is dropped, and the next query reconnects.
 */
extern PGresult *kpg_exec(KConn *conn, const char *sql, int nparams,
						  const char *const *params, char sqlstate[6]);
/*
 * kpg_exec, and on failure the error's primary message in msg (truncated
 * to msgsize; "" if there is none), for the error messages of Kafka's
 * administrative responses.
 */
extern PGresult *kpg_exec_msg(KConn *conn, const char *sql, int nparams,
							  const char *const *params, char sqlstate[6],
							  char *msg, size_t msgsize);
/*
 * The same with every result column in binary format, for the queries that
 * may wait (Fetch's long poll, JoinGroup, SyncGroup) and the reads beside
 * them: cancelled if the client hangs up meanwhile.
 */
extern PGresult *kpg_exec_binary(KConn *conn, const char *sql, int nparams,
								 const char *const *params, char sqlstate[6]);
/*
 * kpg_exec_binary of Fetch's query as the session's prepared statement
 * (prepared on first use, and again in a new session).
 */
extern PGresult *kpg_exec_fetch(KConn *conn, const char *sql, int nparams,
								const char *const *params, char sqlstate[6]);
/*
 * The idle Fetch's wait that outlives a request (api_fetch.c): after an
 * empty Fetch, kpg_await_start sends eventlog._kafka_await(params[0..2])
 * without waiting for it, and keeps the key and extra_len bytes of extra
 * with it; the next Fetch with the same key calls kpg_await_wait, which
 * waits up to *wait_ms (less the time it waited on return) and is true if
 * the await is still pending then (answer empty, with *extra), false if it
 * ended or there was none (read as usual).  Every other use of
 * the session ends it first (cancel, drain).
 */
extern void kpg_await_start(KConn *conn, const char *key, const void *extra,
							size_t extra_len, const char *const *params);
extern bool kpg_await_wait(KConn *conn, const char *key, int32_t *wait_ms,
						   const void **extra);
/*
 * A consumer's next Fetch read ahead (api_fetch.c): kpg_fetch_ahead sends
 * Fetch's prepared statement with params (as kpg_exec_fetch would) without
 * waiting for its result, and keeps key with it; the next Fetch takes that
 * result with kpg_fetch_ahead_take if its own key is the same (NULL
 * otherwise: there was none, another key, or it failed: query as usual).
 * Every other use of the session ends it first (its result is read and
 * dropped).
 */
extern void kpg_fetch_ahead(KConn *conn, const char *key, int nparams,
							const char *const *params);
extern PGresult *kpg_fetch_ahead_take(KConn *conn, const char *key);
/*
 * Between requests: reads a pending read-ahead's rows until its result is
 * whole or the client sends something (conn.c).
 */
extern void kpg_fetch_ahead_collect(KConn *conn);
/*
 * kpg_exec_msg with per-parameter lengths and formats (1: PostgreSQL's binary
 * format), for Produce's records.
 */
extern PGresult *kpg_exec_params(KConn *conn, const char *sql, int nparams,
								 const char *const *params, const int *lengths,
								 const int *formats, char sqlstate[6],
								 char *errmsg, size_t errlen);
extern void kpg_close(KConn *conn);
extern void kpg_read_session(KConn *conn, bool on);

/*
 * Opens the connection's session now, as who authentication said (see
 * KConn), if it is not open; false (logged) if it cannot be.
 */
extern bool kpg_connect(KConn *conn);

/* A libpq message without its trailing newline, for the log (in place). */
extern const char *kpg_trimmed(char *msg);

/*
 * A stable id of the database for Kafka's cluster_id: 22 characters of
 * URL-safe base64 (as Kafka's are) of a hash of the cluster's system
 * identifier and the database's name.  NULL if the database cannot be
 * asked; cached per connection.
 */
extern const char *kpg_cluster_id(KConn *conn);

/*
 * A topic's Kafka id (a UUID): the topic's id in eventlog.topic_catalog in
 * the last four bytes, a hash of its creation time in the others, so that
 * every gateway gives the same id, and a topic dropped and created again
 * under the same name gets a new one.
 */
extern void ktopic_uuid(int32_t topic_id, int64_t created_us, uint8_t out[16]);

#endif							/* KAFKA_SERVER_H */
