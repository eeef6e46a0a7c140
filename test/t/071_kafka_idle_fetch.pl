# The idle consumer's Fetch (src/kafka/api_fetch.c, pg.c): after a Fetch
# that found nothing after its whole wait, the gateway leaves
# eventlog._kafka_await running on the connection's session, and the next
# Fetches of the same partitions and offsets wait on it instead of querying.
# The same partitions in another order (librdkafka rotates them) match too.
# A record produced meanwhile is read at once; a Fetch of other offsets,
# Metadata and ListOffsets on the same connection end the await first; a
# topic dropped meanwhile is reported by the next Fetch; a backend
# terminated meanwhile is reconnected; a request pipelined behind a Fetch
# ends the await even when the backend ignores the first cancel; a client
# that hangs up takes its await with it; a Fetch without a wait leaves none.
# An await that ends empty (--idle-await-ms) is sent again with no Fetch
# query, a commit still wakes the Fetch after that, and a REVOKE reaches the
# consumer when the await is renewed.
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

my $node = PostgreSQL::Test::Cluster->new('kidle');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
# Section 9 counts the cancel requests: connections received, never authorized.
$node->append_conf('postgresql.conf', "log_connections = on");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('idle', 1, format => 'binary');
    SELECT eventlog.create_topic('doomed', 1, format => 'binary');
    SELECT eventlog.create_topic('other', 1, format => 'binary');
});
my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $port = PostgreSQL::Test::Cluster::get_free_port();
my ($gwh, $gwlog) = spawn_gateway($gw, $tmp, 'main', qr/serving database/,
    '--dsn', $node->connstr('postgres'), '--listen', "127.0.0.1:$port");

# One client connection, driven a request at a time.
my ($in, $out, $err) = ('', '', '');
my $timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
my $ph = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'session' ],
    '<', \$in, '>', \$out, '2>', \$err, $timer);
sub send_req
{
    my ($line) = @_;
    $out = '';
    $in .= "$line\n";
    # Not pump: it blocks until output arrives too, and a Fetch that
    # waits for a record produced after this returns nothing meanwhile.
    $ph->pump_nb while length $in;
}
sub answer
{
    $timer->start($PostgreSQL::Test::Utils::timeout_default);
    $ph->pump until $out =~ /^\.$/m || $timer->is_expired;
    my $a = $out;
    $out = '';
    return $a;
}
sub req
{
    send_req(@_);
    return answer();
}

# The gateway's session while an await runs in it.
my $awaiting = q{SELECT count(*) FROM pg_stat_activity
    WHERE application_name = 'pg_eventlog_kafka' AND state = 'active'
      AND query LIKE '%_kafka_await%'};
sub await_started
{
    return $node->safe_psql('postgres', q{SELECT query_start FROM pg_stat_activity
        WHERE application_name = 'pg_eventlog_kafka' AND state = 'active'
          AND query LIKE '%_kafka_await%'});
}

# 1. An empty Fetch leaves an await; the next one of the same offsets runs no query.
like(req('fetch 100 idle:0:0'), qr{^idle/0 error=0 hw=0 lso=0 start=0 records=0 offsets=$}m,
    'an idle Fetch: empty');
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 1"),
    'after it the gateway session runs _kafka_await');
my $started = await_started();
like(req('fetch 100 idle:0:0'), qr{^idle/0 error=0 hw=0 lso=0 start=0 records=0 offsets=$}m,
    'the next Fetch of the same offset: empty, with the same marks');
is(await_started(), $started, 'answered without a query: the same await still runs');

# 1b. A consumer of several partitions: librdkafka starts each Fetch at the
# next partition, so the next Fetch names the same ones in another order.
# It waits on the await all the same, and answers each partition with its
# own marks (partition p holds p records here).
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('quad', 4, format => 'binary');
    SELECT eventlog.produce_binary('quad', NULL, '\x01', partition => p)
      FROM generate_series(1, 3) p, generate_series(1, 3) i WHERE i <= p;
});
# The answer's lines for partitions in the order given.
sub quad_lines
{
    my $lines = join("\n", map { "quad/$_ error=0 hw=$_ lso=$_ start=0 records=0 offsets=" } @_);
    return qr{^\Q$lines\E$}m;
}
my $quad = quad_lines(0, 1, 2, 3);
like(req('fetch 100 quad:0:0 quad:1:1 quad:2:2 quad:3:3'), $quad,
    'an idle Fetch of four partitions: empty');
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 1"), 'an await for them');
$started = await_started();
my $rotated = quad_lines(2, 3, 0, 1);
like(req('fetch 100 quad:2:2 quad:3:3 quad:0:0 quad:1:1'), $rotated,
    'the same partitions in another order: empty, each with its own marks');
