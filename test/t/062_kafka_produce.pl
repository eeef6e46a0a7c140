# The Kafka gateway's Produce (src/kafka/api_produce.c, produce_store.c,
# docs/kafka.md): real producers (kcat with keys and headers, confluent_kafka
# with every codec and acks 0/1/all, kafka-python) write to binary and JSON
# topics, and every record is read back from SQL (keys, values, NULLs,
# headers in order with duplicates and NULL values, timestamps, partitions,
# offsets); librdkafka's murmur2_random partitioner puts keys where SQL
# does; invalid JSON fails the whole batch with nothing stored; a role
# without the produce privilege gets TOPIC_AUTHORIZATION_FAILED; acks map to
# synchronous_commit (acks=all waits for a synchronous standby, acks=1 does
# not); every Produce version by a raw probe; hostile batches and mutated
# requests get errors or a closed connection, and the gateway keeps serving;
# concurrent producers get distinct offsets.
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
my $probe = "$dir/kafka_produce_probe.py";

my $node = PostgreSQL::Test::Cluster->new('kproduce');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('bin', 3, format => 'binary');
    SELECT eventlog.create_topic('js', 2);
    SELECT eventlog.create_topic('keyed', 4, format => 'binary');
    SELECT eventlog.create_topic('keyedjs', 5);
    SELECT eventlog.create_topic('codec', 1, format => 'binary');
    SELECT eventlog.create_topic('kp', 2, format => 'binary');
    SELECT eventlog.create_topic('probe', 3, format => 'binary');
    SELECT eventlog.create_topic('pjs', 1);
    SELECT eventlog.create_topic('priv', 1, format => 'binary');
    SELECT eventlog.create_topic('conc', 1, format => 'binary');
    CREATE ROLE np LOGIN;
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $tmp = PostgreSQL::Test::Utils::tempdir();

sub start_gateway
{
    my ($name, $dsn, @args) = @_;
    return spawn_gateway($gw, $tmp, $name, qr/serving database/, '--dsn', $dsn, @args);
}

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $addr = "127.0.0.1:$port";
my ($gwh, $gwlog) = start_gateway('main', $node->connstr('postgres'), '--listen', $addr);

# A binary topic's records as "offset|key|value|headers|event time in ms",
# bytes in hex, NULL as NULL, headers name=hexvalue in order.
sub binary_records
{
    my ($topic, $partition) = @_;
    return $node->safe_psql('postgres', qq{
        SELECT r.offset_id || '|' || coalesce(encode(r.key, 'hex'), 'NULL') || '|'
               || coalesce(encode(r.value, 'hex'), 'NULL') || '|'
               || coalesce((SELECT string_agg(h.name || '=' || coalesce(encode(h.value, 'hex'), 'NULL'),
                                              ',' ORDER BY h.ord)
                              FROM unnest(r.headers) WITH ORDINALITY AS h(name, value, ord)), '')
               || '|' || (extract(epoch FROM r.event_time) * 1000)::bigint
          FROM eventlog.read_binary('$topic', $partition, 0, 100000) r
         ORDER BY r.offset_id});
}

sub tohex { return unpack('H*', $_[0]); }

# librdkafka writes RecordBatch v2 (magic 2) only to a broker that
# advertises Fetch v4+ as well as Produce v3+ (its MSGVER2 feature, in
# rdkafka_feature.c); to one without Fetch it sends magic 0/1 message sets,
# which the gateway refuses (and broker.version.fallback does not help: from
# 0.10 librdkafka needs ApiVersions for its features).  The librdkafka parts
# (kcat, confluent_kafka) therefore run once the gateway advertises Fetch v4+.
my ($rc, $out, $err) = run_cmd($python, "$dir/kafka_probe.py", '127.0.0.1', $port, 'apiversions', 3);
my ($fetch_max) = $out =~ /[=,]1:\d+-(\d+)/;
my $rdk_ok = defined $fetch_max && $fetch_max >= 4;
my @kcat_x;
note('librdkafka producers: ' . ($rdk_ok ? 'tested' : 'skipped, the gateway does not advertise Fetch v4+'));

