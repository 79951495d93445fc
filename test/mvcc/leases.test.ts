/**
 * Leases in the MVCC state machine (lease-table.ts): grant, attach keys with a put, revoke deletes
 * every attached key in one entry (one revision, reason "lease" to watchers), a plain put or a
 * delete detaches a key, bad ids and TTLs are refused and change nothing, tenants are kept apart,
 * and leases survive a restart and travel in snapshots (format 4; a format 3 snapshot still installs).
 */
import { describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { toInternalKey } from '../../src/keys/tenant-keys.js';
import { encodeCommand, decodeCommand } from '../../src/mvcc/command-codec.js';
import type { Command } from '../../src/mvcc/commands.js';
import { LeaseTable, leaseKeysMax, leasesPerTenantPerPartitionMax } from '../../src/mvcc/lease-table.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import { decodeSnapshotChunk } from '../../src/mvcc/snapshot-format.js';
import { eventOf } from '../../src/watch/watcher.js';
import { engineKinds, Partition, text } from './harness.js';

async function chunksOf(partition: Partition): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of partition.store.exportSnapshot()) chunks.push(chunk);
  return chunks;
}

async function grant(partition: Partition, ttlMs = 10_000, key = 'svc/x'): Promise<number> {
  const result = await partition.applyOk({ type: 'leaseGrant', key, ttlMs });
  expect(result.leaseId).toBe(partition.index);
  return result.leaseId!;
}

