# Nothing a role without privileges does may stall retention.  Segment
# tables live in eventlog_segments, a schema no other role may use: a role
# without any grant cannot create a view over a segment, LOCK it or read
# it.  What such a role can still do is make an object depend on a segment
# by OID (a view holding a regclass constant) and hold a lock on that
# object; and the extension owner may make views over segments.  DROP ...
# CASCADE must lock those objects: retention waits for them only briefly,
# reports the segment "skipped (busy)" and goes on with the next topic,
# the maintenance worker too; readers never wait.  Once the locks are
# gone, the segments are removed with their dependents.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('segdep');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '3600s'
});
$node->start;

# Each topic gets a sealed segment 0 (offsets 0-2) that retention by size
# may remove; segment 1 is active.
sub sealed_topic
{
    my ($topic) = @_;
    $node->safe_psql('postgres', qq{
        SELECT eventlog.create_topic('$topic', 1, retention => NULL, retention_bytes => 1,
                                     segment_interval => '1 millisecond');
        SELECT eventlog.produce_batch('$topic', NULL, ARRAY['0', '1', '2']::jsonb[]);
        SELECT pg_sleep(0.01);
    });
    $node->safe_psql('postgres', qq{SELECT count(*) FROM eventlog.enforce_retention('$topic')});
    $node->safe_psql('postgres', qq{SELECT eventlog.alter_topic('$topic', segment_interval => '1 hour')});
}

# The OID of a topic's segment 0, and its name as regclass prints it.
sub segment0
{
    my ($topic) = @_;
    my $row = $node->safe_psql('postgres', qq{
        SELECT c.oid || '|' || c.oid::regclass
          FROM eventlog.segment_catalog s
          JOIN eventlog.topic_catalog t USING (topic_id)
          JOIN pg_class c ON c.relname = s.table_name
         WHERE t.name = '$topic' AND s.segment_no = 0});
    return split /\|/, $row;
}

# A session that runs $setup, then $sql in a transaction it holds open.
sub holder
{
    my ($user, $setup, $sql) = @_;
    my ($out, $err) = ('', '');
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-U', $user, '-d',
          $node->connstr('postgres'), '-c', $setup, '-c', "BEGIN; $sql; SELECT pg_sleep(3600)" ],
        '>', \$out, '2>', \$err);
    return ($h, \$err);
}

$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    CREATE ROLE nobody LOGIN;
});
sealed_topic($_) for qw(dep_a dep_b dep_c);
my ($oid_a, $seg_a) = segment0('dep_a');
my ($oid_b, $seg_b) = segment0('dep_b');
like($seg_a, qr/^eventlog_segments\.seg_\d+_0_0$/, 'segments live in eventlog_segments');

# 1. A role without grants cannot name a segment at all.
for my $sql ("CREATE TEMP VIEW v AS SELECT * FROM $seg_a",
             "CREATE TEMP VIEW v AS SELECT '$seg_a'::regclass",
             "CREATE TEMP TABLE t (r $seg_a)",
             "BEGIN; LOCK TABLE $seg_a IN ACCESS SHARE MODE",
             "SELECT count(*) FROM $seg_a")
{
    my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', 'nobody' ]);
    like($err, qr/permission denied for schema eventlog_segments/,
         "a role without grants is refused: $sql");
}

# 2. Nor can it make an object depend on a segment without naming it: by
# OID (numeric regclass/regtype input looks no name up), on the segment,
# its row type, its primary key index or its TOAST table, in a view, a
# column default, a check constraint, a function body, a domain, a rule,
# an index or a policy.  Each such object would have to be dropped (and so
# locked) with the segment, and a lock on it held open would keep
# retention from the segment for as long as the role liked.
my ($type_a, $pkey_a, $toast_a, $array_a, $toastidx_a) = split /\|/, $node->safe_psql('postgres', qq{
    SELECT c.reltype || '|' || i.indexrelid || '|' || c.reltoastrelid || '|' || t.typarray
           || '|' || (SELECT ti.indexrelid FROM pg_index ti WHERE ti.indrelid = c.reltoastrelid)
      FROM pg_class c JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
      JOIN pg_type t ON t.oid = c.reltype
     WHERE c.oid = $oid_a});
