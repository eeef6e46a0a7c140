# Randomized invariant checker, in the spirit of Jepsen: a random workload
# runs against one server while consumers are killed at random and retention
# drops segments, every client writes down what the database acknowledged,
# and at the end one checker compares those histories with the final log.
#
# The workload, for about 15 seconds (EL_TAP_LONG=1: 120 seconds):
#
# - Producers: several psql sessions run a randomly generated script on the
#   4-partition topic "events": single records in their own transaction,
#   multi-record transactions (produce and produce_batch), keyed, keyless
#   and explicit-partition records, savepoints released or rolled back
#   (nested too), a quarter of the transactions rolled back, and open
#   transactions held for a few milliseconds so that late commits below newer
#   offsets are frequent.  Every record carries a unique id in its value.  A
#   producer prints each record's position as produce returns it and an "ack"
#   line only after COMMIT returned: acknowledged records are those of
#   acknowledged transactions minus those rolled back to a savepoint.
# - Transactional consumers (group "tx") poll, insert what they got into the
#   table tx_consumed and commit in the same transaction (a tenth roll back
#   instead): each record must be in tx_consumed exactly once.
# - Member consumers (group "mem") poll with a member name, print what they
#   got (work outside the database; psql flushes it before the commit is
#   sent), then, after most polls, commit (sometimes after more "work"):
#   every record must be delivered at least once, and again only if no
#   delivery of it had been committed yet (server clock_timestamp() orders
#   deliveries and commits).
# - The driver kills a random consumer every 0.3 to 1.1 seconds:
#   pg_terminate_backend of its backend (both styles, often mid-transaction)
#   or SIGKILL of the psql client (members), and starts a new one at once.
#   A restarted member polls under the dead one's member name, as a real
#   consumer restarting with its configured name does: it must get again
#   what the dead one polled but did not commit (a new server session
#   starts from the committed position; member_restart.spec shows it
#   directly).  Each incarnation still has its own application_name and
#   history file.
# - A plain reader (eventlog.read, a random isolation level per round)
#   follows every partition from offset 0.
# - Retention runs throughout: records older than 4 seconds, segments rolled
#   every 250 ms, a maintenance round every 100 ms.
#
# Telling "removed by retention" from "lost": only explicit evidence excuses
# a missing record.  The final log is read once producers have stopped (and
# maintenance is paused); below its log start offset records are gone, at or
# above it every acknowledged record must be there.  An acknowledged record
# below the final log start must have been returned by the reader, or lie in
# a range the reader was told retention had removed (read's 22003 names the
# log start offset: [reader position, log start)).  The groups have no
# auto_reset: a group whose position retention passed is stuck (poll raises
# 22003) until the driver, acting as the operator, seeks it to 'earliest';
# the driver records each such jump [old position, new position) and only
# records in those ranges may be missing from a group's history.  Positions
# below the log start cannot move (polls fail), so the jump is exact.
#
# Checked at the end, each invariant its own assertion: no acknowledged
# record lost; no record of a rolled-back transaction or savepoint anywhere
# (log, reader, consumers) and its offset stays a gap; no offset handed out
# twice; every record the log or a client shows was acknowledged at that
# position; keys hash to their partition, a batch's records of one partition
# have consecutive offsets, and per key each producer's records are in its
# order; the reader's offsets strictly increase per partition and it never
# passed a record it did not return ("no skipped record", against the
# acknowledgements and the final log); transactional consumers exactly once,
# in offset order; member consumers at least once, in offset order and
# without gap within a poll, and never redelivered once a delivery of the
# record was committed (redeliveries are the uncommitted work of killed
# members, or of partitions rebalanced to a replacement); read returns
# exactly the rows of the segment tables; consumers saw no errors but
# fencing and retention's lost records.
#
# The checker is then proved: two short phases on fresh topics run the same
# deterministic scenario (a transaction holds a low offset open while another
# commits higher ones, the reader reads, then the first commits) and the same
# reader and checker code, once normally (0 violations) and once with
# eventlog.debug_ignore_stable_offset = on in the reader's session, where the
# checker must report exactly the held records as skipped.
#
# EL_TAP_LONG=1 runs the random phase for 120 seconds.  The random plan uses
# a seed printed with note; EL_TAP_SEED=<n> reuses one (the scheduling
# of the concurrent sessions is not reproducible, only the plan).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use Time::HiRes qw(time sleep);
use List::Util qw(min sum0);

my $long = $ENV{EL_TAP_LONG} ? 1 : 0;
my $run_secs = $long ? 120 : 15;
my $seed = $ENV{EL_TAP_SEED} // int(rand(2**31));
srand($seed);
note("random plan seed $seed (EL_TAP_SEED=$seed reuses it)");

my $topic = 'events';
my $nparts = 4;
my $nproducers = 4;
my $ntx = 3;     # transactional consumers running at any time
my $nmem = 3;    # member consumers running at any time

my $node = PostgreSQL::Test::Cluster->new('invariants');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
max_connections = 60
eventlog.maintenance_interval = '100ms'
});
$node->start;
$node->safe_psql('postgres', qq{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('$topic', $nparts, retention => '4 seconds',
                                 segment_interval => '250 milliseconds', segment_bytes => 65536);
    -- No auto_reset: a group that retention passes is stuck until seek.
    SELECT eventlog.create_group('$topic', 'tx');
    SELECT eventlog.create_group('$topic', 'mem');
    CREATE TABLE tx_consumed (seq bigserial, consumer text, partition int, offset_id bigint, id text);
    CREATE TABLE ctl (stop boolean NOT NULL);
    INSERT INTO ctl VALUES (false);
});
my $dir = $node->basedir;

sub write_file
{
    my ($file, $text) = @_;
    open my $fh, '>', $file or die "$file: $!";
    print $fh $text;
    close $fh;
    return $file;
}

# ---------------------------------------------------------------------------
# Interactive sessions (driver, reader, the scenario's producers): psql with
# stdin fed query by query; sq() returns (stdout, stderr) of one round.

sub session_open
{
    my ($app) = @_;
    my $s = { app => $app, in => '', out => '', err => '', n => 0,
              timeout => IPC::Run::timeout(180) };
    $s->{h} = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-q', '-d', $node->connstr('postgres') . " application_name=$app" ],
        '<', \$s->{in}, '>', \$s->{out}, '2>', \$s->{err}, $s->{timeout});
    sq($s, 'SELECT 1');
    return $s;
}

