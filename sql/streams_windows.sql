--
-- Window processors: sliding windows (emit final and changes, late records
-- to a topic or updating kept windows, replay), aggregates with a state of
-- their own (any aggregate with a combine function), the open windows
-- (eventlog.processor_windows), privileges and bad input.
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SELECT eventlog.create_topic('taps', 1);
SELECT eventlog.create_topic('slide_out', 1);
SELECT eventlog.create_topic('late_taps', 1);
CREATE FUNCTION tap(k text, amount int, t text) RETURNS void LANGUAGE sql AS $$
    SELECT NULL FROM eventlog.produce('taps', k, jsonb_build_object('amount', amount, 'ts', '2026-01-01 10:00:00+00'::timestamptz + t::interval)) $$;

-- Sliding windows of 10 seconds with 2 seconds of grace: a window ending
-- at each record, [t - 10 s, t] (both ends in), and one starting just
-- after it, [t + 1 µs, t + 10.000001 s], when a later record is in it
-- (streams_sliding_right has the edge cases).  slide: emit final,
-- into a table and a topic, late records into late_taps; slide_upd: emit
-- changes, late records update the closed windows kept for a minute.
CREATE TABLE slide_final (window_start timestamptz, window_end timestamptz, k text, n bigint, total bigint);
CREATE TABLE slide_changes (LIKE slide_final);
SELECT eventlog.create_window_processor('slide', 'taps', 'slide_final', size => '10 seconds', window_type => 'sliding',
    aggregates => ARRAY['count(*)', $$sum((value->>'amount')::int) AS total$$], allowed_lateness => '2 seconds',
    event_time => $$(value->>'ts')::timestamptz$$, sink_topic => 'slide_out', late => 'topic', late_topic => 'late_taps');
SELECT eventlog.create_window_processor('slide_upd', 'taps', 'slide_changes', size => '10 seconds', window_type => 'sliding',
    aggregates => ARRAY['count(*)', $$sum((value->>'amount')::int) AS total$$], allowed_lateness => '2 seconds',
    event_time => $$(value->>'ts')::timestamptz$$, emit => 'changes', late => 'update', retention => '1 minute');
SELECT name, window_type, size, advance, emit, late, retention FROM eventlog.processors ORDER BY name;
CREATE FUNCTION slide_steps() RETURNS TABLE (slide bigint, slide_upd bigint) LANGUAGE sql AS $$
    SELECT eventlog.run_processor('slide'), eventlog.run_processor('slide_upd') $$;
CREATE VIEW slide_state AS
    SELECT 'final' AS sink, window_start::time AS ws, window_end::time AS we, k, n, total FROM slide_final
    UNION ALL SELECT 'changes', window_start::time, window_end::time, k, n, total FROM slide_changes;
-- a at 0 s, 5 s and 12 s; b at 7 s.  The watermark (12 s) closes the
-- windows ending before 10 s: a's at 0 s and 5 s, b's at 7 s; a's right
-- windows after 0 s (= 5 s) and 5 s (= 12 s) are open; there are none
-- after a's 12 s or b's 7 s (nothing after them).
SELECT tap('a', 1, '0 s'), tap('a', 2, '5 s'), tap('b', 4, '7 s'), tap('a', 8, '12 s');
SELECT * FROM slide_steps();
SELECT * FROM slide_state ORDER BY sink, we, k;
SELECT window_start::time, window_end::time, group_key, closed, aggregates FROM eventlog.processor_windows('slide');
-- a at 3 s comes after its own window closed (3 s + 2 s <= 12 s), but a's
-- window ending at 12 s is open and holds it: [2 s, 12 s] = 5, 12 and 3 s;
-- so does the right window after 0 s (= 3 and 5 s), and it makes its own
-- right window, [3.000001 s, 13.000001 s] = 5 and 12 s.
-- a at -20 s can be in no open window (-20 + 10 + 2 <= 12): late, to
-- late_taps for slide; slide_upd keeps closed windows a minute, so it
-- makes a's window ending at -20 s, closed at once, and writes it.
SELECT tap('a', 16, '3 s'), tap('a', 32, '-20 s');
SELECT * FROM slide_steps();
SELECT * FROM slide_state ORDER BY sink, we, k;
SELECT key, value->>'amount' AS amount FROM eventlog.read('late_taps', 0, 0);
SELECT partition, watermark::time, records, late_records, closed_through::time FROM eventlog.processor_progress('slide');
SELECT partition, watermark::time, records, late_records, closed_through::time FROM eventlog.processor_progress('slide_upd');
-- b at 30 s: the watermark closes every window but b's last.
SELECT tap('b', 64, '30 s');
SELECT * FROM slide_steps();
SELECT * FROM slide_state ORDER BY sink, we, k;
SELECT window_start::time, window_end::time, group_key, closed, aggregates FROM eventlog.processor_windows('slide');
SELECT window_end::time, group_key, closed, aggregates FROM eventlog.processor_windows('slide_upd');
SELECT key, value - 'window_start' - 'window_end' AS value, (value->>'window_end')::timestamptz::time AS we
  FROM eventlog.read('slide_out', 0, 0) ORDER BY offset_id;
