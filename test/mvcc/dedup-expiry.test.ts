/**
 * Exactly-once past the dedup window (issue 16): a resend of a timestamped request id whose result
 * the partition evicted fails with REQUEST_ID_EXPIRED and changes nothing; it never applies a
 * second time. The expiry mark is replicated state: every replica decides alike, and it survives
 * a restart and a snapshot.
 */
import { describe, expect, it } from 'vitest';
import type { ApplyResult, Command, IncrementOp, TxnCommand } from '../../src/mvcc/commands.js';
import { decodeDedupEntry, encodeDedupEntry } from '../../src/mvcc/dedup-record.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import type { MvccStore } from '../../src/mvcc/mvcc-store.js';
import {
  formatTimestampedRequestId,
  requestIdCreatedAtMs,
  requestIdMaxAheadMs,
  timestampedRequestIdHead,
} from '../../src/mvcc/request-id.js';
import { bytesToHex } from '../../src/storage/bytes.js';
import { ByteWriter } from '../../src/storage/byte-codec.js';
import { engineKinds, memoryEngineKind, Partition, startMs, text } from './harness.js';

const increment = (key: string, delta = 1n): IncrementOp => ({ type: 'increment', key, delta });
/** A timestamped id created `offsetMs` after the harness's start time. */
const tid = (offsetMs: number, nonce: string): string => formatTimestampedRequestId(startMs + offsetMs, nonce);

async function collectChunks(store: MvccStore): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of store.exportSnapshot()) chunks.push(chunk);
  return chunks;
}

/** The dedup queue and records, relative to the partition prefix, to compare replicas byte for byte. */
async function dedupBytes(partition: Partition): Promise<string[]> {
  const layout = new MvccKeyLayout(partition.prefix);
  const entries: string[] = [];
  for (const range of [layout.dedupQueueRange(0), layout.allDedupRecordsRange()]) {
    for await (const [key, value] of partition.engine.iterate(range)) {
      entries.push(`${bytesToHex(key).slice(bytesToHex(partition.prefix).length)}=${bytesToHex(value)}`);
    }
  }
  return entries;
}

/** A transfer of `amount` from a to b as a transaction at the current revision. */
function transfer(partition: Partition, amount: number, balances: { a: number; b: number }): TxnCommand {
  return {
    type: 'txn',
    snapshotRevision: partition.store.revision,
    isolation: 'snapshot',
    readKeys: ['bank/a', 'bank/b'],
    readPrefixes: [],
    writes: [
      { type: 'put', key: 'bank/a', value: text(String(balances.a - amount)) },
      { type: 'put', key: 'bank/b', value: text(String(balances.b + amount)) },
    ],
  };
}

describe('request id forms', () => {
  it('parses the creation time of timestamped ids, plain or tenant-scoped; anything else is plain', () => {
    expect(requestIdCreatedAtMs('t1.1764600000000.8f14e45f-ceea-467f-a0e6-2a8e2c6e4c5e')).toBe(1764600000000);
    expect(requestIdCreatedAtMs('\u0000t1.1764600000000.Zm9vYmFy')).toBe(1764600000000);
    expect(requestIdCreatedAtMs('t1.1.x')).toBe(1);
    expect(requestIdCreatedAtMs(`t1.${'9'.repeat(15)}.x`)).toBe(999_999_999_999_999);
    for (const plain of [
      '8f14e45f-ceea-467f-a0e6-2a8e2c6e4c5e',
      'transfer-42',
      't1.',
      't1.123',
      't1.123.',
      't1..x',
      't1.0.x',
      't1.0123.x',
      't1.12a.x',
      `t1.${'9'.repeat(16)}.x`,
      't2.123.x',
      'T1.123.x',
      '\u0000Zm9vYmFy',
      '\u0000\u0000t1.5.x',
    ]) {
      expect(requestIdCreatedAtMs(plain), plain).toBeUndefined();
    }
    expect(timestampedRequestIdHead('t1.42.abc')).toBe('t1.42.');
    expect(timestampedRequestIdHead('abc')).toBeUndefined();
    expect(() => formatTimestampedRequestId(0, 'x')).toThrow(RangeError);
    expect(() => formatTimestampedRequestId(5, '')).toThrow(RangeError);
  });

  it('still decodes format version 1 dedup entries (no createdBeforeMs: 0)', () => {
    const v1 = new ByteWriter().uint8(1).text('old-id').uint64(4).uint8(1).uint32(0).finish();
    expect(decodeDedupEntry(v1)).toMatchObject({ requestId: 'old-id', createdBeforeMs: 0, result: { revision: 4, applied: true, writes: [] } });
    const v2 = encodeDedupEntry({ requestId: 'new-id', createdBeforeMs: 77, result: { revision: 4, applied: true, writes: [] } });
    expect(v2[0]).toBe(2);
    expect(decodeDedupEntry(v2).createdBeforeMs).toBe(77);
  });
});

