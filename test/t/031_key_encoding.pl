# Keys hash as the bytes a Kafka client would send (issue 13, item 19): in a
# SQL_ASCII database, whose text has no declared encoding, the stored bytes
# as they are (before the fix, a key that is not valid UTF-8 was refused);
# in a LATIN1 database, the key's UTF-8 encoding.  The expected hashes are
# computed here, independently, with Kafka's murmur2.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# Kafka's Utils.murmur2 on 32-bit unsigned arithmetic, returned signed.
sub mul32
{
    my ($a, $b) = @_;
    return (($a * ($b & 0xffff)) + ((($a * ($b >> 16)) & 0xffff) << 16)) & 0xffffffff;
}

sub murmur2
{
    my @b = unpack('C*', shift);
    my ($m, $len) = (0x5bd1e995, scalar @b);
    my $h = (0x9747b28c ^ $len) & 0xffffffff;
    my $n = int($len / 4);
    for my $i (0 .. $n - 1)
    {
        my $k = $b[4 * $i] | ($b[4 * $i + 1] << 8) | ($b[4 * $i + 2] << 16) | ($b[4 * $i + 3] << 24);
        $k = mul32($k, $m);
        $k ^= $k >> 24;
        $k = mul32($k, $m);
        $h = mul32($h, $m) ^ $k;
    }
    my $rest = $len % 4;
    $h ^= $b[4 * $n + 2] << 16 if $rest >= 3;
    $h ^= $b[4 * $n + 1] << 8 if $rest >= 2;
    $h = mul32($h ^ $b[4 * $n], $m) if $rest >= 1;
    $h ^= $h >> 13;
    $h = mul32($h, $m);
    $h ^= $h >> 15;
    return $h >= 2**31 ? $h - 2**32 : $h;
}

sub partition_for { return (((murmur2($_[0]) & 0x7fffffff)) % $_[1]); }

# The Perl murmur2 agrees with Kafka's own test vectors.
is(murmur2('21'), -973932308, 'murmur2("21") as in Kafka');
is(murmur2('foobar'), -790332482, 'murmur2("foobar") as in Kafka');

my $node = PostgreSQL::Test::Cluster->new('encodings');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_eventlog'");
$node->start;

# Each database: a key given as an escape (so no client conversion is
# involved) and the bytes a Kafka client would hash for it.
my @cases = (
    [ 'SQL_ASCII', q{E'k\\xff\\x80z'}, "k\xff\x80z", 'a key that is not valid UTF-8' ],
    [ 'SQL_ASCII', q{E'caf\\xc3\\xa9'}, "caf\xc3\xa9", 'a UTF-8 key' ],
    [ 'LATIN1', q{E'caf\\xe9'}, "caf\xc3\xa9", 'a LATIN1 key, hashed as its UTF-8 bytes' ],
    [ 'UTF8', q{E'caf\\xc3\\xa9'}, "caf\xc3\xa9", 'a UTF-8 key' ],
);
my %made;
for my $case (@cases)
{
    my ($enc, $literal, $bytes, $what) = @$case;
    my $db = lc "db_$enc";
    unless ($made{$db}++)
    {
        $node->safe_psql('postgres',
            "CREATE DATABASE $db ENCODING '$enc' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
        $node->safe_psql($db, q{
            CREATE EXTENSION pg_eventlog;
            SELECT eventlog.create_topic('t', 7);
        });
    }
    my ($ret, $out, $err) = $node->psql($db, "SELECT eventlog.murmur2($literal)");
    is($out, murmur2($bytes), "$enc: murmur2 of $what") or diag($err);
    ($ret, $out, $err) = $node->psql($db, "SELECT eventlog.partition_for_key($literal, 7)");
    is($out, partition_for($bytes, 7), "$enc: partition_for_key of $what") or diag($err);
    ($ret, $out, $err) = $node->psql($db, "SELECT partition FROM eventlog.produce('t', $literal, '1')");
    is($out, partition_for($bytes, 7), "$enc: produce puts $what where Kafka would") or diag($err);
    is($node->safe_psql($db, "SELECT count(*) FROM eventlog.read('t', " . partition_for($bytes, 7)
                        . ", 0) WHERE key = $literal"),
       '1', "$enc: the record reads back with its key");
}

$node->stop;
done_testing();
