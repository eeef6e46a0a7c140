#!/bin/bash
# Stream processors (issue 19): a tumbling count by key of RECORDS records
# (1-minute windows over event time, 1,000 keys, emit final) by
# eventlog.run_processor in steps of STEP records, against the batch lower
# bound, one INSERT ... SELECT ... GROUP BY date_bin(...) over the same rows
# read from the topic.  The two alternate, RUNS times, each into a fresh
# sink; the ratio of the medians is printed (batch time / processor time),
# for the wall clock and for the CPU time of each side's backend.
#
# Both are timed inside their session (clock_timestamp before and after),
# so that neither pays for starting psql or a backend: the steps run in one
# session, one transaction each (a DO loop that commits after every step,
# as a scheduler's loop or a background worker runs them).  MODE=connection
# runs each step in its own psql instead (as cron would) and times from the
# shell, as this script did first: that adds a connection's start per step
# to the processor and a psql start to the batch.
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/streams.sh
#
# Settings (environment): RUNS (3), RECORDS (100000), STEP (10000),
# MODE (session or connection).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
RUNS=${RUNS:-3}
RECORDS=${RECORDS:-100000}
STEP=${STEP:-10000}
MODE=${MODE:-session}

conf=$(mktemp)
cat test/bench/bench.conf > "$conf"
echo "shared_preload_libraries = 'pg_eventlog'" >> "$conf"
# The steps are timed by hand: no processor worker stepping beside them.
echo "eventlog.processors_enabled = off" >> "$conf"
el_start_server "$conf"
trap el_stop_server EXIT

psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION pg_eventlog;
SELECT eventlog.create_topic('bench', 1);
SELECT count(*) FROM eventlog.produce_batch('bench',
    (SELECT array_agg('k' || (i % 1000)) FROM generate_series(1, $RECORDS) i),
    (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, $RECORDS) i),
    event_time => (SELECT array_agg(timestamptz '2026-01-01 00:00:00+00' + i * interval '10 ms')
                     FROM generate_series(1, $RECORDS) i));
SQL

ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
# The backend's own CPU time (user + system, /proc/self/stat fields 14 and
# 15, in clock ticks), read by the backend itself: a load beside the bench
# slows the wall clock of both sides, but changes their CPU time less.
tick_ms=$((1000 / $(getconf CLK_TCK)))
cpu_sql="(SELECT (f[12]::bigint + f[13]::bigint) * $tick_ms
            FROM regexp_split_to_array(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ') AS f)"
# in_session SQL: the milliseconds SQL takes in its own session, wall
# clock and the backend's CPU ("WALL CPU").
in_session() {
    psql -X -qAt -v ON_ERROR_STOP=1 <<SQL
SELECT extract(epoch FROM clock_timestamp()) AS t0, $cpu_sql AS c0 \\gset
$1
SELECT round((extract(epoch FROM clock_timestamp()) - :t0) * 1000) || ' ' || ($cpu_sql - :c0);
SQL
}
proc_times=(); batch_times=(); proc_cpu=(); batch_cpu=()
for run in $(seq 1 "$RUNS"); do
    psql -X -q -v ON_ERROR_STOP=1 -c "
        DROP TABLE IF EXISTS sink_p, sink_b;
        CREATE TABLE sink_p (window_start timestamptz, window_end timestamptz, k text, n bigint);
        CREATE TABLE sink_b (window_start timestamptz, window_end timestamptz, k text, n bigint);
        SELECT eventlog.drop_processor(name) FROM eventlog.processors;
        SELECT eventlog.create_window_processor('bench', 'bench', 'sink_p', size => '1 minute',
                                                idle_timeout => '0');"
    batch="INSERT INTO sink_b
        SELECT date_bin('1 minute', event_time, '1970-01-01'), date_bin('1 minute', event_time, '1970-01-01') + interval '1 minute',
               key, count(*)
          FROM eventlog.read('bench', 0, 0, $RECORDS) GROUP BY 1, 2, 3;"
    if [ "$MODE" = connection ]; then
        t0=$(ms)
        while [ "$(psql -X -qAt -c "SELECT eventlog.run_processor('bench', $STEP)")" != 0 ]; do :; done
        t1=$(ms)
        psql -X -q -v ON_ERROR_STOP=1 -c "$batch"
        t2=$(ms)
        p=$((t1 - t0)); b=$((t2 - t1))
    else
        read -r p pc < <(in_session "DO \$\$DECLARE n bigint; BEGIN
                            LOOP n := eventlog.run_processor('bench', $STEP); EXIT WHEN n = 0; COMMIT; END LOOP;
                        END\$\$;")
        read -r b bc < <(in_session "$batch")
        proc_cpu+=("$pc"); batch_cpu+=("$bc")
    fi
    # The processor's output must equal the batch's, but for the last
    # window, which the watermark (the last event time) has not closed.
    diff=$(psql -X -qAt -c "
        DELETE FROM sink_b WHERE window_end > (SELECT max(event_time) FROM eventlog.read('bench', 0, $RECORDS - 1, 1));
        SELECT count(*) FROM ((TABLE sink_p EXCEPT TABLE sink_b) UNION ALL (TABLE sink_b EXCEPT TABLE sink_p)) d")
    [ "$diff" = 0 ] || el_die "processor and batch differ in $diff rows"
    proc_times+=("$p"); batch_times+=("$b")
    echo "run $run: processor $p ms${pc:+ (CPU $pc ms)}, batch $b ms${bc:+ (CPU $bc ms)}"
done
python3 - "${proc_times[*]}" "${batch_times[*]}" "$RECORDS" "${proc_cpu[*]:-}" "${batch_cpu[*]:-}" <<'PY'
import statistics, sys
p = statistics.median(map(int, sys.argv[1].split()))
b = statistics.median(map(int, sys.argv[2].split()))
n = int(sys.argv[3])
print(f"median: processor {p} ms ({n * 1000 / p:.0f} records/s), batch {b} ms ({n * 1000 / b:.0f} records/s), "
      f"batch/processor throughput ratio {b / p:.2f}")
if sys.argv[4].strip():
    pc = statistics.median(map(int, sys.argv[4].split()))
    bc = statistics.median(map(int, sys.argv[5].split()))
    print(f"median backend CPU: processor {pc} ms, batch {bc} ms, batch/processor CPU ratio {bc / pc:.2f}")
PY
