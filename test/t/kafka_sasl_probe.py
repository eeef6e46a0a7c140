#!/usr/bin/python3
"""Raw SASL and TLS probes for test/t/066_kafka_sasl_tls.pl.

Real clients (kcat, confluent_kafka, kafka-python) test what clients do;
this sends what they never send: requests out of order, tampered and
replayed SCRAM messages, oversized tokens, a second authentication on an
authenticated connection, plaintext and garbage to a TLS listener.  Usage:

  kafka_sasl_probe.py [--tls CAFILE] HOST PORT login MECH USER PASSWORD [VERSION]
      authenticate (SaslHandshake v1, SaslAuthenticate VERSION, default 1;
      VERSION raw: SaslHandshake v0 and bare tokens), then Metadata v8 of
      every topic; with a line on stdin in between if MECH ends in "+hold"
  kafka_sasl_probe.py [--tls CAFILE] HOST PORT attacks USER PASSWORD
      (USER's PLAIN password; SCRAM cases use the same)
  kafka_sasl_probe.py HOST PORT tls-plaintext | tls-garbage | tls-stall

It prints one line per finding; the TAP test compares them.
"""
import base64
import hashlib
import hmac
import os
import socket
import ssl
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kafka_probe import (Reader, apiversions_request, frame, header,  # noqa: E402
                         metadata_request, read_frame, uvarint)

TIMEOUT = 600
CA = None


