# The Kafka gateway's authentication and TLS (docs/kafka.md, "Authentication
# and TLS"): SASL PLAIN and SCRAM-SHA-256 with kcat, confluent_kafka
# (librdkafka) and kafka-python, over SASL_PLAINTEXT and SASL_SSL with a CA
# made here by openssl; the credentials become the PostgreSQL role of the
# client's session (its privileges decide what Metadata shows, a session
# reconnected after it was terminated is that role again); wrong passwords,
# unknown, NOLOGIN, expired and unreachable roles all get the same error;
# hostile SASL exchanges (kafka_sasl_probe.py) close only their own
# connection; plaintext, garbage and a stalled handshake on the TLS
# listener do not disturb other clients; client certificates (--tls-ca).
#
# The gateway is the installed one ($(pg_config --bindir)): this test builds
# nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use JSON::PP;
use Test::More;
use KafkaGatewayTest;

my $python = '/usr/bin/python3';
my $probe = "$ENV{TESTDIR}/test/t/kafka_sasl_probe.py";
$probe = 'test/t/kafka_sasl_probe.py' unless -f $probe;
my $rawprobe = "$ENV{TESTDIR}/test/t/kafka_probe.py";
$rawprobe = 'test/t/kafka_probe.py' unless -f $rawprobe;

my $node = PostgreSQL::Test::Cluster->new('kafka_sasl');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'\n"
      . "password_encryption = 'scram-sha-256'");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('orders', 3);
    SELECT eventlog.create_topic('audit', 1);
    CREATE ROLE kafka_users NOLOGIN;
    CREATE ROLE gateway LOGIN;
    CREATE ROLE alice LOGIN PASSWORD 'alice-secret' IN ROLE kafka_users;
    CREATE ROLE bob LOGIN PASSWORD 'bob-secret' IN ROLE kafka_users;
    CREATE ROLE "we,ird=name" LOGIN PASSWORD 'weird-secret' IN ROLE kafka_users;
    CREATE ROLE nolog NOLOGIN PASSWORD 'nolog-secret' IN ROLE kafka_users;
    CREATE ROLE expired LOGIN PASSWORD 'expired-secret' VALID UNTIL '2000-01-01' IN ROLE kafka_users;
    CREATE ROLE stranger LOGIN PASSWORD 'stranger-secret' IN ROLE kafka_users;
    CREATE ROLE trusty LOGIN PASSWORD 'trusty-secret';
    GRANT alice, bob, "we,ird=name", nolog, expired TO gateway;
    GRANT EXECUTE ON FUNCTION eventlog.kafka_scram_verifier(text) TO gateway;
    SELECT eventlog.grant('orders', 'consume', 'alice');
    SELECT eventlog.grant('audit', 'produce', 'bob');
});

# The gateway's own role logs in without a password; Kafka users need
# theirs; trusty (not a Kafka user) gets in without one.
my $hba = $node->data_dir . '/pg_hba.conf';
open(my $fh, '>', $hba) or die $!;
print $fh "local all gateway trust\nlocal all +kafka_users scram-sha-256\nlocal all all trust\n";
close($fh);
$node->reload;

my $gw = $node->config_data('--bindir') . '/pg_eventlog_kafka';
my $dsn = $node->connstr('postgres') . ' user=gateway';
my $tmp = PostgreSQL::Test::Utils::tempdir();

sub start_gateway
{
    my ($name, @args) = @_;
    return spawn_gateway($gw, $tmp, $name, qr/serving database|cannot/, '--dsn', $dsn, @args);
}

sub stop_gateway
{
    my ($h) = @_;
    $h->signal('TERM');
    $h->finish;
    return $? >> 8;
}

