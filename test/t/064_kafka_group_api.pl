# The Kafka gateway's consumer-group APIs (src/kafka/api_*group*.c,
# api_offset_*.c, api_find_coordinator.c, docs/kafka.md "Consumer groups"):
# FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
# OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups and
# DeleteGroups, thin handlers over the extension's Kafka group SQL
# (sql/install/kafka_groups.sql).  Real clients (confluent_kafka's
# Consumer and AdminClient on librdkafka, kafka-python's KafkaConsumer and
# KafkaAdminClient, kcat -G) in groups, their positions compared with what
# SQL consumers see (eventlog.consumer_groups, eventlog.seek); every version
# of every API by a raw probe (kafka_group_probe.py); hostile requests;
# unprivileged roles; a JoinGroup cancelled, its session killed, and the
# gateway stopped while it waits.
#
# Until the gateway serves Fetch (and ListOffsets), the clients are tested
# on group membership alone (paused partitions with explicit offsets,
# commits of explicit offsets); the end-to-end consume checks run as soon
# as ApiVersions advertises Fetch (see $can_fetch).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use KafkaGatewayTest;

my $python = '/usr/bin/python3';
my $dir = -d "$ENV{TESTDIR}/test/t" ? "$ENV{TESTDIR}/test/t" : 'test/t';
my $probe = "$dir/kafka_group_probe.py";
my $clients = "$dir/kafka_group_clients.py";

my $node = PostgreSQL::Test::Cluster->new('kafka_groups');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.kafka_initial_rebalance_delay = 300
eventlog.kafka_min_session_timeout = 100
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('gt', 6);
    SELECT eventlog.create_topic('kt', 3);
    SELECT eventlog.create_topic('ct', 2);
    SELECT eventlog.create_topic('walk', 2);
    SELECT eventlog.produce(t, NULL, '{"n": 1}', partition => p)
      FROM (VALUES ('gt', 6), ('kt', 3), ('ct', 2), ('walk', 2)) x(t, n),
           LATERAL generate_series(0, n - 1) p, generate_series(1, 30);
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $tmp = PostgreSQL::Test::Utils::tempdir();

sub start_gateway
{
    my ($name, @args) = @_;
    return spawn_gateway($gw, $tmp, $name, qr/serving database/, '--dsn', $node->connstr('postgres'), @args);
}

# A client in the background whose stdout the test reads as it comes.
sub background
{
    my ($in, $out, $err) = ('', '', '');
    my $h = IPC::Run::start([@_], '<', \$in, '>', \$out, '2>', \$err,
        IPC::Run::timeout(3 * $PostgreSQL::Test::Utils::timeout_default));
    return { h => $h, in => \$in, out => \$out, err => \$err };
}

sub pump_out
{
    my ($bg, $re) = @_;
    $bg->{h}->pump until ${ $bg->{out} } =~ $re || !$bg->{h}->pumpable;
    return ${ $bg->{out} } =~ $re;
}

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $addr = "127.0.0.1:$port";
my ($gwh, $gwlog) = start_gateway('main', '--listen', $addr);
my ($rc, $out, $err);

# 1. ApiVersions advertises the group APIs from the dispatch table.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'versions');
is($out, <<'EOT', 'ApiVersions: the group APIs and their versions') or diag($err);
api 8: 0-8
api 9: 0-8
api 10: 0-4
api 11: 0-9
api 12: 0-4
api 13: 0-5
api 14: 0-5
api 15: 0-5
api 16: 0-4
api 42: 0-2
api 47: 0-0
EOT
my $can_fetch = do {
    my ($r, $o) = run_cmd($python, '-c', qq{
import sys; sys.path.insert(0, '$dir')
from kafka_group_probe import Conn
c = Conn('127.0.0.1', $port)
r = c.call(18, 3, lambda w: w.str('p').str('1').tags())
r.i16()
keys = set()
for _ in range(r.n()):
    keys.add(r.i16()); r.i16(); r.i16(); r.t()
print(1 in keys and 2 in keys)});
    $o =~ /True/;
};
note($can_fetch ? 'the gateway serves Fetch: end-to-end consume checks run'
    : 'no Fetch yet: clients are tested on group membership alone');

