-- pg_eventlog 0.1.0 -> 0.2.0
\echo Use "ALTER EXTENSION pg_eventlog UPDATE TO '0.2.0'" to load this file. \quit

-- LISTEN/NOTIFY: the channel of a topic; the long poll of eventlog.poll.
CREATE FUNCTION @extschema@.channel(topic text)
RETURNS text
AS 'MODULE_PATHNAME', 'el_channel'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.channel(text) IS
'the LISTEN/NOTIFY channel on which the notifier announces a topic''s newly readable records: "eventlog.<topic>", or "eventlog.md5:<md5 of the name>" for names too long for a channel';

CREATE FUNCTION @extschema@._await_records(topic text, partitions integer[], positions bigint[],
                                           wait interval)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_await_records'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._await_records(text, integer[], bigint[], interval) IS
'internal: the long poll of eventlog.poll: true as soon as one of the partitions has a last stable offset above its position, false when the wait ends';

-- eventlog.poll gains "wait" (a long poll).
DROP FUNCTION @extschema@.poll(text, text, integer, integer, text, interval);

-- Change capture, the outbox router, and apply_changes.
-- ---------------------------------------------------------------------------
-- Change capture, the outbox router, and applying a change topic
-- (docs/capture.md)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@._capture_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'el_capture_trigger'
LANGUAGE C;
COMMENT ON FUNCTION @extschema@._capture_trigger() IS
'internal: the row trigger of a captured table (arguments: topic, key columns): one change envelope per row change, produced in the writing transaction';

CREATE FUNCTION @extschema@._capture_snapshot(source regclass, topic text, key_columns text[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_capture_snapshot'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION @extschema@._capture_snapshot(regclass, text, text[]) IS
'internal: every row of a table as an "r" (snapshot) change envelope, read with the statement''s snapshot';

CREATE FUNCTION @extschema@._capture_truncate()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'cannot truncate captured table %', TG_RELID::regclass
        USING ERRCODE = '0A000',
              DETAIL = 'TRUNCATE fires no row triggers, so the change topic would not record the removal.',
              HINT = 'DELETE the rows instead, or stop capturing with eventlog.uncapture() first.';
END
$$;
COMMENT ON FUNCTION @extschema@._capture_truncate() IS
'internal: refuses TRUNCATE on a captured table';

CREATE FUNCTION @extschema@._trigger_args(tgargs bytea, tgnargs smallint)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (pg_catalog.string_to_array(pg_catalog.encode(tgargs, 'escape'), '\000'))[1:tgnargs] $$;
COMMENT ON FUNCTION @extschema@._trigger_args(bytea, smallint) IS
'internal: a trigger''s arguments (pg_trigger.tgargs) as an array, for the captures and outboxes views';

CREATE VIEW @extschema@.captures AS
SELECT t.tgrelid::pg_catalog.regclass AS source,
       a.args[1] AS topic,
       a.args[2:] AS key_columns,
       t.tgenabled <> 'D' AS enabled
  FROM pg_catalog.pg_trigger t,
       LATERAL (SELECT @extschema@._trigger_args(t.tgargs, t.tgnargs) AS args) a
 WHERE t.tgname = 'eventlog_capture' AND NOT t.tgisinternal
   AND t.tgfoid = '@extschema@._capture_trigger()'::pg_catalog.regprocedure;
COMMENT ON VIEW @extschema@.captures IS
'captured tables: each row change of source becomes a change envelope in topic, keyed by key_columns';
GRANT SELECT ON @extschema@.captures TO PUBLIC;

CREATE FUNCTION @extschema@.capture(source regclass, topic text, key_columns text[] DEFAULT NULL,
                                    partitions integer DEFAULT 1, snapshot boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
    keys text[] := key_columns;
    k text;
    n bigint := 0;
BEGIN
    IF source IS NULL THEN
        RAISE EXCEPTION 'source must not be null' USING ERRCODE = '22004';
    END IF;
    PERFORM @extschema@._check_topic_name(topic);
    IF snapshot IS NULL THEN
        RAISE EXCEPTION 'snapshot must not be null' USING ERRCODE = '22004';
    END IF;
    SELECT c.relkind, c.relnamespace::regnamespace AS nsp INTO rel FROM pg_class c WHERE c.oid = source;
    IF rel.relkind <> 'r' THEN
        RAISE EXCEPTION '"%" is not a table', source USING ERRCODE = '42809',
            DETAIL = 'Only ordinary tables can be captured (not views, foreign or partitioned tables).',
            HINT = 'Capture each partition of a partitioned table.';
    END IF;
    IF rel.nsp = '@extschema@'::regnamespace THEN
        RAISE EXCEPTION 'cannot capture "%", a table of the event log itself', source USING ERRCODE = '42809';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.captures c WHERE c.source = capture.source) THEN
        RAISE EXCEPTION 'table % is already captured', source USING ERRCODE = '42710',
            HINT = 'See eventlog.captures; run eventlog.uncapture() first to change the topic or key.';
    END IF;
    IF snapshot AND pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'capture with snapshot needs READ COMMITTED' USING ERRCODE = '0A000',
            DETAIL = 'The snapshot must be taken after the table is locked, so that it meets the captured stream exactly.',
            HINT = 'Run it in a READ COMMITTED transaction.';
    END IF;
    IF keys IS NULL THEN
        SELECT pg_catalog.array_agg(a.attname::text ORDER BY k.ord) INTO keys
          FROM pg_index i
          CROSS JOIN LATERAL pg_catalog.unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
         WHERE i.indrelid = source AND i.indisprimary;
        IF keys IS NULL THEN
            RAISE EXCEPTION 'table % has no primary key', source USING ERRCODE = '55000',
                DETAIL = 'Changes are keyed by the row''s key, so that all changes of a row stay in order in one partition.',
                HINT = 'Add a primary key, or name the key columns with key_columns => ARRAY[...].';
        END IF;
    END IF;
    IF pg_catalog.cardinality(keys) = 0 THEN
        RAISE EXCEPTION 'key_columns must not be empty' USING ERRCODE = '22023';
    END IF;
    FOREACH k IN ARRAY keys LOOP
        IF k IS NULL OR NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = source
                                       AND a.attname = k AND a.attnum > 0 AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'column "%" of table % does not exist', k, source USING ERRCODE = '42703';
        END IF;
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM pg_catalog.unnest(keys) x) <> pg_catalog.cardinality(keys) THEN
        RAISE EXCEPTION 'key_columns must not repeat a column' USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = topic) THEN
        PERFORM @extschema@.create_topic(topic, partitions);
    END IF;
    -- Keep writers out from here to commit: the trigger and the snapshot
    -- then meet exactly (CREATE TRIGGER takes the same lock).
    EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', source);
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER eventlog_capture AFTER INSERT OR UPDATE OR DELETE ON %s '
        'FOR EACH ROW EXECUTE FUNCTION @extschema@._capture_trigger(%s)',
        source, (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(x), ', ')
                   FROM pg_catalog.unnest(ARRAY[topic] || keys) x));
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER eventlog_capture_truncate BEFORE TRUNCATE ON %s '
        'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@._capture_truncate()', source);
    IF snapshot THEN
        n := @extschema@._capture_snapshot(source, topic, keys);
    END IF;
    RETURN n;
END
$$;
COMMENT ON FUNCTION @extschema@.capture(regclass, text, text[], integer, boolean) IS
'captures INSERT, UPDATE and DELETE on a table into a topic (created with "partitions" partitions if missing) as Debezium-style change envelopes keyed by the primary key or key_columns; with snapshot, first produces the existing rows as "r" records; returns how many';

CREATE FUNCTION @extschema@.uncapture(source regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF source IS NULL THEN
        RAISE EXCEPTION 'source must not be null' USING ERRCODE = '22004';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.captures c WHERE c.source = uncapture.source) THEN
        RAISE EXCEPTION 'table % is not captured', source USING ERRCODE = '42704',
            HINT = 'See eventlog.captures.';
    END IF;
    EXECUTE pg_catalog.format('DROP TRIGGER eventlog_capture ON %s', source);
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS eventlog_capture_truncate ON %s', source);
END
$$;
COMMENT ON FUNCTION @extschema@.uncapture(regclass) IS
'stops capturing a table; its topic and records stay';

CREATE FUNCTION @extschema@._outbox_trigger()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r jsonb := pg_catalog.to_jsonb(NEW);
    -- TG_ARGV: topic column, key column, value column, type column, id column, keep
    topic text := r ->> TG_ARGV[0];
BEGIN
    IF topic IS NULL THEN
        RAISE EXCEPTION 'outbox row of % has no topic in column "%"', TG_RELID::regclass, TG_ARGV[0]
            USING ERRCODE = '23502';
    END IF;
    PERFORM @extschema@.produce(topic, r ->> TG_ARGV[1], r -> TG_ARGV[2],
                                pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                                    'type', r ->> TG_ARGV[3], 'id', r ->> TG_ARGV[4])));
    IF TG_WHEN = 'BEFORE' THEN
        RETURN NULL;            -- routed, not stored: the outbox stays empty
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@._outbox_trigger() IS
'internal: the trigger of an outbox table: produces each inserted row to the topic its topic column names';

