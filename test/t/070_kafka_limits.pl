# The Kafka gateway's resource limits (docs/kafka.md, "Options" and
# "Limits"): --idle-timeout closes a connection that sends nothing, but not
# one whose Fetch waits in the server; --max-request-memory bounds the
# bytes of large request frames held at once over all connections, so many
# connections sending large frames slowly cannot grow the gateway's memory
# past it, and a connection waiting for it is served once the others are
# done; SCRAM's made-up salt for an unknown user is the same from two
# gateway processes (the database's secret, eventlog.kafka_scram_mock_secret),
# so comparing them does not tell unknown users from real roles.
#
# The gateway is the installed one ($(pg_config --bindir)): this test builds
# nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use KafkaGatewayTest;

my $python = '/usr/bin/python3';
my $probe = "$ENV{TESTDIR}/test/t/kafka_limits_probe.py";
$probe = 'test/t/kafka_limits_probe.py' unless -f $probe;

my $node = PostgreSQL::Test::Cluster->new('kafka_limits');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'\n"
      . "password_encryption = 'scram-sha-256'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('quiet', 1, format => 'binary');
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $tmp = PostgreSQL::Test::Utils::tempdir();

sub start_gateway
{
    my ($name, $dsn, @args) = @_;
    my $port = PostgreSQL::Test::Cluster::get_free_port();
    my ($h, $log) = spawn_gateway($gw, $tmp, $name, qr/serving database/, '--dsn', $dsn,
        '--listen', "127.0.0.1:$port", @args);
    return ($h, $log, $port);
}

sub stop_gateway
{
    my ($h) = @_;
    $h->signal('TERM');
    $h->finish;
    return $? >> 8;
}

# 1. The command line.
my ($rc, $out, $err) = run_cmd($gw, '--help');
like($out, qr/--max-request-memory N .*\(default 268435456; at least\n\s+--max-request-bytes\)/s,
    '--help: --max-request-memory and its default');
like($out, qr/--idle-timeout MS .*\(default 600000;\n\s+0: never\)/s, '--help: --idle-timeout and its default');
for my $case ([ [ '--idle-timeout', '-1' ], qr/invalid --idle-timeout "-1"/ ],
              [ [ '--idle-timeout', '2147483648' ], qr/invalid --idle-timeout "2147483648"/ ],
              [ [ '--max-request-memory', '10' ], qr/invalid --max-request-memory "10"/ ],
              [ [ '--max-request-memory', '1000000' ],
                qr/--max-request-bytes 104857600 is larger than --max-request-memory 1000000/ ],
              [ [ '--max-request-bytes', '300000000' ],
                qr/--max-request-bytes 300000000 is larger than --max-request-memory 268435456/ ])
{
    my ($args, $msg) = @$case;
    ($rc, $out, $err) = run_cmd($gw, '--listen', '127.0.0.1:9092', '--dsn', 'x', @$args);
    is($rc, 2, "exit status 2 for: @$args");
    like($err, $msg, "and the reason for: @$args");
}

# 2. --idle-timeout: a connection that sends nothing is closed; one whose
# Fetch waits in the server longer than that is not.
my ($ih, $ilog, $iport) = start_gateway('idle', $node->connstr('postgres'),
    '--idle-timeout', '2000', '--log-level', 'debug');
my ($pout, $perr) = ('', '');
my $ph = IPC::Run::start([ $python, $probe, '127.0.0.1', $iport, 'longpoll', 'quiet', 0, 0 ],
    '>', \$pout, '2>', \$perr, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'}),
    'a Fetch with nothing to read waits in the server');
# While it waits: another connection that sends nothing after its answer.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $iport, 'idle');
is($out, "apiversions: answered\nidle: closed by the gateway\n",
    'a connection idle for --idle-timeout is closed') or diag($err);
like(slurp_file($ilog), qr/INFO: conn \d+ \(127\.0\.0\.1:\d+\): idle for 2000 ms \(--idle-timeout\): closing/,
    'and the log says why');
# The Fetch has waited longer than that; a commit ends it, and its
# connection still serves requests.
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'}),
    'the Fetch still waits after the idle connection was closed');
$node->safe_psql('postgres', q{SELECT eventlog.produce_binary('quiet', NULL, '\x01')});
$ph->finish;
like($pout, qr{^fetch: quiet/0 error=0 hw=1 lso=1 start=0 records=1 offsets=0$}m,
    'the long-polling Fetch gets its record') or diag($perr);
like($pout, qr/^then: answered$/m, 'and its connection was not closed as idle');
is(scalar(() = slurp_file($ilog) =~ /idle for 2000 ms/g), 1, 'one idle connection was closed, not two');
is(stop_gateway($ih), 0, 'that gateway stops');

# 3. --max-request-memory: 24 connections sending 6 MiB frames slowly, each
# holding its last byte until all are that far.  Without the budget the
# gateway would hold all of them (144 MiB); with 16 MiB, two at a time.
my $budget = 16 * 1024 * 1024;
my $frame = 6 * 1024 * 1024;
my ($bh, $blog, $bport) = start_gateway('budget', $node->connstr('postgres'),
    '--max-request-memory', $budget, '--max-request-bytes', 12 * 1024 * 1024,
    '--log-level', 'debug');
my $bpid = $bh->{KIDS}[0]{PID};

