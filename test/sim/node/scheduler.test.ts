import { describe, expect, it } from 'vitest';
import { Scheduler, settle } from '../../../src/sim/node/scheduler.js';
import { NodeHost } from '../../../src/sim/node/sim-host.js';

describe('whole-node simulator: the event queue', () => {
  it('one settle drains a long chain of promise continuations', async () => {
    let steps = 0;
    const chain = async (): Promise<void> => {
      for (let i = 0; i < 10_000; i++) {
        await Promise.resolve();
        steps++;
      }
    };
    void chain();
    await settle();
    expect(steps).toBe(10_000);
  });

  it('runs events in time order, ties in the order they were scheduled, and settles after each', async () => {
    const scheduler = new Scheduler();
    const order: string[] = [];
    scheduler.at(20, () => order.push('b'));
    scheduler.at(10, () => {
      order.push('a');
      // A continuation started by an event runs before the next event, even one at the same time.
      void Promise.resolve().then(() => order.push('a-then'));
    });
    scheduler.at(20, () => order.push('c'));
    scheduler.at(10, () => order.push('a2'));
    await scheduler.runUntil(100, 100);
    expect(order).toEqual(['a', 'a-then', 'a2', 'b', 'c']);
    expect(scheduler.now).toBe(100);
  });

  it('settles what the caller started before time moves', async () => {
    const scheduler = new Scheduler();
    let startedAt = -1;
    void Promise.resolve().then(() => (startedAt = scheduler.now));
    scheduler.at(50, () => undefined);
    await scheduler.runUntil(100, 10);
    expect(startedAt).toBe(0);
  });

  it('holds a paused node’s events, in order, until it resumes; other events run meanwhile', async () => {
    const scheduler = new Scheduler();
    const seen: Array<[string, number]> = [];
    scheduler.pause(1, 500);
    scheduler.at(100, () => seen.push(['n1 first', scheduler.now]), 1);
    scheduler.at(200, () => seen.push(['n1 second', scheduler.now]), 1);
    scheduler.at(300, () => seen.push(['n2', scheduler.now]), 2);
    await scheduler.runUntil(1_000, 100);
    expect(seen).toEqual([
      ['n2', 300],
      ['n1 first', 500],
      ['n1 second', 500],
    ]);
  });

  it('a dead incarnation’s timers never fire, and clocks stay within their bounds', async () => {
    const scheduler = new Scheduler();
    const host = new NodeHost(scheduler, 1, 1, { skewMs: -300, drift: 0.001 });
    let ticks = 0;
    host.timers.every(100, () => ticks++);
    let late = false;
    host.timers.after(1_000, () => (late = true));
    await scheduler.runUntil(550, 1_000);
    host.alive = false;
    await scheduler.runUntil(5_000, 1_000);
    expect(ticks).toBe(5);
    expect(late).toBe(false);
    // Invariant: a node's wall clock is off by at most its skew plus drift times elapsed time.
    const trueWall = 1_800_000_000_000 + scheduler.now;
    expect(Math.abs(host.clock.wallMs() - trueWall)).toBeLessThanOrEqual(300 + 0.001 * scheduler.now + 1);
    expect(Number.isInteger(host.clock.wallMs())).toBe(true);
  });
});
