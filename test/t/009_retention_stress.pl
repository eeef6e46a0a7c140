# Retention under load: producers append while a reader follows the log and
# the maintenance worker rolls and removes segments every 100 ms.  The only
# error anyone sees is the documented out-of-range one (the reader then
# resumes at the log start offset), records come in offset order, and at
# the end every committed record inside the retention window (from the log
# start offset on) is readable, exactly once.  EL_TAP_LONG=1 runs longer.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $transactions = $ENV{EL_TAP_LONG} ? 20000 : 1500;    # per client

my $node = PostgreSQL::Test::Cluster->new('retstress');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '100ms'
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('churn', 1, retention => NULL, retention_bytes => 200000,
                                 segment_interval => '200 milliseconds', segment_bytes => 65536);
    CREATE TABLE ledger (id bigint PRIMARY KEY, offset_id bigint NOT NULL);
    CREATE TABLE seen (seq bigserial, id bigint, offset_id bigint);
    CREATE TABLE reader_errors (sqlstate text, message text);
    CREATE TABLE ctl (done boolean NOT NULL);
    INSERT INTO ctl VALUES (false);
    CREATE SEQUENCE ids;
});

my $script = $node->basedir . '/produce.sql';
open my $fh, '>', $script or die $!;
print $fh q{
\set fate random(1, 4)
SELECT nextval('ids') AS id \gset
BEGIN;
INSERT INTO ledger SELECT :id, offset_id
  FROM eventlog.produce('churn', NULL, jsonb_build_object('id', :id, 'pad', repeat('x', 100)));
\if :fate = 1
ROLLBACK;
\else
COMMIT;
\endif
};
close $fh;

my $reader_sql = q{
DO $$
DECLARE
    next_offset bigint := 0;
    n integer;
    last_offset bigint;
    finished boolean;
BEGIN
    LOOP
        SELECT done INTO finished FROM ctl;
        BEGIN
            WITH r AS (SELECT * FROM eventlog.read('churn', 0, next_offset, 1000)),
                 ins AS (INSERT INTO seen (id, offset_id)
                         SELECT (r.value->>'id')::bigint, r.offset_id FROM r ORDER BY r.offset_id
                         RETURNING offset_id)
            SELECT count(*), max(offset_id) INTO n, last_offset FROM ins;
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO reader_errors VALUES (SQLSTATE, SQLERRM);
            -- Retention went past us: resume at the log start offset.
            next_offset := greatest(next_offset, eventlog.log_start_offset('churn', 0));
            n := -1;
        END;
        IF n > 0 THEN
            next_offset := last_offset + 1;
        END IF;
        COMMIT;
        EXIT WHEN finished AND n = 0;
        IF n = 0 THEN
            PERFORM pg_sleep(0.005);
        END IF;
    END LOOP;
END
$$;
};
my $reader_file = $node->basedir . '/reader.sql';
open my $rfh, '>', $reader_file or die $!;
print $rfh $reader_sql;
close $rfh;
my ($rout, $rerr) = ('', '');
my $reader = IPC::Run::start(
    [ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $reader_file ],
    '>', \$rout, '2>', \$rerr);

my ($pb_out, $pb_err);
my $ok = IPC::Run::run(
    [ 'pgbench', '-n', '-c', 4, '-j', 2, '-t', $transactions, '-f', $script,
      '-h', $node->host, '-p', $node->port, 'postgres' ],
    '>', \$pb_out, '2>', \$pb_err);
ok($ok, 'producers finished without errors') or diag($pb_err);

$node->safe_psql('postgres', 'UPDATE ctl SET done = true');
ok(eval { $reader->finish; 1 } && $reader->result == 0, 'the reader ended cleanly') or diag($rerr);

# Quiesce maintenance (a round could otherwise move the log start between
# the checks below), then look.
$node->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.maintenance_interval = '1h'});
$node->reload;
sleep 1;
my ($removed, $log_start) = split /\|/, $node->safe_psql('postgres', q{
    SELECT m.segments_removed, p.log_start_offset
      FROM eventlog.maintenance m, eventlog.partitions p WHERE p.topic = 'churn'});
note("segments removed during the run: $removed; final log start offset: $log_start");
ok($removed >= 2 && $log_start > 0, 'retention removed segments while producers and the reader ran');

is($node->safe_psql('postgres', q{SELECT count(*) FROM reader_errors WHERE sqlstate <> '22003'}),
   '0', 'the reader saw no error but the documented out-of-range one');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM (SELECT offset_id <= lag(offset_id) OVER (ORDER BY seq) AS back FROM seen) s
     WHERE back}), '0', 'the reader saw offsets in increasing order');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM (SELECT id, offset_id FROM seen EXCEPT ALL SELECT id, offset_id FROM ledger) x}),
   '0', 'the reader saw only committed records, each once');
is($node->safe_psql('postgres', qq{
    SELECT count(*) FROM (
        (SELECT id, offset_id FROM ledger WHERE offset_id >= $log_start
         EXCEPT ALL
         SELECT (value->>'id')::bigint, offset_id FROM eventlog.read('churn', 0, $log_start, 1000000))
        UNION ALL
        (SELECT (value->>'id')::bigint, offset_id FROM eventlog.read('churn', 0, $log_start, 1000000)
         EXCEPT ALL
         SELECT id, offset_id FROM ledger WHERE offset_id >= $log_start)) d}),
   '0', 'every committed record inside the retention window is readable, and nothing else');
is($node->safe_psql('postgres', q{
    SELECT coalesce(sum(n_tup_del), 0) FROM pg_stat_user_tables
     WHERE schemaname = 'eventlog' AND relname LIKE 'seg\_%'}),
   '0', 'retention deleted no rows');

$node->stop;
done_testing();
