#!/usr/bin/python3
"""Probes of the gateway's resource limits for test/t/070_kafka_limits.pl.

  kafka_limits_probe.py HOST PORT idle
      ApiVersions, then nothing: prints whether the gateway closes it
  kafka_limits_probe.py HOST PORT longpoll TOPIC PARTITION OFFSET
      a Fetch waiting up to 600 s, then Metadata on the same connection
  kafka_limits_probe.py HOST PORT bigframes N SIZE
      N connections at once, each an ApiVersions request of SIZE bytes
      (a large tagged field in its header), sent in slices with pauses,
      the last byte held until all are that far (or 5 s passed)
  kafka_limits_probe.py HOST PORT budgetwait SIZE_A SIZE_B
      A sends half of a SIZE_A frame; B a whole SIZE_B frame; after a line
      on stdin, a small request on a third connection, then the rest of A
  kafka_limits_probe.py HOST PORT salt USER ...
      SCRAM-SHA-256's server-first message for each USER: salt, iterations

It prints one line per finding; the TAP test compares them.
"""
import os
import select
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kafka_probe import (Reader, apiversions_request, connect, fetch_request,  # noqa: E402
                         metadata_request, parse_fetch, read_frame, uvarint)
from kafka_sasl_probe import Scram, authenticate, handshake  # noqa: E402


def answered(s):
    try:
        return read_frame(s) is not None
    except (ConnectionResetError, BrokenPipeError):
        return False


def closed_within(s, seconds):
    """True once the gateway closes s (EOF), False if open after seconds."""
    s.settimeout(seconds)
    try:
        while True:
            if not s.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def cmd_idle(host, port):
    s = connect(host, port)
    s.sendall(apiversions_request(0))
    print('apiversions: %s' % ('answered' if answered(s) else 'closed'), flush=True)
    # Far longer than the test's --idle-timeout: only its absence ends here.
    print('idle: %s' % ('closed by the gateway' if closed_within(s, 120) else 'still open'))


def cmd_longpoll(host, port, topic, partition, offset):
    s = connect(host, port)
    s.sendall(fetch_request(11, [(topic, [(int(partition), int(offset), 1048576)])], wait=600000))
    print('sent', flush=True)
    data = read_frame(s)
    if data is None:
        print('fetch: closed')
        return
    for line in parse_fetch(11, data):
        print('fetch: ' + line)
    s.sendall(metadata_request(1, None, corr=2))
    print('then: %s' % ('answered' if answered(s) else 'closed'))


def apiversions_of_size(size, corr=1):
    """An ApiVersions v3 frame whose payload is size bytes: the padding is
    an unknown tagged field of the request header, which the gateway
    skips, so the request is valid and its answer small."""
    body = uvarint(len(b'limits') + 1) + b'limits' + uvarint(len(b'1') + 1) + b'1' + b'\x00'
    fixed = struct.pack('>hhi', 18, 3, corr) + struct.pack('>h', 5) + b'probe'
    pad = size - len(fixed) - len(body) - 2
    while True:
        tags = uvarint(1) + uvarint(0) + uvarint(pad)
        total = len(fixed) + len(tags) + pad + len(body)
        if total == size:
            break
        pad -= total - size
    payload = fixed + tags + bytes(pad) + body
    assert len(payload) == size
    return struct.pack('>i', size) + payload


def send_slowly(s, data, upto, piece=256 * 1024, pause=0.01):
    p = 0
    while p < upto:
        n = min(piece, upto - p)
        s.sendall(data[p:p + n])
        p += n
        time.sleep(pause)


def cmd_bigframes(host, port, n, size):
    n, size = int(n), int(size)
    data = memoryview(apiversions_of_size(size))
    barrier = threading.Barrier(n)
    results = [None] * n

    def one(i):
        try:
            s = connect(host, port)
            send_slowly(s, data, len(data) - 1)
            try:
                barrier.wait(timeout=5)
            except threading.BrokenBarrierError:
                pass
            s.sendall(data[len(data) - 1:])
            results[i] = answered(s)
            s.close()
        except OSError as e:
            results[i] = 'error %s' % e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print('answered %d of %d' % (sum(1 for r in results if r is True), n))


def cmd_budgetwait(host, port, size_a, size_b):
    fa = apiversions_of_size(int(size_a), corr=1)
    fb = apiversions_of_size(int(size_b), corr=2)
    a = connect(host, port)
    half = len(fa) // 2
    a.sendall(fa[:half])
    print('A: half sent', flush=True)
    b = connect(host, port)
    got_b = []

    def send_b():
        b.sendall(fb)
        got_b.append(answered(b))

    tb = threading.Thread(target=send_b)
    tb.start()
    sys.stdin.readline()         # the gateway logged that B waits
    c = connect(host, port)
    c.sendall(apiversions_request(0))
    print('small request meanwhile: %s' % ('answered' if answered(c) else 'closed'), flush=True)
    print('B before A is complete: %s' % ('answered' if got_b else 'waiting'), flush=True)
    a.sendall(fa[half:])
    print('A: %s' % ('answered' if answered(a) else 'closed'), flush=True)
    tb.join(120)
    print('B: %s' % ('answered' if got_b == [True] else 'not answered'))


def cmd_salt(host, port, users):
    for user in users:
        s = connect(host, port)
        error, mechs = handshake(s, 'SCRAM-SHA-256')
        sc = Scram(user, 'unused')
        error, msg, first = authenticate(s, sc.first())
        if error != 0:
            print('%s: error=%s' % (user, error))
            continue
        attrs = dict(kv.split('=', 1) for kv in first.decode().split(','))
        print('%s: salt=%s iterations=%s' % (user, attrs['s'], attrs['i']))
        s.close()


def main():
    host, port, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    args = sys.argv[4:]
    if cmd == 'idle':
        cmd_idle(host, port)
    elif cmd == 'longpoll':
        cmd_longpoll(host, port, *args)
    elif cmd == 'bigframes':
        cmd_bigframes(host, port, *args)
    elif cmd == 'budgetwait':
        cmd_budgetwait(host, port, *args)
    elif cmd == 'salt':
        cmd_salt(host, port, args)
    else:
        sys.exit('unknown command ' + cmd)


if __name__ == '__main__':
    main()
