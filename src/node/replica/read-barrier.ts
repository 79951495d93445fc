/**
 * The read barrier of one partition replica: a linearizable read waits here until the replica's
 * state machine holds everything committed before the read arrived. Two ways to learn that index:
 *
 * - The leader lease (thesis 6.4.1), the default (--read-mode lease): while a quorum acknowledged a
 *   heartbeat round that left less than leaseMs ago (on this node's monotonic clock), no other
 *   leader can exist, so this leader's commit index is the read index: no message at all.
 * - ReadIndex (thesis 6.4), the fallback and --read-mode safe: a heartbeat round confirms the
 *   leadership, batched over the reads that arrived since the previous round started.
 *
 * Only the node loop calls into it, except leaseReadReady (a read-only check the executor makes
 * outside the loop).
 */
import type { AtollError } from '../../errors.js';
import type { RawNode } from '../../raft/rawnode.js';

export interface ReadWaiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Bound on the rate error of any node's monotonic clock: a node's clock advances between 1 - rho and
 * 1 + rho of true time. Quartz oscillators are within 100 ppm; 1% leaves room for virtual machines
 * (the whole-node simulator drifts clocks by up to 0.1%, src/sim/node/sim-host.ts).
 */
export const MAX_CLOCK_RATE_DRIFT = 0.01;

/**
 * How long a lease lasts after the heartbeat round it rests on left the leader, on the leader's
 * clock. The argument, with E = electionTicks and T = tickMs:
 *
 * 1. A voter that acknowledged the heartbeat stepped it at time r (its clock) after it left, and
 *    refuses votes and pre-votes for anyone else (Raft.inLease) until E of its ticks passed after r
 *    (its election timer restarts on the heartbeat and counts only ticks; a quiesced group does not
 *    count, a restarted node refuses for E ticks after it starts and campaigns for nothing
 *    meanwhile, Raft.hup). The driver catches its ticks up to its clock before stepping any frame,
 *    and never ticks ahead of it (raft-driver.ts), so the E-th tick after r comes later than
 *    r + (E - 1) * T on the voter's clock, which is at least (E - 1) * T / (1 + rho) true time.
 * 2. A quorum acknowledged, and every other quorum (every electorate) intersects it: no other leader
 *    is elected before that much true time after the round left, whatever the voters' clocks read.
 * 3. The leader measures leaseMs on its own clock, at most leaseMs / (1 - rho) true time. So the
 *    lease is sound while leaseMs / (1 - rho) < (E - 1) * T / (1 + rho); one more tick is kept as
 *    margin for the tick that may be under way when the heartbeat is stepped.
 */
export function leaseDurationMs(electionTicks: number, tickMs: number): number {
  const rho = MAX_CLOCK_RATE_DRIFT;
  return Math.floor(((electionTicks - 2) * tickMs * (1 - rho)) / (1 + rho));
}

/** How a replica measures its lease; absent: every read takes a ReadIndex round (--read-mode safe). */
export interface LeaseClock {
  /** The node's monotonic clock (NodeClock.monotonicMs). */
  readonly nowMs: () => number;
  /** leaseDurationMs of the node's settings (a negative control stretches it). */
  readonly leaseMs: number;
}

export class ReadBarrier {
  /** Reads that arrived since the last ReadIndex round started: they join the next round. */
  private waitingForRound: ReadWaiter[] = [];
  private readonly rounds = new Map<string, ReadWaiter[]>();
  /** Reads whose index is known, waiting for the state machine to apply it. */
  private waitingForApply: Array<{ index: number; waiter: ReadWaiter }> = [];
  private roundCounter = 0;
  /**
   * The applied index at the end of the last apply (release): everything up to it is in the state
   * machine. The replica's appliedIndex moves before an entry's apply finishes, so the executor's
   * lease check outside the loop compares against this one.
   */
  private released = 0;
  /** Reads answered under the lease, and ReadIndex rounds started (tests and measurements). */
  leaseReads = 0;
  readRounds = 0;

  constructor(
    private readonly group: number,
    private readonly raw: RawNode,
    private readonly lease: LeaseClock | undefined,
    private readonly notLeaderError: (cause?: unknown) => AtollError,
  ) {
    if (lease !== undefined) raw.enableLeaseClock(lease.nowMs);
  }