# 1. The command line.
my @bad = (
    [ [ '--sasl', 'gssapi' ], qr/invalid --sasl mechanism "gssapi"/ ],
    [ [ '--sasl', 'none,plain' ], qr/invalid --sasl "none,plain"/ ],
    [ [ '--sasl', ',' ], qr/invalid --sasl ","/ ],
    [ [ '--tls-cert', 'x.crt' ], qr/--tls-cert and --tls-key go together/ ],
    [ [ '--tls-ca', 'ca.crt' ], qr/--tls-ca needs --tls-cert and --tls-key/ ],
    [ [ '--authentication-timeout', '0' ], qr/invalid --authentication-timeout "0": give a number of seconds from 1 to 600/ ],
    [ [ '--authentication-timeout', '601' ], qr/invalid --authentication-timeout "601"/ ]);
for my $case (@bad)
{
    my ($args, $msg) = @$case;
    my ($rc, $out, $err) = run_cmd($gw, '--listen', '127.0.0.1:9092', '--dsn', 'x', @$args);
    is($rc, 2, "exit status 2 for: @$args");
    like($err, $msg, "and the reason for: @$args");
}
my ($rc, $out, $err) = run_cmd($gw, '--help');
like($out, qr/--authentication-timeout S .*--sasl MECHANISMS .*--tls-cert FILE .*--tls-key FILE .*--tls-ca FILE/s, '--help lists the options');
($rc, $out, $err) = run_cmd($gw, '--listen', '127.0.0.1:' . PostgreSQL::Test::Cluster::get_free_port(),
    '--dsn', $dsn, '--tls-cert', "$tmp/nosuch.crt", '--tls-key', "$tmp/nosuch.key");
is($rc, 1, 'a certificate that cannot be loaded: exit status 1');
like($err, qr/ERROR: cannot load the TLS certificate ".*nosuch\.crt" \(--tls-cert\)/, 'and says which');

# Without --sasl on a non-loopback address: a warning.
my $wport = PostgreSQL::Test::Cluster::get_free_port();
my ($wh, $wlog) = start_gateway('open', '--listen', "0.0.0.0:$wport", '--advertise', "127.0.0.1:$wport");
like(slurp_file($wlog), qr/WARNING: listening on a non-loopback address without --sasl: anyone who can reach it works as the --dsn role/,
    'no SASL on a non-loopback address: warned');
like(slurp_file($wlog), qr/INFO: no authentication: every client works as the --dsn role, plain TCP/, 'and the mode is logged');
is(stop_gateway($wh), 0, 'that gateway stops');

# 2. Certificates: a CA, a server certificate for 127.0.0.1, a client one.
sub openssl
{
    my ($rc, $out, $err) = run_cmd('openssl', @_);
    die "openssl @_: $err" if $rc != 0;
}
my @ec = ('-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes');
openssl('req', '-x509', @ec, '-keyout', "$tmp/ca.key", '-out', "$tmp/ca.crt", '-days', '2', '-subj', '/CN=test-ca');
for my $who ('server', 'client')
{
    openssl('req', @ec, '-keyout', "$tmp/$who.key", '-out', "$tmp/$who.csr", '-subj', "/CN=$who");
    open(my $ext, '>', "$tmp/$who.ext") or die $!;
    print $ext "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    close($ext);
    openssl('x509', '-req', '-in', "$tmp/$who.csr", '-CA', "$tmp/ca.crt", '-CAkey', "$tmp/ca.key",
        '-CAcreateserial', '-out', "$tmp/$who.crt", '-days', '2', '-extfile', "$tmp/$who.ext");
}

# 3. A gateway with SASL on plain TCP, and one with SASL over TLS.  They
# give clients 10 s and 20 s to authenticate (the default, 60 s, would make
# the trickling clients below hold this test for a minute; on TLS it stays
# above the 10 s handshake timeout, which section 10 checks).
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $addr = "127.0.0.1:$port";
my ($gwh, $gwlog) = start_gateway('sasl', '--listen', $addr, '--sasl', 'plain,SCRAM-SHA-256',
    '--authentication-timeout', '10', '--log-level', 'debug');
