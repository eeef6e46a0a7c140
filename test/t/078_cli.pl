# The pg_eventlog command (src/cli/, docs/cli.md), installed beside
# pg_config: its command line, topic, produce, consume and tail, and what a
# hostile user tries (bad lines, unknown topics, wrong offsets, invalid
# UTF-8, a reader that goes away, a server that goes away, a role without
# privileges).  Groups, export and stats: 079_cli_groups_export.pl.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use JSON::PP;
use Test::More;
use CliTest;

my $node = cli_node('cli');
my $cli = cli_path();
ok(-x $cli, 'pg_eventlog is installed beside pg_config');
my ($rc, $out, $err);

# 1. The command line: help, version, exit statuses, one-line errors.
($rc, $out, $err) = cli('--no-d', '--help');
is($rc, 0, '--help exits 0');
like($out, qr/^usage: pg_eventlog \[-d CONNINFO\] COMMAND/m, '--help prints the usage');
($rc, $out) = cli('--no-d', '--version');
like($out, qr/\Apg_eventlog \(pg_eventlog\) \d+\.\d+\.\d+\n\z/, '--version');
for my $cmd ([qw(topic --help)], [qw(topic create --help)], [qw(produce --help)],
    [qw(consume --help)], [qw(tail --help)], [qw(group --help)], [qw(group reset --help)],
    [qw(export --help)], [qw(stats --help)])
{
    ($rc, $out, $err) = cli('--no-d', @$cmd);
    ok($rc == 0 && $out =~ /^usage: pg_eventlog \Q$cmd->[0]\E/m && $err eq '',
        "@$cmd prints its usage");
}
for my $bad ([ ['frobnicate'], qr/unknown command "frobnicate"/ ],
    [ [], qr/a command is required/ ],
    [ [qw(topic create)], qr/a topic name is required/ ],
    [ [qw(topic create t --partitions 0)], qr/invalid value "0" for --partitions/ ],
    [ [qw(topic create t --retention-bytes lots)], qr/invalid size "lots"/ ],
    [ [qw(consume t --bogus)], qr/unknown option "--bogus"/ ],
    [ [qw(consume t -o)], qr/option -o needs a value/ ],
    [ [qw(consume t -o sideways)], qr/invalid offset "sideways": beginning, end, stored, N, -N or \@TIME expected/ ],
    [ [qw(consume t -o stored)], qr/-o stored needs -g GROUP/ ],
    [ [qw(produce t -k a -K :)], qr/-k and -K cannot be used together/ ])
{
    ($rc, $out, $err) = cli('--no-d', @{ $bad->[0] });
    ok($rc == 2 && one_line_error($err, $bad->[1]) && $out eq '',
        "usage error for \"@{ $bad->[0] }\": exit 2, one line") or diag("rc=$rc err=$err");
}
($rc, $out, $err) = cli('--no-d', '-d', 'host=/nonexistent', 'topic', 'list');
ok($rc == 1 && one_line_error($err, qr/^pg_eventlog: error: .*nonexistent/), 'a failed connection is one line, exit 1')
    or diag($err);
{
    # libpq's environment, as every PostgreSQL client.
    local $ENV{PGHOST} = $node->host;
    local $ENV{PGPORT} = $node->port;
    local $ENV{PGDATABASE} = 'postgres';
    ($rc, $out, $err) = cli('--no-d', 'topic', 'list');
    ok($rc == 0 && $out =~ /^TOPIC\s+PARTITIONS/, 'connects with PGHOST, PGPORT, PGDATABASE') or diag($err);
}
$node->safe_psql('postgres', 'CREATE DATABASE plain');
($rc, $out, $err) = cli('--no-d', '-d', $node->connstr('plain'), 'topic', 'list');
ok($rc == 1 && one_line_error($err, qr/extension pg_eventlog is not installed in database "plain"/),
    'a database without the extension is named');

# 2. Topics.
($rc, $out, $err) = cli(qw(topic create orders --partitions 3 --retention 7d --retention-bytes 1GB
    --segment-interval 12h --segment-bytes 512MB));
