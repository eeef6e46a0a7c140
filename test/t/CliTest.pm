# What the pg_eventlog command's TAP tests (test/t/078_cli.pl and 079_cli_groups_export.pl.pl) share: a
# preloaded node with the extension, and running the installed command
# ($(pg_config --bindir)/pg_eventlog) against it.  prove finds this module
# through -I test/t (test/run).
package CliTest;

use strict;
use warnings;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;

our @EXPORT = qw(cli_node cli cli_path one_line_error);

my ($node, $path);

# cli_node(NAME): starts a node with pg_eventlog preloaded and created.
sub cli_node
{
    my ($name) = @_;
    # The command's sessions are then named by libpq's fallback,
    # "pg_eventlog", which the tests look for in pg_stat_activity.
    delete $ENV{PGAPPNAME};
    $node = PostgreSQL::Test::Cluster->new($name);
    $node->init;
    $node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
    $node->start;
    $node->safe_psql('postgres', 'CREATE EXTENSION pg_eventlog');
    $path = $node->config_data('--bindir') . '/pg_eventlog';
    return $node;
}

sub cli_path { return $path; }

# cli([\STDIN,] ARGS...): runs the installed command with -d (the node's
# postgres database) before ARGS, with the test's timeout; returns (exit
# status, stdout, stderr).  An argument list starting with '--no-d' runs it
# without -d.
sub cli
{
    my $in = ref $_[0] eq 'SCALAR' ? ${ shift() } : '';
    my @args = @_;
    if (@args && $args[0] eq '--no-d') { shift @args; }
    else { unshift @args, '-d', $node->connstr('postgres'); }
    my ($out, $err) = ('', '');
    IPC::Run::run([ $path, @args ], '<', \$in, '>', \$out, '2>', \$err,
        IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
    my $rc = $? & 127 ? 128 + ($? & 127) : $? >> 8;
    return ($rc, $out, $err);
}

# one_line_error(ERR, RE): ERR is exactly one line "pg_eventlog: ..." matching RE.
sub one_line_error
{
    my ($err, $re) = @_;
    return $err =~ /\Apg_eventlog: [^\n]*\n\z/ && $err =~ $re;
}

1;
