# A read DSN distinct from the write DSN (issue 20, item 1): consumers read
# on a hot standby and store their positions on the primary.
#  1. pg_eventlog consume --read-dsn reads on the standby (with its replay
#     paused, it prints what the standby has, not what the primary has);
#     with -g it starts from the group's positions on the primary and
#     stores what it printed there (eventlog.seek), at least once.
#  2. pg_eventlog_kafka --read-dsn serves Fetch and ListOffsets from the
#     standby and everything else from the primary; its long poll on the
#     standby is woken by replay.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use CliTest;
use KafkaGatewayTest;

my $primary = cli_node('primary_rd');
$primary->stop;
$primary->append_conf('postgresql.conf', qq{
wal_level = replica
max_wal_senders = 4
});
$primary->start;
$primary->safe_psql('postgres', q{
    SELECT eventlog.create_topic('rd', 2);
    SELECT eventlog.create_group('rd', 'g');
    SELECT count(*) FROM generate_series(0, 1) p,
      LATERAL eventlog.produce_batch('rd', NULL,
        (SELECT array_agg(to_jsonb('r' || p || '-' || i) ORDER BY i) FROM generate_series(0, 4) i),
        partition => p);
});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby_rd');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
my $sdsn = $standby->connstr('postgres');
$standby->poll_query_until('postgres', q{
    SELECT count(*) = 10 FROM eventlog.read('rd', 0, 0) a FULL JOIN eventlog.read('rd', 1, 0) b ON false})
  or die 'the standby never served the records';

# The standby stops replaying; the primary goes on.
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$standby->poll_query_until('postgres', q{SELECT pg_get_wal_replay_pause_state() = 'paused'})
  or die 'replay never paused';
$primary->safe_psql('postgres', q{
    SELECT count(*) FROM generate_series(0, 1) p,
      LATERAL eventlog.produce_batch('rd', NULL,
        (SELECT array_agg(to_jsonb('r' || p || '-' || i) ORDER BY i) FROM generate_series(5, 7) i),
        partition => p);
});

# 1. The CLI.
my ($rc, $out, $err) = cli('consume', 'rd', '-e', '-f', '%p:%o ', '--read-dsn', $sdsn);
is($rc, 0, 'consume --read-dsn: exit 0') or diag($err);
is(join(' ', sort split ' ', $out), join(' ', sort map { my $p = $_; map { "$p:$_" } 0 .. 4 } 0 .. 1),
   'consume --read-dsn prints what the standby has (replay paused), not the primary\'s 16 records');
($rc, $out, $err) = cli('consume', 'rd', '-e', '-f', '%p:%o ');
is(scalar(split ' ', $out), 16, 'consume without it reads the primary');

($rc, $out, $err) = cli('consume', 'rd', '-g', 'g', '-e', '-c', '3', '-f', '%p:%o ', '--read-dsn', $sdsn);
is($rc, 0, 'consume -g -c 3 --read-dsn: exit 0') or diag($err);
is(scalar(split ' ', $out), 3, 'it prints 3 records');
my $positions = q{SELECT string_agg(partition || '=' || next_offset, ',' ORDER BY partition)
                    FROM eventlog.group_offsets o JOIN eventlog.topic_catalog t USING (topic_id)
                   WHERE t.name = 'rd' AND o.group_name = 'g'};
is($primary->safe_psql('postgres', $positions), '0=3,1=0',
   'and stores on the primary the positions of what it printed, no further');
($rc, $out, $err) = cli('consume', 'rd', '-g', 'g', '-e', '-f', '%p:%o ', '--read-dsn', $sdsn);
is(scalar(split ' ', $out), 7, 'the next run goes on from there, up to what the standby has');
is($primary->safe_psql('postgres', $positions), '0=5,1=5', 'positions stored on the primary: 5 and 5');
($rc, $out, $err) = cli('consume', 'rd', '-g', 'nosuch', '-e', '--read-dsn', $sdsn);
ok($rc == 1 && one_line_error($err, qr/consumer group "nosuch" of topic "rd" does not exist/),
   'a group that does not exist is refused') or diag($err);
($rc, $out, $err) = cli('consume', 'rd', '-e', '--read-dsn', 'host=/nonexistent port=1');
ok($rc == 1 && one_line_error($err, qr/connection/i), 'an unreachable read DSN is one error line') or diag($err);
# On the standby alone, a group's poll is refused: --read-dsn is the way.
($rc, $out, $err) = cli('--no-d', 'consume', 'rd', '-g', 'g', '-e', '-d', $sdsn);
ok($rc == 1 && one_line_error($err, qr/cannot move a consumer group's positions on a hot standby/),
   'consume -g on the standby alone is refused (25006)') or diag($err);

# 2. The Kafka gateway.
my $python = '/usr/bin/python3';
my $probe = "$ENV{TESTDIR}/test/t/kafka_probe.py";
$probe = 'test/t/kafka_probe.py' unless -f $probe;
my $gw = $primary->config_data('--bindir') . '/pg_eventlog_kafka';
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $port = PostgreSQL::Test::Cluster::get_free_port();
my ($gwh, $gwlog) = spawn_gateway($gw, $tmp, 'rd', qr/serving database/,
    '--dsn', $primary->connstr('postgres'), '--read-dsn', $sdsn, '--listen', "127.0.0.1:$port");
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'listoffsets', 5, 'rd', 0, -1);
like($out, qr{^rd/0 error=0 timestamp=-1 offset=5$}m,
     'ListOffsets latest: the standby\'s stable offset (the primary has 8)') or diag($out, $err);
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'fetch', 12, 'rd', 1, 0);
like($out, qr{^rd/1 error=0 .* records=5 }m, 'Fetch reads the standby\'s 5 records') or diag($out, $err);
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'metadata', 1, 'rd');
like($out, qr/rd/, 'Metadata is served (from the primary)') or diag($out, $err);

# Replay resumes; a Fetch waiting on the standby is woken by it.
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
$standby->poll_query_until('postgres', q{SELECT count(*) = 8 FROM eventlog.read('rd', 1, 0)})
  or die 'replay never resumed';
my ($fout, $ferr) = ('', '');
my $fetch = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'fetch', 12, 'rd', 1, 8, 'wait=600000' ],
    '>', \$fout, '2>', \$ferr);
$standby->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity
     WHERE application_name = 'pg_eventlog_kafka' AND wait_event_type = 'Extension'})
  or die 'no Fetch waiting on the standby';
$primary->safe_psql('postgres', q{SELECT eventlog.produce('rd', NULL, '"late"', partition => 1)});
$fetch->finish;
like($fout, qr{^rd/1 error=0 .* records=1 }m, 'a Fetch waiting on the standby returns the record committed on the primary')
  or diag($fout, $ferr);

$gwh->signal('TERM');
$gwh->finish;
$standby->stop;
$primary->stop;
done_testing();
