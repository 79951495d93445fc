import assert from 'node:assert/strict';
import type { RaftConfig } from './config.js';
import { Raft } from './raft.js';
import {
  EntryType,
  decodeConfChange,
  encodeConfChange,
  hardStateEqual,
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type ReadState,
  type Role,
  type Snapshot,
  type SoftState,
} from './types.js';

/**
 * What the host must do, in this order, before calling advance():
 *
 * 1. Persist `hardState` (if set), `snapshot` (if set; it replaces the log and the state machine)
 *    and `entries` (appending, truncating any conflicting suffix) with one synced write.
 * 2. Send `messages`. They may promise what step 1 stored (votes, acknowledgements), so never
 *    before the write is durable.
 * 3. Apply `committedEntries` to the state machine in order (conf-change entries need no action
 *    from the host: the core applies them in advance()).
 * 4. Serve `readStates` once the state machine has applied their index; fail `droppedReads`.
 * 5. Call advance(ready).
 */
export interface Ready {
  readonly softState: SoftState | undefined;
  readonly hardState: HardState | undefined;
  readonly snapshot: Snapshot | undefined;
  readonly entries: readonly Entry[];
  readonly messages: readonly Message[];
  readonly committedEntries: readonly Entry[];
  readonly readStates: readonly ReadState[];
  readonly droppedReads: readonly string[];
}

export interface RaftStatus {
  readonly id: NodeId;
  readonly role: Role;
  readonly lead: NodeId;
  readonly term: number;
  readonly vote: NodeId;
  readonly commit: number;
  readonly applied: number;
  readonly lastIndex: number;
  readonly firstIndex: number;
  readonly confState: ConfState;
  readonly quiesced: boolean;
  readonly leaseValid: boolean;
  readonly leadTransferee: NodeId;
  /** Leader only: each member's match index and replication state. */
  readonly progress: ReadonlyMap<NodeId, { match: number; next: number; state: string }>;
}

/** Tick times a RawNode remembers for the lease (leaseStartMs); an older quorum tick gives no lease. */
const TICK_TIMES = 64;

/**
 * A host's shared tick counter (the multi-Raft driver's): a RawNode attached to one is ticked by
 * catching up to it, so the host may leave a quiesced group unticked for any time and settle its
 * ticks in one step when the group is next used.
 */
export interface TickSource {
  readonly ticks: number;
}

/** The public face of one Raft group (the etcd-io/raft RawNode pattern): tick, step, propose, ready, advance. */
export class RawNode {
  private readonly raft: Raft;
  private previousSoft: SoftState;
  private previousHard: HardState;
  private outstanding: Ready | undefined = undefined;
  private tickSource: TickSource | undefined = undefined;
  /** The source's tick count this node has been ticked to. Invariant: <= tickSource.ticks. */
  private tickedTo = 0;
  /** Told after every call that may give this group work (a Ready, a tick that matters). */
  private onActivity: (() => void) | undefined = undefined;
  /** The host's monotonic clock, for the lease (enableLeaseClock); undefined: no lease. */
  private leaseClock: (() => number) | undefined = undefined;
  /**
   * When Raft's tick counter reached each of its last TICK_TIMES values, on the lease clock: slot
   * t % TICK_TIMES holds tick t and the clock read before the call that made raft.ticks t.
   * Invariant: a heartbeat carrying leaseTick t left after the recorded time of t (Raft stamps a
   * heartbeat with its current tick), so the recorded time is a safe lease start for it.
   */
  private tickAt: Float64Array | undefined = undefined;
  private tickAtMs: Float64Array | undefined = undefined;

  constructor(config: RaftConfig) {
    this.raft = new Raft(config);
    this.previousSoft = { lead: this.raft.lead, role: this.raft.role };
    this.previousHard = this.raft.hardState();
  }

  get id(): NodeId {
    return this.raft.id;
  }

  /**
   * Attaches the host's tick counter and activity listener (the multi-Raft driver does, once, before
   * the first tick). From then on tick() catches up to `source` rather than adding one tick, and
   * `onActivity` runs after every call that may give the group work.
   */
  attachHost(source: TickSource, onActivity: () => void): void {
    this.tickSource = source;
    this.tickedTo = source.ticks;
    this.onActivity = onActivity;
  }

  /** Whether the group is quiesced here (a quiet leader, or a follower told to stop its election timer). */
  get quiesced(): boolean {
    return this.raft.quiesced;
  }

  /** Whether `peer` is a voter of this group now (cheap: no status() object per call). */
  isVoter(peer: NodeId): boolean {
    return this.raft.voters.has(peer);
  }

  /** Whether this node would campaign on an election timeout (a voter whose log reaches its vote floor). */
  get promotable(): boolean {
    return this.raft.promotable();
  }

  /** How many learners the applied configuration has (cheap: no status() object per call). */
  get learnerCount(): number {
    return this.raft.learners.size;
  }

  /** The leader this node knows (0: none). */
  get lead(): NodeId {
    return this.raft.lead;
  }

