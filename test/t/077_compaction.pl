# Log compaction (issue 17) under a randomized workload.
#
# A producer writes random keys, updates and tombstones to a compacted
# topic of two partitions (some transactions rolled back), recording each
# committed record and its append time in a ledger.  Between bursts a
# maintenance round rolls the segments and a compaction round runs.  After
# every round a full read of each partition is compared with the model:
#  - below the partition's cleaned offset: the latest ledger record of each
#    key there, unless it is a tombstone older than the round's
#    delete_retention horizon;
#  - from the cleaned offset on: every ledger record, untouched;
#  - offsets, keys and values exactly as produced, in strictly increasing
#    offset order (a full read never sees a record twice).
# A consumer group polls throughout, also while rounds swap segments: its
# records are ledger records, in increasing offsets per partition, and at
# the end it has seen the latest record of every key that is not deleted.
# Then the worker compacts by itself, and kill -9 during a rewrite leaves
# either the old segment or the new one, never both or neither.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $rounds = $ENV{EL_TAP_LONG} ? 40 : 12;

my $node = PostgreSQL::Test::Cluster->new('compaction');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '3600s'
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('st', 2, cleanup_policy => 'compact',
                                 segment_interval => '1 microsecond');
    CREATE TABLE ledger (partition int, offset_id bigint, key text, value jsonb,
                         append_time timestamptz, PRIMARY KEY (partition, offset_id));
    CREATE TABLE seen (seq bigserial, partition int, offset_id bigint, key text, value jsonb);
    CREATE TABLE ctl (done boolean NOT NULL);
    -- Tombstones a round expired: gone for good, whatever later rounds'
    -- delete_retention.
    CREATE TABLE gone (partition int, offset_id bigint);
    INSERT INTO ctl VALUES (false);
    SELECT eventlog.create_group('st', 'follower');

    -- One burst of the producer: random keys of a small key space (so keys
    -- are updated often), about one tombstone in six, one transaction in
    -- eight rolled back.  A committed record's append time is read back at
    -- once: it is the latest of its key then, in the active segment, which
    -- compaction never touches.
    CREATE PROCEDURE burst(n int, keys int) LANGUAGE plpgsql AS $$
    DECLARE
        pos eventlog.position;
        k text;
        v jsonb;
        done_positions eventlog.position[];
        i int;
        j int;
    BEGIN
        FOR i IN 1 .. n LOOP
            done_positions := '{}';
            FOR j IN 1 .. 1 + (random() * 3)::int LOOP
                k := 'k' || (random() * keys)::int;
                v := CASE WHEN random() < 0.16 THEN NULL
                          ELSE jsonb_build_object('i', i, 'j', j, 'pad', repeat('v', (random() * 200)::int)) END;
                pos := eventlog.produce('st', k, v);
                INSERT INTO ledger VALUES (pos.partition, pos.offset_id, k, v, NULL);
                done_positions := done_positions || pos;
            END LOOP;
            IF random() < 0.125 THEN
                ROLLBACK;
            ELSE
                COMMIT;
                UPDATE ledger l SET append_time = r.append_time
                  FROM unnest(done_positions) d,
                       LATERAL eventlog.read('st', d.partition, d.offset_id, 1) r
                 WHERE l.partition = d.partition AND l.offset_id = d.offset_id
                   AND r.offset_id = d.offset_id;
                COMMIT;
            END IF;
        END LOOP;
    END
    $$;

    -- The consumer: polls the group until told to stop, then drains.
    CREATE PROCEDURE follow() LANGUAGE plpgsql AS $$
    DECLARE
        n int;
        stop boolean;
    BEGIN
        LOOP
            SELECT done INTO stop FROM ctl;
            INSERT INTO seen (partition, offset_id, key, value)
            SELECT r.partition, r.offset_id, r.key, r.value
              FROM eventlog.poll('st', 'follower', 37) r;
            GET DIAGNOSTICS n = ROW_COUNT;
            COMMIT;
            EXIT WHEN stop AND n = 0;
            IF n = 0 THEN
                PERFORM pg_sleep(0.01);
            END IF;
        END LOOP;
    END
    $$;

    -- What a full read must return after a round whose now() was t.
    CREATE FUNCTION expected(p int, cleaned bigint, t timestamptz, dr interval)
    RETURNS TABLE (offset_id bigint, key text, value jsonb) LANGUAGE sql AS $$
        SELECT l.offset_id, l.key, l.value FROM ledger l
         WHERE l.partition = p AND l.offset_id >= cleaned
        UNION ALL
        SELECT x.offset_id, x.key, x.value
          FROM (SELECT DISTINCT ON (l.key) l.* FROM ledger l
                 WHERE l.partition = p AND l.offset_id < cleaned
                 ORDER BY l.key, l.offset_id DESC) x
         WHERE NOT (x.value IS NULL AND x.append_time < t - dr)
           AND NOT EXISTS (SELECT FROM gone g WHERE g.partition = p AND g.offset_id = x.offset_id)
    $$;
});

