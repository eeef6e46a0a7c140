#!/bin/bash
# Idempotent produce (produce*_idempotent, a producer's sequence numbers)
# against plain produce, in the same run, alternating, on a throwaway server
# with test/bench/bench.conf (durable commits).  Run from the source tree
# after installing the build:
#
#   PG_BINDIR=/usr/lib/postgresql/15/bin bash test/bench/idempotent.sh
#
# Workloads (pgbench -M prepared, one transaction per call; each client
# produces to its own partition, so that an idempotent client's sequence
# numbers are its own; a new producer each round):
#   single-1c, single-4c  one ~100 B record per transaction, 1 and 4 clients
#   batch100-1c           100 records per transaction (produce_batch), 1 client
#   binbatch100-1c        100 records per transaction (produce_binary_batch)
#   txn-server            a procedure running 1,000 transactions of one record
#                         each, in the server, synchronous_commit off: the CPU
#                         cost per transaction, no commit flush, no round trip
# Prints the median TPS of each side over ROUNDS rounds, the ratio of the
# medians idempotent / plain (goal: >= 0.9), and the median of the rounds'
# own ratios ("paired": a round's two runs are back to back, so a drift of
# the machine's load from round to round cancels out of it).  single-1c
# and the batch workloads are paced by the commit's flush: on a shared
# machine their ratios vary from run to run by far more than the
# idempotent check costs (0.77 to 1.30 in one run at load 30, where the
# WAL written differs by 2% for the batches).  ROUNDS (default 5), SECS (5), and
# WORKLOADS (default all: "single:1 single:4 batch100:1 binbatch100:1
# txn-server:1", name:clients).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${PG_BINDIR:-/usr/lib/postgresql/15/bin}:$PATH
. test/lib.sh
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
WORK=$(mktemp -d /tmp/pg_eventlog-idem-bench.XXXXXX)
trap 'el_stop_server; rm -rf "$WORK"' EXIT
el_start_server test/bench/bench.conf
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'EOF'
CREATE EXTENSION pg_eventlog;
SELECT eventlog.create_topic('plain', 4);
SELECT eventlog.create_topic('idem', 4);
SELECT eventlog.create_topic('bplain', 4, format => 'binary');
SELECT eventlog.create_topic('bidem', 4, format => 'binary');
CREATE PROCEDURE txn_plain() LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 0..999 LOOP
        PERFORM eventlog.produce('plain', NULL, '{"payload": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}', partition => 0);
        COMMIT;
    END LOOP;
END $$;
CREATE PROCEDURE txn_idem(pid bigint, base integer) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 0..999 LOOP
        PERFORM eventlog.produce_idempotent('idem', NULL, '{"payload": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}', partition => 0,
                                            producer_id => pid, producer_epoch => 0, sequence => base + i);
        COMMIT;
    END LOOP;
END $$;
EOF

V='{"payload": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'
BATCH="(SELECT array_agg('$V'::jsonb) FROM generate_series(1, 100))"
BBATCH="(SELECT array_agg(ROW(NULL, convert_to('$V', 'UTF8'), NULL, NULL)::eventlog.message) FROM generate_series(1, 100))"
IDEM='producer_id => :pid, producer_epoch => 0, sequence => :seq'
cat >"$WORK/single-plain.sql" <<EOF
SELECT offset_id FROM eventlog.produce('plain', NULL, '$V', partition => :client_id);
EOF
cat >"$WORK/single-idem.sql" <<EOF
SELECT offset_id FROM eventlog.produce_idempotent('idem', NULL, '$V', partition => :client_id, $IDEM);
\set seq :seq + 1
EOF
cat >"$WORK/batch100-plain.sql" <<EOF
SELECT count(*) FROM eventlog.produce_batch('plain', NULL, $BATCH, partition => :client_id);
EOF
cat >"$WORK/batch100-idem.sql" <<EOF
SELECT count(*) FROM eventlog.produce_batch_idempotent('idem', NULL, $BATCH, partition => :client_id, $IDEM);
\set seq :seq + 100
EOF
cat >"$WORK/binbatch100-plain.sql" <<EOF
SELECT count(*) FROM eventlog.produce_binary_batch('bplain', $BBATCH, :client_id);
EOF
cat >"$WORK/binbatch100-idem.sql" <<EOF
SELECT count(*) FROM eventlog.produce_binary_batch_idempotent('bidem', $BBATCH, :client_id, :pid, 0, :seq);
\set seq :seq + 100
EOF
cat >"$WORK/txn-server-plain.sql" <<EOF
SET synchronous_commit = off;
CALL txn_plain();
EOF
cat >"$WORK/txn-server-idem.sql" <<EOF
SET synchronous_commit = off;
CALL txn_idem(:pid, :seq);
\set seq :seq + 1000
EOF

# tps NAME SIDE CLIENTS: one pgbench run, a new producer for it.
tps() {
    local name=$1 side=$2 clients=$3 pid
    pid=$(psql -X -A -t -c 'SELECT producer_id FROM eventlog.init_producer()')
    local mode=prepared
    # A procedure that commits cannot run as a prepared statement.
    [ "$name" = txn-server ] && mode=simple
    psql -X -q -c CHECKPOINT
    pgbench -n -M "$mode" -c "$clients" -j "$clients" -T "$SECS" -D pid="$pid" -D seq=0 \
        -f "$WORK/$name-$side.sql" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

printf '%-16s %12s %12s %8s %8s\n' workload plain_tps idem_tps ratio paired
for w in ${WORKLOADS:-single:1 single:4 batch100:1 binbatch100:1 txn-server:1}; do
    name=${w%:*} clients=${w#*:}
    : >"$WORK/p" ; : >"$WORK/i"
    for r in $(seq "$ROUNDS"); do
        # Alternate which side runs first.
        if [ $((r % 2)) = 1 ]; then
            tps "$name" plain "$clients" >>"$WORK/p"; tps "$name" idem "$clients" >>"$WORK/i"
        else
            tps "$name" idem "$clients" >>"$WORK/i"; tps "$name" plain "$clients" >>"$WORK/p"
        fi
    done
    p=$(median <"$WORK/p") i=$(median <"$WORK/i")
    paired=$(paste "$WORK/i" "$WORK/p" | awk '$2 > 0 { print $1 / $2 }' | median)
    printf '%-16s %12.1f %12.1f %8.2f %8.2f\n' "$name-${clients}c" "$p" "$i" \
        "$(echo "$i / $p" | bc -l)" "$paired"
done