-- The record buffer keeps what a window that may change needs: slide's
-- records after 30 s - 10 s - 2 s, slide_upd's after a minute more.
SELECT (SELECT count(*) FROM eventlog.processor_windows('slide')) AS slide_windows,
       (SELECT count(*) FROM eventlog.processor_windows('slide_upd')) AS slide_upd_windows;
-- A replay from offset 0 computes the same windows again.
CREATE TEMP TABLE slide_before AS SELECT * FROM slide_state;
SELECT eventlog.reset_processor('slide'), eventlog.reset_processor('slide_upd');
SELECT * FROM slide_steps();
(SELECT * FROM slide_state EXCEPT ALL SELECT * FROM slide_before)
UNION ALL (SELECT * FROM slide_before EXCEPT ALL SELECT * FROM slide_state);

-- Aggregates with a state of their own: any aggregate of one argument with
-- a combine function, here stddev_samp of double precision, min of
-- timestamps, bool_and, and one of the user's; tumbling minutes, emitted
-- as they change.  avg of a double precision is avg of numbers, as before.
CREATE FUNCTION int4_or_state(integer, integer) RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT coalesce($1, 0) | coalesce($2, 0)';
CREATE AGGREGATE any_bits(integer) (SFUNC = int4_or_state, STYPE = integer, COMBINEFUNC = int4_or_state);
CREATE TABLE tap_stats (window_start timestamptz, window_end timestamptz, n bigint, sd numeric(10, 3),
                        first_ts timestamptz, all_small boolean, bits integer, mean numeric(10, 3));
SELECT eventlog.create_window_processor('stats', 'taps', 'tap_stats', size => '1 minute', group_by => '{}',
    aggregates => ARRAY['count(*)', $$stddev_samp((value->>'amount')::float8)$$, $$min((value->>'ts')::timestamptz)$$,
                        $$bool_and((value->>'amount')::int < 50)$$, $$public.any_bits((value->>'amount')::int)$$,
                        $$avg((value->>'amount')::float8)$$],
    event_time => $$(value->>'ts')::timestamptz$$, emit => 'changes', sink_topic => 'slide_out');
SELECT agg_funcs, agg_names FROM eventlog.processor_catalog WHERE name = 'stats';
SELECT eventlog.run_processor('stats', 2), eventlog.run_processor('stats');
SELECT window_start::time, n, sd, first_ts::time, all_small, bits, mean FROM tap_stats ORDER BY window_start;
SELECT window_start::time, closed, aggregates FROM eventlog.processor_windows('stats');
SELECT value - 'window_start' - 'window_end' AS value FROM eventlog.read('slide_out', 0, 0) WHERE value ? 'sd' ORDER BY offset_id;
-- The same over sessions, whose records and sessions combine as states.
CREATE TABLE tap_sessions (window_start timestamptz, window_end timestamptz, k text, n bigint, first_ts timestamptz, bits integer);
SELECT eventlog.create_window_processor('stat_sessions', 'taps', 'tap_sessions', window_type => 'session', gap => '6 seconds',
    aggregates => ARRAY['count(*)', $$min((value->>'ts')::timestamptz)$$, $$public.any_bits((value->>'amount')::int)$$],
    event_time => $$(value->>'ts')::timestamptz$$, emit => 'changes');
