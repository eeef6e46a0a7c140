#!/usr/bin/python3
"""librdkafka's transactional producer (confluent_kafka) against a gateway
with a small --max-transactional-ids, for test/t/093_kafka_txn_registry.pl.
Usage:

  kafka_txn_registry_client.py ADDR COMMAND ARGS...

Commands (each prints lines the test matches):
  commit TOPIC TID[:S]...
                        for each id in turn, a new producer: init (within
                        S seconds, default 10), one transaction with one
                        record (the id), commit; "committed TID" or
                        "TID: error ..."
  leave TOPIC TID...     for each id, a new producer with transaction.timeout.ms
                        1000: init, a transaction with one record, flushed,
                        "open TID"; then the process ends without
                        committing or aborting (os._exit)
  hold TOPIC TID FLAG1 FLAG2
                        init, open a transaction with a record, print
                        "open"; at FLAG1 commit ("committed"); at FLAG2
                        one more transaction ("again: committed", after
                        "again: error ..." and an abort if the gateway
                        evicted the id meanwhile)
"""
import os
import sys
import time

from confluent_kafka import KafkaError, KafkaException, Producer

addr = sys.argv[1]
cmd = sys.argv[2]
args = sys.argv[3:]


def out(*a):
    print(*a, flush=True)


def producer(tid, **extra):
    return Producer({'bootstrap.servers': addr, 'transactional.id': tid,
                     'linger.ms': 5, 'reconnect.backoff.ms': 50,
                     'reconnect.backoff.max.ms': 200, **extra})


def describe(e):
    k = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
    if k is None:
        return 'error %s' % e
    return 'error %s fatal=%d abortable=%d retriable=%d' % (
        k.name(), k.fatal(), k.txn_requires_abort(), k.retriable())


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.1)


def one(p, topic, value):
    p.begin_transaction()
    p.produce(topic, value, partition=0)
    p.commit_transaction(30)


def cmd_commit(topic, *tids):
    for arg in tids:
        tid, _, secs = arg.partition(':')
        try:
            p = producer(tid)
            p.init_transactions(float(secs or 10))
            one(p, topic, tid.encode())
            out('committed %s' % tid)
        except KafkaException as e:
            out('%s: %s' % (tid, describe(e)))


def cmd_hold(topic, tid, flag1, flag2):
    p = producer(tid)
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b'held', partition=0)
    p.flush(30)
    out('open')
    wait_for(flag1)
    p.commit_transaction(30)
    out('committed')
    wait_for(flag2)
    try:
        one(p, topic, b'again')
    except KafkaException as e:
        out('again: ' + describe(e))
        p.abort_transaction(30)
        one(p, topic, b'again')
    out('again: committed')


def cmd_leave(topic, *tids):
    keep = []
    for tid in tids:
        p = producer(tid, **{'transaction.timeout.ms': 1000})
        p.init_transactions(10)
        p.begin_transaction()
        p.produce(topic, tid.encode(), partition=0)
        p.flush(10)
        keep.append(p)
        out('open %s' % tid)
    os._exit(0)


{'commit': cmd_commit, 'hold': cmd_hold, 'leave': cmd_leave}[cmd](*args)
