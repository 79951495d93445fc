import assert from 'node:assert/strict';
import { resolveRaftConfig, type RaftConfig, type ResolvedRaftConfig } from './config.js';
import { sendCommitNotice, stepCommitNotice } from './commit-notice.js';
import { RaftError, isRaftError } from './errors.js';
import { concatBytes } from '../storage/bytes.js';
import { RaftLog } from './log.js';
import { ConfStateCache } from './conf-state-cache.js';
import { Progress } from './progress.js';
import {
  NONE,
  EntryType,
  decodeConfChange,
  entriesBytes,
  entryBytes,
  reachesVoteFloor,
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type ReadState,
  type Role,
  type Snapshot,
} from './types.js';

/** A ReadIndex request waiting for a quorum of heartbeat acknowledgements (thesis §6.4). */
interface PendingRead {
  readonly context: string;
  /** Who asked: this node, or a follower that forwarded the request. */
  readonly from: NodeId;
  readonly index: number;
  readonly seq: number;
  readonly acks: Set<NodeId>;
}

/** A snapshot being received chunk by chunk from the leader. */
interface IncomingSnapshot {
  readonly meta: Message['snapshot'] & object;
  readonly from: NodeId;
  readonly term: number;
  readonly chunks: Uint8Array[];
  bytes: number;
}

/**
 * The Raft algorithm for one group (Ongaro's thesis). Pure: it reacts to tick() and step() by
 * changing its own state and queueing messages; RawNode hands those out through Ready.
 *
 * Roles are swapped, not branched on everywhere: becomeX() sets `stepRole` and `tickRole`.
 */
/** Higher-term messages a follower in lease still steps: a leader's (and TimeoutNow), or vote requests it judges itself. */
const ADOPTS_HIGHER_TERM: ReadonlySet<Message['type']> = new Set(['app', 'heartbeat', 'snap', 'timeoutNow', 'vote', 'preVote']);

export class Raft {
  readonly id: NodeId;
  readonly config: ResolvedRaftConfig;
  readonly log: RaftLog;

  // Persistent state (HardState). Invariant: vote is NONE or a node voted for in `term`.
  term = 0;
  vote: NodeId = NONE;
  role: Role = 'follower';
  lead: NodeId = NONE;
  voters = new Set<NodeId>();
  learners = new Set<NodeId>();
  private readonly confCache = new ConfStateCache();
  /**
   * Whether a configuration this node applied (at start, from a snapshot, or from a conf-change
   * entry) named it as a voter or learner, at a log index past its vote floor (config.voteFloor:
   * a configuration at or below the floor predates this replica's own addition, so one naming it
   * is the removed incarnation's; at start, a snapshot's index is taken as the log's first index
   * minus one, a lower bound). Sticky: once set it stays set. A host tells "not a member yet" (a
   * new replica that installed a snapshot older than its own addition) from "no longer a member"
   * (it applied its removal) by it, without having to watch every configuration.
   */
  wasMember = false;
  /** The leader's view of every member but itself is in `progress`; own entry tracks own log. */
  progress = new Map<NodeId, Progress>();
  private votes = new Map<NodeId, boolean>();

  messages: Message[] = [];
  readStates: ReadState[] = [];
  /** Contexts of reads that were accepted but can no longer be answered (leadership lost). */
  droppedReads: string[] = [];

  /** Ticks since the last election timeout reset (followers) or CheckQuorum round (leaders). */
  electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  /** After a restart the node refuses votes for one election timeout: it may have promised a lease. */
  private startupQuietTicks: number;
  /** Monotone tick count of this node; heartbeats carry it so the lease is measured on one clock. */
  ticks = 0;

  leadTransferee: NodeId = NONE;
  /** Ticks since the transfer started: it is abandoned after one election timeout. */
  private transferElapsed = 0;
  /** Set once a TimeoutNow went out in this term: another node may win at any moment, so no lease. */
  private leaseRevoked = false;
  /** Invariant: no conf change is proposed while pendingConfIndex > applied (one change at a time). */
  pendingConfIndex = 0;
  /** Bytes of proposed entries (index, bytes) not yet committed, for the uncommitted-size limit. */
  private uncommitted: Array<{ index: number; bytes: number }> = [];
  private uncommittedBytes = 0;

  private readSeq = 0;
  /**
   * batchAppends (config): followers are owed the entries proposed since the last flushAppends()
   * (owedAppends), or an append carrying a commit index that advanced since (owedCommit). Invariant:
   * both are false after flushAppends(), which the host calls (RawNode.ready()) before it collects
   * messages, so nothing owed outlives the loop iteration that owed it.
   */
  private owedAppends = false;
  private owedCommit = false;
  private pendingReads: PendingRead[] = [];
  /** Reads that arrived before this leader committed an entry of its own term (thesis §6.4 step 1). */
  private readsAwaitingCommit: Array<{ context: string; from: NodeId }> = [];

  quiesced = false;
  private idleTicks = 0;
  /** Follower: the leader's tick on the heartbeat that made this node quiet. */
  private quiescedAtLeaderTick = 0;

  private incomingSnapshot: IncomingSnapshot | undefined = undefined;

  private stepRole: (message: Message) => void = (message) => this.stepFollower(message);
  private tickRole: () => void = () => this.tickElection();

  constructor(input: RaftConfig) {
    this.config = resolveRaftConfig(input);
    this.id = this.config.id;
    this.log = new RaftLog(this.config.storage);
    const { hardState, confState } = this.config.storage.initialState();
    this.applyConfState(confState, this.log.firstIndex() - 1);
    if (hardState.term > 0 || hardState.commit > 0) this.loadHardState(hardState);
    // Conf changes already applied by the host's state machine before a restart take effect now.
    const applied = this.config.applied;
    if (applied > 0) {
      if (!(applied <= this.log.committed)) assert.fail(`applied ${applied} beyond commit ${this.log.committed}`);
      this.replayConfChanges(this.log.firstIndex(), applied);
      this.log.appliedTo(applied);
    }
    // A node that ever followed a leader (any term above the bootstrap term 1) may have acknowledged
    // a heartbeat that someone's lease counts on, and it cannot know when: wait a full timeout.
    this.startupQuietTicks = this.term > 1 ? this.config.electionTicks : 0;
    this.becomeFollower(this.term, NONE);
  }

  // ---------------------------------------------------------------- state snapshots for Ready

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  confState(): ConfState {
    return this.confCache.of(this.voters, this.learners);
  }

  promotable(): boolean {
    // A replica opened for an addition campaigns only with a log at or past its vote floor (config.voteFloor).
    // Checked on every tick of every group: no floor (nearly every replica) reads no log term.
    const floor = this.config.voteFloor;
    if (!this.voters.has(this.id)) return false;
    return (floor.term === 0 && floor.index === 0) || reachesVoteFloor(this.log.lastTerm(), this.log.lastIndex(), floor);
  }

