--
-- Binary topics (format 'binary'): keys and values are bytea and headers
-- eventlog.header[], kept byte for byte as Kafka's records; and the
-- refusals between JSON and binary topics.
--
\set SHOW_CONTEXT never

-- 1. The format setting: 'json' by default, 'binary' as the last argument
-- (by name or by position), anything else refused.
SELECT eventlog.create_topic('bin', 3, format => 'binary');
SELECT eventlog.create_topic('bin.json', 1);
SELECT eventlog.create_topic('bin.pos', 1, '1 day', NULL, '1 hour', 65536, 'binary');
SELECT * FROM expect_error($$SELECT eventlog.create_topic('bin.bad', 1, format => 'avro')$$);
SELECT * FROM expect_error($$SELECT eventlog.create_topic('bin.bad', 1, format => NULL)$$);
SELECT * FROM expect_error($$SELECT eventlog.create_topic('bin.bad', 1, format => 'JSON')$$);
SELECT count(*) AS bad_topics FROM eventlog.topic_catalog WHERE name = 'bin.bad';
SELECT topic, partitions, format FROM eventlog.topics WHERE topic LIKE 'bin%' ORDER BY topic;
-- The catalog refuses another value, and alter_topic has no format.
SELECT code, message FROM expect_error($$UPDATE eventlog.topic_catalog SET format = 'xml' WHERE name = 'bin'$$);
SELECT count(*) AS alter_topic_with_format FROM pg_proc p
 WHERE p.oid = 'eventlog.alter_topic'::regproc AND 'format' = ANY (p.proargnames);

-- A binary topic's segments: bytea key and value, eventlog.header[] headers.
SELECT a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull
  FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog t USING (topic_id)
  JOIN pg_attribute a ON a.attrelid = ('eventlog_segments.' || quote_ident(s.table_name))::regclass
 WHERE t.name = 'bin' AND s.partition = 0 AND a.attnum > 0
 ORDER BY a.attnum;

-- 2. Round trip, byte for byte: every combination of NULL, empty and
-- odd bytes (\x00, invalid UTF-8) in key and value, and of NULL, empty and
-- non-empty headers (duplicate names, a NULL value, an empty value, order
-- kept), is read back exactly as produced.
CREATE TEMP TABLE sent AS
SELECT (ki - 1) * 12 + (vi - 1) * 3 + (hi - 1) AS n, k.key, v.value, h.headers
  FROM (VALUES (1, NULL::bytea), (2, '\x'::bytea), (3, '\x00'::bytea), (4, '\xc328ff00fe'::bytea)) k(ki, key),
       (VALUES (1, NULL::bytea), (2, '\x'::bytea), (3, '\x00'::bytea), (4, '\x80ff00'::bytea)) v(vi, value),
       (VALUES (1, NULL::eventlog.header[]), (2, '{}'::eventlog.header[]),
               (3, ARRAY[ROW('b', '\x02'), ROW('a', '\x01'), ROW('b', NULL), ROW('', '\x'),
                         ROW('é', '\x00ff')]::eventlog.header[])) h(hi, headers);
SELECT count(*) AS combinations FROM sent;
SELECT count(*) AS produced
  FROM (SELECT eventlog.produce_binary('bin', key, value, headers, partition => 0)
          FROM sent ORDER BY n) p;
SELECT count(*) AS read_back,
       count(*) FILTER (WHERE r.key IS NOT DISTINCT FROM s.key AND r.value IS NOT DISTINCT FROM s.value
                          AND r.headers IS NOT DISTINCT FROM s.headers) AS identical,
       count(*) FILTER (WHERE r.key IS NULL) AS null_keys,
       count(*) FILTER (WHERE r.key = '\x') AS empty_keys,
       count(*) FILTER (WHERE r.value IS NULL) AS tombstones,
       count(*) FILTER (WHERE r.value = '\x') AS empty_values,
       count(*) FILTER (WHERE r.headers IS NULL) AS null_headers,
       count(*) FILTER (WHERE cardinality(r.headers) = 0) AS empty_headers
  FROM eventlog.read_binary('bin', 0, 0) r JOIN sent s ON s.n = r.offset_id;
