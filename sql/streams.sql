--
-- Stream processors: stateless (filter/map into a table or a topic) and
-- windowed aggregates (tumbling, hopping, session; emit final and changes;
-- lateness, late-record policies, out-of-orderness, NULL event times; sink
-- tables and topics), replay, privileges, bad input.
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SELECT eventlog.create_topic('clicks', 2);
SELECT eventlog.create_topic('big_clicks', 1);

-- A map into a table: filter and project, joining an ordinary table.
CREATE TABLE users (id text PRIMARY KEY, country text);
INSERT INTO users VALUES ('u1', 'fr'), ('u2', 'de');
CREATE TABLE click_rows (uid text, country text, amount numeric);
SELECT eventlog.create_processor('enrich', 'clicks', sink_table => 'click_rows',
    select_list => $$key, (SELECT u.country FROM public.users u WHERE u.id = record.key), (value->>'amount')::numeric$$,
    where_clause => $$(value->>'amount')::numeric >= 10$$);
SELECT count(*) FROM eventlog.produce_batch('clicks', ARRAY['u1', 'u2', 'u1', 'u3'],
    ARRAY['{"amount": 5}', '{"amount": 10}', '{"amount": 20}', '{"amount": 30}']::jsonb[]);
SELECT eventlog.run_processor('enrich');
SELECT * FROM click_rows ORDER BY amount;
-- Nothing new: nothing read, nothing written.
SELECT eventlog.run_processor('enrich');
SELECT count(*) FROM click_rows;
-- The processor is a consumer group of its source: lag shows.
SELECT count(*) FROM eventlog.produce('clicks', 'u2', '{"amount": 50}');
SELECT name, kind, source_topic, group_name, sink, lag FROM eventlog.processors ORDER BY name;
-- A step rolled back is undone, positions and sink alike.
BEGIN;
SELECT eventlog.run_processor('enrich');
ROLLBACK;
SELECT name, lag FROM eventlog.processors;
SELECT eventlog.run_processor('enrich', max_records => 1);
SELECT count(*) FROM click_rows;

-- A map into a topic, keyed and timed by expressions.
SELECT eventlog.create_processor('bigger', 'clicks', sink_topic => 'big_clicks',
    key => $$value->>'amount'$$, value => $$jsonb_build_object('user', key)$$,
    where_clause => $$(value->>'amount')::numeric > 15$$, start_from => 'earliest');
SELECT eventlog.run_processor('bigger');
SELECT key, value FROM eventlog.read('big_clicks', 0, 0) ORDER BY offset_id;

-- Tumbling windows of 1 minute over event time, count and sum by key,
-- emitted when they close, 30 seconds of grace.
SELECT eventlog.create_topic('orders', 1);
CREATE TABLE orders_per_minute (window_start timestamptz, window_end timestamptz, customer text,
                                n bigint, total numeric, smallest numeric, largest numeric, mean numeric);
SELECT eventlog.create_window_processor('opm', 'orders', 'orders_per_minute', size => '1 minute',
    aggregates => ARRAY['count(*)', $$sum((value->>'amount')::numeric)$$, $$min((value->>'amount')::numeric)$$,
                        $$max(value->>'amount')$$, $$avg((value->>'amount')::numeric)$$],
    allowed_lateness => '30 seconds', event_time => $$(value->>'ts')::timestamptz$$);
CREATE FUNCTION o(k text, amount numeric, t text) RETURNS void LANGUAGE sql AS $$
    SELECT NULL FROM eventlog.produce('orders', k, jsonb_build_object('amount', amount,
                                      'ts', '2026-01-01 10:' || t || '+00')) $$;
