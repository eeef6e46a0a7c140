# pg_eventlog relay --from-kafka (src/cli/relay_from_kafka.c,
# relay_from_kafka_pg.c): Kafka's records stored into the binary topic of
# the same name and the partition of the same number, keys, values,
# headers and timestamps byte for byte, in order, the Kafka positions
# stored in the transaction of the records (exactly once).  Against
# librdkafka's mock cluster (kafka_mock.c) filled by kafka_source.py: a
# first copy, a resumed one, kill -9 mid-stream and a restart (PostgreSQL's
# partitions then equal Kafka's exactly: no loss, no duplicate), SIGTERM,
# the positions' compare-and-set, and what a hostile user tries.  Then with
# pg_eventlog's own Kafka gateway as the source: offset gaps (rolled-back
# transactions, compaction), a partition added while following, the topic
# deleted.
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

my $node = cli_node('fromkafka');
my ($rc, $out, $err);

my ($min, $mout, $merr) = ('', '', '');
my $mock = IPC::Run::start([ $mock_bin, 'src:3', 'two:2', 'js:1', 'more:1', 'bad:1' ],
    '<', \$min, '>', \$mout, '2>', \$merr);
my $t = IPC::Run::timer(30);
$mock->pump until $mout =~ /\n/ || $t->is_expired;
chomp(my $boot = $mout);
like($boot, qr/^127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+)*$/, 'the mock cluster is up') or BAIL_OUT($merr);

sub kafka_produce
{
    my ($bootstrap, $topic, $parts, $first, $count, @txn) = @_;
    my ($o, $e) = ('', '');
    IPC::Run::run([ $python, "$dir/kafka_source.py", 'produce', $bootstrap, $topic, $parts, $first, $count, @txn ],
        '>', \$o, '2>', \$e, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default))
      or die "produce: $e";
}

# Kafka's records without Kafka's offsets: topic partition key value
# headers timestamp, in Kafka's order.
sub kafka_records
{
    my ($bootstrap, @topics) = @_;
    my ($o, $e) = ('', '');
    IPC::Run::run([ $python, "$dir/kafka_source.py", 'dump', $bootstrap, @topics ], '>', \$o, '2>', \$e,
        IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default))
      or die "dump: $e";
    return [ map { my @f = split / /; "$f[0] $f[1] $f[3] $f[4] $f[5] $f[6]" } split /\n/, $o ];
}

# The same lines from a binary topic here, in offset order.
sub hexsql { my ($e) = @_; return "CASE WHEN $e IS NULL THEN '-' WHEN $e = '' THEN '\"\"' ELSE encode($e, 'hex') END"; }
sub pg_records
{
    my ($db, $topic) = @_;
    my $sql = "SELECT r.topic || ' ' || r.partition || ' ' || " . hexsql('r.key') . " || ' ' || " . hexsql('r.value')
      . " || ' ' || coalesce((SELECT string_agg(h.name || '=' || " . hexsql('h.value') . ", ',' ORDER BY h.i)"
      . "   FROM unnest(r.headers) WITH ORDINALITY h(name, value, i)), '-')"
      . " || ' ' || floor(extract(epoch FROM r.event_time) * 1000)::bigint"
      . " FROM eventlog.topics t, generate_series(0, t.partitions - 1) p, eventlog.read_binary(t.topic, p, 0, 1000000) r"
      . " WHERE t.topic = '$topic' ORDER BY r.partition, r.offset_id";
    return [ split /\n/, $node->safe_psql($db, $sql) ];
}

sub positions
{
    my ($topic) = @_;
    return $node->safe_psql('postgres', "SELECT string_agg(partition || ':' || next_offset, ',' ORDER BY partition)"
        . " FROM eventlog.kafka_source_positions WHERE topic = '$topic'");
}

# 1. A first copy: the topic created binary with Kafka's partition count.
kafka_produce($boot, 'src', 3, 0, 600);
($rc, $out, $err) = cli(qw(relay src --from-kafka), $boot, '-e');
is($rc, 0, 'relay --from-kafka -e exits 0 once caught up') or diag($err);
is($err, '', 'and says nothing');
is($node->safe_psql('postgres', q{SELECT format || ':' || partitions FROM eventlog.topic_catalog WHERE name = 'src'}),
    'binary:3', 'the missing topic was created binary with Kafka\'s partition count');
