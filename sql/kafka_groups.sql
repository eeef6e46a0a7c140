-- Kafka's classic group protocol and group offsets (sql/install/kafka_groups.sql):
-- one session, so JoinGroups here complete without waiting for another
-- member (no initial delay; short session timeouts allowed).  Member ids
-- are random: CALL results go to variables (\gset) and are compared.
SET eventlog.kafka_initial_rebalance_delay = 0;
SET eventlog.kafka_min_session_timeout = 100;
SELECT eventlog.create_topic('kt', 2);
SELECT count(*) FROM (SELECT eventlog.produce('kt', 'k' || i, '{}', partition => i % 2)
                        FROM generate_series(1, 6) i) x;
-- A consumer's subscription to kt (ConsumerProtocolSubscription v0).
\set sub '\'\\x00000000000100026b74ffffffff\'::bytea'
SELECT eventlog._kafka_subscription_topics(:sub);
SELECT eventlog._kafka_subscription_topics('\x0000ffffffff') IS NULL AS malformed;
SELECT eventlog._kafka_subscription_topics('\x00000000000100ff6b74') IS NULL AS truncated;
\set protos 'ARRAY[ROW(\'range\', :sub), ROW(\'roundrobin\', :sub)]::eventlog.kafka_protocol[]'

-- KIP-394: a first JoinGroup without a member id gets MEMBER_ID_REQUIRED (79) and an id.
CALL eventlog.kafka_join_group('kg', '', NULL, 'consumer', :protos, 10000, 30000, 'cli', '/127.0.0.1', true) \gset j_
SELECT :j_error_code AS error_code, :j_generation AS generation, :'j_member_id_out' LIKE 'cli-%' AS client_prefix;
\set m1 :j_member_id_out
SELECT state, generation, pending FROM eventlog.kafka_groups JOIN eventlog.kafka_group_members USING (group_name);
-- Not a member yet: its heartbeat is UNKNOWN_MEMBER_ID (25).
SELECT eventlog.kafka_heartbeat('kg', 0, :'m1');
-- The join with it: the only member, so the leader of generation 1.
CALL eventlog.kafka_join_group('kg', :'m1', NULL, 'consumer', :protos, 10000, 30000, 'cli', '/127.0.0.1', true) \gset j_
SELECT :j_error_code AS error_code, :j_generation AS generation, :'j_protocol_type_out' AS protocol_type,
       :'j_protocol_name' AS protocol_name, :'j_leader' = :'m1' AS is_leader, :'j_member_id_out' = :'m1' AS same_id,
       (:'j_members'::eventlog.kafka_member[])[1].member_id = :'m1' AS listed,
       (:'j_members'::eventlog.kafka_member[])[1].metadata = :sub AS its_metadata,
       cardinality(:'j_members'::eventlog.kafka_member[]) AS members;
SELECT state, generation, protocol_name FROM eventlog.kafka_groups;
-- Heartbeat before the sync: fine (CompletingRebalance); a wrong generation is ILLEGAL_GENERATION (22).
SELECT eventlog.kafka_heartbeat('kg', 1, :'m1') AS ok, eventlog.kafka_heartbeat('kg', 7, :'m1') AS illegal_generation,
       eventlog.kafka_heartbeat('kg', 1, 'nobody') AS unknown_member, eventlog.kafka_heartbeat('', 1, :'m1') AS invalid_group;
-- A commit before the sync: REBALANCE_IN_PROGRESS (27).
SELECT * FROM eventlog.kafka_offset_commit('kg', 1, :'m1', NULL, ARRAY[ROW('kt', 0, 1, NULL)]::eventlog.kafka_offset[]);
-- The leader's sync stores the assignment and returns its own.
CALL eventlog.kafka_sync_group('kg', 1, :'m1', NULL, 'consumer', 'range',
                               ARRAY[ROW(:'m1', '\x0001'::bytea), ROW('stranger', '\x02'::bytea)]::eventlog.kafka_assignment[]) \gset s_
