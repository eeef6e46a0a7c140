--
-- Kafka transactions, SQL side: eventlog.kafka_producer_aborted, which the
-- gateway calls after it rolled back a transactional producer's
-- transaction (docs/delivery.md, "Kafka transactions"): the producer's
-- state in the partition moves past the sequence numbers rolled back, so
-- that its next batch, numbered on as Kafka clients do, is in order.
--
\set SHOW_CONTEXT never

SELECT eventlog.create_topic('ktx', 1);
SELECT producer_id AS pid, epoch FROM eventlog.init_producer('ktx-1') \gset
-- Errors without the producer id (it depends on the tests before).
CREATE FUNCTION pg_temp.err(sql text, pid bigint)
RETURNS TABLE (code text, message text, detail text)
LANGUAGE sql AS $$
    SELECT e.code, replace(e.message, 'producer ' || pid, 'producer P'), e.detail
      FROM expect_error(sql) e
$$;

-- Batches 0-2 committed; a transaction with 3-7 rolled back.
SELECT * FROM eventlog.produce_batch_idempotent('ktx', ARRAY['a', 'b', 'c'],
    ARRAY['1', '2', '3']::jsonb[], partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 0);
BEGIN;
SELECT count(*) FROM eventlog.produce_batch_idempotent('ktx', ARRAY['d', 'e', 'f', 'g', 'h'],
    ARRAY['4', '5', '6', '7', '8']::jsonb[], partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 3);
ROLLBACK;
-- Without the carry-over, 8 is out of order (the state says 3 is next).
SELECT * FROM pg_temp.err(format($$SELECT eventlog.produce_idempotent('ktx', 'i', '9', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 8)$$, :pid), :pid);
SELECT eventlog.kafka_producer_aborted(:pid, 0::smallint, 'ktx', 0, 7);
SELECT * FROM eventlog.produce_idempotent('ktx', 'i', '9', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 8);
-- The placeholder batch (7..7, offset -1) is no retry: a duplicate.
SELECT * FROM pg_temp.err(format($$SELECT eventlog.produce_idempotent('ktx', 'h', '8', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 7)$$, :pid), :pid);
-- A retry of the batch after it still is one.
SELECT * FROM eventlog.produce_idempotent('ktx', 'i', '9', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 8);
SELECT count(*) AS stored FROM eventlog.read('ktx', 0, 0);

-- Another epoch, an unknown producer, topic or partition: nothing done.
SELECT eventlog.kafka_producer_aborted(:pid, 1::smallint, 'ktx', 0, 100);
SELECT eventlog.kafka_producer_aborted(:pid + 1000, 0::smallint, 'ktx', 0, 100);
SELECT eventlog.kafka_producer_aborted(:pid, 0::smallint, 'nope', 0, 100);
SELECT eventlog.kafka_producer_aborted(:pid, 0::smallint, 'ktx', 5, 100);
SELECT s.epoch, s.first_sequence, s.last_sequence, s.first_offset
  FROM eventlog.producer_state s WHERE s.producer_id = :pid;

-- Bad arguments.
SELECT * FROM pg_temp.err(format($$SELECT eventlog.kafka_producer_aborted(%s, 0::smallint, 'ktx', 0, NULL)$$, :pid), :pid);
SELECT * FROM pg_temp.err(format($$SELECT eventlog.kafka_producer_aborted(%s, 0::smallint, 'ktx', 0, -1)$$, :pid), :pid);

-- Another role's producer: refused, and its state is untouched.
CREATE ROLE regress_ktx_other;
SELECT eventlog.grant('ktx', 'produce', 'regress_ktx_other');
SET ROLE regress_ktx_other;
SELECT * FROM pg_temp.err(format($$SELECT eventlog.kafka_producer_aborted(%s, 0::smallint, 'ktx', 0, 100)$$, :pid), :pid);
-- Nor can it write the state directly.
SELECT * FROM pg_temp.err(format($$SELECT eventlog._kafka_producer_aborted(%s, 0::smallint, 'ktx', 0, 100)$$, :pid), :pid);
RESET ROLE;
SELECT s.last_sequence FROM eventlog.producer_state s WHERE s.producer_id = :pid;

SELECT eventlog.drop_topic('ktx');
DROP OWNED BY regress_ktx_other;
DROP ROLE regress_ktx_other;
