#!/usr/bin/python3
"""Raw group-protocol probes for test/t/064_kafka_group_api.pl.

Real clients (confluent_kafka, kafka-python, kcat) test what clients do;
this sends every version of the group APIs, and what clients never send
(wrong generations, absurd counts, huge metadata, NUL bytes).  Usage:

  kafka_group_probe.py HOST PORT versions
  kafka_group_probe.py HOST PORT find
  kafka_group_probe.py HOST PORT walk TOPIC          (one member, every version)
  kafka_group_probe.py HOST PORT offsets TOPIC       (commit/fetch, every version)
  kafka_group_probe.py HOST PORT hostile TOPIC
  kafka_group_probe.py HOST PORT stable GROUP TOPIC  (joins, syncs, prints
                                    its member id and generation, then
                                    heartbeats until stdin closes)
  kafka_group_probe.py HOST PORT join GROUP TOPIC    (one JoinGroup, prints it)
  kafka_group_probe.py HOST PORT bench-heartbeat N TOPIC [DSN]
  kafka_group_probe.py HOST PORT bench-rebalance N TOPIC

It prints one line per finding; the TAP test compares them.
"""
import os
import statistics
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kafka_probe import connect, frame, header, read_frame, uvarint, Reader  # noqa: E402

FIRST_FLEX = {8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4, 15: 5, 16: 3, 18: 3, 42: 2, 47: 99}


class W:
    def __init__(self, flex):
        self.flex = flex
        self.b = b''

    def i8(self, v):
        self.b += struct.pack('>b', v)
        return self

    def i16(self, v):
        self.b += struct.pack('>h', v)
        return self

    def i32(self, v):
        self.b += struct.pack('>i', v)
        return self

    def i64(self, v):
        self.b += struct.pack('>q', v)
        return self

    def bool(self, v):
        return self.i8(1 if v else 0)

    def str(self, v):
        if v is None:
            self.b += uvarint(0) if self.flex else struct.pack('>h', -1)
            return self
        if isinstance(v, str):
            v = v.encode()
        self.b += (uvarint(len(v) + 1) if self.flex else struct.pack('>h', len(v))) + v
        return self

    def bytes(self, v):
        self.b += (uvarint(len(v) + 1) if self.flex else struct.pack('>i', len(v))) + v
        return self

    def arr(self, items, fn=None):
        if items is None:
            self.b += uvarint(0) if self.flex else struct.pack('>i', -1)
            return self
        self.b += uvarint(len(items) + 1) if self.flex else struct.pack('>i', len(items))
        for it in items:
            fn(self, it)
        return self

    def tags(self):
        if self.flex:
            self.b += b'\x00'
        return self


class R(Reader):
    def __init__(self, data, flex):
        super().__init__(data)
        self.flex = flex

    def i64(self):
        return struct.unpack('>q', self.take(8))[0]

    def s(self):
        return self.string(self.flex)

    def by(self):
        n = self.uvarint() - 1 if self.flex else self.i32()
        return None if n < 0 else self.take(n)

    def n(self):
        return self.array_len(self.flex)

    def t(self):
        self.tags(self.flex)


class Conn:
    def __init__(self, host, port):
        self.s = connect(host, port)
        self.corr = 0

    def call(self, key, version, body_fn):
        """Sends a request; returns a reader of the response body (None if
        the connection closed)."""
        flex = version >= FIRST_FLEX[key]
        w = W(flex)
        body_fn(w)
        self.corr += 1
        self.s.sendall(frame(header(key, version, self.corr, flex) + w.b))
        data = read_frame(self.s)
        if data is None:
            return None
        r = R(data, flex)
        assert r.i32() == self.corr
        if key != 18:  # ApiVersions' response header has no tags
            r.t()
        return r

    def raw(self, key, version, body):
        flex = version >= FIRST_FLEX[key]
        self.corr += 1
        self.s.sendall(frame(header(key, version, self.corr, flex) + body))
        try:
            data = read_frame(self.s)
        except ConnectionResetError:
            return None
        return data


