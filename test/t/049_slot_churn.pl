# More partitions in use than shared slots, across databases: producers and
# readers take slots from each other, and none may fail for it.  A slot is
# given to a partition uninitialised; its counter is then recovered from the
# catalog (SPI queries, milliseconds) and installed.  Any other backend
# needing a slot freed such a slot in the meantime, since it had no offset
# in flight, and the first backend found its slot stale, attached again
# (freeing another backend's slot under recovery), and so on: after ten
# turns, produce, read and the views failed with "could not attach to the
# shared state of partition ..." (XX000).  Before the fix every client
# below failed within seconds.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('churn');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.max_partitions = 4
max_connections = 40
});
$node->start;

# Three databases with four partitions each: twelve partitions, four slots.
my @dbs = qw(c1 c2 c3);
for my $db (@dbs)
{
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    $node->safe_psql($db, q{CREATE EXTENSION pg_eventlog;
                            SELECT eventlog.create_topic('t', 4);});
}

my $dir = PostgreSQL::Test::Utils::tempdir();
# One producer per database: each stays within its share of the slots
# (three databases pinning: one slot each), so no 53400 is expected.
open(my $fh, '>', "$dir/produce.sql") or die;
print $fh "\\set p random(0, 3)\nSELECT eventlog.produce('t', NULL, '1', partition => :p);\n";
close $fh;
open($fh, '>', "$dir/read.sql") or die;
print $fh "\\set p random(0, 3)\nSELECT count(*) FROM eventlog.read('t', :p, 0, 1);\n";
close $fh;
open($fh, '>', "$dir/view.sql") or die;
print $fh "SELECT count(*) FROM eventlog.partitions;\n";
close $fh;

my @runs;
for my $db (@dbs)
{
    for my $script ('produce', 'read', 'view')
    {
        my ($out, $err) = ('', '');
        my $h = IPC::Run::start(
            [ 'pgbench', '-n', '-T', '8', '-c', '1', '-f', "$dir/$script.sql",
              '-h', $node->host, '-p', $node->port, $db ],
            '>', \$out, '2>', \$err);
        push @runs, [ "$db $script", $h, \$out, \$err ];
    }
}
for my $run (@runs)
{
    my ($name, $h, $out, $err) = @$run;
    $h->finish;
    is($$err =~ /ERROR:.*/ ? $& : '', '', "$name: no error");
    like($$out, qr/number of failed transactions: 0 /, "$name: every transaction succeeded");
}

# Offsets stayed unique and dense per partition (nothing was handed out
# twice by a counter recovered in a stolen slot).
for my $db (@dbs)
{
    is($node->safe_psql($db, q{
        SELECT count(*) FROM generate_series(0, 3) p,
               LATERAL (SELECT count(*) AS n, count(DISTINCT offset_id) AS d,
                               coalesce(max(offset_id) + 1, 0) AS hw
                          FROM eventlog.read('t', p, 0, 1000000)) r
         WHERE r.n <> r.d OR r.hw <> eventlog.high_watermark('t', p)}),
       '0', "$db: offsets unique and up to the high watermark");
}

$node->stop;
done_testing();
