# Every database with the extension gets its workers after a restart,
# however many databases come before it in pg_database (issue 13, item 7).
# The registry has eventlog.max_databases (16) entries and a probe takes
# one while it checks a database; before, each probe round gave the entries
# to the first rows of pg_database again, so databases further down were
# never probed.  Now databases wait for a probe in a queue, first in first
# out, and are let in as probes of databases without the extension free
# their entries.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('manydbs');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.database_probe_interval = '2s'
max_worker_processes = 16
});
$node->start;

$node->safe_psql('postgres', sprintf('CREATE DATABASE plain%02d', $_)) for 1 .. 20;
for my $db (qw(late1 late2))
{
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    $node->safe_psql($db, q{CREATE EXTENSION pg_eventlog; SELECT eventlog.create_topic('t', 1);});
}

my $workers = q{
    SELECT string_agg(datname || ':' || backend_type, ',' ORDER BY datname, backend_type)
      FROM pg_stat_activity
     WHERE backend_type IN ('pg_eventlog maintenance', 'pg_eventlog notifier')};
my $both = 'late1:pg_eventlog maintenance,late1:pg_eventlog notifier,'
  . 'late2:pg_eventlog maintenance,late2:pg_eventlog notifier';
ok($node->poll_query_until('postgres', "SELECT ($workers) = '$both'"),
   'CREATE EXTENSION starts both workers of each database');

$node->restart;
ok($node->poll_query_until('postgres', "SELECT ($workers) = '$both'"),
   'after a restart, both databases at the end of pg_database get both workers');
is($node->safe_psql('late2', q{
    SELECT string_agg(database || ' ' || worker_status || ' ' || notifier_status, ',' ORDER BY database)
      FROM eventlog.maintenance}),
   'late1 running running,late2 running running', 'eventlog.maintenance shows them');

$node->stop;

# A registry of one entry: the database left out says why in
# eventlog.maintenance, and CREATE EXTENSION warns.
my $full = PostgreSQL::Test::Cluster->new('fullreg');
$full->init;
$full->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.max_databases = 1
eventlog.database_probe_interval = '1s'
max_worker_processes = 16
});
$full->start;
$full->safe_psql('postgres', 'CREATE DATABASE a');
$full->safe_psql('postgres', 'CREATE DATABASE b');
# A probe may hold the only entry for a moment: a then waits for its turn.
$full->safe_psql('a', 'CREATE EXTENSION pg_eventlog');
ok($full->poll_query_until('a', q{
    SELECT worker_status = 'running' FROM eventlog.maintenance WHERE database = 'a'}),
   'with one registry entry, the first database gets it');
my ($ret, $out, $err) = $full->psql('b', 'CREATE EXTENSION pg_eventlog');
like($err, qr/WARNING:  pg_eventlog cannot maintain another database/,
     'CREATE EXTENSION in a second database warns');
is($full->safe_psql('b', q{
    SELECT database || ': ' || worker_status || ' / ' || notifier_status
      FROM eventlog.maintenance WHERE database = current_database()}),
   q{b: not running: waiting for the launcher's probe or a free registry entry (eventlog.max_databases) / }
   . q{not running: waiting for the launcher's probe or a free registry entry (eventlog.max_databases)},
   'and eventlog.maintenance says why its workers do not run');
ok($full->wait_for_log(qr/pg_eventlog cannot check 2 databases for the extension/),
   'the launcher logs that it cannot check the other databases (postgres and b)');
$full->stop;
done_testing();
