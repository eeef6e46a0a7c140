/*-------------------------------------------------------------------------
 *
 * api_versions.c
 *	  ApiVersions (key 18), versions 0 to 3: the APIs and versions the
 *	  gateway serves, read from the dispatch table (api_table.c).
 *
 * Its response header is always version 0, even for the flexible v3
 * (KIP-511): a client that does not yet know what the broker speaks must
 * be able to read the answer.  For the same reason a request of a version
 * above ours is answered, in v0, with UNSUPPORTED_VERSION and the versions
 * of ApiVersions we do serve; the client then retries with one of them.
 *
 *-------------------------------------------------------------------------
 */
#include "log.h"
#include "server.h"

/*
 * KIP-511's rule for client_software_name and _version:
 * [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
 */
static bool
valid_software_string(KSlice s)
{
	if (s.len <= 0)
		return false;
	for (int i = 0; i < s.len; i++)
	{
		uint8_t		c = s.ptr[i];
		bool		alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9');

		if (!alnum && ((c != '-' && c != '.') || i == 0 || i == s.len - 1))
			return false;
	}
	return true;
}

KHandlerResult
khandle_api_versions(KConn *conn, KRequest *req, KWriter *w)
{
	const KApi *self = kapi_find(KAPI_API_VERSIONS);
	int16_t		error = KERR_NONE;
	bool		flex = req->flexible;

	if (req->api_version < self->min_version || req->api_version > self->max_version)
	{
		klog(KLOG_INFO, "conn %llu (%s): ApiVersions v%d requested, answering UNSUPPORTED_VERSION with versions %d to %d",
			 (unsigned long long) conn->id, conn->peer, req->api_version,
			 self->min_version, self->max_version);
		/* v0's body; the request's body, of an unknown version, is not read. */
		kw_int16(w, KERR_UNSUPPORTED_VERSION);
		kw_array_len(w, 1);
		kw_int16(w, self->api_key);
		kw_int16(w, self->min_version);
		kw_int16(w, self->max_version);
		return KH_OK;
	}

	if (req->api_version >= 3)
	{
		KSlice		name = kr_compact_string(&req->body);
		KSlice		version = kr_compact_string(&req->body);

		kr_skip_tagged_fields(&req->body);
		if (!khandler_body_done(req))
			return KH_MALFORMED;
		if (!valid_software_string(name) || !valid_software_string(version))
		{
			char		b1[64],
						b2[64];

			klog(KLOG_WARNING, "conn %llu (%s): invalid client software name \"%s\" or version \"%s\" in ApiVersions",
				 (unsigned long long) conn->id, conn->peer,
				 klog_printable(name.ptr, name.len, b1, sizeof(b1)),
				 klog_printable(version.ptr, version.len, b2, sizeof(b2)));
			error = KERR_INVALID_REQUEST;
		}
		else if (klog_enabled(KLOG_DEBUG))
		{
			char		b1[64],
						b2[64];

			klog(KLOG_DEBUG, "conn %llu (%s): client software %s %s",
				 (unsigned long long) conn->id, conn->peer,
				 klog_printable(name.ptr, name.len, b1, sizeof(b1)),
				 klog_printable(version.ptr, version.len, b2, sizeof(b2)));
		}
	}
	else if (!khandler_body_done(req))
		return KH_MALFORMED;

	kw_int16(w, error);
	/* Kafka's broker lists no APIs with INVALID_REQUEST. */
	kw_array_len_v(w, flex, error ? 0 : knapis);
	for (int i = 0; !error && i < knapis; i++)
	{
		kw_int16(w, kapis[i].api_key);
		kw_int16(w, kapis[i].min_version);
		kw_int16(w, kapis[i].max_version);
		kw_tags_v(w, flex);
	}
	if (req->api_version >= 1)
		kw_int32(w, 0);			/* throttle_time_ms */
	kw_tags_v(w, flex);
	return KH_OK;
}