SELECT o('a', 1, '00:05'), o('b', 2, '00:10'), o('a', 3, '00:50'), o('a', 4, '01:10');
SELECT eventlog.run_processor('opm');
-- The watermark (01:10) is not past 10:01:00 + 30 s: nothing closed yet.
SELECT count(*) FROM orders_per_minute;
SELECT partition, max_event_time, watermark, records, late_records, closed_through FROM eventlog.processor_progress('opm');
-- 01:40 closes [10:00, 10:01); a record of 00:20 then is late and dropped.
SELECT o('b', 5, '01:40'), o('a', 100, '00:20'), o('c', NULL, '01:45');
SELECT eventlog.run_processor('opm');
SELECT * FROM orders_per_minute ORDER BY 1, 3;
SELECT partition, records, late_records, null_time_records, closed_through FROM eventlog.processor_progress('opm');
-- A NULL event time (no "ts") is counted, never assigned to a window.
SELECT count(*) FROM eventlog.produce('orders', 'a', '{"amount": 7}');
SELECT eventlog.run_processor('opm');
SELECT partition, records, late_records, null_time_records FROM eventlog.processor_progress('opm');
-- Open windows are state rows.
SELECT format('eventlog.processor_%s_windows', processor_id) AS opm_windows
  FROM eventlog.processor_catalog WHERE name = 'opm' \gset
SELECT window_start, group_key, n_1 FROM :opm_windows ORDER BY 1, 2;

-- Replay from the beginning: the same windows again, overwritten in place.
SELECT eventlog.reset_processor('opm');
SELECT eventlog.run_processor('opm');
SELECT * FROM orders_per_minute ORDER BY 1, 3;

-- Hopping windows of 2 minutes every minute, emit changes: rows as they change.
CREATE TABLE hop (window_start timestamptz, window_end timestamptz, n bigint);
SELECT eventlog.create_window_processor('hop', 'orders', 'hop', size => '2 minutes', window_type => 'hopping',
    advance => '1 minute', group_by => '{}', aggregates => '{count(*)}', emit => 'changes',
    where_clause => $$key <> 'c'$$, event_time => $$(value->>'ts')::timestamptz$$);
SELECT eventlog.run_processor('hop', 3);
SELECT * FROM hop ORDER BY 1;
SELECT eventlog.run_processor('hop');
SELECT * FROM hop ORDER BY 1;

-- Processing time: windows of now, closed by the clock.
CREATE TABLE per_second (window_start timestamptz, window_end timestamptz, k text, n bigint);
SELECT eventlog.create_window_processor('clock', 'orders', 'per_second', size => '1 hour',
    time_mode => 'processing', emit => 'changes');
SELECT eventlog.run_processor('clock');
SELECT k, n, window_end - window_start AS size, window_start <= now() AND now() < window_end AS now_inside
  FROM per_second ORDER BY k;

-- Session windows of clicks (gap 1 minute), three late-record policies and
-- a sink topic, over the same records, run step by step:
--  sess_changes: emit changes; a merge deletes the absorbed sessions' rows
--                and writes the merged one; late records dropped, counted;
--  sess_final:   emit final into a table and a topic; late records sent to
--                the topic late_visits;
--  upd:          tumbling minutes, emit final, late => 'update' with a
--                retention of 3 minutes: a late record updates its closed
--                window (written again) while the window is kept.
SELECT eventlog.create_topic('visits', 1);
SELECT eventlog.create_topic('visit_sessions', 1);
SELECT eventlog.create_topic('late_visits', 1);
CREATE TABLE sessions_changes (session_start timestamptz, session_end timestamptz, visitor text, n bigint);
CREATE TABLE sessions_final (LIKE sessions_changes);
CREATE TABLE visits_per_minute (window_start timestamptz, window_end timestamptz, n bigint);
SELECT eventlog.create_window_processor('sess_changes', 'visits', 'sessions_changes', window_type => 'session',
    gap => '1 minute', emit => 'changes', event_time => $$(value->>'ts')::timestamptz$$);
SELECT eventlog.create_window_processor('sess_final', 'visits', 'sessions_final', window_type => 'session',
    gap => '1 minute', event_time => $$(value->>'ts')::timestamptz$$, sink_topic => 'visit_sessions',
    aggregates => ARRAY['count(*) AS clicks'], late => 'topic', late_topic => 'late_visits');
SELECT eventlog.create_window_processor('upd', 'visits', 'visits_per_minute', size => '1 minute', group_by => '{}',
    event_time => $$(value->>'ts')::timestamptz$$, late => 'update', retention => '3 minutes');
