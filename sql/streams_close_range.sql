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

-- Event times near the least timestamptz (4714-11-24 BC): closed_through
-- less size + allowed_lateness is before it, which the closing condition
-- alone never computes.
SELECT eventlog.create_topic('cr_old', 1);
SELECT eventlog.create_window_processor('cr_old', 'cr_old', 'cr_sink', size => '1 hour',
                                        allowed_lateness => '2000 hours', idle_timeout => '1 hour');
SELECT eventlog.produce('cr_old', 'a', '{}', event_time => '4714-11-25 00:00:00+00 BC') IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr_old');
SELECT eventlog.produce('cr_old', 'a', '{}', event_time => '4714-12-25 00:00:00+00 BC') IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr_old');
SELECT eventlog.produce('cr_old', 'a', '{}', event_time => '4713-12-25 00:00:00+00 BC') IS NOT NULL AS produced;
SELECT eventlog.run_processor('cr_old');
-- (shown in UTC: the local time of 4714 BC depends on the time zone data)
SELECT window_start AT TIME ZONE 'UTC' AS start_utc, window_end AT TIME ZONE 'UTC' AS end_utc, k, n FROM cr_sink ORDER BY 1;
SELECT eventlog.drop_processor('cr_old');
SELECT eventlog.drop_topic('cr_old');

DROP TABLE cr_sink;
