#!/usr/bin/python3
"""Real Kafka clients in consumer groups, for test/t/064_kafka_group_api.pl.

  kafka_group_clients.py ck-group BOOTSTRAP TOPIC GROUP NPARTS MODE
      three confluent_kafka (librdkafka) consumers in one group: the
      assignment (every partition once), commit(offsets=...) and
      committed(), one member leaving (its partitions move).  MODE
      "consume" also consumes every record once (needs Fetch); "members"
      uses group membership alone (paused partitions, explicit offsets).
  kafka_group_clients.py kp-group BOOTSTRAP TOPIC GROUP MODE
      a kafka-python KafkaConsumer with group_id: join, commit, committed.
  kafka_group_clients.py ck-admin BOOTSTRAP
      confluent_kafka AdminClient.list_groups().
  kafka_group_clients.py kp-admin BOOTSTRAP GROUP...
      kafka-python KafkaAdminClient: list, describe, offsets, delete.

Reads a line from stdin where the TAP test checks SQL in between (the
script prints "waiting: ..." first).  Prints one line per finding.
"""
import sys
import threading
import time

WAIT = 60


def wait_for(what, cond, timeout=WAIT):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    print('timed out: %s' % what, flush=True)
    return False


def pause_for_tap(what):
    print('waiting: %s' % what, flush=True)
    sys.stdin.readline()


def ck_group(bootstrap, topic, group, nparts, mode):
    from confluent_kafka import Consumer, TopicPartition

    consume = mode == 'consume'
    consumers = []
    assigned = [set() for _ in range(3)]
    records = []
    lock = threading.Lock()
    stop = [False] * 3

    def make(i):
        conf = {'bootstrap.servers': bootstrap, 'group.id': group,
                'client.id': 'ck-%d' % i,
                'session.timeout.ms': 6000, 'heartbeat.interval.ms': 300,
                'enable.auto.commit': False, 'auto.offset.reset': 'earliest',
                'partition.assignment.strategy': 'range',
                'enable.partition.eof': False}
        c = Consumer(conf)

        def on_assign(cons, parts):
            with lock:
                assigned[i] = {p.partition for p in parts}
            if not consume:
                # Membership alone: explicit offsets (no ListOffsets) and
                # paused (no Fetch).
                for p in parts:
                    p.offset = 0
                cons.assign(parts)
                cons.pause(parts)

        def on_revoke(cons, parts):
            with lock:
                assigned[i] = set()
            cons.unassign()

        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        return c

    def loop(i):
        c = consumers[i]
        while not stop[i]:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                with lock:
                    records.append((i, m.partition(), m.offset()))

    for i in range(3):
        consumers.append(make(i))
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()

    def complete(members):
        with lock:
            got = [assigned[i] for i in members]
        return (sum(len(a) for a in got) == nparts and set().union(*got) == set(range(nparts))
                and all(got))

    wait_for('three members share the partitions', lambda: complete([0, 1, 2]))
    with lock:
        before = [sorted(a) for a in assigned]
    print('assigned: %s' % ' | '.join(','.join(map(str, a)) for a in before), flush=True)
    print('every partition once: %s' % (sorted(sum(before, [])) == list(range(nparts))), flush=True)

    if consume:
        total = int(sys.stdin.readline())
        wait_for('every record', lambda: len(records) >= total)
        time.sleep(1)
        with lock:
            seen = [(p, o) for _, p, o in records]
            owners_ok = all(p in set(before[i]) for i, p, _ in records)
        print('consumed %d records, each once: %s, from their owners: %s'
              % (len(seen), len(set(seen)) == len(seen) == total, owners_ok), flush=True)

    # Each member commits explicit positions for its partitions (10 + p),
    # then reads them back; the TAP test compares them with SQL.
    for i, c in enumerate(consumers):
        offs = [TopicPartition(topic, p, 10 + p) for p in before[i]]
        c.commit(offsets=offs, asynchronous=False)
    for i, c in enumerate(consumers):
        got = c.committed([TopicPartition(topic, p) for p in before[i]], timeout=30)
        print('committed by member %d: %s'
              % (i, ' '.join('%d=%d' % (tp.partition, tp.offset) for tp in got)), flush=True)
    pause_for_tap('SQL checks the positions and moves partition 0 to 3')
    got = consumers[1].committed([TopicPartition(topic, 0)], timeout=30)
    print('committed after SQL seek: partition 0 = %d' % got[0].offset, flush=True)

    # Member 0 leaves: its partitions move to the others.
    stop[0] = True
    threads[0].join()
    consumers[0].close()
    ok = wait_for('the two others share every partition', lambda: complete([1, 2]))
    with lock:
        after = [sorted(assigned[1]), sorted(assigned[2])]
    print('after member 0 left: %s' % ' | '.join(','.join(map(str, a)) for a in after), flush=True)
    print('its partitions moved: %s' % (ok and set(before[0]) <= set(after[0]) | set(after[1])),
          flush=True)
    if consume:
        # They start at the committed positions: what was committed is not
        # read again, what was not is.
        time.sleep(2)
    for i in (1, 2):
        stop[i] = True
        threads[i].join()
        consumers[i].close()
    print('closed', flush=True)


