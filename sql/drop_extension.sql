--
-- DROP EXTENSION leaves nothing behind, and a topic of a re-created
-- extension starts again at offset 0.  (Runs last.)
--
\set SHOW_CONTEXT never
SELECT eventlog.create_topic('survivor', 2);
SELECT * FROM eventlog.produce('survivor', 'k', '{}', partition => 1);
SELECT count(*) > 0 AS has_segments FROM pg_tables
 WHERE schemaname = 'eventlog_segments' AND tablename LIKE 'seg\_%';

-- A role that does not own the extension gets PostgreSQL's own error,
-- and nothing is dropped.
SELECT count(*) AS segments_before FROM pg_tables
 WHERE schemaname = 'eventlog_segments' AND tablename LIKE 'seg\_%' \gset
CREATE ROLE regress_not_owner;
SET ROLE regress_not_owner;
SELECT * FROM expect_error($$DROP EXTENSION pg_eventlog$$);
SELECT * FROM expect_error($$DROP EXTENSION IF EXISTS pg_eventlog CASCADE$$);
RESET ROLE;
DROP ROLE regress_not_owner;
SELECT count(*) = :segments_before AS segments_kept FROM pg_tables
 WHERE schemaname = 'eventlog_segments' AND tablename LIKE 'seg\_%';
SELECT count(*) FROM eventlog.read('survivor', 1, 0);

-- A failed DROP EXTENSION keeps everything.
BEGIN;
DROP EXTENSION pg_eventlog;
ROLLBACK;
SELECT count(*) FROM eventlog.read('survivor', 1, 0);

-- A captured table's triggers depend on the extension: DROP EXTENSION is
-- refused and keeps everything (CASCADE would drop the triggers, never the
-- table).
CREATE TABLE captured (id integer PRIMARY KEY);
SELECT eventlog.capture('captured', 'captured');
SELECT e.code, e.message, e.hint FROM expect_error($$DROP EXTENSION pg_eventlog$$) e;
SELECT topic FROM eventlog.topics WHERE topic IN ('captured', 'survivor') ORDER BY 1;
SELECT eventlog.uncapture('captured');
DROP TABLE captured;

-- An object of the owner's over a segment: DROP EXTENSION is refused as
-- PostgreSQL refuses it, and DROP EXTENSION ... CASCADE drops the object
-- with the segments (it must not fail on the segment).
BEGIN;
DO $$BEGIN
    EXECUTE format('CREATE VIEW over_segment AS SELECT offset_id FROM eventlog_segments.%I',
                   (SELECT table_name FROM eventlog.segment_catalog ORDER BY table_name LIMIT 1));
END$$;
SELECT e.code, regexp_replace(e.message, '[0-9]+', 'N', 'g') AS message
  FROM expect_error($$DROP EXTENSION pg_eventlog$$) e;
SET LOCAL client_min_messages = warning;
DROP EXTENSION pg_eventlog CASCADE;
SELECT to_regclass('over_segment') IS NULL AS view_dropped,
       to_regnamespace('eventlog_segments') IS NULL AS segments_dropped;
ROLLBACK;

-- Stream processors' state goes too, though not the extension's members: a
-- window's progress and windows, a sliding window's record buffer, the
-- partial and combine aggregates of an aggregate with a combine function,
-- a join's sides.
SELECT eventlog.create_topic('survivor_right', 1);
CREATE TABLE dropped_windows (window_start timestamptz, window_end timestamptz, k text, b integer);
SELECT eventlog.create_window_processor('dropped_sliding', 'survivor', 'dropped_windows', size => '1 minute',
    window_type => 'sliding', aggregates => ARRAY['bit_or(partition)']);
SELECT eventlog.create_join_processor('dropped_join', 'survivor', 'survivor_right', sink_topic => 'survivor_right',
    within => '1 minute');
SELECT count(*) AS processor_relations FROM pg_class
 WHERE relnamespace = 'eventlog'::regnamespace AND relkind = 'r' AND relname ~ '^processor_[0-9]+_';
SELECT count(*) AS processor_aggregates FROM pg_proc
 WHERE pronamespace = 'eventlog'::regnamespace AND proname ~ '^processor_[0-9]+_';

DROP EXTENSION pg_eventlog;
DROP TABLE dropped_windows;
SELECT count(*) AS relations_left FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'eventlog';
SELECT count(*) AS functions_left FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'eventlog';
SELECT count(*) AS types_left FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
 WHERE n.nspname = 'eventlog';
-- CREATE EXTENSION made the schema; it goes too, with the segments' one.
SELECT count(*) AS schemas_left FROM pg_namespace WHERE nspname IN ('eventlog', 'eventlog_segments');

CREATE EXTENSION pg_eventlog;
SELECT eventlog.create_topic('survivor', 2);
SELECT * FROM eventlog.produce('survivor', 'k', '{}', partition => 1);

-- DROP SCHEMA ... CASCADE takes the extension and every segment with it,
-- and offsets start again at 0 in the re-created extension.
DROP SCHEMA eventlog CASCADE;
SELECT count(*) AS schemas_left FROM pg_namespace WHERE nspname IN ('eventlog', 'eventlog_segments');
CREATE EXTENSION pg_eventlog;
SELECT eventlog.create_topic('survivor', 2);
SELECT * FROM eventlog.produce('survivor', 'k', '{}', partition => 1);

-- The extension dropped and created again in one transaction (as
-- pg_restore --clean --single-transaction does): the new extension's topics,
-- whose ids start at 1 again, start afresh instead of taking over the
-- dropped topics' partition state, still in shared memory (an offset counter
-- that did not start at 0, a route to a segment that no longer exists).
SELECT * FROM eventlog.produce('survivor', 'k', '{}', partition => 1);
BEGIN;
DROP EXTENSION pg_eventlog;
CREATE EXTENSION pg_eventlog;
SELECT eventlog.create_topic('survivor', 2);
SELECT * FROM eventlog.produce('survivor', 'k', '{}', partition => 1);
ROLLBACK;
-- The dropped one, back, continues where it was (not from the new topic's
-- counter: offset 1 again).
SELECT * FROM eventlog.produce('survivor', 'k', '{}', partition => 1);
-- Not under a savepoint, whose rollback would bring the dropped extension
-- back while the transaction goes on.
BEGIN;
SAVEPOINT s;
DROP EXTENSION pg_eventlog;
CREATE EXTENSION pg_eventlog;
ROLLBACK;
-- A transaction that produced before the drop keeps that state until it
-- ends: creating the extension again in it is refused.
BEGIN;
SELECT * FROM eventlog.produce('survivor', 'k', '{}', partition => 1);
DROP EXTENSION pg_eventlog;
CREATE EXTENSION pg_eventlog;
ROLLBACK;
