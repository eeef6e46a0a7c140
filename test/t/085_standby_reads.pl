# Reads on hot standbys (issue 20, item 1).  The primary's notifier
# publishes each partition's last stable offset (eventlog.published_offsets);
# a standby serves records up to it and never past it:
#  1. read, offset_for_time, the offset functions and the views work there;
#  2. an open producing transaction on the primary holds standby readers back
#     exactly as it holds primary readers, and its commit lets them through;
#  3. a long poll on the standby is woken by the commit on the primary;
#  4. group positions cannot be written there (25006, with a hint);
#     privileges hold as on the primary; nothing is published while idle;
#  5. a reader on the standby, under producers with random rollbacks and
#     long-open transactions, never skips an offset and never sees an aborted
#     record, across the primary's crash and the standby's promotion.
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
    SELECT eventlog.create_topic('sb', 3);
    SELECT eventlog.create_topic('lp', 1);
    SELECT eventlog.create_topic('priv', 1);
    CREATE ROLE reader LOGIN;
    SELECT eventlog.grant('sb', 'consume', 'reader');
    SELECT eventlog.create_group('sb', 'g');
});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# 1. Records produced on the primary become readable on the standby.
is($standby->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('sb', 2, 0)}),
   '0', 'a partition with nothing published reads empty on the standby');
$primary->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog.produce_batch('sb', NULL,
        (SELECT array_agg(to_jsonb(i)) FROM generate_series(0, 9) i), partition => 0);
    SELECT eventlog.produce('priv', NULL, '"secret"');
});
$standby->poll_query_until('postgres', q{SELECT count(*) = 10 FROM eventlog.read('sb', 0, 0)})
  or die 'the standby never served the records';
is($standby->safe_psql('postgres', q{SELECT string_agg(offset_id || '=' || value, ',') FROM eventlog.read('sb', 0, 0)}),
   '0=0,1=1,2=2,3=3,4=4,5=5,6=6,7=7,8=8,9=9', 'the standby reads them in order');
is($standby->safe_psql('postgres', q{
    SELECT last_stable_offset || '/' || high_watermark FROM eventlog.partitions WHERE topic = 'sb' AND partition = 0}),
   '10/10', 'the partitions view on the standby shows the published stable offset');
is($standby->safe_psql('postgres', q{SELECT eventlog.offset_for_time('sb', 0, 'infinity')}),
   '10', 'offset_for_time on the standby falls back to the published stable offset');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('sb', 0, 25)}),
   '0', 'reading above the published stable offset on the standby returns nothing, no error');

# 2. An open producing transaction on the primary holds the standby back.
my ($hold_in, $hold_out) = ('', '');
my $holder = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $primary->connstr('postgres') ],
    '<', \$hold_in, '>', \$hold_out, '2>', \my $hold_err);
$hold_in .= "BEGIN;\nSELECT offset_id FROM eventlog.produce('sb', NULL, '\"held\"', partition => 0);\n";
$holder->pump until $hold_out =~ /^10$/m;
$primary->safe_psql('postgres', q{
    SELECT eventlog.produce('sb', NULL, '"after"', partition => 0);
    SELECT eventlog.produce('sb', NULL, '"after"', partition => 0);
});
is($primary->safe_psql('postgres', q{SELECT eventlog.last_stable_offset('sb', 0)}),
   '10', 'on the primary, the open transaction holds the stable offset at 10');
# A later commit in another partition, published: the standby has replayed
# every publication made since offsets 11 and 12 committed.
$primary->safe_psql('postgres', q{SELECT eventlog.produce('sb', NULL, '"marker"', partition => 1)});
$standby->poll_query_until('postgres', q{SELECT count(*) = 1 FROM eventlog.read('sb', 1, 0)})
  or die 'partition 1 never published';
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT eventlog.last_stable_offset('sb', 0)}),
   '10', 'on the standby too');
is($standby->safe_psql('postgres', q{SELECT coalesce(max(offset_id), -1) || '/' || count(*) FROM eventlog.read('sb', 0, 0)}),
   '9/10', 'the standby reader gets nothing past the open offset (11 and 12 are committed)');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('sb', 0, 10, wait => '300 milliseconds')}),
   '0', 'a long poll on the standby at the open offset waits and returns nothing');
is($standby->safe_psql('postgres', q{
    SELECT published_stable_offset FROM eventlog.stable_offset_publication WHERE topic = 'sb' AND partition = 0}),
   '10', 'the publication view on the standby shows it');
