# Both consumer styles under random kills.
#
# Transactional consumers of group "transformer" read a topic, produce a
# derived record per input record to another topic, and commit both in one
# transaction: at the end the output holds every input record exactly once.
#
# Member consumers of group "mirror" poll, do their work in a separate
# transaction (as work outside the database would be), then commit their
# position: every input record is processed at least once, with no gap,
# and in offset order within each run of a member on a partition.
#
# The test terminates consumers of both kinds at random points and starts
# new ones.  EL_TAP_LONG=1 runs longer.
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
    CREATE TABLE mirrored (seq bigserial, member text, batch int, partition int, offset_id bigint, i int);
    CREATE TABLE transformed (seq bigserial, partition int, offset_id bigint);
    CREATE TABLE produced_late (i int PRIMARY KEY);
});

my $consumer_sql = q{
SET application_name = 'eos_consumer';
DO $$
DECLARE
    n integer;
BEGIN
    LOOP
        WITH polled AS (SELECT * FROM eventlog.poll('input', 'transformer', 25)),
             derived AS (SELECT eventlog.produce('output', r.key,
                                    jsonb_build_object('p', r.partition, 'o', r.offset_id, 'i', r.value->'i'))
                           FROM polled r),
             logged AS (INSERT INTO transformed (partition, offset_id)
                        SELECT r.partition, r.offset_id FROM polled r ORDER BY r.partition, r.offset_id
                        RETURNING 1)
        SELECT (SELECT count(*) FROM derived) + 0 * (SELECT count(*) FROM logged) INTO n;
        COMMIT;
        IF n = 0 THEN
            PERFORM pg_sleep(0.01);
        END IF;
    END LOOP;
END
$$;
};
my $member_sql = q{
SET application_name = 'eos_member';
DO $$
DECLARE
    me text := 'member-' || pg_backend_pid();
    n integer;
    batch_no integer := 0;
BEGIN
    LOOP
        batch_no := batch_no + 1;
        -- Poll (a heartbeat too) and keep what came, then do the work in a
        -- transaction of its own, then commit the position.
        CREATE TEMP TABLE IF NOT EXISTS batch (partition int, offset_id bigint, i int);
        TRUNCATE batch;
        INSERT INTO batch SELECT r.partition, r.offset_id, (r.value->>'i')::int
          FROM eventlog.poll('input', 'mirror', 25, member => me, session_timeout => '2 seconds') r;
        COMMIT;
        INSERT INTO mirrored (member, batch, partition, offset_id, i)
        SELECT me, batch_no, partition, offset_id, i FROM batch;
        GET DIAGNOSTICS n = ROW_COUNT;
        COMMIT;
        BEGIN
            PERFORM eventlog.commit('input', 'mirror', me);
        EXCEPTION WHEN object_not_in_prerequisite_state THEN
            NULL;   -- fenced: lost a partition meanwhile
        END;
        COMMIT;
        IF n = 0 THEN
            PERFORM pg_sleep(0.01);
        END IF;
    END LOOP;
END
$$;
};

# More input arrives while the consumers run: small transactions, a
# quarter of them rolled back; produced_late records which committed.
my $late = $ENV{EL_TAP_LONG} ? 10000 : 1000;
my $producer_sql = qq{
DO \$\$
BEGIN
    FOR i IN $records + 1 .. $records + $late LOOP
        PERFORM eventlog.produce('input', 'k' || (i % 97), jsonb_build_object('i', i));
        INSERT INTO produced_late VALUES (i);
        IF i % 4 = 0 THEN
            ROLLBACK;
        ELSE
            COMMIT;
        END IF;
    END LOOP;
END
\$\$;
};

my %files;
for my $kind (qw(consumer member producer))
{
    my $file = $node->basedir . "/$kind.sql";
    open my $fh, '>', $file or die $!;
    print $fh ($kind eq 'consumer' ? $consumer_sql : $kind eq 'member' ? $member_sql : $producer_sql);
    close $fh;
    $files{$kind} = $file;
}
my ($pout, $perr) = ('', '');
my $producer = IPC::Run::start(
    [ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $files{producer} ],
    '>', \$pout, '2>', \$perr);

