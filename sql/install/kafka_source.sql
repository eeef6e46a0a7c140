/* ------------------------------------------------------------------------
 * Positions of `pg_eventlog relay --from-kafka` (src/cli/relay_from_kafka.c,
 * docs/cli.md): per Kafka source (by default its cluster id), topic and
 * partition, the next Kafka offset to copy.  The relay writes a position
 * in the same transaction as the records it copied (produce_binary_batch),
 * so that a crash at any point leaves records and position together: a
 * restart resumes exactly after the last record stored (exactly once into
 * PostgreSQL).  User state: pg_dump keeps the rows.  Only roles that may
 * produce to the topic write them, through set_kafka_source_position
 * (gated, src/acl.c); everybody may read them, as group positions.
 * ------------------------------------------------------------------------ */

CREATE TABLE @extschema@.kafka_source_offsets (
    source        text NOT NULL
                  CHECK (source OPERATOR(pg_catalog.<>) '' AND pg_catalog.length(source) OPERATOR(pg_catalog.<=) 200),
    topic_id      integer NOT NULL,
    partition     integer NOT NULL,
    next_offset   bigint NOT NULL CHECK (next_offset OPERATOR(pg_catalog.>=) 0),
    updated_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (topic_id, partition, source),
    -- Dropping a topic (or its partitions) drops the positions copied into it.
    FOREIGN KEY (topic_id, partition) REFERENCES @extschema@.partition_catalog ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.kafka_source_offsets IS
'relay --from-kafka: per Kafka source, topic and partition, the next Kafka offset to copy, written in the transaction of the records copied (use eventlog.set_kafka_source_position)';
GRANT SELECT ON @extschema@.kafka_source_offsets TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.kafka_source_offsets', '');

CREATE VIEW @extschema@.kafka_source_positions AS
    SELECT s.source, t.name AS topic, s.partition, s.next_offset, s.updated_at
      FROM @extschema@.kafka_source_offsets s
      JOIN @extschema@.topic_catalog t USING (topic_id);
COMMENT ON VIEW @extschema@.kafka_source_positions IS
'relay --from-kafka: per Kafka source, topic and partition, the next Kafka offset to copy and when it was stored';
GRANT SELECT ON @extschema@.kafka_source_positions TO PUBLIC;

/*
 * A compare-and-set: the position moves from expected_offset (NULL: no
 * position stored yet) to next_offset, or the call fails.  Two relays of
 * the same source into the same partition would otherwise both copy the
 * same records: the second to commit finds the row changed (its UPDATE
 * waits for the first's row lock, then re-checks) and rolls back its
 * records with its position.
 */
CREATE FUNCTION @extschema@._set_kafka_source_position(source text, topic text, partition integer,
                                                      expected_offset bigint, next_offset bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tid integer;
    n bigint;
BEGIN
    IF source IS NULL OR topic IS NULL OR partition IS NULL OR next_offset IS NULL THEN
        RAISE EXCEPTION 'arguments must not be null' USING ERRCODE = 'null_value_not_allowed',
              DETAIL = 'Only expected_offset may be null (no position stored yet).';
    END IF;
    IF source = '' OR length(source) > 200 THEN
        RAISE EXCEPTION 'invalid Kafka source name "%"', left(source, 210)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A Kafka source name is 1 to 200 characters.';
    END IF;
    tid := @extschema@._authorize(topic, 'produce');
    IF next_offset < 0 OR expected_offset < 0 THEN
        RAISE EXCEPTION 'a Kafka offset must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.partition_catalog p
                    WHERE p.topic_id = tid AND p.partition = _set_kafka_source_position.partition) THEN
        RAISE EXCEPTION 'partition % of topic "%" does not exist', _set_kafka_source_position.partition, topic
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF expected_offset IS NULL THEN
        INSERT INTO @extschema@.kafka_source_offsets AS o (source, topic_id, partition, next_offset)
        VALUES (_set_kafka_source_position.source, tid, _set_kafka_source_position.partition,
                _set_kafka_source_position.next_offset)
        ON CONFLICT ON CONSTRAINT kafka_source_offsets_pkey DO NOTHING;
    ELSE
        UPDATE @extschema@.kafka_source_offsets AS o
           SET next_offset = _set_kafka_source_position.next_offset, updated_at = now()
         WHERE o.topic_id = tid AND o.partition = _set_kafka_source_position.partition
           AND o.source = _set_kafka_source_position.source
           AND o.next_offset = expected_offset;
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RAISE EXCEPTION 'the position of Kafka source "%" in topic "%" partition % is no longer %',
                        source, topic, _set_kafka_source_position.partition, coalesce(expected_offset::text, 'unset')
            USING ERRCODE = 'serialization_failure',
                  DETAIL = 'Another relay from the same Kafka source stored records into this partition.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@._set_kafka_source_position(text, text, integer, bigint, bigint) IS
'internal: the body of eventlog.set_kafka_source_position, run as the extension owner on behalf of the caller (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._set_kafka_source_position(text, text, integer, bigint, bigint) FROM PUBLIC;

CREATE FUNCTION @extschema@.set_kafka_source_position(source text, topic text, partition integer,
                                                     expected_offset bigint, next_offset bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.set_kafka_source_position(text, text, integer, bigint, bigint) IS
'relay --from-kafka: in the transaction that stored the records, moves the Kafka position of a source in a partition from expected_offset (NULL: none yet) to next_offset; fails (40001) if it is no longer expected_offset; needs the produce privilege';
