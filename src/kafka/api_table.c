/*-------------------------------------------------------------------------
 *
 * api_table.c
 *	  The one table of the APIs the gateway implements: the dispatcher
 *	  (conn.c) routes requests through it and ApiVersions advertises it,
 *	  so what is advertised is exactly what is served.
 *
 * Versions are those whose every field the handler reads and writes; the
 * first flexible version is Kafka's (KIP-482), from the protocol's
 * published message definitions.
 *
 *-------------------------------------------------------------------------
 */
#include "server.h"

const KApi	kapis[] = {
	{KAPI_PRODUCE, "Produce", 0, 9, 9, khandle_produce},
	{KAPI_FETCH, "Fetch", 4, 12, 12, khandle_fetch},
	{KAPI_LIST_OFFSETS, "ListOffsets", 0, 6, 6, khandle_list_offsets},
	{KAPI_METADATA, "Metadata", 0, 12, 9, khandle_metadata},
	{KAPI_OFFSET_COMMIT, "OffsetCommit", 0, 8, 8, khandle_offset_commit},
	{KAPI_OFFSET_FETCH, "OffsetFetch", 0, 8, 6, khandle_offset_fetch},
	{KAPI_FIND_COORDINATOR, "FindCoordinator", 0, 4, 3, khandle_find_coordinator},
	{KAPI_JOIN_GROUP, "JoinGroup", 0, 9, 6, khandle_join_group},
	{KAPI_HEARTBEAT, "Heartbeat", 0, 4, 4, khandle_heartbeat},
	{KAPI_LEAVE_GROUP, "LeaveGroup", 0, 5, 4, khandle_leave_group},
	{KAPI_SYNC_GROUP, "SyncGroup", 0, 5, 4, khandle_sync_group},
	{KAPI_DESCRIBE_GROUPS, "DescribeGroups", 0, 5, 5, khandle_describe_groups},
	{KAPI_LIST_GROUPS, "ListGroups", 0, 4, 3, khandle_list_groups},
	{KAPI_SASL_HANDSHAKE, "SaslHandshake", 0, 1, INT16_MAX, khandle_sasl_handshake},
	{KAPI_API_VERSIONS, "ApiVersions", 0, 3, 3, khandle_api_versions},
	{KAPI_CREATE_TOPICS, "CreateTopics", 0, 7, 5, khandle_create_topics},
	{KAPI_DELETE_TOPICS, "DeleteTopics", 0, 6, 4, khandle_delete_topics},
	{KAPI_INIT_PRODUCER_ID, "InitProducerId", 0, 4, 2, khandle_init_producer_id},
	{KAPI_ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 0, 3, 3, khandle_add_partitions_to_txn},
	{KAPI_ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 3, 3, khandle_add_offsets_to_txn},
	{KAPI_END_TXN, "EndTxn", 0, 3, 3, khandle_end_txn},
	{KAPI_TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 3, 3, khandle_txn_offset_commit},
	{KAPI_DESCRIBE_CONFIGS, "DescribeConfigs", 0, 4, 4, khandle_describe_configs},
	{KAPI_SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2, 2, khandle_sasl_authenticate},
	{KAPI_CREATE_PARTITIONS, "CreatePartitions", 0, 3, 2, khandle_create_partitions},
	{KAPI_DELETE_GROUPS, "DeleteGroups", 0, 2, 2, khandle_delete_groups},
	{KAPI_OFFSET_DELETE, "OffsetDelete", 0, 0, INT16_MAX, khandle_offset_delete},
	{KAPI_DESCRIBE_CLUSTER, "DescribeCluster", 0, 1, 0, khandle_describe_cluster},
};

const int	knapis = (int) (sizeof(kapis) / sizeof(kapis[0]));

const KApi *
kapi_find(int16_t api_key)
{
	for (int i = 0; i < knapis; i++)
		if (kapis[i].api_key == api_key)
			return &kapis[i];
	return NULL;
}
