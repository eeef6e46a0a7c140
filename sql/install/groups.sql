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
        RAISE EXCEPTION 'group_name must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF group_name = '' OR length(group_name) > 200 THEN
        RAISE EXCEPTION 'invalid group name "%"', left(group_name, 210)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A group name is 1 to 200 characters.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._check_group_name(text) IS
'internal: raises 22004 for a NULL group name and 22023 for an empty or over-long one';

/*
 * The lock key of (topic, group, partition): 64 bits of hash of
 * 'pg_eventlog/<topic_id>/<partition>/<group_name>' (hashtextextended, seed
 * 7); partition -1 is the group's membership.  The C group code and the
 * group lock functions (_lock_group_membership, _lock_group_partition and
 * their _try_ forms) compute it in C (src/group.c); this function shows it
 * (sql/group_edges.sql pins it).
 */
CREATE FUNCTION @extschema@._group_lock_key(topic_id integer, group_name text, partition integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_group_lock_key_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@._group_lock_key(integer, text, integer) IS
'internal: the advisory lock a transaction holds while it owns a partition for a group';



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
        RAISE EXCEPTION 'topic "%" does not exist', topic USING ERRCODE = 'undefined_object';
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
 * The body of eventlog.poll, transactional and member style (src/group.c,
 * src/group_member.c).
 */
CREATE FUNCTION @extschema@._poll(topic text, group_name text, max_records integer DEFAULT 500,
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
COMMENT ON FUNCTION @extschema@._delete_group(text, text) IS
'internal: the body of eventlog.delete_group, run as the extension owner on behalf of the caller eventlog.delete_group notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._delete_group(text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.delete_group(topic text, group_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.delete_group(text, text) IS
'forgets a consumer group of a topic: its settings and positions; refused (55006) while a transaction that polled the group is open or a member is live';
