--
-- Windowed stream-stream joins: inner, left and outer joins of two topics
-- on equal keys within an interval of event time; unmatched records written
-- when their window closes; replay; privileges; bad input.
-- test/t/092_stream_join.pl checks the results against a reference model.
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SELECT eventlog.create_topic('j_orders', 2);
SELECT eventlog.create_topic('j_payments', 1);
SELECT eventlog.create_topic('j_paid', 1);

-- The join of orders and payments: a payment joins the order of the same
-- id made at most an hour before it; left: an order without a payment is
-- written with NULLs once its hour (and a minute of grace) has passed.
CREATE TABLE order_payments (order_id text, ord jsonb, payment jsonb, ordered_at timestamptz,
                             paid_at timestamptz, o_partition integer, o_offset bigint,
                             p_partition integer, p_offset bigint);
SELECT eventlog.create_join_processor('paid', 'j_orders', 'j_payments', sink_table => 'order_payments',
    before => '0', after => '1 hour', join_type => 'left', allowed_lateness => '1 minute',
    left_event_time => $$(value->>'ts')::timestamptz$$, right_event_time => $$(value->>'ts')::timestamptz$$);
CREATE FUNCTION ord(id text, amount numeric, t text) RETURNS void LANGUAGE sql AS $$
    SELECT NULL FROM eventlog.produce('j_orders', id, jsonb_build_object('amount', amount, 'ts', '2026-01-01 ' || t || '+00'),
                                      partition => (id > 'o2')::int) $$;
CREATE FUNCTION pay(id text, amount numeric, t text) RETURNS void LANGUAGE sql AS $$
    SELECT NULL FROM eventlog.produce('j_payments', id, jsonb_build_object('paid', amount, 'ts', '2026-01-01 ' || t || '+00')) $$;
SELECT ord('o1', 10, '10:00'), ord('o2', 20, '10:05'), ord('o3', 30, '10:10'), ord('o4', 40, '10:20');
-- o3 paid before it was made (outside [order, order + 1 hour]), p9 pays
-- no order, o1 paid twice (both join), o2 paid too late, o4 not paid.
SELECT pay('o3', 30, '10:09'), pay('p9', 1, '10:15'), pay('o1', 4, '10:30'), pay('o1', 6, '10:50'), pay('o2', 20, '11:06');
SELECT eventlog.run_processor('paid');
SELECT order_id, ord->>'amount' AS amount, payment->>'paid' AS paid, ordered_at, paid_at, o_offset, p_offset
  FROM order_payments ORDER BY 1, 5;
SELECT topic, partition, max_event_time, watermark, records, late_records, closed_through
  FROM eventlog.processor_progress('paid');
SELECT name, kind, source_topic, right_topic, sink, lag FROM eventlog.processors;
-- The watermark (the least over the three partitions: 10:05) closes
-- nothing yet.  Orders at 11:30 move the orders' partitions, a payment at
-- 11:25 the payments': the watermark 11:25 closes the windows of the
-- orders before 10:24 (time + 1 hour + 1 minute of grace < 11:25): o2, o3
-- and o4 come out with NULLs, o1 joined.
SELECT ord('o1', 0, '11:30'), ord('o9', 0, '11:30'), pay('x', 0, '11:25');
SELECT eventlog.run_processor('paid');
SELECT order_id, ord->>'amount' AS amount, payment->>'paid' AS paid, ordered_at, paid_at, o_offset, p_offset
  FROM order_payments ORDER BY 1, 4, 5;
-- A payment later than the grace is dropped and counted; one within joins.
SELECT pay('o1', 1, '10:40'), pay('o9', 2, '11:40');
SELECT eventlog.run_processor('paid');
SELECT topic, partition, records, late_records, null_time_records, closed_through
  FROM eventlog.processor_progress('paid');
SELECT order_id, payment->>'paid' AS paid, paid_at FROM order_payments WHERE payment IS NOT NULL ORDER BY 1, 3;
-- State: the records whose window is open, and whether they joined.
SELECT format('eventlog.processor_%s_left', processor_id) AS paid_left
  FROM eventlog.processor_catalog WHERE name = 'paid' \gset
SELECT partition, offset_id, join_key, event_time, matched FROM :paid_left ORDER BY 1, 2;
-- NULL event times are counted, never joined; a NULL or JSON null key
-- never matches (a left join writes the record alone).
SELECT count(*) FROM eventlog.produce('j_orders', 'o5', '{"amount": 1}', partition => 0);
SELECT count(*) FROM eventlog.produce('j_orders', NULL, '{"amount": 2, "ts": "2026-01-01 11:45+00"}', partition => 0);
SELECT count(*) FROM eventlog.produce('j_payments', NULL, '{"paid": 2, "ts": "2026-01-01 11:46+00"}');
SELECT eventlog.run_processor('paid');
SELECT sum(null_time_records) AS null_times FROM eventlog.processor_progress('paid');
SELECT count(*) AS null_key_pairs FROM order_payments WHERE order_id IS NULL AND payment IS NOT NULL;

