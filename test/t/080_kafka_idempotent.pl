# Idempotent producers over Kafka (issue 16 part 1; src/kafka/
# api_init_producer_id.c, produce_store.c, src/producer.c, docs/kafka.md,
# docs/delivery.md): InitProducerId hands out eventlog.init_producer's
# identities in every version; a raw probe's idempotent batches get Kafka's
# answers (a retry of a kept batch: its ORIGINAL base offset and no error,
# nothing stored twice; a gap: OUT_OF_ORDER_SEQUENCE_NUMBER; an older
# repeat: DUPLICATE_SEQUENCE_NUMBER; a fenced epoch: INVALID_PRODUCER_EPOCH;
# an unknown producer or epoch: UNKNOWN_PRODUCER_ID; a negative epoch or
# sequence: INVALID_RECORD), also across the sequence wraparound at
# INT32_MAX and for JSON topics; another role's producer id is refused, a
# role that may produce nowhere gets no producer id, and another role's
# transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED; kcat's idempotent
# producer stores its records; pipelined idempotent requests share one
# commit (produce_batch.c), a retry among them gets its original offsets; and librdkafka's idempotent producer
# streaming while the gateway is killed (SIGKILL) and restarted again and
# again stores every acknowledged record exactly once, at the offset it was
# acknowledged with, in order per partition, checked in SQL.
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
my $probe = "$dir/kafka_idempotent_probe.py";
my $stream = "$dir/kafka_idempotent_stream.py";

my $node = PostgreSQL::Test::Cluster->new('kidem');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('idem', 3, format => 'binary');
    SELECT eventlog.create_topic('idemj', 1);
    SELECT eventlog.create_topic('stream', 3, format => 'binary');
    SELECT eventlog.create_topic('kc', 1, format => 'binary');
    CREATE ROLE alice LOGIN;
    CREATE ROLE nobody LOGIN;
    SELECT eventlog.grant('idem', 'produce', 'alice');
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $tmp = PostgreSQL::Test::Utils::tempdir();

sub start_gateway
{
    my ($name, $dsn, @args) = @_;
    return spawn_gateway($gw, $tmp, $name, qr/serving database/, '--dsn', $dsn, @args);
}

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $addr = "127.0.0.1:$port";
my ($gwh, $gwlog) = start_gateway('main', $node->connstr('postgres'), '--listen', $addr);

sub probe
{
    my ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, @_);
    diag($err) if $rc;
    chomp $out;
    return $out;
}