CREATE VIEW @extschema@.outboxes AS
SELECT t.tgrelid::pg_catalog.regclass AS source,
       a.args[1] AS topic_column, a.args[2] AS key_column, a.args[3] AS value_column,
       a.args[4] AS type_column, a.args[5] AS id_column, t.tgtype & 2 = 0 AS keep_rows
  FROM pg_catalog.pg_trigger t,
       LATERAL (SELECT @extschema@._trigger_args(t.tgargs, t.tgnargs) AS args) a
 WHERE t.tgname = 'eventlog_outbox' AND NOT t.tgisinternal
   AND t.tgfoid = '@extschema@._outbox_trigger()'::pg_catalog.regprocedure;
COMMENT ON VIEW @extschema@.outboxes IS
'outbox tables: each inserted row is produced to the topic named by topic_column, keyed by key_column';
GRANT SELECT ON @extschema@.outboxes TO PUBLIC;

CREATE FUNCTION @extschema@.route_outbox(source regclass, topic_column text DEFAULT 'aggregatetype',
                                         key_column text DEFAULT 'aggregateid',
                                         value_column text DEFAULT 'payload',
                                         type_column text DEFAULT 'type',
                                         id_column text DEFAULT 'id',
                                         keep_rows boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c text;
BEGIN
    IF source IS NULL OR keep_rows IS NULL THEN
        RAISE EXCEPTION 'source and keep_rows must not be null' USING ERRCODE = '22004';
    END IF;
    IF (SELECT relkind FROM pg_class WHERE oid = source) <> 'r' THEN
        RAISE EXCEPTION '"%" is not a table', source USING ERRCODE = '42809';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.outboxes o WHERE o.source = route_outbox.source) THEN
        RAISE EXCEPTION 'table % is already an outbox', source USING ERRCODE = '42710',
            HINT = 'See eventlog.outboxes; run eventlog.unroute_outbox() first to change it.';
    END IF;
    FOREACH c IN ARRAY ARRAY[topic_column, key_column, value_column] LOOP
        IF c IS NULL OR NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = source
                                       AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'column "%" of table % does not exist', c, source USING ERRCODE = '42703',
                HINT = 'Name the outbox''s topic, key and value columns (topic_column, key_column, value_column).';
        END IF;
    END LOOP;
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER eventlog_outbox %s INSERT ON %s FOR EACH ROW '
        'EXECUTE FUNCTION @extschema@._outbox_trigger(%L, %L, %L, %L, %L)',
        CASE WHEN keep_rows THEN 'AFTER' ELSE 'BEFORE' END, source,
        topic_column, key_column, value_column, coalesce(type_column, ''), coalesce(id_column, ''));
END
$$;
COMMENT ON FUNCTION @extschema@.route_outbox(regclass, text, text, text, text, text, boolean) IS
'makes a table an outbox (Debezium''s outbox event router): each inserted row is produced, in the inserting transaction, to the topic its topic column names, keyed by its key column, with its value column as the value and its type and id in headers; unless keep_rows, the row is not stored';

CREATE FUNCTION @extschema@.unroute_outbox(source regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF source IS NULL THEN
        RAISE EXCEPTION 'source must not be null' USING ERRCODE = '22004';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.outboxes o WHERE o.source = unroute_outbox.source) THEN
        RAISE EXCEPTION 'table % is not an outbox', source USING ERRCODE = '42704';
    END IF;
    EXECUTE pg_catalog.format('DROP TRIGGER eventlog_outbox ON %s', source);
END
$$;
COMMENT ON FUNCTION @extschema@.unroute_outbox(regclass) IS
'stops routing an outbox table''s rows to topics';

CREATE FUNCTION @extschema@.apply_changes(topic text, group_name text, target regclass,
                                          max_records integer DEFAULT 1000)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r @extschema@.record;
    op text;
    img jsonb;
    cols text;
    excl text;
    keycols text;
    n bigint := 0;
    nparts integer;
    target_cols name[];
BEGIN
    IF target IS NULL THEN
        RAISE EXCEPTION 'target must not be null' USING ERRCODE = '22004';
    END IF;
    IF (SELECT relkind FROM pg_class WHERE oid = target) NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', target USING ERRCODE = '42809';
    END IF;
    SELECT c.partitions INTO nparts FROM @extschema@.topic_catalog c WHERE c.name = topic;
    IF nparts IS NULL THEN
        PERFORM @extschema@._topic_id(topic);    -- raises the usual error
    END IF;
    -- The target's writable columns, in order (read once, not per change).
    SELECT pg_catalog.array_agg(a.attname ORDER BY a.attnum) INTO target_cols
      FROM pg_attribute a
     WHERE a.attrelid = target AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
    -- One transaction: the group's positions move with the changes applied.
    FOR r IN SELECT * FROM @extschema@.poll(topic, group_name, max_records, partitions => nparts) LOOP
        op := r.value ->> 'op';
        IF r.key IS NULL OR op IS NULL OR op NOT IN ('c', 'r', 'u', 'd') THEN
            RAISE EXCEPTION 'record %/% of topic "%" is not a change envelope', r.partition, r.offset_id, topic
                USING ERRCODE = '22023',
                      DETAIL = 'A change has a JSON object key and a value with "op" c, r, u or d.';
        END IF;
        SELECT pg_catalog.string_agg(pg_catalog.quote_ident(k), ', ') INTO keycols
          FROM pg_catalog.jsonb_object_keys(r.key::jsonb) k;
        IF op = 'd' THEN
            EXECUTE pg_catalog.format('DELETE FROM %s t WHERE (%s) = (SELECT %s FROM pg_catalog.jsonb_populate_record(NULL::%s, $1))',
                                      target, keycols, keycols, target)
              USING r.key::jsonb;
        ELSE
            img := r.value -> 'after';
            -- The columns the image and the target share.
            SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c), ', ' ORDER BY i),
                   pg_catalog.string_agg('excluded.' || pg_catalog.quote_ident(c), ', ' ORDER BY i)
              INTO cols, excl
              FROM pg_catalog.unnest(target_cols) WITH ORDINALITY AS x(c, i)
             WHERE img ? c;
            EXECUTE pg_catalog.format(
                'INSERT INTO %1$s AS t (%2$s) SELECT %2$s FROM pg_catalog.jsonb_populate_record(NULL::%1$s, $1) '
                'ON CONFLICT (%3$s) DO UPDATE SET (%2$s) = ROW(%4$s)',
                target, cols, keycols, excl)
              USING img;
        END IF;
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
COMMENT ON FUNCTION @extschema@.apply_changes(text, text, regclass, integer) IS
'applies up to max_records changes of a change topic to a mirror table as consumer group group_name: upserts by key for c, r and u, deletes for d, in offset order per partition, in the caller''s transaction together with the group''s positions; returns how many (0: caught up)';

-- Roles (0: PUBLIC) that hold a privilege on every active segment of a
-- topic, other than their owner; used once, by the migration below.
CREATE FUNCTION @extschema@._migrated_grantees(tid integer, priv text)
RETURNS regrole[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(DISTINCT a.grantee::regrole), '{}')
      FROM @extschema@.segment_catalog s
      JOIN pg_class c ON c.relname = s.table_name
                     AND c.relnamespace = '@extschema@'::regnamespace,
           LATERAL aclexplode(c.relacl) a
     WHERE s.topic_id = tid AND a.privilege_type = priv AND a.grantee <> c.relowner
       AND s.segment_no = (SELECT max(s2.segment_no) FROM @extschema@.segment_catalog s2
                            WHERE s2.topic_id = s.topic_id AND s2.partition = s.partition)
$$;

-- ---------------------------------------------------------------------------
-- Topic privileges replace privileges on segment tables (docs/security.md).
-- A topic's owner is the owner of its oldest segment table (its creator);
-- roles that held INSERT on the topic's newest segments become producers,
-- those that held SELECT consumers.
-- ---------------------------------------------------------------------------
ALTER TABLE @extschema@.topic_catalog
    ADD COLUMN owner regrole,
    ADD COLUMN producers regrole[] NOT NULL DEFAULT '{}',
    ADD COLUMN consumers regrole[] NOT NULL DEFAULT '{}';
UPDATE @extschema@.topic_catalog t
   SET owner = coalesce(
           (SELECT c.relowner::pg_catalog.regrole
              FROM @extschema@.segment_catalog s
              JOIN pg_catalog.pg_class c
                ON c.relname OPERATOR(pg_catalog.=) s.table_name
               AND c.relnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace
             WHERE s.topic_id OPERATOR(pg_catalog.=) t.topic_id
             ORDER BY s.partition, s.segment_no LIMIT 1),
           (SELECT e.extowner::pg_catalog.regrole FROM pg_catalog.pg_extension e
             WHERE e.extname OPERATOR(pg_catalog.=) 'pg_eventlog')),
       producers = @extschema@._migrated_grantees(t.topic_id, 'INSERT'),
       consumers = @extschema@._migrated_grantees(t.topic_id, 'SELECT');
ALTER TABLE @extschema@.topic_catalog ALTER COLUMN owner SET NOT NULL;
DROP FUNCTION @extschema@._migrated_grantees(integer, text);
-- The segment tables become the extension owner's, without grants: topic
-- privileges now govern access, and a grant left on a segment would let a
-- role read what eventlog.revoke took from it.
DO $migrate$
DECLARE
    seg record;
    g record;
    extowner name := (SELECT r.rolname FROM pg_catalog.pg_extension e
                        JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) e.extowner
                       WHERE e.extname OPERATOR(pg_catalog.=) 'pg_eventlog');