-- Replay from the beginning: the same rows, none written twice.
CREATE TEMP TABLE first_run AS SELECT * FROM order_payments;
SELECT eventlog.reset_processor('paid');
SELECT eventlog.run_processor('paid');
SELECT eventlog.run_processor('paid');
(SELECT * FROM order_payments EXCEPT ALL SELECT * FROM first_run)
UNION ALL (SELECT * FROM first_run EXCEPT ALL SELECT * FROM order_payments);
SELECT count(*) FROM order_payments;

-- Outer join into a topic, keys as expressions, a symmetric window: both
-- sides' unmatched records come out once their windows close.
SELECT eventlog.create_join_processor('paid_outer', 'j_orders', 'j_payments', sink_topic => 'j_paid',
    within => '5 minutes', join_type => 'outer',
    left_key => $$upper(key)$$, right_key => $$upper(key)$$,
    left_event_time => $$(value->>'ts')::timestamptz$$, right_event_time => $$(value->>'ts')::timestamptz$$);
SELECT eventlog.run_processor('paid_outer');
SELECT eventlog.run_processor('paid_outer');
SELECT key, value->'left'->>'amount' AS amount, value->'right'->>'paid' AS paid, value->>'left_time' AS left_time,
       value->>'right_time' AS right_time, event_time
  FROM eventlog.read('j_paid', 0, 0) ORDER BY offset_id;

-- Inner join, within zero: only equal times; numeric keys of two types
-- compare as numbers.
SELECT eventlog.create_topic('j_a', 1);
SELECT eventlog.create_topic('j_b', 1);
CREATE TABLE ab (k text, a jsonb, b jsonb, at timestamptz, bt timestamptz, ap integer, ao bigint, bp integer, bo bigint);
SELECT eventlog.create_join_processor('ab', 'j_a', 'j_b', 'ab', within => '0',
    left_key => $$(value->>'n')::integer$$, right_key => $$(value->>'n')::numeric$$);
SELECT count(*) FROM eventlog.produce_batch('j_a', ARRAY['a', 'a', 'a'], ARRAY['{"n": 1}', '{"n": 2}', '{"n": null}']::jsonb[],
                                            event_time => ARRAY['2026-01-01 10:00+00', '2026-01-01 10:00+00', '2026-01-01 10:00+00']::timestamptz[]);
SELECT count(*) FROM eventlog.produce_batch('j_b', ARRAY['b', 'b', 'b'], ARRAY['{"n": 1.0}', '{"n": 2}', '{"n": null}']::jsonb[],
                                            event_time => ARRAY['2026-01-01 10:00+00', '2026-01-01 10:00:01+00', '2026-01-01 10:00+00']::timestamptz[]);
SELECT eventlog.run_processor('ab');
SELECT k, a, b, at, bt FROM ab;

-- A step rolled back is undone, positions and sink alike.
SELECT ord('o7', 70, '11:50'), pay('o7', 70, '11:51');
BEGIN;
SELECT eventlog.run_processor('paid');
SELECT count(*) FROM order_payments WHERE order_id = 'o7';
ROLLBACK;
SELECT count(*) FROM order_payments WHERE order_id = 'o7';
SELECT name, lag FROM eventlog.processors WHERE name = 'paid';
SELECT eventlog.run_processor('paid');
SELECT count(*) FROM order_payments WHERE order_id = 'o7';

-- Privileges: consume on both topics to create; members of the owner to
-- run, reset, drop; the step runs as the owner.
CREATE ROLE join_owner;
CREATE ROLE join_other;
GRANT USAGE ON SCHEMA public TO join_owner, join_other;
GRANT SELECT, INSERT ON ab TO join_owner;
SELECT eventlog.grant('j_a', 'consume', 'join_owner');
SET ROLE join_owner;
SELECT eventlog.create_join_processor('theirs', 'j_a', 'j_b', 'ab', within => '1 s');
RESET ROLE;
SELECT eventlog.grant('j_b', 'consume', 'join_owner');
SET ROLE join_owner;
SELECT eventlog.create_join_processor('theirs', 'j_a', 'j_b', 'ab', within => '1 s', join_type => 'outer');
SELECT eventlog.create_join_processor('theirs2', 'j_a', 'j_b', 'order_payments', within => '1 s');
SET ROLE join_other;
SELECT eventlog.run_processor('theirs');
SELECT eventlog.reset_processor('theirs');
SELECT eventlog.drop_processor('theirs');
RESET ROLE;
SET SESSION AUTHORIZATION join_owner;
SELECT eventlog.run_processor('theirs');
RESET SESSION AUTHORIZATION;
-- Another owner's buffers are not readable, the progress is.
SET ROLE join_other;
SELECT format('eventlog.processor_%s_left', processor_id) AS theirs_left,
       format('eventlog.processor_%s_progress', processor_id) AS theirs_progress
  FROM eventlog.processor_catalog WHERE name = 'theirs' \gset
SELECT has_table_privilege(:'theirs_left', 'SELECT') AS buffer_readable,
       has_table_privilege(:'theirs_progress', 'SELECT') AS progress_readable;
