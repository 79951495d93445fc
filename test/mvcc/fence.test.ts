/**
 * Fenced writes in the MVCC state machine (fence.ts): a put carrying a fencing token older than
 * the token that last wrote the live key fails with FENCED and changes nothing, in a plain put,
 * a batch and a transaction alike; the fence survives a restart, rides along unfenced puts,
 * increments and extends, and ends with the key (delete). Bad tokens are INVALID_ARGUMENT.
 */
import { describe, expect, it } from 'vitest';
import { decodeCommand, encodeCommand } from '../../src/mvcc/command-codec.js';
import { decodeVersionRecord, encodeVersionRecord } from '../../src/mvcc/version-record.js';
import { engineKinds, Partition } from './harness.js';

describe.each(engineKinds)('fenced writes on $name', (kind) => {
  it('a stale token is refused after a newer one wrote; equal and newer tokens pass', async () => {
    const partition = await Partition.create(kind);
    const first = await partition.applyOk({ type: 'put', key: 'data/x', value: new TextEncoder().encode('a'), ifFence: 5 });
    expect(first.writes[0]?.current?.fence).toBe(5);
    await partition.applyOk({ type: 'put', key: 'data/x', value: new TextEncoder().encode('b'), ifFence: 5 });
    await partition.applyOk({ type: 'put', key: 'data/x', value: new TextEncoder().encode('c'), ifFence: 9 });
    const revision = partition.store.revision;
    // The invariant: once token 9 wrote the live key, token 5 can never write it again.
    const stale = await partition.put('data/x', 'stale', { ifFence: 5 });
    expect(stale.applied).toBe(false);
    expect(stale.error?.code).toBe('FENCED');
    expect(stale.error?.details).toMatchObject({ key: 'data/x', token: 5, fence: 9 });
    expect(await partition.value('data/x')).toBe('c');
    expect(partition.store.revision).toBe(revision);
    // An unfenced put, an increment and an extend keep the fence; so does a restart.
    await partition.put('data/x', '1');
    await partition.applyOk({ type: 'increment', key: 'data/x', delta: 1n });
    const extended = await partition.applyOk({ type: 'extend', key: 'data/x', ttlMs: 60_000 });
    expect(extended.writes[0]?.current?.fence).toBe(9);
    await partition.reopen(kind);
    expect((await partition.put('data/x', 'stale', { ifFence: 8 })).error?.code).toBe('FENCED');
    // A delete ends the key and its fence.
    await partition.applyOk({ type: 'delete', key: 'data/x' });
    await partition.applyOk({ type: 'put', key: 'data/x', value: new TextEncoder().encode('new'), ifFence: 2 });
  });

  it('a FENCED write fails its whole batch and transaction', async () => {
    const partition = await Partition.create(kind);
    await partition.applyOk({ type: 'put', key: 'data/x', value: new TextEncoder().encode('a'), ifFence: 7 });
    const revision = partition.store.revision;
    const put = (key: string, ifFence?: number) => ({ type: 'put' as const, key, value: new TextEncoder().encode('v'), ...(ifFence !== undefined && { ifFence }) });
    const batch = await partition.apply({ type: 'batch', writes: [put('data/y'), put('data/x', 3)] });
    expect(batch.error?.code).toBe('FENCED');
    const txn = await partition.apply({ type: 'txn', snapshotRevision: revision, isolation: 'snapshot', readKeys: [], readPrefixes: [], writes: [put('data/z'), put('data/x', 6)] });
    expect(txn.error?.code).toBe('FENCED');
    expect(await partition.value('data/y')).toBeUndefined();
    expect(await partition.value('data/z')).toBeUndefined();
    expect(partition.store.revision).toBe(revision);
  });

  it('refuses tokens that are not positive integers, changing nothing', async () => {
    const partition = await Partition.create(kind);
    for (const ifFence of [0, -1, 1.5, Number.NaN]) {
      const result = await partition.put('data/x', 'v', { ifFence });
      expect(result.error?.code).toBe('INVALID_ARGUMENT');
    }
    expect(partition.store.revision).toBe(0);
  });
});

describe('fence encoding', () => {
  it('round-trips in the log command and in the version record', () => {
    const command = { type: 'put' as const, key: 'data/x', value: new Uint8Array([1]), lease: 4, ifFence: 2 ** 40 };
    expect(decodeCommand(encodeCommand(command))).toEqual(command);
    const stored = { kind: 'value' as const, createRevision: 3, version: 2, expiresAtMs: 99, fence: 12, value: new Uint8Array([7, 8]) };
    expect(decodeVersionRecord(encodeVersionRecord(stored))).toEqual(stored);
    const plain = { kind: 'value' as const, createRevision: 3, version: 2, value: new Uint8Array([7]) };
    expect(decodeVersionRecord(encodeVersionRecord(plain))).toEqual(plain);
  });
});
