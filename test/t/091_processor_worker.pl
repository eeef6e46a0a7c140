# The processor worker: stream processors run without anyone calling
# run_processor.  Records are processed as they come; kills of the worker
# mid-step (SIGKILL: a crash restart) and an immediate shutdown lose and
# double-count nothing (the sinks equal a reference computed from the
# topic); a failing processor records its error, is retried and recovers
# once fixed while another keeps running; pause and resume; a processor of
# an unprivileged owner runs with that owner's rights only; the worker
# comes and goes with processors, eventlog.processors_enabled, DROP
# EXTENSION and DROP DATABASE.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('procworker');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
restart_after_crash = on
eventlog.maintenance_interval = '200ms'
eventlog.database_probe_interval = '2s'
eventlog.processor_max_records = 200
eventlog.processor_idle_interval = '200ms'
max_worker_processes = 20
});
$node->start;

my $worker_in = q{SELECT coalesce(string_agg(datname, ',' ORDER BY datname), '')
                    FROM pg_stat_activity WHERE backend_type = 'pg_eventlog processors'};

$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('orders', 3);
});
# No processor, no worker (the one started to look exits).
ok($node->poll_query_until('postgres', qq{SELECT ($worker_in) = ''}),
   'no processor worker without processors');

# A map into a table (each record's position: a record written twice or
# never shows) and a window count by key with emit changes.
$node->safe_psql('postgres', q{
    CREATE TABLE copied (p integer, o bigint, k text);
    CREATE TABLE per_key (ws timestamptz, we timestamptz, k text, n bigint);
    SELECT eventlog.create_processor('copy', 'orders', sink_table => 'copied',
        select_list => 'partition, offset_id, key');
    SELECT eventlog.create_window_processor('per_key', 'orders', 'per_key', size => '10 seconds',
        emit => 'changes', event_time => $$to_timestamp((value->>'t')::numeric)$$);
});
ok($node->poll_query_until('postgres', qq{SELECT ($worker_in) = 'postgres'}),
   'creating a processor starts the worker');

sub produce
{
    my ($from, $to) = @_;
    $node->safe_psql('postgres', qq{
        SELECT count(*) FROM eventlog.produce_batch('orders',
            (SELECT array_agg('k' || (i % 7)) FROM generate_series($from, $to) i),
            (SELECT array_agg(jsonb_build_object('i', i, 't', 1767225600 + i / 10)) FROM generate_series($from, $to) i))});
}

# The reference, from the topic's records themselves.
my $copy_ok = q{
    SELECT (SELECT count(*) FROM copied) = n AND (SELECT count(DISTINCT (p, o)) FROM copied) = n
      FROM (SELECT sum(high_watermark) AS n FROM eventlog.partitions WHERE topic = 'orders') s};
my $per_key_diff = q{
    SELECT count(*) FROM (
        (SELECT ws, k, n FROM per_key
         EXCEPT
         SELECT date_bin('10 seconds', to_timestamp((value->>'t')::numeric), '1970-01-01 00:00:00+00'), key, count(*)
           FROM generate_series(0, 2) p, eventlog.read('orders', p, 0, 1000000) GROUP BY 1, 2)
        UNION ALL
        (SELECT date_bin('10 seconds', to_timestamp((value->>'t')::numeric), '1970-01-01 00:00:00+00'), key, count(*)
           FROM generate_series(0, 2) p, eventlog.read('orders', p, 0, 1000000) GROUP BY 1, 2
         EXCEPT
         SELECT ws, k, n FROM per_key)) d};

produce(1, 500);
ok($node->poll_query_until('postgres', $copy_ok), 'records are processed without run_processor');
ok($node->poll_query_until('postgres', "SELECT ($per_key_diff) = 0"),
   'the window processor emits its changes without run_processor');
is($node->safe_psql('postgres', q{SELECT string_agg(name || ':' || enabled || ':' || failures, ',' ORDER BY name) FROM eventlog.processors}),
   'copy:true:0,per_key:true:0', 'eventlog.processors shows them enabled and healthy');

