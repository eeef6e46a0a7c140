# pg_dump carries a topic's records: segment tables are not extension
# members (so their rows are dumped) and the catalog tables are marked with
# pg_extension_config_dump.  After pg_restore into a new database the same
# records are readable, producing continues at the right offsets, the
# guards are back, and DROP EXTENSION there still leaves nothing behind.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE DATABASE src;
    CREATE DATABASE dst;
});
$node->safe_psql('src', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('kept', 2);
    SELECT eventlog.create_topic('dropped', 1);
    SELECT eventlog.drop_topic('dropped');
    SELECT count(*) FROM eventlog.produce_batch('kept',
        (SELECT array_agg('k' || i) FROM generate_series(1, 50) i),
        (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, 50) i));
    BEGIN;
    SELECT eventlog.produce('kept', NULL, '"aborted"', partition => 1);
    ROLLBACK;
    SELECT eventlog.create_group('kept', 'readers', auto_reset => 'earliest');
    SELECT count(*) FROM eventlog.poll('kept', 'readers', 10, partitions => 2);
    CREATE ROLE dump_owner;
    CREATE ROLE dump_app;
    SELECT eventlog.set_topic_owner('kept', 'dump_owner');
    SELECT eventlog.grant('kept', 'produce', 'dump_app');
    SELECT eventlog.grant('kept', 'consume', 'public');
    -- A binary topic with bytes text could not hold: \x00, invalid UTF-8,
    -- empty and NULL keys and values, NULL and empty headers, headers with
    -- repeated names and NULL values.
    SELECT eventlog.create_topic('raw', 2, format => 'binary');
    SELECT count(*) FROM eventlog.produce_binary_batch('raw', ARRAY[
        ROW('\x00', '\x00ff00', ARRAY[ROW('a', '\x00'), ROW('a', NULL), ROW('b', '\x')]::eventlog.header[], NULL),
        ROW('\xc328', '\xfffe80', NULL, '2001-02-03 04:05:06+00'),
        ROW('\x', '\x', '{}', NULL),
        ROW(NULL, NULL, NULL, NULL),
        ROW(NULL, '\x0a0d00', ARRAY[ROW('', NULL)]::eventlog.header[], NULL)]::eventlog.message[], 0);
    SELECT eventlog.produce_binary('raw', '\x01', NULL, partition => 1);
});
my $privileges = q{SELECT string_agg(format('%s %s', grantee, privilege), ', ' ORDER BY privilege, grantee::text)
                     FROM eventlog.topic_privileges};
my $privileges_before = $node->safe_psql('src', $privileges);
my $positions = q{SELECT string_agg(format('%s/%s/%s', group_name, partition, next_offset), ',' ORDER BY partition)
                    FROM eventlog.group_offsets};
my $positions_before = $node->safe_psql('src', $positions);
my $all = q{SELECT string_agg(format('%s/%s/%s/%s', r.partition, r.offset_id, r.key, r.value), ',' ORDER BY 1)
              FROM generate_series(0, 1) p, LATERAL eventlog.read('kept', p, 0) r};
my $before = $node->safe_psql('src', $all);
my $raw = q{SELECT string_agg(format('%s/%s/%s/%s/%s/%s/%s', r.partition, r.offset_id,
                                     coalesce(r.key::text, 'NULL'), coalesce(r.value::text, 'NULL'),
                                     coalesce(r.headers::text, 'NULL'), r.event_time, r.append_time),
                              ',' ORDER BY 1)
              FROM generate_series(0, 1) p, LATERAL eventlog.read_binary('raw', p, 0) r};
my $raw_before = $node->safe_psql('src', $raw);

my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ], 'pg_dump');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('dst'), $dump ], 'pg_restore');

is($node->safe_psql('dst', $all), $before, 'the restored database has the same records at the same offsets');
is($node->safe_psql('dst', $raw), $raw_before, 'a binary topic\'s records are the same bytes');
is($node->safe_psql('dst', q{
    SELECT string_agg((CASE r.offset_id
        WHEN 0 THEN r.key = '\x00' AND r.value = '\x00ff00'
                    AND r.headers = ARRAY[ROW('a', '\x00'), ROW('a', NULL), ROW('b', '\x')]::eventlog.header[]
        WHEN 1 THEN r.key = '\xc328' AND r.value = '\xfffe80' AND r.headers IS NULL
                    AND r.event_time = '2001-02-03 04:05:06+00'
        WHEN 2 THEN r.key = '\x' AND r.value = '\x' AND cardinality(r.headers) = 0
        WHEN 3 THEN r.key IS NULL AND r.value IS NULL AND r.headers IS NULL
        WHEN 4 THEN r.headers[1].name = '' AND r.headers[1].value IS NULL
        END)::text, ',' ORDER BY r.offset_id)
      FROM eventlog.read_binary('raw', 0, 0) r}),
   'true,true,true,true,true', '... \\x00, invalid UTF-8, empty and NULL fields, repeated headers as they were');
is($node->safe_psql('dst', q{SELECT string_agg(name || ' ' || format, ',' ORDER BY name) FROM eventlog.topic_catalog}),
   'kept json,raw binary', 'and the same topics, of the same formats');
is($node->safe_psql('dst', $positions), $positions_before, 'and the same group positions');
is($node->safe_psql('dst', $privileges), $privileges_before,
   "and the same topic owner and grants ($privileges_before)");
