/*-------------------------------------------------------------------------
 *
 * conn.c
 *	  A client connection's thread: read a frame, decode the request
 *	  header, dispatch through the API table, send the response; one
 *	  request at a time, so responses go out in the order of the requests.
 *	  Produce requests the client pipelined share one commit, their
 *	  responses held until it (produce_batch.c).
 *
 * A frame is an int32 size and that many bytes.  A size below zero or
 * above --max-request-bytes closes the connection, as Kafka's broker does
 * (socket.request.max.bytes).  A frame of up to K_SMALL_FRAME_BYTES goes
 * into the connection's own buffer, which grows as the bytes arrive, never
 * ahead of them.  A larger one first reserves its size from the
 * gateway-wide --max-request-memory (reqmem.c), waiting without reading
 * while that is spent, and is read into a buffer of its size, freed after
 * its request: so the frames of all connections together never hold more
 * than the budget, plus K_SMALL_FRAME_BYTES per connection.  The buffer
 * comes from malloc, whose arenas keep freed memory warm for the next
 * large request (fresh pages for every request, mmap'ed and unmapped,
 * made a 200 kB request 30 times slower here): the process's resident
 * memory can exceed the frames held by what the allocator keeps.
 *
 * Once a client may send requests (at once without --sasl, after it
 * authenticated with it), a connection on which nothing moves for
 * --idle-timeout milliseconds is closed, as Kafka's broker does
 * (connections.max.idle.ms): a receive timeout on the socket, so the time
 * counts from the end of the last response (or from the last bytes of a
 * request that stopped coming), and a request being handled, a Fetch
 * waiting in the server included, is never idle.
 *
 * Whatever goes wrong on a connection (a bad frame, a request that does
 * not decode, an unknown API, a dead client, a PostgreSQL error) ends that
 * connection at most; other connections never wait on it.
 *
 * Every byte goes through io.c (plain TCP or TLS).  With --sasl, a client
 * that has not authenticated may send only ApiVersions and the SASL
 * requests (sasl.c), of at most K_MAX_UNAUTHENTICATED_BYTES each, and is
 * closed if it sends nothing for K_AUTH_TIMEOUT_S seconds.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "io.h"
#include "log.h"
#include "produce_batch.h"
#include "reqmem.h"
#include "sasl.h"
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Frames up to this size use the connection's buffer, outside the budget. */
#define K_SMALL_FRAME_BYTES		(64 * 1024)
#define K_FIRST_BUFFER_BYTES	K_SMALL_FRAME_BYTES
/* A response buffer grown past this is freed after its response. */
#define K_KEEP_BUFFER_BYTES		(1024 * 1024)
/* The largest response; a handler that would write more fails instead. */
#define K_MAX_RESPONSE_BYTES	((size_t) 256 * 1024 * 1024)
/* The largest request before authentication (Kafka's default, 512 KiB). */
#define K_MAX_UNAUTHENTICATED_BYTES	(512 * 1024)

/*
 * With --sasl, a client that has not authenticated yet and sends nothing
 * for this long is closed (io.c does the same in the TLS handshake).
 */
#define K_AUTH_TIMEOUT_S	30

/* That silence, never longer than the whole --authentication-timeout. */
static int
auth_silence_s(void)
{
	return kconf.authentication_timeout_s < K_AUTH_TIMEOUT_S ?
		kconf.authentication_timeout_s : K_AUTH_TIMEOUT_S;
}

/* Reads exactly n bytes: 1, or 0 on end of stream, -1 on error. */
static int
read_full(KConn *conn, uint8_t *buf, size_t n)
{
	size_t		got = 0;

	while (got < n)
	{
		ssize_t		r = kio_recv(conn, buf + got, n - got);

		if (r > 0)
			got += (size_t) r;
		else if (r == 0)
		{
			errno = 0;			/* an end, not a timeout */
			return got == 0 ? 0 : -1;
		}
		else
			return -1;
	}
	return 1;
}