SELECT name, window_type, size, gap, late, late_topic, retention, sink, sink_topic
  FROM eventlog.processors WHERE name IN ('sess_changes', 'sess_final', 'upd') ORDER BY name;
CREATE FUNCTION v(k text, t text) RETURNS void LANGUAGE sql AS $$
    SELECT NULL FROM eventlog.produce('visits', k, jsonb_build_object('ts', '2026-01-01 10:' || t || '+00')) $$;
CREATE FUNCTION steps() RETURNS TABLE (sess_changes bigint, sess_final bigint, upd bigint) LANGUAGE sql AS $$
    SELECT eventlog.run_processor('sess_changes'), eventlog.run_processor('sess_final'), eventlog.run_processor('upd') $$;
CREATE VIEW visit_state AS
    SELECT 'changes' AS sink, * FROM sessions_changes
    UNION ALL SELECT 'final', * FROM sessions_final
    UNION ALL SELECT 'upd', window_start, window_end, NULL, n FROM visits_per_minute;
-- a: 10:00:00, 10:00:30 and 10:02:00 (two sessions); b: 10:00:40.  The
-- watermark (10:02:00) passes 10:00:30 + gap and 10:00:40 + gap: a's first
-- session and b's close (written by emit final) and so does the minute 10:00.
SELECT v('a', '00:00'), v('a', '00:30'), v('b', '00:40'), v('a', '02:00');
SELECT * FROM steps();
SELECT * FROM visit_state ORDER BY 1, 2, 4;
-- 10:01:15 is within gap of 10:00:30 and of 10:02:00: a's sessions merge
-- into one, still open (emit final deletes the row it wrote; emit changes
-- replaces two rows by one).  10:00:50 is late for the sessions (10:00:50 +
-- gap is before the watermark): dropped, or sent to late_visits; for upd it
-- updates the closed minute 10:00 (4 records), and 10:01:15 writes the
-- minute 10:01, closed already.
SELECT v('a', '00:50'), v('a', '01:15');
SELECT * FROM steps();
SELECT * FROM visit_state ORDER BY 1, 2, 4;
-- 10:05:00 closes a's merged session and the minute 10:02; the minutes
-- 10:00 and 10:01 are past their retention (end + 3 minutes): removed.
SELECT v('c', '05:00');
SELECT * FROM steps();
SELECT * FROM visit_state ORDER BY 1, 2, 4;
SELECT format('eventlog.processor_%s_windows', processor_id) AS upd_windows
  FROM eventlog.processor_catalog WHERE name = 'upd' \gset
SELECT window_start, n_1, closed FROM :upd_windows ORDER BY 1;
-- 10:00:10 is too late for all (upd: its minute is gone); 10:02:30 updates
-- upd's closed minute 10:02, and is late for the sessions.
SELECT v('a', '00:10'), v('a', '02:30');
SELECT * FROM steps();
SELECT * FROM visit_state ORDER BY 1, 2, 4;
SELECT name, (SELECT sum(late_records) FROM eventlog.processor_progress(name)) AS late_records
  FROM eventlog.processors WHERE name IN ('sess_changes', 'sess_final', 'upd') ORDER BY name;
-- The late records, as they were; the sessions written to the topic
-- (key: the group value; a merged-away session comes with "deleted").
SELECT offset_id, key, value FROM eventlog.read('late_visits', 0, 0) ORDER BY offset_id;
SELECT offset_id, key, value, event_time FROM eventlog.read('visit_sessions', 0, 0) ORDER BY offset_id;
DROP VIEW visit_state;
DROP FUNCTION steps();

-- Privileges: a step runs as the processor's owner, and only its members
-- run, reset or drop it.
CREATE ROLE stream_owner;
CREATE ROLE stream_other;
GRANT USAGE ON SCHEMA public TO stream_owner, stream_other;
GRANT SELECT, INSERT, UPDATE ON click_rows TO stream_owner;
SET ROLE stream_owner;
SELECT eventlog.create_processor('theirs', 'clicks', sink_table => 'click_rows', select_list => 'key, NULL, 0');
RESET ROLE;
SELECT eventlog.grant('clicks', 'consume', 'stream_owner');
SET ROLE stream_owner;
SELECT eventlog.create_processor('theirs', 'clicks', sink_table => 'click_rows',
    select_list => 'key, current_user, 0', where_clause => $$key = 'u3'$$);
