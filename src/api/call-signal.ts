/**
 * A request's cancellation as the node sees it: the part of AbortSignal it uses (`aborted`,
 * `reason`, 'abort' listeners). A real AbortSignal is one; the node makes its own with CallAbort,
 * because every request gets one (its call scope, src/server/call-context.ts; a forwarded one,
 * src/peer/forward-service.ts; one armed by the router, src/node/service/request-deadline.ts) and
 * an AbortController costs 3-4 µs to make in Node 20, and as much again to add and remove a
 * listener, against a tenth of that here: a put crosses two or three of them.
 *
 * Nothing the node hands to Node's own APIs (timers, streams, events) is a CallSignal: those take
 * an AbortSignal, and the types keep the two apart.
 */

export type AbortListener = () => void;

export interface CallSignal {
  readonly aborted: boolean;
  /** Why it aborted (an AtollError for the node's own): undefined until then. */
  readonly reason: unknown;
  /** `listener` runs once, when the signal aborts; never if it aborted already or is removed first. */
  addEventListener(type: 'abort', listener: AbortListener, options?: { readonly once?: boolean }): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}

/**
 * A CallSignal and the means to abort it. Invariants: `aborted` goes from false to true once, with
 * `reason` set at the same moment; every listener added before that runs exactly once, in the
 * order added, and none is kept afterwards (a listener added later never runs, as with
 * AbortSignal, whose 'abort' event fires once).
 */
export class CallAbort implements CallSignal {
  aborted = false;
  reason: unknown = undefined;
  /** Most requests have no listener or one: an array only from the second. */
  private listeners: AbortListener | AbortListener[] | undefined = undefined;

  get signal(): CallSignal {
    return this;
  }

  addEventListener(_type: 'abort', listener: AbortListener): void {
    if (this.aborted) return;
    const listeners = this.listeners;
    if (listeners === undefined) this.listeners = listener;
    else if (typeof listeners === 'function') this.listeners = [listeners, listener];
    else listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: AbortListener): void {
    const listeners = this.listeners;
    if (listeners === listener) {
      this.listeners = undefined;
    } else if (Array.isArray(listeners)) {
      const at = listeners.indexOf(listener);
      if (at >= 0) listeners.splice(at, 1);
    }
  }

  /** Aborts with `reason` and runs the listeners; no effect once aborted. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners === undefined) return;
    if (typeof listeners === 'function') {
      runListener(listeners);
      return;
    }
    for (const listener of listeners) runListener(listener);
  }
}

/** As an EventTarget does: a listener that throws does not stop the others; its error is reported as uncaught. */
function runListener(listener: AbortListener): void {
  try {
    listener();
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}
