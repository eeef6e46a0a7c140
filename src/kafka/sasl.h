/*-------------------------------------------------------------------------
 *
 * sasl.h
 *	  The SASL mechanisms behind SaslHandshake and SaslAuthenticate
 *	  (sasl.c): each takes the client's tokens one at a time and answers
 *	  with the next server token, until it succeeds or fails.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_SASL_H
#define KAFKA_SASL_H

#include <stddef.h>
#include <stdint.h>

#include "server.h"

/* The longest token a client may send before it authenticated. */
#define K_MAX_SASL_TOKEN_BYTES	8192

typedef enum KSaslStep
{
	KSASL_CONTINUE,				/* answer with the token, await the next */
	KSASL_DONE,					/* authenticated: answer with the token */
	KSASL_FAIL					/* failed (the reason is logged) */
} KSaslStep;

typedef struct KScram KScram;

/*
 * SCRAM-SHA-256 (scram.c).  kscram_step takes the client's next message
 * and sets *out (malloc'ed, *outlen bytes) to the answer; on KSASL_DONE
 * the connection's session runs as the authenticated role.  *why is set
 * to a reason for the log on KSASL_FAIL (never a secret).
 */
extern KScram *kscram_new(void);
extern void kscram_free(KScram *s);
extern KSaslStep kscram_step(KConn *conn, KScram *s, const uint8_t *in, int32_t len,
							 char **out, size_t *outlen, const char **why);
/* The user name the exchange is about ("" before the first message). */
extern const char *kscram_user(const KScram *s);

/*
 * The key of the made-up salts of unknown users (scram_mock.c), the same
 * on every gateway of the database once it could be read: its length in
 * key (room for K_MOCK_SECRET_MAX bytes), 0 if there is none at all.
 */
#define K_MOCK_SECRET_MAX	64	/* the table's CHECK allows 16 to 64 bytes */
extern size_t kscram_mock_key(KConn *conn, uint8_t *key);

#endif							/* KAFKA_SASL_H */
