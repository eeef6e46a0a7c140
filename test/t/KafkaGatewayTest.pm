# What the Kafka gateway's TAP tests (test/t/06*_kafka_*.pl) share: running
# a client command, waiting for a line in a log, and starting a gateway.
# prove finds this module through -I test/t (test/run).
package KafkaGatewayTest;

use strict;
use warnings;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;

our @EXPORT = qw(run_cmd wait_for_log spawn_gateway);

# run_cmd([\STDIN,] CMD...): runs a command with the test's timeout;
# returns (exit status, stdout, stderr).
sub run_cmd
{
    my $in = ref $_[0] eq 'SCALAR' ? ${ shift() } : '';
    my ($out, $err) = ('', '');
    IPC::Run::run(\@_, '<', \$in, '>', \$out, '2>', \$err,
        IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
    return ($? >> 8, $out, $err);
}

# wait_for_log(LOG, RE): true once the file LOG matches RE; false after
# the test's timeout.
sub wait_for_log
{
    my ($log, $re) = @_;
    for (my $i = 0; $i < 10 * $PostgreSQL::Test::Utils::timeout_default; $i++)
    {
        return 1 if -f $log && slurp_file($log) =~ $re;
        select(undef, undef, undef, 0.1);
    }
    return 0;
}

# spawn_gateway(GATEWAY, DIR, NAME, READY, ARGS...): starts the gateway
# program GATEWAY with ARGS, its stdout in DIR/NAME.out and its log in
# DIR/NAME.log, and waits until the log matches READY (it logs "serving
# database" once it listens and has checked the database).  Its sessions'
# application_name is then its own (libpq's fallback).  Returns (the
# IPC::Run harness, the log's path).
# Every gateway spawn_gateway started (the END block below stops them).
our @spawned;

sub spawn_gateway
{
    my ($gw, $dir, $name, $ready, @args) = @_;
    my $log = "$dir/$name.log";
    local $ENV{PGAPPNAME};
    delete $ENV{PGAPPNAME};
    my $h = IPC::Run::start([ $gw, @args ], '>', "$dir/$name.out", '2>', $log);
    push @spawned, $h;
    wait_for_log($log, $ready) or die "gateway $name did not start: " . slurp_file($log);
    return ($h, $log);
}

# Gateways still running when the test ends, by a die midway mostly: a
# gateway outlives its test otherwise (its server is gone, but it keeps
# its port and retries its sessions).
END
{
    for my $h (@spawned)
    {
        eval { $h->kill_kill(grace => 5) if $h->pumpable; };
    }
}

1;
