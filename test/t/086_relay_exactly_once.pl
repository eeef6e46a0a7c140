# pg_eventlog relay --to-kafka --exactly-once (src/cli/relay_txn.c): each
# poll's records and the positions they reach in one Kafka transaction.
# Against pg_eventlog's own Kafka gateway (a Kafka transaction is a
# PostgreSQL transaction there), the relay is killed with -9 again and
# again: by the test hooks with a transaction open, and between Kafka's
# commit and PostgreSQL's; then at random moments mid-stream while records
# keep coming, rolled-back ones among them.  After every kill, what a
# read_committed consumer sees in Kafka is, per partition, exactly the
# source's records below the position Kafka holds, each once and in order;
# at the end, exactly the source's records.  librdkafka 2.0.2's mock cluster
# cannot show this (an aborted transaction's records reach read_committed
# readers there: checked below), so it only gets a run without kills.
use strict;
use warnings;
use File::Basename;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use CliTest;
use KafkaGatewayTest;

my $dir = dirname(__FILE__);
my $python = '/usr/bin/python3';
my $node = cli_node('relay_eo');
my ($rc, $out, $err);

$node->safe_psql('postgres', 'CREATE DATABASE dest');
$node->safe_psql('dest', 'CREATE EXTENSION pg_eventlog');
my $gwport = PostgreSQL::Test::Cluster::get_free_port();
my ($gwh) = spawn_gateway($node->config_data('--bindir') . '/pg_eventlog_kafka', PostgreSQL::Test::Utils::tempdir(),
    'gw', qr/serving database/, '--dsn', $node->connstr('dest'), '--listen', "127.0.0.1:$gwport");
my $boot = "127.0.0.1:$gwport";
my @relay = (qw(relay eo eob --group eog --exactly-once --to-kafka), $boot);

cli(qw(topic create eo --partitions 3));
cli(qw(topic create eob --partitions 2 --format binary));

# Records of both topics, some with headers, and a rolled-back transaction
# in each round (offsets the relay's positions must step over).
my $produced = 0;
sub produce_round
{
    my ($n) = @_;
    my ($a, $b) = ($produced + 1, $produced + $n);
    $node->safe_psql('postgres', qq{
SELECT count(eventlog.produce('eo', 'k' || i % 101, jsonb_build_object('i', i, 'pad', repeat('x', i % 50)),
                              CASE WHEN i % 7 = 0 THEN jsonb_build_object('h', i::text) END))
  FROM generate_series($a, $b) i;
SELECT count(eventlog.produce_binary('eob', int4send(i), CASE WHEN i % 13 = 0 THEN NULL ELSE int8send(i) END,
                                     NULL, (i / 2) % 2))
  FROM generate_series($a, $b, 2) i;
BEGIN; SELECT count(eventlog.produce('eo', 'rb', '{"rolled": "back"}')) FROM generate_series(1, 30); ROLLBACK;
BEGIN; SELECT count(eventlog.produce_binary('eob', 'rb', 'rb', NULL, 1)) FROM generate_series(1, 30); ROLLBACK;
});
    $produced = $b;
}

# What a read_committed consumer sees: per "topic/partition", the source
# offsets (header pg_eventlog.offset) and values, in Kafka's order.  Against
# the gateway, its database tells the consumer each partition's last
# committed offset to read up to (a partition that ends in rolled-back
# offsets never reports its end, and a loaded machine can leave 3 s
# without a record long before the end).
sub kafka_view
{
    my ($o, $e) = ('', '');
    local $ENV{COMMITTED_ENDS} = $boot eq "127.0.0.1:$gwport" ? join(',', split /\n/, $node->safe_psql('dest', q{
SELECT t || '/' || p || '=' || coalesce((SELECT max(r.offset_id) FROM eventlog.read_binary(t, p, 0, 10000000) r), -1)
  FROM (VALUES ('eo', 3), ('eob', 2)) v(t, n), generate_series(0, n - 1) p
 WHERE EXISTS (SELECT FROM eventlog.topic_catalog c WHERE c.name = t)})) : '';
    IPC::Run::run([ $python, "$dir/kafka_mock.py", 'committed', $boot, 'eo', 'eob' ], '>', \$o, '2>', \$e)
      or die "committed: $e";
    my %v;
    for (split /\n/, $o)
    {
        my ($t, $p, undef, undef, $value, $h) = split / /;
        my ($off) = $h =~ /pg_eventlog\.offset=(\w+)(?:,|$)/ or die "no source offset: $_";
        push @{ $v{"$t/$p"} }, pack('H*', $off) . " $value";
    }
    return \%v;
}

