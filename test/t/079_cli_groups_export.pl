# The pg_eventlog command (docs/cli.md): consume -g as a group member,
# group list/describe/reset/delete, export (files, resumption, every record
# exactly once across kills, progress only on a terminal) and stats.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use JSON::PP;
use Fcntl qw(:flock);
use Test::More;
use CliTest;

my $node = cli_node('cli_groups');
my $cli = cli_path();
my ($rc, $out, $err);

$node->safe_psql('postgres', q{SELECT eventlog.create_topic('g', 2);
    SELECT count(*) FROM eventlog.produce_batch('g', NULL, (SELECT array_agg(to_jsonb(i) ORDER BY i) FROM generate_series(1, 5) i), NULL, 0);
    SELECT count(*) FROM eventlog.produce_batch('g', NULL, (SELECT array_agg(to_jsonb(i) ORDER BY i) FROM generate_series(6, 8) i), NULL, 1);});
sub committed
{
    my ($group, $topic) = @_;
    return $node->safe_psql('postgres', qq{SELECT string_agg(partition || ':' || committed_offset, ',' ORDER BY partition)
        FROM eventlog.consumer_groups WHERE group_name = '$group' AND topic = '$topic'});
}

# 1. consume -g: a member that commits what it printed, and leaves.
($rc, $out, $err) = cli(qw(consume g -g readers -e -c 3 -f %p:%s\n));
is($rc, 0, 'consume -g -c') or diag($err);
my @first = split /\n/, $out;
is(scalar @first, 3, 'three records');
($rc, $out, $err) = cli(qw(consume g -g readers -e -f %p:%s\n));
my @rest = split /\n/, $out;
is_deeply([ sort(@first, @rest) ], [ sort map { ($_ <= 5 ? 0 : 1) . ":$_" } 1 .. 8 ],
    'the second run prints the rest: every record once');
is(committed('readers', 'g'), '0:5,1:3', 'the group committed everything printed');
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.group_members WHERE group_name = 'readers'}),
    '0', 'the member left');
($rc, $out, $err) = cli(qw(consume g -g readers -p 0));
ok($rc == 2 && one_line_error($err, qr/-p cannot be used with -g/), '-g and -p');
($rc, $out, $err) = cli(qw(consume g -g readers -o end));
ok($rc == 2 && one_line_error($err, qr/-o cannot be used with -g/), '-g and -o');

# A group member whose reader goes away commits nothing it could not
# write (more than a pipe's buffer: the writes fail once head has gone).
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('big', 1);
    SELECT count(*) FROM eventlog.produce_batch('big', NULL,
        (SELECT array_agg(jsonb_build_object('i', i, 'pad', repeat('x', 200)) ORDER BY i) FROM generate_series(1, 20000) i))});
my $sh = "'$cli' -d '" . $node->connstr('postgres') . "' consume big -g piped -e | head -n 1 >/dev/null; echo \${PIPESTATUS[0]}";
($out, $err) = ('', '');
IPC::Run::run([ 'bash', '-c', $sh ], '>', \$out, '2>', \$err);
is("$out$err", "0\n", 'piped into head: quiet, exit 0');
is($node->safe_psql('postgres', q{SELECT coalesce(sum(committed_offset), 0) FROM eventlog.consumer_groups WHERE group_name = 'piped'}),
    '0', 'and nothing committed that the reader did not take');
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.group_members WHERE group_name = 'piped'}),
    '0', 'the member left');

# 2. group list / describe.
($rc, $out) = cli(qw(group list));
like($out, qr/^GROUP +TOPICS +PARTITIONS +LAG +MEMBERS\n(?:.*\n)*readers +g +2 +0 +0$/m, 'group list');
($rc, $out) = cli(qw(group describe readers));
like($out, qr/^TOPIC +PARTITION +COMMITTED +HIGH_WATERMARK +STABLE_OFFSET +LAG +LAG_TIME +MEMBER +LAST_COMMIT\ng +0 +5 +5 +5 +0 /m,
    'group describe');
($rc, $out, $err) = cli(qw(group describe nobody));
ok($rc == 1 && one_line_error($err, qr/group "nobody" has no positions/), 'describe of an unknown group');