SELECT :s_error_code AS error_code, :'s_protocol_type_out' AS protocol_type, :'s_protocol_name_out' AS protocol_name, :'s_assignment' AS assignment;
SELECT state FROM eventlog.kafka_groups;
-- Sync errors: stale generation, unknown member, other protocol.
CALL eventlog.kafka_sync_group('kg', 0, :'m1', NULL, NULL, NULL, NULL);
CALL eventlog.kafka_sync_group('kg', 1, 'nobody', NULL, NULL, NULL, NULL);
CALL eventlog.kafka_sync_group('kg', 1, :'m1', NULL, 'connect', NULL, NULL);
CALL eventlog.kafka_sync_group('nogroup', 1, :'m1', NULL, NULL, NULL, NULL);
-- Stable: a sync again returns the assignment; a heartbeat is fine.
CALL eventlog.kafka_sync_group('kg', 1, :'m1', NULL, NULL, NULL, NULL);
SELECT eventlog.kafka_heartbeat('kg', 1, :'m1');

-- Offsets: commits by the member of the current generation, in the SQL groups' positions.
SELECT * FROM eventlog.kafka_offset_commit('kg', 1, :'m1', NULL,
    ARRAY[ROW('kt', 0, 2, 'meta'), ROW('kt', 1, 1, NULL), ROW('kt', 2, 0, NULL), ROW('nosuch', 0, 0, NULL),
          ROW('kt', 1, 99, NULL), ROW('kt', 1, -5, NULL), ROW('kt', 1, 0, repeat('x', 4097))]::eventlog.kafka_offset[]);
SELECT group_name, topic, partition, committed_offset, lag FROM eventlog.consumer_groups WHERE group_name = 'kg' ORDER BY partition;
SELECT * FROM eventlog.kafka_offset_fetch('kg');
SELECT * FROM eventlog.kafka_offset_fetch('kg', ARRAY[ROW('kt', 1), ROW('kt', 5), ROW('nosuch', 0)]::eventlog.kafka_topic_partition[]);
SELECT * FROM eventlog.kafka_offset_fetch('', ARRAY[ROW('kt', 1)]::eventlog.kafka_topic_partition[]);
-- A stale generation, an unknown member, a simple consumer (generation -1) while the group has members: refused.
SELECT * FROM eventlog.kafka_offset_commit('kg', 0, :'m1', NULL, ARRAY[ROW('kt', 0, 3, NULL)]::eventlog.kafka_offset[]);
SELECT * FROM eventlog.kafka_offset_commit('kg', 1, 'nobody', NULL, ARRAY[ROW('kt', 0, 3, NULL)]::eventlog.kafka_offset[]);
SELECT * FROM eventlog.kafka_offset_commit('kg', -1, '', NULL, ARRAY[ROW('kt', 0, 3, NULL)]::eventlog.kafka_offset[]);
SELECT * FROM eventlog.kafka_offset_commit('nogroup', 4, 'x', NULL, ARRAY[ROW('kt', 0, 3, NULL)]::eventlog.kafka_offset[]);
-- An SQL poll of the same group name continues from the Kafka group's positions.
SELECT partition, offset_id FROM eventlog.poll('kt', 'kg', partitions => 2) ORDER BY 1, 2;
SELECT * FROM eventlog.kafka_offset_fetch('kg');
-- OffsetDelete: refused for a topic the members subscribe to.
SELECT * FROM eventlog.kafka_offset_delete('kg', ARRAY[ROW('kt', 0), ROW('nosuch', 0)]::eventlog.kafka_topic_partition[]);
SELECT * FROM eventlog.kafka_offset_delete('nogroup', ARRAY[ROW('kt', 0)]::eventlog.kafka_topic_partition[]);

-- Describe, list.
SELECT group_name, error_code, state, protocol_type, protocol_data, cardinality(members) AS members,
       members[1].member_id = :'m1' AS m1, members[1].client_id, members[1].client_host,
       members[1].metadata = :sub AS metadata, members[1].assignment
  FROM eventlog.kafka_describe_groups(ARRAY['kg', 'nogroup', '']);
SELECT * FROM eventlog.kafka_list_groups();
SELECT * FROM eventlog.kafka_list_groups(ARRAY['empty']);
-- A group with members cannot be deleted (NON_EMPTY_GROUP 68); an unknown one is GROUP_ID_NOT_FOUND (69).
SELECT * FROM eventlog.kafka_delete_groups(ARRAY['kg', 'nogroup', '']);

