/**
 * An interactive snapshot transaction over one bucket's partition (AtollClient.beginTransaction,
 * or AtollClient.transaction, which also retries conflicts).
 *
 *   const outcome = await client.transaction('bank', async (tx) => {
 *     const from = await tx.get('bank/alice');
 *     const balance = BigInt(from.text() || '0');
 *     if (balance < 10n) return 'insufficient';
 *     await tx.increment('bank/alice', -10n);
 *     await tx.increment('bank/bob', 10n);
 *     return 'moved';
 *   }, { isolation: 'serializable' });
 *
 * Reads go to the cluster at the transaction's snapshot (any replica that has applied it answers)
 * and see the transaction's own writes; writes are buffered here and sent all at once by commit,
 * which the leader validates and applies through one log entry. The server keeps no state for an
 * open transaction: abandoning one costs nothing, and a leader change only means a conflict-free
 * retry of the commit. Conditions and increments are resolved against the transaction's view
 * (src/txn/txn-view.ts), which is exact because the commit aborts if a written key changed.
 */
import { AtollError } from '../errors.js';
import type { BeginTransactionResponse, CommitRequest, Isolation, TxnWrite } from '../api/node-api.js';
import { defaultTenant } from '../keys/tenant-keys.js';
import type { BucketHashName } from '../keys/bucket-hash.js';
import { TxnScope } from '../txn/txn-scope.js';
import { TxnView, type SnapshotReader, type TxnRecord } from '../txn/txn-view.js';
import { sleep, type CallOptions } from './call-options.js';
import { afterUnknownSend, clientErrorOf, isAtollClientError } from './client-error.js';
import { checkDelta, checkRevision, checkTtlMs, valueBytes, type ValueInput } from './client-input.js';
import type { Lease } from './lease.js';
import { getResultOf, keyEntryOf, type GetResult, type KeyEntry } from './results.js';
import { newRequestId } from './request-id.js';
import { backoffDelayMs } from './retry-policy.js';

/** What a Transaction needs from the client: reads and the commit, routed to its partition. */
export interface TransactionTransport {
  txnGet(partition: number, key: string, transaction: string, options: CallOptions): Promise<TxnRecord | undefined>;
  txnPrefixPage(
    partition: number,
    prefix: string,
    transaction: string,
    pageToken: string,
    options: CallOptions,
  ): Promise<{ items: TxnRecord[]; nextPageToken: string }>;
  commit(partition: number, request: CommitRequest, options: CallOptions): Promise<{ revision: number }>;
}

export interface TxnPutOptions {
  readonly ttlMs?: number;
  readonly keepTtl?: boolean;
  readonly ifAbsent?: boolean;
  readonly ifPresent?: boolean;
  readonly ifModRevision?: number;
  readonly ifValue?: ValueInput;
  /**
   * Attach the key to a lease: a lease id ("<partition>.<n>") of the transaction's partition, or
   * a client lease (its server lease for this transaction's bucket is granted before the put is
   * buffered). A bad lease fails the commit (LEASE_NOT_FOUND, LEASE_WRONG_PARTITION), which then
   * changes nothing.
   */
  readonly lease?: Lease | string;
  /** A fenced put (a lock's fencingToken): a newer token on the key fails the commit with FENCED. */
  readonly ifFence?: number;
}

export interface TxnDeleteOptions {
  readonly ifModRevision?: number;
  readonly ifValue?: ValueInput;
}

export interface CommitOptions extends CallOptions {
  /** Idempotency key of the commit (default: newRequestId(), reused when the commit is resent). */
  readonly requestId?: string;
}

export interface CommitResult {
  /** The revision the writes became visible at (the snapshot revision for a read-only transaction). */
  readonly revision: number;
}

/** 'failed': the commit failed (after a conflict nothing changed; after an indeterminate error, unknown). */
type State = 'open' | 'committing' | 'committed' | 'rolled back' | 'failed';

/** Runs client-side work, turning AtollErrors into AtollClientErrors as every client call does. */
async function clientCall<T>(work: () => Promise<T>, write = false): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AtollError) throw clientErrorOf(error, write);
    throw error;
  }
}