is(await_started(), $started, 'answered without a query: the await still runs');
like(req('fetch 100 quad:3:3 quad:0:0 quad:1:1 quad:2:2'), quad_lines(3, 0, 1, 2),
    'and again in a third order');
is(await_started(), $started, 'still the same await');
send_req('fetch 600000 quad:1:1 quad:2:2 quad:3:3 quad:0:0');
$node->safe_psql('postgres', q{SELECT eventlog.produce_binary('quad', NULL, '\x02', partition => 2)});
like(answer(), qr{^quad/2 error=0 hw=3 lso=3 start=0 records=1 offsets=2$}m,
    'a record produced while a rotated Fetch waits on the await: returned at once');

# 2. A record produced from SQL during the wait of a Fetch on the await: read at once
# (the Fetch waits up to 10 minutes: only the await's result can end it early).
send_req('fetch 600000 idle:0:0');
$node->safe_psql('postgres', q{SELECT eventlog.produce_binary('idle', NULL, '\x01')});
like(answer(), qr{^idle/0 error=0 hw=1 lso=1 start=0 records=1 offsets=0$}m,
    'a record produced while a Fetch waits on the await: returned at once');
is($node->safe_psql('postgres', $awaiting), '0', 'no await after a Fetch that returned records');

# 3. A record produced between Fetches, while the await is pending.
like(req('fetch 100 idle:0:1'), qr{^idle/0 error=0 hw=1 lso=1 start=0 records=0 offsets=$}m,
    'empty at the end');
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 1"), 'an await for offset 1');
$node->safe_psql('postgres', q{SELECT eventlog.produce_binary('idle', NULL, '\x02')});
like(req('fetch 600000 idle:0:1'), qr{^idle/0 error=0 hw=2 lso=2 start=0 records=1 offsets=1$}m,
    'a record produced while the await is pending: the next Fetch returns it');

# 4. A Fetch of other offsets ends the await and reads.
like(req('fetch 100 idle:0:2'), qr{records=0}, 'empty at offset 2');
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 1"), 'an await for offset 2');
like(req('fetch 100 idle:0:0'), qr{^idle/0 error=0 hw=2 lso=2 start=0 records=2 offsets=0,1$}m,
    'a Fetch from offset 0 instead: read at once');
is($node->safe_psql('postgres', $awaiting), '0', 'and the await is gone');

# 5. Metadata and ListOffsets on the same connection end the await and are answered.
like(req('fetch 100 idle:0:2'), qr{records=0}, 'empty at offset 2 again');
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 1"), 'an await');
like(req('metadata idle'), qr{^metadata answered$}m, 'Metadata during the await: answered');
is($node->safe_psql('postgres', $awaiting), '0', 'and the await is gone');
like(req('fetch 100 idle:0:2'), qr{records=0}, 'empty');
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 1"), 'an await again');
like(req('listoffsets idle 0 -1'), qr{^idle/0 error=0 timestamp=-1 offset=2$}m,
    'ListOffsets during the await: answered');
is($node->safe_psql('postgres', $awaiting), '0', 'and the await is gone');

# 6. A Fetch without a wait leaves no await.
like(req('fetch 0 idle:0:2'), qr{records=0}, 'a Fetch with max_wait_ms 0: empty');
is($node->safe_psql('postgres', $awaiting), '0', 'and no await after it');

# 7. A topic dropped during the await: the next Fetch reports it.
like(req('fetch 100 doomed:0:0'), qr{^doomed/0 error=0 .*records=0}m, 'empty in a topic');
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 1"), 'an await on it');
$node->safe_psql('postgres', q{SELECT eventlog.drop_topic('doomed')});
like(req('fetch 600000 doomed:0:0'), qr{^doomed/0 error=3 }m,
    'the topic dropped during the await: the next Fetch says UNKNOWN_TOPIC_OR_PARTITION');

