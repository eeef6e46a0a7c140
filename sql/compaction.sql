-- Log compaction (issue 17): settings, their errors, keyless records
-- refused by compacted topics, eventlog.compact, and reads across the gaps
-- compaction leaves.
SET client_min_messages = warning;

-- Settings: Kafka's names, shown in eventlog.topics.  A policy list is
-- taken in any order and stored in one spelling.
SELECT eventlog.create_topic('cmp.plain');
SELECT eventlog.create_topic('cmp.state', cleanup_policy => 'compact',
                             delete_retention => '2 hours', min_compaction_lag => '5 minutes',
                             max_compaction_lag => '1 day');
SELECT eventlog.create_topic('cmp.both', cleanup_policy => 'delete, compact', format => 'binary');
SELECT topic, cleanup_policy, delete_retention, min_compaction_lag, max_compaction_lag
  FROM eventlog.topics WHERE topic LIKE 'cmp.%' ORDER BY topic;

-- Bad values: 22023, and nothing created or changed.
CREATE FUNCTION pg_temp.expect_error(sql text, OUT code text, OUT message text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    code := 'none';
    message := 'statement succeeded';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
END
$$;
SELECT c.sql, e.code, e.message
  FROM (VALUES
    ($$SELECT eventlog.create_topic('cmp.bad', cleanup_policy => 'compacted')$$),
    ($$SELECT eventlog.create_topic('cmp.bad', cleanup_policy => '')$$),
    ($$SELECT eventlog.create_topic('cmp.bad', cleanup_policy => NULL)$$),
    ($$SELECT eventlog.create_topic('cmp.bad', cleanup_policy => 'compact', delete_retention => '-1 second')$$),
    ($$SELECT eventlog.create_topic('cmp.bad', cleanup_policy => 'compact', delete_retention => NULL)$$),
    ($$SELECT eventlog.create_topic('cmp.bad', min_compaction_lag => '-1 minute')$$),
    ($$SELECT eventlog.create_topic('cmp.bad', max_compaction_lag => '0')$$),
    ($$SELECT eventlog.create_topic('cmp.bad', min_compaction_lag => '2 hours', max_compaction_lag => '1 hour')$$),
    ($$SELECT eventlog.alter_topic('cmp.state', cleanup_policy => 'none')$$),
    ($$SELECT eventlog.alter_topic('cmp.state', max_compaction_lag => '1 minute')$$),
    ($$SELECT eventlog.alter_topic('cmp.state', delete_retention => '-1 day')$$)
  ) AS c(sql), LATERAL pg_temp.expect_error(c.sql) e;
SELECT count(*) AS bad_topics FROM eventlog.topics WHERE topic = 'cmp.bad';

-- alter_topic: NULL leaves a setting as it is, a negative max_compaction_lag
-- removes it.
SELECT eventlog.alter_topic('cmp.state', max_compaction_lag => '-1 second');
SELECT eventlog.alter_topic('cmp.plain', cleanup_policy => 'compact,delete', delete_retention => '0');
SELECT topic, cleanup_policy, delete_retention, min_compaction_lag, max_compaction_lag
  FROM eventlog.topics WHERE topic LIKE 'cmp.%' ORDER BY topic;
SELECT eventlog.alter_topic('cmp.plain', cleanup_policy => 'delete');

-- Compacted topics refuse records without a key in every produce path; a
-- tombstone (a NULL value with a key) is a record like any other.
SELECT c.sql, e.code, e.message
  FROM (VALUES
    ($$SELECT eventlog.produce('cmp.state', NULL, '1')$$),
    ($$SELECT eventlog.produce('cmp.state', NULL, '1', partition => 0)$$),
    ($$SELECT eventlog.produce_batch('cmp.state', ARRAY['a', NULL], ARRAY['1', '2']::jsonb[])$$),
    ($$SELECT eventlog.produce_binary('cmp.both', NULL, '\x01')$$),
    ($$SELECT eventlog.produce_binary_batch('cmp.both', ARRAY[ROW('\x01', '\x01', NULL, NULL), ROW(NULL, '\x02', NULL, NULL)]::eventlog.message[])$$),
    ($$SELECT eventlog.produce('cmp.state', 'a', NULL)$$),
    ($$SELECT eventlog.produce('cmp.plain', NULL, '1')$$)
  ) AS c(sql), LATERAL pg_temp.expect_error(c.sql) e;
SELECT count(*) AS refused_batches_left_nothing
  FROM eventlog.read('cmp.state', 0, 0) WHERE key IS DISTINCT FROM 'a';

-- Change capture into a compacted topic: every change has the row's key.
CREATE TABLE cmp_accounts (id int PRIMARY KEY, balance int);
SELECT eventlog.create_topic('cmp.accounts', cleanup_policy => 'compact');
SELECT eventlog.capture('cmp_accounts', 'cmp.accounts');
INSERT INTO cmp_accounts VALUES (1, 10), (2, 20);
UPDATE cmp_accounts SET balance = balance + 1;
DELETE FROM cmp_accounts WHERE id = 2;
SELECT offset_id, key FROM eventlog.read('cmp.accounts', 0, 0) ORDER BY offset_id;

-- eventlog.compact: only a compacted topic, only its owner.
SELECT c.sql, e.code, e.message
  FROM (VALUES
    ($$SELECT * FROM eventlog.compact('cmp.plain')$$),
    ($$SELECT * FROM eventlog.compact('cmp.missing')$$),
    ($$SELECT * FROM eventlog.compact(NULL)$$)
  ) AS c(sql), LATERAL pg_temp.expect_error(c.sql) e;
CREATE ROLE regress_cmp_other;
SET ROLE regress_cmp_other;
SELECT * FROM eventlog.compact('cmp.state');
RESET ROLE;

-- A round.  Segments roll on every maintenance round once their oldest
-- record is a microsecond old; the next round records the new segment's
-- base, which makes the one before it compactable.  Keys k0..k3, several
-- values each, then a tombstone for k2 (kept: delete_retention is 1 day).
SELECT eventlog.create_topic('cmp.round', cleanup_policy => 'compact',
                             segment_interval => '1 microsecond', delete_retention => '1 day');
SELECT count(*) FROM (
    SELECT eventlog.produce('cmp.round', 'k' || (i % 4), to_jsonb(i)) FROM generate_series(0, 11) i) p;
SELECT eventlog.produce('cmp.round', 'k2', NULL);
SELECT action, segment, first_offset, next_offset FROM eventlog.enforce_retention('cmp.round');
SELECT count(*) FROM (
    SELECT eventlog.produce('cmp.round', 'k' || (i % 4), to_jsonb(i)) FROM generate_series(13, 14) i) p;
SELECT action, segment, first_offset, next_offset FROM eventlog.enforce_retention('cmp.round');
-- Segment 0 (offsets 0..12) is compacted; segment 1 (13, 14) waits until a
-- round records where segment 2 begins.  Within segment 0, the latest
-- record of each key stays (k1's offset 9 too: its offset 13 is beyond).
SELECT action, segment, first_offset, next_offset, bytes IS NOT NULL AS bytes_counted
  FROM eventlog.compact('cmp.round');
SELECT offset_id, key, value FROM eventlog.read('cmp.round', 0, 0);
-- Nothing more to do: the sealed log is clean.
SELECT count(*) AS actions FROM eventlog.compact('cmp.round');
-- A round that is not due (the worker's, every maintenance interval) takes
-- no lock on the segments: probing one with ACCESS EXCLUSIVE takes an xid
-- and writes WAL, per sealed segment, per partition, per round.
BEGIN;
SELECT count(*) AS actions FROM eventlog._compact_topic(eventlog._topic_id('cmp.round'), false);
SELECT pg_current_xact_id_if_assigned() IS NULL AS took_no_xid;
COMMIT;
SELECT topic, partition, cleanup_policy, cleaned_offset, dirty_ratio, rounds, records_removed,
       bytes_reclaimed > 0 AS reclaimed, last_compaction IS NOT NULL AS compacted,
       next_tombstone_expiry > now() + interval '23 hours' AS tombstone_expires_in_a_day
  FROM eventlog.compaction WHERE topic = 'cmp.round';
-- The segment is a new table under the old name, a segment like the others:
-- its primary key, and its guard against writes that are not produce.
SELECT i.indexrelid::regclass AS primary_key
  FROM pg_index i
 WHERE i.indrelid = format('eventlog_segments.%I', 'seg_' || eventlog._topic_id('cmp.round') || '_0_0')::regclass
   AND i.indisprimary;
SELECT e.code, e.message
  FROM pg_temp.expect_error(format('DELETE FROM eventlog_segments.%I',
                                   'seg_' || eventlog._topic_id('cmp.round') || '_0_0')) e;

-- Offsets never change; the log start stays; reads skip the gaps, from any
-- offset in one; offset_for_time still answers; a group positioned in a
-- removed range reads on from the next surviving record.
SELECT eventlog.log_start_offset('cmp.round', 0), eventlog.high_watermark('cmp.round', 0),
       eventlog.last_stable_offset('cmp.round', 0);
SELECT offset_id, key FROM eventlog.read('cmp.round', 0, 1, max_records => 2);
SELECT eventlog.offset_for_time('cmp.round', 0, '-infinity') AS first_record;
SELECT eventlog.create_group('cmp.round', 'cmp.g');
SELECT * FROM eventlog.seek('cmp.round', 'cmp.g', '3', partition => 0);
SELECT offset_id, key FROM eventlog.poll('cmp.round', 'cmp.g', 2);
SELECT offset_id, key FROM eventlog.poll('cmp.round', 'cmp.g', 10);

-- Settings beyond timestamptz's range (Kafka users write Long.MAX_VALUE for
-- "forever") hold compaction back, or keep tombstones forever, rather than
-- failing every round with "timestamp out of range".
SELECT eventlog.alter_topic('cmp.round', delete_retention => '300000 years',
                            min_compaction_lag => '100000 years', max_compaction_lag => '100000 years');
SELECT count(*) AS actions FROM eventlog.compact('cmp.round');
SELECT eventlog.alter_topic('cmp.round', min_compaction_lag => '0', max_compaction_lag => '-1 second');
SELECT count(*) AS actions FROM eventlog.compact('cmp.round');
SELECT next_tombstone_expiry FROM eventlog.compaction WHERE topic = 'cmp.round';

-- retention and segment_interval too (sql/install/retention.sql): a
-- maintenance round of a topic kept "forever" neither removes nor rolls a
-- segment, and does not fail.
SELECT eventlog.create_topic('cmp.forever', cleanup_policy => 'compact,delete',
                             segment_interval => '1 microsecond');
SELECT eventlog.produce('cmp.forever', 'a', '1') IS NOT NULL AS produced;
SELECT action, first_offset, next_offset FROM eventlog.enforce_retention('cmp.forever');
SELECT eventlog.produce('cmp.forever', 'a', '2') IS NOT NULL AS produced;
SELECT eventlog.alter_topic('cmp.forever', retention => '100000 years',
                            segment_interval => '100000 years', max_compaction_lag => '100000 years');
SELECT action, first_offset, next_offset FROM eventlog.enforce_retention('cmp.forever');
SELECT eventlog.create_topic('cmp.forever2', retention => '100000 years',
                             segment_interval => '100000 years');
SELECT eventlog.produce('cmp.forever2', 'a', '1') IS NOT NULL AS produced;
SELECT count(*) AS actions FROM eventlog.enforce_retention('cmp.forever2');
SELECT eventlog.drop_topic('cmp.forever'), eventlog.drop_topic('cmp.forever2');

-- The next round, with delete_retention 0: k2's tombstone goes, and k2's
-- value before it.  min_compaction_lag holds a segment back while it is young.
SELECT eventlog.alter_topic('cmp.round', delete_retention => '0', min_compaction_lag => '1 hour');
SELECT count(*) AS actions FROM eventlog.compact('cmp.round');
SELECT eventlog.alter_topic('cmp.round', min_compaction_lag => '0');
SELECT action, segment, first_offset, next_offset FROM eventlog.compact('cmp.round');
SELECT offset_id, key, value FROM eventlog.read('cmp.round', 0, 0);
-- No tombstone is kept now, nothing is dirty: a round that is not forced
-- (the worker's) has nothing to do and does not run (a NULL tombstone
-- expiry once made every such round read the whole sealed log).
SELECT rounds AS rounds_before FROM eventlog.compaction WHERE topic = 'cmp.round' \gset
SELECT count(*) AS actions FROM eventlog._compact_topic(eventlog._topic_id('cmp.round'), false);
SELECT rounds - :rounds_before AS rounds_run, next_tombstone_expiry
  FROM eventlog.compaction WHERE topic = 'cmp.round';

-- bytes (reclaimed) counts the heap, TOAST and index, not the visibility
-- map the compacted segment gets (its rows are frozen): a rewrite that
-- frees less than a page reclaims 0 bytes, never a negative number.
SELECT eventlog.create_topic('cmp.little', cleanup_policy => 'compact',
                             segment_interval => '1 microsecond');
SELECT count(*) FROM (
    SELECT eventlog.produce('cmp.little', 'k' || i, to_jsonb(i)) FROM generate_series(0, 40) i) p;
SELECT eventlog.produce('cmp.little', 'k0', '1') IS NOT NULL AS produced;
SELECT count(*) FROM eventlog.enforce_retention('cmp.little');
SELECT count(*) FROM eventlog.enforce_retention('cmp.little');
SELECT action, first_offset, next_offset, bytes FROM eventlog.compact('cmp.little');
SELECT records_removed, bytes_reclaimed FROM eventlog.compaction WHERE topic = 'cmp.little';
SELECT eventlog.drop_topic('cmp.little');

-- eventlog.compaction_memory bounds a round's key map: set in the server's
-- configuration (test/t/077_compaction.pl compacts with a small one).
SHOW eventlog.compaction_memory;
SELECT e.code, e.message
  FROM pg_temp.expect_error($$SET eventlog.compaction_memory = '1MB'$$) e;

-- 'compact' alone: retention removes nothing, however old; 'compact,delete'
-- removes whole segments again.
SELECT eventlog.alter_topic('cmp.round', retention => '1 microsecond');
SELECT count(*) AS removed FROM eventlog.enforce_retention('cmp.round') WHERE action = 'removed';
SELECT eventlog.alter_topic('cmp.round', cleanup_policy => 'compact,delete');
SELECT action, segment, first_offset, next_offset FROM eventlog.enforce_retention('cmp.round')
 WHERE action = 'removed';

SELECT eventlog.drop_topic('cmp.round');
SELECT count(*) AS compaction_rows_left FROM eventlog.compaction_catalog c
 WHERE NOT EXISTS (SELECT FROM eventlog.partition_catalog p
                    WHERE p.topic_id = c.topic_id AND p.partition = c.partition);
-- A mirror rebuilt from a compacted capture topic alone equals the table:
-- the latest change of each row is kept, a delete as its 'd' record.  Many
-- changes, segments rolled between them, compacted; then a new mirror is
-- built by apply_changes from offset 0.
SELECT eventlog.alter_topic('cmp.accounts', segment_interval => '1 microsecond');
CREATE PROCEDURE pg_temp.cmp_churn() LANGUAGE plpgsql AS $$
BEGIN
  FOR round IN 1 .. 4 LOOP
    INSERT INTO cmp_accounts SELECT i, i FROM generate_series(round * 10, round * 10 + 9) i;
    UPDATE cmp_accounts SET balance = balance + round WHERE id % 3 = round % 3;
    DELETE FROM cmp_accounts WHERE id % 7 = round;
    COMMIT;
    -- A new transaction, a later now(): the segment is old enough to roll.
    PERFORM eventlog.enforce_retention('cmp.accounts');
    COMMIT;
  END LOOP;
END $$;
CALL pg_temp.cmp_churn();
SELECT count(*) > 0 AS records_removed
  FROM eventlog.compact('cmp.accounts') WHERE action = 'compacted';
SELECT (SELECT count(*) FROM eventlog.read('cmp.accounts', 0, 0))
     < (SELECT eventlog.high_watermark('cmp.accounts', 0)) AS fewer_records_than_offsets;
CREATE TABLE cmp_mirror (id int PRIMARY KEY, balance int);
SELECT eventlog.apply_changes('cmp.accounts', 'rebuild', 'cmp_mirror', 10000) > 0 AS applied;
SELECT eventlog.apply_changes('cmp.accounts', 'rebuild', 'cmp_mirror', 10000) AS then_caught_up;
SELECT count(*) AS rows_differing
  FROM ((TABLE cmp_mirror EXCEPT TABLE cmp_accounts) UNION ALL (TABLE cmp_accounts EXCEPT TABLE cmp_mirror)) d;
SELECT count(*) AS rows_in_mirror FROM cmp_mirror;
DROP TABLE cmp_mirror;
SELECT eventlog.uncapture('cmp_accounts');
DROP TABLE cmp_accounts;
SELECT eventlog.drop_topic(t) FROM unnest(ARRAY['cmp.plain', 'cmp.state', 'cmp.both', 'cmp.accounts']) t;
DROP ROLE regress_cmp_other;
