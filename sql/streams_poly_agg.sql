--
-- Window aggregates of polymorphic aggregates: max and min of arrays
-- (anyarray) and of an enum (anyenum), an aggregate of the user's of
-- anyelement, and one of two anycompatible arguments with a polymorphic
-- final function and an initial value.  The processor's aggregates take
-- the types the arguments resolve to, as a call would; tumbling, session
-- and sliding windows, emitted final and as changes, against a GROUP BY
-- over the same records.  Then what does not resolve (42883, 42804,
-- 0A000), a function put in the way (42725), and privileges (42501).
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SELECT eventlog.create_topic('pa', 1);
CREATE ROLE pa_owner;
GRANT USAGE, CREATE ON SCHEMA public TO pa_owner;
SELECT eventlog.grant('pa', 'consume', 'pa_owner');
CREATE TYPE pa_mood AS ENUM ('sad', 'ok', 'happy', 'ecstatic');
-- the larger of two values of any type (NULLs ignored), as an aggregate
CREATE FUNCTION pa_big_sfn(anyelement, anyelement) RETURNS anyelement LANGUAGE sql IMMUTABLE
    AS $$SELECT CASE WHEN $1 IS NULL OR $2 > $1 THEN $2 ELSE $1 END$$;
CREATE AGGREGATE pa_big(anyelement) (SFUNC = pa_big_sfn, STYPE = anyelement, COMBINEFUNC = pa_big_sfn);
-- the least and greatest of two arguments of compatible types, as an
-- array from '{}', finished as the greatest
CREATE FUNCTION pa_span_sfn(anycompatiblearray, anycompatible, anycompatible) RETURNS anycompatiblearray LANGUAGE sql IMMUTABLE
    AS $$SELECT ARRAY[least($1[1], $2, $3), greatest($1[2], $2, $3)]$$;
CREATE FUNCTION pa_span_comb(anycompatiblearray, anycompatiblearray) RETURNS anycompatiblearray LANGUAGE sql IMMUTABLE
    AS $$SELECT ARRAY[least($1[1], $2[1]), greatest($1[2], $2[2])]$$;
CREATE FUNCTION pa_span_fin(anycompatiblearray) RETURNS anycompatible LANGUAGE sql IMMUTABLE
    AS $$SELECT $1[2]$$;
CREATE AGGREGATE pa_span(anycompatible, anycompatible) (SFUNC = pa_span_sfn, STYPE = anycompatiblearray,
    COMBINEFUNC = pa_span_comb, FINALFUNC = pa_span_fin, INITCOND = '{}');
CREATE FUNCTION pa(k text, v int[], mood text, x int, n numeric, t numeric) RETURNS void LANGUAGE sql AS $$
    SELECT NULL FROM eventlog.produce('pa', k, jsonb_build_object('v', v::text, 'mood', mood, 'x', x, 'n', n,
        'ts', '2026-01-01 10:00:00+00'::timestamptz + t * interval '1 second')) $$;
-- Keys a, b, c, a record each 2.5 seconds per key; every fifth slot of a
-- key comes later (merging sessions at a gap of 3 s).  NULLs now and then.
CREATE TABLE pa_data AS
    SELECT i, chr(97 + i % 3) AS k,
           CASE WHEN i % 11 = 7 THEN NULL ELSE ARRAY[(i * 37) % 7, (i * 13) % 5] END AS v,
           CASE WHEN i % 13 = 5 THEN NULL ELSE (ARRAY['sad', 'ok', 'happy', 'ecstatic'])[1 + (i * 7) % 4] END AS mood,
           CASE WHEN i % 9 = 4 THEN NULL ELSE (i * 29) % 41 END AS x,
           ((i * 17) % 23) / 4.0 AS n,
           (i / 3) * 2.5 AS t, (i / 3) % 5 = 4 AS late_wave
      FROM generate_series(0, 59) i;

CREATE TABLE pa_sink (window_start timestamptz, window_end timestamptz, k text,
                      mxa int[], mna int[], mxm pa_mood, mnm pa_mood, big int, span numeric);
CREATE TABLE pa_tf (LIKE pa_sink); CREATE TABLE pa_tc (LIKE pa_sink);
CREATE TABLE pa_sf (LIKE pa_sink); CREATE TABLE pa_sc (LIKE pa_sink);
CREATE TABLE pa_lf (LIKE pa_sink); CREATE TABLE pa_lc (LIKE pa_sink);
GRANT SELECT, INSERT, UPDATE, DELETE ON pa_sink, pa_tf, pa_tc, pa_sf, pa_sc, pa_lf, pa_lc TO pa_owner;

