/**
 * The applied state as one meta record (src/mvcc/applied-record.ts, issue 18): an apply batch
 * writes one bookkeeping record (applied index, time and revision), not three; a data directory in
 * the format before it (three separate records) opens at the same state, and its next apply batch
 * replaces the three with the one; a snapshot import (which writes the three) is read the same way.
 */
import { describe, expect, it } from 'vitest';
import { decodeAppliedRecord, encodeAppliedRecord } from '../../src/mvcc/applied-record.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { encodeUint64BE, equalBytes } from '../../src/storage/bytes.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { StorageEngine, WriteOperation, WriteOptions } from '../../src/storage/storage-engine.js';
import { AtollError } from '../../src/errors.js';
import { engineKinds, Partition, startMs, text } from './harness.js';

/** Records every write's operations (then hands them on). */
class RecordingEngine extends MemoryEngine {
  readonly writes: WriteOperation[][] = [];
  override async write(operations: WriteOperation[], options?: WriteOptions): Promise<void> {
    this.writes.push([...operations]);
    await super.write(operations, options);
  }
}

const metaTag = 'm'.charCodeAt(0);

async function metaKeysStored(engine: StorageEngine, layout: MvccKeyLayout): Promise<string[]> {
  const names: string[] = [];
  for (const key of [layout.appliedKey, layout.appliedIndexKey, layout.appliedTimeKey, layout.revisionKey]) {
    if ((await engine.get(key)) !== undefined) names.push(new TextDecoder().decode(key.subarray(layout.partitionPrefix.length + 1)));
  }
  return names;
}

describe('the applied record', () => {
  it('round-trips, and refuses a damaged value with INVALID_ARGUMENT', () => {
    const record = { appliedIndex: 2 ** 40 + 3, appliedTimeMs: startMs, revision: 77 };
    expect(decodeAppliedRecord(encodeAppliedRecord(record))).toEqual(record);
    const bytes = encodeAppliedRecord(record);
    for (const damaged of [bytes.subarray(0, 24), Uint8Array.of(...bytes, 0), Uint8Array.of(2, ...bytes.subarray(1))]) {
      expect(() => decodeAppliedRecord(damaged)).toThrow(AtollError);
    }
  });

  it('is the one bookkeeping record an apply batch writes (three before issue 18)', async () => {
    const engine = new RecordingEngine();
    const partition = await Partition.create(engineKinds[0]!, { engine });
    const layout = new MvccKeyLayout(partition.prefix);
    engine.writes.length = 0;
    await partition.put('a', 'one');
    await partition.put('b', 'two');
    await partition.apply({ type: 'delete', key: 'zz' }); // no revision: the record still moves the applied index
    expect(engine.writes).toHaveLength(3);
    for (const operations of engine.writes) {
      const meta = operations.filter((op) => op.key[partition.prefix.length] === metaTag);
      // Invariant: exactly one meta operation per plain apply batch, the 'applied' record.
      expect(meta).toHaveLength(1);
      expect(equalBytes(meta[0]!.key, layout.appliedKey)).toBe(true);
    }
    expect(decodeAppliedRecord((await engine.get(layout.appliedKey))!)).toEqual({ appliedIndex: 3, appliedTimeMs: startMs, revision: 2 });
    expect(await metaKeysStored(engine, layout)).toEqual(['applied']);
  });

  describe.each(engineKinds)('on $name', (kind) => {
    it('opens a data directory of the old format (three records) and replaces them at the next apply', async () => {
      const partition = await Partition.create(kind);
      await partition.put('a', 'one');
      await partition.put('b', 'two');
      const layout = new MvccKeyLayout(partition.prefix);
      // Rewrite the stored state into the format before issue 18: index 2, time T, revision 2.
      const T = startMs + 1234;
      await partition.engine.write(
        [
          { type: 'del', key: layout.appliedKey },
          { type: 'put', key: layout.appliedIndexKey, value: encodeUint64BE(2) },
          { type: 'put', key: layout.appliedTimeKey, value: encodeUint64BE(T) },
          { type: 'put', key: layout.revisionKey, value: encodeUint64BE(2) },
        ],
        { sync: true },
      );
      await partition.reopen(kind);
      expect(partition.store.status()).toMatchObject({ appliedIndex: 2, revision: 2 });
      expect(partition.store.appliedTimeMs).toBe(T);
      expect(await metaKeysStored(partition.engine, layout)).toEqual(['applied-index', 'applied-time', 'revision']);

      // The next batch writes the new record and deletes the old ones, atomically.
      await partition.put('c', 'three');
      expect(await metaKeysStored(partition.engine, layout)).toEqual(['applied']);
      await partition.reopen(kind);
      expect(partition.store.status()).toMatchObject({ appliedIndex: 3, revision: 3 });
      expect(partition.store.appliedTimeMs).toBe(T);
      expect((await partition.get('a')).value).toEqual(text('one'));
    });

    it('reads a snapshot import (which writes the three records) and replaces them at the next apply', async () => {
      const source = await Partition.create(kind);
      for (let i = 0; i < 5; i++) await source.put(`k${i}`, `v${i}`);
      const chunks: Uint8Array[] = [];
      for await (const chunk of source.store.exportSnapshot()) chunks.push(chunk);
      const target = await Partition.create(kind, { partitionId: 8 });
      await target.put('old', 'x');
      await target.store.importSnapshot(chunks);
      target.index = source.index;
      const layout = new MvccKeyLayout(target.prefix);
      await target.reopen(kind);
      expect(target.store.status()).toMatchObject({ appliedIndex: 5, revision: 5 });
      await target.put('k9', 'v9');
      expect(await metaKeysStored(target.engine, layout)).toEqual(['applied']);
      await target.reopen(kind);
      expect(target.store.status()).toMatchObject({ appliedIndex: 6, revision: 6 });
      expect((await target.get('old')).value).toBeUndefined();
    });
  });
});
