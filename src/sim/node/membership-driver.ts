/**
 * Runs a seed's membership changes (scenario.ts, MembershipPlan) against the simulated cluster
 * while the fault schedule runs, as an operator with `atoll cluster` would: Cluster.ChangeMember
 * (add, leave, activate, remove) and Cluster.MoveReplica one move at a time, along placement.ts's
 * plan (planMoves). Every call is retried, bounded, since crashes, partitions and drops hit them;
 * moves are resumable, so a retry goes on from wherever the partition's configuration is.
 *
 * It also checks membership itself once the faults stopped (checkMembership):
 * - rf-replicas-on-distinct-members: every partition's applied configuration has exactly RF
 *   voters, on distinct current members, no learner left over, and each voter holds the replica;
 * - no-stray-replica: no member outside a partition's voters still holds a replica of it (the
 *   source of a move deletes its copy);
 * - removed-member-holds-no-replica: a removed node (still running until it is checked) keeps no
 *   replica, so it cannot serve any partition's state;
 * - changes-finish: the plan's changes all finished within their bound once faults stopped.
 * The partitions checked are the initial ones and every one a split made (a split plan calls
 * Cluster.SplitPartition at the source's leader; split-checker.ts checks the key ranges).
 *
 * The partitions' configurations are read from the replicas themselves, between loop iterations
 * (the simulator's view from above), not from ClusterInfo: the checker must not trust what it checks.
 */
import type { JoinedCluster } from '../../node/node-config.js';
import { planMoves, type PlanMember } from '../../keys/placement.js';
import { memberStates, type MemberState } from '../../node/cluster/membership-table.js';
import type { Rng } from '../../raft/rng.js';
import type * as api from '../../api/node-api.js';
import type { CheckFailure } from './node-checkers.js';
import type { MembershipPlan } from './scenario.js';
import { simAddress, type SimCluster } from './sim-cluster.js';
import type { Scheduler } from './scheduler.js';
import type { Trace } from './trace.js';
import type { Workload } from './workload.js';

const RF = 3;
/** One MoveReplica call's timeout (a move copies a partition; the simulated ones are small). */
const MOVE_CALL_MS = 8_000;
/** Attempts of one step (a member change or one move) before the driver gives the step up. */
const MAX_ATTEMPTS = 60;
/** Moves one rebalance makes at most (3 nodes x 4 partitions x RF is far below it). */
const MAX_REBALANCE_MOVES = 40;
/** How long a rebalance run after a refused remove may take (sim time). */
const REMOVE_REBALANCE_MS = 30_000;
/** How long the membership checker waits for the configurations to settle once faults stopped. */
const SETTLE_MS = 15_000;

/** One replica's view of its partition, read between its node's loop iterations. */
interface ReplicaView {
  readonly node: number;
  readonly partition: number;
  readonly role: string;
  readonly term: number;
  readonly applied: number;
  readonly voters: readonly number[];
  readonly learners: readonly number[];
  /** The hash range the replica's store owns (replicated state: a split entry changes it). */
  readonly range: { readonly start: number; readonly end: number } | undefined;
}

/** A partition as the replica that applied the most sees it, and its leader (highest term) if any. */
interface PartitionView {
  readonly voters: readonly number[];
  readonly learners: readonly number[];
  readonly leader: number | undefined;
  readonly holders: readonly number[];
  readonly range: { readonly start: number; readonly end: number } | undefined;
}

export class MembershipDriver {
  /** Member states as this driver changed them (the table's, once each change succeeded). */
  private readonly states = new Map<number, string>();
  /** Nodes removed from the table but still running: checked to hold no replica, then stopped. */
  private readonly removedRunning = new Set<number>();
  readonly failures: CheckFailure[] = [];
  /** Set when every change of the plan finished. */
  finished = false;
  moves = 0;
  /** Partitions the plan's splits made (their ids: the first hash of each new range), in order. */
  readonly splitsMade: number[] = [];
  /** Merges the plan made (each took a partition out of splitsMade). */
  private mergesMade = 0;
  /** The id a joining node gets: one above every node that ever ran (4 in a 3-node seed). */
  private readonly newNode: number;

