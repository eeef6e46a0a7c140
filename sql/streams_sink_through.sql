-- A step looks in the sink table for rows of the windows it writes (to
-- overwrite them, not to write a window twice) only for windows ending at
-- or before sink_through: the latest window end the processor wrote, or
-- the sink held when the processor was made (_processor_emit_sql).  Later
-- windows cannot have a row, and the sink is not read: a step's time does
-- not grow with the sink.  Replays (reset_processor), a processor made
-- again over its sink, emit changes and late updates still overwrite.

CREATE TABLE st_sink (window_start timestamptz, window_end timestamptz, k text, n bigint);
SELECT eventlog.create_topic('st', 1);
SELECT count(*) FROM eventlog.produce_batch('st', ARRAY['a', 'b', 'a', 'a'], ARRAY['{}', '{}', '{}', '{}']::jsonb[],
    event_time => ARRAY['2026-01-01 00:00:10+00', '2026-01-01 00:00:20+00',
                        '2026-01-01 00:01:10+00', '2026-01-01 00:02:10+00']::timestamptz[]);
SELECT eventlog.create_window_processor('st', 'st', 'st_sink', size => '1 minute', idle_timeout => '1 hour');
SELECT format('eventlog.%I', 'processor_' || processor_id || '_progress') AS st_progress
  FROM eventlog.processor_catalog WHERE name = 'st' \gset
-- an empty sink: nothing to look up
SELECT sink_through FROM :st_progress WHERE partition = -1;

