/**
 * The partition's replicated clock (issue 16, "Time"): every entry is applied at max(its proposed
 * time, the previous entry's time), the time is stored with the applied index and travels in
 * snapshots; transactions decide TTLs at their snapshot clock; SERIALIZABLE treats a read key that
 * expired between snapshot and commit as a conflict; `expire` entries delete expired keys.
 */
import { describe, expect, it } from 'vitest';
import type { TxnCommand } from '../../src/mvcc/commands.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import type { StorageEngine } from '../../src/storage/storage-engine.js';
import { engineKinds, memoryEngineKind, Partition, startMs, text } from './harness.js';

const S = startMs;

async function collectChunks(partition: Partition): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of partition.store.exportSnapshot()) chunks.push(chunk);
  return chunks;
}

/** Stored versions of one key (values and tombstones), read from the engine. */
async function storedVersions(engine: StorageEngine, prefix: Uint8Array, key: string): Promise<number> {
  let count = 0;
  for await (const _entry of engine.iterate(new MvccKeyLayout(prefix).versionsOfKey(key))) count++;
  return count;
}

/** A counter "5" that expires at S + 1000, and a later entry that moved the clock to S + 5000. */
async function expiredCounter(partition: Partition): Promise<void> {
  partition.nowMs = S;
  await partition.put('c', '5', { ttlMs: 1000 });
  partition.nowMs = S + 5000;
  await partition.put('other', 'x');
}

describe.each(engineKinds)('the partition clock on $name', (kind) => {
  it('never moves backwards: an entry proposed by a clock behind the last one cannot revive an expired key', async () => {
    const partition = await Partition.create(kind);
    await expiredCounter(partition);
    // A new leader whose clock is 5 s behind proposes an increment of the expired counter.
    partition.nowMs = S;
    const result = await partition.apply({ type: 'increment', key: 'c', delta: 1n });
    // The counter starts over (it was absent at the partition's time), with no expiry.
    expect(result.writes[0]?.counter).toBe(1n);
    expect(result.writes[0]?.current?.expiresAtMs).toBeUndefined();
    expect(partition.store.appliedTimeMs).toBe(S + 5000);
  });

  it('survives a restart and a snapshot install', async () => {
    const source = await Partition.create(kind);
    await expiredCounter(source);
    await source.reopen(kind);
    const target = await Partition.create(kind, { partitionId: 8 });
    await target.store.importSnapshot(await collectChunks(source));
    target.index = source.index;

    // Both replicas, after restart or install, apply a skewed-back entry the same way.
    for (const partition of [source, target]) {
      partition.nowMs = S;
      expect((await partition.apply({ type: 'increment', key: 'c', delta: 1n })).writes[0]?.counter).toBe(1n);
      expect(partition.store.appliedTimeMs).toBe(S + 5000);
    }
  });
});

