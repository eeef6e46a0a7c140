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
#
# Settings (environment): RUNS (3), RECORDS (1000000), KEYS (10000),
# LAT_SECONDS (40), CLIENTS (4).  The server runs with test/bench/bench.conf
# (durable commits).  Needs /usr/bin/python3.  Run from the source tree
# after installing the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
RUNS=${RUNS:-3}
RECORDS=${RECORDS:-1000000}
KEYS=${KEYS:-10000}
LAT_SECONDS=${LAT_SECONDS:-40}
CLIENTS=${CLIENTS:-4}
WORK=$(mktemp -d /tmp/pg_eventlog-compaction.XXXXXX)
chmod 755 "$WORK"
cleanup() { el_stop_server; rm -rf "$WORK"; }
trap cleanup EXIT
el_start_server test/bench/bench.conf
sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

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
python3 - "$WORK/compaction.csv" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def med(side, i):
    return statistics.median(float(r[i]) for r in rows if r[1] == side)
for name, i in (("time ms", 2), ("WAL bytes", 3)):
    el, raw = med("el", i), med("raw", i)
    print(f"{name}: compact {el:.0f}, CTAS DISTINCT ON {raw:.0f}, ratio {el / raw:.2f} (medians of {len(rows) // 2})")
PY

echo "== 2. producer latency during compaction rounds vs idle ($CLIENTS clients, ${LAT_SECONDS} s)"
# Topics for the rounds: as many as the phases may need.
nrounds=$(( LAT_SECONDS / 4 + 2 ))
for ((i = 1; i <= nrounds; i++)); do
    sql -c "CALL fill('l$i', 200000, $KEYS)"
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
python3 - "$WORK" <<'PY'
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
PY