if ($rdk_ok) {
# 1. kcat to a binary topic: keys, NULL keys and values (-Z), headers with
# a duplicate name, an empty value and a NULL value.
($rc, $out, $err) = run_cmd(\"k1:v1\nk2:\n:v3\nk4:v4\n", 'kcat', '-P', @kcat_x, '-b', $addr, '-t', 'bin',
    '-p', '0', '-K:', '-Z', '-H', 'h1=a', '-H', 'h1=b', '-H', 'h2=', '-H', 'h3');
is($rc, 0, 'kcat -P to a binary topic succeeds') or diag($err);
my @rows = split /\n/, binary_records('bin', 0);
is(scalar(@rows), 4, 'kcat: four records stored');
my @fields = map { [ split /\|/, $_, -1 ] } @rows;
is_deeply([ map { [ @$_[0 .. 3] ] } @fields ], [
    [ 0, tohex('k1'), tohex('v1'), 'h1=' . tohex('a') . ',h1=' . tohex('b') . ',h2=,h3=NULL' ],
    [ 1, tohex('k2'), 'NULL', 'h1=' . tohex('a') . ',h1=' . tohex('b') . ',h2=,h3=NULL' ],
    [ 2, 'NULL', tohex('v3'), 'h1=' . tohex('a') . ',h1=' . tohex('b') . ',h2=,h3=NULL' ],
    [ 3, tohex('k4'), tohex('v4'), 'h1=' . tohex('a') . ',h1=' . tohex('b') . ',h2=,h3=NULL' ],
], 'kcat: keys, NULL key, tombstone, ordered headers with duplicates, empty and NULL values, offsets');
ok((grep { abs($_->[4] / 1000 - time()) < 3600 } @fields) == 4, 'kcat: the records\' timestamps are now');

# 2. kcat to a JSON topic: valid JSON is stored as JSON, keys as text,
# headers as an object.
($rc, $out, $err) = run_cmd(\qq(a:{"x": 1}\nb:[1,2]\nc:"text"\n), 'kcat', '-P', @kcat_x, '-b', $addr,
    '-t', 'js', '-p', '1', '-K:', '-H', 'src=kcat', '-H', 'empty=');
is($rc, 0, 'kcat -P to a JSON topic succeeds') or diag($err);
is($node->safe_psql('postgres', q{
    SELECT string_agg(offset_id || '|' || key || '|' || value::text || '|' || headers::text, E'\n'
                      ORDER BY offset_id)
      FROM eventlog.read('js', 1, 0)}),
    qq(0|a|{"x": 1}|{"src": "kcat", "empty": ""}\n1|b|[1, 2]|{"src": "kcat", "empty": ""}\n2|c|"text"|{"src": "kcat", "empty": ""}),
    'kcat: JSON values, text keys and headers as an object');

# Invalid JSON in a batch: the batch fails (INVALID_RECORD) and nothing of
# it is stored, the valid record included.
($rc, $out, $err) = run_cmd(\qq(c:{"ok": true}\nd:not json\n), 'kcat', '-P', @kcat_x, '-b', $addr,
    '-t', 'js', '-p', '0', '-K:', '-X', 'linger.ms=200');
# librdkafka's text for INVALID_RECORD (87).
like($err, qr/Broker failed to validate record/, 'kcat: invalid JSON is refused with INVALID_RECORD');
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('js', 0, 0)}), '0',
    'kcat: nothing of the batch with invalid JSON is stored');

# 3. confluent_kafka: every codec with acks 0, 1 and all; records with
# binary values (NUL, 0xff), NULL keys, tombstones, headers; delivery
# reports' offsets against SQL's.
my $producer_py = <<"EOT";
import sys
import os
from confluent_kafka import Producer
RDK = dict(kv.split('=', 1) for kv in os.environ.get('RDK_EXTRA', '').split(',') if kv)
addr, topic = sys.argv[1], sys.argv[2]
expected = []
for codec in ('gzip', 'snappy', 'lz4', 'zstd'):
    for acks in ('0', '1', 'all'):
        p = Producer({**RDK, 'bootstrap.servers': addr, 'compression.type': codec, 'acks': acks,
                      'linger.ms': 100, 'enable.idempotence': False})
        reports = []
        def cb(err, msg):
            reports.append((err.name() if err else None, msg.partition(), msg.offset()))
        for i in range(30):
            key = None if i % 7 == 3 else ('%s-%s-%d' % (codec, acks, i)).encode()
            value = None if i % 10 == 9 else b'\\x00\\xff' + b'abc' * (i + 10)
            headers = [('i', str(i).encode()), ('dup', b'x'), ('dup', None)] if i % 2 else None
            ts = 1600000000000 + i
            p.produce(topic, value=value, key=key, headers=headers, partition=0,
                      timestamp=ts, on_delivery=cb)
            hs = ','.join('%s=%s' % (n, 'NULL' if v is None else v.hex()) for n, v in headers or [])
            expected.append('%s|%s|%s|%d' % ('NULL' if key is None else key.hex(),
                                             'NULL' if value is None else value.hex(), hs, ts))
        p.flush(60)
        errors = [r for r in reports if r[0]]
        offsets = [r[2] for r in reports]
        print('report %s acks=%s: %d reports, %d errors, offsets %s' % (
            codec, acks, len(reports), len(errors),
            'unknown' if acks == '0' else ('consecutive' if offsets == list(range(offsets[0], offsets[0] + 30)) else offsets)))
        sys.stdout.flush()