$node->safe_psql('postgres', q{
    CREATE SCHEMA nob AUTHORIZATION nobody;
    CREATE TABLE nob.own (x int);
    ALTER TABLE nob.own OWNER TO nobody;
    CREATE VIEW nob.harmless AS SELECT 1 AS r;
    ALTER VIEW nob.harmless OWNER TO nobody;
});
for my $sql ("CREATE TEMP VIEW by_oid AS SELECT '${oid_a}'::regclass AS seg",
             "CREATE TEMP VIEW by_type AS SELECT '${type_a}'::regtype AS t",
             "CREATE TEMP VIEW by_pkey AS SELECT '${pkey_a}'::regclass AS i",
             "CREATE TEMP VIEW by_toast AS SELECT '${toast_a}'::regclass AS t",
             "CREATE TEMP VIEW by_array AS SELECT '${array_a}'::regtype AS t",
             "CREATE TEMP VIEW by_toast_index AS SELECT '${toastidx_a}'::regclass AS t",
             "CREATE TEMP TABLE dflt (r regclass DEFAULT '${oid_a}'::regclass)",
             "CREATE TEMP TABLE chk (r regclass CHECK (r <> '${oid_a}'::regclass))",
             "ALTER TABLE nob.own ADD COLUMN r regclass DEFAULT '${oid_a}'",
             "ALTER TABLE nob.own ADD CONSTRAINT c CHECK (x::oid <> '${oid_a}'::regclass)",
             "CREATE INDEX ON nob.own ((x::oid = '${oid_a}'::regclass))",
             "CREATE POLICY p ON nob.own USING (x::oid <> '${oid_a}'::regclass)",
             "CREATE RULE r AS ON UPDATE TO nob.own DO ALSO SELECT '${oid_a}'::regclass",
             "CREATE OR REPLACE VIEW nob.harmless AS SELECT 1 AS r, '${oid_a}'::regclass AS s",
             "CREATE FUNCTION pg_temp.f() RETURNS regclass LANGUAGE sql BEGIN ATOMIC SELECT '${oid_a}'::regclass; END",
             "CREATE FUNCTION pg_temp.g(r regclass DEFAULT '${oid_a}') RETURNS int LANGUAGE sql AS 'SELECT 1'",
             "CREATE DOMAIN nob.d AS regclass CHECK (VALUE <> '${oid_a}'::regclass)",
             "CREATE DOMAIN nob.e AS regclass DEFAULT '${oid_a}'",
             "DO \$\$BEGIN EXECUTE \$q\$CREATE TEMP VIEW in_do AS SELECT '${oid_a}'::regclass\$q\$; END\$\$",
             "BEGIN; CREATE TEMP VIEW sp AS SELECT 0::oid AS x; SAVEPOINT s; CREATE OR REPLACE TEMP VIEW sp AS SELECT '${oid_a}'::regclass::oid AS x; RELEASE s; COMMIT")
{
    my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', 'nobody' ]);
    like($err, qr/ERROR:  cannot make .* depend on event log segment/,
         "a role without grants cannot depend on a segment by OID: $sql");
}
# ALTER POLICY and ALTER DOMAIN change an existing object's dependencies.
$node->psql('postgres', q{CREATE POLICY q ON nob.own USING (true); CREATE DOMAIN nob.f AS regclass;},
            extra_params => [ '-U', 'nobody' ]);
for my $sql ("ALTER POLICY q ON nob.own USING (x::oid <> '${oid_a}'::regclass)",
             "ALTER DOMAIN nob.f SET DEFAULT '${oid_a}'")
{
    my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', 'nobody' ]);
    like($err, qr/ERROR:  cannot make .* depend on event log segment/,
         "a role without grants cannot depend on a segment by OID: $sql");
}
is($node->safe_psql('postgres', qq{
    SELECT count(*) FROM pg_depend
     WHERE refobjid IN ($oid_a, $type_a, $pkey_a, $toast_a, $array_a, $toastidx_a) AND deptype = 'n'}),
   '0', 'the refused statements leave no dependent of the segment behind');

