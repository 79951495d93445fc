/**
 * The watch hub and watcher (src/watch) on a real MVCC store: revision order, exactly once across
 * the catch-up/tail boundary and the ring's edge, paged catch-up, overflow, the compaction floor,
 * expiry reasons, progress.
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { WatchHub } from '../../src/watch/watch-hub.js';
import { WatchMemory, watchReadReserveBytes } from '../../src/watch/watch-memory.js';
import { runWatcher, type WatchMessage, type WatchSink, type WatchSource, type WatchTarget, type WatcherOptions } from '../../src/watch/watcher.js';
import { memoryEngineKind, Partition, startMs, text } from '../mvcc/harness.js';

const after = (ms: number, run: () => void): { cancel(): void } => {
  const timer = setTimeout(run, ms);
  return { cancel: () => clearTimeout(timer) };
};

function sourceOf(partition: Partition, ring = { maxChanges: 10_000, maxBytes: 1 << 24 }): WatchSource {
  const hub = new WatchHub(partition.store.revision, ring);
  partition.store.setCommitListener((revision, changes) => hub.publish(revision, changes));
  return {
    hub,
    revision: () => partition.store.revision,
    changesSince: (target, from, bounds) => partition.store.changesSince(target, from, bounds),
    checkLeader: () => undefined,
  };
}

/** A sink that records messages; `blocked` makes it report a full buffer until `release`. */
class RecordingSink implements WatchSink {
  readonly messages: WatchMessage[] = [];
  blocked = false;
  neverDrains = false;
  private drainWaiters: Array<() => void> = [];

  write(message: WatchMessage): boolean {
    this.messages.push(message);
    return !this.blocked && !this.neverDrains;
  }

  drained(ms: number): Promise<boolean> {
    if (this.neverDrains) return new Promise((resolve) => setTimeout(() => resolve(false), ms));
    if (!this.blocked) return Promise.resolve(true);
    return new Promise((resolve) => this.drainWaiters.push(() => resolve(true)));
  }

  release(): void {
    this.blocked = false;
    for (const wake of this.drainWaiters.splice(0)) wake();
  }

  /** "revision:type:key[:reason]" for every event, in the order received. */
  events(): string[] {
    return this.messages.flatMap((m) => m.events.map((e) => `${e.revision}:${e.type}:${e.key}${e.reason === 'expired' ? ':expired' : ''}`));
  }
}

