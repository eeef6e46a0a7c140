#!/usr/bin/python3
"""A librdkafka producer (confluent_kafka) through the gateway against
eventlog.produce_batch from SQL: the same records (KEY_BYTES-byte keys,
VALUE_BYTES-byte values, a JSON string so that both can go to a JSON topic),
in batches of about BATCH records, all to partition 0 of a one-partition
topic, one transaction per batch on both sides and commits as durable
(acks=all -> synchronous_commit on; SQL: the server's default, on).

SQL: BATCH records per produce_batch call, arrays in libpq's binary format
(psycopg 3), one session.  Kafka: RECORDS records per round, produce() of
each then flush() (every delivery report received), linger.ms and
batch.num.messages set for BATCH-record batches; one connection, so one
gateway session.  Also the gateway to a binary topic against
produce_binary_batch.  Rounds alternate; the script prints each round's
records/s and the median ratios kafka / SQL (the issue's goal: >= 0.7).

Run by test/bench/kafka_produce.sh (which starts a server and a gateway);
settings in the environment: KAFKA_ADDR, BATCH (1000), RECORDS (100000),
VALUE_BYTES (100), KEY_BYTES (8), ROUNDS (5).
"""
import os
import statistics
import struct
import time

import psycopg
from psycopg import pq
from confluent_kafka import Producer

ADDR = os.environ["KAFKA_ADDR"]
BATCH = int(os.environ.get("BATCH", 1000))
RECORDS = int(os.environ.get("RECORDS", 100000))
VALUE_BYTES = int(os.environ.get("VALUE_BYTES", 100))
KEY_BYTES = int(os.environ.get("KEY_BYTES", 8))
ROUNDS = int(os.environ.get("ROUNDS", 5))

BYTEA, TEXT, JSONB, TIMESTAMPTZ = 17, 25, 3802, 1184


def array_send(elemtype, elems):
    out = [struct.pack("!iiIii", 1, 0, elemtype, len(elems), 1)]
    for e in elems:
        out.append(struct.pack("!i", len(e)) + e)
    return b"".join(out)


def record_send(fields):
    out = [struct.pack("!i", len(fields))]
    for oid, data in fields:
        out.append(struct.pack("!Ii", oid, -1 if data is None else len(data)))
        if data is not None:
            out.append(data)
    return b"".join(out)


def main():
    conn = psycopg.connect(autocommit=True)
    for t, fmt in (("sj", "json"), ("kj", "json"), ("sb", "binary"), ("kb", "binary")):
        conn.execute("SELECT eventlog.drop_topic(%s, if_exists => true)", (t,))
        conn.execute("SELECT eventlog.create_topic(%s, 1, format => %s)", (t, fmt))
    oids = dict(conn.execute("""
        SELECT t.typname, t.oid FROM pg_type t
         WHERE t.typnamespace = 'eventlog'::regnamespace
           AND t.typname IN ('message', '_message', '_header')""").fetchall())
    keys = [("k%0*d" % (KEY_BYTES - 1, i))[:KEY_BYTES].encode() for i in range(BATCH)]
    value = b'"' + b"x" * (VALUE_BYTES - 2) + b'"'
    json_params = [array_send(TEXT, keys), array_send(JSONB, [b"\x01" + value] * BATCH)]
    bin_params = [array_send(oids["message"],
                             [record_send([(BYTEA, k), (BYTEA, value), (oids["_header"], None),
                                           (TIMESTAMPTZ, None)]) for k in keys])]
    pgconn = conn.pgconn
    calls = RECORDS // BATCH

    def sql(binary):
        q, params, types = ((b"SELECT count(*) FROM eventlog.produce_binary_batch('sb', $1, 0)",
                             bin_params, [oids["_message"]]) if binary else
                            (b"SELECT count(*) FROM eventlog.produce_batch('sj', $1, $2, partition => 0)",
                             json_params, [1009, 3807]))
        start = time.perf_counter()
        for _ in range(calls):
            res = pgconn.exec_params(q, params, types, [1] * len(params), 0)
            if res.status != pq.ExecStatus.TUPLES_OK:
                raise RuntimeError(res.error_message.decode())
        return calls * BATCH / (time.perf_counter() - start)

    producer = Producer({"bootstrap.servers": ADDR, "acks": "all", "linger.ms": 50,
                         "batch.num.messages": BATCH, "queue.buffering.max.messages": 10 * RECORDS,
                         "enable.idempotence": False})
    errors = []

    def report(err, msg):
        if err is not None:
            errors.append(err)

    def kafka(binary):
        topic = "kb" if binary else "kj"
        produce = producer.produce
        start = time.perf_counter()
        for i in range(calls):
            for k in keys:
                produce(topic, value, k, 0, report)
            producer.poll(0)
        producer.flush(600)
        if errors:
            raise RuntimeError("delivery failed: %s" % errors[0])
        return calls * BATCH / (time.perf_counter() - start)

    # Warm up (plans, caches, connections).
    sql(False), sql(True), kafka(False), kafka(True)
    print(f"{RECORDS} records per side and round, batches of {BATCH}, key {KEY_BYTES} B, "
          f"value {VALUE_BYTES} B, acks=all vs synchronous_commit=on")
    ratios = {"json": [], "binary": []}
    for r in range(ROUNDS):
        for binary in ((False, True) if r % 2 == 0 else (True, False)):
            name = "binary" if binary else "json"
            if r % 2 == 0:
                s, k = sql(binary), kafka(binary)
            else:
                k, s = kafka(binary), sql(binary)
            ratios[name].append(k / s)
            print(f"round {r} {name:6}: SQL {s:,.0f} rec/s, gateway {k:,.0f} rec/s, ratio {k / s:.2f}")
    for name in ("json", "binary"):
        print(f"kafka produce ({name} topic) / SQL "
              f"{'produce_batch' if name == 'json' else 'produce_binary_batch'}: "
              f"median ratio {statistics.median(ratios[name]):.2f}")


if __name__ == "__main__":
    main()
