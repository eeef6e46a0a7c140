# pg_eventlog relay --to-kafka (src/cli/relay.c, relay_kafka.c) against
# librdkafka's mock cluster (kafka_mock.c, built here): every record lands
# in the Kafka topic of the same name and the partition of the same number,
# in order, keys/values/headers byte for byte, with the source headers;
# kill -9 mid-run and a restart lose nothing and keep each partition's
# order (duplicates allowed, told apart by the source headers); and what a
# hostile user tries: a different partition count, Kafka unreachable, a
# record above message.max.bytes, SIGTERM, a role without privileges.
# Then against pg_eventlog's own Kafka gateway (src/kafka), serving another
# database: the topics created there through the admin API, the records
# through its idempotent producers.
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
my $mock_bin = PostgreSQL::Test::Utils::tempdir() . '/kafka_mock';
system('cc', '-o', $mock_bin, "$dir/kafka_mock.c", '-lrdkafka') == 0
  or BAIL_OUT('cannot build kafka_mock.c (librdkafka-dev)');

my $node = cli_node('relay');
my ($rc, $out, $err);

# The mock cluster: orders (3 partitions), bin (2), mism (5, against 3 here).
my ($min, $mout, $merr) = ('', '', '');
my $mock = IPC::Run::start([ $mock_bin, 'orders:3', 'bin:2', 'mism:5', 'big:1', 'ma:1', 'mb:2', 'pipe:3', 'pfx:1' ],
    '<', \$min, '>', \$mout, '2>', \$merr);
my $t = IPC::Run::timer(30);
$mock->pump until $mout =~ /\n/ || $t->is_expired;
chomp(my $boot = $mout);
like($boot, qr/^127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+)*$/, 'the mock cluster is up') or BAIL_OUT($merr);

# Kafka's records, one line each without Kafka's offset: topic partition
# key value headers (hex; "-" NULL, "\"\"" empty), in Kafka's order.
sub kafka_records
{
    my (@topics) = @_;
    my ($o, $e) = ('', '');
    IPC::Run::run([ $python, "$dir/kafka_mock.py", 'dump', $boot, @topics ], '>', \$o, '2>', \$e)
      or die "dump: $e";
    return [ map { my @f = split / /; "$f[0] $f[1] $f[3] $f[4] $f[5]" } split /\n/, $o ];
}

# The same lines from SQL, in offset order.
sub hexsql { my ($e) = @_; return "CASE WHEN $e IS NULL THEN '-' WHEN $e = '' THEN '\"\"' ELSE encode($e, 'hex') END"; }
sub source_headers
{
    return "'pg_eventlog.topic=' || encode(convert_to(r.topic, 'UTF8'), 'hex') || ',pg_eventlog.partition='"
      . " || encode(convert_to(r.partition::text, 'UTF8'), 'hex') || ',pg_eventlog.offset='"
      . " || encode(convert_to(r.offset_id::text, 'UTF8'), 'hex')"
      . " || ',pg_eventlog.topic_created=' || encode(convert_to((SELECT (extract(epoch FROM t.created_at) * 1000000)::bigint::text"
      . " FROM eventlog.topic_catalog t WHERE t.name = r.topic), 'UTF8'), 'hex')";
}
sub source_records
{
    my ($topic, $binary) = @_;
    my $key = $binary ? 'r.key' : "convert_to(r.key, 'UTF8')";
    my $value = $binary ? 'r.value' : "convert_to(r.value::text, 'UTF8')";
    my $own = $binary
      ? "(SELECT string_agg(h.name || '=' || " . hexsql('h.value') . " || ',', '' ORDER BY h.i) FROM unnest(r.headers) WITH ORDINALITY h(name, value, i))"
      : "(SELECT string_agg(h.key || '=' || encode(convert_to(h.value, 'UTF8'), 'hex') || ',', '') FROM jsonb_each_text(r.headers) h)";
    my $read = $binary ? 'read_binary' : 'read';
    my $sql = "SELECT r.topic || ' ' || r.partition || ' ' || " . hexsql($key) . " || ' ' || " . hexsql($value)
      . " || ' ' || coalesce($own, '') || " . source_headers()
      . " FROM eventlog.topics t, generate_series(0, t.partitions - 1) p, eventlog.$read(t.topic, p, 0, 1000000) r"
      . " WHERE t.topic = '$topic' ORDER BY r.partition, r.offset_id";
    return [ split /\n/, $node->safe_psql('postgres', $sql) ];
}