/*
 * Reads a frame's body of size bytes into *buf, growing it (and *cap) no
 * faster than the bytes come; a buffer of size bytes already (a large
 * frame's) is never grown.  False if the stream ended, stalled
 * past --idle-timeout, or memory ran out.
 */
static bool
read_frame(KConn *conn, int32_t size, uint8_t **buf, size_t *cap)
{
	size_t		got = 0;
	size_t		want = (size_t) size;

	while (got < want)
	{
		ssize_t		r;

		if (got == *cap)
		{
			size_t		ncap = *cap ? *cap * 2 : K_FIRST_BUFFER_BYTES;
			uint8_t    *nbuf;

			if (ncap > want)
				ncap = want;
			nbuf = realloc(*buf, ncap);
			if (nbuf == NULL)
			{
				klog(KLOG_WARNING, "conn %llu (%s): out of memory for a request of %d bytes: closing",
					 (unsigned long long) conn->id, conn->peer, size);
				return false;
			}
			*buf = nbuf;
			*cap = ncap;
		}
		r = kio_recv(conn, *buf + got, (want < *cap ? want : *cap) - got);
		if (r > 0)
			got += (size_t) r;
		else if (r < 0 && conn->authenticated && (errno == EAGAIN || errno == EWOULDBLOCK))
		{
			klog(KLOG_WARNING, "conn %llu (%s): sent nothing for %lld ms within a request (%zu of %d bytes; --idle-timeout): closing",
				 (unsigned long long) conn->id, conn->peer, (long long) kconf.idle_timeout_ms,
				 got, size);
			return false;
		}
		else
		{
			if (!kshutting_down())
				klog(KLOG_WARNING, "conn %llu (%s): connection ended within a request (%zu of %d bytes): closing",
					 (unsigned long long) conn->id, conn->peer, got, size);
			return false;
		}
	}
	return true;
}

bool
khandler_body_done(KRequest *req)
{
	return !req->body.error && kr_remaining(&req->body) == 0;
}

/*
 * One request: decode its header, dispatch it, send the response.  False
 * if the connection must close (the reason is logged).
 */