  // ---------------------------------------------------------------- role transitions

  becomeFollower(term: number, lead: NodeId): void {
    this.abandonLeadership();
    this.reset(term);
    this.lead = lead;
    this.role = 'follower';
    this.stepRole = (message) => this.stepFollower(message);
    this.tickRole = () => this.tickElection();
  }

  private becomePreCandidate(): void {
    assert.ok(this.role !== 'leader', 'leader cannot become pre-candidate');
    // Pre-vote does not change term or vote: a disrupted node that cannot win leaves no trace.
    this.abandonLeadership();
    this.votes = new Map();
    this.lead = NONE;
    this.role = 'preCandidate';
    this.stepRole = (message) => this.stepCandidate(message);
    this.tickRole = () => this.tickElection();
  }

  private becomeCandidate(): void {
    assert.ok(this.role !== 'leader', 'leader cannot become candidate');
    this.abandonLeadership();
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = 'candidate';
    this.stepRole = (message) => this.stepCandidate(message);
    this.tickRole = () => this.tickElection();
  }

  private becomeLeader(): void {
    assert.ok(this.role === 'candidate', 'only a candidate becomes leader');
    this.reset(this.term);
    this.lead = this.id;
    this.role = 'leader';
    this.stepRole = (message) => this.stepLeader(message);
    this.tickRole = () => this.tickHeartbeat();
    for (const [id, progress] of this.progress) {
      progress.recentActive = true;
      if (id === this.id) progress.becomeReplicate();
    }
    // A new leader may not propose a conf change until everything before its term is applied.
    this.pendingConfIndex = this.log.lastIndex();
    // The empty entry lets this leader commit (and so learn the commit index) in its own term (§5.4.2, §6.4).
    const appended = this.appendEntries([{ term: 0, index: 0, type: EntryType.Normal, data: new Uint8Array(0) }]);
    assert.ok(appended, 'a new leader can always append its empty entry');
    this.bcastAppend();
  }

  /** Leaving the leader role (or a candidacy) fails whatever reads were waiting on it. */
  private abandonLeadership(): void {
    for (const read of this.pendingReads) this.dropRead(read.context, read.from);
    for (const read of this.readsAwaitingCommit) this.dropRead(read.context, read.from);
    this.pendingReads = [];
    this.readsAwaitingCommit = [];
  }

