/*-------------------------------------------------------------------------
 *
 * sasl.c
 *	  SASL authentication (--sasl): SaslHandshake (key 17, v0-1) and
 *	  SaslAuthenticate (key 36, v0-2), the bare tokens that follow a
 *	  SaslHandshake v0 (KIP-43, what kafka-python sends), the gate that
 *	  serves nothing else before a client authenticated, and PLAIN.
 *	  SCRAM-SHA-256 is in scram.c.
 *
 * The states of a connection with --sasl:
 *
 *	 start ──SaslHandshake(mechanism)──► exchange ──tokens──► authenticated
 *	   │ ApiVersions                        │ SaslAuthenticate (after v1)
 *	   │                                    │ bare frames (after v0)
 *	 anything else: closed               failure: SASL_AUTHENTICATION_FAILED
 *										 (v1) or nothing (v0), then closed
 *
 * A connection authenticates once: a SaslHandshake or SaslAuthenticate
 * after it did is answered with ILLEGAL_SASL_STATE (as Kafka's broker
 * answers them without re-authentication, KIP-368) and changes nothing,
 * so a client can never become another role on the same connection.
 * Failures are slowed down for everyone: each waits K_FAILURE_DELAY_MS
 * holding one lock, so guessing passwords costs an attacker that time per
 * guess however many connections it opens, while successful logins never
 * wait.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "io.h"
#include "log.h"
#include "sasl.h"
#include "server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#define K_FAILURE_DELAY_MS		500
/* The longest PLAIN password: PostgreSQL's password packet limit. */
#define K_MAX_PASSWORD_BYTES	1000
/* A role name: NAMEDATALEN - 1 (PostgreSQL would cut a longer one). */
#define K_MAX_ROLE_BYTES		63

typedef enum KMechanism
{
	KMECH_PLAIN,
	KMECH_SCRAM_SHA_256
} KMechanism;

typedef struct KSasl
{
	KMechanism	mechanism;
	bool		raw;			/* after SaslHandshake v0: bare tokens */
	KScram	   *scram;
} KSasl;

static pthread_mutex_t failure_mutex = PTHREAD_MUTEX_INITIALIZER;

static const char *
mechanism_name(KMechanism m)
{
	return m == KMECH_PLAIN ? "PLAIN" : "SCRAM-SHA-256";
}

bool
ksasl_allows(KConn *conn, int16_t api_key)
{
	if (conn->authenticated)
		return true;
	if (conn->sasl == NULL)
		return api_key == KAPI_API_VERSIONS || api_key == KAPI_SASL_HANDSHAKE;
	return api_key == KAPI_SASL_AUTHENTICATE && !conn->sasl->raw;
}

bool
ksasl_raw_pending(KConn *conn)
{
	return !conn->authenticated && conn->sasl != NULL && conn->sasl->raw;
}

static void
forget_credentials(KConn *conn)
{
	if (conn->pg_password)
	{
		OPENSSL_cleanse(conn->pg_password, strlen(conn->pg_password));
		free(conn->pg_password);
	}
	free(conn->pg_user);
	free(conn->pg_role);
	conn->pg_password = conn->pg_user = conn->pg_role = NULL;
}

void
ksasl_end(KConn *conn)
{
	if (conn->sasl)
	{
		kscram_free(conn->sasl->scram);
		free(conn->sasl);
		conn->sasl = NULL;
	}
	forget_credentials(conn);
}

/* One failure: logged, then slowed down (see the file's comment). */
static void
failed(KConn *conn, const char *user, const char *why)
{
	char		u[80];

	klog(KLOG_WARNING, "conn %llu (%s): SASL %s authentication failed for user \"%s\": %s",
		 (unsigned long long) conn->id, conn->peer, mechanism_name(conn->sasl->mechanism),
		 klog_printable(user, (int) strlen(user), u, sizeof(u)), why);
	forget_credentials(conn);
	kpg_close(conn);
	pthread_mutex_lock(&failure_mutex);
	if (!kshutting_down())
		usleep(K_FAILURE_DELAY_MS * 1000);
	pthread_mutex_unlock(&failure_mutex);
}

static void
succeeded(KConn *conn, const char *user)
{
	char		u[80];

	conn->authenticated = true;
	kregistry_lock();
	conn->auth_deadline = 0;
	kregistry_unlock();
	kio_set_timeout(conn, 0);
	klog(KLOG_INFO, "conn %llu (%s): authenticated as \"%s\" with SASL %s",
		 (unsigned long long) conn->id, conn->peer,
		 klog_printable(user, (int) strlen(user), u, sizeof(u)),
		 mechanism_name(conn->sasl->mechanism));
}

