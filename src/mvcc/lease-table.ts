/**
 * A partition's leases: replicated state next to the versions. A lease lives in exactly one
 * partition; its local id is the Raft index of the entry that granted it (unique in the
 * partition, the same on every replica). It records the tenant that granted it, its TTL and the
 * keys attached to it. Expiry is not stored: the partition's leader decides it (node/service/lease-keeper.ts)
 * and proposes a `leaseRevoke` entry, which deletes every attached key in that one entry.
 *
 * Stored under the partition prefix P (key-layout.ts):
 *
 *   P 'l' uint64BE(id)   record = version uint8 (1), ttlMs uint64, tenant text,
 *                                  count uint32, count × key text
 *
 * Invariants (checked by assertions in `apply`):
 * - every key is attached to at most one lease (leaseOfKey is the inverse of the records' keys);
 * - a lease has at most leaseKeysMax keys, a partition at most leasesPerPartitionMax leases, so a
 *   revocation writes a bounded number of tombstones and the table's memory is bounded;
 * - countByTenant holds, per tenant, the number of its leases in the table (no zero entries).
 *
 * Fairness between tenants (issue 33): a grant is refused once its tenant holds
 * leasesPerTenantPerPartitionMax leases here (a quarter of the table), so one tenant can never
 * take the slots another tenant's grants need while the partition has room. The decision reads
 * the replicated table only, so every replica decides a grant alike. A table loaded from an older
 * build may hold more of one tenant's leases than the share: they stay; only new grants are refused.
 *
 * The store plans changes (plan*) while it decides an entry and applies them (apply) only after
 * the entry's batch, which carries the records' storage writes, is durable.
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';
import { ByteReader, ByteWriter } from '../storage/byte-codec.js';
import type { StorageEngine, WriteOperation } from '../storage/storage-engine.js';
import type { MvccKeyLayout } from './key-layout.js';

/**
 * Keys one lease may hold: its revocation deletes them all in one log entry, and its record (up to
 * 512 keys of maxKeyBytes, about 2 MiB) fits one snapshot message next to a full chunk.
 */
export const leaseKeysMax = 512;
/** Leases one partition may hold at once. */
export const leasesPerPartitionMax = 10_000;
/** Leases one tenant may hold in one partition: its share of the table (QUOTA_EXCEEDED past it). */
export const leasesPerTenantPerPartitionMax = leasesPerPartitionMax / 4;

const recordVersion = 1;

export interface LeaseRecord {
  readonly id: number;
  readonly tenant: string;
  readonly ttlMs: number;
  readonly keys: ReadonlySet<string>;
}

/** A planned change: new records (undefined: removed) and the storage writes that make them durable. */
export interface LeaseChange {
  readonly records: ReadonlyMap<number, LeaseRecord | undefined>;
  readonly operations: WriteOperation[];
}

export function encodeLeaseRecord(record: LeaseRecord): Uint8Array {
  const writer = new ByteWriter().uint8(recordVersion).uint64(record.ttlMs).text(record.tenant).uint32(record.keys.size);
  for (const key of record.keys) writer.text(key);
  return writer.finish();
}

/** Decodes a record; throws INVALID_ARGUMENT for malformed bytes (a snapshot from a peer). */
export function decodeLeaseRecord(id: number, bytes: Uint8Array): LeaseRecord {
  const reader = new ByteReader(bytes, 'lease record');
  const version = reader.uint8();
  if (version !== recordVersion) throw reader.malformed(`unknown lease record version ${version}`);
  const ttlMs = reader.uint64();
  const tenant = reader.text();
  const count = reader.uint32();
  if (count > leaseKeysMax) throw reader.malformed(`a lease holds at most ${leaseKeysMax} keys`);
  const keys = new Set<string>();
  for (let index = 0; index < count; index++) keys.add(reader.text());
  reader.finish();
  return { id, tenant, ttlMs, keys };
}

export function leaseNotFound(id: number | string): AtollError {
  return new AtollError('LEASE_NOT_FOUND', `lease ${id} does not exist (never granted, revoked, or expired)`, { lease: String(id) });
}

export class LeaseTable {
  private readonly leases = new Map<number, LeaseRecord>();
  private readonly leaseOfKey = new Map<string, number>();
  private readonly countByTenant = new Map<string, number>();

  /** Reads every lease record of the partition (at open and after a snapshot import). */
  static async load(engine: StorageEngine, layout: MvccKeyLayout): Promise<LeaseTable> {
    const table = new LeaseTable();
    const records = new Map<number, LeaseRecord>();
    for await (const [storageKey, value] of engine.iterate(layout.allLeasesRange())) {
      const id = layout.parseLeaseKey(storageKey);
      assert(id !== undefined, 'a malformed lease key in storage');
      records.set(id, decodeLeaseRecord(id, value));
    }
    table.apply({ records, operations: [] });
    return table;
  }

  get size(): number {
    return this.leases.size;
  }

  get(id: number): LeaseRecord | undefined {
    return this.leases.get(id);
  }

  /** How many leases each tenant holds in the partition (tenants with none are absent). */
  countsByTenant(): ReadonlyMap<string, number> {
    return this.countByTenant;
  }

  /** The lease `key` is attached to, if any. */
  leaseOf(key: string): number | undefined {
    return this.leaseOfKey.get(key);
  }

  /** Every lease, in id order (grant order). */
  all(): LeaseRecord[] {
    return [...this.leases.values()].sort((a, b) => a.id - b.id);
  }

