# The Kafka gateway's Fetch and ListOffsets (src/kafka/api_fetch.c,
# api_list_offsets.c, sql/install/kafka_fetch.sql, src/kafka_await.c):
# kcat consuming from the beginning, the end, an offset and a timestamp;
# confluent_kafka (librdkafka) and kafka-python consumers reading 10,000
# records of 3 partitions; each compared with SQL's read / read_binary
# (same partitions, offsets, timestamps, keys, values and headers, byte for
# byte).  The long poll: a Fetch waiting on two topics wakes when another
# session commits in either, and a rolled-back transaction does not make it
# return.  Retention: OFFSET_OUT_OF_RANGE and auto.offset.reset.
# Privileges: TOPIC_AUTHORIZATION_FAILED.  Every Fetch and ListOffsets
# version by the raw probe, and hostile requests (absurd sizes, thousands
# of partitions, negative offsets) answered or closed, never a crash.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use KafkaGatewayTest;

my $python = '/usr/bin/python3';
my $probe = "$ENV{TESTDIR}/test/t/kafka_probe.py";
$probe = 'test/t/kafka_probe.py' unless -f $probe;

my $node = PostgreSQL::Test::Cluster->new('kfetch');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('bin', 3, format => 'binary');
    SELECT eventlog.create_topic('js', 1);
    SELECT eventlog.create_topic('big', 3, format => 'binary');
    SELECT eventlog.create_topic('sized', 1, retention => NULL, retention_bytes => 100000,
                                 segment_bytes => 65536, format => 'binary');
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $tmp = PostgreSQL::Test::Utils::tempdir();

sub start_gateway
{
    my ($name, $dsn, @args) = @_;
    my $port = PostgreSQL::Test::Cluster::get_free_port();
    my ($h, $log) = spawn_gateway($gw, $tmp, $name, qr/serving database/,
        '--dsn', $dsn, '--listen', "127.0.0.1:$port", @args);
    return ($h, $port, $log);
}

my ($gwh, $port, $gwlog) = start_gateway('main', $node->connstr('postgres'));
my $addr = "127.0.0.1:$port";

# librdkafka consumes only from a broker that advertises Produce v3 too (its
# feature MsgVer2 needs Produce v3 and Fetch v4); until the gateway has
# Produce, the librdkafka clients' tests (kcat, confluent_kafka) are skipped.
my (undef, $versions) = run_cmd($python, $probe, '127.0.0.1', $port, 'apiversions', 3);
my $rdkafka = $versions =~ /keys=(?:.*,)?0:\d+-([3-9]|\d\d)\b/;
my $no_rdkafka = 'librdkafka needs Produce v3 advertised to consume (feature MsgVer2)';

