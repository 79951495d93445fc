/**
 * Online replica moves (Cluster.MoveReplica), the mechanism under membership changes: the
 * partition's leader moves one replica from node `from` to node `to` with single-server Raft
 * configuration changes, one at a time:
 *
 *   1. tell `to` to open an empty replica (Peer.PrepareReplica), propose addLearner(to);
 *   2. wait until the learner caught up (by snapshot, then the log), propose addVoter(to);
 *   3. if `from` leads, hand leadership to `to` (the caller's retry finds the new leader);
 *   4. propose removeNode(from).
 *
 * Every step is chosen from the group's applied configuration alone (nextMoveStep, move-steps.ts), so a move is
 * idempotent and resumable: after a crash or a leader change, repeating the request continues
 * from wherever the configuration is. `from`, once its replica's configuration no longer names it
 * (it applied its removal, or installed a newer snapshot), stops the group and deletes the
 * partition's data in one synced batch (the sweep). This file also opens the empty replica on `to`.
 * The same sweep, on a leader, removes a learner whose move stopped before promoting it
 * (orphan-learners.ts).
 */
import type { Logger } from 'pino';
import { AtollError } from '../../errors.js';
import type { Limits } from '../../limits.js';
import { encodeCommand } from '../../mvcc/index.js';
import { RaftError } from '../../raft/errors.js';
import type { ConfChange, ConfState, VoteFloor } from '../../raft/types.js';
import type { StorageEngine } from '../../storage/storage-engine.js';
import type * as api from '../../api/node-api.js';
import { encodeEntryPayload, type PartitionReplica } from '../replica/partition-replica.js';
import type { NodeTestBugs } from '../node-config.js';
import type { NodeClock, NodeTimers, TimerHandle } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import type { ReplicaStore } from '../apply/replica-store.js';
import { PersistentLogStorage } from '../raftlog/raft-log-store.js';
import { caughtUp, nextMoveStep, refused } from './move-steps.js';
import { OrphanLearners } from './orphan-learners.js';
import { StrayCheck } from './stray-check.js';
import { VoterHoles } from './voter-holes.js';

const POLL_MS = 25;
/** While waiting for a learner, `to` is asked again to open its replica this often (it may have restarted). */
const REPREPARE_MS = 1_000;
const PREPARE_TIMEOUT_MS = 2_000;
/** Rounds of one move request (each round does one step or waits POLL_MS); the deadline bounds it too. */
const MAX_ROUNDS = 100_000;
/**
 * How often replicas this node no longer belongs to are looked for: a pass over every group (one
 * Set lookup each), so its rate is the idle cost of many partitions (issue 18); a moved-away
 * replica is deleted at most this long after it applied its removal.
 */
const SWEEP_MS = 1_000;

export interface ReplicaMovesOptions {
  readonly id: number;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly limits: Limits;
  readonly knownNodes: ReadonlyMap<number, string>;
  /**
   * Reads the member table again, linearizably (membership.ts): a move to a node that just joined
   * may arrive before this node saw it, and a move checks its target's state from a fresh table.
   */
  readonly refreshMembers?: () => Promise<void>;
  /** A node's state in the member table ('joining', 'active', 'leaving', 'removed'), undefined when unknown or not tracked. */
  readonly memberState?: (node: number) => string | undefined;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly store: ReplicaStore;
  readonly engine: StorageEngine;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  readonly logger: Logger;
  /** Deliberate defects of the negative controls (moveRemovesSourceEarly, movedAwayAfterRestart, orphanLearnersKept). */
  readonly testBugs?: NodeTestBugs;
  /** NOT_LEADER (or NO_LEADER) naming `leader` (router.ts). */
  readonly notLeader: (partition: number, leader: number, why: string) => AtollError;
  /** Empty replicas opened for a skipped split (split-heal.ts), for the stray check. */
  readonly healing?: () => ReadonlyMap<number, number>;
  /**
   * Whether `partition` names a partition (range-routing.ts; a split partition's id is its first
   * hash); `learn` (a peer's PrepareReplica, from the leader of a partition that exists) lets the
   * node learn a split start it did not know. Default: the founding table's ids only.
   */
  readonly isPartition?: (partition: number, learn: boolean) => boolean;
}