-- The member rejoins with other protocols: a new generation (it leads a rebalance of one).
CALL eventlog.kafka_join_group('kg', :'m1', NULL, 'consumer', ARRAY[ROW('roundrobin', :sub)]::eventlog.kafka_protocol[],
                               10000, 30000, 'cli', '/127.0.0.1', true) \gset j_
SELECT :j_error_code AS error_code, :j_generation AS generation, :'j_protocol_name' AS protocol_name;
-- A member with another protocol type cannot join (INCONSISTENT_GROUP_PROTOCOL 23), nor one with no common protocol.
CALL eventlog.kafka_join_group('kg', '', NULL, 'connect', :protos, 10000, 30000, 'c2', 'h', false);
CALL eventlog.kafka_join_group('kg', '', NULL, 'consumer', ARRAY[ROW('sticky', :sub)]::eventlog.kafka_protocol[], 10000, 30000, 'c2', 'h', false);
-- Bad session timeouts (INVALID_SESSION_TIMEOUT 26), a bad group id (INVALID_GROUP_ID 24), an unknown member id (25).
CALL eventlog.kafka_join_group('kg', '', NULL, 'consumer', :protos, 50, 30000, 'c2', 'h', false);
CALL eventlog.kafka_join_group('kg', '', NULL, 'consumer', :protos, 1800001, 30000, 'c2', 'h', false);
CALL eventlog.kafka_join_group('', '', NULL, 'consumer', :protos, 10000, 30000, 'c2', 'h', false);
CALL eventlog.kafka_join_group('kg', 'nobody', NULL, 'consumer', :protos, 10000, 30000, 'c2', 'h', false);
CALL eventlog.kafka_join_group('nogroup', 'nobody', NULL, 'consumer', :protos, 10000, 30000, 'c2', 'h', false);

-- LeaveGroup: the group goes Empty at once, with a new generation.
SELECT member_id = :'m1' AS m1, group_instance_id, error_code
  FROM eventlog.kafka_leave_group('kg', ARRAY[ROW(:'m1', NULL), ROW('nobody', NULL), ROW('', 'no-instance')]::eventlog.kafka_member_identity[]);
SELECT state, generation, protocol_type, leader FROM eventlog.kafka_groups;
SELECT eventlog.kafka_heartbeat('kg', 2, :'m1');
-- Empty: a simple consumer commits with generation -1.
SELECT * FROM eventlog.kafka_offset_commit('kg', -1, '', NULL, ARRAY[ROW('kt', 0, 1, NULL), ROW('kt', 0, 4, NULL)]::eventlog.kafka_offset[]);
SELECT * FROM eventlog.kafka_offset_commit('simple', -1, '', NULL, ARRAY[ROW('kt', 1, 3, 'm')]::eventlog.kafka_offset[]);
SELECT * FROM eventlog.kafka_offset_delete('kg', ARRAY[ROW('kt', 1)]::eventlog.kafka_topic_partition[]);
SELECT * FROM eventlog.kafka_offset_fetch('kg');
SELECT * FROM eventlog.kafka_list_groups();
SELECT group_name, state FROM eventlog.kafka_describe_groups(ARRAY['simple']);
SELECT * FROM eventlog.kafka_delete_groups(ARRAY['kg', 'simple']);
SELECT * FROM eventlog.kafka_offset_fetch('kg');
SELECT count(*) FROM eventlog.group_offsets WHERE group_name IN ('kg', 'simple');
SELECT count(*) FROM eventlog.kafka_groups;

-- Static membership (KIP-345): no MEMBER_ID_REQUIRED; a new incarnation replaces the old one, which is fenced.
CALL eventlog.kafka_join_group('st', '', 'inst-1', 'consumer', :protos, 10000, 30000, 'c', 'h', true) \gset j_
SELECT :j_error_code AS error_code, :j_generation AS generation;
\set s1 :j_member_id_out
CALL eventlog.kafka_join_group('st', '', 'inst-1', 'consumer', :protos, 10000, 30000, 'c', 'h', true) \gset j_
SELECT :j_error_code AS error_code, :j_generation AS generation, :'j_member_id_out' <> :'s1' AS new_id;
SELECT eventlog.kafka_heartbeat('st', 2, :'s1', 'inst-1') AS fenced;
SELECT group_instance_id, error_code FROM eventlog.kafka_leave_group('st', ARRAY[ROW('', 'inst-1')]::eventlog.kafka_member_identity[]);
SELECT state FROM eventlog.kafka_groups WHERE group_name = 'st';

