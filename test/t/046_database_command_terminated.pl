# The session running DROP DATABASE or ALTER DATABASE ... RENAME TO is
# terminated (pg_terminate_backend) while the command waits for the other
# connections to the database to go: pg_eventlog's workers, which the command
# stopped, come back at once (issue 13, item 9, hostile review).  Before, a
# terminated DROP DATABASE left the database marked as being dropped; the
# launcher then forgot it, and its workers came back only with the next
# probe of every database (eventlog.database_probe_interval, an hour here);
# and so did a DROP DATABASE that failed after waiting for a client, as the
# launcher forgot the database while the DROP waited.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dbterm');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '200ms'
eventlog.database_probe_interval = '1h'
max_worker_processes = 16
});
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', 'CREATE EXTENSION pg_eventlog');

sub workers
{
    my ($n) = @_;
    return $node->poll_query_until('postgres', qq{
        SELECT count(*) = $n FROM pg_stat_activity WHERE datname = 'app'
           AND backend_type IN ('pg_eventlog maintenance', 'pg_eventlog notifier')});
}
ok(workers(2), 'app has its maintenance worker and notifier');

# Each command waits 5 s for a client of app to leave, then fails; or its
# session is terminated while it waits.
for my $case ([ 'DROP DATABASE app', 0 ], [ 'DROP DATABASE app', 1 ],
              [ 'ALTER DATABASE app RENAME TO app2', 1 ])
{
    my ($cmd, $terminate) = @$case;
    my $how = $terminate ? 'terminated' : 'failed';
    my $client = $node->background_psql('app');
    $client->query_safe('SELECT 1');
    my $session = $node->background_psql('postgres', on_error_stop => 0);
    my $pid = $session->query_safe('SELECT pg_backend_pid()');
    if ($terminate)
    {
        $session->query_until(qr/go/, "\\echo go\n$cmd;\n");
        ok(workers(0), "$cmd stops the workers");
        is($node->safe_psql('postgres', qq{
            SELECT pg_terminate_backend($pid) FROM pg_stat_activity
             WHERE pid = $pid AND state = 'active' AND query LIKE '$cmd%'}),
           't', "the session running $cmd is terminated while it waits");
        $node->poll_query_until('postgres',
            "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid")
          or die 'the session did not end';
        eval { $session->quit };
    }
    else
    {
        $session->query("$cmd;");
        like($session->{stderr}, qr/is being accessed by other users/,
             "$cmd fails while a client is connected");
        $session->quit;
    }
    $client->quit;
    is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_database WHERE datname = 'app'}),
       '1', "app is still there after the $how $cmd");
    ok(workers(2), "and its workers come back after the $how $cmd");
    is($node->safe_psql('app', q{SELECT worker_status || ' ' || notifier_status FROM eventlog.maintenance}),
       'running running', 'eventlog.maintenance says so');
}

$node->stop;
done_testing();