/**
 * A learner that is neither this move's source nor its target is one no move here uses (a move is
 * the only one of its partition coordinated here): its own move stopped before promoting it
 * (whole-node simulator seed 58111: its leader lost power right after adding it). The move takes
 * the group back to RF voters and no learner first, instead of refusing 'in-progress' until the
 * orphan-learner sweep (ORPHAN_LEARNER_MS) removes it; a move still wanted for that learner starts
 * again from the applied configuration, as every move resumes.
 */
function orphanLearnerOf(conf: ConfState, from: number, to: number): number | undefined {
  return conf.learners.find((node) => node !== from && node !== to);
}

export class ReplicaMoves {
  /** Moves this node coordinates now, by partition (one per partition). */
  private readonly active = new Map<number, { from: number; to: number }>();
  private readonly preparing = new Map<number, Promise<void>>();
  /** Moved-away replicas whose data is being deleted, by partition: the deletion's end. */
  private readonly deleting = new Map<number, Promise<void>>();
  /** Replicas opened empty for a move that have not yet seen this node in their configuration. */
  private readonly notYetMember = new Set<number>();
  private sweepTimer: TimerHandle | undefined;
  /** Finds replicas whose group removed this node while it could not hear (stray-check.ts). */
  private readonly strays: StrayCheck;
  /** Learners left by a move that stopped before promoting them, removed by the leader (orphan-learners.ts). */
  private readonly orphans: OrphanLearners;
  /** Voters of groups led here that hold no replica, asked to open one (voter-holes.ts). */
  private readonly holes: VoterHoles;

  constructor(private readonly options: ReplicaMovesOptions) {
    const { driver, id, knownNodes, clock, timers, logger } = options;
    const leave = (partition: number, replica: PartitionReplica): void => this.leave(partition, replica);
    this.strays = new StrayCheck({ driver, id, knownNodes, clock, timers, logger, leave, ...(options.healing !== undefined && { healing: options.healing }), keepMergedAway: options.testBugs?.mergeLeavesLeftovers === true });
    this.orphans = new OrphanLearners({ clock, logger, moveOf: (partition) => this.active.get(partition), disabled: options.testBugs?.orphanLearnersKept === true });
    this.holes = new VoterHoles({ id, clock, logger, isReachable: (node) => driver.transport.isReachable(node), prepare: (node, partition, floor) => this.prepareOn(node, partition, floor, clock.wallMs() + PREPARE_TIMEOUT_MS) });
  }

  start(): void {
    // A replica that opens from disk with a configuration that never named this node is taken for
    // one a move opened here before a restart (the set above does not survive one), not for one
    // that moved away: its first snapshot may be older than its addition (simulator seed 321 once: a
    // target that crashed inside its first install, restarted, installed an older snapshot and
    // deleted itself as "moved away" while it was a voter; test/node/replica-moves-restart.test.ts). One that did move away while this node
    // was down has no leader, and the stray check deletes it once its leader confirms the removal.
    const { driver, id, testBugs } = this.options;
    // wasMember ignores configurations at or below a replica's vote floor (raft.ts): a replica
    // re-added here whose first snapshot predates its node's removal and names it is "not yet a
    // member", not "moved away" (simulator seed 8244).
    for (const [partition, replica] of driver.groups) {
      if (!replica.raw.isMember(id) && !replica.raw.wasMember && testBugs?.movedAwayAfterRestart !== true) this.notYetMember.add(partition);
    }
    this.sweepTimer = this.options.timers.every(SWEEP_MS, () => this.options.driver.enqueue(() => this.sweep()));
    this.strays.start();
  }

