#!/usr/bin/python3
"""librdkafka's transactional producer (confluent_kafka) against the
gateway, for test/t/081_kafka_txn.pl.  Usage:

  kafka_txn_client.py ADDR COMMAND ARGS...

Commands (each prints lines the test matches):
  basic TOPIC TID       commit 10 records, abort 10, commit 5 (the sequence
                        numbers go on after the abort), then read the topic
                        with a read_committed consumer: "seen P O V" lines
  fence TOPIC TID       producer A opens a transaction, producer B inits the
                        same id (fencing A), commits; A's commit fails
  timeout TOPIC TID     a transaction outlives transaction.timeout.ms: its
                        commit fails; after an abort the next one commits
  lso TOPIC TID         an open transaction holds read_committed readers
                        back, also from records committed after it
  multi TOPIC TID       (several gateways) one record to each of 4
                        partitions in one transaction: "commit error ..."
                        or "committed", then "aborted" after an abortable error
  ctp IN OUT GROUP TID PARTS FLAGFILE
                        consume-transform-produce, exactly once: every
                        record of IN as b"x"+value to OUT (same partition),
                        the group's positions in the same transactions; in
                        the 6th transaction, after producing, it prints
                        "waiting" and waits for FLAGFILE (the test kills
                        and restarts the gateway meanwhile)
"""
import os
import sys
import time

from confluent_kafka import (Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)

addr = sys.argv[1]
cmd = sys.argv[2]
args = sys.argv[3:]


def out(*a):
    print(*a, flush=True)


def producer(tid, **extra):
    conf = {'bootstrap.servers': addr, 'transactional.id': tid,
            'linger.ms': 5, 'reconnect.backoff.ms': 50,
            'reconnect.backoff.max.ms': 200}
    conf.update(extra)
    return Producer(conf)


def err_of(e):
    return e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None


def describe(e):
    k = err_of(e)
    if k is None:
        return 'error %s' % e
    return 'error %s fatal=%d abortable=%d retriable=%d' % (
        k.name(), k.fatal(), k.txn_requires_abort(), k.retriable())


def read_committed(topic, parts, idle=3.0):
    c = Consumer({'bootstrap.servers': addr, 'group.id': 'rc-' + topic,
                  'isolation.level': 'read_committed',
                  'enable.auto.commit': False,
                  'enable.partition.eof': True})
    c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    seen = []
    eof = set()
    deadline = time.time() + 60
    last = time.time()
    while time.time() < deadline:
        m = c.poll(0.2)
        if m is None:
            if len(eof) == parts and time.time() - last > idle:
                break
            continue
        last = time.time()
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                eof.add(m.partition())
            continue
        seen.append((m.partition(), m.offset(), m.value().decode()))
    c.close()
    return seen


def cmd_basic(topic, tid):
    p = producer(tid)
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, b'c%d' % i, partition=i % 2)
    p.commit_transaction(30)
    out('committed 10')
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, b'a%d' % i, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    out('aborted 10')
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, b'd%d' % i, partition=i % 2)
    p.commit_transaction(30)
    out('committed 5')
    for part, off, val in read_committed(topic, 2):
        out('seen %d %d %s' % (part, off, val))


def cmd_fence(topic, tid):
    a = producer(tid)
    a.init_transactions(30)
    a.begin_transaction()
    a.produce(topic, b'f-a', partition=0)
    a.flush(30)
    out('a produced')
    b = producer(tid)
    b.init_transactions(30)
    out('b initialised')
    b.begin_transaction()
    b.produce(topic, b'f-b', partition=0)
    b.commit_transaction(30)
    out('b committed')
    try:
        a.produce(topic, b'f-a2', partition=0)
        a.commit_transaction(30)
        out('a committed')
    except KafkaException as e:
        out('a commit: ' + describe(e))


