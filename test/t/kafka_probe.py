#!/usr/bin/python3
"""Raw Kafka protocol probes for test/t/060_kafka_gateway.pl.

Real clients (kcat, confluent_kafka, kafka-python) test what clients do;
this sends what they never send: every version of a request, unsupported
versions, and broken frames.  Usage:

  kafka_probe.py HOST PORT apiversions VERSION
  kafka_probe.py HOST PORT metadata VERSION [TOPIC ...]   (none: all topics)
  kafka_probe.py HOST PORT badframes
  kafka_probe.py HOST PORT mutations COUNT SEED
  kafka_probe.py HOST PORT hold         (connects, answers one request, waits)
  kafka_probe.py HOST PORT byid         (Metadata v12 by topic id)
  kafka_probe.py HOST PORT twice        (Metadata v1, then again on the same
                                         connection after a line on stdin)
  kafka_probe.py HOST PORT create VERSION validate|create NAME:PARTS:RF[:k=v;k=v][:assign] ...
  kafka_probe.py HOST PORT delete VERSION [byid] NAME ...
  kafka_probe.py HOST PORT partitions VERSION validate|create NAME:COUNT[:assign] ...
  kafka_probe.py HOST PORT configs VERSION TYPE:NAME[:KEY,KEY] ...
  kafka_probe.py HOST PORT cluster VERSION ops|noops ENDPOINT_TYPE
  kafka_probe.py HOST PORT adminhostile (thousands of topics, absurd values)
  kafka_probe.py HOST PORT adminmutations COUNT SEED
  kafka_probe.py HOST PORT unsupported API_KEY
  kafka_probe.py HOST PORT fetch VERSION TOPIC PARTITION OFFSET [KEY=VALUE ...]
                                        (Fetch; keys: wait, max_bytes, part_bytes,
                                         isolation, session, epoch)
  kafka_probe.py HOST PORT fetchmany VERSION WAIT TOPIC:PARTITION:OFFSET ...
  kafka_probe.py HOST PORT listoffsets VERSION TOPIC PARTITION TIMESTAMP
  kafka_probe.py HOST PORT fetchhostile TOPIC   (absurd Fetch/ListOffsets requests)
  kafka_probe.py HOST PORT session       (requests on one connection from stdin)

It prints one line per finding; the TAP test compares them.
"""
import random
import socket
import struct
import sys

# Long enough never to end a test on a loaded machine; the TAP test's own
# timeouts end a probe that hangs.
TIMEOUT = 600


def connect(host, port):
    s = socket.create_connection((host, port), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def send(s, data):
    """False if the gateway has closed the connection already (it may
    close one over --max-connections before our request is out)."""
    try:
        s.sendall(data)
        return True
    except (BrokenPipeError, ConnectionResetError):
        return False


def recv_exact(s, n):
    buf = b''
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_frame(s):
    size = recv_exact(s, 4)
    if size is None:
        return None
    (n,) = struct.unpack('>i', size)
    return recv_exact(s, n)


def uvarint(v):
    out = b''
    while v >= 0x80:
        out += bytes([(v & 0x7f) | 0x80])
        v >>= 7
    return out + bytes([v])


def header(api_key, version, corr, flexible, client_id=b'probe'):
    h = struct.pack('>hhi', api_key, version, corr)
    h += struct.pack('>h', len(client_id)) + client_id
    if flexible:
        h += b'\x00'
    return h


def frame(payload):
    return struct.pack('>i', len(payload)) + payload


class Reader:
    def __init__(self, data):
        self.d = data
        self.p = 0

    def take(self, n):
        if self.p + n > len(self.d):
            raise ValueError('short')
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def i8(self):
        return struct.unpack('>b', self.take(1))[0]

    def i16(self):
        return struct.unpack('>h', self.take(2))[0]

    def i32(self):
        return struct.unpack('>i', self.take(4))[0]

    def uvarint(self):
        v = shift = 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7f) << shift
            if not b & 0x80:
                return v
            shift += 7

    def string(self, flexible):
        n = self.uvarint() - 1 if flexible else self.i16()
        return None if n < 0 else self.take(n).decode()

    def array_len(self, flexible):
        return self.uvarint() - 1 if flexible else self.i32()

    def tags(self, flexible):
        if flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.take(self.uvarint())

    def rest(self):
        return len(self.d) - self.p


def apiversions_request(version, corr=1):
    flexible = version >= 3
    body = b''
    if version >= 3:
        body = uvarint(len(b'pg-eventlog-probe') + 1) + b'pg-eventlog-probe'
        body += uvarint(len(b'1.0') + 1) + b'1.0' + b'\x00'
    return frame(header(18, version, corr, flexible) + body)


def cmd_apiversions(host, port, version):
    s = connect(host, port)
    try:
        data = read_frame(s) if send(s, apiversions_request(version, corr=7)) else None
    except ConnectionResetError:
        data = None
    if data is None:
        print('closed')
        return
    r = Reader(data)
    corr = r.i32()
    # The response header is v0 for every version: no tagged fields here.
    error = r.i16()
    # An unsupported version is answered in v0.
    flexible = version == 3 and error != 35
    keys = []
    for _ in range(r.array_len(flexible)):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        r.tags(flexible)
        keys.append('%d:%d-%d' % (k, lo, hi))
    throttle = None
    if 1 <= version <= 3 and error != 35:
        throttle = r.i32()
    r.tags(flexible)
    print('corr=%d error=%d keys=%s throttle=%s rest=%d'
          % (corr, error, ','.join(keys), throttle, r.rest()))


