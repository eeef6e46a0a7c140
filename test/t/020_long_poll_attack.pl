# Long polls under attack (review of the fix for issue 13, items 1, 11, 12).
#
#  1. Two reads waiting in partitions that share one slot of shared memory
#     (more partitions in use than eventlog.max_partitions) must both keep
#     sleeping and each return the record committed in its partition.
#     Before the fix, freeing a slot woke the read sleeping on it, which
#     attached again and so freed the other read's slot, which woke it: the
#     two took the slot from each other until one failed with the internal
#     error "could not attach to the shared state of partition 0".
#  2. A read(wait) whose from_offset falls below the log start offset during
#     the wait (the records it waited for committed, then retention removed
#     their segment before the read looked) must fail as a read from below
#     the log start does, not return the records after the gap as if they
#     followed from_offset.  Before the fix it silently skipped the removed
#     offsets (invariant 1).
#
# No assertion depends on how fast the machine is.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use Time::HiRes qw(time sleep);

my $node = PostgreSQL::Test::Cluster->new('lpattack');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = 3600s
eventlog.max_partitions = 1
});
$node->start;

sub background
{
    my ($sql, $db) = @_;
    my ($out, $err) = ('', '');
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-v', 'VERBOSITY=verbose', '-d', $node->connstr($db // 'postgres'), '-c', $sql ],
        '>', \$out, '2>', \$err);
    return ($h, \$out, \$err);
}

# The PID of the backend sleeping in the long poll tagged "tag", or undef if
# the call ended without ever sleeping.
sub sleeping
{
    my ($h, $tag) = @_;
    my $where = qq{query LIKE '%$tag%' AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()};
    my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
    while (time < $deadline)
    {
        my ($ret, $pid) = $node->psql('postgres', "SELECT pid FROM pg_stat_activity WHERE $where");
        return $pid if $ret == 0 && $pid ne '';
        eval { $h->pump_nb };
        return undef unless $h->pumpable;
        sleep 0.05;
    }
    return undef;
}

sub holder
{
    my ($in, $out, $err) = ('', '', '');
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
        '<', \$in, '>', \$out, '2>', \$err);
    return ($h, \$in, \$out, \$err);
}

# ------------------------------------------------------------------------
# 1. Two waiting reads, one slot.
# ------------------------------------------------------------------------
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('s', 1);
    CREATE DATABASE other;
});
$node->safe_psql('other', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('s', 1);
});
my ($ha, $outa, $erra) = background(q{SELECT /* ta */ offset_id, value FROM eventlog.read('s', 0, 0, wait => '60 seconds')});
my $pida = sleeping($ha, 'ta');
ok(defined $pida, 'a read waits in database postgres');
my ($hb, $outb, $errb) = background(q{SELECT /* tb */ offset_id, value FROM eventlog.read('s', 0, 0, wait => '60 seconds')}, 'other');
my $pidb = sleeping($hb, 'tb');
ok(defined $pidb, 'a read waits in database other, its partition taking the only slot');
sleep 1;
eval { $ha->pump_nb };
eval { $hb->pump_nb };
ok($ha->pumpable, 'the first read is still waiting') or diag($$erra);
ok($hb->pumpable, 'the second read is still waiting') or diag($$errb);
$node->safe_psql('postgres', q{SELECT eventlog.produce('s', NULL, '"a"')});
$ha->finish;
is($$outa, "0|\"a\"\n", 'a commit in its partition ends the first wait with the record');
is($$erra, '', 'without an error');
$node->safe_psql('other', q{SELECT eventlog.produce('s', NULL, '"b"')});
$hb->finish;
is($$outb, "0|\"b\"\n", 'a commit in its partition ends the second wait with the record');
is($$errb, '', 'without an error');

