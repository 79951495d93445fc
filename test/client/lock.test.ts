/**
 * The lock recipe (src/client/lock.ts) over an in-memory fake of the calls it makes: waiters are
 * served in arrival order; a waiter that leaves the line (abort) is skipped without letting a
 * later one jump ahead of the holder; a compacted watch start makes the waiter read again instead
 * of failing; the test-only testGrantWithoutWaiting (the chaos control) grants at once.
 */
import { describe, expect, it } from 'vitest';
import { acquireLock, type HeldLock, type LockClient } from '../../src/client/lock.js';
import { Lease } from '../../src/client/lease.js';
import type { KeyEntry, PrefixPage } from '../../src/client/results.js';
import { AtollError } from '../../src/errors.js';
import type { LeaseRequest, LeaseResponse, WatchEvent } from '../../src/api/node-api.js';

class FakeStore implements LockClient {
  revision = 0;
  /** Live keys and their create revisions. */
  readonly keys = new Map<string, number>();
  private readonly deleteWaiters = new Map<string, Array<() => void>>();
  private nextLease = 1;
  compactNextWatch = false;
  watches = 0;

  private readonly transport = {
    call: async (request: LeaseRequest): Promise<LeaseResponse> => {
      const lease = request.lease ?? `0.${this.nextLease++}`;
      if (request.action === 'revoke') for (const key of [...this.keys.keys()]) if (key.endsWith(`/${lease}`)) this.delete(key);
      return { lease, ttlMs: 60_000, ttlLeftMs: 60_000, keys: [], revision: this.revision };
    },
  };

  async lease(ttlMs: number): Promise<Lease> {
    return new Lease(this.transport, ttlMs);
  }

  async put(key: string): Promise<{ applied: boolean; revision: number }> {
    if (this.keys.has(key)) return { applied: false, revision: this.revision };
    this.keys.set(key, ++this.revision);
    return { applied: true, revision: this.revision };
  }

  async getByPrefix(prefix: string): Promise<PrefixPage> {
    const items = [...this.keys].filter(([key]) => key.startsWith(prefix)).map(([key, createRevision]) => ({ key, createRevision }) as unknown as KeyEntry);
    return { items, revision: this.revision, nextPageToken: '' };
  }

  delete(key: string): void {
    if (!this.keys.delete(key)) return;
    this.revision++;
    for (const wake of this.deleteWaiters.get(key) ?? []) wake();
    this.deleteWaiters.delete(key);
  }

  async *watch(key: string, options: { signal: AbortSignal }): AsyncGenerator<WatchEvent> {
    this.watches++;
    if (this.compactNextWatch) {
      this.compactNextWatch = false;
      throw new AtollError('COMPACTED', 'compacted');
    }
    if (this.keys.has(key)) {
      await new Promise<void>((resolve) => {
        const list = this.deleteWaiters.get(key) ?? [];
        list.push(resolve);
        this.deleteWaiters.set(key, list);
        options.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    if (options.signal.aborted) return;
    yield { type: 'delete', key, revision: this.revision, value: new Uint8Array(), createRevision: 0, version: 0, expiresAtMs: 0, reason: 'lease' };
  }
}

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 10));

function track(promise: Promise<HeldLock>, order: string[], name: string): Promise<HeldLock> {
  return promise.then((held) => {
    order.push(name);
    return held;
  });
}

describe('client.lock (the recipe)', () => {
  it('serves waiters in arrival order with increasing tokens', async () => {
    const store = new FakeStore();
    const order: string[] = [];
    const first = await acquireLock(store, 'job');
    expect(first.key).toBe('locks/job/0.1');
    const second = track(acquireLock(store, 'job'), order, 'second');
    await tick();
    const third = track(acquireLock(store, 'job'), order, 'third');
    await tick();
    expect(order).toEqual([]);
    await first.unlock();
    const held2 = await second;
    await tick();
    expect(order).toEqual(['second']);
    await held2.unlock();
    const held3 = await third;
    expect(order).toEqual(['second', 'third']);
    expect([first.fencingToken, held2.fencingToken, held3.fencingToken]).toEqual([1, 2, 3]);
    expect(held3.grantRevision).toBeGreaterThan(held2.grantRevision);
    await held3.unlock();
    expect(store.keys.size).toBe(0);
  });

  it('skips a waiter that leaves the line, but never past the holder', async () => {
    const store = new FakeStore();
    const order: string[] = [];
    const holder = await acquireLock(store, 'job');
    const abort = new AbortController();
    const leaving = acquireLock(store, 'job', { signal: abort.signal });
    await tick();
    const last = track(acquireLock(store, 'job'), order, 'last');
    await tick();
    abort.abort(new Error('gave up'));
    await expect(leaving).rejects.toThrow('gave up');
    await tick();
    // The waiter behind it now waits for the holder.
    expect(order).toEqual([]);
    expect([...store.keys.keys()]).toEqual(['locks/job/0.1', 'locks/job/0.3']);
    await holder.unlock();
    expect((await last).fencingToken).toBe(3);
  });

  it('reads the waiters again when the watch start was compacted', async () => {
    const store = new FakeStore();
    const holder = await acquireLock(store, 'job');
    store.compactNextWatch = true;
    const waiting = acquireLock(store, 'job');
    await tick();
    expect(store.watches).toBe(2);
    await holder.unlock();
    expect((await waiting).fencingToken).toBe(2);
  });

  it('testGrantWithoutWaiting grants at once (the negative control)', async () => {
    const store = new FakeStore();
    await acquireLock(store, 'job');
    const broken = await acquireLock(store, 'job', { testGrantWithoutWaiting: true });
    expect(broken.grantRevision).toBe(broken.fencingToken);
  });
});