# The same from SQL: every record of the source, or those below positions.
sub source_view
{
    my ($pos) = @_;
    my %v;
    my $sql = q{
SELECT 'eo/' || r.partition, r.offset_id, encode(convert_to(r.value::text, 'UTF8'), 'hex')
  FROM generate_series(0, 2) p, eventlog.read('eo', p, 0, 1000000) r
UNION ALL
SELECT 'eob/' || r.partition, r.offset_id, coalesce(encode(r.value, 'hex'), '-')
  FROM generate_series(0, 1) p, eventlog.read_binary('eob', p, 0, 1000000) r
ORDER BY 1, 2};
    for (split /\n/, $node->safe_psql('postgres', $sql))
    {
        my ($tp, $off, $value) = split /\|/;
        next if $pos && $off >= ($pos->{$tp} // 0);
        push @{ $v{$tp} }, "$off $value";
    }
    return \%v;
}

# The positions Kafka holds: the last value of each key of the positions
# topic (the gateway's copy of it, in database dest).
sub kafka_positions
{
    my %pos;
    for (split /\n/, $node->safe_psql('dest', q{
SELECT DISTINCT ON (k) k, v FROM (SELECT convert_from(key, 'UTF8') k, convert_from(value, 'UTF8') v, offset_id
  FROM eventlog.read_binary('pg_eventlog_relay_positions', 0, 0, 1000000)) r
 WHERE k LIKE '["eog"%' ORDER BY k, offset_id DESC}))
    {
        my ($k, $v) = split /\|/;
        my ($t, $p) = $k =~ /^\["eog","(\w+)",(\d+),"\d+"\]$/ or die "key $k";
        $pos{"$t/$p"} = $v;
    }
    return \%pos;
}

sub sum_of { my ($h) = @_; my $s = 0; $s += $_ for values %$h; return $s; }

# After each kill: Kafka holds exactly the records below its positions.
my $kills = 0;
sub check_after_kill
{
    my ($what) = @_;
    my $pos = kafka_positions();
    my $kafka = kafka_view();
    my $src = source_view($pos);
    $kills++;
    note("$what: Kafka's positions " . join(' ', map { "$_=$pos->{$_}" } sort keys %$pos)
      . '; PostgreSQL\'s ' . $node->safe_psql('postgres', q{SELECT string_agg(topic || '/' || partition || '=' || committed_offset, ' ' ORDER BY 1)
      FROM eventlog.consumer_groups WHERE group_name = 'eog'}));
    is_deeply($kafka, $src, "$what: a read_committed reader sees each record below Kafka's positions once, in order, and nothing else");
    return $pos;
}

# 1. A transaction open at the kill: the hook kills the relay right after it
#    handed its second batch to librdkafka, before that transaction's commit.
produce_round(30000);
{
    local $ENV{PG_EVENTLOG_TEST_RELAY_CRASH_AFTER_BATCH} = '2';
    ($rc, $out, $err) = cli(@relay, '-e');
}
is($rc, 137, 'the test hook killed the relay with -9, a transaction open') or diag("rc $rc: $err");
my $pos = check_after_kill('kill -9 with a transaction open');
ok(sum_of($pos) > 0 && sum_of($pos) < 45000, 'the first batch is in Kafka, not all');

# 2. Between the two commits: Kafka committed the records and the positions,
#    PostgreSQL's positions did not follow.  The restart must go by Kafka's.
{
    local $ENV{PG_EVENTLOG_TEST_RELAY_CRASH_AFTER_TXN} = '2';
    ($rc, $out, $err) = cli(@relay, '-e');
}
is($rc, 137, 'the test hook killed the relay with -9 between Kafka\'s commit and PostgreSQL\'s') or diag("rc $rc: $err");
$pos = check_after_kill('kill -9 between the commits');
my $pgsum = $node->safe_psql('postgres', q{SELECT sum(committed_offset) FROM eventlog.consumer_groups WHERE group_name = 'eog'});
ok($pgsum < sum_of($pos), "PostgreSQL's positions ($pgsum) are behind Kafka's (" . sum_of($pos) . ')');

# 3. kill -9 at random moments, records coming meanwhile: each round starts
#    a following relay, waits until Kafka's positions moved, kills it a
#    random moment later.
for my $round (1 .. 6)
{
    produce_round(8000);
    my $before = sum_of(kafka_positions());
    my ($rin, $rout, $rerr) = ('', '', '');
    my $h = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), @relay ], '<', \$rin, '>', \$rout, '2>', \$rerr);
    my $moved = 0;
    for (1 .. 600)
    {
        last if ($moved = sum_of(kafka_positions()) > $before);
        last unless $h->pumpable;
        select(undef, undef, undef, 0.05);
    }
    ok($moved, "round $round: the relay moved Kafka's positions") or diag($rerr);
    produce_round(2000);
    select(undef, undef, undef, rand(0.6));
    $h->signal('KILL');
    $h->finish;
    check_after_kill("round $round: kill -9 mid-stream");
}

