#!/usr/bin/python3
"""Server CPU of a 1,000-record eventlog.read on a hot standby against the
primary (issue 20): one session on each side, alternating rounds of CALLS
calls at random offsets of topic 'rb' partition 0 (test/bench/standby.sh
loads it), each backend's CPU time read from /proc/PID/schedstat around
its round.  CPU per call does not count the time a backend waits for a
core, so it compares the two read paths on a shared machine, where wall
clock throughput mostly measures who got the cores.

    standby_read.py PRIMARY_DSN STANDBY_DSN [ROUNDS] [CALLS]

Prints per round and the medians:
    side,round,cpu_us_per_call,wall_us_per_call
    ratio,standby/primary cpu per call (median of per-round ratios),...
Servers and client must share the machine (the PIDs are read locally).
"""
import random
import statistics
import sys
import time

import psycopg

SQL = "SELECT count(*) FROM eventlog.read('rb', 0, %s, 1000)"


def cpu_ns(pid):
    with open('/proc/%d/schedstat' % pid) as f:
        return int(f.read().split()[0])


def main():
    primary, standby = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    calls = int(sys.argv[4]) if len(sys.argv) > 4 else 500
    hw = None
    sessions = {}
    for side, dsn in (('primary', primary), ('standby', standby)):
        c = psycopg.connect(dsn, autocommit=True)
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        hw = c.execute("SELECT eventlog.high_watermark('rb', 0)").fetchone()[0]
        # Warm up: caches, and the hint bits this side can set.
        for start in range(0, hw, 1000):
            c.execute(SQL, (start,)).fetchone()
        sessions[side] = (c, pid)
    cpu = {'primary': [], 'standby': []}
    wall = {'primary': [], 'standby': []}
    for r in range(rounds):
        order = ('primary', 'standby') if r % 2 == 0 else ('standby', 'primary')
        for side in order:
            c, pid = sessions[side]
            c0, t0 = cpu_ns(pid), time.monotonic()
            for _ in range(calls):
                c.execute(SQL, (random.randint(0, max(hw - 1000, 0)),)).fetchone()
            cpu[side].append((cpu_ns(pid) - c0) / calls / 1000.0)
            wall[side].append((time.monotonic() - t0) / calls * 1e6)
            print("%s,%d,%.0f,%.0f" % (side, r + 1, cpu[side][-1], wall[side][-1]))
    ratios = [s / p for p, s in zip(cpu['primary'], cpu['standby'])]
    print("median,primary,%.0f,%.0f" % (statistics.median(cpu['primary']), statistics.median(wall['primary'])))
    print("median,standby,%.0f,%.0f" % (statistics.median(cpu['standby']), statistics.median(wall['standby'])))
    print("ratio,standby/primary server CPU per call (median of per-round ratios),%.3f,"
          "i.e. standby read throughput per core %.3fx the primary's" %
          (statistics.median(ratios), 1 / statistics.median(ratios)))


if __name__ == '__main__':
    main()
