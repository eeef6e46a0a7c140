# eventlog._kafka_fetch in C (src/kafka_fetch.c), called from SQL: a
# partition's byte limit stops the read (the records after the one that
# reaches it are never read: fewer buffers), every partition returns its
# first record whatever its size, binary records byte for byte (NULL keys and
# values, empty ones, headers with duplicates and NULL values), a JSON topic's
# key, value and headers as UTF-8 bytes and header arrays, each item's error
# code (negative offsets, offsets past the end, partitions and topics that do
# not exist, NULLs, max_records 0), the response's byte limit over the
# items (the items after the one that reaches it are not read), an unprivileged role, a privilege revoked
# and a topic dropped during the wait, a cancelled wait, and a result
# spilled to a temporary file across the items' subtransactions.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('kfetchc');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('huge', 1, format => 'binary');
    SELECT eventlog.create_topic('b', 2, format => 'binary');
    SELECT eventlog.create_topic('j', 1);
    SELECT eventlog.create_topic('gone', 1, format => 'binary');
    CREATE ROLE outsider LOGIN;
});

# 1. The byte limits.  Ten values of 1 MiB (hex text, stored out of line).
$node->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog.produce_binary_batch('huge',
        (SELECT array_agg(ROW(NULL, convert_to((SELECT string_agg(md5(i || '-' || j), '')
                                                   FROM generate_series(1, 32768) j), 'UTF8'),
                              NULL, NULL)::eventlog.message)
           FROM generate_series(1, 10) i));
});
sub huge_rows
{
    my ($bytes) = @_;
    return $node->safe_psql('postgres', qq{
        SELECT count(*) FROM eventlog._kafka_fetch(ARRAY['huge'], ARRAY[0], ARRAY[0::bigint], ARRAY[10], 0,
                                                   $bytes) WHERE k_offset IS NOT NULL});
}
is(huge_rows('NULL'), 10, 'no byte limit: max_records');
is(huge_rows('ARRAY[1::bigint]'), 1, 'a byte limit below the first record: that record');
is(huge_rows('ARRAY[2097152::bigint]'), 2,
    'records while the bytes before one are below the limit: 2 of 1 MiB for 2 MiB');
is(huge_rows('ARRAY[2097153::bigint]'), 3, 'one byte more: the third, which crosses it');
is(huge_rows('ARRAY[0::bigint]'), 0, 'a limit of 0: none (no record has fewer bytes before it)');

# The buffers the call touches: the values after the limit are not read.
sub huge_blocks
{
    my ($bytes) = @_;
    # After a call that loads the session's caches, in the same session.
    my $plan = $node->safe_psql('postgres', qq{
        SELECT count(*) FROM eventlog._kafka_fetch(ARRAY['huge'], ARRAY[0], ARRAY[0::bigint], ARRAY[1], 0);
        EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON)
        SELECT * FROM eventlog._kafka_fetch(ARRAY['huge'], ARRAY[0], ARRAY[0::bigint], ARRAY[10], 0, $bytes)});
    my ($hit) = $plan =~ /"Shared Hit Blocks": (\d+)/;
    my ($read) = $plan =~ /"Shared Read Blocks": (\d+)/;
    return $hit + $read;
}
my $all_blocks = huge_blocks('NULL');
my $one_block = huge_blocks('ARRAY[100::bigint]');
cmp_ok($one_block * 4, '<', $all_blocks,
    "a limit of 100 bytes reads one value, not ten ($one_block blocks, $all_blocks without a limit)");

# The response's limit (total_max_bytes): once records were read, an item
# reads only while the bytes of all the records read before are below it.
sub huge_items
{
    my ($n, $bytes, $total) = @_;
    return $node->safe_psql('postgres', qq{
        SELECT string_agg(k_item || ':' || n, ',' ORDER BY k_item) FROM (
          SELECT k_item, count(k_offset) n FROM eventlog._kafka_fetch(
                   array_fill('huge'::text, ARRAY[$n]), array_fill(0, ARRAY[$n]),
                   array_fill(0::bigint, ARRAY[$n]), array_fill(10, ARRAY[$n]), 0,
                   $bytes, $total) GROUP BY k_item) s});
}
is(huge_items(3, 'array_fill(2097152::bigint, ARRAY[3])', 'NULL'), '1:2,2:2,3:2',
    'no response limit: each item to its own');
