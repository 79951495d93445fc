/**
 * Small pure helpers of the KV executor: the MVCC write of a put request, whether an operation or a
 * command adds stored data (the storage quota applies), and the page tokens of prefix reads.
 */
import { AtollError } from '../../errors.js';
import type { Command, WriteOp } from '../../mvcc/index.js';
import type { PutRequest } from '../../api/node-api.js';
import type { KvOperation } from '../../api/operations.js';
import { parseLeaseId } from '../../api/lease-id.js';
import { putWriteOp } from '../../tenancy/check-operation.js';

/**
 * The MVCC write of a put request, with only the options it sets. A lease must be of the
 * partition the put runs on (`partition`), else LEASE_WRONG_PARTITION.
 */
export function writeOpOfPut(r: PutRequest, partition = 0, partitions = 1): WriteOp {
  const lease = r.lease === undefined ? undefined : parseLeaseId(r.lease, partitions);
  if (lease !== undefined && lease.partition !== partition) {
    throw new AtollError('LEASE_WRONG_PARTITION', `lease ${r.lease} lives in partition ${lease.partition}; this key is in partition ${partition}: grant a lease for the key's bucket`, {
      lease: r.lease,
      partition,
    });
  }
  return putWriteOp(r, lease?.local);
}

/**
 * Whether an operation may add stored data, so the storage quota applies: deletes, expiry
 * changes (extend) and transactions that only delete go through over quota (a tenant must be
 * able to get back under it); a script is checked when it commits (KvExecutor.execute).
 */
export function operationMayGrow(operation: KvOperation): boolean {
  switch (operation.kind) {
    case 'put':
    case 'increment':
      return true;
    case 'commit':
      // A commit's writes are puts unless marked delete (TxnScope.commandOf); the handle itself is
      // verified where the router picked the partition and again when the commit case runs.
      return operation.request.writes.some((write) => write.delete !== true);
    default:
      return false;
  }
}

/** Whether a command writes a value (put, increment) rather than only deleting or changing expiry. */
export function commandGrows(command: Command): boolean {
  if (command.type === 'leaseGrant' || command.type === 'leaseRevoke') return false;
  const writes = command.type === 'batch' || command.type === 'txn' ? command.writes : command.type === 'compact' || command.type === 'expire' ? [] : [command];
  return writes.some((write) => write.type === 'put' || write.type === 'increment');
}

export function encodePageToken(revision: number, after: string): string {
  return Buffer.from(JSON.stringify({ r: revision, a: after }), 'utf8').toString('base64url');
}

/**
 * A page token names the last internal key returned. The scan is clamped to the prefix anyway
 * (MvccStore.scanRange); a token whose key is not under the request's (mapped) prefix is refused
 * as well, so a crafted token is never more than a resume point inside the caller's own prefix.
 */
export function decodePageToken(token: string, keyPrefix: string): { revision: number; after: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { r: unknown; a: unknown };
    if (typeof parsed.r === 'number' && Number.isSafeInteger(parsed.r) && parsed.r >= 0 && typeof parsed.a === 'string' && parsed.a.startsWith(keyPrefix)) {
      return { revision: parsed.r, after: parsed.a };
    }
  } catch {
    // Fall through to the error below.
  }
  throw new AtollError('INVALID_ARGUMENT', 'malformed page token: pass back nextPageToken unchanged');
}
