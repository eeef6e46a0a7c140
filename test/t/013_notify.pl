# LISTEN/NOTIFY: the notifier announces newly readable records on the
# topic's channel (eventlog.channel), outside producers' commits.
#  - a commit is announced, with the partition's new last stable offset;
#  - a lone rollback is not; a rollback that lets committed records through
#    is; a commit held back by an earlier open transaction is not (yet);
#  - a burst of commits is coalesced into few notifications, and the last
#    one of the burst always carries the final stable offset;
#  - eventlog.notify = off stops the notifier (with publication for
#    standbys off too, eventlog.publish_stable_offsets), on starts it again.
# Absence is shown without sleeping: the notifier announces partitions in
# rounds, so once a later commit on a marker topic has been announced, any
# notification for the earlier event would have arrived before it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('notify');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.notify_interval = '5ms'
});
$node->start;
my $long = 'l' x 120;
$node->safe_psql('postgres', qq{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('nt', 1);
    SELECT eventlog.create_topic('marker', 1);
    SELECT eventlog.create_topic('$long', 1);
});
$node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_eventlog notifier'})
  or die 'no notifier';

# A listening psql session.
my ($lin, $lout, $lerr) = ('', '', '');
my $listener = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-d', $node->connstr('postgres') ],
    '<', \$lin, '>', \$lout, '2>', \$lerr);
my $mark = 0;

# Let psql print what has arrived; returns the notifications (channel,
# payload) seen since the last call.
sub received
{
    $mark++;
    $lin .= "SELECT 'mark $mark';\n";
    $listener->pump until $lout =~ /^mark $mark$/m;
    my @got;
    while ($lout =~ /Asynchronous notification "([^"]+)" with payload "(.*)" received/g)
    {
        push @got, [ $1, $2 ];
    }
    $lout = '';
    return @got;
}

# Wait until a notification on "channel" matching "re" arrives; returns all
# notifications received meanwhile.
sub wait_for
{
    my ($channel, $re) = @_;
    my @all;
    for (my $i = 0; $i < 300; $i++)
    {
        my @got = received();
        push @all, @got;
        return @all if grep { $_->[0] eq $channel && $_->[1] =~ $re } @got;
        select(undef, undef, undef, 0.05);
    }
    return @all;
}

# Every notification on "channel" received until the marker topic's next
# commit is announced.
sub until_marker
{
    my ($channel) = @_;
    my $off = $node->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('marker', NULL, '1')});
    my $stable = $off + 1;
    my @all = wait_for('eventlog.marker', qr/"0": $stable\}/);
    ok(scalar(grep { $_->[0] eq 'eventlog.marker' } @all), "marker $off announced");
    return grep { $_->[0] eq $channel } @all;
}

is($node->safe_psql('postgres', q{SELECT eventlog.channel('nt')}), 'eventlog.nt', 'the channel of a topic');
my $long_channel = $node->safe_psql('postgres', qq{SELECT eventlog.channel('$long')});
like($long_channel, qr/^eventlog\.md5:[0-9a-f]{32}$/, 'a name too long for a channel gets its md5');
$lin .= qq{LISTEN "eventlog.nt";\nLISTEN "eventlog.marker";\nLISTEN "$long_channel";\n};
received();

# 1. A commit is announced.
$node->safe_psql('postgres', q{SELECT eventlog.produce('nt', NULL, '"a"')});
my @n = grep { $_->[0] eq 'eventlog.nt' } wait_for('eventlog.nt', qr/"0": 1\}/);
is_deeply(\@n, [ [ 'eventlog.nt', '{"topic": "nt", "partitions": {"0": 1}}' ] ],
          'a commit is announced once, with the new last stable offset');
$node->safe_psql('postgres', qq{SELECT eventlog.produce('$long', NULL, '"a"')});
@n = wait_for($long_channel, qr/"topic": "$long"/);
ok(scalar(grep { $_->[0] eq $long_channel } @n), 'a long-named topic is announced on its md5 channel');

# 2. A lone rollback is not.
$node->safe_psql('postgres', q{BEGIN; SELECT eventlog.produce('nt', NULL, '"rolled back"'); ROLLBACK;});
is(scalar(until_marker('eventlog.nt')), 0, 'a lone rollback is not announced');

# 3. A commit behind an open transaction is not announced until that
#    transaction ends; its rollback lets the record through and is.
my ($hin, $hout, $herr) = ('', '', '');
my $holder = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
    '<', \$hin, '>', \$hout, '2>', \$herr);
$hin .= "BEGIN;\nSELECT offset_id FROM eventlog.produce('nt', NULL, '\"held\"');\n";
$holder->pump until $hout =~ /^2$/m;
$node->safe_psql('postgres', q{SELECT eventlog.produce('nt', NULL, '"behind"')});
is(scalar(until_marker('eventlog.nt')), 0, 'a commit held back by an open transaction is not announced yet');
$hin .= "ROLLBACK;\n\\q\n";
$holder->finish;
@n = grep { $_->[0] eq 'eventlog.nt' } wait_for('eventlog.nt', qr/"0": 4\}/);
is_deeply(\@n, [ [ 'eventlog.nt', '{"topic": "nt", "partitions": {"0": 4}}' ] ],
          'the rollback that lets it through is');

# 4. Coalescing: a burst of 300 single-record commits with a 200 ms
#    interval gives few notifications, the last with the final offset.
$node->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.notify_interval = '200ms'; SELECT pg_reload_conf();});
my $script = join('', map { "SELECT eventlog.produce('nt', NULL, '$_');\n" } 1 .. 300);
my ($bout, $berr);
IPC::Run::run([ 'psql', '-X', '-q', '-d', $node->connstr('postgres') ], '<', \$script, '>', \$bout, '2>', \$berr);
@n = grep { $_->[0] eq 'eventlog.nt' } wait_for('eventlog.nt', qr/"0": 304\}/);
my @offsets = map { $_->[1] =~ /"0": (\d+)\}/ ? $1 : -1 } @n;
ok(scalar(@n) >= 1 && scalar(@n) < 100, scalar(@n) . ' notifications for 300 commits');
is($offsets[-1], 304, 'the last one carries the final stable offset');
is_deeply(\@offsets, [ sort { $a <=> $b } @offsets ], 'and the offsets only grow');
is(scalar(until_marker('eventlog.nt')), 0, 'nothing is announced twice after the burst');

# 5. eventlog.notify = off stops the notifier (when it publishes nothing
# either); on brings it back.
$node->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.notify = off; ALTER SYSTEM SET eventlog.publish_stable_offsets = off; ALTER SYSTEM RESET eventlog.notify_interval; SELECT pg_reload_conf();});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'pg_eventlog notifier'}),
   'eventlog.notify = off stops the notifier');
$node->safe_psql('postgres', q{SELECT eventlog.produce('nt', NULL, '"quiet"')});
$node->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.notify = on; SELECT pg_reload_conf();});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_eventlog notifier'}),
   'eventlog.notify = on starts it again');
$node->safe_psql('postgres', q{SELECT eventlog.produce('nt', NULL, '"loud"')});
@n = grep { $_->[0] eq 'eventlog.nt' } wait_for('eventlog.nt', qr/"0": 306\}/);
is($n[-1][1], '{"topic": "nt", "partitions": {"0": 306}}', 'and commits are announced again');

$lin .= "\\q\n";
$listener->finish;
$node->stop;
done_testing();
