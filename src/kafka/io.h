/*-------------------------------------------------------------------------
 *
 * io.h
 *	  The one layer every byte to and from a client goes through: plain TCP,
 *	  or TLS (OpenSSL) when the gateway has --tls-cert and --tls-key.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_IO_H
#define KAFKA_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct KConn;

/*
 * Loads the certificate, key and (optionally) CA of --tls-*, once, before
 * any connection; false (logged) if they cannot be used.  Nothing to do
 * without --tls-cert.
 */
extern bool kio_setup(void);

/*
 * Starts a connection: the TLS handshake if TLS is on, within
 * K_HANDSHAKE_TIMEOUT_S seconds.  False (logged) if it failed: close.
 */
extern bool kio_start(struct KConn *conn);

/*
 * Up to n bytes: >0 bytes read, 0 at the end of the stream, -1 on error;
 * through a receive buffer, so that a small frame comes in one system call.
 */
extern ssize_t kio_recv(struct KConn *conn, void *buf, size_t n);

/*
 * Whether bytes of the client are already received and not read yet
 * (kio_recv's buffer, or TLS's decrypted ones): reading them cannot wait.
 */
extern bool kio_buffered(struct KConn *conn);

/* All n bytes, or false. */
extern bool kio_send(struct KConn *conn, const void *buf, size_t n);

/* A whole frame has arrived and waits to be read: its size and API key. */
extern bool kio_frame_pending(struct KConn *conn, int32_t *size, int16_t *api_key);

/*
 * Ends TLS on a connection, sends the end of the stream after the
 * responses written and waits (2 s at most) for the client to close, so
 * that closing never cuts a response (its socket is closed by the
 * registry).
 */
extern void kio_end(struct KConn *conn);

/*
 * A receive timeout on the client's socket (0: none), for the phases
 * before a client authenticated: a client that says nothing is not kept.
 */
extern void kio_set_timeout(struct KConn *conn, int seconds);

/*
 * The same in milliseconds, for --idle-timeout once a client may send
 * requests: a recv or send that makes no progress for that long fails
 * with EAGAIN.
 */
extern void kio_set_timeout_ms(struct KConn *conn, int64_t ms);

#endif							/* KAFKA_IO_H */