# ------------------------------------------------------------------------
# 2. from_offset below the log start after the wait.
# ------------------------------------------------------------------------
$node->append_conf('postgresql.conf', "eventlog.max_partitions = 64\n");
$node->restart;
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('r', 1, retention => '1 millisecond', segment_interval => '1 millisecond');
    SELECT eventlog.produce('r', NULL, ('"r' || i || '"')::jsonb) FROM generate_series(0, 4) i;
});
# T holds offsets 5 to 9 in flight in the first segment.
my ($th, $tin, $tout) = holder();
$$tin .= "BEGIN;\n" . join('', map { "SELECT eventlog.produce('r', NULL, '\"t$_\"');\n" } 5 .. 9)
  . "SELECT max(offset_id) FROM eventlog.read('r', 0, 0, max_records => 100);\nSELECT 'held';\n";
$th->pump until $$tout =~ /^held$/m;
my ($h, $out, $err) = background(q{SELECT /* tr */ offset_id, value FROM eventlog.read('r', 0, 5, max_records => 100, wait => '60 seconds')});
my $pid = sleeping($h, 'tr');
ok(defined $pid, 'a read from offset 5 waits behind it');
sleep 0.01;
is($node->safe_psql('postgres', q{SELECT string_agg(action, ',') FROM eventlog.enforce_retention('r')}),
   'rolled', 'a round rolls the partition while the read waits');
$node->safe_psql('postgres', q{SELECT eventlog.produce('r', NULL, ('"r' || i || '"')::jsonb) FROM generate_series(10, 12) i});
# The race made certain: the read is stopped (SIGSTOP) from T's commit until
# retention has removed the segment holding offsets 5 to 9.  A machine could
# as well have been that slow.
ok(kill('STOP', $pid), 'the waiting backend is stopped');
$$tin .= "COMMIT;\n\\q\n";
$th->finish;
sleep 0.01;
like($node->safe_psql('postgres', q{SELECT string_agg(action, ',' ORDER BY action) FROM eventlog.enforce_retention('r')}),
     qr/^removed/, 'retention removes the segment holding offsets 5 to 9 once they committed');
is($node->safe_psql('postgres', q{SELECT eventlog.log_start_offset('r', 0)}), '10',
   'the log starts at offset 10');
ok(kill('CONT', $pid), 'the waiting backend goes on');
$h->finish;
is($$out, '', 'the read returns no records after the gap');
like($$err, qr/ERROR:  22003: offset 5 is before the log start offset of partition 0 of topic "r"/,
     'it fails as a read from below the log start does');

# ------------------------------------------------------------------------
# 3. A long poll lets go of the segments its empty scans opened, but never
#    of a lock its transaction took reading records there before: such a
#    transaction keeps retention from removing the segment until it ends.
# ------------------------------------------------------------------------
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('k', 1, retention => '1 millisecond', segment_interval => '1 millisecond');
    SELECT eventlog.produce('k', NULL, ('"k' || i || '"')::jsonb) FROM generate_series(0, 2) i;
    BEGIN; SELECT eventlog.produce('k', NULL, '"aborted"'); ROLLBACK;
});
my ($kh, $kin, $kout) = holder();
$$kin .= "BEGIN;\nSELECT 'read ' || count(*) FROM eventlog.read('k', 0, 0, max_records => 100);\n"
  . "SELECT 'waited ' || count(*) FROM eventlog.read('k', 0, 3, wait => '1 second');\n";
$kh->pump until $$kout =~ /^waited (\d+)$/m;
is($1, '0', 'in one transaction, a read returns records, then a long poll of the same segment (from a rolled-back offset) finds nothing');
like($$kout, qr/^read 3$/m, 'the first read returned the three records');
sleep 0.01;
is($node->safe_psql('postgres', q{SELECT string_agg(action, ',' ORDER BY action) FROM eventlog.enforce_retention('k')}),
   'rolled', 'a round rolls the partition');
is($node->safe_psql('postgres', q{SELECT string_agg(action, ',' ORDER BY action) FROM eventlog.enforce_retention('k')}),
   'skipped (busy)', 'retention skips the segment the open transaction read records from');
$$kin .= "COMMIT;\n\\q\n";
$kh->finish;
is($node->safe_psql('postgres', q{SELECT string_agg(action, ',' ORDER BY action) FROM eventlog.enforce_retention('k')}),
   'removed', 'and removes it once that transaction ended');

$node->stop;
done_testing();
