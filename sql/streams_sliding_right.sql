--
-- Sliding windows' right windows (docs/streams.md, sliding windows): each
-- record at t makes [t - size, t] and, when a later record of its group is
-- in it, [t + 1 µs, t + 1 µs + size] (the tick of timestamptz, where Kafka
-- Streams' is a millisecond); a window is made once however it is reached.
-- Lateness is per record per window, as for left windows.
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
CREATE FUNCTION ev(topic text, k text, amount int, t text) RETURNS void LANGUAGE sql AS $$
    SELECT NULL FROM eventlog.produce(topic, k, jsonb_build_object('amount', amount),
                                      event_time => '2026-01-01 10:00:00+00'::timestamptz + t::interval) $$;
-- Times as seconds after 10:00:00.
CREATE FUNCTION secs(t timestamptz) RETURNS numeric LANGUAGE sql IMMUTABLE
    AS $$SELECT extract(epoch FROM t - '2026-01-01 10:00:00+00')$$;
CREATE FUNCTION make(name text, emit text DEFAULT 'changes', late text DEFAULT 'drop', late_topic text DEFAULT NULL,
                     sink_topic text DEFAULT NULL) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
    PERFORM eventlog.create_topic(name, 1);
    EXECUTE format('CREATE TABLE %I (window_start timestamptz, window_end timestamptz, k text, n bigint, total bigint)', name);
    PERFORM eventlog.create_window_processor(name, name, CASE WHEN sink_topic IS NULL THEN name::regclass END,
        size => '10 seconds', window_type => 'sliding', allowed_lateness => '2 seconds', emit => emit,
        late => late, late_topic => late_topic, sink_topic => sink_topic,
        aggregates => ARRAY['count(*) AS n', $$sum((value->>'amount')::int) AS total$$]);
END
$f$;
CREATE FUNCTION show(name text) RETURNS TABLE (k text, ws numeric, we numeric, n bigint, total bigint) LANGUAGE plpgsql AS $f$
BEGIN
    RETURN QUERY EXECUTE format('SELECT k, secs(window_start), secs(window_end), n, total FROM %I ORDER BY k, window_start', name);
END
$f$;

-- Records at 0 and 5 s: [-10, 0] = {0}, [-5, 5] = {0, 5}, [0.000001,
-- 10.000001] = {5} (the right window of 0); none after 5 (empty).
SELECT make('r_basic');
SELECT ev('r_basic', 'a', 1, '0 s'), ev('r_basic', 'a', 2, '5 s');
SELECT eventlog.run_processor('r_basic');
SELECT * FROM show('r_basic');

-- p: a record at 0 and one at exactly 0 + size: the left window of 10 holds
-- both, the right window of 0 only 10.  q: at 0 and 0 + size + 1 µs: the
-- right window of 0 is the left window of 10.000001, made once.  s: two
-- records at 0 (the second in a later step: the window of 0 is made again,
-- once) and one at 3: the right window of 0 holds 3 only.
SELECT make('r_edges');
SELECT ev('r_edges', 'p', 1, '0 s'), ev('r_edges', 'q', 1, '0 s'), ev('r_edges', 's', 1, '0 s'),
       ev('r_edges', 's', 2, '0 s'), ev('r_edges', 's', 4, '3 s'), ev('r_edges', 'p', 2, '10 s'),
       ev('r_edges', 'q', 2, '10.000001 s');
SELECT eventlog.run_processor('r_edges', 3), eventlog.run_processor('r_edges');
SELECT * FROM show('r_edges');

-- Late records, emit final, late records to a topic.  a at 0, b at 10,
-- a at 15 (watermark 10); then, under watermark 15 (grace 2 s):
-- - a at 5: late for its own window (5 + 2 < 15) and for 0's right window
--   (10.000001 + 2 < 15), which stays unmade (it was empty), but it counts
--   in 15's window [5, 15], and makes its right window [5.000001,
--   15.000001] = {15}, open (15.000001 + 2 >= 15);
-- - a at 2.999999: in no open window (its windows end by 12.999999), but
--   its right window [3, 13] is open (13 + 2 >= 15) and holds 5 (which
--   counts in it: 13 + 2 >= 15): not late, and it makes that window;
-- - a at 2.999998: its right window too is closed (12.999999 + 2 < 15):
--   late, to r_late_out.
-- z at 100 then closes every window but its own.
SELECT eventlog.create_topic('r_late_out', 1);
SELECT make('r_late', emit => 'final', late => 'topic', late_topic => 'r_late_out');
SELECT ev('r_late', 'a', 1, '0 s'), ev('r_late', 'b', 2, '10 s'), ev('r_late', 'a', 4, '15 s'),
       ev('r_late', 'a', 8, '5 s'), ev('r_late', 'a', 16, '2.999999 s'), ev('r_late', 'a', 32, '2.999998 s'),
       ev('r_late', 'z', 64, '100 s');
SELECT eventlog.run_processor('r_late');
SELECT * FROM show('r_late');
SELECT key, value->>'amount' AS amount FROM eventlog.read('r_late_out', 0, 0);
SELECT records, late_records, secs(closed_through) FROM eventlog.processor_progress('r_late');
SELECT secs(window_start) AS ws, group_key, closed, aggregates FROM eventlog.processor_windows('r_late');
-- The buffer keeps a record while its right window may change (until the
-- watermark passes its time + size + 1 µs + grace): none of a's.
CREATE FUNCTION buffered(name text) RETURNS TABLE (k jsonb, t numeric) LANGUAGE plpgsql AS $f$
BEGIN
    RETURN QUERY EXECUTE format('SELECT group_key, secs(ts) FROM eventlog.%I ORDER BY 1, 2',
        (SELECT 'processor_' || c.processor_id || '_records' FROM eventlog.processor_catalog c WHERE c.name = buffered.name));
END
$f$;
SELECT * FROM buffered('r_late');
-- A replay writes the same rows, none twice.
CREATE TEMP TABLE r_late_before AS SELECT * FROM r_late;
SELECT eventlog.reset_processor('r_late');
SELECT eventlog.run_processor('r_late');
(SELECT * FROM r_late EXCEPT ALL SELECT * FROM r_late_before)
UNION ALL (SELECT * FROM r_late_before EXCEPT ALL SELECT * FROM r_late);

-- Emit changes into a topic: a at 0 and 5, then a at 8, which changes 0's
-- right window ({5} to {5, 8}) and makes 5's ([5.000001, 15.000001] = {8}).
SELECT eventlog.create_topic('r_chg_out', 1);
SELECT make('r_chg', sink_topic => 'r_chg_out');
SELECT ev('r_chg', 'a', 1, '0 s'), ev('r_chg', 'a', 2, '5 s');
SELECT eventlog.run_processor('r_chg');
SELECT ev('r_chg', 'a', 4, '8 s');
SELECT eventlog.run_processor('r_chg');
SELECT offset_id, key, secs((value->>'window_start')::timestamptz) AS ws, secs((value->>'window_end')::timestamptz) AS we,
       value->'n' AS n, value->'total' AS total
  FROM eventlog.read('r_chg_out', 0, 0) ORDER BY offset_id;

SELECT eventlog.drop_processor(name) FROM eventlog.processors ORDER BY name;
SELECT eventlog.drop_topic(t) FROM unnest(ARRAY['r_basic', 'r_edges', 'r_late', 'r_late_out', 'r_chg', 'r_chg_out']) t;
DROP TABLE r_basic, r_edges, r_late, r_chg;
