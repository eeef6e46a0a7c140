# A database command bound to fail must not stop pg_eventlog's workers
# (issue 13, item 9, hostile review): the workers are kept away only while a
# command the current role may run, and that can run here, runs.  Before, the
# owner of a database without CREATEDB stopped its workers with every
# ALTER DATABASE ... RENAME TO or CREATE DATABASE ... TEMPLATE it tried (both
# need CREATEDB), anyone entitled did so with CREATE DATABASE or SET
# TABLESPACE in a transaction block (refused there), and an owner without
# CREATE on the tablespace with SET TABLESPACE: a loop of such commands kept
# the maintenance worker from ever finishing a round.  Likewise DROP
# DATABASE inside a function (refused there) stopped the workers, which
# came back after it failed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dbdenied');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '200ms'
max_worker_processes = 16
});
$node->start;

my $dir = PostgreSQL::Test::Utils::tempdir;
$node->safe_psql('postgres', qq{
    CREATE ROLE downer LOGIN;
    CREATE DATABASE app OWNER downer;
    CREATE TABLESPACE elsewhere LOCATION '$dir';
});
$node->safe_psql('app', 'CREATE EXTENSION pg_eventlog');

my $pids = q{SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity
              WHERE datname = 'app'
                AND backend_type IN ('pg_eventlog maintenance', 'pg_eventlog notifier')};
# The PIDs of app's two workers, once both run.
sub workers_before
{
    $node->poll_query_until('postgres', qq{
        SELECT count(*) = 2 FROM pg_stat_activity WHERE datname = 'app'
           AND backend_type IN ('pg_eventlog maintenance', 'pg_eventlog notifier')})
      or die 'the workers of app do not run';
    return $node->safe_psql('postgres', $pids);
}

my @denied = (
    [ 'downer', 'ALTER DATABASE app RENAME TO app2', qr/permission denied to rename database/,
      'RENAME by the owner without CREATEDB' ],
    [ 'downer', 'CREATE DATABASE copy TEMPLATE app', qr/permission denied to create database/,
      'CREATE DATABASE ... TEMPLATE by the owner without CREATEDB' ],
    [ 'downer', 'ALTER DATABASE app SET TABLESPACE elsewhere', qr/permission denied for tablespace/,
      'SET TABLESPACE by the owner without CREATE on the tablespace' ],
    [ 'postgres', 'BEGIN; CREATE DATABASE copy TEMPLATE app; ROLLBACK',
      qr/cannot run inside a transaction block/, 'CREATE DATABASE ... TEMPLATE in a transaction block' ],
    [ 'postgres', 'BEGIN; ALTER DATABASE app SET TABLESPACE elsewhere; ROLLBACK',
      qr/cannot run inside a transaction block/, 'SET TABLESPACE in a transaction block' ],
    [ 'postgres', 'DO $$BEGIN EXECUTE $q$CREATE DATABASE copy TEMPLATE app$q$; END$$',
      qr/cannot be executed from a function/, 'CREATE DATABASE ... TEMPLATE in a function' ],
    [ 'postgres', 'DO $$BEGIN EXECUTE $q$DROP DATABASE app$q$; END$$',
      qr/cannot be executed from a function/, 'DROP DATABASE in a function' ],
    [ 'postgres', 'ALTER DATABASE app SET TABLESPACE pg_default', undef,
      'SET TABLESPACE to the tablespace it is in (nothing to do)' ],
);
for my $case (@denied)
{
    my ($role, $sql, $error, $name) = @$case;
    my $before = workers_before();
    my ($ret, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', $role ]);
    if (defined $error)
    {
        like($err, $error, "$name fails");
    }
    else
    {
        is($ret, 0, "$name succeeds") or diag($err);
    }
    is($node->safe_psql('postgres', $pids), $before, "$name leaves the workers running");
}

# The owner renames its database from inside it: refused, workers stay.
my $before = workers_before();
my ($ret, $out, $err) = $node->psql('app', 'ALTER DATABASE app RENAME TO app2');
like($err, qr/current database cannot be renamed/, 'RENAME of the current database fails');
is($node->safe_psql('postgres', $pids), $before, 'and leaves the workers running');

# Entitled, the same commands still work (041 covers them in full).
$node->safe_psql('postgres', 'ALTER ROLE downer CREATEDB');
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE app RENAME TO app2',
                                 extra_params => [ '-U', 'downer' ]);
is($ret, 0, 'RENAME by the owner with CREATEDB succeeds') or diag($err);
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 2 FROM pg_stat_activity WHERE datname = 'app2'
       AND backend_type IN ('pg_eventlog maintenance', 'pg_eventlog notifier')}),
   'and the workers come back');

$node->stop;
done_testing();
