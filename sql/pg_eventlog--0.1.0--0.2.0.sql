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
