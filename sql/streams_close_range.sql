-- Tumbling and hopping windows close through a window_start range bounded
-- below by closed_through (_processor_start_range, sql/install/streams.sql).
-- Whatever the range, a step closes and removes the same windows, and
-- writes the same rows, as the closing condition alone.

CREATE TABLE cr_sink (window_start timestamptz, window_end timestamptz, k text, n bigint);

-- Kept closed windows (a retention) whose retention the watermark passes
-- in the same closing statement that closes them: the UPDATE closing them
-- and the DELETE removing the kept ones see the rows as they were before
-- the statement, so the DELETE leaves them, and the next closing must
-- remove them, though their end + lateness + retention is before the
-- closed_through it starts from.
SELECT eventlog.create_topic('cr', 1);
SELECT eventlog.create_window_processor('cr', 'cr', 'cr_sink', size => '1 minute', retention => '1 minute',
                                        idle_timeout => '1 hour');
SELECT eventlog.produce('cr', 'a', '{}', event_time => '2026-01-01 00:00:30+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr');
SELECT eventlog.produce('cr', 'a', '{}', event_time => '2026-01-01 00:10:00+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr');
SELECT eventlog.produce('cr', 'a', '{}', event_time => '2026-01-01 00:20:00+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr');
SELECT eventlog.produce('cr', 'a', '{}', event_time => '2026-01-01 00:30:00+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr');
-- The windows kept from earlier closings are gone; 00:20-00:21, which this
-- step closed as its retention passed too, goes at the next closing.
SELECT window_start, window_end, closed, aggregates FROM eventlog.processor_windows('cr') ORDER BY 1;
SELECT * FROM cr_sink ORDER BY 1;
SELECT eventlog.drop_processor('cr');
SELECT eventlog.drop_topic('cr');
TRUNCATE cr_sink;

-- Event times too near either end of timestamptz's range for the
-- processor's intervals (_processor_time_range: 4714-11-24 BC or 294276 AD,
-- give or take twice the size, the lateness and a day), and infinite ones,
-- count as records without an event time: no step fails on them.  Windows
-- near the least timestamptz still close, through a closing range whose
-- bound is -infinity until closed_through is far enough from it.
SELECT eventlog.create_topic('cr_old', 1);
SELECT eventlog.create_window_processor('cr_old', 'cr_old', 'cr_sink', size => '1 hour',
                                        allowed_lateness => '2000 hours', idle_timeout => '1 hour');
SELECT count(*) FROM eventlog.produce_batch('cr_old', ARRAY['a', 'a', 'a', 'a', 'a', 'a'], ARRAY['{}', '{}', '{}', '{}', '{}', '{}']::jsonb[],
    event_time => ARRAY['4714-11-25 00:00:00+00 BC', 'infinity', '-infinity', '294276-12-31 00:00:00+00',
                        '4713-06-01 00:00:00+00 BC', '4713-12-25 00:00:00+00 BC']::timestamptz[]);
SELECT eventlog.run_processor('cr_old', 1) FROM generate_series(1, 6);
SELECT records, null_time_records FROM eventlog.processor_progress('cr_old') WHERE partition = 0;
-- (shown in UTC: the local time of 4714 BC depends on the time zone data)
SELECT window_start AT TIME ZONE 'UTC' AS start_utc, window_end AT TIME ZONE 'UTC' AS end_utc, k, n FROM cr_sink ORDER BY 1;
SELECT eventlog.drop_processor('cr_old');
SELECT eventlog.drop_topic('cr_old');
-- A partition whose records have no event time has no watermark: read to
-- its end, it does not hold the processor's at -infinity (windows close).
SELECT eventlog.create_topic('cr_null', 2);
SELECT eventlog.create_window_processor('cr_null', 'cr_null', 'cr_sink', size => '1 minute',
                                        event_time => $$(value->>'ts')::timestamptz$$, idle_timeout => '1 hour');
SELECT eventlog.produce('cr_null', 'a', '{"ts": "2026-01-01 00:00:10+00"}', partition => 0) IS NOT NULL AS produced;
SELECT eventlog.produce('cr_null', 'b', '{}', partition => 1) IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr_null');
SELECT eventlog.produce('cr_null', 'a', '{"ts": "2026-01-01 00:05:00+00"}', partition => 0) IS NOT NULL AS produced;
SELECT eventlog.produce('cr_null', 'b', '{}', partition => 1) IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr_null');
SELECT partition, records, null_time_records FROM eventlog.processor_progress('cr_null') ORDER BY 1;
SELECT window_start AT TIME ZONE 'UTC' AS start_utc, k, n FROM cr_sink WHERE window_start > '2000-01-01' ORDER BY 1;
SELECT eventlog.drop_processor('cr_null');
SELECT eventlog.drop_topic('cr_null');

-- A sliding window's record buffer, with an allowed_lateness in months: a
-- record stays as long as a window that holds it may still change, its
-- time + size + 1 microsecond + lateness, added in that order as the step
-- adds them (the sum of the intervals first would reach another day across
-- a month's end: 02-28 23:59:55 would go on 03-29, not 04-01).  Months
-- are calendar months of the session's time zone: UTC here.
SET TimeZone = 'UTC';
CREATE TABLE cr_slide (window_start timestamptz, window_end timestamptz, k text, n bigint);
SELECT eventlog.create_topic('cr_mon', 1);
SELECT eventlog.create_window_processor('cr_mon', 'cr_mon', 'cr_slide', size => '10 seconds', window_type => 'sliding',
                                        allowed_lateness => '1 month', emit => 'changes', idle_timeout => '1 hour');
SELECT count(*) FROM eventlog.produce_batch('cr_mon', ARRAY['a', 'a', 'z'], ARRAY['{}', '{}', '{}']::jsonb[],
    event_time => ARRAY['2026-02-28 23:59:55+00', '2026-03-01 00:00:05+00', '2026-03-30 00:00:00+00']::timestamptz[]);
SELECT eventlog.run_processor('cr_mon', 2);
SELECT eventlog.run_processor('cr_mon', 1);
-- a record in the window [02-28 23:59:55, 03-01 00:00:05], still open
SELECT eventlog.produce('cr_mon', 'a', '{}', event_time => '2026-03-01 00:00:04+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr_mon');
SELECT window_start AT TIME ZONE 'UTC' AS start_utc, window_end AT TIME ZONE 'UTC' AS end_utc, n
  FROM cr_slide WHERE k = 'a' ORDER BY 1;
SELECT eventlog.drop_processor('cr_mon');
SELECT eventlog.drop_topic('cr_mon');
DROP TABLE cr_slide;
RESET TimeZone;

-- Intervals that reach over 1,000 years together are refused (more would
-- leave the present out of the event times taken).
SELECT eventlog.create_window_processor('cr_long', 'cr_old', 'cr_sink', size => '876000000 hours');

DROP TABLE cr_sink;
