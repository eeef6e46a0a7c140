-- The guided tour that test/demo runs in psql.
\pset footer off
\set QUIET on
\echo
\echo '== pg_eventlog tour =='
\echo
\echo '1. The extension, and its background worker (preloaded):'
CREATE EXTENSION pg_eventlog;
SELECT * FROM eventlog.version_info();
SELECT pid, backend_type FROM pg_stat_activity WHERE backend_type LIKE 'pg_eventlog%';

\echo '2. A topic of 3 partitions, records kept 7 days:'
SELECT eventlog.create_topic('orders', partitions => 3, retention => '7 days');
SELECT topic, partitions, retention FROM eventlog.topics;

\echo '3. Produce: the key picks the partition (Kafka''s murmur2), so one key''s records stay in order:'
SELECT 'customer-' || c AS key, p.partition, p.offset_id
  FROM generate_series(1, 3) c, generate_series(1, 2) n,
       LATERAL eventlog.produce('orders', 'customer-' || c,
                                jsonb_build_object('customer', c, 'order', n)) p
 ORDER BY 2, 3;

\echo '4. Many records in one call (produce_batch):'
SELECT count(*) AS produced
  FROM eventlog.produce_batch('orders',
       (SELECT array_agg('customer-' || (i % 3 + 1)) FROM generate_series(1, 1000) i),
       (SELECT array_agg(jsonb_build_object('bulk', i)) FROM generate_series(1, 1000) i));
SELECT partition, log_start_offset, high_watermark, last_stable_offset, records
  FROM eventlog.partitions WHERE topic = 'orders' ORDER BY partition;

\echo '5. Read a partition from an offset, in offset order:'
SELECT partition, offset_id, key, value FROM eventlog.read('orders', 0, 0, 5);

\echo '6. Replay: reading deletes nothing; the same offsets come back:'
SELECT count(*) AS first_pass FROM eventlog.read('orders', 0, 0, 100000);
SELECT count(*) AS replay FROM eventlog.read('orders', 0, 0, 100000);

\echo '7. The last stable offset: another session produces to partition 1 and stays open 2 s;'
\echo '   records committed after it wait behind it, so no reader can skip it.'
SELECT eventlog.high_watermark('orders', 1) AS held_offset \gset
\! psql -X -q -c "BEGIN; SELECT eventlog.produce('orders', NULL, '\"late\"', partition => 1); SELECT pg_sleep(2); COMMIT;" >/dev/null &
SELECT pg_sleep(0.5) \gset
SELECT * FROM eventlog.produce('orders', NULL, '"quick"', partition => 1);
SELECT partition, high_watermark, last_stable_offset, stable_offset_holder_pid IS NOT NULL AS held_back
  FROM eventlog.partitions WHERE topic = 'orders' AND partition = 1;
SELECT count(*) AS readable_now FROM eventlog.read('orders', 1, :held_offset);
SELECT pg_sleep(2) \gset
SELECT offset_id, value FROM eventlog.read('orders', 1, :held_offset);

\echo '8. Where records live: plain tables the extension owner can query (read-only):'
SELECT s.partition, s.table_name FROM eventlog.segment_catalog s
  JOIN eventlog.topic_catalog t USING (topic_id) WHERE t.name = 'orders' ORDER BY 1;
SELECT count(*) AS rows_in_partition_0 FROM eventlog_segments.seg_1_0_0;

\echo '9. Find an offset by time (Kafka''s offsetsForTimes):'
SELECT eventlog.offset_for_time('orders', 0, now() - interval '1 hour') AS first_offset_in_last_hour;

\echo '10. Consumer groups: billing consumes in transactions; shipping, another group, sees everything too:'
BEGIN;
SELECT partition, count(*) AS records, max(offset_id) AS up_to FROM eventlog.poll('orders', 'billing', 1000, partitions => 3) GROUP BY 1 ORDER BY 1;
COMMIT;
SELECT count(*) AS billing_second_poll FROM eventlog.poll('orders', 'billing', 1000, partitions => 3);
SELECT count(*) AS shipping_first_poll FROM eventlog.poll('orders', 'shipping', 10000, partitions => 3);
SELECT group_name, partition, committed_offset, lag FROM eventlog.consumer_groups ORDER BY 1, 2;

\echo '11. Members split a group''s partitions (work outside the database, commit afterwards):'
SELECT count(*) AS worker_1_got FROM eventlog.poll('orders', 'mailer', 10, member => 'worker-1');
SELECT count(*) AS worker_2_got FROM eventlog.poll('orders', 'mailer', 10, member => 'worker-2');
SELECT partition, owner_member, generation FROM eventlog.consumer_groups
 WHERE group_name = 'mailer' ORDER BY 1;
SELECT * FROM eventlog.commit('orders', 'mailer', 'worker-2');