# 3. group reset: a plan, nothing changed without --execute.
($rc, $out, $err) = cli(qw(group reset readers --topic g --to-earliest));
is($rc, 0, 'reset dry run');
like($out, qr/^GROUP +TOPIC +PARTITION +CURRENT +NEW\nreaders +g +0 +5 +0\nreaders +g +1 +3 +0\n\z/, 'the plan');
like($err, qr/dry run: nothing changed; add --execute/, 'says it changed nothing');
is(committed('readers', 'g'), '0:5,1:3', 'nothing changed');
($rc, $out, $err) = cli(qw(group reset readers --topic g:1 --shift-by -2 --execute));
is(committed('readers', 'g'), '0:5,1:1', '--shift-by with a partition list, --execute');
($rc, $out, $err) = cli(qw(group reset readers --topic g --shift-by -100 --execute));
is(committed('readers', 'g'), '0:0,1:0', '--shift-by stops at the log start');
($rc, $out, $err) = cli(qw(group reset readers --topic g --to-offset 4 --execute));
is(committed('readers', 'g'), '0:4,1:3', '--to-offset is kept below the high watermark');
($rc, $out, $err) = cli(qw(group reset readers --topic g --shift-by 9223372036854775807));
like($out, qr/^GROUP +TOPIC +PARTITION +CURRENT +NEW\nreaders +g +0 +4 +5\nreaders +g +1 +3 +3\n\z/,
    'a huge --shift-by is kept below the high watermark, not an overflow') or diag($err);
($rc, $out, $err) = cli(qw(group reset readers --topic g --to-latest --execute));
is(committed('readers', 'g'), '0:5,1:3', '--to-latest');
($rc, $out, $err) = cli(qw(group reset readers --topic g --to-datetime 2000-01-01T00:00:00Z --execute));
is(committed('readers', 'g'), '0:0,1:0', '--to-datetime');
($rc, $out, $err) = cli(qw(group reset readers --topic g --to-earliest --to-latest));
ok($rc == 2 && one_line_error($err, qr/give one target/), 'two targets');
($rc, $out, $err) = cli(qw(group reset readers --to-earliest));
ok($rc == 2 && one_line_error($err, qr/--topic is required/), 'no topic');
($rc, $out, $err) = cli(qw(group reset readers --topic g:7 --to-earliest --execute));
ok($rc == 1 && one_line_error($err, qr/partition 7 of topic "g" does not exist/), 'an unknown partition');
($rc, $out, $err) = cli(qw(group reset readers --topic g:0 --topic nope --to-earliest --execute));
ok($rc == 1 && one_line_error($err, qr/topic "nope" does not exist/), 'an unknown topic');
is(committed('readers', 'g'), '0:0,1:0', 'nothing changed by a failed reset');
# A member owns the partitions: refused, all or nothing.
my $s = $node->background_psql('postgres');
$s->query_safe(q{SELECT count(*) FROM eventlog.poll('g', 'readers', 1, 2, member => 'm1')});
($rc, $out, $err) = cli(qw(group reset readers --topic g --to-latest --execute));
ok($rc == 1 && one_line_error($err, qr/is assigned to a member of group "readers"/), 'a member\'s partitions: refused')
    or diag($err);
is(committed('readers', 'g'), '0:0,1:0', 'and nothing moved');
$s->query_safe(q{SELECT eventlog.leave('g', 'readers', 'm1')});
$s->quit;

# 4. group delete.
($rc, $out, $err) = cli(qw(group delete readers));
is($rc, 0, 'group delete') or diag($err);
is(committed('readers', 'g'), '', 'the positions are gone');
($rc, $out, $err) = cli(qw(group delete readers));
ok($rc == 1 && one_line_error($err, qr/group "readers" has no positions/), 'deleting it again');

# 5. export.
my $dir = PostgreSQL::Test::Utils::tempdir;
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('ex', 3);
    SELECT count(*) FROM eventlog.produce_batch('ex', (SELECT array_agg('k' || i ORDER BY i) FROM generate_series(1, 100) i),
        (SELECT array_agg(jsonb_build_object('i', i, 's', 'a,"b"' || E'\n') ORDER BY i) FROM generate_series(1, 100) i));});