-- Session timeout: a member that stops heartbeating is removed at the group's next request.
CALL eventlog.kafka_join_group('exp', '', NULL, 'consumer', :protos, 100, 30000, 'c', 'h', false) \gset j_
CALL eventlog.kafka_sync_group('exp', 1, :'j_member_id_out', NULL, NULL, NULL, NULL);
SELECT pg_sleep(0.3);
SELECT eventlog.kafka_heartbeat('exp', 1, :'j_member_id_out');
SELECT state, generation FROM eventlog.kafka_groups WHERE group_name = 'exp';

-- Privileges: a role that may not consume kt cannot use a group with
-- positions in kt (GROUP_AUTHORIZATION_FAILED 30) nor commit to kt
-- (TOPIC_AUTHORIZATION_FAILED 29), and cannot write the tables.
CREATE ROLE regress_kafka_nobody;
SELECT * FROM eventlog.kafka_offset_commit('priv', -1, '', NULL, ARRAY[ROW('kt', 0, 1, NULL)]::eventlog.kafka_offset[]);
SET ROLE regress_kafka_nobody;
SELECT * FROM eventlog.kafka_offset_fetch('priv');
SELECT eventlog.kafka_heartbeat('priv', 0, 'x');
CALL eventlog.kafka_join_group('priv', '', NULL, 'consumer', :protos, 10000, 30000, 'c', 'h', false);
CALL eventlog.kafka_join_group('other', '', NULL, 'consumer', :protos, 10000, 30000, 'c', 'h', false);
SELECT * FROM eventlog.kafka_offset_commit('mine', -1, '', NULL, ARRAY[ROW('kt', 0, 1, NULL)]::eventlog.kafka_offset[]);
SELECT * FROM eventlog.kafka_offset_delete('priv', ARRAY[ROW('kt', 0)]::eventlog.kafka_topic_partition[]);
SELECT group_name, error_code FROM eventlog.kafka_describe_groups(ARRAY['priv']);
SELECT * FROM eventlog.kafka_delete_groups(ARRAY['priv']);
SELECT count(*) FROM eventlog.kafka_list_groups() WHERE group_name = 'priv';
INSERT INTO eventlog.kafka_groups (group_name) VALUES ('forged');
RESET ROLE;
SELECT * FROM eventlog.kafka_offset_fetch('priv');
DROP ROLE regress_kafka_nobody;

-- An SQL member-style consumer of the same group name is live: a Kafka member cannot join.
SELECT count(*) FROM eventlog.poll('kt', 'mixed', member => 'sqlm');
CALL eventlog.kafka_join_group('mixed', '', NULL, 'consumer', :protos, 10000, 30000, 'c', 'h', false);
-- Nor can a simple consumer (generation -1) commit under it: the group
-- has a member (UNKNOWN_MEMBER_ID 25), and the positions do not move.
SELECT partition, next_offset, owner_member FROM eventlog.group_offsets
 WHERE group_name = 'mixed' ORDER BY partition;
SELECT * FROM eventlog.kafka_offset_commit('mixed', -1, '', NULL, ARRAY[ROW('kt', 0, 1, NULL)]::eventlog.kafka_offset[]);
SELECT partition, next_offset, owner_member FROM eventlog.group_offsets
 WHERE group_name = 'mixed' ORDER BY partition;
SELECT eventlog.leave('kt', 'mixed', 'sqlm');
-- Once the member left, it can.
SELECT * FROM eventlog.kafka_offset_commit('mixed', -1, '', NULL, ARRAY[ROW('kt', 0, 1, NULL)]::eventlog.kafka_offset[]);

-- Misuse from SQL raises.
SELECT * FROM eventlog.kafka_offset_commit('kg', -1, '', NULL, NULL);
SELECT * FROM eventlog.kafka_leave_group('kg', NULL);
