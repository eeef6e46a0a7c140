#!/usr/bin/python3
"""Raw Produce requests for test/t/062_kafka_produce.pl: what real clients
never send (every version, broken and hostile record batches, idempotent
and transactional batches, acks=0 on one connection), built here byte by
byte (RecordBatch v2 with its CRC-32C).  Usage:

  kafka_produce_probe.py HOST PORT versions TOPIC      (one record with each
                                                       Produce version 0-9)
  kafka_produce_probe.py HOST PORT hostile BINTOPIC JSONTOPIC
  kafka_produce_probe.py HOST PORT acks0 TOPIC
  kafka_produce_probe.py HOST PORT one TOPIC PARTITION [ACKS] (one record, v9)
  kafka_produce_probe.py HOST PORT pipelined TOPIC JSONTOPIC (requests sent
                                                       back to back)
  kafka_produce_probe.py HOST PORT mutations COUNT SEED TOPIC

It prints one line per finding; the TAP test compares them.
"""
import os
import random
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kafka_probe import Reader, connect, frame, header, read_frame, send, uvarint  # noqa: E402

# CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, by table.
_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(v):
    return uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


def vbytes(b):
    return varint(-1) if b is None else varint(len(b)) + b


def record(delta, key, value, headers=(), ts_delta=0):
    body = b'\x00' + varint(ts_delta) + varint(delta) + vbytes(key) + vbytes(value)
    body += varint(len(headers))
    for k, v in headers:
        body += vbytes(k) + vbytes(v)
    return varint(len(body)) + body


def batch(records, base_ts=1700000000000, producer_id=-1, attributes=0, magic=2,
          count=None, bad_crc=False, last_delta=None):
    """A RecordBatch of (key, value, headers) tuples."""
    recs = b''.join(record(i, *r) for i, r in enumerate(records))
    n = len(records) if count is None else count
    ld = len(records) - 1 if last_delta is None else last_delta
    after = struct.pack('>hiqqqhii', attributes, ld, base_ts, base_ts, producer_id,
                        0 if producer_id >= 0 else -1, 0 if producer_id >= 0 else -1, n) + recs
    crc = crc32c(after) ^ (1 if bad_crc else 0)
    length = 4 + 1 + 4 + len(after)
    return struct.pack('>qiibI', 0, length, -1, magic, crc) + after


def old_message_set(key, value):
    """A magic 1 message set of one message (as v0-2 clients send)."""
    msg = struct.pack('>bbq', 1, 0, 1700000000000) + \
        struct.pack('>i', len(key)) + key + struct.pack('>i', len(value)) + value
    msg = struct.pack('>I', 0) + msg    # CRC-32 not checked: refused first
    return struct.pack('>qi', 0, len(msg)) + msg


def produce_request(version, topics, acks=-1, txn=None, corr=1):
    """topics: [(name, [(partition, records bytes or None)])]."""
    flex = version >= 9
    body = b''
    if version >= 3:
        if txn is None:
            body += uvarint(0) if flex else struct.pack('>h', -1)
        else:
            body += uvarint(len(txn) + 1) + txn if flex else struct.pack('>h', len(txn)) + txn
    body += struct.pack('>hi', acks, 30000)
    body += uvarint(len(topics) + 1) if flex else struct.pack('>i', len(topics))
    for name, parts in topics:
        name = name.encode()
        body += uvarint(len(name) + 1) + name if flex else struct.pack('>h', len(name)) + name
        body += uvarint(len(parts) + 1) if flex else struct.pack('>i', len(parts))
        for idx, recs in parts:
            body += struct.pack('>i', idx)
            if recs is None:
                body += uvarint(0) if flex else struct.pack('>i', -1)
            else:
                body += uvarint(len(recs) + 1) + recs if flex else struct.pack('>i', len(recs)) + recs
            if flex:
                body += b'\x00'
        if flex:
            body += b'\x00'
    if flex:
        body += b'\x00'
    return frame(header(0, version, corr, flex) + body)


def nullable_string(r, flex):
    n = r.uvarint() - 1 if flex else r.i16()
    return None if n < 0 else r.take(n).decode()


