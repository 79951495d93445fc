/**
 * Locks with fencing tokens (`client.lock(name)`, docs/api.md "Locks and fencing"), built from
 * plain KV calls, so any gRPC client can follow the same recipe (etcd's):
 *
 * 1. Grant a lease (KV.Lease GRANT) in the lock bucket's partition and put the waiter's key
 *    `<bucket>/<name>/<lease id>` (empty value, if_absent, attached to the lease). The put's
 *    revision is the key's create revision: the waiter's place in line and, once it holds the
 *    lock, its fencing token.
 * 2. Read the waiters (GetByPrefix `<bucket>/<name>/`). The waiter with the lowest create revision
 *    holds the lock. Any other waiter watches the key just before its own (its predecessor) from
 *    the read's revision until it is deleted, then reads the waiters again: so waiters are served
 *    in the order they arrived, and a predecessor whose lease ended is skipped.
 * 3. Unlock revokes the lease (deleting the key); a holder whose process dies loses its lease
 *    within the TTL, which deletes its key and lets the next waiter in.
 *
 * Invariants (why this is a lock):
 * - A waiter's key is unique to its lease and is never written again, so once deleted it never
 *   comes back; a key present at two revisions was present in between.
 * - A waiter holds the lock only after a read in which no key with a lower create revision
 *   existed. So two holders whose keys were present throughout their critical sections cannot
 *   overlap, and in the order of the reads that granted them their tokens strictly increase.
 * - A holder whose lease ended may still believe it holds the lock (a lease is lost by time):
 *   that is what fencing is for. Writes carrying `ifFence: fencingToken` are refused (FENCED)
 *   once a newer holder has written the same key.
 */
import { AtollError } from '../errors.js';
import type { WatchEvent } from '../api/node-api.js';
import type { CallOptions } from './call-options.js';
import type { Lease } from './lease.js';
import { newRequestId } from './request-id.js';
import type { PrefixPage, PutResult } from './results.js';

/** The default bucket of lock keys. */
export const defaultLockBucket = 'locks';
/** The default lease TTL of a lock: a dead holder's lock passes on within this. */
export const defaultLockTtlMs = 10_000;
/** Waiters read per page while looking for a predecessor. */
const waiterPageSize = 1_000;
/** Pages of waiters read at most per round (so at most 100,000 waiters per lock). */
const maxWaiterPages = 100;

export interface LockOptions {
  /** The lease TTL (default 10 s): the lock passes on this long after its holder stops keeping it alive. */
  readonly ttlMs?: number;
  /** Gives up waiting (the call rejects with the signal's reason and leaves the line). */
  readonly signal?: AbortSignal;
  /** The bucket of the lock's keys (default "locks"); a lock's keys live in its partition. */
  readonly bucket?: string;
  /**
   * Test only (the chaos suite's negative control `lock-skips-waiting`): hold the lock at once,
   * without waiting for earlier waiters, as a broken lock would. Never set it in real code.
   */
  readonly testGrantWithoutWaiting?: boolean;
}

/** A held lock. */
export interface HeldLock {
  readonly name: string;
  /** The holder's key, `<bucket>/<name>/<lease id>`. */
  readonly key: string;
  /** The revision that created the holder's key: pass it as `ifFence` to writes the lock guards. */
  readonly fencingToken: number;
  /** The revision of the read that found no earlier waiter (the lock was granted at it). */
  readonly grantRevision: number;
  /** The lease that keeps the lock (its TTL is the lock's). */
  readonly lease: Lease;
  /** Resolves with the reason if the lease is lost while the lock is held (never after unlock). */
  readonly lost: Promise<AtollError>;
  /** Whether the lease was lost (the lock may have passed to another holder). */
  readonly isLost: boolean;
  /** Releases the lock: revokes its lease, which deletes its key; the next waiter gets the lock. */
  unlock(): Promise<void>;
}

/** What a lock needs from the client (AtollClient has all of these). */
export interface LockClient {
  lease(ttlMs: number): Promise<Lease>;
  put(key: string, value: string, options: { lease: string; ifAbsent: true; requestId: string } & CallOptions): Promise<PutResult>;
  getByPrefix(prefix: string, options: { revision?: number; limit: number; pageToken?: string } & CallOptions): Promise<PrefixPage>;
  watch(key: string, options: { exactKey: true; fromRevision: number; signal: AbortSignal }): AsyncIterable<WatchEvent | { readonly type: 'progress'; readonly revision: number }>;
}

interface Waiter {
  readonly key: string;
  readonly createRevision: number;
}

function checkLockName(name: unknown, bucket: unknown): void {
  if (typeof name !== 'string' || name.length === 0) throw new AtollError('INVALID_ARGUMENT', 'a lock name is a non-empty string', { name: String(name).slice(0, 64) });
  if (typeof bucket !== 'string' || bucket.length === 0 || bucket.includes('/')) {
    throw new AtollError('INVALID_ARGUMENT', 'a lock bucket is a non-empty name without "/"', { bucket: String(bucket).slice(0, 64) });
  }
}

