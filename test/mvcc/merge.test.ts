/**
 * The MVCC half of a partition merge (MvccStore.applyMerge, merge-plan.ts), the inverse of a
 * split: the right partition's keys move whole (every version) into its left neighbour, which
 * then owns both ranges at the larger revision, floor and clock; the right store is left empty
 * and answers PARTITION_MOVED; the merge is one batch, deterministic across replicas, survives a
 * restart and travels in snapshots; both dedup windows survive (retries of either side are
 * answered, evicted timestamped ids of either side stay refused); a refused merge changes nothing
 * but the applied index.
 */
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/keys/bucket.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import { chooseSplitPoint } from '../../src/keys/partition-table.js';
import { makeLimits } from '../../src/limits.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { formatTimestampedRequestId } from '../../src/mvcc/request-id.js';
import { decodeSnapshotChunk, encodeSnapshotHeader } from '../../src/mvcc/snapshot-format.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import type { StorageEngine } from '../../src/storage/storage-engine.js';
import { codeOf, engineKinds, fromBytes, keysOfEqualPartition, memoryEngineKind, startMs, text, type EngineKind } from './harness.js';

const count = 2;
const leftId = 0;
const rightId = 2;
const hashOf = (key: string): number => bucketHash(bucketOf(key));

async function open(engine: StorageEngine, id: number, options: object = {}): Promise<MvccStore> {
  return MvccStore.open({ engine, prefix: partitionKeyPrefix('mvcc', id), partition: { id, count }, ...options });
}

async function dump(engine: StorageEngine, prefix?: Uint8Array): Promise<string[]> {
  const rows: string[] = [];
  const range = prefix === undefined ? {} : { gte: prefix, lt: Uint8Array.from([...prefix.subarray(0, -1), prefix[prefix.length - 1]! + 1]) };
  for await (const [key, value] of engine.iterate(range)) rows.push(`${Buffer.from(key).toString('hex')}=${Buffer.from(value).toString('hex')}`);
  return rows;
}

interface Pair {
  engine: StorageEngine;
  left: MvccStore;
  right: MvccStore;
  keys: string[];
  mid: number;
  /** The next free index of each log. */
  leftIndex: number;
  rightIndex: number;
}

/**
 * Partition 0 with history, split at its median into 0 and 2; then the two logs go their own
 * ways: the right side takes more writes (so its revision and its log run ahead of the left's).
 */
async function splitPair(kind: EngineKind, options: object = {}): Promise<Pair> {
  const engine = await kind.make();
  const left = await open(engine, leftId, options);
  const keys = keysOfEqualPartition(0, count, 40);
  let index = 0;
  for (const key of keys) await left.apply({ type: 'put', key, value: text(`${key}=1`) }, { index: ++index, nowMs: startMs, requestId: `first-${key}` });
  const mid = chooseSplitPoint(left.hashRange!, keys.map(hashOf))!;
  const right = await open(engine, rightId, options);
  await left.applySplit(right, { index: ++index, nowMs: startMs, mid });
  let leftIndex = index + 1;
  let rightIndex = index + 1;
  for (const [i, key] of keys.entries()) {
    if (hashOf(key) < mid) {
      if (i % 3 === 0) await left.apply({ type: 'put', key, value: text(`${key}=2`) }, { index: leftIndex++, nowMs: startMs + 1 });
    } else {
      await right.apply({ type: 'put', key, value: text(`${key}=2`) }, { index: rightIndex++, nowMs: startMs + 2 });
      await right.apply({ type: 'put', key, value: text(`${key}=3`) }, { index: rightIndex++, nowMs: startMs + 3 });
    }
  }
  return { engine, left, right, keys, mid, leftIndex, rightIndex };
}

/** Freezes the right side at `rightIndex` (into the left) and merges it at the left's `index`. */
async function freezeAndMerge(pair: Pick<Pair, 'left' | 'right'>, rightIndex: number, context: { index: number; nowMs: number }) {
  const frozen = await pair.right.applyFreeze({ index: rightIndex, nowMs: context.nowMs, into: leftId });
  expect(frozen.refused).toBeUndefined();
  expect(frozen.freezeIndex).toBe(rightIndex);
  return pair.left.applyMerge(pair.right, { ...context, freezeIndex: rightIndex });
}

