# Failover under load with a synchronous standby: producers and a
# transactional consumer group run against the primary, which is killed
# (immediate shutdown) mid-load; the standby is promoted.  Every record whose
# COMMIT returned is on the new primary with its value and offset, every
# group position whose COMMIT returned is there (or further), offsets go on
# above every replicated one, and the group goes on from its position.
# (With an asynchronous standby, commits the primary had not yet sent are
# lost: docs/reliability.md.)
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
    SELECT eventlog.create_topic('fo', 3);
    SELECT eventlog.create_group('fo', 'g');
});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
# Synchronous from now on (set earlier, CREATE EXTENSION would wait for a
# standby that does not exist yet).
$primary->safe_psql('postgres', q{ALTER SYSTEM SET synchronous_standby_names = 'standby'; SELECT pg_reload_conf()});
$primary->poll_query_until('postgres', q{
    SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'})
  or die 'the standby is not synchronous';

# Producers: autocommit produce statements; psql prints each result once
# its COMMIT has returned, so every printed line is an acknowledged record.
my @producers;
for my $p (1 .. 3)
{
    my $script = $primary->basedir . "/producer$p.sql";
    append_to_file($script, join('', map { "SELECT partition || '/' || offset_id || '/' || '$p-$_' FROM eventlog.produce('fo', 'k$p-$_', '\"$p-$_\"');\n" } 1 .. 5000));
    my $out = $primary->basedir . "/producer$p.out";
    push @producers, [ IPC::Run::start(
        [ 'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $primary->connstr('postgres'), '-f', $script ],
        '>', $out, '2>', '/dev/null'), $out ];
}
# A transactional consumer: it prints what it polled, then "committed"
# once its COMMIT returned.
my $cscript = $primary->basedir . '/consumer.sql';
append_to_file($cscript, join('', map { "BEGIN;\nSELECT 'polled ' || coalesce(string_agg(partition || '/' || offset_id, ' '), '') FROM eventlog.poll('fo', 'g', 50, partitions => 3);\nCOMMIT;\n\\echo committed\n" } 1 .. 5000));
my $cout = $primary->basedir . '/consumer.out';
my $consumer = IPC::Run::start(
    [ 'psql', '-X', '-At', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $primary->connstr('postgres'), '-f', $cscript ],
    '>', $cout, '2>', '/dev/null');

# Mid-load (records produced, and the consumer has committed positions):
# kill the primary.
$primary->poll_query_until('postgres', q{
    SELECT (SELECT sum(high_watermark) > 300 FROM eventlog.partitions WHERE topic = 'fo')
       AND (SELECT coalesce(sum(next_offset), 0) > 100 FROM eventlog.group_offsets WHERE group_name = 'g')})
  or die 'no load';
$primary->stop('immediate');
$_->[0]->finish for @producers;
$consumer->finish;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()');

# Acknowledged records.
my %acked;
for my $pr (@producers)
{
    for my $line (split /\n/, slurp_file($pr->[1]))
    {
        $acked{$line} = 1 if $line =~ m{^\d+/\d+/\d+-\d+$};
    }
}
ok(scalar(keys %acked) > 100, scalar(keys %acked) . ' records acknowledged before the failover');
my %there = map { $_ => 1 } split /\n/, $standby->safe_psql('postgres', q{
    SELECT r.partition || '/' || r.offset_id || '/' || (r.value #>> '{}')
      FROM generate_series(0, 2) p, LATERAL eventlog.read('fo', p, 0, 1000000) r});
my @lost = grep { !$there{$_} } sort keys %acked;
is(scalar(@lost), 0, 'every acknowledged record is on the promoted standby, at its offset')
  or diag("lost: @lost[0 .. ($#lost < 9 ? $#lost : 9)]");

# Acknowledged group positions: per partition, one past the highest offset
# a committed poll returned.
my %acked_pos;
my @lines = split /\n/, slurp_file($cout);
for (my $i = 0; $i < $#lines; $i++)
{
    next unless $lines[$i] =~ /^polled (.*)$/ && $lines[$i + 1] eq 'committed';
    for my $po (split / /, $1)
    {
        my ($p, $o) = split m{/}, $po;
        $acked_pos{$p} = $o + 1 if !defined $acked_pos{$p} || $o + 1 > $acked_pos{$p};
    }
}
ok(scalar(keys %acked_pos) > 0, 'the consumer committed positions before the failover');
my %pos = map { split /\|/ } split /\n/, $standby->safe_psql('postgres',
    q{SELECT partition, next_offset FROM eventlog.group_offsets WHERE group_name = 'g'});
my @behind = grep { ($pos{$_} // -1) < $acked_pos{$_} } keys %acked_pos;
is(scalar(@behind), 0, 'every acknowledged group position survived');

# Offsets go on above every replicated one, and the group goes on.
my $max = $standby->safe_psql('postgres', q{
    SELECT string_agg(p || ':' || coalesce((SELECT max(offset_id) FROM eventlog.read('fo', p, 0, 1000000)), -1), ',' ORDER BY p)
      FROM generate_series(0, 2) p});
my $new = $standby->safe_psql('postgres', q{
    SELECT string_agg(n.partition || ':' || n.offset_id, ',' ORDER BY n.partition)
      FROM generate_series(0, 2) p, LATERAL eventlog.produce('fo', NULL, '"after"', partition => p) n});
my %m = map { split /:/ } split /,/, $max;
my %n = map { split /:/ } split /,/, $new;
is(scalar(grep { $n{$_} <= $m{$_} } keys %n), 0, "new offsets ($new) are above every replicated one ($max)");
my $got = $standby->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog.poll('fo', 'g', 1000000, partitions => 3)});
ok($got > 0, "the group polls on from its positions ($got records)");

$standby->stop;
done_testing();