  /** The read index the lease gives now, or undefined when it does not hold. */
  private leaseReadIndex(): number | undefined {
    if (this.lease === undefined) return undefined;
    const startMs = this.raw.leaseStartMs();
    if (startMs === undefined) return undefined;
    const nowMs = this.lease.nowMs();
    // Invariant (see leaseDurationMs): served only while no other leader can have been elected,
    // i.e. before leaseMs on this clock after a quorum-acknowledged heartbeat round left.
    if (!(nowMs - startMs < this.lease.leaseMs)) return undefined;
    this.raw.noteRead();
    return this.raw.committedIndex;
  }

  /**
   * Executor's fast path, outside the loop: true when the lease holds and the state machine already
   * holds the commit index, so the read may run now without a loop iteration.
   */
  leaseReadReady(): boolean {
    const index = this.leaseReadIndex();
    if (index === undefined || index > this.released) return false;
    this.leaseReads++;
    return true;
  }

  enqueue(waiter: ReadWaiter): void {
    this.waitingForRound.push(waiter);
    // The loop visits only groups with work (group-activity.ts): this is work outside Raft.
    this.raw.notifyHost();
  }

  /**
   * The loop: serves the reads that arrived under the lease (their index is the commit index now),
   * or starts a ReadIndex round for them (which also wakes a quiesced group). `applied` is what the
   * state machine holds now.
   */
  startRound(applied: number): void {
    if (this.waitingForRound.length === 0) return;
    const waiters = this.waitingForRound;
    this.waitingForRound = [];
    // Invariant: a round starts only at a leader, whose rounds end in a read state or a dropped
    // context when it steps down (Raft.abandonLeadership). A read enqueued while this replica led
    // may reach the loop after it stepped down; Raft would forward that ReadIndex to the new
    // leader, and nothing retries or fails it when the message or its answer is lost: the read
    // (a watch's barrier) waited for good (whole-node simulator seed 76954). Refused instead, so
    // the caller goes to the leader.
    if (this.raw.role !== 'leader') {
      for (const waiter of waiters) waiter.reject(this.notLeaderError());
      return;
    }
    const leaseIndex = this.leaseReadIndex();
    if (leaseIndex !== undefined) {
      this.leaseReads += waiters.length;
      for (const waiter of waiters) this.waitingForApply.push({ index: leaseIndex, waiter });
      this.release(applied);
      return;
    }
    const context = `${this.group}:${++this.roundCounter}`;
    try {
      this.raw.readIndex(context);
      this.rounds.set(context, waiters);
      this.readRounds++;
    } catch (error) {
      for (const waiter of waiters) waiter.reject(this.notLeaderError(error));
    }
  }

  /** A Ready's read answers: indexes for rounds that completed, and rounds leadership loss dropped. */
  onReady(readStates: ReadonlyArray<{ index: number; context: string }>, droppedReads: readonly string[]): void {
    for (const state of readStates) {
      const waiters = this.rounds.get(state.context);
      if (!waiters) continue;
      this.rounds.delete(state.context);
      for (const waiter of waiters) this.waitingForApply.push({ index: state.index, waiter });
    }
    for (const context of droppedReads) {
      const waiters = this.rounds.get(context) ?? [];
      this.rounds.delete(context);
      for (const waiter of waiters) waiter.reject(this.notLeaderError());
    }
  }

  /** The state machine holds everything up to `applied`: answer the reads waiting for it. */
  release(applied: number): void {
    this.released = Math.max(this.released, applied);
    if (this.waitingForApply.length === 0) return;
    const still: typeof this.waitingForApply = [];
    for (const read of this.waitingForApply) {
      if (read.index <= applied) read.waiter.resolve();
      else still.push(read);
    }
    this.waitingForApply = still;
  }

  /** Fails everything still waiting (shutdown). */
  failAll(error: AtollError): void {
    for (const waiters of this.rounds.values()) for (const waiter of waiters) waiter.reject(error);
    this.rounds.clear();
    for (const waiter of this.waitingForRound) waiter.reject(error);
    this.waitingForRound = [];
    for (const read of this.waitingForApply) read.waiter.reject(error);
    this.waitingForApply = [];
  }
}
