--
-- Window aggregates whose state is internal (src/agg_state.c): stddev_samp,
-- var_pop and variance of numeric, sum and avg of bigint, kept as sealed
-- bytea, in tumbling, session and sliding windows, emitted final and as
-- changes, against a GROUP BY over the same records; tampered states
-- refused (XX001) with nothing moved; the refusals that remain (0A000).
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SELECT eventlog.create_topic('ia', 1);
CREATE ROLE ia_owner;
GRANT USAGE, CREATE ON SCHEMA public TO ia_owner;
SELECT eventlog.grant('ia', 'consume', 'ia_owner');
CREATE FUNCTION ia(k text, x numeric, b bigint, t numeric) RETURNS void LANGUAGE sql AS $$
    SELECT NULL FROM eventlog.produce('ia', k, jsonb_build_object('x', x, 'b', b,
        'ts', '2026-01-01 10:00:00+00'::timestamptz + t * interval '1 second')) $$;
-- Keys a, b, c, a record each 2.5 seconds per key; every fifth slot of a
-- key is left out at first (a hole of 5 s: two sessions at a gap of 3 s)
-- and produced later, merging the sessions on both sides.  Sums of
-- bigints near 2^62 go past bigint.  NULLs in x and b now and then.
CREATE TABLE ia_data AS
    SELECT i, chr(97 + i % 3) AS k,
           CASE WHEN i % 11 = 7 THEN NULL ELSE ((i * 37) % 101) / 4.0 END AS x,
           CASE WHEN i % 13 = 5 THEN NULL ELSE 4000000000000000000 + i * 1000003 END::bigint AS b,
           (i / 3) * 2.5 AS t, (i / 3) % 5 = 4 AS late_wave
      FROM generate_series(0, 59) i;
SELECT count(*) FILTER (WHERE NOT late_wave) AS first_wave, count(*) FILTER (WHERE late_wave) AS second_wave FROM ia_data;

CREATE TABLE ia_sink (window_start timestamptz, window_end timestamptz, k text,
                      sd numeric, vp numeric, v numeric, s numeric, a numeric);
GRANT SELECT, INSERT, UPDATE, DELETE ON ia_sink TO ia_owner;
CREATE TABLE ia_tf (LIKE ia_sink); CREATE TABLE ia_tc (LIKE ia_sink);
CREATE TABLE ia_sf (LIKE ia_sink); CREATE TABLE ia_sc (LIKE ia_sink);
CREATE TABLE ia_lf (LIKE ia_sink); CREATE TABLE ia_lc (LIKE ia_sink);
GRANT SELECT, INSERT, UPDATE, DELETE ON ia_tf, ia_tc, ia_sf, ia_sc, ia_lf, ia_lc TO ia_owner;

SET ROLE ia_owner;
CREATE FUNCTION ia_make(name text, sink regclass, wtype text, emit text) RETURNS void LANGUAGE sql AS $$
    SELECT eventlog.create_window_processor(name, 'ia', sink,
        size => CASE WHEN wtype = 'session' THEN NULL ELSE '10 seconds' END::interval,
        gap => CASE WHEN wtype = 'session' THEN '3 seconds' END::interval,
        window_type => wtype, emit => emit, allowed_lateness => '60 seconds',
        event_time => $e$(value->>'ts')::timestamptz$e$,
        aggregates => ARRAY[$a$stddev_samp((value->>'x')::numeric)$a$, $a$var_pop((value->>'x')::numeric)$a$,
                            $a$variance((value->>'x')::numeric)$a$, $a$pg_catalog.sum((value->>'b')::bigint)$a$,
                            $a$pg_catalog.avg((value->>'b')::bigint) AS a$a$]) $$;
SELECT ia_make('ia_tf', 'ia_tf', 'tumbling', 'final'), ia_make('ia_tc', 'ia_tc', 'tumbling', 'changes'),
       ia_make('ia_sf', 'ia_sf', 'session', 'final'), ia_make('ia_sc', 'ia_sc', 'session', 'changes'),
       ia_make('ia_lf', 'ia_lf', 'sliding', 'final'), ia_make('ia_lc', 'ia_lc', 'sliding', 'changes');
