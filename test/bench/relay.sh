#!/bin/bash
# test/bench/relay.sh MODE OUT: pg_eventlog relay --to-kafka (issue 20)
# into librdkafka's mock cluster (test/t/kafka_mock.c, 3 brokers), against
# reading the same records from SQL, in the same run, alternating:
#
#   relay     pg_eventlog relay rb --group G --to-kafka MOCK -e, a fresh
#             group each round: every record polled as a group member
#             (eventlog.poll), produced with librdkafka's idempotent
#             producer, acknowledged, its position committed.
#   read      pg_eventlog consume rb -e > /dev/null: the same records read
#             with eventlog.read by the same client (libpq, one query per
#             round over every partition, 10,000 records at most), printed
#             as JSON lines and thrown away.  The goal's baseline: the
#             records read from SQL and shipped to a client, with nothing
#             done to them.
#   consume-g pg_eventlog consume rb -g G -e > /dev/null, for reference: the
#             relay's own SQL work (poll as a member, commit) without Kafka.
#
# Records: RECORDS of ~100 B JSON with a key, in a topic of 4 partitions.
# Goal: relay >= 0.5x read (records/s; median of the per-round ratios).
#
# Run by test/bench/run after kafka_gateway.sh, on its server (libpq's
# environment, PGHOST..., exported by el_start_server); alone, it starts a
# server of its own (PG_BINDIR as for test/run):
#
#   PG_BINDIR=... bash test/bench/relay.sh quick /tmp/out
#
# EL_BENCH_CLI=PATH measures another build of the CLI (the same script run
# with the previous build and the new one gives a before/after).
#
# Prints a table, writes OUT/relay.csv (every round in OUT/relay-rounds.csv)
# and appends to OUT/results.md.
set -euo pipefail
MODE=${1:-}
OUT=${2:-}
cd "$(dirname "$0")/../.."
case $MODE in
    smoke) RECORDS=20000;   ROUNDS=1 ;;
    quick) RECORDS=200000;  ROUNDS=3 ;;
    full)  RECORDS=1000000; ROUNDS=5 ;;
    *) echo "usage: $0 smoke|quick|full OUT" >&2; exit 2 ;;
esac
[ -n "$OUT" ] || { echo "usage: $0 smoke|quick|full OUT" >&2; exit 2; }
mkdir -p "$OUT"

WORK=$(mktemp -d /tmp/pg_eventlog-bench-relay.XXXXXX)
OWN_SERVER=
cleanup() {
    exec 3>&- 2>/dev/null || true
    [ -n "${MOCK_PID:-}" ] && wait "$MOCK_PID" 2>/dev/null
    [ -n "$OWN_SERVER" ] && el_stop_server
    rm -rf "$WORK"
}
trap cleanup EXIT
if [ -z "${PGHOST:-}" ] || [ -z "${PGPORT:-}" ]; then
    . test/lib.sh
    el_start_server test/bench/bench.conf
    OWN_SERVER=1
    psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS pg_eventlog' >/dev/null
fi
CLI=${EL_BENCH_CLI:-$(pg_config --bindir)/pg_eventlog}
DB="host=$PGHOST port=$PGPORT user=${PGUSER:-postgres} dbname=${PGDATABASE:-postgres}"

# The mock cluster: runs until its standard input (fd 3 here) closes.
cc -O2 -o "$WORK/kafka_mock" test/t/kafka_mock.c -lrdkafka
mkfifo "$WORK/in"
"$WORK/kafka_mock" relay_bench:4 <"$WORK/in" >"$WORK/boot" 2>"$WORK/mock.log" &
MOCK_PID=$!
exec 3>"$WORK/in"
for _ in $(seq 300); do [ -s "$WORK/boot" ] && break; sleep 0.1; done
BOOT=$(head -1 "$WORK/boot")
[ -n "$BOOT" ] || { cat "$WORK/mock.log" >&2; echo "relay.sh: the mock cluster did not start" >&2; exit 1; }

