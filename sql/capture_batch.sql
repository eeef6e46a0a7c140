-- Change capture produces a statement's changes in batches, one per
-- partition (src/capture_batch.c): the records of a statement in one
-- partition share one offset allocation (so one append_time), in the order
-- the rows changed.  And everything that held when each change was
-- produced at once still holds: order per key and per partition, changes
-- of rolled-back savepoints never produced, records a trigger produces in
-- the middle of a statement after the changes before them, and so on.

CREATE FUNCTION batch_env(v jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$ SELECT v - 'ts_ms' #- '{source,ts_ms}' #- '{source,txId}' #- '{source,lsn}' $$;

-- 1. One statement over rows hashing to three partitions: per partition,
-- one batch (one append_time) holding the rows in the order they changed.
CREATE TABLE cb_items (id integer PRIMARY KEY, v integer);
SELECT eventlog.capture('cb_items', 'cb.items', partitions => 3);
INSERT INTO cb_items SELECT i, 0 FROM generate_series(1, 30) i;
SELECT partition, count(*) AS records, count(DISTINCT append_time) AS batches,
       array_agg((key::jsonb ->> 'id')::int ORDER BY offset_id)
         = array_agg((key::jsonb ->> 'id')::int ORDER BY (key::jsonb ->> 'id')::int) AS in_row_order,
       min(offset_id) AS first_offset, max(offset_id) AS last_offset
  FROM generate_series(0, 2) p, LATERAL eventlog.read('cb.items', p, 0) r
 GROUP BY partition ORDER BY partition;
-- Each record's key is the one its partition is chosen by.
SELECT count(*) AS misplaced
  FROM generate_series(0, 2) p, LATERAL eventlog.read('cb.items', p, 0) r
 WHERE eventlog.partition_for_key(r.key, 3) <> r.partition;
-- source.lsn still increases within the transaction, from change to change
-- (in the order they were captured), although no WAL is written between
-- two changes of one batch.
SELECT bool_and(lsn > prev) AS lsn_increases
  FROM (SELECT (value #>> '{source,lsn}')::numeric AS lsn,
               lag((value #>> '{source,lsn}')::numeric) OVER (ORDER BY (key::jsonb ->> 'id')::int) AS prev
          FROM generate_series(0, 2) p, LATERAL eventlog.read('cb.items', p, 0) r) s
 WHERE prev IS NOT NULL;

-- 2. A statement of 2,500 changes to one partition is produced in batches
-- of 1,000 as it goes (its memory stays bounded), not at its end only.
CREATE TABLE cb_big (id integer PRIMARY KEY, pad text);
SELECT eventlog.capture('cb_big', 'cb.big');
INSERT INTO cb_big SELECT i, repeat('x', 100) FROM generate_series(1, 2500) i;
SELECT count(*) AS records, count(DISTINCT append_time) AS batches,
       bool_and(offset_id = (key::jsonb ->> 'id')::int - 1) AS in_row_order
  FROM eventlog.read('cb.big', 0, 0, 10000);

-- 3. A key change in a multi-row statement: the delete under the old key
-- and the create under the new one, each in its key's partition, each
-- key's changes in order.
UPDATE cb_items SET id = id + 100 WHERE id IN (1, 2, 3);
SELECT key, partition, array_agg(value ->> 'op' ORDER BY offset_id) AS ops
  FROM generate_series(0, 2) p, LATERAL eventlog.read('cb.items', p, 0) r
 WHERE (key::jsonb ->> 'id')::int IN (1, 2, 3, 101, 102, 103)
 GROUP BY key, partition ORDER BY (key::jsonb ->> 'id')::int;

-- 4. A rolled-back subtransaction inside one statement.  cb_items' AFTER
-- trigger (it fires after the capture trigger, by name) changes cb_side in
-- an exception block and fails for even ids: cb_side's changes of those
-- rows are rolled back and never produced; the changes of cb_items
-- captured before each block, which the block's statement produced, are
-- produced again after its rollback; nothing is lost or repeated, and
-- order holds.
CREATE TABLE cb_side (id integer PRIMARY KEY, n integer);
INSERT INTO cb_side SELECT i, 0 FROM generate_series(4, 30) i;
SELECT eventlog.capture('cb_side', 'cb.side');
CREATE FUNCTION cb_side_effect() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        UPDATE cb_side SET n = n + 1 WHERE id = NEW.id;
        IF NEW.id % 2 = 0 THEN
            RAISE EXCEPTION 'even';
        END IF;
    EXCEPTION WHEN raise_exception THEN
        NULL;
    END;
    RETURN NULL;
END
$$;
CREATE TRIGGER z_side_effect AFTER UPDATE ON cb_items FOR EACH ROW EXECUTE FUNCTION cb_side_effect();
CREATE TEMP TABLE cb_marks AS
SELECT p, eventlog.high_watermark('cb.items', p) AS hw FROM generate_series(0, 2) p;
UPDATE cb_items SET v = v + 1 WHERE id BETWEEN 4 AND 13;
SELECT count(*) AS item_changes, count(DISTINCT key) AS item_keys,
       count(*) FILTER (WHERE (value #>> '{after,v}')::int = 1) AS updated,
       bool_and(in_order) AS in_row_order
  FROM (SELECT key, value,
               (key::jsonb ->> 'id')::int > coalesce(lag((key::jsonb ->> 'id')::int)
                                                     OVER (PARTITION BY m.p ORDER BY offset_id), 0) AS in_order
          FROM cb_marks m, LATERAL eventlog.read('cb.items', m.p, m.hw) r) s;
-- Only the odd ids' side changes, once each.
SELECT array_agg((key::jsonb ->> 'id')::int ORDER BY (key::jsonb ->> 'id')::int) AS side_changes
  FROM eventlog.read('cb.side', 0, 0);
SELECT id, n FROM cb_side WHERE id BETWEEN 4 AND 7 ORDER BY id;
DROP TRIGGER z_side_effect ON cb_items;

-- 5. A row changed twice in one statement, the second time by an AFTER
-- trigger's own statement: both changes, in order.
CREATE TABLE cb_twice (id integer PRIMARY KEY, v integer);
SELECT eventlog.capture('cb_twice', 'cb.twice');
INSERT INTO cb_twice VALUES (1, 0), (2, 0);
CREATE FUNCTION cb_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE cb_twice SET v = v + 10 WHERE id = NEW.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER z_bump AFTER UPDATE ON cb_twice FOR EACH ROW WHEN (NEW.v < 10)
    EXECUTE FUNCTION cb_bump();
UPDATE cb_twice SET v = v + 1;
SELECT offset_id, key, value #>> '{before,v}' AS before_v, value #>> '{after,v}' AS after_v
  FROM eventlog.read('cb.twice', 0, 2);

-- 6. A record a trigger produces to the same partition in the middle of a
-- statement follows the changes captured before it; a trigger reading the
-- topic sees them.
CREATE TABLE cb_mixed (id integer PRIMARY KEY);
SELECT eventlog.capture('cb_mixed', 'cb.mixed');
CREATE FUNCTION cb_note() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    hw bigint := eventlog.high_watermark('cb.mixed', 0);
BEGIN
    PERFORM eventlog.produce('cb.mixed', 'note', jsonb_build_object('id', NEW.id, 'seen', hw));
    RETURN NULL;
END
$$;
CREATE TRIGGER z_note AFTER INSERT ON cb_mixed FOR EACH ROW EXECUTE FUNCTION cb_note();
INSERT INTO cb_mixed SELECT generate_series(1, 3);
SELECT offset_id, key, coalesce(value ->> 'op', value::text) AS what
  FROM eventlog.read('cb.mixed', 0, 0);

-- 7. COPY, and INSERT ... ON CONFLICT (creates and updates in one
-- statement, in the order they happened).
CREATE TABLE cb_copy (id integer PRIMARY KEY, v text);
SELECT eventlog.capture('cb_copy', 'cb.copy');
COPY cb_copy FROM stdin;
1	a
2	b
\.
SELECT offset_id, key, value ->> 'op' AS op FROM eventlog.read('cb.copy', 0, 0);
INSERT INTO cb_copy VALUES (3, 'c'), (1, 'a2'), (4, 'd'), (2, 'b2')
    ON CONFLICT (id) DO UPDATE SET v = excluded.v;
SELECT offset_id, key, value ->> 'op' AS op, value #>> '{after,v}' AS v FROM eventlog.read('cb.copy', 0, 2);

-- 8. An error in the middle of a statement, after a batch of its changes
-- was produced (an AFTER trigger fails at the 1,500th row): nothing of the
-- statement is readable, its offsets are a gap, the next statement's
-- records follow.
CREATE FUNCTION cb_fail() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.pad = 'boom' THEN
        RAISE EXCEPTION 'boom at row %', NEW.id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER z_fail AFTER INSERT ON cb_big FOR EACH ROW EXECUTE FUNCTION cb_fail();
SELECT eventlog.high_watermark('cb.big', 0) AS big_before \gset
SELECT * FROM expect_error($$INSERT INTO cb_big SELECT 2500 + i, CASE WHEN i = 1500 THEN 'boom' ELSE 'ok' END
                              FROM generate_series(1, 2000) i$$);
SELECT count(*) AS records_of_failed_statement FROM eventlog.read('cb.big', 0, :big_before);
INSERT INTO cb_big VALUES (5000, 'after');
SELECT offset_id - :big_before AS offsets_skipped, key FROM eventlog.read('cb.big', 0, :big_before);
DROP TRIGGER z_fail ON cb_big;

-- 9. A partitioned table, each partition captured: an UPDATE through the
-- parent that moves a row to another partition is a delete in one
-- partition's stream and a create in the other's.
CREATE TABLE cb_parted (id integer PRIMARY KEY, v integer) PARTITION BY RANGE (id);
CREATE TABLE cb_parted_low PARTITION OF cb_parted FOR VALUES FROM (0) TO (100);
CREATE TABLE cb_parted_high PARTITION OF cb_parted FOR VALUES FROM (100) TO (200);
SELECT eventlog.capture('cb_parted_low', 'cb.parted');
SELECT eventlog.capture('cb_parted_high', 'cb.parted');
INSERT INTO cb_parted VALUES (1, 0), (2, 0), (150, 0);
UPDATE cb_parted SET id = id + 100, v = 1 WHERE id < 100;
SELECT offset_id, key, value ->> 'op' AS op, value #>> '{source,table}' AS source_table
  FROM eventlog.read('cb.parted', 0, 0);

-- 10. The changes a statement run by another role produces were captured
-- for the role whose statement made them, with its privileges: here the
-- flush at the end of a SECURITY DEFINER function's statement produces
-- changes of its caller's statement to a topic its owner may not produce
-- to.
CREATE ROLE regress_cb_writer;
CREATE ROLE regress_cb_definer;
CREATE TABLE cb_owned (id integer PRIMARY KEY);
CREATE TABLE cb_audit (id integer PRIMARY KEY);
GRANT INSERT ON cb_owned TO regress_cb_writer, regress_cb_definer;
GRANT INSERT ON cb_audit TO regress_cb_definer;
SELECT eventlog.capture('cb_owned', 'cb.owned');
SELECT eventlog.capture('cb_audit', 'cb.audit');
SELECT eventlog.grant('cb.owned', 'produce', 'regress_cb_writer');
SELECT eventlog.grant('cb.audit', 'produce', 'regress_cb_definer');
CREATE FUNCTION cb_audit_row() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public AS $$
BEGIN
    INSERT INTO cb_audit VALUES (NEW.id);
    RETURN NULL;
END
$$;
ALTER FUNCTION cb_audit_row() OWNER TO regress_cb_definer;
CREATE TRIGGER z_audit AFTER INSERT ON cb_owned FOR EACH ROW EXECUTE FUNCTION cb_audit_row();
SET ROLE regress_cb_writer;
INSERT INTO cb_owned VALUES (1), (2);
RESET ROLE;
SELECT 'owned' AS topic, key FROM eventlog.read('cb.owned', 0, 0)
UNION ALL
SELECT 'audit', key FROM eventlog.read('cb.audit', 0, 0);
-- Without the privilege, the change is refused when it is captured, as
-- before: at the first row.
SET ROLE regress_cb_definer;
SELECT * FROM expect_error($$INSERT INTO cb_owned VALUES (3)$$);
RESET ROLE;

-- 11. A column added with a default, then rows written before it change:
-- their before images have the default, the row stored out of line
-- (TOAST) too (it had null there before 0.3.0).
CREATE TABLE cb_wide (id integer PRIMARY KEY, doc text);
SELECT eventlog.capture('cb_wide', 'cb.wide');
INSERT INTO cb_wide VALUES (1, (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3000) i)),
                           (2, 'short');
SELECT id, pg_column_size(doc) > 8000 AS out_of_line FROM cb_wide ORDER BY id;
ALTER TABLE cb_wide ADD COLUMN flag integer DEFAULT 7;
UPDATE cb_wide SET flag = 8;
SELECT key, value #>> '{before,flag}' AS before_flag, value #>> '{after,flag}' AS after_flag,
       length(value #>> '{before,doc}') AS doc_length
  FROM eventlog.read('cb.wide', 0, 2);

-- 12. A snapshot of more rows than one batch holds.
CREATE TABLE cb_snap (id integer PRIMARY KEY);
INSERT INTO cb_snap SELECT generate_series(1, 1200);
SELECT eventlog.capture('cb_snap', 'cb.snap', snapshot => true) AS snapshot_rows;
SELECT count(*) AS records, count(DISTINCT append_time) AS batches,
       bool_and(value ->> 'op' = 'r') AS all_r
  FROM eventlog.read('cb.snap', 0, 0, 10000);

-- 13. A savepoint rolled back between statements: its changes are not
-- produced, those around it are, in order.
CREATE TABLE cb_sp (id integer PRIMARY KEY);
SELECT eventlog.capture('cb_sp', 'cb.sp', partitions => 2);
BEGIN;
INSERT INTO cb_sp VALUES (1), (2);
SAVEPOINT s;
INSERT INTO cb_sp VALUES (3), (4);
UPDATE cb_sp SET id = id + 10 WHERE id = 1;
ROLLBACK TO SAVEPOINT s;
INSERT INTO cb_sp VALUES (5);
COMMIT;
SELECT partition, key, value ->> 'op' AS op
  FROM generate_series(0, 1) p, LATERAL eventlog.read('cb.sp', p, 0) r
 ORDER BY partition, offset_id;

-- The envelope itself is unchanged (the golden ones are in capture.sql).
SELECT jsonb_pretty(batch_env(value)) FROM eventlog.read('cb.copy', 0, 5, 1);

DROP TABLE cb_items, cb_big, cb_side, cb_twice, cb_mixed, cb_copy, cb_parted, cb_owned,
           cb_audit, cb_wide, cb_snap, cb_sp;
DROP FUNCTION cb_side_effect(), cb_bump(), cb_note(), cb_fail(), cb_audit_row(), batch_env(jsonb);
DROP ROLE regress_cb_writer, regress_cb_definer;
SELECT count(eventlog.drop_topic(t)) AS dropped
  FROM unnest(ARRAY['cb.items', 'cb.big', 'cb.side', 'cb.twice', 'cb.mixed', 'cb.copy',
                    'cb.parted', 'cb.owned', 'cb.audit', 'cb.wide', 'cb.snap', 'cb.sp']) t;