describe.each(engineKinds)('partition merge on $name', (kind) => {
  it('moves every version of the right side into the left; the left owns both ranges, the right answers PARTITION_MOVED', async () => {
    const { engine, left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind);
    const leftRange = left.hashRange!;
    const rightRange = right.hashRange!;
    expect(leftRange.end).toBe(mid);
    const history = new Map<string, number>();
    for (const key of keys) history.set(key, (await (hashOf(key) < mid ? left : right).get(key, { nowMs: startMs })).modRevision!);
    const revision = Math.max(left.revision, right.revision);
    expect(right.revision).toBeGreaterThan(left.revision);
    const merged = await freezeAndMerge({ left, right }, rightIndex, { index: leftIndex, nowMs: startMs + 10 });
    expect(merged.refused).toBeUndefined();
    const moved = keys.filter((key) => hashOf(key) >= mid);
    expect(merged.movedKeys).toBe(moved.length);
    expect(merged.movedVersions).toBe(moved.length * 3);
    expect(left.hashRange).toEqual({ start: leftRange.start, end: rightRange.end });
    expect(left.appliedIndex).toBe(leftIndex);
    expect(left.revision).toBe(revision);
    expect(left.appliedTimeMs).toBe(startMs + 10);
    // Every key is served by the left, at its newest version and with its history.
    for (const key of keys) {
      const now = await left.get(key, { nowMs: startMs });
      expect(now.modRevision).toBe(history.get(key));
      const first = await left.get(key, { nowMs: startMs, revision: keys.indexOf(key) + 1 });
      expect(fromBytes(first.value)).toBe(`${key}=1`);
      expect(await codeOf(() => right.get(key, { nowMs: startMs }))).toBe('PARTITION_MOVED');
    }
    // The right partition keeps nothing on disk.
    expect(await dump(engine, partitionKeyPrefix('mvcc', rightId))).toEqual([]);
    // A write to a key that came from the right goes on at the merged revision.
    const written = await left.apply({ type: 'put', key: moved[0]!, value: text('after') }, { index: leftIndex + 1, nowMs: startMs + 11 });
    expect(written.error).toBeUndefined();
    expect(written.revision).toBe(revision + 1);
  });

  it('survives a restart, and applying the entry again changes nothing', async () => {
    const { engine, left, right, keys, leftIndex, rightIndex } = await splitPair(kind);
    const end = right.hashRange!.end;
    await freezeAndMerge({ left, right }, rightIndex, { index: leftIndex, nowMs: startMs });
    const before = await dump(engine);
    const reopened = await kind.reopen(engine);
    const left2 = await open(reopened, leftId);
    expect(left2.hashRange).toEqual({ start: 0, end });
    expect(left2.appliedIndex).toBe(leftIndex);
    for (const key of keys) expect((await left2.get(key, { nowMs: startMs })).found).toBe(true);
    const again = await left2.applyMerge(await open(reopened, rightId), { index: leftIndex, nowMs: startMs, freezeIndex: rightIndex });
    expect(again.movedKeys).toBe(0);
    expect(await dump(reopened)).toEqual(before);
  });

  it('snapshots of the merged partition carry its wider range and the merged dedup window', async () => {
    const { left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind);
    const movedKey = keys.find((key) => hashOf(key) >= mid)!;
    await right.apply({ type: 'increment', key: `${movedKey}c`, delta: 1n }, { index: rightIndex, nowMs: startMs, requestId: 'right-req' });
    await freezeAndMerge({ left, right }, rightIndex + 1, { index: leftIndex, nowMs: startMs });
    const chunks: Uint8Array[] = [];
    for await (const chunk of left.exportSnapshot()) chunks.push(chunk);
    expect(decodeSnapshotChunk(chunks[0]!).formatVersion).toBe(5);
    const replica = await open(await kind.make(), leftId);
    await replica.importSnapshot(chunks);
    expect(replica.hashRange).toEqual(left.hashRange);
    for (const key of keys) expect(await codeOf(() => replica.get(key, { nowMs: startMs }))).toBe('ok');
    const retry = await replica.apply({ type: 'increment', key: `${movedKey}c`, delta: 1n }, { index: leftIndex + 1, nowMs: startMs, requestId: 'right-req' });
    expect(retry.duplicate).toBe(true);
  });
});

