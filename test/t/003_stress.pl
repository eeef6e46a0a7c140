# Stress: many producers on one partition, a third of their transactions
# rolled back (some records through savepoints), while readers follow the
# log with eventlog.read.  Every reader must see every committed record
# exactly once, in offset order, and never an aborted one.  Producers hold
# their transactions open for a random moment (0 to 3 ms), so late commits
# below newer ones are frequent: a reader that ignored the last stable offset would skip
# them.  EL_TAP_LONG=1 runs a longer version.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $clients = 8;
my $transactions = $ENV{EL_TAP_LONG} ? 5000 : 300;    # per client

my $node = PostgreSQL::Test::Cluster->new('stress');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
max_connections = 40
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('stress', 2);
    CREATE SEQUENCE ids;
    -- Written in the producing transaction: a row exists iff its record committed.
    CREATE TABLE ledger (id bigint PRIMARY KEY, offset_id bigint NOT NULL);
    CREATE TABLE seen (reader text, seq bigserial, id bigint, offset_id bigint);
    CREATE TABLE ctl (done boolean NOT NULL);
    INSERT INTO ctl VALUES (false);
});

# One transaction: record A, savepoint, record B; 1 in 6 roll back to the
# savepoint (B aborted, A kept), 2 in 6 roll back entirely.
my $script = $node->basedir . '/produce.sql';
open my $fh, '>', $script or die $!;
print $fh q{
\set fate random(1, 6)
\set hold random(0, 3000)
SELECT nextval('ids') AS id \gset
BEGIN;
INSERT INTO ledger SELECT :id * 2, offset_id
  FROM eventlog.produce('stress', NULL, jsonb_build_object('id', :id * 2), partition => 0);
SAVEPOINT sp;
INSERT INTO ledger SELECT :id * 2 + 1, offset_id
  FROM eventlog.produce('stress', NULL, jsonb_build_object('id', :id * 2 + 1), partition => 0);
\if :fate = 1
ROLLBACK TO SAVEPOINT sp;
\endif
\sleep :hold us
\if :fate <= 3 AND :fate >= 2
ROLLBACK;
\else
COMMIT;
\endif
};
close $fh;

# A reader follows partition 0 from offset 0, committing what it saw after
# each read; it stops once producers are done and a read returns nothing.
sub start_reader
{
    my ($name, $isolation) = @_;
    my $sql = qq{
SET default_transaction_isolation = '$isolation';
DO \$\$
DECLARE
    next_offset bigint := 0;
    n integer;
    last_offset bigint;
    finished boolean;
BEGIN
    LOOP
        SELECT done INTO finished FROM ctl;
        WITH r AS (SELECT * FROM eventlog.read('stress', 0, next_offset, 10000)),
             ins AS (INSERT INTO seen (reader, id, offset_id)
                     SELECT '$name', (r.value->>'id')::bigint, r.offset_id
                       FROM r ORDER BY r.offset_id
                     RETURNING offset_id)
        SELECT count(*), max(offset_id) INTO n, last_offset FROM ins;
        IF n > 0 THEN
            next_offset := last_offset + 1;
        END IF;
        COMMIT;
        EXIT WHEN finished AND n = 0;
        IF n = 0 THEN
            PERFORM pg_sleep(0.001);
        END IF;
    END LOOP;
END
\$\$;
};
    # A file, not stdin: IPC::Run feeds stdin only when the harness is
    # pumped, which would delay the reader until the producers are done.
    my $file = $node->basedir . "/reader_$name.sql";
    open my $rfh, '>', $file or die $!;
    print $rfh $sql;
    close $rfh;
    my ($out, $err) = ('', '');
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $file ],
        '>', \$out, '2>', \$err);
    return { name => $name, h => $h, err => \$err };
}

my @readers = (start_reader('rc', 'read committed'), start_reader('rr', 'repeatable read'));

my ($pb_out, $pb_err);
my $ok = IPC::Run::run(
    [ 'pgbench', '-n', '-c', $clients, '-j', 2, '-t', $transactions, '-f', $script,
      '-h', $node->host, '-p', $node->port, 'postgres' ],
    '>', \$pb_out, '2>', \$pb_err);
ok($ok, 'pgbench producers finished') or diag($pb_err);
like($pb_out, qr/number of failed transactions: 0|number of transactions actually processed: \d+/,
    'pgbench reports its transactions');

$node->safe_psql('postgres', 'UPDATE ctl SET done = true');
for my $r (@readers)
{
    my $finished = eval { $r->{h}->finish; 1 };
    ok($finished && $r->{h}->result == 0, "reader $r->{name} ended cleanly")
      or diag(${ $r->{err} });
}

my ($committed, $rolled_back) = split /\|/, $node->safe_psql('postgres',
    q{SELECT count(*), (SELECT eventlog.high_watermark('stress', 0)) - count(*) FROM ledger});
note("committed records: $committed, aborted offsets: $rolled_back");
ok($committed > 0 && $rolled_back > 0, 'the run committed and aborted records');

for my $r (qw(rc rr))
{
    is($node->safe_psql('postgres', qq{
        SELECT count(*) FROM (
            (SELECT id, offset_id FROM ledger EXCEPT ALL SELECT id, offset_id FROM seen WHERE reader = '$r')
            UNION ALL
            (SELECT id, offset_id FROM seen WHERE reader = '$r' EXCEPT ALL SELECT id, offset_id FROM ledger)) d}),
        '0', "reader $r saw every committed record exactly once, at its offset, and no aborted one");
    is($node->safe_psql('postgres', qq{
        SELECT count(*) FROM (
            SELECT offset_id <= lag(offset_id) OVER (ORDER BY seq) AS backwards
              FROM seen WHERE reader = '$r') s WHERE backwards}),
        '0', "reader $r saw offsets in increasing order");
}

$node->stop;
done_testing();
