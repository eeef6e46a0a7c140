-- pg_eventlog 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION pg_eventlog UPDATE TO '0.3.0'" to load this file. \quit

-- Every change to sql/pg_eventlog.sql since 0.2.0 is repeated here, in the
-- order it was made (test/t/012_upgrade.pl compares the result with a
-- fresh install).

-- Issue 13: change capture keys compare by the type's equality and are
-- written canonically; capture() refuses keys that cannot be (docs/capture.md).
CREATE FUNCTION @extschema@._capture_check_keys(source regclass, key_columns text[])
RETURNS void
AS 'MODULE_PATHNAME', 'el_capture_check_keys'
LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION @extschema@._capture_check_keys(regclass, text[]) IS
'internal: refuses key columns whose equal values change capture cannot write as one canonical key (nondeterministic collations, types without a canonical form); see docs/capture.md';

CREATE OR REPLACE FUNCTION @extschema@.capture(source regclass, topic text, key_columns text[] DEFAULT NULL,
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
    -- One key value (under the type's equality) must be one key text, so
    -- one partition: refuse the keys for which that cannot be promised.
    PERFORM @extschema@._capture_check_keys(source, keys);
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