like(slurp_file($gwlog), qr/INFO: SASL PLAIN and SCRAM-SHA-256 required, plain TCP/, 'the SASL gateway logs its mode');
my $tport = PostgreSQL::Test::Cluster::get_free_port();
my $taddr = "127.0.0.1:$tport";
my ($tlsh, $tlslog) = start_gateway('tls', '--listen', $taddr, '--sasl', 'scram-sha-256,plain',
    '--authentication-timeout', '20', '--tls-cert', "$tmp/server.crt", '--tls-key', "$tmp/server.key", '--log-level', 'debug');
like(slurp_file($tlslog), qr/INFO: SASL PLAIN and SCRAM-SHA-256 required, TLS/, 'the TLS gateway logs its mode');

($rc, $out, $err) = run_cmd($python, $rawprobe, '127.0.0.1', $port, 'apiversions', 3);
like($out, qr/keys=\S*\b17:0-1\b/, 'ApiVersions advertises SaslHandshake v0-1');
like($out, qr/keys=\S*\b36:0-2\b/, 'and SaslAuthenticate v0-2');

my %sql_topics = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', 'SELECT name, partitions FROM eventlog.topic_catalog');

sub kcat_list
{
    my ($a, $proto, $mech, $user, $password, @more) = @_;
    my @args = ('kcat', '-b', $a, '-L', '-J', '-m', '10', '-X', "security.protocol=$proto");
    push @args, '-X', "sasl.mechanisms=$mech", '-X', "sasl.username=$user", '-X', "sasl.password=$password"
      if $mech;
    push @args, '-X', "ssl.ca.location=$tmp/ca.crt" if $proto =~ /SSL/;
    return run_cmd(@args, @more);
}

# 4. kcat: PLAIN and SCRAM-SHA-256, SASL_PLAINTEXT and SASL_SSL.
for my $c ([ $addr, 'SASL_PLAINTEXT' ], [ $taddr, 'SASL_SSL' ])
{
    my ($a, $proto) = @$c;
    for my $mech ('PLAIN', 'SCRAM-SHA-256')
    {
        ($rc, $out, $err) = kcat_list($a, $proto, $mech, 'alice', 'alice-secret');
        is($rc, 0, "kcat $proto $mech: lists the topics") or diag($err);
        my $md = eval { decode_json($out) } || {};
        is_deeply({ map { $_->{topic} => scalar @{ $_->{partitions} } } @{ $md->{topics} || [] } },
            \%sql_topics, "kcat $proto $mech: the topics SQL created");
    }
}
for my $mech ('PLAIN', 'SCRAM-SHA-256')
{
    ($rc, $out, $err) = kcat_list($addr, 'SASL_PLAINTEXT', $mech, 'alice', 'wrong', '-m', '3');
    isnt($rc, 0, "kcat $mech with a wrong password fails");
    like($err, qr/Authentication failed: invalid user name or password/, "kcat $mech: the gateway's message");
}

# 5. What the role may do decides: Metadata's authorized operations (v8)
# are has_topic_privilege's, as the authenticated role.  DESCRIBE and
# DESCRIBE_CONFIGS (1280), +READ (8) with consume, +WRITE (16) with produce.
for my $mech ('PLAIN', 'SCRAM-SHA-256')
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', $mech, 'alice', 'alice-secret');
    my $verified = $mech eq 'PLAIN' ? 'error=0 message=None' : 'ok, server verified';
    is($out, "login: $verified\nmetadata: audit=0/1280 orders=0/1288\n", "$mech alice: consume on orders") or diag($err);
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', $mech, 'bob', 'bob-secret', '2');
    is($out, "login: $verified\nmetadata: audit=0/1296 orders=0/1280\n", "$mech bob (SaslAuthenticate v2): produce on audit") or diag($err);
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', $mech, 'we,ird=name', 'weird-secret', '0');
    is($out, "login: $verified\nmetadata: audit=0/1280 orders=0/1280\n", "$mech: a role name with , and = (SaslAuthenticate v0)") or diag($err);
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', $mech, 'alice', 'alice-secret', 'raw');
    my $raw = $mech eq 'PLAIN' ? 'ok' : 'ok, server verified';
    is($out, "login: $raw\nmetadata: audit=0/1280 orders=0/1288\n", "$mech after SaslHandshake v0 (bare tokens)") or diag($err);
}
# Over TLS too.
($rc, $out, $err) = run_cmd($python, $probe, '--tls', "$tmp/ca.crt", '127.0.0.1', $tport, 'login', 'SCRAM-SHA-256', 'bob', 'bob-secret');
is($out, "login: ok, server verified\nmetadata: audit=0/1296 orders=0/1280\n", 'SCRAM over TLS: bob') or diag($err);

