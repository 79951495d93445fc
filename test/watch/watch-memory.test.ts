/**
 * The watch memory accounting (src/watch/watch-memory.ts) on a manual clock: bytes counted at the
 * stream, connection, tenant and node; refusals when a level is full; waiting for room; the
 * watchdog that cuts off a stream whose queued bytes are not written; and closing, which gives
 * every byte back.
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { watchChangeOverheadBytes } from '../../src/limits.js';
import { WatchMemory, watchChangeBytes, watchMessageBytes, watchReadReserveBytes } from '../../src/watch/watch-memory.js';
import { FakeTransport } from './fake-transport.js';

/** Timers that fire only when the test moves the clock. */
class ManualClock {
  nowMs = 0;
  private timers: Array<{ atMs: number; run: () => void; cancelled: boolean }> = [];

  after = (ms: number, run: () => void): { cancel(): void } => {
    const timer = { atMs: this.nowMs + ms, run, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  };

  advance(ms: number): void {
    const until = this.nowMs + ms;
    for (;;) {
      const due = this.timers.filter((t) => !t.cancelled && t.atMs <= until).sort((a, b) => a.atMs - b.atMs)[0];
      if (due === undefined) break;
      due.cancelled = true;
      this.nowMs = due.atMs;
      due.run();
    }
    this.nowMs = until;
  }
}

const KiB = 1024;
const bounds = { streamBytes: 100 * KiB, connectionBytes: 150 * KiB, tenantBytes: 200 * KiB, nodeBytes: 300 * KiB };

function memoryOf(clock = new ManualClock(), stallMs = 1_000): { memory: WatchMemory; clock: ManualClock } {
  return { memory: new WatchMemory({ bounds, stallMs, monotonicMs: () => clock.nowMs, after: clock.after }), clock };
}

function refusalOf(run: () => unknown): AtollError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AtollError);
    return error as AtollError;
  }
  throw new Error('expected a refusal');
}

