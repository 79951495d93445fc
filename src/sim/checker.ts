import type { Entry, NodeId } from '../raft/types.js';
import { dataHash } from './state-machine.js';

export class InvariantViolation extends Error {
  constructor(
    readonly invariant: string,
    message: string,
  ) {
    super(`${invariant}: ${message}`);
    this.name = 'InvariantViolation';
  }
}

/**
 * Raft's safety properties (Raft paper Figure 3) plus linearizable reads, checked from the outside:
 * the checker sees only what nodes persist, commit, apply and answer, never their internals.
 */
export class SafetyChecker {
  /** Election Safety: term -> the one node that led it. */
  private readonly leaders = new Map<number, NodeId>();
  /** Log Matching: "index:term" -> hash of the entry and the term of its predecessor. */
  private readonly entriesSeen = new Map<string, { hash: number; previousTerm: number }>();
  /** Committed entries as some node reported them: index -> term. */
  private readonly committedTerms = new Map<number, number>();
  private maxCommitted = 0;
  /** State Machine Safety: index -> digest of the applied prefix up to it. */
  private readonly appliedDigests = new Map<number, number>();
  /** Reads: the highest acknowledged write index when each read began. */
  private ackedWriteIndex = 0;
  private readonly readsInFlight = new Map<string, number>();
  readsChecked = 0;
  writesAcked = 0;

  observeLeader(node: NodeId, term: number): void {
    const existing = this.leaders.get(term);
    if (existing !== undefined && existing !== node) {
      throw new InvariantViolation('election-safety', `nodes ${existing} and ${node} both led term ${term}`);
    }
    this.leaders.set(term, node);
  }

  /** Called with entries a node just made durable, and the term of the entry before the first. */
  observePersisted(node: NodeId, entries: readonly Entry[], previousTerm: number): void {
    let before = previousTerm;
    for (const entry of entries) {
      const key = `${entry.index}:${entry.term}`;
      const hash = dataHash(entry.data) ^ entry.type;
      const seen = this.entriesSeen.get(key);
      if (seen === undefined) {
        this.entriesSeen.set(key, { hash, previousTerm: before });
      } else if (seen.hash !== hash || seen.previousTerm !== before) {
        throw new InvariantViolation(
          'log-matching',
          `node ${node} stored entry ${key} with different content or predecessor term (${before} vs ${seen.previousTerm})`,
        );
      }
      before = entry.term;
    }
  }

  /** A node's commit index moved from `previous` to `commit`; `termAt` reads its log (undefined when compacted). */
  observeCommit(node: NodeId, previous: number, commit: number, termAt: (index: number) => number | undefined): void {
    for (let index = previous + 1; index <= commit; index++) {
      const term = termAt(index);
      if (term === undefined) continue;
      const known = this.committedTerms.get(index);
      if (known !== undefined && known !== term) {
        throw new InvariantViolation('state-machine-safety', `node ${node} committed term ${term} at index ${index}, another committed term ${known}`);
      }
      this.committedTerms.set(index, term);
    }
    this.maxCommitted = Math.max(this.maxCommitted, commit);
  }

  /** Leader Completeness: a new leader's log holds every entry committed before its term. */
  observeBecameLeader(node: NodeId, term: number, firstIndex: number, termAt: (index: number) => number | undefined): void {
    this.observeLeader(node, term);
    for (const [index, committedTerm] of this.committedTerms) {
      if (index < firstIndex) continue; // Folded into the leader's snapshot, checked by digests.
      const actual = termAt(index);
      if (actual !== committedTerm) {
        throw new InvariantViolation(
          'leader-completeness',
          `leader ${node} of term ${term} has term ${actual} at index ${index}, but term ${committedTerm} was committed there`,
        );
      }
    }
  }

  observeApplied(node: NodeId, index: number, digest: number): void {
    const known = this.appliedDigests.get(index);
    if (known === undefined) this.appliedDigests.set(index, digest);
    else if (known !== digest) {
      throw new InvariantViolation('state-machine-safety', `node ${node} applied a different history up to index ${index}`);
    }
  }

  writeAcknowledged(index: number): void {
    this.writesAcked++;
    this.ackedWriteIndex = Math.max(this.ackedWriteIndex, index);
  }

  readStarted(context: string): void {
    this.readsInFlight.set(context, this.ackedWriteIndex);
  }

  readDropped(context: string): void {
    this.readsInFlight.delete(context);
  }

  /** Linearizability of ReadIndex: the read index covers every write acknowledged before the read. */
  readAnswered(node: NodeId, context: string, index: number): void {
    const floor = this.readsInFlight.get(context);
    if (floor === undefined) return; // Duplicate answer (duplicated message): already checked.
    this.readsInFlight.delete(context);
    this.readsChecked++;
    if (index < floor) {
      throw new InvariantViolation('stale-read', `node ${node} answered read ${context} at index ${index}, but write at ${floor} was acknowledged before it began`);
    }
  }

  maxCommittedIndex(): number {
    return this.maxCommitted;
  }
}

/**
 * CheckQuorum (thesis §6.2) seen from outside: a leader that has received no answer from a quorum
 * of voters for two election timeouts (its check runs once per timeout) must have stepped down. A
 * leader gets a fresh grace period when it is elected, wakes from quiescence or changes membership.
 */
export class QuorumContactChecker {
  private readonly heard = new Map<NodeId, Map<NodeId, number>>();
  private readonly graceFrom = new Map<NodeId, number>();

  constructor(private readonly windowTicks: number) {}

  answerDelivered(leader: NodeId, from: NodeId, now: number): void {
    let heard = this.heard.get(leader);
    if (!heard) this.heard.set(leader, (heard = new Map()));
    heard.set(from, now);
  }

  grace(leader: NodeId, now: number): void {
    this.graceFrom.set(leader, now);
  }

  check(leader: NodeId, term: number, voters: readonly NodeId[], now: number): void {
    const since = now - this.windowTicks;
    if ((this.graceFrom.get(leader) ?? Number.NEGATIVE_INFINITY) >= since) return;
    const heard = this.heard.get(leader);
    let reachable = 0;
    for (const voter of voters) {
      if (voter === leader || (heard?.get(voter) ?? Number.NEGATIVE_INFINITY) >= since) reachable++;
    }
    if (reachable < Math.floor(voters.length / 2) + 1) {
      throw new InvariantViolation(
        'check-quorum',
        `node ${leader} still leads term ${term} although only ${reachable} of ${voters.length} voters answered in ${this.windowTicks} ticks`,
      );
    }
  }
}