# 6. Every refusal looks the same to the client.
my $refused = "login: error=58 message=Authentication failed: invalid user name or password\nthen: closed\n";
for my $case ([ 'alice', 'wrong' ], [ 'nosuch', 'pw' ], [ 'nolog', 'nolog-secret' ],
    [ 'expired', 'expired-secret' ], [ 'stranger', 'stranger-secret' ], [ 'trusty', 'anything' ],
    [ 'gateway', 'anything' ], [ 'x' x 64, 'pw' ])
{
    my ($user, $pw) = @$case;
    for my $mech ('PLAIN', 'SCRAM-SHA-256')
    {
        # stranger may log in (pg_hba) but is no role the gateway may SET ROLE to.
        next if $user eq 'stranger' && $mech eq 'PLAIN';
        ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', $mech, $user, $pw);
        is($out, $refused, "$mech " . substr($user, 0, 10) . ": refused with the same message") or diag($err);
    }
}
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', 'PLAIN', 'stranger', 'stranger-secret');
is($out, "login: error=0 message=None\nmetadata: audit=0/1280 orders=0/1280\n",
    'PLAIN: any role pg_hba lets in with its password (SET ROLE plays no part)');
my $log = slurp_file($gwlog);
like($log, qr/SASL PLAIN authentication failed for user "trusty": PostgreSQL refused the login/,
    'PLAIN as a role pg_hba trusts: refused');
like($log, qr/PostgreSQL let role "trusty" in without asking for its password \(pg_hba\.conf\): refusing the SASL PLAIN login/,
    'and the log says why');
like($log, qr/SASL SCRAM-SHA-256 authentication failed for user "nosuch": no such role/, 'the log tells an unknown role apart');
like($log, qr/SASL SCRAM-SHA-256 authentication failed for user "alice": wrong password/, 'and a wrong password');
like($log, qr/INFO: conn \d+ \(127\.0\.0\.1:\d+\): authenticated as "alice" with SASL SCRAM-SHA-256/, 'successes are logged');
unlike($log, qr/alice-secret|bob-secret|weird-secret|nolog-secret/, 'no password is ever logged');

# 7. The session is the role: a PLAIN session logs in as it; a SCRAM one is
# the gateway's login with SET ROLE, done again when it reconnects.  With
# the catalog readable by alice alone, only alice lists topics.
my ($hin, $hout) = ('', '');
my $holder = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'login', 'PLAIN+hold', 'alice', 'alice-secret' ],
    '<', \$hin, '>', \$hout, '2>', \my $herr);
$holder->pump until $hout =~ /^metadata: .*\n/m;
ok($node->poll_query_until('postgres',
    q{SELECT string_agg(usename, ',') FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}, 'alice'),
    'PLAIN: the session logs in as alice (pg_stat_activity)');
$hin .= "\n";
$holder->finish;

