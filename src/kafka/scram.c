/*-------------------------------------------------------------------------
 *
 * scram.c
 *	  SASL SCRAM-SHA-256 (RFC 5802, RFC 7677), the server's side, as Kafka
 *	  speaks it (KIP-84): the gateway checks the client's proof against the
 *	  role's SCRAM verifier from pg_authid, without ever learning the
 *	  password, and the connection's session then runs as that role.
 *
 * The verifier ("SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>",
 * what PostgreSQL keeps for password_encryption = scram-sha-256) comes from
 * eventlog.kafka_scram_verifier(role), a SECURITY DEFINER function only
 * roles granted it may call; it answers NULL for a role that does not
 * exist, may not log in, has expired (rolvaliduntil), has no SCRAM
 * verifier, or that the caller may not SET ROLE to.  The salt and
 * iteration count sent to the client are the verifier's, so the client's
 * proof is the one PostgreSQL itself would accept.
 *
 * No user enumeration: for a NULL verifier the exchange goes on with a
 * made-up salt and 4096 iterations, and fails at the proof like a wrong
 * password, with the same message, after the same work.  The salt is an
 * HMAC-SHA-256 of the user name under the database's secret, 32 random
 * bytes drawn when the extension was created, in the table
 * eventlog.kafka_scram_mock_secret that only its owner and the roles it is
 * granted to (the gateway's) may read: so every gateway of the database,
 * before and after restarts, gives an unknown user the same salt and
 * count, as a real role always gets its own (PostgreSQL's mock salt is
 * stable the same way, from a nonce in pg_control).  Until the gateway can
 * read the table (not granted, an older extension, the database down) it
 * uses a secret of its own process, drawn at random, and says so.
 * Comparisons of secrets are constant-time (CRYPTO_memcmp); nonces come
 * from OpenSSL's CSPRNG (RAND_bytes), 18 bytes each.
 *
 * Messages are checked strictly, in order: the client-first message
 * (gs2 header without channel binding, "n=user,r=nonce", no extensions),
 * then the client-final message, whose channel binding must repeat the
 * gs2 header and whose nonce must be the combined one.  Anything else,
 * out of order, or after the end fails the exchange.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "log.h"
#include "sasl.h"
#include "server.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#define K_KEY_LEN			32	/* SHA-256 */
#define K_NONCE_BYTES		18	/* 24 base64 characters */
#define K_MAX_SALT_BYTES	256
#define K_MAX_NONCE_CHARS	256
#define K_MOCK_SALT_BYTES	16	/* PostgreSQL's salt length */
#define K_MOCK_ITERATIONS	4096	/* PostgreSQL's default */

typedef enum
{
	SCRAM_CLIENT_FIRST,
	SCRAM_CLIENT_FINAL,
	SCRAM_ENDED
} ScramState;

struct KScram
{
	ScramState	state;
	char		user[64];
	bool		real;			/* a verifier was found */
	int			iterations;
	uint8_t		salt[K_MAX_SALT_BYTES];
	int			salt_len;
	uint8_t		stored_key[K_KEY_LEN];
	uint8_t		server_key[K_KEY_LEN];
	char	   *gs2_header;		/* "n,," */
	char	   *client_first_bare;
	char	   *server_first;
	char	   *nonce;			/* the client's and ours */
	size_t		cnonce_len;		/* the client's part of it */
};

KScram *
kscram_new(void)
{
	return calloc(1, sizeof(KScram));
}

void
kscram_free(KScram *s)
{
	if (s == NULL)
		return;
	free(s->gs2_header);
	free(s->client_first_bare);
	free(s->server_first);
	free(s->nonce);
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}

const char *
kscram_user(const KScram *s)
{
	return s ? s->user : "";
}

/* Standard base64 with padding; out has room for 4 * ((n + 2) / 3) + 1. */
static void
b64_encode(const uint8_t *in, size_t n, char *out)
{
	EVP_EncodeBlock((unsigned char *) out, in, (int) n);
}

static int
b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Strict base64 (padded, nothing else): the number of bytes decoded into
 * out (at most outsize), or -1.
 */