SELECT eventlog.run_processor('stat_sessions', 3), eventlog.run_processor('stat_sessions');
SELECT window_start::time, window_end::time, k, n, first_ts::time, bits FROM tap_sessions ORDER BY window_start, k;

-- Who sees the open windows: roles with the privileges of the owner.
CREATE ROLE windows_other;
SET ROLE windows_other;
SELECT * FROM eventlog.processor_windows('slide');
RESET ROLE;
CREATE TABLE map_rows (k text);
SELECT eventlog.create_processor('tap_map', 'taps', sink_table => 'map_rows', select_list => 'key');
SELECT * FROM eventlog.processor_windows('tap_map');
SELECT * FROM eventlog.processor_windows('nope');
SELECT * FROM eventlog.processor_windows(NULL);
SELECT eventlog.drop_processor('tap_map');

-- Bad input, leaving nothing behind.
CREATE TEMP TABLE before AS
    SELECT (SELECT count(*) FROM eventlog.processor_catalog) AS processors,
           (SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace) AS relations,
           (SELECT count(*) FROM pg_proc WHERE pronamespace = 'eventlog'::regnamespace) AS functions,
           (SELECT count(*) FROM eventlog.group_catalog) AS groups;
CREATE TABLE w3 (window_start timestamptz, window_end timestamptz, x numeric);
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', window_type => 'sliding', advance => '5 s', group_by => '{}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', window_type => 'sliding', group_by => '{}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '1 month', window_type => 'sliding', group_by => '{}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', window_type => 'sliding', gap => '1 s', group_by => '{}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', window_type => 'slide', group_by => '{}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{jsonb_agg(value)}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{lower(key)}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{string_agg(key)}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{"max(key IS NULL)"}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{"any_bits(1)"}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{"nope.any_bits(1)"}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{bit_or(no_such_column)}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{count()}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{"bit_or(1"}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{"bit_or(1); DROP TABLE w3"}');
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}', aggregates => '{"pg_catalog.bit_or(*)"}');
-- A function put in the way of an aggregate's own, by a role with CREATE
-- on its schema: CREATE AGGREGATE would find it (its argument types are
-- closer), so the processor is refused, and the function never called.
CREATE SCHEMA aggs;
CREATE FUNCTION aggs.cat_step(text, text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT $1 || $2$$;
CREATE FUNCTION aggs.cat_done(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT '[' || $1 || ']'$$;
CREATE AGGREGATE aggs.cat(varchar) (SFUNC = aggs.cat_step, STYPE = text, COMBINEFUNC = aggs.cat_step,
                                    FINALFUNC = aggs.cat_done, INITCOND = '');
CREATE TABLE w4 (window_start timestamptz, window_end timestamptz, cat text);
GRANT USAGE, CREATE ON SCHEMA aggs TO windows_other;
SET ROLE windows_other;
CREATE FUNCTION aggs.cat_step(text, varchar) RETURNS text LANGUAGE sql AS $$SELECT 'hijacked'$$;
RESET ROLE;
SELECT eventlog.create_window_processor('w', 'taps', 'w4', size => '10 s', group_by => '{}', aggregates => ARRAY['aggs.cat(key::varchar)']);
DROP FUNCTION aggs.cat_step(text, varchar);
-- Without it, the aggregate and its final function run.
SELECT eventlog.create_window_processor('catw', 'taps', 'w4', size => '1 day', group_by => '{}',
    aggregates => ARRAY['aggs.cat(key::varchar)'], event_time => $$(value->>'ts')::timestamptz$$, emit => 'changes');
SELECT eventlog.run_processor('catw');
SELECT window_start, cat ~ '^\[[ab]+\]$' AS finished, length(cat) - 2 = (SELECT count(*) FROM eventlog.read('taps', 0, 0, 1000)) AS every_key FROM w4;
SELECT eventlog.drop_processor('catw');
-- A state type of the user's with an initial value: CREATE AGGREGATE
-- would read INITCOND with the type's input function (here a domain's
-- CHECK) as the extension's owner.  Refused before anything runs: no
-- notice from the check.
SET client_min_messages = warning;
CREATE FUNCTION aggs.noisy(float8[]) RETURNS boolean LANGUAGE plpgsql
    AS $$BEGIN RAISE NOTICE 'the check ran as %', current_user; RETURN true; END$$;
CREATE DOMAIN aggs.fstate AS float8[] CHECK (aggs.noisy(VALUE));
CREATE FUNCTION aggs.fstep(aggs.fstate, float8) RETURNS aggs.fstate LANGUAGE sql AS $$SELECT ($1 || $2)::aggs.fstate$$;
CREATE FUNCTION aggs.fcomb(aggs.fstate, aggs.fstate) RETURNS aggs.fstate LANGUAGE sql AS $$SELECT ($1 || $2)::aggs.fstate$$;
CREATE AGGREGATE aggs.fagg(float8) (SFUNC = aggs.fstep, STYPE = aggs.fstate, COMBINEFUNC = aggs.fcomb, INITCOND = '{}');
RESET client_min_messages;
SELECT eventlog.create_window_processor('w', 'taps', 'w4', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$aggs.fagg((value->>'amount')::float8) AS cat$$]);
-- An aggregate its owner may not call.
REVOKE EXECUTE ON FUNCTION any_bits(integer) FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO windows_other;
SELECT eventlog.grant('taps', 'consume', 'windows_other');
GRANT SELECT, INSERT, UPDATE ON w3 TO windows_other;
SET ROLE windows_other;
SELECT eventlog.create_window_processor('w', 'taps', 'w3', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.any_bits((value->>'amount')::int)$$]);
RESET ROLE;
SELECT (SELECT count(*) FROM eventlog.processor_catalog) AS processors,
       (SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace) AS relations,
       (SELECT count(*) FROM pg_proc WHERE pronamespace = 'eventlog'::regnamespace) AS functions,
       (SELECT count(*) FROM eventlog.group_catalog) AS groups