is($primary->safe_psql('postgres', q{
    SELECT last_stable_offset || '/' || published_stable_offset FROM eventlog.stable_offset_publication
     WHERE topic = 'sb' AND partition = 0}),
   '10/10', 'and on the primary');
$hold_in .= "COMMIT;\n";
$holder->finish;
$standby->poll_query_until('postgres', q{SELECT count(*) = 13 FROM eventlog.read('sb', 0, 0)})
  or die 'the commit never reached the standby reader';
is($standby->safe_psql('postgres', q{SELECT string_agg(offset_id || '=' || value, ',') FROM eventlog.read('sb', 0, 9)}),
   '9=9,10="held",11="after",12="after"', 'its commit lets the standby reader through, in order');

# Nothing is published while nothing is produced.
my $at = $primary->safe_psql('postgres', q{SELECT max(published_at) FROM eventlog.published_offsets});
sleep 1;
is($primary->safe_psql('postgres', q{SELECT max(published_at) FROM eventlog.published_offsets}),
   $at, 'an idle primary publishes nothing');

# 3. A long poll on the standby wakes when the primary commits.
my ($lp_out, $lp_err) = ('', '');
my $lp = IPC::Run::start(
    [ 'psql', '-X', '-A', '-t', '-d', $standby->connstr('postgres'), '-c',
      q{SELECT offset_id || '=' || value FROM eventlog.read('lp', 0, 0, wait => '120 seconds')} ],
    '>', \$lp_out, '2>', \$lp_err);
$standby->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity
     WHERE query LIKE '%eventlog.read(''lp''%' AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()})
  or die 'no long poll waiting on the standby';
$primary->safe_psql('postgres', q{SELECT eventlog.produce('lp', NULL, '"woken"')});
$lp->finish;
is($lp_out, "0=\"woken\"\n", 'a long poll on the standby returns the record committed on the primary');

# 4. Group positions, privileges.
my ($ret, $out, $err) = $standby->psql('postgres',
    "\\set VERBOSITY verbose\nSELECT * FROM eventlog.poll('sb', 'g')");