for line in expected:
    print('record ' + line)
EOT
($rc, $out, $err) = run_cmd($python, '-c', $producer_py, $addr, 'codec');
is($rc, 0, 'confluent_kafka producer ran') or diag($err);
my @reports = $out =~ /^report (.*)$/mg;
is_deeply(\@reports, [ map {
    my $c = $_;
    map { "$c acks=$_: 30 reports, 0 errors, offsets " . ($_ eq '0' ? 'unknown' : 'consecutive') } qw(0 1 all)
} qw(gzip snappy lz4 zstd) ], 'confluent_kafka: every codec and acks level delivered');
my @expected = $out =~ /^record (.*)$/mg;
ok($node->poll_query_until('postgres', q{SELECT count(*) = 360 FROM eventlog.read_binary('codec', 0, 0, 1000)}),
    'confluent_kafka: all 360 records are stored (acks=0 ones included)');
my @got = map { my @f = split /\|/, $_, -1; join('|', @f[1 .. 4]) } split /\n/, binary_records('codec', 0);
is_deeply([ sort @got ], [ sort @expected ], 'confluent_kafka: every record as sent (key, value, headers, timestamp)');
# Order: each producer's 30 records in the order it sent them.  Not across
# producers: an acks=0 producer's flush returns once its request is on the
# wire, so the next producer's request, on another connection, may be
# stored first.  A greedy scan finds each producer's records as a
# subsequence of the partition (identical records of other producers are
# interchangeable).
my @disordered;
for my $b (0 .. 11)
{
    my @want = @expected[ 30 * $b .. 30 * $b + 29 ];
    my $i = 0;
    for my $g (@got) { $i++ if $i < 30 && $g eq $want[$i]; }
    push @disordered, $b if $i < 30;
}
is_deeply(\@disordered, [], 'confluent_kafka: each producer\'s records in the order it sent them');

# 4. Keys without a partition: librdkafka's murmur2_random partitioner puts
# them where SQL's produce_binary (and produce, for JSON topics) does.
my $keyed_py = <<"EOT";
import sys
import os
from confluent_kafka import Producer
RDK = dict(kv.split('=', 1) for kv in os.environ.get('RDK_EXTRA', '').split(',') if kv)
addr = sys.argv[1]
for topic in ('keyed', 'keyedjs'):
    p = Producer({**RDK, 'bootstrap.servers': addr, 'partitioner': 'murmur2_random', 'linger.ms': 20})
    out = []
    def cb(err, msg):
        out.append('%s %s %s %s' % (topic, msg.key().decode(), msg.partition(), err))
    for i in range(60):
        p.produce(topic, key=('key-%d' % i).encode(), value=b'1', on_delivery=cb)
    p.flush(60)
    print('\\n'.join(sorted(out)))
EOT
($rc, $out, $err) = run_cmd($python, '-c', $keyed_py, $addr);
is($rc, 0, 'murmur2_random producer ran') or diag($err);
my %kafka_part = map { my ($t, $k, $p) = split / /; ("$t $k" => $p) } split /\n/, $out;
is(scalar(keys %kafka_part), 120, 'every keyed record delivered');
my %sql_part = map { my ($t, $k, $p) = split /\|/; ("$t $k" => $p) } split /\n/, $node->safe_psql('postgres', q{
    SELECT 'keyed|' || k || '|' || (eventlog.produce_binary('keyed', pg_catalog.convert_to(k, 'UTF8'), '\x31')).partition
      FROM (SELECT 'key-' || i AS k FROM generate_series(0, 59) i) s
    UNION ALL
    SELECT 'keyedjs|' || k || '|' || (eventlog.produce('keyedjs', k, '1')).partition
      FROM (SELECT 'key-' || i AS k FROM generate_series(0, 59) i) s});