SET ROLE pa_owner;
CREATE FUNCTION pa_make(name text, sink regclass, wtype text, emit text) RETURNS void LANGUAGE sql AS $$
    SELECT eventlog.create_window_processor(name, 'pa', sink,
        size => CASE WHEN wtype = 'session' THEN NULL ELSE '10 seconds' END::interval,
        gap => CASE WHEN wtype = 'session' THEN '3 seconds' END::interval,
        window_type => wtype, emit => emit, allowed_lateness => '60 seconds',
        event_time => $e$(value->>'ts')::timestamptz$e$,
        aggregates => ARRAY[$a$max((value->>'v')::int[])$a$, $a$min((value->>'v')::int[])$a$,
                            $a$max((value->>'mood')::public.pa_mood)$a$, $a$min((value->>'mood')::public.pa_mood)$a$,
                            $a$public.pa_big((value->>'x')::int)$a$,
                            $a$public.pa_span((value->>'x')::int, (value->>'n')::numeric) AS span$a$]) $$;
SELECT pa_make('pa_tf', 'pa_tf', 'tumbling', 'final'), pa_make('pa_tc', 'pa_tc', 'tumbling', 'changes'),
       pa_make('pa_sf', 'pa_sf', 'session', 'final'), pa_make('pa_sc', 'pa_sc', 'session', 'changes'),
       pa_make('pa_lf', 'pa_lf', 'sliding', 'final'), pa_make('pa_lc', 'pa_lc', 'sliding', 'changes');