# Records: binary ones with null keys and values, empty ones, bytes that are
# not UTF-8, headers in order with duplicates and a null value; JSON ones
# with headers.  Event times are fixed, one second apart.
$node->safe_psql('postgres', q{
    SELECT count(*) FROM generate_series(0, 2) p,
      LATERAL eventlog.produce_binary_batch('bin', (
        SELECT array_agg(ROW(
            CASE WHEN i % 5 = 0 THEN NULL ELSE convert_to('k' || p || '-' || i, 'UTF8') END,
            CASE WHEN i % 7 = 0 THEN NULL WHEN i % 6 = 0 THEN '\x'::bytea
                 ELSE convert_to('v' || p || '-' || i, 'UTF8') END,
            CASE WHEN i % 3 = 0 THEN ARRAY[ROW('h', '\x0001ff')::eventlog.header,
                                           ROW('h', NULL)::eventlog.header,
                                           ROW('a', '\x41')::eventlog.header] END,
            timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second')::eventlog.message ORDER BY i)
          FROM generate_series(0, 5) i), p);
    SELECT pg_sleep(0.05);
    SELECT count(*) FROM generate_series(0, 2) p,
      LATERAL eventlog.produce_binary_batch('bin', (
        SELECT array_agg(ROW(
            CASE WHEN i % 5 = 0 THEN NULL ELSE convert_to('k' || p || '-' || i, 'UTF8') END,
            CASE WHEN i % 7 = 0 THEN NULL WHEN i % 6 = 0 THEN '\x'::bytea
                 ELSE convert_to('v' || p || '-' || i, 'UTF8') END,
            CASE WHEN i % 3 = 0 THEN ARRAY[ROW('h', '\x0001ff')::eventlog.header,
                                           ROW('h', NULL)::eventlog.header,
                                           ROW('a', '\x41')::eventlog.header] END,
            timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second')::eventlog.message ORDER BY i)
          FROM generate_series(6, 11) i), p);
    SELECT count(*) FROM eventlog.produce_batch('js',
        (SELECT array_agg('key' || i ORDER BY i) FROM generate_series(0, 9) i),
        (SELECT array_agg(jsonb_build_object('n', i, 's', 'x' || i) ORDER BY i) FROM generate_series(0, 9) i),
        (SELECT array_agg(CASE WHEN i % 2 = 0 THEN jsonb_build_object('src', 'sql', 'n', i) END ORDER BY i)
           FROM generate_series(0, 9) i),
        event_time => (SELECT array_agg(timestamptz '2026-02-01 00:00:00+00' + i * interval '1 second' ORDER BY i)
                         FROM generate_series(0, 9) i));
});

# SQL's view of a binary partition, as kcat prints it: partition|offset|timestamp|key|value.
sub sql_kcat_lines
{
    my ($topic, $part, $from, $fn) = @_;
    $fn //= 'read_binary';
    my $conv = $fn eq 'read' ? 'r.value::text' : q{convert_from(r.value, 'UTF8')};
    my $key = $fn eq 'read' ? 'r.key' : q{convert_from(r.key, 'UTF8')};
    return $node->safe_psql('postgres', qq{
        SELECT string_agg(format('%s|%s|%s|%s|%s', r.partition, r.offset_id,
                                 floor(extract(epoch FROM r.event_time) * 1000)::bigint,
                                 coalesce($key, ''), coalesce($conv, '')), E'\\n' ORDER BY r.offset_id)
          FROM eventlog.$fn('$topic', $part, $from, 100000) r});
}

# 1. kcat: -o beginning, end, an offset, a timestamp, on binary and JSON topics.
my ($rc, $out, $err);
my $mid_ms = $node->safe_psql('postgres', q{
    SELECT floor(extract(epoch FROM append_time) * 1000)::bigint FROM eventlog.read_binary('bin', 2, 6, 1)});
my $first_at = $node->safe_psql('postgres',
    "SELECT eventlog.offset_for_time('bin', 2, timestamptz 'epoch' + $mid_ms * interval '1 millisecond')");
SKIP:
{
    skip $no_rdkafka, 14 unless $rdkafka;
    for my $p (0 .. 2)
    {
        my ($rc, $out, $err) = run_cmd('kcat', '-C', '-b', $addr, '-t', 'bin', '-p', $p, '-o', 'beginning',
            '-e', '-q', '-f', '%p|%o|%T|%k|%s\n');
        is($rc, 0, "kcat -o beginning, bin/$p: exit 0") or diag($err);
        chomp $out;
        is($out, sql_kcat_lines('bin', $p, 0), "kcat -o beginning, bin/$p: the records read_binary returns");
    }
    ($rc, $out, $err) = run_cmd('kcat', '-C', '-b', $addr, '-t', 'bin', '-p', 1, '-o', '5', '-e', '-q',
        '-f', '%p|%o|%T|%k|%s\n');
    chomp $out;
    is($out, sql_kcat_lines('bin', 1, 5), 'kcat -o 5: from offset 5 on');
    ($rc, $out, $err) = run_cmd('kcat', '-C', '-b', $addr, '-t', 'bin', '-p', 1, '-o', 'end', '-e', '-q',
        '-f', '%p|%o|%T|%k|%s\n');
    is($rc, 0, 'kcat -o end: exit 0') or diag($err);
    is($out, '', 'kcat -o end: nothing (it starts at the last stable offset)');
    # A search by time uses append_time: the second half of bin/2's records was
    # appended 50 ms after the first.
    ($rc, $out, $err) = run_cmd('kcat', '-C', '-b', $addr, '-t', 'bin', '-p', 2, '-o', "s\@$mid_ms", '-e', '-q',
        '-f', '%p|%o|%T|%k|%s\n');
    is($rc, 0, 'kcat -o s@<ms>: exit 0') or diag($err);
    chomp $out;
    is($out, sql_kcat_lines('bin', 2, $first_at), "kcat -o s\@<ms>: from offset_for_time ($first_at) on");
    ($rc, $out, $err) = run_cmd('kcat', '-C', '-b', $addr, '-t', 'js', '-p', 0, '-o', 'beginning', '-e', '-q',
        '-f', '%p|%o|%T|%k|%s\n');
    chomp $out;
    is($out, sql_kcat_lines('js', 0, 0, 'read'), 'kcat on a JSON topic: keys and the JSON text of the values');
    ($rc, $out, $err) = run_cmd('kcat', '-C', '-b', $addr, '-t', 'js', '-p', 0, '-o', '3', '-c', '1', '-e', '-q',
        '-f', '%o %h\n');
    is($out, "3 \n", 'a JSON record without headers has none');
    ($rc, $out, $err) = run_cmd('kcat', '-C', '-b', $addr, '-t', 'js', '-p', 0, '-o', '4', '-c', '1', '-e', '-q',
        '-f', '%o %h\n');
    is($out, "4 n=4,src=sql\n", 'a JSON record\'s headers: its object\'s members, string values unquoted');
}

# 2. Every version, by the raw probe: records, offsets, headers byte for byte.
for my $v (4 .. 12)
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', $v, 'bin', 0, 2);
    my $start = $v >= 5 ? 'start=0' : 'start=None';
    like($out, qr{^bin/0 error=0 hw=12 lso=12 \Q$start\E records=10 offsets=2,3,4,5,6,\.\.\.11$}m,
        "Fetch v$v: records 2 to 11 of bin/0, high watermark = last stable offset = 12") or diag($out, $err);
    like($out, qr{^  3 ts=1767225603000 key=b'k0-3' value=b'v0-3' headers=\[\(b'h', b'\\x00\\x01\\xff'\), \(b'h', None\), \(b'a', b'A'\)\]$}m,
        "Fetch v$v: a record's timestamp, key, value and ordered headers with a null value");
    like($out, qr/^rest=0$/m, "Fetch v$v: the response decodes to its last byte");
}
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'bin', 0, 0);
like($out, qr{^  0 ts=1767225600000 key=None value=None headers=\[\(b'h'}m, 'a null key and a null value stay null');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'bin', 0, 6);
like($out, qr{^  6 ts=\d+ key=b'k0-6' value=b'' headers=}m, 'an empty value stays empty');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'bin', 0, 12);
like($out, qr{^bin/0 error=0 hw=12 lso=12 start=0 records=0 offsets=$}m, 'at the end: no records, no error');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'bin', 0, 13);
like($out, qr{^bin/0 error=1 }m, 'beyond the end: OFFSET_OUT_OF_RANGE');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'nope', 0, 0);
like($out, qr{^nope/0 error=3 }m, 'an unknown topic: UNKNOWN_TOPIC_OR_PARTITION');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'bin', 3, 0);
like($out, qr{^bin/3 error=3 }m, 'an unknown partition: UNKNOWN_TOPIC_OR_PARTITION');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'bin', 0, 0, 'part_bytes=1');
like($out, qr{^bin/0 error=0 hw=12 lso=12 start=0 records=1 offsets=0$}m,
    'partition_max_bytes smaller than a record: the first record all the same');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'bin', 0, 0, 'part_bytes=400');
