#!/bin/bash
# Log compaction (issue 17), two measurements:
#
# 1. Compacting 1,000,000 records over 10,000 keys (~120 B JSON values, one
#    sealed segment) with eventlog.compact, vs rewriting the same rows in a
#    plain table the way one would by hand: CREATE TABLE AS SELECT DISTINCT
#    ON (key) ... ORDER BY key, offset_id DESC, plus its primary key (the
#    compacted segment has one too).  Time (psql's \timing) and WAL bytes
#    (pg_current_wal_insert_lsn before and after) as the I/O measure; the
#    two run in alternating order, RUNS times, each on fresh copies.
# 2. Producer latency (single-record produce, CLIENTS clients, pgbench -l)
#    while compaction rounds run back to back on other topics, vs idle
#    phases of the same pgbench run: p50 and p99 of the transactions that
#    started in each kind of phase.
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/compaction.sh
#   test/bench/compaction.sh smoke|quick|full OUT    (from test/bench/run)
#
# Standalone, it starts a server with test/bench/bench.conf (durable
# commits).  With MODE and OUT, test/bench/run runs it on its server
# (libpq's environment, exported by el_start_server) in a database of its
# own, at a size for the mode (quick: 200,000 records over 2,000 keys), and
# it writes OUT/compaction.csv and appends its rows to OUT/results.md.
#
# Settings (environment): RUNS (3), RECORDS (1000000), KEYS (10000),
# LAT_SECONDS (40), LAT_RECORDS (200000, per topic of the latency phases),
# CLIENTS (4).  Needs /usr/bin/python3.  Run from the source tree after
# installing the build.
set -euo pipefail
MODE=${1:-}
OUT=${2:-}
cd "$(dirname "$0")/../.."
case $MODE in
    '')    export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH ;;
    smoke) : "${RUNS:=1}" "${RECORDS:=20000}" "${KEYS:=1000}" "${LAT_SECONDS:=6}" "${LAT_RECORDS:=10000}" ;;
    quick) : "${RUNS:=3}" "${RECORDS:=200000}" "${KEYS:=2000}" "${LAT_SECONDS:=12}" "${LAT_RECORDS:=50000}" ;;
    full)  : "${RUNS:=3}" "${RECORDS:=1000000}" "${KEYS:=10000}" "${LAT_SECONDS:=40}" "${LAT_RECORDS:=200000}" ;;
    *) echo "usage: $0 [smoke|quick|full OUT]" >&2; exit 2 ;;
esac
. test/lib.sh
RUNS=${RUNS:-3}
RECORDS=${RECORDS:-1000000}
KEYS=${KEYS:-10000}
LAT_SECONDS=${LAT_SECONDS:-40}
LAT_RECORDS=${LAT_RECORDS:-200000}
CLIENTS=${CLIENTS:-4}
WORK=$(mktemp -d /tmp/pg_eventlog-compaction.XXXXXX)
chmod 755 "$WORK"
sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
if [ -z "$MODE" ]; then
    cleanup() { el_stop_server; rm -rf "$WORK"; }
    trap cleanup EXIT
    el_start_server test/bench/bench.conf
else
    # test/bench/run's server: a database of our own, and the maintenance
    # interval as it was once done (the worker must not compact the topics
    # before the measured rounds do).
    saved_interval=$(sql -c "SHOW eventlog.maintenance_interval")
    cleanup() {
        sql -d postgres -c "ALTER SYSTEM SET eventlog.maintenance_interval = '$saved_interval'" \
            -c "SELECT pg_reload_conf()" >/dev/null || true
        sql -d postgres -c "DROP DATABASE IF EXISTS bench_compaction" >/dev/null || true
        rm -rf "$WORK"
    }
    trap cleanup EXIT
    sql -c "DROP DATABASE IF EXISTS bench_compaction" -c "CREATE DATABASE bench_compaction"
    export PGDATABASE=bench_compaction
fi

sql >/dev/null <<'SQL'
CREATE EXTENSION pg_eventlog;
ALTER SYSTEM SET eventlog.maintenance_interval = '1h';
SELECT pg_reload_conf();
-- Fill a compacted topic with n records over k keys, and seal its segment:
-- the first round rolls it, the second records where the next begins.
CREATE PROCEDURE fill(topic text, n int, k int) LANGUAGE plpgsql AS $$
DECLARE
    c int;