def subscription(topics, userdata=b''):
    """A ConsumerProtocolSubscription v0."""
    b = struct.pack('>hi', 0, len(topics))
    for t in topics:
        b += struct.pack('>h', len(t)) + t.encode()
    return b + struct.pack('>i', len(userdata)) + userdata


def assignment(topic, parts):
    """A ConsumerProtocolAssignment v0."""
    b = struct.pack('>hi', 0, 1) + struct.pack('>h', len(topic)) + topic.encode()
    b += struct.pack('>i', len(parts)) + b''.join(struct.pack('>i', p) for p in parts)
    return b + struct.pack('>i', 0)


# --- the requests, any version -------------------------------------------

def join(c, v, group, member='', protocols=None, session=10000, rebalance=10000,
         instance=None, ptype='consumer'):
    def body(w):
        w.str(group).i32(session)
        if v >= 1:
            w.i32(rebalance)
        w.str(member)
        if v >= 5:
            w.str(instance)
        w.str(ptype)
        w.arr(protocols, lambda w, p: w.str(p[0]).bytes(p[1]).tags())
        if v >= 8:
            w.str('probe')
        w.tags()
    r = c.call(11, v, body)
    if r is None:
        return None
    out = {}
    if v >= 2:
        r.i32()
    out['error'] = r.i16()
    out['generation'] = r.i32()
    if v >= 7:
        out['protocol_type'] = r.s()
    out['protocol'] = r.s()
    out['leader'] = r.s()
    if v >= 9:
        out['skip'] = r.i8()
    out['member'] = r.s()
    out['members'] = []
    for _ in range(r.n()):
        m = r.s()
        inst = r.s() if v >= 5 else None
        meta = r.by()
        r.t()
        out['members'].append((m, inst, meta))
    r.t()
    out['rest'] = r.rest()
    return out


def sync(c, v, group, gen, member, assignments, instance=None, ptype=None, pname=None):
    def body(w):
        w.str(group).i32(gen).str(member)
        if v >= 3:
            w.str(instance)
        if v >= 5:
            w.str(ptype).str(pname)
        w.arr(assignments, lambda w, a: w.str(a[0]).bytes(a[1]).tags())
        w.tags()
    r = c.call(14, v, body)
    if r is None:
        return None
    out = {}
    if v >= 1:
        r.i32()
    out['error'] = r.i16()
    if v >= 5:
        out['protocol_type'] = r.s()
        out['protocol'] = r.s()
    out['assignment'] = r.by()
    r.t()
    out['rest'] = r.rest()
    return out


def heartbeat(c, v, group, gen, member, instance=None):
    def body(w):
        w.str(group).i32(gen).str(member)
        if v >= 3:
            w.str(instance)
        w.tags()
    r = c.call(12, v, body)
    if r is None:
        return None
    if v >= 1:
        r.i32()
    e = r.i16()
    r.t()
    return e if r.rest() == 0 else 'rest=%d' % r.rest()


def leave(c, v, group, members):
    """members: [(member_id, instance_id)]; v0-2 take the first."""
    def body(w):
        w.str(group)
        if v <= 2:
            w.str(members[0][0])
        else:
            def one(w, m):
                w.str(m[0]).str(m[1])
                if v >= 5:
                    w.str('bye')
                w.tags()
            w.arr(members, one)
        w.tags()
    r = c.call(13, v, body)
    if r is None:
        return None
    if v >= 1:
        r.i32()
    out = {'error': r.i16(), 'members': []}
    if v >= 3:
        for _ in range(r.n()):
            m = r.s()
            i = r.s()
            e = r.i16()
            r.t()
            out['members'].append((m, i, e))
    r.t()
    out['rest'] = r.rest()
    return out


