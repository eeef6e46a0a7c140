-- A processor counts a day as 24 hours, as date_bin does where windows
-- start: window ends, hopping windows' starts, lateness and retention do
-- not follow the session's time zone across a daylight saving change.
SET TimeZone = 'America/New_York';    -- clocks went forward on 2026-03-08
CREATE TABLE dd_sink (window_start timestamptz, window_end timestamptz, n bigint);
SELECT eventlog.create_topic('dd', 1);
SELECT eventlog.create_window_processor('dd_hop', 'dd', 'dd_sink', window_type => 'hopping',
                                        size => '2 days', advance => '1 day', group_by => '{}',
                                        allowed_lateness => '1 day', idle_timeout => '1 hour');
SELECT size, advance, allowed_lateness FROM eventlog.processors WHERE name = 'dd_hop';
SELECT eventlog.produce('dd', 'a', '{}', event_time => '2026-03-09 12:00:00+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('dd_hop');
-- The two windows holding the record, each 48 hours, starting at midnight UTC.
SELECT window_start AT TIME ZONE 'UTC' AS start_utc, window_end AT TIME ZONE 'UTC' AS end_utc, aggregates
  FROM eventlog.processor_windows('dd_hop') ORDER BY 1;
-- Closed when the watermark passes end + 24 hours: the first at 03-11 00:00 UTC.
SELECT eventlog.produce('dd', 'a', '{}', event_time => '2026-03-11 00:00:00+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('dd_hop');
SELECT window_start AT TIME ZONE 'UTC' AS start_utc, window_end AT TIME ZONE 'UTC' AS end_utc, n FROM dd_sink ORDER BY 1;
SELECT eventlog.drop_processor('dd_hop');
TRUNCATE dd_sink;

-- Tumbling days: [start, start + 24 hours) across the change.
SELECT eventlog.create_window_processor('dd_day', 'dd', 'dd_sink', size => '1 day', group_by => '{}',
                                        idle_timeout => '1 hour');
SELECT eventlog.produce('dd', 'a', '{}', event_time => '2026-03-12 00:00:00+00') IS NOT NULL AS produced;
SELECT eventlog.run_processor('dd_day');
SELECT window_start AT TIME ZONE 'UTC' AS start_utc, window_end AT TIME ZONE 'UTC' AS end_utc, n FROM dd_sink ORDER BY 1;
SELECT eventlog.drop_processor('dd_day');
SELECT eventlog.drop_topic('dd');
DROP TABLE dd_sink;
RESET TimeZone;
