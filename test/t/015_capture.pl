# Change capture under concurrency, and a mirror fed by apply_changes that
# is killed at random:
#  - writers change rows concurrently (inserts, updates, deletes, some
#    rolled back) while eventlog.capture(..., snapshot => true) starts: the
#    snapshot and the stream neither miss nor repeat a change (each key's
#    changes form a valid history: r or c first, then u, d, c...);
#  - one record per committed change; none for rolled-back ones;
#  - apply_changes, terminated at random points mid-transaction and rerun,
#    leaves a mirror equal to the source once it has caught up.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $long = $ENV{EL_TAP_LONG} ? 1 : 0;
my $node = PostgreSQL::Test::Cluster->new('capture');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'\nmax_connections = 50");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    CREATE TABLE src (id integer PRIMARY KEY, v integer NOT NULL, tag text);
    CREATE TABLE changes_log (committed bigint);
    INSERT INTO src SELECT g, g, 'initial' FROM generate_series(1, 100) g;
    CREATE TABLE mirror (LIKE src);
    ALTER TABLE mirror ADD PRIMARY KEY (id);
    -- Make each applied change slow, so that terminations land mid-transaction.
    CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN PERFORM pg_sleep(0.002); RETURN NEW; END $$;
    CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON mirror FOR EACH ROW EXECUTE FUNCTION slow();
});

# Writers: one change per transaction on 200 keys; one in ten rolls back.
# Key changes move a row from id to -id (inserts use positive ids only, so
# no writer ever fails on a duplicate key).
my $script = $node->basedir . '/writer.sql';
open my $fh, '>', $script or die;
print $fh <<'SQL';
\set id random(1, 200)
\set op random(1, 10)
BEGIN;
\if :op <= 2
DELETE FROM src WHERE id = :id OR id = -:id;
\elif :op <= 4
UPDATE src SET id = -id WHERE id = :id AND NOT EXISTS (SELECT FROM src WHERE id = -:id);
\else
INSERT INTO src VALUES (:id, :op, 'w') ON CONFLICT (id) DO UPDATE SET v = src.v + excluded.v, tag = 'u';
\endif
\if :op = 10
ROLLBACK;
\else
COMMIT;
\endif
SQL
close $fh;
# A number of transactions, not seconds: on a loaded machine a time gave
# too few changes for the applier's kills below.
my $per_client = $long ? 5000 : 1000;
my $wlog = $node->basedir . '/writers.log';
my $writers = IPC::Run::start(
    [ 'pgbench', '-n', '-c', '4', '-j', '4', '-t', $per_client, '-f', $script, '-d', $node->connstr('postgres') ],
    '>', $wlog, '2>&1');
sleep 1;
my $snap = $node->safe_psql('postgres', q{SELECT eventlog.capture('src', 'src.changes', partitions => 4, snapshot => true)});
ok($snap > 0, "capture with a snapshot while writers run: $snap rows");
$writers->finish;
like(slurp_file($wlog), qr/number of transactions actually processed: \d+/, 'the writers ran');
unlike(slurp_file($wlog), qr/aborted|ERROR/, 'without errors');

# Every key's history is valid: the first record is r or c; after r, c or
# u comes u or d; after d comes c.  A change the snapshot also held would
# show as c after r (or d after d); a missing one as a gap in the history.
my $bad = $node->safe_psql('postgres', q{
    WITH recs AS (
        SELECT r.key, r.value ->> 'op' AS op,
               lag(r.value ->> 'op') OVER (PARTITION BY r.key ORDER BY r.partition, r.offset_id) AS prev
          FROM generate_series(0, 3) p, LATERAL eventlog.read('src.changes', p, 0, 1000000) r)
    SELECT count(*) FROM recs
     WHERE (prev IS NULL AND op NOT IN ('r', 'c'))
        OR (prev IN ('r', 'c', 'u') AND op NOT IN ('u', 'd'))
        OR (prev = 'd' AND op <> 'c')});
is($bad, '0', 'every key has a valid history across snapshot and stream');
is($node->safe_psql('postgres', q{
    SELECT count(DISTINCT r.partition) = 1
      FROM generate_series(0, 3) p, LATERAL eventlog.read('src.changes', p, 0, 1000000) r
     GROUP BY r.key ORDER BY 1 LIMIT 1}), 't', 'each key stays in one partition');
# The last image of each key equals the source row (or the key is gone).
is($node->safe_psql('postgres', q{
    WITH last AS (
        SELECT DISTINCT ON (r.key) r.key, r.value
          FROM generate_series(0, 3) p, LATERAL eventlog.read('src.changes', p, 0, 1000000) r
         ORDER BY r.key, r.partition, r.offset_id DESC),
    images AS (SELECT (value -> 'after') AS row FROM last WHERE value ->> 'op' <> 'd')
    SELECT count(*) FROM (
        (SELECT to_jsonb(s) FROM src s EXCEPT SELECT row FROM images)
        UNION ALL
        (SELECT row FROM images EXCEPT SELECT to_jsonb(s) FROM src s)) d}),
   '0', 'the stream ends at the source: one record per committed change, none for rollbacks');