static int
b64_decode(const char *in, size_t n, uint8_t *out, size_t outsize)
{
	size_t		o = 0;

	if (n == 0 || n % 4 != 0)
		return -1;
	for (size_t i = 0; i < n; i += 4)
	{
		int			v[4];
		int			pad = 0;

		for (int k = 0; k < 4; k++)
		{
			if (in[i + k] == '=' && i + 4 == n && k >= 2)
			{
				v[k] = 0;
				pad++;
			}
			else if (pad > 0 || (v[k] = b64_value(in[i + k])) < 0)
				return -1;
		}
		if (o + 3 - (size_t) pad > outsize)
			return -1;
		out[o++] = (uint8_t) ((v[0] << 2) | (v[1] >> 4));
		if (pad < 2)
			out[o++] = (uint8_t) (((v[1] & 15) << 4) | (v[2] >> 2));
		if (pad < 1)
			out[o++] = (uint8_t) (((v[2] & 3) << 6) | v[3]);
	}
	return (int) o;
}

static bool
hmac_sha256(const uint8_t *key, size_t keylen, const void *msg, size_t msglen,
			uint8_t out[K_KEY_LEN])
{
	unsigned int len = K_KEY_LEN;

	return HMAC(EVP_sha256(), key, (int) keylen, msg, msglen, out, &len) != NULL &&
		len == K_KEY_LEN;
}

/*
 * A saslname (RFC 5802: "," as "=2C", "=" as "=3D") into out; false if
 * malformed or not an acceptable role name.
 */
static bool
decode_saslname(const char *p, size_t n, char *out, size_t outsize)
{
	size_t		o = 0;

	for (size_t i = 0; i < n; i++)
	{
		char		c = p[i];

		if (c == ',')
			return false;
		if (c == '=')
		{
			if (i + 2 < n && p[i + 1] == '2' && p[i + 2] == 'C')
				c = ',';
			else if (i + 2 < n && p[i + 1] == '3' && p[i + 2] == 'D')
				c = '=';
			else
				return false;
			i += 2;
		}
		if ((unsigned char) c < 0x20 || c == 0x7f || o + 1 >= outsize)
			return false;
		out[o++] = c;
	}
	out[o] = '\0';
	return o > 0;
}

/*
 * The role's verifier, or a mock one.  An error asking for it (the --dsn
 * role lacks EXECUTE, an old extension) is logged for the operator and
 * fails the exchange at its end like a wrong password.
 */
static void
load_verifier(KConn *conn, KScram *s)
{
	const char *params[1] = {s->user};
	char		sqlstate[6];
	PGresult   *res;
	const char *v = NULL;
	uint8_t		key[K_MOCK_SECRET_MAX];
	size_t		keylen;

	s->real = false;
	keylen = kscram_mock_key(conn, key);
	res = kpg_exec(conn, "SELECT eventlog.kafka_scram_verifier($1)", 1, params, sqlstate);
	if (res == NULL)
		klog(KLOG_WARNING, "conn %llu (%s): cannot look up SCRAM verifiers (SQLSTATE %s): the --dsn role needs EXECUTE on eventlog.kafka_scram_verifier(text)",
			 (unsigned long long) conn->id, conn->peer, sqlstate[0] ? sqlstate : "none");
	else if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		v = PQgetvalue(res, 0, 0);

	if (v != NULL && strncmp(v, "SCRAM-SHA-256$", 14) == 0)
	{
		const char *iter = v + 14;
		const char *colon = strchr(iter, ':');
		const char *dollar = colon ? strchr(colon, '$') : NULL;
		const char *colon2 = dollar ? strchr(dollar, ':') : NULL;
		char	   *end;
		long		it;

		if (colon2 != NULL)
		{
			it = strtol(iter, &end, 10);
			s->salt_len = b64_decode(colon + 1, (size_t) (dollar - colon - 1), s->salt, sizeof(s->salt));
			if (end == colon && it > 0 && it <= INT_MAX && s->salt_len > 0 &&
				b64_decode(dollar + 1, (size_t) (colon2 - dollar - 1), s->stored_key, K_KEY_LEN) == K_KEY_LEN &&
				b64_decode(colon2 + 1, strlen(colon2 + 1), s->server_key, K_KEY_LEN) == K_KEY_LEN)
			{
				s->iterations = (int) it;
				s->real = true;
			}
		}
		if (!s->real)
			klog(KLOG_WARNING, "conn %llu (%s): the SCRAM verifier of a role is malformed",
				 (unsigned long long) conn->id, conn->peer);
	}
	if (v != NULL)
		OPENSSL_cleanse((char *) v, strlen(v));
	PQclear(res);

	if (!s->real)
	{
		uint8_t		h[K_KEY_LEN];

		/* Without a secret, a random salt: never one anyone can compute. */
		if (keylen == 0 || !hmac_sha256(key, keylen, s->user, strlen(s->user), h))
			(void) RAND_bytes(h, sizeof(h));
		memcpy(s->salt, h, K_MOCK_SALT_BYTES);
		s->salt_len = K_MOCK_SALT_BYTES;
		s->iterations = K_MOCK_ITERATIONS;
		/* Keys nobody can match; the proof is checked all the same. */
		if (RAND_bytes(s->stored_key, K_KEY_LEN) != 1 || RAND_bytes(s->server_key, K_KEY_LEN) != 1)
			memset(s->stored_key, 0, K_KEY_LEN);
	}
	OPENSSL_cleanse(key, sizeof(key));
}

