/*
 * consumer.c: a pg_eventlog consumer woken by LISTEN/NOTIFY, with libpq.
 *
 *	consumer [--conninfo CONNINFO] [--max-records N] [--wait-seconds S] TOPIC GROUP
 *
 * It reads TOPIC as a transactional consumer of GROUP: each batch is polled,
 * processed (here: printed as "partition offset value" lines) and committed
 * in one transaction, so the group's position moves on exactly when the
 * work commits.  When a poll returns nothing it sleeps until the topic's
 * channel announces new records, or at most --wait-seconds (5) as a safety
 * net, then polls again.
 *
 * Notifications are a hint, the group's committed positions are the truth:
 * a notification missed while disconnected never loses a record, because
 * after every (re)connection the loop LISTENs first and then polls before
 * it waits.
 *
 * CONNINFO defaults to the libpq environment (PGHOST, PGPORT, ...).  With
 * --max-records N it exits (status 0) once it has consumed N records.
 *
 * Build:
 *	cc -Wall -Wextra -I"$(pg_config --includedir)" consumer.c \
 *	   -L"$(pg_config --libdir)" -lpq -o consumer
 */
#define _POSIX_C_SOURCE 200809L	/* clock_gettime, nanosleep, select */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <libpq-fe.h>

#define BATCH 500				/* records per poll (eventlog.poll's max_records) */
#define RECONNECT_MAX 30.0		/* longest pause between two reconnection attempts (s) */

static const char *topic;
static const char *group;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
sleep_seconds(double s)
{
	struct timespec ts = {(time_t) s, (long) ((s - (time_t) s) * 1e9)};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* libpq's error message on one line, for the log. */
static const char *
oneline(const char *msg)
{
	static char buf[512];
	size_t		n = 0;

	for (; *msg && n < sizeof(buf) - 1; msg++)
	{
		char		c = (*msg == '\n' || *msg == '\t') ? ' ' : *msg;

		if (c == ' ' && (n == 0 || buf[n - 1] == ' '))
			continue;
		buf[n++] = c;
	}
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
	return buf;
}

/*
 * Checks a result.  Returns true if it has the expected status, false if
 * the connection is lost (the caller reconnects); any other failure (an
 * unknown topic, a missing privilege) is a bug to report: exit.
 */
static bool
ok(PGconn *conn, PGresult *res, ExecStatusType expected)
{
	if (PQresultStatus(res) == expected)
		return true;
	if (PQstatus(conn) == CONNECTION_BAD)
	{
		PQclear(res);
		return false;
	}
	fprintf(stderr, "error: %s", PQresultErrorMessage(res));
	PQclear(res);
	PQfinish(conn);
	exit(1);
}

/*
 * Connects and LISTENs on the topic's channel; NULL if the connection
 * fails.  LISTEN comes before the first poll: anything committed after that
 * poll is then announced to this session, so no wake-up falls in between.
 */
static PGconn *
connect_and_listen(const char *conninfo)
{
	PGconn	   *conn = PQconnectdb(conninfo);
	PGresult   *res;
	const char *params[1] = {topic};
	const char *channel;
	char	   *ident;
	char	   *listen;

	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "could not connect: %s\n", oneline(PQerrorMessage(conn)));
		PQfinish(conn);
		return NULL;
	}
	res = PQexecParams(conn, "SELECT eventlog.channel($1)", 1, NULL, params, NULL, NULL, 0);
	if (!ok(conn, res, PGRES_TUPLES_OK))
	{
		PQfinish(conn);
		return NULL;
	}
	/* The channel contains a dot: quote it as an identifier. */
	channel = PQgetvalue(res, 0, 0);
	ident = PQescapeIdentifier(conn, channel, strlen(channel));
	PQclear(res);
	if (ident == NULL || (listen = malloc(strlen(ident) + sizeof("LISTEN "))) == NULL)
	{
		fprintf(stderr, "error: %s\n", ident ? "out of memory" : oneline(PQerrorMessage(conn)));
		exit(1);
	}
	sprintf(listen, "LISTEN %s", ident);
	PQfreemem(ident);
	res = PQexec(conn, listen);
	free(listen);
	if (!ok(conn, res, PGRES_COMMAND_OK))
	{
		PQfinish(conn);
		return NULL;
	}
	PQclear(res);
	return conn;
}

/*
 * Polls, processes and commits one batch of at most "limit" records.
 * Returns how many it had, or -1 if the connection is lost (then the
 * batch's transaction is rolled back by the server and its records come
 * again).
 */
static int
consume_batch(PGconn *conn, int limit)
{
	PGresult   *res;
	char		limit_s[16];
	const char *params[3] = {topic, group, limit_s};
	int			n;

	res = PQexec(conn, "BEGIN");
	if (!ok(conn, res, PGRES_COMMAND_OK))
		return -1;
	PQclear(res);

	snprintf(limit_s, sizeof(limit_s), "%d", limit);
	res = PQexecParams(conn,
					   "SELECT partition, offset_id, value"
					   "  FROM eventlog.poll($1, $2, max_records => $3::integer)",
					   3, NULL, params, NULL, NULL, 0);
	if (!ok(conn, res, PGRES_TUPLES_OK))
		return -1;
	n = PQntuples(res);
	for (int i = 0; i < n; i++)
	{
		/*
		 * The work goes here.  Work done in this transaction commits together
		 * with the group's new position: exactly once.  Work outside the
		 * database (like this printf) is at least once: if the commit fails,
		 * the records come again.  A NULL value is a tombstone.
		 */
		printf("%s %s %s\n", PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
			   PQgetisnull(res, i, 2) ? "NULL" : PQgetvalue(res, i, 2));
	}
	PQclear(res);

	res = PQexec(conn, "COMMIT");
	if (!ok(conn, res, PGRES_COMMAND_OK))
		return -1;
	PQclear(res);
	fflush(stdout);
	return n;
}

