#!/usr/bin/python3
"""End-to-end latency: from a producer's COMMIT returning to a consumer
returning the record (test/bench/run, workload "e2e"; also runnable alone).

    e2e_latency.py METHOD [--rate 1000] [--seconds 5] [--conninfo ""] [--read-conninfo ""]
    e2e_latency.py listen --topic TOPIC [--conninfo ""]

METHOD is one of
  read-wait    eventlog.read(..., wait => '1 s') in a loop (long poll on a partition)
  poll-wait    eventlog.poll(..., wait => '1 s') in a loop (a consumer group's long poll;
               each call commits the group's position)
  listen-read  LISTEN on eventlog.channel(topic); eventlog.read without wait from its
               own position until it returns nothing, then wait for a notification
               (listen-poll without the group's position, so without a commit that
               waits for a WAL flush: the notifier's share of listen-poll)
  listen-poll  LISTEN on eventlog.channel(topic); eventlog.poll without wait until it
               returns nothing, then wait for a notification
  pgq          pgq.insert_event, and a consumer of next_batch / get_batch_events /
               finish_batch that sleeps 10 ms when there is no batch, with
               pgq.ticker() called every second (pgqd's default ticker_period)

One producer process sends single-record autocommit transactions at RATE per
second (paced, not bursting) for SECONDS; the record's value carries its
sequence number.  The producer notes CLOCK_MONOTONIC when each COMMIT has
returned, the consumer process when it has each record in hand; the latency
of a record is the difference.  It can be slightly negative: a commit is
visible to others a moment before the producer's client hears of it.  The
first 10% of records are a warm-up and not counted.

Prints one CSV line: method,rate,seconds,records,p50_ms,p99_ms,max_ms,missing,achieved
(missing: records the consumer never returned; must be 0; achieved: the
commits a second the producer managed, which is below RATE when a commit
takes longer than 1/RATE, e.g. a durable commit on a slow or busy disk: then
the latencies are those of that lower rate, and a warning says so on stderr).

"listen" is the LISTENing client of the notifications on/off workload: it
LISTENs on the topic's channel, prints "ready", consumes notifications
until SIGINT or SIGTERM, then prints how many it received.
"""
import argparse
import multiprocessing as mp
import select
import sys
import time

import psycopg

TOPIC = 'e2e'
QUEUE = 'q_e2e'
WAIT = "1 second"


def now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def setup(conninfo, method):
    with psycopg.connect(conninfo, autocommit=True) as c:
        if method == 'pgq':
            c.execute("SELECT pgq.drop_queue(%s, true) FROM pgq.queue WHERE queue_name = %s", (QUEUE, QUEUE))
            c.execute("SELECT pgq.create_queue(%s)", (QUEUE,))
            c.execute("SELECT pgq.register_consumer(%s, 'e2e')", (QUEUE,))
            c.execute("SELECT pgq.ticker(%s)", (QUEUE,))
        else:
            c.execute("SELECT eventlog.drop_topic(%s, if_exists => true)", (TOPIC,))
            c.execute("SELECT eventlog.create_topic(%s, 1)", (TOPIC,))
            c.execute("SELECT eventlog.create_group(%s, 'e2e', start_from => 'latest')", (TOPIC,))


def producer(conninfo, method, rate, count, start_at, out):
    times = [0.0] * count
    with psycopg.connect(conninfo, autocommit=True, prepare_threshold=0) as c:
        if method == 'pgq':
            sql = "SELECT pgq.insert_event('" + QUEUE + "', 'seq', %s::text)"
        else:
            sql = "SELECT eventlog.produce('" + TOPIC + "', NULL, %s::text::jsonb, partition => 0)"
        while now() < start_at:
            time.sleep(0.001)
        t0 = now()
        for i in range(count):
            due = t0 + i / rate
            delay = due - now()
            if delay > 0:
                time.sleep(delay)
            c.execute(sql, (i,))
            times[i] = now()
    out.send(times)


