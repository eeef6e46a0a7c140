/*-------------------------------------------------------------------------
 *
 * api_find_coordinator.c
 *	  FindCoordinator (key 10), versions 0 to 4: the node coordinating a
 *	  group, one key (v0-3) or a batch of keys (v4, coordinator_keys).
 *
 * A group's coordinator state is in PostgreSQL, so every gateway can
 * coordinate every group: alone, the gateway names itself; with --brokers,
 * every gateway names the same node for a group (kgroup_coordinator), as
 * Kafka's brokers agree on a group's coordinator.  Nothing is asked of
 * the database: whether the role may use the group is decided by the
 * group's requests themselves (GROUP_AUTHORIZATION_FAILED there).
 * A transactional id (key type 1) is coordinated the same way, by the
 * node its hash names: its InitProducerId (api_init_producer_id.c) then
 * says clearly that transactions are not served yet, where an error here
 * would have clients look for a coordinator again and again.  An unknown
 * key type gets INVALID_REQUEST with a message.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "group.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

#define K_KEY_TYPE_GROUP		0
#define K_KEY_TYPE_TRANSACTION	1

static const char *
key_type_error(int8_t key_type)
{
	(void) key_type;
	return "unknown coordinator key type";
}

KHandlerResult
khandle_find_coordinator(KConn *conn, KRequest *req, KWriter *w)
{
	KReader    *r = &req->body;
	bool		flex = req->flexible;
	int16_t		v = req->api_version;
	KSlice		key = {NULL, -1};
	int8_t		key_type = K_KEY_TYPE_GROUP;
	KSlice	   *keys = NULL;
	int32_t		nkeys = 0;

	if (v <= 3)
		key = kr_string_v(r, flex);
	if (v >= 1)
		key_type = kr_int8(r);
	if (v >= 4)
	{
		nkeys = kr_array_len_v(r, flex, 1);
		if (nkeys > K_MAX_GROUP_ITEMS)
			return kgroup_too_many(conn, "FindCoordinator", nkeys);
		if (nkeys > 0)
		{
			keys = calloc((size_t) nkeys, sizeof(KSlice));
			if (keys == NULL)
				return kgroup_no_memory(conn, "FindCoordinator");
		}
		for (int32_t i = 0; i < nkeys && !r->error; i++)
			keys[i] = kr_string_v(r, flex);
	}
	kr_tags_v(r, flex);
	if (!khandler_body_done(req))
	{
		free(keys);
		return KH_MALFORMED;
	}

	if (v >= 1)
		kw_int32(w, 0);			/* throttle_time_ms */
	if (v <= 3)
	{
		bool		ok = key_type == K_KEY_TYPE_GROUP || key_type == K_KEY_TYPE_TRANSACTION;
		int32_t		node = kgroup_coordinator(key);

		kw_int16(w, ok ? KERR_NONE : KERR_INVALID_REQUEST);
		if (v >= 1)
			kw_cstring_v(w, flex, ok ? NULL : key_type_error(key_type));
		kw_int32(w, ok ? node : -1);
		kw_cstring_v(w, flex, ok ? kconf.brokers[node].host : "");
		kw_int32(w, ok ? kconf.brokers[node].port : -1);
	}
	else
	{
		kw_array_len_v(w, flex, nkeys);
		for (int32_t i = 0; i < nkeys && !w->error; i++)
		{
			bool		ok = key_type == K_KEY_TYPE_GROUP || key_type == K_KEY_TYPE_TRANSACTION;
			int32_t		node = kgroup_coordinator(keys[i]);

			kw_string_v(w, flex, (const char *) keys[i].ptr, keys[i].len);
			kw_int32(w, ok ? node : -1);
			kw_cstring_v(w, flex, ok ? kconf.brokers[node].host : "");
			kw_int32(w, ok ? kconf.brokers[node].port : -1);
			kw_int16(w, ok ? KERR_NONE : KERR_INVALID_REQUEST);
			kw_cstring_v(w, flex, ok ? NULL : key_type_error(key_type));
			kw_tags_v(w, flex);
		}
	}
	kw_tags_v(w, flex);
	free(keys);
	return KH_OK;
}