def kp_group(bootstrap, topic, group, mode):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id='kp-1',
                      enable_auto_commit=False, api_version=(2, 5, 0),
                      session_timeout_ms=6000, heartbeat_interval_ms=300,
                      auto_offset_reset='earliest')
    c.subscribe([topic])
    if mode == 'consume':
        n = 0
        end = time.time() + WAIT
        total = int(sys.stdin.readline())
        while n < total and time.time() < end:
            for tp, msgs in c.poll(timeout_ms=200).items():
                n += len(msgs)
        print('consumed %d records' % n, flush=True)
        c.commit()
    else:
        # Membership alone: the coordinator's side of poll(), without Fetch.
        wait_for('an assignment', lambda: (c._coordinator.poll() or True) and bool(c.assignment()))
        parts = sorted(tp.partition for tp in c.assignment())
        print('assigned: %s' % ','.join(map(str, parts)), flush=True)
        c.commit({TopicPartition(topic, p): OffsetAndMetadata(20 + p, 'kp') for p in parts})
    for p in sorted(tp.partition for tp in c.assignment()):
        print('committed %d = %s' % (p, c.committed(TopicPartition(topic, p))), flush=True)
    pause_for_tap('SQL checks the positions')
    c.close()
    print('closed', flush=True)


def ck_admin(bootstrap):
    from confluent_kafka.admin import AdminClient

    a = AdminClient({'bootstrap.servers': bootstrap})
    for g in sorted(a.list_groups(timeout=30), key=lambda g: g.id):
        print('group %s state %s protocol_type %s protocol %s members %d' %
              (g.id, g.state, g.protocol_type, g.protocol, len(g.members)), flush=True)


def kp_admin(bootstrap, groups):
    from kafka.admin import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=(2, 5, 0))
    print('list: %s' % sorted(a.list_consumer_groups()), flush=True)
    for d in a.describe_consumer_groups(groups):
        print('describe %s: state %s protocol_type %s members %d'
              % (d.group, d.state, d.protocol_type, len(d.members)), flush=True)
    for g in groups:
        offs = a.list_consumer_group_offsets(g)
        print('offsets %s: %s' % (g, ' '.join('%s/%d=%d' % (tp.topic, tp.partition, o.offset)
                                             for tp, o in sorted(offs.items()))), flush=True)
    try:
        res = a.delete_consumer_groups(groups)
        print('delete: %s' % sorted((g, getattr(e, 'errno', e) if e else 0) for g, e in res), flush=True)
    except Exception as e:  # noqa: BLE001 - the TAP test reads the class
        print('delete: %s %s' % (type(e).__name__, e), flush=True)
    a.close()


def main():
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == 'ck-group':
        ck_group(a[0], a[1], a[2], int(a[3]), a[4])
    elif cmd == 'kp-group':
        kp_group(a[0], a[1], a[2], a[3])
    elif cmd == 'ck-admin':
        ck_admin(a[0])
    elif cmd == 'kp-admin':
        kp_admin(a[0], a[1:])
    else:
        sys.exit('unknown command %s' % cmd)


if __name__ == '__main__':
    main()