my $kafka = kafka_records($boot, 'src');
is(scalar @$kafka, 600, 'Kafka has the 600 records');
is_deeply(pg_records('postgres', 'src'), $kafka,
    'same partitions, order, keys, values, headers (NULL, empty, repeated names) and timestamps');
is(positions('src'), '0:200,1:200,2:200', 'the stored positions are Kafka\'s next offsets');
like($node->safe_psql('postgres', q{SELECT DISTINCT source FROM eventlog.kafka_source_positions}), qr/^\S+$/,
    'keyed by the cluster id');

# 2. Resuming: nothing twice, then only the new records.
($rc, $out, $err) = cli(qw(relay src --from-kafka), $boot, '-e');
is($rc, 0, 'a second run');
is(scalar @{ pg_records('postgres', 'src') }, 600, 'stores nothing again');
kafka_produce($boot, 'src', 3, 600, 150);
($rc, $out, $err) = cli(qw(relay src --from-kafka), $boot, '-e', '--group', 'watch');
is($rc, 0, 'a third run, with --group') or diag($err);
is_deeply(pg_records('postgres', 'src'), kafka_records($boot, 'src'), 'resumed at the stored offsets: equal again');

# 3. Two topics at once.  (librdkafka 2.0's mock cluster does not filter
#    aborted transactions' records even for read_committed consumers: the
#    aborted transaction is in part 8, against the gateway.)
kafka_produce($boot, 'two', 2, 0, 30);
($rc, $out, $err) = cli(qw(relay two src --from-kafka), $boot, '-e');
is($rc, 0, 'two topics at once') or diag($err);
is_deeply(pg_records('postgres', 'two'), kafka_records($boot, 'two'), 'equal');

# 4. kill -9 mid-stream, then a restart: PostgreSQL's partitions equal
#    Kafka's exactly (the killed relay's sessions may still hold their
#    transactions open for a moment: readers see only committed records,
#    and a rolled-back round leaves a gap in the offsets here).  Test builds take small rounds from
#    PG_EVENTLOG_TEST_ROUND_RECORDS (many transactions, so that a kill lands
#    between two) and die before the Nth round's COMMIT with
#    PG_EVENTLOG_TEST_KILL_BEFORE_COMMIT.  Kafka's offsets of src have no
#    gaps: after any crash each partition here holds exactly its stored
#    position's worth of records.
my $together = q{SELECT count(*) FILTER (WHERE (SELECT count(*) FROM eventlog.read_binary(s.topic, s.partition, 0, 1000000)) <> s.next_offset)
    || '/' || count(*) FROM eventlog.kafka_source_positions s WHERE s.topic = 'src'};
