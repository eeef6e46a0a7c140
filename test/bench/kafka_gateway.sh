#!/bin/bash
# test/bench/kafka_gateway.sh MODE OUT: the Kafka gateway's workloads
# (issue 15), run by test/bench/run on its server (libpq's environment,
# PGHOST..., exported by el_start_server) after the SQL workloads.  Each
# measurement compares against SQL in the same run, or is absolute where the
# goal is (latency in ms, CPU in %):
#
#   produce     a librdkafka producer (confluent_kafka, acks=all, batches of
#               1,000 records of 100 B) vs produce_batch from SQL, and to a
#               binary topic vs produce_binary_batch: test/bench/kafka_produce.py.
#               Goal: >= 0.7x produce_batch.
#   idempotent  a librdkafka producer with enable.idempotence=true vs one
#               without, both to a binary topic through the gateway
#               (issue 16): test/bench/kafka_idempotent.py.  Goal: >= 0.9x.
#               Also kafkajs, idempotent vs plain, both with one request in
#               flight (librdkafka 2.0.2's idempotent producer sends one at a
#               time, its plain one several), with the gateway's and the
#               server's CPU per 1,000 records: test/bench/kafkajs_idempotent.js.
#   consume     a librdkafka consumer (kcat -C -e) reading a partition from
#               the start vs eventlog.read_binary of the same records from
#               SQL: test/bench/kafka_fetch.py throughput.  Goal: >= 0.7x.
#   latency     one record every millisecond, produced through the gateway
#               (acks=all, linger.ms 0), consumed by a long-polling
#               confluent_kafka consumer: send -> consume p50 and p99
#               (kafka_fetch.py latency); also produced from SQL, for
#               reference.  Goal: p50 <= 5 ms, p99 <= 20 ms.
#   idle        100 consumers long-polling an empty topic: CPU of the
#               gateway and of every PostgreSQL process, % of one core
#               (kafka_fetch.py idle).  Goal: ~0%.  Each consumer still
#               sends a Fetch every fetch.wait.max.ms (500 ms), which any
#               broker must take and answer: two thread wake-ups, a receive
#               and a send, most of the cost on a virtual machine (perf:
#               the kernel's task switch).  So the gateway's goal is to
#               cost no more than a broker that does only that: the same
#               consumers against librdkafka's mock broker
#               (test/t/kafka_mock.c, built here, a single-threaded event
#               loop with nothing on disk), in the same run.  PostgreSQL's
#               goal is < 1% (the Fetches wait on an await it already runs).
#
# Prints a table, writes OUT/kafka.csv and appends to OUT/results.md.
set -euo pipefail
MODE=$1
OUT=$2
cd "$(dirname "$0")/../.."
. test/lib.sh   # el_ensure_kafkajs
PY=/usr/bin/python3
GW=$(pg_config --bindir)/pg_eventlog_kafka
LOG=$(mktemp /tmp/pg_eventlog-bench-kafka.XXXXXX)
GW_PID=
cleanup() {
    [ -n "$GW_PID" ] && kill "$GW_PID" 2>/dev/null && wait "$GW_PID" 2>/dev/null
    rm -f "$LOG"
}
trap cleanup EXIT

case $MODE in
    smoke) PRODUCE_RECORDS=2000;   PRODUCE_ROUNDS=1; CONSUME_RECORDS=20000;   CONSUME_ROUNDS=1
           LAT_SECONDS=1;  IDLE_CONSUMERS=5;   IDLE_SECONDS=2 ;;
    quick) PRODUCE_RECORDS=50000;  PRODUCE_ROUNDS=3; CONSUME_RECORDS=200000;  CONSUME_ROUNDS=3
           LAT_SECONDS=5;  IDLE_CONSUMERS=100; IDLE_SECONDS=10 ;;
    full)  PRODUCE_RECORDS=200000; PRODUCE_ROUNDS=5; CONSUME_RECORDS=1000000; CONSUME_ROUNDS=3
           LAT_SECONDS=10; IDLE_CONSUMERS=100; IDLE_SECONDS=20 ;;
    *) echo "usage: $0 smoke|quick|full OUT" >&2; exit 2 ;;
esac

# value_of KEY LINE: the number after KEY= in LINE
value_of() { sed -n "s/.* $1=\([-0-9.]*\).*/\1/p; s/^$1=\([-0-9.]*\).*/\1/p" <<<"$2" | head -1; }

psql -X -q -v ON_ERROR_STOP=1 -c 'CHECKPOINT' >/dev/null

# produce: the script needs a gateway of ours
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$GW" --listen 127.0.0.1:"$port" --dsn "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE" \
    --log-level warning 2>"$LOG" &
GW_PID=$!
for _ in $(seq 100); do
    "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
    sleep 0.1
done
produce_out=$(KAFKA_ADDR=127.0.0.1:$port RECORDS=$PRODUCE_RECORDS ROUNDS=$PRODUCE_ROUNDS "$PY" test/bench/kafka_produce.py)
idem_out=$(KAFKA_ADDR=127.0.0.1:$port RECORDS=$PRODUCE_RECORDS ROUNDS=$PRODUCE_ROUNDS "$PY" test/bench/kafka_idempotent.py)
kjs_dir=$(el_ensure_kafkajs)
kjs_out=$(NODE_PATH="$kjs_dir/node_modules" RECORDS=$PRODUCE_RECORDS ROUNDS=$PRODUCE_ROUNDS \
    GATEWAY_PID=$GW_PID POSTMASTER_PID=$(head -1 "$EL_SERVER_DIR/data/postmaster.pid") \
    node test/bench/kafkajs_idempotent.js 127.0.0.1:"$port")
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null || true; GW_PID=
echo "$produce_out" | sed 's/^/  /'
echo "$idem_out" | sed 's/^/  /'
echo "$kjs_out" | sed 's/^/  /'
idem_kjs=$(sed -n 's/.*kafkajs idempotent produce \/ plain produce: median ratio \([0-9.]*\).*/\1/p' <<<"$kjs_out")
idem_cpu=$(sed -n 's/.*ratio plain \/ idempotent \([0-9.]*\).*/\1/p' <<<"$kjs_out")
idem=$(sed -n 's/.*idempotent produce \/ plain produce: median ratio \([0-9.]*\).*/\1/p' <<<"$idem_out")
produce_json=$(sed -n 's/.*(json topic).*median ratio \([0-9.]*\).*/\1/p' <<<"$produce_out")
produce_binary=$(sed -n 's/.*(binary topic).*median ratio \([0-9.]*\).*/\1/p' <<<"$produce_out")

