# Windowed stream processors against a reference model.
#
# Perl generates events with disorder, records later than the grace,
# NULL event times, duplicate and NULL keys, and an idle partition (a few
# early records, then nothing), and computes the expected windows itself,
# record by record (the model below: obviously right, no cleverness).
# Processors of every window kind (tumbling, hopping, sliding, session), emit mode
# (final, changes) and late-record policy (drop, topic, update with a
# retention), one writing its windows to a topic, read the same topic in
# small steps while their driving backend is killed with SIGKILL now and
# then (a crash restart of the server, mid-step or not); their sinks (and
# the late-records topic) must then equal the model exactly, and again
# after a replay from offset 0 (reset_processor).  Some processors
# aggregate with aggregates of their own state (bit_or, min of timestamps,
# bool_or: the path for any aggregate with a combine function).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('streams');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'\nrestart_after_crash = on");
$node->start;

srand(90);
my $base = 1767225600;    # 2026-01-01 00:00:00 UTC
my $ooo = 5;              # max_out_of_orderness, seconds
my $grace = 3;            # allowed_lateness, seconds
my @keys = ('k0', 'k1', 'k2', 'k3', 'k4', undef);

# Events per partition, in offset order: [key, amount, event time or undef].
my @events = ([], [], []);
for my $p (0, 1)
{
    for my $i (0 .. 1199)
    {
        my $t = $base + $i + int(rand(11)) - 8;            # disorder
        $t -= 40 + int(rand(40)) if rand() < 0.03;         # beyond the grace
        $t = undef if rand() < 0.01;                       # no event time
        push @{ $events[$p] }, [ $keys[ int(rand(@keys)) ], 1 + int(rand(100)), $t ];
    }
}
# Partition 2 is idle after its first few records.
push @{ $events[2] }, [ $keys[ int(rand(@keys)) ], 1 + int(rand(100)), $base + int(rand(30)) ] for 1 .. 20;