def ticker(conninfo, stop):
    with psycopg.connect(conninfo, autocommit=True) as c:
        while not stop.is_set():
            c.execute("SELECT pgq.ticker()")
            stop.wait(1.0)


def consume(conninfo, method, count, ready):
    """Returns recv[seq] = CLOCK_MONOTONIC when the consumer had record seq."""
    recv = [None] * count
    got = 0
    c = psycopg.connect(conninfo, autocommit=True, prepare_threshold=0)
    deadline = None

    def take(seqs):
        nonlocal got
        t = now()
        for s in seqs:
            s = int(s)
            if 0 <= s < count and recv[s] is None:
                recv[s] = t
                got += 1

    if method == 'read-wait':
        nxt = c.execute("SELECT eventlog.high_watermark(%s, 0)", (TOPIC,)).fetchone()[0]
        ready.set()
        while got < count:
            rows = c.execute("SELECT offset_id, value FROM eventlog.read(%s, 0, %s, 1000, wait => %s)",
                             (TOPIC, nxt, WAIT)).fetchall()
            if rows:
                take(r[1] for r in rows)
                nxt = rows[-1][0] + 1
            elif deadline is None or now() > deadline:
                deadline = deadline or now() + 10
                if now() > deadline:
                    break
    elif method == 'poll-wait':
        ready.set()
        idle = 0
        while got < count and idle < 10:
            rows = c.execute("SELECT value FROM eventlog.poll(%s, 'e2e', 1000, wait => %s)",
                             (TOPIC, WAIT)).fetchall()
            idle = 0 if rows else idle + 1
            take(r[0] for r in rows)
    elif method == 'listen-read':
        # As listen-poll below, with read from a position of its own.
        woken = []
        c.add_notify_handler(woken.append)
        chan = c.execute("SELECT eventlog.channel(%s)", (TOPIC,)).fetchone()[0]
        c.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(chan)))
        nxt = c.execute("SELECT eventlog.high_watermark(%s, 0)", (TOPIC,)).fetchone()[0]
        ready.set()
        idle = 0
        pg = c.pgconn
        while got < count and idle < 10:
            woken.clear()
            rows = c.execute("SELECT offset_id, value FROM eventlog.read(%s, 0, %s, 1000)",
                             (TOPIC, nxt)).fetchall()
            if rows:
                take(r[1] for r in rows)
                nxt = rows[-1][0] + 1
                continue
            if woken:
                continue
            if select.select([c.fileno()], [], [], 1.0)[0]:
                pg.consume_input()
                while pg.notifies() is not None:
                    pass
                idle = 0
            else:
                idle += 1
    elif method == 'listen-poll':
        # As docs/examples/consumer.py: psycopg reads notifications during
        # the poll's own query too, and hands them to the notify handler
        # (they never reach pgconn.notifies()).  Forget them just before
        # polling; one that arrives during or after a poll that found
        # nothing can announce a record that poll did not see: poll again.
        woken = []
        c.add_notify_handler(woken.append)
        chan = c.execute("SELECT eventlog.channel(%s)", (TOPIC,)).fetchone()[0]
        c.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(chan)))
        ready.set()
        idle = 0
        pg = c.pgconn
        while got < count and idle < 10:
            woken.clear()
            rows = c.execute("SELECT value FROM eventlog.poll(%s, 'e2e', 1000)", (TOPIC,)).fetchall()
            if rows:
                take(r[0] for r in rows)
                continue
            if woken:
                continue
            # Nothing readable: wait for a notification (1 s at most).
            if select.select([c.fileno()], [], [], 1.0)[0]:
                pg.consume_input()
                while pg.notifies() is not None:
                    pass
                idle = 0
            else:
                idle += 1
    elif method == 'pgq':
        ready.set()
        idle = 0
        while got < count and idle < 500:
            batch = c.execute("SELECT pgq.next_batch(%s, 'e2e')", (QUEUE,)).fetchone()[0]
            if batch is None:
                idle += 1
                time.sleep(0.01)
                continue
            idle = 0
            rows = c.execute("SELECT ev_data FROM pgq.get_batch_events(%s)", (batch,)).fetchall()
            take(r[0] for r in rows)
            c.execute("SELECT pgq.finish_batch(%s)", (batch,))
    c.close()
    return recv


