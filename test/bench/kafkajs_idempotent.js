// Idempotent against plain produce through the gateway (issue 16), with a
// client that sends the same way in both modes: kafkajs (npm), one producer
// with idempotent: true (InitProducerId, then every batch's sequence checked
// and recorded by src/producer.c in the transaction that stores it) and one
// without, each sending RECORDS records of VALUE_BYTES bytes per round to
// partition 0 of a binary topic of its own, in batches of BATCH records,
// acks = all, one batch at a time (each send awaited).
//
// Why this client besides librdkafka (test/bench/kafka_idempotent.py):
// librdkafka 2.0.2, Debian 12's, sends one Produce at a time per partition
// when idempotent but several when not, and busy-polls its socket while
// that one is in flight; on a 2-core machine its ratio mostly measures that.
// Here both producers have exactly one request in flight, so the ratio is
// what idempotence costs the gateway and PostgreSQL.  To show that
// directly, each round also takes the CPU time (utime + stime from
// /proc/PID/stat) of the gateway (GATEWAY_PID) and of every process of the
// PostgreSQL server (POSTMASTER_PID and its children) and prints it per
// 1,000 records for each mode.
//
// Rounds alternate which producer goes first.  The last line is
//   kafkajs idempotent produce / plain produce: median ratio R
// and a line with the medians of the server-side CPU.
//
//   NODE_PATH=DIR/node_modules node kafkajs_idempotent.js BROKER
//
// Settings (environment): RECORDS (100000), ROUNDS (5), BATCH (1000),
// VALUE_BYTES (100), GATEWAY_PID and POSTMASTER_PID (optional: without
// them no CPU is reported).
'use strict';

const fs = require('fs');
const net = require('net');
const { Kafka, logLevel } = require('kafkajs');

const broker = process.argv[2];
const RECORDS = parseInt(process.env.RECORDS || '100000', 10);
const ROUNDS = parseInt(process.env.ROUNDS || '5', 10);
const BATCH = parseInt(process.env.BATCH || '1000', 10);
const VALUE_BYTES = parseInt(process.env.VALUE_BYTES || '100', 10);
const GATEWAY_PID = process.env.GATEWAY_PID || '';
const POSTMASTER_PID = process.env.POSTMASTER_PID || '';

// utime + stime of one process, in clock ticks (0 if it is gone)
function ticksOf(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command may hold spaces and parentheses: fields start after the last ')'
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch (e) {
    return 0;
  }
}

// The server side: the gateway, the postmaster and its children, by pid,
// so that a backend that ends between two samples still counts up to then.
function serverTicks() {
  const t = new Map();
  if (!GATEWAY_PID || !POSTMASTER_PID) return t;
  t.set(GATEWAY_PID, ticksOf(GATEWAY_PID));
  t.set(POSTMASTER_PID, ticksOf(POSTMASTER_PID));
  for (const d of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (f[1] === POSTMASTER_PID) t.set(d, Number(f[11]) + Number(f[12]));
    } catch (e) { /* the process ended */ }
  }
  return t;
}

function ticksBetween(a, b, only) {
  let sum = 0;
  for (const [pid, after] of b) if (only === undefined || only === pid) sum += after - (a.get(pid) || 0);
  return sum;
}

function median(xs) {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const kafka = new Kafka({
    clientId: 'pg-eventlog-bench-idempotent',
    brokers: [broker],
    logLevel: logLevel.ERROR,
    // kafkajs leaves Nagle's algorithm on: the last segment of each Produce
    // request would wait for the gateway's delayed ACK, and both producers
    // would mostly measure that wait.  Kafka's Java client sets TCP_NODELAY.
    socketFactory: ({ host, port, onConnect }) => {
      const socket = net.connect({ host, port, noDelay: true }, onConnect);
      socket.setKeepAlive(true, 60000);
      return socket;
    },
  });
  const topics = { idem: 'kjs_idem', plain: 'kjs_plain' };
  const admin = kafka.admin();
  await admin.connect();
  const existing = await admin.listTopics();
  const old = Object.values(topics).filter((t) => existing.includes(t));
  if (old.length) await admin.deleteTopics({ topics: old });
  // Topics made over CreateTopics are binary topics.
  await admin.createTopics({
    topics: Object.values(topics).map((topic) => ({ topic, numPartitions: 1 })),
    waitForLeaders: true,
  });
  await admin.disconnect();

  const producers = {
    idem: kafka.producer({ idempotent: true, maxInFlightRequests: 1 }),
    plain: kafka.producer({ maxInFlightRequests: 1 }),
  };
  for (const p of Object.values(producers)) await p.connect();

  const value = Buffer.alloc(VALUE_BYTES, 'x');
  const messages = [];
  for (let i = 0; i < BATCH; i++) messages.push({ partition: 0, value });

  // one round of one producer: records/s, and server CPU ticks
  async function run(kind) {
    const before = serverTicks();
    const start = process.hrtime.bigint();
    for (let sent = 0; sent < RECORDS; sent += BATCH) {
      const n = Math.min(BATCH, RECORDS - sent);
      await producers[kind].send({
        topic: topics[kind],
        acks: -1,
        messages: n === BATCH ? messages : messages.slice(0, n),
      });
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const after = serverTicks();
    return { rate: RECORDS / seconds, ticks: ticksBetween(before, after),
             gwTicks: ticksBetween(before, after, GATEWAY_PID) };
  }

  await run('idem');
  await run('plain'); // warm up: connections, InitProducerId, plans

  console.log(`${RECORDS} records per producer and round, batches of ${BATCH}, value ${VALUE_BYTES} B,`
              + ' acks=all, one request in flight in both');
  const ratios = [];
  const cpuIdem = [];
  const cpuPlain = [];
  const perThousand = (ticks) => (ticks * 10 * 1000) / RECORDS; // ms per 1,000 records at 100 ticks/s
  for (let r = 0; r < ROUNDS; r++) {
    let i;
    let p;
    if (r % 2 === 0) {
      i = await run('idem');
      p = await run('plain');
    } else {
      p = await run('plain');
      i = await run('idem');
    }
    ratios.push(i.rate / p.rate);
    cpuIdem.push(perThousand(i.ticks));
    cpuPlain.push(perThousand(p.ticks));
    console.log(`round ${r}: plain ${Math.round(p.rate)} rec/s, idempotent ${Math.round(i.rate)} rec/s,`
                + ` ratio ${(i.rate / p.rate).toFixed(2)}`
                + (GATEWAY_PID ? `; gateway + PostgreSQL CPU per 1,000 records: plain`
                   + ` ${perThousand(p.ticks).toFixed(2)} ms (gateway ${perThousand(p.gwTicks).toFixed(2)}),`
                   + ` idempotent ${perThousand(i.ticks).toFixed(2)} ms (gateway ${perThousand(i.gwTicks).toFixed(2)})` : ''));
  }
  for (const p of Object.values(producers)) await p.disconnect();
  if (GATEWAY_PID) {
    console.log(`kafkajs server CPU per 1,000 records (median): plain ${median(cpuPlain).toFixed(2)} ms,`
                + ` idempotent ${median(cpuIdem).toFixed(2)} ms,`
                + ` ratio plain / idempotent ${(median(cpuPlain) / median(cpuIdem)).toFixed(2)}`);
  }
  console.log(`kafkajs idempotent produce / plain produce: median ratio ${median(ratios).toFixed(2)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
