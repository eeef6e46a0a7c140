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
COMMENT ON FUNCTION @extschema@._kafka_delete_groups(text[]) IS
'internal: the body of eventlog.kafka_delete_groups, run as the extension owner (see src/acl.c)';

CREATE FUNCTION @extschema@.kafka_delete_groups(group_names text[])
RETURNS TABLE (group_name text, error_code smallint)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_delete_groups(text[]) IS
'Kafka DeleteGroups: deletes empty groups with their committed positions in every topic (NON_EMPTY_GROUP 68 while members or SQL consumers are at work, GROUP_ID_NOT_FOUND 69)';

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

CREATE FUNCTION @extschema@._kafka_offset_commit(group_name text, generation integer, member_id text,
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

CREATE FUNCTION @extschema@.kafka_offset_commit(group_name text, generation integer, member_id text,
                                               group_instance_id text, offsets @extschema@.kafka_offset[])
RETURNS TABLE (topic text, partition integer, error_code smallint)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) IS
'Kafka OffsetCommit: stores the group''s positions (the rows of eventlog.group_offsets SQL consumers use); one row per partition with its Kafka error code';

CREATE FUNCTION @extschema@._kafka_txn_offset_commit(group_name text, generation integer, member_id text,
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

CREATE FUNCTION @extschema@.kafka_txn_offset_commit(group_name text, generation integer, member_id text,
                                                   group_instance_id text, offsets @extschema@.kafka_offset[])
RETURNS TABLE (topic text, partition integer, error_code smallint)
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_txn_offset_commit(text, integer, text, text, @extschema@.kafka_offset[]) IS
'Kafka TxnOffsetCommit: kafka_offset_commit''s checks against the group as the statement sees it, without the group''s lock, for positions that commit with the records of a longer transaction (only the group_offsets rows written stay locked)';

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