RESET ROLE;
-- Each aggregate: the polymorphic regprocedure, and the types its
-- arguments resolved to (pa_span's int and numeric: numeric, numeric).
SELECT agg_funcs, agg_types, agg_names FROM eventlog.processor_catalog WHERE name = 'pa_tf';
-- The window columns of the resolved state types.
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
  FROM pg_attribute a WHERE a.attrelid = (SELECT format('eventlog.processor_%s_windows', processor_id)::regclass
                                            FROM eventlog.processor_catalog WHERE name = 'pa_tf')
   AND a.attname ~ '^v_' ORDER BY a.attnum;
-- The sliding window's record buffer: the arguments, cast as resolved.
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
  FROM pg_attribute a WHERE a.attrelid = (SELECT format('eventlog.processor_%s_records', processor_id)::regclass
                                            FROM eventlog.processor_catalog WHERE name = 'pa_lf')
   AND a.attname ~ '^x_' ORDER BY a.attnum;
-- The processor's aggregates, of the concrete types, the owner's, with the
-- aggregates' own (polymorphic) functions inside.
SELECT regexp_replace(p.oid::regprocedure::text, 'processor_[0-9]+_', 'processor_N_') AS aggregate,
       pg_get_userbyid(p.proowner) AS owner, p.prorettype::regtype AS result,
       g.aggtransfn, g.aggfinalfn, g.aggcombinefn, g.aggtranstype::regtype, g.agginitval
  FROM pg_proc p JOIN pg_aggregate g ON g.aggfnoid = p.oid
 WHERE p.pronamespace = 'eventlog'::regnamespace
   AND p.proname ~ ('^processor_' || (SELECT processor_id FROM eventlog.processor_catalog WHERE name = 'pa_tf') || '_')
 ORDER BY p.proname;

CREATE FUNCTION pa_steps(n integer) RETURNS TABLE (p text, moved bigint) LANGUAGE plpgsql AS $$
DECLARE
    q text;
BEGIN
    FOREACH q IN ARRAY ARRAY['pa_tf', 'pa_tc', 'pa_sf', 'pa_sc', 'pa_lf', 'pa_lc'] LOOP
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
-- The first wave in steps of 4 records, then the second, then a record an
-- hour later that closes every window of a, b and c.
SELECT count(*) FROM (SELECT pa(k, v, mood, x, n, t) FROM pa_data WHERE NOT late_wave ORDER BY i) AS d;
SET SESSION AUTHORIZATION pa_owner;
SELECT * FROM pa_steps(4);
RESET SESSION AUTHORIZATION;
SELECT count(*) FROM (SELECT pa(k, v, mood, x, n, t) FROM pa_data WHERE late_wave ORDER BY i) AS d;
SET SESSION AUTHORIZATION pa_owner;
SELECT * FROM pa_steps(4);
RESET SESSION AUTHORIZATION;
SELECT pa('zz', '{1}', 'ok', 1, 1, 3600);
SET SESSION AUTHORIZATION pa_owner;
SELECT * FROM pa_steps(4);
RESET SESSION AUTHORIZATION;
SELECT sum(records) AS records, sum(late_records) AS late FROM eventlog.processor_progress('pa_sc');

-- What a GROUP BY makes of the same records.
CREATE VIEW pa_src AS
    SELECT key AS k, (value->>'v')::int[] AS v, (value->>'mood')::pa_mood AS mood, (value->>'x')::int AS x,
           (value->>'n')::numeric AS n, (value->>'ts')::timestamptz AS ts
      FROM eventlog.read('pa', 0, 0, 1000) WHERE key <> 'zz';
CREATE VIEW pa_tumbling AS
    SELECT date_bin('10 s', ts, '1970-01-01 00:00:00+00') AS window_start,
           date_bin('10 s', ts, '1970-01-01 00:00:00+00') + interval '10 s' AS window_end, k,
           max(v) AS mxa, min(v) AS mna, max(mood) AS mxm, min(mood) AS mnm, pa_big(x) AS big, pa_span(x, n) AS span
      FROM pa_src GROUP BY 1, 2, 3;
CREATE VIEW pa_sessions AS
    SELECT min(ts) AS window_start, max(ts) AS window_end, k,
           max(v) AS mxa, min(v) AS mna, max(mood) AS mxm, min(mood) AS mnm, pa_big(x) AS big, pa_span(x, n) AS span
      FROM (SELECT *, count(*) FILTER (WHERE prev IS NULL OR ts > prev + interval '3 s') OVER (PARTITION BY k ORDER BY ts) AS s_
              FROM (SELECT *, lag(ts) OVER (PARTITION BY k ORDER BY ts) AS prev FROM pa_src) AS l) AS g
     GROUP BY k, s_;
-- (sliding: a left window ending at each record, and a right window
-- starting 1 microsecond after it when a record is in it)
CREATE VIEW pa_sliding AS
    SELECT e.we - interval '10 s' AS window_start, e.we AS window_end, e.k,
           max(r.v) AS mxa, min(r.v) AS mna, max(r.mood) AS mxm, min(r.mood) AS mnm, pa_big(r.x) AS big, pa_span(r.x, r.n) AS span
      FROM (SELECT k, ts AS we FROM pa_src UNION SELECT k, ts + interval '10.000001 s' FROM pa_src) AS e
      JOIN pa_src AS r ON r.k = e.k AND r.ts BETWEEN e.we - interval '10 s' AND e.we
     GROUP BY e.k, e.we;
SELECT (SELECT count(*) FROM pa_tumbling) AS tumbling, (SELECT count(*) FROM pa_sessions) AS sessions,
       (SELECT count(*) FROM pa_sliding) AS sliding;
-- The rows on one side only (none).
CREATE FUNCTION pa_diff(sink regclass, expected regclass) RETURNS TABLE (side text, window_start time, window_end time, k text,
                                                                           mxa int[], mna int[], mxm pa_mood, mnm pa_mood, big int, span numeric)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        (SELECT 'sink', window_start::time, window_end::time, k, mxa, mna, mxm, mnm, big, span FROM %1$s WHERE k <> 'zz'
         EXCEPT ALL SELECT 'sink', window_start::time, window_end::time, k, mxa, mna, mxm, mnm, big, span FROM %2$s)
        UNION ALL
        (SELECT 'expected', window_start::time, window_end::time, k, mxa, mna, mxm, mnm, big, span FROM %2$s
         EXCEPT ALL SELECT 'expected', window_start::time, window_end::time, k, mxa, mna, mxm, mnm, big, span FROM %1$s)
        ORDER BY 1, 2, 4$q$, sink, expected);
