-- pg_eventlog 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION pg_eventlog UPDATE TO '0.3.0'" to load this file. \quit

-- Every change to sql/pg_eventlog.sql since 0.2.0 is repeated here, in the
-- order it was made (test/t/012_upgrade.pl compares the result with a
-- fresh install).

-- Issue 13: change capture keys compare by the type's equality and are
-- written canonically; capture() refuses keys that cannot be, and
-- apply_changes deletes by each key type's own equality (docs/capture.md).
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
    IF rel.nsp = '@extschema@'::regnamespace OR rel.nsp = 'eventlog_segments'::regnamespace THEN
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
CREATE OR REPLACE FUNCTION @extschema@.apply_changes(topic text, group_name text, target regclass,
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
-- Issue 13, item 5: eventlog.max_partitions is checked under a lock on
-- topic_catalog, counting what is committed now.
CREATE FUNCTION @extschema@._partitions_in_use(except_topic integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_partitions_in_use'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._partitions_in_use(integer) IS
'internal: the partitions of every other topic of this database, as committed now (a fresh snapshot, not the caller''s)';
REVOKE ALL ON FUNCTION @extschema@._partitions_in_use(integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@._add_partitions(topic_id integer, first integer, last integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    total bigint;
    max_partitions integer := current_setting('eventlog.max_partitions')::integer;
BEGIN
    -- Serialise the check with every other creation or growth of a topic
    -- in this database (create_topic takes the same lock first; alter_topic
    -- holds only its topic's row lock, which this lock does not conflict
    -- with): two sessions must not each find room and together exceed the
    -- limit.  The count reads what is committed now, not the caller's
    -- snapshot, which in REPEATABLE READ predates the wait for the lock.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    total := @extschema@._partitions_in_use(_add_partitions.topic_id);
    IF total + last + 1 > max_partitions THEN
        RAISE EXCEPTION 'too many partitions'
            USING ERRCODE = '53400',
                  DETAIL = format('This database would have %s partitions; eventlog.max_partitions is %s.',
                                  total + last + 1, max_partitions),
                  HINT = 'Raise eventlog.max_partitions and restart the server, or use fewer partitions.';
    END IF;
    FOR p IN first .. last LOOP
        INSERT INTO @extschema@.partition_catalog (topic_id, partition)
        VALUES (_add_partitions.topic_id, p);
        PERFORM @extschema@._create_segment(_add_partitions.topic_id, p, 0, 0);
    END LOOP;
END
$$;

-- Issue 13, item 13: delete_group refuses while the group is consumed, and
-- a poll never brings a deleted group back.
CREATE FUNCTION @extschema@._group_exists_now(topic_id integer, group_name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_group_exists_now'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._group_exists_now(integer, text) IS
'internal: whether a consumer group has settings, positions or members, as committed now (a fresh snapshot, not the caller''s)';

/*
 * Take a group's membership lock (shared for transactional polls, exclusive
 * for members' polls), refusing to go on with a group that delete_group
 * removed while this waited: the poll would write positions for the
 * partitions it reads and bring the group back with those only (the others
 * starting over).  "Existed" is judged in the caller's snapshot, so a
 * REPEATABLE READ poll whose snapshot still shows the deleted group is
 * refused too.  A group deleted before the poll began is simply new to it.
 */
CREATE FUNCTION @extschema@._group_lock_checked(tid integer, topic text, group_name text,
                                                shared boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    existed boolean;
BEGIN
    existed := EXISTS (SELECT FROM @extschema@.group_offsets o
                        WHERE o.topic_id = tid AND o.group_name = _group_lock_checked.group_name)
            OR EXISTS (SELECT FROM @extschema@.group_catalog g
                        WHERE g.topic_id = tid AND g.group_name = _group_lock_checked.group_name)
            OR EXISTS (SELECT FROM @extschema@.group_members m
                        WHERE m.topic_id = tid AND m.group_name = _group_lock_checked.group_name);
    PERFORM @extschema@._xact_lock(3, @extschema@._group_lock_key(tid, group_name, -1), shared);
    IF existed AND NOT @extschema@._group_exists_now(tid, group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" was deleted during this poll', group_name, topic
            USING ERRCODE = '40001',
                  DETAIL = 'eventlog.delete_group committed while this poll waited for the group, or after this transaction''s snapshot was taken.',
                  HINT = 'Retry the transaction: the group then starts afresh, as a new group.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._group_lock_checked(integer, text, text, boolean) IS
'internal: takes a group''s membership lock for a poll, refusing a group deleted while the poll waited';
REVOKE ALL ON FUNCTION @extschema@._group_exists_now(integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@._group_lock_checked(integer, text, text, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@._poll(topic text, group_name text, max_records integer DEFAULT 500,
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
    -- a member cannot join while this transaction consumes the group, and
    -- delete_group refuses to delete it.
    PERFORM @extschema@._group_lock_checked(tid, topic, group_name, true);
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
    PERFORM @extschema@._group_lock_checked(tid, topic, group_name, false);
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

CREATE OR REPLACE FUNCTION @extschema@._delete_group(topic text, group_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'consume');
    n integer;
    p integer;
    live text;
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    IF NOT EXISTS (SELECT FROM @extschema@.group_offsets o
                    WHERE o.topic_id = tid AND o.group_name = _delete_group.group_name)
       AND NOT EXISTS (SELECT FROM @extschema@.group_catalog g
                        WHERE g.topic_id = tid AND g.group_name = _delete_group.group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" does not exist', group_name, topic
            USING ERRCODE = '42704';
    END IF;
    -- As Kafka refuses to delete a group that has members (GROUP_NOT_EMPTY):
    -- never wait, refuse while anyone consumes the group.  A transaction
    -- that polled it holds its membership lock (shared) and the partitions
    -- it took; a member's poll holds the membership lock; seek holds
    -- partitions.  Holding them all to the end of this transaction also
    -- keeps new polls out until the deletion is committed (they then find
    -- no group, or are refused by _group_lock_checked).
    IF NOT @extschema@._try_xact_lock(3, @extschema@._group_lock_key(tid, group_name, -1)) THEN
        RAISE EXCEPTION 'group "%" of topic "%" is being consumed', group_name, topic
            USING ERRCODE = '55006',
                  DETAIL = 'A transaction that polled the group, or a member''s poll or commit, is still open.',
                  HINT = 'Retry when the group''s consumers have committed or rolled back.';
    END IF;
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = tid;
    FOR p IN 0 .. n - 1 LOOP
        IF NOT @extschema@._try_xact_lock(3, @extschema@._group_lock_key(tid, group_name, p)) THEN
            RAISE EXCEPTION 'group "%" of topic "%" is being consumed', group_name, topic
                USING ERRCODE = '55006',
                      DETAIL = format('An open transaction holds partition %s for the group (a poll or a seek).', p),
                      HINT = 'Retry when the group''s consumers have committed or rolled back.';
        END IF;
    END LOOP;
    -- Members that still heartbeat own partitions and would rejoin at their
    -- next poll: they must leave first.  Expired members go with the group.
    SELECT m.member INTO live FROM @extschema@.group_members m
     WHERE m.topic_id = tid AND m.group_name = _delete_group.group_name
       AND m.last_heartbeat + m.session_timeout > pg_catalog.now()
     ORDER BY m.member LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'group "%" of topic "%" has live members', group_name, topic
            USING ERRCODE = '55006',
                  DETAIL = format('Member %s, among others perhaps, is still in the group.', pg_catalog.quote_literal(live)),
                  HINT = 'Have the members call eventlog.leave(), or wait until they miss their session timeout.';
    END IF;
    DELETE FROM @extschema@.group_offsets o WHERE o.topic_id = tid AND o.group_name = _delete_group.group_name;
    DELETE FROM @extschema@.group_members m WHERE m.topic_id = tid AND m.group_name = _delete_group.group_name;
    DELETE FROM @extschema@.group_catalog g WHERE g.topic_id = tid AND g.group_name = _delete_group.group_name;
END
$$;

COMMENT ON FUNCTION @extschema@.delete_group(text, text) IS
'forgets a consumer group of a topic: its settings and positions; refused (55006) while a transaction that polled the group is open or a member is live';

-- alter_topic takes topic_catalog's lock before its topic's row when it may
-- grow the topic (no deadlock with a transaction that changed topic_catalog).
CREATE OR REPLACE FUNCTION @extschema@._alter_topic(
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
    -- Growth checks eventlog.max_partitions under topic_catalog's SHARE ROW
    -- EXCLUSIVE lock (_add_partitions): take it before the topic's row lock,
    -- as create_topic does.  Waiting for it while holding the row would
    -- deadlock with a transaction that changed topic_catalog (an alter_topic,
    -- drop_topic or grant) and then alters this topic.  Only for the
    -- topic's owner: no one else may hold up topic DDL with it.
    IF partitions IS NOT NULL THEN
        IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _alter_topic.topic) THEN
            PERFORM @extschema@._authorize(topic, 'owner');
        END IF;
        LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    END IF;
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

-- A member's commit of an explicit offset takes the group's membership lock
-- too, so that delete_group refuses instead of waiting for its rows.
CREATE OR REPLACE FUNCTION @extschema@._commit(topic text, group_name text, member text,
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
    -- The group's membership lock, shared: it waits for member polls in
    -- progress (they hold it exclusively), and keeps delete_group away while
    -- this transaction holds the group's rows (it refuses instead of waiting
    -- for them, and deadlocking with this member's next poll).
    PERFORM @extschema@._xact_lock(3, @extschema@._group_lock_key(tid, group_name, -1), true);
    -- Committing "what the polls returned" is only safe in the session that
    -- polled: a member restarted in another session got those records again
    -- (_poll_member), and the fetch positions are now its.
    IF next_offset IS NULL THEN
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
-- eventlog.maintenance shows each worker's status and the notifier's PID,
-- and only the current database to roles without pg_read_all_stats (issue
-- 13, items 8 and 17): new OUT columns need the function and view made anew.
DROP VIEW @extschema@.maintenance;
DROP FUNCTION @extschema@._maintenance_status();
CREATE FUNCTION @extschema@._maintenance_status(
    OUT database text, OUT pid integer, OUT rounds bigint,
    OUT last_run timestamptz, OUT last_success timestamptz,
    OUT segments_rolled bigint, OUT segments_removed bigint,
    OUT last_error text, OUT last_error_time timestamptz,
    OUT notifier_pid integer, OUT worker_status text, OUT notifier_status text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'el_maintenance_status'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@._maintenance_status() IS
'internal: the rows of the eventlog.maintenance view';

CREATE VIEW @extschema@.maintenance AS
    SELECT * FROM @extschema@._maintenance_status();
COMMENT ON VIEW @extschema@.maintenance IS
'one row per database pg_eventlog maintains (only the current database for roles that are neither superuser nor members of pg_read_all_stats): its maintenance worker''s PID (NULL if not running), rounds run, last run and last success, segments rolled and removed since the worker started, the last error, its notifier''s PID, and whether each worker runs or why not';
GRANT SELECT ON @extschema@.maintenance TO PUBLIC;
-- Issue 13, items 3 and 4: segment tables move to a schema of their own
-- that no other role may use (a role that can name a segment can create a
-- view over it and hold a lock retention's DROP waits for); retention
-- waits for objects depending on a segment only briefly; the monitoring
-- views neither wait for nor keep locks on segments.
/*
 * Segment tables live in a schema of their own that no other role may use
 * (USAGE is not granted, not even to PUBLIC).  Without USAGE a role cannot
 * name a segment table: it cannot read it, LOCK it, or create a view, a
 * function or a type over it, which would let it hold a lock that
 * retention's DROP must wait for.  Consumers read through eventlog.read and
 * eventlog.poll.  The schema is a member of the extension, so
 * DROP EXTENSION drops it and pg_dump leaves it to CREATE EXTENSION.
 */
CREATE SCHEMA eventlog_segments;
REVOKE ALL ON SCHEMA eventlog_segments FROM PUBLIC;
COMMENT ON SCHEMA eventlog_segments IS
'pg_eventlog segment tables (see eventlog.segment_catalog); no role but the extension owner may use this schema';

-- Move every segment.  Objects other roles made over them (views, types)
-- follow the tables, which they reference by OID: retention's DROP ...
-- CASCADE still drops them, waiting for their locks only briefly.
DO $move$
DECLARE
    seg record;
BEGIN
    FOR seg IN SELECT s.table_name
                 FROM @extschema@.segment_catalog s
                 JOIN pg_catalog.pg_class c ON c.relname OPERATOR(pg_catalog.=) s.table_name
                WHERE c.relnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace
                ORDER BY s.topic_id, s.partition, s.segment_no
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE @extschema@.%I SET SCHEMA eventlog_segments',
                                  seg.table_name);
    END LOOP;
END
$move$;

COMMENT ON TABLE @extschema@.segment_catalog IS
'pg_eventlog segments: the tables (in schema eventlog_segments) holding each partition''s records, from base_offset on (NULL: a spare not yet active, or just activated and not recorded yet)';

CREATE OR REPLACE FUNCTION @extschema@._create_segment(topic_id integer, partition integer,
                                            segment_no integer, base_offset bigint)
RETURNS name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tbl name := format('seg_%s_%s_%s', topic_id, partition, segment_no);
    topic_name text;
BEGIN
    SELECT t.name INTO topic_name
      FROM @extschema@.topic_catalog t WHERE t.topic_id = _create_segment.topic_id;
    EXECUTE format(
        'CREATE TABLE eventlog_segments.%I ('
        '    offset_id bigint NOT NULL,'
        '    key text,'
        '    value jsonb,'
        '    headers jsonb,'
        '    event_time timestamptz NOT NULL,'
        '    append_time timestamptz NOT NULL,'
        '    CONSTRAINT %I PRIMARY KEY (offset_id)'
        ') USING heap', tbl, tbl || '_pkey');
    EXECUTE format(
        'CREATE TRIGGER segment_guard BEFORE INSERT OR UPDATE OR DELETE'
        ' ON eventlog_segments.%I FOR EACH ROW'
        ' EXECUTE FUNCTION @extschema@._segment_guard()', tbl);
    EXECUTE format(
        'CREATE TRIGGER segment_guard_truncate BEFORE TRUNCATE'
        ' ON eventlog_segments.%I FOR EACH STATEMENT'
        ' EXECUTE FUNCTION @extschema@._segment_guard()', tbl);
    -- ALWAYS: the guard also fires under session_replication_role = replica,
    -- that is in logical replication apply workers.
    EXECUTE format(
        'ALTER TABLE eventlog_segments.%I ENABLE ALWAYS TRIGGER segment_guard,'
        ' ENABLE ALWAYS TRIGGER segment_guard_truncate', tbl);
    EXECUTE format('COMMENT ON TABLE eventlog_segments.%I IS %L', tbl,
        format('pg_eventlog records of topic %s, partition %s, segment %s (read-only: write with eventlog.produce)',
               topic_name, partition, segment_no));
    INSERT INTO @extschema@.segment_catalog (topic_id, partition, segment_no, base_offset, table_name)
    VALUES (_create_segment.topic_id, _create_segment.partition,
            _create_segment.segment_no, _create_segment.base_offset, tbl);
    RETURN tbl;
END
$$;
COMMENT ON FUNCTION @extschema@._create_segment(integer, integer, integer, bigint) IS
'internal: creates a segment table for a partition and records it in segment_catalog';

CREATE OR REPLACE FUNCTION @extschema@._drop_topic(topic text, if_exists boolean DEFAULT false)
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
        -- CASCADE: objects made to depend on a segment (a view by the
        -- extension owner, a regclass constant by anyone) go with it.
        EXECUTE format('DROP TABLE IF EXISTS eventlog_segments.%I CASCADE', seg.table_name);
    END LOOP;
    DELETE FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id;
    PERFORM @extschema@._forget_topic(old_id);
END
$$;
COMMENT ON FUNCTION @extschema@._drop_topic(text, boolean) IS
'internal: the body of eventlog.drop_topic, run as the extension owner on behalf of the caller eventlog.drop_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._drop_topic(text, boolean) FROM PUBLIC;

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
    saved_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    -- The caller's lock_timeout if shorter (0 is none).
    drop_lock_timeout text := CASE
        WHEN pg_catalog.current_setting('lock_timeout')::interval > interval '0'
         AND pg_catalog.current_setting('lock_timeout')::interval < interval '50 ms'
        THEN pg_catalog.current_setting('lock_timeout') ELSE '50ms' END;
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
                   pg_catalog.to_regclass(format('eventlog_segments.%I', s.table_name)))), 0)
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
            EXECUTE format('SELECT append_time FROM eventlog_segments.%I ORDER BY offset_id DESC LIMIT 1',
                           seg.table_name) INTO newest;
            EXIT WHEN NOT (
                (t.retention IS NOT NULL AND (newest IS NULL OR newest < pg_catalog.now() - t.retention))
                OR (t.retention_bytes IS NOT NULL AND part_bytes > t.retention_bytes));
            -- Never queue behind a reader or a writer: skip till next round.
            -- DROP ... CASCADE also drops, and so must lock, every object
            -- made to depend on the segment (a view, a column default or a
            -- constraint holding its regclass): whoever holds one of those
            -- is waited for at most drop_lock_timeout, never longer.
            BEGIN
                EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                               seg.table_name);
                seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
                PERFORM pg_catalog.set_config('lock_timeout', drop_lock_timeout, true);
                -- CASCADE: see _drop_topic.
                EXECUTE format('DROP TABLE eventlog_segments.%I CASCADE', seg.table_name);
                PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
            EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
                -- The sub-block's abort has restored lock_timeout.
                r.action := 'skipped (busy)';
                r.segment := seg.table_name;
                r.first_offset := seg.base_offset;
                r.next_offset := nxt;
                r.bytes := NULL;
                RETURN NEXT r;
                EXIT;
            END;
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
                       '(SELECT append_time FROM eventlog_segments.%1$I ORDER BY offset_id LIMIT 1) a, '
                       '(SELECT append_time FROM eventlog_segments.%1$I ORDER BY offset_id DESC LIMIT 1) b',
                       seg.table_name) INTO oldest, newest;
        CONTINUE WHEN oldest IS NULL;
        seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
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
COMMENT ON FUNCTION @extschema@._maintain_topic(integer) IS
'internal: one maintenance round for a topic (record active bases, remove expired segments, roll full ones)';

CREATE OR REPLACE FUNCTION @extschema@._append_time(topic text, partition integer, from_offset bigint,
                                         below_offset bigint, newest boolean)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'el_append_time_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._append_time(text, integer, bigint, bigint, boolean) IS
'internal: the append time of the first (newest: last) record of a partition with an offset in [from_offset, below_offset), NULL if none or if its segment is being removed';
REVOKE ALL ON FUNCTION @extschema@._append_time(text, integer, bigint, bigint, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@._partition_bytes(topic text, partition integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_partition_bytes_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._partition_bytes(text, integer) IS
'internal: the bytes of a partition''s segments, a segment being removed not counted';
REVOKE ALL ON FUNCTION @extschema@._partition_bytes(text, integer) FROM PUBLIC;

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
BEGIN
    -- Offsets come from shared memory and the catalog; the segments are
    -- only looked at by _partition_bytes and _append_time, which never wait
    -- for a lock nor keep one, so that a view left open in a transaction
    -- pins no segment.
    FOR p IN SELECT t.name, t.topic_id, pc.partition, pc.log_start_offset AS start,
                    (SELECT count(*) FROM @extschema@.segment_catalog s
                      WHERE s.topic_id = t.topic_id AND s.partition = pc.partition) AS nsegs
               FROM @extschema@.topic_catalog t
               JOIN @extschema@.partition_catalog pc USING (topic_id)
              ORDER BY t.name, pc.partition
    LOOP
        -- A topic dropped since this statement's snapshot was taken is
        -- left out: the lookups below see the latest catalog.
        BEGIN
            topic := p.name;
            partition := p.partition;
            log_start_offset := p.start;
            SELECT s.high_watermark, s.last_stable_offset, s.stable_offset_holder_pid
              INTO high_watermark, last_stable_offset, stable_offset_holder_pid
              FROM @extschema@._partition_state(p.name, p.partition) s;
            records := greatest(last_stable_offset - log_start_offset, 0);
            segments := p.nsegs;
            bytes := @extschema@._partition_bytes(p.name, p.partition);
            oldest_append_time := @extschema@._append_time(p.name, p.partition, log_start_offset,
                                                           last_stable_offset, false);
            newest_append_time := @extschema@._append_time(p.name, p.partition, log_start_offset,
                                                           last_stable_offset, true);
        EXCEPTION WHEN undefined_object THEN
            CONTINUE;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._partition_info() IS
'internal: the rows of the eventlog.partitions view';

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
        -- A topic dropped since this statement's snapshot was taken is
        -- left out: the lookups below see the latest catalog.
        BEGIN
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
                -- Not eventlog.read: it keeps its segment locked to the end of
                -- the transaction, as a consumer's read must.
                oldest := @extschema@._append_time(o.name, o.partition,
                                                   greatest(o.next_offset, start_offset),
                                                   last_stable_offset, false);
            END IF;
            lag_time := CASE WHEN oldest IS NULL THEN interval '0' ELSE pg_catalog.now() - oldest END;
        EXCEPTION WHEN undefined_object THEN
            CONTINUE;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._consumer_group_info() IS
'internal: the rows of the eventlog.consumer_groups view';

-- ---------------------------------------------------------------------------
-- Issue 14: the consumer groups' hot path in C (src/group.c,
-- src/group_member.c, src/group_store.c).  eventlog._poll, _commit and
-- _rebalance keep their signatures and privileges; the PL/pgSQL helpers
-- only they used go.  (The library keeps the symbol el_group_exists_now:
-- this script creates _group_exists_now above, before dropping it here.)
-- ---------------------------------------------------------------------------
DROP FUNCTION @extschema@._poll_member(integer, text, text, text, integer, interval);
DROP FUNCTION @extschema@._checked_position(text, text, integer, bigint, bigint, text);
DROP FUNCTION @extschema@._group_position(integer, text, text, integer, text);
DROP FUNCTION @extschema@._group_lock_checked(integer, text, text, boolean);
DROP FUNCTION @extschema@._group_exists_now(integer, text);

CREATE OR REPLACE FUNCTION @extschema@._group_lock_key(topic_id integer, group_name text, partition integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_group_lock_key_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@._group_lock_key(integer, text, integer) IS
'internal: the advisory lock a transaction holds while it owns a partition for a group';

CREATE OR REPLACE FUNCTION @extschema@._poll(topic text, group_name text, max_records integer DEFAULT 500,
                                 partitions integer DEFAULT 1, member text DEFAULT NULL,
                                 session_timeout interval DEFAULT '30 seconds',
                                 wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.record
AS 'MODULE_PATHNAME', 'el_group_poll'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@._poll(text, text, integer, integer, text, interval, interval) IS
'internal: the body of eventlog.poll, run as the extension owner on behalf of the caller eventlog.poll notes (see src/acl.c)';

CREATE OR REPLACE FUNCTION @extschema@._rebalance(tid integer, topic text, group_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_group_rebalance_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@._rebalance(integer, text, text) IS
'internal: expires silent members and assigns partitions to live ones, moving as few as possible';

CREATE OR REPLACE FUNCTION @extschema@._commit(topic text, group_name text, member text,
                                   partition integer DEFAULT NULL, next_offset bigint DEFAULT NULL,
                                   generation bigint DEFAULT NULL, metadata text DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_group_commit'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@._commit(text, text, text, integer, bigint, bigint, text) IS
'internal: the body of eventlog.commit, run as the extension owner on behalf of the caller eventlog.commit notes (see src/acl.c)';

CREATE OR REPLACE FUNCTION @extschema@._delete_group(topic text, group_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'consume');
    n integer;
    p integer;
    live text;
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    IF NOT EXISTS (SELECT FROM @extschema@.group_offsets o
                    WHERE o.topic_id = tid AND o.group_name = _delete_group.group_name)
       AND NOT EXISTS (SELECT FROM @extschema@.group_catalog g
                        WHERE g.topic_id = tid AND g.group_name = _delete_group.group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" does not exist', group_name, topic
            USING ERRCODE = '42704';
    END IF;
    -- As Kafka refuses to delete a group that has members (GROUP_NOT_EMPTY):
    -- never wait, refuse while anyone consumes the group.  A transaction
    -- that polled it holds its membership lock (shared) and the partitions
    -- it took; a member's poll holds the membership lock; seek holds
    -- partitions.  Holding them all to the end of this transaction also
    -- keeps new polls out until the deletion is committed (they then find
    -- no group, or are refused as it was deleted during them: src/group.c).
    IF NOT @extschema@._try_xact_lock(3, @extschema@._group_lock_key(tid, group_name, -1)) THEN
        RAISE EXCEPTION 'group "%" of topic "%" is being consumed', group_name, topic
            USING ERRCODE = '55006',
                  DETAIL = 'A transaction that polled the group, or a member''s poll or commit, is still open.',
                  HINT = 'Retry when the group''s consumers have committed or rolled back.';
    END IF;
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = tid;
    FOR p IN 0 .. n - 1 LOOP
        IF NOT @extschema@._try_xact_lock(3, @extschema@._group_lock_key(tid, group_name, p)) THEN
            RAISE EXCEPTION 'group "%" of topic "%" is being consumed', group_name, topic
                USING ERRCODE = '55006',
                      DETAIL = format('An open transaction holds partition %s for the group (a poll or a seek).', p),
                      HINT = 'Retry when the group''s consumers have committed or rolled back.';
        END IF;
    END LOOP;
    -- Members that still heartbeat own partitions and would rejoin at their
    -- next poll: they must leave first.  Expired members go with the group.
    SELECT m.member INTO live FROM @extschema@.group_members m
     WHERE m.topic_id = tid AND m.group_name = _delete_group.group_name
       AND m.last_heartbeat + m.session_timeout > pg_catalog.now()
     ORDER BY m.member LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'group "%" of topic "%" has live members', group_name, topic
            USING ERRCODE = '55006',
                  DETAIL = format('Member %s, among others perhaps, is still in the group.', pg_catalog.quote_literal(live)),
                  HINT = 'Have the members call eventlog.leave(), or wait until they miss their session timeout.';
    END IF;
    DELETE FROM @extschema@.group_offsets o WHERE o.topic_id = tid AND o.group_name = _delete_group.group_name;
    DELETE FROM @extschema@.group_members m WHERE m.topic_id = tid AND m.group_name = _delete_group.group_name;
    DELETE FROM @extschema@.group_catalog g WHERE g.topic_id = tid AND g.group_name = _delete_group.group_name;
END
$$;

/*
 * The catalog triggers fire per changed row (and per TRUNCATE), no longer
 * per statement: a statement changing no row, as most of a maintenance
 * round's are, no longer invalidates every backend's topic cache and plans.
 */
DROP TRIGGER catalog_changed ON @extschema@.topic_catalog;
DROP TRIGGER catalog_changed ON @extschema@.partition_catalog;
DROP TRIGGER catalog_changed ON @extschema@.segment_catalog;
CREATE TRIGGER catalog_changed
    AFTER INSERT OR UPDATE OR DELETE ON @extschema@.topic_catalog
    FOR EACH ROW EXECUTE FUNCTION @extschema@._catalog_changed();
CREATE TRIGGER catalog_truncated
    AFTER TRUNCATE ON @extschema@.topic_catalog
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@._catalog_changed();
CREATE TRIGGER catalog_changed
    AFTER INSERT OR UPDATE OR DELETE ON @extschema@.partition_catalog
    FOR EACH ROW EXECUTE FUNCTION @extschema@._catalog_changed();
CREATE TRIGGER catalog_truncated
    AFTER TRUNCATE ON @extschema@.partition_catalog
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@._catalog_changed();
CREATE TRIGGER catalog_changed
    AFTER INSERT OR UPDATE OR DELETE ON @extschema@.segment_catalog
    FOR EACH ROW EXECUTE FUNCTION @extschema@._catalog_changed();
CREATE TRIGGER catalog_truncated
    AFTER TRUNCATE ON @extschema@.segment_catalog
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@._catalog_changed();

/*
 * Maintenance rounds cost less: the partition's size is summed only under
 * retention_bytes, and a segment's first and last append times come from
 * eventlog._segment_times (two index lookups) instead of a query on the
 * segment planned afresh for every partition of every round.
 */
CREATE FUNCTION @extschema@._segment_times(segment name,
                                           OUT oldest timestamptz, OUT newest timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'el_segment_times_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._segment_times(name) IS
'internal: the append times of a segment''s first and last records (NULL if it is empty), for maintenance rounds';

REVOKE ALL ON FUNCTION @extschema@._segment_times(name) FROM PUBLIC;

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
    saved_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    -- The caller's lock_timeout if shorter (0 is none).
    drop_lock_timeout text := CASE
        WHEN pg_catalog.current_setting('lock_timeout')::interval > interval '0'
         AND pg_catalog.current_setting('lock_timeout')::interval < interval '50 ms'
        THEN pg_catalog.current_setting('lock_timeout') ELSE '50ms' END;
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

        -- 2. Retention, oldest sealed segment first.  The partition's size
        --    only matters under retention_bytes.
        part_bytes := NULL;
        IF t.retention_bytes IS NOT NULL THEN
            SELECT coalesce(sum(pg_catalog.pg_total_relation_size(
                       pg_catalog.to_regclass(format('eventlog_segments.%I', s.table_name)))), 0)
              INTO part_bytes
              FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p;
        END IF;
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
            SELECT st.newest INTO newest FROM @extschema@._segment_times(seg.table_name) st;
            EXIT WHEN NOT (
                (t.retention IS NOT NULL AND (newest IS NULL OR newest < pg_catalog.now() - t.retention))
                OR (t.retention_bytes IS NOT NULL AND part_bytes > t.retention_bytes));
            -- Never queue behind a reader or a writer: skip till next round.
            -- DROP ... CASCADE also drops, and so must lock, every object
            -- made to depend on the segment (a view, a column default or a
            -- constraint holding its regclass): whoever holds one of those
            -- is waited for at most drop_lock_timeout, never longer.
            BEGIN
                EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                               seg.table_name);
                seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
                PERFORM pg_catalog.set_config('lock_timeout', drop_lock_timeout, true);
                -- CASCADE: see _drop_topic.
                EXECUTE format('DROP TABLE eventlog_segments.%I CASCADE', seg.table_name);
                PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
            EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
                -- The sub-block's abort has restored lock_timeout.
                r.action := 'skipped (busy)';
                r.segment := seg.table_name;
                r.first_offset := seg.base_offset;
                r.next_offset := nxt;
                r.bytes := NULL;
                RETURN NEXT r;
                EXIT;
            END;
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
        SELECT st.oldest, st.newest INTO oldest, newest
          FROM @extschema@._segment_times(seg.table_name) st;
        CONTINUE WHEN oldest IS NULL;
        seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
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

/*
 * The catalog triggers invalidate an empty row type instead of the changed
 * catalog table, so that a change of rows leaves every session's relcache
 * entries of the catalog and its plans over it alone.
 */
CREATE TYPE @extschema@.catalog_signal AS ();
COMMENT ON TYPE @extschema@.catalog_signal IS
'internal: the catalog triggers invalidate this empty row type to tell every session that the catalog changed (it holds nothing)';

/*
 * drop_topic waits for a maintenance round of the topic in progress: the
 * segment a round rolling a partition created, committed after drop_topic
 * had listed the segments, outlived the topic.
 */
CREATE OR REPLACE FUNCTION @extschema@._drop_topic(topic text, if_exists boolean DEFAULT false)
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
    -- Wait for a maintenance round of the topic in progress, and keep the
    -- next ones away (they skip a topic whose round lock is taken): a round
    -- that rolled a partition commits a new segment, which the list below
    -- must see, or its table would outlive the topic (its catalog row goes
    -- with the partition's).
    PERFORM @extschema@._xact_lock(2, old_id);
    FOR seg IN SELECT s.table_name FROM @extschema@.segment_catalog s
                WHERE s.topic_id = old_id ORDER BY s.partition, s.segment_no
    LOOP
        -- CASCADE: objects made to depend on a segment (a view by the
        -- extension owner, a regclass constant by anyone) go with it.
        EXECUTE format('DROP TABLE IF EXISTS eventlog_segments.%I CASCADE', seg.table_name);
    END LOOP;
    DELETE FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id;
    PERFORM @extschema@._forget_topic(old_id);
END
$$;

-- ---------------------------------------------------------------------------
-- Issue 14, item 7: pg_eventlog's locks are taken from SQL through one
-- function per kind and way (src/locks.c), never by kind number, so that
-- src/locks.h's ElLockKind is the only place a kind has a number; the
-- kind-numbered _xact_lock and _try_xact_lock go (the library keeps their
-- symbols for the 0.2.0 script).  _maintain_topic, which took them, is
-- replaced here; _drop_topic, _seek, _delete_group and _leave, which did
-- too, with the condition names' change below.
-- ---------------------------------------------------------------------------
CREATE FUNCTION @extschema@._lock_routing(topic_id integer, partition integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_routing'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_routing(integer, integer) IS
'internal: waits for the lock that orders a partition''s counter recovery with a maintenance round';

CREATE FUNCTION @extschema@._lock_maintenance(topic_id integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_maintenance'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_maintenance(integer) IS
'internal: waits for the lock of a topic''s maintenance rounds';

CREATE FUNCTION @extschema@._try_lock_maintenance(topic_id integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_lock_maintenance'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_lock_maintenance(integer) IS
'internal: takes the lock of a topic''s maintenance rounds if it is free';

CREATE FUNCTION @extschema@._lock_group_membership(topic_id integer, group_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_group_membership'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_group_membership(integer, text) IS
'internal: waits for a consumer group''s membership lock';

CREATE FUNCTION @extschema@._try_lock_group_membership(topic_id integer, group_name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_lock_group_membership'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_lock_group_membership(integer, text) IS
'internal: takes a consumer group''s membership lock if it is free';

CREATE FUNCTION @extschema@._lock_group_partition(topic_id integer, group_name text, partition integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_group_partition'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_group_partition(integer, text, integer) IS
'internal: waits for the lock of a partition of a consumer group';

CREATE FUNCTION @extschema@._try_lock_group_partition(topic_id integer, group_name text, partition integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_lock_group_partition'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_lock_group_partition(integer, text, integer) IS
'internal: takes the lock of a partition of a consumer group if it is free';

REVOKE ALL ON FUNCTION
    @extschema@._lock_group_membership(integer, text),
    @extschema@._lock_group_partition(integer, text, integer),
    @extschema@._lock_maintenance(integer),
    @extschema@._lock_routing(integer, integer),
    @extschema@._try_lock_group_membership(integer, text),
    @extschema@._try_lock_group_partition(integer, text, integer),
    @extschema@._try_lock_maintenance(integer)
  FROM PUBLIC;

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
    saved_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    -- The caller's lock_timeout if shorter (0 is none).
    drop_lock_timeout text := CASE
        WHEN pg_catalog.current_setting('lock_timeout')::interval > interval '0'
         AND pg_catalog.current_setting('lock_timeout')::interval < interval '50 ms'
        THEN pg_catalog.current_setting('lock_timeout') ELSE '50ms' END;
BEGIN
    SELECT * INTO t FROM @extschema@.topic_catalog c WHERE c.topic_id = _maintain_topic.topic_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- One round per topic at a time (the worker and enforce_retention may
    -- meet): a round that finds another in progress leaves it the work.
    IF NOT @extschema@._try_lock_maintenance(t.topic_id) THEN
        RETURN;
    END IF;
    r.topic := t.name;
    FOR p IN 0 .. t.partitions - 1 LOOP
        r.partition := p;
        -- Ordered with counter recovery (el_recover_next_offset): from the
        -- routing read until the base offset is recorded and committed.
        PERFORM @extschema@._lock_routing(t.topic_id, p);
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

        -- 2. Retention, oldest sealed segment first.  The partition's size
        --    only matters under retention_bytes.
        part_bytes := NULL;
        IF t.retention_bytes IS NOT NULL THEN
            SELECT coalesce(sum(pg_catalog.pg_total_relation_size(
                       pg_catalog.to_regclass(format('eventlog_segments.%I', s.table_name)))), 0)
              INTO part_bytes
              FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p;
        END IF;
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
            SELECT st.newest INTO newest FROM @extschema@._segment_times(seg.table_name) st;
            EXIT WHEN NOT (
                (t.retention IS NOT NULL AND (newest IS NULL OR newest < pg_catalog.now() - t.retention))
                OR (t.retention_bytes IS NOT NULL AND part_bytes > t.retention_bytes));
            -- Never queue behind a reader or a writer: skip till next round.
            -- DROP ... CASCADE also drops, and so must lock, every object
            -- made to depend on the segment (a view, a column default or a
            -- constraint holding its regclass): whoever holds one of those
            -- is waited for at most drop_lock_timeout, never longer.
            BEGIN
                EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                               seg.table_name);
                seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
                PERFORM pg_catalog.set_config('lock_timeout', drop_lock_timeout, true);
                -- CASCADE: see _drop_topic.
                EXECUTE format('DROP TABLE eventlog_segments.%I CASCADE', seg.table_name);
                PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
            EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
                -- The sub-block's abort has restored lock_timeout.
                r.action := 'skipped (busy)';
                r.segment := seg.table_name;
                r.first_offset := seg.base_offset;
                r.next_offset := nxt;
                r.bytes := NULL;
                RETURN NEXT r;
                EXIT;
            END;
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
        SELECT st.oldest, st.newest INTO oldest, newest
          FROM @extschema@._segment_times(seg.table_name) st;
        CONTINUE WHEN oldest IS NULL;
        seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
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

DROP FUNCTION @extschema@._xact_lock(integer, bigint, boolean);
DROP FUNCTION @extschema@._try_xact_lock(integer, bigint);

-- ---------------------------------------------------------------------------
-- Issue 14, item 7: the PL/pgSQL bodies name the SQLSTATEs they raise by
-- condition name (ERRCODE = 'invalid_parameter_value', not '22023'); the
-- codes are the same.  Every function that raises one is replaced with the
-- install script's body.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION @extschema@._grantee(role text)
RETURNS regrole
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r regrole;
BEGIN
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF lower(role) = 'public' THEN
        RETURN 0::oid::regrole;
    END IF;
    r := role::regrole;        -- 42704 for an unknown name
    -- regrole also reads '-' (PUBLIC) and bare OIDs: accept roles only.
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid = r) THEN
        RAISE EXCEPTION 'role "%" does not exist', role USING ERRCODE = 'undefined_object';
    END IF;
    RETURN r;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._privileges(privilege text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF privilege IS NULL THEN
        RAISE EXCEPTION 'privilege must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    CASE lower(privilege)
        WHEN 'produce' THEN RETURN ARRAY['produce'];
        WHEN 'consume' THEN RETURN ARRAY['consume'];
        WHEN 'all' THEN RETURN ARRAY['produce', 'consume'];
        ELSE
            RAISE EXCEPTION 'unrecognized topic privilege "%"', privilege
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'A topic privilege is produce, consume or all.';
    END CASE;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._set_topic_owner(topic text, new_owner text)
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
        RAISE EXCEPTION 'new_owner must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    owner_role := @extschema@._grantee(new_owner);
    IF owner_role = 0 THEN
        RAISE EXCEPTION 'a topic''s owner must be a role, not PUBLIC' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- ALTER ... OWNER's rule: one may give an object only to a role one
    -- could SET ROLE to (PostgreSQL 16 made that the SET option of the
    -- membership), so that nobody creates objects owned by others.
    may_set := CASE WHEN current_setting('server_version_num')::integer >= 160000
                    THEN pg_has_role(@extschema@._caller(), owner_role, 'SET')
                    ELSE pg_has_role(@extschema@._caller(), owner_role, 'MEMBER') END;
    IF NOT may_set THEN
        RAISE EXCEPTION 'must be able to SET ROLE "%"', owner_role::text
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Only a member of the new owner role, or a superuser, can hand a topic over to it.';
    END IF;
    UPDATE @extschema@.topic_catalog t SET owner = owner_role WHERE t.topic_id = tid;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._check_topic_name(topic text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF topic IS NULL THEN
        RAISE EXCEPTION 'topic name must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF topic !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION 'invalid topic name "%"', left(topic, 210)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A topic name is 1 to 200 characters, each a letter (A-Z, a-z), a digit, ".", "_" or "-".',
                  HINT = 'Kafka accepts the same alphabet, so a name valid here is valid there.';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._add_partitions(topic_id integer, first integer, last integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    total bigint;
    max_partitions integer := current_setting('eventlog.max_partitions')::integer;
BEGIN
    -- Serialise the check with every other creation or growth of a topic
    -- in this database (create_topic takes the same lock first; alter_topic
    -- holds only its topic's row lock, which this lock does not conflict
    -- with): two sessions must not each find room and together exceed the
    -- limit.  The count reads what is committed now, not the caller's
    -- snapshot, which in REPEATABLE READ predates the wait for the lock.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    total := @extschema@._partitions_in_use(_add_partitions.topic_id);
    IF total + last + 1 > max_partitions THEN
        RAISE EXCEPTION 'too many partitions'
            USING ERRCODE = 'configuration_limit_exceeded',
                  DETAIL = format('This database would have %s partitions; eventlog.max_partitions is %s.',
                                  total + last + 1, max_partitions),
                  HINT = 'Raise eventlog.max_partitions and restart the server, or use fewer partitions.';
    END IF;
    FOR p IN first .. last LOOP
        INSERT INTO @extschema@.partition_catalog (topic_id, partition)
        VALUES (_add_partitions.topic_id, p);
        PERFORM @extschema@._create_segment(_add_partitions.topic_id, p, 0, 0);
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._check_topic_settings(
    retention interval, retention_bytes bigint,
    segment_interval interval, segment_bytes bigint)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF retention <= interval '0' THEN
        RAISE EXCEPTION 'retention must be positive'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use NULL to keep records forever.';
    END IF;
    IF retention_bytes <= 0 THEN
        RAISE EXCEPTION 'retention_bytes must be positive'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use NULL for no size limit.';
    END IF;
    IF segment_interval IS NULL OR segment_interval <= interval '0' THEN
        RAISE EXCEPTION 'segment_interval must be a positive interval'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF segment_bytes IS NULL OR segment_bytes < 65536 THEN
        RAISE EXCEPTION 'segment_bytes must be at least 65536'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(segment_bytes::text, 'NULL'));
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._create_topic(
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
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(partitions::text, 'NULL'));
    END IF;
    PERFORM @extschema@._check_topic_settings(retention, retention_bytes,
                                              segment_interval, segment_bytes);
    -- Serialise topic creation, so that two sessions creating the same name
    -- get a clear error instead of a unique violation.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _create_topic.topic) THEN
        RAISE EXCEPTION 'topic "%" already exists', topic
            USING ERRCODE = 'duplicate_object';
    END IF;
    INSERT INTO @extschema@.topic_catalog AS t
           (name, partitions, retention, retention_bytes, segment_interval, segment_bytes, owner)
    VALUES (topic, partitions, retention, retention_bytes, segment_interval, segment_bytes,
            @extschema@._caller())
    RETURNING t.topic_id INTO new_id;
    PERFORM @extschema@._add_partitions(new_id, 0, partitions - 1);
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._drop_topic(topic text, if_exists boolean DEFAULT false)
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
            USING ERRCODE = 'undefined_object';
    END IF;
    PERFORM @extschema@._authorize(topic, 'owner');
    PERFORM FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id FOR UPDATE;
    -- Wait for a maintenance round of the topic in progress, and keep the
    -- next ones away (they skip a topic whose round lock is taken): a round
    -- that rolled a partition commits a new segment, which the list below
    -- must see, or its table would outlive the topic (its catalog row goes
    -- with the partition's).
    PERFORM @extschema@._lock_maintenance(old_id);
    FOR seg IN SELECT s.table_name FROM @extschema@.segment_catalog s
                WHERE s.topic_id = old_id ORDER BY s.partition, s.segment_no
    LOOP
        -- CASCADE: objects made to depend on a segment (a view by the
        -- extension owner, a regclass constant by anyone) go with it.
        EXECUTE format('DROP TABLE IF EXISTS eventlog_segments.%I CASCADE', seg.table_name);
    END LOOP;
    DELETE FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id;
    PERFORM @extschema@._forget_topic(old_id);
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._alter_topic(
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
    -- Growth checks eventlog.max_partitions under topic_catalog's SHARE ROW
    -- EXCLUSIVE lock (_add_partitions): take it before the topic's row lock,
    -- as create_topic does.  Waiting for it while holding the row would
    -- deadlock with a transaction that changed topic_catalog (an alter_topic,
    -- drop_topic or grant) and then alters this topic.  Only for the
    -- topic's owner: no one else may hold up topic DDL with it.
    IF partitions IS NOT NULL THEN
        IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _alter_topic.topic) THEN
            PERFORM @extschema@._authorize(topic, 'owner');
        END IF;
        LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    END IF;
    SELECT * INTO cur FROM @extschema@.topic_catalog t
     WHERE t.name = _alter_topic.topic FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', topic
            USING ERRCODE = 'undefined_object';
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
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass a negative value (for example interval ''-1 second'' or -1) to remove a limit, or NULL to leave it unchanged.';
    END IF;
    PERFORM @extschema@._check_topic_settings(new_retention, new_retention_bytes,
        coalesce(segment_interval, cur.segment_interval),
        coalesce(segment_bytes, cur.segment_bytes));
    IF partitions IS NOT NULL AND partitions < cur.partitions THEN
        RAISE EXCEPTION 'cannot reduce the number of partitions of topic "%"', topic
            USING ERRCODE = 'invalid_parameter_value',
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

CREATE OR REPLACE FUNCTION @extschema@._enforce_retention(topic text DEFAULT NULL)
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
            RAISE EXCEPTION 'topic "%" does not exist', topic USING ERRCODE = 'undefined_object';
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

CREATE OR REPLACE FUNCTION @extschema@._check_group_name(group_name text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF group_name IS NULL THEN
        RAISE EXCEPTION 'group_name must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF group_name = '' OR length(group_name) > 200 THEN
        RAISE EXCEPTION 'invalid group name "%"', left(group_name, 210)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A group name is 1 to 200 characters.';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._topic_id(topic text)
RETURNS integer
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer;
BEGIN
    PERFORM @extschema@._check_topic_name(topic);
    SELECT c.topic_id INTO tid FROM @extschema@.topic_catalog c WHERE c.name = _topic_id.topic;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', topic USING ERRCODE = 'undefined_object';
    END IF;
    RETURN tid;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._create_group(topic text, group_name text,
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
        RAISE EXCEPTION 'start_from must be ''earliest'' or ''latest''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF auto_reset IS NOT NULL AND auto_reset NOT IN ('earliest', 'latest') THEN
        RAISE EXCEPTION 'auto_reset must be ''earliest'', ''latest'' or NULL' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'NULL makes poll raise an error when retention removed records the group has not read.';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.group_catalog g
                WHERE g.topic_id = tid AND g.group_name = _create_group.group_name)
       OR EXISTS (SELECT FROM @extschema@.group_offsets o
                   WHERE o.topic_id = tid AND o.group_name = _create_group.group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" already exists', group_name, topic
            USING ERRCODE = 'duplicate_object';
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

CREATE OR REPLACE FUNCTION @extschema@._seek(topic text, group_name text, target text,
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
        RAISE EXCEPTION 'target must not be empty' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Use ''earliest'', ''latest'', an offset or a timestamp.';
    END IF;
    IF target !~ '^(earliest|latest|[0-9]+)$' THEN
        BEGIN
            ts := target::timestamptz;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION 'invalid seek target "%"', target USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use ''earliest'', ''latest'', an offset or a timestamp.';
        END;
    END IF;
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = tid;
    IF _seek.partition IS NOT NULL AND (_seek.partition < 0 OR _seek.partition >= n) THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', _seek.partition, topic
            USING ERRCODE = 'invalid_parameter_value', DETAIL = format('The topic has %s partitions, numbered 0 to %s.', n, n - 1);
    END IF;
    FOR p IN SELECT pg_catalog.generate_series(coalesce(_seek.partition, 0), coalesce(_seek.partition, n - 1)) LOOP
        IF force THEN
            PERFORM @extschema@._lock_group_partition(tid, group_name, p);
        ELSIF NOT @extschema@._try_lock_group_partition(tid, group_name, p) THEN
            RAISE EXCEPTION 'partition % of topic "%" is being consumed by group "%"', p, topic, group_name
                USING ERRCODE = 'object_in_use',
                      HINT = 'Retry when its consumers are idle, or pass force => true to wait for them.';
        ELSIF EXISTS (SELECT FROM @extschema@.group_offsets o
                       WHERE o.topic_id = tid AND o.group_name = _seek.group_name AND o.partition = p
                         AND o.owner_member IS NOT NULL) THEN
            RAISE EXCEPTION 'partition % of topic "%" is assigned to a member of group "%"', p, topic, group_name
                USING ERRCODE = 'object_in_use',
                      HINT = 'Let the members leave first, or pass force => true (their uncommitted progress is then discarded).';
        END IF;
        pos := CASE
                 WHEN target = 'earliest' THEN @extschema@.log_start_offset(topic, p)
                 WHEN target = 'latest' THEN @extschema@.last_stable_offset(topic, p)
                 WHEN ts IS NOT NULL THEN @extschema@.offset_for_time(topic, p, ts)
                 ELSE target::bigint END;
        IF pos > @extschema@.high_watermark(topic, p) THEN
            RAISE EXCEPTION 'offset % is beyond the high watermark of partition % of topic "%"', pos, p, topic
                USING ERRCODE = 'numeric_value_out_of_range';
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

CREATE OR REPLACE FUNCTION @extschema@._delete_group(topic text, group_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'consume');
    n integer;
    p integer;
    live text;
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    IF NOT EXISTS (SELECT FROM @extschema@.group_offsets o
                    WHERE o.topic_id = tid AND o.group_name = _delete_group.group_name)
       AND NOT EXISTS (SELECT FROM @extschema@.group_catalog g
                        WHERE g.topic_id = tid AND g.group_name = _delete_group.group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" does not exist', group_name, topic
            USING ERRCODE = 'undefined_object';
    END IF;
    -- As Kafka refuses to delete a group that has members (GROUP_NOT_EMPTY):
    -- never wait, refuse while anyone consumes the group.  A transaction
    -- that polled it holds its membership lock (shared) and the partitions
    -- it took; a member's poll holds the membership lock; seek holds
    -- partitions.  Holding them all to the end of this transaction also
    -- keeps new polls out until the deletion is committed (they then find
    -- no group, or are refused as it was deleted during them: src/group.c).
    IF NOT @extschema@._try_lock_group_membership(tid, group_name) THEN
        RAISE EXCEPTION 'group "%" of topic "%" is being consumed', group_name, topic
            USING ERRCODE = 'object_in_use',
                  DETAIL = 'A transaction that polled the group, or a member''s poll or commit, is still open.',
                  HINT = 'Retry when the group''s consumers have committed or rolled back.';
    END IF;
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = tid;
    FOR p IN 0 .. n - 1 LOOP
        IF NOT @extschema@._try_lock_group_partition(tid, group_name, p) THEN
            RAISE EXCEPTION 'group "%" of topic "%" is being consumed', group_name, topic
                USING ERRCODE = 'object_in_use',
                      DETAIL = format('An open transaction holds partition %s for the group (a poll or a seek).', p),
                      HINT = 'Retry when the group''s consumers have committed or rolled back.';
        END IF;
    END LOOP;
    -- Members that still heartbeat own partitions and would rejoin at their
    -- next poll: they must leave first.  Expired members go with the group.
    SELECT m.member INTO live FROM @extschema@.group_members m
     WHERE m.topic_id = tid AND m.group_name = _delete_group.group_name
       AND m.last_heartbeat + m.session_timeout > pg_catalog.now()
     ORDER BY m.member LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'group "%" of topic "%" has live members', group_name, topic
            USING ERRCODE = 'object_in_use',
                  DETAIL = format('Member %s, among others perhaps, is still in the group.', pg_catalog.quote_literal(live)),
                  HINT = 'Have the members call eventlog.leave(), or wait until they miss their session timeout.';
    END IF;
    DELETE FROM @extschema@.group_offsets o WHERE o.topic_id = tid AND o.group_name = _delete_group.group_name;
    DELETE FROM @extschema@.group_members m WHERE m.topic_id = tid AND m.group_name = _delete_group.group_name;
    DELETE FROM @extschema@.group_catalog g WHERE g.topic_id = tid AND g.group_name = _delete_group.group_name;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._leave(topic text, group_name text, member text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'consume');
BEGIN
    PERFORM @extschema@._check_group_name(group_name);
    PERFORM @extschema@._lock_group_membership(tid, group_name);
    DELETE FROM @extschema@.group_members gm
     WHERE gm.topic_id = tid AND gm.group_name = _leave.group_name AND gm.member = _leave.member;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'member "%" is not in group "%" of topic "%"', member, group_name, topic
            USING ERRCODE = 'undefined_object';
    END IF;
    -- Hand its partitions over at once.
    PERFORM @extschema@._rebalance(tid, topic, group_name);
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._capture_truncate()
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

CREATE OR REPLACE FUNCTION @extschema@.uncapture(source regclass)
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

CREATE OR REPLACE FUNCTION @extschema@._outbox_trigger()
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

CREATE OR REPLACE FUNCTION @extschema@.route_outbox(source regclass, topic_column text DEFAULT 'aggregatetype',
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

CREATE OR REPLACE FUNCTION @extschema@.unroute_outbox(source regclass)
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

CREATE OR REPLACE FUNCTION @extschema@.apply_changes(topic text, group_name text, target regclass,
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

/* ------------------------------------------------------------------------
 * Binary topics (issue 15): a topic's format, 'json' as until now or
 * 'binary' (bytea keys and values, eventlog.header[] headers, Kafka's
 * records byte for byte), with produce_binary, produce_binary_batch,
 * read_binary and poll_binary.  Every topic of a 0.2.0 database is JSON.
 * ------------------------------------------------------------------------ */
ALTER TABLE @extschema@.topic_catalog
    ADD COLUMN format text NOT NULL DEFAULT 'json'
        CHECK (format OPERATOR(pg_catalog.=) ANY (ARRAY['json', 'binary']));

/* Binary topics (format 'binary'): Kafka's records, byte for byte. */
CREATE TYPE @extschema@.header AS (
    name   text,
    value  bytea
);
COMMENT ON TYPE @extschema@.header IS
'a header of a binary topic''s record: a name and a value (NULL or bytes); a record''s headers are an ordered array in which names may repeat, as in Kafka';

CREATE TYPE @extschema@.binary_record AS (
    topic        text,
    partition    integer,
    offset_id    bigint,
    key          bytea,
    value        bytea,
    headers      @extschema@.header[],
    event_time   timestamptz,
    append_time  timestamptz
);
COMMENT ON TYPE @extschema@.binary_record IS
'a record of a binary topic as read_binary returns it';

CREATE TYPE @extschema@.message AS (
    key          bytea,
    value        bytea,
    headers      @extschema@.header[],
    event_time   timestamptz
);
COMMENT ON TYPE @extschema@.message IS
'a record to append to a binary topic with produce_binary_batch (event_time NULL: the append time)';

/*
 * Create the next segment table of a partition.  Its name derives from
 * numbers only (identifiers stop at 63 bytes; topic names may be 200
 * characters), and every identifier is quoted by format('%I').  Its key,
 * value and headers columns are of the topic's format: text, jsonb, jsonb
 * for 'json'; bytea, bytea, eventlog.header[] for 'binary'.
 */
CREATE OR REPLACE FUNCTION @extschema@._create_segment(topic_id integer, partition integer,
                                            segment_no integer, base_offset bigint)
RETURNS name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tbl name := format('seg_%s_%s_%s', topic_id, partition, segment_no);
    topic_name text;
    topic_format text;
BEGIN
    SELECT t.name, t.format INTO topic_name, topic_format
      FROM @extschema@.topic_catalog t WHERE t.topic_id = _create_segment.topic_id;
    IF topic_format = 'binary' THEN
        EXECUTE format(
            'CREATE TABLE eventlog_segments.%I ('
            '    offset_id bigint NOT NULL,'
            '    key bytea,'
            '    value bytea,'
            '    headers @extschema@.header[],'
            '    event_time timestamptz NOT NULL,'
            '    append_time timestamptz NOT NULL,'
            '    CONSTRAINT %I PRIMARY KEY (offset_id)'
            ') USING heap', tbl, tbl || '_pkey');
    ELSE
        EXECUTE format(
            'CREATE TABLE eventlog_segments.%I ('
            '    offset_id bigint NOT NULL,'
            '    key text,'
            '    value jsonb,'
            '    headers jsonb,'
            '    event_time timestamptz NOT NULL,'
            '    append_time timestamptz NOT NULL,'
            '    CONSTRAINT %I PRIMARY KEY (offset_id)'
            ') USING heap', tbl, tbl || '_pkey');
    END IF;
    EXECUTE format(
        'CREATE TRIGGER segment_guard BEFORE INSERT OR UPDATE OR DELETE'
        ' ON eventlog_segments.%I FOR EACH ROW'
        ' EXECUTE FUNCTION @extschema@._segment_guard()', tbl);
    EXECUTE format(
        'CREATE TRIGGER segment_guard_truncate BEFORE TRUNCATE'
        ' ON eventlog_segments.%I FOR EACH STATEMENT'
        ' EXECUTE FUNCTION @extschema@._segment_guard()', tbl);
    -- ALWAYS: the guard also fires under session_replication_role = replica,
    -- that is in logical replication apply workers.
    EXECUTE format(
        'ALTER TABLE eventlog_segments.%I ENABLE ALWAYS TRIGGER segment_guard,'
        ' ENABLE ALWAYS TRIGGER segment_guard_truncate', tbl);
    EXECUTE format('COMMENT ON TABLE eventlog_segments.%I IS %L', tbl,
        format('pg_eventlog records of topic %s, partition %s, segment %s (read-only: write with eventlog.produce)',
               topic_name, partition, segment_no));
    INSERT INTO @extschema@.segment_catalog (topic_id, partition, segment_no, base_offset, table_name)
    VALUES (_create_segment.topic_id, _create_segment.partition,
            _create_segment.segment_no, _create_segment.base_offset, tbl);
    RETURN tbl;
END
$$;
COMMENT ON FUNCTION @extschema@._create_segment(integer, integer, integer, bigint) IS
'internal: creates a segment table for a partition, with the columns of the topic''s format, and records it in segment_catalog';

/*
 * create_topic gains a last parameter, format: a new signature, so the old
 * function is dropped (an overload would make every call ambiguous).  The
 * EXECUTE grants of the old create_topic (who may create topics) are given
 * to the new one.
 */
SELECT pg_catalog.set_config('pg_eventlog_upgrade.create_topic_acl',
                             coalesce(p.proacl::text, ''), true)
  FROM pg_catalog.pg_proc p
 WHERE p.oid = '@extschema@.create_topic(text, integer, interval, bigint, interval, bigint)'::pg_catalog.regprocedure;
DROP FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint);
DROP FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint);

CREATE FUNCTION @extschema@._create_topic(
    topic text,
    partitions integer DEFAULT 1,
    retention interval DEFAULT '7 days',
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT '1 day',
    segment_bytes bigint DEFAULT 1073741824,
    format text DEFAULT 'json')
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
    IF _create_topic.format IS NULL THEN
        RAISE EXCEPTION 'format must not be null'
            USING ERRCODE = '22004',
                  HINT = 'A topic''s format is ''json'' (text keys, jsonb values and headers) or ''binary'' (bytea keys and values, eventlog.header[] headers).';
    END IF;
    IF _create_topic.format NOT IN ('json', 'binary') THEN
        RAISE EXCEPTION 'invalid topic format "%"', left(_create_topic.format, 100)
            USING ERRCODE = '22023',
                  HINT = 'A topic''s format is ''json'' (text keys, jsonb values and headers) or ''binary'' (bytea keys and values, eventlog.header[] headers).';
    END IF;
    -- Serialise topic creation, so that two sessions creating the same name
    -- get a clear error instead of a unique violation.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _create_topic.topic) THEN
        RAISE EXCEPTION 'topic "%" already exists', topic
            USING ERRCODE = '42710';
    END IF;
    INSERT INTO @extschema@.topic_catalog AS t
           (name, partitions, retention, retention_bytes, segment_interval, segment_bytes, owner,
            format)
    VALUES (topic, partitions, retention, retention_bytes, segment_interval, segment_bytes,
            @extschema@._caller(), _create_topic.format)
    RETURNING t.topic_id INTO new_id;
    PERFORM @extschema@._add_partitions(new_id, 0, partitions - 1);
END
$$;
COMMENT ON FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint, text) IS
'internal: the body of eventlog.create_topic, run as the extension owner on behalf of the caller eventlog.create_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.create_topic(
    topic text,
    partitions integer DEFAULT 1,
    retention interval DEFAULT '7 days',
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT '1 day',
    segment_bytes bigint DEFAULT 1073741824,
    format text DEFAULT 'json')
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text) IS
'creates a topic of that many partitions; retention NULL keeps records forever, retention_bytes is per partition; format ''json'' (text keys, jsonb values and headers: produce, read) or ''binary'' (Kafka''s bytes: produce_binary, read_binary), fixed for the topic''s life';
-- Who may create topics: those granted EXECUTE on create_topic.
REVOKE ALL ON FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text) FROM PUBLIC;

DO $$
DECLARE
    acl text := pg_catalog.current_setting('pg_eventlog_upgrade.create_topic_acl', true);
    g record;
    fn pg_catalog.oid := '@extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text)'::pg_catalog.regprocedure;
    init pg_catalog.aclitem[];
BEGIN
    SELECT i.initprivs INTO init FROM pg_catalog.pg_init_privs i
     WHERE i.objoid = fn AND i.classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass
       AND i.objsubid = 0;
    IF acl IS NULL OR acl = '' THEN
        RETURN;
    END IF;
    FOR g IN SELECT e.grantee, e.is_grantable
               FROM pg_catalog.aclexplode(acl::pg_catalog.aclitem[]) e
              WHERE e.privilege_type = 'EXECUTE'
                AND e.grantee <> (SELECT p.proowner FROM pg_catalog.pg_proc p
                                   WHERE p.oid = '@extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text)'::pg_catalog.regprocedure)
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text) TO %s%s',
                                  CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                                       ELSE g.grantee::pg_catalog.regrole::text END,
                                  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
    /*
     * GRANTs run by an extension script are recorded as the object's
     * initial privileges (pg_init_privs), which pg_dump leaves out: a dump
     * of the updated database would lose the grants given back above.  Put
     * back the initial privileges a fresh install records (those of the
     * REVOKE above), so that they stay the user's grants.  (The update
     * runs as a superuser: pg_eventlog is not a trusted extension.)
     */
    IF init IS NULL THEN
        DELETE FROM pg_catalog.pg_init_privs i
         WHERE i.objoid = fn AND i.classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND i.objsubid = 0;
    ELSE
        UPDATE pg_catalog.pg_init_privs i SET initprivs = init
         WHERE i.objoid = fn AND i.classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND i.objsubid = 0;
    END IF;
END
$$;

/*
 * Binary topics (format 'binary'): Kafka's records, byte for byte.  Named
 * apart from produce and read, so that produce with plain literals stays
 * unambiguous.
 */
CREATE FUNCTION @extschema@.produce_binary(
    topic text,
    key bytea,
    value bytea,
    headers @extschema@.header[] DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz DEFAULT NULL)
RETURNS @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_binary'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.produce_binary(text, bytea, bytea, @extschema@.header[], integer, timestamptz) IS
'appends a record to a binary topic in the caller''s transaction and returns its partition and offset; the key''s bytes pick the partition (Kafka''s murmur2), NULL key goes round-robin; NULL value is a tombstone';

CREATE FUNCTION @extschema@.produce_binary_batch(
    topic text,
    messages @extschema@.message[],
    partition integer DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_binary_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.produce_binary_batch(text, @extschema@.message[], integer) IS
'appends many records to a binary topic in one call and returns their positions in input order';

CREATE FUNCTION @extschema@.read_binary(
    topic text,
    partition integer,
    from_offset bigint,
    max_records integer DEFAULT 1000,
    wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.binary_record
AS 'MODULE_PATHNAME', 'el_read_binary'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.read_binary(text, integer, bigint, integer, interval) IS
'eventlog.read for a binary topic: up to max_records records of a partition from from_offset on, in offset order, never at or above the last stable offset; with wait, a long poll';

/*
 * The same, for binary topics: records as eventlog.binary_record.  The
 * group's positions, commit, seek and the views are the same for both.
 */
CREATE FUNCTION @extschema@._poll_binary(topic text, group_name text, max_records integer DEFAULT 500,
                                        partitions integer DEFAULT 1, member text DEFAULT NULL,
                                        session_timeout interval DEFAULT '30 seconds',
                                        wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.binary_record
AS 'MODULE_PATHNAME', 'el_group_poll_binary'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@._poll_binary(text, text, integer, integer, text, interval, interval) IS
'internal: the body of eventlog.poll_binary, run as the extension owner on behalf of the caller eventlog.poll_binary notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._poll_binary(text, text, integer, integer, text, interval, interval) FROM PUBLIC;

CREATE FUNCTION @extschema@.poll_binary(topic text, group_name text, max_records integer DEFAULT 500,
                                       partitions integer DEFAULT 1, member text DEFAULT NULL,
                                       session_timeout interval DEFAULT '30 seconds',
                                       wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.binary_record
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.poll_binary(text, text, integer, integer, text, interval, interval) IS
'eventlog.poll for a binary topic: the same group positions, members, commit and long poll, records as eventlog.binary_record';

CREATE OR REPLACE VIEW @extschema@.topics AS
    SELECT t.name AS topic, t.partitions, t.retention, t.retention_bytes,
           t.segment_interval, t.segment_bytes,
           coalesce(sum(p.records), 0)::bigint AS records,
           coalesce(sum(p.bytes), 0)::bigint AS bytes,
           t.created_at, t.owner, t.format
      FROM @extschema@.topic_catalog t
      LEFT JOIN @extschema@.partitions p ON p.topic = t.name
     GROUP BY t.topic_id;
COMMENT ON VIEW @extschema@.topics IS
'one row per topic: its settings, the records (offsets) and bytes it holds, its owner, and its format (json or binary)';

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
    IF rel.nsp = '@extschema@'::regnamespace OR rel.nsp = 'eventlog_segments'::regnamespace THEN
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

-- Functions changed both by the SQLSTATE condition names and by binary topics:
-- their final bodies, as sql/install/ has them.

CREATE OR REPLACE FUNCTION @extschema@._create_topic(
    topic text,
    partitions integer DEFAULT 1,
    retention interval DEFAULT '7 days',
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT '1 day',
    segment_bytes bigint DEFAULT 1073741824,
    format text DEFAULT 'json')
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
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(partitions::text, 'NULL'));
    END IF;
    PERFORM @extschema@._check_topic_settings(retention, retention_bytes,
                                              segment_interval, segment_bytes);
    IF _create_topic.format IS NULL THEN
        RAISE EXCEPTION 'format must not be null'
            USING ERRCODE = '22004',
                  HINT = 'A topic''s format is ''json'' (text keys, jsonb values and headers) or ''binary'' (bytea keys and values, eventlog.header[] headers).';
    END IF;
    IF _create_topic.format NOT IN ('json', 'binary') THEN
        RAISE EXCEPTION 'invalid topic format "%"', left(_create_topic.format, 100)
            USING ERRCODE = '22023',
                  HINT = 'A topic''s format is ''json'' (text keys, jsonb values and headers) or ''binary'' (bytea keys and values, eventlog.header[] headers).';
    END IF;
    -- Serialise topic creation, so that two sessions creating the same name
    -- get a clear error instead of a unique violation.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _create_topic.topic) THEN
        RAISE EXCEPTION 'topic "%" already exists', topic
            USING ERRCODE = 'duplicate_object';
    END IF;
    INSERT INTO @extschema@.topic_catalog AS t
           (name, partitions, retention, retention_bytes, segment_interval, segment_bytes, owner,
            format)
    VALUES (topic, partitions, retention, retention_bytes, segment_interval, segment_bytes,
            @extschema@._caller(), _create_topic.format)
    RETURNING t.topic_id INTO new_id;
    PERFORM @extschema@._add_partitions(new_id, 0, partitions - 1);
END
$$;

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


-- Kafka groups (issue 15): sql/install/kafka_groups.sql, as installed.
/* ------------------------------------------------------------------------
 * Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup, DescribeGroups, ListGroups, DeleteGroups) and group offsets
 * (OffsetCommit, OffsetFetch, OffsetDelete), for the Kafka gateway: one call
 * per request.  The coordinator's state machine is here, in tables, so that
 * every gateway serving the database sees one state and a gateway can die
 * without losing it; it follows Kafka's GroupCoordinator (states Empty,
 * PreparingRebalance, CompletingRebalance, Stable; Dead groups are deleted
 * rows).  Protocol outcomes are Kafka error codes in the results, not
 * exceptions.  A Kafka group's committed offsets are the rows of
 * group_offsets of (topic, group name, partition): SQL consumers of the
 * same group name share them (docs/consumer-groups.md, "Kafka groups").
 *
 * Every request of a group takes the group's lock (kind 4, src/locks.h),
 * expires members past their session timeout and completes a rebalance
 * whose time has come.  JoinGroup and SyncGroup wait for other members:
 * they are procedures that commit their change, sleep (src/kafka_group.c)
 * without the lock or a snapshot until the group changes or a deadline, and
 * look again.
 * ------------------------------------------------------------------------ */

CREATE TYPE @extschema@.kafka_protocol AS (name text, metadata bytea);
COMMENT ON TYPE @extschema@.kafka_protocol IS
'a protocol a Kafka group member supports (JoinGroup), with its metadata (for consumers, the subscription)';
CREATE TYPE @extschema@.kafka_member AS (member_id text, group_instance_id text, metadata bytea);
COMMENT ON TYPE @extschema@.kafka_member IS
'a member of a Kafka group as its leader sees it in the JoinGroup response';
CREATE TYPE @extschema@.kafka_assignment AS (member_id text, assignment bytea);
COMMENT ON TYPE @extschema@.kafka_assignment IS
'the leader''s assignment for one member (SyncGroup)';
CREATE TYPE @extschema@.kafka_member_identity AS (member_id text, group_instance_id text);
COMMENT ON TYPE @extschema@.kafka_member_identity IS
'a member leaving a Kafka group (LeaveGroup): by member id, or by group instance id with an empty member id';
CREATE TYPE @extschema@.kafka_member_description AS (
    member_id text, group_instance_id text, client_id text, client_host text,
    metadata bytea, assignment bytea);
COMMENT ON TYPE @extschema@.kafka_member_description IS
'a member of a Kafka group in DescribeGroups';
CREATE TYPE @extschema@.kafka_offset AS (topic text, partition integer, committed_offset bigint, metadata text);
COMMENT ON TYPE @extschema@.kafka_offset IS
'one partition''s offset in an OffsetCommit request';
CREATE TYPE @extschema@.kafka_topic_partition AS (topic text, partition integer);
COMMENT ON TYPE @extschema@.kafka_topic_partition IS
'a partition named in an OffsetFetch or OffsetDelete request';

-- One step of a JoinGroup or SyncGroup: a result (error_code not null), or
-- "wait until wake_at or until the group changes after epoch".
CREATE TYPE @extschema@._kafka_step AS (
    error_code smallint, generation integer, protocol_type text, protocol_name text,
    leader text, member_id text, members @extschema@.kafka_member[], assignment bytea,
    wake_at timestamptz, epoch bigint);
COMMENT ON TYPE @extschema@._kafka_step IS
'internal: a step of kafka_join_group or kafka_sync_group, a result or a wait';

CREATE TABLE @extschema@.kafka_groups (
    group_name          text PRIMARY KEY,
    state               text NOT NULL DEFAULT 'Empty'
                        CHECK (state OPERATOR(pg_catalog.=) ANY
                               (ARRAY['Empty', 'PreparingRebalance', 'CompletingRebalance', 'Stable'])),
    generation          integer NOT NULL DEFAULT 0,
    protocol_type       text,
    protocol_name       text,
    leader              text,
    -- PreparingRebalance: the join completes at the latest then (the
    -- largest rebalance timeout of the members) ...
    rebalance_deadline  timestamptz,
    -- ... and, for the first rebalance of an empty group, not before this
    -- (Kafka's group.initial.rebalance.delay.ms, extended while new
    -- members come).
    delay_until         timestamptz,
    new_member_added    boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE @extschema@.kafka_groups IS
'pg_eventlog Kafka groups: the coordinator''s state of each group (live state: not dumped)';

CREATE TABLE @extschema@.kafka_group_members (
    group_name            text NOT NULL REFERENCES @extschema@.kafka_groups ON DELETE CASCADE,
    member_id             text NOT NULL,
    group_instance_id     text,
    client_id             text NOT NULL DEFAULT '',
    client_host           text NOT NULL DEFAULT '',
    session_timeout_ms    integer NOT NULL,
    rebalance_timeout_ms  integer NOT NULL,
    protocols             @extschema@.kafka_protocol[] NOT NULL DEFAULT '{}',
    assignment            bytea,
    -- KIP-394: a member id handed out with MEMBER_ID_REQUIRED, whose
    -- JoinGroup with it has not come yet (not a member; expires).
    pending               boolean NOT NULL DEFAULT false,
    awaiting_join         boolean NOT NULL DEFAULT false,
    joined_generation     integer,
    joined_at             timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    last_heartbeat        timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (group_name, member_id)
);
CREATE UNIQUE INDEX kafka_group_members_instance
    ON @extschema@.kafka_group_members (group_name, group_instance_id)
    WHERE group_instance_id IS NOT NULL;
COMMENT ON TABLE @extschema@.kafka_group_members IS
'pg_eventlog Kafka group members: protocols, assignment and last heartbeat of each (live state: not dumped)';
GRANT SELECT ON @extschema@.kafka_groups, @extschema@.kafka_group_members TO PUBLIC;

CREATE FUNCTION @extschema@._kafka_group_epoch(group_name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_kafka_group_epoch'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_group_epoch(text) IS
'internal: the counter of committed changes of the group''s wake-up slot, read before looking at the group';

CREATE FUNCTION @extschema@._kafka_group_touch(group_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_kafka_group_touch'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_group_touch(text) IS
'internal: wakes the group''s waiting JoinGroup and SyncGroup calls when this transaction commits';

CREATE PROCEDURE @extschema@._kafka_group_wait(group_name text, epoch bigint, wake_at timestamptz)
AS 'MODULE_PATHNAME', 'el_kafka_group_wait'
LANGUAGE C;
COMMENT ON PROCEDURE @extschema@._kafka_group_wait(text, bigint, timestamptz) IS
'internal: sleeps until a change of the group commits after epoch was read, or until wake_at';

CREATE FUNCTION @extschema@._kafka_subscription_topics(metadata bytea)
RETURNS text[]
AS 'MODULE_PATHNAME', 'el_kafka_subscription_topics'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@._kafka_subscription_topics(bytea) IS
'internal: the topics of a consumer''s subscription (ConsumerProtocolSubscription), NULL if malformed';

CREATE FUNCTION @extschema@._kafka_settings()
RETURNS integer[]
AS 'MODULE_PATHNAME', 'el_kafka_group_settings'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@._kafka_settings() IS
'internal: eventlog.kafka_initial_rebalance_delay, kafka_min_session_timeout and kafka_max_session_timeout, in milliseconds';

-- A Kafka group id pg_eventlog can store: 1 to 200 characters, like an SQL group name.
CREATE FUNCTION @extschema@._kafka_valid_group(group_name text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN group_name IS NOT NULL AND group_name OPERATOR(pg_catalog.<>) ''
       AND pg_catalog.length(group_name) OPERATOR(pg_catalog.<=) 200;
COMMENT ON FUNCTION @extschema@._kafka_valid_group(text) IS
'internal: whether a Kafka group id is valid here (else INVALID_GROUP_ID)';

CREATE FUNCTION @extschema@._lock_kafka_group(group_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_kafka_group'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_kafka_group(text) IS
'internal: waits for a Kafka group''s lock (kind 4)';

CREATE FUNCTION @extschema@._try_lock_kafka_group(group_name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_lock_kafka_group'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_lock_kafka_group(text) IS
'internal: takes a Kafka group''s lock (kind 4) if it is free';

CREATE FUNCTION @extschema@._kafka_lock(group_name text)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT @extschema@._lock_kafka_group(group_name);
END;
COMMENT ON FUNCTION @extschema@._kafka_lock(text) IS
'internal: the Kafka group''s lock (kind 4), exclusive, to the end of the transaction';

/*
 * Whether the caller may use the group: it may consume from every topic the
 * group has positions in, every existing topic its members subscribe to,
 * and every existing topic of "topics" (a joining member's subscription).
 */
CREATE FUNCTION @extschema@._kafka_authorized(group_name text, topics text[] DEFAULT NULL)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT coalesce(pg_catalog.bool_and(@extschema@.has_topic_privilege(@extschema@._caller(), c.name, 'consume')), true)
      FROM @extschema@.topic_catalog c
     WHERE c.topic_id IN (SELECT o.topic_id FROM @extschema@.group_offsets o
                           WHERE o.group_name OPERATOR(pg_catalog.=) _kafka_authorized.group_name)
        OR c.name OPERATOR(pg_catalog.=) ANY (topics)
        OR c.name IN (SELECT t.t FROM @extschema@.kafka_group_members k, unnest(k.protocols) p,
                             unnest(@extschema@._kafka_subscription_topics(p.metadata)) t(t)
                       WHERE k.group_name OPERATOR(pg_catalog.=) _kafka_authorized.group_name);
END;
COMMENT ON FUNCTION @extschema@._kafka_authorized(text, text[]) IS
'internal: whether the caller may consume every topic the group has positions in or its members subscribe to, and every existing topic of topics';

-- The protocol every member supports that most members prefer.
CREATE FUNCTION @extschema@._kafka_select_protocol(group_name text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH m AS (SELECT k.member_id, k.protocols FROM @extschema@.kafka_group_members k
                WHERE k.group_name = _kafka_select_protocol.group_name AND NOT k.pending),
         cand AS (SELECT p.name FROM m, unnest(m.protocols) p
                   GROUP BY p.name HAVING count(DISTINCT m.member_id) = (SELECT count(*) FROM m)),
         votes AS (SELECT (SELECT p.name FROM unnest(m.protocols) WITH ORDINALITY AS p(name, metadata, ord)
                            WHERE p.name IN (SELECT cand.name FROM cand) ORDER BY p.ord LIMIT 1) AS vote
                     FROM m)
    SELECT votes.vote FROM votes WHERE votes.vote IS NOT NULL
     GROUP BY votes.vote ORDER BY count(*) DESC, votes.vote LIMIT 1;
END;
COMMENT ON FUNCTION @extschema@._kafka_select_protocol(text) IS
'internal: the group''s protocol for the next generation: supported by every member, preferred by most';

/*
 * Kafka's supportsProtocols: an empty group takes any non-empty protocol
 * type and list; otherwise the type must match and one of the protocols
 * must be supported by every member.
 */
CREATE FUNCTION @extschema@._kafka_supports(group_name text, protocol_type text,
                                           protocols @extschema@.kafka_protocol[])
RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n bigint;
BEGIN
    IF coalesce(protocol_type, '') = '' OR coalesce(cardinality(protocols), 0) = 0 THEN
        RETURN false;
    END IF;
    SELECT count(*) INTO n FROM @extschema@.kafka_group_members k
     WHERE k.group_name = _kafka_supports.group_name AND NOT k.pending;
    IF n = 0 THEN
        RETURN true;
    END IF;
    RETURN EXISTS (SELECT FROM @extschema@.kafka_groups g
                    WHERE g.group_name = _kafka_supports.group_name
                      AND g.protocol_type = _kafka_supports.protocol_type)
       AND EXISTS (SELECT FROM unnest(protocols) mine
                    WHERE (SELECT count(*) FROM @extschema@.kafka_group_members k
                            WHERE k.group_name = _kafka_supports.group_name AND NOT k.pending
                              AND EXISTS (SELECT FROM unnest(k.protocols) p WHERE p.name = mine.name)) = n);
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_supports(text, text, @extschema@.kafka_protocol[]) IS
'internal: whether a member with this protocol type and these protocols may join the group (else INCONSISTENT_GROUP_PROTOCOL)';

/*
 * PreparingRebalance from Empty, Stable or CompletingRebalance (Kafka's
 * maybePrepareRebalance): assignments of a generation being synced are
 * dropped (waiting SyncGroups get REBALANCE_IN_PROGRESS); the join waits
 * for every member up to the largest rebalance timeout, and from Empty for
 * the initial delay first.
 */
CREATE FUNCTION @extschema@._kafka_prepare_rebalance(group_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st text;
    rt integer;
    delay integer := (@extschema@._kafka_settings())[1];
BEGIN
    SELECT g.state INTO st FROM @extschema@.kafka_groups g WHERE g.group_name = _kafka_prepare_rebalance.group_name;
    IF NOT FOUND OR st NOT IN ('Empty', 'Stable', 'CompletingRebalance') THEN
        RETURN;
    END IF;
    IF st = 'CompletingRebalance' THEN
        UPDATE @extschema@.kafka_group_members k SET assignment = NULL
         WHERE k.group_name = _kafka_prepare_rebalance.group_name;
    END IF;
    SELECT coalesce(max(k.rebalance_timeout_ms), 0) INTO rt FROM @extschema@.kafka_group_members k
     WHERE k.group_name = _kafka_prepare_rebalance.group_name AND NOT k.pending;
    UPDATE @extschema@.kafka_groups g
       SET state = 'PreparingRebalance', new_member_added = false,
           delay_until = CASE WHEN st = 'Empty' THEN now() + delay * interval '1 ms' END,
           rebalance_deadline = now() + CASE WHEN st = 'Empty' THEN greatest(rt, delay) ELSE rt END * interval '1 ms'
     WHERE g.group_name = _kafka_prepare_rebalance.group_name;
    PERFORM @extschema@._kafka_group_touch(group_name);
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_prepare_rebalance(text) IS
'internal: starts a rebalance of the group (PreparingRebalance), if it is not in one';

/*
 * Completes the join of a rebalance when every member has rejoined and no
 * member id handed out is pending, or when the rebalance timeout passed
 * (the initial delay of an empty group's first rebalance instead waits its
 * delays out): members that did not rejoin are removed, the generation
 * moves on, the protocol is chosen, and the group goes to
 * CompletingRebalance (or Empty, with no members).
 */
CREATE FUNCTION @extschema@._kafka_maybe_complete(group_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    grp @extschema@.kafka_groups;
    delay integer := (@extschema@._kafka_settings())[1];
    new_leader text;
BEGIN
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    IF NOT FOUND OR grp.state <> 'PreparingRebalance' THEN
        RETURN;
    END IF;
    IF grp.delay_until IS NOT NULL THEN
        IF now() < grp.delay_until THEN
            RETURN;
        END IF;
        IF grp.new_member_added AND now() < grp.rebalance_deadline THEN
            UPDATE @extschema@.kafka_groups k
               SET new_member_added = false,
                   delay_until = least(now() + delay * interval '1 ms', grp.rebalance_deadline)
             WHERE k.group_name = g;
            RETURN;
        END IF;
    ELSIF now() < grp.rebalance_deadline
          AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                       WHERE k.group_name = g AND (k.pending OR NOT k.awaiting_join)) THEN
        RETURN;
    END IF;
    DELETE FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND NOT k.pending AND NOT k.awaiting_join;
    SELECT k.member_id INTO new_leader FROM @extschema@.kafka_group_members k
     WHERE k.group_name = g AND NOT k.pending
     ORDER BY k.member_id IS DISTINCT FROM grp.leader, k.joined_at, k.member_id LIMIT 1;
    IF new_leader IS NULL THEN
        UPDATE @extschema@.kafka_groups k
           SET generation = k.generation + 1, state = 'Empty', protocol_type = NULL, protocol_name = NULL,
               leader = NULL, delay_until = NULL, rebalance_deadline = NULL, new_member_added = false
         WHERE k.group_name = g;
    ELSE
        UPDATE @extschema@.kafka_groups k
           SET generation = k.generation + 1, state = 'CompletingRebalance',
               protocol_name = @extschema@._kafka_select_protocol(g),
               leader = new_leader, delay_until = NULL, rebalance_deadline = NULL, new_member_added = false
         WHERE k.group_name = g;
        UPDATE @extschema@.kafka_group_members k
           SET awaiting_join = false, joined_generation = (SELECT x.generation FROM @extschema@.kafka_groups x WHERE x.group_name = g),
               last_heartbeat = now(), assignment = NULL
         WHERE k.group_name = g AND NOT k.pending;
    END IF;
    PERFORM @extschema@._kafka_group_touch(g);
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_maybe_complete(text) IS
'internal: completes the join phase of a rebalance whose members have all rejoined or whose timeout passed';

/*
 * Removes a member (left, expired or replaced): a new leader if it led, and
 * a rebalance (Stable, CompletingRebalance) or perhaps the completion of
 * the one in progress.
 */
CREATE FUNCTION @extschema@._kafka_remove_member(group_name text, member_id text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    was_pending boolean;
BEGIN
    DELETE FROM @extschema@.kafka_group_members k
     WHERE k.group_name = g AND k.member_id = _kafka_remove_member.member_id
    RETURNING k.pending INTO was_pending;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM @extschema@._kafka_group_touch(g);
    IF NOT was_pending THEN
        UPDATE @extschema@.kafka_groups x
           SET leader = (SELECT k.member_id FROM @extschema@.kafka_group_members k
                          WHERE k.group_name = g AND NOT k.pending ORDER BY k.joined_at, k.member_id LIMIT 1)
         WHERE x.group_name = g AND x.leader = _kafka_remove_member.member_id;
        PERFORM @extschema@._kafka_prepare_rebalance(g);
    END IF;
    PERFORM @extschema@._kafka_maybe_complete(g);
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_remove_member(text, text) IS
'internal: removes a member from a Kafka group and rebalances';

/*
 * Session timeouts: members (and pending member ids) whose last heartbeat
 * is older than their session timeout are removed.  A member waiting in a
 * JoinGroup is kept (Kafka keeps it alive while it waits); a waiting
 * SyncGroup refreshes its member's heartbeat each time it looks.
 */
CREATE FUNCTION @extschema@._kafka_expire(group_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m text;
BEGIN
    FOR m IN SELECT k.member_id FROM @extschema@.kafka_group_members k
              WHERE k.group_name = _kafka_expire.group_name AND NOT k.awaiting_join
                AND k.last_heartbeat + k.session_timeout_ms * interval '1 ms' <= now()
              ORDER BY k.member_id
    LOOP
        PERFORM @extschema@._kafka_remove_member(group_name, m);
    END LOOP;
    PERFORM @extschema@._kafka_maybe_complete(group_name);
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_expire(text) IS
'internal: removes the group''s members past their session timeout and completes a rebalance whose time has come';

/*
 * The maintenance worker's round (src/kafka_group.c): expire the members of
 * groups no request serves any more, and complete their rebalances whose
 * time has come.  A group whose lock is taken is being served: skipped.
 */
CREATE FUNCTION @extschema@._kafka_expire_groups()
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text;
    n integer := 0;
BEGIN
    FOR g IN SELECT k.group_name FROM @extschema@.kafka_groups k
              WHERE k.rebalance_deadline <= now() OR k.delay_until <= now()
                 OR EXISTS (SELECT FROM @extschema@.kafka_group_members m
                             WHERE m.group_name = k.group_name AND NOT m.awaiting_join
                               AND m.last_heartbeat + m.session_timeout_ms * interval '1 ms' <= now())
              ORDER BY k.group_name
    LOOP
        IF @extschema@._try_lock_kafka_group(g) THEN
            PERFORM @extschema@._kafka_expire(g);
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_expire_groups() IS
'internal: the maintenance worker''s expiry of Kafka group members past their session timeout; returns how many groups it looked at';

-- When a waiter must look again at the latest: a deadline of the group, the
-- next expiry of another member, or half its own session timeout.
CREATE FUNCTION @extschema@._kafka_next_wake(group_name text, member_id text)
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT least(
        (SELECT least(g.rebalance_deadline, g.delay_until) FROM @extschema@.kafka_groups g
          WHERE g.group_name = _kafka_next_wake.group_name),
        (SELECT min(k.last_heartbeat + k.session_timeout_ms * interval '1 ms') FROM @extschema@.kafka_group_members k
          WHERE k.group_name = _kafka_next_wake.group_name AND NOT k.awaiting_join
            AND k.member_id <> _kafka_next_wake.member_id),
        (SELECT now() + k.session_timeout_ms * interval '0.5 ms' FROM @extschema@.kafka_group_members k
          WHERE k.group_name = _kafka_next_wake.group_name AND k.member_id = _kafka_next_wake.member_id),
        now() + interval '1 minute') + interval '1 ms';
END;
COMMENT ON FUNCTION @extschema@._kafka_next_wake(text, text) IS
'internal: when a waiting JoinGroup or SyncGroup looks at its group again if nothing wakes it';

CREATE FUNCTION @extschema@._kafka_error(error_code integer, member_id text DEFAULT '', epoch bigint DEFAULT NULL)
RETURNS @extschema@._kafka_step
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN ROW(error_code::smallint, -1, NULL, NULL, '', coalesce(member_id, ''), '{}', NULL, NULL, epoch)::@extschema@._kafka_step;
COMMENT ON FUNCTION @extschema@._kafka_error(integer, text, bigint) IS
'internal: a JoinGroup or SyncGroup result that is an error';

/*
 * The JoinGroup result of a member: a wait while it is awaiting the join,
 * else its generation (the member list for the leader only).
 */
CREATE FUNCTION @extschema@._kafka_join_state(group_name text, member_id text, epoch bigint)
RETURNS @extschema@._kafka_step
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    m text := member_id;
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
    r @extschema@._kafka_step;
BEGIN
    SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
    IF NOT FOUND OR mem.pending THEN
        RETURN @extschema@._kafka_error(25, m, epoch);
    END IF;
    r.epoch := epoch;
    r.member_id := m;
    IF mem.awaiting_join THEN
        r.wake_at := @extschema@._kafka_next_wake(g, m);
        RETURN r;
    END IF;
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    r.error_code := 0;
    r.generation := mem.joined_generation;
    r.protocol_type := grp.protocol_type;
    r.protocol_name := grp.protocol_name;
    r.leader := coalesce(grp.leader, '');
    IF grp.leader = m THEN
        SELECT coalesce(array_agg(ROW(k.member_id, k.group_instance_id,
                                      (SELECT p.metadata FROM unnest(k.protocols) p WHERE p.name = grp.protocol_name LIMIT 1)
                                     )::@extschema@.kafka_member ORDER BY k.joined_at, k.member_id), '{}')
          INTO r.members
          FROM @extschema@.kafka_group_members k
         WHERE k.group_name = g AND NOT k.pending AND k.joined_generation = mem.joined_generation;
    ELSE
        r.members := '{}';
    END IF;
    RETURN r;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_join_state(text, text, bigint) IS
'internal: a member''s JoinGroup result, or a wait while its join is not complete';

CREATE FUNCTION @extschema@.__kafka_join_begin(group_name text, member_id text, group_instance_id text,
                                              protocol_type text, protocols @extschema@.kafka_protocol[],
                                              session_timeout_ms integer, rebalance_timeout_ms integer,
                                              client_id text, client_host text,
                                              require_known_member_id boolean)
RETURNS @extschema@._kafka_step
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    m text := coalesce(member_id, '');
    inst text := group_instance_id;
    settings integer[] := @extschema@._kafka_settings();
    epoch bigint := @extschema@._kafka_group_epoch(coalesce(group_name, ''));
    rt integer := CASE WHEN coalesce(rebalance_timeout_ms, -1) < 0 THEN session_timeout_ms ELSE rebalance_timeout_ms END;
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
    other text;
    topics text[];
    adding boolean := false;
BEGIN
    IF NOT @extschema@._kafka_valid_group(g) THEN
        RETURN @extschema@._kafka_error(24, m, epoch);
    END IF;
    IF session_timeout_ms IS NULL OR session_timeout_ms < settings[2] OR session_timeout_ms > settings[3] THEN
        RETURN @extschema@._kafka_error(26, m, epoch);
    END IF;
    IF coalesce(protocol_type, '') = '' OR coalesce(cardinality(protocols), 0) = 0
       OR EXISTS (SELECT FROM unnest(protocols) p WHERE p.name IS NULL) THEN
        RETURN @extschema@._kafka_error(23, m, epoch);
    END IF;
    IF protocol_type = 'consumer' THEN
        SELECT array_agg(DISTINCT t) INTO topics
          FROM unnest(protocols) p, unnest(@extschema@._kafka_subscription_topics(p.metadata)) t;
    END IF;
    IF NOT @extschema@._kafka_authorized(g, topics) THEN
        RETURN @extschema@._kafka_error(30, m, epoch);
    END IF;
    -- An SQL member-style consumer of the same group name is live: the two
    -- kinds of members cannot share partitions.
    IF EXISTS (SELECT FROM @extschema@.group_members s
                WHERE s.group_name = g AND s.last_heartbeat + s.session_timeout > now()) THEN
        RETURN @extschema@._kafka_error(23, m, epoch);
    END IF;
    PERFORM @extschema@._kafka_lock(g);
    PERFORM @extschema@._kafka_expire(g);
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    IF m = '' THEN
        IF grp.group_name IS NULL THEN
            INSERT INTO @extschema@.kafka_groups (group_name) VALUES (g);
        END IF;
        IF NOT @extschema@._kafka_supports(g, protocol_type, protocols) THEN
            RETURN @extschema@._kafka_error(23, m, epoch);
        END IF;
        m := coalesce(client_id, '') || '-' || gen_random_uuid();
        IF inst IS NOT NULL THEN
            -- A static member's new incarnation replaces the old one.
            SELECT k.member_id INTO other FROM @extschema@.kafka_group_members k
             WHERE k.group_name = g AND k.group_instance_id = inst;
            IF other IS NOT NULL THEN
                PERFORM @extschema@._kafka_remove_member(g, other);
            END IF;
        ELSIF coalesce(require_known_member_id, false) THEN
            INSERT INTO @extschema@.kafka_group_members
                   (group_name, member_id, client_id, client_host, session_timeout_ms, rebalance_timeout_ms, pending)
            VALUES (g, m, coalesce(client_id, ''), coalesce(client_host, ''), session_timeout_ms, rt, true);
            PERFORM @extschema@._kafka_group_touch(g);
            RETURN @extschema@._kafka_error(79, m, epoch);
        END IF;
        adding := true;
    ELSE
        IF grp.group_name IS NULL THEN
            RETURN @extschema@._kafka_error(25, m, epoch);
        END IF;
        IF NOT @extschema@._kafka_supports(g, protocol_type, protocols) THEN
            RETURN @extschema@._kafka_error(23, m, epoch);
        END IF;
        SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
        IF mem.pending THEN
            DELETE FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
            adding := true;
        ELSE
            IF inst IS NOT NULL AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                                             WHERE k.group_name = g AND k.group_instance_id = inst
                                               AND k.member_id <> m) THEN
                RETURN @extschema@._kafka_error(82, m, epoch);
            END IF;
            IF mem.member_id IS NULL OR grp.state = 'Empty' THEN
                RETURN @extschema@._kafka_error(25, m, epoch);
            END IF;
            -- A follower (or a member of a generation being synced)
            -- rejoining with the same protocols gets its generation again;
            -- anything else starts a rebalance.
            IF NOT ((grp.state = 'CompletingRebalance' OR (grp.state = 'Stable' AND grp.leader <> m))
                    AND mem.protocols = protocols) THEN
                UPDATE @extschema@.kafka_group_members k
                   SET protocols = __kafka_join_begin.protocols, awaiting_join = true,
                       session_timeout_ms = __kafka_join_begin.session_timeout_ms,
                       rebalance_timeout_ms = rt, last_heartbeat = now()
                 WHERE k.group_name = g AND k.member_id = m;
                PERFORM @extschema@._kafka_group_touch(g);
                PERFORM @extschema@._kafka_prepare_rebalance(g);
                PERFORM @extschema@._kafka_maybe_complete(g);
            END IF;
        END IF;
    END IF;
    IF adding THEN
        INSERT INTO @extschema@.kafka_group_members
               (group_name, member_id, group_instance_id, client_id, client_host,
                session_timeout_ms, rebalance_timeout_ms, protocols, awaiting_join)
        VALUES (g, m, inst, coalesce(client_id, ''), coalesce(client_host, ''),
                session_timeout_ms, rt, protocols, true);
        UPDATE @extschema@.kafka_groups k
           SET leader = coalesce(k.leader, m), protocol_type = coalesce(k.protocol_type, __kafka_join_begin.protocol_type),
               new_member_added = k.new_member_added OR k.state = 'PreparingRebalance'
         WHERE k.group_name = g;
        PERFORM @extschema@._kafka_group_touch(g);
        PERFORM @extschema@._kafka_prepare_rebalance(g);
        PERFORM @extschema@._kafka_maybe_complete(g);
    END IF;
    RETURN @extschema@._kafka_join_state(g, m, epoch);
END
$$;
COMMENT ON FUNCTION @extschema@.__kafka_join_begin(text, text, text, text, @extschema@.kafka_protocol[], integer, integer, text, text, boolean) IS
'internal: the first step of a JoinGroup, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@._kafka_join_begin(group_name text, member_id text, group_instance_id text,
                                             protocol_type text, protocols @extschema@.kafka_protocol[],
                                             session_timeout_ms integer, rebalance_timeout_ms integer,
                                             client_id text, client_host text,
                                             require_known_member_id boolean)
RETURNS @extschema@._kafka_step
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_join_begin(text, text, text, text, @extschema@.kafka_protocol[], integer, integer, text, text, boolean) IS
'internal: the first step of eventlog.kafka_join_group';

CREATE FUNCTION @extschema@.__kafka_join_check(group_name text, member_id text)
RETURNS @extschema@._kafka_step
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    epoch bigint := @extschema@._kafka_group_epoch(group_name);
BEGIN
    PERFORM @extschema@._kafka_lock(group_name);
    PERFORM @extschema@._kafka_expire(group_name);
    IF NOT @extschema@._kafka_authorized(group_name) THEN
        RETURN @extschema@._kafka_error(30, member_id, epoch);
    END IF;
    RETURN @extschema@._kafka_join_state(group_name, member_id, epoch);
END
$$;
COMMENT ON FUNCTION @extschema@.__kafka_join_check(text, text) IS
'internal: a later step of a JoinGroup, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@._kafka_join_check(group_name text, member_id text)
RETURNS @extschema@._kafka_step
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_join_check(text, text) IS
'internal: a later step of eventlog.kafka_join_group';

CREATE PROCEDURE @extschema@.kafka_join_group(
    group_name text, member_id text, group_instance_id text, protocol_type text,
    protocols @extschema@.kafka_protocol[], session_timeout_ms integer, rebalance_timeout_ms integer,
    client_id text, client_host text, require_known_member_id boolean,
    INOUT error_code smallint DEFAULT NULL, INOUT generation integer DEFAULT NULL,
    INOUT protocol_type_out text DEFAULT NULL, INOUT protocol_name text DEFAULT NULL,
    INOUT leader text DEFAULT NULL, INOUT member_id_out text DEFAULT NULL,
    INOUT members @extschema@.kafka_member[] DEFAULT NULL)
LANGUAGE plpgsql
AS $$
DECLARE
    s @extschema@._kafka_step;
BEGIN
    s := @extschema@._kafka_join_begin(group_name, member_id, group_instance_id, protocol_type, protocols,
                                       session_timeout_ms, rebalance_timeout_ms, client_id, client_host,
                                       require_known_member_id);
    WHILE s.error_code IS NULL LOOP
        COMMIT;
        CALL @extschema@._kafka_group_wait(group_name, s.epoch, s.wake_at);
        s := @extschema@._kafka_join_check(group_name, s.member_id);
    END LOOP;
    error_code := s.error_code;
    generation := s.generation;
    protocol_type_out := s.protocol_type;
    protocol_name := s.protocol_name;
    leader := s.leader;
    member_id_out := s.member_id;
    members := s.members;
END
$$;
COMMENT ON PROCEDURE @extschema@.kafka_join_group(text, text, text, text, @extschema@.kafka_protocol[], integer, integer, text, text, boolean, smallint, integer, text, text, text, text, @extschema@.kafka_member[]) IS
'Kafka JoinGroup: joins (or rejoins) a Kafka group and waits for the rebalance''s join phase; returns the Kafka error code, generation, protocol, leader, the member id and, for the leader, the members; CALL it outside a transaction block (it commits while it waits)';

/*
 * A member's SyncGroup result: its assignment once the leader stored the
 * generation's, REBALANCE_IN_PROGRESS when a rebalance started meanwhile, a
 * wait while the leader has not synced.
 */
CREATE FUNCTION @extschema@._kafka_sync_state(group_name text, generation integer, member_id text, epoch bigint)
RETURNS @extschema@._kafka_step
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    m text := member_id;
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
    r @extschema@._kafka_step;
BEGIN
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
    IF grp.group_name IS NULL OR mem.member_id IS NULL OR mem.pending OR grp.state = 'Empty' THEN
        RETURN @extschema@._kafka_error(25, m, epoch);
    END IF;
    IF grp.generation <> _kafka_sync_state.generation OR grp.state = 'PreparingRebalance' THEN
        RETURN @extschema@._kafka_error(27, m, epoch);
    END IF;
    r.epoch := epoch;
    r.member_id := m;
    r.protocol_type := grp.protocol_type;
    r.protocol_name := grp.protocol_name;
    IF grp.state = 'Stable' THEN
        r.error_code := 0;
        r.generation := grp.generation;
        r.assignment := coalesce(mem.assignment, '\x');
    ELSE
        -- The member waits, alive.
        UPDATE @extschema@.kafka_group_members k SET last_heartbeat = now()
         WHERE k.group_name = g AND k.member_id = m;
        r.wake_at := @extschema@._kafka_next_wake(g, m);
    END IF;
    RETURN r;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_sync_state(text, integer, text, bigint) IS
'internal: a member''s SyncGroup result, or a wait while the leader has not synced';

CREATE FUNCTION @extschema@.__kafka_sync_begin(group_name text, generation integer, member_id text,
                                              group_instance_id text, protocol_type text, protocol_name text,
                                              assignments @extschema@.kafka_assignment[])
RETURNS @extschema@._kafka_step
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    m text := coalesce(member_id, '');
    epoch bigint := @extschema@._kafka_group_epoch(coalesce(group_name, ''));
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
BEGIN
    IF NOT @extschema@._kafka_valid_group(g) THEN
        RETURN @extschema@._kafka_error(24, m, epoch);
    END IF;
    PERFORM @extschema@._kafka_lock(g);
    PERFORM @extschema@._kafka_expire(g);
    IF NOT @extschema@._kafka_authorized(g) THEN
        RETURN @extschema@._kafka_error(30, m, epoch);
    END IF;
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    IF grp.group_name IS NULL THEN
        RETURN @extschema@._kafka_error(25, m, epoch);
    END IF;
    IF group_instance_id IS NOT NULL AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                                                  WHERE k.group_name = g AND k.group_instance_id = __kafka_sync_begin.group_instance_id
                                                    AND k.member_id <> m) THEN
        RETURN @extschema@._kafka_error(82, m, epoch);
    END IF;
    SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
    IF mem.member_id IS NULL OR mem.pending THEN
        RETURN @extschema@._kafka_error(25, m, epoch);
    END IF;
    IF __kafka_sync_begin.generation IS DISTINCT FROM grp.generation THEN
        RETURN @extschema@._kafka_error(22, m, epoch);
    END IF;
    IF (__kafka_sync_begin.protocol_type IS NOT NULL AND __kafka_sync_begin.protocol_type IS DISTINCT FROM grp.protocol_type)
       OR (__kafka_sync_begin.protocol_name IS NOT NULL AND __kafka_sync_begin.protocol_name IS DISTINCT FROM grp.protocol_name) THEN
        RETURN @extschema@._kafka_error(23, m, epoch);
    END IF;
    IF grp.state = 'CompletingRebalance' THEN
        UPDATE @extschema@.kafka_group_members k SET last_heartbeat = now()
         WHERE k.group_name = g AND k.member_id = m;
        IF grp.leader = m THEN
            -- Members the leader left out get an empty assignment.
            UPDATE @extschema@.kafka_group_members k
               SET assignment = coalesce((SELECT a.assignment FROM unnest(assignments) a
                                           WHERE a.member_id = k.member_id AND a.assignment IS NOT NULL LIMIT 1), '\x')
             WHERE k.group_name = g AND NOT k.pending;
            UPDATE @extschema@.kafka_groups k SET state = 'Stable' WHERE k.group_name = g;
            PERFORM @extschema@._kafka_group_touch(g);
        END IF;
    END IF;
    RETURN @extschema@._kafka_sync_state(g, grp.generation, m, epoch);
END
$$;
COMMENT ON FUNCTION @extschema@.__kafka_sync_begin(text, integer, text, text, text, text, @extschema@.kafka_assignment[]) IS
'internal: the first step of a SyncGroup, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@._kafka_sync_begin(group_name text, generation integer, member_id text,
                                             group_instance_id text, protocol_type text, protocol_name text,
                                             assignments @extschema@.kafka_assignment[])
RETURNS @extschema@._kafka_step
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_sync_begin(text, integer, text, text, text, text, @extschema@.kafka_assignment[]) IS
'internal: the first step of eventlog.kafka_sync_group';

CREATE FUNCTION @extschema@.__kafka_sync_check(group_name text, generation integer, member_id text)
RETURNS @extschema@._kafka_step
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    epoch bigint := @extschema@._kafka_group_epoch(group_name);
BEGIN
    PERFORM @extschema@._kafka_lock(group_name);
    PERFORM @extschema@._kafka_expire(group_name);
    IF NOT @extschema@._kafka_authorized(group_name) THEN
        RETURN @extschema@._kafka_error(30, member_id, epoch);
    END IF;
    RETURN @extschema@._kafka_sync_state(group_name, generation, member_id, epoch);
END
$$;
COMMENT ON FUNCTION @extschema@.__kafka_sync_check(text, integer, text) IS
'internal: a later step of a SyncGroup, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@._kafka_sync_check(group_name text, generation integer, member_id text)
RETURNS @extschema@._kafka_step
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_sync_check(text, integer, text) IS
'internal: a later step of eventlog.kafka_sync_group';

CREATE PROCEDURE @extschema@.kafka_sync_group(
    group_name text, generation integer, member_id text, group_instance_id text,
    protocol_type text, protocol_name text, assignments @extschema@.kafka_assignment[],
    INOUT error_code smallint DEFAULT NULL, INOUT protocol_type_out text DEFAULT NULL,
    INOUT protocol_name_out text DEFAULT NULL, INOUT assignment bytea DEFAULT NULL)
LANGUAGE plpgsql
AS $$
DECLARE
    s @extschema@._kafka_step;
BEGIN
    s := @extschema@._kafka_sync_begin(group_name, generation, member_id, group_instance_id,
                                       protocol_type, protocol_name, assignments);
    WHILE s.error_code IS NULL LOOP
        COMMIT;
        CALL @extschema@._kafka_group_wait(group_name, s.epoch, s.wake_at);
        s := @extschema@._kafka_sync_check(group_name, generation, s.member_id);
    END LOOP;
    error_code := s.error_code;
    protocol_type_out := s.protocol_type;
    protocol_name_out := s.protocol_name;
    assignment := coalesce(s.assignment, '\x');
END
$$;
COMMENT ON PROCEDURE @extschema@.kafka_sync_group(text, integer, text, text, text, text, @extschema@.kafka_assignment[], smallint, text, text, bytea) IS
'Kafka SyncGroup: the leader stores the generation''s assignments; every member gets its own, a follower waiting for the leader''s; CALL it outside a transaction block (it commits while it waits)';

CREATE FUNCTION @extschema@._kafka_heartbeat(group_name text, generation integer, member_id text,
                                            group_instance_id text DEFAULT NULL)
RETURNS smallint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    m text := coalesce(member_id, '');
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
BEGIN
    IF NOT @extschema@._kafka_valid_group(g) THEN
        RETURN 24;
    END IF;
    PERFORM @extschema@._kafka_lock(g);
    PERFORM @extschema@._kafka_expire(g);
    IF NOT @extschema@._kafka_authorized(g) THEN
        RETURN 30;
    END IF;
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    IF grp.group_name IS NULL THEN
        RETURN 25;
    END IF;
    IF group_instance_id IS NOT NULL AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                                                  WHERE k.group_name = g AND k.group_instance_id = _kafka_heartbeat.group_instance_id
                                                    AND k.member_id <> m) THEN
        RETURN 82;
    END IF;
    SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
    IF mem.member_id IS NULL OR mem.pending THEN
        RETURN 25;
    END IF;
    IF _kafka_heartbeat.generation IS DISTINCT FROM grp.generation THEN
        RETURN 22;
    END IF;
    IF grp.state = 'Empty' THEN
        RETURN 25;
    END IF;
    UPDATE @extschema@.kafka_group_members k SET last_heartbeat = now()
     WHERE k.group_name = g AND k.member_id = m;
    RETURN CASE WHEN grp.state = 'PreparingRebalance' THEN 27 ELSE 0 END;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_heartbeat(text, integer, text, text) IS
'internal: the body of eventlog.kafka_heartbeat, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@.kafka_heartbeat(group_name text, generation integer, member_id text,
                                           group_instance_id text DEFAULT NULL)
RETURNS smallint
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_heartbeat(text, integer, text, text) IS
'Kafka Heartbeat: keeps a member alive; returns the Kafka error code (REBALANCE_IN_PROGRESS 27 asks it to rejoin)';

CREATE FUNCTION @extschema@._kafka_leave_group(group_name text, members @extschema@.kafka_member_identity[])
RETURNS TABLE (member_id text, group_instance_id text, error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    who @extschema@.kafka_member_identity;
    mem @extschema@.kafka_group_members;
    found_group boolean;
BEGIN
    IF members IS NULL THEN
        RAISE EXCEPTION 'members must not be null' USING ERRCODE = '22004';
    END IF;
    IF @extschema@._kafka_valid_group(g) THEN
        PERFORM @extschema@._kafka_lock(g);
        PERFORM @extschema@._kafka_expire(g);
    END IF;
    found_group := EXISTS (SELECT FROM @extschema@.kafka_groups k WHERE k.group_name = g);
    FOREACH who IN ARRAY members LOOP
        member_id := coalesce(who.member_id, '');
        group_instance_id := who.group_instance_id;
        mem := NULL;
        IF NOT @extschema@._kafka_valid_group(g) THEN
            error_code := 24;
        ELSIF NOT @extschema@._kafka_authorized(g) THEN
            error_code := 30;
        ELSIF NOT found_group THEN
            error_code := 25;
        ELSIF member_id = '' THEN
            SELECT * INTO mem FROM @extschema@.kafka_group_members k
             WHERE k.group_name = g AND k.group_instance_id = who.group_instance_id;
            error_code := CASE WHEN mem.member_id IS NULL THEN 25 ELSE 0 END;
        ELSE
            SELECT * INTO mem FROM @extschema@.kafka_group_members k
             WHERE k.group_name = g AND k.member_id = _kafka_leave_group.member_id;
            IF mem.member_id IS NOT NULL AND NOT mem.pending AND who.group_instance_id IS NOT NULL
               AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                            WHERE k.group_name = g AND k.group_instance_id = who.group_instance_id
                              AND k.member_id <> _kafka_leave_group.member_id) THEN
                error_code := 82;
                mem := NULL;
            ELSE
                error_code := CASE WHEN mem.member_id IS NULL THEN 25 ELSE 0 END;
            END IF;
        END IF;
        IF mem.member_id IS NOT NULL THEN
            PERFORM @extschema@._kafka_remove_member(g, mem.member_id);
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_leave_group(text, @extschema@.kafka_member_identity[]) IS
'internal: the body of eventlog.kafka_leave_group, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@.kafka_leave_group(group_name text, members @extschema@.kafka_member_identity[])
RETURNS TABLE (member_id text, group_instance_id text, error_code smallint)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_leave_group(text, @extschema@.kafka_member_identity[]) IS
'Kafka LeaveGroup: members leave (by member id, or by group instance id with an empty member id); one row per member with its Kafka error code';

-- Whether a group name exists for Kafka: a coordinator state, or positions.
CREATE FUNCTION @extschema@._kafka_group_exists(group_name text)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT EXISTS (SELECT FROM @extschema@.kafka_groups k WHERE k.group_name = _kafka_group_exists.group_name)
        OR EXISTS (SELECT FROM @extschema@.group_offsets o WHERE o.group_name = _kafka_group_exists.group_name);
END;
COMMENT ON FUNCTION @extschema@._kafka_group_exists(text) IS
'internal: whether Kafka sees the group: it has a coordinator state or committed positions';

CREATE FUNCTION @extschema@._kafka_describe_groups(group_names text[])
RETURNS TABLE (group_name text, error_code smallint, state text, protocol_type text,
               protocol_data text, members @extschema@.kafka_member_description[])
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    grp @extschema@.kafka_groups;
BEGIN
    IF group_names IS NULL THEN
        RAISE EXCEPTION 'group_names must not be null' USING ERRCODE = '22004';
    END IF;
    -- Several groups' locks: in name order, as kafka_list_groups takes them.
    PERFORM @extschema@._kafka_lock(n) FROM (SELECT DISTINCT n FROM unnest(group_names) n
                                              WHERE @extschema@._kafka_valid_group(n) ORDER BY n) x;
    FOREACH group_name IN ARRAY group_names LOOP
        error_code := 0;
        state := 'Dead';
        protocol_type := '';
        protocol_data := '';
        members := '{}';
        IF NOT @extschema@._kafka_valid_group(group_name) THEN
            error_code := 24;
        ELSIF NOT @extschema@._kafka_authorized(group_name) THEN
            error_code := 30;
        ELSE
            PERFORM @extschema@._kafka_lock(group_name);
            PERFORM @extschema@._kafka_expire(group_name);
            SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = _kafka_describe_groups.group_name;
            IF grp.group_name IS NOT NULL THEN
                state := grp.state;
                protocol_type := coalesce(grp.protocol_type, '');
                IF grp.state = 'Stable' THEN
                    protocol_data := grp.protocol_name;
                END IF;
                SELECT coalesce(array_agg(ROW(k.member_id, k.group_instance_id, k.client_id, k.client_host,
                           CASE WHEN grp.state = 'Stable' THEN
                                coalesce((SELECT p.metadata FROM unnest(k.protocols) p WHERE p.name = grp.protocol_name LIMIT 1), '\x')
                           ELSE '\x' END,
                           CASE WHEN grp.state = 'Stable' THEN coalesce(k.assignment, '\x') ELSE '\x' END
                          )::@extschema@.kafka_member_description ORDER BY k.joined_at, k.member_id), '{}')
                  INTO members
                  FROM @extschema@.kafka_group_members k
                 WHERE k.group_name = grp.group_name AND NOT k.pending;
            ELSIF @extschema@._kafka_group_exists(group_name) THEN
                state := 'Empty';
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_describe_groups(text[]) IS
'internal: the body of eventlog.kafka_describe_groups, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@.kafka_describe_groups(group_names text[])
RETURNS TABLE (group_name text, error_code smallint, state text, protocol_type text,
               protocol_data text, members @extschema@.kafka_member_description[])
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_describe_groups(text[]) IS
'Kafka DescribeGroups: each group''s state, protocol and members (metadata and assignments once Stable); an unknown group is Dead';

CREATE FUNCTION @extschema@._kafka_list_groups(states text[] DEFAULT NULL)
RETURNS TABLE (group_name text, protocol_type text, state text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Expire abandoned groups first, one lock at a time, in name order.
    FOR group_name IN SELECT k.group_name FROM @extschema@.kafka_groups k
                       WHERE k.state <> 'Empty' ORDER BY k.group_name LOOP
        PERFORM @extschema@._kafka_lock(group_name);
        PERFORM @extschema@._kafka_expire(group_name);
    END LOOP;
    RETURN QUERY
    SELECT n.group_name, coalesce(k.protocol_type, ''), coalesce(k.state, 'Empty')
      FROM (SELECT k2.group_name FROM @extschema@.kafka_groups k2
            UNION SELECT o.group_name FROM @extschema@.group_offsets o) n
      LEFT JOIN @extschema@.kafka_groups k ON k.group_name = n.group_name
     WHERE @extschema@._kafka_valid_group(n.group_name)
       AND (states IS NULL OR cardinality(states) = 0
            OR lower(coalesce(k.state, 'Empty')) IN (SELECT lower(s) FROM unnest(states) s))
       AND @extschema@._kafka_authorized(n.group_name)
     ORDER BY n.group_name;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_list_groups(text[]) IS
'internal: the body of eventlog.kafka_list_groups, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@.kafka_list_groups(states text[] DEFAULT NULL)
RETURNS TABLE (group_name text, protocol_type text, state text)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_list_groups(text[]) IS
'Kafka ListGroups: Kafka groups and groups with committed positions the caller may consume, optionally only in the given states';

CREATE FUNCTION @extschema@._kafka_delete_groups(group_names text[])
RETURNS TABLE (group_name text, error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    grp @extschema@.kafka_groups;
    t record;
BEGIN
    IF group_names IS NULL THEN
        RAISE EXCEPTION 'group_names must not be null' USING ERRCODE = '22004';
    END IF;
    -- Several groups' locks: in name order, as kafka_list_groups takes them.
    PERFORM @extschema@._kafka_lock(n) FROM (SELECT DISTINCT n FROM unnest(group_names) n
                                              WHERE @extschema@._kafka_valid_group(n) ORDER BY n) x;
    FOREACH group_name IN ARRAY group_names LOOP
        IF NOT @extschema@._kafka_valid_group(group_name) THEN
            error_code := 24;
            RETURN NEXT;
            CONTINUE;
        END IF;
        PERFORM @extschema@._kafka_lock(group_name);
        PERFORM @extschema@._kafka_expire(group_name);
        SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = _kafka_delete_groups.group_name;
        IF NOT @extschema@._kafka_group_exists(group_name) THEN
            error_code := 69;
        ELSIF NOT @extschema@._kafka_authorized(group_name) THEN
            error_code := 30;
        ELSIF grp.group_name IS NOT NULL AND grp.state <> 'Empty' THEN
            error_code := 68;
        ELSE
            error_code := 0;
            BEGIN
                -- The SQL side's rules: refused while an SQL consumer of
                -- the group is at work or a member is live.
                FOR t IN SELECT DISTINCT c.name FROM @extschema@.topic_catalog c
                          WHERE c.topic_id IN (SELECT o.topic_id FROM @extschema@.group_offsets o
                                                WHERE o.group_name = _kafka_delete_groups.group_name
                                               UNION SELECT gc.topic_id FROM @extschema@.group_catalog gc
                                                WHERE gc.group_name = _kafka_delete_groups.group_name)
                          ORDER BY c.name LOOP
                    PERFORM @extschema@._delete_group(t.name, group_name);
                END LOOP;
                DELETE FROM @extschema@.kafka_groups k WHERE k.group_name = _kafka_delete_groups.group_name;
                PERFORM @extschema@._kafka_group_touch(group_name);
            EXCEPTION WHEN object_not_in_prerequisite_state OR lock_not_available THEN
                error_code := 68;
            END;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_delete_groups(text[]) IS
'internal: the body of eventlog.kafka_delete_groups, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@.kafka_delete_groups(group_names text[])
RETURNS TABLE (group_name text, error_code smallint)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_delete_groups(text[]) IS
'Kafka DeleteGroups: deletes empty groups with their committed positions in every topic (NON_EMPTY_GROUP 68 while members or SQL consumers are at work, GROUP_ID_NOT_FOUND 69)';

/*
 * OffsetCommit: Kafka's validation (a member of the current generation, or
 * a simple consumer, generation -1 and no member id, while the group has no
 * members), then one group_offsets row per partition.
 */
CREATE FUNCTION @extschema@._kafka_offset_commit(group_name text, generation integer, member_id text,
                                                group_instance_id text, offsets @extschema@.kafka_offset[])
RETURNS TABLE (topic text, partition integer, error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    gen integer := coalesce(generation, -1);
    m text := coalesce(member_id, '');
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
    o @extschema@.kafka_offset;
    group_error smallint := 0;
    tid integer;
    nparts integer;
BEGIN
    IF offsets IS NULL THEN
        RAISE EXCEPTION 'offsets must not be null' USING ERRCODE = '22004';
    END IF;
    IF NOT @extschema@._kafka_valid_group(g) THEN
        group_error := 24;
    ELSE
        PERFORM @extschema@._kafka_lock(g);
        PERFORM @extschema@._kafka_expire(g);
        SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
        IF NOT @extschema@._kafka_authorized(g) THEN
            group_error := 30;
        ELSIF grp.group_name IS NULL THEN
            IF gen >= 0 THEN
                group_error := 22;
            END IF;
        ELSIF gen >= 0 OR m <> '' OR group_instance_id IS NOT NULL THEN
            SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
            IF group_instance_id IS NOT NULL AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                                                          WHERE k.group_name = g AND k.group_instance_id = _kafka_offset_commit.group_instance_id
                                                            AND k.member_id <> m) THEN
                group_error := 82;
            ELSIF mem.member_id IS NULL OR mem.pending THEN
                group_error := 25;
            ELSIF gen <> grp.generation THEN
                group_error := 22;
            ELSIF grp.state = 'CompletingRebalance' THEN
                group_error := 27;
            ELSE
                UPDATE @extschema@.kafka_group_members k SET last_heartbeat = now()
                 WHERE k.group_name = g AND k.member_id = m;
            END IF;
        ELSIF grp.state <> 'Empty' THEN
            group_error := 25;
        END IF;
    END IF;
    FOREACH o IN ARRAY offsets LOOP
        topic := o.topic;
        partition := o.partition;
        error_code := group_error;
        IF error_code = 0 THEN
            SELECT c.topic_id, c.partitions INTO tid, nparts FROM @extschema@.topic_catalog c WHERE c.name = o.topic;
            IF tid IS NULL OR o.partition IS NULL OR o.partition < 0 OR o.partition >= nparts THEN
                error_code := 3;
            ELSIF NOT @extschema@.has_topic_privilege(@extschema@._caller(), o.topic, 'consume') THEN
                error_code := 29;
            ELSIF octet_length(o.metadata) > 4096 THEN
                error_code := 12;
            ELSIF o.committed_offset IS NULL OR o.committed_offset < 0
                  OR o.committed_offset > @extschema@.high_watermark(o.topic, o.partition) THEN
                error_code := 1;
            ELSE
                INSERT INTO @extschema@.group_offsets AS x (topic_id, group_name, partition, next_offset, committed_at, metadata)
                VALUES (tid, g, o.partition, o.committed_offset, now(), o.metadata)
                ON CONFLICT ON CONSTRAINT group_offsets_pkey DO UPDATE
                   SET next_offset = excluded.next_offset, committed_at = excluded.committed_at,
                       metadata = excluded.metadata;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) IS
'internal: the body of eventlog.kafka_offset_commit, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@.kafka_offset_commit(group_name text, generation integer, member_id text,
                                               group_instance_id text, offsets @extschema@.kafka_offset[])
RETURNS TABLE (topic text, partition integer, error_code smallint)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) IS
'Kafka OffsetCommit: stores the group''s positions (the rows of eventlog.group_offsets SQL consumers use); one row per partition with its Kafka error code';

CREATE FUNCTION @extschema@._kafka_offset_fetch(group_name text, partitions @extschema@.kafka_topic_partition[] DEFAULT NULL)
RETURNS TABLE (topic text, partition integer, committed_offset bigint, metadata text, error_code smallint)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tp @extschema@.kafka_topic_partition;
BEGIN
    IF NOT @extschema@._kafka_valid_group(group_name) THEN
        FOREACH tp IN ARRAY coalesce(partitions, ARRAY[ROW(NULL, NULL)::@extschema@.kafka_topic_partition]) LOOP
            RETURN QUERY SELECT tp.topic, tp.partition, -1::bigint, NULL::text, 24::smallint;
        END LOOP;
        RETURN;
    END IF;
    IF NOT @extschema@._kafka_authorized(group_name) THEN
        FOREACH tp IN ARRAY coalesce(partitions, ARRAY[ROW(NULL, NULL)::@extschema@.kafka_topic_partition]) LOOP
            RETURN QUERY SELECT tp.topic, tp.partition, -1::bigint, NULL::text, 30::smallint;
        END LOOP;
        RETURN;
    END IF;
    IF partitions IS NULL THEN
        RETURN QUERY
        SELECT c.name, o.partition, o.next_offset, o.metadata, 0::smallint
          FROM @extschema@.group_offsets o JOIN @extschema@.topic_catalog c USING (topic_id)
         WHERE o.group_name = _kafka_offset_fetch.group_name
           AND @extschema@.has_topic_privilege(@extschema@._caller(), c.name, 'consume')
         ORDER BY c.name, o.partition;
        RETURN;
    END IF;
    FOREACH tp IN ARRAY partitions LOOP
        IF EXISTS (SELECT FROM @extschema@.topic_catalog c WHERE c.name = tp.topic)
           AND NOT @extschema@.has_topic_privilege(@extschema@._caller(), tp.topic, 'consume') THEN
            RETURN QUERY SELECT tp.topic, tp.partition, -1::bigint, NULL::text, 29::smallint;
        ELSE
            RETURN QUERY
            SELECT tp.topic, tp.partition, coalesce(x.next_offset, -1), x.metadata, 0::smallint
              FROM (SELECT 1) one
              LEFT JOIN (SELECT o.next_offset, o.metadata
                           FROM @extschema@.group_offsets o JOIN @extschema@.topic_catalog c USING (topic_id)
                          WHERE o.group_name = _kafka_offset_fetch.group_name AND c.name = tp.topic
                            AND o.partition = tp.partition) x ON true;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_offset_fetch(text, @extschema@.kafka_topic_partition[]) IS
'internal: the body of eventlog.kafka_offset_fetch, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@.kafka_offset_fetch(group_name text, partitions @extschema@.kafka_topic_partition[] DEFAULT NULL)
RETURNS TABLE (topic text, partition integer, committed_offset bigint, metadata text, error_code smallint)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C STABLE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_offset_fetch(text, @extschema@.kafka_topic_partition[]) IS
'Kafka OffsetFetch: the group''s committed positions in the given partitions (-1 where none), or in every partition it has one in the topics the caller may consume (partitions NULL)';

CREATE FUNCTION @extschema@._kafka_offset_delete(group_name text, partitions @extschema@.kafka_topic_partition[])
RETURNS TABLE (error_code smallint, topic text, partition integer, partition_error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    grp @extschema@.kafka_groups;
    tp @extschema@.kafka_topic_partition;
    subscribed text[] := '{}';
    tid integer;
BEGIN
    IF partitions IS NULL THEN
        RAISE EXCEPTION 'partitions must not be null' USING ERRCODE = '22004';
    END IF;
    IF NOT @extschema@._kafka_valid_group(g) THEN
        RETURN QUERY SELECT 24::smallint, NULL::text, NULL::integer, NULL::smallint;
        RETURN;
    END IF;
    PERFORM @extschema@._kafka_lock(g);
    PERFORM @extschema@._kafka_expire(g);
    IF NOT @extschema@._kafka_group_exists(g) THEN
        RETURN QUERY SELECT 69::smallint, NULL::text, NULL::integer, NULL::smallint;
        RETURN;
    END IF;
    IF NOT @extschema@._kafka_authorized(g) THEN
        RETURN QUERY SELECT 30::smallint, NULL::text, NULL::integer, NULL::smallint;
        RETURN;
    END IF;
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    IF grp.group_name IS NOT NULL AND grp.state <> 'Empty' THEN
        IF grp.protocol_type IS DISTINCT FROM 'consumer' THEN
            RETURN QUERY SELECT 68::smallint, NULL::text, NULL::integer, NULL::smallint;
            RETURN;
        END IF;
        SELECT coalesce(array_agg(DISTINCT t), '{}') INTO subscribed
          FROM @extschema@.kafka_group_members k, unnest(k.protocols) p,
               unnest(@extschema@._kafka_subscription_topics(p.metadata)) t
         WHERE k.group_name = g AND NOT k.pending;
    END IF;
    FOREACH tp IN ARRAY partitions LOOP
        topic := tp.topic;
        partition := tp.partition;
        error_code := 0;
        SELECT c.topic_id INTO tid FROM @extschema@.topic_catalog c WHERE c.name = tp.topic;
        IF tid IS NULL OR NOT EXISTS (SELECT FROM @extschema@.partition_catalog pc
                                       WHERE pc.topic_id = tid AND pc.partition = tp.partition) THEN
            partition_error_code := 3;
        ELSIF NOT @extschema@.has_topic_privilege(@extschema@._caller(), tp.topic, 'consume') THEN
            partition_error_code := 29;
        ELSIF tp.topic = ANY (subscribed)
              OR EXISTS (SELECT FROM @extschema@.group_offsets o
                          WHERE o.topic_id = tid AND o.group_name = g AND o.partition = tp.partition
                            AND o.owner_member IS NOT NULL) THEN
            partition_error_code := 86;
        ELSE
            DELETE FROM @extschema@.group_offsets o
             WHERE o.topic_id = tid AND o.group_name = g AND o.partition = tp.partition;
            partition_error_code := 0;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_offset_delete(text, @extschema@.kafka_topic_partition[]) IS
'internal: the body of eventlog.kafka_offset_delete, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@.kafka_offset_delete(group_name text, partitions @extschema@.kafka_topic_partition[])
RETURNS TABLE (error_code smallint, topic text, partition integer, partition_error_code smallint)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_offset_delete(text, @extschema@.kafka_topic_partition[]) IS
'Kafka OffsetDelete: forgets the group''s positions in partitions of topics its members do not subscribe to; a group-level error comes as one row with a NULL topic';

-- PUBLIC keeps the gates (_kafka_join_begin, _kafka_join_check,
-- _kafka_sync_begin, _kafka_sync_check: the steps of the procedures, which
-- run as the caller) and the wait; everything else is internal.
REVOKE ALL ON FUNCTION
    @extschema@._lock_kafka_group(text),
    @extschema@._try_lock_kafka_group(text),
    @extschema@._kafka_group_epoch(text),
    @extschema@._kafka_group_touch(text),
    @extschema@._kafka_subscription_topics(bytea),
    @extschema@._kafka_settings(),
    @extschema@._kafka_valid_group(text),
    @extschema@._kafka_authorized(text, text[]),
    @extschema@._kafka_select_protocol(text),
    @extschema@._kafka_supports(text, text, @extschema@.kafka_protocol[]),
    @extschema@._kafka_next_wake(text, text),
    @extschema@._kafka_error(integer, text, bigint),
    @extschema@._kafka_group_exists(text),
    @extschema@._kafka_lock(text),
    @extschema@._kafka_prepare_rebalance(text),
    @extschema@._kafka_maybe_complete(text),
    @extschema@._kafka_remove_member(text, text),
    @extschema@._kafka_expire(text),
    @extschema@._kafka_expire_groups(),
    @extschema@._kafka_join_state(text, text, bigint),
    @extschema@._kafka_sync_state(text, integer, text, bigint),
    @extschema@.__kafka_join_begin(text, text, text, text, @extschema@.kafka_protocol[], integer, integer, text, text, boolean),
    @extschema@.__kafka_join_check(text, text),
    @extschema@.__kafka_sync_begin(text, integer, text, text, text, text, @extschema@.kafka_assignment[]),
    @extschema@.__kafka_sync_check(text, integer, text),
    @extschema@._kafka_heartbeat(text, integer, text, text),
    @extschema@._kafka_leave_group(text, @extschema@.kafka_member_identity[]),
    @extschema@._kafka_describe_groups(text[]),
    @extschema@._kafka_list_groups(text[]),
    @extschema@._kafka_delete_groups(text[]),
    @extschema@._kafka_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]),
    @extschema@._kafka_offset_fetch(text, @extschema@.kafka_topic_partition[]),
    @extschema@._kafka_offset_delete(text, @extschema@.kafka_topic_partition[])
  FROM PUBLIC;

-- Kafka groups: a role that may not use a group no longer takes its lock
-- (it could hold it in a transaction block and stall the group); a simple
-- consumer's OffsetCommit is refused while an SQL member of the name is live.

CREATE OR REPLACE FUNCTION @extschema@.__kafka_join_check(group_name text, member_id text)
RETURNS @extschema@._kafka_step
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    epoch bigint := @extschema@._kafka_group_epoch(group_name);
BEGIN
    -- Authorized before the lock too: a role that may not use the group
    -- must not hold its lock (in a transaction block) and stall it.
    IF NOT @extschema@._kafka_authorized(group_name) THEN
        RETURN @extschema@._kafka_error(30, member_id, epoch);
    END IF;
    PERFORM @extschema@._kafka_lock(group_name);
    PERFORM @extschema@._kafka_expire(group_name);
    IF NOT @extschema@._kafka_authorized(group_name) THEN
        RETURN @extschema@._kafka_error(30, member_id, epoch);
    END IF;
    RETURN @extschema@._kafka_join_state(group_name, member_id, epoch);
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.__kafka_sync_begin(group_name text, generation integer, member_id text,
                                              group_instance_id text, protocol_type text, protocol_name text,
                                              assignments @extschema@.kafka_assignment[])
RETURNS @extschema@._kafka_step
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    m text := coalesce(member_id, '');
    epoch bigint := @extschema@._kafka_group_epoch(coalesce(group_name, ''));
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
BEGIN
    IF NOT @extschema@._kafka_valid_group(g) THEN
        RETURN @extschema@._kafka_error(24, m, epoch);
    END IF;
    -- Before the lock too (see __kafka_join_check).
    IF NOT @extschema@._kafka_authorized(g) THEN
        RETURN @extschema@._kafka_error(30, m, epoch);
    END IF;
    PERFORM @extschema@._kafka_lock(g);
    PERFORM @extschema@._kafka_expire(g);
    IF NOT @extschema@._kafka_authorized(g) THEN
        RETURN @extschema@._kafka_error(30, m, epoch);
    END IF;
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    IF grp.group_name IS NULL THEN
        RETURN @extschema@._kafka_error(25, m, epoch);
    END IF;
    IF group_instance_id IS NOT NULL AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                                                  WHERE k.group_name = g AND k.group_instance_id = __kafka_sync_begin.group_instance_id
                                                    AND k.member_id <> m) THEN
        RETURN @extschema@._kafka_error(82, m, epoch);
    END IF;
    SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
    IF mem.member_id IS NULL OR mem.pending THEN
        RETURN @extschema@._kafka_error(25, m, epoch);
    END IF;
    IF __kafka_sync_begin.generation IS DISTINCT FROM grp.generation THEN
        RETURN @extschema@._kafka_error(22, m, epoch);
    END IF;
    IF (__kafka_sync_begin.protocol_type IS NOT NULL AND __kafka_sync_begin.protocol_type IS DISTINCT FROM grp.protocol_type)
       OR (__kafka_sync_begin.protocol_name IS NOT NULL AND __kafka_sync_begin.protocol_name IS DISTINCT FROM grp.protocol_name) THEN
        RETURN @extschema@._kafka_error(23, m, epoch);
    END IF;
    IF grp.state = 'CompletingRebalance' THEN
        UPDATE @extschema@.kafka_group_members k SET last_heartbeat = now()
         WHERE k.group_name = g AND k.member_id = m;
        IF grp.leader = m THEN
            -- Members the leader left out get an empty assignment.
            UPDATE @extschema@.kafka_group_members k
               SET assignment = coalesce((SELECT a.assignment FROM unnest(assignments) a
                                           WHERE a.member_id = k.member_id AND a.assignment IS NOT NULL LIMIT 1), '\x')
             WHERE k.group_name = g AND NOT k.pending;
            UPDATE @extschema@.kafka_groups k SET state = 'Stable' WHERE k.group_name = g;
            PERFORM @extschema@._kafka_group_touch(g);
        END IF;
    END IF;
    RETURN @extschema@._kafka_sync_state(g, grp.generation, m, epoch);
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.__kafka_sync_check(group_name text, generation integer, member_id text)
RETURNS @extschema@._kafka_step
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    epoch bigint := @extschema@._kafka_group_epoch(group_name);
BEGIN
    -- Authorized before the lock too: a role that may not use the group
    -- must not hold its lock (in a transaction block) and stall it.
    IF NOT @extschema@._kafka_authorized(group_name) THEN
        RETURN @extschema@._kafka_error(30, member_id, epoch);
    END IF;
    PERFORM @extschema@._kafka_lock(group_name);
    PERFORM @extschema@._kafka_expire(group_name);
    IF NOT @extschema@._kafka_authorized(group_name) THEN
        RETURN @extschema@._kafka_error(30, member_id, epoch);
    END IF;
    RETURN @extschema@._kafka_sync_state(group_name, generation, member_id, epoch);
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._kafka_heartbeat(group_name text, generation integer, member_id text,
                                            group_instance_id text DEFAULT NULL)
RETURNS smallint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    m text := coalesce(member_id, '');
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
BEGIN
    IF NOT @extschema@._kafka_valid_group(g) THEN
        RETURN 24;
    END IF;
    -- Before the lock too (see __kafka_join_check).
    IF NOT @extschema@._kafka_authorized(g) THEN
        RETURN 30;
    END IF;
    PERFORM @extschema@._kafka_lock(g);
    PERFORM @extschema@._kafka_expire(g);
    IF NOT @extschema@._kafka_authorized(g) THEN
        RETURN 30;
    END IF;
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    IF grp.group_name IS NULL THEN
        RETURN 25;
    END IF;
    IF group_instance_id IS NOT NULL AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                                                  WHERE k.group_name = g AND k.group_instance_id = _kafka_heartbeat.group_instance_id
                                                    AND k.member_id <> m) THEN
        RETURN 82;
    END IF;
    SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
    IF mem.member_id IS NULL OR mem.pending THEN
        RETURN 25;
    END IF;
    IF _kafka_heartbeat.generation IS DISTINCT FROM grp.generation THEN
        RETURN 22;
    END IF;
    IF grp.state = 'Empty' THEN
        RETURN 25;
    END IF;
    UPDATE @extschema@.kafka_group_members k SET last_heartbeat = now()
     WHERE k.group_name = g AND k.member_id = m;
    RETURN CASE WHEN grp.state = 'PreparingRebalance' THEN 27 ELSE 0 END;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._kafka_leave_group(group_name text, members @extschema@.kafka_member_identity[])
RETURNS TABLE (member_id text, group_instance_id text, error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    who @extschema@.kafka_member_identity;
    mem @extschema@.kafka_group_members;
    found_group boolean;
BEGIN
    IF members IS NULL THEN
        RAISE EXCEPTION 'members must not be null' USING ERRCODE = '22004';
    END IF;
    -- Not the lock of a group the caller may not use (see
    -- __kafka_join_check): its members then get 30, without it.
    IF @extschema@._kafka_valid_group(g) AND @extschema@._kafka_authorized(g) THEN
        PERFORM @extschema@._kafka_lock(g);
        PERFORM @extschema@._kafka_expire(g);
    END IF;
    found_group := EXISTS (SELECT FROM @extschema@.kafka_groups k WHERE k.group_name = g);
    FOREACH who IN ARRAY members LOOP
        member_id := coalesce(who.member_id, '');
        group_instance_id := who.group_instance_id;
        mem := NULL;
        IF NOT @extschema@._kafka_valid_group(g) THEN
            error_code := 24;
        ELSIF NOT @extschema@._kafka_authorized(g) THEN
            error_code := 30;
        ELSIF NOT found_group THEN
            error_code := 25;
        ELSIF member_id = '' THEN
            SELECT * INTO mem FROM @extschema@.kafka_group_members k
             WHERE k.group_name = g AND k.group_instance_id = who.group_instance_id;
            error_code := CASE WHEN mem.member_id IS NULL THEN 25 ELSE 0 END;
        ELSE
            SELECT * INTO mem FROM @extschema@.kafka_group_members k
             WHERE k.group_name = g AND k.member_id = _kafka_leave_group.member_id;
            IF mem.member_id IS NOT NULL AND NOT mem.pending AND who.group_instance_id IS NOT NULL
               AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                            WHERE k.group_name = g AND k.group_instance_id = who.group_instance_id
                              AND k.member_id <> _kafka_leave_group.member_id) THEN
                error_code := 82;
                mem := NULL;
            ELSE
                error_code := CASE WHEN mem.member_id IS NULL THEN 25 ELSE 0 END;
            END IF;
        END IF;
        IF mem.member_id IS NOT NULL THEN
            PERFORM @extschema@._kafka_remove_member(g, mem.member_id);
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._kafka_describe_groups(group_names text[])
RETURNS TABLE (group_name text, error_code smallint, state text, protocol_type text,
               protocol_data text, members @extschema@.kafka_member_description[])
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    grp @extschema@.kafka_groups;
BEGIN
    IF group_names IS NULL THEN
        RAISE EXCEPTION 'group_names must not be null' USING ERRCODE = '22004';
    END IF;
    -- Several groups' locks: in name order, as kafka_list_groups takes them.
    -- Only of groups the caller may use (see __kafka_join_check).
    PERFORM @extschema@._kafka_lock(n) FROM (SELECT DISTINCT n FROM unnest(group_names) n
                                              WHERE @extschema@._kafka_valid_group(n)
                                                AND @extschema@._kafka_authorized(n) ORDER BY n) x;
    FOREACH group_name IN ARRAY group_names LOOP
        error_code := 0;
        state := 'Dead';
        protocol_type := '';
        protocol_data := '';
        members := '{}';
        IF NOT @extschema@._kafka_valid_group(group_name) THEN
            error_code := 24;
        ELSIF NOT @extschema@._kafka_authorized(group_name) THEN
            error_code := 30;
        ELSE
            PERFORM @extschema@._kafka_lock(group_name);
            PERFORM @extschema@._kafka_expire(group_name);
            SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = _kafka_describe_groups.group_name;
            IF grp.group_name IS NOT NULL THEN
                state := grp.state;
                protocol_type := coalesce(grp.protocol_type, '');
                IF grp.state = 'Stable' THEN
                    protocol_data := grp.protocol_name;
                END IF;
                SELECT coalesce(array_agg(ROW(k.member_id, k.group_instance_id, k.client_id, k.client_host,
                           CASE WHEN grp.state = 'Stable' THEN
                                coalesce((SELECT p.metadata FROM unnest(k.protocols) p WHERE p.name = grp.protocol_name LIMIT 1), '\x')
                           ELSE '\x' END,
                           CASE WHEN grp.state = 'Stable' THEN coalesce(k.assignment, '\x') ELSE '\x' END
                          )::@extschema@.kafka_member_description ORDER BY k.joined_at, k.member_id), '{}')
                  INTO members
                  FROM @extschema@.kafka_group_members k
                 WHERE k.group_name = grp.group_name AND NOT k.pending;
            ELSIF @extschema@._kafka_group_exists(group_name) THEN
                state := 'Empty';
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._kafka_list_groups(states text[] DEFAULT NULL)
RETURNS TABLE (group_name text, protocol_type text, state text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Expire abandoned groups first, one lock at a time, in name order.
    FOR group_name IN SELECT k.group_name FROM @extschema@.kafka_groups k
                       WHERE k.state <> 'Empty' AND @extschema@._kafka_authorized(k.group_name)
                       ORDER BY k.group_name LOOP
        PERFORM @extschema@._kafka_lock(group_name);
        PERFORM @extschema@._kafka_expire(group_name);
    END LOOP;
    RETURN QUERY
    SELECT n.group_name, coalesce(k.protocol_type, ''), coalesce(k.state, 'Empty')
      FROM (SELECT k2.group_name FROM @extschema@.kafka_groups k2
            UNION SELECT o.group_name FROM @extschema@.group_offsets o) n
      LEFT JOIN @extschema@.kafka_groups k ON k.group_name = n.group_name
     WHERE @extschema@._kafka_valid_group(n.group_name)
       AND (states IS NULL OR cardinality(states) = 0
            OR lower(coalesce(k.state, 'Empty')) IN (SELECT lower(s) FROM unnest(states) s))
       AND @extschema@._kafka_authorized(n.group_name)
     ORDER BY n.group_name;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._kafka_delete_groups(group_names text[])
RETURNS TABLE (group_name text, error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    grp @extschema@.kafka_groups;
    t record;
BEGIN
    IF group_names IS NULL THEN
        RAISE EXCEPTION 'group_names must not be null' USING ERRCODE = '22004';
    END IF;
    -- Several groups' locks: in name order, as kafka_list_groups takes them.
    -- Only of groups the caller may use (see __kafka_join_check).
    PERFORM @extschema@._kafka_lock(n) FROM (SELECT DISTINCT n FROM unnest(group_names) n
                                              WHERE @extschema@._kafka_valid_group(n)
                                                AND @extschema@._kafka_authorized(n) ORDER BY n) x;
    FOREACH group_name IN ARRAY group_names LOOP
        IF NOT @extschema@._kafka_valid_group(group_name) THEN
            error_code := 24;
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF @extschema@._kafka_authorized(group_name) THEN
            PERFORM @extschema@._kafka_lock(group_name);
            PERFORM @extschema@._kafka_expire(group_name);
        END IF;
        SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = _kafka_delete_groups.group_name;
        IF NOT @extschema@._kafka_group_exists(group_name) THEN
            error_code := 69;
        ELSIF NOT @extschema@._kafka_authorized(group_name) THEN
            error_code := 30;
        ELSIF grp.group_name IS NOT NULL AND grp.state <> 'Empty' THEN
            error_code := 68;
        ELSE
            error_code := 0;
            BEGIN
                -- The SQL side's rules: refused while an SQL consumer of
                -- the group is at work or a member is live.
                FOR t IN SELECT DISTINCT c.name FROM @extschema@.topic_catalog c
                          WHERE c.topic_id IN (SELECT o.topic_id FROM @extschema@.group_offsets o
                                                WHERE o.group_name = _kafka_delete_groups.group_name
                                               UNION SELECT gc.topic_id FROM @extschema@.group_catalog gc
                                                WHERE gc.group_name = _kafka_delete_groups.group_name)
                          ORDER BY c.name LOOP
                    PERFORM @extschema@._delete_group(t.name, group_name);
                END LOOP;
                DELETE FROM @extschema@.kafka_groups k WHERE k.group_name = _kafka_delete_groups.group_name;
                PERFORM @extschema@._kafka_group_touch(group_name);
            EXCEPTION WHEN object_not_in_prerequisite_state OR lock_not_available THEN
                error_code := 68;
            END;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._kafka_offset_commit(group_name text, generation integer, member_id text,
                                                group_instance_id text, offsets @extschema@.kafka_offset[])
RETURNS TABLE (topic text, partition integer, error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    gen integer := coalesce(generation, -1);
    m text := coalesce(member_id, '');
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
    o @extschema@.kafka_offset;
    group_error smallint := 0;
    tid integer;
    nparts integer;
BEGIN
    IF offsets IS NULL THEN
        RAISE EXCEPTION 'offsets must not be null' USING ERRCODE = '22004';
    END IF;
    IF NOT @extschema@._kafka_valid_group(g) THEN
        group_error := 24;
    ELSIF NOT @extschema@._kafka_authorized(g) THEN
        -- Not the lock of a group the caller may not use (see __kafka_join_check).
        group_error := 30;
    ELSE
        PERFORM @extschema@._kafka_lock(g);
        PERFORM @extschema@._kafka_expire(g);
        SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
        IF NOT @extschema@._kafka_authorized(g) THEN
            group_error := 30;
        ELSIF grp.group_name IS NULL THEN
            IF gen >= 0 THEN
                group_error := 22;
            ELSIF EXISTS (SELECT FROM @extschema@.group_members s
                           WHERE s.group_name = g AND s.last_heartbeat + s.session_timeout > now()) THEN
                -- A simple consumer commits only while the group has no
                -- members: a live SQL member-style consumer of the name is
                -- one (it owns its partitions; see __kafka_join_begin).
                group_error := 25;
            END IF;
        ELSIF gen >= 0 OR m <> '' OR group_instance_id IS NOT NULL THEN
            SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
            IF group_instance_id IS NOT NULL AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                                                          WHERE k.group_name = g AND k.group_instance_id = _kafka_offset_commit.group_instance_id
                                                            AND k.member_id <> m) THEN
                group_error := 82;
            ELSIF mem.member_id IS NULL OR mem.pending THEN
                group_error := 25;
            ELSIF gen <> grp.generation THEN
                group_error := 22;
            ELSIF grp.state = 'CompletingRebalance' THEN
                group_error := 27;
            ELSE
                UPDATE @extschema@.kafka_group_members k SET last_heartbeat = now()
                 WHERE k.group_name = g AND k.member_id = m;
            END IF;
        ELSIF grp.state <> 'Empty'
              OR EXISTS (SELECT FROM @extschema@.group_members s
                          WHERE s.group_name = g AND s.last_heartbeat + s.session_timeout > now()) THEN
            group_error := 25;
        END IF;
    END IF;
    FOREACH o IN ARRAY offsets LOOP
        topic := o.topic;
        partition := o.partition;
        error_code := group_error;
        IF error_code = 0 THEN
            SELECT c.topic_id, c.partitions INTO tid, nparts FROM @extschema@.topic_catalog c WHERE c.name = o.topic;
            IF tid IS NULL OR o.partition IS NULL OR o.partition < 0 OR o.partition >= nparts THEN
                error_code := 3;
            ELSIF NOT @extschema@.has_topic_privilege(@extschema@._caller(), o.topic, 'consume') THEN
                error_code := 29;
            ELSIF octet_length(o.metadata) > 4096 THEN
                error_code := 12;
            ELSIF o.committed_offset IS NULL OR o.committed_offset < 0
                  OR o.committed_offset > @extschema@.high_watermark(o.topic, o.partition) THEN
                error_code := 1;
            ELSE
                INSERT INTO @extschema@.group_offsets AS x (topic_id, group_name, partition, next_offset, committed_at, metadata)
                VALUES (tid, g, o.partition, o.committed_offset, now(), o.metadata)
                ON CONFLICT ON CONSTRAINT group_offsets_pkey DO UPDATE
                   SET next_offset = excluded.next_offset, committed_at = excluded.committed_at,
                       metadata = excluded.metadata;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._kafka_offset_delete(group_name text, partitions @extschema@.kafka_topic_partition[])
RETURNS TABLE (error_code smallint, topic text, partition integer, partition_error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    grp @extschema@.kafka_groups;
    tp @extschema@.kafka_topic_partition;
    subscribed text[] := '{}';
    tid integer;
BEGIN
    IF partitions IS NULL THEN
        RAISE EXCEPTION 'partitions must not be null' USING ERRCODE = '22004';
    END IF;
    IF NOT @extschema@._kafka_valid_group(g) THEN
        RETURN QUERY SELECT 24::smallint, NULL::text, NULL::integer, NULL::smallint;
        RETURN;
    END IF;
    -- Before the lock too (see __kafka_join_check); a group that does not
    -- exist is authorized, and gets 69 below.
    IF NOT @extschema@._kafka_authorized(g) THEN
        RETURN QUERY SELECT 30::smallint, NULL::text, NULL::integer, NULL::smallint;
        RETURN;
    END IF;
    PERFORM @extschema@._kafka_lock(g);
    PERFORM @extschema@._kafka_expire(g);
    IF NOT @extschema@._kafka_group_exists(g) THEN
        RETURN QUERY SELECT 69::smallint, NULL::text, NULL::integer, NULL::smallint;
        RETURN;
    END IF;
    IF NOT @extschema@._kafka_authorized(g) THEN
        RETURN QUERY SELECT 30::smallint, NULL::text, NULL::integer, NULL::smallint;
        RETURN;
    END IF;
    SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
    IF grp.group_name IS NOT NULL AND grp.state <> 'Empty' THEN
        IF grp.protocol_type IS DISTINCT FROM 'consumer' THEN
            RETURN QUERY SELECT 68::smallint, NULL::text, NULL::integer, NULL::smallint;
            RETURN;
        END IF;
        SELECT coalesce(array_agg(DISTINCT t), '{}') INTO subscribed
          FROM @extschema@.kafka_group_members k, unnest(k.protocols) p,
               unnest(@extschema@._kafka_subscription_topics(p.metadata)) t
         WHERE k.group_name = g AND NOT k.pending;
    END IF;
    FOREACH tp IN ARRAY partitions LOOP
        topic := tp.topic;
        partition := tp.partition;
        error_code := 0;
        SELECT c.topic_id INTO tid FROM @extschema@.topic_catalog c WHERE c.name = tp.topic;
        IF tid IS NULL OR NOT EXISTS (SELECT FROM @extschema@.partition_catalog pc
                                       WHERE pc.topic_id = tid AND pc.partition = tp.partition) THEN
            partition_error_code := 3;
        ELSIF NOT @extschema@.has_topic_privilege(@extschema@._caller(), tp.topic, 'consume') THEN
            partition_error_code := 29;
        ELSIF tp.topic = ANY (subscribed)
              OR EXISTS (SELECT FROM @extschema@.group_offsets o
                          WHERE o.topic_id = tid AND o.group_name = g AND o.partition = tp.partition
                            AND o.owner_member IS NOT NULL) THEN
            partition_error_code := 86;
        ELSE
            DELETE FROM @extschema@.group_offsets o
             WHERE o.topic_id = tid AND o.group_name = g AND o.partition = tp.partition;
            partition_error_code := 0;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

-- drop_topic: a drop that waited for a concurrent drop of the same topic
-- reports that the topic does not exist instead of succeeding.
CREATE OR REPLACE FUNCTION @extschema@._drop_topic(topic text, if_exists boolean DEFAULT false)
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
            USING ERRCODE = 'undefined_object';
    END IF;
    PERFORM @extschema@._authorize(topic, 'owner');
    PERFORM FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id FOR UPDATE;
    -- A concurrent drop_topic that committed while this one waited for the
    -- row leaves nothing to lock: the topic is gone, as if it had not been
    -- found above.
    IF NOT FOUND THEN
        IF coalesce(if_exists, false) THEN
            RAISE NOTICE 'topic "%" does not exist, skipping', topic;
            RETURN;
        END IF;
        RAISE EXCEPTION 'topic "%" does not exist', topic
            USING ERRCODE = 'undefined_object';
    END IF;
    -- Wait for a maintenance round of the topic in progress, and keep the
    -- next ones away (they skip a topic whose round lock is taken): a round
    -- that rolled a partition commits a new segment, which the list below
    -- must see, or its table would outlive the topic (its catalog row goes
    -- with the partition's).
    PERFORM @extschema@._lock_maintenance(old_id);
    FOR seg IN SELECT s.table_name FROM @extschema@.segment_catalog s
                WHERE s.topic_id = old_id ORDER BY s.partition, s.segment_no
    LOOP
        -- CASCADE: objects made to depend on a segment (a view by the
        -- extension owner, a regclass constant by anyone) go with it.
        EXECUTE format('DROP TABLE IF EXISTS eventlog_segments.%I CASCADE', seg.table_name);
    END LOOP;
    DELETE FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id;
    PERFORM @extschema@._forget_topic(old_id);
END
$$;
COMMENT ON FUNCTION @extschema@._drop_topic(text, boolean) IS
'internal: the body of eventlog.drop_topic, run as the extension owner on behalf of the caller eventlog.drop_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._drop_topic(text, boolean) FROM PUBLIC;

/* ------------------------------------------------------------------------
 * SASL SCRAM-SHA-256 for the Kafka gateway (src/kafka/scram.c,
 * docs/kafka.md): the gateway checks a Kafka client's proof against the
 * role's SCRAM verifier without learning its password, then runs the
 * client's session as that role (SET ROLE).  Only a role granted EXECUTE
 * (the gateway's --dsn role) may ask, and only for roles its login role
 * could SET ROLE to anyway.
 * ------------------------------------------------------------------------ */

CREATE FUNCTION @extschema@.kafka_scram_verifier(role_name text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    verifier text;
BEGIN
    -- NULL for every role a client must not become, whatever the reason
    -- (no such role, NOLOGIN, expired, no CONNECT on this database, no
    -- SCRAM verifier, not one the caller may SET ROLE to): the gateway
    -- answers them all alike, as a wrong password.  CONNECT because a
    -- login of the role would need it, and SET ROLE does not check it.
    -- session_user: the caller's login role, as this function runs as its
    -- owner.
    SELECT a.rolpassword INTO verifier
      FROM pg_catalog.pg_authid a
     WHERE a.rolname = role_name
       AND a.rolcanlogin
       AND (a.rolvaliduntil IS NULL OR a.rolvaliduntil >= pg_catalog.clock_timestamp())
       AND a.rolpassword LIKE 'SCRAM-SHA-256$%'
       AND pg_catalog.has_database_privilege(a.oid, pg_catalog.current_database(), 'CONNECT')
       AND CASE WHEN pg_catalog.current_setting('server_version_num')::integer >= 160000
                THEN pg_catalog.pg_has_role(session_user, a.oid, 'SET')
                ELSE pg_catalog.pg_has_role(session_user, a.oid, 'MEMBER') END;
    RETURN verifier;
END
$$;
COMMENT ON FUNCTION @extschema@.kafka_scram_verifier(text) IS
'the SCRAM-SHA-256 verifier of a role the caller''s login role may SET ROLE to and that may log in to this database, for pg_eventlog_kafka''s SCRAM authentication; NULL otherwise. Grant EXECUTE to the gateway''s role only';
REVOKE ALL ON FUNCTION @extschema@.kafka_scram_verifier(text) FROM PUBLIC;
-- Kafka gateway: Fetch and ListOffsets (sql/install/kafka_fetch.sql).
/* ------------------------------------------------------------------------
 * Kafka's Fetch and ListOffsets, for the Kafka gateway: one call per
 * request.  They run as the caller (the gateway's session role), so
 * eventlog.read / read_binary / offset_for_time check its privileges, and
 * report each partition's outcome as a Kafka error code instead of failing
 * the whole request.
 * ------------------------------------------------------------------------ */

CREATE FUNCTION @extschema@._kafka_await(topics text[], partitions integer[], positions bigint[],
                                         timeout_ms integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_kafka_await'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_await(text[], integer[], bigint[], integer) IS
'internal: the long poll of the Kafka gateway''s Fetch over partitions of any topics: true as soon as one of partitions[i] of topics[i] has a readable record at or after positions[i] (or a topic was dropped), false after timeout_ms';

/*
 * Kafka Fetch: records of each (topics[i], partitions[i]) from offsets[i]
 * on, at most max_records[i] of them, and only while the bytes of the
 * records before a record (key, value and headers) are below max_bytes[i]
 * (NULL: no limit): the gateway sizes max_records from the records it saw
 * before, and a partition of records much larger than those must not send
 * it gigabytes to build a response of partition_max_bytes.  Rows with
 * k_offset NULL give each
 * item's outcome: a Kafka error code (0, 1 OFFSET_OUT_OF_RANGE, 3
 * UNKNOWN_TOPIC_OR_PARTITION, 29 TOPIC_AUTHORIZATION_FAILED, -1 anything
 * else, logged as a warning), its log start offset and its last stable
 * offset, taken after its records were read, so every record returned lies
 * below it.  The others are records: timestamps are event_time, a JSON
 * topic's key and value their UTF-8 text, its headers object's members
 * headers (a string's text, null, or other JSON's text).  When no item has
 * a record or an error and wait_ms > 0, it long-polls (as _kafka_await)
 * and reads again.  In C (src/kafka_fetch.c): each partition is read as
 * read_binary (read) reads it, with its checks in its order, and only up to
 * the record that reaches max_bytes[i]; when the stable offsets show nothing
 * readable, it waits without reading first.
 */
CREATE FUNCTION @extschema@._kafka_fetch(topics text[], partitions integer[], offsets bigint[],
                                         max_records integer[], wait_ms integer,
                                         max_bytes bigint[] DEFAULT NULL)
RETURNS TABLE (k_item integer, k_error smallint, k_log_start bigint, k_stable bigint,
               k_offset bigint, k_time timestamptz, k_key bytea, k_value bytea,
               k_headers @extschema@.header[])
AS 'MODULE_PATHNAME', 'el_kafka_fetch'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_fetch(text[], integer[], bigint[], integer[], integer, bigint[]) IS
'internal: the Kafka gateway''s Fetch: the records of each partition from its offset on (up to max_bytes of them), and each partition''s error code, log start and last stable offset, after a long poll of up to wait_ms when nothing is readable';

/*
 * Kafka ListOffsets: for each (topics[i], partitions[i], timestamps[i]),
 * -2 the log start offset, -1 the last stable offset, t >= 0 the first
 * offset whose append_time is at or after t (milliseconds since the epoch)
 * and that record's append_time, or offset -1 if there is none
 * (offset_for_time).  Error codes as in _kafka_fetch; another negative
 * timestamp gets 42 INVALID_REQUEST.
 */
CREATE FUNCTION @extschema@._kafka_list_offsets(topics text[], partitions integer[], timestamps bigint[])
RETURNS TABLE (k_item integer, k_error smallint, k_offset bigint, k_timestamp bigint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer := coalesce(array_length(topics, 1), 0);
    ts timestamptz;
    stable bigint;
    fmt text;
BEGIN
    IF coalesce(array_length(partitions, 1), 0) <> n OR coalesce(array_length(timestamps, 1), 0) <> n THEN
        RAISE EXCEPTION 'topics, partitions and timestamps must have the same length'
              USING ERRCODE = '2202E';
    END IF;
    FOR i IN 1..n LOOP
        k_item := i;
        k_error := 0;
        k_offset := -1;
        k_timestamp := -1;
        BEGIN
            SELECT c.format INTO fmt FROM @extschema@.topic_catalog c
             WHERE c.name OPERATOR(pg_catalog.=) topics[i];
            IF fmt IS NULL THEN
                k_error := 3;
            ELSIF timestamps[i] = -2 THEN
                k_offset := @extschema@.log_start_offset(topics[i], partitions[i]);
            ELSIF timestamps[i] = -1 THEN
                k_offset := @extschema@.last_stable_offset(topics[i], partitions[i]);
            ELSIF timestamps[i] < 0 THEN
                k_error := 42;
            ELSE
                -- The stable offset first: offset_for_time answers it (or more) when nothing is at or after t.
                stable := @extschema@.last_stable_offset(topics[i], partitions[i]);
                k_offset := @extschema@.offset_for_time(topics[i], partitions[i],
                                timestamptz 'epoch' + timestamps[i] * interval '1 millisecond');
                IF k_offset >= stable THEN
                    k_offset := -1;
                ELSE
                    IF fmt OPERATOR(pg_catalog.=) 'binary' THEN
                        SELECT r.append_time INTO ts
                          FROM @extschema@.read_binary(topics[i], partitions[i], k_offset, 1) r;
                    ELSE
                        SELECT r.append_time INTO ts
                          FROM @extschema@.read(topics[i], partitions[i], k_offset, 1) r;
                    END IF;
                    k_timestamp := floor(extract(epoch FROM ts) * 1000)::bigint;
                END IF;
            END IF;
        EXCEPTION
            WHEN undefined_object OR invalid_parameter_value THEN k_error := 3;
            WHEN insufficient_privilege THEN k_error := 29;
            WHEN numeric_value_out_of_range OR interval_field_overflow
                 OR datetime_field_overflow THEN k_error := 42;
            WHEN OTHERS THEN
                RAISE WARNING 'list offsets of partition % of topic % failed: %', partitions[i], topics[i], SQLERRM;
                k_error := -1;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_list_offsets(text[], integer[], bigint[]) IS
'internal: the Kafka gateway''s ListOffsets: each partition''s log start (-2), last stable offset (-1), or first offset at or after a time in milliseconds with its append time (-1 if none)';

-- Kafka gateway: the secret of SCRAM's made-up salts (sql/install/kafka_auth.sql).
/* ------------------------------------------------------------------------
 * The secret behind the made-up SCRAM salts the gateway answers for a role
 * with no verifier (src/kafka/scram_mock.c): an HMAC of the name under it,
 * so every gateway of the database, and the same one after a restart,
 * gives an unknown user the same salt, and comparing answers tells nothing
 * about which roles exist.  Drawn here, once; PUBLIC may not read it: the
 * administrator grants SELECT to the gateway's role, beside EXECUTE on
 * kafka_scram_verifier.  Not marked for pg_dump: a restored database draws
 * a new one (the made-up salts change once, as PostgreSQL's own change
 * with a new cluster).
 * ------------------------------------------------------------------------ */
CREATE TABLE @extschema@.kafka_scram_mock_secret (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    secret bytea NOT NULL CHECK (pg_catalog.octet_length(secret) BETWEEN 16 AND 64)
);
-- 32 bytes from PostgreSQL's strong random source (gen_random_uuid), hashed
-- so that the UUIDs' fixed version bits do not show.
INSERT INTO @extschema@.kafka_scram_mock_secret (secret)
VALUES (pg_catalog.sha256(pg_catalog.convert_to(
            pg_catalog.gen_random_uuid()::text || pg_catalog.gen_random_uuid()::text, 'UTF8')));
COMMENT ON TABLE @extschema@.kafka_scram_mock_secret IS
'the secret of pg_eventlog_kafka''s made-up SCRAM salts for unknown users, the same for every gateway of the database. Grant SELECT to the gateway''s role only';
REVOKE ALL ON TABLE @extschema@.kafka_scram_mock_secret FROM PUBLIC;


/* ------------------------------------------------------------------------
 * Log compaction (issue 17): topic settings, eventlog.compact, the
 * compaction catalog and view; retention and rolls mind the policy.
 * ------------------------------------------------------------------------ */
ALTER TABLE @extschema@.topic_catalog
    ADD COLUMN cleanup_policy text NOT NULL DEFAULT 'delete'
        CHECK (cleanup_policy OPERATOR(pg_catalog.=) ANY (ARRAY['delete', 'compact', 'compact,delete'])),
    ADD COLUMN delete_retention interval NOT NULL DEFAULT '1 day',
    ADD COLUMN min_compaction_lag interval NOT NULL DEFAULT '0',
    ADD COLUMN max_compaction_lag interval;

/*
 * Compaction settings (Kafka's cleanup.policy, delete.retention.ms,
 * min.compaction.lag.ms, max.compaction.lag.ms).  Returns the policy in
 * its one stored spelling: Kafka takes the list in any order.
 */
CREATE FUNCTION @extschema@._check_compaction_settings(
    cleanup_policy text, delete_retention interval,
    min_compaction_lag interval, max_compaction_lag interval)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    policy text := pg_catalog.lower(pg_catalog.replace(cleanup_policy, ' ', ''));
BEGIN
    IF cleanup_policy IS NULL THEN
        RAISE EXCEPTION 'cleanup_policy must not be null'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A topic''s cleanup policy is ''delete'', ''compact'' or ''compact,delete''.';
    END IF;
    IF policy = 'delete,compact' THEN
        policy := 'compact,delete';
    END IF;
    IF policy NOT IN ('delete', 'compact', 'compact,delete') THEN
        RAISE EXCEPTION 'invalid cleanup policy "%"', left(cleanup_policy, 100)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A topic''s cleanup policy is ''delete'', ''compact'' or ''compact,delete''.';
    END IF;
    IF delete_retention IS NULL OR delete_retention < interval '0' THEN
        RAISE EXCEPTION 'delete_retention must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(delete_retention::text, 'NULL'));
    END IF;
    IF min_compaction_lag IS NULL OR min_compaction_lag < interval '0' THEN
        RAISE EXCEPTION 'min_compaction_lag must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(min_compaction_lag::text, 'NULL'));
    END IF;
    IF max_compaction_lag <= interval '0' THEN
        RAISE EXCEPTION 'max_compaction_lag must be positive'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use NULL for no maximum.';
    END IF;
    IF max_compaction_lag < min_compaction_lag THEN
        RAISE EXCEPTION 'max_compaction_lag must not be less than min_compaction_lag'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('max_compaction_lag is %s and min_compaction_lag is %s.',
                                  max_compaction_lag, min_compaction_lag);
    END IF;
    RETURN policy;
END
$$;
COMMENT ON FUNCTION @extschema@._check_compaction_settings(text, interval, interval, interval) IS
'internal: validates compaction settings and returns the cleanup policy as stored';

/*
 * create_topic and alter_topic gain the compaction settings: new
 * signatures, so the old functions are dropped (an overload would make
 * every call ambiguous), and their EXECUTE grants given to the new ones.
 */
SELECT pg_catalog.set_config('pg_eventlog_upgrade.create_topic_acl',
                             coalesce(p.proacl::text, ''), true)
  FROM pg_catalog.pg_proc p
 WHERE p.oid = '@extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text)'::pg_catalog.regprocedure;
SELECT pg_catalog.set_config('pg_eventlog_upgrade.alter_topic_acl',
                             coalesce(p.proacl::text, ''), true)
  FROM pg_catalog.pg_proc p
 WHERE p.oid = '@extschema@.alter_topic(text, integer, interval, bigint, interval, bigint)'::pg_catalog.regprocedure;
DROP FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text);
DROP FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint, text);
DROP FUNCTION @extschema@.alter_topic(text, integer, interval, bigint, interval, bigint);
DROP FUNCTION @extschema@._alter_topic(text, integer, interval, bigint, interval, bigint);

CREATE FUNCTION @extschema@._create_topic(
    topic text,
    partitions integer DEFAULT 1,
    retention interval DEFAULT '7 days',
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT '1 day',
    segment_bytes bigint DEFAULT 1073741824,
    format text DEFAULT 'json',
    cleanup_policy text DEFAULT 'delete',
    delete_retention interval DEFAULT '1 day',
    min_compaction_lag interval DEFAULT '0',
    max_compaction_lag interval DEFAULT NULL)
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
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(partitions::text, 'NULL'));
    END IF;
    PERFORM @extschema@._check_topic_settings(retention, retention_bytes,
                                              segment_interval, segment_bytes);
    IF _create_topic.format IS NULL THEN
        RAISE EXCEPTION 'format must not be null'
            USING ERRCODE = '22004',
                  HINT = 'A topic''s format is ''json'' (text keys, jsonb values and headers) or ''binary'' (bytea keys and values, eventlog.header[] headers).';
    END IF;
    IF _create_topic.format NOT IN ('json', 'binary') THEN
        RAISE EXCEPTION 'invalid topic format "%"', left(_create_topic.format, 100)
            USING ERRCODE = '22023',
                  HINT = 'A topic''s format is ''json'' (text keys, jsonb values and headers) or ''binary'' (bytea keys and values, eventlog.header[] headers).';
    END IF;
    cleanup_policy := @extschema@._check_compaction_settings(cleanup_policy, delete_retention,
                                                             min_compaction_lag, max_compaction_lag);
    -- Serialise topic creation, so that two sessions creating the same name
    -- get a clear error instead of a unique violation.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _create_topic.topic) THEN
        RAISE EXCEPTION 'topic "%" already exists', topic
            USING ERRCODE = 'duplicate_object';
    END IF;
    INSERT INTO @extschema@.topic_catalog AS t
           (name, partitions, retention, retention_bytes, segment_interval, segment_bytes, owner,
            format, cleanup_policy, delete_retention, min_compaction_lag, max_compaction_lag)
    VALUES (topic, partitions, retention, retention_bytes, segment_interval, segment_bytes,
            @extschema@._caller(), _create_topic.format, _create_topic.cleanup_policy,
            _create_topic.delete_retention, _create_topic.min_compaction_lag,
            _create_topic.max_compaction_lag)
    RETURNING t.topic_id INTO new_id;
    PERFORM @extschema@._add_partitions(new_id, 0, partitions - 1);
END
$$;
COMMENT ON FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint, text, text, interval, interval, interval) IS
'internal: the body of eventlog.create_topic, run as the extension owner on behalf of the caller eventlog.create_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint, text, text, interval, interval, interval) FROM PUBLIC;

CREATE FUNCTION @extschema@.create_topic(
    topic text,
    partitions integer DEFAULT 1,
    retention interval DEFAULT '7 days',
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT '1 day',
    segment_bytes bigint DEFAULT 1073741824,
    format text DEFAULT 'json',
    cleanup_policy text DEFAULT 'delete',
    delete_retention interval DEFAULT '1 day',
    min_compaction_lag interval DEFAULT '0',
    max_compaction_lag interval DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text, text, interval, interval, interval) IS
'creates a topic of that many partitions; retention NULL keeps records forever, retention_bytes is per partition; format ''json'' (text keys, jsonb values and headers: produce, read) or ''binary'' (Kafka''s bytes: produce_binary, read_binary), fixed for the topic''s life; cleanup_policy ''compact'' or ''compact,delete'' keeps the latest record of each key (see eventlog.compact)';
-- Who may create topics: those granted EXECUTE on create_topic.
REVOKE ALL ON FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text, text, interval, interval, interval) FROM PUBLIC;

CREATE FUNCTION @extschema@._alter_topic(
    topic text,
    partitions integer DEFAULT NULL,
    retention interval DEFAULT NULL,
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT NULL,
    segment_bytes bigint DEFAULT NULL,
    cleanup_policy text DEFAULT NULL,
    delete_retention interval DEFAULT NULL,
    min_compaction_lag interval DEFAULT NULL,
    max_compaction_lag interval DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cur @extschema@.topic_catalog;
    new_retention interval;
    new_retention_bytes bigint;
    new_policy text;
    new_max_lag interval;
BEGIN
    PERFORM @extschema@._require_shmem();
    PERFORM @extschema@._check_topic_name(topic);
    -- Growth checks eventlog.max_partitions under topic_catalog's SHARE ROW
    -- EXCLUSIVE lock (_add_partitions): take it before the topic's row lock,
    -- as create_topic does.  Waiting for it while holding the row would
    -- deadlock with a transaction that changed topic_catalog (an alter_topic,
    -- drop_topic or grant) and then alters this topic.  Only for the
    -- topic's owner: no one else may hold up topic DDL with it.
    IF partitions IS NOT NULL THEN
        IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _alter_topic.topic) THEN
            PERFORM @extschema@._authorize(topic, 'owner');
        END IF;
        LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    END IF;
    SELECT * INTO cur FROM @extschema@.topic_catalog t
     WHERE t.name = _alter_topic.topic FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', topic
            USING ERRCODE = 'undefined_object';
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
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass a negative value (for example interval ''-1 second'' or -1) to remove a limit, or NULL to leave it unchanged.';
    END IF;
    PERFORM @extschema@._check_topic_settings(new_retention, new_retention_bytes,
        coalesce(segment_interval, cur.segment_interval),
        coalesce(segment_bytes, cur.segment_bytes));
    -- A negative max_compaction_lag removes it, as for retention.
    new_max_lag := CASE WHEN max_compaction_lag IS NULL THEN cur.max_compaction_lag
                        WHEN max_compaction_lag < interval '0' THEN NULL
                        ELSE max_compaction_lag END;
    new_policy := @extschema@._check_compaction_settings(
        coalesce(cleanup_policy, cur.cleanup_policy),
        coalesce(delete_retention, cur.delete_retention),
        coalesce(min_compaction_lag, cur.min_compaction_lag),
        new_max_lag);
    IF partitions IS NOT NULL AND partitions < cur.partitions THEN
        RAISE EXCEPTION 'cannot reduce the number of partitions of topic "%"', topic
            USING ERRCODE = 'invalid_parameter_value',
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
           segment_bytes = coalesce(_alter_topic.segment_bytes, cur.segment_bytes),
           cleanup_policy = new_policy,
           delete_retention = coalesce(_alter_topic.delete_retention, cur.delete_retention),
           min_compaction_lag = coalesce(_alter_topic.min_compaction_lag, cur.min_compaction_lag),
           max_compaction_lag = new_max_lag
     WHERE t.topic_id = cur.topic_id;
END
$$;
COMMENT ON FUNCTION @extschema@._alter_topic(text, integer, interval, bigint, interval, bigint, text, interval, interval, interval) IS
'internal: the body of eventlog.alter_topic, run as the extension owner on behalf of the caller eventlog.alter_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._alter_topic(text, integer, interval, bigint, interval, bigint, text, interval, interval, interval) FROM PUBLIC;

CREATE FUNCTION @extschema@.alter_topic(
    topic text,
    partitions integer DEFAULT NULL,
    retention interval DEFAULT NULL,
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT NULL,
    segment_bytes bigint DEFAULT NULL,
    cleanup_policy text DEFAULT NULL,
    delete_retention interval DEFAULT NULL,
    min_compaction_lag interval DEFAULT NULL,
    max_compaction_lag interval DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.alter_topic(text, integer, interval, bigint, interval, bigint, text, interval, interval, interval) IS
'changes a topic''s settings: NULL leaves one unchanged, a negative retention or retention_bytes removes that limit; partitions can only grow (keys then hash over the new count, as in Kafka)';

DO $$
DECLARE
    f record;
    g record;
    acl text;
    init pg_catalog.aclitem[];
BEGIN
    FOR f IN SELECT * FROM (VALUES ('create_topic', '@extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text, text, interval, interval, interval)'::pg_catalog.regprocedure),
                                   ('alter_topic', '@extschema@.alter_topic(text, integer, interval, bigint, interval, bigint, text, interval, interval, interval)'::pg_catalog.regprocedure)) v(name, fn)
    LOOP
        acl := pg_catalog.current_setting('pg_eventlog_upgrade.' || f.name || '_acl', true);
        CONTINUE WHEN acl IS NULL OR acl = '';
        SELECT i.initprivs INTO init FROM pg_catalog.pg_init_privs i
         WHERE i.objoid = f.fn AND i.classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND i.objsubid = 0;
        -- alter_topic is PUBLIC's by default: an ACL set means it was changed.
        EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f.fn);
        FOR g IN SELECT e.grantee, e.is_grantable
                   FROM pg_catalog.aclexplode(acl::pg_catalog.aclitem[]) e
                  WHERE e.privilege_type = 'EXECUTE'
                    AND e.grantee <> (SELECT p.proowner FROM pg_catalog.pg_proc p WHERE p.oid = f.fn)
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', f.fn,
                                      CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                                           ELSE g.grantee::pg_catalog.regrole::text END,
                                      CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- As for 0.3.0's first create_topic change above: the grants stay
        -- the user's, the initial privileges those of a fresh install.
        IF init IS NULL THEN
            DELETE FROM pg_catalog.pg_init_privs i
             WHERE i.objoid = f.fn AND i.classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass
               AND i.objsubid = 0;
        ELSE
            UPDATE pg_catalog.pg_init_privs i SET initprivs = init
             WHERE i.objoid = f.fn AND i.classoid = 'pg_catalog.pg_proc'::pg_catalog.regclass
               AND i.objsubid = 0;
        END IF;
    END LOOP;
END
$$;

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
    retention_horizon timestamptz;
    roll_horizon timestamptz;
    max_lag_horizon timestamptz;
    saved_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    -- The caller's lock_timeout if shorter (0 is none).
    drop_lock_timeout text := CASE
        WHEN pg_catalog.current_setting('lock_timeout')::interval > interval '0'
         AND pg_catalog.current_setting('lock_timeout')::interval < interval '50 ms'
        THEN pg_catalog.current_setting('lock_timeout') ELSE '50ms' END;
BEGIN
    SELECT * INTO t FROM @extschema@.topic_catalog c WHERE c.topic_id = _maintain_topic.topic_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- One round per topic at a time (the worker and enforce_retention may
    -- meet): a round that finds another in progress leaves it the work.
    IF NOT @extschema@._try_lock_maintenance(t.topic_id) THEN
        RETURN;
    END IF;
    r.topic := t.name;
    -- The settings may be as long as an interval can be ('100000 years'
    -- for "forever", as Kafka users set Long.MAX_VALUE): beyond the range
    -- of timestamptz, the horizon is -infinity (nothing is that old)
    -- rather than an error that would stop every round of the topic.
    BEGIN
        retention_horizon := pg_catalog.now() - t.retention;
    EXCEPTION WHEN datetime_field_overflow THEN
        retention_horizon := '-infinity';
    END;
    BEGIN
        roll_horizon := pg_catalog.now() - t.segment_interval;
    EXCEPTION WHEN datetime_field_overflow THEN
        roll_horizon := '-infinity';
    END;
    BEGIN
        max_lag_horizon := pg_catalog.now() - t.max_compaction_lag;
    EXCEPTION WHEN datetime_field_overflow THEN
        max_lag_horizon := '-infinity';
    END;
    FOR p IN 0 .. t.partitions - 1 LOOP
        r.partition := p;
        -- Ordered with counter recovery (el_recover_next_offset): from the
        -- routing read until the base offset is recorded and committed.
        PERFORM @extschema@._lock_routing(t.topic_id, p);
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

        -- 2. Retention, oldest sealed segment first.  The partition's size
        --    only matters under retention_bytes.
        part_bytes := NULL;
        IF t.retention_bytes IS NOT NULL THEN
            SELECT coalesce(sum(pg_catalog.pg_total_relation_size(
                       pg_catalog.to_regclass(format('eventlog_segments.%I', s.table_name)))), 0)
              INTO part_bytes
              FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p;
        END IF;
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
            -- A topic that is only compacted keeps its segments (Kafka's
            -- cleanup.policy=compact): compaction thins them out instead.
            EXIT WHEN t.cleanup_policy = 'compact';
            SELECT st.newest INTO newest FROM @extschema@._segment_times(seg.table_name) st;
            EXIT WHEN NOT (
                (t.retention IS NOT NULL AND (newest IS NULL OR newest < retention_horizon))
                OR (t.retention_bytes IS NOT NULL AND part_bytes > t.retention_bytes));
            -- Never queue behind a reader or a writer: skip till next round.
            -- DROP ... CASCADE also drops, and so must lock, every object
            -- made to depend on the segment (a view, a column default or a
            -- constraint holding its regclass): whoever holds one of those
            -- is waited for at most drop_lock_timeout, never longer.
            BEGIN
                EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                               seg.table_name);
                seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
                PERFORM pg_catalog.set_config('lock_timeout', drop_lock_timeout, true);
                -- CASCADE: see _drop_topic.
                EXECUTE format('DROP TABLE eventlog_segments.%I CASCADE', seg.table_name);
                PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
            EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
                -- The sub-block's abort has restored lock_timeout.
                r.action := 'skipped (busy)';
                r.segment := seg.table_name;
                r.first_offset := seg.base_offset;
                r.next_offset := nxt;
                r.bytes := NULL;
                RETURN NEXT r;
                EXIT;
            END;
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
        SELECT st.oldest, st.newest INTO oldest, newest
          FROM @extschema@._segment_times(seg.table_name) st;
        CONTINUE WHEN oldest IS NULL;
        seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
        IF oldest < roll_horizon
           OR seg_bytes >= t.segment_bytes
           OR (t.retention IS NOT NULL AND t.cleanup_policy <> 'compact'
               AND newest < retention_horizon)
           -- The active segment is never compacted: max_compaction_lag
           -- bounds how long a record may stay there.
           OR (t.cleanup_policy <> 'delete' AND t.max_compaction_lag IS NOT NULL
               AND oldest < max_lag_horizon) THEN
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
COMMENT ON FUNCTION @extschema@._maintain_topic(integer) IS
'internal: one maintenance round for a topic (record active bases, remove expired segments, roll full ones)';

/* ------------------------------------------------------------------------
 * Log compaction (cleanup_policy 'compact' or 'compact,delete'): the
 * latest record of each key stays, older ones and expired tombstones go.
 *
 * Sealed segments are rewritten into new tables holding their surviving
 * records (src/compact.c), which then take the old tables' names in one
 * transaction: no row is ever DELETEd, no dead tuple left behind, offsets
 * never change (readers skip the gaps, as they skip rolled-back offsets).
 * The swap takes the old table with LOCK ... NOWAIT, as retention does: a
 * segment someone reads is skipped till the next round.
 * ------------------------------------------------------------------------ */

/*
 * Per partition: how far compaction got, and what it did.  Not a catalog
 * table of the topic cache (no invalidation trigger): backends need none
 * of it.
 */
CREATE TABLE @extschema@.compaction_catalog (
    topic_id          integer NOT NULL,
    partition         integer NOT NULL,
    -- Every sealed segment below this offset has been compacted since it
    -- was sealed (the "clean" part; the rest of the sealed log is "dirty").
    cleaned_offset    bigint NOT NULL DEFAULT 0,
    dirty_ratio       double precision,
    last_compaction   timestamptz,
    rounds            bigint NOT NULL DEFAULT 0,
    records_removed   bigint NOT NULL DEFAULT 0,
    bytes_reclaimed   bigint NOT NULL DEFAULT 0,
    -- When the oldest tombstone kept expires (delete_retention after it was
    -- appended): a round is due then, however little is dirty.
    next_tombstone_expiry timestamptz,
    PRIMARY KEY (topic_id, partition),
    FOREIGN KEY (topic_id, partition)
        REFERENCES @extschema@.partition_catalog ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.compaction_catalog IS
'pg_eventlog log compaction: per partition of a compacted topic, how far compaction got and what it removed (see the eventlog.compaction view)';
GRANT SELECT ON @extschema@.compaction_catalog TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.compaction_catalog', '');

CREATE FUNCTION @extschema@._compact_segments(
    topic_id integer, partition integer, segments name[],
    first_offsets bigint[], next_offsets bigint[], dirty_from bigint,
    horizon timestamptz,
    OUT segment name, OUT new_table name, OUT records_before bigint,
    OUT records_after bigint, OUT oldest_tombstone timestamptz,
    OUT cleaned_to bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'el_compact_segments'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._compact_segments(integer, integer, name[], bigint[], bigint[], bigint, timestamptz) IS
'internal: one compaction pass over a partition''s cleanable segments (its key map bounded by eventlog.compaction_memory): writes the surviving records of each segment that loses some into a new table (segment name + ''_c''), frozen, and says where the pass stopped';

/*
 * What a segment's records take: its heap, TOAST and index, not its
 * visibility map and free space map (a compacted segment's rows are
 * inserted frozen, so it has a visibility map the old one may lack: a
 * rewrite that removes little would seem to grow).
 */
CREATE FUNCTION @extschema@._segment_data_bytes(segment name)
RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.pg_table_size(r) + pg_catalog.pg_indexes_size(r)
           - pg_catalog.pg_relation_size(r, 'vm') - pg_catalog.pg_relation_size(r, 'fsm')
      FROM (SELECT pg_catalog.format('eventlog_segments.%I', segment)::regclass AS r) x
$$;
COMMENT ON FUNCTION @extschema@._segment_data_bytes(name) IS
'internal: the bytes of a segment''s heap, TOAST and index (without its visibility and free space maps)';

/*
 * Kafka's min.cleanable.dirty.ratio, fixed at its default: a partition is
 * compacted when at least half of its sealed log (in bytes) is dirty, when
 * a dirty record is older than max_compaction_lag, or when a tombstone
 * kept expires.
 */
CREATE FUNCTION @extschema@._compact_partition(t @extschema@.topic_catalog, p integer,
                                              force boolean)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r @extschema@.maintenance_action;
    cc @extschema@.compaction_catalog;
    rt record;
    seg record;
    c record;
    stable bigint;
    newest timestamptz;
    oldest timestamptz;
    oldest_dirty timestamptz;
    segs name[] := '{}';
    bases bigint[] := '{}';
    nexts bigint[] := '{}';
    range_end bigint;
    seg_bytes bigint;
    dirty_bytes bigint := 0;
    total_bytes bigint := 0;
    ratio double precision;
    i integer;
    busy boolean := false;
    before_bytes bigint;
    after_bytes bigint;
    removed bigint := 0;
    reclaimed bigint := 0;
    tomb timestamptz;
    cleaned_to bigint;
    lag_horizon timestamptz;
    max_lag_horizon timestamptz;
    delete_horizon timestamptz;
    saved_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    drop_lock_timeout text := CASE
        WHEN pg_catalog.current_setting('lock_timeout')::interval > interval '0'
         AND pg_catalog.current_setting('lock_timeout')::interval < interval '50 ms'
        THEN pg_catalog.current_setting('lock_timeout') ELSE '50ms' END;
BEGIN
    r.topic := t.name;
    r.partition := p;
    INSERT INTO @extschema@.compaction_catalog (topic_id, partition)
    VALUES (t.topic_id, p) ON CONFLICT DO NOTHING;
    SELECT * INTO cc FROM @extschema@.compaction_catalog x
     WHERE x.topic_id = t.topic_id AND x.partition = p;
    SELECT * INTO rt FROM @extschema@._partition_routing(t.name, p);
    stable := @extschema@.last_stable_offset(t.name, p);
    -- The settings may be as long as an interval can be ('100000 years'
    -- for "forever", as Kafka users set Long.MAX_VALUE): beyond the range
    -- of timestamptz, the horizon is -infinity rather than an error that
    -- would stop every round of the topic.
    BEGIN
        lag_horizon := pg_catalog.now() - t.min_compaction_lag;
    EXCEPTION WHEN datetime_field_overflow THEN
        lag_horizon := '-infinity';
    END;
    BEGIN
        max_lag_horizon := pg_catalog.now() - t.max_compaction_lag;
    EXCEPTION WHEN datetime_field_overflow THEN
        max_lag_horizon := '-infinity';
    END;
    BEGIN
        delete_horizon := pg_catalog.now() - t.delete_retention;
    EXCEPTION WHEN datetime_field_overflow THEN
        delete_horizon := '-infinity';
    END;

    -- The cleanable segments: sealed, oldest first, up to the first one
    -- with an offset in flight or a record younger than min_compaction_lag.
    -- The active segment never is.
    FOR seg IN SELECT s.segment_no, s.base_offset, s.table_name,
                      lead(s.base_offset) OVER (ORDER BY s.segment_no) AS nxt
                 FROM @extschema@.segment_catalog s
                WHERE s.topic_id = t.topic_id AND s.partition = p
                ORDER BY s.segment_no
    LOOP
        EXIT WHEN seg.segment_no >= rt.active_segment OR seg.base_offset IS NULL
               OR seg.nxt IS NULL OR seg.nxt > stable;
        SELECT st.oldest, st.newest INTO oldest, newest
          FROM @extschema@._segment_times(seg.table_name) st;
        EXIT WHEN newest IS NOT NULL AND newest > lag_horizon;
        seg_bytes := pg_catalog.pg_total_relation_size(
            format('eventlog_segments.%I', seg.table_name)::regclass);
        total_bytes := total_bytes + seg_bytes;
        -- A pass that found its key map full stops inside a segment: the
        -- segment is dirty.
        IF seg.nxt > cc.cleaned_offset THEN
            dirty_bytes := dirty_bytes + seg_bytes;
            oldest_dirty := coalesce(oldest_dirty, oldest);
        END IF;
        segs := segs || seg.table_name;
        bases := bases || seg.base_offset;
        nexts := nexts || seg.nxt;
        range_end := seg.nxt;
    END LOOP;
    ratio := CASE WHEN total_bytes > 0 THEN dirty_bytes::double precision / total_bytes END;
    UPDATE @extschema@.compaction_catalog x SET dirty_ratio = ratio
     WHERE x.topic_id = t.topic_id AND x.partition = p
       AND x.dirty_ratio IS DISTINCT FROM ratio;
    IF range_end IS NULL THEN
        RETURN;
    END IF;
    -- Due only when a condition holds: with no tombstone kept,
    -- next_tombstone_expiry is NULL, and NOT (false OR NULL) is NULL, which
    -- IF takes as false (the round ran, reading every sealed segment, each
    -- time the worker came by).
    IF NOT coalesce(force
            OR (range_end > cc.cleaned_offset AND ratio >= 0.5)
            OR (t.max_compaction_lag IS NOT NULL AND oldest_dirty IS NOT NULL
                AND oldest_dirty < max_lag_horizon)
            OR cc.next_tombstone_expiry <= pg_catalog.now(), false) THEN
        RETURN;
    END IF;

    -- A segment someone holds (a reader's open transaction) could not be
    -- swapped: the range ends before it, rather than rewriting what would
    -- be thrown away.  The probe's lock goes with its sub-block.  Only when
    -- the round is due: each probe of an ACCESS EXCLUSIVE lock takes an xid
    -- and writes WAL (for standbys), and the worker checks every compacted
    -- partition each round.
    FOR i IN 1 .. pg_catalog.array_length(segs, 1) LOOP
        BEGIN
            EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                           segs[i]);
            RAISE EXCEPTION USING ERRCODE = 'EL017';
        EXCEPTION
            WHEN lock_not_available THEN
                r.action := 'skipped (busy)';
                r.segment := segs[i];
                r.first_offset := bases[i];
                r.next_offset := nexts[i];
                r.bytes := NULL;
                RETURN NEXT r;
                segs := segs[1:i - 1];
                bases := bases[1:i - 1];
                nexts := nexts[1:i - 1];
                range_end := nexts[i - 1];
                EXIT;
            WHEN SQLSTATE 'EL017' THEN
                NULL;
        END;
    END LOOP;
    IF range_end IS NULL THEN
        RETURN;
    END IF;

    -- Swap oldest first, and stop at the first segment someone holds: a
    -- later segment may drop an expired tombstone only if every record it
    -- deleted, in earlier segments, is gone too.
    i := 0;
    FOR c IN SELECT * FROM @extschema@._compact_segments(t.topic_id, p, segs, bases, nexts,
                                                         cc.cleaned_offset, delete_horizon)
    LOOP
        i := i + 1;
        cleaned_to := c.cleaned_to;
        IF c.oldest_tombstone IS NOT NULL THEN
            tomb := least(tomb, c.oldest_tombstone);
        END IF;
        CONTINUE WHEN c.new_table IS NULL;
        IF busy THEN
            EXECUTE format('DROP TABLE eventlog_segments.%I', c.new_table);
            CONTINUE;
        END IF;
        -- The new table becomes a segment as _create_segment makes one.
        EXECUTE format('ALTER TABLE eventlog_segments.%I ADD CONSTRAINT %I PRIMARY KEY (offset_id)',
                       c.new_table, c.new_table || '_pkey');
        EXECUTE format(
            'CREATE TRIGGER segment_guard BEFORE INSERT OR UPDATE OR DELETE'
            ' ON eventlog_segments.%I FOR EACH ROW'
            ' EXECUTE FUNCTION @extschema@._segment_guard()', c.new_table);
        EXECUTE format(
            'CREATE TRIGGER segment_guard_truncate BEFORE TRUNCATE'
            ' ON eventlog_segments.%I FOR EACH STATEMENT'
            ' EXECUTE FUNCTION @extschema@._segment_guard()', c.new_table);
        EXECUTE format(
            'ALTER TABLE eventlog_segments.%I ENABLE ALWAYS TRIGGER segment_guard,'
            ' ENABLE ALWAYS TRIGGER segment_guard_truncate', c.new_table);
        EXECUTE format('COMMENT ON TABLE eventlog_segments.%I IS %L', c.new_table,
            pg_catalog.obj_description(format('eventlog_segments.%I', c.segment)::regclass, 'pg_class'));
        BEGIN
            -- Never queue behind a reader: skip till next round (as
            -- retention does, and DROP ... CASCADE bounded the same way).
            EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                           c.segment);
            before_bytes := @extschema@._segment_data_bytes(c.segment);
            PERFORM pg_catalog.set_config('lock_timeout', drop_lock_timeout, true);
            EXECUTE format('DROP TABLE eventlog_segments.%I CASCADE', c.segment);
            PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            busy := true;
            EXECUTE format('DROP TABLE eventlog_segments.%I', c.new_table);
            r.action := 'skipped (busy)';
            r.segment := c.segment;
            r.first_offset := bases[i];
            r.next_offset := nexts[i];
            r.bytes := NULL;
            RETURN NEXT r;
            CONTINUE;
        END;
        EXECUTE format('ALTER TABLE eventlog_segments.%I RENAME TO %I', c.new_table, c.segment);
        EXECUTE format('ALTER INDEX eventlog_segments.%I RENAME TO %I',
                       c.new_table || '_pkey', c.segment || '_pkey');
        -- Tell every session's topic cache (the segment's OID changed).
        UPDATE @extschema@.segment_catalog s SET table_name = s.table_name
         WHERE s.topic_id = t.topic_id AND s.partition = p AND s.table_name = c.segment;
        after_bytes := @extschema@._segment_data_bytes(c.segment);
        removed := removed + c.records_before - c.records_after;
        -- Never negative: a rewrite that frees too little to empty a page
        -- reclaims nothing.
        reclaimed := reclaimed + greatest(before_bytes - after_bytes, 0);
        r.action := 'compacted';
        r.segment := c.segment;
        r.first_offset := bases[i];
        r.next_offset := nexts[i];
        r.bytes := greatest(before_bytes - after_bytes, 0);
        RETURN NEXT r;
    END LOOP;

    IF cleaned_to = cc.cleaned_offset THEN
        RAISE WARNING 'compaction of partition % of topic "%" made no progress', p, t.name
            USING DETAIL = 'The key map of eventlog.compaction_memory was full before it held the first dirty record''s key.',
                  HINT = 'Raise eventlog.compaction_memory.';
    END IF;
    BEGIN
        tomb := tomb + t.delete_retention;
    EXCEPTION WHEN datetime_field_overflow THEN
        tomb := 'infinity';
    END;
    UPDATE @extschema@.compaction_catalog x
       -- A pass whose key map was full stopped at cleaned_to: the rest
       -- is for the next rounds (the dirty ratio stays as measured).
       -- (never back: what was clean stays so, should min_compaction_lag
       -- have grown).
       SET cleaned_offset = CASE WHEN busy THEN x.cleaned_offset
                                 ELSE greatest(x.cleaned_offset, coalesce(cleaned_to, range_end)) END,
           dirty_ratio = CASE WHEN busy OR cleaned_to IS NOT NULL THEN x.dirty_ratio
                              ELSE 0 END,
           last_compaction = pg_catalog.now(),
           rounds = x.rounds + 1,
           records_removed = x.records_removed + removed,
           bytes_reclaimed = x.bytes_reclaimed + reclaimed,
           -- After a skipped segment, retry next round.
           next_tombstone_expiry = CASE WHEN busy THEN pg_catalog.now()
                                        ELSE tomb END
     WHERE x.topic_id = t.topic_id AND x.partition = p;
END
$$;
COMMENT ON FUNCTION @extschema@._compact_partition(@extschema@.topic_catalog, integer, boolean) IS
'internal: one compaction round of a partition (without force, only when due)';

CREATE FUNCTION @extschema@._compact_topic(topic_id integer, force boolean)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t @extschema@.topic_catalog;
    p integer;
BEGIN
    SELECT * INTO t FROM @extschema@.topic_catalog c WHERE c.topic_id = _compact_topic.topic_id;
    IF NOT FOUND OR t.cleanup_policy NOT IN ('compact', 'compact,delete') THEN
        RETURN;
    END IF;
    -- One round per topic at a time, retention's included; drop_topic
    -- waits for it.
    IF NOT @extschema@._try_lock_maintenance(t.topic_id) THEN
        RETURN;
    END IF;
    FOR p IN 0 .. t.partitions - 1 LOOP
        RETURN QUERY SELECT * FROM @extschema@._compact_partition(t, p, force);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._compact_topic(integer, boolean) IS
'internal: compacts each partition of a compacted topic (when due, or now with force), in the caller''s transaction';

CREATE FUNCTION @extschema@._compact(topic text)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer;
    policy text;
BEGIN
    PERFORM @extschema@._require_shmem();
    PERFORM @extschema@._check_topic_name(topic);
    SELECT c.topic_id, c.cleanup_policy INTO tid, policy
      FROM @extschema@.topic_catalog c WHERE c.name = _compact.topic;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', topic USING ERRCODE = 'undefined_object';
    END IF;
    PERFORM @extschema@._authorize(topic, 'owner');
    IF policy NOT IN ('compact', 'compact,delete') THEN
        RAISE EXCEPTION 'topic "%" is not compacted', topic
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its cleanup_policy is ''%s''.', policy),
                  HINT = 'Set its cleanup_policy to ''compact'' or ''compact,delete'' with eventlog.alter_topic.';
    END IF;
    RETURN QUERY SELECT * FROM @extschema@._compact_topic(tid, true);
END
$$;
COMMENT ON FUNCTION @extschema@._compact(text) IS
'internal: the body of eventlog.compact, run as the extension owner on behalf of the caller eventlog.compact notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._compact(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.compact(topic text)
RETURNS SETOF @extschema@.maintenance_action
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.compact(text) IS
'compacts a compacted topic now (the maintenance worker does when due) and returns what it did: segments compacted (bytes: what was reclaimed) or skipped because someone held them; only the topic''s owner may';

CREATE VIEW @extschema@.compaction AS
    SELECT t.name AS topic, pc.partition, t.cleanup_policy,
           coalesce(cc.cleaned_offset, 0) AS cleaned_offset,
           cc.dirty_ratio, cc.last_compaction,
           coalesce(cc.rounds, 0) AS rounds,
           coalesce(cc.records_removed, 0) AS records_removed,
           coalesce(cc.bytes_reclaimed, 0) AS bytes_reclaimed,
           cc.next_tombstone_expiry
      FROM @extschema@.topic_catalog t
      JOIN @extschema@.partition_catalog pc USING (topic_id)
      LEFT JOIN @extschema@.compaction_catalog cc USING (topic_id, partition)
     WHERE t.cleanup_policy IN ('compact', 'compact,delete');
COMMENT ON VIEW @extschema@.compaction IS
'one row per partition of a compacted topic: the offset below which its sealed log is compacted, the dirty share of its sealed log at the last round (compaction runs at 0.5), the last compaction, rounds, records removed, bytes reclaimed, and when the oldest tombstone kept expires';
GRANT SELECT ON @extschema@.compaction TO PUBLIC;

REVOKE ALL ON FUNCTION
    @extschema@._compact_partition(@extschema@.topic_catalog, integer, boolean),
    @extschema@._compact_segments(integer, integer, name[], bigint[], bigint[], bigint, timestamptz),
    @extschema@._compact_topic(integer, boolean),
    @extschema@._segment_data_bytes(name)
  FROM PUBLIC;

CREATE OR REPLACE VIEW @extschema@.topics AS
    SELECT t.name AS topic, t.partitions, t.retention, t.retention_bytes,
           t.segment_interval, t.segment_bytes,
           coalesce(sum(p.records), 0)::bigint AS records,
           coalesce(sum(p.bytes), 0)::bigint AS bytes,
           t.created_at, t.owner, t.format,
           t.cleanup_policy, t.delete_retention, t.min_compaction_lag, t.max_compaction_lag
      FROM @extschema@.topic_catalog t
      LEFT JOIN @extschema@.partitions p ON p.topic = t.name
     GROUP BY t.topic_id;
COMMENT ON VIEW @extschema@.topics IS
'one row per topic: its settings, the records (offsets) and bytes it holds, its owner, its format (json or binary), and its compaction settings';


-- Idempotent producers (issue 16): sql/install/producers.sql, all new objects.
/* ------------------------------------------------------------------------
 * Idempotent producers (docs/delivery.md, src/producer.c): a producer
 * identity (id, epoch) obtained with init_producer, and per producer and
 * partition the last 5 batches it stored, written in the producing
 * transaction, so that a retried batch returns its original offsets
 * instead of being stored twice.  The tables are user state: pg_dump keeps
 * their rows.  Only the extension owner writes them: init_producer through
 * the gate (src/acl.c), the produce_*_idempotent functions (C, run as the
 * caller) as the tables' owner, after their own privilege checks.
 * ------------------------------------------------------------------------ */

CREATE SEQUENCE @extschema@.producer_id_seq AS bigint;
COMMENT ON SEQUENCE @extschema@.producer_id_seq IS
'pg_eventlog producer IDs: never handed out twice, also after an expired producer is removed';

CREATE TABLE @extschema@.producer_catalog (
    producer_id       bigint PRIMARY KEY,
    -- The current epoch: a batch of an older one is fenced.
    epoch             smallint NOT NULL CHECK (epoch OPERATOR(pg_catalog.>=) 0),
    -- NULL for a plain idempotent producer; a transactional id names the
    -- producer across restarts of its client (init_producer bumps the epoch).
    transactional_id  text UNIQUE
                      CHECK (pg_catalog.octet_length(transactional_id) OPERATOR(pg_catalog.<=) 1000
                             AND transactional_id OPERATOR(pg_catalog.<>) ''),
    -- The role that obtained it: only it (its members, superusers) may use it.
    owner             regrole NOT NULL,
    -- When init_producer last returned it: the expiry counts from the later
    -- of this and the last batch stored (producer_state.last_used).
    last_used         timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE @extschema@.producer_catalog IS
'pg_eventlog idempotent producers: their current epoch, transactional id and owner (use eventlog.init_producer)';

CREATE TABLE @extschema@.producer_state (
    producer_id       bigint NOT NULL
                      REFERENCES @extschema@.producer_catalog ON DELETE CASCADE,
    topic_id          integer NOT NULL,
    partition         integer NOT NULL,
    -- The epoch of the batches below: a batch of a newer epoch starts again
    -- at sequence number 0 and replaces them.
    epoch             smallint NOT NULL,
    -- The last (at most 5) batches stored, oldest first: sequence numbers of
    -- the first and last record (they wrap from 2147483647 to 0) and the
    -- first record's offset (a batch's offsets are consecutive).
    first_sequence    integer[] NOT NULL,
    last_sequence     integer[] NOT NULL,
    first_offset      bigint[] NOT NULL,
    last_used         timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (producer_id, topic_id, partition),
    -- Dropping a topic drops its producers' state.
    FOREIGN KEY (topic_id, partition)
        REFERENCES @extschema@.partition_catalog ON DELETE CASCADE
) WITH (fillfactor = 50);
COMMENT ON TABLE @extschema@.producer_state IS
'pg_eventlog idempotent producers'' state per partition: the last 5 batches each producer stored, to recognise a retried one';
CREATE INDEX producer_state_topic ON @extschema@.producer_state (topic_id, partition);

SELECT pg_catalog.pg_extension_config_dump('@extschema@.producer_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.producer_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.producer_state', '');

/*
 * The producer's lock (pg_eventlog's kind 5, src/locks.h): produce takes it
 * shared, init_producer (bumping an epoch) and expiry exclusively, so that
 * once init_producer has returned a new epoch no batch of an older one can
 * still commit.
 */
CREATE FUNCTION @extschema@._lock_producer(producer_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_producer'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_producer(bigint) IS
'internal: takes a producer''s lock exclusively to the end of the transaction (waits for its producing transactions)';
REVOKE ALL ON FUNCTION @extschema@._lock_producer(bigint) FROM PUBLIC;

CREATE FUNCTION @extschema@._try_lock_producer(producer_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_lock_producer'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_lock_producer(bigint) IS
'internal: takes a producer''s lock exclusively to the end of the transaction if no one holds it';
REVOKE ALL ON FUNCTION @extschema@._try_lock_producer(bigint) FROM PUBLIC;

CREATE FUNCTION @extschema@._init_producer(transactional_id text DEFAULT NULL,
                                           OUT producer_id bigint, OUT epoch smallint)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller regrole := @extschema@._caller();
    cur @extschema@.producer_catalog;
BEGIN
    IF transactional_id = '' OR octet_length(transactional_id) > 1000 THEN
        RAISE EXCEPTION 'invalid transactional ID'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A transactional ID is 1 to 1000 bytes long.';
    END IF;
    -- As Kafka 2.8 on: a role that may produce to some topic (or owns one);
    -- or that may create topics, which a client about to create the first
    -- topic of a database must be able to do with an idempotent producer.
    IF NOT EXISTS (SELECT FROM @extschema@.topic_catalog t
                    WHERE @extschema@.has_topic_privilege(caller, t.name, 'produce'))
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_proc f
                        WHERE f.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace
                          AND f.proname OPERATOR(pg_catalog.=) 'create_topic'
                          AND pg_catalog.has_function_privilege(caller, f.oid, 'EXECUTE')) THEN
        RAISE EXCEPTION 'permission denied to obtain a producer ID'
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Role "%s" may not produce to any topic, nor create one.', caller),
                  HINT = 'A topic''s owner can grant the produce privilege with eventlog.grant().';
    END IF;
    IF transactional_id IS NULL THEN
        INSERT INTO @extschema@.producer_catalog AS c (producer_id, epoch, owner)
        VALUES (nextval('@extschema@.producer_id_seq'), 0, caller)
        RETURNING c.producer_id, c.epoch INTO producer_id, epoch;
        RETURN;
    END IF;
    LOOP
        -- One init_producer at a time per transactional id: its row's lock,
        -- or, while there is no row, the unique index (an INSERT racing
        -- this one waits for it, then finds its row on the next turn).
        SELECT * INTO cur FROM @extschema@.producer_catalog c
         WHERE c.transactional_id = _init_producer.transactional_id FOR NO KEY UPDATE;
        IF FOUND THEN
            IF NOT pg_has_role(caller, cur.owner, 'USAGE') THEN
                RAISE EXCEPTION 'permission denied for transactional ID "%"', transactional_id
                    USING ERRCODE = 'insufficient_privilege',
                          DETAIL = 'Another role obtained a producer with this transactional ID; only it, its members and superusers may use it.';
            END IF;
            -- Fence the older epoch: wait for its producing transactions;
            -- batches of the old epoch that come later are refused.
            PERFORM @extschema@._lock_producer(cur.producer_id);
            IF cur.epoch < 32766 THEN
                UPDATE @extschema@.producer_catalog c
                   SET epoch = c.epoch + 1, last_used = now()
                 WHERE c.producer_id = cur.producer_id
                RETURNING c.producer_id, c.epoch INTO producer_id, epoch;
                RETURN;
            END IF;
            -- Out of epochs (as Kafka): a new producer ID.  The old one is
            -- removed with its state, so its clients find it unknown.
            DELETE FROM @extschema@.producer_catalog c WHERE c.producer_id = cur.producer_id;
        END IF;
        INSERT INTO @extschema@.producer_catalog AS c (producer_id, epoch, transactional_id, owner)
        VALUES (nextval('@extschema@.producer_id_seq'), 0, _init_producer.transactional_id, caller)
        ON CONFLICT ON CONSTRAINT producer_catalog_transactional_id_key DO NOTHING
        RETURNING c.producer_id, c.epoch INTO producer_id, epoch;
        EXIT WHEN FOUND;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._init_producer(text) IS
'internal: the body of eventlog.init_producer, run as the extension owner on behalf of the caller eventlog.init_producer notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._init_producer(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.init_producer(transactional_id text DEFAULT NULL,
                                          OUT producer_id bigint, OUT epoch smallint)
RETURNS record
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.init_producer(text) IS
'returns a producer identity for the *_idempotent produce functions: a new producer ID at epoch 0, or, for a transactional ID already known, its producer ID with the next epoch, which fences the older one';

CREATE FUNCTION @extschema@.produce_idempotent(
    topic text,
    key text,
    value jsonb,
    headers jsonb DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz DEFAULT NULL,
    producer_id bigint DEFAULT NULL,
    producer_epoch integer DEFAULT NULL,
    sequence integer DEFAULT NULL)
RETURNS @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.produce_idempotent(text, text, jsonb, jsonb, integer, timestamptz, bigint, integer, integer) IS
'eventlog.produce with a producer''s sequence number (partition, producer_id, producer_epoch and sequence required): a retry of one of the producer''s last 5 batches in the partition returns its original position and stores nothing';

CREATE FUNCTION @extschema@.produce_batch_idempotent(
    topic text,
    key text[],
    value jsonb[],
    headers jsonb[] DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz[] DEFAULT NULL,
    producer_id bigint DEFAULT NULL,
    producer_epoch integer DEFAULT NULL,
    sequence integer DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.produce_batch_idempotent(text, text[], jsonb[], jsonb[], integer, timestamptz[], bigint, integer, integer) IS
'eventlog.produce_batch with a producer''s sequence numbers (sequence is the first record''s): a retry of one of the producer''s last 5 batches in the partition returns its original positions and stores nothing';

CREATE FUNCTION @extschema@.produce_binary_idempotent(
    topic text,
    key bytea,
    value bytea,
    headers @extschema@.header[] DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz DEFAULT NULL,
    producer_id bigint DEFAULT NULL,
    producer_epoch integer DEFAULT NULL,
    sequence integer DEFAULT NULL)
RETURNS @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_binary'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.produce_binary_idempotent(text, bytea, bytea, @extschema@.header[], integer, timestamptz, bigint, integer, integer) IS
'eventlog.produce_binary with a producer''s sequence number: a retry of one of the producer''s last 5 batches in the partition returns its original position and stores nothing';

CREATE FUNCTION @extschema@.produce_binary_batch_idempotent(
    topic text,
    messages @extschema@.message[],
    partition integer DEFAULT NULL,
    producer_id bigint DEFAULT NULL,
    producer_epoch integer DEFAULT NULL,
    sequence integer DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_binary_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.produce_binary_batch_idempotent(text, @extschema@.message[], integer, bigint, integer, integer) IS
'eventlog.produce_binary_batch with a producer''s sequence numbers (sequence is the first record''s): a retry of one of the producer''s last 5 batches in the partition returns its original positions and stores nothing';

/*
 * Expiry, by the maintenance worker (maintenance.c, producer.c): producers
 * neither returned by init_producer nor used to store a batch for
 * "expiration" (eventlog.producer_id_expiration), with their state.  Each
 * under its row lock and its producer lock, both tried: a producer in use
 * right now is kept, and a batch after the expiry finds it unknown.
 */
CREATE FUNCTION @extschema@._expire_producers(expiration interval)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p bigint;
    n bigint := 0;
    horizon timestamptz := now() - expiration;
BEGIN
    FOR p IN SELECT c.producer_id FROM @extschema@.producer_catalog c
              WHERE c.last_used < horizon
                AND NOT EXISTS (SELECT FROM @extschema@.producer_state s
                                 WHERE s.producer_id = c.producer_id AND s.last_used >= horizon)
              ORDER BY c.producer_id
    LOOP
        -- In init_producer's order (the row, then the producer's lock),
        -- never waiting: a producer in use is kept.
        PERFORM FROM @extschema@.producer_catalog c WHERE c.producer_id = p
            FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        CONTINUE WHEN NOT @extschema@._try_lock_producer(p);
        -- Checked again under the lock, with this statement's fresh snapshot.
        DELETE FROM @extschema@.producer_catalog c
         WHERE c.producer_id = p AND c.last_used < horizon
           AND NOT EXISTS (SELECT FROM @extschema@.producer_state s
                            WHERE s.producer_id = c.producer_id AND s.last_used >= horizon);
        IF FOUND THEN
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END
$$;
COMMENT ON FUNCTION @extschema@._expire_producers(interval) IS
'internal: removes the producers unused for the given interval, with their state (the maintenance worker runs it with eventlog.producer_id_expiration)';
REVOKE ALL ON FUNCTION @extschema@._expire_producers(interval) FROM PUBLIC;

-- Reads on hot standbys (issue 20): the stable offsets the primary publishes.
/*
 * Reads on hot standbys (docs/design.md, "Reads on hot standbys").
 *
 * The primary's notifier publishes each partition's last stable offset
 * here, in a transaction of its own that begins after the records below
 * that offset committed: a standby snapshot that sees a published value
 * sees every record below it.  Derived state, not user data: pg_dump leaves
 * it out (a restored database publishes again as records come).  No
 * invalidation trigger: a publication changes no cached metadata.
 */
CREATE TABLE @extschema@.published_offsets (
    topic_id          integer NOT NULL,
    partition         integer NOT NULL,
    stable_offset     bigint NOT NULL,
    -- The partition's active segment when the offset was computed: every
    -- record below stable_offset lies in it or an older one.
    active_segment    integer NOT NULL,
    published_at      timestamptz NOT NULL,
    PRIMARY KEY (topic_id, partition),
    FOREIGN KEY (topic_id, partition)
        REFERENCES @extschema@.partition_catalog ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.published_offsets IS
'pg_eventlog: each partition''s last stable offset as the primary published it, what readers on hot standbys serve up to';
GRANT SELECT ON @extschema@.published_offsets TO PUBLIC;

CREATE VIEW @extschema@.stable_offset_publication AS
    SELECT t.name AS topic, o.partition,
           @extschema@.last_stable_offset(t.name, o.partition) AS last_stable_offset,
           o.stable_offset AS published_stable_offset,
           o.published_at,
           pg_catalog.now() OPERATOR(pg_catalog.-) o.published_at AS published_age
      FROM @extschema@.published_offsets o
      JOIN @extschema@.topic_catalog t USING (topic_id);
COMMENT ON VIEW @extschema@.stable_offset_publication IS
'per partition: the last stable offset here (on a standby, the published one), the one last published for standbys, and when';
GRANT SELECT ON @extschema@.stable_offset_publication TO PUBLIC;

-- _kafka_fetch takes the response's byte limit (total_max_bytes).
DROP FUNCTION @extschema@._kafka_fetch(text[], integer[], bigint[], integer[], integer, bigint[]);
/*
 * Kafka Fetch: records of each (topics[i], partitions[i]) from offsets[i]
 * on, at most max_records[i] of them, and only while the bytes of the
 * records before a record (key, value and headers) are below max_bytes[i]
 * (NULL: no limit): the gateway sizes max_records from the records it saw
 * before, and a partition of records much larger than those must not send
 * it gigabytes to build a response of partition_max_bytes.  The same for
 * the response: once a record was read, an item reads only while the bytes
 * of every record read before are below total_max_bytes (NULL: no limit),
 * so that a Fetch of a thousand partitions stops reading at the response's
 * max_bytes; the call's first record is read whatever its size (Kafka
 * returns it, so that a consumer progresses).  Rows with
 * k_offset NULL give each
 * item's outcome: a Kafka error code (0, 1 OFFSET_OUT_OF_RANGE, 3
 * UNKNOWN_TOPIC_OR_PARTITION, 29 TOPIC_AUTHORIZATION_FAILED, -1 anything
 * else, logged as a warning), its log start offset and its last stable
 * offset, taken after its records were read, so every record returned lies
 * below it.  The others are records: timestamps are event_time, a JSON
 * topic's key and value their UTF-8 text, its headers object's members
 * headers (a string's text, null, or other JSON's text).  When no item has
 * a record or an error and wait_ms > 0, it long-polls (as _kafka_await)
 * and reads again.  In C (src/kafka_fetch.c): each partition is read as
 * read_binary (read) reads it, with its checks in its order, and only up to
 * the record that reaches max_bytes[i] or total_max_bytes; when the stable
 * offsets show nothing readable, it waits without reading first.
 */
CREATE FUNCTION @extschema@._kafka_fetch(topics text[], partitions integer[], offsets bigint[],
                                         max_records integer[], wait_ms integer,
                                         max_bytes bigint[] DEFAULT NULL,
                                         total_max_bytes bigint DEFAULT NULL)
RETURNS TABLE (k_item integer, k_error smallint, k_log_start bigint, k_stable bigint,
               k_offset bigint, k_time timestamptz, k_key bytea, k_value bytea,
               k_headers @extschema@.header[])
AS 'MODULE_PATHNAME', 'el_kafka_fetch'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_fetch(text[], integer[], bigint[], integer[], integer, bigint[], bigint) IS
'internal: the Kafka gateway''s Fetch: the records of each partition from its offset on (up to max_bytes of them, and up to total_max_bytes over all), and each partition''s error code, log start and last stable offset, after a long poll of up to wait_ms when nothing is readable';

-- ListGroups takes no group's lock but those it expires, and waits for none.
CREATE OR REPLACE FUNCTION @extschema@._kafka_list_groups(states text[] DEFAULT NULL)
RETURNS TABLE (group_name text, protocol_type text, state text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The names and states as the snapshot shows them, without waiting for
    -- any group's lock: with thousands of groups, taking each one's made
    -- concurrent ListGroups queue behind each other and behind every
    -- group's requests (Kafka's ListGroups is no transaction either).  Only
    -- the groups with something to expire (as the maintenance worker's
    -- _kafka_expire_groups sees them) are expired first, and only when
    -- their lock is free: a group whose lock is held is being served.
    FOR group_name IN SELECT k.group_name FROM @extschema@.kafka_groups k
                       WHERE (k.rebalance_deadline <= now() OR k.delay_until <= now()
                              OR EXISTS (SELECT FROM @extschema@.kafka_group_members m
                                          WHERE m.group_name = k.group_name AND NOT m.awaiting_join
                                            AND m.last_heartbeat + m.session_timeout_ms * interval '1 ms' <= now()))
                         AND @extschema@._kafka_authorized(k.group_name)
                       ORDER BY k.group_name LOOP
        IF @extschema@._try_lock_kafka_group(group_name) THEN
            PERFORM @extschema@._kafka_expire(group_name);
        END IF;
    END LOOP;
    RETURN QUERY
    SELECT n.group_name, coalesce(k.protocol_type, ''), coalesce(k.state, 'Empty')
      FROM (SELECT k2.group_name FROM @extschema@.kafka_groups k2
            UNION SELECT o.group_name FROM @extschema@.group_offsets o) n
      LEFT JOIN @extschema@.kafka_groups k ON k.group_name = n.group_name
     WHERE @extschema@._kafka_valid_group(n.group_name)
       AND (states IS NULL OR cardinality(states) = 0
            OR lower(coalesce(k.state, 'Empty')) IN (SELECT lower(s) FROM unnest(states) s))
       AND @extschema@._kafka_authorized(n.group_name)
     ORDER BY n.group_name;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_list_groups(text[]) IS
'internal: the body of eventlog.kafka_list_groups, run as the extension owner (see src/acl.c)';
/* ------------------------------------------------------------------------
 * Stream processors (issue 19): sql/install/streams.sql, verbatim.
 * ------------------------------------------------------------------------ */
/* ------------------------------------------------------------------------
 * Stream processors (docs/streams.md).  A processor is a consumer group of
 * its source topic ("processor:<name>") plus, for windowed aggregates, its
 * state: two tables in this schema named by the processor's id,
 * processor_<id>_progress (a row per source partition: its largest event
 * time seen, when it last had records, its counters; row -1: the
 * watermark up to which windows were closed) and processor_<id>_windows (a
 * row per open window and group key).  Both belong to the processor's
 * owner, so that a step, which runs as the owner, writes them with plain
 * SQL; the catalog row is the extension owner's and only the gated
 * functions write it (an owner who could change the owner column could
 * make another role run its SQL).
 *
 * One step (eventlog.run_processor) is one transaction: poll a batch
 * through the group, update state and outputs, and the group's positions
 * move in the same transaction.  Steps of one processor serialize on a
 * SHARE ROW EXCLUSIVE lock of its progress table.
 * ------------------------------------------------------------------------ */

CREATE TABLE @extschema@.processor_catalog (
    processor_id          integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name                  text NOT NULL UNIQUE
                          CHECK (name OPERATOR(pg_catalog.~) '^[A-Za-z0-9._-]{1,100}$'),
    owner                 regrole NOT NULL,
    source_topic_id       integer NOT NULL,
    source_topic          text NOT NULL,
    group_name            text NOT NULL,
    kind                  text NOT NULL
                          CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['map', 'window'])),
    where_clause          text,
    -- map into a table: the SELECT list; into a topic: key, value, event time
    sink_table            regclass,
    sink_topic            text,
    select_list           text,
    key_expr              text,
    value_expr            text,
    event_time_expr       text,
    -- windows
    time_mode             text CHECK (time_mode OPERATOR(pg_catalog.=) ANY (ARRAY['event', 'processing'])),
    window_type           text CHECK (window_type OPERATOR(pg_catalog.=) ANY (ARRAY['tumbling', 'hopping'])),
    size                  interval,
    advance               interval,
    allowed_lateness      interval,
    max_out_of_orderness  interval,
    idle_timeout          interval,
    emit                  text CHECK (emit OPERATOR(pg_catalog.=) ANY (ARRAY['final', 'changes'])),
    group_by              text[],
    agg_funcs             text[],
    agg_args              text[],
    sink_columns          name[],
    sink_types            text[],
    created_at            timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE @extschema@.processor_catalog IS
'pg_eventlog stream processors (eventlog.create_processor, eventlog.create_window_processor): definitions; state lives in eventlog.processor_<id>_progress and eventlog.processor_<id>_windows';
GRANT SELECT ON @extschema@.processor_catalog TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.processor_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.processor_catalog_processor_id_seq', '');

/* A processor's catalog row, or 42704. */
CREATE FUNCTION @extschema@._processor(name text)
RETURNS @extschema@.processor_catalog
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'processor name must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO p FROM @extschema@.processor_catalog c WHERE c.name = _processor.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'processor "%" does not exist', name USING ERRCODE = 'undefined_object';
    END IF;
    RETURN p;
END
$$;
COMMENT ON FUNCTION @extschema@._processor(text) IS
'internal: a processor''s catalog row, raising 42704 if there is no such processor';

/*
 * The statement of one step, over a batch: "batch" is a FROM item giving
 * eventlog.record rows (the poll, or an empty set when create checks the
 * expressions).  $1 topic, $2 group, $3 max_records, $4 partitions, $5 the
 * sink topic, $6 the poll's wait; for windows $7 to $11 (see run_processor).  The user's expressions are pasted in
 * parentheses: they are the owner's SQL and run as the owner.
 */
CREATE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        xs := xs || format(', CASE WHEN t_.in_ THEN (%s)::numeric END AS x_%s',
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  Tumbling windows (advance = size) skip generate_series.
     */
    RETURN format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
b AS (
    SELECT record.partition AS p_, record.offset_id AS o_, t_.ts_, t_.in_,
           CASE WHEN t_.in_ THEN %4$s END AS gk_ %5$s
      FROM %2$s AS record
           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%6$s) IS TRUE END AS in_
                                 FROM (SELECT %1$s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, ct.c_) AS lim_,
           (date_bin($10, w_.ts_, '1970-01-01 00:00:00+00') + $8 + $9 <= greatest(w_.wm_, ct.c_)) AS late_
      FROM (SELECT b.*, coalesce(greatest(prev.m_, max(b.ts_) OVER (PARTITION BY b.p_ ORDER BY b.o_
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
                                 '-infinity') - $7 AS wm_
              FROM b LEFT JOIN prev ON prev.p_ = b.p_) AS w_
           CROSS JOIN ct),
a AS (%12$s),
agg AS (SELECT ws_, ws_ + $8, gk_ %7$s FROM a GROUP BY ws_, gk_),
u AS (INSERT INTO %8$s AS t (window_start, window_end, group_key %9$s)
      SELECT * FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %10$s
      RETURNING t.*),
%11$s,
pu AS (INSERT INTO %3$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT e.p_, max(e.ts_), pg_catalog.now(), count(*), count(*) FILTER (WHERE e.in_ AND e.late_),
              count(*) FILTER (WHERE e.ts_ IS NULL)
         FROM e GROUP BY e.p_
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT count(*) FROM e$f$,
        ts, batch, progress, gk, xs, filter, partials, windows, cols, merge,
        @extschema@._processor_emit_sql(p, '$11'),
        CASE WHEN p.size = p.advance
             THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
             ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                  'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                  'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_step_sql(@extschema@.processor_catalog, text) IS
'internal: the statement of one step of a processor over a batch of records';

/*
 * Writing window rows to the sink: "su" updates the rows that exist, "si"
 * inserts the others, from the window rows of a CTE "u", when the SQL
 * boolean "flag" holds.  "si" looks for the rows in the sink itself, not in
 * what "su" returned: a sink's BEFORE UPDATE trigger may skip or change a
 * row, which must not make it inserted twice.  The step holds the processor's lock, so no other
 * step of it writes the sink meanwhile; a replay overwrites what it wrote.
 */
CREATE FUNCTION @extschema@._processor_emit_sql(p @extschema@.processor_catalog, flag text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    gcols text := '';
    gmatch text := '';
    outs text := '';
    sets text := '';
    o text;
    i integer;
BEGIN
    FOR i IN 1 .. ng LOOP
        gcols := gcols || format(', (u.group_key ->> %s)::%s', i - 1, p.sink_types[2 + i]);
        gmatch := gmatch || format(' AND s.%I IS NOT DISTINCT FROM (u.group_key ->> %s)::%s',
                                   p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
    END LOOP;
    FOR i IN 1 .. na LOOP
        o := CASE p.agg_funcs[i] WHEN 'count' THEN format('u.n_%s', i)
                                 WHEN 'avg' THEN format('u.v_%1$s / NULLIF(u.n_%1$s, 0)', i)
                                 ELSE format('u.v_%s', i) END;
        outs := outs || ', ' || o;
        sets := sets || format('%s%I = %s', CASE WHEN i > 1 THEN ', ' ELSE '' END,
                               p.sink_columns[2 + ng + i], o);
    END LOOP;
    RETURN format($f$su AS (UPDATE %1$s AS s SET %2$s FROM u
        WHERE %3$s AND s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s),
si AS (INSERT INTO %1$s SELECT u.window_start, u.window_end %7$s %8$s FROM u
        WHERE %3$s AND NOT EXISTS (SELECT FROM %1$s AS s
                                    WHERE s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s))$f$,
        p.sink_table, sets, flag, p.sink_columns[1], p.sink_columns[2], gmatch, gcols, outs);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_emit_sql(@extschema@.processor_catalog, text) IS
'internal: the CTEs writing window rows to a processor''s sink table';

/* The statement closing windows up to a watermark ($1); $2 lateness, $3 emit final. */
CREATE FUNCTION @extschema@._processor_close_sql(p @extschema@.processor_catalog)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN format('WITH u AS (DELETE FROM @extschema@.%I WHERE window_end + $2 <= $1 RETURNING *), %s SELECT count(*) FROM u',
                  'processor_' || p.processor_id || '_windows',
                  @extschema@._processor_emit_sql(p, '$3'));
END
$$;
COMMENT ON FUNCTION @extschema@._processor_close_sql(@extschema@.processor_catalog) IS
'internal: the statement removing the windows a watermark closed, writing them to the sink when emit is final';

/*
 * The catalog side of create_processor and create_window_processor, run as
 * the extension owner (through el_gate) for the caller, who becomes the
 * processor's owner: checks the caller's topic privileges, records the
 * processor, creates its group and its state tables (owned by the caller).
 * The expressions were checked by the caller's create_* function, as the
 * caller; a caller who skips that only gets a processor whose steps fail.
 */
CREATE FUNCTION @extschema@.__register_processor(spec jsonb)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    caller regrole := @extschema@._caller();
    n integer;
    progress text;
BEGIN
    IF spec IS NULL THEN
        RAISE EXCEPTION 'processor specification must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    p := jsonb_populate_record(NULL::@extschema@.processor_catalog, spec);
    IF p.name IS NULL OR p.name !~ '^[A-Za-z0-9._-]{1,100}$' THEN
        RAISE EXCEPTION 'invalid processor name "%"', left(p.name, 110)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A processor name is 1 to 100 letters, digits, ".", "_" or "-".';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.processor_catalog c WHERE c.name = p.name) THEN
        RAISE EXCEPTION 'processor "%" already exists', p.name USING ERRCODE = 'duplicate_object';
    END IF;
    p.source_topic_id := @extschema@._authorize(p.source_topic, 'consume');
    IF p.sink_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.sink_topic, 'produce');
    END IF;
    p.owner := caller;
    p.group_name := 'processor:' || p.name;
    p.created_at := now();
    p.processor_id := nextval(pg_get_serial_sequence('@extschema@.processor_catalog', 'processor_id'));
    INSERT INTO @extschema@.processor_catalog SELECT p.*;
    PERFORM @extschema@._create_group(p.source_topic, p.group_name, coalesce(spec ->> 'start_from', 'earliest'));

    -- State, the owner's: steps run as the owner and write it directly.
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = p.source_topic_id;
    progress := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    EXECUTE format('CREATE TABLE %s (partition integer PRIMARY KEY, max_event_time timestamptz, '
                   'last_record_at timestamptz, records bigint NOT NULL DEFAULT 0, '
                   'late_records bigint NOT NULL DEFAULT 0, null_time_records bigint NOT NULL DEFAULT 0, '
                   'closed_through timestamptz)', progress);
    EXECUTE format('INSERT INTO %s (partition, last_record_at) SELECT g, now() FROM generate_series(-1, %s) g',
                   progress, n - 1);
    EXECUTE format('COMMENT ON TABLE %s IS %L', progress,
                   format('pg_eventlog processor %s: per source partition, the largest event time seen and counters; partition -1: the watermark windows were closed up to', p.name));
    EXECUTE format('ALTER TABLE %s OWNER TO %s', progress, caller);
    -- Watermarks and counters are public, as eventlog.consumer_groups is.
    EXECUTE format('GRANT SELECT ON %s TO PUBLIC', progress);
    IF p.kind = 'window' THEN
        EXECUTE format('CREATE TABLE @extschema@.%I (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, '
                       'group_key jsonb NOT NULL%s, PRIMARY KEY (window_start, group_key))',
                       'processor_' || p.processor_id || '_windows',
                       (SELECT string_agg(format(', v_%s numeric, n_%s bigint NOT NULL DEFAULT 0', i, i), '' ORDER BY i)
                          FROM generate_series(1, cardinality(p.agg_funcs)) i));
        EXECUTE format('COMMENT ON TABLE @extschema@.%I IS %L', 'processor_' || p.processor_id || '_windows',
                       format('pg_eventlog processor %s: one row per open window and group key', p.name));
        EXECUTE format('ALTER TABLE @extschema@.%I OWNER TO %s', 'processor_' || p.processor_id || '_windows', caller);
    END IF;
    RETURN p.processor_id;
END
$$;
COMMENT ON FUNCTION @extschema@.__register_processor(jsonb) IS
'internal: the body of eventlog._register_processor, run as the extension owner on behalf of the caller eventlog._register_processor notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@.__register_processor(jsonb) FROM PUBLIC;

CREATE FUNCTION @extschema@._register_processor(spec jsonb)
RETURNS integer
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._register_processor(jsonb) IS
'internal: records a processor the caller''s create_processor or create_window_processor checked; the caller becomes its owner';

/* Whether the current user may act for a processor: a member of its owner. */
CREATE FUNCTION @extschema@._check_processor_owner(p @extschema@.processor_catalog)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner_name name := (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner);
BEGIN
    IF owner_name IS NULL OR NOT pg_has_role(current_user, p.owner, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied for processor "%"', p.name
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Only members of the processor''s owner role %s may run, reset or drop it.', p.owner);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._check_processor_owner(@extschema@.processor_catalog) IS
'internal: raises 42501 unless the current user is a member of the processor''s owner';

/* Checks the expressions as the caller, against no records, and registers. */
CREATE FUNCTION @extschema@.create_processor(name text, source_topic text,
                                             sink_table regclass DEFAULT NULL,
                                             sink_topic text DEFAULT NULL,
                                             select_list text DEFAULT '*',
                                             where_clause text DEFAULT NULL,
                                             key text DEFAULT 'key',
                                             value text DEFAULT 'value',
                                             event_time text DEFAULT 'event_time',
                                             start_from text DEFAULT 'earliest')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
BEGIN
    IF name IS NULL OR source_topic IS NULL THEN
        RAISE EXCEPTION 'name and source_topic must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF (sink_table IS NULL) = (sink_topic IS NULL) THEN
        RAISE EXCEPTION 'a processor writes to one sink table or one sink topic'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table or sink_topic.';
    END IF;
    IF (sink_table IS NOT NULL AND select_list IS NULL)
       OR (sink_topic IS NOT NULL AND (key IS NULL OR value IS NULL OR event_time IS NULL)) THEN
        RAISE EXCEPTION 'the expressions of a processor must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    p.name := name;
    p.kind := 'map';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.where_clause := where_clause;
    IF sink_table IS NOT NULL THEN
        p.select_list := select_list;
    ELSE
        p.key_expr := key;
        p.value_expr := value;
        p.event_time_expr := event_time;
    END IF;
    -- The step's statement over no records: a syntax error, an unknown
    -- column or a missing privilege on the sink table shows now.
    EXECUTE @extschema@._processor_step_sql(p, '(SELECT (NULL::@extschema@.record).* WHERE false)')
      USING source_topic, NULL::text, 1, 1, sink_topic;
    PERFORM @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_processor(text, text, regclass, text, text, text, text, text, text, text) IS
'creates a stateless processor: each record of source_topic for which where_clause holds becomes a row of sink_table (its select_list) or a record of sink_topic (key, value, event_time); expressions are SQL over the record, run as the processor''s owner';

CREATE FUNCTION @extschema@.create_window_processor(name text, source_topic text, sink_table regclass,
                                                    size interval,
                                                    window_type text DEFAULT 'tumbling',
                                                    advance interval DEFAULT NULL,
                                                    group_by text[] DEFAULT ARRAY['key'],
                                                    aggregates text[] DEFAULT ARRAY['count(*)'],
                                                    where_clause text DEFAULT NULL,
                                                    event_time text DEFAULT 'event_time',
                                                    time_mode text DEFAULT 'event',
                                                    allowed_lateness interval DEFAULT '0',
                                                    max_out_of_orderness interval DEFAULT '0',
                                                    idle_timeout interval DEFAULT '1 minute',
                                                    emit text DEFAULT 'final',
                                                    start_from text DEFAULT 'earliest')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    m text[];
    a text;
    i integer;
    ncols integer;
BEGIN
    IF name IS NULL OR source_topic IS NULL OR sink_table IS NULL OR size IS NULL
       OR window_type IS NULL OR group_by IS NULL OR aggregates IS NULL OR event_time IS NULL
       OR time_mode IS NULL OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL
       OR idle_timeout IS NULL OR emit IS NULL OR array_position(group_by, NULL) IS NOT NULL
       OR array_position(aggregates, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of a window processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only advance and where_clause may be null.';
    END IF;
    IF window_type NOT IN ('tumbling', 'hopping') THEN
        RAISE EXCEPTION 'window_type must be ''tumbling'' or ''hopping''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF window_type = 'tumbling' AND advance IS NOT NULL AND advance <> size THEN
        RAISE EXCEPTION 'a tumbling window advances by its size' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Use window_type => ''hopping'' for windows that overlap.';
    END IF;
    IF window_type = 'hopping' AND advance IS NULL THEN
        RAISE EXCEPTION 'a hopping window needs advance' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    advance := coalesce(advance, size);
    IF size <= '0' OR advance <= '0' OR advance > size
       OR date_part('month', size) <> 0 OR date_part('year', size) <> 0
       OR date_part('month', advance) <> 0 OR date_part('year', advance) <> 0 THEN
        RAISE EXCEPTION 'invalid window size % or advance %', size, advance
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Size and advance are positive intervals without months or years, advance at most the size.';
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF time_mode NOT IN ('event', 'processing') THEN
        RAISE EXCEPTION 'time_mode must be ''event'' or ''processing''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF emit NOT IN ('final', 'changes') THEN
        RAISE EXCEPTION 'emit must be ''final'' or ''changes''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(aggregates) = 0 THEN
        RAISE EXCEPTION 'a window processor needs at least one aggregate' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.name := name;
    p.kind := 'window';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.where_clause := where_clause;
    p.event_time_expr := event_time;
    p.time_mode := time_mode;
    p.window_type := window_type;
    p.size := size;
    p.advance := advance;
    p.allowed_lateness := allowed_lateness;
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE max_out_of_orderness END;
    p.idle_timeout := idle_timeout;
    p.emit := emit;
    p.group_by := group_by;
    p.agg_funcs := '{}';
    p.agg_args := '{}';
    FOREACH a IN ARRAY aggregates LOOP
        m := regexp_match(a, '^\s*(count|sum|min|max|avg)\s*\((.*)\)\s*$', 'i');
        IF m IS NULL OR btrim(m[2]) = '' OR (btrim(m[2]) = '*' AND lower(m[1]) <> 'count') THEN
            RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'An aggregate is count(*), or count, sum, min, max or avg of a numeric expression over the record.';
        END IF;
        p.agg_funcs := p.agg_funcs || lower(m[1]);
        p.agg_args := p.agg_args || btrim(m[2]);
    END LOOP;
    -- The sink's columns in order: window start, window end, one per
    -- group_by expression, one per aggregate.
    SELECT array_agg(att.attname ORDER BY att.attnum), array_agg(format_type(att.atttypid, att.atttypmod) ORDER BY att.attnum)
      INTO p.sink_columns, p.sink_types
      FROM pg_attribute att
     WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
    ncols := 2 + cardinality(group_by) + cardinality(aggregates);
    IF coalesce(cardinality(p.sink_columns), 0) <> ncols THEN
        RAISE EXCEPTION 'sink table % has % columns, the processor writes %', sink_table,
                        coalesce(cardinality(p.sink_columns), 0), ncols
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The sink''s columns are, in order: window start, window end, one per group_by expression, one per aggregate.';
    END IF;
    IF NOT has_table_privilege(sink_table, 'SELECT, INSERT, UPDATE') THEN
        RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A window processor selects, inserts and updates its sink table.';
    END IF;
    -- The expressions over no records, as the caller; the group keys and
    -- aggregate arguments inside CASE, as a step evaluates them (so that a
    -- set-returning function there fails now, not at every step).
    EXECUTE format('SELECT %s, CASE WHEN true THEN pg_catalog.jsonb_build_array(%s) END %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record WHERE %s',
                   CASE time_mode WHEN 'processing' THEN 'NULL' ELSE '(' || event_time || ')::timestamptz' END,
                   (SELECT string_agg('(' || g || ')', ', ') FROM unnest(group_by) g),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::numeric END', CASE x WHEN '*' THEN 'NULL' ELSE x END), '') FROM unnest(p.agg_args) x),
                   coalesce('(' || where_clause || ')', 'true'));
    -- and the casts of the group keys to the sink's column types
    FOR i IN 1 .. cardinality(group_by) LOOP
        EXECUTE format('SELECT NULL::text::%s', p.sink_types[2 + i]);
    END LOOP;
    PERFORM @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text) IS
'creates a windowed aggregate: tumbling or hopping windows of size (advancing by advance) over event time (an expression over the record) or processing time, grouped by expressions, count/sum/min/max/avg written to sink_table when a window closes (emit final) or as it changes (emit changes)';

/*
 * One step: as the processor's owner, in the caller's transaction, poll a
 * batch through the processor's group, update state and sink; the group's
 * positions move in the same transaction.  Returns the number of records
 * read, or NULL when wait is false and another step holds the processor.
 */
CREATE FUNCTION @extschema@.run_processor(name text, max_records integer DEFAULT 1000, wait boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    tid integer;
    n integer;
    consumed bigint;
    waited interval;
    wm timestamptz;
    ct timestamptz;
BEGIN
    IF max_records IS NULL OR max_records < 1 THEN
        RAISE EXCEPTION 'max_records must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF wait IS NULL THEN
        RAISE EXCEPTION 'wait must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    -- The owner's SQL could SET ROLE to any role the session user may
    -- (PL/pgSQL cannot make this a security-restricted operation): run it
    -- only in sessions whose user has no role the owner does not have.
    IF NOT pg_has_role(p.owner, session_user, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied to run processor "%" in a session of role %', p.name, session_user
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('The processor''s SQL runs as its owner %s, and could take the roles of the session''s user.', p.owner),
                  HINT = format('Run it in a session of its owner (SET SESSION AUTHORIZATION %s, or connect as it).', p.owner);
    END IF;
    -- Run the owner's SQL as the owner, never as the caller: the function's
    -- SET clause restores the role on exit.
    PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);

    SELECT c.topic_id, c.partitions INTO tid, n FROM @extschema@.topic_catalog c WHERE c.name = p.source_topic;
    IF tid IS DISTINCT FROM p.source_topic_id THEN
        RAISE EXCEPTION 'source topic "%" of processor "%" was dropped', p.source_topic, p.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Drop the processor with eventlog.drop_processor.';
    END IF;

    -- One step of a processor at a time: the others wait, or skip.
    BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', progress);
    EXCEPTION WHEN lock_not_available THEN
        IF NOT wait THEN
            RETURN NULL;
        END IF;
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
        -- The step we waited for released this lock a moment before the
        -- partitions its poll held (advisory locks go last): a poll now
        -- would skip them and read nothing.  Let it look again (a long
        -- poll retries partitions other transactions hold every second).
        waited := interval '2 seconds';
    END;

    EXECUTE @extschema@._processor_step_sql(p, '@extschema@.poll($1, $2, $3, partitions => $4, wait => $6)')
       INTO consumed
      USING p.source_topic, p.group_name, max_records, n, p.sink_topic, waited,
            p.max_out_of_orderness, p.size, p.allowed_lateness, p.advance, p.emit = 'changes';
    IF p.kind = 'map' THEN
        RETURN consumed;
    END IF;

    -- The processor's watermark: processing time, or the least watermark of
    -- the partitions that are active (read recently, or with records left
    -- to read); when every partition is idle, the greatest.
    IF p.time_mode = 'processing' THEN
        wm := now();
    ELSE
        EXECUTE format($q$
            SELECT CASE WHEN bool_or(active) THEN min(coalesce(m, '-infinity')) FILTER (WHERE active)
                        ELSE max(m) END - $3
              FROM (SELECT t.max_event_time AS m,
                           NOT (coalesce(t.last_record_at, '-infinity') < now() - $4
                                AND coalesce(o.next_offset, 0) >= @extschema@.last_stable_offset($1, g.p)) AS active
                      FROM generate_series(0, $5 - 1) AS g(p)
                      LEFT JOIN %s t ON t.partition = g.p
                      LEFT JOIN @extschema@.group_offsets o
                             ON o.topic_id = $6 AND o.group_name = $2 AND o.partition = g.p) s$q$, progress)
           INTO wm
          USING p.source_topic, p.group_name, p.max_out_of_orderness, p.idle_timeout, n, tid;
    END IF;
    EXECUTE format('SELECT closed_through FROM %s WHERE partition = -1', progress) INTO ct;
    IF wm IS NOT NULL AND wm > '-infinity' AND (ct IS NULL OR wm > ct) THEN
        EXECUTE @extschema@._processor_close_sql(p) USING wm, p.allowed_lateness, p.emit = 'final';
        EXECUTE format('INSERT INTO %s AS t (partition, closed_through) VALUES (-1, $1) '
                       'ON CONFLICT (partition) DO UPDATE SET closed_through = excluded.closed_through', progress)
          USING wm;
    END IF;
    RETURN consumed;
END
$$;
COMMENT ON FUNCTION @extschema@.run_processor(text, integer, boolean) IS
'one exactly-once step of a processor, as its owner, in the caller''s transaction: reads up to max_records through the processor''s group, updates its state and sink, closes the windows its watermark passed; NULL when wait is false and another step of the processor is in progress';

/* Forgets a processor's state and moves its group to target (replay). */
CREATE FUNCTION @extschema@.reset_processor(name text, target text DEFAULT 'earliest')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
BEGIN
    IF target IS NULL THEN
        RAISE EXCEPTION 'target must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
    PERFORM @extschema@.seek(p.source_topic, p.group_name, target);
    EXECUTE format('UPDATE %s SET max_event_time = NULL, last_record_at = now(), records = 0, '
                   'late_records = 0, null_time_records = 0, closed_through = NULL', progress);
    IF p.kind = 'window' THEN
        EXECUTE format('TRUNCATE @extschema@.%I', 'processor_' || p.processor_id || '_windows');
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.reset_processor(text, text) IS
'replays a processor: forgets its windows, watermarks and counters and seeks its group to target (earliest, latest, an offset or a timestamp); the sink''s windows are overwritten as they are computed again';

CREATE FUNCTION @extschema@._drop_processor(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
BEGIN
    IF NOT pg_has_role(@extschema@._caller(), p.owner, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied for processor "%"', p.name
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Only members of the processor''s owner role %s may run, reset or drop it.', p.owner);
    END IF;
    -- Waits for a step in progress.
    EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I', 'processor_' || p.processor_id || '_progress');
    IF p.kind = 'window' THEN
        EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I', 'processor_' || p.processor_id || '_windows');
    END IF;
    DELETE FROM @extschema@.processor_catalog c WHERE c.processor_id = p.processor_id;
    DELETE FROM @extschema@.group_offsets o WHERE o.topic_id = p.source_topic_id AND o.group_name = p.group_name;
    DELETE FROM @extschema@.group_catalog g WHERE g.topic_id = p.source_topic_id AND g.group_name = p.group_name;
END
$$;
COMMENT ON FUNCTION @extschema@._drop_processor(text) IS
'internal: the body of eventlog.drop_processor, run as the extension owner on behalf of the caller eventlog.drop_processor notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._drop_processor(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.drop_processor(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.drop_processor(text) IS
'drops a processor: its state tables, its group and its definition (its sink is left as it is)';

CREATE VIEW @extschema@.processors AS
SELECT c.name, c.owner, c.kind, c.source_topic, c.group_name,
       coalesce(c.sink_table::text, c.sink_topic) AS sink,
       c.window_type, c.size, c.advance, c.time_mode, c.allowed_lateness,
       c.max_out_of_orderness, c.idle_timeout, c.emit,
       (SELECT sum(g.lag) FROM @extschema@.consumer_groups g
         WHERE g.topic OPERATOR(pg_catalog.=) c.source_topic
           AND g.group_name OPERATOR(pg_catalog.=) c.group_name)::bigint AS lag,
       c.created_at
  FROM @extschema@.processor_catalog c;
COMMENT ON VIEW @extschema@.processors IS
'pg_eventlog stream processors: definition, sink and lag; per-partition watermarks and counters are in eventlog.processor_progress(name)';
GRANT SELECT ON @extschema@.processors TO PUBLIC;

CREATE FUNCTION @extschema@.processor_progress(name text)
RETURNS TABLE (partition integer, max_event_time timestamptz, watermark timestamptz,
               last_record_at timestamptz, records bigint, late_records bigint,
               null_time_records bigint, closed_through timestamptz)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT t.partition, t.max_event_time, t.max_event_time - $1, t.last_record_at, t.records, '
        '       t.late_records, t.null_time_records, '
        '       (SELECT c.closed_through FROM @extschema@.%1$I c WHERE c.partition = -1) '
        '  FROM @extschema@.%1$I t WHERE t.partition >= 0 ORDER BY t.partition',
        'processor_' || p.processor_id || '_progress')
      USING p.max_out_of_orderness;
END
$$;
COMMENT ON FUNCTION @extschema@.processor_progress(text) IS
'a processor''s source partitions: largest event time seen, watermark, last records, counters (late: dropped after their window closed), and the watermark windows were closed up to';

/*
 * Kafka transactions (src/kafka/txn.c): after the gateway rolled back a
 * producer's transaction, its state in each partition moves past the
 * sequence numbers of the batches rolled back (the ROLLBACK undid the
 * state they wrote), as Kafka keeps an aborted batch's numbers and its
 * clients number on after an abort.  The batches kept for retries are
 * replaced by one that no retry can match (offset -1): after EndTxn no
 * batch of the transaction is retried.  Nothing is done if the producer
 * is gone or has a newer epoch (whose numbers start at 0 again).
 */
CREATE FUNCTION @extschema@._kafka_producer_aborted(producer_id bigint, epoch smallint, topic text,
                                                    partition integer, last_sequence integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller regrole := @extschema@._caller();
    cur @extschema@.producer_catalog;
    tid integer;
BEGIN
    IF producer_id IS NULL OR epoch IS NULL OR topic IS NULL OR partition IS NULL
       OR last_sequence IS NULL THEN
        RAISE EXCEPTION 'arguments must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF last_sequence < 0 THEN
        RAISE EXCEPTION 'sequence number % is negative', last_sequence
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Against init_producer (which bumps the epoch) and the expiry.
    SELECT * INTO cur FROM @extschema@.producer_catalog c
     WHERE c.producer_id = _kafka_producer_aborted.producer_id FOR SHARE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF NOT pg_has_role(caller, cur.owner, 'USAGE') THEN
        RAISE EXCEPTION 'permission denied for producer %', producer_id
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Only the role that obtained a producer, its members and superusers may produce with it.';
    END IF;
    IF cur.epoch <> epoch THEN
        RETURN;
    END IF;
    SELECT t.topic_id INTO tid FROM @extschema@.topic_catalog t WHERE t.name = topic;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO @extschema@.producer_state AS s
           (producer_id, topic_id, partition, epoch, first_sequence, last_sequence, first_offset, last_used)
    SELECT cur.producer_id, tid, p.partition, epoch, ARRAY[last_sequence], ARRAY[last_sequence],
           ARRAY[-1::bigint], now()
      FROM @extschema@.partition_catalog p
     WHERE p.topic_id = tid AND p.partition = _kafka_producer_aborted.partition
    ON CONFLICT ON CONSTRAINT producer_state_pkey DO UPDATE
       SET epoch = excluded.epoch, first_sequence = excluded.first_sequence,
           last_sequence = excluded.last_sequence, first_offset = excluded.first_offset,
           last_used = excluded.last_used;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_producer_aborted(bigint, smallint, text, integer, integer) IS
'internal: the body of eventlog.kafka_producer_aborted, run as the extension owner on behalf of the caller (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._kafka_producer_aborted(bigint, smallint, text, integer, integer) FROM PUBLIC;

CREATE FUNCTION @extschema@.kafka_producer_aborted(producer_id bigint, epoch smallint, topic text,
                                                   partition integer, last_sequence integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_producer_aborted(bigint, smallint, text, integer, integer) IS
'Kafka gateway: after a producer''s transaction rolled back, carries its sequence numbers in the partition past the last one of the batches rolled back';

-- relay --from-kafka's positions (sql/install/kafka_source.sql).
/* ------------------------------------------------------------------------
 * Positions of `pg_eventlog relay --from-kafka` (src/cli/relay_from_kafka.c,
 * docs/cli.md): per Kafka source (by default its cluster id), topic and
 * partition, the next Kafka offset to copy.  The relay writes a position
 * in the same transaction as the records it copied (produce_binary_batch),
 * so that a crash at any point leaves records and position together: a
 * restart resumes exactly after the last record stored (exactly once into
 * PostgreSQL).  User state: pg_dump keeps the rows.  Only roles that may
 * produce to the topic write them, through set_kafka_source_position
 * (gated, src/acl.c); everybody may read them, as group positions.
 * ------------------------------------------------------------------------ */

CREATE TABLE @extschema@.kafka_source_offsets (
    source        text NOT NULL
                  CHECK (source OPERATOR(pg_catalog.<>) '' AND pg_catalog.length(source) OPERATOR(pg_catalog.<=) 200),
    topic_id      integer NOT NULL,
    partition     integer NOT NULL,
    next_offset   bigint NOT NULL CHECK (next_offset OPERATOR(pg_catalog.>=) 0),
    updated_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (topic_id, partition, source),
    -- Dropping a topic (or its partitions) drops the positions copied into it.
    FOREIGN KEY (topic_id, partition) REFERENCES @extschema@.partition_catalog ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.kafka_source_offsets IS
'relay --from-kafka: per Kafka source, topic and partition, the next Kafka offset to copy, written in the transaction of the records copied (use eventlog.set_kafka_source_position)';
GRANT SELECT ON @extschema@.kafka_source_offsets TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.kafka_source_offsets', '');

CREATE VIEW @extschema@.kafka_source_positions AS
    SELECT s.source, t.name AS topic, s.partition, s.next_offset, s.updated_at
      FROM @extschema@.kafka_source_offsets s
      JOIN @extschema@.topic_catalog t USING (topic_id);
COMMENT ON VIEW @extschema@.kafka_source_positions IS
'relay --from-kafka: per Kafka source, topic and partition, the next Kafka offset to copy and when it was stored';
GRANT SELECT ON @extschema@.kafka_source_positions TO PUBLIC;

/*
 * A compare-and-set: the position moves from expected_offset (NULL: no
 * position stored yet) to next_offset, or the call fails.  Two relays of
 * the same source into the same partition would otherwise both copy the
 * same records: the second to commit finds the row changed (its UPDATE
 * waits for the first's row lock, then re-checks) and rolls back its
 * records with its position.
 */
CREATE FUNCTION @extschema@._set_kafka_source_position(source text, topic text, partition integer,
                                                      expected_offset bigint, next_offset bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer;
    n bigint;
BEGIN
    IF source IS NULL OR topic IS NULL OR partition IS NULL OR next_offset IS NULL THEN
        RAISE EXCEPTION 'arguments must not be null' USING ERRCODE = 'null_value_not_allowed',
              DETAIL = 'Only expected_offset may be null (no position stored yet).';
    END IF;
    IF source = '' OR length(source) > 200 THEN
        RAISE EXCEPTION 'invalid Kafka source name "%"', left(source, 210)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A Kafka source name is 1 to 200 characters.';
    END IF;
    tid := @extschema@._authorize(topic, 'produce');
    IF next_offset < 0 OR expected_offset < 0 THEN
        RAISE EXCEPTION 'a Kafka offset must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.partition_catalog p
                    WHERE p.topic_id = tid AND p.partition = _set_kafka_source_position.partition) THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', _set_kafka_source_position.partition, topic
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF expected_offset IS NULL THEN
        INSERT INTO @extschema@.kafka_source_offsets AS o (source, topic_id, partition, next_offset)
        VALUES (_set_kafka_source_position.source, tid, _set_kafka_source_position.partition,
                _set_kafka_source_position.next_offset)
        ON CONFLICT ON CONSTRAINT kafka_source_offsets_pkey DO NOTHING;
    ELSE
        UPDATE @extschema@.kafka_source_offsets AS o
           SET next_offset = _set_kafka_source_position.next_offset, updated_at = now()
         WHERE o.topic_id = tid AND o.partition = _set_kafka_source_position.partition
           AND o.source = _set_kafka_source_position.source
           AND o.next_offset = expected_offset;
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RAISE EXCEPTION 'the position of Kafka source "%" in topic "%" partition % is no longer %',
                        source, topic, _set_kafka_source_position.partition, coalesce(expected_offset::text, 'unset')
            USING ERRCODE = 'serialization_failure',
                  DETAIL = 'Another relay from the same Kafka source stored records into this partition.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._set_kafka_source_position(text, text, integer, bigint, bigint) IS
'internal: the body of eventlog.set_kafka_source_position, run as the extension owner on behalf of the caller (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._set_kafka_source_position(text, text, integer, bigint, bigint) FROM PUBLIC;

CREATE FUNCTION @extschema@.set_kafka_source_position(source text, topic text, partition integer,
                                                     expected_offset bigint, next_offset bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.set_kafka_source_position(text, text, integer, bigint, bigint) IS
'relay --from-kafka: in the transaction that stored the records, moves the Kafka position of a source in a partition from expected_offset (NULL: none yet) to next_offset; fails (40001) if it is no longer expected_offset; needs the produce privilege';

/* ------------------------------------------------------------------------
 * Stream processors, window machinery (issue 19): session windows (gap),
 * late-record policies (late, late_topic), closed windows kept for a
 * retention, window results into a sink topic (aggregates named).
 * ------------------------------------------------------------------------ */
ALTER TABLE @extschema@.processor_catalog DROP CONSTRAINT processor_catalog_window_type_check;
ALTER TABLE @extschema@.processor_catalog ADD CONSTRAINT processor_catalog_window_type_check
    CHECK (window_type OPERATOR(pg_catalog.=) ANY (ARRAY['tumbling', 'hopping', 'session']));
ALTER TABLE @extschema@.processor_catalog
    ADD COLUMN gap interval,
    ADD COLUMN late text CHECK (late OPERATOR(pg_catalog.=) ANY (ARRAY['drop', 'topic', 'update'])),
    ADD COLUMN late_topic text,
    ADD COLUMN retention interval,
    ADD COLUMN agg_names text[];
DROP FUNCTION @extschema@._processor_emit_sql(@extschema@.processor_catalog, text);
DROP FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text);

CREATE OR REPLACE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    rv text := '';
    comb text := '';
    sets text := '';
    head text;
    body text;
    late_out text;
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        xs := xs || format(', CASE WHEN t_.in_ THEN (%s)::numeric END AS x_%s',
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
        -- sessions: a record as a partial (value, count), and partials combined
        rv := rv || format(', %s AS v_%s, %s AS n_%s',
                           CASE WHEN f = 'count' THEN 'NULL::numeric' ELSE format('e.x_%s', i) END, i,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN '1::bigint'
                                ELSE format('CASE WHEN e.x_%s IS NULL THEN 0 ELSE 1 END::bigint', i) END, i);
        comb := comb || format(', %s, sum(n_%s)::bigint',
                               CASE f WHEN 'min' THEN format('min(v_%s)', i)
                                      WHEN 'max' THEN format('max(v_%s)', i)
                                      WHEN 'count' THEN 'NULL::numeric'
                                      ELSE format('sum(v_%s)', i) END, i);
        sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  A session window's record is late when the session of
     * that record alone would be closed (its time + gap + lateness before
     * the watermark), so that lateness does not depend on how the records
     * of other partitions were cut into steps.
     */
    head := format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
b AS (
    SELECT record.partition AS p_, record.offset_id AS o_, t_.ts_, t_.in_,
           CASE WHEN t_.in_ THEN %4$s END AS gk_ %5$s %8$s
      FROM %2$s AS record
           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%6$s) IS TRUE END AS in_
                                 FROM (SELECT %1$s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, ct.c_) AS lim_,
           (%7$s) AS late_
      FROM (SELECT b.*, coalesce(greatest(prev.m_, max(b.ts_) OVER (PARTITION BY b.p_ ORDER BY b.o_
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
                                 '-infinity') - $7 AS wm_
              FROM b LEFT JOIN prev ON prev.p_ = b.p_) AS w_
           CROSS JOIN ct),$f$,
        ts, batch, progress, gk, xs, filter,
        CASE WHEN p.window_type = 'session'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, ct.c_)'
             ELSE 'date_bin($10, w_.ts_, ''1970-01-01 00:00:00+00'') + $8 + $9 <= greatest(w_.wm_, ct.c_)' END,
        CASE WHEN p.late = 'topic'
             THEN ', record.key AS rk_, record.value AS rv_, record.headers AS rh_, record.event_time AS ret_'
             ELSE '' END);

    -- Late records to the late-records topic, in offset order.
    late_out := CASE WHEN p.late = 'topic'
        THEN 'lt AS MATERIALIZED (SELECT count(@extschema@.produce($13, x.rk_, x.rv_, x.rh_, NULL, x.ret_)) AS n '
             '  FROM (SELECT e.* FROM e WHERE e.in_ AND e.late_ ORDER BY e.p_, e.o_) AS x)'
        ELSE 'lt AS (SELECT 0::bigint AS n)' END;

    IF p.window_type = 'session' THEN
        /*
         * Sessions: the records that count ("r", each a session of one
         * record), and the sessions in state that one of them reaches
         * (within gap of its start or end, as Kafka Streams' findSessions)
         * are laid on one line per group key and merged where they come
         * within gap of each other (gaps and islands: a new session starts
         * where a start is more than gap after every end before it).  The
         * merged sessions replace the ones they absorbed: a merged session
         * keeps the start of one of them (upserted) or deletes it.  Their
         * rows in the sink go too ("gone": the absorbed sessions that were
         * written, in full or as changes).
         */
        body := format($f$
r AS (SELECT e.gk_, e.ts_ AS s_, e.ts_ AS e_ %1$s FROM e WHERE e.in_ AND NOT e.late_),
o AS MATERIALIZED (SELECT w.* FROM %2$s AS w
                    WHERE EXISTS (SELECT FROM r WHERE r.gk_ = w.group_key
                                     AND r.s_ >= w.window_start - $8 AND r.s_ <= w.window_end + $8)),
iv AS (SELECT r.* FROM r UNION ALL SELECT o.group_key, o.window_start, o.window_end %3$s FROM o),
isl AS (SELECT y.*, count(*) FILTER (WHERE y.mx_ IS NULL OR y.s_ > y.mx_ + $8)
                        OVER (PARTITION BY y.gk_ ORDER BY y.s_, y.e_ ROWS UNBOUNDED PRECEDING) AS i_
          FROM (SELECT iv.*, max(iv.e_) OVER (PARTITION BY iv.gk_ ORDER BY iv.s_, iv.e_
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx_
                  FROM iv) AS y),
agg AS (SELECT min(s_) AS ws_, max(e_) AS we_, gk_ %4$s FROM isl GROUP BY gk_, i_),
gone AS (SELECT o.* FROM o WHERE NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key
                                                AND agg.ws_ = o.window_start AND agg.we_ = o.window_end)),
d AS (DELETE FROM %2$s AS w USING o
       WHERE w.window_start = o.window_start AND w.group_key = o.group_key
         AND NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key AND agg.ws_ = o.window_start)),
u AS (INSERT INTO %2$s AS t (window_start, window_end, group_key %3$s, closed)
      SELECT agg.*, agg.we_ + $8 + $12 < (SELECT ct.c_ FROM ct) FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %5$s, closed = excluded.closed
      RETURNING t.*),
%6$s,$f$,
            rv, windows, cols, comb, sets,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', '($11 OR gone.closed)'));
    ELSE
        /*
         * Tumbling and hopping windows: the batch's partials combine with
         * the window rows.  A window is written to the sink as it changes
         * (emit changes), or when it closes, or, closed already, when a late
         * record updates it (late => 'update', within the retention).
         */
        body := format($f$
a AS (%1$s),
agg AS (SELECT ws_, ws_ + $8, gk_ %2$s, ws_ + $8 + $12 <= (SELECT ct.c_ FROM ct) FROM a GROUP BY ws_, gk_),
u AS (INSERT INTO %3$s AS t (window_start, window_end, group_key %4$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %5$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%6$s,$f$,
            CASE WHEN p.size = p.advance
                 THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
                 ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                      'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                      'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END,
            partials, windows, cols, merge,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
    END IF;

    RETURN head || body || format($f$
%2$s,
pu AS (INSERT INTO %1$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT e.p_, max(e.ts_), pg_catalog.now(), count(*), count(*) FILTER (WHERE e.in_ AND e.late_),
              count(*) FILTER (WHERE e.ts_ IS NULL)
         FROM e GROUP BY e.p_
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT (SELECT count(*) FROM e) FROM so, lt$f$, progress, late_out);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_step_sql(@extschema@.processor_catalog, text) IS
'internal: the statement of one step of a processor over a batch of records';

CREATE FUNCTION @extschema@._processor_emit_sql(p @extschema@.processor_catalog, flag text, gone_flag text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    gcols text := '';
    gmatch text := '';
    gmatch_gone text := '';
    outs text := '';
    sets text := '';
    jvals text := '';
    k text;
    o text;
    i integer;
    ctes text := '';
BEGIN
    FOR i IN 1 .. ng LOOP
        IF p.sink_table IS NOT NULL THEN
            gcols := gcols || format(', (u.group_key ->> %s)::%s', i - 1, p.sink_types[2 + i]);
            gmatch := gmatch || format(' AND s.%I IS NOT DISTINCT FROM (u.group_key ->> %s)::%s',
                                       p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
            gmatch_gone := gmatch_gone || format(' AND s.%I IS NOT DISTINCT FROM (gone.group_key ->> %s)::%s',
                                                 p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
        END IF;
    END LOOP;
    FOR i IN 1 .. na LOOP
        o := CASE p.agg_funcs[i] WHEN 'count' THEN format('u.n_%s', i)
                                 WHEN 'avg' THEN format('u.v_%1$s / NULLIF(u.n_%1$s, 0)', i)
                                 ELSE format('u.v_%s', i) END;
        outs := outs || ', ' || o;
        IF p.sink_table IS NOT NULL THEN
            sets := sets || format('%s%I = %s', CASE WHEN i > 1 THEN ', ' ELSE '' END,
                                   p.sink_columns[2 + ng + i], o);
        END IF;
        jvals := jvals || format(' || pg_catalog.jsonb_build_object(%L, %s)', p.agg_names[i], o);
    END LOOP;
    IF p.sink_table IS NOT NULL THEN
        IF gone_flag IS NOT NULL THEN
            ctes := format($f$sd AS (DELETE FROM %1$s AS s USING gone
        WHERE %2$s AND s.%3$I = gone.window_start AND s.%4$I = gone.window_end %5$s),
$f$, p.sink_table, gone_flag, p.sink_columns[1], p.sink_columns[2], gmatch_gone);
        END IF;
        ctes := ctes || format($f$su AS (UPDATE %1$s AS s SET %2$s FROM u
        WHERE %3$s AND s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s),
si AS (INSERT INTO %1$s SELECT u.window_start, u.window_end %7$s %8$s FROM u
        WHERE %3$s AND NOT EXISTS (SELECT FROM %1$s AS s
                                    WHERE s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s)),
$f$, p.sink_table, sets, flag, p.sink_columns[1], p.sink_columns[2], gmatch, gcols, outs);
    END IF;
    IF p.sink_topic IS NULL THEN
        RETURN ctes || 'so AS (SELECT 0::bigint AS n)';
    END IF;
    -- The record's key: the group value (one group_by expression) or the
    -- JSON array of them; its value: the window and the aggregates by name.
    k := CASE ng WHEN 0 THEN 'NULL::text' WHEN 1 THEN '%1$s.group_key ->> 0' ELSE '%1$s.group_key::text' END;
    RETURN ctes || format($f$so AS MATERIALIZED (
    SELECT count(@extschema@.produce(%1$L, x.k_, x.v_, NULL, NULL, x.t_)) AS n
      FROM (%2$s
            SELECT 1 AS o_, u.window_start AS s_, %3$s AS k_,
                   pg_catalog.jsonb_build_object('window_start', u.window_start, 'window_end', u.window_end,
                                                 'group_key', u.group_key) %4$s AS v_,
                   u.window_end AS t_
              FROM u WHERE %5$s
             ORDER BY 1, 2, 3) AS x)$f$,
        p.sink_topic,
        CASE WHEN gone_flag IS NULL THEN ''
             ELSE format($g$SELECT 0 AS o_, gone.window_start AS s_, %s AS k_,
                   pg_catalog.jsonb_build_object('window_start', gone.window_start, 'window_end', gone.window_end,
                                                 'group_key', gone.group_key, 'deleted', true) AS v_,
                   gone.window_end AS t_
              FROM gone WHERE %s
            UNION ALL
            $g$, format(k, 'gone'), gone_flag) END,
        format(k, 'u'), jvals, flag);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_emit_sql(@extschema@.processor_catalog, text, text) IS
'internal: the CTEs writing window rows to a processor''s sink table and sink topic';

CREATE OR REPLACE FUNCTION @extschema@._processor_close_sql(p @extschema@.processor_catalog)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    windows text := format('@extschema@.%I', 'processor_' || p.processor_id || '_windows');
    closes text := CASE WHEN p.window_type = 'session' THEN 'window_end + $5 + $2 < $1'
                        ELSE 'window_end + $2 <= $1' END;
BEGIN
    IF p.window_type <> 'session' AND coalesce(p.retention, '0') = '0' THEN
        RETURN format('WITH u AS (DELETE FROM %s WHERE %s RETURNING *), %s SELECT count(*) FROM u, so',
                      windows, closes, @extschema@._processor_emit_sql(p, '($3 AND NOT u.closed)', NULL));
    END IF;
    RETURN format('WITH u AS (UPDATE %1$s SET closed = true WHERE NOT closed AND %2$s RETURNING *), %3$s, '
                  'x AS (DELETE FROM %1$s WHERE closed AND %4$s) SELECT count(*) FROM u, so',
                  windows, closes, @extschema@._processor_emit_sql(p, '$3', NULL),
                  CASE WHEN p.window_type = 'session' THEN 'window_end + $5 + $2 + $4 < $1'
                       ELSE 'window_end + $2 + $4 <= $1' END);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_close_sql(@extschema@.processor_catalog) IS
'internal: the statement closing the windows a watermark passed (written to the sink when emit is final) and removing the closed windows kept past their retention';

CREATE OR REPLACE FUNCTION @extschema@.__register_processor(spec jsonb)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    caller regrole := @extschema@._caller();
    n integer;
    progress text;
BEGIN
    IF spec IS NULL THEN
        RAISE EXCEPTION 'processor specification must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    p := jsonb_populate_record(NULL::@extschema@.processor_catalog, spec);
    IF p.name IS NULL OR p.name !~ '^[A-Za-z0-9._-]{1,100}$' THEN
        RAISE EXCEPTION 'invalid processor name "%"', left(p.name, 110)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A processor name is 1 to 100 letters, digits, ".", "_" or "-".';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.processor_catalog c WHERE c.name = p.name) THEN
        RAISE EXCEPTION 'processor "%" already exists', p.name USING ERRCODE = 'duplicate_object';
    END IF;
    p.source_topic_id := @extschema@._authorize(p.source_topic, 'consume');
    IF p.sink_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.sink_topic, 'produce');
    END IF;
    IF p.late_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.late_topic, 'produce');
    END IF;
    p.owner := caller;
    p.group_name := 'processor:' || p.name;
    p.created_at := now();
    p.processor_id := nextval(pg_get_serial_sequence('@extschema@.processor_catalog', 'processor_id'));
    INSERT INTO @extschema@.processor_catalog SELECT p.*;
    PERFORM @extschema@._create_group(p.source_topic, p.group_name, coalesce(spec ->> 'start_from', 'earliest'));

    -- State, the owner's: steps run as the owner and write it directly.
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = p.source_topic_id;
    progress := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    EXECUTE format('CREATE TABLE %s (partition integer PRIMARY KEY, max_event_time timestamptz, '
                   'last_record_at timestamptz, records bigint NOT NULL DEFAULT 0, '
                   'late_records bigint NOT NULL DEFAULT 0, null_time_records bigint NOT NULL DEFAULT 0, '
                   'closed_through timestamptz)', progress);
    EXECUTE format('INSERT INTO %s (partition, last_record_at) SELECT g, now() FROM generate_series(-1, %s) g',
                   progress, n - 1);
    EXECUTE format('COMMENT ON TABLE %s IS %L', progress,
                   format('pg_eventlog processor %s: per source partition, the largest event time seen and counters; partition -1: the watermark windows were closed up to', p.name));
    EXECUTE format('ALTER TABLE %s OWNER TO %s', progress, caller);
    -- Watermarks and counters are public, as eventlog.consumer_groups is.
    EXECUTE format('GRANT SELECT ON %s TO PUBLIC', progress);
    IF p.kind = 'window' THEN
        EXECUTE format('CREATE TABLE @extschema@.%I (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, '
                       'group_key jsonb NOT NULL%s, closed boolean NOT NULL DEFAULT false, '
                       'PRIMARY KEY (window_start, group_key))',
                       'processor_' || p.processor_id || '_windows',
                       (SELECT string_agg(format(', v_%s numeric, n_%s bigint NOT NULL DEFAULT 0', i, i), '' ORDER BY i)
                          FROM generate_series(1, cardinality(p.agg_funcs)) i));
        EXECUTE format('COMMENT ON TABLE @extschema@.%I IS %L', 'processor_' || p.processor_id || '_windows',
                       format('pg_eventlog processor %s: one row per open window (or session) and group key, and per closed one kept for the retention', p.name));
        EXECUTE format('ALTER TABLE @extschema@.%I OWNER TO %s', 'processor_' || p.processor_id || '_windows', caller);
    END IF;
    RETURN p.processor_id;
END
$$;
COMMENT ON FUNCTION @extschema@.__register_processor(jsonb) IS
'internal: the body of eventlog._register_processor, run as the extension owner on behalf of the caller eventlog._register_processor notes (see src/acl.c)';

CREATE FUNCTION @extschema@.create_window_processor(name text, source_topic text,
                                                    sink_table regclass DEFAULT NULL,
                                                    size interval DEFAULT NULL,
                                                    window_type text DEFAULT 'tumbling',
                                                    advance interval DEFAULT NULL,
                                                    group_by text[] DEFAULT ARRAY['key'],
                                                    aggregates text[] DEFAULT ARRAY['count(*)'],
                                                    where_clause text DEFAULT NULL,
                                                    event_time text DEFAULT 'event_time',
                                                    time_mode text DEFAULT 'event',
                                                    allowed_lateness interval DEFAULT '0',
                                                    max_out_of_orderness interval DEFAULT '0',
                                                    idle_timeout interval DEFAULT '1 minute',
                                                    emit text DEFAULT 'final',
                                                    start_from text DEFAULT 'earliest',
                                                    gap interval DEFAULT NULL,
                                                    late text DEFAULT 'drop',
                                                    late_topic text DEFAULT NULL,
                                                    retention interval DEFAULT '0',
                                                    sink_topic text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    m text[];
    a text;
    i integer;
    ncols integer;
BEGIN
    IF name IS NULL OR source_topic IS NULL OR (size IS NULL AND window_type IS DISTINCT FROM 'session')
       OR window_type IS NULL OR group_by IS NULL OR aggregates IS NULL OR event_time IS NULL
       OR time_mode IS NULL OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL
       OR idle_timeout IS NULL OR emit IS NULL OR late IS NULL OR retention IS NULL
       OR array_position(group_by, NULL) IS NOT NULL
       OR array_position(aggregates, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of a window processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only sink_table or sink_topic (one of them), size (of a session window), advance, gap, where_clause and late_topic may be null.';
    END IF;
    IF sink_table IS NULL AND sink_topic IS NULL THEN
        RAISE EXCEPTION 'a window processor writes to a sink table, a sink topic or both'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table, sink_topic or both.';
    END IF;
    IF window_type = 'sliding' THEN
        RAISE EXCEPTION 'sliding windows are not supported yet' USING ERRCODE = 'feature_not_supported',
            HINT = 'Use hopping windows with a small advance, or session windows.';
    END IF;
    IF window_type NOT IN ('tumbling', 'hopping', 'session') THEN
        RAISE EXCEPTION 'window_type must be ''tumbling'', ''hopping'' or ''session''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF window_type = 'session' THEN
        IF gap IS NULL THEN
            RAISE EXCEPTION 'a session window needs gap' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The gap is the inactivity that ends a session, for example gap => ''30 minutes''.';
        END IF;
        IF size IS NOT NULL OR advance IS NOT NULL THEN
            RAISE EXCEPTION 'a session window has no size or advance' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A session lasts as long as its records come within gap of each other: pass only gap.';
        END IF;
        IF gap <= '0' OR date_part('month', gap) <> 0 OR date_part('year', gap) <> 0 THEN
            RAISE EXCEPTION 'invalid session gap %', gap USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The gap is a positive interval without months or years.';
        END IF;
    ELSE
        IF gap IS NOT NULL THEN
            RAISE EXCEPTION 'gap is only for session windows' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''session'', or size (and advance) for tumbling and hopping windows.';
        END IF;
        IF window_type = 'tumbling' AND advance IS NOT NULL AND advance <> size THEN
            RAISE EXCEPTION 'a tumbling window advances by its size' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''hopping'' for windows that overlap.';
        END IF;
        IF window_type = 'hopping' AND advance IS NULL THEN
            RAISE EXCEPTION 'a hopping window needs advance' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        advance := coalesce(advance, size);
        IF size <= '0' OR advance <= '0' OR advance > size
           OR date_part('month', size) <> 0 OR date_part('year', size) <> 0
           OR date_part('month', advance) <> 0 OR date_part('year', advance) <> 0 THEN
            RAISE EXCEPTION 'invalid window size % or advance %', size, advance
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'Size and advance are positive intervals without months or years, advance at most the size.';
        END IF;
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF time_mode NOT IN ('event', 'processing') THEN
        RAISE EXCEPTION 'time_mode must be ''event'' or ''processing''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF emit NOT IN ('final', 'changes') THEN
        RAISE EXCEPTION 'emit must be ''final'' or ''changes''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late NOT IN ('drop', 'topic', 'update') THEN
        RAISE EXCEPTION 'late must be ''drop'', ''topic'' or ''update''' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention.';
    END IF;
    IF late = 'topic' AND late_topic IS NULL THEN
        RAISE EXCEPTION 'late => ''topic'' needs late_topic' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the topic late records are sent to.';
    END IF;
    IF late <> 'topic' AND late_topic IS NOT NULL THEN
        RAISE EXCEPTION 'late_topic is only for late => ''topic''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late_topic = source_topic OR sink_topic = source_topic THEN
        RAISE EXCEPTION 'a window processor must not write to its source topic' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Its own records would come back to it as input.';
    END IF;
    IF retention < '0' THEN
        RAISE EXCEPTION 'retention must not be negative' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(aggregates) = 0 THEN
        RAISE EXCEPTION 'a window processor needs at least one aggregate' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.name := name;
    p.kind := 'window';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.where_clause := where_clause;
    p.event_time_expr := event_time;
    p.time_mode := time_mode;
    p.window_type := window_type;
    p.size := size;
    p.advance := advance;
    p.gap := gap;
    p.allowed_lateness := allowed_lateness;
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE max_out_of_orderness END;
    p.idle_timeout := idle_timeout;
    p.emit := emit;
    p.late := late;
    p.late_topic := late_topic;
    p.retention := retention;
    p.group_by := group_by;
    p.agg_funcs := '{}';
    p.agg_args := '{}';
    p.agg_names := '{}';
    FOREACH a IN ARRAY aggregates LOOP
        m := regexp_match(a, '^\s*(count|sum|min|max|avg)\s*\((.*)\)\s*(?:as\s+([A-Za-z_][A-Za-z0-9_]*))?\s*$', 'i');
        IF m IS NULL OR btrim(m[2]) = '' OR (btrim(m[2]) = '*' AND lower(m[1]) <> 'count') THEN
            RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'An aggregate is count(*), or count, sum, min, max or avg of a numeric expression over the record.';
        END IF;
        p.agg_funcs := p.agg_funcs || lower(m[1]);
        p.agg_args := p.agg_args || btrim(m[2]);
        p.agg_names := p.agg_names || m[3];
    END LOOP;
    -- The sink's columns in order: window start, window end, one per
    -- group_by expression, one per aggregate.
    IF sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum), array_agg(format_type(att.atttypid, att.atttypmod) ORDER BY att.attnum)
          INTO p.sink_columns, p.sink_types
          FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        ncols := 2 + cardinality(group_by) + cardinality(aggregates);
        IF coalesce(cardinality(p.sink_columns), 0) <> ncols THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes %', sink_table,
                            coalesce(cardinality(p.sink_columns), 0), ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: window start, window end, one per group_by expression, one per aggregate.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT, UPDATE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A window processor selects, inserts and updates its sink table.';
        END IF;
        IF window_type = 'session' AND NOT has_table_privilege(sink_table, 'DELETE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A session window processor also deletes the rows of sessions that merged into others.';
        END IF;
    END IF;
    -- The aggregates' names in the records of a sink topic: "AS name", else
    -- the sink table's column, else the function (numbered when repeated).
    FOR i IN 1 .. cardinality(aggregates) LOOP
        p.agg_names[i] := coalesce(p.agg_names[i], p.sink_columns[2 + cardinality(group_by) + i],
                                   CASE WHEN array_position(p.agg_funcs[i + 1:], p.agg_funcs[i]) IS NULL
                                         AND array_position(p.agg_funcs[:i - 1], p.agg_funcs[i]) IS NULL
                                        THEN p.agg_funcs[i] ELSE p.agg_funcs[i] || '_' || i END);
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM unnest(p.agg_names) x) < cardinality(aggregates) THEN
        RAISE EXCEPTION 'two aggregates are named alike' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name them apart with "AS name".';
    END IF;
    -- The expressions over no records, as the caller; the group keys and
    -- aggregate arguments inside CASE, as a step evaluates them (so that a
    -- set-returning function there fails now, not at every step).
    EXECUTE format('SELECT %s, CASE WHEN true THEN pg_catalog.jsonb_build_array(%s) END %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record WHERE %s',
                   CASE time_mode WHEN 'processing' THEN 'NULL' ELSE '(' || event_time || ')::timestamptz' END,
                   (SELECT string_agg('(' || g || ')', ', ') FROM unnest(group_by) g),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::numeric END', CASE x WHEN '*' THEN 'NULL' ELSE x END), '') FROM unnest(p.agg_args) x),
                   coalesce('(' || where_clause || ')', 'true'));
    -- and the casts of the group keys to the sink's column types
    IF sink_table IS NOT NULL THEN
        FOR i IN 1 .. cardinality(group_by) LOOP
            EXECUTE format('SELECT NULL::text::%s', p.sink_types[2 + i]);
        END LOOP;
    END IF;
    PERFORM @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text, interval, text, text, interval, text) IS
'creates a windowed aggregate: tumbling or hopping windows of size (advancing by advance), or session windows (gap), over event time (an expression over the record) or processing time, grouped by expressions, count/sum/min/max/avg written to sink_table and/or sink_topic when a window closes (emit final) or as it changes (emit changes); late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention';

CREATE OR REPLACE FUNCTION @extschema@.run_processor(name text, max_records integer DEFAULT 1000, wait boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    tid integer;
    n integer;
    consumed bigint;
    waited interval;
    wm timestamptz;
    ct timestamptz;
BEGIN
    IF max_records IS NULL OR max_records < 1 THEN
        RAISE EXCEPTION 'max_records must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF wait IS NULL THEN
        RAISE EXCEPTION 'wait must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    -- The owner's SQL could SET ROLE to any role the session user may
    -- (PL/pgSQL cannot make this a security-restricted operation): run it
    -- only in sessions whose user has no role the owner does not have.
    IF NOT pg_has_role(p.owner, session_user, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied to run processor "%" in a session of role %', p.name, session_user
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('The processor''s SQL runs as its owner %s, and could take the roles of the session''s user.', p.owner),
                  HINT = format('Run it in a session of its owner (SET SESSION AUTHORIZATION %s, or connect as it).', p.owner);
    END IF;
    -- Run the owner's SQL as the owner, never as the caller: the function's
    -- SET clause restores the role on exit.
    PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);

    SELECT c.topic_id, c.partitions INTO tid, n FROM @extschema@.topic_catalog c WHERE c.name = p.source_topic;
    IF tid IS DISTINCT FROM p.source_topic_id THEN
        RAISE EXCEPTION 'source topic "%" of processor "%" was dropped', p.source_topic, p.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Drop the processor with eventlog.drop_processor.';
    END IF;

    -- One step of a processor at a time: the others wait, or skip.
    BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', progress);
    EXCEPTION WHEN lock_not_available THEN
        IF NOT wait THEN
            RETURN NULL;
        END IF;
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
        -- The step we waited for released this lock a moment before the
        -- partitions its poll held (advisory locks go last): a poll now
        -- would skip them and read nothing.  Let it look again (a long
        -- poll retries partitions other transactions hold every second).
        waited := interval '2 seconds';
    END;

    EXECUTE @extschema@._processor_step_sql(p, '@extschema@.poll($1, $2, $3, partitions => $4, wait => $6)')
       INTO consumed
      USING p.source_topic, p.group_name, max_records, n, p.sink_topic, waited,
            p.max_out_of_orderness, CASE WHEN p.window_type = 'session' THEN p.gap ELSE p.size END,
            p.allowed_lateness + CASE WHEN p.late = 'update' THEN p.retention ELSE '0' END,
            p.advance, p.emit = 'changes', p.allowed_lateness, p.late_topic;
    IF p.kind = 'map' THEN
        RETURN consumed;
    END IF;

    -- The processor's watermark: processing time, or the least watermark of
    -- the partitions that are active (read recently, or with records left
    -- to read); when every partition is idle, the greatest.
    IF p.time_mode = 'processing' THEN
        wm := now();
    ELSE
        EXECUTE format($q$
            SELECT CASE WHEN bool_or(active) THEN min(coalesce(m, '-infinity')) FILTER (WHERE active)
                        ELSE max(m) END - $3
              FROM (SELECT t.max_event_time AS m,
                           NOT (coalesce(t.last_record_at, '-infinity') < now() - $4
                                AND coalesce(o.next_offset, 0) >= @extschema@.last_stable_offset($1, g.p)) AS active
                      FROM generate_series(0, $5 - 1) AS g(p)
                      LEFT JOIN %s t ON t.partition = g.p
                      LEFT JOIN @extschema@.group_offsets o
                             ON o.topic_id = $6 AND o.group_name = $2 AND o.partition = g.p) s$q$, progress)
           INTO wm
          USING p.source_topic, p.group_name, p.max_out_of_orderness, p.idle_timeout, n, tid;
    END IF;
    EXECUTE format('SELECT closed_through FROM %s WHERE partition = -1', progress) INTO ct;
    IF wm IS NOT NULL AND wm > '-infinity' AND (ct IS NULL OR wm > ct) THEN
        EXECUTE @extschema@._processor_close_sql(p)
          USING wm, p.allowed_lateness, p.emit = 'final',
                coalesce(p.retention, '0') + CASE WHEN p.window_type = 'session' THEN p.gap ELSE '0' END, p.gap;
        EXECUTE format('INSERT INTO %s AS t (partition, closed_through) VALUES (-1, $1) '
                       'ON CONFLICT (partition) DO UPDATE SET closed_through = excluded.closed_through', progress)
          USING wm;
    END IF;
    RETURN consumed;
END
$$;
COMMENT ON FUNCTION @extschema@.run_processor(text, integer, boolean) IS
'one exactly-once step of a processor, as its owner, in the caller''s transaction: reads up to max_records through the processor''s group, updates its state and sink, closes the windows its watermark passed; NULL when wait is false and another step of the processor is in progress';

CREATE OR REPLACE VIEW @extschema@.processors AS
SELECT c.name, c.owner, c.kind, c.source_topic, c.group_name,
       coalesce(c.sink_table::text, c.sink_topic) AS sink,
       c.window_type, c.size, c.advance, c.time_mode, c.allowed_lateness,
       c.max_out_of_orderness, c.idle_timeout, c.emit,
       (SELECT sum(g.lag) FROM @extschema@.consumer_groups g
         WHERE g.topic OPERATOR(pg_catalog.=) c.source_topic
           AND g.group_name OPERATOR(pg_catalog.=) c.group_name)::bigint AS lag,
       c.created_at, c.gap, c.late, c.late_topic, c.retention,
       CASE WHEN c.kind OPERATOR(pg_catalog.=) 'window' THEN c.sink_topic END AS sink_topic
  FROM @extschema@.processor_catalog c;
COMMENT ON VIEW @extschema@.processors IS
'pg_eventlog stream processors: definition, sink and lag; per-partition watermarks and counters are in eventlog.processor_progress(name)';

/* ------------------------------------------------------------------------
 * Windowed stream-stream joins (issue 19): the catalog's kind 'join' and
 * join_spec, run_processor, reset_processor and drop_processor dispatch to
 * them, the processors view shows the right topic and counts its lag,
 * processor_progress names each partition's topic; then
 * sql/install/streams_join.sql, verbatim.
 * ------------------------------------------------------------------------ */
ALTER TABLE @extschema@.processor_catalog
    DROP CONSTRAINT processor_catalog_kind_check,
    ADD CONSTRAINT processor_catalog_kind_check
        CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['map', 'window', 'join'])),
    ADD COLUMN join_spec jsonb;
CREATE OR REPLACE FUNCTION @extschema@.run_processor(name text, max_records integer DEFAULT 1000, wait boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    tid integer;
    n integer;
    consumed bigint;
    waited interval;
    wm timestamptz;
    ct timestamptz;
BEGIN
    IF max_records IS NULL OR max_records < 1 THEN
        RAISE EXCEPTION 'max_records must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF wait IS NULL THEN
        RAISE EXCEPTION 'wait must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    -- The owner's SQL could SET ROLE to any role the session user may
    -- (PL/pgSQL cannot make this a security-restricted operation): run it
    -- only in sessions whose user has no role the owner does not have.
    IF NOT pg_has_role(p.owner, session_user, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied to run processor "%" in a session of role %', p.name, session_user
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('The processor''s SQL runs as its owner %s, and could take the roles of the session''s user.', p.owner),
                  HINT = format('Run it in a session of its owner (SET SESSION AUTHORIZATION %s, or connect as it).', p.owner);
    END IF;
    -- Run the owner's SQL as the owner, never as the caller: the function's
    -- SET clause restores the role on exit.
    PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);

    SELECT c.topic_id, c.partitions INTO tid, n FROM @extschema@.topic_catalog c WHERE c.name = p.source_topic;
    IF tid IS DISTINCT FROM p.source_topic_id THEN
        RAISE EXCEPTION 'source topic "%" of processor "%" was dropped', p.source_topic, p.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Drop the processor with eventlog.drop_processor.';
    END IF;

    -- One step of a processor at a time: the others wait, or skip.
    BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', progress);
    EXCEPTION WHEN lock_not_available THEN
        IF NOT wait THEN
            RETURN NULL;
        END IF;
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
        -- The step we waited for released this lock a moment before the
        -- partitions its poll held (advisory locks go last): a poll now
        -- would skip them and read nothing.  Let it look again (a long
        -- poll retries partitions other transactions hold every second).
        waited := interval '2 seconds';
    END;
    IF p.kind = 'join' THEN
        RETURN @extschema@._join_step(p, max_records, waited);
    END IF;

    EXECUTE @extschema@._processor_step_sql(p, '@extschema@.poll($1, $2, $3, partitions => $4, wait => $6)')
       INTO consumed
      USING p.source_topic, p.group_name, max_records, n, p.sink_topic, waited,
            p.max_out_of_orderness, CASE WHEN p.window_type = 'session' THEN p.gap ELSE p.size END,
            p.allowed_lateness + CASE WHEN p.late = 'update' THEN p.retention ELSE '0' END,
            p.advance, p.emit = 'changes', p.allowed_lateness, p.late_topic;
    IF p.kind = 'map' THEN
        RETURN consumed;
    END IF;

    -- The processor's watermark: processing time, or the least watermark of
    -- the partitions that are active (read recently, or with records left
    -- to read); when every partition is idle, the greatest.
    IF p.time_mode = 'processing' THEN
        wm := now();
    ELSE
        EXECUTE format($q$
            SELECT CASE WHEN bool_or(active) THEN min(coalesce(m, '-infinity')) FILTER (WHERE active)
                        ELSE max(m) END - $3
              FROM (SELECT t.max_event_time AS m,
                           NOT (coalesce(t.last_record_at, '-infinity') < now() - $4
                                AND coalesce(o.next_offset, 0) >= @extschema@.last_stable_offset($1, g.p)) AS active
                      FROM generate_series(0, $5 - 1) AS g(p)
                      LEFT JOIN %s t ON t.partition = g.p
                      LEFT JOIN @extschema@.group_offsets o
                             ON o.topic_id = $6 AND o.group_name = $2 AND o.partition = g.p) s$q$, progress)
           INTO wm
          USING p.source_topic, p.group_name, p.max_out_of_orderness, p.idle_timeout, n, tid;
    END IF;
    EXECUTE format('SELECT closed_through FROM %s WHERE partition = -1', progress) INTO ct;
    IF wm IS NOT NULL AND wm > '-infinity' AND (ct IS NULL OR wm > ct) THEN
        EXECUTE @extschema@._processor_close_sql(p)
          USING wm, p.allowed_lateness, p.emit = 'final',
                coalesce(p.retention, '0') + CASE WHEN p.window_type = 'session' THEN p.gap ELSE '0' END, p.gap;
        EXECUTE format('INSERT INTO %s AS t (partition, closed_through) VALUES (-1, $1) '
                       'ON CONFLICT (partition) DO UPDATE SET closed_through = excluded.closed_through', progress)
          USING wm;
    END IF;
    RETURN consumed;
END
$$;
COMMENT ON FUNCTION @extschema@.run_processor(text, integer, boolean) IS
'one exactly-once step of a processor, as its owner, in the caller''s transaction: reads up to max_records through the processor''s group, updates its state and sink, closes the windows its watermark passed; NULL when wait is false and another step of the processor is in progress';

CREATE OR REPLACE FUNCTION @extschema@.reset_processor(name text, target text DEFAULT 'earliest')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
BEGIN
    IF target IS NULL THEN
        RAISE EXCEPTION 'target must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
    PERFORM @extschema@.seek(p.source_topic, p.group_name, target);
    EXECUTE format('UPDATE %s SET max_event_time = NULL, last_record_at = now(), records = 0, '
                   'late_records = 0, null_time_records = 0, closed_through = NULL', progress);
    IF p.kind = 'window' THEN
        EXECUTE format('TRUNCATE @extschema@.%I', 'processor_' || p.processor_id || '_windows');
    ELSIF p.kind = 'join' THEN
        PERFORM @extschema@.seek(p.join_spec ->> 'right_topic', p.group_name, target);
        EXECUTE format('TRUNCATE @extschema@.%I, @extschema@.%I', 'processor_' || p.processor_id || '_left',
                       'processor_' || p.processor_id || '_right');
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.reset_processor(text, text) IS
'replays a processor: forgets its windows, watermarks and counters and seeks its group to target (earliest, latest, an offset or a timestamp); the sink''s windows are overwritten as they are computed again';

CREATE OR REPLACE FUNCTION @extschema@._drop_processor(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
BEGIN
    IF NOT pg_has_role(@extschema@._caller(), p.owner, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied for processor "%"', p.name
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Only members of the processor''s owner role %s may run, reset or drop it.', p.owner);
    END IF;
    -- Waits for a step in progress.
    EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I', 'processor_' || p.processor_id || '_progress');
    IF p.kind = 'window' THEN
        EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I', 'processor_' || p.processor_id || '_windows');
    ELSIF p.kind = 'join' THEN
        EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I, @extschema@.%I', 'processor_' || p.processor_id || '_left',
                       'processor_' || p.processor_id || '_right');
    END IF;
    DELETE FROM @extschema@.processor_catalog c WHERE c.processor_id = p.processor_id;
    DELETE FROM @extschema@.group_offsets o
     WHERE o.topic_id IN (p.source_topic_id, (p.join_spec ->> 'right_topic_id')::integer) AND o.group_name = p.group_name;
    DELETE FROM @extschema@.group_catalog g
     WHERE g.topic_id IN (p.source_topic_id, (p.join_spec ->> 'right_topic_id')::integer) AND g.group_name = p.group_name;
END
$$;
COMMENT ON FUNCTION @extschema@._drop_processor(text) IS
'internal: the body of eventlog.drop_processor, run as the extension owner on behalf of the caller eventlog.drop_processor notes (see src/acl.c)';

CREATE OR REPLACE VIEW @extschema@.processors AS
SELECT c.name, c.owner, c.kind, c.source_topic, c.group_name,
       coalesce(c.sink_table::text, c.sink_topic) AS sink,
       c.window_type, c.size, c.advance, c.time_mode, c.allowed_lateness,
       c.max_out_of_orderness, c.idle_timeout, c.emit,
       (SELECT sum(g.lag) FROM @extschema@.consumer_groups g
         WHERE (g.topic OPERATOR(pg_catalog.=) c.source_topic
                OR g.topic OPERATOR(pg_catalog.=) (c.join_spec OPERATOR(pg_catalog.->>) 'right_topic'))
           AND g.group_name OPERATOR(pg_catalog.=) c.group_name)::bigint AS lag,
       c.created_at, c.gap, c.late, c.late_topic, c.retention,
       CASE WHEN c.kind OPERATOR(pg_catalog.=) 'window' THEN c.sink_topic END AS sink_topic,
       c.join_spec OPERATOR(pg_catalog.->>) 'right_topic' AS right_topic
  FROM @extschema@.processor_catalog c;
COMMENT ON VIEW @extschema@.processors IS
'pg_eventlog stream processors: definition, sink and lag; per-partition watermarks and counters are in eventlog.processor_progress(name)';
GRANT SELECT ON @extschema@.processors TO PUBLIC;

DROP FUNCTION @extschema@.processor_progress(text);
CREATE FUNCTION @extschema@.processor_progress(name text)
RETURNS TABLE (partition integer, max_event_time timestamptz, watermark timestamptz,
               last_record_at timestamptz, records bigint, late_records bigint,
               null_time_records bigint, closed_through timestamptz, topic text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT t.partition, t.max_event_time, t.max_event_time - $1, t.last_record_at, t.records, '
        '       t.late_records, t.null_time_records, '
        '       (SELECT c.closed_through FROM @extschema@.%1$I c WHERE c.partition = -1), %2$s '
        '  FROM @extschema@.%1$I t WHERE t.partition >= 0 ORDER BY %3$s t.partition',
        'processor_' || p.processor_id || '_progress',
        -- a join's progress has a row per partition of each side
        CASE p.kind WHEN 'join' THEN 'CASE t.side WHEN ''right'' THEN $3 ELSE $2 END' ELSE '$2' END,
        CASE p.kind WHEN 'join' THEN 't.side,' ELSE '' END)
      USING p.max_out_of_orderness, p.source_topic, p.join_spec ->> 'right_topic';
END
$$;
COMMENT ON FUNCTION @extschema@.processor_progress(text) IS
'a processor''s source partitions (of both topics for a join): largest event time seen, watermark, last records, counters (late: dropped after their window closed), the watermark windows were closed up to, and the partition''s topic';

/* ------------------------------------------------------------------------
 * Windowed stream-stream joins (docs/streams.md#joins): a processor of
 * kind 'join' reads two topics, left (processor_catalog.source_topic) and
 * right (join_spec ->> 'right_topic'), through one consumer group
 * ("processor:<name>" on both topics), and joins the records whose join
 * keys are equal and whose event times are within [left time - before,
 * left time + after].  Its state, owned by the processor's owner:
 *
 *   processor_<id>_progress  a row per partition of each side (side
 *                            'left' or 'right'), and row ('left', -1)
 *                            holding closed_through, as for windows;
 *   processor_<id>_left      the left records whose join window is open,
 *   processor_<id>_right     and the right ones, each with a flag saying
 *                            whether it joined yet.
 *
 * The rules (the proofs that make the output independent of how records
 * are cut into steps are in docs/streams.md):
 *   - a record is late, dropped and counted, when its event time plus
 *     allowed_lateness is before the greater of its partition's watermark
 *     (as of the records before it) and closed_through;
 *   - a pair is written when its second record arrives;
 *   - a left record leaves the state when closed_through passes its time +
 *     after + allowed_lateness, a right record when it passes its time +
 *     before + allowed_lateness; then, unless it joined, a left join writes
 *     the left record with NULLs for the right, an outer join either side.
 * ------------------------------------------------------------------------ */

/*
 * Writing join rows to the sink from a CTE "out" (key, left value, right
 * value, left time, right time, left partition, left offset, right
 * partition, right offset): into a table, the rows not there yet (a replay
 * writes the same rows, which a row's source offsets identify); into a
 * topic, one record per row (the join's value as a JSON object, the later
 * of the two times as event time).  Returns the CTE "si" and the condition
 * that makes the final SELECT run it.
 */
CREATE FUNCTION @extschema@._join_sink_sql(p @extschema@.processor_catalog, topic_param text, OUT cte text, OUT final text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c name[];
BEGIN
    IF p.sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum) INTO c
          FROM pg_attribute att
         WHERE att.attrelid = p.sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        cte := format($f$si AS (INSERT INTO %1$s SELECT o.* FROM out AS o
        WHERE NOT EXISTS (SELECT FROM %1$s AS s
                           WHERE coalesce(s.%2$I, -1) = coalesce(o.lp, -1) AND coalesce(s.%3$I, -1) = coalesce(o.lo, -1)
                             AND coalesce(s.%4$I, -1) = coalesce(o.rp, -1) AND coalesce(s.%5$I, -1) = coalesce(o.ro, -1)))$f$,
                      p.sink_table, c[6], c[7], c[8], c[9]);
        final := '';
    ELSE
        cte := format($f$si AS MATERIALIZED (SELECT count(@extschema@.produce(%s, o.key,
            pg_catalog.jsonb_build_object('left', o.lv, 'right', o.rv, 'left_time', o.lt, 'right_time', o.rt,
                                          'left_partition', o.lp, 'left_offset', o.lo,
                                          'right_partition', o.rp, 'right_offset', o.ro),
            NULL, NULL, greatest(o.lt, o.rt))) AS n
          FROM (SELECT * FROM out ORDER BY lp, lo, rp, ro) AS o)$f$, topic_param);
        final := ' WHERE (SELECT si.n FROM si) >= 0';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._join_sink_sql(@extschema@.processor_catalog, text) IS
'internal: the CTE writing a join processor''s rows to its sink table or topic';

/*
 * A join key and an event time as a step evaluates them: the key as jsonb
 * (keys of two numeric types compare as numbers; JSON null is no key), both
 * inside CASE so that a set-returning expression is refused.
 */
CREATE FUNCTION @extschema@._join_key_sql(expr text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN format('CASE WHEN true THEN NULLIF(pg_catalog.to_jsonb((%s)), ''null''::jsonb) END', expr);
COMMENT ON FUNCTION @extschema@._join_key_sql(text) IS
'internal: a join key expression as a step evaluates it';

CREATE FUNCTION @extschema@._join_time_sql(expr text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN format('CASE WHEN true THEN (%s)::timestamptz END', expr);
COMMENT ON FUNCTION @extschema@._join_time_sql(text) IS
'internal: an event time expression as a join step evaluates it';

/*
 * The statement of one join step over two batches ("lbatch", "rbatch":
 * FROM items giving eventlog.record rows).  $1 left topic, $2 group, $3
 * max_records, $4 left partitions, $5 right topic, $6 right partitions,
 * $7 poll wait, $8 max_out_of_orderness, $9 allowed_lateness, $10 before,
 * $11 after, $12 sink topic.  The user's key and event time expressions are
 * pasted in parentheses: they are the owner's SQL and run as the owner.
 */
CREATE FUNCTION @extschema@._join_step_sql(p @extschema@.processor_catalog, lbatch text, rbatch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j jsonb := p.join_spec;
    id text := coalesce(p.processor_id, 0)::text;
    progress text := format('@extschema@.%I', 'processor_' || id || '_progress');
    bufl text := format('@extschema@.%I', 'processor_' || id || '_left');
    bufr text := format('@extschema@.%I', 'processor_' || id || '_right');
    sink record := @extschema@._join_sink_sql(p, '$12');
BEGIN
    /*
     * "e" evaluates each record's join key (as jsonb, so that keys of two
     * numeric types compare as numbers; JSON null is no key) and event
     * time once, and judges lateness by the partition's watermark before
     * the record, as a window processor does.  Pairs: new left records
     * with new and buffered right ones, buffered left ones with new right
     * ones (the buffers as of the statement's snapshot: what earlier steps
     * kept).
     */
    RETURN format($f$
WITH prev AS (SELECT side AS s_, partition AS p_, max_event_time AS m_ FROM %1$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %1$s WHERE partition = -1),
raw AS (
    SELECT 'left'::text AS s_, record.partition AS p_, record.offset_id AS o_, record.value AS v_, t_.k_, t_.ts_
      FROM %2$s AS record
           CROSS JOIN LATERAL (SELECT %4$s AS k_, %5$s AS ts_ OFFSET 0) AS t_
    UNION ALL
    SELECT 'right'::text, record.partition, record.offset_id, record.value, t_.k_, t_.ts_
      FROM %3$s AS record
           CROSS JOIN LATERAL (SELECT %6$s AS k_, %7$s AS ts_ OFFSET 0) AS t_),
e AS MATERIALIZED (
    SELECT w_.*, (w_.ts_ + $9 < greatest(w_.wm_, ct.c_)) IS TRUE AS late_
      FROM (SELECT raw.*, coalesce(greatest(prev.m_, max(raw.ts_) OVER (PARTITION BY raw.s_, raw.p_ ORDER BY raw.o_
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
                                   '-infinity') - $8 AS wm_
              FROM raw LEFT JOIN prev ON prev.s_ = raw.s_ AND prev.p_ = raw.p_) AS w_
           CROSS JOIN ct),
nl AS (SELECT * FROM e WHERE e.s_ = 'left' AND e.ts_ IS NOT NULL AND NOT e.late_),
nr AS (SELECT * FROM e WHERE e.s_ = 'right' AND e.ts_ IS NOT NULL AND NOT e.late_),
pairs AS MATERIALIZED (
    SELECT l.k_, l.v_ AS lv, r.v_ AS rv, l.ts_ AS lt, r.ts_ AS rt, l.p_ AS lp, l.o_ AS lo, r.p_ AS rp, r.o_ AS ro,
           false AS lold, false AS rold
      FROM nl AS l JOIN nr AS r ON r.k_ = l.k_ AND r.ts_ BETWEEN l.ts_ - $10 AND l.ts_ + $11
    UNION ALL
    SELECT l.k_, l.v_, r.value, l.ts_, r.event_time, l.p_, l.o_, r.partition, r.offset_id, false, true
      FROM nl AS l JOIN %9$s AS r ON r.join_key = l.k_ AND r.event_time BETWEEN l.ts_ - $10 AND l.ts_ + $11
    UNION ALL
    SELECT l.join_key, l.value, r.v_, l.event_time, r.ts_, l.partition, l.offset_id, r.p_, r.o_, true, false
      FROM %8$s AS l JOIN nr AS r ON r.k_ = l.join_key AND r.ts_ BETWEEN l.event_time - $10 AND l.event_time + $11),
ml AS (UPDATE %8$s AS b SET matched = true FROM pairs
        WHERE pairs.lold AND b.partition = pairs.lp AND b.offset_id = pairs.lo AND NOT b.matched),
mr AS (UPDATE %9$s AS b SET matched = true FROM pairs
        WHERE pairs.rold AND b.partition = pairs.rp AND b.offset_id = pairs.ro AND NOT b.matched),
il AS (INSERT INTO %8$s (partition, offset_id, join_key, event_time, value, matched)
       SELECT nl.p_, nl.o_, nl.k_, nl.ts_, nl.v_,
              EXISTS (SELECT FROM pairs WHERE NOT pairs.lold AND pairs.lp = nl.p_ AND pairs.lo = nl.o_)
         FROM nl),
ir AS (INSERT INTO %9$s (partition, offset_id, join_key, event_time, value, matched)
       SELECT nr.p_, nr.o_, nr.k_, nr.ts_, nr.v_,
              EXISTS (SELECT FROM pairs WHERE NOT pairs.rold AND pairs.rp = nr.p_ AND pairs.ro = nr.o_)
         FROM nr),
out AS (SELECT pairs.k_ #>> '{}' AS key, pairs.lv, pairs.rv, pairs.lt, pairs.rt, pairs.lp, pairs.lo, pairs.rp, pairs.ro
          FROM pairs),
%10$s,
pu AS (INSERT INTO %1$s AS t (side, partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT e.s_, e.p_, max(e.ts_), pg_catalog.now(), count(*), count(*) FILTER (WHERE e.late_),
              count(*) FILTER (WHERE e.ts_ IS NULL)
         FROM e GROUP BY e.s_, e.p_
       ON CONFLICT (side, partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT count(*) FROM e%11$s$f$,
        progress, lbatch, rbatch,
        @extschema@._join_key_sql(j ->> 'left_key'), @extschema@._join_time_sql(j ->> 'left_event_time'),
        @extschema@._join_key_sql(j ->> 'right_key'), @extschema@._join_time_sql(j ->> 'right_event_time'),
        bufl, bufr, sink.cte, sink.final);
END
$$;
COMMENT ON FUNCTION @extschema@._join_step_sql(@extschema@.processor_catalog, text, text) IS
'internal: the statement of one step of a join processor over a batch of each topic';

/*
 * The statement closing join windows up to a watermark ($1): removes the
 * records whose window it passed and writes the unmatched ones when the
 * join type wants them.  $2 after, $3 allowed_lateness, $4 before, $5 left
 * unmatched written, $6 right unmatched written, $7 the sink topic.
 */
CREATE FUNCTION @extschema@._join_close_sql(p @extschema@.processor_catalog)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    sink record := @extschema@._join_sink_sql(p, '$7');
BEGIN
    RETURN format($f$
WITH dl AS (DELETE FROM @extschema@.%1$I WHERE event_time + $2 + $3 < $1 RETURNING *),
dr AS (DELETE FROM @extschema@.%2$I WHERE event_time + $4 + $3 < $1 RETURNING *),
out AS (SELECT dl.join_key #>> '{}' AS key, dl.value AS lv, NULL::jsonb AS rv, dl.event_time AS lt,
               NULL::timestamptz AS rt, dl.partition AS lp, dl.offset_id AS lo, NULL::integer AS rp, NULL::bigint AS ro
          FROM dl WHERE $5 AND NOT dl.matched
        UNION ALL
        SELECT dr.join_key #>> '{}', NULL, dr.value, NULL, dr.event_time, NULL, NULL, dr.partition, dr.offset_id
          FROM dr WHERE $6 AND NOT dr.matched),
%3$s
SELECT count(*) FROM out%4$s$f$,
        'processor_' || p.processor_id || '_left', 'processor_' || p.processor_id || '_right',
        sink.cte, sink.final);
END
$$;
COMMENT ON FUNCTION @extschema@._join_close_sql(@extschema@.processor_catalog) IS
'internal: the statement removing the records whose join window a watermark closed, writing the unmatched ones of a left or outer join';

/*
 * One step of a join processor, called by run_processor as the
 * processor's owner, holding its lock: the batches, the watermark over the
 * partitions of both topics (as run_processor computes it for one), and
 * the windows it closed.
 */
CREATE FUNCTION @extschema@._join_step(p @extschema@.processor_catalog, max_records integer, waited interval)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j jsonb := p.join_spec;
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    ln integer;
    rtid integer;
    rn integer;
    consumed bigint;
    wm timestamptz;
    ct timestamptz;
BEGIN
    SELECT c.partitions INTO ln FROM @extschema@.topic_catalog c WHERE c.topic_id = p.source_topic_id;
    SELECT c.topic_id, c.partitions INTO rtid, rn FROM @extschema@.topic_catalog c WHERE c.name = j ->> 'right_topic';
    IF rtid IS DISTINCT FROM (j ->> 'right_topic_id')::integer THEN
        RAISE EXCEPTION 'source topic "%" of processor "%" was dropped', j ->> 'right_topic', p.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Drop the processor with eventlog.drop_processor.';
    END IF;
    EXECUTE @extschema@._join_step_sql(p, '@extschema@.poll($1, $2, $3, partitions => $4, wait => $7)',
                                       '@extschema@.poll($5, $2, $3, partitions => $6, wait => $7)')
       INTO consumed
      USING p.source_topic, p.group_name, max_records, ln, j ->> 'right_topic', rn, waited,
            p.max_out_of_orderness, p.allowed_lateness, (j ->> 'before')::interval, (j ->> 'after')::interval,
            p.sink_topic;

    -- The watermark: the least over the active partitions of both topics.
    EXECUTE format($q$
        SELECT CASE WHEN bool_or(active) THEN min(coalesce(m, '-infinity')) FILTER (WHERE active)
                    ELSE max(m) END - $1
          FROM (SELECT t.max_event_time AS m,
                       NOT (coalesce(t.last_record_at, '-infinity') < now() - $2
                            AND coalesce(o.next_offset, 0) >= @extschema@.last_stable_offset(g.topic, g.p)) AS active
                  FROM (SELECT 'left' AS side, $3 AS topic, $4 AS tid, x AS p FROM generate_series(0, $5 - 1) x
                        UNION ALL
                        SELECT 'right', $6, $7, x FROM generate_series(0, $8 - 1) x) AS g
                  LEFT JOIN %s t ON t.side = g.side AND t.partition = g.p
                  LEFT JOIN @extschema@.group_offsets o
                         ON o.topic_id = g.tid AND o.group_name = $9 AND o.partition = g.p) s$q$, progress)
       INTO wm
      USING p.max_out_of_orderness, p.idle_timeout, p.source_topic, p.source_topic_id, ln,
            j ->> 'right_topic', rtid, rn, p.group_name;
    EXECUTE format('SELECT closed_through FROM %s WHERE partition = -1', progress) INTO ct;
    IF wm IS NOT NULL AND wm > '-infinity' AND (ct IS NULL OR wm > ct) THEN
        EXECUTE @extschema@._join_close_sql(p)
          USING wm, (j ->> 'after')::interval, p.allowed_lateness, (j ->> 'before')::interval,
                j ->> 'join_type' IN ('left', 'outer'), j ->> 'join_type' = 'outer', p.sink_topic;
        EXECUTE format('UPDATE %s SET closed_through = $1 WHERE partition = -1', progress) USING wm;
    END IF;
    RETURN consumed;
END
$$;
COMMENT ON FUNCTION @extschema@._join_step(@extschema@.processor_catalog, integer, interval) IS
'internal: one step of a join processor, run by eventlog.run_processor as the processor''s owner';

/*
 * The catalog side of create_join_processor, run as the extension owner
 * (through el_gate) for the caller, who becomes the owner: checks
 * the caller's privileges on both topics, records the processor, creates
 * its group on both topics and its state tables (owned by the caller).
 */
CREATE FUNCTION @extschema@.__register_join_processor(spec jsonb)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    caller regrole := @extschema@._caller();
    rtid integer;
    t text;
BEGIN
    IF spec IS NULL THEN
        RAISE EXCEPTION 'processor specification must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    p := jsonb_populate_record(NULL::@extschema@.processor_catalog, spec);
    p.kind := 'join';
    IF p.name IS NULL OR p.name !~ '^[A-Za-z0-9._-]{1,100}$' THEN
        RAISE EXCEPTION 'invalid processor name "%"', left(p.name, 110)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A processor name is 1 to 100 letters, digits, ".", "_" or "-".';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.processor_catalog c WHERE c.name = p.name) THEN
        RAISE EXCEPTION 'processor "%" already exists', p.name USING ERRCODE = 'duplicate_object';
    END IF;
    IF p.join_spec IS NULL OR p.join_spec ->> 'right_topic' IS NULL
       OR p.join_spec ->> 'right_topic' = p.source_topic THEN
        RAISE EXCEPTION 'a join processor reads two different topics' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.source_topic_id := @extschema@._authorize(p.source_topic, 'consume');
    rtid := @extschema@._authorize(p.join_spec ->> 'right_topic', 'consume');
    IF p.sink_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.sink_topic, 'produce');
    END IF;
    IF EXISTS (SELECT FROM @extschema@.topic_catalog c
                WHERE c.topic_id IN (p.source_topic_id, rtid) AND c.format <> 'json') THEN
        RAISE EXCEPTION 'a join processor reads JSON topics' USING ERRCODE = 'wrong_object_type';
    END IF;
    p.join_spec := p.join_spec || jsonb_build_object('right_topic_id', rtid);
    p.owner := caller;
    p.group_name := 'processor:' || p.name;
    p.created_at := now();
    p.processor_id := nextval(pg_get_serial_sequence('@extschema@.processor_catalog', 'processor_id'));
    INSERT INTO @extschema@.processor_catalog SELECT p.*;
    PERFORM @extschema@._create_group(p.source_topic, p.group_name, coalesce(spec ->> 'start_from', 'earliest'));
    PERFORM @extschema@._create_group(p.join_spec ->> 'right_topic', p.group_name, coalesce(spec ->> 'start_from', 'earliest'));

    -- State, the owner's: steps run as the owner and write it directly.
    t := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    EXECUTE format('CREATE TABLE %s (side text NOT NULL, partition integer NOT NULL, max_event_time timestamptz, '
                   'last_record_at timestamptz, records bigint NOT NULL DEFAULT 0, '
                   'late_records bigint NOT NULL DEFAULT 0, null_time_records bigint NOT NULL DEFAULT 0, '
                   'closed_through timestamptz, PRIMARY KEY (side, partition))', t);
    EXECUTE format('INSERT INTO %s (side, partition, last_record_at) '
                   'SELECT ''left'', g, now() FROM generate_series(-1, %s) g '
                   'UNION ALL SELECT ''right'', g, now() FROM generate_series(0, %s) g', t,
                   (SELECT c.partitions - 1 FROM @extschema@.topic_catalog c WHERE c.topic_id = p.source_topic_id),
                   (SELECT c.partitions - 1 FROM @extschema@.topic_catalog c WHERE c.topic_id = rtid));
    EXECUTE format('COMMENT ON TABLE %s IS %L', t,
                   format('pg_eventlog join processor %s: per partition of each side, the largest event time seen and counters; partition -1: the watermark join windows were closed up to', p.name));
    EXECUTE format('ALTER TABLE %s OWNER TO %s', t, caller);
    EXECUTE format('GRANT SELECT ON %s TO PUBLIC', t);
    FOREACH t IN ARRAY ARRAY['left', 'right'] LOOP
        EXECUTE format('CREATE TABLE @extschema@.%I (partition integer NOT NULL, offset_id bigint NOT NULL, '
                       'join_key jsonb, event_time timestamptz NOT NULL, value jsonb, '
                       'matched boolean NOT NULL DEFAULT false, PRIMARY KEY (partition, offset_id))',
                       'processor_' || p.processor_id || '_' || t);
        EXECUTE format('CREATE INDEX ON @extschema@.%I (join_key, event_time)', 'processor_' || p.processor_id || '_' || t);
        EXECUTE format('COMMENT ON TABLE @extschema@.%I IS %L', 'processor_' || p.processor_id || '_' || t,
                       format('pg_eventlog join processor %s: the %s records whose join window is open', p.name, t));
        EXECUTE format('ALTER TABLE @extschema@.%I OWNER TO %s', 'processor_' || p.processor_id || '_' || t, caller);
    END LOOP;
    RETURN p.processor_id;
END
$$;
COMMENT ON FUNCTION @extschema@.__register_join_processor(jsonb) IS
'internal: the body of eventlog._register_join_processor, run as the extension owner on behalf of the caller eventlog._register_join_processor notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@.__register_join_processor(jsonb) FROM PUBLIC;

CREATE FUNCTION @extschema@._register_join_processor(spec jsonb)
RETURNS integer
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._register_join_processor(jsonb) IS
'internal: records a join processor the caller''s create_join_processor checked; the caller becomes its owner';

/* Checks the arguments and expressions as the caller, and registers. */
CREATE FUNCTION @extschema@.create_join_processor(name text, left_topic text, right_topic text,
                                                  sink_table regclass DEFAULT NULL,
                                                  sink_topic text DEFAULT NULL,
                                                  within interval DEFAULT NULL,
                                                  before interval DEFAULT NULL,
                                                  after interval DEFAULT NULL,
                                                  join_type text DEFAULT 'inner',
                                                  left_key text DEFAULT 'key',
                                                  right_key text DEFAULT 'key',
                                                  left_event_time text DEFAULT 'event_time',
                                                  right_event_time text DEFAULT 'event_time',
                                                  allowed_lateness interval DEFAULT '0',
                                                  max_out_of_orderness interval DEFAULT '0',
                                                  idle_timeout interval DEFAULT '1 minute',
                                                  start_from text DEFAULT 'earliest')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    ncols integer;
BEGIN
    IF name IS NULL OR left_topic IS NULL OR right_topic IS NULL OR join_type IS NULL
       OR left_key IS NULL OR right_key IS NULL OR left_event_time IS NULL OR right_event_time IS NULL
       OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL OR idle_timeout IS NULL THEN
        RAISE EXCEPTION 'the arguments of a join processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only one of sink_table and sink_topic, and within or before and after, may be null.';
    END IF;
    IF (sink_table IS NULL) = (sink_topic IS NULL) THEN
        RAISE EXCEPTION 'a processor writes to one sink table or one sink topic'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table or sink_topic.';
    END IF;
    IF join_type NOT IN ('inner', 'left', 'outer') THEN
        RAISE EXCEPTION 'join_type must be ''inner'', ''left'' or ''outer''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    before := coalesce(before, within);
    after := coalesce(after, within);
    IF before IS NULL OR after IS NULL THEN
        RAISE EXCEPTION 'a join processor needs within, or before and after' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'within => ''5 minutes'' joins the records at most 5 minutes apart.';
    END IF;
    IF before < '0' OR after < '0'
       OR date_part('month', before) <> 0 OR date_part('year', before) <> 0
       OR date_part('month', after) <> 0 OR date_part('year', after) <> 0 THEN
        RAISE EXCEPTION 'invalid join window: before % and after %', before, after
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Before and after are intervals at least zero, without months or years.';
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF left_topic = right_topic THEN
        RAISE EXCEPTION 'a join processor reads two different topics' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'To join a topic with itself, copy it to a second topic with eventlog.create_processor.';
    END IF;
    p.name := name;
    p.kind := 'join';
    p.source_topic := left_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.allowed_lateness := allowed_lateness;
    p.max_out_of_orderness := max_out_of_orderness;
    p.idle_timeout := idle_timeout;
    p.join_spec := jsonb_build_object('right_topic', right_topic, 'join_type', join_type,
                                      'before', before, 'after', after,
                                      'left_key', left_key, 'right_key', right_key,
                                      'left_event_time', left_event_time, 'right_event_time', right_event_time);
    IF sink_table IS NOT NULL THEN
        SELECT count(*) INTO ncols FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        IF ncols <> 9 THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes 9', sink_table, ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: key, left value, right value, left time, right time, left partition, left offset, right partition, right offset.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A join processor selects from and inserts into its sink table.';
        END IF;
    END IF;
    -- The expressions, and the sink's statement, over no records, as the
    -- caller: a syntax error, an unknown column, a set-returning expression
    -- or a sink column of the wrong type shows now.
    EXECUTE format('SELECT %s, %s, %s, %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record',
                   @extschema@._join_key_sql(left_key), @extschema@._join_time_sql(left_event_time),
                   @extschema@._join_key_sql(right_key), @extschema@._join_time_sql(right_event_time));
    EXECUTE format('WITH out AS (SELECT NULL::text AS key, NULL::jsonb AS lv, NULL::jsonb AS rv, NULL::timestamptz AS lt, '
                   'NULL::timestamptz AS rt, NULL::integer AS lp, NULL::bigint AS lo, NULL::integer AS rp, '
                   'NULL::bigint AS ro WHERE false), %s SELECT count(*) FROM out %s',
                   (@extschema@._join_sink_sql(p, '$1')).cte, (@extschema@._join_sink_sql(p, '$1')).final)
      USING sink_topic;
    PERFORM @extschema@._register_join_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_join_processor(text, text, text, regclass, text, interval, interval, interval, text, text, text, text, text, interval, interval, interval, text) IS
'creates a windowed stream-stream join: the records of left_topic and right_topic with equal join keys (left_key, right_key) whose event times are within [left time - before, left time + after] (within: both) become rows of sink_table or records of sink_topic; join_type inner, left or outer (unmatched records written with NULLs when their window closes)';
-- TxnOffsetCommit without the group's lock to the end of the producer's
-- transaction (issue 16).
/*
 * TxnOffsetCommit (the gateway's Kafka transactions, src/kafka/api_txn.c):
 * OffsetCommit's checks and rows, inside a producer's longer transaction.
 * Without the group's lock, which would be held to the end of that
 * transaction and make the group's heartbeats, joins and other commits
 * wait for EndTxn: the group as the statement's snapshot shows it, as
 * Kafka checks a TxnOffsetCommit when it comes (its positions land at
 * EndTxn, whatever the group did meanwhile).  Only the group_offsets rows
 * written stay locked until then.  Not a heartbeat.
 */
CREATE FUNCTION @extschema@._kafka_txn_offset_commit(group_name text, generation integer, member_id text,
                                                    group_instance_id text, offsets @extschema@.kafka_offset[])
RETURNS TABLE (topic text, partition integer, error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    gen integer := coalesce(generation, -1);
    m text := coalesce(member_id, '');
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
    o @extschema@.kafka_offset;
    group_error smallint := 0;
    tid integer;
    nparts integer;
BEGIN
    IF offsets IS NULL THEN
        RAISE EXCEPTION 'offsets must not be null' USING ERRCODE = '22004';
    END IF;
    IF NOT @extschema@._kafka_valid_group(g) THEN
        group_error := 24;
    ELSIF NOT @extschema@._kafka_authorized(g) THEN
        -- Not the lock of a group the caller may not use (see __kafka_join_check).
        group_error := 30;
    ELSE
        -- No group lock (it would be held to the end of the producer's
        -- transaction), no expiry of members: the group as the statement's
        -- snapshot shows it.
        SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
        IF NOT @extschema@._kafka_authorized(g) THEN
            group_error := 30;
        ELSIF grp.group_name IS NULL THEN
            IF gen >= 0 THEN
                group_error := 22;
            ELSIF EXISTS (SELECT FROM @extschema@.group_members s
                           WHERE s.group_name = g AND s.last_heartbeat + s.session_timeout > now()) THEN
                -- A simple consumer commits only while the group has no
                -- members: a live SQL member-style consumer of the name is
                -- one (it owns its partitions; see __kafka_join_begin).
                group_error := 25;
            END IF;
        ELSIF gen >= 0 OR m <> '' OR group_instance_id IS NOT NULL THEN
            SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
            IF group_instance_id IS NOT NULL AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                                                          WHERE k.group_name = g AND k.group_instance_id = _kafka_txn_offset_commit.group_instance_id
                                                            AND k.member_id <> m) THEN
                group_error := 82;
            ELSIF mem.member_id IS NULL OR mem.pending THEN
                group_error := 25;
            ELSIF gen <> grp.generation THEN
                group_error := 22;
            ELSIF grp.state = 'CompletingRebalance' THEN
                group_error := 27;
            END IF;
        ELSIF grp.state <> 'Empty'
              OR EXISTS (SELECT FROM @extschema@.group_members s
                          WHERE s.group_name = g AND s.last_heartbeat + s.session_timeout > now()) THEN
            group_error := 25;
        END IF;
    END IF;
    FOREACH o IN ARRAY offsets LOOP
        topic := o.topic;
        partition := o.partition;
        error_code := group_error;
        IF error_code = 0 THEN
            SELECT c.topic_id, c.partitions INTO tid, nparts FROM @extschema@.topic_catalog c WHERE c.name = o.topic;
            IF tid IS NULL OR o.partition IS NULL OR o.partition < 0 OR o.partition >= nparts THEN
                error_code := 3;
            ELSIF NOT @extschema@.has_topic_privilege(@extschema@._caller(), o.topic, 'consume') THEN
                error_code := 29;
            ELSIF octet_length(o.metadata) > 4096 THEN
                error_code := 12;
            ELSIF o.committed_offset IS NULL OR o.committed_offset < 0
                  OR o.committed_offset > @extschema@.high_watermark(o.topic, o.partition) THEN
                error_code := 1;
            ELSE
                INSERT INTO @extschema@.group_offsets AS x (topic_id, group_name, partition, next_offset, committed_at, metadata)
                VALUES (tid, g, o.partition, o.committed_offset, now(), o.metadata)
                ON CONFLICT ON CONSTRAINT group_offsets_pkey DO UPDATE
                   SET next_offset = excluded.next_offset, committed_at = excluded.committed_at,
                       metadata = excluded.metadata;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_txn_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) IS
'internal: the body of eventlog.kafka_txn_offset_commit, run as the extension owner (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._kafka_txn_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) FROM PUBLIC;

CREATE FUNCTION @extschema@.kafka_txn_offset_commit(group_name text, generation integer, member_id text,
                                                   group_instance_id text, offsets @extschema@.kafka_offset[])
RETURNS TABLE (topic text, partition integer, error_code smallint)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_txn_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) IS
'Kafka TxnOffsetCommit: kafka_offset_commit''s checks against the group as the statement sees it, without the group''s lock, for positions that commit with the records of a longer transaction (only the group_offsets rows written stay locked)';


/* Stream processors in the background (issue 19): run_processor lets the processor worker run it. */
CREATE OR REPLACE FUNCTION @extschema@.run_processor(name text, max_records integer DEFAULT 1000, wait boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    tid integer;
    n integer;
    consumed bigint;
    waited interval;
    wm timestamptz;
    ct timestamptz;
BEGIN
    IF max_records IS NULL OR max_records < 1 THEN
        RAISE EXCEPTION 'max_records must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF wait IS NULL THEN
        RAISE EXCEPTION 'wait must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    -- The processor worker (src/processor_worker.c) runs this as the owner
    -- already, in a security-restricted operation, which forbids SET ROLE.
    IF NOT @extschema@._processor_worker_step(p.processor_id) THEN
        -- The owner's SQL could SET ROLE to any role the session user may
        -- (PL/pgSQL cannot make this a security-restricted operation): run it
        -- only in sessions whose user has no role the owner does not have.
        IF NOT pg_has_role(p.owner, session_user, 'MEMBER') THEN
            RAISE EXCEPTION 'permission denied to run processor "%" in a session of role %', p.name, session_user
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('The processor''s SQL runs as its owner %s, and could take the roles of the session''s user.', p.owner),
                      HINT = format('Run it in a session of its owner (SET SESSION AUTHORIZATION %s, or connect as it).', p.owner);
        END IF;
        -- Run the owner's SQL as the owner, never as the caller: the function's
        -- SET clause restores the role on exit.
        PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);
    END IF;

    SELECT c.topic_id, c.partitions INTO tid, n FROM @extschema@.topic_catalog c WHERE c.name = p.source_topic;
    IF tid IS DISTINCT FROM p.source_topic_id THEN
        RAISE EXCEPTION 'source topic "%" of processor "%" was dropped', p.source_topic, p.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Drop the processor with eventlog.drop_processor.';
    END IF;

    -- One step of a processor at a time: the others wait, or skip.
    BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', progress);
    EXCEPTION WHEN lock_not_available THEN
        IF NOT wait THEN
            RETURN NULL;
        END IF;
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
        -- The step we waited for released this lock a moment before the
        -- partitions its poll held (advisory locks go last): a poll now
        -- would skip them and read nothing.  Let it look again (a long
        -- poll retries partitions other transactions hold every second).
        waited := interval '2 seconds';
    END;
    IF p.kind = 'join' THEN
        RETURN @extschema@._join_step(p, max_records, waited);
    END IF;

    EXECUTE @extschema@._processor_step_sql(p, '@extschema@.poll($1, $2, $3, partitions => $4, wait => $6)')
       INTO consumed
      USING p.source_topic, p.group_name, max_records, n, p.sink_topic, waited,
            p.max_out_of_orderness, CASE WHEN p.window_type = 'session' THEN p.gap ELSE p.size END,
            p.allowed_lateness + CASE WHEN p.late = 'update' THEN p.retention ELSE '0' END,
            p.advance, p.emit = 'changes', p.allowed_lateness, p.late_topic;
    IF p.kind = 'map' THEN
        RETURN consumed;
    END IF;

    -- The processor's watermark: processing time, or the least watermark of
    -- the partitions that are active (read recently, or with records left
    -- to read); when every partition is idle, the greatest.
    IF p.time_mode = 'processing' THEN
        wm := now();
    ELSE
        EXECUTE format($q$
            SELECT CASE WHEN bool_or(active) THEN min(coalesce(m, '-infinity')) FILTER (WHERE active)
                        ELSE max(m) END - $3
              FROM (SELECT t.max_event_time AS m,
                           NOT (coalesce(t.last_record_at, '-infinity') < now() - $4
                                AND coalesce(o.next_offset, 0) >= @extschema@.last_stable_offset($1, g.p)) AS active
                      FROM generate_series(0, $5 - 1) AS g(p)
                      LEFT JOIN %s t ON t.partition = g.p
                      LEFT JOIN @extschema@.group_offsets o
                             ON o.topic_id = $6 AND o.group_name = $2 AND o.partition = g.p) s$q$, progress)
           INTO wm
          USING p.source_topic, p.group_name, p.max_out_of_orderness, p.idle_timeout, n, tid;
    END IF;
    EXECUTE format('SELECT closed_through FROM %s WHERE partition = -1', progress) INTO ct;
    IF wm IS NOT NULL AND wm > '-infinity' AND (ct IS NULL OR wm > ct) THEN
        EXECUTE @extschema@._processor_close_sql(p)
          USING wm, p.allowed_lateness, p.emit = 'final',
                coalesce(p.retention, '0') + CASE WHEN p.window_type = 'session' THEN p.gap ELSE '0' END, p.gap;
        EXECUTE format('INSERT INTO %s AS t (partition, closed_through) VALUES (-1, $1) '
                       'ON CONFLICT (partition) DO UPDATE SET closed_through = excluded.closed_through', progress)
          USING wm;
    END IF;
    RETURN consumed;
END
$$;
COMMENT ON FUNCTION @extschema@.run_processor(text, integer, boolean) IS
'one exactly-once step of a processor, as its owner, in the caller''s transaction: reads up to max_records through the processor''s group, updates its state and sink, closes the windows its watermark passed; NULL when wait is false and another step of the processor is in progress';

/* ------------------------------------------------------------------------
 * Stream processors in the background (issue 19): the last section of
 * sql/install/streams.sql, verbatim.  Background execution
 * (src/processors.c, src/processor_worker.c): a processor worker per
 * database with enabled processors runs their steps
 * as they get records.  processor_runtime holds what the worker and
 * pause_processor / resume_processor change, apart from the definitions: a
 * processor without a row is enabled and healthy.
 * ------------------------------------------------------------------------ */

CREATE TABLE @extschema@.processor_runtime (
    processor_id   integer PRIMARY KEY,
    enabled        boolean NOT NULL DEFAULT true,
    failures       integer NOT NULL DEFAULT 0,
    last_error     text,
    last_error_at  timestamptz
);
COMMENT ON TABLE @extschema@.processor_runtime IS
'pg_eventlog stream processors run by the processor worker: paused or not, and the worker''s failed steps (failures: consecutive, 0 once a step succeeds)';
GRANT SELECT ON @extschema@.processor_runtime TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.processor_runtime', '');

/* Wakes the processor worker (or the launcher) when such a change commits. */
CREATE FUNCTION @extschema@._processors_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'el_processors_changed'
LANGUAGE C;
COMMENT ON FUNCTION @extschema@._processors_changed() IS
'internal: the trigger that tells the processor worker, at commit, that processors were created, dropped, paused or resumed';
REVOKE ALL ON FUNCTION @extschema@._processors_changed() FROM PUBLIC;
CREATE TRIGGER processors_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON @extschema@.processor_catalog
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@._processors_changed();
CREATE TRIGGER processors_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON @extschema@.processor_runtime
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@._processors_changed();

/*
 * A dropped processor's runtime row goes with it.  Not a foreign key: its
 * constraint triggers made DROP EXTENSION take its locks in an order that
 * deadlocks with the notifier's first publication (sql/drop_extension.sql).
 */
CREATE FUNCTION @extschema@._processors_forget()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM @extschema@.processor_runtime r
     WHERE NOT EXISTS (SELECT FROM @extschema@.processor_catalog c WHERE c.processor_id = r.processor_id);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@._processors_forget() IS
'internal: the trigger that removes the runtime rows of dropped processors';
REVOKE ALL ON FUNCTION @extschema@._processors_forget() FROM PUBLIC;
CREATE TRIGGER processors_forget AFTER DELETE OR TRUNCATE
    ON @extschema@.processor_catalog
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@._processors_forget();

CREATE FUNCTION @extschema@._processor_worker_step(processor_id integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_processor_worker_step'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._processor_worker_step(integer) IS
'internal: true once, to run_processor, in the processor worker''s step of that processor (which runs as its owner in a security-restricted operation); false anywhere else';

/*
 * The common body of _pause_processor and _resume_processor, which run it
 * as the extension owner for the caller their gates noted.
 */
CREATE FUNCTION @extschema@._set_processor_enabled(name text, enabled boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
BEGIN
    IF enabled IS NULL THEN
        RAISE EXCEPTION 'enabled must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT pg_has_role(@extschema@._caller(), p.owner, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied for processor "%"', p.name
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Only members of the processor''s owner role %s may pause or resume it.', p.owner);
    END IF;
    -- Resuming also forgets the failures, so that the worker tries at once.
    INSERT INTO @extschema@.processor_runtime AS r (processor_id, enabled)
    VALUES (p.processor_id, enabled)
    ON CONFLICT (processor_id) DO UPDATE
       SET enabled = excluded.enabled,
           failures = CASE WHEN excluded.enabled THEN 0 ELSE r.failures END;
END
$$;
COMMENT ON FUNCTION @extschema@._set_processor_enabled(text, boolean) IS
'internal: pauses or resumes a processor for the caller of eventlog.pause_processor or eventlog.resume_processor';
REVOKE ALL ON FUNCTION @extschema@._set_processor_enabled(text, boolean) FROM PUBLIC;

CREATE FUNCTION @extschema@._pause_processor(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@._set_processor_enabled(name, false);
END
$$;
COMMENT ON FUNCTION @extschema@._pause_processor(text) IS
'internal: the body of eventlog.pause_processor (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._pause_processor(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.pause_processor(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.pause_processor(text) IS
'stops the processor worker from running a processor (run_processor still runs it); its position and state stay as they are';

CREATE FUNCTION @extschema@._resume_processor(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@._set_processor_enabled(name, true);
END
$$;
COMMENT ON FUNCTION @extschema@._resume_processor(text) IS
'internal: the body of eventlog.resume_processor (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._resume_processor(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.resume_processor(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.resume_processor(text) IS
'lets the processor worker run a paused processor again, and retry a failing one at once';

CREATE OR REPLACE VIEW @extschema@.processors AS
SELECT c.name, c.owner, c.kind, c.source_topic, c.group_name,
       coalesce(c.sink_table::text, c.sink_topic) AS sink,
       c.window_type, c.size, c.advance, c.time_mode, c.allowed_lateness,
       c.max_out_of_orderness, c.idle_timeout, c.emit,
       (SELECT sum(g.lag) FROM @extschema@.consumer_groups g
         WHERE (g.topic OPERATOR(pg_catalog.=) c.source_topic
                OR g.topic OPERATOR(pg_catalog.=) (c.join_spec OPERATOR(pg_catalog.->>) 'right_topic'))
           AND g.group_name OPERATOR(pg_catalog.=) c.group_name)::bigint AS lag,
       c.created_at, c.gap, c.late, c.late_topic, c.retention,
       CASE WHEN c.kind OPERATOR(pg_catalog.=) 'window' THEN c.sink_topic END AS sink_topic,
       c.join_spec OPERATOR(pg_catalog.->>) 'right_topic' AS right_topic,
       coalesce(r.enabled, true) AS enabled,
       coalesce(r.failures, 0) AS failures,
       r.last_error, r.last_error_at
  FROM @extschema@.processor_catalog c
  LEFT JOIN @extschema@.processor_runtime r
         ON r.processor_id OPERATOR(pg_catalog.=) c.processor_id;
COMMENT ON VIEW @extschema@.processors IS
'pg_eventlog stream processors: definition, sink and lag, whether the processor worker runs it (enabled), and its failed steps (failures: consecutive, 0 once one succeeds; the last error); per-partition watermarks and counters are in eventlog.processor_progress(name)';

-- OffsetCommit and TxnOffsetCommit share one body (__kafka_offset_commit):
-- they differed only in taking the group's lock and counting as a heartbeat.

/*
 * OffsetCommit and TxnOffsetCommit: Kafka's validation (a member of the
 * current generation, or a simple consumer, generation -1 and no member id,
 * while the group has no members), then one group_offsets row per
 * partition.  One body for both, differing only in hold_group:
 *
 * - OffsetCommit (hold_group) takes the group's lock, expires its dead
 *   members first and counts as the member's heartbeat.
 * - TxnOffsetCommit (the gateway's Kafka transactions, src/kafka/api_txn.c)
 *   runs inside a producer's longer transaction.  The group's lock would be
 *   held to the end of that transaction and make the group's heartbeats,
 *   joins and other commits wait for EndTxn, so it takes none and expires
 *   nothing: it checks the group as the statement's snapshot shows it, as
 *   Kafka checks a TxnOffsetCommit when it comes (its positions land at
 *   EndTxn, whatever the group did meanwhile).  Only the group_offsets rows
 *   written stay locked until then.  Not a heartbeat.
 */
CREATE FUNCTION @extschema@.__kafka_offset_commit(group_name text, generation integer, member_id text,
                                                 group_instance_id text, offsets @extschema@.kafka_offset[],
                                                 hold_group boolean)
RETURNS TABLE (topic text, partition integer, error_code smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text := group_name;
    gen integer := coalesce(generation, -1);
    m text := coalesce(member_id, '');
    grp @extschema@.kafka_groups;
    mem @extschema@.kafka_group_members;
    o @extschema@.kafka_offset;
    group_error smallint := 0;
    tid integer;
    nparts integer;
BEGIN
    IF offsets IS NULL THEN
        RAISE EXCEPTION 'offsets must not be null' USING ERRCODE = '22004';
    END IF;
    IF NOT @extschema@._kafka_valid_group(g) THEN
        group_error := 24;
    ELSIF NOT @extschema@._kafka_authorized(g) THEN
        -- Not the lock of a group the caller may not use (see __kafka_join_check).
        group_error := 30;
    ELSE
        IF hold_group THEN
            PERFORM @extschema@._kafka_lock(g);
            PERFORM @extschema@._kafka_expire(g);
        END IF;
        SELECT * INTO grp FROM @extschema@.kafka_groups k WHERE k.group_name = g;
        IF NOT @extschema@._kafka_authorized(g) THEN
            group_error := 30;
        ELSIF grp.group_name IS NULL THEN
            IF gen >= 0 THEN
                group_error := 22;
            ELSIF EXISTS (SELECT FROM @extschema@.group_members s
                           WHERE s.group_name = g AND s.last_heartbeat + s.session_timeout > now()) THEN
                -- A simple consumer commits only while the group has no
                -- members: a live SQL member-style consumer of the name is
                -- one (it owns its partitions; see __kafka_join_begin).
                group_error := 25;
            END IF;
        ELSIF gen >= 0 OR m <> '' OR group_instance_id IS NOT NULL THEN
            SELECT * INTO mem FROM @extschema@.kafka_group_members k WHERE k.group_name = g AND k.member_id = m;
            IF group_instance_id IS NOT NULL AND EXISTS (SELECT FROM @extschema@.kafka_group_members k
                                                          WHERE k.group_name = g AND k.group_instance_id = __kafka_offset_commit.group_instance_id
                                                            AND k.member_id <> m) THEN
                group_error := 82;
            ELSIF mem.member_id IS NULL OR mem.pending THEN
                group_error := 25;
            ELSIF gen <> grp.generation THEN
                group_error := 22;
            ELSIF grp.state = 'CompletingRebalance' THEN
                group_error := 27;
            ELSIF hold_group THEN
                UPDATE @extschema@.kafka_group_members k SET last_heartbeat = now()
                 WHERE k.group_name = g AND k.member_id = m;
            END IF;
        ELSIF grp.state <> 'Empty'
              OR EXISTS (SELECT FROM @extschema@.group_members s
                          WHERE s.group_name = g AND s.last_heartbeat + s.session_timeout > now()) THEN
            group_error := 25;
        END IF;
    END IF;
    FOREACH o IN ARRAY offsets LOOP
        topic := o.topic;
        partition := o.partition;
        error_code := group_error;
        IF error_code = 0 THEN
            SELECT c.topic_id, c.partitions INTO tid, nparts FROM @extschema@.topic_catalog c WHERE c.name = o.topic;
            IF tid IS NULL OR o.partition IS NULL OR o.partition < 0 OR o.partition >= nparts THEN
                error_code := 3;
            ELSIF NOT @extschema@.has_topic_privilege(@extschema@._caller(), o.topic, 'consume') THEN
                error_code := 29;
            ELSIF octet_length(o.metadata) > 4096 THEN
                error_code := 12;
            ELSIF o.committed_offset IS NULL OR o.committed_offset < 0
                  OR o.committed_offset > @extschema@.high_watermark(o.topic, o.partition) THEN
                error_code := 1;
            ELSE
                INSERT INTO @extschema@.group_offsets AS x (topic_id, group_name, partition, next_offset, committed_at, metadata)
                VALUES (tid, g, o.partition, o.committed_offset, now(), o.metadata)
                ON CONFLICT ON CONSTRAINT group_offsets_pkey DO UPDATE
                   SET next_offset = excluded.next_offset, committed_at = excluded.committed_at,
                       metadata = excluded.metadata;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.__kafka_offset_commit(text, integer, text, text, @extschema@.kafka_offset[], boolean) IS
'internal: the body of eventlog.kafka_offset_commit (hold_group) and eventlog.kafka_txn_offset_commit, which run it as the extension owner';
REVOKE ALL ON FUNCTION @extschema@.__kafka_offset_commit(text, integer, text, text, @extschema@.kafka_offset[], boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@._kafka_offset_commit(group_name text, generation integer, member_id text,
                                                group_instance_id text, offsets @extschema@.kafka_offset[])
RETURNS TABLE (topic text, partition integer, error_code smallint)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT * FROM @extschema@.__kafka_offset_commit(group_name, generation, member_id,
                                                   group_instance_id, offsets, true)
$$;
COMMENT ON FUNCTION @extschema@._kafka_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) IS
'internal: the body of eventlog.kafka_offset_commit, run as the extension owner (see src/acl.c)';

CREATE OR REPLACE FUNCTION @extschema@._kafka_txn_offset_commit(group_name text, generation integer, member_id text,
                                                    group_instance_id text, offsets @extschema@.kafka_offset[])
RETURNS TABLE (topic text, partition integer, error_code smallint)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT * FROM @extschema@.__kafka_offset_commit(group_name, generation, member_id,
                                                   group_instance_id, offsets, false)
$$;
COMMENT ON FUNCTION @extschema@._kafka_txn_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) IS
'internal: the body of eventlog.kafka_txn_offset_commit, run as the extension owner (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._kafka_txn_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) FROM PUBLIC;

-- One function for the horizon of a topic's time settings (retention and
-- compaction each computed it with the same overflow handling).

/*
 * now() - age, the horizon of a time setting of a topic (retention,
 * segment_interval, the compaction lags), or -infinity (nothing is that
 * old) when that is before the range of timestamptz: the settings may be
 * as long as an interval can be ('100000 years' for "forever", as Kafka
 * users set Long.MAX_VALUE), which must not be an error that stops every
 * round of the topic.
 */
CREATE FUNCTION @extschema@._horizon(age interval)
RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pg_catalog.now() - age;
EXCEPTION WHEN datetime_field_overflow THEN
    RETURN '-infinity';
END
$$;
COMMENT ON FUNCTION @extschema@._horizon(interval) IS
'internal: now() - age, or -infinity when that is out of range (the horizon of a topic''s time setting)';
REVOKE ALL ON FUNCTION @extschema@._horizon(interval) FROM PUBLIC;

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
    retention_horizon timestamptz;
    roll_horizon timestamptz;
    max_lag_horizon timestamptz;
    saved_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    -- The caller's lock_timeout if shorter (0 is none).
    drop_lock_timeout text := CASE
        WHEN pg_catalog.current_setting('lock_timeout')::interval > interval '0'
         AND pg_catalog.current_setting('lock_timeout')::interval < interval '50 ms'
        THEN pg_catalog.current_setting('lock_timeout') ELSE '50ms' END;
BEGIN
    SELECT * INTO t FROM @extschema@.topic_catalog c WHERE c.topic_id = _maintain_topic.topic_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- One round per topic at a time (the worker and enforce_retention may
    -- meet): a round that finds another in progress leaves it the work.
    IF NOT @extschema@._try_lock_maintenance(t.topic_id) THEN
        RETURN;
    END IF;
    r.topic := t.name;
    retention_horizon := @extschema@._horizon(t.retention);
    roll_horizon := @extschema@._horizon(t.segment_interval);
    max_lag_horizon := @extschema@._horizon(t.max_compaction_lag);
    FOR p IN 0 .. t.partitions - 1 LOOP
        r.partition := p;
        -- Ordered with counter recovery (el_recover_next_offset): from the
        -- routing read until the base offset is recorded and committed.
        PERFORM @extschema@._lock_routing(t.topic_id, p);
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

        -- 2. Retention, oldest sealed segment first.  The partition's size
        --    only matters under retention_bytes.
        part_bytes := NULL;
        IF t.retention_bytes IS NOT NULL THEN
            SELECT coalesce(sum(pg_catalog.pg_total_relation_size(
                       pg_catalog.to_regclass(format('eventlog_segments.%I', s.table_name)))), 0)
              INTO part_bytes
              FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p;
        END IF;
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
            -- A topic that is only compacted keeps its segments (Kafka's
            -- cleanup.policy=compact): compaction thins them out instead.
            EXIT WHEN t.cleanup_policy = 'compact';
            SELECT st.newest INTO newest FROM @extschema@._segment_times(seg.table_name) st;
            EXIT WHEN NOT (
                (t.retention IS NOT NULL AND (newest IS NULL OR newest < retention_horizon))
                OR (t.retention_bytes IS NOT NULL AND part_bytes > t.retention_bytes));
            -- Never queue behind a reader or a writer: skip till next round.
            -- DROP ... CASCADE also drops, and so must lock, every object
            -- made to depend on the segment (a view, a column default or a
            -- constraint holding its regclass): whoever holds one of those
            -- is waited for at most drop_lock_timeout, never longer.
            BEGIN
                EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                               seg.table_name);
                seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
                PERFORM pg_catalog.set_config('lock_timeout', drop_lock_timeout, true);
                -- CASCADE: see _drop_topic.
                EXECUTE format('DROP TABLE eventlog_segments.%I CASCADE', seg.table_name);
                PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
            EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
                -- The sub-block's abort has restored lock_timeout.
                r.action := 'skipped (busy)';
                r.segment := seg.table_name;
                r.first_offset := seg.base_offset;
                r.next_offset := nxt;
                r.bytes := NULL;
                RETURN NEXT r;
                EXIT;
            END;
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
        SELECT st.oldest, st.newest INTO oldest, newest
          FROM @extschema@._segment_times(seg.table_name) st;
        CONTINUE WHEN oldest IS NULL;
        seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
        IF oldest < roll_horizon
           OR seg_bytes >= t.segment_bytes
           OR (t.retention IS NOT NULL AND t.cleanup_policy <> 'compact'
               AND newest < retention_horizon)
           -- The active segment is never compacted: max_compaction_lag
           -- bounds how long a record may stay there.
           OR (t.cleanup_policy <> 'delete' AND t.max_compaction_lag IS NOT NULL
               AND oldest < max_lag_horizon) THEN
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

CREATE OR REPLACE FUNCTION @extschema@._compact_partition(t @extschema@.topic_catalog, p integer,
                                              force boolean)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r @extschema@.maintenance_action;
    cc @extschema@.compaction_catalog;
    rt record;
    seg record;
    c record;
    stable bigint;
    newest timestamptz;
    oldest timestamptz;
    oldest_dirty timestamptz;
    segs name[] := '{}';
    bases bigint[] := '{}';
    nexts bigint[] := '{}';
    range_end bigint;
    seg_bytes bigint;
    dirty_bytes bigint := 0;
    total_bytes bigint := 0;
    ratio double precision;
    i integer;
    busy boolean := false;
    before_bytes bigint;
    after_bytes bigint;
    removed bigint := 0;
    reclaimed bigint := 0;
    tomb timestamptz;
    cleaned_to bigint;
    lag_horizon timestamptz;
    max_lag_horizon timestamptz;
    delete_horizon timestamptz;
    saved_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    drop_lock_timeout text := CASE
        WHEN pg_catalog.current_setting('lock_timeout')::interval > interval '0'
         AND pg_catalog.current_setting('lock_timeout')::interval < interval '50 ms'
        THEN pg_catalog.current_setting('lock_timeout') ELSE '50ms' END;
BEGIN
    r.topic := t.name;
    r.partition := p;
    INSERT INTO @extschema@.compaction_catalog (topic_id, partition)
    VALUES (t.topic_id, p) ON CONFLICT DO NOTHING;
    SELECT * INTO cc FROM @extschema@.compaction_catalog x
     WHERE x.topic_id = t.topic_id AND x.partition = p;
    SELECT * INTO rt FROM @extschema@._partition_routing(t.name, p);
    stable := @extschema@.last_stable_offset(t.name, p);
    lag_horizon := @extschema@._horizon(t.min_compaction_lag);
    max_lag_horizon := @extschema@._horizon(t.max_compaction_lag);
    delete_horizon := @extschema@._horizon(t.delete_retention);

    -- The cleanable segments: sealed, oldest first, up to the first one
    -- with an offset in flight or a record younger than min_compaction_lag.
    -- The active segment never is.
    FOR seg IN SELECT s.segment_no, s.base_offset, s.table_name,
                      lead(s.base_offset) OVER (ORDER BY s.segment_no) AS nxt
                 FROM @extschema@.segment_catalog s
                WHERE s.topic_id = t.topic_id AND s.partition = p
                ORDER BY s.segment_no
    LOOP
        EXIT WHEN seg.segment_no >= rt.active_segment OR seg.base_offset IS NULL
               OR seg.nxt IS NULL OR seg.nxt > stable;
        SELECT st.oldest, st.newest INTO oldest, newest
          FROM @extschema@._segment_times(seg.table_name) st;
        EXIT WHEN newest IS NOT NULL AND newest > lag_horizon;
        seg_bytes := pg_catalog.pg_total_relation_size(
            format('eventlog_segments.%I', seg.table_name)::regclass);
        total_bytes := total_bytes + seg_bytes;
        -- A pass that found its key map full stops inside a segment: the
        -- segment is dirty.
        IF seg.nxt > cc.cleaned_offset THEN
            dirty_bytes := dirty_bytes + seg_bytes;
            oldest_dirty := coalesce(oldest_dirty, oldest);
        END IF;
        segs := segs || seg.table_name;
        bases := bases || seg.base_offset;
        nexts := nexts || seg.nxt;
        range_end := seg.nxt;
    END LOOP;
    ratio := CASE WHEN total_bytes > 0 THEN dirty_bytes::double precision / total_bytes END;
    UPDATE @extschema@.compaction_catalog x SET dirty_ratio = ratio
     WHERE x.topic_id = t.topic_id AND x.partition = p
       AND x.dirty_ratio IS DISTINCT FROM ratio;
    IF range_end IS NULL THEN
        RETURN;
    END IF;
    -- Due only when a condition holds: with no tombstone kept,
    -- next_tombstone_expiry is NULL, and NOT (false OR NULL) is NULL, which
    -- IF takes as false (the round ran, reading every sealed segment, each
    -- time the worker came by).
    IF NOT coalesce(force
            OR (range_end > cc.cleaned_offset AND ratio >= 0.5)
            OR (t.max_compaction_lag IS NOT NULL AND oldest_dirty IS NOT NULL
                AND oldest_dirty < max_lag_horizon)
            OR cc.next_tombstone_expiry <= pg_catalog.now(), false) THEN
        RETURN;
    END IF;

    -- A segment someone holds (a reader's open transaction) could not be
    -- swapped: the range ends before it, rather than rewriting what would
    -- be thrown away.  The probe's lock goes with its sub-block.  Only when
    -- the round is due: each probe of an ACCESS EXCLUSIVE lock takes an xid
    -- and writes WAL (for standbys), and the worker checks every compacted
    -- partition each round.
    FOR i IN 1 .. pg_catalog.array_length(segs, 1) LOOP
        BEGIN
            EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                           segs[i]);
            RAISE EXCEPTION USING ERRCODE = 'EL017';
        EXCEPTION
            WHEN lock_not_available THEN
                r.action := 'skipped (busy)';
                r.segment := segs[i];
                r.first_offset := bases[i];
                r.next_offset := nexts[i];
                r.bytes := NULL;
                RETURN NEXT r;
                segs := segs[1:i - 1];
                bases := bases[1:i - 1];
                nexts := nexts[1:i - 1];
                range_end := nexts[i - 1];
                EXIT;
            WHEN SQLSTATE 'EL017' THEN
                NULL;
        END;
    END LOOP;
    IF range_end IS NULL THEN
        RETURN;
    END IF;

    -- Swap oldest first, and stop at the first segment someone holds: a
    -- later segment may drop an expired tombstone only if every record it
    -- deleted, in earlier segments, is gone too.
    i := 0;
    FOR c IN SELECT * FROM @extschema@._compact_segments(t.topic_id, p, segs, bases, nexts,
                                                         cc.cleaned_offset, delete_horizon)
    LOOP
        i := i + 1;
        cleaned_to := c.cleaned_to;
        IF c.oldest_tombstone IS NOT NULL THEN
            tomb := least(tomb, c.oldest_tombstone);
        END IF;
        CONTINUE WHEN c.new_table IS NULL;
        IF busy THEN
            EXECUTE format('DROP TABLE eventlog_segments.%I', c.new_table);
            CONTINUE;
        END IF;
        -- The new table becomes a segment as _create_segment makes one.
        EXECUTE format('ALTER TABLE eventlog_segments.%I ADD CONSTRAINT %I PRIMARY KEY (offset_id)',
                       c.new_table, c.new_table || '_pkey');
        EXECUTE format(
            'CREATE TRIGGER segment_guard BEFORE INSERT OR UPDATE OR DELETE'
            ' ON eventlog_segments.%I FOR EACH ROW'
            ' EXECUTE FUNCTION @extschema@._segment_guard()', c.new_table);
        EXECUTE format(
            'CREATE TRIGGER segment_guard_truncate BEFORE TRUNCATE'
            ' ON eventlog_segments.%I FOR EACH STATEMENT'
            ' EXECUTE FUNCTION @extschema@._segment_guard()', c.new_table);
        EXECUTE format(
            'ALTER TABLE eventlog_segments.%I ENABLE ALWAYS TRIGGER segment_guard,'
            ' ENABLE ALWAYS TRIGGER segment_guard_truncate', c.new_table);
        EXECUTE format('COMMENT ON TABLE eventlog_segments.%I IS %L', c.new_table,
            pg_catalog.obj_description(format('eventlog_segments.%I', c.segment)::regclass, 'pg_class'));
        BEGIN
            -- Never queue behind a reader: skip till next round (as
            -- retention does, and DROP ... CASCADE bounded the same way).
            EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                           c.segment);
            before_bytes := @extschema@._segment_data_bytes(c.segment);
            PERFORM pg_catalog.set_config('lock_timeout', drop_lock_timeout, true);
            EXECUTE format('DROP TABLE eventlog_segments.%I CASCADE', c.segment);
            PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            busy := true;
            EXECUTE format('DROP TABLE eventlog_segments.%I', c.new_table);
            r.action := 'skipped (busy)';
            r.segment := c.segment;
            r.first_offset := bases[i];
            r.next_offset := nexts[i];
            r.bytes := NULL;
            RETURN NEXT r;
            CONTINUE;
        END;
        EXECUTE format('ALTER TABLE eventlog_segments.%I RENAME TO %I', c.new_table, c.segment);
        EXECUTE format('ALTER INDEX eventlog_segments.%I RENAME TO %I',
                       c.new_table || '_pkey', c.segment || '_pkey');
        -- Tell every session's topic cache (the segment's OID changed).
        UPDATE @extschema@.segment_catalog s SET table_name = s.table_name
         WHERE s.topic_id = t.topic_id AND s.partition = p AND s.table_name = c.segment;
        after_bytes := @extschema@._segment_data_bytes(c.segment);
        removed := removed + c.records_before - c.records_after;
        -- Never negative: a rewrite that frees too little to empty a page
        -- reclaims nothing.
        reclaimed := reclaimed + greatest(before_bytes - after_bytes, 0);
        r.action := 'compacted';
        r.segment := c.segment;
        r.first_offset := bases[i];
        r.next_offset := nexts[i];
        r.bytes := greatest(before_bytes - after_bytes, 0);
        RETURN NEXT r;
    END LOOP;

    IF cleaned_to = cc.cleaned_offset THEN
        RAISE WARNING 'compaction of partition % of topic "%" made no progress', p, t.name
            USING DETAIL = 'The key map of eventlog.compaction_memory was full before it held the first dirty record''s key.',
                  HINT = 'Raise eventlog.compaction_memory.';
    END IF;
    BEGIN
        tomb := tomb + t.delete_retention;
    EXCEPTION WHEN datetime_field_overflow THEN
        tomb := 'infinity';
    END;
    UPDATE @extschema@.compaction_catalog x
       -- A pass whose key map was full stopped at cleaned_to: the rest
       -- is for the next rounds (the dirty ratio stays as measured).
       -- (never back: what was clean stays so, should min_compaction_lag
       -- have grown).
       SET cleaned_offset = CASE WHEN busy THEN x.cleaned_offset
                                 ELSE greatest(x.cleaned_offset, coalesce(cleaned_to, range_end)) END,
           dirty_ratio = CASE WHEN busy OR cleaned_to IS NOT NULL THEN x.dirty_ratio
                              ELSE 0 END,
           last_compaction = pg_catalog.now(),
           rounds = x.rounds + 1,
           records_removed = x.records_removed + removed,
           bytes_reclaimed = x.bytes_reclaimed + reclaimed,
           -- After a skipped segment, retry next round.
           next_tombstone_expiry = CASE WHEN busy THEN pg_catalog.now()
                                        ELSE tomb END
     WHERE x.topic_id = t.topic_id AND x.partition = p;
END
$$;

-- Issue 19, the step's hot path: a tumbling or hopping window that the
-- step's own watermark closes is closed in the step, not written into the
-- window rows first; the sink table is scanned once per statement.
CREATE OR REPLACE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    rv text := '';
    comb text := '';
    sets text := '';
    fmerge text := '';
    head text;
    body text;
    late_out text;
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        xs := xs || format(', CASE WHEN t_.in_ THEN (%s)::numeric END AS x_%s',
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
        -- sessions: a record as a partial (value, count), and partials combined
        rv := rv || format(', %s AS v_%s, %s AS n_%s',
                           CASE WHEN f = 'count' THEN 'NULL::numeric' ELSE format('e.x_%s', i) END, i,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN '1::bigint'
                                ELSE format('CASE WHEN e.x_%s IS NULL THEN 0 ELSE 1 END::bigint', i) END, i);
        comb := comb || format(', %s, sum(n_%s)::bigint',
                               CASE f WHEN 'min' THEN format('min(v_%s)', i)
                                      WHEN 'max' THEN format('max(v_%s)', i)
                                      WHEN 'count' THEN 'NULL::numeric'
                                      ELSE format('sum(v_%s)', i) END, i);
        sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
        -- a window closed in the step: its row (dc, if any) and the batch's
        -- partial (cl, if any) combined, as "merge" combines them
        fmerge := fmerge || format(', %2$s, coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)', i,
                                   CASE f WHEN 'min' THEN format('least(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'max' THEN format('greatest(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'count' THEN 'NULL::numeric'
                                          ELSE format('CASE WHEN dc.v_%1$s IS NULL THEN cl.v_%1$s WHEN cl.v_%1$s IS NULL THEN dc.v_%1$s ELSE dc.v_%1$s + cl.v_%1$s END', i) END);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  A session window's record is late when the session of
     * that record alone would be closed (its time + gap + lateness before
     * the watermark), so that lateness does not depend on how the records
     * of other partitions were cut into steps.
     */
    head := format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
b AS (
    SELECT record.partition AS p_, record.offset_id AS o_, t_.ts_, t_.in_,
           CASE WHEN t_.in_ THEN %4$s END AS gk_ %5$s %8$s
      FROM %2$s AS record
           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%6$s) IS TRUE END AS in_
                                 FROM (SELECT %1$s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, ct.c_) AS lim_,
           (%7$s) AS late_
      FROM (SELECT b.*, coalesce(greatest(prev.m_, max(b.ts_) OVER (PARTITION BY b.p_ ORDER BY b.o_
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
                                 '-infinity') - $7 AS wm_
              FROM b LEFT JOIN prev ON prev.p_ = b.p_) AS w_
           CROSS JOIN ct),$f$,
        ts, batch, progress, gk, xs, filter,
        CASE WHEN p.window_type = 'session'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, ct.c_)'
             ELSE 'date_bin($10, w_.ts_, ''1970-01-01 00:00:00+00'') + $8 + $9 <= greatest(w_.wm_, ct.c_)' END,
        CASE WHEN p.late = 'topic'
             THEN ', record.key AS rk_, record.value AS rv_, record.headers AS rh_, record.event_time AS ret_'
             ELSE '' END);

    -- Late records to the late-records topic, in offset order.
    late_out := CASE WHEN p.late = 'topic'
        THEN 'lt AS MATERIALIZED (SELECT count(@extschema@.produce($13, x.rk_, x.rv_, x.rh_, NULL, x.ret_)) AS n '
             '  FROM (SELECT e.* FROM e WHERE e.in_ AND e.late_ ORDER BY e.p_, e.o_) AS x)'
        ELSE 'lt AS (SELECT 0::bigint AS n)' END;

    IF p.window_type = 'session' THEN
        /*
         * Sessions: the records that count ("r", each a session of one
         * record), and the sessions in state that one of them reaches
         * (within gap of its start or end, as Kafka Streams' findSessions)
         * are laid on one line per group key and merged where they come
         * within gap of each other (gaps and islands: a new session starts
         * where a start is more than gap after every end before it).  The
         * merged sessions replace the ones they absorbed: a merged session
         * keeps the start of one of them (upserted) or deletes it.  Their
         * rows in the sink go too ("gone": the absorbed sessions that were
         * written, in full or as changes).
         */
        body := format($f$
r AS (SELECT e.gk_, e.ts_ AS s_, e.ts_ AS e_ %1$s FROM e WHERE e.in_ AND NOT e.late_),
o AS MATERIALIZED (SELECT w.* FROM %2$s AS w
                    WHERE EXISTS (SELECT FROM r WHERE r.gk_ = w.group_key
                                     AND r.s_ >= w.window_start - $8 AND r.s_ <= w.window_end + $8)),
iv AS (SELECT r.* FROM r UNION ALL SELECT o.group_key, o.window_start, o.window_end %3$s FROM o),
isl AS (SELECT y.*, count(*) FILTER (WHERE y.mx_ IS NULL OR y.s_ > y.mx_ + $8)
                        OVER (PARTITION BY y.gk_ ORDER BY y.s_, y.e_ ROWS UNBOUNDED PRECEDING) AS i_
          FROM (SELECT iv.*, max(iv.e_) OVER (PARTITION BY iv.gk_ ORDER BY iv.s_, iv.e_
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx_
                  FROM iv) AS y),
agg AS (SELECT min(s_) AS ws_, max(e_) AS we_, gk_ %4$s FROM isl GROUP BY gk_, i_),
gone AS (SELECT o.* FROM o WHERE NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key
                                                AND agg.ws_ = o.window_start AND agg.we_ = o.window_end)),
d AS (DELETE FROM %2$s AS w USING o
       WHERE w.window_start = o.window_start AND w.group_key = o.group_key
         AND NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key AND agg.ws_ = o.window_start)),
u AS (INSERT INTO %2$s AS t (window_start, window_end, group_key %3$s, closed)
      SELECT agg.*, agg.we_ + $8 + $12 < (SELECT ct.c_ FROM ct) FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %5$s, closed = excluded.closed
      RETURNING t.*),
%6$s,$f$,
            rv, windows, cols, comb, sets,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', '($11 OR gone.closed)'));
    ELSE
        /*
         * Tumbling and hopping windows: the batch's partials combine with
         * the window rows.  A window is written to the sink as it changes
         * (emit changes), or when it closes, or, closed already, when a late
         * record updates it (late => 'update', within the retention).
         */
        body := format($f$
a AS (%1$s),
agg (window_start, window_end, group_key %4$s, closed) AS (
    SELECT ws_, ws_ + $8, gk_ %2$s, ws_ + $8 + $12 <= (SELECT ct.c_ FROM ct) FROM a GROUP BY ws_, gk_),$f$,
            CASE WHEN p.size = p.advance
                 THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
                 ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                      'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                      'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END,
            partials, windows, cols);
        IF p.time_mode = 'event' AND coalesce(p.retention, '0') = '0'
           AND NOT (p.late = 'topic' AND p.late_topic IS NOT DISTINCT FROM p.sink_topic) THEN
            /*
             * Close in the step the windows that the step's own watermark
             * closes, instead of writing them into the window rows for the
             * closing statement to delete (most windows of a large step):
             * "wl" is a lower bound of the watermark run_processor computes
             * after this statement (the least over all partitions, active
             * or idle, of the largest event time seen, this batch's
             * included, minus max_out_of_orderness), NULL when it closes
             * nothing new.  The batch's partials of the windows it closes
             * ("cl") combine with their rows, deleted ("dc"), and are
             * written as the closing statement would have written them
             * (emit final: every window it closes; emit changes: those the
             * batch changed); the other partials are upserted ("u0").  The
             * closing statement then closes what the watermark passes
             * beyond "wl" (usually nothing); windows close in the same
             * order, in the same transaction.  Without a retention a
             * closed window is deleted as it closes, so nothing else
             * changes.
             */
            body := body || format($f$
bm AS (SELECT e.p_, max(e.ts_) AS m_ FROM e GROUP BY e.p_),
wl AS (SELECT CASE WHEN x.w_ > (SELECT ct.c_ FROM ct) THEN x.w_ END AS w_
         FROM (SELECT min(coalesce(greatest(prev.m_, bm.m_), '-infinity')) - $7 AS w_
                 FROM pg_catalog.generate_series(0, $4 - 1) AS g(p_)
                 LEFT JOIN prev ON prev.p_ = g.p_ LEFT JOIN bm ON bm.p_ = g.p_) AS x),
cl AS (SELECT agg.* FROM agg, wl WHERE agg.window_end + $12 <= wl.w_),
dc AS (DELETE FROM %1$s AS w USING wl
        WHERE w.window_end + $12 <= wl.w_ AND EXISTS (SELECT FROM wl WHERE wl.w_ IS NOT NULL) RETURNING w.*),
u0 AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
       SELECT agg.* FROM agg, wl WHERE wl.w_ IS NULL OR agg.window_end + $12 > wl.w_
       ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                   closed = t.closed OR excluded.closed
       RETURNING t.*),
u AS (SELECT * FROM u0
      UNION ALL
      SELECT coalesce(cl.window_start, dc.window_start), coalesce(cl.window_end, dc.window_end),
             coalesce(cl.group_key, dc.group_key) %4$s, true
        FROM cl FULL JOIN dc ON dc.window_start = cl.window_start AND dc.group_key = cl.group_key
       WHERE cl.window_start IS NOT NULL OR NOT ($11 OR dc.closed)),
%5$s,$f$,
                windows, cols, merge, fmerge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        ELSE
            body := body || format($f$
u AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%4$s,$f$,
                windows, cols, merge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        END IF;
    END IF;

    RETURN head || body || format($f$
%2$s,
pu AS (INSERT INTO %1$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT e.p_, max(e.ts_), pg_catalog.now(), count(*), count(*) FILTER (WHERE e.in_ AND e.late_),
              count(*) FILTER (WHERE e.ts_ IS NULL)
         FROM e GROUP BY e.p_
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT (SELECT count(*) FROM e) FROM so, lt$f$, progress, late_out);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_step_sql(@extschema@.processor_catalog, text) IS
'internal: the statement of one step of a processor over a batch of records';

CREATE OR REPLACE FUNCTION @extschema@._processor_emit_sql(p @extschema@.processor_catalog, flag text, gone_flag text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    gcols text := '';
    gmatch text := '';
    gmatch_gone text := '';
    outs text := '';
    sets text := '';
    jvals text := '';
    k text;
    o text;
    i integer;
    ctes text := '';
BEGIN
    FOR i IN 1 .. ng LOOP
        IF p.sink_table IS NOT NULL THEN
            gcols := gcols || format(', (u.group_key ->> %s)::%s', i - 1, p.sink_types[2 + i]);
            gmatch := gmatch || format(' AND s.%I IS NOT DISTINCT FROM (u.group_key ->> %s)::%s',
                                       p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
            gmatch_gone := gmatch_gone || format(' AND s.%I IS NOT DISTINCT FROM (gone.group_key ->> %s)::%s',
                                                 p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
        END IF;
    END LOOP;
    FOR i IN 1 .. na LOOP
        o := CASE p.agg_funcs[i] WHEN 'count' THEN format('u.n_%s', i)
                                 WHEN 'avg' THEN format('u.v_%1$s / NULLIF(u.n_%1$s, 0)', i)
                                 ELSE format('u.v_%s', i) END;
        outs := outs || ', ' || o;
        IF p.sink_table IS NOT NULL THEN
            sets := sets || format('%s%I = %s', CASE WHEN i > 1 THEN ', ' ELSE '' END,
                                   p.sink_columns[2 + ng + i], o);
        END IF;
        jvals := jvals || format(' || pg_catalog.jsonb_build_object(%L, %s)', p.agg_names[i], o);
    END LOOP;
    IF p.sink_table IS NOT NULL THEN
        IF gone_flag IS NOT NULL THEN
            ctes := format($f$sd AS (DELETE FROM %1$s AS s USING gone
        WHERE %2$s AND s.%3$I = gone.window_start AND s.%4$I = gone.window_end %5$s),
$f$, p.sink_table, gone_flag, p.sink_columns[1], p.sink_columns[2], gmatch_gone);
        END IF;
        /*
         * "sx": the windows written that have rows in the sink, found by
         * one scan of the sink (with the windows hashed, a small set, where
         * a NOT EXISTS would hash the whole sink at every step), and none
         * when no window is written (the EXISTS is evaluated once, first).
         */
        ctes := ctes || format($f$sx AS (SELECT u.window_start AS s_, u.window_end AS e_, u.group_key AS g_
        FROM u JOIN %1$s AS s ON s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s
        WHERE %3$s AND EXISTS (SELECT FROM u WHERE %3$s)),
su AS (UPDATE %1$s AS s SET %2$s FROM u
        WHERE %3$s AND EXISTS (SELECT FROM sx) AND s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s
          AND EXISTS (SELECT FROM sx WHERE sx.s_ = u.window_start AND sx.g_ = u.group_key AND sx.e_ = u.window_end)),
si AS (INSERT INTO %1$s SELECT u.window_start, u.window_end %7$s %8$s FROM u
        WHERE %3$s AND NOT EXISTS (SELECT FROM sx WHERE sx.s_ = u.window_start AND sx.g_ = u.group_key AND sx.e_ = u.window_end)),
$f$, p.sink_table, sets, flag, p.sink_columns[1], p.sink_columns[2], gmatch, gcols, outs);
    END IF;
    IF p.sink_topic IS NULL THEN
        RETURN ctes || 'so AS (SELECT 0::bigint AS n)';
    END IF;
    -- The record's key: the group value (one group_by expression) or the
    -- JSON array of them; its value: the window and the aggregates by name.
    k := CASE ng WHEN 0 THEN 'NULL::text' WHEN 1 THEN '%1$s.group_key ->> 0' ELSE '%1$s.group_key::text' END;
    RETURN ctes || format($f$so AS MATERIALIZED (
    SELECT count(@extschema@.produce(%1$L, x.k_, x.v_, NULL, NULL, x.t_)) AS n
      FROM (%2$s
            SELECT 1 AS o_, u.window_start AS s_, %3$s AS k_,
                   pg_catalog.jsonb_build_object('window_start', u.window_start, 'window_end', u.window_end,
                                                 'group_key', u.group_key) %4$s AS v_,
                   u.window_end AS t_
              FROM u WHERE %5$s
             ORDER BY 1, 2, 3) AS x)$f$,
        p.sink_topic,
        CASE WHEN gone_flag IS NULL THEN ''
             ELSE format($g$SELECT 0 AS o_, gone.window_start AS s_, %s AS k_,
                   pg_catalog.jsonb_build_object('window_start', gone.window_start, 'window_end', gone.window_end,
                                                 'group_key', gone.group_key, 'deleted', true) AS v_,
                   gone.window_end AS t_
              FROM gone WHERE %s
            UNION ALL
            $g$, format(k, 'gone'), gone_flag) END,
        format(k, 'u'), jvals, flag);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_emit_sql(@extschema@.processor_catalog, text, text) IS
'internal: the CTEs writing window rows to a processor''s sink table and sink topic';

/* -- issue 19: sliding windows, aggregates with a combine function, processor_windows (begin) -- */
/*
 * Sliding windows (docs/streams.md), aggregates with a combine function,
 * eventlog.processor_windows: sql/install/streams.sql's changed functions,
 * and sql/install/streams_windows.sql verbatim.
 */
ALTER TABLE @extschema@.processor_catalog DROP CONSTRAINT processor_catalog_window_type_check;
ALTER TABLE @extschema@.processor_catalog ADD CONSTRAINT processor_catalog_window_type_check
    CHECK (window_type OPERATOR(pg_catalog.=) ANY (ARRAY['tumbling', 'hopping', 'session', 'sliding']));

CREATE OR REPLACE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    rv text := '';
    comb text := '';
    sets text := '';
    head text;
    body text;
    late_out text;
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    g text[];
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        -- any other aggregate with a combine function (streams_windows.sql)
        IF strpos(f, '(') > 0 THEN
            g := @extschema@._processor_agg_sql(p, i);
            xs := xs || g[1]; partials := partials || g[2]; cols := cols || format(', v_%s, n_%s', i, i);
            merge := merge || g[3]; rv := rv || g[4]; comb := comb || g[5];
            sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
            CONTINUE;
        END IF;
        xs := xs || format(', CASE WHEN t_.in_ THEN (%s)::numeric END AS x_%s',
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
        -- sessions: a record as a partial (value, count), and partials combined
        rv := rv || format(', %s AS v_%s, %s AS n_%s',
                           CASE WHEN f = 'count' THEN 'NULL::numeric' ELSE format('e.x_%s', i) END, i,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN '1::bigint'
                                ELSE format('CASE WHEN e.x_%s IS NULL THEN 0 ELSE 1 END::bigint', i) END, i);
        comb := comb || format(', %s, sum(n_%s)::bigint',
                               CASE f WHEN 'min' THEN format('min(v_%s)', i)
                                      WHEN 'max' THEN format('max(v_%s)', i)
                                      WHEN 'count' THEN 'NULL::numeric'
                                      ELSE format('sum(v_%s)', i) END, i);
        sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  A session window's record is late when the session of
     * that record alone would be closed (its time + gap + lateness before
     * the watermark), so that lateness does not depend on how the records
     * of other partitions were cut into steps.
     */
    head := format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
b AS (
    SELECT record.partition AS p_, record.offset_id AS o_, t_.ts_, t_.in_,
           CASE WHEN t_.in_ THEN %4$s END AS gk_ %5$s %8$s
      FROM %2$s AS record
           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%6$s) IS TRUE END AS in_
                                 FROM (SELECT %1$s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, ct.c_) AS lim_,
           (%7$s) AS late_
      FROM (SELECT b.*, coalesce(greatest(prev.m_, max(b.ts_) OVER (PARTITION BY b.p_ ORDER BY b.o_
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
                                 '-infinity') - $7 AS wm_
              FROM b LEFT JOIN prev ON prev.p_ = b.p_) AS w_
           CROSS JOIN ct),$f$,
        ts, batch, progress, gk, xs, filter,
        CASE WHEN p.window_type = 'session'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, ct.c_)'
             WHEN p.window_type = 'sliding'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, ct.c_)'
             ELSE 'date_bin($10, w_.ts_, ''1970-01-01 00:00:00+00'') + $8 + $9 <= greatest(w_.wm_, ct.c_)' END,
        CASE WHEN p.late = 'topic'
             THEN ', record.key AS rk_, record.value AS rv_, record.headers AS rh_, record.event_time AS ret_'
             ELSE '' END);

    -- Late records to the late-records topic, in offset order.
    late_out := CASE WHEN p.late = 'topic'
        THEN 'lt AS MATERIALIZED (SELECT count(@extschema@.produce($13, x.rk_, x.rv_, x.rh_, NULL, x.ret_)) AS n '
             '  FROM (SELECT e.* FROM e WHERE e.in_ AND e.late_ ORDER BY e.p_, e.o_) AS x)'
        ELSE 'lt AS (SELECT 0::bigint AS n)' END;

    IF p.window_type = 'session' THEN
        /*
         * Sessions: the records that count ("r", each a session of one
         * record), and the sessions in state that one of them reaches
         * (within gap of its start or end, as Kafka Streams' findSessions)
         * are laid on one line per group key and merged where they come
         * within gap of each other (gaps and islands: a new session starts
         * where a start is more than gap after every end before it).  The
         * merged sessions replace the ones they absorbed: a merged session
         * keeps the start of one of them (upserted) or deletes it.  Their
         * rows in the sink go too ("gone": the absorbed sessions that were
         * written, in full or as changes).
         */
        body := format($f$
r AS (SELECT e.gk_, e.ts_ AS s_, e.ts_ AS e_ %1$s FROM e WHERE e.in_ AND NOT e.late_),
o AS MATERIALIZED (SELECT w.* FROM %2$s AS w
                    WHERE EXISTS (SELECT FROM r WHERE r.gk_ = w.group_key
                                     AND r.s_ >= w.window_start - $8 AND r.s_ <= w.window_end + $8)),
iv AS (SELECT r.* FROM r UNION ALL SELECT o.group_key, o.window_start, o.window_end %3$s FROM o),
isl AS (SELECT y.*, count(*) FILTER (WHERE y.mx_ IS NULL OR y.s_ > y.mx_ + $8)
                        OVER (PARTITION BY y.gk_ ORDER BY y.s_, y.e_ ROWS UNBOUNDED PRECEDING) AS i_
          FROM (SELECT iv.*, max(iv.e_) OVER (PARTITION BY iv.gk_ ORDER BY iv.s_, iv.e_
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx_
                  FROM iv) AS y),
agg AS (SELECT min(s_) AS ws_, max(e_) AS we_, gk_ %4$s FROM isl GROUP BY gk_, i_),
gone AS (SELECT o.* FROM o WHERE NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key
                                                AND agg.ws_ = o.window_start AND agg.we_ = o.window_end)),
d AS (DELETE FROM %2$s AS w USING o
       WHERE w.window_start = o.window_start AND w.group_key = o.group_key
         AND NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key AND agg.ws_ = o.window_start)),
u AS (INSERT INTO %2$s AS t (window_start, window_end, group_key %3$s, closed)
      SELECT agg.*, agg.we_ + $8 + $12 < (SELECT ct.c_ FROM ct) FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %5$s, closed = excluded.closed
      RETURNING t.*),
%6$s,$f$,
            rv, windows, cols, comb, sets,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', '($11 OR gone.closed)'));
    ELSIF p.window_type = 'sliding' THEN
        body := @extschema@._processor_sliding_sql(p, partials, cols, sets);
    ELSE
        /*
         * Tumbling and hopping windows: the batch's partials combine with
         * the window rows.  A window is written to the sink as it changes
         * (emit changes), or when it closes, or, closed already, when a late
         * record updates it (late => 'update', within the retention).
         */
        body := format($f$
a AS (%1$s),
agg AS (SELECT ws_, ws_ + $8, gk_ %2$s, ws_ + $8 + $12 <= (SELECT ct.c_ FROM ct) FROM a GROUP BY ws_, gk_),
u AS (INSERT INTO %3$s AS t (window_start, window_end, group_key %4$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %5$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%6$s,$f$,
            CASE WHEN p.size = p.advance
                 THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
                 ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                      'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                      'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END,
            partials, windows, cols, merge,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
    END IF;

    RETURN head || body || format($f$
%2$s,
pu AS (INSERT INTO %1$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT e.p_, max(e.ts_), pg_catalog.now(), count(*), count(*) FILTER (WHERE e.in_ AND e.late_),
              count(*) FILTER (WHERE e.ts_ IS NULL)
         FROM e GROUP BY e.p_
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT (SELECT count(*) FROM e) FROM so, lt$f$, progress, late_out);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_step_sql(@extschema@.processor_catalog, text) IS
'internal: the statement of one step of a processor over a batch of records';

CREATE OR REPLACE FUNCTION @extschema@._processor_emit_sql(p @extschema@.processor_catalog, flag text, gone_flag text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    gcols text := '';
    gmatch text := '';
    gmatch_gone text := '';
    outs text := '';
    sets text := '';
    jvals text := '';
    k text;
    o text;
    i integer;
    ctes text := '';
BEGIN
    FOR i IN 1 .. ng LOOP
        IF p.sink_table IS NOT NULL THEN
            gcols := gcols || format(', (u.group_key ->> %s)::%s', i - 1, p.sink_types[2 + i]);
            gmatch := gmatch || format(' AND s.%I IS NOT DISTINCT FROM (u.group_key ->> %s)::%s',
                                       p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
            gmatch_gone := gmatch_gone || format(' AND s.%I IS NOT DISTINCT FROM (gone.group_key ->> %s)::%s',
                                                 p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
        END IF;
    END LOOP;
    FOR i IN 1 .. na LOOP
        o := @extschema@._processor_agg_out(p, i, 'u');
        outs := outs || ', ' || o;
        IF p.sink_table IS NOT NULL THEN
            sets := sets || format('%s%I = %s', CASE WHEN i > 1 THEN ', ' ELSE '' END,
                                   p.sink_columns[2 + ng + i], o);
        END IF;
        jvals := jvals || format(' || pg_catalog.jsonb_build_object(%L, %s)', p.agg_names[i], o);
    END LOOP;
    IF p.sink_table IS NOT NULL THEN
        IF gone_flag IS NOT NULL THEN
            ctes := format($f$sd AS (DELETE FROM %1$s AS s USING gone
        WHERE %2$s AND s.%3$I = gone.window_start AND s.%4$I = gone.window_end %5$s),
$f$, p.sink_table, gone_flag, p.sink_columns[1], p.sink_columns[2], gmatch_gone);
        END IF;
        ctes := ctes || format($f$su AS (UPDATE %1$s AS s SET %2$s FROM u
        WHERE %3$s AND s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s),
si AS (INSERT INTO %1$s SELECT u.window_start, u.window_end %7$s %8$s FROM u
        WHERE %3$s AND NOT EXISTS (SELECT FROM %1$s AS s
                                    WHERE s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s)),
$f$, p.sink_table, sets, flag, p.sink_columns[1], p.sink_columns[2], gmatch, gcols, outs);
    END IF;
    IF p.sink_topic IS NULL THEN
        RETURN ctes || 'so AS (SELECT 0::bigint AS n)';
    END IF;
    -- The record's key: the group value (one group_by expression) or the
    -- JSON array of them; its value: the window and the aggregates by name.
    k := CASE ng WHEN 0 THEN 'NULL::text' WHEN 1 THEN '%1$s.group_key ->> 0' ELSE '%1$s.group_key::text' END;
    RETURN ctes || format($f$so AS MATERIALIZED (
    SELECT count(@extschema@.produce(%1$L, x.k_, x.v_, NULL, NULL, x.t_)) AS n
      FROM (%2$s
            SELECT 1 AS o_, u.window_start AS s_, %3$s AS k_,
                   pg_catalog.jsonb_build_object('window_start', u.window_start, 'window_end', u.window_end,
                                                 'group_key', u.group_key) %4$s AS v_,
                   u.window_end AS t_
              FROM u WHERE %5$s
             ORDER BY 1, 2, 3) AS x)$f$,
        p.sink_topic,
        CASE WHEN gone_flag IS NULL THEN ''
             ELSE format($g$SELECT 0 AS o_, gone.window_start AS s_, %s AS k_,
                   pg_catalog.jsonb_build_object('window_start', gone.window_start, 'window_end', gone.window_end,
                                                 'group_key', gone.group_key, 'deleted', true) AS v_,
                   gone.window_end AS t_
              FROM gone WHERE %s
            UNION ALL
            $g$, format(k, 'gone'), gone_flag) END,
        format(k, 'u'), jvals, flag);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_emit_sql(@extschema@.processor_catalog, text, text) IS
'internal: the CTEs writing window rows to a processor''s sink table and sink topic';

CREATE OR REPLACE FUNCTION @extschema@._processor_close_sql(p @extschema@.processor_catalog)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    windows text := format('@extschema@.%I', 'processor_' || p.processor_id || '_windows');
    closes text := CASE WHEN p.window_type = 'session' THEN 'window_end + $5 + $2 < $1'
                        WHEN p.window_type = 'sliding' THEN 'window_end + $2 < $1'
                        ELSE 'window_end + $2 <= $1' END;
    -- sliding windows: the records no window that may still change holds
    rx text := CASE WHEN p.window_type = 'sliding'
                    THEN format('rx AS (DELETE FROM @extschema@.%I WHERE ts + %L::interval < $1), ',
                                'processor_' || p.processor_id || '_records',
                                p.size + p.allowed_lateness + CASE WHEN p.late = 'update' THEN p.retention ELSE '0' END)
                    ELSE '' END;
BEGIN
    IF p.window_type <> 'session' AND coalesce(p.retention, '0') = '0' THEN
        RETURN format('WITH %s u AS (DELETE FROM %s WHERE %s RETURNING *), %s SELECT count(*) FROM u, so',
                      rx, windows, closes, @extschema@._processor_emit_sql(p, '($3 AND NOT u.closed)', NULL));
    END IF;
    RETURN format('WITH %5$s u AS (UPDATE %1$s SET closed = true WHERE NOT closed AND %2$s RETURNING *), %3$s, '
                  'x AS (DELETE FROM %1$s WHERE closed AND %4$s) SELECT count(*) FROM u, so',
                  windows, closes, @extschema@._processor_emit_sql(p, '$3', NULL),
                  CASE WHEN p.window_type = 'session' THEN 'window_end + $5 + $2 + $4 < $1'
                       WHEN p.window_type = 'sliding' THEN 'window_end + $2 + $4 < $1'
                       ELSE 'window_end + $2 + $4 <= $1' END, rx);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_close_sql(@extschema@.processor_catalog) IS
'internal: the statement closing the windows a watermark passed (written to the sink when emit is final) and removing the closed windows kept past their retention';

CREATE OR REPLACE FUNCTION @extschema@.__register_processor(spec jsonb)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    caller regrole := @extschema@._caller();
    n integer;
    progress text;
BEGIN
    IF spec IS NULL THEN
        RAISE EXCEPTION 'processor specification must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    p := jsonb_populate_record(NULL::@extschema@.processor_catalog, spec);
    IF p.name IS NULL OR p.name !~ '^[A-Za-z0-9._-]{1,100}$' THEN
        RAISE EXCEPTION 'invalid processor name "%"', left(p.name, 110)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A processor name is 1 to 100 letters, digits, ".", "_" or "-".';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.processor_catalog c WHERE c.name = p.name) THEN
        RAISE EXCEPTION 'processor "%" already exists', p.name USING ERRCODE = 'duplicate_object';
    END IF;
    p.source_topic_id := @extschema@._authorize(p.source_topic, 'consume');
    IF p.sink_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.sink_topic, 'produce');
    END IF;
    IF p.late_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.late_topic, 'produce');
    END IF;
    p.owner := caller;
    p.group_name := 'processor:' || p.name;
    p.created_at := now();
    p.processor_id := nextval(pg_get_serial_sequence('@extschema@.processor_catalog', 'processor_id'));
    INSERT INTO @extschema@.processor_catalog SELECT p.*;
    PERFORM @extschema@._create_group(p.source_topic, p.group_name, coalesce(spec ->> 'start_from', 'earliest'));

    -- State, the owner's: steps run as the owner and write it directly.
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = p.source_topic_id;
    progress := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    EXECUTE format('CREATE TABLE %s (partition integer PRIMARY KEY, max_event_time timestamptz, '
                   'last_record_at timestamptz, records bigint NOT NULL DEFAULT 0, '
                   'late_records bigint NOT NULL DEFAULT 0, null_time_records bigint NOT NULL DEFAULT 0, '
                   'closed_through timestamptz)', progress);
    EXECUTE format('INSERT INTO %s (partition, last_record_at) SELECT g, now() FROM generate_series(-1, %s) g',
                   progress, n - 1);
    EXECUTE format('COMMENT ON TABLE %s IS %L', progress,
                   format('pg_eventlog processor %s: per source partition, the largest event time seen and counters; partition -1: the watermark windows were closed up to', p.name));
    EXECUTE format('ALTER TABLE %s OWNER TO %s', progress, caller);
    -- Watermarks and counters are public, as eventlog.consumer_groups is.
    EXECUTE format('GRANT SELECT ON %s TO PUBLIC', progress);
    IF p.kind = 'window' THEN
        EXECUTE format('CREATE TABLE @extschema@.%I (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, '
                       'group_key jsonb NOT NULL%s, closed boolean NOT NULL DEFAULT false, '
                       'PRIMARY KEY (window_start, group_key))',
                       'processor_' || p.processor_id || '_windows',
                       (SELECT string_agg(format(', v_%s %s, n_%s bigint NOT NULL DEFAULT 0', i,
                                                 @extschema@._processor_agg_type(p, i, 'state'), i), '' ORDER BY i)
                          FROM generate_series(1, cardinality(p.agg_funcs)) i));
        EXECUTE format('COMMENT ON TABLE @extschema@.%I IS %L', 'processor_' || p.processor_id || '_windows',
                       format('pg_eventlog processor %s: one row per open window (or session) and group key, and per closed one kept for the retention', p.name));
        EXECUTE format('ALTER TABLE @extschema@.%I OWNER TO %s', 'processor_' || p.processor_id || '_windows', caller);
        PERFORM @extschema@._processor_create_state(p, caller);
    END IF;
    RETURN p.processor_id;
END
$$;
COMMENT ON FUNCTION @extschema@.__register_processor(jsonb) IS
'internal: the body of eventlog._register_processor, run as the extension owner on behalf of the caller eventlog._register_processor notes (see src/acl.c)';

CREATE OR REPLACE FUNCTION @extschema@.create_window_processor(name text, source_topic text,
                                                    sink_table regclass DEFAULT NULL,
                                                    size interval DEFAULT NULL,
                                                    window_type text DEFAULT 'tumbling',
                                                    advance interval DEFAULT NULL,
                                                    group_by text[] DEFAULT ARRAY['key'],
                                                    aggregates text[] DEFAULT ARRAY['count(*)'],
                                                    where_clause text DEFAULT NULL,
                                                    event_time text DEFAULT 'event_time',
                                                    time_mode text DEFAULT 'event',
                                                    allowed_lateness interval DEFAULT '0',
                                                    max_out_of_orderness interval DEFAULT '0',
                                                    idle_timeout interval DEFAULT '1 minute',
                                                    emit text DEFAULT 'final',
                                                    start_from text DEFAULT 'earliest',
                                                    gap interval DEFAULT NULL,
                                                    late text DEFAULT 'drop',
                                                    late_topic text DEFAULT NULL,
                                                    retention interval DEFAULT '0',
                                                    sink_topic text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    m text[];
    a text;
    i integer;
    ncols integer;
    fnames text[] := '{}';
BEGIN
    IF name IS NULL OR source_topic IS NULL OR (size IS NULL AND window_type IS DISTINCT FROM 'session')
       OR window_type IS NULL OR group_by IS NULL OR aggregates IS NULL OR event_time IS NULL
       OR time_mode IS NULL OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL
       OR idle_timeout IS NULL OR emit IS NULL OR late IS NULL OR retention IS NULL
       OR array_position(group_by, NULL) IS NOT NULL
       OR array_position(aggregates, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of a window processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only sink_table or sink_topic (one of them), size (of a session window), advance, gap, where_clause and late_topic may be null.';
    END IF;
    IF sink_table IS NULL AND sink_topic IS NULL THEN
        RAISE EXCEPTION 'a window processor writes to a sink table, a sink topic or both'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table, sink_topic or both.';
    END IF;
    IF window_type NOT IN ('tumbling', 'hopping', 'session', 'sliding') THEN
        RAISE EXCEPTION 'window_type must be ''tumbling'', ''hopping'', ''sliding'' or ''session''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF window_type = 'sliding' AND advance IS NOT NULL THEN
        RAISE EXCEPTION 'a sliding window has no advance' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'A sliding window ends at each record and reaches size back: pass only size.';
    END IF;
    IF window_type = 'session' THEN
        IF gap IS NULL THEN
            RAISE EXCEPTION 'a session window needs gap' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The gap is the inactivity that ends a session, for example gap => ''30 minutes''.';
        END IF;
        IF size IS NOT NULL OR advance IS NOT NULL THEN
            RAISE EXCEPTION 'a session window has no size or advance' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A session lasts as long as its records come within gap of each other: pass only gap.';
        END IF;
        IF gap <= '0' OR date_part('month', gap) <> 0 OR date_part('year', gap) <> 0 THEN
            RAISE EXCEPTION 'invalid session gap %', gap USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The gap is a positive interval without months or years.';
        END IF;
    ELSE
        IF gap IS NOT NULL THEN
            RAISE EXCEPTION 'gap is only for session windows' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''session'', or size (and advance) for tumbling and hopping windows.';
        END IF;
        IF window_type = 'tumbling' AND advance IS NOT NULL AND advance <> size THEN
            RAISE EXCEPTION 'a tumbling window advances by its size' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''hopping'' for windows that overlap.';
        END IF;
        IF window_type = 'hopping' AND advance IS NULL THEN
            RAISE EXCEPTION 'a hopping window needs advance' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        advance := coalesce(advance, size);
        IF size <= '0' OR advance <= '0' OR advance > size
           OR date_part('month', size) <> 0 OR date_part('year', size) <> 0
           OR date_part('month', advance) <> 0 OR date_part('year', advance) <> 0 THEN
            RAISE EXCEPTION 'invalid window size % or advance %', size, advance
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'Size and advance are positive intervals without months or years, advance at most the size.';
        END IF;
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF time_mode NOT IN ('event', 'processing') THEN
        RAISE EXCEPTION 'time_mode must be ''event'' or ''processing''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF emit NOT IN ('final', 'changes') THEN
        RAISE EXCEPTION 'emit must be ''final'' or ''changes''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late NOT IN ('drop', 'topic', 'update') THEN
        RAISE EXCEPTION 'late must be ''drop'', ''topic'' or ''update''' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention.';
    END IF;
    IF late = 'topic' AND late_topic IS NULL THEN
        RAISE EXCEPTION 'late => ''topic'' needs late_topic' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the topic late records are sent to.';
    END IF;
    IF late <> 'topic' AND late_topic IS NOT NULL THEN
        RAISE EXCEPTION 'late_topic is only for late => ''topic''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late_topic = source_topic OR sink_topic = source_topic THEN
        RAISE EXCEPTION 'a window processor must not write to its source topic' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Its own records would come back to it as input.';
    END IF;
    IF retention < '0' THEN
        RAISE EXCEPTION 'retention must not be negative' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(aggregates) = 0 THEN
        RAISE EXCEPTION 'a window processor needs at least one aggregate' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.name := name;
    p.kind := 'window';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.where_clause := where_clause;
    p.event_time_expr := event_time;
    p.time_mode := time_mode;
    p.window_type := window_type;
    p.size := size;
    p.advance := CASE WHEN window_type = 'sliding' THEN NULL ELSE advance END;
    p.gap := gap;
    p.allowed_lateness := allowed_lateness;
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE max_out_of_orderness END;
    p.idle_timeout := idle_timeout;
    p.emit := emit;
    p.late := late;
    p.late_topic := late_topic;
    p.retention := retention;
    p.group_by := group_by;
    p.agg_funcs := '{}';
    p.agg_args := '{}';
    p.agg_names := '{}';
    FOREACH a IN ARRAY aggregates LOOP
        -- count, sum, min, max and avg of numbers (or text), or any
        -- aggregate with a combine function (streams_windows.sql)
        m := @extschema@._processor_parse_aggregate(a);
        p.agg_funcs := p.agg_funcs || m[1];
        p.agg_args := p.agg_args || m[2];
        p.agg_names := p.agg_names || m[3];
        fnames := fnames || m[4];
    END LOOP;
    -- The sink's columns in order: window start, window end, one per
    -- group_by expression, one per aggregate.
    IF sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum), array_agg(format_type(att.atttypid, att.atttypmod) ORDER BY att.attnum)
          INTO p.sink_columns, p.sink_types
          FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        ncols := 2 + cardinality(group_by) + cardinality(aggregates);
        IF coalesce(cardinality(p.sink_columns), 0) <> ncols THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes %', sink_table,
                            coalesce(cardinality(p.sink_columns), 0), ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: window start, window end, one per group_by expression, one per aggregate.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT, UPDATE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A window processor selects, inserts and updates its sink table.';
        END IF;
        IF window_type = 'session' AND NOT has_table_privilege(sink_table, 'DELETE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A session window processor also deletes the rows of sessions that merged into others.';
        END IF;
    END IF;
    -- The aggregates' names in the records of a sink topic: "AS name", else
    -- the sink table's column, else the function (numbered when repeated).
    FOR i IN 1 .. cardinality(aggregates) LOOP
        p.agg_names[i] := coalesce(p.agg_names[i], p.sink_columns[2 + cardinality(group_by) + i],
                                   CASE WHEN array_position(fnames[i + 1:], fnames[i]) IS NULL
                                         AND array_position(fnames[:i - 1], fnames[i]) IS NULL
                                        THEN fnames[i] ELSE fnames[i] || '_' || i END);
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM unnest(p.agg_names) x) < cardinality(aggregates) THEN
        RAISE EXCEPTION 'two aggregates are named alike' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name them apart with "AS name".';
    END IF;
    -- The expressions over no records, as the caller; the group keys and
    -- aggregate arguments inside CASE, as a step evaluates them (so that a
    -- set-returning function there fails now, not at every step).
    EXECUTE format('SELECT %s, CASE WHEN true THEN pg_catalog.jsonb_build_array(%s) END %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record WHERE %s',
                   CASE time_mode WHEN 'processing' THEN 'NULL' ELSE '(' || event_time || ')::timestamptz' END,
                   (SELECT string_agg('(' || g || ')', ', ') FROM unnest(group_by) g),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::%s END', CASE x WHEN '*' THEN 'NULL' ELSE x END,
                                             @extschema@._processor_agg_type(p, o::integer, 'argument')), '' ORDER BY o)
                      FROM unnest(p.agg_args) WITH ORDINALITY AS u(x, o)),
                   coalesce('(' || where_clause || ')', 'true'));
    -- and the casts of the group keys to the sink's column types
    IF sink_table IS NOT NULL THEN
        FOR i IN 1 .. cardinality(group_by) LOOP
            EXECUTE format('SELECT NULL::text::%s', p.sink_types[2 + i]);
        END LOOP;
    END IF;
    PERFORM @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text, interval, text, text, interval, text) IS
'creates a windowed aggregate: tumbling or hopping windows of size (advancing by advance), sliding windows (a window of size ending at each record), or session windows (gap), over event time (an expression over the record) or processing time, grouped by expressions, count/sum/min/max/avg or any aggregate with a combine function, written to sink_table and/or sink_topic when a window closes (emit final) or as it changes (emit changes); late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention';

CREATE OR REPLACE FUNCTION @extschema@.reset_processor(name text, target text DEFAULT 'earliest')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
BEGIN
    IF target IS NULL THEN
        RAISE EXCEPTION 'target must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
    PERFORM @extschema@.seek(p.source_topic, p.group_name, target);
    EXECUTE format('UPDATE %s SET max_event_time = NULL, last_record_at = now(), records = 0, '
                   'late_records = 0, null_time_records = 0, closed_through = NULL', progress);
    IF p.kind = 'window' THEN
        EXECUTE format('TRUNCATE @extschema@.%I', 'processor_' || p.processor_id || '_windows');
        IF p.window_type = 'sliding' THEN
            EXECUTE format('TRUNCATE @extschema@.%I', 'processor_' || p.processor_id || '_records');
        END IF;
    ELSIF p.kind = 'join' THEN
        PERFORM @extschema@.seek(p.join_spec ->> 'right_topic', p.group_name, target);
        EXECUTE format('TRUNCATE @extschema@.%I, @extschema@.%I', 'processor_' || p.processor_id || '_left',
                       'processor_' || p.processor_id || '_right');
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.reset_processor(text, text) IS
'replays a processor: forgets its windows, watermarks and counters and seeks its group to target (earliest, latest, an offset or a timestamp); the sink''s windows are overwritten as they are computed again';

CREATE OR REPLACE FUNCTION @extschema@._drop_processor(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
BEGIN
    IF NOT pg_has_role(@extschema@._caller(), p.owner, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied for processor "%"', p.name
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Only members of the processor''s owner role %s may run, reset or drop it.', p.owner);
    END IF;
    -- Waits for a step in progress.
    EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I', 'processor_' || p.processor_id || '_progress');
    IF p.kind = 'window' THEN
        EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I', 'processor_' || p.processor_id || '_windows');
        IF p.window_type = 'sliding' THEN
            EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I', 'processor_' || p.processor_id || '_records');
        END IF;
        PERFORM @extschema@._processor_drop_aggregates(p);
    ELSIF p.kind = 'join' THEN
        EXECUTE format('DROP TABLE IF EXISTS @extschema@.%I, @extschema@.%I', 'processor_' || p.processor_id || '_left',
                       'processor_' || p.processor_id || '_right');
    END IF;
    DELETE FROM @extschema@.processor_catalog c WHERE c.processor_id = p.processor_id;
    DELETE FROM @extschema@.group_offsets o
     WHERE o.topic_id IN (p.source_topic_id, (p.join_spec ->> 'right_topic_id')::integer) AND o.group_name = p.group_name;
    DELETE FROM @extschema@.group_catalog g
     WHERE g.topic_id IN (p.source_topic_id, (p.join_spec ->> 'right_topic_id')::integer) AND g.group_name = p.group_name;
END
$$;
COMMENT ON FUNCTION @extschema@._drop_processor(text) IS
'internal: the body of eventlog.drop_processor, run as the extension owner on behalf of the caller eventlog.drop_processor notes (see src/acl.c)';

/* ------------------------------------------------------------------------
 * Window processors, continued (docs/streams.md): aggregates beyond count,
 * sum, min, max and avg of numbers, sliding windows, and the view of a
 * processor's open windows.
 *
 * Aggregates.  A window row keeps, per aggregate, a state that a step
 * combines with the state of the batch's records: count, sum, min, max and
 * avg of numbers keep a numeric and a count (streams.sql).  Any other
 * aggregate of one argument with a combine function
 * (pg_aggregate.aggcombinefn) and a state of an SQL type (not internal nor
 * polymorphic) keeps its own state: agg_funcs holds the aggregate as a
 * regprocedure ("bit_or(integer)"; the "(" tells it apart), and the
 * processor has two aggregates of its own, made at creation from the
 * aggregate's functions: processor_<id>_partial_<i> (the transition
 * function, no final function: a batch's state) and
 * processor_<id>_combine_<i> (the combine function as transition
 * function: states combined).  The final function runs when a window is
 * written.  Aggregates whose state is internal (numeric sum and avg,
 * stddev of numeric) cannot be stored in a row from SQL, and are refused.
 *
 * Sliding windows (Kafka Streams' SlidingWindows, left windows only): a
 * record at t makes the window [t - size, t] of its key, which holds the
 * records of the key with times in it.  Windows are computed from a buffer
 * of the records (processor_<id>_records: group key, time, the watermark
 * the record came under, the aggregates' arguments), kept while a window
 * that holds them may still change; a step recomputes the windows its
 * records change.
 * ------------------------------------------------------------------------ */

/*
 * An aggregate of create_window_processor's "aggregates", checked as the
 * caller: {agg_funcs entry, argument, name given with AS, function name}.
 */
CREATE FUNCTION @extschema@._processor_parse_aggregate(a text)
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m text[] := regexp_match(a, '^\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)?)\s*\((.*)\)\s*(?:as\s+([A-Za-z_][A-Za-z0-9_]*))?\s*$', 'i');
    fname text;
    arg text;
    typ oid;
    castable boolean;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
BEGIN
    IF m IS NULL OR btrim(m[2]) = '' OR (btrim(m[2]) = '*' AND lower(m[1]) <> 'count') THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An aggregate is count(*), or an aggregate function of one expression over the record, optionally followed by AS and a name.';
    END IF;
    fname := lower(regexp_replace(m[1], '\s', '', 'g'));
    arg := btrim(m[2]);
    IF fname = 'count' THEN
        RETURN ARRAY['count', arg, m[3], 'count'];
    END IF;
    -- The argument's type, without evaluating it (an outer join's NULL).
    EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                   '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                   arg) INTO typ;
    IF typ = 'unknown'::regtype THEN
        typ := 'text'::regtype;
    END IF;
    IF fname IN ('sum', 'min', 'max', 'avg') THEN
        -- Numbers, and whatever casts to numeric, as before: a numeric state.
        BEGIN
            EXECUTE format('SELECT NULL::%s::numeric', format_type(typ, NULL));
            castable := true;
        EXCEPTION WHEN cannot_coerce THEN
            castable := false;
        END;
        IF castable THEN
            RETURN ARRAY[fname, arg, m[3], fname];
        END IF;
    END IF;
    proc := to_regprocedure(format('%s(%s)', regexp_replace(m[1], '\s', '', 'g'), format_type(typ, NULL)));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(regexp_replace(m[1], '\s', '', 'g'));
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = 1
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND (SELECT t.typtype FROM pg_type t WHERE t.oid = pr.proargtypes[0]) = 'p'
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], format_type(typ, NULL)
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes one argument of a type it takes (cast it), and is named with its schema unless it is in pg_catalog.';
    END IF;
    SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = proc;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function % is not an aggregate', proc USING ERRCODE = 'wrong_object_type';
    END IF;
    IF ag.aggkind <> 'n' OR ag.aggcombinefn = 0 THEN
        RAISE EXCEPTION 'aggregate % cannot be combined', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = 'A window keeps a state per aggregate and combines it with the states of new records: the aggregate needs a combine function.';
    END IF;
    IF (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p'
       OR (SELECT t.typtype FROM pg_type t WHERE t.oid = typ) = 'p' OR ag.aggfinalextra THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('A window keeps an aggregate''s state in a column; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL)),
            HINT = 'Count, sum, min, max and avg of numbers have a state of their own; for stddev or variance, cast the argument to double precision.';
    END IF;
    IF NOT (has_function_privilege(proc, 'EXECUTE') AND has_function_privilege(ag.aggtransfn, 'EXECUTE')
            AND has_function_privilege(ag.aggcombinefn, 'EXECUTE')
            AND (ag.aggfinalfn = 0 OR has_function_privilege(ag.aggfinalfn, 'EXECUTE'))) THEN
        RAISE EXCEPTION 'permission denied for aggregate %', proc USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A window processor calls the aggregate''s transition, combine and final functions as its owner.';
    END IF;
    RETURN ARRAY[proc::text, arg, m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate(text) IS
'internal: an aggregate of a window processor, checked as the caller: the entry of agg_funcs (count, sum, min, max, avg, or an aggregate with a combine function as a regprocedure), its argument, its name, its function''s name';

/* The type of aggregate i's state ('state') or argument ('argument'). */
CREATE FUNCTION @extschema@._processor_agg_type(p @extschema@.processor_catalog, i integer, what text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN strpos(p.agg_funcs[i], '(') = 0 THEN 'numeric'
                WHEN what = 'state' THEN (SELECT format_type(g.aggtranstype, NULL) FROM pg_aggregate g
                                           WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure)
                ELSE (SELECT format_type(pr.proargtypes[0], NULL) FROM pg_proc pr
                       WHERE pr.oid = p.agg_funcs[i]::regprocedure) END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_type(@extschema@.processor_catalog, integer, text) IS
'internal: the type of the state or the argument of a window processor''s aggregate';

/*
 * The step's pieces for aggregate i, one with a combine function (see
 * _processor_step_sql): {the argument, the batch's partials, the merge
 * into a window row, a record as a partial (sessions), partials combined}.
 */
CREATE FUNCTION @extschema@._processor_agg_sql(p @extschema@.processor_catalog, i integer)
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text := format('@extschema@.%I', 'processor_' || p.processor_id || '_partial_' || i);
    comb text := format('@extschema@.%I', 'processor_' || p.processor_id || '_combine_' || i);
BEGIN
    RETURN ARRAY[
        format(', CASE WHEN t_.in_ THEN (%s)::%s END AS x_%s', p.agg_args[i],
               @extschema@._processor_agg_type(p, i, 'argument'), i),
        format(', %s(x_%s), count(x_%s)', part, i, i),
        format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = (SELECT %2$s(c_.s_) FROM (VALUES (t.v_%1$s), (excluded.v_%1$s)) AS c_(s_))',
               i, comb),
        format(', (SELECT %2$s(c_.x_) FROM (VALUES (e.x_%1$s)) AS c_(x_)) AS v_%1$s, CASE WHEN e.x_%1$s IS NULL THEN 0 ELSE 1 END::bigint AS n_%1$s',
               i, part),
        format(', %s(v_%s), sum(n_%s)::bigint', comb, i, i)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_sql(@extschema@.processor_catalog, integer) IS
'internal: the SQL a step of a window processor uses for one of its aggregates that has a combine function';

/* Aggregate i's value in a window row "rel" (as written to the sink). */
CREATE FUNCTION @extschema@._processor_agg_out(p @extschema@.processor_catalog, i integer, rel text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fin text;
BEGIN
    IF strpos(p.agg_funcs[i], '(') > 0 THEN
        SELECT format('%I.%I', n.nspname, pr.proname) INTO fin
          FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggfinalfn JOIN pg_namespace n ON n.oid = pr.pronamespace
         WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure;
        RETURN CASE WHEN fin IS NULL THEN format('%s.v_%s', rel, i) ELSE format('%s(%s.v_%s)', fin, rel, i) END;
    END IF;
    RETURN CASE p.agg_funcs[i] WHEN 'count' THEN format('%s.n_%s', rel, i)
                               WHEN 'avg' THEN format('%1$s.v_%2$s / NULLIF(%1$s.n_%2$s, 0)', rel, i)
                               ELSE format('%s.v_%s', rel, i) END;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_out(@extschema@.processor_catalog, integer, text) IS
'internal: the value of a window processor''s aggregate in a window row';

/*
 * The state a window processor has besides its windows, made by
 * __register_processor as the extension owner and given to the processor's
 * owner: the partial and combine aggregates of its aggregates with a
 * combine function, and a sliding window's record buffer.  The aggregates'
 * functions are checked again here (the spec may not come from
 * create_window_processor); the owner needs EXECUTE on them to run them.
 */
CREATE FUNCTION @extschema@._processor_create_state(p @extschema@.processor_catalog, caller regrole)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
    i integer;
    argt text;
    st text;
    records text := format('@extschema@.%I', 'processor_' || p.processor_id || '_records');
BEGIN
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        CONTINUE WHEN strpos(p.agg_funcs[i], '(') = 0;
        SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure;
        IF NOT FOUND OR ag.aggkind <> 'n' OR ag.aggcombinefn = 0 OR ag.aggfinalextra
           OR (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p' THEN
            RAISE EXCEPTION 'aggregate % cannot be combined', p.agg_funcs[i] USING ERRCODE = 'feature_not_supported';
        END IF;
        argt := @extschema@._processor_agg_type(p, i, 'argument');
        st := format_type(ag.aggtranstype, NULL);
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_partial_' || i, argt,
                       ag.aggtransfn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s)',
                       'processor_' || p.processor_id || '_combine_' || i, st,
                       ag.aggcombinefn::text, st);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_partial_' || i, argt, caller);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_combine_' || i, st, caller);
    END LOOP;
    IF p.window_type = 'sliding' THEN
        EXECUTE format('CREATE TABLE %s (group_key jsonb NOT NULL, ts timestamptz NOT NULL, lim timestamptz NOT NULL%s)',
                       records,
                       (SELECT string_agg(format(', x_%s %s', j, @extschema@._processor_agg_type(p, j, 'argument')), '' ORDER BY j)
                          FROM generate_series(1, cardinality(p.agg_funcs)) j));
        EXECUTE format('CREATE INDEX ON %s (group_key, ts)', records);
        EXECUTE format('COMMENT ON TABLE %s IS %L', records,
                       format('pg_eventlog processor %s: the records its sliding windows may still need (group key, event time, the watermark it came under, the aggregates'' arguments)', p.name));
        EXECUTE format('ALTER TABLE %s OWNER TO %s', records, caller);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) IS
'internal: makes a window processor''s partial and combine aggregates and a sliding window''s record buffer, owned by the processor''s owner';
REVOKE ALL ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) FROM PUBLIC;

CREATE FUNCTION @extschema@._processor_drop_aggregates(p @extschema@.processor_catalog)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT pr.oid FROM pg_proc pr
              WHERE pr.pronamespace = '@extschema@'::regnamespace
                AND pr.proname ~ ('^processor_' || p.processor_id || '_(partial|combine)_[0-9]+$') LOOP
        EXECUTE format('DROP AGGREGATE %s', f);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_drop_aggregates(@extschema@.processor_catalog) IS
'internal: drops a window processor''s partial and combine aggregates';
REVOKE ALL ON FUNCTION @extschema@._processor_drop_aggregates(@extschema@.processor_catalog) FROM PUBLIC;

/*
 * The body of a sliding window's step (after the CTE "e" of
 * _processor_step_sql; $8 the size, $9 how late a record may be, $12
 * allowed_lateness).  A record at t counts in the window of its key ending
 * at e (t <= e <= t + size) unless the watermark it came under (lim_) is
 * past e + $9: a window with both ends in is closed when the watermark
 * passes its end (Kafka Streams: stream time > end + grace), so that a
 * record at the watermark counts in its own window (with processing time,
 * every record).  The window ending at e exists when a record at e counts
 * in it.  The records that count in some window go to
 * the buffer ("nr"); the windows a new record counts in are recomputed
 * from the buffer and the batch ("ar", only the keys and times the batch
 * can reach), and replace their rows.
 */
CREATE FUNCTION @extschema@._processor_sliding_sql(p @extschema@.processor_catalog, partials text, cols text, sets text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    records text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_records');
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    ecols text := (SELECT string_agg(format(', e.x_%s', i), '' ORDER BY i)
                     FROM generate_series(1, cardinality(p.agg_funcs)) i);
BEGIN
    RETURN format($f$
nr AS (SELECT e.gk_ AS group_key, e.ts_ AS ts, e.lim_ AS lim %1$s FROM e WHERE e.in_ AND NOT e.late_),
ins AS (INSERT INTO %2$s SELECT * FROM nr),
ar AS (SELECT r.* FROM %2$s AS r
        WHERE r.group_key IN (SELECT nr.group_key FROM nr)
          AND r.ts >= (SELECT min(nr.ts) FROM nr) - $8 AND r.ts <= (SELECT max(nr.ts) FROM nr) + $8
       UNION ALL SELECT * FROM nr),
c AS (SELECT DISTINCT a.group_key AS gk_, a.ts AS we_
        FROM nr JOIN ar AS a ON a.group_key = nr.group_key AND a.ts >= nr.ts AND a.ts <= nr.ts + $8
       WHERE a.ts + $9 >= nr.lim),
agg AS (SELECT c.we_ - $8, c.we_, c.gk_ %3$s, c.we_ + $12 < (SELECT ct.c_ FROM ct)
          FROM c JOIN ar AS a ON a.group_key = c.gk_ AND a.ts >= c.we_ - $8 AND a.ts <= c.we_ AND c.we_ + $9 >= a.lim
         GROUP BY c.we_, c.gk_ HAVING bool_or(a.ts = c.we_)),
u AS (INSERT INTO %4$s AS t (window_start, window_end, group_key %5$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %6$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%7$s,$f$,
        ecols, records, partials, windows, cols, sets,
        @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
END
$$;
COMMENT ON FUNCTION @extschema@._processor_sliding_sql(@extschema@.processor_catalog, text, text, text) IS
'internal: the part of a sliding window processor''s step that buffers its records and recomputes the windows they change';

/*
 * A window processor's windows: the open ones, and the closed ones kept for
 * the retention (closed).  They hold what the processor read, so only
 * roles with the privileges of its owner see them, as its state tables.
 */
CREATE FUNCTION @extschema@.processor_windows(name text)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, group_key jsonb, closed boolean, aggregates jsonb)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    jv text := '';
    i integer;
BEGIN
    IF p.kind <> 'window' THEN
        RAISE EXCEPTION 'processor "%" has no windows', p.name USING ERRCODE = 'wrong_object_type',
            DETAIL = 'Only window processors (eventlog.create_window_processor) keep windows.';
    END IF;
    IF NOT pg_has_role(current_user, p.owner, 'USAGE') THEN
        RAISE EXCEPTION 'permission denied for processor "%"', p.name
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Only roles with the privileges of the processor''s owner role %s may see its windows.', p.owner);
    END IF;
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        jv := jv || format(' || pg_catalog.jsonb_build_object(%L, %s)', p.agg_names[i], @extschema@._processor_agg_out(p, i, 'u'));
    END LOOP;
    RETURN QUERY EXECUTE format(
        'SELECT u.window_start, u.window_end, u.group_key, u.closed, ''{}''::jsonb %s '
        '  FROM @extschema@.%I AS u ORDER BY u.window_start, u.group_key', jv, 'processor_' || p.processor_id || '_windows');
END
$$;
COMMENT ON FUNCTION @extschema@.processor_windows(text) IS
'a window processor''s windows and their aggregates by name: the open ones, and the closed ones kept for the retention (closed); for roles with the privileges of its owner';
/* -- issue 19: sliding windows, aggregates with a combine function, processor_windows (end) -- */

-- The window step and its emit, as both changes to them (sliding windows and
-- aggregates with a combine function; windows closed in the step) make them,
-- and the pieces of an aggregate with a combine function for a window the
-- step closes.

CREATE OR REPLACE FUNCTION @extschema@._processor_agg_sql(p @extschema@.processor_catalog, i integer)
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text := format('@extschema@.%I', 'processor_' || p.processor_id || '_partial_' || i);
    comb text := format('@extschema@.%I', 'processor_' || p.processor_id || '_combine_' || i);
BEGIN
    RETURN ARRAY[
        format(', CASE WHEN t_.in_ THEN (%s)::%s END AS x_%s', p.agg_args[i],
               @extschema@._processor_agg_type(p, i, 'argument'), i),
        format(', %s(x_%s), count(x_%s)', part, i, i),
        format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = (SELECT %2$s(c_.s_) FROM (VALUES (t.v_%1$s), (excluded.v_%1$s)) AS c_(s_))',
               i, comb),
        format(', (SELECT %2$s(c_.x_) FROM (VALUES (e.x_%1$s)) AS c_(x_)) AS v_%1$s, CASE WHEN e.x_%1$s IS NULL THEN 0 ELSE 1 END::bigint AS n_%1$s',
               i, part),
        format(', %s(v_%s), sum(n_%s)::bigint', comb, i, i),
        -- a window closed in the step (the step's "fmerge"): its row and
        -- the batch's partial, either of which may be missing
        format(', (SELECT %2$s(c_.s_) FROM (VALUES (dc.v_%1$s), (cl.v_%1$s)) AS c_(s_)), coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)',
               i, comb)];
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    rv text := '';
    comb text := '';
    sets text := '';
    fmerge text := '';
    head text;
    body text;
    late_out text;
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    g text[];
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        -- any other aggregate with a combine function (streams_windows.sql)
        IF strpos(f, '(') > 0 THEN
            g := @extschema@._processor_agg_sql(p, i);
            xs := xs || g[1]; partials := partials || g[2]; cols := cols || format(', v_%s, n_%s', i, i);
            merge := merge || g[3]; rv := rv || g[4]; comb := comb || g[5]; fmerge := fmerge || g[6];
            sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
            CONTINUE;
        END IF;
        xs := xs || format(', CASE WHEN t_.in_ THEN (%s)::numeric END AS x_%s',
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
        -- sessions: a record as a partial (value, count), and partials combined
        rv := rv || format(', %s AS v_%s, %s AS n_%s',
                           CASE WHEN f = 'count' THEN 'NULL::numeric' ELSE format('e.x_%s', i) END, i,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN '1::bigint'
                                ELSE format('CASE WHEN e.x_%s IS NULL THEN 0 ELSE 1 END::bigint', i) END, i);
        comb := comb || format(', %s, sum(n_%s)::bigint',
                               CASE f WHEN 'min' THEN format('min(v_%s)', i)
                                      WHEN 'max' THEN format('max(v_%s)', i)
                                      WHEN 'count' THEN 'NULL::numeric'
                                      ELSE format('sum(v_%s)', i) END, i);
        sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
        -- a window closed in the step: its row (dc, if any) and the batch's
        -- partial (cl, if any) combined, as "merge" combines them
        fmerge := fmerge || format(', %2$s, coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)', i,
                                   CASE f WHEN 'min' THEN format('least(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'max' THEN format('greatest(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'count' THEN 'NULL::numeric'
                                          ELSE format('CASE WHEN dc.v_%1$s IS NULL THEN cl.v_%1$s WHEN cl.v_%1$s IS NULL THEN dc.v_%1$s ELSE dc.v_%1$s + cl.v_%1$s END', i) END);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  A session window's record is late when the session of
     * that record alone would be closed (its time + gap + lateness before
     * the watermark), so that lateness does not depend on how the records
     * of other partitions were cut into steps.
     */
    head := format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
b AS (
    SELECT record.partition AS p_, record.offset_id AS o_, t_.ts_, t_.in_,
           CASE WHEN t_.in_ THEN %4$s END AS gk_ %5$s %8$s
      FROM %2$s AS record
           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%6$s) IS TRUE END AS in_
                                 FROM (SELECT %1$s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, ct.c_) AS lim_,
           (%7$s) AS late_
      FROM (SELECT b.*, coalesce(greatest(prev.m_, max(b.ts_) OVER (PARTITION BY b.p_ ORDER BY b.o_
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
                                 '-infinity') - $7 AS wm_
              FROM b LEFT JOIN prev ON prev.p_ = b.p_) AS w_
           CROSS JOIN ct),$f$,
        ts, batch, progress, gk, xs, filter,
        CASE WHEN p.window_type = 'session'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, ct.c_)'
             WHEN p.window_type = 'sliding'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, ct.c_)'
             ELSE 'date_bin($10, w_.ts_, ''1970-01-01 00:00:00+00'') + $8 + $9 <= greatest(w_.wm_, ct.c_)' END,
        CASE WHEN p.late = 'topic'
             THEN ', record.key AS rk_, record.value AS rv_, record.headers AS rh_, record.event_time AS ret_'
             ELSE '' END);

    -- Late records to the late-records topic, in offset order.
    late_out := CASE WHEN p.late = 'topic'
        THEN 'lt AS MATERIALIZED (SELECT count(@extschema@.produce($13, x.rk_, x.rv_, x.rh_, NULL, x.ret_)) AS n '
             '  FROM (SELECT e.* FROM e WHERE e.in_ AND e.late_ ORDER BY e.p_, e.o_) AS x)'
        ELSE 'lt AS (SELECT 0::bigint AS n)' END;

    IF p.window_type = 'session' THEN
        /*
         * Sessions: the records that count ("r", each a session of one
         * record), and the sessions in state that one of them reaches
         * (within gap of its start or end, as Kafka Streams' findSessions)
         * are laid on one line per group key and merged where they come
         * within gap of each other (gaps and islands: a new session starts
         * where a start is more than gap after every end before it).  The
         * merged sessions replace the ones they absorbed: a merged session
         * keeps the start of one of them (upserted) or deletes it.  Their
         * rows in the sink go too ("gone": the absorbed sessions that were
         * written, in full or as changes).
         */
        body := format($f$
r AS (SELECT e.gk_, e.ts_ AS s_, e.ts_ AS e_ %1$s FROM e WHERE e.in_ AND NOT e.late_),
o AS MATERIALIZED (SELECT w.* FROM %2$s AS w
                    WHERE EXISTS (SELECT FROM r WHERE r.gk_ = w.group_key
                                     AND r.s_ >= w.window_start - $8 AND r.s_ <= w.window_end + $8)),
iv AS (SELECT r.* FROM r UNION ALL SELECT o.group_key, o.window_start, o.window_end %3$s FROM o),
isl AS (SELECT y.*, count(*) FILTER (WHERE y.mx_ IS NULL OR y.s_ > y.mx_ + $8)
                        OVER (PARTITION BY y.gk_ ORDER BY y.s_, y.e_ ROWS UNBOUNDED PRECEDING) AS i_
          FROM (SELECT iv.*, max(iv.e_) OVER (PARTITION BY iv.gk_ ORDER BY iv.s_, iv.e_
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx_
                  FROM iv) AS y),
agg AS (SELECT min(s_) AS ws_, max(e_) AS we_, gk_ %4$s FROM isl GROUP BY gk_, i_),
gone AS (SELECT o.* FROM o WHERE NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key
                                                AND agg.ws_ = o.window_start AND agg.we_ = o.window_end)),
d AS (DELETE FROM %2$s AS w USING o
       WHERE w.window_start = o.window_start AND w.group_key = o.group_key
         AND NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key AND agg.ws_ = o.window_start)),
u AS (INSERT INTO %2$s AS t (window_start, window_end, group_key %3$s, closed)
      SELECT agg.*, agg.we_ + $8 + $12 < (SELECT ct.c_ FROM ct) FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %5$s, closed = excluded.closed
      RETURNING t.*),
%6$s,$f$,
            rv, windows, cols, comb, sets,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', '($11 OR gone.closed)'));
    ELSIF p.window_type = 'sliding' THEN
        body := @extschema@._processor_sliding_sql(p, partials, cols, sets);
    ELSE
        /*
         * Tumbling and hopping windows: the batch's partials combine with
         * the window rows.  A window is written to the sink as it changes
         * (emit changes), or when it closes, or, closed already, when a late
         * record updates it (late => 'update', within the retention).
         */
        body := format($f$
a AS (%1$s),
agg (window_start, window_end, group_key %4$s, closed) AS (
    SELECT ws_, ws_ + $8, gk_ %2$s, ws_ + $8 + $12 <= (SELECT ct.c_ FROM ct) FROM a GROUP BY ws_, gk_),$f$,
            CASE WHEN p.size = p.advance
                 THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
                 ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                      'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                      'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END,
            partials, windows, cols);
        IF p.time_mode = 'event' AND coalesce(p.retention, '0') = '0'
           AND NOT (p.late = 'topic' AND p.late_topic IS NOT DISTINCT FROM p.sink_topic) THEN
            /*
             * Close in the step the windows that the step's own watermark
             * closes, instead of writing them into the window rows for the
             * closing statement to delete (most windows of a large step):
             * "wl" is a lower bound of the watermark run_processor computes
             * after this statement (the least over all partitions, active
             * or idle, of the largest event time seen, this batch's
             * included, minus max_out_of_orderness), NULL when it closes
             * nothing new.  The batch's partials of the windows it closes
             * ("cl") combine with their rows, deleted ("dc"), and are
             * written as the closing statement would have written them
             * (emit final: every window it closes; emit changes: those the
             * batch changed); the other partials are upserted ("u0").  The
             * closing statement then closes what the watermark passes
             * beyond "wl" (usually nothing); windows close in the same
             * order, in the same transaction.  Without a retention a
             * closed window is deleted as it closes, so nothing else
             * changes.
             */
            body := body || format($f$
bm AS (SELECT e.p_, max(e.ts_) AS m_ FROM e GROUP BY e.p_),
wl AS (SELECT CASE WHEN x.w_ > (SELECT ct.c_ FROM ct) THEN x.w_ END AS w_
         FROM (SELECT min(coalesce(greatest(prev.m_, bm.m_), '-infinity')) - $7 AS w_
                 FROM pg_catalog.generate_series(0, $4 - 1) AS g(p_)
                 LEFT JOIN prev ON prev.p_ = g.p_ LEFT JOIN bm ON bm.p_ = g.p_) AS x),
cl AS (SELECT agg.* FROM agg, wl WHERE agg.window_end + $12 <= wl.w_),
dc AS (DELETE FROM %1$s AS w USING wl
        WHERE w.window_end + $12 <= wl.w_ AND EXISTS (SELECT FROM wl WHERE wl.w_ IS NOT NULL) RETURNING w.*),
u0 AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
       SELECT agg.* FROM agg, wl WHERE wl.w_ IS NULL OR agg.window_end + $12 > wl.w_
       ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                   closed = t.closed OR excluded.closed
       RETURNING t.*),
u AS (SELECT * FROM u0
      UNION ALL
      SELECT coalesce(cl.window_start, dc.window_start), coalesce(cl.window_end, dc.window_end),
             coalesce(cl.group_key, dc.group_key) %4$s, true
        FROM cl FULL JOIN dc ON dc.window_start = cl.window_start AND dc.group_key = cl.group_key
       WHERE cl.window_start IS NOT NULL OR NOT ($11 OR dc.closed)),
%5$s,$f$,
                windows, cols, merge, fmerge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        ELSE
            body := body || format($f$
u AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%4$s,$f$,
                windows, cols, merge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        END IF;
    END IF;

    RETURN head || body || format($f$
%2$s,
pu AS (INSERT INTO %1$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT e.p_, max(e.ts_), pg_catalog.now(), count(*), count(*) FILTER (WHERE e.in_ AND e.late_),
              count(*) FILTER (WHERE e.ts_ IS NULL)
         FROM e GROUP BY e.p_
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT (SELECT count(*) FROM e) FROM so, lt$f$, progress, late_out);
END
$$;

CREATE OR REPLACE FUNCTION @extschema@._processor_emit_sql(p @extschema@.processor_catalog, flag text, gone_flag text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    gcols text := '';
    gmatch text := '';
    gmatch_gone text := '';
    outs text := '';
    sets text := '';
    jvals text := '';
    k text;
    o text;
    i integer;
    ctes text := '';
BEGIN
    FOR i IN 1 .. ng LOOP
        IF p.sink_table IS NOT NULL THEN
            gcols := gcols || format(', (u.group_key ->> %s)::%s', i - 1, p.sink_types[2 + i]);
            gmatch := gmatch || format(' AND s.%I IS NOT DISTINCT FROM (u.group_key ->> %s)::%s',
                                       p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
            gmatch_gone := gmatch_gone || format(' AND s.%I IS NOT DISTINCT FROM (gone.group_key ->> %s)::%s',
                                                 p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
        END IF;
    END LOOP;
    FOR i IN 1 .. na LOOP
        o := @extschema@._processor_agg_out(p, i, 'u');
        outs := outs || ', ' || o;
        IF p.sink_table IS NOT NULL THEN
            sets := sets || format('%s%I = %s', CASE WHEN i > 1 THEN ', ' ELSE '' END,
                                   p.sink_columns[2 + ng + i], o);
        END IF;
        jvals := jvals || format(' || pg_catalog.jsonb_build_object(%L, %s)', p.agg_names[i], o);
    END LOOP;
    IF p.sink_table IS NOT NULL THEN
        IF gone_flag IS NOT NULL THEN
            ctes := format($f$sd AS (DELETE FROM %1$s AS s USING gone
        WHERE %2$s AND s.%3$I = gone.window_start AND s.%4$I = gone.window_end %5$s),
$f$, p.sink_table, gone_flag, p.sink_columns[1], p.sink_columns[2], gmatch_gone);
        END IF;
        /*
         * "sx": the windows written that have rows in the sink, found by
         * one scan of the sink (with the windows hashed, a small set, where
         * a NOT EXISTS would hash the whole sink at every step), and none
         * when no window is written (the EXISTS is evaluated once, first).
         */
        ctes := ctes || format($f$sx AS (SELECT u.window_start AS s_, u.window_end AS e_, u.group_key AS g_
        FROM u JOIN %1$s AS s ON s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s
        WHERE %3$s AND EXISTS (SELECT FROM u WHERE %3$s)),
su AS (UPDATE %1$s AS s SET %2$s FROM u
        WHERE %3$s AND EXISTS (SELECT FROM sx) AND s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s
          AND EXISTS (SELECT FROM sx WHERE sx.s_ = u.window_start AND sx.g_ = u.group_key AND sx.e_ = u.window_end)),
si AS (INSERT INTO %1$s SELECT u.window_start, u.window_end %7$s %8$s FROM u
        WHERE %3$s AND NOT EXISTS (SELECT FROM sx WHERE sx.s_ = u.window_start AND sx.g_ = u.group_key AND sx.e_ = u.window_end)),
$f$, p.sink_table, sets, flag, p.sink_columns[1], p.sink_columns[2], gmatch, gcols, outs);
    END IF;
    IF p.sink_topic IS NULL THEN
        RETURN ctes || 'so AS (SELECT 0::bigint AS n)';
    END IF;
    -- The record's key: the group value (one group_by expression) or the
    -- JSON array of them; its value: the window and the aggregates by name.
    k := CASE ng WHEN 0 THEN 'NULL::text' WHEN 1 THEN '%1$s.group_key ->> 0' ELSE '%1$s.group_key::text' END;
    RETURN ctes || format($f$so AS MATERIALIZED (
    SELECT count(@extschema@.produce(%1$L, x.k_, x.v_, NULL, NULL, x.t_)) AS n
      FROM (%2$s
            SELECT 1 AS o_, u.window_start AS s_, %3$s AS k_,
                   pg_catalog.jsonb_build_object('window_start', u.window_start, 'window_end', u.window_end,
                                                 'group_key', u.group_key) %4$s AS v_,
                   u.window_end AS t_
              FROM u WHERE %5$s
             ORDER BY 1, 2, 3) AS x)$f$,
        p.sink_topic,
        CASE WHEN gone_flag IS NULL THEN ''
             ELSE format($g$SELECT 0 AS o_, gone.window_start AS s_, %s AS k_,
                   pg_catalog.jsonb_build_object('window_start', gone.window_start, 'window_end', gone.window_end,
                                                 'group_key', gone.group_key, 'deleted', true) AS v_,
                   gone.window_end AS t_
              FROM gone WHERE %s
            UNION ALL
            $g$, format(k, 'gone'), gone_flag) END,
        format(k, 'u'), jvals, flag);
END
$$;

-- A processor's combine aggregates start from the aggregate's initial value.

CREATE OR REPLACE FUNCTION @extschema@._processor_create_state(p @extschema@.processor_catalog, caller regrole)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
    i integer;
    argt text;
    st text;
    records text := format('@extschema@.%I', 'processor_' || p.processor_id || '_records');
BEGIN
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        CONTINUE WHEN strpos(p.agg_funcs[i], '(') = 0;
        SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure;
        IF NOT FOUND OR ag.aggkind <> 'n' OR ag.aggcombinefn = 0 OR ag.aggfinalextra
           OR (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p' THEN
            RAISE EXCEPTION 'aggregate % cannot be combined', p.agg_funcs[i] USING ERRCODE = 'feature_not_supported';
        END IF;
        argt := @extschema@._processor_agg_type(p, i, 'argument');
        st := format_type(ag.aggtranstype, NULL);
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_partial_' || i, argt,
                       ag.aggtransfn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        -- Combining starts from the aggregate's initial value, as
        -- PostgreSQL's own combine phase does.
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_combine_' || i, st,
                       ag.aggcombinefn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_partial_' || i, argt, caller);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_combine_' || i, st, caller);
    END LOOP;
    IF p.window_type = 'sliding' THEN
        EXECUTE format('CREATE TABLE %s (group_key jsonb NOT NULL, ts timestamptz NOT NULL, lim timestamptz NOT NULL%s)',
                       records,
                       (SELECT string_agg(format(', x_%s %s', j, @extschema@._processor_agg_type(p, j, 'argument')), '' ORDER BY j)
                          FROM generate_series(1, cardinality(p.agg_funcs)) j));
        EXECUTE format('CREATE INDEX ON %s (group_key, ts)', records);
        EXECUTE format('COMMENT ON TABLE %s IS %L', records,
                       format('pg_eventlog processor %s: the records its sliding windows may still need (group key, event time, the watermark it came under, the aggregates'' arguments)', p.name));
        EXECUTE format('ALTER TABLE %s OWNER TO %s', records, caller);
    END IF;
END
$$;

/* -- issue 19: a processor's aggregates bound to their functions' OIDs -- */
CREATE OR REPLACE FUNCTION @extschema@._processor_agg_out(p @extschema@.processor_catalog, i integer, rel text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fin text := format('@extschema@.%I', 'processor_' || p.processor_id || '_final_' || i);
BEGIN
    IF strpos(p.agg_funcs[i], '(') > 0 THEN
        IF to_regproc(fin) IS NULL THEN
            RETURN format('%s.v_%s', rel, i);
        END IF;
        RETURN format('(SELECT %s(c_.s_) FROM (VALUES (%s.v_%s)) AS c_(s_))', fin, rel, i);
    END IF;
    RETURN CASE p.agg_funcs[i] WHEN 'count' THEN format('%s.n_%s', rel, i)
                               WHEN 'avg' THEN format('%1$s.v_%2$s / NULLIF(%1$s.n_%2$s, 0)', rel, i)
                               ELSE format('%s.v_%s', rel, i) END;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_out(@extschema@.processor_catalog, integer, text) IS
'internal: the value of a window processor''s aggregate in a window row';
CREATE OR REPLACE FUNCTION @extschema@._processor_create_state(p @extschema@.processor_catalog, caller regrole)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
    i integer;
    argt text;
    st text;
    records text := format('@extschema@.%I', 'processor_' || p.processor_id || '_records');
BEGIN
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        CONTINUE WHEN strpos(p.agg_funcs[i], '(') = 0;
        SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure;
        IF NOT FOUND OR ag.aggkind <> 'n' OR ag.aggcombinefn = 0 OR ag.aggfinalextra
           OR (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p' THEN
            RAISE EXCEPTION 'aggregate % cannot be combined', p.agg_funcs[i] USING ERRCODE = 'feature_not_supported';
        END IF;
        argt := @extschema@._processor_agg_type(p, i, 'argument');
        st := format_type(ag.aggtranstype, NULL);
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_partial_' || i, argt,
                       ag.aggtransfn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        -- Combining starts from the aggregate's initial value, as
        -- PostgreSQL's own combine phase does.
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_combine_' || i, st,
                       ag.aggcombinefn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s, FINALFUNC = %s%s)',
                           'processor_' || p.processor_id || '_final_' || i, st,
                           ag.aggcombinefn::text, st, ag.aggfinalfn::text,
                           CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        END IF;
        -- CREATE AGGREGATE finds its functions by name and argument types:
        -- a function of that name with closer argument types, put in the
        -- way by a role with CREATE on the schema, would be called instead
        -- of the aggregate's own.  Refuse unless each is the same function.
        IF EXISTS (SELECT FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggfnoid
                    WHERE pr.pronamespace = '@extschema@'::regnamespace
                      AND pr.proname IN ('processor_' || p.processor_id || '_partial_' || i,
                                         'processor_' || p.processor_id || '_combine_' || i,
                                         'processor_' || p.processor_id || '_final_' || i)
                      AND (g.aggtransfn <> CASE WHEN pr.proname LIKE '%\_partial\_%' THEN ag.aggtransfn ELSE ag.aggcombinefn END
                           OR g.aggfinalfn <> CASE WHEN pr.proname LIKE '%\_final\_%' THEN ag.aggfinalfn ELSE 0 END)) THEN
            RAISE EXCEPTION 'the functions of aggregate % are not found by their names', p.agg_funcs[i]
                USING ERRCODE = 'ambiguous_function',
                      DETAIL = 'Another function of the same name as the aggregate''s transition, combine or final function takes closer argument types.',
                      HINT = 'Drop the other function, or keep the aggregate''s functions in a schema where only trusted roles have CREATE.';
        END IF;
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_partial_' || i, argt, caller);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_combine_' || i, st, caller);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                           'processor_' || p.processor_id || '_final_' || i, st, caller);
        END IF;
    END LOOP;
    IF p.window_type = 'sliding' THEN
        EXECUTE format('CREATE TABLE %s (group_key jsonb NOT NULL, ts timestamptz NOT NULL, lim timestamptz NOT NULL%s)',
                       records,
                       (SELECT string_agg(format(', x_%s %s', j, @extschema@._processor_agg_type(p, j, 'argument')), '' ORDER BY j)
                          FROM generate_series(1, cardinality(p.agg_funcs)) j));
        EXECUTE format('CREATE INDEX ON %s (group_key, ts)', records);
        EXECUTE format('COMMENT ON TABLE %s IS %L', records,
                       format('pg_eventlog processor %s: the records its sliding windows may still need (group key, event time, the watermark it came under, the aggregates'' arguments)', p.name));
        EXECUTE format('ALTER TABLE %s OWNER TO %s', records, caller);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) IS
'internal: makes a window processor''s partial, combine and final aggregates and a sliding window''s record buffer, owned by the processor''s owner';
CREATE OR REPLACE FUNCTION @extschema@._processor_drop_aggregates(p @extschema@.processor_catalog)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT pr.oid FROM pg_proc pr
              WHERE pr.pronamespace = '@extschema@'::regnamespace
                AND pr.proname ~ ('^processor_' || p.processor_id || '_(partial|combine|final)_[0-9]+$') LOOP
        EXECUTE format('DROP AGGREGATE %s', f);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_drop_aggregates(@extschema@.processor_catalog) IS
'internal: drops a window processor''s partial, combine and final aggregates';

/* -- issue 19: cheaper window steps (plans kept per session, a running maximum instead of a sort) -- */
CREATE OR REPLACE FUNCTION @extschema@._processor_exec(sql text, result anyelement, VARIADIC args "any")
RETURNS anyelement
AS 'MODULE_PATHNAME', 'el_processor_exec'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._processor_exec(text, anyelement, "any") IS
'internal: runs a statement of a processor''s step with args as $1, $2, ... through a plan the session keeps, as the current user; the first column of its first row, of result''s type';
CREATE OR REPLACE FUNCTION @extschema@._processor_running_max(partition integer, offset_id bigint, ts timestamptz)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'el_processor_running_max'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._processor_running_max(integer, bigint, timestamptz) IS
'internal: in a step''s statement, over a poll''s records in their order, the largest event time of the records of the same partition before this one';
CREATE OR REPLACE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    rv text := '';
    comb text := '';
    sets text := '';
    fmerge text := '';
    head text;
    body text;
    late_out text;
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    g text[];
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        -- any other aggregate with a combine function (streams_windows.sql)
        IF strpos(f, '(') > 0 THEN
            g := @extschema@._processor_agg_sql(p, i);
            xs := xs || g[1]; partials := partials || g[2]; cols := cols || format(', v_%s, n_%s', i, i);
            merge := merge || g[3]; rv := rv || g[4]; comb := comb || g[5]; fmerge := fmerge || g[6];
            sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
            CONTINUE;
        END IF;
        xs := xs || format(', CASE WHEN t_.in_ THEN (%s)::numeric END AS x_%s',
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
        -- sessions: a record as a partial (value, count), and partials combined
        rv := rv || format(', %s AS v_%s, %s AS n_%s',
                           CASE WHEN f = 'count' THEN 'NULL::numeric' ELSE format('e.x_%s', i) END, i,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN '1::bigint'
                                ELSE format('CASE WHEN e.x_%s IS NULL THEN 0 ELSE 1 END::bigint', i) END, i);
        comb := comb || format(', %s, sum(n_%s)::bigint',
                               CASE f WHEN 'min' THEN format('min(v_%s)', i)
                                      WHEN 'max' THEN format('max(v_%s)', i)
                                      WHEN 'count' THEN 'NULL::numeric'
                                      ELSE format('sum(v_%s)', i) END, i);
        sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
        -- a window closed in the step: its row (dc, if any) and the batch's
        -- partial (cl, if any) combined, as "merge" combines them
        fmerge := fmerge || format(', %2$s, coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)', i,
                                   CASE f WHEN 'min' THEN format('least(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'max' THEN format('greatest(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'count' THEN 'NULL::numeric'
                                          ELSE format('CASE WHEN dc.v_%1$s IS NULL THEN cl.v_%1$s WHEN cl.v_%1$s IS NULL THEN dc.v_%1$s ELSE dc.v_%1$s + cl.v_%1$s END', i) END);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  A session window's record is late when the session of
     * that record alone would be closed (its time + gap + lateness before
     * the watermark), so that lateness does not depend on how the records
     * of other partitions were cut into steps.  A record's watermark
     * ("wm_") is the largest event time before it in its partition (the
     * progress row's, or an earlier record's of the batch: "rm_", which
     * _processor_running_max computes as the poll returns the records,
     * each partition's in offset order), less max_out_of_orderness.  "b"
     * is kept a subquery of its own (OFFSET 0), so that rm_ is computed
     * once per record as the poll returns it, whatever the join with
     * "prev" does.
     */
    head := format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, ct.c_) AS lim_,
           (%7$s) AS late_
      FROM (SELECT b.*, coalesce(greatest(prev.m_, b.rm_), '-infinity') - $7 AS wm_
              FROM (SELECT record.partition AS p_, record.offset_id AS o_, t_.ts_, t_.in_,
                           CASE WHEN t_.in_ THEN %4$s END AS gk_ %5$s %8$s,
                           @extschema@._processor_running_max(record.partition, record.offset_id, t_.ts_) AS rm_
                      FROM %2$s AS record
                           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%6$s) IS TRUE END AS in_
                                                 FROM (SELECT %1$s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_
                     OFFSET 0) AS b
                   LEFT JOIN prev ON prev.p_ = b.p_) AS w_
           CROSS JOIN ct),
pe AS MATERIALIZED (
    SELECT e.p_, max(e.ts_) AS m_, count(*) AS n_, count(*) FILTER (WHERE e.in_ AND e.late_) AS l_,
           count(*) FILTER (WHERE e.ts_ IS NULL) AS z_
      FROM e GROUP BY e.p_),$f$,
        ts, batch, progress, gk, xs, filter,
        CASE WHEN p.window_type = 'session'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, ct.c_)'
             WHEN p.window_type = 'sliding'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, ct.c_)'
             ELSE 'date_bin($10, w_.ts_, ''1970-01-01 00:00:00+00'') + $8 + $9 <= greatest(w_.wm_, ct.c_)' END,
        CASE WHEN p.late = 'topic'
             THEN ', record.key AS rk_, record.value AS rv_, record.headers AS rh_, record.event_time AS ret_'
             ELSE '' END);

    -- Late records to the late-records topic, in offset order.
    late_out := CASE WHEN p.late = 'topic'
        THEN 'lt AS MATERIALIZED (SELECT count(@extschema@.produce($13, x.rk_, x.rv_, x.rh_, NULL, x.ret_)) AS n '
             '  FROM (SELECT e.* FROM e WHERE e.in_ AND e.late_ ORDER BY e.p_, e.o_) AS x)'
        ELSE 'lt AS (SELECT 0::bigint AS n)' END;

    IF p.window_type = 'session' THEN
        /*
         * Sessions: the records that count ("r", each a session of one
         * record), and the sessions in state that one of them reaches
         * (within gap of its start or end, as Kafka Streams' findSessions)
         * are laid on one line per group key and merged where they come
         * within gap of each other (gaps and islands: a new session starts
         * where a start is more than gap after every end before it).  The
         * merged sessions replace the ones they absorbed: a merged session
         * keeps the start of one of them (upserted) or deletes it.  Their
         * rows in the sink go too ("gone": the absorbed sessions that were
         * written, in full or as changes).
         */
        body := format($f$
r AS (SELECT e.gk_, e.ts_ AS s_, e.ts_ AS e_ %1$s FROM e WHERE e.in_ AND NOT e.late_),
o AS MATERIALIZED (SELECT w.* FROM %2$s AS w
                    WHERE EXISTS (SELECT FROM r WHERE r.gk_ = w.group_key
                                     AND r.s_ >= w.window_start - $8 AND r.s_ <= w.window_end + $8)),
iv AS (SELECT r.* FROM r UNION ALL SELECT o.group_key, o.window_start, o.window_end %3$s FROM o),
isl AS (SELECT y.*, count(*) FILTER (WHERE y.mx_ IS NULL OR y.s_ > y.mx_ + $8)
                        OVER (PARTITION BY y.gk_ ORDER BY y.s_, y.e_ ROWS UNBOUNDED PRECEDING) AS i_
          FROM (SELECT iv.*, max(iv.e_) OVER (PARTITION BY iv.gk_ ORDER BY iv.s_, iv.e_
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx_
                  FROM iv) AS y),
agg AS (SELECT min(s_) AS ws_, max(e_) AS we_, gk_ %4$s FROM isl GROUP BY gk_, i_),
gone AS (SELECT o.* FROM o WHERE NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key
                                                AND agg.ws_ = o.window_start AND agg.we_ = o.window_end)),
d AS (DELETE FROM %2$s AS w USING o
       WHERE w.window_start = o.window_start AND w.group_key = o.group_key
         AND NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key AND agg.ws_ = o.window_start)),
u AS (INSERT INTO %2$s AS t (window_start, window_end, group_key %3$s, closed)
      SELECT agg.*, agg.we_ + $8 + $12 < (SELECT ct.c_ FROM ct) FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %5$s, closed = excluded.closed
      RETURNING t.*),
%6$s,$f$,
            rv, windows, cols, comb, sets,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', '($11 OR gone.closed)'));
    ELSIF p.window_type = 'sliding' THEN
        body := @extschema@._processor_sliding_sql(p, partials, cols, sets);
    ELSE
        /*
         * Tumbling and hopping windows: the batch's partials combine with
         * the window rows.  A window is written to the sink as it changes
         * (emit changes), or when it closes, or, closed already, when a late
         * record updates it (late => 'update', within the retention).
         */
        body := format($f$
a AS (%1$s),
agg (window_start, window_end, group_key %4$s, closed) AS (
    SELECT ws_, ws_ + $8, gk_ %2$s, ws_ + $8 + $12 <= (SELECT ct.c_ FROM ct) FROM a GROUP BY ws_, gk_),$f$,
            CASE WHEN p.size = p.advance
                 THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
                 ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                      'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                      'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END,
            partials, windows, cols);
        IF p.time_mode = 'event' AND coalesce(p.retention, '0') = '0'
           AND NOT (p.late = 'topic' AND p.late_topic IS NOT DISTINCT FROM p.sink_topic) THEN
            /*
             * Close in the step the windows that the step's own watermark
             * closes, instead of writing them into the window rows for the
             * closing statement to delete (most windows of a large step):
             * "wl" is a lower bound of the watermark run_processor computes
             * after this statement (the least over all partitions, active
             * or idle, of the largest event time seen, this batch's
             * included, minus max_out_of_orderness), NULL when it closes
             * nothing new.  The batch's partials of the windows it closes
             * ("cl") combine with their rows, deleted ("dc"), and are
             * written as the closing statement would have written them
             * (emit final: every window it closes; emit changes: those the
             * batch changed); the other partials are upserted ("u0").  The
             * closing statement then closes what the watermark passes
             * beyond "wl" (usually nothing); windows close in the same
             * order, in the same transaction.  Without a retention a
             * closed window is deleted as it closes, so nothing else
             * changes.
             */
            body := body || format($f$
bm AS (SELECT pe.p_, pe.m_ FROM pe),
wl AS (SELECT CASE WHEN x.w_ > (SELECT ct.c_ FROM ct) THEN x.w_ END AS w_
         FROM (SELECT min(coalesce(greatest(prev.m_, bm.m_), '-infinity')) - $7 AS w_
                 FROM pg_catalog.generate_series(0, $4 - 1) AS g(p_)
                 LEFT JOIN prev ON prev.p_ = g.p_ LEFT JOIN bm ON bm.p_ = g.p_) AS x),
cl AS (SELECT agg.* FROM agg, wl WHERE agg.window_end + $12 <= wl.w_),
dc AS (DELETE FROM %1$s AS w USING wl
        WHERE w.window_end + $12 <= wl.w_ AND EXISTS (SELECT FROM wl WHERE wl.w_ IS NOT NULL) RETURNING w.*),
u0 AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
       SELECT agg.* FROM agg, wl WHERE wl.w_ IS NULL OR agg.window_end + $12 > wl.w_
       ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                   closed = t.closed OR excluded.closed
       RETURNING t.*),
u AS (SELECT * FROM u0
      UNION ALL
      SELECT coalesce(cl.window_start, dc.window_start), coalesce(cl.window_end, dc.window_end),
             coalesce(cl.group_key, dc.group_key) %4$s, true
        FROM cl FULL JOIN dc ON dc.window_start = cl.window_start AND dc.group_key = cl.group_key
       WHERE cl.window_start IS NOT NULL OR NOT ($11 OR dc.closed)),
%5$s,$f$,
                windows, cols, merge, fmerge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        ELSE
            body := body || format($f$
u AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%4$s,$f$,
                windows, cols, merge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        END IF;
    END IF;

    RETURN head || body || format($f$
%2$s,
pu AS (INSERT INTO %1$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT pe.p_, pe.m_, pg_catalog.now(), pe.n_, pe.l_, pe.z_ FROM pe
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT (SELECT coalesce(sum(pe.n_), 0)::bigint FROM pe) FROM so, lt$f$, progress, late_out);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_step_sql(@extschema@.processor_catalog, text) IS
'internal: the statement of one step of a processor over a batch of records';
CREATE OR REPLACE FUNCTION @extschema@.run_processor(name text, max_records integer DEFAULT 1000, wait boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    tid integer;
    n integer;
    consumed bigint;
    waited interval;
    wm timestamptz;
    ct timestamptz;
BEGIN
    IF max_records IS NULL OR max_records < 1 THEN
        RAISE EXCEPTION 'max_records must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF wait IS NULL THEN
        RAISE EXCEPTION 'wait must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    -- The processor worker (src/processor_worker.c) runs this as the owner
    -- already, in a security-restricted operation, which forbids SET ROLE.
    IF NOT @extschema@._processor_worker_step(p.processor_id) THEN
        -- The owner's SQL could SET ROLE to any role the session user may
        -- (PL/pgSQL cannot make this a security-restricted operation): run it
        -- only in sessions whose user has no role the owner does not have.
        IF NOT pg_has_role(p.owner, session_user, 'MEMBER') THEN
            RAISE EXCEPTION 'permission denied to run processor "%" in a session of role %', p.name, session_user
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('The processor''s SQL runs as its owner %s, and could take the roles of the session''s user.', p.owner),
                      HINT = format('Run it in a session of its owner (SET SESSION AUTHORIZATION %s, or connect as it).', p.owner);
        END IF;
        -- Run the owner's SQL as the owner, never as the caller: the function's
        -- SET clause restores the role on exit.
        PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);
    END IF;

    SELECT c.topic_id, c.partitions INTO tid, n FROM @extschema@.topic_catalog c WHERE c.name = p.source_topic;
    IF tid IS DISTINCT FROM p.source_topic_id THEN
        RAISE EXCEPTION 'source topic "%" of processor "%" was dropped', p.source_topic, p.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Drop the processor with eventlog.drop_processor.';
    END IF;

    -- One step of a processor at a time: the others wait, or skip.
    BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', progress);
    EXCEPTION WHEN lock_not_available THEN
        IF NOT wait THEN
            RETURN NULL;
        END IF;
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
        -- The step we waited for released this lock a moment before the
        -- partitions its poll held (advisory locks go last): a poll now
        -- would skip them and read nothing.  Let it look again (a long
        -- poll retries partitions other transactions hold every second).
        waited := interval '2 seconds';
    END;
    IF p.kind = 'join' THEN
        RETURN @extschema@._join_step(p, max_records, waited);
    END IF;

    -- The step's statements run through plans the session keeps
    -- (_processor_exec), as EXECUTE ... USING would run them.
    consumed := @extschema@._processor_exec(
        @extschema@._processor_step_sql(p, '@extschema@.poll($1, $2, $3, partitions => $4, wait => $6)'),
        NULL::bigint,
        p.source_topic, p.group_name, max_records, n, p.sink_topic, waited,
        p.max_out_of_orderness, CASE WHEN p.window_type = 'session' THEN p.gap ELSE p.size END,
        p.allowed_lateness + CASE WHEN p.late = 'update' THEN p.retention ELSE '0' END,
        p.advance, p.emit = 'changes', p.allowed_lateness, p.late_topic);
    IF p.kind = 'map' THEN
        RETURN consumed;
    END IF;

    -- The processor's watermark: processing time, or the least watermark of
    -- the partitions that are active (read recently, or with records left
    -- to read); when every partition is idle, the greatest.
    IF p.time_mode = 'processing' THEN
        wm := now();
    ELSE
        wm := @extschema@._processor_exec(format($q$
            SELECT CASE WHEN bool_or(active) THEN min(coalesce(m, '-infinity')) FILTER (WHERE active)
                        ELSE max(m) END - $3
              FROM (SELECT t.max_event_time AS m,
                           NOT (coalesce(t.last_record_at, '-infinity') < now() - $4
                                AND coalesce(o.next_offset, 0) >= @extschema@.last_stable_offset($1, g.p)) AS active
                      FROM generate_series(0, $5 - 1) AS g(p)
                      LEFT JOIN %s t ON t.partition = g.p
                      LEFT JOIN @extschema@.group_offsets o
                             ON o.topic_id = $6 AND o.group_name = $2 AND o.partition = g.p) s$q$, progress),
            NULL::timestamptz,
            p.source_topic, p.group_name, p.max_out_of_orderness, p.idle_timeout, n, tid);
    END IF;
    ct := @extschema@._processor_exec(format('SELECT closed_through FROM %s WHERE partition = -1', progress),
                                      NULL::timestamptz, 0);
    IF wm IS NOT NULL AND wm > '-infinity' AND (ct IS NULL OR wm > ct) THEN
        PERFORM @extschema@._processor_exec(@extschema@._processor_close_sql(p), NULL::bigint,
            wm, p.allowed_lateness, p.emit = 'final',
            coalesce(p.retention, '0') + CASE WHEN p.window_type = 'session' THEN p.gap ELSE '0' END, p.gap);
        PERFORM @extschema@._processor_exec(
            format('INSERT INTO %s AS t (partition, closed_through) VALUES (-1, $1) '
                   'ON CONFLICT (partition) DO UPDATE SET closed_through = excluded.closed_through', progress),
            NULL::bigint, wm);
    END IF;
    RETURN consumed;
END
$$;
COMMENT ON FUNCTION @extschema@.run_processor(text, integer, boolean) IS
'one exactly-once step of a processor, as its owner, in the caller''s transaction: reads up to max_records through the processor''s group, updates its state and sink, closes the windows its watermark passed; NULL when wait is false and another step of the processor is in progress';

/* -- issue 19: a processor's aggregates: no user type's input function as the owner; outputs by the aggregate's final function -- */
CREATE OR REPLACE FUNCTION @extschema@._processor_parse_aggregate(a text)
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m text[] := regexp_match(a, '^\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)?)\s*\((.*)\)\s*(?:as\s+([A-Za-z_][A-Za-z0-9_]*))?\s*$', 'i');
    fname text;
    arg text;
    typ oid;
    castable boolean;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
BEGIN
    IF m IS NULL OR btrim(m[2]) = '' OR (btrim(m[2]) = '*' AND lower(m[1]) <> 'count') THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An aggregate is count(*), or an aggregate function of one expression over the record, optionally followed by AS and a name.';
    END IF;
    fname := lower(regexp_replace(m[1], '\s', '', 'g'));
    arg := btrim(m[2]);
    IF fname = 'count' THEN
        RETURN ARRAY['count', arg, m[3], 'count'];
    END IF;
    -- The argument's type, without evaluating it (an outer join's NULL).
    EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                   '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                   arg) INTO typ;
    IF typ = 'unknown'::regtype THEN
        typ := 'text'::regtype;
    END IF;
    IF fname IN ('sum', 'min', 'max', 'avg') THEN
        -- Numbers, and whatever casts to numeric, as before: a numeric state.
        BEGIN
            EXECUTE format('SELECT NULL::%s::numeric', format_type(typ, NULL));
            castable := true;
        EXCEPTION WHEN cannot_coerce THEN
            castable := false;
        END;
        IF castable THEN
            RETURN ARRAY[fname, arg, m[3], fname];
        END IF;
    END IF;
    proc := to_regprocedure(format('%s(%s)', regexp_replace(m[1], '\s', '', 'g'), format_type(typ, NULL)));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(regexp_replace(m[1], '\s', '', 'g'));
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = 1
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND (SELECT t.typtype FROM pg_type t WHERE t.oid = pr.proargtypes[0]) = 'p'
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], format_type(typ, NULL)
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes one argument of a type it takes (cast it), and is named with its schema unless it is in pg_catalog.';
    END IF;
    SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = proc;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function % is not an aggregate', proc USING ERRCODE = 'wrong_object_type';
    END IF;
    IF ag.aggkind <> 'n' OR ag.aggcombinefn = 0 THEN
        RAISE EXCEPTION 'aggregate % cannot be combined', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = 'A window keeps a state per aggregate and combines it with the states of new records: the aggregate needs a combine function.';
    END IF;
    IF (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p'
       OR (SELECT t.typtype FROM pg_type t WHERE t.oid = typ) = 'p' OR ag.aggfinalextra THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('A window keeps an aggregate''s state in a column; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL)),
            HINT = 'Count, sum, min, max and avg of numbers have a state of their own; for stddev or variance, cast the argument to double precision.';
    END IF;
    -- The processor's aggregates are made by the extension's owner, and
    -- CREATE AGGREGATE reads INITCOND with the state type's input function:
    -- for a type of the user's (a domain's CHECK, a composite's columns),
    -- user code would run as that owner.  Built-in types only, then.
    IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
        RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('Its state type %s is not a built-in type, and the processor would read its initial value %L with that type''s input function as the extension''s owner.',
                            format_type(ag.aggtranstype, NULL), ag.agginitval),
            HINT = 'Use an aggregate whose state is of a built-in type, or one without an initial value.';
    END IF;
    IF NOT (has_function_privilege(proc, 'EXECUTE') AND has_function_privilege(ag.aggtransfn, 'EXECUTE')
            AND has_function_privilege(ag.aggcombinefn, 'EXECUTE')
            AND (ag.aggfinalfn = 0 OR has_function_privilege(ag.aggfinalfn, 'EXECUTE'))) THEN
        RAISE EXCEPTION 'permission denied for aggregate %', proc USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A window processor calls the aggregate''s transition, combine and final functions as its owner.';
    END IF;
    RETURN ARRAY[proc::text, arg, m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate(text) IS
'internal: an aggregate of a window processor, checked as the caller: the entry of agg_funcs (count, sum, min, max, avg, or an aggregate with a combine function as a regprocedure), its argument, its name, its function''s name';
CREATE OR REPLACE FUNCTION @extschema@._processor_create_state(p @extschema@.processor_catalog, caller regrole)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
    i integer;
    argt text;
    st text;
    records text := format('@extschema@.%I', 'processor_' || p.processor_id || '_records');
BEGIN
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        CONTINUE WHEN strpos(p.agg_funcs[i], '(') = 0;
        SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure;
        IF NOT FOUND OR ag.aggkind <> 'n' OR ag.aggcombinefn = 0 OR ag.aggfinalextra
           OR (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p' THEN
            RAISE EXCEPTION 'aggregate % cannot be combined', p.agg_funcs[i] USING ERRCODE = 'feature_not_supported';
        END IF;
        -- This runs as the extension's owner: no input function of a type
        -- of the user's may read an INITCOND here (_processor_parse_aggregate).
        IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
            RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', p.agg_funcs[i]
                USING ERRCODE = 'feature_not_supported';
        END IF;
        argt := @extschema@._processor_agg_type(p, i, 'argument');
        st := format_type(ag.aggtranstype, NULL);
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_partial_' || i, argt,
                       ag.aggtransfn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        -- Combining starts from the aggregate's initial value, as
        -- PostgreSQL's own combine phase does.
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_combine_' || i, st,
                       ag.aggcombinefn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s, FINALFUNC = %s%s)',
                           'processor_' || p.processor_id || '_final_' || i, st,
                           ag.aggcombinefn::text, st, ag.aggfinalfn::text,
                           CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        END IF;
        -- CREATE AGGREGATE finds its functions by name and argument types:
        -- a function of that name with closer argument types, put in the
        -- way by a role with CREATE on the schema, would be called instead
        -- of the aggregate's own.  Refuse unless each is the same function.
        IF EXISTS (SELECT FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggfnoid
                    WHERE pr.pronamespace = '@extschema@'::regnamespace
                      AND pr.proname IN ('processor_' || p.processor_id || '_partial_' || i,
                                         'processor_' || p.processor_id || '_combine_' || i,
                                         'processor_' || p.processor_id || '_final_' || i)
                      AND (g.aggtransfn <> CASE WHEN pr.proname LIKE '%\_partial\_%' THEN ag.aggtransfn ELSE ag.aggcombinefn END
                           OR g.aggfinalfn <> CASE WHEN pr.proname LIKE '%\_final\_%' THEN ag.aggfinalfn ELSE 0 END)) THEN
            RAISE EXCEPTION 'the functions of aggregate % are not found by their names', p.agg_funcs[i]
                USING ERRCODE = 'ambiguous_function',
                      DETAIL = 'Another function of the same name as the aggregate''s transition, combine or final function takes closer argument types.',
                      HINT = 'Drop the other function, or keep the aggregate''s functions in a schema where only trusted roles have CREATE.';
        END IF;
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_partial_' || i, argt, caller);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_combine_' || i, st, caller);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                           'processor_' || p.processor_id || '_final_' || i, st, caller);
        END IF;
    END LOOP;
    IF p.window_type = 'sliding' THEN
        EXECUTE format('CREATE TABLE %s (group_key jsonb NOT NULL, ts timestamptz NOT NULL, lim timestamptz NOT NULL%s)',
                       records,
                       (SELECT string_agg(format(', x_%s %s', j, @extschema@._processor_agg_type(p, j, 'argument')), '' ORDER BY j)
                          FROM generate_series(1, cardinality(p.agg_funcs)) j));
        EXECUTE format('CREATE INDEX ON %s (group_key, ts)', records);
        EXECUTE format('COMMENT ON TABLE %s IS %L', records,
                       format('pg_eventlog processor %s: the records its sliding windows may still need (group key, event time, the watermark it came under, the aggregates'' arguments)', p.name));
        EXECUTE format('ALTER TABLE %s OWNER TO %s', records, caller);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) IS
'internal: makes a window processor''s partial, combine and final aggregates and a sliding window''s record buffer, owned by the processor''s owner';
CREATE OR REPLACE FUNCTION @extschema@._processor_agg_out(p @extschema@.processor_catalog, i integer, rel text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fin text := format('@extschema@.%I', 'processor_' || p.processor_id || '_final_' || i);
BEGIN
    IF strpos(p.agg_funcs[i], '(') > 0 THEN
        -- Whether there is a final function: the aggregate's, not whether
        -- the final aggregate is there (a state must never be written as
        -- if it were the value: a missing final aggregate is an error).
        IF (SELECT g.aggfinalfn FROM pg_aggregate g WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure) = 0 THEN
            RETURN format('%s.v_%s', rel, i);
        END IF;
        RETURN format('(SELECT %s(c_.s_) FROM (VALUES (%s.v_%s)) AS c_(s_))', fin, rel, i);
    END IF;
    RETURN CASE p.agg_funcs[i] WHEN 'count' THEN format('%s.n_%s', rel, i)
                               WHEN 'avg' THEN format('%1$s.v_%2$s / NULLIF(%1$s.n_%2$s, 0)', rel, i)
                               ELSE format('%s.v_%s', rel, i) END;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_out(@extschema@.processor_catalog, integer, text) IS
'internal: the value of a window processor''s aggregate in a window row';

-- _kafka_fetch can pack many records in a row (packed), for the gateway.
DROP FUNCTION @extschema@._kafka_fetch(text[], integer[], bigint[], integer[], integer, bigint[], bigint);
/*
 * Kafka Fetch: records of each (topics[i], partitions[i]) from offsets[i]
 * on, at most max_records[i] of them, and only while the bytes of the
 * records before a record (key, value and headers) are below max_bytes[i]
 * (NULL: no limit): the gateway sizes max_records from the records it saw
 * before, and a partition of records much larger than those must not send
 * it gigabytes to build a response of partition_max_bytes.  The same for
 * the response: once a record was read, an item reads only while the bytes
 * of every record read before are below total_max_bytes (NULL: no limit),
 * so that a Fetch of a thousand partitions stops reading at the response's
 * max_bytes; the call's first record is read whatever its size (Kafka
 * returns it, so that a consumer progresses).  Rows with
 * k_offset NULL give each
 * item's outcome: a Kafka error code (0, 1 OFFSET_OUT_OF_RANGE, 3
 * UNKNOWN_TOPIC_OR_PARTITION, 29 TOPIC_AUTHORIZATION_FAILED, -1 anything
 * else, logged as a warning), its log start offset and its last stable
 * offset, taken after its records were read, so every record returned lies
 * below it.  The others are records: timestamps are event_time, a JSON
 * topic's key and value their UTF-8 text, its headers object's members
 * headers (a string's text, null, or other JSON's text).  When no item has
 * a record or an error and wait_ms > 0, it long-polls (as _kafka_await)
 * and reads again.  In C (src/kafka_fetch.c): each partition is read as
 * read_binary (read) reads it, with its checks in its order, and only up to
 * the record that reaches max_bytes[i] or total_max_bytes; when the stable
 * offsets show nothing readable, it waits without reading first.  With
 * packed, an item's records come as a few rows (k_item, k_offset the
 * first record's, k_value) whose k_value holds the records one after the
 * other, each its offset, a byte of flags (1 time, 2 key, 4 value, 8
 * headers: which follow), the time's microseconds, then the key, value
 * and headers (their binary format) as a length and bytes: what the
 * gateway asks for, so that a record costs the backend no row of its own.
 */
CREATE FUNCTION @extschema@._kafka_fetch(topics text[], partitions integer[], offsets bigint[],
                                         max_records integer[], wait_ms integer,
                                         max_bytes bigint[] DEFAULT NULL,
                                         total_max_bytes bigint DEFAULT NULL,
                                         packed boolean DEFAULT false)
RETURNS TABLE (k_item integer, k_error smallint, k_log_start bigint, k_stable bigint,
               k_offset bigint, k_time timestamptz, k_key bytea, k_value bytea,
               k_headers @extschema@.header[])
AS 'MODULE_PATHNAME', 'el_kafka_fetch'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_fetch(text[], integer[], bigint[], integer[], integer, bigint[], bigint, boolean) IS
'internal: the Kafka gateway''s Fetch: the records of each partition from its offset on (up to max_bytes of them, and up to total_max_bytes over all; packed: many in a row), and each partition''s error code, log start and last stable offset, after a long poll of up to wait_ms when nothing is readable';
-- Cheaper window steps (issue 19 benchmark): a window row's unique index leads
-- with the group key's hash, records are grouped by their group values
-- where that makes the same groups, the record's watermark comes from
-- _processor_record_watermark, and with emit final the windows a step
-- keeps open are not returned for writing.
CREATE OR REPLACE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    rv text := '';
    comb text := '';
    sets text := '';
    fmerge text := '';
    head text;
    body text;
    late_out text;
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    g text[];
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
    tsx text;
    inx text;
    lat text := '';
    raw boolean;
    gr text := '';
    gby text := 'ws_';
    typ regtype;
    coll text;
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    /*
     * A record's time ("tsx") and whether it counts ("inx"), each evaluated
     * once per record: in a LATERAL subquery of their own, unless the time
     * is the record's event_time column (or now(), the same all through
     * the statement) and there is no filter, when reading them again is
     * the same as keeping them, and the subquery (three executor nodes
     * started again for every record) is not needed.
     */
    IF p.where_clause IS NULL
       AND (p.time_mode = 'processing' OR p.event_time_expr ~* '^\s*(record\s*\.\s*)?event_time\s*$') THEN
        tsx := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()' ELSE 'record.event_time' END;
        inx := format('(%s IS NOT NULL)', tsx);
    ELSE
        tsx := 't_.ts_';
        inx := 't_.in_';
        lat := format($f$
                           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%s) IS TRUE END AS in_
                                                 FROM (SELECT %s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_$f$, filter, ts);
    END IF;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    /*
     * Tumbling and hopping windows group a batch by the group key, a jsonb
     * array of the group_by values, built for every record.  Where equal
     * values make equal jsonb and unequal values unequal jsonb (the types
     * below; text only in a deterministic collation, where equal means the
     * same bytes, as in jsonb: not citext nor a case-insensitive
     * collation), grouping by the values themselves makes the same groups,
     * and the jsonb is built once per group ("raw").  The types are found
     * without evaluating the expressions (an outer join's NULL).
     */
    raw := p.window_type IN ('tumbling', 'hopping');
    FOR i IN 1 .. ng LOOP
        EXIT WHEN NOT raw;
        EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_) FROM (SELECT 1) AS d_ LEFT JOIN '
                       '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                       p.group_by[i]) INTO typ;
        raw := typ IN ('boolean'::regtype, 'smallint'::regtype, 'integer'::regtype, 'bigint'::regtype,
                       'text'::regtype, 'character varying'::regtype, 'uuid'::regtype, 'date'::regtype,
                       'timestamp without time zone'::regtype, 'timestamp with time zone'::regtype);
        IF raw AND typ IN ('text'::regtype, 'character varying'::regtype) THEN
            EXECUTE format('SELECT pg_catalog.pg_collation_for(s_.x_) FROM (SELECT 1) AS d_ LEFT JOIN '
                           '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                           p.group_by[i]) INTO coll;
            raw := coll IS NULL OR (SELECT c.collisdeterministic FROM pg_collation c WHERE c.oid = coll::regcollation);
        END IF;
        gr := gr || format(', CASE WHEN %s THEN (%s) END AS gr%s_', inx, p.group_by[i], i);
        gby := gby || format(', gr%s_', i);
    END LOOP;
    IF raw THEN
        gk := 'pg_catalog.jsonb_build_array(';
        FOR i IN 1 .. ng LOOP
            gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || format('gr%s_', i);
        END LOOP;
        gk := gk || ')';
    ELSE
        gr := format(', CASE WHEN %s THEN %s END AS gk_', inx, gk);
        gk := 'gk_';
        gby := 'ws_, gk_';
    END IF;
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        -- any other aggregate with a combine function (streams_windows.sql)
        IF strpos(f, '(') > 0 THEN
            g := @extschema@._processor_agg_sql(p, i);
            xs := xs || format(', CASE WHEN %s THEN (%s)::%s END AS x_%s', inx, p.agg_args[i],
                               @extschema@._processor_agg_type(p, i, 'argument'), i);
            partials := partials || g[2]; cols := cols || format(', v_%s, n_%s', i, i);
            merge := merge || g[3]; rv := rv || g[4]; comb := comb || g[5]; fmerge := fmerge || g[6];
            sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
            CONTINUE;
        END IF;
        xs := xs || format(', CASE WHEN %s THEN (%s)::numeric END AS x_%s', inx,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
        -- sessions: a record as a partial (value, count), and partials combined
        rv := rv || format(', %s AS v_%s, %s AS n_%s',
                           CASE WHEN f = 'count' THEN 'NULL::numeric' ELSE format('e.x_%s', i) END, i,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN '1::bigint'
                                ELSE format('CASE WHEN e.x_%s IS NULL THEN 0 ELSE 1 END::bigint', i) END, i);
        comb := comb || format(', %s, sum(n_%s)::bigint',
                               CASE f WHEN 'min' THEN format('min(v_%s)', i)
                                      WHEN 'max' THEN format('max(v_%s)', i)
                                      WHEN 'count' THEN 'NULL::numeric'
                                      ELSE format('sum(v_%s)', i) END, i);
        sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
        -- a window closed in the step: its row (dc, if any) and the batch's
        -- partial (cl, if any) combined, as "merge" combines them
        fmerge := fmerge || format(', %2$s, coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)', i,
                                   CASE f WHEN 'min' THEN format('least(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'max' THEN format('greatest(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'count' THEN 'NULL::numeric'
                                          ELSE format('CASE WHEN dc.v_%1$s IS NULL THEN cl.v_%1$s WHEN cl.v_%1$s IS NULL THEN dc.v_%1$s ELSE dc.v_%1$s + cl.v_%1$s END', i) END);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  A session window's record is late when the session of
     * that record alone would be closed (its time + gap + lateness before
     * the watermark), so that lateness does not depend on how the records
     * of other partitions were cut into steps.  A record's watermark
     * ("wm_") is the largest event time before it in its partition (the
     * progress row's, or an earlier record's of the batch), less
     * max_out_of_orderness: _processor_record_watermark computes it as the
     * poll returns the records, each partition's in offset order, from the
     * progress rows (read once, as arrays) and the records before.  "w_"
     * is kept a subquery of its own (OFFSET 0), so that it is computed
     * once per record as the poll returns it; so is closed_through ("c_",
     * an InitPlan), where a join would cost a node per record.
     */
    head := format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, w_.c_) AS lim_,
           (%7$s) AS late_
      FROM (SELECT record.partition AS p_, record.offset_id AS o_, %1$s AS ts_, %6$s AS in_
                   %4$s %5$s %8$s,
                   @extschema@._processor_record_watermark(record.partition, record.offset_id, %1$s,
                       (SELECT pg_catalog.array_agg(prev.p_ ORDER BY prev.p_) FROM prev),
                       (SELECT pg_catalog.array_agg(prev.m_ ORDER BY prev.p_) FROM prev)) - $7 AS wm_,
                   (SELECT ct.c_ FROM ct) AS c_
              FROM %2$s AS record%9$s
             OFFSET 0) AS w_),
pe AS MATERIALIZED (
    SELECT e.p_, max(e.ts_) AS m_, count(*) AS n_, count(*) FILTER (WHERE e.in_ AND e.late_) AS l_,
           count(*) FILTER (WHERE e.ts_ IS NULL) AS z_
      FROM e GROUP BY e.p_),$f$,
        tsx, batch, progress, gr, xs, inx,
        CASE WHEN p.window_type = 'session'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, w_.c_)'
             WHEN p.window_type = 'sliding'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, w_.c_)'
             ELSE 'date_bin($10, w_.ts_, ''1970-01-01 00:00:00+00'') + $8 + $9 <= greatest(w_.wm_, w_.c_)' END,
        CASE WHEN p.late = 'topic'
             THEN ', record.key AS rk_, record.value AS rv_, record.headers AS rh_, record.event_time AS ret_'
             ELSE '' END,
        lat);

    -- Late records to the late-records topic, in offset order.
    late_out := CASE WHEN p.late = 'topic'
        THEN 'lt AS MATERIALIZED (SELECT count(@extschema@.produce($13, x.rk_, x.rv_, x.rh_, NULL, x.ret_)) AS n '
             '  FROM (SELECT e.* FROM e WHERE e.in_ AND e.late_ ORDER BY e.p_, e.o_) AS x)'
        ELSE 'lt AS (SELECT 0::bigint AS n)' END;

    IF p.window_type = 'session' THEN
        /*
         * Sessions: the records that count ("r", each a session of one
         * record), and the sessions in state that one of them reaches
         * (within gap of its start or end, as Kafka Streams' findSessions)
         * are laid on one line per group key and merged where they come
         * within gap of each other (gaps and islands: a new session starts
         * where a start is more than gap after every end before it).  The
         * merged sessions replace the ones they absorbed: a merged session
         * keeps the start of one of them (upserted) or deletes it.  Their
         * rows in the sink go too ("gone": the absorbed sessions that were
         * written, in full or as changes).
         */
        body := format($f$
r AS (SELECT e.gk_, e.ts_ AS s_, e.ts_ AS e_ %1$s FROM e WHERE e.in_ AND NOT e.late_),
o AS MATERIALIZED (SELECT w.* FROM %2$s AS w
                    WHERE EXISTS (SELECT FROM r WHERE r.gk_ = w.group_key
                                     AND r.s_ >= w.window_start - $8 AND r.s_ <= w.window_end + $8)),
iv AS (SELECT r.* FROM r UNION ALL SELECT o.group_key, o.window_start, o.window_end %3$s FROM o),
isl AS (SELECT y.*, count(*) FILTER (WHERE y.mx_ IS NULL OR y.s_ > y.mx_ + $8)
                        OVER (PARTITION BY y.gk_ ORDER BY y.s_, y.e_ ROWS UNBOUNDED PRECEDING) AS i_
          FROM (SELECT iv.*, max(iv.e_) OVER (PARTITION BY iv.gk_ ORDER BY iv.s_, iv.e_
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx_
                  FROM iv) AS y),
agg AS (SELECT min(s_) AS ws_, max(e_) AS we_, gk_ %4$s FROM isl GROUP BY gk_, i_),
gone AS (SELECT o.* FROM o WHERE NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key
                                                AND agg.ws_ = o.window_start AND agg.we_ = o.window_end)),
d AS (DELETE FROM %2$s AS w USING o
       WHERE w.window_start = o.window_start AND w.group_key = o.group_key
         AND NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key AND agg.ws_ = o.window_start)),
u AS (INSERT INTO %2$s AS t (window_start, window_end, group_key %3$s, closed)
      SELECT agg.*, agg.we_ + $8 + $12 < (SELECT ct.c_ FROM ct) FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %5$s, closed = excluded.closed
      RETURNING t.*),
%6$s,$f$,
            rv, windows, cols, comb, sets,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', '($11 OR gone.closed)'));
    ELSIF p.window_type = 'sliding' THEN
        body := @extschema@._processor_sliding_sql(p, partials, cols, sets);
    ELSE
        /*
         * Tumbling and hopping windows: the batch's partials combine with
         * the window rows.  A window is written to the sink as it changes
         * (emit changes), or when it closes, or, closed already, when a late
         * record updates it (late => 'update', within the retention).
         */
        body := format($f$
a AS (%1$s),
agg (window_start, window_end, group_key %4$s, closed) AS (
    SELECT ws_, ws_ + $8, %5$s %2$s, ws_ + $8 + $12 <= (SELECT ct.c_ FROM ct) FROM a GROUP BY %6$s),$f$,
            CASE WHEN p.size = p.advance
                 THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
                 ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                      'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                      'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END,
            partials, windows, cols, gk, gby);
        IF p.time_mode = 'event' AND coalesce(p.retention, '0') = '0'
           AND NOT (p.late = 'topic' AND p.late_topic IS NOT DISTINCT FROM p.sink_topic) THEN
            /*
             * Close in the step the windows that the step's own watermark
             * closes, instead of writing them into the window rows for the
             * closing statement to delete (most windows of a large step):
             * "wl" is a lower bound of the watermark run_processor computes
             * after this statement (the least over all partitions, active
             * or idle, of the largest event time seen, this batch's
             * included, minus max_out_of_orderness), NULL when it closes
             * nothing new.  The batch's partials of the windows it closes
             * ("cl") combine with their rows, deleted ("dc"), and are
             * written as the closing statement would have written them
             * (emit final: every window it closes; emit changes: those the
             * batch changed); the other partials are upserted ("u0").  The
             * closing statement then closes what the watermark passes
             * beyond "wl" (usually nothing); windows close in the same
             * order, in the same transaction.  Without a retention a
             * closed window is deleted as it closes, so nothing else
             * changes.
             */
            body := body || format($f$
bm AS (SELECT pe.p_, pe.m_ FROM pe),
wl AS (SELECT CASE WHEN x.w_ > (SELECT ct.c_ FROM ct) THEN x.w_ END AS w_
         FROM (SELECT min(coalesce(greatest(prev.m_, bm.m_), '-infinity')) - $7 AS w_
                 FROM pg_catalog.generate_series(0, $4 - 1) AS g(p_)
                 LEFT JOIN prev ON prev.p_ = g.p_ LEFT JOIN bm ON bm.p_ = g.p_) AS x),
cl AS (SELECT agg.* FROM agg, wl WHERE agg.window_end + $12 <= wl.w_),
dc AS (DELETE FROM %1$s AS w USING wl
        WHERE w.window_end + $12 <= wl.w_ AND EXISTS (SELECT FROM wl WHERE wl.w_ IS NOT NULL) RETURNING w.*),
u0 AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
       SELECT agg.* FROM agg, wl WHERE wl.w_ IS NULL OR agg.window_end + $12 > wl.w_
       ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                   closed = t.closed OR excluded.closed%6$s),
u (window_start, window_end, group_key %2$s, closed) AS (%7$s
      SELECT coalesce(cl.window_start, dc.window_start), coalesce(cl.window_end, dc.window_end),
             coalesce(cl.group_key, dc.group_key) %4$s, true
        FROM cl FULL JOIN dc ON dc.window_start = cl.window_start AND dc.group_key = cl.group_key
       WHERE cl.window_start IS NOT NULL OR NOT ($11 OR dc.closed)),
%5$s,$f$,
                windows, cols, merge, fmerge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL),
                -- With emit final, what "u0" upserts is never written: its
                -- windows are open (a record of a window the watermark
                -- closed is late, and without a retention no closed window
                -- stays in the state), so it returns nothing to write.
                CASE WHEN p.emit = 'final' THEN '' ELSE E'\n       RETURNING t.*' END,
                CASE WHEN p.emit = 'final' THEN '' ELSE E'SELECT * FROM u0\n      UNION ALL' END);
        ELSE
            body := body || format($f$
u AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%4$s,$f$,
                windows, cols, merge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        END IF;
    END IF;

    RETURN head || body || format($f$
%2$s,
pu AS (INSERT INTO %1$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT pe.p_, pe.m_, pg_catalog.now(), pe.n_, pe.l_, pe.z_ FROM pe
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT (SELECT coalesce(sum(pe.n_), 0)::bigint FROM pe) FROM so, lt$f$, progress, late_out);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_step_sql(@extschema@.processor_catalog, text) IS
'internal: the statement of one step of a processor over a batch of records';
CREATE OR REPLACE FUNCTION @extschema@.__register_processor(spec jsonb)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    caller regrole := @extschema@._caller();
    n integer;
    progress text;
BEGIN
    IF spec IS NULL THEN
        RAISE EXCEPTION 'processor specification must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    p := jsonb_populate_record(NULL::@extschema@.processor_catalog, spec);
    IF p.name IS NULL OR p.name !~ '^[A-Za-z0-9._-]{1,100}$' THEN
        RAISE EXCEPTION 'invalid processor name "%"', left(p.name, 110)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A processor name is 1 to 100 letters, digits, ".", "_" or "-".';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.processor_catalog c WHERE c.name = p.name) THEN
        RAISE EXCEPTION 'processor "%" already exists', p.name USING ERRCODE = 'duplicate_object';
    END IF;
    p.source_topic_id := @extschema@._authorize(p.source_topic, 'consume');
    IF p.sink_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.sink_topic, 'produce');
    END IF;
    IF p.late_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.late_topic, 'produce');
    END IF;
    p.owner := caller;
    p.group_name := 'processor:' || p.name;
    p.created_at := now();
    p.processor_id := nextval(pg_get_serial_sequence('@extschema@.processor_catalog', 'processor_id'));
    INSERT INTO @extschema@.processor_catalog SELECT p.*;
    PERFORM @extschema@._create_group(p.source_topic, p.group_name, coalesce(spec ->> 'start_from', 'earliest'));

    -- State, the owner's: steps run as the owner and write it directly.
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = p.source_topic_id;
    progress := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    EXECUTE format('CREATE TABLE %s (partition integer PRIMARY KEY, max_event_time timestamptz, '
                   'last_record_at timestamptz, records bigint NOT NULL DEFAULT 0, '
                   'late_records bigint NOT NULL DEFAULT 0, null_time_records bigint NOT NULL DEFAULT 0, '
                   'closed_through timestamptz)', progress);
    EXECUTE format('INSERT INTO %s (partition, last_record_at) SELECT g, now() FROM generate_series(-1, %s) g',
                   progress, n - 1);
    EXECUTE format('COMMENT ON TABLE %s IS %L', progress,
                   format('pg_eventlog processor %s: per source partition, the largest event time seen and counters; partition -1: the watermark windows were closed up to', p.name));
    EXECUTE format('ALTER TABLE %s OWNER TO %s', progress, caller);
    -- Watermarks and counters are public, as eventlog.consumer_groups is.
    EXECUTE format('GRANT SELECT ON %s TO PUBLIC', progress);
    IF p.kind = 'window' THEN
        EXECUTE format('CREATE TABLE @extschema@.%I (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, '
                       'group_key jsonb NOT NULL%s, closed boolean NOT NULL DEFAULT false)',
                       'processor_' || p.processor_id || '_windows',
                       (SELECT string_agg(format(', v_%s %s, n_%s bigint NOT NULL DEFAULT 0', i,
                                                 @extschema@._processor_agg_type(p, i, 'state'), i), '' ORDER BY i)
                          FROM generate_series(1, cardinality(p.agg_funcs)) i));
        -- One row per window and group key.  The key's hash comes before
        -- the key itself, so that finding a row compares jsonb only with
        -- the row it finds (an index on the key alone compares jsonb at
        -- every step down the tree: most of a step's upserts).  Equal jsonb
        -- values hash alike, so the index is unique exactly where a key on
        -- (window_start, group_key) would be.  Steps name it in ON CONFLICT.
        EXECUTE format('CREATE UNIQUE INDEX %I ON @extschema@.%I (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key)',
                       'processor_' || p.processor_id || '_windows_key', 'processor_' || p.processor_id || '_windows');
        EXECUTE format('COMMENT ON TABLE @extschema@.%I IS %L', 'processor_' || p.processor_id || '_windows',
                       format('pg_eventlog processor %s: one row per open window (or session) and group key, and per closed one kept for the retention', p.name));
        EXECUTE format('ALTER TABLE @extschema@.%I OWNER TO %s', 'processor_' || p.processor_id || '_windows', caller);
        PERFORM @extschema@._processor_create_state(p, caller);
    END IF;
    RETURN p.processor_id;
END
$$;
COMMENT ON FUNCTION @extschema@.__register_processor(jsonb) IS
'internal: the body of eventlog._register_processor, run as the extension owner on behalf of the caller eventlog._register_processor notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@.__register_processor(jsonb) FROM PUBLIC;
CREATE OR REPLACE FUNCTION @extschema@._processor_sliding_sql(p @extschema@.processor_catalog, partials text, cols text, sets text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    records text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_records');
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    ecols text := (SELECT string_agg(format(', e.x_%s', i), '' ORDER BY i)
                     FROM generate_series(1, cardinality(p.agg_funcs)) i);
BEGIN
    RETURN format($f$
nr AS (SELECT e.gk_ AS group_key, e.ts_ AS ts, e.lim_ AS lim %1$s FROM e WHERE e.in_ AND NOT e.late_),
ins AS (INSERT INTO %2$s SELECT * FROM nr),
ar AS (SELECT r.* FROM %2$s AS r
        WHERE r.group_key IN (SELECT nr.group_key FROM nr)
          AND r.ts >= (SELECT min(nr.ts) FROM nr) - $8 AND r.ts <= (SELECT max(nr.ts) FROM nr) + $8
       UNION ALL SELECT * FROM nr),
c AS (SELECT DISTINCT a.group_key AS gk_, a.ts AS we_
        FROM nr JOIN ar AS a ON a.group_key = nr.group_key AND a.ts >= nr.ts AND a.ts <= nr.ts + $8
       WHERE a.ts + $9 >= nr.lim),
agg AS (SELECT c.we_ - $8, c.we_, c.gk_ %3$s, c.we_ + $12 < (SELECT ct.c_ FROM ct)
          FROM c JOIN ar AS a ON a.group_key = c.gk_ AND a.ts >= c.we_ - $8 AND a.ts <= c.we_ AND c.we_ + $9 >= a.lim
         GROUP BY c.we_, c.gk_ HAVING bool_or(a.ts = c.we_)),
u AS (INSERT INTO %4$s AS t (window_start, window_end, group_key %5$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %6$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%7$s,$f$,
        ecols, records, partials, windows, cols, sets,
        @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
END
$$;
COMMENT ON FUNCTION @extschema@._processor_sliding_sql(@extschema@.processor_catalog, text, text, text) IS
'internal: the part of a sliding window processor''s step that buffers its records and recomputes the windows they change';
CREATE OR REPLACE FUNCTION @extschema@._processor_record_watermark(partition integer, offset_id bigint, ts timestamptz,
                                                        partitions integer[], maxes timestamptz[])
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'el_processor_record_watermark'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._processor_record_watermark(integer, bigint, timestamptz, integer[], timestamptz[]) IS
'internal: in a step''s statement, over a poll''s records in their order, the largest event time of the same partition before this record: the partition''s in maxes (by partitions) or an earlier record''s; -infinity if none';

-- The closing statements of tumbling and hopping windows scan the index range
-- of the windows that close (_processor_start_range), not the window table's
-- whole heap with its dead rows.
CREATE FUNCTION @extschema@._processor_start_range(p @extschema@.processor_catalog, alias text,
                                                   lower text, upper text, kept interval)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    i interval;
    width interval;
BEGIN
    IF p.window_type IS NULL OR p.window_type NOT IN ('tumbling', 'hopping') THEN
        RETURN '';
    END IF;
    FOREACH i IN ARRAY ARRAY[p.size, p.allowed_lateness, kept] LOOP
        IF i IS NULL OR date_part('day', i) <> 0 OR date_part('month', i) <> 0 OR date_part('year', i) <> 0 THEN
            RETURN '';
        END IF;
    END LOOP;
    width := p.size + p.allowed_lateness + kept;
    IF width > interval '87600000 hours' THEN      -- 10,000 years: no range
        RETURN '';
    END IF;
    -- less than the least timestamptz + width: the bound is -infinity
    RETURN CASE WHEN lower IS NULL THEN ''
                ELSE format(' AND %1$s.window_start > CASE WHEN %2$s >= ''4714-11-24 00:00:00+00 BC''::timestamptz + %3$L::interval '
                            'THEN %2$s - %3$L::interval ELSE ''-infinity'' END', alias, lower, width) END
        || format(' AND %1$s.window_start <= CASE WHEN %2$s >= ''4714-11-24 00:00:00+00 BC''::timestamptz + %3$L::interval '
                  'THEN %2$s - %3$L::interval ELSE ''-infinity'' END', alias, upper, width);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_start_range(@extschema@.processor_catalog, text, text, text, interval) IS
'internal: the window_start range (an index range of the window table) holding the windows a closing statement may close';
CREATE OR REPLACE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    rv text := '';
    comb text := '';
    sets text := '';
    fmerge text := '';
    head text;
    body text;
    late_out text;
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    g text[];
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
    tsx text;
    inx text;
    lat text := '';
    raw boolean;
    gr text := '';
    gby text := 'ws_';
    typ regtype;
    coll text;
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    /*
     * A record's time ("tsx") and whether it counts ("inx"), each evaluated
     * once per record: in a LATERAL subquery of their own, unless the time
     * is the record's event_time column (or now(), the same all through
     * the statement) and there is no filter, when reading them again is
     * the same as keeping them, and the subquery (three executor nodes
     * started again for every record) is not needed.
     */
    IF p.where_clause IS NULL
       AND (p.time_mode = 'processing' OR p.event_time_expr ~* '^\s*(record\s*\.\s*)?event_time\s*$') THEN
        tsx := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()' ELSE 'record.event_time' END;
        inx := format('(%s IS NOT NULL)', tsx);
    ELSE
        tsx := 't_.ts_';
        inx := 't_.in_';
        lat := format($f$
                           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%s) IS TRUE END AS in_
                                                 FROM (SELECT %s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_$f$, filter, ts);
    END IF;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    /*
     * Tumbling and hopping windows group a batch by the group key, a jsonb
     * array of the group_by values, built for every record.  Where equal
     * values make equal jsonb and unequal values unequal jsonb (the types
     * below; text only in a deterministic collation, where equal means the
     * same bytes, as in jsonb: not citext nor a case-insensitive
     * collation), grouping by the values themselves makes the same groups,
     * and the jsonb is built once per group ("raw").  The types are found
     * without evaluating the expressions (an outer join's NULL).
     */
    raw := p.window_type IN ('tumbling', 'hopping');
    FOR i IN 1 .. ng LOOP
        EXIT WHEN NOT raw;
        EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_) FROM (SELECT 1) AS d_ LEFT JOIN '
                       '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                       p.group_by[i]) INTO typ;
        raw := typ IN ('boolean'::regtype, 'smallint'::regtype, 'integer'::regtype, 'bigint'::regtype,
                       'text'::regtype, 'character varying'::regtype, 'uuid'::regtype, 'date'::regtype,
                       'timestamp without time zone'::regtype, 'timestamp with time zone'::regtype);
        IF raw AND typ IN ('text'::regtype, 'character varying'::regtype) THEN
            EXECUTE format('SELECT pg_catalog.pg_collation_for(s_.x_) FROM (SELECT 1) AS d_ LEFT JOIN '
                           '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                           p.group_by[i]) INTO coll;
            raw := coll IS NULL OR (SELECT c.collisdeterministic FROM pg_collation c WHERE c.oid = coll::regcollation);
        END IF;
        gr := gr || format(', CASE WHEN %s THEN (%s) END AS gr%s_', inx, p.group_by[i], i);
        gby := gby || format(', gr%s_', i);
    END LOOP;
    IF raw THEN
        gk := 'pg_catalog.jsonb_build_array(';
        FOR i IN 1 .. ng LOOP
            gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || format('gr%s_', i);
        END LOOP;
        gk := gk || ')';
    ELSE
        gr := format(', CASE WHEN %s THEN %s END AS gk_', inx, gk);
        gk := 'gk_';
        gby := 'ws_, gk_';
    END IF;
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        -- any other aggregate with a combine function (streams_windows.sql)
        IF strpos(f, '(') > 0 THEN
            g := @extschema@._processor_agg_sql(p, i);
            xs := xs || format(', CASE WHEN %s THEN (%s)::%s END AS x_%s', inx, p.agg_args[i],
                               @extschema@._processor_agg_type(p, i, 'argument'), i);
            partials := partials || g[2]; cols := cols || format(', v_%s, n_%s', i, i);
            merge := merge || g[3]; rv := rv || g[4]; comb := comb || g[5]; fmerge := fmerge || g[6];
            sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
            CONTINUE;
        END IF;
        xs := xs || format(', CASE WHEN %s THEN (%s)::numeric END AS x_%s', inx,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
        -- sessions: a record as a partial (value, count), and partials combined
        rv := rv || format(', %s AS v_%s, %s AS n_%s',
                           CASE WHEN f = 'count' THEN 'NULL::numeric' ELSE format('e.x_%s', i) END, i,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN '1::bigint'
                                ELSE format('CASE WHEN e.x_%s IS NULL THEN 0 ELSE 1 END::bigint', i) END, i);
        comb := comb || format(', %s, sum(n_%s)::bigint',
                               CASE f WHEN 'min' THEN format('min(v_%s)', i)
                                      WHEN 'max' THEN format('max(v_%s)', i)
                                      WHEN 'count' THEN 'NULL::numeric'
                                      ELSE format('sum(v_%s)', i) END, i);
        sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
        -- a window closed in the step: its row (dc, if any) and the batch's
        -- partial (cl, if any) combined, as "merge" combines them
        fmerge := fmerge || format(', %2$s, coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)', i,
                                   CASE f WHEN 'min' THEN format('least(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'max' THEN format('greatest(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'count' THEN 'NULL::numeric'
                                          ELSE format('CASE WHEN dc.v_%1$s IS NULL THEN cl.v_%1$s WHEN cl.v_%1$s IS NULL THEN dc.v_%1$s ELSE dc.v_%1$s + cl.v_%1$s END', i) END);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  A session window's record is late when the session of
     * that record alone would be closed (its time + gap + lateness before
     * the watermark), so that lateness does not depend on how the records
     * of other partitions were cut into steps.  A record's watermark
     * ("wm_") is the largest event time before it in its partition (the
     * progress row's, or an earlier record's of the batch), less
     * max_out_of_orderness: _processor_record_watermark computes it as the
     * poll returns the records, each partition's in offset order, from the
     * progress rows (read once, as arrays) and the records before.  "w_"
     * is kept a subquery of its own (OFFSET 0), so that it is computed
     * once per record as the poll returns it; so is closed_through ("c_",
     * an InitPlan), where a join would cost a node per record.
     */
    head := format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, w_.c_) AS lim_,
           (%7$s) AS late_
      FROM (SELECT record.partition AS p_, record.offset_id AS o_, %1$s AS ts_, %6$s AS in_
                   %4$s %5$s %8$s,
                   @extschema@._processor_record_watermark(record.partition, record.offset_id, %1$s,
                       (SELECT pg_catalog.array_agg(prev.p_ ORDER BY prev.p_) FROM prev),
                       (SELECT pg_catalog.array_agg(prev.m_ ORDER BY prev.p_) FROM prev)) - $7 AS wm_,
                   (SELECT ct.c_ FROM ct) AS c_
              FROM %2$s AS record%9$s
             OFFSET 0) AS w_),
pe AS MATERIALIZED (
    SELECT e.p_, max(e.ts_) AS m_, count(*) AS n_, count(*) FILTER (WHERE e.in_ AND e.late_) AS l_,
           count(*) FILTER (WHERE e.ts_ IS NULL) AS z_
      FROM e GROUP BY e.p_),$f$,
        tsx, batch, progress, gr, xs, inx,
        CASE WHEN p.window_type = 'session'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, w_.c_)'
             WHEN p.window_type = 'sliding'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, w_.c_)'
             ELSE 'date_bin($10, w_.ts_, ''1970-01-01 00:00:00+00'') + $8 + $9 <= greatest(w_.wm_, w_.c_)' END,
        CASE WHEN p.late = 'topic'
             THEN ', record.key AS rk_, record.value AS rv_, record.headers AS rh_, record.event_time AS ret_'
             ELSE '' END,
        lat);

    -- Late records to the late-records topic, in offset order.
    late_out := CASE WHEN p.late = 'topic'
        THEN 'lt AS MATERIALIZED (SELECT count(@extschema@.produce($13, x.rk_, x.rv_, x.rh_, NULL, x.ret_)) AS n '
             '  FROM (SELECT e.* FROM e WHERE e.in_ AND e.late_ ORDER BY e.p_, e.o_) AS x)'
        ELSE 'lt AS (SELECT 0::bigint AS n)' END;

    IF p.window_type = 'session' THEN
        /*
         * Sessions: the records that count ("r", each a session of one
         * record), and the sessions in state that one of them reaches
         * (within gap of its start or end, as Kafka Streams' findSessions)
         * are laid on one line per group key and merged where they come
         * within gap of each other (gaps and islands: a new session starts
         * where a start is more than gap after every end before it).  The
         * merged sessions replace the ones they absorbed: a merged session
         * keeps the start of one of them (upserted) or deletes it.  Their
         * rows in the sink go too ("gone": the absorbed sessions that were
         * written, in full or as changes).
         */
        body := format($f$
r AS (SELECT e.gk_, e.ts_ AS s_, e.ts_ AS e_ %1$s FROM e WHERE e.in_ AND NOT e.late_),
o AS MATERIALIZED (SELECT w.* FROM %2$s AS w
                    WHERE EXISTS (SELECT FROM r WHERE r.gk_ = w.group_key
                                     AND r.s_ >= w.window_start - $8 AND r.s_ <= w.window_end + $8)),
iv AS (SELECT r.* FROM r UNION ALL SELECT o.group_key, o.window_start, o.window_end %3$s FROM o),
isl AS (SELECT y.*, count(*) FILTER (WHERE y.mx_ IS NULL OR y.s_ > y.mx_ + $8)
                        OVER (PARTITION BY y.gk_ ORDER BY y.s_, y.e_ ROWS UNBOUNDED PRECEDING) AS i_
          FROM (SELECT iv.*, max(iv.e_) OVER (PARTITION BY iv.gk_ ORDER BY iv.s_, iv.e_
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx_
                  FROM iv) AS y),
agg AS (SELECT min(s_) AS ws_, max(e_) AS we_, gk_ %4$s FROM isl GROUP BY gk_, i_),
gone AS (SELECT o.* FROM o WHERE NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key
                                                AND agg.ws_ = o.window_start AND agg.we_ = o.window_end)),
d AS (DELETE FROM %2$s AS w USING o
       WHERE w.window_start = o.window_start AND w.group_key = o.group_key
         AND NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key AND agg.ws_ = o.window_start)),
u AS (INSERT INTO %2$s AS t (window_start, window_end, group_key %3$s, closed)
      SELECT agg.*, agg.we_ + $8 + $12 < (SELECT ct.c_ FROM ct) FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %5$s, closed = excluded.closed
      RETURNING t.*),
%6$s,$f$,
            rv, windows, cols, comb, sets,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', '($11 OR gone.closed)'));
    ELSIF p.window_type = 'sliding' THEN
        body := @extschema@._processor_sliding_sql(p, partials, cols, sets);
    ELSE
        /*
         * Tumbling and hopping windows: the batch's partials combine with
         * the window rows.  A window is written to the sink as it changes
         * (emit changes), or when it closes, or, closed already, when a late
         * record updates it (late => 'update', within the retention).
         */
        body := format($f$
a AS (%1$s),
agg (window_start, window_end, group_key %4$s, closed) AS (
    SELECT ws_, ws_ + $8, %5$s %2$s, ws_ + $8 + $12 <= (SELECT ct.c_ FROM ct) FROM a GROUP BY %6$s),$f$,
            CASE WHEN p.size = p.advance
                 THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
                 ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                      'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                      'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END,
            partials, windows, cols, gk, gby);
        IF p.time_mode = 'event' AND coalesce(p.retention, '0') = '0'
           AND NOT (p.late = 'topic' AND p.late_topic IS NOT DISTINCT FROM p.sink_topic) THEN
            /*
             * Close in the step the windows that the step's own watermark
             * closes, instead of writing them into the window rows for the
             * closing statement to delete (most windows of a large step):
             * "wl" is a lower bound of the watermark run_processor computes
             * after this statement (the least over all partitions, active
             * or idle, of the largest event time seen, this batch's
             * included, minus max_out_of_orderness), NULL when it closes
             * nothing new.  The batch's partials of the windows it closes
             * ("cl") combine with their rows, deleted ("dc"), and are
             * written as the closing statement would have written them
             * (emit final: every window it closes; emit changes: those the
             * batch changed); the other partials are upserted ("u0").  The
             * closing statement then closes what the watermark passes
             * beyond "wl" (usually nothing); windows close in the same
             * order, in the same transaction.  Without a retention a
             * closed window is deleted as it closes, so nothing else
             * changes.
             */
            body := body || format($f$
bm AS (SELECT pe.p_, pe.m_ FROM pe),
wl AS (SELECT CASE WHEN x.w_ > (SELECT ct.c_ FROM ct) THEN x.w_ END AS w_
         FROM (SELECT min(coalesce(greatest(prev.m_, bm.m_), '-infinity')) - $7 AS w_
                 FROM pg_catalog.generate_series(0, $4 - 1) AS g(p_)
                 LEFT JOIN prev ON prev.p_ = g.p_ LEFT JOIN bm ON bm.p_ = g.p_) AS x),
cl AS (SELECT agg.* FROM agg, wl WHERE agg.window_end + $12 <= wl.w_),
dc AS (DELETE FROM %1$s AS w USING wl
        WHERE w.window_end + $12 <= wl.w_%8$s AND EXISTS (SELECT FROM wl WHERE wl.w_ IS NOT NULL) RETURNING w.*),
u0 AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
       SELECT agg.* FROM agg, wl WHERE wl.w_ IS NULL OR agg.window_end + $12 > wl.w_
       ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                   closed = t.closed OR excluded.closed%6$s),
u (window_start, window_end, group_key %2$s, closed) AS (%7$s
      SELECT coalesce(cl.window_start, dc.window_start), coalesce(cl.window_end, dc.window_end),
             coalesce(cl.group_key, dc.group_key) %4$s, true
        FROM cl FULL JOIN dc ON dc.window_start = cl.window_start AND dc.group_key = cl.group_key
       WHERE cl.window_start IS NOT NULL OR NOT ($11 OR dc.closed)),
%5$s,$f$,
                windows, cols, merge, fmerge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL),
                -- With emit final, what "u0" upserts is never written: its
                -- windows are open (a record of a window the watermark
                -- closed is late, and without a retention no closed window
                -- stays in the state), so it returns nothing to write.
                CASE WHEN p.emit = 'final' THEN '' ELSE E'\n       RETURNING t.*' END,
                CASE WHEN p.emit = 'final' THEN '' ELSE E'SELECT * FROM u0\n      UNION ALL' END,
                @extschema@._processor_start_range(p, 'w', '(SELECT ct.c_ FROM ct)', 'wl.w_', '0'));
        ELSE
            body := body || format($f$
u AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%4$s,$f$,
                windows, cols, merge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        END IF;
    END IF;

    RETURN head || body || format($f$
%2$s,
pu AS (INSERT INTO %1$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT pe.p_, pe.m_, pg_catalog.now(), pe.n_, pe.l_, pe.z_ FROM pe
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT (SELECT coalesce(sum(pe.n_), 0)::bigint FROM pe) FROM so, lt$f$, progress, late_out);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_step_sql(@extschema@.processor_catalog, text) IS
'internal: the statement of one step of a processor over a batch of records';
CREATE OR REPLACE FUNCTION @extschema@._processor_close_sql(p @extschema@.processor_catalog)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    windows text := format('@extschema@.%I', 'processor_' || p.processor_id || '_windows');
    closes text := CASE WHEN p.window_type = 'session' THEN 'window_end + $5 + $2 < $1'
                        WHEN p.window_type = 'sliding' THEN 'window_end + $2 < $1'
                        ELSE 'window_end + $2 <= $1' END;
    -- sliding windows: the records no window that may still change holds
    rx text := CASE WHEN p.window_type = 'sliding'
                    THEN format('rx AS (DELETE FROM @extschema@.%I WHERE ts + %L::interval < $1), ',
                                'processor_' || p.processor_id || '_records',
                                p.size + p.allowed_lateness + CASE WHEN p.late = 'update' THEN p.retention ELSE '0' END)
                    ELSE '' END;
BEGIN
    IF p.window_type <> 'session' AND coalesce(p.retention, '0') = '0' THEN
        RETURN format('WITH %s u AS (DELETE FROM %s AS w WHERE %s%s RETURNING *), %s SELECT count(*) FROM u, so',
                      rx, windows, closes, @extschema@._processor_start_range(p, 'w', '$6', '$1', '0'),
                      @extschema@._processor_emit_sql(p, '($3 AND NOT u.closed)', NULL));
    END IF;
    RETURN format('WITH %5$s u AS (UPDATE %1$s AS w SET closed = true WHERE NOT closed AND %2$s%6$s RETURNING *), %3$s, '
                  'x AS (DELETE FROM %1$s AS w WHERE closed AND %4$s%7$s) SELECT count(*) FROM u, so',
                  windows, closes, @extschema@._processor_emit_sql(p, '$3', NULL),
                  CASE WHEN p.window_type = 'session' THEN 'window_end + $5 + $2 + $4 < $1'
                       WHEN p.window_type = 'sliding' THEN 'window_end + $2 + $4 < $1'
                       ELSE 'window_end + $2 + $4 <= $1' END, rx,
                  @extschema@._processor_start_range(p, 'w', '$6', '$1', '0'),
                  @extschema@._processor_start_range(p, 'w', NULL, '$1', coalesce(p.retention, '0')));
END
$$;
COMMENT ON FUNCTION @extschema@._processor_close_sql(@extschema@.processor_catalog) IS
'internal: the statement closing the windows a watermark passed (written to the sink when emit is final) and removing the closed windows kept past their retention';
CREATE OR REPLACE FUNCTION @extschema@.run_processor(name text, max_records integer DEFAULT 1000, wait boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    tid integer;
    n integer;
    consumed bigint;
    waited interval;
    wm timestamptz;
    ct timestamptz;
BEGIN
    IF max_records IS NULL OR max_records < 1 THEN
        RAISE EXCEPTION 'max_records must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF wait IS NULL THEN
        RAISE EXCEPTION 'wait must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    -- The processor worker (src/processor_worker.c) runs this as the owner
    -- already, in a security-restricted operation, which forbids SET ROLE.
    IF NOT @extschema@._processor_worker_step(p.processor_id) THEN
        -- The owner's SQL could SET ROLE to any role the session user may
        -- (PL/pgSQL cannot make this a security-restricted operation): run it
        -- only in sessions whose user has no role the owner does not have.
        IF NOT pg_has_role(p.owner, session_user, 'MEMBER') THEN
            RAISE EXCEPTION 'permission denied to run processor "%" in a session of role %', p.name, session_user
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('The processor''s SQL runs as its owner %s, and could take the roles of the session''s user.', p.owner),
                      HINT = format('Run it in a session of its owner (SET SESSION AUTHORIZATION %s, or connect as it).', p.owner);
        END IF;
        -- Run the owner's SQL as the owner, never as the caller: the function's
        -- SET clause restores the role on exit.
        PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);
    END IF;

    SELECT c.topic_id, c.partitions INTO tid, n FROM @extschema@.topic_catalog c WHERE c.name = p.source_topic;
    IF tid IS DISTINCT FROM p.source_topic_id THEN
        RAISE EXCEPTION 'source topic "%" of processor "%" was dropped', p.source_topic, p.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Drop the processor with eventlog.drop_processor.';
    END IF;

    -- One step of a processor at a time: the others wait, or skip.
    BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', progress);
    EXCEPTION WHEN lock_not_available THEN
        IF NOT wait THEN
            RETURN NULL;
        END IF;
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
        -- The step we waited for released this lock a moment before the
        -- partitions its poll held (advisory locks go last): a poll now
        -- would skip them and read nothing.  Let it look again (a long
        -- poll retries partitions other transactions hold every second).
        waited := interval '2 seconds';
    END;
    IF p.kind = 'join' THEN
        RETURN @extschema@._join_step(p, max_records, waited);
    END IF;

    -- The step's statements run through plans the session keeps
    -- (_processor_exec), as EXECUTE ... USING would run them.
    consumed := @extschema@._processor_exec(
        @extschema@._processor_step_sql(p, '@extschema@.poll($1, $2, $3, partitions => $4, wait => $6)'),
        NULL::bigint,
        p.source_topic, p.group_name, max_records, n, p.sink_topic, waited,
        p.max_out_of_orderness, CASE WHEN p.window_type = 'session' THEN p.gap ELSE p.size END,
        p.allowed_lateness + CASE WHEN p.late = 'update' THEN p.retention ELSE '0' END,
        p.advance, p.emit = 'changes', p.allowed_lateness, p.late_topic);
    IF p.kind = 'map' THEN
        RETURN consumed;
    END IF;

    -- The processor's watermark: processing time, or the least watermark of
    -- the partitions that are active (read recently, or with records left
    -- to read); when every partition is idle, the greatest.
    IF p.time_mode = 'processing' THEN
        wm := now();
    ELSE
        wm := @extschema@._processor_exec(format($q$
            SELECT CASE WHEN bool_or(active) THEN min(coalesce(m, '-infinity')) FILTER (WHERE active)
                        ELSE max(m) END - $3
              FROM (SELECT t.max_event_time AS m,
                           NOT (coalesce(t.last_record_at, '-infinity') < now() - $4
                                AND coalesce(o.next_offset, 0) >= @extschema@.last_stable_offset($1, g.p)) AS active
                      FROM generate_series(0, $5 - 1) AS g(p)
                      LEFT JOIN %s t ON t.partition = g.p
                      LEFT JOIN @extschema@.group_offsets o
                             ON o.topic_id = $6 AND o.group_name = $2 AND o.partition = g.p) s$q$, progress),
            NULL::timestamptz,
            p.source_topic, p.group_name, p.max_out_of_orderness, p.idle_timeout, n, tid);
    END IF;
    ct := @extschema@._processor_exec(format('SELECT closed_through FROM %s WHERE partition = -1', progress),
                                      NULL::timestamptz, 0);
    IF wm IS NOT NULL AND wm > '-infinity' AND (ct IS NULL OR wm > ct) THEN
        PERFORM @extschema@._processor_exec(@extschema@._processor_close_sql(p), NULL::bigint,
            wm, p.allowed_lateness, p.emit = 'final',
            coalesce(p.retention, '0') + CASE WHEN p.window_type = 'session' THEN p.gap ELSE '0' END, p.gap,
            coalesce(ct, '-infinity'));
        PERFORM @extschema@._processor_exec(
            format('INSERT INTO %s AS t (partition, closed_through) VALUES (-1, $1) '
                   'ON CONFLICT (partition) DO UPDATE SET closed_through = excluded.closed_through', progress),
            NULL::bigint, wm);
    END IF;
    RETURN consumed;
END
$$;
COMMENT ON FUNCTION @extschema@.run_processor(text, integer, boolean) IS
'one exactly-once step of a processor, as its owner, in the caller''s transaction: reads up to max_records through the processor''s group, updates its state and sink, closes the windows its watermark passed; NULL when wait is false and another step of the processor is in progress';

-- A processor counts a day as 24 hours, as date_bin does (_processor_hours).
CREATE FUNCTION @extschema@._processor_hours(i interval)
RETURNS interval
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i - make_interval(days => date_part('day', i)::integer) + date_part('day', i) * interval '24 hours'
$$;
COMMENT ON FUNCTION @extschema@._processor_hours(interval) IS
'internal: an interval with its days made 24 hours each, as date_bin counts them';
/*
 * Window processors take aggregates of several arguments (corr(y, x),
 * regr_*, covar_*, a user's with a combine function): the functions of
 * sql/install/streams.sql and sql/install/streams_windows.sql that
 * changed, and the new ones, verbatim.
 */

/*
 * The arguments of an aggregate's argument list "a" (what is inside its
 * parentheses), split at the commas outside parentheses, brackets, quoted
 * strings ('' and, in E'', backslash escapes), quoted identifiers,
 * dollar-quoted strings and comments, and trimmed; NULL when any of those
 * is not closed (or a parenthesis not opened), so that each argument is a
 * balanced piece that stays inside the parentheses a step puts around it.
 */
CREATE FUNCTION @extschema@._processor_split_args(a text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer := length(a);
    i integer := 1;
    depth integer := 0;
    start integer := 1;
    c text;
    d text[];
    j integer;
    nest integer;
    esc boolean;
    args text[] := '{}';
BEGIN
    WHILE i <= n LOOP
        c := substr(a, i, 1);
        IF c IN ('(', '[') THEN
            depth := depth + 1;
        ELSIF c IN (')', ']') THEN
            depth := depth - 1;
            IF depth < 0 THEN
                RETURN NULL;
            END IF;
        ELSIF c = ',' AND depth = 0 THEN
            args := args || btrim(substr(a, start, i - start), E' \t\r\n');
            start := i + 1;
        ELSIF c = '''' THEN
            -- E'...' (e not ending an identifier) takes backslash escapes
            esc := i > 1 AND lower(substr(a, i - 1, 1)) = 'e'
                   AND (i = 2 OR substr(a, i - 2, 1) !~ '[A-Za-z0-9_$]');
            i := i + 1;
            LOOP
                IF i > n THEN
                    RETURN NULL;
                END IF;
                c := substr(a, i, 1);
                IF esc AND c = E'\\' THEN
                    i := i + 2;
                ELSIF c = '''' AND substr(a, i + 1, 1) = '''' THEN
                    i := i + 2;
                ELSIF c = '''' THEN
                    EXIT;
                ELSE
                    i := i + 1;
                END IF;
            END LOOP;
        ELSIF c = '"' THEN
            -- "a""b" is two quoted pieces back to back: the same here
            j := strpos(substr(a, i + 1), '"');
            IF j = 0 THEN
                RETURN NULL;
            END IF;
            i := i + j;
        ELSIF c = '$' AND (i = 1 OR substr(a, i - 1, 1) !~ '[A-Za-z0-9_$]') THEN
            -- $tag$...$tag$ ($1 is a parameter, a$b an identifier)
            d := regexp_match(substr(a, i), '^\$([A-Za-z_][A-Za-z0-9_]*)?\$');
            IF d IS NOT NULL THEN
                d[1] := '$' || coalesce(d[1], '') || '$';
                j := strpos(substr(a, i + length(d[1])), d[1]);
                IF j = 0 THEN
                    RETURN NULL;
                END IF;
                i := i + length(d[1]) + j - 1 + length(d[1]) - 1;
            END IF;
        ELSIF c = '-' AND substr(a, i + 1, 1) = '-' THEN
            j := strpos(substr(a, i), E'\n');
            i := CASE WHEN j = 0 THEN n ELSE i + j - 1 END;
        ELSIF c = '/' AND substr(a, i + 1, 1) = '*' THEN
            -- block comments nest
            nest := 1;
            i := i + 2;
            WHILE nest > 0 LOOP
                IF i > n THEN
                    RETURN NULL;
                END IF;
                IF substr(a, i, 2) = '/*' THEN
                    nest := nest + 1;
                    i := i + 2;
                ELSIF substr(a, i, 2) = '*/' THEN
                    nest := nest - 1;
                    i := i + 2;
                ELSE
                    i := i + 1;
                END IF;
            END LOOP;
            i := i - 1;
        END IF;
        i := i + 1;
    END LOOP;
    IF depth <> 0 THEN
        RETURN NULL;
    END IF;
    RETURN args || btrim(substr(a, start), E' \t\r\n');
END
$$;
COMMENT ON FUNCTION @extschema@._processor_split_args(text) IS
'internal: the arguments of a window processor''s aggregate, split at top-level commas; NULL when a parenthesis, bracket, quote or comment is not balanced';

/*
 * An aggregate of create_window_processor's "aggregates", checked as the
 * caller: {agg_funcs entry, argument, name given with AS, function name}.
 * The argument of an aggregate of several arguments is their list as
 * written ("y, x"), which _processor_agg_argv splits again.
 */
CREATE OR REPLACE FUNCTION @extschema@._processor_parse_aggregate(a text)
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m text[] := regexp_match(a, '^\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)?)\s*\((.*)\)\s*(?:as\s+([A-Za-z_][A-Za-z0-9_]*))?\s*$', 'i');
    fname text;
    arg text;
    typ oid;
    castable boolean;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
    args text[];
BEGIN
    IF m IS NULL OR btrim(m[2]) = '' OR (btrim(m[2]) = '*' AND lower(m[1]) <> 'count') THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An aggregate is count(*), or an aggregate function of one expression over the record, optionally followed by AS and a name.';
    END IF;
    args := @extschema@._processor_split_args(m[2]);
    IF args IS NULL THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A parenthesis, bracket, quote or comment in its arguments is not closed, or a parenthesis not opened.';
    END IF;
    IF cardinality(args) > 1 THEN
        IF '' = ANY (args) OR '*' = ANY (args) THEN
            RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'An aggregate of several arguments takes an expression over the record for each, separated by commas.';
        END IF;
        RETURN @extschema@._processor_parse_aggregate_n(a, m, args);
    END IF;
    fname := lower(regexp_replace(m[1], '\s', '', 'g'));
    arg := btrim(m[2]);
    IF fname = 'count' THEN
        RETURN ARRAY['count', arg, m[3], 'count'];
    END IF;
    -- The argument's type, without evaluating it (an outer join's NULL).
    EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                   '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                   arg) INTO typ;
    IF typ = 'unknown'::regtype THEN
        typ := 'text'::regtype;
    END IF;
    IF fname IN ('sum', 'min', 'max', 'avg') THEN
        -- Numbers, and whatever casts to numeric, as before: a numeric state.
        BEGIN
            EXECUTE format('SELECT NULL::%s::numeric', format_type(typ, NULL));
            castable := true;
        EXCEPTION WHEN cannot_coerce THEN
            castable := false;
        END;
        IF castable THEN
            RETURN ARRAY[fname, arg, m[3], fname];
        END IF;
    END IF;
    proc := to_regprocedure(format('%s(%s)', regexp_replace(m[1], '\s', '', 'g'), format_type(typ, NULL)));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(regexp_replace(m[1], '\s', '', 'g'));
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = 1
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND (SELECT t.typtype FROM pg_type t WHERE t.oid = pr.proargtypes[0]) = 'p'
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], format_type(typ, NULL)
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes one argument of a type it takes (cast it), and is named with its schema unless it is in pg_catalog.';
    END IF;
    SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = proc;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function % is not an aggregate', proc USING ERRCODE = 'wrong_object_type';
    END IF;
    IF ag.aggkind <> 'n' OR ag.aggcombinefn = 0 THEN
        RAISE EXCEPTION 'aggregate % cannot be combined', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = 'A window keeps a state per aggregate and combines it with the states of new records: the aggregate needs a combine function.';
    END IF;
    IF (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p'
       OR (SELECT t.typtype FROM pg_type t WHERE t.oid = typ) = 'p' OR ag.aggfinalextra THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('A window keeps an aggregate''s state in a column; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL)),
            HINT = 'Count, sum, min, max and avg of numbers have a state of their own; for stddev or variance, cast the argument to double precision.';
    END IF;
    -- The processor's aggregates are made by the extension's owner, and
    -- CREATE AGGREGATE reads INITCOND with the state type's input function:
    -- for a type of the user's (a domain's CHECK, a composite's columns),
    -- user code would run as that owner.  Built-in types only, then.
    IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
        RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('Its state type %s is not a built-in type, and the processor would read its initial value %L with that type''s input function as the extension''s owner.',
                            format_type(ag.aggtranstype, NULL), ag.agginitval),
            HINT = 'Use an aggregate whose state is of a built-in type, or one without an initial value.';
    END IF;
    IF NOT (has_function_privilege(proc, 'EXECUTE') AND has_function_privilege(ag.aggtransfn, 'EXECUTE')
            AND has_function_privilege(ag.aggcombinefn, 'EXECUTE')
            AND (ag.aggfinalfn = 0 OR has_function_privilege(ag.aggfinalfn, 'EXECUTE'))) THEN
        RAISE EXCEPTION 'permission denied for aggregate %', proc USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A window processor calls the aggregate''s transition, combine and final functions as its owner.';
    END IF;
    RETURN ARRAY[proc::text, arg, m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate(text) IS
'internal: an aggregate of a window processor, checked as the caller: the entry of agg_funcs (count, sum, min, max, avg, or an aggregate with a combine function as a regprocedure), its argument, its name, its function''s name';

/*
 * _processor_parse_aggregate for an aggregate of several arguments "args"
 * (a the aggregate as given, m its parts): found by its name and the
 * arguments' types, with the checks the one-argument path makes (a
 * combine function, a state of an SQL type, a built-in state type when
 * there is an initial value, EXECUTE on its functions).  count, sum, min,
 * max and avg of several arguments are no numeric aggregates: they are
 * looked up as any other, and do not exist.
 */
CREATE FUNCTION @extschema@._processor_parse_aggregate_n(a text, m text[], args text[])
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn text := regexp_replace(m[1], '\s', '', 'g');
    typs oid[] := '{}';
    typ oid;
    x text;
    tnames text;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
BEGIN
    FOREACH x IN ARRAY args LOOP
        -- The argument's type, without evaluating it (an outer join's NULL).
        EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                       '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                       x) INTO typ;
        typs := typs || CASE WHEN typ = 'unknown'::regtype THEN 'text'::regtype::oid ELSE typ END;
    END LOOP;
    tnames := (SELECT string_agg(format_type(u.t, NULL), ', ' ORDER BY u.o) FROM unnest(typs) WITH ORDINALITY AS u(t, o));
    proc := to_regprocedure(format('%s(%s)', fn, tnames));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(fn);
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = cardinality(args)
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND EXISTS (SELECT FROM unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t WHERE ty.typtype = 'p')
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], tnames
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes arguments of the types it takes (cast them), and is named with its schema unless it is in pg_catalog.';
    END IF;
    SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = proc;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function % is not an aggregate', proc USING ERRCODE = 'wrong_object_type';
    END IF;
    IF ag.aggkind <> 'n' OR ag.aggcombinefn = 0 THEN
        RAISE EXCEPTION 'aggregate % cannot be combined', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = 'A window keeps a state per aggregate and combines it with the states of new records: the aggregate needs a combine function.';
    END IF;
    -- internal is a pseudo-type too: string_agg, numeric states
    IF (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p' OR ag.aggfinalextra
       OR EXISTS (SELECT FROM pg_proc pr, unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t
                   WHERE pr.oid = proc AND ty.typtype = 'p') THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('A window keeps an aggregate''s state in a column of an SQL type, and the arguments in columns of theirs; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL));
    END IF;
    -- As for one argument: no INITCOND read with a type of the user's.
    IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
        RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('Its state type %s is not a built-in type, and the processor would read its initial value %L with that type''s input function as the extension''s owner.',
                            format_type(ag.aggtranstype, NULL), ag.agginitval),
            HINT = 'Use an aggregate whose state is of a built-in type, or one without an initial value.';
    END IF;
    IF NOT (has_function_privilege(proc, 'EXECUTE') AND has_function_privilege(ag.aggtransfn, 'EXECUTE')
            AND has_function_privilege(ag.aggcombinefn, 'EXECUTE')
            AND (ag.aggfinalfn = 0 OR has_function_privilege(ag.aggfinalfn, 'EXECUTE'))) THEN
        RAISE EXCEPTION 'permission denied for aggregate %', proc USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A window processor calls the aggregate''s transition, combine and final functions as its owner.';
    END IF;
    RETURN ARRAY[proc::text, btrim(m[2], E' \t\r\n'), m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate_n(text, text[], text[]) IS
'internal: an aggregate of several arguments of a window processor, checked as the caller, as _processor_parse_aggregate returns it';

/*
 * Aggregate i's arguments: the expressions (agg_args[i] split again for an
 * aggregate of several arguments, else agg_args[i] itself), their types
 * (the aggregate's argument types; numeric for count, sum, min, max, avg
 * of numbers), and the columns a step keeps them in (x_<i>, or x_<i>_<j>
 * for several).
 */
CREATE FUNCTION @extschema@._processor_agg_argv(p @extschema@.processor_catalog, i integer,
                                                OUT exprs text[], OUT types text[], OUT cols text[])
RETURNS record
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    argtypes oid[];
BEGIN
    IF strpos(p.agg_funcs[i], '(') = 0 THEN
        exprs := ARRAY[p.agg_args[i]];
        types := ARRAY['numeric'];
        cols := ARRAY['x_' || i];
        RETURN;
    END IF;
    SELECT pr.proargtypes::oid[] INTO argtypes FROM pg_proc pr WHERE pr.oid = p.agg_funcs[i]::regprocedure;
    types := (SELECT array_agg(format_type(u.t, NULL) ORDER BY u.o) FROM unnest(argtypes) WITH ORDINALITY AS u(t, o));
    IF cardinality(argtypes) = 1 THEN
        exprs := ARRAY[p.agg_args[i]];
        cols := ARRAY['x_' || i];
        RETURN;
    END IF;
    exprs := @extschema@._processor_split_args(p.agg_args[i]);
    IF exprs IS NULL OR cardinality(exprs) <> cardinality(argtypes) THEN
        RAISE EXCEPTION 'aggregate % of processor "%" has arguments "%" that do not split into %',
                        p.agg_funcs[i], p.name, p.agg_args[i], cardinality(argtypes)
            USING ERRCODE = 'data_corrupted';
    END IF;
    cols := (SELECT array_agg(format('x_%s_%s', i, j) ORDER BY j) FROM generate_series(1, cardinality(argtypes)) j);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_argv(@extschema@.processor_catalog, integer) IS
'internal: the argument expressions of a window processor''s aggregate, their types, and the columns a step keeps them in';

/*
 * The step's pieces for aggregate i, one with a combine function (see
 * _processor_step_sql): {the arguments, the batch's partials, the merge
 * into a window row, a record as a partial (sessions), partials combined,
 * a window closed in the step (its row and the batch's partial)}.
 */
CREATE OR REPLACE FUNCTION @extschema@._processor_agg_sql(p @extschema@.processor_catalog, i integer)
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text := format('@extschema@.%I', 'processor_' || p.processor_id || '_partial_' || i);
    comb text := format('@extschema@.%I', 'processor_' || p.processor_id || '_combine_' || i);
    av record := @extschema@._processor_agg_argv(p, i);
    isstrict boolean;
    xs text;
    xl text := array_to_string(av.cols, ', ');
    nn text;
BEGIN
    xs := (SELECT string_agg(format(', CASE WHEN t_.in_ THEN (%s)::%s END AS %s', u.x, u.t, u.c), '' ORDER BY u.o)
             FROM unnest(av.exprs, av.types, av.cols) WITH ORDINALITY AS u(x, t, c, o));
    IF cardinality(av.cols) > 1 THEN
        /*
         * Several arguments: n_<i> counts the records the transition
         * function takes, as the aggregate does: with a strict one, those
         * whose arguments are all non-NULL (PostgreSQL skips the others);
         * else every record.  (One argument keeps count(x_<i>), as before.)
         */
        isstrict := (SELECT pr.proisstrict FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggtransfn
                    WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure);
        nn := (SELECT string_agg(format('%s IS NOT NULL', c), ' AND ') FROM unnest(av.cols) c);
        RETURN ARRAY[
            xs,
            format(', %s(%s), count(*)%s', part, xl, CASE WHEN isstrict THEN format(' FILTER (WHERE %s)', nn) ELSE '' END),
            format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = (SELECT %2$s(c_.s_) FROM (VALUES (t.v_%1$s), (excluded.v_%1$s)) AS c_(s_))',
                   i, comb),
            format(', (SELECT %2$s(%3$s) FROM (VALUES (%4$s)) AS c_(%5$s)) AS v_%1$s, %6$s::bigint AS n_%1$s',
                   i, part, (SELECT string_agg('c_.' || c, ', ') FROM unnest(av.cols) c),
                   (SELECT string_agg('e.' || c, ', ') FROM unnest(av.cols) c), xl,
                   CASE WHEN isstrict THEN format('CASE WHEN %s THEN 1 ELSE 0 END',
                                                (SELECT string_agg(format('e.%s IS NOT NULL', c), ' AND ') FROM unnest(av.cols) c))
                        ELSE '1' END),
            format(', %s(v_%s), sum(n_%s)::bigint', comb, i, i),
            format(', (SELECT %2$s(c_.s_) FROM (VALUES (dc.v_%1$s), (cl.v_%1$s)) AS c_(s_)), coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)',
                   i, comb)];
    END IF;
    RETURN ARRAY[
        xs,
        format(', %s(x_%s), count(x_%s)', part, i, i),
        format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = (SELECT %2$s(c_.s_) FROM (VALUES (t.v_%1$s), (excluded.v_%1$s)) AS c_(s_))',
               i, comb),
        format(', (SELECT %2$s(c_.x_) FROM (VALUES (e.x_%1$s)) AS c_(x_)) AS v_%1$s, CASE WHEN e.x_%1$s IS NULL THEN 0 ELSE 1 END::bigint AS n_%1$s',
               i, part),
        format(', %s(v_%s), sum(n_%s)::bigint', comb, i, i),
        -- a window closed in the step (the step's "fmerge"): its row and
        -- the batch's partial, either of which may be missing
        format(', (SELECT %2$s(c_.s_) FROM (VALUES (dc.v_%1$s), (cl.v_%1$s)) AS c_(s_)), coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)',
               i, comb)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_sql(@extschema@.processor_catalog, integer) IS
'internal: the SQL a step of a window processor uses for one of its aggregates that has a combine function';

/*
 * The state a window processor has besides its windows, made by
 * __register_processor as the extension owner and given to the processor's
 * owner: the partial, combine and final aggregates of its aggregates
 * with a combine function, and a sliding window's record buffer.  The aggregates'
 * functions are checked again here (the spec may not come from
 * create_window_processor); the owner needs EXECUTE on them to run them.
 */
CREATE OR REPLACE FUNCTION @extschema@._processor_create_state(p @extschema@.processor_catalog, caller regrole)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
    i integer;
    argt text;
    st text;
    records text := format('@extschema@.%I', 'processor_' || p.processor_id || '_records');
BEGIN
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        CONTINUE WHEN strpos(p.agg_funcs[i], '(') = 0;
        SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure;
        IF NOT FOUND OR ag.aggkind <> 'n' OR ag.aggcombinefn = 0 OR ag.aggfinalextra
           OR (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p' THEN
            RAISE EXCEPTION 'aggregate % cannot be combined', p.agg_funcs[i] USING ERRCODE = 'feature_not_supported';
        END IF;
        -- This runs as the extension's owner: no input function of a type
        -- of the user's may read an INITCOND here (_processor_parse_aggregate).
        IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
            RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', p.agg_funcs[i]
                USING ERRCODE = 'feature_not_supported';
        END IF;
        argt := array_to_string((@extschema@._processor_agg_argv(p, i)).types, ', ');
        st := format_type(ag.aggtranstype, NULL);
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_partial_' || i, argt,
                       ag.aggtransfn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        -- Combining starts from the aggregate's initial value, as
        -- PostgreSQL's own combine phase does.
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_combine_' || i, st,
                       ag.aggcombinefn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s, FINALFUNC = %s%s)',
                           'processor_' || p.processor_id || '_final_' || i, st,
                           ag.aggcombinefn::text, st, ag.aggfinalfn::text,
                           CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        END IF;
        -- CREATE AGGREGATE finds its functions by name and argument types:
        -- a function of that name with closer argument types, put in the
        -- way by a role with CREATE on the schema, would be called instead
        -- of the aggregate's own.  Refuse unless each is the same function.
        IF EXISTS (SELECT FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggfnoid
                    WHERE pr.pronamespace = '@extschema@'::regnamespace
                      AND pr.proname IN ('processor_' || p.processor_id || '_partial_' || i,
                                         'processor_' || p.processor_id || '_combine_' || i,
                                         'processor_' || p.processor_id || '_final_' || i)
                      AND (g.aggtransfn <> CASE WHEN pr.proname LIKE '%\_partial\_%' THEN ag.aggtransfn ELSE ag.aggcombinefn END
                           OR g.aggfinalfn <> CASE WHEN pr.proname LIKE '%\_final\_%' THEN ag.aggfinalfn ELSE 0 END)) THEN
            RAISE EXCEPTION 'the functions of aggregate % are not found by their names', p.agg_funcs[i]
                USING ERRCODE = 'ambiguous_function',
                      DETAIL = 'Another function of the same name as the aggregate''s transition, combine or final function takes closer argument types.',
                      HINT = 'Drop the other function, or keep the aggregate''s functions in a schema where only trusted roles have CREATE.';
        END IF;
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_partial_' || i, argt, caller);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_combine_' || i, st, caller);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                           'processor_' || p.processor_id || '_final_' || i, st, caller);
        END IF;
    END LOOP;
    IF p.window_type = 'sliding' THEN
        EXECUTE format('CREATE TABLE %s (group_key jsonb NOT NULL, ts timestamptz NOT NULL, lim timestamptz NOT NULL%s)',
                       records,
                       (SELECT string_agg(format(', %s %s', u.c, u.t), '' ORDER BY j, u.o)
                          FROM generate_series(1, cardinality(p.agg_funcs)) j,
                               LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                               LATERAL unnest(av.cols, av.types) WITH ORDINALITY AS u(c, t, o)));
        EXECUTE format('CREATE INDEX ON %s (group_key, ts)', records);
        EXECUTE format('COMMENT ON TABLE %s IS %L', records,
                       format('pg_eventlog processor %s: the records its sliding windows may still need (group key, event time, the watermark it came under, the aggregates'' arguments)', p.name));
        EXECUTE format('ALTER TABLE %s OWNER TO %s', records, caller);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) IS
'internal: makes a window processor''s partial, combine and final aggregates and a sliding window''s record buffer, owned by the processor''s owner';
REVOKE ALL ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) FROM PUBLIC;

/*
 * The body of a sliding window's step (after the CTE "e" of
 * _processor_step_sql; $8 the size, $9 how late a record may be, $12
 * allowed_lateness).  A record at t counts in the window of its key ending
 * at e (t <= e <= t + size) unless the watermark it came under (lim_) is
 * past e + $9: a window with both ends in is closed when the watermark
 * passes its end (Kafka Streams: stream time > end + grace), so that a
 * record at the watermark counts in its own window (with processing time,
 * every record).  The window ending at e exists when a record at e counts
 * in it.  The records that count in some window go to
 * the buffer ("nr"); the windows a new record counts in are recomputed
 * from the buffer and the batch ("ar", only the keys and times the batch
 * can reach), and replace their rows.
 */
CREATE OR REPLACE FUNCTION @extschema@._processor_sliding_sql(p @extschema@.processor_catalog, partials text, cols text, sets text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    records text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_records');
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    -- every aggregate's argument columns, as _processor_create_state made them
    ecols text := (SELECT string_agg(', e.' || u.c, '' ORDER BY i, u.o)
                     FROM generate_series(1, cardinality(p.agg_funcs)) i,
                          LATERAL @extschema@._processor_agg_argv(p, i) AS av,
                          LATERAL unnest(av.cols) WITH ORDINALITY AS u(c, o));
BEGIN
    RETURN format($f$
nr AS (SELECT e.gk_ AS group_key, e.ts_ AS ts, e.lim_ AS lim %1$s FROM e WHERE e.in_ AND NOT e.late_),
ins AS (INSERT INTO %2$s SELECT * FROM nr),
ar AS (SELECT r.* FROM %2$s AS r
        WHERE r.group_key IN (SELECT nr.group_key FROM nr)
          AND r.ts >= (SELECT min(nr.ts) FROM nr) - $8 AND r.ts <= (SELECT max(nr.ts) FROM nr) + $8
       UNION ALL SELECT * FROM nr),
c AS (SELECT DISTINCT a.group_key AS gk_, a.ts AS we_
        FROM nr JOIN ar AS a ON a.group_key = nr.group_key AND a.ts >= nr.ts AND a.ts <= nr.ts + $8
       WHERE a.ts + $9 >= nr.lim),
agg AS (SELECT c.we_ - $8, c.we_, c.gk_ %3$s, c.we_ + $12 < (SELECT ct.c_ FROM ct)
          FROM c JOIN ar AS a ON a.group_key = c.gk_ AND a.ts >= c.we_ - $8 AND a.ts <= c.we_ AND c.we_ + $9 >= a.lim
         GROUP BY c.we_, c.gk_ HAVING bool_or(a.ts = c.we_)),
u AS (INSERT INTO %4$s AS t (window_start, window_end, group_key %5$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %6$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%7$s,$f$,
        ecols, records, partials, windows, cols, sets,
        @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
END
$$;
COMMENT ON FUNCTION @extschema@._processor_sliding_sql(@extschema@.processor_catalog, text, text, text) IS
'internal: the part of a sliding window processor''s step that buffers its records and recomputes the windows they change';

/*
 * The statement of one step, over a batch: "batch" is a FROM item giving
 * eventlog.record rows (the poll, or an empty set when create checks the
 * expressions).  $1 topic, $2 group, $3 max_records, $4 partitions, $5 the
 * sink topic, $6 the poll's wait; for windows (see run_processor) $7
 * max_out_of_orderness, $8 the size (a session window's gap), $9 how late
 * a record may be and still count (allowed_lateness, plus the retention
 * with late => 'update'), $10 advance, $11 emit changes, $12
 * allowed_lateness (when a window closes), $13 the late-records topic.
 * The user's expressions are pasted in parentheses: they are the owner's
 * SQL and run as the owner.
 */
CREATE OR REPLACE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    rv text := '';
    comb text := '';
    sets text := '';
    fmerge text := '';
    head text;
    body text;
    late_out text;
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    g text[];
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
    tsx text;
    inx text;
    lat text := '';
    raw boolean;
    gr text := '';
    gby text := 'ws_';
    typ regtype;
    coll text;
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    /*
     * A record's time ("tsx") and whether it counts ("inx"), each evaluated
     * once per record: in a LATERAL subquery of their own, unless the time
     * is the record's event_time column (or now(), the same all through
     * the statement) and there is no filter, when reading them again is
     * the same as keeping them, and the subquery (three executor nodes
     * started again for every record) is not needed.
     */
    IF p.where_clause IS NULL
       AND (p.time_mode = 'processing' OR p.event_time_expr ~* '^\s*(record\s*\.\s*)?event_time\s*$') THEN
        tsx := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()' ELSE 'record.event_time' END;
        inx := format('(%s IS NOT NULL)', tsx);
    ELSE
        tsx := 't_.ts_';
        inx := 't_.in_';
        lat := format($f$
                           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%s) IS TRUE END AS in_
                                                 FROM (SELECT %s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_$f$, filter, ts);
    END IF;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    /*
     * Tumbling and hopping windows group a batch by the group key, a jsonb
     * array of the group_by values, built for every record.  Where equal
     * values make equal jsonb and unequal values unequal jsonb (the types
     * below; text only in a deterministic collation, where equal means the
     * same bytes, as in jsonb: not citext nor a case-insensitive
     * collation), grouping by the values themselves makes the same groups,
     * and the jsonb is built once per group ("raw").  The types are found
     * without evaluating the expressions (an outer join's NULL).
     */
    raw := p.window_type IN ('tumbling', 'hopping');
    FOR i IN 1 .. ng LOOP
        EXIT WHEN NOT raw;
        EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_) FROM (SELECT 1) AS d_ LEFT JOIN '
                       '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                       p.group_by[i]) INTO typ;
        raw := typ IN ('boolean'::regtype, 'smallint'::regtype, 'integer'::regtype, 'bigint'::regtype,
                       'text'::regtype, 'character varying'::regtype, 'uuid'::regtype, 'date'::regtype,
                       'timestamp without time zone'::regtype, 'timestamp with time zone'::regtype);
        IF raw AND typ IN ('text'::regtype, 'character varying'::regtype) THEN
            EXECUTE format('SELECT pg_catalog.pg_collation_for(s_.x_) FROM (SELECT 1) AS d_ LEFT JOIN '
                           '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                           p.group_by[i]) INTO coll;
            raw := coll IS NULL OR (SELECT c.collisdeterministic FROM pg_collation c WHERE c.oid = coll::regcollation);
        END IF;
        gr := gr || format(', CASE WHEN %s THEN (%s) END AS gr%s_', inx, p.group_by[i], i);
        gby := gby || format(', gr%s_', i);
    END LOOP;
    IF raw THEN
        gk := 'pg_catalog.jsonb_build_array(';
        FOR i IN 1 .. ng LOOP
            gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || format('gr%s_', i);
        END LOOP;
        gk := gk || ')';
    ELSE
        gr := format(', CASE WHEN %s THEN %s END AS gk_', inx, gk);
        gk := 'gk_';
        gby := 'ws_, gk_';
    END IF;
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        -- any other aggregate with a combine function (streams_windows.sql)
        IF strpos(f, '(') > 0 THEN
            g := @extschema@._processor_agg_sql(p, i);
            -- its argument, or each of its arguments, in a column of its own
            xs := xs || (SELECT string_agg(format(', CASE WHEN %s THEN (%s)::%s END AS %s', inx, u.x, u.t, u.c), '' ORDER BY u.o)
                           FROM @extschema@._processor_agg_argv(p, i) AS av,
                                LATERAL unnest(av.exprs, av.types, av.cols) WITH ORDINALITY AS u(x, t, c, o));
            partials := partials || g[2]; cols := cols || format(', v_%s, n_%s', i, i);
            merge := merge || g[3]; rv := rv || g[4]; comb := comb || g[5]; fmerge := fmerge || g[6];
            sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
            CONTINUE;
        END IF;
        xs := xs || format(', CASE WHEN %s THEN (%s)::numeric END AS x_%s', inx,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
        -- sessions: a record as a partial (value, count), and partials combined
        rv := rv || format(', %s AS v_%s, %s AS n_%s',
                           CASE WHEN f = 'count' THEN 'NULL::numeric' ELSE format('e.x_%s', i) END, i,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN '1::bigint'
                                ELSE format('CASE WHEN e.x_%s IS NULL THEN 0 ELSE 1 END::bigint', i) END, i);
        comb := comb || format(', %s, sum(n_%s)::bigint',
                               CASE f WHEN 'min' THEN format('min(v_%s)', i)
                                      WHEN 'max' THEN format('max(v_%s)', i)
                                      WHEN 'count' THEN 'NULL::numeric'
                                      ELSE format('sum(v_%s)', i) END, i);
        sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
        -- a window closed in the step: its row (dc, if any) and the batch's
        -- partial (cl, if any) combined, as "merge" combines them
        fmerge := fmerge || format(', %2$s, coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)', i,
                                   CASE f WHEN 'min' THEN format('least(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'max' THEN format('greatest(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'count' THEN 'NULL::numeric'
                                          ELSE format('CASE WHEN dc.v_%1$s IS NULL THEN cl.v_%1$s WHEN cl.v_%1$s IS NULL THEN dc.v_%1$s ELSE dc.v_%1$s + cl.v_%1$s END', i) END);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  A session window's record is late when the session of
     * that record alone would be closed (its time + gap + lateness before
     * the watermark), so that lateness does not depend on how the records
     * of other partitions were cut into steps.  A record's watermark
     * ("wm_") is the largest event time before it in its partition (the
     * progress row's, or an earlier record's of the batch), less
     * max_out_of_orderness: _processor_record_watermark computes it as the
     * poll returns the records, each partition's in offset order, from the
     * progress rows (read once, as arrays) and the records before.  "w_"
     * is kept a subquery of its own (OFFSET 0), so that it is computed
     * once per record as the poll returns it; so is closed_through ("c_",
     * an InitPlan), where a join would cost a node per record.
     */
    head := format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, w_.c_) AS lim_,
           (%7$s) AS late_
      FROM (SELECT record.partition AS p_, record.offset_id AS o_, %1$s AS ts_, %6$s AS in_
                   %4$s %5$s %8$s,
                   @extschema@._processor_record_watermark(record.partition, record.offset_id, %1$s,
                       (SELECT pg_catalog.array_agg(prev.p_ ORDER BY prev.p_) FROM prev),
                       (SELECT pg_catalog.array_agg(prev.m_ ORDER BY prev.p_) FROM prev)) - $7 AS wm_,
                   (SELECT ct.c_ FROM ct) AS c_
              FROM %2$s AS record%9$s
             OFFSET 0) AS w_),
pe AS MATERIALIZED (
    SELECT e.p_, max(e.ts_) AS m_, count(*) AS n_, count(*) FILTER (WHERE e.in_ AND e.late_) AS l_,
           count(*) FILTER (WHERE e.ts_ IS NULL) AS z_
      FROM e GROUP BY e.p_),$f$,
        tsx, batch, progress, gr, xs, inx,
        CASE WHEN p.window_type = 'session'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, w_.c_)'
             WHEN p.window_type = 'sliding'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, w_.c_)'
             ELSE 'date_bin($10, w_.ts_, ''1970-01-01 00:00:00+00'') + $8 + $9 <= greatest(w_.wm_, w_.c_)' END,
        CASE WHEN p.late = 'topic'
             THEN ', record.key AS rk_, record.value AS rv_, record.headers AS rh_, record.event_time AS ret_'
             ELSE '' END,
        lat);

    -- Late records to the late-records topic, in offset order.
    late_out := CASE WHEN p.late = 'topic'
        THEN 'lt AS MATERIALIZED (SELECT count(@extschema@.produce($13, x.rk_, x.rv_, x.rh_, NULL, x.ret_)) AS n '
             '  FROM (SELECT e.* FROM e WHERE e.in_ AND e.late_ ORDER BY e.p_, e.o_) AS x)'
        ELSE 'lt AS (SELECT 0::bigint AS n)' END;

    IF p.window_type = 'session' THEN
        /*
         * Sessions: the records that count ("r", each a session of one
         * record), and the sessions in state that one of them reaches
         * (within gap of its start or end, as Kafka Streams' findSessions)
         * are laid on one line per group key and merged where they come
         * within gap of each other (gaps and islands: a new session starts
         * where a start is more than gap after every end before it).  The
         * merged sessions replace the ones they absorbed: a merged session
         * keeps the start of one of them (upserted) or deletes it.  Their
         * rows in the sink go too ("gone": the absorbed sessions that were
         * written, in full or as changes).
         */
        body := format($f$
r AS (SELECT e.gk_, e.ts_ AS s_, e.ts_ AS e_ %1$s FROM e WHERE e.in_ AND NOT e.late_),
o AS MATERIALIZED (SELECT w.* FROM %2$s AS w
                    WHERE EXISTS (SELECT FROM r WHERE r.gk_ = w.group_key
                                     AND r.s_ >= w.window_start - $8 AND r.s_ <= w.window_end + $8)),
iv AS (SELECT r.* FROM r UNION ALL SELECT o.group_key, o.window_start, o.window_end %3$s FROM o),
isl AS (SELECT y.*, count(*) FILTER (WHERE y.mx_ IS NULL OR y.s_ > y.mx_ + $8)
                        OVER (PARTITION BY y.gk_ ORDER BY y.s_, y.e_ ROWS UNBOUNDED PRECEDING) AS i_
          FROM (SELECT iv.*, max(iv.e_) OVER (PARTITION BY iv.gk_ ORDER BY iv.s_, iv.e_
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx_
                  FROM iv) AS y),
agg AS (SELECT min(s_) AS ws_, max(e_) AS we_, gk_ %4$s FROM isl GROUP BY gk_, i_),
gone AS (SELECT o.* FROM o WHERE NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key
                                                AND agg.ws_ = o.window_start AND agg.we_ = o.window_end)),
d AS (DELETE FROM %2$s AS w USING o
       WHERE w.window_start = o.window_start AND w.group_key = o.group_key
         AND NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key AND agg.ws_ = o.window_start)),
u AS (INSERT INTO %2$s AS t (window_start, window_end, group_key %3$s, closed)
      SELECT agg.*, agg.we_ + $8 + $12 < (SELECT ct.c_ FROM ct) FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %5$s, closed = excluded.closed
      RETURNING t.*),
%6$s,$f$,
            rv, windows, cols, comb, sets,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', '($11 OR gone.closed)'));
    ELSIF p.window_type = 'sliding' THEN
        body := @extschema@._processor_sliding_sql(p, partials, cols, sets);
    ELSE
        /*
         * Tumbling and hopping windows: the batch's partials combine with
         * the window rows.  A window is written to the sink as it changes
         * (emit changes), or when it closes, or, closed already, when a late
         * record updates it (late => 'update', within the retention).
         */
        body := format($f$
a AS (%1$s),
agg (window_start, window_end, group_key %4$s, closed) AS (
    SELECT ws_, ws_ + $8, %5$s %2$s, ws_ + $8 + $12 <= (SELECT ct.c_ FROM ct) FROM a GROUP BY %6$s),$f$,
            CASE WHEN p.size = p.advance
                 THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
                 ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                      'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                      'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END,
            partials, windows, cols, gk, gby);
        IF p.time_mode = 'event' AND coalesce(p.retention, '0') = '0'
           AND NOT (p.late = 'topic' AND p.late_topic IS NOT DISTINCT FROM p.sink_topic) THEN
            /*
             * Close in the step the windows that the step's own watermark
             * closes, instead of writing them into the window rows for the
             * closing statement to delete (most windows of a large step):
             * "wl" is a lower bound of the watermark run_processor computes
             * after this statement (the least over all partitions, active
             * or idle, of the largest event time seen, this batch's
             * included, minus max_out_of_orderness), NULL when it closes
             * nothing new.  The batch's partials of the windows it closes
             * ("cl") combine with their rows, deleted ("dc"), and are
             * written as the closing statement would have written them
             * (emit final: every window it closes; emit changes: those the
             * batch changed); the other partials are upserted ("u0").  The
             * closing statement then closes what the watermark passes
             * beyond "wl" (usually nothing); windows close in the same
             * order, in the same transaction.  Without a retention a
             * closed window is deleted as it closes, so nothing else
             * changes.
             */
            body := body || format($f$
bm AS (SELECT pe.p_, pe.m_ FROM pe),
wl AS (SELECT CASE WHEN x.w_ > (SELECT ct.c_ FROM ct) THEN x.w_ END AS w_
         FROM (SELECT min(coalesce(greatest(prev.m_, bm.m_), '-infinity')) - $7 AS w_
                 FROM pg_catalog.generate_series(0, $4 - 1) AS g(p_)
                 LEFT JOIN prev ON prev.p_ = g.p_ LEFT JOIN bm ON bm.p_ = g.p_) AS x),
cl AS (SELECT agg.* FROM agg, wl WHERE agg.window_end + $12 <= wl.w_),
dc AS (DELETE FROM %1$s AS w USING wl
        WHERE w.window_end + $12 <= wl.w_%8$s AND EXISTS (SELECT FROM wl WHERE wl.w_ IS NOT NULL) RETURNING w.*),
u0 AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
       SELECT agg.* FROM agg, wl WHERE wl.w_ IS NULL OR agg.window_end + $12 > wl.w_
       ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                   closed = t.closed OR excluded.closed%6$s),
u (window_start, window_end, group_key %2$s, closed) AS (%7$s
      SELECT coalesce(cl.window_start, dc.window_start), coalesce(cl.window_end, dc.window_end),
             coalesce(cl.group_key, dc.group_key) %4$s, true
        FROM cl FULL JOIN dc ON dc.window_start = cl.window_start AND dc.group_key = cl.group_key
       WHERE cl.window_start IS NOT NULL OR NOT ($11 OR dc.closed)),
%5$s,$f$,
                windows, cols, merge, fmerge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL),
                -- With emit final, what "u0" upserts is never written: its
                -- windows are open (a record of a window the watermark
                -- closed is late, and without a retention no closed window
                -- stays in the state), so it returns nothing to write.
                CASE WHEN p.emit = 'final' THEN '' ELSE E'\n       RETURNING t.*' END,
                CASE WHEN p.emit = 'final' THEN '' ELSE E'SELECT * FROM u0\n      UNION ALL' END,
                @extschema@._processor_start_range(p, 'w', '(SELECT ct.c_ FROM ct)', 'wl.w_', '0'));
        ELSE
            body := body || format($f$
u AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%4$s,$f$,
                windows, cols, merge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        END IF;
    END IF;

    RETURN head || body || format($f$
%2$s,
pu AS (INSERT INTO %1$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT pe.p_, pe.m_, pg_catalog.now(), pe.n_, pe.l_, pe.z_ FROM pe
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT (SELECT coalesce(sum(pe.n_), 0)::bigint FROM pe) FROM so, lt$f$, progress, late_out);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_step_sql(@extschema@.processor_catalog, text) IS
'internal: the statement of one step of a processor over a batch of records';

CREATE OR REPLACE FUNCTION @extschema@.create_window_processor(name text, source_topic text,
                                                    sink_table regclass DEFAULT NULL,
                                                    size interval DEFAULT NULL,
                                                    window_type text DEFAULT 'tumbling',
                                                    advance interval DEFAULT NULL,
                                                    group_by text[] DEFAULT ARRAY['key'],
                                                    aggregates text[] DEFAULT ARRAY['count(*)'],
                                                    where_clause text DEFAULT NULL,
                                                    event_time text DEFAULT 'event_time',
                                                    time_mode text DEFAULT 'event',
                                                    allowed_lateness interval DEFAULT '0',
                                                    max_out_of_orderness interval DEFAULT '0',
                                                    idle_timeout interval DEFAULT '1 minute',
                                                    emit text DEFAULT 'final',
                                                    start_from text DEFAULT 'earliest',
                                                    gap interval DEFAULT NULL,
                                                    late text DEFAULT 'drop',
                                                    late_topic text DEFAULT NULL,
                                                    retention interval DEFAULT '0',
                                                    sink_topic text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    m text[];
    a text;
    i integer;
    ncols integer;
    fnames text[] := '{}';
BEGIN
    IF name IS NULL OR source_topic IS NULL OR (size IS NULL AND window_type IS DISTINCT FROM 'session')
       OR window_type IS NULL OR group_by IS NULL OR aggregates IS NULL OR event_time IS NULL
       OR time_mode IS NULL OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL
       OR idle_timeout IS NULL OR emit IS NULL OR late IS NULL OR retention IS NULL
       OR array_position(group_by, NULL) IS NOT NULL
       OR array_position(aggregates, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of a window processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only sink_table or sink_topic (one of them), size (of a session window), advance, gap, where_clause and late_topic may be null.';
    END IF;
    IF sink_table IS NULL AND sink_topic IS NULL THEN
        RAISE EXCEPTION 'a window processor writes to a sink table, a sink topic or both'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table, sink_topic or both.';
    END IF;
    IF window_type NOT IN ('tumbling', 'hopping', 'session', 'sliding') THEN
        RAISE EXCEPTION 'window_type must be ''tumbling'', ''hopping'', ''sliding'' or ''session''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF window_type = 'sliding' AND advance IS NOT NULL THEN
        RAISE EXCEPTION 'a sliding window has no advance' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'A sliding window ends at each record and reaches size back: pass only size.';
    END IF;
    IF window_type = 'session' THEN
        IF gap IS NULL THEN
            RAISE EXCEPTION 'a session window needs gap' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The gap is the inactivity that ends a session, for example gap => ''30 minutes''.';
        END IF;
        IF size IS NOT NULL OR advance IS NOT NULL THEN
            RAISE EXCEPTION 'a session window has no size or advance' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A session lasts as long as its records come within gap of each other: pass only gap.';
        END IF;
        IF gap <= '0' OR date_part('month', gap) <> 0 OR date_part('year', gap) <> 0 THEN
            RAISE EXCEPTION 'invalid session gap %', gap USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The gap is a positive interval without months or years.';
        END IF;
    ELSE
        IF gap IS NOT NULL THEN
            RAISE EXCEPTION 'gap is only for session windows' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''session'', or size (and advance) for tumbling and hopping windows.';
        END IF;
        IF window_type = 'tumbling' AND advance IS NOT NULL AND advance <> size THEN
            RAISE EXCEPTION 'a tumbling window advances by its size' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''hopping'' for windows that overlap.';
        END IF;
        IF window_type = 'hopping' AND advance IS NULL THEN
            RAISE EXCEPTION 'a hopping window needs advance' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        advance := coalesce(advance, size);
        IF size <= '0' OR advance <= '0' OR advance > size
           OR date_part('month', size) <> 0 OR date_part('year', size) <> 0
           OR date_part('month', advance) <> 0 OR date_part('year', advance) <> 0 THEN
            RAISE EXCEPTION 'invalid window size % or advance %', size, advance
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'Size and advance are positive intervals without months or years, advance at most the size.';
        END IF;
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF time_mode NOT IN ('event', 'processing') THEN
        RAISE EXCEPTION 'time_mode must be ''event'' or ''processing''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF emit NOT IN ('final', 'changes') THEN
        RAISE EXCEPTION 'emit must be ''final'' or ''changes''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late NOT IN ('drop', 'topic', 'update') THEN
        RAISE EXCEPTION 'late must be ''drop'', ''topic'' or ''update''' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention.';
    END IF;
    IF late = 'topic' AND late_topic IS NULL THEN
        RAISE EXCEPTION 'late => ''topic'' needs late_topic' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the topic late records are sent to.';
    END IF;
    IF late <> 'topic' AND late_topic IS NOT NULL THEN
        RAISE EXCEPTION 'late_topic is only for late => ''topic''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late_topic = source_topic OR sink_topic = source_topic THEN
        RAISE EXCEPTION 'a window processor must not write to its source topic' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Its own records would come back to it as input.';
    END IF;
    IF retention < '0' THEN
        RAISE EXCEPTION 'retention must not be negative' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(aggregates) = 0 THEN
        RAISE EXCEPTION 'a window processor needs at least one aggregate' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.name := name;
    p.kind := 'window';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.where_clause := where_clause;
    p.event_time_expr := event_time;
    p.time_mode := time_mode;
    p.window_type := window_type;
    -- days as 24 hours (_processor_hours)
    p.size := @extschema@._processor_hours(size);
    p.advance := CASE WHEN window_type = 'sliding' THEN NULL ELSE @extschema@._processor_hours(advance) END;
    p.gap := @extschema@._processor_hours(gap);
    p.allowed_lateness := @extschema@._processor_hours(allowed_lateness);
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE @extschema@._processor_hours(max_out_of_orderness) END;
    p.size := size;
    p.advance := CASE WHEN window_type = 'sliding' THEN NULL ELSE advance END;
    p.gap := gap;
    p.allowed_lateness := allowed_lateness;
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE max_out_of_orderness END;
    p.idle_timeout := idle_timeout;
    p.emit := emit;
    p.late := late;
    p.late_topic := late_topic;
    p.retention := @extschema@._processor_hours(retention);
    p.retention := retention;
    p.group_by := group_by;
    p.agg_funcs := '{}';
    p.agg_args := '{}';
    p.agg_names := '{}';
    FOREACH a IN ARRAY aggregates LOOP
        -- count, sum, min, max and avg of numbers (or text), or any
        -- aggregate with a combine function (streams_windows.sql)
        m := @extschema@._processor_parse_aggregate(a);
        p.agg_funcs := p.agg_funcs || m[1];
        p.agg_args := p.agg_args || m[2];
        p.agg_names := p.agg_names || m[3];
        fnames := fnames || m[4];
    END LOOP;
    -- The sink's columns in order: window start, window end, one per
    -- group_by expression, one per aggregate.
    IF sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum), array_agg(format_type(att.atttypid, att.atttypmod) ORDER BY att.attnum)
          INTO p.sink_columns, p.sink_types
          FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        ncols := 2 + cardinality(group_by) + cardinality(aggregates);
        IF coalesce(cardinality(p.sink_columns), 0) <> ncols THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes %', sink_table,
                            coalesce(cardinality(p.sink_columns), 0), ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: window start, window end, one per group_by expression, one per aggregate.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT, UPDATE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A window processor selects, inserts and updates its sink table.';
        END IF;
        IF window_type = 'session' AND NOT has_table_privilege(sink_table, 'DELETE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A session window processor also deletes the rows of sessions that merged into others.';
        END IF;
    END IF;
    -- The aggregates' names in the records of a sink topic: "AS name", else
    -- the sink table's column, else the function (numbered when repeated).
    FOR i IN 1 .. cardinality(aggregates) LOOP
        p.agg_names[i] := coalesce(p.agg_names[i], p.sink_columns[2 + cardinality(group_by) + i],
                                   CASE WHEN array_position(fnames[i + 1:], fnames[i]) IS NULL
                                         AND array_position(fnames[:i - 1], fnames[i]) IS NULL
                                        THEN fnames[i] ELSE fnames[i] || '_' || i END);
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM unnest(p.agg_names) x) < cardinality(aggregates) THEN
        RAISE EXCEPTION 'two aggregates are named alike' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name them apart with "AS name".';
    END IF;
    -- The expressions over no records, as the caller; the group keys and
    -- aggregate arguments inside CASE, as a step evaluates them (so that a
    -- set-returning function there fails now, not at every step).
    EXECUTE format('SELECT %s, CASE WHEN true THEN pg_catalog.jsonb_build_array(%s) END %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record WHERE %s',
                   CASE time_mode WHEN 'processing' THEN 'NULL' ELSE '(' || event_time || ')::timestamptz' END,
                   (SELECT string_agg('(' || g || ')', ', ') FROM unnest(group_by) g),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::%s END', CASE x WHEN '*' THEN 'NULL' ELSE x END,
                                             @extschema@._processor_agg_type(p, o::integer, 'argument')), '' ORDER BY o)
                      FROM unnest(p.agg_args) WITH ORDINALITY AS u(x, o)),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::%s END', CASE u.x WHEN '*' THEN 'NULL' ELSE u.x END,
                                             u.t), '' ORDER BY j, u.o)
                      FROM generate_series(1, cardinality(p.agg_funcs)) j,
                           LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                           LATERAL unnest(av.exprs, av.types) WITH ORDINALITY AS u(x, t, o)),
                   coalesce('(' || where_clause || ')', 'true'));
    -- and the casts of the group keys to the sink's column types
    IF sink_table IS NOT NULL THEN
        FOR i IN 1 .. cardinality(group_by) LOOP
            EXECUTE format('SELECT NULL::text::%s', p.sink_types[2 + i]);
        END LOOP;
    END IF;
    PERFORM @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text, interval, text, text, interval, text) IS
'creates a windowed aggregate: tumbling or hopping windows of size (advancing by advance), sliding windows (a window of size ending at each record), or session windows (gap), over event time (an expression over the record) or processing time, grouped by expressions, count/sum/min/max/avg or any aggregate with a combine function, written to sink_table and/or sink_topic when a window closes (emit final) or as it changes (emit changes); late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention';
CREATE OR REPLACE FUNCTION @extschema@.create_join_processor(name text, left_topic text, right_topic text,
                                                  sink_table regclass DEFAULT NULL,
                                                  sink_topic text DEFAULT NULL,
                                                  within interval DEFAULT NULL,
                                                  before interval DEFAULT NULL,
                                                  after interval DEFAULT NULL,
                                                  join_type text DEFAULT 'inner',
                                                  left_key text DEFAULT 'key',
                                                  right_key text DEFAULT 'key',
                                                  left_event_time text DEFAULT 'event_time',
                                                  right_event_time text DEFAULT 'event_time',
                                                  allowed_lateness interval DEFAULT '0',
                                                  max_out_of_orderness interval DEFAULT '0',
                                                  idle_timeout interval DEFAULT '1 minute',
                                                  start_from text DEFAULT 'earliest')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    ncols integer;
BEGIN
    IF name IS NULL OR left_topic IS NULL OR right_topic IS NULL OR join_type IS NULL
       OR left_key IS NULL OR right_key IS NULL OR left_event_time IS NULL OR right_event_time IS NULL
       OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL OR idle_timeout IS NULL THEN
        RAISE EXCEPTION 'the arguments of a join processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only one of sink_table and sink_topic, and within or before and after, may be null.';
    END IF;
    IF (sink_table IS NULL) = (sink_topic IS NULL) THEN
        RAISE EXCEPTION 'a processor writes to one sink table or one sink topic'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table or sink_topic.';
    END IF;
    IF join_type NOT IN ('inner', 'left', 'outer') THEN
        RAISE EXCEPTION 'join_type must be ''inner'', ''left'' or ''outer''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    before := coalesce(before, within);
    after := coalesce(after, within);
    IF before IS NULL OR after IS NULL THEN
        RAISE EXCEPTION 'a join processor needs within, or before and after' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'within => ''5 minutes'' joins the records at most 5 minutes apart.';
    END IF;
    IF before < '0' OR after < '0'
       OR date_part('month', before) <> 0 OR date_part('year', before) <> 0
       OR date_part('month', after) <> 0 OR date_part('year', after) <> 0 THEN
        RAISE EXCEPTION 'invalid join window: before % and after %', before, after
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Before and after are intervals at least zero, without months or years.';
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF left_topic = right_topic THEN
        RAISE EXCEPTION 'a join processor reads two different topics' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'To join a topic with itself, copy it to a second topic with eventlog.create_processor.';
    END IF;
    p.name := name;
    p.kind := 'join';
    p.source_topic := left_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    -- days as 24 hours, as the windows' (_processor_hours)
    p.allowed_lateness := @extschema@._processor_hours(allowed_lateness);
    p.max_out_of_orderness := @extschema@._processor_hours(max_out_of_orderness);
    p.idle_timeout := idle_timeout;
    p.join_spec := jsonb_build_object('right_topic', right_topic, 'join_type', join_type,
                                      'before', @extschema@._processor_hours(before),
                                      'after', @extschema@._processor_hours(after),
                                      'left_key', left_key, 'right_key', right_key,
                                      'left_event_time', left_event_time, 'right_event_time', right_event_time);
    IF sink_table IS NOT NULL THEN
        SELECT count(*) INTO ncols FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        IF ncols <> 9 THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes 9', sink_table, ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: key, left value, right value, left time, right time, left partition, left offset, right partition, right offset.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A join processor selects from and inserts into its sink table.';
        END IF;
    END IF;
    -- The expressions, and the sink's statement, over no records, as the
    -- caller: a syntax error, an unknown column, a set-returning expression
    -- or a sink column of the wrong type shows now.
    EXECUTE format('SELECT %s, %s, %s, %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record',
                   @extschema@._join_key_sql(left_key), @extschema@._join_time_sql(left_event_time),
                   @extschema@._join_key_sql(right_key), @extschema@._join_time_sql(right_event_time));
    EXECUTE format('WITH out AS (SELECT NULL::text AS key, NULL::jsonb AS lv, NULL::jsonb AS rv, NULL::timestamptz AS lt, '
                   'NULL::timestamptz AS rt, NULL::integer AS lp, NULL::bigint AS lo, NULL::integer AS rp, '
                   'NULL::bigint AS ro WHERE false), %s SELECT count(*) FROM out %s',
                   (@extschema@._join_sink_sql(p, '$1')).cte, (@extschema@._join_sink_sql(p, '$1')).final)
      USING sink_topic;
    PERFORM @extschema@._register_join_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_join_processor(text, text, text, regclass, text, interval, interval, interval, text, text, text, text, text, interval, interval, interval, text) IS
'creates a windowed stream-stream join: the records of left_topic and right_topic with equal join keys (left_key, right_key) whose event times are within [left time - before, left time + after] (within: both) become rows of sink_table or records of sink_topic; join_type inner, left or outer (unmatched records written with NULLs when their window closes)';

-- create_window_processor with both of the changes above (days as hours; aggregates of several arguments).
CREATE OR REPLACE FUNCTION @extschema@.create_window_processor(name text, source_topic text,
                                                    sink_table regclass DEFAULT NULL,
                                                    size interval DEFAULT NULL,
                                                    window_type text DEFAULT 'tumbling',
                                                    advance interval DEFAULT NULL,
                                                    group_by text[] DEFAULT ARRAY['key'],
                                                    aggregates text[] DEFAULT ARRAY['count(*)'],
                                                    where_clause text DEFAULT NULL,
                                                    event_time text DEFAULT 'event_time',
                                                    time_mode text DEFAULT 'event',
                                                    allowed_lateness interval DEFAULT '0',
                                                    max_out_of_orderness interval DEFAULT '0',
                                                    idle_timeout interval DEFAULT '1 minute',
                                                    emit text DEFAULT 'final',
                                                    start_from text DEFAULT 'earliest',
                                                    gap interval DEFAULT NULL,
                                                    late text DEFAULT 'drop',
                                                    late_topic text DEFAULT NULL,
                                                    retention interval DEFAULT '0',
                                                    sink_topic text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    m text[];
    a text;
    i integer;
    ncols integer;
    fnames text[] := '{}';
BEGIN
    IF name IS NULL OR source_topic IS NULL OR (size IS NULL AND window_type IS DISTINCT FROM 'session')
       OR window_type IS NULL OR group_by IS NULL OR aggregates IS NULL OR event_time IS NULL
       OR time_mode IS NULL OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL
       OR idle_timeout IS NULL OR emit IS NULL OR late IS NULL OR retention IS NULL
       OR array_position(group_by, NULL) IS NOT NULL
       OR array_position(aggregates, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of a window processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only sink_table or sink_topic (one of them), size (of a session window), advance, gap, where_clause and late_topic may be null.';
    END IF;
    IF sink_table IS NULL AND sink_topic IS NULL THEN
        RAISE EXCEPTION 'a window processor writes to a sink table, a sink topic or both'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table, sink_topic or both.';
    END IF;
    IF window_type NOT IN ('tumbling', 'hopping', 'session', 'sliding') THEN
        RAISE EXCEPTION 'window_type must be ''tumbling'', ''hopping'', ''sliding'' or ''session''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF window_type = 'sliding' AND advance IS NOT NULL THEN
        RAISE EXCEPTION 'a sliding window has no advance' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'A sliding window ends at each record and reaches size back: pass only size.';
    END IF;
    IF window_type = 'session' THEN
        IF gap IS NULL THEN
            RAISE EXCEPTION 'a session window needs gap' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The gap is the inactivity that ends a session, for example gap => ''30 minutes''.';
        END IF;
        IF size IS NOT NULL OR advance IS NOT NULL THEN
            RAISE EXCEPTION 'a session window has no size or advance' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A session lasts as long as its records come within gap of each other: pass only gap.';
        END IF;
        IF gap <= '0' OR date_part('month', gap) <> 0 OR date_part('year', gap) <> 0 THEN
            RAISE EXCEPTION 'invalid session gap %', gap USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The gap is a positive interval without months or years.';
        END IF;
    ELSE
        IF gap IS NOT NULL THEN
            RAISE EXCEPTION 'gap is only for session windows' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''session'', or size (and advance) for tumbling and hopping windows.';
        END IF;
        IF window_type = 'tumbling' AND advance IS NOT NULL AND advance <> size THEN
            RAISE EXCEPTION 'a tumbling window advances by its size' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''hopping'' for windows that overlap.';
        END IF;
        IF window_type = 'hopping' AND advance IS NULL THEN
            RAISE EXCEPTION 'a hopping window needs advance' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        advance := coalesce(advance, size);
        IF size <= '0' OR advance <= '0' OR advance > size
           OR date_part('month', size) <> 0 OR date_part('year', size) <> 0
           OR date_part('month', advance) <> 0 OR date_part('year', advance) <> 0 THEN
            RAISE EXCEPTION 'invalid window size % or advance %', size, advance
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'Size and advance are positive intervals without months or years, advance at most the size.';
        END IF;
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF time_mode NOT IN ('event', 'processing') THEN
        RAISE EXCEPTION 'time_mode must be ''event'' or ''processing''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF emit NOT IN ('final', 'changes') THEN
        RAISE EXCEPTION 'emit must be ''final'' or ''changes''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late NOT IN ('drop', 'topic', 'update') THEN
        RAISE EXCEPTION 'late must be ''drop'', ''topic'' or ''update''' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention.';
    END IF;
    IF late = 'topic' AND late_topic IS NULL THEN
        RAISE EXCEPTION 'late => ''topic'' needs late_topic' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the topic late records are sent to.';
    END IF;
    IF late <> 'topic' AND late_topic IS NOT NULL THEN
        RAISE EXCEPTION 'late_topic is only for late => ''topic''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late_topic = source_topic OR sink_topic = source_topic THEN
        RAISE EXCEPTION 'a window processor must not write to its source topic' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Its own records would come back to it as input.';
    END IF;
    IF retention < '0' THEN
        RAISE EXCEPTION 'retention must not be negative' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(aggregates) = 0 THEN
        RAISE EXCEPTION 'a window processor needs at least one aggregate' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.name := name;
    p.kind := 'window';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.where_clause := where_clause;
    p.event_time_expr := event_time;
    p.time_mode := time_mode;
    p.window_type := window_type;
    -- days as 24 hours (_processor_hours)
    p.size := @extschema@._processor_hours(size);
    p.advance := CASE WHEN window_type = 'sliding' THEN NULL ELSE @extschema@._processor_hours(advance) END;
    p.gap := @extschema@._processor_hours(gap);
    p.allowed_lateness := @extschema@._processor_hours(allowed_lateness);
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE @extschema@._processor_hours(max_out_of_orderness) END;
    p.idle_timeout := idle_timeout;
    p.emit := emit;
    p.late := late;
    p.late_topic := late_topic;
    p.retention := @extschema@._processor_hours(retention);
    p.group_by := group_by;
    p.agg_funcs := '{}';
    p.agg_args := '{}';
    p.agg_names := '{}';
    FOREACH a IN ARRAY aggregates LOOP
        -- count, sum, min, max and avg of numbers (or text), or any
        -- aggregate with a combine function (streams_windows.sql)
        m := @extschema@._processor_parse_aggregate(a);
        p.agg_funcs := p.agg_funcs || m[1];
        p.agg_args := p.agg_args || m[2];
        p.agg_names := p.agg_names || m[3];
        fnames := fnames || m[4];
    END LOOP;
    -- The sink's columns in order: window start, window end, one per
    -- group_by expression, one per aggregate.
    IF sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum), array_agg(format_type(att.atttypid, att.atttypmod) ORDER BY att.attnum)
          INTO p.sink_columns, p.sink_types
          FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        ncols := 2 + cardinality(group_by) + cardinality(aggregates);
        IF coalesce(cardinality(p.sink_columns), 0) <> ncols THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes %', sink_table,
                            coalesce(cardinality(p.sink_columns), 0), ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: window start, window end, one per group_by expression, one per aggregate.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT, UPDATE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A window processor selects, inserts and updates its sink table.';
        END IF;
        IF window_type = 'session' AND NOT has_table_privilege(sink_table, 'DELETE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A session window processor also deletes the rows of sessions that merged into others.';
        END IF;
    END IF;
    -- The aggregates' names in the records of a sink topic: "AS name", else
    -- the sink table's column, else the function (numbered when repeated).
    FOR i IN 1 .. cardinality(aggregates) LOOP
        p.agg_names[i] := coalesce(p.agg_names[i], p.sink_columns[2 + cardinality(group_by) + i],
                                   CASE WHEN array_position(fnames[i + 1:], fnames[i]) IS NULL
                                         AND array_position(fnames[:i - 1], fnames[i]) IS NULL
                                        THEN fnames[i] ELSE fnames[i] || '_' || i END);
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM unnest(p.agg_names) x) < cardinality(aggregates) THEN
        RAISE EXCEPTION 'two aggregates are named alike' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name them apart with "AS name".';
    END IF;
    -- The expressions over no records, as the caller; the group keys and
    -- aggregate arguments inside CASE, as a step evaluates them (so that a
    -- set-returning function there fails now, not at every step).
    EXECUTE format('SELECT %s, CASE WHEN true THEN pg_catalog.jsonb_build_array(%s) END %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record WHERE %s',
                   CASE time_mode WHEN 'processing' THEN 'NULL' ELSE '(' || event_time || ')::timestamptz' END,
                   (SELECT string_agg('(' || g || ')', ', ') FROM unnest(group_by) g),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::%s END', CASE u.x WHEN '*' THEN 'NULL' ELSE u.x END,
                                             u.t), '' ORDER BY j, u.o)
                      FROM generate_series(1, cardinality(p.agg_funcs)) j,
                           LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                           LATERAL unnest(av.exprs, av.types) WITH ORDINALITY AS u(x, t, o)),
                   coalesce('(' || where_clause || ')', 'true'));
    -- and the casts of the group keys to the sink's column types
    IF sink_table IS NOT NULL THEN
        FOR i IN 1 .. cardinality(group_by) LOOP
            EXECUTE format('SELECT NULL::text::%s', p.sink_types[2 + i]);
        END LOOP;
    END IF;
    PERFORM @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text, interval, text, text, interval, text) IS
'creates a windowed aggregate: tumbling or hopping windows of size (advancing by advance), sliding windows (a window of size ending at each record), or session windows (gap), over event time (an expression over the record) or processing time, grouped by expressions, count/sum/min/max/avg or any aggregate with a combine function, written to sink_table and/or sink_topic when a window closes (emit final) or as it changes (emit changes); late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention';

-- Types named without a length (bit, bpchar) in a step's casts and state columns;
-- the argument splitter reads comments and dollar quotes as PostgreSQL does;
-- an interval too long for hours is refused.
CREATE OR REPLACE FUNCTION @extschema@._processor_hours(i interval)
RETURNS interval
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN i - make_interval(days => date_part('day', i)::integer) + date_part('day', i) * interval '24 hours';
EXCEPTION WHEN datetime_field_overflow THEN
    RAISE EXCEPTION 'interval "%" is too long for a processor', i USING ERRCODE = 'invalid_parameter_value',
        DETAIL = 'A processor counts a day as 24 hours, and the hours of this interval''s days are out of range.';
END
$$;
COMMENT ON FUNCTION @extschema@._processor_hours(interval) IS
'internal: an interval with its days made 24 hours each, as date_bin counts them';
CREATE OR REPLACE FUNCTION @extschema@._processor_split_args(a text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer := length(a);
    i integer := 1;
    depth integer := 0;
    start integer := 1;
    c text;
    d text[];
    j integer;
    nest integer;
    esc boolean;
    args text[] := '{}';
BEGIN
    WHILE i <= n LOOP
        c := substr(a, i, 1);
        IF c IN ('(', '[') THEN
            depth := depth + 1;
        ELSIF c IN (')', ']') THEN
            depth := depth - 1;
            IF depth < 0 THEN
                RETURN NULL;
            END IF;
        ELSIF c = ',' AND depth = 0 THEN
            args := args || btrim(substr(a, start, i - start), E' \t\r\n');
            start := i + 1;
        ELSIF c = '''' THEN
            -- E'...' (e not ending an identifier) takes backslash escapes
            esc := i > 1 AND lower(substr(a, i - 1, 1)) = 'e'
                   AND (i = 2 OR substr(a, i - 2, 1) !~ '[A-Za-z0-9_$\u0080-\U0010FFFF]');
            i := i + 1;
            LOOP
                IF i > n THEN
                    RETURN NULL;
                END IF;
                c := substr(a, i, 1);
                IF esc AND c = E'\\' THEN
                    i := i + 2;
                ELSIF c = '''' AND substr(a, i + 1, 1) = '''' THEN
                    i := i + 2;
                ELSIF c = '''' THEN
                    EXIT;
                ELSE
                    i := i + 1;
                END IF;
            END LOOP;
        ELSIF c = '"' THEN
            -- "a""b" is two quoted pieces back to back: the same here
            j := strpos(substr(a, i + 1), '"');
            IF j = 0 THEN
                RETURN NULL;
            END IF;
            i := i + j;
        ELSIF c = '$' AND (i = 1 OR substr(a, i - 1, 1) !~ '[A-Za-z0-9_$\u0080-\U0010FFFF]') THEN
            -- $tag$...$tag$ ($1 is a parameter, a$b an identifier; as in
            -- PostgreSQL's lexer, letters beyond ASCII are letters)
            d := regexp_match(substr(a, i), '^\$([A-Za-z_\u0080-\U0010FFFF][A-Za-z0-9_\u0080-\U0010FFFF]*)?\$');
            IF d IS NOT NULL THEN
                d[1] := '$' || coalesce(d[1], '') || '$';
                j := strpos(substr(a, i + length(d[1])), d[1]);
                IF j = 0 THEN
                    RETURN NULL;
                END IF;
                i := i + length(d[1]) + j - 1 + length(d[1]) - 1;
            END IF;
        ELSIF c = '-' AND substr(a, i + 1, 1) = '-' THEN
            -- to the end of the line: \n or \r, as in PostgreSQL's lexer
            i := i + length((regexp_match(substr(a, i), '^[^\r\n]*'))[1]) - 1;
        ELSIF c = '/' AND substr(a, i + 1, 1) = '*' THEN
            -- block comments nest
            nest := 1;
            i := i + 2;
            WHILE nest > 0 LOOP
                IF i > n THEN
                    RETURN NULL;
                END IF;
                IF substr(a, i, 2) = '/*' THEN
                    nest := nest + 1;
                    i := i + 2;
                ELSIF substr(a, i, 2) = '*/' THEN
                    nest := nest - 1;
                    i := i + 2;
                ELSE
                    i := i + 1;
                END IF;
            END LOOP;
            i := i - 1;
        END IF;
        i := i + 1;
    END LOOP;
    IF depth <> 0 THEN
        RETURN NULL;
    END IF;
    RETURN args || btrim(substr(a, start), E' \t\r\n');
END
$$;
COMMENT ON FUNCTION @extschema@._processor_split_args(text) IS
'internal: the arguments of a window processor''s aggregate, split at top-level commas; NULL when a parenthesis, bracket, quote or comment is not balanced';
CREATE OR REPLACE FUNCTION @extschema@._processor_agg_argv(p @extschema@.processor_catalog, i integer,
                                                OUT exprs text[], OUT types text[], OUT cols text[])
RETURNS record
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    argtypes oid[];
BEGIN
    IF strpos(p.agg_funcs[i], '(') = 0 THEN
        exprs := ARRAY[p.agg_args[i]];
        types := ARRAY['numeric'];
        cols := ARRAY['x_' || i];
        RETURN;
    END IF;
    SELECT pr.proargtypes::oid[] INTO argtypes FROM pg_proc pr WHERE pr.oid = p.agg_funcs[i]::regprocedure;
    types := (SELECT array_agg(format_type(u.t, -1) ORDER BY u.o) FROM unnest(argtypes) WITH ORDINALITY AS u(t, o));
    IF cardinality(argtypes) = 1 THEN
        exprs := ARRAY[p.agg_args[i]];
        cols := ARRAY['x_' || i];
        RETURN;
    END IF;
    exprs := @extschema@._processor_split_args(p.agg_args[i]);
    IF exprs IS NULL OR cardinality(exprs) <> cardinality(argtypes) THEN
        RAISE EXCEPTION 'aggregate % of processor "%" has arguments "%" that do not split into %',
                        p.agg_funcs[i], p.name, p.agg_args[i], cardinality(argtypes)
            USING ERRCODE = 'data_corrupted';
    END IF;
    cols := (SELECT array_agg(format('x_%s_%s', i, j) ORDER BY j) FROM generate_series(1, cardinality(argtypes)) j);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_argv(@extschema@.processor_catalog, integer) IS
'internal: the argument expressions of a window processor''s aggregate, their types, and the columns a step keeps them in';
CREATE OR REPLACE FUNCTION @extschema@._processor_agg_type(p @extschema@.processor_catalog, i integer, what text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN strpos(p.agg_funcs[i], '(') = 0 THEN 'numeric'
                WHEN what = 'state' THEN (SELECT format_type(g.aggtranstype, -1) FROM pg_aggregate g
                                           WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure)
                ELSE (SELECT format_type(pr.proargtypes[0], -1) FROM pg_proc pr
                       WHERE pr.oid = p.agg_funcs[i]::regprocedure) END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_type(@extschema@.processor_catalog, integer, text) IS
'internal: the type of the state or the argument of a window processor''s aggregate';
CREATE OR REPLACE FUNCTION @extschema@._processor_create_state(p @extschema@.processor_catalog, caller regrole)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
    i integer;
    argt text;
    st text;
    records text := format('@extschema@.%I', 'processor_' || p.processor_id || '_records');
BEGIN
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        CONTINUE WHEN strpos(p.agg_funcs[i], '(') = 0;
        SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure;
        IF NOT FOUND OR ag.aggkind <> 'n' OR ag.aggcombinefn = 0 OR ag.aggfinalextra
           OR (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p' THEN
            RAISE EXCEPTION 'aggregate % cannot be combined', p.agg_funcs[i] USING ERRCODE = 'feature_not_supported';
        END IF;
        -- This runs as the extension's owner: no input function of a type
        -- of the user's may read an INITCOND here (_processor_parse_aggregate).
        IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
            RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', p.agg_funcs[i]
                USING ERRCODE = 'feature_not_supported';
        END IF;
        argt := array_to_string((@extschema@._processor_agg_argv(p, i)).types, ', ');
        st := format_type(ag.aggtranstype, -1);
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_partial_' || i, argt,
                       ag.aggtransfn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        -- Combining starts from the aggregate's initial value, as
        -- PostgreSQL's own combine phase does.
        EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                       'processor_' || p.processor_id || '_combine_' || i, st,
                       ag.aggcombinefn::text, st,
                       CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s, FINALFUNC = %s%s)',
                           'processor_' || p.processor_id || '_final_' || i, st,
                           ag.aggcombinefn::text, st, ag.aggfinalfn::text,
                           CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
        END IF;
        -- CREATE AGGREGATE finds its functions by name and argument types:
        -- a function of that name with closer argument types, put in the
        -- way by a role with CREATE on the schema, would be called instead
        -- of the aggregate's own.  Refuse unless each is the same function.
        IF EXISTS (SELECT FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggfnoid
                    WHERE pr.pronamespace = '@extschema@'::regnamespace
                      AND pr.proname IN ('processor_' || p.processor_id || '_partial_' || i,
                                         'processor_' || p.processor_id || '_combine_' || i,
                                         'processor_' || p.processor_id || '_final_' || i)
                      AND (g.aggtransfn <> CASE WHEN pr.proname LIKE '%\_partial\_%' THEN ag.aggtransfn ELSE ag.aggcombinefn END
                           OR g.aggfinalfn <> CASE WHEN pr.proname LIKE '%\_final\_%' THEN ag.aggfinalfn ELSE 0 END)) THEN
            RAISE EXCEPTION 'the functions of aggregate % are not found by their names', p.agg_funcs[i]
                USING ERRCODE = 'ambiguous_function',
                      DETAIL = 'Another function of the same name as the aggregate''s transition, combine or final function takes closer argument types.',
                      HINT = 'Drop the other function, or keep the aggregate''s functions in a schema where only trusted roles have CREATE.';
        END IF;
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_partial_' || i, argt, caller);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                       'processor_' || p.processor_id || '_combine_' || i, st, caller);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s',
                           'processor_' || p.processor_id || '_final_' || i, st, caller);
        END IF;
    END LOOP;
    IF p.window_type = 'sliding' THEN
        EXECUTE format('CREATE TABLE %s (group_key jsonb NOT NULL, ts timestamptz NOT NULL, lim timestamptz NOT NULL%s)',
                       records,
                       (SELECT string_agg(format(', %s %s', u.c, u.t), '' ORDER BY j, u.o)
                          FROM generate_series(1, cardinality(p.agg_funcs)) j,
                               LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                               LATERAL unnest(av.cols, av.types) WITH ORDINALITY AS u(c, t, o)));
        EXECUTE format('CREATE INDEX ON %s (group_key, ts)', records);
        EXECUTE format('COMMENT ON TABLE %s IS %L', records,
                       format('pg_eventlog processor %s: the records its sliding windows may still need (group key, event time, the watermark it came under, the aggregates'' arguments)', p.name));
        EXECUTE format('ALTER TABLE %s OWNER TO %s', records, caller);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) IS
'internal: makes a window processor''s partial, combine and final aggregates and a sliding window''s record buffer, owned by the processor''s owner';
REVOKE ALL ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) FROM PUBLIC;

-- The checks both aggregate parsers make, in one place.
CREATE FUNCTION @extschema@._processor_check_aggregate_use(proc regprocedure, ag pg_catalog.pg_aggregate)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
        RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('Its state type %s is not a built-in type, and the processor would read its initial value %L with that type''s input function as the extension''s owner.',
                            format_type(ag.aggtranstype, NULL), ag.agginitval),
            HINT = 'Use an aggregate whose state is of a built-in type, or one without an initial value.';
    END IF;
    IF NOT (has_function_privilege(proc, 'EXECUTE') AND has_function_privilege(ag.aggtransfn, 'EXECUTE')
            AND has_function_privilege(ag.aggcombinefn, 'EXECUTE')
            AND (ag.aggfinalfn = 0 OR has_function_privilege(ag.aggfinalfn, 'EXECUTE'))) THEN
        RAISE EXCEPTION 'permission denied for aggregate %', proc USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A window processor calls the aggregate''s transition, combine and final functions as its owner.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_check_aggregate_use(regprocedure, pg_catalog.pg_aggregate) IS
'internal: refuses an aggregate a window processor cannot set up safely (an initial value of a state type of the user''s) or that the caller may not run';
CREATE OR REPLACE FUNCTION @extschema@._processor_parse_aggregate(a text)
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m text[] := regexp_match(a, '^\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)?)\s*\((.*)\)\s*(?:as\s+([A-Za-z_][A-Za-z0-9_]*))?\s*$', 'i');
    fname text;
    arg text;
    typ oid;
    castable boolean;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
    args text[];
BEGIN
    IF m IS NULL OR btrim(m[2]) = '' OR (btrim(m[2]) = '*' AND lower(m[1]) <> 'count') THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An aggregate is count(*), or an aggregate function of one expression over the record, optionally followed by AS and a name.';
    END IF;
    args := @extschema@._processor_split_args(m[2]);
    IF args IS NULL THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A parenthesis, bracket, quote or comment in its arguments is not closed, or a parenthesis not opened.';
    END IF;
    IF cardinality(args) > 1 THEN
        IF '' = ANY (args) OR '*' = ANY (args) THEN
            RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'An aggregate of several arguments takes an expression over the record for each, separated by commas.';
        END IF;
        RETURN @extschema@._processor_parse_aggregate_n(a, m, args);
    END IF;
    fname := lower(regexp_replace(m[1], '\s', '', 'g'));
    arg := btrim(m[2]);
    IF fname = 'count' THEN
        RETURN ARRAY['count', arg, m[3], 'count'];
    END IF;
    -- The argument's type, without evaluating it (an outer join's NULL).
    EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                   '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                   arg) INTO typ;
    IF typ = 'unknown'::regtype THEN
        typ := 'text'::regtype;
    END IF;
    IF fname IN ('sum', 'min', 'max', 'avg') THEN
        -- Numbers, and whatever casts to numeric, as before: a numeric state.
        BEGIN
            EXECUTE format('SELECT NULL::%s::numeric', format_type(typ, NULL));
            castable := true;
        EXCEPTION WHEN cannot_coerce THEN
            castable := false;
        END;
        IF castable THEN
            RETURN ARRAY[fname, arg, m[3], fname];
        END IF;
    END IF;
    proc := to_regprocedure(format('%s(%s)', regexp_replace(m[1], '\s', '', 'g'), format_type(typ, NULL)));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(regexp_replace(m[1], '\s', '', 'g'));
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = 1
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND (SELECT t.typtype FROM pg_type t WHERE t.oid = pr.proargtypes[0]) = 'p'
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], format_type(typ, NULL)
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes one argument of a type it takes (cast it), and is named with its schema unless it is in pg_catalog.';
    END IF;
    SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = proc;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function % is not an aggregate', proc USING ERRCODE = 'wrong_object_type';
    END IF;
    IF ag.aggkind <> 'n' OR ag.aggcombinefn = 0 THEN
        RAISE EXCEPTION 'aggregate % cannot be combined', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = 'A window keeps a state per aggregate and combines it with the states of new records: the aggregate needs a combine function.';
    END IF;
    IF (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p'
       OR (SELECT t.typtype FROM pg_type t WHERE t.oid = typ) = 'p' OR ag.aggfinalextra THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('A window keeps an aggregate''s state in a column; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL)),
            HINT = 'Count, sum, min, max and avg of numbers have a state of their own; for stddev or variance, cast the argument to double precision.';
    END IF;
    PERFORM @extschema@._processor_check_aggregate_use(proc, ag);
    RETURN ARRAY[proc::text, arg, m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate(text) IS
'internal: an aggregate of a window processor, checked as the caller: the entry of agg_funcs (count, sum, min, max, avg, or an aggregate with a combine function as a regprocedure), its argument, its name, its function''s name';
CREATE OR REPLACE FUNCTION @extschema@._processor_parse_aggregate_n(a text, m text[], args text[])
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn text := regexp_replace(m[1], '\s', '', 'g');
    typs oid[] := '{}';
    typ oid;
    x text;
    tnames text;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
BEGIN
    FOREACH x IN ARRAY args LOOP
        -- The argument's type, without evaluating it (an outer join's NULL).
        EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                       '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                       x) INTO typ;
        typs := typs || CASE WHEN typ = 'unknown'::regtype THEN 'text'::regtype::oid ELSE typ END;
    END LOOP;
    tnames := (SELECT string_agg(format_type(u.t, NULL), ', ' ORDER BY u.o) FROM unnest(typs) WITH ORDINALITY AS u(t, o));
    proc := to_regprocedure(format('%s(%s)', fn, tnames));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(fn);
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = cardinality(args)
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND EXISTS (SELECT FROM unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t WHERE ty.typtype = 'p')
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], tnames
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes arguments of the types it takes (cast them), and is named with its schema unless it is in pg_catalog.';
    END IF;
    SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = proc;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function % is not an aggregate', proc USING ERRCODE = 'wrong_object_type';
    END IF;
    IF ag.aggkind <> 'n' OR ag.aggcombinefn = 0 THEN
        RAISE EXCEPTION 'aggregate % cannot be combined', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = 'A window keeps a state per aggregate and combines it with the states of new records: the aggregate needs a combine function.';
    END IF;
    -- internal is a pseudo-type too: string_agg, numeric states
    IF (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p' OR ag.aggfinalextra
       OR EXISTS (SELECT FROM pg_proc pr, unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t
                   WHERE pr.oid = proc AND ty.typtype = 'p') THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('A window keeps an aggregate''s state in a column of an SQL type, and the arguments in columns of theirs; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL));
    END IF;
    PERFORM @extschema@._processor_check_aggregate_use(proc, ag);
    RETURN ARRAY[proc::text, btrim(m[2], E' \t\r\n'), m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate_n(text, text[], text[]) IS
'internal: an aggregate of several arguments of a window processor, checked as the caller, as _processor_parse_aggregate returns it';

-- The aggregate look-up both parsers make, in one place.
CREATE FUNCTION @extschema@._processor_combinable_aggregate(proc regprocedure)
RETURNS pg_catalog.pg_aggregate
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
BEGIN
    SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = proc;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function % is not an aggregate', proc USING ERRCODE = 'wrong_object_type';
    END IF;
    IF ag.aggkind <> 'n' OR ag.aggcombinefn = 0 THEN
        RAISE EXCEPTION 'aggregate % cannot be combined', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = 'A window keeps a state per aggregate and combines it with the states of new records: the aggregate needs a combine function.';
    END IF;
    RETURN ag;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_combinable_aggregate(regprocedure) IS
'internal: the pg_aggregate row of an aggregate a window processor may use: a plain aggregate with a combine function';
CREATE OR REPLACE FUNCTION @extschema@._processor_parse_aggregate(a text)
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m text[] := regexp_match(a, '^\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)?)\s*\((.*)\)\s*(?:as\s+([A-Za-z_][A-Za-z0-9_]*))?\s*$', 'i');
    fname text;
    arg text;
    typ oid;
    castable boolean;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
    args text[];
BEGIN
    IF m IS NULL OR btrim(m[2]) = '' OR (btrim(m[2]) = '*' AND lower(m[1]) <> 'count') THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An aggregate is count(*), or an aggregate function of one expression over the record, optionally followed by AS and a name.';
    END IF;
    args := @extschema@._processor_split_args(m[2]);
    IF args IS NULL THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A parenthesis, bracket, quote or comment in its arguments is not closed, or a parenthesis not opened.';
    END IF;
    IF cardinality(args) > 1 THEN
        IF '' = ANY (args) OR '*' = ANY (args) THEN
            RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'An aggregate of several arguments takes an expression over the record for each, separated by commas.';
        END IF;
        RETURN @extschema@._processor_parse_aggregate_n(a, m, args);
    END IF;
    fname := lower(regexp_replace(m[1], '\s', '', 'g'));
    arg := btrim(m[2]);
    IF fname = 'count' THEN
        RETURN ARRAY['count', arg, m[3], 'count'];
    END IF;
    -- The argument's type, without evaluating it (an outer join's NULL).
    EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                   '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                   arg) INTO typ;
    IF typ = 'unknown'::regtype THEN
        typ := 'text'::regtype;
    END IF;
    IF fname IN ('sum', 'min', 'max', 'avg') THEN
        -- Numbers, and whatever casts to numeric, as before: a numeric state.
        BEGIN
            EXECUTE format('SELECT NULL::%s::numeric', format_type(typ, NULL));
            castable := true;
        EXCEPTION WHEN cannot_coerce THEN
            castable := false;
        END;
        IF castable THEN
            RETURN ARRAY[fname, arg, m[3], fname];
        END IF;
    END IF;
    proc := to_regprocedure(format('%s(%s)', regexp_replace(m[1], '\s', '', 'g'), format_type(typ, NULL)));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(regexp_replace(m[1], '\s', '', 'g'));
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = 1
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND (SELECT t.typtype FROM pg_type t WHERE t.oid = pr.proargtypes[0]) = 'p'
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], format_type(typ, NULL)
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes one argument of a type it takes (cast it), and is named with its schema unless it is in pg_catalog.';
    END IF;
    ag := @extschema@._processor_combinable_aggregate(proc);
    IF (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p'
       OR (SELECT t.typtype FROM pg_type t WHERE t.oid = typ) = 'p' OR ag.aggfinalextra THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('A window keeps an aggregate''s state in a column; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL)),
            HINT = 'Count, sum, min, max and avg of numbers have a state of their own; for stddev or variance, cast the argument to double precision.';
    END IF;
    PERFORM @extschema@._processor_check_aggregate_use(proc, ag);
    RETURN ARRAY[proc::text, arg, m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate(text) IS
'internal: an aggregate of a window processor, checked as the caller: the entry of agg_funcs (count, sum, min, max, avg, or an aggregate with a combine function as a regprocedure), its argument, its name, its function''s name';
CREATE OR REPLACE FUNCTION @extschema@._processor_parse_aggregate_n(a text, m text[], args text[])
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn text := regexp_replace(m[1], '\s', '', 'g');
    typs oid[] := '{}';
    typ oid;
    x text;
    tnames text;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
BEGIN
    FOREACH x IN ARRAY args LOOP
        -- The argument's type, without evaluating it (an outer join's NULL).
        EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                       '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                       x) INTO typ;
        typs := typs || CASE WHEN typ = 'unknown'::regtype THEN 'text'::regtype::oid ELSE typ END;
    END LOOP;
    tnames := (SELECT string_agg(format_type(u.t, NULL), ', ' ORDER BY u.o) FROM unnest(typs) WITH ORDINALITY AS u(t, o));
    proc := to_regprocedure(format('%s(%s)', fn, tnames));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(fn);
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = cardinality(args)
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND EXISTS (SELECT FROM unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t WHERE ty.typtype = 'p')
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], tnames
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes arguments of the types it takes (cast them), and is named with its schema unless it is in pg_catalog.';
    END IF;
    ag := @extschema@._processor_combinable_aggregate(proc);
    -- internal is a pseudo-type too: string_agg, numeric states
    IF (SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p' OR ag.aggfinalextra
       OR EXISTS (SELECT FROM pg_proc pr, unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t
                   WHERE pr.oid = proc AND ty.typtype = 'p') THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('A window keeps an aggregate''s state in a column of an SQL type, and the arguments in columns of theirs; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL));
    END IF;
    PERFORM @extschema@._processor_check_aggregate_use(proc, ag);
    RETURN ARRAY[proc::text, btrim(m[2], E' \t\r\n'), m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate_n(text, text[], text[]) IS
'internal: an aggregate of several arguments of a window processor, checked as the caller, as _processor_parse_aggregate returns it';

-- A step looks up the sink's rows only for windows ending at or before the
-- progress row's sink_through (_processor_emit_sql).

CREATE OR REPLACE FUNCTION @extschema@.__register_processor(spec jsonb)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    caller regrole := @extschema@._caller();
    n integer;
    progress text;
BEGIN
    IF spec IS NULL THEN
        RAISE EXCEPTION 'processor specification must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    p := jsonb_populate_record(NULL::@extschema@.processor_catalog, spec);
    IF p.name IS NULL OR p.name !~ '^[A-Za-z0-9._-]{1,100}$' THEN
        RAISE EXCEPTION 'invalid processor name "%"', left(p.name, 110)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A processor name is 1 to 100 letters, digits, ".", "_" or "-".';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.processor_catalog c WHERE c.name = p.name) THEN
        RAISE EXCEPTION 'processor "%" already exists', p.name USING ERRCODE = 'duplicate_object';
    END IF;
    p.source_topic_id := @extschema@._authorize(p.source_topic, 'consume');
    IF p.sink_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.sink_topic, 'produce');
    END IF;
    IF p.late_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.late_topic, 'produce');
    END IF;
    p.owner := caller;
    p.group_name := 'processor:' || p.name;
    p.created_at := now();
    p.processor_id := nextval(pg_get_serial_sequence('@extschema@.processor_catalog', 'processor_id'));
    INSERT INTO @extschema@.processor_catalog SELECT p.*;
    PERFORM @extschema@._create_group(p.source_topic, p.group_name, coalesce(spec ->> 'start_from', 'earliest'));

    -- State, the owner's: steps run as the owner and write it directly.
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = p.source_topic_id;
    progress := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    EXECUTE format('CREATE TABLE %s (partition integer PRIMARY KEY, max_event_time timestamptz, '
                   'last_record_at timestamptz, records bigint NOT NULL DEFAULT 0, '
                   'late_records bigint NOT NULL DEFAULT 0, null_time_records bigint NOT NULL DEFAULT 0, '
                   'closed_through timestamptz, sink_through timestamptz)', progress);
    EXECUTE format('INSERT INTO %s (partition, last_record_at) SELECT g, now() FROM generate_series(-1, %s) g',
                   progress, n - 1);
    EXECUTE format('COMMENT ON TABLE %s IS %L', progress,
                   format('pg_eventlog processor %s: per source partition, the largest event time seen and counters; partition -1: the watermark windows were closed up to, and the latest window end the sink table may hold a row of', p.name));
    EXECUTE format('ALTER TABLE %s OWNER TO %s', progress, caller);
    -- Watermarks and counters are public, as eventlog.consumer_groups is.
    EXECUTE format('GRANT SELECT ON %s TO PUBLIC', progress);
    IF p.kind = 'window' THEN
        EXECUTE format('CREATE TABLE @extschema@.%I (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, '
                       'group_key jsonb NOT NULL%s, closed boolean NOT NULL DEFAULT false)',
                       'processor_' || p.processor_id || '_windows',
                       (SELECT string_agg(format(', v_%s %s, n_%s bigint NOT NULL DEFAULT 0', i,
                                                 @extschema@._processor_agg_type(p, i, 'state'), i), '' ORDER BY i)
                          FROM generate_series(1, cardinality(p.agg_funcs)) i));
        -- One row per window and group key.  The key's hash comes before
        -- the key itself, so that finding a row compares jsonb only with
        -- the row it finds (an index on the key alone compares jsonb at
        -- every step down the tree: most of a step's upserts).  Equal jsonb
        -- values hash alike, so the index is unique exactly where a key on
        -- (window_start, group_key) would be.  Steps name it in ON CONFLICT.
        EXECUTE format('CREATE UNIQUE INDEX %I ON @extschema@.%I (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key)',
                       'processor_' || p.processor_id || '_windows_key', 'processor_' || p.processor_id || '_windows');
        EXECUTE format('COMMENT ON TABLE @extschema@.%I IS %L', 'processor_' || p.processor_id || '_windows',
                       format('pg_eventlog processor %s: one row per open window (or session) and group key, and per closed one kept for the retention', p.name));
        EXECUTE format('ALTER TABLE @extschema@.%I OWNER TO %s', 'processor_' || p.processor_id || '_windows', caller);
        PERFORM @extschema@._processor_create_state(p, caller);
    END IF;
    RETURN p.processor_id;
END
$$;
COMMENT ON FUNCTION @extschema@.__register_processor(jsonb) IS
'internal: the body of eventlog._register_processor, run as the extension owner on behalf of the caller eventlog._register_processor notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@.__register_processor(jsonb) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@._processor_emit_sql(p @extschema@.processor_catalog, flag text, gone_flag text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    gcols text := '';
    gmatch text := '';
    gmatch_gone text := '';
    outs text := '';
    sets text := '';
    jvals text := '';
    k text;
    o text;
    i integer;
    ctes text := '';
BEGIN
    FOR i IN 1 .. ng LOOP
        IF p.sink_table IS NOT NULL THEN
            gcols := gcols || format(', (u.group_key ->> %s)::%s', i - 1, p.sink_types[2 + i]);
            gmatch := gmatch || format(' AND s.%I IS NOT DISTINCT FROM (u.group_key ->> %s)::%s',
                                       p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
            gmatch_gone := gmatch_gone || format(' AND s.%I IS NOT DISTINCT FROM (gone.group_key ->> %s)::%s',
                                                 p.sink_columns[2 + i], i - 1, p.sink_types[2 + i]);
        END IF;
    END LOOP;
    FOR i IN 1 .. na LOOP
        o := @extschema@._processor_agg_out(p, i, 'u');
        outs := outs || ', ' || o;
        IF p.sink_table IS NOT NULL THEN
            sets := sets || format('%s%I = %s', CASE WHEN i > 1 THEN ', ' ELSE '' END,
                                   p.sink_columns[2 + ng + i], o);
        END IF;
        jvals := jvals || format(' || pg_catalog.jsonb_build_object(%L, %s)', p.agg_names[i], o);
    END LOOP;
    IF p.sink_table IS NOT NULL THEN
        IF gone_flag IS NOT NULL THEN
            ctes := format($f$sd AS (DELETE FROM %1$s AS s USING gone
        WHERE %2$s AND s.%3$I = gone.window_start AND s.%4$I = gone.window_end %5$s),
$f$, p.sink_table, gone_flag, p.sink_columns[1], p.sink_columns[2], gmatch_gone);
        END IF;
        /*
         * "sx": the windows written that have rows in the sink, found by
         * one scan of the sink (with the windows hashed, a small set, where
         * a NOT EXISTS would hash the whole sink at every step).  Only
         * windows ending at or before sink_through ("st") can have one: the
         * latest window end the processor wrote (or the sink held when the
         * processor was made), which a replay keeps.  So the scan is
         * skipped (the EXISTS is evaluated once, first) in the usual step,
         * whose windows end after every window written before: without
         * that the sink is read whole at every step, and a step's time
         * grows with the sink.  "sw" moves sink_through on (never back; a
         * NULL, from a processor made before it was kept, stays NULL: the
         * sink is then always looked up).
         */
        ctes := ctes || format($f$st AS (SELECT coalesce(max(sink_through), 'infinity') AS t_ FROM %9$s WHERE partition = -1),
sw AS (UPDATE %9$s AS p SET sink_through = x.m_
         FROM (SELECT max(u.window_end) AS m_ FROM u WHERE %3$s) AS x
        WHERE p.partition = -1 AND x.m_ > p.sink_through),
sx AS (SELECT u.window_start AS s_, u.window_end AS e_, u.group_key AS g_
        FROM u JOIN %1$s AS s ON s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s
        WHERE %3$s AND u.window_end <= (SELECT st.t_ FROM st)
          AND EXISTS (SELECT FROM u WHERE %3$s AND u.window_end <= (SELECT st.t_ FROM st))),
su AS (UPDATE %1$s AS s SET %2$s FROM u
        WHERE %3$s AND EXISTS (SELECT FROM sx) AND s.%4$I = u.window_start AND s.%5$I = u.window_end %6$s
          AND EXISTS (SELECT FROM sx WHERE sx.s_ = u.window_start AND sx.g_ = u.group_key AND sx.e_ = u.window_end)),
si AS (INSERT INTO %1$s SELECT u.window_start, u.window_end %7$s %8$s FROM u
        WHERE %3$s AND NOT EXISTS (SELECT FROM sx WHERE sx.s_ = u.window_start AND sx.g_ = u.group_key AND sx.e_ = u.window_end)),
$f$, p.sink_table, sets, flag, p.sink_columns[1], p.sink_columns[2], gmatch, gcols, outs,
                 format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress'));
    END IF;
    IF p.sink_topic IS NULL THEN
        RETURN ctes || 'so AS (SELECT 0::bigint AS n)';
    END IF;
    -- The record's key: the group value (one group_by expression) or the
    -- JSON array of them; its value: the window and the aggregates by name.
    k := CASE ng WHEN 0 THEN 'NULL::text' WHEN 1 THEN '%1$s.group_key ->> 0' ELSE '%1$s.group_key::text' END;
    RETURN ctes || format($f$so AS MATERIALIZED (
    SELECT count(@extschema@.produce(%1$L, x.k_, x.v_, NULL, NULL, x.t_)) AS n
      FROM (%2$s
            SELECT 1 AS o_, u.window_start AS s_, %3$s AS k_,
                   pg_catalog.jsonb_build_object('window_start', u.window_start, 'window_end', u.window_end,
                                                 'group_key', u.group_key) %4$s AS v_,
                   u.window_end AS t_
              FROM u WHERE %5$s
             ORDER BY 1, 2, 3) AS x)$f$,
        p.sink_topic,
        CASE WHEN gone_flag IS NULL THEN ''
             ELSE format($g$SELECT 0 AS o_, gone.window_start AS s_, %s AS k_,
                   pg_catalog.jsonb_build_object('window_start', gone.window_start, 'window_end', gone.window_end,
                                                 'group_key', gone.group_key, 'deleted', true) AS v_,
                   gone.window_end AS t_
              FROM gone WHERE %s
            UNION ALL
            $g$, format(k, 'gone'), gone_flag) END,
        format(k, 'u'), jvals, flag);
END
$$;
COMMENT ON FUNCTION @extschema@._processor_emit_sql(@extschema@.processor_catalog, text, text) IS
'internal: the CTEs writing window rows to a processor''s sink table and sink topic';

CREATE OR REPLACE FUNCTION @extschema@.create_window_processor(name text, source_topic text,
                                                    sink_table regclass DEFAULT NULL,
                                                    size interval DEFAULT NULL,
                                                    window_type text DEFAULT 'tumbling',
                                                    advance interval DEFAULT NULL,
                                                    group_by text[] DEFAULT ARRAY['key'],
                                                    aggregates text[] DEFAULT ARRAY['count(*)'],
                                                    where_clause text DEFAULT NULL,
                                                    event_time text DEFAULT 'event_time',
                                                    time_mode text DEFAULT 'event',
                                                    allowed_lateness interval DEFAULT '0',
                                                    max_out_of_orderness interval DEFAULT '0',
                                                    idle_timeout interval DEFAULT '1 minute',
                                                    emit text DEFAULT 'final',
                                                    start_from text DEFAULT 'earliest',
                                                    gap interval DEFAULT NULL,
                                                    late text DEFAULT 'drop',
                                                    late_topic text DEFAULT NULL,
                                                    retention interval DEFAULT '0',
                                                    sink_topic text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    m text[];
    a text;
    i integer;
    ncols integer;
    fnames text[] := '{}';
    pid integer;
BEGIN
    IF name IS NULL OR source_topic IS NULL OR (size IS NULL AND window_type IS DISTINCT FROM 'session')
       OR window_type IS NULL OR group_by IS NULL OR aggregates IS NULL OR event_time IS NULL
       OR time_mode IS NULL OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL
       OR idle_timeout IS NULL OR emit IS NULL OR late IS NULL OR retention IS NULL
       OR array_position(group_by, NULL) IS NOT NULL
       OR array_position(aggregates, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of a window processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only sink_table or sink_topic (one of them), size (of a session window), advance, gap, where_clause and late_topic may be null.';
    END IF;
    IF sink_table IS NULL AND sink_topic IS NULL THEN
        RAISE EXCEPTION 'a window processor writes to a sink table, a sink topic or both'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table, sink_topic or both.';
    END IF;
    IF window_type NOT IN ('tumbling', 'hopping', 'session', 'sliding') THEN
        RAISE EXCEPTION 'window_type must be ''tumbling'', ''hopping'', ''sliding'' or ''session''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF window_type = 'sliding' AND advance IS NOT NULL THEN
        RAISE EXCEPTION 'a sliding window has no advance' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'A sliding window ends at each record and reaches size back: pass only size.';
    END IF;
    IF window_type = 'session' THEN
        IF gap IS NULL THEN
            RAISE EXCEPTION 'a session window needs gap' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The gap is the inactivity that ends a session, for example gap => ''30 minutes''.';
        END IF;
        IF size IS NOT NULL OR advance IS NOT NULL THEN
            RAISE EXCEPTION 'a session window has no size or advance' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A session lasts as long as its records come within gap of each other: pass only gap.';
        END IF;
        IF gap <= '0' OR date_part('month', gap) <> 0 OR date_part('year', gap) <> 0 THEN
            RAISE EXCEPTION 'invalid session gap %', gap USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The gap is a positive interval without months or years.';
        END IF;
    ELSE
        IF gap IS NOT NULL THEN
            RAISE EXCEPTION 'gap is only for session windows' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''session'', or size (and advance) for tumbling and hopping windows.';
        END IF;
        IF window_type = 'tumbling' AND advance IS NOT NULL AND advance <> size THEN
            RAISE EXCEPTION 'a tumbling window advances by its size' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''hopping'' for windows that overlap.';
        END IF;
        IF window_type = 'hopping' AND advance IS NULL THEN
            RAISE EXCEPTION 'a hopping window needs advance' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        advance := coalesce(advance, size);
        IF size <= '0' OR advance <= '0' OR advance > size
           OR date_part('month', size) <> 0 OR date_part('year', size) <> 0
           OR date_part('month', advance) <> 0 OR date_part('year', advance) <> 0 THEN
            RAISE EXCEPTION 'invalid window size % or advance %', size, advance
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'Size and advance are positive intervals without months or years, advance at most the size.';
        END IF;
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF time_mode NOT IN ('event', 'processing') THEN
        RAISE EXCEPTION 'time_mode must be ''event'' or ''processing''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF emit NOT IN ('final', 'changes') THEN
        RAISE EXCEPTION 'emit must be ''final'' or ''changes''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late NOT IN ('drop', 'topic', 'update') THEN
        RAISE EXCEPTION 'late must be ''drop'', ''topic'' or ''update''' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention.';
    END IF;
    IF late = 'topic' AND late_topic IS NULL THEN
        RAISE EXCEPTION 'late => ''topic'' needs late_topic' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the topic late records are sent to.';
    END IF;
    IF late <> 'topic' AND late_topic IS NOT NULL THEN
        RAISE EXCEPTION 'late_topic is only for late => ''topic''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late_topic = source_topic OR sink_topic = source_topic THEN
        RAISE EXCEPTION 'a window processor must not write to its source topic' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Its own records would come back to it as input.';
    END IF;
    IF retention < '0' THEN
        RAISE EXCEPTION 'retention must not be negative' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(aggregates) = 0 THEN
        RAISE EXCEPTION 'a window processor needs at least one aggregate' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.name := name;
    p.kind := 'window';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.where_clause := where_clause;
    p.event_time_expr := event_time;
    p.time_mode := time_mode;
    p.window_type := window_type;
    -- days as 24 hours (_processor_hours)
    p.size := @extschema@._processor_hours(size);
    p.advance := CASE WHEN window_type = 'sliding' THEN NULL ELSE @extschema@._processor_hours(advance) END;
    p.gap := @extschema@._processor_hours(gap);
    p.allowed_lateness := @extschema@._processor_hours(allowed_lateness);
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE @extschema@._processor_hours(max_out_of_orderness) END;
    p.idle_timeout := idle_timeout;
    p.emit := emit;
    p.late := late;
    p.late_topic := late_topic;
    p.retention := @extschema@._processor_hours(retention);
    p.group_by := group_by;
    p.agg_funcs := '{}';
    p.agg_args := '{}';
    p.agg_names := '{}';
    FOREACH a IN ARRAY aggregates LOOP
        -- count, sum, min, max and avg of numbers (or text), or any
        -- aggregate with a combine function (streams_windows.sql)
        m := @extschema@._processor_parse_aggregate(a);
        p.agg_funcs := p.agg_funcs || m[1];
        p.agg_args := p.agg_args || m[2];
        p.agg_names := p.agg_names || m[3];
        fnames := fnames || m[4];
    END LOOP;
    -- The sink's columns in order: window start, window end, one per
    -- group_by expression, one per aggregate.
    IF sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum), array_agg(format_type(att.atttypid, att.atttypmod) ORDER BY att.attnum)
          INTO p.sink_columns, p.sink_types
          FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        ncols := 2 + cardinality(group_by) + cardinality(aggregates);
        IF coalesce(cardinality(p.sink_columns), 0) <> ncols THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes %', sink_table,
                            coalesce(cardinality(p.sink_columns), 0), ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: window start, window end, one per group_by expression, one per aggregate.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT, UPDATE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A window processor selects, inserts and updates its sink table.';
        END IF;
        IF window_type = 'session' AND NOT has_table_privilege(sink_table, 'DELETE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A session window processor also deletes the rows of sessions that merged into others.';
        END IF;
    END IF;
    -- The aggregates' names in the records of a sink topic: "AS name", else
    -- the sink table's column, else the function (numbered when repeated).
    FOR i IN 1 .. cardinality(aggregates) LOOP
        p.agg_names[i] := coalesce(p.agg_names[i], p.sink_columns[2 + cardinality(group_by) + i],
                                   CASE WHEN array_position(fnames[i + 1:], fnames[i]) IS NULL
                                         AND array_position(fnames[:i - 1], fnames[i]) IS NULL
                                        THEN fnames[i] ELSE fnames[i] || '_' || i END);
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM unnest(p.agg_names) x) < cardinality(aggregates) THEN
        RAISE EXCEPTION 'two aggregates are named alike' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name them apart with "AS name".';
    END IF;
    -- The expressions over no records, as the caller; the group keys and
    -- aggregate arguments inside CASE, as a step evaluates them (so that a
    -- set-returning function there fails now, not at every step).
    EXECUTE format('SELECT %s, CASE WHEN true THEN pg_catalog.jsonb_build_array(%s) END %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record WHERE %s',
                   CASE time_mode WHEN 'processing' THEN 'NULL' ELSE '(' || event_time || ')::timestamptz' END,
                   (SELECT string_agg('(' || g || ')', ', ') FROM unnest(group_by) g),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::%s END', CASE u.x WHEN '*' THEN 'NULL' ELSE u.x END,
                                             u.t), '' ORDER BY j, u.o)
                      FROM generate_series(1, cardinality(p.agg_funcs)) j,
                           LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                           LATERAL unnest(av.exprs, av.types) WITH ORDINALITY AS u(x, t, o)),
                   coalesce('(' || where_clause || ')', 'true'));
    -- and the casts of the group keys to the sink's column types
    IF sink_table IS NOT NULL THEN
        FOR i IN 1 .. cardinality(group_by) LOOP
            EXECUTE format('SELECT NULL::text::%s', p.sink_types[2 + i]);
        END LOOP;
    END IF;
    pid := @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
    -- The latest window end of a row the sink holds already (a processor
    -- made again over it, one that wrote it before): the processor looks
    -- those rows up to overwrite them (_processor_emit_sql), not the later
    -- ones it alone writes.  Read as the caller, who may select the sink; a
    -- window end column of another type than the processor's is compared
    -- through a cast that depends on the session: it is always looked up.
    IF sink_table IS NOT NULL THEN
        EXECUTE format('UPDATE @extschema@.%I SET sink_through = %s WHERE partition = -1',
                       'processor_' || pid || '_progress',
                       CASE WHEN p.sink_types[2] = 'timestamp with time zone'
                            THEN format('coalesce((SELECT max(s.%I) FROM %s AS s), ''-infinity'')', p.sink_columns[2], sink_table)
                            ELSE '''infinity''' END);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text, interval, text, text, interval, text) IS
'creates a windowed aggregate: tumbling or hopping windows of size (advancing by advance), sliding windows (a window of size ending at each record), or session windows (gap), over event time (an expression over the record) or processing time, grouped by expressions, count/sum/min/max/avg or any aggregate with a combine function, written to sink_table and/or sink_topic when a window closes (emit final) or as it changes (emit changes); late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention';

-- Window aggregates whose state is internal, kept as sealed bytea
-- (src/agg_state.c): the key's table, the sealing functions, and the
-- parsers, checks and state that take them.
CREATE TABLE @extschema@.processor_state_key (
    id  boolean PRIMARY KEY DEFAULT true CHECK (id),
    key bytea NOT NULL CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.=) 32)
);
COMMENT ON TABLE @extschema@.processor_state_key IS
'pg_eventlog: the secret key sealing the window states of aggregates whose state is internal (one row, made with the first such processor)';
REVOKE ALL ON @extschema@.processor_state_key FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.processor_state_key', '');

/*
 * The support functions of a processor's aggregates of an internal state.
 * They take internal, so SQL can call them only through an aggregate (and
 * only a superuser can create one whose state is internal); they refuse
 * any other caller.  PUBLIC may execute them: the processor's owner owns
 * the aggregates, and PostgreSQL checks that the owner may run their
 * functions.
 */
CREATE FUNCTION @extschema@._agg_state_seal(internal)
RETURNS bytea
AS 'MODULE_PATHNAME', 'el_agg_state_seal'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@._agg_state_seal(internal) IS
'internal: the final function of a window processor''s partial and combine aggregates of an internal state: the state through the aggregate''s serial function, sealed';

CREATE FUNCTION @extschema@._agg_state_merge(internal, bytea)
RETURNS internal
AS 'MODULE_PATHNAME', 'el_agg_state_merge'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@._agg_state_merge(internal, bytea) IS
'internal: the transition function of a window processor''s combine and final aggregates of an internal state: a sealed state checked, deserialized and combined';

CREATE FUNCTION @extschema@._processor_sealable_state(ag pg_catalog.pg_aggregate)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ag.aggtranstype = 'internal'::regtype AND ag.aggserialfn <> 0 AND ag.aggdeserialfn <> 0
           AND ag.aggcombinefn <> 0 AND ag.aggfinalfn <> 0
$$;
COMMENT ON FUNCTION @extschema@._processor_sealable_state(pg_catalog.pg_aggregate) IS
'internal: whether a window processor can keep the internal state of an aggregate: it has combine, serial, deserial and final functions';

CREATE FUNCTION @extschema@._processor_state_refusal(ag pg_catalog.pg_aggregate)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN ag.aggfinalextra
                THEN 'A window keeps an aggregate''s state in a column and finishes it with the final function alone; this aggregate''s final function takes extra arguments.'
                WHEN ag.aggtranstype = 'internal'::regtype AND NOT @extschema@._processor_sealable_state(ag)
                THEN 'A window keeps an internal state in a column as the bytes of the aggregate''s serial function, read back with its deserial function and finished with its final function; this aggregate lacks one of them.'
                ELSE format('A window keeps an aggregate''s state and arguments in columns of their types, which cannot be polymorphic; the state of this aggregate is of type %s.',
                            format_type(ag.aggtranstype, NULL)) END
$$;
COMMENT ON FUNCTION @extschema@._processor_state_refusal(pg_catalog.pg_aggregate) IS
'internal: why a window processor cannot keep the state of an aggregate, as the DETAIL of its 0A000';

CREATE OR REPLACE FUNCTION @extschema@._processor_check_aggregate_use(proc regprocedure, ag pg_catalog.pg_aggregate)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
        RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = format('Its state type %s is not a built-in type, and the processor would read its initial value %L with that type''s input function as the extension''s owner.',
                            format_type(ag.aggtranstype, NULL), ag.agginitval),
            HINT = 'Use an aggregate whose state is of a built-in type, or one without an initial value.';
    END IF;
    IF NOT (has_function_privilege(proc, 'EXECUTE') AND has_function_privilege(ag.aggtransfn, 'EXECUTE')
            AND has_function_privilege(ag.aggcombinefn, 'EXECUTE')
            AND (ag.aggfinalfn = 0 OR has_function_privilege(ag.aggfinalfn, 'EXECUTE'))
            AND (ag.aggserialfn = 0 OR has_function_privilege(ag.aggserialfn, 'EXECUTE'))
            AND (ag.aggdeserialfn = 0 OR has_function_privilege(ag.aggdeserialfn, 'EXECUTE'))) THEN
        RAISE EXCEPTION 'permission denied for aggregate %', proc USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'A window processor calls the aggregate''s transition, combine, serial, deserial and final functions as its owner.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_check_aggregate_use(regprocedure, pg_catalog.pg_aggregate) IS
'internal: refuses an aggregate a window processor cannot set up safely (an initial value of a state type of the user''s) or that the caller may not run';

CREATE OR REPLACE FUNCTION @extschema@._processor_parse_aggregate(a text)
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m text[] := regexp_match(a, '^\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)?)\s*\((.*)\)\s*(?:as\s+([A-Za-z_][A-Za-z0-9_]*))?\s*$', 'i');
    fname text;
    arg text;
    typ oid;
    castable boolean;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
    args text[];
BEGIN
    IF m IS NULL OR btrim(m[2]) = '' OR (btrim(m[2]) = '*' AND lower(m[1]) <> 'count') THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An aggregate is count(*), or an aggregate function of one expression over the record, optionally followed by AS and a name.';
    END IF;
    args := @extschema@._processor_split_args(m[2]);
    IF args IS NULL THEN
        RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A parenthesis, bracket, quote or comment in its arguments is not closed, or a parenthesis not opened.';
    END IF;
    IF cardinality(args) > 1 THEN
        IF '' = ANY (args) OR '*' = ANY (args) THEN
            RAISE EXCEPTION 'invalid aggregate "%"', a USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'An aggregate of several arguments takes an expression over the record for each, separated by commas.';
        END IF;
        RETURN @extschema@._processor_parse_aggregate_n(a, m, args);
    END IF;
    fname := lower(regexp_replace(m[1], '\s', '', 'g'));
    arg := btrim(m[2]);
    IF fname = 'count' THEN
        RETURN ARRAY['count', arg, m[3], 'count'];
    END IF;
    -- The argument's type, without evaluating it (an outer join's NULL).
    EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                   '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                   arg) INTO typ;
    IF typ = 'unknown'::regtype THEN
        typ := 'text'::regtype;
    END IF;
    IF fname IN ('sum', 'min', 'max', 'avg') THEN
        -- Numbers, and whatever casts to numeric, as before: a numeric state.
        BEGIN
            EXECUTE format('SELECT NULL::%s::numeric', format_type(typ, NULL));
            castable := true;
        EXCEPTION WHEN cannot_coerce THEN
            castable := false;
        END;
        IF castable THEN
            RETURN ARRAY[fname, arg, m[3], fname];
        END IF;
    END IF;
    proc := to_regprocedure(format('%s(%s)', regexp_replace(m[1], '\s', '', 'g'), format_type(typ, NULL)));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(regexp_replace(m[1], '\s', '', 'g'));
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = 1
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND (SELECT t.typtype FROM pg_type t WHERE t.oid = pr.proargtypes[0]) = 'p'
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], format_type(typ, NULL)
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes one argument of a type it takes (cast it), and is named with its schema unless it is in pg_catalog.';
    END IF;
    ag := @extschema@._processor_combinable_aggregate(proc);
    IF ((SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p'
        AND NOT @extschema@._processor_sealable_state(ag))
       OR (SELECT t.typtype FROM pg_type t WHERE t.oid = typ) = 'p' OR ag.aggfinalextra THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = @extschema@._processor_state_refusal(ag),
            HINT = 'Count, sum, min, max and avg of numbers have a state of their own; cast the argument to a type the aggregate takes without a polymorphic argument or state.';
    END IF;
    PERFORM @extschema@._processor_check_aggregate_use(proc, ag);
    RETURN ARRAY[proc::text, arg, m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate(text) IS
'internal: an aggregate of a window processor, checked as the caller: the entry of agg_funcs (count, sum, min, max, avg, or an aggregate with a combine function as a regprocedure), its argument, its name, its function''s name';

CREATE OR REPLACE FUNCTION @extschema@._processor_parse_aggregate_n(a text, m text[], args text[])
RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn text := regexp_replace(m[1], '\s', '', 'g');
    typs oid[] := '{}';
    typ oid;
    x text;
    tnames text;
    proc regprocedure;
    ag pg_aggregate;
    names text[];
BEGIN
    FOREACH x IN ARRAY args LOOP
        -- The argument's type, without evaluating it (an outer join's NULL).
        EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_)::oid FROM (SELECT 1) AS d_ LEFT JOIN '
                       '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                       x) INTO typ;
        typs := typs || CASE WHEN typ = 'unknown'::regtype THEN 'text'::regtype::oid ELSE typ END;
    END LOOP;
    tnames := (SELECT string_agg(format_type(u.t, NULL), ', ' ORDER BY u.o) FROM unnest(typs) WITH ORDINALITY AS u(t, o));
    proc := to_regprocedure(format('%s(%s)', fn, tnames));
    IF proc IS NULL THEN
        -- A polymorphic aggregate of that name (refused below, with why).
        names := parse_ident(fn);
        SELECT pr.oid INTO proc FROM pg_proc pr
         WHERE pr.proname = names[cardinality(names)] AND pr.prokind = 'a' AND pr.pronargs = cardinality(args)
           AND CASE WHEN cardinality(names) = 2 THEN pr.pronamespace = to_regnamespace(names[1])
                    ELSE pg_function_is_visible(pr.oid) END
           AND EXISTS (SELECT FROM unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t WHERE ty.typtype = 'p')
         ORDER BY pr.oid LIMIT 1;
    END IF;
    IF proc IS NULL THEN
        RAISE EXCEPTION 'aggregate %(%) does not exist', m[1], tnames
            USING ERRCODE = 'undefined_function',
                  HINT = 'An aggregate of a window processor takes arguments of the types it takes (cast them), and is named with its schema unless it is in pg_catalog.';
    END IF;
    ag := @extschema@._processor_combinable_aggregate(proc);
    -- internal is a pseudo-type too: kept sealed if it can be serialized
    IF ((SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p'
        AND NOT @extschema@._processor_sealable_state(ag))
       OR ag.aggfinalextra
       OR EXISTS (SELECT FROM pg_proc pr, unnest(pr.proargtypes) AS u(t) JOIN pg_type ty ON ty.oid = u.t
                   WHERE pr.oid = proc AND ty.typtype = 'p') THEN
        RAISE EXCEPTION 'the state of aggregate % cannot be kept in a window', proc USING ERRCODE = 'feature_not_supported',
            DETAIL = @extschema@._processor_state_refusal(ag);
    END IF;
    PERFORM @extschema@._processor_check_aggregate_use(proc, ag);
    RETURN ARRAY[proc::text, btrim(m[2], E' \t\r\n'), m[3], (SELECT pr.proname::text FROM pg_proc pr WHERE pr.oid = proc)];
END
$$;
COMMENT ON FUNCTION @extschema@._processor_parse_aggregate_n(text, text[], text[]) IS
'internal: an aggregate of several arguments of a window processor, checked as the caller, as _processor_parse_aggregate returns it';

CREATE OR REPLACE FUNCTION @extschema@._processor_agg_type(p @extschema@.processor_catalog, i integer, what text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN strpos(p.agg_funcs[i], '(') = 0 THEN 'numeric'
                -- an internal state is kept as sealed bytes (src/agg_state.c)
                WHEN what = 'state' THEN (SELECT CASE WHEN g.aggtranstype = 'internal'::regtype THEN 'bytea'
                                                      ELSE format_type(g.aggtranstype, -1) END
                                            FROM pg_aggregate g
                                           WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure)
                ELSE (SELECT format_type(pr.proargtypes[0], -1) FROM pg_proc pr
                       WHERE pr.oid = p.agg_funcs[i]::regprocedure) END
$$;
COMMENT ON FUNCTION @extschema@._processor_agg_type(@extschema@.processor_catalog, integer, text) IS
'internal: the type of the state or the argument of a window processor''s aggregate';

CREATE OR REPLACE FUNCTION @extschema@._processor_create_state(p @extschema@.processor_catalog, caller regrole)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ag pg_aggregate;
    i integer;
    argt text;
    st text;
    part text;
    comb text;
    fin text;
    sup text;
    sealed boolean;
    records text := format('@extschema@.%I', 'processor_' || p.processor_id || '_records');
BEGIN
    FOR i IN 1 .. cardinality(p.agg_funcs) LOOP
        CONTINUE WHEN strpos(p.agg_funcs[i], '(') = 0;
        SELECT * INTO ag FROM pg_aggregate g WHERE g.aggfnoid = p.agg_funcs[i]::regprocedure;
        IF NOT FOUND OR ag.aggkind <> 'n' OR ag.aggcombinefn = 0 OR ag.aggfinalextra
           OR ((SELECT t.typtype FROM pg_type t WHERE t.oid = ag.aggtranstype) = 'p'
               AND NOT @extschema@._processor_sealable_state(ag)) THEN
            RAISE EXCEPTION 'aggregate % cannot be combined', p.agg_funcs[i] USING ERRCODE = 'feature_not_supported';
        END IF;
        -- This runs as the extension's owner: no input function of a type
        -- of the user's may read an INITCOND here (_processor_parse_aggregate).
        IF ag.agginitval IS NOT NULL AND ag.aggtranstype::oid >= 16384 THEN
            RAISE EXCEPTION 'the initial state of aggregate % cannot be set up in a window', p.agg_funcs[i]
                USING ERRCODE = 'feature_not_supported';
        END IF;
        argt := array_to_string((@extschema@._processor_agg_argv(p, i)).types, ', ');
        part := 'processor_' || p.processor_id || '_partial_' || i;
        comb := 'processor_' || p.processor_id || '_combine_' || i;
        fin := 'processor_' || p.processor_id || '_final_' || i;
        sealed := ag.aggtranstype = 'internal'::regtype;
        IF sealed THEN
            /*
             * An internal state, kept sealed (src/agg_state.c): the
             * partial and combine aggregates end in _agg_state_seal, the
             * combine and final ones take sealed states with
             * _agg_state_merge; each carries the aggregate's combine,
             * serial and deserial functions, which those two call.  The
             * database's key first, if this is the first.
             */
            INSERT INTO @extschema@.processor_state_key (key)
            VALUES (pg_catalog.sha256(pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
                                      || pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
                                      || pg_catalog.uuid_send(pg_catalog.gen_random_uuid())))
            ON CONFLICT (id) DO NOTHING;
            st := 'bytea';
            sup := format(', COMBINEFUNC = %s, SERIALFUNC = %s, DESERIALFUNC = %s',
                          ag.aggcombinefn::text, ag.aggserialfn::text, ag.aggdeserialfn::text);
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = internal, FINALFUNC = @extschema@._agg_state_seal%s)',
                           part, argt, ag.aggtransfn::text, sup);
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (bytea) (SFUNC = @extschema@._agg_state_merge, STYPE = internal, FINALFUNC = @extschema@._agg_state_seal%s)',
                           comb, sup);
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (bytea) (SFUNC = @extschema@._agg_state_merge, STYPE = internal, FINALFUNC = %s, FINALFUNC_MODIFY = %s%s)',
                           fin, ag.aggfinalfn::text,
                           CASE ag.aggfinalmodify WHEN 'r' THEN 'READ_ONLY' WHEN 's' THEN 'SHAREABLE' ELSE 'READ_WRITE' END, sup);
        ELSE
            st := format_type(ag.aggtranstype, -1);
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                           part, argt, ag.aggtransfn::text, st,
                           CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
            -- Combining starts from the aggregate's initial value, as
            -- PostgreSQL's own combine phase does.
            EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s%s)',
                           comb, st, ag.aggcombinefn::text, st,
                           CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
            IF ag.aggfinalfn <> 0 THEN
                EXECUTE format('CREATE AGGREGATE @extschema@.%I (%s) (SFUNC = %s, STYPE = %s, FINALFUNC = %s%s)',
                               fin, st, ag.aggcombinefn::text, st, ag.aggfinalfn::text,
                               CASE WHEN ag.agginitval IS NULL THEN '' ELSE format(', INITCOND = %L', ag.agginitval) END);
            END IF;
        END IF;
        -- CREATE AGGREGATE finds its functions by name and argument types:
        -- a function of that name with closer argument types, put in the
        -- way by a role with CREATE on the schema, would be called instead
        -- of the aggregate's own.  Refuse unless each is the same function.
        IF EXISTS (SELECT FROM pg_aggregate g JOIN pg_proc pr ON pr.oid = g.aggfnoid
                    WHERE pr.pronamespace = '@extschema@'::regnamespace
                      AND pr.proname IN (part, comb, fin)
                      AND (g.aggtransfn::oid <> CASE WHEN pr.proname = part THEN ag.aggtransfn::oid
                                                     WHEN sealed THEN '@extschema@._agg_state_merge(internal, bytea)'::regprocedure::oid
                                                     ELSE ag.aggcombinefn::oid END
                           OR g.aggfinalfn::oid <> CASE WHEN pr.proname = fin THEN ag.aggfinalfn::oid
                                                        WHEN sealed THEN '@extschema@._agg_state_seal(internal)'::regprocedure::oid
                                                        ELSE 0 END
                           OR (sealed AND (g.aggcombinefn <> ag.aggcombinefn OR g.aggserialfn <> ag.aggserialfn
                                           OR g.aggdeserialfn <> ag.aggdeserialfn)))) THEN
            RAISE EXCEPTION 'the functions of aggregate % are not found by their names', p.agg_funcs[i]
                USING ERRCODE = 'ambiguous_function',
                      DETAIL = 'Another function of the same name as the aggregate''s transition, combine, serial, deserial or final function takes closer argument types.',
                      HINT = 'Drop the other function, or keep the aggregate''s functions in a schema where only trusted roles have CREATE.';
        END IF;
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s', part, argt, caller);
        EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s', comb, st, caller);
        IF ag.aggfinalfn <> 0 THEN
            EXECUTE format('ALTER AGGREGATE @extschema@.%I (%s) OWNER TO %s', fin, st, caller);
        END IF;
    END LOOP;
    IF p.window_type = 'sliding' THEN
        EXECUTE format('CREATE TABLE %s (group_key jsonb NOT NULL, ts timestamptz NOT NULL, lim timestamptz NOT NULL%s)',
                       records,
                       (SELECT string_agg(format(', %s %s', u.c, u.t), '' ORDER BY j, u.o)
                          FROM generate_series(1, cardinality(p.agg_funcs)) j,
                               LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                               LATERAL unnest(av.cols, av.types) WITH ORDINALITY AS u(c, t, o)));
        EXECUTE format('CREATE INDEX ON %s (group_key, ts)', records);
        EXECUTE format('COMMENT ON TABLE %s IS %L', records,
                       format('pg_eventlog processor %s: the records its sliding windows may still need (group key, event time, the watermark it came under, the aggregates'' arguments)', p.name));
        EXECUTE format('ALTER TABLE %s OWNER TO %s', records, caller);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) IS
'internal: makes a window processor''s partial, combine and final aggregates and a sliding window''s record buffer, owned by the processor''s owner';
REVOKE ALL ON FUNCTION @extschema@._processor_create_state(@extschema@.processor_catalog, regrole) FROM PUBLIC;

-- Sliding windows make Kafka Streams' right windows too, [t + 1 microsecond,
-- t + 1 microsecond + size] when not empty (docs/streams.md, sliding windows):
-- the step, a record's lateness and the record buffer's pruning.
/*
 * The body of a sliding window's step (after the CTE "e" of
 * _processor_step_sql; $8 the size, $9 how late a record may be, $12
 * allowed_lateness): Kafka Streams' SlidingWindows, with PostgreSQL's clock
 * tick (one microsecond, timestamptz's: "tick") for Kafka's millisecond, so
 * that a right window starts at the first time after its record that a
 * record can have, as in Kafka Streams (docs/streams.md).  A group's
 * windows are [t - size, t] (left) and [t + tick, t + tick + size] (right)
 * for each record time t, both ends in; the two are the same window when
 * their starts are (a window is its start and group: all have the length
 * size).  A record at t counts in the window of its key ending at e
 * (start <= t <= e) unless the watermark it came under (lim_) is past
 * e + $9: a window with both ends in is closed when the watermark passes
 * its end (Kafka Streams: stream time > end + grace), so that a record at
 * the watermark counts in its own window (with processing time, every
 * record).  A left window exists when a record at its end counts in it; a
 * right window when a record at its start - tick is in the buffer (a
 * record is, unless late: its right window is open) and some record counts
 * in it (Kafka Streams makes no empty right window).  The records that are
 * not late go to the buffer ("nr"); the windows the batch changes ("c":
 * from each pair of a new record and a record of its key within size after
 * it, the left window of the later, which may hold the new one; within
 * size + tick before it, the right window of the earlier, which may; and
 * each new record's own right window when a record comes after it in it,
 * unless that window's row exists, as the record does not change it) are
 * recomputed from the buffer and the batch ("ar", only the keys and times
 * the batch can reach), and replace their rows.  One pass over the pairs
 * makes both kinds of windows (a pair makes one), and a semi-join the
 * right windows of the new records, so that records with no other within
 * size (sparse keys) cost about what they did with left windows only.
 */
CREATE OR REPLACE FUNCTION @extschema@._processor_sliding_sql(p @extschema@.processor_catalog, partials text, cols text, sets text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    records text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_records');
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    -- every aggregate's argument columns, as _processor_create_state made them
    ecols text := (SELECT string_agg(', e.' || u.c, '' ORDER BY i, u.o)
                     FROM generate_series(1, cardinality(p.agg_funcs)) i,
                          LATERAL @extschema@._processor_agg_argv(p, i) AS av,
                          LATERAL unnest(av.cols) WITH ORDINALITY AS u(c, o));
BEGIN
    RETURN format($f$
nr AS (SELECT e.gk_ AS group_key, e.ts_ AS ts, e.lim_ AS lim %1$s FROM e WHERE e.in_ AND NOT e.late_),
ins AS (INSERT INTO %2$s SELECT * FROM nr),
ar AS (SELECT r.* FROM %2$s AS r
        WHERE r.group_key IN (SELECT nr.group_key FROM nr)
          AND r.ts >= (SELECT min(nr.ts) FROM nr) - $8 - %8$L::interval
          AND r.ts <= (SELECT max(nr.ts) FROM nr) + $8 + %8$L::interval
       UNION ALL SELECT * FROM nr),
c AS (SELECT v.gk_, v.we_, bool_or(v.r_) AS r_
        FROM (SELECT a.group_key AS gk_,
                     CASE WHEN a.ts >= nr.ts THEN a.ts ELSE a.ts + %8$L::interval + $8 END AS we_,
                     a.ts < nr.ts AS r_
                FROM nr JOIN ar AS a ON a.group_key = nr.group_key
                                    AND a.ts >= nr.ts - $8 - %8$L::interval AND a.ts <= nr.ts + $8
               WHERE CASE WHEN a.ts >= nr.ts THEN a.ts ELSE a.ts + %8$L::interval + $8 END + $9 >= nr.lim
              UNION ALL
              SELECT nr.group_key, nr.ts + %8$L::interval + $8, true FROM nr
               WHERE EXISTS (SELECT FROM ar AS a WHERE a.group_key = nr.group_key
                                                   AND a.ts > nr.ts AND a.ts <= nr.ts + $8 + %8$L::interval)
                 AND NOT EXISTS (SELECT FROM %4$s AS w WHERE w.window_start = nr.ts + %8$L::interval
                                                          AND w.group_key = nr.group_key)) AS v
       GROUP BY v.gk_, v.we_),
agg AS (SELECT c.we_ - $8, c.we_, c.gk_ %3$s, c.we_ + $12 < (SELECT ct.c_ FROM ct)
          FROM c JOIN ar AS a ON a.group_key = c.gk_ AND a.ts >= c.we_ - $8 AND a.ts <= c.we_ AND c.we_ + $9 >= a.lim
         GROUP BY c.we_, c.gk_, c.r_ HAVING c.r_ OR bool_or(a.ts = c.we_)),
u AS (INSERT INTO %4$s AS t (window_start, window_end, group_key %5$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %6$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%7$s,$f$,
        ecols, records, partials, windows, cols, sets,
        @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL),
        -- the tick (_processor_step_sql and _processor_close_sql use it too)
        '1 microsecond');
END
$$;
/*
 * The statement of one step, over a batch: "batch" is a FROM item giving
 * eventlog.record rows (the poll, or an empty set when create checks the
 * expressions).  $1 topic, $2 group, $3 max_records, $4 partitions, $5 the
 * sink topic, $6 the poll's wait; for windows (see run_processor) $7
 * max_out_of_orderness, $8 the size (a session window's gap), $9 how late
 * a record may be and still count (allowed_lateness, plus the retention
 * with late => 'update'), $10 advance, $11 emit changes, $12
 * allowed_lateness (when a window closes), $13 the late-records topic.
 * The user's expressions are pasted in parentheses: they are the owner's
 * SQL and run as the owner.
 */
CREATE OR REPLACE FUNCTION @extschema@._processor_step_sql(p @extschema@.processor_catalog, batch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    filter text := coalesce('(' || p.where_clause || ')', 'true');
    ts text;
    gk text;
    xs text := '';
    partials text := '';
    cols text := '';
    merge text := '';
    rv text := '';
    comb text := '';
    sets text := '';
    fmerge text := '';
    head text;
    body text;
    late_out text;
    ng integer := coalesce(cardinality(p.group_by), 0);
    na integer := coalesce(cardinality(p.agg_funcs), 0);
    i integer;
    f text;
    g text[];
    windows text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_windows');
    progress text := format('@extschema@.%I', 'processor_' || coalesce(p.processor_id, 0) || '_progress');
    tsx text;
    inx text;
    lat text := '';
    raw boolean;
    gr text := '';
    gby text := 'ws_';
    typ regtype;
    coll text;
BEGIN
    IF p.kind = 'map' AND p.sink_table IS NOT NULL THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS (INSERT INTO %s SELECT %s FROM b AS record WHERE %s) '
                      'SELECT count(*) FROM b',
                      batch, p.sink_table, p.select_list, filter);
    ELSIF p.kind = 'map' THEN
        RETURN format('WITH b AS MATERIALIZED (SELECT * FROM %s AS record), '
                      'o AS MATERIALIZED (SELECT count(@extschema@.produce($5, (%s)::text, (%s)::jsonb, NULL, NULL, (%s)::timestamptz)) AS n '
                      '  FROM (SELECT * FROM b AS record WHERE %s ORDER BY record.partition, record.offset_id) AS record) '
                      'SELECT (SELECT count(*) FROM b) FROM o',
                      batch, p.key_expr, p.value_expr, p.event_time_expr, filter);
    END IF;

    -- Windows.
    ts := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()'
                           ELSE '(' || p.event_time_expr || ')::timestamptz' END;
    /*
     * A record's time ("tsx") and whether it counts ("inx"), each evaluated
     * once per record: in a LATERAL subquery of their own, unless the time
     * is the record's event_time column (or now(), the same all through
     * the statement) and there is no filter, when reading them again is
     * the same as keeping them, and the subquery (three executor nodes
     * started again for every record) is not needed.
     */
    IF p.where_clause IS NULL
       AND (p.time_mode = 'processing' OR p.event_time_expr ~* '^\s*(record\s*\.\s*)?event_time\s*$') THEN
        tsx := CASE p.time_mode WHEN 'processing' THEN 'pg_catalog.now()' ELSE 'record.event_time' END;
        inx := format('(%s IS NOT NULL)', tsx);
    ELSE
        tsx := 't_.ts_';
        inx := 't_.in_';
        lat := format($f$
                           CROSS JOIN LATERAL (SELECT x_.ts_, CASE WHEN x_.ts_ IS NULL THEN false ELSE (%s) IS TRUE END AS in_
                                                 FROM (SELECT %s AS ts_ OFFSET 0) AS x_ OFFSET 0) AS t_$f$, filter, ts);
    END IF;
    gk := 'pg_catalog.jsonb_build_array(';
    FOR i IN 1 .. ng LOOP
        gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || '(' || p.group_by[i] || ')';
    END LOOP;
    gk := gk || ')';
    /*
     * Tumbling and hopping windows group a batch by the group key, a jsonb
     * array of the group_by values, built for every record.  Where equal
     * values make equal jsonb and unequal values unequal jsonb (the types
     * below; text only in a deterministic collation, where equal means the
     * same bytes, as in jsonb: not citext nor a case-insensitive
     * collation), grouping by the values themselves makes the same groups,
     * and the jsonb is built once per group ("raw").  The types are found
     * without evaluating the expressions (an outer join's NULL).
     */
    raw := p.window_type IN ('tumbling', 'hopping');
    FOR i IN 1 .. ng LOOP
        EXIT WHEN NOT raw;
        EXECUTE format('SELECT pg_catalog.pg_typeof(s_.x_) FROM (SELECT 1) AS d_ LEFT JOIN '
                       '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                       p.group_by[i]) INTO typ;
        raw := typ IN ('boolean'::regtype, 'smallint'::regtype, 'integer'::regtype, 'bigint'::regtype,
                       'text'::regtype, 'character varying'::regtype, 'uuid'::regtype, 'date'::regtype,
                       'timestamp without time zone'::regtype, 'timestamp with time zone'::regtype);
        IF raw AND typ IN ('text'::regtype, 'character varying'::regtype) THEN
            EXECUTE format('SELECT pg_catalog.pg_collation_for(s_.x_) FROM (SELECT 1) AS d_ LEFT JOIN '
                           '(SELECT (%s) AS x_ FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record) AS s_ ON true',
                           p.group_by[i]) INTO coll;
            raw := coll IS NULL OR (SELECT c.collisdeterministic FROM pg_collation c WHERE c.oid = coll::regcollation);
        END IF;
        gr := gr || format(', CASE WHEN %s THEN (%s) END AS gr%s_', inx, p.group_by[i], i);
        gby := gby || format(', gr%s_', i);
    END LOOP;
    IF raw THEN
        gk := 'pg_catalog.jsonb_build_array(';
        FOR i IN 1 .. ng LOOP
            gk := gk || CASE WHEN i > 1 THEN ', ' ELSE '' END || format('gr%s_', i);
        END LOOP;
        gk := gk || ')';
    ELSE
        gr := format(', CASE WHEN %s THEN %s END AS gk_', inx, gk);
        gk := 'gk_';
        gby := 'ws_, gk_';
    END IF;
    FOR i IN 1 .. na LOOP
        f := p.agg_funcs[i];
        -- any other aggregate with a combine function (streams_windows.sql)
        IF strpos(f, '(') > 0 THEN
            g := @extschema@._processor_agg_sql(p, i);
            -- its argument, or each of its arguments, in a column of its own
            xs := xs || (SELECT string_agg(format(', CASE WHEN %s THEN (%s)::%s END AS %s', inx, u.x, u.t, u.c), '' ORDER BY u.o)
                           FROM @extschema@._processor_agg_argv(p, i) AS av,
                                LATERAL unnest(av.exprs, av.types, av.cols) WITH ORDINALITY AS u(x, t, c, o));
            partials := partials || g[2]; cols := cols || format(', v_%s, n_%s', i, i);
            merge := merge || g[3]; rv := rv || g[4]; comb := comb || g[5]; fmerge := fmerge || g[6];
            sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
            CONTINUE;
        END IF;
        xs := xs || format(', CASE WHEN %s THEN (%s)::numeric END AS x_%s', inx,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'NULL'
                                WHEN f = 'count' THEN 'CASE WHEN (' || p.agg_args[i] || ') IS NULL THEN NULL ELSE 1 END'
                                ELSE p.agg_args[i] END, i);
        partials := partials || format(', %s, %s',
                                       CASE f WHEN 'min' THEN format('min(x_%s)', i)
                                              WHEN 'max' THEN format('max(x_%s)', i)
                                              WHEN 'count' THEN 'NULL::numeric'
                                              ELSE format('sum(x_%s)', i) END,
                                       CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN 'count(*)'
                                            ELSE format('count(x_%s)', i) END);
        cols := cols || format(', v_%s, n_%s', i, i);
        merge := merge || format(', n_%1$s = t.n_%1$s + excluded.n_%1$s, v_%1$s = %2$s', i,
                                 CASE f WHEN 'min' THEN format('least(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'max' THEN format('greatest(t.v_%1$s, excluded.v_%1$s)', i)
                                        WHEN 'count' THEN 'NULL'
                                        ELSE format('CASE WHEN t.v_%1$s IS NULL THEN excluded.v_%1$s WHEN excluded.v_%1$s IS NULL THEN t.v_%1$s ELSE t.v_%1$s + excluded.v_%1$s END', i) END);
        -- sessions: a record as a partial (value, count), and partials combined
        rv := rv || format(', %s AS v_%s, %s AS n_%s',
                           CASE WHEN f = 'count' THEN 'NULL::numeric' ELSE format('e.x_%s', i) END, i,
                           CASE WHEN f = 'count' AND p.agg_args[i] = '*' THEN '1::bigint'
                                ELSE format('CASE WHEN e.x_%s IS NULL THEN 0 ELSE 1 END::bigint', i) END, i);
        comb := comb || format(', %s, sum(n_%s)::bigint',
                               CASE f WHEN 'min' THEN format('min(v_%s)', i)
                                      WHEN 'max' THEN format('max(v_%s)', i)
                                      WHEN 'count' THEN 'NULL::numeric'
                                      ELSE format('sum(v_%s)', i) END, i);
        sets := sets || format(', v_%1$s = excluded.v_%1$s, n_%1$s = excluded.n_%1$s', i);
        -- a window closed in the step: its row (dc, if any) and the batch's
        -- partial (cl, if any) combined, as "merge" combines them
        fmerge := fmerge || format(', %2$s, coalesce(dc.n_%1$s, 0) + coalesce(cl.n_%1$s, 0)', i,
                                   CASE f WHEN 'min' THEN format('least(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'max' THEN format('greatest(dc.v_%1$s, cl.v_%1$s)', i)
                                          WHEN 'count' THEN 'NULL::numeric'
                                          ELSE format('CASE WHEN dc.v_%1$s IS NULL THEN cl.v_%1$s WHEN cl.v_%1$s IS NULL THEN dc.v_%1$s ELSE dc.v_%1$s + cl.v_%1$s END', i) END);
    END LOOP;

    /*
     * The user's expressions are evaluated once per record, in "b" (the
     * LATERAL subquery, kept apart by OFFSET 0, evaluates the event time and
     * the filter once; the group keys and aggregate arguments only for the
     * records that pass, as a WHERE would), so that only narrow rows are
     * materialized.  A record is late for all its windows when it is late
     * for the one that ends last (the one starting at date_bin(advance,
     * ts)): "late_" decides late_records without grouping the windows of
     * each record.  A session window's record is late when the session of
     * that record alone would be closed (its time + gap + lateness before
     * the watermark), so that lateness does not depend on how the records
     * of other partitions were cut into steps.  A sliding window's record
     * is late when its right window (which ends last, at its time + size +
     * the tick, _processor_sliding_sql) is closed.  A record's watermark
     * ("wm_") is the largest event time before it in its partition (the
     * progress row's, or an earlier record's of the batch), less
     * max_out_of_orderness: _processor_record_watermark computes it as the
     * poll returns the records, each partition's in offset order, from the
     * progress rows (read once, as arrays) and the records before.  "w_"
     * is kept a subquery of its own (OFFSET 0), so that it is computed
     * once per record as the poll returns it; so is closed_through ("c_",
     * an InitPlan), where a join would cost a node per record.
     */
    head := format($f$
WITH prev AS (SELECT partition AS p_, max_event_time AS m_ FROM %3$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %3$s WHERE partition = -1),
e AS MATERIALIZED (
    SELECT w_.*, greatest(w_.wm_, w_.c_) AS lim_,
           (%7$s) AS late_
      FROM (SELECT record.partition AS p_, record.offset_id AS o_, %1$s AS ts_, %6$s AS in_
                   %4$s %5$s %8$s,
                   @extschema@._processor_record_watermark(record.partition, record.offset_id, %1$s,
                       (SELECT pg_catalog.array_agg(prev.p_ ORDER BY prev.p_) FROM prev),
                       (SELECT pg_catalog.array_agg(prev.m_ ORDER BY prev.p_) FROM prev)) - $7 AS wm_,
                   (SELECT ct.c_ FROM ct) AS c_
              FROM %2$s AS record%9$s
             OFFSET 0) AS w_),
pe AS MATERIALIZED (
    SELECT e.p_, max(e.ts_) AS m_, count(*) AS n_, count(*) FILTER (WHERE e.in_ AND e.late_) AS l_,
           count(*) FILTER (WHERE e.ts_ IS NULL) AS z_
      FROM e GROUP BY e.p_),$f$,
        tsx, batch, progress, gr, xs, inx,
        CASE WHEN p.window_type = 'session'
             THEN 'w_.ts_ + $8 + $9 < greatest(w_.wm_, w_.c_)'
             WHEN p.window_type = 'sliding'
             THEN 'w_.ts_ + $8 + ''1 microsecond''::interval + $9 < greatest(w_.wm_, w_.c_)'
             ELSE 'date_bin($10, w_.ts_, ''1970-01-01 00:00:00+00'') + $8 + $9 <= greatest(w_.wm_, w_.c_)' END,
        CASE WHEN p.late = 'topic'
             THEN ', record.key AS rk_, record.value AS rv_, record.headers AS rh_, record.event_time AS ret_'
             ELSE '' END,
        lat);

    -- Late records to the late-records topic, in offset order.
    late_out := CASE WHEN p.late = 'topic'
        THEN 'lt AS MATERIALIZED (SELECT count(@extschema@.produce($13, x.rk_, x.rv_, x.rh_, NULL, x.ret_)) AS n '
             '  FROM (SELECT e.* FROM e WHERE e.in_ AND e.late_ ORDER BY e.p_, e.o_) AS x)'
        ELSE 'lt AS (SELECT 0::bigint AS n)' END;

    IF p.window_type = 'session' THEN
        /*
         * Sessions: the records that count ("r", each a session of one
         * record), and the sessions in state that one of them reaches
         * (within gap of its start or end, as Kafka Streams' findSessions)
         * are laid on one line per group key and merged where they come
         * within gap of each other (gaps and islands: a new session starts
         * where a start is more than gap after every end before it).  The
         * merged sessions replace the ones they absorbed: a merged session
         * keeps the start of one of them (upserted) or deletes it.  Their
         * rows in the sink go too ("gone": the absorbed sessions that were
         * written, in full or as changes).
         */
        body := format($f$
r AS (SELECT e.gk_, e.ts_ AS s_, e.ts_ AS e_ %1$s FROM e WHERE e.in_ AND NOT e.late_),
o AS MATERIALIZED (SELECT w.* FROM %2$s AS w
                    WHERE EXISTS (SELECT FROM r WHERE r.gk_ = w.group_key
                                     AND r.s_ >= w.window_start - $8 AND r.s_ <= w.window_end + $8)),
iv AS (SELECT r.* FROM r UNION ALL SELECT o.group_key, o.window_start, o.window_end %3$s FROM o),
isl AS (SELECT y.*, count(*) FILTER (WHERE y.mx_ IS NULL OR y.s_ > y.mx_ + $8)
                        OVER (PARTITION BY y.gk_ ORDER BY y.s_, y.e_ ROWS UNBOUNDED PRECEDING) AS i_
          FROM (SELECT iv.*, max(iv.e_) OVER (PARTITION BY iv.gk_ ORDER BY iv.s_, iv.e_
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx_
                  FROM iv) AS y),
agg AS (SELECT min(s_) AS ws_, max(e_) AS we_, gk_ %4$s FROM isl GROUP BY gk_, i_),
gone AS (SELECT o.* FROM o WHERE NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key
                                                AND agg.ws_ = o.window_start AND agg.we_ = o.window_end)),
d AS (DELETE FROM %2$s AS w USING o
       WHERE w.window_start = o.window_start AND w.group_key = o.group_key
         AND NOT EXISTS (SELECT FROM agg WHERE agg.gk_ = o.group_key AND agg.ws_ = o.window_start)),
u AS (INSERT INTO %2$s AS t (window_start, window_end, group_key %3$s, closed)
      SELECT agg.*, agg.we_ + $8 + $12 < (SELECT ct.c_ FROM ct) FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %5$s, closed = excluded.closed
      RETURNING t.*),
%6$s,$f$,
            rv, windows, cols, comb, sets,
            @extschema@._processor_emit_sql(p, '($11 OR u.closed)', '($11 OR gone.closed)'));
    ELSIF p.window_type = 'sliding' THEN
        body := @extschema@._processor_sliding_sql(p, partials, cols, sets);
    ELSE
        /*
         * Tumbling and hopping windows: the batch's partials combine with
         * the window rows.  A window is written to the sink as it changes
         * (emit changes), or when it closes, or, closed already, when a late
         * record updates it (late => 'update', within the retention).
         */
        body := format($f$
a AS (%1$s),
agg (window_start, window_end, group_key %4$s, closed) AS (
    SELECT ws_, ws_ + $8, %5$s %2$s, ws_ + $8 + $12 <= (SELECT ct.c_ FROM ct) FROM a GROUP BY %6$s),$f$,
            CASE WHEN p.size = p.advance
                 THEN 'SELECT e.*, date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') AS ws_ FROM e WHERE e.in_ AND NOT e.late_'
                 ELSE 'SELECT e.*, w.ws_ FROM e, LATERAL generate_series(date_bin($10, e.ts_, ''1970-01-01 00:00:00+00'') - $8 + $10, '
                      'date_bin($10, e.ts_, ''1970-01-01 00:00:00+00''), $10) AS w(ws_) '
                      'WHERE e.in_ AND w.ws_ + $8 > e.ts_ AND NOT (w.ws_ + $8 + $9 <= e.lim_)' END,
            partials, windows, cols, gk, gby);
        IF p.time_mode = 'event' AND coalesce(p.retention, '0') = '0'
           AND NOT (p.late = 'topic' AND p.late_topic IS NOT DISTINCT FROM p.sink_topic) THEN
            /*
             * Close in the step the windows that the step's own watermark
             * closes, instead of writing them into the window rows for the
             * closing statement to delete (most windows of a large step):
             * "wl" is a lower bound of the watermark run_processor computes
             * after this statement (the least over all partitions, active
             * or idle, of the largest event time seen, this batch's
             * included, minus max_out_of_orderness), NULL when it closes
             * nothing new.  The batch's partials of the windows it closes
             * ("cl") combine with their rows, deleted ("dc"), and are
             * written as the closing statement would have written them
             * (emit final: every window it closes; emit changes: those the
             * batch changed); the other partials are upserted ("u0").  The
             * closing statement then closes what the watermark passes
             * beyond "wl" (usually nothing); windows close in the same
             * order, in the same transaction.  Without a retention a
             * closed window is deleted as it closes, so nothing else
             * changes.
             */
            body := body || format($f$
bm AS (SELECT pe.p_, pe.m_ FROM pe),
wl AS (SELECT CASE WHEN x.w_ > (SELECT ct.c_ FROM ct) THEN x.w_ END AS w_
         FROM (SELECT min(coalesce(greatest(prev.m_, bm.m_), '-infinity')) - $7 AS w_
                 FROM pg_catalog.generate_series(0, $4 - 1) AS g(p_)
                 LEFT JOIN prev ON prev.p_ = g.p_ LEFT JOIN bm ON bm.p_ = g.p_) AS x),
cl AS (SELECT agg.* FROM agg, wl WHERE agg.window_end + $12 <= wl.w_),
dc AS (DELETE FROM %1$s AS w USING wl
        WHERE w.window_end + $12 <= wl.w_%8$s AND EXISTS (SELECT FROM wl WHERE wl.w_ IS NOT NULL) RETURNING w.*),
u0 AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
       SELECT agg.* FROM agg, wl WHERE wl.w_ IS NULL OR agg.window_end + $12 > wl.w_
       ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                   closed = t.closed OR excluded.closed%6$s),
u (window_start, window_end, group_key %2$s, closed) AS (%7$s
      SELECT coalesce(cl.window_start, dc.window_start), coalesce(cl.window_end, dc.window_end),
             coalesce(cl.group_key, dc.group_key) %4$s, true
        FROM cl FULL JOIN dc ON dc.window_start = cl.window_start AND dc.group_key = cl.group_key
       WHERE cl.window_start IS NOT NULL OR NOT ($11 OR dc.closed)),
%5$s,$f$,
                windows, cols, merge, fmerge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL),
                -- With emit final, what "u0" upserts is never written: its
                -- windows are open (a record of a window the watermark
                -- closed is late, and without a retention no closed window
                -- stays in the state), so it returns nothing to write.
                CASE WHEN p.emit = 'final' THEN '' ELSE E'\n       RETURNING t.*' END,
                CASE WHEN p.emit = 'final' THEN '' ELSE E'SELECT * FROM u0\n      UNION ALL' END,
                @extschema@._processor_start_range(p, 'w', '(SELECT ct.c_ FROM ct)', 'wl.w_', '0'));
        ELSE
            body := body || format($f$
u AS (INSERT INTO %1$s AS t (window_start, window_end, group_key %2$s, closed)
      SELECT * FROM agg
      ON CONFLICT (window_start, pg_catalog.jsonb_hash_extended(group_key, 0), group_key) DO UPDATE SET window_end = excluded.window_end %3$s,
                  closed = t.closed OR excluded.closed
      RETURNING t.*),
%4$s,$f$,
                windows, cols, merge,
                @extschema@._processor_emit_sql(p, '($11 OR u.closed)', NULL));
        END IF;
    END IF;

    RETURN head || body || format($f$
%2$s,
pu AS (INSERT INTO %1$s AS t (partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT pe.p_, pe.m_, pg_catalog.now(), pe.n_, pe.l_, pe.z_ FROM pe
       ON CONFLICT (partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT (SELECT coalesce(sum(pe.n_), 0)::bigint FROM pe) FROM so, lt$f$, progress, late_out);
END
$$;
/*
 * The statement closing windows up to a watermark ($1); $2 allowed_lateness,
 * $3 emit final, $4 how long closed windows are kept (the retention; for
 * sessions plus the gap, as long as a record that counts can still reach
 * them), $5 a session's gap, $6 the watermark windows were closed up to
 * before ('-infinity' at first).  A session closes when the watermark passes
 * its end (its last record) + gap + lateness, as in Kafka Streams.  Without
 * anything to keep, the closed windows are deleted at once, as they close.
 */
CREATE OR REPLACE FUNCTION @extschema@._processor_close_sql(p @extschema@.processor_catalog)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    windows text := format('@extschema@.%I', 'processor_' || p.processor_id || '_windows');
    closes text := CASE WHEN p.window_type = 'session' THEN 'window_end + $5 + $2 < $1'
                        WHEN p.window_type = 'sliding' THEN 'window_end + $2 < $1'
                        ELSE 'window_end + $2 <= $1' END;
    -- sliding windows: the records no window that may still change holds
    -- or starts just after (the last, their right window: its end is
    -- their time + size + the tick, _processor_sliding_sql)
    rx text := CASE WHEN p.window_type = 'sliding'
                    THEN format('rx AS (DELETE FROM @extschema@.%I WHERE ts + %L::interval < $1), ',
                                'processor_' || p.processor_id || '_records',
                                p.size + interval '1 microsecond' + p.allowed_lateness
                                + CASE WHEN p.late = 'update' THEN p.retention ELSE '0' END)
                    ELSE '' END;
BEGIN
    IF p.window_type <> 'session' AND coalesce(p.retention, '0') = '0' THEN
        RETURN format('WITH %s u AS (DELETE FROM %s AS w WHERE %s%s RETURNING *), %s SELECT count(*) FROM u, so',
                      rx, windows, closes, @extschema@._processor_start_range(p, 'w', '$6', '$1', '0'),
                      @extschema@._processor_emit_sql(p, '($3 AND NOT u.closed)', NULL));
    END IF;
    RETURN format('WITH %5$s u AS (UPDATE %1$s AS w SET closed = true WHERE NOT closed AND %2$s%6$s RETURNING *), %3$s, '
                  'x AS (DELETE FROM %1$s AS w WHERE closed AND %4$s%7$s) SELECT count(*) FROM u, so',
                  windows, closes, @extschema@._processor_emit_sql(p, '$3', NULL),
                  CASE WHEN p.window_type = 'session' THEN 'window_end + $5 + $2 + $4 < $1'
                       WHEN p.window_type = 'sliding' THEN 'window_end + $2 + $4 < $1'
                       ELSE 'window_end + $2 + $4 <= $1' END, rx,
                  @extschema@._processor_start_range(p, 'w', '$6', '$1', '0'),
                  @extschema@._processor_start_range(p, 'w', NULL, '$1', coalesce(p.retention, '0')));
END
$$;

-- create_window_processor: the hint for a sliding window's advance, and the
-- comment, name the right windows.
CREATE OR REPLACE FUNCTION @extschema@.create_window_processor(name text, source_topic text,
                                                    sink_table regclass DEFAULT NULL,
                                                    size interval DEFAULT NULL,
                                                    window_type text DEFAULT 'tumbling',
                                                    advance interval DEFAULT NULL,
                                                    group_by text[] DEFAULT ARRAY['key'],
                                                    aggregates text[] DEFAULT ARRAY['count(*)'],
                                                    where_clause text DEFAULT NULL,
                                                    event_time text DEFAULT 'event_time',
                                                    time_mode text DEFAULT 'event',
                                                    allowed_lateness interval DEFAULT '0',
                                                    max_out_of_orderness interval DEFAULT '0',
                                                    idle_timeout interval DEFAULT '1 minute',
                                                    emit text DEFAULT 'final',
                                                    start_from text DEFAULT 'earliest',
                                                    gap interval DEFAULT NULL,
                                                    late text DEFAULT 'drop',
                                                    late_topic text DEFAULT NULL,
                                                    retention interval DEFAULT '0',
                                                    sink_topic text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    m text[];
    a text;
    i integer;
    ncols integer;
    fnames text[] := '{}';
BEGIN
    IF name IS NULL OR source_topic IS NULL OR (size IS NULL AND window_type IS DISTINCT FROM 'session')
       OR window_type IS NULL OR group_by IS NULL OR aggregates IS NULL OR event_time IS NULL
       OR time_mode IS NULL OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL
       OR idle_timeout IS NULL OR emit IS NULL OR late IS NULL OR retention IS NULL
       OR array_position(group_by, NULL) IS NOT NULL
       OR array_position(aggregates, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of a window processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only sink_table or sink_topic (one of them), size (of a session window), advance, gap, where_clause and late_topic may be null.';
    END IF;
    IF sink_table IS NULL AND sink_topic IS NULL THEN
        RAISE EXCEPTION 'a window processor writes to a sink table, a sink topic or both'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table, sink_topic or both.';
    END IF;
    IF window_type NOT IN ('tumbling', 'hopping', 'session', 'sliding') THEN
        RAISE EXCEPTION 'window_type must be ''tumbling'', ''hopping'', ''sliding'' or ''session''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF window_type = 'sliding' AND advance IS NOT NULL THEN
        RAISE EXCEPTION 'a sliding window has no advance' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Sliding windows follow the records (one ends at each, one starts just after it): pass only size.';
    END IF;
    IF window_type = 'session' THEN
        IF gap IS NULL THEN
            RAISE EXCEPTION 'a session window needs gap' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The gap is the inactivity that ends a session, for example gap => ''30 minutes''.';
        END IF;
        IF size IS NOT NULL OR advance IS NOT NULL THEN
            RAISE EXCEPTION 'a session window has no size or advance' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A session lasts as long as its records come within gap of each other: pass only gap.';
        END IF;
        IF gap <= '0' OR date_part('month', gap) <> 0 OR date_part('year', gap) <> 0 THEN
            RAISE EXCEPTION 'invalid session gap %', gap USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The gap is a positive interval without months or years.';
        END IF;
    ELSE
        IF gap IS NOT NULL THEN
            RAISE EXCEPTION 'gap is only for session windows' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''session'', or size (and advance) for tumbling and hopping windows.';
        END IF;
        IF window_type = 'tumbling' AND advance IS NOT NULL AND advance <> size THEN
            RAISE EXCEPTION 'a tumbling window advances by its size' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''hopping'' for windows that overlap.';
        END IF;
        IF window_type = 'hopping' AND advance IS NULL THEN
            RAISE EXCEPTION 'a hopping window needs advance' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        advance := coalesce(advance, size);
        IF size <= '0' OR advance <= '0' OR advance > size
           OR date_part('month', size) <> 0 OR date_part('year', size) <> 0
           OR date_part('month', advance) <> 0 OR date_part('year', advance) <> 0 THEN
            RAISE EXCEPTION 'invalid window size % or advance %', size, advance
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'Size and advance are positive intervals without months or years, advance at most the size.';
        END IF;
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF time_mode NOT IN ('event', 'processing') THEN
        RAISE EXCEPTION 'time_mode must be ''event'' or ''processing''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF emit NOT IN ('final', 'changes') THEN
        RAISE EXCEPTION 'emit must be ''final'' or ''changes''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late NOT IN ('drop', 'topic', 'update') THEN
        RAISE EXCEPTION 'late must be ''drop'', ''topic'' or ''update''' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention.';
    END IF;
    IF late = 'topic' AND late_topic IS NULL THEN
        RAISE EXCEPTION 'late => ''topic'' needs late_topic' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the topic late records are sent to.';
    END IF;
    IF late <> 'topic' AND late_topic IS NOT NULL THEN
        RAISE EXCEPTION 'late_topic is only for late => ''topic''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late_topic = source_topic OR sink_topic = source_topic THEN
        RAISE EXCEPTION 'a window processor must not write to its source topic' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Its own records would come back to it as input.';
    END IF;
    IF retention < '0' THEN
        RAISE EXCEPTION 'retention must not be negative' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(aggregates) = 0 THEN
        RAISE EXCEPTION 'a window processor needs at least one aggregate' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.name := name;
    p.kind := 'window';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.where_clause := where_clause;
    p.event_time_expr := event_time;
    p.time_mode := time_mode;
    p.window_type := window_type;
    -- days as 24 hours (_processor_hours)
    p.size := @extschema@._processor_hours(size);
    p.advance := CASE WHEN window_type = 'sliding' THEN NULL ELSE @extschema@._processor_hours(advance) END;
    p.gap := @extschema@._processor_hours(gap);
    p.allowed_lateness := @extschema@._processor_hours(allowed_lateness);
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE @extschema@._processor_hours(max_out_of_orderness) END;
    p.idle_timeout := idle_timeout;
    p.emit := emit;
    p.late := late;
    p.late_topic := late_topic;
    p.retention := @extschema@._processor_hours(retention);
    p.group_by := group_by;
    p.agg_funcs := '{}';
    p.agg_args := '{}';
    p.agg_names := '{}';
    FOREACH a IN ARRAY aggregates LOOP
        -- count, sum, min, max and avg of numbers (or text), or any
        -- aggregate with a combine function (streams_windows.sql)
        m := @extschema@._processor_parse_aggregate(a);
        p.agg_funcs := p.agg_funcs || m[1];
        p.agg_args := p.agg_args || m[2];
        p.agg_names := p.agg_names || m[3];
        fnames := fnames || m[4];
    END LOOP;
    -- The sink's columns in order: window start, window end, one per
    -- group_by expression, one per aggregate.
    IF sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum), array_agg(format_type(att.atttypid, att.atttypmod) ORDER BY att.attnum)
          INTO p.sink_columns, p.sink_types
          FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        ncols := 2 + cardinality(group_by) + cardinality(aggregates);
        IF coalesce(cardinality(p.sink_columns), 0) <> ncols THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes %', sink_table,
                            coalesce(cardinality(p.sink_columns), 0), ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: window start, window end, one per group_by expression, one per aggregate.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT, UPDATE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A window processor selects, inserts and updates its sink table.';
        END IF;
        IF window_type = 'session' AND NOT has_table_privilege(sink_table, 'DELETE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A session window processor also deletes the rows of sessions that merged into others.';
        END IF;
    END IF;
    -- The aggregates' names in the records of a sink topic: "AS name", else
    -- the sink table's column, else the function (numbered when repeated).
    FOR i IN 1 .. cardinality(aggregates) LOOP
        p.agg_names[i] := coalesce(p.agg_names[i], p.sink_columns[2 + cardinality(group_by) + i],
                                   CASE WHEN array_position(fnames[i + 1:], fnames[i]) IS NULL
                                         AND array_position(fnames[:i - 1], fnames[i]) IS NULL
                                        THEN fnames[i] ELSE fnames[i] || '_' || i END);
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM unnest(p.agg_names) x) < cardinality(aggregates) THEN
        RAISE EXCEPTION 'two aggregates are named alike' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name them apart with "AS name".';
    END IF;
    -- The expressions over no records, as the caller; the group keys and
    -- aggregate arguments inside CASE, as a step evaluates them (so that a
    -- set-returning function there fails now, not at every step).
    EXECUTE format('SELECT %s, CASE WHEN true THEN pg_catalog.jsonb_build_array(%s) END %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record WHERE %s',
                   CASE time_mode WHEN 'processing' THEN 'NULL' ELSE '(' || event_time || ')::timestamptz' END,
                   (SELECT string_agg('(' || g || ')', ', ') FROM unnest(group_by) g),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::%s END', CASE u.x WHEN '*' THEN 'NULL' ELSE u.x END,
                                             u.t), '' ORDER BY j, u.o)
                      FROM generate_series(1, cardinality(p.agg_funcs)) j,
                           LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                           LATERAL unnest(av.exprs, av.types) WITH ORDINALITY AS u(x, t, o)),
                   coalesce('(' || where_clause || ')', 'true'));
    -- and the casts of the group keys to the sink's column types
    IF sink_table IS NOT NULL THEN
        FOR i IN 1 .. cardinality(group_by) LOOP
            EXECUTE format('SELECT NULL::text::%s', p.sink_types[2 + i]);
        END LOOP;
    END IF;
    PERFORM @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text, interval, text, text, interval, text) IS
'creates a windowed aggregate: tumbling or hopping windows of size (advancing by advance), sliding windows (a window of size ending at each record, and one starting just after it when a record is in it), or session windows (gap), over event time (an expression over the record) or processing time, grouped by expressions, count/sum/min/max/avg or any aggregate with a combine function, written to sink_table and/or sink_topic when a window closes (emit final) or as it changes (emit changes); late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention';

-- create_window_processor with both right windows' hint and sink_through.
CREATE OR REPLACE FUNCTION @extschema@.create_window_processor(name text, source_topic text,
                                                    sink_table regclass DEFAULT NULL,
                                                    size interval DEFAULT NULL,
                                                    window_type text DEFAULT 'tumbling',
                                                    advance interval DEFAULT NULL,
                                                    group_by text[] DEFAULT ARRAY['key'],
                                                    aggregates text[] DEFAULT ARRAY['count(*)'],
                                                    where_clause text DEFAULT NULL,
                                                    event_time text DEFAULT 'event_time',
                                                    time_mode text DEFAULT 'event',
                                                    allowed_lateness interval DEFAULT '0',
                                                    max_out_of_orderness interval DEFAULT '0',
                                                    idle_timeout interval DEFAULT '1 minute',
                                                    emit text DEFAULT 'final',
                                                    start_from text DEFAULT 'earliest',
                                                    gap interval DEFAULT NULL,
                                                    late text DEFAULT 'drop',
                                                    late_topic text DEFAULT NULL,
                                                    retention interval DEFAULT '0',
                                                    sink_topic text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    m text[];
    a text;
    i integer;
    ncols integer;
    fnames text[] := '{}';
    pid integer;
BEGIN
    IF name IS NULL OR source_topic IS NULL OR (size IS NULL AND window_type IS DISTINCT FROM 'session')
       OR window_type IS NULL OR group_by IS NULL OR aggregates IS NULL OR event_time IS NULL
       OR time_mode IS NULL OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL
       OR idle_timeout IS NULL OR emit IS NULL OR late IS NULL OR retention IS NULL
       OR array_position(group_by, NULL) IS NOT NULL
       OR array_position(aggregates, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of a window processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only sink_table or sink_topic (one of them), size (of a session window), advance, gap, where_clause and late_topic may be null.';
    END IF;
    IF sink_table IS NULL AND sink_topic IS NULL THEN
        RAISE EXCEPTION 'a window processor writes to a sink table, a sink topic or both'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table, sink_topic or both.';
    END IF;
    IF window_type NOT IN ('tumbling', 'hopping', 'session', 'sliding') THEN
        RAISE EXCEPTION 'window_type must be ''tumbling'', ''hopping'', ''sliding'' or ''session''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF window_type = 'sliding' AND advance IS NOT NULL THEN
        RAISE EXCEPTION 'a sliding window has no advance' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Sliding windows follow the records (one ends at each, one starts just after it): pass only size.';
    END IF;
    IF window_type = 'session' THEN
        IF gap IS NULL THEN
            RAISE EXCEPTION 'a session window needs gap' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The gap is the inactivity that ends a session, for example gap => ''30 minutes''.';
        END IF;
        IF size IS NOT NULL OR advance IS NOT NULL THEN
            RAISE EXCEPTION 'a session window has no size or advance' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A session lasts as long as its records come within gap of each other: pass only gap.';
        END IF;
        IF gap <= '0' OR date_part('month', gap) <> 0 OR date_part('year', gap) <> 0 THEN
            RAISE EXCEPTION 'invalid session gap %', gap USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The gap is a positive interval without months or years.';
        END IF;
    ELSE
        IF gap IS NOT NULL THEN
            RAISE EXCEPTION 'gap is only for session windows' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''session'', or size (and advance) for tumbling and hopping windows.';
        END IF;
        IF window_type = 'tumbling' AND advance IS NOT NULL AND advance <> size THEN
            RAISE EXCEPTION 'a tumbling window advances by its size' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''hopping'' for windows that overlap.';
        END IF;
        IF window_type = 'hopping' AND advance IS NULL THEN
            RAISE EXCEPTION 'a hopping window needs advance' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        advance := coalesce(advance, size);
        IF size <= '0' OR advance <= '0' OR advance > size
           OR date_part('month', size) <> 0 OR date_part('year', size) <> 0
           OR date_part('month', advance) <> 0 OR date_part('year', advance) <> 0 THEN
            RAISE EXCEPTION 'invalid window size % or advance %', size, advance
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'Size and advance are positive intervals without months or years, advance at most the size.';
        END IF;
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF time_mode NOT IN ('event', 'processing') THEN
        RAISE EXCEPTION 'time_mode must be ''event'' or ''processing''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF emit NOT IN ('final', 'changes') THEN
        RAISE EXCEPTION 'emit must be ''final'' or ''changes''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late NOT IN ('drop', 'topic', 'update') THEN
        RAISE EXCEPTION 'late must be ''drop'', ''topic'' or ''update''' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention.';
    END IF;
    IF late = 'topic' AND late_topic IS NULL THEN
        RAISE EXCEPTION 'late => ''topic'' needs late_topic' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the topic late records are sent to.';
    END IF;
    IF late <> 'topic' AND late_topic IS NOT NULL THEN
        RAISE EXCEPTION 'late_topic is only for late => ''topic''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late_topic = source_topic OR sink_topic = source_topic THEN
        RAISE EXCEPTION 'a window processor must not write to its source topic' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Its own records would come back to it as input.';
    END IF;
    IF retention < '0' THEN
        RAISE EXCEPTION 'retention must not be negative' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(aggregates) = 0 THEN
        RAISE EXCEPTION 'a window processor needs at least one aggregate' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.name := name;
    p.kind := 'window';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.where_clause := where_clause;
    p.event_time_expr := event_time;
    p.time_mode := time_mode;
    p.window_type := window_type;
    -- days as 24 hours (_processor_hours)
    p.size := @extschema@._processor_hours(size);
    p.advance := CASE WHEN window_type = 'sliding' THEN NULL ELSE @extschema@._processor_hours(advance) END;
    p.gap := @extschema@._processor_hours(gap);
    p.allowed_lateness := @extschema@._processor_hours(allowed_lateness);
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE @extschema@._processor_hours(max_out_of_orderness) END;
    p.idle_timeout := idle_timeout;
    p.emit := emit;
    p.late := late;
    p.late_topic := late_topic;
    p.retention := @extschema@._processor_hours(retention);
    p.group_by := group_by;
    p.agg_funcs := '{}';
    p.agg_args := '{}';
    p.agg_names := '{}';
    FOREACH a IN ARRAY aggregates LOOP
        -- count, sum, min, max and avg of numbers (or text), or any
        -- aggregate with a combine function (streams_windows.sql)
        m := @extschema@._processor_parse_aggregate(a);
        p.agg_funcs := p.agg_funcs || m[1];
        p.agg_args := p.agg_args || m[2];
        p.agg_names := p.agg_names || m[3];
        fnames := fnames || m[4];
    END LOOP;
    -- The sink's columns in order: window start, window end, one per
    -- group_by expression, one per aggregate.
    IF sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum), array_agg(format_type(att.atttypid, att.atttypmod) ORDER BY att.attnum)
          INTO p.sink_columns, p.sink_types
          FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        ncols := 2 + cardinality(group_by) + cardinality(aggregates);
        IF coalesce(cardinality(p.sink_columns), 0) <> ncols THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes %', sink_table,
                            coalesce(cardinality(p.sink_columns), 0), ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: window start, window end, one per group_by expression, one per aggregate.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT, UPDATE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A window processor selects, inserts and updates its sink table.';
        END IF;
        IF window_type = 'session' AND NOT has_table_privilege(sink_table, 'DELETE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A session window processor also deletes the rows of sessions that merged into others.';
        END IF;
    END IF;
    -- The aggregates' names in the records of a sink topic: "AS name", else
    -- the sink table's column, else the function (numbered when repeated).
    FOR i IN 1 .. cardinality(aggregates) LOOP
        p.agg_names[i] := coalesce(p.agg_names[i], p.sink_columns[2 + cardinality(group_by) + i],
                                   CASE WHEN array_position(fnames[i + 1:], fnames[i]) IS NULL
                                         AND array_position(fnames[:i - 1], fnames[i]) IS NULL
                                        THEN fnames[i] ELSE fnames[i] || '_' || i END);
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM unnest(p.agg_names) x) < cardinality(aggregates) THEN
        RAISE EXCEPTION 'two aggregates are named alike' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name them apart with "AS name".';
    END IF;
    -- The expressions over no records, as the caller; the group keys and
    -- aggregate arguments inside CASE, as a step evaluates them (so that a
    -- set-returning function there fails now, not at every step).
    EXECUTE format('SELECT %s, CASE WHEN true THEN pg_catalog.jsonb_build_array(%s) END %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record WHERE %s',
                   CASE time_mode WHEN 'processing' THEN 'NULL' ELSE '(' || event_time || ')::timestamptz' END,
                   (SELECT string_agg('(' || g || ')', ', ') FROM unnest(group_by) g),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::%s END', CASE u.x WHEN '*' THEN 'NULL' ELSE u.x END,
                                             u.t), '' ORDER BY j, u.o)
                      FROM generate_series(1, cardinality(p.agg_funcs)) j,
                           LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                           LATERAL unnest(av.exprs, av.types) WITH ORDINALITY AS u(x, t, o)),
                   coalesce('(' || where_clause || ')', 'true'));
    -- and the casts of the group keys to the sink's column types
    IF sink_table IS NOT NULL THEN
        FOR i IN 1 .. cardinality(group_by) LOOP
            EXECUTE format('SELECT NULL::text::%s', p.sink_types[2 + i]);
        END LOOP;
    END IF;
    pid := @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
    -- The latest window end of a row the sink holds already (a processor
    -- made again over it, one that wrote it before): the processor looks
    -- those rows up to overwrite them (_processor_emit_sql), not the later
    -- ones it alone writes.  Read as the caller, who may select the sink; a
    -- window end column of another type than the processor's is compared
    -- through a cast that depends on the session: it is always looked up.
    IF sink_table IS NOT NULL THEN
        EXECUTE format('UPDATE @extschema@.%I SET sink_through = %s WHERE partition = -1',
                       'processor_' || pid || '_progress',
                       CASE WHEN p.sink_types[2] = 'timestamp with time zone'
                            THEN format('coalesce((SELECT max(s.%I) FROM %s AS s), ''-infinity'')', p.sink_columns[2], sink_table)
                            ELSE '''infinity''' END);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text, interval, text, text, interval, text) IS
'creates a windowed aggregate: tumbling or hopping windows of size (advancing by advance), sliding windows (a window of size ending at each record, and one starting just after it when a record is in it), or session windows (gap), over event time (an expression over the record) or processing time, grouped by expressions, count/sum/min/max/avg or any aggregate with a combine function, written to sink_table and/or sink_topic when a window closes (emit final) or as it changes (emit changes); late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention';

-- sink_through forgotten while another processor writes the same sink.
CREATE OR REPLACE FUNCTION @extschema@.run_processor(name text, max_records integer DEFAULT 1000, wait boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog := @extschema@._processor(name);
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    tid integer;
    n integer;
    consumed bigint;
    waited interval;
    wm timestamptz;
    ct timestamptz;
BEGIN
    IF max_records IS NULL OR max_records < 1 THEN
        RAISE EXCEPTION 'max_records must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF wait IS NULL THEN
        RAISE EXCEPTION 'wait must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@._check_processor_owner(p);
    -- The processor worker (src/processor_worker.c) runs this as the owner
    -- already, in a security-restricted operation, which forbids SET ROLE.
    IF NOT @extschema@._processor_worker_step(p.processor_id) THEN
        -- The owner's SQL could SET ROLE to any role the session user may
        -- (PL/pgSQL cannot make this a security-restricted operation): run it
        -- only in sessions whose user has no role the owner does not have.
        IF NOT pg_has_role(p.owner, session_user, 'MEMBER') THEN
            RAISE EXCEPTION 'permission denied to run processor "%" in a session of role %', p.name, session_user
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('The processor''s SQL runs as its owner %s, and could take the roles of the session''s user.', p.owner),
                      HINT = format('Run it in a session of its owner (SET SESSION AUTHORIZATION %s, or connect as it).', p.owner);
        END IF;
        -- Run the owner's SQL as the owner, never as the caller: the function's
        -- SET clause restores the role on exit.
        PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = p.owner), true);
    END IF;

    SELECT c.topic_id, c.partitions INTO tid, n FROM @extschema@.topic_catalog c WHERE c.name = p.source_topic;
    IF tid IS DISTINCT FROM p.source_topic_id THEN
        RAISE EXCEPTION 'source topic "%" of processor "%" was dropped', p.source_topic, p.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Drop the processor with eventlog.drop_processor.';
    END IF;

    -- One step of a processor at a time: the others wait, or skip.
    BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', progress);
    EXCEPTION WHEN lock_not_available THEN
        IF NOT wait THEN
            RETURN NULL;
        END IF;
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', progress);
        -- The step we waited for released this lock a moment before the
        -- partitions its poll held (advisory locks go last): a poll now
        -- would skip them and read nothing.  Let it look again (a long
        -- poll retries partitions other transactions hold every second).
        waited := interval '2 seconds';
    END;
    IF p.kind = 'join' THEN
        RETURN @extschema@._join_step(p, max_records, waited);
    END IF;
    /*
     * sink_through (_processor_emit_sql) covers the windows this processor
     * wrote, not another's: while another processor writes the same sink
     * table (one made to take over from it, say), forget it (NULL: every
     * window written is looked up); alone again, take it from the sink
     * once.  A sink whose window end is not a timestamptz keeps NULL.
     */
    IF p.kind = 'window' AND p.sink_table IS NOT NULL THEN
        PERFORM @extschema@._processor_exec(format(
            'UPDATE %1$s SET sink_through = CASE WHEN $1 THEN NULL '
            '                                    ELSE coalesce((SELECT max(s.%2$I) FROM %3$s AS s), ''-infinity'') END '
            ' WHERE partition = -1 AND CASE WHEN $1 THEN sink_through IS NOT NULL ELSE sink_through IS NULL AND $2 END',
            progress, p.sink_columns[2], p.sink_table), NULL::bigint,
            EXISTS (SELECT FROM @extschema@.processor_catalog c
                     WHERE c.sink_table = p.sink_table AND c.processor_id <> p.processor_id),
            p.sink_types[2] = 'timestamp with time zone');
    END IF;

    -- The step's statements run through plans the session keeps
    -- (_processor_exec), as EXECUTE ... USING would run them.
    consumed := @extschema@._processor_exec(
        @extschema@._processor_step_sql(p, '@extschema@.poll($1, $2, $3, partitions => $4, wait => $6)'),
        NULL::bigint,
        p.source_topic, p.group_name, max_records, n, p.sink_topic, waited,
        p.max_out_of_orderness, CASE WHEN p.window_type = 'session' THEN p.gap ELSE p.size END,
        p.allowed_lateness + CASE WHEN p.late = 'update' THEN p.retention ELSE '0' END,
        p.advance, p.emit = 'changes', p.allowed_lateness, p.late_topic);
    IF p.kind = 'map' THEN
        RETURN consumed;
    END IF;

    -- The processor's watermark: processing time, or the least watermark of
    -- the partitions that are active (read recently, or with records left
    -- to read); when every partition is idle, the greatest.
    IF p.time_mode = 'processing' THEN
        wm := now();
    ELSE
        wm := @extschema@._processor_exec(format($q$
            SELECT CASE WHEN bool_or(active) THEN min(coalesce(m, '-infinity')) FILTER (WHERE active)
                        ELSE max(m) END - $3
              FROM (SELECT t.max_event_time AS m,
                           NOT (coalesce(t.last_record_at, '-infinity') < now() - $4
                                AND coalesce(o.next_offset, 0) >= @extschema@.last_stable_offset($1, g.p)) AS active
                      FROM generate_series(0, $5 - 1) AS g(p)
                      LEFT JOIN %s t ON t.partition = g.p
                      LEFT JOIN @extschema@.group_offsets o
                             ON o.topic_id = $6 AND o.group_name = $2 AND o.partition = g.p) s$q$, progress),
            NULL::timestamptz,
            p.source_topic, p.group_name, p.max_out_of_orderness, p.idle_timeout, n, tid);
    END IF;
    ct := @extschema@._processor_exec(format('SELECT closed_through FROM %s WHERE partition = -1', progress),
                                      NULL::timestamptz, 0);
    IF wm IS NOT NULL AND wm > '-infinity' AND (ct IS NULL OR wm > ct) THEN
        PERFORM @extschema@._processor_exec(@extschema@._processor_close_sql(p), NULL::bigint,
            wm, p.allowed_lateness, p.emit = 'final',
            coalesce(p.retention, '0') + CASE WHEN p.window_type = 'session' THEN p.gap ELSE '0' END, p.gap,
            coalesce(ct, '-infinity'));
        PERFORM @extschema@._processor_exec(
            format('INSERT INTO %s AS t (partition, closed_through) VALUES (-1, $1) '
                   'ON CONFLICT (partition) DO UPDATE SET closed_through = excluded.closed_through', progress),
            NULL::bigint, wm);
    END IF;
    RETURN consumed;
END
$$;
COMMENT ON FUNCTION @extschema@.run_processor(text, integer, boolean) IS
'one exactly-once step of a processor, as its owner, in the caller''s transaction: reads up to max_records through the processor''s group, updates its state and sink, closes the windows its watermark passed; NULL when wait is false and another step of the processor is in progress';

CREATE OR REPLACE FUNCTION @extschema@.create_window_processor(name text, source_topic text,
                                                    sink_table regclass DEFAULT NULL,
                                                    size interval DEFAULT NULL,
                                                    window_type text DEFAULT 'tumbling',
                                                    advance interval DEFAULT NULL,
                                                    group_by text[] DEFAULT ARRAY['key'],
                                                    aggregates text[] DEFAULT ARRAY['count(*)'],
                                                    where_clause text DEFAULT NULL,
                                                    event_time text DEFAULT 'event_time',
                                                    time_mode text DEFAULT 'event',
                                                    allowed_lateness interval DEFAULT '0',
                                                    max_out_of_orderness interval DEFAULT '0',
                                                    idle_timeout interval DEFAULT '1 minute',
                                                    emit text DEFAULT 'final',
                                                    start_from text DEFAULT 'earliest',
                                                    gap interval DEFAULT NULL,
                                                    late text DEFAULT 'drop',
                                                    late_topic text DEFAULT NULL,
                                                    retention interval DEFAULT '0',
                                                    sink_topic text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    m text[];
    a text;
    i integer;
    ncols integer;
    fnames text[] := '{}';
    pid integer;
BEGIN
    IF name IS NULL OR source_topic IS NULL OR (size IS NULL AND window_type IS DISTINCT FROM 'session')
       OR window_type IS NULL OR group_by IS NULL OR aggregates IS NULL OR event_time IS NULL
       OR time_mode IS NULL OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL
       OR idle_timeout IS NULL OR emit IS NULL OR late IS NULL OR retention IS NULL
       OR array_position(group_by, NULL) IS NOT NULL
       OR array_position(aggregates, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the arguments of a window processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only sink_table or sink_topic (one of them), size (of a session window), advance, gap, where_clause and late_topic may be null.';
    END IF;
    IF sink_table IS NULL AND sink_topic IS NULL THEN
        RAISE EXCEPTION 'a window processor writes to a sink table, a sink topic or both'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table, sink_topic or both.';
    END IF;
    IF window_type NOT IN ('tumbling', 'hopping', 'session', 'sliding') THEN
        RAISE EXCEPTION 'window_type must be ''tumbling'', ''hopping'', ''sliding'' or ''session''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF window_type = 'sliding' AND advance IS NOT NULL THEN
        RAISE EXCEPTION 'a sliding window has no advance' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Sliding windows follow the records (one ends at each, one starts just after it): pass only size.';
    END IF;
    IF window_type = 'session' THEN
        IF gap IS NULL THEN
            RAISE EXCEPTION 'a session window needs gap' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'The gap is the inactivity that ends a session, for example gap => ''30 minutes''.';
        END IF;
        IF size IS NOT NULL OR advance IS NOT NULL THEN
            RAISE EXCEPTION 'a session window has no size or advance' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'A session lasts as long as its records come within gap of each other: pass only gap.';
        END IF;
        IF gap <= '0' OR date_part('month', gap) <> 0 OR date_part('year', gap) <> 0 THEN
            RAISE EXCEPTION 'invalid session gap %', gap USING ERRCODE = 'invalid_parameter_value',
                DETAIL = 'The gap is a positive interval without months or years.';
        END IF;
    ELSE
        IF gap IS NOT NULL THEN
            RAISE EXCEPTION 'gap is only for session windows' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''session'', or size (and advance) for tumbling and hopping windows.';
        END IF;
        IF window_type = 'tumbling' AND advance IS NOT NULL AND advance <> size THEN
            RAISE EXCEPTION 'a tumbling window advances by its size' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Use window_type => ''hopping'' for windows that overlap.';
        END IF;
        IF window_type = 'hopping' AND advance IS NULL THEN
            RAISE EXCEPTION 'a hopping window needs advance' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        advance := coalesce(advance, size);
        IF size <= '0' OR advance <= '0' OR advance > size
           OR date_part('month', size) <> 0 OR date_part('year', size) <> 0
           OR date_part('month', advance) <> 0 OR date_part('year', advance) <> 0 THEN
            RAISE EXCEPTION 'invalid window size % or advance %', size, advance
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'Size and advance are positive intervals without months or years, advance at most the size.';
        END IF;
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF time_mode NOT IN ('event', 'processing') THEN
        RAISE EXCEPTION 'time_mode must be ''event'' or ''processing''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF emit NOT IN ('final', 'changes') THEN
        RAISE EXCEPTION 'emit must be ''final'' or ''changes''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late NOT IN ('drop', 'topic', 'update') THEN
        RAISE EXCEPTION 'late must be ''drop'', ''topic'' or ''update''' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention.';
    END IF;
    IF late = 'topic' AND late_topic IS NULL THEN
        RAISE EXCEPTION 'late => ''topic'' needs late_topic' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the topic late records are sent to.';
    END IF;
    IF late <> 'topic' AND late_topic IS NOT NULL THEN
        RAISE EXCEPTION 'late_topic is only for late => ''topic''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF late_topic = source_topic OR sink_topic = source_topic THEN
        RAISE EXCEPTION 'a window processor must not write to its source topic' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'Its own records would come back to it as input.';
    END IF;
    IF retention < '0' THEN
        RAISE EXCEPTION 'retention must not be negative' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(aggregates) = 0 THEN
        RAISE EXCEPTION 'a window processor needs at least one aggregate' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.name := name;
    p.kind := 'window';
    p.source_topic := source_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    p.where_clause := where_clause;
    p.event_time_expr := event_time;
    p.time_mode := time_mode;
    p.window_type := window_type;
    -- days as 24 hours (_processor_hours)
    p.size := @extschema@._processor_hours(size);
    p.advance := CASE WHEN window_type = 'sliding' THEN NULL ELSE @extschema@._processor_hours(advance) END;
    p.gap := @extschema@._processor_hours(gap);
    p.allowed_lateness := @extschema@._processor_hours(allowed_lateness);
    p.max_out_of_orderness := CASE time_mode WHEN 'processing' THEN '0' ELSE @extschema@._processor_hours(max_out_of_orderness) END;
    p.idle_timeout := idle_timeout;
    p.emit := emit;
    p.late := late;
    p.late_topic := late_topic;
    p.retention := @extschema@._processor_hours(retention);
    p.group_by := group_by;
    p.agg_funcs := '{}';
    p.agg_args := '{}';
    p.agg_names := '{}';
    FOREACH a IN ARRAY aggregates LOOP
        -- count, sum, min, max and avg of numbers (or text), or any
        -- aggregate with a combine function (streams_windows.sql)
        m := @extschema@._processor_parse_aggregate(a);
        p.agg_funcs := p.agg_funcs || m[1];
        p.agg_args := p.agg_args || m[2];
        p.agg_names := p.agg_names || m[3];
        fnames := fnames || m[4];
    END LOOP;
    -- The sink's columns in order: window start, window end, one per
    -- group_by expression, one per aggregate.
    IF sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum), array_agg(format_type(att.atttypid, att.atttypmod) ORDER BY att.attnum)
          INTO p.sink_columns, p.sink_types
          FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        ncols := 2 + cardinality(group_by) + cardinality(aggregates);
        IF coalesce(cardinality(p.sink_columns), 0) <> ncols THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes %', sink_table,
                            coalesce(cardinality(p.sink_columns), 0), ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: window start, window end, one per group_by expression, one per aggregate.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT, UPDATE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A window processor selects, inserts and updates its sink table.';
        END IF;
        IF window_type = 'session' AND NOT has_table_privilege(sink_table, 'DELETE') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A session window processor also deletes the rows of sessions that merged into others.';
        END IF;
    END IF;
    -- The aggregates' names in the records of a sink topic: "AS name", else
    -- the sink table's column, else the function (numbered when repeated).
    FOR i IN 1 .. cardinality(aggregates) LOOP
        p.agg_names[i] := coalesce(p.agg_names[i], p.sink_columns[2 + cardinality(group_by) + i],
                                   CASE WHEN array_position(fnames[i + 1:], fnames[i]) IS NULL
                                         AND array_position(fnames[:i - 1], fnames[i]) IS NULL
                                        THEN fnames[i] ELSE fnames[i] || '_' || i END);
    END LOOP;
    IF (SELECT count(DISTINCT x) FROM unnest(p.agg_names) x) < cardinality(aggregates) THEN
        RAISE EXCEPTION 'two aggregates are named alike' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name them apart with "AS name".';
    END IF;
    -- The expressions over no records, as the caller; the group keys and
    -- aggregate arguments inside CASE, as a step evaluates them (so that a
    -- set-returning function there fails now, not at every step).
    EXECUTE format('SELECT %s, CASE WHEN true THEN pg_catalog.jsonb_build_array(%s) END %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record WHERE %s',
                   CASE time_mode WHEN 'processing' THEN 'NULL' ELSE '(' || event_time || ')::timestamptz' END,
                   (SELECT string_agg('(' || g || ')', ', ') FROM unnest(group_by) g),
                   (SELECT string_agg(format(', CASE WHEN true THEN (%s)::%s END', CASE u.x WHEN '*' THEN 'NULL' ELSE u.x END,
                                             u.t), '' ORDER BY j, u.o)
                      FROM generate_series(1, cardinality(p.agg_funcs)) j,
                           LATERAL @extschema@._processor_agg_argv(p, j) AS av,
                           LATERAL unnest(av.exprs, av.types) WITH ORDINALITY AS u(x, t, o)),
                   coalesce('(' || where_clause || ')', 'true'));
    -- and the casts of the group keys to the sink's column types
    IF sink_table IS NOT NULL THEN
        FOR i IN 1 .. cardinality(group_by) LOOP
            EXECUTE format('SELECT NULL::text::%s', p.sink_types[2 + i]);
        END LOOP;
    END IF;
    pid := @extschema@._register_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
    -- The latest window end of a row the sink holds already (a processor
    -- made again over it, one that wrote it before): the processor looks
    -- those rows up to overwrite them (_processor_emit_sql), not the later
    -- ones it alone writes.  Read as the caller, who may select the sink; a
    -- window end column of another type than the processor's is compared
    -- through a cast that depends on the session: it is always looked up
    -- (NULL, as run_processor keeps it).
    IF sink_table IS NOT NULL THEN
        EXECUTE format('UPDATE @extschema@.%I SET sink_through = %s WHERE partition = -1',
                       'processor_' || pid || '_progress',
                       CASE WHEN p.sink_types[2] = 'timestamp with time zone'
                            THEN format('coalesce((SELECT max(s.%I) FROM %s AS s), ''-infinity'')', p.sink_columns[2], sink_table)
                            ELSE 'NULL' END);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.create_window_processor(text, text, regclass, interval, text, interval, text[], text[], text, text, text, interval, interval, interval, text, text, interval, text, text, interval, text) IS
'creates a windowed aggregate: tumbling or hopping windows of size (advancing by advance), sliding windows (a window of size ending at each record, and one starting just after it when a record is in it), or session windows (gap), over event time (an expression over the record) or processing time, grouped by expressions, count/sum/min/max/avg or any aggregate with a combine function, written to sink_table and/or sink_topic when a window closes (emit final) or as it changes (emit changes); late records are dropped and counted, sent to late_topic, or update their closed windows kept for the retention';