  constructor(
    private readonly plan: MembershipPlan,
    private readonly partitions: number,
    private readonly cluster: SimCluster,
    private readonly workload: Workload,
    private readonly scheduler: Scheduler,
    private readonly trace: Trace,
    private readonly rng: Rng,
  ) {
    for (const id of cluster.nodeIds) this.states.set(id, 'active');
    this.newNode = Math.max(...cluster.everyNodeId) + 1;
  }

  /** Runs the plan; resolves when it finished or gave up (never rejects). Bounded by `untilMs` of virtual time. */
  async run(untilMs: number): Promise<void> {
    const plan = this.plan;
    if (plan.kind === 'none') {
      this.finished = true;
      return;
    }
    await this.workload.sleep(plan.atMs);
    try {
      switch (plan.kind) {
        case 'moves':
          for (let i = 0; i < plan.count && this.scheduler.now < untilMs; i++) {
            await this.randomMove(untilMs);
            await this.workload.sleep(200 + this.rng.int(800));
          }
          break;
        case 'grow-shrink':
          await this.addNode(untilMs);
          await this.workload.sleep(500 + this.rng.int(1_500));
          await this.removeNode(plan.leaver, untilMs);
          break;
        case 'replace':
          // The victim's disk is gone: its process stops for good, then node 4 takes its replicas.
          this.cluster.retire(plan.victim, 'disk lost');
          await this.memberChange({ action: 'add', id: this.newNode, address: simAddress(this.newNode) }, (info) => info.nodes.some((n) => n.id === this.newNode));
          this.states.set(this.newNode, 'joining');
          await this.startJoiner(untilMs);
          await this.memberChange({ action: 'leave', id: plan.victim }, (info) => info.nodes.some((n) => n.id === plan.victim && n.state === 'leaving'));
          this.states.set(plan.victim, 'leaving');
          await this.rebalance(untilMs);
          await this.memberChange({ action: 'activate', id: this.newNode }, (info) => info.nodes.some((n) => n.id === this.newNode && n.state === 'active'));
          this.states.set(this.newNode, 'active');
          await this.memberChange({ action: 'remove', id: plan.victim }, (info) => !info.nodes.some((n) => n.id === plan.victim));
          this.states.delete(plan.victim);
          break;
        case 'split': {
          let partition = plan.partition;
          let source = partition;
          for (let i = 0; i < plan.count && this.scheduler.now < untilMs; i++) {
            source = partition;
            partition = await this.split(partition, untilMs);
            await this.workload.sleep(500 + this.rng.int(1_500));
          }
          if (plan.mergeBack === true && this.scheduler.now < untilMs) await this.merge(source, partition, untilMs);
          break;
        }
      }
      this.finished = this.scheduler.now < untilMs;
    } catch (error) {
      this.trace.add(`MEMBERSHIP gave up: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.trace.add(`MEMBERSHIP ${this.finished ? 'finished' : 'did not finish'}: ${this.moves} moves, ${this.splitsMade.length + this.mergesMade} splits, ${this.mergesMade} merges`);
  }

  private async addNode(untilMs: number): Promise<void> {
    await this.memberChange({ action: 'add', id: this.newNode, address: simAddress(this.newNode) }, (info) => info.nodes.some((n) => n.id === this.newNode));
    this.states.set(this.newNode, 'joining');
    await this.startJoiner(untilMs);
    await this.rebalance(untilMs);
    await this.memberChange({ action: 'activate', id: this.newNode }, (info) => info.nodes.some((n) => n.id === this.newNode && n.state === 'active'));
    this.states.set(this.newNode, 'active');
  }

  private async removeNode(id: number, untilMs: number): Promise<void> {
    await this.memberChange({ action: 'leave', id }, (info) => info.nodes.some((n) => n.id === id && n.state === 'leaving'));
    this.states.set(id, 'leaving');
    await this.rebalance(untilMs);
    await this.memberChange({ action: 'remove', id }, (info) => !info.nodes.some((n) => n.id === id));
    this.states.delete(id);
    this.removedRunning.add(id);
    this.cluster.leaveMembers(id);
  }

  /** Starts the new node empty with what --join learns from a member's ClusterInfo. */
  private async startJoiner(untilMs: number): Promise<void> {
    let joined: JoinedCluster | undefined;
    for (let attempt = 0; joined === undefined && attempt < MAX_ATTEMPTS && this.scheduler.now < untilMs; attempt++) {
      const node = this.rng.pick(this.cluster.nodeIds);
      const info = await this.workload.call(node, (node, context) => node.clusterInfo(context));
      if (info.ok && info.value.nodes.some((n) => n.id === this.newNode)) joined = joinedFrom(info.value, this.newNode);
      else await this.workload.sleep(300);
    }
    if (joined === undefined) throw new Error(`node ${this.newNode} could not learn the cluster to join`);
    this.cluster.addNode(this.newNode, joined);
  }

  /**
   * One member-table change through any member, retried until it answered, or until a member's
   * ClusterInfo shows it done (an answer lost in the network: the repeat is refused as a duplicate).
   */
  private async memberChange(request: api.ChangeMemberRequest, done: (info: api.ClusterInfoResponse) => boolean): Promise<void> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const node = this.rng.pick(this.cluster.nodeIds);
      const answer = await this.workload.call(node, (node, context) => node.changeMember(request, context));
      if (answer.ok) {
        this.trace.add(`MEMBERSHIP ${request.action} node ${request.id}: table version ${answer.value.version}`);
        return;
      }
      // A remove refused while a configuration still names the node (a move onto it landed after
      // the moves off it, membership-admin.ts) or while a leader did not answer: move again first.
      if (request.action === 'remove' && answer.error.startsWith('MEMBERSHIP_REFUSED: cannot remove node')) {
        this.trace.add(`MEMBERSHIP remove node ${request.id} refused (${answer.error}); moving again`);
        await this.rebalance(this.scheduler.now + REMOVE_REBALANCE_MS);
      }
      // Each member follows the table within a second or so: ask one whether it already changed.
      await this.workload.sleep(400);
      const info = await this.workload.call(node, (node, context) => node.clusterInfo(context));
      if (info.ok && done(info.value)) {
        this.trace.add(`MEMBERSHIP ${request.action} node ${request.id}: done (${answer.error})`);
        return;
      }
    }
    throw new Error(`${request.action} node ${request.id} did not succeed in ${MAX_ATTEMPTS} attempts`);
  }

  /** Moves replicas along planMoves until the plan is empty, re-planning from the replicas after every move. */
  private async rebalance(untilMs: number): Promise<void> {
    for (let round = 0; round < MAX_REBALANCE_MOVES && this.scheduler.now < untilMs; round++) {
      const views = await this.partitionViews();
      if (views.size < this.partitions) {
        await this.workload.sleep(300);
        continue;
      }
      const plan = planMoves([...views].map(([id, view]) => ({ id, replicas: view.voters })), [...this.states].map(([id, state]) => ({ id, state } satisfies PlanMember)));
      const next = plan[0];
      if (next === undefined) return;
      await this.move(next.partition, next.from, next.to, untilMs);
    }
    throw new Error('the rebalance did not end within its bound');
  }

  private async randomMove(untilMs: number): Promise<void> {
    const views = await this.partitionViews();
    const known = [...views].filter(([, view]) => view.voters.length === RF && view.learners.length === 0);
    if (known.length === 0) return;
    const [partition, view] = this.rng.pick(known);
    const from = this.rng.pick(view.voters);
    const candidates = this.cluster.nodeIds.filter((id) => !view.voters.includes(id));
    if (candidates.length === 0) return;
    const to = this.rng.pick(candidates);
    await this.move(partition, from, to, untilMs);
  }

  /** One move, at the partition's leader, repeated until the configuration shows it done (bounded). */
  private async move(partition: number, from: number, to: number, untilMs: number): Promise<void> {
    this.trace.add(`MEMBERSHIP move partition ${partition}: ${from} -> ${to}`);
    for (let attempt = 0; attempt < MAX_ATTEMPTS && this.scheduler.now < untilMs; attempt++) {
      const view = (await this.partitionViews()).get(partition);
      if (view !== undefined && view.voters.includes(to) && !view.voters.includes(from) && !view.learners.includes(from)) {
        this.moves++;
        this.trace.add(`MEMBERSHIP moved partition ${partition}: voters ${view.voters.join(',')}`);
        return;
      }
      // The nodes' rebalancer may finish a half-done move its own way (after a leader change it
      // sees the target already a voter and removes the replica its plan names): the target holds
      // a replica and the partition is back at RF voters, so this move's purpose is met and the
      // move as asked (which would now go below RF) is refused for good.
      if (view !== undefined && view.voters.includes(to) && view.voters.length === RF && view.learners.length === 0 && attempt > 0) {
        this.moves++;
        this.trace.add(`MEMBERSHIP moved partition ${partition} another way (the rebalancer removed another replica): voters ${view.voters.join(',')}`);
        return;
      }
      // Or the rebalancer moved the source's replica elsewhere first (a random move drawn while its
      // own move of that replica ran): the source holds none and the target none, at RF voters, so
      // the move as asked is refused for good ('not-replica'); an operator's `atoll cluster move`
      // would be refused the same way and plan again.
      if (view !== undefined && !view.voters.includes(from) && !view.learners.includes(from) && !view.voters.includes(to) && view.voters.length === RF && view.learners.length === 0) {
        this.trace.add(`MEMBERSHIP move of partition ${partition} overtaken (the rebalancer moved node ${from}'s replica first): voters ${view.voters.join(',')}`);
        return;
      }
      const leader = view?.leader ?? this.rng.pick(this.cluster.nodeIds);
      const answer = await this.workload.call(leader, (node, context) => node.moveReplica({ partition, fromNode: from, toNode: to }, context), MOVE_CALL_MS);
      if (!answer.ok) await this.workload.sleep(300);
    }
    throw new Error(`moving partition ${partition} from ${from} to ${to} did not finish`);
  }

  /**
   * Splits `partition` at its leader, retried through faults (bounded). A split is not idempotent
   * (a repeat would split the source again), so before every attempt the source's range is read
   * from its replicas: a range that ends below where it ended before the first attempt means a
   * split applied (its answer was lost), and its new partition starts at that end. Returns the
   * new partition's id.
   */
  private async split(partition: number, untilMs: number): Promise<number> {
    let before: { readonly start: number; readonly end: number } | undefined;
    for (let attempt = 0; attempt < MAX_ATTEMPTS * 2 && this.scheduler.now < untilMs; attempt++) {
      const view = (await this.partitionViews()).get(partition);
      if (before === undefined) {
        before = view?.range;
        if (before !== undefined) this.trace.add(`MEMBERSHIP split partition ${partition}: range [${before.start}, ${before.end})`);
      } else if (view?.range !== undefined && view.range.end < before.end) {
        const made = view.range.end;
        this.splitsMade.push(made);
        this.trace.add(`MEMBERSHIP split partition ${partition}: done (found applied), new partition ${made}: [${view.range.start}, ${made}) and [${made}, ${before.end})`);
        return made;
      }
      if (before === undefined) {
        await this.workload.sleep(300);
        continue;
      }
      const leader = view?.leader ?? this.rng.pick(this.cluster.nodeIds);
      const answer = await this.workload.call(leader, (node, context) => node.splitPartition({ partition }, context), MOVE_CALL_MS);
      if (answer.ok) {
        this.splitsMade.push(answer.value.newPartition);
        this.trace.add(`MEMBERSHIP split partition ${partition}: new partition ${answer.value.newPartition}: [${answer.value.start}, ${answer.value.mid}) and [${answer.value.mid}, ${answer.value.end})`);
        return answer.value.newPartition;
      }
      this.trace.add(`MEMBERSHIP split partition ${partition} at node ${leader}: ${answer.error.slice(0, 160)}`);
      // A lost answer: the entry may still commit; give it time before reading the range again.
      await this.workload.sleep(500);
    }
    throw new Error(`splitting partition ${partition} did not succeed`);
  }

  /**
   * Merges `right` (the partition the last split made) back into `left`, its source, at `left`'s
   * leader, retried through faults (bounded). A merge is not idempotent (a repeat would merge the
   * next neighbour), so before every attempt `left`'s range is read from its replicas: once it
   * covers `right`'s start the merge applied. On 'leaders-differ' the right side's leadership is
   * moved to the left side's leader first, as the CLI does.
   */
  private async merge(left: number, right: number, untilMs: number): Promise<void> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS * 2 && this.scheduler.now < untilMs; attempt++) {
      const views = await this.partitionViews();
      const leftView = views.get(left);
      if (leftView?.range !== undefined && leftView.range.end > right) {
        if (this.splitsMade.includes(right)) this.splitsMade.splice(this.splitsMade.indexOf(right), 1);
        this.mergesMade++;
        this.trace.add(`MEMBERSHIP merge of partition ${right} into ${left}: done, ${left} owns [${leftView.range.start}, ${leftView.range.end})`);
        return;
      }
      const leader = leftView?.leader;
      if (leader === undefined) {
        await this.workload.sleep(300);
        continue;
      }
      const answer = await this.workload.call(leader, (node, context) => node.mergePartition({ partition: left }, context), MOVE_CALL_MS);
      if (answer.ok) continue;
      this.trace.add(`MEMBERSHIP merge of partition ${right} into ${left} at node ${leader}: ${answer.error.slice(0, 160)}`);
      // 'replicas-differ' (the nodes' rebalancer moved a replica of one side between the split and
      // the merge): move R's replicas onto L's nodes first, as an operator would (docs/api.md).
      const rightView = views.get(right);
      if (/are on different nodes|has no replica on this node/.test(answer.error) && rightView !== undefined && rightView.learners.length === 0 && leftView !== undefined && leftView.learners.length === 0) {
        const from = rightView.voters.find((id) => !leftView.voters.includes(id));
        const to = leftView.voters.find((id) => !rightView.voters.includes(id));
        if (from !== undefined && to !== undefined) {
          await this.move(right, from, to, untilMs);
          continue;
        }
      }
      const rightLeader = views.get(right)?.leader;
      // The answer carries no details here, only its message: the leaders-differ refusal asks for
      // R's leadership, as `atoll cluster merge` reads it. (Any refusal moved it: while a move
      // took R's replica off L's leader, which needs R's leadership elsewhere, that undid the
      // move's step at every retry; seed 71035.)
      if (answer.error.startsWith('MERGE_REFUSED') && answer.error.includes('transfer its leadership here') && rightLeader !== undefined && rightLeader !== leader) {
        await this.workload.call(rightLeader, (node, context) => node.transferLeader({ partition: right, targetNode: leader }, context), MOVE_CALL_MS);
      }
      await this.workload.sleep(500);
    }
    throw new Error(`merging partition ${right} into ${left} did not succeed`);
  }

  /** Every live node's replicas, read between loop iterations; a node that does not answer within 2 s is left out. */
  private async replicaViews(nodes: readonly number[]): Promise<ReplicaView[]> {
    const views: ReplicaView[] = [];
    for (const id of nodes) {
      const node = this.cluster.apiOf(id);
      if (node === undefined) continue;
      const read = node.betweenIterations((groups) =>
        [...groups].map(([partition, replica]) => {
          const status = replica.raw.status();
          return { node: id, partition, role: status.role, term: status.term, applied: status.applied, voters: [...status.confState.voters].sort((a, b) => a - b), learners: [...status.confState.learners].sort((a, b) => a - b), range: replica.mvcc.hashRange };
        }),
      );
      const taken = await Promise.race([read, this.workload.sleep(2_000).then(() => undefined)]);
      if (taken !== undefined) views.push(...taken);
    }
    return views;
  }

  private async partitionViews(): Promise<Map<number, PartitionView>> {
    const byPartition = new Map<number, ReplicaView[]>();
    for (const view of await this.replicaViews(this.cluster.nodeIds)) byPartition.set(view.partition, [...(byPartition.get(view.partition) ?? []), view]);
    const result = new Map<number, PartitionView>();
    for (const [partition, replicas] of byPartition) {
      // An empty replica waiting for its first snapshot knows no configuration yet.
      const configured = replicas.filter((r) => r.voters.length > 0);
      if (configured.length === 0) continue;
      const newest = configured.reduce((a, b) => (b.applied > a.applied ? b : a));
      const leaders = replicas.filter((r) => r.role === 'leader');
      const leader = leaders.length === 0 ? undefined : leaders.reduce((a, b) => (b.term > a.term ? b : a)).node;
      result.set(partition, { voters: newest.voters, learners: newest.learners, leader, holders: replicas.map((r) => r.node), range: newest.range });
    }
    return result;
  }

  /**
   * The membership invariants (the file comment), once faults stopped and every node restarted:
   * polled until they hold or SETTLE_MS passed; then removed nodes are stopped for good.
   */
  async check(): Promise<CheckFailure[]> {
    // Every seed, a plan or none: the nodes' rebalancer moves replicas on its own (5-node seeds),
    // and a move it leaves halfway (seed 789: a learner kept for good) is a membership failure too.
    const failures: CheckFailure[] = [];
    if (!this.finished) failures.push({ checker: 'membership', invariant: 'changes-finish', message: `the membership changes (${this.plan.kind}) did not finish; see the trace's MEMBERSHIP lines` });
    const giveUpAt = this.scheduler.now + SETTLE_MS;
    let problems: CheckFailure[] = [];
    for (let round = 0; round < 100; round++) {
      problems = await this.problems();
      if (problems.length === 0 || this.scheduler.now >= giveUpAt) break;
      await this.workload.sleep(500);
    }
    failures.push(...problems);
    for (const id of this.removedRunning) this.cluster.retire(id, 'removed from the cluster');
    this.removedRunning.clear();
    return failures;
  }

  private async problems(): Promise<CheckFailure[]> {
    const failures: CheckFailure[] = [];
    const members = new Set(this.cluster.nodeIds);
    const views = await this.replicaViews([...members, ...this.removedRunning]);
    // The initial partitions, every one this driver's splits made, and any other a replica holds.
    const known = new Set<number>([...Array.from({ length: this.partitions }, (_, i) => i), ...this.splitsMade, ...views.map((v) => v.partition)]);
    for (const partition of [...known].sort((a, b) => a - b)) {
      const replicas = views.filter((v) => v.partition === partition && members.has(v.node));
      const configured = replicas.filter((r) => r.voters.length > 0);
      if (configured.length === 0) {
        failures.push({ checker: 'membership', invariant: 'rf-replicas-on-distinct-members', message: `partition ${partition}: no member holds a configured replica` });
        continue;
      }
      const { voters, learners } = configured.reduce((a, b) => (b.applied > a.applied ? b : a));
      const holders = new Set(replicas.map((r) => r.node));
      // A voter holds the replica once it has state: an empty one (waiting for its first snapshot,
      // e.g. opened for a skipped split, split-heal.ts) does not count.
      const filled = new Set(configured.map((r) => r.node));
      // Invariant: RF voters, distinct, all current members, each holding the replica; no learner left.
      const wrong = voters.length !== RF || new Set(voters).size !== voters.length || voters.some((v) => !members.has(v) || !filled.has(v)) || learners.length > 0;
      if (wrong) {
        failures.push({ checker: 'membership', invariant: 'rf-replicas-on-distinct-members', message: `partition ${partition}: voters ${voters.join(',')} learners ${learners.join(',') || '-'}, held on ${[...filled].join(',')} (empty on ${[...holders].filter((n) => !filled.has(n)).join(',') || '-'}), members ${[...members].join(',')}` });
      }
      // Invariant: a member outside the voters holds no copy (a move's source deleted its own).
      const strays = [...holders].filter((node) => !voters.includes(node) && !learners.includes(node));
      if (!wrong && strays.length > 0) failures.push({ checker: 'membership', invariant: 'no-stray-replica', message: `partition ${partition}: nodes ${strays.join(',')} still hold a replica; voters ${voters.join(',')}` });
    }
    for (const removed of this.removedRunning) {
      const kept = views.filter((v) => v.node === removed).map((v) => v.partition);
      if (kept.length > 0) failures.push({ checker: 'membership', invariant: 'removed-member-holds-no-replica', message: `node ${removed} was removed but still holds replicas of partitions ${kept.join(',')}` });
    }
    return failures;
  }
}

/**
 * What --join records from a member's ClusterInfo (src/peer/join.ts does the same for a real node;
 * the simulator may not import it, it reaches gRPC): the cluster, the other members, and the node
 * itself as joining.
 */
function joinedFrom(info: api.ClusterInfoResponse, self: number): JoinedCluster {
  const stateOf = (state: string | undefined): MemberState => ((memberStates as readonly string[]).includes(state ?? '') ? (state as MemberState) : 'active');
  const members = info.nodes
    .filter((node) => node.id !== self)
    .map((node) => ({ id: node.id, clientAddress: node.address, peerAddress: node.peerAddress ?? '', state: stateOf(node.state), zone: node.zone ?? '' }));
  members.push({ id: self, clientAddress: simAddress(self), peerAddress: '', state: 'joining', zone: '' });
  members.sort((a, b) => a.id - b.id);
  return { clusterId: info.clusterId ?? '', hashFunction: info.hashFunction as JoinedCluster['hashFunction'], partitions: info.partitionCount, replicationFactor: info.replicationFactor, members, listedAs: 'joining' };
}
