# The Kafka gateway's administrative APIs (src/kafka/api_create_topics.c,
# api_delete_topics.c, api_create_partitions.c, api_describe_configs.c,
# api_describe_cluster.c; docs/kafka.md): CreateTopics, DeleteTopics,
# CreatePartitions, DescribeConfigs and DescribeCluster as confluent_kafka's
# AdminClient (librdkafka), kafka-python's KafkaAdminClient and kcat use
# them, every effect checked from SQL; every version by a raw probe
# (kafka_probe.py); a role without the privileges; hostile requests; and
# the transaction APIs, not advertised, failing a transactional producer clearly.
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
my $probe = "$ENV{TESTDIR}/test/t/kafka_probe.py";
$probe = 'test/t/kafka_probe.py' unless -f $probe;

my $node = PostgreSQL::Test::Cluster->new('kafka_admin');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('sql-topic', 2);
    CREATE ROLE plain LOGIN;
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

sub sql { return $node->safe_psql('postgres', shift) }

# The topics SQL sees, one line each.
sub sql_topics
{
    return sql(q{SELECT name, partitions, format, retention, retention_bytes,
                        segment_interval, segment_bytes
                   FROM eventlog.topic_catalog ORDER BY name});
}

# Every topic has exactly its partitions and a segment for each: no
# partial state left by a failed command.
sub consistent
{
    return sql(q{
        SELECT count(*) FROM eventlog.topic_catalog t
         WHERE t.partitions <> (SELECT count(*) FROM eventlog.partition_catalog p
                                 WHERE p.topic_id = t.topic_id)
            OR EXISTS (SELECT FROM eventlog.partition_catalog p
                        WHERE p.topic_id = t.topic_id
                          AND NOT EXISTS (SELECT FROM eventlog.segment_catalog s
                                           WHERE s.topic_id = p.topic_id AND s.partition = p.partition))})
      . '/' . sql(q{
        SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'eventlog_segments' AND c.relkind = 'r'
           AND c.relname NOT IN (SELECT table_name FROM eventlog.segment_catalog)});
}

# The topics kcat -L lists, as name:partitions, sorted.
sub kcat_topics
{
    my ($rc, $out, $err) = run_cmd('kcat', '-b', $addr, '-L');
    my @t;
    push @t, "$1:$2" while $out =~ /^  topic "([^"]+)" with (\d+) partitions:/mg;
    return join(',', sort @t);
}

# 1. confluent_kafka's AdminClient.
my $ck_prelude = qq{
import sys
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions, ConfigResource
a = AdminClient({'bootstrap.servers': '$addr'})
def show(futs):
    for name in sorted(futs):
        try:
            futs[name].result(60)
            print(name, 'ok')
        except Exception as e:
            print(name, e.args[0].name() if hasattr(e.args[0], 'name') else e)
};
my ($rc, $out, $err) = run_cmd($python, '-c', $ck_prelude . q{
cfg = {'retention.ms': '3600000', 'retention.bytes': '1048576', 'segment.ms': '600000',
       'segment.bytes': '1048576', 'cleanup.policy': 'delete'}
show(a.create_topics([NewTopic('ck-a', 3, 1, config=cfg), NewTopic('ck-b', 1, -1)],
                     validate_only=True))
});
is($out, "ck-a ok\nck-b ok\n", 'AdminClient: validate_only accepts the topics') or diag($err);
is(sql(q{SELECT count(*) FROM eventlog.topic_catalog WHERE name LIKE 'ck-%'}), '0',
    'validate_only creates nothing');
is(kcat_topics(), 'sql-topic:2', 'kcat -L: nothing new');