sub sq
{
    my ($s, $sql) = @_;
    my $tag = 'el-sync-' . ++$s->{n};
    ($s->{out}, $s->{err}) = ('', '');
    $s->{timeout}->start(180);
    $s->{in} .= "$sql\n;\n\\echo $tag\n\\warn $tag\n";
    $s->{h}->pump until $s->{out} =~ /^\Q$tag\E\n/m && $s->{err} =~ /^\Q$tag\E\n/m;
    my ($out, $err) = ($s->{out}, $s->{err});
    $out =~ s/^\Q$tag\E\n//m;
    $err =~ s/^\Q$tag\E\n//m;
    return ($out, $err);
}

sub session_close
{
    my ($s) = @_;
    $s->{in} .= "\\q\n";
    $s->{h}->finish;
}

# ---------------------------------------------------------------------------
# The reader: one eventlog.read per partition per step, from where it got to.
# Shared by the random phase and the fault-injection phases.

sub reader_new
{
    my ($t, $n, $fault) = @_;
    my $s = session_open("reader_$t");
    sq($s, 'SET eventlog.debug_ignore_stable_offset = on') if $fault;
    return { s => $s, topic => $t, nparts => $n, pos => [ (0) x $n ], last => [],
             seen => {}, gaps => {}, backwards => [], errors => [], removed_while_reading => 0 };
}

sub reader_step
{
    my ($r) = @_;
    my $iso = ('READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE')[ int(rand(3)) ];
    $r->{step_rows} = 0;
    for my $p (0 .. $r->{nparts} - 1)
    {
        my $pos = $r->{pos}[$p];
        my ($out, $err) = sq($r->{s}, "BEGIN ISOLATION LEVEL $iso;\n"
              . "SELECT offset_id, coalesce(value->>'id', '') FROM eventlog.read('$r->{topic}', $p, $pos, 500);\n"
              . "COMMIT;");
        if ($err ne '')
        {
            if ($err =~ /offset $pos is before the log start offset.*below offset (\d+)\./s)
            {
                # Retention went past the reader: [pos, log start) is gone.
                push @{ $r->{gaps}{$p} }, [ $pos, $1 ];
                $r->{pos}[$p] = $1;
            }
            elsif ($err =~ /is no longer stored/)
            {
                $r->{removed_while_reading}++;    # next step gets the log start error
            }
            else
            {
                push @{ $r->{errors} }, $err;
            }
            $r->{step_rows} = -1;
            next;
        }
        for my $line (split /\n/, $out)
        {
            my ($o, $id) = split /\|/, $line, 2;
            next unless defined $id && $o =~ /^\d+$/;
            push @{ $r->{backwards} }, "partition $p: offset $o after $r->{last}[$p]"
              if defined $r->{last}[$p] && $o <= $r->{last}[$p];
            $r->{last}[$p] = $o;
            push @{ $r->{seen}{$p} }, [ $o, $id ];
            $r->{pos}[$p] = $o + 1 if $o + 1 > $r->{pos}[$p];
            $r->{step_rows}++ if $r->{step_rows} >= 0;
        }
    }
}