is($node->psql('dst', q{SET ROLE dump_app; SELECT eventlog.produce('kept', 'p', '"granted"', partition => 0)}),
   0, 'a granted producer produces in the restored database');
is($node->safe_psql('dst', q{SELECT auto_reset FROM eventlog.group_catalog WHERE group_name = 'readers'}),
   'earliest', 'and group settings');
my $next = $node->safe_psql('dst', q{
    SELECT bool_and(n.offset_id > coalesce(m.maxo, -1))
      FROM generate_series(0, 1) p,
           LATERAL (SELECT max(offset_id) AS maxo FROM eventlog.read('kept', p, 0)) m,
           LATERAL eventlog.produce('kept', NULL, '"new"', partition => p) n});
is($next, 't', 'producing continues above the restored offsets');
is($node->safe_psql('dst', q{
    SELECT count(*) FROM pg_trigger t JOIN eventlog.segment_catalog s
        ON t.tgrelid = ('eventlog_segments.' || quote_ident(s.table_name))::regclass
     WHERE t.tgenabled = 'A'}), '8', 'segment guards restored, enabled always');
is($node->safe_psql('dst', q{SELECT offset_id FROM eventlog.produce_binary('raw', NULL, '\x00', partition => 0)}),
   '5', 'producing to the restored binary topic continues above its offsets');
is($node->safe_psql('dst', q{
    CREATE ROLE dump_nobody;
    SELECT has_schema_privilege('dump_nobody', 'eventlog_segments', 'USAGE')}),
   'f', 'the restored segments\' schema is still closed to other roles');
$node->safe_psql('dst', q{SELECT eventlog.create_topic('dropped', 1)});
is($node->safe_psql('dst', q{SELECT topic_id FROM eventlog.topic_catalog WHERE name = 'dropped'}),
   '4', 'the restored topic id sequence gives a new topic a fresh id');
is($node->safe_psql('dst', q{SELECT offset_id FROM eventlog.produce('dropped', NULL, '1')}),
   '0', 'and its offsets start at 0');

# A restore seen half-way: pg_restore loads the catalog tables, then the
# records, and creates the segments' keys and triggers last.  A partition
# read (or maintained, or published by the workers) in between must not
# count its offsets from what is there yet: the counter is recovered once,
# and would hand out offsets the records still to come hold.  It is
# refused until the restore is done; then everything is there.
$node->safe_psql('postgres', 'CREATE DATABASE mid');
my $toc = $node->basedir . '/src.toc';
$node->command_ok([ 'pg_restore', '-l', '-f', $toc, $dump ], 'pg_restore -l');
my @toc = split /\n/, slurp_file($toc);
sub restore_part
{
    my ($name, $pattern) = @_;
    my $list = $node->basedir . "/$name.list";
    open(my $fh, '>', $list) or die "$list: $!";
    print $fh join("\n", grep { !/^;/ && /$pattern/ } @toc), "\n";
    close $fh;
    $node->command_ok([ 'pg_restore', '-L', $list, '-d', $node->connstr('mid'), $dump ], "pg_restore: $name");
}
$node->command_ok([ 'pg_restore', '--section=pre-data', '-d', $node->connstr('mid'), $dump ],
    'pg_restore: pre-data');
my $read_mid = q{SELECT count(*) FROM eventlog.read('kept', 0, 0)};
restore_part('partitions', qr/TABLE DATA eventlog (topic_catalog|partition_catalog) /);
my ($ret, $out, $err) = $node->psql('mid', $read_mid);
like($err, qr/ERROR:  partition 0 of topic "kept" has no segment/,
     'a partition restored without its segments yet is not read');
restore_part('catalog', qr/TABLE DATA eventlog (?!topic_catalog |partition_catalog )|SEQUENCE SET/);
($ret, $out, $err) = $node->psql('mid', $read_mid);
like($err, qr/ERROR:  segment 0 of partition 0 of topic "kept" is still being restored/,
     'nor one whose segment tables are not restored yet');
restore_part('records', qr/TABLE DATA eventlog_segments /);
($ret, $out, $err) = $node->psql('mid', $read_mid);
like($err, qr/ERROR:  segment 0 of partition 0 of topic "kept" is still being restored/,
     'nor before the segments have their keys and triggers');
$node->command_ok([ 'pg_restore', '--section=post-data', '-d', $node->connstr('mid'), $dump ],
    'pg_restore: post-data');
is($node->safe_psql('mid', $all), $before, 'then the restored partitions have every record');
is($node->safe_psql('mid', q{
    SELECT bool_and(n.offset_id = m.maxo + 1)
      FROM generate_series(0, 1) p,
           LATERAL (SELECT max(offset_id) AS maxo FROM eventlog.read('kept', p, 0)) m,
           LATERAL eventlog.produce('kept', NULL, '"new"', partition => p) n}),
   't', 'and producing continues right above the restored offsets');

$node->safe_psql('dst', 'DROP EXTENSION pg_eventlog');
is($node->safe_psql('dst', q{SELECT count(*) FROM pg_namespace WHERE nspname IN ('eventlog', 'eventlog_segments')}),
   '0', 'DROP EXTENSION in the restored database leaves nothing behind');

$node->stop;
done_testing();
