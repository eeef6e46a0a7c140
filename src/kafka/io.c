/*-------------------------------------------------------------------------
 *
 * io.c
 *	  The client connection's byte stream: plain TCP, or TLS with OpenSSL
 *	  (--tls-cert, --tls-key, and --tls-ca to require client
 *	  certificates).  conn.c reads and writes only through here, so every
 *	  byte of every API, SASL's included, is encrypted when TLS is on.
 *
 * TLS 1.2 is the oldest version accepted.  Each connection does its
 * handshake in its own thread, with a receive timeout: a client that
 * stalls or sends garbage (a plaintext Kafka request, random bytes) ends
 * its own connection and never holds another's.  Sockets stay blocking;
 * shutdown (main.c) shuts a socket down, which ends an SSL_read or
 * SSL_write in progress as it ends a recv or send.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "io.h"
#include "log.h"
#include "server.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/* A TLS handshake that takes longer is abandoned. */
#define K_HANDSHAKE_TIMEOUT_S	10

/*
 * The receive buffer (kio_recv): a read smaller than this asks the socket
 * for up to this much, so that a small request's size and body come in one
 * recv, not two (an idle consumer's Fetch: 3 system calls instead of 4).
 */
#define K_RBUF_BYTES			8192

/* What a closing connection waits for the client to end it (linger_close). */
#define K_LINGER_MS				2000
#define K_LINGER_BYTES			(4 * 1024 * 1024)

static SSL_CTX *tls_ctx;

/* OpenSSL's error queue of this thread, as one string, emptied. */
static const char *
tls_error(char *buf, size_t size)
{
	unsigned long e = ERR_get_error();

	if (e == 0)
		snprintf(buf, size, "%s", errno ? strerror(errno) : "connection closed");
	else
		ERR_error_string_n(e, buf, size);
	ERR_clear_error();
	return buf;
}