def listen(conninfo, topic):
    import signal
    stop = []
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    c = psycopg.connect(conninfo, autocommit=True)
    chan = c.execute("SELECT eventlog.channel(%s)", (topic,)).fetchone()[0]
    c.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(chan)))
    print("ready", flush=True)
    n = 0
    pg = c.pgconn
    while not stop:
        try:
            readable = select.select([c.fileno()], [], [], 0.2)[0]
        except InterruptedError:
            continue
        if readable:
            pg.consume_input()
            while pg.notifies() is not None:
                n += 1
    print(n, flush=True)
    return 0


def percentile(sorted_values, p):
    if not sorted_values:
        return float('nan')
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * (len(sorted_values) - 1)))))
    return sorted_values[k]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('method', choices=['read-wait', 'poll-wait', 'listen-read', 'listen-poll', 'pgq',
                                       'listen'])
    ap.add_argument('--topic', default=TOPIC)
    ap.add_argument('--rate', type=float, default=1000)
    ap.add_argument('--seconds', type=float, default=5)
    ap.add_argument('--conninfo', default='')
    ap.add_argument('--read-conninfo', default=None,
                    help='read-wait only: the consumer reads here (a hot standby of --conninfo)')
    a = ap.parse_args()
    if a.method == 'listen':
        return listen(a.conninfo, a.topic)
    count = int(a.rate * a.seconds)

    setup(a.conninfo, a.method)
    read_conninfo = a.read_conninfo or a.conninfo
    if a.read_conninfo:
        # The standby must have replayed the topic setup() created.
        with psycopg.connect(a.conninfo, autocommit=True) as p, \
             psycopg.connect(a.read_conninfo, autocommit=True) as s:
            want = p.execute("SELECT topic_id FROM eventlog.topic_catalog WHERE name = %s", (TOPIC,)).fetchone()
            while s.execute("SELECT topic_id FROM eventlog.topic_catalog WHERE name = %s", (TOPIC,)).fetchone() != want:
                time.sleep(0.01)
    ctx = mp.get_context('fork')
    ready = ctx.Event()
    stop = ctx.Event()
    recv_end, send_end = ctx.Pipe(duplex=False)
    tick = None
    if a.method == 'pgq':
        tick = ctx.Process(target=ticker, args=(a.conninfo, stop))
        tick.start()
    # The consumer runs in this process; the producer starts once it is ready.
    prod = ctx.Process(target=lambda: (ready.wait(), producer(a.conninfo, a.method, a.rate, count,
                                                               now() + 0.2, send_end)))
    prod.start()
    recv = consume(read_conninfo, a.method, count, ready)
    sent = recv_end.recv()
    prod.join()
    if tick:
        stop.set()
        tick.join()

    skip = count // 10
    lat = sorted((recv[i] - sent[i]) * 1000.0 for i in range(skip, count) if recv[i] is not None)
    missing = sum(1 for i in range(count) if recv[i] is None)
    span = sent[-1] - sent[0] if count > 1 else 0
    achieved = (count - 1) / span if span > 0 else float('nan')
    if achieved < 0.9 * a.rate:
        print("e2e_latency: the producer managed %.0f commits/s, not %g" % (achieved, a.rate),
              file=sys.stderr)
    print("%s,%g,%g,%d,%.3f,%.3f,%.3f,%d,%.0f" % (a.method, a.rate, a.seconds, len(lat),
                                                  percentile(lat, 50), percentile(lat, 99),
                                                  lat[-1] if lat else float('nan'), missing, achieved))
    return 0 if missing == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
