/* ------------------------------------------------------------------------
 * Idempotent producers (docs/delivery.md, src/producer.c): a producer
 * identity (id, epoch) obtained with init_producer, and per producer and
 * partition the last 5 batches it stored, written in the producing
 * transaction, so that a retried batch returns its original offsets
 * instead of being stored twice.  The tables are user state: pg_dump keeps
 * their rows.  Only the extension owner writes them: init_producer through
 * the gate (src/acl.c), the produce_*_idempotent functions (C, run as the
 * caller) as the tables' owner, after their own privilege checks.
 * ------------------------------------------------------------------------ */

CREATE SEQUENCE @extschema@.producer_id_seq AS bigint;
COMMENT ON SEQUENCE @extschema@.producer_id_seq IS
'pg_eventlog producer IDs: never handed out twice, also after an expired producer is removed';

CREATE TABLE @extschema@.producer_catalog (
    producer_id       bigint PRIMARY KEY,
    -- The current epoch: a batch of an older one is fenced.
    epoch             smallint NOT NULL CHECK (epoch OPERATOR(pg_catalog.>=) 0),
    -- NULL for a plain idempotent producer; a transactional id names the
    -- producer across restarts of its client (init_producer bumps the epoch).
    transactional_id  text UNIQUE
                      CHECK (pg_catalog.octet_length(transactional_id) OPERATOR(pg_catalog.<=) 1000
                             AND transactional_id OPERATOR(pg_catalog.<>) ''),
    -- The role that obtained it: only it (its members, superusers) may use it.
    owner             regrole NOT NULL,
    -- When init_producer last returned it: the expiry counts from the later
    -- of this and the last batch stored (producer_state.last_used).
    last_used         timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE @extschema@.producer_catalog IS
'pg_eventlog idempotent producers: their current epoch, transactional id and owner (use eventlog.init_producer)';

CREATE TABLE @extschema@.producer_state (
    producer_id       bigint NOT NULL
                      REFERENCES @extschema@.producer_catalog ON DELETE CASCADE,
    topic_id          integer NOT NULL,
    partition         integer NOT NULL,
    -- The epoch of the batches below: a batch of a newer epoch starts again
    -- at sequence number 0 and replaces them.
    epoch             smallint NOT NULL,
    -- The last (at most 5) batches stored, oldest first: sequence numbers of
    -- the first and last record (they wrap from 2147483647 to 0) and the
    -- first record's offset (a batch's offsets are consecutive).
    first_sequence    integer[] NOT NULL,
    last_sequence     integer[] NOT NULL,
    first_offset      bigint[] NOT NULL,
    last_used         timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (producer_id, topic_id, partition),
    -- Dropping a topic drops its producers' state.
    FOREIGN KEY (topic_id, partition)
        REFERENCES @extschema@.partition_catalog ON DELETE CASCADE
) WITH (fillfactor = 50);
COMMENT ON TABLE @extschema@.producer_state IS
'pg_eventlog idempotent producers'' state per partition: the last 5 batches each producer stored, to recognise a retried one';
CREATE INDEX producer_state_topic ON @extschema@.producer_state (topic_id, partition);

SELECT pg_catalog.pg_extension_config_dump('@extschema@.producer_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.producer_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.producer_state', '');

/*
 * The producer's lock (pg_eventlog's kind 5, src/locks.h): produce takes it
 * shared, init_producer (bumping an epoch) and expiry exclusively, so that
 * once init_producer has returned a new epoch no batch of an older one can
 * still commit.
 */