like($out, qr{^bin/0 error=0 hw=12 lso=12 start=0 records=([2-9]|1[01]) }m, 'partition_max_bytes limits the records');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'bin', 0, 0, 'isolation=0');
like($out, qr{^bin/0 error=0 hw=12 lso=12 start=0 records=12 }m, 'read_uncommitted: the same records');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 7, 'bin', 0, 0, 'epoch=0');
like($out, qr{^error=0 session=0$}m, 'a request to open a fetch session: answered in full, session id 0 (none)');
like($out, qr{^bin/0 error=0 .* records=12 }m, 'and its records');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 7, 'bin', 0, 0, 'session=77', 'epoch=1');
like($out, qr{^error=70 session=0$}m, 'a session that does not exist: FETCH_SESSION_ID_NOT_FOUND');

for my $v (0 .. 6)
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'listoffsets', $v, 'bin', 1, -2);
    like($out, $v == 0 ? qr{^bin/1 error=0 offsets=\[0\]$}m : qr{^bin/1 error=0 timestamp=-1 offset=0$}m,
        "ListOffsets v$v earliest: the log start offset") or diag($out, $err);
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'listoffsets', $v, 'bin', 1, -1);
    like($out, $v == 0 ? qr{^bin/1 error=0 offsets=\[12\]$}m : qr{^bin/1 error=0 timestamp=-1 offset=12$}m,
        "ListOffsets v$v latest: the last stable offset");
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'listoffsets', $v, 'bin', 2, $mid_ms);
    like($out, $v == 0 ? qr{^bin/2 error=0 offsets=\[$first_at\]$}m
                       : qr{^bin/2 error=0 timestamp=\d+ offset=$first_at$}m,
        "ListOffsets v$v by time: offset_for_time");
    like($out, qr/^rest=0$/m, "ListOffsets v$v: the response decodes to its last byte");
}
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'listoffsets', 5, 'bin', 2, '4102444800000');
like($out, qr{^bin/2 error=0 timestamp=-1 offset=-1$}m, 'a time after every record: offset -1, as Kafka');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'listoffsets', 5, 'nope', 0, -1);
like($out, qr{^nope/0 error=3 }m, 'ListOffsets of an unknown topic: UNKNOWN_TOPIC_OR_PARTITION');