# 1. The records of a JSON and a binary topic, with rolled-back offsets.
cli(qw(topic create orders --partitions 3));
cli(qw(topic create bin --partitions 2 --format binary));
$node->safe_psql('postgres', q{
SELECT eventlog.produce('orders', 'k' || i % 17, jsonb_build_object('n', i, 's', 'é"\\'),
                        CASE WHEN i % 3 = 0 THEN jsonb_build_object('h', i::text, 'z', 'ü') END)
  FROM generate_series(1, 500) i;
SELECT eventlog.produce_binary('bin', CASE WHEN i % 5 <> 0 THEN int4send(i) END,
                               CASE WHEN i % 7 = 0 THEN NULL WHEN i % 11 = 0 THEN ''::bytea ELSE '\x00ff0a'::bytea || int4send(i) END,
                               CASE WHEN i % 2 = 0 THEN ARRAY[ROW('a', '\x0001'::bytea)::eventlog.header,
                                                              ROW('n', NULL)::eventlog.header,
                                                              ROW('e', ''::bytea)::eventlog.header] END,
                               i % 2)
  FROM generate_series(1, 300) i;
});
$node->safe_psql('postgres', q{BEGIN; SELECT eventlog.produce('orders', 'k1', '{"rolled": "back"}') FROM generate_series(1, 10); ROLLBACK;
SELECT eventlog.produce('orders', 'k' || i, jsonb_build_object('after', i)) FROM generate_series(1, 20) i;});

($rc, $out, $err) = cli(qw(relay orders bin --group relay --to-kafka), $boot, '-e');
is($rc, 0, 'relay -e exits 0 once caught up') or diag($err);
is($err, '', 'and says nothing');
is_deeply(kafka_records('orders'), source_records('orders', 0),
    'JSON topic: same partitions, order, keys, values (JSON text), headers and source headers');
is_deeply(kafka_records('bin'), source_records('bin', 1),
    'binary topic: keys, values and headers byte for byte (NULL, empty), source headers');
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.consumer_groups
    WHERE group_name = 'relay' AND committed_offset <> last_stable_offset}), '0',
    'the group\'s positions are at the end');
($rc, $out, $err) = cli(qw(relay orders bin --group relay --to-kafka), $boot, '-e');
is(scalar @{ kafka_records('orders') }, scalar @{ source_records('orders', 0) }, 'a second run sends nothing again');

# 2. kill -9 mid-run, then a restart: nothing lost, order kept, duplicates
#    only as re-sent copies, told apart by the source headers.  The mock
#    cluster keeps at most 5 MiB per partition and silently drops the oldest
#    message sets beyond (librdkafka 2.0.2, rdkafka_mock.c): a round of up to
#    10,000 records, often of one partition, is sent twice when the kill
#    falls between its acknowledgement and its commit, so the records stay
#    small enough for twice that (kafka_mock.py's dump fails on a partition
#    that lost its start rather than read it as empty).
$node->safe_psql('postgres', q{SELECT eventlog.produce('orders', 'x' || i, jsonb_build_object('big', i, 'pad', repeat('p', 20)))
  FROM generate_series(1, 30000) i});
my $before = $node->safe_psql('postgres', q{SELECT sum(committed_offset) FROM eventlog.consumer_groups WHERE group_name = 'relay' AND topic = 'orders'});
my ($rin, $rout, $rerr) = ('', '', '');
my $relay = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), qw(relay orders --group relay --to-kafka), $boot ],
    '<', \$rin, '>', \$rout, '2>', \$rerr);
$node->poll_query_until('postgres', qq{SELECT sum(committed_offset) > $before FROM eventlog.consumer_groups
    WHERE group_name = 'relay' AND topic = 'orders'}) or die 'the relay did not commit';
$relay->signal('KILL');
$relay->finish;
my $mid = $node->safe_psql('postgres', q{SELECT sum(lag) FROM eventlog.consumer_groups WHERE group_name = 'relay' AND topic = 'orders'});
note("lag at kill -9: $mid");
($rc, $out, $err) = cli(qw(relay orders --group relay --to-kafka), $boot, '-e',
    '-X', 'message.timeout.ms=60000');