# 1. InitProducerId, every version: a new producer id at epoch 0 each time.
my ($rc, $out, $err) = run_cmd($python, "$dir/kafka_probe.py", '127.0.0.1', $port, 'apiversions', 3);
like($out, qr/[=,]22:0-4[,\n]/, 'ApiVersions advertises InitProducerId v0-4');
like($out, qr/[=,]24:0-3,25:0-3,26:0-3,28:0-3[,\n]/, 'and the transaction APIs (081 tests them)');
my %pids;
for my $v (0 .. 4)
{
    my $got = probe('init', $v);
    like($got, qr/^error=0 pid=\d+ epoch=0 rest=0$/, "InitProducerId v$v: a producer id at epoch 0");
    $pids{$1} = 1 if $got =~ /pid=(\d+)/;
}
is(scalar(keys %pids), 5, 'five calls, five distinct producer ids');
is(sql(q{SELECT count(*) FROM eventlog.producer_catalog WHERE owner = current_user::regrole
         AND epoch = 0 AND transactional_id IS NULL AND producer_id IN (} . join(',', keys %pids) . ')'),
    '5', 'SQL: the producers are eventlog.init_producer\'s, owned by the gateway\'s role');
like(probe('init', 4, 'tx-1'), qr/^error=0 pid=\d+ epoch=0 rest=0$/,
    'a transactional id: a producer id at epoch 0 (081 tests transactions)');

my ($pid) = probe('init', 4) =~ /pid=(\d+)/;

# 2. Idempotent batches from a raw probe.
sub send_batch { return probe('send', @_); }

my $first = send_batch('idem', 0, $pid, 0, 0, 3);
like($first, qr/^error=0 base=(\d+) msg=None$/, 'a first batch at sequence 0 is stored');
my ($b0) = $first =~ /base=(\d+)/;
is(send_batch('idem', 0, $pid, 0, 0, 3), "error=0 base=$b0 msg=None",
    'the same batch again: its ORIGINAL base offset, no error');
is(send_batch('idem', 0, $pid, 0, 3, 2), 'error=0 base=' . ($b0 + 3) . ' msg=None',
    'the next batch (sequence 3) follows it');
is(send_batch('idem', 0, $pid, 0, 0, 3), "error=0 base=$b0 msg=None",
    'the first batch once more, still among the last 5: its original base offset');
like(send_batch('idem', 0, $pid, 0, 9, 1),
    qr/^error=45 base=-1 msg=out-of-order sequence number 9 for producer $pid in partition 0 of topic "idem"$/,
    'a gap: OUT_OF_ORDER_SEQUENCE_NUMBER');
like(send_batch('idem', 0, $pid, 0, 1, 1), qr/^error=46 base=-1 msg=duplicate sequence number 1 /,
    'a repeat of numbers used before that is no kept batch: DUPLICATE_SEQUENCE_NUMBER');
like(send_batch('idem', 0, $pid, 1, 5, 1), qr/^error=59 base=-1 msg=producer $pid has no epoch 1$/,
    'an epoch the producer never had: UNKNOWN_PRODUCER_ID');
like(send_batch('idem', 0, 999999, 0, 0, 1), qr/^error=59 base=-1 msg=producer 999999 does not exist$/,
    'a producer id never handed out: UNKNOWN_PRODUCER_ID');
like(send_batch('idem', 0, '9223372036854775807', 0, 0, 1), qr/^error=59 /,
    'producer id INT64_MAX: UNKNOWN_PRODUCER_ID');
like(send_batch('idem', 0, $pid, -1, 5, 1), qr/^error=87 base=-1 msg=producer ${pid}'s batch has epoch -1 /,
    'epoch -1 with a producer id: INVALID_RECORD');
like(send_batch('idem', 0, $pid, 0, -1, 1), qr/^error=87 base=-1 msg=producer ${pid}'s batch has epoch 0 and base sequence -1/,
    'base sequence -1 with a producer id: INVALID_RECORD');
like(send_batch('idem', 1, $pid, 0, 5, 1),
    qr/^error=45 base=-1 msg=out-of-order sequence number 5 .* partition 1 /,
    'a first batch in a partition must start at 0: OUT_OF_ORDER_SEQUENCE_NUMBER');
like(send_batch('idem', 1, $pid, 0, 2147483647, 2), qr/^error=45 /,
    'nor at INT32_MAX');
is(send_batch('idem', 0, $pid, 0, 5, 1), 'error=0 base=' . ($b0 + 5) . ' msg=None',
    'after all those errors the producer goes on at sequence 5');
is(sql(q{SELECT string_agg(r.offset_id || '=' || convert_from(r.value, 'UTF8'), ',' ORDER BY r.offset_id)
           FROM eventlog.read_binary('idem', 0, 0) r}),
    join(',', map { ($b0 + $_) . "=$_" } 0 .. 5),
    'SQL: each record once, in sequence order, nothing of the refused batches');
is(sql(qq{SELECT first_sequence::text || last_sequence::text || first_offset::text
            FROM eventlog.producer_state s JOIN eventlog.topic_catalog t USING (topic_id)
           WHERE t.name = 'idem' AND s.partition = 0 AND s.producer_id = $pid}),
    '{0,3,5}{2,4,5}{' . join(',', $b0, $b0 + 3, $b0 + 5) . '}',
    'SQL: the producer\'s kept batches in the partition');

# Versions 3 to 8 of Produce take idempotent batches too.
for my $v (3 .. 8)
{
    is(send_batch('idem', 0, $pid, 0, 3 + $v, 1, $v), 'error=0 base=' . ($b0 + 3 + $v) . ' msg=None',
        "Produce v$v: an idempotent batch is stored");
}
is(send_batch('idem', 0, $pid, 0, 11, 1, 3), 'error=0 base=' . ($b0 + 11) . ' msg=None',
    'and a retry in v3 gets its original base offset');

# A JSON topic takes the same path.
my $j = send_batch('idemj', 0, $pid, 0, 0, 2);
like($j, qr/^error=0 base=\d+ msg=None$/, 'a JSON topic: an idempotent batch is stored');
is(send_batch('idemj', 0, $pid, 0, 0, 2), $j, 'and its retry gets the original base offset');
is(sql(q{SELECT count(*) FROM eventlog.read('idemj', 0, 0)}), '2', 'SQL: the JSON records once');

# 3. Fencing: an epoch older than the producer's is refused.
sql(qq{UPDATE eventlog.producer_catalog SET epoch = 1 WHERE producer_id = $pid});
like(send_batch('idem', 0, $pid, 0, 12, 1), qr/^error=47 base=-1 msg=producer $pid has been fenced$/,
    'an older epoch: INVALID_PRODUCER_EPOCH');
my $e1 = send_batch('idem', 0, $pid, 1, 0, 1);
like($e1, qr/^error=0 /, 'the new epoch starts again at sequence 0');

# 4. The wraparound of sequence numbers at INT32_MAX, in partition 2: the
# kept batch is moved (as superuser) to end just before INT32_MAX.
like(send_batch('idem', 2, $pid, 1, 0, 1), qr/^error=0 /, 'a first batch in partition 2');
sql(qq{UPDATE eventlog.producer_state s SET first_sequence = '{2147483640}', last_sequence = '{2147483646}'
        FROM eventlog.topic_catalog t
       WHERE t.topic_id = s.topic_id AND t.name = 'idem' AND s.partition = 2 AND s.producer_id = $pid});
my $w = send_batch('idem', 2, $pid, 1, 2147483647, 3);
like($w, qr/^error=0 base=\d+ msg=None$/, 'a batch from INT32_MAX over the wraparound (2147483647, 0, 1) is stored');
is(send_batch('idem', 2, $pid, 1, 2147483647, 3), $w, 'its retry gets its original base offset');
like(send_batch('idem', 2, $pid, 1, 2, 1), qr/^error=0 /, 'the next batch starts at 2');
like(send_batch('idem', 2, $pid, 1, 0, 1), qr/^error=46 /, 'sequence 0 again (inside the wrapped batch): DUPLICATE_SEQUENCE_NUMBER');
is(sql(q{SELECT string_agg(convert_from(r.value, 'UTF8'), ',' ORDER BY r.offset_id)
           FROM eventlog.read_binary('idem', 2, 0) r}), '0,2147483647,0,1,2',
    'SQL: partition 2 holds each record once');

# 5. Privileges: another role's producer id, a role that may produce nowhere.
my $aport = PostgreSQL::Test::Cluster::get_free_port();
my ($ah) = start_gateway('alice', $node->connstr('postgres') . ' user=alice', '--listen', "127.0.0.1:$aport");
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $aport, 'send', 'idem', 1, $pid, 1, 0, 1);
like($out, qr/^error=29 base=-1 msg=permission denied for producer $pid$/,
    'another role\'s producer id: TOPIC_AUTHORIZATION_FAILED');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $aport, 'init', 4);
