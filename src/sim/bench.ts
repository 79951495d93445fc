/**
 * `npm run bench:raft`: micro-benchmarks of the Raft core, in one process, no I/O.
 *  - ticks per second across 1,000 idle groups (three replicas each, quiesced and not), which is
 *    what a node pays to keep many partitions alive;
 *  - proposals per second through one three-node group, with Ready handling as a host does it.
 * Prints one line per measurement so later changes can be compared run to run.
 */
import { RawNode } from '../raft/rawnode.js';
import { Rng } from '../raft/rng.js';
import { MemoryLogStorage } from '../raft/storage.js';
import type { Message } from '../raft/types.js';

interface Group {
  nodes: RawNode[];
  storages: MemoryLogStorage[];
}

function makeGroup(seed: number, quiesceAfterTicks: number): Group {
  const voters = [1, 2, 3];
  const storages = voters.map(() => {
    const storage = new MemoryLogStorage();
    storage.bootstrap({ voters, learners: [] }, new Uint8Array(0));
    return storage;
  });
  const nodes = voters.map(
    (id, i) =>
      new RawNode({ id, storage: storages[i] as MemoryLogStorage, rng: new Rng(seed * 10 + id), applied: 1, quiesceAfterTicks }),
  );
  return { nodes, storages };
}

/** Processes Readies and delivers messages until the group is silent. Returns messages delivered. */
function pump(group: Group): number {
  let delivered = 0;
  for (let round = 0; round < 1000; round++) {
    const inbox: Message[] = [];
    group.nodes.forEach((node, i) => {
      while (node.hasReady()) {
        const ready = node.ready();
        const storage = group.storages[i] as MemoryLogStorage;
        if (ready.snapshot) storage.applySnapshot(ready.snapshot);
        storage.append(ready.entries);
        if (ready.hardState) storage.setHardState(ready.hardState);
        inbox.push(...ready.messages);
        node.advance(ready);
      }
    });
    if (inbox.length === 0) return delivered;
    for (const message of inbox) {
      (group.nodes[message.to - 1] as RawNode).step(message);
      delivered++;
    }
  }
  return delivered;
}

function benchIdleTicks(groupCount: number, quiesceAfterTicks: number, ticks: number): void {
  const groups = Array.from({ length: groupCount }, (_, i) => makeGroup(i + 1, quiesceAfterTicks));
  for (const group of groups) {
    (group.nodes[0] as RawNode).campaign();
    pump(group);
  }
  // Warm up past the election and (if enabled) into quiescence.
  for (let t = 0; t < 60; t++) for (const group of groups) for (const node of group.nodes) node.tick();
  for (const group of groups) pump(group);
  let messages = 0;
  const started = process.hrtime.bigint();
  for (let t = 0; t < ticks; t++) {
    for (const group of groups) {
      for (const node of group.nodes) node.tick();
      messages += pump(group);
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const groupTicks = (groupCount * ticks) / seconds;
  const quiet = groups.filter((group) => group.nodes.every((node) => node.status().quiesced)).length;
  console.log(
    `bench:raft idle-ticks groups=${groupCount} quiesce=${quiesceAfterTicks > 0} group-ticks/s=${groupTicks.toFixed(0)} messages/tick=${(messages / ticks).toFixed(1)} quiet-groups=${quiet}`,
  );
}

function benchProposals(count: number, batch: number): void {
  const group = makeGroup(7, 0);
  (group.nodes[0] as RawNode).campaign();
  pump(group);
  const leader = group.nodes[0] as RawNode;
  const payload = new Uint8Array(100);
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; i += batch) {
    for (let j = 0; j < batch; j++) leader.propose(payload);
    pump(group);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const status = leader.status();
  if (status.commit < count) throw new Error(`only ${status.commit} of ${count} proposals committed`);
  console.log(`bench:raft proposals batch=${batch} count=${count} proposals/s=${(count / seconds).toFixed(0)}`);
}

benchIdleTicks(1000, 0, 200);
benchIdleTicks(1000, 5, 200);
benchProposals(20_000, 1);
benchProposals(100_000, 64);