my $consumer = IPC::Run::start(
    [ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
      '-c', 'CALL follow()' ],
    '>', \my $cout, '2>', \my $cerr);

my $mismatches = 0;
my $compacted = 0;
my $removed = 0;
for my $round (1 .. $rounds)
{
    $node->safe_psql('postgres', 'CALL burst(60, 40)');
    # Roll every partition (segment_interval is a microsecond), and record
    # the base of the segment the last round rolled to: the segments before
    # it become compactable.
    $node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.enforce_retention('st')});
    # delete_retention changes from round to round, so that some rounds
    # keep every tombstone, some drop them all, and some drop those appended
    # more than a few seconds before (the model knows each one's append time).
    my $dr = ('1 hour', '0', '3 seconds')[$round % 3];
    select(undef, undef, undef, rand(0.5));
    my $res = $node->safe_psql('postgres', qq{
        BEGIN;
        SELECT eventlog.alter_topic('st', delete_retention => '$dr');
        CREATE TEMP TABLE round ON COMMIT DROP AS
            SELECT now() AS t, * FROM eventlog.compact('st');
        SELECT t, count(*) FILTER (WHERE action = 'compacted'),
               count(*) FILTER (WHERE action <> 'compacted')
          FROM (SELECT now() AS t) n LEFT JOIN round USING (t) GROUP BY t;
        COMMIT;
    });
    my ($t, $n_compacted, $other) = split /\|/, (split /\n/, $res)[-1];
    $compacted += $n_compacted;
    is($other, 0, "round $round: no segment skipped or failed") if $other;
    # Per partition: records read but not expected / expected but not read
    # (offset, key and value compared), and reads out of offset order.
    my $check = $node->safe_psql('postgres', qq{
        SELECT string_agg(format('%s:%s/%s/%s', c.partition, x.extra, x.missing, x.back), ' ' ORDER BY c.partition)
          FROM eventlog.compaction c,
          LATERAL (SELECT array_agg(r.offset_id ORDER BY n) AS offs,
                          array_agg(ROW(r.offset_id, r.key, r.value)) AS rows
                     FROM eventlog.read('st', c.partition, 0, 1000000) WITH ORDINALITY r(topic, partition, offset_id, key, value, headers, event_time, append_time, n)) g,
          LATERAL (SELECT (SELECT count(*) FROM (SELECT * FROM unnest(g.rows) AS u(offset_id bigint, key text, value jsonb)
                                                 EXCEPT ALL SELECT * FROM expected(c.partition, c.cleaned_offset, '$t', '$dr')) a) AS extra,
                          (SELECT count(*) FROM (SELECT * FROM expected(c.partition, c.cleaned_offset, '$t', '$dr')
                                                 EXCEPT ALL SELECT * FROM unnest(g.rows) AS u(offset_id bigint, key text, value jsonb)) b) AS missing,
                          (SELECT count(*) FROM generate_series(2, cardinality(g.offs)) i
                            WHERE g.offs[i] <= g.offs[i - 1]) AS back) x
         WHERE c.topic = 'st'});
    if ($check ne '0:0/0/0 1:0/0/0')
    {
        $mismatches++;
        diag("round $round (t $t, delete_retention $dr): partition:extra/missing/out of order $check");
    }
    $node->safe_psql('postgres', qq{
        INSERT INTO gone
        SELECT x.partition, x.offset_id
          FROM eventlog.compaction c,
          LATERAL (SELECT DISTINCT ON (l.key) l.* FROM ledger l
                    WHERE l.partition = c.partition AND l.offset_id < c.cleaned_offset
                    ORDER BY l.key, l.offset_id DESC) x
         WHERE c.topic = 'st' AND x.value IS NULL AND x.append_time < '$t'::timestamptz - '$dr'::interval});
}
is($mismatches, 0, "$rounds rounds: every full read matched the model (latest per key, tombstones per horizon, offsets and order)");
ok($compacted >= $rounds, "compaction rewrote segments ($compacted swaps)");
$removed = $node->safe_psql('postgres', q{SELECT sum(records_removed) FROM eventlog.compaction WHERE topic = 'st'});
cmp_ok($removed, '>', 0, "records were removed ($removed)");
cmp_ok($node->safe_psql('postgres', q{
    SELECT count(*) FROM ledger l
     WHERE l.value IS NULL
       AND NOT EXISTS (SELECT FROM eventlog.read('st', l.partition, l.offset_id, 1) r
                        WHERE r.offset_id = l.offset_id)}), '>', 0,
   'expired tombstones were removed');

