/** Batches and transactions: all-or-nothing at one revision, first committer wins. */
import { describe, expect, it } from 'vitest';
import type { TxnCommand, WriteOp } from '../../src/mvcc/commands.js';
import { engineKinds, Partition, text } from './harness.js';

const put = (key: string, value: string, extra: Partial<Extract<WriteOp, { type: 'put' }>> = {}): WriteOp => ({
  type: 'put',
  key,
  value: text(value),
  ...extra,
});

const txn = (snapshotRevision: number, writes: WriteOp[], extra: Partial<TxnCommand> = {}): TxnCommand => ({
  type: 'txn',
  snapshotRevision,
  isolation: 'snapshot',
  readKeys: [],
  readPrefixes: [],
  writes,
  ...extra,
});

describe.each(engineKinds)('MvccStore batches and transactions on $name', (kind) => {
  it('applies a batch at one revision', async () => {
    const partition = await Partition.create(kind);
    await partition.put('c', 'old');
    const result = await partition.applyOk({
      type: 'batch',
      writes: [put('a', '1'), put('b', '2', { ttlMs: 100 }), { type: 'delete', key: 'c' }, { type: 'increment', key: 'n', delta: 3n }],
    });
    expect(result.revision).toBe(2);
    expect(result.writes.map((write) => write.current?.modRevision)).toEqual([2, 2, undefined, 2]);
    expect(await partition.get('a')).toMatchObject({ modRevision: 2, createRevision: 2 });
    expect((await partition.get('c')).found).toBe(false);
    expect(await partition.value('n')).toBe('3');
  });

  it('applies nothing when one condition fails', async () => {
    const partition = await Partition.create(kind);
    await partition.put('taken', 'x');
    await partition.put('other', 'o');
    const result = await partition.apply({ type: 'batch', writes: [put('a', '1'), put('taken', 'y', { ifAbsent: true }), { type: 'delete', key: 'other' }] });
    expect(result).toMatchObject({ applied: false, revision: 2 });
    expect(result.writes.map((write) => write.conditionHeld)).toEqual([true, false, true]);
    expect(result.writes.every((write) => write.current === undefined)).toBe(true);
    expect(result.writes[2]).toMatchObject({ deleted: false });
    expect((await partition.get('a')).found).toBe(false);
    expect(await partition.value('taken')).toBe('x');
    expect(await partition.value('other')).toBe('o');
  });

  it('applies nothing when an increment fails', async () => {
    const partition = await Partition.create(kind);
    await partition.put('text', 'abc');
    const result = await partition.apply({ type: 'batch', writes: [put('a', '1'), { type: 'increment', key: 'text', delta: 1n }] });
    expect(result.error?.code).toBe('NOT_INTEGER');
    expect((await partition.get('a')).found).toBe(false);
  });

  it('refuses a batch that writes one key twice, or is empty or too long', async () => {
    const partition = await Partition.create(kind);
    expect((await partition.apply({ type: 'batch', writes: [put('a', '1'), put('a', '2')] })).error?.code).toBe('INVALID_ARGUMENT');
    expect((await partition.apply({ type: 'batch', writes: [] })).error?.code).toBe('INVALID_ARGUMENT');
    const many = Array.from({ length: 129 }, (_, index) => put(`k${index}`, 'v'));
    expect((await partition.apply({ type: 'batch', writes: many })).error?.code).toBe('RESOURCE_EXHAUSTED');
    expect(partition.store.revision).toBe(0);
  });

  it('commits a transaction whose written keys did not change since its snapshot', async () => {
    const partition = await Partition.create(kind);
    await partition.put('account/a', '100');
    await partition.put('account/b', '0');
    const snapshot = partition.store.revision;
    await partition.put('account/unrelated', 'x');
    const result = await partition.applyOk(txn(snapshot, [put('account/a', '90'), put('account/b', '10')]));
    expect(result.revision).toBe(4);
  });

  it('aborts the second of two transactions on the same key: first committer wins', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', '0');
    const snapshot = partition.store.revision;
    expect((await partition.apply(txn(snapshot, [put('k', 'first')]))).applied).toBe(true);
    const second = await partition.apply(txn(snapshot, [put('k', 'second')]));
    expect(second.error).toMatchObject({ code: 'TXN_CONFLICT', details: { key: 'k', snapshotRevision: snapshot } });
    expect(second.error?.grpcStatus).toBe('ABORTED');
    expect(await partition.value('k')).toBe('first');
  });

  it('counts a delete after the snapshot as a conflict', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', 'v');
    const snapshot = partition.store.revision;
    await partition.apply({ type: 'delete', key: 'k' });
    expect((await partition.apply(txn(snapshot, [put('k', 'w')]))).error?.code).toBe('TXN_CONFLICT');
  });

  it('checks read keys and read prefixes only under serializable isolation', async () => {
    const partition = await Partition.create(kind);
    await partition.put('services/auth', 'a');
    await partition.put('config', 'x');
    const snapshot = partition.store.revision;
    await partition.put('config', 'y');
    await partition.put('services/users', 'new');
    const readsConfig = { readKeys: ['config'] };
    expect((await partition.apply(txn(snapshot, [put('out', '1')], readsConfig))).applied).toBe(true);
    const serializable = await partition.apply(txn(snapshot, [put('out2', '1')], { ...readsConfig, isolation: 'serializable' }));
    expect(serializable.error).toMatchObject({ code: 'TXN_CONFLICT', details: { key: 'config' } });
    const prefixRead = await partition.apply(txn(snapshot, [put('out3', '1')], { readPrefixes: ['services/'], isolation: 'serializable' }));
    expect(prefixRead.error).toMatchObject({ code: 'TXN_CONFLICT', details: { keyPrefix: 'services/', key: 'services/users' } });
    const fresh = partition.store.revision;
    expect((await partition.apply(txn(fresh, [put('out4', '1')], { readPrefixes: ['services/'], readKeys: ['config'], isolation: 'serializable' }))).applied).toBe(true);
  });

  it('refuses a snapshot below the compaction floor or above the revision', async () => {
    const partition = await Partition.create(kind);
    await partition.put('k', '1');
    await partition.put('k', '2');
    await partition.applyOk({ type: 'compact', belowRevision: 2 });
    expect((await partition.apply(txn(1, [put('x', '1')]))).error?.code).toBe('COMPACTED');
    expect((await partition.apply(txn(3, [put('x', '1')]))).error?.code).toBe('FUTURE_REVISION');
    expect((await partition.apply(txn(2, [put('x', '1')]))).applied).toBe(true);
  });

  it('honours conditions inside a transaction', async () => {
    const partition = await Partition.create(kind);
    await partition.put('services/auth', 'a');
    const snapshot = partition.store.revision;
    const result = await partition.apply(txn(snapshot, [put('services/users', 'u', { ifAbsent: true }), put('services/auth', 'b', { ifAbsent: true })]));
    expect(result.applied).toBe(false);
    expect((await partition.get('services/users')).found).toBe(false);
  });
});