/*
 * Reads what the server sent (without blocking) and discards the
 * notifications received so far; returns how many, or -1 if the connection
 * is lost.
 */
static int
drain(PGconn *conn)
{
	PGnotify   *n;
	int			count = 0;

	if (!PQconsumeInput(conn))
		return -1;
	while ((n = PQnotifies(conn)) != NULL)
	{
		count++;
		PQfreemem(n);
	}
	return count;
}

/*
 * Sleeps until a notification arrives or "seconds" pass.  Returns false if
 * the connection is lost.
 */
static bool
wait_for_notification(PGconn *conn, double seconds)
{
	double		deadline = now() + seconds;

	for (;;)
	{
		int			sock = PQsocket(conn);
		int			got = drain(conn);
		double		left = deadline - now();
		fd_set		readable;
		struct timeval tv;

		if (got != 0)
			return got > 0;
		if (left <= 0)
			return true;
		if (sock < 0)
			return false;
		FD_ZERO(&readable);
		FD_SET(sock, &readable);
		tv.tv_sec = (time_t) left;
		tv.tv_usec = (suseconds_t) ((left - (time_t) left) * 1e6);
		/* Readable: a notification, or the server closing the connection. */
		if (select(sock + 1, &readable, NULL, NULL, &tv) < 0 && errno != EINTR)
		{
			perror("select");
			exit(1);
		}
	}
}

static void
usage(const char *argv0)
{
	fprintf(stderr,
			"usage: %s [--conninfo CONNINFO] [--max-records N] [--wait-seconds S] TOPIC GROUP\n",
			argv0);
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *conninfo = "";
	long		max_records = -1;	/* -1: run forever */
	double		wait_seconds = 5;
	long		consumed = 0;
	double		pause = 0.5;
	PGconn	   *conn;

	for (int i = 1; i < argc; i++)
	{
		char	   *end;

		if (strcmp(argv[i], "--conninfo") == 0 && i + 1 < argc)
			conninfo = argv[++i];
		else if (strcmp(argv[i], "--max-records") == 0 && i + 1 < argc)
		{
			max_records = strtol(argv[++i], &end, 10);
			if (*end != '\0' || max_records < 1)
				usage(argv[0]);
		}
		else if (strcmp(argv[i], "--wait-seconds") == 0 && i + 1 < argc)
		{
			wait_seconds = strtod(argv[++i], &end);
			if (*end != '\0' || wait_seconds < 0)
				usage(argv[0]);
		}
		else if (argv[i][0] == '-')
			usage(argv[0]);
		else if (topic == NULL)
			topic = argv[i];
		else if (group == NULL)
			group = argv[i];
		else
			usage(argv[0]);
	}
	if (topic == NULL || group == NULL)
		usage(argv[0]);

	/*
	 * A first connection that fails is an error (a wrong conninfo should not
	 * retry forever); later ones are retried, as the server may be
	 * restarting.
	 */
	conn = connect_and_listen(conninfo);
	if (conn == NULL)
		return 1;

	while (max_records < 0 || consumed < max_records)
	{
		int			limit = BATCH;
		int			n;

		if (conn == NULL)
		{
			sleep_seconds(pause);
			conn = connect_and_listen(conninfo);
			if (conn == NULL)
			{
				pause = pause * 2 < RECONNECT_MAX ? pause * 2 : RECONNECT_MAX;
				continue;
			}
			pause = 0.5;
			fprintf(stderr, "reconnected\n");
		}

		/*
		 * Forget the notifications received so far: the poll below sees every
		 * record they announce.  Only one arriving after this point can
		 * announce something the poll did not see.
		 */
		if (max_records >= 0 && max_records - consumed < limit)
			limit = (int) (max_records - consumed);
		if (drain(conn) >= 0 && (n = consume_batch(conn, limit)) >= 0)
		{
			consumed += n;

			/*
			 * Nothing readable (or every partition with records is held by
			 * another consumer of the group): sleep until the topic's channel
			 * speaks.  The timeout covers a notification that never comes
			 * (eventlog.notify off, the notifier restarting) and records left
			 * by another consumer's rollback.
			 */
			if (n > 0 || wait_for_notification(conn, wait_seconds))
				continue;
		}

		/*
		 * The connection is lost (server restart, pg_terminate_backend,
		 * network): reconnect, LISTEN again, and poll first.
		 */
		fprintf(stderr, "connection lost (%s); reconnecting in %g s\n",
				oneline(PQerrorMessage(conn)), pause);
		PQfinish(conn);
		conn = NULL;
	}
	PQfinish(conn);
	return 0;
}
