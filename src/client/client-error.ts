/**
 * The one error type the client throws for operating failures. It is an AtollError (same stable
 * `code`, same `grpcStatus` name) plus what a caller needs to react: the numeric status seen on the
 * wire, the leader hint, and whether a write's outcome is unknown.
 *
 * A missing key is not an error (get answers found = false). Cancellation through an AbortSignal is
 * not an AtollClientError either: the call rejects with the signal's reason, as fetch does.
 */
import { AtollError, type AtollErrorCode } from '../errors.js';
import { grpcStatusOf, leaderHintOf, type LeaderHint } from '../wire/grpc-errors.js';

export type { LeaderHint };

export interface AtollClientErrorOptions {
  /** The numeric gRPC status observed; defaults to the code's own status. */
  readonly grpcStatusCode?: number;
  readonly leaderHint?: LeaderHint | undefined;
  readonly indeterminate?: boolean;
  readonly details?: Record<string, unknown>;
}

export class AtollClientError extends AtollError {
  /** The numeric gRPC status (14 for UNAVAILABLE, ...); `grpcStatus` gives its name. */
  readonly grpcStatusCode: number;
  /** For NOT_LEADER / NO_LEADER: where the leader is, when the node knew. */
  readonly leaderHint?: LeaderHint;
  /**
   * True when the failed call was a write that may or may not have taken effect (it timed out, or
   * the connection broke after the request was sent). The client never retries such a write on its
   * own; read the key to find out, or make the write conditional (ifModRevision) and retry.
   */
  readonly indeterminate: boolean;

  constructor(code: AtollErrorCode, message: string, options: AtollClientErrorOptions = {}) {
    super(code, message, options.details);
    this.grpcStatusCode = options.grpcStatusCode ?? grpcStatusOf(this);
    if (options.leaderHint !== undefined) this.leaderHint = options.leaderHint;
    this.indeterminate = options.indeterminate ?? false;
  }
}

export function isAtollClientError(value: unknown, code?: AtollErrorCode): value is AtollClientError {
  return value instanceof AtollClientError && (code === undefined || value.code === code);
}

/** Whether an error says the request certainly never reached a server (set by src/wire/grpc-errors.ts). */
export function wasNeverSent(error: AtollError): boolean {
  return error.details?.['neverSent'] === true;
}

/** Codes after which a write may have been applied even though the call failed. */
const indeterminateCodes: ReadonlySet<AtollErrorCode> = new Set(['DEADLINE_EXCEEDED', 'UNAVAILABLE', 'INTERNAL']);

/** Wraps any AtollError (from validation, the wire or a stream) as the error a caller sees. */
export function clientErrorOf(error: AtollError, write: boolean): AtollClientError {
  if (error instanceof AtollClientError) return error;
  const grpcStatusCode = error.details?.['grpcStatus'];
  const indeterminate = write && indeterminateCodes.has(error.code) && !wasNeverSent(error);
  return new AtollClientError(error.code, error.message, {
    ...(typeof grpcStatusCode === 'number' && grpcStatusCode > 0 && { grpcStatusCode }),
    leaderHint: leaderHintOf(error),
    indeterminate,
    ...(error.details !== undefined && { details: error.details }),
  });
}

/**
 * The error to report for a write that was sent more than once: when an earlier send's outcome was
 * unknown, a later definite failure does not make the whole call definite (the first may have applied).
 */
export function afterUnknownSend(error: unknown, earlierUnknown: boolean): unknown {
  if (!earlierUnknown || !(error instanceof AtollClientError) || error.indeterminate || error.code === 'TXN_CONFLICT') return error;
  return new AtollClientError(error.code, `${error.message} (an earlier attempt's outcome is unknown: it may have applied)`, {
    grpcStatusCode: error.grpcStatusCode,
    leaderHint: error.leaderHint,
    indeterminate: true,
    ...(error.details !== undefined && { details: error.details }),
  });
}
