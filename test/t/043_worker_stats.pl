# The maintenance worker reports its table statistics (issue 13, item 10):
# the catalog rows its rounds insert, update and delete show in
# pg_stat_user_tables while it runs, so autovacuum sees that churn.  Before,
# a worker only flushed its statistics when it exited.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('wstats');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '200ms'
max_worker_processes = 16
});
$node->start;

$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('t', 1, retention => '1 second',
                                 segment_interval => '300 milliseconds');
    SELECT count(*) FROM eventlog.produce_batch('t', NULL, ARRAY['1','2']::jsonb[]);
});
my $worker_pid = $node->safe_psql('postgres', q{
    SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_eventlog maintenance'});
ok($worker_pid ne '', 'the maintenance worker runs');

my $churn = q{SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)
                FROM pg_stat_user_tables
               WHERE schemaname = 'eventlog'
                 AND relname IN ('segment_catalog', 'partition_catalog')};
# This session's own writes are flushed when it ends, before the baseline.
my $before = $node->safe_psql('postgres', $churn);

# The worker rolls the segment and removes the old one by itself.
ok($node->poll_query_until('postgres', q{
    SELECT segments_rolled > 0 AND segments_removed > 0 FROM eventlog.maintenance}),
   'the worker rolled and removed segments');
ok($node->poll_query_until('postgres', "SELECT ($churn) > $before"),
   'and its catalog updates show in pg_stat_user_tables while it runs');
is($node->safe_psql('postgres', q{
    SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_eventlog maintenance'}),
   $worker_pid, 'from the same worker (not flushed by an exit)');

$node->stop;
done_testing();