BEGIN
    FOR seg IN SELECT s.table_name FROM @extschema@.segment_catalog s
                WHERE pg_catalog.to_regclass(pg_catalog.format('@extschema@.%I', s.table_name)) IS NOT NULL
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE @extschema@.%I OWNER TO %I', seg.table_name, extowner);
        FOR g IN SELECT DISTINCT a.grantee
                   FROM pg_catalog.pg_class c, LATERAL pg_catalog.aclexplode(c.relacl) a
                  WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.format('@extschema@.%I', seg.table_name)::pg_catalog.regclass
                    AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
        LOOP
            EXECUTE pg_catalog.format('REVOKE ALL ON @extschema@.%I FROM %s', seg.table_name,
                CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                     ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END);
        END LOOP;
    END LOOP;
END
$migrate$;


-- ---------------------------------------------------------------------------
-- Topic privileges (docs/security.md)
-- ---------------------------------------------------------------------------

/* ------------------------------------------------------------------------
 * Topic privileges (src/acl.c, docs/security.md).  A topic's owner (its
 * creator) may alter, drop and grant it; producers may produce, consumers
 * read and move their groups' positions.  The functions that write the
 * catalog run as the extension owner through el_gate, which notes their
 * caller for _caller and _authorize.
 * ------------------------------------------------------------------------ */

CREATE FUNCTION @extschema@._session_id()
RETURNS text
AS 'MODULE_PATHNAME', 'el_session_id'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@._session_id() IS
'internal: this server session (backend PID and start time), to tell a restarted member consumer from the one before';

CREATE FUNCTION @extschema@._caller()
RETURNS regrole
AS 'MODULE_PATHNAME', 'el_caller_sql'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@._caller() IS
'internal: the role a gated API function acts for (the current user outside one)';

CREATE FUNCTION @extschema@._authorize(topic text, privilege text)
RETURNS integer
AS 'MODULE_PATHNAME', 'el_authorize'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@._authorize(text, text) IS
'internal: the topic''s id if the caller has the privilege (produce, consume or owner); 42501 if not, 42704 if there is no such topic';

CREATE FUNCTION @extschema@.has_topic_privilege(role regrole, topic text, privilege text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_has_topic_privilege'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@.has_topic_privilege(regrole, text, text) IS
'whether a role may produce to, consume from, or (privilege owner) administer a topic';

CREATE FUNCTION @extschema@.has_topic_privilege(topic text, privilege text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_has_topic_privilege'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@.has_topic_privilege(text, text) IS
'whether the current user may produce to, consume from, or (privilege owner) administer a topic';

/* A role name as grant and revoke take it: PUBLIC, or a role (0: PUBLIC). */
CREATE FUNCTION @extschema@._grantee(role text)
RETURNS regrole
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r regrole;
BEGIN
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = '22004';
    END IF;
    IF lower(role) = 'public' THEN
        RETURN 0::oid::regrole;
    END IF;
    r := role::regrole;        -- 42704 for an unknown name
    -- regrole also reads '-' (PUBLIC) and bare OIDs: accept roles only.
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid = r) THEN
        RAISE EXCEPTION 'role "%" does not exist', role USING ERRCODE = '42704';
    END IF;
    RETURN r;
END
$$;
COMMENT ON FUNCTION @extschema@._grantee(text) IS
'internal: a role name for grant and revoke, PUBLIC being 0';

/* The privileges a grant or revoke names: produce, consume or all. */
CREATE FUNCTION @extschema@._privileges(privilege text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF privilege IS NULL THEN
        RAISE EXCEPTION 'privilege must not be null' USING ERRCODE = '22004';
    END IF;
    CASE lower(privilege)
        WHEN 'produce' THEN RETURN ARRAY['produce'];
        WHEN 'consume' THEN RETURN ARRAY['consume'];
        WHEN 'all' THEN RETURN ARRAY['produce', 'consume'];
        ELSE
            RAISE EXCEPTION 'unrecognized topic privilege "%"', privilege
                USING ERRCODE = '22023',
                      HINT = 'A topic privilege is produce, consume or all.';
    END CASE;
END
$$;
COMMENT ON FUNCTION @extschema@._privileges(text) IS
'internal: the privileges named by produce, consume or all';

CREATE FUNCTION @extschema@._grant(topic text, privilege text, role text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'owner');
    privs text[] := @extschema@._privileges(privilege);
    grantee regrole := @extschema@._grantee(role);
BEGIN
    UPDATE @extschema@.topic_catalog t
       SET producers = CASE WHEN 'produce' = ANY (privs) AND NOT grantee = ANY (t.producers)
                            THEN t.producers || grantee ELSE t.producers END,
           consumers = CASE WHEN 'consume' = ANY (privs) AND NOT grantee = ANY (t.consumers)
                            THEN t.consumers || grantee ELSE t.consumers END
     WHERE t.topic_id = tid;
END
$$;
COMMENT ON FUNCTION @extschema@._grant(text, text, text) IS
'internal: the body of eventlog.grant, run as the extension owner on behalf of the caller eventlog.grant notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._grant(text, text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.grant(topic text, privilege text, role text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.grant(text, text, text) IS
'lets a role (or PUBLIC) produce to (produce), consume from (consume) or both (all) a topic; the topic''s owner grants';

CREATE FUNCTION @extschema@._revoke(topic text, privilege text, role text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'owner');
    privs text[] := @extschema@._privileges(privilege);
    grantee regrole := @extschema@._grantee(role);
BEGIN
    UPDATE @extschema@.topic_catalog t
       SET producers = CASE WHEN 'produce' = ANY (privs)
                            THEN array_remove(t.producers, grantee) ELSE t.producers END,
           consumers = CASE WHEN 'consume' = ANY (privs)
                            THEN array_remove(t.consumers, grantee) ELSE t.consumers END
     WHERE t.topic_id = tid;
END
$$;
COMMENT ON FUNCTION @extschema@._revoke(text, text, text) IS
'internal: the body of eventlog.revoke, run as the extension owner on behalf of the caller eventlog.revoke notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._revoke(text, text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.revoke(topic text, privilege text, role text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.revoke(text, text, text) IS
'takes back what eventlog.grant gave (a role keeps what it has through other roles); the topic''s owner revokes';

CREATE FUNCTION @extschema@._set_topic_owner(topic text, new_owner text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'owner');
    owner_role regrole;
    may_set boolean;
BEGIN
    IF new_owner IS NULL THEN
        RAISE EXCEPTION 'new_owner must not be null' USING ERRCODE = '22004';
    END IF;
    owner_role := @extschema@._grantee(new_owner);
    IF owner_role = 0 THEN
        RAISE EXCEPTION 'a topic''s owner must be a role, not PUBLIC' USING ERRCODE = '22023';
    END IF;
    -- ALTER ... OWNER's rule: one may give an object only to a role one
    -- could SET ROLE to (PostgreSQL 16 made that the SET option of the
    -- membership), so that nobody creates objects owned by others.
    may_set := CASE WHEN current_setting('server_version_num')::integer >= 160000
                    THEN pg_has_role(@extschema@._caller(), owner_role, 'SET')
                    ELSE pg_has_role(@extschema@._caller(), owner_role, 'MEMBER') END;
    IF NOT may_set THEN
        RAISE EXCEPTION 'must be able to SET ROLE "%"', owner_role::text
            USING ERRCODE = '42501',
                  DETAIL = 'Only a member of the new owner role, or a superuser, can hand a topic over to it.';
    END IF;
    UPDATE @extschema@.topic_catalog t SET owner = owner_role WHERE t.topic_id = tid;
END
$$;
COMMENT ON FUNCTION @extschema@._set_topic_owner(text, text) IS
'internal: the body of eventlog.set_topic_owner, run as the extension owner on behalf of the caller eventlog.set_topic_owner notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._set_topic_owner(text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.set_topic_owner(topic text, new_owner text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.set_topic_owner(text, text) IS
'hands a topic over to another role (the owner, being a member of the new role, or a superuser)';

CREATE FUNCTION @extschema@._create_topic(
    topic text,
    partitions integer DEFAULT 1,
    retention interval DEFAULT '7 days',
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT '1 day',
    segment_bytes bigint DEFAULT 1073741824)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    new_id integer;
BEGIN
    PERFORM @extschema@._require_shmem();
    PERFORM @extschema@._check_topic_name(topic);
    IF partitions IS NULL OR partitions < 1 THEN
        RAISE EXCEPTION 'partitions must be at least 1'
            USING ERRCODE = '22023',
                  DETAIL = format('The value given was %s.', coalesce(partitions::text, 'NULL'));
    END IF;
    PERFORM @extschema@._check_topic_settings(retention, retention_bytes,
                                              segment_interval, segment_bytes);
    -- Serialise topic creation, so that two sessions creating the same name
    -- get a clear error instead of a unique violation.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _create_topic.topic) THEN
        RAISE EXCEPTION 'topic "%" already exists', topic
            USING ERRCODE = '42710';
    END IF;
    INSERT INTO @extschema@.topic_catalog AS t
           (name, partitions, retention, retention_bytes, segment_interval, segment_bytes, owner)
    VALUES (topic, partitions, retention, retention_bytes, segment_interval, segment_bytes,
            @extschema@._caller())
    RETURNING t.topic_id INTO new_id;
    PERFORM @extschema@._add_partitions(new_id, 0, partitions - 1);
END
$$;
COMMENT ON FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint) IS
'internal: the body of eventlog.create_topic, run as the extension owner on behalf of the caller eventlog.create_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.create_topic(
    topic text,
    partitions integer DEFAULT 1,
    retention interval DEFAULT '7 days',
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT '1 day',
    segment_bytes bigint DEFAULT 1073741824)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint) IS