($rc, $out, $err) = run_cmd($python, '-c', $ck_prelude . q{
cfg = {'retention.ms': '3600000', 'retention.bytes': '1048576', 'segment.ms': '600000',
       'segment.bytes': '1048576', 'cleanup.policy': 'delete'}
show(a.create_topics([NewTopic('ck-a', 3, 1, config=cfg), NewTopic('ck-b', 1, -1),
                      NewTopic('ck-forever', 2, 1, config={'retention.ms': '-1'})]))
});
is($out, "ck-a ok\nck-b ok\nck-forever ok\n", 'AdminClient: create_topics') or diag($err);
is(sql_topics(), <<'EOT' =~ s/\n\z//r, 'SQL: binary topics with the partitions and configs asked for');
ck-a|3|binary|01:00:00|1048576|00:10:00|1048576
ck-b|1|binary|7 days||1 day|1073741824
ck-forever|2|binary|||1 day|1073741824
sql-topic|2|json|7 days||1 day|1073741824
EOT
is(kcat_topics(), 'ck-a:3,ck-b:1,ck-forever:2,sql-topic:2', 'kcat -L: the new topics and their partitions');

($rc, $out, $err) = run_cmd($python, '-c', $ck_prelude . q{
show(a.create_topics([NewTopic('ck-a', 1, 1), NewTopic('bad name', 1, 1), NewTopic('..', 1, 1),
                      NewTopic('x' * 250, 1, 1), NewTopic('ck-compact', 1, 1, config={'cleanup.policy': 'compacted'}),
                      NewTopic('ck-unknown', 1, 1, config={'min.insync.replicas': '2'}),
                      NewTopic('ck-rf', 1, 3), NewTopic('ck-zero', 1, 1, config={'retention.ms': '0'}),
                      NewTopic('ck-seg', 1, 1, config={'segment.bytes': '100'}),
                      NewTopic('ck-many', 100000, 1)]))
});
is($out =~ s/^x{250} /XLONG /mr, <<'EOT', 'AdminClient: each bad topic gets its error (XLONG: 250 x)') or diag($err);
.. TOPIC_EXCEPTION
bad name TOPIC_EXCEPTION
ck-a TOPIC_ALREADY_EXISTS
ck-compact INVALID_CONFIG
ck-many INVALID_PARTITIONS
ck-rf INVALID_REPLICATION_FACTOR
ck-seg INVALID_CONFIG
ck-unknown INVALID_CONFIG
ck-zero INVALID_CONFIG
XLONG TOPIC_EXCEPTION
EOT
is(kcat_topics(), 'ck-a:3,ck-b:1,ck-forever:2,sql-topic:2', 'kcat -L: none of them was created');
is(consistent(), '0/0', 'no partial state');

($rc, $out, $err) = run_cmd($python, '-c', $ck_prelude . q{
fs = a.describe_configs([ConfigResource('topic', 'ck-a'), ConfigResource('topic', 'ck-b'),
                         ConfigResource('broker', '0')])
for r in sorted(fs, key=lambda r: (str(r.restype), r.name)):
    for k, e in sorted(fs[r].result(60).items()):
        print(r.name, k, e.value, e.source, e.is_read_only)
});
is($rc, 0, 'AdminClient: describe_configs') or diag($err);
like($out, qr/^ck-a retention\.ms 3600000 1 False$/m, 'describe_configs: retention.ms of ck-a, a topic override');
like($out, qr/^ck-a retention\.bytes 1048576 1 False$/m, 'describe_configs: retention.bytes');
like($out, qr/^ck-a segment\.ms 600000 1 False$/m, 'describe_configs: segment.ms');
like($out, qr/^ck-a segment\.bytes 1048576 1 False$/m, 'describe_configs: segment.bytes');
like($out, qr/^ck-a cleanup\.policy delete 5 False$/m, 'describe_configs: cleanup.policy delete, the default');
like($out, qr/^ck-a eventlog\.format binary 1 True$/m, 'describe_configs: the format');
like($out, qr/^ck-b retention\.ms 604800000 5 False$/m, 'describe_configs: a default retention.ms');
like($out, qr/^ck-b retention\.bytes -1 5 False$/m, 'describe_configs: no size limit is -1');
like($out, qr/^0 auto\.create\.topics\.enable false 4 True$/m, 'describe_configs: the broker');
like($out, qr/^0 num\.partitions 1 5 True$/m, 'describe_configs: the broker\'s default partitions');

($rc, $out, $err) = run_cmd($python, '-c', $ck_prelude . q{
show(a.create_partitions([NewPartitions('ck-b', 4)], validate_only=True))
print('--')
show(a.create_partitions([NewPartitions('ck-b', 4), NewPartitions('ck-a', 2),
                          NewPartitions('ck-forever', 2), NewPartitions('nosuch', 3)]))
});
is($out, "ck-b ok\n--\nck-a INVALID_PARTITIONS\nck-b ok\nck-forever INVALID_PARTITIONS\nnosuch UNKNOWN_TOPIC_OR_PART\n",
    'AdminClient: create_partitions (validate_only, growth, no shrink, no same count)') or diag($err);
is(sql(q{SELECT string_agg(name || ':' || partitions, ',' ORDER BY name) FROM eventlog.topic_catalog}),
    'ck-a:3,ck-b:4,ck-forever:2,sql-topic:2', 'SQL: ck-b has 4 partitions, the others are unchanged');
is(kcat_topics(), 'ck-a:3,ck-b:4,ck-forever:2,sql-topic:2', 'kcat -L: ck-b has 4 partitions');
is(consistent(), '0/0', 'every partition has its segment');

($rc, $out, $err) = run_cmd($python, '-c', $ck_prelude . q{
show(a.delete_topics(['ck-b', 'nosuch']))
});
is($out, "ck-b ok\nnosuch UNKNOWN_TOPIC_OR_PART\n", 'AdminClient: delete_topics') or diag($err);
is(kcat_topics(), 'ck-a:3,ck-forever:2,sql-topic:2', 'kcat -L: ck-b is gone');
is(sql(q{SELECT count(*) FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog t USING (topic_id)
          WHERE t.name = 'ck-b'}) . consistent(), '00/0', 'SQL: ck-b and its segments are gone');

($rc, $out, $err) = run_cmd($python, '-c', $ck_prelude . q{
print(hasattr(a, 'describe_cluster'))
});
note("confluent_kafka has describe_cluster: $out");

# 2. kafka-python's KafkaAdminClient.
my $kp_prelude = qq{
from kafka.admin import KafkaAdminClient, NewTopic, NewPartitions, ConfigResource, ConfigResourceType
a = KafkaAdminClient(bootstrap_servers='$addr')
};
($rc, $out, $err) = run_cmd($python, '-c', $kp_prelude . q{
r = a.create_topics([NewTopic('kp-a', 2, 1, topic_configs={'retention.ms': '-1', 'retention.bytes': '2097152'}),
                     NewTopic('kp-b', 1, 1)])
print([(t[0], t[1]) for t in r.topic_errors])
try:
    a.create_topics([NewTopic('kp-a', 1, 1)])
except Exception as e:
    print(type(e).__name__, e.errno)
r = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, 'kp-a')])
for res in r:
    for rr in res.resources:
        print(rr[0], rr[3], sorted((c[0], c[1]) for c in rr[4]))
