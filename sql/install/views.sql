/* ------------------------------------------------------------------------
 * Monitoring views
 * ------------------------------------------------------------------------ */

/*
 * What the monitoring views need from the segments, read without waiting
 * for a lock or keeping one (src/segment.c).  The extension owner's only:
 * they skip privilege checks on the segments.
 */
CREATE FUNCTION @extschema@._append_time(topic text, partition integer, from_offset bigint,
                                         below_offset bigint, newest boolean)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'el_append_time_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._append_time(text, integer, bigint, bigint, boolean) IS
'internal: the append time of the first (newest: last) record of a partition with an offset in [from_offset, below_offset), NULL if none or if its segment is being removed';
REVOKE ALL ON FUNCTION @extschema@._append_time(text, integer, bigint, bigint, boolean) FROM PUBLIC;

CREATE FUNCTION @extschema@._partition_bytes(topic text, partition integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_partition_bytes_sql'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._partition_bytes(text, integer) IS
'internal: the bytes of a partition''s segments, a segment being removed not counted';
REVOKE ALL ON FUNCTION @extschema@._partition_bytes(text, integer) FROM PUBLIC;

CREATE FUNCTION @extschema@._partition_info(
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

CREATE VIEW @extschema@.partitions AS
    SELECT * FROM @extschema@._partition_info();
COMMENT ON VIEW @extschema@.partitions IS
'one row per partition: offsets (log start, high watermark, last stable offset and the PID holding it back), size, and the append times of its oldest and newest readable records; records counts offsets, aborted ones included';

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

CREATE FUNCTION @extschema@._consumer_group_info(
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

CREATE VIEW @extschema@.consumer_groups AS
    SELECT * FROM @extschema@._consumer_group_info();
COMMENT ON VIEW @extschema@.consumer_groups IS
'one row per group and partition: committed position, high watermark and last stable offset, lag in offsets and in time (age of the oldest unread record), last commit, whether retention removed records the group had not read, and (member style) the owning member and the assignment''s generation';

CREATE VIEW @extschema@.topics AS
    SELECT t.name AS topic, t.partitions, t.retention, t.retention_bytes,
           t.segment_interval, t.segment_bytes,
           coalesce(sum(p.records), 0)::bigint AS records,
           coalesce(sum(p.bytes), 0)::bigint AS bytes,
           t.created_at, t.owner, t.format,
           t.cleanup_policy, t.delete_retention, t.min_compaction_lag, t.max_compaction_lag
      FROM @extschema@.topic_catalog t
      LEFT JOIN @extschema@.partitions p ON p.topic = t.name
     GROUP BY t.topic_id;
COMMENT ON VIEW @extschema@.topics IS
'one row per topic: its settings, the records (offsets) and bytes it holds, its owner, its format (json or binary), and its compaction settings';

CREATE VIEW @extschema@.topic_privileges AS
    SELECT t.name AS topic, g.grantee, g.privilege
      FROM @extschema@.topic_catalog t,
           LATERAL (SELECT t.owner, 'owner'
                    UNION ALL
                    SELECT r, 'produce' FROM pg_catalog.unnest(t.producers) r
                    UNION ALL
                    SELECT r, 'consume' FROM pg_catalog.unnest(t.consumers) r) AS g(grantee, privilege);
COMMENT ON VIEW @extschema@.topic_privileges IS
'who owns each topic, and who was granted produce or consume on it (grantee "-" is PUBLIC)';

GRANT SELECT ON @extschema@.topics, @extschema@.partitions, @extschema@.consumer_groups,
                @extschema@.maintenance, @extschema@.topic_privileges TO PUBLIC;
