# Kafka transactions through the gateway (issue 16 part 2; src/kafka/txn.c,
# api_txn.c, docs/delivery.md, docs/kafka.md), with librdkafka's
# transactional producer (confluent_kafka, test/t/kafka_txn_client.py):
# committed transactions are seen whole by read_committed consumers, at the
# offsets SQL has, and aborted ones never (SQL has none of their records);
# the sequence numbers go on after an abort; an open transaction holds
# read_committed readers back, also from records committed after it; a
# second producer with the same transactional.id fences the first (its
# open transaction rolled back, its commit fatal); a transaction that
# outlives transaction.timeout.ms is rolled back and the producer goes on
# after aborting; and consume-transform-produce with
# send_offsets_to_transaction is exactly once across a SIGKILL of the
# gateway in the middle of a transaction (records produced, not committed);
# with two gateways (--brokers), a transaction writing partitions led by
# the gateway that does not coordinate it fails with an abortable error and
# leaves nothing (docs/delivery.md says why: one gateway per transaction).
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
my $client = "$dir/kafka_txn_client.py";

my $node = PostgreSQL::Test::Cluster->new('ktxn');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('tb', 2, format => 'binary');
    SELECT eventlog.create_topic('tf', 1, format => 'binary');
    SELECT eventlog.create_topic('tt', 1, format => 'binary');
    SELECT eventlog.create_topic('tl', 1, format => 'binary');
    SELECT eventlog.create_topic('cin', 2, format => 'binary');
    SELECT eventlog.create_topic('cout', 2, format => 'binary');
    SELECT eventlog.create_topic('tm', 4, format => 'binary');
    SELECT count(*) FROM (
      SELECT eventlog.produce_binary_batch('cin',
               array_agg(ROW(NULL, convert_to(i::text, 'UTF8'), NULL, NULL)::eventlog.message ORDER BY i),
               (i % 2)::int)
        FROM generate_series(0, 299) i GROUP BY i % 2) s;
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $tmp = PostgreSQL::Test::Utils::tempdir();

sub start_gateway
{
    my ($name, @args) = @_;
    return spawn_gateway($gw, $tmp, $name, qr/serving database/, '--dsn', $node->connstr('postgres'), @args);
}

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $addr = "127.0.0.1:$port";
my ($gwh, $gwlog) = start_gateway('main', '--listen', $addr);

sub client
{
    my ($rc, $out, $err) = run_cmd($python, $client, $addr, @_);
    diag("$_[0]: exit $rc\n$err") if $rc;
    return $out;
}

sub values_of
{
    my ($topic, $p) = @_;
    return sql(qq{SELECT string_agg(r.offset_id || ' ' || convert_from(r.value, 'UTF8'), ',' ORDER BY r.offset_id)
                    FROM eventlog.read_binary('$topic', $p, 0, 100000) r});
}

# 1. Commit, abort, commit; a read_committed consumer and SQL agree.
my $out = client('basic', 'tb', 'tx-basic');
like($out, qr/^committed 10\naborted 10\ncommitted 5\n/, 'librdkafka: commit, abort, then commit again')
  or diag($out);
my %seen;
$seen{$1}{$2} = $3 while $out =~ /^seen (\d) (\d+) (\S+)$/mg;
my %consumer = map { my $p = $_; ($p => join(',', map { "$_ $seen{$p}{$_}" } sort { $a <=> $b } keys %{ $seen{$p} })) } 0, 1;
is($consumer{0}, '0 c0,1 c2,2 c4,3 c6,4 c8,10 d0,11 d2,12 d4',
    'read_committed consumer, partition 0: both committed transactions whole, nothing aborted');
is($consumer{1}, '0 c1,1 c3,2 c5,3 c7,4 c9,10 d1,11 d3',
    'read_committed consumer, partition 1: the same');
is(values_of('tb', 0), $consumer{0}, 'SQL: partition 0 holds exactly those records at those offsets');
is(values_of('tb', 1), $consumer{1}, 'SQL: partition 1 too (the aborted records took offsets 5 to 9, as in Kafka)');
is(sql(q{SELECT count(*) FROM eventlog.producer_catalog WHERE transactional_id = 'tx-basic' AND epoch = 0}), '1',
    'SQL: the transactional id is a producer of eventlog.producer_catalog, at epoch 0');

# 2. An open transaction holds read_committed readers back.
$out = client('lso', 'tl', 'tx-lso');
like($out, qr/^open and after produced\ncommitted\n/, 'a transaction open while another producer commits after it');
unlike($out, qr/^while open/m, 'while it is open, read_committed readers see neither');
like($out, qr/^after commit: 0 l-open\nafter commit: 1 l-after$/m, 'after its commit, both in offset order');