is($rc, 0, 'topic create with every setting') or diag($err);
is($node->safe_psql('postgres', q{SELECT partitions, retention, retention_bytes, segment_interval, segment_bytes
    FROM eventlog.topics WHERE topic = 'orders'}), '3|7 days|1073741824|12:00:00|536870912',
    'the settings are the topic\'s');
($rc, $out, $err) = cli(qw(topic create forever --retention none --format binary));
is($node->safe_psql('postgres', q{SELECT partitions, retention IS NULL, format FROM eventlog.topics WHERE topic = 'forever'}),
    '1|t|binary', 'defaults, --retention none and --format');
($rc, $out, $err) = cli(qw(topic create orders));
ok($rc == 1 && one_line_error($err, qr/^pg_eventlog: error: topic "orders" already exists$/), 'the server\'s message, one line');
($rc, $out, $err) = cli('topic', 'create', "x'); DROP TABLE eventlog.topic_catalog; --");
ok($rc == 1 && one_line_error($err, qr/invalid topic name/), 'a name is a parameter, never SQL');
($rc, $out, $err) = cli(qw(topic alter orders --partitions 4 --retention none --retention-bytes none));
is($rc, 0, 'topic alter') or diag($err);
is($node->safe_psql('postgres', q{SELECT partitions, retention IS NULL, retention_bytes IS NULL FROM eventlog.topics WHERE topic = 'orders'}),
    '4|t|t', 'alter grows partitions and removes limits');
($rc, $out, $err) = cli(qw(topic alter orders));
ok($rc == 2 && one_line_error($err, qr/nothing to change/), 'alter without a setting');
($rc, $out, $err) = cli(qw(topic alter orders --partitions 2));
ok($rc == 1 && $err =~ /^pg_eventlog: error: /, 'alter cannot shrink (the server says)');
($rc, $out) = cli(qw(topic list));
like($out, qr/^TOPIC +PARTITIONS +RECORDS +BYTES +RETENTION +RETENTION_BYTES +FORMAT +OWNER\nforever +1 +0 .*\norders +4 +0 /,
    'topic list');
($rc, $out) = cli(qw(topic describe orders));
like($out, qr/^topic orders: 4 partitions, format json/, 'describe: settings');
like($out, qr/^PARTITION +LOG_START +HIGH_WATERMARK +STABLE_OFFSET +STABLE_OFFSET_HOLDER +RECORDS +BYTES +SEGMENTS/m,
    'describe: partitions header');
like($out, qr/^3 +0 +0 +0 +0 /m, 'describe: one row per partition');
($rc, $out, $err) = cli(qw(topic describe nope));
ok($rc == 1 && one_line_error($err, qr/topic "nope" does not exist/), 'describe of an unknown topic');
($rc, $out, $err) = cli(qw(topic delete forever));
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.topics WHERE topic = 'forever'}), '0', 'topic delete');
($rc, $out, $err) = cli(qw(topic delete forever));
ok($rc == 1 && one_line_error($err, qr/does not exist/), 'delete of an unknown topic fails');
($rc, $out, $err) = cli(qw(topic delete forever --if-exists));
is($rc, 0, '--if-exists');

# 3. produce.
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('p', 2)});
my $in = qq(alice:{"n": 1}\nbob:{"n": 2}\n\ncarol:[1, "two"]\n:"empty key"\n);
($rc, $out, $err) = cli(\$in, qw(produce p -K : -H source=cli -H), 'q=a"b', '-T');
is($rc, 0, 'produce -K -H -T') or diag($err);
is($out, qq(alice:{"n": 1}\nbob:{"n": 2}\ncarol:[1, "two"]\n:"empty key"\n), '-T echoes what was produced');
is($node->safe_psql('postgres', q{SELECT string_agg(format('%s %s %s %s', key, value, headers,
        partition = eventlog.partition_for_key(key, 2)), '|' ORDER BY key)
        FROM (SELECT * FROM eventlog.read('p', 0, 0) UNION ALL SELECT * FROM eventlog.read('p', 1, 0)) r}),
    q( "empty key" {"q": "a\\"b", "source": "cli"} t|alice {"n": 1} {"q": "a\\"b", "source": "cli"} t|bob {"n": 2} {"q": "a\\"b", "source": "cli"} t|carol [1, "two"] {"q": "a\\"b", "source": "cli"} t),
    'keys split at -K, values JSON, headers, partitions by key; the empty line skipped');
