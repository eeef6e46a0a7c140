/* ------------------------------------------------------------------------
 * Maintenance: rolling segments and retention
 * ------------------------------------------------------------------------ */

CREATE FUNCTION @extschema@._partition_routing(
    topic text, partition integer,
    OUT active_segment integer, OUT active_base bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'el_partition_routing_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._partition_routing(text, integer) IS
'internal: the segment a partition''s new records go to, and the first offset routed there';

CREATE FUNCTION @extschema@._activate_segment_at_commit(topic_id integer, partition integer,
                                                        segment_no integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_activate_segment_at_commit_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._activate_segment_at_commit(integer, integer, integer) IS
'internal: when the transaction commits, route the partition''s new records to that (committed) segment';

CREATE FUNCTION @extschema@._segment_times(segment name,
                                           OUT oldest timestamptz, OUT newest timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'el_segment_times_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._segment_times(name) IS
'internal: the append times of a segment''s first and last records (NULL if it is empty), for maintenance rounds';

/*
 * One maintenance round for one topic, in the caller's transaction:
 *  1. record the base offset of each partition's active segment;
 *  2. remove the oldest sealed segments that retention (time or size)
 *     allows, never one with an offset in flight, never the active one, and
 *     skipping (till next round) any segment someone holds a lock on;
 *  3. roll active segments that reached segment_interval or segment_bytes
 *     (or whose records all expired): the next segment is created now and
 *     new records go there from this transaction's commit on.
 * Returns what it did.  Removal is DROP TABLE: no DELETE, no dead tuples.
 */
CREATE TYPE @extschema@.maintenance_action AS (
    action        text,
    topic         text,
    partition     integer,
    segment       text,
    first_offset  bigint,
    next_offset   bigint,
    bytes         bigint
);
COMMENT ON TYPE @extschema@.maintenance_action IS
'what a maintenance round did: a segment removed (offsets first_offset to next_offset - 1), rolled (new records go to segment from the round''s commit on), or skipped because someone held it';

/*
 * now() - age, the horizon of a time setting of a topic (retention,
 * segment_interval, the compaction lags), or -infinity (nothing is that
 * old) when that is before the range of timestamptz: the settings may be
 * as long as an interval can be ('100000 years' for "forever", as Kafka
 * users set Long.MAX_VALUE), which must not be an error that stops every
 * round of the topic.
 */
CREATE FUNCTION @extschema@._horizon(age interval)
RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pg_catalog.now() - age;
EXCEPTION WHEN datetime_field_overflow THEN
    RETURN '-infinity';
END
$$;
COMMENT ON FUNCTION @extschema@._horizon(interval) IS
'internal: now() - age, or -infinity when that is out of range (the horizon of a topic''s time setting)';

CREATE FUNCTION @extschema@._maintain_topic(topic_id integer)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r @extschema@.maintenance_action;
    t @extschema@.topic_catalog;
    p integer;
    rt record;
    seg record;
    nxt bigint;
    part_bytes bigint;
    seg_bytes bigint;
    newest timestamptz;
    oldest timestamptz;
    stable bigint;
    spare name;
    retention_horizon timestamptz;
    roll_horizon timestamptz;
    max_lag_horizon timestamptz;
    saved_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    -- The caller's lock_timeout if shorter (0 is none).
    drop_lock_timeout text := CASE
        WHEN pg_catalog.current_setting('lock_timeout')::interval > interval '0'
         AND pg_catalog.current_setting('lock_timeout')::interval < interval '50 ms'
        THEN pg_catalog.current_setting('lock_timeout') ELSE '50ms' END;
BEGIN
    SELECT * INTO t FROM @extschema@.topic_catalog c WHERE c.topic_id = _maintain_topic.topic_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- One round per topic at a time (the worker and enforce_retention may
    -- meet): a round that finds another in progress leaves it the work.
    IF NOT @extschema@._try_lock_maintenance(t.topic_id) THEN
        RETURN;
    END IF;
    r.topic := t.name;
    retention_horizon := @extschema@._horizon(t.retention);
    roll_horizon := @extschema@._horizon(t.segment_interval);
    max_lag_horizon := @extschema@._horizon(t.max_compaction_lag);
    FOR p IN 0 .. t.partitions - 1 LOOP
        r.partition := p;
        -- Ordered with counter recovery (el_recover_next_offset): from the
        -- routing read until the base offset is recorded and committed.
        PERFORM @extschema@._lock_routing(t.topic_id, p);
        SELECT * INTO rt FROM @extschema@._partition_routing(t.name, p);

        -- 1. The active segment's base offset, once known, is recorded.
        UPDATE @extschema@.segment_catalog s SET base_offset = rt.active_base
         WHERE s.topic_id = t.topic_id AND s.partition = p
           AND s.segment_no = rt.active_segment AND s.base_offset IS NULL;
        IF FOUND THEN
            UPDATE @extschema@.partition_catalog pc
               SET offset_floor = greatest(pc.offset_floor, rt.active_base)
             WHERE pc.topic_id = t.topic_id AND pc.partition = p;
        END IF;

        -- 2. Retention, oldest sealed segment first.  The partition's size
        --    only matters under retention_bytes.
        part_bytes := NULL;
        IF t.retention_bytes IS NOT NULL THEN
            SELECT coalesce(sum(pg_catalog.pg_total_relation_size(
                       pg_catalog.to_regclass(format('eventlog_segments.%I', s.table_name)))), 0)
              INTO part_bytes
              FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p;
        END IF;
        stable := @extschema@.last_stable_offset(t.name, p);
        FOR seg IN SELECT s.segment_no, s.base_offset, s.table_name
                     FROM @extschema@.segment_catalog s
                    WHERE s.topic_id = t.topic_id AND s.partition = p
                      AND s.segment_no < rt.active_segment
                    ORDER BY s.segment_no
        LOOP
            SELECT s.base_offset INTO nxt FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p AND s.segment_no > seg.segment_no
             ORDER BY s.segment_no LIMIT 1;
            -- Every offset of the segment must be stable: none in flight.
            EXIT WHEN nxt IS NULL OR nxt > stable;
            -- A topic that is only compacted keeps its segments (Kafka's
            -- cleanup.policy=compact): compaction thins them out instead.
            EXIT WHEN t.cleanup_policy = 'compact';
            SELECT st.newest INTO newest FROM @extschema@._segment_times(seg.table_name) st;
            EXIT WHEN NOT (
                (t.retention IS NOT NULL AND (newest IS NULL OR newest < retention_horizon))
                OR (t.retention_bytes IS NOT NULL AND part_bytes > t.retention_bytes));
            -- Never queue behind a reader or a writer: skip till next round.
            -- DROP ... CASCADE also drops, and so must lock, every object
            -- made to depend on the segment (a view, a column default or a
            -- constraint holding its regclass): whoever holds one of those
            -- is waited for at most drop_lock_timeout, never longer.
            BEGIN
                EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                               seg.table_name);
                seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
                PERFORM pg_catalog.set_config('lock_timeout', drop_lock_timeout, true);
                -- CASCADE: see _drop_topic.
                EXECUTE format('DROP TABLE eventlog_segments.%I CASCADE', seg.table_name);
                PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
            EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
                -- The sub-block's abort has restored lock_timeout.
                r.action := 'skipped (busy)';
                r.segment := seg.table_name;
                r.first_offset := seg.base_offset;
                r.next_offset := nxt;
                r.bytes := NULL;
                RETURN NEXT r;
                EXIT;
            END;
            DELETE FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p AND s.segment_no = seg.segment_no;
            UPDATE @extschema@.partition_catalog pc
               SET log_start_offset = greatest(pc.log_start_offset, nxt),
                   offset_floor = greatest(pc.offset_floor, nxt)
             WHERE pc.topic_id = t.topic_id AND pc.partition = p;
            part_bytes := part_bytes - seg_bytes;
            r.action := 'removed';
            r.segment := seg.table_name;
            r.first_offset := seg.base_offset;
            r.next_offset := nxt;
            r.bytes := seg_bytes;
            RETURN NEXT r;
        END LOOP;

        -- 3. Roll the active segment when due (never an empty one, and only
        --    once its base offset is recorded).
        SELECT s.table_name INTO seg FROM @extschema@.segment_catalog s
         WHERE s.topic_id = t.topic_id AND s.partition = p
           AND s.segment_no = rt.active_segment AND s.base_offset IS NOT NULL;
        CONTINUE WHEN NOT FOUND;
        SELECT st.oldest, st.newest INTO oldest, newest
          FROM @extschema@._segment_times(seg.table_name) st;
        CONTINUE WHEN oldest IS NULL;
        seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
        IF oldest < roll_horizon
           OR seg_bytes >= t.segment_bytes
           OR (t.retention IS NOT NULL AND t.cleanup_policy <> 'compact'
               AND newest < retention_horizon)
           -- The active segment is never compacted: max_compaction_lag
           -- bounds how long a record may stay there.
           OR (t.cleanup_policy <> 'delete' AND t.max_compaction_lag IS NOT NULL
               AND oldest < max_lag_horizon) THEN
            SELECT s.table_name INTO spare FROM @extschema@.segment_catalog s
             WHERE s.topic_id = t.topic_id AND s.partition = p
               AND s.segment_no = rt.active_segment + 1;
            IF NOT FOUND THEN
                spare := @extschema@._create_segment(t.topic_id, p, rt.active_segment + 1, NULL);
            END IF;
            PERFORM @extschema@._activate_segment_at_commit(t.topic_id, p, rt.active_segment + 1);
            r.action := 'rolled';
            r.segment := spare;
            r.first_offset := NULL;
            r.next_offset := NULL;
            r.bytes := seg_bytes;
            RETURN NEXT r;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._maintain_topic(integer) IS
'internal: one maintenance round for a topic (record active bases, remove expired segments, roll full ones)';

CREATE FUNCTION @extschema@._enforce_retention(topic text DEFAULT NULL)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer;
BEGIN
    PERFORM @extschema@._require_shmem();
    IF topic IS NOT NULL THEN
        PERFORM @extschema@._check_topic_name(topic);
        SELECT c.topic_id INTO tid FROM @extschema@.topic_catalog c WHERE c.name = _enforce_retention.topic;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'topic "%" does not exist', topic USING ERRCODE = 'undefined_object';
        END IF;
        PERFORM @extschema@._authorize(topic, 'owner');
        RETURN QUERY SELECT * FROM @extschema@._maintain_topic(tid);
        RETURN;
    END IF;
    -- Without a topic: every topic the caller owns (all, for a superuser).
    FOR tid IN SELECT c.topic_id FROM @extschema@.topic_catalog c
                WHERE @extschema@.has_topic_privilege(@extschema@._caller(), c.name, 'owner')
                ORDER BY c.topic_id LOOP
        RETURN QUERY SELECT * FROM @extschema@._maintain_topic(tid);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._enforce_retention(text) IS
'internal: the body of eventlog.enforce_retention, run as the extension owner on behalf of the caller eventlog.enforce_retention notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._enforce_retention(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.enforce_retention(topic text DEFAULT NULL)
RETURNS SETOF @extschema@.maintenance_action
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.enforce_retention(text) IS
'runs a maintenance round now (what the background worker does every eventlog.maintenance_interval) and returns what it did: segments removed by retention, and segments rolled (active from commit on; the segments they seal can be removed by the next round)';
