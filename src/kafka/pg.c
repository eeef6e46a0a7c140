/*-------------------------------------------------------------------------
 *
 * pg.c
 *	  A client connection's PostgreSQL session: opened by the first request
 *	  that needs the database, kept for the connection's life, reopened
 *	  after it breaks.  One session per client connection, so one client's
 *	  slow query or error never holds another's, and with SASL each runs
 *	  as its client's role (a login of its own with PLAIN, SET ROLE after
 *	  SCRAM: docs/kafka.md).
 *
 * Each session starts with an empty search_path: every name the gateway's
 * SQL uses is schema-qualified, and operators resolve in pg_catalog.
 * Queries take their values as parameters (PQexecParams; Fetch's, the
 * most frequent, as a prepared statement: kpg_exec_fetch), never pasted
 * into the SQL text.  Shutdown cancels a query in flight with the cancel
 * handle kept in the registry (main.c).
 *
 *-------------------------------------------------------------------------
 */
/* POLLRDHUP (Linux): a client's hang-up during a query (exec_watching_client). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "config.h"
#include "io.h"
#include "log.h"
#include "server.h"

#include <errno.h>
#include <poll.h>
#ifndef POLLRDHUP
#define POLLRDHUP 0				/* elsewhere only POLLHUP tells */
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void await_end(KConn *conn);
static void await_cancel(KConn *conn);
static void ahead_end(KConn *conn);

static pthread_mutex_t cluster_id_mutex = PTHREAD_MUTEX_INITIALIZER;
static char cluster_id[23];

const char *
kpg_trimmed(char *msg)
{
	size_t		len = strlen(msg);
	size_t		n = 0;

	while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		msg[--len] = '\0';
	/* One log line: libpq's inner line breaks (and their tabs) as spaces. */
	for (size_t i = 0; i < len; i++)
	{
		if (msg[i] == '\n' || (msg[i] == '\t' && n > 0 && msg[n - 1] == ' '))
		{
			if (msg[i] == '\n')
				msg[n++] = ' ';
			continue;
		}
		msg[n++] = msg[i];
	}
	msg[n] = '\0';
	return msg;
}

/*
 * --read-dsn: swap the client's two sessions (server.h).  The registry's
 * lock covers pg and pg_cancel, which the main thread reads to cancel a
 * query in flight: it then cancels the one of the session in use.
 */
static void
swap_sessions(KConn *conn)
{
	PGconn	   *pg;
	PGcancel   *cancel;
	bool		b;
	char	   *key;
	int			n;

	kregistry_lock();
	pg = conn->pg;
	conn->pg = conn->other_pg;
	conn->other_pg = pg;
	cancel = conn->pg_cancel;
	conn->pg_cancel = conn->other_cancel;
	conn->other_cancel = cancel;
	kregistry_unlock();
	b = conn->fetch_prepared;
	conn->fetch_prepared = conn->other_fetch_prepared;
	conn->other_fetch_prepared = b;
	b = conn->await_pending;
	conn->await_pending = conn->other_await_pending;
	conn->other_await_pending = b;
	b = conn->pinned;
	conn->pinned = conn->other_pinned;
	conn->other_pinned = b;
	key = conn->await_key;
	conn->await_key = conn->other_await_key;
	conn->other_await_key = key;
	n = conn->await_renewals;
	conn->await_renewals = conn->other_await_renewals;
	conn->other_await_renewals = n;
	b = conn->ahead_pending;
	conn->ahead_pending = conn->other_ahead_pending;
	conn->other_ahead_pending = b;
	key = conn->ahead_key;
	conn->ahead_key = conn->other_ahead_key;
	conn->other_ahead_key = key;
	conn->reading = !conn->reading;
}

/*
 * With --read-dsn, Fetch and ListOffsets run in a session of their own on
 * that server (a hot standby): "on" before the request's handler, off
 * after.  Without it, nothing changes.
 */
void
kpg_read_session(KConn *conn, bool on)
{
	if (kconf.read_dsn != NULL && conn->reading != on)
		swap_sessions(conn);
}

static void close_session(KConn *conn);

/* Close the client's sessions (both, with --read-dsn). */
void
kpg_close(KConn *conn)
{
	close_session(conn);
	if (conn->other_pg != NULL || conn->other_await_key != NULL ||
		conn->other_ahead_key != NULL)
	{
		swap_sessions(conn);
		close_session(conn);
		swap_sessions(conn);
	}
}

static void
close_session(KConn *conn)
{
	PGconn	   *pg;
	PGcancel   *cancel;

	/*
	 * A pending await would keep its backend asleep after PQfinish until its
	 * timeout (a sleeping backend does not read its socket): cancel it.
	 */
	if (conn->await_pending && conn->pg != NULL)
		await_cancel(conn);
	conn->await_pending = false;
	free(conn->await_key);
	conn->await_key = NULL;
	/* A read-ahead reads without waiting: it ends on its own. */
	conn->ahead_pending = false;
	free(conn->ahead_key);
	conn->ahead_key = NULL;
	kregistry_lock();
	pg = conn->pg;
	cancel = conn->pg_cancel;
	conn->pg = NULL;
	conn->pg_cancel = NULL;
	conn->fetch_prepared = false;
	kregistry_unlock();
	if (cancel)
		PQfreeCancel(cancel);
	if (pg)
		PQfinish(pg);
}