is(huge_items(3, 'array_fill(2097152::bigint, ARRAY[3])', 3145728), '1:2,2:1,3:0',
    'a response limit of 3 MiB: 2 records, then 1 (what is left), then none');
is(huge_items(3, 'NULL', 1), '1:1,2:0,3:0',
    'a response limit below the first record: that record, and nothing after it');
is(huge_items(3, 'NULL', 0), '1:1,2:0,3:0', 'a response limit of 0: the first record too');
is(huge_items(2, 'NULL', 5242881), '1:6,2:0',
    'no item limit: the first item reads up to the record that crosses the response limit');
is($node->safe_psql('postgres', q{
    SELECT string_agg(concat_ws('|', k_item, k_error, k_log_start, k_stable), ',' ORDER BY k_item)
      FROM eventlog._kafka_fetch(ARRAY['huge', 'huge'], ARRAY[0, 0], ARRAY[0, 3]::bigint[], ARRAY[10, 10], 0,
                                 NULL, 1) WHERE k_offset IS NULL}),
   '1|0|0|10,2|0|0|10', 'the items after the limit still report their offsets');

# The buffers: ten partitions of 1 MiB records asked with a response limit
# of 100 bytes read one value, not ten (the 1000 partitions x 1 MB case).
sub huge_items_blocks
{
    my ($total) = @_;
    my $plan = $node->safe_psql('postgres', qq{
        SELECT count(*) FROM eventlog._kafka_fetch(ARRAY['huge'], ARRAY[0], ARRAY[0::bigint], ARRAY[1], 0);
        EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON)
        SELECT * FROM eventlog._kafka_fetch(array_fill('huge'::text, ARRAY[10]), array_fill(0, ARRAY[10]),
                                            ARRAY[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]::bigint[],
                                            array_fill(1, ARRAY[10]), 0,
                                            array_fill(2097152::bigint, ARRAY[10]), $total)});
    my ($hit) = $plan =~ /"Shared Hit Blocks": (\d+)/;
    my ($read) = $plan =~ /"Shared Read Blocks": (\d+)/;
    return $hit + $read;
}
my $items_all = huge_items_blocks('NULL');
my $items_one = huge_items_blocks(100);
cmp_ok($items_one * 4, '<', $items_all,
    "a response limit of 100 bytes over ten partitions reads one value, not ten ($items_one blocks, $items_all without)");

# A result larger than work_mem spills to a file during the first item's
# subtransaction; the second item's must not close it.
my ($ret, $out, $err) = $node->psql('postgres', q{
    SET work_mem = '64kB';
    SELECT count(*), sum(octet_length(k_value)) FROM eventlog._kafka_fetch(ARRAY['huge', 'huge'], ARRAY[0, 0],
        ARRAY[0, 5]::bigint[], ARRAY[10, 10], 0) WHERE k_offset IS NOT NULL});
is($out, '15|15728640', 'a result spilled to a file, over two items');
is($err, '', 'without a warning');

# 2. Binary records byte for byte, as read_binary returns them.
$node->safe_psql('postgres', q{
    SELECT eventlog.produce_binary('b', NULL, NULL, NULL, 0);
    SELECT eventlog.produce_binary('b', '\x00ff'::bytea, ''::bytea,
        ARRAY[ROW('h', NULL), ROW('h', '\x00'::bytea), ROW('', ''::bytea)]::eventlog.header[], 0);
    SELECT eventlog.produce_binary('b', ''::bytea, '\xdeadbeef'::bytea, ARRAY[]::eventlog.header[], 0,
                                   event_time => '2001-02-03 04:05:06.789+00');
});
is($node->safe_psql('postgres', q{
    SET TimeZone = 'UTC';
    SELECT k_item, k_error, k_offset, k_key, k_value, k_headers, k_time = '2001-02-03 04:05:06.789+00'
      FROM eventlog._kafka_fetch(ARRAY['b'], ARRAY[0], ARRAY[0::bigint], ARRAY[100], 0)
     WHERE k_offset IS NOT NULL ORDER BY k_offset}),
   qq{1|0|0||||f\n1|0|1|\\x00ff|\\x|{"(h,)","(h,\\"\\\\\\\\x00\\")","(\\"\\",\\"\\\\\\\\x\\")"}|f\n1|0|2|\\x|\\xdeadbeef|{}|t},
   'NULL key, value and headers; empty ones; headers in order with duplicates and a NULL value');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog.read_binary('b', 0, 0, 100) r
      FULL JOIN (SELECT * FROM eventlog._kafka_fetch(ARRAY['b'], ARRAY[0], ARRAY[0::bigint], ARRAY[100], 0)
                  WHERE k_offset IS NOT NULL) f ON f.k_offset = r.offset_id
     WHERE f.k_key IS DISTINCT FROM r.key OR f.k_value IS DISTINCT FROM r.value
        OR f.k_headers IS DISTINCT FROM r.headers OR f.k_time IS DISTINCT FROM r.event_time
        OR f.k_log_start IS NOT NULL OR f.k_stable IS NOT NULL}),
   0, 'the same records as read_binary');