describe.each(engineKinds)('leases on $name', (kind) => {
  it('revoke deletes every attached key in one entry, at one revision', async () => {
    const partition = await Partition.create(kind);
    const lease = await grant(partition);
    const revisionBefore = partition.store.revision;
    expect(revisionBefore).toBe(0); // a grant writes no version
    for (const key of ['svc/a', 'svc/b', 'svc/c']) await partition.put(key, 'up', { lease });
    await partition.put('svc/plain', 'stays');
    expect(partition.store.lease(lease)?.keys.size).toBe(3);

    const revoked = await partition.applyOk({ type: 'leaseRevoke', lease, expired: false });
    expect(revoked.revision).toBe(revisionBefore + 5);
    expect(revoked.writes.map((write) => [write.key, write.deleted])).toEqual([
      ['svc/a', true],
      ['svc/b', true],
      ['svc/c', true],
    ]);
    for (const key of ['svc/a', 'svc/b', 'svc/c']) expect(await partition.value(key)).toBeUndefined();
    expect(await partition.value('svc/plain')).toBe('stays');
    expect(partition.store.lease(lease)).toBeUndefined();
    // Revoking again, or putting to the ended lease: LEASE_NOT_FOUND, nothing changes.
    const again = await partition.apply({ type: 'leaseRevoke', lease, expired: true });
    expect(again.error?.code).toBe('LEASE_NOT_FOUND');
    const late = await partition.put('svc/a', 'back', { lease });
    expect(late.error?.code).toBe('LEASE_NOT_FOUND');
    expect(await partition.value('svc/a')).toBeUndefined();
    expect(partition.store.revision).toBe(revoked.revision);
  });

  it('watchers see one delete per key with reason "lease", all at the revocation revision', async () => {
    const partition = await Partition.create(kind);
    const seen: Array<{ revision: number; key: string; reason: string }> = [];
    partition.store.setCommitListener((revision, changes) => {
      for (const change of changes) {
        const event = eventOf({ ...change, revision }, false, (key) => key);
        if (event.type === 'delete') seen.push({ revision, key: event.key, reason: event.reason });
      }
    });
    const lease = await grant(partition);
    await partition.put('svc/a', '1', { lease });
    await partition.put('svc/b', '2', { lease });
    const revoked = await partition.applyOk({ type: 'leaseRevoke', lease, expired: true });
    expect(seen).toEqual([
      { revision: revoked.revision, key: 'svc/a', reason: 'lease' },
      { revision: revoked.revision, key: 'svc/b', reason: 'lease' },
    ]);
  });

  it('a plain put or a delete detaches a key; increment and extend keep it; a put moves it between leases', async () => {
    const partition = await Partition.create(kind);
    const first = await grant(partition);
    const second = await grant(partition);
    await partition.put('svc/plain', 'a', { lease: first });
    await partition.put('svc/plain', 'b'); // detached: survives the revocation
    await partition.put('svc/deleted', 'a', { lease: first });
    await partition.apply({ type: 'delete', key: 'svc/deleted' });
    await partition.put('svc/counter', '1', { lease: first });
    await partition.apply({ type: 'increment', key: 'svc/counter', delta: 1n });
    await partition.apply({ type: 'extend', key: 'svc/counter', ttlMs: 60_000 });
    await partition.put('svc/moved', 'a', { lease: first });
    await partition.put('svc/moved', 'b', { lease: second });
    expect([...(partition.store.lease(first)?.keys ?? [])]).toEqual(['svc/counter']);
    await partition.put('svc/deleted', 'new'); // re-created without a lease
    await partition.applyOk({ type: 'leaseRevoke', lease: first, expired: true });
    expect(await partition.value('svc/plain')).toBe('b');
    expect(await partition.value('svc/deleted')).toBe('new');
    expect(await partition.value('svc/counter')).toBeUndefined();
    expect(await partition.value('svc/moved')).toBe('b');
    await partition.applyOk({ type: 'leaseRevoke', lease: second, expired: false });
    expect(await partition.value('svc/moved')).toBeUndefined();
  });

  it('refuses bad ids and TTLs before the log, and unknown or foreign leases in apply, changing nothing', async () => {
    const partition = await Partition.create(kind);
    for (const ttlMs of [0, -5, 1.5, Number.NaN]) {
      expect(() => encodeCommand({ type: 'leaseGrant', key: 'svc/x', ttlMs })).toThrow(/ttlMs/);
    }
    for (const lease of [0, -1, 2.5, Number.MAX_SAFE_INTEGER + 2]) {
      expect(() => encodeCommand({ type: 'put', key: 'svc/x', value: text('v'), lease })).toThrow(/lease id/);
      expect(() => encodeCommand({ type: 'leaseRevoke', lease, expired: false })).toThrow(/lease id/);
    }
    const missing = await partition.put('svc/x', 'v', { lease: 99 });
    expect(missing.error?.code).toBe('LEASE_NOT_FOUND');
    expect(missing.revision).toBe(0);
    // A lease belongs to the tenant whose key granted it; another tenant cannot attach to it.
    const lease = await grant(partition, 10_000, toInternalKey('acme', 'svc/x'));
    const foreign = await partition.put(toInternalKey('other', 'svc/y'), 'v', { lease });
    expect(foreign.error?.code).toBe('LEASE_NOT_FOUND');
    const own = await partition.put(toInternalKey('acme', 'svc/y'), 'v', { lease });
    expect(own.error).toBeUndefined();
    expect(partition.store.lease(lease)?.tenant).toBe('acme');
  });

  it('a lease holds at most leaseKeysMax keys', async () => {
    const partition = await Partition.create(kind);
    const lease = await grant(partition);
    const writes = Array.from({ length: 128 }, (_, index) => index);
    expect(leaseKeysMax % 128).toBe(0);
    for (let batch = 0; batch * 128 < leaseKeysMax; batch++) {
      await partition.applyOk({ type: 'batch', writes: writes.map((index) => ({ type: 'put', key: `svc/k${batch}-${index}`, value: text('v'), lease })) });
    }
    const over = await partition.put('svc/one-more', 'v', { lease });
    expect(isAtollError(over.error, 'RESOURCE_EXHAUSTED')).toBe(true);
    expect(await partition.value('svc/one-more')).toBeUndefined();
    const revoked = await partition.applyOk({ type: 'leaseRevoke', lease, expired: true });
    expect(revoked.writes.filter((write) => write.deleted).length).toBe(leaseKeysMax);
  });

  it("a tenant holds at most its share of the partition's leases; other tenants grant on, and the count survives a restart and a snapshot", async () => {
    const partition = await Partition.create(kind);
    const evilKey = toInternalKey('evil', 'svc/x');
    const first = await grant(partition, 10_000, evilKey);
    for (let index = 1; index < leasesPerTenantPerPartitionMax; index++) await grant(partition, 10_000, evilKey);
    expect(partition.store.leaseCountsByTenant().get('evil')).toBe(leasesPerTenantPerPartitionMax);
    const refused = await partition.apply({ type: 'leaseGrant', key: evilKey, ttlMs: 10_000 });
    expect(refused.error?.code).toBe('QUOTA_EXCEEDED');
    expect(partition.store.allLeases().length).toBe(leasesPerTenantPerPartitionMax);
    // Another tenant's grant in the same partition goes on.
    const acme = await grant(partition, 10_000, toInternalKey('acme', 'svc/x'));
    expect(partition.store.lease(acme)?.tenant).toBe('acme');
    // The counts are rebuilt from the stored table: a reopened replica decides alike.
    await partition.reopen(kind);
    expect(Object.fromEntries(partition.store.leaseCountsByTenant())).toEqual({ evil: leasesPerTenantPerPartitionMax, acme: 1 });
    expect((await partition.apply({ type: 'leaseGrant', key: evilKey, ttlMs: 10_000 })).error?.code).toBe('QUOTA_EXCEEDED');
    // And so does a replica installed from a snapshot.
    const target = await Partition.create(kind, { partitionId: 9 });
    await target.store.importSnapshot(await chunksOf(partition));
    target.index = partition.index;
    expect(Object.fromEntries(target.store.leaseCountsByTenant())).toEqual({ evil: leasesPerTenantPerPartitionMax, acme: 1 });
    expect((await target.apply({ type: 'leaseGrant', key: evilKey, ttlMs: 10_000 })).error?.code).toBe('QUOTA_EXCEEDED');
    // A revocation frees a slot of the share.
    await partition.applyOk({ type: 'leaseRevoke', lease: first, expired: false });
    expect(partition.store.leaseCountsByTenant().get('evil')).toBe(leasesPerTenantPerPartitionMax - 1);
    await grant(partition, 10_000, evilKey);
  }, 60_000);

  it('leases survive a restart and travel in snapshots', async () => {
    const source = await Partition.create(kind);
    const lease = await grant(source, 5_000);
    await source.put('svc/a', '1', { lease });
    await source.put('svc/b', '2');
    await source.reopen(kind);
    expect([...(source.store.lease(lease)?.keys ?? [])]).toEqual(['svc/a']);
    const chunks = await chunksOf(source);
    expect(decodeSnapshotChunk(chunks[0]!).formatVersion).toBe(4);
    const target = await Partition.create(kind, { partitionId: 9 });
    await target.store.importSnapshot(chunks);
    target.index = source.index;
    expect(target.store.lease(lease)).toEqual(source.store.lease(lease));
    // The installed replica revokes the same keys at the same revision as the source.
    const fromSource = await source.applyOk({ type: 'leaseRevoke', lease, expired: true });
    const fromTarget = await target.applyOk({ type: 'leaseRevoke', lease, expired: true });
    expect(fromTarget.revision).toBe(fromSource.revision);
    expect(await target.value('svc/a')).toBeUndefined();
    expect(await target.value('svc/b')).toBe('2');
  });

  it('an export holds the leases as of its header, whatever applies meanwhile; the receiver replays the rest alike', async () => {
    const source = await Partition.create(kind);
    const kept = await grant(source);
    await source.put('svc/a', '1', { lease: kept });
    const doomed = await grant(source);
    await source.put('svc/b', '2', { lease: doomed });
    const exporting = source.store.exportSnapshot()[Symbol.asyncIterator]();
    const chunks: Uint8Array[] = [(await exporting.next()).value as Uint8Array];
    const headerIndex = source.index;
    // Entries after the header: a grant, a put attaching to it, a revocation.
    const after: Command[] = [
      { type: 'leaseGrant', key: 'svc/x', ttlMs: 1_000 },
      { type: 'put', key: 'svc/c', value: text('3'), lease: headerIndex + 1 },
      { type: 'leaseRevoke', lease: doomed, expired: true },
    ];
    const fromSource = [];
    for (const command of after) fromSource.push(await source.applyOk(command));
    for (let next = await exporting.next(); next.done !== true; next = await exporting.next()) chunks.push(next.value);
    const target = await Partition.create(kind, { partitionId: 9 });
    await target.store.importSnapshot(chunks);
    target.index = headerIndex;
    expect(target.store.allLeases().map((lease) => lease.id)).toEqual([kept, doomed]);
    for (const [index, command] of after.entries()) expect((await target.applyOk(command)).revision).toBe(fromSource[index]!.revision);
    expect(target.store.allLeases()).toEqual(source.store.allLeases());
    expect(await target.value('svc/b')).toBeUndefined();
    expect(await target.value('svc/c')).toBe('3');
  });

  it('a format 3 snapshot (no leases) still installs, with no leases; a malformed lease entry is refused', async () => {
    const source = await Partition.create(kind);
    await source.put('svc/b', '2');
    const chunks = (await chunksOf(source)).map((chunk) => Uint8Array.of(3, ...chunk.subarray(1)));
    const target = await Partition.create(kind, { partitionId: 9 });
    await target.store.importSnapshot(chunks);
    expect(target.store.allLeases()).toEqual([]);
    expect(await target.value('svc/b')).toBe('2');
    // A version 3 snapshot that carries a lease entry is malformed.
    await grant(source);
    const withLease = (await chunksOf(source)).map((chunk) => Uint8Array.of(3, ...chunk.subarray(1)));
    expect(() => target.store.checkSnapshot(withLease)).toThrow(/malformed|neither/);
  });

  it('the codec round-trips lease commands and a put with a lease', () => {
    for (const command of [
      { type: 'leaseGrant', key: 'svc/x', ttlMs: 1234 },
      { type: 'leaseRevoke', lease: 42, expired: true },
      { type: 'leaseRevoke', lease: 7, expired: false },
      { type: 'put', key: 'svc/x', value: text('v'), lease: 3, ttlMs: 10 },
    ] as const) {
      expect(decodeCommand(encodeCommand(command))).toEqual(command);
    }
  });
});

