-- pg_eventlog 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION pg_eventlog UPDATE TO '0.3.0'" to load this file. \quit

-- Every change to sql/pg_eventlog.sql since 0.2.0 is repeated here, in the
-- order it was made (test/t/012_upgrade.pl compares the result with a
-- fresh install).

-- eventlog.maintenance shows each worker's status and the notifier's PID,
-- and only the current database to roles without pg_read_all_stats (issue
-- 13, items 8 and 17): new OUT columns need the function and view made anew.
DROP VIEW @extschema@.maintenance;
DROP FUNCTION @extschema@._maintenance_status();
CREATE FUNCTION @extschema@._maintenance_status(
    OUT database text, OUT pid integer, OUT rounds bigint,
    OUT last_run timestamptz, OUT last_success timestamptz,
    OUT segments_rolled bigint, OUT segments_removed bigint,
    OUT last_error text, OUT last_error_time timestamptz,
    OUT notifier_pid integer, OUT worker_status text, OUT notifier_status text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'el_maintenance_status'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@._maintenance_status() IS
'internal: the rows of the eventlog.maintenance view';

CREATE VIEW @extschema@.maintenance AS
    SELECT * FROM @extschema@._maintenance_status();
COMMENT ON VIEW @extschema@.maintenance IS
'one row per database pg_eventlog maintains (only the current database for roles that are neither superuser nor members of pg_read_all_stats): its maintenance worker''s PID (NULL if not running), rounds run, last run and last success, segments rolled and removed since the worker started, the last error, its notifier''s PID, and whether each worker runs or why not';
GRANT SELECT ON @extschema@.maintenance TO PUBLIC;
