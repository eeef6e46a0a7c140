# CREATE EXTENSION rolled back to a savepoint asks for no worker when the
# transaction commits (issue 13, item 7, review of fix13-D).  Before, the
# request made at CREATE EXTENSION survived the ROLLBACK TO SAVEPOINT: the
# commit started a maintenance worker in a database without the extension,
# or, with the registry full, warned that pg_eventlog cannot maintain it.
# The full registry makes the request visible: its WARNING comes at COMMIT.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('extsavepoint');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.max_databases = 1
eventlog.database_probe_interval = '1h'
max_worker_processes = 16
max_prepared_transactions = 2
});
$node->start;

# a takes the only registry entry for good.
$node->safe_psql('postgres', 'CREATE DATABASE a');
$node->safe_psql('a', 'CREATE EXTENSION pg_eventlog');
ok($node->poll_query_until('a', q{
    SELECT worker_status = 'running' FROM eventlog.maintenance WHERE database = 'a'}),
   'a has the only registry entry');

my $warning = qr/WARNING:  pg_eventlog cannot maintain another database/;
my @cases = (
    [ 'ROLLBACK TO SAVEPOINT',
      'BEGIN; SAVEPOINT s; CREATE EXTENSION pg_eventlog; ROLLBACK TO SAVEPOINT s; COMMIT', 0, 0 ],
    [ 'a released inner savepoint inside a rolled-back outer one',
      'BEGIN; SAVEPOINT s1; SAVEPOINT s2; CREATE EXTENSION pg_eventlog; RELEASE s2; '
      . 'ROLLBACK TO SAVEPOINT s1; COMMIT', 0, 0 ],
    [ 'a subtransaction that failed after it',
      'BEGIN; SAVEPOINT s; CREATE EXTENSION pg_eventlog; SELECT 1/0; ROLLBACK TO SAVEPOINT s; COMMIT', 0, 0 ],
    # Controls: the request survives a released savepoint, and an aborted
    # subtransaction after CREATE EXTENSION does not take it away.
    [ 'RELEASE SAVEPOINT',
      'BEGIN; SAVEPOINT s1; SAVEPOINT s2; CREATE EXTENSION pg_eventlog; RELEASE s2; RELEASE s1; COMMIT', 1, 1 ],
    [ 'a later savepoint rolled back',
      'BEGIN; CREATE EXTENSION pg_eventlog; SAVEPOINT s; SELECT 1; ROLLBACK TO SAVEPOINT s; COMMIT', 1, 1 ],
);
my $i = 0;
for my $case (@cases)
{
    my ($name, $sql, $warns, $installed) = @$case;
    my $db = 'b' . ++$i;
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    my ($ret, $out, $err) = $node->psql($db, $sql, on_error_stop => 0);
    if ($warns)
    {
        like($err, $warning, "CREATE EXTENSION kept through $name asks for a worker at COMMIT");
    }
    else
    {
        unlike($err, $warning, "CREATE EXTENSION undone by $name asks for no worker");
    }
    is($node->safe_psql($db, q{SELECT count(*) FROM pg_extension WHERE extname = 'pg_eventlog'}),
       $installed, "the extension is " . ($installed ? '' : 'not ') . "installed after $name");
}

# PREPARE TRANSACTION ends the transaction: its request must not be carried
# into the session's next one.  Before, the next statement's commit warned.
$node->safe_psql('postgres', 'CREATE DATABASE prep');
my ($ret, $out, $err) = $node->psql('prep', q{
    BEGIN; CREATE EXTENSION pg_eventlog; PREPARE TRANSACTION 'p';
    SELECT 1;});
is($ret, 0, 'PREPARE TRANSACTION of CREATE EXTENSION succeeds') or diag($err);
unlike($err, $warning, 'the next transaction of the session asks for no worker');
$node->safe_psql('prep', q{ROLLBACK PREPARED 'p'});

$node->stop;
done_testing();
