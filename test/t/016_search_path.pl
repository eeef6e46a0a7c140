# search_path hijacking (PostgreSQL's "Security Considerations for
# Extensions"): objects placed where pg_eventlog's SQL might resolve names
# are never called.
#  - CREATE EXTENSION refuses a pre-existing "eventlog" schema owned by
#    another role, or holding objects (they could run as the installer);
#  - a session whose search_path puts a hostile schema before pg_catalog,
#    with its own "=", format(), count() and more that log every call, uses
#    every part of the API (produce, read, poll, groups, members, seek,
#    capture, outbox, apply_changes, retention, notifications) and none of
#    them is called;
#  - the same with ALTER DATABASE ... SET search_path, which the background
#    workers (running as superuser) would obey: a database owner must not get
#    code run as superuser by the maintenance worker or the notifier.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('search_path');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'\neventlog.maintenance_interval = '1h'");
$node->start;

# 1. A pre-existing schema.
$node->safe_psql('postgres', q{
    CREATE ROLE mallory LOGIN;
    CREATE DATABASE pre;
});
$node->safe_psql('pre', q{CREATE SCHEMA eventlog AUTHORIZATION mallory});
my ($ret, $out, $err) = $node->psql('pre', 'CREATE EXTENSION pg_eventlog');
like($err, qr/schema "eventlog" already exists with objects in it, or with another owner/,
     'CREATE EXTENSION refuses an "eventlog" schema another role owns');
$node->safe_psql('pre', q{
    DROP SCHEMA eventlog;
    CREATE SCHEMA eventlog;
    CREATE FUNCTION eventlog.format(text, integer) RETURNS text LANGUAGE sql AS $$ SELECT 'hijacked' $$;
});
($ret, $out, $err) = $node->psql('pre', 'CREATE EXTENSION pg_eventlog');
like($err, qr/already exists with objects in it/, 'and one that holds objects');
$node->safe_psql('pre', q{DROP SCHEMA eventlog CASCADE; CREATE SCHEMA eventlog; CREATE EXTENSION pg_eventlog});
pass('an empty schema of the installing role is fine');

