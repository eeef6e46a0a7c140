#!/bin/bash
# produce_binary_batch against produce_batch, and read_binary against read,
# of the same record sizes, as a client sends them (binary parameters, one
# transaction per batch): test/bench/binary_batch.py, on a throwaway server
# with test/bench/bench.conf.  Run from the source tree after installing the
# build:
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/binary_batch.sh
#
# Settings: see binary_batch.py.  Needs /usr/bin/python3 with python3-psycopg.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
el_ensure_packages python3-psycopg
trap el_stop_server EXIT
el_start_server test/bench/bench.conf
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_eventlog' >/dev/null
/usr/bin/python3 test/bench/binary_batch.py
