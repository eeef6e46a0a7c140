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
 * A transactional id (transactions, issue 16 part 2) is refused with
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a log line: librdkafka makes
 * that code fatal at once (rd_kafka_idemp_check_error), where any other
 * would be retried for ever; docs/kafka.md says why.
 *
 * Errors: a role that may produce to no topic, nor create one:
 * CLUSTER_AUTHORIZATION_FAILED (Kafka's IdempotentWrite check, which since
 * Kafka 2.8 is passed by a Write permission on any topic, as init_producer
 * checks; creating topics passes it here too); the database
 * unreachable: COORDINATOR_NOT_AVAILABLE (retried).
 *
 *-------------------------------------------------------------------------
 */
#include "log.h"
#include "server.h"

#include <stdlib.h>
#include <string.h>

static const char *const init_sql =
"SELECT p.producer_id, p.epoch FROM eventlog.init_producer(NULL) p";

/* The Kafka error of a failed init_producer. */
static int16_t
init_error(const char *sqlstate)
{
	if (strcmp(sqlstate, "42501") == 0)
		return KERR_CLUSTER_AUTHORIZATION_FAILED;
	return KERR_COORDINATOR_NOT_AVAILABLE;
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

	transactional_id = kr_nullable_string_v(r, flex);
	(void) kr_int32(r);			/* transaction_timeout_ms: transactions only */
	if (v >= 3)
	{
		(void) kr_int64(r);		/* producer_id: see the file's comment */
		(void) kr_int16(r);		/* producer_epoch */
	}
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
		return KH_MALFORMED;

	if (!KSLICE_IS_NULL(transactional_id))
	{
		klog(KLOG_INFO, "conn %llu (%s): InitProducerId with a transactional id: transactions are not supported yet",
			 (unsigned long long) conn->id, conn->peer);
		error = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	}
	else
	{
		char		sqlstate[6];
		PGresult   *res = kpg_exec(conn, init_sql, 0, NULL, sqlstate);

		if (res == NULL)
			error = init_error(sqlstate);
		else if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
			error = KERR_UNKNOWN_SERVER_ERROR;
		else
		{
			producer_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
			epoch = (int16_t) strtol(PQgetvalue(res, 0, 1), NULL, 10);
		}
		PQclear(res);
	}

	kw_int32(w, 0);				/* throttle_time_ms */
	kw_int16(w, error);
	kw_int64(w, error == KERR_NONE ? producer_id : -1);
	kw_int16(w, error == KERR_NONE ? epoch : -1);
	kw_tags_v(w, flex);
	return KH_OK;
}
