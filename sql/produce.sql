--
-- Producing: key hashing, partition choice, records, batches, transactions,
-- and every bad input.
--
\set SHOW_CONTEXT never

-- Kafka's murmur2 test vectors (Kafka's UtilsTest.testMurmur2) and the
-- partitions its default partitioner picks.
SELECT k, eventlog.murmur2(k) FROM (VALUES ('21'), ('foobar'), ('a-little-bit-long-string'),
    ('a-little-bit-longer-string'), ('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'), ('')) v(k);
SELECT eventlog.partition_for_key('foobar', 3), eventlog.partition_for_key('21', 10),
       eventlog.partition_for_key('', 7);
SELECT * FROM expect_error($$SELECT eventlog.partition_for_key('k', 0)$$);

SELECT eventlog.create_topic('events', 4);

-- Plain literals, no casts; a key goes where Kafka would put it.
SELECT * FROM eventlog.produce('events', 'foobar', '{"n": 1}');
SELECT * FROM eventlog.produce('events', 'foobar', '{"n": 2}');
SELECT eventlog.partition_for_key('foobar', 4) AS kafka_partition;
-- An empty key is a key, hashed like any other.
SELECT (eventlog.produce('events', '', '{"n": 3}')).partition = eventlog.partition_for_key('', 4) AS empty_key_hashed;
-- An explicit partition wins over the key.
SELECT * FROM eventlog.produce('events', 'foobar', '{"n": 4}', partition => 3);
-- Headers and event_time are stored; event_time defaults to append_time.
SELECT * FROM eventlog.produce('events', 'h', '{"n": 5}', headers => '{"trace": "t1"}',
                               partition => 2, event_time => '2020-01-01 00:00:00+00');
SELECT * FROM eventlog.produce('events', NULL, NULL, partition => 2);   -- a tombstone
SELECT offset_id, key, value, headers, event_time = '2020-01-01 00:00:00+00' AS given_event_time,
       event_time = append_time AS defaulted
  FROM eventlog.read('events', 2, 0);

-- No key: round-robin, so 8 records spread evenly over 4 partitions.
CREATE TEMP TABLE rr AS
    SELECT (eventlog.produce('events', NULL, '{}')).partition FROM generate_series(1, 8);
SELECT partition, count(*) FROM rr GROUP BY 1 ORDER BY 1;

-- produce_batch: positions in input order, consecutive offsets per partition.
SELECT eventlog.create_topic('batch', 2);
SELECT k, eventlog.partition_for_key(k, 2) FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e']) k;
SELECT * FROM eventlog.produce_batch('batch', ARRAY['a', 'b', 'c', 'a', 'd', 'e'],
                                     ARRAY['1', '2', '3', '4', '5', '6']::jsonb[]);
SELECT * FROM eventlog.produce_batch('batch', NULL, ARRAY['7', '8']::jsonb[],
                                     headers => ARRAY['{"h": 1}', NULL]::jsonb[],
                                     partition => 1,
                                     event_time => ARRAY['2021-01-01 00:00:00+00', NULL]::timestamptz[]);
SELECT partition, offset_id, key, value, headers, event_time = '2021-01-01 00:00:00+00' AS given
  FROM eventlog.read('batch', 0, 0) UNION ALL
SELECT partition, offset_id, key, value, headers, event_time = '2021-01-01 00:00:00+00'
  FROM eventlog.read('batch', 1, 0) ORDER BY 1, 2;
SELECT count(*) FROM eventlog.produce_batch('batch', '{}', '{}');    -- empty batch
-- A batch in SQL: many records in one statement.
SELECT count(*) FROM eventlog.produce_batch('batch',
    (SELECT array_agg('k' || i) FROM generate_series(1, 1000) i),
    (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, 1000) i));
SELECT count(*) FROM (SELECT eventlog.produce('batch', 'k' || i, jsonb_build_object('i', i))
                        FROM generate_series(1, 100) i) s;
SELECT sum(high_watermark) AS offsets_taken FROM eventlog.partitions WHERE topic = 'batch';

-- Transactions: rollback and they never existed; savepoints leave gaps.
BEGIN;
SELECT * FROM eventlog.produce('events', 'x', '"rolled back"', partition => 0);
ROLLBACK;
BEGIN;
SELECT * FROM eventlog.produce('events', 'x', '"kept 1"', partition => 0);
SAVEPOINT s;
SELECT * FROM eventlog.produce('events', 'x', '"savepoint rolled back"', partition => 0);
ROLLBACK TO SAVEPOINT s;
SELECT * FROM eventlog.produce('events', 'x', '"kept 2"', partition => 0);
COMMIT;
SELECT offset_id, value FROM eventlog.read('events', 0, 0) WHERE key = 'x';

-- PREPARE TRANSACTION of a transaction that produced is refused (the
-- test server has max_prepared_transactions > 0).
SHOW max_prepared_transactions;
BEGIN;
SELECT * FROM eventlog.produce('events', 'p', '"prepared"', partition => 0);
PREPARE TRANSACTION 'el_test';
SELECT count(*) AS prepared FROM pg_prepared_xacts;
SELECT count(*) AS stored FROM eventlog.read('events', 0, 0) WHERE key = 'p';
-- A transaction that did not produce can still be prepared.
BEGIN;
SELECT 1;
PREPARE TRANSACTION 'el_test_ok';
COMMIT PREPARED 'el_test_ok';

