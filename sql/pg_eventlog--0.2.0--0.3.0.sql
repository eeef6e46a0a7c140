-- pg_eventlog 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION pg_eventlog UPDATE TO '0.3.0'" to load this file. \quit

-- Every change to sql/pg_eventlog.sql since 0.2.0 is repeated here, in the
-- order it was made (test/t/012_upgrade.pl compares the result with a
-- fresh install).

-- Issue 13, items 3 and 4: segment tables move to a schema of their own
-- that no other role may use (a role that can name a segment can create a
-- view over it and hold a lock retention's DROP waits for); retention
-- waits for objects depending on a segment only briefly; the monitoring
-- views neither wait for nor keep locks on segments.
/*
 * Segment tables live in a schema of their own that no other role may use
 * (USAGE is not granted, not even to PUBLIC).  Without USAGE a role cannot
 * name a segment table: it cannot read it, LOCK it, or create a view, a
 * function or a type over it, which would let it hold a lock that
 * retention's DROP must wait for.  Consumers read through eventlog.read and
 * eventlog.poll.  The schema is a member of the extension, so
 * DROP EXTENSION drops it and pg_dump leaves it to CREATE EXTENSION.
 */
CREATE SCHEMA eventlog_segments;
REVOKE ALL ON SCHEMA eventlog_segments FROM PUBLIC;
COMMENT ON SCHEMA eventlog_segments IS
'pg_eventlog segment tables (see eventlog.segment_catalog); no role but the extension owner may use this schema';

-- Move every segment.  Objects other roles made over them (views, types)
-- follow the tables, which they reference by OID: retention's DROP ...
-- CASCADE still drops them, waiting for their locks only briefly.
DO $move$
DECLARE
    seg record;
BEGIN
    FOR seg IN SELECT s.table_name
                 FROM @extschema@.segment_catalog s
                 JOIN pg_catalog.pg_class c ON c.relname OPERATOR(pg_catalog.=) s.table_name
                WHERE c.relnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace
                ORDER BY s.topic_id, s.partition, s.segment_no
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE @extschema@.%I SET SCHEMA eventlog_segments',
                                  seg.table_name);
    END LOOP;
END
$move$;

COMMENT ON TABLE @extschema@.segment_catalog IS
'pg_eventlog segments: the tables (in schema eventlog_segments) holding each partition''s records, from base_offset on (NULL: a spare not yet active, or just activated and not recorded yet)';

CREATE OR REPLACE FUNCTION @extschema@._create_segment(topic_id integer, partition integer,
                                            segment_no integer, base_offset bigint)
RETURNS name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tbl name := format('seg_%s_%s_%s', topic_id, partition, segment_no);
    topic_name text;
BEGIN
    SELECT t.name INTO topic_name
      FROM @extschema@.topic_catalog t WHERE t.topic_id = _create_segment.topic_id;
    EXECUTE format(
        'CREATE TABLE eventlog_segments.%I ('
        '    offset_id bigint NOT NULL,'
        '    key text,'
        '    value jsonb,'
        '    headers jsonb,'
        '    event_time timestamptz NOT NULL,'
        '    append_time timestamptz NOT NULL,'
        '    CONSTRAINT %I PRIMARY KEY (offset_id)'
        ') USING heap', tbl, tbl || '_pkey');
    EXECUTE format(
        'CREATE TRIGGER segment_guard BEFORE INSERT OR UPDATE OR DELETE'
        ' ON eventlog_segments.%I FOR EACH ROW'
        ' EXECUTE FUNCTION @extschema@._segment_guard()', tbl);
    EXECUTE format(
        'CREATE TRIGGER segment_guard_truncate BEFORE TRUNCATE'
        ' ON eventlog_segments.%I FOR EACH STATEMENT'
        ' EXECUTE FUNCTION @extschema@._segment_guard()', tbl);
    -- ALWAYS: the guard also fires under session_replication_role = replica,
    -- that is in logical replication apply workers.
    EXECUTE format(
        'ALTER TABLE eventlog_segments.%I ENABLE ALWAYS TRIGGER segment_guard,'
        ' ENABLE ALWAYS TRIGGER segment_guard_truncate', tbl);
    EXECUTE format('COMMENT ON TABLE eventlog_segments.%I IS %L', tbl,
        format('pg_eventlog records of topic %s, partition %s, segment %s (read-only: write with eventlog.produce)',
               topic_name, partition, segment_no));
    INSERT INTO @extschema@.segment_catalog (topic_id, partition, segment_no, base_offset, table_name)
    VALUES (_create_segment.topic_id, _create_segment.partition,
            _create_segment.segment_no, _create_segment.base_offset, tbl);
    RETURN tbl;