$node->safe_psql('postgres', q{
    REVOKE SELECT ON eventlog.topic_catalog FROM PUBLIC;
    GRANT SELECT ON eventlog.topic_catalog TO alice;
});
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', 'SCRAM-SHA-256', 'bob', 'bob-secret');
is($out, "login: ok, server verified\nmetadata: no topics\n", 'SCRAM bob, who may not read the catalog: no topics');
($hin, $hout) = ('', '');
$holder = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'login', 'SCRAM-SHA-256+hold', 'alice', 'alice-secret' ],
    '<', \$hin, '>', \$hout, '2>', \$herr);
$holder->pump until $hout =~ /^metadata: .*\n/m;
is($hout, "login: ok, server verified\nmetadata: audit=0/1280 orders=0/1288\n", 'SCRAM alice lists them');
ok($node->poll_query_until('postgres',
    q{SELECT string_agg(usename, ',') FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}, 'gateway'),
    'SCRAM: the session is the gateway\'s login');
$node->safe_psql('postgres', q{
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}),
    'its session is terminated');
$hin .= "\n";
$holder->finish;
is($hout, "login: ok, server verified\nmetadata: audit=0/1280 orders=0/1288\nagain: audit=0/1280 orders=0/1288\n",
    'the reconnected session is alice again (SET ROLE redone)') or diag($herr);
($rc, $out, $err) = run_cmd($python, $rawprobe, '127.0.0.1', $port, 'metadata', 1, 'orders');
is($out, "closed\n", 'and nothing is served before authentication');
$node->safe_psql('postgres', q{
    GRANT SELECT ON eventlog.topic_catalog TO PUBLIC;
    REVOKE SELECT ON eventlog.topic_catalog FROM alice;
});

# Without EXECUTE on kafka_scram_verifier: SCRAM fails for everyone, and the
# log says what to grant.
$node->safe_psql('postgres', 'REVOKE EXECUTE ON FUNCTION eventlog.kafka_scram_verifier(text) FROM gateway');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', 'SCRAM-SHA-256', 'alice', 'alice-secret');
is($out, $refused, 'SCRAM without EXECUTE on kafka_scram_verifier: refused');
like(slurp_file($gwlog), qr/cannot look up SCRAM verifiers \(SQLSTATE 42501\): the --dsn role needs EXECUTE on eventlog\.kafka_scram_verifier\(text\)/,
    'and the log says what to grant');
$node->safe_psql('postgres', 'GRANT EXECUTE ON FUNCTION eventlog.kafka_scram_verifier(text) TO gateway');
is($node->safe_psql('postgres', q{SET ROLE alice; SELECT has_function_privilege('eventlog.kafka_scram_verifier(text)', 'EXECUTE')}),
    'f', 'a Kafka user may not read verifiers');
# As the gateway's login (session_user decides whom it may ask about).
is($node->safe_psql('postgres', q{
    SELECT (SELECT eventlog.kafka_scram_verifier('alice') LIKE 'SCRAM-SHA-256$4096:%'),
           eventlog.kafka_scram_verifier('stranger') IS NULL,
           eventlog.kafka_scram_verifier('nolog') IS NULL,
           eventlog.kafka_scram_verifier('expired') IS NULL,
           eventlog.kafka_scram_verifier('nosuch') IS NULL}, extra_params => [ '-U', 'gateway' ]),
    't|t|t|t|t', 'the gateway reads verifiers of roles it may SET ROLE to, that may log in and have not expired');

