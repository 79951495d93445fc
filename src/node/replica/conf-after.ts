/**
 * A group's configuration after one conf-change entry, as a pure function (the Raft core's rule,
 * raft.ts applyConfChange): the applier folds a Ready's conf changes in entry by entry, so what a
 * split entry decides from the configuration does not depend on how entries were batched.
 */
import type { ConfChange, ConfState } from '../../raft/types.js';

/** The configuration after one conf-change entry (the Raft core's rule, raft.ts applyConfChange). */
export function confAfter(conf: ConfState, change: ConfChange): ConfState {
  const voters = new Set(conf.voters);
  const learners = new Set(conf.learners);
  if (change.type === 'addVoter') {
    learners.delete(change.node);
    voters.add(change.node);
  } else if (change.type === 'addLearner') {
    if (!voters.has(change.node)) learners.add(change.node);
  } else {
    voters.delete(change.node);
    learners.delete(change.node);
  }
  return { voters: [...voters], learners: [...learners] };
}
