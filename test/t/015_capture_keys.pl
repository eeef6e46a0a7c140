# Change capture keys that keep their value but change their bytes
# (issue 13, item 2): numeric 1 -> 1.00, citext 'key-1' -> 'KEY-1', float
# 0 -> -0, and floats written by a session with extra_float_digits = 0.
# Such an UPDATE must be one "u" under one key text (so one partition), and
# a mirror fed by apply_changes must equal the source afterwards.  Before
# the fix each such UPDATE became a "d" and a "c" under two key texts in two
# partitions; apply_changes applied them in either order and lost rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('capture_keys');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;
my $have_citext = $node->safe_psql('postgres',
    q{SELECT count(*) FROM pg_available_extensions WHERE name = 'citext'});
$node->safe_psql('postgres', 'CREATE EXTENSION pg_eventlog');
$node->safe_psql('postgres', 'CREATE EXTENSION citext') if $have_citext;

my @tables = (
    # table, key type, the 40 keys, the UPDATEs that keep each key equal
    [ 'num', 'numeric', 'g::numeric',
      [ 'UPDATE num SET id = round(id, 2)', 'UPDATE num SET v = v + 1',
        'UPDATE num SET id = round(id, 4) WHERE id % 3 = 0', 'UPDATE num SET id = trim_scale(id) WHERE id % 2 = 0',
        'DELETE FROM num WHERE v % 5 = 0' ] ],
    [ 'flt', 'double precision', q{CASE WHEN g = 40 THEN 0 ELSE g + 0.1::float8 + 0.2::float8 END},
      [ q{UPDATE flt SET id = '-0' WHERE id = 0}, 'UPDATE flt SET v = v + 1',
        # A session that prints floats rounded must still capture them exactly.
        q{SET extra_float_digits = 0; UPDATE flt SET v = v + 1; UPDATE flt SET id = 0 WHERE id = 0},
        'DELETE FROM flt WHERE v % 5 = 0' ] ],
);
push @tables,
    [ 'cit', 'citext', q{'key-' || g},
      [ 'UPDATE cit SET id = upper(id)', 'UPDATE cit SET v = v + 1',
        q{UPDATE cit SET id = initcap(id) WHERE v % 2 = 0},
        # Deleted by keys written in lower case ("key-5" for 'KEY-5').
        'DELETE FROM cit WHERE v % 5 = 0' ] ]
  if $have_citext;

foreach my $t (@tables)
{
    my ($name, $type, $keys, $updates) = @$t;
    $node->safe_psql('postgres', qq{
        CREATE TABLE $name (id $type PRIMARY KEY, v integer NOT NULL);
        SELECT eventlog.capture('$name', '$name.changes', partitions => 8);
        INSERT INTO $name SELECT $keys, g FROM generate_series(1, 40) g;
        CREATE TABLE ${name}_mirror (LIKE $name);
        ALTER TABLE ${name}_mirror ADD PRIMARY KEY (id);
    });
    $node->safe_psql('postgres', $_) foreach @$updates;
    my $n;
    do
    {
        $n = $node->safe_psql('postgres',
            qq{SELECT eventlog.apply_changes('$name.changes', 'mirror', '${name}_mirror')});
    } while ($n > 0);

    is($node->safe_psql('postgres', qq{
        SELECT string_agg(DISTINCT r.value ->> 'op', ',' ORDER BY r.value ->> 'op')
          FROM generate_series(0, 7) p, LATERAL eventlog.read('$name.changes', p, 0, 100000) r}),
       'c,d,u', "$type: updates that keep the key equal are u, never d and c");
    is($node->safe_psql('postgres', qq{
        SELECT count(*) FROM generate_series(0, 7) p, LATERAL eventlog.read('$name.changes', p, 0, 100000) r
         WHERE r.value ->> 'op' = 'd'}),
       '8', "$type: a d for each deleted row only");
    is($node->safe_psql('postgres', qq{
        SELECT count(*) FROM (SELECT r.key FROM generate_series(0, 7) p,
                                   LATERAL eventlog.read('$name.changes', p, 0, 100000) r
                               GROUP BY r.key HAVING count(DISTINCT r.partition) > 1) k}),
       '0', "$type: each key text stays in one partition");
    is($node->safe_psql('postgres', qq{
        SELECT count(DISTINCT r.key) FROM generate_series(0, 7) p,
               LATERAL eventlog.read('$name.changes', p, 0, 100000) r}),
       '40', "$type: 40 rows, 40 key texts");
    # Compared with the type's own equality (EXCEPT), and row for row.
    is($node->safe_psql('postgres', qq{SELECT count(*) FROM ${name}_mirror}), '32',
       "$type: the mirror has the 32 rows the source has");
    is($node->safe_psql('postgres', qq{
        SELECT count(*) FROM ((SELECT * FROM $name EXCEPT ALL SELECT * FROM ${name}_mirror)
                              UNION ALL (SELECT * FROM ${name}_mirror EXCEPT ALL SELECT * FROM $name)) d}),
       '0', "$type: the mirror equals the source");
    # And it even has the source's exact images (1.00, KEY-1, -0).
    is($node->safe_psql('postgres', qq{
        SELECT count(*) FROM $name s JOIN ${name}_mirror m USING (id)
         WHERE s.id::text IS DISTINCT FROM m.id::text OR s.v <> m.v}),
       '0', "$type: with the same text in every key and value");
}

$node->stop;
done_testing();
