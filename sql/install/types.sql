/* ------------------------------------------------------------------------
 * Types
 * ------------------------------------------------------------------------ */

CREATE TYPE @extschema@.position AS (
    partition  integer,
    offset_id  bigint
);
COMMENT ON TYPE @extschema@.position IS
'where produce put a record: its partition and offset';

CREATE TYPE @extschema@.record AS (
    topic        text,
    partition    integer,
    offset_id    bigint,
    key          text,
    value        jsonb,
    headers      jsonb,
    event_time   timestamptz,
    append_time  timestamptz
);
COMMENT ON TYPE @extschema@.record IS
'a record of a topic as read returns it';

/* Binary topics (format 'binary'): Kafka's records, byte for byte. */
CREATE TYPE @extschema@.header AS (
    name   text,
    value  bytea
);
COMMENT ON TYPE @extschema@.header IS
'a header of a binary topic''s record: a name and a value (NULL or bytes); a record''s headers are an ordered array in which names may repeat, as in Kafka';

CREATE TYPE @extschema@.binary_record AS (
    topic        text,
    partition    integer,
    offset_id    bigint,
    key          bytea,
    value        bytea,
    headers      @extschema@.header[],
    event_time   timestamptz,
    append_time  timestamptz
);
COMMENT ON TYPE @extschema@.binary_record IS
'a record of a binary topic as read_binary returns it';

CREATE TYPE @extschema@.message AS (
    key          bytea,
    value        bytea,
    headers      @extschema@.header[],
    event_time   timestamptz
);
COMMENT ON TYPE @extschema@.message IS
'a record to append to a binary topic with produce_binary_batch (event_time NULL: the append time)';

/* ------------------------------------------------------------------------
 * Hashing
 * ------------------------------------------------------------------------ */

CREATE FUNCTION @extschema@.murmur2(key text)
RETURNS integer
AS 'MODULE_PATHNAME', 'el_murmur2_sql'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.murmur2(text) IS
'Kafka''s murmur2 hash of the key''s UTF-8 bytes (signed, as org.apache.kafka.common.utils.Utils.murmur2)';

CREATE FUNCTION @extschema@.partition_for_key(key text, partitions integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'el_partition_for_key_sql'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.partition_for_key(text, integer) IS
'the partition a key goes to in a topic of that many partitions: (murmur2(key) & 0x7fffffff) % partitions, as Kafka''s default partitioner';
