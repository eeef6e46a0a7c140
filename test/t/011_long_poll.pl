# Long poll: eventlog.read(..., wait => interval) and eventlog.poll(...,
# wait => interval) sleep on a condition variable until records become
# readable or the wait ends.  They report the Extension wait event and use
# next to no CPU while they wait, return as soon as a record commits (or a
# rollback lets committed records through), return nothing at the end of
# the wait, end at once on query cancel, and never wait on records their own
# transaction produced.  A waiting poll never makes another consumer of the
# group wait, and one whose partitions another transaction holds does not
# spin.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('lp');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('lp', 1);
});

# Run SQL in the background; returns the harness and its output buffer.
sub background
{
    my ($sql) = @_;
    my ($out, $err) = ('', '');
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-d', $node->connstr('postgres'), '-c', $sql ],
        '>', \$out, '2>', \$err);
    return ($h, \$out, \$err);
}

# The PID of the one backend waiting in a long poll whose query matches.
sub waiting_pid
{
    my ($like) = @_;
    $like //= '%eventlog.read(%wait%';
    my $where = qq{query LIKE '$like' AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()};
    $node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE $where")
      or return undef;
    return $node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE $where");
}

sub cpu_ticks
{
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return undef;
    my @f = split / /, <$fh>;
    close $fh;
    return $f[13] + $f[14];
}

# 1. A waiting reader reports the wait event and idles; a commit wakes it.
my ($h, $out) = background(q{SELECT offset_id, value FROM eventlog.read('lp', 0, 0, 10, wait => '60 seconds')});
my $pid = waiting_pid();
ok(defined $pid, 'the long poll waits with wait_event_type Extension');
my $t0 = cpu_ticks($pid);
sleep 5;
my $t1 = cpu_ticks($pid);
ok(defined $t0 && $t1 - $t0 <= 5, 'and uses next to no CPU over 5 seconds (' . ($t1 - $t0) . ' ticks)');
$node->safe_psql('postgres', q{SELECT eventlog.produce('lp', NULL, '"first"')});
$h->finish;
is($$out, "0|\"first\"\n", 'a commit wakes it and it returns the record');

# 2. The end of the wait: nothing readable, nothing returned.
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('lp', 0, 1, 10, wait => '200 milliseconds')}),
   '0', 'at the end of the wait it returns nothing');

# 3. A rollback that lets committed records through wakes it too.
my ($hold, $hold_in, $hold_out) = ('', '', '');
my $holder = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
    '<', \$hold_in, '>', \$hold_out, '2>', \my $hold_err);
$hold_in .= "BEGIN;\nSELECT offset_id FROM eventlog.produce('lp', NULL, '\"held\"');\n";
$holder->pump until $hold_out =~ /^1$/m;
($h, $out) = background(q{SELECT offset_id, value FROM eventlog.read('lp', 0, 1, 10, wait => '60 seconds')});
$pid = waiting_pid();
$node->safe_psql('postgres', q{SELECT eventlog.produce('lp', NULL, '"behind"')});
sleep 1;
is($$out, '', 'a record committed behind an open transaction does not wake the reader');
$hold_in .= "ROLLBACK;\n";
$holder->pump while length $hold_in;
$h->finish;
is($$out, "2|\"behind\"\n", 'the rollback does, and the reader gets the committed record past the gap');
$hold_in .= "\\q\n";
$holder->finish;

# 4. Query cancel ends the wait at once.
my $err;
($h, $out, $err) = background(q{SELECT count(*) FROM eventlog.read('lp', 0, 3, 10, wait => '1 hour')});
$pid = waiting_pid();
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$h->finish;
like($$err, qr/canceling statement due to user request/, 'query cancel ends the wait');

# 5. A call never waits on records its own transaction produced.
is($node->safe_psql('postgres', q{
    BEGIN;
    SELECT eventlog.produce('lp', NULL, '"mine"') \gset
    SELECT value #>> '{}' FROM eventlog.read('lp', 0, 3, 10, wait => '1 hour');
    ROLLBACK;}), 'mine', 'a transaction reads its own record without waiting');

# Bad input.
my ($ret, $o, $e) = $node->psql('postgres', q{SELECT * FROM eventlog.read('lp', 0, 0, 10, wait => '-1 s')});
like($e, qr/wait must not be negative/, 'a negative wait is refused');