# 3. 10,000 records of 3 partitions through confluent_kafka and kafka-python.
$node->safe_psql('postgres', q{
    SELECT count(*) FROM generate_series(0, 2) p,
      LATERAL eventlog.produce_binary_batch('big', (
        SELECT array_agg(ROW(
            CASE WHEN i % 11 = 0 THEN NULL ELSE convert_to('key-' || i, 'UTF8') END,
            CASE WHEN i % 13 = 0 THEN NULL ELSE decode(md5(i::text) || repeat('ab', i % 40), 'hex') END,
            CASE WHEN i % 7 = 0 THEN ARRAY[ROW('trace', decode('00ff' || lpad(to_hex(i), 8, '0'), 'hex'))::eventlog.header,
                                           ROW('trace', NULL)::eventlog.header] END,
            NULL)::eventlog.message ORDER BY i)
          FROM generate_series(1, CASE p WHEN 0 THEN 3334 ELSE 3333 END) i), p);
});
my $sql_big = $node->safe_psql('postgres', q{
    SELECT string_agg(format('%s|%s|%s|%s|%s|%s', r.partition, r.offset_id,
                             floor(extract(epoch FROM r.event_time) * 1000)::bigint,
                             coalesce(encode(r.key, 'hex'), 'NULL'), coalesce(encode(r.value, 'hex'), 'NULL'),
                             coalesce((SELECT string_agg(encode(convert_to(h.name, 'UTF8'), 'hex') || '='
                                                         || coalesce(encode(h.value, 'hex'), 'NULL'), ';' ORDER BY o)
                                         FROM unnest(r.headers) WITH ORDINALITY h(name, value, o)), '')),
                      E'\n' ORDER BY r.partition, r.offset_id)
      FROM generate_series(0, 2) p, LATERAL eventlog.read_binary('big', p, 0, 100000) r});
is(scalar(split /\n/, $sql_big), 10000, 'SQL reads 10,000 records of big');

my $common_py = <<'EOF';
import sys
def h(b):
    return 'NULL' if b is None else b.hex()
def line(p, off, ts, key, value, headers):
    hs = ';'.join('%s=%s' % (k.encode().hex(), h(v)) for k, v in (headers or []))
    return '%d|%d|%d|%s|%s|%s' % (p, off, ts, h(key), h(value), hs)
EOF
open my $fh, '>', "$tmp/ck.py" or die;
print $fh $common_py . <<'EOF';
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
bs, topic, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
conf = {'bootstrap.servers': bs, 'group.id': 'unused-063', 'enable.auto.commit': False,
        'enable.auto.offset.store': False, 'fetch.wait.max.ms': 100}
if len(sys.argv) > 4:
    conf['max.partition.fetch.bytes'] = int(sys.argv[4])
c = Consumer(conf)
c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
out = []
while len(out) < total:
    m = c.poll(30)
    if m is None:
        break
    if m.error():
        print('error', m.error(), file=sys.stderr)
        continue
    out.append(line(m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value(), m.headers()))
c.close()
print('\n'.join(sorted(out, key=lambda l: tuple(int(x) for x in l.split('|')[:2]))))
EOF
close $fh;
SKIP:
{
    skip $no_rdkafka, 2 unless $rdkafka;
    ($rc, $out, $err) = run_cmd($python, "$tmp/ck.py", $addr, 'big', 10000);
    is($rc, 0, 'confluent_kafka consumer: exit 0') or diag($err);
    chomp $out;
    is($out, $sql_big, 'confluent_kafka reads the 10,000 records of SQL: partitions, offsets, timestamps, keys, values, headers');
}

