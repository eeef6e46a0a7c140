/*-------------------------------------------------------------------------
 *
 * txn.c
 *	  Kafka transactions: the registry of transactional ids this gateway
 *	  coordinates, each with a PostgreSQL session of its own in which one
 *	  Kafka transaction is one PostgreSQL transaction, and the reaper of
 *	  transactions older than their transaction.timeout.ms.
 *
 * Why a session of the gateway's and not a client connection's: librdkafka
 * sends AddPartitionsToTxn, TxnOffsetCommit and EndTxn on its coordinator
 * connection and Produce on each partition leader's, different TCP
 * connections to the same gateway.  Every request of a transaction holds
 * its mutex while it uses the session, so they run one at a time.
 *
 * The session runs as the role of the client that called InitProducerId
 * (its login or SET ROLE, as a connection's session); a request of the
 * transaction from a connection of another role is refused.  BEGIN opens
 * at the first AddPartitionsToTxn or AddOffsetsToTxn; Produce and
 * TxnOffsetCommit run their statements in it; EndTxn commits or rolls
 * back.  The session is pinned while BEGIN is open (KConn.pinned): pg.c
 * never replaces a broken session by a new one then, so no statement of a
 * transaction can run outside it; a transaction whose session broke is
 * lost, and only EndTxn(abort) ends it.
 *
 * After a rollback the producer's sequence numbers are carried forward
 * (eventlog.kafka_producer_aborted): Kafka keeps an aborted batch's
 * numbers and clients go on numbering after an abort, while the ROLLBACK
 * undid the producer state the batches wrote.
 *
 *-------------------------------------------------------------------------
 */
#include "log.h"
#include "txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Transactional ids one gateway keeps at most. */
#define K_MAX_TXNS			100000
/* A session idle (no transaction) for this long is closed by the reaper. */
#define K_TXN_IDLE_CLOSE_S	60

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static KTxn *registry = NULL;
static int	nregistry = 0;
static pthread_once_t reaper_once = PTHREAD_ONCE_INIT;

static const char *const aborted_sql =
"SELECT eventlog.kafka_producer_aborted($1::pg_catalog.int8, $2::pg_catalog.int2,"
" $3, $4::pg_catalog.int4, $5::pg_catalog.int4)";

static int64_t
elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t) (now.tv_sec - since->tv_sec) * 1000 +
		(now.tv_nsec - since->tv_nsec) / 1000000;
}

KTxn *
ktxn_acquire(KSlice tid, bool create)
{
	KTxn	   *t;

	if (KSLICE_IS_NULL(tid) || tid.len == 0)
		return NULL;
	pthread_mutex_lock(&registry_mu);
	for (t = registry; t != NULL; t = t->next)
		if ((size_t) tid.len == strlen(t->tid) && memcmp(t->tid, tid.ptr, (size_t) tid.len) == 0)
			break;
	if (t == NULL && create && nregistry < K_MAX_TXNS &&
		memchr(tid.ptr, '\0', (size_t) tid.len) == NULL)
	{
		t = calloc(1, sizeof(KTxn));
		if (t != NULL && (t->tid = malloc((size_t) tid.len + 1)) == NULL)
		{
			free(t);
			t = NULL;
		}
		if (t != NULL)
		{
			memcpy(t->tid, tid.ptr, (size_t) tid.len);
			t->tid[tid.len] = '\0';
			pthread_mutex_init(&t->mu, NULL);
			t->producer_id = -1;
			t->session.fd = -1;
			snprintf(t->session.peer, sizeof(t->session.peer), "transaction %.80s", t->tid);
			clock_gettime(CLOCK_MONOTONIC, &t->idle_since);
			t->next = registry;
			registry = t;
			nregistry++;
		}
	}
	pthread_mutex_unlock(&registry_mu);
	if (t != NULL)
		pthread_mutex_lock(&t->mu);
	return t;
}

void
ktxn_release(KTxn *t)
{
	pthread_mutex_unlock(&t->mu);
}

static bool
same_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

bool
ktxn_same_role(const KTxn *t, const KConn *conn)
{
	return same_str(t->session.pg_user, conn->pg_user) &&
		same_str(t->session.pg_role, conn->pg_role);
}

int16_t
ktxn_check(KTxn *t, KConn *conn, int64_t producer_id, int16_t epoch)
{
	if (!ktxn_same_role(t, conn))
		return KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	if (t->producer_id < 0 || producer_id != t->producer_id)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	if (epoch != t->epoch)
		return KERR_INVALID_PRODUCER_EPOCH;
	return KERR_NONE;
}

static void
clear_parts(KTxn *t)
{
	for (int32_t i = 0; i < t->nparts; i++)
		free(t->parts[i].topic);
	t->nparts = 0;
}

/* The transaction is over, whatever became of it. */
static void
finish(KTxn *t)
{
	t->ongoing = false;
	t->failed = false;
	t->session.pinned = false;
	t->xid[0] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &t->idle_since);
}