kafka_produce($boot, 'src', 3, 750, 30000);
{
    local $ENV{PG_EVENTLOG_TEST_ROUND_RECORDS} = 100;
    local $ENV{PG_EVENTLOG_TEST_KILL_BEFORE_COMMIT} = 3;
    my $before = $node->safe_psql('postgres', q{SELECT sum(next_offset) FROM eventlog.kafka_source_positions WHERE topic = 'src'});
    ($rc, $out, $err) = cli(qw(relay src --from-kafka), $boot, '-e');
    is($rc, 128 + 9, 'killed with a round stored but not committed');
    my $after = $node->safe_psql('postgres', q{SELECT sum(next_offset) FROM eventlog.kafka_source_positions WHERE topic = 'src'});
    ok($after > $before && $after <= $before + 200, "two rounds committed, the third not ($before -> $after)");
    is($node->safe_psql('postgres', $together), '0/3', 'records and positions together');
}
# Small rounds, so that a kill lands mid-stream however fast the machine
# (with rounds of 200 a quiet machine stored all 30,750 records before the
# first kill, and the next relay had nothing left to store).
for my $round (1 .. 3)
{
    local $ENV{PG_EVENTLOG_TEST_ROUND_RECORDS} = 20;
    my $before = $node->safe_psql('postgres', q{SELECT sum(next_offset) FROM eventlog.kafka_source_positions WHERE topic = 'src'});
    if ($before >= 30750)
    {
        note("kill -9 $round: nothing left to store");
        last;
    }
    my ($rin, $rout, $rerr) = ('', '', '');
    my $relay = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), qw(relay src --from-kafka), $boot ],
        '<', \$rin, '>', \$rout, '2>', \$rerr);
    $node->poll_query_until('postgres', qq{SELECT sum(next_offset) > $before FROM eventlog.kafka_source_positions WHERE topic = 'src'})
      or die "the relay stored nothing: $rerr";
    $relay->signal('KILL');
    $relay->finish;
    my $at = $node->safe_psql('postgres', q{SELECT sum(next_offset) FROM eventlog.kafka_source_positions WHERE topic = 'src'});
    note("kill -9 $round: stored $at of 30750");
    is($node->safe_psql('postgres', $together), '0/3', "kill -9 $round: records and positions together");
}
($rc, $out, $err) = cli(qw(relay src --from-kafka), $boot, '-e');
is($rc, 0, 'the restarted relay catches up') or diag($err);
is_deeply(pg_records('postgres', 'src'), kafka_records($boot, 'src'),
    'after kill -9: PostgreSQL\'s partitions equal Kafka\'s (no loss, no duplicate, same order)');
is(positions('src'), '0:10250,1:10250,2:10250', 'and the positions are at Kafka\'s ends');

# 5. SIGTERM while following: what was received is stored, exit 0.
my ($rin, $rout, $rerr) = ('', '', '');
my $relay = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), qw(relay src --from-kafka), $boot ],
    '<', \$rin, '>', \$rout, '2>', \$rerr);
kafka_produce($boot, 'src', 3, 30750, 30);
$node->poll_query_until('postgres', q{SELECT sum(next_offset) = 30780 FROM eventlog.kafka_source_positions WHERE topic = 'src'})
  or die "not stored: $rerr";
$relay->signal('TERM');
$relay->finish;
is($?, 0, 'SIGTERM while following: exit 0') or diag($rerr);
is_deeply(pg_records('postgres', 'src'), kafka_records($boot, 'src'), 'equal after SIGTERM');

# 5b. Two relays of the same source at once (started by mistake): the
#     positions' compare-and-set lets one store each round; the other fails
#     with 40001 and rolls its round back.  Who wins is timing; either way
#     PostgreSQL ends equal to Kafka.
{
    local $ENV{PG_EVENTLOG_TEST_ROUND_RECORDS} = 50;
    kafka_produce($boot, 'src', 3, 30780, 3000);
    my ($ain, $aout, $aerr, $bin, $bout, $berr) = ('', '', '', '', '', '');
    my $a = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), qw(relay src --from-kafka), $boot ],
        '<', \$ain, '>', \$aout, '2>', \$aerr);
    my $b = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), qw(relay src --from-kafka), $boot, '-e' ],
        '<', \$bin, '>', \$bout, '2>', \$berr);
    $b->finish;
    my $brc = $? >> 8;
    $node->poll_query_until('postgres', q{SELECT sum(next_offset) = 33780 FROM eventlog.kafka_source_positions WHERE topic = 'src'})
      or diag('not at the end');
    eval { $a->signal('TERM') };
    $a->finish;
    my $arc = $? >> 8;
    note("two relays: exit $arc ($aerr) and $brc ($berr)");
    ok(($arc == 0 || ($arc == 1 && one_line_error($aerr, qr/position of Kafka source .* is no longer/)))
       && ($brc == 0 || ($brc == 1 && one_line_error($berr, qr/position of Kafka source .* is no longer/))),
       'two relays of one source: each either succeeds or loses a compare-and-set');
    ($rc, $out, $err) = cli(qw(relay src --from-kafka), $boot, '-e');
    is_deeply(pg_records('postgres', 'src'), kafka_records($boot, 'src'), 'and nothing is stored twice');
}