EXCEPT SELECT * FROM before;

-- A processor's aggregates and record buffer belong to its owner, who
-- runs them, and go with it.  Without grace, the record at 3 s (watermark
-- 12 s) counts in the window ending at 12 s, still open: a sliding window
-- closes when the watermark passes its end; the one ending at 30 s is open.
-- The right windows after 0, 3, 5 and 7 s hold the records that count in
-- them: the record at 3 s is in none (late for the one after 0 s), and
-- makes its own.
SET SESSION AUTHORIZATION windows_other;
SELECT eventlog.create_window_processor('theirs', 'taps', 'w3', size => '10 s', window_type => 'sliding', group_by => '{}',
    aggregates => ARRAY[$$bit_or((value->>'amount')::int)$$], event_time => $$(value->>'ts')::timestamptz$$);
SELECT eventlog.run_processor('theirs');
SELECT window_start::time, window_end::time, x FROM w3 ORDER BY window_end;
SELECT window_end::time, closed, aggregates FROM eventlog.processor_windows('theirs');
RESET SESSION AUTHORIZATION;
SELECT regexp_replace(p.proname, '^processor_[0-9]+_', 'processor_N_') AS aggregate, p.proowner::regrole, count(*)
  FROM pg_proc p WHERE p.pronamespace = 'eventlog'::regnamespace AND p.proname ~ '^processor_[0-9]+_'
 GROUP BY 1, 2 ORDER BY 1;
SELECT c.relowner::regrole, count(*) AS record_buffers FROM pg_class c
 WHERE c.relnamespace = 'eventlog'::regnamespace AND c.relname ~ '^processor_[0-9]+_records$' GROUP BY 1;