open $fh, '>', "$tmp/kp.py" or die;
print $fh $common_py . <<'EOF';
from kafka import KafkaConsumer, TopicPartition
bs, topic, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = KafkaConsumer(bootstrap_servers=bs, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100)
tps = [TopicPartition(topic, p) for p in range(3)]
c.assign(tps)
c.seek_to_beginning(*tps)
out = []
idle = 0
while len(out) < total and idle < 100:
    got = c.poll(timeout_ms=500)
    idle = 0 if got else idle + 1
    for tp, msgs in got.items():
        for m in msgs:
            out.append(line(m.partition, m.offset, m.timestamp, m.key, m.value,
                            [(k, v) for k, v in m.headers]))
c.close()
print('\n'.join(sorted(out, key=lambda l: tuple(int(x) for x in l.split('|')[:2]))))
EOF
close $fh;
($rc, $out, $err) = run_cmd($python, "$tmp/kp.py", $addr, 'big', 10000);
is($rc, 0, 'kafka-python consumer: exit 0') or diag($err);
chomp $out;
is($out, $sql_big, 'kafka-python reads the same 10,000 records');

# 3b. The read-ahead of a consumer's next Fetch (api_fetch.c, pg.c:
# kpg_fetch_ahead), on a gateway that logs each one: confluent_kafka with
# 4,000 bytes a partition makes about 100 Fetches of the three partitions,
# each with more records readable, and reads the same records.  By the raw
# probe on one connection: the Fetch at the offset after a response's last
# record is answered from the read-ahead, exactly as a Fetch of another
# connection; a request of another API after a read-ahead is answered (it
# drops the read-ahead), and so is the same Fetch again; one at another
# offset drops the read-ahead and reads from that offset.
{
    my ($gwh_a, $port_a, $gwlog_a) = start_gateway('ahead', $node->connstr('postgres'),
        '--log-level', 'debug');
    SKIP:
    {
        skip $no_rdkafka, 3 unless $rdkafka;
        ($rc, $out, $err) = run_cmd($python, "$tmp/ck.py", "127.0.0.1:$port_a", 'big', 10000, 4000);
        is($rc, 0, 'confluent_kafka consumer, 4,000 bytes a partition: exit 0') or diag($err);
        chomp $out;
        is($out, $sql_big, 'confluent_kafka, 4,000 bytes a partition: the 10,000 records of SQL');
        like(slurp_file($gwlog_a), qr/Fetch: read ahead$/m, 'its Fetches were read ahead');
    }
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port_a, 'fetch', 11, 'big', 0, 0,
        'part_bytes=2000');
    my ($last) = $out =~ /^big\/0 error=0 .* records=\d+ offsets=\S*?(\d+)$/m;
    ok($last > 0 && $last < 3000, "a Fetch of 2,000 bytes ends at offset $last") or diag($out);
    my $next = $last + 1;
    my ($rc2, $fresh) = run_cmd($python, $probe, '127.0.0.1', $port_a, 'fetch', 11, 'big', 0, $next,
        'part_bytes=2000');
    my ($rc3, $from5) = run_cmd($python, $probe, '127.0.0.1', $port_a, 'fetch', 11, 'big', 0, 5,
        'part_bytes=2000');
    my $before = -s $gwlog_a;
    my $in = "fetchn 2000 0 big:0:0\nfetchn 2000 0 big:0:$next\nmetadata big\n"
      . "fetchn 2000 0 big:0:$next\nfetchn 2000 0 big:0:5\n";
    ($rc, $out, $err) = run_cmd(\$in, $python, $probe, '127.0.0.1', $port_a, 'session');
    my @answers = split /^\.\n/m, $out;
    is(scalar(@answers), 5, 'five answers on one connection') or diag($out . $err);
    is($answers[1], $fresh, 'the Fetch after the last record: the records another connection gets');
    is($answers[2], "metadata answered\n", 'a Metadata request after a read-ahead is answered');
    is($answers[3], $fresh, 'the same Fetch after it reads as usual');
    is($answers[4], $from5, 'a Fetch at another offset: the records from that offset');
    my $log = substr(slurp_file($gwlog_a), $before);
    like($log, qr/Fetch: read ahead$/m, 'the second Fetch took the read-ahead');
    like($log, qr/Fetch: not the one read ahead: dropping its rows$/m,
        'the one at another offset dropped it');

    # A client silent after a Fetch: the gateway reads the read-ahead's
    # rows anyway (3 MB of records, 1 MB a Fetch: more than a socket
    # holds), so its backend does not wait to send them, its snapshot
    # holding back VACUUM; the next Fetch takes them.
    $node->safe_psql('postgres', q{
        SELECT eventlog.create_topic('ahead', 1, format => 'binary');
        SELECT count(*) FROM eventlog.produce_binary_batch('ahead',
          (SELECT array_agg(ROW(NULL, convert_to(repeat('v', 1000), 'UTF8'), NULL, NULL)::eventlog.message)
             FROM generate_series(1, 3000)), 0);
    });
    my ($sin, $sout, $serr) = ('', '', '');
    my $sh = IPC::Run::start([ $python, $probe, '127.0.0.1', $port_a, 'session' ],
        '<', \$sin, '>', \$sout, '2>', \$serr,
        IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
    $sin .= "fetch 0 ahead:0:0\n";
    $sh->pump until $sout =~ /^\.$/m;
    my ($alast) = $sout =~ /^ahead\/0 error=0 .* offsets=\S*?(\d+)$/m;
    ok(defined $alast && $alast < 2999, 'the first Fetch of 1 MB takes part of the 3 MB') or diag($sout . $serr);
    ok($node->poll_query_until('postgres', q{
        SELECT count(*) = 0 FROM pg_catalog.pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event = 'ClientWrite'}),
        'a silent client: no backend of the gateway waits to send its read-ahead');
    $before = -s $gwlog_a;
    my $anext = $alast + 1;
    $sin .= "fetch 0 ahead:0:$anext\n";
    $sh->pump until $sout =~ /^\.\n.*^\.$/ms;
    $sin = '';
    $sh->finish;
    like($sout, qr/^ahead\/0 error=0 .* offsets=$anext,/m, 'the next Fetch reads on from there');
    like(substr(slurp_file($gwlog_a), $before), qr/Fetch: read ahead$/m, 'from the read-ahead');
    $gwh_a->kill_kill;
}