is($rc, 0, 'the restarted relay catches up') or diag($err);
my $kafka = kafka_records('orders');
my (%seen, @first, $dups, $bad);
for my $line (@$kafka)
{
    my ($src) = $line =~ /pg_eventlog\.partition=(\w+),pg_eventlog\.offset=(\w+)(?:,|$)/ ? "$1/$2" : (undef);
    if ($seen{$src}) { $dups++; $bad++ if $seen{$src} ne $line; next; }
    $seen{$src} = $line;
    push @first, $line;
}
note('duplicates after kill -9: ' . ($dups // 0));
is_deeply(\@first, source_records('orders', 0), 'first arrivals equal the source: nothing lost, order kept');
ok(!$bad, 'every duplicate is a copy of its first arrival');

# 2b. kill -9 mid-pipeline: the relay polls the next batch while Kafka
#     acknowledges the previous ones.  A test build's hook kills it right
#     after it handed its tenth batch to librdkafka (the polls grow from 16
#     records: 16,368 records so far), with the next poll running in the
#     server.  At that moment no
#     committed position may be past a record Kafka does not have; after a
#     restart, Kafka's first arrivals equal the source, in order.
cli(qw(topic create pipe --partitions 3));
$node->safe_psql('postgres', q{SELECT eventlog.produce('pipe', 'p' || i, jsonb_build_object('i', i), partition => i % 3)
  FROM generate_series(1, 25000) i});
{
    local $ENV{PG_EVENTLOG_TEST_RELAY_CRASH_AFTER_BATCH} = '10';
    ($rc, $out, $err) = cli(qw(relay pipe --group pipeg --to-kafka), $boot, '-e');
}
is($rc, 137, 'the test hook killed the relay with -9 mid-pipeline') or diag("rc $rc: $err");
# Kafka's records now, by source partition and offset.
my %inkafka;
for my $line (@{ kafka_records('pipe') })
{
    my ($p, $o) = $line =~ /pg_eventlog\.partition=(\w+),pg_eventlog\.offset=(\w+)(?:,|$)/;
    $inkafka{ pack('H*', $p) . '/' . pack('H*', $o) } = 1;
}
my $committed = $node->safe_psql('postgres', q{SELECT string_agg(partition || ':' || committed_offset, ' ' ORDER BY partition)
    FROM eventlog.consumer_groups WHERE group_name = 'pipeg'});
note("committed at kill -9: $committed; records in Kafka: " . scalar(keys %inkafka));
my @missing;
for my $pc (split / /, $committed)
{
    my ($p, $c) = split /:/, $pc;
    push @missing, "$p/$_" for grep { !$inkafka{"$p/$_"} } 0 .. $c - 1;
}
is(scalar @missing, 0, 'no committed position is past a record Kafka does not have') or diag("@missing[0 .. 9]");
ok(scalar(keys %inkafka) < 25000, 'the kill left records to send');
# The dead member holds its partitions until its session times out: hand
# them over, as an operator would.
$node->safe_psql('postgres', q{SELECT eventlog.leave('pipe', 'pipeg', m.member) FROM eventlog.group_members m
    JOIN eventlog.topic_catalog t USING (topic_id) WHERE t.name = 'pipe' AND m.group_name = 'pipeg'});
($rc, $out, $err) = cli(qw(relay pipe --group pipeg --to-kafka), $boot, '-e');
is($rc, 0, 'the restarted relay catches up') or diag($err);
($dups, $bad) = (0, 0);
(%seen, @first) = ();
for my $line (@{ kafka_records('pipe') })
{
    my ($src) = $line =~ /pg_eventlog\.partition=(\w+),pg_eventlog\.offset=(\w+)(?:,|$)/ ? "$1/$2" : (undef);
    if ($seen{$src}) { $dups++; $bad++ if $seen{$src} ne $line; next; }
    $seen{$src} = $line;
    push @first, $line;
}
note("duplicates after kill -9 mid-pipeline: $dups");
is_deeply(\@first, source_records('pipe', 0), 'first arrivals equal the source: nothing lost, each partition in order');
ok(!$bad, 'every duplicate is a copy of its first arrival');
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.consumer_groups
    WHERE group_name = 'pipeg' AND committed_offset <> last_stable_offset}), '0', 'the group is at the end');