SELECT eventlog.drop_processor(name) FROM eventlog.processors ORDER BY name;
SELECT count(*) FROM pg_proc WHERE pronamespace = 'eventlog'::regnamespace AND proname ~ '^processor_[0-9]+_';
SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace AND relname ~ '^processor_[0-9]+_';
SELECT eventlog.revoke('taps', 'consume', 'windows_other');
REVOKE ALL ON w3 FROM windows_other;
DROP TABLE w3;
DROP TABLE w4;
DROP SCHEMA aggs CASCADE;
REVOKE USAGE ON SCHEMA public FROM windows_other;
DROP ROLE windows_other;
SELECT eventlog.drop_topic(t) FROM unnest(ARRAY['taps', 'slide_out', 'late_taps']) t;

-- A step's plans are kept for the session (eventlog._processor_exec, by
-- the statement's text): a processor made again under the same name, into
-- another sink, and a sink that changed since its plan, are written right.
SELECT eventlog.create_topic('kept', 2);
SELECT count(eventlog.produce('kept', 'k' || (i % 3), jsonb_build_object('i', i), partition => i % 2,
                              event_time => timestamptz '2026-01-01 00:00:00+00' + i * interval '1 s'))
  FROM generate_series(1, 40) i;
CREATE TABLE kept_a (window_start timestamptz, window_end timestamptz, k text, n bigint);
CREATE TABLE kept_b (window_start timestamptz, window_end timestamptz, k text, n bigint);
SELECT eventlog.create_window_processor('kept', 'kept', 'kept_a', size => '10 s', idle_timeout => '0');
SELECT eventlog.run_processor('kept', 15), eventlog.run_processor('kept', 15), eventlog.run_processor('kept', 15);
SELECT eventlog.drop_processor('kept');
SELECT eventlog.create_window_processor('kept', 'kept', 'kept_b', size => '10 s', idle_timeout => '0');
SELECT eventlog.run_processor('kept', 15), eventlog.run_processor('kept', 15), eventlog.run_processor('kept', 15);
SELECT (SELECT count(*) FROM ((TABLE kept_a EXCEPT TABLE kept_b) UNION ALL (TABLE kept_b EXCEPT TABLE kept_a)) d) AS differ,
       (SELECT sum(n) FROM kept_b) AS counted, (SELECT count(*) FROM kept_b) AS windows;
TRUNCATE kept_b;
ALTER TABLE kept_b ADD COLUMN note text DEFAULT 'new';
SELECT eventlog.reset_processor('kept');
SELECT eventlog.run_processor('kept', 15), eventlog.run_processor('kept', 15), eventlog.run_processor('kept', 15);
SELECT (SELECT count(*) FROM ((TABLE kept_a EXCEPT SELECT window_start, window_end, k, n FROM kept_b)
                              UNION ALL (SELECT window_start, window_end, k, n FROM kept_b EXCEPT TABLE kept_a)) d) AS differ,
       (SELECT array_agg(DISTINCT note) FROM kept_b) AS notes;
SELECT eventlog.drop_processor('kept');
DROP TABLE kept_a, kept_b;
SELECT eventlog.drop_topic('kept');
-- _processor_running_max: per partition, the largest event time of the
-- records before; offsets that go back are an internal error, never a
-- wrong watermark.
SELECT p, o, eventlog._processor_running_max(p, o, ts)
  FROM (VALUES (0, 1, timestamptz '2026-01-01 00:00:03+00'), (1, 7, '2026-01-01 00:00:09+00'), (0, 2, NULL),
               (0, 5, '2026-01-01 00:00:01+00'), (1, 8, NULL), (0, 6, '2026-01-01 00:00:04+00'), (0, 7, NULL)) v(p, o, ts);
SELECT eventlog._processor_running_max(0, o, NULL) FROM (VALUES (2), (1)) v(o);
-- Anyone may call it: a partition number past eventlog.max_partitions is
-- an error, not an allocation (2147483647 once overflowed and crashed).
SELECT eventlog._processor_running_max(2147483647, 1, now());
SELECT eventlog._processor_running_max(-1, 1, now());
-- _processor_record_watermark: the same, made the greater of it and the
-- partition's time before the batch (the arrays); -infinity when neither.
SELECT p, o, eventlog._processor_record_watermark(p, o, ts, ARRAY[0, 1, 2], ARRAY[timestamptz '2026-01-01 00:00:02+00', NULL, '2026-01-01 00:00:08+00'])
  FROM (VALUES (0, 1, timestamptz '2026-01-01 00:00:03+00'), (1, 7, '2026-01-01 00:00:09+00'), (0, 2, NULL),
               (0, 5, '2026-01-01 00:00:01+00'), (1, 8, NULL), (2, 1, '2026-01-01 00:00:05+00'), (2, 2, NULL),
               (3, 1, NULL), (3, 2, '2026-01-01 00:00:00+00')) v(p, o, ts);
