/*
 * Reads on hot standbys (docs/design.md, "Reads on hot standbys").
 *
 * The primary's notifier publishes each partition's last stable offset
 * here, in a transaction of its own that begins after the records below
 * that offset committed: a standby snapshot that sees a published value
 * sees every record below it.  Derived state, not user data: pg_dump leaves
 * it out (a restored database publishes again as records come).  No
 * invalidation trigger: a publication changes no cached metadata.
 */
CREATE TABLE @extschema@.published_offsets (
    topic_id          integer NOT NULL,
    partition         integer NOT NULL,
    stable_offset     bigint NOT NULL,
    -- The partition's active segment when the offset was computed: every
    -- record below stable_offset lies in it or an older one.
    active_segment    integer NOT NULL,
    published_at      timestamptz NOT NULL,
    PRIMARY KEY (topic_id, partition),
    FOREIGN KEY (topic_id, partition)
        REFERENCES @extschema@.partition_catalog ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.published_offsets IS
'pg_eventlog: each partition''s last stable offset as the primary published it, what readers on hot standbys serve up to';
GRANT SELECT ON @extschema@.published_offsets TO PUBLIC;

CREATE VIEW @extschema@.stable_offset_publication AS
    SELECT t.name AS topic, o.partition,
           @extschema@.last_stable_offset(t.name, o.partition) AS last_stable_offset,
           o.stable_offset AS published_stable_offset,
           o.published_at,
           pg_catalog.now() OPERATOR(pg_catalog.-) o.published_at AS published_age
      FROM @extschema@.published_offsets o
      JOIN @extschema@.topic_catalog t USING (topic_id);
COMMENT ON VIEW @extschema@.stable_offset_publication IS
'per partition: the last stable offset here (on a standby, the published one), the one last published for standbys, and when';
GRANT SELECT ON @extschema@.stable_offset_publication TO PUBLIC;
