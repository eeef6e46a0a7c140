#!/usr/bin/python3
"""A pg_eventlog consumer woken by LISTEN/NOTIFY, with psycopg 3.

    consumer.py [--conninfo CONNINFO] [--max-records N] [--wait-seconds S] TOPIC GROUP

It reads TOPIC as a transactional consumer of GROUP: each batch is polled,
processed (here: printed as "partition offset value" lines) and committed in
one transaction, so the group's position moves on exactly when the work
commits.  When a poll returns nothing it sleeps until the topic's channel
announces new records, or at most --wait-seconds (5) as a safety net, then
polls again.

Notifications are a hint, the group's committed positions are the truth: a
notification missed while disconnected never loses a record, because after
every (re)connection the loop LISTENs first and then polls before it waits.

CONNINFO defaults to the libpq environment (PGHOST, PGPORT, PGDATABASE, ...).
With --max-records N it exits (status 0) once it has consumed N records.
Written for psycopg 3.1 (Debian 12's python3-psycopg), whose
Connection.notifies() cannot time out, so it waits with select() itself.
"""

import argparse
import select
import sys
import time

import psycopg
from psycopg import sql

BATCH = 500           # records per poll (eventlog.poll's max_records)
RECONNECT_MAX = 30.0  # longest pause between two reconnection attempts (s)


def connect(conninfo, topic, woken):
    """Connect and LISTEN on the topic's channel.

    LISTEN comes before the first poll: anything committed after that poll
    is then announced to this session, so no wake-up can fall in between.
    """
    # autocommit: LISTEN takes effect at once, and each batch below opens
    # its own transaction with conn.transaction().
    conn = psycopg.connect(conninfo, autocommit=True)
    # psycopg reads notifications whenever it reads from the server, also
    # during the poll's own queries; the handler keeps them for wait().
    conn.add_notify_handler(woken.append)
    channel = conn.execute("SELECT eventlog.channel(%s)", (topic,)).fetchone()[0]
    # The channel contains a dot: quote it as an identifier.
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    return conn


def consume_batch(conn, topic, group, limit):
    """Poll, process and commit one batch; returns how many records it had."""
    with conn.transaction():  # BEGIN ... COMMIT (ROLLBACK on an exception)
        rows = conn.execute(
            "SELECT partition, offset_id, value::text"
            "  FROM eventlog.poll(%s, %s, max_records => %s)",
            (topic, group, limit)).fetchall()
        for partition, offset_id, value in rows:
            # The work goes here.  Work done in this transaction commits
            # together with the group's new position: exactly once.  Work
            # outside the database (like this print) is at least once: if
            # the commit fails, the records come again.  A NULL value is a
            # tombstone.
            print(partition, offset_id, "NULL" if value is None else value)
    sys.stdout.flush()
    return len(rows)


def wait(conn, woken, seconds):
    """Sleep until a notification arrives or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while not woken:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ready, _, _ = select.select([conn.fileno()], [], [], left)
        if ready:
            # Something came in (a notification, or the server closing the
            # connection): a trivial query makes psycopg read it, calling
            # the notify handler or raising the connection's error.
            conn.execute("SELECT 1")


def main():
    ap = argparse.ArgumentParser(description="Consume a pg_eventlog topic, woken by LISTEN/NOTIFY.")
    ap.add_argument("topic")
    ap.add_argument("group")
    ap.add_argument("--conninfo", default="", help="libpq connection string (default: environment)")
    ap.add_argument("--max-records", type=int, default=None, help="exit after consuming this many records")
    ap.add_argument("--wait-seconds", type=float, default=5.0,
                    help="longest sleep without a notification before polling anyway (default 5)")
    args = ap.parse_args()

    consumed = 0
    woken = []  # notifications received and not yet acted upon
    # A first connection that fails is an error (a wrong conninfo should not
    # retry forever); later ones are retried, as the server may be restarting.
    conn = connect(args.conninfo, args.topic, woken)
    pause = 0.5
    while args.max_records is None or consumed < args.max_records:
        try:
            if conn is None:
                conn = connect(args.conninfo, args.topic, woken)
                pause = 0.5
                print("reconnected", file=sys.stderr)
            # Forget the notifications received so far: the poll below sees
            # every record they announce.  Only one arriving after this
            # point can announce something the poll did not see.
            woken.clear()
            limit = BATCH
            if args.max_records is not None:
                limit = min(BATCH, args.max_records - consumed)
            n = consume_batch(conn, args.topic, args.group, limit)
            consumed += n
            if n == 0:
                # Nothing readable (or every partition with records is held
                # by another consumer of the group): sleep until the topic's
                # channel speaks.  The timeout covers a notification that
                # never comes (eventlog.notify off, the notifier restarting)
                # and records left by another consumer's rollback.
                wait(conn, woken, args.wait_seconds)
        except psycopg.Error as e:
            # A broken connection (server restart, pg_terminate_backend,
            # network): reconnect, LISTEN again, and poll first.  Any other
            # error (unknown topic, missing privilege) is a bug to report.
            if conn is None or conn.closed:
                print(f"connection lost ({' '.join(str(e).split())}); reconnecting in {pause:g} s",
                      file=sys.stderr)
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(pause)
                pause = min(pause * 2, RECONNECT_MAX)
            else:
                raise
    conn.close()


if __name__ == "__main__":
    try:
        main()
    except psycopg.Error as e:
        sys.exit(f"error: {e}")
    except KeyboardInterrupt:
        # An open batch transaction is rolled back by the server when the
        # connection closes: its records come again to the next consumer.
        sys.exit(130)