def commit(c, v, group, gen, member, offsets, instance=None):
    """offsets: {topic: [(partition, offset, metadata)]}"""
    def body(w):
        w.str(group)
        if v >= 1:
            w.i32(gen).str(member)
        if v >= 7:
            w.str(instance)
        if 2 <= v <= 4:
            w.i64(-1)

        def part(w, p):
            w.i32(p[0]).i64(p[1])
            if v >= 6:
                w.i32(-1)
            if v == 1:
                w.i64(-1)
            w.str(p[2]).tags()
        w.arr(sorted(offsets.items()), lambda w, t: w.str(t[0]).arr(t[1], part).tags())
        w.tags()
    r = c.call(8, v, body)
    if r is None:
        return None
    if v >= 3:
        r.i32()
    out = []
    for _ in range(r.n()):
        t = r.s()
        for _ in range(r.n()):
            p = r.i32()
            e = r.i16()
            r.t()
            out.append((t, p, e))
        r.t()
    r.t()
    return out if r.rest() == 0 else 'rest=%d' % r.rest()


def read_fetch_topics(r, v):
    out = []
    for _ in range(r.n()):
        t = r.s()
        for _ in range(r.n()):
            p = r.i32()
            off = r.i64()
            if v >= 5:
                r.i32()
            meta = r.s()
            e = r.i16()
            r.t()
            out.append((t, p, off, meta, e))
        r.t()
    return out


def fetch(c, v, group, parts):
    """parts: {topic: [partition]} or None (all); v8: group is a list of
    (group, parts)."""
    def topics(w, ps):
        w.arr(None if ps is None else sorted(ps.items()),
              lambda w, t: w.str(t[0]).arr(t[1], lambda w, p: w.i32(p)).tags())

    def body(w):
        if v >= 8:
            w.arr(group, lambda w, g: (w.str(g[0]), topics(w, g[1]), w.tags()))
        else:
            w.str(group)
            topics(w, parts)
        if v >= 7:
            w.bool(True)
        w.tags()
    r = c.call(9, v, body)
    if r is None:
        return None
    if v >= 3:
        r.i32()
    if v >= 8:
        out = []
        for _ in range(r.n()):
            g = r.s()
            ts = read_fetch_topics(r, v)
            e = r.i16()
            r.t()
            out.append((g, ts, e))
        r.t()
        return out
    ts = read_fetch_topics(r, v)
    e = r.i16() if v >= 2 else None
    r.t()
    return (ts, e) if r.rest() == 0 else 'rest=%d' % r.rest()


def find(c, v, keys, key_type=0):
    def body(w):
        if v <= 3:
            w.str(keys[0])
        if v >= 1:
            w.i8(key_type)
        if v >= 4:
            w.arr(keys, lambda w, k: w.str(k))
        w.tags()
    r = c.call(10, v, body)
    if v >= 1:
        r.i32()
    out = []
    if v <= 3:
        e = r.i16()
        msg = r.s() if v >= 1 else None
        node = r.i32()
        host = r.s()
        port = r.i32()
        out.append((keys[0], e, msg, node, host, port))
    else:
        for _ in range(r.n()):
            k = r.s()
            node = r.i32()
            host = r.s()
            port = r.i32()
            e = r.i16()
            msg = r.s()
            r.t()
            out.append((k, e, msg, node, host, port))
    r.t()
    assert r.rest() == 0
    return out


def describe(c, v, groups, ops=False):
    def body(w):
        w.arr(groups, lambda w, g: w.str(g))
        if v >= 3:
            w.bool(ops)
        w.tags()
    r = c.call(15, v, body)
    if r is None:
        return None
    if v >= 1:
        r.i32()
    out = []
    for _ in range(r.n()):
        e = r.i16()
        g = r.s()
        state = r.s()
        ptype = r.s()
        pdata = r.s()
        members = []
        for _ in range(r.n()):
            m = r.s()
            inst = r.s() if v >= 4 else None
            cid = r.s()
            host = r.s()
            meta = r.by()
            asg = r.by()
            r.t()
            members.append((m, inst, cid, host, meta, asg))
        ops_ = r.i32() if v >= 3 else None
        r.t()
        out.append((g, e, state, ptype, pdata, members, ops_))
    r.t()
    assert r.rest() == 0
    return out


