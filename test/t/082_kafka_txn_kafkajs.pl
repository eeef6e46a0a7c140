# kafkajs's transactional producer against the gateway (issue 16: "aborted
# records never seen by read_committed consumers (librdkafka, kafkajs)";
# librdkafka's is test/t/081_kafka_txn.pl).  test/t/kafkajs_txn.js commits
# a transaction, aborts one, and commits one with a group's positions
# (sendOffsets: AddOffsetsToTxn, TxnOffsetCommit); a read_committed kafkajs
# consumer then reads the topic.  Checked against SQL: the consumer saw
# exactly the committed records, at the offsets SQL has them, none of the
# aborted ones (which SQL does not have either), and the group's positions
# are the ones sent with the committed transaction.
#
# kafkajs comes from npm (test/run installs it with el_ensure_kafkajs when
# the file name says kafkajs, and passes its directory in EL_KAFKAJS_DIR).
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
my $script = "$ENV{TESTDIR}/test/t/kafkajs_txn.js";
$script = 'test/t/kafkajs_txn.js' unless -f $script;

my $node = PostgreSQL::Test::Cluster->new('kafkajs_txn');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('jtx', 2, format => 'binary');
    SELECT eventlog.create_topic('jsrc', 1, format => 'binary');
    SELECT count(*) FROM generate_series(1, 5) i,
           LATERAL eventlog.produce_binary('jsrc', NULL, convert_to(i::text, 'UTF8'), NULL, 0);
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $port = PostgreSQL::Test::Cluster::get_free_port();
my ($gwh, $log) = spawn_gateway($gw, $tmp, 'gateway', qr/serving database/,
    '--listen', "127.0.0.1:$port", '--dsn', $node->connstr('postgres'));

my ($out, $err) = ('', '');
local $ENV{NODE_PATH} = "$kafkajs/node_modules";
my $ok = IPC::Run::run([ 'node', $script, "127.0.0.1:$port", 'jtx', 'js-tx', 'js-tx-offsets', 'jsrc' ],
    '>', \$out, '2>', \$err, IPC::Run::timeout(3 * $PostgreSQL::Test::Utils::timeout_default));
ok($ok, 'kafkajs ran to the end') or diag("stderr: $err\ngateway log:\n" . slurp_file($log));
my $r = eval { decode_json($out) } || {};

is_deeply($r->{steps}, [ 'committed c', 'aborted a', 'committed d with offsets' ],
    'kafkajs: commit, abort, commit with sendOffsets');

# What SQL holds: the committed records only.
my $stored = sql(q{
    SELECT string_agg(partition || ' ' || offset_id || ' ' || convert_from(value, 'UTF8'), ',' ORDER BY partition, offset_id)
      FROM generate_series(0, 1) p, LATERAL eventlog.read_binary('jtx', p, 0, 1000) r});
is($stored, '0 0 c0,0 1 c2,0 2 c4,0 6 d0,0 7 d2,1 0 c1,1 1 c3,1 2 c5,1 6 d1,1 7 d3',
    'SQL: both committed transactions whole, nothing of the aborted one (its records took offsets 3 to 5)');
my $seen = join(',', map { "$_->{partition} $_->{offset} $_->{value}" } @{ $r->{consumed} || [] });
is($seen, $stored, 'the read_committed consumer saw exactly those records at those offsets');
unlike($seen, qr/ a\d/, 'and no aborted record');

# The positions sent with the last transaction.
is(sql(q{SELECT string_agg(topic || ' ' || partition || ' ' || committed_offset, ',')
           FROM eventlog.kafka_offset_fetch('js-tx-offsets')}),
    'jsrc 0 3', 'SQL: the group\'s position committed with the transaction');
is(sql(q{SELECT epoch FROM eventlog.producer_catalog WHERE transactional_id = 'js-tx'}), '0',
    'SQL: the transactional id is a producer at epoch 0');

$gwh->signal('TERM');
$gwh->finish;
$node->stop;
done_testing();
