/* ------------------------------------------------------------------------
 * Topics
 * ------------------------------------------------------------------------ */

CREATE FUNCTION @extschema@._require_shmem()
RETURNS void
AS 'MODULE_PATHNAME', 'el_require_shmem_sql'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@._require_shmem() IS
'internal: raises SQLSTATE 55000 unless pg_eventlog is in shared_preload_libraries';

/*
 * pg_eventlog's own locks (src/locks.c): advisory locks in a key space the
 * pg_advisory_* functions cannot reach, so that no role can stall
 * producers, retention or a group by taking the same keys.  One function
 * per kind of lock (src/locks.h lists them, numbers them, and gives the
 * order they are taken in) and way of taking it: _lock_* waits, _try_lock_*
 * returns false instead; both take the lock exclusively, held to the end of
 * the transaction, and compute its key in C as the C code does.  Only the
 * extension's owner may call them.
 */
CREATE FUNCTION @extschema@._lock_routing(topic_id integer, partition integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_routing'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_routing(integer, integer) IS
'internal: waits for the lock that orders a partition''s counter recovery with a maintenance round';

CREATE FUNCTION @extschema@._lock_maintenance(topic_id integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_maintenance'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_maintenance(integer) IS
'internal: waits for the lock of a topic''s maintenance rounds';

CREATE FUNCTION @extschema@._try_lock_maintenance(topic_id integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_lock_maintenance'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_lock_maintenance(integer) IS
'internal: takes the lock of a topic''s maintenance rounds if it is free';

CREATE FUNCTION @extschema@._lock_group_membership(topic_id integer, group_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_group_membership'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_group_membership(integer, text) IS
'internal: waits for a consumer group''s membership lock';

CREATE FUNCTION @extschema@._try_lock_group_membership(topic_id integer, group_name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_lock_group_membership'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_lock_group_membership(integer, text) IS
'internal: takes a consumer group''s membership lock if it is free';

CREATE FUNCTION @extschema@._lock_group_partition(topic_id integer, group_name text, partition integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_group_partition'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_group_partition(integer, text, integer) IS
'internal: waits for the lock of a partition of a consumer group';

CREATE FUNCTION @extschema@._try_lock_group_partition(topic_id integer, group_name text, partition integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_lock_group_partition'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_lock_group_partition(integer, text, integer) IS
'internal: takes the lock of a partition of a consumer group if it is free';

CREATE FUNCTION @extschema@._forget_topic(topic_id integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_forget_topic'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._forget_topic(integer) IS
'internal: frees the shared memory of a dropped topic''s partitions when the transaction commits';

CREATE FUNCTION @extschema@._check_topic_name(topic text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF topic IS NULL THEN
        RAISE EXCEPTION 'topic name must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF topic !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION 'invalid topic name "%"', left(topic, 210)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A topic name is 1 to 200 characters, each a letter (A-Z, a-z), a digit, ".", "_" or "-".',
                  HINT = 'Kafka accepts the same alphabet, so a name valid here is valid there.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._check_topic_name(text) IS
'internal: raises SQLSTATE 22023 unless the name is 1 to 200 characters of [A-Za-z0-9._-]';

/*
 * Create the next segment table of a partition.  Its name derives from
 * numbers only (identifiers stop at 63 bytes; topic names may be 200
 * characters), and every identifier is quoted by format('%I').  Its key,
 * value and headers columns are of the topic's format: text, jsonb, jsonb
 * for 'json'; bytea, bytea, eventlog.header[] for 'binary'.
 */
CREATE FUNCTION @extschema@._create_segment(topic_id integer, partition integer,
                                            segment_no integer, base_offset bigint)
RETURNS name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tbl name := format('seg_%s_%s_%s', topic_id, partition, segment_no);
    topic_name text;
    topic_format text;
BEGIN
    SELECT t.name, t.format INTO topic_name, topic_format
      FROM @extschema@.topic_catalog t WHERE t.topic_id = _create_segment.topic_id;
    IF topic_format = 'binary' THEN
        EXECUTE format(
            'CREATE TABLE eventlog_segments.%I ('
            '    offset_id bigint NOT NULL,'
            '    key bytea,'
            '    value bytea,'
            '    headers @extschema@.header[],'
            '    event_time timestamptz NOT NULL,'
            '    append_time timestamptz NOT NULL,'
            '    CONSTRAINT %I PRIMARY KEY (offset_id)'
            ') USING heap', tbl, tbl || '_pkey');
    ELSE
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
    END IF;
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
'internal: creates a segment table for a partition, with the columns of the topic''s format, and records it in segment_catalog';

CREATE FUNCTION @extschema@._partitions_in_use(except_topic integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_partitions_in_use'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._partitions_in_use(integer) IS
'internal: the partitions of every other topic of this database, as committed now (a fresh snapshot, not the caller''s)';
REVOKE ALL ON FUNCTION @extschema@._partitions_in_use(integer) FROM PUBLIC;

/* Add partitions [first, last] to a topic, each with its first segment. */
CREATE FUNCTION @extschema@._add_partitions(topic_id integer, first integer, last integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    total bigint;
    max_partitions integer := current_setting('eventlog.max_partitions')::integer;
BEGIN
    -- Serialise the check with every other creation or growth of a topic
    -- in this database (create_topic takes the same lock first; alter_topic
    -- holds only its topic's row lock, which this lock does not conflict
    -- with): two sessions must not each find room and together exceed the
    -- limit.  The count reads what is committed now, not the caller's
    -- snapshot, which in REPEATABLE READ predates the wait for the lock.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    total := @extschema@._partitions_in_use(_add_partitions.topic_id);
    IF total + last + 1 > max_partitions THEN
        RAISE EXCEPTION 'too many partitions'
            USING ERRCODE = 'configuration_limit_exceeded',
                  DETAIL = format('This database would have %s partitions; eventlog.max_partitions is %s.',
                                  total + last + 1, max_partitions),
                  HINT = 'Raise eventlog.max_partitions and restart the server, or use fewer partitions.';
    END IF;
    FOR p IN first .. last LOOP
        INSERT INTO @extschema@.partition_catalog (topic_id, partition)
        VALUES (_add_partitions.topic_id, p);
        PERFORM @extschema@._create_segment(_add_partitions.topic_id, p, 0, 0);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._add_partitions(integer, integer, integer) IS
'internal: adds partitions to a topic, checking eventlog.max_partitions';

CREATE FUNCTION @extschema@._check_topic_settings(
    retention interval, retention_bytes bigint,
    segment_interval interval, segment_bytes bigint)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF retention <= interval '0' THEN
        RAISE EXCEPTION 'retention must be positive'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use NULL to keep records forever.';
    END IF;
    IF retention_bytes <= 0 THEN
        RAISE EXCEPTION 'retention_bytes must be positive'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use NULL for no size limit.';
    END IF;
    IF segment_interval IS NULL OR segment_interval <= interval '0' THEN
        RAISE EXCEPTION 'segment_interval must be a positive interval'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF segment_bytes IS NULL OR segment_bytes < 65536 THEN
        RAISE EXCEPTION 'segment_bytes must be at least 65536'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(segment_bytes::text, 'NULL'));
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._check_topic_settings(interval, bigint, interval, bigint) IS
'internal: validates retention and segment settings';

/*
 * Compaction settings (Kafka's cleanup.policy, delete.retention.ms,
 * min.compaction.lag.ms, max.compaction.lag.ms).  Returns the policy in
 * its one stored spelling: Kafka takes the list in any order.
 */
CREATE FUNCTION @extschema@._check_compaction_settings(
    cleanup_policy text, delete_retention interval,
    min_compaction_lag interval, max_compaction_lag interval)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    policy text := pg_catalog.lower(pg_catalog.replace(cleanup_policy, ' ', ''));
BEGIN
    IF cleanup_policy IS NULL THEN
        RAISE EXCEPTION 'cleanup_policy must not be null'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A topic''s cleanup policy is ''delete'', ''compact'' or ''compact,delete''.';
    END IF;
    IF policy = 'delete,compact' THEN
        policy := 'compact,delete';
    END IF;
    IF policy NOT IN ('delete', 'compact', 'compact,delete') THEN
        RAISE EXCEPTION 'invalid cleanup policy "%"', left(cleanup_policy, 100)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A topic''s cleanup policy is ''delete'', ''compact'' or ''compact,delete''.';
    END IF;
    IF delete_retention IS NULL OR delete_retention < interval '0' THEN
        RAISE EXCEPTION 'delete_retention must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(delete_retention::text, 'NULL'));
    END IF;
    IF min_compaction_lag IS NULL OR min_compaction_lag < interval '0' THEN
        RAISE EXCEPTION 'min_compaction_lag must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(min_compaction_lag::text, 'NULL'));
    END IF;
    IF max_compaction_lag <= interval '0' THEN
        RAISE EXCEPTION 'max_compaction_lag must be positive'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use NULL for no maximum.';
    END IF;
    IF max_compaction_lag < min_compaction_lag THEN
        RAISE EXCEPTION 'max_compaction_lag must not be less than min_compaction_lag'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('max_compaction_lag is %s and min_compaction_lag is %s.',
                                  max_compaction_lag, min_compaction_lag);
    END IF;
    RETURN policy;
END
$$;
COMMENT ON FUNCTION @extschema@._check_compaction_settings(text, interval, interval, interval) IS
'internal: validates compaction settings and returns the cleanup policy as stored';

/*
 * Topic commands: create_topic, drop_topic, alter_topic.  Each public
 * function is the C gate el_gate (src/acl.c), which notes its caller and
 * calls the SECURITY DEFINER function of the same name with a leading
 * underscore; that one checks the caller's privileges (privileges.sql).
 */

CREATE FUNCTION @extschema@._create_topic(
    topic text,
    partitions integer DEFAULT 1,
    retention interval DEFAULT '7 days',
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT '1 day',
    segment_bytes bigint DEFAULT 1073741824,
    format text DEFAULT 'json',
    cleanup_policy text DEFAULT 'delete',
    delete_retention interval DEFAULT '1 day',
    min_compaction_lag interval DEFAULT '0',
    max_compaction_lag interval DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    new_id integer;
BEGIN
    PERFORM @extschema@._require_shmem();
    PERFORM @extschema@._check_topic_name(topic);
    IF partitions IS NULL OR partitions < 1 THEN
        RAISE EXCEPTION 'partitions must be at least 1'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The value given was %s.', coalesce(partitions::text, 'NULL'));
    END IF;
    PERFORM @extschema@._check_topic_settings(retention, retention_bytes,
                                              segment_interval, segment_bytes);
    IF _create_topic.format IS NULL THEN
        RAISE EXCEPTION 'format must not be null'
            USING ERRCODE = '22004',
                  HINT = 'A topic''s format is ''json'' (text keys, jsonb values and headers) or ''binary'' (bytea keys and values, eventlog.header[] headers).';
    END IF;
    IF _create_topic.format NOT IN ('json', 'binary') THEN
        RAISE EXCEPTION 'invalid topic format "%"', left(_create_topic.format, 100)
            USING ERRCODE = '22023',
                  HINT = 'A topic''s format is ''json'' (text keys, jsonb values and headers) or ''binary'' (bytea keys and values, eventlog.header[] headers).';
    END IF;
    cleanup_policy := @extschema@._check_compaction_settings(cleanup_policy, delete_retention,
                                                             min_compaction_lag, max_compaction_lag);
    -- Serialise topic creation, so that two sessions creating the same name
    -- get a clear error instead of a unique violation.
    LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _create_topic.topic) THEN
        RAISE EXCEPTION 'topic "%" already exists', topic
            USING ERRCODE = 'duplicate_object';
    END IF;
    INSERT INTO @extschema@.topic_catalog AS t
           (name, partitions, retention, retention_bytes, segment_interval, segment_bytes, owner,
            format, cleanup_policy, delete_retention, min_compaction_lag, max_compaction_lag)
    VALUES (topic, partitions, retention, retention_bytes, segment_interval, segment_bytes,
            @extschema@._caller(), _create_topic.format, _create_topic.cleanup_policy,
            _create_topic.delete_retention, _create_topic.min_compaction_lag,
            _create_topic.max_compaction_lag)
    RETURNING t.topic_id INTO new_id;
    PERFORM @extschema@._add_partitions(new_id, 0, partitions - 1);
END
$$;
COMMENT ON FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint, text, text, interval, interval, interval) IS
'internal: the body of eventlog.create_topic, run as the extension owner on behalf of the caller eventlog.create_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._create_topic(text, integer, interval, bigint, interval, bigint, text, text, interval, interval, interval) FROM PUBLIC;

CREATE FUNCTION @extschema@.create_topic(
    topic text,
    partitions integer DEFAULT 1,
    retention interval DEFAULT '7 days',
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT '1 day',
    segment_bytes bigint DEFAULT 1073741824,
    format text DEFAULT 'json',
    cleanup_policy text DEFAULT 'delete',
    delete_retention interval DEFAULT '1 day',
    min_compaction_lag interval DEFAULT '0',
    max_compaction_lag interval DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text, text, interval, interval, interval) IS
'creates a topic of that many partitions; retention NULL keeps records forever, retention_bytes is per partition; format ''json'' (text keys, jsonb values and headers: produce, read) or ''binary'' (Kafka''s bytes: produce_binary, read_binary), fixed for the topic''s life; cleanup_policy ''compact'' or ''compact,delete'' keeps the latest record of each key (see eventlog.compact)';
-- Who may create topics: those granted EXECUTE on create_topic.
REVOKE ALL ON FUNCTION @extschema@.create_topic(text, integer, interval, bigint, interval, bigint, text, text, interval, interval, interval) FROM PUBLIC;

CREATE FUNCTION @extschema@._drop_topic(topic text, if_exists boolean DEFAULT false)
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
            USING ERRCODE = 'undefined_object';
    END IF;
    PERFORM @extschema@._authorize(topic, 'owner');
    PERFORM FROM @extschema@.topic_catalog t WHERE t.topic_id = old_id FOR UPDATE;
    -- A concurrent drop_topic that committed while this one waited for the
    -- row leaves nothing to lock: the topic is gone, as if it had not been
    -- found above.
    IF NOT FOUND THEN
        IF coalesce(if_exists, false) THEN
            RAISE NOTICE 'topic "%" does not exist, skipping', topic;
            RETURN;
        END IF;
        RAISE EXCEPTION 'topic "%" does not exist', topic
            USING ERRCODE = 'undefined_object';
    END IF;
    -- Wait for a maintenance round of the topic in progress, and keep the
    -- next ones away (they skip a topic whose round lock is taken): a round
    -- that rolled a partition commits a new segment, which the list below
    -- must see, or its table would outlive the topic (its catalog row goes
    -- with the partition's).
    PERFORM @extschema@._lock_maintenance(old_id);
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

CREATE FUNCTION @extschema@.drop_topic(topic text, if_exists boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.drop_topic(text, boolean) IS
'drops a topic with all its records; a topic created again under the same name is a new topic whose offsets start at 0';

CREATE FUNCTION @extschema@._alter_topic(
    topic text,
    partitions integer DEFAULT NULL,
    retention interval DEFAULT NULL,
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT NULL,
    segment_bytes bigint DEFAULT NULL,
    cleanup_policy text DEFAULT NULL,
    delete_retention interval DEFAULT NULL,
    min_compaction_lag interval DEFAULT NULL,
    max_compaction_lag interval DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cur @extschema@.topic_catalog;
    new_retention interval;
    new_retention_bytes bigint;
    new_policy text;
    new_max_lag interval;
BEGIN
    PERFORM @extschema@._require_shmem();
    PERFORM @extschema@._check_topic_name(topic);
    -- Growth checks eventlog.max_partitions under topic_catalog's SHARE ROW
    -- EXCLUSIVE lock (_add_partitions): take it before the topic's row lock,
    -- as create_topic does.  Waiting for it while holding the row would
    -- deadlock with a transaction that changed topic_catalog (an alter_topic,
    -- drop_topic or grant) and then alters this topic.  Only for the
    -- topic's owner: no one else may hold up topic DDL with it.
    IF partitions IS NOT NULL THEN
        IF EXISTS (SELECT FROM @extschema@.topic_catalog t WHERE t.name = _alter_topic.topic) THEN
            PERFORM @extschema@._authorize(topic, 'owner');
        END IF;
        LOCK TABLE @extschema@.topic_catalog IN SHARE ROW EXCLUSIVE MODE;
    END IF;
    SELECT * INTO cur FROM @extschema@.topic_catalog t
     WHERE t.name = _alter_topic.topic FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', topic
            USING ERRCODE = 'undefined_object';
    END IF;
    PERFORM @extschema@._authorize(topic, 'owner');
    -- NULL leaves a setting as it is; a negative retention or
    -- retention_bytes removes the limit (Kafka's -1).
    new_retention := CASE WHEN retention IS NULL THEN cur.retention
                          WHEN retention < interval '0' THEN NULL
                          ELSE retention END;
    new_retention_bytes := CASE WHEN retention_bytes IS NULL THEN cur.retention_bytes
                                WHEN retention_bytes < 0 THEN NULL
                                ELSE retention_bytes END;
    IF retention = interval '0' OR retention_bytes = 0 THEN
        RAISE EXCEPTION 'retention limits must be positive'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass a negative value (for example interval ''-1 second'' or -1) to remove a limit, or NULL to leave it unchanged.';
    END IF;
    PERFORM @extschema@._check_topic_settings(new_retention, new_retention_bytes,
        coalesce(segment_interval, cur.segment_interval),
        coalesce(segment_bytes, cur.segment_bytes));
    -- A negative max_compaction_lag removes it, as for retention.
    new_max_lag := CASE WHEN max_compaction_lag IS NULL THEN cur.max_compaction_lag
                        WHEN max_compaction_lag < interval '0' THEN NULL
                        ELSE max_compaction_lag END;
    new_policy := @extschema@._check_compaction_settings(
        coalesce(cleanup_policy, cur.cleanup_policy),
        coalesce(delete_retention, cur.delete_retention),
        coalesce(min_compaction_lag, cur.min_compaction_lag),
        new_max_lag);
    IF partitions IS NOT NULL AND partitions < cur.partitions THEN
        RAISE EXCEPTION 'cannot reduce the number of partitions of topic "%"', topic
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The topic has %s partitions and %s were asked for; partitions hold records and keys are hashed over their count.',
                                  cur.partitions, partitions),
                  HINT = 'Create a new topic with fewer partitions and copy the records into it.';
    END IF;
    IF partitions > cur.partitions THEN
        PERFORM @extschema@._add_partitions(cur.topic_id, cur.partitions, partitions - 1);
    END IF;
    UPDATE @extschema@.topic_catalog t
       SET partitions = greatest(cur.partitions, coalesce(_alter_topic.partitions, cur.partitions)),
           retention = new_retention,
           retention_bytes = new_retention_bytes,
           segment_interval = coalesce(_alter_topic.segment_interval, cur.segment_interval),
           segment_bytes = coalesce(_alter_topic.segment_bytes, cur.segment_bytes),
           cleanup_policy = new_policy,
           delete_retention = coalesce(_alter_topic.delete_retention, cur.delete_retention),
           min_compaction_lag = coalesce(_alter_topic.min_compaction_lag, cur.min_compaction_lag),
           max_compaction_lag = new_max_lag
     WHERE t.topic_id = cur.topic_id;
END
$$;
COMMENT ON FUNCTION @extschema@._alter_topic(text, integer, interval, bigint, interval, bigint, text, interval, interval, interval) IS
'internal: the body of eventlog.alter_topic, run as the extension owner on behalf of the caller eventlog.alter_topic notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._alter_topic(text, integer, interval, bigint, interval, bigint, text, interval, interval, interval) FROM PUBLIC;

CREATE FUNCTION @extschema@.alter_topic(
    topic text,
    partitions integer DEFAULT NULL,
    retention interval DEFAULT NULL,
    retention_bytes bigint DEFAULT NULL,
    segment_interval interval DEFAULT NULL,
    segment_bytes bigint DEFAULT NULL,
    cleanup_policy text DEFAULT NULL,
    delete_retention interval DEFAULT NULL,
    min_compaction_lag interval DEFAULT NULL,
    max_compaction_lag interval DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.alter_topic(text, integer, interval, bigint, interval, bigint, text, interval, interval, interval) IS
'changes a topic''s settings: NULL leaves one unchanged, a negative retention or retention_bytes removes that limit; partitions can only grow (keys then hash over the new count, as in Kafka)';