def list_groups(c, v, states=None):
    def body(w):
        if v >= 4:
            w.arr(states or [], lambda w, s: w.str(s))
        w.tags()
    r = c.call(16, v, body)
    if v >= 1:
        r.i32()
    e = r.i16()
    out = []
    for _ in range(r.n()):
        g = r.s()
        pt = r.s()
        st = r.s() if v >= 4 else None
        r.t()
        out.append((g, pt, st))
    r.t()
    assert r.rest() == 0
    return e, out


def delete_groups(c, v, groups):
    r = c.call(42, v, lambda w: (w.arr(groups, lambda w, g: w.str(g)), w.tags()))
    r.i32()
    out = []
    for _ in range(r.n()):
        g = r.s()
        e = r.i16()
        r.t()
        out.append((g, e))
    r.t()
    assert r.rest() == 0
    return out


def offset_delete(c, group, parts):
    def body(w):
        w.str(group)
        w.arr(sorted(parts.items()), lambda w, t: w.str(t[0]).arr(t[1], lambda w, p: w.i32(p)))
    r = c.call(47, 0, body)
    e = r.i16()
    r.i32()
    out = []
    for _ in range(r.n()):
        t = r.s()
        for _ in range(r.n()):
            out.append((t, r.i32(), r.i16()))
    assert r.rest() == 0
    return e, out


# --- commands ---------------------------------------------------------------

def join_until_member(c, v, group, topic, **kw):
    """JoinGroup, and again with the id MEMBER_ID_REQUIRED gave (v4+)."""
    protos = [('range', subscription([topic]))]
    j = join(c, v, group, protocols=protos, **kw)
    if j['error'] == 79:
        j = join(c, v, group, member=j['member'], protocols=protos, **kw)
    return j


def cmd_versions(host, port):
    c = Conn(host, port)
    r = c.call(18, 3, lambda w: w.str('probe').str('1.0').tags())
    r.i16()
    for _ in range(r.n()):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        r.t()
        if k in FIRST_FLEX and k != 18:
            print('api %d: %d-%d' % (k, lo, hi))


def cmd_find(host, port):
    c = Conn(host, port)
    for v in range(5):
        for k, e, msg, node, h, p in find(c, v, ['g1', 'other']):
            print('v%d %s: error %d node %d %s:%d msg %s' % (v, k, e, node, h, p, msg))
    for v in (1, 4):
        for k, e, msg, node, h, p in find(c, v, ['tx'], key_type=1):
            print('v%d transaction %s: error %d node %d msg %s' % (v, k, e, node, msg))


def cmd_walk(host, port, topic):
    """One member through each JoinGroup version and, with it, the
    highest version of the others it allows."""
    for v in range(10):
        c = Conn(host, port)
        group = 'walk-%d' % v
        protos = [('range', subscription([topic])), ('roundrobin', subscription([topic], b'x'))]
        first = join(c, v, group, protocols=protos, instance='inst-%d' % v if v >= 5 else None)
        j = first
        if first['error'] == 79:
            j = join(c, v, group, member=first['member'], protocols=protos,
                     instance='inst-%d' % v if v >= 5 else None)
        print('join v%d: first error %d, then error %d generation %d protocol %s type %s '
              'leader is member %s, %d members, metadata back %s, rest %d'
              % (v, first['error'], j['error'], j['generation'], j['protocol'], j.get('protocol_type'),
                 j['leader'] == j['member'], len(j['members']),
                 j['members'] and j['members'][0][2] == protos[0][1], j['rest']))
        m, gen = j['member'], j['generation']
        inst = 'inst-%d' % v if v >= 5 else None
        sv = min(v, 5)
        s = sync(c, sv, group, gen, m, [(m, assignment(topic, [0, 1]))], instance=inst,
                 ptype='consumer' if sv >= 5 else None, pname='range' if sv >= 5 else None)
        print('sync v%d: error %d assignment back %s protocol %s/%s'
              % (sv, s['error'], s['assignment'] == assignment(topic, [0, 1]),
                 s.get('protocol_type'), s.get('protocol')))
        hv = min(v, 4)
        print('heartbeat v%d: %s, wrong generation %s, unknown member %s'
              % (hv, heartbeat(c, hv, group, gen, m, inst), heartbeat(c, hv, group, gen + 1, m, inst),
                 heartbeat(c, hv, group, gen, 'nobody')))
        cv = min(v, 8)
        print('commit v%d: %s' % (cv, commit(c, cv, group, gen, m, {topic: [(0, v, 'm%d' % v)]}, inst)))
        fv = min(v, 8)
        f = fetch(c, fv, [(group, {topic: [0, 1]})] if fv >= 8 else group,
                  None if fv >= 8 else {topic: [0, 1]})
        print('fetch v%d: %s' % (fv, f))
        lv = min(v, 5)
        lg = leave(c, lv, group, [(m, None)])
        print('leave v%d: error %d members %s' % (lv, lg['error'], lg['members']))
        print('heartbeat after leave: %s' % heartbeat(c, hv, group, gen, m))


