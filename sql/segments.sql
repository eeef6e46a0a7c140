--
-- Segment tables whose shape was changed by their owner (the extension
-- owner or a superuser, with ALTER TABLE): produce and read refuse them
-- with a clear error instead of writing or reading past the columns.
--
\set SHOW_CONTEXT never

SELECT eventlog.create_topic('shape', 1);
SELECT * FROM eventlog.produce('shape', 'a', '{"n": 1}');
-- Runs an ALTER TABLE on the topic's segment (%I in the text).
CREATE FUNCTION alter_segment(ddl text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format(ddl, (SELECT s.table_name FROM eventlog.segment_catalog s
                           JOIN eventlog.topic_catalog t USING (topic_id)
                          WHERE t.name = 'shape'));
END
$$;

-- 1. A column added: refused by produce and by read.
SELECT alter_segment('ALTER TABLE eventlog_segments.%I ADD COLUMN extra text');
SELECT code, regexp_replace(message, 'seg_\d+', 'seg_N') AS message, detail, hint
  FROM expect_error($$SELECT eventlog.produce('shape', 'b', '{"n": 2}')$$);
SELECT code, regexp_replace(message, 'seg_\d+', 'seg_N') AS message
  FROM expect_error($$SELECT * FROM eventlog.read('shape', 0, 0)$$);
-- The views do not fail; they skip the segment's append times.
SELECT partition, records, segments, oldest_append_time IS NULL AS no_append_time
  FROM eventlog.partitions WHERE topic = 'shape';

-- 2. Dropped again: the dropped column stays in the table (read as NULL),
-- and produce and read work again.
SELECT alter_segment('ALTER TABLE eventlog_segments.%I DROP COLUMN extra');
SELECT * FROM eventlog.produce('shape', 'b', '{"n": 2}');
SELECT offset_id, key, value FROM eventlog.read('shape', 0, 0);

-- 3. A column of another type, or a column dropped: refused.
SELECT alter_segment('ALTER TABLE eventlog_segments.%I ALTER COLUMN key TYPE varchar(10)');
SELECT code, regexp_replace(message, 'seg_\d+', 'seg_N') AS message, detail
  FROM expect_error($$SELECT eventlog.produce('shape', 'c', '{"n": 3}')$$);
SELECT code, regexp_replace(message, 'seg_\d+', 'seg_N') AS message
  FROM expect_error($$SELECT * FROM eventlog.read('shape', 0, 0)$$);
SELECT alter_segment('ALTER TABLE eventlog_segments.%I ALTER COLUMN key TYPE text');
SELECT alter_segment('ALTER TABLE eventlog_segments.%I DROP COLUMN headers');
SELECT code, regexp_replace(message, 'seg_\d+', 'seg_N') AS message, detail
  FROM expect_error($$SELECT eventlog.produce('shape', 'c', '{"n": 3}')$$);
SELECT code, regexp_replace(message, 'seg_\d+', 'seg_N') AS message
  FROM expect_error($$SELECT * FROM eventlog.read('shape', 0, 0)$$);

-- The refused calls took offsets 1, 3 and 4 and wrote nothing: gaps, as
-- after a rollback.
SELECT eventlog.high_watermark('shape', 0) AS high_watermark;
SELECT eventlog.drop_topic('shape');
DROP FUNCTION alter_segment(text);
