-- Change capture: golden change envelopes for each operation and a mix of
-- types, key changes, rollback, ALTER TABLE, TRUNCATE, the outbox router,
-- and apply_changes feeding a mirror.  (Concurrency and kills:
-- test/t/015_capture.pl.)

-- The envelope without what changes from run to run (times, transaction
-- ID, WAL position), which are checked separately below.
CREATE FUNCTION stable_envelope(v jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$ SELECT v - 'ts_ms' #- '{source,ts_ms}' #- '{source,txId}' #- '{source,lsn}' $$;

CREATE TABLE shop (
    id     integer PRIMARY KEY,
    price  numeric(10,2),
    name   text,
    at     timestamptz,
    attrs  jsonb,
    tags   text[],
    raw    bytea,
    note   text
);
INSERT INTO shop VALUES (1, 9.99, 'kept from before', '2026-01-02 03:04:05+00', '{"a": [1, 2]}',
                         ARRAY['x', 'y'], '\x0001ff', NULL);

-- Capture with a snapshot: the existing row comes first, as "r".
SELECT eventlog.capture('shop', 'shop.changes', snapshot => true) AS snapshot_rows;
SELECT * FROM eventlog.captures;
SELECT topic, partitions FROM eventlog.topics WHERE topic = 'shop.changes';

-- One record per row change, in the writing transaction.
INSERT INTO shop VALUES (2, 0.5, 'quote "and" \ backslash', '2026-06-30 23:59:59.5+02', 'null',
                         '{}', '', 'ünïcode');
INSERT INTO shop (id) VALUES (3);
UPDATE shop SET price = price * 2, note = 'doubled' WHERE id = 1;
BEGIN;
INSERT INTO shop (id, name) VALUES (4, 'rolled back');
UPDATE shop SET name = 'rolled back too' WHERE id = 1;
ROLLBACK;
UPDATE shop SET id = 30 WHERE id = 3;          -- a key change: delete, then create
DELETE FROM shop WHERE id = 2;

SELECT offset_id, key, value ->> 'op' AS op, value -> 'before' AS before, value -> 'after' AS after
  FROM eventlog.read('shop.changes', 0, 0) ORDER BY offset_id;

-- The rest of one envelope (Debezium's source block).
SELECT jsonb_pretty(stable_envelope(value) - 'before' - 'after')
  FROM eventlog.read('shop.changes', 0, 1, 1);

-- The fields that change from run to run are there, and right.
BEGIN;
INSERT INTO shop (id) VALUES (5);
SELECT (value #>> '{source,txId}')::xid8 = pg_current_xact_id() AS txid_is_the_writers,
       (value ->> 'ts_ms')::bigint BETWEEN (extract(epoch FROM now()) * 1000)::bigint - 60000
                                       AND (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 1000 AS ts_ms_is_now,
       (value #>> '{source,lsn}')::numeric > 0 AS has_lsn
  FROM eventlog.read('shop.changes', 0, eventlog.high_watermark('shop.changes', 0) - 1);
COMMIT;

-- ALTER TABLE: the envelope follows the table's new shape.
ALTER TABLE shop ADD COLUMN stock integer DEFAULT 7, DROP COLUMN raw;
UPDATE shop SET stock = 8 WHERE id = 5;
SELECT value -> 'before' AS before, value -> 'after' AS after
  FROM eventlog.read('shop.changes', 0, eventlog.high_watermark('shop.changes', 0) - 1);

-- TRUNCATE is refused (it fires no row trigger); nothing happens.
SELECT * FROM expect_error($$TRUNCATE shop$$);
SELECT count(*) AS rows_left FROM shop;

-- Bad input, and nothing left behind by it.
CREATE VIEW shop_view AS SELECT * FROM shop;
CREATE TABLE no_key (a integer, b text);
SELECT e.* FROM (VALUES
    ($$SELECT eventlog.capture(NULL, 't')$$),
    ($$SELECT eventlog.capture('shop', NULL)$$),
    ($$SELECT eventlog.capture('shop', 'bad name')$$),
    ($$SELECT eventlog.capture('shop', 'again')$$),
    ($$SELECT eventlog.capture('shop_view', 'v')$$),
    ($$SELECT eventlog.capture('eventlog.topic_catalog', 'meta')$$),
    ($$SELECT eventlog.capture((SELECT format('eventlog_segments.%I', min(table_name)) FROM eventlog.segment_catalog)::regclass, 'seg')$$),
    ($$SELECT eventlog.capture('no_key', 'nk')$$),
    ($$SELECT eventlog.capture('no_key', 'nk', key_columns => ARRAY['nope'])$$),
    ($$SELECT eventlog.capture('no_key', 'nk', key_columns => ARRAY[]::text[])$$),
    ($$SELECT eventlog.capture('no_key', 'nk', key_columns => ARRAY['a', 'a'])$$),
    ($$SELECT eventlog.uncapture('no_key')$$),
    ($$SELECT eventlog.capture('no_such_table', 't')$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM expect_error($$SELECT eventlog.capture('no_key', 'nk', key_columns => ARRAY['a'], snapshot => true)$$);
ROLLBACK;
SELECT count(*) AS topics_created FROM eventlog.topics WHERE topic IN ('t', 'again', 'v', 'meta', 'seg', 'nk');
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgrelid = 'no_key'::regclass;

-- A table without a primary key, keyed by chosen columns.
SELECT eventlog.capture('no_key', 'nk', key_columns => ARRAY['b', 'a']);
INSERT INTO no_key VALUES (1, 'one');
SELECT key, value ->> 'op' AS op FROM eventlog.read('nk', 0, 0);

-- apply_changes: a mirror, fed as a consumer group, equals the source.
CREATE TABLE shop_mirror (LIKE shop);
ALTER TABLE shop_mirror ADD PRIMARY KEY (id);
SELECT eventlog.apply_changes('shop.changes', 'mirror', 'shop_mirror', 3) AS applied;
SELECT eventlog.apply_changes('shop.changes', 'mirror', 'shop_mirror') AS applied;
SELECT eventlog.apply_changes('shop.changes', 'mirror', 'shop_mirror') AS applied_when_caught_up;
-- (stock is left out: ADD COLUMN ... DEFAULT changed no row, so rows not
-- changed since have no image with it; their next change brings it.)
(SELECT id, price, name, at, attrs, tags, note FROM shop
 EXCEPT SELECT id, price, name, at, attrs, tags, note FROM shop_mirror)
UNION ALL
(SELECT id, price, name, at, attrs, tags, note FROM shop_mirror
 EXCEPT SELECT id, price, name, at, attrs, tags, note FROM shop);
SELECT id, stock FROM shop_mirror ORDER BY id;
SELECT * FROM expect_error($$SELECT eventlog.apply_changes('nk', 'g', NULL)$$);

-- Uncapture: no more records; the topic and its records stay.
SELECT eventlog.uncapture('shop');
SELECT eventlog.high_watermark('shop.changes', 0) AS hwm_before;
INSERT INTO shop (id) VALUES (6);
TRUNCATE shop;
SELECT eventlog.high_watermark('shop.changes', 0) AS hwm_after;
SELECT * FROM eventlog.captures;

-- The outbox router (Debezium's outbox event router).
CREATE TABLE outbox (
    id            bigint GENERATED ALWAYS AS IDENTITY,
    aggregatetype text NOT NULL,
    aggregateid   text NOT NULL,
    type          text NOT NULL,
    payload       jsonb
);
SELECT eventlog.create_topic('order', 1);
SELECT eventlog.route_outbox('outbox');
SELECT * FROM eventlog.outboxes;
BEGIN;
INSERT INTO outbox (aggregatetype, aggregateid, type, payload)
VALUES ('order', 'o-1', 'OrderCreated', '{"total": 42}'),
       ('order', 'o-1', 'OrderPaid', '{"total": 42, "paid": true}');
COMMIT;
BEGIN;
INSERT INTO outbox (aggregatetype, aggregateid, type, payload) VALUES ('order', 'o-2', 'OrderCreated', '{}');
ROLLBACK;
SELECT offset_id, key, value, headers FROM eventlog.read('order', 0, 0);
SELECT count(*) AS outbox_rows FROM outbox;
SELECT * FROM expect_error($$INSERT INTO outbox (aggregatetype, aggregateid, type) VALUES ('no-such-topic', 'x', 'T')$$);
SELECT e.* FROM (VALUES
    ($$SELECT eventlog.route_outbox('outbox')$$),
    ($$SELECT eventlog.route_outbox('shop', topic_column => 'nope')$$),
    ($$SELECT eventlog.unroute_outbox('shop')$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
SELECT eventlog.unroute_outbox('outbox');
SELECT eventlog.route_outbox('outbox', keep_rows => true);
INSERT INTO outbox (aggregatetype, aggregateid, type, payload) VALUES ('order', 'o-3', 'OrderShipped', '{}');
SELECT count(*) AS outbox_rows_kept FROM outbox;
SELECT offset_id, key, headers ->> 'type' AS type FROM eventlog.read('order', 0, 2);

-- Keys compare by the type's equality and are written in one canonical
-- text: an UPDATE that keeps each key value equal but changes its bytes
-- (numeric 1 -> 1.00, float 0 -> -0, unpadded bpchar trailing blanks) is
-- one "u" under the same key, so in the same partition.  Session settings
-- that change how values print change neither the key nor the exact value
-- of a float in the images.
CREATE TABLE keyed (n numeric, f float8, r real, b bpchar, t timestamptz, y bytea, v integer,
                    PRIMARY KEY (n, f, r, b, t, y));
SELECT eventlog.capture('keyed', 'keyed.changes');
SET extra_float_digits = 0;
SET TimeZone = 'America/New_York';
SET bytea_output = 'escape';
INSERT INTO keyed VALUES (1, 0, 0, 'a', '2026-01-01 00:00+00', '\x00ff', 1);
UPDATE keyed SET n = 1.00;
UPDATE keyed SET f = '-0', r = '-0';
UPDATE keyed SET b = 'a  ';
UPDATE keyed SET v = 2;
-- Real key changes: a d and a c, as before.
UPDATE keyed SET n = 'NaN', f = 0.1::float8 + 0.2::float8, r = 'Infinity';
UPDATE keyed SET f = 'NaN', n = 2.500;
UPDATE keyed SET f = 'NaN', n = 2.5;
RESET extra_float_digits;
RESET TimeZone;
RESET bytea_output;
SELECT offset_id, key, value ->> 'op' AS op, value -> 'after' AS after
  FROM eventlog.read('keyed.changes', 0, 0) ORDER BY offset_id;

-- citext: equal when lower() is (the database's default collation, as
-- citext's equality has it); the key is the lower-case text.
CREATE EXTENSION citext;
CREATE TABLE users (email citext PRIMARY KEY, name text);
SELECT eventlog.capture('users', 'users.changes', partitions => 4);
INSERT INTO users VALUES ('Ann@Example.com', 'Ann');
UPDATE users SET email = 'ANN@EXAMPLE.COM';
UPDATE users SET email = 'ann@example.org';
SELECT partition, offset_id, key, value ->> 'op' AS op, value -> 'after' AS after
  FROM generate_series(0, 3) p, LATERAL eventlog.read('users.changes', p, 0) r
 ORDER BY value #>> '{source,lsn}';
SELECT eventlog.partition_for_key('{"email":"ann@example.com"}', 4) AS partition_of_ann;
CREATE TABLE users_mirror (LIKE users);
ALTER TABLE users_mirror ADD PRIMARY KEY (email);
SELECT eventlog.apply_changes('users.changes', 'mirror', 'users_mirror') AS applied;
SELECT * FROM users_mirror;
-- A mirror whose key column is text, not citext, still loses the rows the
-- source deletes: the delete matches the deleted row's own key values (the
-- "before" image), not the canonical lower-case key text.
CREATE TABLE handles (handle citext PRIMARY KEY, name text);
SELECT eventlog.capture('handles', 'handles.changes');
CREATE TABLE handles_text (handle text PRIMARY KEY, name text);
INSERT INTO handles VALUES ('Bob', 'Bob'), ('carol', 'Carol');
SELECT eventlog.apply_changes('handles.changes', 'text_mirror', 'handles_text') AS applied;
DELETE FROM handles;
SELECT eventlog.apply_changes('handles.changes', 'text_mirror', 'handles_text') AS applied;
SELECT * FROM handles_text;

-- Keys no text can stand for exactly are refused, before anything is
-- created: a nondeterministic collation, types whose equal values differ
-- in their text (interval, jsonb, arrays; money follows lc_monetary, the
-- OID alias types such as regclass the search_path), and types without
-- equality.
CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE refused (ci text COLLATE case_insensitive, iv interval, js jsonb, arr integer[],
                      m money, pt point, rc regclass, ok integer);
SELECT e.* FROM (VALUES
    ($$SELECT eventlog.capture('refused', 'refused', key_columns => ARRAY['ok', 'ci'])$$),
    ($$SELECT eventlog.capture('refused', 'refused', key_columns => ARRAY['iv'])$$),
    ($$SELECT eventlog.capture('refused', 'refused', key_columns => ARRAY['js'])$$),
    ($$SELECT eventlog.capture('refused', 'refused', key_columns => ARRAY['arr'])$$),
    ($$SELECT eventlog.capture('refused', 'refused', key_columns => ARRAY['m'])$$),
    ($$SELECT eventlog.capture('refused', 'refused', key_columns => ARRAY['pt'])$$),
    -- regclass prints by search_path (and the table's current name).
    ($$SELECT eventlog.capture('refused', 'refused', key_columns => ARRAY['rc'])$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
SELECT count(*) AS topics_created FROM eventlog.topics WHERE topic = 'refused';
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgrelid = 'refused'::regclass;
-- A table captured before 0.3.0 with such a key keeps working (its writes
-- must not start failing): compared by image, as then.
SELECT eventlog.create_topic('refused', 1);
CREATE TRIGGER eventlog_capture AFTER INSERT OR UPDATE OR DELETE ON refused
    FOR EACH ROW EXECUTE FUNCTION eventlog._capture_trigger('refused', 'iv');
INSERT INTO refused (iv) VALUES ('1 day');
UPDATE refused SET iv = '24 hours';
SELECT key, value ->> 'op' AS op FROM eventlog.read('refused', 0, 0);
-- Nor can ALTER TABLE give a captured table's key such a type or
-- collation afterwards (nor RENAME another column into the key's name):
-- the key's changes would again go out under different key texts.  Other
-- changes still work, and so do those of a table captured before 0.3.0.
CREATE TABLE altered (id text PRIMARY KEY, js jsonb, v integer);
SELECT eventlog.capture('altered', 'handles.changes');
ALTER TABLE altered RENAME COLUMN id TO old_id;
SELECT e.* FROM (VALUES
    ($$ALTER TABLE altered RENAME COLUMN js TO id$$),
    ($$ALTER TABLE altered RENAME COLUMN old_id TO id;
       ALTER TABLE altered ALTER COLUMN id TYPE text COLLATE case_insensitive$$),
    ($$ALTER TABLE altered RENAME COLUMN old_id TO id;
       ALTER TABLE altered ALTER COLUMN id TYPE jsonb USING to_jsonb(id)$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
ALTER TABLE altered RENAME COLUMN old_id TO id;
ALTER TABLE altered ALTER COLUMN id TYPE varchar(20), ADD COLUMN w integer;
ALTER TABLE refused ADD COLUMN w integer;
SELECT a.attname, a.atttypid::regtype, a.attcollation::regcollation
  FROM pg_attribute a WHERE a.attrelid = 'altered'::regclass AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum;

DROP TABLE keyed, users, users_mirror, handles, handles_text, refused, altered;
DROP COLLATION case_insensitive;
DROP EXTENSION citext;
SELECT eventlog.drop_topic(t) FROM unnest(ARRAY['keyed.changes', 'users.changes', 'handles.changes', 'refused']) t;

DROP TABLE shop, shop_mirror, no_key, outbox CASCADE;
DROP FUNCTION stable_envelope(jsonb);
SELECT eventlog.drop_topic(t) FROM unnest(ARRAY['shop.changes', 'nk', 'order']) t;