RESET ROLE;
-- Each aggregate: the regprocedure kept, and the window column a bytea.
SELECT agg_funcs, agg_names FROM eventlog.processor_catalog WHERE name = 'ia_tf';
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
  FROM pg_attribute a WHERE a.attrelid = (SELECT format('eventlog.processor_%s_windows', processor_id)::regclass
                                            FROM eventlog.processor_catalog WHERE name = 'ia_tf')
   AND a.attname ~ '^v_' ORDER BY a.attnum;
-- The processor's aggregates, the owner's, with the real functions inside.
SELECT regexp_replace(p.proname, '^processor_[0-9]+_', 'processor_N_') AS aggregate, pg_get_userbyid(p.proowner) AS owner,
       g.aggtransfn, g.aggfinalfn, g.aggcombinefn, g.aggserialfn, g.aggdeserialfn, g.aggtranstype::regtype, g.aggfinalmodify
  FROM pg_proc p JOIN pg_aggregate g ON g.aggfnoid = p.oid
 WHERE p.pronamespace = 'eventlog'::regnamespace
   AND p.proname ~ ('^processor_' || (SELECT processor_id FROM eventlog.processor_catalog WHERE name = 'ia_tf') || '_(partial|combine|final)_[14]$')
 ORDER BY p.proname;
-- One key, 32 bytes, that PUBLIC cannot read.
SELECT count(*), min(octet_length(key)) FROM eventlog.processor_state_key;
SELECT has_table_privilege('ia_owner', 'eventlog.processor_state_key', 'SELECT') AS owner_reads_key;
CREATE TEMP TABLE ia_keep AS SELECT * FROM eventlog.processor_state_key;

CREATE FUNCTION ia_steps(n integer) RETURNS TABLE (p text, moved bigint) LANGUAGE plpgsql AS $$
DECLARE
    q text;
BEGIN
    FOREACH q IN ARRAY ARRAY['ia_tf', 'ia_tc', 'ia_sf', 'ia_sc', 'ia_lf', 'ia_lc'] LOOP
        p := q;
        moved := 0;
        LOOP
            n := eventlog.run_processor(q, 4);
            EXIT WHEN n = 0;
            moved := moved + n;
        END LOOP;
        RETURN NEXT;
    END LOOP;
END
$$;
-- The first wave, in steps of 4 records; then the second, and a record an
-- hour later that closes every window of a, b and c.  Steps run in a
-- session of the owner.
SELECT count(*) FROM (SELECT ia(k, x, b, t) FROM ia_data WHERE NOT late_wave ORDER BY i) AS d;
SET SESSION AUTHORIZATION ia_owner;
SELECT * FROM ia_steps(4);
RESET SESSION AUTHORIZATION;
SELECT count(*) FROM (SELECT ia(k, x, b, t) FROM ia_data WHERE late_wave ORDER BY i) AS d;
SET SESSION AUTHORIZATION ia_owner;
SELECT * FROM ia_steps(4);
RESET SESSION AUTHORIZATION;
SELECT ia('zz', 1, 1, 3600);
SET SESSION AUTHORIZATION ia_owner;
SELECT * FROM ia_steps(4);
RESET SESSION AUTHORIZATION;
SELECT sum(records) AS records, sum(late_records) AS late FROM eventlog.processor_progress('ia_sc');

-- What a GROUP BY makes of the same records (the stored processors'
-- expressions: x numeric, b bigint).
CREATE VIEW ia_src AS
    SELECT key AS k, (value->>'x')::numeric AS x, (value->>'b')::bigint AS b, (value->>'ts')::timestamptz AS ts
      FROM eventlog.read('ia', 0, 0, 1000) WHERE key <> 'zz';
CREATE VIEW ia_tumbling AS
    SELECT date_bin('10 s', ts, '1970-01-01 00:00:00+00') AS window_start,
           date_bin('10 s', ts, '1970-01-01 00:00:00+00') + interval '10 s' AS window_end, k,
           stddev_samp(x) AS sd, var_pop(x) AS vp, variance(x) AS v, sum(b) AS s, avg(b) AS a
      FROM ia_src GROUP BY 1, 2, 3;