/** Takes the lock `name`: resolves once every earlier waiter is gone (see the file comment). */
export async function acquireLock(client: LockClient, name: string, options: LockOptions = {}): Promise<HeldLock> {
  const bucket = options.bucket ?? defaultLockBucket;
  checkLockName(name, bucket);
  const signal = options.signal;
  signal?.throwIfAborted();
  const prefix = `${bucket}/${name}/`;
  const lease = await client.lease(options.ttlMs ?? defaultLockTtlMs);
  try {
    const leaseId = await lease.idFor(prefix);
    const key = prefix + leaseId;
    // The request id makes a retried put answer with the first attempt's revision.
    const put = await client.put(key, '', { lease: leaseId, ifAbsent: true, requestId: newRequestId(), ...(signal !== undefined && { signal }) });
    if (!put.applied) throw new AtollError('INTERNAL', `the lock key ${key} already existed`, { key });
    const fencingToken = put.revision;
    const grantRevision = options.testGrantWithoutWaiting === true ? fencingToken : await waitForTurn(client, prefix, key, fencingToken, lease, signal);
    return heldLock(name, key, fencingToken, grantRevision, lease);
  } catch (error) {
    // Leaving the line: the key goes with the lease, so later waiters are not held up by it.
    await lease.revoke().catch(() => undefined);
    throw error;
  }
}

function heldLock(name: string, key: string, fencingToken: number, grantRevision: number, lease: Lease): HeldLock {
  let lostError: AtollError | undefined;
  const lost = new Promise<AtollError>((resolve) =>
    lease.onLost((error) => {
      lostError = error;
      resolve(error);
    }),
  );
  return {
    name,
    key,
    fencingToken,
    grantRevision,
    lease,
    lost,
    get isLost() {
      return lostError !== undefined;
    },
    unlock: () => lease.revoke(),
  };
}

/**
 * Waits until no waiter older than `token` is left; returns the revision of the read that showed
 * it. Each round either returns or waits for one predecessor's deletion, and predecessors are
 * only ever removed (a new waiter gets a higher create revision), so the rounds are bounded by
 * the number of waiters ahead at the start.
 */
async function waitForTurn(client: LockClient, prefix: string, key: string, token: number, lease: Lease, signal: AbortSignal | undefined): Promise<number> {
  for (;;) {
    signal?.throwIfAborted();
    if (lease.lost !== undefined) throw lease.lost;
    const { waiters, revision } = await readWaiters(client, prefix, signal);
    if (!waiters.some((waiter) => waiter.key === key)) {
      throw new AtollError('LEASE_NOT_FOUND', `the lock key ${key} is gone while waiting: its lease ended`, { key });
    }
    let predecessor: Waiter | undefined;
    for (const waiter of waiters) {
      if (waiter.createRevision < token && (predecessor === undefined || waiter.createRevision > predecessor.createRevision)) predecessor = waiter;
    }
    if (predecessor === undefined) return revision;
    await waitForDelete(client, predecessor.key, revision, lease, signal);
  }
}

async function readWaiters(client: LockClient, prefix: string, signal: AbortSignal | undefined): Promise<{ waiters: Waiter[]; revision: number }> {
  const waiters: Waiter[] = [];
  let revision: number | undefined;
  let pageToken = '';
  for (let page = 0; page < maxWaiterPages; page++) {
    const result = await client.getByPrefix(prefix, { limit: waiterPageSize, ...(pageToken !== '' && { pageToken }), ...(signal !== undefined && { signal }) });
    revision ??= result.revision;
    for (const item of result.items) waiters.push({ key: item.key, createRevision: item.createRevision });
    pageToken = result.nextPageToken;
    if (pageToken === '') return { waiters, revision };
  }
  throw new AtollError('RESOURCE_EXHAUSTED', `a lock has at most ${maxWaiterPages * waiterPageSize} waiters`, { prefix });
}

/**
 * Resolves when `key` is deleted after `revision` (or when that history was compacted away, so
 * the caller reads the waiters again); rejects on abort or lease loss.
 */
async function waitForDelete(client: LockClient, key: string, revision: number, lease: Lease, signal: AbortSignal | undefined): Promise<void> {
  const stop = new AbortController();
  const onAbort = (): void => stop.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const unsubscribe = lease.onLost((error) => stop.abort(error));
  try {
    try {
      for await (const item of client.watch(key, { exactKey: true, fromRevision: revision, signal: stop.signal })) {
        if (item.type === 'delete') return;
      }
    } catch (error) {
      if (!stop.signal.aborted && (error as { code?: unknown }).code === 'COMPACTED') return;
      throw error;
    }
    // The watch ends only when stopped.
    throw stop.signal.aborted ? stop.signal.reason : new AtollError('UNAVAILABLE', 'the watch of the lock ended');
  } finally {
    unsubscribe();
    signal?.removeEventListener('abort', onAbort);
  }
}