psql -X -q -v ON_ERROR_STOP=1 "$DB" >/dev/null <<SQL
SELECT eventlog.drop_topic('relay_bench') FROM eventlog.topics WHERE topic = 'relay_bench';
SELECT eventlog.create_topic('relay_bench', 4);
SELECT count(*) FROM generate_series(0, $RECORDS - 1, 10000) b,
    LATERAL eventlog.produce_batch('relay_bench',
        (SELECT array_agg('k' || i) FROM generate_series(b, least(b + 9999, $RECORDS - 1)) i),
        (SELECT array_agg(jsonb_build_object('n', i, 'pad', repeat('x', 80)))
           FROM generate_series(b, least(b + 9999, $RECORDS - 1)) i));
CHECKPOINT;
SQL

# seconds METHOD ROUND: runs one method once, prints its wall time.
seconds() {
    local t0 t1
    t0=$(date +%s.%N)
    case $1 in
        relay) "$CLI" -d "$DB" relay relay_bench --group "bench_relay_$2" --to-kafka "$BOOT" -e ;;
        read) "$CLI" -d "$DB" consume relay_bench -e >/dev/null ;;
        consume-g) "$CLI" -d "$DB" consume relay_bench -g "bench_consume_$2" -e >/dev/null ;;
    esac
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
}

echo "method,round,records,seconds,records_per_s" >"$OUT/relay-rounds.csv"
seconds read 0 >/dev/null    # warm the cache
for r in $(seq "$ROUNDS"); do
    # alternate the order from round to round
    methods="relay read consume-g"
    [ $((r % 2)) -eq 0 ] && methods="consume-g read relay"
    for m in $methods; do
        s=$(seconds "$m" "$r")
        echo "$m,$r,$RECORDS,$s,$(awk -v n="$RECORDS" -v s="$s" 'BEGIN { printf "%.0f", n / s }')" >>"$OUT/relay-rounds.csv"
        echo "  round $r $m: $s s"
    done
done
# Every record reached Kafka: the group is at the end.
lag=$(psql -X -At "$DB" -c "SELECT coalesce(sum(lag), -1) FROM eventlog.consumer_groups WHERE group_name = 'bench_relay_$ROUNDS'")
[ "$lag" = 0 ] || { echo "relay.sh: the relay's group lags by $lag" >&2; exit 1; }

# median records/s per method, and the median of the per-round ratios
rows=$(awk -F, 'NR > 1 { rate[$1, $2] = $5; n = $2 > n ? $2 : n }
    function median(a, k,   i, j, t) {
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
        split("relay read consume-g", ms, " ")
        for (m = 1; m <= 3; m++) { for (r = 1; r <= n; r++) v[r] = rate[ms[m], r]; med[ms[m]] = median(v, n) }
        for (r = 1; r <= n; r++) v[r] = rate["relay", r] / rate["read", r]; x = median(v, n)
        for (r = 1; r <= n; r++) v[r] = rate["relay", r] / rate["consume-g", r]; g = median(v, n)
        printf "relay into the mock cluster, records/s|%.0f|-|-\n", med["relay"]
        printf "read (consume -e > /dev/null), records/s|%.0f|-|-\n", med["read"]
        printf "consume -g -e > /dev/null, records/s|%.0f|-|-\n", med["consume-g"]
        printf "relay / read|%.2fx|>= 0.5x|%s\n", x, (x >= 0.5 ? "met" : "missed")
        printf "relay / consume -g|%.2fx|-|-\n", g
    }' "$OUT/relay-rounds.csv")
echo
echo "Relay into Kafka (issue 20), --$MODE: $RECORDS records of ~100 B, 4 partitions, into librdkafka's"
echo "mock cluster; medians of $ROUNDS alternated round(s); ratios are medians of per-round ratios:"
echo
awk -F'|' '{ printf "  %-46s %12s  %-8s %s\n", $1, $2, $3, $4 }' <<<"$rows"
{
    echo "workload,measured,goal,verdict"
    awk -F'|' '{ printf "\"%s\",%s,\"%s\",%s\n", $1, $2, $3, $4 }' <<<"$rows"
} >"$OUT/relay.csv"
{
    echo
    echo "Relay into Kafka (issue 20): $RECORDS records of ~100 B in 4 partitions into librdkafka's mock cluster; medians of $ROUNDS alternated rounds."
    echo
    echo "| workload | measured | goal | verdict |"
    echo "| --- | ---: | --- | --- |"
    awk -F'|' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' <<<"$rows"
} >>"$OUT/results.md"
