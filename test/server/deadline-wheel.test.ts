/**
 * The server's deadline wheel: one timer for every request's deadline. A deadline fires after it
 * passes (at most one slot late, never early), a cancelled one never fires, and what the wheel
 * holds stays bounded by the span of deadlines, however many requests come and go.
 */
import { describe, expect, it } from 'vitest';
import { openCallScope } from '../../src/server/call-context.js';
import { DeadlineWheel, type WheelTimers } from '../../src/node/service/deadline-wheel.js';
import { requestDeadlines } from '../../src/server/deadline-wheel.js';
import { AtollError } from '../../src/errors.js';

/** A manual clock: `advance` runs the armed timers that are due, in time order. */
function manualTimers(): WheelTimers & { advance(ms: number): void; armedCount(): number } {
  let now = 1_000_000;
  let timers: Array<{ at: number; run: () => void; live: boolean }> = [];
  return {
    nowMs: () => now,
    after(delayMs, run) {
      const timer = { at: now + delayMs, run, live: true };
      timers.push(timer);
      return { cancel: () => (timer.live = false) };
    },
    advance(ms) {
      const end = now + ms;
      for (let guard = 0; guard < 10_000; guard++) {
        timers = timers.filter((timer) => timer.live);
        const next = timers.filter((timer) => timer.at <= end).sort((a, b) => a.at - b.at)[0];
        if (next === undefined) break;
        now = Math.max(now, next.at);
        next.live = false;
        next.run();
      }
      now = end;
    },
    armedCount: () => timers.filter((timer) => timer.live).length,
  };
}

describe('DeadlineWheel', () => {
  it('fires each deadline once, after it passes and at most one slot late', () => {
    const timers = manualTimers();
    const wheel = new DeadlineWheel(timers, 10);
    const start = timers.nowMs();
    const firedAt = new Map<number, number>();
    for (const offset of [5, 10, 11, 37, 250, 3]) wheel.add(offset, () => firedAt.set(offset, timers.nowMs() - start));
    expect(wheel.pending).toBe(6);
    for (let step = 0; step < 60; step++) timers.advance(5);
    expect([...firedAt.keys()].sort((a, b) => a - b)).toEqual([3, 5, 10, 11, 37, 250]);
    for (const [offset, at] of firedAt) {
      expect(at).toBeGreaterThanOrEqual(offset);
      expect(at).toBeLessThanOrEqual(offset + 10);
    }
    // Nothing left: no slot, no timer.
    expect(wheel.slotCount).toBe(0);
    expect(timers.armedCount()).toBe(0);
  });

  it('a cancelled deadline never fires; an earlier deadline re-arms the one timer', () => {
    const timers = manualTimers();
    const wheel = new DeadlineWheel(timers, 10);
    const fired: string[] = [];
    const late = wheel.add(500, () => fired.push('late'));
    wheel.add(20, () => fired.push('early'));
    // Invariant: one timer armed while anything is pending, for the earliest slot.
    expect(timers.armedCount()).toBe(1);
    timers.advance(30);
    expect(fired).toEqual(['early']);
    late.cancel();
    late.cancel();
    timers.advance(1_000);
    expect(fired).toEqual(['early']);
    expect(wheel.pending).toBe(0);
  });

  it('a deadline added by a firing callback is kept', () => {
    const timers = manualTimers();
    const wheel = new DeadlineWheel(timers, 10);
    const fired: number[] = [];
    wheel.add(10, () => wheel.add(10, () => fired.push(2)));
    timers.advance(15);
    expect(fired).toEqual([]);
    timers.advance(15);
    expect(fired).toEqual([2]);
  });

  it('stays bounded: many requests added and cancelled hold at most one slot per slot-length of deadlines', () => {
    const timers = manualTimers();
    const wheel = new DeadlineWheel(timers, 10);
    let fired = 0;
    // One long request keeps the wheel busy, so the short ones' slots pile up behind it.
    wheel.add(40_000, () => fired++);
    for (let i = 0; i < 100_000; i++) {
      // A request every 0.1 ms with a 10 s deadline, answered at once.
      if (i % 10 === 0) timers.advance(1);
      wheel.add(10_000, () => fired++).cancel();
    }
    expect(fired).toBe(0);
    expect(wheel.pending).toBe(1);
    // 10 s of requests, deadlines spanning 10 s to 20 s from the start: about 1,000 slots.
    expect(wheel.slotCount).toBeLessThanOrEqual(1_002);
    timers.advance(20_000);
    expect(wheel.slotCount).toBe(1);
    expect(timers.armedCount()).toBe(1);
    timers.advance(20_000);
    expect(fired).toBe(1);
    expect(wheel.slotCount).toBe(0);
    expect(timers.armedCount()).toBe(0);
  });

  it('with nothing pending, no timer stays armed and no slot is kept', () => {
    const timers = manualTimers();
    const wheel = new DeadlineWheel(timers, 10);
    const entries = [wheel.add(100, () => undefined), wheel.add(5_000, () => undefined)];
    expect(wheel.timerArmed).toBe(true);
    for (const entry of entries) entry.cancel();
    expect(wheel.timerArmed).toBe(false);
    expect(timers.armedCount()).toBe(0);
    expect(wheel.slotCount).toBe(0);
    // And it works again afterwards.
    let fired = false;
    wheel.add(20, () => (fired = true));
    timers.advance(40);
    expect(fired).toBe(true);
    expect(wheel.timerArmed).toBe(false);
  });
});

describe('call scopes on the wheel', () => {
  it('a scope aborts with DEADLINE_EXCEEDED once its deadline passes', async () => {
    const scope = openCallScope({ deadlineMs: Date.now() + 30 });
    const reason = await new Promise<unknown>((resolve) => scope.context.signal!.addEventListener('abort', () => resolve(scope.context.signal!.reason), { once: true }));
    expect(reason).toBeInstanceOf(AtollError);
    expect((reason as AtollError).code).toBe('DEADLINE_EXCEEDED');
    scope.dispose();
  });

  it('a wall-clock step back after the scope opened does not postpone its deadline', async () => {
    const opened = Date.now();
    const scope = openCallScope({ deadlineMs: opened + 30 });
    const realNow = Date.now;
    Date.now = () => realNow() - 3_600_000;
    try {
      const startedMs = performance.now();
      await new Promise<void>((resolve) => scope.context.signal!.addEventListener('abort', () => resolve(), { once: true }));
      expect(performance.now() - startedMs).toBeLessThan(5_000);
    } finally {
      Date.now = realNow;
      scope.dispose();
    }
  });

  it('dispose takes the deadline off the wheel; the context carries the caller without extra fields', () => {
    const before = requestDeadlines.pending;
    const scope = openCallScope({ deadlineMs: Date.now() + 60_000, hops: 2, caller: { connection: '127.0.0.1:9' } });
    expect(requestDeadlines.pending).toBe(before + 1);
    expect(Object.keys(scope.context).sort()).toEqual(['connection', 'deadlineMs', 'hops', 'signal']);
    scope.dispose();
    expect(requestDeadlines.pending).toBe(before);
    expect(scope.context.signal!.aborted).toBe(false);
  });
});
