# Windowed stream-stream joins against a reference model.
#
# Perl generates the records of two topics with disorder, records later
# than the grace, NULL event times, duplicate and NULL keys, and an idle
# side (the right topic stops early; one of its partitions has a few early
# records only), and computes the expected joined rows itself, record by
# record (the model below: obviously right, no cleverness).  Three join
# processors (inner, left and outer, with symmetric and asymmetric windows)
# read the two topics in small steps while their driving backend is killed
# with SIGKILL now and then (a crash restart of the server, mid-step or
# not); their sink tables must then equal the model exactly, and again
# after a replay from offset 0 (reset_processor).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('stream_join');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'\nrestart_after_crash = on");
$node->start;

srand(91);
my $base = 1767225600;    # 2026-01-01 00:00:00 UTC
my $ooo = 3;              # max_out_of_orderness, seconds
my $grace = 2;            # allowed_lateness, seconds
my @keys = (map({ "k$_" } 0 .. 9), undef);

# Records per side and partition, in offset order: [key, n, event time or undef].
my $n = 0;
sub gen
{
    my ($count) = @_;
    my @e;
    for my $i (0 .. $count - 1)
    {
        my $t = $base + $i + int(rand(11)) - 7;            # disorder
        $t -= 30 + int(rand(30)) if rand() < 0.03;         # beyond the grace
        $t = undef if rand() < 0.01;                       # no event time
        push @e, [ $keys[ int(rand(@keys)) ], $n++, $t ];
    }
    return \@e;
}
my %events = (
    left  => [ gen(500), gen(500) ],
    # The right side stops early, and its partition 1 is idle after a few
    # records.
    right => [ gen(300), gen(15) ]);

