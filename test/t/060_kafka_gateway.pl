# The Kafka gateway, pg_eventlog_kafka (src/kafka/, docs/kafka.md): its
# command line; Metadata and ApiVersions as real Kafka clients see them
# (kcat, confluent_kafka's AdminClient on librdkafka, kafka-python), each
# compared with what SQL says; every Metadata version and ApiVersions'
# unsupported-version answer, by a raw probe (kafka_probe.py); broken frames
# and mutated requests close only their own connection; --max-connections;
# --brokers spreads leadership the same way on every gateway; SIGTERM cancels
# a query in flight and ends the gateway with status 0.
#
# The gateway is the installed one ($(pg_config --bindir)): this test builds
# nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use JSON::PP;
use Test::More;
use KafkaGatewayTest;

my $python = '/usr/bin/python3';
my $probe = "$ENV{TESTDIR}/test/t/kafka_probe.py";
$probe = 'test/t/kafka_probe.py' unless -f $probe;

my $node = PostgreSQL::Test::Cluster->new('kafka');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('orders', 3);
    SELECT eventlog.create_topic('audit.log', 1);
    SELECT eventlog.create_topic('k-many_parts', 7);
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
ok(-x $gw, 'the gateway is installed beside pg_config');

# 1. The command line.
my ($rc, $out, $err) = run_cmd($gw, '--help');
is($rc, 0, '--help exits 0');
like($out, qr/^usage: pg_eventlog_kafka --listen HOST:PORT --dsn CONNINFO \[OPTION\]\.\.\.$/m,
    '--help prints the usage line');
like($out, qr/--max-request-bytes N +largest request accepted \(default 104857600\)/,
    '--help gives the defaults');
($rc, $out, $err) = run_cmd($gw, '--version');
is($rc, 0, '--version exits 0');
like($out, qr/^pg_eventlog_kafka \(pg_eventlog\) \d+\.\d+\.\d+\n\z/, '--version prints the version');