# The consumer drains and stops.
$node->safe_psql('postgres', 'UPDATE ctl SET done = true');
$consumer->finish;
is($cerr, '', 'the consumer saw no error') or diag($cerr);
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM seen s
     WHERE NOT EXISTS (SELECT FROM ledger l WHERE l.partition = s.partition AND l.offset_id = s.offset_id
                          AND l.key = s.key AND l.value IS NOT DISTINCT FROM s.value)}),
   '0', 'the consumer saw only records that were produced, as produced');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM (SELECT offset_id <= lag(offset_id) OVER (PARTITION BY partition ORDER BY seq) AS back
                            FROM seen) x WHERE back}),
   '0', 'the consumer saw each partition in strictly increasing offsets (no record twice)');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM (SELECT DISTINCT ON (partition, key) * FROM ledger
                           ORDER BY partition, key, offset_id DESC) latest
     WHERE latest.value IS NOT NULL
       AND NOT EXISTS (SELECT FROM seen s WHERE s.partition = latest.partition
                          AND s.offset_id = latest.offset_id)}),
   '0', 'the consumer saw the latest record of every key that is not deleted');

# No dead tuples: compaction never deletes; the rewritten segments hold
# frozen rows only.
$node->safe_psql('postgres', 'CREATE EXTENSION pageinspect');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog.segment_catalog s,
           LATERAL generate_series(0, pg_relation_size(format('eventlog_segments.%I', s.table_name)) / 8192 - 1) b,
           LATERAL heap_page_items(get_raw_page(format('eventlog_segments.%I', s.table_name), b::int)) h
     WHERE s.segment_no = 0 AND h.lp_flags = 1 AND h.t_infomask & 768 <> 768}),
   '0', 'every row of a compacted segment is frozen');

# The worker compacts by itself when a round is due: here because a dirty
# record is older than max_compaction_lag (a little dirt, far below the
# 0.5 dirty ratio, and the kept tombstones expire in an hour).
$node->safe_psql('postgres', 'CALL burst(20, 40)');
$node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.enforce_retention('st')});
$node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.enforce_retention('st')});
my $rounds_before = $node->safe_psql('postgres', q{SELECT sum(rounds) FROM eventlog.compaction WHERE topic = 'st'});
$node->safe_psql('postgres', q{SELECT eventlog.alter_topic('st', delete_retention => '1 hour', max_compaction_lag => '1 second')});
$node->append_conf('postgresql.conf', "eventlog.maintenance_interval = '200ms'");
$node->reload;
ok($node->poll_query_until('postgres', qq{
    SELECT sum(rounds) > $rounds_before AND max(dirty_ratio) = 0
      FROM eventlog.compaction WHERE topic = 'st'}),
   'the maintenance worker ran compaction rounds when due (max_compaction_lag)');
$node->append_conf('postgresql.conf', "eventlog.maintenance_interval = '3600s'");
$node->reload;

# A bounded key map (eventlog.compaction_memory): with 64kB a pass maps a
# few hundred keys, so the dirty log takes many passes, each of which
# stops inside a segment.  Two topics get the same records (2000 keys, one
# record in eleven a tombstone, delete_retention 0 so that expired
# tombstones go); 'mu' is compacted in one pass with the default setting,
# then 'mp' pass by pass with 64kB: after each pass a full read matches the
# model (below the cleaned offset the latest record of each key there, but
# no tombstone; from it on every record), and in the end 'mp' reads as 'mu'.
$node->safe_psql('postgres', q{
    CREATE TABLE mledger AS
        SELECT i - 1 AS offset_id, 'k' || ((i * 7919) % 2000) AS key,
               CASE WHEN i % 11 = 0 THEN NULL ELSE to_jsonb(i) END AS value
          FROM generate_series(1, 6000) i;
    CREATE FUNCTION mexpected(cleaned bigint)
    RETURNS TABLE (offset_id bigint, key text, value jsonb) LANGUAGE sql AS $$
        SELECT l.offset_id, l.key, l.value FROM mledger l WHERE l.offset_id >= cleaned
        UNION ALL
        SELECT x.offset_id, x.key, x.value
          FROM (SELECT DISTINCT ON (l.key) l.* FROM mledger l WHERE l.offset_id < cleaned
                 ORDER BY l.key, l.offset_id DESC) x
         WHERE x.value IS NOT NULL
    $$;
});
for my $topic ('mu', 'mp')
{
    $node->safe_psql('postgres', qq{
        SELECT eventlog.create_topic('$topic', 1, cleanup_policy => 'compact',
                                     delete_retention => '0', segment_interval => '1 microsecond')});
    for my $b (0 .. 2)
    {
        $node->safe_psql('postgres', qq{
            SELECT count(*) FROM eventlog.produce_batch('$topic',
                (SELECT array_agg(key ORDER BY offset_id) FROM mledger WHERE offset_id / 2000 = $b),
                (SELECT array_agg(value ORDER BY offset_id) FROM mledger WHERE offset_id / 2000 = $b));
            SELECT count(*) FROM eventlog.enforce_retention('$topic');
            SELECT count(*) FROM eventlog.enforce_retention('$topic');});
    }
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('mu', 0, 0, 100000) r
                                   JOIN mledger l ON l.offset_id = r.offset_id AND l.key = r.key
                                                 AND l.value IS NOT DISTINCT FROM r.value}),
   '6000', 'the two topics hold the ledger\'s records');