# 4. The long poll, over two topics: a Fetch at the ends of bin/2 and js/0
# waits in the server; a rollback does not make it return; a commit in js does.
sub waiting_fetches
{
    return $node->safe_psql('postgres', q{
        SELECT count(*) FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'
           AND query LIKE '%_kafka_fetch%'});
}
my ($pout, $perr) = ('', '');
my $ph = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'fetchmany', 11, 600000,
                           'bin:2:12', 'js:0:10' ], '>', \$pout, '2>', \$perr);
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'
           AND query LIKE '%_kafka_fetch%'}), 'a Fetch with nothing to read waits in the server');
$node->safe_psql('postgres', q{
    BEGIN;
    SELECT eventlog.produce_binary('bin', NULL, '\x01', partition => 2);
    ROLLBACK;
});
# A later commit in another partition the Fetch does not wait on either.
$node->safe_psql('postgres', q{SELECT eventlog.produce_binary('bin', NULL, '\x02', partition => 0)});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'
           AND query LIKE '%_kafka_fetch%'}), 'after a rollback and a commit elsewhere it still waits');
$node->safe_psql('postgres', q{SELECT eventlog.produce('js', 'woke', '{"wake": true}')});
$ph->finish;
like($pout, qr{^js/0 error=0 hw=11 lso=11 start=0 records=1 offsets=10$}m,
    'a commit in the second topic wakes it with that record');
like($pout, qr{^bin/2 error=0 hw=13 lso=13 start=0 records=0 offsets=$}m,
    'and nothing of the rolled-back offset (12) in the first');

# Cancel during a wait: the gateway's session is cancelled; the Fetch gets an error, the gateway lives.
($pout, $perr) = ('', '');
$ph = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'fetchmany', 11, 600000, 'bin:1:12' ],
    '>', \$pout, '2>', \$perr);
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'
           AND query LIKE '%_kafka_fetch%'}), 'another Fetch waits');
$node->safe_psql('postgres', q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND query LIKE '%_kafka_fetch%'});
$ph->finish;
like($pout, qr{^bin/1 error=5 }m, 'pg_cancel_backend ends the wait: LEADER_NOT_AVAILABLE, which clients retry');

# Dropping a topic during a wait ends it: the topic is unknown now.
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('doomed', 1, format => 'binary')});
($pout, $perr) = ('', '');
$ph = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'fetchmany', 11, 600000, 'doomed:0:0' ],
    '>', \$pout, '2>', \$perr);
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'
           AND query LIKE '%_kafka_fetch%'}), 'a Fetch waits on a topic about to be dropped');