int16_t
ktxn_begin(KTxn *t)
{
	char		sqlstate[6];
	char		timeout[24];
	const char *params[1];
	PGresult   *res;

	if (t->lost)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	if (t->ongoing)
		return KERR_NONE;
	t->session.pinned = false;
	res = kpg_exec(&t->session, "BEGIN ISOLATION LEVEL READ COMMITTED", 0, NULL, sqlstate);
	if (res == NULL)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	PQclear(res);
	t->session.pinned = true;
	t->ongoing = true;
	clock_gettime(CLOCK_MONOTONIC, &t->started);

	/*
	 * The transaction's id, to learn the outcome of a COMMIT whose answer
	 * is lost; and PostgreSQL's own bound on it, should this gateway hang
	 * with the transaction open (a gateway that dies ends its sessions).
	 */
	snprintf(timeout, sizeof(timeout), "%lld", (long long) t->timeout_ms + 10000);
	params[0] = timeout;
	res = kpg_exec(&t->session,
				   "SELECT pg_catalog.txid_current(),"
				   " pg_catalog.set_config('idle_in_transaction_session_timeout', $1, true)",
				   1, params, sqlstate);
	if (res == NULL)
	{
		ktxn_statement_failed(t);
		return KERR_COORDINATOR_NOT_AVAILABLE;
	}
	snprintf(t->xid, sizeof(t->xid), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return KERR_NONE;
}

int16_t
ktxn_usable(KTxn *t)
{
	if (t->lost || t->failed)
		return KERR_INVALID_TXN_STATE;
	if (!t->ongoing)
		return KERR_INVALID_TXN_STATE;
	return KERR_NONE;
}

void
ktxn_statement_failed(KTxn *t)
{
	if (t->session.pg == NULL || PQstatus(t->session.pg) != CONNECTION_OK)
	{
		/* The session broke: PostgreSQL rolled the transaction back. */
		klog(KLOG_WARNING, "transactional id \"%s\": the PostgreSQL session of the open transaction was lost: it is rolled back",
			 t->tid);
		kpg_close(&t->session);
		finish(t);
		t->lost = true;
		return;
	}
	if (PQtransactionStatus(t->session.pg) == PQTRANS_INERROR)
		t->failed = true;
}

bool
ktxn_note_batch(KTxn *t, const char *topic, int32_t partition, int32_t last_sequence)
{
	for (int32_t i = 0; i < t->nparts; i++)
		if (t->parts[i].partition == partition && strcmp(t->parts[i].topic, topic) == 0)
		{
			t->parts[i].last_sequence = last_sequence;
			return true;
		}
	if (t->nparts == t->capparts)
	{
		int32_t		ncap = t->capparts ? t->capparts * 2 : 8;
		KTxnPart   *np = realloc(t->parts, (size_t) ncap * sizeof(KTxnPart));

		if (np == NULL)
			return false;
		t->parts = np;
		t->capparts = ncap;
	}
	t->parts[t->nparts].topic = strdup(topic);
	if (t->parts[t->nparts].topic == NULL)
		return false;
	t->parts[t->nparts].partition = partition;
	t->parts[t->nparts].last_sequence = last_sequence;
	t->nparts++;
	return true;
}

/*
 * After a rollback: the producer's state moves past the sequence numbers
 * of the batches rolled back, in a transaction of its own, so that its
 * next batch in each partition (numbered on, as Kafka clients do) is in
 * order.  A failure is logged: the producer's next batch there is then out
 * of order, and librdkafka asks for a new epoch.
 */
static void
carry_sequences(KTxn *t, KConn *via)
{
	char		idbuf[24];
	char		epochbuf[8];
	char		partbuf[16];
	char		seqbuf[16];
	const char *params[5];
	char		sqlstate[6];

	snprintf(idbuf, sizeof(idbuf), "%lld", (long long) t->producer_id);
	snprintf(epochbuf, sizeof(epochbuf), "%d", t->epoch);
	for (int32_t i = 0; i < t->nparts; i++)
	{
		PGresult   *res;

		snprintf(partbuf, sizeof(partbuf), "%d", t->parts[i].partition);
		snprintf(seqbuf, sizeof(seqbuf), "%d", t->parts[i].last_sequence);
		params[0] = idbuf;
		params[1] = epochbuf;
		params[2] = t->parts[i].topic;
		params[3] = partbuf;
		params[4] = seqbuf;
		res = kpg_exec(via, aborted_sql, 5, params, sqlstate);
		if (res == NULL)
			klog(KLOG_WARNING, "transactional id \"%s\": cannot carry the producer's sequence numbers past the aborted batches in partition %d of topic \"%s\" (SQLSTATE %s)",
				 t->tid, t->parts[i].partition, t->parts[i].topic, sqlstate);
		PQclear(res);
	}
	clear_parts(t);
}

/* ROLLBACK of the open transaction, if any (a broken session did it). */
static void
rollback(KTxn *t)
{
	char		sqlstate[6];
	PGresult   *res;

	if (!t->ongoing)
		return;
	res = kpg_exec(&t->session, "ROLLBACK", 0, NULL, sqlstate);
	PQclear(res);
	if (res == NULL)
		kpg_close(&t->session);
	finish(t);
}

void
ktxn_fence(KTxn *t)
{
	rollback(t);
	clear_parts(t);
	t->lost = false;
}

/*
 * What became of the transaction whose COMMIT got no answer: asked in the
 * client connection's session, until it is no longer in progress (its
 * backend ends it when it notices the broken session).  1 committed, 0
 * rolled back, -1 unknown.
 */
static int
commit_outcome(KTxn *t, KConn *conn)
{
	const char *params[1] = {t->xid};
	char		sqlstate[6];

	if (t->xid[0] == '\0')
		return 0;
	for (int i = 0; i < 100; i++)
	{
		PGresult   *res = kpg_exec(conn, "SELECT pg_catalog.txid_status($1::pg_catalog.int8)",
									 1, params, sqlstate);
		int			outcome = -1;

		if (res != NULL && PQntuples(res) == 1)
		{
			const char *s = PQgetvalue(res, 0, 0);

			if (strcmp(s, "committed") == 0)
				outcome = 1;
			else if (strcmp(s, "aborted") == 0 || PQgetisnull(res, 0, 0))
				outcome = 0;
		}
		PQclear(res);
		if (outcome >= 0)
			return outcome;
		usleep(100000);
	}
	return -1;
}

int16_t
ktxn_end(KTxn *t, KConn *conn, bool commit)
{
	char		sqlstate[6];
	PGresult   *res;

	if (!commit)
	{
		bool		had = t->ongoing || t->lost;

		rollback(t);
		if (had)
			carry_sequences(t, conn);
		clear_parts(t);
		t->lost = false;
		return KERR_NONE;
	}
	if (t->lost || t->failed)
	{
		/* Nothing of it can commit: the client must abort (abortable). */
		rollback(t);
		carry_sequences(t, conn);
		t->lost = true;
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	}
	if (!t->ongoing)
		return KERR_NONE;		/* nothing was added: nothing to commit */
	res = kpg_exec(&t->session, "COMMIT", 0, NULL, sqlstate);
	if (res != NULL)
	{
		bool		committed = strcmp(PQcmdStatus(res), "COMMIT") == 0;

		PQclear(res);
		finish(t);
		if (committed)
		{
			clear_parts(t);
			return KERR_NONE;
		}
		carry_sequences(t, conn);
		t->lost = true;
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	}
	if (sqlstate[0] != '\0' && strncmp(sqlstate, "08", 2) != 0 &&
		strncmp(sqlstate, "57P", 3) != 0)
	{
		/* Refused (a deferred check, a serialization failure): rolled back. */
		finish(t);
		carry_sequences(t, conn);
		t->lost = true;
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	}
	/* No answer: the commit may have happened; ask. */
	kpg_close(&t->session);
	{
		int			outcome = commit_outcome(t, conn);

		if (outcome == 1)
		{
			finish(t);
			clear_parts(t);
			return KERR_NONE;
		}
		finish(t);
		if (outcome == 0)
		{
			carry_sequences(t, conn);
			t->lost = true;
			return KERR_INVALID_PRODUCER_ID_MAPPING;
		}
	}
	klog(KLOG_WARNING, "transactional id \"%s\": the outcome of the commit of transaction %s is unknown",
		 t->tid, t->xid);
	t->lost = true;
	return KERR_UNKNOWN_SERVER_ERROR;
}

/*
 * The reaper: every 200 ms, rolls back the transactions older than their
 * transaction.timeout.ms (the producer's next request of it gets an error,
 * and its EndTxn(abort) succeeds), and closes the sessions idle for a
 * minute.  A transaction a request is using is looked at next time.
 */
static void *
reaper_main(void *arg)
{
	(void) arg;
	while (!kshutting_down())
	{
		KTxn	   *head;

		usleep(200000);
		pthread_mutex_lock(&registry_mu);
		head = registry;
		pthread_mutex_unlock(&registry_mu);
		for (KTxn *t = head; t != NULL; t = t->next)
		{
			if (pthread_mutex_trylock(&t->mu) != 0)
				continue;
			if (t->ongoing && elapsed_ms(&t->started) > t->timeout_ms)
			{
				klog(KLOG_INFO, "transactional id \"%s\": the transaction is older than its timeout of %d ms: rolling it back",
					 t->tid, t->timeout_ms);
				rollback(t);
				carry_sequences(t, &t->session);
				t->lost = true;
			}
			else if (!t->ongoing && t->session.pg != NULL &&
					 elapsed_ms(&t->idle_since) > K_TXN_IDLE_CLOSE_S * 1000)
				kpg_close(&t->session);
			pthread_mutex_unlock(&t->mu);
		}
	}
	return NULL;
}

static void
start_reaper(void)
{
	pthread_t	thread;

	if (pthread_create(&thread, NULL, reaper_main, NULL) != 0)
		klog(KLOG_WARNING, "cannot start the transaction reaper: transactions will not time out");
	else
		pthread_detach(thread);
}

void
ktxn_start_reaper(void)
{
	pthread_once(&reaper_once, start_reaper);
}