/*
 * Whether an idle session is still there.  A session ended while idle
 * (pg_terminate_backend, a server restart, idle_session_timeout) has sent
 * its last message and closed its socket, but libpq only notices when it
 * next reads: the request after it would fail and close its client's
 * connection.  Reading what is pending first tells, without sending
 * anything, so no query can run twice.
 */
static bool
session_alive(PGconn *pg)
{
	/* Bounded: an idle session has little to say (a notice, a status). */
	for (int i = 0; i < 16; i++)
	{
		struct pollfd pfd;
		int			rc;

		pfd.fd = PQsocket(pg);
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (pfd.fd < 0)
			return false;
		rc = poll(&pfd, 1, 0);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			break;
		if (!PQconsumeInput(pg))
			return false;
	}
	return PQstatus(pg) == CONNECTION_OK;
}

/*
 * The idle Fetch's await (api_fetch.c): eventlog._kafka_await over the
 * partitions and offsets of a Fetch that came back empty after its whole
 * wait, sent without waiting for its result, so that the next Fetches of
 * the same partitions and offsets wait on this session's socket instead of
 * each running a query (an idle consumer long-polling every 500 ms cost the
 * server about 330 us per Fetch).  It ends with true when a record becomes
 * readable (or a topic of the database is dropped), false after
 * --idle-await-ms (then it is sent again: await_restart), or an error (a
 * topic dropped or a privilege revoked before it started, the backend
 * terminated); but for false, the Fetch after it reads as usual and
 * reports what there is to report.
 */

static const char *const await_sql =
"SELECT eventlog._kafka_await($1::pg_catalog.text[], $2::pg_catalog.int4[],"
"                             $3::pg_catalog.int8[], $4::pg_catalog.int4)";

/*
 * Cancels the pending await until its result has come (or the session
 * broke).  One cancel is not enough: the await's query is sent just before
 * the Fetch's response, and the request that ends it can come microseconds
 * later (a client that pipelines one behind its Fetch sends it before the
 * response), before the backend has read that query; a cancel that reaches
 * a backend still reading its next query is ignored, as by any idle
 * backend, and the await would run its whole 30 s, and the request with
 * it.  So the cancel is sent again while no result comes, after 10, 20,
 * 40 ms... (at most 200 ms apart); a cancel that reaches the backend after
 * the await ended is ignored, as it is idle again (the signal is delivered
 * before it can read the next query).
 */
static void
await_cancel(KConn *conn)
{
	int			wait_ms = 10;

	while (PQconsumeInput(conn->pg) && PQisBusy(conn->pg))
	{
		char		errbuf[256];
		struct timespec start;

		if (conn->pg_cancel == NULL ||
			!PQcancel(conn->pg_cancel, errbuf, sizeof(errbuf)))
		{
			klog(KLOG_DEBUG, "conn %llu (%s): cannot cancel an idle Fetch's await: %s",
				 (unsigned long long) conn->id, conn->peer,
				 conn->pg_cancel == NULL ? "no cancel handle" : errbuf);
			return;				/* PQgetResult waits for its end */
		}
		/* Its result, for up to wait_ms (a notice is not one). */
		clock_gettime(CLOCK_MONOTONIC, &start);
		for (;;)
		{
			struct timespec now;
			struct pollfd pfd;
			int64_t		left;
			int			rc;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = wait_ms - ((int64_t) (now.tv_sec - start.tv_sec) * 1000 +
							  (now.tv_nsec - start.tv_nsec) / 1000000);
			if (left <= 0)
				break;
			pfd.fd = PQsocket(conn->pg);
			pfd.events = POLLIN;
			pfd.revents = 0;
			if (pfd.fd < 0)
				return;
			rc = poll(&pfd, 1, (int) left);
			if (rc < 0 && errno != EINTR)
				return;
			if (rc > 0 && (!PQconsumeInput(conn->pg) || !PQisBusy(conn->pg)))
				return;
		}
		if (wait_ms < 200)
			wait_ms *= 2;
	}
}

/*
 * Ends a pending await, if any: cancels it unless it has finished, then
 * reads its results up to the end, so that the session is idle again (or
 * found broken, and kpg_connect reconnects).  Its outcome does not matter:
 * the request that ends it queries on its own.
 */
static void
await_end(KConn *conn)
{
	PGresult   *res;

	if (!conn->await_pending)
		return;
	conn->await_pending = false;
	free(conn->await_key);
	conn->await_key = NULL;
	if (conn->pg == NULL)
		return;
	await_cancel(conn);
	while ((res = PQgetResult(conn->pg)) != NULL)
		PQclear(res);
}