my @bad = (
    [ [ '--bogus' ], qr/^pg_eventlog_kafka: unknown option "--bogus"$/m ],
    [ [ '--listen', '127.0.0.1:9092' ], qr/^pg_eventlog_kafka: --dsn is required$/m ],
    [ [ '--dsn', 'dbname=x' ], qr/^pg_eventlog_kafka: --listen is required$/m ],
    [ [ '--listen', '127.0.0.1', '--dsn', 'x' ], qr/invalid --listen address "127\.0\.0\.1"/ ],
    [ [ '--listen', '127.0.0.1:70000', '--dsn', 'x' ], qr/invalid --listen address/ ],
    [ [ '--listen', '0.0.0.0:9092', '--dsn', 'x' ], qr/accepts on every address: give --advertise/ ],
    [ [ '--listen', '127.0.0.1:9092', '--dsn', 'x', '--max-request-bytes', '10' ],
      qr/invalid --max-request-bytes "10"/ ],
    [ [ '--listen', '127.0.0.1:9092', '--dsn', 'x', '--max-connections', '0' ],
      qr/invalid --max-connections "0"/ ],
    [ [ '--listen', '127.0.0.1:9092', '--dsn', 'x', '--log-level', 'loud' ],
      qr/invalid --log-level "loud"/ ],
    [ [ '--listen', '127.0.0.1:9092', '--dsn', 'x', '--brokers', 'a:1,b:2' ],
      qr/this gateway's address 127\.0\.0\.1:9092 \(--advertise, else --listen\) is not in --brokers/ ],
    [ [ '--listen', '127.0.0.1:9092', '--dsn', 'x', '--brokers', '127.0.0.1:9092,127.0.0.1:9092' ],
      qr/broker "127\.0\.0\.1:9092" is listed twice/ ],
    [ [ '--listen', '127.0.0.1:9092', '--dsn', 'x', 'extra' ], qr/unexpected argument "extra"/ ],
    [ [ '--listen' ], qr/option "--listen" needs a value/ ]);
for my $case (@bad)
{
    my ($args, $msg) = @$case;
    ($rc, $out, $err) = run_cmd($gw, @$args);
    is($rc, 2, "exit status 2 for: @$args");
    like($err, $msg, "and the reason for: @$args");
    like($err, qr/^usage: pg_eventlog_kafka --listen HOST:PORT --dsn CONNINFO/m,
        "and a usage line for: @$args");
}

# 2. A gateway on a free port.
my $tmp = PostgreSQL::Test::Utils::tempdir();

sub start_gateway
{
    my ($name, @args) = @_;
    return spawn_gateway($gw, $tmp, $name, qr/serving database/, '--dsn', $node->connstr('postgres'), @args);
}

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $addr = "127.0.0.1:$port";
my ($gwh, $gwlog) = start_gateway('main', '--listen', $addr, '--log-level', 'debug');
like(slurp_file($gwlog), qr/serving database "postgres" as role "\w+" \(pg_eventlog \d+\.\d+\.\d+\)/,
    'the gateway checked the database at start');

my %sql_topics = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', 'SELECT name, partitions FROM eventlog.topic_catalog');

# 3. kcat.
($rc, $out, $err) = run_cmd('kcat', '-b', $addr, '-L');
is($rc, 0, 'kcat -L succeeds') or diag($err);
like($out, qr/^ 1 brokers:\n  broker 0 at 127\.0\.0\.1:$port \(controller\)$/m, 'kcat -L: one broker, the controller');
like($out, qr/^ 3 topics:$/m, 'kcat -L: three topics');
for my $t (sort keys %sql_topics)
{
    like($out, qr/^  topic "\Q$t\E" with $sql_topics{$t} partitions:$/m,
        "kcat -L: topic $t with its $sql_topics{$t} partitions");
}
like($out, qr/^    partition 2, leader 0, replicas: 0, isrs: 0$/m, 'kcat -L: leader, replicas and ISR are node 0');

($rc, $out, $err) = run_cmd('kcat', '-b', $addr, '-L', '-J');
is($rc, 0, 'kcat -L -J succeeds') or diag($err);
my $md = eval { decode_json($out) };
ok($md, 'kcat -J prints JSON') or diag($out);
is_deeply({ map { $_->{topic} => scalar @{ $_->{partitions} } } @{ $md->{topics} } },
    \%sql_topics, 'kcat -J: the topics and partition counts SQL created');
is_deeply($md->{brokers}, [ { id => 0, name => $addr } ], 'kcat -J: the broker');
is($md->{controllerid}, 0, 'kcat -J: the controller');

($rc, $out, $err) = run_cmd('kcat', '-b', $addr, '-L', '-t', 'nosuch');
like($out . $err, qr/topic "nosuch" with 0 partitions: Broker: Unknown topic or partition/,
    'kcat -L -t of a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION');

# 4. confluent_kafka's AdminClient (librdkafka).
($rc, $out, $err) = run_cmd($python, '-c', qq{
from confluent_kafka.admin import AdminClient
md = AdminClient({'bootstrap.servers': '$addr'}).list_topics(timeout=60)
print('cluster', md.cluster_id, 'controller', md.controller_id)
for b in md.brokers.values():
    print('broker', b.id, b.host, b.port)
for t in sorted(md.topics):
    tm = md.topics[t]
    print('topic', t, len(tm.partitions), tm.error,
          sorted({(p.leader, tuple(p.replicas), tuple(p.isrs)) for p in tm.partitions.values()}))
});
is($rc, 0, 'AdminClient.list_topics() succeeds') or diag($err);
my ($cluster_id) = $out =~ /^cluster (\S+) controller 0$/m;
like($cluster_id, qr/^[A-Za-z0-9_-]{22}$/, 'AdminClient: a cluster id of Kafka\'s form, controller 0');
like($out, qr/^broker 0 127\.0\.0\.1 $port$/m, 'AdminClient: the broker');
for my $t (sort keys %sql_topics)
{
    like($out, qr/^topic \Q$t\E $sql_topics{$t} None \[\(0, \(0,\), \(0,\)\)\]$/m,
        "AdminClient: topic $t, $sql_topics{$t} partitions led by node 0");
}

# The same cluster id from a second connection, and over the raw protocol.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'metadata', 2);
like($out, qr/^cluster \Q$cluster_id\E controller 0$/m, 'the cluster id is stable');

# 5. kafka-python.
($rc, $out, $err) = run_cmd($python, '-c', qq{
from kafka import KafkaConsumer
c = KafkaConsumer(bootstrap_servers='$addr')
print('topics', ','.join(sorted(c.topics())))
print('orders', sorted(c.partitions_for_topic('orders')))
print('nosuch', c.partitions_for_topic('nosuch'))
c.close()
});
is($rc, 0, 'kafka-python KafkaConsumer succeeds') or diag($err);
is($out, "topics " . join(',', sort keys %sql_topics) . "\norders [0, 1, 2]\nnosuch None\n",
    'kafka-python: topics() and partitions_for_topic()');

# What the clients sent (the gateway's debug log), by client id.
my $log = slurp_file($gwlog);
my %seen;
$seen{$3}{"$1 v$2"}++
  while $log =~ /: (ApiVersions|Metadata) v(\d+), correlation id \d+, client id "(rdkafka|kafka-python-[\d.]+)"/g;
note("$_ sent: " . join(', ', sort keys %{ $seen{$_} })) for sort keys %seen;
ok($seen{rdkafka}{'ApiVersions v3'} && $seen{rdkafka}{'Metadata v4'},
    'librdkafka sent ApiVersions v3 and Metadata v4');
my ($kp) = grep { /^kafka-python/ } keys %seen;
ok($kp && $seen{$kp}{'ApiVersions v0'} && $seen{$kp}{'Metadata v1'},
    'kafka-python sent ApiVersions v0 and Metadata v1');

# 6. ApiVersions, every version, and one we do not have.
for my $v (0 .. 3)
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'apiversions', $v);
    is($out, "corr=7 error=0 keys=0:0-9,1:4-12,2:0-6,3:0-12,8:0-8,9:0-8,10:0-4,11:0-9,12:0-4,13:0-5,14:0-5,15:0-5,16:0-4,17:0-1,18:0-3,"
        . "19:0-7,20:0-6,22:0-4,24:0-3,25:0-3,26:0-3,28:0-3,32:0-4,36:0-2,37:0-3,42:0-2,47:0-0,60:0-1 throttle=" . ($v >= 1 ? 0 : 'None') . " rest=0\n",
        "ApiVersions v$v: every API of the table (response header v0)");
}
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'apiversions', 4);
is($out, "corr=7 error=35 keys=18:0-3 throttle=None rest=0\n",
    'ApiVersions v4: UNSUPPORTED_VERSION in v0 with the versions of ApiVersions');

