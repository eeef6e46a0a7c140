# A wall clock stepped back (NTP, an administrator) between two rounds of
# the notifier must not hold notifications back for the length of the step
# (notifier.c, el_coalesce_before).  Before the fix, a notifier under load
# waited until its last round's time plus the delay: with the clock set
# back an hour, an hour.  Nothing is timed: in test builds,
# eventlog.debug_notifier_clock_offset moves the clock as the notifier reads
# it, and eventlog.debug_notifier_busy_rounds / _delays show the notifier
# did coalesce.  The notification after the step must arrive at all (the
# wait gives up after the TAP timeout, 180 s by default, which the broken
# notifier exceeds by far).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('notifier_clock_step');
$node->init;
# An interval of 2 s: a round is busy when it finds more than one record
# per 200 ms since the previous round, and its delay then starts at 200 ms.
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.notify_interval = '2s'
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('clock', 1);
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

my ($lin, $lout, $lerr) = ('', '', '');
my $listener = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-d', $node->connstr('postgres') ],
    '<', \$lin, '>', \$lout, '2>', \$lerr);
my $mark = 0;
my @received;

sub receive
{
    $mark++;
    $lin .= "SELECT 'mark $mark';\n";
    $listener->pump until $lout =~ /^mark $mark$/m;
    while ($lout =~ /Asynchronous notification "([^"]+)" with payload "(.*)" received/g)
    {
        push @received, $2;
    }
    $lout = '';
}

sub wait_for
{
    my ($stable) = @_;
    my $want = qq({"topic": "clock", "partitions": {"0": $stable}});
    my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
    while (time() < $deadline)
    {
        receive();
        return 1 if grep { $_ eq $want } @received;
        select(undef, undef, undef, 0.05);
    }
    return 0;
}

$lin .= qq{LISTEN "eventlog.clock";\n};
receive();

# 1. A first round (the notifier was idle: sent at once).
$node->safe_psql('postgres', q{SELECT eventlog.produce('clock', NULL, '1')});
ok(wait_for(1), 'a first commit is announced');
is(counters(), '0 busy, 0 delayed', 'by a round neither busy nor delayed');

# 2. One commit of 1,000 records: the next round finds 1,000 records since
#    the first, far more than one per 200 ms, so it is busy and the
#    notifier coalesces from now on (its delay: 200 ms after that round).
$node->safe_psql('postgres',
    q{SELECT count(eventlog.produce('clock', NULL, to_jsonb(i))) FROM generate_series(2, 1001) i});
ok(wait_for(1001), 'the commit of 1,000 records is announced');
is(counters(), '1 busy, 0 delayed', 'by a busy round, not delayed (the notifier was idle before)');

# 3. The clock steps back an hour.  A session started after the reload sees
#    the new setting only once the postmaster has signalled every process,
#    the notifier included, which reloads before it looks for wake-ups.
$node->safe_psql('postgres', q{
    ALTER SYSTEM SET eventlog.debug_notifier_clock_offset = '-1h';
    SELECT pg_reload_conf();
});
$node->poll_query_until('postgres',
    q{SELECT current_setting('eventlog.debug_notifier_clock_offset') <> '0'})
  or die 'the setting was not reloaded';

# 4. A commit now wakes a notifier that coalesces: its wait is the delay
#    from now, not until an hour from now.
$node->safe_psql('postgres', q{SELECT eventlog.produce('clock', NULL, '1002')});
ok(wait_for(1002), 'a commit after the clock stepped back is announced');
# (That round may count as busy too: its gap since the last one is negative.)
like(counters(), qr/^\d+ busy, 1 delayed$/, 'by a round the notifier delayed to coalesce');

$lin .= "\\q\n";
$listener->finish;
$node->stop;
done_testing();
