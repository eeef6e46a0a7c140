/*-------------------------------------------------------------------------
 *
 * api_init_producer_id.c
 *	  InitProducerId (key 22), versions 0 to 4, for idempotent producers:
 *	  a producer id and epoch from eventlog.init_producer(), the same
 *	  identity the SQL *_idempotent functions use (docs/delivery.md).
 *
 * A producer without a transactional id gets a new producer id at epoch 0
 * every time, as from Kafka's broker: the producer_id and producer_epoch
 * fields of v3 and later (a client asking to bump its epoch after an
 * error, KIP-360) name an identity it gives up, and a fresh one is what
 * Kafka returns for a non-transactional producer too.  The identity lives
 * in eventlog.producer_catalog, owned by the connection's role: a Produce
 * with it by another role is refused (TOPIC_AUTHORIZATION_FAILED).
 *
 * A transactional id (txn.c) gets eventlog.init_producer(transactional_id):
 * the same producer id with the next epoch when the id is known, which
 * fences the older epoch.  First the transaction the id has open on this
 * gateway, if any, is rolled back (init_producer waits for the producer's
 * open transactions: it would wait for this one).  Its
 * transaction_timeout_ms (1 to 900000, Kafka's default maximum, else
 * INVALID_TRANSACTION_TIMEOUT) bounds its transactions from then on.  A
 * transactional id with a transaction open on this gateway for another
 * role: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (init_producer says the
 * same of an id another role obtained).
 *
 * Errors: a role that may produce to no topic, nor create one:
 * CLUSTER_AUTHORIZATION_FAILED (Kafka's IdempotentWrite check, which since
 * Kafka 2.8 is passed by a Write permission on any topic, as init_producer
 * checks; creating topics passes it here too), and with a transactional
 * id TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the one authorization error
 * Kafka gives a transactional InitProducerId (see init_error); the
 * database unreachable: COORDINATOR_NOT_AVAILABLE (retried).  A new
 * transactional id when the registry is full and no id in it can be
 * evicted (txn.c): INVALID_REQUEST, which librdkafka retries.
 *
 *-------------------------------------------------------------------------
 */
#include "log.h"
#include "server.h"
#include "txn.h"

#include <stdlib.h>
#include <string.h>

static const char *const init_sql =
"SELECT p.producer_id, p.epoch FROM eventlog.init_producer($1) p";

/* Kafka's transaction.max.timeout.ms default: the longest allowed. */
#define K_MAX_TXN_TIMEOUT_MS	900000

static char *
dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/*
 * The Kafka error of a failed init_producer.  Refused (42501) with a
 * transactional id, what Kafka's broker answers is
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED: with one it checks the id's Write
 * permission only, and IdempotentWrite (CLUSTER_AUTHORIZATION_FAILED) only
 * without one.  init_producer refuses an id another role obtained, and a
 * role that may produce to no topic (which Kafka would refuse the id's
 * Write permission in any reasonable ACL setup): both are that.
 */
static int16_t
init_error(const char *sqlstate, bool transactional)
{
	if (strcmp(sqlstate, "42501") == 0)
		return transactional ? KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED :
			KERR_CLUSTER_AUTHORIZATION_FAILED;
	if (strcmp(sqlstate, "22023") == 0)
		return KERR_INVALID_REQUEST;
	return KERR_COORDINATOR_NOT_AVAILABLE;
}

/* eventlog.init_producer in the connection's session. */
static int16_t
init(KConn *conn, const char *tid, int64_t *producer_id, int16_t *epoch)
{
	char		sqlstate[6];
	const char *params[1] = {tid};
	PGresult   *res = kpg_exec(conn, init_sql, 1, params, sqlstate);
	int16_t		error = KERR_NONE;

	if (res == NULL)
		error = init_error(sqlstate, tid != NULL);
	else if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
		error = KERR_UNKNOWN_SERVER_ERROR;
	else
	{
		*producer_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		*epoch = (int16_t) strtol(PQgetvalue(res, 0, 1), NULL, 10);
	}
	PQclear(res);
	return error;
}

KHandlerResult
khandle_init_producer_id(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KSlice		transactional_id;
	int16_t		error = KERR_NONE;
	int64_t		producer_id = -1;
	int16_t		epoch = -1;
	int32_t		timeout_ms;
	KTxn	   *t;

	transactional_id = kr_nullable_string_v(r, flex);
	timeout_ms = kr_int32(r);
	if (v >= 3)
	{
		(void) kr_int64(r);		/* producer_id: see the file's comment */
		(void) kr_int16(r);		/* producer_epoch */
	}
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
		return KH_MALFORMED;

	if (KSLICE_IS_NULL(transactional_id))
		error = init(conn, NULL, &producer_id, &epoch);
	else if (timeout_ms <= 0 || timeout_ms > K_MAX_TXN_TIMEOUT_MS)
		error = KERR_INVALID_TRANSACTION_TIMEOUT;
	else if (transactional_id.len == 0 || transactional_id.len > 1000)
		error = KERR_INVALID_REQUEST;	/* init_producer's limits (22023) */
	else if ((t = ktxn_acquire(transactional_id, true)) == NULL)
		error = KERR_INVALID_REQUEST;	/* a NUL in it, or the registry full (txn.c) */
	else
	{
		bool		same = ktxn_same_role(t, conn);

		if (!same && (t->ongoing || t->lost))
			error = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
		else
		{
			/* Fencing: what the older epoch left open goes first. */
			ktxn_fence(t);
			error = init(conn, t->tid, &producer_id, &epoch);
			if (error == KERR_NONE)
			{
				if (!same)
				{
					/* The session runs as this client's role from now on. */
					kpg_close(&t->session);
					free(t->session.pg_user);
					free(t->session.pg_password);
					free(t->session.pg_role);
					t->session.pg_user = dup_or_null(conn->pg_user);
					t->session.pg_password = dup_or_null(conn->pg_password);
					t->session.pg_role = dup_or_null(conn->pg_role);
				}
				t->producer_id = producer_id;
				t->epoch = epoch;
				t->timeout_ms = timeout_ms;
			}
		}
		ktxn_release(t);
		ktxn_start_reaper();
	}

	kw_int32(w, 0);				/* throttle_time_ms */
	kw_int16(w, error);
	kw_int64(w, error == KERR_NONE ? producer_id : -1);
	kw_int16(w, error == KERR_NONE ? epoch : -1);
	kw_tags_v(w, flex);
	return KH_OK;
}
