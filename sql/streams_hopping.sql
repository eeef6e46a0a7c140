-- Hopping windows whose size is not a multiple of their advance (10 s,
-- advancing by 3 s): windows start at every multiple of the advance, and a
-- record is in each window [start, start + size) that holds its time, as
-- in Kafka Streams' TimeWindows.advanceBy and Flink's HOP.  The sink must
-- equal a GROUP BY over those windows, emitted in any steps.

CREATE TABLE hw_sink (window_start timestamptz, window_end timestamptz, k text, n bigint,
                      lo timestamptz, hi timestamptz);
SELECT eventlog.create_topic('hw', 1);
-- one record a second, 00:00:00 to 00:00:39, two keys; then one far later
-- that closes every window
SELECT count(*) FROM eventlog.produce_batch('hw',
    (SELECT array_agg(CASE WHEN i % 3 = 0 THEN 'b' ELSE 'a' END ORDER BY i) FROM generate_series(0, 39) i),
    (SELECT array_agg('{}'::jsonb) FROM generate_series(0, 39) i),
    event_time => (SELECT array_agg(timestamptz '2026-01-01 00:00:00+00' + i * interval '1 s' ORDER BY i)
                     FROM generate_series(0, 39) i));
SELECT eventlog.create_window_processor('hw', 'hw', 'hw_sink', window_type => 'hopping', size => '10 seconds', advance => '3 seconds',
    aggregates => ARRAY['count(*)', 'min(event_time)', 'max(event_time)'], idle_timeout => '1 hour');
-- in steps of 7 records, then the closing record
SELECT sum(eventlog.run_processor('hw', 7)) FROM generate_series(1, 8);
SELECT eventlog.produce('hw', 'z', '{}', event_time => '2026-01-01 01:00:00+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('hw');

CREATE TEMP VIEW hw_expected AS
    SELECT w.ws AS window_start, w.ws + interval '10 s' AS window_end, r.key AS k, count(*) AS n,
           min(r.event_time) AS lo, max(r.event_time) AS hi
      FROM eventlog.read('hw', 0, 0, 40) AS r
      JOIN generate_series(timestamptz '2026-01-01 00:00:00+00' - interval '12 s', timestamptz '2026-01-01 00:00:40+00',
                           interval '3 s') AS w(ws)
        ON r.event_time >= w.ws AND r.event_time < w.ws + interval '10 s'
     GROUP BY 1, 2, 3;
-- windows start at multiples of 3 s from the epoch (00:00:00 is one)
SELECT count(*) AS windows, count(*) FILTER (WHERE extract(epoch FROM window_start)::bigint % 3 <> 0) AS misaligned,
       max(n) AS most
  FROM hw_sink;
SELECT count(*) AS differ
  FROM ((TABLE hw_sink EXCEPT TABLE hw_expected) UNION ALL (TABLE hw_expected EXCEPT TABLE hw_sink)) d;
-- the windows of 00:00:06, and the first window, which starts before the
-- first record
SELECT window_start AT TIME ZONE 'UTC' AS window_start, k, n, lo AT TIME ZONE 'UTC' AS lo, hi AT TIME ZONE 'UTC' AS hi
  FROM hw_sink WHERE k = 'a' AND (window_start <= '2026-01-01 00:00:06+00' AND window_end > '2026-01-01 00:00:06+00'
                                   OR window_start < '2026-01-01 00:00:00+00')
 ORDER BY 1;

SELECT eventlog.drop_processor('hw');
SELECT eventlog.drop_topic('hw');
DROP TABLE hw_sink;
