#!/usr/bin/env node
/**
 * Idle work of a three-node cluster in the whole-node simulator's virtual time (docs/performance.md,
 * issue 18): Raft ticks, Raft messages and frames per node per second, and this process's CPU per
 * virtual second, 10 s after every partition had a leader, over 20 s. ROOT is a checkout with a
 * built dist/ (so two builds can be compared):  node scripts/sim-idle-work.mjs . 1024
 * SIM_PROFILE=FILE writes a CPU profile of the measured window (read it with scripts/profile-top.mjs).
 */
const [rootArg = ".", partitionsArg = "1024"] = process.argv.slice(2);
const root = (await import("node:path")).resolve(rootArg);
const P = Number(partitionsArg);
const { Raft } = await import(`${root}/dist/src/raft/raft.js`);
const { Rng } = await import(`${root}/dist/src/raft/rng.js`);
const { Scheduler } = await import(`${root}/dist/src/sim/node/scheduler.js`);
const { SimCluster } = await import(`${root}/dist/src/sim/node/sim-cluster.js`);
const { SimNetwork } = await import(`${root}/dist/src/sim/node/sim-network.js`);
const { Trace } = await import(`${root}/dist/src/sim/node/trace.js`);
let raftTicks = 0, messages = 0, frames = 0;
const tick = Raft.prototype.tick;
Raft.prototype.tick = function () { raftTicks++; return tick.call(this); };
const send = SimNetwork.prototype.send;
SimNetwork.prototype.send = function (from, to, msgs) { frames++; messages += msgs.length; return send.call(this, from, to, msgs); };
const scheduler = new Scheduler();
const trace = new Trace(() => scheduler.now, 50);
const rng = new Rng(18);
const network = new SimNetwork(scheduler, rng.fork(), trace);
const NODES = [1, 2, 3];
const cluster = new SimCluster(scheduler, network, trace, rng.fork(), { nodeIds: NODES, partitions: P, tickMs: 100, electionTicks: 10, snapshotEveryEntries: 2000, logEntriesKeptAfterSnapshot: 1000, retentionRevisions: 1000, cacheBytes: 1 << 20, clocks: new Map(), testBugs: {} });
const t0 = Date.now();
for (const id of NODES) cluster.start(id);
const led = () => NODES.every((id) => cluster.apiOf(id)?.allPartitionsLed() === true);
await scheduler.runUntil(120_000, 50_000_000, led);
const readyVirtual = scheduler.now;
const readyWall = (Date.now() - t0) / 1000;
await scheduler.runUntil(scheduler.now + 10_000, 50_000_000);
// SIM_PROFILE=FILE: a CPU profile of the measured idle window only (inspector, 1 ms samples).
const inspector = process.env.SIM_PROFILE ? new (await import("node:inspector")).Session() : undefined;
const post = (method, params) => new Promise((res, rej) => inspector.post(method, params, (e, r) => (e ? rej(e) : res(r))));
if (inspector) { inspector.connect(); await post("Profiler.enable"); await post("Profiler.setSamplingInterval", { interval: 1000 }); await post("Profiler.start"); }
const r0 = raftTicks, m0 = messages, f0 = frames, c0 = process.cpuUsage();
const windowMs = 20_000;
await scheduler.runUntil(scheduler.now + windowMs, 50_000_000);
const c1 = process.cpuUsage(c0);
if (inspector) (await import("node:fs")).writeFileSync(process.env.SIM_PROFILE, JSON.stringify((await post("Profiler.stop")).profile));
const s = windowMs / 1000;
console.log(JSON.stringify({ root, partitions: P, allLed: led(), readyVirtualMs: readyVirtual, readyWallS: readyWall,
  idle: { raftTicksPerNodePerS: (raftTicks - r0) / s / 3, raftMessagesPerNodePerS: (messages - m0) / s / 3, framesPerNodePerS: (frames - f0) / s / 3, simCpuMsPerVirtualS: (c1.user + c1.system) / 1000 / s } }));
process.exit(0);
