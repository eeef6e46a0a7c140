-- The SQL surface: names, signatures, volatility and parallel safety of the
-- contract's functions, pinned search_path on every PL/pgSQL function, and
-- the column lists of the types and views users code against.
BEGIN;
SELECT plan(38);

SELECT has_schema('eventlog');
SELECT has_function('eventlog', 'produce', ARRAY['text', 'text', 'jsonb', 'jsonb', 'integer', 'timestamp with time zone']);
SELECT has_function('eventlog', 'produce_batch', ARRAY['text', 'text[]', 'jsonb[]', 'jsonb[]', 'integer', 'timestamp with time zone[]']);
SELECT has_function('eventlog', 'read', ARRAY['text', 'integer', 'bigint', 'integer', 'interval']);
SELECT has_function('eventlog', 'create_topic', ARRAY['text', 'integer', 'interval', 'bigint', 'interval', 'bigint', 'text', 'text', 'interval', 'interval', 'interval']);
SELECT has_function('eventlog', 'drop_topic', ARRAY['text', 'boolean']);
SELECT has_function('eventlog', 'alter_topic', ARRAY['text', 'integer', 'interval', 'bigint', 'interval', 'bigint', 'text', 'interval', 'interval', 'interval']);
SELECT has_function('eventlog', 'offset_for_time', ARRAY['text', 'integer', 'timestamp with time zone']);
-- Binary topics' counterparts of produce, produce_batch, read and poll.
SELECT has_function('eventlog', 'produce_binary', ARRAY['text', 'bytea', 'bytea', 'eventlog.header[]', 'integer', 'timestamp with time zone']);
SELECT has_function('eventlog', 'produce_binary_batch', ARRAY['text', 'eventlog.message[]', 'integer']);
SELECT has_function('eventlog', 'read_binary', ARRAY['text', 'integer', 'bigint', 'integer', 'interval']);
SELECT has_function('eventlog', 'poll_binary', ARRAY['text', 'text', 'integer', 'integer', 'text', 'interval', 'interval']);

-- Readers and producers must never be run in parallel workers or have
-- their calls folded: VOLATILE and PARALLEL UNSAFE.
SELECT volatility_is('eventlog', 'read', ARRAY['text', 'integer', 'bigint', 'integer', 'interval'], 'volatile');
SELECT volatility_is('eventlog', 'produce', ARRAY['text', 'text', 'jsonb', 'jsonb', 'integer', 'timestamp with time zone'], 'volatile');
SELECT is(
    (SELECT array_agg(DISTINCT proparallel::text) FROM pg_proc
      WHERE pronamespace = 'eventlog'::regnamespace
        AND proname IN ('read', 'produce', 'produce_batch', 'offset_for_time', 'last_stable_offset', 'high_watermark',
                        'read_binary', 'produce_binary', 'produce_binary_batch', 'poll_binary')),
    ARRAY['u'], 'read, produce, their binary counterparts and the offset functions are PARALLEL UNSAFE');
SELECT is(
    (SELECT array_agg(DISTINCT provolatile::text) FROM pg_proc
      WHERE pronamespace = 'eventlog'::regnamespace
        AND proname IN ('read_binary', 'produce_binary', 'produce_binary_batch', 'poll_binary')),
    ARRAY['v'], 'the binary counterparts are VOLATILE');

-- Produce works with plain literals: no overload makes the call ambiguous.
SELECT is((SELECT count(*)::int FROM pg_proc WHERE pronamespace = 'eventlog'::regnamespace AND proname = 'produce'),
          1, 'one produce function: literals resolve without casts');

-- Every PL/pgSQL function pins its search_path (no search_path hijack).
-- Except the two Kafka group procedures that commit while they wait: a
-- procedure with a SET clause cannot commit; they run as the caller and
-- name only schema-qualified functions (sql/install/kafka_groups.sql).
SELECT is(
    (SELECT array_agg(p.proname::text ORDER BY p.proname) FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
      WHERE p.pronamespace = 'eventlog'::regnamespace AND l.lanname = 'plpgsql'
        AND NOT coalesce(p.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], false)),
    ARRAY['kafka_join_group', 'kafka_sync_group'], 'every PL/pgSQL function but two procedures sets search_path = pg_catalog, pg_temp');
-- SECURITY DEFINER only on the internal bodies behind el_gate: named "_" +
-- a public function's name, that PUBLIC cannot execute (src/acl.c); on
-- the two argumentless functions behind the metadata views; and on
-- kafka_scram_verifier, which PUBLIC cannot execute (checked below).
SELECT is(
    (SELECT array_agg(p.proname::text ORDER BY p.proname) FROM pg_proc p
      WHERE p.pronamespace = 'eventlog'::regnamespace AND p.prosecdef
        AND NOT (p.proname IN ('_partition_info', '_consumer_group_info') AND p.pronargs = 0)
        AND NOT (p.proname = 'kafka_scram_verifier' AND NOT has_function_privilege('public', p.oid, 'EXECUTE'))
        AND (has_function_privilege('public', p.oid, 'EXECUTE')
             OR NOT EXISTS (SELECT FROM pg_proc g
                             WHERE g.pronamespace = p.pronamespace
                               AND '_' || g.proname = p.proname
                               AND g.proargtypes = p.proargtypes
                               AND g.prosrc = 'el_gate'))),
    NULL, 'every SECURITY DEFINER function is a gated body PUBLIC cannot call');
