/**
 * The membership nemesis (issue 19): while the fault nemesis kills leaders and partitions the
 * network, it changes the cluster's members the way an operator does with `atoll cluster`
 * (ChangeMember, and MoveReplica one move at a time along placement.ts's plan, src/cli/membership.ts
 * rebalance), on real processes:
 *
 *   1. grow: a new node starts empty with --join, is added, replicas move onto it, it is activated;
 *   2. moves: a few single-replica moves between the members, drawn from the seed;
 *   3. shrink: the new node leaves, its replicas move back, it is removed and stopped;
 *   4. replace: a founding node's data directory is wiped (its disk is lost); another new node
 *      joins empty, receives its replicas (each as a learner first), and the lost node is removed.
 *
 * Each step is retried through the faults (moves are resumable), bounded in attempts and time.
 * check() then asks every member for ClusterInfo: every partition has RF replicas on distinct
 * current members, every member is active, and no removed node is listed.
 */
import { performance } from 'node:perf_hooks';
import { AtollClient } from '../client/index.js';
import { rebalance } from '../cli/membership.js';
import { AtollError } from '../errors.js';
import { Rng } from '../raft/rng.js';
import type { LocalCluster } from './local-cluster.js';

type ChangeMemberRequest = Parameters<AtollClient['changeMember']>[0];

const RF = 3;
/** One MoveReplica's timeout: a partition's snapshot on a loaded machine. */
const MOVE_TIMEOUT_MS = 30_000;
/** Attempts of one step (a member change, a rebalance, a move) before the run gives it up. */
const MAX_ATTEMPTS = 20;

export interface MembershipNemesisOptions {
  readonly seed: number;
  readonly log: (line: string) => void;
  /** The changes run past the fault window at most this long (they finish on the healed cluster). */
  readonly overrunMs?: number;
}

export class MembershipNemesis {
  private readonly rng: Rng;
  /** What each step did, in order (the run's report). */
  readonly steps: string[] = [];
  /** Steps that did not finish within their bounds: each fails the run. */
  readonly problems: string[] = [];
  moves = 0;

  constructor(
    private readonly cluster: LocalCluster,
    private readonly options: MembershipNemesisOptions,
  ) {
    // Another stream than the fault nemesis's (which uses the seed itself).
    this.rng = new Rng(options.seed * 31 + 7);
  }

  /** A client of the members; `excluding`'s endpoint left out (see change()). */
  private client(excluding?: number): AtollClient {
    const skipped = excluding === undefined ? undefined : this.cluster.addresses.get(excluding);
    const endpoints = this.cluster.endpoints.filter((endpoint) => endpoint !== skipped);
    return new AtollClient({ endpoints: endpoints.length > 0 ? endpoints : this.cluster.endpoints, defaultTimeoutMs: 5_000 });
  }

