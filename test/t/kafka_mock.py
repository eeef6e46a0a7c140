#!/usr/bin/python3
# kafka_mock.py: reads the relay's records back from librdkafka's mock
# Kafka cluster (kafka_mock.c) for 086_relay.pl, through confluent_kafka.
#
#   kafka_mock.py serve          a mock cluster of 3 brokers inside a
#                                producer (test.mock.num.brokers), printing
#                                its bootstrap servers until stdin closes;
#                                librdkafka 2.0's mock answers no CreateTopics,
#                                so 086 uses kafka_mock.c, which creates them
#   kafka_mock.py dump BOOTSTRAP TOPIC...
#                                prints every record of the topics, one line
#                                each: topic partition offset key value
#                                headers, bytes in hex ("-" for NULL),
#                                headers name=hex separated by ","
#   kafka_mock.py create BOOTSTRAP TOPIC PARTITIONS
#                                creates a topic (the partition-count test)
#   kafka_mock.py committed BOOTSTRAP TOPIC...
#                                as dump, as a read_committed consumer
#                                (086_relay_exactly_once.pl), which ends a
#                                partition at its end or after 3 s without a
#                                record: against pg_eventlog's gateway, a
#                                partition that ends in rolled-back offsets
#                                never reports its end (no abort marker
#                                fills them)
#   kafka_mock.py txn-probe BOOTSTRAP TOPIC
#                                what a read_committed consumer sees of a
#                                committed, an aborted, a fenced and a
#                                committed transaction of partition 0:
#                                the values it gets, one line
import os
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def hexa(b):
    return '-' if b is None else (b.hex() or '""')


def serve():
    p = Producer({'test.mock.num.brokers': 3})
    md = p.list_topics(timeout=10)
    print(','.join('%s:%d' % (b.host, b.port) for b in md.brokers.values()), flush=True)
    sys.stdin.read()


def dump(bootstrap, topics):
    # auto.offset.reset=error: a partition whose start is gone must fail the
    # dump, not read as empty (the default, latest, would skip to its end).
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'dump',
                  'enable.auto.commit': False, 'enable.partition.eof': True,
                  'auto.offset.reset': 'error'})
    md = c.list_topics(timeout=10)
    tps = [TopicPartition(t, p, 0) for t in topics for p in sorted(md.topics[t].partitions)]
    # librdkafka 2.0's mock keeps at most 5 MiB (or 100,000 message sets)
    # per partition and drops the oldest message sets beyond that
    # (rdkafka_mock.c, rd_kafka_mock_msgset_new): say so rather than dump a
    # partition that lost its start.
    for tp in tps:
        low, high = c.get_watermark_offsets(tp, timeout=10, cached=False)
        if low != 0:
            sys.exit('dump: %s [%d] starts at offset %d, not 0: the mock cluster dropped its oldest records'
                     % (tp.topic, tp.partition, low))
    c.assign(tps)
    left = set((tp.topic, tp.partition) for tp in tps)
    recs = []
    while left:
        m = c.poll(10)
        if m is None:
            sys.exit('dump: timed out')
        if m.error():
            if m.error().code() == -191:    # _PARTITION_EOF
                left.discard((m.topic(), m.partition()))
                continue
            sys.exit('dump: %s' % m.error())
        hs = ','.join('%s=%s' % (n, hexa(v)) for n, v in (m.headers() or []))
        recs.append((m.topic(), m.partition(), m.offset(), hexa(m.key()), hexa(m.value()), hs or '-'))
    c.close()
    for r in sorted(recs, key=lambda r: (r[0], r[1], r[2])):
        print(' '.join(str(x) for x in r))
    # Debian 12's confluent_kafka 1.7.0 frees a NULL header value's None
    # once too often and aborts at exit: leave before the interpreter's
    # finalization.
    sys.stdout.flush()
    os._exit(0)


def committed(bootstrap, topics):
    # COMMITTED_ENDS="topic/partition=offset,..." (086 against the gateway,
    # whose database tells each partition's last committed offset): a
    # partition is read up to that record (-1: empty), however slow the
    # machine; without it, up to 3 s without a record.
    ends = {}
    for kv in filter(None, os.environ.get('COMMITTED_ENDS', '').split(',')):
        tp, off = kv.rsplit('=', 1)
        t, p = tp.rsplit('/', 1)
        ends[(t, int(p))] = int(off)
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'committed',
                  'enable.auto.commit': False, 'enable.partition.eof': True,
                  'auto.offset.reset': 'error', 'isolation.level': 'read_committed'})
    md = c.list_topics(timeout=10)
    tps = [TopicPartition(t, p, 0) for t in topics for p in sorted(md.topics[t].partitions)]
    c.assign(tps)
    left = set((tp.topic, tp.partition) for tp in tps)
    if ends:
        left = set(k for k in left if ends.get(k, -1) >= 0)
    deadline = time.monotonic() + 120
    recs = []
    while left:
        m = c.poll(1 if ends else 3)
        if m is None:
            if ends and time.monotonic() < deadline:
                continue
            break
        if m.error():
            if m.error().code() == -191:    # _PARTITION_EOF
                left.discard((m.topic(), m.partition()))
                continue
            sys.exit('committed: %s' % m.error())
        hs = ','.join('%s=%s' % (n, hexa(v)) for n, v in (m.headers() or []))
        recs.append((m.topic(), m.partition(), m.offset(), hexa(m.key()), hexa(m.value()), hs or '-'))
        if ends and m.offset() >= ends.get((m.topic(), m.partition()), -1):
            left.discard((m.topic(), m.partition()))
    c.close()
    for r in sorted(recs, key=lambda r: (r[0], r[1], r[2])):
        print(' '.join(str(x) for x in r))
    sys.stdout.flush()
    os._exit(0)


def txn_probe(bootstrap, topic):
    def producer():
        return Producer({'bootstrap.servers': bootstrap, 'transactional.id': 'txn-probe',
                         'log_level': 0})
    p = producer()
    p.init_transactions(10)
    p.begin_transaction()
    p.produce(topic, b'committed-1', partition=0)
    p.commit_transaction(10)
    p.begin_transaction()
    p.produce(topic, b'aborted', partition=0)
    p.flush(10)
    p.abort_transaction(10)
    # A producer that dies with its transaction open: the next one's
    # init_transactions must abort it.
    if os.fork() == 0:
        q = producer()
        q.init_transactions(10)
        q.begin_transaction()
        q.produce(topic, b'fenced', partition=0)
        q.flush(10)
        os._exit(0)
    os.wait()
    p = producer()
    p.init_transactions(10)
    p.begin_transaction()
    p.produce(topic, b'committed-2', partition=0)
    p.commit_transaction(10)
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'probe',
                  'enable.partition.eof': True, 'isolation.level': 'read_committed'})
    c.assign([TopicPartition(topic, 0, 0)])
    seen = []
    while True:
        m = c.poll(5)
        if m is None or m.error():
            break
        seen.append(m.value().decode())
    print(' '.join(seen), flush=True)
    os._exit(0)


def create(bootstrap, topic, n):
    a = AdminClient({'bootstrap.servers': bootstrap})
    for f in a.create_topics([NewTopic(topic, int(n), 1)]).values():
        f.result()


if sys.argv[1] == 'serve':
    serve()
elif sys.argv[1] == 'dump':
    dump(sys.argv[2], sys.argv[3:])
elif sys.argv[1] == 'committed':
    committed(sys.argv[2], sys.argv[3:])
elif sys.argv[1] == 'txn-probe':
    txn_probe(sys.argv[2], sys.argv[3])
else:
    create(*sys.argv[2:5])
