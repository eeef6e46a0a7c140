#!/bin/bash
# Long polls on a hot standby (issue 20): woken by the replay of the
# primary's wake-up records (eventlog.standby_wakeup_rmgr_id = 128, the
# default) against the 2 ms replay-position poll (= 0, the fallback and
# what the standby did before).  For each, a fresh primary and standby
# built with pg_basebackup, alternating, ROUNDS times:
#   - CPU of 100 idle long polls on the standby over 10 s (their backends'
#     utime + stime, from /proc), in % of one core;
#   - commit -> read on the standby at 50 and at 1,000 single-record commits
#     a second (e2e_latency.py read-wait with a standby reader), p50/p99:
#     the publication lag as a consumer sees it.
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/standby_wakeup.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/lib.sh
ROUNDS=${1:-3}
IDLE=${EL_IDLE_POLLERS:-100}
HZ=$(getconf CLK_TCK)

stop_pair() {
    [ -n "${EL_SERVER_DIR:-}" ] || return 0
    el_as_postgres pg_ctl -D "$EL_SERVER_DIR/standby" -m immediate -w stop >/dev/null 2>&1 || true
    el_stop_server
}
trap stop_pair EXIT

# A primary and its standby with eventlog.standby_wakeup_rmgr_id = $1.
start_pair() {
    local conf
    conf=$(mktemp)
    cat >"$conf" <<CONF
shared_preload_libraries = 'pg_eventlog'
wal_level = replica
max_wal_senders = 4
hot_standby = on
max_connections = $((IDLE + 30))
eventlog.standby_wakeup_rmgr_id = $1
CONF
    el_start_server "$conf"
    rm -f "$conf"
    SPORT=$((PGPORT + 1))
    el_as_postgres pg_basebackup -h "$PGHOST" -p "$PGPORT" -D "$EL_SERVER_DIR/standby" -R -X stream >/dev/null
    # Feedback: a long poll holds its statement's snapshot while it waits, and
    # without it the primary's vacuum conflicts cancel idle long polls.
    printf 'port = %s\nhot_standby_feedback = on\n' "$SPORT" | el_as_postgres tee -a "$EL_SERVER_DIR/standby/postgresql.conf" >/dev/null
    el_as_postgres pg_ctl -D "$EL_SERVER_DIR/standby" -l "$EL_SERVER_DIR/standby.log" -w start >/dev/null
    P="host=$PGHOST port=$PGPORT user=postgres dbname=postgres"
    S="host=$PGHOST port=$SPORT user=postgres dbname=postgres"
    psql -X -q "$P" -c "CREATE EXTENSION pg_eventlog" -c "SELECT eventlog.create_topic('idle', 1)" >/dev/null
    until [ "$(psql -X -At "$S" -c "SELECT count(*) FROM eventlog.topic_catalog WHERE name = 'idle'" 2>/dev/null)" = 1 ]; do
        sleep 0.1
    done
}

# CPU (% of one core) of $IDLE long polls on the standby that nothing wakes.
idle_cpu() {
    local pids=() ticks0=0 ticks1=0 pid
    for _ in $(seq "$IDLE"); do
        psql -X -q "$S" -c "SELECT * FROM eventlog.read('idle', 0, 0, wait => '40 seconds')" >/dev/null 2>&1 &
        pids+=($!)
    done
    until [ "$(psql -X -At "$S" -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%eventlog.read(''idle''%' AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()")" = "$IDLE" ]; do
        sleep 0.2
    done
    mapfile -t backends < <(psql -X -At "$S" -c "SELECT pid FROM pg_stat_activity WHERE query LIKE '%eventlog.read(''idle''%' AND pid <> pg_backend_pid()")
    for pid in "${backends[@]}"; do ticks0=$((ticks0 + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
    sleep "${EL_IDLE_SECONDS:-10}"
    for pid in "${backends[@]}"; do ticks1=$((ticks1 + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0))); done
    psql -X -q "$S" -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%eventlog.read(''idle''%' AND pid <> pg_backend_pid()" >/dev/null
    wait "${pids[@]}" 2>/dev/null || true
    echo "scale=2; ($ticks1 - $ticks0) * 100 / $HZ / ${EL_IDLE_SECONDS:-10}" | bc
}

echo "mode,round,idle_cpu_pct_of_core,e2e_50/s(method,rate,seconds,records,p50_ms,p99_ms,max_ms,missing,achieved_rate),e2e_1000/s(...)"
for r in $(seq "$ROUNDS"); do
    for id in 0 128; do
        start_pair "$id"
        cpu=$(idle_cpu)
        slow=$(timeout 60 /usr/bin/python3 test/bench/e2e_latency.py read-wait --rate 50 --seconds ${EL_SLOW_SECONDS:-10} --conninfo "$P" --read-conninfo "$S" || echo timeout)
        fast=$(timeout 60 /usr/bin/python3 test/bench/e2e_latency.py read-wait --rate 1000 --seconds ${EL_FAST_SECONDS:-5} --conninfo "$P" --read-conninfo "$S" || echo timeout)
        mode=$([ "$id" = 0 ] && echo "poll-2ms" || echo "replay-wakeup")
        echo "$mode,$r,$cpu,$slow,$fast"
        stop_pair
    done
done
