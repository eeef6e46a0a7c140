// kafkajs against the gateway (test/t/067_kafka_kafkajs.pl): create a topic
// with the admin client, produce keyed records with headers (and a
// tombstone), consume them in a consumer group that commits, read the
// group's committed offsets back, and print everything as one JSON object
// on stdout for the test to compare with what SQL says.
//
//   node kafkajs_check.js BROKER TOPIC GROUP RECORDS
//
// kafkajs is found through NODE_PATH (the test points it at the npm cache
// test/lib.sh's el_ensure_kafkajs fills).
'use strict';

const { Kafka, logLevel, Partitioners } = require('kafkajs');

const [broker, topic, groupId, countArg] = process.argv.slice(2);
const count = Number(countArg);

async function main() {
  const kafka = new Kafka({
    clientId: 'pg-eventlog-kafkajs-test',
    brokers: [broker],
    logLevel: logLevel.ERROR,
    retry: { retries: 3 },
  });
  const out = {};

  const admin = kafka.admin();
  await admin.connect();
  out.created = await admin.createTopics({
    topics: [{ topic, numPartitions: 3 }],
    waitForLeaders: true,
  });
  const md = await admin.fetchTopicMetadata({ topics: [topic] });
  out.partitions = md.topics[0].partitions.map((p) => p.partitionId).sort();

  // The Java-compatible partitioner (murmur2), kafkajs's default in 2.x.
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < count; i++) {
    messages.push({
      key: `key-${i % 7}`,
      value: i === count - 1 ? null : Buffer.from([0, 255, i % 256, 10]),
      headers: { h1: `v${i}`, bin: Buffer.from([1, 0, 2]) },
    });
  }
  out.sent = await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, rebalanceTimeout: 10000 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const consumed = [];
  await new Promise((resolve, reject) => {
    consumer.run({
      autoCommit: true,
      eachMessage: async ({ partition, message }) => {
        consumed.push({
          partition,
          offset: Number(message.offset),
          key: message.key === null ? null : message.key.toString('hex'),
          value: message.value === null ? null : message.value.toString('hex'),
          // In the order kafkajs decoded them, the record's order.
          headers: Object.entries(message.headers || {})
            .map(([k, v]) => `${k}=${v === null || v === undefined ? 'NULL' : v.toString('hex')}`)
            .join(','),
        });
        if (consumed.length === count) resolve();
      },
    }).catch(reject);
  });
  // Stopping commits what was consumed.
  await consumer.stop();
  await consumer.disconnect();
  out.consumed = consumed;

  const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
  out.committed = committed[0].partitions
    .map((p) => ({ partition: p.partition, offset: Number(p.offset) }))
    .sort((a, b) => a.partition - b.partition);
  await admin.disconnect();
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`kafkajs_check: ${err.stack || err}\n`);
  process.exit(1);
});