-- Read-only transactions cannot produce.
BEGIN READ ONLY;
SELECT * FROM eventlog.produce('events', 'r', '{}');
ROLLBACK;

-- Bad input: each a clear error, and the offsets do not move.
SELECT partition, high_watermark FROM eventlog.partitions WHERE topic = 'events' ORDER BY 1;
SELECT e.* FROM (VALUES
    ($$SELECT eventlog.produce(NULL, 'k', '{}')$$),
    ($$SELECT eventlog.produce('nope', 'k', '{}')$$),
    ($$SELECT eventlog.produce('bad name', 'k', '{}')$$),
    ($$SELECT eventlog.produce('events', 'k', '{}', partition => 4)$$),
    ($$SELECT eventlog.produce('events', 'k', '{}', partition => -1)$$),
    ($$SELECT eventlog.produce('events', 'k', '{}', headers => '[1, 2]')$$),
    ($$SELECT eventlog.produce('events', 'k', '{}', headers => '"text"')$$),
    ($$SELECT eventlog.produce('events', 'k', jsonb_build_object('big', repeat('x', 1100000)))$$),
    ($$SELECT eventlog.produce('events', repeat('k', 1100000), '{}')$$),
    ($$SELECT eventlog.produce_batch('events', ARRAY['a'], ARRAY['1', '2']::jsonb[])$$),
    ($$SELECT eventlog.produce_batch('events', NULL, ARRAY['1']::jsonb[], headers => ARRAY['[]']::jsonb[])$$),
    ($$SELECT eventlog.produce_batch('events', NULL, ARRAY['1', '2']::jsonb[], event_time => ARRAY[now()])$$),
    ($$SELECT eventlog.produce_batch('events', NULL, NULL)$$),
    ($$SELECT eventlog.produce_batch('events', NULL, ARRAY[['1'], ['2']]::jsonb[])$$),
    ($$SELECT eventlog.produce_batch('events', NULL, ARRAY['1', '2']::jsonb[], partition => 9)$$),
    ($$SELECT eventlog.produce_batch('events', NULL, ARRAY['1', jsonb_build_object('big', repeat('x', 1100000))])$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
SELECT partition, high_watermark FROM eventlog.partitions WHERE topic = 'events' ORDER BY 1;
-- The size limit is a setting.
SET eventlog.max_record_bytes = '2kB';
SELECT * FROM expect_error($$SELECT eventlog.produce('events', 'k', jsonb_build_object('v', repeat('x', 3000)))$$);
RESET eventlog.max_record_bytes;

-- Only produce writes records: direct writes into a segment are refused,
-- also under session_replication_role = replica (logical replication apply).
SELECT s.table_name AS seg FROM eventlog.segment_catalog s
  JOIN eventlog.topic_catalog t USING (topic_id) WHERE t.name = 'events' AND s.partition = 0 \gset
SELECT e.* FROM (VALUES
    (format('INSERT INTO eventlog_segments.%I VALUES (1000, NULL, NULL, NULL, now(), now())', :'seg')),
    (format('UPDATE eventlog_segments.%I SET value = NULL', :'seg')),
    (format('DELETE FROM eventlog_segments.%I', :'seg')),
    (format('TRUNCATE eventlog_segments.%I', :'seg')),
    (format('COPY eventlog_segments.%I FROM PROGRAM ''echo 1000,,,,2020-01-01,2020-01-01'' (FORMAT csv)', :'seg'))
  ) AS v(sql), LATERAL expect_error(v.sql) e;
SET session_replication_role = replica;
SELECT * FROM expect_error(format('INSERT INTO eventlog_segments.%I VALUES (1000, NULL, NULL, NULL, now(), now())', :'seg'));
RESET session_replication_role;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = ('eventlog_segments.' || :'seg')::regclass ORDER BY 1;
SELECT count(*) AS records_in_partition_0 FROM eventlog.read('events', 0, 0);

-- Privileges: producing needs the topic's produce privilege, reading its
-- consume privilege (sql/privileges.sql has the whole model); without them,
-- 42501 and nothing happens.
CREATE ROLE regress_stranger;
SELECT eventlog.high_watermark('events', 0) AS hw_before \gset
SET ROLE regress_stranger;
SELECT * FROM expect_error($$SELECT eventlog.produce('events', 'k', '{}', partition => 0)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read('events', 0, 0)$$);
RESET ROLE;
SELECT eventlog.high_watermark('events', 0) = :hw_before AS nothing_produced;
SELECT eventlog.grant('events', 'all', 'regress_stranger');
SET ROLE regress_stranger;
SELECT * FROM eventlog.produce('events', 'k', '"by a granted role"', partition => 0);
SELECT offset_id, value FROM eventlog.read('events', 0, 0) WHERE key = 'k';
RESET ROLE;
SELECT eventlog.revoke('events', 'consume', 'regress_stranger');
SET ROLE regress_stranger;
SELECT * FROM expect_error($$SELECT * FROM eventlog.read('events', 1, 0)$$);
RESET ROLE;
SELECT eventlog.revoke('events', 'all', 'regress_stranger');
DROP ROLE regress_stranger;
