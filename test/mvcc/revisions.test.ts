/** Past-revision reads, compaction and crash atomicity. */
import { describe, expect, it } from 'vitest';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { countStoredKeys, engineKinds, memoryEngineKind, Partition, text } from './harness.js';

describe.each(engineKinds)('MvccStore revisions on $name', (kind) => {
  it('reads any retained past revision', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', 'v1'); // 1
    await partition.put('other', 'x'); // 2
    await partition.put('k', 'v2'); // 3
    await partition.apply({ type: 'delete', key: 'k' }); // 4
    await partition.put('k', 'v3'); // 5
    expect((await partition.get('k', 0)).found).toBe(false);
    expect(await partition.get('k', 1)).toMatchObject({ found: true, value: text('v1'), version: 1, revision: 1 });
    expect(await partition.get('k', 2)).toMatchObject({ value: text('v1'), revision: 2 });
    expect(await partition.get('k', 3)).toMatchObject({ value: text('v2'), version: 2, createRevision: 1 });
    expect((await partition.get('k', 4)).found).toBe(false);
    expect(await partition.get('k', 5)).toMatchObject({ value: text('v3'), version: 1, createRevision: 5 });
  });

  it('refuses a revision above the current one with FUTURE_REVISION', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', 'v');
    await expect(partition.get('k', 2)).rejects.toMatchObject({ code: 'FUTURE_REVISION' });
    await expect(partition.store.getByPrefix('k', { nowMs: 0, revision: 5 })).rejects.toMatchObject({ code: 'FUTURE_REVISION' });
  });

  it('compacts through the log: reads below the floor fail, reads at and above it are unchanged', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', 'v1'); // 1
    await partition.put('k', 'v2'); // 2
    await partition.put('gone', 'x'); // 3
    await partition.apply({ type: 'delete', key: 'gone' }); // 4
    await partition.put('k', 'v3'); // 5
    await partition.put('kept', 'y'); // 6
    const expectations = new Map<number, Array<string | undefined>>();
    for (let revision = 4; revision <= 6; revision++) {
      expectations.set(revision, [
        (await partition.get('k', revision)).found ? new TextDecoder().decode((await partition.get('k', revision)).value) : undefined,
        (await partition.get('gone', revision)).found ? 'present' : undefined,
      ]);
    }
    const storedBefore = await countStoredKeys(partition.engine);
    const compacted = await partition.apply({ type: 'compact', belowRevision: 4 });
    expect(compacted).toMatchObject({ applied: true, revision: 6 });
    expect(partition.store.compactedRevision).toBe(4);
    await expect(partition.get('k', 3)).rejects.toMatchObject({ code: 'COMPACTED', details: { compactedRevision: 4 } });
    for (const [revision, [k, gone]] of expectations) {
      const kRead = await partition.get('k', revision);
      expect(kRead.found ? new TextDecoder().decode(kRead.value) : undefined).toBe(k);
      expect((await partition.get('gone', revision)).found ? 'present' : undefined).toBe(gone);
    }
    // k@1 is gone (k@2 is the newest at or below 4); gone@3 and its tombstone@4 are both gone;
    // the compaction floor's meta record is new.
    expect(await countStoredKeys(partition.engine)).toBe(storedBefore - 3 + 1);
    // Version counts and create revisions survive compaction.
    expect(await partition.get('k')).toMatchObject({ version: 3, createRevision: 1 });
  });

  it('treats a lower or equal compaction floor as a no-op and a future one as an error', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', 'v1');
    await partition.put('k', 'v2');
    await partition.applyOk({ type: 'compact', belowRevision: 2 });
    expect((await partition.apply({ type: 'compact', belowRevision: 1 })).applied).toBe(true);
    expect(partition.store.compactedRevision).toBe(2);
    expect((await partition.apply({ type: 'compact', belowRevision: 3 })).error?.code).toBe('FUTURE_REVISION');
    expect(partition.store.compactedRevision).toBe(2);
  });

  it('keeps the floor across a restart', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', 'v1');
    await partition.put('k', 'v2');
    await partition.applyOk({ type: 'compact', belowRevision: 2 });
    await partition.reopen(kind);
    expect(partition.store.compactedRevision).toBe(2);
    await expect(partition.get('k', 1)).rejects.toMatchObject({ code: 'COMPACTED' });
    expect((await partition.store.compactStorage()).removedVersions).toBe(0);
  });

  it('keeps partitions sharing one engine apart', async () => {
    const engine = await kind.make();
    const left = await Partition.create(kind, { engine, partitionId: 1 });
    const right = await Partition.create(kind, { engine, partitionId: 2 });
    await left.put('k', 'left');
    await right.put('k', 'right');
    await right.put('only-right', 'x');
    expect(await left.value('k')).toBe('left');
    expect(await right.value('k')).toBe('right');
    expect((await left.get('only-right')).found).toBe(false);
    expect(left.store.revision).toBe(1);
    await left.applyOk({ type: 'compact', belowRevision: 1 });
    expect(await right.value('k')).toBe('right');
  });
});