END
$$;
COMMENT ON FUNCTION @extschema@._create_segment(integer, integer, integer, bigint) IS
'internal: creates a segment table for a partition and records it in segment_catalog';

CREATE OR REPLACE FUNCTION @extschema@._drop_topic(topic text, if_exists boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    old_id integer;
    seg record;
BEGIN
    PERFORM @extschema@._check_topic_name(topic);
    SELECT t.topic_id INTO old_id
      FROM @extschema@.topic_catalog t WHERE t.name = _drop_topic.topic;
    IF NOT FOUND THEN
        IF coalesce(if_exists, false) THEN
            RAISE NOTICE 'topic "%" does not exist, skipping', topic;
            RETURN;
        END IF;
        RAISE EXCEPTION 'topic "%" does not exist', topic
            USING ERRCODE = '42704';
    END IF;
    PERFORM @extschema@._authorize(topic, 'owner');
    PERFORM FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id FOR UPDATE;
    FOR seg IN SELECT s.table_name FROM @extschema@.segment_catalog s
                WHERE s.topic_id = old_id ORDER BY s.partition, s.segment_no
    LOOP
        -- CASCADE: objects made to depend on a segment (a view by the
        -- extension owner, a regclass constant by anyone) go with it.
        EXECUTE format('DROP TABLE IF EXISTS eventlog_segments.%I CASCADE', seg.table_name);
    END LOOP;
    DELETE FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id;
    PERFORM @extschema@._forget_topic(old_id);
END
$$;
COMMENT ON FUNCTION @extschema@._drop_topic(text, boolean) IS
'internal: the body of eventlog.drop_topic, run as the extension owner on behalf of the caller eventlog.drop_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._drop_topic(text, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@._maintain_topic(topic_id integer)
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
    IF NOT @extschema@._try_xact_lock(2, t.topic_id) THEN
        RETURN;
    END IF;
    r.topic := t.name;
    FOR p IN 0 .. t.partitions - 1 LOOP
        r.partition := p;
        -- Ordered with counter recovery (el_recover_next_offset): from the
        -- routing read until the base offset is recorded and committed.
        PERFORM @extschema@._xact_lock(1, (t.topic_id::bigint << 32) | p);
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

        -- 2. Retention, oldest sealed segment first.
        SELECT coalesce(sum(pg_catalog.pg_total_relation_size(
                   pg_catalog.to_regclass(format('eventlog_segments.%I', s.table_name)))), 0)
          INTO part_bytes
          FROM @extschema@.segment_catalog s
         WHERE s.topic_id = t.topic_id AND s.partition = p;
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
            EXECUTE format('SELECT append_time FROM eventlog_segments.%I ORDER BY offset_id DESC LIMIT 1',
                           seg.table_name) INTO newest;
            EXIT WHEN NOT (
                (t.retention IS NOT NULL AND (newest IS NULL OR newest < pg_catalog.now() - t.retention))
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
        EXECUTE format('SELECT a.append_time, b.append_time FROM '
                       '(SELECT append_time FROM eventlog_segments.%1$I ORDER BY offset_id LIMIT 1) a, '
                       '(SELECT append_time FROM eventlog_segments.%1$I ORDER BY offset_id DESC LIMIT 1) b',
                       seg.table_name) INTO oldest, newest;
        CONTINUE WHEN oldest IS NULL;
        seg_bytes := pg_catalog.pg_total_relation_size(format('eventlog_segments.%I', seg.table_name)::regclass);
        IF oldest < pg_catalog.now() - t.segment_interval
           OR seg_bytes >= t.segment_bytes
           OR (t.retention IS NOT NULL AND newest < pg_catalog.now() - t.retention) THEN
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

CREATE OR REPLACE FUNCTION @extschema@._append_time(topic text, partition integer, from_offset bigint,
                                         below_offset bigint, newest boolean)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'el_append_time_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._append_time(text, integer, bigint, bigint, boolean) IS
'internal: the append time of the first (newest: last) record of a partition with an offset in [from_offset, below_offset), NULL if none or if its segment is being removed';
REVOKE ALL ON FUNCTION @extschema@._append_time(text, integer, bigint, bigint, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@._partition_bytes(topic text, partition integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_partition_bytes_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._partition_bytes(text, integer) IS
'internal: the bytes of a partition''s segments, a segment being removed not counted';
REVOKE ALL ON FUNCTION @extschema@._partition_bytes(text, integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@._partition_info(
    OUT topic text, OUT partition integer,
    OUT log_start_offset bigint, OUT high_watermark bigint,
    OUT last_stable_offset bigint, OUT stable_offset_holder_pid integer,
    OUT records bigint, OUT bytes bigint, OUT segments integer,
    OUT oldest_append_time timestamptz, OUT newest_append_time timestamptz)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
-- The views are public metadata, as pg_class is; segment tables are not.
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p record;
BEGIN
    -- Offsets come from shared memory and the catalog; the segments are
    -- only looked at by _partition_bytes and _append_time, which never wait
    -- for a lock nor keep one, so that a view left open in a transaction
    -- pins no segment.
    FOR p IN SELECT t.name, t.topic_id, pc.partition, pc.log_start_offset AS start,
                    (SELECT count(*) FROM @extschema@.segment_catalog s
                      WHERE s.topic_id = t.topic_id AND s.partition = pc.partition) AS nsegs
               FROM @extschema@.topic_catalog t
               JOIN @extschema@.partition_catalog pc USING (topic_id)
              ORDER BY t.name, pc.partition
    LOOP
        -- A topic dropped since this statement's snapshot was taken is
        -- left out: the lookups below see the latest catalog.
        BEGIN
            topic := p.name;
            partition := p.partition;
            log_start_offset := p.start;
            SELECT s.high_watermark, s.last_stable_offset, s.stable_offset_holder_pid
              INTO high_watermark, last_stable_offset, stable_offset_holder_pid
              FROM @extschema@._partition_state(p.name, p.partition) s;
            records := greatest(last_stable_offset - log_start_offset, 0);
            segments := p.nsegs;
            bytes := @extschema@._partition_bytes(p.name, p.partition);
            oldest_append_time := @extschema@._append_time(p.name, p.partition, log_start_offset,
                                                           last_stable_offset, false);
            newest_append_time := @extschema@._append_time(p.name, p.partition, log_start_offset,
                                                           last_stable_offset, true);
        EXCEPTION WHEN undefined_object THEN
            CONTINUE;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._partition_info() IS
'internal: the rows of the eventlog.partitions view';

CREATE OR REPLACE FUNCTION @extschema@._consumer_group_info(
    OUT group_name text, OUT topic text, OUT partition integer,
    OUT committed_offset bigint, OUT high_watermark bigint, OUT last_stable_offset bigint,
    OUT lag bigint, OUT lag_time interval, OUT last_commit timestamptz, OUT lost_records boolean,
    OUT owner_member text, OUT generation bigint)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
-- The views are public metadata, as pg_class is; segment tables are not.
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    o record;
    oldest timestamptz;
    start_offset bigint;
BEGIN
    FOR o IN SELECT go.group_name, t.name, go.partition, go.next_offset, go.committed_at,
                    go.owner_member, go.generation
               FROM @extschema@.group_offsets go
               JOIN @extschema@.topic_catalog t USING (topic_id)
              ORDER BY 1, 2, 3
    LOOP
        -- A topic dropped since this statement's snapshot was taken is
        -- left out: the lookups below see the latest catalog.
        BEGIN
            group_name := o.group_name;
            topic := o.name;
            partition := o.partition;
            committed_offset := o.next_offset;
            last_commit := o.committed_at;
            owner_member := o.owner_member;
            generation := o.generation;
            SELECT s.high_watermark, s.last_stable_offset INTO high_watermark, last_stable_offset
              FROM @extschema@._partition_state(o.name, o.partition) s;
            start_offset := @extschema@.log_start_offset(o.name, o.partition);
            lost_records := o.next_offset < start_offset;
            -- Lag counts offsets the group has not consumed below the stable
            -- offset (aborted gaps included); lag_time is the age of the
            -- oldest unread record.
            lag := greatest(last_stable_offset - greatest(o.next_offset, start_offset), 0);
            oldest := NULL;
            IF lag > 0 THEN
                -- Not eventlog.read: it keeps its segment locked to the end of
                -- the transaction, as a consumer's read must.
                oldest := @extschema@._append_time(o.name, o.partition,
                                                   greatest(o.next_offset, start_offset),
                                                   last_stable_offset, false);
            END IF;
            lag_time := CASE WHEN oldest IS NULL THEN interval '0' ELSE pg_catalog.now() - oldest END;
        EXCEPTION WHEN undefined_object THEN
            CONTINUE;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._consumer_group_info() IS
'internal: the rows of the eventlog.consumer_groups view';