SET ROLE stream_other;
SELECT eventlog.run_processor('theirs');
SELECT eventlog.drop_processor('theirs');
SELECT eventlog.reset_processor('theirs');
RESET ROLE;
-- A superuser runs it as the owner too, in a security-restricted operation
-- (streams_owner_gate: the owner's SQL cannot take the superuser's role
-- back); so does a session of the owner.
SELECT eventlog.run_processor('theirs');
SET SESSION AUTHORIZATION stream_owner;
SELECT eventlog.run_processor('theirs');
RESET SESSION AUTHORIZATION;
SELECT uid, country FROM click_rows WHERE amount = 0;
SELECT current_user = session_user AS role_restored;
-- The catalog and another owner's window state are not writable.
SET ROLE stream_owner;
UPDATE eventlog.processor_catalog SET owner = 'postgres'::regrole;
SELECT * FROM :opm_windows;
SELECT eventlog.drop_processor('theirs');
RESET ROLE;

-- A transaction may run two steps (its own lock does not stop it); steps
-- of two sessions are in test/isolation/specs/processor_steps.spec.
BEGIN;
SELECT eventlog.run_processor('opm');
SELECT eventlog.run_processor('opm', wait => false) IS NOT NULL AS second_step_runs;
COMMIT;

-- An expression failing mid-batch fails the step: nothing read, nothing written.
CREATE TABLE amounts (a numeric);
SELECT eventlog.create_processor('fragile', 'clicks', sink_table => 'amounts',
    select_list => $$100 / (value->>'amount')::numeric$$);
SELECT count(*) FROM eventlog.produce('clicks', 'u1', '{"amount": 0}', partition => 0);
SELECT eventlog.run_processor('fragile');
SELECT count(*) FROM amounts;
SELECT name, lag FROM eventlog.processors WHERE name = 'fragile';
-- A window processor evaluates its aggregates only over the records its
-- filter keeps: the record of amount 0 is filtered out, not divided by.
CREATE TABLE guarded (window_start timestamptz, window_end timestamptz, s numeric);
SELECT eventlog.create_window_processor('guarded', 'clicks', 'guarded', size => '1 hour', group_by => '{}',
    aggregates => ARRAY[$$sum(100 / (value->>'amount')::numeric)$$],
    where_clause => $$(value->>'amount')::numeric <> 0$$, time_mode => 'processing', emit => 'changes');
SELECT eventlog.run_processor('guarded') > 0 AS read;
SELECT (SELECT count(*) FROM guarded) AS windows, (SELECT sum(records) FROM eventlog.processor_progress('guarded')) AS records;
SELECT eventlog.drop_processor('guarded');
DROP TABLE guarded;
-- A sink whose trigger skips updates keeps one row per window: the step
-- looks for the window's row in the sink, not among the rows it updated.
CREATE TABLE firsts (window_start timestamptz, window_end timestamptz, n bigint);
CREATE FUNCTION keep_first() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER keep_first BEFORE UPDATE ON firsts FOR EACH ROW EXECUTE FUNCTION keep_first();
SELECT eventlog.create_window_processor('firsts', 'clicks', 'firsts', size => '36500 days', group_by => '{}',
    emit => 'changes');
SELECT eventlog.run_processor('firsts', 1), eventlog.run_processor('firsts');
SELECT n FROM firsts;
SELECT eventlog.drop_processor('firsts');
DROP TABLE firsts;
DROP FUNCTION keep_first();

-- The source topic dropped under a processor.
SELECT eventlog.create_topic('gone', 1);
CREATE TABLE gone_rows (k text);
SELECT eventlog.create_processor('orphan', 'gone', sink_table => 'gone_rows', select_list => 'key');
SELECT eventlog.drop_topic('gone');
SELECT eventlog.run_processor('orphan');
SELECT eventlog.drop_processor('orphan');

