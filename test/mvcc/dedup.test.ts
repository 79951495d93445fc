/**
 * Exactly-once writes across client retries (Raft thesis §6.3, client sessions): an entry that
 * repeats a recorded request id is not applied again and gets the first entry's result. The
 * record is replicated state, so it must survive restarts and snapshots and be evicted by apply
 * order alike on every replica.
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { makeLimits } from '../../src/limits.js';
import type { ApplyResult, Command, IncrementOp } from '../../src/mvcc/commands.js';
import { decodeDedupEntry, encodeDedupEntry } from '../../src/mvcc/dedup-record.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { encodeSnapshotHeader, encodeSnapshotTrailer, SnapshotEntriesWriter } from '../../src/mvcc/snapshot-format.js';
import { maxRequestIdBytes, validateRequestId } from '../../src/mvcc/validate-command.js';
import { bytesToHex, encodeUint64BE } from '../../src/storage/bytes.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { KeyRange, StorageEngine } from '../../src/storage/storage-engine.js';
import { engineKinds, memoryEngineKind, Partition, text } from './harness.js';

const increment = (key: string, delta = 1n): IncrementOp => ({ type: 'increment', key, delta });

async function collectChunks(store: MvccStore): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of store.exportSnapshot()) chunks.push(chunk);
  return chunks;
}

/** The stored keys (hex) and values (hex) in a range, to compare replicas byte for byte. */
async function dump(engine: StorageEngine, range: KeyRange): Promise<string[]> {
  const entries: string[] = [];
  for await (const [key, value] of engine.iterate(range)) entries.push(`${bytesToHex(key)}=${bytesToHex(value)}`);
  return entries;
}

/** The queue entries and records on disk, live or evicted-but-not-yet-deleted. */
async function storedDedup(partition: Partition): Promise<{ queue: number; records: number }> {
  const layout = new MvccKeyLayout(partition.prefix);
  return {
    queue: (await dump(partition.engine, layout.dedupQueueRange(0))).length,
    records: (await dump(partition.engine, layout.allDedupRecordsRange())).length,
  };
}

/** What a retry must reproduce: everything but the entry's own index and the duplicate marks. */
function answer(result: ApplyResult): unknown {
  const { index: _index, duplicate: _duplicate, originalIndex: _originalIndex, error, ...rest } = result;
  return { ...rest, error: error === undefined ? undefined : { code: error.code, message: error.message, details: error.details } };
}