  /** Runs the four steps once (each finishes once started); resolves when done, never rejects. */
  async run(untilMs: number): Promise<void> {
    this.cluster.freezeFoundingFlags();
    const hardStopMs = untilMs + (this.options.overrunMs ?? 60_000);
    const founding = [...this.cluster.addresses.keys()].sort((a, b) => a - b);
    const grown = Math.max(...founding) + 1;
    const replacement = grown + 1;
    try {
      await this.sleep(1_000 + this.rng.int(2_000));
      await this.grow(grown, hardStopMs);
      for (let i = 0, count = 1 + this.rng.int(3); i < count && performance.now() < untilMs; i++) await this.randomMove(hardStopMs);
      await this.shrink(grown, hardStopMs);
      await this.replace(this.rng.pick(founding), replacement, hardStopMs);
    } catch (error) {
      this.problems.push(`membership: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.say(`membership: ${this.problems.length === 0 ? 'every change finished' : 'gave up'}; ${this.moves} moves`);
  }

  private async grow(id: number, stopMs: number): Promise<void> {
    const { address, peerAddress } = await this.cluster.startJoiner(id);
    this.say(`membership: node ${id} started empty with --join at ${address}`);
    const added = await this.change({ action: 'add', id, address, peerAddress }, stopMs);
    await this.rebalance(added, stopMs);
    await this.change({ action: 'activate', id }, stopMs);
    this.say(`membership: node ${id} is active`);
  }

  private async shrink(id: number, stopMs: number): Promise<void> {
    const leaving = await this.change({ action: 'leave', id }, stopMs);
    await this.rebalance(leaving, stopMs);
    await this.change({ action: 'remove', id }, stopMs);
    await this.cluster.retire(id, false);
    this.say(`membership: node ${id} removed and stopped`);
  }

  private async replace(victim: number, id: number, stopMs: number): Promise<void> {
    await this.cluster.retire(victim, true);
    this.say(`membership: node ${victim}'s data directory wiped (its disk is lost)`);
    const { address, peerAddress } = await this.cluster.startJoiner(id);
    await this.change({ action: 'add', id, address, peerAddress }, stopMs);
    const leaving = await this.change({ action: 'leave', id: victim }, stopMs);
    await this.rebalance(leaving, stopMs);
    await this.change({ action: 'activate', id }, stopMs);
    await this.change({ action: 'remove', id: victim }, stopMs);
    this.say(`membership: node ${victim} replaced by node ${id}`);
  }

  /**
   * One member change, retried. A repeat of a change that did apply (its answer was lost) is
   * refused as a duplicate or as no change; ClusterInfo then shows whether it is in place.
   */
  private async change(request: ChangeMemberRequest, stopMs: number): Promise<number> {
    const client = this.client();
    // Whether the change is in place is read from the other members: a joiner answers ClusterInfo
    // from the table it joined with (itself 'joining', version 0) until it records the replicated
    // one, so asking it made a lost `add` look applied (seed 202: the leave that followed was
    // refused for good, 'add a node first').
    const others = this.client(request.id);
    try {
      for (let attempt = 0; attempt < MAX_ATTEMPTS && performance.now() < stopMs; attempt++) {
        try {
          const answer = await client.changeMember(request);
          this.say(`membership: ${request.action} node ${request.id}: member table version ${answer.version}`);
          return answer.version;
        } catch (error) {
          const answered = await others.clusterInfo().catch(() => undefined);
          const info = answered !== undefined && (answered.memberTableVersion ?? 0) > 0 ? answered : undefined;
          const node = info?.nodes.find((n) => n.id === request.id);
          const inPlace =
            request.action === 'add' ? node !== undefined : request.action === 'remove' ? node === undefined && info !== undefined : node?.state === (request.action === 'leave' ? 'leaving' : 'active');
          if (inPlace && info !== undefined) return info.memberTableVersion ?? 0;
          // A remove refused while a configuration still names the node (a move onto it landed
          // after the moves off it) or while a leader did not answer: move again, then ask again.
          const reason = error instanceof AtollError && error.code === 'MEMBERSHIP_REFUSED' ? String(error.details?.['reason']) : '';
          if (request.action === 'remove' && (reason === 'holds-replicas' || reason === 'view-incomplete')) await this.rebalance(0, stopMs);
          this.say(`membership: ${request.action} node ${request.id} failed (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); again`);
          await this.sleep(500);
        }
      }
    } finally {
      client.close();
      others.close();
    }
    throw new Error(`${request.action} node ${request.id} did not succeed`);
  }

  /** Moves replicas along the plan until it is empty (rebalance re-plans after every move), retried. */
  private async rebalance(minVersion: number, stopMs: number): Promise<void> {
    const client = this.client();
    try {
      for (let attempt = 0; attempt < MAX_ATTEMPTS && performance.now() < stopMs; attempt++) {
        try {
          const moves = await rebalance(client, (line) => this.say(`membership: ${line}`), MOVE_TIMEOUT_MS, minVersion);
          this.moves += moves.length;
          return;
        } catch (error) {
          this.say(`membership: rebalance interrupted (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); again`);
          await this.sleep(1_000);
        }
      }
    } finally {
      client.close();
    }
    throw new Error('the rebalance did not finish');
  }

  /** One replica of a random partition moves to a member without one (only when there is room). */
  private async randomMove(stopMs: number): Promise<void> {
    const client = this.client();
    try {
      const info = await client.clusterInfo();
      const members = info.nodes.filter((node) => node.state === 'active').map((node) => node.id);
      const partition = this.rng.pick(info.partitions);
      const targets = members.filter((id) => !partition.replicas.includes(id));
      if (targets.length === 0 || partition.replicas.length !== RF) return;
      const from = this.rng.pick(partition.replicas);
      const to = this.rng.pick(targets);
      for (let attempt = 0; attempt < MAX_ATTEMPTS && performance.now() < stopMs; attempt++) {
        try {
          const result = await client.moveReplica(partition.id, from, to, { timeoutMs: MOVE_TIMEOUT_MS });
          this.moves++;
          this.say(`membership: partition ${partition.id}: moved a replica from node ${from} to node ${to} (replicas ${result.voters.join(',')})`);
          return;
        } catch (error) {
          // Drawn from a stale view (ClusterInfo of a node that had not followed the last move), or
          // overtaken by the nodes' rebalancer: the move as drawn can never run; draw none instead.
          const reason = error instanceof AtollError && error.code === 'MOVE_REFUSED' ? String(error.details?.['reason']) : '';
          if (reason === 'already-replica' || reason === 'not-replica') {
            this.say(`membership: move of partition ${partition.id} ${from} -> ${to} refused for good (${reason}: a stale view or the rebalancer moved first); skipped`);
            return;
          }
          this.say(`membership: move of partition ${partition.id} ${from} -> ${to} failed (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); again`);
          await this.sleep(1_000);
        }
      }
      throw new Error(`moving partition ${partition.id} from ${from} to ${to} did not finish`);
    } finally {
      client.close();
    }
  }

  /**
   * After the run, on the healed cluster: every partition has RF replicas on distinct current
   * members, every member is active, and removed nodes are not listed (each node's own view,
   * polled until they agree or `timeoutMs` passed). Returns the problems found.
   */
  async check(timeoutMs = 30_000): Promise<string[]> {
    const members = [...this.cluster.addresses.keys()].sort((a, b) => a - b);
    const deadline = performance.now() + timeoutMs;
    let problems: string[] = [];
    while (performance.now() < deadline) {
      problems = [];
      for (const id of members) {
        try {
          const info = await this.cluster.clusterInfoOf(id, 2_000);
          const listed = info.nodes.map((node) => `${node.id}:${(node as { state?: string }).state ?? 'active'}`).join(',');
          const expected = members.map((member) => `${member}:active`).join(',');
          if (listed !== expected) problems.push(`node ${id} lists members ${listed}, expected ${expected}`);
          for (const partition of info.partitions) {
            const replicas = partition.replicas.map(Number);
            // Invariant: RF replicas, on distinct nodes, all current members.
            if (replicas.length !== RF || new Set(replicas).size !== RF || replicas.some((node) => !members.includes(node))) {
              problems.push(`node ${id}: partition ${partition.id} has replicas ${replicas.join(',')} (members ${members.join(',')})`);
            }
          }
        } catch (error) {
          problems.push(`node ${id}: ClusterInfo failed (${error instanceof Error ? error.message : String(error)})`);
        }
      }
      if (problems.length === 0) return [...this.problems];
      await this.sleep(500);
    }
    return [...this.problems, ...problems.slice(0, 5)];
  }

  private say(line: string): void {
    this.steps.push(line);
    this.options.log(line);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}
