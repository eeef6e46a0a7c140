#!/usr/bin/python3
"""Raw InitProducerId and idempotent Produce requests for
test/t/080_kafka_idempotent.pl: what a real client sends only by accident
(a retry of an older batch, a gap, a stale or absurd epoch, a producer id
never handed out, a sequence near INT32_MAX), built byte by byte.  Usage:

  kafka_idempotent_probe.py HOST PORT init VERSION [TXNID]
      prints "error=E pid=P epoch=N rest=R"
  kafka_idempotent_probe.py HOST PORT send TOPIC PARTITION PID EPOCH SEQ COUNT [VERSION]
      one batch of COUNT records (values "SEQ+i") with that producer id,
      epoch and base sequence; prints "error=E base=B msg=M"
  kafka_idempotent_probe.py HOST PORT pipelined TOPIC PARTITION PID EPOCH SEQ...
      one request per SEQ (a batch of 5 records from it), all sent back to
      back in one write, so that each is whole in the gateway's socket
      before the first is answered (produce_batch.c may commit them in one
      transaction); prints "SEQ: error=E base=B" per response, in order
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kafka_probe import admin_call, connect, enc_str, enc_tags, read_frame, send  # noqa: E402
from kafka_produce_probe import crc32c, exchange, parse_response, produce_request, record  # noqa: E402


def idem_batch(values, pid, epoch, seq, base_ts=1700000000000):
    recs = b''.join(record(i, None, v) for i, v in enumerate(values))
    after = struct.pack('>hiqqqhii', 0, len(values) - 1, base_ts, base_ts, pid, epoch, seq,
                        len(values)) + recs
    length = 4 + 1 + 4 + len(after)
    return struct.pack('>qiibI', 0, length, -1, 2, crc32c(after)) + after


def cmd_init(host, port, version, txn=None):
    flex = version >= 2
    body = enc_str(txn, flex) + struct.pack('>i', 60000)
    if version >= 3:
        body += struct.pack('>qh', -1, -1)
    body += enc_tags(flex)
    r = admin_call(host, port, 22, version, flex, body)
    if r is None:
        print('closed')
        return
    r.i32()
    err = r.i16()
    pid = struct.unpack('>q', r.take(8))[0]
    epoch = r.i16()
    r.tags(flex)
    print('error=%d pid=%d epoch=%d rest=%d' % (err, pid, epoch, r.rest()))


def cmd_send(host, port, topic, partition, pid, epoch, seq, count, version=9):
    values = [b'%d' % ((seq + i) % 2**31) for i in range(count)]
    s = connect(host, port)
    got = exchange(s, version, produce_request(version, [(topic, [(partition, idem_batch(
        values, pid, epoch, seq))])]))
    if got is None:
        print('closed')
        return
    corr, parts, throttle, rest = got
    name, idx, err, base, lso, rec_errors, msg = parts[0]
    print('error=%d base=%d msg=%s' % (err, base, msg))


def cmd_pipelined(host, port, topic, partition, pid, epoch, seqs):
    reqs = []
    for i, seq in enumerate(seqs):
        values = [b'%d' % (seq + j) for j in range(5)]
        reqs.append(produce_request(9, [(topic, [(partition, idem_batch(values, pid, epoch, seq))])],
                                    corr=100 + i))
    s = connect(host, port)
    send(s, b''.join(reqs))
    for i, seq in enumerate(seqs):
        data = read_frame(s)
        if data is None:
            print('%d: closed' % seq)
            return
        corr, parts, _, _ = parse_response(data, 9)
        print('%d: error=%d base=%d%s' % (seq, parts[0][2], parts[0][3],
                                          '' if corr == 100 + i else ' corr=%d' % corr))


def main():
    host, port, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    a = sys.argv[4:]
    if cmd == 'init':
        cmd_init(host, port, int(a[0]), a[1] if len(a) > 1 else None)
    elif cmd == 'send':
        cmd_send(host, port, a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]), int(a[5]),
                 int(a[6]) if len(a) > 6 else 9)
    elif cmd == 'pipelined':
        cmd_pipelined(host, port, a[0], int(a[1]), int(a[2]), int(a[3]), [int(x) for x in a[4:]])
    else:
        sys.exit('unknown command ' + cmd)


if __name__ == '__main__':
    main()
