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
CREATE FUNCTION @extschema@.poll(topic text, group_name text, max_records integer DEFAULT 500,
                                 partitions integer DEFAULT 1, member text DEFAULT NULL,
                                 session_timeout interval DEFAULT '30 seconds',
                                 wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._topic_id(topic);
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
             WHERE go.topic_id = tid AND go.group_name = poll.group_name
               AND go.owner_member = poll.member;
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
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(@extschema@._group_lock_key(tid, group_name, -1));
    IF EXISTS (SELECT FROM @extschema@.group_members gm
                WHERE gm.topic_id = tid AND gm.group_name = poll.group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" has member consumers', group_name, topic
            USING ERRCODE = '55000',
                  HINT = 'A group is consumed either by transactions or by members: pass member => to poll as one.';
    END IF;
    SELECT c.start_from, c.auto_reset INTO g FROM @extschema@.group_catalog c
     WHERE c.topic_id = tid AND c.group_name = poll.group_name;
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
                                WHERE o.topic_id = tid AND o.group_name = poll.group_name
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
                IF NOT pg_catalog.pg_try_advisory_xact_lock(
                           @extschema@._group_lock_key(tid, group_name, p)) THEN
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
COMMENT ON FUNCTION @extschema@.poll(text, text, integer, integer, text, interval, interval) IS
'without member: returns up to max_records from up to "partitions" partitions that no other open transaction of the group holds, from the group''s positions, and advances them in the caller''s transaction (roll back and the records come again); with member: heartbeats, gets the member''s assigned partitions and returns records from its fetch positions, to be committed with eventlog.commit; with wait, a long poll: when nothing is readable, sleeps until records arrive or the wait ends';

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

-- commit: a member no longer in the group is refused (55000), not silently ignored.
CREATE OR REPLACE FUNCTION @extschema@.commit(topic text, group_name text, member text,
                                   partition integer DEFAULT NULL, next_offset bigint DEFAULT NULL,
                                   generation bigint DEFAULT NULL, metadata text DEFAULT NULL)
RETURNS SETOF @extschema@.position
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._topic_id(topic);
    o record;
    pos bigint;
    res @extschema@.position;
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
    IF partition IS NOT NULL THEN
        SELECT go.partition, go.owner_member, go.generation, go.fetch_offset, go.next_offset INTO o
          FROM @extschema@.group_offsets go
         WHERE go.topic_id = tid AND go.group_name = commit.group_name AND go.partition = commit.partition
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
               metadata = coalesce(commit.metadata, go.metadata)
         WHERE go.topic_id = tid AND go.group_name = commit.group_name AND go.partition = commit.partition;
        res.partition := partition;
        res.offset_id := pos;
        RETURN NEXT res;
        RETURN;
    END IF;
    -- A member that is no longer in the group owns nothing: say so, rather
    -- than commit nothing in silence (the same fencing as for one partition).
    IF NOT EXISTS (SELECT FROM @extschema@.group_members gm
                    WHERE gm.topic_id = tid AND gm.group_name = commit.group_name
                      AND gm.member = commit.member) THEN
        RAISE EXCEPTION 'member "%" is not in group "%" of topic "%"', member, group_name, topic
            USING ERRCODE = '55000',
                  HINT = 'The member left, or missed its session timeout; poll again to rejoin the group.';
    END IF;
    -- Everything the member's last polls returned, in the partitions it owns.
    FOR o IN SELECT go.partition, go.fetch_offset FROM @extschema@.group_offsets go
              WHERE go.topic_id = tid AND go.group_name = commit.group_name
                AND go.owner_member = member AND go.fetch_offset IS NOT NULL
              ORDER BY go.partition FOR UPDATE
    LOOP
        UPDATE @extschema@.group_offsets go
           SET next_offset = o.fetch_offset, committed_at = pg_catalog.now(),
               metadata = coalesce(commit.metadata, go.metadata)
         WHERE go.topic_id = tid AND go.group_name = commit.group_name AND go.partition = o.partition;
        res.partition := o.partition;
        res.offset_id := o.fetch_offset;
        RETURN NEXT res;
    END LOOP;
END
$$;
