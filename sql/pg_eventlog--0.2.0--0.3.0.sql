-- pg_eventlog 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION pg_eventlog UPDATE TO '0.3.0'" to load this file. \quit

-- Every change to sql/pg_eventlog.sql since 0.2.0 is repeated here, in the
-- order it was made (test/t/012_upgrade.pl compares the result with a
-- fresh install).

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