a.close()
});
is($out, <<'EOT', 'kafka-python: create_topics, describe_configs') or diag($err);
[('kp-a', 0), ('kp-b', 0)]
TopicAlreadyExistsError 36
0 kp-a [('cleanup.policy', 'delete'), ('delete.retention.ms', '86400000'), ('eventlog.format', 'binary'), ('max.compaction.lag.ms', '9223372036854775807'), ('min.compaction.lag.ms', '0'), ('retention.bytes', '2097152'), ('retention.ms', '-1'), ('segment.bytes', '1073741824'), ('segment.ms', '86400000')]
EOT
is(sql(q{SELECT string_agg(concat_ws(':', name, partitions, format, coalesce(retention::text, 'forever'),
                                     coalesce(retention_bytes::text, 'none')), ',' ORDER BY name)
           FROM eventlog.topic_catalog WHERE name LIKE 'kp-%'}),
    'kp-a:2:binary:forever:2097152,kp-b:1:binary:7 days:none', 'SQL: the topics kafka-python created');
is(kcat_topics(), 'ck-a:3,ck-forever:2,kp-a:2,kp-b:1,sql-topic:2', 'kcat -L lists them');
($rc, $out, $err) = run_cmd($python, '-c', $kp_prelude . q{
r = a.create_partitions({'kp-b': NewPartitions(3)})
print([(t[0], t[1]) for t in r.topic_errors])
try:
    a.delete_topics(['kp-a', 'nosuch'])
except Exception as e:
    print(type(e).__name__, e.errno)
a.close()
});
is($out, "[('kp-b', 0)]\nUnknownTopicOrPartitionError 3\n", 'kafka-python: create_partitions, delete_topics (it raises the first error; the other topic is deleted)') or diag($err);
is(sql(q{SELECT string_agg(name || ':' || partitions, ',' ORDER BY name) FROM eventlog.topic_catalog WHERE name LIKE 'kp-%'}),
    'kp-b:3', 'SQL: kp-b grew to 3 partitions, kp-a is gone');
is(kcat_topics(), 'ck-a:3,ck-forever:2,kp-b:3,sql-topic:2', 'kcat -L after kafka-python');