describe('LeaseTable.apply', () => {
  it('touches only the keys that changed: a key attached to a lease of many keys sets one map entry', () => {
    const layout = new MvccKeyLayout(new Uint8Array([0x42]));
    const table = new LeaseTable();
    table.apply(table.planGrant(layout, 7, 'acme', 10_000));
    const keys = Array.from({ length: 400 }, (_, index) => `svc/k${index}`);
    table.apply(table.planMoves(layout, keys.map((key) => ({ key, lease: 7 })))!);
    const leaseOfKey = (table as unknown as { leaseOfKey: Map<string, number> }).leaseOfKey;
    const calls = { set: 0, delete: 0 };
    const set = leaseOfKey.set.bind(leaseOfKey);
    const del = leaseOfKey.delete.bind(leaseOfKey);
    leaseOfKey.set = (key: string, value: number) => (calls.set++, set(key, value));
    leaseOfKey.delete = (key: string) => (calls.delete++, del(key));
    table.apply(table.planMoves(layout, [{ key: 'svc/new', lease: 7 }, { key: 'svc/k3', lease: undefined }])!);
    // The old apply deleted and set again every key of the lease: 400 deletes and 400 sets.
    expect(calls).toEqual({ set: 1, delete: 1 });
    expect(table.leaseOf('svc/new')).toBe(7);
    expect(table.leaseOf('svc/k3')).toBeUndefined();
    expect(table.leaseOf('svc/k4')).toBe(7);
    expect(table.get(7)?.keys.size).toBe(400);
    expect(table.countsByTenant().get('acme')).toBe(1);
    // A key moving between two leases in one change ends attached to the new one only.
    table.apply(table.planGrant(layout, 9, 'acme', 10_000));
    table.apply(table.planMoves(layout, [{ key: 'svc/k4', lease: 9 }])!);
    expect(table.leaseOf('svc/k4')).toBe(9);
    expect(table.get(7)?.keys.has('svc/k4')).toBe(false);
    // A revoke detaches every key of the lease.
    table.apply(table.planRevoke(layout, 7));
    expect(keys.filter((key) => table.leaseOf(key) !== undefined)).toEqual(['svc/k4']);
    expect(table.countsByTenant().get('acme')).toBe(1);
  });
});