  stop(): void {
    this.sweepTimer?.cancel();
    this.strays.stop();
  }

  /** Partitions with a move coordinated here now (reports). */
  movesInProgress(): Array<{ partition: number; from: number; to: number }> {
    return [...this.active].map(([partition, move]) => ({ partition, ...move }));
  }

  /**
   * Opens an empty replica of `partition` here, unless one is open (Peer.PrepareReplica). Idempotent.
   * `voteFloor` is the leader's term and commit index when it asked: recorded (synced) before the
   * replica opens, so across restarts it votes for, and campaigns with, only a log that reaches it
   * (RaftConfig.voteFloor). Raft ids are node ids, so this replica may be a new incarnation of one
   * the group removed; the leader's snapshot may predate that removal and name it a voter, and
   * without the floor it helps a replica that missed the removal win an election and overwrite
   * committed entries (test/raft/vote-floor.test.ts). An open replica keeps the floor it has.
   */
  async prepare(partition: number, voteFloor: VoteFloor): Promise<void> {
    const { driver, store, engine, logger } = this.options;
    if (!this.isPartition(partition, true)) throw new AtollError('INVALID_ARGUMENT', `no partition ${partition}`);
    const existing = driver.groups.get(partition);
    if (existing !== undefined && !this.movedAway(partition, existing)) return;
    // A replica this node left that the sweep has not deleted yet is not reused: its log and its
    // vote are the old incarnation's, and it has no vote floor (simulator seed 8244: reused as the
    // target, it restarted before applying its re-addition and was then deleted as moved away
    // while the group counted it a voter). It goes first, and a new one opens.
    if (existing !== undefined) {
      // The sweep waits the same way: an export or a storage compaction reads the replica's data.
      if (existing.exporting || existing.compactingStorage) throw new AtollError('UNAVAILABLE', `partition ${partition}: the replica this node left is still busy; retry`);
      await this.inLoop(() => this.leave(partition, existing), this.options.clock.wallMs() + PREPARE_TIMEOUT_MS);
    }
    await this.deleting.get(partition);
    if (driver.groups.has(partition)) return;
    const pending = this.preparing.get(partition);
    if (pending !== undefined) return pending;
    const opening = (async () => {
      const floor = this.options.testBugs?.prepareWithoutVoteFloor === true ? { term: 0, index: 0 } : voteFloor;
      await engine.write(PersistentLogStorage.stageVoteFloor(partition, floor), { sync: true });
      const replica = await store.open(partition, true);
      if (replica === undefined) throw new AtollError('INTERNAL', `partition ${partition}: could not open an empty replica`);
      await this.inLoop(() => {
        if (driver.groups.has(partition)) return;
        driver.addGroup(replica);
        this.notYetMember.add(partition);
      }, this.options.clock.wallMs() + PREPARE_TIMEOUT_MS);
      logger.info({ partition, voteFloor: floor }, 'opened an empty replica for a move; the leader sends a snapshot');
    })();
    this.preparing.set(partition, opening);
    try {
      await opening;
    } finally {
      this.preparing.delete(partition);
    }
  }

  /**
   * Whether `partition` is a partition id: the founding table's, one hosted here, or (isPartition)
   * a split one. Hosted counts: the routing table forgets a frozen R's start as soon as the node
   * meets its freeze, and a move of a frozen R is allowed (see keptForMerge; chaos seed 202).
   */
  private isPartition(partition: number, learn: boolean): boolean {
    if (!Number.isSafeInteger(partition) || partition < 0) return false;
    if (partition < this.options.partitions || this.options.driver.groups.has(partition)) return true;
    return this.options.isPartition?.(partition, learn) ?? false;
  }