like($out, qr/^error=0 pid=(\d+) epoch=0/, 'a role that may produce to a topic gets a producer id');
my ($apid) = $out =~ /pid=(\d+)/;
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $aport, 'send', 'idemj', 0, $apid, 0, 0, 1);
like($out, qr/^error=29 /, 'but produces only where it may');
# A transactional id another role obtained: Kafka's answer to a transactional
# InitProducerId its ACLs refuse, TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).
like(probe('init', 4, 'tx-owned'), qr/^error=0 pid=(\d+) epoch=0 /, 'the gateway\'s role obtains transactional id tx-owned');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $aport, 'init', 4, 'tx-owned');
is($out, "error=53 pid=-1 epoch=-1 rest=0\n", 'another role with that transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $aport, 'init', 0, 'tx-owned');
is($out, "error=53 pid=-1 epoch=-1 rest=0\n", 'in version 0 too');
is(sql(q{SELECT epoch || ' ' || owner FROM eventlog.producer_catalog WHERE transactional_id = 'tx-owned'}),
    '0 ' . sql('SELECT current_user'), 'SQL: the id is still its owner\'s, its epoch not bumped (not fenced)');
$ah->signal('TERM');
$ah->finish;
my $nport = PostgreSQL::Test::Cluster::get_free_port();
my ($nh) = start_gateway('nobody', $node->connstr('postgres') . ' user=nobody', '--listen', "127.0.0.1:$nport");
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $nport, 'init', 4);
is($out, "error=31 pid=-1 epoch=-1 rest=0\n", 'a role that may produce nowhere: CLUSTER_AUTHORIZATION_FAILED');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $nport, 'init', 4, 'tx-nobody');
is($out, "error=53 pid=-1 epoch=-1 rest=0\n", 'with a transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka checks only the id\'s permission then)');
$nh->signal('TERM');
$nh->finish;
is(sql(q{SELECT count(*) FROM eventlog.producer_catalog WHERE owner = 'nobody'::regrole}), '0',
    'and no producer is left behind for it');