$node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.compact('mu')});
is($node->safe_psql('postgres', q{SELECT cleaned_offset FROM eventlog.compaction WHERE topic = 'mu'}),
   '6000', 'with the default setting, one pass compacts the whole sealed log');
$node->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.compaction_memory = '64kB'; SELECT pg_reload_conf()});
$node->poll_query_until('postgres', q{SELECT current_setting('eventlog.compaction_memory') = '64kB'})
  or die 'the setting did not take';
my $mcheck = q{
    SELECT (SELECT count(*) FROM (SELECT r.offset_id, r.key, r.value FROM eventlog.read('mp', 0, 0, 100000) r
                                  EXCEPT ALL SELECT * FROM mexpected(c.cleaned_offset)) a)
           || '/' ||
           (SELECT count(*) FROM (SELECT * FROM mexpected(c.cleaned_offset)
                                  EXCEPT ALL SELECT r.offset_id, r.key, r.value FROM eventlog.read('mp', 0, 0, 100000) r) b)
      FROM eventlog.compaction c WHERE c.topic = 'mp'};
my ($passes, $bad, $cleaned, $stuck) = (0, 0, 0, 0);
my @cleaned;
while ($cleaned < 6000 && $passes < 100)
{
    $node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.compact('mp')});
    $passes++;
    my $now = $node->safe_psql('postgres', q{SELECT cleaned_offset FROM eventlog.compaction WHERE topic = 'mp'});
    $stuck++ if $now <= $cleaned;
    $cleaned = $now;
    push @cleaned, $cleaned;
    my $c = $node->safe_psql('postgres', $mcheck);
    if ($c ne '0/0')
    {
        $bad++;
        diag("pass $passes (cleaned offset $cleaned): extra/missing $c");
    }
}
note("cleaned offsets after each pass: @cleaned");
cmp_ok($passes, '>=', 4, "64kB: $passes passes");
is($stuck, 0, 'each pass moved the cleaned offset on');
is($cleaned, 6000, 'until the whole sealed log was compacted');
ok(grep({ $_ % 2000 != 0 } @cleaned), 'passes stopped inside segments');
is($bad, 0, 'after every pass a full read matched the model');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM (
        (SELECT offset_id, key, value FROM eventlog.read('mp', 0, 0, 100000)
         EXCEPT ALL SELECT offset_id, key, value FROM eventlog.read('mu', 0, 0, 100000))
        UNION ALL
        (SELECT offset_id, key, value FROM eventlog.read('mu', 0, 0, 100000)
         EXCEPT ALL SELECT offset_id, key, value FROM eventlog.read('mp', 0, 0, 100000))) d}),
   '0', 'the topic compacted in passes reads as the one compacted at once');
is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.read('mu', 0, 0, 100000)}),
   $node->safe_psql('postgres', q{SELECT count(*) FROM mexpected(6000)}),
   'which holds the latest record of each key not deleted');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET eventlog.compaction_memory; SELECT pg_reload_conf()});
$node->safe_psql('postgres', q{SELECT eventlog.drop_topic('mu'); SELECT eventlog.drop_topic('mp')});

