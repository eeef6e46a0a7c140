/*-------------------------------------------------------------------------
 *
 * conn.c
 *	  The session with PostgreSQL: connecting as every PostgreSQL client
 *	  does (libpq's environment, PGHOST and friends, .pgpass, or -d with a
 *	  connection string), running queries with their values as parameters,
 *	  and turning a failed query into the server's one-line message.
 *
 * The session's search_path is emptied at connect: every name the SQL of
 * this program uses is schema-qualified (eventlog., pg_catalog. is always
 * searched), so nothing a role put in its own schemas can stand in for the
 * extension's functions.  User input only ever travels as a parameter.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

const char *cli_conninfo = NULL;
volatile int cli_interrupted = 0;

/* The cancel handle SIGINT/SIGTERM use (PQcancel is signal-safe). */
static PGcancel *volatile interrupt_cancel = NULL;

/* One line: libpq's messages end with a newline and may hold more. */
static const char *
one_line(const char *msg)
{
	static char buf[1024];
	size_t		n = 0;

	for (; *msg && n < sizeof(buf) - 1; msg++)
	{
		if (*msg == '\n' || *msg == '\r' || *msg == '\t')
		{
			if (n > 0 && buf[n - 1] != ' ')
				buf[n++] = ' ';
			continue;
		}
		buf[n++] = *msg;
	}
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
	return buf;
}

PGconn *
cli_connect(void)
{
	const char *keys[] = {"dbname", "fallback_application_name", NULL};
	const char *vals[] = {cli_conninfo, "pg_eventlog", NULL};
	PGconn	   *conn;
	PGresult   *res;

	/* expand_dbname: -d takes a connection string or a database name. */
	conn = PQconnectdbParams(keys, vals, 1);
	if (conn == NULL)
		cli_error("out of memory");
	if (PQstatus(conn) != CONNECTION_OK)
		cli_error("%s", one_line(PQerrorMessage(conn)));

	res = PQexec(conn,
				 "SELECT pg_catalog.set_config('search_path', '', false),"
				 " (SELECT e.extversion FROM pg_catalog.pg_extension e"
				 " WHERE e.extname OPERATOR(pg_catalog.=) 'pg_eventlog')");
	if (!cli_result_ok(res))
		cli_fail_result(conn, res);
	if (PQgetisnull(res, 0, 1))
		cli_error("extension pg_eventlog is not installed in database \"%s\"", PQdb(conn));
	PQclear(res);
	return conn;
}

static void
interrupt_handler(int sig)
{
	char		errbuf[256];
	PGcancel   *cancel = interrupt_cancel;

	(void) sig;
	cli_interrupted = 1;
	if (cancel)
		(void) PQcancel(cancel, errbuf, sizeof(errbuf));
}

/*
 * SIGINT and SIGTERM end a command that runs until interrupted (consume
 * following, tail, stats) cleanly: the flag is set and the query in
 * progress (a long poll) is cancelled, and the command then commits what
 * it printed and leaves its group.
 */
void
cli_install_interrupt(PGconn *conn)
{
	struct sigaction sa;

	interrupt_cancel = PQgetCancel(conn);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = interrupt_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool
cli_result_ok(PGresult *res)
{
	ExecStatusType st = PQresultStatus(res);

	return st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
}

/* The server's primary message, or libpq's (a lost connection). */
const char *
cli_result_message(PGconn *conn, PGresult *res)
{
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	if (msg == NULL && res)
		msg = PQresultErrorMessage(res);
	if (msg == NULL || *msg == '\0')
		msg = PQerrorMessage(conn);
	if (msg == NULL || *msg == '\0')
		msg = "unknown error";
	return one_line(msg);
}

void
cli_fail_result(PGconn *conn, PGresult *res)
{
	cli_error("%s", cli_result_message(conn, res));
}

/* A query with text parameters and text results; NULL values are NULL. */
PGresult *
cli_query(PGconn *conn, const char *sql, int nparams, const char *const *values)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, values, NULL, NULL, 0);

	if (!cli_result_ok(res))
		cli_fail_result(conn, res);
	return res;
}

/* The same with binary parameters or given types; the caller checks. */
PGresult *
cli_query_params(PGconn *conn, const char *sql, int nparams,
				 const char *const *values, const int *lengths,
				 const int *formats, const unsigned int *types)
{
	return PQexecParams(conn, sql, nparams, types, values, lengths, formats, 0);
}

void
cli_begin(PGconn *conn)
{
	PQclear(cli_query(conn, "BEGIN", 0, NULL));
}

void
cli_commit(PGconn *conn)
{
	PQclear(cli_query(conn, "COMMIT", 0, NULL));
}

/* The topic's partition count; an unknown topic is an error. */
int
cli_topic_partitions(PGconn *conn, const char *topic)
{
	PGresult   *res = cli_query(conn,
								"SELECT t.partitions FROM eventlog.topic_catalog t"
								" WHERE t.name OPERATOR(pg_catalog.=) $1", 1, &topic);
	int			n;

	if (PQntuples(res) == 0)
		cli_error("topic \"%s\" does not exist", topic);
	n = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return n;
}
