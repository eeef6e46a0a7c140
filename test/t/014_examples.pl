# The example consumers in docs/examples (consumer.c with libpq,
# consumer.py with psycopg 3) consume what they should:
#  - after a reconnection they poll before they wait: records produced
#    while the notifier is off (so that no notification ever announces
#    them) come as soon as their connections are terminated;
#  - a notification wakes them: records produced while they wait come
#    although their safety-net timeout (--wait-seconds) is 300 s;
#  - each prints exactly the 6 records as "partition offset value", exits 0
#    after --max-records 6, and its group's positions moved past them.
# consumer.c is compiled with -Wall -Wextra -Werror; an example is skipped
# only if its toolchain is missing (a C compiler and libpq's headers;
# /usr/bin/python3 with psycopg).
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

# The examples, next to test/ in the tree (test/run copies both).
my $examples = $ENV{EL_EXAMPLES_DIR} // "$FindBin::Bin/../../docs/examples";
ok(-f "$examples/consumer.c" && -f "$examples/consumer.py", 'the examples are found')
  or do
{
    diag("no consumer.c and consumer.py in $examples: copy docs/ along with test/, or set EL_EXAMPLES_DIR");
    done_testing();
    exit;
};

my $node = PostgreSQL::Test::Cluster->new('examples');
$node->init;
# Without the notifier at first: nothing announces the records of step 1.
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.notify = off
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('ex', 2);
});

sub run_quiet
{
    my ($out, $err) = ('', '');
    my $ok = eval { IPC::Run::run(\@_, '>', \$out, '2>', \$err) };
    return ($ok, $out . $err);
}

# The examples to run: name => command.
my %cmd;
my ($have_pg_config, $pg_out) = run_quiet('pg_config', '--includedir');
my ($inc) = $pg_out =~ /^(\S+)$/m;
my ($libdir) = (run_quiet('pg_config', '--libdir'))[1] =~ /^(\S+)$/m;
my ($have_cc) = run_quiet('cc', '--version');
SKIP:
{
    skip 'no C compiler, pg_config or libpq-fe.h: consumer.c not tested', 1
      unless $have_cc && $have_pg_config && defined $inc && -f "$inc/libpq-fe.h";
    my $bin = $node->basedir . '/consumer';
    my ($ok, $msg) = run_quiet('cc', '-Wall', '-Wextra', '-Werror', "-I$inc",
                               "$examples/consumer.c", "-L$libdir", '-lpq', '-o', $bin);
    ok($ok, 'consumer.c compiles with -Wall -Wextra -Werror') or diag($msg);
    $cmd{c} = [$bin] if $ok;
}
SKIP:
{
    skip 'no /usr/bin/python3 with psycopg: consumer.py not tested', 1
      unless (run_quiet('/usr/bin/python3', '-c', 'import psycopg'))[0];
    my ($ok, $msg) = run_quiet('/usr/bin/python3', '-c',
                               'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")',
                               "$examples/consumer.py");
    ok($ok, 'consumer.py compiles') or diag($msg);
    $cmd{py} = [ '/usr/bin/python3', "$examples/consumer.py" ] if $ok;
}
my @names = sort keys %cmd;

# Start each example as a consumer of its own group ("g_<name>"), so both
# read every record.  The application name tells their backends apart.
my %ex;
for my $name (@names)
{
    $node->safe_psql('postgres', "SELECT eventlog.create_group('ex', 'g_$name')");
    my ($out, $err) = ('', '');
    my $conninfo = $node->connstr('postgres') . " application_name=example_$name";
    my $h = IPC::Run::start(
        [ @{ $cmd{$name} }, '--conninfo', $conninfo, '--max-records', '6',
          '--wait-seconds', '300', 'ex', "g_$name" ],
        '<', \undef, '>', \$out, '2>', \$err);
    $ex{$name} = { h => $h, out => \$out, err => \$err };
}
my $apps = join(', ', map { "'example_$_'" } @names);
# An example left running by a failure would retry its connection forever.
END
{
    for my $e (values %ex)
    {
        eval { $e->{h}->kill_kill if $e->{h}->pumpable };
    }
}