def cmd_offsets(host, port, topic):
    """A simple consumer's commits (no member) in each OffsetCommit
    version, each read back by every OffsetFetch version."""
    c = Conn(host, port)
    for v in range(9):
        group = 'simple-%d' % v
        print('commit v%d: %s' % (v, commit(c, v, group, -1, '', {topic: [(0, 1 + v, None), (1, 2, 'meta')],
                                                                    'no-such-topic': [(0, 1, None)]})))
        for fv in range(9):
            if fv >= 8:
                f = fetch(c, fv, [(group, {topic: [0, 1, 2]}), (group, None), ('no-group', None)], None)
            else:
                f = fetch(c, fv, group, {topic: [0, 1, 2]})
            print('  fetch v%d: %s' % (fv, f))
        if v >= 2:
            print('  fetch all v2: %s' % (fetch(c, 2, group, None),))


def cmd_hostile(host, port, topic):
    c = Conn(host, port)
    p = [('range', subscription([topic]))]
    print('empty group id: %d' % join(c, 5, '', protocols=p)['error'])
    print('group id with NUL: %d' % join(c, 5, 'a\x00b', protocols=p)['error'])
    print('group id not UTF-8: %d' % join(c, 5, b'\xff\xfe', protocols=p)['error'])
    print('no protocols: %d' % join(c, 5, 'h1', protocols=[])['error'])
    print('session timeout too small: %d' % join(c, 5, 'h1', protocols=p, session=1)['error'])
    print('unknown member in a new group: %d' % join(c, 5, 'h-new', member='ghost', protocols=p)['error'])
    print('heartbeat, unknown group: %d' % heartbeat(c, 4, 'never-seen', 1, 'ghost'))
    print('sync, unknown group: %d' % sync(c, 5, 'never-seen', 1, 'ghost', [])['error'])
    print('leave, unknown group: %s' % (leave(c, 4, 'never-seen', [('ghost', None), ('', 'inst')]),))
    print('commit, unknown group, generation 3: %s'
          % commit(c, 8, 'never-seen', 3, 'ghost', {topic: [(0, 1, None)]}))
    print('describe unknown: %s' % describe(c, 5, ['never-seen', '']))
    print('delete unknown: %s' % delete_groups(c, 2, ['never-seen', '']))
    print('offset delete unknown: %s' % (offset_delete(c, 'never-seen', {topic: [0]}),))
    # Huge metadata: 4 MB of subscription userdata, back to the leader whole.
    big = subscription([topic], b'u' * (4 << 20))
    j = join(c, 5, 'huge', protocols=[('range', big)], session=60000, rebalance=60000)
    j = join(c, 5, 'huge', member=j['member'], protocols=[('range', big)], session=60000, rebalance=60000)
    print('huge metadata: error %d, back whole %s' % (j['error'], bool(j['members']) and j['members'][0][2] == big))
    lg = leave(c, 4, 'huge', [(j['member'], None)])
    print('huge member leaves: %s' % (lg['members'],))
    # A leader's assignment for 50000 members that are not there.  (Each
    # member of a LeaveGroup costs the group's authorization check, which
    # reads every member's subscription: 2000 here, not more, see
    # docs/kafka.md.)
    j = join_until_member(c, 5, 'strangers', topic)
    s = sync(c, 5, 'strangers', j['generation'], j['member'],
             [('m%d' % i, b'x' * 10) for i in range(50000)] + [(j['member'], b'mine')])
    print('sync with 50000 strangers: error %d, own %s' % (s['error'], s['assignment']))
    lg = leave(c, 4, 'strangers', [('m%d' % i, None) for i in range(2000)] + [(j['member'], None)])
    print('leave of 2001: error %d, %d results, unknown %d, left %s'
          % (lg['error'], len(lg['members']), sum(1 for m in lg['members'] if m[2] == 25),
             lg['members'][-1][0] == j['member'] and lg['members'][-1][2] == 0))
    print('describe 10000 unknown: %d Dead'
          % sum(1 for g in describe(c, 5, ['x%d' % i for i in range(10000)]) if g[2] == 'Dead'))
    # Absurd counts close the connection (and only it).
    for name, key, v, body in [
            ('join, 2^31-1 protocols', 11, 5,
             W(False).str('g').i32(10000).i32(10000).str('').str(None).str('consumer').i32(0x7fffffff).b),
            ('sync, 2^31-1 assignments', 14, 3, W(False).str('g').i32(1).str('m').str(None).i32(0x7fffffff).b),
            ('leave, 2^31-1 members', 13, 3, W(False).str('g').i32(0x7fffffff).b),
            ('commit, 2^31-1 topics', 8, 2, W(False).str('g').i32(1).str('m').i64(-1).i32(0x7fffffff).b),
            ('fetch v8, 2^31-1 groups', 9, 8, uvarint(0x7fffffff) + b'\x00'),
            ('describe, 2^31-1 groups', 15, 0, W(False).i32(0x7fffffff).b),
            ('truncated join', 11, 5, W(False).str('g').i32(10000).b),
            # A group name cut short, or null: the gateway crashed on these.
            ('describe, a name cut short', 15, 0, W(False).i32(1).b + struct.pack('>h', 5) + b'ab'),
            ('describe, a null name', 15, 0, W(False).i32(1).b + struct.pack('>h', -1)),
            ('list v4, a state cut short', 16, 4, uvarint(2) + uvarint(9) + b'Sta' + b'\x00'),
            ('delete, a name cut short', 42, 1, W(False).i32(2).str('g').b + struct.pack('>h', 300) + b'x'),
            ('find, trailing bytes', 10, 1, W(False).str('g').i8(0).i8(0).b)]:
        d = Conn(host, port)
        got = d.raw(key, v, body)
        print('%s: %s' % (name, 'closed' if got is None else 'answered %d bytes' % len(got)))
    print('first connection still served: %s' % (heartbeat(c, 4, 'never-seen', 1, 'ghost'),))