is_deeply(\%kafka_part, \%sql_part, 'murmur2_random puts each key in the partition SQL produce does');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM generate_series(0, 3) p, eventlog.read_binary('keyed', p, 0) r
     WHERE eventlog.partition_for_key(pg_catalog.convert_from(r.key, 'UTF8'), 4) <> p}), '0',
    'and partition_for_key agrees for every stored record');

}

# 5. kafka-python.
($rc, $out, $err) = run_cmd($python, '-c', <<"EOT", $addr);
import sys
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1], api_version=(2, 5, 0), acks='all')
for i in range(5):
    md = p.send('kp', key=b'kp%d' % i, value=b'value %d' % i, partition=1,
                headers=[('n', b'%d' % i), ('n', b'again')], timestamp_ms=1500000000000 + i).get(timeout=60)
    print(md.partition, md.offset)
p.close()
EOT
is($rc, 0, 'kafka-python producer ran') or diag($err);
is($out, "1 0\n1 1\n1 2\n1 3\n1 4\n", 'kafka-python: partitions and offsets reported');
is(binary_records('kp', 1), join("\n", map {
    "$_|" . tohex("kp$_") . '|' . tohex("value $_") . '|n=' . tohex($_) . ',n=' . tohex('again') . '|' . (1500000000000 + $_)
} 0 .. 4), 'kafka-python: records as sent');

# 6. Every Produce version (raw probe), on one connection.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'versions', 'probe');
is($out, join('', map {
    "v$_: corr=" . (100 + $_) . " error=0 base=$_ lso=" . ($_ >= 5 ? 0 : 'None')
      . ' throttle=' . ($_ >= 1 ? 0 : 'None') . " rest=0\n"
} 0 .. 9), 'every Produce version 0-9 appends, with its response fields') or diag($err);
is($node->safe_psql('postgres', q{
    SELECT string_agg(convert_from(key, 'UTF8') || '=' || convert_from(value, 'UTF8') || ' '
                      || (headers[1]).name || ':' || convert_from((headers[1]).value, 'UTF8'), ','
                      ORDER BY offset_id)
      FROM eventlog.read_binary('probe', 0, 0)}),
    join(',', map { "k$_=v$_ version:$_" } 0 .. 9), 'the probe\'s records are stored');

# 7. Hostile and refused batches: an error per partition, nothing stored.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'hostile', 'probe', 'pjs');
is($rc, 0, 'the hostile probe ran') or diag($err);
my $hostile = $out;
like($hostile, qr/^truncated batch: probe\/0 error=2 msg=/m, 'a truncated batch: CORRUPT_MESSAGE');
like($hostile, qr/^cut records: probe\/0 error=2 /m, 'a batch cut short: CORRUPT_MESSAGE');
like($hostile, qr/^bad crc: probe\/0 error=2 msg=.*CRC/mi, 'a bad CRC: CORRUPT_MESSAGE');
like($hostile, qr/^absurd count: probe\/0 error=(2|10) /m, 'an absurd record count: CORRUPT_MESSAGE or MESSAGE_TOO_LARGE');
like($hostile, qr/^negative count: probe\/0 error=(2|87) /m, 'a negative record count: refused');
like($hostile, qr/^old magic: probe\/0 error=43$/m, 'a magic 1 message set: UNSUPPORTED_FOR_MESSAGE_FORMAT');
like($hostile, qr/^idempotent: probe\/0 error=59 msg=producer 7 does not exist$/m,
    'an idempotent batch of a producer id never handed out: UNKNOWN_PRODUCER_ID (080 tests the rest)');
like($hostile, qr/^transactional batch: probe\/0 error=43 /m, 'a transactional batch: refused');
like($hostile, qr/^control batch: probe\/0 error=43 /m, 'a control batch: refused');
like($hostile, qr/^transactional id: probe\/0 error=49 msg=this gateway does not coordinate/m,
    'a transactional id never initialised: INVALID_PRODUCER_ID_MAPPING (081 tests transactions)');