# 4. The last run catches up: every record once, in order; the group's
#    positions in PostgreSQL followed (lag 0); a second run sends nothing.
($rc, $out, $err) = cli(@relay, '-e');
is($rc, 0, 'the restarted relay catches up') or diag($err);
my $final = kafka_view();
is_deeply($final, source_view(), "after $kills kills: a read_committed reader sees every source record exactly once, in order per partition");
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.consumer_groups WHERE group_name = 'eog' AND committed_offset <> last_stable_offset}),
    '0', 'the group\'s positions in PostgreSQL are at the end');
($rc, $out, $err) = cli(@relay, '-e');
is($rc, 0, 'a second run') or diag($err);
is_deeply(kafka_view(), $final, 'sends nothing again');

# 4b. The group's position in PostgreSQL going back behind Kafka's while the
#     relay runs (here a forced seek; a partition lost at a missed session
#     timeout and regained from the committed position does the same): the
#     relay polls those records again and skips them, Kafka's positions
#     being the truth.
{
    my ($rin, $rout, $rerr) = ('', '', '');
    my $h = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), @relay ], '<', \$rin, '>', \$rout, '2>', \$rerr);
    $node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog'
        AND wait_event IS NOT NULL AND query LIKE '%_kafka_await%'}) or die 'the relay is not waiting';
    $node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.seek('eo', 'eog', 'earliest', force => true);
        SELECT count(*) FROM eventlog.seek('eob', 'eog', 'earliest', force => true)});
    produce_round(10);
    ok($node->poll_query_until('postgres', q{SELECT count(*) = 5 AND sum(lag) = 0 FROM eventlog.consumer_groups WHERE group_name = 'eog'}),
        'the relay read the topics again from the start');
    $h->signal('TERM');
    $h->finish;
    is($?, 0, 'SIGTERM: exit 0') or diag($rerr);
    is_deeply(kafka_view(), source_view(), 'records below Kafka\'s positions are not sent again');
}

# 5. Fencing: a second relay of the same transactional.id fences the first,
#    which then fails at its next transaction and commits nothing.
my ($rin, $rout, $rerr) = ('', '', '');
my $first = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), @relay ], '<', \$rin, '>', \$rout, '2>', \$rerr);
$node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog'
    AND wait_event IS NOT NULL AND query LIKE '%_kafka_await%'}) or die 'the first relay is not waiting';
($rc, $out, $err) = cli(@relay, '-e');
is($rc, 0, 'a second relay of the same transactional.id starts (and fences the first)') or diag($err);
produce_round(10);
$first->finish;
note("the fenced relay: $rerr");
ok($? != 0 && one_line_error($rerr, qr/fenced|epoch/i), 'the fenced relay ends with one line') or diag("rc $?: $rerr");
($rc, $out, $err) = cli(@relay, '-e');
is($rc, 0, 'the second relay takes the fenced one\'s partitions over at once') or diag($err);
is_deeply(kafka_view(), source_view(), 'and Kafka has every record exactly once');

