/**
 * The partition a transaction is confined to, and the checks that keep it there. A transaction
 * (interactive or script) reads and writes one partition: the one its bucket hashes to. Other
 * buckets that hash to the same partition are allowed (they are committed by the same log entry);
 * a key of any other partition fails with OUTSIDE_TRANSACTION, naming both buckets, before
 * anything is read, buffered or proposed.
 */
import { AtollError } from '../errors.js';
import { bucketOf } from '../keys/bucket.js';
import { bucketHash, type BucketHashName } from '../keys/bucket-hash.js';
import { partitionOfBucket, partitionOfHash } from '../keys/partition-table.js';
import { prefixBucket } from '../keys/prefix-bucket.js';
import { validateKey } from '../keys/validate-key.js';
import { defaultLimits, type Limits } from '../limits.js';
import type { TxnCommand, WriteOp } from '../mvcc/commands.js';
import type { CommitRequest } from '../api/node-api.js';
import { parseLeaseId } from '../api/lease-id.js';
import { decodeTxnHandle, type TxnHandle, type TxnHandleKeys } from './txn-handle.js';

export class TxnScope {
  private constructor(
    readonly handle: TxnHandle,
    /** The cluster's bucket hash (default: a new cluster's): which partition a bucket is in. */
    private readonly hash?: BucketHashName,
  ) {}

  /**
   * Decodes a handle for a cluster of `partitionCount` partitions (INVALID_TRANSACTION otherwise),
   * without checking its MAC: for the client library and handles this node just made. A node
   * serving a caller's handle uses fromVerified.
   */
  static fromText(text: unknown, partitionCount: number, hash?: BucketHashName): TxnScope {
    return TxnScope.fromHandle(decodeTxnHandle(text), partitionCount, hash);
  }

  /** A caller's handle, once its MAC and tenant verify (TxnHandleKeys.open). */
  static fromVerified(text: unknown, partitionCount: number, keys: TxnHandleKeys, tenant: string, hash?: BucketHashName): TxnScope {
    return TxnScope.fromHandle(keys.open(text, tenant), partitionCount, hash);
  }

  private static fromHandle(handle: TxnHandle, partitionCount: number, hash?: BucketHashName): TxnScope {
    if (handle.partitionCount !== partitionCount) {
      throw new AtollError(
        'INVALID_TRANSACTION',
        `the transaction was begun on a cluster with ${handle.partitionCount} partitions, this one has ${partitionCount}`,
      );
    }
    return new TxnScope(handle, hash);
  }

  static of(handle: TxnHandle, hash?: BucketHashName): TxnScope {
    return new TxnScope(handle, hash);
  }

  checkKey(key: string): void {
    validateKey(key);
    this.checkKeyInScope(key);
  }

  /** The scope check alone, for a key already validated (a checked operation's, src/api/checked-operation.ts). */
  checkKeyInScope(key: string): void {
    this.checkBucket(bucketOf(key), `key ${JSON.stringify(key)}`);
  }

  checkPrefix(prefix: string): void {
    this.checkBucket(prefixBucket(prefix).bucket, `prefix ${JSON.stringify(prefix)}`);
  }

  checkBucket(bucket: string, what: string): void {
    const { range } = this.handle;
    if (range !== undefined) {
      // The scope as of the snapshot: the range the partition owned at begin (issue 32). The equal
      // table is not the partition table once a split or a merge ran.
      const hash = bucketHash(bucket, this.hash);
      if (hash >= range.start && hash < range.end) return;
      throw new AtollError(
        'OUTSIDE_TRANSACTION',
        `${what} is in bucket ${JSON.stringify(bucket)}, outside the range of partition ${this.handle.partition} when the transaction on bucket ` +
          `${JSON.stringify(this.handle.bucket)} began: a transaction covers one partition`,
        { bucket, transactionBucket: this.handle.bucket, transactionPartition: this.handle.partition },
      );
    }
    const partition = partitionOfBucket(bucket, this.handle.partitionCount, this.hash);
    if (partition === this.handle.partition) return;
    // A partition a split made has its first hash as id (src/node/replica/split-entry.ts) and lies inside
    // one range of the equal table: a bucket at or past its start in that range may be its own
    // (the store refuses one a later split moved on, with PARTITION_MOVED).
    const splitStart = this.handle.partition;
    if (splitStart >= this.handle.partitionCount && splitStart < 2 ** 32) {
      const hash = bucketHash(bucket, this.hash);
      if (hash >= splitStart && partitionOfHash(splitStart, this.handle.partitionCount) === partition) return;
    }
    throw new AtollError(
      'OUTSIDE_TRANSACTION',
      `${what} is in bucket ${JSON.stringify(bucket)} (partition ${partition}), outside the transaction on bucket ` +
        `${JSON.stringify(this.handle.bucket)} (partition ${this.handle.partition}): a transaction covers one partition`,
      { bucket, partition, transactionBucket: this.handle.bucket, transactionPartition: this.handle.partition },
    );
  }

