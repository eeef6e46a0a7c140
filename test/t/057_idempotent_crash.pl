# Idempotent produce across a crash between commit and acknowledgement
# (docs/delivery.md).  A batch's COMMIT reaches WAL, but the client never
# hears of it: synchronous_standby_names names a standby that never comes,
# so the committing backend waits after its commit record is flushed, and
# the whole server is killed with SIGKILL there.  After the restart the
# client's retry of the same batch returns the original offsets and stores
# nothing; a batch whose transaction was still open at the crash is stored
# by its retry.  Then the state survives pg_dump and pg_restore, and the
# maintenance worker expires an unused producer after
# eventlog.producer_id_expiration.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('idem');
# Commits wait for a synchronous standby that never comes, except that
# synchronous_commit = local lets every session but the one below go on.
# (Synchronous replication needs WAL senders: allows_streaming.)
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '100ms'
synchronous_standby_names = 'nobody'
synchronous_commit = local
});
$node->start;
$node->safe_psql('postgres', q{CREATE EXTENSION pg_eventlog});
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('crash', 2)});
my $pid = $node->safe_psql('postgres', q{SELECT producer_id FROM eventlog.init_producer()});

# A batch of JSON strings for a partition, from a sequence number: the
# offsets it returns, comma-separated.
sub batch
{
    my ($part, $seq, @values) = @_;
    my $arr = join(', ', map { qq{'"$_"'} } @values);
    return "SELECT string_agg(offset_id::text, ',' ORDER BY offset_id)"
      . " FROM eventlog.produce_batch_idempotent('crash', NULL, ARRAY[$arr]::jsonb[],"
      . " partition => $part, producer_id => $pid, producer_epoch => 0, sequence => $seq)";
}
my $contents = q{SELECT string_agg(format('%%s:%%s', offset_id, value #>> '{}'), ' ' ORDER BY offset_id)
                   FROM eventlog.read('crash', %d, 0)};

is($node->safe_psql('postgres', batch(0, 0, 'a', 'b', 'c')), '0,1,2', 'first batch acknowledged');

my ($out, $err, $open_out, $open_err) = ('', '', '', '');
# This batch's commit is flushed, then waits for the standby: the client
# does not hear of it.
my $unacked = IPC::Run::start(
    [ 'psql', '-X', '-q', '-A', '-t', '-d', $node->connstr('postgres'),
      '-c', 'SET synchronous_commit = on; ' . batch(0, 3, 'd', 'e') ],
    '>', \$out, '2>', \$err);
# A batch whose transaction is still open when the server dies.
my $open = IPC::Run::start(
    [ 'psql', '-X', '-q', '-A', '-t', '-d', $node->connstr('postgres'),
      '-c', 'BEGIN; ' . batch(1, 0, 'x') . '; SELECT pg_sleep(600)' ],
    '>', \$open_out, '2>', \$open_err);
$node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep'})
  or die 'the batch\'s commit never waited for the standby';
$node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep'})
  or die 'the open transaction never reached its sleep';
$unacked->pump_nb;
is($out, '', 'the client has not heard of its commit');

# The commit is in WAL; kill the postmaster and every backend at once.
my $pm = $node->{_pid};
die 'no postmaster PID' unless defined $pm && $pm > 1;
my @kids = grep { /^\d+$/ } split /\s+/, `pgrep -P $pm`;
kill('KILL', @kids, $pm);
$node->kill9;
for (1 .. 300)
{
    last unless grep { kill 0, $_ } @kids, $pm;
    select(undef, undef, undef, 0.1);
}
eval { $unacked->finish };
eval { $open->finish };
is($out, '', 'the client never heard of its commit');

$node->append_conf('postgresql.conf', "synchronous_standby_names = ''");
$node->start;

is($node->safe_psql('postgres', batch(0, 3, 'd', 'e')), '3,4',
   'the retry of the batch committed before the crash returns its original offsets');
is($node->safe_psql('postgres', sprintf($contents, 0)), '0:a 1:b 2:c 3:d 4:e',
   'and stores nothing: each record once');
my $p1 = $node->safe_psql('postgres', batch(1, 0, 'x'));
is($node->safe_psql('postgres', batch(1, 0, 'x')), $p1,
   'the retry of the batch open at the crash is stored, and a second retry returns its offsets');
is($node->safe_psql('postgres', sprintf($contents, 1)), "$p1:x", 'once');
is($node->safe_psql('postgres', batch(0, 5, 'f')), '5', 'the producer goes on after the crash');

# pg_dump keeps the producers and their state: after a restore, a retry
# returns the original offsets and the producer goes on.
$node->safe_psql('postgres', 'CREATE DATABASE dst');
my $dump = $node->basedir . '/idem.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ], 'pg_dump');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('dst'), $dump ], 'pg_restore');
is($node->safe_psql('dst', batch(0, 5, 'f')), '5', 'restored: a retry returns its original offset');
is($node->safe_psql('dst', sprintf($contents, 0)), '0:a 1:b 2:c 3:d 4:e 5:f', 'restored: nothing stored twice');
is($node->safe_psql('dst', batch(0, 6, 'g')), '6', 'restored: the producer goes on');
ok($node->safe_psql('dst', 'SELECT producer_id FROM eventlog.init_producer()') > $pid,
   'restored: producer IDs are not handed out again');

# Expiry: a producer unused for eventlog.producer_id_expiration is removed
# by the maintenance worker, with its state; a batch then finds it unknown.
$node->append_conf('postgresql.conf', "eventlog.producer_id_expiration = '1s'");
$node->reload;
$node->poll_query_until('postgres', q{
    SELECT NOT EXISTS (SELECT FROM eventlog.producer_catalog)
       AND NOT EXISTS (SELECT FROM eventlog.producer_state)})
  or die 'the producers did not expire';
my ($ret, $stdout, $stderr) = $node->psql('postgres', batch(0, 6, 'g'));
like($stderr, qr/producer \d+ does not exist/, 'an expired producer is unknown');
is($node->safe_psql('postgres', sprintf($contents, 0)), '0:a 1:b 2:c 3:d 4:e 5:f',
   'and its batch is not stored');

$node->stop;
done_testing();