describe('partition merge (memory engine)', () => {
  const kind = memoryEngineKind;

  it('is deterministic: replicas that apply the same entries hold the same bytes', async () => {
    const dumps: string[][] = [];
    for (let replica = 0; replica < 2; replica++) {
      const { engine, left, right, leftIndex, rightIndex } = await splitPair(kind);
      await freezeAndMerge({ left, right }, rightIndex, { index: leftIndex, nowMs: startMs });
      dumps.push(await dump(engine));
    }
    expect(dumps[0]).toEqual(dumps[1]);
  });

  it('keeps exactly-once answers of both sides: retries recorded by either log are answered, not applied again', async () => {
    const { left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind);
    const leftKey = keys.find((key) => hashOf(key) < mid)!;
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    await left.apply({ type: 'increment', key: `${leftKey}c`, delta: 1n }, { index: leftIndex, nowMs: startMs, requestId: 'left-req' });
    await right.apply({ type: 'increment', key: `${rightKey}c`, delta: 1n }, { index: rightIndex, nowMs: startMs, requestId: 'right-req' });
    await freezeAndMerge({ left, right }, rightIndex + 1, { index: leftIndex + 1, nowMs: startMs });
    let index = leftIndex + 2;
    for (const [key, id] of [[leftKey, 'left-req'], [rightKey, 'right-req'], [keys[0]!, `first-${keys[0]!}`]] as const) {
      const retry = await left.apply({ type: 'increment', key: `${key}c`, delta: 1n }, { index: index++, nowMs: startMs, requestId: id });
      expect(retry.duplicate, id).toBe(true);
    }
    expect(fromBytes((await left.get(`${rightKey}c`, { nowMs: startMs })).value)).toBe('1');
    // A new id still applies, at an index past the rewritten queue.
    const fresh = await left.apply({ type: 'increment', key: `${rightKey}c`, delta: 1n }, { index: index++, nowMs: startMs, requestId: 'new-req' });
    expect(fresh.applied).toBe(true);
  });

  it('keeps evicted timestamped ids of the right side refused as expired after the merge', async () => {
    const { left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind, { dedupWindow: 4 });
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    const oldId = formatTimestampedRequestId(startMs + 100, 'old');
    await right.apply({ type: 'put', key: rightKey, value: text('old') }, { index: rightIndex, nowMs: startMs + 200, requestId: oldId });
    // Push the old id out of the right side's window of 4.
    for (let i = 1; i <= 6; i++) {
      const id = formatTimestampedRequestId(startMs + 100 + i, `n${i}`);
      await right.apply({ type: 'put', key: rightKey, value: text(`v${i}`) }, { index: rightIndex + i, nowMs: startMs + 200, requestId: id });
    }
    const resend = async (store: MvccStore, index: number): Promise<string | undefined> =>
      (await store.apply({ type: 'put', key: rightKey, value: text('old') }, { index, nowMs: startMs + 300, requestId: oldId })).error?.code;
    await freezeAndMerge({ left, right }, rightIndex + 7, { index: leftIndex, nowMs: startMs + 300 });
    expect(left.dedupStatus().expiredThroughMs).toBeGreaterThanOrEqual(startMs + 100);
    expect(await resend(left, leftIndex + 1)).toBe('REQUEST_ID_EXPIRED');
    // Fresh plain ids evict every entry that came from the right: the left's entries, now the
    // oldest, must still carry a mark that covers the right's ids.
    for (let i = 0; i < 3; i++) await left.apply({ type: 'put', key: rightKey, value: text(`w${i}`) }, { index: leftIndex + 2 + i, nowMs: startMs + 300, requestId: `plain-${i}` });
    expect(await resend(left, leftIndex + 5)).toBe('REQUEST_ID_EXPIRED');
    expect(fromBytes((await left.get(rightKey, { nowMs: startMs + 300 })).value)).toBe('w2');
  });

  it('fits the merged window under the merge index: the oldest entries are dropped and stay refused as expired', async () => {
    const { left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind);
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    // More recorded requests on the right than the left's log has indexes below its merge entry.
    const ids: string[] = [];
    let index = rightIndex;
    while (ids.length < leftIndex + 20) {
      const id = formatTimestampedRequestId(startMs + 1 + ids.length, `r${ids.length}`);
      await right.apply({ type: 'increment', key: `${rightKey}n`, delta: 1n }, { index: index++, nowMs: startMs + 1_000, requestId: id });
      ids.push(id);
    }
    const merged = await freezeAndMerge({ left, right }, index, { index: leftIndex, nowMs: startMs + 1_000 });
    expect(merged.droppedDedupEntries).toBeGreaterThan(0);
    expect(left.dedupStatus()).toMatchObject({ recordCount: leftIndex, floorIndex: 1 });
    let next = leftIndex + 1;
    const resend = (id: string) => left.apply({ type: 'increment', key: `${rightKey}n`, delta: 1n }, { index: next++, nowMs: startMs + 1_000, requestId: id });
    expect((await resend(ids[0]!)).error?.code).toBe('REQUEST_ID_EXPIRED');
    expect((await resend(ids[ids.length - 1]!)).duplicate).toBe(true);
    expect(fromBytes((await left.get(`${rightKey}n`, { nowMs: startMs + 1_000 })).value)).toBe(String(ids.length));
  });

  it('refuses an unfrozen partition, one that is not its right neighbour, or a freeze while leases are held, changing nothing but the applied index', async () => {
    const { engine, left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind);
    const other = await open(engine, 1);
    const range = left.hashRange!;
    const before = await dump(engine, partitionKeyPrefix('mvcc', rightId));
    const unfrozen = await left.applyMerge(right, { index: leftIndex, nowMs: startMs, freezeIndex: rightIndex });
    expect(unfrozen.refused?.details?.reason).toBe('not-frozen');
    await other.applyFreeze({ index: 1, nowMs: startMs, into: leftId });
    const notAdjacent = await left.applyMerge(other, { index: leftIndex + 1, nowMs: startMs, freezeIndex: 1 });
    expect(notAdjacent.refused?.code).toBe('MERGE_REFUSED');
    expect(notAdjacent.refused?.details?.reason).toBe('not-adjacent');
    expect(left.appliedIndex).toBe(leftIndex + 1);
    expect(left.hashRange).toEqual(range);

    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    await right.apply({ type: 'leaseGrant', key: rightKey, ttlMs: 60_000 }, { index: rightIndex, nowMs: startMs });
    const leased = await right.applyFreeze({ index: rightIndex + 1, nowMs: startMs, into: leftId });
    expect(leased.refused?.details?.reason).toBe('leased-keys');
    expect(right.frozen).toBeUndefined();
    expect(left.hashRange).toEqual(range);
    expect(left.mergedInto).toBeUndefined();
    expect(right.mergedInto).toBeUndefined();
    expect((await right.get(rightKey, { nowMs: startMs })).found).toBe(true);
    expect(await codeOf(() => left.get(rightKey, { nowMs: startMs }))).toBe('PARTITION_MOVED');
    // The right side changed only by its own lease grant.
    expect((await dump(engine, partitionKeyPrefix('mvcc', rightId))).length).toBeGreaterThanOrEqual(before.length);
  });
});

