# Long polls across maintenance rounds, wake-ups that bring nothing, and
# drop_topic (issue 13, items 1, 11 and 12).
#
#  1. A read(wait) or poll(wait) that sleeps while a maintenance round rolls
#     its partition (or removes segments by retention) ends normally, by
#     timeout or by a wake-up that brings nothing, and returns a record
#     committed after the roll.  Before the fix, the read crashed the server
#     (signal 11) at the first check after the roll.
# 11. A read(wait) or member poll(wait) from an offset that was rolled back
#     sleeps until a readable record exists past it, or the wait ends,
#     instead of returning nothing at once (a consumer loop spun at full
#     CPU).
# 12. drop_topic (also dropped and created again under the same name) ends
#     waiting reads and polls at once with 42704 "topic ... was dropped
#     while waiting", instead of letting them sleep for the whole wait.
#
# No assertion depends on how fast the machine is: a call "waits" when it is
# seen sleeping in pg_stat_activity after the event, and the drop test allows
# half of a 60-second wait.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use Time::HiRes qw(time sleep);

my $node = PostgreSQL::Test::Cluster->new('lproll');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'pg_eventlog'
# The test runs the maintenance rounds itself, at chosen moments.
eventlog.maintenance_interval = 3600s
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('r', 1, retention => '1 millisecond', segment_interval => '1 millisecond');
    SELECT eventlog.create_topic('pr', 2, segment_interval => '1 millisecond');
    SELECT eventlog.create_group('pr', 'g');
    SELECT eventlog.create_topic('mr', 2, segment_interval => '1 millisecond');
    SELECT eventlog.create_group('mr', 'm');
});

# A session that must live through the whole test: a crash of any backend
# restarts the server and kills it.
my ($by_in, $by_out, $by_err) = ("SELECT pg_backend_pid();\n", '', '');
my $bystander = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-d', $node->connstr('postgres') ],
    '<', \$by_in, '>', \$by_out, '2>', \$by_err);
$bystander->pump until $by_out =~ /^(\d+)$/m;
my $by_pid = $1;

sub server_survived
{
    my ($what) = @_;
    my ($ret, $out) = $node->psql('postgres',
        "SELECT count(*) FROM pg_stat_activity WHERE pid = $by_pid");
    is($out, '1', "$what: the server did not restart");
}

# Run SQL in the background (verbose errors, to see SQLSTATEs).
sub background
{
    my ($sql, $user) = @_;
    my ($out, $err) = ('', '');
    my $connstr = $node->connstr('postgres') . ($user ? " user=$user" : '');
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-v', 'VERBOSITY=verbose', '-d', $connstr, '-c', $sql ],
        '>', \$out, '2>', \$err);
    return ($h, \$out, \$err);
}

# The PID of the backend sleeping in the long poll whose query contains
# "tag", or undef if the call ended without ever sleeping.
sub sleeping
{
    my ($h, $tag) = @_;
    my $where = qq{query LIKE '%$tag%' AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()};
    my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
    while (time < $deadline)
    {
        my ($ret, $pid) = $node->psql('postgres', "SELECT pid FROM pg_stat_activity WHERE $where");
        return $pid if $ret == 0 && $pid ne '';
        $h->pump_nb;
        return undef unless $h->pumpable;
        sleep 0.05;
    }
    return undef;
}

# Whether backend "pid" is (again) sleeping in its long poll, after the
# wake-ups caused by what the test just did have been handled.  A wake-up
# makes it leave the condition variable for a moment only; give it time to
# finish a call it should not make, then look.
sub still_sleeping
{
    my ($h, $pid) = @_;
    sleep 1;
    $h->pump_nb;
    return 0 unless $h->pumpable;
    return $node->poll_query_until('postgres',
        "SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid");
}

# A session holding a transaction open, fed line by line.
sub holder
{
    my ($in, $out, $err) = ('', '', '');
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
        '<', \$in, '>', \$out, '2>', \$err);
    return ($h, \$in, \$out);
}

sub rounds
{
    my ($topic) = @_;
    return $node->safe_psql('postgres',
        "SELECT string_agg(action, ',' ORDER BY action) FROM eventlog.enforce_retention('$topic')");
}

# ------------------------------------------------------------------------
# Item 1: read(wait) across rolls and retention.
# ------------------------------------------------------------------------
$node->safe_psql('postgres', q{SELECT eventlog.produce('r', NULL, '"r0"')});
sleep 0.01;

