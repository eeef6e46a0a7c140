/* ------------------------------------------------------------------------
 * Kafka's Fetch and ListOffsets, for the Kafka gateway: one call per
 * request.  They run as the caller (the gateway's session role), so
 * eventlog.read / read_binary / offset_for_time check its privileges, and
 * report each partition's outcome as a Kafka error code instead of failing
 * the whole request.
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
 * it gigabytes to build a response of partition_max_bytes.  Rows with
 * k_offset NULL give each
 * item's outcome: a Kafka error code (0, 1 OFFSET_OUT_OF_RANGE, 3
 * UNKNOWN_TOPIC_OR_PARTITION, 29 TOPIC_AUTHORIZATION_FAILED, -1 anything
 * else, logged as a warning), its log start offset and its last stable
 * offset, taken after its records were read, so every record returned lies
 * below it.  The others are records: timestamps are event_time, a JSON
 * topic's key and value their UTF-8 text, its headers object's members
 * headers (a string's text, null, or other JSON's text).  When no item has
 * a record or an error and wait_ms > 0, it long-polls (_kafka_await) and
 * reads again.
 */
CREATE FUNCTION @extschema@._kafka_fetch(topics text[], partitions integer[], offsets bigint[],
                                         max_records integer[], wait_ms integer,
                                         max_bytes bigint[] DEFAULT NULL)
RETURNS TABLE (k_item integer, k_error smallint, k_log_start bigint, k_stable bigint,
               k_offset bigint, k_time timestamptz, k_key bytea, k_value bytea,
               k_headers @extschema@.header[])
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer := coalesce(array_length(topics, 1), 0);
    errs smallint[];
    fmt text;
    got bigint := 0;
    cnt bigint;
BEGIN
    IF coalesce(array_length(partitions, 1), 0) <> n OR coalesce(array_length(offsets, 1), 0) <> n
       OR coalesce(array_length(max_records, 1), 0) <> n THEN
        RAISE EXCEPTION 'topics, partitions, offsets and max_records must have the same length'
              USING ERRCODE = '2202E';
    END IF;
    errs := array_fill(0::smallint, ARRAY[n]);
    FOR pass IN 1..2 LOOP
        FOR i IN 1..n LOOP
            CONTINUE WHEN errs[i] <> 0;
            BEGIN
                SELECT c.format INTO fmt FROM @extschema@.topic_catalog c
                 WHERE c.name OPERATOR(pg_catalog.=) topics[i];
                IF fmt IS NULL THEN
                    errs[i] := 3;
                ELSIF fmt OPERATOR(pg_catalog.=) 'binary' THEN
                    RETURN QUERY
                        SELECT i, 0::smallint, NULL::bigint, NULL::bigint, r.offset_id, r.event_time,
                               r.key, r.value, r.headers
                          FROM (SELECT b.*, coalesce(sum(coalesce(octet_length(b.key), 0)
                                                         + coalesce(octet_length(b.value), 0)
                                                         + coalesce(pg_column_size(b.headers), 0))
                                                       OVER (ORDER BY b.offset_id ROWS BETWEEN UNBOUNDED PRECEDING
                                                                                 AND 1 PRECEDING), 0) AS run_bytes
                                  FROM @extschema@.read_binary(topics[i], partitions[i], offsets[i], max_records[i]) b) r
                         WHERE max_bytes[i] IS NULL OR r.run_bytes < max_bytes[i]
                         ORDER BY r.offset_id;
                    GET DIAGNOSTICS cnt = ROW_COUNT;
                    got := got + cnt;
                ELSE
                    RETURN QUERY
                        SELECT i, 0::smallint, NULL::bigint, NULL::bigint, r.offset_id, r.event_time,
                               convert_to(r.key, 'UTF8'), convert_to(r.value::text, 'UTF8'),
                               CASE WHEN jsonb_typeof(r.headers) OPERATOR(pg_catalog.=) 'object' THEN
                                   ARRAY(SELECT ROW(h.key,
                                                    CASE jsonb_typeof(h.value)
                                                        WHEN 'null' THEN NULL
                                                        WHEN 'string' THEN convert_to(h.value #>> '{}', 'UTF8')
                                                        ELSE convert_to(h.value::text, 'UTF8') END
                                                    )::@extschema@.header
                                           FROM jsonb_each(r.headers) h)
                               END
                          FROM (SELECT j.*, coalesce(sum(coalesce(octet_length(j.key), 0)
                                                         + coalesce(octet_length(j.value::text), 0)
                                                         + coalesce(octet_length(j.headers::text), 0))
                                                       OVER (ORDER BY j.offset_id ROWS BETWEEN UNBOUNDED PRECEDING
                                                                                 AND 1 PRECEDING), 0) AS run_bytes
                                  FROM @extschema@.read(topics[i], partitions[i], offsets[i], max_records[i]) j) r
                         WHERE max_bytes[i] IS NULL OR r.run_bytes < max_bytes[i]
                         ORDER BY r.offset_id;
                    GET DIAGNOSTICS cnt = ROW_COUNT;
                    got := got + cnt;
                END IF;
            EXCEPTION
                WHEN undefined_object THEN errs[i] := 3;
                WHEN invalid_parameter_value THEN
                    -- A partition that does not exist; a negative offset.
                    errs[i] := CASE WHEN offsets[i] < 0 THEN 1 ELSE 3 END;
                WHEN insufficient_privilege THEN errs[i] := 29;
                WHEN numeric_value_out_of_range THEN errs[i] := 1;
                WHEN OTHERS THEN
                    RAISE WARNING 'fetch of partition % of topic % failed: %', partitions[i], topics[i], SQLERRM;
                    errs[i] := -1;
            END;
        END LOOP;
        EXIT WHEN pass = 2 OR got > 0 OR coalesce(wait_ms, 0) <= 0 OR n = 0 OR 0 <> ANY (errs);
        BEGIN
            PERFORM @extschema@._kafka_await(topics, partitions, offsets, wait_ms);
        EXCEPTION
            -- A topic dropped or a privilege revoked meanwhile: the second pass says so.
            WHEN undefined_object OR insufficient_privilege OR invalid_parameter_value THEN NULL;
        END;
    END LOOP;
    FOR i IN 1..n LOOP
        k_item := i;
        k_log_start := NULL;
        k_stable := NULL;
        IF errs[i] IN (0, 1) AND offsets[i] >= 0 THEN
            BEGIN
                k_stable := @extschema@.last_stable_offset(topics[i], partitions[i]);
                k_log_start := @extschema@.log_start_offset(topics[i], partitions[i]);
            EXCEPTION
                WHEN undefined_object OR invalid_parameter_value THEN
                    errs[i] := CASE WHEN errs[i] = 0 THEN 3 ELSE errs[i] END;
            END;
        END IF;
        k_error := errs[i];
        k_offset := NULL;
        k_time := NULL;
        k_key := NULL;
        k_value := NULL;
        k_headers := NULL;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_fetch(text[], integer[], bigint[], integer[], integer, bigint[]) IS
'internal: the Kafka gateway''s Fetch: the records of each partition from its offset on (up to max_bytes of them), and each partition''s error code, log start and last stable offset, after a long poll of up to wait_ms when nothing is readable';

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
