#!/usr/bin/python3
"""End-to-end latency of a stream processor run by the processor worker:
from a producer's COMMIT returning to a client hearing of the window row
that counts the record (issue 19: at 1,000 records/s with emit changes,
p50 <= 50 ms).  test/bench/streams_latency.sh starts a server and runs it.

    streams_latency.py [--rate 1000] [--seconds 10] [--conninfo ""]

The processor is a window processor with emit => 'changes' (1-hour
tumbling windows of processing time, no grouping: one sink row, updated by
every step), counting the records and keeping the largest sequence number
seen; nobody calls run_processor: the processor worker steps it as records
come.  A trigger on the sink NOTIFYs each new row value (its largest
sequence number) when the worker's step commits.

One producer process sends single-record autocommit transactions at RATE per
second (paced, not bursting) for SECONDS; the record's value carries its
sequence number.  The producer notes CLOCK_MONOTONIC when each COMMIT has
returned, the listening client when each notification arrives; a record's
latency is the time from its commit to the first notification whose largest
sequence number is at or past it.  The first 10% of records are a warm-up.

Prints one CSV line: rate,seconds,records,p50_ms,p99_ms,max_ms,missing,
achieved_rate (missing: records no notification covered, must be 0;
achieved_rate: the producer's commits a second, below RATE when the server
cannot commit that fast).
"""
import argparse
import multiprocessing as mp
import select
import sys
import time

import psycopg


def now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def setup(conninfo):
    with psycopg.connect(conninfo, autocommit=True) as c:
        c.execute("SELECT eventlog.drop_processor(name) FROM eventlog.processors WHERE name = 'latency'")
        c.execute("SELECT eventlog.drop_topic('latency', if_exists => true)")
        c.execute("SELECT eventlog.create_topic('latency', 1)")
        c.execute("DROP TABLE IF EXISTS latency_sink")
        c.execute("CREATE TABLE latency_sink (window_start timestamptz, window_end timestamptz,"
                  " n bigint, last numeric)")
        c.execute("""CREATE OR REPLACE FUNCTION latency_notify() RETURNS trigger LANGUAGE plpgsql AS $$
                     BEGIN PERFORM pg_notify('latency', NEW.last::text); RETURN NULL; END $$""")
        c.execute("CREATE TRIGGER latency_notify AFTER INSERT OR UPDATE ON latency_sink"
                  " FOR EACH ROW EXECUTE FUNCTION latency_notify()")
        c.execute("""SELECT eventlog.create_window_processor('latency', 'latency', 'latency_sink',
                         size => '1 hour', time_mode => 'processing', emit => 'changes',
                         group_by => '{}',
                         aggregates => ARRAY['count(*)', $$max((value->>'i')::numeric)$$],
                         start_from => 'latest')""")


def producer(conninfo, rate, count, start_at, out):
    times = [0.0] * count
    with psycopg.connect(conninfo, autocommit=True, prepare_threshold=0) as c:
        while now() < start_at:
            time.sleep(0.001)
        t0 = now()
        for i in range(count):
            due = t0 + i / rate
            delay = due - now()
            if delay > 0:
                time.sleep(delay)
            c.execute("SELECT eventlog.produce('latency', NULL, jsonb_build_object('i', %s::int), partition => 0)",
                      (i,))
            times[i] = now()
    out.send(times)


def listen(conninfo, count, ready):
    """Returns [(CLOCK_MONOTONIC, largest sequence number)] per notification."""
    seen = []
    c = psycopg.connect(conninfo, autocommit=True)
    c.execute("LISTEN latency")
    # The processor worker runs the processor: wait until it runs.
    while c.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_eventlog processors'"
                    " AND datname = current_database()").fetchone()[0] == 0:
        time.sleep(0.01)
    ready.set()
    pg = c.pgconn
    idle = 0
    while (not seen or seen[-1][1] < count - 1) and idle < 10:
        if select.select([c.fileno()], [], [], 1.0)[0]:
            pg.consume_input()
            t = now()
            while True:
                n = pg.notifies()
                if n is None:
                    break
                seen.append((t, int(float(n.extra.decode()))))
            idle = 0
        else:
            idle += 1
    c.close()
    return seen


def percentile(sorted_values, p):
    if not sorted_values:
        return float('nan')
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * (len(sorted_values) - 1)))))
    return sorted_values[k]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--rate', type=float, default=1000)
    ap.add_argument('--seconds', type=float, default=10)
    ap.add_argument('--conninfo', default='')
    a = ap.parse_args()
    count = int(a.rate * a.seconds)

    setup(a.conninfo)
    ctx = mp.get_context('fork')
    ready = ctx.Event()
    recv_end, send_end = ctx.Pipe(duplex=False)
    prod = ctx.Process(target=lambda: (ready.wait(), producer(a.conninfo, a.rate, count,
                                                               now() + 0.2, send_end)))
    prod.start()
    seen = listen(a.conninfo, count, ready)
    sent = recv_end.recv()
    prod.join()

    # A record's emit: the first notification covering its sequence number.
    recv = [None] * count
    j = 0
    for t, last in seen:
        while j < count and j <= last:
            recv[j] = t
            j += 1
    skip = count // 10
    lat = sorted((recv[i] - sent[i]) * 1000.0 for i in range(skip, count) if recv[i] is not None)
    missing = sum(1 for i in range(count) if recv[i] is None)
    achieved = (count - 1) / (sent[-1] - sent[0]) if count > 1 and sent[-1] > sent[0] else float('nan')
    print("rate,seconds,records,p50_ms,p99_ms,max_ms,missing,achieved_rate")
    print("%g,%g,%d,%.3f,%.3f,%.3f,%d,%.0f" % (a.rate, a.seconds, len(lat), percentile(lat, 50),
                                               percentile(lat, 99), lat[-1] if lat else float('nan'), missing,
                                               achieved))
    return 0 if missing == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
