--
-- Window processors with aggregates of several arguments (corr,
-- regr_slope, covar_samp, regr_count, and a user's aggregate of two
-- arguments with a combine function): every window type, emit final and
-- changes, late records updating kept windows, steps of several sizes,
-- NULL arguments and one-record windows, each compared with the same
-- aggregates computed by a plain GROUP BY over the same records; then how
-- arguments are split, and what is refused.
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SELECT eventlog.create_topic('pairs', 1);
CREATE FUNCTION pair(k text, y float8, x float8, t float8) RETURNS void LANGUAGE sql AS $$
    SELECT NULL FROM eventlog.produce('pairs', k, jsonb_build_object('y', y, 'x', x,
        'ts', '2026-01-01 10:00:00+00'::timestamptz + t * interval '1 second')) $$;

-- A weighted mean of two arguments, with a combine function, a final
-- function and an initial value; its transition function is not strict
-- (it skips NULLs itself), so it takes every record.
CREATE FUNCTION wavg_step(s float8[], v float8, w float8) RETURNS float8[] LANGUAGE sql IMMUTABLE
    AS $$SELECT CASE WHEN v IS NULL OR w IS NULL THEN s ELSE ARRAY[s[1] + v * w, s[2] + w] END$$;
CREATE FUNCTION wavg_comb(a float8[], b float8[]) RETURNS float8[] LANGUAGE sql IMMUTABLE
    AS $$SELECT ARRAY[a[1] + b[1], a[2] + b[2]]$$;
CREATE FUNCTION wavg_final(s float8[]) RETURNS float8 LANGUAGE sql IMMUTABLE
    AS $$SELECT s[1] / nullif(s[2], 0)$$;
CREATE AGGREGATE wavg(float8, float8) (SFUNC = wavg_step, STYPE = float8[], COMBINEFUNC = wavg_comb,
                                        FINALFUNC = wavg_final, INITCOND = '{0,0}');

-- Each window type twice: emit final (late records dropped) and emit
-- changes with late records updating the closed windows kept two hours.
CREATE TABLE agg_sink (window_start timestamptz, window_end timestamptz, k text,
                       c float8, slope float8, cov float8, wa float8, rc bigint);
CREATE FUNCTION make_processors() RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
    w text;
    e text;
BEGIN
    FOREACH w IN ARRAY ARRAY['tumbling', 'hopping', 'sliding', 'session'] LOOP
        FOREACH e IN ARRAY ARRAY['final', 'changes'] LOOP
            EXECUTE format('CREATE TABLE %I (LIKE agg_sink)', w || '_' || e);
            PERFORM eventlog.create_window_processor(w || '_' || e, 'pairs', (w || '_' || e)::regclass,
                size => CASE WHEN w <> 'session' THEN '10 seconds'::interval END,
                advance => CASE w WHEN 'hopping' THEN '5 seconds'::interval END,
                gap => CASE w WHEN 'session' THEN '3 seconds'::interval END,
                window_type => w, emit => e,
                late => CASE e WHEN 'final' THEN 'drop' ELSE 'update' END,
                retention => CASE e WHEN 'changes' THEN '2 hours' ELSE '0' END::interval,
                aggregates => ARRAY[$$corr((value->>'y')::float8, (value->>'x')::float8)$$,
                                    $$regr_slope((value->>'y')::float8, (value->>'x')::float8)$$,
                                    $$covar_samp( (value->>'y')::float8 ,(value->>'x')::float8 ) AS cov$$,
                                    $$public.wavg((value->>'y')::float8, (value->>'x')::float8)$$,
                                    $$regr_count((value->>'y')::float8, (value->>'x')::float8)$$],
                event_time => $$(value->>'ts')::timestamptz$$);
            RETURN NEXT w || '_' || e;
        END LOOP;
    END LOOP;
END
$f$;
SELECT * FROM make_processors();
-- agg_args keeps each aggregate's arguments as written.
SELECT agg_funcs[3], agg_args[3], agg_names FROM eventlog.processor_catalog WHERE name = 'tumbling_final';
CREATE FUNCTION run_all(n integer) RETURNS bigint LANGUAGE sql AS $$
    SELECT sum(eventlog.run_processor(name, n))::bigint FROM eventlog.processors $$;

