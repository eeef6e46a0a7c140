#!/usr/bin/python3
# kafka_source.py: the Kafka side of 087_relay_from_kafka.pl, through
# confluent_kafka (librdkafka).
#
#   kafka_source.py produce BOOTSTRAP TOPIC PARTITIONS FIRST COUNT [commit|abort]
#       produces records FIRST..FIRST+COUNT-1, record i to partition
#       i % PARTITIONS, with keys, values and headers that are NULL, empty
#       or bytes (0x00 and 0xff among them), names repeated, and the
#       timestamp 1700000000000 + i; with commit or abort, inside a Kafka
#       transaction that ends so
#   kafka_source.py dump BOOTSTRAP TOPIC...
#       prints every record of the topics, one line each: topic partition
#       offset key value headers timestamp, bytes in hex ("-" for NULL,
#       '""' for empty), headers name=hex separated by "," ("-": none);
#       committed records only (read_committed)
import os
import sys

from confluent_kafka import Consumer, Producer, TopicPartition


def hexa(b):
    return '-' if b is None else (b.hex() or '""')


def record(i):
    key = None if i % 5 == 0 else b'' if i % 7 == 0 else b'k%d\x00\xff' % (i % 13)
    value = None if i % 6 == 0 else b'' if i % 11 == 0 else b'\x00v%d\xfe' % i
    if i % 2 == 0:
        headers = [('a', b'\x00\x01'), ('n', None), ('a', b''), ('\u00e9', b'%d' % i)]
    elif i % 3 == 0:
        headers = [('h', b'%d' % i)]
    else:
        headers = None
    return key, value, headers


def produce(bootstrap, topic, partitions, first, count, txn=None):
    conf = {'bootstrap.servers': bootstrap, 'enable.idempotence': True, 'linger.ms': 5}
    if txn:
        conf['transactional.id'] = 'kafka_source-%d' % os.getpid()
    p = Producer(conf)
    if txn:
        p.init_transactions(30)
        p.begin_transaction()
    failed = []
    for i in range(int(first), int(first) + int(count)):
        key, value, headers = record(i)
        kw = {'partition': i % int(partitions), 'timestamp': 1700000000000 + i,
              'on_delivery': lambda err, msg: err and failed.append(err)}
        if headers is not None:
            kw['headers'] = headers
        while True:
            try:
                p.produce(topic, value, key, **kw)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    if txn == 'commit':
        p.commit_transaction(30)
    elif txn == 'abort':
        p.flush(30)
        p.abort_transaction(30)
    else:
        p.flush(30)
    if failed:
        sys.exit('produce: %s' % failed[0])
    sys.stdout.flush()
    os._exit(0)


# Debian 12's confluent_kafka 1.7.0 releases None once too often for each
# NULL header value it returns: thousands of them would free None itself.
# These references keep it alive.
KEEP_NONE = [None] * 10000000


def dump(bootstrap, topics):
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'dump', 'isolation.level': 'read_committed',
                  'enable.auto.commit': False, 'enable.partition.eof': True})
    md = c.list_topics(timeout=10)
    tps = [TopicPartition(t, p, 0) for t in topics for p in sorted(md.topics[t].partitions)]
    c.assign(tps)
    left = set((tp.topic, tp.partition) for tp in tps)
    recs = []
    while left:
        m = c.poll(30)
        if m is None:
            sys.exit('dump: timed out')
        if m.error():
            if m.error().code() == -191:    # _PARTITION_EOF
                left.discard((m.topic(), m.partition()))
                continue
            sys.exit('dump: %s' % m.error())
        hs = ','.join('%s=%s' % (n, hexa(v)) for n, v in (m.headers() or []))
        recs.append((m.topic(), m.partition(), m.offset(), hexa(m.key()), hexa(m.value()), hs or '-',
                     m.timestamp()[1]))
    for r in sorted(recs, key=lambda r: (r[0], r[1], r[2])):
        print(' '.join(str(x) for x in r))
    # Debian 12's confluent_kafka 1.7.0 frees a NULL header value's None
    # once too often at exit: leave before the interpreter's finalization.
    sys.stdout.flush()
    os._exit(0)


if sys.argv[1] == 'produce':
    produce(*sys.argv[2:8])
else:
    dump(sys.argv[2], sys.argv[3:])
