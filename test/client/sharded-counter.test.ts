/**
 * ShardedCounter over a scripted in-memory store: shard keys (one bucket each, injective), the
 * request-id-to-shard rule that makes resends exactly-once, resending after unknown outcomes,
 * errors that must not be resent, and reads and resets over every shard. The three-node version
 * (a leader killed mid-run) is test/integration/hotkeys.test.ts.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  AtollClient,
  AtollClientError,
  maxCounterShards,
  ShardedCounter,
  type ShardedIncrementResult,
  type ShardedReadOptions,
} from '../../src/client/index.js';
import type { CallOptions } from '../../src/client/call-options.js';
import { shardKey, type CounterStore } from '../../src/client/sharded-counter.js';
import type { GetResult } from '../../src/client/results.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { partitionOf } from '../../src/keys/partition-table.js';

type Failure = AtollClientError | undefined;

/** Counters with a dedup table, like the cluster's; `failures` are thrown by the next increments. */
class FakeStore implements CounterStore {
  readonly values = new Map<string, bigint>();
  readonly applied = new Map<string, bigint>();
  readonly calls: { key: string; requestId: string; deadline: unknown }[] = [];
  readonly reads: { key: string; consistency: unknown }[] = [];
  /** Per increment call: throw this before applying, or (with `afterApply`) after. */
  failures: { error: Failure; afterApply?: boolean }[] = [];

  async increment(key: string, delta: bigint, options: CallOptions & { readonly requestId: string }) {
    this.calls.push({ key, requestId: options.requestId, deadline: options.deadline });
    const failure = this.failures.shift();
    if (failure?.error && !failure.afterApply) throw failure.error;
    let value = this.applied.get(options.requestId);
    if (value === undefined) {
      value = (this.values.get(key) ?? 0n) + delta;
      this.values.set(key, value);
      this.applied.set(options.requestId, value);
    }
    if (failure?.error) throw failure.error;
    return { value, revision: 1 };
  }

  async get(key: string, options: CallOptions & { readonly consistency?: string }): Promise<GetResult> {
    this.reads.push({ key, consistency: options.consistency });
    const value = this.values.get(key);
    const text = value === undefined ? '' : value.toString();
    return { found: value !== undefined, value: new TextEncoder().encode(text), text: () => text, createRevision: 0, modRevision: 0, version: 0, expiresAtMs: 0, revision: 1 };
  }

  async delete(key: string) {
    return { deleted: this.values.delete(key), revision: 1 };
  }
}

const timedOut = (): AtollClientError => new AtollClientError('DEADLINE_EXCEEDED', 'no answer', { indeterminate: true });
const noLeader = (): AtollClientError => new AtollClientError('NO_LEADER', 'electing');

