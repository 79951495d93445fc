/**
 * The server's one deadline wheel (src/node/service/deadline-wheel.ts, 10 ms slots): every call scope's
 * deadline is in it, on the process's monotonic clock and real timers.
 */
import { DeadlineWheel, type WheelTimers } from '../node/service/deadline-wheel.js';

const systemTimers: WheelTimers = {
  nowMs: () => performance.now(),
  after(delayMs, run) {
    const timer = setTimeout(run, delayMs);
    // A pending deadline must not keep a shutting-down process alive.
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

export const requestDeadlines = new DeadlineWheel(systemTimers);