def connect(host, port):
    s = socket.create_connection((host, port), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if CA:
        ctx = ssl.create_default_context(cafile=CA)
        ctx.check_hostname = False
        s = ctx.wrap_socket(s)
    return s


def recv_frame(s):
    try:
        return read_frame(s)
    except (ConnectionResetError, ssl.SSLError):
        return None


def handshake(s, mech, version=1, corr=1):
    s.sendall(frame(header(17, version, corr, False)
                    + struct.pack('>h', len(mech)) + mech.encode()))
    data = recv_frame(s)
    if data is None:
        return 'closed', []
    r = Reader(data)
    r.i32()
    error = r.i16()
    mechs = [r.string(False) for _ in range(r.i32())]
    return error, mechs


def authenticate(s, token, version=1, corr=2):
    """(error, message, auth bytes) of a SaslAuthenticate, or 'closed'."""
    flexible = version >= 2
    if flexible:
        body = uvarint(len(token) + 1) + token + b'\x00'
    else:
        body = struct.pack('>i', len(token)) + token
    try:
        s.sendall(frame(header(36, version, corr, flexible) + body))
    except (BrokenPipeError, ConnectionResetError):
        return 'closed', None, None
    data = recv_frame(s)
    if data is None:
        return 'closed', None, None
    r = Reader(data)
    r.i32()
    r.tags(flexible)
    error = r.i16()
    msg = r.string(flexible)
    n = r.uvarint() - 1 if flexible else r.i32()
    auth = r.take(n)
    if version >= 1:
        r.take(8)                   # session_lifetime_ms
    r.tags(flexible)
    return error, msg, auth


def raw_token(s, token):
    s.sendall(struct.pack('>i', len(token)) + token)
    return recv_frame(s)


def closed(s):
    """True if the gateway closes the connection (reads to the end)."""
    try:
        while True:
            if not s.recv(65536):
                return True
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def saslname(u):
    return u.replace('=', '=3D').replace(',', '=2C')


class Scram:
    def __init__(self, user, password, nonce=None):
        self.user = user
        self.password = password.encode()
        self.nonce = nonce or base64.b64encode(os.urandom(18)).decode()
        self.bare = 'n=%s,r=%s' % (saslname(user), self.nonce)

    def first(self):
        return ('n,,' + self.bare).encode()

    def final(self, server_first, nonce=None, cbind='biws'):
        attrs = dict(kv.split('=', 1) for kv in server_first.split(','))
        self.server_nonce = attrs['r']
        salted = hashlib.pbkdf2_hmac('sha256', self.password,
                                     base64.b64decode(attrs['s']), int(attrs['i']))
        ck = hmac.new(salted, b'Client Key', 'sha256').digest()
        sk = hashlib.sha256(ck).digest()
        without = 'c=%s,r=%s' % (cbind, nonce or attrs['r'])
        auth = ('%s,%s,%s' % (self.bare, server_first, without)).encode()
        sig = hmac.new(sk, auth, 'sha256').digest()
        proof = bytes(a ^ b for a, b in zip(ck, sig))
        server_key = hmac.new(salted, b'Server Key', 'sha256').digest()
        self.server_sig = hmac.new(server_key, auth, 'sha256').digest()
        return ('%s,p=%s' % (without, base64.b64encode(proof).decode())).encode()

    def verified(self, server_final):
        return server_final == b'v=' + base64.b64encode(self.server_sig)


def metadata_ops(s, corr=9):
    """{topic: (error, authorized operations)} of a Metadata v8, or None."""
    try:
        s.sendall(metadata_request(8, None, corr))
    except (BrokenPipeError, ConnectionResetError):
        return None
    data = recv_frame(s)
    if data is None:
        return None
    r = Reader(data)
    r.i32()
    r.i32()
    for _ in range(r.i32()):
        r.i32(), r.string(False), r.i32(), r.string(False)
    r.string(False)
    r.i32()
    topics = {}
    for _ in range(r.i32()):
        error = r.i16()
        name = r.string(False)
        r.i8()
        for _ in range(r.i32()):
            r.i16(), r.i32(), r.i32(), r.i32()
            for _ in range(3):
                [r.i32() for _ in range(r.i32())]
        topics[name] = (error, r.i32())
    return topics


def show_metadata(s, label='metadata'):
    t = metadata_ops(s)
    if t is None:
        print('%s: closed' % label)
    else:
        print('%s: %s' % (label, ' '.join('%s=%d/%d' % (k, v[0], v[1]) for k, v in sorted(t.items()))
                          or 'no topics'), flush=True)


def login(s, mech, user, password, version):
    """Authenticates; prints the outcome; True on success."""
    raw = version == 'raw'
    error, mechs = handshake(s, mech, 0 if raw else 1)
    if error != 0:
        print('handshake: error=%s mechanisms=%s' % (error, ','.join(mechs)))
        return False
    if mech == 'PLAIN':
        token = ('\0%s\0%s' % (user, password)).encode()
        if raw:
            ans = raw_token(s, token)
            print('login: %s' % ('closed' if ans is None else 'ok' if ans == b'' else ans))
            return ans == b''
        error, msg, auth = authenticate(s, token, int(version))
        print('login: error=%s message=%s' % (error, msg))
        return error == 0
    sc = Scram(user, password)
    if raw:
        first = raw_token(s, sc.first())
        if first is None:
            print('login: closed')
            return False
        last = raw_token(s, sc.final(first.decode()))
        print('login: %s' % ('closed' if last is None else
                             'ok, server verified' if sc.verified(last) else 'bad server signature'))
        return last is not None
    error, msg, first = authenticate(s, sc.first(), int(version))
    if error != 0:
        print('login: error=%s message=%s' % (error, msg))
        return False
    error, msg, last = authenticate(s, sc.final(first.decode()), int(version), corr=3)
    if error != 0:
        print('login: error=%s message=%s' % (error, msg))
        return False
    print('login: ok, %s' % ('server verified' if sc.verified(last) else 'bad server signature'))
    return True


def cmd_login(host, port, mech, user, password, version='1'):
    hold = mech.endswith('+hold')
    mech = mech.replace('+hold', '')
    s = connect(host, port)
    if not login(s, mech, user, password, version):
        print('then: %s' % ('closed' if closed(s) else 'open'))
        return
    show_metadata(s)
    if hold:
        sys.stdin.readline()
        show_metadata(s, 'again')


def cmd_scram_split(host, port, user, password):
    """SCRAM with a pause (until a line on stdin) after server-first."""
    s = connect(host, port)
    handshake(s, 'SCRAM-SHA-256')
    sc = Scram(user, password)
    error, msg, first = authenticate(s, sc.first())
    print('server-first: error=%s' % error, flush=True)
    sys.stdin.readline()
    error, msg, last = authenticate(s, sc.final(first.decode()), corr=3)
    print('login: error=%s%s' % (error, ', server verified' if error == 0 and sc.verified(last) else ''))
    if error == 0:
        show_metadata(s)


def cmd_trickle(host, port, seconds, what='frame'):
    """A frame (or a TLS record) one byte every 5 s, never silent as long
    as conn.c's 30 s receive timeout."""
    s = socket.create_connection((host, port), timeout=TIMEOUT)
    s.sendall(b'\x16\x03\x01\x01\x00' if what == 'tls' else struct.pack('>i', 1000))
    for n in range(int(seconds) // 5):
        time.sleep(5)
        try:
            s.sendall(b'x')
        except (BrokenPipeError, ConnectionResetError):
            print('closed')
            return
    s.settimeout(1)
    print('closed' if closed(s) else 'still open')


def scram_first(s, user, nonce=None):
    sc = Scram(user, 'unused', nonce)
    error, msg, first = authenticate(s, sc.first())
    return sc, error, first


def cmd_attacks(host, port, user, password):
    def case(label, outcome):
        print('%s: %s' % (label, outcome), flush=True)

    # Nothing but ApiVersions and SASL before authentication.
    s = connect(host, port)
    s.sendall(apiversions_request(0))
    case('apiversions before authentication', 'answered' if recv_frame(s) else 'closed')
    s.sendall(metadata_request(1, None))
    case('metadata before authentication', 'closed' if recv_frame(s) is None else 'answered')

    s = connect(host, port)
    case('authenticate before handshake', authenticate(s, b'\0a\0b')[0])

    s = connect(host, port)
    error, mechs = handshake(s, 'GSSAPI')
    case('unknown mechanism', 'error=%s mechanisms=%s then %s'
         % (error, ','.join(mechs), 'closed' if closed(s) else 'open'))

    s = connect(host, port)
    handshake(s, 'SCRAM-SHA-256')
    s.sendall(metadata_request(1, None))
    case('metadata after handshake', 'closed' if recv_frame(s) is None else 'answered')

    # SCRAM out of order, tampered, replayed.
    s = connect(host, port)
    handshake(s, 'SCRAM-SHA-256')
    e = authenticate(s, b'c=biws,r=abcdef,p=' + base64.b64encode(b'x' * 32))
    case('scram client-final first', 'error=%s %s then %s' % (e[0], e[1], 'closed' if closed(s) else 'open'))

    s = connect(host, port)
    handshake(s, 'SCRAM-SHA-256')
    sc = Scram(user, password)
    error, msg, first = authenticate(s, sc.first())
    e = authenticate(s, sc.final(first.decode(), nonce=sc.nonce + 'forged'), corr=3)
    case('scram nonce not the server\'s', 'error=%s then %s' % (e[0], 'closed' if closed(s) else 'open'))

    for label, prefix in [('scram nonce after something other than the client\'s', 'x'),
                          ('scram nonce after the client\'s (librdkafka)', None)]:
        s = connect(host, port)
        handshake(s, 'SCRAM-SHA-256')
        sc = Scram(user, password)
        error, msg, first = authenticate(s, sc.first())
        server_nonce = first.decode().split(',')[0][2:]
        e = authenticate(s, sc.final(first.decode(), nonce=(prefix or sc.nonce) + server_nonce), corr=3)
        case(label, 'error=%s' % e[0])

    s = connect(host, port)
    handshake(s, 'SCRAM-SHA-256')
    sc = Scram(user, password)
    error, msg, first = authenticate(s, sc.first())
    e = authenticate(s, sc.final(first.decode(), cbind=base64.b64encode(b'y,,').decode()), corr=3)
    case('scram channel binding not the gs2 header', 'error=%s' % e[0])

    s = connect(host, port)
    handshake(s, 'SCRAM-SHA-256')
    sc = Scram(user, password, nonce='fixednonce')
    error, msg, first = authenticate(s, sc.first())
    final1 = sc.final(first.decode())
    e = authenticate(s, final1, corr=3)
    nonce1 = sc.server_nonce
    case('scram first exchange', 'error=%s' % e[0])
    s = connect(host, port)
    handshake(s, 'SCRAM-SHA-256')
    sc = Scram(user, password, nonce='fixednonce')
    error, msg, first = authenticate(s, sc.first())
    sc.final(first.decode())
    case('scram server nonce differs for the same client nonce', sc.server_nonce != nonce1)
    case('scram replayed client-final', 'error=%s' % authenticate(s, final1, corr=3)[0])

    for label, tok in [('scram channel binding asked', b'p=tls-unique,,n=%s,r=abc' % user.encode()),
                       ('scram extension', b'n,,n=%s,r=abc,x=1' % user.encode()),
                       ('scram mandatory extension', b'n,,m=1,n=%s,r=abc' % user.encode()),
                       ('scram other authzid', b'n,a=someone,n=%s,r=abc' % user.encode()),
                       ('scram bad saslname', b'n,,n=a=2Xb,r=abc'),
                       ('scram nul byte', b'n,,n=%s,r=ab\0c' % user.encode()),
                       ('scram empty', b''),
                       ('scram oversized token', b'n,,n=%s,r=%s' % (user.encode(), b'a' * 9000))]:
        s = connect(host, port)
        handshake(s, 'SCRAM-SHA-256')
        e = authenticate(s, tok)
        case(label, 'error=%s then %s' % (e[0], 'closed' if closed(s) else 'open'))

    s = connect(host, port)
    handshake(s, 'SCRAM-SHA-256')
    sc, error, first = scram_first(s, user)
    e = authenticate(s, sc.first(), corr=3)
    case('scram client-first twice', 'error=%s' % e[0])

    # PLAIN's malformed messages.
    for label, tok in [('plain empty password', ('\0%s\0' % user).encode()),
                       ('plain other authzid', ('someone\0%s\0%s' % (user, password)).encode()),
                       ('plain no separators', b'garbage'),
                       ('plain extra separator', ('\0%s\0%s\0' % (user, password)).encode())]:
        s = connect(host, port)
        handshake(s, 'PLAIN')
        case(label, 'error=%s' % authenticate(s, tok)[0])

    # A frame too large before authentication: closed unread.
    s = connect(host, port)
    s.sendall(struct.pack('>i', 600000) + b'x' * 100)
    case('600000-byte frame before authentication', 'closed' if closed(s) else 'open')

    # Bare tokens after SaslHandshake v0: garbage closes.
    s = connect(host, port)
    handshake(s, 'SCRAM-SHA-256', 0)
    case('raw garbage after handshake v0', 'closed' if raw_token(s, b'garbage') is None else 'answered')

    # Authenticated, then a second handshake or token: refused, same role.
    s = connect(host, port)
    login(s, 'PLAIN', user, password, '1')
    error, mechs = handshake(s, 'PLAIN', 1, corr=5)
    case('second handshake', 'error=%s' % error)
    e = authenticate(s, ('\0someone\0x').encode(), 2, corr=6)
    case('second authenticate', 'error=%s message=%s' % (e[0], e[1]))
    show_metadata(s, 'still')


def cmd_tls(host, port, what):
    s = socket.create_connection((host, port), timeout=TIMEOUT)
    if what == 'tls-plaintext':
        s.sendall(apiversions_request(0))
    elif what == 'tls-garbage':
        s.sendall(b'\x16\x03\x01\x00\x10' + os.urandom(16) + os.urandom(300))
    else:
        print('stalling', flush=True)
        print('stalled: %s' % ('closed' if closed(s) else 'open'), flush=True)
        return
    print('%s: %s' % (what, 'closed' if closed(s) else 'open'))


def main():
    global CA
    args = sys.argv[1:]
    if args[0] == '--tls':
        CA = args[1]
        args = args[2:]
    host, port, cmd = args[0], int(args[1]), args[2]
    if cmd == 'login':
        cmd_login(host, port, *args[3:])
    elif cmd == 'trickle':
        cmd_trickle(host, port, *args[3:])
    elif cmd == 'scram-split':
        cmd_scram_split(host, port, *args[3:])
    elif cmd == 'attacks':
        cmd_attacks(host, port, *args[3:])
    elif cmd.startswith('tls-'):
        cmd_tls(host, port, cmd)
    else:
        sys.exit('unknown command ' + cmd)


if __name__ == '__main__':
    main()
