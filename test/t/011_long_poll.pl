# Long poll: eventlog.read(..., wait => interval) sleeps on a condition
# variable until records become readable or the wait ends.  It reports the
# Extension wait event and uses next to no CPU while it waits, returns as
# soon as a record commits (or a rollback lets committed records through),
# returns nothing at the end of the wait, ends at once on query cancel, and
# never waits on records its own transaction produced.
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

sub waiting_pid
{
    my $pid;
    $node->poll_query_until('postgres', q{
        SELECT count(*) = 1 FROM pg_stat_activity
         WHERE query LIKE '%eventlog.read(%wait%' AND wait_event_type = 'Extension'
           AND pid <> pg_backend_pid()}) or return undef;
    return $node->safe_psql('postgres', q{
        SELECT pid FROM pg_stat_activity
         WHERE query LIKE '%eventlog.read(%wait%' AND wait_event_type = 'Extension'
           AND pid <> pg_backend_pid()});
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

$node->stop;
done_testing();
