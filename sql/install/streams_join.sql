/* ------------------------------------------------------------------------
 * Windowed stream-stream joins (docs/streams.md#joins): a processor of
 * kind 'join' reads two topics, left (processor_catalog.source_topic) and
 * right (join_spec ->> 'right_topic'), through one consumer group
 * ("processor:<name>" on both topics), and joins the records whose join
 * keys are equal and whose event times are within [left time - before,
 * left time + after].  Its state, owned by the processor's owner:
 *
 *   processor_<id>_progress  a row per partition of each side (side
 *                            'left' or 'right'), and row ('left', -1)
 *                            holding closed_through, as for windows;
 *   processor_<id>_left      the left records whose join window is open,
 *   processor_<id>_right     and the right ones, each with a flag saying
 *                            whether it joined yet.
 *
 * The rules (the proofs that make the output independent of how records
 * are cut into steps are in docs/streams.md):
 *   - a record is late, dropped and counted, when its event time plus
 *     allowed_lateness is before the greater of its partition's watermark
 *     (as of the records before it) and closed_through;
 *   - a pair is written when its second record arrives;
 *   - a left record leaves the state when closed_through passes its time +
 *     after + allowed_lateness, a right record when it passes its time +
 *     before + allowed_lateness; then, unless it joined, a left join writes
 *     the left record with NULLs for the right, an outer join either side.
 * ------------------------------------------------------------------------ */

/*
 * Writing join rows to the sink from a CTE "out" (key, left value, right
 * value, left time, right time, left partition, left offset, right
 * partition, right offset): into a table, the rows not there yet (a replay
 * writes the same rows, which a row's source offsets identify); into a
 * topic, one record per row (the join's value as a JSON object, the later
 * of the two times as event time).  Returns the CTE "si" and the condition
 * that makes the final SELECT run it.
 */
