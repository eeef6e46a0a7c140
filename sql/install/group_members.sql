/* ------------------------------------------------------------------------
 * Consumer groups, member style: named members that do their work outside
 * the database.  Partitions are assigned to live members (sticky: an
 * owner keeps its partitions while it heartbeats, and only orphaned or
 * surplus partitions move), each assignment has a generation, and commits
 * by a member that no longer owns a partition are refused (fencing).
 * ------------------------------------------------------------------------ */

CREATE TABLE @extschema@.group_members (
    topic_id         integer NOT NULL REFERENCES @extschema@.topic_catalog ON DELETE CASCADE,
    group_name       text NOT NULL,
    member           text NOT NULL CHECK (member OPERATOR(pg_catalog.<>) ''),
    joined_at        timestamptz NOT NULL DEFAULT pg_catalog.now(),
    last_heartbeat   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    session_timeout  interval NOT NULL,
    -- The server session that last polled as this member (_session_id): a
    -- new session means a restarted consumer, which must get again what
    -- the old one polled but did not commit.
    session          text,
    PRIMARY KEY (topic_id, group_name, member)
);
COMMENT ON TABLE @extschema@.group_members IS
'pg_eventlog group members: who is in a group, and when each last polled (its heartbeat)';
-- Live state: not marked for pg_dump; after a restore, members join again.
GRANT SELECT ON @extschema@.group_members TO PUBLIC;

/*
 * Expire members whose heartbeat is older than their session timeout and
 * reassign partitions: every live member keeps what it owns up to its fair
 * share, and orphaned or surplus partitions go to members below theirs.
 * A partition changing hands gets a new generation, and its fetch position
 * goes back to the committed one (at-least-once).  The caller holds the
 * group's advisory lock.
 */
CREATE FUNCTION @extschema@._rebalance(tid integer, topic text, group_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
    members text[];
    m integer;
    quota integer;
    i integer;
    owned record;
    counts jsonb := '{}';
    target text;
BEGIN
    DELETE FROM @extschema@.group_members gm
     WHERE gm.topic_id = tid AND gm.group_name = _rebalance.group_name
       AND gm.last_heartbeat < pg_catalog.now() - gm.session_timeout;
    SELECT c.partitions INTO n FROM @extschema@.topic_catalog c WHERE c.topic_id = tid;
    -- Members holding more come first, so that the n % m larger shares go
    -- to them and as few partitions as possible move.
    SELECT coalesce(array_agg(gm.member ORDER BY
               (SELECT count(*) FROM @extschema@.group_offsets o
                 WHERE o.topic_id = tid AND o.group_name = _rebalance.group_name
                   AND o.owner_member = gm.member) DESC, gm.member), '{}')
      INTO members
      FROM @extschema@.group_members gm
     WHERE gm.topic_id = tid AND gm.group_name = _rebalance.group_name;
    m := cardinality(members);

    -- Every partition has a position row.
    INSERT INTO @extschema@.group_offsets (topic_id, group_name, partition, next_offset)
    SELECT tid, _rebalance.group_name, p, @extschema@.log_start_offset(topic, p)
      FROM pg_catalog.generate_series(0, n - 1) p
    ON CONFLICT DO NOTHING;

    -- Partitions of members that are gone are orphaned.
    UPDATE @extschema@.group_offsets o
       SET owner_member = NULL, fetch_offset = NULL, generation = o.generation + 1
     WHERE o.topic_id = tid AND o.group_name = _rebalance.group_name
       AND o.owner_member IS NOT NULL AND NOT (o.owner_member = ANY (members));
    IF m = 0 THEN
        RETURN;
    END IF;

    -- Members keep what they own up to their share (the first n % m
    -- members by name may hold one more); the surplus is released.
    FOR i IN 1 .. m LOOP
        quota := n / m + CASE WHEN i <= n % m THEN 1 ELSE 0 END;
        UPDATE @extschema@.group_offsets o
           SET owner_member = NULL, fetch_offset = NULL, generation = o.generation + 1
         WHERE o.topic_id = tid AND o.group_name = _rebalance.group_name
           AND o.owner_member = members[i]
           AND o.partition IN (SELECT o2.partition FROM @extschema@.group_offsets o2
                                WHERE o2.topic_id = tid AND o2.group_name = _rebalance.group_name
                                  AND o2.owner_member = members[i]
                                ORDER BY o2.partition OFFSET quota);
    END LOOP;

    -- Unowned partitions go to members below their share.
    FOR owned IN SELECT o.partition FROM @extschema@.group_offsets o
                  WHERE o.topic_id = tid AND o.group_name = _rebalance.group_name
                    AND o.owner_member IS NULL ORDER BY o.partition
    LOOP
        target := NULL;
        FOR i IN 1 .. m LOOP
            quota := n / m + CASE WHEN i <= n % m THEN 1 ELSE 0 END;
            IF (SELECT count(*) FROM @extschema@.group_offsets o
                 WHERE o.topic_id = tid AND o.group_name = _rebalance.group_name
                   AND o.owner_member = members[i]) < quota THEN
                target := members[i];
                EXIT;
            END IF;
        END LOOP;
        EXIT WHEN target IS NULL;
        UPDATE @extschema@.group_offsets o
           SET owner_member = target, fetch_offset = NULL, generation = o.generation + 1
         WHERE o.topic_id = tid AND o.group_name = _rebalance.group_name
           AND o.partition = owned.partition;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._rebalance(integer, text, text) IS
'internal: expires silent members and assigns partitions to live ones, moving as few as possible';

CREATE FUNCTION @extschema@._poll_member(tid integer, topic text, group_name text, member text,
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
COMMENT ON FUNCTION @extschema@._poll_member(integer, text, text, text, integer, interval) IS
'internal: a member''s poll: heartbeat, rebalance, and records from the partitions it owns, from its fetch positions';

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

CREATE FUNCTION @extschema@.commit(topic text, group_name text, member text,
                                   partition integer DEFAULT NULL, next_offset bigint DEFAULT NULL,
                                   generation bigint DEFAULT NULL, metadata text DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.commit(text, text, text, integer, bigint, bigint, text) IS
'a member commits its position: in one partition (next_offset, or what its polls returned; optionally fenced by generation), or in every partition it owns; refused with SQLSTATE 55000 when it no longer owns the partition';

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

CREATE FUNCTION @extschema@.leave(topic text, group_name text, member text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.leave(text, text, text) IS
'a member leaves its group: its partitions go to the other members at once (uncommitted progress is redelivered)';