  planGrant(layout: MvccKeyLayout, id: number, tenant: string, ttlMs: number): LeaseChange {
    assert(!this.leases.has(id), 'a lease id is the index of its grant entry, which applies once');
    this.checkRoom(tenant);
    const record: LeaseRecord = { id, tenant, ttlMs, keys: new Set() };
    return { records: new Map([[id, record]]), operations: [{ type: 'put', key: layout.leaseKey(id), value: encodeLeaseRecord(record) }] };
  }

  /**
   * Throws what a grant for `tenant` would be refused with now: the tenant at its share of the
   * partition (QUOTA_EXCEEDED), or the partition full (RESOURCE_EXHAUSTED). The apply decides
   * (planGrant); a leader also asks before it proposes, so a flood of grants past the share costs
   * no Raft round each (LeaseKeeper.serve).
   */
  checkRoom(tenant: string): void {
    const held = this.countByTenant.get(tenant) ?? 0;
    if (held >= leasesPerTenantPerPartitionMax) {
      throw new AtollError(
        'QUOTA_EXCEEDED',
        `tenant ${tenant} holds ${held} leases in this partition, its share of the partition's ${leasesPerPartitionMax}: revoke unused ones, or grant under a bucket of another partition`,
        { tenant, leases: held, maxLeasesPerPartition: leasesPerTenantPerPartitionMax },
      );
    }
    if (this.leases.size >= leasesPerPartitionMax) {
      throw new AtollError('RESOURCE_EXHAUSTED', `a partition holds at most ${leasesPerPartitionMax} leases; revoke unused ones`, { maxLeases: leasesPerPartitionMax });
    }
  }

  /** Removes the lease (its keys' tombstones are the caller's). */
  planRevoke(layout: MvccKeyLayout, id: number): LeaseChange {
    assert(this.leases.has(id), 'only a known lease is revoked');
    return { records: new Map([[id, undefined]]), operations: [{ type: 'del', key: layout.leaseKey(id) }] };
  }

  /**
   * Moves keys between leases: `lease` undefined detaches the key (a plain put, a delete, an
   * expiry). Throws RESOURCE_EXHAUSTED when a lease would pass leaseKeysMax. The caller checked
   * that every named lease exists.
   */
  planMoves(layout: MvccKeyLayout, moves: ReadonlyArray<{ readonly key: string; readonly lease: number | undefined }>): LeaseChange | undefined {
    const changed = new Map<number, Set<string>>();
    const keysOf = (id: number): Set<string> => {
      let keys = changed.get(id);
      if (keys === undefined) {
        const record = this.leases.get(id);
        assert(record !== undefined, 'moves name known leases');
        keys = new Set(record.keys);
        changed.set(id, keys);
      }
      return keys;
    };
    for (const { key, lease } of moves) {
      const before = this.leaseOfKey.get(key);
      if (before === lease) continue;
      if (before !== undefined) keysOf(before).delete(key);
      if (lease !== undefined) keysOf(lease).add(key);
    }
    if (changed.size === 0) return undefined;
    const records = new Map<number, LeaseRecord>();
    const operations: WriteOperation[] = [];
    for (const [id, keys] of changed) {
      if (keys.size > leaseKeysMax) {
        throw new AtollError('RESOURCE_EXHAUSTED', `a lease holds at most ${leaseKeysMax} keys`, { lease: id, maxLeaseKeys: leaseKeysMax });
      }
      const record = { ...this.leases.get(id)!, keys };
      records.set(id, record);
      operations.push({ type: 'put', key: layout.leaseKey(id), value: encodeLeaseRecord(record) });
    }
    return { records, operations };
  }

  /** Adopts a planned change once its writes are durable. */
  apply(change: LeaseChange): void {
    // Removals first, then additions, so a key moving between two changed leases ends attached.
    // Only what changed touches the maps: a lease of many keys that gains or loses one keeps the
    // rest where they are (deleting and setting them again cost a Map rehash's worth per key).
    for (const [id, record] of change.records) {
      const before = this.leases.get(id);
      if (before === undefined) continue;
      for (const key of before.keys) if (record?.keys.has(key) !== true && this.leaseOfKey.get(key) === id) this.leaseOfKey.delete(key);
      if (record === undefined) this.leases.delete(id);
      this.countTenant(before.tenant, -1);
    }
    for (const [id, record] of change.records) {
      if (record === undefined) continue;
      // Invariant: a lease stays within its key bound.
      assert(record.keys.size <= leaseKeysMax, 'a lease holds at most leaseKeysMax keys');
      this.leases.set(id, record);
      this.countTenant(record.tenant, 1);
      for (const key of record.keys) {
        // Invariant: every key is attached to at most one lease.
        const other = this.leaseOfKey.get(key);
        if (other === id) continue;
        assert(other === undefined || !change.records.has(other) || change.records.get(other)?.keys.has(key) !== true, 'a key is attached to one lease at most');
        this.leaseOfKey.set(key, id);
      }
    }
    assert(this.leases.size <= leasesPerPartitionMax, 'a partition holds at most leasesPerPartitionMax leases');
  }

  clear(): void {
    this.leases.clear();
    this.leaseOfKey.clear();
    this.countByTenant.clear();
  }

  private countTenant(tenant: string, delta: number): void {
    const count = (this.countByTenant.get(tenant) ?? 0) + delta;
    assert(count >= 0, 'a tenant holds a non-negative number of leases');
    if (count === 0) this.countByTenant.delete(tenant);
    else this.countByTenant.set(tenant, count);
  }
}