$node->safe_psql('postgres', q{SELECT eventlog.drop_topic('doomed')});
$ph->finish;
like($pout, qr{^doomed/0 error=3 }m, 'drop_topic ends the wait: UNKNOWN_TOPIC_OR_PARTITION');

# A client that hangs up during a wait: the gateway cancels the query, so
# its backend (and the snapshot that holds back VACUUM) goes at once, not
# after max_wait_ms (here 10 minutes; up to 24 days on the wire).
($pout, $perr) = ('', '');
$ph = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'fetchmany', 11, 600000, 'bin:1:12' ],
    '>', \$pout, '2>', \$perr);
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'
           AND query LIKE '%_kafka_fetch%'}), 'a Fetch waits, then its client hangs up');
$ph->kill_kill;
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_stat_activity
         WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'
           AND query LIKE '%_kafka_fetch%'}), 'the hang-up ends the wait in the server');
ok(wait_for_log($gwlog, qr/the client hung up during a query: cancelling it/),
   'and the gateway says why');

# 5. Retention: offsets below the log start.  Size retention (the oldest
# 64 kB segments go while the partition is above 100 kB) leaves the newest
# records for good once producing stops.
for my $i (1 .. 8)
{
    $node->safe_psql('postgres', q{
        SELECT count(*) FROM eventlog.produce_binary_batch('sized',
            (SELECT array_agg(ROW(NULL, convert_to(i || repeat('x', 1000), 'UTF8'), NULL, NULL)::eventlog.message)
               FROM generate_series(1, 20) i));
        SELECT pg_sleep(0.3);
    });
}
ok($node->poll_query_until('postgres', q{
    SELECT log_start_offset > 0 FROM eventlog.partitions WHERE topic = 'sized'}),
   'retention removed the oldest records of sized');
# Freeze the log start: no more size retention on sized, and a maintenance
# round that decided before the change (and may still remove a segment) is
# waited out: the log start must read the same twice, 2 s apart.
$node->safe_psql('postgres', q{SELECT eventlog.alter_topic('sized', retention_bytes => 1000000000000)});
my ($ls, $prev_ls) = ('', 'none');
for (1 .. 30)
{
    $ls = $node->safe_psql('postgres', q{SELECT log_start_offset FROM eventlog.partitions WHERE topic = 'sized'});
    last if $ls eq $prev_ls;
    $prev_ls = $ls;
    sleep 2;
}
is($ls, $prev_ls, 'the log start of sized settles once size retention is off');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 11, 'sized', 0, 0);
like($out, qr{^sized/0 error=1 hw=160 lso=160 start=$ls }m,
    'a Fetch below the log start: OFFSET_OUT_OF_RANGE, with the log start');
# Size retention may have removed every record (log start = high watermark):
# one more, kept now that retention is off, so that the consumer below has a
# record at or after the log start to land on.
$node->safe_psql('postgres', q{
    SELECT eventlog.produce_binary('sized', NULL, convert_to('after-the-reset', 'UTF8'))});
open $fh, '>', "$tmp/reset.py" or die;
print $fh <<'EOF';
import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({'bootstrap.servers': sys.argv[1], 'group.id': 'unused-063', 'enable.auto.commit': False,
              'auto.offset.reset': 'earliest'})
c.assign([TopicPartition('sized', 0, 0)])
m = c.poll(30)
while m is not None and m.error():
    m = c.poll(30)
print('first %d %s' % (m.offset(), m.value().decode()[:8]) if m else 'none')
EOF
close $fh;
SKIP:
{
    skip $no_rdkafka, 1 unless $rdkafka;
    ($rc, $out, $err) = run_cmd($python, "$tmp/reset.py", $addr);
    my $first_val = $node->safe_psql('postgres',
        qq{SELECT left(convert_from(value, 'UTF8'), 8) FROM eventlog.read_binary('sized', 0, $ls, 1)});
    is($out, "first $ls $first_val\n", 'auto.offset.reset=earliest after OFFSET_OUT_OF_RANGE: the log start offset');
}

# 6. Privileges: a role without consume gets TOPIC_AUTHORIZATION_FAILED.
$node->safe_psql('postgres', q{CREATE ROLE outsider LOGIN});
my ($gwh2, $port2, $gwlog2) = start_gateway('outsider', $node->connstr('postgres') . ' user=outsider');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port2, 'fetch', 11, 'bin', 0, 0);
like($out, qr{^bin/0 error=29 }m, 'Fetch without the consume privilege: TOPIC_AUTHORIZATION_FAILED');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port2, 'listoffsets', 5, 'bin', 2, $mid_ms);
like($out, qr{^bin/2 error=29 }m, 'ListOffsets by time without it: TOPIC_AUTHORIZATION_FAILED');
$node->safe_psql('postgres', q{SELECT eventlog.grant('bin', 'consume', 'outsider')});
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port2, 'fetch', 11, 'bin', 0, 0);
like($out, qr{^bin/0 error=0 hw=13 lso=13 start=0 records=13 }m, 'with the privilege granted: the records');
$gwh2->signal('TERM');
$gwh2->finish;

