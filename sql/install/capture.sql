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

CREATE FUNCTION @extschema@._capture_check_keys(source regclass, key_columns text[])
RETURNS void
AS 'MODULE_PATHNAME', 'el_capture_check_keys'
LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION @extschema@._capture_check_keys(regclass, text[]) IS
'internal: refuses key columns whose equal values change capture cannot write as one canonical key (nondeterministic collations, types without a canonical form); see docs/capture.md';

CREATE FUNCTION @extschema@._capture_truncate()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'cannot truncate captured table %', TG_RELID::regclass
        USING ERRCODE = 'feature_not_supported',
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
        RAISE EXCEPTION 'source must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_topic_name(topic);
    IF snapshot IS NULL THEN
        RAISE EXCEPTION 'snapshot must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT c.relkind, c.relnamespace::regnamespace AS nsp INTO rel FROM pg_class c WHERE c.oid = source;
    IF rel.relkind <> 'r' THEN
        RAISE EXCEPTION '"%" is not a table', source USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only ordinary tables can be captured (not views, foreign or partitioned tables).',
            HINT = 'Capture each partition of a partitioned table.';
    END IF;
    IF rel.nsp = '@extschema@'::regnamespace OR rel.nsp = 'eventlog_segments'::regnamespace THEN
        RAISE EXCEPTION 'cannot capture "%", a table of the event log itself', source USING ERRCODE = 'wrong_object_type';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.captures c WHERE c.source = capture.source) THEN
        RAISE EXCEPTION 'table % is already captured', source USING ERRCODE = 'duplicate_object',
            HINT = 'See eventlog.captures; run eventlog.uncapture() first to change the topic or key.';
    END IF;
    IF snapshot AND pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'capture with snapshot needs READ COMMITTED' USING ERRCODE = 'feature_not_supported',
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
            RAISE EXCEPTION 'table % has no primary key', source USING ERRCODE = 'object_not_in_prerequisite_state',
                DETAIL = 'Changes are keyed by the row''s key, so that all changes of a row stay in order in one partition.',
                HINT = 'Add a primary key, or name the key columns with key_columns => ARRAY[...].';
        END IF;
    END IF;
    IF pg_catalog.cardinality(keys) = 0 THEN
        RAISE EXCEPTION 'key_columns must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOREACH k IN ARRAY keys LOOP
        IF k IS NULL OR NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = source
                                       AND a.attname = k AND a.attnum > 0 AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'column "%" of table % does not exist', k, source USING ERRCODE = 'undefined_column';
        END IF;
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM pg_catalog.unnest(keys) x) <> pg_catalog.cardinality(keys) THEN
        RAISE EXCEPTION 'key_columns must not repeat a column' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.topic_catalog t
                WHERE t.name = topic AND t.format = 'binary') THEN
        RAISE EXCEPTION 'topic "%" holds binary records', topic USING ERRCODE = '42809',
            DETAIL = 'Change capture writes JSON change envelopes.',
            HINT = 'Capture into a topic created with format ''json''.';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = topic) THEN
        PERFORM @extschema@.create_topic(topic, partitions);
    END IF;
    -- Keep writers out from here to commit: the trigger and the snapshot
    -- then meet exactly (CREATE TRIGGER takes the same lock).
    EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', source);
    -- One key value (under the type's equality) must be one key text, so
    -- one partition: refuse the keys for which that cannot be promised.
    -- Checked under the lock, which ALTER TABLE conflicts with: a key
    -- column's type changed while this waited for it is seen (an error
    -- rolls back the topic created above).
    PERFORM @extschema@._capture_check_keys(source, keys);
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
        RAISE EXCEPTION 'source must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.captures c WHERE c.source = uncapture.source) THEN
        RAISE EXCEPTION 'table % is not captured', source USING ERRCODE = 'undefined_object',
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
            USING ERRCODE = 'not_null_violation';
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
        RAISE EXCEPTION 'source and keep_rows must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF (SELECT relkind FROM pg_class WHERE oid = source) <> 'r' THEN
        RAISE EXCEPTION '"%" is not a table', source USING ERRCODE = 'wrong_object_type';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.outboxes o WHERE o.source = route_outbox.source) THEN
        RAISE EXCEPTION 'table % is already an outbox', source USING ERRCODE = 'duplicate_object',
            HINT = 'See eventlog.outboxes; run eventlog.unroute_outbox() first to change it.';
    END IF;
    FOREACH c IN ARRAY ARRAY[topic_column, key_column, value_column] LOOP
        IF c IS NULL OR NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = source
                                       AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'column "%" of table % does not exist', c, source USING ERRCODE = 'undefined_column',
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
        RAISE EXCEPTION 'source must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.outboxes o WHERE o.source = unroute_outbox.source) THEN
        RAISE EXCEPTION 'table % is not an outbox', source USING ERRCODE = 'undefined_object';
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
    keyset text;
    keymatch text;
    kc record;
    ty oid;
    eqop text;
    kimg jsonb;