-- a: NULL arguments (a NULL x at 2 s, a NULL y at 8 s); b; c: one record;
-- d: a window whose only other record has both arguments NULL.  In time
-- order, in steps of 1, 3 and then up to 1000 records.
SELECT pair('a', 1, 2, 0), pair('b', 10, 1, 0.5), pair('a', 3, 4, 1), pair('a', 2, NULL, 2),
       pair('a', 5, 7, 3), pair('b', 12, 3, 4), pair('a', 4, 3, 6), pair('a', NULL, 5, 8);
SELECT run_all(1), run_all(1), run_all(3);
SELECT pair('b', 9, 2, 11), pair('a', 6, 9, 12), pair('b', 11, 6, 12), pair('a', 8, 8, 13),
       pair('c', 7, 3, 25), pair('d', NULL, NULL, 30), pair('d', 1, 1, 31);
SELECT run_all(3), run_all(1000);
-- z an hour later closes every window before; then late records, which
-- the final processors drop and the others count in their kept windows
-- (c at 40 s makes windows closed at once).
SELECT pair('z', 1, 1, 3600);
SELECT run_all(2), run_all(1000);
SELECT max(offset_id) + 1 AS late_from FROM eventlog.read('pairs', 0, 0) \gset
SELECT pair('a', 2, 2, 1.5), pair('b', 10, 5, 11.5), pair('a', 7, NULL, 13.5), pair('c', 3, 4, 40);
SELECT run_all(1), run_all(1000);
SELECT name, records, late_records FROM eventlog.processor_progress('tumbling_final') p, (SELECT 'tumbling_final' AS name) n
UNION ALL
SELECT name, records, late_records FROM eventlog.processor_progress('session_changes') p, (SELECT 'session_changes' AS name) n;

-- The reference: the same aggregates by GROUP BY over the records, per
-- window type's windows; "phase" 1 are the records before the late ones.
-- Sliding windows end at each record and start 1 µs after each (once
-- each), those that hold records.
CREATE VIEW recs AS
    SELECT key AS k, (value->>'y')::float8 AS y, (value->>'x')::float8 AS x, (value->>'ts')::timestamptz AS ts,
           offset_id < :late_from AS phase1
      FROM eventlog.read('pairs', 0, 0);