-- Bad input, leaving nothing behind.
CREATE TEMP TABLE before AS
    SELECT (SELECT count(*) FROM eventlog.processor_catalog) AS processors,
           (SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace) AS relations,
           (SELECT count(*) FROM eventlog.group_catalog) AS groups;
SELECT eventlog.create_processor('enrich', 'clicks', sink_table => 'click_rows', select_list => 'key, NULL, 0');
SELECT eventlog.create_processor('x y', 'clicks', sink_table => 'click_rows', select_list => 'key, NULL, 0');
SELECT eventlog.create_processor(repeat('x', 101), 'clicks', sink_table => 'click_rows', select_list => 'key, NULL, 0');
SELECT eventlog.create_processor('star', 'clicks', sink_table => 'click_rows');
SELECT eventlog.create_processor('nosink', 'clicks');
SELECT eventlog.create_processor('two', 'clicks', sink_table => 'click_rows', sink_topic => 'big_clicks');
SELECT eventlog.create_processor('nope', 'nope', sink_table => 'click_rows', select_list => 'key, NULL, 0');
SELECT eventlog.create_processor('nope', 'clicks', sink_topic => 'nope');
SELECT eventlog.create_processor('syntax', 'clicks', sink_table => 'click_rows', select_list => 'key,, 1');
SELECT eventlog.create_processor('column', 'clicks', sink_table => 'click_rows', select_list => 'no_such_column');
SELECT eventlog.create_processor('inject', 'clicks', sink_table => 'click_rows', where_clause => 'true; DROP TABLE users');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 month');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '0');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', advance => '1 minute', window_type => 'sliding');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', window_type => 'hopping');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', advance => '2 minutes', window_type => 'hopping');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', aggregates => '{median(1)}');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', aggregates => '{sum(*)}');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', emit => 'sometimes');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', allowed_lateness => '-1 s');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', event_time => 'value');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', aggregates => '{count(key)}', time_mode => 'wall');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{NULL}');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}',
    aggregates => ARRAY[$$sum(jsonb_array_elements_text(value))$$]);
SELECT eventlog.create_window_processor('w', 'orders', 'hop', group_by => '{}');
SELECT eventlog.create_window_processor('w', 'orders', size => '1 minute', group_by => '{}');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', window_type => 'session');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', window_type => 'session', gap => '1 minute');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', window_type => 'session', gap => '-1 minute');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', gap => '1 minute');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', late => 'ignore');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', late => 'topic');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', late_topic => 'late_visits');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', late => 'topic', late_topic => 'orders');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', late => 'topic', late_topic => 'nope');
SELECT eventlog.create_window_processor('w', 'orders', sink_topic => 'nope', size => '1 minute');
SELECT eventlog.create_window_processor('w', 'orders', 'hop', size => '1 minute', group_by => '{}', retention => '-1 s');
SELECT eventlog.create_window_processor('w', 'orders', sink_topic => 'visit_sessions', size => '1 minute',
    aggregates => ARRAY['count(*) AS n', 'sum((value->>''amount'')::numeric) AS n']);
SELECT eventlog.run_processor('nope');
SELECT eventlog.run_processor('opm', 0);
SELECT eventlog.run_processor(NULL);
SELECT eventlog.reset_processor('opm', 'sideways');
SELECT eventlog.drop_processor('nope');
SELECT eventlog._register_processor(NULL);
SELECT (SELECT count(*) FROM eventlog.processor_catalog) AS processors,
       (SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace) AS relations,
       (SELECT count(*) FROM eventlog.group_catalog) AS groups
EXCEPT SELECT * FROM before;

-- Dropping processors removes their state and groups, leaves their sinks.
SELECT eventlog.drop_processor(name) FROM eventlog.processors ORDER BY name;
SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace AND relname ~ '^processor_[0-9]+_';
SELECT count(*) FROM eventlog.group_catalog WHERE group_name LIKE 'processor:%';
SELECT count(*) FROM orders_per_minute;
SELECT eventlog.revoke('clicks', 'consume', 'stream_owner');
REVOKE ALL ON click_rows FROM stream_owner;
REVOKE USAGE ON SCHEMA public FROM stream_owner, stream_other;
DROP ROLE stream_owner;
DROP ROLE stream_other;
