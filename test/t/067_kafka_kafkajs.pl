# kafkajs (npm, on nodejs) against the gateway: a client none of whose code
# is librdkafka's or kafka-python's.  test/t/kafkajs_check.js creates a
# binary topic with the admin client, produces keyed records with headers
# and a tombstone (acks = all, kafkajs's Java-compatible partitioner),
# consumes them in a consumer group that commits, and reads the committed
# offsets back.  Each result is compared with what SQL says: the same
# records byte for byte at the same partitions and offsets, each key in
# the partition eventlog.partition_for_key gives, and the group's committed
# positions in eventlog.consumer_groups.
#
# kafkajs comes from npm (test/run installs it with el_ensure_kafkajs and
# passes its directory in EL_KAFKAJS_DIR).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use JSON::PP;
use Test::More;
use KafkaGatewayTest;

my $kafkajs = $ENV{EL_KAFKAJS_DIR};
die "EL_KAFKAJS_DIR is not set: run this test through test/run, which installs kafkajs"
  unless $kafkajs && -d "$kafkajs/node_modules/kafkajs";
my $script = "$ENV{TESTDIR}/test/t/kafkajs_check.js";
$script = 'test/t/kafkajs_check.js' unless -f $script;

my $node = PostgreSQL::Test::Cluster->new('kafkajs');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_eventlog');
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $port = PostgreSQL::Test::Cluster::get_free_port();
my ($gwh, $log) = spawn_gateway($gw, $tmp, 'gateway', qr/serving database/,
    '--listen', "127.0.0.1:$port", '--dsn', $node->connstr('postgres'));

my $count = 40;
my ($out, $err) = ('', '');
local $ENV{NODE_PATH} = "$kafkajs/node_modules";
my $ok = IPC::Run::run([ 'node', $script, "127.0.0.1:$port", 'js.events', 'js-group', $count ],
    '>', \$out, '2>', \$err, IPC::Run::timeout(3 * $PostgreSQL::Test::Utils::timeout_default));
ok($ok, 'kafkajs ran to the end') or diag("stderr: $err\ngateway log:\n" . slurp_file($log));
my $r = eval { decode_json($out) } || {};

# The admin client's topic, as SQL sees it.
is($node->safe_psql('postgres', q{SELECT partitions || ' ' || format FROM eventlog.topics WHERE topic = 'js.events'}),
    '3 binary', 'createTopics made a binary topic of 3 partitions');
is_deeply($r->{partitions}, [ 0, 1, 2 ], 'and its metadata lists them');

# What was produced, from SQL: every record, in offset order per partition.
my @rows = map { [ split /\|/, $_, -1 ] } split /\n/, $node->safe_psql('postgres', q{
    SELECT partition, offset_id, encode(key, 'hex'), coalesce(encode(value, 'hex'), 'NULL'),
           coalesce((SELECT string_agg(h.name || '=' || coalesce(encode(h.value, 'hex'), 'NULL'), ',' ORDER BY o)
                       FROM unnest(headers) WITH ORDINALITY AS h(name, value, o)), ''),
           eventlog.partition_for_key(convert_from(key, 'UTF8'), 3) = partition
      FROM generate_series(0, 2) p, LATERAL eventlog.read_binary('js.events', p, 0) r
     ORDER BY partition, offset_id});
is(scalar(@rows), $count, "SQL reads the $count records kafkajs produced");
is(scalar(grep { $_->[5] eq 't' } @rows), $count,
    "each key is in the partition eventlog.partition_for_key gives (kafkajs's partitioner agrees)");
is(scalar(grep { $_->[3] eq 'NULL' } @rows), 1, 'the tombstone is stored with a NULL value');
is(scalar(grep { $_->[4] =~ /^h1=76\d+,bin=010002$/ } @rows), $count,
    'headers are stored in order, bytes and all');

# What the group consumed: the same records at the same offsets.
my %sql = map { ("$_->[0]/$_->[1]" => $_) } @rows;
my $same = 0;
for my $m (@{ $r->{consumed} || [] })
{
    my $row = $sql{"$m->{partition}/$m->{offset}"} or next;
    $same++ if $row->[2] eq ($m->{key} // '') && $row->[3] eq ($m->{value} // 'NULL')
      && $row->[4] eq $m->{headers};
}
is($same, $count, 'the group consumed every record once, as SQL reads it');

# The committed offsets: kafkajs's view and SQL's view are the same rows.
my %ends = map { split /\|/ } split /\n/, $node->safe_psql('postgres', q{
    SELECT partition, max(offset_id) + 1
      FROM generate_series(0, 2) p, LATERAL eventlog.read_binary('js.events', p, 0) r GROUP BY partition});
my $sql_committed = $node->safe_psql('postgres', q{
    SELECT string_agg(partition || ':' || committed_offset, ' ' ORDER BY partition)
      FROM eventlog.consumer_groups WHERE group_name = 'js-group' AND topic = 'js.events'});
my $js_committed = join(' ', map { "$_->{partition}:$_->{offset}" }
    grep { $_->{offset} >= 0 } @{ $r->{committed} || [] });
is($js_committed, $sql_committed, 'fetchOffsets returns the positions eventlog.consumer_groups shows');
is($sql_committed, join(' ', map { "$_:$ends{$_}" } sort keys %ends),
    'and they are past the last record of each partition');

$gwh->signal('TERM');
$gwh->finish;
is($gwh->result(0), 0, 'the gateway ends with status 0 on SIGTERM');
$node->stop;
done_testing();