# kill -9 during a rewrite: two topics whose sealed segment is large enough
# for the rewrite to take a while.  They become compacted in the
# transaction that compacts them: otherwise the worker's first round after
# each restart would compact them itself.  Record i (offset i - 1) has key
# i % 50000: the latest of each key are offsets 100000 to 149999, and
# "last" (150000) is in the next segment.
for my $topic ('big1', 'big2')
{
    $node->safe_psql('postgres', qq{
        SELECT eventlog.create_topic('$topic', 1, segment_interval => '1 microsecond');
        SELECT count(*) FROM eventlog.produce_batch('$topic',
            (SELECT array_agg('k' || (i % 50000) ORDER BY i) FROM generate_series(1, 150000) i),
            (SELECT array_agg(to_jsonb(i) ORDER BY i) FROM generate_series(1, 150000) i));
    });
    $node->safe_psql('postgres', qq{SELECT count(*) FROM eventlog.enforce_retention('$topic')});
    $node->safe_psql('postgres', qq{SELECT eventlog.produce('$topic', 'last', '1')});
    $node->safe_psql('postgres', qq{SELECT count(*) FROM eventlog.enforce_retention('$topic')});
}
sub fingerprint
{
    my $topic = shift;
    return $node->safe_psql('postgres', qq{
        SELECT count(*) || ':' || sum(offset_id) FROM eventlog.read('$topic', 0, 0, 1000000)});
}
my $old = fingerprint('big1');
is($old, '150001:' . (149999 * 150000 / 2 + 150000), 'the topics hold their records');
my $new = '50001:' . ((100000 + 149999) * 50000 / 2 + 150000);
my $consistent = q{
    SELECT (SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c
             WHERE c.relnamespace = 'eventlog_segments'::regnamespace AND c.relkind = 'r')
           = (SELECT string_agg(s.table_name, ',' ORDER BY s.table_name) FROM eventlog.segment_catalog s)};

sub crash
{
    my $pm = $node->{_pid};
    my @kids = grep { /^\d+$/ } split /\s+/, `pgrep -P $pm`;
    kill('KILL', @kids, $pm);
    $node->kill9;
    for (1 .. 300)
    {
        last unless grep { kill 0, $_ } @kids, $pm;
        select(undef, undef, undef, 0.1);
    }
    $node->start;
}

# 1. In the middle of the statement: once the new table exists (a relation
#    locked by the compacting backend that no one else can see yet), if the
#    poll catches it; the old segment or the new one, whichever it hit.
my $bg = IPC::Run::start(
    [ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
      q{BEGIN; SELECT eventlog.alter_topic('big1', cleanup_policy => 'compact');
        SELECT * FROM eventlog.compact('big1'); COMMIT;} ],
    '>', \my $bgout, '2>', \my $bgerr);
my $caught = $node->poll_query_until('postgres', q{
    SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                    WHERE a.query LIKE '%eventlog.compact(''big1'')%' AND l.locktype = 'relation'
                      AND l.mode = 'AccessExclusiveLock'
                      AND NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = l.relation))
           -- or the round has committed already: waiting longer catches nothing
           OR EXISTS (SELECT FROM eventlog.compaction WHERE topic = 'big1' AND rounds > 0)});
crash();
eval { $bg->finish };
note($caught ? 'killed during the rewrite or just after its commit' : 'the poll gave up before the kill');
is($node->safe_psql('postgres', $consistent), 't',
   'kill -9 during a rewrite: the segment tables are exactly those of the catalog');
my $after = fingerprint('big1');
ok($after eq $old || $after eq $new, 'and the segment reads as the old one or as the compacted one')
  or diag("got $after, old $old, new $new");

# 2. After the rewrite and the swap, before the commit: the old segment.
my $h = $node->background_psql('postgres');
$h->query_safe(q{BEGIN});
$h->query_safe(q{SELECT eventlog.alter_topic('big2', cleanup_policy => 'compact')});
$h->query_safe(q{SELECT count(*) FROM eventlog.compact('big2')});
crash();
eval { $h->quit };
is($node->safe_psql('postgres', $consistent), 't',
   'kill -9 after the swap, before its commit: the catalog\'s tables, no other');
is(fingerprint('big2'), $old, 'and the old segment reads as before');

# 3. After the commit: the new segment.
like($node->safe_psql('postgres', q{
        BEGIN;
        SELECT FROM eventlog.alter_topic('big2', cleanup_policy => 'compact');
        SELECT action FROM eventlog.compact('big2');
        COMMIT;}), qr/^compacted$/m, 'compacted once the server is back');
crash();
is($node->safe_psql('postgres', $consistent), 't', 'kill -9 after the commit: the catalog\'s tables');
is(fingerprint('big2'), $new, 'and the compacted segment holds the latest record of each key');

$node->stop;
done_testing();