# 8. The session's backend terminated during the await: the next Fetch reconnects.
like(req('fetch 100 idle:0:2'), qr{records=0}, 'empty at offset 2');
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 1"), 'an await');
$node->safe_psql('postgres', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE application_name = 'pg_eventlog_kafka' AND query LIKE '%_kafka_await%'});
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 0"), 'its backend terminated');
like(req('fetch 100 idle:0:2'), qr{^idle/0 error=0 hw=2 lso=2 start=0 records=0 offsets=$}m,
    'the next Fetch is answered from a new session');
$node->safe_psql('postgres', q{SELECT eventlog.produce_binary('idle', NULL, '\x03')});
like(req('fetch 600000 idle:0:2'), qr{^idle/0 error=0 hw=3 lso=3 start=0 records=1 offsets=2$}m,
    'and reads what is produced');

# 9. A cancel that reaches the backend before it has read the await's query
# (the await is sent just before the Fetch's answer, and a request pipelined
# behind the Fetch ends it at once): an idle backend ignores it, and the
# await would run its 30 s, and the request with it.  Made certain here by
# stopping the backend (SIGSTOP) before the gateway sends the await and
# cancels it, and letting it go on only after the cancel came: the
# gateway cancels again, so the await ends by a cancel, not its timeout.
my $gw_pid = $gwh->{KIDS}[0]{PID};
my $be_pid = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity
    WHERE application_name = 'pg_eventlog_kafka'});
like($be_pid, qr/^\d+$/, 'the connection\'s one backend');
sub cancel_requests
{
    my $log = slurp_file($node->logfile);
    my $received = () = $log =~ /connection received/g;
    my $authorized = () = $log =~ /connection authorized/g;
    return $received - $authorized;
}
my $log_at = -s $node->logfile;
send_req('pipeline 600000 idle:0:3');
ok($node->poll_query_until('postgres', qq{SELECT state = 'active' AND query LIKE '%_kafka_fetch%'
    FROM pg_stat_activity WHERE pid = $be_pid}), 'a pipelined Fetch waits in the server');
kill 'STOP', $gw_pid;
# Another topic's drop ends the wait: the Fetch reads again, and is empty.
$node->safe_psql('postgres', q{SELECT eventlog.drop_topic('other')});
ok($node->poll_query_until('postgres', qq{SELECT state = 'idle' AND query LIKE '%_kafka_fetch%'
    FROM pg_stat_activity WHERE pid = $be_pid}),
    'its wait ended, the gateway stopped before reading its result');
my $cancels = cancel_requests();
kill 'STOP', $be_pid;
kill 'CONT', $gw_pid;
my $waited = 0;
while (cancel_requests() == $cancels && $waited++ < 10 * $PostgreSQL::Test::Utils::timeout_default)
{
    select(undef, undef, undef, 0.1);
}
cmp_ok(cancel_requests(), '>', $cancels, 'the gateway sent the await and cancelled it, its backend stopped');
kill 'CONT', $be_pid;
like(answer(), qr{^idle/0 error=0 hw=3 lso=3 start=0 records=0 offsets=\nrest=0\nmetadata answered$}m,
    'the Fetch and the Metadata behind it answered');
like(substr(slurp_file($node->logfile), $log_at),
    qr/canceling statement due to user request\n.*STATEMENT:\s+SELECT eventlog._kafka_await/,
    'the await ended by a cancel sent again, not by its 30 s timeout');
is($node->safe_psql('postgres', $awaiting), '0', 'no await left');

# 10. A client that hangs up during the await takes it with it.
like(req('fetch 100 idle:0:3'), qr{records=0}, 'empty at offset 3');
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 1"), 'an await');
$ph->kill_kill;
ok($node->poll_query_until('postgres', "SELECT ($awaiting) = 0"),
    'the client hangs up: its await ends at once, not after its timeout');

