/**
 * The nemesis: a fault schedule drawn from a seed, applied to real processes. One fault at a time,
 * each healed before the next, so at most a minority is down and the cluster should keep serving;
 * the checkers then decide whether it served correctly.
 */
import { performance } from 'node:perf_hooks';
import { bucketHash } from '../keys/bucket-hash.js';
import { partitionOf } from '../keys/partition-table.js';
import { Rng } from '../raft/rng.js';
import type { LocalCluster } from './local-cluster.js';
import type { Topology } from './netns.js';

export type FaultKind =
  | 'kill-leader'
  | 'kill-node'
  | 'kill-two'
  | 'pause-node'
  | 'restart-all'
  | 'isolate-leader'
  | 'split'
  | 'one-way-partition'
  | 'slow-link'
  | 'one-way-link'
  | 'blackhole-link'
  | 'reset-link';

/** Faults on one node-to-node link, through the TCP fault proxies (no root needed). */
export const LINK_FAULTS: readonly FaultKind[] = ['slow-link', 'one-way-link', 'blackhole-link', 'reset-link'];

/** Faults that need the nodes in network namespaces (root, iptables). */
export const NETWORK_FAULTS: readonly FaultKind[] = ['isolate-leader', 'split', 'one-way-partition'];

export interface NemesisOptions {
  readonly seed: number;
  readonly kinds: readonly FaultKind[];
  /** Pause between faults, ms (uniform in [min, max]). */
  readonly gapMs: readonly [number, number];
  /** How long a killed or paused node stays down, ms. */
  readonly downMs: readonly [number, number];
  readonly log: (line: string) => void;
  /** Present when nodes run in network namespaces: enables the network faults. */
  readonly topology?: Topology;
}

/** A partition's hash range [start, end), as ClusterInfo lists it. */
export interface HashRange {
  readonly start: number;
  readonly end: number;
}

export interface FaultRecord {
  readonly kind: FaultKind;
  readonly node: number;
  readonly partition?: number;
  readonly atMs: number;
  readonly healedAtMs?: number;
}

export class Nemesis {
  private readonly rng: Rng;
  readonly faults: FaultRecord[] = [];
  /**
   * Partition -> monotonic time its leader was killed, until a probe write succeeds there; with
   * the partition's hash range when the ClusterInfo that named the leader listed it (the probe
   * writes a key of that range: after splits, the equal table no longer says which keys it owns).
   */
  readonly leaderKills: Array<{ partition: number; atMs: number; recoveredAtMs?: number; range?: HashRange }> = [];
  /**
   * The partition ids faults draw from: the founding table's, and every split partition the split
   * nemesis reports (knownPartition). Without splits a draw is rng.int(partitions), as before.
   */
  private readonly partitionIds: number[];
  private stopped = false;
  private readonly paused = new Set<number>();

  constructor(
    private readonly cluster: LocalCluster,
    private readonly options: NemesisOptions,
  ) {
    this.rng = new Rng(options.seed);
    this.partitionIds = Array.from({ length: cluster.options.partitions }, (_, id) => id);
  }

  /** A partition that a split created (split-nemesis.ts): leader faults may hit it from now on. */
  knownPartition(id: number): void {
    if (!this.partitionIds.includes(id)) this.partitionIds.push(id);
  }

  /** A partition a merge folded away (split-nemesis.ts): leader faults no longer draw it. */
  forgetPartition(id: number): void {
    const at = this.partitionIds.indexOf(id);
    if (at >= 0 && this.partitionIds.length > 1) this.partitionIds.splice(at, 1);
  }