# The model.  A record is late when its time plus the grace is before its
# partition's watermark (the largest time before it, minus $ooo); a pair
# is two records on time, of equal non-NULL keys, the right one's time in
# [left - before, left + after]; an unmatched record of a side the join
# type keeps comes out when the final watermark (every partition idle: the
# largest time of all, minus $ooo) is past its time + after (left) or +
# before (right), + the grace.
sub on_time
{
    my ($side) = @_;
    my @r;
    for my $p (0 .. $#{ $events{$side} })
    {
        my $max;
        for my $o (0 .. $#{ $events{$side}[$p] })
        {
            my ($k, $v, $t) = @{ $events{$side}[$p][$o] };
            next unless defined $t;
            push @r, { p => $p, o => $o, k => $k, v => $v, t => $t }
              unless defined $max && $t + $grace < $max - $ooo;
            $max = $t if !defined $max || $t > $max;
        }
    }
    return @r;
}
my @lefts = on_time('left');
my @rights = on_time('right');
my ($final) = sort { $b <=> $a } grep { defined } map { $_->[2] } map { @$_ } @{ $events{left} }, @{ $events{right} };
$final -= $ooo;

sub model
{
    my ($type, $before, $after) = @_;
    my (@rows, %lm, %rm);
    for my $l (@lefts)
    {
        for my $r (@rights)
        {
            next unless defined $l->{k} && defined $r->{k} && $l->{k} eq $r->{k};
            next unless $l->{t} - $before <= $r->{t} && $r->{t} <= $l->{t} + $after;
            push @rows, join('|', $l->{p}, $l->{o}, $r->{p}, $r->{o}, $l->{k}, $l->{t}, $r->{t}, $l->{v}, $r->{v});
            $lm{"$l->{p}/$l->{o}"} = $rm{"$r->{p}/$r->{o}"} = 1;
        }
    }
    if ($type ne 'inner')
    {
        push @rows, map { join('|', $_->{p}, $_->{o}, '-', '-', $_->{k} // '<null>', $_->{t}, '-', $_->{v}, '-') }
          grep { !$lm{"$_->{p}/$_->{o}"} && $_->{t} + $after + $grace < $final } @lefts;
    }
    if ($type eq 'outer')
    {
        push @rows, map { join('|', '-', '-', $_->{p}, $_->{o}, $_->{k} // '<null>', '-', $_->{t}, '-', $_->{v}) }
          grep { !$rm{"$_->{p}/$_->{o}"} && $_->{t} + $before + $grace < $final } @rights;
    }
    return join("\n", sort @rows);
}

$node->safe_psql('postgres', q{CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('lt', 2); SELECT eventlog.create_topic('rt', 2);});
for my $side ('left', 'right')
{
    for my $p (0, 1)
    {
        my @e = @{ $events{$side}[$p] };
        my $keys = 'ARRAY[' . join(',', map { defined $_->[0] ? "'$_->[0]'" : 'NULL' } @e) . ']::text[]';
        # The event time is in the value ("ts", seconds), absent for NULL.
        my $vals = 'ARRAY[' . join(',', map {
            defined $_->[2] ? "'{\"n\": $_->[1], \"ts\": $_->[2]}'" : "'{\"n\": $_->[1]}'" } @e) . ']::jsonb[]';
        my $topic = $side eq 'left' ? 'lt' : 'rt';
        $node->safe_psql('postgres', "SELECT count(*) FROM eventlog.produce_batch('$topic', $keys, $vals, NULL, $p)");
    }
}

my %joins = (
    inner_join => [ 'inner', 4, 4 ],
    left_join  => [ 'left',  2, 6 ],
    outer_join => [ 'outer', 3, 3 ]);
for my $name (sort keys %joins)
{
    my ($type, $before, $after) = @{ $joins{$name} };
    $node->safe_psql('postgres', qq{
        CREATE TABLE $name (k text, lv jsonb, rv jsonb, lt timestamptz, rt timestamptz,
                            lp integer, lo bigint, rp integer, ro bigint);
        SELECT eventlog.create_join_processor('$name', 'lt', 'rt', '$name', join_type => '$type',
            before => '$before s', after => '$after s',
            left_event_time => \$\$to_timestamp((value->>'ts')::numeric)\$\$,
            right_event_time => \$\$to_timestamp((value->>'ts')::numeric)\$\$,
            allowed_lateness => '$grace s', max_out_of_orderness => '$ooo s', idle_timeout => '1 s');
    });
}

# The driver: small steps of every processor, each committed.
my $driver_file = $node->basedir . '/driver.sql';
open my $fh, '>', $driver_file or die $!;
print $fh q{
SET application_name = 'join_driver';
DO $$
DECLARE
    p text;
BEGIN
    LOOP
        FOR p IN SELECT name FROM eventlog.processors ORDER BY random() LOOP
            PERFORM eventlog.run_processor(p, 1 + (random() * 40)::int);
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;
};
close $fh;

for my $k (1 .. 4)
{
    my ($out, $err) = ('', '');
    my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-f', $driver_file ],
        '>', \$out, '2>', \$err);
    $node->poll_query_until('postgres', q{
        SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'join_driver'})
      or die 'the driver did not start';
    select(undef, undef, undef, 0.2 + rand(0.5));
    my $pid = $node->safe_psql('postgres',
        q{SELECT pid FROM pg_stat_activity WHERE application_name = 'join_driver'});
    kill 'KILL', $pid if $pid;
    eval { $h->finish };
    $node->poll_query_until('postgres', 'SELECT true') or die 'the server did not come back';
}
my $progress = $node->safe_psql('postgres', q{SELECT sum(records) FROM eventlog.processor_progress('outer_join')});
note("records the outer join had read when the kills were over: $progress of 1315");

sub finish_and_check
{
    my ($when) = @_;
    for my $name (sort keys %joins)
    {
        my ($type, $before, $after) = @{ $joins{$name} };
        ok($node->poll_query_until('postgres', qq{
            SELECT eventlog.run_processor('$name', 500) IS NOT NULL
               AND (SELECT extract(epoch FROM closed_through) = $final
                      FROM eventlog.processor_progress('$name') LIMIT 1)}),
           "$name reaches the final watermark $when");
        my $got = $node->safe_psql('postgres', qq{
            SELECT concat_ws('|', coalesce(lp::text, '-'), coalesce(lo::text, '-'), coalesce(rp::text, '-'),
                             coalesce(ro::text, '-'), coalesce(k, '<null>'),
                             coalesce(extract(epoch FROM lt)::bigint::text, '-'),
                             coalesce(extract(epoch FROM rt)::bigint::text, '-'),
                             coalesce(lv->>'n', '-'), coalesce(rv->>'n', '-'))
              FROM $name});
        is(join("\n", sort split /\n/, $got), model($type, $before, $after), "$name equals the model $when");
        my $late = scalar(grep { defined $_->[2] } map { @$_ } @{ $events{left} }, @{ $events{right} })
          - @lefts - @rights;
        is($node->safe_psql('postgres', qq{
               SELECT sum(records) || ' ' || sum(late_records) || ' ' || sum(null_time_records)
                 FROM eventlog.processor_progress('$name')}),
           "1315 $late " . scalar(grep { !defined $_->[2] } map { @$_ } @{ $events{left} }, @{ $events{right} }),
           "$name counted the records, the late ones and the NULL event times $when");
        is($node->safe_psql('postgres', qq{SELECT lag FROM eventlog.processors WHERE name = '$name'}),
           '0', "$name has no lag on either topic $when");
        # The state keeps only the records whose window is still open.
        my $id = $node->safe_psql('postgres', "SELECT processor_id FROM eventlog.processor_catalog WHERE name = '$name'");
        is($node->safe_psql('postgres', qq{
               SELECT (SELECT count(*) FROM eventlog.processor_${id}_left
                        WHERE extract(epoch FROM event_time) + $after + $grace < $final)
                    + (SELECT count(*) FROM eventlog.processor_${id}_right
                        WHERE extract(epoch FROM event_time) + $before + $grace < $final)}),
           '0', "$name keeps no closed records $when");
    }
}
finish_and_check('after kills');

# Replay from offset 0: the same rows, none written twice.
$node->safe_psql('postgres', "SELECT eventlog.reset_processor(name) FROM eventlog.processors");
finish_and_check('after a replay from offset 0');

# The model is not trivial.
my $m = model('outer', 3, 3);
cmp_ok(scalar(() = $m =~ /^\d+\|\d+\|\d+\|\d+\|/mg), '>', 100, 'the model has many pairs');
cmp_ok(scalar(() = $m =~ /^-/mg), '>', 20, 'the model has unmatched right records');
cmp_ok(scalar(() = $m =~ /\|-\|-\|[^|]*\|\d+\|-\|/mg), '>', 20, 'the model has unmatched left records');
cmp_ok(scalar(() = model('inner', 4, 4) =~ /\n/g), '<', scalar(() = model('left', 2, 6) =~ /\n/g),
       'the left join has more rows than the inner join');
my $dup = 0;
my %seen;
$seen{ join('/', (split /\|/)[0, 1]) }++ for split /\n/, $m;
$dup = grep { $_ > 1 } values %seen;
cmp_ok($dup, '>', 10, 'left records joining several right records (duplicate keys)');
cmp_ok(scalar(@lefts) + scalar(@rights), '<', scalar(grep { defined $_->[2] } map { @$_ } @{ $events{left} }, @{ $events{right} }) - 20,
       'the model has late records');

$node->stop;
done_testing();
