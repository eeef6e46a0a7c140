#!/bin/bash
# Wake latency of LISTENing consumers (producer COMMIT -> notification ->
# record in hand, test/bench/e2e_latency.py listen-poll) with and without
# retention rounds running in the same database, and the duration of one
# round: the numbers behind "Why two workers per database, not one" in
# docs/design.md.  Run from the source tree after installing the build:
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/wake_during_retention.sh
#
# Needs /usr/bin/python3 with psycopg (Debian: python3-psycopg).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
conf=$(mktemp)
cat > "$conf" <<'C'
shared_preload_libraries = 'pg_eventlog'
max_worker_processes = 16
eventlog.maintenance_interval = '100ms'
fsync = off
C
el_start_server "$conf"
churn=
cleanup() { [ -z "$churn" ] || kill "$churn" 2>/dev/null || true; el_stop_server; rm -f "$conf"; }
trap cleanup EXIT
psql -X -q -c 'CREATE EXTENSION pg_eventlog'
PY=/usr/bin/python3
echo "== notifier alone (no retention rounds)"
for i in 1 2 3; do $PY test/bench/e2e_latency.py listen-poll --rate 1000 --seconds 5; done

# 200 topics whose segments roll every 100 ms and expire after 1 s, and a
# client producing one record to each every 100 ms: every maintenance round
# rolls and drops segment tables (DDL) in each of them.
psql -X -q -c "SELECT eventlog.create_topic('churn' || i, 1, retention => '1 second',
                 segment_interval => '100 milliseconds') FROM generate_series(1, 200) i" >/dev/null
( set +e
  while :; do
    # Two transactions: one may produce to eventlog.max_transaction_partitions (128).
    psql -X -q -c "SELECT count(*) FROM generate_series(1, 100) i, eventlog.produce('churn' || i, NULL, '1')" \
         -c "SELECT count(*) FROM generate_series(101, 200) i, eventlog.produce('churn' || i, NULL, '1')" >/dev/null 2>&1
    sleep 0.1
  done ) &
churn=$!
sleep 5
before=$(psql -X -At -c "SELECT rounds || ' rounds, ' || segments_rolled || ' rolled, ' || segments_removed || ' removed' FROM eventlog.maintenance")
t0=$(date +%s.%N)
echo "== notifier during retention rounds over 200 topics"
for i in 1 2 3; do $PY test/bench/e2e_latency.py listen-poll --rate 1000 --seconds 5; done
t1=$(date +%s.%N)
after=$(psql -X -At -c "SELECT rounds || ' rounds, ' || segments_rolled || ' rolled, ' || segments_removed || ' removed' FROM eventlog.maintenance")
echo "maintenance worker: $before -> $after in $(echo "$t1 - $t0" | bc) s"
echo "== one round over the 200 topics (what a merged worker would spend not notifying)"
for i in 1 2 3; do
    psql -X -At -c '\timing on' -c "SELECT count(*) FROM eventlog.enforce_retention()" | tail -1
done