# 3. A JSON topic: UTF-8 bytes, and the headers object's members as headers.
$node->safe_psql('postgres', q{
    SELECT eventlog.produce('j', 'k€', '{"v": [1, "é"]}',
                            '{"a": "x", "b": null, "c": 1.50, "d": {"e": [true]}, "aa": "é"}');
    SELECT eventlog.produce('j', NULL, 'null', NULL);
    SELECT eventlog.produce('j', NULL, '"s"', '{}');
});
is($node->safe_psql('postgres', q{
    SELECT k_offset, convert_from(k_key, 'UTF8'), convert_from(k_value, 'UTF8'),
           k_headers IS NULL, cardinality(k_headers),
           (SELECT string_agg(h.name || '=' || coalesce(convert_from(h.value, 'UTF8'), 'NULL'), ',' ORDER BY o)
              FROM unnest(k_headers) WITH ORDINALITY h(name, value, o))
      FROM eventlog._kafka_fetch(ARRAY['j'], ARRAY[0], ARRAY[0::bigint], ARRAY[100], 0)
     WHERE k_offset IS NOT NULL ORDER BY k_offset}),
   qq{0|k€|{"v": [1, "é"]}|f|5|a=x,b=NULL,c=1.50,d={"e": [true]},aa=é\n1||null|t||\n2||"s"|f|0|},
   'JSON: key and value text, headers a string\'s text, NULL, other JSON\'s text; none unless an object');
is($node->safe_psql('postgres', q{
    SELECT octet_length(k_key) FROM eventlog._kafka_fetch(ARRAY['j'], ARRAY[0], ARRAY[0::bigint], ARRAY[1], 0)
     WHERE k_offset = 0}),
   4, 'the key in UTF-8 bytes');
my $jsize = $node->safe_psql('postgres', q{
    SELECT octet_length(key) + octet_length(value::text) + octet_length(headers::text)
      FROM eventlog.read('j', 0, 0, 1)});
is($node->safe_psql('postgres', qq{
    SELECT string_agg(n::text, ',' ORDER BY b) FROM (
      SELECT b, (SELECT count(*) FROM eventlog._kafka_fetch(ARRAY['j'], ARRAY[0], ARRAY[0::bigint], ARRAY[100], 0,
                                                            ARRAY[b::bigint]) WHERE k_offset IS NOT NULL) n
        FROM (VALUES ($jsize), ($jsize + 1)) v(b)) s}),
   '1,2', 'a JSON record\'s bytes: its key, value::text and headers::text');

# 4. Each item's outcome.
($ret, $out, $err) = $node->psql('postgres', q{
    SELECT k_item, k_error, k_log_start, k_stable
      FROM eventlog._kafka_fetch(
             ARRAY['b', 'b', 'b', 'nope', 'bad name', NULL, 'b', 'b', 'b', 'b', 'b'],
             ARRAY[0, 0, 7, 0, 0, 0, NULL, 0, 0, 0, 1],
             ARRAY[-1, 1000, 0, 0, 0, 0, 0, NULL, 0, 3, 0]::bigint[],
             ARRAY[10, 10, 10, 10, 10, 10, 10, 10, 0, 10, 2147483647], 0)
     WHERE k_offset IS NULL ORDER BY k_item});
is($out, join("\n",
    '1|1||', '2|1|0|3', '3|3||', '4|3||', '5|3||', '6|3||', '7|-1||', '8|-1||', '9|3||', '10|0|0|3', '11|0|0|0'),
   'negative offset 1, past the end 1 with the offsets, unknown partition, topic, name or NULL topic 3, '
   . 'NULL partition or offset -1, max_records 0 3, at the end 0');
