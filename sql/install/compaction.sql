/* ------------------------------------------------------------------------
 * Log compaction (cleanup_policy 'compact' or 'compact,delete'): the
 * latest record of each key stays, older ones and expired tombstones go.
 *
 * Sealed segments are rewritten into new tables holding their surviving
 * records (src/compact.c), which then take the old tables' names in one
 * transaction: no row is ever DELETEd, no dead tuple left behind, offsets
 * never change (readers skip the gaps, as they skip rolled-back offsets).
 * The swap takes the old table with LOCK ... NOWAIT, as retention does: a
 * segment someone reads is skipped till the next round.
 * ------------------------------------------------------------------------ */

/*
 * Per partition: how far compaction got, and what it did.  Not a catalog
 * table of the topic cache (no invalidation trigger): backends need none
 * of it.
 */
CREATE TABLE @extschema@.compaction_catalog (
    topic_id          integer NOT NULL,
    partition         integer NOT NULL,
    -- Every sealed segment below this offset has been compacted since it
    -- was sealed (the "clean" part; the rest of the sealed log is "dirty").
    cleaned_offset    bigint NOT NULL DEFAULT 0,
    dirty_ratio       double precision,
    last_compaction   timestamptz,
    rounds            bigint NOT NULL DEFAULT 0,
    records_removed   bigint NOT NULL DEFAULT 0,
    bytes_reclaimed   bigint NOT NULL DEFAULT 0,
    -- When the oldest tombstone kept expires (delete_retention after it was
    -- appended): a round is due then, however little is dirty.
    next_tombstone_expiry timestamptz,
    PRIMARY KEY (topic_id, partition),
    FOREIGN KEY (topic_id, partition)
        REFERENCES @extschema@.partition_catalog ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.compaction_catalog IS
'pg_eventlog log compaction: per partition of a compacted topic, how far compaction got and what it removed (see the eventlog.compaction view)';
GRANT SELECT ON @extschema@.compaction_catalog TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.compaction_catalog', '');

CREATE FUNCTION @extschema@._compact_segments(
    topic_id integer, partition integer, segments name[],
    first_offsets bigint[], next_offsets bigint[], dirty_from bigint,
    horizon timestamptz,
    OUT segment name, OUT new_table name, OUT records_before bigint,
    OUT records_after bigint, OUT oldest_tombstone timestamptz,
    OUT cleaned_to bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'el_compact_segments'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._compact_segments(integer, integer, name[], bigint[], bigint[], bigint, timestamptz) IS
'internal: one compaction pass over a partition''s cleanable segments (its key map bounded by eventlog.compaction_memory): writes the surviving records of each segment that loses some into a new table (segment name + ''_c''), frozen, and says where the pass stopped';

/*
 * What a segment's records take: its heap, TOAST and index, not its
 * visibility map and free space map (a compacted segment's rows are
 * inserted frozen, so it has a visibility map the old one may lack: a
 * rewrite that removes little would seem to grow).
 */
CREATE FUNCTION @extschema@._segment_data_bytes(segment name)
RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.pg_table_size(r) + pg_catalog.pg_indexes_size(r)
           - pg_catalog.pg_relation_size(r, 'vm') - pg_catalog.pg_relation_size(r, 'fsm')
      FROM (SELECT pg_catalog.format('eventlog_segments.%I', segment)::regclass AS r) x
$$;
COMMENT ON FUNCTION @extschema@._segment_data_bytes(name) IS
'internal: the bytes of a segment''s heap, TOAST and index (without its visibility and free space maps)';

/*
 * Kafka's min.cleanable.dirty.ratio, fixed at its default: a partition is
 * compacted when at least half of its sealed log (in bytes) is dirty, when
 * a dirty record is older than max_compaction_lag, or when a tombstone
 * kept expires.
 */
CREATE FUNCTION @extschema@._compact_partition(t @extschema@.topic_catalog, p integer,
                                              force boolean)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r @extschema@.maintenance_action;
    cc @extschema@.compaction_catalog;
    rt record;
    seg record;
    c record;
    stable bigint;
    newest timestamptz;
    oldest timestamptz;
    oldest_dirty timestamptz;
    segs name[] := '{}';
    bases bigint[] := '{}';
    nexts bigint[] := '{}';
    range_end bigint;
    seg_bytes bigint;
    dirty_bytes bigint := 0;
    total_bytes bigint := 0;
    ratio double precision;
    i integer;
    busy boolean := false;
    before_bytes bigint;
    after_bytes bigint;
    removed bigint := 0;
    reclaimed bigint := 0;
    tomb timestamptz;
    cleaned_to bigint;
    lag_horizon timestamptz;
    max_lag_horizon timestamptz;
    delete_horizon timestamptz;
    saved_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    drop_lock_timeout text := CASE
        WHEN pg_catalog.current_setting('lock_timeout')::interval > interval '0'
         AND pg_catalog.current_setting('lock_timeout')::interval < interval '50 ms'
        THEN pg_catalog.current_setting('lock_timeout') ELSE '50ms' END;
BEGIN
    r.topic := t.name;
    r.partition := p;
    INSERT INTO @extschema@.compaction_catalog (topic_id, partition)
    VALUES (t.topic_id, p) ON CONFLICT DO NOTHING;
    SELECT * INTO cc FROM @extschema@.compaction_catalog x
     WHERE x.topic_id = t.topic_id AND x.partition = p;
    SELECT * INTO rt FROM @extschema@._partition_routing(t.name, p);
    stable := @extschema@.last_stable_offset(t.name, p);
    lag_horizon := @extschema@._horizon(t.min_compaction_lag);
    max_lag_horizon := @extschema@._horizon(t.max_compaction_lag);
    delete_horizon := @extschema@._horizon(t.delete_retention);

    -- The cleanable segments: sealed, oldest first, up to the first one
    -- with an offset in flight or a record younger than min_compaction_lag.
    -- The active segment never is.
    FOR seg IN SELECT s.segment_no, s.base_offset, s.table_name,
                      lead(s.base_offset) OVER (ORDER BY s.segment_no) AS nxt
                 FROM @extschema@.segment_catalog s
                WHERE s.topic_id = t.topic_id AND s.partition = p
                ORDER BY s.segment_no
    LOOP
        EXIT WHEN seg.segment_no >= rt.active_segment OR seg.base_offset IS NULL
               OR seg.nxt IS NULL OR seg.nxt > stable;
        SELECT st.oldest, st.newest INTO oldest, newest
          FROM @extschema@._segment_times(seg.table_name) st;
        EXIT WHEN newest IS NOT NULL AND newest > lag_horizon;
        seg_bytes := pg_catalog.pg_total_relation_size(
            format('eventlog_segments.%I', seg.table_name)::regclass);
        total_bytes := total_bytes + seg_bytes;
        -- A pass that found its key map full stops inside a segment: the
        -- segment is dirty.
        IF seg.nxt > cc.cleaned_offset THEN
            dirty_bytes := dirty_bytes + seg_bytes;
            oldest_dirty := coalesce(oldest_dirty, oldest);
        END IF;
        segs := segs || seg.table_name;
        bases := bases || seg.base_offset;
        nexts := nexts || seg.nxt;
        range_end := seg.nxt;
    END LOOP;
    ratio := CASE WHEN total_bytes > 0 THEN dirty_bytes::double precision / total_bytes END;
    UPDATE @extschema@.compaction_catalog x SET dirty_ratio = ratio
     WHERE x.topic_id = t.topic_id AND x.partition = p
       AND x.dirty_ratio IS DISTINCT FROM ratio;
    IF range_end IS NULL THEN
        RETURN;
    END IF;
    -- Due only when a condition holds: with no tombstone kept,
    -- next_tombstone_expiry is NULL, and NOT (false OR NULL) is NULL, which
    -- IF takes as false (the round ran, reading every sealed segment, each
    -- time the worker came by).
    IF NOT coalesce(force
            OR (range_end > cc.cleaned_offset AND ratio >= 0.5)
            OR (t.max_compaction_lag IS NOT NULL AND oldest_dirty IS NOT NULL
                AND oldest_dirty < max_lag_horizon)
            OR cc.next_tombstone_expiry <= pg_catalog.now(), false) THEN
        RETURN;
    END IF;

    -- A segment someone holds (a reader's open transaction) could not be
    -- swapped: the range ends before it, rather than rewriting what would
    -- be thrown away.  The probe's lock goes with its sub-block.  Only when
    -- the round is due: each probe of an ACCESS EXCLUSIVE lock takes an xid
    -- and writes WAL (for standbys), and the worker checks every compacted
    -- partition each round.
    FOR i IN 1 .. pg_catalog.array_length(segs, 1) LOOP
        BEGIN
            EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                           segs[i]);
            RAISE EXCEPTION USING ERRCODE = 'EL017';
        EXCEPTION
            WHEN lock_not_available THEN
                r.action := 'skipped (busy)';
                r.segment := segs[i];
                r.first_offset := bases[i];
                r.next_offset := nexts[i];
                r.bytes := NULL;
                RETURN NEXT r;
                segs := segs[1:i - 1];
                bases := bases[1:i - 1];
                nexts := nexts[1:i - 1];
                range_end := nexts[i - 1];
                EXIT;
            WHEN SQLSTATE 'EL017' THEN
                NULL;
        END;
    END LOOP;
    IF range_end IS NULL THEN
        RETURN;
    END IF;

    -- Swap oldest first, and stop at the first segment someone holds: a
    -- later segment may drop an expired tombstone only if every record it
    -- deleted, in earlier segments, is gone too.
    i := 0;
    FOR c IN SELECT * FROM @extschema@._compact_segments(t.topic_id, p, segs, bases, nexts,
                                                         cc.cleaned_offset, delete_horizon)
    LOOP
        i := i + 1;
        cleaned_to := c.cleaned_to;
        IF c.oldest_tombstone IS NOT NULL THEN
            tomb := least(tomb, c.oldest_tombstone);
        END IF;
        CONTINUE WHEN c.new_table IS NULL;
        IF busy THEN
            EXECUTE format('DROP TABLE eventlog_segments.%I', c.new_table);
            CONTINUE;
        END IF;
        -- The new table becomes a segment as _create_segment makes one.
        EXECUTE format('ALTER TABLE eventlog_segments.%I ADD CONSTRAINT %I PRIMARY KEY (offset_id)',
                       c.new_table, c.new_table || '_pkey');
        EXECUTE format(
            'CREATE TRIGGER segment_guard BEFORE INSERT OR UPDATE OR DELETE'
            ' ON eventlog_segments.%I FOR EACH ROW'
            ' EXECUTE FUNCTION @extschema@._segment_guard()', c.new_table);
        EXECUTE format(
            'CREATE TRIGGER segment_guard_truncate BEFORE TRUNCATE'
            ' ON eventlog_segments.%I FOR EACH STATEMENT'
            ' EXECUTE FUNCTION @extschema@._segment_guard()', c.new_table);
        EXECUTE format(
            'ALTER TABLE eventlog_segments.%I ENABLE ALWAYS TRIGGER segment_guard,'
            ' ENABLE ALWAYS TRIGGER segment_guard_truncate', c.new_table);
        EXECUTE format('COMMENT ON TABLE eventlog_segments.%I IS %L', c.new_table,
            pg_catalog.obj_description(format('eventlog_segments.%I', c.segment)::regclass, 'pg_class'));
        BEGIN
            -- Never queue behind a reader: skip till next round (as
            -- retention does, and DROP ... CASCADE bounded the same way).
            EXECUTE format('LOCK TABLE eventlog_segments.%I IN ACCESS EXCLUSIVE MODE NOWAIT',
                           c.segment);
            before_bytes := @extschema@._segment_data_bytes(c.segment);
            PERFORM pg_catalog.set_config('lock_timeout', drop_lock_timeout, true);
            EXECUTE format('DROP TABLE eventlog_segments.%I CASCADE', c.segment);
            PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            busy := true;
            EXECUTE format('DROP TABLE eventlog_segments.%I', c.new_table);
            r.action := 'skipped (busy)';
            r.segment := c.segment;
            r.first_offset := bases[i];
            r.next_offset := nexts[i];
            r.bytes := NULL;
            RETURN NEXT r;
            CONTINUE;
        END;
        EXECUTE format('ALTER TABLE eventlog_segments.%I RENAME TO %I', c.new_table, c.segment);
        EXECUTE format('ALTER INDEX eventlog_segments.%I RENAME TO %I',
                       c.new_table || '_pkey', c.segment || '_pkey');
        -- Tell every session's topic cache (the segment's OID changed).
        UPDATE @extschema@.segment_catalog s SET table_name = s.table_name
         WHERE s.topic_id = t.topic_id AND s.partition = p AND s.table_name = c.segment;
        after_bytes := @extschema@._segment_data_bytes(c.segment);
        removed := removed + c.records_before - c.records_after;
        -- Never negative: a rewrite that frees too little to empty a page
        -- reclaims nothing.
        reclaimed := reclaimed + greatest(before_bytes - after_bytes, 0);
        r.action := 'compacted';
        r.segment := c.segment;
        r.first_offset := bases[i];
        r.next_offset := nexts[i];
        r.bytes := greatest(before_bytes - after_bytes, 0);
        RETURN NEXT r;
    END LOOP;

    IF cleaned_to = cc.cleaned_offset THEN
        RAISE WARNING 'compaction of partition % of topic "%" made no progress', p, t.name
            USING DETAIL = 'The key map of eventlog.compaction_memory was full before it held the first dirty record''s key.',
                  HINT = 'Raise eventlog.compaction_memory.';
    END IF;
    BEGIN
        tomb := tomb + t.delete_retention;
    EXCEPTION WHEN datetime_field_overflow THEN
        tomb := 'infinity';
    END;
    UPDATE @extschema@.compaction_catalog x
       -- A pass whose key map was full stopped at cleaned_to: the rest
       -- is for the next rounds (the dirty ratio stays as measured).
       -- (never back: what was clean stays so, should min_compaction_lag
       -- have grown).
       SET cleaned_offset = CASE WHEN busy THEN x.cleaned_offset
                                 ELSE greatest(x.cleaned_offset, coalesce(cleaned_to, range_end)) END,
           dirty_ratio = CASE WHEN busy OR cleaned_to IS NOT NULL THEN x.dirty_ratio
                              ELSE 0 END,
           last_compaction = pg_catalog.now(),
           rounds = x.rounds + 1,
           records_removed = x.records_removed + removed,
           bytes_reclaimed = x.bytes_reclaimed + reclaimed,
           -- After a skipped segment, retry next round.
           next_tombstone_expiry = CASE WHEN busy THEN pg_catalog.now()
                                        ELSE tomb END
     WHERE x.topic_id = t.topic_id AND x.partition = p;
END
$$;
COMMENT ON FUNCTION @extschema@._compact_partition(@extschema@.topic_catalog, integer, boolean) IS
'internal: one compaction round of a partition (without force, only when due)';

CREATE FUNCTION @extschema@._compact_topic(topic_id integer, force boolean)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t @extschema@.topic_catalog;
    p integer;
BEGIN
    SELECT * INTO t FROM @extschema@.topic_catalog c WHERE c.topic_id = _compact_topic.topic_id;
    IF NOT FOUND OR t.cleanup_policy NOT IN ('compact', 'compact,delete') THEN
        RETURN;
    END IF;
    -- One round per topic at a time, retention's included; drop_topic
    -- waits for it.
    IF NOT @extschema@._try_lock_maintenance(t.topic_id) THEN
        RETURN;
    END IF;
    FOR p IN 0 .. t.partitions - 1 LOOP
        RETURN QUERY SELECT * FROM @extschema@._compact_partition(t, p, force);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._compact_topic(integer, boolean) IS
'internal: compacts each partition of a compacted topic (when due, or now with force), in the caller''s transaction';

CREATE FUNCTION @extschema@._compact(topic text)
RETURNS SETOF @extschema@.maintenance_action
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer;
    policy text;
BEGIN
    PERFORM @extschema@._require_shmem();
    PERFORM @extschema@._check_topic_name(topic);
    SELECT c.topic_id, c.cleanup_policy INTO tid, policy
      FROM @extschema@.topic_catalog c WHERE c.name = _compact.topic;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', topic USING ERRCODE = 'undefined_object';
    END IF;
    PERFORM @extschema@._authorize(topic, 'owner');
    IF policy NOT IN ('compact', 'compact,delete') THEN
        RAISE EXCEPTION 'topic "%" is not compacted', topic
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its cleanup_policy is ''%s''.', policy),
                  HINT = 'Set its cleanup_policy to ''compact'' or ''compact,delete'' with eventlog.alter_topic.';
    END IF;
    RETURN QUERY SELECT * FROM @extschema@._compact_topic(tid, true);
END
$$;
COMMENT ON FUNCTION @extschema@._compact(text) IS
'internal: the body of eventlog.compact, run as the extension owner on behalf of the caller eventlog.compact notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._compact(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.compact(topic text)
RETURNS SETOF @extschema@.maintenance_action
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.compact(text) IS
'compacts a compacted topic now (the maintenance worker does when due) and returns what it did: segments compacted (bytes: what was reclaimed) or skipped because someone held them; only the topic''s owner may';

CREATE VIEW @extschema@.compaction AS
    SELECT t.name AS topic, pc.partition, t.cleanup_policy,
           coalesce(cc.cleaned_offset, 0) AS cleaned_offset,
           cc.dirty_ratio, cc.last_compaction,
           coalesce(cc.rounds, 0) AS rounds,
           coalesce(cc.records_removed, 0) AS records_removed,
           coalesce(cc.bytes_reclaimed, 0) AS bytes_reclaimed,
           cc.next_tombstone_expiry
      FROM @extschema@.topic_catalog t
      JOIN @extschema@.partition_catalog pc USING (topic_id)
      LEFT JOIN @extschema@.compaction_catalog cc USING (topic_id, partition)
     WHERE t.cleanup_policy IN ('compact', 'compact,delete');
COMMENT ON VIEW @extschema@.compaction IS
'one row per partition of a compacted topic: the offset below which its sealed log is compacted, the dirty share of its sealed log at the last round (compaction runs at 0.5), the last compaction, rounds, records removed, bytes reclaimed, and when the oldest tombstone kept expires';
GRANT SELECT ON @extschema@.compaction TO PUBLIC;