def cmd_timeout(topic, tid):
    p = producer(tid, **{'transaction.timeout.ms': 2000, 'message.timeout.ms': 2000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b't-x', partition=0)
    p.flush(30)
    out('produced')
    time.sleep(4)
    try:
        p.commit_transaction(30)
        out('committed t-x')
    except KafkaException as e:
        out('commit: ' + describe(e))
        k = err_of(e)
        if k is not None and k.txn_requires_abort():
            p.abort_transaction(30)
            out('aborted')
    p.begin_transaction()
    p.produce(topic, b't-y', partition=0)
    p.commit_transaction(30)
    out('committed t-y')


def cmd_lso(topic, tid):
    p = producer(tid)
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b'l-open', partition=0)
    p.flush(30)
    plain = Producer({'bootstrap.servers': addr, 'linger.ms': 0})
    plain.produce(topic, b'l-after', partition=0)
    plain.flush(30)
    out('open and after produced')
    for part, off, val in read_committed(topic, 1, idle=2.0):
        out('while open: %s' % val)
    p.commit_transaction(30)
    out('committed')
    for part, off, val in read_committed(topic, 1, idle=1.0):
        out('after commit: %d %s' % (off, val))


def cmd_multi(topic, tid):
    p = producer(tid)
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, b'm%d' % i, partition=i)
    try:
        p.commit_transaction(30)
        out('committed')
    except KafkaException as e:
        out('commit ' + describe(e))
        k = err_of(e)
        if k is not None and k.txn_requires_abort():
            p.abort_transaction(30)
            out('aborted')


def cmd_ctp(src, dst, group, tid, parts, flagfile):
    parts = int(parts)
    c = Consumer({'bootstrap.servers': addr, 'group.id': group,
                  'isolation.level': 'read_committed',
                  'enable.auto.commit': False, 'enable.partition.eof': True,
                  'reconnect.backoff.ms': 50, 'reconnect.backoff.max.ms': 200})
    tps = [TopicPartition(src, p) for p in range(parts)]

    def rewind():
        # The group's committed positions: what the committed transactions
        # consumed.  Retried while the gateway is away.
        while True:
            try:
                committed = c.committed(tps, 10)
                break
            except KafkaException as e:
                out('committed(): ' + describe(e))
                time.sleep(0.5)
        c.assign([TopicPartition(src, t.partition, t.offset if t.offset >= 0 else 0)
                  for t in committed])

    p = producer(tid)
    p.init_transactions(60)
    rewind()
    ntxn = 0
    eof = set()
    waited = False
    restarts = 0
    while True:
        batch = []
        while len(batch) < 10:
            m = c.poll(0.2)
            if m is None:
                break
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                continue
            eof.discard(m.partition())
            batch.append(m)
        if not batch:
            if len(eof) == parts:
                break
            continue
        try:
            p.begin_transaction()
            for m in batch:
                p.produce(dst, b'x' + m.value(), partition=m.partition())
            ntxn += 1
            if ntxn == 6 and not waited:
                p.flush(30)
                out('waiting')
                while not os.path.exists(flagfile):
                    time.sleep(0.05)
                waited = True
            offsets = {}
            for m in batch:
                offsets[m.partition()] = m.offset() + 1
            p.send_offsets_to_transaction(
                [TopicPartition(src, q, o) for q, o in offsets.items()],
                c.consumer_group_metadata(), 30)
            p.commit_transaction(30)
        except KafkaException as e:
            out('txn %d: %s' % (ntxn, describe(e)))
            k = err_of(e)
            aborted = False
            if k is not None and k.txn_requires_abort():
                try:
                    p.abort_transaction(30)
                    aborted = True
                except KafkaException as e2:
                    out('abort: ' + describe(e2))
            if not aborted:
                # Fatal, or the abort failed: a new producer (re-init).
                restarts += 1
                p = producer(tid)
                while True:
                    try:
                        p.init_transactions(30)
                        break
                    except KafkaException as e3:
                        out('init: ' + describe(e3))
                        time.sleep(0.5)
            rewind()
            eof = set()
    out('done transactions=%d restarts=%d' % (ntxn, restarts))


{'basic': cmd_basic, 'fence': cmd_fence, 'timeout': cmd_timeout,
 'lso': cmd_lso, 'multi': cmd_multi, 'ctp': cmd_ctp}[cmd](*args)
