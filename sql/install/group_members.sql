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
 * share, and orphaned or surplus partitions go to members below theirs
 * (src/group_member.c).  The caller holds the group's membership lock.
 */
CREATE FUNCTION @extschema@._rebalance(tid integer, topic text, group_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_group_rebalance_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@._rebalance(integer, text, text) IS
'internal: expires silent members and assigns partitions to live ones, moving as few as possible';


CREATE FUNCTION @extschema@._commit(topic text, group_name text, member text,
                                   partition integer DEFAULT NULL, next_offset bigint DEFAULT NULL,
                                   generation bigint DEFAULT NULL, metadata text DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_group_commit'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
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
COMMENT ON FUNCTION @extschema@._leave(text, text, text) IS
'internal: the body of eventlog.leave, run as the extension owner on behalf of the caller eventlog.leave notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._leave(text, text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.leave(topic text, group_name text, member text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.leave(text, text, text) IS
'a member leaves its group: its partitions go to the other members at once (uncommitted progress is redelivered)';
