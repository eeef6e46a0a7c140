#!/bin/bash
# End-to-end latency of a stream processor run by the processor worker
# (issue 19): from a producer's commit to the window row's update (emit
# changes) reaching a client, at RATE single-record commits a second for
# DURATION seconds.  Starts a throwaway server with test/bench/bench.conf (durable
# commits) and runs test/bench/streams_latency.py RUNS times; prints its
# CSV lines (p50_ms, p99_ms, max_ms) and the median p50 and p99.
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/streams_latency.sh
#
# Settings (environment): RATE (1000), DURATION (10, seconds), RUNS (3),
# EXTRA_CONF (lines appended to the server's settings, e.g. "fsync = off"
# where the disk cannot flush RATE commits a second: the script prints the
# rate the producer reached).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
RATE=${RATE:-1000}
DURATION=${DURATION:-10}
RUNS=${RUNS:-3}

PY=/usr/bin/python3   # Debian's, with python3-psycopg
el_ensure_packages python3-psycopg

conf=$(mktemp)
cat test/bench/bench.conf > "$conf"
echo "shared_preload_libraries = 'pg_eventlog'" >> "$conf"
[ -n "${EXTRA_CONF:-}" ] && printf '%s\n' "$EXTRA_CONF" >> "$conf"
el_start_server "$conf"
trap el_stop_server EXIT
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_eventlog'

out=$(mktemp)
for run in $(seq 1 "$RUNS"); do
    "$PY" test/bench/streams_latency.py --rate "$RATE" --seconds "$DURATION" | tail -1 | tee -a "$out"
done
"$PY" - "$out" <<'PY'
import statistics, sys
rows = [l.strip().split(',') for l in open(sys.argv[1]) if l.strip()]
print("median over %d runs: p50 %.1f ms, p99 %.1f ms" % (
    len(rows), statistics.median(float(r[3]) for r in rows), statistics.median(float(r[4]) for r in rows)))
PY
rm -f "$out" "$conf"
