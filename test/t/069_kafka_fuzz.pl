# The Kafka gateway under a network fuzz (issue 15, "hostile input"):
# test/kafka/fuzz_gateway.c, compiled here, first checks that its corpus
# is valid (every API and version the gateway advertises, each request
# answered and none malformed), then sends mutated requests over many
# pipelined connections, slow and half-open ones among them, checking
# every response's framing and correlation id.  Meanwhile a sentinel client
# must keep getting answers; afterwards the gateway and PostgreSQL are
# alive, the gateway's memory is back near where it started, and kcat
# still produces and consumes what SQL reads.  Last, a regression test of
# what the fuzz found: a response cut by the close that followed it.
#
# EL_FUZZ_FRAMES (default 2000, 100000 with EL_TAP_LONG) sets how many
# requests the fuzz makes the gateway handle, EL_FUZZ_SEED its seed
# (default: the time, printed), EL_FUZZ_GATEWAY another gateway program
# (an -fsanitize=address,undefined build: docs/kafka.md, "Fuzz test").
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use KafkaGatewayTest;

my $python = '/usr/bin/python3';
my $dir = "$ENV{TESTDIR}/test";
$dir = 'test' unless -d "$dir/kafka";
my $frames = $ENV{EL_FUZZ_FRAMES} || ($ENV{EL_TAP_LONG} ? 100000 : 2000);
my $seed = $ENV{EL_FUZZ_SEED} || time();
note("fuzz: $frames frames, seed $seed (replay with EL_FUZZ_SEED=$seed)");

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $fuzz = "$tmp/fuzz_gateway";
my ($rc, $out, $err) = run_cmd('cc', '-std=gnu11', '-O2', '-g', '-Wall', '-Wextra', '-Werror',
    '-o', $fuzz, "$dir/kafka/fuzz_gateway.c", '-lz', '-llz4', '-lzstd', '-lsnappy');
is($rc, 0, 'the fuzzer compiles') or BAIL_OUT("cc: $err");

my $node = PostgreSQL::Test::Cluster->new('kafka_fuzz');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
# The fuzzer's topics (a binary one, a JSON one); "after" is for the
# clients at the end, a name the fuzzer does not use.
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('fz', 3, format => 'binary');
    SELECT eventlog.create_topic('fzj', 1);
    SELECT eventlog.create_topic('after', 1, format => 'binary');
});
my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

my $gw = $ENV{EL_FUZZ_GATEWAY} || $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $addr = "127.0.0.1:$port";
my ($gwh, $gwlog) = spawn_gateway($gw, $tmp, 'gateway', qr/serving database/,
    '--listen', $addr, '--dsn', $node->connstr('postgres'));
my $gwpid = $gwh->{KIDS}[0]{PID};

# The gateway's resident memory in kB (VmRSS, or VmHWM: its peak).
sub gateway_kb
{
    my ($field) = @_;
    my ($kb) = slurp_file("/proc/$gwpid/status") =~ /^$field:\s+(\d+) kB$/m;
    return $kb;
}

# 1. The corpus: the versions the gateway advertises are the corpus's, and
# each request alone is answered, none of them malformed.
($rc, $out, $err) = run_cmd($fuzz, '-p', $port, '-V', '-q');
is($rc, 0, 'fuzz_gateway -V succeeds') or diag($out . $err);
like($out, qr/^corpus: (\d+) requests, 0 bad$/m, 'every request of the corpus is answered');
unlike(slurp_file($gwlog), qr/malformed/, 'and none of them is malformed');
my $rss_start = gateway_kb('VmRSS');

# 2. The fuzz, and a sentinel client beside it: kafka_probe.py's Metadata on
# a new connection, again and again until the fuzz ends.  Each must be
# answered (run_cmd fails on the test's timeout, a hang).
my ($fout, $ferr) = ('', '');
# A request left unanswered for the test's timeout (-t) is a hang.
my $fh = IPC::Run::start([ $fuzz, '-p', $port, '-n', $frames, '-s', $seed, '-q',
        '-t', $PostgreSQL::Test::Utils::timeout_default ],
    '>', \$fout, '2>', \$ferr);
my ($sentinel_ok, $sentinel_bad, $during) = (0, 0, 0);
while (1)
{
    ($rc, $out, $err) = run_cmd($python, "$dir/t/kafka_probe.py", '127.0.0.1', $port, 'metadata', 1, 'after');
    if ($out =~ /^topic after error=0 partitions=0:0 /m)
    {
        $sentinel_ok++;
    }
    else
    {
        $sentinel_bad++;
        diag("sentinel: $out$err");
    }
    $fh->pump_nb;
    last unless $fh->pumpable;
    $during = $sentinel_ok;
}
$fh->finish;
note("fuzz: $fout$ferr");
is($? >> 8, 0, 'the fuzz finds nothing') or diag($fout . $ferr);
my ($handled, $findings) = $fout =~ /: (\d+) frames handled .* (\d+) findings$/m;
ok(defined $handled && $handled >= $frames, "the gateway handled at least $frames frames");
is($findings, 0, 'no response with a broken length or a wrong correlation id, no request left unanswered');
is($sentinel_bad, 0, "every sentinel request was answered ($sentinel_ok)");
ok($during >= 1, "sentinel requests were answered while the fuzz ran ($during)");

