/** Snapshot export and import, between engines and partitions. */
import { describe, expect, it } from 'vitest';
import { readSnapshotHeader } from '../../src/mvcc/snapshot-format.js';
import { makeLimits } from '../../src/limits.js';
import type { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { engineKinds, memoryEngineKind, Partition, text } from './harness.js';

async function collectChunks(store: MvccStore): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of store.exportSnapshot()) chunks.push(chunk);
  return chunks;
}

/** Everything a client can observe, at every retained revision. */
async function observe(store: MvccStore, keys: string[], nowMs: number): Promise<unknown[]> {
  const seen: unknown[] = [store.revision, store.compactedRevision];
  for (let revision = store.compactedRevision; revision <= store.revision; revision++) {
    for (const key of keys) seen.push(await store.get(key, { nowMs, revision }));
    seen.push(await store.getByPrefix('', { nowMs, revision, limit: 1000 }));
  }
  return seen;
}

describe.each(engineKinds)('MvccStore snapshots on $name', (kind) => {
  it('moves the whole state, history and floor included, to another partition', async () => {
    const limits = makeLimits({ snapshotChunkBytes: 4096 });
    const source = await Partition.create(kind, { limits });
    for (let index = 0; index < 40; index++) await source.put(`b/${index}`, 'x'.repeat(500), index % 3 === 0 ? { ttlMs: 1000 } : {});
    await source.apply({ type: 'delete', key: 'b/3' });
    await source.put('b/4', 'changed');
    await source.put('\u0000/odd', '\u0000');
    await source.applyOk({ type: 'compact', belowRevision: 20 });

    const chunks = await collectChunks(source.store);
    expect(readSnapshotHeader(chunks[0]!)).toEqual({ appliedIndex: source.index, revision: 43, compactedRevision: 20, appliedTimeMs: source.nowMs });
    // Cut at the bound, plus at most one entry past it.
    for (const chunk of chunks) expect(chunk.length).toBeLessThan(4096 + 600);
    expect(chunks.length).toBeGreaterThan(4);

    const target = await Partition.create(kind, { partitionId: 99, limits });
    await target.put('stale', 'will be replaced');
    const status = await target.store.importSnapshot(chunks);
    expect(status).toEqual({ appliedIndex: source.index, revision: 43, compactedRevision: 20, needsSnapshot: false });
    expect(target.store.appliedTimeMs).toBe(source.nowMs);
    const keys = ['b/0', 'b/3', 'b/4', 'b/39', '\u0000/odd', 'stale'];
    expect(await observe(target.store, keys, source.nowMs)).toEqual(await observe(source.store, keys, source.nowMs));
    expect((await target.get('stale')).found).toBe(false);

    // The imported state keeps applying where the source left off, and survives a restart.
    target.index = source.index;
    const next = await target.put('b/new', 'v');
    expect(next.revision).toBe(44);
    await target.reopen(kind);
    expect(target.store.status()).toMatchObject({ appliedIndex: source.index + 1, revision: 44 });
  });

  it('leaves out versions applied while the export runs', async () => {
    const source = await Partition.create(kind, { limits: makeLimits({ snapshotChunkBytes: 1024 }) });
    for (let index = 0; index < 20; index++) await source.put(`k${index}`, 'x'.repeat(200));
    const chunks: Uint8Array[] = [];
    for await (const chunk of source.store.exportSnapshot()) {
      chunks.push(chunk);
      await source.put(`k${chunks.length}`, 'during export');
      await source.put(`z${chunks.length}`, 'during export');
    }
    expect(readSnapshotHeader(chunks[0]!).revision).toBe(20);
    const target = await Partition.create(kind, { partitionId: 3 });
    await target.store.importSnapshot(chunks);
    expect(target.store.revision).toBe(20);
    expect(await target.value('k1')).toBe('x'.repeat(200));
    expect((await target.get('z1')).found).toBe(false);
  });

  it('refuses a malformed or truncated snapshot: in memory it changes nothing; streamed it leaves the store unusable until an import succeeds', async () => {
    const source = await Partition.create(kind);
    await source.put('k', 'v');
    const chunks = await collectChunks(source.store);
    const target = await Partition.create(kind, { partitionId: 5 });
    await target.put('before', 'x');
    // Chunks in memory are checked whole before anything is deleted.
    for (const bad of [chunks.slice(0, -1), [Uint8Array.of(1, 9)], chunks.slice(1)]) {
      await expect(target.store.importSnapshot(bad)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(target.store.needsSnapshot).toBe(false);
      expect(await target.value('before')).toBe('x');
    }
    // A stream can only be checked as it is written: a truncated one leaves the store marked.
    async function* streamed(list: Uint8Array[]): AsyncIterable<Uint8Array> {
      yield* list;
    }
    await expect(target.store.importSnapshot(streamed(chunks.slice(0, -1)))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(target.store.needsSnapshot).toBe(true);
    await expect(target.get('before')).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await expect(target.store.importSnapshot([Uint8Array.of(1, 9)])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(target.store.importSnapshot(chunks.slice(1))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    // The mark survives a restart.
    await target.reopen(kind);
    expect(target.store.needsSnapshot).toBe(true);
    await target.store.importSnapshot(chunks);
    expect(target.store.needsSnapshot).toBe(false);
    expect(await target.value('k')).toBe('v');
  });

  it('exports an empty partition', async () => {
    const source = await Partition.create(kind);
    const chunks = await collectChunks(source.store);
    expect(chunks).toHaveLength(2);
    const target = await Partition.create(kind, { partitionId: 4 });
    await target.put('x', 'y');
    await target.store.importSnapshot(chunks);
    expect(target.store.status()).toEqual({ appliedIndex: 0, revision: 0, compactedRevision: 0, needsSnapshot: false });
  });
});

describe('MvccStore snapshot export and compaction', () => {
  it('defers physical compaction while an export runs', async () => {
    const partition = await Partition.create(memoryEngineKind);
    await partition.put('k', '1');
    await partition.put('k', '2');
    await partition.put('k', '3');
    const iterator = partition.store.exportSnapshot()[Symbol.asyncIterator]();
    await iterator.next();
    await partition.applyOk({ type: 'compact', belowRevision: 3 });
    expect(await partition.store.compactStorage()).toEqual({ removedVersions: 0, removedDedupEntries: 0, deferred: true });
    const rest: Uint8Array[] = [];
    for (let step = await iterator.next(); !step.done; step = await iterator.next()) rest.push(step.value);
    expect(await partition.store.compactStorage()).toEqual({ removedVersions: 2, removedDedupEntries: 0, deferred: false });
    expect((await partition.get('k')).value).toEqual(text('3'));
  });
});
