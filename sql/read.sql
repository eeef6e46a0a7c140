--
-- Reading: offsets, replay, paging, time lookup, own-transaction reads,
-- and every bad input.
--
\set SHOW_CONTEXT never

SELECT eventlog.create_topic('log', 2);
SELECT count(*) FROM eventlog.produce_batch('log', NULL,
    (SELECT array_agg(jsonb_build_object('i', i) ORDER BY i) FROM generate_series(0, 9) i),
    partition => 0);

-- From the beginning, in offset order; paging with max_records.
SELECT offset_id, value FROM eventlog.read('log', 0, 0, 3);
SELECT offset_id, value FROM eventlog.read('log', 0, 3, 3);
SELECT offset_id, value FROM eventlog.read('log', 0, 8);
-- At the end: nothing yet.
SELECT count(*) FROM eventlog.read('log', 0, 10);
SELECT count(*) FROM eventlog.read('log', 1, 0);
-- Replay: reading deletes nothing.
SELECT count(*) FROM eventlog.read('log', 0, 0);
SELECT count(*) FROM eventlog.read('log', 0, 0);
SELECT eventlog.log_start_offset('log', 0), eventlog.high_watermark('log', 0),
       eventlog.last_stable_offset('log', 0);

-- The record type's columns.
SELECT * FROM eventlog.read('log', 0, 9) r WHERE false;
SELECT topic, partition, offset_id, key, value, headers,
       event_time IS NOT NULL AS has_event_time, append_time IS NOT NULL AS has_append_time
  FROM eventlog.read('log', 0, 9);

-- A transaction reads what it produced, and is not held back by itself.
BEGIN;
SELECT * FROM eventlog.produce('log', NULL, '"mine"', partition => 0);
SELECT offset_id, value FROM eventlog.read('log', 0, 10);
SELECT eventlog.last_stable_offset('log', 0);
ROLLBACK;
-- The rolled-back offset 10 is a gap.
SELECT * FROM eventlog.produce('log', NULL, '"after the gap"', partition => 0);
SELECT offset_id, value FROM eventlog.read('log', 0, 10);
SELECT count(*) FROM eventlog.read('log', 0, 11);

-- Also inside REPEATABLE READ, and the reader sees records committed after
-- its snapshot (reads use a fresh snapshot, after the stable offset).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM eventlog.read('log', 0, 0);
SELECT * FROM eventlog.produce('log', NULL, '"rr"', partition => 0);
SELECT offset_id, value FROM eventlog.read('log', 0, 11);
COMMIT;

-- offset_for_time: the first offset appended at or after a time.
SELECT eventlog.offset_for_time('log', 0, '-infinity') AS from_start,
       eventlog.offset_for_time('log', 0, 'infinity') AS none_yet_so_stable_offset,
       eventlog.offset_for_time('log', 1, now()) AS empty_partition;
SELECT eventlog.offset_for_time('log', 0, r.append_time) = r.offset_id AS exact
  FROM eventlog.read('log', 0, 11, 1) r;
-- Against a linear scan, for a partition whose records span some time.
SELECT eventlog.create_topic('timed', 1);
DO $$
BEGIN
    FOR i IN 1 .. 20 LOOP
        PERFORM eventlog.produce('timed', NULL, jsonb_build_object('i', i));
        PERFORM pg_sleep(0.002);
    END LOOP;
END
$$;
SELECT count(*) AS mismatches
  FROM eventlog.read('timed', 0, 0) r,
       LATERAL (SELECT min(r2.offset_id) AS expected
                  FROM eventlog.read('timed', 0, 0) r2
                 WHERE r2.append_time >= r.append_time - interval '1 microsecond') x
 WHERE eventlog.offset_for_time('timed', 0, r.append_time - interval '1 microsecond') <> x.expected;
-- append_time never goes backwards along the offsets.
SELECT bool_and(append_time >= prev) AS monotonic
  FROM (SELECT append_time, lag(append_time) OVER (ORDER BY offset_id) AS prev
          FROM eventlog.read('timed', 0, 0)) s WHERE prev IS NOT NULL;

-- Bad input.
SELECT e.* FROM (VALUES
    ($$SELECT * FROM eventlog.read('log', 0, -1)$$),
    ($$SELECT * FROM eventlog.read('log', 0, 14)$$),
    ($$SELECT * FROM eventlog.read('log', 0, NULL)$$),
    ($$SELECT * FROM eventlog.read('log', NULL, 0)$$),
    ($$SELECT * FROM eventlog.read(NULL, 0, 0)$$),
    ($$SELECT * FROM eventlog.read('log', 2, 0)$$),
    ($$SELECT * FROM eventlog.read('nope', 0, 0)$$),
    ($$SELECT * FROM eventlog.read('log', 0, 0, 0)$$),
    ($$SELECT * FROM eventlog.read('log', 0, 0, NULL)$$),
    ($$SELECT eventlog.offset_for_time('log', 0, NULL)$$),
    ($$SELECT eventlog.offset_for_time('log', 5, now())$$),
    ($$SELECT eventlog.last_stable_offset('log', -1)$$),
    ($$SELECT eventlog.high_watermark('nope', 0)$$),
    ($$SELECT eventlog.log_start_offset('log', NULL)$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;

-- A log start offset moved by retention (simulated here in the catalog)
-- makes older offsets out of range, with a hint naming the start.
UPDATE eventlog.partition_catalog SET log_start_offset = 5
 WHERE topic_id = (SELECT topic_id FROM eventlog.topic_catalog WHERE name = 'log') AND partition = 0;
SELECT * FROM expect_error($$SELECT * FROM eventlog.read('log', 0, 4)$$);
SELECT min(offset_id) FROM eventlog.read('log', 0, 5);
SELECT log_start_offset, records FROM eventlog.partitions WHERE topic = 'log' AND partition = 0;

-- A topic dropped and created again under the same name is a new topic:
-- offsets start again at 0, and none of the old records remain.
SELECT eventlog.drop_topic('timed');
SELECT eventlog.create_topic('timed', 1);
SELECT * FROM eventlog.produce('timed', NULL, '"new topic"');
SELECT offset_id, value FROM eventlog.read('timed', 0, 0);
