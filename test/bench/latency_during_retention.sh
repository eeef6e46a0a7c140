#!/bin/bash
# Producer latency while the maintenance worker rolls and drops segments
# every 100 ms, vs while it is idle: the latency workload of test/bench/run
# (single-record produce, 4 clients, the same topics), measured so that a
# busy machine disturbs both sides alike.  One long pgbench run per round;
# eventlog.maintenance_interval switches between 1h (idle) and 100ms
# (retention) every PHASE seconds, each transaction counts for the phase it
# started in, and the first SKIP seconds after each switch are left out.
# Ratios are retention / idle within one run; the script prints each run and
# the medians.  Run from the source tree after installing the build:
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/latency_during_retention.sh
#
# Settings (environment): RUNS (3), SECONDS_PER_RUN (60), PHASE (2), SKIP
# (0.5), CLIENTS (4).  The server runs with test/bench/bench.conf (durable
# commits, as the benchmark's).  Needs /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
RUNS=${RUNS:-3}
RUN_SECONDS=${SECONDS_PER_RUN:-60}
PHASE=${PHASE:-2}
SKIP=${SKIP:-0.5}
CLIENTS=${CLIENTS:-4}
WORK=$(mktemp -d /tmp/pg_eventlog-latret.XXXXXX)
chmod 755 "$WORK"
cleanup() { el_stop_server; rm -rf "$WORK"; }
trap cleanup EXIT
el_start_server test/bench/bench.conf
sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# The topics test/bench/run has when its latency workload runs (each round
# visits them all), with a few records each, and "lat", which rolls every
# 100 ms and keeps 1 s of records.
sql >/dev/null <<'SQL'
CREATE EXTENSION pg_eventlog;
SELECT eventlog.create_topic('b1', 1);
SELECT eventlog.create_topic('b1k', 1);
SELECT eventlog.create_topic('one', 1);
SELECT eventlog.create_topic('p16', 16);
SELECT eventlog.create_topic('rd', 1);
SELECT eventlog.create_topic('ret', 1, retention => NULL, retention_bytes => 1,
                             segment_interval => '1 millisecond');
SELECT count(*) FROM generate_series(1, 2000) i, unnest(ARRAY['b1', 'b1k', 'one', 'p16', 'rd']) t,
       eventlog.produce(t, 'k' || i, '{"a": 1}');
SELECT eventlog.create_topic('lat', 1, retention => '1 second',
                             segment_interval => '100 milliseconds');
ALTER SYSTEM SET eventlog.maintenance_interval = '1h';
SELECT pg_reload_conf();
CHECKPOINT;
SQL
# The record of test/bench/run's latency-el.sql.
cat >"$WORK/produce.sql" <<'SQL'
\set id random(1, 1000000000)
SELECT eventlog.produce('lat', 'key-' || :id::bigint, format('{"id": %s, "user": "user-%s", "type": "view", "path": "/p/%s", "ref": "%s"}', :id::bigint, (:id::bigint) % 997, (:id::bigint) % 113, left(repeat(md5((:id::bigint)::text), 40), 20))::jsonb, partition => 0);
SQL
pgbench -n -M prepared -c "$CLIENTS" -j 2 -t 50 -f "$WORK/produce.sql" >/dev/null

counts() { sql -c "SELECT rounds || ' ' || segments_rolled || ' ' || segments_removed
                     FROM eventlog.maintenance WHERE database = current_database()"; }
echo "producer latency, $CLIENTS clients, $RUNS run(s) of ${RUN_SECONDS} s, phases of ${PHASE} s (first ${SKIP} s left out)"
for ((r = 1; r <= RUNS; r++)); do
    rm -f "$WORK"/lat.* "$WORK/phases"
    before=$(counts)
    pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$RUN_SECONDS" -l --log-prefix="$WORK/lat" \
        -f "$WORK/produce.sql" >/dev/null 2>&1 &
    bench=$!
    phase=idle
    end=$(( $(date +%s) + RUN_SECONDS - 1 ))
    while [ "$(date +%s)" -lt $end ]; do
        if [ $phase = idle ]; then phase=retention; interval=100ms; else phase=idle; interval=1h; fi
        sql -c "ALTER SYSTEM SET eventlog.maintenance_interval = '$interval'" -c "SELECT pg_reload_conf()" >/dev/null
        echo "$(date +%s.%N) $phase" >>"$WORK/phases"
        sleep "$PHASE"
    done
    wait $bench
    sql -c "ALTER SYSTEM SET eventlog.maintenance_interval = '1h'" -c "SELECT pg_reload_conf()" >/dev/null
    read -r b_rounds b_rolled b_removed <<<"$before"
    read -r a_rounds a_rolled a_removed <<<"$(counts)"
    /usr/bin/python3 - "$WORK" "$SKIP" "$r" "$((a_rounds - b_rounds))" "$((a_rolled - b_rolled))" \
        "$((a_removed - b_removed))" <<'PY' | tee -a "$WORK/results"
import bisect, glob, sys
work, skip, run = sys.argv[1], float(sys.argv[2]), sys.argv[3]
phases = [(float(t), p) for t, p in (l.split() for l in open(work + '/phases'))]
starts = [t for t, _ in phases]
lat = {'idle': [], 'retention': []}
for f in glob.glob(work + '/lat.*'):
    for line in open(f):
        x = line.split()
        ms = int(x[2]) / 1000.0
        start = int(x[4]) + int(x[5]) / 1e6 - ms / 1000.0
        i = bisect.bisect_right(starts, start) - 1
        if i < 0 or i + 1 >= len(starts) or start < starts[i] + skip:
            continue
        lat[phases[i][1]].append(ms)
def rank(v, p):
    v = sorted(v)
    return v[max(0, min(len(v) - 1, int(p * len(v) + 0.999999) - 1))]
i50, i99 = rank(lat['idle'], .5), rank(lat['idle'], .99)
r50, r99 = rank(lat['retention'], .5), rank(lat['retention'], .99)
print("run %s: idle %d tx p50 %.3f p99 %.3f ms | retention %d tx p50 %.3f p99 %.3f ms | "
      "p50 x idle %.2f p99 x idle %.2f | worker %s rounds, %s rolled, %s removed"
      % (run, len(lat['idle']), i50, i99, len(lat['retention']), r50, r99,
         r50 / i50, r99 / i99, sys.argv[4], sys.argv[5], sys.argv[6]))
PY
done
/usr/bin/python3 - "$WORK/results" <<'PY'
import re, statistics, sys
runs = [l for l in open(sys.argv[1]) if l.startswith('run ')]
p50 = [float(re.search(r'p50 x idle ([0-9.]+)', l).group(1)) for l in runs]
p99 = [float(re.search(r'p99 x idle ([0-9.]+)', l).group(1)) for l in runs]
print("median of %d run(s): p50 x idle %.2f, p99 x idle %.2f"
      % (len(runs), statistics.median(p50), statistics.median(p99)))
PY