# 7. Metadata, every version.
for my $v (0 .. 12)
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'metadata', $v);
    my $ops = $v >= 8 ? 3544 : 'None';
    my $id = $v >= 10 ? 'set' : 'none';
    my $expect = "broker 0 127.0.0.1:$port\n"
      . 'cluster ' . ($v >= 2 ? $cluster_id : 'None') . ' controller ' . ($v >= 1 ? 0 : 'None') . "\n"
      . join('', map { "topic $_ error=0 partitions="
              . join(',', map { "$_:0" } 0 .. $sql_topics{$_} - 1) . " ops=$ops id=$id\n" }
          sort keys %sql_topics)
      . "rest=0\n";
    is($out, $expect, "Metadata v$v of all topics") or diag($err);
}
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'metadata', 12,
    'orders', 'nosuch', 'bad name!', 'orders', '..');
like($out, qr/^topic \.\. error=17 partitions= ops=-2147483648 id=zero\ntopic bad name! error=17 partitions= ops=-2147483648 id=zero\ntopic nosuch error=3 partitions= ops=-2147483648 id=zero\ntopic orders error=0 partitions=0:0,1:0,2:0 ops=3544 id=set\nrest=0$/m,
    'Metadata v12 of named topics: each once; unknown: UNKNOWN_TOPIC_OR_PARTITION; illegal names: INVALID_TOPIC_EXCEPTION');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'metadata', 1, 'audit.log');