# (a) Ends by timeout after a roll, then after retention removed the
# segment it was positioned in.
my ($h, $out, $err) = background(q{SELECT /* t1a */ count(*) FROM eventlog.read('r', 0, 1, wait => '3 seconds')});
my $pid = sleeping($h, 't1a');
ok(defined $pid, 'a read at the end of a partition waits');
is(rounds('r'), 'rolled', 'a maintenance round rolls the partition while it waits');
is(rounds('r'), 'removed', 'the next removes the sealed segment (retention)');
$h->finish;
is($$out, "0\n", 'the read ends by timeout and returns nothing');
is($$err, '', 'without an error');
server_survived('read timing out after a roll');

# (b) and (c): a wake-up while the stable offset is held back, after a roll;
# then the holder rolls back and the record committed after the roll is
# returned.
$node->safe_psql('postgres', q{SELECT eventlog.produce('r', NULL, '"r1"')});
sleep 0.01;
my ($hold, $hold_in, $hold_out) = holder();
$$hold_in .= "BEGIN;\nSELECT offset_id FROM eventlog.produce('r', NULL, '\"held\"');\n";
$hold->pump until $$hold_out =~ /^(\d+)$/m;
my $held = $1;
($h, $out, $err) = background("SELECT /* t1b */ offset_id, value FROM eventlog.read('r', 0, $held, wait => '60 seconds')");
$pid = sleeping($h, 't1b');
ok(defined $pid, 'a read waits behind an open transaction');
is(rounds('r'), 'rolled', 'a round rolls the partition');
my $after = $node->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('r', NULL, '"after"')});
ok(still_sleeping($h, $pid), 'a commit behind the open transaction wakes the read, and it sleeps again');
server_survived('read woken while the stable offset is held back, after a roll');
$$hold_in .= "ROLLBACK;\n\\q\n";
$hold->finish;
$h->finish;
is($$out, "$after|\"after\"\n", 'the rollback lets the record committed after the roll through, and the read returns it');
is($$err, '', 'without an error');

# (b) A rollback in the partition, after a roll, brings nothing: the read
# keeps waiting, and returns the next record committed.
sleep 0.01;
my $end = $node->safe_psql('postgres', q{SELECT eventlog.last_stable_offset('r', 0)});
($h, $out, $err) = background("SELECT /* t1c */ offset_id, value FROM eventlog.read('r', 0, $end, wait => '60 seconds')");
$pid = sleeping($h, 't1c');
ok(defined $pid, 'a read at the end waits');
is(rounds('r'), 'removed,rolled', 'a round removes a segment and rolls the partition');
$node->safe_psql('postgres', q{BEGIN; SELECT eventlog.produce('r', NULL, '"gone"'); ROLLBACK;});
ok(still_sleeping($h, $pid), 'a rollback in the partition wakes the read, and it sleeps again');
$after = $node->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('r', NULL, '"next"')});
$h->finish;
is($$out, "$after|\"next\"\n", 'a later commit is returned');
server_survived('read woken by a rollback after a roll');

# ------------------------------------------------------------------------
# Item 1: poll(wait), transactional and member, across rolls.
# ------------------------------------------------------------------------
$node->safe_psql('postgres', q{
    SELECT eventlog.produce('pr', NULL, '"a"', partition => 0);
    SELECT eventlog.produce('pr', NULL, '"b"', partition => 1);
    SELECT count(*) FROM eventlog.poll('pr', 'g', 10, partitions => 2);
});
sleep 0.01;
($h, $out, $err) = background(q{SELECT /* t1d */ count(*) FROM eventlog.poll('pr', 'g', 10, partitions => 2, wait => '3 seconds')});
$pid = sleeping($h, 't1d');
ok(defined $pid, 'a transactional poll waits');
is(rounds('pr'), 'rolled,rolled', 'a round rolls both partitions');
$h->finish;
is($$out, "0\n", 'the poll ends by timeout and returns nothing');
is($$err, '', 'without an error');
server_survived('transactional poll timing out after a roll');

