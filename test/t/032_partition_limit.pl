# eventlog.max_partitions holds against concurrent growth (issue 13, item
# 5): two sessions each growing a topic past the limit together must not
# both succeed.  Before the fix, each counted the other topics' partitions
# in its own snapshot and both committed (20 partitions with a limit of 16).
# The same in REPEATABLE READ, whose snapshot predates the wait.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('limit');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.max_partitions = 16
});
$node->start;
$node->safe_psql('postgres', q{CREATE EXTENSION pg_eventlog});

for my $iso ('READ COMMITTED', 'REPEATABLE READ')
{
    $node->safe_psql('postgres', q{
        SELECT eventlog.create_topic('a', 1);
        SELECT eventlog.create_topic('b', 1);
    });
    my $s1 = $node->background_psql('postgres', on_error_stop => 0);
    my $s2 = $node->background_psql('postgres', on_error_stop => 0);
    $s2->query_safe(q{SET application_name = 'grower2'});
    $s2->query_safe(q{\set VERBOSITY verbose});

    # Session 1 grows "a" to 10 and keeps its transaction open.
    $s1->query_safe("BEGIN ISOLATION LEVEL $iso; SELECT 1;");
    $s1->query_safe(q{SELECT eventlog.alter_topic('a', 10)});
    # Session 2 grows "b" to 10: 20 partitions in all, over 16.
    $s2->query_safe("BEGIN ISOLATION LEVEL $iso; SELECT 1;");
    $s2->query_until(qr/started/, q{\echo started
SELECT eventlog.alter_topic('b', 10);
\echo finished
});
    # It either waits for session 1 (fixed) or finishes at once (before).
    $node->poll_query_until('postgres', q{
        SELECT wait_event_type = 'Lock' OR state = 'idle in transaction'
          FROM pg_stat_activity WHERE application_name = 'grower2'})
      or die 'session 2 neither waited nor finished';
    $s1->query_safe('COMMIT');
    my $out = $s2->query(q{\echo after});
    $s2->query('COMMIT');
    like($s2->{stderr}, qr/ERROR:  53400: too many partitions/,
         "$iso: the second growth past the limit fails with 53400");
    like($s2->{stderr}, qr/This database would have 20 partitions; eventlog.max_partitions is 16/,
         "$iso: and says why");
    is($node->safe_psql('postgres', q{SELECT sum(partitions) FROM eventlog.topic_catalog}),
       '11', "$iso: the limit holds (the first growth committed)");
    $s1->quit;
    $s2->quit;
    $node->safe_psql('postgres', q{
        SELECT eventlog.drop_topic('a');
        SELECT eventlog.drop_topic('b');
    });
}

# create_topic and alter_topic meet on the same lock without deadlocking.
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('a', 1)});
my $s1 = $node->background_psql('postgres', on_error_stop => 0);
my $s2 = $node->background_psql('postgres', on_error_stop => 0);
$s2->query_safe(q{SET application_name = 'creator2'});
$s1->query_safe(q{BEGIN; SELECT eventlog.alter_topic('a', 8);});
$s2->query_until(qr/started/, q{\echo started
SELECT eventlog.create_topic('c', 9);
\echo finished
});
$node->poll_query_until('postgres', q{
    SELECT wait_event_type = 'Lock' OR state = 'idle'
      FROM pg_stat_activity WHERE application_name = 'creator2'})
  or die 'session 2 neither waited nor finished';
$s1->query_safe('COMMIT');
$s2->query(q{\echo after});
like($s2->{stderr}, qr/too many partitions/, 'create_topic waits for alter_topic, then counts its partitions');
is($node->safe_psql('postgres', q{SELECT sum(partitions) FROM eventlog.topic_catalog}),
   '8', 'the limit holds');
$s1->quit;
$s2->quit;

$node->stop;
done_testing();
