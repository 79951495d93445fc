/**
 * The rebalancer at the node: one job, keep replicas and leaders even across the active members
 * through the replicated rebalance record (rebalance-state.ts). Three roles, one timer:
 *
 * - follow: every node reads the record (its own replica's applied copy when it holds the record's
 *   partition, else through the partition's leader every REMOTE_READ_EVERY rounds);
 * - plan: only the leader of the record's partition plans, so two nodes never plan at once (a
 *   deposed planner's write fails its compare-and-set): it gathers each partition's configuration
 *   from its leader (ClusterInfo, first hand), runs nextRound and writes the record;
 * - run: each partition's leader runs the moves the record assigns to its partitions
 *   (ReplicaMoves.move, resumable: a new leader repeats it from the applied configuration), and
 *   maintenance.ts moves leadership to the record's preferred leaders.
 *
 * Pause and resume flip the record's replicated flag, so they survive leader changes and restarts.
 * A move already running when the rebalancer pauses finishes; no new one starts.
 */
import type { Logger } from 'pino';
import { AtollError } from '../../errors.js';
import type { LoadTracker } from '../../hotkeys/index.js';
import { systemTenant } from '../../keys/tenant-keys.js';
import type * as api from '../../api/node-api.js';
import type { Membership } from './membership.js';
import { refusedMember } from './membership-table.js';
import type { KvOperation, KvResult } from '../../api/operations.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import { preferredLeaderOf } from '../../keys/placement.js';
import type { NodeClock, NodeTimers, TimerHandle } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import { decodeState, encodeState, initialState, nextRound, rebalanceKey, stateOf, type PartitionView, type RebalanceState } from './rebalance-state.js';
import type { ReplicaMoves } from './replica-moves.js';

const ROUND_MS = 1_000;
/** The planner plans every this many rounds. */
const PLAN_EVERY = 2;
/** A node without a replica of the record's partition reads it through the leader this rarely (rounds). */
const REMOTE_READ_EVERY = 10;
/** How recent a read of the record must be for this node to move a partition's leadership by it. */
const FRESH_MS = 2_500;
/**
 * Idle cost: gathering the view asks every member for ClusterInfo and reads each led group's
 * configuration, so the planner plans only while something may change (moves assigned, its last
 * round changed the record, the member table changed, leaders never planned), else this rarely.
 */
const IDLE_PLAN_MS = 60_000;
const CALL_TIMEOUT_MS = 5_000;
/** How long one run of an assigned move may take at its leader before the next round repeats it. */
const MOVE_CALL_MS = 120_000;
/** An assigned move not seen finished this long is dropped; the next plan decides again. */
const MOVE_TIMEOUT_MS = 300_000;
const MAX_WRITE_ATTEMPTS = 8;
export const REBALANCE_DEFAULTS = Object.freeze({ maxInFlight: 2, pauseMs: 2_000 });

/** How long partitionsNaming waits for voters that have not applied a configuration their leader has, and how often it looks again. */
const LAGGING_VOTERS_WAIT_MS = 3_000;
const LAGGING_VOTERS_POLL_MS = 100;

export interface RebalancerOptions {
  readonly id: number;
  readonly partitions: number;
  readonly replicationFactor: number;
  /** Moves assigned at once, cluster-wide (at most maxInFlightCap). */
  readonly maxInFlight?: number;
  /** The pause between two moves the planner assigns. */
  readonly pauseMs?: number;
  readonly membership: Membership;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly moves: ReplicaMoves;
  readonly load: LoadTracker;
  readonly route: (partition: number, operation: KvOperation, context: api.CallContext) => Promise<KvResult>;
  readonly partitionOfKey: (key: string) => number;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  readonly logger: Logger;
}

export class Rebalancer {
  /** The newest record this node read (version never goes down). */
  private state: RebalanceState = initialState;
  private read = false;
  /** When the record was last read (local applied copy of a led replica, or through the leader). */
  private confirmedAtMs = Number.NEGATIVE_INFINITY;
  /** A transfer waits on a fresh read: the next round reads through the leader whatever the schedule. */
  private wantRead = false;
  private timer: TimerHandle | undefined;
  private busy = false;
  private rounds = 0;
  /** Planner: whether its last round changed the record (or could not see every partition). */
  private dirty = true;
  private plannedTableVersion = -1;
  private plannedStateVersion = -1;
  /** Whether this node led the record's partition last round (a new planner plans at once). */
  private wasPlanner = false;
  private lastPlanMs = -Infinity;
  /** Partitions whose assigned move this node runs now. */
  private readonly running = new Set<number>();

  constructor(private readonly options: RebalancerOptions) {}

