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
#include "config.h"
#include "log.h"
#include "txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/*
 * The registry: a hash table of the transactional ids, and a list of them
 * by last use for eviction, both under registry_mu.  It holds at most
 * --max-transactional-ids; a new id finding it full evicts the least
 * recently used entry that is
 *   - referenced by nobody (refs 0: no request nor the reaper holds it),
 *   - without an open transaction (not ongoing; one that is lost, rolled
 *     back under its client, may go: its EndTxn then gets
 *     INVALID_PRODUCER_ID_MAPPING, an error as the lost transaction's
 *     EndTxn(commit) would, never a success, and otherwise a client could
 *     fill the registry with transactions left to time out),
 *   - without a PostgreSQL session (the reaper closes it after
 *     --transaction-idle-timeout seconds with no transaction), and
 *   - unused (acquired by no request) for that long too,
 * or is refused when none is.  Evicting loses nothing durable: the
 * producer id and epoch are eventlog.producer_catalog rows, and the id's
 * next InitProducerId gets them back (the next epoch), as after a restart.
 * Until then its requests get INVALID_PRODUCER_ID_MAPPING, which makes
 * the client abort and initialise again.
 *
 * With refs 0 nobody holds mu either (ktxn_acquire takes the reference
 * before locking mu; ktxn_release unlocks mu before dropping it, both
 * under registry_mu), so eviction reads the fields it checks under
 * registry_mu alone.
 */
static void clear_parts(KTxn *t);

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static KTxn **buckets = NULL;
static uint32_t nbuckets = 0;	/* a power of two */
static KTxn *newest = NULL;		/* the LRU list's ends */
static KTxn *oldest = NULL;
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

/*
 * FNV-1a from a random start: ids are chosen by clients, and one who knew
 * the hash could put all of them in one chain (no worse than a list, the
 * registry being bounded, but no better).
 */
static uint32_t hash_seed = 2166136261u;