static bool
handle_request(KConn *conn, const uint8_t *frame, int32_t size, KWriter *w)
{
	KReader		r;
	KRequest	req;
	const KApi *api;
	bool		supported;
	size_t		size_at;
	KHandlerResult hr;
	int			in_batch;
	char		cid[128];
	unsigned long long id = (unsigned long long) conn->id;

	kr_init(&r, frame, (size_t) size);
	req.api_key = kr_int16(&r);
	req.api_version = kr_int16(&r);
	req.correlation_id = kr_int32(&r);
	if (r.error)
	{
		klog(KLOG_WARNING, "conn %llu (%s): request of %d bytes is too short for a request header: closing",
			 id, conn->peer, size);
		return false;
	}
	api = kapi_find(req.api_key);
	if (api == NULL)
	{
		const char *why = kapi_unsupported_reason(req.api_key);

		klog(KLOG_WARNING, "conn %llu (%s): unknown or unsupported API key %d (correlation id %d)%s%s: closing",
			 id, conn->peer, req.api_key, req.correlation_id, why ? ": " : "", why ? why : "");
		return false;
	}
	supported = req.api_version >= api->min_version && req.api_version <= api->max_version;
	/*
	 * An ApiVersions request of a version we do not know gets an answer
	 * (KIP-511: the client retries with a version we gave); any other
	 * unsupported version closes, as Kafka's broker does.
	 */
	if (!supported && req.api_key != KAPI_API_VERSIONS)
	{
		klog(KLOG_WARNING, "conn %llu (%s): %s version %d is not supported (versions %d to %d; correlation id %d): closing",
			 id, conn->peer, api->name, req.api_version, api->min_version, api->max_version,
			 req.correlation_id);
		return false;
	}
	/* Before authentication: ApiVersions and SASL only (sasl.c). */
	if (!ksasl_allows(conn, req.api_key))
	{
		klog(KLOG_WARNING, "conn %llu (%s): %s request before SASL authentication completed (correlation id %d): closing",
			 id, conn->peer, api->name, req.correlation_id);
		return false;
	}
	req.flexible = req.api_version >= api->first_flexible_version;
	/* Header v1 and v2 both have a classic nullable string client id. */
	req.client_id = kr_nullable_string(&r);
	if (req.flexible)
		kr_skip_tagged_fields(&r);
	if (r.error && supported)
	{
		klog(KLOG_WARNING, "conn %llu (%s): malformed header of a %s v%d request (correlation id %d): closing",
			 id, conn->peer, api->name, req.api_version, req.correlation_id);
		return false;
	}
	req.body = r;
	/* Pipelined Produce requests share a commit (produce_batch.c). */
	in_batch = kbatch_join(conn, &req, frame, size);
	if (in_batch < 0)
		return false;
	if (klog_enabled(KLOG_DEBUG))
		klog(KLOG_DEBUG, "conn %llu (%s): %s v%d, correlation id %d, client id \"%s\", %d bytes",
			 id, conn->peer, api->name, req.api_version, req.correlation_id,
			 klog_printable(req.client_id.ptr, req.client_id.len, cid, sizeof(cid)), size);

	kw_reset(w);
	size_at = kw_placeholder_int32(w);
	kw_int32(w, req.correlation_id);
	/* Response header v1 for flexible versions, but never for ApiVersions. */
	if (req.flexible && req.api_key != KAPI_API_VERSIONS)
		kw_empty_tagged_fields(w);

	/* --read-dsn: the reads go to that server's session (pg.c). */
	kpg_read_session(conn, api->api_key == KAPI_FETCH || api->api_key == KAPI_LIST_OFFSETS);
	hr = api->handler(conn, &req, w);
	kpg_read_session(conn, false);
	if (in_batch && conn->batch_failed)
		return kbatch_replay(conn, w, handle_request);
	if (hr == KH_MALFORMED)
	{
		klog(KLOG_WARNING, "conn %llu (%s): malformed %s v%d request body (correlation id %d, %d bytes): closing",
			 id, conn->peer, api->name, req.api_version, req.correlation_id, size);
		return false;
	}
	if (hr == KH_NO_RESPONSE)
		return in_batch ? kbatch_hold(conn, NULL) : true;
	if (hr != KH_OK)
		return false;
	if (w->error)
	{
		klog(KLOG_WARNING, "conn %llu (%s): the response to %s v%d (correlation id %d) would exceed %zu bytes: closing",
			 id, conn->peer, api->name, req.api_version, req.correlation_id, w->limit);
		return false;
	}
	kw_patch_int32(w, size_at, (int32_t) (w->len - 4));
	if (in_batch)
		return kbatch_hold(conn, w) && !conn->close_after_response;
	if (!kio_send(conn, w->buf, w->len))
	{
		klog(KLOG_DEBUG, "conn %llu (%s): cannot send a response: %s", id, conn->peer, strerror(errno));
		return false;
	}
	return !conn->close_after_response;
}