# What remains: the extension owner may make objects over segments (it
# owns them and could lock them anyway) and let others use them.
$node->safe_psql('postgres', qq{
    CREATE VIEW owner_oid_view AS SELECT '${oid_a}'::regclass AS seg;
    GRANT SELECT ON owner_oid_view TO nobody;
});
my ($hold_a, $err_a) = holder('nobody', 'SELECT 1', 'SELECT * FROM owner_oid_view');
# The extension owner's own view over a segment, held by another session.
$node->safe_psql('postgres', "CREATE VIEW owner_view AS SELECT offset_id FROM $seg_b");
my ($hold_b, $err_b) = holder($node->safe_psql('postgres', 'SELECT current_user'),
    'SELECT 1', "COMMENT ON VIEW owner_view IS 'held'");
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 2 FROM pg_stat_activity
     WHERE query LIKE 'BEGIN;%pg_sleep(3600)' AND state = 'active' AND wait_event = 'PgSleep'}),
   'both holders hold their locks')
  or diag("holders: ${$err_a} ${$err_b}");
is($node->safe_psql('postgres', qq{
    SELECT count(*) FROM pg_depend
     WHERE refclassid = 'pg_class'::regclass AND refobjid IN ($oid_a, $oid_b) AND deptype = 'n'}),
   '2', 'a view depends on each held segment');

is($node->safe_psql('postgres', qq{
    SELECT count(*) FROM pg_locks
     WHERE locktype = 'relation' AND relation IN ($oid_a, $oid_b) AND pid <> pg_backend_pid()}),
   '0', 'neither holder locks a segment itself (only the views)');
# 3. A round skips both (after a brief wait) and goes on with the next
# topic; the statement_timeout makes a hanging round fail, not hang.
is($node->safe_psql('postgres', q{
    SET statement_timeout = '60s';
    SELECT string_agg(topic || ':' || action, ',' ORDER BY topic)
      FROM eventlog.enforce_retention()}),
   'dep_a:skipped (busy),dep_b:skipped (busy),dep_c:removed',
   'retention skips segments whose dependents are held and goes on');
is($node->safe_psql('postgres', q{
    SET statement_timeout = '60s';
    SELECT count(*) FROM eventlog.read('dep_a', 0, 0)}),
   '3', 'read of the held partition does not wait');
is($node->safe_psql('postgres', 'SHOW lock_timeout'), '0',
   'the round leaves lock_timeout as it was');

# 4. The maintenance worker too: it goes on to a later topic.
sealed_topic('dep_d');
$node->safe_psql('postgres', q{
    ALTER SYSTEM SET eventlog.maintenance_interval = '200ms';
    SELECT pg_reload_conf();
});
ok($node->poll_query_until('postgres',
    q{SELECT eventlog.log_start_offset('dep_d', 0) = 3}),
   'the worker removes a later topic\'s segment while the dependents are held');
is($node->safe_psql('postgres', q{
    SELECT eventlog.log_start_offset('dep_a', 0) || ',' || eventlog.log_start_offset('dep_b', 0)}),
   '0,0', 'and keeps the held segments');

# 5. Once the holders are gone, the segments go, with their dependents.
$node->safe_psql('postgres', q{
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
     WHERE query LIKE 'BEGIN;%pg_sleep(3600)' AND pid <> pg_backend_pid()});
$hold_a->finish;
$hold_b->finish;
ok($node->poll_query_until('postgres', q{
    SELECT eventlog.log_start_offset('dep_a', 0) = 3 AND eventlog.log_start_offset('dep_b', 0) = 3}),
   'the worker removes them once released');
is($node->safe_psql('postgres', q{SELECT to_regclass('owner_view') IS NULL}), 't',
   'the owner\'s view went with its segment');
is($node->safe_psql('postgres', q{SELECT to_regclass('owner_oid_view') IS NULL}), 't',
   'and so did the one by OID');

# drop_topic does not leave anything behind either.
$node->safe_psql('postgres', q{SELECT eventlog.drop_topic(t) FROM unnest('{dep_a,dep_b,dep_c,dep_d}'::text[]) t});
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM pg_class WHERE relnamespace = 'eventlog_segments'::regnamespace}),
   '0', 'drop_topic leaves no segment behind');

$node->stop;
done_testing();