# 6. The positions' compare-and-set, their privileges, NULLs.
my $src = $node->safe_psql('postgres', q{SELECT DISTINCT source FROM eventlog.kafka_source_positions});
($rc, $out, $err) = $node->psql('postgres', qq{SELECT eventlog.set_kafka_source_position('$src', 'src', 0, 5, 7)});
like($err, qr/position of Kafka source ".*" in topic "src" partition 0 is no longer 5/,
    'a position moved by another relay: refused (the second relay rolls back)');
($rc, $out, $err) = $node->psql('postgres', qq{SELECT eventlog.set_kafka_source_position('$src', 'src', 0, NULL, 7)});
like($err, qr/is no longer unset/, 'a first position where one is stored: refused');
($rc, $out, $err) = $node->psql('postgres', q{SELECT eventlog.set_kafka_source_position(NULL, 'src', 0, NULL, 7)});
like($err, qr/arguments must not be null/, 'NULL arguments');
($rc, $out, $err) = $node->psql('postgres', q{SELECT eventlog.set_kafka_source_position('x', 'src', 3, NULL, 7)});
like($err, qr/partition 3 of topic "src" does not exist/, 'a partition that does not exist');
$node->safe_psql('postgres', q{CREATE ROLE nopriv LOGIN; CREATE ROLE reader LOGIN; SELECT eventlog.grant('src', 'consume', 'reader')});
($rc, $out, $err) = $node->psql('postgres', q{SET ROLE reader; SELECT eventlog.set_kafka_source_position('x', 'src', 0, NULL, 7)});
like($err, qr/permission denied/, 'a role that may only consume cannot write a position');
($rc, $out, $err) = $node->psql('postgres', q{SET ROLE nopriv; INSERT INTO eventlog.kafka_source_offsets VALUES ('x', 1, 0, 1)});
like($err, qr/permission denied/, 'nor write the table');
is($node->safe_psql('postgres', q{SET ROLE nopriv; SELECT count(*) > 0 FROM eventlog.kafka_source_positions}), 't',
    'everybody reads the view');
is(positions('src'), '0:11260,1:11260,2:11260', 'the positions did not move');

# 7. A hostile user.
my $count = scalar @{ pg_records('postgres', 'src') };
($rc, $out, $err) = cli('--no-d', '-d', $node->connstr('postgres') . ' user=reader', qw(relay src --from-kafka), $boot, '-e');
ok($rc == 1 && one_line_error($err, qr/permission denied to produce to topic "src"/),
    'a role without the produce privilege: one line') or diag($err);
($rc, $out, $err) = cli('--no-d', '-d', $node->connstr('postgres') . ' user=nopriv', qw(relay more --from-kafka), $boot, '-e');
ok($rc == 1 && one_line_error($err, qr/permission denied for function create_topic/),
    'a role that may not create the missing topic: the server\'s message') or diag($err);
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.topic_catalog WHERE name = 'more'}), '0', 'no topic created');
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('js', 1)});
kafka_produce($boot, 'js', 1, 0, 3);
($rc, $out, $err) = cli(qw(relay js --from-kafka), $boot, '-e');
ok($rc == 1 && one_line_error($err, qr/topic "js" is a JSON topic: Kafka's keys, values and headers need a binary topic/),
    'a JSON topic is refused') or diag($err);
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('more', 2, format => 'binary')});
($rc, $out, $err) = cli(qw(relay more --from-kafka), $boot, '-e');
ok($rc == 1 && one_line_error($err, qr/topic "more" has 2 partitions, the Kafka topic has 1: partition numbers must match/),
    'more partitions here than in Kafka: refused') or diag($err);