describe('transactions decide TTLs at their snapshot clock', () => {
  const txn = (partition: Partition, fields: Partial<TxnCommand>): TxnCommand => ({
    type: 'txn',
    snapshotRevision: partition.store.revision,
    isolation: 'snapshot',
    readKeys: [],
    readPrefixes: [],
    writes: [],
    ...fields,
  });

  it('keepTtl (an increment in a transaction) across an expiry keeps the expiry: the window stays bounded', async () => {
    const partition = await Partition.create(memoryEngineKind);
    partition.nowMs = S;
    await partition.put('window', '5', { ttlMs: 1000 });
    // Begun at S + 500 (the counter is live, "5"), committed at S + 2000 (it expired at S + 1000).
    const command = txn(partition, { snapshotTimeMs: S + 500, writes: [{ type: 'put', key: 'window', value: text('6'), keepTtl: true }] });
    partition.nowMs = S + 2000;
    const result = await partition.applyOk(command);
    expect(result.writes[0]?.current).toMatchObject({ version: 2, expiresAtMs: S + 1000 });
    // Stored with the snapshot's expiry: expired now, and never a permanent counter.
    expect((await partition.get('window')).found).toBe(false);
    partition.nowMs = S + 10 ** 9;
    expect((await partition.get('window')).found).toBe(false);
  });

  it('an increment op and ttlMs count from the snapshot clock too', async () => {
    const partition = await Partition.create(memoryEngineKind);
    partition.nowMs = S;
    await partition.put('n', '1', { ttlMs: 1000 });
    const command = txn(partition, {
      snapshotTimeMs: S + 500,
      writes: [
        { type: 'increment', key: 'n', delta: 1n },
        { type: 'put', key: 'fresh', value: text('v'), ttlMs: 100 },
      ],
    });
    partition.nowMs = S + 2000;
    const result = await partition.applyOk(command);
    expect(result.writes[0]?.current).toMatchObject({ value: text('2'), expiresAtMs: S + 1000 });
    expect(result.writes[1]?.current?.expiresAtMs).toBe(S + 600);
  });

  it('SERIALIZABLE: a read key live at the snapshot that expired before the commit is a conflict', async () => {
    const partition = await Partition.create(memoryEngineKind);
    partition.nowMs = S;
    await partition.put('lease', 'me', { ttlMs: 1000 });
    const serializable = (snapshotTimeMs: number): TxnCommand =>
      txn(partition, { isolation: 'serializable', snapshotTimeMs, readKeys: ['lease'], writes: [{ type: 'put', key: 'work', value: text('done') }] });
    const revision = partition.store.revision;

    partition.nowMs = S + 2000;
    const conflicted = await partition.apply(serializable(S + 500));
    expect(conflicted.error?.code).toBe('TXN_CONFLICT');
    expect(conflicted.revision).toBe(revision);
    expect((await partition.get('work')).found).toBe(false);

    // Already expired at the snapshot (the transaction saw it absent): no conflict.
    expect((await partition.apply(serializable(S + 1500))).applied).toBe(true);
    // SNAPSHOT isolation does not check reads.
    const snapshotLevel = txn(partition, { snapshotTimeMs: S + 500, readKeys: [], writes: [{ type: 'put', key: 'work2', value: text('x') }] });
    expect((await partition.apply(snapshotLevel)).applied).toBe(true);
  });

  it('SERIALIZABLE: a key under a read prefix live at the snapshot that expired before the commit is a conflict', async () => {
    const partition = await Partition.create(memoryEngineKind);
    partition.nowMs = S;
    await partition.put('locks/a', 'me', { ttlMs: 1000 });
    await partition.put('locks/b', 'you');
    await partition.put('locks/a', 'me again', { ttlMs: 1000 }); // an older version below the snapshot's
    const revision = partition.store.revision;
    const serializable = (snapshotTimeMs: number): TxnCommand =>
      txn(partition, { isolation: 'serializable', snapshotTimeMs, readPrefixes: ['locks/'], writes: [{ type: 'put', key: 'work', value: text('done') }] });

    // Nothing was deleted: the expiry alone changed what the prefix holds.
    partition.nowMs = S + 2000;
    const conflicted = await partition.apply(serializable(S + 500));
    expect(conflicted.error?.code).toBe('TXN_CONFLICT');
    expect(conflicted.error?.details).toMatchObject({ keyPrefix: 'locks/', key: 'locks/a', expiresAtMs: S + 1000 });
    expect(partition.store.revision).toBe(revision);
    expect((await partition.get('work')).found).toBe(false);

    // Already expired at the snapshot (the read saw it absent): no conflict.
    expect((await partition.apply(serializable(S + 1500))).applied).toBe(true);

    // Still live at the commit: no conflict either.
    const fresh = await Partition.create(memoryEngineKind);
    fresh.nowMs = S;
    await fresh.put('locks/a', 'me', { ttlMs: 1000 });
    fresh.nowMs = S + 800;
    const live = txn(fresh, { isolation: 'serializable', snapshotTimeMs: S + 500, readPrefixes: ['locks/'], writes: [{ type: 'put', key: 'work', value: text('x') }] });
    expect((await fresh.apply(live)).applied).toBe(true);
  });
});