-- One record a step: the sink is not read (the scans of the sink are
-- counted with the backend's statistics flushed before and after).
SELECT pg_stat_force_next_flush();
SELECT seq_scan AS scans FROM pg_stat_user_tables WHERE relid = 'st_sink'::regclass \gset
SELECT eventlog.run_processor('st', 1) FROM generate_series(1, 5);
SELECT pg_stat_force_next_flush();
SELECT seq_scan - :scans AS sink_scans FROM pg_stat_user_tables WHERE relid = 'st_sink'::regclass;
SELECT * FROM st_sink ORDER BY 1, 3;
SELECT sink_through AT TIME ZONE 'UTC' AS sink_through FROM :st_progress WHERE partition = -1;

-- A replay writes the same windows again: they are looked up and
-- overwritten, not written twice; sink_through stays.
SELECT eventlog.reset_processor('st');
UPDATE st_sink SET n = 0;
SELECT pg_stat_force_next_flush();
SELECT seq_scan AS scans FROM pg_stat_user_tables WHERE relid = 'st_sink'::regclass \gset
SELECT eventlog.run_processor('st', 10);
SELECT pg_stat_force_next_flush();
SELECT seq_scan - :scans > 0 AS sink_read FROM pg_stat_user_tables WHERE relid = 'st_sink'::regclass;
SELECT * FROM st_sink ORDER BY 1, 3;
SELECT sink_through AT TIME ZONE 'UTC' AS sink_through FROM :st_progress WHERE partition = -1;

-- Past the windows written, the sink is not read again.
SELECT eventlog.produce('st', 'b', '{}', event_time => '2026-01-01 00:03:10+00') IS NOT NULL AS produced;
SELECT pg_stat_force_next_flush();
SELECT seq_scan AS scans FROM pg_stat_user_tables WHERE relid = 'st_sink'::regclass \gset
SELECT eventlog.run_processor('st', 10);
SELECT pg_stat_force_next_flush();
SELECT seq_scan - :scans AS sink_scans FROM pg_stat_user_tables WHERE relid = 'st_sink'::regclass;
SELECT * FROM st_sink ORDER BY 1, 3;

-- A processor made again over the same sink, from the start: it starts
-- with the sink's latest window end, and overwrites the rows there.
SELECT eventlog.drop_processor('st');
SELECT eventlog.create_window_processor('st', 'st', 'st_sink', size => '1 minute', idle_timeout => '1 hour');
SELECT format('eventlog.%I', 'processor_' || processor_id || '_progress') AS st_progress
  FROM eventlog.processor_catalog WHERE name = 'st' \gset
SELECT sink_through AT TIME ZONE 'UTC' AS sink_through FROM :st_progress WHERE partition = -1;
UPDATE st_sink SET n = -1;
SELECT eventlog.run_processor('st', 10);
SELECT * FROM st_sink ORDER BY 1, 3;
SELECT eventlog.drop_processor('st');

-- Emit changes: a window written at every step that changes it, one row.
TRUNCATE st_sink;
SELECT eventlog.create_window_processor('st', 'st', 'st_sink', size => '1 minute', idle_timeout => '1 hour',
                                        emit => 'changes');
SELECT eventlog.run_processor('st', 1) FROM generate_series(1, 5);
SELECT eventlog.produce('st', 'b', '{}', event_time => '2026-01-01 00:03:40+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('st', 10);
SELECT * FROM st_sink ORDER BY 1, 3;
SELECT eventlog.drop_processor('st');

-- Late records that update their closed window (kept for a retention)
-- overwrite its row.
TRUNCATE st_sink;
SELECT eventlog.create_window_processor('st', 'st', 'st_sink', size => '1 minute', idle_timeout => '1 hour',
                                        late => 'update', retention => '1 hour');
SELECT eventlog.run_processor('st', 10);
SELECT eventlog.produce('st', 'a', '{}', event_time => '2026-01-01 00:00:50+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('st', 10);
SELECT * FROM st_sink ORDER BY 1, 3;
SELECT eventlog.drop_processor('st');

-- A sink whose window end is not a timestamptz is always looked up
-- (sink_through NULL).  Window columns of type timestamp get the bounds in
-- UTC, whatever the session's TimeZone, so that a replay in a session of
-- another time zone finds and overwrites its rows.
CREATE TABLE st_sink_local (window_start timestamp, window_end timestamp, k text, n bigint);
SELECT eventlog.create_window_processor('st', 'st', 'st_sink_local', size => '1 minute', idle_timeout => '1 hour');
SELECT format('eventlog.%I', 'processor_' || processor_id || '_progress') AS st_progress
  FROM eventlog.processor_catalog WHERE name = 'st' \gset
SELECT sink_through FROM :st_progress WHERE partition = -1;
SELECT eventlog.run_processor('st', 10);
SELECT eventlog.reset_processor('st');
SET TimeZone = 'Asia/Tokyo';
SELECT eventlog.run_processor('st', 10);
RESET TimeZone;
SELECT count(*) AS rows, count(DISTINCT (window_start, k)) AS windows FROM st_sink_local;
SELECT * FROM st_sink_local ORDER BY 1, 3;

-- The same for a processor writing another table of the sink's partition
-- tree (a partition of it).
CREATE TABLE st_tree (window_start timestamptz, window_end timestamptz, k text, n bigint) PARTITION BY RANGE (window_start);
CREATE TABLE st_tree_2026 PARTITION OF st_tree FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2027-01-01 00:00:00+00');
SELECT eventlog.create_window_processor('st_whole', 'st', 'st_tree', size => '1 minute', idle_timeout => '1 hour');
SELECT eventlog.create_window_processor('st_part', 'st', 'st_tree_2026', size => '1 minute', idle_timeout => '1 hour');
SELECT eventlog.run_processor('st_part', 3);
SELECT eventlog.run_processor('st_whole', 10);
SELECT eventlog.run_processor('st_part', 10);
SELECT window_start AT TIME ZONE 'UTC' AS window_start, k, count(*) AS rows FROM st_tree GROUP BY 1, 2 ORDER BY 1, 2;
SELECT eventlog.drop_processor('st_whole');
SELECT eventlog.drop_processor('st_part');
DROP TABLE st_tree;

-- Window columns of another type are refused when the processor is made.
CREATE TABLE st_sink_text (window_start text, window_end timestamptz, k text, n bigint);
SELECT eventlog.create_window_processor('st_text', 'st', 'st_sink_text', size => '1 minute');
DROP TABLE st_sink_text;
-- nor of a precision, which would round the bounds: the rows written could
-- not be found again (a window of 500 ms would end at the next second)
CREATE TABLE st_sink_p0 (window_start timestamptz(0), window_end timestamptz, k text, n bigint);
SELECT eventlog.create_window_processor('st_p0', 'st', 'st_sink_p0', size => '500 ms');
DROP TABLE st_sink_p0;

SELECT eventlog.drop_processor('st');

-- Two processors writing one sink (a new one made to take over from an
-- old one, which runs on until it is dropped): each one's sink_through
-- misses the other's windows, so while both exist every window is looked
-- up, and once alone a processor takes sink_through from the sink.
TRUNCATE st_sink;
SELECT eventlog.create_topic('st2', 1);
SELECT count(*) FROM eventlog.produce_batch('st2', ARRAY['a', 'a', 'a', 'a', 'a'], ARRAY['{}', '{}', '{}', '{}', '{}']::jsonb[],
    event_time => ARRAY['2026-01-01 00:00:10+00', '2026-01-01 00:01:10+00', '2026-01-01 00:02:10+00',
                        '2026-01-01 00:03:10+00', '2026-01-01 00:04:10+00']::timestamptz[]);
SELECT eventlog.create_window_processor('st_old', 'st2', 'st_sink', size => '1 minute', idle_timeout => '1 hour');
SELECT eventlog.run_processor('st_old', 2);
SELECT eventlog.create_window_processor('st_new', 'st2', 'st_sink', size => '1 minute', idle_timeout => '1 hour');
SELECT format('eventlog.%I', 'processor_' || processor_id || '_progress') AS st_progress
  FROM eventlog.processor_catalog WHERE name = 'st_new' \gset
SELECT sink_through AT TIME ZONE 'UTC' AS sink_through FROM :st_progress WHERE partition = -1;
SELECT eventlog.run_processor('st_old', 10);
SELECT eventlog.run_processor('st_new', 1);
SELECT sink_through FROM :st_progress WHERE partition = -1;
SELECT eventlog.drop_processor('st_old');
SELECT eventlog.run_processor('st_new', 10);
SELECT sink_through AT TIME ZONE 'UTC' AS sink_through FROM :st_progress WHERE partition = -1;
SELECT window_start AT TIME ZONE 'UTC' AS window_start, k, n FROM st_sink ORDER BY 1, 2;
SELECT eventlog.drop_processor('st_new');
SELECT eventlog.drop_topic('st2');

SELECT eventlog.drop_topic('st');
DROP TABLE st_sink, st_sink_local;