-- What read_binary returns, column by column.
SELECT topic, partition, offset_id, key, value, headers, event_time = append_time AS event_time_defaulted
  FROM eventlog.read_binary('bin', 0, 45, 4);
-- Headers keep their order, their duplicate names and their NULL values.
SELECT h.ord, h.name, h.value, h.value IS NULL AS null_value
  FROM eventlog.read_binary('bin', 0, 2, 1) r, unnest(r.headers) WITH ORDINALITY h(name, value, ord)
 ORDER BY h.ord;
-- The segment table holds the same bytes.
CREATE FUNCTION bin_segment(p integer) RETURNS text LANGUAGE sql AS $$
    SELECT 'eventlog_segments.' || quote_ident(s.table_name)
      FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog t USING (topic_id)
     WHERE t.name = 'bin' AND s.partition = p ORDER BY s.segment_no DESC LIMIT 1
$$;
CREATE FUNCTION segment_identical() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s g JOIN sent s ON s.n = g.offset_id'
                   ' WHERE g.key IS NOT DISTINCT FROM s.key AND g.value IS NOT DISTINCT FROM s.value'
                   ' AND g.headers IS NOT DISTINCT FROM s.headers', bin_segment(0)) INTO n;
    RETURN n;
END
$$;
SELECT segment_identical();
-- event_time is kept when given.
SELECT * FROM eventlog.produce_binary('bin', NULL, '\x01', partition => 1,
                                      event_time => '2020-01-01 00:00:00+00');
SELECT offset_id, event_time = '2020-01-01 00:00:00+00' AS given FROM eventlog.read_binary('bin', 1, 0);

-- Large values and headers (stored out of line) come back intact.
CREATE TEMP TABLE big AS
SELECT (SELECT string_agg(sha256(int4send(i)), ''::bytea) FROM generate_series(1, 4000) i) AS value;
SELECT length(value) AS big_value_bytes FROM big;
SELECT * FROM eventlog.produce_binary('bin', '\x0b', (SELECT value FROM big),
    ARRAY[ROW('big', (SELECT value FROM big))]::eventlog.header[], partition => 2);
SELECT r.value = b.value AS value_intact, r.headers[1].value = b.value AS header_intact
  FROM eventlog.read_binary('bin', 2, 0) r, big b;

-- 3. produce_binary_batch: positions in input order, the same bytes, NULL
-- fields of a message kept, event_time NULL meaning the append time.
SELECT * FROM eventlog.produce_binary_batch('bin', ARRAY[
    ROW('\x01', '\x00', NULL, NULL),
    ROW(NULL, NULL, '{}', NULL),
    ROW('\x', '\x', ARRAY[ROW('x', NULL), ROW('x', '\x')]::eventlog.header[], '2021-06-01 00:00:00+00'),
    ROW('\xff', '\xc3', NULL, NULL)]::eventlog.message[], partition => 2);
SELECT offset_id, key, value, headers, event_time = '2021-06-01 00:00:00+00' AS given,
       event_time = append_time AS defaulted
  FROM eventlog.read_binary('bin', 2, 1);
-- An empty batch appends nothing.
SELECT count(*) AS empty_batch FROM eventlog.produce_binary_batch('bin', '{}');
-- A larger batch, over several pages of several partitions, keyed.
SELECT count(*) AS batch,
       count(*) FILTER (WHERE p.partition = eventlog.partition_for_key('k' || p.i, 3)) AS in_key_partition
  FROM (SELECT row_number() OVER () AS i, b.*
          FROM eventlog.produce_binary_batch('bin',
                 (SELECT array_agg(ROW(convert_to('k' || i, 'UTF8'), sha256(int4send(i)), NULL, NULL)::eventlog.message
                                   ORDER BY i)
                    FROM generate_series(1, 3000) i)) b) p;
SELECT sum(n) AS records_in_batch_read
  FROM generate_series(0, 2) p,
       LATERAL (SELECT count(*) AS n FROM eventlog.read_binary('bin', p, 0, 100000)
                 WHERE substr(key, 1, 1) = '\x6b'::bytea) r;