like($out, qr/^topic audit\.log error=0 partitions=0:0 ops=None id=none\nrest=0$/m, 'Metadata v1 of one topic');

# By topic id: each known id once, however often asked, among 20000 unknown
# ids (UNKNOWN_TOPIC_ID) and the zero id (INVALID_REQUEST).
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'byid');
is($out, 'found ' . join(',', sort keys %sql_topics) . "\nright ids True\nasked 20002 distinct, answered 20002\n"
    . "error=42 count=1 names={None}\nerror=100 count=19998 names={None}\n",
    'Metadata v12 by topic id') or diag($err);

# A session that died between two requests (pg_terminate_backend, a server
# restart) is noticed before the next one, which reconnects and is answered.
my ($tin, $tout) = ('', '');
my $twice = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'twice' ],
    '<', \$tin, '>', \$tout, '2>', \my $terr);
$twice->pump until $tout =~ /^first: .*\n/m;
is($tout, "first: 3 topics\n", 'a client lists the topics');
$node->safe_psql('postgres', q{
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}),
    'its gateway session is terminated');
$tin .= "\n";
$twice->finish;
is($tout, "first: 3 topics\nsecond: 3 topics\n", 'its next request on the same connection is answered')
    or diag($terr);

# A role that may not read the catalog sees no topic.
$node->safe_psql('postgres', q{
    CREATE ROLE blind LOGIN;
    REVOKE SELECT ON eventlog.topic_catalog FROM PUBLIC;
});
my $bport = PostgreSQL::Test::Cluster::get_free_port();
my ($bh, $blog) = start_gateway('blind', '--listen', "127.0.0.1:$bport",
    '--dsn', $node->connstr('postgres') . ' user=blind');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $bport, 'metadata', 2);
like($out, qr/^cluster \Q$cluster_id\E controller 0\nrest=0$/m,
    'a role without SELECT on the catalog lists no topic (and gets the same cluster id)');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $bport, 'metadata', 1, 'orders');
like($out, qr/^topic orders error=29 partitions= /m, 'and gets TOPIC_AUTHORIZATION_FAILED for a named one');
$node->safe_psql('postgres', 'GRANT SELECT ON eventlog.topic_catalog TO PUBLIC');
$bh->signal('TERM');
$bh->finish;
is($? >> 8, 0, 'that gateway ends with status 0 on SIGTERM');

# 8. Broken frames close their own connection only.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'badframes');
is($out, <<'EOT', 'every broken frame closes its connection; a held connection keeps working');
held connection: answered 178 bytes
negative size: closed
huge size: closed
too short for a header: closed
garbage: closed
unknown api key: closed
unsupported metadata version: closed
trailing bytes: closed
absurd array count: closed
truncated string: closed
bad client id length: closed
bad software name: answered 12 bytes
truncated frame: closed
held connection again: answered
EOT
$log = slurp_file($gwlog);
like($log, qr/WARNING: conn \d+ \(127\.0\.0\.1:\d+\): request size -5 is out of range \(0 to 104857600, --max-request-bytes\): closing/,
    'a negative size is logged');
like($log, qr/WARNING: conn \d+ \(127\.0\.0\.1:\d+\): unknown or unsupported API key 9999 \(correlation id 1\): closing/,
    'an unknown API key is logged');
like($log, qr/WARNING: conn \d+ \(127\.0\.0\.1:\d+\): Metadata version 13 is not supported \(versions 0 to 12; correlation id 1\): closing/,
    'an unsupported version is logged');
like($log, qr/WARNING: conn \d+ \(127\.0\.0\.1:\d+\): malformed Metadata v1 request body/,
    'a malformed body is logged');

($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'mutations', 2000, 15);
like($out, qr/^(?:answered=\d+ )?closed=\d+\n\z/, '2000 mutated requests: each answered or closed') or diag($err);
note("mutated requests: $out");
($rc, $out, $err) = run_cmd('kcat', '-b', $addr, '-L');
like($out, qr/^ 3 topics:$/m, 'kcat still lists the topics after them');