# The applier, killed at random and rerun.  The kill is made in the server
# by kill_applier(): it waits for the applier's statement to be active
# (however long a loaded machine takes to start it; a kill from here, one
# psql call after another, came too late there), then terminates it after
# a moment.  It returns how many it terminated: 0 if the applier ended
# first.
$node->safe_psql('postgres', q{
    CREATE FUNCTION kill_applier() RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
        seen boolean := false;
        present integer;
        active integer;
        killed integer := 0;
    BEGIN
        FOR i IN 1 .. 60000 LOOP
            PERFORM pg_stat_clear_snapshot();
            SELECT count(*), count(*) FILTER (WHERE state = 'active') INTO present, active
              FROM pg_stat_activity WHERE application_name = 'applier';
            IF active > 0 THEN
                PERFORM pg_sleep(random() * 0.02);
                SELECT count(pg_terminate_backend(pid)) INTO killed FROM pg_stat_activity
                 WHERE application_name = 'applier' AND state = 'active';
                EXIT;
            END IF;
            EXIT WHEN seen AND present = 0;
            seen := seen OR present > 0;
            PERFORM pg_sleep(0.001);
        END LOOP;
        RETURN killed;
    END
    $$;
});
sub start_psql
{
    my ($conn, $sql) = @_;
    my ($out, $err) = ('', '');
    my $h = IPC::Run::start([ 'psql', '-X', '-At', '-d', $conn, '-c', $sql ], '>', \$out, '2>', \$err);
    return ($h, \$out, \$err);
}
my ($kills, $runs, $caught_up) = (0, 0, 0);
srand($ENV{EL_SEED} // 42);
for (my $i = 0; $i < ($long ? 200 : 40) && !$caught_up; $i++)
{
    my ($k, $kout);
    if ($kills < 3 || rand() < 0.6)
    {
        ($k, $kout) = start_psql($node->connstr('postgres') . ' application_name=killer',
            'SELECT kill_applier()');
        # It watches before the applier starts.
        $node->poll_query_until('postgres', q{
            SELECT count(*) = 1 FROM pg_stat_activity
             WHERE application_name = 'killer' AND state = 'active'})
          or die 'kill_applier() did not start';
    }
    my ($h, $out, $err) = start_psql($node->connstr('postgres') . ' application_name=applier',
        q{SELECT eventlog.apply_changes('src.changes', 'mirror', 'mirror', 150)});
    $runs++;
    $h->finish;
    if ($k)
    {
        $k->finish;
        $kills += $1 if $$kout =~ /^(\d+)$/m;
    }
    $caught_up = 1 if $$out =~ /^0$/m;
}
diag("applier: $runs runs, $kills terminated mid-run");
ok($kills >= 3, "the applier was terminated mid-run $kills times");
# Then to the end, without kills.
my $n;
do { $n = $node->safe_psql('postgres', q{SELECT eventlog.apply_changes('src.changes', 'mirror', 'mirror', 1000)}) } while ($n > 0);
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM ((SELECT * FROM src EXCEPT SELECT * FROM mirror)
                          UNION ALL (SELECT * FROM mirror EXCEPT SELECT * FROM src)) d}),
   '0', 'the mirror equals the source');
is($node->safe_psql('postgres', 'SELECT count(*) FROM mirror'), $node->safe_psql('postgres', 'SELECT count(*) FROM src'),
   'row for row');

# Export for a warehouse (docs/examples/export.sql): runs that die before
# their commit are rerun; every record ends up in exactly one file, and
# "nothing to export" means the group has caught up (not that a dying run
# still held the partitions left).
use FindBin;
my $examples = $ENV{EL_EXAMPLES_DIR} // "$FindBin::Bin/../../docs/examples";
my $dir = $node->basedir . '/export';
mkdir $dir;
my ($exported, $crashed, $busy) = (0, 0, 0);
for (my $i = 0; $i < 1000; $i++)
{
    my $crash = rand() < 0.4;
    my @cmd = ('psql', '-X', '-d', $node->connstr('postgres'), '-v', 'topic=src.changes',
               '-v', 'group=warehouse', '-v', "dir=$dir", '-v', 'batch=40', '-f', "$examples/export.sql");
    push @cmd, '-v', 'crash_before_commit=1' if $crash;
    my ($out, $err) = ('', '');
    IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
    last if $out =~ /nothing to export/;
    # A run that died may still hold its partition for a moment: the
    # recipe then says "busy" (records left, none it could take).
    if ($out =~ /^busy/m) { $busy++; select(undef, undef, undef, 0.05); }
    $crashed++ if $out =~ /simulated crash/;
    $exported++ if $out =~ /^exported /m;
}
ok($crashed > 0 && $exported > 0, "export: $exported batches exported, $crashed runs died before their commit, $busy found the partitions held");
my %seen;
my $dups = 0;
foreach my $f (glob("$dir/src.changes/*.jsonl"))
{
    my ($p, $first, $last) = $f =~ m{/(\d+)-(\d+)-(\d+)\.jsonl$} or next;
    foreach my $line (split /\n/, slurp_file($f))
    {
        my ($part, $off) = $line =~ /"partition":(\d+),"offset_id":(\d+)/ or next;
        $dups++ if $seen{"$part/$off"}++;
    }
}
is($dups, 0, 'no record is in two files');
is(scalar(keys %seen), $node->safe_psql('postgres', q{
    SELECT count(*) FROM generate_series(0, 3) p, LATERAL eventlog.read('src.changes', p, 0, 1000000) r}),
   'and every record is in one');
is(scalar(grep { /\.tmp$/ } glob("$dir/src.changes/*")), 0, 'no temporary file is left');

$node->stop;
done_testing();
