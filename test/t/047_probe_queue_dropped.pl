# Databases dropped while they wait in the launcher's probe queue leave it
# (issue 13, item 7, review of fix13-D).  Before, each was still let in
# when a registry entry freed up, and its probe failed
# EL_MAX_PROBE_FAILURES (3) times, a second apart, before the entry went to
# the next database: a database with the extension behind N dropped ones
# waited 3N seconds with one free entry.  Now every scan of pg_database
# (one follows each CREATE and DROP DATABASE) drops from the queue the
# databases it no longer sees, and no probe of a dropped database is made.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('probequeue');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.max_databases = 1
eventlog.database_probe_interval = '1s'
max_worker_processes = 16
});
$node->start;

# Hold the only registry entry with a probe that cannot finish: it waits
# for a lock on blocker's pg_extension (the launcher probes blocker again
# every second, as it has no extension).
$node->safe_psql('postgres', 'CREATE DATABASE blocker');
my $lock = $node->background_psql('blocker');
$lock->query_safe('BEGIN; LOCK TABLE pg_catalog.pg_extension IN ACCESS EXCLUSIVE MODE');
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity
     WHERE datname = 'blocker' AND backend_type = 'pg_eventlog maintenance'
       AND wait_event_type = 'Lock'}),
   'a probe of blocker holds the only registry entry');

# Databases that wait in the queue, and are dropped there.
my $n = 6;
for my $i (1 .. $n)
{
    $node->safe_psql('postgres', "CREATE DATABASE gone$i");
    $node->safe_psql('postgres', "DROP DATABASE gone$i");
}
# A database with the extension, behind them in the queue.
$node->safe_psql('postgres', 'CREATE DATABASE target');
$node->safe_psql('target', 'CREATE EXTENSION pg_eventlog');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM pg_stat_activity WHERE datname = 'target'
       AND backend_type IN ('pg_eventlog maintenance', 'pg_eventlog notifier')}),
   '0', 'target waits for the entry');

my $log_offset = -s $node->logfile;
$lock->query_safe('ROLLBACK');
$lock->quit;

ok($node->poll_query_until('target', q{
    SELECT worker_status = 'running' AND notifier_status = 'running'
      FROM eventlog.maintenance WHERE database = 'target'}),
   'target gets its workers once the entry is free');
my $log = substr(slurp_file($node->logfile), $log_offset);
my $failed = () = $log =~ /database \d+ does not exist/g;
is($failed, 0, 'no probe of a dropped database was made');

$node->stop;
done_testing();
