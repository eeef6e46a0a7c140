--
-- Idempotent producers: init_producer and the *_idempotent produce
-- functions (docs/delivery.md).  A retry of one of a producer's last 5
-- batches in a partition returns its original offsets and stores nothing;
-- a gap, a repeat that is not a kept batch, an older epoch, an unknown
-- producer and bad arguments are errors that store nothing.
--
\set SHOW_CONTEXT never

SELECT eventlog.create_topic('idem', 2);
SELECT eventlog.create_topic('idem.bin', 1, format => 'binary');

-- Records stored in a partition: what a duplicate must not add to.
CREATE FUNCTION idem_count(t text, p integer) RETURNS bigint
LANGUAGE sql AS $$ SELECT eventlog.high_watermark(t, p) $$;

-- 1. A producer: a new ID at epoch 0 each time, IDs never reused.
SELECT producer_id AS pid, epoch FROM eventlog.init_producer() \gset
SELECT :epoch AS epoch, (SELECT producer_id FROM eventlog.init_producer()) = :pid + 1 AS next_id_is_new;
SELECT pg_typeof(producer_id) AS id_type, pg_typeof(epoch) AS epoch_type FROM eventlog.init_producer();

-- 2. One record, then its retry: the same offset, stored once.
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 0}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 0);
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 0}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 0);
SELECT idem_count('idem', 0) AS stored;

-- 3. A batch (sequence numbers 1 to 3), its retry: the original offsets.
SELECT * FROM eventlog.produce_batch_idempotent('idem', ARRAY['a', 'b', 'c'],
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[], partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 1);
SELECT * FROM eventlog.produce_batch_idempotent('idem', ARRAY['a', 'b', 'c'],
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[], partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 1);
SELECT idem_count('idem', 0) AS stored;
-- A record of another producer in between: offsets differ from sequences.
SELECT * FROM eventlog.produce('idem', NULL, '{"plain": true}', partition => 0);
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 4}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 4);
-- The first batch is still kept (one of the last 5): its offset again.
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 0}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 0);
SELECT key, value FROM eventlog.read('idem', 0, 0);
SELECT first_sequence, last_sequence, first_offset, epoch
  FROM eventlog.producer_state WHERE producer_id = :pid;

-- 4. Errors, each storing nothing: a gap; a batch that starts where a kept
-- one starts but is not it; a repeat of a batch no longer kept.
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 6)$$, :pid));
SELECT * FROM expect_error(format($$SELECT eventlog.produce_batch_idempotent('idem', NULL,
    ARRAY['{}', '{}']::jsonb[], partition => 0, producer_id => %s, producer_epoch => 0, sequence => 1)$$, :pid));
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 2)$$, :pid));
SELECT count(*) AS five_batches
  FROM generate_series(5, 9) s,
       LATERAL eventlog.produce_idempotent('idem', 'k', format('{"n": %s}', s)::jsonb, partition => 0,
                    producer_id => :pid, producer_epoch => 0, sequence => s);
SELECT first_sequence, last_sequence FROM eventlog.producer_state WHERE producer_id = :pid;
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 0)$$, :pid));
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 9}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 9);
SELECT idem_count('idem', 0) AS stored;
-- Sequence numbers are per partition: partition 1 starts at 0.
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 1,
    producer_id => %s, producer_epoch => 0, sequence => 10)$$, :pid));
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{}', partition => 1,
    producer_id => :pid, producer_epoch => 0, sequence => 0);
-- Unknown producers, and an epoch the producer never had.
SELECT * FROM expect_error($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => -1, producer_epoch => 0, sequence => 0)$$);
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => %s, producer_epoch => 1, sequence => 10)$$, :pid));
SELECT idem_count('idem', 0) AS stored, idem_count('idem', 1) AS stored_1;

-- 5. Rolled back, a batch leaves no trace: its retry is stored.  In one
-- transaction, a retry returns what that transaction stored.
BEGIN;
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 10}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 10);
ROLLBACK;
BEGIN;
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 10}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 10);
SAVEPOINT s;
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 11}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 11);
ROLLBACK TO s;
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 10}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 10);
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"n": 11}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 11);
COMMIT;
SELECT offset_id, value FROM eventlog.read('idem', 0, 10);

-- 6. Sequence numbers wrap from 2147483647 to 0, as Kafka's: a batch
-- across the wrap, its retry, and the next one from 2.
UPDATE eventlog.producer_state SET last_sequence[5] = 2147483646,
                                   first_sequence[5] = 2147483646
 WHERE producer_id = :pid AND partition = 0;
SELECT * FROM eventlog.produce_batch_idempotent('idem', NULL, ARRAY['{"w": 1}', '{"w": 2}', '{"w": 3}']::jsonb[],
    partition => 0, producer_id => :pid, producer_epoch => 0, sequence => 2147483647);
