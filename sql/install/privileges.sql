/* ------------------------------------------------------------------------
 * Topic privileges (src/acl.c, docs/security.md).  A topic's owner (its
 * creator) may alter, drop and grant it; producers may produce, consumers
 * read and move their groups' positions.  The functions that write the
 * catalog run as the extension owner through el_gate, which notes their
 * caller for _caller and _authorize.
 * ------------------------------------------------------------------------ */

CREATE FUNCTION @extschema@._session_id()
RETURNS text
AS 'MODULE_PATHNAME', 'el_session_id'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@._session_id() IS
'internal: this server session (backend PID and start time), to tell a restarted member consumer from the one before';

CREATE FUNCTION @extschema@._caller()
RETURNS regrole
AS 'MODULE_PATHNAME', 'el_caller_sql'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@._caller() IS
'internal: the role a gated API function acts for (the current user outside one)';

CREATE FUNCTION @extschema@._authorize(topic text, privilege text)
RETURNS integer
AS 'MODULE_PATHNAME', 'el_authorize'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@._authorize(text, text) IS
'internal: the topic''s id if the caller has the privilege (produce, consume or owner); 42501 if not, 42704 if there is no such topic';

CREATE FUNCTION @extschema@.has_topic_privilege(role regrole, topic text, privilege text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_has_topic_privilege'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@.has_topic_privilege(regrole, text, text) IS
'whether a role may produce to, consume from, or (privilege owner) administer a topic';

CREATE FUNCTION @extschema@.has_topic_privilege(topic text, privilege text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_has_topic_privilege'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@.has_topic_privilege(text, text) IS
'whether the current user may produce to, consume from, or (privilege owner) administer a topic';

/* A role name as grant and revoke take it: PUBLIC, or a role (0: PUBLIC). */
CREATE FUNCTION @extschema@._grantee(role text)
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
COMMENT ON FUNCTION @extschema@._grantee(text) IS
'internal: a role name for grant and revoke, PUBLIC being 0';

/* The privileges a grant or revoke names: produce, consume or all. */
CREATE FUNCTION @extschema@._privileges(privilege text)
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
COMMENT ON FUNCTION @extschema@._privileges(text) IS
'internal: the privileges named by produce, consume or all';

CREATE FUNCTION @extschema@._grant(topic text, privilege text, role text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'owner');
    privs text[] := @extschema@._privileges(privilege);
    grantee regrole := @extschema@._grantee(role);
BEGIN
    UPDATE @extschema@.topic_catalog t
       SET producers = CASE WHEN 'produce' = ANY (privs) AND NOT grantee = ANY (t.producers)
                            THEN t.producers || grantee ELSE t.producers END,
           consumers = CASE WHEN 'consume' = ANY (privs) AND NOT grantee = ANY (t.consumers)
                            THEN t.consumers || grantee ELSE t.consumers END
     WHERE t.topic_id = tid;
END
$$;
COMMENT ON FUNCTION @extschema@._grant(text, text, text) IS
'internal: the body of eventlog.grant, run as the extension owner on behalf of the caller eventlog.grant notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._grant(text, text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.grant(topic text, privilege text, role text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.grant(text, text, text) IS
'lets a role (or PUBLIC) produce to (produce), consume from (consume) or both (all) a topic; the topic''s owner grants';

CREATE FUNCTION @extschema@._revoke(topic text, privilege text, role text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer := @extschema@._authorize(topic, 'owner');
    privs text[] := @extschema@._privileges(privilege);
    grantee regrole := @extschema@._grantee(role);
BEGIN
    UPDATE @extschema@.topic_catalog t
       SET producers = CASE WHEN 'produce' = ANY (privs)
                            THEN array_remove(t.producers, grantee) ELSE t.producers END,
           consumers = CASE WHEN 'consume' = ANY (privs)
                            THEN array_remove(t.consumers, grantee) ELSE t.consumers END
     WHERE t.topic_id = tid;
END
$$;
COMMENT ON FUNCTION @extschema@._revoke(text, text, text) IS
'internal: the body of eventlog.revoke, run as the extension owner on behalf of the caller eventlog.revoke notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._revoke(text, text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.revoke(topic text, privilege text, role text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.revoke(text, text, text) IS
'takes back what eventlog.grant gave (a role keeps what it has through other roles); the topic''s owner revokes';

CREATE FUNCTION @extschema@._set_topic_owner(topic text, new_owner text)
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
COMMENT ON FUNCTION @extschema@._set_topic_owner(text, text) IS
'internal: the body of eventlog.set_topic_owner, run as the extension owner on behalf of the caller eventlog.set_topic_owner notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._set_topic_owner(text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.set_topic_owner(topic text, new_owner text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.set_topic_owner(text, text) IS
'hands a topic over to another role (the owner, being a member of the new role, or a superuser)';