void
kpg_await_start(KConn *conn, const char *key, const void *extra, size_t extra_len,
				const char *const *params)
{
	char		await_ms[16];
	const char *p4[4] = {params[0], params[1], params[2], await_ms};
	size_t		klen = strlen(key) + 1;

	await_end(conn);
	ahead_end(conn);
	if (conn->pg == NULL || PQstatus(conn->pg) != CONNECTION_OK || kshutting_down())
		return;
	snprintf(await_ms, sizeof(await_ms), "%d", kconf.idle_await_ms);
	conn->await_key = malloc(klen + extra_len);
	if (conn->await_key == NULL)
		return;
	memcpy(conn->await_key, key, klen);
	conn->await_renewals = 0;
	if (extra_len > 0)
		memcpy(conn->await_key + klen, extra, extra_len);
	if (!PQsendQueryParams(conn->pg, await_sql, 4, NULL, p4, NULL, NULL, 0))
	{
		klog(KLOG_DEBUG, "conn %llu (%s): cannot send an idle Fetch's await: %s",
			 (unsigned long long) conn->id, conn->peer, kpg_trimmed(PQerrorMessage(conn->pg)));
		free(conn->await_key);
		conn->await_key = NULL;
		return;
	}
	conn->await_pending = true;
}

/*
 * The await ended: if it found nothing (false: its --idle-await-ms
 * passed), sends it again at once, from its key (the three array
 * parameters joined by '|', a character no topic name or number has), and
 * is true: all a Fetch query would tell the Fetch that waits on it is that
 * nothing is readable, so it goes on waiting without one (an idle consumer
 * then costs the server one await per --idle-await-ms, not a Fetch query
 * and an await).  The new await checks the consume privilege again as it
 * starts, so a REVOKE still ends the wait within --idle-await-ms: its error
 * ends the await, and the Fetch then queries and reports it.  False (the
 * Fetch queries) for any other outcome: records readable, a topic dropped,
 * an error, a broken session.
 */
/* How long renewed awaits may go without a Fetch query (5 minutes). */
#define KAWAIT_RECHECK_MS 300000

static bool
await_restart(KConn *conn)
{
	PGresult   *res = PQgetResult(conn->pg);
	bool		idle = res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
		PQntuples(res) == 1 && PQnfields(res) == 1 && !PQgetisnull(res, 0, 0) &&
		strcmp(PQgetvalue(res, 0, 0), "f") == 0;
	char	   *copy;
	char	   *p[4];
	char		await_ms[16];

	PQclear(res);
	if (!idle)
		return false;
	/* The end of the await's results: the session is idle again. */
	while ((res = PQgetResult(conn->pg)) != NULL)
	{
		idle = false;
		PQclear(res);
	}
	if (!idle || kshutting_down())
		return false;

	/*
	 * For at most KAWAIT_RECHECK_MS in a row: the await looks its topics
	 * up by name, so a topic dropped and created again under the same name
	 * meanwhile would be waited on for ever in its stead; the Fetch query
	 * after them finds that out (and answers OFFSET_OUT_OF_RANGE or the
	 * like), as it checks everything else again.
	 */
	if ((int64_t) (conn->await_renewals + 1) * kconf.idle_await_ms > KAWAIT_RECHECK_MS)
		return false;
	conn->await_renewals++;
	copy = strdup(conn->await_key);
	if (copy == NULL)
		return false;
	p[0] = copy;
	p[1] = strchr(p[0], '|');
	p[2] = p[1] ? strchr(p[1] + 1, '|') : NULL;
	snprintf(await_ms, sizeof(await_ms), "%d", kconf.idle_await_ms);
	p[3] = await_ms;
	if (p[2] != NULL)
	{
		*p[1]++ = '\0';
		*p[2]++ = '\0';
	}
	idle = p[2] != NULL &&
		PQsendQueryParams(conn->pg, await_sql, 4, NULL, (const char *const *) p, NULL, NULL, 0);
	free(copy);
	return idle;
}

