/**
 * When the client may try a failed request again, and how long it waits first.
 *
 * Reads are always safe to repeat, so any "try again" failure (UNAVAILABLE, NOT_LEADER, NO_LEADER)
 * is retried. A write is retried only when it certainly did not take effect:
 *
 * - NOT_LEADER / NO_LEADER: the node refused it before proposing it to Raft;
 * - the connection was never established, so nothing was sent;
 * - the node said `atoll-not-applied` (it could not reach the leader to forward it);
 * - OVERLOADED: a node's bound on waiting requests refused it before anything was queued.
 *
 * A write that timed out (DEADLINE_EXCEEDED) or whose connection broke after sending is
 * indeterminate: it may have been applied. Retrying it could apply it twice (an increment counted
 * twice), so the client returns the error, marked `indeterminate`, and leaves the decision to the
 * caller.
 */
import type { AtollError } from '../errors.js';
import { leaderHintOf, type LeaderHint } from '../wire/grpc-errors.js';
import { wasNeverSent } from './client-error.js';

export interface RetryAction {
  readonly retry: boolean;
  /** The leader the error pointed at: retry there first, and remember it. */
  readonly leaderHint?: LeaderHint | undefined;
  /** The node did not answer at all: avoid it for a while and route elsewhere. */
  readonly nodeUnreachable: boolean;
}

const noRetry: RetryAction = Object.freeze({ retry: false, nodeUnreachable: false });

export function retryActionOf(error: AtollError, write: boolean): RetryAction {
  switch (error.code) {
    case 'NOT_LEADER':
    case 'NO_LEADER':
      return { retry: true, leaderHint: leaderHintOf(error), nodeUnreachable: false };
    case 'UNAVAILABLE': {
      const neverSent = wasNeverSent(error);
      // Without `atoll-code` the status came from grpc-js: the node itself could not be reached.
      // (A node that relays "not applied" from its leader is reachable; only its peer is not.)
      const nodeUnreachable = error.details?.['fromTransport'] === true;
      if (write && !neverSent) return noRetry;
      return { retry: true, nodeUnreachable };
    }
    case 'PARTITION_MOVED':
      // A split moved the key's range before anything applied: refresh the table and go again.
      return { retry: true, nodeUnreachable: false };
    case 'OVERLOADED':
      // The node refused it before queueing anything (src/node/service/admission.ts): safe to repeat,
      // writes included, after the usual back-off.
      return { retry: true, nodeUnreachable: false };
    default:
      return noRetry;
  }
}

export interface BackoffPolicy {
  readonly baseMs: number;
  readonly capMs: number;
}

export const defaultBackoff: BackoffPolicy = Object.freeze({ baseMs: 25, capMs: 1000 });

/**
 * "Full jitter" exponential back-off: a uniform wait in [0, min(cap, base * 2^attempt)], so
 * clients that failed together do not retry together.
 */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy = defaultBackoff, random: () => number = Math.random): number {
  const ceilingMs = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceilingMs);
}

const finalWatchCodes = new Set(['INVALID_ARGUMENT', 'INVALID_KEY', 'KEY_TOO_LARGE', 'PREFIX_SPANS_BUCKETS', 'COMPACTED', 'FUTURE_REVISION', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED']);

/**
 * Whether a watch ends on `error` rather than resuming. A node short of watch memory (reason
 * watch-memory) refuses only until its watchers read what is queued, so that watch resumes after a
 * backoff (fault suite seed 204: a resume beside busy watchers on one stream was refused, and the
 * watcher failed for good); any other RESOURCE_EXHAUSTED (a watcher limit) ends it.
 */
export function endsWatch(error: AtollError): boolean {
  if (error.code === 'RESOURCE_EXHAUSTED' && error.details?.['reason'] === 'watch-memory') return false;
  return finalWatchCodes.has(error.code);
}
