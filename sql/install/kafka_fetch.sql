/* ------------------------------------------------------------------------
 * Kafka's Fetch and ListOffsets, for the Kafka gateway: one call per
 * request.  They run as the caller (the gateway's session role), so
 * the checks of eventlog.read / read_binary / offset_for_time apply to its
 * privileges, and report each partition's outcome as a Kafka error code
 * instead of failing the whole request.
 * ------------------------------------------------------------------------ */

CREATE FUNCTION @extschema@._kafka_await(topics text[], partitions integer[], positions bigint[],
                                         timeout_ms integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_kafka_await'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_await(text[], integer[], bigint[], integer) IS
'internal: the long poll of the Kafka gateway''s Fetch over partitions of any topics: true as soon as one of partitions[i] of topics[i] has a readable record at or after positions[i] (or a topic was dropped), false after timeout_ms';

/*
 * Kafka Fetch: records of each (topics[i], partitions[i]) from offsets[i]
 * on, at most max_records[i] of them, and only while the bytes of the
 * records before a record (key, value and headers) are below max_bytes[i]
 * (NULL: no limit): the gateway sizes max_records from the records it saw
 * before, and a partition of records much larger than those must not send
 * it gigabytes to build a response of partition_max_bytes.  The same for
 * the response: once a record was read, an item reads only while the bytes
 * of every record read before are below total_max_bytes (NULL: no limit),
 * so that a Fetch of a thousand partitions stops reading at the response's
 * max_bytes; the call's first record is read whatever its size (Kafka
 * returns it, so that a consumer progresses).  Rows with
 * k_offset NULL give each
 * item's outcome: a Kafka error code (0, 1 OFFSET_OUT_OF_RANGE, 3
 * UNKNOWN_TOPIC_OR_PARTITION, 29 TOPIC_AUTHORIZATION_FAILED, -1 anything
 * else, logged as a warning), its log start offset and its last stable
 * offset, taken after its records were read, so every record returned lies
 * below it.  The others are records: timestamps are event_time, a JSON
 * topic's key and value their UTF-8 text, its headers object's members
 * headers (a string's text, null, or other JSON's text).  When no item has
 * a record or an error and wait_ms > 0, it long-polls (as _kafka_await)
 * and reads again.  In C (src/kafka_fetch.c): each partition is read as
 * read_binary (read) reads it, with its checks in its order, and only up to
 * the record that reaches max_bytes[i] or total_max_bytes; when the stable
 * offsets show nothing readable, it waits without reading first.  With
 * packed, an item's records come as a few rows (k_item, k_offset the
 * first record's, k_value) whose k_value holds the records one after the
 * other, each its offset, a byte of flags (1 time, 2 key, 4 value, 8
 * headers: which follow), the time's microseconds, then the key, value
 * and headers (their binary format) as a length and bytes: what the
 * gateway asks for, so that a record costs the backend no row of its own.
 */
CREATE FUNCTION @extschema@._kafka_fetch(topics text[], partitions integer[], offsets bigint[],
                                         max_records integer[], wait_ms integer,
                                         max_bytes bigint[] DEFAULT NULL,
                                         total_max_bytes bigint DEFAULT NULL,
                                         packed boolean DEFAULT false)
RETURNS TABLE (k_item integer, k_error smallint, k_log_start bigint, k_stable bigint,
               k_offset bigint, k_time timestamptz, k_key bytea, k_value bytea,
               k_headers @extschema@.header[])
AS 'MODULE_PATHNAME', 'el_kafka_fetch'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._kafka_fetch(text[], integer[], bigint[], integer[], integer, bigint[], bigint, boolean) IS
'internal: the Kafka gateway''s Fetch: the records of each partition from its offset on (up to max_bytes of them, and up to total_max_bytes over all; packed: many in a row), and each partition''s error code, log start and last stable offset, after a long poll of up to wait_ms when nothing is readable';

/*
 * Kafka ListOffsets: for each (topics[i], partitions[i], timestamps[i]),
 * -2 the log start offset, -1 the last stable offset, t >= 0 the first
 * offset whose append_time is at or after t (milliseconds since the epoch)
 * and that record's append_time, or offset -1 if there is none
 * (offset_for_time).  Error codes as in _kafka_fetch; another negative
 * timestamp gets 42 INVALID_REQUEST.
 */
CREATE FUNCTION @extschema@._kafka_list_offsets(topics text[], partitions integer[], timestamps bigint[])
RETURNS TABLE (k_item integer, k_error smallint, k_offset bigint, k_timestamp bigint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer := coalesce(array_length(topics, 1), 0);
    ts timestamptz;
    stable bigint;
    fmt text;
BEGIN
    IF coalesce(array_length(partitions, 1), 0) <> n OR coalesce(array_length(timestamps, 1), 0) <> n THEN
        RAISE EXCEPTION 'topics, partitions and timestamps must have the same length'
              USING ERRCODE = '2202E';
    END IF;
    FOR i IN 1..n LOOP
        k_item := i;
        k_error := 0;
        k_offset := -1;
        k_timestamp := -1;
        BEGIN
            SELECT c.format INTO fmt FROM @extschema@.topic_catalog c
             WHERE c.name OPERATOR(pg_catalog.=) topics[i];
            IF fmt IS NULL THEN
                k_error := 3;
            ELSIF timestamps[i] = -2 THEN
                k_offset := @extschema@.log_start_offset(topics[i], partitions[i]);
            ELSIF timestamps[i] = -1 THEN
                k_offset := @extschema@.last_stable_offset(topics[i], partitions[i]);
            ELSIF timestamps[i] < 0 THEN
                k_error := 42;
            ELSE
                -- The stable offset first: offset_for_time answers it (or more) when nothing is at or after t.
                stable := @extschema@.last_stable_offset(topics[i], partitions[i]);
                k_offset := @extschema@.offset_for_time(topics[i], partitions[i],
                                timestamptz 'epoch' + timestamps[i] * interval '1 millisecond');
                IF k_offset >= stable THEN
                    k_offset := -1;
                ELSE
                    IF fmt OPERATOR(pg_catalog.=) 'binary' THEN
                        SELECT r.append_time INTO ts
                          FROM @extschema@.read_binary(topics[i], partitions[i], k_offset, 1) r;
                    ELSE
                        SELECT r.append_time INTO ts
                          FROM @extschema@.read(topics[i], partitions[i], k_offset, 1) r;
                    END IF;
                    k_timestamp := floor(extract(epoch FROM ts) * 1000)::bigint;
                END IF;
            END IF;
        EXCEPTION
            WHEN undefined_object OR invalid_parameter_value THEN k_error := 3;
            WHEN insufficient_privilege THEN k_error := 29;
            WHEN numeric_value_out_of_range OR interval_field_overflow
                 OR datetime_field_overflow THEN k_error := 42;
            WHEN OTHERS THEN
                RAISE WARNING 'list offsets of partition % of topic % failed: %', partitions[i], topics[i], SQLERRM;
                k_error := -1;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_list_offsets(text[], integer[], bigint[]) IS
'internal: the Kafka gateway''s ListOffsets: each partition''s log start (-2), last stable offset (-1), or first offset at or after a time in milliseconds with its append time (-1 if none)';
