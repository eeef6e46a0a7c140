# The notifier sends at once when it has been idle, and coalesces only
# under load (notifier.c).  Nothing here is timed: in test builds,
# eventlog.debug_notifier_busy_rounds counts the rounds that found records
# coming faster than one per tenth of eventlog.notify_interval, and
# eventlog.debug_notifier_delays the rounds the notifier delayed to coalesce.
#  - commits that each come after the notifier has been quiet for a while
#    are announced each by a round of its own, none busy or delayed
#    (before, every round that sent something was followed by a whole
#    interval's sleep, so the second of them waited for it);
#  - a burst of commits is load: rounds are delayed, fewer notifications
#    than commits announce it, the last with the final offset;
#  - after the burst, a commit to a notifier quiet for longer than the
#    interval is announced at once again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('notify_at_once');
$node->init;
# An interval of 2 s: a round is busy when it finds more than one record
# per 200 ms since the previous round.
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.notify_interval = '2s'
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

sub counters
{
    return $node->safe_psql('postgres',
        q{SELECT current_setting('eventlog.debug_notifier_busy_rounds') || ' busy, '
                 || current_setting('eventlog.debug_notifier_delays') || ' delayed'});
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
    my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
    while (time() < $deadline)
    {
        receive();
        return if grep { $_->[0] eq "eventlog.$topic" && $_->[1] eq $want } @received;
        select(undef, undef, undef, 0.05);
    }
    die "no notification $want";
}

# Wait until the notifier's last round ended more than "ms" milliseconds
# ago (it reports itself idle at the end of a round).
sub wait_notifier_quiet
{
    my ($ms) = @_;
    $node->poll_query_until('postgres', qq{
        SELECT coalesce(state, 'idle') = 'idle' AND wait_event = 'Extension'
               AND coalesce(now() - state_change > interval '$ms ms', true)
          FROM pg_stat_activity WHERE backend_type = 'pg_eventlog notifier'})
      or die 'the notifier is not idle';
}

$lin .= qq{LISTEN "eventlog.idle";\nLISTEN "eventlog.busy";\n};
receive();
is(counters(), '0 busy, 0 delayed', 'no round busy or delayed yet');

# 1. Three commits, each after the notifier has been quiet for 300 ms.
for my $i (1 .. 3)
{
    wait_notifier_quiet(300);
    $node->safe_psql('postgres', qq{SELECT eventlog.produce('idle', NULL, '$i')});
    wait_for('idle', $i);
}
is_deeply([ map { $_->[1] } grep { $_->[0] eq 'eventlog.idle' } @received ],
          [ map { qq({"topic": "idle", "partitions": {"0": $_}}) } 1 .. 3 ],
          'each commit after a quiet notifier is announced by a notification of its own');
is(counters(), '0 busy, 0 delayed', 'and no round was busy, or delayed to coalesce them');

# 2. A burst: 400 single-record commits about a millisecond apart.
$node->safe_psql('postgres', q{
    DO $$
    BEGIN
        FOR i IN 1 .. 400 LOOP
            PERFORM eventlog.produce('busy', NULL, to_jsonb(i));
            COMMIT;
            PERFORM pg_sleep(0.001);
        END LOOP;
    END
    $$});
wait_for('busy', 400);
my @busy = map { $_->[1] =~ /"0": (\d+)\}/ ? $1 : -1 } grep { $_->[0] eq 'eventlog.busy' } @received;
ok(scalar(@busy) < 400, scalar(@busy) . ' notifications announce the 400 commits');
is($busy[-1], 400, 'the last one carries the final stable offset');
is_deeply(\@busy, [ sort { $a <=> $b } @busy ], 'and the offsets only grow');
my ($nbusy, $ndelayed) = counters() =~ /^(\d+) busy, (\d+) delayed$/;
ok($nbusy >= 1, "the burst made rounds busy ($nbusy)");
ok($ndelayed >= 1, "and rounds were delayed to coalesce it ($ndelayed)");

# 3. A commit after the notifier has been quiet for longer than the
#    interval (the longest delay) is announced at once again.
wait_notifier_quiet(2300);
$node->safe_psql('postgres', q{SELECT eventlog.produce('idle', NULL, '4')});
wait_for('idle', 4);
is(counters(), "$nbusy busy, $ndelayed delayed", 'a commit after a quiet gap is not delayed');

$lin .= "\\q\n";
$listener->finish;
$node->stop;
done_testing();
