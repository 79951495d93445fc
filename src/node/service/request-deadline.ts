/**
 * A request's deadline, registered once per process (issue 34 item 4). A call from this process's
 * server arrives with its call scope's signal, which aborts at the deadline (src/server/call-context.ts
 * registered it: src/api/deadline-signal.ts marks such signals), and nothing here registers it
 * again. A call without one (a forward from a peer, the node's own calls, the simulator's) gets one
 * registration with the node's wheel (deadline-wheel.ts, on the node's timers, so the simulator
 * drives it) where the router takes it in (`arm`). Everything below waits on that signal
 * (KvExecutor's wait for the loop, kv-executor.ts, which ends it with `waitEndedBy`).
 */
import assert from 'node:assert/strict';
import { AtollError } from '../../errors.js';
import type { Limits } from '../../limits.js';
import type * as api from '../../api/node-api.js';
import { CallAbort } from '../../api/call-signal.js';
import { hasDeadlineSignal, markDeadlineSignal } from '../../api/deadline-signal.js';
import type { NodeClock, NodeTimers } from '../ports.js';
import { DeadlineWheel } from './deadline-wheel.js';

export class RequestDeadlines {
  /** One timer for the deadlines of every request the node registers, not one per request. */
  private readonly wheel: DeadlineWheel;

  constructor(
    private readonly clock: NodeClock,
    timers: NodeTimers,
    private readonly limits: Limits,
  ) {
    this.wheel = new DeadlineWheel({ nowMs: () => clock.monotonicMs(), after: (delayMs, run) => timers.after(delayMs, run) });
  }

  /**
   * The context of one request with its deadline registered once: as given when its signal already
   * aborts at the deadline, else with a signal of this node's wheel that does, and also aborts when
   * the caller's own signal does. `dispose` takes the deadline off the wheel once the request is
   * answered.
   */
  arm(context: api.CallContext): { context: api.CallContext; dispose(): void } {
    if (hasDeadlineSignal(context)) return { context, dispose: () => undefined };
    // Deadlines are clamped where calls arrive (call-context.ts); this clamps forwarded ones too.
    const remaining = Math.min(context.deadlineMs - this.clock.wallMs(), this.limits.maxCallTimeoutMs);
    assert(remaining <= 2 ** 31 - 1, 'a deadline timer fits setTimeout');
    const controller = new CallAbort();
    const abort = (reason: unknown): void => controller.abort(reason);
    const outer = context.signal;
    const onOuterAbort = (): void => abort(new AtollError('DEADLINE_EXCEEDED', 'cancelled by the caller'));
    if (outer?.aborted === true) onOuterAbort();
    else outer?.addEventListener('abort', onOuterAbort, { once: true });
    const timer = this.wheel.add(Math.max(0, remaining), () => abort(new AtollError('DEADLINE_EXCEEDED', `no answer within the deadline (${remaining} ms); a write may still apply`)));
    return {
      context: { ...context, signal: markDeadlineSignal(controller.signal) },
      dispose: () => {
        timer.cancel();
        outer?.removeEventListener('abort', onOuterAbort);
      },
    };
  }
}

/** The error a wait ends with when the request's signal aborts: its deadline passed, or its caller gave up. */
export function waitEndedBy(reason: unknown): AtollError {
  if (reason instanceof AtollError && reason.code === 'DEADLINE_EXCEEDED' && reason.message !== 'cancelled by the caller') {
    return new AtollError('DEADLINE_EXCEEDED', 'no answer within the deadline; a write may still apply');
  }
  return new AtollError('DEADLINE_EXCEEDED', 'cancelled by the caller');
}