# Every record of every .jsonl file: offsets per partition, each once.
sub exported
{
    my ($d, $topic) = @_;
    my %seen;
    my $dups = 0;
    opendir(my $dh, $d) or die;
    for my $f (sort grep { /^\Q$topic\E-\d+-\d{20}-\d{20}\.jsonl$/ } readdir $dh)
    {
        my ($p, $a, $b) = $f =~ /-(\d+)-(\d{20})-(\d{20})\.jsonl$/;
        open(my $fh, '<', "$d/$f") or die;
        my @offs;
        while (my $l = <$fh>)
        {
            my $r = decode_json($l);
            die "$f: partition" unless $r->{partition} == $p;
            $dups++ if $seen{"$p:$r->{offset}"}++;
            push @offs, $r->{offset};
        }
        die "$f: range" unless $offs[0] == $a && $offs[-1] == $b;
    }
    closedir $dh;
    return (scalar keys %seen, $dups);
}
($rc, $out, $err) = cli('export', 'ex', '--group', 'ex1', '--dir', "$dir/a", '--file-records', '7');
ok($rc == 0 && $out eq '' && $err eq '', 'export: quiet when not a terminal') or diag($err);
my ($n, $dups) = exported("$dir/a", 'ex');
is("$n $dups", '100 0', 'every record in one file');
is(committed('ex1', 'ex'), $node->safe_psql('postgres', q{SELECT string_agg(partition || ':' || high_watermark, ',' ORDER BY partition) FROM eventlog.partitions WHERE topic = 'ex'}),
    'the group committed to the end');
opendir(my $dh, "$dir/a");
my @tmp = grep { /\.tmp$/ } readdir $dh;
closedir $dh;
is(scalar @tmp, 0, 'no temporary file left');
($rc, $out, $err) = cli('export', 'ex', '--group', 'ex1', '--dir', "$dir/a");
opendir($dh, "$dir/a");
my $files = grep { /\.jsonl$/ } readdir $dh;
closedir $dh;
($n, $dups) = exported("$dir/a", 'ex');
is("$n $dups", '100 0', 'a rerun with nothing new writes nothing');
my $first = (sort grep { /^ex-0-/ } do { opendir(my $d2, "$dir/a"); readdir $d2 })[0];
open(my $fh, '<', "$dir/a/$first");
my $rec = decode_json(scalar <$fh>);
close $fh;
is_deeply([ $rec->{topic}, $rec->{key}, $rec->{value}{s} ], [ 'ex', $rec->{key}, qq(a,"b"\n) ], 'a record of a file');
like($rec->{event_time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/, 'its time in ISO 8601');

# Killed between the rename and the commit (test builds' hook), then rerun.
$node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.produce_batch('ex', NULL,
    (SELECT array_agg(to_jsonb(i) ORDER BY i) FROM generate_series(101, 400) i))});
{
    local $ENV{PG_EVENTLOG_TEST_CRASH_AFTER_RENAME} = '3';
    ($rc, $out, $err) = cli('export', 'ex', '--group', 'ex1', '--dir', "$dir/a", '--file-records', '20');
}
is($rc, 128 + 9, 'killed after its third rename (SIGKILL)');
($rc, $out, $err) = cli('export', 'ex', '--group', 'ex1', '--dir', "$dir/a", '--file-records', '20');
is($rc, 0, 'the rerun completes') or diag($err);
($n, $dups) = exported("$dir/a", 'ex');
is("$n $dups", '400 0', 'every record exactly once across the kill');

# Killed at random moments, again and again, then run to the end.
$node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.produce_batch('ex', NULL,
    (SELECT array_agg(to_jsonb(i) ORDER BY i) FROM generate_series(401, 3400) i))});
for my $i (1 .. 8)
{
    my $h = IPC::Run::start([ $cli, '-d', $node->connstr('postgres'), 'export', 'ex', '--group', 'ex1',
        '--dir', "$dir/a", '--file-records', '3' ], '>', \my $o, '2>', \my $e);
    select(undef, undef, undef, 0.05 + rand(0.3));
    $h->signal('KILL');
    $h->finish;
}
($rc, $out, $err) = cli('export', 'ex', '--group', 'ex1', '--dir', "$dir/a", '--file-records', '3');
is($rc, 0, 'the last run completes') or diag($err);
($n, $dups) = exported("$dir/a", 'ex');
is("$n $dups", '3400 0', 'every record exactly once across random kills');