export class Transaction {
  readonly bucket: string;
  readonly partition: number;
  readonly snapshotRevision: number;
  readonly isolation: Isolation;
  /** Commit fails with TXN_EXPIRED after this time (Unix epoch ms). */
  readonly expiresAtMs: number;
  private readonly handle: string;
  private readonly view: TxnView;
  private stateValue: State = 'open';

  constructor(
    private readonly transport: TransactionTransport,
    begun: BeginTransactionResponse,
    partitionCount: number,
    private readonly callOptions: CallOptions,
    private readonly maxValueBytes: number,
    /** The cluster's bucket hash (ClusterInfo); default: a new cluster's. */
    hash?: BucketHashName,
  ) {
    this.bucket = begun.bucket;
    this.partition = begun.partition;
    this.snapshotRevision = begun.snapshotRevision;
    this.isolation = begun.isolation;
    this.expiresAtMs = begun.expiresAtMs;
    this.handle = begun.transaction;
    const scope = TxnScope.fromText(begun.transaction, partitionCount, hash);
    // With tenants the handle names the internal (tenant, bucket), whose partition the client
    // cannot compute; the server then refuses a key outside the partition on read or commit. The
    // client reads the handle without its MAC (it has no key); the server verifies it.
    const tenantScoped = scope.handle.tenant !== defaultTenant || scope.handle.bucket.startsWith('\u0000');
    this.view = new TxnView({
      reader: this.snapshotReader(),
      nowMs: scope.handle.startedAtMs,
      ...(!tenantScoped && {
        checkKey: (key: string) => scope.checkKey(key),
        checkPrefix: (bucket: string, prefix: string) => scope.checkBucket(bucket, `prefix ${JSON.stringify(prefix)}`),
      }),
    });
  }

  get state(): State {
    return this.stateValue;
  }

  /** Reads a key at the snapshot, with this transaction's writes applied. */
  get(key: string): Promise<GetResult> {
    return this.whileOpen(async () => {
      const record = await this.view.get(key);
      return getResultOf(
        record === undefined
          ? { found: false, value: new Uint8Array(0), createRevision: 0, modRevision: 0, version: 0, expiresAtMs: 0, revision: this.snapshotRevision }
          : { found: true, ...record, revision: this.snapshotRevision },
      );
    });
  }

  exists(key: string): Promise<boolean> {
    return this.whileOpen(() => this.view.exists(key));
  }

  /** Every live key under a bucket or prefix at the snapshot, own writes included, in key order. */
  getByPrefix(prefix: string): Promise<KeyEntry[]> {
    return this.whileOpen(async () => (await this.view.getByPrefix(prefix)).map((record) => keyEntryOf(record)));
  }

  /** Buffers a put; resolves false (and buffers nothing) when a condition does not hold in the view. */
  put(key: string, value: ValueInput, options: TxnPutOptions = {}): Promise<boolean> {
    return this.whileOpen(async () => {
      const lease = options.lease === undefined || typeof options.lease === 'string' ? options.lease : await options.lease.idFor(key);
      return this.view.put(key, valueBytes(value, 'value', this.maxValueBytes), {
        ...(options.ttlMs !== undefined && { ttlMs: checkTtlMs(options.ttlMs) }),
        ...(options.keepTtl === true && { keepTtl: true }),
        ...(options.ifAbsent === true && { ifAbsent: true }),
        ...(options.ifPresent === true && { ifPresent: true }),
        ...(options.ifModRevision !== undefined && { ifModRevision: checkRevision(options.ifModRevision, 'ifModRevision') }),
        ...(options.ifValue !== undefined && { ifValue: valueBytes(options.ifValue, 'ifValue', this.maxValueBytes) }),
        ...(lease !== undefined && { lease }),
        ...(options.ifFence !== undefined && { ifFence: options.ifFence }),
      });
    });
  }

  /** Buffers a delete; resolves false when the key is absent in the view or a condition does not hold. */
  delete(key: string, options: TxnDeleteOptions = {}): Promise<boolean> {
    return this.whileOpen(() =>
      this.view.delete(key, {
        ...(options.ifModRevision !== undefined && { ifModRevision: checkRevision(options.ifModRevision, 'ifModRevision') }),
        ...(options.ifValue !== undefined && { ifValue: valueBytes(options.ifValue, 'ifValue', this.maxValueBytes) }),
      }),
    );
  }