  /** Runs faults until stop() or the deadline, then heals everything. */
  async run(untilMs: number): Promise<void> {
    while (!this.stopped && performance.now() < untilMs) {
      await this.sleep(this.between(this.options.gapMs), untilMs);
      if (this.stopped || performance.now() >= untilMs) break;
      const kind = this.rng.pick(this.options.kinds);
      try {
        await this.inject(kind);
      } catch (error) {
        this.options.log(`nemesis: ${kind} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    await this.healAll();
  }

  stop(): void {
    this.stopped = true;
  }

  private async inject(kind: FaultKind): Promise<void> {
    const ids = [...this.cluster.addresses.keys()];
    const down = this.between(this.options.downMs);
    switch (kind) {
      case 'kill-leader': {
        const partition = this.rng.pick(this.partitionIds);
        const { leader, range } = await this.leaderOf(partition);
        if (!leader) return;
        const atMs = performance.now();
        await this.cluster.kill(leader);
        this.leaderKills.push({ partition, atMs, ...(range !== undefined && { range }) });
        this.record({ kind, node: leader, partition, atMs });
        await this.sleep(down);
        this.cluster.startNode(leader);
        this.healed(kind, leader);
        return;
      }
      case 'kill-node': {
        const node = this.rng.pick(ids);
        this.record({ kind, node, atMs: performance.now() });
        await this.cluster.kill(node);
        await this.sleep(down);
        this.cluster.startNode(node);
        this.healed(kind, node);
        return;
      }
      case 'kill-two': {
        // Two of five: still a majority left. With fewer nodes this would stop the cluster, so one.
        if (ids.length < 5) return this.inject('kill-node');
        const [a, b] = this.twoNodes(ids);
        this.record({ kind, node: a, atMs: performance.now() });
        this.options.log(`nemesis: kill-two nodes ${a} and ${b}`);
        await Promise.all([this.cluster.kill(a), this.cluster.kill(b)]);
        await this.sleep(down);
        this.cluster.startNode(a);
        this.cluster.startNode(b);
        this.healed(kind, a);
        return;
      }
      case 'pause-node': {
        const node = this.rng.pick(ids);
        const pid = this.cluster.pidOf(node);
        if (pid === undefined) return;
        this.record({ kind, node, atMs: performance.now() });
        process.kill(pid, 'SIGSTOP');
        this.paused.add(node);
        await this.sleep(down);
        process.kill(pid, 'SIGCONT');
        this.paused.delete(node);
        this.healed(kind, node);
        return;
      }
      case 'isolate-leader': {
        const topology = this.options.topology;
        if (!topology) return;
        const partition = this.rng.pick(this.partitionIds);
        const { leader, range } = await this.leaderOf(partition);
        if (!leader) return;
        const atMs = performance.now();
        await topology.isolate(leader);
        this.leaderKills.push({ partition, atMs, ...(range !== undefined && { range }) });
        this.record({ kind, node: leader, partition, atMs });
        await this.sleep(down);
        await topology.heal();
        this.healed(kind, leader);
        return;
      }
      case 'split': {
        const topology = this.options.topology;
        if (!topology) return;
        const shuffled = [...ids];
        for (let i = shuffled.length - 1; i > 0; i--) {
          const j = this.rng.int(i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j] as number, shuffled[i] as number];
        }
        const minority = shuffled.slice(0, Math.floor((ids.length - 1) / 2));
        const majority = shuffled.slice(minority.length);
        this.record({ kind, node: minority[0] ?? 0, atMs: performance.now() });
        this.options.log(`nemesis: split {${minority.join(',')}} | {${majority.join(',')}}`);
        await topology.partition([minority, majority]);
        await this.sleep(down);
        await topology.heal();
        this.healed(kind, 0);
        return;
      }
      case 'slow-link':
      case 'one-way-link':
      case 'blackhole-link':
      case 'reset-link': {
        const [a, b] = this.twoNodes(ids);
        const there = this.cluster.linkProxy(a, b);
        const back = this.cluster.linkProxy(b, a);
        if (!there || !back) return;
        this.record({ kind, node: a, atMs: performance.now() });
        this.options.log(`nemesis: ${kind} between nodes ${a} and ${b}`);
        if (kind === 'slow-link') {
          const ms = 50 + this.rng.int(250);
          there.setFault({ kind: 'delay', ms, jitterMs: ms / 2 });
          back.setFault({ kind: 'delay', ms, jitterMs: ms / 2 });
        } else if (kind === 'one-way-link') {
          // a's bytes to b stall on both connections; b's bytes to a still flow.
          there.setFault({ kind: 'drop', direction: 'forward' });
          back.setFault({ kind: 'drop', direction: 'backward' });
        } else if (kind === 'blackhole-link') {
          there.setFault({ kind: 'blackhole' });
          back.setFault({ kind: 'blackhole' });
        } else {
          there.setFault({ kind: 'reset' });
          back.setFault({ kind: 'reset' });
        }
        await this.sleep(down);
        there.clearFault();
        back.clearFault();
        this.healed(kind, a);
        return;
      }
      case 'one-way-partition': {
        const topology = this.options.topology;
        if (!topology) return;
        // The leader of a partition stops hearing one follower while that follower still hears it.
        const partition = this.rng.pick(this.partitionIds);
        const { leader } = await this.leaderOf(partition);
        if (!leader) return;
        const other = this.rng.pick(ids.filter((id) => id !== leader));
        const [from, to] = this.rng.chance(0.5) ? [other, leader] : [leader, other];
        this.record({ kind, node: from, partition, atMs: performance.now() });
        this.options.log(`nemesis: one-way partition: node ${from} -> node ${to} dropped`);
        await topology.dropOneWay(from, to);
        await this.sleep(down);
        await topology.heal();
        this.healed(kind, from);
        return;
      }
      case 'restart-all': {
        this.record({ kind, node: 0, atMs: performance.now() });
        await Promise.all(ids.map((id) => this.cluster.kill(id)));
        await this.sleep(Math.min(down, 1_000));
        for (const id of ids) this.cluster.startNode(id);
        this.healed(kind, 0);
        return;
      }
    }
  }

  private twoNodes(ids: readonly number[]): [number, number] {
    const a = this.rng.pick(ids);
    const others = ids.filter((id) => id !== a);
    return [a, this.rng.pick(others)];
  }

  /** The partition's leader (found by id in a running node's ClusterInfo: splits add ids), and its hash range. */
  private async leaderOf(partition: number): Promise<{ leader?: number; range?: HashRange }> {
    for (const id of this.cluster.addresses.keys()) {
      if (!this.cluster.isRunning(id) || this.paused.has(id)) continue;
      try {
        const info = await this.cluster.clusterInfoOf(id, 500);
        const listed = info.partitions.find((p) => Number(p.id) === partition);
        const leader = Number(listed?.leader ?? 0);
        const range = listed?.rangeEnd !== undefined ? { start: Number(listed.rangeStart ?? 0), end: Number(listed.rangeEnd) } : undefined;
        if (leader !== 0 && this.cluster.isRunning(leader)) return { leader, ...(range !== undefined && { range }) };
      } catch {
        // Ask the next node.
      }
    }
    return {};
  }

  /** Makes sure every node runs and none is paused (the end of a run, or after an error). */
  async healAll(): Promise<void> {
    await this.options.topology?.heal();
    for (const proxy of this.cluster.linkProxies.values()) proxy.clearFault();
    for (const id of this.paused) {
      const pid = this.cluster.pidOf(id);
      if (pid !== undefined) process.kill(pid, 'SIGCONT');
    }
    this.paused.clear();
    for (const id of this.cluster.addresses.keys()) if (!this.cluster.isRunning(id)) this.cluster.startNode(id);
  }

  /** A key whose bucket lives in `partition`, for probing when writes resume there. */
  static probeKeyFor(partition: number, partitionCount: number): string {
    for (let n = 0; n < 100_000; n++) {
      const bucket = `probe${n}`;
      if (partitionOf(`${bucket}/x`, partitionCount) === partition) return `${bucket}/x`;
    }
    throw new Error(`no probe bucket found for partition ${partition}`);
  }

  /** A key whose bucket hash lies in `range` (the cluster's default bucket hash), or undefined when a few thousand tries find none (a narrow range). */
  static probeKeyIn(range: HashRange): string | undefined {
    for (let n = 0; n < 20_000; n++) {
      const hash = bucketHash(`probe${n}`);
      if (hash >= range.start && hash < range.end) return `probe${n}/x`;
    }
    return undefined;
  }

  private record(fault: FaultRecord): void {
    this.faults.push(fault);
    this.options.log(`nemesis: ${fault.kind} node ${fault.node}${fault.partition !== undefined ? ` (leader of partition ${fault.partition})` : ''}`);
  }

  private healed(kind: FaultKind, node: number): void {
    const last = this.faults[this.faults.length - 1];
    if (last) this.faults[this.faults.length - 1] = { ...last, healedAtMs: performance.now() };
    this.options.log(`nemesis: healed ${kind} node ${node}`);
  }

  private between([min, max]: readonly [number, number]): number {
    return min + this.rng.int(Math.max(1, max - min + 1));
  }

  private sleep(ms: number, untilMs = Number.POSITIVE_INFINITY): Promise<void> {
    const wait = Math.max(0, Math.min(ms, untilMs - performance.now()));
    return new Promise((resolve) => setTimeout(resolve, wait));
  }
}