describe('merge freeze (memory engine)', () => {
  const kind = memoryEngineKind;

  it('a frozen partition applies nothing, records no refusal, serves no read and cannot split; the retry applies once after the merge', async () => {
    const { engine, left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind);
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    const frozen = await right.applyFreeze({ index: rightIndex, nowMs: startMs, into: leftId });
    expect(frozen).toEqual({ freezeIndex: rightIndex });
    const revision = right.revision;
    const refused = await right.apply({ type: 'put', key: rightKey, value: text('late') }, { index: rightIndex + 1, nowMs: startMs, requestId: 'late-req' });
    expect(refused.error?.code).toBe('PARTITION_MOVED');
    expect(refused.error?.details?.mergedInto).toBe(leftId);
    expect(right.revision).toBe(revision);
    expect(right.appliedIndex).toBe(rightIndex + 1);
    expect(await codeOf(() => right.get(rightKey, { nowMs: startMs }))).toBe('PARTITION_MOVED');
    const split = await right.applySplit(await open(engine, 7), { index: rightIndex + 2, nowMs: startMs, mid: mid + 1 });
    expect(split.refused?.details?.reason).toBe('in-progress');
    // Again into the same partition: nothing changes (an admin that runs again); into another: refused.
    expect(await right.applyFreeze({ index: rightIndex + 3, nowMs: startMs, into: leftId })).toEqual({ freezeIndex: rightIndex });
    const other = await right.applyFreeze({ index: rightIndex + 4, nowMs: startMs, into: 1 });
    expect(other.refused?.details?.reason).toBe('frozen');
    expect(right.frozen).toEqual({ into: leftId, index: rightIndex });
    // The merge reads the right side at or past its freeze index: the state is the freeze's.
    const merged = await left.applyMerge(right, { index: leftIndex, nowMs: startMs, freezeIndex: rightIndex });
    expect(merged.refused).toBeUndefined();
    const retry = await left.apply({ type: 'put', key: rightKey, value: text('late') }, { index: leftIndex + 1, nowMs: startMs, requestId: 'late-req' });
    expect(retry.applied).toBe(true);
    expect(retry.duplicate).toBe(false);
    expect(fromBytes((await left.get(rightKey, { nowMs: startMs })).value)).toBe('late');
  });

  it("forgets the left's recorded PARTITION_MOVED for a key of the right's range, so its retry applies once", async () => {
    const { left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind);
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    const stale = await left.apply({ type: 'put', key: rightKey, value: text('routed-stale') }, { index: leftIndex, nowMs: startMs, requestId: 'stale-req' });
    expect(stale.error?.code).toBe('PARTITION_MOVED');
    await freezeAndMerge({ left, right }, rightIndex, { index: leftIndex + 1, nowMs: startMs });
    const retry = await left.apply({ type: 'put', key: rightKey, value: text('routed-stale') }, { index: leftIndex + 2, nowMs: startMs, requestId: 'stale-req' });
    expect(retry.applied).toBe(true);
    const again = await left.apply({ type: 'put', key: rightKey, value: text('routed-stale') }, { index: leftIndex + 3, nowMs: startMs, requestId: 'stale-req' });
    expect(again.duplicate).toBe(true);
  });

  it("keeps the right's result for an id the left refused with PARTITION_MOVED, so a resend after the merge applies nothing (simulator seed 8189)", async () => {
    const { left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind);
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    // The client's first try reached the left after the split (refused, recorded), its retry the right (applied).
    const stale = await left.apply({ type: 'put', key: rightKey, value: text('once') }, { index: leftIndex, nowMs: startMs, requestId: 'moved-then-applied' });
    expect(stale.error?.code).toBe('PARTITION_MOVED');
    const applied = await right.apply({ type: 'put', key: rightKey, value: text('once') }, { index: rightIndex, nowMs: startMs, requestId: 'moved-then-applied' });
    expect(applied.applied).toBe(true);
    const revision = (await right.get(rightKey, { nowMs: startMs })).modRevision;
    await freezeAndMerge({ left, right }, rightIndex + 1, { index: leftIndex + 1, nowMs: startMs });
    const resend = await left.apply({ type: 'put', key: rightKey, value: text('once') }, { index: leftIndex + 2, nowMs: startMs, requestId: 'moved-then-applied' });
    expect(resend.duplicate).toBe(true);
    expect((await left.get(rightKey, { nowMs: startMs })).modRevision).toBe(revision);
  });

  it("merges when the left's newest timestamped id is a refused PARTITION_MOVED (the merge asserted the newest creation time and failed on every replica)", async () => {
    const { left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind);
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    const leftKey = keys.find((key) => hashOf(key) < mid)!;
    const applied = await left.apply({ type: 'put', key: leftKey, value: text('older') }, { index: leftIndex, nowMs: startMs, requestId: formatTimestampedRequestId(startMs - 5_000, 'older') });
    expect(applied.applied).toBe(true);
    const newestId = formatTimestampedRequestId(startMs - 1_000, 'newest');
    const stale = await left.apply({ type: 'put', key: rightKey, value: text('stale') }, { index: leftIndex + 1, nowMs: startMs, requestId: newestId });
    expect(stale.error?.code).toBe('PARTITION_MOVED');
    const merged = await freezeAndMerge({ left, right }, rightIndex, { index: leftIndex + 2, nowMs: startMs });
    expect(merged.refused).toBeUndefined();
    // The refused id applies once after the merge; the applied one stays a duplicate.
    const retry = await left.apply({ type: 'put', key: rightKey, value: text('stale') }, { index: leftIndex + 3, nowMs: startMs, requestId: newestId });
    expect(retry.applied).toBe(true);
    const resend = await left.apply({ type: 'put', key: leftKey, value: text('older') }, { index: leftIndex + 4, nowMs: startMs, requestId: formatTimestampedRequestId(startMs - 5_000, 'older') });
    expect(resend.duplicate).toBe(true);
  });

  it('a storage compaction pass in progress starts over after a split, a freeze or a merge, instead of failing every later step', async () => {
    const limits = makeLimits({ compactionBatchOps: 5 });
    for (const change of ['split', 'freeze', 'merge'] as const) {
      const { engine, left, right, keys, mid, leftIndex, rightIndex } = await splitPair(kind, { limits });
      let index = leftIndex;
      const leftKeys = keys.filter((key) => hashOf(key) < mid);
      for (let round = 0; round < 3; round++) for (const key of leftKeys) await left.apply({ type: 'put', key, value: text(`${key}=r${round}`) }, { index: index++, nowMs: startMs });
      await left.apply({ type: 'compact', belowRevision: left.revision }, { index: index++, nowMs: startMs });
      const first = await left.compactStorageStep();
      expect(first.done, change).toBe(false);
      if (change === 'split') {
        const third = await open(engine, 4, { limits });
        const splitAt = chooseSplitPoint(left.hashRange!, leftKeys.map(hashOf))!;
        await left.applySplit(third, { index: index++, nowMs: startMs, mid: splitAt });
      } else if (change === 'freeze') {
        await left.applyFreeze({ index: index++, nowMs: startMs, into: 1 });
      } else {
        await freezeAndMerge({ left, right }, rightIndex, { index: index++, nowMs: startMs });
      }
      // Every later step runs (the pass starts over) until the store is compacted.
      let steps = 0;
      for (let done = false; !done && steps < 1_000; steps++) done = (await left.compactStorageStep()).done;
      expect(steps, change).toBeLessThan(1_000);
    }
  });

  it('the freeze survives a restart and travels in snapshots (format 6): an installing replica is frozen too', async () => {
    const { engine, right, keys, mid, rightIndex } = await splitPair(kind);
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    await right.applyFreeze({ index: rightIndex, nowMs: startMs, into: leftId });
    const reopened = await open(await kind.reopen(engine), rightId);
    expect(reopened.frozen).toEqual({ into: leftId, index: rightIndex });
    const chunks: Uint8Array[] = [];
    for await (const chunk of right.exportSnapshot()) chunks.push(chunk);
    const header = decodeSnapshotChunk(chunks[0]!);
    expect(header.formatVersion).toBe(6);
    const replica = await open(await kind.make(), rightId);
    await replica.importSnapshot(chunks);
    expect(replica.frozen).toEqual({ into: leftId, index: rightIndex });
    expect(replica.hashRange).toEqual(right.hashRange);
    const refused = await replica.apply({ type: 'put', key: rightKey, value: text('x') }, { index: rightIndex + 1, nowMs: startMs });
    expect(refused.error?.code).toBe('PARTITION_MOVED');
  });

  it('a format 6 header round-trips, and a malformed freeze in it is INVALID_ARGUMENT', () => {
    const header = { appliedIndex: 9, revision: 4, compactedRevision: 1, appliedTimeMs: startMs, range: { start: 10, end: 20 }, freeze: { into: 3, index: 8 } };
    const bytes = encodeSnapshotHeader(header);
    expect(decodeSnapshotChunk(bytes)).toEqual({ formatVersion: 6, kind: 'header', header });
    const zeroIndex = encodeSnapshotHeader({ ...header, freeze: { into: 3, index: 0 } });
    expect(() => decodeSnapshotChunk(zeroIndex)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => decodeSnapshotChunk(bytes.subarray(0, bytes.length - 1))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => encodeSnapshotHeader({ appliedIndex: 9, revision: 4, compactedRevision: 1, freeze: { into: 3, index: 8 } })).toThrow(RangeError);
  });
});