# 6. kcat's idempotent producer (librdkafka).
($rc, $out, $err) = run_cmd(\"a\nb\nc\n", 'kcat', '-P', '-b', $addr, '-t', 'kc', '-p', '0',
    '-X', 'enable.idempotence=true');
is($rc, 0, 'kcat -P with enable.idempotence=true succeeds') or diag($err);
is(sql(q{SELECT string_agg(convert_from(r.value, 'UTF8'), ',' ORDER BY r.offset_id)
           FROM eventlog.read_binary('kc', 0, 0) r}), 'a,b,c', 'SQL: kcat\'s records once');
is(sql(q{SELECT count(*) FROM eventlog.producer_state s JOIN eventlog.topic_catalog t USING (topic_id)
          WHERE t.name = 'kc'}), '1', 'SQL: they went through the idempotent path');

# 7. librdkafka's idempotent producer streaming to 3 partitions while the
# gateway is killed and restarted.
my $ackf = "$tmp/acks";
my $stopf = "$tmp/stop";
my ($sout, $serr) = ('', '');
my $sh = IPC::Run::start([ $python, $stream, $addr, 'stream', 3, $ackf, $stopf ],
    '>', \$sout, '2>', \$serr);

sub acked
{
    return 0 unless -f $ackf;
    return scalar(grep { /^\d+ \d+ \d+$/ } split /\n/, slurp_file($ackf));
}

sub wait_acked
{
    my ($n) = @_;
    for (my $i = 0; $i < 10 * $PostgreSQL::Test::Utils::timeout_default; $i++)
    {
        return 1 if acked() >= $n;
        select(undef, undef, undef, 0.1);
    }
    return 0;
}

my $kills = 8;
for my $round (1 .. $kills)
{
    ok(wait_acked(400 * $round), "round $round: the producer got acknowledgements")
      or diag($serr);
    $gwh->signal('KILL');
    eval { $gwh->finish };
    # Sometimes at once, sometimes after the client noticed.
    select(undef, undef, undef, ($round % 3) * 0.15);
    ($gwh, $gwlog) = start_gateway("restart$round", $node->connstr('postgres'), '--listen', $addr);
}
ok(wait_acked(400 * ($kills + 1)), 'the producer goes on after the last restart');
open(my $fh, '>', $stopf) or die;
close($fh);
$sh->finish;
like($sout, qr/^done produced=(\d+) acked=\1 failed=0$/m, 'every record produced was acknowledged')
  or diag($sout . $serr);
unlike($sout, qr/^fatal/m, 'and no fatal error');
my ($produced) = $sout =~ /produced=(\d+)/;
$produced //= -1;

