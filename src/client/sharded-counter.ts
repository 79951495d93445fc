/**
 * A sharded counter: one logical counter kept in N keys, each in a bucket of its own, so its
 * increments spread over up to N partitions (and their leaders) instead of queueing on one.
 *
 *   const visits = client.shardedCounter('visits', { shards: 16 });
 *   await visits.increment();          // one write to one random shard
 *   const total = await visits.read(); // N reads, summed (a bigint)
 *
 * Shard keys: shard i of counter `name` is `${name}~${i}~shard/count`, in bucket
 * `${name}~${i}~shard`. The shard number comes before a fixed tail on purpose: the bucket hash
 * (FNV-1a) mixes a byte only through the bytes after it, and buckets differing in their last
 * byte alone (`likes~0`, `likes~1`, ...) land in the same partition. With the tail, the shards
 * hash to partitions independently, so N shards over P partitions occupy P(1 - (1 - 1/P)^N)
 * partitions on average (8 shards: 5.3 of 8, 7.6 of 64). The encoding is injective (strip
 * `~shard`, split at the last `~`), so two counters never share a key, and a user key collides
 * only if its bucket itself ends in `~<digits>~shard`. A name must not contain `/` or U+0000.
 *
 * Exactly-once increments: each increment carries a request id (the caller's, or newRequestId())
 * and goes to the shard that id hashes to, so a resend with the same id reaches the same key and
 * the cluster's dedup table (README: the last 100,000 ids per partition) answers it without
 * adding twice. An attempt whose outcome is unknown (a timeout or a broken connection, e.g. a
 * leader killed mid-request) is resent with the same id until the call's deadline.
 *
 * What it is not: there is no compare-and-set on the total and no atomic snapshot across shards.
 * A read is N reads at N moments: each shard read is linearizable (or stale, if asked), so the
 * total counts every increment acknowledged before read() began, and may or may not count those
 * running concurrently. reset() deletes the shards one by one; increments running meanwhile may
 * survive it. The shard count may grow later (old shards are still read) but must not shrink.
 */
import { AtollError } from '../errors.js';
import { fnv1a32 } from '../keys/bucket-hash.js';
import { bucketSeparator } from '../keys/bucket.js';
import { encodeUtf8 } from '../keys/utf8.js';
import { validateUserKey } from '../keys/tenant-keys.js';
import type { Consistency } from '../api/node-api.js';
import { deadlineMsOf, sleep, type CallOptions } from './call-options.js';
import { afterUnknownSend, AtollClientError, isAtollClientError } from './client-error.js';
import { newRequestId } from './request-id.js';
import type { DeleteResult, GetResult, IncrementResult } from './results.js';

/** A read fans out to every shard, so the count is bounded. */
export const maxCounterShards = 1_024;

/** One attempt of an increment waits at most this long before it is resent with the same id. */
const attemptTimeoutMs = 2_000;
/** Resends of one increment are bounded by the deadline, and by this. */
const maxIncrementAttempts = 10;
const resendBackoffMs = 50;
/** Failures worth another attempt while time is left (the client gave up on its attempt deadline). */
const transientCodes: ReadonlySet<string> = new Set(['NOT_LEADER', 'NO_LEADER', 'UNAVAILABLE', 'DEADLINE_EXCEEDED']);

export interface ShardedCounterOptions {
  /** How many keys (and buckets) to spread the counter over, 1 to 1,024. Readers must use the same or more. */
  readonly shards: number;
}

export interface ShardedIncrementOptions extends CallOptions {
  /**
   * Makes the increment idempotent across calls: the same id always picks the same shard, and
   * the cluster applies it once. Without one, a random id is used and resent internally while the
   * deadline allows; pass your own to be able to resend after the call itself failed.
   */
  readonly requestId?: string;
}

export interface ShardedReadOptions extends CallOptions {
  /** 'linearizable' (default) or 'stale' (any replica; may miss recent increments). */
  readonly consistency?: Consistency;
}

export interface ShardedIncrementResult {
  readonly shard: number;
  readonly key: string;
  readonly requestId: string;
  /** The shard's value after the increment (not the total: that takes a read). */
  readonly shardValue: bigint;
  readonly revision: number;
}

/** What the counter needs from AtollClient; declared here so this file does not import the client. */
export interface CounterStore {
  increment(key: string, delta: bigint, options: CallOptions & { readonly requestId: string }): Promise<IncrementResult>;
  get(key: string, options: CallOptions & { readonly consistency?: Consistency }): Promise<GetResult>;
  delete(key: string, options: CallOptions): Promise<DeleteResult>;
}

export class ShardedCounter {
  readonly name: string;
  /** The shard keys, shard i at index i. */
  readonly keys: readonly string[];