# A role without CONNECT on the database: SET ROLE would not check it, a
# login would; SCRAM refuses it as PLAIN does.
$node->safe_psql('postgres', q{
    CREATE ROLE outsider LOGIN PASSWORD 'outsider-secret' IN ROLE kafka_users;
    GRANT outsider TO gateway;
});
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', 'SCRAM-SHA-256', 'outsider', 'outsider-secret');
is($out, "login: ok, server verified\nmetadata: audit=0/1280 orders=0/1280\n", 'SCRAM outsider with CONNECT: in') or diag($err);
$node->safe_psql('postgres', q{
    REVOKE CONNECT ON DATABASE postgres FROM PUBLIC;
    GRANT CONNECT ON DATABASE postgres TO gateway, alice, bob, "we,ird=name", stranger, trusty;
});
for my $mech ('PLAIN', 'SCRAM-SHA-256')
{
    ($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', $mech, 'outsider', 'outsider-secret');
    is($out, $refused, "$mech outsider without CONNECT on the database: refused") or diag($err);
}
is($node->safe_psql('postgres', q{SELECT eventlog.kafka_scram_verifier('outsider') IS NULL},
    extra_params => [ '-U', 'gateway' ]), 't', 'kafka_scram_verifier gives no verifier of a role without CONNECT');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'login', 'SCRAM-SHA-256', 'alice', 'alice-secret');
is($out, "login: ok, server verified\nmetadata: audit=0/1280 orders=0/1288\n", 'SCRAM alice, granted CONNECT, still in') or diag($err);
$node->safe_psql('postgres', 'GRANT CONNECT ON DATABASE postgres TO PUBLIC');

# A SCRAM session reconnects only while the role may still log in: with
# LOGIN taken away and its session ended, the connection ends too (a PLAIN
# one would fail to log in again).
($hin, $hout) = ('', '');
$holder = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'login', 'SCRAM-SHA-256+hold', 'bob', 'bob-secret' ],
    '<', \$hin, '>', \$hout, '2>', \$herr);
$holder->pump until $hout =~ /^metadata: .*\n/m;
$node->safe_psql('postgres', q{
    ALTER ROLE bob NOLOGIN;
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}),
    'bob\'s session is terminated');
$hin .= "\n";
$holder->finish;
is($hout, "login: ok, server verified\nmetadata: audit=0/1296 orders=0/1280\nagain: closed\n",
    'SCRAM bob, NOLOGIN since: the gateway does not SET ROLE to him again') or diag($herr);
like(slurp_file($gwlog), qr/the authenticated role may no longer log in \(kafka_scram_verifier gives it no verifier\)/,
    'and the log says why');
$node->safe_psql('postgres', 'ALTER ROLE bob LOGIN');

# An unauthenticated client holds no PostgreSQL session: the --dsn role's
# session that looked the verifier up ends before the server-first message
# goes out, and the exchange goes on without it (were the session kept
# until the client answers, none would end before the gateway's
# authentication timeout closed the client, and the login would fail).
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}),
    'no gateway session before the exchange');
($hin, $hout) = ('', '');
$holder = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'scram-split', 'alice', 'alice-secret' ],
    '<', \$hin, '>', \$hout, '2>', \$herr);
$holder->pump until $hout =~ /^server-first: .*\n/m;
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pg_eventlog_kafka'}),
    'none open while the client has not answered');
$hin .= "\n";
$holder->finish;
is($hout, "server-first: error=0\nlogin: error=0, server verified\nmetadata: audit=0/1280 orders=0/1288\n",
    'the exchange then completes') or diag($herr);

# Clients that trickle a byte every 5 s, never silent long enough for the
# receive timeout (30 s, or --authentication-timeout if shorter),
# into a frame on the SASL listener and into the handshake on the TLS one:
# shut down --authentication-timeout after they connected, while the rest
# of this test goes on (checked at its end).
my ($tr1out, $tr2out) = ('', '');
my $trickler1 = IPC::Run::start([ $python, $probe, '127.0.0.1', $port, 'trickle', 150 ], '>', \$tr1out, '2>', \my $tr1err);
my $trickler2 = IPC::Run::start([ $python, $probe, '127.0.0.1', $tport, 'trickle', 150, 'tls' ], '>', \$tr2out, '2>', \my $tr2err);

