# Hot standbys (issue 20, item 1): replay wakes long polls, and publication
# does not depend on notifications.
#  1. After each publication the primary writes a wake-up record (custom WAL
#     resource manager, eventlog.standby_wakeup_rmgr_id); its replay wakes
#     a long poll on the standby.  The standby's fallback recheck is an hour
#     here (eventlog.debug_standby_recheck_ms): only replay can wake it.
#  2. An idle long poll on the standby sleeps: it is not scheduled while
#     nothing is published (its voluntary context switches, from /proc).
#  3. The Kafka gateway's database-wide wait (eventlog._kafka_await) is
#     woken by replay as well.
#  4. With eventlog.notify = off the notifier still publishes, so the
#     standby serves new records; with eventlog.publish_stable_offsets = off
#     too, the notifier stops.
#  5. pg_waldump shows the records under the custom resource manager ID.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$primary->start;
$primary->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('wk', 2);
    SELECT eventlog.create_topic('idle', 1);
    SELECT eventlog.create_topic('nn', 1);
    SELECT eventlog.create_topic('po', 2);
});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "eventlog.debug_standby_recheck_ms = '1h'");
$standby->start;

is($standby->safe_psql('postgres', 'SHOW eventlog.standby_wakeup_rmgr_id'), '128',
   'the standby registered the wake-up resource manager (RM_EXPERIMENTAL_ID by default)');

# Start a long poll on the standby and wait until it sleeps.
sub start_wait
{
    my ($sql, $pattern) = @_;
    my %h = (out => '', err => '');
    $h{run} = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-d', $standby->connstr('postgres'), '-c', $sql ],
        '>', \$h{out}, '2>', \$h{err});
    $standby->poll_query_until('postgres', qq{
        SELECT count(*) = 1 FROM pg_stat_activity
         WHERE query LIKE '$pattern' AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()})
      or die "no long poll waiting on the standby: $h{err}";
    $h{pid} = $standby->safe_psql('postgres', qq{
        SELECT pid FROM pg_stat_activity WHERE query LIKE '$pattern' AND pid <> pg_backend_pid()});
    return \%h;
}

# 1. read's long poll, woken by replay only.
my $lp = start_wait(q{SELECT offset_id || '=' || value FROM eventlog.read('wk', 1, 0, wait => '1 hour')},
                    q{%eventlog.read(''wk''%});

# 2. While it sleeps and nothing is produced, it is not scheduled.  The
# primary does write WAL meanwhile (a checkpoint): replay moves, but only a
# publication broadcasts.
SKIP:
{
    skip 'no /proc', 1 unless -r "/proc/$lp->{pid}/status";
    my $switches = sub {
        slurp_file("/proc/$lp->{pid}/status") =~ /^voluntary_ctxt_switches:\s+(\d+)/m ? $1 : -1;
    };
    my $before = $switches->();
    $primary->safe_psql('postgres', 'CHECKPOINT');
    $primary->wait_for_catchup($standby);
    sleep 1;
    my $after = $switches->();
    # Polling every 2 ms, it switched hundreds of times a second.
    cmp_ok($after - $before, '<', 20,
           'an idle long poll on the standby sleeps (' . ($after - $before) . ' context switches)');
}

$primary->safe_psql('postgres', q{SELECT eventlog.produce('wk', NULL, '"woken"', partition => 1)});
$lp->{run}->finish;
is($lp->{out}, "0=\"woken\"\n", 'replay of the publication wakes the long poll on the standby');

# 3. The database-wide wait of the Kafka gateway's Fetch, on two topics.
my $ka = start_wait(q{SELECT eventlog._kafka_await(ARRAY['idle', 'wk'], ARRAY[0, 0], ARRAY[0::bigint, 0], 3600000)},
                    q{%eventlog._kafka_await(%});
$primary->safe_psql('postgres', q{SELECT eventlog.produce('wk', NULL, '"again"', partition => 0)});
$ka->{run}->finish;
is($ka->{out}, "t\n", 'replay wakes the gateway\'s database-wide wait on the standby');

# 4. Notifications off: the standby still gets new records.
$primary->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.notify = off; SELECT pg_reload_conf();});
$primary->poll_query_until('postgres', q{SELECT current_setting('eventlog.notify') = 'off'});
my $nn = start_wait(q{SELECT offset_id || '=' || value FROM eventlog.read('nn', 0, 0, wait => '1 hour')},
                    q{%eventlog.read(''nn''%});
$primary->safe_psql('postgres', q{SELECT eventlog.produce('nn', NULL, '"silent"')});
$nn->{run}->finish;
is($nn->{out}, "0=\"silent\"\n", 'with eventlog.notify off the standby still gets new records, woken by replay');
is($primary->safe_psql('postgres', q{SELECT notifier_status FROM eventlog.maintenance WHERE database = 'postgres'}),
   'running', 'the notifier runs to publish');
$primary->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.publish_stable_offsets = off; SELECT pg_reload_conf();});
ok($primary->poll_query_until('postgres', q{
    SELECT notifier_pid IS NULL AND notifier_status = 'off (eventlog.notify and eventlog.publish_stable_offsets)'
      FROM eventlog.maintenance WHERE database = 'postgres'}),
   'with publication off too, the notifier stops');