/* client-first-message = gs2-header client-first-message-bare */
static KSaslStep
client_first(KConn *conn, KScram *s, const char *msg, size_t len, char **out,
			 size_t *outlen, const char **why)
{
	const char *p = msg;
	const char *end = msg + len;
	const char *bare;
	const char *comma;
	const char *nonce;
	size_t		nonce_len;
	char		authzid[64] = "";
	uint8_t		rnd[K_NONCE_BYTES];
	char		rnd64[4 * ((K_NONCE_BYTES + 2) / 3) + 1];
	char		salt64[4 * ((K_MAX_SALT_BYTES + 2) / 3) + 1];
	size_t		n;

	/* gs2-cbind-flag: "n" or "y"; "p=" asks for channel binding we lack. */
	if (len < 3 || (p[0] != 'n' && p[0] != 'y') || p[1] != ',')
	{
		*why = p[0] == 'p' ? "channel binding is not supported" : "malformed client-first message";
		return KSASL_FAIL;
	}
	p += 2;
	/* [ "a=" saslname ] "," */
	comma = memchr(p, ',', (size_t) (end - p));
	if (comma == NULL)
	{
		*why = "malformed client-first message";
		return KSASL_FAIL;
	}
	if (comma > p)
	{
		if (comma - p < 3 || p[0] != 'a' || p[1] != '=' ||
			!decode_saslname(p + 2, (size_t) (comma - p - 2), authzid, sizeof(authzid)))
		{
			*why = "malformed authorization id";
			return KSASL_FAIL;
		}
	}
	bare = comma + 1;
	/* client-first-message-bare: "n=" saslname ",r=" nonce, nothing more */
	p = bare;
	if (end - p < 2 || p[0] != 'n' || p[1] != '=')
	{
		*why = "malformed client-first message (a mandatory extension, or no user name)";
		return KSASL_FAIL;
	}
	comma = memchr(p, ',', (size_t) (end - p));
	if (comma == NULL ||
		!decode_saslname(p + 2, (size_t) (comma - p - 2), s->user, sizeof(s->user)))
	{
		s->user[0] = '\0';
		*why = "malformed or unacceptable user name";
		return KSASL_FAIL;
	}
	if (strlen(s->user) > 63)
	{
		*why = "the user name is longer than 63 bytes";
		return KSASL_FAIL;
	}
	if (authzid[0] != '\0' && strcmp(authzid, s->user) != 0)
	{
		*why = "the authorization id differs from the user name";
		return KSASL_FAIL;
	}
	p = comma + 1;
	if (end - p < 3 || p[0] != 'r' || p[1] != '=')
	{
		*why = "malformed client-first message (no nonce)";
		return KSASL_FAIL;
	}
	nonce = p + 2;
	nonce_len = (size_t) (end - nonce);
	if (memchr(nonce, ',', nonce_len) != NULL)
	{
		*why = "extensions in the client-first message are not supported";
		return KSASL_FAIL;
	}
	if (nonce_len == 0 || nonce_len > K_MAX_NONCE_CHARS)
	{
		*why = "the client's nonce is empty or too long";
		return KSASL_FAIL;
	}
	for (size_t i = 0; i < nonce_len; i++)
	{
		if (nonce[i] < 0x21 || nonce[i] > 0x7e)
		{
			*why = "the client's nonce has characters other than printable ASCII";
			return KSASL_FAIL;
		}
	}
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
	{
		*why = "no random bytes for a nonce";
		return KSASL_FAIL;
	}
	load_verifier(conn, s);

	/*
	 * The lookup's session (the --dsn role's) is not kept while the client
	 * takes its time to answer: unauthenticated clients must not hold
	 * PostgreSQL connections.  Success opens a fresh one anyway.
	 */
	kpg_close(conn);

	b64_encode(rnd, sizeof(rnd), rnd64);
	b64_encode(s->salt, (size_t) s->salt_len, salt64);
	s->gs2_header = strndup(msg, (size_t) (bare - msg));
	s->client_first_bare = strndup(bare, (size_t) (end - bare));
	n = nonce_len + strlen(rnd64) + 1;
	s->nonce = malloc(n);
	if (s->nonce)
		snprintf(s->nonce, n, "%.*s%s", (int) nonce_len, nonce, rnd64);
	s->cnonce_len = nonce_len;
	n = strlen(s->nonce ? s->nonce : "") + strlen(salt64) + 32;
	s->server_first = malloc(n);
	if (s->gs2_header == NULL || s->client_first_bare == NULL || s->nonce == NULL ||
		s->server_first == NULL)
	{
		*why = "out of memory";
		return KSASL_FAIL;
	}
	snprintf(s->server_first, n, "r=%s,s=%s,i=%d", s->nonce, salt64, s->iterations);
	*out = strdup(s->server_first);
	if (*out == NULL)
	{
		*why = "out of memory";
		return KSASL_FAIL;
	}
	*outlen = strlen(*out);
	s->state = SCRAM_CLIENT_FINAL;
	return KSASL_CONTINUE;
}