# 3. A role without the privileges, through a gateway that logs in as it.
my $pport = PostgreSQL::Test::Cluster::get_free_port();
my ($ph, $plog) = start_gateway('plain', $node->connstr('postgres') . ' user=plain',
    '--listen', "127.0.0.1:$pport");
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'create', 5, 'create', 'plain-t:1:1');
like($out, qr/^topic plain-t error=29 partitions=-1 rf=-1 configs= msg=permission denied for function create_topic\nrest=0$/,
    'CreateTopics without EXECUTE on create_topic: TOPIC_AUTHORIZATION_FAILED with PostgreSQL\'s message') or diag($err);
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'create', 5, 'validate', 'plain-t:1:1');
like($out, qr/^topic plain-t error=29 /, 'and so with validate_only');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'delete', 5, 'ck-a');
like($out, qr/^topic ck-a error=29 msg=.*\nrest=0$/, 'DeleteTopics of a topic it does not own: TOPIC_AUTHORIZATION_FAILED');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'partitions', 3, 'create', 'ck-a:5');
like($out, qr/^topic ck-a error=29 msg=.*\nrest=0$/, 'CreatePartitions of a topic it does not own: TOPIC_AUTHORIZATION_FAILED');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'configs', 4, '2:ck-a:retention.ms');
like($out, qr/^resource 2:ck-a error=0 configs=retention\.ms=3600000\/1~1\/t5\/doc\nrest=0$/,
    'DescribeConfigs: anyone may describe a topic (the catalog is public)');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'cluster', 0, 'ops', 1);
like($out, qr/ ops=1280 rest=0$/, 'DescribeCluster: DESCRIBE and DESCRIBE_CONFIGS, not CREATE');
is(sql(q{SELECT string_agg(name || ':' || partitions, ',' ORDER BY name) FROM eventlog.topic_catalog WHERE name IN ('plain-t', 'ck-a')}),
    'ck-a:3', 'SQL: nothing changed');
sql(q{GRANT EXECUTE ON FUNCTION eventlog.create_topic TO plain});
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'cluster', 0, 'ops', 1);
like($out, qr/ ops=1312 rest=0$/, 'DescribeCluster: and CREATE once it may create topics');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'create', 5, 'create', 'plain-t:1:1');
like($out, qr/^topic plain-t error=0 /, 'with EXECUTE on create_topic the role creates a topic');
is(sql(q{SELECT owner FROM eventlog.topic_catalog WHERE name = 'plain-t'}), 'plain', 'SQL: the role owns it');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'partitions', 3, 'create', 'plain-t:2');
is($out, "topic plain-t error=0\nrest=0\n", 'and grows it');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $pport, 'delete', 5, 'plain-t');
is($out, "topic plain-t error=0\nrest=0\n", 'and drops it');
is(sql(q{SELECT count(*) FROM eventlog.topic_catalog WHERE name = 'plain-t'}), '0', 'SQL: it is gone');
$ph->signal('TERM');
$ph->finish;

# 4. Every version, over the raw protocol.
my $cfgs = 'cleanup.policy=delete/5,retention.ms=1000/1,retention.bytes=-1/5,segment.ms=86400000/5,'
  . 'segment.bytes=1073741824/5,delete.retention.ms=86400000/5,min.compaction.lag.ms=0/5,'
  . 'max.compaction.lag.ms=9223372036854775807/5,eventlog.format=binary/1/ro';
for my $v (0 .. 7)
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'create', $v, 'create',
        "pv-$v:2:-1:retention.ms=1000");
    my $line = "topic pv-$v error=0" . ($v >= 5 ? " partitions=2 rf=1 configs=$cfgs" : '') . ($v >= 7 ? ' id=set' : '');
    is($out, "$line\nrest=0\n", "CreateTopics v$v") or diag($err);
}
is(sql(q{SELECT string_agg(name || ':' || partitions || ':' || format || ':' || retention, ',' ORDER BY name)
           FROM eventlog.topic_catalog WHERE name LIKE 'pv-%'}),
    join(',', map { "pv-$_:2:binary:00:00:01" } 0 .. 7), 'SQL: every version created its topic');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'create', 7, 'validate', 'ck-a:1:1', 'vo:1:1',
    'pv-0:1:1', 'dup:1:1', 'dup:1:1', 'asg:-1:-1::assign', 'nul:1:1:retention.ms=NULL', 'big:1:1:retention.ms=9223372036854775807',
    'mcl:1:1:max.compaction.lag.ms=9223372036854775807', 'seg:1:1:segment.ms=9223372036854775807');