isnt($ret, 0, 'poll refuses on the standby');
like($err, qr/25006: cannot move a consumer group's positions on a hot standby/, 'with 25006');
like($err, qr/HINT:  Read on the standby with eventlog.read and store the group's positions on the primary with eventlog.seek/,
     'and a hint saying where to commit');
($ret, $out, $err) = $standby->psql('postgres',
    "\\set VERBOSITY verbose\nSELECT * FROM eventlog.seek('sb', 'g', '5', 0)");
like($err, qr/25006: cannot move a consumer group's positions/, 'so does seek');
($ret, $out, $err) = $standby->psql('postgres',
    "\\set VERBOSITY verbose\nSELECT * FROM eventlog.commit('sb', 'g', 'm1')");
like($err, qr/25006: cannot move a consumer group's positions/, 'and commit');
is($standby->safe_psql('postgres', q{SET ROLE reader; SELECT count(*) FROM eventlog.read('sb', 0, 0)}),
   '13', 'a consumer role reads on the standby');
($ret, $out, $err) = $standby->psql('postgres', q{SET ROLE reader; SELECT * FROM eventlog.read('priv', 0, 0)});
like($err, qr/permission denied to consume from topic "priv"|permission denied/, 'a role without consume is refused there as on the primary');
# The consumer's loop: read on the standby, commit on the primary with seek.
$primary->safe_psql('postgres', q{SELECT eventlog.seek('sb', 'g', '13', 0)});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{
    SELECT next_offset FROM eventlog.group_offsets o JOIN eventlog.topic_catalog t USING (topic_id)
     WHERE t.name = 'sb' AND o.group_name = 'g' AND o.partition = 0}),
   '13', 'a position committed on the primary is seen on the standby');

# 5. The random workload, the primary's crash and the promotion.
srand(20);
my @producers;
sub producer_script
{
    my ($node, $tag, $n) = @_;
    my $sql = '';
    for my $i (1 .. $n)
    {
        my $abort = rand() < 0.25;
        my $state = $abort ? 'rb' : 'c';
        $sql .= "BEGIN;\n";
        for my $j (1 .. 1 + int(rand(3)))
        {
            my $p = int(rand(3));
            $sql .= "SELECT eventlog.produce('sb', NULL, '\"$tag-$i-$j-$state\"', partition => $p);\n";
        }
        $sql .= sprintf("SELECT pg_sleep(%.2f);\n", 0.05 + rand(0.25)) if rand() < 0.1;
        $sql .= $abort ? "ROLLBACK;\n" : "COMMIT;\n";
    }
    my $file = $node->basedir . "/$tag.sql";
    append_to_file($file, $sql);
    return IPC::Run::start(
        [ 'psql', '-X', '-q', '-At', '-d', $node->connstr('postgres'), '-f', $file ],
        '>', '/dev/null', '2>', '/dev/null');
}
push @producers, producer_script($primary, "p$_", 400) for 1 .. 3;

# The standby reader: each partition from its position, with a short long
# poll; it prints what it read.
my $rscript = $standby->basedir . '/reader.sql';
my $rsql = "\\set p0 13\n\\set p1 1\n\\set p2 0\n";
for my $k (1 .. 400)
{
    for my $p (0 .. 2)
    {
        $rsql .= "SELECT coalesce(max(offset_id) + 1, :p$p) AS p$p,"
          . " coalesce(string_agg(offset_id || '=' || (value #>> '{}'), ' '), '') AS s"
          . " FROM eventlog.read('sb', $p, :p$p, 50, wait => '20 milliseconds') \\gset\n"
          . "\\echo $p :s\n";
    }
}
append_to_file($rscript, $rsql);
my $rout = $standby->basedir . '/reader.out';
my $reader = IPC::Run::start(
    [ 'psql', '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $standby->connstr('postgres'), '-f', $rscript ],
    '>', $rout, '2>', \my $rerr);

# Mid-run: the reader has read some of the load; crash the primary.
$standby->poll_query_until('postgres', q{
    SELECT sum(published_stable_offset) > 150 FROM eventlog.stable_offset_publication WHERE topic = 'sb'})
  or die 'no load reached the standby';
$primary->stop('immediate');
$_->finish for @producers;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()');
# The promoted standby takes the load.
my $after = producer_script($standby, 'q', 200);
$after->finish;
ok($reader->finish, 'the standby reader ran across the promotion without an error')
  or diag($rerr);

# What the reader saw, then what it reads on until caught up.
my %seen = (0 => [], 1 => [], 2 => []);
my %pos = (0 => 13, 1 => 1, 2 => 0);
for my $line (split /\n/, slurp_file($rout))
{
    my ($p, @recs) = split / /, $line;
    next unless defined $p && $p =~ /^[012]$/;
    for my $r (@recs)
    {
        my ($o, $v) = split /=/, $r, 2;
        push @{ $seen{$p} }, [ $o, $v ];
        $pos{$p} = $o + 1;
    }
}
for my $p (0 .. 2)
{
    for my $line (split /\n/, $standby->safe_psql('postgres',
        "SELECT offset_id || '=' || (value #>> '{}') FROM eventlog.read('sb', $p, $pos{$p}, 1000000)"))
    {
        my ($o, $v) = split /=/, $line, 2;
        push @{ $seen{$p} }, [ $o, $v ];
    }
}
my $total = 0;
for my $p (0 .. 2)
{
    my @all = map { [ split /=/, $_, 2 ] } split /\n/, $standby->safe_psql('postgres',
        "SELECT offset_id || '=' || (value #>> '{}') FROM eventlog.read('sb', $p, 0, 1000000)");
    @all = grep { $_->[0] >= ($p == 0 ? 13 : $p == 1 ? 1 : 0) } @all;
    my $got = join(',', map { "$_->[0]=$_->[1]" } @{ $seen{$p} });
    my $want = join(',', map { "$_->[0]=$_->[1]" } @all);
    is($got, $want, "partition $p: the standby reader read every stored record once, in order, none skipped");
    is(scalar(grep { $_->[1] =~ /-rb$/ } @{ $seen{$p} }), 0, "partition $p: no aborted record read");
    $total += @all;
}
ok($total > 150, "$total records checked");

# Offsets go on above everything the standby served.
my $max = $standby->safe_psql('postgres', q{SELECT max(offset_id) FROM eventlog.read('sb', 0, 0, 1000000)});
ok($standby->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('sb', NULL, '"last"', partition => 0)}) > $max,
   'the promoted standby produces above every offset it served');

$standby->stop;
done_testing();