END
$$;
SELECT 'pa_tf' AS sink, * FROM pa_diff('pa_tf', 'pa_tumbling');
SELECT 'pa_tc' AS sink, * FROM pa_diff('pa_tc', 'pa_tumbling');
SELECT 'pa_sf' AS sink, * FROM pa_diff('pa_sf', 'pa_sessions');
SELECT 'pa_sc' AS sink, * FROM pa_diff('pa_sc', 'pa_sessions');
SELECT 'pa_lf' AS sink, * FROM pa_diff('pa_lf', 'pa_sliding');
SELECT 'pa_lc' AS sink, * FROM pa_diff('pa_lc', 'pa_sliding');
-- A few values, to see them.
SELECT window_start::time, k, mxa, mna, mxm, mnm, big, span FROM pa_tf WHERE window_start::time = '10:00:10' ORDER BY k;
-- The open window of zz, through processor_windows (the final aggregates).
SET SESSION AUTHORIZATION pa_owner;
SELECT window_start::time, group_key, closed, aggregates FROM eventlog.processor_windows('pa_tc');
RESET SESSION AUTHORIZATION;

-- What does not resolve.  max of a record (no max takes one: 42883); an
-- anyelement given a record (a pseudo-type: 0A000); anycompatible
-- arguments without a common type (42804); max of a boolean (42883).
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$max(ROW(key, 1))$$]);
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.pa_big(ROW(key, 1))$$]);
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.pa_span((value->>'x')::int, (value->>'b')::boolean)$$]);
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.pa_span((value->>'x')::int, key)$$]);
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$max(key IS NULL)$$]);
-- an aggregate of several polymorphic signatures that all take the type
-- (PostgreSQL calls neither either: 42725)
CREATE AGGREGATE pa_big(anyarray) (SFUNC = pa_big_sfn, STYPE = anyarray, COMBINEFUNC = pa_big_sfn);
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.pa_big((value->>'v')::int[])$$]);
DROP AGGREGATE pa_big(anyarray);
-- anyenum takes enums only
CREATE AGGREGATE pa_enum_big(anyenum) (SFUNC = pa_big_sfn, STYPE = anyenum, COMBINEFUNC = pa_big_sfn);
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.pa_enum_big((value->>'x')::int)$$]);
DROP AGGREGATE pa_enum_big(anyenum);
-- array_agg has no combine function on 15 (on 16 and later, its final
-- function takes extra arguments: refused all the same, 0A000)
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$array_agg((value->>'x')::int)$$]);

-- A function put in the way: pa_big_sfn of exactly (integer, integer),
-- which CREATE AGGREGATE would find before the aggregate's own (42725).
CREATE TABLE pa_one (window_start timestamptz, window_end timestamptz, big int);
GRANT SELECT, INSERT, UPDATE ON pa_one TO pa_owner;
CREATE FUNCTION pa_big_sfn(integer, integer) RETURNS integer LANGUAGE sql IMMUTABLE AS $$SELECT 0$$;
SET ROLE pa_owner;
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_one', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.pa_big((value->>'x')::int)$$]);
RESET ROLE;
DROP FUNCTION pa_big_sfn(integer, integer);
-- Without it, the processor is made.
SET ROLE pa_owner;
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_one', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.pa_big((value->>'x')::int)$$]);
RESET ROLE;
SELECT agg_funcs, agg_types FROM eventlog.processor_catalog WHERE name = 'pa_x';
SELECT eventlog.drop_processor('pa_x');

-- Privileges, as the owner to be: EXECUTE on the aggregate's combine
-- function (array_larger) revoked (42501).
BEGIN;
REVOKE EXECUTE ON FUNCTION pg_catalog.array_larger(anyarray, anyarray) FROM PUBLIC;
SET ROLE pa_owner;
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$max((value->>'v')::int[])$$]);
ROLLBACK;
BEGIN;
REVOKE EXECUTE ON FUNCTION pa_span_fin(anycompatiblearray) FROM PUBLIC;
SET ROLE pa_owner;
SELECT eventlog.create_window_processor('pa_x', 'pa', 'pa_sink', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.pa_span((value->>'x')::int, (value->>'n')::numeric)$$]);
ROLLBACK;

