/**
 * The CallContext a node sees for one request: an absolute deadline and a signal (call-signal.ts) that fires
 * when the caller gives up (gRPC cancellation) or the deadline passes, whichever comes first, so a
 * node never keeps working for an answer nobody will read.
 */
import assert from 'node:assert/strict';
import type { Deadline } from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import type { CallContext } from '../api/node-api.js';
import { CallAbort } from '../api/call-signal.js';
import { markDeadlineSignal } from '../api/deadline-signal.js';
import { requestDeadlines } from './deadline-wheel.js';

/** What this module needs of a grpc-js server call (any kind: unary or streaming). */
export interface ServerCallLike {
  readonly cancelled: boolean;
  /** The call's metadata (grpc-js Metadata); the bearer token and peer secret are read from it. */
  readonly metadata?: { get(key: string): unknown[] };
  getDeadline(): Deadline;
  /** The remote address:port (grpc-js); absent in some test doubles. */
  getPeer?(): string;
  on(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
}

export interface CallScope {
  readonly context: CallContext;
  /** Aborts the context's signal (a Stream request cancelled by the client, for example). */
  abort(reason: AtollError): void;
  /** Releases the timer and listeners; call it once the request is answered. */
  dispose(): void;
}

/** The absolute deadline of a gRPC call, or undefined when the caller set none. */
export function deadlineMsOf(deadline: Deadline): number | undefined {
  const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(deadlineMs) ? deadlineMs : undefined;
}

/** The longest delay setTimeout honours (2^31 - 1 ms, about 24.8 days); longer ones fire at once. */
export const maxTimerDelayMs = 2 ** 31 - 1;

export interface CallScopeOptions {
  /** Absolute deadline, Unix epoch ms; absent means now + limits.defaultCallTimeoutMs. */
  readonly deadlineMs?: number | undefined;
  readonly hops?: number;
  /** The surrounding call: its cancellation aborts this scope too; its metadata identifies the caller. */
  readonly call?: ServerCallLike;
  /** The caller, when the scope has no call of its own (a request on a stream). */
  readonly caller?: Caller;
}

/** Who is calling: the metadata a node authenticates, and the connection it came on. */
export interface Caller {
  authorization?: string;
  connection?: string;
}

/**
 * Who is calling: the metadata a node authenticates (see src/node/service/auth.ts) and the connection it
 * came on. The peer secret is not read here: it is checked on the peer port only and never
 * identifies a client.
 */
export function callerOf(call: ServerCallLike | undefined): Caller {
  const value = call?.metadata?.get('authorization')[0];
  const caller: Caller = {};
  if (typeof value === 'string') caller.authorization = value;
  try {
    // The remote address, when the call can name one (getPeer may throw).
    const peer = call?.getPeer?.();
    if (typeof peer === 'string' && peer !== '' && peer !== 'unknown') caller.connection = peer;
  } catch {
    // Then there is no connection to name.
  }
  return caller;
}

export function openCallScope(options: CallScopeOptions): CallScope {
  const nowMs = Date.now();
  // No further away than limits.maxCallTimeoutMs: a caller may ask for years, the server gives at
  // most the maximum, so every timer set from a deadline is a real one.
  const deadlineMs = Math.min(options.deadlineMs ?? nowMs + limits.defaultCallTimeoutMs, nowMs + limits.maxCallTimeoutMs);
  const controller = new CallAbort();
  const abort = (reason: AtollError): void => controller.abort(reason);
  const onCancelled = (): void => abort(new AtollError('UNAVAILABLE', 'the caller cancelled the request'));
  const call = options.call;
  call?.on('cancelled', onCancelled);
  if (call?.cancelled === true) onCancelled();
  const delayMs = Math.max(0, deadlineMs - Date.now());
  assert(delayMs <= maxTimerDelayMs, 'a clamped deadline fits a timer');
  // One timer for every request's deadline (deadline-wheel.ts), not a setTimeout per request.
  const deadline = requestDeadlines.add(delayMs, () => abort(new AtollError('DEADLINE_EXCEEDED', 'the request deadline passed')));
  // Built field by field, not by spreading: this runs for every request.
  const caller = options.caller ?? callerOf(options.call);
  // The node trusts this signal to end the request at its deadline and registers none of its own.
  const context: { -readonly [K in keyof CallContext]: CallContext[K] } = { deadlineMs, signal: markDeadlineSignal(controller.signal) };
  if (options.hops !== undefined) context.hops = options.hops;
  if (caller.authorization !== undefined) context.authorization = caller.authorization;
  if (caller.connection !== undefined) context.connection = caller.connection;
  return {
    context,
    abort,
    dispose: () => {
      deadline.cancel();
      call?.removeListener('cancelled', onCancelled);
    },
  };
}

/** The scope of a unary call: its gRPC deadline (or the default) and its cancellation. */
export function openUnaryCallScope(call: ServerCallLike, hops?: number): CallScope {
  const deadlineMs = deadlineMsOf(call.getDeadline());
  return openCallScope(hops === undefined ? { deadlineMs, call } : { deadlineMs, call, hops });
}