  start(): void {
    this.timer = this.options.timers.every(ROUND_MS, () => void this.round());
  }

  stop(): void {
    this.timer?.cancel();
  }

  /**
   * The partition's preferred leader (maintenance.ts moves leadership to it), or undefined: none
   * while a move of the partition is assigned; the record's choice while that node is an active member; before any plan, on a cluster whose
   * members never changed (table version 0), the founding placement's first replica.
   */
  preferredLeader(partition: number): number | undefined {
    const table = this.options.membership.current();
    const active = (node: number): boolean => table.members.some((member) => member.id === node && member.state === 'active');
    // During an assigned move the move decides who leads (it hands leadership from its source to
    // its target); moving it back to a planned leader would undo that step, round after round.
    if (this.state.moves.some((move) => move.partition === partition)) return undefined;
    const planned = this.state.leaders[partition] ?? 0;
    if (planned !== 0) return active(planned) ? planned : undefined;
    if (table.version !== 0) return undefined;
    const ids = table.members.map((member) => member.id);
    if (ids.length < this.options.replicationFactor) return undefined;
    return preferredLeaderOf(partition, ids, this.options.replicationFactor);
  }

  /**
   * The node a leader of `partition` should hand leadership to, or undefined: preferredLeader, but
   * only from a record read within FRESH_MS; an older copy asks the next round for a read through
   * the leader and answers undefined meanwhile. Without this two nodes holding different versions
   * of the plan (one that reads the record only every REMOTE_READ_EVERY rounds) handed a
   * partition's leadership back and forth every second until the stale one read again
   * (simulator seed 477). A node campaigning for itself at start needs no such check: it only
   * asks for the vote.
   */
  transferTarget(partition: number): number | undefined {
    const preferred = this.preferredLeader(partition);
    if (preferred === undefined || this.options.clock.monotonicMs() - this.confirmedAtMs <= FRESH_MS) return preferred;
    this.wantRead = true;
    return undefined;
  }

  /** Cluster.Rebalance: pause, resume, or report (cluster admin; the caller checks). */
  async request(action: api.RebalanceRequest['action']): Promise<api.RebalanceResponse> {
    if (action !== 'status' && action !== 'pause' && action !== 'resume') throw new AtollError('INVALID_ARGUMENT', `unknown rebalance action ${JSON.stringify(String(action))}: pause, resume or status`);
    let state = (await this.readRecord()).state;
    if (action !== 'status') state = await this.write((current) => (current.paused === (action === 'pause') ? current : { ...current, version: current.version + 1, paused: action === 'pause' }));
    this.follow(state);
    if (action !== 'status') this.options.logger.info({ paused: state.paused, version: state.version }, action === 'pause' ? 'rebalancer paused' : 'rebalancer resumed');
    return {
      state: stateOf(state),
      paused: state.paused,
      version: state.version,
      moves: state.moves.map((move) => ({ partition: move.partition, fromNode: move.from, toNode: move.to })),
      plannedLeaders: state.leaders.flatMap((node, partition) => (node !== 0 ? [{ partition, node }] : [])),
    };
  }

  private async round(): Promise<void> {
    const { driver, partitionOfKey, logger } = this.options;
    if (this.busy || driver.closed) return;
    this.busy = true;
    try {
      const local = driver.groups.get(partitionOfKey(rebalanceKey));
      const round = this.rounds++;
      // The local copy only of a replica that follows a leader and holds the partition's state
      // (not an empty one a move opened, waiting for its first snapshot: it has no record).
      if (local !== undefined && local.raw.lead !== 0 && local.raw.isMember(this.options.id)) await this.readLocal(local);
      else if (round % REMOTE_READ_EVERY === 0 || this.wantRead) {
        this.wantRead = false;
        this.follow((await this.readRecord()).state);
      }
      this.runAssigned();
      const planner = local?.raw.role === 'leader';
      if (planner && !this.wasPlanner) this.dirty = true;
      this.wasPlanner = planner;
      if (planner && round % PLAN_EVERY === 0 && this.shouldPlan()) await this.plan();
    } catch (error) {
      logger.debug({ err: error }, 'a rebalancer round failed; the next one tries again');
    } finally {
      this.busy = false;
    }
  }

  private follow(state: RebalanceState): void {
    this.confirmedAtMs = this.options.clock.monotonicMs();
    if (this.read && state.version <= this.state.version) return;
    this.state = state;
    this.read = true;
  }

  private async readLocal(replica: PartitionReplica): Promise<void> {
    const got = await replica.mvcc.get(rebalanceKey, { nowMs: this.options.clock.wallMs() });
    this.follow(got.found && got.value !== undefined ? decodeState(got.value) : initialState);
  }