CREATE FUNCTION ref(w text, late boolean)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, k text, c float8, slope float8, cov float8, wa float8, rc bigint)
LANGUAGE sql AS $$
    WITH r AS (SELECT * FROM recs WHERE phase1 OR late),
    win AS (
        SELECT date_bin('10 s', r.ts, '1970-01-01') AS ws, date_bin('10 s', r.ts, '1970-01-01') + interval '10 s' AS we, r.*
          FROM r WHERE w = 'tumbling'
        UNION ALL
        SELECT g.ws, g.ws + interval '10 s', r.*
          FROM r, generate_series(date_bin('5 s', r.ts, '1970-01-01') - interval '5 s', date_bin('5 s', r.ts, '1970-01-01'), '5 s') AS g(ws)
         WHERE w = 'hopping' AND g.ws + interval '10 s' > r.ts
        UNION ALL
        SELECT e.we - interval '10 s', e.we, r.*
          FROM (SELECT k, ts AS we FROM r UNION SELECT k, ts + interval '10.000001 s' FROM r) AS e
          JOIN r ON r.k = e.k AND r.ts BETWEEN e.we - interval '10 s' AND e.we
         WHERE w = 'sliding'
        UNION ALL
        SELECT min(s.ts) OVER i, max(s.ts) OVER i, s.k, s.y, s.x, s.ts, s.phase1
          FROM (SELECT q.*, count(*) FILTER (WHERE q.mx IS NULL OR q.ts > q.mx + interval '3 s') OVER (PARTITION BY q.k ORDER BY q.ts) AS isl
                  FROM (SELECT r.*, max(r.ts) OVER (PARTITION BY r.k ORDER BY r.ts ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mx
                          FROM r) AS q) AS s
         WHERE w = 'session'
        WINDOW i AS (PARTITION BY s.k, s.isl))
    SELECT ws, we, k, corr(y, x), regr_slope(y, x), covar_samp(y, x), wavg(y, x), regr_count(y, x)
      FROM win GROUP BY ws, we, k $$;
CREATE FUNCTION close_to(a float8, b float8) RETURNS boolean LANGUAGE sql IMMUTABLE
    AS $$SELECT (a IS NULL AND b IS NULL) OR abs(a - b) <= 1e-9 * greatest(1, abs(b))$$;
-- Each processor's sink against the reference: the final processors'
-- windows are those of the records before the late ones, without z's
-- (still open); the others' every window.
CREATE FUNCTION compare(w text, e text)
RETURNS TABLE (windows bigint, missing bigint, extra bigint, differ bigint)
LANGUAGE plpgsql AS $f$
BEGIN
    RETURN QUERY EXECUTE format($q$
        SELECT count(*), count(*) FILTER (WHERE s.k IS NULL), count(*) FILTER (WHERE r.k IS NULL),
               count(*) FILTER (WHERE NOT (close_to(s.c, r.c) AND close_to(s.slope, r.slope) AND close_to(s.cov, r.cov)
                                           AND close_to(s.wa, r.wa) AND s.rc = r.rc))
          FROM %I AS s FULL JOIN (SELECT * FROM ref(%L, %L) WHERE %L OR k <> 'z') AS r
            ON r.window_start = s.window_start AND r.window_end = s.window_end AND r.k = s.k$q$,
        w || '_' || e, w, e = 'changes', e = 'changes');
END
$f$;
SELECT p.name, x.* FROM eventlog.processors p, compare(p.window_type, p.emit) x ORDER BY p.name;
-- What the windows hold, as a sample: sessions with every record.
SELECT window_start::time AS ws, window_end::time AS we, k, round(c::numeric, 6) AS c, round(slope::numeric, 6) AS slope,
       round(cov::numeric, 6) AS cov, round(wa::numeric, 6) AS wa, rc
  FROM session_changes ORDER BY k, window_start;
-- n_<i> counts what the transition function takes: corr's (strict) the
-- records with both arguments, wavg's (not strict) every record.
CREATE FUNCTION n_check(name text) RETURNS TABLE (windows bigint, corr_n_ok bigint, wavg_n_ok bigint)
LANGUAGE plpgsql AS $f$
BEGIN
    RETURN QUERY EXECUTE format($q$
        SELECT count(*), count(*) FILTER (WHERE w.n_1 = r.rc), count(*) FILTER (WHERE w.n_4 = c.records)
          FROM eventlog.%I AS w
          JOIN (SELECT window_start, k, max(rc) AS rc FROM ref('hopping', true) GROUP BY 1, 2) AS r
            ON r.window_start = w.window_start AND r.k = w.group_key->>0
          JOIN (SELECT g.ws, recs.k, count(*) AS records FROM recs,
                       generate_series(date_bin('5 s', ts, '1970-01-01') - interval '5 s', date_bin('5 s', ts, '1970-01-01'), '5 s') AS g(ws)
                 WHERE g.ws + interval '10 s' > ts GROUP BY 1, 2) AS c
            ON c.ws = w.window_start AND c.k = w.group_key->>0$q$,
        (SELECT 'processor_' || p.processor_id || '_windows' FROM eventlog.processor_catalog p WHERE p.name = n_check.name));
END
$f$;
SELECT * FROM n_check('hopping_changes');
-- The sliding windows' record buffer keeps each argument in a column.
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
  FROM eventlog.processor_catalog p JOIN pg_attribute a
    ON a.attrelid = format('eventlog.processor_%s_records', p.processor_id)::regclass
 WHERE p.name = 'sliding_final' AND a.attnum > 0 ORDER BY a.attnum;
-- A replay in other steps computes the same windows again (up to the
-- rounding of states combined in another order).
CREATE TEMP TABLE before AS SELECT * FROM hopping_changes;
SELECT eventlog.reset_processor('hopping_changes');
SELECT eventlog.run_processor('hopping_changes', 4) > 0 AS ran, eventlog.run_processor('hopping_changes') >= 0 AS ran;
SELECT count(*) AS windows, count(*) FILTER (WHERE s.k IS NULL OR b.k IS NULL) AS unmatched,
       count(*) FILTER (WHERE NOT (close_to(s.c, b.c) AND close_to(s.slope, b.slope) AND close_to(s.cov, b.cov)
                                   AND close_to(s.wa, b.wa) AND s.rc = b.rc)) AS differ
  FROM hopping_changes AS s FULL JOIN before AS b
    ON b.window_start = s.window_start AND b.window_end = s.window_end AND b.k = s.k;
SELECT eventlog.drop_processor(name) FROM eventlog.processors ORDER BY name;

-- Splitting: at top-level commas only.
SELECT x, eventlog._processor_split_args(x) FROM (VALUES
    ('a, b'), (' f(a, b) ,  c[1, 2] '), ($$'x, ''y'', z', "a,""b"$$), ($q$E'\', x', $t$,$t$$q$),
    ($q$$$, $$ || a, b -- c, d$q$), ('a /* , /* , */ , */, b'), ('x$1, $1'),
    ('(a, b'), ('a)'), ($$'a, b$$), ('"a, b'), ('$x$ a, b'), ('/* a, b')) AS v(x);

-- Refused: bad splitting (22023), aggregates that do not exist for the
-- arguments' types (42883), internal states and no combine function
-- (0A000), functions put in the way (42725).
CREATE TABLE w2 (window_start timestamptz, window_end timestamptz, v float8);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$corr((value->>'y')::float8, , (value->>'x')::float8)$$]);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$corr((value->>'y')::float8, )$$]);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$corr(*, (value->>'x')::float8)$$]);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$corr('1, (value->>'x')::float8)$$]);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$corr(((value->>'y')::float8, (value->>'x')::float8)$$]);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$corr(key, key)$$]);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$count(key, value)$$]);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$corr((value->>'y')::float8, no_such_column)$$]);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$string_agg(key, ',')$$]);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$json_object_agg(key, value)$$]);
CREATE FUNCTION pick_step(float8, float8, float8) RETURNS float8 LANGUAGE sql AS 'SELECT coalesce($1, 0) + $2 * $3';
CREATE AGGREGATE no_comb(float8, float8) (SFUNC = pick_step, STYPE = float8);
SELECT eventlog.create_window_processor('w', 'pairs', 'w2', size => '10 s', group_by => '{}',
    aggregates => ARRAY[$$public.no_comb((value->>'y')::float8, (value->>'x')::float8)$$]);
-- A function put in the way of a two-argument aggregate's own.
CREATE SCHEMA aggs2;
CREATE FUNCTION aggs2.cat_step(text, text, text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT $1 || $2 || $3$$;
CREATE FUNCTION aggs2.cat_comb(text, text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT $1 || $2$$;
CREATE AGGREGATE aggs2.cat2(varchar, varchar) (SFUNC = aggs2.cat_step, STYPE = text, COMBINEFUNC = aggs2.cat_comb, INITCOND = '');
CREATE FUNCTION aggs2.cat_step(text, varchar, varchar) RETURNS text LANGUAGE sql AS $$SELECT 'hijacked'$$;
CREATE TABLE w3 (window_start timestamptz, window_end timestamptz, v text);
SELECT eventlog.create_window_processor('w', 'pairs', 'w3', size => '10 s', group_by => '{}',
    aggregates => ARRAY['aggs2.cat2(key::varchar, (value->>''y'')::varchar)']);
DROP FUNCTION aggs2.cat_step(text, varchar, varchar);
-- Without it, the aggregate runs; its arguments hold commas and quotes.
SELECT eventlog.create_window_processor('cat2', 'pairs', 'w3', size => '1 day', group_by => '{}',
    aggregates => ARRAY[$$aggs2.cat2(CASE key WHEN 'a' THEN 'a,' ELSE key END::varchar, $x$'$x$::varchar)$$],
    event_time => $$(value->>'ts')::timestamptz$$, emit => 'changes');
SELECT eventlog.run_processor('cat2');
SELECT window_start::date, length(v) = (SELECT sum(length(CASE key WHEN 'a' THEN 'a,' ELSE key END) + 1) FROM eventlog.read('pairs', 0, 0)) AS every_record,
       (SELECT count(*) FROM regexp_matches(v, 'a,''', 'g')) = (SELECT count(*) FROM eventlog.read('pairs', 0, 0) WHERE key = 'a') AS every_a
  FROM w3;
SELECT eventlog.drop_processor('cat2');
SELECT count(*) FROM pg_proc WHERE pronamespace = 'eventlog'::regnamespace AND proname ~ '^processor_[0-9]+_';
SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog'::regnamespace AND relname ~ '^processor_[0-9]+_';
