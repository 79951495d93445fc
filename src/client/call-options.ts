/** Deadlines and cancellation, which every client call accepts. */
import { AtollError } from '../errors.js';

export interface CallOptions {
  /** Give up after this many milliseconds (default: the client's defaultTimeoutMs, 10 s). */
  readonly timeoutMs?: number;
  /** Give up at this time (a Date or Unix epoch ms); wins over timeoutMs. */
  readonly deadline?: Date | number;
  /** Aborting cancels the call; it then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/** The absolute deadline of a call, Unix epoch ms. */
export function deadlineMsOf(options: CallOptions, defaultTimeoutMs: number): number {
  if (options.deadline !== undefined) {
    const deadlineMs = options.deadline instanceof Date ? options.deadline.getTime() : options.deadline;
    if (!Number.isFinite(deadlineMs)) throw new AtollError('INVALID_ARGUMENT', 'deadline must be a valid Date or epoch milliseconds');
    return deadlineMs;
  }
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new AtollError('INVALID_ARGUMENT', `timeoutMs must be a positive number of milliseconds, got ${timeoutMs}`);
  }
  return Date.now() + timeoutMs;
}

/** Throws the signal's reason if it has been aborted, as AbortSignal.throwIfAborted does. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw signal.reason;
}

/** Waits `delayMs`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
