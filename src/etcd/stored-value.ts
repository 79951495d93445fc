/**
 * What the etcd keyspace stores as a key's Atoll value: a one-byte tag, then, for a key attached
 * to a lease, the etcd lease id (8 bytes, big-endian), then the etcd value.
 *
 *   0x00 value                   no lease
 *   0x01 uint64BE(lease) value   attached to `lease`
 *
 * etcd reports each key's lease (KeyValue.lease), compares on it (Compare.LEASE) and keeps it on
 * `put --ignore-lease`; Atoll's records do not carry the lease a key is attached to, so the etcd
 * layer keeps it beside the value. The key is also attached to the Atoll lease itself, so it
 * disappears with the lease.
 */
import { AtollError } from '../errors.js';

const noLeaseTag = 0x00;
const leaseTag = 0x01;
const leaseBytes = 8;

export interface StoredValue {
  readonly value: Uint8Array;
  /** The etcd lease id, 0n for none. */
  readonly lease: bigint;
}

export function encodeStoredValue(value: Uint8Array, lease: bigint): Uint8Array {
  if (lease === 0n) {
    const stored = new Uint8Array(value.length + 1);
    stored[0] = noLeaseTag;
    stored.set(value, 1);
    return stored;
  }
  const stored = new Uint8Array(value.length + 1 + leaseBytes);
  stored[0] = leaseTag;
  new DataView(stored.buffer, stored.byteOffset + 1, leaseBytes).setBigUint64(0, lease);
  stored.set(value, 1 + leaseBytes);
  return stored;
}

export function decodeStoredValue(stored: Uint8Array): StoredValue {
  if (stored.length >= 1 && stored[0] === noLeaseTag) return { value: stored.subarray(1), lease: 0n };
  if (stored.length >= 1 + leaseBytes && stored[0] === leaseTag) {
    const lease = new DataView(stored.buffer, stored.byteOffset + 1, leaseBytes).getBigUint64(0);
    return { value: stored.subarray(1 + leaseBytes), lease };
  }
  // Someone wrote the etcd bucket through Atoll's own API: report the bytes as they are.
  return { value: stored, lease: 0n };
}

/**
 * etcd lease ids are int64; Atoll's are "<partition>.<n>" (src/api/lease-id.ts). The etcd id is
 * partition * 2^31 + n: partition ids stay below 2^32 and n (the grant's log index) below 2^31,
 * so the id is a positive int64 and names its partition without a lookup.
 */
const localBits = 31n;
const localLimit = 1n << localBits;

export function etcdLeaseIdOf(atollLease: string): bigint {
  const match = /^(\d+)\.(\d+)$/.exec(atollLease);
  if (match === null) throw new AtollError('INTERNAL', `unexpected Atoll lease id ${JSON.stringify(atollLease)}`);
  const local = BigInt(match[2]!);
  if (local >= localLimit) throw new AtollError('RESOURCE_EXHAUSTED', 'the lease id does not fit in an etcd lease id (its partition applied over 2^31 entries)');
  return (BigInt(match[1]!) << localBits) | local;
}

/** The Atoll lease id of an etcd lease id; undefined for an id no Atoll lease can have. */
export function atollLeaseIdOf(etcdLease: bigint): string | undefined {
  if (etcdLease <= 0n) return undefined;
  const local = etcdLease & (localLimit - 1n);
  if (local === 0n) return undefined;
  return `${etcdLease >> localBits}.${local}`;
}