def parse_response(data, version):
    """[(topic, partition, error, base, lso, [(index, msg)], errmsg)], throttle, rest."""
    flex = version >= 9
    r = Reader(data)
    corr = r.i32()
    r.tags(flex)
    out = []
    for _ in range(r.array_len(flex)):
        name = r.string(flex)
        for _ in range(r.array_len(flex)):
            idx, err = r.i32(), r.i16()
            base = struct.unpack('>q', r.take(8))[0]
            lso = None
            if version >= 2:
                struct.unpack('>q', r.take(8))
            if version >= 5:
                lso = struct.unpack('>q', r.take(8))[0]
            rec_errors, msg = [], None
            if version >= 8:
                for _ in range(r.array_len(flex)):
                    bi = r.i32()
                    rec_errors.append((bi, nullable_string(r, flex)))
                    r.tags(flex)
                msg = nullable_string(r, flex)
            r.tags(flex)
            out.append((name, idx, err, base, lso, rec_errors, msg))
        r.tags(flex)
    throttle = r.i32() if version >= 1 else None
    r.tags(flex)
    return corr, out, throttle, r.rest()


def exchange(s, version, req):
    if not send(s, req):
        return None
    try:
        data = read_frame(s)
    except (ConnectionResetError, OSError):
        return None
    return None if data is None else parse_response(data, version)


def show(label, got):
    if got is None:
        print('%s: closed' % label)
        return
    corr, parts, throttle, rest = got
    for name, idx, err, base, lso, rec_errors, msg in parts:
        line = '%s: %s/%d error=%d' % (label, name, idx, err)
        if err == 0:
            line += ' base=%d' % base
        if rec_errors:
            line += ' record_errors=%s' % ','.join(str(i) for i, _ in rec_errors)
        if msg is not None:
            line += ' msg=%s' % msg
        print(line)
    if rest:
        print('%s: %d bytes left over' % (label, rest))


def cmd_versions(host, port, topic):
    s = connect(host, port)
    for v in range(10):
        b = batch([(b'k%d' % v, b'v%d' % v, [(b'version', b'%d' % v)])])
        got = exchange(s, v, produce_request(v, [(topic, [(0, b)])], corr=100 + v))
        if got is None:
            print('v%d: closed' % v)
            return
        corr, parts, throttle, rest = got
        name, idx, err, base, lso, rec_errors, msg = parts[0]
        print('v%d: corr=%d error=%d base=%d lso=%s throttle=%s rest=%d'
              % (v, corr, err, base, lso, throttle, rest))


