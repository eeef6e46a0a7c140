--
-- Consumer groups, transactional style: positions commit in the caller's
-- transaction; two groups each see every record; seek, delete, lost
-- records, and every bad input.
--
\set SHOW_CONTEXT never
SELECT eventlog.create_topic('ledger', 2);
SELECT count(*) FROM eventlog.produce_batch('ledger',
    (SELECT array_agg('k' || (i % 4)) FROM generate_series(1, 12) i),
    (SELECT array_agg(to_jsonb(i)) FROM generate_series(1, 12) i));
SELECT r.partition, count(*) FROM generate_series(0, 1) p, LATERAL eventlog.read('ledger', p, 0) r
 GROUP BY 1 ORDER BY 1;

-- Roll back and the records come again; commit and they are done.
BEGIN;
SELECT partition, offset_id, value FROM eventlog.poll('ledger', 'billing', 100, partitions => 2) ORDER BY 1, 2;
ROLLBACK;
SELECT count(*) AS positions_after_rollback FROM eventlog.group_offsets WHERE group_name = 'billing';
BEGIN;
SELECT count(*) FROM eventlog.poll('ledger', 'billing', 100, partitions => 2);
COMMIT;
SELECT count(*) AS nothing_new FROM eventlog.poll('ledger', 'billing', 100, partitions => 2);
SELECT partition, committed_offset, lag, lost_records FROM eventlog.consumer_groups
 WHERE group_name = 'billing' ORDER BY 1;

-- A second group reads every record independently (broadcast).
SELECT count(*) AS shipping_sees_all FROM eventlog.poll('ledger', 'shipping', 100, partitions => 2);

-- Positions advance by what was returned, in offset order per partition.
SELECT eventlog.create_group('ledger', 'paged');
SELECT count(*), count(DISTINCT partition) AS partitions, bool_and(offset_id < 3) AS from_the_start
  FROM eventlog.poll('ledger', 'paged', 2, partitions => 2);
SELECT sum(next_offset) AS positions_moved_by FROM eventlog.group_offsets WHERE group_name = 'paged';

-- A group that starts from latest sees only new records.
SELECT eventlog.create_group('ledger', 'tail', start_from => 'latest');
SELECT count(*) AS old_records FROM eventlog.poll('ledger', 'tail', 100, partitions => 2);
SELECT * FROM eventlog.produce('ledger', 'new', '"new"', partition => 0);
SELECT partition, offset_id, value FROM eventlog.poll('ledger', 'tail', 100, partitions => 2);

-- A position may move past trailing aborted offsets; the counter never
-- hands them out again (it recovers above every committed position).
BEGIN;
SELECT * FROM eventlog.produce('ledger', NULL, '"aborted"', partition => 1);
ROLLBACK;
SELECT partition, offset_id FROM eventlog.poll('ledger', 'tail', 100, partitions => 2);
SELECT next_offset FROM eventlog.group_offsets WHERE group_name = 'tail' AND partition = 1;

-- seek: earliest, latest, an offset, a time.
SELECT * FROM eventlog.seek('ledger', 'billing', 'earliest') ORDER BY 1;
SELECT * FROM eventlog.seek('ledger', 'billing', '2', partition => 0);
SELECT * FROM eventlog.seek('ledger', 'billing', 'latest', partition => 1);
SELECT * FROM eventlog.seek('ledger', 'billing', '-infinity', partition => 1);

-- Lost records: a position below the log start offset (retention removed
-- records the group had not read) is an error, never a silent skip...
UPDATE eventlog.partition_catalog SET log_start_offset = 3
 WHERE topic_id = (SELECT topic_id FROM eventlog.topic_catalog WHERE name = 'ledger') AND partition = 0;
SELECT * FROM eventlog.seek('ledger', 'billing', '0', partition => 0);
SELECT partition, lost_records FROM eventlog.consumer_groups WHERE group_name = 'billing' ORDER BY 1;
SELECT e.code, e.message, e.hint FROM expect_error($$SELECT * FROM eventlog.poll('ledger', 'billing', 100, partitions => 2)$$) e;
-- ...unless the group resets automatically.
SELECT eventlog.create_group('ledger', 'resetting', auto_reset => 'earliest');
UPDATE eventlog.group_offsets SET next_offset = 0 WHERE group_name = 'resetting';
SELECT partition, min(offset_id) FROM eventlog.poll('ledger', 'resetting', 100, partitions => 2) GROUP BY 1 ORDER BY 1;

-- delete_group forgets positions and settings.
SELECT eventlog.delete_group('ledger', 'paged');
SELECT count(*) FROM eventlog.group_offsets WHERE group_name = 'paged';

-- Bad input: each a clear error, nothing changed.
SELECT e.* FROM (VALUES
    ($$SELECT * FROM eventlog.poll('ledger', '')$$),
    ($$SELECT * FROM eventlog.poll('ledger', NULL)$$),
    ($$SELECT * FROM eventlog.poll('ledger', repeat('g', 201))$$),
    ($$SELECT * FROM eventlog.poll('nope', 'g')$$),
    ($$SELECT * FROM eventlog.poll('ledger', 'g', 0)$$),
    ($$SELECT * FROM eventlog.poll('ledger', 'g', 10, partitions => 0)$$),
    ($$SELECT eventlog.create_group('ledger', 'tail')$$),
    ($$SELECT eventlog.create_group('ledger', 'x', start_from => 'middle')$$),
    ($$SELECT eventlog.create_group('ledger', 'x', auto_reset => 'sometimes')$$),
    ($$SELECT * FROM eventlog.seek('ledger', 'billing', 'yesterday-ish')$$),
    ($$SELECT * FROM eventlog.seek('ledger', 'billing', '-5')$$),
    ($$SELECT * FROM eventlog.seek('ledger', 'billing', '99999')$$),
    ($$SELECT * FROM eventlog.seek('ledger', 'billing', 'earliest', partition => 7)$$),
    ($$SELECT * FROM eventlog.seek('ledger', 'billing', NULL)$$),
    ($$SELECT eventlog.delete_group('ledger', 'never-existed')$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
SELECT group_name, count(*) FROM eventlog.group_offsets GROUP BY 1 ORDER BY 1;