CREATE FUNCTION @extschema@._lock_producer(producer_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'el_lock_producer'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._lock_producer(bigint) IS
'internal: takes a producer''s lock exclusively to the end of the transaction (waits for its producing transactions)';
REVOKE ALL ON FUNCTION @extschema@._lock_producer(bigint) FROM PUBLIC;

CREATE FUNCTION @extschema@._try_lock_producer(producer_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'el_try_lock_producer'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@._try_lock_producer(bigint) IS
'internal: takes a producer''s lock exclusively to the end of the transaction if no one holds it';
REVOKE ALL ON FUNCTION @extschema@._try_lock_producer(bigint) FROM PUBLIC;

CREATE FUNCTION @extschema@._init_producer(transactional_id text DEFAULT NULL,
                                           OUT producer_id bigint, OUT epoch smallint)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller regrole := @extschema@._caller();
    cur @extschema@.producer_catalog;
BEGIN
    IF transactional_id = '' OR octet_length(transactional_id) > 1000 THEN
        RAISE EXCEPTION 'invalid transactional ID'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A transactional ID is 1 to 1000 bytes long.';
    END IF;
    -- As Kafka 2.8 on: a role that may produce to some topic (or owns one);
    -- or that may create topics, which a client about to create the first
    -- topic of a database must be able to do with an idempotent producer.
    IF NOT EXISTS (SELECT FROM @extschema@.topic_catalog t
                    WHERE @extschema@.has_topic_privilege(caller, t.name, 'produce'))
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_proc f
                        WHERE f.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace
                          AND f.proname OPERATOR(pg_catalog.=) 'create_topic'
                          AND pg_catalog.has_function_privilege(caller, f.oid, 'EXECUTE')) THEN
        RAISE EXCEPTION 'permission denied to obtain a producer ID'
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Role "%s" may not produce to any topic, nor create one.', caller),
                  HINT = 'A topic''s owner can grant the produce privilege with eventlog.grant().';
    END IF;
    IF transactional_id IS NULL THEN
        INSERT INTO @extschema@.producer_catalog AS c (producer_id, epoch, owner)
        VALUES (nextval('@extschema@.producer_id_seq'), 0, caller)
        RETURNING c.producer_id, c.epoch INTO producer_id, epoch;
        RETURN;
    END IF;
    LOOP
        -- One init_producer at a time per transactional id: its row's lock,
        -- or, while there is no row, the unique index (an INSERT racing
        -- this one waits for it, then finds its row on the next turn).
        SELECT * INTO cur FROM @extschema@.producer_catalog c
         WHERE c.transactional_id = _init_producer.transactional_id FOR NO KEY UPDATE;
        IF FOUND THEN
            IF NOT pg_has_role(caller, cur.owner, 'USAGE') THEN
                RAISE EXCEPTION 'permission denied for transactional ID "%"', transactional_id
                    USING ERRCODE = 'insufficient_privilege',
                          DETAIL = 'Another role obtained a producer with this transactional ID; only it, its members and superusers may use it.';
            END IF;
            -- Fence the older epoch: wait for its producing transactions;
            -- batches of the old epoch that come later are refused.
            PERFORM @extschema@._lock_producer(cur.producer_id);
            IF cur.epoch < 32766 THEN
                UPDATE @extschema@.producer_catalog c
                   SET epoch = c.epoch + 1, last_used = now()
                 WHERE c.producer_id = cur.producer_id
                RETURNING c.producer_id, c.epoch INTO producer_id, epoch;
                RETURN;
            END IF;
            -- Out of epochs (as Kafka): a new producer ID.  The old one is
            -- removed with its state, so its clients find it unknown.
            DELETE FROM @extschema@.producer_catalog c WHERE c.producer_id = cur.producer_id;
        END IF;
        INSERT INTO @extschema@.producer_catalog AS c (producer_id, epoch, transactional_id, owner)
        VALUES (nextval('@extschema@.producer_id_seq'), 0, _init_producer.transactional_id, caller)
        ON CONFLICT ON CONSTRAINT producer_catalog_transactional_id_key DO NOTHING
        RETURNING c.producer_id, c.epoch INTO producer_id, epoch;
        EXIT WHEN FOUND;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@._init_producer(text) IS
'internal: the body of eventlog.init_producer, run as the extension owner on behalf of the caller eventlog.init_producer notes (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._init_producer(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.init_producer(transactional_id text DEFAULT NULL,
                                          OUT producer_id bigint, OUT epoch smallint)