  /** Runs a move to its end (see the file comment); call on the partition's leader. */
  async move(request: api.MoveReplicaRequest, context: api.CallContext): Promise<api.MoveReplicaResponse> {
    const { knownNodes } = this.options;
    const { partition, fromNode: from, toNode: to } = request;
    if (!this.isPartition(partition, false)) throw new AtollError('INVALID_ARGUMENT', `no partition ${partition}`);
    if (!knownNodes.has(from) || !knownNodes.has(to)) await this.options.refreshMembers?.().catch(() => undefined);
    for (const node of [from, to]) if (!knownNodes.has(node)) throw new AtollError('INVALID_ARGUMENT', `no node ${node}`);
    if (from === to) throw new AtollError('INVALID_ARGUMENT', 'a move needs two different nodes');
    const running = this.active.get(partition);
    if (running !== undefined) throw refused('in-progress', `partition ${partition}: a move from ${running.from} to ${running.to} is in progress`);
    this.active.set(partition, { from, to });
    try {
      return await this.run(partition, from, to, context.deadlineMs);
    } finally {
      this.active.delete(partition);
    }
  }

  private async run(partition: number, from: number, to: number, deadlineMs: number): Promise<api.MoveReplicaResponse> {
    const { driver, clock, logger, replicationFactor, id } = this.options;
    let preparedAtMs = -Infinity;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (clock.wallMs() >= deadlineMs) throw new AtollError('DEADLINE_EXCEEDED', `partition ${partition}: the move did not finish in time; repeat it to go on`);
      const replica = driver.groups.get(partition);
      if (replica === undefined) throw notApplied(this.options.notLeader(partition, 0, 'this node holds no replica of the partition'));
      const status = await this.inLoop(() => replica.raw.status(), deadlineMs);
      if (status.role !== 'leader') throw notApplied(this.options.notLeader(partition, status.lead === id ? 0 : status.lead, 'only the leader moves replicas'));
      const orphan = this.options.testBugs?.orphanLearnersKept === true ? undefined : orphanLearnerOf(status.confState, from, to);
      if (orphan !== undefined) {
        logger.warn({ partition, learner: orphan, from, to, voters: status.confState.voters }, 'removing a learner no replica move here uses before this move (its own move stopped before promoting it)');
        await this.proposeAndWait(replica, { type: 'removeNode', node: orphan }, deadlineMs);
        continue;
      }
      const step = nextMoveStep({ conf: status.confState, leader: id, from, to, replicationFactor });
      switch (step.kind) {
        case 'done':
          logger.info({ partition, from, to, voters: status.confState.voters }, 'replica move finished');
          return { voters: status.confState.voters };
        case 'addLearner':
          // A linearizable read of the member table first: this node may follow it seconds late.
          await this.options.refreshMembers?.().catch(() => undefined);
          this.checkTarget(partition, to);
          if (replica.mvcc.appliedIndex === 0) {
            await this.advanceStateMachine(replica, deadlineMs);
            break;
          }
          await this.prepareOn(to, partition, { term: status.term, index: status.commit }, deadlineMs);
          preparedAtMs = clock.monotonicMs();
          await this.proposeAndWait(replica, { type: 'addLearner', node: to }, deadlineMs);
          break;
        case 'promote':
          if (this.options.testBugs?.moveRemovesSourceEarly === true && status.confState.voters.includes(from)) {
            // Negative control (src/sim/node/negative-controls.ts): the source goes first.
            await this.proposeAndWait(replica, { type: 'removeNode', node: from }, deadlineMs);
            break;
          }
          if (caughtUp(status.progress.get(to), status.lastIndex)) {
            await this.options.refreshMembers?.().catch(() => undefined);
            if (!this.targetMayHold(to)) {
              // The target started leaving (or was removed) after the learner was added: take the
              // learner back out, so the group returns to RF voters and no learner; the next round
              // (addLearner) refuses.
              await this.proposeAndWait(replica, { type: 'removeNode', node: to }, deadlineMs);
              break;
            }
            await this.proposeAndWait(replica, { type: 'addVoter', node: to }, deadlineMs);
          } else {
            if (clock.monotonicMs() - preparedAtMs >= REPREPARE_MS) {
              preparedAtMs = clock.monotonicMs();
              await this.prepareOn(to, partition, { term: status.term, index: status.commit }, deadlineMs).catch((error: unknown) => logger.debug({ err: error, partition, to }, 'asking the learner to open its replica failed; trying again'));
            }
            await this.sleep(POLL_MS);
          }
          break;
        case 'transferLeadership':
          await this.inLoop(() => {
            if (replica.raw.status().leadTransferee !== to) replica.raw.transferLeadership(to);
          }, deadlineMs).catch((error: unknown) => {
            if (!(error instanceof RaftError)) throw error;
          });
          await this.sleep(POLL_MS);
          break;
        case 'removeSource':
          await this.proposeAndWait(replica, { type: 'removeNode', node: from }, deadlineMs);
          break;
      }
    }
    throw new AtollError('DEADLINE_EXCEEDED', `partition ${partition}: the move did not finish in its bound of rounds; repeat it to go on`);
  }

  /**
   * Invariant: a move only adds or promotes a replica on a node that may hold replicas (active or
   * joining in the member table as this node knows it). A leaving node is emptied by remove-node
   * and a removed one has shut down; ChangeMember(remove) refuses while any configuration names
   * the node, and this stops a move that started before the node left.
   */
  private targetMayHold(to: number): boolean {
    const state = this.options.memberState?.(to);
    return state !== 'leaving' && state !== 'removed';
  }

  private checkTarget(partition: number, to: number): void {
    if (!this.targetMayHold(to)) throw refused('target-leaving', `partition ${partition}: node ${to} is ${String(this.options.memberState?.(to))}; it takes no new replica`);
  }

  /**
   * A learner catches up by snapshot, and a snapshot is taken at the state machine's applied
   * index, which only commands move: on a partition that never applied one, a no-op (compaction
   * below revision 0) gives the snapshot an index to stand at. Returns once it applied, or failed.
   */
  private async advanceStateMachine(replica: PartitionReplica, deadlineMs: number): Promise<void> {
    const payload = encodeEntryPayload(this.options.clock.wallMs(), encodeCommand({ type: 'compact', belowRevision: 0 }, this.options.limits));
    await new Promise<void>((resolve, reject) => {
      this.inLoop(() => replica.propose(payload, { resolve: () => resolve(), reject }), deadlineMs).catch(reject);
    }).catch((error: unknown) => {
      // Not the leader any more, or the entry lost its index: the next round looks again.
      if (!(error instanceof RaftError) && !(error instanceof AtollError)) throw error;
    });
  }

  /** Asks `node` to open an empty replica, with this leader's commit index as its vote floor (see prepare). */
  private async prepareOn(node: number, partition: number, voteFloor: VoteFloor, deadlineMs: number): Promise<void> {
    if (node === this.options.id) return this.prepare(partition, voteFloor);
    const callDeadline = Math.min(deadlineMs, this.options.clock.wallMs() + PREPARE_TIMEOUT_MS);
    const transport = this.options.driver.transport;
    if (transport.prepareReplica === undefined) throw new AtollError('UNAVAILABLE', 'this node\'s transport cannot ask peers to open replicas');
    await transport.prepareReplica(node, partition, voteFloor, callDeadline);
  }

  /**
   * Proposes one configuration change and waits until it is applied here, or this node stopped
   * leading. Invariant: never two configuration changes in flight per group. The Raft core refuses
   * a proposal while one is unapplied (pendingConfIndex), and a move proposes its next change only
   * after it saw the previous one applied, choosing it again from the applied configuration.
   */
  private async proposeAndWait(replica: PartitionReplica, change: ConfChange, deadlineMs: number): Promise<void> {
    const proposed = await this.inLoop(() => {
      try {
        return replica.raw.proposeConfChange(change);
      } catch (error) {
        // Another change still applying, leadership moving: look again after a pause.
        if (error instanceof RaftError) return undefined;
        throw error;
      }
    }, deadlineMs);
    if (proposed === undefined) {
      await this.sleep(POLL_MS);
      return;
    }
    this.options.logger.info({ partition: replica.id, change, index: proposed.index }, 'proposed a configuration change for a replica move');
    while (this.options.clock.wallMs() < deadlineMs) {
      const status = await this.inLoop(() => replica.raw.status(), deadlineMs);
      if (status.applied >= proposed.index || status.role !== 'leader' || status.term !== proposed.term) return;
      await this.sleep(POLL_MS);
    }
  }

  /**
   * Stops and deletes the replicas whose applied configuration no longer names this node (moved
   * away: it applied its removal, or a snapshot with a newer configuration). A loop task: the group
   * leaves the driver between iterations, then its data goes in one synced batch. An empty replica
   * (no configuration yet: waiting for its first snapshot) is kept. A led group's learners are
   * looked at too (orphan-learners.ts).
   */
  private sweep(): void {
    const { driver, id, logger } = this.options;
    this.orphans.prune(driver.groups);
    this.holes.prune(driver.groups);
    for (const [partition, replica] of driver.groups) {
      // The common case, a member, is a few field reads (no status() object per group per sweep).
      if (replica.raw.isMember(id)) {
        this.notYetMember.delete(partition);
        this.orphans.observe(partition, replica);
        if (this.options.testBugs?.voterHolesKept !== true) this.holes.observe(partition, replica);
        continue;
      }
      const { confState } = replica.raw.status();
      const members = [...confState.voters, ...confState.learners];
      // A configuration this replica applied named it, even one the once-a-second sweep never saw
      // (added and removed again between two sweeps): it is no longer new, so it moved away.
      if (members.includes(id) || replica.raw.wasMember) this.notYetMember.delete(partition);
      if (members.length === 0 || members.includes(id) || replica.exporting || replica.compactingStorage) continue;
      if (this.keptForMerge(replica)) continue;
      // A new replica may first install a snapshot older than its own addition (one the leader
      // held for another follower); the log that follows adds it. It is not "moved away".
      if (this.notYetMember.has(partition)) continue;
      logger.info({ partition, voters: confState.voters }, 'this node left the partition: deleting its replica');
      this.leave(partition, replica);
    }
  }

  /**
   * This node was removed from the cluster (the member table says so): it closes every replica it
   * still hosts, so it serves no partition's state while it shuts down. No configuration names it
   * (ChangeMember(remove) refuses until none does), so what it hosts are strays: a move's source
   * that never applied its removal. Their data stays on disk (the node's id is spent; an operator
   * clears the directory); nothing here trusts the removal enough to delete.
   */
  closeAll(): void {
    const { driver, logger } = this.options;
    driver.enqueue(() => {
      const closed = [...driver.groups.keys()];
      for (const partition of closed) {
        const replica = driver.groups.get(partition);
        driver.removeGroup(partition);
        replica?.failAll(this.options.notLeader(partition, 0, 'this node was removed from the cluster'), outcomeUnknown(partition, 'this node was removed from the cluster'));
      }
      if (closed.length > 0) logger.warn({ partitions: closed }, 'removed from the cluster: closed the replicas this node still hosted');
    });
  }

  /**
   * Whether a replica this node is no longer a member of stays anyway, for a merge: R frozen into
   * L while this node hosts L (not merged away, and not yet covering R's start). A move of a frozen
   * R is allowed (docs/architecture.md "Partition merges", "Moves during a merge": a voter of R
   * gone for good is replaced that way), so R's configuration may drop this node after the merge
   * admin saw it store the freeze and proposed the merge entry with it among L's voters: this
   * node's L then applies that entry, and needs R's log through F here (merge-apply.ts stops the
   * node without it). The frozen replica applies nothing and serves nothing; it leaves when L's
   * merge applies here (merge-apply.ts), when an install of L covers it (absorbedBy), or at the
   * first sweep after this node's L moved away too.
   */
  private keptForMerge(replica: PartitionReplica): boolean {
    const into = replica.mvcc.frozen?.into;
    if (into === undefined || replica.mvcc.mergedInto !== undefined) return false;
    const left = this.options.driver.groups.get(into);
    if (left === undefined || left.mvcc.mergedInto !== undefined) return false;
    return left.raw.isMember(this.options.id);
  }

  /**
   * Whether `replica` is one this node left (its applied configuration dropped this node after
   * naming it), not one a move opened here that has yet to apply its addition (notYetMember).
   */
  private movedAway(partition: number, replica: PartitionReplica): boolean {
    const { id } = this.options;
    return !replica.raw.isMember(id) && replica.raw.wasMember && !this.notYetMember.has(partition) && !this.keptForMerge(replica);
  }

  /** Takes a replica out of the driver (a loop task) and deletes its data. */
  private leave(partition: number, replica: PartitionReplica): void {
    const { driver } = this.options;
    if (this.deleting.has(partition) || driver.groups.get(partition) !== replica) return;
    driver.removeGroup(partition);
    replica.failAll(this.options.notLeader(partition, 0, 'the replica moved to another node'), outcomeUnknown(partition, 'the replica moved to another node'));
    this.deleting.set(partition, this.deleteReplica(partition));
  }

  private async deleteReplica(partition: number): Promise<void> {
    const { store, engine, logger } = this.options;
    try {
      const ops = await store.deleteOps(partition);
      await engine.write(ops, { sync: true });
      logger.info({ partition, keys: ops.length }, 'deleted the replica of a partition that moved away');
    } catch (error) {
      // The records stay; the next start opens the replica, sees it is not a member, and retries.
      logger.error({ err: error, partition }, 'deleting a moved-away replica failed');
    } finally {
      this.deleting.delete(partition);
    }
  }

  /** Runs `task` in the node loop, between iterations; rejects at the deadline (or when the node closes). */
  private inLoop<T>(task: () => T, deadlineMs: number): Promise<T> {
    const { driver, timers, clock } = this.options;
    return new Promise<T>((resolve, reject) => {
      const timer = timers.after(Math.max(0, deadlineMs - clock.wallMs()), () =>
        reject(new AtollError('DEADLINE_EXCEEDED', 'the node loop did not run the move step in time')),
      );
      if (driver.closed) {
        timer.cancel();
        reject(new AtollError('UNAVAILABLE', 'the node is shutting down'));
        return;
      }
      driver.enqueue(() => {
        timer.cancel();
        try {
          resolve(task());
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.options.timers.after(ms, resolve));
  }
}

/**
 * What a write still waiting on a replica that leaves this node gets. Invariant: a proposal is
 * answered "not applied" (NOT_LEADER / NO_LEADER, which kv-executor.ts marks neverSent) only when
 * its log index applied another entry or Raft refused it; a replica that leaves has not seen its
 * waiters' indexes apply. A deposed leader whose entry a quorum stored, then removed from the group
 * and caught up by a snapshot past that entry (or deleted as a stray), never applies it here, yet
 * the others did: answered NOT_LEADER, the write counted as failed while it applied (a counter
 * read one more than its acknowledged increments). So its outcome is unknown: UNAVAILABLE without
 * the not-applied mark, and the caller resends it with its request id (deduplicated).
 */
function outcomeUnknown(partition: number, why: string): AtollError {
  return new AtollError('UNAVAILABLE', `partition ${partition}: ${why} before this write's outcome was known; it may have applied (resend it with its request id)`, { partition });
}

/** The same error, marked as certainly not applied: the caller's client retries it at the leader. */
function notApplied(error: AtollError): AtollError {
  return new AtollError(error.code, error.message, { ...error.details, neverSent: true });
}
