# The maintenance workers and retention: one worker per database with the
# extension (also one created after start), none elsewhere; a terminated
# worker comes back; DROP EXTENSION stops it and DROP DATABASE is not
# blocked by it; an error in one database is logged and survived.  The
# worker rolls segments and removes them by time and by size with DROP
# TABLE (no dead tuples); a partition emptied by retention keeps its
# offsets, across a restart too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('maint');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '200ms'
eventlog.database_probe_interval = '2s'
max_worker_processes = 16
});
$node->start;

my $workers = q{SELECT coalesce(string_agg(datname, ',' ORDER BY datname), '')
                  FROM pg_stat_activity WHERE backend_type = 'pg_eventlog maintenance'};

$node->safe_psql('postgres', 'CREATE DATABASE with_ext');
$node->safe_psql('postgres', 'CREATE DATABASE without_ext');
$node->safe_psql('with_ext', 'CREATE EXTENSION pg_eventlog');
ok($node->poll_query_until('postgres', "SELECT ($workers) = 'with_ext'"),
   'a worker runs in the database with the extension, none elsewhere');

# A database where the extension exists before the server starts.
$node->restart;
ok($node->poll_query_until('postgres', "SELECT ($workers) = 'with_ext'"),
   'after a restart the launcher finds it again');

# CREATE EXTENSION in another database: its worker starts at once.
$node->safe_psql('postgres', 'CREATE DATABASE later');
$node->safe_psql('later', 'CREATE EXTENSION pg_eventlog');
ok($node->poll_query_until('postgres', "SELECT ($workers) = 'later,with_ext'"),
   'CREATE EXTENSION after start gets its worker');
is($node->safe_psql('later', q{SELECT count(*) FROM eventlog.maintenance WHERE database = 'later' AND pid IS NOT NULL}),
   '1', 'eventlog.maintenance shows it');

# Terminated, it comes back.
my $pid = $node->safe_psql('postgres',
    q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_eventlog maintenance' AND datname = 'later'});
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($node->poll_query_until('postgres', qq{
    SELECT count(*) = 1 FROM pg_stat_activity
     WHERE backend_type = 'pg_eventlog maintenance' AND datname = 'later' AND pid <> $pid}),
   'a terminated worker comes back');

# DROP EXTENSION stops it; DROP DATABASE is not blocked by a worker.
$node->safe_psql('later', 'DROP EXTENSION pg_eventlog');
ok($node->poll_query_until('postgres', "SELECT ($workers) = 'with_ext'"),
   'DROP EXTENSION stops the worker');
$node->safe_psql('later', 'CREATE EXTENSION pg_eventlog');
ok($node->poll_query_until('postgres', "SELECT ($workers) = 'later,with_ext'"),
   'and CREATE EXTENSION brings it back');
# A DROP DATABASE that cannot succeed (not the owner) leaves the worker alone.
my $later_pid = $node->safe_psql('postgres',
    q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_eventlog maintenance' AND datname = 'later'});
$node->safe_psql('postgres', 'CREATE ROLE stranger LOGIN');
my ($drop_ret, $drop_out, $drop_err) = $node->psql('postgres', 'DROP DATABASE later',
    extra_params => [ '-U', 'stranger' ]);
like($drop_err, qr/must be owner of database later/, 'a non-owner cannot drop the database');
is($node->safe_psql('postgres',
    q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_eventlog maintenance' AND datname = 'later'}),
   $later_pid, 'and its attempt does not stop the worker');
# A client still in the database makes DROP DATABASE wait (5 s at most)
# for it to leave.  By then every process of ours must have left too: the
# notifier of the extension dropped above used to sleep on (up to 10 s)
# after its maintenance worker had freed their registry entry, so that
# nobody stopped it and the DROP failed.
my $stay = IPC::Run::start(
    [ 'psql', '-XAtq', '-d', $node->connstr('later'), '-c', 'SELECT pg_sleep(3)' ],
    '>', \my $stay_out, '2>', \my $stay_err);
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity WHERE datname = 'later' AND query LIKE '%pg_sleep(3)%'}),
   'a client waits in the database');
$node->safe_psql('postgres', 'DROP DATABASE later');
$stay->finish;
ok($node->poll_query_until('postgres', "SELECT ($workers) = 'with_ext'"),
   'DROP DATABASE works while the database has a worker, and no notifier is left behind');

# Retention by time: short segments and retention, the worker does the rest.
$node->safe_psql('with_ext', q{
    SELECT eventlog.create_topic('timed', 1, retention => '2 seconds',
                                 segment_interval => '300 milliseconds');
    SELECT count(*) FROM eventlog.produce_batch('timed', NULL,
        (SELECT array_agg(to_jsonb(i)) FROM generate_series(1, 100) i));
});
ok($node->poll_query_until('with_ext', q{
    SELECT log_start_offset = 100 AND high_watermark = 100
      FROM eventlog.partitions WHERE topic = 'timed'}),
   'time retention removes every expired record; log start moves to the high watermark');