($rc, $out, $err) = cli(qw(relay nope --from-kafka), $boot, '-e');
ok($rc == 1 && one_line_error($err, qr/Kafka topic "nope" does not exist/), 'a Kafka topic that does not exist') or diag($err);
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.topic_catalog WHERE name = 'nope'}), '0', 'and nothing created');
($rc, $out, $err) = cli(qw(relay src --from-kafka 127.0.0.1:1 -e));
ok($rc == 1 && one_line_error($err, qr/cannot reach Kafka at 127\.0\.0\.1:1/), 'Kafka unreachable: one line') or diag($err);
($rc, $out, $err) = cli(qw(relay --from-kafka), $boot);
ok($rc == 2 && one_line_error($err, qr/a topic is required/), 'a topic is required');
($rc, $out, $err) = cli(qw(relay src --from-kafka), $boot, '-X', 'isolation.level=read_uncommitted');
ok($rc == 2 && one_line_error($err, qr/-X isolation\.level cannot be set/), 'read_committed stays') or diag($err);
($rc, $out, $err) = cli(qw(relay src src --from-kafka), $boot);
ok($rc == 2 && one_line_error($err, qr/topic "src" is named twice/), 'a topic named twice') or diag($err);
($rc, $out, $err) = cli(qw(relay src --from-kafka), $boot, '-X', 'no.such=1');
ok($rc == 2 && one_line_error($err, qr/no\.such/), 'an unknown librdkafka property') or diag($err);
is(scalar @{ pg_records('postgres', 'src') }, $count, 'none of them stored anything');
($rc, $out, $err) = cli(qw(relay src --from-kafka --help));
like($out, qr/--from-kafka=BOOTSTRAP/, '--help');

# A record the server refuses (a header name that is not UTF-8) after one
# it takes, in the same round: the round's transaction rolls back whole.
kafka_produce($boot, 'bad', 1, 1, 1);
($rc, $out, $err) = run_cmd(\"x\n", 'kcat', '-b', $boot, '-P', '-t', 'bad', '-p', '0', '-H', "\xff=v");
is($rc, 0, 'kcat produced a header named 0xff') or diag($err);
($rc, $out, $err) = cli(qw(relay bad --from-kafka), $boot, '-e');
ok($rc == 1 && one_line_error($err, qr/invalid byte sequence for encoding "UTF8"/),
    'a header name the server refuses: its message') or diag($err);
# The record before it may have been stored in a round of its own.
like($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read_binary('bad', 0, 0, 10)}) . '/'
   . $node->safe_psql('postgres', q{SELECT coalesce(sum(next_offset), 0) FROM eventlog.kafka_source_positions WHERE topic = 'bad'}),
    qr{^(0/0|1/1)$}, 'nothing of that round stored, the position before the refused record');

# A position moved forward by hand (by a role that may produce): the
# relay resumes there.
kafka_produce($boot, 'src', 3, 33780, 3);
$node->safe_psql('postgres', qq{SELECT eventlog.set_kafka_source_position('$src', 'src', 0, 11260, 11261)});
($rc, $out, $err) = cli(qw(relay src --from-kafka), $boot, '-e');
is($rc, 0, 'a position moved forward by hand') or diag($err);
is(scalar @{ pg_records('postgres', 'src') }, $count + 2, 'the relay resumes there, skipping the record before it');

# 8. pg_eventlog's own Kafka gateway as the source, serving database kfk.
$node->safe_psql('postgres', 'CREATE DATABASE kfk');
$node->safe_psql('kfk', 'CREATE EXTENSION pg_eventlog');
$node->safe_psql('kfk', q{
SELECT eventlog.create_topic('gw', 2, format => 'binary');
SELECT eventlog.create_topic('tx', 2, format => 'binary');
SELECT eventlog.create_topic('cmp', 1, format => 'binary', cleanup_policy => 'compact',
                             segment_interval => '1 microsecond');
SELECT eventlog.produce_binary('gw', int4send(i), CASE WHEN i % 4 <> 0 THEN '\x00'::bytea || int4send(i) END,
                               ARRAY[ROW('x', NULL)::eventlog.header, ROW('y', int4send(i))::eventlog.header],
                               i % 2, '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 ms')
  FROM generate_series(1, 100) i;
});
# One segment per transaction: compaction keeps each key's latest record
# of the older segments.
# (enforce_retention rolls the segment).
$node->safe_psql('kfk', qq{SELECT eventlog.produce_binary('cmp', ('k' || i % 5)::bytea, int4send(i), NULL, 0)
  FROM generate_series($_ * 10 + 1, $_ * 10 + 10) i; SELECT count(*) FROM eventlog.enforce_retention('cmp')}) for 0 .. 4;