-- Types with a default length when named without one: an anyelement
-- given bit(8) keeps bit values of any length (as streams_agg_typmod: the
-- casts and columns name the type without a modifier), not bit(1).
SELECT eventlog.create_topic('pb', 1);
SELECT eventlog.produce('pb', 'k', '{"b": "00001111"}', event_time => '2026-01-01 10:00:00+00') IS NOT NULL AS produced;
SELECT eventlog.produce('pb', 'k', '{"b": "01110000"}', event_time => '2026-01-01 10:00:01+00') IS NOT NULL AS produced;
CREATE TABLE pa_bits (window_start timestamptz, window_end timestamptz, v varbit);
SELECT eventlog.create_window_processor('pa_bits', 'pb', 'pa_bits', size => '1 hour', emit => 'changes', group_by => '{}',
                                        aggregates => ARRAY[$$public.pa_big((value->>'b')::bit(8))$$]);
SELECT agg_types FROM eventlog.processor_catalog WHERE name = 'pa_bits';
SELECT eventlog.run_processor('pa_bits');
SELECT v FROM pa_bits;
SELECT pa_big((value->>'b')::bit(8)) AS expected FROM eventlog.read('pb', 0, 0);
SELECT eventlog.drop_processor('pa_bits');
SELECT eventlog.drop_topic('pb');
DROP TABLE pa_bits;

-- PostgreSQL's rules, case by case: the types given (declared, actual,
-- to resolve), and what they resolve to or why not.
CREATE DOMAIN pa_ints AS int[];
CREATE FUNCTION pa_res(d text, a text, t text, probe boolean DEFAULT true) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN eventlog._processor_poly_resolve(d::regtype[]::oid[], a::regtype[]::oid[], t::regtype[]::oid[], probe)::regtype[]::text;
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SELECT d, a, t, pa_res(d, a, t) FROM (VALUES
    ('{anyrange}', '{int4range}', '{anyrange,anyelement,anymultirange,anyarray}'),
    ('{anymultirange}', '{datemultirange}', '{anyrange,anyelement}'),
    ('{anyelement,anyarray}', '{integer,integer[]}', '{anyelement}'),
    ('{anyelement,anyarray}', '{integer,text[]}', '{anyelement}'),
    ('{anyelement,anyelement}', '{integer,bigint}', '{anyelement}'),
    ('{anyarray}', '{pa_ints}', '{anyarray,anyelement}'),
    ('{anyelement}', '{pa_ints}', '{anyelement,anyarray}'),
    ('{anyarray}', '{point}', '{anyarray}'),
    ('{anynonarray}', '{integer[]}', '{anynonarray}'),
    ('{anycompatible,anycompatiblearray}', '{integer,numeric[]}', '{anycompatible,anycompatiblearray}'),
    ('{anycompatiblerange,anycompatible}', '{int4range,smallint}', '{anycompatiblerange,anycompatible}'),
    ('{anycompatiblerange,anycompatible}', '{int4range,numeric}', '{anycompatiblerange}'),
    ('{anycompatiblenonarray,anycompatible}', '{integer[],integer[]}', '{anycompatible}'),
    ('{anycompatible,anycompatible}', '{pa_mood,text}', '{anycompatible}'),
    ('{anyelement,text}', '{integer,text}', '{anyelement,text}')) AS c(d, a, t);
-- Checking a specification runs no query over the user's types: the
-- common type must be there already.
SELECT pa_res('{anycompatible,anycompatible}', '{integer,bigint}', '{anycompatible}', false),
       pa_res('{anycompatible,anycompatible}', '{bigint,bigint}', '{anycompatible}', false);
DROP FUNCTION pa_res(text, text, text, boolean);
DROP DOMAIN pa_ints;

-- Review 3.  An argument of a collation other than the database's is
-- refused (0A000): states are combined in the database's collation, so
-- the result would depend on how records were cut into steps; one of the
-- database's collation is taken.
SET ROLE pa_owner;
SELECT eventlog._processor_parse_aggregate($a$max(ARRAY[value->>'s'] COLLATE "C")$a$);
SELECT eventlog._processor_parse_aggregate($a$public.pa_big((value->>'s') COLLATE "POSIX")$a$);
SELECT eventlog._processor_parse_aggregate($a$public.pa_span(value->>'s', (value->>'s') COLLATE "C")$a$);
SELECT eventlog._processor_parse_aggregate($a$max(ARRAY[value->>'s'] COLLATE "default")$a$);
-- a number is taken as before (no collation kept)
SELECT eventlog._processor_parse_aggregate($a$max((value->>'s') COLLATE "C")$a$);
RESET ROLE;

