# Crash: kill -9 of the whole server (postmaster and every backend) during
# concurrent produce and consume.  Producers print a record's position only
# once its COMMIT has returned, and a transactional consumer prints
# "committed" after its COMMIT; after restart every acknowledged record is
# there with its value, every acknowledged group position too, offsets are
# unique per partition, the high watermark is above every stored offset and
# every group position, and new records continue above them.  Also across
# the crash: a partition retention emptied resumes at its log start offset,
# and offsets a group moved past (trailing aborted ones) are never reused.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $producers = 4;
my $records = 100000;    # per producer: more than the run can use
my $run_secs = $ENV{EL_TAP_LONG} ? 20 : 3;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('crash', 3);
    SELECT eventlog.create_group('crash', 'cg');
    -- A partition emptied by retention: records 0..9, all removed.
    SELECT eventlog.create_topic('gone', 1, retention_bytes => 1, segment_interval => '1 millisecond');
    SELECT count(*) FROM eventlog.produce_batch('gone', NULL,
        (SELECT array_agg(to_jsonb(i)) FROM generate_series(0, 9) i));
    SELECT pg_sleep(0.01);
    SELECT count(*) FROM eventlog.enforce_retention('gone');
    SELECT count(*) FROM eventlog.enforce_retention('gone');
    -- A group position above trailing aborted offsets: 0..2 committed,
    -- 3 and 4 rolled back, and a poll that moved the group to 5.
    SELECT eventlog.create_topic('tail', 1);
    SELECT count(*) FROM eventlog.produce_batch('tail', NULL, ARRAY['0', '1', '2']::jsonb[]);
    -- A binary topic: its counter is recovered from its bytea segments.
    SELECT eventlog.create_topic('raw', 1, format => 'binary');
    SELECT count(*) FROM eventlog.produce_binary_batch('raw',
        (SELECT array_agg(ROW(int4send(i), '\x00' || int4send(i), '{}', NULL)::eventlog.message ORDER BY i)
           FROM generate_series(0, 4) i));
});
$node->safe_psql('postgres', q{
    BEGIN;
    SELECT count(*) FROM eventlog.produce_batch('tail', NULL, ARRAY['3', '4']::jsonb[]);
    ROLLBACK;});
$node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.poll('tail', 'tg', 10)});
is($node->safe_psql('postgres', q{
    SELECT eventlog.log_start_offset('gone', 0) || ' ' || eventlog.high_watermark('gone', 0) || ' '
           || (SELECT next_offset FROM eventlog.group_offsets WHERE group_name = 'tg')}),
   '10 10 5', 'before the crash: "gone" emptied by retention at 10, group "tg" at 5 past aborted 3 and 4');

# Each producer alternates single-statement (autocommit) records and
# three-record transactions; "ack" lines follow the COMMIT.
my (@handles, @outs);
for my $w (1 .. $producers)
{
    my $script = '';
    for my $i (1 .. $records)
    {
        if ($i % 2)
        {
            $script .= "SELECT 'rec', partition, offset_id, '$w-$i' FROM eventlog.produce('crash', 'k$w-$i', '{\"id\": \"$w-$i\"}');\n";
            $script .= "\\echo ack $w-$i\n";
        }
        else
        {
            $script .= "BEGIN;\n";
            for my $j (1 .. 3)
            {
                $script .= "SELECT 'rec', partition, offset_id, '$w-$i-$j' FROM eventlog.produce('crash', NULL, '{\"id\": \"$w-$i-$j\"}');\n";
            }
            $script .= "COMMIT;\n\\echo ack $w-$i-1 $w-$i-2 $w-$i-3\n";
        }
    }
    my $file = $node->basedir . "/producer$w.sql";
    open my $fh, '>', $file or die $!;
    print $fh $script;
    close $fh;
    my $out = '';
    push @outs, \$out;
    push @handles, IPC::Run::start(
        [ 'psql', '-X', '-q', '-A', '-t', '-d', $node->connstr('postgres'), '-f', $file ],
        '>', \$out, '2>', \my $err);
}

# A transactional consumer of group "cg": it prints what it polled, and
# "committed" once its COMMIT returned.
my $cfile = $node->basedir . '/consumer.sql';
open my $cfh, '>', $cfile or die $!;
print $cfh "BEGIN;\nSELECT 'polled ' || coalesce(string_agg(partition || '/' || offset_id, ' '), '') FROM eventlog.poll('crash', 'cg', 20, partitions => 3);\nCOMMIT;\n\\echo committed\n"
  for 1 .. 100000;
close $cfh;
my $cout = '';
my $consumer = IPC::Run::start(
    [ 'psql', '-X', '-q', '-A', '-t', '-d', $node->connstr('postgres'), '-f', $cfile ],
    '>', \$cout, '2>', \my $cerr);
push @handles, $consumer;

# Let them run, then kill the postmaster and all its children at once.
my $deadline = time + $run_secs;
while (time < $deadline)
{
    $_->pumpable and $_->pump_nb for @handles;
    select(undef, undef, undef, 0.1);
}
my $pm = $node->{_pid};
my @kids = grep { /^\d+$/ } split /\s+/, `pgrep -P $pm`;
my $killed = kill("KILL", @kids, $pm);
note("killed $killed processes: postmaster $pm and children @kids");
$node->kill9;
# The next start refuses while the old postmaster's PID is alive (or not yet
# reaped), so wait until every killed process is gone.
for (1 .. 300)
{
    last unless grep { kill 0, $_ } @kids, $pm;
    select(undef, undef, undef, 0.1);
}
eval { $_->finish } for @handles;

