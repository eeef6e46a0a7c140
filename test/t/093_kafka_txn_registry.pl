# The gateway's registry of transactional ids (src/kafka/txn.c,
# docs/kafka.md "Transactions") with --max-transactional-ids 3 and
# --transaction-idle-timeout 8, with librdkafka's transactional producer
# (confluent_kafka, test/t/kafka_txn_registry_client.py): a new id evicts
# the least recently used id unused and without a session for 8 s; an id
# with a transaction open is never evicted: a new id that finds no other
# is refused, and the open transaction still commits; an evicted id
# initialises again (the next epoch, from eventlog.producers) and commits;
# a producer whose id was evicted under it gets an abortable error, and
# goes on after its abort.
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
my $dir = -d "$ENV{TESTDIR}/test/t" ? "$ENV{TESTDIR}/test/t" : 'test/t';
my $client = "$dir/kafka_txn_registry_client.py";
my $idle = 8;

my $node = PostgreSQL::Test::Cluster->new('ktxnreg');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('tr', 1, format => 'binary');
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $tmp = PostgreSQL::Test::Utils::tempdir();

sub sql { return $node->safe_psql('postgres', $_[0]); }

# Bad values are refused at start, with the option's range.
my ($rc, $o, $e) = run_cmd($gw, '--listen', '127.0.0.1:1', '--dsn', 'x', '--max-transactional-ids', '0');
is($rc, 2, '--max-transactional-ids 0: usage error');
like($e, qr/invalid --max-transactional-ids "0": give a number from 1 to 10000000/, 'it says the range');
($rc, $o, $e) = run_cmd($gw, '--listen', '127.0.0.1:1', '--dsn', 'x', '--transaction-idle-timeout', 'x');
like($e, qr/invalid --transaction-idle-timeout "x": give a number of seconds from 1 to 86400/,
    '--transaction-idle-timeout x: usage error');
($rc, $o, $e) = run_cmd($gw, '--help');
like($o, qr/--max-transactional-ids N .*\(default 100000\)/s, '--help lists --max-transactional-ids');

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $addr = "127.0.0.1:$port";
my ($gwh, $gwlog) = spawn_gateway($gw, $tmp, 'main', qr/serving database/,
    '--dsn', $node->connstr('postgres'), '--listen', $addr,
    '--max-transactional-ids', '3', '--transaction-idle-timeout', $idle);

sub client
{
    my ($rc, $out, $err) = run_cmd($python, $client, $addr, @_);
    diag("$_[0]: exit $rc\n$err") if $rc;
    return $out;
}

# One id holds a transaction open throughout.
my ($flag1, $flag2) = ("$tmp/flag1", "$tmp/flag2");
my ($hout, $herr) = ('', '');
my $hh = IPC::Run::start([ $python, $client, $addr, 'hold', 'tr', 'tx-open', $flag1, $flag2 ],
    '>', \$hout, '2>', \$herr);
my $open = 0;
for (1 .. 600)
{
    $hh->pump_nb;
    if ($hout =~ /^open$/m) { $open = 1; last; }
    select(undef, undef, undef, 0.1);
}
ok($open, 'tx-open has a transaction open') or diag($hout . $herr);

# 1. The registry fills; idle ids are evicted, least recently used first.
my $out = client('commit', 'tr', 'tx-1', 'tx-2');
is($out, "committed tx-1\ncommitted tx-2\n", 'two more ids fill the registry (3)');
sleep($idle + 3);
# librdkafka retries an InitProducerId refused so, until the init times
# out: 2 s here, well within the 8 s that tx-3 and tx-4 stay unevictable.
$out = client('commit', 'tr', 'tx-3', 'tx-4', 'tx-5:2');
like($out, qr/^committed tx-3\ncommitted tx-4\n/, 'two new ids, once the others are idle: they evict them');
like($out, qr/^tx-5: error /m, 'a third new id, the others in use or just used: refused (the client retries until its timeout)')
  or diag($out);