CREATE VIEW ia_sessions AS
    SELECT min(ts) AS window_start, max(ts) AS window_end, k,
           stddev_samp(x) AS sd, var_pop(x) AS vp, variance(x) AS v, sum(b) AS s, avg(b) AS a
      FROM (SELECT *, count(*) FILTER (WHERE prev IS NULL OR ts > prev + interval '3 s') OVER (PARTITION BY k ORDER BY ts) AS s_
              FROM (SELECT *, lag(ts) OVER (PARTITION BY k ORDER BY ts) AS prev FROM ia_src) AS l) AS g
     GROUP BY k, s_;
-- (sliding: a left window ending at each record, and a right window
-- starting 1 microsecond after it when a record is in it)
CREATE VIEW ia_sliding AS
    SELECT e.we - interval '10 s' AS window_start, e.we AS window_end, e.k,
           stddev_samp(r.x) AS sd, var_pop(r.x) AS vp, variance(r.x) AS v, sum(r.b) AS s, avg(r.b) AS a
      FROM (SELECT k, ts AS we FROM ia_src UNION SELECT k, ts + interval '10.000001 s' FROM ia_src) AS e
      JOIN ia_src AS r ON r.k = e.k AND r.ts BETWEEN e.we - interval '10 s' AND e.we
     GROUP BY e.k, e.we;
-- Rows, sessions, and the rows on one side only (none).
SELECT (SELECT count(*) FROM ia_tumbling) AS tumbling, (SELECT count(*) FROM ia_sessions) AS sessions,
       (SELECT count(*) FROM ia_sliding) AS sliding;
CREATE FUNCTION ia_diff(sink regclass, expected regclass) RETURNS TABLE (side text, window_start time, window_end time, k text,
                                                                           sd numeric, vp numeric, v numeric, s numeric, a numeric)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        (SELECT 'sink', window_start::time, window_end::time, k, sd, vp, v, s, a FROM %1$s WHERE k <> 'zz'
         EXCEPT ALL SELECT 'sink', window_start::time, window_end::time, k, sd, vp, v, s, a FROM %2$s)
        UNION ALL
        (SELECT 'expected', window_start::time, window_end::time, k, sd, vp, v, s, a FROM %2$s
         EXCEPT ALL SELECT 'expected', window_start::time, window_end::time, k, sd, vp, v, s, a FROM %1$s)
        ORDER BY 1, 2, 4$q$, sink, expected);
END
$$;
SELECT 'ia_tf' AS sink, * FROM ia_diff('ia_tf', 'ia_tumbling');
SELECT 'ia_tc' AS sink, * FROM ia_diff('ia_tc', 'ia_tumbling');
SELECT 'ia_sf' AS sink, * FROM ia_diff('ia_sf', 'ia_sessions');
SELECT 'ia_sc' AS sink, * FROM ia_diff('ia_sc', 'ia_sessions');
SELECT 'ia_lf' AS sink, * FROM ia_diff('ia_lf', 'ia_sliding');
SELECT 'ia_lc' AS sink, * FROM ia_diff('ia_lc', 'ia_sliding');
-- A few values, to see them: sums past bigint, exact.
SELECT window_start::time, k, round(sd, 6) AS sd, round(vp, 6) AS vp, s, a FROM ia_tf WHERE window_start::time = '10:00:10' ORDER BY k;
-- The open window of zz, through processor_windows (the final aggregates),
-- which run as the owner in a security-restricted operation: in a
-- superuser's session, and in the owner's.
SELECT window_start::time, group_key, closed, aggregates FROM eventlog.processor_windows('ia_tc');
SET SESSION AUTHORIZATION ia_owner;
SELECT window_start::time, group_key, closed, aggregates FROM eventlog.processor_windows('ia_tc');
RESET SESSION AUTHORIZATION;

