# Kafka's classic group protocol across sessions (sql/install/kafka_groups.sql,
# src/kafka_group.c): JoinGroup and SyncGroup wait for the other members in
# the server, without a snapshot and without spinning, and are woken by the
# other sessions' commits; a rebalance when a member joins, leaves or
# misses its session timeout; committed offsets are the SQL groups'
# positions.  Each session stands for a gateway connection of its own.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('kg');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.kafka_initial_rebalance_delay = 0
eventlog.kafka_min_session_timeout = 100
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('kt', 4);
    SELECT eventlog.produce('kt', NULL, '{}', partition => p) FROM generate_series(0, 3) p, generate_series(1, 5);
});

# A subscription to kt, and a protocol list.
my $protos = q{ARRAY[ROW('range', '\x00000000000100026b74ffffffff'::bytea)]::eventlog.kafka_protocol[]};

# Run statements (one -c each) in the background; returns the harness and its output.
sub background
{
    my (@sql) = @_;
    my ($out, $err) = ('', '');
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-d', $node->connstr('postgres'), map { ('-c', $_) } @sql ],
        '>', \$out, '2>', \$err);
    return { h => $h, out => \$out, err => \$err };
}

sub finish
{
    my ($b) = @_;
    $b->{h}->finish;
    diag(${ $b->{err} }) if ${ $b->{err} } ne '';
    return [ split /\|/, (split /\n/, ${ $b->{out} })[-1] // '' ];
}

sub join_sql
{
    my ($group, $member, $session, $rebalance) = @_;
    $session //= 30000;
    $rebalance //= 30000;
    return qq{CALL eventlog.kafka_join_group('$group', '$member', NULL, 'consumer', $protos, $session, $rebalance, 'c', 'h', false)};
}

sub join_now
{
    my $r = $node->safe_psql('postgres', join_sql(@_));
    return [ split /\|/, $r ];
}

sub sync_sql
{
    my ($group, $gen, $member, $assignments) = @_;
    $assignments //= 'NULL';
    return qq{CALL eventlog.kafka_sync_group('$group', $gen, '$member', NULL, NULL, NULL, $assignments)};
}

sub heartbeat
{
    my ($group, $gen, $member) = @_;
    return $node->safe_psql('postgres', qq{SELECT eventlog.kafka_heartbeat('$group', $gen, '$member')});
}

# Sessions waiting in a JoinGroup or SyncGroup: in the Extension wait event, with no snapshot.
sub waiting
{
    my ($n, $what) = @_;
    return $node->poll_query_until('postgres', qq{
        SELECT count(*) = $n FROM pg_stat_activity
         WHERE query LIKE 'CALL eventlog.kafka_${what}_group%' AND wait_event_type = 'Extension'
           AND backend_xmin IS NULL AND pid <> pg_backend_pid()});
}

sub state
{
    my ($group) = @_;
    return $node->safe_psql('postgres', qq{SELECT state || ' ' || generation FROM eventlog.kafka_groups WHERE group_name = '$group'});
}

# 1. A alone: generation 1, leader, Stable after its sync.
my $a = join_now('g', '');
is($a->[0] . ' ' . $a->[1], '0 1', 'the first member gets generation 1 at once');
my $ma = $a->[5];
is($a->[4], $ma, 'and leads it');
my $s = [ split /\|/, $node->safe_psql('postgres', sync_sql('g', 1, $ma, qq{ARRAY[ROW('$ma', '\\x0a'::bytea)]::eventlog.kafka_assignment[]})) ];
is("$s->[0] $s->[3]", '0 \x0a', 'its sync returns its assignment');

# 2. B joins: a rebalance, and B's join waits (no CPU, no snapshot) until A rejoins.
my $bj = background(join_sql('g', ''));
ok(waiting(1, 'join'), 'the second member\'s join waits, with no snapshot');
is(state('g'), 'PreparingRebalance 1', 'the group prepares a rebalance');
is(heartbeat('g', 1, $ma), '27', 'the first member\'s heartbeat says REBALANCE_IN_PROGRESS');
$a = join_now('g', $ma);
my $b = finish($bj);
is("$a->[0] $a->[1]", '0 2', 'the first member\'s rejoin completes generation 2');
is("$b->[0] $b->[1]", '0 2', 'and wakes the second member\'s join with it');
my $mb = $b->[5];
is($b->[4], $ma, 'the leader stays');
like($a->[6], qr/\Q$ma\E.*\Q$mb\E|\Q$mb\E.*\Q$ma\E/, 'the leader gets both members');
is($b->[6], '{}', 'the follower gets no member list');

# 3. The follower's sync waits for the leader's.
my $bs = background(sync_sql('g', 2, $mb));
ok(waiting(1, 'sync'), 'the follower\'s sync waits');
$s = [ split /\|/, $node->safe_psql('postgres',
    sync_sql('g', 2, $ma, qq{ARRAY[ROW('$ma', '\\x01'::bytea), ROW('$mb', '\\x02'::bytea)]::eventlog.kafka_assignment[]})) ];
is("$s->[0] $s->[3]", '0 \x01', 'the leader\'s sync returns its own assignment');
$s = finish($bs);
is("$s->[0] $s->[3]", '0 \x02', 'and wakes the follower with its assignment');
is(state('g'), 'Stable 2', 'the group is Stable');

# 4. Commits of the members are the SQL group's positions.
is($node->safe_psql('postgres', qq{
    SELECT string_agg(error_code::text, ',') FROM eventlog.kafka_offset_commit('g', 2, '$mb', NULL,
        ARRAY[ROW('kt', 2, 3, 'b'), ROW('kt', 3, 5, NULL)]::eventlog.kafka_offset[])}), '0,0', 'the follower commits');
is($node->safe_psql('postgres', q{
    SELECT string_agg(partition || ':' || committed_offset || ':' || lag, ',' ORDER BY partition)
      FROM eventlog.consumer_groups WHERE group_name = 'g' AND topic = 'kt'}),
   '2:3:2,3:5:0', 'eventlog.consumer_groups shows the committed positions');

# 5. A third member: everyone rejoins; a sync in progress gets REBALANCE_IN_PROGRESS.
my $cj = background(join_sql('g', ''));
ok(waiting(1, 'join'), 'a third member\'s join waits');
is(heartbeat('g', 2, $ma) . heartbeat('g', 2, $mb), '2727', 'both members are told to rejoin');
my $aj = background(join_sql('g', $ma));
ok(waiting(2, 'join'), 'the first rejoin waits for the last member');
$b = join_now('g', $mb);
$a = finish($aj);
my $c = finish($cj);
is(join(' ', $a->[0], $a->[1], $b->[0], $b->[1], $c->[0], $c->[1]), '0 3 0 3 0 3', 'all three get generation 3');
my $mc = $c->[5];
is(scalar(() = $a->[6] =~ /\(/g), 3, 'the leader sees three members');

# A rebalance while a follower waits in its sync ends that sync with REBALANCE_IN_PROGRESS.
$bs = background(sync_sql('g', 3, $mb));
ok(waiting(1, 'sync'), 'a follower waits in its sync');
my $dj = background(join_sql('g', ''));
$s = finish($bs);
is($s->[0], '27', 'a new member\'s join ends the waiting sync with REBALANCE_IN_PROGRESS');
# The new member leaves before the others rejoin; they complete generation 4.
ok(waiting(1, 'join'), 'the new member waits');
$node->safe_psql('postgres', q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'CALL eventlog.kafka_join_group%' AND wait_event_type = 'Extension'});
$dj->{h}->finish;
like(${ $dj->{err} }, qr/canceling statement due to user request/, 'query cancel ends a waiting join at once');
my $md = $node->safe_psql('postgres', qq{SELECT member_id FROM eventlog.kafka_group_members WHERE group_name = 'g' AND member_id NOT IN ('$ma', '$mb', '$mc')});
is($node->safe_psql('postgres', qq{SELECT error_code FROM eventlog.kafka_leave_group('g', ARRAY[ROW('$md', NULL)]::eventlog.kafka_member_identity[])}),
   '0', 'the cancelled member leaves');
$aj = background(join_sql('g', $ma));
my $bj2 = background(join_sql('g', $mb));
$c = join_now('g', $mc);
$a = finish($aj);
$b = finish($bj2);
is(join(' ', $a->[1], $b->[1], $c->[1]), '4 4 4', 'the three rejoin in generation 4');
$bs = background(sync_sql('g', 4, $mb));
my $cs = background(sync_sql('g', 4, $mc));
ok(waiting(2, 'sync'), 'two followers wait in their syncs');
$node->safe_psql('postgres', sync_sql('g', 4, $ma, 'NULL'));
is(finish($bs)->[0] . finish($cs)->[0], '00', 'the leader\'s sync wakes both');

# 6. B leaves: a rebalance; A and C rejoin without it.
is($node->safe_psql('postgres', qq{SELECT error_code FROM eventlog.kafka_leave_group('g', ARRAY[ROW('$mb', NULL)]::eventlog.kafka_member_identity[])}),
   '0', 'the second member leaves');
is(heartbeat('g', 4, $ma), '27', 'the others are told to rejoin');
$cj = background(join_sql('g', $mc, 400));
$a = join_now('g', $ma);
$c = finish($cj);
is("$a->[1] $c->[1]", '5 5', 'the two remaining members get generation 5');
$node->safe_psql('postgres', sync_sql('g', 5, $ma, 'NULL'));
is(heartbeat('g', 5, $mb), '25', 'the member that left is unknown');

# 7. C stops heartbeating (session timeout 400 ms): at A's next request it is
# gone, and the group rebalances.
$node->poll_query_until('postgres', qq{SELECT eventlog.kafka_heartbeat('g', 5, '$ma') = 27})
  or die 'the expired member was never removed';
is($node->safe_psql('postgres', qq{SELECT count(*) FROM eventlog.kafka_group_members WHERE group_name = 'g' AND member_id = '$mc'}),
   '0', 'the silent member was removed at its session timeout');
$a = join_now('g', $ma);
is("$a->[0] $a->[1]", '0 6', 'the leader rejoins alone in generation 6');
is(heartbeat('g', 6, $mc), '25', 'the expired member is unknown');

# 8. A rejoin that never comes: the rebalance timeout removes the member.
$node->safe_psql('postgres', sync_sql('g', 6, $ma, 'NULL'));
my $e = join_now('h', '', 30000, 500);
$node->safe_psql('postgres', sync_sql('h', 1, $e->[5], 'NULL'));
my $fj = background(join_sql('h', '', 30000, 500));
$node->poll_query_until('postgres', q{SELECT state = 'CompletingRebalance' AND generation = 2 FROM eventlog.kafka_groups WHERE group_name = 'h'})
  or die 'the rebalance of h never completed';
my $f = finish($fj);
is("$f->[0] $f->[1]", '0 2', 'a join completes at the rebalance timeout without the member that did not rejoin');
is($f->[4], $f->[5], 'and the new member leads');
is(heartbeat('h', 1, $e->[5]), '25', 'the member that did not rejoin was removed');

# 9. The initial delay of an empty group: the first join waits for more members.
my $j1 = background('SET eventlog.kafka_initial_rebalance_delay = 5000', join_sql('i', ''));
ok(waiting(1, 'join'), 'the first join of an empty group waits out the initial delay');
my $j2 = background('SET eventlog.kafka_initial_rebalance_delay = 5000', join_sql('i', ''));
my ($r1, $r2) = (finish($j1), finish($j2));
is("$r1->[0] $r1->[1] $r2->[0] $r2->[1]", '0 1 0 1', 'both members come in generation 1');
is($r1->[4], $r1->[5], 'the first is the leader');
is(scalar(() = $r1->[6] =~ /\(/g), 2, 'and sees both members');

# 10. An abandoned group: no request comes, the maintenance worker (every
# 5 s by default) expires its silent member and the group becomes Empty.
my $w = join_now('abandoned', '', 200);
$node->safe_psql('postgres', sync_sql('abandoned', 1, $w->[5], 'NULL'));
ok($node->poll_query_until('postgres', q{SELECT state = 'Empty' FROM eventlog.kafka_groups WHERE group_name = 'abandoned'}),
   'the maintenance worker expires the members of an abandoned group');

$node->stop;
done_testing();
