/**
 * The executor's wait for the loop (KvExecutor, kv-executor.ts), seen through a linearizable read
 * barrier on a fake leader replica: admitted first, not started once the deadline has passed or
 * the signal aborted, given up when the request's deadline signal aborts (the outcome of a task
 * that settles later is ignored), a context without a deadline signal registered for the wait
 * alone, and the admission and the registration released once it ends.
 */
import { describe, expect, it } from 'vitest';
import { markDeadlineSignal } from '../../src/api/deadline-signal.js';
import { requestPathSnapshot } from '../../src/api/request-path-counters.js';
import { defaultLimits } from '../../src/limits.js';
import { Admission } from '../../src/node/service/admission.js';
import { KvExecutor, type KvExecutorOptions } from '../../src/node/service/kv-executor.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import type { NodeTimers } from '../../src/node/ports.js';

interface Waiter {
  resolve(value: void): void;
  reject(error: unknown): void;
}

/** An executor over fakes: a clock and timers the test moves, a loop that runs tasks when told, a leader replica that keeps its read waiters. */
function harness(limits = defaultLimits) {
  let nowMs = 1_000_000;
  const timers: { atMs: number; run: () => void; cancelled: boolean }[] = [];
  const tasks: (() => void)[] = [];
  const waiters: Waiter[] = [];
  const admission = new Admission(limits);
  const nodeTimers: NodeTimers = {
    every: () => ({ cancel: () => undefined }),
    after: (delayMs, run) => {
      const timer = { atMs: nowMs + delayMs, run, cancelled: false };
      timers.push(timer);
      return { cancel: () => void (timer.cancelled = true) };
    },
    soon: (run) => void tasks.push(run),
  };
  const options = {
    partitions: 1,
    limits,
    testBugs: undefined,
    driver: { enqueue: (task: () => void) => void tasks.push(task) },
    admission,
    clock: { wallMs: () => nowMs, monotonicMs: () => nowMs },
    timers: nodeTimers,
  } as unknown as KvExecutorOptions;
  const executor = new KvExecutor(options);
  const replica = {
    id: 0,
    reads: { leaseReadReady: () => false },
    raw: { role: 'leader' },
    enqueueRead: (waiter: Waiter) => void waiters.push(waiter),
  } as unknown as PartitionReplica;
  return {
    executor,
    replica,
    admission,
    tasks,
    waiters,
    /** Runs the loop's queued tasks. */
    runLoop: () => {
      for (const task of tasks.splice(0)) task();
    },
    /** Moves the clock by `ms` and fires the timers due. */
    advance: (ms: number) => {
      nowMs += ms;
      for (const timer of timers.splice(0)) {
        if (timer.cancelled) continue;
        if (timer.atMs <= nowMs) timer.run();
        else timers.push(timer);
      }
    },
    liveTimers: () => timers.filter((timer) => !timer.cancelled).length,
    now: () => nowMs,
  };
}

async function failure(promise: Promise<unknown>): Promise<{ code?: string; message?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; message?: string };
  }
  throw new Error('expected a rejection');
}

describe("the executor's wait for the loop", () => {
  it('runs the task in the loop and settles with it, then releases its admission', async () => {
    const h = harness();
    const controller = new AbortController();
    const done = h.executor.readBarrier(h.replica, { deadlineMs: h.now() + 1_000, signal: markDeadlineSignal(controller.signal), tenant: 'default' });
    expect(h.admission.pending).toBe(1);
    expect(h.waiters).toHaveLength(0);
    h.runLoop();
    expect(h.waiters).toHaveLength(1);
    h.waiters[0]?.resolve();
    await done;
    expect(h.admission.pending).toBe(0);
  });

  it('does not start once the deadline has passed', async () => {
    const h = harness();
    const controller = new AbortController();
    const error = await failure(h.executor.readBarrier(h.replica, { deadlineMs: h.now(), signal: markDeadlineSignal(controller.signal), tenant: 'default' }));
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', message: 'deadline passed before the request started' });
    expect(h.tasks).toHaveLength(0);
    expect(h.admission.pending).toBe(0);
  });

  it('does not start once its signal aborted', async () => {
    const h = harness();
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    const error = await failure(h.executor.readBarrier(h.replica, { deadlineMs: h.now() + 1_000, signal: markDeadlineSignal(controller.signal), tenant: 'default' }));
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', message: 'cancelled by the caller' });
    expect(h.tasks).toHaveLength(0);
    expect(h.admission.pending).toBe(0);
  });

  it('refuses past the admission bound before anything else', async () => {
    const h = harness({ ...defaultLimits, maxPendingRequestsPerPartition: 0 });
    const error = await failure(h.executor.readBarrier(h.replica, { deadlineMs: h.now(), tenant: 'default' }));
    expect(error).toMatchObject({ code: 'OVERLOADED' });
    expect(h.tasks).toHaveLength(0);
  });

  it('is given up when its deadline signal aborts, and ignores the task settling later', async () => {
    const h = harness();
    const controller = new AbortController();
    const done = failure(h.executor.readBarrier(h.replica, { deadlineMs: h.now() + 1_000, signal: markDeadlineSignal(controller.signal), tenant: 'default' }));
    h.runLoop();
    controller.abort(new Error('the deadline passed'));
    expect(await done).toMatchObject({ code: 'DEADLINE_EXCEEDED', message: 'cancelled by the caller' });
    expect(h.admission.pending).toBe(0);
    h.waiters[0]?.resolve();
    await Promise.resolve();
  });

  it('registers the deadline of a context that comes without one, for the wait alone', async () => {
    const h = harness();
    const before = requestPathSnapshot().deadlines;
    const done = failure(h.executor.readBarrier(h.replica, { deadlineMs: h.now() + 300, tenant: 'default' }));
    expect(requestPathSnapshot().deadlines - before).toBe(1);
    expect(h.liveTimers()).toBe(1);
    h.runLoop();
    h.advance(400);
    expect(await done).toMatchObject({ code: 'DEADLINE_EXCEEDED', message: 'no answer within the deadline; a write may still apply' });
    expect(h.admission.pending).toBe(0);
    // Its registration goes once the task settles.
    h.waiters[0]?.reject(new Error('late'));
    await Promise.resolve();
    expect(h.liveTimers()).toBe(0);
  });

  it('takes its registration off the wheel when the task settles first', async () => {
    const h = harness();
    const outer = new AbortController();
    const done = h.executor.readBarrier(h.replica, { deadlineMs: h.now() + 300, signal: outer.signal, tenant: 'default' });
    expect(h.liveTimers()).toBe(1);
    h.runLoop();
    h.waiters[0]?.resolve();
    await done;
    await Promise.resolve();
    expect(h.liveTimers()).toBe(0);
    expect(h.admission.pending).toBe(0);
  });
});