SELECT * FROM eventlog.produce_batch_idempotent('idem', NULL, ARRAY['{"w": 1}', '{"w": 2}', '{"w": 3}']::jsonb[],
    partition => 0, producer_id => :pid, producer_epoch => 0, sequence => 2147483647);
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 0)$$, :pid));
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"w": 4}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 2);
SELECT first_sequence, last_sequence FROM eventlog.producer_state WHERE producer_id = :pid AND partition = 0;

-- 7. Fencing: init_producer with a transactional ID returns its producer
-- with the next epoch; the older epoch is refused, and the new one starts
-- each partition at sequence number 0.
SELECT producer_id AS tpid, epoch FROM eventlog.init_producer('app-1') \gset
SELECT :epoch AS first_epoch;
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"t": 0}', partition => 1,
    producer_id => :tpid, producer_epoch => 0, sequence => 0);
SELECT producer_id = :tpid AS same_producer, epoch FROM eventlog.init_producer('app-1');
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{"t": 1}', partition => 1,
    producer_id => %s, producer_epoch => 0, sequence => 1)$$, :tpid));
-- Even the retry of a batch the old epoch stored is refused.
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{"t": 0}', partition => 1,
    producer_id => %s, producer_epoch => 0, sequence => 0)$$, :tpid));
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{"t": 1}', partition => 1,
    producer_id => %s, producer_epoch => 1, sequence => 1)$$, :tpid));
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{"t": 1}', partition => 1,
    producer_id => :tpid, producer_epoch => 1, sequence => 0);
SELECT epoch, first_sequence FROM eventlog.producer_state WHERE producer_id = :tpid;
-- Out of epochs: a new producer ID, and the old one is gone.
UPDATE eventlog.producer_catalog SET epoch = 32766 WHERE producer_id = :tpid;
SELECT producer_id > :tpid AS new_id, epoch FROM eventlog.init_producer('app-1');
SELECT count(*) AS old_rows FROM eventlog.producer_catalog WHERE producer_id = :tpid;
SELECT count(*) AS old_state FROM eventlog.producer_state WHERE producer_id = :tpid;

-- 8. Bad arguments, refused before anything is looked up or stored.
SELECT * FROM expect_error($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => NULL, producer_epoch => 0, sequence => 0)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => 1, producer_epoch => NULL, sequence => 0)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => 1, producer_epoch => 0)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_idempotent('idem', 'k', '{}',
    producer_id => 1, producer_epoch => 0, sequence => 0)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => 1, producer_epoch => 0, sequence => -1)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => 1, producer_epoch => 32768, sequence => 0)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => 1, producer_epoch => -1, sequence => 0)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 7,
    producer_id => 1, producer_epoch => 0, sequence => 0)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_batch_idempotent('idem', NULL, '{}'::jsonb[], partition => 0,
    producer_id => 1, producer_epoch => 0, sequence => 0)$$);
SELECT * FROM expect_error($$SELECT eventlog.produce_binary_idempotent('idem', NULL, '\x00', partition => 0,
    producer_id => 1, producer_epoch => 0, sequence => 0)$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.init_producer('')$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.init_producer(repeat('x', 1001))$$);
BEGIN READ ONLY;
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 3)$$, :pid));
ROLLBACK;
-- A NULL transactional ID is none: a new producer.
SELECT producer_id > :pid AS new_id, epoch FROM eventlog.init_producer(NULL);
SELECT idem_count('idem', 0) AS stored;

-- 9. Binary topics: the same, with produce_binary_idempotent and
-- produce_binary_batch_idempotent (what the Kafka gateway will send).
SELECT producer_id AS bpid FROM eventlog.init_producer() \gset
SELECT * FROM eventlog.produce_binary_idempotent('idem.bin', '\x01', '\x02', partition => 0,
    producer_id => :bpid, producer_epoch => 0, sequence => 0);
SELECT * FROM eventlog.produce_binary_batch_idempotent('idem.bin',
    ARRAY[ROW('\x01', '\x03', NULL, NULL), ROW(NULL, NULL, NULL, NULL)]::eventlog.message[],
    0, :bpid, 0, 1);
SELECT * FROM eventlog.produce_binary_batch_idempotent('idem.bin',
    ARRAY[ROW('\x01', '\x03', NULL, NULL), ROW(NULL, NULL, NULL, NULL)]::eventlog.message[],
    0, :bpid, 0, 1);
SELECT * FROM eventlog.produce_binary_idempotent('idem.bin', '\x01', '\x02', partition => 0,
    producer_id => :bpid, producer_epoch => 0, sequence => 0);
SELECT offset_id, key, value FROM eventlog.read_binary('idem.bin', 0, 0);
-- Each function refuses the other format.
SELECT code FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem.bin', 'k', '{}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 3)$$, :bpid));

