/**
 * The MVCC half of a partition split (MvccStore.applySplit, split-plan.ts): the keys of [mid, end)
 * move whole (every version) to the new partition, the rest stay; each side refuses the other's
 * keys with PARTITION_MOVED; the split is one batch, deterministic across replicas, survives a
 * restart, travels in snapshots (format 5 carries the range), keeps exactly-once answers on both
 * sides, and a refused split changes nothing but the applied index.
 */
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/keys/bucket.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import { chooseSplitPoint, equalRangeOf } from '../../src/keys/partition-table.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { decodeSnapshotChunk } from '../../src/mvcc/snapshot-format.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import type { StorageEngine } from '../../src/storage/storage-engine.js';
import { codeOf, engineKinds, fromBytes, keysOfEqualPartition, memoryEngineKind, startMs, text, type EngineKind } from './harness.js';

const count = 2;
const sourceId = 0;
const targetId = 2;
const sourceOptions = { partition: { id: sourceId, count } };
const targetOptions = { partition: { id: targetId, count } };
const hashOf = (key: string): number => bucketHash(bucketOf(key));

async function open(engine: StorageEngine, id: number, options: object): Promise<MvccStore> {
  return MvccStore.open({ engine, prefix: partitionKeyPrefix('mvcc', id), ...options });
}

/** A source with history: every key written twice, every fifth deleted, one retried request id. */
async function populated(kind: EngineKind, engine?: StorageEngine): Promise<{ engine: StorageEngine; source: MvccStore; keys: string[]; index: number }> {
  const theEngine = engine ?? (await kind.make());
  const source = await open(theEngine, sourceId, sourceOptions);
  const keys = keysOfEqualPartition(sourceId, count, 60);
  let index = 0;
  for (const key of keys) await source.apply({ type: 'put', key, value: text(`${key}=1`) }, { index: ++index, nowMs: startMs });
  for (const [i, key] of keys.entries()) {
    if (i % 5 === 0) await source.apply({ type: 'delete', key }, { index: ++index, nowMs: startMs });
    else await source.apply({ type: 'put', key, value: text(`${key}=2`) }, { index: ++index, nowMs: startMs }, );
  }
  return { engine: theEngine, source, keys, index };
}

async function dump(engine: StorageEngine): Promise<string[]> {
  const rows: string[] = [];
  for await (const [key, value] of engine.iterate({})) rows.push(`${Buffer.from(key).toString('hex')}=${Buffer.from(value).toString('hex')}`);
  return rows;
}

describe.each(engineKinds)('partition split on $name', (kind) => {
  it('moves every version of the keys of [mid, end) and nothing else; each side refuses the other side', async () => {
    const { engine, source, keys, index } = await populated(kind);
    const revision = source.revision;
    const range = source.hashRange!;
    const mid = chooseSplitPoint(range, keys.map(hashOf))!;
    const target = await open(engine, targetId, targetOptions);
    const split = await source.applySplit(target, { index: index + 1, nowMs: startMs + 5, mid });
    expect(split.refused).toBeUndefined();
    const moved = keys.filter((key) => hashOf(key) >= mid);
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.length).toBeLessThan(keys.length);
    expect(split.movedKeys).toBe(moved.length);
    expect(split.movedVersions).toBe(moved.length * 2);
    // Both sides are at the split's index, time and revision; the ranges meet at mid.
    expect(source.hashRange).toEqual({ start: range.start, end: mid });
    expect(target.hashRange).toEqual({ start: mid, end: range.end });
    for (const store of [source, target]) {
      expect(store.appliedIndex).toBe(index + 1);
      expect(store.revision).toBe(revision);
      expect(store.appliedTimeMs).toBe(startMs + 5);
    }
    // No key is served by both or by neither; its history (the first version) moved with it.
    for (const [i, key] of keys.entries()) {
      const [owner, other] = hashOf(key) >= mid ? [target, source] : [source, target];
      const now = await owner.get(key, { nowMs: startMs });
      expect(now.found).toBe(i % 5 !== 0);
      if (now.found) expect(fromBytes(now.value)).toBe(`${key}=2`);
      const first = await owner.get(key, { nowMs: startMs, revision: i + 1 });
      expect(fromBytes(first.value)).toBe(`${key}=1`);
      expect(await codeOf(() => other.get(key, { nowMs: startMs }))).toBe('PARTITION_MOVED');
    }
    // Writes: the source refuses a moved key (nothing applied), the target takes it at the next revision.
    const refused = await source.apply({ type: 'put', key: moved[0]!, value: text('x') }, { index: index + 2, nowMs: startMs + 6 });
    expect(refused.error?.code).toBe('PARTITION_MOVED');
    expect(source.revision).toBe(revision);
    const written = await target.apply({ type: 'put', key: moved[0]!, value: text('x') }, { index: index + 2, nowMs: startMs + 6 });
    expect(written.revision).toBe(revision + 1);
    expect(target.status().appliedIndex).toBe(index + 2);
  });

  it('survives a restart: ranges, data and both stores reopen as they were', async () => {
    const { engine, source, keys, index } = await populated(kind);
    const mid = chooseSplitPoint(source.hashRange!, keys.map(hashOf))!;
    const target = await open(engine, targetId, targetOptions);
    await source.applySplit(target, { index: index + 1, nowMs: startMs, mid });
    const reopened = await kind.reopen(engine);
    const source2 = await open(reopened, sourceId, sourceOptions);
    const target2 = await open(reopened, targetId, targetOptions);
    expect(source2.hashRange).toEqual({ start: equalRangeOf(sourceId, count).start, end: mid });
    expect(target2.hashRange).toEqual({ start: mid, end: equalRangeOf(sourceId, count).end });
    expect(target2.appliedIndex).toBe(index + 1);
    expect(target2.revision).toBe(source2.revision);
    for (const [i, key] of keys.entries()) {
      const owner = hashOf(key) >= mid ? target2 : source2;
      expect((await owner.get(key, { nowMs: startMs })).found).toBe(i % 5 !== 0);
    }
    // Applying the split entry again after the restart (the log replays it) changes nothing.
    const again = await source2.applySplit(await open(reopened, 3, { partition: { id: 3, count } }), { index: index + 1, nowMs: startMs, mid });
    expect(again.movedKeys).toBe(0);
  });

  it('snapshots carry the range (format 5), so an installing replica owns the same keys', async () => {
    const { engine, source, keys, index } = await populated(kind);
    const neverSplit: Uint8Array[] = [];
    for await (const chunk of source.exportSnapshot()) neverSplit.push(chunk);
    expect(decodeSnapshotChunk(neverSplit[0]!).formatVersion).toBe(4);
    const mid = chooseSplitPoint(source.hashRange!, keys.map(hashOf))!;
    const target = await open(engine, targetId, targetOptions);
    await source.applySplit(target, { index: index + 1, nowMs: startMs, mid });
    for (const [store, id] of [[source, sourceId], [target, targetId]] as const) {
      const chunks: Uint8Array[] = [];
      for await (const chunk of store.exportSnapshot()) chunks.push(chunk);
      expect(decodeSnapshotChunk(chunks[0]!).formatVersion).toBe(5);
      const other = await kind.make();
      const replica = await open(other, id, id === sourceId ? sourceOptions : targetOptions);
      await replica.importSnapshot(chunks);
      expect(replica.hashRange).toEqual(store.hashRange);
      for (const key of keys) {
        const owns = (hashOf(key) >= mid) === (id === targetId);
        expect(await codeOf(() => replica.get(key, { nowMs: startMs }))).toBe(owns ? 'ok' : 'PARTITION_MOVED');
      }
    }
  });
});

