--
-- The extension itself: version, shared state, objects and their comments.
--
SELECT version, shared_memory, launcher_pid IS NOT NULL AS launcher_running
  FROM eventlog.version_info();

SELECT extversion, extrelocatable, extnamespace::regnamespace
  FROM pg_extension WHERE extname = 'pg_eventlog';

-- Every function of the extension is commented.
SELECT p.oid::regprocedure AS function_without_comment
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_eventlog')
   AND d.deptype = 'e' AND obj_description(p.oid, 'pg_proc') IS NULL;

-- Settings under the reserved prefix: unknown names are refused.
SET eventlog.no_such_setting = 1;
-- Every setting, its default and unit.
SELECT name, boot_val, unit, context FROM pg_settings WHERE name LIKE 'eventlog.%' ORDER BY 1;

-- A helper for the tests that follow: run a statement, and show the
-- SQLSTATE, message, detail and hint of the error it raises.
CREATE FUNCTION public.expect_error(sql text)
RETURNS TABLE (code text, message text, detail text, hint text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN QUERY SELECT 'none'::text, 'statement succeeded'::text, NULL::text, NULL::text;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                            detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    RETURN NEXT;
END
$$;
SELECT * FROM expect_error('SELECT eventlog.create_topic(NULL)');
