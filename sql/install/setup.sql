/*
 * pg_eventlog install script, first part: the schema guard and the version.
 * The Makefile concatenates the files of sql/install/, one per concern, in
 * the order INSTALL_SOURCES gives, into sql/pg_eventlog--<version>.sql.
 *
 * CREATE EXTENSION creates the schema (pg_eventlog.control: schema =
 * eventlog); every object here is placed in @extschema@ and every reference
 * is schema-qualified, following "Security Considerations for Extensions".
 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_eventlog" to load this file. \quit

-- The schema must be new, or empty and owned by the installing role.  CREATE
-- EXTENSION installs into an existing schema of that name, whoever owns it:
-- its owner could drop and replace our objects later, and anything placed
-- in it beforehand (say a function "format" matching a call here better
-- than pg_catalog's) would run during this script, as the installing
-- superuser.  Only pg_catalog objects, schema-qualified, are used here.
DO $guard$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_namespace n
                WHERE n.oid OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace
                  AND n.nspowner OPERATOR(pg_catalog.<>) (SELECT r.oid FROM pg_catalog.pg_roles r
                                                          WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER))
       OR EXISTS (SELECT FROM pg_catalog.pg_class c
                   WHERE c.relnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace)
       OR EXISTS (SELECT FROM pg_catalog.pg_proc p
                   WHERE p.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace)
       OR EXISTS (SELECT FROM pg_catalog.pg_type t
                   WHERE t.typnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace)
       OR EXISTS (SELECT FROM pg_catalog.pg_operator o
                   WHERE o.oprnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace)
    THEN
        RAISE EXCEPTION 'schema "@extschema@" already exists with objects in it, or with another owner'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'pg_eventlog installs into its own schema; objects there that it did not create could be run by this script as the installing role, or replace its functions later.',
                  HINT = 'Drop or rename the existing schema "@extschema@", then run CREATE EXTENSION again.';
    END IF;
END
$guard$;

CREATE FUNCTION @extschema@.version_info(
    OUT version text,
    OUT shared_memory boolean,
    OUT launcher_pid integer)
RETURNS record
AS 'MODULE_PATHNAME', 'el_version_info'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.version_info() IS
'pg_eventlog''s library version, whether its shared memory is attached (the library is in shared_preload_libraries), and the launcher worker''s PID';