-- 10. Privileges.  A role that may produce nowhere gets no producer; one
-- without the topic's produce privilege gets nothing from a producer's
-- state (not even the offsets of a retry); a producer is its owner's.
CREATE ROLE regress_idem_app;
CREATE ROLE regress_idem_other;
SET ROLE regress_idem_other;
SELECT * FROM expect_error($$SELECT * FROM eventlog.init_producer()$$);
SELECT * FROM expect_error($$SELECT * FROM eventlog.init_producer('app-1')$$);
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{"n": 0}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 0)$$, :pid));
SELECT * FROM expect_error($$SELECT count(*) FROM eventlog.producer_state$$);
SELECT * FROM expect_error($$SELECT count(*) FROM eventlog.producer_catalog$$);
SELECT * FROM expect_error($$SELECT eventlog._lock_producer(1)$$);
SELECT * FROM expect_error($$SELECT eventlog._expire_producers('1 second')$$);
RESET ROLE;
SELECT eventlog.grant('idem', 'produce', 'regress_idem_app');
SELECT eventlog.grant('idem', 'produce', 'regress_idem_other');
SET ROLE regress_idem_app;
SELECT producer_id AS apid FROM eventlog.init_producer('app-2') \gset
SELECT * FROM eventlog.produce_idempotent('idem', NULL, '{"app": 0}', partition => 1,
    producer_id => :apid, producer_epoch => 0, sequence => 0);
SELECT * FROM eventlog.produce_idempotent('idem', NULL, '{"app": 0}', partition => 1,
    producer_id => :apid, producer_epoch => 0, sequence => 0);
-- Someone else's producer, or transactional ID.
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{"n": 0}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 0)$$, :pid));
SET ROLE regress_idem_other;
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', NULL, '{"app": 0}', partition => 1,
    producer_id => %s, producer_epoch => 0, sequence => 0)$$, :apid));
SELECT * FROM expect_error($$SELECT * FROM eventlog.init_producer('app-2')$$);
RESET ROLE;
SELECT epoch FROM eventlog.producer_catalog WHERE producer_id = :apid;
-- A member of the owner may use it; a superuser too.
GRANT regress_idem_app TO regress_idem_other;
SET ROLE regress_idem_other;
SELECT * FROM eventlog.produce_idempotent('idem', NULL, '{"app": 1}', partition => 1,
    producer_id => :apid, producer_epoch => 0, sequence => 1);
RESET ROLE;
SELECT * FROM eventlog.produce_idempotent('idem', NULL, '{"app": 1}', partition => 1,
    producer_id => :apid, producer_epoch => 0, sequence => 1);
SELECT value FROM eventlog.read('idem', 1, 0) WHERE value ? 'app';

-- 11. Dropping a topic drops its producers' state; the producers remain.
SELECT count(*) AS state_rows FROM eventlog.producer_state s
  JOIN eventlog.topic_catalog t USING (topic_id) WHERE t.name = 'idem';
SELECT eventlog.drop_topic('idem');
SELECT count(*) AS state_rows FROM eventlog.producer_state s
 WHERE NOT EXISTS (SELECT FROM eventlog.partition_catalog p
                    WHERE p.topic_id = s.topic_id AND p.partition = s.partition);
SELECT count(*) AS producers_left FROM eventlog.producer_catalog WHERE producer_id IN (:pid, :apid);
-- A topic created again under the name is new: its partitions start at 0.
SELECT eventlog.create_topic('idem', 1);
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 12)$$, :pid));
SELECT * FROM eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => :pid, producer_epoch => 0, sequence => 0);

-- 12. Expiry: the maintenance worker's function, with a short expiration.
SELECT eventlog._expire_producers('1 day') AS expired;
UPDATE eventlog.producer_catalog SET last_used = last_used - interval '2 days';
SELECT eventlog._expire_producers('1 day') AS expired_unused;
SELECT count(*) AS kept FROM eventlog.producer_catalog;
UPDATE eventlog.producer_state SET last_used = last_used - interval '2 days';
SELECT eventlog._expire_producers('1 day') AS expired_all;
SELECT count(*) AS producers, (SELECT count(*) FROM eventlog.producer_state) AS states
  FROM eventlog.producer_catalog;
SELECT * FROM expect_error(format($$SELECT eventlog.produce_idempotent('idem', 'k', '{}', partition => 0,
    producer_id => %s, producer_epoch => 0, sequence => 1)$$, :pid));

SELECT eventlog.drop_topic('idem');
SELECT eventlog.drop_topic('idem.bin');
DROP FUNCTION idem_count(text, integer);
DROP OWNED BY regress_idem_app, regress_idem_other;
DROP ROLE regress_idem_app, regress_idem_other;
