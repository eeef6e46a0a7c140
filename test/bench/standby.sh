#!/bin/bash
# Reads on a hot standby (issue 20): read throughput on the standby against
# the primary, and the end-to-end latency of a long poll on the standby
# against one on the primary (which bounds the publication lag), at 1,000
# single-record commits a second.  Alternating rounds, medians.
#
# Primary and standby share the machine's cores, so the wall-clock
# throughput (pgbench) of either side mostly says which got the cores
# during its round; the server CPU per call (standby_read.py, from
# /proc/PID/schedstat) compares the two read paths themselves.
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/standby.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/lib.sh
ROUNDS=${1:-5}
conf=$(mktemp)
cat >"$conf" <<CONF
shared_preload_libraries = 'pg_eventlog'
wal_level = replica
max_wal_senders = 4
hot_standby = on
CONF
el_start_server "$conf"
trap 'el_as_postgres pg_ctl -D "$EL_SERVER_DIR/standby" -m fast -w stop >/dev/null 2>&1 || true; el_stop_server' EXIT
SPORT=$((PGPORT + 1))
el_as_postgres pg_basebackup -h "$PGHOST" -p "$PGPORT" -D "$EL_SERVER_DIR/standby" -R -X stream >/dev/null
# Feedback: a long poll keeps its statement's snapshot while it waits, and
# without it the pruning of published_offsets on the primary stalls replay
# and cancels long polls (docs/operations.md).
printf 'port = %s\nhot_standby_feedback = on\n' "$SPORT" | el_as_postgres tee -a "$EL_SERVER_DIR/standby/postgresql.conf" >/dev/null
el_as_postgres pg_ctl -D "$EL_SERVER_DIR/standby" -l "$EL_SERVER_DIR/standby.log" -w start >/dev/null
P="host=$PGHOST port=$PGPORT user=postgres dbname=postgres"
S="host=$PGHOST port=$SPORT user=postgres dbname=postgres"

psql -X -q "$P" <<'SQL'
CREATE EXTENSION pg_eventlog;
SELECT eventlog.create_topic('rb', 1);
SELECT count(*) FROM eventlog.produce_batch('rb', NULL,
    (SELECT array_agg(jsonb_build_object('n', i, 'pad', repeat('x', 100))) FROM generate_series(1, 200000) i),
    partition => 0);
SQL
until [ "$(psql -X -At "$S" -c "SELECT eventlog.last_stable_offset('rb', 0)" 2>/dev/null)" = 200000 ]; do sleep 0.2; done

cat >"$EL_SERVER_DIR/read.sql" <<'SQL'
\set off random(0, 199000)
SELECT count(*) FROM eventlog.read('rb', 0, :off, 1000);
SQL
echo "read throughput (1,000-record reads, 1 client, 5 s, records/s; the side that starts alternates):"
ratios=()
for r in $(seq "$ROUNDS"); do
    sides="primary standby"; [ $((r % 2)) = 0 ] && sides="standby primary"
    for side in $sides; do
        c=$P; [ $side = standby ] && c=$S
        tps=$(pgbench -n -T 5 -c 1 -f "$EL_SERVER_DIR/read.sql" "$c" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
        eval "tps_$side=$tps"
        echo "  round $r $side $(echo "$tps * 1000" | bc)"
    done
    ratios+=("$(echo "scale=4; $tps_standby / $tps_primary" | bc)")
done
echo "  standby/primary, median of per-round ratios: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')"

echo "server CPU per 1,000-record read (side,round,cpu_us,wall_us; 500 calls a round):"
/usr/bin/python3 test/bench/standby_read.py "$P" "$S" $((ROUNDS * 2)) 500 | sed 's/^/  /'

echo "end-to-end latency at 1,000 commits/s (method,rate,seconds,records,p50_ms,p99_ms,max_ms,missing,achieved_rate):"
for r in $(seq "$ROUNDS"); do
    echo "  round $r primary  $(/usr/bin/python3 test/bench/e2e_latency.py read-wait --rate 1000 --seconds 5 --conninfo "$P")"
    echo "  round $r standby  $(/usr/bin/python3 test/bench/e2e_latency.py read-wait --rate 1000 --seconds 5 --conninfo "$P" --read-conninfo "$S")"
done
