/**
 * The heal of a replica that skipped a split entry (src/node/apply/split-heal.ts): which partition an
 * install opens, the heal records that survive a crash, and the stray check that removes a heal
 * replica nobody names. The whole path runs in the whole-node simulator
 * (test/sim/node/controls-heal.test.ts); these pin the pieces.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type * as api from '../../src/api/node-api.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { healKey, HEAL_PATIENCE_MS, nextToHeal, SplitHeal } from '../../src/node/apply/split-heal.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { StorageEngine, WriteOperation } from '../../src/storage/storage-engine.js';
import { manualStrayCheck } from './stray-check-support.js';

const logger = pino({ level: 'silent' });
const TOP = 2 ** 32;

describe('nextToHeal', () => {
  it('opens the partition that starts where a shrunk range now ends, up to the hole end', () => {
    expect(nextToHeal({ after: { start: 0, end: 100 }, holeEnd: 300 })).toEqual({ partition: 100, holeEnd: 300 });
    // The new partition itself split: its snapshot ends before the hole does.
    expect(nextToHeal({ after: { start: 100, end: 200 }, holeEnd: 300 })).toEqual({ partition: 200, holeEnd: 300 });
    expect(nextToHeal({ after: { start: 200, end: 300 }, holeEnd: 300 })).toBeUndefined();
    expect(nextToHeal({ after: { start: 0, end: 300 }, holeEnd: undefined })).toBeUndefined();
    expect(nextToHeal({ after: undefined, holeEnd: 300 })).toBeUndefined();
  });
});

/** A stand-in replica: only what SplitHeal reads (its id, and whether it awaits its first snapshot). */
function fakeReplica(id: number, empty = true): PartitionReplica {
  return { id, awaitingFirstSnapshot: () => empty } as unknown as PartitionReplica;
}