$in = "1|2|3";
($rc, $out, $err) = cli(\$in, qw(produce p -D | -k same -p 1));
is($node->safe_psql('postgres', q{SELECT string_agg(key || '=' || value, ',' ORDER BY offset_id) FROM eventlog.read('p', 1, 0) WHERE key = 'same'}),
    'same=1,same=2,same=3', '-D, -k and -p');
$in = "1\n\n2\n";
($rc, $out, $err) = cli(\$in, qw(produce p -p 0 -Z -k z));
is($node->safe_psql('postgres', q{SELECT string_agg(coalesce(value::text, 'NULL'), ',' ORDER BY offset_id) FROM eventlog.read('p', 0, 0) WHERE key = 'z'}),
    '1,NULL,2', '-Z: an empty line is a tombstone');
$in = '';
($rc, $out, $err) = cli(\$in, qw(produce p));
ok($rc == 0 && $out eq '' && $err eq '', 'empty input: nothing, exit 0');

# Bad lines: the records before are committed, none from it on.
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('bad', 1)});
$in = join('', map { "$_\n" } 1 .. 7) . "not json\n8\n9\n";
($rc, $out, $err) = cli(\$in, qw(produce bad --batch 3));
ok($rc == 1 && one_line_error($err, qr/^pg_eventlog: error: line 8: invalid input syntax for type json \(records committed before it: 7\)$/),
    'a non-JSON line: its number and what was committed') or diag($err);
is($node->safe_psql('postgres', q{SELECT string_agg(value::text, ',' ORDER BY offset_id) FROM eventlog.read('bad', 0, 0)}),
    '1,2,3,4,5,6,7', 'every record before the bad line, none from it on');
$in = "10\n\xff\xfe\n11\n";
($rc, $out, $err) = cli(\$in, qw(produce bad));
ok($rc == 1 && one_line_error($err, qr/line 2: invalid byte sequence for encoding "UTF8": 0xff \(records committed before it: 1\)/),
    'invalid UTF-8: the line') or diag($err);
$in = '"' . ('x' x (1024 * 1024 + 10)) . "\"\n";
($rc, $out, $err) = cli(\$in, qw(produce bad));
ok($rc == 1 && one_line_error($err, qr/line 1: record is too large/), 'a huge line: too large, its number') or diag($err);
$in = "a:1\nb\n";
($rc, $out, $err) = cli(\$in, qw(produce bad -K :));
ok($rc == 1 && one_line_error($err, qr/line 2: no key delimiter in the line \(records committed before it: 1\)/),
    'a line without the key delimiter') or diag($err);
is($node->safe_psql('postgres', q{SELECT string_agg(value::text, ',' ORDER BY offset_id) FROM eventlog.read('bad', 0, 0)}),
    '1,2,3,4,5,6,7,10,1', 'nothing partial after each bad input');
$in = "1\n";
($rc, $out, $err) = cli(\$in, qw(produce nope));
ok($rc == 1 && one_line_error($err, qr/^pg_eventlog: error: topic "nope" does not exist$/), 'produce to an unknown topic');
($rc, $out, $err) = cli(\$in, qw(produce bad -p 1));
ok($rc == 1 && one_line_error($err, qr/partition 1 of topic "bad" does not exist/), 'produce to an unknown partition');

# 4. consume.
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('c', 2);
    SELECT count(*) FROM eventlog.produce_batch('c', ARRAY['k0', NULL, 'k2'], ARRAY['{"a": 1}', '2', '"three"']::jsonb[],
        ARRAY['{"h": "v"}', NULL, '{"x": 1, "y": "z"}']::jsonb[], 0,
        ARRAY['2026-01-01 00:00:00+00', '2026-01-01 00:00:01+00', '2026-01-01 00:00:02+00']::timestamptz[]);
    SELECT count(*) FROM eventlog.produce_batch('c', NULL, ARRAY['10', '11']::jsonb[], NULL, 1);});
