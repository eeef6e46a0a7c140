# Offsets are kept per database: two databases each with a topic of the same
# id count independently, including after a restart, when each recovers its
# own counters lazily.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dbs');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;

for my $db (qw(app1 app2))
{
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    $node->safe_psql($db, q{
        CREATE EXTENSION pg_eventlog;
        SELECT eventlog.create_topic('t', 1);
    });
}
is($node->safe_psql('app1', q{SELECT topic_id FROM eventlog.topic_catalog}),
   $node->safe_psql('app2', q{SELECT topic_id FROM eventlog.topic_catalog}),
   'both topics have the same id');

$node->safe_psql('app1', q{SELECT count(*) FROM eventlog.produce_batch('t', NULL, ARRAY['1','2','3']::jsonb[])});
$node->safe_psql('app2', q{SELECT eventlog.produce('t', NULL, '1')});
is($node->safe_psql('app1', q{SELECT eventlog.high_watermark('t', 0)}), '3', 'app1 counts its own records');
is($node->safe_psql('app2', q{SELECT eventlog.high_watermark('t', 0)}), '1', 'app2 counts its own records');

$node->restart;
is($node->safe_psql('app2', q{SELECT offset_id FROM eventlog.produce('t', NULL, '2')}), '1',
   'after restart, app2 resumes at its own offset');
is($node->safe_psql('app1', q{SELECT offset_id FROM eventlog.produce('t', NULL, '4')}), '3',
   'and app1 at its own');

# Dropping one database leaves the other's log alone.
$node->safe_psql('postgres', 'DROP DATABASE app2');
is($node->safe_psql('app1', q{SELECT string_agg(offset_id::text, ',') FROM eventlog.read('t', 0, 0)}),
   '0,1,2,3', 'the other database is untouched');

$node->stop;
done_testing();