# 2. FindCoordinator, every version: this gateway; v4 batched.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'find');
is($out, <<"EOT", 'FindCoordinator: this gateway for every group key and transactional id, every version') or diag($err);
v0 g1: error 0 node 0 127.0.0.1:$port msg None
v1 g1: error 0 node 0 127.0.0.1:$port msg None
v2 g1: error 0 node 0 127.0.0.1:$port msg None
v3 g1: error 0 node 0 127.0.0.1:$port msg None
v4 g1: error 0 node 0 127.0.0.1:$port msg None
v4 other: error 0 node 0 127.0.0.1:$port msg None
v1 transaction tx: error 0 node 0 msg None
v4 transaction tx: error 0 node 0 msg None
EOT

# 3. One member through every JoinGroup version (and the matching
# versions of the others).
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'walk', 'walk');
is($rc, 0, 'the walk through every version ran') or diag($err);
for my $v (0 .. 9)
{
    # MEMBER_ID_REQUIRED from v4, but not for a static member (v5+ here).
    my $first = $v == 4 ? 79 : 0;
    my $ptype = $v >= 7 ? 'consumer' : 'None';
    like($out, qr/^join v$v: first error $first, then error 0 generation 1 protocol range type $ptype leader is member True, 1 members, metadata back True, rest 0$/m,
        "JoinGroup v$v: " . ($v == 4 ? 'MEMBER_ID_REQUIRED, then ' : '') . 'the leader of generation 1');
}
for my $v (0 .. 5)
{
    my $p = $v >= 5 ? 'consumer/range' : 'None/None';
    like($out, qr/^sync v$v: error 0 assignment back True protocol $p$/m, "SyncGroup v$v: the leader's assignment back");
}
for my $v (0 .. 4)
{
    like($out, qr/^heartbeat v$v: 0, wrong generation 22, unknown member 25$/m,
        "Heartbeat v$v: 0, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID");
}
like($out, qr/^commit v0: \[\('walk', 0, 25\)\]$/m,
    'OffsetCommit v0 (no member: a simple commit) to a group with a member: UNKNOWN_MEMBER_ID');