def cmd_stable(host, port, group, topic):
    c = Conn(host, port)
    j = join_until_member(c, 5, group, topic, session=60000)
    s = sync(c, 5, group, j['generation'], j['member'],
             [(j['member'], assignment(topic, [0]))] if j['leader'] == j['member'] else [])
    print('member %s generation %d sync %d' % (j['member'], j['generation'], s['error']), flush=True)
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        print('heartbeat %s' % heartbeat(c, 4, group, j['generation'], j['member']), flush=True)


def cmd_join(host, port, group, topic):
    c = Conn(host, port)
    try:
        j = join_until_member(c, 5, group, topic, session=60000, rebalance=600000)
        print('join error %d' % j['error'], flush=True)
    except Exception as e:
        print('join: %s' % type(e).__name__, flush=True)


def cmd_bench_heartbeat(host, port, n, topic, dsn=None):
    """Heartbeat round trips through the gateway; with a DSN, alternating
    with the same eventlog.kafka_heartbeat call over libpq (psycopg), the
    baseline of what the gateway adds."""
    c = Conn(host, port)
    j = join_until_member(c, 5, 'bench-hb', topic)
    sync(c, 5, 'bench-hb', j['generation'], j['member'], [(j['member'], b'')])
    pg = None
    if dsn:
        import psycopg
        pg = psycopg.connect(dsn, autocommit=True)
        pg.execute("SELECT pg_catalog.set_config('search_path', '', false)")
    times, base = [], []
    q = 'SELECT eventlog.kafka_heartbeat(%s, %s, %s)'
    for _ in range(n):
        t0 = time.perf_counter()
        e = heartbeat(c, 4, 'bench-hb', j['generation'], j['member'])
        times.append(time.perf_counter() - t0)
        assert e == 0, e
        if pg:
            t0 = time.perf_counter()
            e = pg.execute(q, ('bench-hb', j['generation'], j['member']), prepare=True).fetchone()[0]
            base.append(time.perf_counter() - t0)
            assert e == 0, e
    leave(c, 4, 'bench-hb', [(j['member'], None)])
    print('heartbeat round trip through the gateway: median %.3f ms, p90 %.3f ms over %d'
          % (statistics.median(times) * 1e3, sorted(times)[int(n * 0.9)] * 1e3, n))
    if pg:
        print('kafka_heartbeat over libpq: median %.3f ms, p90 %.3f ms; ratio of medians %.2f'
              % (statistics.median(base) * 1e3, sorted(base)[int(n * 0.9)] * 1e3,
                 statistics.median(times) / statistics.median(base)))