-- Tampering, as the owner, who may write the window table: a state
-- changed, cut short, swapped with another aggregate's of the same serial
-- function (var_pop and stddev_samp of numeric), swapped with the same
-- aggregate's of another processor, or another serial function's.  Each
-- is refused (XX001) before a deserial function reads a byte, and the
-- step moves nothing.
CREATE FUNCTION ia_windows(name text) RETURNS regclass LANGUAGE sql AS $$
    SELECT format('eventlog.processor_%s_windows', processor_id)::regclass FROM eventlog.processor_catalog c WHERE c.name = $1 $$;
-- zz's window's column "col" of processor "name" set to "val" (SQL over
-- the row "w"), as the current role.
CREATE FUNCTION ia_set(name text, col text, val text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('UPDATE %s AS w SET %I = (%s) WHERE group_key = ''["zz"]''', ia_windows(name), col, val);
END
$$;
GRANT EXECUTE ON FUNCTION ia_set(text, text, text) TO ia_owner;
-- A step of ia_tc, whose refusal is caught: what it said, and whether it
-- moved anything (its windows and its progress as before).
CREATE FUNCTION ia_try() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    before text;
    after text;
    n bigint;
BEGIN
    EXECUTE format('SELECT string_agg(t::text, '';'' ORDER BY t::text) FROM %s t', ia_windows('ia_tc')) INTO before;
    before := before || (SELECT string_agg(t::text, ';') FROM eventlog.processor_progress('ia_tc') t);
    BEGIN
        n := eventlog.run_processor('ia_tc');
        RETURN format('accepted, %s moved', n);
    EXCEPTION WHEN OTHERS THEN
        EXECUTE format('SELECT string_agg(t::text, '';'' ORDER BY t::text) FROM %s t', ia_windows('ia_tc')) INTO after;
        after := after || (SELECT string_agg(t::text, ';') FROM eventlog.processor_progress('ia_tc') t);
        RETURN format('refused (%s): %s; %s', SQLSTATE, regexp_replace(SQLERRM, 'processor_[0-9]+_', 'processor_N_'),
                      CASE WHEN before IS DISTINCT FROM after THEN 'state changed' ELSE 'nothing moved' END);
    END;
END
$$;
-- A record for zz's open window, which the step combines with its state.
SELECT ia('zz', 2, 2, 3601);
-- (statements naming a processor's id run in DO, so as not to show it)
DO $$ BEGIN EXECUTE format('CREATE TEMP TABLE ia_saved AS SELECT * FROM %s WHERE group_key = ''["zz"]''', ia_windows('ia_tc')); END $$;
GRANT SELECT ON ia_saved TO ia_owner;
SELECT octet_length(v_1) > 33 AS sealed_and_more FROM ia_saved;
SET SESSION AUTHORIZATION ia_owner;
-- a byte flipped, the last one
SELECT ia_set('ia_tc', 'v_1', 'set_byte(w.v_1, octet_length(w.v_1) - 1, get_byte(w.v_1, octet_length(w.v_1) - 1) # 1)');
SELECT ia_try();
-- a byte of the seal flipped
SELECT ia_set('ia_tc', 'v_1', '(SELECT v_1 FROM ia_saved)');
SELECT ia_set('ia_tc', 'v_1', 'set_byte(w.v_1, 5, get_byte(w.v_1, 5) # 128)');
SELECT ia_try();
-- cut short by a byte; cut to the header; to nothing
SELECT ia_set('ia_tc', 'v_1', '(SELECT substring(v_1 FROM 1 FOR octet_length(v_1) - 1) FROM ia_saved)');
SELECT ia_try();
SELECT ia_set('ia_tc', 'v_1', '(SELECT substring(v_1 FROM 1 FOR 33) FROM ia_saved)');
SELECT ia_try();
SELECT ia_set('ia_tc', 'v_1', '''''::bytea');
SELECT ia_try();
-- written by the next major version of PostgreSQL (the first byte): a
-- serial format is that version's own, refused with its own error (55000);
-- a first byte that is no version (0) is a state changed (XX001)
SELECT ia_set('ia_tc', 'v_1', '(SELECT set_byte(v_1, 0, current_setting(''server_version_num'')::int / 10000 + 1) FROM ia_saved)');
SELECT regexp_replace(ia_try(), 'PostgreSQL [0-9]+', 'PostgreSQL N') AS try;
SELECT ia_set('ia_tc', 'v_1', '(SELECT set_byte(v_1, 0, 0) FROM ia_saved)');
SELECT ia_try();
-- var_pop's state (the same serial function) as stddev_samp's
SELECT ia_set('ia_tc', 'v_1', '(SELECT v_2 FROM ia_saved)');
SELECT ia_try();
-- the same aggregate's state of the same window of another processor
SELECT ia_set('ia_tc', 'v_1', format('(SELECT v_1 FROM %s WHERE group_key = ''["zz"]'')', ia_windows('ia_tf')));
SELECT ia_try();
-- sum of bigint's state (another serial function) as avg of bigint's
SELECT ia_set('ia_tc', 'v_5', '(SELECT v_4 FROM ia_saved)');
SELECT ia_set('ia_tc', 'v_1', '(SELECT v_1 FROM ia_saved)');
SELECT ia_try();
-- Put back, the step takes the record.
SELECT ia_set('ia_tc', 'v_5', '(SELECT v_5 FROM ia_saved)');
SELECT ia_try();
SELECT window_start::time, group_key, closed, aggregates FROM eventlog.processor_windows('ia_tc');
RESET SESSION AUTHORIZATION;

-- An aggregate of the user's with _agg_state_seal as final function: only
-- a superuser may create one (its state is internal), and what it seals,
-- with the same serial function as stddev_samp of numeric, is refused by
-- the processor's aggregates all the same (another slot).
SET ROLE ia_owner;
CREATE AGGREGATE public.ia_seal(numeric) (SFUNC = numeric_accum, STYPE = internal, FINALFUNC = eventlog._agg_state_seal,
    COMBINEFUNC = numeric_combine, SERIALFUNC = numeric_serialize, DESERIALFUNC = numeric_deserialize);
RESET ROLE;
CREATE AGGREGATE public.ia_seal(numeric) (SFUNC = numeric_accum, STYPE = internal, FINALFUNC = eventlog._agg_state_seal,
    COMBINEFUNC = numeric_combine, SERIALFUNC = numeric_serialize, DESERIALFUNC = numeric_deserialize);
SELECT octet_length(public.ia_seal(x)) > 33 AS sealed FROM ia_src;
DO $$ BEGIN EXECUTE format('CREATE TEMP TABLE ia_saved2 AS SELECT * FROM %s WHERE group_key = ''["zz"]''', ia_windows('ia_tc')); END $$;
SELECT ia('zz', 3, 3, 3602);
SELECT ia_set('ia_tc', 'v_1', '(SELECT public.ia_seal(x) FROM ia_src)');
SET SESSION AUTHORIZATION ia_owner;
SELECT ia_try();
RESET SESSION AUTHORIZATION;
-- Named as a processor's own aggregate, in another schema: still refused.
DO $$
DECLARE
    n text := (SELECT 'processor_' || processor_id || '_partial_1' FROM eventlog.processor_catalog WHERE name = 'ia_tc');
BEGIN
    EXECUTE format('CREATE AGGREGATE public.%I(numeric) (SFUNC = numeric_accum, STYPE = internal, FINALFUNC = eventlog._agg_state_seal, '
                   'COMBINEFUNC = numeric_combine, SERIALFUNC = numeric_serialize, DESERIALFUNC = numeric_deserialize)', n);
    PERFORM ia_set('ia_tc', 'v_1', format('(SELECT public.%I(x) FROM ia_src)', n));
END
$$;
SET SESSION AUTHORIZATION ia_owner;
SELECT ia_try();
RESET SESSION AUTHORIZATION;
-- The state the last step wrote back, and the step takes the record.
SELECT ia_set('ia_tc', 'v_1', '(SELECT v_1 FROM ia_saved2)');
SET SESSION AUTHORIZATION ia_owner;
SELECT ia_try();
RESET SESSION AUTHORIZATION;

-- Outside an aggregate: a processor's aggregate as a window function.
DO $$ BEGIN EXECUTE format('SELECT eventlog.%I(v_1) OVER () FROM %s', (SELECT 'processor_' || processor_id || '_combine_1'
    FROM eventlog.processor_catalog WHERE name = 'ia_tc'), ia_windows('ia_tc')); END $$;
DO $$ BEGIN EXECUTE format('SELECT eventlog.%I(v_1) OVER () FROM %s', (SELECT 'processor_' || processor_id || '_final_1'
    FROM eventlog.processor_catalog WHERE name = 'ia_tc'), ia_windows('ia_tc')); END $$;
-- The key was not touched; without it, no state is read (55000).
SELECT (SELECT key FROM eventlog.processor_state_key) = (SELECT key FROM ia_keep) AS same_key;
BEGIN;
DELETE FROM eventlog.processor_state_key;
SET SESSION AUTHORIZATION ia_owner;
SELECT window_start::time, group_key, closed, aggregates FROM eventlog.processor_windows('ia_tc');
ROLLBACK;
-- nor is a new key made beside the processors whose states the lost one
-- sealed (it would leave them unreadable)
BEGIN;
DELETE FROM eventlog.processor_state_key;
CREATE TABLE ia_sink3 (window_start timestamptz, window_end timestamptz, sd numeric);
SELECT eventlog.create_window_processor('ia_x', 'ia', 'ia_sink3', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$stddev_samp((value->>'x')::numeric)$$]);
ROLLBACK;

-- The processors' aggregates are their owner's alone: PUBLIC may not run
-- them (nor seal states in their slots).
SELECT count(*) > 0 AS aggregates,
       count(*) FILTER (WHERE has_function_privilege('public', p.oid, 'EXECUTE')) AS public_may_run,
       count(*) FILTER (WHERE NOT has_function_privilege(p.proowner, p.oid, 'EXECUTE')) AS owner_may_not
  FROM pg_proc p WHERE p.pronamespace = 'eventlog'::regnamespace AND p.proname ~ '^processor_[0-9]+_';

-- Refused still (0A000): an internal state without serial functions, an
-- aggregate without a combine function (string_agg on 15); and 42501 when
-- the caller may not run the serial function.
CREATE AGGREGATE public.ia_noserial(numeric) (SFUNC = numeric_accum, STYPE = internal, FINALFUNC = numeric_stddev_samp,
    COMBINEFUNC = numeric_combine);
SELECT eventlog.create_window_processor('ia_x', 'ia', 'ia_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.ia_noserial((value->>'x')::numeric)$$]);
SELECT eventlog.create_window_processor('ia_x', 'ia', 'ia_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$string_agg(key, ',')$$]);
BEGIN;
REVOKE EXECUTE ON FUNCTION pg_catalog.numeric_serialize(internal) FROM PUBLIC;
SET ROLE ia_owner;
SELECT eventlog.create_window_processor('ia_x', 'ia', 'ia_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$stddev_samp((value->>'x')::numeric)$$]);
ROLLBACK;

-- Dropping the processors drops their aggregates.
SELECT eventlog.drop_processor(n) FROM unnest(ARRAY['ia_tf', 'ia_tc', 'ia_sf', 'ia_sc', 'ia_lf', 'ia_lc']) AS n;
SELECT count(*) FROM pg_proc WHERE pronamespace = 'eventlog'::regnamespace AND proname ~ '^processor_[0-9]+_';
DROP AGGREGATE public.ia_seal(numeric);
DROP AGGREGATE public.ia_noserial(numeric);
DO $$ BEGIN EXECUTE (SELECT format('DROP AGGREGATE public.%I(numeric)', proname) FROM pg_proc
 WHERE pronamespace = 'public'::regnamespace AND proname ~ '^processor_[0-9]+_partial_1$'); END $$;
DROP FUNCTION ia_make(text, regclass, text, text);
DROP OWNED BY ia_owner;
DROP ROLE ia_owner;