# 8. Hostile exchanges, each on its own connection.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $port, 'attacks', 'alice', 'alice-secret');
is($out, <<'EOT', 'hostile SASL exchanges are refused and closed') or diag($err);
apiversions before authentication: answered
metadata before authentication: closed
authenticate before handshake: closed
unknown mechanism: error=33 mechanisms=PLAIN,SCRAM-SHA-256 then closed
metadata after handshake: closed
scram client-final first: error=58 Authentication failed: invalid user name or password then closed
scram nonce not the server's: error=58 then closed
scram nonce after something other than the client's: error=58
scram nonce after the client's (librdkafka): error=0
scram channel binding not the gs2 header: error=58
scram first exchange: error=0
scram server nonce differs for the same client nonce: True
scram replayed client-final: error=58
scram channel binding asked: error=58 then closed
scram extension: error=58 then closed
scram mandatory extension: error=58 then closed
scram other authzid: error=58 then closed
scram bad saslname: error=58 then closed
scram nul byte: error=58 then closed
scram empty: error=58 then closed
scram oversized token: error=58 then closed
scram client-first twice: error=58
plain empty password: error=58
plain other authzid: error=58
plain no separators: error=58
plain extra separator: error=58
600000-byte frame before authentication: closed
raw garbage after handshake v0: closed
login: error=0 message=None
second handshake: error=34
second authenticate: error=34 message=Authentication is not expected now.
still: audit=0/1280 orders=0/1288
EOT
$log = slurp_file($gwlog);
like($log, qr/Metadata request before SASL authentication completed/, 'a request before authentication is logged');
like($log, qr/request size 600000 is out of range \(0 to 524288, before authentication\)/, 'as is a large frame');
like($log, qr/SaslHandshake after authentication: answering ILLEGAL_SASL_STATE/, 'and a second handshake');

# 9. The other clients: confluent_kafka over SASL_SSL with SCRAM, kafka-python
# with PLAIN and SCRAM (it uses SaslHandshake v0 and bare tokens).
($rc, $out, $err) = run_cmd($python, '-c', qq{
from confluent_kafka.admin import AdminClient
md = AdminClient({'bootstrap.servers': '$taddr', 'security.protocol': 'SASL_SSL',
                  'ssl.ca.location': '$tmp/ca.crt', 'sasl.mechanisms': 'SCRAM-SHA-256',
                  'sasl.username': 'alice', 'sasl.password': 'alice-secret'}).list_topics(timeout=60)
for t in sorted(md.topics):
    print('topic', t, len(md.topics[t].partitions))
});
is($out, join('', map { "topic $_ $sql_topics{$_}\n" } sort keys %sql_topics),
    'confluent_kafka AdminClient over SASL_SSL with SCRAM-SHA-256') or diag($err);

for my $c ([ $addr, 'SASL_PLAINTEXT', 'PLAIN' ], [ $addr, 'SASL_PLAINTEXT', 'SCRAM-SHA-256' ],
    [ $taddr, 'SASL_SSL', 'PLAIN' ])
{
    my ($a, $proto, $mech) = @$c;
    ($rc, $out, $err) = run_cmd($python, '-c', qq{
from kafka import KafkaConsumer
c = KafkaConsumer(bootstrap_servers='$a', security_protocol='$proto', sasl_mechanism='$mech',
                  sasl_plain_username='bob', sasl_plain_password='bob-secret',
                  ssl_cafile='$tmp/ca.crt', ssl_check_hostname=False)
print('topics', ','.join(sorted(c.topics())))
print('orders', sorted(c.partitions_for_topic('orders')))
c.close()
});
    is($out, 'topics ' . join(',', sort keys %sql_topics) . "\norders [0, 1, 2]\n",
        "kafka-python $proto $mech") or diag($err);
}
like(slurp_file($gwlog), qr/authenticated as "bob" with SASL SCRAM-SHA-256/, 'kafka-python authenticated with SCRAM');