my %ack;
my $ack_dups = 0;
for (split /\n/, slurp_file($ackf))
{
    next unless /^(\d+) (\d+) (\d+)$/;
    $ack_dups++ if exists $ack{$3};
    $ack{$3} = "$1 $2";
}
is($ack_dups, 0, 'each record acknowledged once');
my %stored;
my $stored_dups = 0;
my $order_ok = 1;
for my $p (0 .. 2)
{
    my $prev = -1;
    for (split /\n/, sql(qq{SELECT r.offset_id || ' ' || convert_from(r.value, 'UTF8')
                              FROM eventlog.read_binary('stream', $p, 0, 1000000) r ORDER BY r.offset_id}))
    {
        my ($off, $val) = split / /;
        $stored_dups++ if exists $stored{$val};
        $stored{$val} = "$p $off";
        $order_ok = 0 if $val <= $prev || $val % 3 != $p;
        $prev = $val;
    }
}
is($stored_dups, 0, 'SQL: no record is stored twice');
ok($order_ok, 'SQL: in each partition the records are in the order produced, each in its partition');
is(scalar(keys %stored), $produced, 'SQL: every record produced is stored');
is(scalar(grep { !exists $stored{$_} || $stored{$_} ne $ack{$_} } keys %ack), 0,
    'SQL: every acknowledged record is at the offset it was acknowledged with');

# Pipelined idempotent Produce requests (no transactional id) share one
# commit like any (produce_batch.c): each batch is checked in the batch's
# transaction, seeing the ones before it in that transaction, so a retry of
# a batch not yet committed gets its original offsets.  A gap among them
# rolls the batch back; each request is then handled on its own and gets
# the answer it would have had alone.
sql(q{SELECT eventlog.create_topic('pipe', 1, format => 'binary')});
{
    my $pport = PostgreSQL::Test::Cluster::get_free_port();
    my ($ph, $plog) = start_gateway('pipelined', $node->connstr('postgres'),
        '--listen', "127.0.0.1:$pport", '--log-level', 'debug');
    my $pid = sql(q{SELECT producer_id FROM eventlog.init_producer()});
    my (undef, $got) = run_cmd($python, $probe, '127.0.0.1', $pport, 'pipelined', 'pipe', 0, $pid, 0,
                               0, 5, 0, 10, 15);
    chomp $got;
    is($got, join("\n", '0: error=0 base=0', '5: error=0 base=5', '0: error=0 base=0',
                  '10: error=0 base=10', '15: error=0 base=15'),
       'pipelined idempotent requests: answered in order; the retry of the first, in the same transaction, gets its offset');
    # The batch rolled back took offsets with it (offsets have gaps where
    # writes rolled back), so the bases after it are not known in advance:
    # only that 25's follows 20's.
    (undef, $got) = run_cmd($python, $probe, '127.0.0.1', $pport, 'pipelined', 'pipe', 0, $pid, 0,
                            20, 30, 25);
    chomp $got;
    my @b = $got =~ /^20: error=0 base=(\d+)\n30: error=45 base=-1\n25: error=0 base=(\d+)$/;
    ok(@b && $b[1] == $b[0] + 5,
       "pipelined idempotent requests with a gap: OUT_OF_ORDER_SEQUENCE_NUMBER for it alone ($got)");
    is(sql(q{SELECT count(*) || ' ' || count(DISTINCT value) || ' '
                    || bool_and(convert_from(value, 'UTF8')::int = n - 1)
               FROM (SELECT value, row_number() OVER (ORDER BY offset_id) AS n
                       FROM eventlog.read_binary('pipe', 0, 0, 1000)) r}), '30 30 true',
       'pipelined idempotent requests: each record stored once, in order');
    $ph->signal('TERM');
    $ph->finish;
    my $plogtext = slurp_file($plog);
    my @sizes = $plogtext =~ /(\d+) pipelined Produce requests committed in one transaction/g;
    ok(grep({ $_ >= 2 } @sizes),
       'pipelined idempotent requests: several committed in one transaction (batches of '
       . join(',', @sizes) . ')');
    like($plogtext, qr/a statement failed among \d+ pipelined Produce requests: rolling back/,
         'pipelined idempotent requests: the gap rolled the batch back and each was handled alone');
}

$gwh->signal('TERM');
$gwh->finish;
$node->stop;
done_testing();
