#!/bin/bash
# Kafka producers through the gateway against SQL's produce_batch, same
# records, same durability: test/bench/kafka_produce.py on a throwaway
# server with test/bench/bench.conf (durable commits) and a gateway on a
# free port.  Run from the source tree after installing the build:
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/kafka_produce.sh
#
# Settings: see kafka_produce.py.  Needs /usr/bin/python3 with
# python3-psycopg and python3-confluent-kafka.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
el_ensure_packages python3-psycopg python3-confluent-kafka
GW_PID=
cleanup() {
    [ -n "$GW_PID" ] && kill "$GW_PID" 2>/dev/null && wait "$GW_PID" 2>/dev/null
    el_stop_server
}
trap cleanup EXIT
el_start_server test/bench/bench.conf
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_eventlog' >/dev/null
GW_PORT=$(( 40000 + RANDOM % 20000 ))
"$(pg_config --bindir)/pg_eventlog_kafka" --listen 127.0.0.1:$GW_PORT \
    --dsn "host=$PGHOST port=$PGPORT user=postgres dbname=postgres" \
    --log-level warning 2>"$EL_SERVER_DIR/gateway.log" &
GW_PID=$!
KAFKA_ADDR=127.0.0.1:$GW_PORT /usr/bin/python3 test/bench/kafka_produce.py
