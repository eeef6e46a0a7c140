--
-- Consumer groups at their edges: what eventlog.poll, commit and the
-- rebalance (C since 0.3.0, src/group*.c) must do exactly as the PL/pgSQL
-- code before them did (this file's expected output was made with it):
-- lock keys, read-only transactions, the assignment and its generations,
-- resets, and every argument NULL or out of range.
--
\set SHOW_CONTEXT never
SELECT eventlog.create_topic('edges', 4);
SELECT count(*) FROM generate_series(0, 3) p,
       LATERAL eventlog.produce_batch('edges', NULL, ARRAY['"x"', '"y"', '"z"']::jsonb[], partition => p);

-- The lock key of a group's partition (or membership, -1) is the hash it
-- always was: seek, delete_group and polls of one group meet on it.
SELECT t, length(g) AS group_length, p, eventlog._group_lock_key(t, g, p) = hashtextextended(format('pg_eventlog/%s/%s/%s', t, p, g), 7) AS same_key
  FROM (VALUES (1, 'g', 0), (42, 'grüße', -1), (7, repeat('é', 200), 3), (2, '', 1)) v(t, g, p);

-- SQL takes pg_eventlog's locks by name, never by kind number (src/locks.c):
-- each function takes the kind (pg_locks.objsubid 17664 + kind) and key the
-- C code takes, exclusively, to the end of the transaction; "try" on a lock
-- the transaction holds succeeds.
BEGIN;
SELECT eventlog._lock_routing(5, 3), eventlog._lock_maintenance(6),
       eventlog._try_lock_maintenance(5) AS maintenance,
       eventlog._lock_group_membership(6, 'g'),
       eventlog._try_lock_group_membership(5, 'g') AS membership,
       eventlog._lock_group_partition(6, 'g', 1),
       eventlog._try_lock_group_partition(5, 'g', 2) AS group_partition,
       eventlog._try_lock_group_partition(6, 'g', 1) AS held_already;
SELECT objsubid - 17664 AS kind, mode,
       CASE (classid::bigint << 32) | objid::bigint
         WHEN (5::bigint << 32) | 3 THEN 'routing 5/3'
         WHEN 5 THEN 'maintenance 5'
         WHEN 6 THEN 'maintenance 6'
         WHEN eventlog._group_lock_key(5, 'g', -1) THEN 'membership 5/g'
         WHEN eventlog._group_lock_key(6, 'g', -1) THEN 'membership 6/g'
         WHEN eventlog._group_lock_key(5, 'g', 2) THEN 'partition 5/g/2'
         WHEN eventlog._group_lock_key(6, 'g', 1) THEN 'partition 6/g/1'
       END AS what
  FROM pg_locks
 WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objsubid > 17664
 ORDER BY kind, what;
-- A NULL is an error, not a NULL that "IF NOT _try_lock_...()" would take
-- for success; a group partition lock is never the membership's (-1).
SELECT e.code, e.message FROM expect_error($$SELECT eventlog._try_lock_maintenance(NULL)$$) e;
SELECT e.code, e.message FROM expect_error($$SELECT eventlog._try_lock_group_membership(5, NULL)$$) e;
SELECT e.code, e.message FROM expect_error($$SELECT eventlog._lock_routing(5, NULL)$$) e;
SELECT e.code, e.message FROM expect_error($$SELECT eventlog._try_lock_group_partition(5, 'g', -1)$$) e;
ROLLBACK;

-- A read-only transaction may poll and find nothing, but not move a
-- position: with or without a position row, it fails as the position's
-- write does.
SELECT eventlog.create_group('edges', 'ro');
BEGIN READ ONLY;
SELECT e.code, e.message FROM expect_error($$SELECT * FROM eventlog.poll('edges', 'ro', 5)$$) e;
ROLLBACK;
BEGIN READ ONLY;
SELECT e.code, e.message FROM expect_error($$SELECT * FROM eventlog.poll('edges', 'ro-new', 5)$$) e;
ROLLBACK;
SELECT count(*) AS ro_read_all FROM eventlog.poll('edges', 'ro', 100, partitions => 4);
BEGIN READ ONLY;
SELECT count(*) AS nothing_left FROM eventlog.poll('edges', 'ro', 5, partitions => 4);
ROLLBACK;
SELECT partition, next_offset FROM eventlog.group_offsets WHERE group_name LIKE 'ro%' ORDER BY 1;

-- At most "partitions" partitions per poll, each from its position.
SELECT count(DISTINCT partition) AS partitions, count(*) AS records
  FROM eventlog.poll('edges', 'two', 100, partitions => 2);
SELECT count(*) AS positions FROM eventlog.group_offsets WHERE group_name = 'two';

-- The rebalance: members holding more first (then by name) keep up to
-- their share, the surplus (their highest partitions) is released, and
-- unowned partitions go, in order, to members below their share.  Each
-- change of hands bumps the generation: released and given again is two.
SELECT count(*) FROM eventlog.poll('edges', 'crew', 100, member => 'a');
SELECT partition, owner_member, generation FROM eventlog.group_offsets WHERE group_name = 'crew' ORDER BY 1;
SELECT count(*) FROM eventlog.poll('edges', 'crew', 100, member => 'b');
SELECT partition, owner_member, generation FROM eventlog.group_offsets WHERE group_name = 'crew' ORDER BY 1;
SELECT count(*) FROM eventlog.poll('edges', 'crew', 100, member => 'c');
SELECT partition, owner_member, generation FROM eventlog.group_offsets WHERE group_name = 'crew' ORDER BY 1;
SELECT eventlog.leave('edges', 'crew', 'a');
SELECT partition, owner_member, generation, fetch_offset FROM eventlog.group_offsets WHERE group_name = 'crew' ORDER BY 1;
-- Fetch positions move with polls, commits move the group.
SELECT partition, count(*) FROM eventlog.poll('edges', 'crew', 100, member => 'b') GROUP BY 1 ORDER BY 1;
SELECT * FROM eventlog.commit('edges', 'crew', 'b', metadata => 'batch 1') ORDER BY 1;
SELECT * FROM eventlog.commit('edges', 'crew', 'b') ORDER BY 1;
SELECT partition, next_offset, metadata, fetch_offset FROM eventlog.group_offsets WHERE group_name = 'crew' ORDER BY 1;
SELECT * FROM eventlog.commit('edges', 'crew', 'b', partition => 0, next_offset => 1);
SELECT partition, next_offset, metadata FROM eventlog.group_offsets WHERE group_name = 'crew' AND partition = 0;
SELECT * FROM eventlog.commit('edges', 'crew', 'c', partition => 3, generation => 5);
-- A read-only transaction can neither poll as a member nor commit.
BEGIN READ ONLY;
SELECT e.code, e.message FROM expect_error($$SELECT * FROM eventlog.poll('edges', 'crew', 10, member => 'b')$$) e;
ROLLBACK;
BEGIN READ ONLY;
SELECT e.code, e.message FROM expect_error($$SELECT * FROM eventlog.commit('edges', 'crew', 'b')$$) e;
ROLLBACK;
BEGIN READ ONLY;
SELECT e.code, e.message FROM expect_error($$SELECT * FROM eventlog.commit('edges', 'crew', 'b', partition => 0, next_offset => 1)$$) e;
ROLLBACK;
SELECT e.* FROM (VALUES
    ($$SELECT * FROM eventlog.commit('edges', 'crew', 'c', partition => 3, generation => 4)$$),
    ($$SELECT * FROM eventlog.commit('edges', 'crew', 'c', partition => 0)$$),
    ($$SELECT * FROM eventlog.commit('edges', 'crew', 'c', partition => 9)$$),
    ($$SELECT * FROM eventlog.commit('edges', 'crew', 'c', partition => 3, next_offset => 4)$$),
    ($$SELECT * FROM eventlog.commit('edges', 'crew', 'a')$$),
    ($$SELECT * FROM eventlog.commit('edges', 'nobody', 'c')$$),
    ($$SELECT * FROM eventlog.commit(NULL, 'crew', 'c')$$),
    ($$SELECT * FROM eventlog.commit('edges', NULL, 'c')$$),
    ($$SELECT * FROM eventlog.commit('edges', 'crew', '')$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;

-- Retention passed a position: auto_reset 'latest' moves it to the last
-- stable offset, 'earliest' to the log start; no reset is an error.
SELECT eventlog.create_group('edges', 'late', auto_reset => 'latest');
SELECT eventlog.create_group('edges', 'early', auto_reset => 'earliest');
SELECT eventlog.create_group('edges', 'strict');
SELECT count(*) FROM eventlog.poll('edges', 'strict-members', 1, member => 'm');
UPDATE eventlog.partition_catalog SET log_start_offset = 2
 WHERE topic_id = (SELECT topic_id FROM eventlog.topic_catalog WHERE name = 'edges') AND partition = 1;
SELECT g, count(*) AS records, min(r.offset_id)
  FROM (VALUES ('late'), ('early')) v(g), LATERAL eventlog.poll('edges', g, 100, partitions => 4) r
 WHERE r.partition = 1 GROUP BY 1 ORDER BY 1;
SELECT group_name, next_offset FROM eventlog.group_offsets
 WHERE group_name IN ('late', 'early') AND partition = 1 ORDER BY 1;
SELECT e.code, e.message, e.detail FROM expect_error($$SELECT * FROM eventlog.poll('edges', 'strict', 100, partitions => 4)$$) e;
-- A member's position is checked as well (partition 1: none fetched yet).
SELECT e.code, e.message FROM expect_error($$SELECT * FROM eventlog.poll('edges', 'strict-members', 100, member => 'm')$$) e;

-- Every argument NULL or out of range: a clear error, nothing changed.
SELECT e.* FROM (VALUES
    ($$SELECT * FROM eventlog.poll(NULL, 'g')$$),
    ($$SELECT * FROM eventlog.poll('edges', 'g', NULL)$$),
    ($$SELECT * FROM eventlog.poll('edges', 'g', 10, NULL)$$),
    ($$SELECT * FROM eventlog.poll('edges', 'g', 10, partitions => -1)$$),
    ($$SELECT * FROM eventlog.poll('edges', 'g', 10, wait => '2 days')$$),
    ($$SELECT * FROM eventlog.poll('edges', 'g', 10, wait => '1 mon')$$),
    ($$SELECT * FROM eventlog.poll('edges', 'g', 10, member => 'm', session_timeout => NULL)$$),
    ($$SELECT * FROM eventlog.poll('edges', 'g', 10, member => 'm', session_timeout => '-1 s')$$),
    ($$SELECT * FROM eventlog.poll('edges', 'g', 10, member => repeat('m', 201))$$),
    ($$SELECT * FROM eventlog.poll('edges', repeat('é', 201))$$),
    ($$SELECT * FROM eventlog.poll('edges', 'crew')$$),
    ($$SELECT * FROM eventlog.poll('edges', 'g', 10, member => 'm', wait => '1 minute', session_timeout => '10 s')$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
SELECT count(*) AS members FROM eventlog.group_members WHERE group_name = 'g';
SELECT count(*) AS positions FROM eventlog.group_offsets WHERE group_name = 'g';
-- A long name is shown cut at 210 characters, whatever their size.
SELECT length(e.message) FROM expect_error($$SELECT * FROM eventlog.poll('edges', repeat('é', 300))$$) e;
-- A long poll that finds nothing returns nothing when its wait ends.
SELECT count(*) AS nothing FROM eventlog.poll('edges', 'ro', 5, partitions => 4, wait => '10 ms');

-- A trigger someone added to group_offsets fires for every position a poll
-- moves, as it did when polls wrote them with an upsert statement (a poll
-- must not update the row in place behind its back).
SELECT eventlog.create_group('edges', 'audited', start_from => 'latest');
SELECT count(*) FROM (SELECT eventlog.produce('edges', 'audit', '1', partition => 2) FROM generate_series(1, 4)) s;
CREATE TABLE edges_audit (group_name text, partition integer, moved bigint);
CREATE FUNCTION edges_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.edges_audit VALUES (NEW.group_name, NEW.partition, NEW.next_offset - OLD.next_offset);
    RETURN NEW;
END $$;
CREATE TRIGGER edges_audit AFTER UPDATE ON eventlog.group_offsets
    FOR EACH ROW EXECUTE FUNCTION edges_audit();
SELECT count(*) FROM eventlog.poll('edges', 'audited', 2, partitions => 4);
SELECT count(*) FROM eventlog.poll('edges', 'audited', 2, partitions => 4);
SELECT * FROM edges_audit;
DROP TRIGGER edges_audit ON eventlog.group_offsets;
DROP TABLE edges_audit;
DROP FUNCTION edges_audit();

-- Many polls of one group in one transaction: each keeps the position's
-- old version alive, so the page fills and the in-place update is no
-- longer HOT and inserts index entries itself (that path once crashed).
SELECT eventlog.create_topic('edges_many', 1);
SELECT count(*) FROM eventlog.produce_batch('edges_many', NULL,
    (SELECT array_agg(pg_catalog.to_jsonb(g)) FROM generate_series(1, 400) g));
DO $$
BEGIN
    FOR i IN 1 .. 400 LOOP
        PERFORM count(*) FROM eventlog.poll('edges_many', 'many', 1);
    END LOOP;
END $$;
SELECT next_offset FROM eventlog.group_offsets o JOIN eventlog.topic_catalog t USING (topic_id)
 WHERE t.name = 'edges_many' AND o.group_name = 'many';
SELECT eventlog.drop_topic('edges_many');