($rc, $out, $err) = cli(qw(consume c -e));
is($out, qq({"a": 1}\n2\n"three"\n10\n11\n), 'consume -e: the values, every partition') or diag($err);
($rc, $out) = cli(qw(consume c -e -p 0 -f), '%t|%p|%o|%k|%s|%h|%T|%K|%S|%%\n');
is($out, qq(c|0|0|k0|{"a": 1}|h=v|1767225600000|2|8|%\nc|0|1||2||1767225601000|-1|1|%\nc|0|2|k2|"three"|x=1,y=z|1767225602000|2|7|%\n),
    '-f with kcat\'s tokens');
($rc, $out) = cli(qw(consume c -e -p 0 -J -c 1));
my $j = decode_json($out);
is_deeply($j, { topic => 'c', partition => 0, offset => 0, ts => 1767225600000, key => 'k0',
        headers => { h => 'v' }, payload => { a => 1 } }, '-J and -c');
($rc, $out) = cli(qw(consume c -e -p 0 -o 1 -f %o\n));
is($out, "1\n2\n", '-o N');
($rc, $out) = cli(qw(consume c -e -o -1 -f %p:%o\n));
is($out, "0:2\n1:1\n", '-o -N');
($rc, $out) = cli(qw(consume c -e -o end));
is($out, '', '-o end -e: nothing');
# -o @TIME: by append time (offset_for_time), in milliseconds or ISO 8601.
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('tm', 1); SELECT eventlog.produce('tm', NULL, '"before"')});
my ($ms, $iso) = split /\|/, $node->safe_psql('postgres', q{
    SELECT ceil(extract(epoch FROM clock_timestamp()) * 1000)::bigint,
           to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') FROM pg_sleep(0.02)});
$node->safe_psql('postgres', q{SELECT pg_sleep(0.02); SELECT eventlog.produce('tm', NULL, '"after"')});
($rc, $out) = cli(qw(consume tm -e -o), "\@$ms");
is($out, qq("after"\n), '-o @milliseconds');
($rc, $out) = cli(qw(consume tm -e -o), "\@$iso");
is($out, qq("after"\n), '-o @ISO 8601');
($rc, $out, $err) = cli(qw(consume c -e -p 0 -o 99));
ok($rc == 1 && one_line_error($err, qr/offset 99 is beyond the high watermark of partition 0 of topic "c"/), '-o beyond the end')
    or diag($err);
($rc, $out, $err) = cli(qw(consume c -e -o @yesterday-ish));
ok($rc == 1 && one_line_error($err, qr/invalid input syntax for type timestamp with time zone/), '-o @ of no time') or diag($err);
($rc, $out, $err) = cli(qw(consume nope -e));
ok($rc == 1 && one_line_error($err, qr/topic "nope" does not exist/), 'consume of an unknown topic');
($rc, $out, $err) = cli(qw(consume c -e -p 2));
ok($rc == 1 && one_line_error($err, qr/partition 2 of topic "c" does not exist/), 'consume of an unknown partition');

# A reader that goes away: no message, no error.
my $sh = "'$cli' -d '" . $node->connstr('postgres') . "' consume c -e | head -n 1; echo \"status \${PIPESTATUS[0]}\"";
($out, $err) = ('', '');
IPC::Run::run([ 'bash', '-c', $sh ], '>', \$out, '2>', \$err);
is($out, qq({"a": 1}\nstatus 0\n), 'piped into head: quiet, exit 0');
is($err, '', 'piped into head: nothing on stderr');
# Standard input or output closed by the caller: /dev/null, not the
# connection's socket (which takes the lowest free descriptor).
$sh = "'$cli' -d '" . $node->connstr('postgres') . "' consume c -e >&-; echo \"status \$?\" >&2";
($out, $err) = ('', '');
IPC::Run::run([ 'bash', '-c', $sh ], '>', \$out, '2>', \$err);
is($err, "status 0\n", 'consume with standard output closed: exit 0, no error');
$sh = "'$cli' -d '" . $node->connstr('postgres') . "' produce c <&-; echo \"status \$?\"";
($out, $err) = ('', '');
IPC::Run::run([ 'bash', '-c', $sh ], '>', \$out, '2>', \$err);
is("$out$err", "status 0\n", 'produce with standard input closed: nothing to produce, exit 0');

# produce -T into a reader that goes away: the rest of the input is not
# produced, so it fails and says how many records are committed.
$node->safe_psql('postgres', q{SELECT eventlog.create_topic('tq', 1)});
$sh = "seq 1 5000 | '$cli' -d '" . $node->connstr('postgres')
  . "' produce tq --batch 1000 -T | head -n 1; echo \"status \${PIPESTATUS[1]}\"";
($out, $err) = ('', '');
IPC::Run::run([ 'bash', '-c', $sh ], '>', \$out, '2>', \$err);
my $tq = $node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('tq', 0, 0, 10000)});
is($out, "1\nstatus 1\n", 'produce -T piped into head: exit 1');
ok(one_line_error($err, qr/standard output was closed while echoing: the rest of the input was not produced \(records committed: \Q$tq\E\)/)
    && $tq < 5000, 'and it says how many records were committed') or diag("$tq $err");