# The whole log of a topic once nothing is in flight: log start offsets and
# every record read returns, also compared with the segment tables' rows.
sub final_log
{
    my ($s, $t, $n) = @_;
    my (%log, %start, @mismatch);
    for my $p (0 .. $n - 1)
    {
        for my $try (1 .. 20)
        {
            my ($ls) = sq($s, "SELECT eventlog.log_start_offset('$t', $p)");
            chomp $ls;
            my ($out, $err) = sq($s, "SELECT offset_id, coalesce(value->>'id', '') "
                  . "FROM eventlog.read('$t', $p, $ls, 100000000)");
            next if $err ne '';    # retention moved on meanwhile: again
            my ($seg) = sq($s, qq{SELECT string_agg(format('SELECT offset_id, coalesce(value->>''id'', '''') FROM eventlog_segments.%I WHERE offset_id >= $ls', s.table_name), ' UNION ALL ')
                FROM eventlog.segment_catalog s JOIN eventlog.topic_catalog c USING (topic_id)
               WHERE c.name = '$t' AND s.partition = $p});
            chomp $seg;
            my ($raw, $raw_err) = $seg eq '' ? ('', '') : sq($s, "SELECT * FROM ($seg) r ORDER BY 1");
            my ($ls2) = sq($s, "SELECT eventlog.log_start_offset('$t', $p)");
            chomp $ls2;
            next if $raw_err ne '' || $ls2 ne $ls;    # a segment dropped meanwhile: again
            push @mismatch, "partition $p: segment tables and read differ" if $raw ne $out;
            $start{$p} = $ls;
            $log{$p} = {};
            for my $line (split /\n/, $out)
            {
                my ($o, $id) = split /\|/, $line, 2;
                $log{$p}{$o} = $id;
            }
            last;
        }
        die "could not read partition $p of $t" unless defined $start{$p};
    }
    return (\%log, \%start, \@mismatch);
}

# ---------------------------------------------------------------------------
# The checker: the same code for the random phase and the fault phases.
# Arguments: ack and abort (id -> record with its position), log and start
# (final_log), segment_mismatch, reader; for the random phase also
# key_partition, batches, tx (rows of tx_consumed), tx_resets, mem (member
# histories) and mem_resets.  Returns violations by invariant, and counts.

sub in_ranges
{
    my ($ranges, $o) = @_;
    for my $r (@{ $ranges || [] })
    {
        return 1 if $o >= $r->[0] && $o < $r->[1];
    }
    return 0;
}

sub check
{
    my (%arg) = @_;
    my %v = map { $_ => [] } qw(lost aborted_visible misplaced offset_unique key_partition key_order batch_order
      reader_order reader_skip reader_errors tx_duplicate tx_missing tx_order tx_unknown
      mem_missing mem_unknown mem_poll_order mem_poll_gap mem_redelivered segment_tables);
    my %stats = (removed_by_retention => 0, reader_gap_records => 0);
    my ($ack, $abort, $log, $start) = @arg{qw(ack abort log start)};

    # Where each acknowledged record is, and which offsets are known records.
    my %at;    # "p/o" -> id
    $at{"$_->{p}/$_->{o}"} = $_->{id} for values %$ack;
    my %aborted_at;
    for my $id (keys %$abort)
    {
        $aborted_at{"$abort->{$id}{p}/$abort->{$id}{o}"} = $id if defined $abort->{$id};
    }
    # Every produce call got its own offset, committed or not.
    my %owner;
    for my $rec (values %$ack, grep { defined } values %$abort)
    {
        my $k = "$rec->{p}/$rec->{o}";
        push @{ $v{offset_unique} }, "$k was handed to $owner{$k} and to $rec->{id}" if exists $owner{$k};
        $owner{$k} = $rec->{id};
    }
    # An observation (partition, offset, id) of some client: classified.
    my $observe = sub {
        my ($who, $p, $o, $id, $list) = @_;
        if (exists $abort->{$id} || exists $aborted_at{"$p/$o"})
        {
            push @{ $v{aborted_visible} }, "$who returned $id at $p/$o (rolled back)";
        }
        elsif (!exists $ack->{$id} || $ack->{$id}{p} != $p || $ack->{$id}{o} != $o)
        {
            push @$list, "$who returned $id at $p/$o, acknowledged at "
              . (exists $ack->{$id} ? "$ack->{$id}{p}/$ack->{$id}{o}" : 'nowhere');
        }
    };

    # The final log: every record acknowledged, at its position.
    for my $p (keys %$log)
    {
        $observe->('the final log', $p, $_, $log->{$p}{$_}, $v{misplaced}) for keys %{ $log->{$p} };
    }
    push @{ $v{segment_tables} }, @{ $arg{segment_mismatch} || [] };

    # The reader.
    my $r = $arg{reader};
    my %rseen;
    for my $p (keys %{ $r->{seen} })
    {
        for my $x (@{ $r->{seen}{$p} })
        {
            $rseen{"$p/$x->[0]"} = $x->[1];
            $observe->('the reader', $p, @$x, $v{misplaced});
        }
    }
    push @{ $v{reader_order} }, @{ $r->{backwards} };
    push @{ $v{reader_errors} }, @{ $r->{errors} };
    # Records the reader passed: acknowledged ones, and whatever the final
    # log holds (which the checks above match against the acknowledgements).
    my $passed = sub {
        my ($k, $id) = @_;
        my ($p, $o) = split m{/}, $k;
        return if $o >= $r->{pos}[$p] || exists $rseen{$k};
        if (in_ranges($r->{gaps}{$p}, $o))
        {
            $stats{reader_gap_records}++;
            return;
        }
        push @{ $v{reader_skip} }, "the reader passed $id at $k without returning it";
    };
    $passed->($_, $at{$_}) for keys %at;
    for my $p (keys %$log)
    {
        $passed->("$p/$_", $log->{$p}{$_}) for grep { !exists $at{"$p/$_"} } keys %{ $log->{$p} };
    }
    @{ $v{reader_skip} } = sort @{ $v{reader_skip} };

    # Lost: at or above the final log start, an acknowledged record is in
    # the log; below it, retention removed it, which some evidence must show.
    for my $rec (values %$ack)
    {
        my ($p, $o, $id) = @$rec{qw(p o id)};
        if ($o >= $start->{$p})
        {
            push @{ $v{lost} }, "$id at $p/$o is not in the log"
              unless defined $log->{$p}{$o} && $log->{$p}{$o} eq $id;
        }
        else
        {
            $stats{removed_by_retention}++;
            push @{ $v{lost} }, "$id at $p/$o, below the log start $start->{$p}: neither returned nor removed before the reader came"
              unless exists $rseen{"$p/$o"} || in_ranges($r->{gaps}{$p}, $o);
        }
    }
    # Offsets of rolled-back records stay gaps.
    for my $k (keys %aborted_at)
    {
        my ($p, $o) = split m{/}, $k;
        push @{ $v{aborted_visible} }, "offset $k of rolled-back $aborted_at{$k} holds $log->{$p}{$o}"
          if defined $log->{$p}{$o} && $log->{$p}{$o} ne $aborted_at{$k};
    }

    # Producers: keys hash to their partition, per producer and key the
    # producer's order is the offset order, a batch's records of one
    # partition are consecutive.
    my %by_key;
    for my $rec (values %$ack)
    {
        if (defined $rec->{key} && !$rec->{explicit})
        {
            push @{ $v{key_partition} }, "$rec->{id} with key $rec->{key} in partition $rec->{p}, not $arg{key_partition}{$rec->{key}}"
              if defined $arg{key_partition} && $arg{key_partition}{ $rec->{key} } != $rec->{p};
            push @{ $by_key{"$rec->{w}/$rec->{key}"} }, $rec;
        }
    }
    for my $k (keys %by_key)
    {
        my @recs = sort { $a->{n} <=> $b->{n} } @{ $by_key{$k} };
        for my $i (1 .. $#recs)
        {
            push @{ $v{key_order} }, "producer/key $k: $recs[$i]{id} at $recs[$i]{p}/$recs[$i]{o} after $recs[$i-1]{id} at $recs[$i-1]{p}/$recs[$i-1]{o}"
              unless $recs[$i]{p} == $recs[ $i - 1 ]{p} && $recs[$i]{o} > $recs[ $i - 1 ]{o};
        }
    }
    for my $batch (values %{ $arg{batches} || {} })
    {
        my %last;
        for my $rec (grep { defined } @$batch)    # input order, as produce_batch returned them
        {
            push @{ $v{batch_order} }, "$rec->{id} at $rec->{p}/$rec->{o} after offset $last{$rec->{p}} in its batch"
              if defined $last{ $rec->{p} } && $rec->{o} != $last{ $rec->{p} } + 1;
            $last{ $rec->{p} } = $rec->{o};
        }
    }

    # Transactional consumers: exactly once, in offset order per partition.
    if ($arg{tx})
    {
        my (%count, %last);
        for my $row (@{ $arg{tx} })
        {
            my ($seq, $who, $p, $o, $id) = @$row;
            $count{"$p/$o"}++;
            $observe->("transactional consumer $who", $p, $o, $id, $v{tx_unknown});
            push @{ $v{tx_order} }, "partition $p: offset $o consumed after $last{$p}"
              if defined $last{$p} && $o <= $last{$p};
            $last{$p} = $o;
        }
        $stats{tx_consumed} = scalar @{ $arg{tx} };
        $stats{tx_skipped_by_reset} = 0;
        for my $k (sort keys %count)
        {
            push @{ $v{tx_duplicate} }, "$k consumed $count{$k} times" if $count{$k} > 1;
        }
        for my $rec (values %$ack)
        {
            next if $count{"$rec->{p}/$rec->{o}"};
            if (in_ranges($arg{tx_resets}{ $rec->{p} }, $rec->{o}))
            {
                $stats{tx_skipped_by_reset}++;
                next;
            }
            push @{ $v{tx_missing} }, "$rec->{id} at $rec->{p}/$rec->{o} never consumed";
        }
    }

    # Member consumers: at least once; in order and without gap within a
    # poll; no delivery after a commit that covered the record.
    if ($arg{mem})
    {
        my (%delivered, %committed_at);
        my %acked_offsets;    # p -> sorted offsets of acknowledged records
        push @{ $acked_offsets{ $_->{p} } }, $_->{o} for values %$ack;
        my %next_acked;       # "p/o" -> next acknowledged offset in p
        for my $p (keys %acked_offsets)
        {
            my @o = sort { $a <=> $b } @{ $acked_offsets{$p} };
            $next_acked{"$p/$o[$_]"} = $o[ $_ + 1 ] for 0 .. $#o - 1;
        }
        for my $inc (@{ $arg{mem} })
        {
            my $who = $inc->{name};
            my (%pending, %poll_last);
            for my $ev (@{ $inc->{events} })
            {
                my ($type, @f) = @$ev;
                if ($type eq 'rec')
                {
                    my ($it, $p, $o, $id, $ts) = @f;
                    $observe->("member $who", $p, $o, $id, $v{mem_unknown});
                    push @{ $delivered{"$p/$o"} }, "$ts $who";
                    push @{ $pending{$p} }, $o;
                    my $prev = $poll_last{"$it/$p"};
                    if (defined $prev)
                    {
                        if ($o <= $prev)
                        {
                            push @{ $v{mem_poll_order} }, "member $who poll $it: $p/$o after offset $prev";
                        }
                        elsif (defined $next_acked{"$p/$prev"} && $next_acked{"$p/$prev"} < $o)
                        {
                            push @{ $v{mem_poll_gap} }, "member $who poll $it: $p/$o right after offset $prev, skipping acknowledged offset $next_acked{qq{$p/$prev}}";
                        }
                    }
                    $poll_last{"$it/$p"} = $o;
                }
                else    # a commit returned: the deliveries below it are committed
                {
                    my ($p, $next, $ts) = @f;
                    my @still;
                    for my $o (@{ $pending{$p} || [] })
                    {
                        if ($o < $next)
                        {
                            $committed_at{"$p/$o"} = $ts
                              if !defined $committed_at{"$p/$o"} || $ts < $committed_at{"$p/$o"};
                        }
                        else
                        {
                            push @still, $o;
                        }
                    }
                    $pending{$p} = \@still;
                }
            }
        }
        for my $k (keys %committed_at)
        {
            for my $d (@{ $delivered{$k} })
            {
                my ($ts, $who) = split / /, $d;
                push @{ $v{mem_redelivered} }, "$k delivered to $who at $ts after a commit at $committed_at{$k}"
                  if $ts > $committed_at{$k};
            }
        }
        $stats{mem_deliveries} = sum0(map { scalar @$_ } values %delivered);
        $stats{mem_redeliveries} = $stats{mem_deliveries} - scalar(keys %delivered);
        $stats{mem_skipped_by_reset} = 0;
        for my $rec (values %$ack)
        {
            next if $delivered{"$rec->{p}/$rec->{o}"};
            if (in_ranges($arg{mem_resets}{ $rec->{p} }, $rec->{o}))
            {
                $stats{mem_skipped_by_reset}++;
                next;
            }
            push @{ $v{mem_missing} }, "$rec->{id} at $rec->{p}/$rec->{o} never delivered";
        }
    }
    return (\%v, \%stats);
}

# Asserts that a phase had no violation of any invariant, one test each.
my %invariant_names = (
    lost            => 'no acknowledged record lost (missing ones are below the log start and were returned, or removed before the reader came)',
    aborted_visible => 'no record of a rolled-back transaction or savepoint visible, and their offsets stay gaps',
    offset_unique   => 'no offset handed out twice (to committed or rolled-back records)',
    misplaced       => 'every record in the log and returned by the reader was acknowledged, at that position',
    segment_tables  => 'read returns exactly the rows of the segment tables',
    key_partition   => 'every keyed record is in its key\'s partition',
    key_order       => 'per key, each producer\'s records are in its order',
    batch_order     => 'a batch\'s records of one partition have consecutive offsets in input order',
    reader_order    => 'the reader\'s offsets strictly increase per partition',
    reader_skip     => 'the reader never passed a record without returning it',
    reader_errors   => 'the reader saw no error but retention\'s documented ones',
    tx_duplicate    => 'transactional consumers: no record consumed twice',
    tx_missing      => 'transactional consumers: every record consumed (but those a seek past retention skipped)',
    tx_order        => 'transactional consumers: each partition consumed in offset order',
    tx_unknown      => 'transactional consumers: only acknowledged records, at their position',
    mem_missing     => 'member consumers: every record delivered at least once (but those a seek past retention skipped)',
    mem_unknown     => 'member consumers: only acknowledged records, at their position',
    mem_poll_order  => 'member consumers: a poll returns each partition in offset order',
    mem_poll_gap    => 'member consumers: no acknowledged record skipped within a poll',
    mem_redelivered => 'member consumers: no record delivered again after a commit covered it',
);

sub assert_clean
{
    my ($phase, $v) = @_;
    for my $k (sort keys %$v)
    {
        my @list = @{ $v->{$k} };
        is(scalar @list, 0, "$phase: $invariant_names{$k}")
          or diag(join("\n", @list[ 0 .. min(9, $#list) ]));
    }
}

# ---------------------------------------------------------------------------
# Producer scripts.  Each produce prints "rec|id|partition|offset|meta", meta
# being what the plan says of the record: transaction, fate (commit,
# savepoint: rolled back to one, rollback: with its transaction), key,
# explicit partition or not, batch number and index.  The fate is written in
# once the transaction's plan is complete.

my @key_pool = map { "k$_" } 0 .. 19;
my $batch_no = 0;

sub gen_producer
{
    my ($w, $ntxn, $file) = @_;
    open my $fh, '>', $file or die "$file: $!";
    my $n = 0;
    my (%meta, %fate);    # of the current transaction's records
    my $new_id = sub {
        my ($txn, $key, $explicit, $batch) = @_;
        my $id = "$w-" . ++$n;
        $meta{$id} = join(';', $txn, '%s', $key // '', $explicit ? 1 : 0, $batch // '');
        $fate{$id} = 'commit';
        my $pad = 'x' x int(rand(150));
        return ($id, qq({"id": "$id", "w": $w, "n": $n, "pad": "$pad"}));
    };
    # One produce or produce_batch statement; returns its SQL and ids.
    my $statement = sub {
        my ($txn) = @_;
        if (rand() < 0.25)
        {
            my $bid = ++$batch_no;
            my $keyed = rand() < 0.6;
            my (@ids, @keys, @vals);
            for my $i (1 .. 2 + int(rand(4)))
            {
                my $key = $keyed && rand() < 0.8 ? $key_pool[ rand @key_pool ] : undef;
                my ($id, $val) = $new_id->($txn, $key, 0, "$bid.$i");
                push @ids, $id;
                push @keys, defined $key ? "'$key'" : 'NULL';
                push @vals, "'$val'";
            }
            my $karr = $keyed ? 'ARRAY[' . join(', ', @keys) . ']::text[]' : 'NULL';
            return ("SELECT 'rec', (ARRAY['" . join("', '", @ids) . "'])[b.ord], b.partition, b.offset_id, "
                  . "(ARRAY['" . join("', '", map { "\@M:$_\@" } @ids) . "'])[b.ord] "
                  . "FROM eventlog.produce_batch('$topic', $karr, ARRAY[" . join(', ', @vals) . "]::jsonb[]) "
                  . "WITH ORDINALITY AS b(partition, offset_id, ord);\n", @ids);
        }
        my $r = rand();
        my $key = $r < 0.55 || $r >= 0.85 && rand() < 0.5 ? $key_pool[ rand @key_pool ] : undef;
        my $explicit = $r >= 0.85;
        my ($id, $val) = $new_id->($txn, $key, $explicit);
        my $extra = $explicit ? ', partition => ' . int(rand($nparts)) : '';
        $extra .= ", headers => '{\"h\": $n}'" if rand() < 0.2;
        return ("SELECT 'rec', '$id', partition, offset_id, '\@M:$id\@' FROM eventlog.produce('$topic', "
              . (defined $key ? "'$key'" : 'NULL') . ", '$val'$extra);\n", $id);
    };
    for my $t (1 .. $ntxn)
    {
        my $sql = '';
        (%meta, %fate) = ();
        $sql .= "SELECT stop FROM ctl \\gset\n\\if :stop\n\\q\n\\endif\n" if $t % 4 == 1;
        my $txn = "$w.$t";
        if (rand() < 0.15)
        {
            # A single statement, its own transaction.
            my ($s) = $statement->($txn);
            $sql .= $s . "\\echo ack $txn\n";
        }
        else
        {
            my (@ids, @stack);
            my $sp = 0;
            $sql .= "BEGIN;\n";
            my $close = sub {
                my ($name, $from) = @{ pop @stack };
                if (rand() < 0.5)
                {
                    $sql .= "ROLLBACK TO SAVEPOINT $name;\n";
                    $fate{$_} = 'savepoint' for @ids[ $from .. $#ids ];
                }
                else
                {
                    $sql .= "RELEASE SAVEPOINT $name;\n";
                }
            };
            for (1 .. 1 + int(rand(5)))
            {
                my $r = rand();
                if ($r < 0.25 && @stack < 2)
                {
                    $sp++;
                    push @stack, [ "s$sp", scalar @ids ];
                    $sql .= "SAVEPOINT s$sp;\n";
                }
                elsif ($r < 0.4 && @stack)
                {
                    $close->();
                }
                else
                {
                    my ($s, @new) = $statement->($txn);
                    $sql .= $s;
                    push @ids, @new;
                }
            }
            $close->() while @stack;
            $sql .= sprintf("SELECT FROM pg_sleep(%.4f);\n", rand(0.005)) if rand() < 0.5;
            if (rand() < 0.25)
            {
                $sql .= "ROLLBACK;\n";
                $fate{$_} = 'rollback' for @ids;
            }
            else
            {
                $sql .= "COMMIT;\n\\echo ack $txn\n";
            }
        }
        $sql =~ s/\@M:([^@]+)\@/sprintf($meta{$1}, $fate{$1})/ge;
        print $fh $sql, sprintf("SELECT FROM pg_sleep(%.4f);\n", rand(0.012));
    }
    close $fh;
    return $file;
}

# What a producer's output says: every record it produced with its position
# and plan, acknowledged (its transaction's "ack" line came and it was not
# rolled back to a savepoint) or not.  Records of one batch are collected in
# input order.
sub producer_history
{
    my ($file, $ack, $abort, $batches) = @_;
    my (%recs, %acked);
    open my $fh, '<', $file or die "$file: $!";
    while (my $line = <$fh>)
    {
        if (my ($id, $p, $o, $txn, $fate, $key, $explicit, $batch) =
            $line =~ /^rec\|([^|]+)\|(\d+)\|(\d+)\|([^;]*);([^;]*);([^;]*);([01]);(\S*)$/)
        {
            my ($w, $n) = split /-/, $id;
            $recs{$id} = { id => $id, p => $p, o => $o, txn => $txn, fate => $fate,
                           key => $key eq '' ? undef : $key, explicit => $explicit, w => $w, n => $n };
            my ($bid, $i) = split /\./, $batch;
            $batches->{$bid}[ $i - 1 ] = $recs{$id} if defined $i;
        }
        elsif ($line =~ /^ack (\S+)$/)
        {
            $acked{$1} = 1;
        }
    }
    close $fh;
    for my $rec (values %recs)
    {
        if ($rec->{fate} eq 'commit' && $acked{ $rec->{txn} })
        {
            $ack->{ $rec->{id} } = $rec;
        }
        else
        {
            $abort->{ $rec->{id} } = $rec;
        }
    }
}

my @producers;
my $txn_per_producer = int($run_secs * 120) + 200;    # more than they get through
for my $w (1 .. $nproducers)
{
    my $file = gen_producer($w, $txn_per_producer, "$dir/producer$w.sql");
    my $out = "$dir/producer$w.out";
    push @producers, { w => $w, out => $out, h => IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
          '-d', $node->connstr('postgres') . " application_name=producer$w", '-f', $file ],
        '<', '/dev/null', '>', $out, '2>', "$out.err") };
}

# ---------------------------------------------------------------------------
# Consumers.

my $tx_file = write_file("$dir/tx_consumer.sql", qq{
DO \$\$
DECLARE
    me text := current_setting('application_name');
    n integer;
BEGIN
    LOOP
        BEGIN
            INSERT INTO tx_consumed (consumer, partition, offset_id, id)
            SELECT me, r.partition, r.offset_id, r.value->>'id'
              FROM eventlog.poll('$topic', 'tx', 1 + (random() * 40)::int,
                                 partitions => 1 + (random() < 0.3)::int,
                                 wait => '100 milliseconds') r;
            GET DIAGNOSTICS n = ROW_COUNT;
        EXCEPTION WHEN numeric_value_out_of_range THEN
            -- Retention passed the group's position: wait for the seek.
            n := -1;
        END;
        IF random() < 0.1 THEN
            ROLLBACK;   -- the records come again
        ELSE
            COMMIT;
        END IF;
        IF n < 0 THEN
            PERFORM pg_sleep(0.02);
        END IF;
    END LOOP;
END
\$\$;
});

# A member: poll, print what it got (the work, flushed by the backslash
# command that follows), sometimes work a little longer, and commit after
# most polls (the commit covers every poll since the last one); sleep a
# little when idle.  :me is its name.
my $ts = q{(extract(epoch from clock_timestamp()) * 1000000)::bigint};
my $mem_iterations = $long ? 3000 : 1500;
my $mem_sql = '';
for my $it (1 .. $mem_iterations)
{
    my $max = 1 + int(rand(60));
    $mem_sql .= "SELECT 'rec|$it|' || partition || '|' || offset_id || '|' || coalesce(value->>'id', '') || '|' || $ts "
      . "FROM eventlog.poll('$topic', 'mem', $max, member => :'me', session_timeout => '2 seconds', wait => '100 milliseconds');\n"
      . "SELECT :ROW_COUNT = 0 AS idle \\gset\n"
      . "\\echo polled $it\n";
    $mem_sql .= sprintf("SELECT FROM pg_sleep(%.3f);\n", rand(0.03)) if rand() < 0.3;
    $mem_sql .= "SELECT 'com|' || partition || '|' || offset_id || '|' || $ts FROM eventlog.commit('$topic', 'mem', :'me');\n"
      if rand() < 0.7;
    $mem_sql .= "\\if :idle\nSELECT FROM pg_sleep(0.01);\n\\endif\n";
}
$mem_sql .= "SELECT eventlog.leave('$topic', 'mem', :'me');\n";
my $mem_file = write_file("$dir/member.sql", $mem_sql);

my %incs;    # incarnation name -> consumer
my $inc_no = 0;
my %count = (tx_started => 0, mem_started => 0, kills_tx => 0, kills_mem_backend => 0,
             kills_mem_client => 0);
my @unexpected;

sub start_consumer
{
    my ($kind, $member) = @_;
    my $name = ($kind eq 'tx' ? 'tx' : 'm') . ++$inc_no;
    $member //= "w$name";    # a member name, kept by its restarts
    my $out = "$dir/$name.out";
    my @vars = $kind eq 'tx' ? ('-v', 'ON_ERROR_STOP=1') : ('-v', "me=$member");
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-q', @vars,
          '-d', $node->connstr('postgres') . " application_name=$name",
          '-f', $kind eq 'tx' ? $tx_file : $mem_file ],
        '<', '/dev/null', '>', $out, '2>', "$out.err");
    $incs{$name} = { name => $name, member => $member, kind => $kind, h => $h, out => $out,
                     alive => 1, killed => 0 };
    $count{"${kind}_started"}++;
    return $name;
}

my $ctl = session_open('driver');

sub kill_one
{
    my $kind = rand() < 0.5 ? 'tx' : 'mem';
    my @cands = grep { $incs{$_}{alive} && !$incs{$_}{killed} && $incs{$_}{kind} eq $kind } sort keys %incs;
    return unless @cands;
    my $c = $incs{ $cands[ rand @cands ] };
    if ($c->{kind} eq 'mem' && rand() < 0.5)
    {
        $c->{h}->signal('KILL');
        $count{kills_mem_client}++;
    }
    else
    {
        my ($n) = sq($ctl, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '$c->{name}'");
        chomp $n;
        return unless $n;    # not connected yet: try another time
        $count{ $c->{kind} eq 'tx' ? 'kills_tx' : 'kills_mem_backend' }++;
    }
    $c->{killed} = 1;
    start_consumer($c->{kind}, $c->{member});
}

# Consumers that ended: reap them.  A transactional consumer only ends when
# killed; a member also when it ran through its script: start another.
my $stopping = 0;
sub reap
{
    for my $c (values %incs)
    {
        next unless $c->{alive} && !$c->{h}->pumpable;
        eval { $c->{h}->finish };
        $c->{alive} = 0;
        next if $c->{killed} || $stopping;
        if ($c->{kind} eq 'tx')
        {
            push @unexpected, "$c->{name} ended: " . slurp_file("$c->{out}.err");
        }
        start_consumer($c->{kind}, $c->{member});
    }
}

# The operator's part: a group whose position retention passed (no
# auto_reset) is moved on with seek; each jump is recorded.  Log start
# offsets are read first: a position still below one afterwards cannot move
# until the seek (polls fail), so the jump is exactly what was skipped.
my (%resets, @seek_errors);
sub reset_lost_groups
{
    my ($ls_out) = sq($ctl, "SELECT p, eventlog.log_start_offset('$topic', p) FROM generate_series(0, $nparts - 1) p");
    my %ls = map { split /\|/ } split /\n/, $ls_out;
    my ($pos_out) = sq($ctl, qq{
        SELECT o.group_name, o.partition, o.next_offset, coalesce(o.fetch_offset, o.next_offset)
          FROM eventlog.group_offsets o JOIN eventlog.topic_catalog t USING (topic_id)
         WHERE t.name = '$topic'});
    for my $line (split /\n/, $pos_out)
    {
        my ($g, $p, $next, $fetch) = split /\|/, $line;
        next unless $fetch < $ls{$p};
        my ($out, $err) = sq($ctl, "SELECT offset_id FROM eventlog.seek('$topic', '$g', 'earliest', $p, force => true)");
        if ($err ne '' || $out !~ /^(\d+)$/m)
        {
            push @seek_errors, $err;
            next;
        }
        push @{ $resets{$g}{$p} }, [ $next, $1 ];
    }
}

start_consumer('tx') for 1 .. $ntx;
start_consumer('mem') for 1 .. $nmem;
my $reader = reader_new($topic, $nparts, 0);

# ---------------------------------------------------------------------------
# The random phase: the driver loop.

my $t0 = time;
my $phase = 'run';
my $next_kill = $t0 + 0.5 + rand(0.5);
my ($next_reset, $next_catchup_check) = ($t0, 0);
my ($caught_up, $deadline) = (0, 0);
my $steps = 0;
while (1)
{
    my $stepped_in = $phase;
    reader_step($reader);
    $steps++;
    my $now = time;
    if ($phase eq 'run' && $now >= $next_kill)
    {
        kill_one();
        $next_kill = $now + 0.3 + rand(0.8);
    }
    if ($now >= $next_reset)
    {
        reset_lost_groups();
        $next_reset = $now + 0.1;
    }
    reap();
    if ($phase eq 'run' && $now >= $t0 + $run_secs)
    {
        sq($ctl, 'UPDATE ctl SET stop = true');
        $phase = 'drain';
    }
    if ($phase eq 'drain' && !grep { $_->{h}->pumpable } @producers)
    {
        # Producers are done: pause maintenance, so that the final log
        # keeps the last seconds of records, and let consumers catch up.
        sq($ctl, q{ALTER SYSTEM SET eventlog.maintenance_interval = '1h'});
        sq($ctl, 'SELECT pg_reload_conf()');
        $phase = 'catchup';
        $deadline = $now + 120;
    }
    if ($stepped_in eq 'catchup' && $now >= $next_catchup_check)
    {
        # Caught up: both groups without lag, and the reader's last round
        # (begun after the producers ended) found nothing more.
        $next_catchup_check = $now + 0.2;
        my ($lagging) = sq($ctl, "SELECT count(*) FROM eventlog.consumer_groups WHERE topic = '$topic' AND lag > 0");
        chomp $lagging;
        if ($lagging eq '0' && $reader->{step_rows} == 0)
        {
            $caught_up = 1;
            last;
        }
        last if $now > $deadline;
    }
    sleep(0.01);
}
my $elapsed = time - $t0;
ok($caught_up, 'the reader and both groups caught up with the log once producers stopped');

# Stop the consumers, then collect everybody's history.
$stopping = 1;
sq($ctl, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name ~ '^(tx|m)[0-9]+\$'");
for my $c (values %incs)
{
    next unless $c->{alive};
    $c->{h}->signal('KILL') if $c->{h}->pumpable;
    eval { $c->{h}->finish };
    $c->{alive} = 0;
}

my (%ack, %abort, %batches);
for my $pr (@producers)
{
    my $ok = eval { $pr->{h}->finish; 1 };
    ok($ok && $pr->{h}->result == 0, "producer $pr->{w} ran its script without error")
      or diag(slurp_file("$pr->{out}.err"));
    producer_history($pr->{out}, \%ack, \%abort, \%batches);
}

my ($log, $start, $seg_mismatch) = final_log($ctl, $topic, $nparts);

my @tx_rows = map { [ split /\|/ ] } split /\n/,
  $node->safe_psql('postgres', 'SELECT seq, consumer, partition, offset_id, id FROM tx_consumed ORDER BY seq');

# Member histories: complete lines only (a killed client may have left half
# a line at the end of its output).
my @mem;
for my $c (sort { $a->{name} cmp $b->{name} } grep { $_->{kind} eq 'mem' } values %incs)
{
    my $text = slurp_file($c->{out});
    my @lines = split /\n/, $text, -1;
    pop @lines;    # after the last newline: empty, or a partial line
    my @events;
    for (@lines)
    {
        if (/^rec\|(\d+)\|(\d+)\|(\d+)\|([^|]*)\|(\d{16})$/)
        {
            push @events, [ 'rec', $1, $2, $3, $4, $5 ];
        }
        elsif (/^com\|(\d+)\|(\d+)\|(\d{16})$/)
        {
            push @events, [ 'com', $1, $2, $3 ];
        }
    }
    push @mem, { name => $c->{name}, events => \@events };
}

# Errors consumers printed: members see fencing (a commit after losing a
# partition) and retention's documented 22003 errors (lost records until the
# seek, a segment removed under a poll); nothing else.
my @consumer_errors;
for my $c (sort { $a->{name} cmp $b->{name} } values %incs)
{
    for my $line (split /\n/, slurp_file("$c->{out}.err"))
    {
        next unless $line =~ /ERROR:\s+(.*)/;
        next if $c->{kind} eq 'mem'
          && $1 =~ /^member "\S+" (is not in group|does not own partition)|has lost records in partition|is before the log start offset|is no longer stored/;
        push @consumer_errors, "$c->{name}: $line";
    }
}
is(scalar @consumer_errors, 0, 'consumers saw no errors but fencing and retention\'s lost records')
  or diag(join("\n", @consumer_errors[ 0 .. min(9, $#consumer_errors) ]));

my %key_partition = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
    "SELECT k, eventlog.partition_for_key(k, $nparts) FROM unnest(ARRAY['" . join("', '", @key_pool) . "']) k");

my ($v, $stats) = check(
    ack => \%ack, abort => \%abort, log => $log, start => $start,
    segment_mismatch => $seg_mismatch, reader => $reader, key_partition => \%key_partition,
    batches => \%batches, tx => \@tx_rows, tx_resets => $resets{tx} || {},
    mem => \@mem, mem_resets => $resets{mem} || {});

# What the run did.
my %fates;
$fates{ $_->{fate} }++ for values %abort;
my ($segments_removed) = $node->safe_psql('postgres', 'SELECT sum(segments_removed) FROM eventlog.maintenance');
my $kills = $count{kills_tx} + $count{kills_mem_backend} + $count{kills_mem_client};
note(sprintf("random phase: %.1f s, %d reader rounds", $elapsed, $steps));
note(sprintf("produced: %d records acknowledged, %d rolled back (%d with their transaction, %d to a savepoint), %d batches",
    scalar(keys %ack), scalar(keys %abort), $fates{rollback} // 0, $fates{savepoint} // 0, scalar(keys %batches)));
note(sprintf("kills: %d (%d transactional consumers, %d member backends, %d member clients); %d consumers started",
    $kills, $count{kills_tx}, $count{kills_mem_backend}, $count{kills_mem_client}, $count{tx_started} + $count{mem_started}));
note(sprintf("retention: %d segments removed, %d acknowledged records removed, final log start offsets %s; %d records in the final log",
    $segments_removed, $stats->{removed_by_retention}, join(',', map { $start->{$_} } 0 .. $nparts - 1),
    sum0(map { scalar keys %{ $log->{$_} } } 0 .. $nparts - 1)));
note(sprintf("reader: %d records, %d skipped by retention (in %d gaps), %d reads of a segment removed meanwhile",
    sum0(map { scalar @{ $reader->{seen}{$_} || [] } } 0 .. $nparts - 1), $stats->{reader_gap_records},
    sum0(map { scalar @{ $reader->{gaps}{$_} || [] } } 0 .. $nparts - 1), $reader->{removed_while_reading}));
note(sprintf("transactional consumers: %d rows, %d records skipped by %d seeks past retention",
    $stats->{tx_consumed}, $stats->{tx_skipped_by_reset}, sum0(map { scalar @$_ } values %{ $resets{tx} || {} })));
note(sprintf("member consumers: %d deliveries, %d redeliveries, %d records skipped by %d seeks past retention",
    $stats->{mem_deliveries}, $stats->{mem_redeliveries}, $stats->{mem_skipped_by_reset},
    sum0(map { scalar @$_ } values %{ $resets{mem} || {} })));

ok(keys(%ack) > 1000 && ($fates{rollback} // 0) > 0 && ($fates{savepoint} // 0) > 0,
   'the run acknowledged records and rolled back transactions and savepoints');
ok($count{kills_tx} > 0 && $count{kills_mem_backend} + $count{kills_mem_client} > 0,
   'consumers of both styles were killed');
ok($segments_removed > 0 && $stats->{removed_by_retention} > 0,
   'retention removed segments holding acknowledged records during the run');
is(scalar @unexpected, 0, 'no transactional consumer ended unless killed') or diag(join("\n", @unexpected));
is(scalar @seek_errors, 0, 'every seek past retention worked') or diag(join("\n", @seek_errors));
assert_clean('random phase', $v);

# ---------------------------------------------------------------------------
# Proof of the checker: a deterministic hole, without and with the fault.
# A holds low offsets open, B commits higher ones, the reader reads, then A
# commits (one round A rolls back instead, a gap nobody may report).

sub hole_phase
{
    my ($t, $fault) = @_;
    $node->safe_psql('postgres', "SELECT eventlog.create_topic('$t', 1)");
    my $r = reader_new($t, 1, $fault);
    my ($A, $B) = (session_open("${t}_a"), session_open("${t}_b"));
    my (%ack, %abort, @held_committed);
    my $k = 0;
    my $produce = sub {
        my ($s) = @_;
        my $id = "$t-" . ++$k;
        my ($out, $err) = sq($s, "SELECT partition, offset_id FROM eventlog.produce('$t', NULL, '{\"id\": \"$id\"}')");
        die "produce failed: $err" if $err ne '';
        chomp $out;
        my ($p, $o) = split /\|/, $out;
        return { id => $id, p => $p, o => $o, w => 0, n => $k };
    };
    for my $round (1 .. 4)
    {
        sq($A, 'BEGIN');
        my @held = map { $produce->($A) } 1 .. 1 + int(rand(2));
        my @late = map { $produce->($B) } 1 .. 1 + int(rand(3));    # autocommit: acknowledged
        $ack{ $_->{id} } = $_ for @late;
        reader_step($r);
        if ($round == 3)
        {
            sq($A, 'ROLLBACK');
            $abort{ $_->{id} } = $_ for @held;
        }
        else
        {
            sq($A, 'COMMIT');
            $ack{ $_->{id} } = $_ for @held;
            push @held_committed, map { $_->{id} } @held;
        }
        reader_step($r) for 1 .. 2;
    }
    my ($log, $start, $mismatch) = final_log($ctl, $t, 1);
    my ($v) = check(ack => \%ack, abort => \%abort, log => $log, start => $start,
                    segment_mismatch => $mismatch, reader => $r);
    session_close($_) for $A, $B, $r->{s};
    return ($v, \@held_committed);
}

sub all_violations
{
    my ($v, @except) = @_;
    my %skip = map { $_ => 1 } @except;
    return map { @{ $v->{$_} } } grep { !$skip{$_} } sort keys %$v;
}

my ($v_off) = hole_phase('hole_normal', 0);
my @off = all_violations($v_off);
is(scalar @off, 0, 'hole, normal: the checker reports no violation') or diag(join("\n", @off));
my ($v_on, $held) = hole_phase('hole_fault', 1);
my @skipped = sort map { /passed (\S+) at/ ? $1 : $_ } @{ $v_on->{reader_skip} };
note("with eventlog.debug_ignore_stable_offset = on the checker reports:\n  " . join("\n  ", @{ $v_on->{reader_skip} }));
ok(@skipped > 0, 'hole, fault injected: the checker reports skipped records');
is(join(' ', @skipped), join(' ', sort @$held),
   'hole, fault injected: exactly the records that committed late below the reader\'s position are reported skipped');
my @other = all_violations($v_on, 'reader_skip');
is(scalar @other, 0, 'hole, fault injected: no other violation reported') or diag(join("\n", @other));

session_close($reader->{s});
session_close($ctl);
$node->stop;
done_testing();