describe('validateRequestId', () => {
  it('takes 1 to 64 UTF-8 bytes of well-formed text', () => {
    expect(() => validateRequestId('a')).not.toThrow();
    expect(() => validateRequestId('é'.repeat(maxRequestIdBytes / 2))).not.toThrow();
    for (const bad of ['', 'x'.repeat(maxRequestIdBytes + 1), 'é'.repeat(maxRequestIdBytes / 2) + 'x', '\uD800', 7, undefined]) {
      expect(() => validateRequestId(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });
});

describe('dedup entry encoding', () => {
  it('round-trips every field of a result', () => {
    const version = { key: 'k', value: text('v'), createRevision: 1, modRevision: 4, version: 3 };
    const entry = {
      requestId: 'req-😀',
      createdBeforeMs: 1_764_000_000_123,
      result: {
        revision: 9,
        applied: false,
        error: new AtollError('OVERFLOW', 'too big', { key: 'k', current: '9', nested: { n: 1 } }),
        writes: [
          { type: 'put' as const, key: 'k', conditionHeld: true, current: { ...version, expiresAtMs: 5 }, previous: version },
          { type: 'put' as const, key: 'k2', conditionHeld: false, previous: null },
          { type: 'delete' as const, key: 'k3', conditionHeld: true, deleted: false },
          { type: 'increment' as const, key: 'k', conditionHeld: true, current: version, counter: -(2n ** 63n) },
          { type: 'extend' as const, key: 'k4', conditionHeld: false },
        ],
      },
    };
    const decoded = decodeDedupEntry(encodeDedupEntry(entry));
    expect(decoded.result.writes).toStrictEqual(entry.result.writes);
    const noted = decodeDedupEntry(encodeDedupEntry({ requestId: 'n', createdBeforeMs: 0, result: { revision: 2, applied: true, writes: [], note: text('[1,2]') } }));
    expect(noted.result.note).toStrictEqual(text('[1,2]'));
    expect(decoded.result.error).toMatchObject({ code: 'OVERFLOW', message: 'too big', details: { key: 'k', current: '9', nested: { n: 1 } } });
    expect(decoded.result.error).toBeInstanceOf(AtollError);
    expect(decoded).toMatchObject({ requestId: 'req-😀', createdBeforeMs: 1_764_000_000_123, result: { revision: 9, applied: false } });
  });

  it('refuses malformed bytes with INVALID_ARGUMENT', () => {
    const bytes = encodeDedupEntry({ requestId: 'r', createdBeforeMs: 0, result: { revision: 1, applied: true, writes: [] } });
    for (const bad of [bytes.subarray(0, bytes.length - 1), Uint8Array.of(...bytes, 0), Uint8Array.of(9, ...bytes.subarray(1))]) {
      expect(() => decodeDedupEntry(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });
});

describe.each(engineKinds)('MvccStore deduplication on $name', (kind) => {
  it('does not record a transaction that lost a conflict, and returns a committed one\'s note to a retry', async () => {
    const partition = await Partition.create(kind);
    await partition.put('bank/a', '10');
    const snapshot = partition.store.revision;
    await partition.put('bank/a', '11');
    const txn = (snapshotRevision: number, value: string): Command => ({
      type: 'txn',
      snapshotRevision,
      isolation: 'snapshot',
      readKeys: [],
      readPrefixes: [],
      writes: [{ type: 'put', key: 'bank/a', value: text(value) }],
      note: text(`{"set":${value}}`),
    });
    const lost = await partition.apply(txn(snapshot, '20'), 'script-1');
    expect(lost.error?.code).toBe('TXN_CONFLICT');
    expect(lost.note).toBeUndefined();
    expect(partition.store.dedupStatus().recordCount).toBe(0);
    // The same request id, run again at a newer snapshot, commits once.
    const won = await partition.apply(txn(partition.store.revision, '21'), 'script-1');
    expect(won).toMatchObject({ applied: true, duplicate: false });
    expect(new TextDecoder().decode(won.note)).toBe('{"set":21}');
    const retried = await partition.apply(txn(partition.store.revision, '22'), 'script-1');
    expect(retried).toMatchObject({ applied: true, duplicate: true, revision: won.revision });
    expect(new TextDecoder().decode(retried.note)).toBe('{"set":21}');
    expect(await partition.value('bank/a')).toBe('21');
    // The record (note included) survives a restart.
    await partition.reopen(kind);
    const afterRestart = await partition.apply(txn(partition.store.revision, '23'), 'script-1');
    expect(afterRestart).toMatchObject({ duplicate: true, revision: won.revision });
    expect(new TextDecoder().decode(afterRestart.note)).toBe('{"set":21}');
  });

  it('applies an increment once however often it is retried, and each new id again', async () => {
    const partition = await Partition.create(kind);
    const first = await partition.apply(increment('counter', 5n), 'req-1');
    expect(first).toMatchObject({ applied: true, duplicate: false, revision: 1, writes: [{ counter: 5n }] });
    await partition.put('other', 'x');

    const retry = await partition.apply(increment('counter', 5n), 'req-1');
    expect(retry).toMatchObject({ index: 3, duplicate: true, originalIndex: 1, replayed: false });
    expect(answer(retry)).toEqual(answer(first));
    expect(retry.writes[0]!.current!.value).toEqual(text('5'));
    // Only the applied index moved.
    expect(partition.store.status()).toMatchObject({ appliedIndex: 3, revision: 2 });
    expect(await partition.value('counter')).toBe('5');

    const other = await partition.apply(increment('counter', 5n), 'req-2');
    expect(other).toMatchObject({ applied: true, duplicate: false, writes: [{ counter: 10n }] });
    const plain = await partition.apply(increment('counter', 5n));
    expect(plain).toMatchObject({ duplicate: false, writes: [{ counter: 15n }] });
    expect(await partition.value('counter')).toBe('15');
    expect(partition.store.dedupStatus()).toMatchObject({ recordCount: 2, floorIndex: 0 });
  });

  it('returns the same failure to a retried compare-and-swap, even once it would succeed', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', 'v1'); // revision 1
    const cas: Command = { type: 'put', key: 'k', value: text('mine'), ifModRevision: 2, returnPrevious: true };
    const failed = await partition.apply(cas, 'cas-1');
    expect(failed).toMatchObject({ applied: false, revision: 1, writes: [{ conditionHeld: false, previous: { value: text('v1'), modRevision: 1 } }] });
    await partition.put('k', 'v2'); // revision 2: the condition would hold now
    const retry = await partition.apply(cas, 'cas-1');
    expect(retry.duplicate).toBe(true);
    expect(answer(retry)).toEqual(answer(failed));
    expect(await partition.value('k')).toBe('v2');

    // A compare-and-swap that succeeded is not redone either, though its condition fails now.
    const won = await partition.apply({ ...cas, ifModRevision: 2 }, 'cas-2');
    expect(won).toMatchObject({ applied: true, revision: 3, writes: [{ previous: { value: text('v2') }, current: { value: text('mine') } }] });
    await partition.put('k', 'v4');
    const wonAgain = await partition.apply({ ...cas, ifModRevision: 2 }, 'cas-2');
    expect(answer(wonAgain)).toEqual(answer(won));
    expect(await partition.value('k')).toBe('v4');
  });

  it('returns the same operating error to a retried increment of a non-integer', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', 'abc');
    const failed = await partition.apply(increment('k'), 'inc-1');
    expect(failed.error).toMatchObject({ code: 'NOT_INTEGER', details: { key: 'k' } });
    await partition.put('k', '1');
    const retry = await partition.apply(increment('k'), 'inc-1');
    expect(retry).toMatchObject({ duplicate: true, applied: false, writes: [] });
    expect(retry.error).toBeInstanceOf(AtollError);
    expect(answer(retry)).toEqual(answer(failed));
    expect(await partition.value('k')).toBe('1');

    // Input errors are recorded too: the retry does not get a second chance.
    const badBatch: Command = { type: 'batch', writes: [increment('a'), increment('a')] };
    const invalid = await partition.apply(badBatch, 'bad-batch');
    expect(invalid.error?.code).toBe('INVALID_ARGUMENT');
    expect(answer(await partition.apply(badBatch, 'bad-batch'))).toEqual(answer(invalid));
    expect((await partition.get('a')).found).toBe(false);
  });

  it('fails an entry with a bad request id, records nothing, and still moves the applied index', async () => {
    const partition = await Partition.create(kind);
    for (const bad of ['', 'x'.repeat(65), '\uDC00']) {
      const result = await partition.apply(increment('counter'), bad);
      expect(result).toMatchObject({ applied: false, duplicate: false, error: { code: 'INVALID_ARGUMENT' }, writes: [] });
    }
    expect(partition.store.status()).toMatchObject({ appliedIndex: 3, revision: 0 });
    expect(partition.store.dedupStatus().recordCount).toBe(0);
    expect((await partition.get('counter')).found).toBe(false);
  });

  it('ignores request ids on compact commands', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', '1');
    await partition.put('k', '2');
    expect(await partition.apply({ type: 'compact', belowRevision: 1 }, 'c')).toMatchObject({ applied: true, duplicate: false });
    expect(await partition.apply({ type: 'compact', belowRevision: 2 }, 'c')).toMatchObject({ applied: true, duplicate: false });
    expect(partition.store.compactedRevision).toBe(2);
    expect(partition.store.dedupStatus().recordCount).toBe(0);
  });

  it('evicts the oldest results by apply order, identically on every replica; an evicted id applies again', async () => {
    const replicas = [await Partition.create(kind, { dedupWindow: 3 }), await Partition.create(kind, { dedupWindow: 3, partitionId: 8 })];
    const script: Array<[Command, string | undefined]> = [
      [increment('n'), 'a'],
      [increment('n'), 'b'],
      [increment('n'), undefined],
      [increment('n'), 'c'],
      [increment('n'), 'd'], // evicts a
      [increment('n'), 'd'], // duplicate: evicts nothing
      [increment('n'), 'b'], // duplicate
      [increment('n'), 'a'], // applies again, evicts b
      [increment('n'), 'b'], // applies again, evicts c
      [increment('n'), 'a'], // duplicate of the second a
    ];
    const outcomes: unknown[][] = [[], []];
    for (const [replica, partition] of replicas.entries()) {
      for (const [command, requestId] of script) {
        const result = await partition.apply(command, requestId);
        outcomes[replica]!.push({ duplicate: result.duplicate, originalIndex: result.originalIndex, counter: result.writes[0]?.counter });
        expect(partition.store.dedupStatus().recordCount).toBeLessThanOrEqual(3);
        // Evicted entries are deleted by the next recording apply: at most one apply's worth lingers.
        expect((await storedDedup(partition)).queue).toBeLessThanOrEqual(4);
      }
    }
    expect(outcomes[0]!.map((outcome) => (outcome as { duplicate: boolean }).duplicate)).toEqual([
      false, false, false, false, false, true, true, false, false, true,
    ]);
    expect(outcomes[0]![9]).toEqual({ duplicate: true, originalIndex: 8, counter: 6n });
    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(await replicas[0]!.value('n')).toBe('7');

    // The dedup state is the same bytes on both replicas (relative to their prefixes).
    const dumps = await Promise.all(
      replicas.map(async (partition) => {
        await partition.store.compactStorage();
        const layout = new MvccKeyLayout(partition.prefix);
        const strip = (entry: string): string => entry.slice(bytesToHex(partition.prefix).length);
        return [
          ...(await dump(partition.engine, layout.dedupQueueRange(0))).map(strip),
          ...(await dump(partition.engine, layout.allDedupRecordsRange())).map(strip),
        ];
      }),
    );
    expect(dumps[0]).toHaveLength(6);
    expect(dumps[1]).toEqual(dumps[0]);
    expect(await storedDedup(replicas[0]!)).toEqual({ queue: 3, records: 3 });
    expect(replicas[0]!.store.dedupStatus()).toEqual({ recordCount: 3, floorIndex: 5, window: 3, expiredThroughMs: 0 });
  });

  it('keeps results across a reopen; replaying an index with its request id is a replay', async () => {
    const partition = await Partition.create(kind, { dedupWindow: 2 });
    const log: Array<{ command: Command; requestId: string }> = [
      { command: increment('n', 3n), requestId: 'x' },
      { command: increment('n', 3n), requestId: 'y' },
      { command: increment('n', 3n), requestId: 'z' }, // evicts x
    ];
    const results = [];
    for (const entry of log) results.push(await partition.apply(entry.command, entry.requestId));
    await partition.reopen(kind);
    expect(partition.store.dedupStatus()).toEqual({ recordCount: 2, floorIndex: 2, window: 2, expiredThroughMs: 0 });
    for (const [offset, entry] of log.entries()) {
      const replay = await partition.store.apply(entry.command, { index: offset + 1, nowMs: partition.nowMs, requestId: entry.requestId });
      expect(replay).toMatchObject({ replayed: true, duplicate: false });
    }
    expect(partition.store.dedupStatus().recordCount).toBe(2);
    const retry = await partition.apply(increment('n', 3n), 'y');
    expect(retry.duplicate).toBe(true);
    expect(answer(retry)).toEqual(answer(results[1]!));
    expect((await partition.apply(increment('n', 3n), 'x')).duplicate).toBe(false);
    expect(await partition.value('n')).toBe('12');
  });

  it('travels in a snapshot: the importing store recognises retries, and forgets its own', async () => {
    const source = await Partition.create(kind, { dedupWindow: 3 });
    const results = new Map<string, ApplyResult>();
    for (const requestId of ['a', 'b', 'c', 'd']) results.set(requestId, await source.apply(increment('n', 2n), requestId)); // a evicted
    await source.put('k', 'v');
    const chunks = await collectChunks(source.store);

    const target = await Partition.create(kind, { dedupWindow: 3, partitionId: 9 });
    await target.apply(increment('n'), 'mine');
    await target.store.importSnapshot(chunks);
    expect(target.store.dedupStatus().recordCount).toBe(3);
    expect(await storedDedup(target)).toEqual({ queue: 3, records: 3 });
    // The target exports the same snapshot, byte for byte.
    expect(await collectChunks(target.store)).toEqual(chunks);

    target.index = source.index;
    const retry = await target.apply(increment('n', 2n), 'c');
    expect(retry).toMatchObject({ duplicate: true, originalIndex: 3 });
    expect(answer(retry)).toEqual(answer(results.get('c')!));
    expect((await target.apply(increment('n', 2n), 'a')).duplicate).toBe(false);
    expect((await target.apply(increment('n', 2n), 'mine')).duplicate).toBe(false);
    expect(await target.value('n')).toBe('12');
    await target.reopen(kind);
    expect((await target.apply(increment('n', 2n), 'd')).duplicate).toBe(true);
  });

  it('negative control: with dedupDisabled a retry counts twice', async () => {
    const partition = await Partition.create(kind, { dedupDisabled: true });
    await partition.apply(increment('counter'), 'req-1');
    const retry = await partition.apply(increment('counter'), 'req-1');
    expect(retry).toMatchObject({ applied: true, duplicate: false, writes: [{ counter: 2n }] });
    expect(await partition.value('counter')).toBe('2');
    expect(partition.store.dedupStatus().recordCount).toBe(0);
  });
});

describe('MvccStore deduplication details (MemoryEngine)', () => {
  it('survives a power loss: lost applies lose their records with them, and the replay restores them', async () => {
    const partition = await Partition.create(memoryEngineKind);
    const engine = partition.engine as MemoryEngine;
    const log: Array<{ index: number; requestId: string }> = [];
    for (const requestId of ['p', 'q', 'r', 's']) {
      await partition.apply(increment('n'), requestId);
      log.push({ index: partition.index, requestId });
    }
    engine.crash({ keepUnsyncedBatches: 2 });
    const store = await MvccStore.open({ engine, prefix: partition.prefix });
    expect(store.appliedIndex).toBe(2);
    expect(store.dedupStatus().recordCount).toBe(2);
    for (const entry of log) {
      const result = await store.apply(increment('n'), { index: entry.index, nowMs: partition.nowMs, requestId: entry.requestId });
      expect(result).toMatchObject({ replayed: entry.index <= 2, duplicate: false });
    }
    expect(store.dedupStatus().recordCount).toBe(4);
    expect(await store.apply(increment('n'), { index: 5, nowMs: partition.nowMs, requestId: 'r' })).toMatchObject({
      duplicate: true,
      originalIndex: 3,
      writes: [{ counter: 3n }],
    });
    expect((await store.get('n', { nowMs: partition.nowMs })).value).toEqual(text('4'));
  });

  it('exports a consistent dedup state while applies evict, and deletes the evicted entries afterwards', async () => {
    const source = await Partition.create(memoryEngineKind, { dedupWindow: 2, limits: makeLimits({ snapshotChunkBytes: 1024 }) });
    for (let index = 0; index < 20; index++) await source.put(`k${index}`, 'x'.repeat(200));
    await source.apply(increment('n'), 'old');
    await source.apply(increment('n'), 'live');
    const chunks: Uint8Array[] = [];
    for await (const chunk of source.store.exportSnapshot()) {
      chunks.push(chunk);
      // Each of these evicts the oldest id, including the two the export is to carry.
      await source.apply(increment('n'), `during-${chunks.length}`);
    }
    expect(chunks.length).toBeGreaterThan(3);
    // Nothing evicted was deleted while the export ran.
    expect((await storedDedup(source)).queue).toBe(2 + chunks.length);
    expect(await source.store.compactStorage()).toMatchObject({ removedDedupEntries: chunks.length, deferred: false });
    expect(await storedDedup(source)).toEqual({ queue: 2, records: 2 });

    const target = await Partition.create(memoryEngineKind, { dedupWindow: 2, partitionId: 3 });
    await target.store.importSnapshot(chunks);
    target.index = 22;
    expect((await target.apply(increment('n'), 'old')).duplicate).toBe(true);
    expect((await target.apply(increment('n'), 'live')).duplicate).toBe(true);
    expect((await target.apply(increment('n'), 'during-1')).duplicate).toBe(false);
  });

  it('still reads a version 1 snapshot, and refuses dedup entries in one', async () => {
    // A version 1 header has no applied time (format version 3 added it): drop its last 8 bytes.
    const asVersion1 = (chunks: Uint8Array[]): Uint8Array[] =>
      chunks.map((chunk) => Uint8Array.of(1, ...chunk.subarray(1, chunk[1] === 1 ? chunk.length - 8 : chunk.length)));
    const plain = await Partition.create(memoryEngineKind);
    await plain.put('k', 'v');
    const target = await Partition.create(memoryEngineKind, { partitionId: 2 });
    await target.store.importSnapshot(asVersion1(await collectChunks(plain.store)));
    expect(await target.value('k')).toBe('v');

    await plain.apply(increment('n'), 'id');
    const withDedup = await collectChunks(plain.store);
    await expect(target.store.importSnapshot(asVersion1(withDedup))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(target.store.importSnapshot([withDedup[0]!, ...asVersion1(withDedup.slice(1))])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await target.store.importSnapshot(withDedup);
    target.index = plain.index;
    expect((await target.apply(increment('n'), 'id')).duplicate).toBe(true);
  });

  it('refuses snapshots with invalid dedup entries', async () => {
    const header = { appliedIndex: 10, revision: 5, compactedRevision: 0 };
    const entry = (requestId: string, revision = 1, createdBeforeMs = 0): Uint8Array =>
      encodeDedupEntry({ requestId, createdBeforeMs, result: { revision, applied: true, writes: [] } });
    const queueKey = (index: number): Uint8Array => Uint8Array.of(0x71, ...encodeUint64BE(index));
    const snapshot = (entries: Array<[Uint8Array, Uint8Array]>): Uint8Array[] => {
      const writer = new SnapshotEntriesWriter();
      for (const [key, value] of entries) writer.add(key, value);
      return [encodeSnapshotHeader(header), writer.finish(), encodeSnapshotTrailer(entries.length)];
    };
    const target = await Partition.create(memoryEngineKind);
    const bad: Array<Array<[Uint8Array, Uint8Array]>> = [
      [[queueKey(11), entry('a')]], // above the applied index
      [[queueKey(0), entry('a')]],
      [[Uint8Array.of(0x71, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), entry('a')]], // past the safe integers
      [[queueKey(3), entry('a', 6)]], // above the revision
      [[queueKey(3), entry('a')], [queueKey(4), entry('a')]], // an id twice
      [[queueKey(3), entry('a')], [queueKey(3), entry('b')]], // an index twice
      [[queueKey(4), entry('a')], [queueKey(3), entry('b')]], // out of index order
      [[queueKey(3), entry('a', 1, 20)], [queueKey(4), entry('b', 1, 10)]], // createdBeforeMs decreasing
      [[queueKey(3), Uint8Array.of(1, 2, 3)]],
      [[Uint8Array.of(0x72, 0x61), encodeUint64BE(3)]], // records are rebuilt, never sent
    ];
    for (const entries of bad) await expect(target.store.importSnapshot(snapshot(entries))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await target.store.importSnapshot(snapshot([[queueKey(3), entry('a')], [queueKey(7), entry('b')]]));
    expect(target.store.dedupStatus()).toMatchObject({ recordCount: 2 });
    target.index = 10;
    expect(await target.apply(increment('n'), 'b')).toMatchObject({ duplicate: true, originalIndex: 7, revision: 1 });
  });

  it('fails, and records the failure of, a request whose result is too large to record', async () => {
    const partition = await Partition.create(memoryEngineKind);
    const big = (fill: number): Uint8Array => new Uint8Array(900 * 1024).fill(fill);
    const keys = ['a', 'b', 'c'];
    await partition.applyOk({ type: 'batch', writes: keys.map((key) => ({ type: 'put' as const, key, value: big(1) })) });
    const overwrite: Command = { type: 'batch', writes: keys.map((key) => ({ type: 'put' as const, key, value: big(2), returnPrevious: true })) };
    const failed = await partition.apply(overwrite, 'big');
    expect(failed).toMatchObject({ applied: false, error: { code: 'RESOURCE_EXHAUSTED' }, writes: [], revision: 1 });
    expect(answer(await partition.apply(overwrite, 'big'))).toEqual(answer(failed));
    expect((await partition.get('a')).value![0]).toBe(1);
    // Without a request id nothing is recorded, so the size does not matter.
    expect((await partition.apply(overwrite)).applied).toBe(true);
  });
});