like($hostile, qr/^null records: probe\/0 error=87 /m, 'null records: INVALID_RECORD');
like($hostile, qr/^empty records: probe\/0 error=87 /m, 'empty records: INVALID_RECORD');
like($hostile, qr/^two batches v9: probe\/0 error=87 msg=Produce v9 must carry exactly one record batch/m,
    'two batches in v3+: INVALID_RECORD');
like($hostile, qr/^unknown codec: probe\/0 error=76 /m, 'codec 6: UNSUPPORTED_COMPRESSION_TYPE');
like($hostile, qr/^timestamp out of range: probe\/0 error=87 record_errors=0 msg=record 0 is invalid/m,
    'a timestamp PostgreSQL cannot hold: INVALID_RECORD naming the record');
like($hostile, qr/^header name not utf8: probe\/0 error=87 record_errors=0 /m,
    'a header name that is not UTF-8: INVALID_RECORD');
like($hostile, qr/^unknown topic: nosuch\/0 error=3$/m, 'an unknown topic: UNKNOWN_TOPIC_OR_PARTITION');
like($hostile, qr/^illegal topic name: bad name!\/0 error=17$/m, 'an illegal name: INVALID_TOPIC_EXCEPTION');
like($hostile, qr/^partition out of range: probe\/99 error=3\npartition out of range: probe\/-1 error=3$/m,
    'partitions out of range: UNKNOWN_TOPIC_OR_PARTITION');
like($hostile, qr/^json: invalid values: pjs\/0 error=87 record_errors=1,3 msg=2 records are invalid, so none of the batch was stored; record 1: the value is not JSON/m,
    'invalid JSON: INVALID_RECORD with the records at fault and a message');
like($hostile, qr/^json: invalid value v7: pjs\/0 error=87$/m, 'invalid JSON before v8: INVALID_RECORD');
like($hostile, qr/^json: \\u0000: pjs\/0 error=87 record_errors=0 msg=.*u0000/m, 'a \\u0000 escape: INVALID_RECORD');
like($hostile, qr/^json: key not utf8: pjs\/0 error=87 record_errors=0 msg=.*key is not text/m,
    'a key that is not UTF-8 on a JSON topic: INVALID_RECORD');
like($hostile, qr/^json: header value not utf8: pjs\/0 error=87 record_errors=0 /m,
    'a header value that is not UTF-8 on a JSON topic: INVALID_RECORD');
like($hostile, qr/^json: duplicate header names: pjs\/0 error=87 record_errors=0 msg=.*same name/m,
    'repeated header names on a JSON topic: INVALID_RECORD');
like($hostile, qr/^json: deep nesting: pjs\/0 error=87 record_errors=0 /m, 'JSON nested too deep: INVALID_RECORD');
like($hostile, qr/^acks=2: probe\/0 error=21 /m, 'acks=2: INVALID_REQUIRED_ACKS');
like($hostile, qr/^mixed: probe\/0 error=0 base=10\nmixed: probe\/1 error=2 .*\nmixed: probe\/2 error=0 base=0\nmixed: nosuch\/0 error=3$/m,
    'a mixed request: each partition its own outcome');
unlike($hostile, qr/closed|left over/, 'no hostile request closed the connection');
is($node->safe_psql('postgres', q{
    SELECT (SELECT count(*) FROM eventlog.read_binary('probe', 0, 0)) || ' '
        || (SELECT count(*) FROM eventlog.read_binary('probe', 1, 0)) || ' '
        || (SELECT count(*) FROM eventlog.read_binary('probe', 2, 0)) || ' '
        || (SELECT count(*) FROM eventlog.read('pjs', 0, 0))}),
    '11 0 1 0', 'nothing of a refused batch is stored');

# acks=0: no response; a failure closes the connection.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'acks0', 'conc');
is($out, "after acks=0: corr=2 error=0\nafter a failed acks=0: closed\n",
    'acks=0: no response; a failed acks=0 request closes the connection');
is($node->safe_psql('postgres', q{
    SELECT string_agg(convert_from(key, 'UTF8'), ',' ORDER BY offset_id) FROM eventlog.read_binary('conc', 0, 0)}),
    'zero,one', 'acks=0: the record is stored before the next request\'s');

# Mutated requests: errors or closed connections, never a crash.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'mutations', 1500, 62, 'probe');
is($out, "mutations: 1500 sent\n", 'mutated Produce requests were all sent') or diag($err);
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'one', 'probe', 2);
like($out, qr/^one: probe\/2 error=0 base=\d+$/, 'the gateway still produces after them');