# 2. Hostile objects before pg_catalog in a session's search_path.
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    CREATE SCHEMA evil;
    CREATE TABLE evil.calls (what text, backend_type text, at timestamptz DEFAULT clock_timestamp());
    GRANT ALL ON SCHEMA evil TO PUBLIC;
    GRANT ALL ON evil.calls TO PUBLIC;
    -- Each call is logged with the kind of process that made it.
    CREATE FUNCTION evil.log(w text) RETURNS void LANGUAGE sql
        SET search_path = pg_catalog AS $$
        INSERT INTO evil.calls (what, backend_type)
        SELECT w, a.backend_type FROM pg_catalog.pg_stat_activity a
         WHERE a.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid() $$;
    CREATE FUNCTION evil.int4eq(a integer, b integer) RETURNS boolean LANGUAGE sql
        SET search_path = pg_catalog AS $$ SELECT evil.log('int4 ='); SELECT a OPERATOR(pg_catalog.=) b $$;
    CREATE OPERATOR evil.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = evil.int4eq);
    CREATE FUNCTION evil.int8eq(a bigint, b bigint) RETURNS boolean LANGUAGE sql
        SET search_path = pg_catalog AS $$ SELECT evil.log('int8 ='); SELECT a OPERATOR(pg_catalog.=) b $$;
    CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8eq);
    CREATE FUNCTION evil.texteq(a text, b text) RETURNS boolean LANGUAGE sql
        SET search_path = pg_catalog AS $$ SELECT evil.log('text ='); SELECT a OPERATOR(pg_catalog.=) b $$;
    CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.texteq);
    CREATE FUNCTION evil.format(text, integer) RETURNS text LANGUAGE sql
        AS $$ SELECT evil.log('format'); SELECT $1 $$;
    CREATE FUNCTION evil.format(text, text) RETURNS text LANGUAGE sql
        AS $$ SELECT evil.log('format'); SELECT $1 $$;
    CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql
        AS $$ SELECT evil.log('now'); SELECT pg_catalog.clock_timestamp() $$;
    CREATE FUNCTION evil.quote_ident(text) RETURNS text LANGUAGE sql
        AS $$ SELECT evil.log('quote_ident'); SELECT $1 $$;
    CREATE FUNCTION evil.lower(text) RETURNS text LANGUAGE sql
        AS $$ SELECT evil.log('lower'); SELECT $1 $$;
    CREATE FUNCTION evil.length(text) RETURNS integer LANGUAGE sql
        AS $$ SELECT evil.log('length'); SELECT 1 $$;
    CREATE FUNCTION evil.random() RETURNS double precision LANGUAGE sql
        AS $$ SELECT evil.log('random'); SELECT 0.5::double precision $$;
    CREATE FUNCTION evil.cardinality(anyarray) RETURNS integer LANGUAGE sql
        AS $$ SELECT evil.log('cardinality'); SELECT 1 $$;
    CREATE FUNCTION evil.count_sfunc(bigint) RETURNS bigint LANGUAGE sql
        AS $$ SELECT evil.log('count'); SELECT $1 + 1 $$;
    CREATE AGGREGATE evil.count(*) (SFUNC = evil.count_sfunc, STYPE = bigint, INITCOND = '0');
    CREATE FUNCTION evil.max_sfunc(bigint, bigint) RETURNS bigint LANGUAGE sql
        AS $$ SELECT evil.log('max'); SELECT GREATEST($1, $2) $$;
    CREATE AGGREGATE evil.max(bigint) (SFUNC = evil.max_sfunc, STYPE = bigint);
    CREATE TABLE shop (id integer PRIMARY KEY, name text);
    CREATE TABLE shop_mirror (id integer PRIMARY KEY, name text);
    CREATE TABLE outbox (id bigint GENERATED ALWAYS AS IDENTITY, aggregatetype text, aggregateid text,
                         type text, payload jsonb);
});
my $workload = q{
    SET search_path = evil, pg_catalog, public;
    SELECT eventlog.create_topic('t', 2, segment_interval => '1 millisecond', retention => '1 millisecond');
    SELECT eventlog.create_topic('order', 1);
    SELECT eventlog.produce('t', 'k', '{"a": 1}');
    SELECT eventlog.produce_batch('t', ARRAY['a', 'b'], ARRAY['1', '2']::jsonb[]);
    SELECT pg_catalog.count(*) FROM eventlog.read('t', 0, 0);
    SELECT eventlog.offset_for_time('t', 0, pg_catalog.clock_timestamp());
    SELECT eventlog.last_stable_offset('t', 0), eventlog.high_watermark('t', 1), eventlog.log_start_offset('t', 0);
    SELECT eventlog.partition_for_key('k', 2), eventlog.channel('t');
    SELECT eventlog.create_group('t', 'g');
    SELECT pg_catalog.count(*) FROM eventlog.poll('t', 'g', 10, partitions => 2);
    SELECT pg_catalog.count(*) FROM eventlog.poll('t', 'g', 10, partitions => 2, wait => '10 ms');
    SELECT pg_catalog.count(*) FROM eventlog.poll('t', 'm', 10, member => 'a');
    SELECT pg_catalog.count(*) FROM eventlog.commit('t', 'm', 'a');
    SELECT pg_catalog.count(*) FROM eventlog.poll('t', 'm', 10, member => 'a', wait => '10 ms');
    SELECT eventlog.leave('t', 'm', 'a');
    SELECT pg_catalog.count(*) FROM eventlog.seek('t', 'g', 'earliest');
    SELECT pg_catalog.count(*) FROM eventlog.topics;
    SELECT pg_catalog.count(*) FROM eventlog.partitions;
    SELECT pg_catalog.count(*) FROM eventlog.consumer_groups;
    SELECT pg_catalog.count(*) FROM eventlog.maintenance;
    SELECT eventlog.capture('public.shop', 'shop.changes', snapshot => true);
    INSERT INTO public.shop VALUES (1, 'a'), (2, 'b');
    UPDATE public.shop SET name = 'c' WHERE id OPERATOR(pg_catalog.=) 1;
    UPDATE public.shop SET id = 3 WHERE id OPERATOR(pg_catalog.=) 2;
    DELETE FROM public.shop WHERE id OPERATOR(pg_catalog.=) 1;
    SELECT eventlog.apply_changes('shop.changes', 'mirror', 'public.shop_mirror');
    SELECT eventlog.route_outbox('public.outbox');
    INSERT INTO public.outbox (aggregatetype, aggregateid, type, payload) VALUES ('order', 'o1', 'Created', '{}');
    SELECT pg_catalog.count(*) FROM eventlog.captures;
    SELECT pg_catalog.count(*) FROM eventlog.outboxes;
    SELECT pg_catalog.pg_sleep(0.01);
    SELECT pg_catalog.count(*) FROM eventlog.enforce_retention('t');
    SELECT eventlog.alter_topic('t', partitions => 3);
    SELECT eventlog.uncapture('public.shop');
    SELECT eventlog.unroute_outbox('public.outbox');
    SELECT eventlog.delete_group('t', 'g');
    SELECT eventlog.drop_topic('order');
};
$node->safe_psql('postgres', $workload);
is($node->safe_psql('postgres', q{SELECT count(*) FROM shop_mirror}), '1', 'the workload ran (the mirror has its row)');
is($node->safe_psql('postgres', q{SELECT coalesce(string_agg(DISTINCT what, ', '), 'none') FROM evil.calls}),
   'none', 'no hostile object was called with a hostile session search_path');