# Records far larger than the connection's average so far: the rows asked
# for follow that average (64 bytes on a new connection), and each
# partition's bytes stop PostgreSQL's rows, so a Fetch of one 512 kB record
# of a 40 MB partition does not bring all 80 of them into the gateway.
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('fat', 1, format => 'binary');
    SELECT count(*) FROM eventlog.produce_binary_batch('fat',
        (SELECT array_agg(ROW(NULL, convert_to(repeat(md5(i::text), 16384), 'UTF8'), NULL, NULL)::eventlog.message)
           FROM generate_series(1, 80) i));
});
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog._kafka_fetch(ARRAY['fat'], ARRAY[0], ARRAY[0::bigint], ARRAY[80], 0,
                                               ARRAY[1048576::bigint]) WHERE k_offset IS NOT NULL}),
   2, '_kafka_fetch stops a partition at its bytes: the records that start below them');
my ($gwh3, $port3) = start_gateway('fat', $node->connstr('postgres'));
my $gwpid3 = $gwh3->{KIDS}[0]{PID};
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port3, 'fetch', 12, 'fat', 0, 0,
    'part_bytes=1048576', 'max_bytes=52428800');
like($out, qr{^fat/0 error=0 hw=80 lso=80 start=0 records=1 offsets=0$}m, 'a Fetch of big records from a new connection');
my ($hwm) = slurp_file("/proc/$gwpid3/status") =~ /^VmHWM:\s+(\d+) kB/m;
cmp_ok($hwm, '<', 25 * 1024, 'and the gateway did not read the partition\'s 40 MB to answer it');
$gwh3->signal('TERM');
$gwh3->finish;

# 7. Hostile requests: an answer or a closed connection, never a crash.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetchhostile', 'bin');
is($rc, 0, 'the hostile probe ran') or diag($err);
like($out, qr/^max_bytes 2\^31-1, partition bytes 2\^31-1: answered, errors 0, rest=0$/m, 'absurd max_bytes: answered');
like($out, qr/^negative max_bytes and partition bytes: answered, errors 0, rest=0$/m, 'negative max_bytes: answered');
like($out, qr/^5000 partitions, most unknown: answered, errors 0,3, rest=0$/m, '5000 partitions: answered');
like($out, qr/^negative offsets: answered, errors 1, rest=0$/m, 'negative offsets: OFFSET_OUT_OF_RANGE');
like($out, qr/^offset 2\^63-1: answered, errors 1, rest=0$/m, 'the largest offset: OFFSET_OUT_OF_RANGE');
like($out, qr/^unknown and illegal topic names: answered, errors 3, rest=0$/m, 'unknown and illegal names: error 3');
like($out, qr/^a session that does not exist: answered, errors 70, rest=0$/m, 'an unknown session: error 70');
like($out, qr/^an incremental epoch without a session: answered, errors 71, rest=0$/m, 'an epoch without a session: 71');
like($out, qr/^isolation level 7: closed$/m, 'an unknown isolation level closes the connection');
like($out, qr/^a partition count past the bytes: closed$/m, 'a partition count past the bytes closes it');
like($out, qr/^200000 partitions: closed$/m, 'more than 100,000 partitions closes it');
like($out, qr/^list offsets timestamp -7: error=42$/m, 'ListOffsets of timestamp -7: INVALID_REQUEST');
like($out, qr/^list offsets timestamp -3: error=42$/m, 'ListOffsets of -3 (max timestamp, v7): INVALID_REQUEST');
like($out, qr/^list offsets timestamp 9223372036854775807: error=42$/m, 'ListOffsets of a time past timestamptz: INVALID_REQUEST');
($rc, $out, $err) = run_cmd('kcat', '-b', $addr, '-L');
is($rc, 0, 'the gateway still serves after all that');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'and so does the server');

$gwh->signal('TERM');
$gwh->finish;
is($gwh->result(0), 0, 'the gateway ends with status 0');
$node->stop;
done_testing();