is($out, <<'EOT', 'CreateTopics v7 validate_only: errors with messages; a valid topic with its configs, no id; Long.MAX_VALUE for "never"');
topic ck-a error=36 partitions=-1 rf=-1 configs= id=zero msg=topic "ck-a" already exists
topic vo error=0 partitions=1 rf=1 configs=cleanup.policy=delete/5,retention.ms=604800000/5,retention.bytes=-1/5,segment.ms=86400000/5,segment.bytes=1073741824/5,delete.retention.ms=86400000/5,min.compaction.lag.ms=0/5,max.compaction.lag.ms=9223372036854775807/5,eventlog.format=binary/1/ro id=zero
topic pv-0 error=36 partitions=-1 rf=-1 configs= id=zero msg=topic "pv-0" already exists
topic dup error=42 partitions=-1 rf=-1 configs= id=zero msg=topic named more than once in the request
topic dup error=42 partitions=-1 rf=-1 configs= id=zero msg=topic named more than once in the request
topic asg error=39 partitions=-1 rf=-1 configs= id=zero msg=manual replica assignment is not supported: the gateways lead every partition
topic nul error=40 partitions=-1 rf=-1 configs= id=zero msg=config retention.ms has a null value
topic big error=0 partitions=1 rf=1 configs=cleanup.policy=delete/5,retention.ms=-1/1,retention.bytes=-1/5,segment.ms=86400000/5,segment.bytes=1073741824/5,delete.retention.ms=86400000/5,min.compaction.lag.ms=0/5,max.compaction.lag.ms=9223372036854775807/5,eventlog.format=binary/1/ro id=zero
topic mcl error=0 partitions=1 rf=1 configs=cleanup.policy=delete/5,retention.ms=604800000/5,retention.bytes=-1/5,segment.ms=86400000/5,segment.bytes=1073741824/5,delete.retention.ms=86400000/5,min.compaction.lag.ms=0/5,max.compaction.lag.ms=9223372036854775807/5,eventlog.format=binary/1/ro id=zero
topic seg error=0 partitions=1 rf=1 configs=cleanup.policy=delete/5,retention.ms=604800000/5,retention.bytes=-1/5,segment.ms=1000000000000000/1,segment.bytes=1073741824/5,delete.retention.ms=86400000/5,min.compaction.lag.ms=0/5,max.compaction.lag.ms=9223372036854775807/5,eventlog.format=binary/1/ro id=zero
rest=0
EOT
is(sql(q{SELECT count(*) FROM eventlog.topic_catalog WHERE name IN ('vo', 'dup', 'asg', 'nul', 'big', 'mcl', 'seg')}), '0',
    'SQL: validate_only created nothing');

for my $v (0 .. 3)
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'partitions', $v, 'validate', "pv-$v:5");
    is($out, "topic pv-$v error=0\nrest=0\n", "CreatePartitions v$v validate_only");
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'partitions', $v, 'create', "pv-$v:3");
    is($out, "topic pv-$v error=0\nrest=0\n", "CreatePartitions v$v");
}
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'partitions', 3, 'create', 'pv-4:3:assign',
    'pv-5:2', 'pv-6:0', 'pv-7:5000', 'pv-7:6', 'bad!:3');
is($out, <<'EOT', 'CreatePartitions: assignments, no growth, absurd counts, duplicates, bad names');
topic pv-4 error=39 msg=manual replica assignment is not supported: the gateways lead every partition
topic pv-5 error=37 msg=the topic has 2 partitions, and 2 were asked for: the count can only grow
topic pv-6 error=37 msg=the number of partitions must be at least 1
topic pv-7 error=42 msg=topic named more than once in the request
topic pv-7 error=42 msg=topic named more than once in the request
topic bad! error=17 msg=invalid topic name
rest=0
EOT
is(sql(q{SELECT string_agg(name || ':' || partitions, ',' ORDER BY name) FROM eventlog.topic_catalog WHERE name LIKE 'pv-%'}),
    'pv-0:3,pv-1:3,pv-2:3,pv-3:3,pv-4:2,pv-5:2,pv-6:2,pv-7:2', 'SQL: v0-3 grew their topics to 3, validate_only and errors left them');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'partitions', 3, 'create', 'pv-7:5000');