# Kills of the worker in the middle of its steps: each is a crash restart
# of the server.  A backlog makes the steps many (200 records each).
$node->safe_psql('postgres', q{SELECT eventlog.pause_processor('copy'), eventlog.pause_processor('per_key')});
produce(501, 20500);
$node->safe_psql('postgres', q{SELECT eventlog.resume_processor('copy'), eventlog.resume_processor('per_key')});
my $killed = 0;
for my $k (1 .. 3)
{
    my $pid = '';
    # Catch it while a step runs (it may also have finished the backlog).
    for (1 .. 200)
    {
        $pid = $node->safe_psql('postgres', q{
            SELECT pid FROM pg_stat_activity
             WHERE backend_type = 'pg_eventlog processors' AND state = 'active'
               AND query LIKE 'eventlog processor step%'});
        last if $pid ne '';
    }
    last if $pid eq '';
    kill 'KILL', $pid;
    $killed++;
    $node->poll_query_until('postgres', 'SELECT true') or die 'the server did not come back';
}
note("killed the worker mid-step $killed times");
cmp_ok($killed, '>=', 1, 'the worker was killed in a step');
# An immediate shutdown in the middle too.
produce(20501, 22500);
$node->stop('immediate');
$node->start;
ok($node->poll_query_until('postgres', $copy_ok),
   'after the kills and a crash restart, every record was copied exactly once');
ok($node->poll_query_until('postgres', "SELECT ($per_key_diff) = 0"),
   'and every window counts each of its records once');

# A failing processor: its sink refuses a record.  It records the error and
# is retried; the other processors keep running; fixed, it recovers.
$node->safe_psql('postgres', q{
    CREATE TABLE strict_rows (i integer CHECK (i <> 22501));
    SELECT eventlog.create_processor('strict', 'orders', sink_table => 'strict_rows',
        select_list => $$(value->>'i')::integer$$, start_from => 'latest');
});
# Its first step has its group's positions at the end.
ok($node->poll_query_until('postgres', q{SELECT lag = 0 FROM eventlog.processors WHERE name = 'strict'}),
   'the new processor starts at the end');
$node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.produce('orders', 'x', '{"i": 22501, "t": 1767227850}')});
ok($node->poll_query_until('postgres', q{
    SELECT failures > 0 AND last_error LIKE '%violates check constraint%' AND last_error_at IS NOT NULL
      FROM eventlog.processors WHERE name = 'strict'}),
   'a failing step is recorded in eventlog.processors');
produce(22502, 22600);
ok($node->poll_query_until('postgres', $copy_ok), 'another processor keeps running meanwhile');
is($node->safe_psql('postgres', q{SELECT count(*) FROM strict_rows}), '0', 'the failing step wrote nothing');
ok($node->poll_query_until('postgres', q{SELECT failures >= 2 FROM eventlog.processors WHERE name = 'strict'}),
   'it is retried');
like(slurp_file($node->logfile), qr/pg_eventlog processor "strict" failed: new row for relation "strict_rows" violates check constraint/,
     'and logged');
$node->safe_psql('postgres', q{ALTER TABLE strict_rows DROP CONSTRAINT strict_rows_i_check});
ok($node->poll_query_until('postgres', q{
    SELECT failures = 0 AND lag = 0 FROM eventlog.processors WHERE name = 'strict'}),
   'fixed, it recovers');
is($node->safe_psql('postgres', q{SELECT count(*) || ' ' || count(DISTINCT i) || ' ' || min(i) || ' ' || max(i) FROM strict_rows}),
   '100 100 22501 22600', 'and processes the record it failed on, and those after it, once');

# A step longer than eventlog.processor_step_timeout is canceled: a failure.
$node->append_conf('postgresql.conf', "eventlog.processor_step_timeout = '300ms'\n");
$node->reload;
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('slow', 1);
    CREATE TABLE slow_rows (v integer);
    SELECT eventlog.create_processor('slow', 'slow', sink_table => 'slow_rows',
        select_list => '(SELECT 1 FROM pg_sleep(30))');
    SELECT count(*) FROM eventlog.produce('slow', 'a', '{}');
});
ok($node->poll_query_until('postgres', q{
    SELECT last_error = 'canceling statement due to statement timeout' FROM eventlog.processors WHERE name = 'slow'}),
   'a step longer than eventlog.processor_step_timeout is canceled and recorded');
produce(22601, 22605);
ok($node->poll_query_until('postgres', $copy_ok), 'the other processors keep running');
$node->safe_psql('postgres', q{SELECT eventlog.drop_processor('slow'); SELECT eventlog.drop_topic('slow')});