describe('expire entries', () => {
  it('delete exactly the named keys still expired at the entry time, and compaction then removes them', async () => {
    const partition = await Partition.create(memoryEngineKind);
    partition.nowMs = S;
    for (let index = 0; index < 10; index++) await partition.put(`t/${index}`, 'v', { ttlMs: 1000 });
    await partition.put('t/long', 'v', { ttlMs: 60_000 });
    await partition.put('t/none', 'v');
    partition.nowMs = S + 2000;
    const expired = partition.store.expiredKeys(partition.nowMs, 100);
    expect(expired.sort()).toEqual([...Array(10).keys()].map((index) => `t/${index}`).sort());
    expect(partition.store.expiredKeys(partition.nowMs, 3)).toHaveLength(3);
    // Rewritten after the leader listed it: left alone.
    await partition.put('t/0', 'again');
    const result = await partition.applyOk({ type: 'expire', keys: [...expired, 't/long', 't/none', 't/missing'] });
    expect(result.writes.filter((write) => write.deleted === true)).toHaveLength(9);
    expect(await partition.value('t/0')).toBe('again');
    expect(await partition.value('t/long')).toBe('v');
    expect(partition.store.expiredKeys(partition.nowMs, 100)).toEqual([]);
    // A second expire entry for the same keys changes nothing and creates no revision.
    const revision = partition.store.revision;
    expect((await partition.applyOk({ type: 'expire', keys: ['t/1', 't/2'] })).revision).toBe(revision);

    await partition.put('after', 'x');
    await partition.applyOk({ type: 'compact', belowRevision: partition.store.revision });
    for (let index = 1; index < 10; index++) expect(await storedVersions(partition.engine, partition.prefix, `t/${index}`)).toBe(0);
    expect(await storedVersions(partition.engine, partition.prefix, 't/long')).toBe(1);
  });

  it('replicas applying the same entries store the same bytes, whatever their local history', async () => {
    const replicas = [await Partition.create(memoryEngineKind), await Partition.create(memoryEngineKind)];
    // One replica restarts in the middle; both get the same entries with a clock that goes back and forth.
    const entries: Array<[number, Parameters<Partition['apply']>[0]]> = [
      [S, { type: 'put', key: 'a', value: text('1'), ttlMs: 1000 }],
      [S + 3000, { type: 'put', key: 'b', value: text('2'), ttlMs: 1000 }],
      [S + 100, { type: 'increment', key: 'a', delta: 1n }],
      [S + 9000, { type: 'expire', keys: ['a', 'b'] }],
      [S, { type: 'txn', snapshotRevision: 3, snapshotTimeMs: S + 500, isolation: 'serializable', readKeys: ['a'], readPrefixes: [], writes: [{ type: 'put', key: 'c', value: text('3'), keepTtl: true }] }],
    ];
    for (const [position, [nowMs, command]] of entries.entries()) {
      for (const replica of replicas) {
        replica.nowMs = nowMs;
        await replica.apply(command);
      }
      if (position === 2) await replicas[1]!.reopen(memoryEngineKind);
    }
    const dump = async (partition: Partition): Promise<string[]> => {
      const all: string[] = [];
      for await (const [key, value] of partition.engine.iterate({})) all.push(`${Buffer.from(key).toString('hex')}=${Buffer.from(value).toString('hex')}`);
      return all;
    };
    expect(await dump(replicas[1]!)).toEqual(await dump(replicas[0]!));
    expect(replicas[1]!.store.appliedTimeMs).toBe(S + 9000);
  });

  it('the expiry index is rebuilt at open', async () => {
    const partition = await Partition.create(memoryEngineKind);
    partition.nowMs = S;
    await partition.put('a', 'v', { ttlMs: 1000 });
    await partition.put('b', 'v', { ttlMs: 5000 });
    await partition.reopen(memoryEngineKind);
    expect(partition.store.expiredKeys(S + 2000, 10)).toEqual(['a']);
    expect(partition.store.expiredKeys(S + 9000, 10)).toEqual(['a', 'b']);
  });
});