  constructor(
    private readonly store: CounterStore,
    name: string,
    options: ShardedCounterOptions,
    private readonly defaultTimeoutMs: number,
  ) {
    const shards = options.shards;
    if (!Number.isSafeInteger(shards) || shards < 1 || shards > maxCounterShards) {
      throw new AtollClientError('INVALID_ARGUMENT', `shards must be an integer from 1 to ${maxCounterShards}, got ${shards}`);
    }
    if (typeof name !== 'string' || name === '' || name.includes(bucketSeparator)) {
      throw new AtollClientError('INVALID_ARGUMENT', `a sharded counter's name must be non-empty and contain no "${bucketSeparator}"`);
    }
    this.name = name;
    this.keys = Object.freeze(Array.from({ length: shards }, (_, shard) => shardKey(name, shard)));
    // The longest key: throws KEY_TOO_LARGE for an overlong name, INVALID_KEY for U+0000 (reserved
    // for the tenant dimension; the server refuses it too, this only fails before any round trip).
    validateUserKey(this.keys[shards - 1]);
  }

  get shards(): number {
    return this.keys.length;
  }

  /** Adds `delta` (default 1) to one shard, exactly once, resending while the outcome is unknown. */
  async increment(delta: number | bigint = 1, options: ShardedIncrementOptions = {}): Promise<ShardedIncrementResult> {
    const requestId = options.requestId ?? newRequestId();
    const shard = fnv1a32(encodeUtf8(requestId)) % this.keys.length;
    const key = this.keys[shard] as string;
    const deadlineMs = deadlineMsOf(options, this.defaultTimeoutMs);
    const amount = typeof delta === 'bigint' ? delta : BigInt(checkSafeInteger(delta));
    let lastError: AtollClientError | undefined;
    let outcomeUnknown = false;
    for (let attempt = 0; attempt < maxIncrementAttempts && Date.now() < deadlineMs; attempt++) {
      if (attempt > 0) await sleep(Math.min(resendBackoffMs * attempt, Math.max(0, deadlineMs - Date.now())), options.signal);
      const attemptDeadlineMs = Math.min(deadlineMs, Date.now() + attemptTimeoutMs);
      try {
        const result = await this.store.increment(key, amount, { requestId, deadline: attemptDeadlineMs, ...(options.signal && { signal: options.signal }) });
        return { shard, key, requestId, shardValue: result.value, revision: result.revision };
      } catch (error) {
        // A definite failure after an unknown attempt (REQUEST_ID_EXPIRED: the id left the window)
        // does not make the call definite: the earlier attempt may have applied.
        if (!isAtollClientError(error) || !(error.indeterminate || transientCodes.has(error.code))) throw afterUnknownSend(error, outcomeUnknown);
        lastError = error;
        // Once any attempt may have applied, the call's outcome stays unknown whatever follows.
        outcomeUnknown ||= error.indeterminate;
      }
    }
    throw resendable(lastError, outcomeUnknown, requestId, key);
  }

  /** The total: every shard read (in parallel) and summed. A missing shard counts 0. */
  async read(options: ShardedReadOptions = {}): Promise<bigint> {
    const deadlineMs = deadlineMsOf(options, this.defaultTimeoutMs);
    const readOptions = { deadline: deadlineMs, ...(options.signal && { signal: options.signal }), ...(options.consistency && { consistency: options.consistency }) };
    const values = await Promise.all(this.keys.map(async (key) => shardValue(key, await this.store.get(key, readOptions))));
    return values.reduce((sum, value) => sum + value, 0n);
  }

  /** Deletes every shard (not atomically: increments running meanwhile may survive). */
  async reset(options: CallOptions = {}): Promise<void> {
    const deadlineMs = deadlineMsOf(options, this.defaultTimeoutMs);
    const deleteOptions = { deadline: deadlineMs, ...(options.signal && { signal: options.signal }) };
    await Promise.all(this.keys.map((key) => this.store.delete(key, deleteOptions)));
  }
}

export function shardKey(name: string, shard: number): string {
  return `${name}~${shard}~shard${bucketSeparator}count`;
}

function shardValue(key: string, result: GetResult): bigint {
  if (!result.found) return 0n;
  const text = result.text();
  if (!/^-?\d{1,20}$/.test(text)) throw new AtollClientError('NOT_INTEGER', `shard ${key} holds a value that is not an integer`);
  return BigInt(text);
}

function checkSafeInteger(delta: number): number {
  if (!Number.isSafeInteger(delta)) throw new AtollClientError('INVALID_ARGUMENT', `delta must be a safe integer or a bigint, got ${delta}`);
  return delta;
}

/** The last failure, saying whether any attempt may have applied and how to resend exactly once. */
function resendable(error: AtollClientError | undefined, outcomeUnknown: boolean, requestId: string, key: string): AtollClientError {
  const cause = error ?? new AtollError('DEADLINE_EXCEEDED', 'the deadline passed before the increment could be sent');
  const advice = outcomeUnknown ? 'it may or may not have applied: resend it with' : 'it did not apply; its';
  return new AtollClientError(cause.code, `${cause.message} (increment of ${key}: ${advice} requestId ${requestId})`, {
    ...(error !== undefined && { grpcStatusCode: error.grpcStatusCode }),
    indeterminate: outcomeUnknown,
    details: { ...cause.details, requestId, key },
  });
}
