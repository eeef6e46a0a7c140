-- The bad-input catalogue: every public function of the extension, called
-- with bad arguments, raises a clear error with its documented SQLSTATE
-- (docs/reference.md, "Errors") and leaves nothing behind.

-- What must not change: topics, partitions, segments, groups, positions,
-- members, the extension's relations, and triggers on user tables.
CREATE FUNCTION state() RETURNS TABLE (what text, n bigint) LANGUAGE sql AS $$
    SELECT 'topics', count(*) FROM eventlog.topic_catalog
    UNION ALL SELECT 'partitions', count(*) FROM eventlog.partition_catalog
    UNION ALL SELECT 'segments', count(*) FROM eventlog.segment_catalog
    UNION ALL SELECT 'groups', count(*) FROM eventlog.group_catalog
    UNION ALL SELECT 'positions', count(*) FROM eventlog.group_offsets
    UNION ALL SELECT 'members', count(*) FROM eventlog.group_members
    UNION ALL SELECT 'relations', count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace
    UNION ALL SELECT 'triggers', count(*) FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL SELECT 'records', coalesce(sum(eventlog.high_watermark(t.name, p.partition)), 0)
                FROM eventlog.topic_catalog t JOIN eventlog.partition_catalog p USING (topic_id)
$$;
SELECT eventlog.create_topic('bad', 2);
SELECT eventlog.create_group('bad', 'g');
CREATE TABLE bad_table (id integer PRIMARY KEY);
CREATE TEMP TABLE state_before AS SELECT * FROM state();

-- 1. Every public function with every argument NULL (typed, so that the
-- call names one function; procedures are CALLed).  Some accept it by design:
-- enforce_retention (NULL: every topic), murmur2 and partition_for_key
-- (STRICT: a NULL key has no hash), and the Kafka group calls, whose
-- protocol outcomes are Kafka error codes (INVALID_GROUP_ID for a NULL
-- group; kafka_list_groups(NULL) lists every group); none of them changes
-- anything.
SELECT p.oid::regprocedure AS function, e.code, e.message
  FROM pg_proc p,
       LATERAL (SELECT format(CASE p.prokind WHEN 'p' THEN 'CALL eventlog.%I(%s)' ELSE 'SELECT * FROM eventlog.%I(%s)' END,
                              p.proname,
                              string_agg('NULL::' || format_type(t, NULL), ', ' ORDER BY i)) AS sql
                  FROM unnest(p.proargtypes) WITH ORDINALITY AS a(t, i)) c,
       LATERAL expect_error(c.sql) e
 WHERE p.pronamespace = 'eventlog'::regnamespace AND p.proname !~ '^_'
   AND p.prorettype <> 'trigger'::regtype AND p.pronargs > 0
 ORDER BY 1::text;