'creates a topic of that many partitions; retention NULL keeps records forever, retention_bytes is per partition';
-- Who may create topics: those granted EXECUTE on create_topic.
REVOKE ALL ON FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint) FROM PUBLIC;

CREATE FUNCTION @extschema@._drop_topic(topic text, if_exists boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    old_id integer;
    seg record;
BEGIN
    PERFORM @extschema@._check_topic_name(topic);
    SELECT t.topic_id INTO old_id
      FROM @extschema@.topic_catalog t WHERE t.name = _drop_topic.topic;
    IF NOT FOUND THEN
        IF coalesce(if_exists, false) THEN
            RAISE NOTICE 'topic "%" does not exist, skipping', topic;
            RETURN;
        END IF;
        RAISE EXCEPTION 'topic "%" does not exist', topic
            USING ERRCODE = '42704';
    END IF;
    PERFORM @extschema@._authorize(topic, 'owner');
    PERFORM FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id FOR UPDATE;
    FOR seg IN SELECT s.table_name FROM @extschema@.segment_catalog s
                WHERE s.topic_id = old_id ORDER BY s.partition, s.segment_no
    LOOP
        -- CASCADE: any role may create a view or type over a segment table
        -- (it needs no privilege on it) and would otherwise block the drop.
        EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I CASCADE', seg.table_name);
    END LOOP;
    DELETE FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id;
    PERFORM @extschema@._forget_topic(old_id);
END
$$;
COMMENT ON FUNCTION @extschema@._drop_topic(text, boolean) IS
'internal: the body of eventlog.drop_topic, run as the extension owner on behalf of the caller eventlog.drop_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._drop_topic(text, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.drop_topic(topic text, if_exists boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.drop_topic(text, boolean) IS
'drops a topic with all its records; a topic created again under the same name is a new topic whose offsets start at 0';

CREATE FUNCTION @extschema@._alter_topic(
    topic text,
    partitions integer DEFAULT NULL,
    retention interval DEFAULT NULL,
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT NULL,
    segment_bytes bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cur @extschema@.topic_catalog;
    new_retention interval;
    new_retention_bytes bigint;
BEGIN
    PERFORM @extschema@._require_shmem();
    PERFORM @extschema@._check_topic_name(topic);
    SELECT * INTO cur FROM @extschema@.topic_catalog t
     WHERE t.name = _alter_topic.topic FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', topic
            USING ERRCODE = '42704';
    END IF;
    PERFORM @extschema@._authorize(topic, 'owner');
    -- NULL leaves a setting as it is; a negative retention or
    -- retention_bytes removes the limit (Kafka's -1).
    new_retention := CASE WHEN retention IS NULL THEN cur.retention
                          WHEN retention < interval '0' THEN NULL
                          ELSE retention END;
    new_retention_bytes := CASE WHEN retention_bytes IS NULL THEN cur.retention_bytes
                                WHEN retention_bytes < 0 THEN NULL
                                ELSE retention_bytes END;
    IF retention = interval '0' OR retention_bytes = 0 THEN
        RAISE EXCEPTION 'retention limits must be positive'
            USING ERRCODE = '22023',
                  HINT = 'Pass a negative value (for example interval ''-1 second'' or -1) to remove a limit, or NULL to leave it unchanged.';
    END IF;
    PERFORM @extschema@._check_topic_settings(new_retention, new_retention_bytes,
        coalesce(segment_interval, cur.segment_interval),
        coalesce(segment_bytes, cur.segment_bytes));
    IF partitions IS NOT NULL AND partitions < cur.partitions THEN
        RAISE EXCEPTION 'cannot reduce the number of partitions of topic "%"', topic
            USING ERRCODE = '22023',
                  DETAIL = format('The topic has %s partitions and %s were asked for; partitions hold records and keys are hashed over their count.',
                                  cur.partitions, partitions),
                  HINT = 'Create a new topic with fewer partitions and copy the records into it.';
    END IF;
    IF partitions > cur.partitions THEN
        PERFORM @extschema@._add_partitions(cur.topic_id, cur.partitions, partitions - 1);
    END IF;
    UPDATE @extschema@.topic_catalog t
       SET partitions = greatest(cur.partitions, coalesce(_alter_topic.partitions, cur.partitions)),
           retention = new_retention,
           retention_bytes = new_retention_bytes,
           segment_interval = coalesce(_alter_topic.segment_interval, cur.segment_interval),
           segment_bytes = coalesce(_alter_topic.segment_bytes, cur.segment_bytes)
     WHERE t.topic_id = cur.topic_id;
END
$$;
COMMENT ON FUNCTION @extschema@._alter_topic(text, integer, interval, bigint, interval, bigint) IS
'internal: the body of eventlog.alter_topic, run as the extension owner on behalf of the caller eventlog.alter_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._alter_topic(text, integer, interval, bigint, interval, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.alter_topic(
    topic text,
    partitions integer DEFAULT NULL,
    retention interval DEFAULT NULL,
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT NULL,
    segment_bytes bigint DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.alter_topic(text, integer, interval, bigint, interval, bigint) IS
'changes a topic''s settings: NULL leaves one unchanged, a negative retention or retention_bytes removes that limit; partitions can only grow (keys then hash over the new count, as in Kafka)';

CREATE FUNCTION @extschema@._enforce_retention(topic text DEFAULT NULL)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer;
BEGIN
    PERFORM @extschema@._require_shmem();
    IF topic IS NOT NULL THEN
        PERFORM @extschema@._check_topic_name(topic);
        SELECT c.topic_id INTO tid FROM @extschema@.topic_catalog c WHERE c.name = _enforce_retention.topic;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'topic "%" does not exist', topic USING ERRCODE = '42704';
        END IF;
        PERFORM @extschema@._authorize(topic, 'owner');
        RETURN QUERY SELECT * FROM @extschema@._maintain_topic(tid);
        RETURN;
    END IF;
    -- Without a topic: every topic the caller owns (all, for a superuser).
    FOR tid IN SELECT c.topic_id FROM @extschema@.topic_catalog c
                WHERE @extschema@.has_topic_privilege(@extschema@._caller(), c.name, 'owner')
                ORDER BY c.topic_id LOOP
        RETURN QUERY SELECT * FROM @extschema@._maintain_topic(tid);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._enforce_retention(text) IS
'internal: the body of eventlog.enforce_retention, run as the extension owner on behalf of the caller eventlog.enforce_retention notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._enforce_retention(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.enforce_retention(topic text DEFAULT NULL)
RETURNS SETOF @extschema@.maintenance_action
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.enforce_retention(text) IS
'runs a maintenance round now (what the background worker does every eventlog.maintenance_interval) and returns what it did: segments removed by retention, and segments rolled (active from commit on; the segments they seal can be removed by the next round)';

CREATE FUNCTION @extschema@._create_group(topic text, group_name text,
                                         start_from text DEFAULT 'earliest',
                                         auto_reset text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'consume');
    n integer;
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    IF start_from IS NULL OR start_from NOT IN ('earliest', 'latest') THEN
        RAISE EXCEPTION 'start_from must be ''earliest'' or ''latest''' USING ERRCODE = '22023';
    END IF;
    IF auto_reset IS NOT NULL AND auto_reset NOT IN ('earliest', 'latest') THEN
        RAISE EXCEPTION 'auto_reset must be ''earliest'', ''latest'' or NULL' USING ERRCODE = '22023',
            HINT = 'NULL makes poll raise an error when retention removed records the group has not read.';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.group_catalog g
                WHERE g.topic_id = tid AND g.group_name = _create_group.group_name)
       OR EXISTS (SELECT FROM @extschema@.group_offsets o
                   WHERE o.topic_id = tid AND o.group_name = _create_group.group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" already exists', group_name, topic
            USING ERRCODE = '42710';
    END IF;
    INSERT INTO @extschema@.group_catalog (topic_id, group_name, start_from, auto_reset)
    VALUES (tid, group_name, start_from, auto_reset);
    -- Positions up front, so that the group's first polls never race to
    -- create them.
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = tid;
    INSERT INTO @extschema@.group_offsets (topic_id, group_name, partition, next_offset)
    SELECT tid, _create_group.group_name, p,
           CASE start_from WHEN 'latest' THEN @extschema@.last_stable_offset(topic, p)
                           ELSE @extschema@.log_start_offset(topic, p) END
      FROM pg_catalog.generate_series(0, n - 1) p;
END
$$;
COMMENT ON FUNCTION @extschema@._create_group(text, text, text, text) IS
'internal: the body of eventlog.create_group, run as the extension owner on behalf of the caller eventlog.create_group notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._create_group(text, text, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.create_group(topic text, group_name text,
                                         start_from text DEFAULT 'earliest',
                                         auto_reset text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.create_group(text, text, text, text) IS
'creates a consumer group with its positions: start_from earliest (the default: nothing is missed) or latest; auto_reset NULL (poll errors when retention removed unread records), earliest or latest';

CREATE FUNCTION @extschema@._poll(topic text, group_name text, max_records integer DEFAULT 500,
                                 partitions integer DEFAULT 1, member text DEFAULT NULL,
                                 session_timeout interval DEFAULT '30 seconds',
                                 wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'consume');
    g record;
    n integer;
    first_p integer;
    i integer;
    p integer;
    pos bigint;
    stable bigint;
    remaining integer;
    got integer;
    last_offset bigint;
    taken integer := 0;
    held integer[] := '{}';
    has_row boolean;
    r @extschema@.record;
    deadline timestamptz;
    await_p integer[];
    await_pos bigint[];
    others_hold boolean;
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    IF max_records IS NULL OR max_records < 1 THEN
        RAISE EXCEPTION 'max_records must be at least 1' USING ERRCODE = '22023';
    END IF;
    IF partitions IS NULL OR partitions < 1 THEN
        RAISE EXCEPTION 'partitions must be at least 1' USING ERRCODE = '22023',
            HINT = 'It is how many partitions one poll may take.';
    END IF;
    IF wait < interval '0' THEN
        RAISE EXCEPTION 'wait must not be negative' USING ERRCODE = '22023';
    ELSIF wait > interval '1 day' THEN
        RAISE EXCEPTION 'wait must be at most 1 day' USING ERRCODE = '22023';
    END IF;
    deadline := pg_catalog.clock_timestamp() + coalesce(wait, interval '0');
    IF member IS NOT NULL THEN
        IF wait >= session_timeout THEN
            RAISE EXCEPTION 'wait must be shorter than session_timeout' USING ERRCODE = '22023',
                DETAIL = 'A member that waits longer than its session timeout misses its heartbeat and loses its partitions.';
        END IF;
        -- Wait before joining: _poll_member holds the group's membership
        -- lock to the end of the transaction, and other members must not
        -- wait for it.  A member that owns nothing yet (its first poll)
        -- does not wait.
        IF wait > interval '0' THEN
            SELECT pg_catalog.array_agg(go.partition),
                   pg_catalog.array_agg(coalesce(go.fetch_offset, go.next_offset))
              INTO await_p, await_pos
              FROM @extschema@.group_offsets go
             WHERE go.topic_id = tid AND go.group_name = _poll.group_name
               AND go.owner_member = _poll.member;
            IF await_p IS NOT NULL THEN
                PERFORM @extschema@._await_records(topic, await_p, await_pos, wait);
            END IF;
        END IF;
        RETURN QUERY SELECT * FROM @extschema@._poll_member(tid, topic, group_name, member,
                                                            max_records, session_timeout);
        RETURN;
    END IF;
    -- Shared with other transactional polls, exclusive with members' polls:
    -- a member cannot join while this transaction consumes the group.
    PERFORM @extschema@._xact_lock(3, @extschema@._group_lock_key(tid, group_name, -1), true);
    IF EXISTS (SELECT FROM @extschema@.group_members gm
                WHERE gm.topic_id = tid AND gm.group_name = _poll.group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" has member consumers', group_name, topic
            USING ERRCODE = '55000',
                  HINT = 'A group is consumed either by transactions or by members: pass member => to poll as one.';
    END IF;
    SELECT c.start_from, c.auto_reset INTO g FROM @extschema@.group_catalog c
     WHERE c.topic_id = tid AND c.group_name = _poll.group_name;
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = tid;
    remaining := max_records;
    LOOP
        -- Where each partition looked at must get to for a new poll to
        -- find something: past the position when it was empty, past the
        -- stable offset seen when another transaction held it.
        await_p := '{}';
        await_pos := '{}';
        others_hold := false;
        -- Start somewhere else each time, so that consumers spread.
        first_p := (pg_catalog.random() * n)::integer % n;
        FOR i IN 0 .. n - 1 LOOP
            EXIT WHEN remaining <= 0;
            p := (first_p + i) % n;
            -- Partitions this call took in an earlier pass stay its own;
            -- it takes at most "partitions" of them.
            CONTINUE WHEN taken >= partitions AND NOT p = ANY (held);
            has_row := EXISTS (SELECT FROM @extschema@.group_offsets o
                                WHERE o.topic_id = tid AND o.group_name = _poll.group_name
                                  AND o.partition = p);
            stable := @extschema@.last_stable_offset(topic, p);
            -- Nothing to read: leave the partition free.  Unless the group
            -- has no position there yet and starts from the latest offset:
            -- then it takes the partition to record where "latest" was, so
            -- that nothing produced from now on is skipped.
            IF has_row OR g.start_from IS DISTINCT FROM 'latest' THEN
                pos := @extschema@._group_position(tid, topic, group_name, p, g.start_from);
                IF pos >= stable THEN
                    await_p := await_p || p;
                    await_pos := await_pos || pos;
                    CONTINUE;
                END IF;
            END IF;
            IF NOT p = ANY (held) THEN
                -- Taken by another transaction of this group: skip it, never wait.
                IF NOT @extschema@._try_xact_lock(3, @extschema@._group_lock_key(tid, group_name, p)) THEN
                    await_p := await_p || p;
                    await_pos := await_pos || stable;
                    others_hold := true;
                    CONTINUE;
                END IF;
                held := held || p;
                taken := taken + 1;
            END IF;
            -- Ours now: read the position again (it may have moved before we
            -- took the partition).
            pos := @extschema@._checked_position(topic, group_name, p,
                       @extschema@._group_position(tid, topic, group_name, p, g.start_from),
                       stable, g.auto_reset);
            got := 0;
            last_offset := NULL;
            FOR r IN SELECT * FROM @extschema@.read(topic, p, pos, remaining) LOOP
                RETURN NEXT r;
                got := got + 1;
                last_offset := r.offset_id;
            END LOOP;
            -- Advance past what was returned; a partition read to its end
            -- moves on to the stable offset (past trailing aborted offsets).
            IF got < remaining THEN
                pos := greatest(pos, coalesce(last_offset + 1, pos), stable);
            ELSE
                pos := last_offset + 1;
            END IF;
            PERFORM @extschema@._set_position(tid, group_name, p, pos);
            remaining := remaining - got;
            await_p := await_p || p;
            await_pos := await_pos || pos;
        END LOOP;
        -- Long poll: when nothing was found, sleep until a partition looked
        -- at gets past where it was, then look again.  No commit announces
        -- that another transaction released a partition: while one is held,
        -- look again every second.
        EXIT WHEN remaining < max_records OR pg_catalog.clock_timestamp() >= deadline
               OR pg_catalog.cardinality(await_p) = 0;
        IF NOT @extschema@._await_records(topic, await_p, await_pos,
                   greatest(interval '0',
                            CASE WHEN others_hold
                                 THEN least(deadline - pg_catalog.clock_timestamp(), interval '1 second')
                                 ELSE deadline - pg_catalog.clock_timestamp() END))
           AND NOT others_hold THEN
            EXIT;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._poll(text, text, integer, integer, text, interval, interval) IS
'internal: the body of eventlog.poll, run as the extension owner on behalf of the caller eventlog.poll notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._poll(text, text, integer, integer, text, interval, interval) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.poll(topic text, group_name text, max_records integer DEFAULT 500,
                                 partitions integer DEFAULT 1, member text DEFAULT NULL,
                                 session_timeout interval DEFAULT '30 seconds',
                                 wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.record
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.poll(text, text, integer, integer, text, interval, interval) IS
'without member: returns up to max_records from up to "partitions" partitions that no other open transaction of the group holds, from the group''s positions, and advances them in the caller''s transaction (roll back and the records come again); with member: heartbeats, gets the member''s assigned partitions and returns records from its fetch positions, to be committed with eventlog.commit; with wait, a long poll: when nothing is readable, sleeps until records arrive or the wait ends';

CREATE FUNCTION @extschema@._commit(topic text, group_name text, member text,
                                   partition integer DEFAULT NULL, next_offset bigint DEFAULT NULL,
                                   generation bigint DEFAULT NULL, metadata text DEFAULT NULL)
RETURNS SETOF @extschema@.position
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'consume');
    o record;
    pos bigint;
    res @extschema@.position;
    msession text;
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    IF member IS NULL OR member = '' THEN
        RAISE EXCEPTION 'member must be given' USING ERRCODE = '22023',
            HINT = 'Transactional consumers commit with their transaction; members commit with their name.';
    END IF;
    IF next_offset IS NOT NULL AND partition IS NULL THEN
        RAISE EXCEPTION 'next_offset needs a partition' USING ERRCODE = '22023';
    END IF;
    IF next_offset < 0 THEN
        RAISE EXCEPTION 'next_offset must not be negative' USING ERRCODE = '22023';
    END IF;
    -- Committing "what the polls returned" is only safe in the session that
    -- polled: a member restarted in another session got those records again
    -- (_poll_member), and the fetch positions are now its.  Wait for member
    -- polls in progress (they hold this lock exclusively), then compare.
    IF next_offset IS NULL THEN
        PERFORM @extschema@._xact_lock(3, @extschema@._group_lock_key(tid, group_name, -1), true);
        SELECT gm.session INTO msession FROM @extschema@.group_members gm
         WHERE gm.topic_id = tid AND gm.group_name = _commit.group_name AND gm.member = _commit.member;
        IF FOUND AND msession IS DISTINCT FROM @extschema@._session_id() THEN
            RAISE EXCEPTION 'member "%" of group "%" of topic "%" last polled from another session', member, group_name, topic
                USING ERRCODE = '55000',
                      DETAIL = 'That session was given again what this one polled and did not commit; committing the fetch positions could skip records it has not processed.',
                      HINT = 'Poll again from this session, or commit explicit offsets with partition and next_offset.';
        END IF;
    END IF;
    IF partition IS NOT NULL THEN
        SELECT go.partition, go.owner_member, go.generation, go.fetch_offset, go.next_offset INTO o
          FROM @extschema@.group_offsets go
         WHERE go.topic_id = tid AND go.group_name = _commit.group_name AND go.partition = _commit.partition
           FOR UPDATE;
        IF NOT FOUND OR o.owner_member IS DISTINCT FROM member
           OR (generation IS NOT NULL AND o.generation <> generation) THEN
            RAISE EXCEPTION 'member "%" does not own partition % of topic "%" in group "%"',
                            member, partition, topic, group_name
                USING ERRCODE = '55000',
                      DETAIL = format('The partition is assigned to %s in generation %s.',
                                      coalesce(quote_literal(o.owner_member), 'no member'),
                                      coalesce(o.generation::text, '0')),
                      HINT = 'The member lost the partition (it left, or missed its session timeout); poll again to get an assignment.';
        END IF;
        pos := coalesce(next_offset, o.fetch_offset, o.next_offset);
        IF pos > @extschema@.high_watermark(topic, partition) THEN
            RAISE EXCEPTION 'offset % is beyond the high watermark of partition % of topic "%"', pos, partition, topic
                USING ERRCODE = '22003';
        END IF;
        UPDATE @extschema@.group_offsets go
           SET next_offset = pos, committed_at = pg_catalog.now(),
               metadata = coalesce(_commit.metadata, go.metadata)
         WHERE go.topic_id = tid AND go.group_name = _commit.group_name AND go.partition = _commit.partition;
        res.partition := partition;
        res.offset_id := pos;
        RETURN NEXT res;
        RETURN;
    END IF;
    -- A member that is no longer in the group owns nothing: say so, rather
    -- than commit nothing in silence (the same fencing as for one partition).
    IF NOT EXISTS (SELECT FROM @extschema@.group_members gm
                    WHERE gm.topic_id = tid AND gm.group_name = _commit.group_name
                      AND gm.member = _commit.member) THEN
        RAISE EXCEPTION 'member "%" is not in group "%" of topic "%"', member, group_name, topic
            USING ERRCODE = '55000',
                  HINT = 'The member left, or missed its session timeout; poll again to rejoin the group.';
    END IF;
    -- Everything the member's last polls returned, in the partitions it owns.
    FOR o IN SELECT go.partition, go.fetch_offset FROM @extschema@.group_offsets go
              WHERE go.topic_id = tid AND go.group_name = _commit.group_name
                AND go.owner_member = member AND go.fetch_offset IS NOT NULL
              ORDER BY go.partition FOR UPDATE
    LOOP
        UPDATE @extschema@.group_offsets go
           SET next_offset = o.fetch_offset, committed_at = pg_catalog.now(),
               metadata = coalesce(_commit.metadata, go.metadata)
         WHERE go.topic_id = tid AND go.group_name = _commit.group_name AND go.partition = o.partition;
        res.partition := o.partition;
        res.offset_id := o.fetch_offset;
        RETURN NEXT res;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._commit(text, text, text, integer, bigint, bigint, text) IS
'internal: the body of eventlog.commit, run as the extension owner on behalf of the caller eventlog.commit notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._commit(text, text, text, integer, bigint, bigint, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.commit(topic text, group_name text, member text,
                                   partition integer DEFAULT NULL, next_offset bigint DEFAULT NULL,
                                   generation bigint DEFAULT NULL, metadata text DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.commit(text, text, text, integer, bigint, bigint, text) IS
'a member commits its position: in one partition (next_offset, or what its polls returned; optionally fenced by generation), or in every partition it owns; refused with SQLSTATE 55000 when it no longer owns the partition';

CREATE FUNCTION @extschema@._seek(topic text, group_name text, target text,
                                 partition integer DEFAULT NULL, force boolean DEFAULT false)
RETURNS SETOF @extschema@.position
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r @extschema@.position;
    tid integer := @extschema@._authorize(topic, 'consume');
    n integer;
    p integer;
    pos bigint;
    ts timestamptz;
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    IF target IS NULL OR target = '' THEN
        RAISE EXCEPTION 'target must not be empty' USING ERRCODE = '22023',
            HINT = 'Use ''earliest'', ''latest'', an offset or a timestamp.';
    END IF;
    IF target !~ '^(earliest|latest|[0-9]+)$' THEN
        BEGIN
            ts := target::timestamptz;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION 'invalid seek target "%"', target USING ERRCODE = '22023',
                HINT = 'Use ''earliest'', ''latest'', an offset or a timestamp.';
        END;
    END IF;
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = tid;
    IF _seek.partition IS NOT NULL AND (_seek.partition < 0 OR _seek.partition >= n) THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', _seek.partition, topic
            USING ERRCODE = '22023', DETAIL = format('The topic has %s partitions, numbered 0 to %s.', n, n - 1);
    END IF;
    FOR p IN SELECT pg_catalog.generate_series(coalesce(_seek.partition, 0), coalesce(_seek.partition, n - 1)) LOOP
        IF force THEN
            PERFORM @extschema@._xact_lock(3, @extschema@._group_lock_key(tid, group_name, p));
        ELSIF NOT @extschema@._try_xact_lock(3, @extschema@._group_lock_key(tid, group_name, p)) THEN
            RAISE EXCEPTION 'partition % of topic "%" is being consumed by group "%"', p, topic, group_name
                USING ERRCODE = '55006',
                      HINT = 'Retry when its consumers are idle, or pass force => true to wait for them.';
        ELSIF EXISTS (SELECT FROM @extschema@.group_offsets o
                       WHERE o.topic_id = tid AND o.group_name = _seek.group_name AND o.partition = p
                         AND o.owner_member IS NOT NULL) THEN
            RAISE EXCEPTION 'partition % of topic "%" is assigned to a member of group "%"', p, topic, group_name
                USING ERRCODE = '55006',
                      HINT = 'Let the members leave first, or pass force => true (their uncommitted progress is then discarded).';
        END IF;
        pos := CASE
                 WHEN target = 'earliest' THEN @extschema@.log_start_offset(topic, p)
                 WHEN target = 'latest' THEN @extschema@.last_stable_offset(topic, p)
                 WHEN ts IS NOT NULL THEN @extschema@.offset_for_time(topic, p, ts)
                 ELSE target::bigint END;
        IF pos > @extschema@.high_watermark(topic, p) THEN
            RAISE EXCEPTION 'offset % is beyond the high watermark of partition % of topic "%"', pos, p, topic
                USING ERRCODE = '22003';
        END IF;
        PERFORM @extschema@._set_position(tid, group_name, p, pos);
        -- A member's fetch position must not undo the seek at its commit.
        UPDATE @extschema@.group_offsets o SET fetch_offset = NULL, generation = o.generation + 1
         WHERE o.topic_id = tid AND o.group_name = _seek.group_name AND o.partition = p
           AND o.owner_member IS NOT NULL;
        r.partition := p;
        r.offset_id := pos;
        RETURN NEXT r;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._seek(text, text, text, integer, boolean) IS
'internal: the body of eventlog.seek, run as the extension owner on behalf of the caller eventlog.seek notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._seek(text, text, text, integer, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.seek(topic text, group_name text, target text,
                                 partition integer DEFAULT NULL, force boolean DEFAULT false)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.seek(text, text, text, integer, boolean) IS
'moves a group''s positions (one partition or all; returns each partition and its new next offset) to earliest, latest (the last stable offset), an offset or the first offset at or after a timestamp; refuses partitions a transaction of the group holds or a member owns, unless force';

CREATE FUNCTION @extschema@._delete_group(topic text, group_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'consume');
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    IF NOT EXISTS (SELECT FROM @extschema@.group_offsets o
                    WHERE o.topic_id = tid AND o.group_name = _delete_group.group_name)
       AND NOT EXISTS (SELECT FROM @extschema@.group_catalog g
                        WHERE g.topic_id = tid AND g.group_name = _delete_group.group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" does not exist', group_name, topic
            USING ERRCODE = '42704';
    END IF;
    DELETE FROM @extschema@.group_offsets o WHERE o.topic_id = tid AND o.group_name = _delete_group.group_name;
    DELETE FROM @extschema@.group_members m WHERE m.topic_id = tid AND m.group_name = _delete_group.group_name;
    DELETE FROM @extschema@.group_catalog g WHERE g.topic_id = tid AND g.group_name = _delete_group.group_name;
END
$$;
COMMENT ON FUNCTION @extschema@._delete_group(text, text) IS
'internal: the body of eventlog.delete_group, run as the extension owner on behalf of the caller eventlog.delete_group notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._delete_group(text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.delete_group(topic text, group_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.delete_group(text, text) IS
'forgets a consumer group of a topic: its settings and positions';

CREATE FUNCTION @extschema@._leave(topic text, group_name text, member text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'consume');
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    PERFORM @extschema@._xact_lock(3, @extschema@._group_lock_key(tid, group_name, -1));
    DELETE FROM @extschema@.group_members gm
     WHERE gm.topic_id = tid AND gm.group_name = _leave.group_name AND gm.member = _leave.member;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'member "%" is not in group "%" of topic "%"', member, group_name, topic
            USING ERRCODE = '42704';
    END IF;
    -- Hand its partitions over at once.
    PERFORM @extschema@._rebalance(tid, topic, group_name);
END
$$;
COMMENT ON FUNCTION @extschema@._leave(text, text, text) IS
'internal: the body of eventlog.leave, run as the extension owner on behalf of the caller eventlog.leave notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._leave(text, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.leave(topic text, group_name text, member text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.leave(text, text, text) IS
'a member leaves its group: its partitions go to the other members at once (uncommitted progress is redelivered)';

CREATE OR REPLACE VIEW @extschema@.topics AS
    SELECT t.name AS topic, t.partitions, t.retention, t.retention_bytes,
           t.segment_interval, t.segment_bytes,
           coalesce(sum(p.records), 0)::bigint AS records,
           coalesce(sum(p.bytes), 0)::bigint AS bytes,
           t.created_at, t.owner
      FROM @extschema@.topic_catalog t
      LEFT JOIN @extschema@.partitions p ON p.topic = t.name
     GROUP BY t.topic_id;
COMMENT ON VIEW @extschema@.topics IS
'one row per topic: its settings, the records (offsets) and bytes it holds, and its owner';

CREATE VIEW @extschema@.topic_privileges AS
    SELECT t.name AS topic, g.grantee, g.privilege
      FROM @extschema@.topic_catalog t,
           LATERAL (SELECT t.owner, 'owner'
                    UNION ALL
                    SELECT r, 'produce' FROM pg_catalog.unnest(t.producers) r
                    UNION ALL
                    SELECT r, 'consume' FROM pg_catalog.unnest(t.consumers) r) AS g(grantee, privilege);
COMMENT ON VIEW @extschema@.topic_privileges IS
'who owns each topic, and who was granted produce or consume on it (grantee "-" is PUBLIC)';

GRANT SELECT ON @extschema@.topics, @extschema@.partitions, @extschema@.consumer_groups,
                @extschema@.maintenance, @extschema@.topic_privileges TO PUBLIC;


-- A member consumer restarted under the same name (a new session) gets
-- again what the old session polled but did not commit (before, it went on
-- from the old session's fetch position and skipped those records).
ALTER TABLE @extschema@.group_members ADD COLUMN session text;
CREATE OR REPLACE FUNCTION @extschema@._poll_member(tid integer, topic text, group_name text, member text,
                                         max_records integer, session_timeout interval)
RETURNS SETOF @extschema@.record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    o record;
    pos bigint;
    stable bigint;
    remaining integer := max_records;
    got integer;
    last_offset bigint;
    g record;
    r @extschema@.record;
    this_session text := @extschema@._session_id();
    old_session text;
    known boolean;
BEGIN
    IF member = '' OR length(member) > 200 THEN
        RAISE EXCEPTION 'invalid member name "%"', left(member, 210)
            USING ERRCODE = '22023', DETAIL = 'A member name is 1 to 200 characters.';
    END IF;
    IF session_timeout IS NULL OR session_timeout <= interval '0' THEN
        RAISE EXCEPTION 'session_timeout must be a positive interval' USING ERRCODE = '22023';
    END IF;
    -- Membership changes of a group are serialised (briefly).
    PERFORM @extschema@._xact_lock(3, @extschema@._group_lock_key(tid, group_name, -1));
    SELECT gm.session INTO old_session FROM @extschema@.group_members gm
     WHERE gm.topic_id = tid AND gm.group_name = _poll_member.group_name
       AND gm.member = _poll_member.member;
    known := FOUND;
    INSERT INTO @extschema@.group_members AS gm (topic_id, group_name, member, session_timeout, session)
    VALUES (tid, group_name, member, session_timeout, this_session)
    ON CONFLICT ON CONSTRAINT group_members_pkey DO UPDATE
       SET last_heartbeat = pg_catalog.now(), session_timeout = excluded.session_timeout,
           session = excluded.session;
    -- A known member polling from another session is a restarted consumer
    -- (or a pooled connection): what it polled before and did not commit
    -- comes again, from the committed position.  Else those records would
    -- be skipped, breaking at least once.
    IF known AND old_session IS DISTINCT FROM this_session THEN
        UPDATE @extschema@.group_offsets go SET fetch_offset = NULL
         WHERE go.topic_id = tid AND go.group_name = _poll_member.group_name
           AND go.owner_member = _poll_member.member AND go.fetch_offset IS NOT NULL;
    END IF;
    PERFORM @extschema@._rebalance(tid, topic, group_name);
    SELECT c.auto_reset INTO g FROM @extschema@.group_catalog c
     WHERE c.topic_id = tid AND c.group_name = _poll_member.group_name;

    FOR o IN SELECT go.partition, coalesce(go.fetch_offset, go.next_offset) AS pos
               FROM @extschema@.group_offsets go
              WHERE go.topic_id = tid AND go.group_name = _poll_member.group_name
                AND go.owner_member = _poll_member.member
              ORDER BY go.partition
    LOOP
        EXIT WHEN remaining <= 0;
        stable := @extschema@.last_stable_offset(topic, o.partition);
        pos := @extschema@._checked_position(topic, group_name, o.partition, o.pos,
                                             stable, g.auto_reset);
        got := 0;
        last_offset := NULL;
        FOR r IN SELECT * FROM @extschema@.read(topic, o.partition, pos, remaining) LOOP
            RETURN NEXT r;
            got := got + 1;
            last_offset := r.offset_id;
        END LOOP;
        IF got < remaining THEN
            pos := greatest(pos, coalesce(last_offset + 1, pos), stable);
        ELSE
            pos := last_offset + 1;
        END IF;
        UPDATE @extschema@.group_offsets go SET fetch_offset = pos
         WHERE go.topic_id = tid AND go.group_name = _poll_member.group_name
           AND go.partition = o.partition;
        remaining := remaining - got;
    END LOOP;
END
$$;

CREATE FUNCTION @extschema@._xact_lock(kind integer, key bigint, shared boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'el_xact_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._xact_lock(integer, bigint, boolean) IS
'internal: waits for one of pg_eventlog''s own locks, held to the end of the transaction';

CREATE FUNCTION @extschema@._try_xact_lock(kind integer, key bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_xact_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_xact_lock(integer, bigint) IS
'internal: takes one of pg_eventlog''s own locks if it is free, held to the end of the transaction';

CREATE OR REPLACE FUNCTION @extschema@._maintain_topic(topic_id integer)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r @extschema@.maintenance_action;
    t @extschema@.topic_catalog;
    p integer;
    rt record;
    seg record;
    nxt bigint;
    part_bytes bigint;
    seg_bytes bigint;
    newest timestamptz;
    oldest timestamptz;
    stable bigint;
    spare name;
BEGIN
    SELECT * INTO t FROM @extschema@.topic_catalog c WHERE c.topic_id = _maintain_topic.topic_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- One round per topic at a time (the worker and enforce_retention may
    -- meet): a round that finds another in progress leaves it the work.
    IF NOT @extschema@._try_xact_lock(2, t.topic_id) THEN
        RETURN;
    END IF;
    r.topic := t.name;
    FOR p IN 0 .. t.partitions - 1 LOOP
        r.partition := p;
        -- Ordered with counter recovery (el_recover_next_offset): from the
        -- routing read until the base offset is recorded and committed.
        PERFORM @extschema@._xact_lock(1, (t.topic_id::bigint << 32) | p);
        SELECT * INTO rt FROM @extschema@._partition_routing(t.name, p);

        -- 1. The active segment's base offset, once known, is recorded.
        UPDATE @extschema@.segment_catalog s SET base_offset = rt.active_base
         WHERE s.topic_id = t.topic_id AND s.partition = p
           AND s.segment_no = rt.active_segment AND s.base_offset IS NULL;
        IF FOUND THEN
            UPDATE @extschema@.partition_catalog pc
               SET offset_floor = greatest(pc.offset_floor, rt.active_base)
             WHERE pc.topic_id = t.topic_id AND pc.partition = p;
        END IF;

        -- 2. Retention, oldest sealed segment first.
        SELECT coalesce(sum(pg_catalog.pg_total_relation_size(
                   pg_catalog.to_regclass(format('@extschema@.%I', s.table_name)))), 0)
          INTO part_bytes
          FROM @extschema@.segment_catalog s
         WHERE s.topic_id = t.topic_id AND s.partition = p;
        stable := @extschema@.last_stable_offset(t.name, p);
        FOR seg IN SELECT s.segment_no, s.base_offset, s.table_name
                     FROM @extschema@.segment_catalog s
                    WHERE s.topic_id = t.topic_id AND s.partition = p
                      AND s.segment_no < rt.active_segment
                    ORDER BY s.segment_no
        LOOP
            SELECT s.base_offset INTO nxt FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p AND s.segment_no > seg.segment_no
             ORDER BY s.segment_no LIMIT 1;
            -- Every offset of the segment must be stable: none in flight.
            EXIT WHEN nxt IS NULL OR nxt > stable;
            EXECUTE format('SELECT append_time FROM @extschema@.%I ORDER BY offset_id DESC LIMIT 1',
                           seg.table_name) INTO newest;
            EXIT WHEN NOT (
                (t.retention IS NOT NULL AND (newest IS NULL OR newest < pg_catalog.now() - t.retention))
                OR (t.retention_bytes IS NOT NULL AND part_bytes > t.retention_bytes));
            -- Never queue behind a reader or a writer: skip till next round.
            BEGIN
                EXECUTE format('LOCK TABLE @extschema@.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                               seg.table_name);
            EXCEPTION WHEN lock_not_available THEN
                r.action := 'skipped (busy)';
                r.segment := seg.table_name;
                r.first_offset := seg.base_offset;
                r.next_offset := nxt;
                r.bytes := NULL;
                RETURN NEXT r;
                EXIT;
            END;
            seg_bytes := pg_catalog.pg_total_relation_size(format('@extschema@.%I', seg.table_name)::regclass);
            -- CASCADE: see _drop_topic.
            EXECUTE format('DROP TABLE @extschema@.%I CASCADE', seg.table_name);
            DELETE FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p AND s.segment_no = seg.segment_no;
            UPDATE @extschema@.partition_catalog pc
               SET log_start_offset = greatest(pc.log_start_offset, nxt),
                   offset_floor = greatest(pc.offset_floor, nxt)
             WHERE pc.topic_id = t.topic_id AND pc.partition = p;
            part_bytes := part_bytes - seg_bytes;
            r.action := 'removed';
            r.segment := seg.table_name;
            r.first_offset := seg.base_offset;
            r.next_offset := nxt;
            r.bytes := seg_bytes;
            RETURN NEXT r;
        END LOOP;

        -- 3. Roll the active segment when due (never an empty one, and only
        --    once its base offset is recorded).
        SELECT s.table_name INTO seg FROM @extschema@.segment_catalog s
         WHERE s.topic_id = t.topic_id AND s.partition = p
           AND s.segment_no = rt.active_segment AND s.base_offset IS NOT NULL;
        CONTINUE WHEN NOT FOUND;
        EXECUTE format('SELECT a.append_time, b.append_time FROM '
                       '(SELECT append_time FROM @extschema@.%1$I ORDER BY offset_id LIMIT 1) a, '
                       '(SELECT append_time FROM @extschema@.%1$I ORDER BY offset_id DESC LIMIT 1) b',
                       seg.table_name) INTO oldest, newest;
        CONTINUE WHEN oldest IS NULL;
        seg_bytes := pg_catalog.pg_total_relation_size(format('@extschema@.%I', seg.table_name)::regclass);
        IF oldest < pg_catalog.now() - t.segment_interval
           OR seg_bytes >= t.segment_bytes
           OR (t.retention IS NOT NULL AND newest < pg_catalog.now() - t.retention) THEN
            SELECT s.table_name INTO spare FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p
               AND s.segment_no = rt.active_segment + 1;
            IF NOT FOUND THEN
                spare := @extschema@._create_segment(t.topic_id, p, rt.active_segment + 1, NULL);
            END IF;
            PERFORM @extschema@._activate_segment_at_commit(t.topic_id, p, rt.active_segment + 1);
            r.action := 'rolled';
            r.segment := spare;
            r.first_offset := NULL;
            r.next_offset := NULL;
            r.bytes := seg_bytes;
            RETURN NEXT r;
        END IF;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._partition_info(
    OUT topic text, OUT partition integer,
    OUT log_start_offset bigint, OUT high_watermark bigint,
    OUT last_stable_offset bigint, OUT stable_offset_holder_pid integer,
    OUT records bigint, OUT bytes bigint, OUT segments integer,
    OUT oldest_append_time timestamptz, OUT newest_append_time timestamptz)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
-- The views are public metadata, as pg_class is; segment tables are not.
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p record;
    seg record;
BEGIN
    FOR p IN SELECT t.name, t.topic_id, pc.partition, pc.log_start_offset AS start
               FROM @extschema@.topic_catalog t
               JOIN @extschema@.partition_catalog pc USING (topic_id)
              ORDER BY t.name, pc.partition
    LOOP
        topic := p.name;
        partition := p.partition;
        log_start_offset := p.start;
        SELECT s.high_watermark, s.last_stable_offset, s.stable_offset_holder_pid
          INTO high_watermark, last_stable_offset, stable_offset_holder_pid
          FROM @extschema@._partition_state(p.name, p.partition) s;
        records := greatest(last_stable_offset - log_start_offset, 0);
        bytes := 0;
        segments := 0;
        oldest_append_time := NULL;
        newest_append_time := NULL;
        -- Retention may drop a segment while we look: skip it then.
        FOR seg IN SELECT s.table_name FROM @extschema@.segment_catalog s
                    WHERE s.topic_id = p.topic_id AND s.partition = p.partition
                    ORDER BY s.segment_no
        LOOP
            BEGIN
                bytes := bytes + coalesce(pg_total_relation_size(
                    format('@extschema@.%I', seg.table_name)::regclass), 0);
                segments := segments + 1;
                IF oldest_append_time IS NULL THEN
                    EXECUTE format('SELECT append_time FROM @extschema@.%I WHERE offset_id >= $1 AND offset_id < $2 ORDER BY offset_id LIMIT 1',
                                   seg.table_name)
                       INTO oldest_append_time USING log_start_offset, last_stable_offset;
                END IF;
            EXCEPTION WHEN undefined_table THEN
                NULL;
            END;
        END LOOP;
        FOR seg IN SELECT s.table_name FROM @extschema@.segment_catalog s
                    WHERE s.topic_id = p.topic_id AND s.partition = p.partition
                    ORDER BY s.segment_no DESC
        LOOP
            BEGIN
                EXECUTE format('SELECT append_time FROM @extschema@.%I WHERE offset_id < $1 ORDER BY offset_id DESC LIMIT 1',
                               seg.table_name)
                   INTO newest_append_time USING last_stable_offset;
            EXCEPTION WHEN undefined_table THEN
                NULL;
            END;
            EXIT WHEN newest_append_time IS NOT NULL;
        END LOOP;
        RETURN NEXT;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._consumer_group_info(
    OUT group_name text, OUT topic text, OUT partition integer,
    OUT committed_offset bigint, OUT high_watermark bigint, OUT last_stable_offset bigint,
    OUT lag bigint, OUT lag_time interval, OUT last_commit timestamptz, OUT lost_records boolean,
    OUT owner_member text, OUT generation bigint)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
-- The views are public metadata, as pg_class is; segment tables are not.
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    o record;
    oldest timestamptz;
    start_offset bigint;
BEGIN
    FOR o IN SELECT go.group_name, t.name, go.partition, go.next_offset, go.committed_at,
                    go.owner_member, go.generation
               FROM @extschema@.group_offsets go
               JOIN @extschema@.topic_catalog t USING (topic_id)
              ORDER BY 1, 2, 3
    LOOP
        group_name := o.group_name;
        topic := o.name;
        partition := o.partition;
        committed_offset := o.next_offset;
        last_commit := o.committed_at;
        owner_member := o.owner_member;
        generation := o.generation;
        SELECT s.high_watermark, s.last_stable_offset INTO high_watermark, last_stable_offset
          FROM @extschema@._partition_state(o.name, o.partition) s;
        start_offset := @extschema@.log_start_offset(o.name, o.partition);
        lost_records := o.next_offset < start_offset;
        -- Lag counts offsets the group has not consumed below the stable
        -- offset (aborted gaps included); lag_time is the age of the
        -- oldest unread record.
        lag := greatest(last_stable_offset - greatest(o.next_offset, start_offset), 0);
        oldest := NULL;
        IF lag > 0 THEN
            BEGIN
                SELECT r.append_time INTO oldest
                  FROM @extschema@.read(o.name, o.partition, greatest(o.next_offset, start_offset), 1) r;
            EXCEPTION WHEN numeric_value_out_of_range OR insufficient_privilege THEN
                oldest := NULL;
            END;
        END IF;
        lag_time := CASE WHEN oldest IS NULL THEN interval '0' ELSE pg_catalog.now() - oldest END;
        RETURN NEXT;
    END LOOP;
END
$$;

/* ------------------------------------------------------------------------
 * Internal functions that change state, or take pg_eventlog's locks, run
 * only inside the SECURITY DEFINER bodies and the background workers:
 * PUBLIC may not call them (a role could otherwise point a partition at a
 * missing segment, free a topic's shared memory, or hold a group's lock).
 * test/pgtap/api.sql pins the internal functions PUBLIC may call.
 * ------------------------------------------------------------------------ */
REVOKE ALL ON FUNCTION
    @extschema@._activate_segment_at_commit(integer, integer, integer),
    @extschema@._add_partitions(integer, integer, integer),
    @extschema@._checked_position(text, text, integer, bigint, bigint, text),
    @extschema@._create_segment(integer, integer, integer, bigint),
    @extschema@._forget_topic(integer),
    @extschema@._group_lock_key(integer, text, integer),
    @extschema@._group_position(integer, text, text, integer, text),
    @extschema@._maintain_topic(integer),
    @extschema@._partition_routing(text, integer),
    @extschema@._poll_member(integer, text, text, text, integer, interval),
    @extschema@._rebalance(integer, text, text),
    @extschema@._set_position(integer, text, integer, bigint, text),
    @extschema@._try_xact_lock(integer, bigint),
    @extschema@._xact_lock(integer, bigint, boolean)
  FROM PUBLIC;