bool
kio_setup(void)
{
	char		err[256];

	if (kconf.tls_cert == NULL)
		return true;
	tls_ctx = SSL_CTX_new(TLS_server_method());
	if (tls_ctx == NULL ||
		!SSL_CTX_set_min_proto_version(tls_ctx, TLS1_2_VERSION))
	{
		klog(KLOG_ERROR, "cannot set up TLS: %s", tls_error(err, sizeof(err)));
		return false;
	}
	SSL_CTX_set_options(tls_ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
#ifdef SSL_OP_NO_RENEGOTIATION
	SSL_CTX_set_options(tls_ctx, SSL_OP_NO_RENEGOTIATION);
#endif
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	/* Most Kafka clients close without a close_notify: that is an end. */
	SSL_CTX_set_options(tls_ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	SSL_CTX_set_mode(tls_ctx, SSL_MODE_AUTO_RETRY);
	if (SSL_CTX_use_certificate_chain_file(tls_ctx, kconf.tls_cert) != 1)
	{
		klog(KLOG_ERROR, "cannot load the TLS certificate \"%s\" (--tls-cert): %s",
			 kconf.tls_cert, tls_error(err, sizeof(err)));
		return false;
	}
	if (SSL_CTX_use_PrivateKey_file(tls_ctx, kconf.tls_key, SSL_FILETYPE_PEM) != 1)
	{
		klog(KLOG_ERROR, "cannot load the TLS key \"%s\" (--tls-key): %s",
			 kconf.tls_key, tls_error(err, sizeof(err)));
		return false;
	}
	if (SSL_CTX_check_private_key(tls_ctx) != 1)
	{
		klog(KLOG_ERROR, "the TLS key \"%s\" does not match the certificate \"%s\": %s",
			 kconf.tls_key, kconf.tls_cert, tls_error(err, sizeof(err)));
		return false;
	}
	if (kconf.tls_ca != NULL)
	{
		STACK_OF(X509_NAME) *names;

		if (SSL_CTX_load_verify_locations(tls_ctx, kconf.tls_ca, NULL) != 1)
		{
			klog(KLOG_ERROR, "cannot load the CA certificates \"%s\" (--tls-ca): %s",
				 kconf.tls_ca, tls_error(err, sizeof(err)));
			return false;
		}
		names = SSL_load_client_CA_file(kconf.tls_ca);
		if (names != NULL)
			SSL_CTX_set_client_CA_list(tls_ctx, names);
		SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	return true;
}

void
kio_set_timeout(KConn *conn, int seconds)
{
	kio_set_timeout_ms(conn, (int64_t) seconds * 1000);
}

void
kio_set_timeout_ms(KConn *conn, int64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t) (ms / 1000);
	tv.tv_usec = (suseconds_t) (ms % 1000) * 1000;
	setsockopt(conn->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(conn->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

bool
kio_start(KConn *conn)
{
	char		err[256];
	int			rc;

	if (tls_ctx == NULL)
		return true;
	conn->ssl = SSL_new(tls_ctx);
	if (conn->ssl == NULL || SSL_set_fd(conn->ssl, conn->fd) != 1)
	{
		klog(KLOG_WARNING, "conn %llu (%s): cannot start TLS: %s: closing",
			 (unsigned long long) conn->id, conn->peer, tls_error(err, sizeof(err)));
		return false;
	}
	kio_set_timeout(conn, K_HANDSHAKE_TIMEOUT_S);
	ERR_clear_error();
	errno = 0;
	rc = SSL_accept(conn->ssl);
	if (rc != 1)
	{
		int			e = SSL_get_error(conn->ssl, rc);

		/* A receive timeout shows as "would block" on a blocking socket. */
		if (!kshutting_down())
			klog(KLOG_WARNING, "conn %llu (%s): TLS handshake failed: %s: closing",
				 (unsigned long long) conn->id, conn->peer,
				 e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ||
				 errno == EAGAIN || errno == EWOULDBLOCK ?
				 "timed out" : tls_error(err, sizeof(err)));
		ERR_clear_error();
		return false;
	}
	kio_set_timeout(conn, 0);
	if (klog_enabled(KLOG_DEBUG))
	{
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
		X509	   *peer = SSL_get1_peer_certificate(conn->ssl);
#else
		X509	   *peer = SSL_get_peer_certificate(conn->ssl);
#endif
		char		subject[256] = "none";

		if (peer != NULL)
		{
			X509_NAME_oneline(X509_get_subject_name(peer), subject, sizeof(subject));
			X509_free(peer);
		}
		klog(KLOG_DEBUG, "conn %llu (%s): TLS %s, cipher %s, client certificate %s",
			 (unsigned long long) conn->id, conn->peer, SSL_get_version(conn->ssl),
			 SSL_get_cipher_name(conn->ssl), subject);
	}
	return true;
}

static ssize_t recv_raw(KConn *conn, void *buf, size_t n);

/*
 * The buffer, the connection's thread's own (each connection has one, and
 * only it reads the client's bytes).  Not from malloc: with 8 KiB from
 * malloc in each connection's thread, 24 connections sending frames of
 * 6 MiB under a 16 MiB --max-request-memory raised the gateway's peak
 * memory by 84 to 96 MiB instead of 17 to 23 (TAP 070; malloc's
 * per-thread arenas keep freed frames), and by 23 MiB with this one.
 */
static _Thread_local uint8_t thread_rbuf[K_RBUF_BYTES];

/*
 * Bytes received before first, then, for less than K_RBUF_BYTES, as much as
 * the socket has into the buffer, for this read and the next ones.  Only
 * conn.c reads the client's bytes, and only here, so none is read twice or
 * lost; kio_frame_pending counts the buffered ones too.
 */
ssize_t
kio_recv(KConn *conn, void *buf, size_t n)
{
	ssize_t		r;

	if (n == 0)
		return 0;
	if (conn->rbuf_pos == conn->rbuf_len && n < K_RBUF_BYTES)
	{
		conn->rbuf = thread_rbuf;
		r = recv_raw(conn, conn->rbuf, K_RBUF_BYTES);
		if (r <= 0)
			return r;
		conn->rbuf_pos = 0;
		conn->rbuf_len = (size_t) r;
	}
	if (conn->rbuf_pos < conn->rbuf_len)
	{
		size_t		take = conn->rbuf_len - conn->rbuf_pos;

		if (take > n)
			take = n;
		memcpy(buf, conn->rbuf + conn->rbuf_pos, take);
		conn->rbuf_pos += take;
		return (ssize_t) take;
	}
	return recv_raw(conn, buf, n);
}

bool
kio_buffered(KConn *conn)
{
	return conn->rbuf_pos < conn->rbuf_len ||
		(conn->ssl != NULL && SSL_pending(conn->ssl) > 0);
}

static ssize_t
recv_raw(KConn *conn, void *buf, size_t n)
{
	int			rc;
	int			e;

	if (conn->ssl == NULL)
	{
		for (;;)
		{
			ssize_t		r = recv(conn->fd, buf, n, 0);

			if (r >= 0 || errno != EINTR)
				return r;
		}
	}
	if (n > INT32_MAX)
		n = INT32_MAX;
	ERR_clear_error();
	errno = 0;
	rc = SSL_read(conn->ssl, buf, (int) n);
	if (rc > 0)
		return rc;
	e = SSL_get_error(conn->ssl, rc);
	if (e == SSL_ERROR_ZERO_RETURN)
		return 0;
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		errno = EAGAIN;			/* the receive timeout */
	else if (e == SSL_ERROR_SSL)
	{
		char		err[256];

		if (!kshutting_down())
			klog(KLOG_DEBUG, "conn %llu (%s): TLS error: %s", (unsigned long long) conn->id,
				 conn->peer, tls_error(err, sizeof(err)));
		errno = EPROTO;
	}
	else if (errno == 0)
		errno = ECONNRESET;
	ERR_clear_error();
	return -1;
}

/*
 * Whether a whole frame (its size and that many bytes) has arrived and is
 * not read yet, so that reading it cannot wait for the client; if so, its
 * size and its API key.  The receive buffer's bytes come first; on TLS,
 * only decrypted bytes count.  Never blocks.
 */
bool
kio_frame_pending(KConn *conn, int32_t *size, int16_t *api_key)
{
	uint8_t		head[6];
	size_t		buffered = conn->rbuf_len - conn->rbuf_pos;
	size_t		have = buffered < 6 ? buffered : 6;
	int			avail;

	if (have > 0)
		memcpy(head, conn->rbuf + conn->rbuf_pos, have);
	if (conn->ssl != NULL)
	{
		avail = SSL_pending(conn->ssl);
		if (have < 6 &&
			(avail < (int) (6 - have) ||
			 SSL_peek(conn->ssl, head + have, (int) (6 - have)) != (int) (6 - have)))
			return false;
	}
	else
	{
		if (ioctl(conn->fd, FIONREAD, &avail) != 0)
			return false;
		if (have < 6 &&
			(avail < (int) (6 - have) ||
			 recv(conn->fd, head + have, 6 - have, MSG_PEEK | MSG_DONTWAIT) != (ssize_t) (6 - have)))
			return false;
	}
	*size = (int32_t) (((uint32_t) head[0] << 24) | ((uint32_t) head[1] << 16) |
					   ((uint32_t) head[2] << 8) | head[3]);
	*api_key = (int16_t) (((uint16_t) head[4] << 8) | head[5]);
	return *size >= 2 && (int64_t) avail + (int64_t) buffered >= (int64_t) *size + 4;
}

bool
kio_send(KConn *conn, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n > 0)
	{
		if (conn->ssl == NULL)
		{
			ssize_t		r = send(conn->fd, p, n, MSG_NOSIGNAL);

			if (r > 0)
			{
				p += r;
				n -= (size_t) r;
			}
			else if (r < 0 && errno != EINTR)
				return false;
		}
		else
		{
			/* SSL_write writes it all on a blocking socket (no partial mode). */
			int			chunk = n > (1 << 30) ? (1 << 30) : (int) n;
			int			rc;

			ERR_clear_error();
			rc = SSL_write(conn->ssl, p, chunk);
			if (rc <= 0)
			{
				if (errno == 0)
					errno = ECONNRESET;
				ERR_clear_error();
				return false;
			}
			p += rc;
			n -= (size_t) rc;
		}
	}
	return true;
}

/*
 * Closing a socket whose receive buffer still holds bytes (a client that
 * pipelined more requests after the one the connection closes on) makes
 * the kernel send a reset and drop what it has not sent yet: the tail of
 * the responses already written, which the client would get cut short.
 * So the sending side is shut down first (the responses go out, then the
 * end of the stream), and what the client still sends is read and
 * discarded until it closes, for at most K_LINGER_MS and K_LINGER_BYTES.
 * Not at shutdown, which must be quick.
 */
static void
linger_close(KConn *conn)
{
	struct timespec start,
				now;
	size_t		discarded = 0;
	char		buf[16384];

	if (conn->fd < 0 || kshutting_down() || shutdown(conn->fd, SHUT_WR) != 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (discarded < K_LINGER_BYTES && !kshutting_down())
	{
		struct pollfd pfd = {conn->fd, POLLIN, 0};
		long		waited_ms;
		ssize_t		r;

		clock_gettime(CLOCK_MONOTONIC, &now);
		waited_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (waited_ms >= K_LINGER_MS || poll(&pfd, 1, (int) (K_LINGER_MS - waited_ms)) <= 0)
			break;
		r = recv(conn->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r <= 0)
			break;
		discarded += (size_t) r;
	}
}

void
kio_end(KConn *conn)
{
	conn->rbuf = NULL;
	conn->rbuf_pos = conn->rbuf_len = 0;
	if (conn->ssl != NULL)
	{
		/* Tell the client, without waiting for its answer. */
		ERR_clear_error();
		if (SSL_is_init_finished(conn->ssl) && !kshutting_down())
			(void) SSL_shutdown(conn->ssl);
		ERR_clear_error();
		SSL_free(conn->ssl);
		conn->ssl = NULL;
	}
	linger_close(conn);
}
