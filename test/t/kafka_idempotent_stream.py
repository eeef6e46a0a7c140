#!/usr/bin/python3
"""A librdkafka idempotent producer (confluent_kafka, enable.idempotence)
streaming for test/t/080_kafka_idempotent.pl while the test kills and
restarts the gateway.  Usage:

  kafka_idempotent_stream.py ADDR TOPIC PARTITIONS ACKFILE STOPFILE

Produces values "0", "1", ... to partition i % PARTITIONS until STOPFILE
exists, then flushes.  Each acknowledged record is appended to ACKFILE as
"partition offset value" (flushed at once, so the test can watch progress);
each failed one as "error value name".  Prints "done produced=N acked=A
failed=F" at the end.
"""
import os
import sys

from confluent_kafka import Producer

addr, topic, nparts, ackfile, stopfile = sys.argv[1:6]
nparts = int(nparts)
acks = open(ackfile, 'a', buffering=1)
counts = {'acked': 0, 'failed': 0}
fatal = []


def report(err, msg):
    if err is None:
        counts['acked'] += 1
        acks.write('%d %d %s\n' % (msg.partition(), msg.offset(), msg.value().decode()))
    else:
        counts['failed'] += 1
        acks.write('error %s %s\n' % (msg.value().decode(), err.name()))


def on_error(err):
    if err.fatal():
        fatal.append(err)


p = Producer({'bootstrap.servers': addr, 'enable.idempotence': True, 'acks': 'all',
              'linger.ms': 5, 'batch.num.messages': 50, 'message.timeout.ms': 300000,
              'queue.buffering.max.messages': 2000, 'reconnect.backoff.ms': 50,
              'reconnect.backoff.max.ms': 200, 'error_cb': on_error})
n = 0
while not os.path.exists(stopfile) and not fatal:
    try:
        p.produce(topic, b'%d' % n, None, n % nparts, report)
        n += 1
    except BufferError:
        p.poll(0.05)
        continue
    if n % 20 == 0:
        p.poll(0.005)
p.flush(300)
for e in fatal:
    print('fatal %s %s' % (e.name(), e.str()))
print('done produced=%d acked=%d failed=%d' % (n, counts['acked'], counts['failed']))