bool
kpg_await_wait(KConn *conn, const char *key, int32_t *wait_ms, const void **extra)
{
	struct timespec start;
	int64_t		elapsed = 0;
	bool		finished = false;
	bool		hung_up = false;

	*extra = NULL;
	if (!conn->await_pending)
		return false;
	if (conn->pg == NULL || *wait_ms <= 0 || strcmp(conn->await_key, key) != 0)
	{
		await_end(conn);
		return false;
	}
	/* Shutdown cancels what it sees in flight (main.c), this wait too. */
	kregistry_lock();
	if (kshutting_down())
	{
		kregistry_unlock();
		await_end(conn);
		return false;
	}
	conn->in_query = true;
	kregistry_unlock();
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;)
	{
		struct timespec now;
		struct pollfd pfds[2];
		int64_t		left;
		int			rc;

		/*
		 * What libpq holds first, the socket only when poll says it has
		 * something: an idle consumer's Fetch then costs one poll here,
		 * not two reads of an empty socket around it as well.
		 */
		if (!PQisBusy(conn->pg) && !await_restart(conn))
		{
			finished = true;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed = (int64_t) (now.tv_sec - start.tv_sec) * 1000 +
			(now.tv_nsec - start.tv_nsec) / 1000000;
		left = (int64_t) *wait_ms - elapsed;
		if (left <= 0)
			break;
		pfds[0].fd = PQsocket(conn->pg);
		pfds[0].events = POLLIN;
		pfds[0].revents = 0;
		pfds[1].fd = conn->fd;
		pfds[1].events = POLLRDHUP;
		pfds[1].revents = 0;
		rc = poll(pfds, 2, (int) (left > 1000000000 ? 1000000000 : left));
		if (rc < 0 && errno != EINTR)
			break;
		if (rc > 0 && (pfds[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0)
		{
			hung_up = true;
			break;
		}
		if (rc > 0 && (pfds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
			!PQconsumeInput(conn->pg))
		{
			finished = true;
			break;
		}
	}
	kregistry_lock();
	conn->in_query = false;
	kregistry_unlock();
	{
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed = (int64_t) (now.tv_sec - start.tv_sec) * 1000 +
			(now.tv_nsec - start.tv_nsec) / 1000000;
	}
	if (elapsed > *wait_ms)
		elapsed = *wait_ms;
	*wait_ms -= (int32_t) elapsed;
	if (finished || hung_up)
	{
		/* Read its result (finished) or cancel it (the client has gone). */
		await_end(conn);
		*extra = NULL;
		return hung_up;
	}
	*extra = conn->await_key + strlen(conn->await_key) + 1;
	return true;
}

/*
 * Makes a new session the role SCRAM authenticated (pg_role): SET ROLE, as
 * the --dsn role, which must be a member of it.  Every session of an
 * authenticated connection goes through here before its first query, the
 * reconnected ones too, so none ever runs a client's request as --dsn's
 * role; clients send no SQL, so nothing can RESET ROLE.
 *
 * Only while kafka_scram_verifier still gives the role a verifier: a
 * PLAIN session that reconnects logs in again, and a role that lost LOGIN,
 * expired or lost CONNECT since cannot; SET ROLE checks none of that, so
 * without this an administrator who took a role's LOGIN away and ended
 * its sessions (pg_terminate_backend) would see the gateway put it back.
 */
static bool
set_session_role(KConn *conn, PGconn *pg)
{
	const char *params[1] = {conn->pg_role};
	PGresult   *res;
	bool		ok;

	res = PQexecParams(pg,
					   "SELECT pg_catalog.set_config('role', $1, false)"
					   " WHERE eventlog.kafka_scram_verifier($1) IS NOT NULL",
					   1, NULL, params, NULL, NULL, 0);
	ok = PQresultStatus(res) == PGRES_TUPLES_OK;
	if (!ok)
		klog(KLOG_WARNING, "conn %llu (%s): cannot SET ROLE to the authenticated role (the --dsn role must be a member of it): %s",
			 (unsigned long long) conn->id, conn->peer, kpg_trimmed(PQerrorMessage(pg)));
	else if (PQntuples(res) != 1)
	{
		klog(KLOG_WARNING, "conn %llu (%s): the authenticated role may no longer log in (kafka_scram_verifier gives it no verifier): closing its session",
			 (unsigned long long) conn->id, conn->peer);
		ok = false;
	}
	PQclear(res);
	if (!ok)
		return false;
	/* And check that it took: the session runs as that role or not at all. */
	res = PQexec(pg, "SELECT current_user");
	ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
		strcmp(PQgetvalue(res, 0, 0), conn->pg_role) == 0;
	if (!ok)
		klog(KLOG_WARNING, "conn %llu (%s): the PostgreSQL session did not take the authenticated role",
			 (unsigned long long) conn->id, conn->peer);
	PQclear(res);
	return ok;
}

bool
kpg_connect(KConn *conn)
{
	/*
	 * Kafka's strings are UTF-8, and so are the keys, values and headers the
	 * gateway passes as text to JSON topics: PostgreSQL converts them to the
	 * database's encoding (after the DSN, so that it cannot be overridden).
	 */
	const char *keys[6] = {"dbname", "fallback_application_name", "client_encoding", NULL, NULL, NULL};
	const char *values[6] = {conn->reading ? kconf.read_dsn : kconf.dsn,
	"pg_eventlog_kafka", "UTF8", NULL, NULL, NULL};
	PGconn	   *pg;
	PGresult   *res;
	PGcancel   *cancel;

	/*
	 * Every use of the session but the idle Fetch's own ends its await, and
	 * every use but the next Fetch's its read-ahead.
	 */
	await_end(conn);
	ahead_end(conn);
	/*
	 * A transaction's session (txn.c) is never replaced while BEGIN is
	 * open: a statement in a new session would run outside the transaction.
	 */
	if (conn->pinned)
	{
		if (conn->pg != NULL && session_alive(conn->pg))
			return true;
		if (conn->pg != NULL)
			close_session(conn);
		return false;
	}
	if (conn->pg != NULL)
	{
		if (session_alive(conn->pg))
			return true;
		klog(KLOG_DEBUG, "conn %llu (%s): the PostgreSQL session has ended: reconnecting",
			 (unsigned long long) conn->id, conn->peer);
		close_session(conn);
	}
	if (kshutting_down())
		return false;
	/* SASL PLAIN: the client's login replaces --dsn's (later keys win). */
	if (conn->pg_user != NULL)
	{
		keys[3] = "user";
		values[3] = conn->pg_user;
		keys[4] = "password";
		values[4] = conn->pg_password;
	}
	pg = PQconnectdbParams(keys, values, 1);
	if (PQstatus(pg) != CONNECTION_OK)
	{
		klog(KLOG_WARNING, "conn %llu (%s): cannot connect to PostgreSQL%s%s: %s",
			 (unsigned long long) conn->id, conn->peer,
			 conn->pg_user ? " as " : "", conn->pg_user ? conn->pg_user : "",
			 kpg_trimmed(PQerrorMessage(pg)));
		PQfinish(pg);
		return false;
	}

	/*
	 * A PLAIN password must be what let the client in: a pg_hba.conf line
	 * that does not ask for one (trust, peer, or a certificate of the
	 * gateway's) would let any password log in as any role it allows.
	 */
	if (conn->pg_user != NULL && !PQconnectionUsedPassword(pg))
	{
		klog(KLOG_WARNING, "conn %llu (%s): PostgreSQL let role \"%s\" in without asking for its password (pg_hba.conf): refusing the SASL PLAIN login",
			 (unsigned long long) conn->id, conn->peer, conn->pg_user);
		PQfinish(pg);
		return false;
	}
	res = PQexec(pg, "SELECT pg_catalog.set_config('search_path', '', false)");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		klog(KLOG_WARNING, "conn %llu (%s): cannot set up the PostgreSQL session: %s",
			 (unsigned long long) conn->id, conn->peer, kpg_trimmed(PQerrorMessage(pg)));
		PQclear(res);
		PQfinish(pg);
		return false;
	}
	PQclear(res);
	if (conn->pg_role != NULL && !set_session_role(conn, pg))
	{
		PQfinish(pg);
		return false;
	}
	cancel = PQgetCancel(pg);
	kregistry_lock();
	conn->pg = pg;
	conn->pg_cancel = cancel;
	conn->fetch_prepared = false;
	kregistry_unlock();
	klog(KLOG_DEBUG, "conn %llu (%s): connected to PostgreSQL, backend pid %d",
		 (unsigned long long) conn->id, conn->peer, PQbackendPID(pg));
	return true;
}

/*
 * PQexecParams, except that the query is cancelled when the client hangs
 * up while it runs: a long poll (Fetch's max_wait_ms, a JoinGroup's
 * rebalance) must not keep a PostgreSQL backend, its snapshot (which holds
 * back VACUUM's horizon) and this thread for up to 24 days after its client
 * has gone.  Only the hang-up counts (POLLRDHUP): a pipelined request
 * waiting in the socket is not one.  The result is the query's first (it
 * has one statement); later ones are drained, as PQexecParams does.
 */
static PGresult *wait_watching_client(KConn *conn);

static PGresult *
exec_watching_client(KConn *conn, const char *stmt, const char *sql, int nparams,
					 const char *const *params, const int *lengths, const int *formats,
					 int result_format)
{
	if (stmt != NULL ?
		!PQsendQueryPrepared(conn->pg, stmt, nparams, params, lengths, formats,
							 result_format) :
		!PQsendQueryParams(conn->pg, sql, nparams, NULL, params, lengths, formats,
						   result_format))
		return NULL;
	return wait_watching_client(conn);
}

/* The result of the query sent, cancelled if the client hangs up meanwhile. */
static PGresult *
wait_watching_client(KConn *conn)
{
	PGresult   *res = NULL;
	PGresult   *next;
	bool		cancelled = false;

	while (PQisBusy(conn->pg))
	{
		struct pollfd pfds[2];
		int			rc;

		pfds[0].fd = PQsocket(conn->pg);
		pfds[0].events = POLLIN;
		pfds[0].revents = 0;
		pfds[1].fd = cancelled ? -1 : conn->fd;
		pfds[1].events = POLLRDHUP;
		pfds[1].revents = 0;
		rc = poll(pfds, 2, -1);
		if (rc < 0)
		{
			if (errno == EINTR)
				continue;
			break;
		}
		if (!cancelled && (pfds[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0)
		{
			char		errbuf[256];

			klog(KLOG_INFO, "conn %llu (%s): the client hung up during a query: cancelling it",
				 (unsigned long long) conn->id, conn->peer);
			if (conn->pg_cancel == NULL || !PQcancel(conn->pg_cancel, errbuf, sizeof(errbuf)))
				break;
			cancelled = true;
		}
		if ((pfds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
			!PQconsumeInput(conn->pg))
			break;
	}
	/* Collect the results (PQgetResult blocks if the loop broke early). */
	while ((next = PQgetResult(conn->pg)) != NULL)
	{
		if (res == NULL)
			res = next;
		else
			PQclear(next);
	}
	return res;
}

static PGresult *exec_stmt(KConn *conn, const char *stmt, const char *sql, int nparams,
						   const char *const *params, const int *lengths,
						   const int *formats, int result_format, char sqlstate[6],
						   char *msg, size_t msgsize, bool watch_client);

/*
 * A query: parameters in text, or with per-parameter lengths and formats
 * (1: PostgreSQL's binary format; NULL: all text), and results in text (0)
 * or binary (1) format; with watch_client, cancelled if the client hangs up.
 */
static PGresult *
exec_params(KConn *conn, const char *sql, int nparams, const char *const *params,
			const int *lengths, const int *formats, int result_format,
			char sqlstate[6], char *msg, size_t msgsize, bool watch_client)
{
	return exec_stmt(conn, NULL, sql, nparams, params, lengths, formats,
					 result_format, sqlstate, msg, msgsize, watch_client);
}

/*
 * A Fetch's query, the same every time, as a prepared statement of the
 * session: parsing, analysing and planning it was about a third of what an
 * idle consumer's Fetch cost the server.  Prepared on the session's first
 * Fetch, and again after a reconnection or when the server no longer has it
 * (26000, a DISCARD by a pooler).
 */
PGresult *
kpg_exec_fetch(KConn *conn, const char *sql, int nparams, const char *const *params,
			   char sqlstate[6])
{
	PGresult   *res;

	if (!kpg_connect(conn))
	{
		sqlstate[0] = '\0';
		return NULL;
	}
	if (!conn->fetch_prepared)
	{
		res = PQprepare(conn->pg, "el_fetch", sql, nparams, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			const char *code = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

			snprintf(sqlstate, 6, "%s", code ? code : "");
			klog(KLOG_WARNING, "conn %llu (%s): cannot prepare Fetch's query: %s",
				 (unsigned long long) conn->id, conn->peer,
				 kpg_trimmed(res ? PQresultErrorMessage(res) : PQerrorMessage(conn->pg)));
			PQclear(res);
			if (PQstatus(conn->pg) != CONNECTION_OK)
				close_session(conn);
			return NULL;
		}
		PQclear(res);
		conn->fetch_prepared = true;
	}
	res = exec_stmt(conn, "el_fetch", sql, nparams, params, NULL, NULL, 1, sqlstate,
					NULL, 0, true);
	if (res == NULL && strcmp(sqlstate, "26000") == 0)
		conn->fetch_prepared = false;
	return res;
}

/*
 * Read-ahead of a consumer's next Fetch.  A consumer reading a backlog
 * sends a Fetch, waits for its response, decodes it, then sends the next:
 * the backend (its read and the sending of its rows), the gateway (the
 * batches) and the client (decoding) each worked while the other two
 * waited, and reading 1,000,000 records took the sum of the three, the
 * backend half of it.  So after a Fetch whose partitions have more records
 * readable than it returns, api_fetch.c sends the query of the Fetch that
 * the client will send next (the same partitions, from the offset after
 * the last record returned, no wait) before the response is even built;
 * the backend reads while the gateway builds and sends the response and
 * the client decodes it, and the next Fetch, if it is that one, takes the
 * rows read (kpg_fetch_ahead_take).  What it reads was readable when it
 * ran: a response never shows a record that was not committed, only the
 * marks (log start, stable offset) of a few milliseconds earlier.  A
 * read-ahead never waits, so ending one that is not wanted (another
 * Fetch, any other request, kpg_connect) reads its result to the end and
 * drops it rather than cancelling it.
 */
static void
ahead_end(KConn *conn)
{
	PGresult   *res;

	if (!conn->ahead_pending)
		return;
	conn->ahead_pending = false;
	free(conn->ahead_key);
	conn->ahead_key = NULL;
	if (conn->pg == NULL)
		return;
	while ((res = PQgetResult(conn->pg)) != NULL)
		PQclear(res);
}

void
kpg_fetch_ahead(KConn *conn, const char *key, int nparams, const char *const *params)
{
	await_end(conn);
	ahead_end(conn);
	/*
	 * Only after a Fetch query in this session (its statement is prepared),
	 * and never in a transaction (txn.c, produce_batch.c): an error of a
	 * read-ahead must not abort it.
	 */
	if (conn->pg == NULL || !conn->fetch_prepared || PQstatus(conn->pg) != CONNECTION_OK ||
		PQtransactionStatus(conn->pg) != PQTRANS_IDLE || conn->pinned || conn->batch_open ||
		kshutting_down())
		return;
	conn->ahead_key = strdup(key);
	if (conn->ahead_key == NULL)
		return;
	if (!PQsendQueryPrepared(conn->pg, "el_fetch", nparams, params, NULL, NULL, 1))
	{
		klog(KLOG_DEBUG, "conn %llu (%s): cannot send a Fetch's read-ahead: %s",
			 (unsigned long long) conn->id, conn->peer, kpg_trimmed(PQerrorMessage(conn->pg)));
		free(conn->ahead_key);
		conn->ahead_key = NULL;
		return;
	}
	conn->ahead_pending = true;
}

PGresult *
kpg_fetch_ahead_take(KConn *conn, const char *key)
{
	PGresult   *res;

	if (!conn->ahead_pending)
		return NULL;
	if (conn->pg == NULL || strcmp(conn->ahead_key, key) != 0)
	{
		klog(KLOG_DEBUG, "conn %llu (%s): Fetch: not the one read ahead: dropping its rows",
			 (unsigned long long) conn->id, conn->peer);
		ahead_end(conn);
		return NULL;
	}
	klog(KLOG_DEBUG, "conn %llu (%s): Fetch: read ahead", (unsigned long long) conn->id,
		 conn->peer);
	conn->ahead_pending = false;
	free(conn->ahead_key);
	conn->ahead_key = NULL;
	/* As exec_stmt: shutdown cancels what it sees in flight. */
	kregistry_lock();
	if (kshutting_down())
	{
		kregistry_unlock();
		while ((res = PQgetResult(conn->pg)) != NULL)
			PQclear(res);
		return NULL;
	}
	conn->in_query = true;
	kregistry_unlock();
	res = wait_watching_client(conn);
	kregistry_lock();
	conn->in_query = false;
	kregistry_unlock();
	/* A failed one is dropped: the Fetch's own query reports the error. */
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		PQclear(res);
		return NULL;
	}
	return res;
}

/*
 * Between requests (conn.c), while a read-ahead runs and the client has
 * sent nothing more: its rows are read as they come, until its result is
 * whole or the client sends (or hangs up).  The backend then sends them
 * while the client decodes the response, rather than stopping once the
 * socket's buffer is full, and it never waits that way with its snapshot
 * (which holds back VACUUM's horizon) for a client that does not come back
 * soon: a consumer whose application is slow, whose librdkafka stops
 * fetching while its queue is full.  The result waits in libpq for the
 * next Fetch or the next use of the session.
 */
void
kpg_fetch_ahead_collect(KConn *conn)
{
	bool		swapped = false;

	if (!conn->ahead_pending)
	{
		/* --read-dsn: the Fetch's session is the other one now. */
		if (!conn->other_ahead_pending || conn->reading)
			return;
		swap_sessions(conn);
		swapped = true;
	}
	while (conn->pg != NULL && PQisBusy(conn->pg) && !kio_buffered(conn))
	{
		struct pollfd pfds[2];
		int			rc;

		pfds[0].fd = PQsocket(conn->pg);
		pfds[0].events = POLLIN;
		pfds[0].revents = 0;
		pfds[1].fd = conn->fd;
		pfds[1].events = POLLIN;
		pfds[1].revents = 0;
		if (pfds[0].fd < 0)
			break;
		/* No longer than --idle-timeout: a server that stopped answering. */
		rc = poll(pfds, 2, kconf.idle_timeout_ms > 0 && kconf.idle_timeout_ms < INT32_MAX ?
				  (int) kconf.idle_timeout_ms : -1);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0 || pfds[1].revents != 0)
			break;
		if (pfds[0].revents != 0 && !PQconsumeInput(conn->pg))
			break;
	}
	if (swapped)
		swap_sessions(conn);
}

static PGresult *
exec_stmt(KConn *conn, const char *stmt, const char *sql, int nparams,
		  const char *const *params, const int *lengths, const int *formats,
		  int result_format, char sqlstate[6], char *msg, size_t msgsize,
		  bool watch_client)
{
	PGresult   *res;
	ExecStatusType st;

	sqlstate[0] = '\0';
	if (msg != NULL && msgsize > 0)
		msg[0] = '\0';
	if (!kpg_connect(conn))
	{
		/* A batch's session that ended took the batch with it. */
		if (conn->batch_open)
			conn->batch_failed = true;
		return NULL;
	}

	/* Shutdown cancels only what it sees in flight: look, then mark. */
	kregistry_lock();
	if (kshutting_down())
	{
		kregistry_unlock();
		return NULL;
	}
	conn->in_query = true;
	kregistry_unlock();

	if (watch_client)
		res = exec_watching_client(conn, stmt, sql, nparams, params, lengths, formats,
								   result_format);
	else if (stmt != NULL)
		res = PQexecPrepared(conn->pg, stmt, nparams, params, lengths, formats,
							 result_format);
	else
		res = PQexecParams(conn->pg, sql, nparams, NULL, params, lengths, formats,
						   result_format);

	kregistry_lock();
	conn->in_query = false;
	kregistry_unlock();

	st = PQresultStatus(res);
	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return res;
	if (res != NULL && PQresultErrorField(res, PG_DIAG_SQLSTATE) != NULL)
	{
		const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		int			i;

		for (i = 0; i < 5 && code[i]; i++)
			sqlstate[i] = code[i];
		sqlstate[i] = '\0';
	}
	if (msg != NULL && msgsize > 0 && res != NULL &&
		PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) != NULL)
		snprintf(msg, msgsize, "%s", PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
	/* In a batch (produce_batch.c), the transaction is aborted now. */
	if (conn->batch_open)
		conn->batch_failed = true;
	klog(conn->batch_open ? KLOG_DEBUG : KLOG_WARNING, "conn %llu (%s): query failed: %s",
		 (unsigned long long) conn->id, conn->peer,
		 kpg_trimmed(res ? PQresultErrorMessage(res) : PQerrorMessage(conn->pg)));
	PQclear(res);
	if (PQstatus(conn->pg) != CONNECTION_OK)
		close_session(conn);
	return NULL;
}

PGresult *
kpg_exec_msg(KConn *conn, const char *sql, int nparams, const char *const *params,
			 char sqlstate[6], char *msg, size_t msgsize)
{
	return exec_params(conn, sql, nparams, params, NULL, NULL, 0, sqlstate, msg, msgsize, false);
}

PGresult *
kpg_exec(KConn *conn, const char *sql, int nparams, const char *const *params,
		 char sqlstate[6])
{
	return exec_params(conn, sql, nparams, params, NULL, NULL, 0, sqlstate, NULL, 0, false);
}

PGresult *
kpg_exec_binary(KConn *conn, const char *sql, int nparams, const char *const *params,
				char sqlstate[6])
{
	return exec_params(conn, sql, nparams, params, NULL, NULL, 1, sqlstate, NULL, 0, true);
}

PGresult *
kpg_exec_params(KConn *conn, const char *sql, int nparams,
				const char *const *params, const int *lengths,
				const int *formats, char sqlstate[6], char *errmsg, size_t errlen)
{
	return exec_params(conn, sql, nparams, params, lengths, formats, 0, sqlstate,
					   errmsg, errlen, false);
}

/* FNV-1a, 64 bits, from a given start: stable everywhere. */
static uint64_t
fnv1a64(uint64_t h, const char *s)
{
	for (; *s; s++)
	{
		h ^= (uint8_t) *s;
		h *= 1099511628211ull;
	}
	return h;
}

/* 16 bytes from a string: two FNV-1a hashes of different starts. */
static void
hash16(const char *s, uint8_t out[16])
{
	uint64_t	a = fnv1a64(14695981039346656037ull, s);
	uint64_t	b = fnv1a64(a ^ 0x9e3779b97f4a7c15ull, s);

	for (int i = 0; i < 8; i++)
	{
		out[i] = (uint8_t) (a >> (56 - 8 * i));
		out[8 + i] = (uint8_t) (b >> (56 - 8 * i));
	}
}

const char *
kpg_cluster_id(KConn *conn)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const char *result = NULL;
	PGresult   *res;
	char		sqlstate[6];
	char		text[256];
	uint8_t		h[16];
	uint32_t	acc = 0;
	int			bits = 0;
	int			n = 0;

	pthread_mutex_lock(&cluster_id_mutex);
	if (cluster_id[0] != '\0')
		result = cluster_id;
	pthread_mutex_unlock(&cluster_id_mutex);
	if (result)
		return result;

	/*
	 * The system identifier is the cluster's (initdb's); with the database's
	 * name it tells every database apart, and every gateway of one database
	 * gets the same id.
	 */
	res = kpg_exec(conn,
				   "SELECT s.system_identifier::text, pg_catalog.current_database() "
				   "FROM pg_catalog.pg_control_system() s", 0, NULL, sqlstate);
	if (res == NULL || PQntuples(res) != 1)
	{
		PQclear(res);
		return NULL;
	}
	snprintf(text, sizeof(text), "%s/%s", PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
	PQclear(res);
	hash16(text, h);
	/* URL-safe base64 of 16 bytes without padding: 22 characters. */
	for (int i = 0; i < 16; i++)
	{
		acc = (acc << 8) | h[i];
		bits += 8;
		while (bits >= 6)
		{
			bits -= 6;
			text[n++] = b64[(acc >> bits) & 63];
		}
	}
	text[n++] = b64[(acc << (6 - bits)) & 63];
	text[n] = '\0';
	pthread_mutex_lock(&cluster_id_mutex);
	memcpy(cluster_id, text, sizeof(cluster_id));
	pthread_mutex_unlock(&cluster_id_mutex);
	return cluster_id;
}

void
ktopic_uuid(int32_t topic_id, int64_t created_us, uint8_t out[16])
{
	char		text[64];
	uint8_t		h[16];

	/* Kafka reserves the all-zero id (none) and 0...01 (its metadata log). */
	snprintf(text, sizeof(text), "%lld", (long long) created_us);
	hash16(text, h);
	memset(out, 0, 16);
	memcpy(out, h, 12);
	out[12] = (uint8_t) ((uint32_t) topic_id >> 24);
	out[13] = (uint8_t) ((uint32_t) topic_id >> 16);
	out[14] = (uint8_t) ((uint32_t) topic_id >> 8);
	out[15] = (uint8_t) topic_id;
}