for my $v (1 .. 8)
{
    like($out, qr/^commit v$v: \[\('walk', 0, 0\)\]$/m, "OffsetCommit v$v by the member");
}
like($out, qr/^leave v0: error 0 members \[\]$/m, 'LeaveGroup v0');
like($out, qr/^leave v5: error 0 members \[\('[^']+', None, 0\)\]$/m, 'LeaveGroup v5: per member');
is(scalar(() = $out =~ /^heartbeat after leave: 25$/mg), 10, 'a member that left is unknown');
is(sql(q{SELECT string_agg(group_name || '=' || committed_offset, ',' ORDER BY group_name)
          FROM eventlog.consumer_groups WHERE topic = 'walk' AND partition = 0}),
    join(',', map { "walk-$_=$_" } 1 .. 9), 'each commit is the group\'s position in eventlog.consumer_groups');
like($out, qr/^fetch v8: \[\('walk-8', \[\('walk', 0, 8, 'm8', 0\), \('walk', 1, -1, None, 0\)\], 0\)\]$/m,
    'OffsetFetch v8 reads it back (-1 where none)');
is(sql(q{SELECT count(*) FROM eventlog.kafka_group_members WHERE group_name LIKE 'walk-%'}), 0,
    'every member left');

# 4. A simple consumer's commits (no member), every OffsetCommit version,
# read back by every OffsetFetch version.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'offsets', 'walk');
is($rc, 0, 'the commits ran') or diag($err);
for my $v (0 .. 8)
{
    my $o = 1 + $v;
    like($out, qr/^commit v$v: \[\('no-such-topic', 0, 3\), \('walk', 0, 0\), \('walk', 1, 0\)\]$/m,
        "OffsetCommit v$v: stored; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION");
    is(sql(qq{SELECT string_agg(partition || '=' || committed_offset, ',' ORDER BY partition)
               FROM eventlog.consumer_groups WHERE group_name = 'simple-$v'}),
        "0=$o,1=2", "OffsetCommit v$v: the positions SQL sees");
}
like($out, qr/^  fetch v0: \(\[\('walk', 0, 1, None, 0\), \('walk', 1, 2, 'meta', 0\), \('walk', 2, -1, None, 0\)\], None\)$/m,
    'OffsetFetch v0');
like($out, qr/^  fetch v7: \(\[\('walk', 0, 8, None, 0\), \('walk', 1, 2, 'meta', 0\), \('walk', 2, -1, None, 0\)\], 0\)$/m,
    'OffsetFetch v7');
like($out, qr/^  fetch v8: \[\('simple-8', \[\('walk', 0, 9, None, 0\), \('walk', 1, 2, 'meta', 0\), \('walk', 2, -1, None, 0\)\], 0\), \('simple-8', \[\('walk', 0, 9, None, 0\), \('walk', 1, 2, 'meta', 0\)\], 0\), \('no-group', \[\], 0\)\]$/m,
    'OffsetFetch v8: several groups, by partition and all');
like($out, qr/^  fetch all v2: \(\[\('walk', 0, 3, None, 0\), \('walk', 1, 2, 'meta', 0\)\], 0\)$/m,
    'OffsetFetch v2 with null topics: every position');

# 5. confluent_kafka: a group of three on six partitions.
my $ck = background($python, $clients, 'ck-group', $addr, 'gt', 'ckg', 6,
    $can_fetch ? 'consume' : 'members');
ok(pump_out($ck, qr/^every partition once: .*\n/m), 'three librdkafka consumers joined') or diag(${ $ck->{err} });
like(${ $ck->{out} }, qr/^every partition once: True$/m, 'every partition is assigned once');
my ($assigned) = ${ $ck->{out} } =~ /^assigned: (.*)$/m;
my @owned = map { [ split /,/ ] } split / \| /, $assigned;
is(scalar(grep { @$_ } @owned), 3, 'each member has partitions');
is(sql(q{SELECT state || ' ' || (SELECT count(*) FROM eventlog.kafka_group_members m WHERE m.group_name = g.group_name)
           FROM eventlog.kafka_groups g WHERE group_name = 'ckg'}), 'Stable 3', 'SQL sees a Stable group of 3');
if ($can_fetch)
{
    ${ $ck->{in} } .= "180\n";
    ok(pump_out($ck, qr/^consumed .*\n/m), 'they consume');
    like(${ $ck->{out} }, qr/^consumed 180 records, each once: True, from their owners: True$/m,
        'every record once, each from its partition\'s owner');
}
ok(pump_out($ck, qr/^waiting: .*\n/m), 'they commit') or diag(${ $ck->{err} });
for my $i (0 .. 2)
{
    my $want = join(' ', map { "$_=" . (10 + $_) } @{ $owned[$i] });
    like(${ $ck->{out} }, qr/^committed by member $i: \Q$want\E$/m, "member $i: committed() gives what it committed");
}
is(sql(q{SELECT string_agg(partition || '=' || committed_offset, ',' ORDER BY partition)
          FROM eventlog.consumer_groups WHERE group_name = 'ckg' AND topic = 'gt'}),
    join(',', map { "$_=" . (10 + $_) } 0 .. 5), 'eventlog.consumer_groups shows the same positions');
is(sql(q{SELECT offset_id FROM eventlog.seek('gt', 'ckg', '3', 0, force => true)}), 3,
    'SQL moves partition 0 (seek)');
${ $ck->{in} } .= "\n";
ok(pump_out($ck, qr/^closed\n/m), 'a member leaves and the others close') or diag(${ $ck->{err} });
like(${ $ck->{out} }, qr/^committed after SQL seek: partition 0 = 3$/m, 'committed() sees the position SQL set');
like(${ $ck->{out} }, qr/^its partitions moved: True$/m, 'a member leaving moves its partitions to the others');
$ck->{h}->finish;

# 6. kafka-python: KafkaConsumer with group_id.
my $kp = background($python, $clients, 'kp-group', $addr, 'kt', 'kpg', $can_fetch ? 'consume' : 'members');
${ $kp->{in} } .= "90\n" if $can_fetch;
ok(pump_out($kp, qr/^waiting: .*\n/m), 'kafka-python joins and commits') or diag(${ $kp->{err} });
if ($can_fetch)
{
    like(${ $kp->{out} }, qr/^consumed 90 records$/m, 'kafka-python consumes every record');
    is(sql(q{SELECT string_agg(partition || '=' || committed_offset, ',' ORDER BY partition)
              FROM eventlog.consumer_groups WHERE group_name = 'kpg'}), '0=30,1=30,2=30', 'and commits the ends');
}
else
{
    like(${ $kp->{out} }, qr/^assigned: 0,1,2$/m, 'kafka-python\'s member gets every partition');
    like(${ $kp->{out} }, qr/^committed 0 = 20\ncommitted 1 = 21\ncommitted 2 = 22$/m, 'committed() gives its commits');
    is(sql(q{SELECT string_agg(partition || '=' || committed_offset, ',' ORDER BY partition)
              FROM eventlog.consumer_groups WHERE group_name = 'kpg'}), '0=20,1=21,2=22', 'SQL sees them');
}
like(sql(q{SELECT client_id || ' ' || client_host FROM eventlog.kafka_group_members WHERE group_name = 'kpg'}),
    qr{^kp-1 /127\.0\.0\.1$}, 'the member\'s client id and host');
${ $kp->{in} } .= "\n";
ok(pump_out($kp, qr/^closed\n/m), 'kafka-python closes');
$kp->{h}->finish;
is(sql(q{SELECT state FROM eventlog.kafka_groups WHERE group_name = 'kpg'}), 'Empty', 'its LeaveGroup empties the group');

# 7. kcat -G, a balanced consumer: positions set from SQL first, so that it
# needs no ListOffsets.
sql(q{SELECT eventlog.kafka_offset_commit('kcg', -1, '', NULL,
        ARRAY[ROW('ct', 0, 25, NULL), ROW('ct', 1, 28, NULL)]::eventlog.kafka_offset[])});
# It runs until stopped (were it to stop after its records, it could join,
# read and leave before the checks below see it in the group).
my $kc = background('kcat', '-u', '-b', $addr, '-G', 'kcg', '-f', '%p:%o\n',
    '-X', 'session.timeout.ms=6000', '-X', 'heartbeat.interval.ms=300', 'ct');
ok($node->poll_query_until('postgres', q{
    SELECT state = 'Stable' FROM eventlog.kafka_groups WHERE group_name = 'kcg'}), 'kcat -G joins its group');
is(sql(q{SELECT count(*) FROM eventlog.kafka_group_members WHERE group_name = 'kcg' AND octet_length(assignment) > 0}),
    1, 'and gets an assignment');
if ($can_fetch)
{
    pump_out($kc, qr/\A(?:\d+:\d+\n){7}/);
    $kc->{h}->signal('TERM');
    $kc->{h}->finish;
    is(join('', sort split /^/m, ${ $kc->{out} }), join('', map { "0:$_\n" } 25 .. 29) . "1:28\n1:29\n",
        'kcat -G reads from the positions SQL set');
}
else
{
    $kc->{h}->signal('TERM');
    $kc->{h}->finish;
}
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM eventlog.kafka_group_members WHERE group_name = 'kcg'}), 'kcat leaves on exit');

