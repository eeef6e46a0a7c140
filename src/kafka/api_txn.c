/*-------------------------------------------------------------------------
 *
 * api_txn.c
 *	  The transaction coordinator's APIs: AddPartitionsToTxn (key 24),
 *	  AddOffsetsToTxn (25), EndTxn (26), versions 0 to 3, and the group's
 *	  TxnOffsetCommit (28), versions 0 to 3, over the transactions of
 *	  txn.c (one PostgreSQL transaction per Kafka transaction).
 *
 * AddPartitionsToTxn and AddOffsetsToTxn open the transaction (BEGIN);
 * which partitions are added is not kept: a Produce of the transaction
 * runs in it whatever its partition, and the partition's checks are
 * Produce's.  TxnOffsetCommit runs eventlog.kafka_offset_commit, what
 * OffsetCommit runs, in the transaction: the group's positions move at
 * its commit, with the records (that holds the group's lock until then).
 * EndTxn commits or rolls back.
 *
 * Errors, chosen for what librdkafka does with them (rdkafka_txnmgr.c):
 *  - a producer id that is not the transactional id's here (never
 *    initialised on this gateway, e.g. after a restart; or the
 *    transaction was lost: timed out, its session broke):
 *    INVALID_PRODUCER_ID_MAPPING, an abortable error: the application
 *    aborts (EndTxn(abort) succeeds) and begins again;
 *  - an older epoch: INVALID_PRODUCER_EPOCH, fatal (fenced);
 *  - a connection of another role than the one that initialised it:
 *    TRANSACTIONAL_ID_AUTHORIZATION_FAILED, fatal;
 *  - the database unreachable: COORDINATOR_NOT_AVAILABLE, retried.
 *
 *-------------------------------------------------------------------------
 */
#include "group.h"
#include "log.h"
#include "pgvalue.h"
#include "txn.h"

#include <stdlib.h>
#include <string.h>

static const char *const commit_sql =
"SELECT error_code FROM eventlog.kafka_txn_offset_commit($1, $2::pg_catalog.int4, $3, $4,"
" $5::eventlog.kafka_offset[])";

/*
 * The transaction of a request, locked and checked, or NULL with *error
 * set.
 */
static KTxn *
txn_for(KConn *conn, KSlice tid, int64_t producer_id, int16_t epoch, int16_t *error)
{
	KTxn	   *t = ktxn_acquire(tid, false);

	if (t == NULL)
	{
		*error = KERR_INVALID_PRODUCER_ID_MAPPING;
		return NULL;
	}
	*error = ktxn_check(t, conn, producer_id, epoch);
	if (*error != KERR_NONE)
	{
		ktxn_release(t);
		return NULL;
	}
	return t;
}

