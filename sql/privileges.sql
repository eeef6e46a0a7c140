--
-- The permission model (docs/security.md): who may create topics (EXECUTE
-- on eventlog.create_topic), a topic's owner (alter, drop, grant, retention),
-- and per topic who may produce and who may consume.  Every refusal is
-- 42501 and leaves nothing behind; group positions move only for roles
-- that may consume; the internal bodies cannot be called around the checks.
--
\set SHOW_CONTEXT never
CREATE ROLE regress_admin;          -- may create topics
CREATE ROLE regress_app;            -- produces and consumes when granted
CREATE ROLE regress_other;          -- may do nothing
CREATE ROLE regress_readers;        -- a group role
CREATE ROLE regress_reader IN ROLE regress_readers;

-- 1. Creating topics needs EXECUTE on create_topic, which PUBLIC lacks.
SET ROLE regress_app;
SELECT * FROM expect_error($$SELECT eventlog.create_topic('priv.orders', 2)$$);
RESET ROLE;
SELECT count(*) AS topics_created FROM eventlog.topics WHERE topic = 'priv.orders';
GRANT EXECUTE ON FUNCTION eventlog.create_topic
   TO regress_admin;
SET ROLE regress_admin;
SELECT eventlog.create_topic('priv.orders', 2);
-- The creator owns the topic, and as its owner produces and reads.
SELECT topic, owner FROM eventlog.topics WHERE topic = 'priv.orders';
SELECT * FROM eventlog.produce('priv.orders', 'o1', '{"n": 1}', partition => 0);
SELECT offset_id, key FROM eventlog.read('priv.orders', 0, 0);
SELECT eventlog.alter_topic('priv.orders', retention => interval '1 day');
RESET ROLE;

-- 2. A role without privileges: every call is refused with 42501.
SELECT eventlog.high_watermark('priv.orders', 0) AS hw \gset
SET ROLE regress_app;
SELECT * FROM expect_error($$SELECT eventlog.produce('priv.orders', 'k', '{}')$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.produce_batch('priv.orders', NULL, ARRAY['{}'::jsonb])$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.read('priv.orders', 0, 0)$$);
SELECT * FROM expect_error($$SELECT eventlog.offset_for_time('priv.orders', 0, now())$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.poll('priv.orders', 'g')$$);
SELECT * FROM expect_error($$SELECT eventlog.create_group('priv.orders', 'g')$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.seek('priv.orders', 'g', 'latest')$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.commit('priv.orders', 'g', 'm1')$$);
SELECT * FROM expect_error($$SELECT eventlog.leave('priv.orders', 'g', 'm1')$$);
SELECT * FROM expect_error($$SELECT eventlog.delete_group('priv.orders', 'g')$$);
SELECT * FROM expect_error($$SELECT eventlog.alter_topic('priv.orders', partitions => 4)$$);
SELECT * FROM expect_error($$SELECT eventlog.drop_topic('priv.orders')$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.enforce_retention('priv.orders')$$);
SELECT * FROM expect_error($$SELECT eventlog.grant('priv.orders', 'all', 'regress_app')$$);
SELECT * FROM expect_error($$SELECT eventlog.set_topic_owner('priv.orders', 'regress_app')$$);
-- Without a topic, enforce_retention looks only at the caller's topics.
SELECT count(*) AS actions_on_others_topics FROM eventlog.enforce_retention();
-- Metadata is public, as pg_class is.
SELECT eventlog.has_topic_privilege('priv.orders', 'produce') AS may_produce,
       eventlog.has_topic_privilege('priv.orders', 'consume') AS may_consume;
SELECT topic, partitions FROM eventlog.topics WHERE topic = 'priv.orders';
RESET ROLE;
-- Nothing happened.
SELECT eventlog.high_watermark('priv.orders', 0) = :hw AS no_record_added,
       (SELECT partitions FROM eventlog.topics WHERE topic = 'priv.orders') AS partitions,
       (SELECT count(*) FROM eventlog.group_offsets o JOIN eventlog.topic_catalog t USING (topic_id)
         WHERE t.name = 'priv.orders') AS group_positions;

-- 3. Around the API: the tables and the SECURITY DEFINER bodies are the
-- extension owner's.  No group position moves, no record is forged.
SET ROLE regress_admin;
SELECT eventlog.create_group('priv.orders', 'billing');
RESET ROLE;
SELECT s.table_name AS seg FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog t USING (topic_id)
 WHERE t.name = 'priv.orders' AND s.partition = 0 \gset