def cmd_hostile(host, port, bintopic, jsontopic):
    s = connect(host, port)
    good = batch([(b'k', b'v', [])])
    cases = [
        ('truncated batch', 9, [(bintopic, [(0, good[:40])])]),
        ('cut records', 9, [(bintopic, [(0, good[:-3])])]),
        ('bad crc', 9, [(bintopic, [(0, batch([(b'k', b'v', [])], bad_crc=True))])]),
        ('absurd count', 9, [(bintopic, [(0, batch([(b'k', b'v', [])], count=0x7fffffff,
                                                    last_delta=0x7ffffffe))])]),
        ('negative count', 9, [(bintopic, [(0, batch([(b'k', b'v', [])], count=-5))])]),
        ('old magic', 2, [(bintopic, [(0, old_message_set(b'k', b'v'))])]),
        ('idempotent', 9, [(bintopic, [(0, batch([(b'k', b'v', [])], producer_id=7))])]),
        ('transactional batch', 9, [(bintopic, [(0, batch([(b'k', b'v', [])], attributes=0x10))])]),
        ('control batch', 9, [(bintopic, [(0, batch([(b'k', b'v', [])], attributes=0x20))])]),
        ('null records', 9, [(bintopic, [(0, None)])]),
        ('empty records', 9, [(bintopic, [(0, b'')])]),
        ('two batches v9', 9, [(bintopic, [(0, good + good)])]),
        ('unknown codec', 9, [(bintopic, [(0, batch([(b'k', b'v', [])], attributes=6))])]),
        ('timestamp out of range', 9, [(bintopic, [(0, batch([(b'k', b'v', [])],
                                                             base_ts=2 ** 62))])]),
        ('header name not utf8', 9, [(bintopic, [(0, batch([(b'k', b'v', [(b'\xff', b'x')])]))])]),
        ('unknown topic', 9, [('nosuch', [(0, good)])]),
        ('illegal topic name', 9, [('bad name!', [(0, good)])]),
        ('partition out of range', 9, [(bintopic, [(99, good), (-1, good)])]),
        ('json: invalid values', 9, [(jsontopic, [(0, batch([(b'a', b'{"ok": 1}', []),
                                                            (b'b', b'{"not json', []),
                                                            (b'c', b'[1, 2]', []),
                                                            (b'd', b'nul', [])]))])]),
        ('json: invalid value v7', 7, [(jsontopic, [(0, batch([(b'a', b'{oops}', [])]))])]),
        ('json: \\u0000', 9, [(jsontopic, [(0, batch([(b'a', b'"\\u0000"', [])]))])]),
        ('json: key not utf8', 9, [(jsontopic, [(0, batch([(b'\xc3', b'1', [])]))])]),
        ('json: header value not utf8', 9, [(jsontopic, [(0, batch([(b'a', b'1', [(b'h', b'\xff')])]))])]),
        ('json: duplicate header names', 9, [(jsontopic, [(0, batch([(b'a', b'1', [(b'h', b'1'), (b'h', b'2')])]))])]),
        ('json: deep nesting', 9, [(jsontopic, [(0, batch([(b'a', b'[' * 5000 + b']' * 5000, [])]))])]),
    ]
    for label, v, topics in cases:
        show(label, exchange(s, v, produce_request(v, topics)))
    show('transactional id', exchange(s, 9, produce_request(9, [(bintopic, [(0, good)])], txn=b'tx')))
    show('acks=2', exchange(s, 9, produce_request(9, [(bintopic, [(0, good)])], acks=2)))
    # A mixed request: each partition has its own outcome.
    show('mixed', exchange(s, 9, produce_request(9, [
        (bintopic, [(0, good), (1, good[:30]), (2, good)]),
        ('nosuch', [(0, good)])])))


def cmd_acks0(host, port, topic):
    """acks=0: no response; the next request's response is the next frame.
    A failing acks=0 request closes the connection."""
    s = connect(host, port)
    b = batch([(b'zero', b'acks=0', [])])
    send(s, produce_request(9, [(topic, [(0, b)])], acks=0, corr=1))
    got = exchange(s, 9, produce_request(9, [(topic, [(0, batch([(b'one', b'acks=1', [])]))])],
                                         acks=1, corr=2))
    print('after acks=0: corr=%s error=%s' % (got[0], got[1][0][2]) if got else 'after acks=0: closed')
    send(s, produce_request(9, [(topic, [(0, b[:20])])], acks=0, corr=3))
    got = exchange(s, 9, produce_request(9, [(topic, [(0, b)])], acks=1, corr=4))
    print('after a failed acks=0: %s' % ('closed' if got is None else 'answered'))