# Wait until every example waits: idle after its poll's COMMIT (or after
# the query that reads a notification).
sub all_waiting
{
    return $node->poll_query_until('postgres', qq{
        SELECT count(*) = @{[ scalar @names ]} FROM pg_stat_activity
         WHERE application_name IN ($apps) AND state = 'idle'
           AND query IN ('COMMIT', 'SELECT 1')});
}

# Lines an example has printed so far, waiting for at least "n" of them.
sub lines_of
{
    my ($name, $n) = @_;
    my $e = $ex{$name};
    my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
    my @lines;
    while (1)
    {
        $e->{h}->pump_nb if $e->{h}->pumpable;
        @lines = split /\n/, ${ $e->{out} };
        last if @lines >= $n || time > $deadline || !$e->{h}->pumpable;
        select(undef, undef, undef, 0.05);
    }
    return @lines;
}

# Wait up to "seconds" for an example to exit; kill it if it does not.
# Returns whether it exited with status 0.
sub finish_within
{
    my ($h, $seconds) = @_;
    my $deadline = time + $seconds;
    while ($h->pumpable && time < $deadline)
    {
        $h->pump_nb;
        select(undef, undef, undef, 0.05);
    }
    if ($h->pumpable)
    {
        $h->kill_kill;
        return 0;
    }
    $h->finish;
    return $h->result == 0;
}

# Produce records 'from' to 'to', each in a transaction of its own,
# alternating between the partitions; returns "partition offset value".
sub produce
{
    my ($from, $to) = @_;
    my @lines;
    for my $i ($from .. $to)
    {
        my $pos = $node->safe_psql('postgres', qq{
            SELECT partition || ' ' || offset_id
              FROM eventlog.produce('ex', NULL, '{"n": $i}', partition => $i % 2)});
        push @lines, qq{$pos {"n": $i}};
    }
    return @lines;
}

SKIP:
{
    skip 'no example could be built', 1 unless @names;

    ok(all_waiting(), 'the examples connect, poll, and wait');

    # 1. Records produced while nothing announces them come after a
    #    reconnection: the examples poll before they wait.
    my @expected = produce(1, 3);
    $node->safe_psql('postgres', "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name IN ($apps)");
    for my $name (@names)
    {
        my @got = lines_of($name, 3);
        is_deeply([ sort @got ], [ sort @expected ],
                  "$name: after a reconnection it polls first and gets the unannounced records")
          or diag(${ $ex{$name}{err} });
        like(${ $ex{$name}{err} }, qr/reconnected/, "$name: it reported the reconnection");
    }

    # 2. With the notifier on, a notification wakes them.
    $node->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.notify = on; SELECT pg_reload_conf();});
    $node->poll_query_until('postgres', q{
        SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_eventlog notifier'})
      or die 'no notifier';
    ok(all_waiting(), 'the examples wait again');
    # A pause after each commit, so that most of them find the examples
    # waiting again.
    for my $i (4 .. 6)
    {
        push @expected, produce($i, $i);
        select(undef, undef, undef, 0.1);
    }

    for my $name (@names)
    {
        my $e = $ex{$name};
        my @got = lines_of($name, 6);
        is_deeply([ sort @got ], [ sort @expected ],
                  "$name: woken by notifications, it printed exactly the 6 records")
          or diag(${ $e->{err} });
        for my $p (0, 1)
        {
            my @offsets = map { (split / /)[1] } grep { /^$p / } @got;
            is_deeply(\@offsets, [ sort { $a <=> $b } @offsets ], "$name: partition $p in offset order");
        }
        ok(finish_within($e->{h}, @got >= 6 ? 30 : 0), "$name: it exits 0 after --max-records 6")
          or diag(${ $e->{err} });
        is($node->safe_psql('postgres', qq{
              SELECT string_agg(partition || ':' || committed_offset, ' ' ORDER BY partition)
                FROM eventlog.consumer_groups WHERE topic = 'ex' AND group_name = 'g_$name'}),
           '0:3 1:3', "$name: the group's positions moved past the 6 records");
    }
}

$node->stop;
done_testing();