sub memory_kb
{
    my ($field) = @_;
    my ($kb) = slurp_file("/proc/$bpid/status") =~ /^$field:\s+(\d+) kB$/m;
    return $kb;
}
# A first round of small requests, so the threads' own costs are counted.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $bport, 'bigframes', 24, 1000);
is($out, "answered 24 of 24\n", 'small frames: all answered') or diag($err);
my $before = memory_kb('VmHWM');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $bport, 'bigframes', 24, $frame);
is($out, "answered 24 of 24\n", 'every connection sending a 6 MiB frame is answered in the end') or diag($err);
my $growth_mb = (memory_kb('VmHWM') - $before) / 1024;
note("peak resident memory grew by $growth_mb MiB");
# The frames held are at most 16 MiB; malloc's arenas may keep freed
# frames for reuse beside them (18 to 24 MiB of growth seen), far from the
# 144 MiB of all frames at once.
cmp_ok($growth_mb, '<', 2 * 16 + 16,
    'the peak resident memory grew by less than twice the budget (16 MiB) and 16 MiB more');
like(slurp_file($blog), qr/waits for request memory for a request of $frame bytes/,
    'connections waited for request memory');

# A connection that waits for the budget is served once the holder is done,
# and small requests go on meanwhile.
my ($win, $wout, $werr) = ('', '', '');
my $wh = IPC::Run::start([ $python, $probe, '127.0.0.1', $bport, 'budgetwait', 12 * 1024 * 1024, 6291400 ],
    '<', \$win, '>', \$wout, '2>', \$werr, IPC::Run::timeout(3 * $PostgreSQL::Test::Utils::timeout_default));
ok(wait_for_log($blog, qr/waits for request memory for a request of 6291400 bytes \(12582912 of 16777216 bytes in use/),
    'a 6 MiB frame waits while half of a 12 MiB one holds the budget');
$win .= "go\n";
$wh->finish;
is($wout, "A: half sent\nsmall request meanwhile: answered\nB before A is complete: waiting\n"
    . "A: answered\nB: answered\n", 'it is answered once the other is, and small requests are not held')
  or diag($werr);
is(stop_gateway($bh), 0, 'that gateway stops');

# 4. SCRAM's made-up salts: the same from two gateways for an unknown user.
$node->safe_psql('postgres', q{
    CREATE ROLE gateway LOGIN;
    CREATE ROLE alice LOGIN PASSWORD 'alice-secret';
    CREATE ROLE lesser LOGIN;
    GRANT alice TO gateway;
    GRANT EXECUTE ON FUNCTION eventlog.kafka_scram_verifier(text) TO gateway, lesser;
    GRANT SELECT ON eventlog.kafka_scram_mock_secret TO gateway;
});
($rc, $out, $err) = $node->psql('postgres', 'SELECT secret FROM eventlog.kafka_scram_mock_secret',
    extra_params => [ '-U', 'alice' ]);
like($err, qr/permission denied for table kafka_scram_mock_secret/, 'an ordinary role cannot read the secret');
is($node->safe_psql('postgres', 'SELECT octet_length(secret) FROM eventlog.kafka_scram_mock_secret'),
    32, 'the secret is 32 bytes');
my @users = ('nosuch', 'nosuch2', 'alice');
my %salts;
for my $g ([ 'scram1', 'gateway' ], [ 'scram2', 'gateway' ], [ 'scram3', 'lesser' ])
{
    my ($name, $role) = @$g;
    my ($h, $log, $port) = start_gateway($name, $node->connstr('postgres') . " user=$role",
        '--sasl', 'scram-sha-256');
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'salt', @users);
    for my $u (@users)
    {
        ($salts{$name}{$u}) = $out =~ /^$u: (salt=\S+ iterations=\d+)$/m;
    }
    ok(defined $salts{$name}{nosuch}, "$name answers a SCRAM first message") or diag("$out $err");
    is(stop_gateway($h), 0, "$name stops");
    if ($role eq 'lesser')
    {
        like(slurp_file($log), qr/WARNING: cannot read eventlog\.kafka_scram_mock_secret: the --dsn role may not read it/,
            'a gateway whose role may not read the secret says so');
    }
    else
    {
        unlike(slurp_file($log), qr/cannot read eventlog\.kafka_scram_mock_secret/, "$name read the secret");
    }
}
like($salts{scram1}{nosuch}, qr/^salt=[A-Za-z0-9+\/]{22}== iterations=4096$/, 'an unknown user: a 16-byte salt, 4096 iterations');
is($salts{scram2}{nosuch}, $salts{scram1}{nosuch}, 'the same made-up salt from a second gateway process');
is($salts{scram2}{nosuch2}, $salts{scram1}{nosuch2}, 'for another unknown user too');
isnt($salts{scram1}{nosuch2}, $salts{scram1}{nosuch}, 'which is not the first user\'s');
my ($iter, $salt) = $node->safe_psql('postgres', q{SELECT rolpassword FROM pg_authid WHERE rolname = 'alice'})
  =~ /^SCRAM-SHA-256\$(\d+):([^\$]+)\$/;
is($salts{scram1}{alice}, "salt=$salt iterations=$iter", 'a real role gets its own salt');
is($salts{scram2}{alice}, $salts{scram1}{alice}, 'from both');
isnt($salts{scram3}{nosuch}, $salts{scram1}{nosuch},
    'a gateway that cannot read the secret makes up salts of its own');

done_testing();