$node->safe_psql('postgres', q{
    SELECT eventlog.produce('pr', NULL, '"c"', partition => 0);
    SELECT eventlog.produce('pr', NULL, '"d"', partition => 1);
    SELECT count(*) FROM eventlog.poll('pr', 'g', 10, partitions => 2);
});
sleep 0.01;
($h, $out, $err) = background(q{SELECT /* t1e */ partition, value FROM eventlog.poll('pr', 'g', 10, partitions => 2, wait => '60 seconds')});
$pid = sleeping($h, 't1e');
ok(defined $pid, 'a transactional poll waits');
is(rounds('pr'), 'rolled,rolled', 'a round rolls both partitions');
$node->safe_psql('postgres', q{BEGIN; SELECT eventlog.produce('pr', NULL, '"gone"', partition => 0); ROLLBACK;});
ok(still_sleeping($h, $pid), 'a rollback wakes the poll, and it sleeps again');
$node->safe_psql('postgres', q{SELECT eventlog.produce('pr', NULL, '"e"', partition => 1)});
$h->finish;
is($$out, "1|\"e\"\n", 'a record committed after the roll is returned');
server_survived('transactional poll woken after a roll');

# Members: a and b own one partition each.
$node->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog.poll('mr', 'm', member => 'a', session_timeout => '5 minutes');
    SELECT count(*) FROM eventlog.poll('mr', 'm', member => 'b', session_timeout => '5 minutes');
    SELECT count(*) FROM eventlog.poll('mr', 'm', member => 'a', session_timeout => '5 minutes');
});
my $mine = $node->safe_psql('postgres', q{SELECT partition FROM eventlog.group_offsets WHERE group_name = 'm' AND owner_member = 'a'});
like($mine, qr/^[01]$/, 'member a owns one partition');
my $other = 1 - $mine;
$node->safe_psql('postgres', qq{
    SELECT eventlog.produce('mr', NULL, '"x"', partition => $mine);
    SELECT eventlog.produce('mr', NULL, '"y"', partition => $other);
    SELECT count(*) FROM eventlog.poll('mr', 'm', member => 'a', session_timeout => '5 minutes');
    SELECT count(*) FROM eventlog.commit('mr', 'm', member => 'a');
});
sleep 0.01;
($h, $out, $err) = background(q{SELECT /* t1f */ count(*) FROM eventlog.poll('mr', 'm', member => 'a', session_timeout => '5 minutes', wait => '3 seconds')});
$pid = sleeping($h, 't1f');
ok(defined $pid, 'a member poll waits');
is(rounds('mr'), 'rolled,rolled', 'a round rolls both partitions');
$h->finish;
is($$out, "0\n", 'the member poll ends by timeout and returns nothing');
is($$err, '', 'without an error');
server_survived('member poll timing out after a roll');

$node->safe_psql('postgres', qq{
    SELECT eventlog.produce('mr', NULL, '"z"', partition => $mine);
    SELECT count(*) FROM eventlog.poll('mr', 'm', member => 'a', session_timeout => '5 minutes');
    SELECT count(*) FROM eventlog.commit('mr', 'm', member => 'a');
});
sleep 0.01;
($h, $out, $err) = background(q{SELECT /* t1g */ partition, value FROM eventlog.poll('mr', 'm', member => 'a', session_timeout => '5 minutes', wait => '60 seconds')});
$pid = sleeping($h, 't1g');
ok(defined $pid, 'a member poll waits');
like(rounds('mr'), qr/rolled/, 'a round rolls its partition');
$node->safe_psql('postgres', qq{SELECT eventlog.produce('mr', NULL, '"other"', partition => $other)});
ok(still_sleeping($h, $pid), 'a commit in a partition the member does not own wakes it, and it sleeps again');
$node->safe_psql('postgres', qq{BEGIN; SELECT eventlog.produce('mr', NULL, '"gone"', partition => $mine); ROLLBACK;});
ok(still_sleeping($h, $pid), 'so does a rollback in its own partition');
$node->safe_psql('postgres', qq{SELECT eventlog.produce('mr', NULL, '"w"', partition => $mine)});
$h->finish;
is($$out, "$mine|\"w\"\n", 'a record committed after the roll is returned');
server_survived('member poll woken after a roll');

