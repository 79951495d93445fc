/**
 * The container tests' client, run inside a container on the cluster's Docker network (where the
 * service names the nodes advertise resolve) with the image's own build of Atoll:
 *
 *   node workload.mjs write '{"endpoints":[...],"keys":[...],"paceMs":40,"concurrency":8,"deadlineMs":30000}'
 *     writes each key with its own name as value and as requestId, retrying (same requestId, so
 *     never applied twice) until acknowledged or the deadline; prints
 *     {"startedAtMs","acked":[{"key","startMs","ackMs","attempts"}],"unacked":[key],"errors":{code:count}}
 *     (startedAtMs is the wall clock at the start; startMs and ackMs count from it)
 *   node workload.mjs read '{"endpoints":[...],"buckets":[...]}'
 *     linearizable prefix scans; prints {"keys":{key:value}}
 *   node workload.mjs info '{"address":"node2:7001"}'
 *     that one node's own ClusterInfo (leaders, commit and applied indexes); prints it
 *   node workload.mjs await-failover '{"address":"node1:7001","victim":2,"timeoutMs":20000}'
 *     waits until that node sees a leader other than the victim for every partition
 *   node workload.mjs await-catch-up '{"address":"node2:7001","others":[...],"timeoutMs":40000}'
 *     waits until that node has applied, in every partition, what the others report committed
 *     when it starts (the leader's commit index is the largest of theirs)
 *   The two waits print {"elapsedMs"} or, at the timeout, {"error"} with the last answer.
 *
 * Every call and loop is bounded by the given deadline or by callTimeoutMs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AtollClient } from '/app/dist/src/index.js';
import { NodeConnection } from '/app/dist/src/client/node-connection.js';

const callTimeoutMs = 2_000;
const retryPauseMs = 100;

async function write({ endpoints, keys, paceMs, concurrency, deadlineMs }) {
  const client = new AtollClient({ endpoints, defaultTimeoutMs: callTimeoutMs });
  const started = Date.now();
  const deadline = started + deadlineMs;
  const acked = [];
  const unacked = [];
  const errors = {};
  let next = 0;
  const writeOne = async (key, index) => {
    const due = started + index * paceMs;
    if (due > Date.now()) await sleep(due - Date.now());
    const startMs = Date.now() - started;
    for (let attempts = 1; ; attempts++) {
      try {
        await client.put(key, key, { requestId: `workload:${key}`, timeoutMs: Math.max(1, Math.min(callTimeoutMs, deadline - Date.now())) });
        acked.push({ key, startMs, ackMs: Date.now() - started, attempts });
        return;
      } catch (error) {
        const code = error?.code ?? 'INTERNAL';
        errors[code] = (errors[code] ?? 0) + 1;
        if (Date.now() + retryPauseMs >= deadline) {
          unacked.push(key);
          return;
        }
        await sleep(retryPauseMs);
      }
    }
  };
  const worker = async () => {
    while (next < keys.length) {
      const index = next++;
      await writeOne(keys[index], index);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  client.close();
  return { startedAtMs: started, acked, unacked, errors };
}

async function read({ endpoints, buckets }) {
  const client = new AtollClient({ endpoints, defaultTimeoutMs: 10_000 });
  const keys = {};
  for (const bucket of buckets) {
    for await (const entry of client.scanPrefix(bucket)) keys[entry.key] = entry.text();
  }
  client.close();
  return { keys };
}

async function info({ address }) {
  const connection = new NodeConnection(address, { pipelining: false, maxStreamInFlight: 1 });
  try {
    return await connection.clusterInfo(Date.now() + callTimeoutMs, undefined);
  } finally {
    connection.close();
  }
}

const pollPauseMs = 300;

/** Asks `address` until `done(info)` holds or the timeout; bounded by the timeout. */
async function pollInfo(address, timeoutMs, done) {
  const started = Date.now();
  let last = 'no answer yet';
  while (Date.now() - started < timeoutMs) {
    try {
      const answer = await info({ address });
      if (done(answer)) return { elapsedMs: Date.now() - started };
      last = JSON.stringify(answer.partitions.map(({ id, leader, commitIndex, appliedIndex }) => ({ id, leader, commitIndex, appliedIndex })));
    } catch (error) {
      last = String(error?.message ?? error);
    }
    await sleep(pollPauseMs);
  }
  throw new Error(`not within ${timeoutMs} ms; last answer: ${last}`);
}

function awaitFailover({ address, victim, timeoutMs }) {
  return pollInfo(address, timeoutMs, (answer) => answer.partitions.every((partition) => partition.leader !== 0 && partition.leader !== victim));
}

async function awaitCatchUp({ address, others, timeoutMs }) {
  const committed = new Map();
  for (const other of others) {
    for (const partition of (await info({ address: other })).partitions) {
      committed.set(partition.id, Math.max(committed.get(partition.id) ?? 0, partition.commitIndex));
    }
  }
  return pollInfo(address, timeoutMs, (answer) => answer.partitions.every((partition) => partition.appliedIndex >= (committed.get(partition.id) ?? 0)));
}

const commands = { write, read, info, 'await-failover': awaitFailover, 'await-catch-up': awaitCatchUp };
const [command, argument] = process.argv.slice(2);
if (!(command in commands)) {
  console.error(`usage: workload.mjs ${Object.keys(commands).join('|')} JSON`);
  process.exit(2);
}
try {
  console.log(JSON.stringify(await commands[command](JSON.parse(argument ?? '{}'))));
} catch (error) {
  console.log(JSON.stringify({ error: `${error?.code ?? 'INTERNAL'}: ${error?.message ?? String(error)}` }));
  process.exitCode = 1;
}
// A closed client may still hold timers (reconnect backoff, deadlines); the answer is printed
// (stdout to a pipe is synchronous on Linux), so leave now rather than wait for them.
process.exit();
