-- Change capture, edge cases found by a review of issue 14's batching.

-- 1. A key column added with a default before the table was captured: rows
-- written before it was added do not store it, and read as its default.
-- Their changes go out under the default (not a NULL key), and an UPDATE
-- that keeps the key is one 'u' (not a delete and a create under two
-- keys); the snapshot's records too.
CREATE TABLE ce_fast (id integer PRIMARY KEY, v text);
INSERT INTO ce_fast VALUES (1, 'a'), (2, 'b'), (3, 'c');
ALTER TABLE ce_fast ADD COLUMN region text NOT NULL DEFAULT 'eu';
SELECT eventlog.capture('ce_fast', 'ce.fast', key_columns => ARRAY['region', 'id'],
                        partitions => 4, snapshot => true);
UPDATE ce_fast SET v = 'x' WHERE id = 1;
DELETE FROM ce_fast WHERE id = 2;
UPDATE ce_fast SET region = 'us' WHERE id = 3;
SELECT key, value ->> 'op' AS op, value -> 'before' ->> 'region' AS before_region,
       value -> 'after' ->> 'region' AS after_region,
       eventlog.partition_for_key(key, 4) = partition AS right_partition
  FROM generate_series(0, 3) p, LATERAL eventlog.read('ce.fast', p, 0) r
 ORDER BY (key::jsonb ->> 'id')::int, key, offset_id;

DROP TABLE ce_fast;
SELECT eventlog.drop_topic('ce.fast');