like($out, qr/^topic pv-7 error=37 msg=too many partitions\nrest=0$/, 'CreatePartitions past eventlog.max_partitions: INVALID_PARTITIONS');
is(consistent(), '0/0', 'no partial state');

for my $v (0 .. 4)
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'configs', $v,
        '2:ck-a:retention.ms,cleanup.policy,nosuch', '2:nosuch', '4:0:num.partitions', '4:5');
    # name=value/source (v0: is_default)[/ro][~synonym's source][/type/doc]
    my ($c, $r, $b) = $v == 0 ? ('1', '0', '1/ro') : $v < 3 ? ('5~5', '1~1', '5/ro~5')
      : ('5~5/t7/doc', '1~1/t5/doc', '5/ro~5/t3/doc');
    is($out, "resource 2:ck-a error=0 configs=cleanup.policy=delete/$c,retention.ms=3600000/$r\n"
        . "resource 2:nosuch error=3 msg=no such topic configs=\n"
        . "resource 4:0 error=0 configs=num.partitions=1/$b\n"
        . "resource 4:5 error=42 msg=no such broker: a broker is named by its id in --brokers configs=\n"
        . "rest=0\n", "DescribeConfigs v$v") or diag($err);
}

($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'metadata', 2);
my ($cluster_id) = $out =~ /^cluster (\S+) controller 0$/m;
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'cluster', 0, 'noops', 1);
is($out, "error=0 msg=None endpoint=None cluster=$cluster_id controller=0 brokers=0=127.0.0.1:$port ops=-2147483648 rest=0\n",
    'DescribeCluster v0: Metadata\'s cluster id, this gateway the controller and the broker');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'cluster', 1, 'ops', 1);
is($out, "error=0 msg=None endpoint=1 cluster=$cluster_id controller=0 brokers=0=127.0.0.1:$port ops=1312 rest=0\n",
    'DescribeCluster v1 with the authorized operations of a superuser');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'cluster', 1, 'noops', 2);
is($out, "error=115 msg=only brokers can be described: the gateways have no separate controllers endpoint=2 cluster=$cluster_id controller=-1 brokers= ops=-2147483648 rest=0\n",
    'DescribeCluster v1 of controllers: UNSUPPORTED_ENDPOINT_TYPE');

for my $v (0 .. 5)
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'delete', $v, "pv-$v");
    is($out, "topic pv-$v error=0\nrest=0\n", "DeleteTopics v$v");
}
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'delete', 6, 'byid', 'pv-6', 'nosuch');
is($out, "topic pv-6 error=0 id=set\ntopic None error=100 id=set msg=no such topic\nrest=0\n",
    'DeleteTopics v6 by topic id: the name in the answer; an unknown id: UNKNOWN_TOPIC_ID');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'delete', 6, 'pv-7', 'pv-7', '..');
is($out, "topic pv-7 error=42 id=zero msg=topic named more than once in the request\n"
    . "topic pv-7 error=42 id=zero msg=topic named more than once in the request\n"
    . "topic .. error=17 id=zero msg=invalid topic name\nrest=0\n", 'DeleteTopics v6: duplicates and bad names');
is(sql(q{SELECT string_agg(name, ',' ORDER BY name) FROM eventlog.topic_catalog WHERE name LIKE 'pv-%'}),
    'pv-7', 'SQL: the deleted topics are gone');
is(consistent(), '0/0', 'no partial state');

# 5. Hostile requests: thousands of topics, empty and illegal names, absurd
# counts; each entry gets an error, nothing is half made, the gateway lives.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'adminhostile');
note($out);
is($out, <<'EOT', 'hostile administrative requests: every entry answered (error:count), the bound closes') or diag($err);
create v0 3005 answers: 0:1 17:2004 37:997 38:1 42:2 rest=0
create v4 3005 answers: 17:2004 36:1 37:997 38:1 42:2 rest=0
create v7 3005 answers: 17:2004 36:1 37:997 38:1 42:2 rest=0
delete v6 3004 answers: 100:1 17:1 3:3001 42:1 rest=0
partitions v3 3003 answers: 17:1 3:2 37:3000 rest=0
configs v4 3006 answers: 17:1 3:3001 42:4 rest=0
create of 10001 topics: closed
EOT
is(consistent(), '0/0', 'no partial state after them');
is(sql(q{SELECT string_agg(name, ',' ORDER BY name) FROM eventlog.topic_catalog WHERE name LIKE 'h-%' OR name LIKE 'm-%'}),
    'h-ok', 'SQL: only the one valid topic of them was created (by CreateTopics v0, which has no validate_only)');