describe('partition split (memory engine)', () => {
  const kind = memoryEngineKind;

  it('is deterministic: replicas that apply the same entries hold the same bytes', async () => {
    const dumps: string[][] = [];
    for (let replica = 0; replica < 2; replica++) {
      const { engine, source, keys, index } = await populated(kind);
      const target = await open(engine, targetId, targetOptions);
      await source.applySplit(target, { index: index + 1, nowMs: startMs, mid: chooseSplitPoint(source.hashRange!, keys.map(hashOf))! });
      dumps.push(await dump(engine));
    }
    expect(dumps[0]).toEqual(dumps[1]);
  });

  it('keeps exactly-once answers on both sides: the dedup window is copied', async () => {
    const { engine, source, keys, index } = await populated(kind);
    const mid = chooseSplitPoint(source.hashRange!, keys.map(hashOf))!;
    const movedKey = keys.find((key) => hashOf(key) >= mid)!;
    const first = await source.apply({ type: 'increment', key: movedKey + 'c', delta: 1n }, { index: index + 1, nowMs: startMs, requestId: 'req-1' });
    expect(first.applied).toBe(true);
    const target = await open(engine, targetId, targetOptions);
    await source.applySplit(target, { index: index + 2, nowMs: startMs, mid });
    const retry = await target.apply({ type: 'increment', key: movedKey + 'c', delta: 1n }, { index: index + 3, nowMs: startMs, requestId: 'req-1' });
    expect(retry.duplicate).toBe(true);
    expect(fromBytes((await target.get(movedKey + 'c', { nowMs: startMs })).value)).toBe('1');
  });

  it('refuses a bad split point or a leased key on the moving side, changing nothing but the applied index', async () => {
    const { engine, source, keys, index } = await populated(kind);
    const range = source.hashRange!;
    const target = await open(engine, targetId, targetOptions);
    const before = await dump(engine);
    const bad = await source.applySplit(target, { index: index + 1, nowMs: startMs, mid: range.end });
    expect(bad.refused?.code).toBe('SPLIT_REFUSED');
    expect(bad.refused?.details?.reason).toBe('bad-split-point');
    expect(source.appliedIndex).toBe(index + 1);
    expect(source.hashRange).toEqual(range);
    expect(target.appliedIndex).toBe(0);

    const mid = chooseSplitPoint(range, keys.map(hashOf))!;
    const movedKey = keys.find((key) => hashOf(key) >= mid)!;
    await source.apply({ type: 'leaseGrant', key: movedKey, ttlMs: 60_000 }, { index: index + 2, nowMs: startMs });
    await source.apply({ type: 'put', key: movedKey, value: text('leased'), lease: index + 2 }, { index: index + 3, nowMs: startMs });
    const leased = await source.applySplit(target, { index: index + 4, nowMs: startMs, mid });
    expect(leased.refused?.details?.reason).toBe('leased-keys');
    expect(source.hashRange).toEqual(range);
    expect(before.length).toBeGreaterThan(0);
    expect((await source.get(movedKey, { nowMs: startMs })).found).toBe(true);
  });
});