void *
kconn_main(void *arg)
{
	KConn	   *conn = arg;
	uint8_t    *buf = NULL;
	size_t		cap = 0;
	KWriter		w;
	bool		idle_armed = false;
	unsigned long long id = (unsigned long long) conn->id;

	kw_init(&w, K_MAX_RESPONSE_BYTES);
	klog(KLOG_DEBUG, "conn %llu (%s): connected", id, conn->peer);
	conn->authenticated = !ksasl_enabled();
	if (!kio_start(conn))
		goto end;
	if (!conn->authenticated)
		kio_set_timeout(conn, auth_silence_s());
	while (!kshutting_down())
	{
		uint8_t		sizebuf[4];
		int32_t		size;
		int64_t		max_size;
		int			rc;
		uint8_t    *big = NULL;
		size_t		bigcap = 0;
		const uint8_t *frame;
		bool		ok;

		/* Authenticated now (SASL's handler cleared its timeout): idle counts. */
		if (conn->authenticated && !idle_armed)
		{
			if (kconf.idle_timeout_ms > 0)
				kio_set_timeout_ms(conn, kconf.idle_timeout_ms);
			idle_armed = true;
		}
		/* A Fetch's read-ahead comes in while the client has nothing to say. */
		kpg_fetch_ahead_collect(conn);
		rc = read_full(conn, sizebuf, 4);
		if (rc == 0)
		{
			klog(KLOG_DEBUG, "conn %llu (%s): closed by the client", id, conn->peer);
			break;
		}
		if (rc < 0 && !conn->authenticated && (errno == EAGAIN || errno == EWOULDBLOCK))
		{
			klog(KLOG_WARNING, "conn %llu (%s): did not authenticate within %d seconds: closing",
				 id, conn->peer, auth_silence_s());
			break;
		}
		if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		{
			/* A normal end, not a fault: the client reconnects when it needs to. */
			klog(KLOG_INFO, "conn %llu (%s): idle for %lld ms (--idle-timeout): closing",
				 id, conn->peer, (long long) kconf.idle_timeout_ms);
			break;
		}
		if (rc < 0)
		{
			if (!kshutting_down())
				klog(KLOG_DEBUG, "conn %llu (%s): connection lost: %s", id, conn->peer,
					 errno ? strerror(errno) : "end of stream within a size");
			break;
		}
		size = (int32_t) (((uint32_t) sizebuf[0] << 24) | ((uint32_t) sizebuf[1] << 16) |
						  ((uint32_t) sizebuf[2] << 8) | sizebuf[3]);
		/* Before authentication, requests are small (Kafka's 512 KiB). */
		max_size = kconf.max_request_bytes;
		if (!conn->authenticated && max_size > K_MAX_UNAUTHENTICATED_BYTES)
			max_size = K_MAX_UNAUTHENTICATED_BYTES;
		if (size < 0 || size > max_size)
		{
			klog(KLOG_WARNING, "conn %llu (%s): request size %d is out of range (0 to %lld, %s): closing",
				 id, conn->peer, size, (long long) max_size,
				 conn->authenticated ? "--max-request-bytes" : "before authentication");
			break;
		}
		if (size <= K_SMALL_FRAME_BYTES)
		{
			if (!read_frame(conn, size, &buf, &cap))
				break;
			frame = buf ? buf : (const uint8_t *) "";
		}
		else
		{
			/* Reserve first (this may wait), then read (reqmem.c). */
			if (!kreqmem_acquire(conn, (size_t) size))
				break;
			big = malloc((size_t) size);
			if (big == NULL)
			{
				klog(KLOG_WARNING, "conn %llu (%s): out of memory for a request of %d bytes: closing",
					 id, conn->peer, size);
				kreqmem_release((size_t) size);
				break;
			}
			bigcap = (size_t) size;
			if (!read_frame(conn, size, &big, &bigcap))
			{
				free(big);
				kreqmem_release((size_t) size);
				break;
			}
			frame = big;
		}
		if (ksasl_raw_pending(conn))
		{
			/* A bare SASL token after SaslHandshake v0, and its bare answer. */
			ok = ksasl_raw_token(conn, frame, size, &w) && kio_send(conn, w.buf, w.len);
		}
		else
			ok = handle_request(conn, frame, size, &w);
		if (big != NULL)
		{
			free(big);
			kreqmem_release((size_t) size);
		}
		if (!ok)
			break;
		if (w.cap > K_KEEP_BUFFER_BYTES)
			kw_free(&w);
	}
end:
	kbatch_end(conn);
	free(buf);
	kw_free(&w);
	kpg_close(conn);
	ksasl_end(conn);
	kio_end(conn);
	/* Before leaving the registry: the gateway may stop once it is empty. */
	klog(KLOG_DEBUG, "conn %llu: ended", id);
	kregistry_remove(conn);
	free(conn);
	return NULL;
}