$primary->safe_psql('postgres', q{SELECT eventlog.produce('nn', NULL, '"unpublished"')});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('nn', 0, 0)}), '1',
   'then nothing new is published');
# Publication on again: the notifier publishes what committed meanwhile at its start.
$primary->safe_psql('postgres', q{ALTER SYSTEM RESET eventlog.publish_stable_offsets; SELECT pg_reload_conf();});
ok($standby->poll_query_until('postgres', q{SELECT count(*) = 2 FROM eventlog.read('nn', 0, 0)}),
   'publication on again: the standby gets what committed meanwhile');
$primary->safe_psql('postgres', q{ALTER SYSTEM RESET eventlog.notify; SELECT pg_reload_conf();});

# 4b. A publication never waits for a lock: one that cannot have its
# tables at once is put off, and the next round publishes every
# partition.  (A publication that waited while holding one of them could
# deadlock with DROP EXTENSION, which takes them in another order; that
# happened in regress/drop_extension.)  With published_offsets locked by
# another session, the notifier's round still sends its notification,
# which comes after the publication in the same round; once the lock is
# gone, the next round publishes the partition it put off.
{
    my $psql = $primary->config_data('--bindir') . '/psql';
    my ($lin, $lout, $nin, $nout) = ('', '', '', '');
    my $t = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
    my $locker = IPC::Run::start([ $psql, '-X', '-q', '-A', '-t', '-d', $primary->connstr('postgres') ],
        '<', \$lin, '>', \$lout, '2>&1', $t);
    $lin .= "BEGIN; LOCK TABLE eventlog.published_offsets IN ACCESS EXCLUSIVE MODE; SELECT 'locked';\n";
    $locker->pump until $lout =~ /locked/ || $t->is_expired;
    my $chan = $primary->safe_psql('postgres', q{SELECT eventlog.channel('po')});
    my $listener = IPC::Run::start([ $psql, '-X', '-q', '-A', '-t', '-d', $primary->connstr('postgres') ],
        '<', \$nin, '>', \$nout, '2>&1', $t);
    $nin .= qq{LISTEN "$chan"; SELECT 'listening';\n};
    $listener->pump until $nout =~ /listening/ || $t->is_expired;
    $primary->safe_psql('postgres', q{SELECT eventlog.produce('po', NULL, '"while locked"', partition => 0)});
    until ($nout =~ /Asynchronous notification/ || $t->is_expired)
    {
        $nin .= "SELECT 1;\n";
        $listener->pump;
        select(undef, undef, undef, 0.1) if $nout !~ /Asynchronous notification/;
    }
    like($nout, qr/Asynchronous notification "\Q$chan\E"/,
         'with published_offsets locked, the notifier does not wait: its round notifies');
    $lin .= "ROLLBACK;\n\\q\n";
    $locker->finish;
    $nin .= "\\q\n";
    $listener->finish;
    # With nothing else committed, the notifier tries again (every
    # second) and publishes the partition put off.
    ok($primary->poll_query_until('postgres', q{
        SELECT published_stable_offset = 1 FROM eventlog.stable_offset_publication
         WHERE topic = 'po' AND partition = 0}),
       'the partition put off is published once the lock is gone, with nothing else committed');
    ok($standby->poll_query_until('postgres', q{SELECT count(*) = 1 FROM eventlog.read('po', 0, 0)}),
       'and the standby serves its record');
}