# What was acknowledged: positions printed before an "ack" line.
my %acked;    # id -> "partition|offset"
for my $ref (@outs)
{
    my %pending;
    for my $line (split /\n/, $$ref)
    {
        if ($line =~ /^rec\|(\d+)\|(\d+)\|(\S+)$/)
        {
            $pending{$3} = "$1|$2";
        }
        elsif ($line =~ /^ack (.*)$/)
        {
            for my $id (split / /, $1)
            {
                $acked{$id} = delete $pending{$id} if exists $pending{$id};
            }
        }
    }
}
my $nacked = scalar keys %acked;
ok($nacked > 0, "producers acknowledged $nacked records before the crash");

# What the consumer acknowledged: per partition, one past the highest offset
# of a poll whose COMMIT returned.
my %acked_pos;
my @clines = split /\n/, $cout;
for (my $i = 0; $i < $#clines; $i++)
{
    next unless $clines[$i] =~ /^polled (.*)$/ && $clines[$i + 1] eq 'committed';
    for my $po (split / /, $1)
    {
        my ($p, $o) = split m{/}, $po;
        $acked_pos{$p} = $o + 1 if !defined $acked_pos{$p} || $o + 1 > $acked_pos{$p};
    }
}
ok(scalar(keys %acked_pos) > 0, 'the consumer committed positions before the crash');

$node->start;

# The consumer's acknowledged positions are there, and new offsets never
# go below them.
my %pos = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
    q{SELECT partition, next_offset FROM eventlog.group_offsets WHERE group_name = 'cg'});
is(scalar(grep { ($pos{$_} // -1) < $acked_pos{$_} } keys %acked_pos), 0,
   'every acknowledged group position survived the crash');
is($node->safe_psql('postgres', q{
    SELECT eventlog.high_watermark('gone', 0) || ' ' || eventlog.log_start_offset('gone', 0) || ' '
           || (SELECT offset_id FROM eventlog.produce('gone', NULL, '"after"'))}),
   '10 10 10', 'a partition emptied by retention resumes at 10, not 0');
is($node->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('tail', NULL, '"after"')}),
   '5', 'offsets 3 and 4, which group "tg" has passed, are never handed out again');
is($node->safe_psql('postgres', q{
    SELECT (SELECT count(*) FROM eventlog.read_binary('raw', 0, 0) r
             WHERE r.key = int4send(r.offset_id::int) AND r.value = '\x00' || int4send(r.offset_id::int)
               AND cardinality(r.headers) = 0)
           || ' ' || (SELECT offset_id FROM eventlog.produce_binary('raw', NULL, '\x'))}),
   '5 5', 'a binary topic keeps its records through the crash, and its counter resumes above them');

# Every acknowledged record is there, at its position, with its value.
my %stored;
for my $line (split /\n/, $node->safe_psql('postgres', q{
    SELECT r.partition, r.offset_id, r.value->>'id'
      FROM generate_series(0, 2) p, LATERAL eventlog.read('crash', p, 0, 1000000) r}))
{
    my ($p, $o, $id) = split /\|/, $line;
    $stored{$id} = "$p|$o";
}
my @missing = grep { !exists $stored{$_} || $stored{$_} ne $acked{$_} } keys %acked;
is(scalar @missing, 0, 'every acknowledged record survived the crash at its position')
  or diag("missing or moved: @missing[0 .. ($#missing < 9 ? $#missing : 9)]");

# Offsets are unique per partition, and the counter resumed above them.
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM (
        SELECT r.partition, r.offset_id FROM generate_series(0, 2) p,
               LATERAL eventlog.read('crash', p, 0, 1000000) r
         GROUP BY 1, 2 HAVING count(*) > 1) d}), '0', 'no offset stored twice');
my $check = $node->safe_psql('postgres', q{
    SELECT bool_and(hwm > coalesce(maxo, -1))
      FROM (SELECT p, eventlog.high_watermark('crash', p) AS hwm,
                   (SELECT max(offset_id) FROM eventlog.read('crash', p, 0, 1000000)) AS maxo
              FROM generate_series(0, 2) p) s});
is($check, 't', 'high watermark is above every stored offset after restart');
is($node->safe_psql('postgres', q{
    SELECT bool_and(n.offset_id >= coalesce(o.next_offset, 0))
      FROM generate_series(0, 2) p
      LEFT JOIN eventlog.group_offsets o ON o.group_name = 'cg' AND o.partition = p,
           LATERAL eventlog.produce('crash', NULL, '"above the group"', partition => p) n}),
   't', 'new records go above the group positions too');
is($node->safe_psql('postgres', q{
    SELECT bool_and(n.offset_id > coalesce(m.maxo, -1))
      FROM generate_series(0, 2) p,
           LATERAL (SELECT max(offset_id) AS maxo FROM eventlog.read('crash', p, 0, 1000000)) m,
           LATERAL eventlog.produce('crash', NULL, '"after"', partition => p) n}),
   't', 'new records continue above every stored offset');

# A second crash straight after restart keeps the counters monotonic too.
my $before = $node->safe_psql('postgres',
    q{SELECT string_agg(eventlog.high_watermark('crash', p)::text, ',' ORDER BY p) FROM generate_series(0, 2) p});
$node->stop('immediate');
$node->start;
my $after = $node->safe_psql('postgres',
    q{SELECT string_agg(eventlog.high_watermark('crash', p)::text, ',' ORDER BY p) FROM generate_series(0, 2) p});
is($after, $before, 'counters recover to the same high watermarks after an immediate shutdown');

$node->stop;
done_testing();
