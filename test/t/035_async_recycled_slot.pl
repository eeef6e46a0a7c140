# synchronous_commit = off and a recycled partition slot: readers flush WAL
# up to the newest producing commit of the partition before returning its
# records (see 007_async_commit.pl), and that LSN lives in the partition's
# shared slot.  A slot is a cache: it is recycled when others need it, and
# attached again later with its counter recovered.  The newest commit LSN
# must not be forgotten with it: a slot (re)attached with a recovered
# counter starts from the current WAL insert position, so the first reader
# flushes everything that could hold the partition's commits.  Before the
# fix a reader of a re-attached slot flushed nothing, returned an async
# commit, and a crash then lost the record it had returned.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('recycled');
$node->init;
# Two slots, for a partition here and two in another database; nothing else
# writes WAL (no notifier, no publication, no maintenance rounds after the first), so the
# async commit stays unflushed.
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.max_partitions = 2
eventlog.notify = off
eventlog.publish_stable_offsets = off
eventlog.maintenance_interval = 3600s
wal_writer_delay = 10s
wal_writer_flush_after = 0
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('async', 1);
    SELECT eventlog.produce('async', NULL, '"durable"');
    CREATE DATABASE other;
});
$node->safe_psql('other', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('other', 2);
});
for my $db ('postgres', 'other')
{
    $node->poll_query_until($db,
        q{SELECT rounds >= 1 FROM eventlog.maintenance WHERE database = current_database()})
      or die 'the maintenance worker never ran';
}
$node->safe_psql('postgres', 'CHECKPOINT');

my $lsn = $node->safe_psql('postgres', q{
    BEGIN;
    SET LOCAL synchronous_commit = off;
    SELECT eventlog.produce('async', NULL, '"async, read"');
    SELECT pg_current_wal_insert_lsn();
    COMMIT;
});
$lsn = (split /\n/, $lsn)[-1];

# Recycle the slot of "async": the other database reads its two partitions
# in turn, and each read needs a slot, so the clock goes round both.
$node->safe_psql('other', q{
    SELECT count(*) FROM eventlog.read('other', 0, 0);
    SELECT count(*) FROM eventlog.read('other', 1, 0);
    SELECT count(*) FROM eventlog.read('other', 0, 0);
    SELECT count(*) FROM eventlog.read('other', 1, 0);
});
is($node->safe_psql('postgres', q{SELECT string_agg(value #>> '{}', ',' ORDER BY offset_id) FROM eventlog.read('async', 0, 0)}),
   'durable,async, read', 'a reader returns the async commit');
is($node->safe_psql('postgres', "SELECT pg_current_wal_flush_lsn() >= '$lsn'"),
   't', 'WAL is flushed past that commit before the reader got it');

$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', q{SELECT string_agg(value #>> '{}', ',' ORDER BY offset_id) FROM eventlog.read('async', 0, 0)}),
   'durable,async, read', 'the record a reader returned survived the crash');

# The insert position right after a WAL switch (or any page boundary) is
# past the new page's header, where nothing is written yet: flushing to it
# failed ("xlog flush request ... is not satisfied").  Reads that install
# recovered counters (their slots recycled) right after a switch must flush
# to the boundary instead and return their records.
$node->safe_psql('postgres', 'SELECT pg_switch_wal()');
my ($ret, $out, $err) = $node->psql('other', q{
    SELECT count(*) FROM eventlog.read('other', 0, 0);
    SELECT count(*) FROM eventlog.read('other', 1, 0)});
is($ret, 0, 'reads that attach recycled slots right after a WAL switch succeed') or diag($err);
($ret, $out, $err) = $node->psql('postgres',
    q{SELECT string_agg(value #>> '{}', ',' ORDER BY offset_id) FROM eventlog.read('async', 0, 0)});
is($ret, 0, 'and so does the read that takes its slot back') or diag($err);
is($out, 'durable,async, read', 'which returns the records');

$node->stop;
done_testing();