consume_out=$("$PY" test/bench/kafka_fetch.py throughput --gateway "$GW" \
    --records "$CONSUME_RECORDS" --rounds "$CONSUME_ROUNDS")
echo "$consume_out" | sed 's/^/  /'
consume=$(value_of ratio_kafka_over_sql "$(tail -1 <<<"$consume_out")")

lat_kafka=$("$PY" test/bench/kafka_fetch.py latency --gateway "$GW" --rate 1000 --seconds "$LAT_SECONDS" --producer kafka)
lat_sql=$("$PY" test/bench/kafka_fetch.py latency --gateway "$GW" --rate 1000 --seconds "$LAT_SECONDS" --producer sql)
echo "  $lat_kafka"
echo "  $lat_sql"

# The same idle consumers against librdkafka's mock broker, for reference.
mock_dir=$(mktemp -d /tmp/pg_eventlog-bench-mock.XXXXXX)
cc -O2 -o "$mock_dir/kafka_mock" test/t/kafka_mock.c -lrdkafka
idle_out=$("$PY" test/bench/kafka_fetch.py idle --gateway "$GW" --consumers "$IDLE_CONSUMERS" \
    --seconds "$IDLE_SECONDS" --mock "$mock_dir/kafka_mock")
rm -rf "$mock_dir"
echo "  $idle_out"

# workload, measured, unit, goal, verdict: the goals table
rows=$(awk -v pj="$produce_json" -v pb="$produce_binary" -v pi="$idem" -v pk="$idem_kjs" -v pc="$idem_cpu" -v c="$consume" \
           -v k50="$(value_of p50_ms "$lat_kafka")" -v k99="$(value_of p99_ms "$lat_kafka")" \
           -v s50="$(value_of p50_ms "$lat_sql")" -v s99="$(value_of p99_ms "$lat_sql")" \
           -v ig="$(value_of gateway_cpu_pct "$idle_out")" -v is="$(value_of server_cpu_pct "$idle_out")" -v im="$(value_of mock_broker_cpu_pct "$idle_out")" \
           -v n="$IDLE_CONSUMERS" '
    function row(w, m, u, goal, ok) {
        printf "%s|%s%s|%s|%s\n", w, m == "" ? "?" : m, u, goal,
               m == "" ? "n/a" : goal == "-" ? "-" : ok ? "met" : "missed"
    }
    BEGIN {
        row("librdkafka producer, JSON topic, vs produce_batch", pj, "x", ">= 0.7x", pj >= 0.7)
        row("librdkafka producer, binary topic, vs produce_binary_batch", pb, "x", "-", 1)
        row("librdkafka idempotent producer vs plain, binary topic", pi, "x", "-", 1)
        row("kafkajs idempotent producer vs plain, one request in flight", pk, "x", ">= 0.9x", pk >= 0.9)
        row("gateway + PostgreSQL CPU per record, plain / idempotent", pc, "x", "-", 1)
        row("librdkafka consumer (kcat) vs read_binary", c, "x", ">= 0.7x", c >= 0.7)
        row("latency through the gateway, p50", k50, " ms", "<= 5 ms", k50 <= 5)
        row("latency through the gateway, p99", k99, " ms", "<= 20 ms", k99 <= 20)
        row("latency, SQL producer -> gateway consumer, p50", s50, " ms", "-", 1)
        row("latency, SQL producer -> gateway consumer, p99", s99, " ms", "-", 1)
        row(n " idle consumers: gateway CPU", ig, " %", "-", 1)
        row(n " idle consumers: librdkafka mock broker CPU (reference)", im, " %", "-", 1)
        row(n " idle consumers: gateway CPU / mock broker CPU", (ig == "" || im == "" || im == 0) ? "" : sprintf("%.2f", ig / im),
            "x", "<= 1.0x (~0%)", ig <= im)
        row(n " idle consumers: PostgreSQL CPU", is, " %", "~0% (< 1%)", is < 1)
    }')
echo
echo "Kafka gateway (issue 15), --$MODE: ratios are medians of alternated rounds in this run;"
echo "latency send -> consume at 1,000 records/s; CPU in % of one core:"
echo
awk -F'|' '{ printf "  %-62s %12s  %-12s %s\n", $1, $2, $3, $4 }' <<<"$rows"
{
    echo "workload,measured,goal,verdict"
    awk -F'|' '{ printf "\"%s\",%s,\"%s\",%s\n", $1, $2, $3, $4 }' <<<"$rows"
} >"$OUT/kafka.csv"
{
    echo
    echo "Kafka gateway (issue 15): ratios are medians of alternated rounds in this run; latency send -> consume at 1,000 records/s; CPU in % of one core."
    echo
    echo "| workload | measured | goal | verdict |"
    echo "| --- | ---: | --- | --- |"
    awk -F'|' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' <<<"$rows"
} >>"$OUT/results.md"