-- A resolved type the caller has no USAGE on is refused (42501), as a
-- column of it would be.
CREATE TYPE pa_secret AS ENUM ('x', 'y');
REVOKE USAGE ON TYPE pa_secret FROM PUBLIC;
SET ROLE pa_owner;
SELECT eventlog._processor_parse_aggregate($a$max((value->>'c')::public.pa_secret)$a$);
SELECT eventlog._processor_parse_aggregate($a$public.pa_big((value->>'c')::public.pa_secret)$a$);
RESET ROLE;
-- nor when a specification is given directly
SELECT eventlog.create_topic('pa_x', 1);
SELECT eventlog.grant('pa_x', 'produce', 'pa_owner');
SET SESSION AUTHORIZATION pa_owner;
SELECT eventlog._register_processor(jsonb_build_object('name', 'pa_cr', 'kind', 'window', 'source_topic', 'pa',
    'sink_topic', 'pa_x', 'window_type', 'tumbling', 'size', '10 seconds', 'advance', '10 seconds', 'group_by', ARRAY['key'],
    'agg_funcs', ARRAY['max(anyenum)'], 'agg_args', ARRAY['NULL'], 'agg_names', ARRAY['x'], 'agg_types', ARRAY['{public.pa_secret}'],
    'event_time_expr', 'event_time', 'time_mode', 'event', 'emit', 'final', 'late', 'drop', 'allowed_lateness', '0',
    'max_out_of_orderness', '0', 'idle_timeout', '1 minute', 'retention', '0'));
RESET SESSION AUTHORIZATION;
SELECT count(*) FROM eventlog.processor_catalog WHERE name = 'pa_cr';
SELECT eventlog.drop_topic('pa_x');
DROP TYPE pa_secret;

-- A type of a temporary schema is refused (0A000): the processor
-- outlives the session.
CREATE TYPE pg_temp.pa_tt AS (a int);
SELECT eventlog._processor_parse_aggregate($a$public.pa_big(ROW((value->>'x')::int)::pg_temp.pa_tt)$a$);
SELECT eventlog._processor_parse_aggregate($a$max(ARRAY[ROW((value->>'x')::int)::pg_temp.pa_tt])$a$);
-- nor one built on it: a domain of another schema over it
CREATE DOMAIN public.pa_dtt AS pg_temp.pa_tt;
SELECT eventlog._processor_parse_aggregate($a$public.pa_big(ROW((value->>'x')::int)::public.pa_dtt)$a$);
DROP DOMAIN public.pa_dtt;
DROP TYPE pg_temp.pa_tt;

-- The user's aggregate replaced after the processor was made (its final
-- function gone): the processor keeps finishing states with its own final
-- aggregate, never writing a state as the value.
SET SESSION AUTHORIZATION pa_owner;
CREATE FUNCTION pa_acc(anyarray, anyelement) RETURNS anyarray LANGUAGE sql IMMUTABLE AS $$SELECT $1 || $2$$;
CREATE FUNCTION pa_cat(anyarray, anyarray) RETURNS anyarray LANGUAGE sql IMMUTABLE AS $$SELECT $1 || $2$$;
CREATE FUNCTION pa_lastof(anyarray) RETURNS anyelement LANGUAGE sql IMMUTABLE AS $$SELECT $1[cardinality($1)]$$;
CREATE FUNCTION pa_keep(anyelement, anyelement) RETURNS anyelement LANGUAGE sql IMMUTABLE AS $$SELECT coalesce($2, $1)$$;
CREATE AGGREGATE pa_lastv(anyelement) (SFUNC = pa_acc, STYPE = anyarray, COMBINEFUNC = pa_cat, FINALFUNC = pa_lastof);
CREATE TABLE pa_rep (window_start timestamptz, window_end timestamptz, k text, l int);
SELECT eventlog.create_window_processor('pa_rep', 'pa', 'pa_rep', size => '10 seconds', group_by => ARRAY['key'],
    event_time => $e$(value->>'ts')::timestamptz$e$, aggregates => ARRAY[$a$public.pa_lastv((value->>'x')::int)$a$]);
