# The upgrade path: a database created at every released version and updated
# with ALTER EXTENSION ... UPDATE has exactly the objects of a fresh install
# (functions with their bodies, settings and privileges; tables, columns,
# constraints, indexes, views, types, comments, extension membership), and
# its topics, records and group positions survive the update.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;

my $current = $node->safe_psql('postgres',
    q{SELECT default_version FROM pg_available_extensions WHERE name = 'pg_eventlog'});
# Every released version an update path starts from (sql/pg_eventlog--X.sql).
my @released = grep { $_ ne $current } split /\n/, $node->safe_psql('postgres', q{
    SELECT version FROM pg_available_extension_versions
     WHERE name = 'pg_eventlog' ORDER BY string_to_array(version, '.')::int[]});
ok(scalar(@released) >= 1, "released versions to update from: @released");

# One row per object of the extension, with everything that defines it.
my $fingerprint = q{
    WITH members AS (
        SELECT d.classid, d.objid, d.objsubid
          FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
         WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
           AND e.extname = 'pg_eventlog')
    SELECT line FROM (
        SELECT 'member ' || pg_describe_object(classid, objid, objsubid) AS line FROM members
        UNION ALL
        SELECT format('function %s returns %s %s %s secdef=%s strict=%s config=%s acl=%s body=%s',
                      p.oid::regprocedure, pg_get_function_result(p.oid),
                      p.provolatile, p.proparallel, p.prosecdef, p.proisstrict,
                      p.proconfig, p.proacl, md5(p.prosrc || coalesce(p.probin, '')))
          FROM pg_proc p WHERE p.pronamespace = 'eventlog'::regnamespace
        UNION ALL
        SELECT format('function args %s: %s', p.oid::regprocedure, pg_get_function_arguments(p.oid))
          FROM pg_proc p WHERE p.pronamespace = 'eventlog'::regnamespace
        UNION ALL
        SELECT format('relation %s kind %s acl=%s', c.oid::regclass, c.relkind, c.relacl)
          FROM pg_class c WHERE c.relnamespace = 'eventlog'::regnamespace
           AND c.relname !~ '^seg_'
        UNION ALL
        SELECT format('column %s.%s %s notnull=%s default=%s', c.oid::regclass, a.attname,
                      format_type(a.atttypid, a.atttypmod), a.attnotnull,
                      pg_get_expr(ad.adbin, ad.adrelid))
          FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
          LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
         WHERE c.relnamespace = 'eventlog'::regnamespace AND c.relname !~ '^seg_'
           AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL
        SELECT format('constraint %s on %s: %s', conname, conrelid::regclass, pg_get_constraintdef(oid))
          FROM pg_constraint WHERE connamespace = 'eventlog'::regnamespace
           AND conrelid::regclass::text !~ '^eventlog.seg_'
        UNION ALL
        SELECT format('index %s', pg_get_indexdef(i.indexrelid))
          FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
         WHERE c.relnamespace = 'eventlog'::regnamespace AND c.relname !~ '^seg_'
        UNION ALL
        SELECT format('view %s: %s', c.oid::regclass, md5(pg_get_viewdef(c.oid)))
          FROM pg_class c WHERE c.relnamespace = 'eventlog'::regnamespace AND c.relkind = 'v'
        UNION ALL
        SELECT format('trigger %s on %s: %s', t.tgname, t.tgrelid::regclass, pg_get_triggerdef(t.oid))
          FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = 'eventlog'::regnamespace AND c.relname !~ '^seg_'
           AND NOT t.tgisinternal
        UNION ALL
        SELECT format('schema %s acl=%s', n.nspname, n.nspacl)
          FROM pg_namespace n WHERE n.nspname IN ('eventlog', 'eventlog_segments')
        UNION ALL
        SELECT format('type %s', t.oid::regtype)
          FROM pg_type t WHERE t.typnamespace = 'eventlog'::regnamespace
           AND t.typname !~ '^_?seg_'
        UNION ALL
        SELECT format('comment %s: %s', pg_describe_object(d.classoid, d.objoid, d.objsubid), d.description)
          FROM pg_description d JOIN members m
            ON m.classid = d.classoid AND m.objid = d.objoid
        UNION ALL
        SELECT format('config dump %s %s', c.oid::regclass, coalesce(e.extcondition[array_position(e.extconfig, c.oid)], ''))
          FROM pg_extension e, unnest(e.extconfig) AS x(oid) JOIN pg_class c ON c.oid = x.oid
         WHERE e.extname = 'pg_eventlog'
    ) s ORDER BY line};

