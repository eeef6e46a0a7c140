# A window processor whose aggregate's state is internal keeps its states
# sealed with the database's key (src/agg_state.c).  pg_dump carries the
# key (pg_extension_config_dump) and the sealed states; after pg_restore
# into a new database, where the function and database OIDs differ, the
# states still verify: the next step combines them with new records.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('agg_state_dump');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE DATABASE src;
    CREATE DATABASE dst;
});
$node->safe_psql('src', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('t', 1);
    CREATE TABLE sink (window_start timestamptz, window_end timestamptz, k text, sd numeric, s numeric);
    SELECT eventlog.create_window_processor('p', 't', 'sink', size => '1 hour', emit => 'changes',
        aggregates => ARRAY[$$stddev_samp((value->>'x')::numeric)$$, $$pg_catalog.sum((value->>'b')::bigint)$$],
        event_time => $$(value->>'ts')::timestamptz$$);
    SELECT eventlog.produce('t', 'a', jsonb_build_object('x', x, 'b', 9000000000000000000, 'ts', '2026-01-01 10:00:00+00'))
      FROM unnest(ARRAY[1.5, 4.25]) x;
    SELECT eventlog.run_processor('p');
});
my $key = q{SELECT encode(key, 'hex') FROM eventlog.processor_state_key};
my $key_before = $node->safe_psql('src', $key);
is(length($key_before), 64, 'the source database has a key of 32 bytes');

my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ], 'pg_dump');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('dst'), $dump ], 'pg_restore');
is($node->safe_psql('dst', $key), $key_before, 'the restored database has the same key');
isnt($node->safe_psql('dst', q{SELECT oid FROM pg_database WHERE datname = current_database()}),
     $node->safe_psql('src', q{SELECT oid FROM pg_database WHERE datname = current_database()}),
     'in a database of another OID');

# One more record in the same window: the step reads the restored state.
$node->safe_psql('dst', q{
    SELECT eventlog.produce('t', 'a', jsonb_build_object('x', 10, 'b', 9000000000000000000, 'ts', '2026-01-01 10:30:00+00'));
});
# (the processor worker may take the step first)
$node->safe_psql('dst', q{SELECT eventlog.run_processor('p')});
ok($node->poll_query_until('dst', q{
    SELECT sd = (SELECT stddev_samp(x) FROM unnest(ARRAY[1.5, 4.25, 10]) x) AND s = 27000000000000000000
      FROM sink}),
   'a step after the restore combines the restored state with the new record');
is($node->safe_psql('dst', q{SELECT last_error FROM eventlog.processors WHERE name = 'p'}), '',
   'without an error');
is($node->safe_psql('dst', q{SELECT aggregates->>'s' FROM eventlog.processor_windows('p')}),
   '27000000000000000000', 'and processor_windows reads it');

$node->stop;
done_testing();