def cmd_bench_rebalance(host, port, n, topic):
    """A rebalance of a stable group of 3: every member rejoins at once
    and syncs; from the first JoinGroup sent to the last SyncGroup
    answered.  A member whose JoinGroup came before the leader's (which
    starts the rebalance) got its old generation back: it heartbeats until
    told REBALANCE_IN_PROGRESS and joins again, as a client does."""
    group = 'bench-rb-%d' % os.getpid()
    conns = [Conn(host, port) for _ in range(3)]
    members = [''] * 3
    protos = [('range', subscription([topic]))]

    def round_(i, out, prev):
        while True:
            j = join(conns[i], 5, group, member=members[i], protocols=protos)
            if j['error'] == 79:
                j = join(conns[i], 5, group, member=j['member'], protocols=protos)
            if j['error'] == 25:  # expired meanwhile: join as new
                members[i] = ''
                continue
            assert j['error'] in (0, 27), j
            members[i] = j['member']
            if j['error'] == 0 and j['generation'] != prev:
                break
            while heartbeat(conns[i], 4, group, j['generation'], members[i]) == 0:
                time.sleep(0.001)
        asg = [(m[0], assignment(topic, [k])) for k, m in enumerate(j['members'])]
        s = sync(conns[i], 5, group, j['generation'], j['member'], asg)
        out[i] = (j['generation'], s['error'])

    times = []
    prev = None
    r = 0
    while len(times) < n:
        out = [None] * 3
        t0 = time.perf_counter()
        threads = [threading.Thread(target=round_, args=(i, out, prev)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        ok = None not in out and len(set(out)) == 1 and out[0][1] == 0
        if ok and r > 0:
            times.append(elapsed)
        prev = out[0][0] if ok else None
        r += 1
    print('rebalance of 3 members (join to sync): median %.1f ms over %d (%d rounds)'
          % (statistics.median(times) * 1e3, n, r))
    leave(conns[0], 4, group, [(m, None) for m in members])


def main():
    host, port, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    a = sys.argv[4:]
    if cmd == 'versions':
        cmd_versions(host, port)
    elif cmd == 'find':
        cmd_find(host, port)
    elif cmd == 'walk':
        cmd_walk(host, port, a[0])
    elif cmd == 'offsets':
        cmd_offsets(host, port, a[0])
    elif cmd == 'hostile':
        cmd_hostile(host, port, a[0])
    elif cmd == 'stable':
        cmd_stable(host, port, a[0], a[1])
    elif cmd == 'join':
        cmd_join(host, port, a[0], a[1])
    elif cmd == 'bench-heartbeat':
        cmd_bench_heartbeat(host, port, int(a[0]), a[1], a[2] if len(a) > 2 else None)
    elif cmd == 'bench-rebalance':
        cmd_bench_rebalance(host, port, int(a[0]), a[1])
    else:
        sys.exit('unknown command %s' % cmd)


if __name__ == '__main__':
    main()