# 5b. Kafka's position past the end of the partition here: the records
#     Kafka has did not come from this topic as it is now (a failover that
#     lost the last commits, say).  Skipping "what Kafka has" would skip
#     records Kafka never got, so the relay stops before sending anything.
#     The position is forged in the gateway's copy of the positions topic
#     (the last value of a key wins), then put back.
{
    my ($key, $val) = split /\|/, $node->safe_psql('dest', q{
SELECT convert_from(key, 'UTF8'), convert_from(value, 'UTF8')
  FROM eventlog.read_binary('pg_eventlog_relay_positions', 0, 0, 1000000)
 WHERE convert_from(key, 'UTF8') LIKE '["eog","eo",0,%' ORDER BY offset_id DESC LIMIT 1});
    ok(defined $val && $val =~ /^\d+$/, "Kafka's position of eo/0 is $val");
    my $forge = sub {
        $node->safe_psql('dest', sprintf(q{SELECT eventlog.produce_binary('pg_eventlog_relay_positions',
            convert_to(%s, 'UTF8'), convert_to(%s, 'UTF8'), partition => 0)}, map { "'$_'" } @_));
    };
    $forge->($key, $val + 1000000);
    my $before = kafka_view();
    ($rc, $out, $err) = cli(@relay, '-e');
    ok($rc == 1 && one_line_error($err, qr/position \d+ for partition 0 of topic "eo" is past the end of the topic here/),
        'a position past the end of the partition stops the relay with one line') or diag("rc $rc: $err");
    is_deeply(kafka_view(), $before, 'and it sent nothing');
    $forge->($key, $val);
    ($rc, $out, $err) = cli(@relay, '-e');
    is($rc, 0, 'with the position put back the relay runs') or diag($err);
    is_deeply(kafka_view(), source_view(), 'and Kafka has every record exactly once');
}

# 6. Options.
($rc, $out, $err) = cli(qw(relay eo --group g --positions-topic p --to-kafka), $boot);
ok($rc == 2 && one_line_error($err, qr/--positions-topic needs --exactly-once/), '--positions-topic alone') or diag($err);
($rc, $out, $err) = cli(qw(relay eo --group g --exactly-once -X enable.idempotence=false --to-kafka), $boot);
ok($rc == 2 && one_line_error($err, qr/needs the idempotent producer/), '--exactly-once without idempotence') or diag($err);
($rc, $out, $err) = cli(qw(relay eo --group g -X transactional.id=x --to-kafka), $boot);
ok($rc == 2 && one_line_error($err, qr/--transactional-id/), '-X transactional.id is refused') or diag($err);
cli(qw(topic create pg_eventlog_relay_positions));
($rc, $out, $err) = cli(qw(relay pg_eventlog_relay_positions --group g --exactly-once --to-kafka), $boot);
ok($rc == 2 && one_line_error($err, qr/is the positions topic/), 'the positions topic is not relayed') or diag($err);
$gwh->kill_kill;

# 7. librdkafka 2.0.2's mock cluster: transactions are accepted, but a
#    read_committed consumer gets the records of an aborted transaction and
#    of one fenced by init_transactions (its Fetch returns no aborted
#    transactions and EndTxn writes no markers), so a kill -9 there would
#    leave duplicates however the relay did.  A run without kills works.
my $mock_bin = PostgreSQL::Test::Utils::tempdir() . '/kafka_mock';
system('cc', '-o', $mock_bin, "$dir/kafka_mock.c", '-lrdkafka') == 0
  or BAIL_OUT('cannot build kafka_mock.c (librdkafka-dev)');
my ($min, $mout, $merr) = ('', '', '');
my $mock = IPC::Run::start([ $mock_bin, 'eo:3', 'eob:2', 'pg_eventlog_relay_positions:1', 'probe:1' ],
    '<', \$min, '>', \$mout, '2>', \$merr);
my $t = IPC::Run::timer(30);
$mock->pump until $mout =~ /\n/ || $t->is_expired;
chomp(my $mboot = $mout);
IPC::Run::run([ $python, "$dir/kafka_mock.py", 'txn-probe', $mboot, 'probe' ], '>', \$out, '2>', \$err);
chomp $out;
note("the mock's read_committed view of committed-1, aborted, fenced, committed-2: $out");
is($out, 'committed-1 aborted fenced committed-2', 'the mock shows aborted and fenced transactions to read_committed readers');
# Only eob: the mock keeps at most 5 MiB per partition (kafka_mock.py),
# which eo's records and their source headers would pass.
$boot = $mboot;
($rc, $out, $err) = cli(qw(relay eob --group mockg --exactly-once -e --to-kafka), $mboot);
is($rc, 0, '--exactly-once into the mock, no kill') or diag($err);
my ($mkv, $msv) = (kafka_view(), source_view());
delete $msv->{$_} for grep { !m{^eob/} } keys %$msv;
is_deeply($mkv, $msv, 'every record once, in order');
$min = '';
$mock->finish;

done_testing();
