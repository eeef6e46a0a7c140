# One database pinning every shared partition slot with open producing
# transactions must not stop the others (issue 13, item 6).  A database may
# pin at most its share of eventlog.max_partitions (all but a reserve when
# it is alone), and readers never need a slot: a partition without one has
# no offset in flight, so its stable offset is what counter recovery
# computes.  Before the fix, app1 pinned all 8 slots and every read,
# produce and view of app2 failed with 53400.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('slots');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.max_partitions = 8
max_connections = 40
});
$node->start;

for my $db (qw(app1 app2))
{
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    $node->safe_psql($db, 'CREATE EXTENSION pg_eventlog');
}
$node->safe_psql('app1', q{SELECT eventlog.create_topic('t1', 8)});
$node->safe_psql('app2', q{
    SELECT eventlog.create_topic('t2', 4);
    SELECT count(*) FROM generate_series(0, 3) p, eventlog.produce('t2', NULL, '"x"', partition => p);
    SELECT count(*) FROM generate_series(0, 3) p, eventlog.produce('t2', NULL, '"y"', partition => p);
});

# app1: eight sessions, each with an open transaction producing to its own
# partition, pin as many slots as they can.
my @holders;
my $pinned = 0;
my $refused = '';
for my $p (0 .. 7)
{
    my $s = $node->background_psql('app1', on_error_stop => 0);
    $s->query_safe('BEGIN');
    my $out = $s->query("SELECT offset_id FROM eventlog.produce('t1', NULL, '1', partition => $p)");
    if ($s->{stderr} =~ /ERROR/)
    {
        $refused .= $s->{stderr};
        $s->query('ROLLBACK');
    }
    else
    {
        $pinned++;
    }
    push @holders, $s;
}
is($pinned, 7, 'app1 pins 7 of the 8 slots, all but the reserve');
like($refused, qr/too many event log partitions have transactions in flight in database "app1"/,
     'the eighth is refused, naming the database');
like($refused, qr/at most 7 of the 8 partition slots while 0 other databases do too/,
     'and its share');

# app2 still works: read, produce, the views.
is($node->safe_psql('app2', q{SELECT string_agg(value #>> '{}', ',' ORDER BY offset_id) FROM eventlog.read('t2', 2, 0)}),
   'x,y', 'app2 reads');
is($node->safe_psql('app2', q{SELECT offset_id FROM eventlog.produce('t2', NULL, '"z"', partition => 3)}),
   '2', 'app2 produces (to the reserved slot)');
is($node->safe_psql('app2', q{SELECT string_agg(partition || ':' || high_watermark || ':' || last_stable_offset, ' ' ORDER BY partition) FROM eventlog.partitions}),
   '0:2:2 1:2:2 2:2:2 3:3:3', 'app2 sees its partitions');

# app2 pins the last slot too: every slot has a transaction in flight now.
my $p2 = $node->background_psql('app2', on_error_stop => 0);
$p2->query_safe('BEGIN');
$p2->query_safe(q{SELECT offset_id FROM eventlog.produce('t2', NULL, '"w"', partition => 0)});

# Readers of app2 do without a slot, and see the right offsets.
is($node->safe_psql('app2', q{SELECT string_agg(value #>> '{}', ',' ORDER BY offset_id) FROM eventlog.read('t2', 3, 0)}),
   'x,y,z', 'app2 reads a partition that can get no slot');
is($node->safe_psql('app2', q{SELECT string_agg(partition || ':' || high_watermark || ':' || last_stable_offset, ' ' ORDER BY partition) FROM eventlog.partitions}),
   '0:3:2 1:2:2 2:2:2 3:3:3', 'the view, with partition 0 held back by the open transaction');
is($node->safe_psql('app2', q{SELECT count(*) FROM eventlog.read('t2', 1, 2, wait => '100 milliseconds')}),
   '0', 'a long poll of a partition without a slot ends at its timeout');
is($node->safe_psql('app2', q{SELECT count(*) FROM eventlog.poll('t2', 'g', 100, partitions => 4)}),
   '9', 'a consumer group polls every partition, all but the held-back record');
is($node->safe_psql('app2', q{SELECT count(*) FROM eventlog.enforce_retention('t2')}),
   '0', 'maintenance runs');
my ($ret, $out, $err) = $node->psql('app2', q{SELECT eventlog.produce('t2', NULL, '"v"', partition => 1)});
like($err, qr/too many event log partitions are in use/,
     'a producer needing a new slot while every slot is pinned is refused');

# A long poll without a slot wakes when a producer of the partition commits.
my $waiter = $node->background_psql('app2', on_error_stop => 0);
$waiter->query_until(qr/waiting/, q{\echo waiting
SELECT 'woke', count(*) FROM eventlog.read('t2', 0, 2, wait => '5 minutes');
});
$p2->query_safe('COMMIT');
like($waiter->query(q{\echo done}), qr/woke\|1/, 'the long poll woke with the committed record');

$_->quit for (@holders, $p2, $waiter);

# Once app1's transactions end, its producers pin again.
$node->safe_psql('app1', "SELECT eventlog.produce('t1', NULL, '2', partition => $_)") for 0 .. 7;
is($node->safe_psql('app1', q{SELECT count(*) FROM generate_series(0, 7) p, eventlog.read('t1', p, 0)}),
   '8', 'app1 produces to all its partitions again');

$node->stop;
done_testing();
