# Commands that need a database free of other connections work on a database
# with the extension (issue 13, item 9): ALTER DATABASE ... RENAME TO,
# CREATE DATABASE ... TEMPLATE and ALTER DATABASE ... SET TABLESPACE keep
# pg_eventlog's maintenance worker and notifier away while they run, as DROP
# DATABASE does, and the workers come back after (under the new name for
# RENAME).  Before, each failed with "being accessed by other users", as the
# workers reconnected at once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dbcmds');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '200ms'
max_worker_processes = 16
});
$node->start;

# Both workers of database $db run (by pg_stat_activity, and in the view).
sub workers_run
{
    my ($db) = @_;
    return $node->poll_query_until('postgres', qq{
        SELECT count(DISTINCT backend_type) = 2 FROM pg_stat_activity
         WHERE datname = '$db'
           AND backend_type IN ('pg_eventlog maintenance', 'pg_eventlog notifier')});
}

$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('t', 1);
    SELECT eventlog.produce('t', NULL, '1');
});
ok(workers_run('app'), 'app has its maintenance worker and notifier');

my ($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE app RENAME TO app2');
is($ret, 0, 'ALTER DATABASE ... RENAME TO succeeds') or diag($err);
ok(workers_run('app2'), 'the workers come back under the new name');
is($node->safe_psql('app2', q{
    SELECT database || ' ' || worker_status || ' ' || notifier_status FROM eventlog.maintenance}),
   'app2 running running', 'eventlog.maintenance shows the new name');

# RENAME in a transaction block: the workers wait for the commit.
($ret, $out, $err) = $node->psql('postgres', q{
    BEGIN; ALTER DATABASE app2 RENAME TO app; SELECT pg_sleep(0.5); COMMIT;});
is($ret, 0, 'RENAME in a transaction block succeeds') or diag($err);
ok(workers_run('app'), 'and the workers come back after its commit');

($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE copy TEMPLATE app');
is($ret, 0, 'CREATE DATABASE ... TEMPLATE succeeds') or diag($err);
ok(workers_run('app'), 'the template gets its workers back');
ok(workers_run('copy'), 'the copy gets its own workers');
is($node->safe_psql('copy', q{SELECT string_agg(value::text, ',') FROM eventlog.read('t', 0, 0)}),
   '1', 'the copy has the records');

my $dir = PostgreSQL::Test::Utils::tempdir;
$node->safe_psql('postgres', "CREATE TABLESPACE elsewhere LOCATION '$dir'");
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE app SET TABLESPACE elsewhere');
is($ret, 0, 'ALTER DATABASE ... SET TABLESPACE succeeds') or diag($err);
ok(workers_run('app'), 'the workers come back after the move');
is($node->safe_psql('app', q{SELECT offset_id FROM eventlog.produce('t', NULL, '2')}), '1',
   'and the log goes on');

# A command that fails leaves the workers running again.
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE app RENAME TO copy');
like($err, qr/already exists/, 'a RENAME that fails fails for its own reason');
ok(workers_run('app'), 'and the workers come back');

# A role that cannot run the command cannot stop the workers with it.
$node->safe_psql('postgres', 'CREATE ROLE stranger LOGIN CREATEDB');
my $pid = $node->safe_psql('postgres', q{
    SELECT pid FROM pg_stat_activity WHERE datname = 'app' AND backend_type = 'pg_eventlog maintenance'});
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE app RENAME TO app3',
    extra_params => [ '-U', 'stranger' ]);
like($err, qr/must be owner/, 'a stranger cannot rename it');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE mine TEMPLATE app',
    extra_params => [ '-U', 'stranger' ]);
like($err, qr/permission denied to copy database/, 'nor copy it');
is($node->safe_psql('postgres', q{
    SELECT pid FROM pg_stat_activity WHERE datname = 'app' AND backend_type = 'pg_eventlog maintenance'}),
   $pid, 'and the worker was not stopped');

# template1 with the extension: every CREATE DATABASE copies it, also one
# by a role with CREATEDB that does not own it.
$node->safe_psql('template1', 'CREATE EXTENSION pg_eventlog');
ok(workers_run('template1'), 'template1 has its workers');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE fresh');
is($ret, 0, 'CREATE DATABASE without TEMPLATE copies template1 with the extension') or diag($err);
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE strangers', extra_params => [ '-U', 'stranger' ]);
is($ret, 0, 'so does a role with CREATEDB') or diag($err);
ok(workers_run('template1'), 'template1 gets its workers back');
ok(workers_run('strangers'), 'and the new database has its own');

$node->stop;
done_testing();