describe('watch memory accounting', () => {
  it('estimates a message at no more than the changes it carries, and a read at its bounds', () => {
    const value = new Uint8Array(1000);
    const message = {
      revision: 7,
      progress: false,
      events: [
        { type: 'put' as const, key: 'ab/c', revision: 7, value, createRevision: 7, version: 1, expiresAtMs: 0, reason: '' as const },
        { type: 'delete' as const, key: 'ab/d', revision: 7, value: new Uint8Array(0), createRevision: 0, version: 0, expiresAtMs: 0, reason: 'deleted' as const },
      ],
    };
    const asChanges = watchChangeBytes(4, 1000) + watchChangeBytes(4, 0);
    expect(watchMessageBytes(message)).toBeGreaterThan(1008);
    expect(watchMessageBytes(message)).toBeLessThanOrEqual(asChanges);
    const progress: { revision: number; progress: boolean; events: [] } = { revision: 7, progress: true, events: [] };
    expect(watchMessageBytes(progress)).toBeGreaterThan(0);
    expect(watchReadReserveBytes({ maxChanges: 10, maxBytes: 5000 })).toBe(5000 + 10 * watchChangeOverheadBytes);
  });

  it('counts a take at every level and gives it back when written', () => {
    const { memory } = memoryOf();
    const transport = new FakeTransport('conn-1');
    const charge = memory.open('acme', transport, transport);
    expect(charge.tryTake(40 * KiB)).toBe(true);
    expect(memory.heldBytes).toBe(40 * KiB);
    expect(memory.heldByTenant('acme')).toBe(40 * KiB);
    const written = charge.sent(40 * KiB);
    expect(memory.heldBytes).toBe(40 * KiB);
    written();
    written();
    expect(memory.heldBytes).toBe(0);
    expect(charge.held).toBe(0);
    // A reservation given back is released at once; only what was not sent can be given back.
    expect(charge.tryTake(10 * KiB)).toBe(true);
    const half = charge.sent(4 * KiB);
    charge.release(10 * KiB);
    expect(charge.held).toBe(4 * KiB);
    half();
    expect(memory.heldBytes).toBe(0);
  });

  it('refuses a take past the stream, connection, tenant or node bound and says which', () => {
    const { memory } = memoryOf();
    const a = new FakeTransport('conn-1');
    const b = new FakeTransport('conn-1');
    const onA = memory.open('acme', a, a);
    // A stream holding nothing takes one item of any size; the next take finds the stream full.
    expect(onA.tryTake(120 * KiB)).toBe(true);
    expect(onA.tryTake(1)).toBe(false);
    expect(onA.blockedAt).toBe('stream');
    const onB = memory.open('acme', b, b);
    expect(onB.tryTake(40 * KiB)).toBe(false);
    expect(onB.blockedAt).toBe('connection');
    const c = new FakeTransport('conn-2');
    const onC = memory.open('acme', c, c);
    expect(onC.tryTake(90 * KiB)).toBe(false);
    expect(onC.blockedAt).toBe('tenant');
    const d = new FakeTransport('conn-3');
    const other = memory.open('other', d, d);
    expect(other.tryTake(90 * KiB)).toBe(true);
    const e = new FakeTransport('conn-4');
    const third = memory.open('third', e, e);
    expect(third.tryTake(95 * KiB)).toBe(false);
    expect(third.blockedAt).toBe('node');
    expect(memory.heldBytes).toBe(210 * KiB);
    expect(memory.heldBytes).toBeLessThanOrEqual(bounds.nodeBytes);
  });

  it('refuses a new watch while a level holds its bound or a watcher waits there for room, with reason watch-memory', async () => {
    const { memory } = memoryOf();
    const first = new FakeTransport('conn-1');
    const charge = memory.open('acme', first, first);
    expect(charge.tryTake(100 * KiB)).toBe(true);
    const second = new FakeTransport('conn-5');
    expect(memory.open('acme', second, second).tryTake(100 * KiB)).toBe(true);
    const full = new FakeTransport('conn-2');
    const refusal = refusalOf(() => memory.open('acme', full, full));
    expect(refusal.code).toBe('RESOURCE_EXHAUSTED');
    expect(refusal.details).toMatchObject({ reason: 'watch-memory', scope: 'tenant', heldBytes: 200 * KiB, limitBytes: 200 * KiB });
    expect(memory.refusals).toBe(1);
    // Another tenant is not refused; once acme is under its bound it is admitted again.
    memory.open('other', full, full).close();
    charge.release(50 * KiB);
    expect(memory.heldByTenant('acme')).toBe(150 * KiB);
    const again = memory.open('acme', full, full);
    // A watcher waiting for room makes its level full for new watches.
    expect(again.tryTake(60 * KiB)).toBe(false);
    const abort = new AbortController();
    const waiting = again.room(10_000, abort.signal);
    const third = new FakeTransport('conn-3');
    expect(refusalOf(() => memory.open('acme', third, third)).details?.['scope']).toBe('tenant');
    charge.release(20 * KiB);
    expect(await waiting).toBe(true);
    expect(again.tryTake(60 * KiB)).toBe(true);
    memory.open('acme', third, third).close();
  });

  it('wakes a waiter when its level releases, and times it out or aborts it otherwise', async () => {
    const { memory, clock } = memoryOf();
    const transport = new FakeTransport('conn-1');
    const charge = memory.open('acme', transport, transport);
    expect(charge.tryTake(100 * KiB)).toBe(true);
    expect(charge.tryTake(KiB)).toBe(false);
    const timedOut = charge.room(500, new AbortController().signal);
    clock.advance(500);
    expect(await timedOut).toBe(false);
    const abort = new AbortController();
    const aborted = charge.room(500, abort.signal);
    abort.abort();
    expect(await aborted).toBe(false);
    const woken = charge.room(500, new AbortController().signal);
    charge.sent(100 * KiB)();
    expect(await woken).toBe(true);
  });

  it('cuts off a stream whose queued bytes are not written for stallMs, and frees them when the transport closes', async () => {
    const { memory, clock } = memoryOf(new ManualClock(), 1_000);
    const transport = new FakeTransport('conn-1');
    const first = memory.open('acme', transport, transport);
    const second = memory.open('acme', transport, transport);
    expect(memory.openStreams).toBe(1);
    expect(first.tryTake(30 * KiB)).toBe(true);
    const writtenFirst = first.sent(30 * KiB);
    expect(second.tryTake(20 * KiB)).toBe(true);
    second.sent(20 * KiB);
    // Progress (a write) restarts the stall clock.
    clock.advance(900);
    writtenFirst();
    clock.advance(900);
    expect(transport.cutOffs).toBe(0);
    clock.advance(100);
    expect(transport.cutOffs).toBe(1);
    expect(memory.cutOffs).toBe(1);
    // Nothing is released before the transport lets go of the bytes.
    expect(memory.heldBytes).toBe(20 * KiB);
    const settled = second.settled();
    transport.close();
    await settled;
    expect(first.closed && second.closed).toBe(true);
    expect(memory.heldBytes).toBe(0);
    expect(memory.heldByTenant('acme')).toBe(0);
    expect(memory.openStreams).toBe(0);
    // A closed charge takes nothing.
    expect(second.tryTake(1)).toBe(false);
  });

  it('does not cut off a stream whose queue is empty or that writes, nor one without a transport', () => {
    const { memory, clock } = memoryOf(new ManualClock(), 1_000);
    const transport = new FakeTransport('conn-1');
    const charge = memory.open('acme', transport, transport);
    // Held but not queued (a reservation for a read): no watchdog.
    expect(charge.tryTake(10 * KiB)).toBe(true);
    clock.advance(5_000);
    expect(transport.cutOffs).toBe(0);
    for (let i = 0; i < 10; i++) {
      const written = charge.sent(KiB);
      clock.advance(600);
      written();
    }
    clock.advance(5_000);
    expect(transport.cutOffs).toBe(0);
    const sink = {};
    const local = memory.open('acme', sink, undefined);
    expect(local.tryTake(KiB)).toBe(true);
    local.sent(KiB);
    clock.advance(5_000);
    expect(memory.cutOffs).toBe(0);
  });

  it('closing a charge gives back what it holds and forgets levels nobody uses', () => {
    const { memory } = memoryOf();
    const transport = new FakeTransport('conn-1');
    const charge = memory.open('acme', transport, transport);
    expect(charge.tryTake(10 * KiB)).toBe(true);
    charge.sent(5 * KiB);
    charge.close();
    charge.close();
    expect(memory.heldBytes).toBe(0);
    expect(memory.openStreams).toBe(0);
    expect(transport.listening).toBe(0);
    // A stream that closed while a watch was being admitted closes the new charge at once.
    const closing = new FakeTransport('conn-2');
    const before = memory.open('acme', closing, closing);
    closing.close();
    expect(before.closed).toBe(true);
  });
});