# Following: the long poll, no busy loop; records as they commit.
sub waiting_in_poll
{
    return $node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
        WHERE application_name = 'pg_eventlog' AND wait_event_type = 'Extension'});
}
my ($fout, $ferr) = ('', '');
my $follow = IPC::Run::start([ $cli, '-d', $node->connstr('postgres'), 'tail', 'c', '-f', '%p:%s\n' ],
    '>', \$fout, '2>', \$ferr, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
ok(waiting_in_poll(), 'tail waits in the server (the long poll)');
$node->safe_psql('postgres', q{SELECT eventlog.produce('c', NULL, '"new"', partition => 1)});
$follow->pump until $fout =~ /\n/;
is($fout, qq(1:"new"\n), 'tail prints a record as it commits, and none of the old ones');
ok(waiting_in_poll(), 'and waits again');
my $cpu = $node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg_eventlog' AND state = 'active' AND wait_event_type IS DISTINCT FROM 'Extension'});
is($cpu, '0', 'no query of it runs outside the wait');
$follow->signal('TERM');
$follow->finish;
is(($follow->full_results)[0], 0, 'SIGTERM ends it with exit 0');
is($ferr, '', 'quietly');

# A rolled-back transaction leaves a gap the follower moves past.
$node->safe_psql('postgres', q{BEGIN; SELECT eventlog.produce('c', NULL, '"gone"', partition => 0); ROLLBACK;});
($fout, $ferr) = ('', '');
$follow = IPC::Run::start([ $cli, '-d', $node->connstr('postgres'), 'consume', 'c', '-p', '0', '-o', '3' ],
    '>', \$fout, '2>', \$ferr, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
ok(waiting_in_poll(), 'a follower at a rolled-back offset waits (no busy loop over the gap)');
$node->safe_psql('postgres', q{SELECT eventlog.produce('c', NULL, '"after"', partition => 0)});
$follow->pump until $fout =~ /\n/;
is($fout, qq("after"\n), 'and prints the next record');

# The server going away mid-way: one line, exit 1.
$node->safe_psql('postgres', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg_eventlog'});
$follow->finish;
is(($follow->full_results)[0] >> 8, 1, 'a terminated session: exit 1');
ok(one_line_error($ferr, qr/^pg_eventlog: error: .*terminat/), 'with the server\'s message on one line') or diag($ferr);

# 5. A role without privileges.
$node->safe_psql('postgres', q{CREATE ROLE nobody LOGIN});
my $nobody = $node->connstr('postgres') . ' user=nobody';
$in = "1\n";
($rc, $out, $err) = cli(\$in, '--no-d', '-d', $nobody, qw(produce c));
ok($rc == 1 && one_line_error($err, qr/^pg_eventlog: error: permission denied[^\n]* \(records committed before line 1: 0\)$/),
    'produce without the privilege: the server\'s message, no line blamed') or diag($err);
($rc, $out, $err) = cli('--no-d', '-d', $nobody, qw(consume c -e));
ok($rc == 1 && one_line_error($err, qr/^pg_eventlog: error: permission denied/), 'consume without the privilege') or diag($err);
($rc, $out, $err) = cli('--no-d', '-d', $nobody, qw(topic create mine));
ok($rc == 1 && one_line_error($err, qr/permission denied/), 'topic create without EXECUTE') or diag($err);
is($node->safe_psql('postgres', q{SELECT eventlog.high_watermark('c', 0)}), '5', 'nothing produced by them');

done_testing();