\echo '12. Waking consumers: a long poll sleeps until a record commits (another session produces in 1 s);'
\echo '    LISTENers of the topic''s channel hear of it from the notifier, not from the producer:'
SELECT format('LISTEN %I', eventlog.channel('orders')) \gexec
\! (sleep 1; psql -X -q -c "SELECT eventlog.produce('orders', 'k-1', '{\"woke\": true}', partition => 2)" >/dev/null) &
SELECT partition, offset_id, value FROM eventlog.poll('orders', 'billing', 10, partitions => 3, wait => '10 seconds');
SELECT pg_sleep(0.2) \gset

\echo '13. Change capture: every change of a table becomes a record, in the writing transaction;'
\echo '    apply_changes keeps a mirror in step as a consumer group:'
CREATE TABLE shop (id integer PRIMARY KEY, price numeric(10,2), name text);
INSERT INTO shop VALUES (1, 9.99, 'tea'), (2, 4.50, 'cake');
SELECT eventlog.capture('shop', 'shop.changes', snapshot => true) AS snapshot_rows;
UPDATE shop SET price = 10.49 WHERE id = 1;
DELETE FROM shop WHERE id = 2;
INSERT INTO shop VALUES (3, 2.00, 'biscuit');
SELECT offset_id, key, value ->> 'op' AS op, value -> 'after' AS after
  FROM eventlog.read('shop.changes', 0, 0);
CREATE TABLE shop_mirror (LIKE shop INCLUDING ALL);
SELECT eventlog.apply_changes('shop.changes', 'mirror', 'shop_mirror') AS applied;
SELECT * FROM shop_mirror ORDER BY id;

\echo '14. Privileges per topic: its owner grants produce and consume (docs/security.md);'
\echo '    a role without them is refused (42501) and nothing happens:'
CREATE ROLE demo_web;
SELECT eventlog.grant('orders', 'produce', 'demo_web');
SELECT * FROM eventlog.topic_privileges WHERE topic = 'orders';
SET ROLE demo_web;
SELECT * FROM eventlog.produce('orders', 'o-9', '{"by": "demo_web"}');
\set ON_ERROR_STOP off
SELECT count(*) FROM eventlog.read('orders', 0, 0);
\set ON_ERROR_STOP on
RESET ROLE;

\echo '15. A maintenance worker runs in this database: it rolls segments and applies retention:'
SELECT database, pid IS NOT NULL AS worker_running, segments_rolled, segments_removed
  FROM eventlog.maintenance WHERE database = current_database();

\echo '16. A stream processor: orders per minute per customer (1-minute windows of event time,'
\echo '    10 s of grace, updated as orders come: emit changes), run by the processor worker'
\echo '    (nobody calls run_processor); the sink is an ordinary table:'
SELECT eventlog.create_topic('shop.orders', 2);
CREATE TABLE orders_per_minute (window_start timestamptz, window_end timestamptz,
                                customer text, orders bigint, amount numeric);
SELECT eventlog.create_window_processor('orders_per_minute', 'shop.orders', 'orders_per_minute',
    size => '1 minute', allowed_lateness => '10 seconds', emit => 'changes',
    event_time => $$(value->>'at')::timestamptz$$,
    aggregates => ARRAY['count(*)', $$sum((value->>'amount')::numeric)$$]);
SELECT count(*) AS orders_produced FROM eventlog.produce_batch('shop.orders',
    ARRAY['alice', 'bob', 'alice', 'carol', 'alice', 'bob'],
    ARRAY['{"amount": 12.50, "at": "2026-12-02 10:00:05+00"}', '{"amount": 3.20, "at": "2026-12-02 10:00:17+00"}',
          '{"amount": 8.00, "at": "2026-12-02 10:00:41+00"}', '{"amount": 99.90, "at": "2026-12-02 10:01:02+00"}',
          '{"amount": 1.10, "at": "2026-12-02 10:01:30+00"}', '{"amount": 4.75, "at": "2026-12-02 10:01:59+00"}']::jsonb[]);
-- The worker steps the processor within milliseconds of the commit; wait for it (5 s at most).
DO $$
BEGIN
    FOR i IN 1 .. 100 LOOP
        EXIT WHEN (SELECT lag FROM eventlog.processors WHERE name = 'orders_per_minute') = 0;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;
SET timezone = 'UTC';
SELECT window_start, customer, orders, amount FROM orders_per_minute ORDER BY 1, 2;
RESET timezone;
SELECT name, kind, source_topic, emit, lag, enabled, failures FROM eventlog.processors;
SELECT pid, backend_type FROM pg_stat_activity WHERE backend_type = 'pg_eventlog processors';

\echo
\echo 'Tour done.  SQL reference: docs/reference.md; design: docs/design.md; streams: docs/streams.md.'
