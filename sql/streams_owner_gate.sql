-- run_processor, reset_processor and processor_windows run the processor's
-- owner's SQL as the owner in a security-restricted operation
-- (src/processor_owner.c), as REFRESH MATERIALIZED VIEW runs a view
-- owner's: a superuser may run another role's processor, and the owner's
-- code cannot take the superuser's role back, keep a setting, or leave a
-- trigger to fire at commit as the superuser.

CREATE ROLE gate_owner;
CREATE ROLE gate_stranger;
GRANT USAGE, CREATE ON SCHEMA public TO gate_owner;
SELECT eventlog.create_topic('gate', 1);
SELECT eventlog.grant('gate', 'consume', 'gate_owner');
SELECT count(*) FROM eventlog.produce_batch('gate', ARRAY['a', 'b'], ARRAY['{}', '{}']::jsonb[],
    event_time => ARRAY['2026-01-01 00:00:10+00', '2026-01-01 00:00:20+00']::timestamptz[]);

SET SESSION AUTHORIZATION gate_owner;
CREATE TABLE gate_rows (k text, who text, session_who text);
-- What the owner's SQL may try, chosen per session by a setting its caller
-- does not control once the step runs (the owner's code reads it).
CREATE FUNCTION gate_probe(k text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    CASE current_setting('gate.attack', true)
    WHEN 'set_role' THEN
        PERFORM set_config('role', 'postgres', true);
    WHEN 'reset_session' THEN
        RESET SESSION AUTHORIZATION;
    WHEN 'superuser' THEN
        ALTER ROLE gate_owner SUPERUSER;
    WHEN 'setting' THEN
        PERFORM set_config('work_mem', '77kB', false);
    WHEN 'nested' THEN
        PERFORM eventlog.run_processor('gate_rows');
    WHEN 'nested_windows' THEN
        PERFORM * FROM eventlog.processor_windows('gate_windows');
    WHEN 'body' THEN
        PERFORM eventlog._run_processor('gate_rows', 1, true);
    WHEN 'own_check' THEN
        PERFORM eventlog._processor_owner_step(
            (SELECT c.processor_id FROM eventlog.processor_catalog c WHERE c.name = 'gate_rows'));
    WHEN 'temp' THEN
        CREATE TEMPORARY TABLE gate_tmp (a int);
    WHEN 'cursor_read' THEN
        -- PL/pgSQL's FETCH and CLOSE go through SPI, not the CLOSE statement
        -- the restricted operation refuses.
        DECLARE
            r refcursor := current_setting('gate.cursor');
            x record;
        BEGIN
            FETCH r INTO x;
        END;
    WHEN 'cursor_swap' THEN
        DECLARE
            r refcursor := current_setting('gate.cursor');
        BEGIN
            CLOSE r;
            OPEN r FOR SELECT 'gate_owner''s query' AS a;
        END;
    WHEN 'constraints' THEN
        SET CONSTRAINTS ALL DEFERRED;
    WHEN 'cursor_current_of' THEN
        -- WHERE CURRENT OF finds a cursor by name and reads its position,
        -- whatever its status
        EXECUTE format('UPDATE public.gate_marks SET who = current_user WHERE CURRENT OF %I',
                       current_setting('gate.cursor'));
    WHEN 'cursor_list' THEN
        IF EXISTS (SELECT FROM pg_cursors WHERE name = current_setting('gate.cursor')) THEN
            RAISE EXCEPTION 'the caller''s cursor is listed';
        END IF;
    ELSE
        NULL;
    END CASE;
    RETURN k;
END
$$;
SELECT eventlog.create_processor('gate_rows', 'gate', sink_table => 'gate_rows',
    select_list => 'public.gate_probe(key), current_user, session_user');
RESET SESSION AUTHORIZATION;
SELECT format('eventlog.%I', 'processor_' || processor_id || '_progress') AS gate_progress
  FROM eventlog.processor_catalog WHERE name = 'gate_rows' \gset

-- Each attack, by a superuser in its own session and in a session after
-- SET SESSION AUTHORIZATION: refused, nothing written, nothing moved.
CREATE FUNCTION gate_try(attack text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('gate.attack', attack, true);
    PERFORM eventlog.run_processor('gate_rows', 1);
    RETURN 'ran';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
-- Runs a statement, and says how it failed (with no context, which names
-- the processor's tables by their ids).
CREATE FUNCTION gate_catch(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'ran';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SELECT a AS attack, gate_try(a) AS result
  FROM unnest(ARRAY['set_role', 'reset_session', 'superuser', 'nested', 'nested_windows', 'body',
                    'own_check', 'temp']) AS a;
SET SESSION AUTHORIZATION gate_owner;
SELECT a AS attack, public.gate_try(a) AS result
  FROM unnest(ARRAY['set_role', 'reset_session', 'nested', 'own_check']) AS a;
RESET SESSION AUTHORIZATION;
SELECT current_user, session_user, rolsuper FROM pg_roles WHERE rolname = 'gate_owner';
SELECT count(*) AS rows_written FROM gate_rows;
SELECT records FROM :gate_progress WHERE partition = 0;

-- A setting the owner's code changes for the session ends with the step.
SET work_mem = '4MB';
SELECT gate_try('setting');
SHOW work_mem;

-- Without an attack, the superuser's run is the owner's, in a session that
-- stays the superuser's.
SELECT gate_try('none');
SELECT * FROM gate_rows;
SELECT current_user, session_user;

-- A trigger the owner left to fire at commit would fire as whoever
-- commits: PostgreSQL refuses to queue it in the restricted operation.
SET SESSION AUTHORIZATION gate_owner;
CREATE FUNCTION gate_deferred() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    ALTER ROLE gate_owner SUPERUSER;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER gate_at_commit AFTER INSERT ON gate_rows
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gate_deferred();
RESET SESSION AUTHORIZATION;
SELECT count(*) FROM eventlog.produce_batch('gate', ARRAY['c'], ARRAY['{}']::jsonb[],
    event_time => ARRAY['2026-01-01 00:00:30+00']::timestamptz[]);
SELECT gate_try('none');
SELECT rolsuper FROM pg_roles WHERE rolname = 'gate_owner';
SELECT count(*) AS rows_written FROM gate_rows;
DROP TRIGGER gate_at_commit ON gate_rows;

-- A reset truncates and updates tables the owner owns, and may have put
-- triggers on.
SET SESSION AUTHORIZATION gate_owner;
CREATE FUNCTION gate_take() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('role', 'postgres', true);
    RETURN NULL;
END
$$;
CREATE TRIGGER gate_take AFTER UPDATE ON :gate_progress FOR EACH STATEMENT EXECUTE FUNCTION public.gate_take();
RESET SESSION AUTHORIZATION;
SELECT gate_catch($$SELECT eventlog.reset_processor('gate_rows')$$);
SELECT current_user;
SET SESSION AUTHORIZATION gate_owner;
DROP TRIGGER gate_take ON :gate_progress;
RESET SESSION AUTHORIZATION;
SELECT eventlog.reset_processor('gate_rows');
SELECT records FROM :gate_progress WHERE partition = 0;

-- processor_windows finishes states with the owner's final functions.
SET SESSION AUTHORIZATION gate_owner;
CREATE FUNCTION gate_final(s bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('gate.attack', true) = 'set_role' THEN
        PERFORM set_config('role', 'postgres', true);
    END IF;
    RETURN s;
END
$$;
CREATE AGGREGATE gate_count(text) (SFUNC = int8inc_any, STYPE = bigint, INITCOND = '0',
    COMBINEFUNC = int8pl, FINALFUNC = gate_final);
CREATE TABLE gate_windows (window_start timestamptz, window_end timestamptz, k text, n bigint);
SELECT eventlog.create_window_processor('gate_windows', 'gate', 'gate_windows', size => '1 minute',
    aggregates => ARRAY['public.gate_count(key)'], idle_timeout => '1 hour');
SELECT eventlog.run_processor('gate_windows');
RESET SESSION AUTHORIZATION;
SELECT window_start AT TIME ZONE 'UTC', group_key, aggregates FROM eventlog.processor_windows('gate_windows');
SET gate.attack = 'set_role';
SELECT gate_catch($$SELECT * FROM eventlog.processor_windows('gate_windows')$$);
SELECT current_user;
RESET gate.attack;

-- Roles that are not members of the owner get nothing, superusers who
-- SET ROLE to one included.
SET ROLE gate_stranger;
SELECT eventlog.run_processor('gate_rows');
SELECT eventlog.reset_processor('gate_rows');
SELECT * FROM eventlog.processor_windows('gate_windows');
RESET ROLE;
-- The caller's cursors: the owner's code can neither read them (what the
-- caller's query returns), nor close one and open its own in its place,
-- which the caller's next FETCH would run as the caller; after the call
-- they are as they were.  Its own FOR loop's cursor too.
SELECT count(*) FROM eventlog.produce_batch('gate', ARRAY['d', 'e', 'f', 'g'], ARRAY['{}', '{}', '{}', '{}']::jsonb[],
    event_time => ARRAY['2026-01-01 00:00:40+00', '2026-01-01 00:00:41+00', '2026-01-01 00:00:42+00',
                        '2026-01-01 00:00:43+00']::timestamptz[]);
BEGIN;
DECLARE gate_cursor CURSOR FOR SELECT 'row ' || g AS a FROM generate_series(1, 3) g;
FETCH 1 FROM gate_cursor;
SET LOCAL gate.cursor = 'gate_cursor';
SELECT a AS attack, gate_try(a) AS result FROM unnest(ARRAY['cursor_read', 'cursor_swap', 'cursor_list']) AS a;
FETCH ALL FROM gate_cursor;
COMMIT;
-- Nor update or delete the row a cursor of the caller's is on (WHERE
-- CURRENT OF), in a table it may update but not read.
CREATE TABLE gate_marks (id int, who text);
INSERT INTO gate_marks VALUES (1, NULL), (2, NULL);
GRANT UPDATE ON gate_marks TO gate_owner;
SELECT count(*) FROM eventlog.produce_batch('gate', ARRAY['h'], ARRAY['{}']::jsonb[],
    event_time => ARRAY['2026-01-01 00:00:44+00']::timestamptz[]);
BEGIN;
DECLARE gate_mark_cursor CURSOR FOR SELECT id FROM gate_marks WHERE id = 2;
FETCH 1 FROM gate_mark_cursor;
SET LOCAL gate.cursor = 'gate_mark_cursor';
SELECT gate_try('cursor_current_of');
-- the caller's own, after the call
UPDATE gate_marks SET who = 'caller' WHERE CURRENT OF gate_mark_cursor;
SELECT id, who FROM gate_marks ORDER BY id;
COMMIT;
DROP TABLE gate_marks;
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT 'row ' || g AS a FROM generate_series(1, 2) g LOOP
        -- The loop's cursor (its name varies: the SQLSTATE only).
        PERFORM set_config('gate.cursor', (SELECT c.name FROM pg_cursors c), true);
        RAISE NOTICE '%: %', r.a, split_part(gate_try('cursor_read'), ':', 1);
    END LOOP;
END
$$;
-- Deferring the caller's constraints would outlive the call (SET
-- CONSTRAINTS is the transaction's, not a setting).
SELECT gate_try('constraints');

-- Bad names, and the bodies called without their gate.
SELECT eventlog.run_processor(NULL);
SELECT eventlog.run_processor('no_such');
SELECT * FROM eventlog.processor_windows(NULL);
SELECT eventlog._run_processor('gate_rows', 1, true);
SELECT eventlog._reset_processor('gate_rows', 'earliest');
SELECT * FROM eventlog._processor_windows('gate_windows');
SELECT eventlog._processor_owner_step(NULL);
SET ROLE gate_owner;
SELECT eventlog._run_processor('gate_rows', 1, true);
RESET ROLE;

-- A processor whose owner role was dropped (after REASSIGN OWNED of its
-- tables) runs for nobody, superusers included.
CREATE ROLE gate_gone;
GRANT USAGE, CREATE ON SCHEMA public TO gate_gone;
SELECT eventlog.grant('gate', 'consume', 'gate_gone');
SET ROLE gate_gone;
CREATE TABLE gate_gone_rows (k text);
CREATE TABLE gate_gone_windows (window_start timestamptz, window_end timestamptz, k text, n bigint);
SELECT eventlog.create_processor('gate_gone', 'gate', sink_table => 'gate_gone_rows', select_list => 'key');
SELECT eventlog.create_window_processor('gate_gone_w', 'gate', 'gate_gone_windows', size => '1 minute',
    idle_timeout => '1 hour');
RESET ROLE;
SELECT eventlog.revoke('gate', 'consume', 'gate_gone');
REASSIGN OWNED BY gate_gone TO CURRENT_USER;
DROP OWNED BY gate_gone;
DROP ROLE gate_gone;
SELECT gate_catch($$SELECT eventlog.run_processor('gate_gone')$$);
SELECT gate_catch($$SELECT eventlog.reset_processor('gate_gone')$$);
SELECT gate_catch($$SELECT count(*) FROM eventlog.processor_windows('gate_gone_w')$$);
SELECT eventlog.drop_processor('gate_gone'), eventlog.drop_processor('gate_gone_w');
DROP TABLE gate_gone_rows, gate_gone_windows;

SELECT eventlog.drop_processor('gate_rows'), eventlog.drop_processor('gate_windows');
DROP TABLE gate_rows, gate_windows;
DROP AGGREGATE gate_count(text);
DROP FUNCTION gate_probe(text), gate_try(text), gate_deferred(), gate_take(), gate_final(bigint), gate_catch(text);
SELECT eventlog.drop_topic('gate');
DROP OWNED BY gate_owner, gate_stranger;
DROP ROLE gate_owner, gate_stranger;