  get role(): Role {
    return this.raft.role;
  }

  /** The learners of the applied configuration (cheap when there are none, the common case). */
  learnerList(): readonly number[] {
    return this.raft.learners.size === 0 ? [] : this.raft.confState().learners;
  }

  /** The applied configuration, as status().confState (without the rest of a status object). */
  confState(): ConfState {
    return this.raft.confState();
  }

  /** The voters of the applied configuration, in status().confState order (cheap: no progress Map). */
  voterList(): readonly number[] {
    return this.raft.confState().voters;
  }

  /** A follower's match index as this leader tracks it, or undefined (not a leader, or not a member). Cheap. */
  matchOf(id: NodeId): number | undefined {
    return this.raft.role === 'leader' ? this.raft.progress.get(id)?.match : undefined;
  }

  /** The current term (cheap: no status() object). */
  get term(): number {
    return this.raft.term;
  }

  /**
   * Without a tick source, one tick. With one, the ticks owed since the last call: run one by one
   * while the group is awake, and settled at once (Raft.skipQuiescedTicks) once it is quiesced.
   */
  tick(): void {
    if (this.tickSource === undefined) {
      if (this.leaseClock !== undefined) this.recordTickTime(this.raft.ticks + 1, this.leaseClock());
      this.raft.tick();
    } else this.settleTicks();
    this.onActivity?.();
  }

  /**
   * Lets the host measure a leader lease on `clock` (monotonic ms; src/node/replica/read-barrier.ts): from
   * now on every tick records when it happened, and leaseStartMs answers.
   */
  enableLeaseClock(clock: () => number): void {
    this.leaseClock = clock;
    this.tickAt = new Float64Array(TICK_TIMES).fill(-1);
    this.tickAtMs = new Float64Array(TICK_TIMES);
    this.recordTickTime(this.raft.ticks, clock());
  }

  /**
   * The lease's start on the lease clock: the time of the leader tick the newest heartbeat a quorum
   * acknowledged carried (Raft.leaseQuorumTick), at or before that heartbeat left. Undefined when
   * no lease may be taken, or that tick is too old to be remembered. A read only: safe between a
   * Ready and its advance.
   */
  leaseStartMs(): number | undefined {
    const tick = this.raft.leaseQuorumTick();
    if (tick === undefined || this.tickAt === undefined || this.tickAtMs === undefined) return undefined;
    const slot = tick % TICK_TIMES;
    return this.tickAt[slot] === tick ? this.tickAtMs[slot] : undefined;
  }

  /** The commit index this node knows (the leader's is the read index of a lease read). */
  get committedIndex(): number {
    return this.raft.log.committed;
  }

  /** A lease read came in: the group has work, so it does not quiesce (reads would then need a round). */
  noteRead(): void {
    this.raft.noteActivity();
  }

  private recordTickTime(tick: number, nowMs: number): void {
    if (this.tickAt === undefined || this.tickAtMs === undefined) return;
    const slot = tick % TICK_TIMES;
    this.tickAt[slot] = tick;
    this.tickAtMs[slot] = nowMs;
  }

  /**
   * Brings a parked group's clock up to the host's before anything reads or changes its state: a
   * group the host stopped ticking is quiesced (the host parks only those, and any wake goes
   * through a call that settles first), so the owed ticks move only counters.
   */
  private settleTicks(): void {
    const source = this.tickSource;
    if (source === undefined) return;
    let owed = source.ticks - this.tickedTo;
    if (owed <= 0) return;
    this.tickedTo = source.ticks;
    const nowMs = this.leaseClock?.();
    // Awake: real ticks (the host ticks awake groups every tick, so this owes few). A real tick may
    // quiesce the group; the rest is then settled in one step.
    while (owed > 0 && !this.raft.quiesced) {
      if (nowMs !== undefined) this.recordTickTime(this.raft.ticks + 1, nowMs);
      this.raft.tick();
      owed--;
    }
    if (owed > 0) {
      if (nowMs !== undefined) this.recordTickTime(this.raft.ticks + owed, nowMs);
      this.raft.skipQuiescedTicks(owed);
    }
  }

  /** Tells the host this group has work outside Raft (e.g. reads waiting for a round). */
  notifyHost(): void {
    this.onActivity?.();
  }

  /** Feeds a message received from a peer. */
  step(message: Message): void {
    this.settleTicks();
    try {
      this.raft.step(message);
    } finally {
      this.onActivity?.();
    }
  }

  /** Proposes data for the log. Leader only; throws RaftError PROPOSAL_DROPPED otherwise. */
  propose(data: Uint8Array): { index: number; term: number } {
    this.settleTicks();
    try {
      return this.raft.propose(data, EntryType.Normal);
    } finally {
      this.onActivity?.();
    }
  }

  /** Proposes a single-server membership change; one may be pending at a time. */
  proposeConfChange(change: ConfChange): { index: number; term: number } {
    this.settleTicks();
    try {
      return this.raft.propose(encodeConfChange(change), EntryType.ConfChange);
    } finally {
      this.onActivity?.();
    }
  }

