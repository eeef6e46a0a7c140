# A maintenance round run inside a subtransaction that is released (RELEASE
# SAVEPOINT) must still activate the segments it rolled when the top-level
# transaction commits, even after a later sibling subtransaction rolls back
# (issue 13, item 14).  Before the fix, the activation kept the released
# subtransaction's nesting level and was discarded by the sibling's
# ROLLBACK TO: the catalog said the new segment was active while records
# kept going to the old one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('subxact');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = 3600s
});
$node->start;

# The worker runs one round when the extension is created: let it pass
# before the topic's segments become due, so that only this test rolls.
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('t', 1);
    SELECT eventlog.produce('t', NULL, '1');
});
$node->poll_query_until('postgres',
    q{SELECT rounds >= 1 FROM eventlog.maintenance WHERE database = current_database()})
  or die 'the maintenance worker never ran';
$node->safe_psql('postgres', q{
    SELECT eventlog.alter_topic('t', segment_interval => '1 millisecond');
    SELECT pg_sleep(0.05);
});
is($node->safe_psql('postgres', q{SELECT active_segment FROM eventlog._partition_routing('t', 0)}),
   '0', 'records go to segment 0 at first');

my ($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
SAVEPOINT a;
SELECT action FROM eventlog.enforce_retention('t') WHERE action = 'rolled';
RELEASE a;
SAVEPOINT b;
SELECT 1/0;
ROLLBACK TO b;
COMMIT;
}, on_error_stop => 0);
like($out, qr/^rolled$/m, 'the round in the released savepoint rolled the partition');
like($err, qr/division by zero/, 'the sibling savepoint failed and was rolled back');

is($node->safe_psql('postgres', q{
    SELECT segment_no FROM eventlog.segment_catalog
     WHERE partition = 0 ORDER BY segment_no DESC LIMIT 1}),
   '1', 'the catalog has the new segment');
is($node->safe_psql('postgres', q{SELECT active_segment FROM eventlog._partition_routing('t', 0)}),
   '1', 'after COMMIT, new records are routed to the new segment');

my $off = $node->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('t', NULL, '2')});
my $seg1 = $node->safe_psql('postgres', q{
    SELECT table_name FROM eventlog.segment_catalog WHERE partition = 0 AND segment_no = 1});
is($node->safe_psql('postgres', qq{SELECT count(*) FROM eventlog_segments."$seg1" WHERE offset_id = $off}),
   '1', 'the next record is stored in the new segment');

# The same with the round in a savepoint that is rolled back: nothing rolls.
$node->safe_psql('postgres', q{SELECT pg_sleep(0.05)});
($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
SAVEPOINT a;
SELECT action FROM eventlog.enforce_retention('t') WHERE action = 'rolled';
ROLLBACK TO a;
COMMIT;
}, on_error_stop => 0);
like($out, qr/^rolled$/m, 'a second round rolled inside a savepoint');
is($node->safe_psql('postgres', q{SELECT active_segment FROM eventlog._partition_routing('t', 0)}),
   '1', 'rolled back with its savepoint: the routing stays');

$node->stop;
done_testing();