/* client-final-message = "c=" cbind ",r=" nonce ",p=" proof */
static KSaslStep
client_final(KConn *conn, KScram *s, const char *msg, size_t len, char **out,
			 size_t *outlen, const char **why)
{
	const char *end = msg + len;
	const char *proof64 = NULL;
	char		cbind[4 * ((64 + 2) / 3) + 1];
	size_t		cbind_len;
	size_t		nonce_len = strlen(s->nonce);
	size_t		without_proof;
	const char *r;
	size_t		r_len;
	uint8_t		proof[K_KEY_LEN];
	uint8_t		sig[K_KEY_LEN];
	uint8_t		key[K_KEY_LEN];
	uint8_t		h[K_KEY_LEN];
	char	   *auth = NULL;
	size_t		auth_len;
	bool		ok;
	char		v64[4 * ((K_KEY_LEN + 2) / 3) + 1];

	/* The proof is the last attribute. */
	for (const char *p = end - 1; p >= msg + 2; p--)
	{
		if (p[0] == '=' && p[-1] == 'p' && p - 2 >= msg && p[-2] == ',')
		{
			proof64 = p + 1;
			break;
		}
	}
	if (proof64 == NULL)
	{
		*why = "malformed client-final message (no proof)";
		return KSASL_FAIL;
	}
	without_proof = (size_t) (proof64 - 3 - msg);

	/* c= must repeat the gs2 header (no channel binding data). */
	if (strlen(s->gs2_header) > 64)
	{
		*why = "the gs2 header is too long";
		return KSASL_FAIL;
	}
	b64_encode((const uint8_t *) s->gs2_header, strlen(s->gs2_header), cbind);
	cbind_len = strlen(cbind);
	if (without_proof < 2 + cbind_len + 3 ||
		memcmp(msg, "c=", 2) != 0 || memcmp(msg + 2, cbind, cbind_len) != 0 ||
		memcmp(msg + 2 + cbind_len, ",r=", 3) != 0)
	{
		*why = "the client-final message's channel binding is not the gs2 header";
		return KSASL_FAIL;
	}

	/*
	 * The nonce is the server-first message's, and nothing follows it (no
	 * extensions).  librdkafka (up to 2.x at least) sends the client's
	 * nonce twice, "r=" cnonce cnonce snonce, which Kafka's broker accepts
	 * (it checks that the nonce ends with its own): accept that form too,
	 * no other.  The proof covers this message as sent either way.
	 */
	r = msg + 2 + cbind_len + 3;
	r_len = without_proof - (2 + cbind_len + 3);
	if (!(r_len == nonce_len && memcmp(r, s->nonce, nonce_len) == 0) &&
		!(r_len == s->cnonce_len + nonce_len && memcmp(r, s->nonce, s->cnonce_len) == 0 &&
		  memcmp(r + s->cnonce_len, s->nonce, nonce_len) == 0))
	{
		*why = "the client-final message's nonce is not the exchange's, or extensions follow it";
		return KSASL_FAIL;
	}
	if (b64_decode(proof64, (size_t) (end - proof64), proof, sizeof(proof)) != K_KEY_LEN)
	{
		*why = "malformed proof";
		return KSASL_FAIL;
	}

	/* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
	auth_len = strlen(s->client_first_bare) + 1 + strlen(s->server_first) + 1 + without_proof;
	auth = malloc(auth_len + 1);
	if (auth == NULL)
	{
		*why = "out of memory";
		return KSASL_FAIL;
	}
	snprintf(auth, auth_len + 1, "%s,%s,%.*s", s->client_first_bare, s->server_first,
			 (int) without_proof, msg);

	/*
	 * ClientKey = proof XOR HMAC(StoredKey, AuthMessage); the client knows
	 * the password if H(ClientKey) is StoredKey.
	 */
	ok = hmac_sha256(s->stored_key, K_KEY_LEN, auth, auth_len, sig);
	for (int i = 0; i < K_KEY_LEN; i++)
		key[i] = proof[i] ^ sig[i];
	ok = ok && SHA256(key, K_KEY_LEN, h) != NULL;
	ok = (CRYPTO_memcmp(h, s->stored_key, K_KEY_LEN) == 0) & ok & s->real;
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(h, sizeof(h));
	if (!ok)
	{
		free(auth);
		*why = s->real ? "wrong password" : "no such role, or it may not log in or be used (kafka_scram_verifier gave none)";
		return KSASL_FAIL;
	}
	ok = hmac_sha256(s->server_key, K_KEY_LEN, auth, auth_len, sig);
	free(auth);
	if (!ok)
	{
		*why = "cannot compute the server signature";
		return KSASL_FAIL;
	}

	/* The session becomes the role: a fresh one, with SET ROLE (pg.c). */
	kpg_close(conn);
	conn->pg_role = strdup(s->user);
	if (conn->pg_role == NULL || !kpg_connect(conn))
	{
		*why = "the PostgreSQL session cannot take the role (see above)";
		return KSASL_FAIL;
	}
	b64_encode(sig, K_KEY_LEN, v64);
	*outlen = 2 + strlen(v64);
	*out = malloc(*outlen + 1);
	if (*out == NULL)
	{
		*why = "out of memory";
		return KSASL_FAIL;
	}
	snprintf(*out, *outlen + 1, "v=%s", v64);
	return KSASL_DONE;
}

KSaslStep
kscram_step(KConn *conn, KScram *s, const uint8_t *in, int32_t len, char **out,
			size_t *outlen, const char **why)
{
	char	   *msg;
	KSaslStep	st;

	*out = NULL;
	*outlen = 0;
	if (s->state == SCRAM_ENDED)
	{
		*why = "a message after the exchange ended";
		return KSASL_FAIL;
	}
	/* Every SCRAM message is text without NUL; a copy with a terminator. */
	if (len <= 0 || memchr(in, '\0', (size_t) len) != NULL)
	{
		s->state = SCRAM_ENDED;
		*why = "an empty message or one with a NUL byte";
		return KSASL_FAIL;
	}
	msg = strndup((const char *) in, (size_t) len);
	if (msg == NULL)
	{
		*why = "out of memory";
		return KSASL_FAIL;
	}
	if (s->state == SCRAM_CLIENT_FIRST)
		st = client_first(conn, s, msg, (size_t) len, out, outlen, why);
	else
		st = client_final(conn, s, msg, (size_t) len, out, outlen, why);
	free(msg);
	if (st != KSASL_CONTINUE)
		s->state = SCRAM_ENDED;
	return st;
}