# ------------------------------------------------------------------------
# Item 11: waiting from an offset that was rolled back.
# ------------------------------------------------------------------------
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('ab', 1);
    SELECT eventlog.produce('ab', NULL, '"kept"');
    BEGIN; SELECT eventlog.produce('ab', NULL, '"aborted"'); ROLLBACK;
});
($h, $out, $err) = background(q{SELECT /* t11a */ offset_id, value FROM eventlog.read('ab', 0, 1, wait => '60 seconds')});
$pid = sleeping($h, 't11a');
ok(defined $pid, 'a read from a rolled-back offset with nothing after it waits, rather than returning at once');
$node->safe_psql('postgres', q{BEGIN; SELECT eventlog.produce('ab', NULL, '"aborted too"'); ROLLBACK;});
ok(defined $pid && still_sleeping($h, $pid), 'another rollback wakes it, and it sleeps again');
$node->safe_psql('postgres', q{SELECT eventlog.produce('ab', NULL, '"later"')});
$h->finish;
is($$out, "3|\"later\"\n", 'it returns the record committed later, once');

# The end of the wait: nothing, after having slept, using next to no CPU.
$node->safe_psql('postgres', q{BEGIN; SELECT eventlog.produce('ab', NULL, '"aborted"'); ROLLBACK;});
($h, $out, $err) = background(q{SELECT /* t11b */ count(*) FROM eventlog.read('ab', 0, 4, wait => '3 seconds')});
$pid = sleeping($h, 't11b');
ok(defined $pid, 'a read from a rolled-back offset sleeps until the wait ends');
$h->finish;
is($$out, "0\n", 'and then returns nothing');

# Members resume from their committed position, which may be rolled back.
$node->safe_psql('postgres', q{
    SELECT eventlog.create_group('ab', 'mab');
    SELECT count(*) FROM eventlog.poll('ab', 'mab', member => 'a', session_timeout => '5 minutes');
    SELECT count(*) FROM eventlog.commit('ab', 'mab', member => 'a');
    BEGIN; SELECT eventlog.produce('ab', NULL, '"aborted"'); ROLLBACK;
});
($h, $out, $err) = background(q{SELECT /* t11c */ offset_id, value FROM eventlog.poll('ab', 'mab', member => 'a', session_timeout => '5 minutes', wait => '60 seconds')});
$pid = sleeping($h, 't11c');
ok(defined $pid, 'a member poll from a rolled-back offset waits');
$after = $node->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('ab', NULL, '"for the member"')});
$h->finish;
is($$out, "$after|\"for the member\"\n", 'and returns the record committed later');

# Transactional polls already moved past rolled-back offsets: keep it so.
$node->safe_psql('postgres', q{
    SELECT eventlog.create_group('ab', 'gab');
    SELECT count(*) FROM eventlog.poll('ab', 'gab');
    BEGIN; SELECT eventlog.produce('ab', NULL, '"aborted"'); ROLLBACK;
});
($h, $out, $err) = background(q{SELECT /* t11d */ offset_id, value FROM eventlog.poll('ab', 'gab', wait => '60 seconds')});
$pid = sleeping($h, 't11d');
ok(defined $pid, 'a transactional poll from a rolled-back offset waits');
$after = $node->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('ab', NULL, '"for the group"')});
$h->finish;
is($$out, "$after|\"for the group\"\n", 'and returns the record committed later');
server_survived('waits from rolled-back offsets');

# ------------------------------------------------------------------------
# Item 12: drop_topic ends the waits at once.
# ------------------------------------------------------------------------
sub ends_on_drop
{
    my ($what, $topic, $sql, $tag, $drop, $user) = @_;
    $drop //= "SELECT eventlog.drop_topic('$topic')";
    my ($h, $out, $err) = background($sql, $user);
    my $pid = sleeping($h, $tag);
    ok(defined $pid, "$what waits");
    my $t0 = time;
    $node->safe_psql('postgres', $drop);
    $h->finish;
    my $took = time - $t0;
    like($$err, qr/ERROR:  42704: topic "$topic" was dropped while waiting/,
         "$what ends with 42704 when the topic is dropped");
    ok($took < 30, sprintf('%s ends at once, not after its 60-second wait (%.1f s)', $what, $took));
}