my @consumers;
sub start_consumer
{
    my ($kind) = @_;
    my ($out, $err) = ('', '');
    push @consumers, IPC::Run::start(
        [ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-f', $files{$kind} ],
        '>', \$out, '2>', \$err);
}
for (1 .. 3)
{
    start_consumer('consumer');
    start_consumer('member');
}

# Terminate a random consumer backend now and then, mid-transaction or not,
# and start a replacement of the same kind.
for my $k (1 .. $kills)
{
    select(undef, undef, undef, 0.1 + rand(0.3));
    my $app = $node->safe_psql('postgres', q{
        SELECT application_name FROM (
            SELECT application_name, pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name IN ('eos_consumer', 'eos_member')
             ORDER BY random() LIMIT 1) t});
    start_consumer($app eq 'eos_member' ? 'member' : 'consumer') if $app;
}

ok(eval { $producer->finish; 1 } && $producer->result == 0, 'the producer finished') or diag($perr);
my $total = $node->safe_psql('postgres', 'SELECT count(*) FROM produced_late') + $records;
ok($node->poll_query_until('postgres', q{
    SELECT coalesce(sum(lag), -1) = 0 AND count(*) = 4
      FROM eventlog.consumer_groups WHERE group_name = 'transformer'}),
   'the transactional consumers catch up with the input');
ok($node->poll_query_until('postgres', q{
    SELECT coalesce(sum(lag), -1) = 0 AND count(*) = 4
      FROM eventlog.consumer_groups WHERE group_name = 'mirror'}),
   'the member consumers catch up with the input');

$node->safe_psql('postgres', q{
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
     WHERE application_name IN ('eos_consumer', 'eos_member')});
eval { $_->finish } for @consumers;

my $out = q{SELECT r.value FROM generate_series(0, 3) p, LATERAL eventlog.read('output', p, 0, 1000000) r};
is($node->safe_psql('postgres', "SELECT count(*) FROM ($out) o"), $total,
   "the output has $total records, as many as committed input");
is($node->safe_psql('postgres', "SELECT count(*) FROM (SELECT value->'p', value->'o' FROM ($out) o GROUP BY 1, 2 HAVING count(*) > 1) d"),
   '0', 'no input record was processed twice');
my $committed_input = qq{SELECT i FROM generate_series(1, $records) i UNION ALL SELECT i FROM produced_late};
is($node->safe_psql('postgres', qq{
    SELECT count(*) FROM ($committed_input) c
     WHERE NOT EXISTS (SELECT FROM ($out) o WHERE (o.value->>'i')::int = c.i)}),
   '0', 'no committed input record was missed');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM (SELECT offset_id <= lag(offset_id) OVER (PARTITION BY partition ORDER BY seq) AS back
                            FROM transformed) s WHERE back}),
   '0', 'transactional consumers processed each partition in offset order');

# Member style: at least once, no gap, and each poll's records of a
# partition in offset order, consecutive but for aborted offsets (a
# redelivery after a kill may start a partition over from its committed
# position, so order is checked within each poll).
is($node->safe_psql('postgres', qq{
    SELECT count(*) FROM ($committed_input) c
     WHERE NOT EXISTS (SELECT FROM mirrored m WHERE m.i = c.i)}),
   '0', 'member consumers processed every committed input record at least once');
my $dups = $node->safe_psql('postgres',
    q{SELECT count(*) - count(DISTINCT (partition, offset_id)) FROM mirrored});
note("member consumers processed $dups records more than once (redeliveries after kills)");
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM (
        SELECT m.offset_id <= lag(m.offset_id) OVER w AS back
          FROM mirrored m
        WINDOW w AS (PARTITION BY m.member, m.batch, m.partition ORDER BY m.seq)) s
     WHERE back}),
   '0', 'each poll returns a partition\'s records in offset order');

$node->stop;
done_testing();