# 3. Fencing.
$out = client('fence', 'tf', 'tx-fence');
like($out, qr/^a produced\nb initialised\nb committed\n/, 'a second producer with the same id initialises and commits');
like($out, qr/^a commit: error _FENCED fatal=1/m, 'the first one is fenced: a fatal error');
is(values_of('tf', 0), '1 f-b', 'SQL: the fenced transaction left nothing, the new one committed');
is(sql(q{SELECT epoch FROM eventlog.producer_catalog WHERE transactional_id = 'tx-fence'}), '1',
    'SQL: the epoch was bumped');

# 4. transaction.timeout.ms.
$out = client('timeout', 'tt', 'tx-timeout');
like($out, qr/^produced\ncommit: error \S+ fatal=0 abortable=1 .*\naborted\ncommitted t-y$/m,
    'a transaction older than its timeout: the commit fails (abortable), the next one commits')
  or diag($out);
like(slurp_file($gwlog), qr/transactional id "tx-timeout": the transaction is older than its timeout of 2000 ms: rolling it back/,
    'the gateway rolled it back');
is(values_of('tt', 0), '1 t-y', 'SQL: the timed-out record is not there, the next one is');

# 5. Consume-transform-produce, exactly once across a SIGKILL of the gateway.
my $flag = "$tmp/ctp.flag";
my ($cout, $cerr) = ('', '');
my $ch = IPC::Run::start([ $python, $client, $addr, 'ctp', 'cin', 'cout', 'ctp-group', 'tx-ctp', 2, $flag ],
    '>', \$cout, '2>', \$cerr);
my $waited = 0;
for (1 .. 600)
{
    $ch->pump_nb;
    if ($cout =~ /^waiting$/m) { $waited = 1; last; }
    select(undef, undef, undef, 0.1);
}
ok($waited, 'the processor is in the middle of a transaction, records produced') or diag($cout . $cerr);
$gwh->signal('KILL');
eval { $gwh->finish };
($gwh, $gwlog) = start_gateway('restart', '--listen', $addr);
open(my $fh, '>', $flag) or die;
close($fh);
$ch->finish;
like($cout, qr/^done transactions=\d+ restarts=\d+$/m, 'the processor consumed everything') or diag($cout . $cerr);
like($cout, qr/^txn 6: error/m, 'the interrupted transaction failed in the client');
my $dups = sql(q{SELECT count(*) - count(DISTINCT value) FROM eventlog.read_binary('cout', 0, 0, 100000)})
  + sql(q{SELECT count(*) - count(DISTINCT value) FROM eventlog.read_binary('cout', 1, 0, 100000)});
is($dups, 0, 'SQL: no record was written twice');
for my $p (0, 1)
{
    is(sql(qq{SELECT string_agg(convert_from(value, 'UTF8'), ',' ORDER BY offset_id)
                FROM eventlog.read_binary('cout', $p, 0, 100000)}),
        sql(qq{SELECT string_agg('x' || convert_from(value, 'UTF8'), ',' ORDER BY offset_id)
                 FROM eventlog.read_binary('cin', $p, 0, 100000)}),
        "SQL: partition $p of the output is the input transformed, each record once, in order");
}
is(sql(q{SELECT string_agg(partition || ':' || committed_offset, ',' ORDER BY partition)
           FROM eventlog.kafka_offset_fetch('ctp-group')}),
    '0:150,1:150', 'SQL: the group\'s positions are the end of the input, committed with the output');

# 6. Two gateways: a transaction is served by one.
$gwh->signal('TERM');
$gwh->finish;
my @mports = map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 2;
my $list = join(',', map { "127.0.0.1:$_" } @mports);
my @mgws = map { [ start_gateway("multi$_", '--listen', "127.0.0.1:$mports[$_]", '--brokers', $list) ] } 0 .. 1;
$addr = "127.0.0.1:$mports[0]";
$out = client('multi', 'tm', 'tx-multi');
like($out, qr/^commit error INVALID_PRODUCER_ID_MAPPING fatal=0 abortable=1 .*\naborted$/m,
    'two gateways: the partitions of the other gateway refuse the batches, the transaction aborts')
  or diag($out);
is(sql(q{SELECT count(*) FROM generate_series(0, 3) p, eventlog.read_binary('tm', p, 0, 100) r}), '0',
    'SQL: nothing of it was stored, on either gateway');
like(slurp_file($mgws[0][1]) . slurp_file($mgws[1][1]),
    qr/Produce with transactional id "tx-multi", which this gateway does not coordinate: refused/,
    'the gateway that does not coordinate it says why');
for (@mgws)
{
    $_->[0]->signal('TERM');
    $_->[0]->finish;
}
$node->stop;
done_testing();