$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('d1', 1);
    SELECT eventlog.create_topic('d2', 2);
    SELECT eventlog.create_group('d2', 'g');
    SELECT eventlog.create_topic('d3', 2);
    SELECT eventlog.create_group('d3', 'm');
    SELECT count(*) FROM eventlog.poll('d3', 'm', member => 'a', session_timeout => '5 minutes');
    SELECT eventlog.create_topic('d4', 1);
    SELECT eventlog.create_topic('d5', 1);
    SELECT eventlog.produce('d5', NULL, '"kept"');
    BEGIN; SELECT eventlog.produce('d5', NULL, '"aborted"'); ROLLBACK;
    CREATE ROLE reader LOGIN;
    SELECT eventlog.create_topic('d6', 1);
    SELECT eventlog.create_topic('d7', 1);
    SELECT eventlog.create_group('d7', 'g');
    SELECT eventlog.grant('d6', 'consume', 'reader');
    SELECT eventlog.grant('d7', 'consume', 'reader');
});
ends_on_drop('read(wait)', 'd1',
    q{SELECT /* t12a */ count(*) FROM eventlog.read('d1', 0, 0, wait => '60 seconds')}, 't12a');
ends_on_drop('a transactional poll(wait)', 'd2',
    q{SELECT /* t12b */ count(*) FROM eventlog.poll('d2', 'g', wait => '60 seconds')}, 't12b');
ends_on_drop('a member poll(wait)', 'd3',
    q{SELECT /* t12c */ count(*) FROM eventlog.poll('d3', 'm', member => 'a', session_timeout => '5 minutes', wait => '60 seconds')}, 't12c');
ends_on_drop('read(wait) of a topic dropped and created again', 'd4',
    q{SELECT /* t12d */ count(*) FROM eventlog.read('d4', 0, 0, wait => '60 seconds')}, 't12d',
    q{BEGIN; SELECT eventlog.drop_topic('d4'); SELECT eventlog.create_topic('d4', 1); COMMIT;});
ends_on_drop('read(wait) from a rolled-back offset', 'd5',
    q{SELECT /* t12e */ count(*) FROM eventlog.read('d5', 0, 1, wait => '60 seconds')}, 't12e');
ends_on_drop('read(wait) by a role with only the consume privilege', 'd6',
    q{SELECT /* t12f */ count(*) FROM eventlog.read('d6', 0, 0, wait => '60 seconds')}, 't12f', undef, 'reader');
ends_on_drop('poll(wait) by a role with only the consume privilege', 'd7',
    q{SELECT /* t12g */ count(*) FROM eventlog.poll('d7', 'g', wait => '60 seconds')}, 't12g', undef, 'reader');
server_survived('drops during waits');

$by_in .= "\\q\n";
$bystander->finish;

# A waiting read whose partition slot is recycled (more partitions in use
# than eventlog.max_partitions) attaches again and is still woken by the
# next commit: it sleeps on its topic's wake-up condition variable, which
# never moves (see also 020_long_poll_attack.pl).
$node->append_conf('postgresql.conf', "eventlog.max_partitions = 3\n");
$node->restart;
$node->safe_psql('postgres', q{
    SELECT eventlog.drop_topic(topic) FROM eventlog.topics;
    SELECT eventlog.create_topic('sl', 3);
    CREATE DATABASE other;
});
$node->safe_psql('other', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('o', 2);
});
($h, $out, $err) = background(q{SELECT /* tsl */ offset_id, value FROM eventlog.read('sl', 0, 0, wait => '60 seconds')});
$pid = sleeping($h, 'tsl');
ok(defined $pid, 'a read waits on partition 0');
# Four other partitions looked at through three slots: each takes the next
# slot in clock order, so the reader's is freed and given to another
# partition.  Only looked at, not produced to: no commit broadcasts the
# recycled slot, so only the freeing can wake the reader.
$node->safe_psql('postgres', q{
    SELECT eventlog.last_stable_offset('sl', 1);
    SELECT eventlog.last_stable_offset('sl', 2);
});
$node->safe_psql('other', q{
    SELECT eventlog.last_stable_offset('o', 0);
    SELECT eventlog.last_stable_offset('o', 1);
});
ok(still_sleeping($h, $pid), 'other partitions taking its slot do not end the wait');
my $t0 = time;
$node->safe_psql('postgres', q{SELECT eventlog.produce('sl', NULL, '"p0"', partition => 0)});
$h->finish;
my $took = time - $t0;
is($$out, "0|\"p0\"\n", 'a commit in its partition, in another slot, ends the wait with the record');
ok($took < 30, sprintf('at once, not at the end of its 60-second wait (%.1f s)', $took));

$node->stop;
done_testing();
