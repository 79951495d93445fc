import assert from 'node:assert/strict';
import type { Snapshot } from './types.js';

/**
 * Flow control for one follower: a window of appends sent but not yet acknowledged, bounded by
 * count and by bytes, so a slow follower cannot make the leader buffer without limit.
 */
export class Inflights {
  private readonly indexes: number[] = [];
  private readonly sizes: number[] = [];
  private bytes = 0;

  constructor(
    private readonly maxMessages: number,
    private readonly maxBytes: number,
  ) {
    assert.ok(maxMessages >= 1 && maxBytes >= 1);
  }

  add(lastIndex: number, messageBytes: number): void {
    assert.ok(!this.full(), 'inflights: add while full');
    const previous = this.indexes[this.indexes.length - 1];
    assert.ok(previous === undefined || lastIndex > previous, 'inflights must increase');
    this.indexes.push(lastIndex);
    this.sizes.push(messageBytes);
    this.bytes += messageBytes;
  }

  /** Frees every message whose last entry is at or below `index` (it was acknowledged). */
  freeLE(index: number): void {
    let count = 0;
    while (count < this.indexes.length && (this.indexes[count] as number) <= index) {
      this.bytes -= this.sizes[count] as number;
      count++;
    }
    if (count > 0) {
      this.indexes.splice(0, count);
      this.sizes.splice(0, count);
    }
  }

  /** Frees the oldest message: lets a leader probe again when acknowledgements were lost. */
  freeFirstOne(): void {
    const first = this.indexes[0];
    if (first !== undefined) this.freeLE(first);
  }

  full(): boolean {
    return this.indexes.length >= this.maxMessages || this.bytes >= this.maxBytes;
  }

  count(): number {
    return this.indexes.length;
  }

  reset(): void {
    this.indexes.length = 0;
    this.sizes.length = 0;
    this.bytes = 0;
  }
}

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

/** The leader's view of one follower (Raft §5.3 nextIndex/matchIndex, plus etcd's probe states). */
export class Progress {
  // Invariant: match < next.
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  /** probe: an append is outstanding; wait for its answer or the next heartbeat response. */
  probeSent = false;
  /** snapshot: index of the snapshot being sent. */
  pendingSnapshot = 0;
  /** snapshot: the snapshot being streamed, bytes the follower confirmed, bytes sent. */
  snapshot: Snapshot | undefined = undefined;
  snapshotAcked = 0;
  snapshotSent = 0;
  /** snapshot: snapshotAcked when the last heartbeat answer came, to spot a stalled transfer. */
  snapshotAckedAtHeartbeat = -1;
  /** Heard from since the last CheckQuorum round. */
  recentActive = false;
  /** Highest leader tick echoed back by this follower's heartbeat responses (for the lease). */
  leaseAckTick = Number.NEGATIVE_INFINITY;
  /** Commit index the follower reported last. */
  commit = 0;
  /** The follower answered the last quiesce heartbeat by going quiet. */
  quiesced = false;
  readonly inflights: Inflights;
  readonly isLearner: boolean;

  constructor(options: { next: number; isLearner: boolean; maxInflightMessages: number; maxInflightBytes: number }) {
    this.next = options.next;
    this.isLearner = options.isLearner;
    this.inflights = new Inflights(options.maxInflightMessages, options.maxInflightBytes);
  }

  becomeProbe(): void {
    if (this.state === 'snapshot') {
      const pending = this.pendingSnapshot;
      this.resetState('probe');
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState('probe');
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState('replicate');
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshot: Snapshot): void {
    this.resetState('snapshot');
    this.pendingSnapshot = snapshot.meta.index;
    this.snapshot = snapshot;
  }

  /** Records an acknowledgement up to `index`; returns whether it told the leader anything new. */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /**
   * Handles a rejected append at `rejected`; `matchHint` is the highest index that may match.
   * Returns false when the rejection is stale (answers an append we have since moved past).
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  /** Optimistically advances `next` after sending entries up to `lastIndex` while replicating. */
  sentEntries(lastIndex: number, messageBytes: number): void {
    if (this.state === 'replicate') {
      this.next = lastIndex + 1;
      this.inflights.add(lastIndex, messageBytes);
    } else if (this.state === 'probe') {
      this.probeSent = true;
    } else {
      assert.fail(`sending entries in state ${this.state}`);
    }
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.full();
      case 'snapshot':
        return true;
    }
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshot = undefined;
    this.snapshotAcked = 0;
    this.snapshotSent = 0;
    this.snapshotAckedAtHeartbeat = -1;
    this.state = state;
    this.inflights.reset();
  }
}
