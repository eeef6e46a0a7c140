#!/usr/bin/python3
"""Kafka Fetch through the gateway (pg_eventlog_kafka) vs SQL reads.

    kafka_fetch.py throughput --gateway PATH [--records 1000000] [--rounds 3]
    kafka_fetch.py latency    --gateway PATH [--rate 1000] [--seconds 10] [--producer kafka|sql]
    kafka_fetch.py idle       --gateway PATH [--consumers 100] [--seconds 20] [--wait-ms 500] [--mock PATH]

The server is libpq's environment (PGHOST, PGPORT, PGDATABASE...), with
pg_eventlog preloaded and the extension created; test/bench/kafka_fetch.sh
starts a throwaway one and runs all three.  Each command starts its own
gateway on a free port.

throughput  RECORDS records of ~100 B values in a binary topic of one
            partition, read from offset 0 to the end by kcat (librdkafka:
            kcat -C -o beginning -e, output discarded), alternated with the
            same records read from SQL by psql (eventlog.read_binary in calls
            of 10,000 records, every row shipped to psql, output discarded).
            Prints each round's seconds and the median records/s of both,
            and the ratio kafka / sql (goal >= 0.7).
latency     one producer paced at RATE records a second, each record on its
            own: through the gateway (--producer kafka, the default: a
            confluent_kafka producer with acks=all and linger.ms 0, so each
            record is stored by a durable commit) or from SQL (--producer
            sql: psycopg, autocommit eventlog.produce_binary).  Each value
            carries CLOCK_MONOTONIC taken just before the record was handed
            to the producer; a confluent_kafka consumer (fetch.wait.max.ms
            500, so it long-polls in the server) takes it again when it has
            the record: latency = send -> consume, commit included.  The
            first 10% are a warm-up.  Prints p50, p99, max in ms (goal
            through the gateway: p50 <= 5, p99 <= 20).
idle        CONSUMERS confluent_kafka consumers (one process, each its own
            librdkafka instance) assigned to an empty topic, long-polling
            with fetch.wait.max.ms WAIT_MS; the CPU time of the gateway and of
            every PostgreSQL process over SECONDS, as a percentage of one
            core.  With --mock KAFKA_MOCK (test/t/kafka_mock.c, built),
            the same consumers then long-poll librdkafka's mock broker, a
            single-threaded C event loop, and its CPU is printed too: the
            cost of answering that many long polls with no database behind.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time

import psycopg


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_gateway(path):
    port = free_port()
    dsn = ' '.join('%s=%s' % (k, v) for k, v in (
        ('host', os.environ.get('PGHOST', '')), ('port', os.environ.get('PGPORT', '')),
        ('dbname', os.environ.get('PGDATABASE', 'postgres')), ('user', os.environ.get('PGUSER', '')))
        if v)
    log = open('/tmp/kafka_fetch_gateway.%d.log' % port, 'w')
    p = subprocess.Popen([path, '--listen', '127.0.0.1:%d' % port, '--dsn', dsn], stderr=log)
    for _ in range(100):
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            return p, '127.0.0.1:%d' % port
        except OSError:
            time.sleep(0.1)
    sys.exit('the gateway did not start')


def fill(conn, topic, n, parts=1):
    conn.execute("SELECT eventlog.drop_topic(%s) FROM eventlog.topic_catalog WHERE name = %s", (topic, topic))
    conn.execute("SELECT eventlog.create_topic(%s, %s, format => 'binary')", (topic, parts))
    done = 0
    while done < n:
        k = min(10000, n - done)
        conn.execute("""
            SELECT count(*) FROM eventlog.produce_binary_batch(%s,
              (SELECT array_agg(ROW(convert_to('key-' || i, 'UTF8'),
                                    convert_to(rpad('value-' || i, 100, 'x'), 'UTF8'), NULL, NULL)::eventlog.message)
                 FROM generate_series(%s::int, %s::int) i), 0)""", (topic, done, done + k - 1))
        done += k


def cmd_throughput(a):
    conn = psycopg.connect(autocommit=True)
    fill(conn, 'kbench', a.records)
    conn.execute('CHECKPOINT')
    gw, addr = start_gateway(a.gateway)
    # SQL: pgbench (it ships every row and discards it, as the benchmark
    # suite's read workload), calls of 10,000 records from random offsets.
    script = '/tmp/kafka_fetch_read.%d.sql' % os.getpid()
    with open(script, 'w') as f:
        f.write("\\set off random(0, %d)\n" % max(a.records - 10000, 0))
        f.write("SELECT * FROM eventlog.read_binary('kbench', 0, :off, 10000);\n")
    kafka, sqlt = [], []
    try:
        for r in range(a.rounds + 1):
            t = time.monotonic()
            out = subprocess.run(['kcat', '-C', '-b', addr, '-t', 'kbench', '-p', '0', '-o', 'beginning',
                                  '-e', '-q', '-f', '%o\n'], stdout=subprocess.PIPE, check=True).stdout
            tk = time.monotonic() - t
            got = out.count(b'\n')
            if got != a.records:
                sys.exit('kcat returned %d records, not %d' % (got, a.records))
            pb = subprocess.run(['pgbench', '-n', '-M', 'prepared', '-c', '1', '-T', str(max(int(tk) + 1, 3)),
                                 '-f', script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                check=True, text=True).stdout
            tps = float(re.search(r'tps = ([0-9.]+)', pb).group(1))
            ts = a.records / (tps * 10000)
            if r > 0:           # round 0 warms caches
                kafka.append(tk)
                sqlt.append(ts)
                print('round %d: kafka %.3f s, sql %.3f s (for %d records)' % (r, tk, ts, a.records), flush=True)
    finally:
        gw.terminate()
        gw.wait()
        os.unlink(script)
    mk, ms = statistics.median(kafka), statistics.median(sqlt)
    print('records=%d kafka_records_per_s=%.0f sql_records_per_s=%.0f ratio_kafka_over_sql=%.2f' % (
        a.records, a.records / mk, a.records / ms, ms / mk))


def paced(rate, seconds, send):
    """Calls send(i, value) RATE times a second for SECONDS; each value is
    "i t" with t the CLOCK_MONOTONIC just before the call."""
    n = int(rate * seconds)
    start = time.monotonic()
    for i in range(n):
        d = start + i / rate - time.monotonic()
        if d > 0:
            time.sleep(d)
        send(i, ('%d %.6f' % (i, time.monotonic())).encode())


def sql_producer(rate, seconds, addr):
    conn = psycopg.connect(autocommit=True)
    paced(rate, seconds, lambda i, v: conn.execute(
        "SELECT eventlog.produce_binary('klat', NULL, %s, partition => 0)", (v,)))


def kafka_producer(rate, seconds, addr):
    from confluent_kafka import Producer
    failed = []
    p = Producer({'bootstrap.servers': addr, 'acks': 'all', 'linger.ms': 0,
                  'enable.idempotence': False})

    def report(err, msg):
        if err is not None:
            failed.append(err)

    def send(i, v):
        p.produce('klat', v, None, 0, report)
        p.poll(0)
    paced(rate, seconds, send)
    p.flush(60)
    if failed:
        sys.exit('delivery failed: %s' % failed[0])


def cmd_latency(a):
    import multiprocessing as mp
    from confluent_kafka import Consumer, TopicPartition
    conn = psycopg.connect(autocommit=True)
    fill(conn, 'klat', 0)
    gw, addr = start_gateway(a.gateway)
    try:
        c = Consumer({'bootstrap.servers': addr, 'group.id': 'klat', 'enable.auto.commit': False,
                      'fetch.wait.max.ms': 500, 'fetch.min.bytes': 1})
        c.assign([TopicPartition('klat', 0, 0)])
        c.poll(1)
        p = mp.Process(target={'sql': sql_producer, 'kafka': kafka_producer}[a.producer],
                       args=(a.rate, a.seconds, addr))
        p.start()
        n = int(a.rate * a.seconds)
        lat = {}
        deadline = time.monotonic() + a.seconds + 30
        while len(lat) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            now = time.monotonic()
            i, sent = m.value().split()
            lat[int(i)] = (now - float(sent)) * 1000
        p.join()
        c.close()
        if p.exitcode != 0:
            sys.exit('the producer failed')
    finally:
        gw.terminate()
        gw.wait()
    ms = sorted(v for i, v in lat.items() if i >= n // 10)
    print('producer=%s rate=%d seconds=%d records=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f missing=%d' % (
        a.producer, a.rate, a.seconds, len(ms), ms[len(ms) // 2], ms[int(len(ms) * 0.99)], ms[-1],
        n - len(lat)))


def cpu_seconds(pids):
    total = 0.0
    tick = os.sysconf('SC_CLK_TCK')
    for pid in pids:
        try:
            with open('/proc/%d/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


def postgres_pids(conn):
    ppid = int(open(os.path.join(conn.execute('SHOW data_directory').fetchone()[0], 'postmaster.pid'))
               .readline())
    pids = [ppid]
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open('/proc/%s/stat' % d) as f:
                    if int(f.read().rsplit(')', 1)[1].split()[1]) == ppid:
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def idle_consumers(addr, n, wait_ms):
    """n confluent_kafka consumers of partition 0 of kidle, started and polled once"""
    from confluent_kafka import Consumer, TopicPartition
    consumers = []
    for i in range(n):
        c = Consumer({'bootstrap.servers': addr, 'group.id': 'kidle', 'enable.auto.commit': False,
                      'fetch.wait.max.ms': wait_ms})
        c.assign([TopicPartition('kidle', 0, 0)])
        consumers.append(c)
    for c in consumers:
        c.poll(0)
    return consumers


def idle_cpu(consumers, seconds, pids_of):
    """CPU seconds of pids_of() over `seconds` of the consumers polling, and the wall time"""
    c0, t0 = cpu_seconds(pids_of()), time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end:
        for c in consumers:
            c.poll(0)
        time.sleep(0.5)
    c1, t1 = cpu_seconds(pids_of()), time.monotonic()
    return c1 - c0, t1 - t0


def cmd_idle(a):
    conn = psycopg.connect(autocommit=True)
    fill(conn, 'kidle', 0)
    gw, addr = start_gateway(a.gateway)
    try:
        consumers = idle_consumers(addr, a.consumers, a.wait_ms)
        time.sleep(5)           # every consumer connected and waiting
        waiting = conn.execute("""SELECT count(*) FROM pg_stat_activity
                                   WHERE application_name = 'pg_eventlog_kafka'""").fetchone()[0]
        pids = postgres_pids(conn)
        p0 = cpu_seconds(pids)
        gcpu, wall = idle_cpu(consumers, a.seconds, lambda: [gw.pid])
        p1 = cpu_seconds(postgres_pids(conn))
        for c in consumers:
            c.close()
    finally:
        gw.terminate()
        gw.wait()
    line = 'consumers=%d sessions=%d wait_ms=%d seconds=%.0f gateway_cpu_pct=%.2f server_cpu_pct=%.2f' % (
        a.consumers, waiting, a.wait_ms, wall, 100 * gcpu / wall, 100 * max(p1 - p0, 0) / wall)
    # The same consumers against librdkafka's mock broker (test/t/kafka_mock.c:
    # a single-threaded C event loop that answers an empty Fetch after its
    # max_wait_ms, as Kafka does): what serving that many long polls costs a
    # broker that keeps no state on disk and no session in a database.
    if a.mock:
        mock = subprocess.Popen([a.mock, 'kidle:1'], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            boot = mock.stdout.readline().decode().strip()
            consumers = idle_consumers(boot, a.consumers, a.wait_ms)
            time.sleep(5)
            mcpu, mwall = idle_cpu(consumers, a.seconds, lambda: [mock.pid])
            for c in consumers:
                c.close()
        finally:
            mock.stdin.close()
            mock.wait()
        line += ' mock_broker_cpu_pct=%.2f' % (100 * mcpu / mwall)
    print(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('command', choices=['throughput', 'latency', 'idle'])
    ap.add_argument('--gateway', required=True)
    ap.add_argument('--records', type=int, default=1000000)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--rate', type=int, default=1000)
    ap.add_argument('--seconds', type=int, default=10)
    ap.add_argument('--consumers', type=int, default=100)
    ap.add_argument('--wait-ms', type=int, default=500)
    ap.add_argument('--producer', choices=['kafka', 'sql'], default='kafka')
    ap.add_argument('--mock', help='idle: also measure librdkafka\'s mock broker (a kafka_mock binary)')
    a = ap.parse_args()
    {'throughput': cmd_throughput, 'latency': cmd_latency, 'idle': cmd_idle}[a.command](a)


if __name__ == '__main__':
    main()