# eventlog.poll with wait, transactional consumers.
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('gp', 2);
    SELECT eventlog.create_group('gp', 'g');
});
my $poll = q{SELECT partition, value FROM eventlog.poll('gp', 'g', 10, partitions => 2, wait => '60 seconds')};
($h, $out) = background($poll);
$pid = waiting_pid('%eventlog.poll(%wait%');
ok(defined $pid, 'a waiting poll reports wait_event_type Extension');
$t0 = cpu_ticks($pid);
sleep 2;
$t1 = cpu_ticks($pid);
ok($t1 - $t0 <= 3, 'and uses next to no CPU (' . ($t1 - $t0) . ' ticks over 2 seconds)');
$node->safe_psql('postgres', q{SELECT eventlog.produce('gp', NULL, '"p1"', partition => 1)});
$h->finish;
is($$out, "1|\"p1\"\n", 'a commit in any partition wakes it and it returns the record');
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.poll('gp', 'g', 10, partitions => 2, wait => '300 ms')}),
   '0', 'at the end of the wait the poll returns nothing');
($h, $out, $err) = background(q{SELECT count(*) FROM eventlog.poll('gp', 'g', 10, partitions => 2, wait => '1 hour')});
$pid = waiting_pid('%eventlog.poll(%wait%');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$h->finish;
like($$err, qr/canceling statement due to user request/, 'query cancel ends a waiting poll');
($h, $out, $err) = background(q{SELECT count(*) FROM eventlog.poll('gp', 'g', 10, partitions => 2, wait => '1 hour')});
$pid = waiting_pid('%eventlog.poll(%wait%');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
$h->finish;
like($$err, qr/terminating connection due to administrator command/, 'pg_terminate_backend ends it too');
is($node->safe_psql('postgres', q{
    BEGIN;
    SELECT eventlog.produce('gp', NULL, '"own"', partition => 0) \gset
    SELECT count(*) FROM eventlog.poll('gp', 'g', 10, partitions => 2, wait => '1 hour');
    ROLLBACK;}), '1', 'a poll does not wait on records its own transaction produced');

# A partition another transaction holds: the waiting poll does not spin,
# and gets the records once the holder commits (within a second).
$node->safe_psql('postgres', q{SELECT eventlog.produce_batch('gp', NULL, ARRAY['"h1"', '"h2"']::jsonb[], partition => 0)});
$hold_in = "BEGIN;\nSELECT count(*) FROM eventlog.poll('gp', 'g', 1, partitions => 1);\n";
$hold_out = '';
$holder = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
    '<', \$hold_in, '>', \$hold_out, '2>', \$hold_err);
$holder->pump until $hold_out =~ /^1$/m;
($h, $out) = background(q{SELECT value FROM eventlog.poll('gp', 'g', 10, partitions => 2, wait => '60 seconds')});
$pid = waiting_pid('%eventlog.poll(%wait%');
$t0 = cpu_ticks($pid);
sleep 2;
$t1 = cpu_ticks($pid);
ok($t1 - $t0 <= 5, 'a poll whose records another transaction holds does not spin (' . ($t1 - $t0) . ' ticks over 2 seconds)');
$hold_in .= "COMMIT;\n\\q\n";
$holder->finish;
$h->finish;
is($$out, "\"h2\"\n", 'after the holder commits, the waiting poll gets the record it left');

# Members: a waiting member does not hold the group's membership lock.
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('mp', 2);
    SELECT eventlog.create_group('mp', 'm');
    SELECT count(*) FROM eventlog.poll('mp', 'm', member => 'a', session_timeout => '5 minutes');
});
($h, $out) = background(q{SELECT partition, value FROM eventlog.poll('mp', 'm', member => 'a', session_timeout => '5 minutes', wait => '60 seconds')});
$pid = waiting_pid('%eventlog.poll(%wait%');
ok(defined $pid, 'a member waits in its poll');
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.poll('mp', 'm', member => 'b', session_timeout => '5 minutes')}),
   '0', 'another member joins meanwhile');
is($node->safe_psql('postgres', "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pid"),
   'Extension', 'while the first is still waiting');
my $owned = $node->safe_psql('postgres', q{SELECT min(partition) FROM eventlog.group_offsets WHERE group_name = 'm' AND owner_member = 'a'});
$node->safe_psql('postgres', "SELECT eventlog.produce('mp', NULL, '\"m1\"', partition => $owned)");
$h->finish;
is($$out, "$owned|\"m1\"\n", 'a commit in a partition the member owns wakes it');
($ret, $o, $e) = $node->psql('postgres', q{SELECT * FROM eventlog.poll('mp', 'm', member => 'a', session_timeout => '10 s', wait => '10 s')});
like($e, qr/wait must be shorter than session_timeout/, 'a member cannot wait past its session timeout');
($ret, $o, $e) = $node->psql('postgres', q{SELECT * FROM eventlog.poll('gp', 'g', wait => '-1 s')});
like($e, qr/wait must not be negative/, 'a negative wait is refused by poll');

$node->stop;
done_testing();
