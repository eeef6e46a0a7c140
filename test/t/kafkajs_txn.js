// kafkajs's transactional producer against the gateway
// (test/t/082_kafka_txn_kafkajs.pl): a transaction that commits, one that
// aborts, and one that commits with a group's positions (sendOffsets, so
// AddOffsetsToTxn and TxnOffsetCommit); then a read_committed consumer
// (kafkajs's default isolation) reads the topic from the beginning until it
// has seen the last record of the last transaction in every partition
// (records come in offset order, so everything before it came too).
// Prints one JSON object on stdout for the test to compare with SQL.
//
//   node kafkajs_txn.js BROKER TOPIC TID OFFSETS_GROUP SOURCE_TOPIC
//
// kafkajs is found through NODE_PATH (test/lib.sh's el_ensure_kafkajs).
'use strict';

const { Kafka, logLevel } = require('kafkajs');

const [broker, topic, transactionalId, offsetsGroup, sourceTopic] = process.argv.slice(2);

function batch(prefix, n) {
  const messages = [];
  for (let i = 0; i < n; i++) {
    messages.push({ partition: i % 2, key: `k${i}`, value: `${prefix}${i}` });
  }
  return messages;
}

async function main() {
  const kafka = new Kafka({
    clientId: 'pg-eventlog-kafkajs-txn-test',
    brokers: [broker],
    logLevel: logLevel.ERROR,
    retry: { retries: 5 },
  });
  const out = { steps: [] };

  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();

  let txn = await producer.transaction();
  await txn.send({ topic, acks: -1, messages: batch('c', 6) });
  await txn.commit();
  out.steps.push('committed c');

  txn = await producer.transaction();
  await txn.send({ topic, acks: -1, messages: batch('a', 6) });
  await txn.abort();
  out.steps.push('aborted a');

  txn = await producer.transaction();
  await txn.send({ topic, acks: -1, messages: batch('d', 4) });
  await txn.sendOffsets({
    consumerGroupId: offsetsGroup,
    topics: [{ topic: sourceTopic, partitions: [{ partition: 0, offset: '3' }] }],
  });
  await txn.commit();
  out.steps.push('committed d with offsets');
  await producer.disconnect();

  // The last record of the last transaction in each partition: d2 in 0, d3 in 1.
  const last = { 0: 'd2', 1: 'd3' };
  const consumer = kafka.consumer({ groupId: `${transactionalId}-reader`, sessionTimeout: 10000,
                                    rebalanceTimeout: 10000, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const consumed = [];
  const done = new Set();
  await new Promise((resolve, reject) => {
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const value = message.value === null ? null : message.value.toString();
        consumed.push({ partition, offset: Number(message.offset), value });
        if (last[partition] === value) {
          done.add(partition);
          if (done.size === 2) resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.stop();
  await consumer.disconnect();
  consumed.sort((x, y) => x.partition - y.partition || x.offset - y.offset);
  out.consumed = consumed;
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`kafkajs_txn: ${err.stack || err}\n`);
  process.exit(1);
});
