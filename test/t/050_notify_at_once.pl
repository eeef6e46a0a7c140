# The notifier sends at once when it has been idle, and coalesces only
# under load (notifier.c, el_coalesce).  Nothing here is timed: the
# test-only setting eventlog.debug_notifier_delays counts the rounds the
# notifier delayed to coalesce commits.
#  - commits that each come after the notifier has been quiet for longer
#    than a tenth of eventlog.notify_interval are announced without any
#    delay (before, every round that sent something was followed by a whole
#    interval's sleep, so the second of them waited for it);
#  - a commit that comes while the notifier is still sending the previous
#    one is load: the next round is delayed, and announces it.  The round is
#    held in place by a lock on the topic catalog, which it reads to name a
#    topic it has not announced before;
#  - every commit is announced, with offsets that only grow.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('notify_at_once');
$node->init;
# An interval of 2 s: the notifier counts a commit as load when it comes
# less than 200 ms after its last round.  Maintenance rounds only at start
# (part 2 needs the catalog unchanged, see there).
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.notify_interval = '2s'
eventlog.maintenance_interval = '1h'
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('idle', 1);
    SELECT eventlog.create_topic('busy', 1);
});
$node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_eventlog notifier'})
  or die 'no notifier';

sub delays
{
    return $node->safe_psql('postgres', 'SHOW eventlog.debug_notifier_delays');
}

# A listening psql session.
my ($lin, $lout, $lerr) = ('', '', '');
my $listener = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-d', $node->connstr('postgres') ],
    '<', \$lin, '>', \$lout, '2>', \$lerr);
my $mark = 0;
my @received;

# Let psql print what has arrived; keeps the notifications (channel,
# payload) in @received.
sub receive
{
    $mark++;
    $lin .= "SELECT 'mark $mark';\n";
    $listener->pump until $lout =~ /^mark $mark$/m;
    while ($lout =~ /Asynchronous notification "([^"]+)" with payload "(.*)" received/g)
    {
        push @received, [ $1, $2 ];
    }
    $lout = '';
}

# Wait until the notification of "topic" with stable offset "stable" has
# arrived.
sub wait_for
{
    my ($topic, $stable) = @_;
    my $want = qq({"topic": "$topic", "partitions": {"0": $stable}});
    for (;;)
    {
        receive();
        return if grep { $_->[0] eq "eventlog.$topic" && $_->[1] eq $want } @received;
        select(undef, undef, undef, 0.05);
    }
}

# Wait until the notifier's last round ended more than 300 ms ago (it
# reports itself idle at the end of a round).
sub wait_notifier_quiet
{
    $node->poll_query_until('postgres', q{
        SELECT coalesce(state, 'idle') = 'idle' AND wait_event = 'Extension'
               AND coalesce(now() - state_change > interval '300 ms', true)
          FROM pg_stat_activity WHERE backend_type = 'pg_eventlog notifier'})
      or die 'the notifier is not idle';
}

$lin .= qq{LISTEN "eventlog.idle";\nLISTEN "eventlog.busy";\n};
receive();
is(delays(), '0', 'no round delayed yet');

# 1. Three commits, each after the notifier has been quiet: each is
#    announced by a round of its own, none delayed.
for my $i (1 .. 3)
{
    wait_notifier_quiet();
    $node->safe_psql('postgres', qq{SELECT eventlog.produce('idle', NULL, '$i')});
    wait_for('idle', $i);
}
is_deeply([ map { $_->[1] } grep { $_->[0] eq 'eventlog.idle' } @received ],
          [ map { qq({"topic": "idle", "partitions": {"0": $_}}) } 1 .. 3 ],
          'each commit after a quiet notifier is announced by a notification of its own');
is(delays(), '0', 'and no round was delayed to coalesce them');

# 2. Load: a commit while the notifier is sending.  The producer's session
#    caches topic "busy" first (a rolled-back produce announces nothing);
#    the notifier has never named it, so its round for the first commit
#    reads the topic catalog and waits for the lock held here.  The
#    producer's cache must stay valid meanwhile (reloading it would wait for
#    the lock too): the maintenance worker's first round, which writes the
#    catalog, is over, and the next is an hour away.
ok($node->poll_query_until('postgres', q{
    SELECT rounds >= 1 AND last_success IS NOT NULL FROM eventlog.maintenance
     WHERE database = current_database()}),
   'the maintenance worker has run its first round');
my ($pin, $pout, $perr) = ('', '', '');
my $producer = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
    '<', \$pin, '>', \$pout, '2>', \$perr);
$pin .= "BEGIN;\nSELECT eventlog.produce('busy', NULL, '0');\nROLLBACK;\nSELECT 'warm';\n";
$producer->pump until $pout =~ /^warm$/m;

my ($kin, $kout, $kerr) = ('', '', '');
my $locker = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
    '<', \$kin, '>', \$kout, '2>', \$kerr);
$kin .= "BEGIN;\nLOCK TABLE eventlog.topic_catalog IN ACCESS EXCLUSIVE MODE;\nSELECT 'locked';\n";
$locker->pump until $kout =~ /^locked$/m;

$pin .= "SELECT 'first', offset_id FROM eventlog.produce('busy', NULL, '1');\n";
$producer->pump until $pout =~ /^first\|1$/m;
ok($node->poll_query_until('postgres', q{
    SELECT wait_event_type = 'Lock'
      FROM pg_stat_activity WHERE backend_type = 'pg_eventlog notifier'}),
   'the notifier is held in its round');
$pin .= "SELECT 'second', offset_id FROM eventlog.produce('busy', NULL, '2');\n";
$producer->pump until $pout =~ /^second\|2$/m;
$kin .= "COMMIT;\n\\q\n";
$locker->finish;

wait_for('busy', 3);
my @busy = map { $_->[1] } grep { $_->[0] eq 'eventlog.busy' } @received;
is_deeply(\@busy,
          [ '{"topic": "busy", "partitions": {"0": 2}}', '{"topic": "busy", "partitions": {"0": 3}}' ],
          'the commit during the round is announced by the next round');
is(delays(), '1', 'which was delayed to coalesce');

# 3. After that, a commit to a quiet notifier is again sent at once.
wait_notifier_quiet();
$pin .= "SELECT 'third', offset_id FROM eventlog.produce('busy', NULL, '3');\n";
$producer->pump until $pout =~ /^third\|3$/m;
wait_for('busy', 4);
is(delays(), '1', 'a commit after a quiet gap is not delayed');

$pin .= "\\q\n";
$producer->finish;
$lin .= "\\q\n";
$listener->finish;
$node->stop;
done_testing();