def cmd_pipelined(host, port, topic, jsontopic):
    """Produce requests sent back to back in one write, so that each is
    whole in the gateway's socket before the previous one is answered (as
    librdkafka pipelines them): the responses in order, one line each.
    Request 3 holds a timestamp PostgreSQL cannot hold (refused before any
    statement), request 6 goes to JSONTOPIC, which the gateway's role may
    not produce to (refused by PostgreSQL, inside the batch's transaction);
    the others are good."""
    s = connect(host, port)
    reqs = []
    for i in range(1, 9):
        if i == 3:
            b = batch([(b'p3', b'bad', [])], base_ts=2 ** 62)
            reqs.append(produce_request(9, [(topic, [(0, b)])], corr=i))
        elif i == 6:
            b = batch([(b'p6', b'{"a": 1}', [])])
            reqs.append(produce_request(9, [(jsontopic, [(0, b)])], corr=i))
        else:
            b = batch([(('p%d' % i).encode(), b'good', [])])
            reqs.append(produce_request(9, [(topic, [(i % 2, b)])], corr=i))
    send(s, b''.join(reqs))
    for i in range(1, 9):
        data = read_frame(s)
        if data is None:
            print('%d: closed' % i)
            return
        corr, parts, _, _ = parse_response(data, 9)
        print('%d: corr=%d error=%d' % (i, corr, parts[0][2]))
    # Then many good ones, all answered, in order.
    n = 200
    send(s, b''.join(produce_request(9, [(topic, [(1, batch([(b'q%d' % i, b'many', [])]))])],
                                     corr=1000 + i) for i in range(n)))
    bad = 0
    for i in range(n):
        corr, parts, _, _ = parse_response(read_frame(s), 9)
        if corr != 1000 + i or parts[0][2] != 0:
            bad += 1
    print('many: %d answered, %d out of order or failed' % (n, bad))
    # Then 12 of 20 KB each: a batch copies at most 64 KiB of them.
    big = b'x' * 20000
    send(s, b''.join(produce_request(9, [(topic, [(0, batch([(b'b%d' % i, big, [])]))])],
                                     corr=5000 + i) for i in range(12)))
    bad = 0
    for i in range(12):
        corr, parts, _, _ = parse_response(read_frame(s), 9)
        if corr != 5000 + i or parts[0][2] != 0:
            bad += 1
    print('large: 12 answered, %d out of order or failed' % bad)
    # acks=0 to a good topic, then acks=0 to no topic, back to back: the
    # second closes the connection; the first must be stored all the same.
    s2 = connect(host, port)
    send(s2, produce_request(9, [(topic, [(1, batch([(b'z1', b'acks0', [])]))])], acks=0, corr=9001)
         + produce_request(9, [('nosuch', [(0, batch([(b'z2', b'x', [])]))])], acks=0, corr=9002))
    try:
        data = s2.recv(1)
    except OSError:
        data = b''
    print('acks=0, then a refused acks=0: %s' % ('closed' if not data else 'answered'))


def cmd_one(host, port, topic, partition, acks):
    s = connect(host, port)
    show('one', exchange(s, 9, produce_request(9, [(topic, [(partition, batch([(b'k', b'v', [])]))])],
                                               acks=acks)))


def cmd_mutations(host, port, count, seed, topic):
    rnd = random.Random(seed)
    valid = [produce_request(v, [(topic, [(0, batch([(b'k', b'v', [(b'h', None)]), (None, b'x', [])]))])])
             for v in range(10)]
    outcomes = {}
    s = None
    for _ in range(count):
        f = bytearray(rnd.choice(valid))
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(4, len(f))
            f[i] = rnd.randrange(256)
        if rnd.random() < 0.2:
            f = f[:rnd.randrange(4, len(f))]
            f[0:4] = struct.pack('>i', len(f) - 4)
        if s is None:
            s = connect(host, port)
            # A mutation may turn acks into 0: no response comes.
            s.settimeout(10)
        if not send(s, bytes(f)):
            o = 'closed'
        else:
            try:
                o = 'answered' if read_frame(s) is not None else 'closed'
            except socket.timeout:
                o = 'silent'
            except (ConnectionResetError, OSError):
                o = 'closed'
        if o != 'answered':
            s.close()
            s = None
        outcomes[o] = outcomes.get(o, 0) + 1
    print('mutations: %d sent' % sum(outcomes.values()))


def main():
    host, port, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    args = sys.argv[4:]
    if cmd == 'versions':
        cmd_versions(host, port, args[0])
    elif cmd == 'hostile':
        cmd_hostile(host, port, args[0], args[1])
    elif cmd == 'acks0':
        cmd_acks0(host, port, args[0])
    elif cmd == 'pipelined':
        cmd_pipelined(host, port, sys.argv[4], sys.argv[5])
    elif cmd == 'one':
        cmd_one(host, port, args[0], int(args[1]), int(args[2]) if len(args) > 2 else -1)
    elif cmd == 'mutations':
        cmd_mutations(host, port, int(args[0]), int(args[1]), args[2])
    else:
        sys.exit('unknown command %s' % cmd)


if __name__ == '__main__':
    main()
