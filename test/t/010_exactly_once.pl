# Exactly-once inside the database: consumers of one group read a topic,
# produce a derived record per input record to another topic, and commit
# both in one transaction, while the test terminates consumers at random
# points and starts new ones.  At the end the output holds every input
# record exactly once: no duplicate, no gap.  EL_TAP_LONG=1 runs longer.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $records = $ENV{EL_TAP_LONG} ? 50000 : 4000;
my $kills = $ENV{EL_TAP_LONG} ? 60 : 12;

my $node = PostgreSQL::Test::Cluster->new('eos');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', qq{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('input', 4);
    SELECT eventlog.create_topic('output', 4);
    SELECT count(*) FROM eventlog.produce_batch('input',
        (SELECT array_agg('k' || (i % 97)) FROM generate_series(1, $records) i),
        (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, $records) i));
});

my $consumer_sql = q{
SET application_name = 'eos_consumer';
DO $$
DECLARE
    n integer;
BEGIN
    LOOP
        SELECT count(*) INTO n FROM (
            SELECT eventlog.produce('output', r.key,
                       jsonb_build_object('p', r.partition, 'o', r.offset_id, 'i', r.value->'i'))
              FROM eventlog.poll('input', 'transformer', 25) r) s;
        COMMIT;
        IF n = 0 THEN
            PERFORM pg_sleep(0.01);
        END IF;
    END LOOP;
END
$$;
};
my $file = $node->basedir . '/consumer.sql';
open my $fh, '>', $file or die $!;
print $fh $consumer_sql;
close $fh;

my @consumers;
sub start_consumer
{
    my ($out, $err) = ('', '');
    push @consumers, IPC::Run::start(
        [ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-f', $file ],
        '>', \$out, '2>', \$err);
}
start_consumer() for 1 .. 3;

# Terminate a random consumer backend now and then, mid-transaction or not,
# and start a replacement.
for my $k (1 .. $kills)
{
    select(undef, undef, undef, 0.1 + rand(0.3));
    $node->safe_psql('postgres', q{
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'eos_consumer' ORDER BY random() LIMIT 1});
    start_consumer();
}

ok($node->poll_query_until('postgres', q{
    SELECT coalesce(sum(lag), -1) = 0 AND count(*) = 4
      FROM eventlog.consumer_groups WHERE group_name = 'transformer'}),
   'the consumers catch up with the input');

$node->safe_psql('postgres', q{
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'eos_consumer'});
eval { $_->finish } for @consumers;

my $out = q{SELECT r.value FROM generate_series(0, 3) p, LATERAL eventlog.read('output', p, 0, 1000000) r};
is($node->safe_psql('postgres', "SELECT count(*) FROM ($out) o"), $records,
   "the output has $records records, as many as the input");
is($node->safe_psql('postgres', "SELECT count(*) FROM (SELECT value->'p', value->'o' FROM ($out) o GROUP BY 1, 2 HAVING count(*) > 1) d"),
   '0', 'no input record was processed twice');
is($node->safe_psql('postgres', qq{
    SELECT count(*) FROM generate_series(1, $records) i
     WHERE NOT EXISTS (SELECT FROM ($out) o WHERE (o.value->>'i')::int = i)}),
   '0', 'no input record was missed');

$node->stop;
done_testing();
