/*-------------------------------------------------------------------------
 *
 * group.c
 *	  What the consumer-group APIs share (see group.h): the coordinator's
 *	  node, SQLSTATE to Kafka error, a member's client_host.
 *
 *-------------------------------------------------------------------------
 */
#include "config.h"
#include "group.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

int32_t
kgroup_coordinator(KSlice group_id)
{
	if (kconf.nbrokers <= 1)
		return kconf.node_id;
	return kpartition_leader((const char *) group_id.ptr, group_id.len > 0 ? group_id.len : 0, 0);
}

int16_t
kgroup_sql_error(const char *sqlstate)
{
	if (sqlstate[0] == '\0')
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (strcmp(sqlstate, "42501") == 0)
		return KERR_GROUP_AUTHORIZATION_FAILED;
	/* Connection, resources, operator intervention, rollback: retry. */
	if (strncmp(sqlstate, "08", 2) == 0 || strncmp(sqlstate, "53", 2) == 0 ||
		strncmp(sqlstate, "57", 2) == 0 || strncmp(sqlstate, "40", 2) == 0 ||
		strcmp(sqlstate, "55P03") == 0)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	/* Data exceptions: a value PostgreSQL refused (not UTF-8, too long). */
	if (strncmp(sqlstate, "22", 2) == 0 || strncmp(sqlstate, "54", 2) == 0)
		return KERR_INVALID_REQUEST;
	return KERR_UNKNOWN_SERVER_ERROR;
}

void
kgroup_client_host(const KConn *conn, char *buf, size_t size)
{
	const char *peer = conn->peer;
	size_t		n = strlen(peer);
	const char *colon = strrchr(peer, ':');

	/* "127.0.0.1:5432" or "[::1]:5432": the address without the port. */
	if (colon)
		n = (size_t) (colon - peer);
	if (n >= 2 && peer[0] == '[' && peer[n - 1] == ']')
	{
		peer++;
		n -= 2;
	}
	snprintf(buf, size, "/%.*s", (int) n, peer);
}

KHandlerResult
kgroup_too_many(KConn *conn, const char *api, int32_t n)
{
	klog(KLOG_WARNING, "conn %llu (%s): %s request names %d items, more than %d: closing",
		 (unsigned long long) conn->id, conn->peer, api, n, K_MAX_GROUP_ITEMS);
	return KH_CLOSE;
}

KHandlerResult
kgroup_no_memory(KConn *conn, const char *api)
{
	klog(KLOG_WARNING, "conn %llu (%s): out of memory for a %s request: closing",
		 (unsigned long long) conn->id, conn->peer, api);
	return KH_CLOSE;
}