  /** The record through its partition's leader (linearizable), with its mod revision (0: absent). */
  private async readRecord(): Promise<{ state: RebalanceState; modRevision: number }> {
    const key = rebalanceKey;
    const result = (await this.options.route(this.options.partitionOfKey(key), { kind: 'get', request: { key } }, this.context())) as KvResult & { response: api.GetResponse };
    if (!result.response.found) return { state: initialState, modRevision: 0 };
    return { state: decodeState(result.response.value), modRevision: result.response.modRevision };
  }

  /** Compare-and-set of `change(record)`, retried on a concurrent write (bounded); the record now. */
  private async write(change: (state: RebalanceState) => RebalanceState): Promise<RebalanceState> {
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      const { state, modRevision } = await this.readRecord();
      const next = change(state);
      if (next === state) return state;
      const key = rebalanceKey;
      const condition = modRevision === 0 ? { ifAbsent: true } : { ifModRevision: modRevision };
      const result = (await this.options.route(this.options.partitionOfKey(key), { kind: 'put', request: { key, value: encodeState(next), ...condition } }, this.context())) as KvResult & {
        response: api.PutResponse;
      };
      if (result.response.applied) {
        this.follow(next);
        return next;
      }
    }
    throw refusedMember('conflict', 'the rebalancer\'s record kept changing under this request; try again');
  }

  /** Starts the assigned moves of partitions this node leads (one run per partition at a time). */
  private runAssigned(): void {
    const { driver, moves, clock, logger } = this.options;
    for (const move of this.state.moves) {
      if (this.running.has(move.partition) || driver.groups.get(move.partition)?.raw.role !== 'leader') continue;
      this.running.add(move.partition);
      const request = { partition: move.partition, fromNode: move.from, toNode: move.to };
      logger.info(request, 'rebalancer: running an assigned replica move');
      moves
        .move(request, { deadlineMs: clock.wallMs() + MOVE_CALL_MS, tenant: systemTenant })
        .catch((error: unknown) => logger.debug({ err: error, ...request }, 'rebalancer: an assigned move stopped here; its leader repeats it'))
        .finally(() => this.running.delete(move.partition));
    }
  }

  private shouldPlan(): boolean {
    const { membership, partitions, clock } = this.options;
    if (this.state.moves.length > 0 || this.dirty || membership.current().version !== this.plannedTableVersion || this.state.version !== this.plannedStateVersion) return true;
    return (!this.state.paused && this.state.leaders.length !== partitions) || clock.monotonicMs() - this.lastPlanMs >= IDLE_PLAN_MS;
  }

  private async plan(): Promise<void> {
    const { replicationFactor, clock, logger, membership } = this.options;
    const table = membership.current();
    this.lastPlanMs = clock.monotonicMs();
    this.plannedTableVersion = table.version;
    this.plannedStateVersion = this.state.version;
    this.dirty = true;
    const view = await this.view();
    if (view === undefined) return;
    const members = table.members.filter((member) => member.state !== 'removed').map((member) => ({ id: member.id, state: member.state, zone: member.zone }));
    const round = (current: RebalanceState): RebalanceState =>
      nextRound({
        state: current,
        view,
        members,
        replicationFactor,
        nowMs: clock.wallMs(),
        maxInFlight: this.options.maxInFlight ?? REBALANCE_DEFAULTS.maxInFlight,
        pauseMs: this.options.pauseMs ?? REBALANCE_DEFAULTS.pauseMs,
        moveTimeoutMs: MOVE_TIMEOUT_MS,
      });
    // Decided on the applied copy first: an idle round writes (and routes) nothing.
    if (round(this.state) === this.state) {
      // Still dirty while a new move may only wait for the pause between moves.
      this.dirty = clock.wallMs() - this.state.lastStartMs < (this.options.pauseMs ?? REBALANCE_DEFAULTS.pauseMs);
      return;
    }
    const before = this.state.moves.length;
    const state = await this.write(round);
    if (state.moves.length > before) logger.info({ moves: state.moves }, 'rebalancer: assigned a replica move');
    this.runAssigned();
  }

  /**
   * Every partition's configuration from its leader (first hand: this node's own led groups, and
   * each reachable member's ClusterInfo for the partitions it leads), with the request rates every
   * node reported summed; undefined unless every partition's leader answered (no plan on a partial
   * view). Bounded: one ClusterInfo call per member per plan.
   */
  private async view(): Promise<PartitionView[] | undefined> {
    return (await this.survey()).view;
  }

  /**
   * Every partition's leader's configuration (the view; undefined unless every partition's leader
   * answered), and each reachable node's own replicas' configurations as it applied them (`hosted`:
   * partition -> node -> voters), which may lag the leader's.
   */
  private async survey(): Promise<{ view: PartitionView[] | undefined; hosted: Map<number, Map<number, readonly number[]>> }> {
    const { driver, id, partitions, load, clock, membership } = this.options;
    const hosted = new Map<number, Map<number, readonly number[]>>();
    const host = (partition: number, node: number, voters: readonly number[]): void => {
      let nodes = hosted.get(partition);
      if (nodes === undefined) hosted.set(partition, (nodes = new Map()));
      nodes.set(node, voters);
    };
    const now = clock.monotonicMs();
    const found = new Map<number, PartitionView & { term: number }>();
    const rates = new Map<number, number>();
    // Every partition anyone knows: the founding ids, the groups here, and every one a member lists
    // (split partitions among them). Counting found leaders against the founding count alone let a
    // view with a split partition in it miss a founding one (its leader down): the planner then
    // dropped that partition's assigned move halfway, and its learner stayed for good (seed 789).
    const listed = new Set<number>(Array.from({ length: partitions }, (_, partition) => partition));
    for (const [partition, replica] of driver.groups) {
      listed.add(partition);
      rates.set(partition, (rates.get(partition) ?? 0) + load.rateOf(partition, now));
      host(partition, id, replica.raw.voterList());
      if (replica.raw.role !== 'leader') continue;
      const status = replica.raw.status();
      found.set(partition, { id: partition, voters: [...status.confState.voters], learners: [...status.confState.learners], leader: id, load: 0, term: status.term });
    }
    for (const member of membership.current().members) {
      if (member.id === id || member.state === 'removed' || !driver.transport.isReachable(member.id)) continue;
      const info = await driver.transport.clusterInfo(member.id, clock.wallMs() + CALL_TIMEOUT_MS).catch(() => undefined);
      for (const partition of info?.partitions ?? []) {
        listed.add(partition.id);
        // A hosted replica reports its own configuration, and a term (0 for one it does not host).
        if (partition.term > 0) host(partition.id, member.id, partition.replicas);
        if (partition.replicas.includes(member.id)) rates.set(partition.id, (rates.get(partition.id) ?? 0) + (partition.requestsPerSecond ?? 0));
        if (partition.leader !== member.id) continue;
        const known = found.get(partition.id);
        if (known !== undefined && known.term >= partition.term) continue;
        found.set(partition.id, { id: partition.id, voters: [...partition.replicas], learners: [], leader: member.id, load: 0, term: partition.term });
      }
    }
    for (const partition of listed) if (!found.has(partition)) return { view: undefined, hosted };
    return { view: [...found.values()].sort((a, b) => a.id - b.id).map(({ term: _term, ...partition }) => ({ ...partition, load: rates.get(partition.id) ?? 0 })), hosted };
  }

  /**
   * The partitions whose configuration names `node` (a voter anywhere, or a learner of a group this
   * node leads: ClusterInfo lists voters only), from every partition's leader; undefined unless
   * every partition's leader answered. ChangeMember(remove) refuses while any does.
   */
  async partitionsNaming(node: number): Promise<number[] | undefined> {
    // Invariant: also named while a current voter (per the leader) that answered has not applied
    // the configuration without it yet. Such a voter, restarted after the leader is lost, would
    // count the removed node in its quorum (fault suite seed 202: a move's followers had not
    // learned its commit when the moved-off node was removed and the leader's disk was lost).
    // Followers apply a move a moment after its leader, so when only they lag, the answer waits
    // for them (up to LAGGING_VOTERS_WAIT_MS) instead of refusing a remove that follows a move.
    const waitUntil = this.options.clock.monotonicMs() + LAGGING_VOTERS_WAIT_MS;
    for (;;) {
      const { view, hosted } = await this.survey();
      if (view === undefined) return undefined;
      const byLeader = view.filter((partition) => partition.voters.includes(node) || partition.learners.includes(node)).map((partition) => partition.id);
      const lagging = view.filter((partition) => partition.voters.some((voter) => hosted.get(partition.id)?.get(voter)?.includes(node) === true)).map((partition) => partition.id);
      if (byLeader.length > 0 || lagging.length === 0 || this.options.clock.monotonicMs() >= waitUntil) return [...new Set([...byLeader, ...lagging])].sort((a, b) => a - b);
      await new Promise<void>((resolve) => this.options.timers.after(LAGGING_VOTERS_POLL_MS, resolve));
    }
  }

  private context(): api.CallContext {
    return { deadlineMs: this.options.clock.wallMs() + CALL_TIMEOUT_MS, tenant: systemTenant };
  }
}
