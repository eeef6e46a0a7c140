/* ------------------------------------------------------------------------
 * Internal functions that change state, or take pg_eventlog's locks, run
 * only inside the SECURITY DEFINER bodies and the background workers:
 * PUBLIC may not call them (a role could otherwise point a partition at a
 * missing segment, free a topic's shared memory, or hold a group's lock).
 * test/pgtap/api.sql pins the internal functions PUBLIC may call.
 * ------------------------------------------------------------------------ */
REVOKE ALL ON FUNCTION
    @extschema@._activate_segment_at_commit(integer, integer, integer),
    @extschema@._add_partitions(integer, integer, integer),
    @extschema@._compact_partition(@extschema@.topic_catalog, integer, boolean),
    @extschema@._compact_segments(integer, integer, name[], bigint[], bigint[], bigint, timestamptz),
    @extschema@._compact_topic(integer, boolean),
    @extschema@._create_segment(integer, integer, integer, bigint),
    @extschema@._forget_topic(integer),
    @extschema@._group_lock_key(integer, text, integer),
    @extschema@._horizon(interval),
    @extschema@._lock_group_membership(integer, text),
    @extschema@._lock_group_partition(integer, text, integer),
    @extschema@._lock_maintenance(integer),
    @extschema@._lock_routing(integer, integer),
    @extschema@._maintain_topic(integer),
    @extschema@._partition_routing(text, integer),
    @extschema@._rebalance(integer, text, text),
    @extschema@._segment_data_bytes(name),
    @extschema@._segment_times(name),
    @extschema@._set_position(integer, text, integer, bigint, text),
    @extschema@._try_lock_group_membership(integer, text),
    @extschema@._try_lock_group_partition(integer, text, integer),
    @extschema@._try_lock_maintenance(integer)
  FROM PUBLIC;
