# eventlog.read holds one row's fetched values at a time (issue 14, item 2).
# Values stored out of line (TOAST) are fetched while the segment is
# scanned, since the result outlives the scan; before, every fetched value
# stayed in memory until the call returned, so a call reading N large
# records needed N times their size.  Here a backend whose heap is capped at
# 32 MB (RLIMIT_DATA; shared memory does not count) reads 60 records of
# about 900 kB each: 54 MB of values, which the result tuplestore spills to
# disk past work_mem.  It must return every record intact.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('readmem');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;

# 60 records whose values pglz cannot compress (the same random hex in
# each, with the record's number), produced by a session without a limit.
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('big', 1);
    CREATE TABLE noise AS
        SELECT string_agg(md5(i::text || random()::text), '') AS hex
          FROM generate_series(1, 28000) i;
});
for my $batch (1 .. 6)
{
    $node->safe_psql('postgres', qq{
        SELECT count(*) FROM eventlog.produce_batch('big', NULL,
            (SELECT array_agg(jsonb_build_object('n', j, 'v', n.hex) ORDER BY j)
               FROM generate_series(1, 10) j, noise n));
    });
}
my $segment = $node->safe_psql('postgres', q{
    SELECT s.table_name FROM eventlog.segment_catalog s
      JOIN eventlog.topic_catalog t USING (topic_id) WHERE t.name = 'big'});
is($node->safe_psql('postgres', qq{
    SELECT count(*), min(pg_column_size(value)) > 800000,
           bool_and(pg_column_size(value) >= octet_length(value::text))
      FROM eventlog_segments.$segment}),
   '60|t|t', 'the segment holds 60 records of over 800 kB each, stored uncompressed');
my $want = $node->safe_psql('postgres', qq{
    SELECT md5(string_agg(md5(value::text), ',' ORDER BY offset_id))
      FROM eventlog_segments.$segment});

# The reading session caps its own heap (COPY TO PROGRAM runs prlimit as the
# server's user, on this backend).
my $cap = q{
    DO $$ BEGIN
        EXECUTE format('COPY (SELECT 1) TO PROGRAM %L',
                       'prlimit --pid ' || pg_backend_pid() || ' --data=33554432');
    END $$;
};

# The cap is real: a 50 MB string does not fit under it.
my ($ret, $out, $err) = $node->psql('postgres', $cap . q{
    SELECT length(repeat('x', 50000000));
});
like($err, qr/out of memory/, 'a capped backend cannot allocate 50 MB');

($ret, $out, $err) = $node->psql('postgres', $cap . q{
    SELECT count(*), md5(string_agg(md5(value::text), ',' ORDER BY offset_id))
      FROM eventlog.read('big', 0, 0, 1000);
});
is($ret, 0, 'a capped backend reads 54 MB of TOASTed values in one call')
  or diag($err);
is($out, "60|$want", 'and returns every record intact, in offset order');

# The same through a long poll that finds records at once, and a second
# read in the same transaction (the memory of each call is its own).
($ret, $out, $err) = $node->psql('postgres', $cap . q{
    BEGIN;
    SELECT count(*) FROM eventlog.read('big', 0, 0, 1000, wait => '1 second');
    SELECT count(*) FROM eventlog.read('big', 0, 40, 1000);
    COMMIT;
});
is($ret, 0, 'two capped reads in one transaction succeed') or diag($err);
is($out, "60\n20", 'and return 60 and 20 records');

$node->stop;
done_testing();
