#!/usr/bin/python3
"""produce_binary_batch against produce_batch of the same sizes, as a client
sends them: BATCH records of a KEY_BYTES-byte key and a VALUE_BYTES-byte
value per call, the arrays sent in libpq's binary format (psycopg 3), one
transaction per call.  produce_batch gets text[] keys and jsonb[] values (a
JSON string of VALUE_BYTES bytes); produce_binary_batch an eventlog.message[]
of bytea keys and values.  The two alternate, ROUNDS rounds of CALLS calls
each; the script prints each round's records/s and the median ratio
binary / json.  Also read_binary against read of the records just written.

Run by test/bench/binary_batch.sh (which starts a server); settings in the
environment: BATCH (1000), VALUE_BYTES (100), KEY_BYTES (8), CALLS (50),
ROUNDS (7), PARTITIONS (4).
"""
import os
import statistics
import struct
import time

import psycopg
from psycopg import pq

BATCH = int(os.environ.get("BATCH", 1000))
VALUE_BYTES = int(os.environ.get("VALUE_BYTES", 100))
KEY_BYTES = int(os.environ.get("KEY_BYTES", 8))
CALLS = int(os.environ.get("CALLS", 50))
ROUNDS = int(os.environ.get("ROUNDS", 7))
PARTITIONS = int(os.environ.get("PARTITIONS", 4))

BYTEA, TEXT, JSONB, TIMESTAMPTZ = 17, 25, 3802, 1184


def array_send(elemtype, elems):
    """A one-dimensional array in PostgreSQL's binary format (array_recv)."""
    out = [struct.pack("!iiIii", 1, 0, elemtype, len(elems), 1)]
    for e in elems:
        out.append(struct.pack("!i", len(e)) + e)
    return b"".join(out)


def record_send(fields):
    """A composite in PostgreSQL's binary format (record_recv): (oid, bytes or None)."""
    out = [struct.pack("!i", len(fields))]
    for oid, data in fields:
        out.append(struct.pack("!Ii", oid, -1 if data is None else len(data)))
        if data is not None:
            out.append(data)
    return b"".join(out)


def main():
    conn = psycopg.connect(autocommit=True)
    conn.execute("SET synchronous_commit = off")
    for t, fmt in (("bj", "json"), ("bb", "binary")):
        conn.execute("SELECT eventlog.drop_topic(%s, if_exists => true)", (t,))
        conn.execute("SELECT eventlog.create_topic(%s, %s, format => %s)", (t, PARTITIONS, fmt))
    oids = dict(conn.execute("""
        SELECT t.typname, t.oid FROM pg_type t
         WHERE t.typnamespace = 'eventlog'::regnamespace
           AND t.typname IN ('message', '_message', 'header', '_header')""").fetchall())

    keys = [("k%0*d" % (KEY_BYTES - 1, i))[:KEY_BYTES].encode() for i in range(BATCH)]
    # produce_batch: text[] keys and jsonb[] values, a JSON string of
    # VALUE_BYTES bytes (jsonb's binary form is a version byte and the text).
    json_params = [array_send(TEXT, keys),
                   array_send(JSONB, [b"\x01" + b'"' + b"x" * (VALUE_BYTES - 2) + b'"'
                                      for _ in keys])]
    json_types = [1009, 3807]  # text[], jsonb[]
    # produce_binary_batch: eventlog.message[] of bytea keys and values.
    bin_params = [array_send(oids["message"],
                             [record_send([(BYTEA, k), (BYTEA, os.urandom(VALUE_BYTES)),
                                           (oids["_header"], None), (TIMESTAMPTZ, None)])
                              for k in keys])]
    bin_types = [oids["_message"]]

    json_sql = b"SELECT count(*) FROM eventlog.produce_batch('bj', $1, $2)"
    bin_sql = b"SELECT count(*) FROM eventlog.produce_binary_batch('bb', $1)"
    pgconn = conn.pgconn

    def run(call):
        sql, values, types = call
        start = time.perf_counter()
        for _ in range(CALLS):
            res = pgconn.exec_params(sql, values, types, [1] * len(values), 0)
            if res.status != pq.ExecStatus.TUPLES_OK:
                raise RuntimeError(res.error_message.decode())
            assert int(res.get_value(0, 0)) == BATCH
        return CALLS * BATCH / (time.perf_counter() - start)

    # Warm up both (plans, type caches, the first pages).
    run((json_sql, json_params, json_types))
    run((bin_sql, bin_params, bin_types))
    ratios = []
    print(f"batch {BATCH} records, key {KEY_BYTES} B, value {VALUE_BYTES} B, "
          f"{CALLS} calls per side and round, {PARTITIONS} partitions")
    for r in range(ROUNDS):
        if r % 2 == 0:
            j = run((json_sql, json_params, json_types))
            b = run((bin_sql, bin_params, bin_types))
        else:
            b = run((bin_sql, bin_params, bin_types))
            j = run((json_sql, json_params, json_types))
        ratios.append(b / j)
        print(f"round {r}: produce_batch {j:,.0f} rec/s, produce_binary_batch {b:,.0f} rec/s, "
              f"ratio {b / j:.2f}")
    print(f"produce: median ratio binary/json {statistics.median(ratios):.2f}")

    # Reads of the same records, partition 0 whole, counted on the server
    # (what the function costs, not a client's decoding of JSON).
    def read(fn, topic):
        sql = f"SELECT count(*) FROM eventlog.{fn}('{topic}', 0, 0, 100000000)".encode()
        start = time.perf_counter()
        res = pgconn.exec_(sql)
        if res.status != pq.ExecStatus.TUPLES_OK:
            raise RuntimeError(res.error_message.decode())
        n = int(res.get_value(0, 0))
        return n / (time.perf_counter() - start)

    read("read", "bj")
    read("read_binary", "bb")
    ratios = []
    for r in range(ROUNDS):
        if r % 2 == 0:
            j = read("read", "bj")
            b = read("read_binary", "bb")
        else:
            b = read("read_binary", "bb")
            j = read("read", "bj")
        ratios.append(b / j)
        print(f"round {r}: read {j:,.0f} rec/s, read_binary {b:,.0f} rec/s, ratio {b / j:.2f}")
    print(f"read: median ratio binary/json {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