RETURNS record
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.init_producer(text) IS
'returns a producer identity for the *_idempotent produce functions: a new producer ID at epoch 0, or, for a transactional ID already known, its producer ID with the next epoch, which fences the older one';

CREATE FUNCTION @extschema@.produce_idempotent(
    topic text,
    key text,
    value jsonb,
    headers jsonb DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz DEFAULT NULL,
    producer_id bigint DEFAULT NULL,
    producer_epoch integer DEFAULT NULL,
    sequence integer DEFAULT NULL)
RETURNS @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.produce_idempotent(text, text, jsonb, jsonb, integer, timestamptz, bigint, integer, integer) IS
'eventlog.produce with a producer''s sequence number (partition, producer_id, producer_epoch and sequence required): a retry of one of the producer''s last 5 batches in the partition returns its original position and stores nothing';

CREATE FUNCTION @extschema@.produce_batch_idempotent(
    topic text,
    key text[],
    value jsonb[],
    headers jsonb[] DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz[] DEFAULT NULL,
    producer_id bigint DEFAULT NULL,
    producer_epoch integer DEFAULT NULL,
    sequence integer DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.produce_batch_idempotent(text, text[], jsonb[], jsonb[], integer, timestamptz[], bigint, integer, integer) IS
'eventlog.produce_batch with a producer''s sequence numbers (sequence is the first record''s): a retry of one of the producer''s last 5 batches in the partition returns its original positions and stores nothing';

CREATE FUNCTION @extschema@.produce_binary_idempotent(
    topic text,
    key bytea,
    value bytea,
    headers @extschema@.header[] DEFAULT NULL,
    partition integer DEFAULT NULL,
    event_time timestamptz DEFAULT NULL,
    producer_id bigint DEFAULT NULL,
    producer_epoch integer DEFAULT NULL,
    sequence integer DEFAULT NULL)
RETURNS @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_binary'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.produce_binary_idempotent(text, bytea, bytea, @extschema@.header[], integer, timestamptz, bigint, integer, integer) IS
'eventlog.produce_binary with a producer''s sequence number: a retry of one of the producer''s last 5 batches in the partition returns its original position and stores nothing';

CREATE FUNCTION @extschema@.produce_binary_batch_idempotent(
    topic text,
    messages @extschema@.message[],
    partition integer DEFAULT NULL,
    producer_id bigint DEFAULT NULL,
    producer_epoch integer DEFAULT NULL,
    sequence integer DEFAULT NULL)
RETURNS SETOF @extschema@.position
AS 'MODULE_PATHNAME', 'el_produce_binary_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.produce_binary_batch_idempotent(text, @extschema@.message[], integer, bigint, integer, integer) IS
'eventlog.produce_binary_batch with a producer''s sequence numbers (sequence is the first record''s): a retry of one of the producer''s last 5 batches in the partition returns its original positions and stores nothing';

/*
 * Expiry, by the maintenance worker (maintenance.c, producer.c): producers
 * neither returned by init_producer nor used to store a batch for
 * "expiration" (eventlog.producer_id_expiration), with their state.  Each
 * under its row lock and its producer lock, both tried: a producer in use
 * right now is kept, and a batch after the expiry finds it unknown.
 */
CREATE FUNCTION @extschema@._expire_producers(expiration interval)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p bigint;
    n bigint := 0;
    horizon timestamptz := now() - expiration;
BEGIN
    FOR p IN SELECT c.producer_id FROM @extschema@.producer_catalog c
              WHERE c.last_used < horizon
                AND NOT EXISTS (SELECT FROM @extschema@.producer_state s
                                 WHERE s.producer_id = c.producer_id AND s.last_used >= horizon)
              ORDER BY c.producer_id
    LOOP
        -- In init_producer's order (the row, then the producer's lock),
        -- never waiting: a producer in use is kept.
        PERFORM FROM @extschema@.producer_catalog c WHERE c.producer_id = p
            FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        CONTINUE WHEN NOT @extschema@._try_lock_producer(p);
        -- Checked again under the lock, with this statement's fresh snapshot.
        DELETE FROM @extschema@.producer_catalog c
         WHERE c.producer_id = p AND c.last_used < horizon
           AND NOT EXISTS (SELECT FROM @extschema@.producer_state s
                            WHERE s.producer_id = c.producer_id AND s.last_used >= horizon);
        IF FOUND THEN
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END
$$;
COMMENT ON FUNCTION @extschema@._expire_producers(interval) IS
'internal: removes the producers unused for the given interval, with their state (the maintenance worker runs it with eventlog.producer_id_expiration)';
REVOKE ALL ON FUNCTION @extschema@._expire_producers(interval) FROM PUBLIC;