-- 4. Key hashing: Kafka's murmur2 over the key's bytes, so a bytea key
-- lands where the same bytes as a text key land (Kafka's own vectors, as
-- in produce.sql), in produce_binary and produce_binary_batch alike.
SELECT eventlog.create_topic('bin.keys', 10, format => 'binary');
SELECT eventlog.create_topic('bin.keys.json', 10);
SELECT k,
       (eventlog.produce_binary('bin.keys', convert_to(k, 'UTF8'), NULL)).partition AS binary_partition,
       (eventlog.produce('bin.keys.json', k, NULL)).partition AS text_partition,
       eventlog.partition_for_key(k, 10) AS kafka_partition
  FROM (VALUES ('21'), ('foobar'), ('a-little-bit-long-string'), ('a-little-bit-longer-string'),
               ('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'), (''), ('ключ')) v(k);
SELECT count(*) AS batch_keys,
       count(*) FILTER (WHERE b.partition = eventlog.partition_for_key(k, 10)) AS in_kafka_partition
  FROM (SELECT k, row_number() OVER () AS i
          FROM unnest(ARRAY['21', 'foobar', '', 'ключ', 'x']) k) keys
  JOIN (SELECT row_number() OVER () AS i, b.*
          FROM eventlog.produce_binary_batch('bin.keys',
                 ARRAY(SELECT ROW(convert_to(k, 'UTF8'), NULL, NULL, NULL)::eventlog.message
                         FROM unnest(ARRAY['21', 'foobar', '', 'ключ', 'x']) k)) b) b USING (i);
-- A key that is no text at all is hashed too, always to the same partition.
SELECT count(DISTINCT (eventlog.produce_binary('bin.keys', '\xff00c3', NULL)).partition) AS partitions_of_one_key
  FROM generate_series(1, 5);
-- No key: round-robin, as produce; a keyless batch sticks to one partition.
SELECT count(DISTINCT p.partition) AS keyless_partitions, count(*) AS keyless
  FROM (SELECT (eventlog.produce_binary('bin.keys', NULL, '\x00')).partition
          FROM generate_series(1, 10)) p;
SELECT count(DISTINCT partition) AS keyless_batch_partitions
  FROM eventlog.produce_binary_batch('bin.keys',
         ARRAY(SELECT ROW(NULL, '\x00', NULL, NULL)::eventlog.message FROM generate_series(1, 20)));

