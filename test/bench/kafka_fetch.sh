#!/bin/bash
# Kafka consumers through the gateway: test/bench/kafka_fetch.py's three
# measurements (throughput against SQL's read_binary, produce -> consume
# latency, idle long-polling consumers' CPU) on a throwaway server with
# test/bench/bench.conf.  Run from the source tree after installing the
# build:
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/kafka_fetch.sh [RECORDS]
#
# RECORDS (default 1000000) for the throughput.  Needs /usr/bin/python3 with
# python3-psycopg and python3-confluent-kafka, and kcat.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
el_ensure_packages python3-psycopg python3-confluent-kafka kcat
conf=$(mktemp /tmp/kafka_fetch.XXXXXX.conf)
trap 'el_stop_server; rm -f "$conf"' EXIT
# 100 consumers hold up to two gateway connections each, and each a session.
{ cat test/bench/bench.conf; echo 'max_connections = 300'; } >"$conf"
el_start_server "$conf"
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_eventlog' >/dev/null
gw=$(pg_config --bindir)/pg_eventlog_kafka
[ -x "$gw" ] || gw=${PG_BINDIR:-/usr/lib/postgresql/15/bin}/pg_eventlog_kafka
/usr/bin/python3 test/bench/kafka_fetch.py throughput --gateway "$gw" --records "${1:-1000000}"
/usr/bin/python3 test/bench/kafka_fetch.py latency --gateway "$gw" --rate 1000 --seconds 10
/usr/bin/python3 test/bench/kafka_fetch.py idle --gateway "$gw" --consumers 100 --seconds 20
