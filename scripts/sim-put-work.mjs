#!/usr/bin/env node
/**
 * The work of a put in the whole-node simulator's virtual time (docs/performance.md, issue 18):
 * deterministic counts, not wall-clock rates. Three nodes, P partitions; once every partition has a
 * leader, C clients put random keys (of K) through node 1: N puts of warm-up, then N measured
 * (counted by puts, not time: the simulator's storage takes no virtual time, so a virtual second
 * holds any number of puts). Printed per applied put: the storage operations the engine under the write-behind
 * layer received (what LevelDB would), by record kind (keyspace, then tag: raft e/h/s/t, mvcc m/v/q/r),
 * their bytes, synced writes, Raft messages by type and peer frames; and this process's CPU per put.
 * ROOT is a checkout with a built dist/ (so two builds can be compared):
 *   node scripts/sim-put-work.mjs . 64 [clients=64] [keys=2000] [puts=3000] [rate=0]
 * With a rate (puts per virtual second, all clients together), each client waits C/rate seconds
 * after each put: the load of a real cluster at that rate, so per-tick work (heartbeats of awake
 * groups, quiescing and waking) shows in the per-put counts as it would there.
 * COALESCE=0: the nodes send no node-level batches (AtollNodeConfig.coalesceRaftMessages; on by default here).
 */
const [rootArg = ".", partitionsArg = "64", clientsArg = "64", keysArg = "2000", putsArg = "3000", rateArg = "0"] = process.argv.slice(2);
const root = (await import("node:path")).resolve(rootArg);
const P = Number(partitionsArg), C = Number(clientsArg), K = Number(keysArg), N = Number(putsArg), RATE = Number(rateArg);
const { Rng } = await import(`${root}/dist/src/raft/rng.js`);
const { Scheduler } = await import(`${root}/dist/src/sim/node/scheduler.js`);
const { SimCluster } = await import(`${root}/dist/src/sim/node/sim-cluster.js`);
const { SimNetwork } = await import(`${root}/dist/src/sim/node/sim-network.js`);
const { IncarnationEngine } = await import(`${root}/dist/src/sim/node/sim-disk.js`);
const { Trace } = await import(`${root}/dist/src/sim/node/trace.js`);
let counting = false;
const ops = new Map(), msgTypes = new Map();
let opBytes = 0, writes = 0, syncedWrites = 0, frames = 0, messages = 0, puts = 0, failed = 0, warm = 0;
const bump = (map, key, by = 1) => map.set(key, (map.get(key) ?? 0) + by);
const kindOf = (key) => `${key[0] === 2 ? "raft" : key[0] === 3 ? "mvcc" : `space${key[0]}`}:${key.length > 5 ? String.fromCharCode(key[5]) : "-"}`;
const write = IncarnationEngine.prototype.write;
IncarnationEngine.prototype.write = function (operations, options = {}) {
  if (counting) {
    writes++;
    if (options.sync === true) syncedWrites++;
    for (const op of operations) {
      bump(ops, `${kindOf(op.key)}${op.type === "del" ? " del" : ""}`);
      opBytes += op.key.length + (op.type === "put" ? op.value.length : 0);
    }
  }
  return write.call(this, operations, options);
};
const send = SimNetwork.prototype.send;
SimNetwork.prototype.send = function (from, to, msgs) {
  if (counting) {
    frames++;
    messages += msgs.length;
    for (const m of msgs) {
      bump(msgTypes, m.message?.type ?? (m.batch ? `batch:${m.batch.kind}` : m.transfer ? "transfer" : "node-heartbeat"));
      // What a node-level batch (src/node/replica/node-batch.ts) carries, by group message.
      if (m.batch) bump(msgTypes, `  in batch:${m.batch.kind}`, m.batch.items.length);
    }
  }
  return send.call(this, from, to, msgs);
};
const scheduler = new Scheduler();
const trace = new Trace(() => scheduler.now, 50);
const rng = new Rng(18);
const network = new SimNetwork(scheduler, rng.fork(), trace);
const NODES = [1, 2, 3];
const cluster = new SimCluster(scheduler, network, trace, rng.fork(), { nodeIds: NODES, partitions: P, tickMs: 100, electionTicks: 10, snapshotEveryEntries: 2000, logEntriesKeptAfterSnapshot: 1000, retentionRevisions: 1000, cacheBytes: 1 << 20, clocks: new Map(), testBugs: {}, coalesceRaftMessages: () => process.env.COALESCE !== "0" });
for (const id of NODES) cluster.start(id);
const led = () => NODES.every((id) => cluster.apiOf(id)?.allPartitionsLed() === true);
await scheduler.runUntil(120_000, 50_000_000, led);
const value = new Uint8Array(100).fill(97);
const clientRng = new Rng(7);
let stop = false;
const client = async (r) => {
  while (!stop) {
    const api = cluster.apiOf(1), host = cluster.hostOf(1);
    try {
      await api.put({ key: `k${r.int(K)}`, value }, { deadlineMs: host.clock.wallMs() + 5_000 });
      if (counting) puts++;
      else warm++;
      if (RATE > 0) await new Promise((resolve) => scheduler.after((C / RATE) * 1000, resolve));
    } catch {
      if (counting) failed++;
      await new Promise((resolve) => scheduler.after(10, resolve));
    }
  }
};
const clients = Array.from({ length: C }, () => client(new Rng(clientRng.nextUint32())));
await scheduler.runUntil(scheduler.now + 600_000, 200_000_000, () => warm >= N);
counting = true;
const c0 = process.cpuUsage();
const v0 = scheduler.now;
await scheduler.runUntil(scheduler.now + 600_000, 200_000_000, () => puts >= N);
const virtualMs = scheduler.now - v0;
const cpu = process.cpuUsage(c0);
counting = false;
stop = true;
// Storage counts are summed over the three nodes (every node holds a replica of every partition): per node is a third.
const per = (n) => Math.round((n / puts) * 1000) / 1000;
const perNode = (n) => Math.round((n / puts / 3) * 1000) / 1000;
const totalOps = [...ops.values()].reduce((a, b) => a + b, 0);
console.log(JSON.stringify({
  root, partitions: P, clients: C, keys: K, rate: RATE, puts, failed, virtualMs,
  perPut: {
    storageOpsPerNode: perNode(totalOps), storageBytesPerNode: Math.round(opBytes / puts / 3), storageWritesPerNode: perNode(writes), syncedWritesPerNode: perNode(syncedWrites),
    raftMessages: per(messages), frames: per(frames), simCpuMs: Math.round(((cpu.user + cpu.system) / 1000 / puts) * 1000) / 1000,
  },
  storageOpsPerPutPerNode: Object.fromEntries([...ops].sort().map(([k, v]) => [k, perNode(v)])),
  raftMessagesPerPut: Object.fromEntries([...msgTypes].sort().map(([k, v]) => [k, per(v)])),
}, null, 1));
process.exit(0);