BEGIN
    PERFORM eventlog.create_topic(topic, 1, cleanup_policy => 'compact',
                                  segment_interval => '1 microsecond');
    FOR c IN 0 .. (n - 1) / 10000 LOOP
        PERFORM count(*) FROM eventlog.produce_batch(topic,
            (SELECT array_agg('key-' || (i % k) ORDER BY i)
               FROM generate_series(c * 10000, least(n, (c + 1) * 10000) - 1) i),
            (SELECT array_agg(jsonb_build_object('id', i, 'user', 'user-' || i % 997,
                                                 'path', '/p/' || i % 113,
                                                 'ref', md5(i::text)) ORDER BY i)
               FROM generate_series(c * 10000, least(n, (c + 1) * 10000) - 1) i));
        COMMIT;
    END LOOP;
    PERFORM count(*) FROM eventlog.enforce_retention(topic);
    COMMIT;
    PERFORM count(*) FROM eventlog.enforce_retention(topic);
    COMMIT;
END
$$;
SQL

lsn() { sql -c "SELECT pg_current_wal_insert_lsn()"; }
wal_since() { sql -c "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$1')"; }
# Milliseconds of the statements of a psql run, summed (\timing).
timed() { psql -X -q -v ON_ERROR_STOP=1 -c '\timing on' "$@" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' |
          awk '{ s += $1 } END { printf "%.1f\n", s }'; }

echo "== 1. compaction of $RECORDS records over $KEYS keys vs CREATE TABLE AS SELECT DISTINCT ON"
: >"$WORK/compaction.csv"
for ((r = 1; r <= RUNS; r++)); do
    sql -c "CALL fill('c$r', $RECORDS, $KEYS)"
    seg=$(sql -c "SELECT table_name FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog t USING (topic_id)
                   WHERE t.name = 'c$r' AND s.segment_no = 0")
    sql -c "CREATE TABLE raw_$r AS SELECT * FROM eventlog_segments.$seg" \
        -c "ALTER TABLE raw_$r ADD PRIMARY KEY (offset_id)" -c "VACUUM ANALYZE raw_$r" \
        -c "VACUUM ANALYZE eventlog_segments.$seg" -c "CHECKPOINT"
    for side in $( ((r % 2)) && echo "el raw" || echo "raw el"); do
        sql -c "CHECKPOINT"
        start=$(lsn)
        if [ "$side" = el ]; then
            ms=$(timed -c "SELECT count(*) FROM eventlog.compact('c$r')")
        else
            ms=$(timed -c "BEGIN" \
                -c "CREATE TABLE dedup_$r AS SELECT DISTINCT ON (key) * FROM raw_$r ORDER BY key, offset_id DESC" \
                -c "ALTER TABLE dedup_$r ADD PRIMARY KEY (offset_id)" -c "COMMIT")
        fi
        wal=$(wal_since "$start")
        echo "$r $side $ms $wal" | tee -a "$WORK/compaction.csv"
    done
    kept=$(sql -c "SELECT count(*) FROM eventlog.read('c$r', 0, 0, 10000000)")
    want=$(sql -c "SELECT count(*) FROM dedup_$r")
    [ "$kept" = "$want" ] || el_die "compaction kept $kept records, DISTINCT ON $want"
    sql -c "SELECT eventlog.drop_topic('c$r')" -c "DROP TABLE raw_$r, dedup_$r" >/dev/null
done
python3 - "$WORK/compaction.csv" "$RECORDS" "$KEYS" 2>>"$WORK/rows" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def med(side, i):
    return statistics.median(float(r[i]) for r in rows if r[1] == side)
for name, i in (("time ms", 2), ("WAL bytes", 3)):
    el, raw = med("el", i), med("raw", i)
    print(f"{name}: compact {el:.0f}, CTAS DISTINCT ON {raw:.0f}, ratio {el / raw:.2f} (medians of {len(rows) // 2})")
    # for test/bench/run: workload|eventlog|baseline|ratio
    print(f"ROW|compact {int(sys.argv[2]):,} records over {int(sys.argv[3]):,} keys: {name}|{el:.0f}|{raw:.0f}|{el / raw:.2f}",
          file=sys.stderr)
PY

echo "== 2. producer latency during compaction rounds vs idle ($CLIENTS clients, ${LAT_SECONDS} s)"
# Topics for the rounds: as many as the phases may need.
nrounds=$(( LAT_SECONDS / 4 + 2 ))
for ((i = 1; i <= nrounds; i++)); do
    sql -c "CALL fill('l$i', $LAT_RECORDS, $KEYS)"
done
sql -c "SELECT eventlog.create_topic('lat', 1)" >/dev/null
cat >"$WORK/produce.sql" <<'SQL'
\set id random(1, 1000000000)
SELECT eventlog.produce('lat', 'key-' || :id::bigint, format('{"id": %s, "user": "user-%s", "type": "view", "path": "/p/%s", "ref": "%s"}', :id::bigint, (:id::bigint) % 997, (:id::bigint) % 113, left(repeat(md5((:id::bigint)::text), 40), 20))::jsonb, partition => 0);
SQL
sql -c "CHECKPOINT"
pgbench -n -M prepared -c "$CLIENTS" -j 2 -t 50 -f "$WORK/produce.sql" >/dev/null
pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$LAT_SECONDS" -l --log-prefix="$WORK/lat" \
    -f "$WORK/produce.sql" >/dev/null 2>&1 &
bench=$!
: >"$WORK/phases"
end=$(( $(date +%s) + LAT_SECONDS - 2 ))
i=1
while [ "$(date +%s)" -lt $end ] && [ $i -le $nrounds ]; do
    echo "$(date +%s.%N) idle" >>"$WORK/phases"
    sleep 2
    echo "$(date +%s.%N) compaction" >>"$WORK/phases"
    sql -c "SELECT count(*) FROM eventlog.compact('l$i')" >/dev/null
    i=$((i + 1))
done
echo "$(date +%s.%N) idle" >>"$WORK/phases"
wait $bench
python3 - "$WORK" 2>>"$WORK/rows" <<'PY'
import glob, sys, statistics
work = sys.argv[1]
phases = [(float(t), p) for t, p in (l.split() for l in open(work + "/phases"))]
lat = {"idle": [], "compaction": []}
for f in glob.glob(work + "/lat*"):
    for line in open(f):
        c, x, us, s, t_s, t_us = line.split()[:6]
        start = int(t_s) + int(t_us) / 1e6 - int(us) / 1e6
        kind = None
        for t, p in phases:
            if t <= start:
                kind = p
        if kind:
            lat[kind].append(int(us) / 1000)
def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]
for k in ("idle", "compaction"):
    print(f"{k}: {len(lat[k])} transactions, p50 {q(lat[k], 0.5):.2f} ms, p99 {q(lat[k], 0.99):.2f} ms")