my $log = slurp_file($gwlog);
like($log, qr/transactional id "tx-1": evicted from the registry.*\n(?s:.*)transactional id "tx-2": evicted/,
    'tx-1 was evicted first, then tx-2 (least recently used first)');
like($log, qr/transactional id "tx-5": refused \(INVALID_REQUEST\): this gateway coordinates --max-transactional-ids 3 transactional ids and none can be evicted/,
    'the gateway says why tx-5 was refused');
unlike($log, qr/"tx-open": evicted/, 'the id with a transaction open was not evicted');

# 2. The open transaction still commits.
open(my $fh, '>', $flag1) or die;
close($fh);
for (1 .. 600)
{
    $hh->pump_nb;
    last if $hout =~ /^committed$/m;
    select(undef, undef, undef, 0.1);
}
like($hout, qr/^open\ncommitted$/m, 'the transaction open all along commits') or diag($hout . $herr);

# 3. Evicted ids come back: InitProducerId again, the next epoch, commit.
sleep($idle + 3);
$out = client('commit', 'tr', 'tx-1', 'tx-2', 'tx-5');
is($out, "committed tx-1\ncommitted tx-2\ncommitted tx-5\n",
    'evicted ids initialise again and commit (evicting the idle ones, tx-open among them)');
like(slurp_file($gwlog), qr/"tx-open": evicted/, 'tx-open, idle now, was evicted');
is(sql(q{SELECT string_agg(transactional_id || ':' || epoch, ',' ORDER BY transactional_id)
           FROM eventlog.producer_catalog WHERE transactional_id IN ('tx-1', 'tx-2')}),
    'tx-1:1,tx-2:1', 'SQL: their epochs were bumped (fencing as after a restart)');

# 4. The producer whose id was evicted under it goes on after an abort.
open($fh, '>', $flag2) or die;
close($fh);
$hh->finish;
like($hout, qr/^again: error INVALID_PRODUCER_ID_MAPPING fatal=0 abortable=1 /m,
    'tx-open\'s producer: INVALID_PRODUCER_ID_MAPPING, abortable') or diag($hout . $herr);
like($hout, qr/^again: committed$/m, 'after its abort, its next transaction commits') or diag($hout . $herr);

is(sql(q{SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY offset_id)
           FROM eventlog.read_binary('tr', 0, 0, 100000) r}),
    'held,tx-1,tx-2,tx-3,tx-4,tx-1,tx-2,tx-5,again',
    'SQL: every committed record once (held first: offsets are taken when produced); nothing of tx-5\'s refused start');

# 5. Transactions left to time out do not keep the registry full: a client
#    that opens one per id (transaction.timeout.ms 1 s) and goes away
#    leaves lost entries, rolled back by the reaper; once idle they are
#    evicted like the others, and their records never appear.
sql(q{SELECT eventlog.create_topic('tl', 1, format => 'binary')});
sleep($idle + 3);
$out = client('leave', 'tl', 'tx-lost-1', 'tx-lost-2', 'tx-lost-3');
is($out, "open tx-lost-1\nopen tx-lost-2\nopen tx-lost-3\n", 'three ids left with a transaction open, filling the registry');
my $reaped = 0;
for (1 .. 600)
{
    last if ($reaped = slurp_file($gwlog) =~ /"tx-lost-3": the transaction is older than its timeout/);
    select(undef, undef, undef, 0.1);
}
ok($reaped, 'the reaper rolled them back');
sleep($idle + 5);
$out = client('commit', 'tl', 'tx-6');
is($out, "committed tx-6\n", 'a new id evicts a lost one once it is idle');
like(slurp_file($gwlog), qr/"tx-lost-1": evicted/, 'the least recently used lost id was evicted');
is(sql(q{SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY offset_id) FROM eventlog.read_binary('tl', 0, 0, 100000) r}),
    'tx-6', 'SQL: nothing of the lost transactions');

$gwh->signal('TERM');
$gwh->finish;
$node->stop;
done_testing();