# 8. Administration: confluent_kafka AdminClient, kafka-python KafkaAdminClient.
my $held = background($python, $probe, '127.0.0.1', $port, 'stable', 'held', 'gt');
ok(pump_out($held, qr/^member .* sync 0\n/m), 'a raw member holds group "held"');
($rc, $out, $err) = run_cmd($python, $clients, 'ck-admin', $addr);
like($out, qr/^group held state Stable protocol_type consumer protocol range members 1$/m,
    'AdminClient.list_groups: a live group with its member') or diag($err);
like($out, qr/^group kpg state Empty protocol_type  protocol  members 0$/m, 'an empty one');
like($out, qr/^group simple-3 state Empty protocol_type  protocol  members 0$/m,
    'and a group with positions only');
($rc, $out, $err) = run_cmd($python, $clients, 'kp-admin', $addr, 'kpg', 'held', 'nosuch');
like($out, qr/^list: \[\('ckg', ''\), \('held', 'consumer'\), \('kcg', ''\), \('kpg', ''\), \('simple-0', ''\),/m,
    'KafkaAdminClient.list_consumer_groups') or diag($err);
like($out, qr/^describe held: state Stable protocol_type consumer members 1$/m, 'describe_consumer_groups: live');
like($out, qr/^describe nosuch: state Dead protocol_type  members 0$/m, 'an unknown group is Dead');
like($out, qr{^offsets kpg: kt/0=\d+ kt/1=\d+ kt/2=\d+$}m, 'list_consumer_group_offsets');
like($out, qr/^delete: \[\('held', 68\), \('kpg', 0\), \('nosuch', 69\)\]$/m,
    'delete_consumer_groups: NON_EMPTY_GROUP, deleted, GROUP_ID_NOT_FOUND');
is(sql(q{SELECT count(*) FROM eventlog.consumer_groups WHERE group_name = 'kpg'}), 0,
    'the deleted group\'s positions are gone from SQL');
# Raw: ListGroups' states filter, DescribeGroups' authorized operations,
# OffsetDelete.
($rc, $out, $err) = run_cmd($python, '-c', qq{
import sys; sys.path.insert(0, '$dir')
from kafka_group_probe import *
c = Conn('127.0.0.1', $port)
print('list v4 Stable', list_groups(c, 4, ['Stable']))
print('list v4 stable, dead', list_groups(c, 4, ['stable', 'Dead']))
print('list v3', len(list_groups(c, 3)[1]) == len(list_groups(c, 4, [])[1]))
d = describe(c, 5, ['held'], ops=True)[0]
print('describe held ops', d[1], d[2], len(d[5]), d[5][0][2], d[5][0][3], d[6])
print('offset delete simple-3', offset_delete(c, 'simple-3', {'walk': [0, 7]}))
print('offset delete held', offset_delete(c, 'held', {'gt': [0]}))});
is($out, <<'EOT', 'ListGroups states, DescribeGroups operations, OffsetDelete') or diag($err);
list v4 Stable (0, [('held', 'consumer', 'Stable')])
list v4 stable, dead (0, [('held', 'consumer', 'Stable')])
list v3 True
describe held ops 0 Stable 1 probe /127.0.0.1 328
offset delete simple-3 (0, [('walk', 0, 0), ('walk', 7, 3)])
offset delete held (0, [('gt', 0, 86)])
EOT
is(sql(q{SELECT string_agg(partition::text, ',') FROM eventlog.consumer_groups WHERE group_name = 'simple-3'}), '1',
    'OffsetDelete removed the position SQL had');
${ $held->{in} } .= "\n";
ok(pump_out($held, qr/^heartbeat 0\n/m), 'the held member is still alive');

# 9. Hostile requests.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'hostile', 'gt');
$out =~ s/\('[^']+', None, 0\)\]$/('MEMBER', None, 0)]/m;
is($out, <<'EOT', 'hostile requests get error codes or close their connection only') or diag($err);
empty group id: 24
group id with NUL: 42
group id not UTF-8: 42
no protocols: 23
session timeout too small: 26
unknown member in a new group: 25
heartbeat, unknown group: 25
sync, unknown group: 25
leave, unknown group: {'error': 0, 'members': [('ghost', None, 25), ('', 'inst', 25)], 'rest': 0}
commit, unknown group, generation 3: [('gt', 0, 22)]
describe unknown: [('never-seen', 0, 'Dead', '', '', [], -2147483648), ('', 24, 'Dead', '', '', [], -2147483648)]
delete unknown: [('never-seen', 69), ('', 24)]
offset delete unknown: (69, [])
huge metadata: error 0, back whole True
huge member leaves: [('MEMBER', None, 0)]
sync with 50000 strangers: error 0, own b'mine'
leave of 2001: error 0, 2001 results, unknown 2000, left True
describe 10000 unknown: 10000 Dead
join, 2^31-1 protocols: closed
sync, 2^31-1 assignments: closed
leave, 2^31-1 members: closed
commit, 2^31-1 topics: closed
fetch v8, 2^31-1 groups: closed
describe, 2^31-1 groups: closed
truncated join: closed
describe, a name cut short: closed
describe, a null name: closed
list v4, a state cut short: closed
delete, a name cut short: closed
find, trailing bytes: closed
first connection still served: 25
EOT

# A member whose session expired is unknown to its heartbeat.
($rc, $out, $err) = run_cmd($python, '-c', qq{
import sys, time; sys.path.insert(0, '$dir')
from kafka_group_probe import *
c = Conn('127.0.0.1', $port)
j = join_until_member(c, 4, 'short', 'gt', session=1000, rebalance=1000)
sync(c, 4, 'short', j['generation'], j['member'], [])
print('joined', j['error'])
time.sleep(2)
print('heartbeat after its session', heartbeat(c, 4, 'short', j['generation'], j['member']))});
is($out, "joined 0\nheartbeat after its session 25\n", 'an expired member gets UNKNOWN_MEMBER_ID') or diag($err);

# 10. Unprivileged roles: one without consume on gt gets
# GROUP_AUTHORIZATION_FAILED for a group on it, and TOPIC_AUTHORIZATION_FAILED
# for gt's positions in a group it may use.
sql(q{CREATE ROLE outsider LOGIN; SELECT eventlog.create_topic('open', 1);
      SELECT eventlog.grant('open', 'consume', 'outsider');});
my $uport = PostgreSQL::Test::Cluster::get_free_port();
my ($uh, $ulog) = start_gateway('outsider', '--listen', "127.0.0.1:$uport",
    '--dsn', $node->connstr('postgres') . ' user=outsider');
($rc, $out, $err) = run_cmd($python, '-c', qq{
import sys; sys.path.insert(0, '$dir')
from kafka_group_probe import *
c = Conn('127.0.0.1', $uport)
print('join on gt', join_until_member(c, 5, 'ckg', 'gt')['error'])
print('fetch ckg', fetch(c, 7, 'ckg', {'gt': [0]}))
print('commit ckg', commit(c, 8, 'ckg', -1, '', {'gt': [(0, 1, None)]}))
print('describe ckg', describe(c, 5, ['ckg'])[0][1])
print('delete ckg', delete_groups(c, 2, ['ckg']))
print('list', list_groups(c, 4, []))
print('commit own', commit(c, 8, 'mine', -1, '', {'open': [(0, 0, None)], 'gt': [(0, 0, None)]}))
print('fetch own', fetch(c, 7, 'mine', {'open': [0], 'gt': [0]}))});
is($out, <<'EOT', 'a role without consume on a group\'s topics') or diag($err);
join on gt 30
fetch ckg ([], 30)
commit ckg [('gt', 0, 30)]
describe ckg 30
delete ckg [('ckg', 30)]
list (0, [('huge', '', 'Empty'), ('short', '', 'Empty'), ('strangers', '', 'Empty'), ('walk-0', '', 'Empty')])
commit own [('gt', 0, 29), ('open', 0, 0)]
fetch own ([('gt', 0, -1, None, 29), ('open', 0, 0, None, 0)], 0)
EOT
$uh->signal('TERM');
$uh->finish;

# 11. A JoinGroup waiting for a rebalance (the held member does not rejoin):
# its session killed, then the gateway stopped under it.
my $joiner = background($python, $probe, '127.0.0.1', $port, 'join', 'held', 'gt');
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity
     WHERE application_name = 'pg_eventlog_kafka' AND query LIKE 'CALL eventlog.kafka_join_group%'
       AND wait_event_type = 'Extension'}), 'a JoinGroup waits for the rebalance');
