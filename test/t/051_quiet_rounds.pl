# A maintenance round that changes nothing makes no backend reload its
# topic cache (issue 14, item 3).  Before, the catalog triggers fired per
# statement, so each round's UPDATE of segment_catalog, matching no row,
# sent an invalidation for every topic of every round: every producer
# reloaded its cache (and every session replanned its queries over the
# catalog) several times per round, which tripled producers' p99 with
# rounds every 100 ms.  A real change must still reach every backend.
#
# A session loads a topic into its cache with a lookup of topic_catalog's
# name index: the session's count of scans of that index
# (pg_stat_get_xact_numscans) says whether a produce reloaded.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('quiet');
$node->init;
# The worker's first round runs at its start; no other runs while we look.
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
eventlog.maintenance_interval = '1h'
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('quiet', 2);
    SELECT eventlog.create_topic('other', 1);
    SELECT eventlog.produce('other', NULL, '1');
});

# One producing session, kept open.
my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start(
    [ 'psql', '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
    '<', \$in, '>', \$out, '2>', \$err);
my $step = 0;

# Produce once in that session: whether that loaded the topic.
sub produce
{
    $step++;
    # The count is the backend's, not yet reported: compare it before and
    # after, in one transaction (it is reported only between them).
    $in .= "BEGIN;\n"
      . "SELECT pg_stat_get_xact_numscans('eventlog.topic_catalog_name_key'::regclass) AS before \\gset\n"
      . "SELECT eventlog.produce('quiet', NULL, '$step', partition => 0) IS NOT NULL;\n"
      . "SELECT 'step $step: ' || CASE WHEN pg_stat_get_xact_numscans('eventlog.topic_catalog_name_key'::regclass)\n"
      . "       > :before THEN 'loaded' ELSE 'cached' END;\n"
      . "COMMIT;\n";
    $h->pump until $out =~ /^step $step: (\w+)$/m || $err =~ /ERROR/;
    die "producer failed: $err" if $err =~ /ERROR/;
    return $1;
}

is(produce(), 'loaded', 'the first produce loads the topic');
is(produce(), 'cached', 'the next one uses the cache');

is($node->safe_psql('postgres', q{SELECT count(*) FROM eventlog.enforce_retention()}),
   '0', 'a maintenance round over every topic finds nothing to do');
is(produce(), 'cached', 'so the producer does not reload');

$node->safe_psql('postgres', q{
    SELECT count(*) FROM eventlog.enforce_retention();
    SELECT count(*) FROM eventlog.enforce_retention('other');
});
is(produce(), 'cached', 'nor after more rounds');

$node->safe_psql('postgres', q{SELECT eventlog.alter_topic('quiet', retention => '2 days')});
is(produce(), 'loaded', 'a change of the topic reaches the producer');
is(produce(), 'cached', 'once');

# A round that does change the catalog: it rolls a segment of the other
# topic (segment_interval passed), and every cache entry is reloaded.
$node->safe_psql('postgres', q{
    SELECT eventlog.alter_topic('other', segment_interval => '1 millisecond');
    SELECT pg_sleep(0.01);
});
is(produce(), 'loaded', 'after the other topic\'s change, the cache is reloaded');
is($node->safe_psql('postgres',
    q{SELECT string_agg(action, ',') FROM eventlog.enforce_retention('other')}),
   'rolled', 'a round rolls the other topic');
is(produce(), 'loaded', 'which the producer sees');
is(produce(), 'cached', 'once');

$in .= "\\q\n";
$h->finish;
$node->stop;
done_testing();