function options(target: WatchTarget, startRevision: number, signal: AbortSignal, extra: Partial<WatcherOptions> = {}): WatcherOptions {
  return {
    target,
    startRevision,
    progressIntervalMs: 20,
    stallMs: 200,
    readBounds: { maxChanges: 1000, maxBytes: 1 << 22 },
    userKey: (key) => key,
    monotonicMs: () => performance.now(),
    after,
    signal,
    ...extra,
  };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The committed history of `prefix`, from the store, as the watcher should report it. */
async function expectedHistory(partition: Partition, keyPrefix: string, from: number): Promise<string[]> {
  const { changes } = await partition.store.changesSince({ keyPrefix }, from, { maxChanges: 100_000, maxBytes: 1 << 30 });
  return changes.map((c) => `${c.revision}:${c.stored.kind === 'value' ? 'put' : 'delete'}:${c.key}${c.stored.kind === 'tombstone' && c.stored.expired ? ':expired' : ''}`);
}

/** Writes to `s/` (watched) and `other/` (not), with a batch revision touching two watched keys. */
async function writeSome(partition: Partition, round: number): Promise<void> {
  await partition.put(`s/${round % 3}`, `v${round}`);
  await partition.put(`other/${round}`, 'x');
  await partition.applyOk({ type: 'batch', writes: [{ type: 'put', key: `s/b${round}`, value: text('1') }, { type: 'put', key: `s/c${round}`, value: text('2') }] });
  if (round % 2 === 0) await partition.applyOk({ type: 'delete', key: `s/${round % 3}` });
}

describe('watcher', () => {
  it('delivers every change after the start revision once, in order, across the catch-up/tail boundary', async () => {
    const partition = await Partition.create(memoryEngineKind);
    for (let round = 0; round < 10; round++) await writeSome(partition, round);
    const source = sourceOf(partition);
    const sink = new RecordingSink();
    const abort = new AbortController();
    const start = 5;
    const running = runWatcher(source, sink, options({ keyPrefix: 's/' }, start, abort.signal));
    // Writes while the watcher catches up and after: the boundary is the cursor.
    for (let round = 10; round < 30; round++) {
      await writeSome(partition, round);
      if (round % 5 === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const expected = await expectedHistory(partition, 's/', start);
    await until(() => sink.events().length >= expected.length, 'all events');
    abort.abort();
    await running;
    expect(sink.events()).toEqual(expected);
    // One message per revision, revisions strictly increasing, the batch's two keys in one message.
    const revisions = sink.messages.filter((m) => !m.progress).map((m) => m.revision);
    expect([...revisions].sort((a, b) => a - b)).toEqual(revisions);
    expect(new Set(revisions).size).toBe(revisions.length);
    expect(sink.messages.some((m) => m.events.length === 2)).toBe(true);
    expect(sink.events().every((e) => !e.includes('other/'))).toBe(true);
  });

  it('never holds the loop when the store is ahead of a hub nobody told (a move of the store without a commit)', async () => {
    const partition = await Partition.create(memoryEngineKind);
    for (let round = 0; round < 5; round++) await writeSome(partition, round);
    const source = sourceOf(partition);
    // Later writes reach the store but not the hub: the hub stays behind, as a merge or an install
    // without its reset would leave it (issue 32). The old watcher asked the hub again and again.
    partition.store.setCommitListener(undefined);
    let synchronousRounds = 0;
    let spun = false;
    const turn = setInterval(() => {
      synchronousRounds = 0;
    }, 1);
    const guarded: WatchSource = {
      ...source,
      checkLeader: () => {
        // Thousands of rounds without one timer turn: the watcher never awaited anything real.
        if (++synchronousRounds > 10_000) {
          spun = true;
          throw new AtollError('INTERNAL', 'the watcher spun without yielding');
        }
      },
    };
    const sink = new RecordingSink();
    const abort = new AbortController();
    const start = partition.store.revision;
    const running = runWatcher(guarded, sink, options({ keyPrefix: 's/' }, start, abort.signal, { leaderCheckMs: 10 }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (let round = 5; round < 8; round++) await writeSome(partition, round);
    const expected = await expectedHistory(partition, 's/', start);
    await until(() => sink.events().length >= expected.length || spun, 'the events');
    abort.abort();
    clearInterval(turn);
    await running;
    expect(spun).toBe(false);
    expect(sink.events()).toEqual(expected);
  });

  it('re-reads the store when it falls behind the ring, and pages a long catch-up at whole revisions', async () => {
    const partition = await Partition.create(memoryEngineKind);
    const source = sourceOf(partition, { maxChanges: 3, maxBytes: 1 << 20 });
    const sink = new RecordingSink();
    const abort = new AbortController();
    const running = runWatcher(source, sink, options({ keyPrefix: 's/' }, 0, abort.signal, { readBounds: { maxChanges: 1, maxBytes: 1 << 20 } }));
    await writeSome(partition, 0);
    await until(() => sink.events().length >= 4, 'first events');
    sink.blocked = true; // the client stops reading: the ring moves on without it
    for (let round = 1; round < 15; round++) await writeSome(partition, round);
    expect(source.hub.floor).toBeGreaterThan(10);
    sink.release();
    const expected = await expectedHistory(partition, 's/', 0);
    await until(() => sink.events().length >= expected.length, 'all events');
    abort.abort();
    await running;
    expect(sink.events()).toEqual(expected);
  });

  it('cancels a watcher whose client stops reading with WATCH_OVERFLOW and the revision to resume after', async () => {
    const partition = await Partition.create(memoryEngineKind);
    const source = sourceOf(partition);
    const sink = new RecordingSink();
    sink.neverDrains = true;
    const abort = new AbortController();
    await writeSome(partition, 0);
    const error = await runWatcher(source, sink, options({ keyPrefix: 's/' }, 0, abort.signal)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtollError);
    expect((error as AtollError).code).toBe('WATCH_OVERFLOW');
    expect((error as AtollError).details?.['resumeRevision']).toBe(sink.messages[0]!.revision);
  });

  it('refuses a start revision below the compaction floor with COMPACTED and the floor', async () => {
    const partition = await Partition.create(memoryEngineKind);
    for (let round = 0; round < 4; round++) await writeSome(partition, round);
    await partition.applyOk({ type: 'compact', belowRevision: 8 });
    const abort = new AbortController();
    const error = await runWatcher(sourceOf(partition), new RecordingSink(), options({ keyPrefix: 's/' }, 3, abort.signal)).catch((e: unknown) => e);
    expect((error as AtollError).code).toBe('COMPACTED');
    expect((error as AtollError).details?.['compactedRevision']).toBe(8);
    // At the floor itself the history is complete.
    const sink = new RecordingSink();
    const running = runWatcher(sourceOf(partition), sink, options({ keyPrefix: 's/' }, 8, abort.signal));
    const expected = await expectedHistory(partition, 's/', 8);
    await until(() => sink.events().length >= expected.length, 'events above the floor');
    abort.abort();
    await running;
    expect(sink.events()).toEqual(expected);
  });

  it('reports an expiry as a delete with reason expired, from the ring and from the store, and sends progress', async () => {
    const partition = await Partition.create(memoryEngineKind);
    const source = sourceOf(partition);
    const sink = new RecordingSink();
    const abort = new AbortController();
    const running = runWatcher(source, sink, options({ key: 's/ttl' }, 0, abort.signal, { progress: true }));
    await partition.put('s/ttl', 'x', { ttlMs: 1000 });
    await partition.put('s/ttl2', 'y');
    partition.nowMs = startMs + 5000;
    await partition.applyOk({ type: 'expire', keys: ['s/ttl'] });
    await until(() => sink.events().length >= 2, 'the expiry');
    const revision = partition.store.revision;
    await until(() => sink.messages.some((m) => m.progress && m.revision === revision), 'a progress message at the current revision');
    abort.abort();
    await running;
    expect(sink.events()).toEqual([`1:put:s/ttl`, `${revision}:delete:s/ttl:expired`]);
    // A late watcher reads the same from the store's history.
    const late = new RecordingSink();
    const lateAbort = new AbortController();
    const lateRun = runWatcher(sourceOf(partition), late, options({ key: 's/ttl' }, 0, lateAbort.signal));
    await until(() => late.events().length >= 2, 'history');
    lateAbort.abort();
    await lateRun;
    expect(late.events()).toEqual(sink.events());
  });
});

/** A sink that keeps each message's `written` callback until the test lets the "transport" write. */
class HeldSink implements WatchSink {
  readonly messages: WatchMessage[] = [];
  readonly pending: Array<() => void> = [];
  peakHeld = 0;
  constructor(private readonly memory: WatchMemory) {}
  write(message: WatchMessage, written?: () => void): boolean {
    this.messages.push(message);
    if (written !== undefined) this.pending.push(written);
    this.peakHeld = Math.max(this.peakHeld, this.memory.heldBytes);
    return true;
  }
  drained(): Promise<boolean> {
    return Promise.resolve(true);
  }
  flush(): void {
    for (const written of this.pending.splice(0)) written();
  }
  events(): number {
    return this.messages.reduce((sum, m) => sum + m.events.length, 0);
  }
}

describe('watcher with a byte budget', () => {
  const KiB = 1024;
  const readBounds = { maxChanges: 8, maxBytes: 40_000 };
  const memoryOf = (bytes: number, stallMs: number): WatchMemory =>
    new WatchMemory({ bounds: { streamBytes: bytes, connectionBytes: bytes, tenantBytes: bytes, nodeBytes: 4 * bytes }, stallMs, monotonicMs: () => performance.now(), after });

  it('holds at most its bounds (one read reserved, messages until written), and nothing once all is written', async () => {
    const partition = await Partition.create(memoryEngineKind);
    for (let i = 0; i < 40; i++) await partition.put(`s/k${i}`, 'x'.repeat(10_000));
    const memory = memoryOf(64 * KiB, 5_000);
    expect(64 * KiB).toBeGreaterThan(watchReadReserveBytes(readBounds));
    const sink = new HeldSink(memory);
    const charge = memory.open('acme', sink, undefined);
    const abort = new AbortController();
    const running = runWatcher(sourceOf(partition), sink, options({ keyPrefix: 's/' }, 0, abort.signal, { readBounds, stallMs: 5_000, budget: charge }));
    // The "transport" writes only when the test says so. Until it does, the watcher holds one read
    // (three 10 KB values: the read's byte bound cuts the fourth) and no room is left for another.
    await until(() => sink.events() === 3, 'the first read');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sink.events()).toBe(3);
    expect(memory.heldBytes).toBeGreaterThan(30_000);
    for (let round = 0; round < 200 && sink.events() < 40; round++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(memory.heldBytes).toBeLessThanOrEqual(64 * KiB);
      sink.flush();
    }
    expect(sink.events()).toBe(40);
    expect(sink.peakHeld).toBeLessThanOrEqual(64 * KiB);
    abort.abort();
    await running;
    sink.flush();
    expect(charge.held).toBe(0);
    expect(memory.heldBytes).toBe(0);
  });

  it('leaves nothing taken but what it queued when it is aborted while waiting for room', async () => {
    const partition = await Partition.create(memoryEngineKind);
    const memory = memoryOf(64 * KiB, 5_000);
    const sink = new HeldSink(memory);
    const charge = memory.open('acme', sink, undefined);
    const abort = new AbortController();
    const running = runWatcher(sourceOf(partition), sink, options({ keyPrefix: 's/' }, partition.store.revision, abort.signal, { readBounds, stallMs: 5_000, budget: charge }));
    // Changes from the ring, each taken anew: the stream fills and the watcher waits for room.
    for (let i = 0; i < 10; i++) await partition.put(`s/k${i}`, 'x'.repeat(20_000));
    await until(() => sink.events() >= 2, 'the stream to fill');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const queued = sink.events();
    expect(queued).toBeLessThan(10);
    abort.abort();
    await running;
    expect(sink.events()).toBe(queued);
    sink.flush();
    expect(charge.held).toBe(0);
    expect(memory.heldBytes).toBe(0);
  });

  it('ends with WATCH_OVERFLOW (slow-consumer) when its stream stays full, and refuses a new watch whose tenant is full', async () => {
    const partition = await Partition.create(memoryEngineKind);
    for (let i = 0; i < 20; i++) await partition.put(`s/k${i}`, 'x'.repeat(10_000));
    const memory = memoryOf(64 * KiB, 100);
    // The client reads nothing: its stream fills, then the watcher waits for room in vain.
    const stalled = new HeldSink(memory);
    const error = await runWatcher(sourceOf(partition), stalled, options({ keyPrefix: 's/' }, 0, new AbortController().signal, { readBounds, stallMs: 100, budget: memory.open('acme', stalled, undefined) })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtollError);
    expect((error as AtollError).details).toMatchObject({ reason: 'slow-consumer', resumeRevision: stalled.messages.at(-1)!.revision });
    expect(memory.heldBytes).toBeLessThanOrEqual(64 * KiB);
    // Another watch of the tenant, admitted before the first filled it: its first read finds no
    // room, so it is refused at once, as at admission (it is past the bound), progress or not.
    const other = new HeldSink(memory);
    const budget = memory.open('acme', other, undefined);
    const startedMs = performance.now();
    const blocked = await runWatcher(sourceOf(partition), other, options({ keyPrefix: 's/' }, 3, new AbortController().signal, { readBounds, stallMs: 5_000, progress: true, budget })).catch((e: unknown) => e);
    expect(performance.now() - startedMs).toBeLessThan(2_000);
    expect((blocked as AtollError).code).toBe('RESOURCE_EXHAUSTED');
    expect((blocked as AtollError).details).toMatchObject({ reason: 'watch-memory', scope: 'tenant' });
    expect(other.messages.filter((m) => !m.progress)).toHaveLength(0);
    other.flush();
    budget.close();
    stalled.flush();
    expect(memory.heldBytes).toBe(0);
  });
});

describe('watch hub', () => {
  it('keeps whole revisions within its bounds and forgets everything across a revision jump', () => {
    const hub = new WatchHub(0, { maxChanges: 3, maxBytes: 1 << 20 });
    const value = { kind: 'value' as const, createRevision: 1, version: 1, value: text('v') };
    hub.publish(1, [{ key: 'a', stored: value }, { key: 'b', stored: value }]);
    hub.publish(2, [{ key: 'c', stored: value }, { key: 'd', stored: value }]);
    // Revision 1 went whole: the ring holds (1, 2].
    expect([hub.floor, hub.top, hub.size]).toEqual([1, 2, 2]);
    expect(hub.since(0)).toBeUndefined();
    expect(hub.since(1)?.changes.map((c) => c.key)).toEqual(['c', 'd']);
    hub.publish(7, [{ key: 'e', stored: value }]);
    expect([hub.floor, hub.top, hub.size]).toEqual([6, 7, 1]);
    expect(hub.since(2)).toBeUndefined();
    expect(hub.since(8)).toBeUndefined();
  });
});