# A record Kafka refuses in a later batch: the batches before it, which
# Kafka acknowledged, are committed; nothing of its batch.
cli(qw(topic create pfx));
$node->safe_psql('postgres', q{SELECT eventlog.produce('pfx', 's', jsonb_build_object('i', i)) FROM generate_series(1, 10000) i;
    SELECT eventlog.produce('pfx', 'b', to_jsonb(repeat('x', 5000)))});
($rc, $out, $err) = cli(qw(relay pfx --group pfxg --to-kafka), $boot, '-e', '-X', 'message.max.bytes=2000');
ok($rc == 1 && one_line_error($err, qr/offset 10000 of topic "pfx" partition 0.*too large/i), 'a record refused in a later batch: one line') or diag($err);
# The polls ask for 16, 32, 64, ... records (relay.c: at most what fits in
# 16 MB, twice the poll before), so the record at 10000 is in the poll
# from 8176 on.
is($node->safe_psql('postgres', q{SELECT committed_offset FROM eventlog.consumer_groups WHERE group_name = 'pfxg'}), '8176',
    'the batches before it are committed, up to the refused record\'s batch');

# 3. A hostile user.
cli(qw(topic create mism --partitions 3));
($rc, $out, $err) = cli(qw(relay mism --group relay --to-kafka), $boot, '-e');
ok($rc == 1 && one_line_error($err, qr/^pg_eventlog: error: Kafka topic "mism" has 5 partitions, the topic here has 3: partition numbers must match$/),
    'a Kafka topic with another partition count is refused') or diag($err);
($rc, $out, $err) = cli(qw(relay orders --group relay --to-kafka 127.0.0.1:1 -e));
ok($rc == 1 && one_line_error($err, qr/cannot reach Kafka at 127\.0\.0\.1:1/), 'Kafka unreachable: one line') or diag($err);
($rc, $out, $err) = cli(qw(relay orders --to-kafka), $boot);
ok($rc == 2 && one_line_error($err, qr/--group is required/), '--group is required');
($rc, $out, $err) = cli(qw(relay orders --group g --to-kafka), $boot, '-X', 'max.in.flight=10');
ok($rc == 2 && one_line_error($err, qr/-X max\.in\.flight cannot be set/), 'the requests in flight stay the relay\'s');
($rc, $out, $err) = cli(qw(relay orders --group g --to-kafka), $boot, '-X', 'no.such.property=1');
ok($rc == 2 && one_line_error($err, qr/no\.such\.property/), 'an unknown librdkafka property');
($rc, $out, $err) = cli(qw(relay nope --group g --to-kafka), $boot);
ok($rc == 1 && one_line_error($err, qr/topic "nope" does not exist/), 'an unknown topic');

# A record above message.max.bytes: refused, the positions stay before it.
cli(qw(topic create big));
$node->safe_psql('postgres', q{SELECT eventlog.produce('big', 'a', '"small"'); SELECT eventlog.produce('big', 'b', to_jsonb(repeat('x', 5000)))});
($rc, $out, $err) = cli(qw(relay big --group bigg --to-kafka), $boot, '-e', '-X', 'message.max.bytes=2000');
ok($rc == 1 && one_line_error($err, qr/offset 1 of topic "big" partition 0.*too large/i), 'a record above message.max.bytes: one line') or diag($err);
is($node->safe_psql('postgres', q{SELECT coalesce(max(committed_offset), 0) FROM eventlog.consumer_groups WHERE group_name = 'bigg'}), '0',
    'nothing of that poll is committed');

# No privilege on the topic.
$node->safe_psql('postgres', 'CREATE ROLE nopriv LOGIN');
($rc, $out, $err) = cli('--no-d', '-d', $node->connstr('postgres') . ' user=nopriv', qw(relay orders --group np --to-kafka), $boot, '-e');
ok($rc == 1 && one_line_error($err, qr/permission denied/), 'a role without the consume privilege: the server\'s message') or diag($err);

# SIGTERM while following: what was sent is committed, the member leaves, exit 0.
$kafka = kafka_records('orders');
$node->safe_psql('postgres', q{SELECT eventlog.produce('orders', 't', '{"term": 1}')});
($rin, $rout, $rerr) = ('', '', '');
$relay = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), qw(relay orders --group relay --to-kafka), $boot ],
    '<', \$rin, '>', \$rout, '2>', \$rerr);