RESET ROLE;
SELECT eventlog.drop_processor('theirs');

-- A topic dropped under a join.
SELECT eventlog.create_topic('j_gone', 1);
SELECT eventlog.create_join_processor('orphan', 'j_a', 'j_gone', 'ab', within => '1 s');
SELECT eventlog.drop_topic('j_gone');
SELECT eventlog.run_processor('orphan');
SELECT eventlog.drop_processor('orphan');

-- Bad input, leaving nothing behind.
SELECT eventlog.create_topic('j_bin', 1, format => 'binary');
CREATE TABLE narrow (k text);
CREATE TEMP TABLE before AS
    SELECT (SELECT count(*) FROM eventlog.processor_catalog) AS processors,
           (SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace) AS relations,
           (SELECT count(*) FROM eventlog.group_catalog) AS groups;
SELECT eventlog.create_join_processor('paid', 'j_a', 'j_b', 'ab', within => '1 s');
SELECT eventlog.create_join_processor('x y', 'j_a', 'j_b', 'ab', within => '1 s');
SELECT eventlog.create_join_processor(NULL, 'j_a', 'j_b', 'ab', within => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', NULL, 'ab', within => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '1 s', left_key => NULL);
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '1 s', allowed_lateness => NULL);
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', within => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', sink_topic => 'j_paid', within => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', before => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '-1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '1 month');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '1 s', join_type => 'right');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '1 s', allowed_lateness => '-1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_a', 'ab', within => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'nope', 'ab', within => '1 s');
SELECT eventlog.create_join_processor('x', 'nope', 'j_b', 'ab', within => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', sink_topic => 'nope', within => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_bin', 'ab', within => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'narrow', within => '1 s');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '1 s', left_key => 'key,, 1');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '1 s', right_key => 'no_such_column');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '1 s', right_key => 'jsonb_array_elements(value)');
SELECT eventlog.create_join_processor('x', 'j_a', 'j_b', 'ab', within => '1 s', left_event_time => 'value');
SELECT eventlog._register_join_processor(NULL);
SELECT eventlog._register_join_processor('{"name": "x", "source_topic": "j_a"}');
SELECT (SELECT count(*) FROM eventlog.processor_catalog) AS processors,
       (SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace) AS relations,
       (SELECT count(*) FROM eventlog.group_catalog) AS groups
EXCEPT SELECT * FROM before;

-- Event times too near either end of timestamptz's range for the join's
-- intervals count as records without one: no step fails on them, and the
-- records after them join.  Intervals over 1,000 years are refused.
SELECT eventlog.create_topic('jx_l', 1);
SELECT eventlog.create_topic('jx_r', 1);
CREATE TABLE jx_sink (key text, lv jsonb, rv jsonb, lt timestamptz, rt timestamptz, lp int, lo bigint, rp int, ro bigint);
SELECT eventlog.create_join_processor('jx', 'jx_l', 'jx_r', 'jx_sink', within => '1 hour');
SELECT count(*) FROM eventlog.produce_batch('jx_l', ARRAY['a', 'b'], ARRAY['{}', '{}']::jsonb[],
    event_time => ARRAY['294276-12-31 23:59:59.999999+00', '2026-01-01 00:00:00+00']::timestamptz[]);
SELECT count(*) FROM eventlog.produce_batch('jx_r', ARRAY['a', 'b'], ARRAY['{}', '{}']::jsonb[],
    event_time => ARRAY['294276-12-31 23:59:59.999999+00', '2026-01-01 00:10:00+00']::timestamptz[]);
SELECT eventlog.run_processor('jx');
SELECT key, lt AT TIME ZONE 'UTC' AS lt, rt AT TIME ZONE 'UTC' AS rt FROM jx_sink;
SELECT topic, records, null_time_records FROM eventlog.processor_progress('jx') WHERE partition = 0 ORDER BY topic;
SELECT eventlog.drop_processor('jx');
SELECT eventlog.create_join_processor('jx_long', 'jx_l', 'jx_r', 'jx_sink', within => '8760001 hours');
DROP TABLE jx_sink;
SELECT eventlog.drop_topic('jx_l');
SELECT eventlog.drop_topic('jx_r');

-- Dropping join processors removes their state and their groups on both
-- topics, leaves their sinks.
SELECT eventlog.drop_processor(name) FROM eventlog.processors ORDER BY name;
SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace AND relname ~ '^processor_[0-9]+_';
SELECT count(*) FROM eventlog.group_catalog WHERE group_name LIKE 'processor:%';
SELECT count(*) FROM eventlog.group_offsets WHERE group_name LIKE 'processor:%';
SELECT count(*) > 0 AS sink_kept FROM order_payments;
SELECT eventlog.revoke('j_a', 'consume', 'join_owner');
SELECT eventlog.revoke('j_b', 'consume', 'join_owner');
REVOKE ALL ON ab FROM join_owner;
REVOKE USAGE ON SCHEMA public FROM join_owner, join_other;
DROP ROLE join_owner;
DROP ROLE join_other;