function healOn(engine: StorageEngine, opened: number[], groups: Map<number, PartitionReplica>, disabled = false): SplitHeal {
  const heal = new SplitHeal({
    engine,
    logger,
    initialPartitions: 2,
    nowMs: () => 0,
    disabled,
    openEmpty: async (id) => {
      opened.push(id);
      return fakeReplica(id);
    },
  });
  heal.attach({ groups, enqueue: (task) => task(), addGroup: (replica) => void groups.set(replica.id, replica) });
  return heal;
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('SplitHeal', () => {
  it('an install that shrinks partition 1 to [2^31, m) opens m, and m\'s own shrunk snapshot opens the next', async () => {
    const engine = new MemoryEngine();
    const opened: number[] = [];
    const groups = new Map<number, PartitionReplica>([[1, fakeReplica(1, false)]]);
    const heal = healOn(engine, opened, groups);
    const m1 = 3_000_000_000;
    const m2 = 3_500_000_000;
    await engine.write(heal.opsBeforeInstall(1, { start: 2 ** 31, end: TOP }));
    await engine.write(heal.opsAfterInstall(1, { start: 2 ** 31, end: m1 }), { sync: true });
    heal.installed(1);
    await settle();
    expect(opened).toEqual([m1]);
    expect(groups.has(m1)).toBe(true);
    expect(await engine.get(healKey(1))).toBeUndefined();
    expect(await engine.get(healKey(m1))).toBeDefined();
    expect([...heal.awaitingFirstSnapshot().keys()]).toEqual([m1]);
    // m1 split at m2 meanwhile: m1's first snapshot carries [m1, m2), so m2 opens too.
    expect(heal.opsBeforeInstall(m1, undefined)).toEqual([]);
    await engine.write(heal.opsAfterInstall(m1, { start: m1, end: m2 }), { sync: true });
    heal.installed(m1);
    await settle();
    expect(opened).toEqual([m1, m2]);
    expect(await engine.get(healKey(m1))).toBeUndefined();
    // m2's snapshot covers the rest of the hole: nothing more opens, no record is left.
    await engine.write(heal.opsAfterInstall(m2, { start: m2, end: TOP }), { sync: true });
    heal.installed(m2);
    await settle();
    expect(opened).toEqual([m1, m2]);
    expect(await engine.get(healKey(m2))).toBeUndefined();
  });

  it('an install that does not shrink the range opens nothing and leaves no record', async () => {
    const engine = new MemoryEngine();
    const opened: number[] = [];
    const heal = healOn(engine, opened, new Map([[1, fakeReplica(1, false)]]));
    await engine.write(heal.opsBeforeInstall(1, { start: 2 ** 31, end: TOP }));
    // An equal partition's snapshot carries no range: its equal-table place, [2^31, 2^32).
    await engine.write(heal.opsAfterInstall(1, undefined), { sync: true });
    heal.installed(1);
    await settle();
    expect(opened).toEqual([]);
    expect(await engine.get(healKey(1))).toBeUndefined();
  });

  it('a crash inside the install (the store emptied) or right after it: the next start still opens the partition', async () => {
    const engine = new MemoryEngine();
    const m1 = 3_000_000_000;
    const first = healOn(engine, [], new Map([[1, fakeReplica(1, false)]]));
    // The record goes first (unsynced); the import's synced mark makes it durable; then a crash.
    await engine.write(first.opsBeforeInstall(1, { start: 2 ** 31, end: TOP }));
    await engine.write([], { sync: true });
    engine.crash();
    // Restart: partition 1 is on disk (its store emptied by discardInterruptedInstall), so it
    // holds no state and no range; the record still knows where its range ended.
    const opened: number[] = [];
    const groups = new Map<number, PartitionReplica>([[1, fakeReplica(1, false)]]);
    const second = healOn(engine, opened, groups);
    expect(await second.reopen(new Set([1]))).toEqual([]);
    await engine.write(second.opsAfterInstall(1, { start: 2 ** 31, end: m1 }), { sync: true });
    // A crash right after the install's batch, before the open ran.
    engine.crash();
    const reopened: number[] = [];
    const third = healOn(engine, reopened, new Map([[1, fakeReplica(1, false)]]));
    const replicas = await third.reopen(new Set([1]));
    expect(replicas.map((r) => r.id)).toEqual([m1]);
    expect(reopened).toEqual([m1]);
  });

  it('the negative control (splitHealDisabled) writes and opens nothing', async () => {
    const engine = new MemoryEngine();
    const opened: number[] = [];
    const heal = healOn(engine, opened, new Map([[1, fakeReplica(1, false)]]), true);
    expect(heal.opsBeforeInstall(1, { start: 2 ** 31, end: TOP })).toEqual([]);
    expect(heal.opsAfterInstall(1, { start: 2 ** 31, end: 3_000_000_000 })).toEqual([]);
    heal.installed(1);
    await settle();
    expect(opened).toEqual([]);
  });
});

describe('StrayCheck and heal replicas', () => {
  const PARTITION = 3_000_000_000;

  /** A node (id 1) hosting one empty heal replica, a peer (2) that leads the partition with `voters`. */
  function setup(voters: number[]): { tick(): Promise<void>; left: number[]; nowMs: { value: number } } {
    const replica = { id: PARTITION, appliedIndex: 0, raw: { lead: 0, term: 0, quiesced: false, isVoter: () => false, isMember: () => false, voterList: () => [], lastIndex: () => 0 } } as unknown as PartitionReplica;
    const groups = new Map<number, PartitionReplica>([[PARTITION, replica]]);
    const info = {
      partitions: [{ id: PARTITION, rangeStart: PARTITION, rangeEnd: 2 ** 32, replicas: voters, leader: 2, term: 5, commitIndex: 40, appliedIndex: 40, revision: 9 }],
    } as unknown as api.ClusterInfoResponse;
    const nowMs = { value: 0 };
    const strays = manualStrayCheck({ id: 1, nodes: [1, 2], groups, info, nowMs: () => nowMs.value, healing: () => new Map([[PARTITION, 0]]) });
    return { tick: () => strays.check(), left: strays.left, nowMs };
  }

  it('removes a heal replica still empty after its patience when the leader\'s voters leave this node out', async () => {
    const { tick, left, nowMs } = setup([2, 3, 4]);
    await tick();
    expect(left).toEqual([]);
    nowMs.value = HEAL_PATIENCE_MS;
    await tick();
    expect(left).toEqual([PARTITION]);
  });

  it('keeps a heal replica the leader counts among its voters (its snapshot is on the way)', async () => {
    const { tick, left, nowMs } = setup([1, 2, 3]);
    nowMs.value = HEAL_PATIENCE_MS;
    await tick();
    expect(left).toEqual([]);
  });
});