my ($rolled, $removed) = split /\|/, $node->safe_psql('with_ext',
    q{SELECT segments_rolled, segments_removed FROM eventlog.maintenance WHERE database = 'with_ext'});
ok($rolled >= 1 && $removed >= 1, "the worker rolled ($rolled) and removed ($removed) segments");
my ($code, $out, $err) = $node->psql('with_ext', q{SELECT * FROM eventlog.read('timed', 0, 0)});
like($err, qr/offset 0 is before the log start offset/, 'reading removed records is the out-of-range error');
is($node->safe_psql('with_ext', q{
    SELECT coalesce(sum(n_tup_del + n_dead_tup), 0) FROM pg_stat_user_tables
     WHERE schemaname = 'eventlog' AND relname LIKE 'seg\_%'}),
   '0', 'no DELETE and no dead tuples in segment tables');

# The emptied partition keeps its offsets, across a restart too.
$node->restart;
is($node->safe_psql('with_ext', q{SELECT offset_id FROM eventlog.produce('timed', NULL, '"next"')}),
   '100', 'a partition emptied by retention continues above its last offset after a restart');

# Retention by size: segments roll at 64 kB, the oldest go while the
# partition is above retention_bytes.
$node->safe_psql('with_ext', q{
    SELECT eventlog.create_topic('sized', 1, retention => NULL, retention_bytes => 300000,
                                 segment_bytes => 65536);
});
for my $i (1 .. 10)
{
    $node->safe_psql('with_ext', q{
        SELECT count(*) FROM eventlog.produce_batch('sized', NULL,
            (SELECT array_agg(jsonb_build_object('pad', repeat('x', 200))) FROM generate_series(1, 200)));
        SELECT pg_sleep(0.3);
    });
}
ok($node->poll_query_until('with_ext', q{
    SELECT log_start_offset > 0 AND bytes <= 300000 + 2 * 65536 + 65536
      FROM eventlog.partitions WHERE topic = 'sized'}),
   'size retention removes the oldest segments');
is($node->safe_psql('with_ext', q{
    SELECT count(*) = high_watermark - log_start_offset
      FROM eventlog.partitions p, LATERAL eventlog.read('sized', 0, p.log_start_offset, 100000) r
     WHERE p.topic = 'sized' GROUP BY high_watermark, log_start_offset}),
   't', 'every record from the log start on is still readable');

# An error in one topic is logged, shown, and does not stop the worker.
my $wpid = $node->safe_psql('postgres',
    q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_eventlog maintenance' AND datname = 'with_ext'});
my $log_offset = -s $node->logfile;
$node->safe_psql('with_ext', q{
    SELECT eventlog.create_topic('broken', 1);
    SELECT eventlog.produce('broken', NULL, '1');
    -- Sabotage: an administrator renames the active segment's table.
    SELECT format('ALTER TABLE eventlog_segments.%I RENAME TO renamed_by_mistake', s.table_name)
      FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog t USING (topic_id)
     WHERE t.name = 'broken' \gexec
});
ok($node->wait_for_log(qr/pg_eventlog maintenance of topic \d+ failed/, $log_offset),
   'the failing round is logged');
ok($node->poll_query_until('with_ext', q{
    SELECT last_error IS NOT NULL FROM eventlog.maintenance WHERE database = 'with_ext'}),
   'and shown in eventlog.maintenance');
is($node->safe_psql('postgres',
    q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_eventlog maintenance' AND datname = 'with_ext'}),
   $wpid, 'the worker survives it');
my $before = $node->safe_psql('with_ext', q{SELECT rounds FROM eventlog.maintenance WHERE database = 'with_ext'});
ok($node->poll_query_until('with_ext', qq{
    SELECT rounds > $before + 2 FROM eventlog.maintenance WHERE database = 'with_ext'}),
   'and keeps running rounds');

# Only a due round or a reload starts a round: a latch set for another
# reason (here SIGUSR1, as PostgreSQL's own interrupts send, e.g. the
# shared invalidation queue asking an idle backend to catch up) does not.
$node->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.maintenance_interval = '1h'; SELECT pg_reload_conf()});
ok($node->poll_query_until('with_ext', q{SELECT current_setting('eventlog.maintenance_interval') = '1h'}),
   'a long interval');
sleep 1;	# let the round the reload starts finish
$before = $node->safe_psql('with_ext', q{SELECT rounds FROM eventlog.maintenance WHERE database = 'with_ext'});
kill 'USR1', $wpid for 1 .. 5;
sleep 1;
is($node->safe_psql('with_ext', q{SELECT rounds FROM eventlog.maintenance WHERE database = 'with_ext'}),
   $before, 'a stray wake-up of the worker does not start a round');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET eventlog.maintenance_interval; SELECT pg_reload_conf()});
ok($node->poll_query_until('with_ext', qq{
    SELECT rounds > $before FROM eventlog.maintenance WHERE database = 'with_ext'}),
   'a reload does');

$node->stop;
done_testing();
