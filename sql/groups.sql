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

--
-- Member consumers: named members get partitions assigned, keep them while
-- they poll (heartbeat), commit separately, and are fenced when they lose
-- a partition.
--
SELECT eventlog.create_topic('work', 4);
SELECT count(*) FROM generate_series(0, 3) p,
       LATERAL eventlog.produce_batch('work', NULL, ARRAY['"x"', '"y"']::jsonb[], partition => p);
-- The first member gets every partition.
SELECT partition, count(*) FROM eventlog.poll('work', 'crew', 100, member => 'm1') GROUP BY 1 ORDER BY 1;
SELECT partition, owner_member, next_offset, fetch_offset FROM eventlog.group_offsets
 WHERE group_name = 'crew' ORDER BY 1;
-- A second member joins: m1 keeps half (sticky), m2 gets the rest from
-- the committed position (m1 had not committed them: at-least-once).
SELECT partition, count(*) FROM eventlog.poll('work', 'crew', 100, member => 'm2') GROUP BY 1 ORDER BY 1;
SELECT partition, owner_member FROM eventlog.consumer_groups WHERE group_name = 'crew' ORDER BY 1;
-- Commit what m1's polls returned, in the partitions it still owns.
SELECT * FROM eventlog.commit('work', 'crew', 'm1') ORDER BY 1;
-- Fencing: m1 no longer owns partition 3.
SELECT e.code, e.message, e.detail FROM expect_error($$SELECT * FROM eventlog.commit('work', 'crew', 'm1', partition => 3)$$) e;
-- A stale generation is refused too.
SELECT e.code, e.message FROM expect_error($$SELECT * FROM eventlog.commit('work', 'crew', 'm2', partition => 3, generation => 1)$$) e;
SELECT * FROM eventlog.commit('work', 'crew', 'm2', partition => 3, next_offset => 1);
-- More members than partitions: the extra ones get nothing, visibly.
SELECT count(*) FROM eventlog.poll('work', 'crew', 100, member => 'm3');
SELECT count(*) FROM eventlog.poll('work', 'crew', 100, member => 'm4');
SELECT count(*) FROM eventlog.poll('work', 'crew', 100, member => 'm5');
SELECT m.member, count(o.partition) AS partitions
  FROM eventlog.group_members m
  LEFT JOIN eventlog.group_offsets o ON o.topic_id = m.topic_id AND o.group_name = m.group_name
                                    AND o.owner_member = m.member
 WHERE m.group_name = 'crew' GROUP BY 1 ORDER BY 1;
-- seek refuses partitions members own, unless forced.
SELECT e.code, e.message FROM expect_error($$SELECT * FROM eventlog.seek('work', 'crew', 'earliest', partition => 0)$$) e;
SELECT * FROM eventlog.seek('work', 'crew', 'earliest', partition => 0, force => true);
-- Leaving hands the partitions over at once.
SELECT eventlog.leave('work', 'crew', 'm1');
SELECT eventlog.leave('work', 'crew', 'm2');
SELECT partition, owner_member FROM eventlog.group_offsets WHERE group_name = 'crew' ORDER BY 1;
-- A member that stops polling loses its partitions after its session timeout.
SELECT count(*) FROM eventlog.poll('work', 'crew', 100, member => 'm3', session_timeout => '1 second');
SELECT pg_sleep(1.2);
SELECT count(*) >= 0 AS polled FROM eventlog.poll('work', 'crew', 100, member => 'm4');
SELECT member FROM eventlog.group_members WHERE group_name = 'crew' ORDER BY 1;
-- A group with members refuses transactional polls, and the reverse is the
-- caller's choice.
SELECT e.code, e.message FROM expect_error($$SELECT * FROM eventlog.poll('work', 'crew')$$) e;
SELECT e.* FROM (VALUES
    ($$SELECT * FROM eventlog.poll('work', 'crew', member => '')$$),
    ($$SELECT * FROM eventlog.poll('work', 'crew', member => 'm9', session_timeout => '0 s')$$),
    ($$SELECT * FROM eventlog.commit('work', 'crew', NULL)$$),
    ($$SELECT * FROM eventlog.commit('work', 'crew', 'm4', next_offset => 3)$$),
    ($$SELECT * FROM eventlog.commit('work', 'crew', 'm4', partition => 0, next_offset => -1)$$),
    ($$SELECT eventlog.leave('work', 'crew', 'nobody')$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
-- A group polled without create_group has no positions yet (it starts from
-- the earliest offset): an empty partition it looks at first is left free,
-- never taken in place of the one that has records.
SELECT eventlog.create_topic('sparse', 3);
SELECT * FROM eventlog.produce('sparse', NULL, '"only"', partition => 1);
SELECT count(*) FILTER (WHERE got = 1) AS polls_that_found_it, count(*) AS polls
  FROM generate_series(1, 12) g,
       LATERAL (SELECT count(*) AS got FROM eventlog.poll('sparse', 'fresh-' || g)) p;
SELECT count(*) AS positions_kept FROM eventlog.group_offsets o
  JOIN eventlog.topic_catalog t USING (topic_id) WHERE t.name = 'sparse';