/* A role name from a client: 1 to 63 bytes, no control characters. */
static bool
acceptable_role_name(const uint8_t *p, size_t len)
{
	if (len == 0 || len > K_MAX_ROLE_BYTES)
		return false;
	for (size_t i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return false;
	return true;
}

/*
 * PLAIN (RFC 4616): authzid NUL authcid NUL password.  The password is
 * PostgreSQL's to check: the session logs in as that user with it, and
 * pg_hba.conf applies in full (pg.c refuses a login that did not ask for
 * the password).
 */
static KSaslStep
plain_step(KConn *conn, const uint8_t *in, int32_t len, const char **why, char *user,
		   size_t usersize)
{
	const uint8_t *nul1 = len > 0 ? memchr(in, '\0', (size_t) len) : NULL;
	const uint8_t *nul2 = nul1 ? memchr(nul1 + 1, '\0', (size_t) (in + len - nul1 - 1)) : NULL;
	const uint8_t *authcid;
	size_t		authcid_len;
	size_t		authzid_len;
	size_t		pw_len;

	if (len == 0 || nul2 == NULL || memchr(nul2 + 1, '\0', (size_t) (in + len - nul2 - 1)) != NULL)
	{
		*why = "the PLAIN message is not authzid NUL authcid NUL password";
		return KSASL_FAIL;
	}
	authzid_len = (size_t) (nul1 - in);
	authcid = nul1 + 1;
	authcid_len = (size_t) (nul2 - authcid);
	pw_len = (size_t) (in + len - nul2 - 1);
	snprintf(user, usersize, "%.*s", (int) (authcid_len < usersize ? authcid_len : usersize - 1),
			 (const char *) authcid);
	if (!acceptable_role_name(authcid, authcid_len))
	{
		*why = "the user name is empty, longer than 63 bytes or has control characters";
		return KSASL_FAIL;
	}
	/* A client may act only as itself (Kafka's PLAIN server says the same). */
	if (authzid_len != 0 &&
		(authzid_len != authcid_len || memcmp(in, authcid, authcid_len) != 0))
	{
		*why = "the authorization id differs from the user name";
		return KSASL_FAIL;
	}
	/* An empty password would make libpq look for one elsewhere (PGPASSWORD, .pgpass). */
	if (pw_len == 0 || pw_len > K_MAX_PASSWORD_BYTES)
	{
		*why = "the password is empty or longer than 1000 bytes";
		return KSASL_FAIL;
	}
	kpg_close(conn);
	forget_credentials(conn);
	conn->pg_user = strndup((const char *) authcid, authcid_len);
	conn->pg_password = strndup((const char *) nul2 + 1, pw_len);
	if (conn->pg_user == NULL || conn->pg_password == NULL)
	{
		*why = "out of memory";
		return KSASL_FAIL;
	}
	if (!kpg_connect(conn))
	{
		*why = "PostgreSQL refused the login (see above)";
		return KSASL_FAIL;
	}
	return KSASL_DONE;
}

/*
 * The next token of the exchange: *out (malloc'ed or NULL for an empty
 * token) is the answer on KSASL_CONTINUE and KSASL_DONE.  A failure is
 * logged and delayed here.
 */
static KSaslStep
step(KConn *conn, const uint8_t *in, int32_t len, char **out, size_t *outlen)
{
	const char *why = "";
	char		user[K_MAX_ROLE_BYTES + 1] = "";
	KSaslStep	st;

	*out = NULL;
	*outlen = 0;
	if (len < 0 || len > K_MAX_SASL_TOKEN_BYTES)
	{
		why = "the token is null or too long";
		st = KSASL_FAIL;
	}
	else if (conn->sasl->mechanism == KMECH_PLAIN)
		st = plain_step(conn, in, len, &why, user, sizeof(user));
	else
	{
		st = kscram_step(conn, conn->sasl->scram, in, len, out, outlen, &why);
		snprintf(user, sizeof(user), "%s", kscram_user(conn->sasl->scram));
	}
	if (st == KSASL_FAIL)
	{
		free(*out);
		*out = NULL;
		*outlen = 0;
		failed(conn, user, why);
	}
	else if (st == KSASL_DONE)
		succeeded(conn, user);
	return st;
}

KHandlerResult
khandle_sasl_handshake(KConn *conn, KRequest *req, KWriter *w)
{
	KSlice		mechanism = kr_string(&req->body);
	KMechanism	m;
	bool		known;
	char		buf[64];

	if (!khandler_body_done(req))
		return KH_MALFORMED;
	if (!ksasl_enabled() || conn->authenticated)
	{
		/* Nothing changes: no second login on one connection (KIP-368). */
		klog(KLOG_WARNING, "conn %llu (%s): SaslHandshake %s: answering ILLEGAL_SASL_STATE",
			 (unsigned long long) conn->id, conn->peer,
			 ksasl_enabled() ? "after authentication" : "without --sasl");
		kw_int16(w, KERR_ILLEGAL_SASL_STATE);
		kw_array_len(w, 0);
		return KH_OK;
	}
	known = true;
	if (mechanism.len == 5 && memcmp(mechanism.ptr, "PLAIN", 5) == 0 && kconf.sasl_plain)
		m = KMECH_PLAIN;
	else if (mechanism.len == 13 && memcmp(mechanism.ptr, "SCRAM-SHA-256", 13) == 0 &&
			 kconf.sasl_scram)
		m = KMECH_SCRAM_SHA_256;
	else
	{
		known = false;
		m = KMECH_PLAIN;
	}
	kw_int16(w, known ? KERR_NONE : KERR_UNSUPPORTED_SASL_MECHANISM);
	kw_array_len(w, (int32_t) kconf.sasl_plain + (int32_t) kconf.sasl_scram);
	if (kconf.sasl_plain)
		kw_string(w, "PLAIN", 5);
	if (kconf.sasl_scram)
		kw_string(w, "SCRAM-SHA-256", 13);
	if (!known)
	{
		klog(KLOG_WARNING, "conn %llu (%s): SASL mechanism \"%s\" is not enabled (--sasl): closing",
			 (unsigned long long) conn->id, conn->peer,
			 klog_printable(mechanism.ptr, mechanism.len, buf, sizeof(buf)));
		conn->close_after_response = true;
		return KH_OK;
	}
	conn->sasl = calloc(1, sizeof(KSasl));
	if (conn->sasl == NULL ||
		(m == KMECH_SCRAM_SHA_256 && (conn->sasl->scram = kscram_new()) == NULL))
	{
		klog(KLOG_WARNING, "conn %llu (%s): out of memory for SASL: closing",
			 (unsigned long long) conn->id, conn->peer);
		return KH_CLOSE;
	}
	conn->sasl->mechanism = m;
	conn->sasl->raw = req->api_version == 0;
	return KH_OK;
}

KHandlerResult
khandle_sasl_authenticate(KConn *conn, KRequest *req, KWriter *w)
{
	bool		flex = req->flexible;
	KSlice		token = kr_bytes_v(&req->body, flex);
	char	   *out = NULL;
	size_t		outlen = 0;
	KSaslStep	st;

	kr_tags_v(&req->body, flex);
	if (!khandler_body_done(req))
		return KH_MALFORMED;
	if (conn->authenticated)
	{
		klog(KLOG_WARNING, "conn %llu (%s): SaslAuthenticate %s: answering ILLEGAL_SASL_STATE",
			 (unsigned long long) conn->id, conn->peer,
			 ksasl_enabled() ? "after authentication" : "without --sasl");
		kw_int16(w, KERR_ILLEGAL_SASL_STATE);
		kw_cstring_v(w, flex, "Authentication is not expected now.");
		kw_bytes_v(w, flex, "", 0);
		if (req->api_version >= 1)
			kw_int64(w, 0);
		kw_tags_v(w, flex);
		return KH_OK;
	}
	st = step(conn, token.ptr, token.len, &out, &outlen);
	if (st == KSASL_FAIL)
	{
		/* One message for every cause: nothing tells users apart. */
		kw_int16(w, KERR_SASL_AUTHENTICATION_FAILED);
		kw_cstring_v(w, flex, "Authentication failed: invalid user name or password");
		kw_bytes_v(w, flex, "", 0);
		conn->close_after_response = true;
	}
	else
	{
		kw_int16(w, KERR_NONE);
		kw_cstring_v(w, flex, NULL);
		kw_bytes_v(w, flex, out ? out : "", (int32_t) outlen);
	}
	/* session_lifetime_ms: 0, no re-authentication (KIP-368). */
	if (req->api_version >= 1)
		kw_int64(w, 0);
	kw_tags_v(w, flex);
	if (out)
	{
		OPENSSL_cleanse(out, outlen);
		free(out);
	}
	return KH_OK;
}

bool
ksasl_raw_token(KConn *conn, const uint8_t *token, int32_t len, KWriter *w)
{
	char	   *out = NULL;
	size_t		outlen = 0;
	KSaslStep	st = step(conn, token, len, &out, &outlen);

	/* Kafka's v0 exchange has no error: a failure just closes. */
	if (st == KSASL_FAIL)
		return false;
	kw_reset(w);
	kw_int32(w, (int32_t) outlen);
	if (outlen > 0)
		kw_raw(w, out, outlen);
	if (out)
	{
		OPENSSL_cleanse(out, outlen);
		free(out);
	}
	return !w->error;
}