# 8. acks and synchronous_commit: with a synchronous standby named but
# absent, acks=1 (local) returns at once.
$node->append_conf('postgresql.conf', "synchronous_standby_names = 'nobody'");
$node->reload;
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'one', 'priv', 0, 1);
is($out, "one: priv/0 error=0 base=0\n", 'acks=1 does not wait for a synchronous standby');
$node->append_conf('postgresql.conf', "synchronous_standby_names = ''");
$node->reload;
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'one', 'priv', 0, -1);
is($out, "one: priv/0 error=0 base=1\n", 'acks=all without a synchronous standby');

# 9. A role without the produce privilege: TOPIC_AUTHORIZATION_FAILED and
# nothing stored; granted, it produces.
my $nport = PostgreSQL::Test::Cluster::get_free_port();
my ($nh, $nlog) = start_gateway('np', $node->connstr('postgres') . ' user=np', '--listen', "127.0.0.1:$nport");
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $nport, 'one', 'priv', 0);
like($out, qr/^one: priv\/0 error=29 msg=/, 'no produce privilege: TOPIC_AUTHORIZATION_FAILED');
if ($rdk_ok)
{
($rc, $out, $err) = run_cmd($python, '-c', <<"EOT", "127.0.0.1:$nport");
import sys
import os
from confluent_kafka import Producer
RDK = dict(kv.split('=', 1) for kv in os.environ.get('RDK_EXTRA', '').split(',') if kv)
p = Producer({**RDK, 'bootstrap.servers': sys.argv[1], 'message.send.max.retries': 0})
errs = []
p.produce('priv', key=b'k', value=b'v', partition=0, on_delivery=lambda e, m: errs.append(e.name() if e else 'ok'))
p.flush(60)
print(errs)
EOT
is($out, "['TOPIC_AUTHORIZATION_FAILED']\n", 'confluent_kafka reports TOPIC_AUTHORIZATION_FAILED') or diag($err);
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read_binary('priv', 0, 0)}), '2',
    'nothing of the unprivileged role is stored');
$node->safe_psql('postgres', q{SELECT eventlog.grant('priv', 'produce', 'np')});
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $nport, 'one', 'priv', 0);
is($out, "one: priv/0 error=0 base=2\n", 'granted the privilege, the role produces');
$nh->signal('TERM');
$nh->finish;

# 10. Concurrent producers (kafka-python) to one partition: distinct, gapless offsets, and
# each producer's reported offsets are its records'.
my @procs;
for my $i (0 .. 3)
{
    my $o = '';
    push @procs, [ IPC::Run::start([ $python, '-c', <<"EOT", $addr, $i ], '>', \$o, '2>', \my $e), \$o ];
import sys
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1], api_version=(2, 5, 0), linger_ms=5, batch_size=5000)
futs = []
for n in range(400):
    k = 'p%s-%d' % (sys.argv[2], n)
    futs.append((k, p.send('conc', key=k.encode(), value=b'x' * 100, partition=0)))
p.flush()
print('\\n'.join('%s %d' % (k, f.get(60).offset) for k, f in futs))
EOT
}
my %reported;
for my $p (@procs)
{
    $p->[0]->finish;
    for (split /\n/, ${ $p->[1] })
    {
        my ($k, $o) = split / /;
        $reported{$k} = $o;
    }
}
is(scalar(keys %reported), 1600, 'concurrent producers: 1600 records reported');
my %stored = map { split /\|/ } split /\n/, $node->safe_psql('postgres', q{
    SELECT convert_from(key, 'UTF8') || '|' || offset_id FROM eventlog.read_binary('conc', 0, 2, 10000)});
is_deeply(\%reported, \%stored, 'concurrent producers: every reported offset holds its record');
is($node->safe_psql('postgres', q{
    SELECT count(DISTINCT offset_id) || ' ' || min(offset_id) || ' ' || max(offset_id)
      FROM eventlog.read_binary('conc', 0, 0, 10000)}), '1602 0 1601', 'offsets are distinct and gapless');