print(f"p99 compaction / idle: {q(lat['compaction'], 0.99) / q(lat['idle'], 0.99):.2f}, "
      f"p50: {q(lat['compaction'], 0.5) / q(lat['idle'], 0.5):.2f}")
for p, name in ((0.5, "p50"), (0.99, "p99")):
    c, i = q(lat['compaction'], p), q(lat['idle'], p)
    print(f"ROW|produce {name} ms during compaction rounds vs idle|{c:.2f}|{i:.2f}|{c / i:.2f}", file=sys.stderr)
PY
grep -v '^ROW|' "$WORK/rows" >&2 || true
if [ -n "$OUT" ]; then
    rows=$(sed -n 's/^ROW|//p' "$WORK/rows")
    {
        echo "workload,pg_eventlog,baseline,ratio"
        awk -F'|' '{ printf "\"%s\",%s,%s,%s\n", $1, $2, $3, $4 }' <<<"$rows"
    } >"$OUT/compaction.csv"
    {
        echo
        echo "Log compaction (issue 17), --$MODE: eventlog.compact vs CREATE TABLE AS SELECT DISTINCT ON (+ primary key) of the same rows (medians of $RUNS alternated runs); producer latency ($CLIENTS clients) while rounds run vs idle phases of the same pgbench run. Goal: p99 ratio <= 1.5."
        echo
        echo "| workload | pg_eventlog | baseline | ratio |"
        echo "| --- | ---: | ---: | ---: |"
        awk -F'|' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' <<<"$rows"
    } >>"$OUT/results.md"
fi