# 10. TLS: plaintext and garbage close their own connection; a client that
# stalls in the handshake holds only its own; TLS 1.2 or later.
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $tport, 'tls-plaintext');
is($out, "tls-plaintext: closed\n", 'a plaintext Kafka request to the TLS listener: closed');
($rc, $out, $err) = run_cmd($python, $probe, '127.0.0.1', $tport, 'tls-garbage');
is($out, "tls-garbage: closed\n", 'garbage in the handshake: closed');
my ($sout, $serr) = ('', '');
my $staller = IPC::Run::start([ $python, $probe, '127.0.0.1', $tport, 'tls-stall' ], '>', \$sout, '2>', \$serr);
$staller->pump until $sout =~ /^stalling/m;
($rc, $out, $err) = kcat_list($taddr, 'SASL_SSL', 'SCRAM-SHA-256', 'alice', 'alice-secret');
is($rc, 0, 'while a client stalls in the TLS handshake, others are served') or diag($err);
ok(wait_for_log($tlslog, qr/TLS handshake failed: timed out: closing/), 'the stalled handshake is abandoned');
$staller->finish;
is($sout, "stalling\nstalled: closed\n", 'and its connection closed');
$log = slurp_file($tlslog);
like($log, qr/TLS handshake failed: .*: closing/, 'handshake failures are logged');
like($log, qr/TLS TLSv1\.[23], cipher \S+, client certificate none/, 'clients negotiate TLS 1.2 or later');
# s_client at security level 0, so that it offers TLS 1.1 at all.
for my $v ('1_2', '1_1')
{
    my ($o, $e) = ('', '');
    IPC::Run::run([ 'openssl', 's_client', '-connect', $taddr, "-tls$v", '-cipher', 'DEFAULT:@SECLEVEL=0',
        '-CAfile', "$tmp/ca.crt" ], '<', \'', '>', \$o, '2>', \$e,
        IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
    if ($v eq '1_2') { is($? >> 8, 0, 'TLS 1.2 is accepted') or diag($e); }
    else { isnt($? >> 8, 0, 'TLS 1.1 is refused'); }
}

# 11. Client certificates (--tls-ca), without SASL: the --dsn role.
my $cport = PostgreSQL::Test::Cluster::get_free_port();
my ($ch, $clog) = start_gateway('mtls', '--listen', "127.0.0.1:$cport", '--tls-cert', "$tmp/server.crt",
    '--tls-key', "$tmp/server.key", '--tls-ca', "$tmp/ca.crt", '--log-level', 'debug');
($rc, $out, $err) = kcat_list("127.0.0.1:$cport", 'SSL', undef, undef, undef,
    '-X', "ssl.certificate.location=$tmp/client.crt", '-X', "ssl.key.location=$tmp/client.key");
is($rc, 0, 'kcat with a client certificate signed by --tls-ca') or diag($err);
like(slurp_file($clog), qr/client certificate \/CN=client/, 'the client certificate is logged');
($rc, $out, $err) = kcat_list("127.0.0.1:$cport", 'SSL', undef, undef, undef, '-m', '3');
isnt($rc, 0, 'kcat without a client certificate is refused');
is(stop_gateway($ch), 0, 'the client-certificate gateway stops');

$trickler1->finish;
$trickler2->finish;
is($tr1out, "closed\n", 'a client trickling a frame before authenticating is shut down') or diag($tr1err);
is($tr2out, "closed\n", 'as is one trickling a TLS handshake');
like(slurp_file($gwlog), qr/did not authenticate within 10 seconds of connecting: closing/, 'the log says why');
like(slurp_file($tlslog), qr/did not authenticate within 20 seconds of connecting: closing/, 'on the TLS listener too');

# kcat still works on both after everything.
($rc, $out, $err) = kcat_list($addr, 'SASL_PLAINTEXT', 'SCRAM-SHA-256', 'bob', 'bob-secret');
is($rc, 0, 'kcat still works on the SASL gateway');
is(stop_gateway($gwh), 0, 'the SASL gateway stops with status 0');
is(stop_gateway($tlsh), 0, 'the TLS gateway stops with status 0');

done_testing();