# Pipelined Produce requests share one commit (produce_batch.c), and a
# statement that fails among them (request 6: the role may not produce to
# pipejs, which PostgreSQL refuses inside the batch's transaction) costs
# the others nothing: the batch is rolled back and each request handled
# again on its own.  Request 3 is refused before any statement.  Every
# response comes, in order, with its own outcome, and exactly the good
# records are stored, once each.
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('pipe', 2, format => 'binary');
    SELECT eventlog.create_topic('pipejs', 1);
    SELECT eventlog.grant('pipe', 'produce', 'np');
    ALTER ROLE np SET log_statement = 'all';
});
{
    my $log_at = -s $node->logfile;
    my $pport = PostgreSQL::Test::Cluster::get_free_port();
    my ($ph, $plog) = start_gateway('pipelined', $node->connstr('postgres') . ' user=np',
        '--listen', "127.0.0.1:$pport", '--log-level', 'debug');
    my (undef, $out) = run_cmd($python, $probe, '127.0.0.1', $pport, 'pipelined', 'pipe', 'pipejs');
    chomp $out;
    is($out, join("\n", '1: corr=1 error=0', '2: corr=2 error=0', '3: corr=3 error=87',
                  '4: corr=4 error=0', '5: corr=5 error=0', '6: corr=6 error=29',
                  '7: corr=7 error=0', '8: corr=8 error=0',
                  'many: 200 answered, 0 out of order or failed',
                  'large: 12 answered, 0 out of order or failed',
                  'acks=0, then a refused acks=0: closed'),
       'pipelined Produce requests: every response, in order, with its own outcome');
    is($node->safe_psql('postgres', q{
        SELECT string_agg(convert_from(key, 'UTF8'), ',' ORDER BY partition, offset_id)
          FROM (SELECT * FROM eventlog.read_binary('pipe', 0, 0, 1000)
                UNION ALL
                SELECT * FROM eventlog.read_binary('pipe', 1, 0, 1000)) r
         WHERE convert_from(key, 'UTF8') LIKE 'p%'}), 'p2,p4,p8,p1,p5,p7',
       'pipelined Produce requests: the good records stored once each, in order; the refused ones not');
    is($node->safe_psql('postgres', q{
        SELECT count(*) || ' ' || count(DISTINCT key) FROM eventlog.read_binary('pipe', 1, 0, 1000)
         WHERE convert_from(key, 'UTF8') LIKE 'q%'}), '200 200',
       'pipelined Produce requests: 200 sent back to back, 200 stored');
    is($node->safe_psql('postgres', q{
        SELECT count(*) FROM eventlog.read_binary('pipe', 1, 0, 1000) WHERE key = 'z1'}), '1',
       'pipelined Produce requests: a connection closed by the next request commits the batch it had open');
    is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('pipejs', 0, 0, 10)}), '0',
       'pipelined Produce requests: nothing in the topic the role may not produce to');
    # Within a batch, a request of the same topic as the one before it
    # reuses its catalog lookup: fewer lookups than produce statements
    # (without the reuse, each statement follows a lookup of its own).
    my $np_log = substr(slurp_file($node->logfile), $log_at);
    my $lookups = () = $np_log =~ /execute [^:]*: SELECT t\.name, t\.partitions/g;
    my $stores = () = $np_log =~ /execute [^:]*: SELECT pg_catalog\.set_config\('synchronous_commit'/g;
    cmp_ok($lookups, '<', $stores,
       "pipelined Produce requests: a batch's requests share its topic lookup ($lookups lookups, $stores produce statements)");
    $ph->signal('TERM');
    $ph->finish;
    my $plogtext = slurp_file($plog);
    like($plogtext, qr/\d+ pipelined Produce requests committed in one transaction/,
         'pipelined Produce requests: several committed in one transaction (the log says so)');
    like($plogtext, qr/a statement failed among \d+ pipelined Produce requests: rolling back/,
         'pipelined Produce requests: a failed statement rolled the batch back and replayed it');
    # The 20 KB requests (from correlation id 5000): at most three share a
    # commit, as their copies may hold 64 KiB together.
    my ($after) = $plogtext =~ /(correlation id 5000,.*)\z/s;
    my @sizes = ($after // '') =~ /(\d+) pipelined Produce requests committed/g;
    ok(@sizes && !grep({ $_ > 3 } @sizes),
       'pipelined Produce requests: a batch copies at most 64 KiB of frames (batches of ' . join(',', @sizes) . ')');
}

# The gateway served everything without a crash.
$gwh->signal('TERM');
$gwh->finish;
is($? >> 8, 0, 'the gateway ends cleanly');
unlike(slurp_file($gwlog), qr/FATAL|PANIC/, 'no fatal log line');

done_testing();
