-- Same key, same partition (docs/design.md, invariant 3), and the same
-- partition Kafka's default partitioner would pick: murmur2 over the key's UTF-8
-- bytes, & 0x7fffffff, modulo the partition count.
BEGIN;
SELECT plan(10);

-- Kafka's own vectors (clients/src/test/.../UtilsTest.java, testMurmur2).
SELECT is(eventlog.murmur2('21'), -973932308, 'murmur2("21")');
SELECT is(eventlog.murmur2('foobar'), -790332482, 'murmur2("foobar")');
SELECT is(eventlog.murmur2('a-little-bit-long-string'), -985981536, 'murmur2 of a 24-byte key');
SELECT is(eventlog.murmur2('a-little-bit-longer-string'), -1486304829, 'murmur2 of a 26-byte key (2-byte tail)');
SELECT is(eventlog.murmur2('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'), -58897971, 'murmur2 of a 48-byte key');
SELECT is(eventlog.murmur2('abc'), 479470107, 'murmur2 of a 3-byte key (3-byte tail)');

-- The partition is (hash & 0x7fffffff) % n.
SELECT is(eventlog.partition_for_key('foobar', 7), (-790332482 & 2147483647) % 7, 'partition of "foobar" in 7 partitions');

SELECT lives_ok($$SELECT eventlog.create_topic('tap_keys', 6)$$, 'create a 6-partition topic');
-- Every record of a key lands in the key's partition, over many keys.
SELECT is(
    (SELECT count(*)::int FROM (
        SELECT k, (eventlog.produce('tap_keys', k, '{}')).partition AS p
          FROM (SELECT 'key-' || (i % 50) AS k FROM generate_series(1, 300) i) keys) produced
      WHERE p <> eventlog.partition_for_key(k, 6)),
    0, '300 records of 50 keys: each in its key''s Kafka partition');
-- Multi-byte UTF-8 keys hash their UTF-8 bytes.
SELECT is(eventlog.murmur2('ключ'), eventlog.murmur2(convert_from('\xd0bad0bbd18ed187'::bytea, 'UTF8')),
          'a Cyrillic key hashes its UTF-8 bytes');

SELECT * FROM finish();
ROLLBACK;