$node->poll_query_until('postgres', q{SELECT sum(lag) = 0 FROM eventlog.consumer_groups WHERE group_name = 'relay' AND topic = 'orders'})
  or die 'not caught up';
$node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog' AND wait_event IS NOT NULL AND query LIKE '%poll%'});
$relay->signal('TERM');
$relay->finish;
is($?, 0, 'SIGTERM while following: exit 0') or diag($rerr);
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.consumer_groups WHERE group_name = 'relay' AND owner_member IS NOT NULL}),
    '0', 'the member left');
my %before = map { $_ => 1 } @$kafka;
is_deeply([ grep { !$before{$_} } @{ kafka_records('orders') } ],
    [ grep { /7b227465726d223a20317d/ } @{ source_records('orders', 0) } ], 'the record sent before SIGTERM, once');

# Several topics: one wait over all of them.  With --wait 3600 a relay that
# waited in each topic's long poll in turn would sit in ma's for an hour
# while mb's record waits; the wait over both returns at mb's commit.
cli(qw(topic create ma));
cli(qw(topic create mb --partitions 2));
$node->safe_psql('postgres', q{SELECT eventlog.produce('ma', 'a', '{"first": 1}')});
($rin, $rout, $rerr) = ('', '', '');
$relay = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), qw(relay ma mb --group multi --wait 3600 --to-kafka), $boot ],
    '<', \$rin, '>', \$rout, '2>', \$rerr);
$node->poll_query_until('postgres', q{SELECT count(*) = 3 AND sum(lag) = 0 FROM eventlog.consumer_groups WHERE group_name = 'multi'})
  or die 'not caught up';
$node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog'
    AND wait_event = 'Extension' AND query LIKE '%_kafka_await%'}) or die 'not waiting';
$node->safe_psql('postgres', q{SELECT eventlog.produce('mb', 'b', '{"second": 2}', partition => 1)});
ok($node->poll_query_until('postgres', q{SELECT sum(lag) = 0 AND sum(committed_offset) = 1 FROM eventlog.consumer_groups
    WHERE group_name = 'multi' AND topic = 'mb'}), 'a record on the second topic wakes the wait over all topics');
$node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog'
    AND wait_event = 'Extension' AND query LIKE '%_kafka_await%'}) or die 'not waiting';
$node->safe_psql('postgres', q{SELECT eventlog.produce('ma', 'a', '{"first": 2}')});
ok($node->poll_query_until('postgres', q{SELECT sum(lag) = 0 AND sum(committed_offset) = 2 FROM eventlog.consumer_groups
    WHERE group_name = 'multi' AND topic = 'ma'}), 'and one on the first topic');
$relay->signal('TERM');
$relay->finish;
is($?, 0, 'SIGTERM in the wait over several topics: exit 0') or diag($rerr);
is_deeply([ map { s/ pg_eventlog.*//r } @{ kafka_records('ma', 'mb') } ],
    [ 'ma 0 61 7b226669727374223a20317d', 'ma 0 61 7b226669727374223a20327d', 'mb 1 62 7b227365636f6e64223a20327d' ],
    'both topics\' records are in Kafka');
($rc, $out, $err) = cli(qw(relay ma --group multi --wait 0 --to-kafka), $boot);
ok($rc == 2 && one_line_error($err, qr/--wait/), '--wait must be at least 1 second') or diag($err);

# A topic dropped and created again while the relay follows it: its offsets
# start at 0 again, so the relay stops rather than send the new topic's
# records as if they followed the old one's (the header
# pg_eventlog.topic_created tells the two apart in Kafka).  A drop during
# a poll's wait ends the poll with an error; to reach the check between
# polls, the relay (waiting 1 s a poll) is stopped with SIGSTOP until its
# poll is over, and the topic made again meanwhile.
($rin, $rout, $rerr) = ('', '', '');
$relay = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), qw(relay ma --group recreate --wait 1 --to-kafka), $boot ],
    '<', \$rin, '>', \$rout, '2>', \$rerr);
$node->poll_query_until('postgres', q{SELECT count(*) = 1 AND sum(lag) = 0 FROM eventlog.consumer_groups WHERE group_name = 'recreate'})
  or die 'not caught up';
$relay->signal('STOP');
$node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog'
    AND state = 'active'}) or die 'the poll did not end';