# A processor whose full step never fits in the timeout (16 records of 50
# ms, 0.8 s, against 300 ms) is retried with half the records, until its
# steps fit (4 records, 0.2 s); it then reads all its records.  (The sleep
# depends on the record, or the subquery would sleep once.)
$node->append_conf('postgresql.conf', "eventlog.processor_max_records = 16\n");
$node->reload;
$node->safe_psql('postgres', q{
    SELECT eventlog.create_topic('costly', 1);
    CREATE TABLE costly_rows (v integer);
    SELECT eventlog.create_processor('costly', 'costly', sink_table => 'costly_rows',
        select_list => $$(SELECT (record.value->>'i')::integer FROM pg_sleep(0.05 * sign((record.value->>'i')::integer)))$$);
    SELECT count(*) FROM eventlog.produce_batch('costly', array_fill(NULL::text, ARRAY[16]),
        (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, 16) i));
});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 16 AND count(DISTINCT v) = 16 FROM costly_rows}),
   'a processor whose full steps time out moves in smaller steps');
like(slurp_file($node->logfile),
     qr/pg_eventlog processor "costly": steps of at most 8 records after a step canceled by eventlog.processor_step_timeout/,
     'and says so in the log');
is($node->safe_psql('postgres', q{SELECT failures || ' ' || lag FROM eventlog.processors WHERE name = 'costly'}),
   '0 0', 'its failures are over');
$node->safe_psql('postgres', q{SELECT eventlog.drop_processor('costly'); SELECT eventlog.drop_topic('costly')});
$node->append_conf('postgresql.conf', "eventlog.processor_max_records = 200\n");
$node->append_conf('postgresql.conf', "eventlog.processor_step_timeout = 0\n");
$node->reload;

# Paused, a processor is not run; resumed, it catches up.
ok($node->poll_query_until('postgres', q{SELECT lag = 0 FROM eventlog.processors WHERE name = 'strict'}),
   'the recovered processor keeps up');
$node->safe_psql('postgres', q{SELECT eventlog.pause_processor('strict')});
produce(22606, 22615);
ok($node->poll_query_until('postgres', $copy_ok), 'the others process new records');
is($node->safe_psql('postgres', q{SELECT enabled::text || ' ' || lag FROM eventlog.processors WHERE name = 'strict'}),
   'false 10', 'a paused processor is left alone');
$node->safe_psql('postgres', q{SELECT eventlog.resume_processor('strict')});
ok($node->poll_query_until('postgres', q{SELECT lag = 0 FROM eventlog.processors WHERE name = 'strict'}),
   'resumed, it catches up');

# A processor of an unprivileged owner runs with the owner's rights only,
# in a security-restricted operation (no SET ROLE to the worker's superuser).
$node->safe_psql('postgres', q{
    CREATE ROLE alice LOGIN;
    GRANT USAGE, CREATE ON SCHEMA public TO alice;
    SELECT eventlog.create_topic('inbox', 1);
    SELECT eventlog.grant('inbox', 'consume', 'alice');
    CREATE TABLE secrets (s text);
    INSERT INTO secrets VALUES ('hidden');
    GRANT SELECT ON secrets TO alice;
});
$node->safe_psql('postgres', q{
    CREATE TABLE alice_rows (who text, super boolean, k text);
    SELECT eventlog.create_processor('alice_rows', 'inbox', sink_table => 'alice_rows',
        select_list => $$current_user, (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user), key$$);
    CREATE TABLE alice_gate (s text);
    SELECT eventlog.create_processor('alice_gate', 'inbox', sink_table => 'alice_gate',
        select_list => $$eventlog._processor_owner_step(
            (SELECT c.processor_id FROM eventlog.processor_catalog c WHERE c.name = 'alice_gate'))::text$$,
        where_clause => $$key = 'gate'$$);
    CREATE TABLE alice_peek (s text);
    -- Created while alice may read secrets (create checks the expressions).
    SELECT eventlog.create_processor('alice_peek', 'inbox', sink_table => 'alice_peek',
        select_list => $$(SELECT s.s FROM public.secrets s LIMIT 1)$$,
        where_clause => $$key = 'peek'$$);
    CREATE TABLE alice_role (s text);
    SELECT eventlog.create_processor('alice_role', 'inbox', sink_table => 'alice_role',
        select_list => $$pg_catalog.set_config('role', 'postgres', true)$$,
        where_clause => $$key = 'role'$$);
}, extra_params => [ '-U', 'alice' ]);
$node->safe_psql('postgres', q{
    REVOKE SELECT ON secrets FROM alice;
    SELECT count(*) FROM eventlog.produce('inbox', 'a', '{}');
    SELECT count(*) FROM eventlog.produce('inbox', 'peek', '{}');
    SELECT count(*) FROM eventlog.produce('inbox', 'role', '{}');
    SELECT count(*) FROM eventlog.produce('inbox', 'gate', '{}');
});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 4 FROM alice_rows}),
   'the unprivileged owner\'s processor runs');
