/*-------------------------------------------------------------------------
 *
 * group.h
 *	  What the consumer-group APIs share (FindCoordinator, JoinGroup,
 *	  SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
 *	  OffsetDelete, DescribeGroups, ListGroups, DeleteGroups): the group
 *	  coordinator's node, the error code of a query that failed, and the
 *	  bounds on what one request may name.
 *
 * Every one of them is a thin handler over one call of the extension's
 * Kafka group SQL (sql/install/kafka_groups.sql): the coordinator's state
 * lives in PostgreSQL, so any gateway serves any group, and the SQL's
 * results are Kafka error codes already.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_GROUP_H
#define KAFKA_GROUP_H

#include "pgvalue.h"
#include "server.h"

/* Items (groups, members, partitions) one request may name; more closes. */
#define K_MAX_GROUP_ITEMS	100000

/*
 * The node coordinating a group: this gateway alone; with --brokers, the
 * same stable hash of the group id as partition leadership uses, so every
 * gateway names the same one (any of them could serve it).
 */
extern int32_t kgroup_coordinator(KSlice group_id);

/*
 * The Kafka error code for a group query that failed with sqlstate (""
 * if it never ran): 42501 is GROUP_AUTHORIZATION_FAILED, a lost session,
 * shutdown or a cancel COORDINATOR_NOT_AVAILABLE (the client finds the
 * coordinator again and retries), bad data INVALID_REQUEST, anything else
 * UNKNOWN_SERVER_ERROR (kpg_exec has logged the query's error).
 */
extern int16_t kgroup_sql_error(const char *sqlstate);

/* Kafka's client_host of a member: "/" and the peer's address. */
extern void kgroup_client_host(const KConn *conn, char *buf, size_t size);

/* Logs an over-long list and returns KH_CLOSE. */
extern KHandlerResult kgroup_too_many(KConn *conn, const char *api, int32_t n);

/* Logs that memory ran out and returns KH_CLOSE. */
extern KHandlerResult kgroup_no_memory(KConn *conn, const char *api);

#endif							/* KAFKA_GROUP_H */
