/**
 * The state machine of a replica move (src/node/cluster/move-steps.ts nextMoveStep): each step is
 * chosen from the applied configuration alone, so a repeated or resumed move continues where the
 * configuration is, and every refusal has a stable code and reason.
 */
import { describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { caughtUp, MAX_PROMOTION_LAG, nextMoveStep, type MoveInput } from '../../src/node/cluster/move-steps.js';
import { confAfter } from '../../src/node/replica/conf-after.js';
import type { ConfChange, ConfState } from '../../src/raft/types.js';

/** What the Raft core's applyConfChange does to the membership (confAfter, raft.ts), sorted. */
function applyChange(conf: ConfState, change: ConfChange): ConfState {
  const after = confAfter(conf, change);
  return { voters: [...after.voters].sort((a, b) => a - b), learners: [...after.learners].sort((a, b) => a - b) };
}

const RF = 3;

function step(voters: number[], learners: number[], from: number, to: number, leader = voters[0] as number): string {
  return nextMoveStep({ conf: { voters, learners }, leader, from, to, replicationFactor: RF }).kind;
}

function refusal(input: MoveInput): string {
  try {
    nextMoveStep(input);
  } catch (error) {
    if (isAtollError(error)) return `${error.code}:${String(error.details?.['reason'] ?? '')}`;
    throw error;
  }
  return 'no refusal';
}

describe('nextMoveStep', () => {
  it('walks a move through learner, promotion, removal, with RF voters at both ends', () => {
    // Moving 1 -> 4 with 2 leading: the configurations a move passes through, in order.
    let conf: ConfState = { voters: [1, 2, 3], learners: [] };
    const seen: string[] = [];
    for (let guard = 0; guard < 10; guard++) {
      const kind = nextMoveStep({ conf, leader: 2, from: 1, to: 4, replicationFactor: RF }).kind;
      seen.push(kind);
      if (kind === 'done') break;
      conf = applyChange(conf, kind === 'addLearner' ? { type: 'addLearner', node: 4 } : kind === 'promote' ? { type: 'addVoter', node: 4 } : { type: 'removeNode', node: 1 });
      // Invariant: RF voters + at most one learner, or RF + 1 voters and no learner.
      expect(conf.voters.length + conf.learners.length).toBeLessThanOrEqual(RF + 1);
      expect(conf.voters.length).toBeGreaterThanOrEqual(RF);
    }
    expect(seen).toEqual(['addLearner', 'promote', 'removeSource', 'done']);
    expect(conf).toEqual({ voters: [2, 3, 4], learners: [] });
  });

  it('hands leadership away first when the source leads', () => {
    expect(step([1, 2, 3, 4], [], 1, 4, 1)).toBe('transferLeadership');
    expect(step([1, 2, 3, 4], [], 1, 4, 4)).toBe('removeSource');
  });

  it('resumes from any configuration a crash or leader change left, and a finished move is done', () => {
    expect(step([1, 2, 3], [4], 1, 4)).toBe('promote');
    expect(step([1, 2, 3, 4], [], 1, 4, 2)).toBe('removeSource');
    expect(step([2, 3, 4], [], 1, 4)).toBe('done');
    // A learner left behind as the source (never the case here, but harmless): removed.
    expect(step([2, 3, 4], [1], 1, 4)).toBe('removeSource');
  });

  it('refuses with MOVE_REFUSED and a stable reason, changing nothing', () => {
    const base = { leader: 1, replicationFactor: RF };
    expect(refusal({ ...base, conf: { voters: [1, 2, 3], learners: [] }, from: 1, to: 2 })).toBe('MOVE_REFUSED:already-replica');
    expect(refusal({ ...base, conf: { voters: [1, 2, 3], learners: [] }, from: 4, to: 5 })).toBe('MOVE_REFUSED:not-replica');
    // Another move's learner, or its RF + 1 voters: one move per partition at a time.
    expect(refusal({ ...base, conf: { voters: [1, 2, 3], learners: [5] }, from: 1, to: 4 })).toBe('MOVE_REFUSED:in-progress');
    expect(refusal({ ...base, conf: { voters: [1, 2, 3, 5], learners: [] }, from: 1, to: 4 })).toBe('MOVE_REFUSED:in-progress');
    expect(refusal({ ...base, conf: { voters: [1, 2, 3, 4, 5], learners: [] }, from: 1, to: 4 })).toBe('MOVE_REFUSED:in-progress');
    // Removing the source would leave fewer than RF voters.
    expect(refusal({ ...base, conf: { voters: [1, 2], learners: [] }, from: 1, to: 4 })).toBe('MOVE_REFUSED:too-few-voters');
    expect(refusal({ ...base, conf: { voters: [1, 2, 3], learners: [] }, from: 1, to: 1 })).toBe('INVALID_ARGUMENT:');
  });

  it('promotes a learner only when it replicates close to the leader', () => {
    expect(caughtUp(undefined, 100)).toBe(false);
    expect(caughtUp({ match: 100, state: 'snapshot' }, 100)).toBe(false);
    expect(caughtUp({ match: 100 - MAX_PROMOTION_LAG - 1, state: 'replicate' }, 100)).toBe(false);
    expect(caughtUp({ match: 100 - MAX_PROMOTION_LAG, state: 'replicate' }, 100)).toBe(true);
  });
});
