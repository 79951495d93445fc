/**
 * Lease ids as clients see them: "<partition>.<n>", where n is the lease's local id in its
 * partition (the log index of its grant entry, mvcc/lease-table.ts). The partition in the id
 * routes every call on the lease, and tells a put whether its key may attach to it.
 */
import { AtollError } from '../errors.js';

export interface LeaseId {
  readonly partition: number;
  readonly local: number;
}

const leaseIdPattern = /^(\d{1,10})\.(\d{1,16})$/;

export function formatLeaseId(partition: number, local: number): string {
  return `${partition}.${local}`;
}

/** Ids of partitions a split made are their first hash (src/node/replica/split-entry.ts): below this. */
const splitPartitionIdLimit = 0xffff_ffff;

/**
 * Parses a client's lease id; INVALID_ARGUMENT for anything that is not a partition of the equal
 * table of `partitions`, nor possibly one a split made (an id from `partitions` up to 2^32 - 1;
 * whether that partition exists is for the router's table to say).
 */
export function parseLeaseId(text: string | undefined, partitions: number): LeaseId {
  const match = typeof text === 'string' ? leaseIdPattern.exec(text) : null;
  const partition = match ? Number(match[1]) : Number.NaN;
  const local = match ? Number(match[2]) : Number.NaN;
  if (!Number.isSafeInteger(partition) || (partition >= partitions && partition >= splitPartitionIdLimit) || !Number.isSafeInteger(local) || local < 1) {
    throw new AtollError('INVALID_ARGUMENT', 'a lease id is "<partition>.<n>", as a lease grant returned it', { lease: String(text).slice(0, 64) });
  }
  return { partition, local };
}