def metadata_request(version, topics, corr=1):
    flexible = version >= 9
    body = b''
    if topics is None:
        body += b'\x00' if flexible else struct.pack('>i', -1)
    else:
        body += uvarint(len(topics) + 1) if flexible else struct.pack('>i', len(topics))
        for t in topics:
            t = t.encode()
            if version >= 10:
                body += b'\x00' * 16
            body += (uvarint(len(t) + 1) if flexible else struct.pack('>h', len(t))) + t
            if flexible:
                body += b'\x00'
    if version >= 4:
        body += b'\x00'             # allow_auto_topic_creation false
    if 8 <= version <= 10:
        body += b'\x00'
    if version >= 8:
        body += b'\x01'             # include_topic_authorized_operations
    if flexible:
        body += b'\x00'
    return frame(header(3, version, corr, flexible) + body)


def cmd_metadata(host, port, version, topics):
    flexible = version >= 9
    s = connect(host, port)
    if version == 0 and not topics:
        s.sendall(metadata_request(0, []))
    else:
        s.sendall(metadata_request(version, topics or None))
    data = read_frame(s)
    if data is None:
        print('closed')
        return
    r = Reader(data)
    r.i32()                         # correlation id
    r.tags(flexible)                # response header v1
    if version >= 3:
        r.i32()
    for _ in range(r.array_len(flexible)):
        node, host_, port_ = r.i32(), r.string(flexible), r.i32()
        if version >= 1:
            r.string(flexible)
        r.tags(flexible)
        print('broker %d %s:%d' % (node, host_, port_))
    cluster = r.string(flexible) if version >= 2 else None
    controller = r.i32() if version >= 1 else None
    print('cluster %s controller %s' % (cluster, controller))
    for _ in range(r.array_len(flexible)):
        error = r.i16()
        name = r.string(flexible)
        topic_id = r.take(16).hex() if version >= 10 else None
        if version >= 1:
            r.i8()
        leaders = []
        for _ in range(r.array_len(flexible)):
            perr, idx, leader = r.i16(), r.i32(), r.i32()
            if version >= 7:
                r.i32()
            replicas = [r.i32() for _ in range(r.array_len(flexible))]
            isr = [r.i32() for _ in range(r.array_len(flexible))]
            if version >= 5:
                [r.i32() for _ in range(r.array_len(flexible))]
            r.tags(flexible)
            assert perr == 0 and replicas == [leader] and isr == [leader]
            leaders.append('%d:%d' % (idx, leader))
        ops = r.i32() if version >= 8 else None
        r.tags(flexible)
        print('topic %s error=%d partitions=%s ops=%s id=%s'
              % (name, error, ','.join(leaders), ops,
                 'none' if topic_id is None else ('zero' if topic_id == '0' * 32 else 'set')))
    if 8 <= version <= 10:
        r.i32()
    r.tags(flexible)
    print('rest=%d' % r.rest())


def outcome(s):
    try:
        data = read_frame(s)
    except ConnectionResetError:
        # Closed with bytes of ours unread: the kernel resets.
        return 'closed'
    except OSError as e:
        return 'error %s' % e
    return 'closed' if data is None else 'answered %d bytes' % len(data)


def cmd_badframes(host, port):
    held = connect(host, port)
    held.sendall(apiversions_request(0))
    print('held connection: %s' % outcome(held))
    cases = [
        ('negative size', struct.pack('>i', -5)),
        ('huge size', struct.pack('>i', 0x7fffffff) + b'x' * 100),
        ('too short for a header', frame(b'\x00\x03\x00')),
        ('garbage', frame(bytes(random.Random(42).randrange(256) for _ in range(64)))),
        ('unknown api key', frame(header(9999, 0, 1, False))),
        ('unsupported metadata version', frame(header(3, 13, 1, True) + b'\x01\x00\x00\x00')),
        ('trailing bytes', metadata_request(1, None)[4:] + b'\x00'),
        ('absurd array count', frame(header(3, 1, 1, False) + struct.pack('>i', 0x7fffffff))),
        ('truncated string', frame(header(3, 1, 1, False) + struct.pack('>ih', 1, 300) + b'abc')),
        ('bad client id length', frame(struct.pack('>hhih', 18, 0, 1, 1000))),
        ('bad software name', None),
    ]
    for name, data in cases:
        s = connect(host, port)
        if name == 'trailing bytes':
            data = frame(data)
        if name == 'bad software name':
            body = uvarint(len(b'-bad name') + 1) + b'-bad name' + uvarint(2) + b'1' + b'\x00'
            data = frame(header(18, 3, 1, True) + body)
        print('%s: %s' % (name, outcome(s) if send(s, data) else 'closed'))
        s.close()
    # A frame cut short: the client sends part of it and stops.
    s = connect(host, port)
    s.sendall(struct.pack('>i', 100) + b'\x00\x12\x00\x00')
    s.shutdown(socket.SHUT_WR)
    print('truncated frame: %s' % outcome(s))
    s.close()
    held.sendall(metadata_request(1, None, corr=2))
    print('held connection again: %s' % outcome(held).split(' ')[0])


def cmd_mutations(host, port, count, seed):
    rnd = random.Random(seed)
    valid = [metadata_request(v, ['orders', 'nosuch']) for v in range(13)] + \
        [apiversions_request(v) for v in range(4)]
    outcomes = {}
    for _ in range(count):
        f = bytearray(rnd.choice(valid))
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(4, len(f))
            f[i] = rnd.randrange(256)
        if rnd.random() < 0.2:
            f = f[:rnd.randrange(4, len(f))]
            f[0:4] = struct.pack('>i', len(f) - 4)
        s = connect(host, port)
        o = outcome(s).split(' ')[0] if send(s, bytes(f)) else 'closed'

        outcomes[o] = outcomes.get(o, 0) + 1
        s.close()
    print(' '.join('%s=%d' % kv for kv in sorted(outcomes.items())))


def cmd_hold(host, port):
    s = connect(host, port)
    s.sendall(apiversions_request(0))
    print('hold: %s' % outcome(s), flush=True)
    print('hold then: %s' % outcome(s), flush=True)