static uint32_t
tid_hash(const uint8_t *p, int32_t len)
{
	uint32_t	h = hash_seed;

	for (int32_t i = 0; i < len; i++)
	{
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

/* The table, made at first use: about four ids a bucket when full. */
static bool
ensure_buckets(void)
{
	uint32_t	n = 16;

	if (buckets != NULL)
		return true;
	if (getrandom(&hash_seed, sizeof(hash_seed), GRND_NONBLOCK) != sizeof(hash_seed))
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		hash_seed ^= (uint32_t) now.tv_nsec ^ (uint32_t) getpid();
	}
	while (n < (uint32_t) kconf.max_transactional_ids / 4 && n < (1u << 24))
		n <<= 1;
	buckets = calloc(n, sizeof(KTxn *));
	if (buckets == NULL)
		return false;
	nbuckets = n;
	return true;
}

static void
lru_unlink(KTxn *t)
{
	if (t->newer)
		t->newer->older = t->older;
	else
		newest = t->older;
	if (t->older)
		t->older->newer = t->newer;
	else
		oldest = t->newer;
	t->newer = t->older = NULL;
}

static void
lru_push(KTxn *t)
{
	t->older = newest;
	t->newer = NULL;
	if (newest)
		newest->newer = t;
	else
		oldest = t;
	newest = t;
}

/* Out of the table and the list; under registry_mu, refs 0. */
static void
unlink_txn(KTxn *t)
{
	KTxn	  **pp = &buckets[t->hash & (nbuckets - 1)];

	while (*pp != t)
		pp = &(*pp)->hnext;
	*pp = t->hnext;
	lru_unlink(t);
	nregistry--;
}

static void
free_txn(KTxn *t)
{
	kpg_close(&t->session);
	clear_parts(t);
	free(t->parts);
	free(t->session.pg_user);
	if (t->session.pg_password)
		memset(t->session.pg_password, 0, strlen(t->session.pg_password));
	free(t->session.pg_password);
	free(t->session.pg_role);
	pthread_mutex_destroy(&t->mu);
	free(t->tid);
	free(t);
}

/* Whether an entry nobody references may go; under registry_mu. */
static bool
evictable(const KTxn *t)
{
	return t->refs == 0 && !t->ongoing && t->session.pg == NULL &&
		elapsed_ms(&t->last_used) >= (int64_t) kconf.txn_idle_timeout_s * 1000;
}

/*
 * The least recently used evictable entry, unlinked; NULL if none.  The
 * walk stops at the first entry used too recently: all newer ones are too.
 */
static KTxn *
evict_one(void)
{
	for (KTxn *t = oldest; t != NULL; t = t->newer)
	{
		if (elapsed_ms(&t->last_used) < (int64_t) kconf.txn_idle_timeout_s * 1000)
			break;
		if (evictable(t))
		{
			unlink_txn(t);
			return t;
		}
	}
	return NULL;
}

static KTxn *
new_txn(KSlice tid, uint32_t h)
{
	KTxn	   *t = calloc(1, sizeof(KTxn));

	if (t != NULL && (t->tid = malloc((size_t) tid.len + 1)) == NULL)
	{
		free(t);
		t = NULL;
	}
	if (t == NULL)
		return NULL;
	memcpy(t->tid, tid.ptr, (size_t) tid.len);
	t->tid[tid.len] = '\0';
	t->hash = h;
	pthread_mutex_init(&t->mu, NULL);
	t->producer_id = -1;
	t->session.fd = -1;
	snprintf(t->session.peer, sizeof(t->session.peer), "transaction %.80s", t->tid);
	clock_gettime(CLOCK_MONOTONIC, &t->idle_since);
	t->hnext = buckets[h & (nbuckets - 1)];
	buckets[h & (nbuckets - 1)] = t;
	lru_push(t);
	nregistry++;
	return t;
}

KTxn *
ktxn_acquire(KSlice tid, bool create)
{
	KTxn	   *t = NULL;
	KTxn	   *evicted = NULL;
	bool		full = false;
	uint32_t	h;

	if (KSLICE_IS_NULL(tid) || tid.len == 0)
		return NULL;
	pthread_mutex_lock(&registry_mu);
	if (ensure_buckets())
	{
		/* After ensure_buckets: the seed is set at the first. */
		h = tid_hash(tid.ptr, tid.len);
		for (t = buckets[h & (nbuckets - 1)]; t != NULL; t = t->hnext)
			if (t->hash == h && (size_t) tid.len == strlen(t->tid) &&
				memcmp(t->tid, tid.ptr, (size_t) tid.len) == 0)
				break;
		if (t == NULL && create && memchr(tid.ptr, '\0', (size_t) tid.len) == NULL)
		{
			if (nregistry >= kconf.max_transactional_ids)
				evicted = evict_one();
			if (nregistry < kconf.max_transactional_ids)
				t = new_txn(tid, h);
			else
				full = true;
		}
	}
	if (t != NULL)
	{
		t->refs++;
		clock_gettime(CLOCK_MONOTONIC, &t->last_used);
		lru_unlink(t);
		lru_push(t);
	}
	pthread_mutex_unlock(&registry_mu);
	if (evicted != NULL)
	{
		klog(KLOG_INFO, "transactional id \"%s\": evicted from the registry of transactional ids (full, at --max-transactional-ids %d) after %d seconds unused: its next request gets INVALID_PRODUCER_ID_MAPPING, and its InitProducerId starts it again",
			 evicted->tid, kconf.max_transactional_ids, kconf.txn_idle_timeout_s);
		free_txn(evicted);
	}
	if (full)
		klog(KLOG_WARNING, "transactional id \"%.*s\": refused (INVALID_REQUEST): this gateway coordinates --max-transactional-ids %d transactional ids and none can be evicted (each has a transaction open, a PostgreSQL session, or a request in the last %d seconds)",
			 tid.len > 100 ? 100 : (int) tid.len, (const char *) tid.ptr,
			 kconf.max_transactional_ids, kconf.txn_idle_timeout_s);
	if (t != NULL)
		pthread_mutex_lock(&t->mu);
	return t;
}

/* Drops a reference; under registry_mu.  An entry never initialised
 * (its InitProducerId failed, or a request named an id it had not) is
 * forgotten at once: it would only take room. */
static void
unref(KTxn *t, KTxn **gone)
{
	*gone = NULL;
	if (--t->refs == 0 && t->producer_id < 0 && !t->ongoing && !t->lost &&
		t->session.pg == NULL)
	{
		unlink_txn(t);
		*gone = t;
	}
}

void
ktxn_release(KTxn *t)
{
	KTxn	   *gone;

	pthread_mutex_unlock(&t->mu);
	pthread_mutex_lock(&registry_mu);
	unref(t, &gone);
	pthread_mutex_unlock(&registry_mu);
	if (gone != NULL)
		free_txn(gone);
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
 * and its EndTxn(abort) succeeds), and closes the sessions idle for
 * --transaction-idle-timeout seconds.  A transaction a request is using is
 * looked at next time.  It visits a snapshot of the registry taken under
 * registry_mu, each entry referenced meanwhile so that none is evicted
 * under it.
 */
static void
reap(KTxn *t)
{
	if (pthread_mutex_trylock(&t->mu) != 0)
		return;
	if (t->ongoing && elapsed_ms(&t->started) > t->timeout_ms)
	{
		klog(KLOG_INFO, "transactional id \"%s\": the transaction is older than its timeout of %d ms: rolling it back",
			 t->tid, t->timeout_ms);
		rollback(t);
		carry_sequences(t, &t->session);
		t->lost = true;
	}
	else if (!t->ongoing && t->session.pg != NULL &&
			 elapsed_ms(&t->idle_since) >= (int64_t) kconf.txn_idle_timeout_s * 1000)
		kpg_close(&t->session);
	pthread_mutex_unlock(&t->mu);
}

static void *
reaper_main(void *arg)
{
	KTxn	  **snap = NULL;
	int			capsnap = 0;

	(void) arg;
	while (!kshutting_down())
	{
		int			n = 0;

		usleep(200000);
		pthread_mutex_lock(&registry_mu);
		if (nregistry > capsnap)
		{
			KTxn	  **ns = realloc(snap, (size_t) nregistry * sizeof(KTxn *));

			if (ns != NULL)
			{
				snap = ns;
				capsnap = nregistry;
			}
		}
		for (KTxn *t = newest; t != NULL && n < capsnap; t = t->older)
		{
			t->refs++;
			snap[n++] = t;
		}
		pthread_mutex_unlock(&registry_mu);
		for (int i = 0; i < n; i++)
			reap(snap[i]);
		if (n > 0)
		{
			KTxn	   *gone = NULL;	/* forgotten ones, by hnext */

			pthread_mutex_lock(&registry_mu);
			for (int i = 0; i < n; i++)
			{
				KTxn	   *g;

				unref(snap[i], &g);
				if (g != NULL)
				{
					g->hnext = gone;
					gone = g;
				}
			}
			pthread_mutex_unlock(&registry_mu);
			while (gone != NULL)
			{
				KTxn	   *g = gone;

				gone = g->hnext;
				free_txn(g);
			}
		}
	}
	free(snap);
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