  /** Fails with TXN_EXPIRED once the transaction has outlived limits.maxTxnDurationMs. */
  checkAlive(nowMs: number, limits: Limits = defaultLimits): void {
    const expiresAtMs = this.handle.startedAtMs + limits.maxTxnDurationMs;
    if (nowMs <= expiresAtMs) return;
    throw new AtollError(
      'TXN_EXPIRED',
      `the transaction began ${nowMs - this.handle.startedAtMs} ms ago; transactions must commit within ${limits.maxTxnDurationMs} ms`,
      { startedAtMs: this.handle.startedAtMs, expiresAtMs },
    );
  }

  /**
   * The log command for a commit request: every key and prefix checked against the scope, one
   * write per key. Read keys and prefixes travel only under SERIALIZABLE, where they are checked.
   */
  commandOf(request: Pick<CommitRequest, 'writes' | 'readKeys' | 'readPrefixes'>, keysChecked = false): TxnCommand {
    const writes: WriteOp[] = request.writes.map((write) => {
      if (write.delete === true) return { type: 'delete', key: write.key };
      const lease = write.lease === undefined ? undefined : this.localLease(write.lease);
      return {
        type: 'put',
        key: write.key,
        value: write.value ?? new Uint8Array(0),
        ...(write.ttlMs !== undefined && { ttlMs: write.ttlMs }),
        ...(write.keepTtl === true && { keepTtl: true }),
        ...(lease !== undefined && { lease }),
        ...(write.ifFence !== undefined && { ifFence: write.ifFence }),
      };
    });
    return this.command(writes, request.readKeys, request.readPrefixes, undefined, keysChecked);
  }

  /**
   * The local id of a lease a transaction's put attaches to: it must live in the transaction's
   * partition (LEASE_WRONG_PARTITION otherwise, before anything is proposed; whether it exists
   * is decided in apply, LEASE_NOT_FOUND, which fails the whole commit).
   */
  localLease(text: string): number {
    const lease = parseLeaseId(text, this.handle.partitionCount);
    if (lease.partition !== this.handle.partition) {
      throw new AtollError('LEASE_WRONG_PARTITION', `lease ${text} lives in partition ${lease.partition}; this transaction is on partition ${this.handle.partition}`, {
        lease: text,
        partition: this.handle.partition,
      });
    }
    return lease.local;
  }

  /** The log command for unconditional puts and deletes (at most one per key), with an optional note. */
  command(writes: readonly WriteOp[], readKeys: readonly string[], readPrefixes: readonly string[], note?: Uint8Array, keysChecked = false): TxnCommand {
    const checkKey = (key: string): void => (keysChecked ? this.checkKeyInScope(key) : this.checkKey(key));
    const seen = new Set<string>();
    for (const write of writes) {
      checkKey(write.key);
      if (seen.has(write.key)) {
        throw new AtollError('INVALID_ARGUMENT', `a transaction writes each key at most once; ${JSON.stringify(write.key)} appears twice`, {
          key: write.key,
        });
      }
      seen.add(write.key);
    }
    const serializable = this.handle.isolation === 'serializable';
    for (const key of readKeys) checkKey(key);
    const keyPrefixes = readPrefixes.map((prefix) => {
      this.checkPrefix(prefix);
      return prefixBucket(prefix).keyPrefix;
    });
    return {
      type: 'txn',
      snapshotRevision: this.handle.snapshotRevision,
      isolation: this.handle.isolation,
      readKeys: serializable ? [...new Set(readKeys)] : [],
      readPrefixes: serializable ? [...new Set(keyPrefixes)] : [],
      writes: [...writes],
      ...(note !== undefined && { note }),
      // The handle's start (MAC'd, so not the client's word): the commit decides TTLs and, under
      // SERIALIZABLE, expiry of read keys against this snapshot clock (MvccStore, TxnCommand).
      snapshotTimeMs: this.handle.startedAtMs,
    };
  }
}