-- 5. The wrong function for a topic's format: 42809, naming the right one.
SELECT * FROM expect_error($$SELECT eventlog.produce('bin', 'k', '{}')$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_batch('bin', ARRAY['k'], ARRAY['{}'::jsonb])$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read('bin', 0, 0)$$);
SELECT eventlog.create_group('bin', 'g', auto_reset => 'earliest');
SELECT eventlog.create_group('bin.json', 'g', auto_reset => 'earliest');
SELECT * FROM expect_error($$SELECT * FROM eventlog.poll('bin', 'g')$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.poll('bin', 'g', member => 'm1')$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin.json', '\x00', '\x00')$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_batch('bin.json', ARRAY[ROW(NULL, '\x00', NULL, NULL)]::eventlog.message[])$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read_binary('bin.json', 0, 0)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.poll_binary('bin.json', 'g')$$);
-- Change capture writes JSON: refused at setup, and the table left alone.
CREATE TABLE bin_captured (id integer PRIMARY KEY, note text);
SELECT * FROM expect_error($$SELECT eventlog.capture('bin_captured', 'bin')$$);
SELECT count(*) AS capture_triggers FROM pg_trigger WHERE tgrelid = 'bin_captured'::regclass;
-- Nothing was written by the refused calls.
SELECT eventlog.high_watermark('bin.json', 0) AS json_records;

-- 6. Consumer groups on a binary topic: poll_binary, transactional and
-- member style, with the same positions, commit and views as poll.
SELECT eventlog.create_topic('bin.g', 1, format => 'binary');
SELECT count(*) FROM eventlog.produce_binary_batch('bin.g', ARRAY[
    ROW('\x01', '\x0a', NULL, NULL), ROW(NULL, NULL, '{}', NULL),
    ROW('\x03', '\x0c', ARRAY[ROW('h', NULL)]::eventlog.header[], NULL)]::eventlog.message[]);
SELECT eventlog.create_group('bin.g', 't', auto_reset => 'earliest');
SELECT partition, offset_id, key, value, headers FROM eventlog.poll_binary('bin.g', 't', 2);
SELECT partition, offset_id, key, value, headers FROM eventlog.poll_binary('bin.g', 't', 2);
SELECT partition, next_offset FROM eventlog.group_offsets o JOIN eventlog.topic_catalog t USING (topic_id)
 WHERE t.name = 'bin.g' AND o.group_name = 't';
SELECT eventlog.create_group('bin.g', 'm', auto_reset => 'earliest');
SELECT partition, offset_id, key, value FROM eventlog.poll_binary('bin.g', 'm', 5, member => 'm1');
SELECT * FROM eventlog.commit('bin.g', 'm', 'm1');

-- 7. Offsets, times and views work as for JSON topics.
SELECT eventlog.log_start_offset('bin', 0), eventlog.high_watermark('bin', 0),
       eventlog.last_stable_offset('bin', 0),
       eventlog.offset_for_time('bin', 1, '-infinity') AS first_offset;
SELECT partition, records, bytes > 0 AS has_bytes FROM eventlog.partitions WHERE topic = 'bin.pos';
SELECT partition, log_start_offset, high_watermark, records,
       oldest_append_time <= newest_append_time AS append_times
  FROM eventlog.partitions WHERE topic = 'bin.g';
-- Segments roll, and retention by size (which counts the bytea values)
-- removes the first segment whole: about 230 kB of records in it, over
-- retention_bytes.
SELECT eventlog.create_topic('bin.roll', 1, retention_bytes => 200000, segment_bytes => 65536,
                             format => 'binary');
SELECT count(*) FROM eventlog.produce_binary_batch('bin.roll',
    (SELECT array_agg(ROW(NULL, (SELECT string_agg(sha256(int4send(i * 100 + j)), ''::bytea)
                                   FROM generate_series(1, 32) j), NULL, NULL)::eventlog.message)
       FROM generate_series(0, 199) i));
SELECT count(*) >= 0 AS round FROM eventlog.enforce_retention('bin.roll');
SELECT count(*) >= 0 AS round FROM eventlog.enforce_retention('bin.roll');
SELECT count(*) FROM eventlog.produce_binary_batch('bin.roll',
    (SELECT array_agg(ROW(NULL, '\x01', NULL, NULL)::eventlog.message) FROM generate_series(1, 10)));
SELECT eventlog.log_start_offset('bin.roll', 0) AS log_start,
       (SELECT min(segment_no) FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog t USING (topic_id)
         WHERE t.name = 'bin.roll') AS first_segment;
SELECT count(*) AS readable, min(offset_id), max(offset_id)
  FROM eventlog.read_binary('bin.roll', 0, 200, 1000);

-- 8. Bad input: refused with the usual errors, nothing written.
CREATE TEMP TABLE hw_before AS
    SELECT p, eventlog.high_watermark('bin', p) AS hw FROM generate_series(0, 2) p;
SELECT * FROM expect_error($$SELECT eventlog.produce_binary(NULL, '\x00', '\x00')$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin.none', '\x00', '\x00')$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin', '\x00', '\x00', partition => -1)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin', '\x00', '\x00', partition => 3)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin', NULL, NULL, ARRAY[NULL]::eventlog.header[])$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin', NULL, NULL, ARRAY[ROW(NULL, '\x00')]::eventlog.header[])$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin', NULL, NULL, ARRAY[[ROW('a', NULL)], [ROW('b', NULL)]]::eventlog.header[])$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_batch(NULL, '{}')$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_batch('bin', NULL)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_batch('bin', '{}', partition => -1)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_batch('bin', ARRAY[ROW(NULL, '\x00', NULL, NULL), NULL]::eventlog.message[])$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_batch('bin', ARRAY[[ROW(NULL, '\x00', NULL, NULL)], [ROW(NULL, '\x00', NULL, NULL)]]::eventlog.message[])$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_batch('bin', ARRAY[ROW(NULL, '\x00', ARRAY[ROW(NULL, NULL)]::eventlog.header[], NULL)]::eventlog.message[])$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read_binary(NULL, 0, 0)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read_binary('bin.none', 0, 0)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read_binary('bin', -1, 0)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read_binary('bin', 0, -1)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read_binary('bin', 0, 1000000)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read_binary('bin', 0, 0, 0)$$);
-- Records over eventlog.max_record_bytes (key, value and headers): one
-- too large refuses the whole batch.
SET eventlog.max_record_bytes = 1024;
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin', NULL, (SELECT value FROM big))$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin', NULL, NULL, ARRAY[ROW('h', (SELECT value FROM big))]::eventlog.header[])$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_batch('bin', ARRAY[ROW('\x01', '\x00', NULL, NULL), ROW(NULL, (SELECT value FROM big), NULL, NULL)]::eventlog.message[])$$);
RESET eventlog.max_record_bytes;
SELECT count(*) AS partitions_unchanged FROM hw_before WHERE eventlog.high_watermark('bin', p) = hw;