-- The internal functions PUBLIC may call: validation, triggers, metadata,
-- and the gate's helpers.  A new internal function must be added here or
-- revoked from PUBLIC (sql/install/grants.sql).  _processor_exec runs a
-- statement as the caller, as EXECUTE would (run_processor calls it as
-- the processor's owner, any role), and _processor_running_max and
-- _processor_record_watermark keep state for one statement only.  The
-- window helpers build text or check a definition as the caller
-- (_processor_split_args, _processor_parse_aggregate_n,
-- _processor_check_aggregate_use, _processor_combinable_aggregate, _processor_agg_argv,
-- _processor_start_range, _processor_hours, _processor_time_range, _processor_sealable_state,
-- _processor_state_refusal, and for polymorphic aggregates
-- _processor_poly_aggregate, _processor_poly_resolve, _processor_agg_types,
-- _processor_array_elem, _processor_check_collation, which probes an
-- argument's collation as _processor_parse_aggregate probes its type, and
-- _processor_implicit_coercion): nothing that changes state.
-- _processor_owner_step returns only inside run_processor's (and
-- reset_processor's, processor_windows') gate, to the body it calls.  _agg_state_seal
-- and _agg_state_merge take internal, so only an aggregate calls them
-- (the processor owner's aggregates, which PostgreSQL runs only if their
-- owner may execute them); they refuse any other caller.
SELECT is(
    (SELECT array_agg(p.proname::text ORDER BY p.proname) FROM pg_proc p
      WHERE p.pronamespace = 'eventlog'::regnamespace AND p.proname LIKE '\_%'
        AND has_function_privilege('public', p.oid, 'EXECUTE')),
    ARRAY['_agg_state_merge', '_agg_state_seal', '_authorize', '_await_records', '_caller', '_capture_check_keys', '_capture_snapshot', '_capture_trigger',
          '_capture_truncate', '_catalog_changed', '_check_compaction_settings', '_check_group_name', '_check_topic_name',
          '_check_topic_settings', '_consumer_group_info', '_grantee',
          '_join_close_sql', '_join_key_sql', '_join_sink_sql', '_join_step', '_join_step_sql', '_join_time_sql',
          '_kafka_await', '_kafka_fetch', '_kafka_group_wait', '_kafka_join_begin', '_kafka_join_check',
          '_kafka_list_offsets', '_kafka_sync_begin', '_kafka_sync_check',
          '_maintenance_status',
          '_outbox_trigger', '_partition_info', '_partition_state', '_privileges',
          '_processor', '_processor_agg_argv', '_processor_agg_out', '_processor_agg_sql', '_processor_agg_type',
          '_processor_agg_types', '_processor_array_elem',
          '_processor_check_aggregate_use', '_processor_check_collation', '_processor_close_sql', '_processor_combinable_aggregate',
          '_processor_emit_sql', '_processor_exec', '_processor_hours', '_processor_implicit_coercion', '_processor_owner_step', '_processor_parse_aggregate', '_processor_parse_aggregate_n',
          '_processor_poly_aggregate', '_processor_poly_resolve', '_processor_record_watermark', '_processor_running_max', '_processor_sealable_state',
          '_processor_sliding_sql', '_processor_split_args', '_processor_start_range', '_processor_state_refusal', '_processor_step_sql', '_processor_time_range',
          '_register_join_processor', '_register_processor', '_require_shmem', '_segment_guard', '_session_id', '_topic_id', '_trigger_args'],
    'internal functions PUBLIC may execute: none that changes state');
SELECT is(
    (SELECT count(*)::int FROM pg_proc WHERE pronamespace = 'eventlog'::regnamespace AND prosecdef),
    39, 'gated bodies (compact''s, init_producer''s, kafka_producer_aborted''s, set_kafka_source_position''s, the join processor''s, pause_processor''s and resume_processor''s among them), thirteen of Kafka groups (kafka_txn_offset_commit''s among them), two metadata functions and kafka_scram_verifier');
SELECT ok(NOT has_function_privilege('public', 'eventlog.kafka_scram_verifier(text)', 'EXECUTE'),
    'PUBLIC may not read SCRAM verifiers');

-- Types and views users code against.
SELECT has_composite('eventlog', 'record', 'eventlog.record exists');
SELECT is(
    (SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute
      WHERE attrelid = 'eventlog.record'::regclass AND attnum > 0),
    ARRAY['topic', 'partition', 'offset_id', 'key', 'value', 'headers', 'event_time', 'append_time'],
    'eventlog.record columns');