# The model: windows [start, start + size) every advance; a record is late
# for a window when the window's end plus the grace (plus the retention,
# with late => 'update') is at or below its partition's watermark (largest
# event time before it minus $ooo); a record late for all its windows
# counts as late.  Sessions: a record is late when its time + gap + grace
# (+ retention) is below that watermark; the others, per key, make
# sessions where they come within gap of each other; a session is closed
# when its last time + gap + grace is below the final watermark.  Sliding
# windows (in microseconds, the tick): a record at t counts in the window
# of its key ending at e (e - size <= t <= e, both ends in) unless its
# watermark is above e + grace (+ retention); the window ending at e (left)
# exists when a record at e counts in it, the window starting at t + 1 µs
# (right) when a record at t is not late and some record counts in it; a
# record is late when even its right window is closed (t + size + 1 µs +
# grace (+ retention) below its watermark); a window is closed when its end
# + grace is below the final watermark.
sub add
{
    my ($g, $t, $amount) = @_;
    $g->{n}++;
    $g->{sum} += $amount;
    $g->{min} = $amount if !defined $g->{min} || $amount < $g->{min};
    $g->{max} = $amount if !defined $g->{max} || $amount > $g->{max};
    $g->{bor} = ($g->{bor} // 0) | $amount;
    $g->{tmin} = $t if !defined $g->{tmin} || $t < $g->{tmin};
    $g->{bany} ||= $amount > 90 ? 1 : 0;
}

sub model
{
    my ($type, $size, $advance, $R, $generic) = @_;
    my (%w, %acc, @late, $nulls, @maxts);
    for my $p (0 .. 2)
    {
        my $max;
        for my $e (@{ $events[$p] })
        {
            my ($k, $amount, $t) = @$e;
            if (!defined $t) { $nulls++; next; }
            my $wm = defined $max ? $max - $ooo : undef;
            $max = $t if !defined $max || $t > $max;
            if ($type eq 'session')
            {
                if (defined $wm && $t + $size + $grace + $R < $wm) { push @late, "$amount\@$t"; next; }
                push @{ $acc{ $k // '<null>' } }, [ $t, $amount ];
                next;
            }
            if ($type eq 'sliding')
            {
                # late when its right window (ending last) is closed:
                # t + size + 1 µs + grace (+ retention) < watermark
                if (defined $wm && ($t + $size + $grace + $R) * 1_000_000 + 1 < $wm * 1_000_000) { push @late, "$amount\@$t"; next; }
                push @{ $acc{ $k // '<null>' } }, [ $t, $amount, $wm ];
                next;
            }
            my $any = 0;
            my $first = $t - ($t % $advance) - $size + $advance;
            for (my $s = $first; $s <= $t; $s += $advance)
            {
                next unless $s + $size > $t;
                next if defined $wm && $s + $size + $grace + $R <= $wm;
                $any = 1;
                my $g = $w{"$s|" . ($k // '<null>')} //= { s => $s, e => $s + $size, k => $k // '<null>', n => 0, sum => 0 };
                add($g, $t, $amount);
            }
            push @late, "$amount\@$t" unless $any;
        }
        push @maxts, $max;
    }
    # Sliding windows, in microseconds (the tick): per key, the candidate
    # windows, ending at each record (left) and starting a tick after each
    # (right), once each; a left window is made when a record at its end
    # counts in it, a right window when some record counts in it (its
    # record, not late, is in the buffer); each holds the records that
    # count in it.
    for my $k ($type eq 'sliding' ? keys %acc : ())
    {
        my $us = 1_000_000;
        my $counts = sub { my ($r, $e) = @_; !defined $r->[2] || $e + ($grace + $R) * $us >= $r->[2] * $us };
        my %ends;
        for my $r (@{ $acc{$k} })
        {
            $ends{ $r->[0] * $us } = 1;
            $ends{ $r->[0] * $us + 1 + $size * $us } = 1;
        }
        for my $e (sort { $a <=> $b } keys %ends)
        {
            my @in = grep { $_->[0] * $us >= $e - $size * $us && $_->[0] * $us <= $e && $counts->($_, $e) } @{ $acc{$k} };
            my $left = grep { $_->[0] * $us == $e } @in;
            my $right = grep { $_->[0] * $us + 1 + $size * $us == $e } @{ $acc{$k} };
            next unless @in && ($left || $right);
            my $g = $w{ ($e - $size * $us) . "|$k" } = { s => $e - $size * $us, e => $e, k => $k, n => 0, sum => 0 };
            add($g, $_->[0], $_->[1]) for @in;
        }
    }
    # Sessions: per key, the accepted records in time order, cut where the
    # next one is more than gap after the session's end.
    for my $k ($type eq 'session' ? keys %acc : ())
    {
        my $g;
        for my $r (sort { $a->[0] <=> $b->[0] } @{ $acc{$k} })
        {
            my ($t, $amount) = @$r;
            if (!$g || $t > $g->{e} + $size)
            {
                $g = $w{"$t|$k"} = { s => $t, e => $t, k => $k, n => 0, sum => 0 };
            }
            $g->{e} = $t if $t > $g->{e};
            add($g, $t, $amount);
        }
    }
    # Once every partition is idle, the watermark is the greatest.
    my ($final) = sort { $b <=> $a } @maxts;
    $final -= $ooo;
    # sliding windows' times are in microseconds
    my $fin = $type eq 'sliding' ? $final * 1_000_000 : $final;
    my $gr = $type eq 'sliding' ? $grace * 1_000_000 : $grace;
    my (@all, @closed);
    for my $g (sort { $a->{s} <=> $b->{s} || $a->{k} cmp $b->{k} } values %w)
    {
        my $line = $generic
          ? join('|', $g->{s}, $g->{e}, $g->{k}, $g->{n}, $g->{bor}, $g->{tmin}, $g->{bany} ? 't' : 'f')
          : join('|', $g->{s}, $g->{e}, $g->{k}, $g->{n}, $g->{sum}, $g->{min}, $g->{max});
        push @all, $line;
        push @closed, $line
          if $type eq 'session' ? $g->{e} + $size + $grace < $final
           : $type eq 'sliding' ? $g->{e} + $gr < $fin : $g->{e} + $grace <= $final;
    }
    return { all => join("\n", @all), closed => join("\n", @closed),
             late => scalar(@late), late_list => join(',', sort @late), nulls => $nulls // 0,
             watermark => $final };
}

$node->safe_psql('postgres', q{CREATE EXTENSION pg_eventlog; SELECT eventlog.create_topic('ev', 3);
    SELECT eventlog.create_topic('late_ev', 1); SELECT eventlog.create_topic('win_out', 1);});
for my $p (0 .. 2)
{
    my @e = @{ $events[$p] };
    my $keys = 'ARRAY[' . join(',', map { defined $_->[0] ? "'$_->[0]'" : 'NULL' } @e) . ']::text[]';
    # The event time is in the value ("ts", seconds), absent for NULL.
    my $vals = 'ARRAY[' . join(',', map {
        defined $_->[2] ? "'{\"amount\": $_->[1], \"ts\": $_->[2]}'" : "'{\"amount\": $_->[1]}'" } @e) . ']::jsonb[]';
    $node->safe_psql('postgres', "SELECT count(*) FROM eventlog.produce_batch('ev', $keys, $vals, NULL, $p)");
}

# name => [window type, size (a session's gap), advance, emit, late policy, retention]
my %kinds = (
    tumbling_final         => [ 'tumbling', 10, 10, 'final',   'drop',   0 ],
    tumbling_changes       => [ 'tumbling', 10, 10, 'changes', 'drop',   0 ],
    hopping_final          => [ 'hopping',  20, 5,  'final',   'drop',   0 ],
    hopping_changes        => [ 'hopping',  20, 5,  'changes', 'drop',   0 ],
    session_final          => [ 'session',  4,  0,  'final',   'drop',   0 ],
    session_changes        => [ 'session',  4,  0,  'changes', 'drop',   0 ],
    tumbling_update_final  => [ 'tumbling', 10, 10, 'final',   'update', 15 ],
    hopping_update_changes => [ 'hopping',  20, 5,  'changes', 'update', 15 ],
    session_update_final   => [ 'session',  4,  0,  'final',   'update', 10 ],
    # windows into the topic win_out only, late records into late_ev
    tumbling_topic         => [ 'tumbling', 10, 10, 'final',   'topic',  0 ],
    sliding_final          => [ 'sliding',  10, 0,  'final',   'drop',   0 ],
    sliding_changes        => [ 'sliding',  10, 0,  'changes', 'drop',   0 ],
    sliding_update_final   => [ 'sliding',  10, 0,  'final',   'update', 15 ],
    # aggregates with states of their own (generic_*)
    generic_hopping_changes      => [ 'hopping', 20, 5, 'changes', 'drop',   0 ],
    generic_session_update_final => [ 'session', 4,  0, 'final',   'update', 10 ],
    generic_sliding_update_changes => [ 'sliding', 10, 0, 'changes', 'update', 15 ]);
for my $name (sort keys %kinds)
{
    my ($type, $size, $advance, $emit, $late, $R) = @{ $kinds{$name} };
    my $shape = $type eq 'session' ? "gap => '$size s'"
              : $type eq 'sliding' ? "size => '$size s'" : "size => '$size s', advance => '$advance s'";
    my $sink = $name eq 'tumbling_topic' ? "sink_topic => 'win_out', late_topic => 'late_ev'" : "sink_table => '$name'";
    my $generic = $name =~ /^generic_/;
    my $columns = $generic ? 'n bigint, bo integer, tm timestamptz, ba boolean' : 'n bigint, s numeric, mn numeric, mx numeric';
    my $aggregates = $generic
      ? q{ARRAY['count(*)', $$bit_or((value->>'amount')::int)$$, $$min(to_timestamp((value->>'ts')::numeric))$$,
                $$bool_or((value->>'amount')::int > 90)$$]}
      : q{ARRAY['count(*)', $$sum((value->>'amount')::numeric)$$,
                $$min((value->>'amount')::numeric)$$, $$max((value->>'amount')::numeric)$$]};
    $node->safe_psql('postgres', qq{
        CREATE TABLE $name (ws timestamptz, we timestamptz, k text, $columns);
        SELECT eventlog.create_window_processor('$name', 'ev', $sink, $shape,
            window_type => '$type', emit => '$emit', late => '$late', retention => '$R s',
            aggregates => $aggregates,
            event_time => \$\$to_timestamp((value->>'ts')::numeric)\$\$,
            allowed_lateness => '$grace s', max_out_of_orderness => '$ooo s', idle_timeout => '1 s');
    });
}

# The driver: small steps of every processor, each committed.
my $driver_file = $node->basedir . '/driver.sql';
open my $fh, '>', $driver_file or die $!;
print $fh q{
SET application_name = 'streams_driver';
DO $$
DECLARE
    p text;
BEGIN
    LOOP
        FOR p IN SELECT name FROM eventlog.processors ORDER BY random() LOOP
            PERFORM eventlog.run_processor(p, 1 + (random() * 60)::int);
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
        SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'streams_driver'})
      or die 'the driver did not start';
    select(undef, undef, undef, 0.2 + rand(0.5));
    my $pid = $node->safe_psql('postgres',
        q{SELECT pid FROM pg_stat_activity WHERE application_name = 'streams_driver'});
    kill 'KILL', $pid if $pid;
    eval { $h->finish };
    $node->poll_query_until('postgres', 'SELECT true') or die 'the server did not come back';
}
my $progress = $node->safe_psql('postgres', q{SELECT sum(records) FROM eventlog.processor_progress('tumbling_final')});
note("records the tumbling_final processor had read when the kills were over: $progress");

# Where the topics were before the replay: the replay writes them again.
my %from = (win_out => 0, late_ev => 0);

sub finish_and_check
{
    my ($when) = @_;
    for my $name (sort keys %kinds)
    {
        my ($type, $size, $advance, $emit, $late, $R) = @{ $kinds{$name} };
        my $generic = $name =~ /^generic_/;
        my $m = model($type, $size, $advance, $late eq 'update' ? $R : 0, $generic);
        # Steps until every partition is idle and the watermark is final.
        ok($node->poll_query_until('postgres', qq{
            SELECT eventlog.run_processor('$name', 500) IS NOT NULL
               AND (SELECT extract(epoch FROM closed_through) = $m->{watermark}
                      FROM eventlog.processor_progress('$name') LIMIT 1)}),
           "$name reaches the final watermark $when");
        my $got;
        if ($name eq 'tumbling_topic')
        {
            # The windows as records of win_out: key the group value, value
            # the window and the aggregates by name.
            $got = $node->safe_psql('postgres', qq{
                SELECT string_agg(concat_ws('|', extract(epoch FROM (value->>'window_start')::timestamptz)::bigint,
                                            extract(epoch FROM (value->>'window_end')::timestamptz)::bigint,
                                            coalesce(key, '<null>'), value->>'count', value->>'sum',
                                            value->>'min', value->>'max'), E'\\n'
                                  ORDER BY (value->>'window_start')::timestamptz, coalesce(key, '<null>'))
                  FROM eventlog.read('win_out', 0, $from{win_out}, 100000)
                 WHERE coalesce(key, '<null>') = coalesce(value->'group_key'->>0, '<null>')});
            is($node->safe_psql('postgres', qq{
                   SELECT string_agg((value->>'amount') || '\@' || (value->>'ts'), ',' ORDER BY (value->>'amount') || '\@' || (value->>'ts') COLLATE "C")
                     FROM eventlog.read('late_ev', 0, $from{late_ev}, 100000)}),
               $m->{late_list}, "$name sent the late records to late_ev $when");
        }
        else
        {
            my $aggs = $generic ? 'n, bo, extract(epoch FROM tm)::bigint, ba' : 'n, s, mn, mx';
            # sliding windows' ends in microseconds (a right window starts
            # 1 µs after its record)
            my $scale = $type eq 'sliding' ? 1_000_000 : 1;
            $got = $node->safe_psql('postgres', qq{
                SELECT string_agg(concat_ws('|', (extract(epoch FROM ws) * $scale)::bigint, (extract(epoch FROM we) * $scale)::bigint,
                                            coalesce(k, '<null>'), $aggs), E'\\n'
                                  ORDER BY ws, coalesce(k, '<null>'))
                  FROM $name});
        }
        is($got, $emit eq 'final' ? $m->{closed} : $m->{all}, "$name equals the model $when");
        is($node->safe_psql('postgres', qq{
               SELECT sum(late_records) || ' ' || sum(null_time_records) FROM eventlog.processor_progress('$name')}),
           "$m->{late} $m->{nulls}", "$name counted the late records and NULL event times $when");
        is($node->safe_psql('postgres', qq{SELECT lag FROM eventlog.processors WHERE name = '$name'}),
           '0', "$name has no lag $when");
    }
}
finish_and_check('after kills');

# Replay from offset 0: the same results, the sink overwritten in place
# (the topics written again: compare what comes after).
for my $t (keys %from)
{
    $from{$t} = $node->safe_psql('postgres', "SELECT coalesce(max(offset_id) + 1, 0) FROM eventlog.read('$t', 0, 0, 100000)");
}
$node->safe_psql('postgres', "SELECT eventlog.reset_processor(name) FROM eventlog.processors");
finish_and_check('after a replay from offset 0');

my $m = model('tumbling', 10, 10, 0);
cmp_ok($m->{late}, '>', 10, 'the model has late records');
cmp_ok(scalar(() = $m->{closed} =~ /\n/g), '<', scalar(() = $m->{all} =~ /\n/g),
       'the model has windows still open at the end');
cmp_ok(model('tumbling', 10, 10, 15)->{late}, '<', $m->{late}, 'the retention lets late records update windows');
my $s = model('session', 4, 0, 0);
cmp_ok(scalar(() = $s->{all} =~ /\n/g), '>', 20, 'the model has many sessions');
cmp_ok(scalar(grep { my @f = split /\|/; $f[3] > 1 } split /\n/, $s->{all}), '>', 10,
       'the model has sessions of several records');
cmp_ok($s->{late}, '>', 10, 'the model has records late for sessions');
cmp_ok(model('session', 4, 0, 10)->{late}, '<', $s->{late}, 'the retention lets late records update sessions');
my $sl = model('sliding', 10, 0, 0);
cmp_ok($sl->{late}, '>', 10, 'the model has records late for sliding windows');
cmp_ok(model('sliding', 10, 0, 15)->{late}, '<', $sl->{late}, 'the retention lets late records update sliding windows');
cmp_ok(scalar(grep { my @f = split /\|/; $f[3] > 5 } split /\n/, $sl->{all}), '>', 50,
       'the model has sliding windows of many records');
# right windows start 1 µs after a record (whole seconds here)
cmp_ok(scalar(grep { my @f = split /\|/; $f[0] % 1_000_000 == 1 } split /\n/, $sl->{all}), '>', 50,
       'the model has right windows');
# The aggregates with states of their own see both values.
my $g = model('hopping', 20, 5, 0, 1);
cmp_ok(scalar(grep { my @f = split /\|/; $f[6] eq 't' } split /\n/, $g->{all}), '>', 10, 'bool_or is true in some windows');
cmp_ok(scalar(grep { my @f = split /\|/; $f[6] eq 'f' } split /\n/, $g->{all}), '>', 10, 'and false in others');

$node->stop;
done_testing();