# 4c. A partition whose catalog row another transaction holds (a
# drop_topic in progress, here a FOR UPDATE) is skipped by the round's
# publication, without waiting; it is put off, not forgotten: published
# once the row is free, with nothing else committed.
{
    my $psql = $primary->config_data('--bindir') . '/psql';
    my ($lin, $lout) = ('', '');
    my $t = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
    my $locker = IPC::Run::start([ $psql, '-X', '-q', '-A', '-t', '-d', $primary->connstr('postgres') ],
        '<', \$lin, '>', \$lout, '2>&1', $t);
    $lin .= "BEGIN; SELECT 'locked' FROM eventlog.partition_catalog p JOIN eventlog.topic_catalog t USING (topic_id) WHERE t.name = 'po' AND p.partition = 0 FOR UPDATE OF p;\n";
    $locker->pump until $lout =~ /locked/ || $t->is_expired;
    # One commit to both partitions: the round publishes partition 1, and
    # skips partition 0, whose row is held.
    $primary->safe_psql('postgres', q{SELECT eventlog.produce('po', NULL, '"row held"', partition => 0),
                                             eventlog.produce('po', NULL, '"beside"', partition => 1)});
    $primary->poll_query_until('postgres', q{
        SELECT published_stable_offset = 1 FROM eventlog.stable_offset_publication
         WHERE topic = 'po' AND partition = 1}) or die 'partition 1 never published';
    is($primary->safe_psql('postgres', q{
        SELECT published_stable_offset FROM eventlog.stable_offset_publication WHERE topic = 'po' AND partition = 0}),
       '1', 'a partition whose catalog row is held is not published meanwhile');
    $lin .= "ROLLBACK;\n\\q\n";
    $locker->finish;
    ok($primary->poll_query_until('postgres', q{
        SELECT published_stable_offset = 2 FROM eventlog.stable_offset_publication
         WHERE topic = 'po' AND partition = 0}),
       'the partition skipped is published once its row is free, with nothing else committed');
    ok($standby->poll_query_until('postgres', q{SELECT count(*) = 2 FROM eventlog.read('po', 0, 0)}),
       'and the standby serves its record');
}

# 4d. A Fetch (the Kafka gateway's, with --read-dsn) from above the
# standby's published offset, at a position committed on the primary,
# finds nothing yet, as read does, instead of OFFSET_OUT_OF_RANGE (which
# would send the client back to its reset policy).
$primary->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.publish_stable_offsets = off; SELECT pg_reload_conf();});
$primary->poll_query_until('postgres', q{SELECT current_setting('eventlog.publish_stable_offsets') = 'off'});
$primary->safe_psql('postgres', q{SELECT eventlog.produce('po', NULL, '"ahead"', partition => 0)});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{
    SELECT string_agg(format('%s %s', k_error, k_stable), ',')
      FROM eventlog._kafka_fetch(ARRAY['po'], ARRAY[0], ARRAY[3::bigint], ARRAY[10], 0)
     WHERE k_offset IS NULL}),
   '0 2', 'a Fetch on the standby from above its published offset: no error, nothing yet');
is($primary->safe_psql('postgres', q{
    SELECT string_agg(k_error::text, ',')
      FROM eventlog._kafka_fetch(ARRAY['po'], ARRAY[0], ARRAY[4::bigint], ARRAY[10], 0)
     WHERE k_offset IS NULL}),
   '1', 'on the primary, a Fetch above the high watermark is out of range');
$primary->safe_psql('postgres', q{ALTER SYSTEM RESET eventlog.publish_stable_offsets; SELECT pg_reload_conf();});
ok($standby->poll_query_until('postgres', q{SELECT count(*) = 3 FROM eventlog.read('po', 0, 0)}),
   'publication on again: the standby catches up');

# 5. The records in WAL, as pg_waldump shows them.
my $lsn = $primary->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
$primary->safe_psql('postgres', q{SELECT eventlog.produce('wk', NULL, '"dumped"', partition => 0)});
$primary->poll_query_until('postgres', q{
    SELECT published_stable_offset = 2 FROM eventlog.stable_offset_publication WHERE topic = 'wk' AND partition = 0})
  or die 'never published';
$primary->safe_psql('postgres', 'SELECT pg_switch_wal()');
my $end = $primary->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
my ($stdout, $stderr);
IPC::Run::run([ 'pg_waldump', '-p', $primary->data_dir . '/pg_wal', '-s', $lsn, '-e', $end, '--rmgr=custom128' ],
    '>', \$stdout, '2>', \$stderr);
like($stdout, qr/rmgr: custom128 .*PUBLISHED|rmgr: custom128 /, 'pg_waldump lists the wake-up record under custom128')
  or diag($stderr);

$standby->stop;
$primary->stop;
done_testing();