sql(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE application_name = 'pg_eventlog_kafka' AND query LIKE 'CALL eventlog.kafka_join_group%'});
ok(pump_out($joiner, qr/^join .*\n/m), 'its session killed, the JoinGroup is answered');
is(${ $joiner->{out} }, "join error 15\n", 'with COORDINATOR_NOT_AVAILABLE (the client retries)');
$joiner->{h}->finish;
${ $held->{in} } .= "\n";
ok(pump_out($held, qr/^heartbeat (?!0\n)\d+\n|heartbeat 0\nheartbeat \d+\n/m), 'the gateway still serves the group');

$joiner = background($python, $probe, '127.0.0.1', $port, 'join', 'held', 'gt');
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity
     WHERE application_name = 'pg_eventlog_kafka' AND query LIKE 'CALL eventlog.kafka_join_group%'
       AND wait_event_type = 'Extension'}), 'a JoinGroup waits again');
$gwh->signal('TERM');
$gwh->finish;
is($? >> 8, 0, 'SIGTERM during a JoinGroup: the gateway ends, status 0');
$joiner->{h}->finish;
like(${ $joiner->{out} }, qr/^join(?: error 15|: \w+)$/m, 'the waiting client is answered or closed');
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}),
    'no gateway session is left');
my $log = slurp_file($gwlog);
like($log, qr/canceling statement due to user request/, 'the waiting CALL was cancelled');
unlike($log, qr/did not end within/, 'every connection ended');
$held->{h}->kill_kill;

done_testing();