$kafka = kafka_records('ma');
$node->safe_psql('postgres', q{SELECT eventlog.drop_topic('ma'); SELECT eventlog.create_topic('ma', 1);
    SELECT eventlog.produce('ma', 'n', '{"new": 1}')});
$relay->signal('CONT');
my $ended = IPC::Run::timer(60);
while ($relay->pumpable && !$ended->is_expired) { $relay->pump_nb; select(undef, undef, undef, 0.2); }
$relay->kill_kill if $relay->pumpable;
$relay->finish;
ok($? >> 8 == 1 && one_line_error($rerr, qr/topic "ma" was dropped and created again while the relay ran/),
    'a topic dropped and created again while the relay runs: it stops with one line') or diag("rc $?: $rerr");
is_deeply(kafka_records('ma'), $kafka, 'and sends none of the new topic\'s records');

# 4. Into pg_eventlog's own Kafka gateway, serving database "dest": the
#    relay creates the topics (CreateTopics) with the same partition counts.
$node->safe_psql('postgres', 'CREATE DATABASE dest');
$node->safe_psql('dest', 'CREATE EXTENSION pg_eventlog');
my $gwport = PostgreSQL::Test::Cluster::get_free_port();
my ($gwh) = spawn_gateway($node->config_data('--bindir') . '/pg_eventlog_kafka', PostgreSQL::Test::Utils::tempdir(),
    'gw', qr/serving database/, '--dsn', $node->connstr('dest'), '--listen', "127.0.0.1:$gwport");
# The database has no topic yet: the gateway's InitProducerId must still
# answer a role that may create topics (here the superuser), or the relay's
# idempotent producer could not create the first one.
($rc, $out, $err) = cli(qw(relay orders bin --group gw --to-kafka), "127.0.0.1:$gwport", '-e');
is($rc, 0, 'relay into the gateway, idempotent producer') or diag($err);
is($node->safe_psql('dest', q{SELECT string_agg(topic || ':' || partitions, ',' ORDER BY topic) FROM eventlog.topics}),
    'bin:2,orders:3', 'the gateway\'s topics were created with the same partition counts');
my $gwsql = q{SELECT string_agg(r.partition || ' ' || coalesce(encode(r.key, 'hex'), '-') || ' ' || coalesce(encode(r.value, 'hex'), '-')
    || ' ' || coalesce(array_to_string(ARRAY(SELECT h.name || '=' || coalesce(encode(h.value, 'hex'), '-') FROM unnest(r.headers) h), ','), ''),
    E'\n' ORDER BY r.partition, r.offset_id)
    FROM generate_series(0, 2) p, eventlog.read_binary('TOPIC', p, 0, 100000) r};
my $srcsql = q{SELECT string_agg(r.partition || ' ' || coalesce(encode(convert_to(r.key, 'UTF8'), 'hex'), '-') || ' ' || encode(convert_to(r.value::text, 'UTF8'), 'hex')
    || ' ' || concat_ws(',', (SELECT string_agg(h.key || '=' || encode(convert_to(h.value, 'UTF8'), 'hex'), ',') FROM jsonb_each_text(r.headers) h),
    'pg_eventlog.topic=' || encode('orders', 'hex') || ',pg_eventlog.partition=' || encode(convert_to(r.partition::text, 'UTF8'), 'hex')
    || ',pg_eventlog.offset=' || encode(convert_to(r.offset_id::text, 'UTF8'), 'hex')
    || ',pg_eventlog.topic_created=' || encode(convert_to((SELECT (extract(epoch FROM t.created_at) * 1000000)::bigint::text
                                                           FROM eventlog.topic_catalog t WHERE t.name = 'orders'), 'UTF8'), 'hex')),
    E'\n' ORDER BY r.partition, r.offset_id)
    FROM generate_series(0, 2) p, eventlog.read('orders', p, 0, 100000) r};
(my $gwq = $gwsql) =~ s/TOPIC/orders/;
my $src = $node->safe_psql('postgres', $srcsql);
is(scalar(() = $src =~ /\n/g) + 1, 500 + 20 + 30000 + 1,
    'the source text has every committed record of orders');
is($node->safe_psql('dest', $gwq), $src,
    'the gateway\'s copy of a JSON topic: same partitions, order, keys, values and headers');
$gwh->kill_kill;

$min = '';
$mock->finish;
done_testing();
