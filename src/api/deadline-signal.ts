/**
 * Which request signals (call-signal.ts) already carry their request's deadline: a signal marked
 * here aborts with DEADLINE_EXCEEDED once its context's deadlineMs passes, because the code that made it registered
 * the deadline with a deadline wheel (the server's call scopes, src/server/call-context.ts; the
 * node's router for a call that arrives without one, src/node/service/router.ts). Whatever runs
 * the request further in the same process trusts that signal and registers nothing again, so a
 * request is registered once per process (issue 34 item 4; test/server/request-path.test.ts).
 * A WeakSet, not a field of CallContext: contexts are copied and extended on the way down
 * (`{ ...context, tenant }`), and the signal travels with every copy.
 */
import type { CallSignal } from './call-signal.js';

const deadlineSignals = new WeakSet<CallSignal>();

/** Marks `signal` as one that aborts at its request's deadline. */
export function markDeadlineSignal(signal: CallSignal): CallSignal {
  deadlineSignals.add(signal);
  return signal;
}

/** Whether the context's signal aborts at its deadline (so its deadline is registered already). */
export function hasDeadlineSignal(context: { readonly signal?: CallSignal | undefined }): boolean {
  return context.signal !== undefined && deadlineSignals.has(context.signal);
}