-- 9. Privileges: as produce and read.  A role without them is refused;
-- granted, it produces and reads.
CREATE ROLE regress_bin_app;
SET ROLE regress_bin_app;
SELECT * FROM expect_error($$SELECT eventlog.produce_binary('bin', NULL, '\x00')$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_batch('bin', ARRAY[ROW(NULL, '\x00', NULL, NULL)]::eventlog.message[])$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read_binary('bin', 0, 0)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.poll_binary('bin.g', 't')$$);
SELECT * FROM expect_error($$SELECT eventlog.create_topic('bin.mine', format => 'binary')$$);
RESET ROLE;
SELECT eventlog.grant('bin', 'all', 'regress_bin_app');
SELECT eventlog.grant('bin.g', 'consume', 'regress_bin_app');
SET ROLE regress_bin_app;
SELECT offset_id AS app_offset FROM eventlog.produce_binary('bin', NULL, '\x0a0b', partition => 1) \gset
SELECT count(*) FROM eventlog.produce_binary_batch('bin', ARRAY[ROW(NULL, '\x0c', NULL, NULL)]::eventlog.message[], 1);
SELECT offset_id - :app_offset AS offset_from_first, value FROM eventlog.read_binary('bin', 1, :app_offset);
SELECT count(*) AS polled FROM eventlog.poll_binary('bin.g', 't');
RESET ROLE;

-- 10. The guard refuses direct writes into a binary segment, and
-- drop_topic leaves nothing behind.
SELECT code, regexp_replace(message, 'seg_\d+_\d+_\d+', 'seg_N') AS message
  FROM expect_error(format($$INSERT INTO %s VALUES (99, NULL, NULL, NULL, now(), now())$$, bin_segment(0)));
SELECT code, regexp_replace(message, 'seg_\d+_\d+_\d+', 'seg_N') AS message
  FROM expect_error(format($$UPDATE %s SET value = '\x00'$$, bin_segment(0)));
CREATE TEMP TABLE bin_segments AS
    SELECT s.table_name FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog t USING (topic_id)
     WHERE t.name LIKE 'bin%';
SELECT count(eventlog.drop_topic(t)) AS dropped
  FROM unnest(ARRAY['bin', 'bin.json', 'bin.pos', 'bin.keys', 'bin.keys.json', 'bin.g', 'bin.roll']) t;
SELECT count(*) AS segment_tables_left
  FROM pg_class c JOIN bin_segments s ON c.relname = s.table_name
 WHERE c.relnamespace = 'eventlog_segments'::regnamespace;
DROP FUNCTION segment_identical(), bin_segment(integer);
DROP TABLE bin_captured;
DROP ROLE regress_bin_app;
