# synchronous_commit = off: a commit is visible before it is durable.  A
# record a reader returned must survive a crash (else its offset would be
# handed out again to another record, behind the reader's back), so readers
# flush WAL up to the newest producing commit before returning records.
# What is not promised: a record nobody read yet may be lost in a crash
# with synchronous_commit = off, and its offset reused.
#
# Also: after a restart, a role that may only produce (no consume privilege)
# can still produce; counter recovery reads no user data through SQL.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('async');
$node->init;
# A long WAL writer delay keeps async commits unflushed for a while.
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_eventlog'
wal_writer_delay = 10s
wal_writer_flush_after = 0
});
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION pg_eventlog;
    SELECT eventlog.create_topic('async', 1);
    SELECT eventlog.produce('async', NULL, '"durable"');
    CHECKPOINT;
});

# The WAL position inside the producing transaction, after its record and
# before its commit record: other transactions (the notifier's, for one)
# may write WAL after the commit, so a position taken after it could lie
# beyond what the reader must flush.
my $lsn_after_commit = $node->safe_psql('postgres', q{
    BEGIN;
    SET LOCAL synchronous_commit = off;
    SELECT eventlog.produce('async', NULL, '"async, read"');
    SELECT pg_current_wal_insert_lsn();
    COMMIT;
});
$lsn_after_commit = (split /\n/, $lsn_after_commit)[-1];
is($node->safe_psql('postgres', q{SELECT string_agg(value #>> '{}', ',' ORDER BY offset_id) FROM eventlog.read('async', 0, 0)}),
   'durable,async, read', 'a reader returns the async commit');
is($node->safe_psql('postgres', "SELECT pg_current_wal_flush_lsn() >= '$lsn_after_commit'"),
   't', 'and WAL is flushed past that commit before the reader got it');

# Crash at once: the record that was read survives.
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', q{SELECT string_agg(value #>> '{}', ',' ORDER BY offset_id) FROM eventlog.read('async', 0, 0)}),
   'durable,async, read', 'the record a reader returned survived the crash');
is($node->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('async', NULL, '"next"')}),
   '2', 'and its offset was not handed out again');

# A role that may only produce (no consume, no table privileges) works
# right after a restart, when its produce has to recover the counter.
$node->safe_psql('postgres', q{
    CREATE ROLE writer LOGIN;
    SELECT eventlog.grant('async', 'produce', 'writer');
});
$node->restart;
is($node->safe_psql('postgres', q{SELECT offset_id FROM eventlog.produce('async', NULL, '"by writer"')},
                    extra_params => [ '-U', 'writer' ]),
   '3', 'a produce-only role produces after a restart (counter recovery needs no consume)');
my ($ret, $out, $err) = $node->psql('postgres', q{SELECT * FROM eventlog.read('async', 0, 0)},
                                    extra_params => [ '-U', 'writer' ]);
like($err, qr/permission denied to consume from topic "async"/, 'but it cannot read');

$node->stop;
done_testing();