like($err, qr/WARNING:  fetch of partition <NULL> of topic b failed: partition must not be null/,
    'a NULL partition: the warning');
like($err, qr/WARNING:  fetch of partition 0 of topic b failed: from_offset must not be null/,
    'a NULL offset: the warning');
($ret, $out, $err) = $node->psql('postgres', q{
    \set VERBOSITY verbose
    SELECT * FROM eventlog._kafka_fetch(ARRAY['b', 'b'], ARRAY[0], ARRAY[0::bigint], ARRAY[1], 0)});
like($err, qr/ERROR:  2202E: topics, partitions, offsets and max_records must have the same length/,
    'arrays of different lengths: an error');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog._kafka_fetch(NULL, NULL, NULL, NULL, NULL)}),
   0, 'NULL arrays: nothing');

# 5. An unprivileged role: 29 (after the partition check, before the offset's).
$node->safe_psql('postgres', q{SELECT eventlog.produce_binary('b', NULL, 'x', NULL, 1)});
is($node->safe_psql('postgres', q{
    SET ROLE outsider;
    SELECT string_agg(concat_ws('|', k_item, k_error, k_log_start, k_stable, k_offset), ',' ORDER BY k_item)
      FROM eventlog._kafka_fetch(ARRAY['b', 'b', 'b'], ARRAY[1, 9, 1], ARRAY[0, 0, 99]::bigint[],
                                 ARRAY[10, 10, 10], 1000)}),
   '1|29,2|3,3|29', 'without the consume privilege: 29, no records, no wait');

# A privilege revoked during the wait: the second pass says 29.
$node->safe_psql('postgres', q{SELECT eventlog.grant('b', 'consume', 'outsider')});
my ($wout, $werr) = ('', '');
my $wh = $node->background_psql('postgres', on_error_stop => 0);
$wh->query_until(qr/started/, q{
    \echo started
    SET ROLE outsider;
    SELECT string_agg(concat_ws('|', k_item, k_error, k_log_start, k_stable, k_offset), ',')
      FROM eventlog._kafka_fetch(ARRAY['b'], ARRAY[1], ARRAY[1::bigint], ARRAY[10], 600000);
});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE '%_kafka_fetch%'}),
   'a Fetch waits');
$node->safe_psql('postgres', q{
    SELECT eventlog.revoke('b', 'consume', 'outsider');
    SELECT eventlog.produce_binary('b', NULL, 'y', NULL, 1);
});
is($wh->query_safe('SELECT 1'), "1|29\n1", 'a privilege revoked during the wait: 29 and no records');
$wh->quit;

# A topic dropped during the wait: 3.
$wh = $node->background_psql('postgres', on_error_stop => 0);
$wh->query_until(qr/started/, q{
    \echo started
    SELECT string_agg(concat_ws('|', k_item, k_error, k_log_start, k_stable, k_offset), ',')
      FROM eventlog._kafka_fetch(ARRAY['gone'], ARRAY[0], ARRAY[0::bigint], ARRAY[10], 600000);
});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE '%_kafka_fetch%'}),
   'a Fetch waits on a topic about to be dropped');
$node->safe_psql('postgres', q{SELECT eventlog.drop_topic('gone')});
is($wh->query_safe('SELECT 1'), "1|3\n1", 'a topic dropped during the wait: 3');
$wh->quit;

# A cancelled wait ends the call; the session goes on, and waits again.
($ret, $out, $err) = $node->psql('postgres', q{
    SET statement_timeout = '200ms';
    SELECT * FROM eventlog._kafka_fetch(ARRAY['b'], ARRAY[1], ARRAY[2::bigint], ARRAY[10], 600000);
    RESET statement_timeout;
    SELECT string_agg(concat_ws('|', k_item, k_error, k_log_start, k_stable, k_offset), ',')
      FROM eventlog._kafka_fetch(ARRAY['b'], ARRAY[1], ARRAY[2::bigint], ARRAY[10], 100);
}, on_error_stop => 0);
like($err, qr/canceling statement due to statement timeout/, 'statement_timeout cancels the wait');
is($out, '1|0|0|2', 'and the session fetches (and waits) again');

done_testing();
