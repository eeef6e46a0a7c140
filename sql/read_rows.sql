--
-- read returns each record exactly as its segment holds it.  It copies a
-- segment row into its result without taking it apart (record_sink.c),
-- except for values stored out of line (TOAST), which it fetches.  Each
-- case compares read's rows with the segment tables read by plain SQL:
-- NULL keys, values and headers in every combination, a topic name that
-- needs a 4-byte varlena header, values stored out of line or compressed,
-- reads across segment rolls, and a record type changed by its owner.
--
\set SHOW_CONTEXT never

-- Every record of a topic, from its segment tables by plain SQL.
CREATE FUNCTION segment_rows(topic text) RETURNS SETOF eventlog.record
LANGUAGE plpgsql AS $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT sc.partition, sc.table_name
               FROM eventlog.segment_catalog sc
               JOIN eventlog.topic_catalog t USING (topic_id)
              WHERE t.name = topic
              ORDER BY sc.partition, sc.segment_no LOOP
        RETURN QUERY EXECUTE format(
            'SELECT %L::text, %s, offset_id, key, value, headers, event_time, append_time
               FROM eventlog_segments.%I', topic, s.partition, s.table_name);
    END LOOP;
END
$$;
-- Whether read returns exactly those, in offset order: the rows' text and
-- how their values are compressed (read keeps a value's compression; it
-- fetches values stored out of line, so their stored sizes differ).
CREATE FUNCTION read_matches(topic text, p integer) RETURNS boolean
LANGUAGE sql AS $$
    SELECT (SELECT string_agg(format('%s %s/%s/%s', r, pg_column_compression(r.key),
                                     pg_column_compression(r.value),
                                     pg_column_compression(r.headers)), E'\n' ORDER BY r.offset_id)
              FROM eventlog.read(topic, p, eventlog.log_start_offset(topic, p), 100000) r)
           IS NOT DISTINCT FROM
           (SELECT string_agg(format('%s %s/%s/%s', r, pg_column_compression(r.key),
                                     pg_column_compression(r.value),
                                     pg_column_compression(r.headers)), E'\n' ORDER BY r.offset_id)
              FROM segment_rows(topic) r WHERE r.partition = p)
$$;

-- 1. NULL key, value and headers in every combination (the null bitmap
-- moves by two columns), with and without an event time.
SELECT eventlog.create_topic('rows', 1);
SELECT count(*) FROM (
    SELECT eventlog.produce('rows', k, v, h, partition => 0, event_time => t)
      FROM (VALUES ('k1', '{"a": 1}'::jsonb, '{"h": "x"}'::jsonb, NULL::timestamptz),
                   (NULL, '{"a": 2}', '{"h": "y"}', '2020-01-01 00:00:00+00'),
                   ('k3', NULL, '{"h": "z"}', NULL),
                   ('k4', '{"a": 4}', NULL, NULL),
                   (NULL, NULL, '{}', NULL),
                   (NULL, '[]', NULL, NULL),
                   ('', NULL, NULL, NULL),
                   (NULL, NULL, NULL, '2021-06-01 12:00:00+00')) AS v(k, v, h, t)) AS p;
SELECT topic, partition, offset_id, key, value, headers,
       event_time = '2020-01-01 00:00:00+00' AS old_event_time,
       event_time = append_time AS event_time_is_append_time
  FROM eventlog.read('rows', 0, 0);
SELECT read_matches('rows', 0);
-- Paging and starting in the middle.
SELECT offset_id, key FROM eventlog.read('rows', 0, 3, 2);

-- 2. A topic name of 200 characters: stored with a 4-byte varlena header,
-- so the columns after it start further on; and names of 1 and 126 to 128
-- characters (the short header holds up to 126).
SELECT eventlog.create_topic(repeat('t', n), 2) FROM unnest(ARRAY[1, 126, 127, 128, 200]) n;
SELECT count(*) FROM (
    SELECT eventlog.produce(repeat('t', n), NULL, jsonb_build_object('n', n, 'i', i),
                            CASE WHEN i % 2 = 0 THEN '{"even": true}'::jsonb END, partition => i % 2)
      FROM unnest(ARRAY[1, 126, 127, 128, 200]) n, generate_series(1, 6) i) AS p;
SELECT n, p, read_matches(repeat('t', n), p),
       (SELECT string_agg(length(topic) || ':' || partition || ':' || offset_id || ':' || value::text, ' ')
          FROM eventlog.read(repeat('t', n), p, 0)) AS records
  FROM unnest(ARRAY[1, 126, 127, 128, 200]) n, generate_series(0, 1) p
 ORDER BY n, p;
SELECT eventlog.drop_topic(repeat('t', n)) FROM unnest(ARRAY[1, 126, 127, 128, 200]) n;

-- 3. Values stored out of line and compressed: a value that pglz cannot
-- compress (out of line, as is), one it compresses to under 2 kB (inline,
-- compressed), one it compresses to more (out of line, compressed), and a
-- key and headers out of line, mixed with small records.
SELECT eventlog.create_topic('toasted', 1);
SELECT count(*) FROM (
    SELECT eventlog.produce('toasted', k, v, h, partition => 0)
      FROM (VALUES
            (1, 'small', '{"a": 1}'::jsonb, NULL::jsonb),
            (2, NULL, jsonb_build_object('hex', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 300) i)), NULL),
            (3, 'inline', jsonb_build_object('x', repeat('x', 5000)), NULL),
            (4, NULL, jsonb_build_object('ab', repeat('ab', 200000)), NULL),
            (5, (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 200) i), '{"a": 5}',
                jsonb_build_object('h', (SELECT string_agg(md5((-i)::text), '') FROM generate_series(1, 200) i))),
            (6, 'small', NULL, '{"h": 6}')) AS v(n, k, v, h)
     ORDER BY n) AS p;