/*
 * Kafka transactions (src/kafka/txn.c): after the gateway rolled back a
 * producer's transaction, its state in each partition moves past the
 * sequence numbers of the batches rolled back (the ROLLBACK undid the
 * state they wrote), as Kafka keeps an aborted batch's numbers and its
 * clients number on after an abort.  The batches kept for retries are
 * replaced by one that no retry can match (offset -1): after EndTxn no
 * batch of the transaction is retried.  Nothing is done if the producer
 * is gone or has a newer epoch (whose numbers start at 0 again).
 */
CREATE FUNCTION @extschema@._kafka_producer_aborted(producer_id bigint, epoch smallint, topic text,
                                                    partition integer, last_sequence integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller regrole := @extschema@._caller();
    cur @extschema@.producer_catalog;
    tid integer;
BEGIN
    IF producer_id IS NULL OR epoch IS NULL OR topic IS NULL OR partition IS NULL
       OR last_sequence IS NULL THEN
        RAISE EXCEPTION 'arguments must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF last_sequence < 0 THEN
        RAISE EXCEPTION 'sequence number % is negative', last_sequence
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Against init_producer (which bumps the epoch) and the expiry.
    SELECT * INTO cur FROM @extschema@.producer_catalog c
     WHERE c.producer_id = _kafka_producer_aborted.producer_id FOR SHARE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF NOT pg_has_role(caller, cur.owner, 'USAGE') THEN
        RAISE EXCEPTION 'permission denied for producer %', producer_id
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Only the role that obtained a producer, its members and superusers may produce with it.';
    END IF;
    IF cur.epoch <> epoch THEN
        RETURN;
    END IF;
    SELECT t.topic_id INTO tid FROM @extschema@.topic_catalog t WHERE t.name = topic;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO @extschema@.producer_state AS s
           (producer_id, topic_id, partition, epoch, first_sequence, last_sequence, first_offset, last_used)
    SELECT cur.producer_id, tid, p.partition, epoch, ARRAY[last_sequence], ARRAY[last_sequence],
           ARRAY[-1::bigint], now()
      FROM @extschema@.partition_catalog p
     WHERE p.topic_id = tid AND p.partition = _kafka_producer_aborted.partition
    ON CONFLICT ON CONSTRAINT producer_state_pkey DO UPDATE
       SET epoch = excluded.epoch, first_sequence = excluded.first_sequence,
           last_sequence = excluded.last_sequence, first_offset = excluded.first_offset,
           last_used = excluded.last_used;
END
$$;
COMMENT ON FUNCTION @extschema@._kafka_producer_aborted(bigint, smallint, text, integer, integer) IS
'internal: the body of eventlog.kafka_producer_aborted, run as the extension owner on behalf of the caller (see src/acl.c)';
REVOKE ALL ON FUNCTION @extschema@._kafka_producer_aborted(bigint, smallint, text, integer, integer) FROM PUBLIC;

CREATE FUNCTION @extschema@.kafka_producer_aborted(producer_id bigint, epoch smallint, topic text,
                                                   partition integer, last_sequence integer)
RETURNS void
AS 'MODULE_PATHNAME', 'el_gate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.kafka_producer_aborted(bigint, smallint, text, integer, integer) IS
'Kafka gateway: after a producer''s transaction rolled back, carries its sequence numbers in the partition past the last one of the batches rolled back';