$node->safe_psql('kfk', q{BEGIN; SELECT eventlog.produce_binary('gw', 'r', 'rolled back', NULL, 0) FROM generate_series(1, 5); ROLLBACK;
SELECT eventlog.produce_binary('gw', 'a', 'after', NULL, 0)});
$node->safe_psql('kfk', q{SELECT count(*) FROM eventlog.compact('cmp')});
my $gwport = PostgreSQL::Test::Cluster::get_free_port();
my ($gwh) = spawn_gateway($node->config_data('--bindir') . '/pg_eventlog_kafka', PostgreSQL::Test::Utils::tempdir(),
    'gw', qr/serving database/, '--dsn', $node->connstr('kfk'), '--listen', "127.0.0.1:$gwport");
my $gwboot = "127.0.0.1:$gwport";
my $srcsql = q{SELECT count(*) FROM eventlog.read_binary('cmp', 0, 0, 1000)};
ok($node->safe_psql('kfk', $srcsql) < 50, 'compaction left offset gaps');
# Kafka transactions through the gateway: one aborted, one committed.
kafka_produce($gwboot, 'tx', 2, 0, 20, 'abort');
kafka_produce($gwboot, 'tx', 2, 20, 10, 'commit');
kafka_produce($gwboot, 'tx', 2, 30, 10);
($rc, $out, $err) = cli(qw(relay gw cmp tx --from-kafka), $gwboot, '-e', '--group', 'g');
is($rc, 0, 'relay from the gateway') or diag($err);
my $tx = pg_records('postgres', 'tx');
is_deeply($tx, pg_records('kfk', 'tx'), 'a Kafka transaction aborted, one committed: the committed records, in order');
is(scalar(@$tx) . '/' . scalar(grep { / 17000000000(0\d|1\d)$/ } @$tx), '20/0', 'none of the aborted transaction\'s records');
is_deeply(pg_records('postgres', 'gw'), pg_records('kfk', 'gw'),
    'the gateway\'s binary topic, rolled-back offsets skipped: equal');
is_deeply(pg_records('postgres', 'cmp'), pg_records('kfk', 'cmp'), 'a compacted topic, offset gaps: equal');
is($node->safe_psql('postgres', q{SELECT next_offset FROM eventlog.kafka_source_positions WHERE topic = 'cmp'}),
    $node->safe_psql('kfk', q{SELECT eventlog.high_watermark('cmp', 0)}), 'the position past the gaps');

# A partition added while following, then the topic deleted.
($rin, $rout, $rerr) = ('', '', '');
$relay = IPC::Run::start([ cli_path(), '-d', $node->connstr('postgres'), qw(relay gw --from-kafka), $gwboot ],
    '<', \$rin, '>', \$rout, '2>', \$rerr);
$node->safe_psql('kfk', q{SELECT eventlog.alter_topic('gw', partitions => 3);
SELECT eventlog.produce_binary('gw', 'p2', int4send(i), NULL, 2) FROM generate_series(1, 10) i});
$node->poll_query_until('postgres', q{SELECT count(*) = 10 FROM eventlog.read_binary('gw', 2, 0, 100)})
  or die "the new partition was not copied: $rerr";
is($node->safe_psql('postgres', q{SELECT partitions FROM eventlog.topic_catalog WHERE name = 'gw'}), '3',
    'a partition added in Kafka is added here');
is_deeply(pg_records('postgres', 'gw'), pg_records('kfk', 'gw'), 'and copied');
$node->safe_psql('kfk', q{SELECT eventlog.drop_topic('gw')});
$relay->finish;
is($? >> 8, 1, 'the Kafka topic deleted: exit 1');
# (A Fetch that races the deletion may be answered "offset out of range"
# before metadata says the topic is gone: the relay then says the offset it
# resumes from no longer exists, also in one line.)
ok(one_line_error($rerr, qr/Kafka topic "gw" (no longer exists|partition \d+ no longer has offset)/), 'with one line saying so')
  or diag($rerr);
$gwh->kill_kill;

$min = '';
$mock->finish;
done_testing();