# 3. The gateway lives, PostgreSQL did not restart, and the gateway's
# memory is back near its start once its connections are gone.
ok(kill(0, $gwpid), 'the gateway is alive');
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $started,
    'PostgreSQL did not restart');
unlike(slurp_file($node->logfile), qr/terminated by signal|PANIC/, 'no backend crashed');
unlike(slurp_file($gwlog), qr/AddressSanitizer|runtime error|LeakSanitizer/,
    'no sanitizer report in the gateway\'s log');
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}),
    'the gateway\'s sessions ended with their connections');
my ($rss_end, $peak) = (gateway_kb('VmRSS'), gateway_kb('VmHWM'));
note("gateway memory: $rss_start kB at the start, $rss_end kB after, peak $peak kB");
cmp_ok($rss_end - $rss_start, '<', 64 * 1024, 'the gateway\'s memory after is within 64 MB of its start');
cmp_ok($peak - $rss_start, '<', 512 * 1024, 'and its peak within 512 MB');

# 4. Real clients still work: kcat produces and consumes, as SQL sees it.
my $input = join('', map { "k$_:v$_\n" } 1 .. 50);
($rc, $out, $err) = run_cmd(\$input, 'kcat', '-P', '-b', $addr, '-t', 'after', '-p', '0', '-K:');
is($rc, 0, 'kcat -P after the fuzz') or diag($err);
is($node->safe_psql('postgres', q{
    SELECT string_agg(convert_from(key, 'UTF8') || ':' || convert_from(value, 'UTF8'), ',' ORDER BY offset_id)
      FROM eventlog.read_binary('after', 0, 0, 100)}),
    join(',', map { "k$_:v$_" } 1 .. 50), 'SQL reads the 50 records kcat produced');
($rc, $out, $err) = run_cmd('kcat', '-C', '-b', $addr, '-t', 'after', '-p', '0', '-o', 'beginning',
    '-e', '-f', '%o %k:%s\n');
is($rc, 0, 'kcat -C after the fuzz') or diag($err);
is($out, join('', map { ($_ - 1) . " k$_:v$_\n" } 1 .. 50), 'kcat consumes them at their offsets');

# 5. A finding of the fuzz: a response followed by a frame that closes the
# connection, itself followed by more pipelined bytes, lost its tail (the
# kernel resets a socket closed with unread bytes, dropping what it had not
# sent).  A client with a small receive buffer fetches 2.7 MB, then sends an
# unknown API key and another request: it must get the whole response, then
# the end of the stream.
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('big', 1, format => 'binary');
    SELECT eventlog.produce_binary('big', 'k', convert_to(repeat('x', 900000), 'UTF8'), partition => 0)
      FROM generate_series(1, 3);
});
my $cut_probe = q{
import socket, struct, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(('127.0.0.1', int(sys.argv[1])))
fetch = struct.pack('>hhih', 1, 5, 7, 4) + b'test' + struct.pack('>iiiib', -1, 0, 0, 8 << 20, 0) \
    + struct.pack('>ih', 1, 3) + b'big' + struct.pack('>iiqqi', 1, 0, 0, -1, 8 << 20)
bad = struct.pack('>hhih', 9999, 0, 8, 0)
s.sendall(b''.join(struct.pack('>i', len(f)) + f for f in (fetch, bad, fetch)))
data = b''
while True:
    try:
        chunk = s.recv(4096)
    except ConnectionResetError:
        print('reset')
        break
    if not chunk:
        break
    data += chunk
    time.sleep(0.0005)
size = struct.unpack('>i', data[:4])[0]
print('whole' if len(data) == 4 + size and size > 2700000 else 'cut: %d of %d bytes' % (len(data) - 4, size))
};
for my $i (1 .. 3)
{
    ($rc, $out, $err) = run_cmd($python, '-c', $cut_probe, $port);
    is($out, "whole\n", "a response before a closing frame arrives whole ($i)") or diag($err);
}

$gwh->signal('TERM');
$gwh->finish;
is($? >> 8, 0, 'the gateway ends with status 0 on SIGTERM');
# A sanitizer build reports leaks at exit.
unlike(slurp_file($gwlog), qr/AddressSanitizer|runtime error|LeakSanitizer/,
    'no sanitizer report in the gateway\'s log at its exit');

done_testing();