  /** Adds `delta` to the counter in the view and buffers the sum; resolves to the new value. */
  increment(key: string, delta: number | bigint = 1, options: { readonly ttlMs?: number } = {}): Promise<bigint> {
    return this.whileOpen(() =>
      this.view.increment(key, checkDelta(delta), options.ttlMs === undefined ? {} : { ttlMs: checkTtlMs(options.ttlMs) }),
    );
  }

  /**
   * Sends the writes to the leader, which applies them atomically or rejects the whole transaction
   * with TXN_CONFLICT (nothing changed; run it again at a new snapshot). A commit whose outcome is
   * unknown (the connection broke after sending) is resent with the same request id, so it
   * applies at most once. A transaction with no writes commits without a round trip.
   */
  async commit(options: CommitOptions = {}): Promise<CommitResult> {
    if (this.stateValue !== 'open') throw clientErrorOf(this.notOpen(), false);
    this.stateValue = 'committing';
    try {
      const writes = this.view.writes();
      if (writes.length === 0) {
        this.stateValue = 'committed';
        return { revision: this.snapshotRevision };
      }
      const request: CommitRequest = {
        transaction: this.handle,
        writes: writes.map((op): TxnWrite => {
          if (op.type === 'delete') return { key: op.key, delete: true };
          if (op.type !== 'put') throw new AtollError('INTERNAL', `a transaction buffers puts and deletes, not ${op.type}`);
          return {
            key: op.key,
            value: op.value,
            ...(op.ttlMs !== undefined && { ttlMs: op.ttlMs }),
            ...(op.keepTtl === true && { keepTtl: true }),
            ...this.view.leaseAndFence(op.key),
          };
        }),
        readKeys: this.view.readKeys,
        readPrefixes: this.view.readPrefixes,
        requestId: options.requestId ?? newRequestId(),
      };
      const result = await this.sendCommit(request, { ...this.callOptions, ...options });
      this.stateValue = 'committed';
      return result;
    } catch (error) {
      // A failed commit ends the transaction: after a conflict its snapshot is useless.
      this.stateValue = 'failed';
      throw error;
    }
  }

  /** Discards the buffered writes. Nothing was sent, so nothing needs undoing on the server. */
  rollback(): void {
    if (this.stateValue === 'open') this.stateValue = 'rolled back';
  }

  private async sendCommit(request: CommitRequest, options: CallOptions): Promise<CommitResult> {
    let earlierUnknown = false;
    for (let resend = 0; ; resend++) {
      try {
        return await this.transport.commit(this.partition, request, options);
      } catch (error) {
        // Same request id, same writes, same snapshot: a resend applies at most once.
        const unknown = isAtollClientError(error) && error.indeterminate && error.code !== 'DEADLINE_EXCEEDED';
        if (!unknown || resend >= 5) throw afterUnknownSend(error, earlierUnknown);
        earlierUnknown = true;
        await sleep(backoffDelayMs(resend), options.signal);
      }
    }
  }

  private snapshotReader(): SnapshotReader {
    return {
      get: (key) => this.transport.txnGet(this.partition, key, this.handle, this.callOptions),
      getByPrefix: async (keyPrefix, maxKeys) => {
        const records: TxnRecord[] = [];
        let pageToken = '';
        do {
          const page = await this.transport.txnPrefixPage(this.partition, keyPrefix, this.handle, pageToken, this.callOptions);
          records.push(...page.items);
          if (records.length > maxKeys) {
            throw new AtollError('RESOURCE_EXHAUSTED', `a prefix read in a transaction returns at most ${maxKeys} keys`, { keyPrefix, maxKeys });
          }
          pageToken = page.nextPageToken;
        } while (pageToken !== '');
        return records;
      },
    };
  }

  private whileOpen<T>(work: () => Promise<T>): Promise<T> {
    return clientCall(async () => {
      if (this.stateValue !== 'open') throw this.notOpen();
      return work();
    });
  }

  private notOpen(): AtollError {
    return new AtollError('INVALID_TRANSACTION', `the transaction already ended or is committing (state: ${this.stateValue})`);
  }
}
