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
