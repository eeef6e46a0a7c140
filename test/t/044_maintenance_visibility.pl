# eventlog.maintenance shows other databases (their names and errors) only
# to superusers and members of pg_read_all_stats, as pg_stat_activity does
# with other users' queries (issue 13, item 17).  Before, any role saw every
# database's row.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('mvis');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
max_worker_processes = 16
});
$node->start;

for my $db (qw(one two))
{
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    $node->safe_psql($db, 'CREATE EXTENSION pg_eventlog');
}
$node->safe_psql('postgres', q{
    CREATE ROLE alice LOGIN;
    CREATE ROLE monitor LOGIN IN ROLE pg_read_all_stats;
});
my $rows = q{SELECT string_agg(database, ',' ORDER BY database) FROM eventlog.maintenance};
ok($node->poll_query_until('two', "SELECT ($rows) = 'one,two'"), 'a superuser sees every database');
is($node->safe_psql('two', $rows, extra_params => [ '-U', 'monitor' ]), 'one,two',
   'so does a member of pg_read_all_stats');
is($node->safe_psql('two', $rows, extra_params => [ '-U', 'alice' ]), 'two',
   'another role sees only the database it is connected to');
is($node->safe_psql('one', $rows, extra_params => [ '-U', 'alice' ]), 'one',
   'wherever it connects');
is($node->safe_psql('one', q{SELECT count(*) FROM eventlog.maintenance WHERE database <> current_database()},
    extra_params => [ '-U', 'alice' ]), '0', 'so no other database\'s error text either');

$node->stop;
done_testing();
