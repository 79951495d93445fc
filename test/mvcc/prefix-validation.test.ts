/**
 * Serializable prefix validation runs inside apply on every replica, so it is bounded
 * (maxTxnPrefixKeys keys, maxScanVersions versions, retained ones only) and decides the same on
 * every replica whatever its physical compaction progress.
 */
import { describe, expect, it } from 'vitest';
import type { TxnCommand, WriteOp } from '../../src/mvcc/commands.js';
import { makeLimits } from '../../src/limits.js';
import { countStoredKeys, engineKinds, Partition, text } from './harness.js';

const limits = makeLimits({ maxTxnPrefixKeys: 20, maxScanVersions: 50, maxPageSize: 50, defaultPageSize: 20 });

const put = (key: string, value: string): WriteOp => ({ type: 'put', key, value: text(value) });

const serializable = (snapshotRevision: number, writes: WriteOp[], readPrefixes: string[]): TxnCommand => ({
  type: 'txn',
  snapshotRevision,
  isolation: 'serializable',
  readKeys: [],
  readPrefixes,
  writes,
});

describe.each(engineKinds)('serializable prefix validation on $name', (kind) => {
  it('fails a commit whose read prefix holds more keys than the bound, and changes nothing', async () => {
    const partition = await Partition.create(kind, { limits });
    for (let i = 0; i < 21; i++) await partition.put(`p/${String(i).padStart(2, '0')}`, 'v');
    const snapshot = partition.store.revision;
    const result = await partition.apply(serializable(snapshot, [put('out', '1')], ['p/']));
    expect(result.error).toMatchObject({ code: 'RESOURCE_EXHAUSTED', details: { keyPrefix: 'p/', maxKeys: 20, maxVersions: 50 } });
    expect(result.applied).toBe(false);
    expect(partition.store.revision).toBe(snapshot);
    expect(await partition.value('out')).toBeUndefined();
    // One key fewer is within the bound.
    await partition.apply({ type: 'delete', key: 'p/20' });
    await partition.applyOk({ type: 'compact', belowRevision: partition.store.revision });
    expect((await partition.apply(serializable(partition.store.revision, [put('out', '1')], ['p/']))).applied).toBe(true);
  });

  it('fails a commit whose read prefix holds more retained versions than the bound', async () => {
    const partition = await Partition.create(kind, { limits });
    for (let round = 0; round < 6; round++) for (let i = 0; i < 10; i++) await partition.put(`h/${i}`, `v${round}`);
    const snapshot = partition.store.revision;
    const result = await partition.apply(serializable(snapshot, [put('out', '1')], ['h/']));
    expect(result.error?.code).toBe('RESOURCE_EXHAUSTED');
    expect(partition.store.revision).toBe(snapshot);
    // The bound is shared by all the commit's read prefixes: two of 6 keys each pass alone, not together.
    for (let i = 0; i < 12; i++) await partition.put(`${i < 6 ? 'a' : 'b'}/${i}`, 'v');
    const now = partition.store.revision;
    expect((await partition.apply(serializable(now, [put('out', '1')], ['a/']))).error).toBeUndefined();
    expect((await partition.apply(serializable(partition.store.revision, [put('out', '1')], ['a/', 'b/', 'h/']))).error?.code).toBe('RESOURCE_EXHAUSTED');
  });

  it('still detects a phantom within the bound as TXN_CONFLICT', async () => {
    const partition = await Partition.create(kind, { limits });
    for (let i = 0; i < 10; i++) await partition.put(`s/${i}`, 'v');
    const snapshot = partition.store.revision;
    await partition.put('s/new', 'phantom');
    const result = await partition.apply(serializable(snapshot, [put('out', '1')], ['s/']));
    expect(result.error).toMatchObject({ code: 'TXN_CONFLICT', details: { keyPrefix: 's/', key: 's/new' } });
    expect(await partition.value('out')).toBeUndefined();
    // A delete under the prefix after the snapshot is a conflict too.
    const fresh = partition.store.revision;
    await partition.apply({ type: 'delete', key: 's/3' });
    expect((await partition.apply(serializable(fresh, [put('out', '1')], ['s/']))).error).toMatchObject({ code: 'TXN_CONFLICT', details: { key: 's/3' } });
  });

  it('decides the same on a replica whose physical compaction lags (counts retained versions only)', async () => {
    const run = async (deferCompaction: boolean) => {
      const partition = await Partition.create(kind, { limits });
      for (let round = 0; round < 8; round++) for (let i = 0; i < 12; i++) await partition.put(`d/${String(i).padStart(2, '0')}`, `v${round}`);
      await partition.apply({ type: 'delete', key: 'd/00' });
      // An export in flight defers physical compaction: this replica keeps every old version.
      const exporter = partition.store.exportSnapshot()[Symbol.asyncIterator]();
      if (deferCompaction) await exporter.next();
      await partition.applyOk({ type: 'compact', belowRevision: partition.store.revision });
      const outcomes: Array<string | undefined> = [];
      const snapshot = partition.store.revision;
      // 11 retained values (d/00 is a tombstone at the floor): within the bound, though 97 versions are stored.
      outcomes.push((await partition.apply(serializable(snapshot, [put('out', '1')], ['d/']))).error?.code);
      for (let i = 0; i < 3; i++) await partition.put(`d/${String(i).padStart(2, '0')}`, 'later');
      // A snapshot before those writes conflicts; one after them validates 11 + 3 retained versions.
      outcomes.push((await partition.apply(serializable(snapshot, [put('out', '1')], ['d/']))).error?.code);
      outcomes.push((await partition.apply(serializable(partition.store.revision, [put('out', '1')], ['d/']))).error?.code);
      // 40 more versions make 54 retained, past the bound of 50, on both replicas.
      for (let round = 0; round < 4; round++) for (let i = 1; i < 11; i++) await partition.put(`d/${String(i).padStart(2, '0')}`, `more${round}`);
      outcomes.push((await partition.apply(serializable(partition.store.revision, [put('out', '1')], ['d/']))).error?.code);
      const stored = await countStoredKeys(partition.engine);
      await exporter.return?.();
      return { outcomes, revision: partition.store.revision, stored };
    };
    const lagging = await run(true);
    const compacted = await run(false);
    expect(lagging.outcomes).toEqual([undefined, 'TXN_CONFLICT', undefined, 'RESOURCE_EXHAUSTED']);
    expect({ ...compacted, stored: 0 }).toEqual({ ...lagging, stored: 0 });
    // The lagging replica really scanned more: it still stores the versions below the floor.
    expect(lagging.stored).toBeGreaterThan(compacted.stored + 80);
  });
});
