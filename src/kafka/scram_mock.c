/*-------------------------------------------------------------------------
 *
 * scram_mock.c
 *	  The secret behind SCRAM's made-up salts (scram.c): what an unknown
 *	  user is answered must be the same from every gateway of a database
 *	  and across restarts, or comparing two answers tells real roles from
 *	  made-up names.
 *
 * The secret is the database's: 32 random bytes drawn by CREATE EXTENSION
 * (or the update to 0.3.0) into eventlog.kafka_scram_mock_secret, a table
 * PUBLIC may not read; the administrator grants SELECT on it to the
 * gateway's role, beside EXECUTE on kafka_scram_verifier.  PostgreSQL does
 * the same for its own logins with a nonce kept in pg_control.  A standby
 * has the same row; a restore from pg_dump draws a new one (the table is
 * not dumped), which changes the made-up salts once, as a new cluster
 * changes PostgreSQL's.
 *
 * Read once per process, by the first SCRAM exchange that can; until then
 * (not granted, an extension older than the table, the database down) a
 * secret of this process's own, drawn at random, with a warning at each
 * failed try.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "log.h"
#include "sasl.h"
#include "server.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#define K_KEY_LEN			32	/* a secret drawn here: SHA-256's size */
#define K_MOCK_SECRET_MIN	16
/* While the table cannot be read, another try at most this often. */
#define K_MOCK_RETRY_S		60

/*
 * The mock salts' secret: the database's once read (mock_shared), else
 * this process's own (mock_own, drawn at the first need).  Under
 * mock_mutex.
 */
static pthread_mutex_t mock_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint8_t mock_secret[K_MOCK_SECRET_MAX];
static size_t mock_secret_len;
static bool mock_shared;
static bool mock_own;
static time_t mock_next_try;

static time_t
monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Reads eventlog.kafka_scram_mock_secret on the connection's (--dsn)
 * session into out; its length, or 0 (logged) if it cannot.  The
 * privilege is checked first, so a gateway not granted it does not fill
 * PostgreSQL's log with an error at every login.
 */
static size_t
read_mock_secret(KConn *conn, uint8_t *out)
{
	char		sqlstate[6];
	PGresult   *res;
	const char *hex;
	size_t		n = 0;
	const char *why = NULL;

	res = kpg_exec(conn, "SELECT pg_catalog.has_table_privilege(c.oid, 'SELECT') "
				   "FROM pg_catalog.to_regclass('eventlog.kafka_scram_mock_secret') AS c(oid)",
				   0, NULL, sqlstate);
	if (res == NULL)
		why = "the database cannot be asked";
	else if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
		why = "the table does not exist (update the extension: ALTER EXTENSION pg_eventlog UPDATE)";
	else if (strcmp(PQgetvalue(res, 0, 0), "t") != 0)
		why = "the --dsn role may not read it: GRANT SELECT ON eventlog.kafka_scram_mock_secret TO the gateway's role";
	PQclear(res);
	if (why == NULL)
	{
		res = kpg_exec(conn, "SELECT pg_catalog.encode(secret, 'hex') FROM eventlog.kafka_scram_mock_secret",
					   0, NULL, sqlstate);
		if (res == NULL || PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
			why = "it has no secret";
		else
		{
			hex = PQgetvalue(res, 0, 0);
			if (strlen(hex) % 2 != 0 || strlen(hex) / 2 < K_MOCK_SECRET_MIN ||
				strlen(hex) / 2 > K_MOCK_SECRET_MAX)
				why = "its secret is not 16 to 64 bytes";
			else
			{
				n = strlen(hex) / 2;
				for (size_t i = 0; i < n; i++)
				{
					int			hi = hex_value(hex[2 * i]);
					int			lo = hex_value(hex[2 * i + 1]);

					if (hi < 0 || lo < 0)
					{
						why = "its secret is not bytea";
						n = 0;
						break;
					}
					out[i] = (uint8_t) (hi << 4 | lo);
				}
			}
			OPENSSL_cleanse((char *) hex, strlen(hex));
		}
		PQclear(res);
	}
	if (why != NULL)
	{
		OPENSSL_cleanse(out, K_MOCK_SECRET_MAX);
		klog(KLOG_WARNING, "cannot read eventlog.kafka_scram_mock_secret: %s; until it can, unknown SCRAM users get salts of this gateway process's own, which tell them apart from real roles to a client that compares gateways or restarts",
			 why);
		return 0;
	}
	return n;
}

/*
 * Asks the database while it has not answered, at most every
 * K_MOCK_RETRY_S seconds: the same work whatever the user name, so it
 * tells nothing about it.
 */
size_t
kscram_mock_key(KConn *conn, uint8_t *key)
{
	size_t		n = 0;
	bool		ask = false;

	pthread_mutex_lock(&mock_mutex);
	if (!mock_shared && monotonic_seconds() >= mock_next_try)
	{
		mock_next_try = monotonic_seconds() + K_MOCK_RETRY_S;
		ask = true;
	}
	pthread_mutex_unlock(&mock_mutex);
	if (ask)
	{
		uint8_t		got[K_MOCK_SECRET_MAX];
		size_t		len = read_mock_secret(conn, got);

		if (len > 0)
		{
			pthread_mutex_lock(&mock_mutex);
			if (!mock_shared)
			{
				memcpy(mock_secret, got, len);
				mock_secret_len = len;
				mock_shared = true;
				klog(KLOG_INFO, "SCRAM: unknown users get salts from the database's secret (eventlog.kafka_scram_mock_secret)");
			}
			pthread_mutex_unlock(&mock_mutex);
			OPENSSL_cleanse(got, sizeof(got));
		}
	}
	pthread_mutex_lock(&mock_mutex);
	if (!mock_shared && !mock_own && RAND_bytes(mock_secret, K_KEY_LEN) == 1)
	{
		mock_secret_len = K_KEY_LEN;
		mock_own = true;
	}
	if (mock_shared || mock_own)
	{
		memcpy(key, mock_secret, mock_secret_len);
		n = mock_secret_len;
	}
	pthread_mutex_unlock(&mock_mutex);
	return n;
}