SELECT eventlog._processor_record_watermark(0, o, NULL, NULL, NULL) FROM (VALUES (2), (1)) v(o);
SELECT eventlog._processor_record_watermark(0, 1, NULL, ARRAY[0, 1], ARRAY[now()]);
SELECT eventlog._processor_record_watermark(2147483647, 1, now(), NULL, NULL);
-- Group keys.  A window's group is the jsonb array of its group values:
-- values whose jsonb differ make different groups.  A step groups a
-- tumbling window's records by the values themselves where equal values
-- make equal jsonb (integers, times, text in a deterministic collation),
-- by their jsonb otherwise: text in a nondeterministic collation (as
-- citext) has equal values that differ in bytes ('A' and 'a'), which stay
-- two groups, as in a sliding window (which always groups by jsonb).
CREATE COLLATION gk_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT eventlog.create_topic('gk', 1);
SELECT count(*) FROM eventlog.produce_batch('gk', ARRAY['A', 'a', 'a', 'B', 'A', NULL, 'b', 'z'],
    ARRAY['{"n": 1}', '{"n": 1}', '{"n": 2}', '{"n": 2}', '{"n": 1}', '{"n": null}', '{"n": 2}', '{}']::jsonb[],
    event_time => ARRAY['2026-01-01 00:00:01+00', '2026-01-01 00:00:02+00', '2026-01-01 00:00:03+00',
                        '2026-01-01 00:00:04+00', '2026-01-01 00:00:05+00', '2026-01-01 00:00:06+00',
                        '2026-01-01 00:00:07+00', '2026-01-01 00:05:00+00']::timestamptz[]);
CREATE TABLE gk_ci (window_start timestamptz, window_end timestamptz, k text, n bigint);
CREATE TABLE gk_ci_s (window_start timestamptz, window_end timestamptz, k text, n bigint);
CREATE TABLE gk_raw (window_start timestamptz, window_end timestamptz, k text, v integer, n bigint);
SELECT eventlog.create_window_processor('gk_ci', 'gk', 'gk_ci', size => '1 minute', idle_timeout => '0',
                                        group_by => ARRAY['key COLLATE public.gk_ci']);
SELECT eventlog.create_window_processor('gk_ci_s', 'gk', 'gk_ci_s', size => '1 minute', window_type => 'sliding',
                                        idle_timeout => '0', group_by => ARRAY['key COLLATE public.gk_ci']);
SELECT eventlog.create_window_processor('gk_raw', 'gk', 'gk_raw', size => '1 minute', idle_timeout => '0',
                                        group_by => ARRAY['lower(key)', '(value ->> ''n'')::integer']);
SELECT eventlog.run_processor('gk_ci', 3), eventlog.run_processor('gk_ci', 10),
       eventlog.run_processor('gk_ci_s', 10), eventlog.run_processor('gk_raw', 10);
SELECT k COLLATE "C", n FROM gk_ci ORDER BY 1;
SELECT k COLLATE "C", max(n) FROM gk_ci_s WHERE window_end < '2026-01-01 00:01:00+00' GROUP BY 1 ORDER BY 1;
SELECT k, v, n FROM gk_raw ORDER BY k, v;
SELECT group_key, aggregates FROM eventlog.processor_windows('gk_raw');
SELECT eventlog.drop_processor(n) FROM unnest(ARRAY['gk_ci', 'gk_ci_s', 'gk_raw']) n;
DROP TABLE gk_ci, gk_ci_s, gk_raw;
DROP COLLATION gk_ci;
SELECT eventlog.drop_topic('gk');