describe('ShardedCounter', () => {
  it('puts shard i of counter NAME at NAME~i~shard/count, one bucket per shard, injectively', () => {
    const counter = new ShardedCounter(new FakeStore(), 'visits', { shards: 4 }, 1_000);
    expect(counter.keys).toEqual(['visits~0~shard/count', 'visits~1~shard/count', 'visits~2~shard/count', 'visits~3~shard/count']);
    expect(new Set(counter.keys.map(bucketOf)).size).toBe(4);
    // Names containing "~" and digits cannot produce another counter's shard.
    expect(shardKey('a~1', 2)).not.toBe(shardKey('a', 12));
    expect(shardKey('a~1', 2)).toBe('a~1~2~shard/count');
  });

  it('spreads shards over partitions like independent hashes (not all in one, as last-byte suffixes would)', () => {
    const names = Array.from({ length: 200 }, (_, i) => `counter-${i}`);
    // Under the old hash too (clusters created before murmur3_32 keep fnv1a32), whose weakness is last-byte suffixes.
    for (const hash of ['fnv1a32', 'murmur3_32'] as const) {
      let occupied = 0;
      for (const name of names) occupied += new Set(Array.from({ length: 8 }, (_, shard) => partitionOf(shardKey(name, shard), 64, hash))).size;
      // Independent hashing gives 64 * (1 - (63/64)^8) = 7.58 partitions on average.
      expect(occupied / names.length).toBeGreaterThan(7.2);
    }
    expect(new Set(Array.from({ length: 8 }, (_, shard) => partitionOf(`likes~${shard}/count`, 64, 'fnv1a32'))).size).toBeLessThan(4);
  });

  it('refuses bad names and shard counts', () => {
    const store = new FakeStore();
    expect(() => new ShardedCounter(store, 'a/b', { shards: 2 }, 1_000)).toThrow(/contain no "\/"/);
    expect(() => new ShardedCounter(store, '', { shards: 2 }, 1_000)).toThrow(AtollClientError);
    expect(() => new ShardedCounter(store, 'a', { shards: 0 }, 1_000)).toThrow(/shards/);
    expect(() => new ShardedCounter(store, 'a', { shards: maxCounterShards + 1 }, 1_000)).toThrow(/shards/);
    expect(() => new ShardedCounter(store, 'a', { shards: 1.5 }, 1_000)).toThrow(/shards/);
    expect(() => new ShardedCounter(store, 'x'.repeat(5_000), { shards: 2 }, 1_000)).toThrow(expect.objectContaining({ code: 'KEY_TOO_LARGE' }));
  });

  it('sends an increment to the shard its request id picks, with that id, and spreads random ids', async () => {
    const store = new FakeStore();
    const counter = new ShardedCounter(store, 'c', { shards: 8 }, 1_000);
    const first = await counter.increment(5, { requestId: 'fixed-id' });
    const again = await counter.increment(5, { requestId: 'fixed-id' });
    expect(again).toEqual(first);
    expect(store.calls.map((call) => [call.key, call.requestId])).toEqual([
      [first.key, 'fixed-id'],
      [first.key, 'fixed-id'],
    ]);
    for (let i = 0; i < 400; i++) await counter.increment();
    expect(new Set(store.calls.map((call) => call.key)).size).toBe(8);
    expect(await counter.read()).toBe(405n);
  });

  it('resends an increment whose outcome is unknown with the same id, applying it once', async () => {
    const store = new FakeStore();
    const counter = new ShardedCounter(store, 'c', { shards: 4 }, 5_000);
    store.failures = [{ error: timedOut(), afterApply: true }, { error: noLeader() }, { error: undefined }];
    const result = await counter.increment(3);
    expect(store.calls).toHaveLength(3);
    expect(new Set(store.calls.map((call) => call.requestId))).toEqual(new Set([result.requestId]));
    expect(result.shardValue).toBe(3n);
    expect(await counter.read()).toBe(3n);
  });

  it('fails as indeterminate, naming the id to resend, when the deadline ends after an unknown outcome', async () => {
    const store = new FakeStore();
    const counter = new ShardedCounter(store, 'c', { shards: 4 }, 5_000);
    store.failures = Array.from({ length: 20 }, (_, i) => ({ error: i === 0 ? timedOut() : noLeader(), afterApply: i === 0 }));
    const error = (await counter.increment(2, { requestId: 'r-1', timeoutMs: 300 }).catch((e: unknown) => e)) as AtollClientError;
    expect(error).toBeInstanceOf(AtollClientError);
    expect(error.code).toBe('NO_LEADER');
    expect(error.indeterminate).toBe(true);
    expect(error.details).toMatchObject({ requestId: 'r-1' });
    expect(error.message).toMatch(/resend it with requestId r-1/);
    store.failures = [];
    await counter.increment(2, { requestId: 'r-1' }); // the resend: already applied, not again
    expect(await counter.read()).toBe(2n);
  });

  it('says "did not apply" when every attempt certainly failed, and never resends a definite error', async () => {
    const store = new FakeStore();
    const counter = new ShardedCounter(store, 'c', { shards: 2 }, 5_000);
    store.failures = Array.from({ length: 20 }, () => ({ error: noLeader() }));
    const unavailable = (await counter.increment(1, { timeoutMs: 200 }).catch((e: unknown) => e)) as AtollClientError;
    expect(unavailable.indeterminate).toBe(false);
    expect(unavailable.message).toMatch(/did not apply/);
    store.failures = [{ error: new AtollClientError('OVERFLOW', 'too big') }];
    const calls = store.calls.length;
    await expect(counter.increment(1)).rejects.toMatchObject({ code: 'OVERFLOW' });
    expect(store.calls.length).toBe(calls + 1);
    await expect(counter.increment(0.5)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('reads every shard (missing ones as 0, with the asked consistency), refuses non-integers, and resets', async () => {
    const store = new FakeStore();
    const counter = new ShardedCounter(store, 'c', { shards: 3 }, 1_000);
    store.values.set(counter.keys[0]!, 9_223_372_036_854_775_807n);
    store.values.set(counter.keys[2]!, 5n);
    expect(await counter.read({ consistency: 'stale' })).toBe(9_223_372_036_854_775_812n);
    expect(store.reads.map((read) => read.consistency)).toEqual(['stale', 'stale', 'stale']);
    await counter.reset();
    expect(await counter.read()).toBe(0n);
    store.get = async () => ({ found: true, value: new Uint8Array(), text: () => 'abc', createRevision: 0, modRevision: 0, version: 0, expiresAtMs: 0, revision: 1 });
    await expect(counter.read()).rejects.toMatchObject({ code: 'NOT_INTEGER' });
  });

  it('is what client.shardedCounter returns', () => {
    const client = new AtollClient({ endpoints: ['127.0.0.1:1'] });
    const counter = client.shardedCounter('hits', { shards: 2 });
    client.close();
    expect(counter).toBeInstanceOf(ShardedCounter);
    expectTypeOf(counter.increment).returns.resolves.toEqualTypeOf<ShardedIncrementResult>();
    expectTypeOf(counter.read).returns.resolves.toEqualTypeOf<bigint>();
    expectTypeOf(counter.read).parameter(0).toEqualTypeOf<ShardedReadOptions | undefined>();
  });
});