  private reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.resetRandomizedElectionTimeout();
    this.leadTransferee = NONE;
    this.leaseRevoked = false;
    this.votes = new Map();
    this.uncommitted = [];
    this.uncommittedBytes = 0;
    this.quiesced = false;
    this.idleTicks = 0;
    const lastIndex = this.log.lastIndex();
    for (const [id, progress] of this.progress) {
      this.progress.set(id, this.newProgress(id, progress.isLearner, lastIndex + 1));
    }
    const own = this.progress.get(this.id);
    if (own) own.match = lastIndex;
  }

  private newProgress(id: NodeId, isLearner: boolean, next: number): Progress {
    const progress = new Progress({
      next,
      isLearner,
      maxInflightMessages: this.config.maxInflightMessages,
      maxInflightBytes: this.config.maxInflightBytes,
    });
    if (id === this.id) progress.match = next - 1;
    return progress;
  }

  /**
   * Adds `ticks` to this node's current election timeout (until the next term change resets it):
   * the host lets another replica campaign first (maintenance.ts: a group's preferred leader at
   * start). Liveness only: an election timeout may be any length for safety.
   */
  postponeElection(ticks: number): void {
    if (!(Number.isSafeInteger(ticks) && ticks >= 0)) assert.fail(`postponeElection(${ticks})`);
    if (this.role !== 'leader') this.randomizedElectionTimeout += ticks;
  }

  private resetRandomizedElectionTimeout(): void {
    this.randomizedElectionTimeout = this.config.electionTicks + this.config.rng.int(this.config.electionTicks);
  }

  // ---------------------------------------------------------------- ticking

  tick(): void {
    this.ticks++;
    if (this.startupQuietTicks > 0) this.startupQuietTicks--;
    this.tickRole();
  }

  private tickElection(): void {
    if (this.quiesced) return;
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    this.idleTicks++;
    if (this.electionElapsed >= this.config.electionTicks) {
      this.electionElapsed = 0;
      if (this.config.checkQuorum && !this.config.bugs.skipCheckQuorum && !this.quiesced) {
        if (!this.quorumRecentlyActive()) {
          // Thesis §6.2: a leader that cannot reach a quorum steps down instead of serving stale state.
          this.becomeFollower(this.term, NONE);
          return;
        }
      }
      for (const [id, progress] of this.progress) progress.recentActive = id === this.id;
    }
    if (this.leadTransferee !== NONE && ++this.transferElapsed >= this.config.electionTicks) {
      this.leadTransferee = NONE; // Transfer took too long: abort and accept proposals again.
    }
    if (this.role !== 'leader' || this.quiesced) return;
    // Quiescing sends its own heartbeat round (the quiesce request carries the commit index, read
    // sequence and lease tick of an ordinary one), so the tick that quiesces sends no second round:
    // one round fewer per wake-and-quiesce cycle (issue 18). The decision is the same either way:
    // an ordinary heartbeat sent first changes no progress before its answers come back.
    this.maybeQuiesce();
    if (this.quiesced) {
      this.heartbeatElapsed = 0;
      return;
    }
    if (this.heartbeatElapsed >= this.config.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.bcastHeartbeat();
    }
  }

  private quorumRecentlyActive(): boolean {
    let active = 0;
    for (const id of this.voters) {
      if (id === this.id || this.progress.get(id)?.recentActive) active++;
    }
    return active >= this.quorum();
  }

  // ---------------------------------------------------------------- elections

  /** Starts an election (or pre-election) if this node may. `transfer` means TimeoutNow asked. */
  hup(transfer: boolean): void {
    if (this.role === 'leader') return;
    if (!this.promotable()) return;
    // A restarted node may have acknowledged a heartbeat some leader's lease counts on (see
    // startupQuietTicks): it refuses others' votes meanwhile, and must not take them either when its
    // host asks it to campaign (the node's preferred leaders do at start). A transfer is safe: the
    // leader that sent TimeoutNow revoked its lease.
    if (!transfer && this.startupQuietTicks > 0 && this.config.checkQuorum && !this.config.bugs.skipCheckQuorum) return;
    if (this.hasUnappliedConfChange()) return; // Its quorum might be the wrong one.
    if (this.config.preVote && !transfer) this.campaignPre();
    else this.campaign(transfer);
  }

  private hasUnappliedConfChange(): boolean {
    if (this.log.committed <= this.log.applied) return false;
    const entries = this.log.slice(Math.max(this.log.applied + 1, this.log.firstIndex()), this.log.committed + 1, Number.MAX_SAFE_INTEGER);
    return entries.some((entry) => entry.type === EntryType.ConfChange);
  }

  private campaignPre(): void {
    this.becomePreCandidate();
    this.votes.set(this.id, true);
    if (this.tally() === 'won') {
      this.campaign(false);
      return;
    }
    for (const id of this.voters) {
      if (id === this.id) continue;
      this.send({ type: 'preVote', to: id, term: this.term + 1, index: this.log.lastIndex(), logTerm: this.log.lastTerm(), commit: this.log.committed });
    }
  }

  private campaign(transfer: boolean): void {
    this.becomeCandidate();
    this.votes.set(this.id, true);
    if (this.tally() === 'won') {
      this.becomeLeader();
      return;
    }
    for (const id of this.voters) {
      if (id === this.id) continue;
      this.send({
        type: 'vote',
        to: id,
        term: this.term,
        index: this.log.lastIndex(),
        logTerm: this.log.lastTerm(),
        commit: this.log.committed,
        ...(transfer ? { force: true } : {}),
      });
    }
  }

  private tally(): 'won' | 'lost' | 'pending' {
    let granted = 0;
    let rejected = 0;
    for (const id of this.voters) {
      const vote = this.votes.get(id);
      if (vote === true) granted++;
      else if (vote === false) rejected++;
    }
    const quorum = this.quorum();
    if (granted >= quorum) return 'won';
    if (rejected > this.voters.size - quorum) return 'lost';
    return 'pending';
  }

  quorum(): number {
    return Math.floor(this.voters.size / 2) + 1;
  }

  /**
   * Leader stickiness (thesis §6.2, §9.6): while this node believes a leader is alive (or is the
   * leader, or has just restarted and may have been part of a lease) it ignores vote requests. This
   * is what makes the leader lease sound, and what keeps a partitioned node from disrupting.
   */
  private inLease(): boolean {
    if (!this.config.checkQuorum || this.config.bugs.skipCheckQuorum) return false;
    if (this.startupQuietTicks > 0) return true;
    if (this.role === 'leader') return true;
    return this.lead !== NONE && this.electionElapsed < this.config.electionTicks;
  }

  // ---------------------------------------------------------------- step

  step(message: Message): void {
    if (!(message.to === this.id)) assert.fail(`message for ${message.to} delivered to ${this.id}`);
    if (this.quiesced && this.wakesQuiescedGroup(message)) this.unquiesce();
    if (message.type === 'commit') return stepCommitNotice(this, message);
    // Before any term or lease check: what a candidate's commit proves holds whatever its term.
    if (message.type === 'vote' || message.type === 'preVote') this.maybeLearnCommit(message);
    if (message.term > this.term) {
      if (message.type === 'vote' || message.type === 'preVote') {
        if (!message.force && this.inLease()) return;
      }
      // A follower in lease adopts a higher term only from a leader. Any other higher-term message
      // (an answer to one of its own stale messages: a rejected pre-vote, an old append) would make
      // it a follower with no leader, free to vote before its promise to the current leader's
      // lease ran out. Dropping it is as safe as losing it; once the promise ends it counts again.
      if (this.role === 'follower' && this.inLease() && !ADOPTS_HIGHER_TERM.has(message.type)) return;
      if (message.type === 'preVote') {
        // Answered below without changing term.
      } else if (message.type === 'preVoteResp' && !message.reject) {
        // A granted pre-vote carries the future term; it is counted, not adopted.
      } else if (message.type === 'app' || message.type === 'heartbeat' || message.type === 'snap') {
        this.becomeFollower(message.term, message.from);
      } else {
        this.becomeFollower(message.term, NONE);
      }
    } else if (message.term < this.term) {
      this.handleStaleTerm(message);
      return;
    }

    switch (message.type) {
      case 'vote':
      case 'preVote':
        this.handleVoteRequest(message);
        return;
      default:
        this.stepRole(message);
    }
  }

  /**
   * Any message wakes a quiet node, except the leader's heartbeats that were sent before it asked
   * the group to go quiet (reordered or duplicated on the way) and answers to those heartbeats.
   */
  private wakesQuiescedGroup(message: Message): boolean {
    if (message.type === 'heartbeatResp') return false;
    if (message.type === 'heartbeat' && message.from === this.lead && message.term === this.term) {
      return !message.quiesce && (message.leaseTick ?? Number.POSITIVE_INFINITY) > this.quiescedAtLeaderTick;
    }
    return true;
  }

  private handleStaleTerm(message: Message): void {
    if ((this.config.checkQuorum || this.config.preVote) && (message.type === 'app' || message.type === 'heartbeat')) {
      // A deposed leader learns the new term from this answer and steps down (thesis §6.2, §9.6).
      this.send({ type: 'appResp', to: message.from, term: this.term });
    } else if (message.type === 'preVote') {
      this.send({ type: 'preVoteResp', to: message.from, term: this.term, reject: true });
    }
  }

  private handleVoteRequest(message: Message): void {
    const isPreVote = message.type === 'preVote';
    const canVote =
      reachesVoteFloor(message.logTerm ?? 0, message.index ?? 0, this.config.voteFloor) &&
      (this.vote === message.from ||
      (this.vote === NONE && this.lead === NONE) ||
      (isPreVote && message.term > this.term));
    const upToDate = this.log.isUpToDate(message.index ?? 0, message.logTerm ?? 0);
    const responseType = isPreVote ? 'preVoteResp' : 'voteResp';
    if (canVote && upToDate) {
      this.send({ type: responseType, to: message.from, term: message.term });
      if (!isPreVote) {
        this.electionElapsed = 0;
        this.vote = message.from;
      }
    } else {
      this.send({ type: responseType, to: message.from, term: this.term, reject: true });
    }
  }

  /**
   * A (pre)candidate sends its commit index with its last entry. Every entry at or below a node's
   * commit index is committed for good, and where this log holds the candidate's last entry (same
   * index, same term) the two logs are equal through it (Log Matching, Raft §5.3): so this node may
   * commit through min(candidate's commit, that index), whatever the message's term. Liveness
   * (issue 32, whole-node simulator seed 611): a node that a committed configuration change made a
   * voter, but which never heard that commit, has the longest log after a power loss, refuses every
   * other candidate (§5.4.1) and, a learner by its own applied configuration, never campaigns;
   * learning the commit here applies the promotion, and it campaigns. Checked before leader
   * stickiness and the term (a request ignored for them still carries a true commit).
   * Not at a leader: its commit index is the group's.
   */
  private maybeLearnCommit(message: Message): void {
    if (this.role === 'leader' || message.commit === undefined || message.index === undefined || message.logTerm === undefined) return;
    const through = Math.min(message.commit, message.index);
    if (through <= this.log.committed || message.index > this.log.lastIndex()) return;
    if (!this.log.matchTerm(message.index, message.logTerm)) return;
    this.log.commitTo(through);
  }

  private stepCandidate(message: Message): void {
    switch (message.type) {
      case 'app':
        this.becomeFollower(message.term, message.from);
        this.handleAppend(message);
        return;
      case 'heartbeat':
        this.becomeFollower(message.term, message.from);
        this.handleHeartbeat(message);
        return;
      case 'snap':
        this.becomeFollower(message.term, message.from);
        this.handleSnapshotChunk(message);
        return;
      case 'preVoteResp':
      case 'voteResp': {
        const expected = this.role === 'preCandidate' ? 'preVoteResp' : 'voteResp';
        if (message.type !== expected) return;
        this.votes.set(message.from, !message.reject);
        const result = this.tally();
        if (result === 'won') {
          if (this.role === 'preCandidate') this.campaign(false);
          else this.becomeLeader();
        } else if (result === 'lost') {
          this.becomeFollower(this.term, NONE);
        }
        return;
      }
      default:
        return;
    }
  }

  private stepFollower(message: Message): void {
    switch (message.type) {
      case 'app':
        this.electionElapsed = 0;
        this.lead = message.from;
        this.handleAppend(message);
        return;
      case 'heartbeat':
        this.electionElapsed = 0;
        this.lead = message.from;
        this.handleHeartbeat(message);
        return;
      case 'snap':
        this.electionElapsed = 0;
        this.lead = message.from;
        this.handleSnapshotChunk(message);
        return;
      case 'timeoutNow':
        // Thesis §3.10: the leader handed over; campaign at once, skipping pre-vote and stickiness.
        this.hup(true);
        return;
      case 'readIndexResp':
        this.readStates.push({ index: message.index ?? 0, context: message.context ?? '' });
        return;
      default:
        return;
    }
  }

  private stepLeader(message: Message): void {
    const progress = this.progress.get(message.from);
    switch (message.type) {
      case 'appResp':
        if (progress) this.handleAppendResponse(message, progress);
        return;
      case 'heartbeatResp':
        if (progress) this.handleHeartbeatResponse(message, progress);
        return;
      case 'snapResp':
        if (progress) this.handleSnapshotResponse(message, progress);
        return;
      case 'readIndex':
        if (this.progress.has(message.from)) this.readIndex(message.context ?? '', message.from);
        return;
      default:
        return;
    }
  }

  // ---------------------------------------------------------------- log replication (leader)

  /** Appends locally as leader. Returns false when over the uncommitted-bytes limit. */
  private appendEntries(entries: Array<Pick<Entry, 'type' | 'data'> & Partial<Entry>>): boolean {
    const bytes = entries.reduce((sum, entry) => sum + 24 + entry.data.length, 0);
    if (this.uncommittedBytes > 0 && this.uncommittedBytes + bytes > this.config.maxUncommittedBytes) return false;
    let index = this.log.lastIndex();
    const stamped: Entry[] = entries.map((entry) => ({ term: this.term, index: ++index, type: entry.type, data: entry.data }));
    const lastIndex = this.log.append(stamped);
    for (const entry of stamped) this.uncommitted.push({ index: entry.index, bytes: entryBytes(entry) });
    this.uncommittedBytes += bytes;
    const own = this.progress.get(this.id);
    if (own) own.maybeUpdate(lastIndex);
    this.maybeCommit();
    return true;
  }

  propose(data: Uint8Array, type: EntryType = EntryType.Normal): { index: number; term: number } {
    if (this.role !== 'leader') throw new RaftError('PROPOSAL_DROPPED', `node ${this.id} is not the leader (leader ${this.lead})`);
    if (this.leadTransferee !== NONE) throw new RaftError('PROPOSAL_DROPPED', `leadership is moving to ${this.leadTransferee}`);
    if (!this.progress.has(this.id)) throw new RaftError('PROPOSAL_DROPPED', `node ${this.id} was removed from the group`);
    if (type === EntryType.ConfChange) {
      if (this.pendingConfIndex > this.log.applied) {
        throw new RaftError('PROPOSAL_DROPPED', 'a membership change is still being applied');
      }
      this.validateConfChange(decodeConfChange(data));
    }
    // No wake heartbeat: the append below goes to every follower at once (a quiesced group's
    // followers all replicate with nothing in flight, maybeQuiesce) and wakes them as well. Under
    // load at many partitions most proposals wake their group, so this saves two heartbeats and two
    // answers per wake per three replicas (issue 18).
    this.unquiesce(false);
    if (!this.appendEntries([{ type, data }])) {
      throw new RaftError('PROPOSAL_DROPPED', `too many uncommitted bytes (limit ${this.config.maxUncommittedBytes})`);
    }
    const index = this.log.lastIndex();
    if (type === EntryType.ConfChange) this.pendingConfIndex = index;
    if (this.config.batchAppends) this.owedAppends = true;
    else this.bcastAppend();
    return { index, term: this.term };
  }

  private validateConfChange(change: ConfChange): void {
    if (change.type === 'removeNode' && this.voters.has(change.node) && this.voters.size === 1) {
      throw new RaftError('PROPOSAL_DROPPED', 'cannot remove the last voter');
    }
  }

  private bcastAppend(): void {
    for (const id of this.progress.keys()) {
      if (id !== this.id) this.maybeSendAppend(id, true);
    }
  }

  /** Whether flushAppends() has appends to send (batchAppends). */
  get owesAppends(): boolean {
    return this.owedAppends || this.owedCommit;
  }

  /**
   * batchAppends: sends what proposals and commit advances owed since the last call, as ONE append
   * per follower (its entries from its next index, and the commit index). A follower that holds
   * every entry and is only owed the commit gets an append marked commitOnly, which it does not
   * answer: the commit reaches it at once, and its next heartbeat answer reports it (a quiesce
   * request carries it again, maybeQuiesce). A follower known to hold the commit is sent nothing.
   */
  flushAppends(): void {
    const appends = this.owedAppends;
    const commit = this.owedCommit;
    this.owedAppends = false;
    this.owedCommit = false;
    if (this.role !== 'leader' || (!appends && !commit)) return;
    for (const [id, progress] of this.progress) {
      if (id === this.id) continue;
      const needsCommit = commit && progress.commit < this.log.committed;
      if (needsCommit && this.config.bugs.noticeCommitBeyondMatch === true && this.config.commitNotices && progress.state !== 'replicate') sendCommitNotice(this, id, progress.next - 1);
      this.maybeSendAppend(id, needsCommit, true);
    }
  }

  /**
   * Sends the follower the entries it lacks (or a snapshot when they are compacted). With
   * `sendIfEmpty` it sends even without new entries, to carry the commit index.
   */
  private maybeSendAppend(to: NodeId, sendIfEmpty: boolean, commitOnlyAllowed = false): boolean {
    const progress = this.progress.get(to);
    if (!progress || progress.isPaused()) return false;
    const prevIndex = progress.next - 1;
    const prevTerm = this.log.maybeTerm(prevIndex);
    let entries: Entry[] = [];
    if (prevTerm !== undefined) {
      try {
        entries = this.log.entriesFrom(progress.next, this.config.maxMessageBytes);
      } catch (error) {
        if (!isRaftError(error, 'COMPACTED')) throw error;
        return this.sendSnapshot(to, progress);
      }
    } else {
      return this.sendSnapshot(to, progress);
    }
    if (entries.length === 0 && !sendIfEmpty) return false;
    // Only a replicating follower's answer is not needed: a probed one must answer to be replicated to.
    const commitOnly = commitOnlyAllowed && entries.length === 0 && progress.state === 'replicate';
    if (commitOnly && this.config.commitNotices) return sendCommitNotice(this, to, prevIndex);
    this.send({ type: 'app', to, term: this.term, index: prevIndex, logTerm: prevTerm, entries, commit: this.log.committed, commitOnly: commitOnly ? true : undefined });
    if (entries.length > 0) {
      progress.sentEntries((entries[entries.length - 1] as Entry).index, entriesBytes(entries));
    } else if (progress.state === 'probe') {
      progress.probeSent = true;
    }
    return true;
  }

  private sendSnapshot(to: NodeId, progress: Progress): boolean {
    if (!progress.recentActive) return false; // Do not build and stream a snapshot to a dead node.
    let snapshot: Snapshot;
    try {
      snapshot = this.log.storage.snapshot();
    } catch (error) {
      if (isRaftError(error, 'SNAPSHOT_TEMPORARILY_UNAVAILABLE')) return false;
      throw error;
    }
    assert.ok(snapshot.meta.index > 0, 'need a non-empty snapshot');
    progress.becomeSnapshot(snapshot);
    this.sendSnapshotChunk(to, progress);
    return true;
  }

  /** One chunk in flight at a time, starting at what the follower confirmed. */
  private sendSnapshotChunk(to: NodeId, progress: Progress): void {
    const snapshot = progress.snapshot;
    assert.ok(snapshot !== undefined, 'snapshot state without a snapshot');
    const offset = progress.snapshotAcked;
    const chunk = snapshot.data.subarray(offset, offset + this.config.snapshotChunkBytes);
    const last = offset + chunk.length >= snapshot.data.length;
    progress.snapshotSent = offset + chunk.length;
    this.send({ type: 'snap', to, term: this.term, snapshot: snapshot.meta, chunk: { offset, data: chunk, last } });
  }

  private handleSnapshotResponse(message: Message, progress: Progress): void {
    progress.recentActive = true;
    if (progress.state !== 'snapshot' || progress.pendingSnapshot !== message.index) return;
    const expected = message.offset ?? 0;
    if (expected > progress.snapshotAcked || (message.reject && expected < progress.snapshotAcked)) {
      // Progress, or the follower lost what it had (restart): continue from where it stands.
      progress.snapshotAcked = expected;
      this.sendSnapshotChunk(message.from, progress);
    }
    // Anything else is a duplicate or a stale answer about a chunk already being resent.
  }

  private handleAppendResponse(message: Message, progress: Progress): void {
    progress.recentActive = true;
    progress.commit = Math.max(progress.commit, message.commit ?? 0);
    const index = message.index ?? 0;
    if (message.reject) {
      let hint = message.rejectHint ?? 0;
      if ((message.logTerm ?? 0) > 0) hint = this.log.findConflictByTerm(hint, message.logTerm ?? 0).index;
      if (progress.maybeDecrTo(index, hint)) {
        if (progress.state === 'replicate') progress.becomeProbe();
        this.maybeSendAppend(message.from, false);
      }
      return;
    }
    const wasPaused = progress.isPaused();
    if (!progress.maybeUpdate(index)) {
      if (wasPaused && !progress.isPaused()) this.maybeSendAppend(message.from, false);
      return;
    }
    if (progress.state === 'probe') {
      progress.becomeReplicate();
    } else if (progress.state === 'snapshot' && progress.match >= progress.pendingSnapshot) {
      progress.becomeProbe();
      progress.becomeReplicate();
    } else if (progress.state === 'replicate') {
      progress.inflights.freeLE(index);
    }
    if (this.maybeCommit()) {
      if (this.config.batchAppends) this.owedCommit = true;
      else this.bcastAppend();
    } else {
      while (this.maybeSendAppend(message.from, false)) {
        // Pipelining: keep sending until the window is full or the follower has everything.
      }
    }
    if (message.from === this.leadTransferee && progress.match === this.log.lastIndex()) {
      this.sendTimeoutNow(message.from);
    }
  }

  private handleHeartbeatResponse(message: Message, progress: Progress): void {
    progress.recentActive = true;
    progress.probeSent = false;
    progress.commit = Math.max(progress.commit, message.commit ?? 0);
    if (message.quiesce !== undefined) progress.quiesced = message.quiesce;
    if (message.leaseTick !== undefined) progress.leaseAckTick = Math.max(progress.leaseAckTick, message.leaseTick);
    // Answers to ordinary heartbeats sent before going quiet do not count; a refusal does.
    if (this.quiesced && message.quiesce === false) this.unquiesce();
    if (progress.state === 'snapshot') {
      // No chunk confirmed for a whole heartbeat round: it was probably lost, so send it again.
      if (progress.snapshotAcked === progress.snapshotAckedAtHeartbeat) this.sendSnapshotChunk(message.from, progress);
      progress.snapshotAckedAtHeartbeat = progress.snapshotAcked;
    } else if (progress.state === 'probe' && progress.match === this.log.lastIndex() && progress.commit === this.log.committed) {
      // A probed follower (e.g. reported unreachable) that answers and holds everything is back:
      // replicate again. Nothing is in flight (next = match + 1), and only a replicating follower
      // lets its group quiesce, so without this an idle group would heartbeat until the next write.
      progress.becomeReplicate();
    } else if (progress.match < this.log.lastIndex() || progress.commit < this.log.committed) {
      // Appends or their answers may have been lost: with a full window nothing would ever be resent.
      // Freeing one slot sends an append that the follower either accepts or rejects, either way
      // telling us where it stands.
      if (progress.state === 'replicate' && progress.inflights.full()) progress.inflights.freeFirstOne();
      this.maybeSendAppend(message.from, true);
    }
    if (message.readSeq !== undefined && message.readSeq > 0) this.ackReads(message.from, message.readSeq);
  }

  /** Advances the commit index to what a quorum stores, counting only current-term entries (§5.4.2). */
  private maybeCommit(): boolean {
    const matches: number[] = [];
    for (const id of this.voters) matches.push(this.progress.get(id)?.match ?? 0);
    matches.sort((a, b) => b - a);
    const quorumIndex = matches[this.quorum() - 1] ?? 0;
    if (quorumIndex <= this.log.committed) return false;
    if (!this.config.bugs.commitPreviousTerm && this.log.maybeTerm(quorumIndex) !== this.term) return false;
    const hadCommittedInTerm = this.committedInCurrentTerm();
    this.log.commitTo(quorumIndex);
    this.releaseUncommitted();
    if (!hadCommittedInTerm && this.committedInCurrentTerm()) this.releaseReadsAwaitingCommit();
    return true;
  }

  private releaseUncommitted(): void {
    while (this.uncommitted.length > 0 && (this.uncommitted[0] as { index: number }).index <= this.log.committed) {
      this.uncommittedBytes -= (this.uncommitted.shift() as { bytes: number }).bytes;
    }
  }

  committedInCurrentTerm(): boolean {
    return this.log.maybeTerm(this.log.committed) === this.term;
  }

  private bcastHeartbeat(): void {
    this.bcastHeartbeatWith(this.readSeq, false);
  }

  private bcastHeartbeatWith(readSeq: number, quiesce: boolean): void {
    for (const [id, progress] of this.progress) {
      if (id === this.id) continue;
      this.send({
        type: 'heartbeat',
        to: id,
        term: this.term,
        // Never tell a follower to commit past what it is known to hold.
        commit: Math.min(progress.match, this.log.committed),
        readSeq,
        leaseTick: this.ticks,
        ...(quiesce ? { quiesce: true, index: this.log.lastIndex(), logTerm: this.log.lastTerm() } : {}),
      });
    }
  }

  // ---------------------------------------------------------------- log replication (follower)

  private handleAppend(message: Message): void {
    const index = message.index ?? 0;
    if (index < this.log.committed) {
      this.send({ type: 'appResp', to: message.from, term: this.term, index: this.log.committed, commit: this.log.committed });
      return;
    }
    const lastNew = this.log.maybeAppend(index, message.logTerm ?? 0, message.commit ?? 0, message.entries ?? []);
    if (lastNew !== undefined) {
      // A matching commit-only append asks for no answer (flushAppends); a mismatch is answered below.
      if (message.commitOnly === true && (message.entries?.length ?? 0) === 0) return;
      this.send({ type: 'appResp', to: message.from, term: this.term, index: lastNew, commit: this.log.committed });
      return;
    }
    const hint = this.log.findConflictByTerm(Math.min(index, this.log.lastIndex()), message.logTerm ?? 0);
    this.send({
      type: 'appResp',
      to: message.from,
      term: this.term,
      index,
      reject: true,
      rejectHint: hint.index,
      logTerm: hint.term,
      commit: this.log.committed,
    });
  }

  private handleHeartbeat(message: Message): void {
    this.log.commitTo(Math.min(message.commit ?? 0, this.log.lastIndex()));
    let quiesced = false;
    if (message.quiesce) {
      quiesced =
        message.index === this.log.lastIndex() &&
        message.logTerm === this.log.lastTerm() &&
        message.commit === this.log.committed;
      this.quiesced = quiesced;
      if (quiesced) this.quiescedAtLeaderTick = message.leaseTick ?? 0;
    }
    this.send({
      type: 'heartbeatResp',
      to: message.from,
      term: this.term,
      commit: this.log.committed,
      ...(message.readSeq !== undefined ? { readSeq: message.readSeq } : {}),
      ...(message.leaseTick !== undefined ? { leaseTick: message.leaseTick } : {}),
      // Answer a quiesce request either way, so a leader whose follower could not go quiet wakes up.
      ...(message.quiesce ? { quiesce: quiesced } : {}),
    });
  }

  private handleSnapshotChunk(message: Message): void {
    const meta = message.snapshot;
    const chunk = message.chunk;
    assert.ok(meta && chunk, 'snap message without snapshot or chunk');
    if (meta.index <= this.log.committed) {
      this.incomingSnapshot = undefined;
      this.send({ type: 'appResp', to: message.from, term: this.term, index: this.log.committed, commit: this.log.committed });
      return;
    }
    let incoming = this.incomingSnapshot;
    const sameSnapshot = incoming && incoming.meta.index === meta.index && incoming.meta.term === meta.term && incoming.term === message.term;
    if (chunk.offset === 0) {
      incoming = { meta, from: message.from, term: message.term, chunks: [], bytes: 0 };
      this.incomingSnapshot = incoming;
    } else if (!sameSnapshot || !incoming || incoming.bytes !== chunk.offset) {
      // Out of order or from another transfer: tell the leader where to resume.
      const expected = sameSnapshot && incoming ? incoming.bytes : 0;
      this.send({ type: 'snapResp', to: message.from, term: this.term, index: meta.index, offset: expected, reject: true });
      return;
    }
    incoming.chunks.push(chunk.data);
    incoming.bytes += chunk.data.length;
    if (!chunk.last) {
      this.send({ type: 'snapResp', to: message.from, term: this.term, index: meta.index, offset: incoming.bytes });
      return;
    }
    this.incomingSnapshot = undefined;
    const data = concatBytes(...incoming.chunks);
    if (!this.config.acceptSnapshot({ meta, data })) {
      // Refused by the host (it would not install): ask for the transfer again from the start.
      this.send({ type: 'snapResp', to: message.from, term: this.term, index: meta.index, offset: 0, reject: true });
      return;
    }
    if (this.restore({ meta, data })) {
      this.send({ type: 'appResp', to: message.from, term: this.term, index: this.log.lastIndex(), commit: this.log.committed });
    } else {
      this.send({ type: 'appResp', to: message.from, term: this.term, index: this.log.committed, commit: this.log.committed });
    }
  }

  /** Installs a snapshot (thesis §5): returns false when the log already covers it. */
  private restore(snapshot: Snapshot): boolean {
    if (snapshot.meta.index <= this.log.committed) return false;
    if (this.log.matchTerm(snapshot.meta.index, snapshot.meta.term)) {
      // We already hold that prefix: just learn that it is committed.
      this.log.commitTo(snapshot.meta.index);
      return false;
    }
    this.log.restore(snapshot);
    this.applyConfState(snapshot.meta.confState, snapshot.meta.index);
    return true;
  }

  // ---------------------------------------------------------------- membership

  private applyConfState(confState: ConfState, index: number): void {
    this.voters = new Set(confState.voters);
    this.learners = new Set(confState.learners);
    this.noteMembership(index);
    const next = this.log.lastIndex() + 1;
    const members = new Set([...this.voters, ...this.learners]);
    for (const id of [...this.progress.keys()]) if (!members.has(id)) this.progress.delete(id);
    for (const id of members) {
      const existing = this.progress.get(id);
      const isLearner = this.learners.has(id);
      if (!existing || existing.isLearner !== isLearner) this.progress.set(id, this.newProgress(id, isLearner, next));
    }
  }

  private replayConfChanges(from: number, to: number): void {
    if (to < from) return;
    for (const entry of this.log.slice(from, to + 1, Number.MAX_SAFE_INTEGER)) {
      if (entry.type === EntryType.ConfChange) this.applyConfChange(decodeConfChange(entry.data), entry.index);
    }
  }

  /** Sets wasMember when the configuration in force since `index` names this node (see wasMember). */
  private noteMembership(index: number): void {
    if ((this.voters.has(this.id) || this.learners.has(this.id)) && index > this.config.voteFloor.index) this.wasMember = true;
  }

  /** Called when the conf-change entry at `index` is applied (thesis §4.1 single-server change). */
  applyConfChange(change: ConfChange, index: number): void {
    const voters = new Set(this.voters);
    const learners = new Set(this.learners);
    switch (change.type) {
      case 'addVoter':
        learners.delete(change.node);
        voters.add(change.node);
        break;
      case 'addLearner':
        if (voters.has(change.node)) return; // Demotion would need joint consensus; refuse silently.
        learners.add(change.node);
        break;
      case 'removeNode':
        voters.delete(change.node);
        learners.delete(change.node);
        break;
    }
    const lastIndex = this.log.lastIndex();
    this.voters = voters;
    this.learners = learners;
    this.noteMembership(index);
    const members = new Set([...voters, ...learners]);
    for (const id of [...this.progress.keys()]) if (!members.has(id)) this.progress.delete(id);
    for (const id of members) {
      const existing = this.progress.get(id);
      const isLearner = learners.has(id);
      if (!existing) {
        const progress = this.newProgress(id, isLearner, lastIndex + 1);
        progress.recentActive = true;
        this.progress.set(id, progress);
      } else if (existing.isLearner !== isLearner) {
        // Promotion keeps what we know about the node's log.
        const promoted = this.newProgress(id, isLearner, existing.next);
        promoted.match = existing.match;
        promoted.recentActive = true;
        promoted.becomeProbe();
        this.progress.set(id, promoted);
      }
    }
    if (this.role !== 'leader') return;
    if (!this.voters.has(this.id)) {
      // A removed leader steps aside; the rest elect a new one (thesis §4.2.2).
      this.becomeFollower(this.term, NONE);
      return;
    }
    if (this.leadTransferee !== NONE && !this.voters.has(this.leadTransferee)) this.leadTransferee = NONE;
    if (this.maybeCommit()) this.bcastAppend();
    else this.bcastAppend();
  }

  // ---------------------------------------------------------------- leadership transfer (§3.10)

  transferLeadership(target: NodeId): void {
    if (this.role !== 'leader') throw new RaftError('PROPOSAL_DROPPED', 'only the leader can transfer leadership');
    if (target === this.id || !this.voters.has(target)) {
      throw new RaftError('PROPOSAL_DROPPED', `node ${target} cannot take leadership`);
    }
    if (this.leadTransferee === target) return;
    this.unquiesce();
    this.leadTransferee = target;
    this.transferElapsed = 0;
    const progress = this.progress.get(target) as Progress;
    if (progress.match === this.log.lastIndex()) this.sendTimeoutNow(target);
    else this.maybeSendAppend(target, true);
  }

  private sendTimeoutNow(to: NodeId): void {
    this.leaseRevoked = true;
    this.send({ type: 'timeoutNow', to, term: this.term });
  }

  // ---------------------------------------------------------------- linearizable reads (§6.4)

  /** Asks for a read index; the answer comes back as a ReadState (or a dropped context). */
  readIndex(context: string, from: NodeId = this.id): void {
    if (this.role !== 'leader') {
      if (from !== this.id) return;
      if (this.lead === NONE) throw new RaftError('PROPOSAL_DROPPED', `node ${this.id} knows no leader`);
      this.send({ type: 'readIndex', to: this.lead, term: this.term, context });
      return;
    }
    this.unquiesce(false); // No wake round: startRead's wakes the followers (a quiet leader committed in its term).
    if (this.pendingReads.length + this.readsAwaitingCommit.length >= this.config.maxPendingReads) {
      if (from === this.id) throw new RaftError('PROPOSAL_DROPPED', 'too many pending reads');
      return;
    }
    if (!this.committedInCurrentTerm()) {
      // Until this leader commits in its term it does not know the true commit index.
      this.readsAwaitingCommit.push({ context, from });
      return;
    }
    this.startRead(context, from);
  }

  private startRead(context: string, from: NodeId): void {
    if (this.voters.size === 1 && this.voters.has(this.id)) {
      this.answerRead(context, from, this.log.committed);
      return;
    }
    if (this.config.bugs.readIndexWithoutQuorum || this.leaseValid()) {
      this.answerRead(context, from, this.log.committed);
      return;
    }
    this.readSeq++;
    this.pendingReads.push({ context, from, index: this.log.committed, seq: this.readSeq, acks: new Set([this.id]) });
    this.bcastHeartbeatWith(this.readSeq, false);
  }

  private releaseReadsAwaitingCommit(): void {
    const waiting = this.readsAwaitingCommit;
    this.readsAwaitingCommit = [];
    for (const read of waiting) this.startRead(read.context, read.from);
  }

  private ackReads(from: NodeId, seq: number): void {
    if (!this.voters.has(from)) return;
    let confirmed = -1;
    for (let i = 0; i < this.pendingReads.length; i++) {
      const read = this.pendingReads[i] as PendingRead;
      if (read.seq > seq) break;
      read.acks.add(from);
      let count = 0;
      for (const id of read.acks) if (this.voters.has(id)) count++;
      if (count >= this.quorum()) confirmed = i;
    }
    if (confirmed < 0) return;
    // A quorum confirmed leadership after every earlier read arrived, so all of them are safe too.
    const released = this.pendingReads.splice(0, confirmed + 1);
    for (const read of released) this.answerRead(read.context, read.from, read.index);
  }

  private answerRead(context: string, from: NodeId, index: number): void {
    if (from === this.id) this.readStates.push({ index, context });
    else this.send({ type: 'readIndexResp', to: from, term: this.term, index, context });
  }

  private dropRead(context: string, from: NodeId): void {
    if (from === this.id) this.droppedReads.push(context);
  }

  /**
   * The lease (thesis §6.4.1): voters that acknowledged a heartbeat sent at leader tick t refuse to
   * elect anyone else until at least t + electionTicks on their clocks (inLease). So while a quorum
   * acknowledged heartbeats sent after now - electionTicks + margin, no other leader can exist.
   */
  leaseValid(): boolean {
    if (this.config.readMode !== 'lease' || this.role !== 'leader' || this.leaseRevoked) return false;
    if (!this.committedInCurrentTerm()) return false;
    const ackTicks: number[] = [];
    for (const id of this.voters) {
      ackTicks.push(id === this.id ? this.ticks : (this.progress.get(id)?.leaseAckTick ?? Number.NEGATIVE_INFINITY));
    }
    ackTicks.sort((a, b) => b - a);
    const quorumTick = ackTicks[this.quorum() - 1] ?? Number.NEGATIVE_INFINITY;
    return this.ticks < quorumTick + this.config.electionTicks - this.config.leaseMarginTicks;
  }

  /**
   * The host's lease (src/node/replica/read-barrier.ts measures it on its monotonic clock): the leader tick
   * carried by the newest heartbeat a quorum of voters acknowledged in this term (this leader counts
   * with its current tick), or undefined when no lease may be taken: not the leader, CheckQuorum
   * off, a transfer pending or a TimeoutNow sent in this term, no entry of this term committed yet
   * (the commit index is not known to be the cluster's), or quiesced (a quiet group runs no
   * heartbeat rounds: the host falls back to ReadIndex, which wakes it).
   */
  leaseQuorumTick(): number | undefined {
    if (this.role !== 'leader' || !this.config.checkQuorum || this.config.bugs.skipCheckQuorum) return undefined;
    if (this.leaseRevoked || this.leadTransferee !== NONE || this.quiesced || !this.committedInCurrentTerm()) return undefined;
    const ackTicks: number[] = [];
    for (const id of this.voters) {
      ackTicks.push(id === this.id ? this.ticks : (this.progress.get(id)?.leaseAckTick ?? Number.NEGATIVE_INFINITY));
    }
    ackTicks.sort((a, b) => b - a);
    const quorumTick = ackTicks[this.quorum() - 1];
    return quorumTick === undefined || quorumTick === Number.NEGATIVE_INFINITY ? undefined : quorumTick;
  }

  // ---------------------------------------------------------------- quiescence

  /**
   * A leader whose followers hold everything (a learner, which never campaigns, must also have
   * reported the commit) stops heartbeating and tells them, with the commit index (a follower goes
   * quiet only at it), to stop counting towards an election. Any message or proposal wakes it.
   */
  private maybeQuiesce(): void {
    const after = this.config.quiesceAfterTicks;
    if (after <= 0 || this.quiesced || this.idleTicks < after) return;
    if (this.leadTransferee !== NONE || this.pendingReads.length > 0 || this.readsAwaitingCommit.length > 0) return;
    const lastIndex = this.log.lastIndex();
    if (this.log.committed !== lastIndex) return;
    for (const [id, progress] of this.progress) {
      if (id === this.id) continue;
      if (progress.match !== lastIndex || (progress.isLearner && progress.commit !== lastIndex) || progress.state !== 'replicate') return;
    }
    this.quiesced = true;
    this.bcastHeartbeatWith(this.readSeq, true);
  }

  /** The host served work for this group outside Raft (a lease read): an awake group stays awake. */
  noteActivity(): void {
    if (!this.quiesced) this.idleTicks = 0;
  }

  /** Wakes the group; a leader heartbeats at once unless the caller sends appends to everyone itself (`heartbeat` false). */
  unquiesce(heartbeat = true): void {
    this.idleTicks = 0;
    if (!this.quiesced) return;
    this.quiesced = false;
    if (this.role === 'leader') {
      this.electionElapsed = 0;
      this.heartbeatElapsed = 0;
      for (const progress of this.progress.values()) progress.recentActive = true;
      if (heartbeat) this.bcastHeartbeat();
    }
  }

  /**
   * `count` ticks of a quiesced node at once, exactly as `count` calls of tick() would leave it (a
   * host that parks quiet groups settles their ticks lazily): a quiet follower's tick only counts
   * (tickElection returns at once), and a quiet leader's only counts and clears recentActive at
   * each election timeout (no CheckQuorum, no heartbeat, no transfer: quiescing requires none to
   * be pending, and transferLeadership wakes the group). The tick counter must still move: it is
   * the leader's lease clock (leaseValid), and a clock that stood still would stretch the lease.
   */
  skipQuiescedTicks(count: number): void {
    if (!(this.quiesced && Number.isSafeInteger(count) && count >= 0)) assert.fail(`skipQuiescedTicks(${count}) on a node that is not quiesced`);
    assert.ok(this.leadTransferee === NONE, 'a quiesced node has no transfer pending');
    this.ticks += count;
    this.startupQuietTicks = Math.max(0, this.startupQuietTicks - count);
    if (this.role !== 'leader') return;
    this.heartbeatElapsed += count;
    this.idleTicks += count;
    const elapsed = this.electionElapsed + count;
    if (elapsed >= this.config.electionTicks) {
      for (const [id, progress] of this.progress) progress.recentActive = id === this.id;
    }
    this.electionElapsed = elapsed % this.config.electionTicks;
  }

  /** The transport could not reach `peer`. A follower that lost its leader starts counting again. */
  reportUnreachable(peer: NodeId): void {
    if (this.role === 'leader') {
      // Invariant: a quiesced leader holds every follower at 'replicate' with everything matched
      // (maybeQuiesce), and nothing is in flight, so an unreachable report (typically the quiesce
      // heartbeat itself, sent to a node that just crashed) has nothing to resend and must not
      // demote: a quiet group sends no heartbeat, so nothing would ever lift a probe state again,
      // and a move waiting for its learner to be 'replicate' waited forever (simulator seed 1430).
      // Once woken, sends that fail demote as usual.
      if (this.quiesced) return;
      const progress = this.progress.get(peer);
      if (progress && progress.state === 'replicate') progress.becomeProbe();
      return;
    }
    if (peer === this.lead) this.unquiesce();
  }

  // ---------------------------------------------------------------- plumbing

  private send(message: Omit<Message, 'from'>): void {
    this.messages.push({ ...message, from: this.id });
  }

  private loadHardState(hardState: HardState): void {
    assert.ok(
      hardState.commit >= this.log.committed && hardState.commit <= this.log.lastIndex(),
      `hard state commit ${hardState.commit} outside [${this.log.committed}, ${this.log.lastIndex()}]`,
    );
    this.term = hardState.term;
    this.vote = hardState.vote;
    this.log.commitTo(hardState.commit);
  }
}