describe.each(engineKinds)('REQUEST_ID_EXPIRED on $name', (kind) => {
  it('refuses a resend of an evicted timestamped id, changing nothing, identically on every replica', async () => {
    const replicas = [await Partition.create(kind, { dedupWindow: 2 }), await Partition.create(kind, { dedupWindow: 2, partitionId: 8 })];
    const log: Array<[Command, string | undefined]> = [
      [increment('n', 5n), tid(10, 'a')],
      [increment('n', 5n), tid(30, 'b')],
      [increment('n', 5n), tid(20, 'c')], // evicts a: the mark becomes 10
      [increment('n', 5n), tid(10, 'a')], // expired
      [increment('n', 5n), tid(40, 'd')], // evicts b: the mark becomes 30
      [increment('n', 5n), tid(20, 'c')], // still in the window: a duplicate, though created before the mark
      [increment('n', 5n), tid(25, 'e')], // fresh, but created before the mark (a client clock behind): expired
      [increment('n', 5n), tid(30, 'b')], // expired
      [increment('n', 5n), 'plain'], // evicts c
      [increment('n', 5n), tid(31, 'f')], // fresh and newer than the mark: applies, evicts d (40)
    ];
    const outcomes: unknown[][] = [[], []];
    for (const [replica, partition] of replicas.entries()) {
      for (const [command, requestId] of log) {
        const before = { revision: partition.store.revision, status: partition.store.dedupStatus(), value: await partition.value('n') };
        const result = await partition.apply(command, requestId);
        outcomes[replica]!.push({ duplicate: result.duplicate, error: result.error?.code, counter: result.writes[0]?.counter });
        if (result.error !== undefined) {
          // Refused: nothing written, nothing recorded, only the applied index moved.
          expect(result).toMatchObject({ applied: false, duplicate: false, writes: [] });
          expect(partition.store.revision).toBe(before.revision);
          expect(partition.store.dedupStatus()).toEqual(before.status);
          expect(await partition.value('n')).toBe(before.value);
          expect(partition.store.appliedIndex).toBe(partition.index);
        }
      }
    }
    expect(outcomes[0]).toEqual([
      { duplicate: false, error: undefined, counter: 5n },
      { duplicate: false, error: undefined, counter: 10n },
      { duplicate: false, error: undefined, counter: 15n },
      { duplicate: false, error: 'REQUEST_ID_EXPIRED', counter: undefined },
      { duplicate: false, error: undefined, counter: 20n },
      { duplicate: true, error: undefined, counter: 15n },
      { duplicate: false, error: 'REQUEST_ID_EXPIRED', counter: undefined },
      { duplicate: false, error: 'REQUEST_ID_EXPIRED', counter: undefined },
      { duplicate: false, error: undefined, counter: 25n },
      { duplicate: false, error: undefined, counter: 30n },
    ]);
    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(await replicas[0]!.value('n')).toBe('30');
    // c (created at 20) left the window after b (30) and left the mark at 30; d then raised it to 40.
    expect(replicas[0]!.store.dedupStatus()).toMatchObject({ recordCount: 2, expiredThroughMs: startMs + 40 });
    expect(replicas[1]!.store.dedupStatus()).toEqual(replicas[0]!.store.dedupStatus());
    expect(await dedupBytes(replicas[1]!)).toEqual(await dedupBytes(replicas[0]!));
  });

  it('a transfer resent after its id left the window does not happen twice', async () => {
    const partition = await Partition.create(kind, { dedupWindow: 3 });
    await partition.put('bank/a', '100');
    await partition.put('bank/b', '0');
    const id = tid(0, 'transfer-1');
    const first = await partition.apply(transfer(partition, 30, { a: 100, b: 0 }), id);
    expect(first).toMatchObject({ applied: true, duplicate: false });
    for (let other = 0; other < 3; other++) await partition.apply(increment('ops'), tid(1 + other, `other-${other}`));
    // The resend carries the same transfer, as a client resends it when the first answer was lost.
    const resend = await partition.apply({ ...transfer(partition, 30, { a: 100, b: 0 }), snapshotRevision: first.revision - 1 }, id);
    expect(resend.error?.code).toBe('REQUEST_ID_EXPIRED');
    expect(resend.error?.details).toMatchObject({ createdAtMs: startMs, expiredThroughMs: startMs });
    expect(await partition.value('bank/a')).toBe('70');
    expect(await partition.value('bank/b')).toBe('30');
  });

  it('keeps the mark across a restart and in a snapshot', async () => {
    const source = await Partition.create(kind, { dedupWindow: 3 });
    const results = new Map<string, ApplyResult>();
    const ids = [tid(50, 'a'), tid(40, 'b'), tid(60, 'c'), tid(55, 'd'), tid(65, 'e')]; // a and b evicted: mark 50
    for (const id of ids) results.set(id, await source.apply(increment('n', 2n), id));
    expect(source.store.dedupStatus()).toMatchObject({ recordCount: 3, expiredThroughMs: startMs + 50 });

    await source.reopen(kind);
    expect(source.store.dedupStatus()).toMatchObject({ recordCount: 3, expiredThroughMs: startMs + 50 });
    expect((await source.apply(increment('n', 2n), ids[1]!)).error?.code).toBe('REQUEST_ID_EXPIRED');
    expect((await source.apply(increment('n', 2n), ids[0]!)).error?.code).toBe('REQUEST_ID_EXPIRED');
    const chunks = await collectChunks(source.store);

    // A replica that never saw these entries installs the snapshot, then restarts.
    const target = await Partition.create(kind, { dedupWindow: 3, partitionId: 9 });
    await target.apply(increment('n'), tid(5, 'mine'));
    await target.store.importSnapshot(chunks);
    // (An import starts its queue at floor 0: the exporter sent only live entries.)
    expect(target.store.dedupStatus()).toMatchObject({ recordCount: 3, floorIndex: 0, expiredThroughMs: startMs + 50 });
    for (const restarted of [false, true]) {
      if (restarted) await target.reopen(kind);
      target.index = source.index;
      source.index = target.index;
      for (const partition of [source, target]) {
        expect((await partition.apply(increment('n', 2n), ids[0]!)).error?.code).toBe('REQUEST_ID_EXPIRED');
        expect((await partition.apply(increment('n', 2n), tid(45, 'behind'))).error?.code).toBe('REQUEST_ID_EXPIRED');
        const retry = await partition.apply(increment('n', 2n), ids[3]!);
        expect(retry).toMatchObject({ duplicate: true, writes: [{ counter: 8n }] });
      }
      expect(await target.value('n')).toBe('10');
      // The source still holds b's evicted entry until its next removal; compare the live ones.
      await source.store.compactStorage();
      expect(await dedupBytes(target)).toEqual(await dedupBytes(source));
    }
    // The next eviction moves the mark alike on both: c (60) leaves the window.
    for (const partition of [source, target]) {
      partition.index = Math.max(source.index, target.index);
      await partition.apply(increment('n', 2n), tid(70, 'f'));
    }
    expect(target.store.dedupStatus()).toMatchObject({ recordCount: 3, expiredThroughMs: startMs + 60 });
    expect(source.store.dedupStatus()).toEqual(target.store.dedupStatus());
  });
});