SELECT is(
    (SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute
      WHERE attrelid = 'eventlog.position'::regclass AND attnum > 0),
    ARRAY['partition', 'offset_id'], 'eventlog.position columns');
SELECT is(
    (SELECT array_agg(format('%s %s', attname, format_type(atttypid, atttypmod)) ORDER BY attnum) FROM pg_attribute
      WHERE attrelid = 'eventlog.binary_record'::regclass AND attnum > 0),
    ARRAY['topic text', 'partition integer', 'offset_id bigint', 'key bytea', 'value bytea',
          'headers eventlog.header[]', 'event_time timestamp with time zone', 'append_time timestamp with time zone'],
    'eventlog.binary_record columns');
SELECT is(
    (SELECT array_agg(format('%s %s', attname, format_type(atttypid, atttypmod)) ORDER BY attnum) FROM pg_attribute
      WHERE attrelid = 'eventlog.message'::regclass AND attnum > 0),
    ARRAY['key bytea', 'value bytea', 'headers eventlog.header[]', 'event_time timestamp with time zone'],
    'eventlog.message columns');
SELECT is(
    (SELECT array_agg(format('%s %s', attname, format_type(atttypid, atttypmod)) ORDER BY attnum) FROM pg_attribute
      WHERE attrelid = 'eventlog.header'::regclass AND attnum > 0),
    ARRAY['name text', 'value bytea'], 'eventlog.header columns');
SELECT has_view('eventlog', 'topics', 'view eventlog.topics');
SELECT has_view('eventlog', 'partitions', 'view eventlog.partitions');
SELECT columns_are('eventlog', 'topics',
    ARRAY['topic', 'partitions', 'retention', 'retention_bytes', 'segment_interval',
          'segment_bytes', 'records', 'bytes', 'created_at', 'owner', 'format',
          'cleanup_policy', 'delete_retention', 'min_compaction_lag', 'max_compaction_lag']);
SELECT columns_are('eventlog', 'partitions',
    ARRAY['topic', 'partition', 'log_start_offset', 'high_watermark', 'last_stable_offset',
          'stable_offset_holder_pid', 'records', 'bytes', 'segments',
          'oldest_append_time', 'newest_append_time']);

-- Catalog tables keep their rows through pg_dump.
SELECT is(
    (SELECT array_agg(c.relname::text ORDER BY c.relname)
       FROM pg_extension e, unnest(e.extconfig) AS cfg(oid) JOIN pg_class c ON c.oid = cfg.oid
      WHERE e.extname = 'pg_eventlog'),
    ARRAY['compaction_catalog', 'group_catalog', 'group_offsets', 'kafka_source_offsets', 'partition_catalog', 'processor_catalog',
          'processor_catalog_processor_id_seq', 'processor_runtime', 'processor_state_key', 'producer_catalog', 'producer_id_seq', 'producer_state', 'segment_catalog', 'topic_catalog', 'topic_catalog_topic_id_seq'],
    'catalog tables, group positions, relay --from-kafka''s Kafka positions, stream processors'' pause and failures and the key of their sealed states, idempotent producers and their state, and the id sequences are marked for pg_dump (group members, live state, are not)');

-- Every object of the extension is commented.
SELECT is(
    (SELECT count(*)::int FROM pg_depend d
      WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_eventlog')
        AND d.deptype = 'e' AND d.classid IN ('pg_proc'::regclass, 'pg_class'::regclass)
        AND obj_description(d.objid, CASE d.classid WHEN 'pg_proc'::regclass THEN 'pg_proc' ELSE 'pg_class' END) IS NULL
        AND NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = d.objid AND c.relkind IN ('S', 'i'))),
    0, 'every function, table and view has a comment');

-- Segment tables get the guard, enabled ALWAYS.
SELECT lives_ok($$SELECT eventlog.create_topic('tap_api', 2)$$, 'create a topic');
SELECT is(
    (SELECT array_agg(DISTINCT t.tgenabled::text) FROM pg_trigger t
       JOIN eventlog.segment_catalog s ON t.tgrelid = ('eventlog_segments.' || quote_ident(s.table_name))::regclass
       JOIN eventlog.topic_catalog c USING (topic_id) WHERE c.name = 'tap_api'),
    ARRAY['A'], 'segment guards fire always, also in replication apply');
SELECT throws_ok(
    format('INSERT INTO eventlog_segments.%I (offset_id, event_time, append_time) VALUES (0, now(), now())',
           (SELECT s.table_name FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog c USING (topic_id)
             WHERE c.name = 'tap_api' LIMIT 1)),
    '0A000', NULL, 'a direct INSERT into a segment is refused');
SELECT results_eq(
    $$SELECT count(*)::int FROM pg_tables t JOIN eventlog.segment_catalog s ON s.table_name = t.tablename
       JOIN eventlog.topic_catalog c USING (topic_id) WHERE c.name = 'tap_api' AND t.schemaname = 'eventlog_segments'$$,
    ARRAY[2], 'one segment table per partition');

SELECT * FROM finish();
ROLLBACK;