-- 2. Hostile and out-of-range names and numbers.  By design, a negative
-- retention removes the limit (Kafka's -1), seek of a group without
-- positions starts it there (as Kafka's offset reset does), delete_group
-- then deletes it, and apply_changes of a topic with nothing to apply
-- applies nothing.
SELECT v.sql, e.code, e.message FROM (VALUES
    ($$SELECT eventlog.create_topic('', 1)$$),
    ($$SELECT eventlog.create_topic('a"b', 1)$$),
    ($$SELECT eventlog.create_topic('x; DROP TABLE bad_table; --', 1)$$),
    ($$SELECT eventlog.create_topic('ü', 1)$$),
    ($$SELECT eventlog.create_topic(repeat('a', 201), 1)$$),
    ($$SELECT eventlog.create_topic('zero', 0)$$),
    ($$SELECT eventlog.create_topic('negative', -1)$$),
    ($$SELECT eventlog.create_topic('huge', 2147483647)$$),
    ($$SELECT eventlog.create_topic('bad', 1)$$),
    ($$SELECT eventlog.alter_topic('bad', partitions => 1)$$),
    ($$SELECT eventlog.alter_topic('bad', retention => '-1 day')$$),
    ($$SELECT eventlog.produce('bad', 'k', '1', partition => 2)$$),
    ($$SELECT eventlog.produce('bad', 'k', '1', partition => -1)$$),
    ($$SELECT eventlog.produce('bad', 'k', '1', headers => '[1]')$$),
    ($$SELECT eventlog.produce('bad', 'k', to_jsonb(repeat('x', 2000000)))$$),
    ($$SELECT eventlog.produce('nope', 'k', '1')$$),
    ($$SELECT * FROM eventlog.read('bad', 0, -1)$$),
    ($$SELECT * FROM eventlog.read('bad', 0, 9223372036854775807)$$),
    ($$SELECT * FROM eventlog.read('bad', 0, 0, -5)$$),
    ($$SELECT * FROM eventlog.read('bad', 0, 0, 10, '-1 s')$$),
    ($$SELECT * FROM eventlog.poll('bad', '')$$),
    ($$SELECT * FROM eventlog.poll('bad', repeat('g', 201))$$),
    ($$SELECT * FROM eventlog.poll('bad', 'g', 0)$$),
    ($$SELECT * FROM eventlog.poll('bad', 'g', partitions => 0)$$),
    ($$SELECT * FROM eventlog.poll('nope', 'g')$$),
    ($$SELECT * FROM eventlog.seek('bad', 'g', 'sideways')$$),
    ($$SELECT * FROM eventlog.seek('bad', 'nope', 'earliest')$$),
    ($$SELECT * FROM eventlog.seek('bad', 'g', '-1', partition => 0)$$),
    ($$SELECT eventlog.create_group('bad', 'g')$$),
    ($$SELECT eventlog.create_group('bad', 'h', start_from => 'middle')$$),
    ($$SELECT eventlog.delete_group('bad', 'nope')$$),
    ($$SELECT * FROM eventlog.commit('bad', 'g', 'not-a-member')$$),
    ($$SELECT eventlog.capture('bad_table', 'x"y')$$),
    ($$SELECT eventlog.capture('bad_table', 'cap', key_columns => ARRAY['id; DROP TABLE bad_table'])$$),
    ($$SELECT eventlog.apply_changes('bad', 'g', 'bad_table')$$),
    ($$SELECT eventlog.drop_topic('nope')$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;

-- Internal functions are callable too (poll and capture call them as the
-- caller): they refuse NULLs, and a snapshot needs SELECT on the table.
CREATE ROLE bad_input_reader;
GRANT USAGE ON SCHEMA eventlog TO bad_input_reader;
SELECT v.sql, e.code, e.message FROM (VALUES
    ($$SELECT eventlog._await_records(NULL, '{0}', '{0}', '1 ms')$$),
    ($$SELECT eventlog._await_records('bad', '{0}', NULL, '1 ms')$$),
    ($$SELECT eventlog._await_records('bad', '{0,1}', '{0}', '1 ms')$$),
    ($$SELECT eventlog._capture_snapshot('bad_table', 'bad', ARRAY[NULL]::text[])$$),
    ($$SET ROLE bad_input_reader; SELECT eventlog._capture_snapshot('bad_table', 'bad', ARRAY['id'])$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
RESET ROLE;
DROP OWNED BY bad_input_reader;
DROP ROLE bad_input_reader;

-- 3. Hostile group and member names are data, never identifiers: they work,
-- and nothing else happens.
SELECT count(*) AS got FROM eventlog.poll('bad', $$g"; DROP TABLE bad_table; --$$, partitions => 2);
SELECT count(*) AS got FROM eventlog.poll('bad', $$m'); DROP TABLE bad_table; --$$,
                                         member => $$"; DROP TABLE bad_table; --$$);
SELECT group_name FROM eventlog.group_catalog ORDER BY 1;
SELECT to_regclass('bad_table') IS NOT NULL AS bad_table_still_there;

-- 4. Nothing was left behind by the errors (the two groups of step 3 are
-- the only change: their positions and one member).
SELECT s.what, b.n AS before, s.n AS after
  FROM state() s JOIN state_before b USING (what)
 WHERE s.n IS DISTINCT FROM b.n
 ORDER BY 1;

SELECT eventlog.drop_topic('bad');
DROP TABLE bad_table;
DROP FUNCTION state();