# State that must survive: records, an aborted offset, group positions.
my $state = q{
    SELECT string_agg(format('%s/%s/%s', r.partition, r.offset_id, r.value), ',' ORDER BY r.partition, r.offset_id)
      FROM generate_series(0, 1) p, LATERAL eventlog.read('kept', p, 0) r
    UNION ALL
    SELECT string_agg(format('%s/%s/%s', group_name, partition, next_offset), ',' ORDER BY 1, 2)
      FROM eventlog.group_offsets};

$node->safe_psql('postgres', 'CREATE ROLE upg_producer; CREATE ROLE upg_consumer');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION pg_eventlog');
my $fresh = $node->safe_psql('fresh', $fingerprint);
ok(length($fresh) > 1000, 'fingerprint of a fresh install');

foreach my $from (@released)
{
    my $db = "from_" . ($from =~ s/\./_/gr);
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    $node->safe_psql($db, qq{
        CREATE EXTENSION pg_eventlog VERSION '$from';
        SELECT eventlog.create_topic('kept', 2);
        SELECT count(*) FROM eventlog.produce_batch('kept',
            (SELECT array_agg('k' || i) FROM generate_series(1, 20) i),
            (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, 20) i));
        BEGIN;
        SELECT eventlog.produce('kept', NULL, '"aborted"', partition => 1);
        ROLLBACK;
        SELECT eventlog.create_group('kept', 'readers');
        SELECT count(*) FROM eventlog.poll('kept', 'readers', 7, partitions => 2);
    });
    if ($from eq '0.1.0')
    {
        # 0.1.0 governed access by privileges on the segment tables.  This
        # library keeps that rule for a database not updated yet, and the
        # update turns those grants into topic privileges.
        $node->safe_psql($db, q{
            SELECT format('GRANT INSERT ON eventlog.%I TO upg_producer', table_name)
              FROM eventlog.segment_catalog \gexec
            SELECT format('GRANT SELECT ON eventlog.%I TO upg_consumer', table_name)
              FROM eventlog.segment_catalog \gexec
        });
        is($node->psql($db, q{SET ROLE upg_producer; SELECT eventlog.produce('kept', 'p', '"legacy"', partition => 0)}),
           0, '0.1.0 catalog, this library: a role with INSERT on the segments produces');
        my ($rc, $out, $err) = $node->psql($db,
            q{SET ROLE upg_consumer; SELECT eventlog.produce('kept', 'p', '"no"', partition => 0)});
        like($err, qr/permission denied to produce/, '... one without it is refused');
        is($node->safe_psql($db, q{SET ROLE upg_consumer; SELECT count(*) > 0 FROM eventlog.read('kept', 0, 0)}),
           't', '... a role with SELECT on the segments reads');
    }
    # Who may create topics: create_topic gains a parameter in 0.3.0 (a new
    # signature), and the update gives its grants to the new function.
    $node->safe_psql($db, q{
        GRANT EXECUTE ON FUNCTION eventlog.create_topic(text, integer, interval, bigint, interval, bigint)
           TO upg_producer WITH GRANT OPTION});
    my $before = $node->safe_psql($db, $state);
    $node->safe_psql($db, 'ALTER EXTENSION pg_eventlog UPDATE');
    is($node->safe_psql($db, q{
        SELECT string_agg(format('%s %s %s', a.grantee::regrole, a.privilege_type, a.is_grantable), ', ')
          FROM pg_proc p, aclexplode(p.proacl) a
         WHERE p.oid = 'eventlog.create_topic'::regproc AND a.grantee <> p.proowner}),
       'upg_producer EXECUTE t', "$from: create_topic's grants survive its new signature");
    # ... and stay the user's: pg_dump writes grants that differ from the
    # initial privileges the extension's scripts recorded, so the update
    # must not record the re-granted ones as initial.
    my ($dump_out, $dump_err);
    IPC::Run::run([ 'pg_dump', '--schema-only', '-d', $node->connstr($db) ],
                  '>', \$dump_out, '2>', \$dump_err);
    like($dump_out,
         qr/GRANT ALL ON FUNCTION eventlog\.create_topic\([^)]*\) TO upg_producer WITH GRANT OPTION/,
         "$from: pg_dump of the updated database keeps create_topic's grant");
    $node->safe_psql($db, q{
        REVOKE EXECUTE ON FUNCTION eventlog.create_topic FROM upg_producer CASCADE});
    if ($from eq '0.1.0')
    {
        is($node->safe_psql($db, q{
            SELECT string_agg(format('%s %s', grantee, privilege), ', ' ORDER BY privilege, grantee::text)
              FROM eventlog.topic_privileges WHERE topic = 'kept'}),
           'upg_consumer consume, postgres owner, upg_producer produce',
           '0.1.0: segment grants become topic privileges, the segments\' owner the topic\'s');
    }
    is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'pg_eventlog'}),
       $current, "$from updates to $current");
    my $updated = $node->safe_psql($db, $fingerprint);
    if ($updated eq $fresh)
    {
        pass("$from updated equals a fresh $current install");
    }
    else
    {
        my %f = map { $_ => 1 } split /\n/, $fresh;
        my %u = map { $_ => 1 } split /\n/, $updated;
        diag("only in fresh:   $_") foreach grep { !$u{$_} } sort keys %f;
        diag("only in updated: $_") foreach grep { !$f{$_} } sort keys %u;
        fail("$from updated equals a fresh $current install");
    }
    is($node->safe_psql($db, $state), $before, "$from: records and positions survive the update");
    is($node->safe_psql($db, q{
        SELECT count(*) > 0 AND bool_and(c.relnamespace = 'eventlog_segments'::regnamespace)
          FROM eventlog.segment_catalog s JOIN pg_class c ON c.relname = s.table_name AND c.relkind = 'r'}),
       't', "$from: the update moves every segment to eventlog_segments");
    if ($from eq '0.1.0')
    {
        is($node->psql($db, q{SET ROLE upg_producer; SELECT eventlog.produce('kept', 'p', '"updated"', partition => 0)}),
           0, '0.1.0: the producer still produces after the update');
        is($node->safe_psql($db, q{
            SELECT count(*) FILTER (WHERE c.relowner <> e.extowner) || ' ' ||
                   count(*) FILTER (WHERE EXISTS (SELECT FROM aclexplode(c.relacl) a WHERE a.grantee <> c.relowner))
              FROM eventlog.segment_catalog s
              JOIN pg_class c ON c.relname = s.table_name AND c.relnamespace = 'eventlog_segments'::regnamespace,
                   pg_extension e WHERE e.extname = 'pg_eventlog'}),
           '0 0', '0.1.0: the update leaves the segments to the extension owner, without grants');
        my ($rc, $out, $err) = $node->psql($db, q{SET ROLE upg_consumer; SELECT count(*) FROM eventlog_segments.seg_1_0_0});
        like($err, qr/permission denied for schema eventlog_segments/, '... so a former reader cannot read the segments directly');
    }
    my $next = $node->safe_psql($db, q{
        SELECT bool_and(n.offset_id > m.maxo)
          FROM generate_series(0, 1) p,
               LATERAL (SELECT max(offset_id) AS maxo FROM eventlog.read('kept', p, 0)) m,
               LATERAL eventlog.produce('kept', NULL, '"after"', partition => p) n});
    is($next, 't', "$from: producing continues above the old offsets after the update");
    is($node->safe_psql($db, q{SELECT string_agg(topic || ' ' || format, ',') FROM eventlog.topics}),
       'kept json', "$from: the topics of the old version are JSON topics");
    $node->safe_psql($db, q{SELECT eventlog.create_topic('bin', 2, format => 'binary')});
    $node->safe_psql($db, q{SELECT eventlog.produce_binary('bin', '\x00', '\xff',
                                                            ARRAY[ROW('h', NULL)]::eventlog.header[], 1)});
    is($node->safe_psql($db, q{SELECT format('%s %s %s %s', offset_id, key, value, headers)
                                 FROM eventlog.read_binary('bin', 1, 0)}),
       '0 \x00 \xff {"(h,)"}', "$from: a binary topic works after the update");
}

$node->stop;
done_testing();