like(slurp_file($gwlog), qr/CreateTopics request names 10001 topics, more than 10000: closing/, 'the bound is logged');
is(kcat_topics() =~ /ck-a:3/ ? 1 : 0, 1, 'kcat -L still works');

# Mutated administrative requests of every version (bytes after the api
# key and version changed, frames cut short): each answered or closed.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'adminmutations', 1000, 65);
like($out, qr/^(?:answered=\d+ )?closed=\d+\n\z/, '1000 mutated administrative requests: each answered or closed') or diag($err);
note("mutated administrative requests: $out");
is(consistent(), '0/0', 'no partial state after them');
is(kcat_topics() =~ /ck-a:3/ ? 1 : 0, 1, 'kcat -L still works after them');

# One topic of a request failing leaves the others.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'create', 4, 'create', 'one:2:1', 'huge:100000:1', 'two:1:1');
like($out, qr/^topic one error=0\ntopic huge error=37 msg=too many partitions\ntopic two error=0\nrest=0$/,
    'a request with one failing topic: the others are created (topics are independent, as in Kafka)');
is(sql(q{SELECT string_agg(name || ':' || partitions, ',' ORDER BY name) FROM eventlog.topic_catalog WHERE name IN ('one', 'huge', 'two')}),
    'one:2,two:1', 'SQL: the failing one left nothing');
is(consistent(), '0/0', 'no partial state');

# 6. The transaction APIs are advertised (081 tests them; InitProducerId:
# 080), and an API key the gateway does not have closes the connection.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'apiversions', 3);
like($out, qr/,22:0-4,24:0-3,25:0-3,26:0-3,28:0-3,/, 'ApiVersions advertises InitProducerId and the transaction APIs');
like($out, qr/19:0-7,20:0-6,22:0-4,(?:\d+:\d+-\d+,)*32:0-4,(?:\d+:\d+-\d+,)*37:0-3,(?:\d+:\d+-\d+,)*60:0-1/, 'and the administrative APIs');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'unsupported', 27);
is($out, "api key 27: closed\n", 'a WriteTxnMarkers request (broker to broker) closes the connection');
like(slurp_file($gwlog), qr/unknown or unsupported API key 27 \(correlation id 3\): closing/,
    'and the log says why');

# 7. Compacted topics (issue 17): Kafka's compaction configs map to
# create_topic's settings, and DescribeConfigs shows them.
($rc, $out, $err) = run_cmd($python, '-c', $ck_prelude . q{
show(a.create_topics([NewTopic('ck-compacted', 1, 1, config={'cleanup.policy': 'compact,delete',
    'delete.retention.ms': '60000', 'min.compaction.lag.ms': '1000', 'max.compaction.lag.ms': '3600000'}),
                      NewTopic('ck-lags', 1, 1, config={'cleanup.policy': 'compact',
    'min.compaction.lag.ms': '7200000', 'max.compaction.lag.ms': '3600000'})]))
fs = a.describe_configs([ConfigResource('topic', 'ck-compacted')])
for r in fs:
    for k, e in sorted(fs[r].result(60).items()):
        if 'compact' in k or 'delete' in k or k == 'cleanup.policy':
            print(k, e.value, e.source)
});
is($out, <<'EOT', 'AdminClient: a compacted topic created and described; bad lags are INVALID_CONFIG') or diag($err);
ck-compacted ok
ck-lags INVALID_CONFIG
cleanup.policy compact,delete 1
delete.retention.ms 60000 1
max.compaction.lag.ms 3600000 1
min.compaction.lag.ms 1000 1
EOT
is(sql(q{SELECT concat_ws(':', cleanup_policy, delete_retention, min_compaction_lag, max_compaction_lag)
           FROM eventlog.topic_catalog WHERE name = 'ck-compacted'}),
    'compact,delete:00:01:00:00:00:01:01:00:00', 'SQL: the compacted topic\'s settings');

$gwh->signal('TERM');
$gwh->finish;
is($? >> 8, 0, 'the gateway ends with status 0');

done_testing();