describe('REQUEST_ID_EXPIRED details (MemoryEngine)', () => {
  it('refuses an id created too far ahead of the entry time, recording nothing', async () => {
    const partition = await Partition.create(memoryEngineKind, { dedupWindow: 2 });
    const ahead = tid(requestIdMaxAheadMs + 1, 'ahead');
    const refused = await partition.apply(increment('n'), ahead);
    expect(refused.error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { maxAheadMs: requestIdMaxAheadMs } });
    expect(partition.store.dedupStatus()).toMatchObject({ recordCount: 0, expiredThroughMs: 0 });
    expect(await partition.value('n')).toBeUndefined();
    // Just within the bound it applies once.
    const within = tid(requestIdMaxAheadMs, 'within');
    expect((await partition.apply(increment('n'), within)).applied).toBe(true);
    expect((await partition.apply(increment('n'), within)).duplicate).toBe(true);
    expect(await partition.value('n')).toBe('1');
  });

  it('plain ids keep the old rule: deduplicated in the window, applied again after it', async () => {
    const partition = await Partition.create(memoryEngineKind, { dedupWindow: 1 });
    await partition.apply(increment('n'), 'plain-1');
    await partition.apply(increment('n'), tid(100, 'x')); // evicts plain-1; the mark stays 0
    expect(partition.store.dedupStatus().expiredThroughMs).toBe(0);
    expect((await partition.apply(increment('n'), 'plain-1')).error).toBeUndefined(); // evicts x: mark 100
    expect(await partition.value('n')).toBe('3');
    expect(partition.store.dedupStatus().expiredThroughMs).toBe(startMs + 100);
    expect((await partition.apply(increment('n'), tid(100, 'x'))).error?.code).toBe('REQUEST_ID_EXPIRED');
  });

  it('a timestamped id that lost a conflict is not recorded, and expires like any other', async () => {
    const partition = await Partition.create(memoryEngineKind, { dedupWindow: 1 });
    await partition.put('bank/a', '10');
    await partition.put('bank/b', '0');
    const stale = transfer(partition, 5, { a: 10, b: 0 });
    await partition.put('bank/a', '11');
    const id = tid(5, 'txn');
    expect((await partition.apply(stale, id)).error?.code).toBe('TXN_CONFLICT');
    await partition.apply(increment('n'), tid(6, 'y'));
    await partition.apply(increment('n'), tid(7, 'z')); // evicts y: mark 6
    const retried = await partition.apply(transfer(partition, 5, { a: 11, b: 0 }), id);
    expect(retried.error?.code).toBe('REQUEST_ID_EXPIRED');
    expect(await partition.value('bank/a')).toBe('11');
  });
});