  /** Requests a linearizable read; the answer arrives in Ready.readStates with this context. */
  readIndex(context: string): void {
    this.settleTicks();
    try {
      this.raft.readIndex(context);
    } finally {
      this.onActivity?.();
    }
  }

  transferLeadership(target: NodeId): void {
    this.settleTicks();
    try {
      this.raft.transferLeadership(target);
    } finally {
      this.onActivity?.();
    }
  }

  /** Lets this node's current election timeout run `ticks` longer (Raft.postponeElection). */
  postponeElection(ticks: number): void {
    this.settleTicks();
    this.raft.postponeElection(ticks);
  }

  /** Starts an election now (pre-vote first when enabled). */
  campaign(): void {
    this.settleTicks();
    this.raft.hup(false);
    this.onActivity?.();
  }

  /** Whether `peer` is a voter or learner of this group now (the host drops messages from others). */
  isMember(peer: NodeId): boolean {
    return this.raft.voters.has(peer) || this.raft.learners.has(peer);
  }

  /** Whether a configuration this node applied ever named it (Raft.wasMember; sticky). */
  get wasMember(): boolean {
    return this.raft.wasMember;
  }

  /** The index of the last entry in this node's log, stable or not. */
  lastIndex(): number {
    return this.raft.log.lastIndex();
  }

  reportUnreachable(peer: NodeId): void {
    this.settleTicks();
    this.raft.reportUnreachable(peer);
    this.onActivity?.();
  }

  hasReady(): boolean {
    const raft = this.raft;
    if (raft.owesAppends || raft.messages.length > 0 || raft.readStates.length > 0 || raft.droppedReads.length > 0) return true;
    if (raft.log.unstable.entries.length > 0 || raft.log.unstable.snapshot !== undefined) return true;
    if (raft.log.hasNextCommittedEntries()) return true;
    if (!hardStateEqual(raft.hardState(), this.previousHard)) return true;
    return raft.lead !== this.previousSoft.lead || raft.role !== this.previousSoft.role;
  }

  ready(): Ready {
    assert.ok(this.outstanding === undefined, 'ready() called again before advance()');
    const raft = this.raft;
    // batchAppends: what this iteration's proposals and commit advances owe the followers, as one append each.
    raft.flushAppends();
    const soft = { lead: raft.lead, role: raft.role };
    const hard = raft.hardState();
    const ready: Ready = {
      softState: soft.lead !== this.previousSoft.lead || soft.role !== this.previousSoft.role ? soft : undefined,
      hardState: hardStateEqual(hard, this.previousHard) ? undefined : hard,
      snapshot: raft.log.unstable.snapshot,
      entries: raft.log.unstableEntries(),
      messages: raft.messages,
      committedEntries: raft.log.nextCommittedEntries(raft.config.maxCommittedBytesPerReady),
      readStates: raft.readStates,
      droppedReads: raft.droppedReads,
    };
    raft.messages = [];
    raft.readStates = [];
    raft.droppedReads = [];
    this.outstanding = ready;
    return ready;
  }

  /** Tells the core the host finished the Ready (persisted, sent, applied). */
  advance(ready: Ready): void {
    assert.ok(this.outstanding === ready, 'advance() must be given the Ready last returned');
    this.outstanding = undefined;
    const raft = this.raft;
    if (ready.softState) this.previousSoft = ready.softState;
    if (ready.hardState) this.previousHard = ready.hardState;
    if (ready.snapshot) {
      raft.log.stableSnapshotTo(ready.snapshot.meta.index);
      raft.log.appliedTo(ready.snapshot.meta.index);
    }
    const lastEntry = ready.entries[ready.entries.length - 1];
    if (lastEntry) raft.log.stableTo(lastEntry.index, lastEntry.term);
    for (const entry of ready.committedEntries) {
      raft.log.appliedTo(entry.index);
      if (entry.type === EntryType.ConfChange) raft.applyConfChange(decodeConfChange(entry.data), entry.index);
    }
  }

  status(): RaftStatus {
    // The lease (leaseValid) is measured in ticks: a parked group's owed ticks count first (only
    // counters move, so status() stays free of Raft side effects).
    if (this.raft.quiesced) this.settleTicks();
    const raft = this.raft;
    const progress = new Map<NodeId, { match: number; next: number; state: string }>();
    if (raft.role === 'leader') {
      for (const [id, p] of raft.progress) progress.set(id, { match: p.match, next: p.next, state: p.state });
    }
    return {
      id: raft.id,
      role: raft.role,
      lead: raft.lead,
      term: raft.term,
      vote: raft.vote,
      commit: raft.log.committed,
      applied: raft.log.applied,
      lastIndex: raft.log.lastIndex(),
      firstIndex: raft.log.firstIndex(),
      confState: raft.confState(),
      quiesced: raft.quiesced,
      leaseValid: raft.leaseValid(),
      leadTransferee: raft.leadTransferee,
      progress,
    };
  }
}
