/* ------------------------------------------------------------------------
 * Consumer groups (transactional style): positions commit in the caller's
 * transaction; a poll takes partitions with transaction-level advisory
 * locks, so another poll of the same group skips them without waiting.
 * ------------------------------------------------------------------------ */

CREATE TABLE @extschema@.group_catalog (
    topic_id    integer NOT NULL REFERENCES @extschema@.topic_catalog ON DELETE CASCADE,
    group_name  text NOT NULL CHECK (group_name OPERATOR(pg_catalog.<>) ''),
    start_from  text NOT NULL DEFAULT 'earliest'
                CHECK (start_from OPERATOR(pg_catalog.=) ANY (ARRAY['earliest', 'latest'])),
    auto_reset  text CHECK (auto_reset OPERATOR(pg_catalog.=) ANY (ARRAY['earliest', 'latest'])),
    created_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (topic_id, group_name)
);
COMMENT ON TABLE @extschema@.group_catalog IS
'pg_eventlog consumer group settings (eventlog.create_group); a group polled without settings starts from earliest and has no automatic reset';

CREATE TABLE @extschema@.group_offsets (
    topic_id      integer NOT NULL,
    group_name    text NOT NULL,
    partition     integer NOT NULL,
    next_offset   bigint NOT NULL CHECK (next_offset OPERATOR(pg_catalog.>=) 0),
    committed_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    metadata      text,
    owner_member  text,             -- member style: who owns the partition
    generation    bigint NOT NULL DEFAULT 0,  -- bumped when the owner changes
    fetch_offset  bigint,           -- member style: where its next poll reads
    PRIMARY KEY (topic_id, group_name, partition),
    FOREIGN KEY (topic_id, partition) REFERENCES @extschema@.partition_catalog ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.group_offsets IS
'pg_eventlog consumer group positions: the next offset each group reads in each partition';

GRANT SELECT ON @extschema@.group_catalog, @extschema@.group_offsets TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.group_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.group_offsets', '');

CREATE FUNCTION @extschema@._check_group_name(group_name text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF group_name IS NULL THEN
        RAISE EXCEPTION 'group_name must not be null' USING ERRCODE = '22004';
    END IF;
    IF group_name = '' OR length(group_name) > 200 THEN
        RAISE EXCEPTION 'invalid group name "%"', left(group_name, 210)
            USING ERRCODE = '22023',
                  DETAIL = 'A group name is 1 to 200 characters.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._check_group_name(text) IS
'internal: raises 22004 for a NULL group name and 22023 for an empty or over-long one';

/* The advisory lock key of (topic, group, partition): 64 bits of hash. */
CREATE FUNCTION @extschema@._group_lock_key(topic_id integer, group_name text, partition integer)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.hashtextextended(
    pg_catalog.format('pg_eventlog/%s/%s/%s', topic_id, partition, group_name), 7);
COMMENT ON FUNCTION @extschema@._group_lock_key(integer, text, integer) IS
'internal: the advisory lock a transaction holds while it owns a partition for a group';

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

CREATE FUNCTION @extschema@._topic_id(topic text)
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
        RAISE EXCEPTION 'topic "%" does not exist', topic USING ERRCODE = '42704';
    END IF;
    RETURN tid;
END
$$;
COMMENT ON FUNCTION @extschema@._topic_id(text) IS
'internal: a topic''s id, raising 42704 if there is no such topic';

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

CREATE FUNCTION @extschema@.create_group(topic text, group_name text,
                                         start_from text DEFAULT 'earliest',
                                         auto_reset text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.create_group(text, text, text, text) IS
'creates a consumer group with its positions: start_from earliest (the default: nothing is missed) or latest; auto_reset NULL (poll errors when retention removed unread records), earliest or latest';

/*
 * The position of a group in a partition: its committed next offset, or
 * where a group without one starts.  Does not take the partition.
 */
CREATE FUNCTION @extschema@._group_position(tid integer, topic text, group_name text,
                                            partition integer, start_from text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    pos bigint;
BEGIN
    SELECT o.next_offset INTO pos FROM @extschema@.group_offsets o
     WHERE o.topic_id = tid AND o.group_name = _group_position.group_name
       AND o.partition = _group_position.partition;
    IF NOT FOUND THEN
        pos := CASE coalesce(start_from, 'earliest')
                   WHEN 'latest' THEN @extschema@.last_stable_offset(topic, partition)
                   ELSE @extschema@.log_start_offset(topic, partition) END;
    END IF;
    RETURN pos;
END
$$;
COMMENT ON FUNCTION @extschema@._group_position(integer, text, text, integer, text) IS
'internal: a group''s committed position in a partition, or its starting point';

CREATE FUNCTION @extschema@._set_position(tid integer, group_name text, partition integer,
                                          next_offset bigint, metadata text DEFAULT NULL)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    INSERT INTO @extschema@.group_offsets AS o (topic_id, group_name, partition, next_offset, committed_at, metadata)
    VALUES (tid, group_name, partition, next_offset, pg_catalog.now(), metadata)
    ON CONFLICT (topic_id, group_name, partition) DO UPDATE
       SET next_offset = excluded.next_offset, committed_at = excluded.committed_at,
           metadata = coalesce(excluded.metadata, o.metadata);
END;
COMMENT ON FUNCTION @extschema@._set_position(integer, text, integer, bigint, text) IS
'internal: stores a group''s position (the caller owns the partition)';

/*
 * Where a group reads a partition from: its position, unless retention
 * removed records below the log start offset that the group had not read;
 * then the automatic reset, or the lost-records error (never a silent skip).
 */
CREATE FUNCTION @extschema@._checked_position(topic text, group_name text, partition integer,
                                              pos bigint, stable bigint, auto_reset text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    start_offset bigint := @extschema@.log_start_offset(topic, partition);
BEGIN
    IF pos >= start_offset THEN
        RETURN pos;
    END IF;
    IF auto_reset = 'earliest' THEN
        RETURN start_offset;
    ELSIF auto_reset = 'latest' THEN
        RETURN stable;
    END IF;
    RAISE EXCEPTION 'group "%" has lost records in partition % of topic "%"', group_name, partition, topic
        USING ERRCODE = '22003',
              DETAIL = format('Its position is %s, but retention removed the records below offset %s.',
                              pos, start_offset),
              HINT = 'Move the group on with eventlog.seek(), or create it with auto_reset => ''earliest''.';
END
$$;
COMMENT ON FUNCTION @extschema@._checked_position(text, text, integer, bigint, bigint, text) IS
'internal: a group''s read position, reset or refused when retention removed unread records';

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
COMMENT ON FUNCTION @extschema@._poll(text, text, integer, integer, text, interval, interval) IS
'internal: the body of eventlog.poll, run as the extension owner on behalf of the caller eventlog.poll notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._poll(text, text, integer, integer, text, interval, interval) FROM PUBLIC;

CREATE FUNCTION @extschema@.poll(topic text, group_name text, max_records integer DEFAULT 500,
                                 partitions integer DEFAULT 1, member text DEFAULT NULL,
                                 session_timeout interval DEFAULT '30 seconds',
                                 wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.record
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.poll(text, text, integer, integer, text, interval, interval) IS
'without member: returns up to max_records from up to "partitions" partitions that no other open transaction of the group holds, from the group''s positions, and advances them in the caller''s transaction (roll back and the records come again); with member: heartbeats, gets the member''s assigned partitions and returns records from its fetch positions, to be committed with eventlog.commit; with wait, a long poll: when nothing is readable, sleeps until records arrive or the wait ends';

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

CREATE FUNCTION @extschema@.seek(topic text, group_name text, target text,
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
COMMENT ON FUNCTION @extschema@._delete_group(text, text) IS
'internal: the body of eventlog.delete_group, run as the extension owner on behalf of the caller eventlog.delete_group notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._delete_group(text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.delete_group(topic text, group_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.delete_group(text, text) IS
'forgets a consumer group of a topic: its settings and positions; refused (55006) while a transaction that polled the group is open or a member is live';