# 9. --max-connections: one over the cap is accepted and closed at once.
my $cport = PostgreSQL::Test::Cluster::get_free_port();
my ($ch, $clog) = start_gateway('capped', '--listen', "127.0.0.1:$cport", '--max-connections', '1');
my ($hold_out, $hold_err) = ('', '');
my $holder = IPC::Run::start([ $python, $probe, '127.0.0.1', $cport, 'hold' ],
    '>', \$hold_out, '2>', \$hold_err);
$holder->pump until $hold_out =~ /^hold: answered/m;
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $cport, 'apiversions', 0);
is($out, "closed\n", 'a connection over --max-connections is closed');
like(slurp_file($clog), qr/WARNING: connection from 127\.0\.0\.1:\d+ refused: 1 connections are open \(--max-connections\)/,
    'and logged');
# SIGTERM with a client connected: its connection is closed, exit 0.
$ch->signal('TERM');
$ch->finish;
is($? >> 8, 0, 'SIGTERM with a client connected: exit status 0');
$holder->finish;
is($hold_out, "hold: answered 178 bytes\nhold then: closed\n", 'the client saw its connection closed');

# 10. --brokers: every gateway gives the same leaders, spread over them.
my @bports = map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 2;
my $list = join(',', map { "127.0.0.1:$_" } @bports);
my @gws = map { [ start_gateway("broker$_", '--listen', "127.0.0.1:$bports[$_]", '--brokers', $list) ] } 0 .. 1;
my @answers;
for my $i (0 .. 1)
{
    ($rc, $out, $err) = run_cmd('kcat', '-b', "127.0.0.1:$bports[$i]", '-L', '-J');
    my $m = decode_json($out);
    is($m->{controllerid}, $i, "gateway $i names itself the controller");
    is_deeply([ map { $_->{name} } sort { $a->{id} <=> $b->{id} } @{ $m->{brokers} } ],
        [ map { "127.0.0.1:$_" } @bports ], "gateway $i lists both brokers by their index in --brokers");
    push @answers, { map { my $t = $_->{topic}; map { ("$t/$_->{partition}" => $_->{leader}) } @{ $_->{partitions} } } @{ $m->{topics} } };
}
is_deeply($answers[0], $answers[1], 'both gateways give the same leader for every partition');
my %leaders = map { $_ => 1 } values %{ $answers[0] };
is_deeply([ sort keys %leaders ], [ 0, 1 ], 'leadership is spread over both');
is($answers[0]{'k-many_parts/1'}, ($answers[0]{'k-many_parts/0'} + 1) % 2, 'consecutive partitions alternate');
for my $g (@gws)
{
    $g->[0]->signal('TERM');
    $g->[0]->finish;
}

# 11. SIGTERM cancels a query in flight: a Metadata request waits on a lock
# held by another session; the gateway cancels it and ends at once.
my ($lin, $lout) = ('', '');
my $locker = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $node->connstr('postgres') ],
    '<', \$lin, '>', \$lout, '2>', \my $lerr);
$lin .= "BEGIN;\nLOCK eventlog.topic_catalog;\nSELECT 'locked';\n";
$locker->pump until $lout =~ /^locked$/m;
my ($mout, $merr) = ('', '');
my $waiter = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'metadata', 1 ],
    '>', \$mout, '2>', \$merr);
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity
     WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Lock'}),
    'a Metadata request waits on the lock');
$gwh->signal('TERM');
$gwh->finish;
is($? >> 8, 0, 'SIGTERM: exit status 0');
$waiter->finish;
is($mout, "closed\n", 'the waiting client\'s connection was closed');
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}),
    'the gateway\'s sessions are gone while the lock is still held');
$log = slurp_file($gwlog);
like($log, qr/INFO: received SIGTERM: shutting down\n/, 'the log says why it stopped');
like($log, qr/canceling statement due to user request/, 'the query in flight was cancelled');
unlike($log, qr/did not end within/, 'every connection ended');
like($log, qr/INFO: stopped\n\z/, 'and ends with "stopped"');
$lin .= "COMMIT;\n\\q\n";
$locker->finish;

done_testing();