SET ROLE regress_app;
SELECT * FROM expect_error($$UPDATE eventlog.group_offsets SET next_offset = 100$$);
SELECT * FROM expect_error($$INSERT INTO eventlog.topic_catalog (name, partitions, segment_interval, segment_bytes, owner) VALUES ('x', 1, '1 day', 1, 'regress_app')$$);
SELECT * FROM expect_error($$UPDATE eventlog.topic_catalog SET producers = '{regress_app}'$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog._poll('priv.orders', 'billing', 10, 1, NULL, '30 s', NULL)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog._seek('priv.orders', 'billing', 'latest', NULL, false)$$);
SELECT * FROM expect_error($$SELECT eventlog._grant('priv.orders', 'all', 'regress_app')$$);
SELECT * FROM expect_error($$SELECT eventlog._create_topic('priv.x', 1, NULL, NULL, '1 day', 1024)$$);
SELECT * FROM expect_error($$SELECT eventlog._set_position(1, 'billing', 0, 100)$$);
-- Internal functions that change state or take pg_eventlog's locks.
SELECT code, message FROM expect_error($$SELECT eventlog._forget_topic(1)$$);
SELECT code, message FROM expect_error($$SELECT eventlog._activate_segment_at_commit(1, 0, 1000)$$);
SELECT code, message FROM expect_error($$SELECT eventlog._lock_routing(1, 0)$$);
SELECT code, message FROM expect_error($$SELECT eventlog._try_lock_maintenance(1)$$);
SELECT code, message FROM expect_error($$SELECT eventlog._lock_group_membership(1, 'billing')$$);
SELECT code, message FROM expect_error($$SELECT eventlog._try_lock_group_partition(1, 'billing', 0)$$);
SELECT code, message FROM expect_error($$SELECT * FROM eventlog._maintain_topic(1)$$);
-- Segment tables live in a schema no other role may use: a role without
-- consume cannot read a segment, LOCK it, or name it in a view, a type or a
-- function (which would let it hold a lock retention's DROP waits for).
SELECT code, regexp_replace(message, 'seg_\d+', 'seg_N') AS message
  FROM (VALUES
    (format('CREATE TEMP VIEW regress_seg_view AS SELECT offset_id FROM eventlog_segments.%I', :'seg')),
    (format('CREATE TEMP VIEW regress_seg_view AS SELECT 1 FROM pg_class WHERE oid = %L::regclass', 'eventlog_segments.' || :'seg')),
    (format('CREATE TEMP TABLE regress_seg_row (r eventlog_segments.%I)', :'seg')),
    (format('CREATE FUNCTION pg_temp.regress_seg_f(eventlog_segments.%I) RETURNS int LANGUAGE sql AS ''SELECT 1''', :'seg')),
    (format('LOCK TABLE eventlog_segments.%I IN ACCESS SHARE MODE', :'seg')),
    (format('SELECT * FROM eventlog_segments.%I', :'seg')),
    (format('INSERT INTO eventlog_segments.%I VALUES (1000, ''k'', ''{}'', NULL, now(), now())', :'seg')),
    (format('SELECT to_regclass(%L)', 'eventlog_segments.' || :'seg')),
    (format('SELECT to_regtype(%L)', 'eventlog_segments.' || :'seg'))
  ) AS v(sql), LATERAL expect_error(v.sql);
RESET ROLE;
SELECT partition, committed_offset FROM eventlog.consumer_groups
 WHERE topic = 'priv.orders' AND group_name = 'billing' ORDER BY 1;

-- 4. Grants.  produce lets a role produce and nothing else.
SET ROLE regress_admin;
SELECT eventlog.grant('priv.orders', 'produce', 'regress_app');
SELECT eventlog.grant('priv.orders', 'produce', 'regress_app');  -- again: no duplicate
RESET ROLE;
SELECT * FROM eventlog.topic_privileges WHERE topic = 'priv.orders' ORDER BY privilege, grantee::text;
SET ROLE regress_app;
SELECT * FROM eventlog.produce('priv.orders', 'a1', '{"n": 2}', partition => 0);
SELECT * FROM expect_error($$SELECT * FROM eventlog.poll('priv.orders', 'billing')$$);
RESET ROLE;
-- consume lets a role read and move its groups' positions, in its
-- transaction; a group role passes it to its members.
SET ROLE regress_admin;
SELECT eventlog.grant('priv.orders', 'consume', 'regress_readers');
RESET ROLE;
SET ROLE regress_reader;
SELECT * FROM expect_error($$SELECT eventlog.produce('priv.orders', 'k', '{}')$$);
BEGIN;
SELECT partition, offset_id, key FROM eventlog.poll('priv.orders', 'billing', 10, partitions => 2)
 ORDER BY 1, 2;
COMMIT;
SELECT partition, offset_id FROM eventlog.seek('priv.orders', 'billing', 'earliest', partition => 0);
SELECT offset_id, key FROM eventlog.read('priv.orders', 0, 1);
RESET ROLE;
SELECT partition, committed_offset FROM eventlog.consumer_groups
 WHERE topic = 'priv.orders' AND group_name = 'billing' ORDER BY 1;
SELECT eventlog.has_topic_privilege('regress_reader', 'priv.orders', 'consume') AS reader_consumes,
       eventlog.has_topic_privilege('regress_reader', 'priv.orders', 'owner') AS reader_owns,
       eventlog.has_topic_privilege('regress_admin', 'priv.orders', 'owner') AS admin_owns;

-- A gated call acts for its immediate caller: a SECURITY DEFINER function
-- of a role that may consume lets others poll through it, as PostgreSQL
-- does for tables.
CREATE FUNCTION public.regress_poll_billing() RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog
AS $$ SELECT count(*) FROM eventlog.poll('priv.orders', 'billing', 10, partitions => 2) $$;
ALTER FUNCTION public.regress_poll_billing() OWNER TO regress_reader;
SET ROLE regress_other;
SELECT public.regress_poll_billing() AS polled_through_definer;
SELECT * FROM expect_error($$SELECT * FROM eventlog.poll('priv.orders', 'billing')$$);
RESET ROLE;
DROP FUNCTION public.regress_poll_billing();

-- PUBLIC, and revoke.
SET ROLE regress_admin;
SELECT eventlog.grant('priv.orders', 'consume', 'PUBLIC');
RESET ROLE;
SET ROLE regress_other;
SELECT count(*) AS public_reads FROM eventlog.read('priv.orders', 0, 0);
RESET ROLE;
SET ROLE regress_admin;
SELECT eventlog.revoke('priv.orders', 'consume', 'public');
SELECT eventlog.revoke('priv.orders', 'all', 'regress_readers');
SELECT eventlog.revoke('priv.orders', 'consume', 'regress_other');  -- never granted: no-op
RESET ROLE;
SET ROLE regress_reader;
SELECT * FROM expect_error($$SELECT * FROM eventlog.read('priv.orders', 0, 0)$$);
RESET ROLE;
SELECT * FROM eventlog.topic_privileges WHERE topic = 'priv.orders' ORDER BY privilege, grantee::text;

-- Bad grants change nothing.
SET ROLE regress_admin;
SELECT * FROM expect_error($$SELECT eventlog.grant('priv.orders', 'delete', 'regress_app')$$);
SELECT * FROM expect_error($$SELECT eventlog.grant('priv.orders', 'produce', 'regress_nobody')$$);
SELECT * FROM expect_error($$SELECT eventlog.grant('priv.orders', 'produce', 'x"; DROP TABLE eventlog.topic_catalog; --')$$);
SELECT * FROM expect_error($$SELECT eventlog.grant('priv.orders', NULL, 'regress_app')$$);
SELECT * FROM expect_error($$SELECT eventlog.grant('priv.orders', 'produce', NULL)$$);
SELECT * FROM expect_error($$SELECT eventlog.grant(NULL, 'produce', 'regress_app')$$);
SELECT * FROM expect_error($$SELECT eventlog.grant('priv.nope', 'produce', 'regress_app')$$);
-- regrole would also read '-' and bare OIDs: only roles, and PUBLIC by name.
SELECT * FROM expect_error($$SELECT eventlog.grant('priv.orders', 'produce', '-')$$);
SELECT * FROM expect_error($$SELECT eventlog.grant('priv.orders', 'produce', '999999')$$);
RESET ROLE;
SELECT * FROM eventlog.topic_privileges WHERE topic = 'priv.orders' ORDER BY privilege, grantee::text;

-- 5. Change capture produces as the role that writes the captured table.
CREATE TABLE public.priv_items (id int PRIMARY KEY, name text);
GRANT INSERT, UPDATE ON public.priv_items TO regress_app;
SELECT eventlog.capture('public.priv_items', 'priv.items');
SET ROLE regress_app;
SELECT * FROM expect_error($$INSERT INTO public.priv_items VALUES (1, 'a')$$);
RESET ROLE;
SELECT count(*) AS rows_after_refusal FROM public.priv_items;
SELECT eventlog.grant('priv.items', 'produce', 'regress_app');
SET ROLE regress_app;
INSERT INTO public.priv_items VALUES (1, 'a');
RESET ROLE;
SELECT offset_id, key, value->>'op' AS op FROM eventlog.read('priv.items', 0, 0);
-- A snapshot scans the table's heap: refused where row security would
-- hide rows from the caller.
CREATE TABLE public.priv_secret_rows (id int PRIMARY KEY, owner name);
INSERT INTO public.priv_secret_rows VALUES (1, 'regress_app'), (2, 'someone else');
ALTER TABLE public.priv_secret_rows ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.priv_secret_rows USING (owner = current_user);
-- Its owner, subject to its policies (FORCE), may not snapshot it.
ALTER TABLE public.priv_secret_rows OWNER TO regress_app;
ALTER TABLE public.priv_secret_rows FORCE ROW LEVEL SECURITY;
SELECT eventlog.create_topic('priv.rls');
SELECT eventlog.grant('priv.rls', 'produce', 'regress_app');
SET ROLE regress_app;
SELECT * FROM expect_error($$SELECT eventlog.capture('public.priv_secret_rows', 'priv.rls', snapshot => true)$$);
RESET ROLE;
SELECT eventlog.high_watermark('priv.rls', 0) AS rls_records;
SELECT eventlog.drop_topic('priv.rls');
DROP TABLE public.priv_secret_rows;
-- apply_changes consumes, and writes the mirror as its caller.
CREATE TABLE public.priv_mirror (id int PRIMARY KEY, name text);
GRANT INSERT, UPDATE, DELETE, SELECT ON public.priv_mirror TO regress_other;
SET ROLE regress_other;
SELECT * FROM expect_error($$SELECT eventlog.apply_changes('priv.items', 'mirror', 'public.priv_mirror')$$);
RESET ROLE;
SELECT eventlog.grant('priv.items', 'consume', 'regress_other');
SET ROLE regress_other;
SELECT eventlog.apply_changes('priv.items', 'mirror', 'public.priv_mirror') AS applied;
RESET ROLE;
SELECT * FROM public.priv_mirror;
-- An outbox row names its topic: the writer needs produce on that topic.
CREATE TABLE public.priv_outbox (
    id bigint GENERATED ALWAYS AS IDENTITY, aggregatetype text NOT NULL,
    aggregateid text NOT NULL, type text NOT NULL, payload jsonb);
GRANT INSERT ON public.priv_outbox TO regress_app;
SELECT eventlog.route_outbox('public.priv_outbox');
SELECT eventlog.create_topic('priv.secret');
SET ROLE regress_app;
SELECT code, message FROM expect_error($$INSERT INTO public.priv_outbox (aggregatetype, aggregateid, type, payload) VALUES ('priv.secret', '1', 'Leak', '{}')$$);
INSERT INTO public.priv_outbox (aggregatetype, aggregateid, type, payload) VALUES ('priv.items', '2', 'Note', '{}');
RESET ROLE;
SELECT eventlog.high_watermark('priv.secret', 0) AS secret_records,
       (SELECT count(*) FROM eventlog.read('priv.items', 0, 0) WHERE key = '2') AS routed;
SELECT eventlog.uncapture('public.priv_items');
SELECT eventlog.unroute_outbox('public.priv_outbox');
SELECT eventlog.drop_topic('priv.secret');
DROP TABLE public.priv_items, public.priv_mirror, public.priv_outbox;

-- 6. Ownership: handed over by its owner to a role it belongs to, or by a
-- superuser; the new owner administers the topic.
SET ROLE regress_admin;
SELECT * FROM expect_error($$SELECT eventlog.set_topic_owner('priv.orders', 'regress_app')$$);
RESET ROLE;
SELECT * FROM expect_error($$SELECT eventlog.set_topic_owner('priv.orders', 'public')$$);
SELECT eventlog.set_topic_owner('priv.orders', 'regress_app');
SET ROLE regress_admin;
SELECT * FROM expect_error($$SELECT eventlog.drop_topic('priv.orders')$$);
RESET ROLE;
SET ROLE regress_app;
SELECT eventlog.drop_topic('priv.orders');
RESET ROLE;
SELECT count(*) AS dependent_view_dropped_with_segment
  FROM pg_class WHERE relname = 'regress_seg_view';
SELECT count(*) AS topics_left FROM eventlog.topics WHERE topic LIKE 'priv.%';
SELECT eventlog.drop_topic('priv.items');

REVOKE EXECUTE ON FUNCTION eventlog.create_topic
  FROM regress_admin;
DROP ROLE regress_admin, regress_app, regress_other, regress_reader, regress_readers;
