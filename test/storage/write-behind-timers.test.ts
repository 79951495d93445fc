import { describe, expect, it } from 'vitest';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { WriteBehindEngine, type FlushTimers } from '../../src/storage/write-behind-engine.js';

/** Timers a test fires by hand, as the whole-node simulator fires them in virtual time. */
class ManualTimers implements FlushTimers {
  readonly pending: Array<{ delayMs: number; run: () => void; cancelled: boolean }> = [];
  after(delayMs: number, run: () => void): { cancel(): void } {
    const timer = { delayMs, run, cancelled: false };
    this.pending.push(timer);
    return { cancel: () => (timer.cancelled = true) };
  }
  fireAll(): void {
    for (const timer of this.pending.splice(0)) if (!timer.cancelled) timer.run();
  }
}

const key = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('WriteBehindEngine with injected timers', () => {
  it('flushes an unsynced write when its injected timer fires, and not before, whatever real time passes', async () => {
    const below = new MemoryEngine();
    const timers = new ManualTimers();
    const engine = new WriteBehindEngine(below, { timers, flushDelayMs: 5 });
    await engine.write([{ type: 'put', key: key('a'), value: key('1') }]);
    expect(timers.pending.map((timer) => timer.delayMs)).toEqual([5]);
    await new Promise((resolve) => setTimeout(resolve, 30));
    // Still only in the layer: a real timer would have written it below by now.
    expect(below.getSync(key('a'))).toBeUndefined();
    timers.fireAll();
    await engine.flush();
    expect(below.getSync(key('a'))).toEqual(key('1'));
    expect(below.unsyncedBatchCount).toBe(1);
  });

  it('cancels the pending flush timer when a synced write takes the layer', async () => {
    const below = new MemoryEngine();
    const timers = new ManualTimers();
    const engine = new WriteBehindEngine(below, { timers });
    await engine.write([{ type: 'put', key: key('a'), value: key('1') }]);
    await engine.write([{ type: 'put', key: key('b'), value: key('2') }], { sync: true });
    expect(timers.pending.every((timer) => timer.cancelled)).toBe(true);
    expect(below.unsyncedBatchCount).toBe(0);
    expect(below.getSync(key('a'))).toEqual(key('1'));
  });
});
