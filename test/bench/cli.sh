#!/bin/bash
# The pg_eventlog command (src/cli, docs/cli.md) against SQL doing the same
# work (issue 18), on a throwaway server with test/bench/bench.conf:
#
#   produce:  "pg_eventlog produce T < FILE" of N JSON lines, against
#             produce_batch of the same records built in SQL from
#             generate_series, in batches of the command's size (5000), one
#             statement; goal: the command at >= 0.8x SQL's records/s.
#   consume:  "pg_eventlog consume T -e > /dev/null" of the N records, against
#             psql's COPY (SELECT value FROM eventlog.read(T, 0, 0, N)) TO
#             STDOUT > /dev/null; goal: >= 0.8x.
#
# Each measurement alternates the two methods, ROUNDS times, on fresh topics
# (1 partition), and prints the medians and their ratio.  Run from the
# source tree after installing the build:
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/cli.sh [N] [ROUNDS]
#
# (default 1000000 records, 3 rounds; "--smoke" runs 20000 records once).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
if [ "${1:-}" = --smoke ]; then N=20000; ROUNDS=1; else N=${1:-1000000}; ROUNDS=${2:-3}; fi
CLI=$(pg_config --bindir)/pg_eventlog
[ -x "$CLI" ] || el_die "$CLI is not installed (make install)"
trap 'el_stop_server; rm -f "$DATA"' EXIT
DATA=$(mktemp /tmp/pg_eventlog-cli-bench.XXXXXX)
el_start_server test/bench/bench.conf
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_eventlog' >/dev/null

# The same records both ways: {"id": i, "name": "user-i", "score": 1.5}.
seq 1 "$N" | awk '{ printf "{\"id\": %d, \"name\": \"user-%d\", \"score\": 1.5}\n", $1, $1 }' >"$DATA"
BATCH=5000

secs() { local t0 t1; t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

sql_produce() {
    psql -X -q -v ON_ERROR_STOP=1 -c "CHECKPOINT" >/dev/null
    psql -X -q -v ON_ERROR_STOP=1 -At -c "
        SELECT count(*) FROM pg_catalog.generate_series(0, ($N - 1) / $BATCH) AS b,
          LATERAL eventlog.produce_batch('$1', NULL,
            (SELECT array_agg(format('{\"id\": %s, \"name\": \"user-%s\", \"score\": 1.5}', g, g)::jsonb ORDER BY g)
               FROM pg_catalog.generate_series(b * $BATCH + 1, least(b * $BATCH + $BATCH, $N)) AS g))" >/dev/null
}
cli_produce() {
    psql -X -q -v ON_ERROR_STOP=1 -c "CHECKPOINT" >/dev/null
    "$CLI" produce "$1" --batch ${CLI_BATCH:-$BATCH} <"$DATA"
}
sql_consume() {
    psql -X -q -v ON_ERROR_STOP=1 -c "COPY (SELECT value FROM eventlog.read('$1', 0, 0, $N)) TO STDOUT" >/dev/null
}
cli_consume() {
    "$CLI" consume "$1" -e >/dev/null
}

: >"$DATA.sp"; : >"$DATA.cp"; : >"$DATA.sc"; : >"$DATA.cc"
for r in $(seq 1 "$ROUNDS"); do
    psql -X -q -v ON_ERROR_STOP=1 -c "SELECT eventlog.create_topic('sql$r', 1); SELECT eventlog.create_topic('cli$r', 1)" >/dev/null
    if [ $((r % 2)) -eq 1 ]; then
        secs sql_produce "sql$r" >>"$DATA.sp"; secs cli_produce "cli$r" >>"$DATA.cp"
    else
        secs cli_produce "cli$r" >>"$DATA.cp"; secs sql_produce "sql$r" >>"$DATA.sp"
    fi
    [ "$(psql -X -At -c "SELECT eventlog.high_watermark('cli$r', 0)")" -eq "$N" ] || el_die "cli$r does not hold $N records"
    psql -X -q -c "VACUUM ANALYZE" >/dev/null
    if [ $((r % 2)) -eq 1 ]; then
        secs sql_consume "cli$r" >>"$DATA.sc"; secs cli_consume "cli$r" >>"$DATA.cc"
    else
        secs cli_consume "cli$r" >>"$DATA.cc"; secs sql_consume "cli$r" >>"$DATA.sc"
    fi
    [ "$("$CLI" consume "cli$r" -e | wc -l)" -eq "$N" ] || el_die "consume cli$r did not print $N records"
done
sp=$(median <"$DATA.sp"); cp=$(median <"$DATA.cp"); sc=$(median <"$DATA.sc"); cc=$(median <"$DATA.cc")
rm -f "$DATA".??
printf '%-8s %12s %14s %12s %14s %8s\n' workload "sql s" "sql rec/s" "cli s" "cli rec/s" "cli/sql"
printf '%-8s %12.3f %14.0f %12.3f %14.0f %8.2f\n' produce "$sp" "$(echo "$N / $sp" | bc -l)" "$cp" "$(echo "$N / $cp" | bc -l)" "$(echo "$sp / $cp" | bc -l)"
printf '%-8s %12.3f %14.0f %12.3f %14.0f %8.2f\n' consume "$sc" "$(echo "$N / $sc" | bc -l)" "$cc" "$(echo "$N / $cc" | bc -l)" "$(echo "$sc / $cc" | bc -l)"
echo "($N records, $ROUNDS rounds, medians; cli/sql is the command's records/s over SQL's)"
