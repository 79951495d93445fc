/**
 * One periodic timer per node (issue 18, idle cost; src/node/shared-ticker.ts): the Raft tick, the
 * lease round, maintenance, the replica-move sweeps and the member-table refresh share one
 * interval, so an idle node's periodic work runs in one timer event per tick instead of one per job.
 */
import { describe, expect, it } from 'vitest';
import type { NodeTimers, TimerHandle } from '../../src/node/ports.js';
import { pino } from 'pino';
import { AtollNode } from '../../src/node/atoll-node.js';
import { systemClock, systemTimers, type TransportFactory } from '../../src/node/ports.js';
import { SharedTicker } from '../../src/node/shared-ticker.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';

/** Timers a test steps by hand: `every` intervals fire on advance(); counts what is armed. */
function manualTimers(): NodeTimers & { advance(ms: number): void; intervals: number; afters: number } {
  let now = 0;
  const intervals = new Set<{ intervalMs: number; next: number; run: () => void }>();
  const timers = {
    intervals: 0,
    afters: 0,
    every(intervalMs: number, run: () => void): TimerHandle {
      const entry = { intervalMs, next: now + intervalMs, run };
      intervals.add(entry);
      timers.intervals = intervals.size;
      return { cancel: () => { intervals.delete(entry); timers.intervals = intervals.size; } };
    },
    after(_delayMs: number, _run: () => void): TimerHandle {
      timers.afters++;
      return { cancel: () => undefined };
    },
    soon(run: () => void): void {
      run();
    },
    advance(ms: number): void {
      const end = now + ms;
      // Bounded: at most one firing per entry per millisecond stepped.
      for (let guard = 0; guard < 100_000; guard++) {
        let due: { intervalMs: number; next: number; run: () => void } | undefined;
        for (const entry of intervals) if (entry.next <= end && (due === undefined || entry.next < due.next)) due = entry;
        if (due === undefined) break;
        now = due.next;
        due.next += due.intervalMs;
        due.run();
      }
      now = end;
    },
  };
  return timers;
}

describe('SharedTicker', () => {
  it('runs every multiple-of-the-tick interval on one underlying interval, each at its own period', () => {
    const base = manualTimers();
    const ticker = new SharedTicker(base, 100);
    const runs = { tick: 0, lease: 0, sweep: 0 };
    const tick = ticker.every(100, () => runs.tick++);
    ticker.every(100, () => runs.lease++);
    const sweep = ticker.every(1_000, () => runs.sweep++);
    // Invariant: one underlying interval, armed while jobs are registered.
    expect(base.intervals).toBe(1);
    expect(ticker.armed).toBe(true);
    base.advance(2_000);
    expect(runs).toEqual({ tick: 20, lease: 20, sweep: 2 });
    expect(ticker.firings).toBe(20);
    tick.cancel();
    tick.cancel();
    base.advance(1_000);
    expect(runs).toEqual({ tick: 20, lease: 30, sweep: 3 });
    sweep.cancel();
    expect(ticker.jobCount).toBe(1);
    expect(base.intervals).toBe(1);
  });

  it('disarms the underlying interval when the last job is cancelled, and rearms on the next', () => {
    const base = manualTimers();
    const ticker = new SharedTicker(base, 50);
    const a = ticker.every(50, () => undefined);
    const b = ticker.every(200, () => undefined);
    a.cancel();
    expect(ticker.armed).toBe(true);
    b.cancel();
    expect(ticker.armed).toBe(false);
    expect(base.intervals).toBe(0);
    ticker.every(100, () => undefined);
    expect(base.intervals).toBe(1);
  });

  it('gives an interval that is not a whole multiple of the tick its own timer, and passes after/soon through', () => {
    const base = manualTimers();
    const ticker = new SharedTicker(base, 100);
    let odd = 0;
    ticker.every(150, () => odd++);
    ticker.every(30, () => undefined);
    expect(ticker.jobCount).toBe(0);
    expect(base.intervals).toBe(2);
    base.advance(300);
    expect(odd).toBe(2);
    ticker.after(10, () => undefined);
    expect(base.afters).toBe(1);
    let soon = false;
    ticker.soon(() => (soon = true));
    expect(soon).toBe(true);
  });

  it('a job that throws does not stop the others of its firing, nor its own later runs; the error is rethrown', () => {
    const base = manualTimers();
    const ticker = new SharedTicker(base, 100);
    let failing = 0;
    let other = 0;
    ticker.every(100, () => {
      failing++;
      throw new Error('job failed');
    });
    ticker.every(100, () => other++);
    expect(() => base.advance(100)).toThrow('job failed');
    expect([failing, other]).toEqual([1, 1]);
    expect(() => base.advance(100)).toThrow('job failed');
    expect([failing, other]).toEqual([2, 2]);
  });

  it('a job may cancel itself or register another while it runs', () => {
    const base = manualTimers();
    const ticker = new SharedTicker(base, 100);
    let self = 0;
    let added = 0;
    const handle: { h?: TimerHandle } = {};
    handle.h = ticker.every(100, () => {
      self++;
      handle.h?.cancel();
      ticker.every(100, () => added++);
    });
    base.advance(300);
    expect(self).toBe(1);
    expect(added).toBe(2);
  });
});

describe('a running node', () => {
  it('on a SharedTicker, holds ONE periodic interval for its tick, lease round, maintenance, sweeps and member refresh', async () => {
    // Live `every` intervals on the node's timers (each is a wake of its own for an idle process).
    let live = 0;
    let registered = 0;
    const timers: NodeTimers = {
      every(intervalMs, run) {
        live++;
        registered++;
        const handle = systemTimers.every(intervalMs, run);
        let cancelled = false;
        return { cancel: () => { if (!cancelled) { cancelled = true; live--; } handle.cancel(); } };
      },
      after: (delayMs, run) => systemTimers.after(delayMs, run),
      soon: (run) => systemTimers.soon(run),
    };
    const transport: TransportFactory = () => ({
      send: () => undefined,
      isReachable: () => false,
      forward: () => Promise.reject(new Error('no peers')),
      clusterInfo: () => Promise.reject(new Error('no peers')),
      close: () => undefined,
    });
    const node = await AtollNode.open(
      {
        id: 1,
        peers: new Map([[1, 'n1:1']]),
        dataDir: '/nonexistent/atoll-shared-ticker',
        partitions: 4,
        replicationFactor: 1,
        tickMs: 100,
        electionTicks: 10,
        retentionRevisions: 1_000,
        snapshotEveryEntries: 2_000,
        peerSecrets: ['p'.repeat(32)],
        logger: pino({ level: 'silent' }),
      },
      // As src/peer/grpc-node.ts wires a server's node.
      { transport, engine: new MemoryEngine(), clock: systemClock, timers: new SharedTicker(timers, 100), random: new Rng(7) },
    );
    try {
      // Every periodic job is a whole multiple of the tick, so all of them share one interval.
      // Without the shared ticker: one each for the Raft tick, the lease round, maintenance (two),
      // replica-moves' sweep and stranded check, and the member-table refresh: 7.
      expect(live).toBe(1);
      expect(registered).toBe(1);
    } finally {
      await node.close();
    }
    // Invariant: a closed node leaves no interval behind.
    expect(live).toBe(0);
  }, 30_000);
});
