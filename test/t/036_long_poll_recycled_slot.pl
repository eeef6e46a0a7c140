# A long poll (read with wait) must wake when its record commits even if,
# while it sleeps, other partitions (here of another database) take its
# partition's shared slot and the partition's next producer gets another.
# Long polls sleep on their topic's wake-up condition variable, which every
# producing transaction of the topic broadcasts, not on a slot's.  Before
# the fix (when reads slept on the slot's), the read below slept to the end
# of its wait (with 5 minutes, it returned after 300.5 s; the test, waiting
# 1 day, times out).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('recycled_cv');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.max_partitions = 2
});
$node->start;

for my $db (qw(app1 app2))
{
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    $node->safe_psql($db, 'CREATE EXTENSION pg_eventlog');
}
$node->safe_psql('app1', q{SELECT eventlog.create_topic('t', 1)});
$node->safe_psql('app2', q{SELECT eventlog.create_topic('u', 2)});

# app1: a long poll of t/0 from offset 0, attached to a slot.
my $waiter = $node->background_psql('app1', on_error_stop => 0);
$waiter->query_safe(q{SET application_name = 'waiter'});
$waiter->query_until(qr/waiting/, q{\echo waiting
SELECT 'woke', count(*) FROM eventlog.read('t', 0, 0, wait => '1 day');
});
$node->poll_query_until('app1', q{
    SELECT wait_event = 'Extension' FROM pg_stat_activity WHERE application_name = 'waiter'})
  or die 'the long poll does not sleep';

# app2 uses both slots (reads of u/0 and u/1 take them, recycling t/0's).
$node->safe_psql('app2', q{SELECT count(*) FROM eventlog.read('u', 0, 0)});
$node->safe_psql('app2', q{SELECT count(*) FROM eventlog.read('u', 1, 0)});

# A record of t/0 commits (its producer gets the other slot).
$node->safe_psql('app1', q{SELECT eventlog.produce('t', NULL, '"x"', partition => 0)});

ok($node->poll_query_until('app1', q{
    SELECT state = 'idle' FROM pg_stat_activity WHERE application_name = 'waiter'}),
   'the long poll wakes when the record commits, though its slot was recycled');
like($waiter->query(q{\echo done}), qr/woke\|1/, 'and returns it');
$waiter->quit;

$node->stop;
done_testing();
