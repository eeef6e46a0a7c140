#!/usr/bin/python3
"""Idempotent against plain produce through the gateway (issue 16): two
librdkafka producers (confluent_kafka, acks=all), one with
enable.idempotence=true (InitProducerId, then every batch checked and
recorded by src/producer.c in its storing transaction), one without, each
sending RECORDS records of VALUE_BYTES bytes per round in batches of about
BATCH records to partition 0 of a binary topic of its own.  Rounds
alternate which goes first; the script prints each round's records/s and
the median ratio idempotent / plain (the issue's goal: >= 0.9).

Each round also prints the client's CPU time per producer (all of the
process's threads): librdkafka 2.0.2's idempotent producer sends one
Produce per partition at a time (its debug log alternates SEND and RECV
strictly, where the plain producer has up to 8 in flight here; librdkafka
PR #4989) and busy-polls its socket with a zero timeout while that one is
in flight (strace: ~17,500 poll(..., 0) calls per 20,000 records against
21), which on a small machine takes CPU from the gateway and PostgreSQL.  So
each round also runs a third producer, plain with max.in.flight=1 (one
Produce at a time, as the idempotent one sends), and the script prints
the median ratio against it too: what remains of the gap there is the
idempotent producer's own turnaround in librdkafka.  Measured from the
gateway's side (strace -f -tt -T of the gateway, 10,000 records in
batches of 1,000): per request the idempotent statement took 9.0 ms and
the whole request 11.5 ms (plain one-in-flight: 11.0 and 14.8 ms), but
after each response the gateway waited 6.5 ms (median) for the
idempotent producer's next request against 0.9 ms for the plain one.

Run by test/bench/kafka_gateway.sh with a gateway at KAFKA_ADDR and
libpq's environment for the topics; settings in the environment: BATCH
(1000), RECORDS (100000), VALUE_BYTES (100), ROUNDS (5).
"""
import os
import resource
import statistics
import time

import psycopg
from confluent_kafka import Producer

ADDR = os.environ["KAFKA_ADDR"]
BATCH = int(os.environ.get("BATCH", 1000))
RECORDS = int(os.environ.get("RECORDS", 100000))
VALUE_BYTES = int(os.environ.get("VALUE_BYTES", 100))
ROUNDS = int(os.environ.get("ROUNDS", 5))


def main():
    with psycopg.connect(autocommit=True) as conn:
        for t in ("kpi", "kpp", "kp1"):
            conn.execute("SELECT eventlog.drop_topic(%s, if_exists => true)", (t,))
            conn.execute("SELECT eventlog.create_topic(%s, 1, format => 'binary')", (t,))
    value = b"x" * VALUE_BYTES
    errors = []

    def report(err, msg):
        if err is not None:
            errors.append(err)

    cpus = {}

    def cpu_seconds():
        u = resource.getrusage(resource.RUSAGE_SELF)
        return u.ru_utime + u.ru_stime

    # idem: idempotent; plain; plain1: plain, one request in flight.
    producers = {}
    for kind in ("idem", "plain", "plain1"):
        conf = {"bootstrap.servers": ADDR, "acks": "all", "linger.ms": 50,
                "batch.num.messages": BATCH,
                "queue.buffering.max.messages": 10 * RECORDS,
                "enable.idempotence": kind == "idem"}
        if kind == "plain1":
            conf["max.in.flight"] = 1
        producers[kind] = Producer(conf)

    def run(kind):
        p = producers[kind]
        topic = {"idem": "kpi", "plain": "kpp", "plain1": "kp1"}[kind]
        start = time.perf_counter()
        cpu = cpu_seconds()
        for i in range(RECORDS):
            p.produce(topic, value, None, 0, report)
            if i % BATCH == 0:
                p.poll(0)
        p.flush(600)
        if errors:
            raise RuntimeError("delivery failed: %s" % errors[0])
        rate = RECORDS / (time.perf_counter() - start)
        cpus[kind] = cpu_seconds() - cpu
        return rate

    run("idem"), run("plain"), run("plain1")  # warm up: connections, InitProducerId, plans
    print(f"{RECORDS} records per producer and round, batches of {BATCH}, value {VALUE_BYTES} B, acks=all")
    ratios = []
    ratios1 = []
    for r in range(ROUNDS):
        if r % 2 == 0:
            i, p, p1 = run("idem"), run("plain"), run("plain1")
        else:
            p1, p, i = run("plain1"), run("plain"), run("idem")
        ratios.append(i / p)
        ratios1.append(i / p1)
        print(f"round {r}: plain {p:,.0f} rec/s, idempotent {i:,.0f} rec/s, ratio {i / p:.2f}"
              f" (client CPU: plain {cpus['plain']:.2f} s, idempotent {cpus['idem']:.2f} s);"
              f" plain with max.in.flight=1 {p1:,.0f} rec/s, ratio {i / p1:.2f}")
    print(f"kafka idempotent produce / plain produce: median ratio {statistics.median(ratios):.2f}")
    print(f"kafka idempotent produce / plain produce with one request in flight (as librdkafka's idempotent"
          f" producer sends): median ratio {statistics.median(ratios1):.2f}")


if __name__ == "__main__":
    main()
