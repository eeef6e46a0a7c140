--
-- Topics: create, alter, drop, the views, and every bad input.
--
\set SHOW_CONTEXT never

SELECT eventlog.create_topic('orders', 3);
SELECT eventlog.create_topic('audit.log_v2-x');           -- all of Kafka's alphabet
SELECT eventlog.create_topic(repeat('a', 200));           -- longest name
SELECT topic, partitions, retention, retention_bytes, segment_interval, segment_bytes, records, bytes > 0 AS has_bytes
  FROM eventlog.topics ORDER BY topic;
SELECT topic, partition, log_start_offset, high_watermark, last_stable_offset,
       stable_offset_holder_pid, records, segments, oldest_append_time
  FROM eventlog.partitions WHERE topic = 'orders' ORDER BY partition;

-- Segment tables are named from ids, never from the topic's name.
SELECT s.table_name, s.base_offset
  FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog t USING (topic_id)
 WHERE t.name = repeat('a', 200);

-- Bad names: 22023 (22004 for NULL), and nothing is created.
SELECT e.* FROM (VALUES ($$''$$), ($$repeat('a', 201)$$), ($$'bad name'$$),
                        ($$'x"; DROP TABLE eventlog.topic_catalog; --'$$),
                        ($$'ünïcode'$$), ($$'a/b'$$), ($$NULL$$)) AS v(arg),
       LATERAL expect_error(format('SELECT eventlog.create_topic(%s)', v.arg)) e;
SELECT * FROM expect_error($$SELECT eventlog.create_topic('orders')$$);
SELECT eventlog.create_topic('p0', 0);
SELECT eventlog.create_topic('pn', -1);
SELECT eventlog.create_topic('pnull', NULL);
SELECT eventlog.create_topic('huge', 2000000);            -- over eventlog.max_partitions
SELECT eventlog.create_topic('r0', retention => '0 s');
SELECT eventlog.create_topic('rb0', retention_bytes => 0);
SELECT eventlog.create_topic('si0', segment_interval => '-1 day');
SELECT eventlog.create_topic('sb', segment_bytes => 100);
SELECT count(*) AS topics, (SELECT count(*) FROM eventlog.partition_catalog) AS partitions,
       (SELECT count(*) FROM eventlog.segment_catalog) AS segments,
       (SELECT count(*) FROM pg_tables WHERE schemaname = 'eventlog_segments' AND tablename LIKE 'seg\_%') AS segment_tables
  FROM eventlog.topic_catalog;

-- NULL retention keeps records forever.
SELECT eventlog.create_topic('forever', retention => NULL);
SELECT retention IS NULL AS keeps_forever FROM eventlog.topics WHERE topic = 'forever';

-- alter_topic: NULL leaves a setting alone, negative removes a limit,
-- partitions only grow.
SELECT eventlog.alter_topic('orders', retention => '1 day', retention_bytes => 1000000);
SELECT partitions, retention, retention_bytes FROM eventlog.topics WHERE topic = 'orders';
SELECT eventlog.alter_topic('orders', retention_bytes => -1);
SELECT partitions, retention, retention_bytes FROM eventlog.topics WHERE topic = 'orders';
SELECT eventlog.alter_topic('orders', retention => '-1 s');
SELECT partitions, retention, retention_bytes FROM eventlog.topics WHERE topic = 'orders';
SELECT eventlog.alter_topic('orders', partitions => 5);
SELECT partitions FROM eventlog.topics WHERE topic = 'orders';
SELECT count(*) FROM eventlog.partitions WHERE topic = 'orders';
SELECT eventlog.alter_topic('orders', partitions => 5);    -- same count: no-op
SELECT eventlog.alter_topic('orders', partitions => 2);
SELECT eventlog.alter_topic('orders', retention => '0 s');
SELECT eventlog.alter_topic('orders', segment_bytes => 10);
SELECT eventlog.alter_topic('nope', partitions => 2);
SELECT partitions, retention, retention_bytes, segment_bytes FROM eventlog.topics WHERE topic = 'orders';

-- drop_topic removes the tables and the catalog rows.
SELECT eventlog.drop_topic(repeat('a', 200));
SELECT eventlog.drop_topic('nope');
SELECT eventlog.drop_topic('nope', if_exists => true);
SELECT eventlog.drop_topic('bad name');
SELECT eventlog.drop_topic('forever');
SELECT eventlog.drop_topic('audit.log_v2-x');
SELECT topic FROM eventlog.topics;
SELECT count(*) AS segment_tables FROM pg_tables
 WHERE schemaname = 'eventlog_segments' AND tablename LIKE 'seg\_%';