CREATE FUNCTION @extschema@._join_sink_sql(p @extschema@.processor_catalog, topic_param text, OUT cte text, OUT final text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c name[];
BEGIN
    IF p.sink_table IS NOT NULL THEN
        SELECT array_agg(att.attname ORDER BY att.attnum) INTO c
          FROM pg_attribute att
         WHERE att.attrelid = p.sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        cte := format($f$si AS (INSERT INTO %1$s SELECT o.* FROM out AS o
        WHERE NOT EXISTS (SELECT FROM %1$s AS s
                           WHERE coalesce(s.%2$I, -1) = coalesce(o.lp, -1) AND coalesce(s.%3$I, -1) = coalesce(o.lo, -1)
                             AND coalesce(s.%4$I, -1) = coalesce(o.rp, -1) AND coalesce(s.%5$I, -1) = coalesce(o.ro, -1)))$f$,
                      p.sink_table, c[6], c[7], c[8], c[9]);
        final := '';
    ELSE
        cte := format($f$si AS MATERIALIZED (SELECT count(@extschema@.produce(%s, o.key,
            pg_catalog.jsonb_build_object('left', o.lv, 'right', o.rv, 'left_time', o.lt, 'right_time', o.rt,
                                          'left_partition', o.lp, 'left_offset', o.lo,
                                          'right_partition', o.rp, 'right_offset', o.ro),
            NULL, NULL, greatest(o.lt, o.rt))) AS n
          FROM (SELECT * FROM out ORDER BY lp, lo, rp, ro) AS o)$f$, topic_param);
        final := ' WHERE (SELECT si.n FROM si) >= 0';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._join_sink_sql(@extschema@.processor_catalog, text) IS
'internal: the CTE writing a join processor''s rows to its sink table or topic';

/*
 * A join key and an event time as a step evaluates them: the key as jsonb
 * (keys of two numeric types compare as numbers; JSON null is no key), both
 * inside CASE so that a set-returning expression is refused.
 */
CREATE FUNCTION @extschema@._join_key_sql(expr text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN format('CASE WHEN true THEN NULLIF(pg_catalog.to_jsonb((%s)), ''null''::jsonb) END', expr);
COMMENT ON FUNCTION @extschema@._join_key_sql(text) IS
'internal: a join key expression as a step evaluates it';

CREATE FUNCTION @extschema@._join_time_sql(expr text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN format('CASE WHEN true THEN (%s)::timestamptz END', expr);
COMMENT ON FUNCTION @extschema@._join_time_sql(text) IS
'internal: an event time expression as a join step evaluates it';

/*
 * The statement of one join step over two batches ("lbatch", "rbatch":
 * FROM items giving eventlog.record rows).  $1 left topic, $2 group, $3
 * max_records, $4 left partitions, $5 right topic, $6 right partitions,
 * $7 poll wait, $8 max_out_of_orderness, $9 allowed_lateness, $10 before,
 * $11 after, $12 sink topic.  The user's key and event time expressions are
 * pasted in parentheses: they are the owner's SQL and run as the owner.
 */
CREATE FUNCTION @extschema@._join_step_sql(p @extschema@.processor_catalog, lbatch text, rbatch text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j jsonb := p.join_spec;
    id text := coalesce(p.processor_id, 0)::text;
    progress text := format('@extschema@.%I', 'processor_' || id || '_progress');
    bufl text := format('@extschema@.%I', 'processor_' || id || '_left');
    bufr text := format('@extschema@.%I', 'processor_' || id || '_right');
    sink record := @extschema@._join_sink_sql(p, '$12');
    q @extschema@.processor_catalog := p;
    rng text;
BEGIN
    /*
     * Event times too near either end of timestamptz's range for the join's
     * intervals (before and after, as a window's size and gap) count as
     * records without an event time (_processor_time_range), or every
     * step would fail on them for ever.
     */
    q.size := (j ->> 'before')::interval;
    q.gap := (j ->> 'after')::interval;
    rng := (SELECT format('BETWEEN pg_catalog.to_timestamp(%s) AND pg_catalog.to_timestamp(%s)',
                          extract(epoch FROM r[1]), extract(epoch FROM r[2]))
              FROM (SELECT @extschema@._processor_time_range(q) AS r) AS x);
    /*
     * "e" evaluates each record's join key (as jsonb, so that keys of two
     * numeric types compare as numbers; JSON null is no key) and event
     * time once, and judges lateness by the partition's watermark before
     * the record, as a window processor does.  Pairs: new left records
     * with new and buffered right ones, buffered left ones with new right
     * ones (the buffers as of the statement's snapshot: what earlier steps
     * kept).
     */
    RETURN format($f$
WITH prev AS (SELECT side AS s_, partition AS p_, max_event_time AS m_ FROM %1$s WHERE partition >= 0),
ct AS (SELECT coalesce(max(closed_through), '-infinity') AS c_ FROM %1$s WHERE partition = -1),
raw AS (
    SELECT 'left'::text AS s_, record.partition AS p_, record.offset_id AS o_, record.value AS v_, t_.k_, t_.ts_
      FROM %2$s AS record
           CROSS JOIN LATERAL (SELECT y_.k_, CASE WHEN y_.x_ %12$s THEN y_.x_ END AS ts_
                                 FROM (SELECT %4$s AS k_, %5$s AS x_ OFFSET 0) AS y_ OFFSET 0) AS t_
    UNION ALL
    SELECT 'right'::text, record.partition, record.offset_id, record.value, t_.k_, t_.ts_
      FROM %3$s AS record
           CROSS JOIN LATERAL (SELECT y_.k_, CASE WHEN y_.x_ %12$s THEN y_.x_ END AS ts_
                                 FROM (SELECT %6$s AS k_, %7$s AS x_ OFFSET 0) AS y_ OFFSET 0) AS t_),
e AS MATERIALIZED (
    SELECT w_.*, (w_.ts_ + $9 < greatest(w_.wm_, ct.c_)) IS TRUE AS late_
      FROM (SELECT raw.*, coalesce(greatest(prev.m_, max(raw.ts_) OVER (PARTITION BY raw.s_, raw.p_ ORDER BY raw.o_
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
                                   '-infinity') - $8 AS wm_
              FROM raw LEFT JOIN prev ON prev.s_ = raw.s_ AND prev.p_ = raw.p_) AS w_
           CROSS JOIN ct),
nl AS (SELECT * FROM e WHERE e.s_ = 'left' AND e.ts_ IS NOT NULL AND NOT e.late_),
nr AS (SELECT * FROM e WHERE e.s_ = 'right' AND e.ts_ IS NOT NULL AND NOT e.late_),
pairs AS MATERIALIZED (
    SELECT l.k_, l.v_ AS lv, r.v_ AS rv, l.ts_ AS lt, r.ts_ AS rt, l.p_ AS lp, l.o_ AS lo, r.p_ AS rp, r.o_ AS ro,
           false AS lold, false AS rold
      FROM nl AS l JOIN nr AS r ON r.k_ = l.k_ AND r.ts_ BETWEEN l.ts_ - $10 AND l.ts_ + $11
    UNION ALL
    SELECT l.k_, l.v_, r.value, l.ts_, r.event_time, l.p_, l.o_, r.partition, r.offset_id, false, true
      FROM nl AS l JOIN %9$s AS r ON r.join_key = l.k_ AND r.event_time BETWEEN l.ts_ - $10 AND l.ts_ + $11
    UNION ALL
    SELECT l.join_key, l.value, r.v_, l.event_time, r.ts_, l.partition, l.offset_id, r.p_, r.o_, true, false
      FROM %8$s AS l JOIN nr AS r ON r.k_ = l.join_key AND r.ts_ BETWEEN l.event_time - $10 AND l.event_time + $11),
ml AS (UPDATE %8$s AS b SET matched = true FROM pairs
        WHERE pairs.lold AND b.partition = pairs.lp AND b.offset_id = pairs.lo AND NOT b.matched),
mr AS (UPDATE %9$s AS b SET matched = true FROM pairs
        WHERE pairs.rold AND b.partition = pairs.rp AND b.offset_id = pairs.ro AND NOT b.matched),
il AS (INSERT INTO %8$s (partition, offset_id, join_key, event_time, value, matched)
       SELECT nl.p_, nl.o_, nl.k_, nl.ts_, nl.v_,
              EXISTS (SELECT FROM pairs WHERE NOT pairs.lold AND pairs.lp = nl.p_ AND pairs.lo = nl.o_)
         FROM nl),
ir AS (INSERT INTO %9$s (partition, offset_id, join_key, event_time, value, matched)
       SELECT nr.p_, nr.o_, nr.k_, nr.ts_, nr.v_,
              EXISTS (SELECT FROM pairs WHERE NOT pairs.rold AND pairs.rp = nr.p_ AND pairs.ro = nr.o_)
         FROM nr),
out AS (SELECT pairs.k_ #>> '{}' AS key, pairs.lv, pairs.rv, pairs.lt, pairs.rt, pairs.lp, pairs.lo, pairs.rp, pairs.ro
          FROM pairs),
%10$s,
pu AS (INSERT INTO %1$s AS t (side, partition, max_event_time, last_record_at, records, late_records, null_time_records)
       SELECT e.s_, e.p_, max(e.ts_), pg_catalog.now(), count(*), count(*) FILTER (WHERE e.late_),
              count(*) FILTER (WHERE e.ts_ IS NULL)
         FROM e GROUP BY e.s_, e.p_
       ON CONFLICT (side, partition) DO UPDATE
          SET max_event_time = greatest(t.max_event_time, excluded.max_event_time),
              last_record_at = excluded.last_record_at,
              records = t.records + excluded.records,
              late_records = t.late_records + excluded.late_records,
              null_time_records = t.null_time_records + excluded.null_time_records)
SELECT count(*) FROM e%11$s$f$,
        progress, lbatch, rbatch,
        @extschema@._join_key_sql(j ->> 'left_key'), @extschema@._join_time_sql(j ->> 'left_event_time'),
        @extschema@._join_key_sql(j ->> 'right_key'), @extschema@._join_time_sql(j ->> 'right_event_time'),
        bufl, bufr, sink.cte, sink.final, rng);
END
$$;
COMMENT ON FUNCTION @extschema@._join_step_sql(@extschema@.processor_catalog, text, text) IS
'internal: the statement of one step of a join processor over a batch of each topic';

/*
 * The statement closing join windows up to a watermark ($1): removes the
 * records whose window it passed and writes the unmatched ones when the
 * join type wants them.  $2 after, $3 allowed_lateness, $4 before, $5 left
 * unmatched written, $6 right unmatched written, $7 the sink topic.
 */
CREATE FUNCTION @extschema@._join_close_sql(p @extschema@.processor_catalog)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    sink record := @extschema@._join_sink_sql(p, '$7');
BEGIN
    RETURN format($f$
WITH dl AS (DELETE FROM @extschema@.%1$I WHERE event_time + $2 + $3 < $1 RETURNING *),
dr AS (DELETE FROM @extschema@.%2$I WHERE event_time + $4 + $3 < $1 RETURNING *),
out AS (SELECT dl.join_key #>> '{}' AS key, dl.value AS lv, NULL::jsonb AS rv, dl.event_time AS lt,
               NULL::timestamptz AS rt, dl.partition AS lp, dl.offset_id AS lo, NULL::integer AS rp, NULL::bigint AS ro
          FROM dl WHERE $5 AND NOT dl.matched
        UNION ALL
        SELECT dr.join_key #>> '{}', NULL, dr.value, NULL, dr.event_time, NULL, NULL, dr.partition, dr.offset_id
          FROM dr WHERE $6 AND NOT dr.matched),
%3$s
SELECT count(*) FROM out%4$s$f$,
        'processor_' || p.processor_id || '_left', 'processor_' || p.processor_id || '_right',
        sink.cte, sink.final);
END
$$;
COMMENT ON FUNCTION @extschema@._join_close_sql(@extschema@.processor_catalog) IS
'internal: the statement removing the records whose join window a watermark closed, writing the unmatched ones of a left or outer join';

/*
 * One step of a join processor, called by run_processor as the
 * processor's owner, holding its lock: the batches, the watermark over the
 * partitions of both topics (as run_processor computes it for one), and
 * the windows it closed.
 */
CREATE FUNCTION @extschema@._join_step(p @extschema@.processor_catalog, max_records integer, waited interval)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j jsonb := p.join_spec;
    progress text := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    ln integer;
    rtid integer;
    rn integer;
    consumed bigint;
    wm timestamptz;
    ct timestamptz;
BEGIN
    SELECT c.partitions INTO ln FROM @extschema@.topic_catalog c WHERE c.topic_id = p.source_topic_id;
    SELECT c.topic_id, c.partitions INTO rtid, rn FROM @extschema@.topic_catalog c WHERE c.name = j ->> 'right_topic';
    IF rtid IS DISTINCT FROM (j ->> 'right_topic_id')::integer THEN
        RAISE EXCEPTION 'source topic "%" of processor "%" was dropped', j ->> 'right_topic', p.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Drop the processor with eventlog.drop_processor.';
    END IF;
    EXECUTE @extschema@._join_step_sql(p, '@extschema@.poll($1, $2, $3, partitions => $4, wait => $7)',
                                       '@extschema@.poll($5, $2, $3, partitions => $6, wait => $7)')
       INTO consumed
      USING p.source_topic, p.group_name, max_records, ln, j ->> 'right_topic', rn, waited,
            p.max_out_of_orderness, p.allowed_lateness, (j ->> 'before')::interval, (j ->> 'after')::interval,
            p.sink_topic;

    -- The watermark: the least over the active partitions of both topics.
    EXECUTE format($q$
        SELECT CASE WHEN bool_or(active) THEN min(coalesce(m, '-infinity')) FILTER (WHERE active)
                    ELSE max(m) END - $1
          FROM (SELECT t.max_event_time AS m,
                       NOT (coalesce(t.last_record_at, '-infinity') < now() - $2
                            AND coalesce(o.next_offset, 0) >= @extschema@.last_stable_offset(g.topic, g.p)) AS active
                  FROM (SELECT 'left' AS side, $3 AS topic, $4 AS tid, x AS p FROM generate_series(0, $5 - 1) x
                        UNION ALL
                        SELECT 'right', $6, $7, x FROM generate_series(0, $8 - 1) x) AS g
                  LEFT JOIN %s t ON t.side = g.side AND t.partition = g.p
                  LEFT JOIN @extschema@.group_offsets o
                         ON o.topic_id = g.tid AND o.group_name = $9 AND o.partition = g.p) s$q$, progress)
       INTO wm
      USING p.max_out_of_orderness, p.idle_timeout, p.source_topic, p.source_topic_id, ln,
            j ->> 'right_topic', rtid, rn, p.group_name;
    EXECUTE format('SELECT closed_through FROM %s WHERE partition = -1', progress) INTO ct;
    IF wm IS NOT NULL AND wm > '-infinity' AND (ct IS NULL OR wm > ct) THEN
        EXECUTE @extschema@._join_close_sql(p)
          USING wm, (j ->> 'after')::interval, p.allowed_lateness, (j ->> 'before')::interval,
                j ->> 'join_type' IN ('left', 'outer'), j ->> 'join_type' = 'outer', p.sink_topic;
        EXECUTE format('UPDATE %s SET closed_through = $1 WHERE partition = -1', progress) USING wm;
    END IF;
    RETURN consumed;
END
$$;
COMMENT ON FUNCTION @extschema@._join_step(@extschema@.processor_catalog, integer, interval) IS
'internal: one step of a join processor, run by eventlog.run_processor as the processor''s owner';

/*
 * The catalog side of create_join_processor, run as the extension owner
 * (through el_gate) for the caller, who becomes the owner: checks
 * the caller's privileges on both topics, records the processor, creates
 * its group on both topics and its state tables (owned by the caller).
 */
CREATE FUNCTION @extschema@.__register_join_processor(spec jsonb)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    caller regrole := @extschema@._caller();
    rtid integer;
    t text;
BEGIN
    IF spec IS NULL THEN
        RAISE EXCEPTION 'processor specification must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    p := jsonb_populate_record(NULL::@extschema@.processor_catalog, spec);
    p.kind := 'join';
    IF p.name IS NULL OR p.name !~ '^[A-Za-z0-9._-]{1,100}$' THEN
        RAISE EXCEPTION 'invalid processor name "%"', left(p.name, 110)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A processor name is 1 to 100 letters, digits, ".", "_" or "-".';
    END IF;
    IF EXISTS (SELECT FROM @extschema@.processor_catalog c WHERE c.name = p.name) THEN
        RAISE EXCEPTION 'processor "%" already exists', p.name USING ERRCODE = 'duplicate_object';
    END IF;
    IF p.join_spec IS NULL OR p.join_spec ->> 'right_topic' IS NULL
       OR p.join_spec ->> 'right_topic' = p.source_topic THEN
        RAISE EXCEPTION 'a join processor reads two different topics' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    p.source_topic_id := @extschema@._authorize(p.source_topic, 'consume');
    rtid := @extschema@._authorize(p.join_spec ->> 'right_topic', 'consume');
    IF p.sink_topic IS NOT NULL THEN
        PERFORM @extschema@._authorize(p.sink_topic, 'produce');
    END IF;
    IF EXISTS (SELECT FROM @extschema@.topic_catalog c
                WHERE c.topic_id IN (p.source_topic_id, rtid) AND c.format <> 'json') THEN
        RAISE EXCEPTION 'a join processor reads JSON topics' USING ERRCODE = 'wrong_object_type';
    END IF;
    p.join_spec := p.join_spec || jsonb_build_object('right_topic_id', rtid);
    p.owner := caller;
    p.group_name := 'processor:' || p.name;
    p.created_at := now();
    p.processor_id := nextval(pg_get_serial_sequence('@extschema@.processor_catalog', 'processor_id'));
    INSERT INTO @extschema@.processor_catalog SELECT p.*;
    PERFORM @extschema@._create_group(p.source_topic, p.group_name, coalesce(spec ->> 'start_from', 'earliest'));
    PERFORM @extschema@._create_group(p.join_spec ->> 'right_topic', p.group_name, coalesce(spec ->> 'start_from', 'earliest'));

    -- State, the owner's: steps run as the owner and write it directly.
    t := format('@extschema@.%I', 'processor_' || p.processor_id || '_progress');
    EXECUTE format('CREATE TABLE %s (side text NOT NULL, partition integer NOT NULL, max_event_time timestamptz, '
                   'last_record_at timestamptz, records bigint NOT NULL DEFAULT 0, '
                   'late_records bigint NOT NULL DEFAULT 0, null_time_records bigint NOT NULL DEFAULT 0, '
                   'closed_through timestamptz, PRIMARY KEY (side, partition))', t);
    EXECUTE format('INSERT INTO %s (side, partition, last_record_at) '
                   'SELECT ''left'', g, now() FROM generate_series(-1, %s) g '
                   'UNION ALL SELECT ''right'', g, now() FROM generate_series(0, %s) g', t,
                   (SELECT c.partitions - 1 FROM @extschema@.topic_catalog c WHERE c.topic_id = p.source_topic_id),
                   (SELECT c.partitions - 1 FROM @extschema@.topic_catalog c WHERE c.topic_id = rtid));
    EXECUTE format('COMMENT ON TABLE %s IS %L', t,
                   format('pg_eventlog join processor %s: per partition of each side, the largest event time seen and counters; partition -1: the watermark join windows were closed up to', p.name));
    EXECUTE format('ALTER TABLE %s OWNER TO %s', t, caller);
    EXECUTE format('GRANT SELECT ON %s TO PUBLIC', t);
    FOREACH t IN ARRAY ARRAY['left', 'right'] LOOP
        EXECUTE format('CREATE TABLE @extschema@.%I (partition integer NOT NULL, offset_id bigint NOT NULL, '
                       'join_key jsonb, event_time timestamptz NOT NULL, value jsonb, '
                       'matched boolean NOT NULL DEFAULT false, PRIMARY KEY (partition, offset_id))',
                       'processor_' || p.processor_id || '_' || t);
        EXECUTE format('CREATE INDEX ON @extschema@.%I (join_key, event_time)', 'processor_' || p.processor_id || '_' || t);
        EXECUTE format('COMMENT ON TABLE @extschema@.%I IS %L', 'processor_' || p.processor_id || '_' || t,
                       format('pg_eventlog join processor %s: the %s records whose join window is open', p.name, t));
        EXECUTE format('ALTER TABLE @extschema@.%I OWNER TO %s', 'processor_' || p.processor_id || '_' || t, caller);
    END LOOP;
    RETURN p.processor_id;
END
$$;
COMMENT ON FUNCTION @extschema@.__register_join_processor(jsonb) IS
'internal: the body of eventlog._register_join_processor, run as the extension owner on behalf of the caller eventlog._register_join_processor notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@.__register_join_processor(jsonb) FROM PUBLIC;

CREATE FUNCTION @extschema@._register_join_processor(spec jsonb)
RETURNS integer
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._register_join_processor(jsonb) IS
'internal: records a join processor the caller''s create_join_processor checked; the caller becomes its owner';

/* Checks the arguments and expressions as the caller, and registers. */
CREATE FUNCTION @extschema@.create_join_processor(name text, left_topic text, right_topic text,
                                                  sink_table regclass DEFAULT NULL,
                                                  sink_topic text DEFAULT NULL,
                                                  within interval DEFAULT NULL,
                                                  before interval DEFAULT NULL,
                                                  after interval DEFAULT NULL,
                                                  join_type text DEFAULT 'inner',
                                                  left_key text DEFAULT 'key',
                                                  right_key text DEFAULT 'key',
                                                  left_event_time text DEFAULT 'event_time',
                                                  right_event_time text DEFAULT 'event_time',
                                                  allowed_lateness interval DEFAULT '0',
                                                  max_out_of_orderness interval DEFAULT '0',
                                                  idle_timeout interval DEFAULT '1 minute',
                                                  start_from text DEFAULT 'earliest')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p @extschema@.processor_catalog;
    q @extschema@.processor_catalog;
    ncols integer;
BEGIN
    IF name IS NULL OR left_topic IS NULL OR right_topic IS NULL OR join_type IS NULL
       OR left_key IS NULL OR right_key IS NULL OR left_event_time IS NULL OR right_event_time IS NULL
       OR allowed_lateness IS NULL OR max_out_of_orderness IS NULL OR idle_timeout IS NULL THEN
        RAISE EXCEPTION 'the arguments of a join processor must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'Only one of sink_table and sink_topic, and within or before and after, may be null.';
    END IF;
    IF (sink_table IS NULL) = (sink_topic IS NULL) THEN
        RAISE EXCEPTION 'a processor writes to one sink table or one sink topic'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass sink_table or sink_topic.';
    END IF;
    IF join_type NOT IN ('inner', 'left', 'outer') THEN
        RAISE EXCEPTION 'join_type must be ''inner'', ''left'' or ''outer''' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    before := coalesce(before, within);
    after := coalesce(after, within);
    IF before IS NULL OR after IS NULL THEN
        RAISE EXCEPTION 'a join processor needs within, or before and after' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'within => ''5 minutes'' joins the records at most 5 minutes apart.';
    END IF;
    IF before < '0' OR after < '0'
       OR date_part('month', before) <> 0 OR date_part('year', before) <> 0
       OR date_part('month', after) <> 0 OR date_part('year', after) <> 0 THEN
        RAISE EXCEPTION 'invalid join window: before % and after %', before, after
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Before and after are intervals at least zero, without months or years.';
    END IF;
    IF allowed_lateness < '0' OR max_out_of_orderness < '0' OR idle_timeout < '0' THEN
        RAISE EXCEPTION 'allowed_lateness, max_out_of_orderness and idle_timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF left_topic = right_topic THEN
        RAISE EXCEPTION 'a join processor reads two different topics' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'To join a topic with itself, copy it to a second topic with eventlog.create_processor.';
    END IF;
    p.name := name;
    p.kind := 'join';
    p.source_topic := left_topic;
    p.sink_table := sink_table;
    p.sink_topic := sink_topic;
    -- days as 24 hours, as the windows' (_processor_hours)
    p.allowed_lateness := @extschema@._processor_hours(allowed_lateness);
    p.max_out_of_orderness := @extschema@._processor_hours(max_out_of_orderness);
    p.idle_timeout := idle_timeout;
    p.join_spec := jsonb_build_object('right_topic', right_topic, 'join_type', join_type,
                                      'before', @extschema@._processor_hours(before),
                                      'after', @extschema@._processor_hours(after),
                                      'left_key', left_key, 'right_key', right_key,
                                      'left_event_time', left_event_time, 'right_event_time', right_event_time);
    -- intervals that reach too far (22023): before and after count as a
    -- window's size and gap (_join_step_sql)
    q := p;
    q.size := (p.join_spec ->> 'before')::interval;
    q.gap := (p.join_spec ->> 'after')::interval;
    PERFORM @extschema@._processor_time_range(q);
    IF sink_table IS NOT NULL THEN
        SELECT count(*) INTO ncols FROM pg_attribute att
         WHERE att.attrelid = sink_table AND att.attnum > 0 AND NOT att.attisdropped;
        IF ncols <> 9 THEN
            RAISE EXCEPTION 'sink table % has % columns, the processor writes 9', sink_table, ncols
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'The sink''s columns are, in order: key, left value, right value, left time, right time, left partition, left offset, right partition, right offset.';
        END IF;
        IF NOT has_table_privilege(sink_table, 'SELECT, INSERT') THEN
            RAISE EXCEPTION 'permission denied for table %', sink_table USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A join processor selects from and inserts into its sink table.';
        END IF;
    END IF;
    -- The expressions, and the sink's statement, over no records, as the
    -- caller: a syntax error, an unknown column, a set-returning expression
    -- or a sink column of the wrong type shows now.
    EXECUTE format('SELECT %s, %s, %s, %s FROM (SELECT (NULL::@extschema@.record).* WHERE false) AS record',
                   @extschema@._join_key_sql(left_key), @extschema@._join_time_sql(left_event_time),
                   @extschema@._join_key_sql(right_key), @extschema@._join_time_sql(right_event_time));
    EXECUTE format('WITH out AS (SELECT NULL::text AS key, NULL::jsonb AS lv, NULL::jsonb AS rv, NULL::timestamptz AS lt, '
                   'NULL::timestamptz AS rt, NULL::integer AS lp, NULL::bigint AS lo, NULL::integer AS rp, '
                   'NULL::bigint AS ro WHERE false), %s SELECT count(*) FROM out %s',
                   (@extschema@._join_sink_sql(p, '$1')).cte, (@extschema@._join_sink_sql(p, '$1')).final)
      USING sink_topic;
    PERFORM @extschema@._register_join_processor(to_jsonb(p) || jsonb_build_object('start_from', start_from, 'sink_table', sink_table::oid));
END
$$;
COMMENT ON FUNCTION @extschema@.create_join_processor(text, text, text, regclass, text, interval, interval, interval, text, text, text, text, text, interval, interval, interval, text) IS
'creates a windowed stream-stream join: the records of left_topic and right_topic with equal join keys (left_key, right_key) whose event times are within [left time - before, left time + after] (within: both) become rows of sink_table or records of sink_topic; join_type inner, left or outer (unmatched records written with NULLs when their window closes)';