# CSV.
($rc, $out, $err) = cli('export', 'ex', '--group', 'ex2', '--dir', "$dir/csv", '--format', 'csv');
opendir($dh, "$dir/csv");
my @csv = sort grep { /^ex-0-\d{20}-\d{20}\.csv$/ } readdir $dh;
closedir $dh;
open($fh, '<', "$dir/csv/$csv[0]");
my $csvtext = do { local $/; <$fh> };
close $fh;
like($csvtext, qr/\Atopic,partition,offset,key,value,headers,event_time\nex,0,0,k\d+,"\{""i"": \d+, ""s"": ""a,\\""b\\""\\n""\}",,\d{4}-/,
    'csv: a header, fields quoted as RFC 4180 says');
($rc, $out, $err) = cli('export', 'ex', '--group', 'ex3', '--dir', "$dir/x", '--format', 'xml');
ok($rc == 2 && one_line_error($err, qr/invalid format "xml"/), 'an unknown format');
($rc, $out, $err) = cli('export', 'nope', '--group', 'ex3', '--dir', "$dir/x");
ok($rc == 1 && one_line_error($err, qr/topic "nope" does not exist/), 'export of an unknown topic');
($rc, $out, $err) = cli('export', 'ex', '--dir', "$dir/x");
ok($rc == 2 && one_line_error($err, qr/--group is required/), 'export needs a group');

# One export per directory.
open(my $lock, '>', "$dir/a/.pg_eventlog-export.lock") or die;
flock($lock, LOCK_EX) or die;
($rc, $out, $err) = cli('export', 'ex', '--group', 'ex1', '--dir', "$dir/a");
ok($rc == 1 && one_line_error($err, qr/another export is writing to/), 'a second export of a directory is refused');
close $lock;
# One export per topic and group, even into another directory (which would
# write the same records twice): the running one holds a session advisory
# lock keyed by the names' hashes.
$s = $node->background_psql('postgres');
$s->query_safe(q{SELECT pg_advisory_lock(hashtext('ex'), hashtext('ex1'))});
($rc, $out, $err) = cli('export', 'ex', '--group', 'ex1', '--dir', "$dir/b");
ok($rc == 1 && one_line_error($err, qr/another export of topic "ex" for group "ex1" is running/),
    'a second export of a group into another directory is refused') or diag($err);
opendir(my $bdh, "$dir/b") or die;
is(scalar(grep { !/^\./ } readdir $bdh), 0, 'and it wrote no file');
closedir $bdh;
$s->quit;
# An export that fails mid-file (here a role that may not read the topic)
# leaves no temporary file behind.
$node->safe_psql('postgres', q{CREATE ROLE nobody LOGIN});
($rc, $out, $err) = cli('--no-d', '-d', $node->connstr('postgres') . ' user=nobody',
    'export', 'ex', '--group', 'np', '--dir', "$dir/np");
ok($rc == 1 && one_line_error($err, qr/permission denied/), 'export without the privilege') or diag($err);
opendir($bdh, "$dir/np") or die;
is(join(',', grep { !/^\./ } readdir $bdh), '', 'and it leaves no temporary file');
closedir $bdh;

# Progress on a terminal only (script gives it a pseudo-terminal).
$node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.produce_batch('ex', NULL,
    (SELECT array_agg(to_jsonb(i) ORDER BY i) FROM generate_series(1, 50) i))});
my $cmd = "'$cli' -d '" . $node->connstr('postgres') . "' export ex --group ex1 --dir '$dir/a'";
IPC::Run::run([ 'script', '-qec', $cmd, '/dev/null' ], '<', \'', '>', \$out, '2>', \$err);
like($out, qr/50\/50 records, \d+ records\/s, [\d.]+ MB, ETA 0s/, 'progress on a terminal');
($n, $dups) = exported("$dir/a", 'ex');
is("$n $dups", '3450 0', 'and the records exported');

# 6. stats.
($rc, $out, $err) = cli(qw(stats --interval 1 --count 1));
like($out, qr/^TOPIC +IN\/S\n(?:.*\n)*ex +[\d.]+\n/m, 'stats: topics') or diag($err);
like($out, qr/^GROUP +TOPIC +OUT\/S +LAG\n(?:.*\n)*ex1 +ex +[\d.]+ +0$/m, 'stats: groups');

done_testing();
