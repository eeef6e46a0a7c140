/* ------------------------------------------------------------------------
 * Producing and reading (C: the hot paths)
 * ------------------------------------------------------------------------ */

CREATE FUNCTION @extschema@.produce(
    topic text,
    key text,
    value jsonb,
    headers jsonb DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz DEFAULT NULL)
RETURNS @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.produce(text, text, jsonb, jsonb, integer, timestamptz) IS
'appends a record to a topic in the caller''s transaction and returns its partition and offset; the key picks the partition (Kafka''s murmur2), NULL key goes round-robin';

CREATE FUNCTION @extschema@.produce_batch(
    topic text,
    key text[],
    value jsonb[],
    headers jsonb[] DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz[] DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.produce_batch(text, text[], jsonb[], jsonb[], integer, timestamptz[]) IS
'appends many records in one call (arrays of equal length, element i is record i) and returns their positions in input order';

CREATE FUNCTION @extschema@.read(
    topic text,
    partition integer,
    from_offset bigint,
    max_records integer DEFAULT 1000,
    wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.record
AS 'MODULE_PATHNAME', 'el_read'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.read(text, integer, bigint, integer, interval) IS
'returns up to max_records records of a partition from from_offset on, in offset order, never at or above the last stable offset; with wait, a long poll: when nothing is readable yet, sleeps until records become readable or the wait ends';

/*
 * Binary topics (format 'binary'): Kafka's records, byte for byte.  Named
 * apart from produce and read, so that produce with plain literals stays
 * unambiguous.
 */
CREATE FUNCTION @extschema@.produce_binary(
    topic text,
    key bytea,
    value bytea,
    headers @extschema@.header[] DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz DEFAULT NULL)
RETURNS @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_binary'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.produce_binary(text, bytea, bytea, @extschema@.header[], integer, timestamptz) IS
'appends a record to a binary topic in the caller''s transaction and returns its partition and offset; the key''s bytes pick the partition (Kafka''s murmur2), NULL key goes round-robin; NULL value is a tombstone';

CREATE FUNCTION @extschema@.produce_binary_batch(
    topic text,
    messages @extschema@.message[],
    partition integer DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_binary_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.produce_binary_batch(text, @extschema@.message[], integer) IS
'appends many records to a binary topic in one call and returns their positions in input order';

CREATE FUNCTION @extschema@.read_binary(
    topic text,
    partition integer,
    from_offset bigint,
    max_records integer DEFAULT 1000,
    wait interval DEFAULT NULL)
RETURNS SETOF @extschema@.binary_record
AS 'MODULE_PATHNAME', 'el_read_binary'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.read_binary(text, integer, bigint, integer, interval) IS
'eventlog.read for a binary topic: up to max_records records of a partition from from_offset on, in offset order, never at or above the last stable offset; with wait, a long poll';

CREATE FUNCTION @extschema@.channel(topic text)
RETURNS text
AS 'MODULE_PATHNAME', 'el_channel'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.channel(text) IS
'the LISTEN/NOTIFY channel on which the notifier announces a topic''s newly readable records: "eventlog.<topic>", or "eventlog.md5:<md5 of the name>" for names too long for a channel';

CREATE FUNCTION @extschema@._await_records(topic text, partitions integer[], positions bigint[],
                                           wait interval)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_await_records'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._await_records(text, integer[], bigint[], interval) IS
'internal: the long poll of eventlog.poll: true as soon as one of the partitions has a last stable offset above its position, false when the wait ends';

CREATE FUNCTION @extschema@.offset_for_time(topic text, partition integer, ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_offset_for_time'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.offset_for_time(text, integer, timestamptz) IS
'the first offset whose append_time is at or after ts, or the last stable offset if there is none (Kafka''s offsetsForTimes)';

CREATE FUNCTION @extschema@.last_stable_offset(topic text, partition integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_last_stable_offset_sql'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.last_stable_offset(text, integer) IS
'the lowest offset still held by an in-flight transaction, or the high watermark: readers see only offsets below it';

CREATE FUNCTION @extschema@.high_watermark(topic text, partition integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_high_watermark_sql'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.high_watermark(text, integer) IS
'the next offset the partition will assign';

CREATE FUNCTION @extschema@.log_start_offset(topic text, partition integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'el_log_start_offset_sql'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.log_start_offset(text, integer) IS
'the lowest offset the partition still stores (retention moves it forward)';

CREATE FUNCTION @extschema@._partition_state(
    topic text, partition integer,
    OUT high_watermark bigint, OUT last_stable_offset bigint,
    OUT stable_offset_holder_pid integer)
RETURNS record
AS 'MODULE_PATHNAME', 'el_partition_state'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._partition_state(text, integer) IS
'internal: a partition''s offsets from shared memory, and the PID of the session holding its stable offset back';