is($node->safe_psql('postgres', q{SELECT string_agg(who || ' ' || super, ',') FROM alice_rows}),
   'alice false,alice false,alice false,alice false',
   'as its owner, not as the worker\'s superuser');
ok($node->poll_query_until('postgres', q{
    SELECT last_error = 'a processor''s internal functions run only through its gate'
      FROM eventlog.processors WHERE name = 'alice_gate'}),
   'its own SQL cannot pass as the step\'s gate');
ok($node->poll_query_until('postgres', q{
    SELECT last_error = 'permission denied for table secrets' FROM eventlog.processors WHERE name = 'alice_peek'}),
   'its SQL has the owner\'s privileges, not the worker\'s');
ok($node->poll_query_until('postgres', q{
    SELECT last_error LIKE 'cannot set parameter "role" within security-restricted operation'
      FROM eventlog.processors WHERE name = 'alice_role'}),
   'and cannot SET ROLE');
is($node->safe_psql('postgres', q{
    SELECT (SELECT count(*) FROM alice_peek) + (SELECT count(*) FROM alice_role) + (SELECT count(*) FROM alice_gate)}),
   '0', 'nothing written by the failing steps');
$node->safe_psql('postgres', q{
    SELECT eventlog.drop_processor('alice_peek'), eventlog.drop_processor('alice_role'),
           eventlog.drop_processor('alice_gate')},
    extra_params => [ '-U', 'alice' ]);

# eventlog.processors_enabled off stops the worker; on brings it back.
$node->append_conf('postgresql.conf', "eventlog.processors_enabled = off\n");
$node->reload;
ok($node->poll_query_until('postgres', qq{SELECT ($worker_in) = ''}),
   'eventlog.processors_enabled = off stops the worker');
produce(22616, 22620);
$node->append_conf('postgresql.conf', "eventlog.processors_enabled = on\n");
$node->reload;
ok($node->poll_query_until('postgres', $copy_ok), 'on again, it catches up');

# No processor left: the worker leaves.
$node->safe_psql('postgres', q{
    SELECT eventlog.drop_processor(name) FROM eventlog.processors WHERE owner = 'alice'::regrole;
});
$node->safe_psql('postgres', q{SELECT eventlog.drop_processor(name) FROM eventlog.processors});
ok($node->poll_query_until('postgres', qq{SELECT ($worker_in) = ''}),
   'dropping the last processor stops the worker');

# DROP EXTENSION with the worker running: it leaves, and a DROP DATABASE
# that waits for a client right after is not blocked by it.
for my $db ('ext_dropped', 'db_dropped')
{
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    $node->safe_psql($db, q{
        CREATE EXTENSION pg_eventlog;
        SELECT eventlog.create_topic('t', 1);
        CREATE TABLE rows (k text);
        SELECT eventlog.create_processor('p', 't', sink_table => 'rows', select_list => 'key');
        SELECT count(*) FROM eventlog.produce('t', 'a', '{}');
    });
    ok($node->poll_query_until($db, q{SELECT count(*) = 1 FROM rows}), "the worker runs in $db");
}
$node->safe_psql('ext_dropped', 'DROP EXTENSION pg_eventlog');
my $stay = IPC::Run::start(
    [ 'psql', '-XAtq', '-d', $node->connstr('ext_dropped'), '-c', 'SELECT pg_sleep(3)' ],
    '>', \my $stay_out, '2>', \my $stay_err);
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity WHERE datname = 'ext_dropped' AND query LIKE '%pg_sleep(3)%'}),
   'a client waits in the database whose extension was dropped');
$node->safe_psql('postgres', 'DROP DATABASE ext_dropped');
$stay->finish;
pass('DROP DATABASE after DROP EXTENSION is not blocked by the processor worker');
# DROP DATABASE with the worker running stops it.
$node->safe_psql('postgres', 'DROP DATABASE db_dropped');
pass('DROP DATABASE with the processor worker running');
ok($node->poll_query_until('postgres', qq{SELECT ($worker_in) = ''}), 'no processor worker is left');

$node->stop;
done_testing();
