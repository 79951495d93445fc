/**
 * The state machine of a replica move (replica-moves.ts runs it): which configuration change comes
 * next, chosen from the group's applied configuration alone, and when a learner is ready to vote.
 * Pure functions, so every leader picks the same step and a repeated move resumes.
 */
import { AtollError } from '../../errors.js';
import type { ConfState } from '../../raft/types.js';

/** A learner is promoted once its log is at most this many entries behind the leader's. */
export const MAX_PROMOTION_LAG = 64;

/** What a move does next, given the group's applied configuration. */
export type MoveStep =
  | { readonly kind: 'addLearner' }
  | { readonly kind: 'promote' }
  | { readonly kind: 'transferLeadership' }
  | { readonly kind: 'removeSource' }
  | { readonly kind: 'done' };

export interface MoveInput {
  readonly conf: ConfState;
  /** The group's leader (the node deciding). */
  readonly leader: number;
  readonly from: number;
  readonly to: number;
  readonly replicationFactor: number;
}

export function refused(reason: 'already-replica' | 'not-replica' | 'in-progress' | 'too-few-voters' | 'target-leaving', message: string): AtollError {
  return new AtollError('MOVE_REFUSED', message, { reason });
}

/**
 * The next step of moving a replica from `from` to `to`, from the applied configuration only (so
 * any leader, at any time, picks the same one), or MOVE_REFUSED. With RF the replication factor,
 * V the voters and L the learners, a move passes through exactly these configurations:
 *
 *   V = S (|S| = RF, from in S), L = {}      -> addLearner(to)
 *   V = S, L = {to}                          -> promote: addVoter(to), once caught up
 *   V = S + {to} (RF + 1 voters), L = {}     -> transferLeadership (from leads) or removeNode(from)
 *   V = S - {from} + {to} (RF voters)        -> done
 *
 * Invariant (asserted by the refusals below): outside a move a group has RF voters and no
 * learner; during one, RF voters + 1 learner, then RF + 1 voters, then RF again. Any other shape
 * with a learner or more than RF voters belongs to another move: 'in-progress'.
 */
export function nextMoveStep(input: MoveInput): MoveStep {
  const { conf, from, to, replicationFactor: rf, leader } = input;
  const voters = new Set(conf.voters);
  const learners = new Set(conf.learners);
  if (from === to) throw new AtollError('INVALID_ARGUMENT', 'a move needs two different nodes');
  const otherLearners = [...learners].filter((node) => node !== to && node !== from);
  if (otherLearners.length > 0) throw refused('in-progress', `another move is in progress (learner ${otherLearners.join(', ')})`);
  if (voters.has(to)) {
    if (learners.has(from)) return { kind: 'removeSource' };
    if (!voters.has(from)) return { kind: 'done' };
    // Both are voters: the move's third stage (RF + 1 voters), or `to` held a replica already.
    if (voters.size <= rf) throw refused('already-replica', `node ${to} already holds a replica`);
    if (voters.size > rf + 1) throw refused('in-progress', `the partition has ${voters.size} voters: another move is in progress`);
    return leader === from ? { kind: 'transferLeadership' } : { kind: 'removeSource' };
  }
  if (!voters.has(from)) throw refused('not-replica', `node ${from} holds no replica of the partition`);
  if (voters.size > rf) throw refused('in-progress', `the partition has ${voters.size} voters: another move is in progress`);
  // Removing `from` at the end must leave RF voters.
  if (voters.size < rf) throw refused('too-few-voters', `the partition has ${voters.size} voters, fewer than the replication factor ${rf}`);
  return learners.has(to) ? { kind: 'promote' } : { kind: 'addLearner' };
}

/** Whether a learner is close enough to the leader's log to become a voter without stalling commits. */
export function caughtUp(progress: { match: number; state: string } | undefined, leaderLastIndex: number): boolean {
  return progress !== undefined && progress.state === 'replicate' && progress.match + MAX_PROMOTION_LAG >= leaderLastIndex;
}