# 11. An await that ends empty after --idle-await-ms while a Fetch waits
# on it is sent again at once, with no Fetch query, and the Fetch goes on
# waiting; a record produced after that still ends the Fetch at once; a
# REVOKE of the consume privilege reaches the consumer when the await is
# next sent.  A gateway of its own, working as a role with the consume
# privilege on "idle" only, whose statements the server logs.
$node->safe_psql('postgres', q{
    CREATE ROLE kreader LOGIN;
    ALTER ROLE kreader SET log_statement = 'all';
    SELECT eventlog.grant('idle', 'consume', 'kreader');
});
my $port2 = PostgreSQL::Test::Cluster::get_free_port();
my ($gwh2, $gwlog2) = spawn_gateway($gw, $tmp, 'renew', qr/serving database/,
    '--dsn', $node->connstr('postgres') . ' user=kreader', '--listen', "127.0.0.1:$port2",
    '--idle-await-ms', '100');
($in, $out, $err) = ('', '', '');
$ph = IPC::Run::start([ $python, $probe, '127.0.0.1', $port2, 'session' ],
    '<', \$in, '>', \$out, '2>', \$err, $timer);
# The statements kreader's sessions ran since a position of the server's log.
sub statements_since
{
    my ($at) = @_;
    my $log = substr(slurp_file($node->logfile), $at);
    my $awaits = () = $log =~ /execute [^:]*: SELECT eventlog\._kafka_await\(/g;
    my $fetches = () = $log =~ /execute [^:]*: SELECT k_item[^\n]*eventlog\._kafka_fetch\(/g;
    my $any = () = $log =~ /execute [^:]*: /g;
    return ($awaits, $fetches, $any);
}
my $at = -s $node->logfile;
like(req('fetch 100 idle:0:3'), qr{^idle/0 error=0 hw=3 lso=3 start=0 records=0 offsets=$}m,
    'as kreader, an idle Fetch at the end: empty');
my ($awaits, $fetches, $any) = statements_since($at);
cmp_ok($fetches, '>=', 1, 'it ran a Fetch query (the log shows kreader\'s statements)');
$at = -s $node->logfile;
like(req('fetch 10000 idle:0:3'), qr{^idle/0 error=0 hw=3 lso=3 start=0 records=0 offsets=$}m,
    'a Fetch waiting 10 s on awaits of 100 ms: empty, with the same marks');
($awaits, $fetches, $any) = statements_since($at);
cmp_ok($awaits, '>=', 2, 'the await was sent again while the Fetch waited');
is($fetches, 0, 'and no Fetch query ran: each await that ended empty was renewed');
is($any, $awaits, 'nor any other statement');
$at = -s $node->logfile;
send_req('fetch 600000 idle:0:3');
my $polls = 0;
while ((statements_since($at))[0] < 3 && $polls++ < 10 * $PostgreSQL::Test::Utils::timeout_default)
{
    select(undef, undef, undef, 0.1);
}
cmp_ok((statements_since($at))[0], '>=', 3, 'a Fetch of 10 minutes waits through renewed awaits');
$node->safe_psql('postgres', q{SELECT eventlog.produce_binary('idle', NULL, '\x04')});
like(answer(), qr{^idle/0 error=0 hw=4 lso=4 start=0 records=1 offsets=3$}m,
    'a record produced after renewals: returned at once');
like(req('fetch 100 idle:0:4'), qr{^idle/0 error=0 hw=4 lso=4 start=0 records=0 offsets=$}m,
    'empty at the end again');
$node->safe_psql('postgres', q{SELECT eventlog.revoke('idle', 'consume', 'kreader')});
# Each Fetch waits 500 ms (librdkafka's default); the await sent after the
# REVOKE fails, and the Fetch waiting on it then queries and reports it.
my $answer = '';
for (my $i = 0; $i < 20 * $PostgreSQL::Test::Utils::timeout_default; $i++)
{
    $answer = req('fetch 500 idle:0:4');
    last if $answer !~ /error=0 /;
}
like($answer, qr{^idle/0 error=29 }m,
    'after a REVOKE of consume: TOPIC_AUTHORIZATION_FAILED once the await is renewed');
is($node->safe_psql('postgres', $awaiting), '0', 'and no await left after it');
$ph->kill_kill;
$gwh2->kill_kill;

ok(!grep({ /query failed/ } split /\n/, slurp_file($gwlog)), 'no query failed in the log')
    or diag(slurp_file($gwlog));
$gwh->kill_kill;
$node->stop;
done_testing();
