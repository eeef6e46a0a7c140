# Hot standby and promotion: a standby has no in-flight table, so produce
# refuses to run during recovery and read serves what the primary published
# (the monitoring view works too),
# and after promotion the counters start afresh, above every replicated
# offset.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$primary->start;
$primary->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('ha', 2);
    SELECT count(*) FROM eventlog.produce_batch('ha', NULL,
        (SELECT array_agg(to_jsonb(i)) FROM generate_series(1, 10) i), partition => 0);
});

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# Records produced after the base backup reach the standby by streaming.
$primary->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog.produce_batch('ha', NULL,
        (SELECT array_agg(to_jsonb(i)) FROM generate_series(11, 15) i), partition => 0);
});
$primary->wait_for_catchup($standby);

# A standby reads up to the stable offset the primary published
# (test/t/085_standby_reads.pl tests it under load).
ok($standby->poll_query_until('postgres', q{SELECT count(*) = 15 FROM eventlog.read('ha', 0, 0)}),
   'read runs on a hot standby, up to the published stable offset');
my ($ret, $out, $err);
($ret, $out, $err) = $standby->psql('postgres',
    "SELECT * FROM eventlog.produce('ha', NULL, '1')");
isnt($ret, 0, 'produce refuses to run on a hot standby');
like($err, qr/cannot produce to an event log during recovery/, 'with a clear message');
is($standby->safe_psql('postgres',
    q{SELECT high_watermark FROM eventlog.partitions WHERE topic = 'ha' AND partition = 0}),
    '15', 'the partitions view works on the standby');

# The segment rows are there (plain SQL reads them).
is($standby->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog.segment_catalog s
     WHERE s.topic_id = (SELECT topic_id FROM eventlog.topic_catalog WHERE name = 'ha')
       AND s.partition = 0}), '1', 'segment catalog replicated');

# Promote: producing continues above every replicated offset.
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()');
is($standby->safe_psql('postgres',
    q{SELECT offset_id FROM eventlog.produce('ha', NULL, '"after promotion"', partition => 0)}),
    '15', 'the promoted standby continues at the next offset');
is($standby->safe_psql('postgres',
    q{SELECT string_agg(offset_id::text, ',') FROM eventlog.read('ha', 0, 13)}),
    '13,14,15', 'and reads across the promotion');

$standby->stop;
$primary->stop;
done_testing();