describe('MvccStore partition ownership', () => {
  it('refuses keys and prefixes that route to another partition', async () => {
    const count = 8;
    const id = partitionOf('services/auth', count);
    const partition = await Partition.create(memoryEngineKind, { partition: { id, count } });
    const foreignBucket = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].find((bucket) => partitionOf(bucket, count) !== id)!;
    expect((await partition.put('services/auth', 'x')).applied).toBe(true);
    const misrouted = await partition.put(`${foreignBucket}/k`, 'x');
    expect(misrouted.error).toMatchObject({ code: 'WRONG_PARTITION', details: { partitionId: partitionOf(foreignBucket, count) } });
    const batch = await partition.apply({ type: 'batch', writes: [{ type: 'put', key: 'services/x', value: text('1') }, { type: 'delete', key: foreignBucket }] });
    expect(batch.error?.code).toBe('WRONG_PARTITION');
    expect((await partition.get('services/x')).found).toBe(false);
    await expect(partition.get(`${foreignBucket}/k`)).rejects.toMatchObject({ code: 'WRONG_PARTITION' });
    await expect(partition.store.getByPrefix('services', { nowMs: 0 })).rejects.toMatchObject({ code: 'PREFIX_SPANS_BUCKETS' });
    await expect(partition.store.getByPrefix(`${foreignBucket}/`, { nowMs: 0 })).rejects.toMatchObject({ code: 'WRONG_PARTITION' });
    expect((await partition.store.getByPrefix('services/', { nowMs: 0 })).items).toHaveLength(1);
  });
});

describe('MvccStore crash atomicity (MemoryEngine power loss)', () => {
  it('recovers to exactly the state of some applied index', async () => {
    const engine = (await memoryEngineKind.make()) as MemoryEngine;
    const partition = await Partition.create(memoryEngineKind, { engine });
    await partition.put('a', '1');
    await engine.write([], { sync: true });
    await partition.put('a', '2');
    await partition.applyOk({ type: 'batch', writes: [{ type: 'put', key: 'b', value: text('x') }, { type: 'delete', key: 'a' }] });
    engine.crash({ keepUnsyncedBatches: 1 });
    const store = await MvccStore.open({ engine, prefix: partition.prefix });
    expect(store.status()).toMatchObject({ appliedIndex: 2, revision: 2 });
    expect((await store.get('a', { nowMs: 0 })).value).toEqual(text('2'));
    expect((await store.get('b', { nowMs: 0 })).found).toBe(false);
    // Raft replays entry 3 and gets the same state as before the crash.
    const replayed = await store.apply({ type: 'batch', writes: [{ type: 'put', key: 'b', value: text('x') }, { type: 'delete', key: 'a' }] }, { index: 3, nowMs: 0 });
    expect(replayed).toMatchObject({ applied: true, revision: 3 });
    expect((await store.get('a', { nowMs: 0 })).found).toBe(false);
  });
});
