# eventlog.maintenance says whether each worker of a database runs and why
# not, CREATE EXTENSION warns when no background worker slot is free for
# its workers, and the launcher logs a missing slot per database and kind
# (issue 13, item 8).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('wstatus');
$node->init;
# Three slots: the launcher and the two workers of one database.
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
max_worker_processes = 3
max_logical_replication_workers = 0
max_parallel_workers = 0
eventlog.database_probe_interval = '24h'
});
$node->start;

my $status = q{SELECT coalesce(pid::text, '-') || ' ' || coalesce(notifier_pid::text, '-')
                      || ' ' || worker_status || ' / ' || notifier_status
                 FROM eventlog.maintenance WHERE database = current_database()};

$node->safe_psql('postgres', 'CREATE DATABASE one');
$node->safe_psql('postgres', 'CREATE DATABASE two');
$node->safe_psql('postgres', 'CREATE DATABASE three');
# Probes of the new databases may hold slots for a moment: poll.
$node->safe_psql('one', 'CREATE EXTENSION pg_eventlog');
ok($node->poll_query_until('one', qq{
    SELECT worker_status = 'running' AND notifier_status = 'running' AND pid IS NOT NULL
           AND notifier_pid IS NOT NULL
      FROM eventlog.maintenance WHERE database = 'one'}),
   'one has both workers, which take every free slot');

my ($ret, $out, $err) = $node->psql('two', 'CREATE EXTENSION pg_eventlog');
is($ret, 0, 'CREATE EXTENSION succeeds without a free slot');
like($err, qr/WARNING:  no background worker slot is free for the pg_eventlog maintenance worker and notifier of this database/,
     'and warns that no slot is free for its workers');
like($err, qr/HINT:  Raise max_worker_processes/, 'naming max_worker_processes');
is($node->safe_psql('two', $status),
   '- - no background worker slot free (max_worker_processes) / no background worker slot free (max_worker_processes)',
   'eventlog.maintenance says why neither worker runs');
$node->safe_psql('three', 'CREATE EXTENSION pg_eventlog');

# The launcher retries every second and logs once a minute, per database
# and per kind: the lines of one database do not hide another's.
my %oid = map { $_ => $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = '$_'") }
  qw(one two three);
for my $db (qw(two three))
{
    for my $kind (qw(maintenance notifier))
    {
        ok($node->wait_for_log(qr/could not start a pg_eventlog $kind worker for database $oid{$db}/),
           "the log says $db has no slot for its $kind worker");
    }
}

my $rows = q{SELECT string_agg(database, ',' ORDER BY database) FROM eventlog.maintenance};
$node->safe_psql('postgres', 'CREATE ROLE alice LOGIN');
is($node->safe_psql('two', $status, extra_params => [ '-U', 'alice' ]),
   '- - no background worker slot free (max_worker_processes) / no background worker slot free (max_worker_processes)',
   'any role sees the status of its own database\'s workers');

# eventlog.notify and eventlog.publish_stable_offsets off: the notifier is
# off, not missing.
$node->safe_psql('postgres', q{ALTER SYSTEM SET eventlog.notify = off; ALTER SYSTEM SET eventlog.publish_stable_offsets = off; SELECT pg_reload_conf();});
ok($node->poll_query_until('one', q{
    SELECT notifier_status = 'off (eventlog.notify and eventlog.publish_stable_offsets)' AND notifier_pid IS NULL
      FROM eventlog.maintenance WHERE database = 'one'}),
   'with eventlog.notify and eventlog.publish_stable_offsets off the notifier shows as off');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET eventlog.notify; ALTER SYSTEM RESET eventlog.publish_stable_offsets; SELECT pg_reload_conf();});

# Slots freed: the databases waiting get their workers.
$node->safe_psql('one', 'DROP EXTENSION pg_eventlog');
$node->safe_psql('postgres', 'DROP DATABASE three');
ok($node->poll_query_until('two', qq{SELECT ($status) ~ '^[0-9]+ [0-9]+ running / running\$'}),
   'once slots are free, two gets both workers');
is($node->safe_psql('two', $rows), 'two', 'and the dropped database is gone from the view');

$node->stop;
done_testing();