# Show that the hostile objects do work when used unqualified: the test
# would see a call.
$node->safe_psql('postgres', q{SET search_path = evil, pg_catalog; SELECT 1 = 1});
is($node->safe_psql('postgres', q{SELECT count(*) > 0 FROM evil.calls WHERE what = 'int4 ='}), 't',
   '(the hostile "=" is called by unqualified SQL in that search_path)');
$node->safe_psql('postgres', q{TRUNCATE evil.calls});

# 3. A database-wide hostile search_path, which the background workers load.
# (The test's own queries below run in it too; only calls made by the
# workers count.)
$node->safe_psql('postgres', q{ALTER DATABASE postgres SET search_path = evil, pg_catalog, public});
$node->safe_psql('postgres', q{
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
     WHERE backend_type IN ('pg_eventlog maintenance', 'pg_eventlog notifier') AND datname = 'postgres'});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 2 FROM pg_stat_activity
     WHERE backend_type IN ('pg_eventlog maintenance', 'pg_eventlog notifier') AND datname = 'postgres'}),
   'the workers restart under the hostile database search_path');
my $rounds = $node->safe_psql('postgres', q{SELECT rounds FROM eventlog.maintenance WHERE database = 'postgres'});
$node->safe_psql('postgres', q{SELECT pg_reload_conf()});
ok($node->poll_query_until('postgres', qq{
    SELECT rounds > $rounds FROM eventlog.maintenance WHERE database = 'postgres'}),
   'a maintenance round ran');
my $heard = 0;
for (my $i = 0; $i < 20 && !$heard; $i++)
{
    my ($r, $o, $e) = $node->psql('postgres', q{
        LISTEN "eventlog.t";
        SELECT eventlog.produce('t', 'x', '{}');
        SELECT pg_sleep(0.2);
        SELECT 1;});
    $heard = ($o =~ /Asynchronous notification "eventlog.t"/);
}
ok($heard, 'the notifier announced a commit');
is($node->safe_psql('postgres', q{
    SELECT coalesce(pg_catalog.string_agg(DISTINCT what || ' by ' || backend_type, ', '), 'none')
      FROM evil.calls WHERE backend_type OPERATOR(pg_catalog.~~) 'pg_eventlog%'}),
   'none', 'no hostile object was called by the maintenance worker or the notifier');
# The hostile objects were reachable: the test's own unqualified queries
# in that search_path called them.
is($node->safe_psql('postgres', q{SELECT pg_catalog.count(*) OPERATOR(pg_catalog.>) 0 FROM evil.calls}), 't',
   '(while the test\'s own unqualified queries did call them)');

$node->stop;
done_testing();
