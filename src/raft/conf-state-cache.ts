/**
 * A group's configuration as sorted arrays (ConfState), made again only when it changed: every
 * group's Ready and apply asks for it. Raft replaces its voter and learner sets, never changes them
 * in place (applyConfState, applyConfChange), so their identity tells whether the cached arrays
 * still hold; the arrays are frozen, as every caller shares them.
 */
import type { ConfState, NodeId } from './types.js';

export class ConfStateCache {
  private voters: ReadonlySet<NodeId> | undefined;
  private learners: ReadonlySet<NodeId> | undefined;
  private state: ConfState | undefined;

  of(voters: ReadonlySet<NodeId>, learners: ReadonlySet<NodeId>): ConfState {
    if (this.state !== undefined && this.voters === voters && this.learners === learners) return this.state;
    const sorted = (set: ReadonlySet<NodeId>): NodeId[] => Object.freeze([...set].sort((a, b) => a - b)) as NodeId[];
    this.state = Object.freeze({ voters: sorted(voters), learners: sorted(learners) });
    this.voters = voters;
    this.learners = learners;
    return this.state;
  }
}