BEGIN
    IF target IS NULL THEN
        RAISE EXCEPTION 'target must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF (SELECT relkind FROM pg_class WHERE oid = target) NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', target USING ERRCODE = 'wrong_object_type';
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
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'A change has a JSON object key and a value with "op" c, r, u or d.';
        END IF;
        SELECT pg_catalog.string_agg(pg_catalog.quote_ident(k), ', ') INTO keycols
          FROM pg_catalog.jsonb_object_keys(r.key::jsonb) k;
        IF op = 'd' THEN
            IF keyset IS DISTINCT FROM keycols THEN
                -- Match each key column with its type's own equality (its
                -- default btree operator class's), schema-qualified: under
                -- this function's search_path a bare "=" between values of
                -- an extension's type (citext) would resolve to text's, and
                -- a key that the capture wrote in lower case would not find
                -- its row.
                keymatch := NULL;
                FOR kc IN SELECT x.k, a.atttypid
                            FROM pg_catalog.jsonb_object_keys(r.key::jsonb) x(k)
                            LEFT JOIN pg_attribute a ON a.attrelid = target AND a.attname = x.k
                                                    AND a.attnum > 0 AND NOT a.attisdropped LOOP
                    ty := kc.atttypid;
                    WHILE (SELECT t.typtype = 'd' FROM pg_type t WHERE t.oid = ty) LOOP
                        SELECT t.typbasetype INTO ty FROM pg_type t WHERE t.oid = ty;
                    END LOOP;
                    SELECT pg_catalog.format('%I.%s', ns.nspname, o.oprname) INTO eqop
                      FROM pg_opclass c
                      JOIN pg_am am ON am.oid = c.opcmethod AND am.amname = 'btree'
                      JOIN pg_amop m ON m.amopfamily = c.opcfamily AND m.amopstrategy = 3
                                    AND m.amoplefttype = c.opcintype AND m.amoprighttype = c.opcintype
                      JOIN pg_operator o ON o.oid = m.amopopr
                      JOIN pg_namespace ns ON ns.oid = o.oprnamespace
                     WHERE c.opcdefault AND c.opcintype = ty;
                    keymatch := pg_catalog.concat_ws(' AND ', keymatch,
                        pg_catalog.format('t.%1$I OPERATOR(%2$s) k.%1$I', kc.k, coalesce(eqop, 'pg_catalog.=')));
                END LOOP;
                keyset := keycols;
            END IF;
            -- The deleted row's own key values (its "before" image), not
            -- the key's canonical text: a mirror whose key column is of
            -- another type (text for a citext source) must find 'Bob', not
            -- 'bob'.
            kimg := r.key::jsonb;
            IF pg_catalog.jsonb_typeof(r.value -> 'before') = 'object' THEN
                SELECT pg_catalog.jsonb_object_agg(x.k, coalesce(r.value -> 'before' -> x.k, kimg -> x.k))
                  INTO kimg
                  FROM pg_catalog.jsonb_object_keys(kimg) x(k);
            END IF;
            EXECUTE pg_catalog.format('DELETE FROM %1$s t USING pg_catalog.jsonb_populate_record(NULL::%1$s, $1) k WHERE %2$s',
                                      target, keymatch)
              USING kimg;
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