-- How the segment stores them (so each case is what it says).
SELECT offset_id, pg_column_compression(value) AS value_compression,
       pg_column_size(value) < octet_length(value::text) AS value_smaller_than_text,
       pg_column_size(value) > 2000 AS value_large,
       pg_column_size(key) > 2000 AS key_large, pg_column_size(headers) > 2000 AS headers_large
  FROM segment_rows('toasted') ORDER BY offset_id;
SELECT offset_id, length(key) AS key_length, length(value::text) AS value_length,
       md5(value::text) AS value_md5, length(headers::text) AS headers_length
  FROM eventlog.read('toasted', 0, 0);
SELECT read_matches('toasted', 0);
-- Out of line values are fetched while the segment is locked: the rows
-- stay intact after the transaction that read them ends.
BEGIN;
CREATE TEMP TABLE kept AS SELECT * FROM eventlog.read('toasted', 0, 0);
COMMIT;
SELECT count(*), md5(string_agg(value::text, ',' ORDER BY offset_id)) =
       (SELECT md5(string_agg(value::text, ',' ORDER BY offset_id)) FROM segment_rows('toasted')) AS same
  FROM kept;
DROP TABLE kept;

-- 4. Reads across segment rolls (each maintenance round below rolls the
-- active segment, which is over segment_bytes).
SELECT eventlog.create_topic('rolls', 1, segment_bytes => 65536);
SELECT count(*) FROM eventlog.produce_batch('rolls', NULL,
    (SELECT array_agg(jsonb_build_object('i', i, 'pad', repeat('x', 200)) ORDER BY i)
       FROM generate_series(0, 299) i));
SELECT action, partition FROM eventlog.enforce_retention('rolls');
SELECT count(*) FROM eventlog.produce_batch('rolls',
    (SELECT array_agg('k' || i ORDER BY i) FROM generate_series(300, 599) i),
    (SELECT array_agg(jsonb_build_object('i', i) ORDER BY i) FROM generate_series(300, 599) i));
SELECT action, partition FROM eventlog.enforce_retention('rolls');
SELECT count(*) FROM eventlog.produce_batch('rolls', NULL,
    (SELECT array_agg(jsonb_build_object('i', i) ORDER BY i) FROM generate_series(600, 609) i));
SELECT segment_no, base_offset FROM eventlog.segment_catalog s
  JOIN eventlog.topic_catalog t USING (topic_id) WHERE t.name = 'rolls' ORDER BY segment_no;
SELECT read_matches('rolls', 0);
SELECT count(*), min(offset_id), max(offset_id), sum((value->>'i')::int) = sum(offset_id) AS in_order
  FROM eventlog.read('rolls', 0, 250, 400);

-- 5. The record type changed by its owner (a superuser can ALTER it): an
-- attribute added, or one of another type, is refused with a clear error
-- (before, read put its datums in the wrong columns); one added and
-- dropped again stays in the type, always NULL, and read works again.
ALTER TYPE eventlog.record ADD ATTRIBUTE extra integer;
SELECT code, message, detail, hint FROM expect_error($$SELECT * FROM eventlog.read('rows', 0, 0)$$);
ALTER TYPE eventlog.record DROP ATTRIBUTE extra;
ALTER TYPE eventlog.record ALTER ATTRIBUTE key TYPE varchar(10);
SELECT code, message, detail FROM expect_error($$SELECT * FROM eventlog.read('rows', 0, 0)$$);
ALTER TYPE eventlog.record ALTER ATTRIBUTE key TYPE text;
SELECT offset_id, key, value, headers FROM eventlog.read('rows', 0, 0, 3);
SELECT read_matches('rows', 0), read_matches('toasted', 0), read_matches('rolls', 0);

SELECT eventlog.drop_topic(t) FROM unnest(ARRAY['rows', 'toasted', 'rolls']) t;
DROP FUNCTION read_matches(text, integer);
DROP FUNCTION segment_rows(text);