SELECT eventlog.run_processor('pa_rep', 1000) > 0 AS moved;
CREATE OR REPLACE AGGREGATE pa_lastv(anyelement) (SFUNC = pa_keep, STYPE = anyelement, COMBINEFUNC = pa_keep);
RESET SESSION AUTHORIZATION;
SELECT pa('zz', '{1}', 'ok', 2, 1, 7200);
SET SESSION AUTHORIZATION pa_owner;
SELECT eventlog.run_processor('pa_rep', 1000);
SELECT count(*) FROM pa_rep WHERE k <> 'zz';
SELECT window_start, k, l FROM pa_rep WHERE k = 'zz';
SELECT eventlog.drop_processor('pa_rep');
DROP TABLE pa_rep;
DROP AGGREGATE pa_lastv(anyelement);
DROP FUNCTION pa_acc(anyarray, anyelement), pa_cat(anyarray, anyarray), pa_lastof(anyarray), pa_keep(anyelement, anyelement);
RESET SESSION AUTHORIZATION;

-- An aggregate of both concrete and polymorphic signatures: where
-- PostgreSQL would call a concrete one by implicit coercion (pick(text)
-- for a varchar, pick(numeric) for an int), 42725 rather than the
-- polymorphic one; exact types are taken.
CREATE FUNCTION pa_tag(text, anyelement) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT coalesce($1, '') || 'A'$$;
CREATE FUNCTION pa_tag(text, text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT coalesce($1, '') || 'T'$$;
CREATE FUNCTION pa_tag(text, numeric) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT coalesce($1, '') || 'N'$$;
CREATE FUNCTION pa_tag_cat(text, text) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$SELECT $1 || $2$$;
CREATE AGGREGATE pa_pick(anyelement) (SFUNC = pa_tag, STYPE = text, COMBINEFUNC = pa_tag_cat);
CREATE AGGREGATE pa_pick(text) (SFUNC = pa_tag, STYPE = text, COMBINEFUNC = pa_tag_cat);
CREATE AGGREGATE pa_pick(numeric) (SFUNC = pa_tag, STYPE = text, COMBINEFUNC = pa_tag_cat);
SELECT pa_pick(x) FROM (VALUES ('q'::varchar)) v(x);
SELECT eventlog._processor_parse_aggregate($a$public.pa_pick((value->>'s')::varchar)$a$);
SELECT eventlog._processor_parse_aggregate($a$public.pa_pick((value->>'s')::int)$a$);
SELECT eventlog._processor_parse_aggregate($a$public.pa_pick((value->>'s')::text)$a$);
SELECT eventlog._processor_parse_aggregate($a$public.pa_pick((value->>'s')::date)$a$);
-- a domain over a domain over text: PostgreSQL calls pick(text) too
CREATE DOMAIN pa_d1 AS text;
CREATE DOMAIN pa_d2 AS pa_d1;
SELECT pa_pick(x) FROM (VALUES ('q'::pa_d2)) v(x);
SELECT eventlog._processor_parse_aggregate($a$public.pa_pick((value->>'s')::public.pa_d2)$a$);
DROP DOMAIN pa_d2;
DROP DOMAIN pa_d1;
DROP AGGREGATE pa_pick(anyelement), pa_pick(text), pa_pick(numeric);
DROP FUNCTION pa_tag(text, anyelement), pa_tag(text, text), pa_tag(text, numeric), pa_tag_cat(text, text);

-- Dropping the processors drops their aggregates.
SELECT eventlog.drop_processor(n) FROM unnest(ARRAY['pa_tf', 'pa_tc', 'pa_sf', 'pa_sc', 'pa_lf', 'pa_lc']) AS n;
SELECT count(*) FROM pg_proc WHERE pronamespace = 'eventlog'::regnamespace AND proname ~ '^processor_[0-9]+_';
SELECT eventlog.drop_topic('pa');
DROP FUNCTION pa_make(text, regclass, text, text);
DROP OWNED BY pa_owner;
DROP ROLE pa_owner;
DROP VIEW pa_tumbling, pa_sessions, pa_sliding, pa_src;
DROP TABLE pa_data, pa_one, pa_sink, pa_tf, pa_tc, pa_sf, pa_sc, pa_lf, pa_lc;
DROP FUNCTION pa_diff(regclass, regclass), pa_steps(integer), pa(text, int[], text, int, numeric, numeric);
DROP AGGREGATE pa_big(anyelement), pa_span(anycompatible, anycompatible);
DROP FUNCTION pa_big_sfn(anyelement, anyelement), pa_span_sfn(anycompatiblearray, anycompatible, anycompatible),
              pa_span_comb(anycompatiblearray, anycompatiblearray), pa_span_fin(anycompatiblearray);
DROP TYPE pa_mood;