def metadata_topics(s, version, req):
    """(name, error, topic id) of each topic of a Metadata response."""
    flexible = version >= 9
    s.sendall(req)
    data = read_frame(s)
    if data is None:
        return None
    r = Reader(data)
    r.i32()
    r.tags(flexible)
    if version >= 3:
        r.i32()
    for _ in range(r.array_len(flexible)):
        r.i32(), r.string(flexible), r.i32()
        if version >= 1:
            r.string(flexible)
        r.tags(flexible)
    if version >= 2:
        r.string(flexible)
    if version >= 1:
        r.i32()
    topics = []
    for _ in range(r.array_len(flexible)):
        error = r.i16()
        name = r.string(flexible)
        topic_id = r.take(16) if version >= 10 else None
        if version >= 1:
            r.i8()
        for _ in range(r.array_len(flexible)):
            r.i16(), r.i32(), r.i32()
            if version >= 7:
                r.i32()
            for _ in range(2 if version < 5 else 3):
                [r.i32() for _ in range(r.array_len(flexible))]
            r.tags(flexible)
        if version >= 8:
            r.i32()
        r.tags(flexible)
        topics.append((name, error, topic_id))
    return topics


def cmd_byid(host, port):
    """Every topic asked for by its id (twice each, among 20000 ids of
    which the others are unknown), and the zero id."""
    s = connect(host, port)
    known = metadata_topics(s, 12, metadata_request(12, None))
    ids = [t[2] for t in known]
    # Each differs from its topic's id in its first bytes, and from every
    # other topic's in its last four (the catalog's topic id).
    unknown = [bytes([t[2][0] ^ (i >> 8 & 255), t[2][1] ^ (i & 255)]) + t[2][2:]
               for i in range(1, 20000 // max(len(ids), 1) + 1) for t in known]
    asked = ids + ids + unknown + [b'\x00' * 16]
    random.Random(1).shuffle(asked)
    body = uvarint(len(asked) + 1)
    for u in asked:
        body += u + b'\x00' + b'\x00'    # the id, a null name, no tags
    body += b'\x00' + b'\x00' + b'\x00'
    got = metadata_topics(s, 12, frame(header(3, 12, 1, True) + body))
    by_error = {}
    for name, error, topic_id in got:
        by_error.setdefault(error, []).append(name)
    named = sorted(n for n in by_error.pop(0, []))
    print('found %s' % ','.join(named))
    print('right ids %s' % all(t[2] == dict((k[0], k[2]) for k in known)[t[0]]
                                for t in got if t[1] == 0))
    print('asked %d distinct, answered %d' % (len(set(asked)), len(got)))
    for error in sorted(by_error):
        print('error=%d count=%d names=%s' % (error, len(by_error[error]), set(by_error[error])))


def cmd_twice(host, port):
    s = connect(host, port)
    got = metadata_topics(s, 1, metadata_request(1, None))
    print('first: %s' % ('closed' if got is None else '%d topics' % len(got)), flush=True)
    sys.stdin.readline()
    got = metadata_topics(s, 1, metadata_request(1, None))
    print('second: %s' % ('closed' if got is None else '%d topics' % len(got)), flush=True)

# Administrative APIs (test/t/065_kafka_admin.pl).

def enc_str(v, flexible):
    if v is None:
        return b'\x00' if flexible else struct.pack('>h', -1)
    if isinstance(v, str):
        v = v.encode()
    return (uvarint(len(v) + 1) if flexible else struct.pack('>h', len(v))) + v


def enc_len(n, flexible):
    """An array count; None is a null array."""
    if n is None:
        return b'\x00' if flexible else struct.pack('>i', -1)
    return uvarint(n + 1) if flexible else struct.pack('>i', n)


def enc_tags(flexible):
    return b'\x00' if flexible else b''


def admin_call(host, port, api_key, version, flexible, body, s=None):
    """Sends one request; returns a Reader after the response header, or
    None if the gateway closed the connection."""
    s = s or connect(host, port)
    s.sendall(frame(header(api_key, version, 3, flexible) + body))
    try:
        data = read_frame(s)
    except ConnectionResetError:
        data = None
    if data is None:
        return None
    r = Reader(data)
    assert r.i32() == 3
    r.tags(flexible)
    return r


def create_topics_body(version, topics, validate):
    """topics: (name, partitions, rf, assignments, {config: value})."""
    f = version >= 5
    b = enc_len(len(topics), f)
    for name, parts, rf, assign, configs in topics:
        b += enc_str(name, f) + struct.pack('>ih', parts, rf)
        b += enc_len(len(assign), f)
        for idx, brokers in assign:
            b += struct.pack('>i', idx) + enc_len(len(brokers), f)
            b += b''.join(struct.pack('>i', x) for x in brokers) + enc_tags(f)
        b += enc_len(len(configs), f)
        for k, v in configs.items():
            b += enc_str(k, f) + enc_str(v, f) + enc_tags(f)
        b += enc_tags(f)
    b += struct.pack('>i', 30000)
    if version >= 1:
        b += b'\x01' if validate else b'\x00'
    return b + enc_tags(f)


def read_create_topics(r, version):
    f = version >= 5
    if version >= 2:
        r.i32()
    out = []
    for _ in range(r.array_len(f)):
        name = r.string(f)
        tid = r.take(16).hex() if version >= 7 else None
        err = r.i16()
        msg = r.string(f) if version >= 1 else None
        line = 'topic %s error=%d' % (name, err)
        if version >= 5:
            parts, rf = r.i32(), r.i16()
            cfgs = []
            n = r.array_len(f)
            for _ in range(max(n, 0)):
                k, v = r.string(f), r.string(f)
                ro, src, sens = r.i8(), r.i8(), r.i8()
                r.tags(f)
                cfgs.append('%s=%s/%d%s' % (k, v, src, '/ro' if ro else ''))
            line += ' partitions=%d rf=%d configs=%s' % (parts, rf, ','.join(cfgs))
        if tid is not None:
            line += ' id=%s' % ('zero' if tid == '0' * 32 else 'set')
        r.tags(f)
        if msg is not None:
            line += ' msg=%s' % msg
        out.append(line)
    r.tags(f)
    out.append('rest=%d' % r.rest())
    return out


def parse_topic_spec(spec):
    """NAME:PARTITIONS:RF[:k=v;k=v][:assign]"""
    parts = spec.split(':')
    configs = {}
    assign = []
    if len(parts) > 3 and parts[3]:
        for kv in parts[3].split(';'):
            k, _, v = kv.partition('=')
            configs[k] = None if v == 'NULL' else v
    if len(parts) > 4 and parts[4] == 'assign':
        assign = [(0, [0])]
    return (parts[0], int(parts[1]), int(parts[2]), assign, configs)


def cmd_create(host, port, version, validate, specs):
    topics = [parse_topic_spec(x) for x in specs]
    r = admin_call(host, port, 19, version, version >= 5,
                   create_topics_body(version, topics, validate))
    print('\n'.join(read_create_topics(r, version)) if r else 'closed')


def topic_ids(host, port, names):
    s = connect(host, port)
    s.sendall(metadata_request(12, names))
    r = Reader(read_frame(s))
    r.i32()
    r.tags(True)
    r.i32()
    for _ in range(r.array_len(True)):
        r.i32(), r.string(True), r.i32(), r.string(True)
        r.tags(True)
    r.string(True)
    r.i32()
    ids = {}
    for _ in range(r.array_len(True)):
        r.i16()
        name = r.string(True)
        ids[name] = r.take(16)
        r.i8()
        for _ in range(r.array_len(True)):
            r.take(14)
            for _ in range(3):
                [r.i32() for _ in range(r.array_len(True))]
            r.tags(True)
        r.i32()
        r.tags(True)
    return ids


def delete_topics_body(version, entries):
    """entries: names, or (name or None, 16-byte id) from v6."""
    f = version >= 4
    b = enc_len(len(entries), f)
    for e in entries:
        if version >= 6:
            name, tid = e if isinstance(e, tuple) else (e, b'\x00' * 16)
            b += enc_str(name, f) + tid + enc_tags(f)
        else:
            b += enc_str(e, f)
    return b + struct.pack('>i', 30000) + enc_tags(f)


def read_delete_topics(r, version):
    f = version >= 4
    if version >= 1:
        r.i32()
    out = []
    for _ in range(r.array_len(f)):
        name = r.string(f)
        tid = r.take(16).hex() if version >= 6 else None
        err = r.i16()
        msg = r.string(f) if version >= 5 else None
        r.tags(f)
        line = 'topic %s error=%d' % (name, err)
        if tid is not None:
            line += ' id=%s' % ('zero' if tid == '0' * 32 else 'set')
        if msg is not None:
            line += ' msg=%s' % msg
        out.append(line)
    r.tags(f)
    out.append('rest=%d' % r.rest())
    return out


def cmd_delete(host, port, version, names):
    entries = names
    if names and names[0] == 'byid':
        ids = topic_ids(host, port, names[1:])
        # A topic without an id gets one of a topic that exists (catalog
        # id 1) but with the wrong creation hash: an id of no topic.
        fake = b'\x00' * 15 + b'\x01'
        entries = [(None, ids.get(n) if ids.get(n, bytes(16)) != bytes(16) else fake)
                   for n in names[1:]]
    r = admin_call(host, port, 20, version, version >= 4, delete_topics_body(version, entries))
    print('\n'.join(read_delete_topics(r, version)) if r else 'closed')


def create_partitions_body(version, topics, validate):
    f = version >= 2
    b = enc_len(len(topics), f)
    for name, count, assign in topics:
        b += enc_str(name, f) + struct.pack('>i', count)
        if assign is None:
            b += enc_len(None, f)
        else:
            b += enc_len(len(assign), f)
            for brokers in assign:
                b += enc_len(len(brokers), f) + b''.join(struct.pack('>i', x) for x in brokers)
                b += enc_tags(f)
        b += enc_tags(f)
    b += struct.pack('>i', 30000) + (b'\x01' if validate else b'\x00')
    return b + enc_tags(f)


def read_create_partitions(r, version):
    f = version >= 2
    r.i32()
    out = []
    for _ in range(r.array_len(f)):
        name, err, msg = r.string(f), r.i16(), r.string(f)
        r.tags(f)
        out.append('topic %s error=%d%s' % (name, err, '' if msg is None else ' msg=' + msg))
    r.tags(f)
    out.append('rest=%d' % r.rest())
    return out


def cmd_partitions(host, port, version, validate, specs):
    topics = []
    for spec in specs:
        name, count, *rest = spec.split(':')
        topics.append((name, int(count), [[0]] if rest == ['assign'] else None))
    r = admin_call(host, port, 37, version, version >= 2,
                   create_partitions_body(version, topics, validate))
    print('\n'.join(read_create_partitions(r, version)) if r else 'closed')


def describe_configs_body(version, resources, synonyms=True, docs=True):
    f = version >= 4
    b = enc_len(len(resources), f)
    for rtype, name, keys in resources:
        b += struct.pack('>b', rtype) + enc_str(name, f)
        if keys is None:
            b += enc_len(None, f)
        else:
            b += enc_len(len(keys), f) + b''.join(enc_str(k, f) for k in keys)
        b += enc_tags(f)
    if version >= 1:
        b += b'\x01' if synonyms else b'\x00'
    if version >= 3:
        b += b'\x01' if docs else b'\x00'
    return b + enc_tags(f)


def read_describe_configs(r, version):
    f = version >= 4
    r.i32()
    out = []
    for _ in range(r.array_len(f)):
        err, msg, rtype, name = r.i16(), r.string(f), r.i8(), r.string(f)
        cfgs = []
        for _ in range(r.array_len(f)):
            k, v, ro = r.string(f), r.string(f), r.i8()
            src = r.i8()                # v0: is_default
            r.i8()                      # is_sensitive
            syn = ''
            if version >= 1:
                for _ in range(r.array_len(f)):
                    sn, sv, ss = r.string(f), r.string(f), r.i8()
                    r.tags(f)
                    syn += '~%s' % ss
            typ = doc = None
            if version >= 3:
                typ, doc = r.i8(), r.string(f)
            r.tags(f)
            cfgs.append('%s=%s/%d%s%s%s%s' % (k, v, src, '/ro' if ro else '', syn,
                                          '' if typ is None else '/t%d' % typ,
                                          '/doc' if doc else ''))
        r.tags(f)
        out.append('resource %d:%s error=%d%s configs=%s'
                   % (rtype, name, err, '' if msg is None else ' msg=' + msg, ','.join(cfgs)))
    r.tags(f)
    out.append('rest=%d' % r.rest())
    return out


def cmd_configs(host, port, version, specs):
    resources = []
    for spec in specs:
        rtype, name, *keys = spec.split(':')
        resources.append((int(rtype), name, keys[0].split(',') if keys else None))
    r = admin_call(host, port, 32, version, version >= 4, describe_configs_body(version, resources))
    print('\n'.join(read_describe_configs(r, version)) if r else 'closed')


def cmd_cluster(host, port, version, ops, endpoint):
    body = (b'\x01' if ops else b'\x00')
    if version >= 1:
        body += struct.pack('>b', endpoint)
    r = admin_call(host, port, 60, version, True, body + b'\x00')
    if r is None:
        print('closed')
        return
    r.i32()
    err, msg = r.i16(), r.string(True)
    ep = r.i8() if version >= 1 else None
    cluster, controller = r.string(True), r.i32()
    brokers = []
    for _ in range(r.array_len(True)):
        bid, h, p, rack = r.i32(), r.string(True), r.i32(), r.string(True)
        r.tags(True)
        brokers.append('%d=%s:%d' % (bid, h, p))
    ops_ = r.i32()
    r.tags(True)
    print('error=%d msg=%s endpoint=%s cluster=%s controller=%d brokers=%s ops=%d rest=%d'
          % (err, msg, ep, cluster, controller, ','.join(brokers), ops_, r.rest()))


def count_errors(lines):
    counts = {}
    for line in lines:
        if line.startswith('topic ') or line.startswith('resource '):
            e = line.split(' error=')[1].split(' ')[0]
            counts[e] = counts.get(e, 0) + 1
    return ' '.join('%s:%d' % kv for kv in sorted(counts.items()))


def cmd_adminhostile(host, port):
    """Thousands of topics, empty and illegal names, absurd counts; each
    line says how many entries got each error code."""
    s = connect(host, port)
    topics = [('', 1, 1, [], {}) for _ in range(1000)]
    topics += [('bad name %d' % i, 1, 1, [], {}) for i in range(1000)]
    topics += [('h-%d' % i, 0, 1, [], {}) for i in range(995)]
    topics += [('h-huge', 2147483647, 1, [], {}), ('h-neg', -5, -1, [], {}),
               ('h-rf', 1, 3, [], {}), ('h-dup', 1, 1, [], {}), ('h-dup', 1, 1, [], {})]
    topics += [('x' * 249, 1, 1, [], {}), ('x' * 250, 1, 1, [], {}), ('.', 1, 1, [], {}),
               ('..', 1, 1, [], {}), ('h-ok', -1, -1, [], {})]
    for v in (0, 4, 7):
        r = admin_call(host, port, 19, v, v >= 5, create_topics_body(v, topics, True), s)
        lines = read_create_topics(r, v) if r else ['closed']
        print('create v%d %d answers: %s %s' % (v, len(lines) - 1, count_errors(lines), lines[-1]))
    r = admin_call(host, port, 20, 6, True,
                   delete_topics_body(6, ['', 'nosuch'] + ['gone-%d' % i for i in range(3000)]
                                      + [(None, b'\x00' * 16), (None, b'\xff' * 16)]), s)
    lines = read_delete_topics(r, 6) if r else ['closed']
    print('delete v6 %d answers: %s %s' % (len(lines) - 1, count_errors(lines), lines[-1]))
    r = admin_call(host, port, 37, 3, True,
                   create_partitions_body(3, [('', 2, None), ('nosuch', 2, None)]
                                          + [('p-%d' % i, 0, None) for i in range(3000)]
                                          + [('h', 2147483647, None)], True), s)
    lines = read_create_partitions(r, 3) if r else ['closed']
    print('partitions v3 %d answers: %s %s' % (len(lines) - 1, count_errors(lines), lines[-1]))
    r = admin_call(host, port, 32, 4, True,
                   describe_configs_body(4, [(2, '', None), (2, 'nosuch', ['a'] * 5000), (4, '7', None),
                                             (4, 'x', None), (8, '0', None), (99, 'q', None)]
                                         + [(2, 'n-%d' % i, None) for i in range(3000)]), s)
    lines = read_describe_configs(r, 4) if r else ['closed']
    print('configs v4 %d answers: %s %s' % (len(lines) - 1, count_errors(lines), lines[-1]))
    # Past the bound of one request: the connection closes.
    many = [('m-%d' % i, 1, 1, [], {}) for i in range(10001)]
    r = admin_call(host, port, 19, 5, True, create_topics_body(5, many, True), s)
    print('create of 10001 topics: %s' % ('closed' if r is None else 'answered'))


def cmd_adminmutations(host, port, count, seed):
    """Mutated administrative requests of every version: each answered or
    closed, never a crash."""
    rnd = random.Random(seed)
    topic = ('mut-t', 2, -1, [], {'retention.ms': '60000', 'segment.bytes': '1048576'})
    valid = [frame(header(19, v, 1, v >= 5) + create_topics_body(v, [topic], True)) for v in range(8)]
    valid += [frame(header(20, v, 1, v >= 4) + delete_topics_body(v, ['mut-none', 'sql-topic'] if v < 6 else
                                                                     ['mut-none', (None, b'\x01' * 16)]))
              for v in range(7)]
    valid += [frame(header(37, v, 1, v >= 2) + create_partitions_body(v, [('mut-none', 3, None), ('x', 2, [[0]])], True))
              for v in range(4)]
    valid += [frame(header(32, v, 1, v >= 4) + describe_configs_body(v, [(2, 'sql-topic', None), (4, '0', ['num.partitions'])]))
              for v in range(5)]
    valid += [frame(header(60, v, 1, True) + b'\x01' + (b'\x01' if v else b'') + b'\x00') for v in range(2)]
    outcomes = {}
    for _ in range(count):
        f = bytearray(rnd.choice(valid))
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(8, len(f))
            f[i] = rnd.randrange(256)
        if rnd.random() < 0.2:
            f = f[:rnd.randrange(8, len(f))]
            f[0:4] = struct.pack('>i', len(f) - 4)
        s = connect(host, port)
        o = outcome(s).split(' ')[0] if send(s, bytes(f)) else 'closed'
        outcomes[o] = outcomes.get(o, 0) + 1
        s.close()
    print(' '.join('%s=%d' % kv for kv in sorted(outcomes.items())))


def cmd_unsupported(host, port, api_key):
    s = connect(host, port)
    # InitProducerId v0: a null transactional id and a timeout.
    s.sendall(frame(header(api_key, 0, 3, False) + struct.pack('>hi', -1, 60000)))
    print('api key %d: %s' % (api_key, outcome(s)))


def varint_zz(r):
    v = r.uvarint()
    return (v >> 1) ^ -(v & 1)


def i64(r):
    return struct.unpack('>q', r.take(8))[0]


def decode_batches(data):
    """(offset, timestamp, key, value, headers) of each record of RecordBatch v2 batches."""
    out = []
    r = Reader(data)
    while r.rest() >= 12:
        base = i64(r)
        length = r.i32()
        b = Reader(r.take(length))
        b.i32()                 # partition leader epoch
        magic = b.i8()
        if magic != 2:
            raise ValueError('magic %d' % magic)
        b.take(4)               # crc
        attrs = b.i16()
        if attrs & 7:
            raise ValueError('compressed')
        b.i32()                 # last offset delta
        base_ts = i64(b)
        i64(b)                  # max timestamp
        i64(b)
        b.i16()
        b.i32()
        count = b.i32()
        for _ in range(count):
            ln = varint_zz(b)
            rec = Reader(b.take(ln))
            rec.i8()
            ts = base_ts + varint_zz(rec)
            off = base + varint_zz(rec)
            kl = varint_zz(rec)
            key = None if kl < 0 else rec.take(kl)
            vl = varint_zz(rec)
            val = None if vl < 0 else rec.take(vl)
            hs = []
            for _ in range(varint_zz(rec)):
                hk = rec.take(varint_zz(rec))
                hl = varint_zz(rec)
                hs.append((hk, None if hl < 0 else rec.take(hl)))
            out.append((off, ts, key, val, hs))
    return out


def fetch_request(version, topics, wait=0, min_bytes=1, max_bytes=52428800, isolation=1,
                  session=0, epoch=-1, corr=1):
    """topics: [(name, [(partition, offset, partition_max_bytes)])]"""
    flex = version >= 12
    b = header(1, version, corr, flex)
    b += struct.pack('>iiii', -1, wait, min_bytes, max_bytes)
    b += struct.pack('>b', isolation)
    if version >= 7:
        b += struct.pack('>ii', session, epoch)
    b += uvarint(len(topics) + 1) if flex else struct.pack('>i', len(topics))
    chunks = [b]
    for name, parts in topics:
        nb = name.encode()
        chunks.append((uvarint(len(nb) + 1) if flex else struct.pack('>h', len(nb))) + nb)
        chunks.append(uvarint(len(parts) + 1) if flex else struct.pack('>i', len(parts)))
        for p, off, pmax in parts:
            c = struct.pack('>i', p)
            if version >= 9:
                c += struct.pack('>i', -1)
            c += struct.pack('>q', off)
            if version >= 12:
                c += struct.pack('>i', -1)
            if version >= 5:
                c += struct.pack('>q', -1)
            c += struct.pack('>i', pmax)
            if flex:
                c += b'\x00'
            chunks.append(c)
        if flex:
            chunks.append(b'\x00')
    b = b''.join(chunks)
    if version >= 7:
        b += uvarint(1) if flex else struct.pack('>i', 0)
    if version >= 11:
        b += uvarint(1) if flex else struct.pack('>h', 0)
    if flex:
        b += b'\x00'
    return frame(b)


def parse_fetch(version, data):
    flex = version >= 12
    r = Reader(data)
    r.i32()                     # correlation id
    if flex:
        r.tags(True)
    lines = []
    r.i32()                     # throttle
    if version >= 7:
        lines.append('error=%d session=%d' % (r.i16(), r.i32()))
    for _ in range(r.array_len(flex)):
        topic = r.string(flex)
        for _ in range(r.array_len(flex)):
            p = r.i32()
            err = r.i16()
            hw = i64(r)
            lso = i64(r)
            start = i64(r) if version >= 5 else None
            na = r.array_len(flex)
            for _ in range(max(na, 0)):
                i64(r)
                i64(r)
                r.tags(flex)
            if version >= 11:
                r.i32()
            n = r.uvarint() - 1 if flex else r.i32()
            recs = decode_batches(r.take(n)) if n > 0 else []
            r.tags(flex)
            lines.append('%s/%d error=%d hw=%d lso=%d start=%s records=%d offsets=%s' % (
                topic, p, err, hw, lso, start, len(recs),
                ','.join(str(x[0]) for x in recs[:5]) + (',...%d' % recs[-1][0] if len(recs) > 5 else '')))
            for off, ts, key, val, hs in recs[:3]:
                lines.append('  %d ts=%d key=%r value=%r headers=%r' % (off, ts, key, val, hs))
        r.tags(flex)
    r.tags(flex)
    lines.append('rest=%d' % r.rest())
    return lines


def cmd_fetch(host, port, version, topic, partition, offset, opts):
    o = dict(kv.split('=', 1) for kv in opts)
    s = connect(host, port)
    s.sendall(fetch_request(version, [(topic, [(partition, offset, int(o.get('part_bytes', 1048576)))])],
                            wait=int(o.get('wait', 0)), max_bytes=int(o.get('max_bytes', 52428800)),
                            isolation=int(o.get('isolation', 1)), session=int(o.get('session', 0)),
                            epoch=int(o.get('epoch', -1))))
    data = read_frame(s)
    if data is None:
        print('closed')
        return
    for line in parse_fetch(version, data):
        print(line)


def cmd_fetchmany(host, port, version, wait, specs):
    """Fetch of several topic:partition:offset at once, long-polling wait ms."""
    topics = []
    for spec in specs:
        t, p, o = spec.rsplit(':', 2)
        if not topics or topics[-1][0] != t:
            topics.append((t, []))
        topics[-1][1].append((int(p), int(o), 1048576))
    s = connect(host, port)
    print('sent', flush=True)
    s.sendall(fetch_request(version, topics, wait=wait))
    data = read_frame(s)
    if data is None:
        print('closed')
        return
    for line in parse_fetch(version, data):
        print(line)


def list_offsets_request(version, topic, partition, ts, corr=1):
    flex = version >= 6
    b = header(2, version, corr, flex)
    b += struct.pack('>i', -1)
    if version >= 2:
        b += struct.pack('>b', 0)
    b += uvarint(2) if flex else struct.pack('>i', 1)
    nb = topic.encode()
    b += (uvarint(len(nb) + 1) if flex else struct.pack('>h', len(nb))) + nb
    b += uvarint(2) if flex else struct.pack('>i', 1)
    b += struct.pack('>i', partition)
    if version >= 4:
        b += struct.pack('>i', -1)
    b += struct.pack('>q', ts)
    if version == 0:
        b += struct.pack('>i', 1)
    if flex:
        b += b'\x00\x00'
    if flex:
        b += b'\x00'
    return frame(b)


def parse_list_offsets(version, data):
    flex = version >= 6
    lines = []
    r = Reader(data)
    r.i32()
    if flex:
        r.tags(True)
    if version >= 2:
        r.i32()
    for _ in range(r.array_len(flex)):
        name = r.string(flex)
        for _ in range(r.array_len(flex)):
            p = r.i32()
            err = r.i16()
            if version == 0:
                offs = [i64(r) for _ in range(r.array_len(flex))]
                lines.append('%s/%d error=%d offsets=%s' % (name, p, err, offs))
            else:
                t = i64(r)
                off = i64(r)
                if version >= 4:
                    r.i32()
                lines.append('%s/%d error=%d timestamp=%d offset=%d' % (name, p, err, t, off))
            r.tags(flex)
        r.tags(flex)
    r.tags(flex)
    lines.append('rest=%d' % r.rest())
    return lines


def cmd_listoffsets(host, port, version, topic, partition, ts):
    s = connect(host, port)
    s.sendall(list_offsets_request(version, topic, partition, ts))
    data = read_frame(s)
    if data is None:
        print('closed')
        return
    for line in parse_list_offsets(version, data):
        print(line)


def cmd_session(host, port):
    """Requests on one connection, one per line of stdin:
         fetch WAIT TOPIC:PARTITION:OFFSET ...   (Fetch v11)
         fetchn BYTES WAIT TOPIC:PARTITION:OFFSET ...  (the same, at most BYTES
                                                 per partition)
         metadata TOPIC                          (Metadata v1: answered or not)
         pipeline WAIT TOPIC:PARTITION:OFFSET ...  (a Fetch and a Metadata of its
                                                 first topic, sent at once)
         listoffsets TOPIC PARTITION TIMESTAMP   (ListOffsets v5)
       each answer's lines, then a line '.'."""
    s = connect(host, port)
    corr = 0
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        corr += 1
        if words[0] in ('fetch', 'fetchn'):
            pmax = 1048576
            if words[0] == 'fetchn':
                pmax = int(words.pop(1))
            topics = []
            for spec in words[2:]:
                t, p, o = spec.rsplit(':', 2)
                if not topics or topics[-1][0] != t:
                    topics.append((t, []))
                topics[-1][1].append((int(p), int(o), pmax))
            s.sendall(fetch_request(11, topics, wait=int(words[1]), corr=corr))
            data = read_frame(s)
            out = ['closed'] if data is None else parse_fetch(11, data)
        elif words[0] == 'pipeline':
            # A Fetch and a Metadata request sent at once, the Metadata
            # behind the Fetch before its answer: both answers.
            topics = []
            for spec in words[2:]:
                t, p, o = spec.rsplit(':', 2)
                if not topics or topics[-1][0] != t:
                    topics.append((t, []))
                topics[-1][1].append((int(p), int(o), 1048576))
            s.sendall(fetch_request(11, topics, wait=int(words[1]), corr=corr)
                      + metadata_request(1, [topics[0][0]], corr=corr + 1))
            corr += 1
            data = read_frame(s)
            out = ['closed'] if data is None else parse_fetch(11, data)
            if data is not None:
                data = read_frame(s)
                out.append('closed' if data is None else 'metadata answered')
        elif words[0] == 'metadata':
            s.sendall(metadata_request(1, [words[1]], corr=corr))
            data = read_frame(s)
            out = ['closed'] if data is None else ['metadata answered']
        elif words[0] == 'listoffsets':
            s.sendall(list_offsets_request(5, words[1], int(words[2]), int(words[3]), corr=corr))
            data = read_frame(s)
            out = ['closed'] if data is None else parse_list_offsets(5, data)
        else:
            out = ['unknown command']
        for o in out:
            print(o)
        print('.', flush=True)
        if data is None:
            return


def cmd_fetchhostile(host, port, topic):
    cases = [
        ('max_bytes 2^31-1, partition bytes 2^31-1',
         fetch_request(11, [(topic, [(0, 0, 2**31 - 1)])], max_bytes=2**31 - 1)),
        ('negative max_bytes and partition bytes',
         fetch_request(11, [(topic, [(0, 0, -5)])], max_bytes=-1)),
        ('5000 partitions, most unknown',
         fetch_request(11, [(topic, [(p, 0, 1048576) for p in range(5000)])])),
        ('negative offsets',
         fetch_request(4, [(topic, [(0, -1, 1048576), (0, -2**63, 1048576)])])),
        ('offset 2^63-1', fetch_request(12, [(topic, [(0, 2**63 - 1, 1048576)])])),
        ('unknown and illegal topic names',
         fetch_request(12, [('no-such-topic', [(0, 0, 100)]), ('bad name!', [(0, 0, 100)]),
                            ('', [(0, 0, 100)])])),
        ('a session that does not exist', fetch_request(7, [(topic, [(0, 0, 100)])], session=12345, epoch=3)),
        ('an incremental epoch without a session', fetch_request(7, [(topic, [(0, 0, 100)])], epoch=5)),
        ('isolation level 7', fetch_request(4, [(topic, [(0, 0, 100)])], isolation=7)),
        ('a partition count past the bytes', None),
        ('200000 partitions', None),
        ('list offsets: timestamp -7 and 2^63-1', None),
    ]
    for name, req in cases:
        s = connect(host, port)
        if name == 'a partition count past the bytes':
            b = header(1, 4, 1, False) + struct.pack('>iiiib', -1, 0, 1, 100, 0)
            b += struct.pack('>i', 1) + struct.pack('>h', len(topic)) + topic.encode()
            b += struct.pack('>i', 2**31 - 1)
            req = frame(b)
        elif name == '200000 partitions':
            req = fetch_request(4, [(topic, [(0, 0, 100)] * 200000)])
        elif name.startswith('list offsets'):
            for ts in (-7, 2**63 - 1, -3):
                s2 = connect(host, port)
                s2.sendall(list_offsets_request(5, topic, 0, ts))
                d = read_frame(s2)
                r = Reader(d)
                r.i32()
                r.i32()
                r.array_len(False)
                r.string(False)
                r.array_len(False)
                r.i32()
                print('list offsets timestamp %d: error=%d' % (ts, r.i16()))
            continue
        send(s, req)
        try:
            data = read_frame(s)
        except OSError:
            data = None
        if data is None:
            print('%s: closed' % name)
            continue
        v = struct.unpack('>h', req[6:8])[0]
        lines = parse_fetch(v, data)
        # Each partition's error, or the top-level one if there are none.
        errs = sorted(set(l.split('error=')[1].split()[0] for l in lines if 'error=' in l and '/' in l)
                      or set(l.split('error=')[1].split()[0] for l in lines if 'error=' in l))
        print('%s: answered, errors %s, %s' % (name, ','.join(errs), lines[-1]))


def main():
    host, port, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    args = sys.argv[4:]
    if cmd == 'apiversions':
        cmd_apiversions(host, port, int(args[0]))
    elif cmd == 'metadata':
        cmd_metadata(host, port, int(args[0]), args[1:])
    elif cmd == 'badframes':
        cmd_badframes(host, port)
    elif cmd == 'mutations':
        cmd_mutations(host, port, int(args[0]), int(args[1]))
    elif cmd == 'hold':
        cmd_hold(host, port)
    elif cmd == 'byid':
        cmd_byid(host, port)
    elif cmd == 'twice':
        cmd_twice(host, port)
    elif cmd == 'create':
        cmd_create(host, port, int(args[0]), args[1] == 'validate', args[2:])
    elif cmd == 'delete':
        cmd_delete(host, port, int(args[0]), args[1:])
    elif cmd == 'partitions':
        cmd_partitions(host, port, int(args[0]), args[1] == 'validate', args[2:])
    elif cmd == 'configs':
        cmd_configs(host, port, int(args[0]), args[1:])
    elif cmd == 'cluster':
        cmd_cluster(host, port, int(args[0]), args[1] == 'ops', int(args[2]))
    elif cmd == 'adminhostile':
        cmd_adminhostile(host, port)
    elif cmd == 'adminmutations':
        cmd_adminmutations(host, port, int(args[0]), int(args[1]))
    elif cmd == 'unsupported':
        cmd_unsupported(host, port, int(args[0]))
    elif cmd == 'fetch':
        cmd_fetch(host, port, int(args[0]), args[1], int(args[2]), int(args[3]), args[4:])
    elif cmd == 'fetchmany':
        cmd_fetchmany(host, port, int(args[0]), int(args[1]), args[2:])
    elif cmd == 'session':
        cmd_session(host, port)
    elif cmd == 'listoffsets':
        cmd_listoffsets(host, port, int(args[0]), args[1], int(args[2]), int(args[3]))
    elif cmd == 'fetchhostile':
        cmd_fetchhostile(host, port, args[0])
    else:
        sys.exit('unknown command %s' % cmd)


if __name__ == '__main__':
    main()
