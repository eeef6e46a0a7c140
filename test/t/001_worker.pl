# The background worker: it starts with a preloaded server, shows in
# pg_stat_activity under its own backend_type, reloads on SIGHUP, comes back
# after being terminated, and stops promptly with the server.  Without
# preloading, nothing crashes and functions that need the shared state say
# what to do.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('worker');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;

my $q_worker = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_eventlog launcher'";
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($q_worker) w"),
	'launcher is running, with its own backend_type');
my $pid = $node->safe_psql('postgres', $q_worker);

# SIGHUP: the worker re-reads its configuration and keeps running.
my $log_offset = -s $node->logfile;
$node->append_conf('postgresql.conf',
	"eventlog.maintenance_interval = '200ms'\nlog_min_messages = debug1");
$node->reload;
ok($node->wait_for_log(qr/pg_eventlog launcher reloaded its configuration/, $log_offset),
	'the launcher processes SIGHUP');
ok($node->poll_query_until('postgres',
		"SELECT setting = '200' FROM pg_settings WHERE name = 'eventlog.maintenance_interval'"),
	'reload applies eventlog.maintenance_interval');
is($node->safe_psql('postgres', $q_worker), $pid, 'the same worker survives a reload');

# Terminated, it is restarted by the postmaster.
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM ($q_worker) w WHERE pid <> $pid"),
	'launcher comes back after pg_terminate_backend');

# The SQL side reports the worker too.
$node->safe_psql('postgres', 'CREATE EXTENSION pg_eventlog');
is($node->safe_psql('postgres',
		"SELECT shared_memory AND launcher_pid = ($q_worker) FROM eventlog.version_info()"),
	't', 'version_info() sees the shared state and the launcher');

# SIGTERM to the postmaster (fast shutdown) stops the worker promptly.
my $t0 = time;
$node->stop('fast');
ok(time - $t0 < 10, 'server with the worker stops promptly');

# Without preloading: CREATE EXTENSION works, nothing crashes, and shared
# state functions raise 55000 with a hint.
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$node->start;
is($node->safe_psql('postgres',
		"SELECT shared_memory, launcher_pid IS NULL FROM eventlog.version_info()"),
	"f|t", 'without preload: no shared memory, no worker');
my ($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT eventlog.create_topic('t')");
isnt($ret, 0, 'a function needing shared state fails without preload');
like($err, qr/55000: pg_eventlog must be loaded via shared_preload_libraries/,
	'with SQLSTATE 55000 and a clear message');
like($err, qr/HINT:  Add pg_eventlog to shared_preload_libraries/, 'and a hint');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'server still up');

$node->stop;
done_testing();