KHandlerResult
khandle_add_partitions_to_txn(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	KSlice		tid;
	int64_t		producer_id;
	int16_t		epoch;
	int32_t		ntopics;
	KReader		topics_at;
	int16_t		error = KERR_NONE;
	KTxn	   *t;

	tid = kr_string_v(r, flex);
	producer_id = kr_int64(r);
	epoch = kr_int16(r);
	ntopics = kr_array_len_v(r, flex, flex ? 3 : 6);
	topics_at = *r;
	/* A first pass checks the body; the response reads it again. */
	for (int32_t i = 0; i < ntopics && !r->error; i++)
	{
		int32_t		np;

		(void) kr_string_v(r, flex);
		np = kr_array_len_v(r, flex, 4);
		for (int32_t j = 0; j < np && !r->error; j++)
			(void) kr_int32(r);
		kr_tags_v(r, flex);
	}
	kr_tags_v(r, flex);
	if (ntopics < 0 || !khandler_body_done(req))
		return KH_MALFORMED;

	t = txn_for(conn, tid, producer_id, epoch, &error);
	if (t != NULL)
	{
		error = ktxn_begin(t);
		ktxn_release(t);
	}

	kw_int32(w, 0);				/* throttle_time_ms */
	kw_array_len_v(w, flex, ntopics);
	for (int32_t i = 0; i < ntopics && !w->error; i++)
	{
		KSlice		name = kr_string_v(&topics_at, flex);
		int32_t		np = kr_array_len_v(&topics_at, flex, 4);

		kw_string_v(w, flex, (const char *) name.ptr, name.len);
		kw_array_len_v(w, flex, np);
		for (int32_t j = 0; j < np; j++)
		{
			kw_int32(w, kr_int32(&topics_at));
			kw_int16(w, error);
			kw_tags_v(w, flex);
		}
		kr_tags_v(&topics_at, flex);
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	return KH_OK;
}

KHandlerResult
khandle_add_offsets_to_txn(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	KSlice		tid;
	int64_t		producer_id;
	int16_t		epoch;
	int16_t		error = KERR_NONE;
	KTxn	   *t;

	tid = kr_string_v(r, flex);
	producer_id = kr_int64(r);
	epoch = kr_int16(r);
	(void) kr_string_v(r, flex);	/* group_id: checked by TxnOffsetCommit */
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
		return KH_MALFORMED;

	t = txn_for(conn, tid, producer_id, epoch, &error);
	if (t != NULL)
	{
		error = ktxn_begin(t);
		ktxn_release(t);
	}
	kw_int32(w, 0);				/* throttle_time_ms */
	kw_int16(w, error);
	kw_tags_v(w, flex);
	return KH_OK;
}

KHandlerResult
khandle_end_txn(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	KSlice		tid;
	int64_t		producer_id;
	int16_t		epoch;
	bool		commit;
	int16_t		error = KERR_NONE;
	KTxn	   *t;

	tid = kr_string_v(r, flex);
	producer_id = kr_int64(r);
	epoch = kr_int16(r);
	commit = kr_bool(r);
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
		return KH_MALFORMED;

	t = txn_for(conn, tid, producer_id, epoch, &error);
	if (t != NULL)
	{
		error = ktxn_end(t, conn, commit);
		ktxn_release(t);
	}
	if (error != KERR_NONE)
		klog(KLOG_INFO, "conn %llu (%s): EndTxn(%s) of transactional id \"%.*s\": error %d",
			 (unsigned long long) conn->id, conn->peer, commit ? "commit" : "abort",
			 tid.len > 100 ? 100 : (int) (tid.len < 0 ? 0 : tid.len),
			 tid.ptr ? (const char *) tid.ptr : "", error);
	kw_int32(w, 0);				/* throttle_time_ms */
	kw_int16(w, error);
	kw_tags_v(w, flex);
	return KH_OK;
}

/*
 * TxnOffsetCommit: v0-2 transactional_id, group_id, producer_id,
 * producer_epoch, then topics; v3 (KIP-447) also generation_id, member_id
 * and group_instance_id, checked as OffsetCommit checks them; v0-2 commit
 * as generation -1 (outside group management, as Kafka does not check
 * them there either).  v2 and later have a committed_leader_epoch per
 * partition (ignored).
 */
KHandlerResult
khandle_txn_offset_commit(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KSlice		tid;
	KSlice		group_id;
	int64_t		producer_id;
	int16_t		epoch;
	int32_t		generation = -1;
	KSlice		member_id = {(const uint8_t *) "", 0};
	KSlice		instance_id = {NULL, -1};
	int32_t		ntopics;
	KReader		topics_at;
	int32_t		nparts = 0;
	KBuf		arr;
	KParams		p;
	char		sqlstate[6];
	PGresult   *res = NULL;
	int16_t		error = KERR_NONE;
	KTxn	   *t;

	tid = kr_string_v(r, flex);
	group_id = kr_string_v(r, flex);
	producer_id = kr_int64(r);
	epoch = kr_int16(r);
	if (v >= 3)
	{
		generation = kr_int32(r);
		member_id = kr_string_v(r, flex);
		instance_id = kr_nullable_string_v(r, flex);
	}
	ntopics = kr_array_len_v(r, flex, flex ? 2 : 6);
	if (ntopics > K_MAX_GROUP_ITEMS)
		return kgroup_too_many(conn, "TxnOffsetCommit", ntopics);
	topics_at = *r;
	kb_init(&arr);
	kb_char(&arr, '{');
	for (int32_t i = 0; i < ntopics && !r->error; i++)
	{
		KSlice		name = kr_string_v(r, flex);
		int32_t		np = kr_array_len_v(r, flex, 14);

		if (!kslice_is_text(name))
			arr.error = true;
		if (np > K_MAX_GROUP_ITEMS - nparts)
		{
			kb_free(&arr);
			return kgroup_too_many(conn, "TxnOffsetCommit", nparts + np);
		}
		for (int32_t j = 0; j < np && !r->error; j++)
		{
			KRowBuf		row;
			int32_t		partition = kr_int32(r);
			int64_t		offset = kr_int64(r);
			KSlice		metadata;

			if (v >= 2)
				(void) kr_int32(r); /* committed_leader_epoch */
			metadata = kr_nullable_string_v(r, flex);
			kr_tags_v(r, flex);
			if (!kslice_is_text(metadata))
				arr.error = true;
			if (nparts++ > 0)
				kb_char(&arr, ',');
			krow_begin(&row);
			krow_text(&row, name);
			krow_int(&row, partition);
			krow_int(&row, offset);
			krow_text(&row, metadata);
			krow_end(&row, &arr);
		}
		kr_tags_v(r, flex);
	}
	kb_char(&arr, '}');
	kr_tags_v(r, flex);
	if (ntopics < 0 || !khandler_body_done(req))
	{
		kb_free(&arr);
		return KH_MALFORMED;
	}

	kp_init(&p);
	kp_slice(&p, group_id);
	kp_int(&p, generation);
	kp_slice(&p, member_id);
	kp_slice(&p, instance_id);
	kp_buf(&p, &arr);
	t = txn_for(conn, tid, producer_id, epoch, &error);
	if (t != NULL)
	{
		if (p.bad)
			error = KERR_INVALID_REQUEST;
		else if ((error = ktxn_usable(t)) == KERR_NONE)
		{
			res = kpg_exec(&t->session, commit_sql, p.n, p.v, sqlstate);
			if (res == NULL)
			{
				error = kgroup_sql_error(sqlstate);
				ktxn_statement_failed(t);
			}
			else if (PQntuples(res) != nparts)
			{
				error = KERR_UNKNOWN_SERVER_ERROR;
				PQclear(res);
				res = NULL;
			}
		}
		ktxn_release(t);
	}
	kp_free(&p);

	kw_int32(w, 0);				/* throttle_time_ms */
	kw_array_len_v(w, flex, ntopics);
	nparts = 0;
	for (int32_t i = 0; i < ntopics && !w->error; i++)
	{
		KSlice		name = kr_string_v(&topics_at, flex);
		int32_t		np = kr_array_len_v(&topics_at, flex, 14);

		kw_string_v(w, flex, (const char *) name.ptr, name.len);
		kw_array_len_v(w, flex, np);
		for (int32_t j = 0; j < np; j++, nparts++)
		{
			kw_int32(w, kr_int32(&topics_at));
			(void) kr_int64(&topics_at);
			if (v >= 2)
				(void) kr_int32(&topics_at);
			(void) kr_nullable_string_v(&topics_at, flex);
			kr_tags_v(&topics_at, flex);
			kw_int16(w, error != KERR_NONE ? error :
					 (int16_t) atoi(PQgetvalue(res, nparts, 0)));
			kw_tags_v(w, flex);
		}
		kr_tags_v(&topics_at, flex);
		kw_tags_v(w, flex);
	}
	kw_tags_v(w, flex);
	PQclear(res);
	return KH_OK;
}
