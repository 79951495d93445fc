/**
 * Partition splits in the fault suite (issue 19): beside the membership nemesis (a node joins,
 * leaves, is replaced) and the fault nemesis (leader kills, pauses, network faults), this one
 * splits partitions the way an operator does, `atoll cluster split P` (the client's
 * splitPartition, which goes to P's leader): every few seconds it draws a partition from the
 * cluster's current table (ClusterInfo) and splits it.
 *
 * Refusals are expected and change nothing: `in-progress` (a replica move of P runs),
 * `single-bucket` (P's range cannot be cut), `leased-keys` (a lease holds a key that would move),
 * NOT_LEADER or UNAVAILABLE while the faults move leaders; each is logged and the next draw comes
 * later. A split that timed out may still have applied: the next draw reads the table again. The
 * run's workload and checkers work on keys, which the client routes by the table it refreshes, so
 * they need nothing of this file; what changes is the table (`partitions`), which the fault
 * nemesis draws from and the recovery probes route by (nemesis.ts, runner.ts).
 *
 * Merges (issue 32): after a split applied, the next draw merges it back half of the time
 * (`atoll cluster merge L`, with the CLI's leader alignment, mergeWithLeaderTransfer), if the
 * table still shows the two sides adjacent. Watches of the merged-away side end PARTITION_MOVED and
 * resume at the left side; transactions begun before it are refused their right-side keys. Refusals
 * (`leased-keys` while the lock workload's lease sits on the right side, `in-progress`,
 * `replicas-differ`) are expected and change nothing; the merge stays pending and is tried again at
 * the next draws (at most MERGE_TRIES times), and on `replicas-differ` (the nodes' rebalancer moved
 * a replica of one side) the nemesis first moves one of R's replicas onto a node of L's, as an
 * operator would (docs/api.md).
 *
 * Bounds: at most `maxSplits` splits per run, one call at a time, each with a deadline.
 */
import { performance } from 'node:perf_hooks';
import { AtollClient } from '../client/index.js';
import { AtollError } from '../errors.js';
import { Rng } from '../raft/rng.js';
import { mergeWithLeaderTransfer } from '../cli/cluster-merge.js';
import type { LocalCluster } from './local-cluster.js';

/** One split call's deadline (a commit on a quorum, under faults). */
const SPLIT_TIMEOUT_MS = 10_000;
/** The wait between two draws, ms: [min, max). */
const GAP_MS: readonly [number, number] = [3_000, 7_000];
export const SPLIT_NEMESIS_DEFAULTS = Object.freeze({ maxSplits: 6 });
/** Draws one pending merge is tried at, at most. */
const MERGE_TRIES = 6;

export interface SplitNemesisOptions {
  readonly seed: number;
  readonly log: (line: string) => void;
  /** Splits per run at most (default SPLIT_NEMESIS_DEFAULTS.maxSplits). */
  readonly maxSplits?: number;
  /** Told each new partition (the fault nemesis then draws it too). */
  readonly onSplit?: (newPartition: number) => void;
  /** Told each merged-away partition (the fault nemesis stops drawing it). */
  readonly onMerge?: (mergedPartition: number) => void;
}

/** One partition of the current table: its id and hash range [start, end). */
export interface TablePartition {
  readonly id: number;
  readonly start: number;
  readonly end: number;
}

export class SplitNemesis {
  private readonly rng: Rng;
  /** Splits that applied, in order (the run's report). */
  readonly splits: Array<{ partition: number; newPartition: number; mid: number; atMs: number }> = [];
  /** Merges that applied, in order (the run's report). */
  readonly merges: Array<{ partition: number; mergedPartition: number; atMs: number }> = [];
  /** Refusals and failures, by reason (the run's report). */
  readonly refusals: Record<string, number> = {};
  /** The last split, to merge back at the next draws (half of the splits), and the tries left. */
  private mergeNext: { partition: number; newPartition: number; tries: number } | undefined;

  constructor(
    private readonly cluster: LocalCluster,
    private readonly options: SplitNemesisOptions,
  ) {
    // A stream of its own: the fault nemesis uses the seed, the membership nemesis seed * 31 + 7.
    this.rng = new Rng(options.seed * 17 + 3);
  }

  /** Splits at random times until `untilMs` or `maxSplits`; resolves when done, never rejects. */
  async run(untilMs: number): Promise<void> {
    const maxSplits = this.options.maxSplits ?? SPLIT_NEMESIS_DEFAULTS.maxSplits;
    const client = new AtollClient({ endpoints: this.cluster.endpoints, defaultTimeoutMs: 5_000 });
    try {
      for (let draw = 0; draw < 1_000 && (this.splits.length < maxSplits || this.mergeNext !== undefined); draw++) {
        await this.sleep(GAP_MS[0] + this.rng.int(GAP_MS[1] - GAP_MS[0]));
        if (performance.now() >= untilMs) break;
        const merge = this.mergeNext;
        this.mergeNext = undefined;
        if (merge !== undefined) {
          if (!(await this.mergeOne(client, merge)) && merge.tries > 1) this.mergeNext = { ...merge, tries: merge.tries - 1 };
        } else {
          await this.splitOne(client);
        }
      }
    } finally {
      client.close();
    }
    const refused = Object.entries(this.refusals).map(([reason, count]) => `${reason} ${count}`).join(', ');
    this.options.log(`splits: ${this.splits.length} partition splits and ${this.merges.length} merges applied${refused !== '' ? `; refused or failed: ${refused}` : ''}`);
  }

  /** The cluster's table now, or undefined (counted as a 'cluster-info' failure) when no node answered. */
  private async tableOf(client: AtollClient): Promise<TablePartition[] | undefined> {
    try {
      return partitionTableOf(await client.clusterInfo({ timeoutMs: 2_000 }));
    } catch (error) {
      this.refused('cluster-info', error);
      return undefined;
    }
  }

  private async splitOne(client: AtollClient): Promise<void> {
    const table = await this.tableOf(client);
    if (table === undefined || table.length === 0) return;
    const partition = this.rng.pick(table).id;
    try {
      const result = await client.splitPartition(partition, { timeoutMs: SPLIT_TIMEOUT_MS });
      this.splits.push({ partition, newPartition: result.newPartition, mid: result.mid, atMs: performance.now() });
      this.options.onSplit?.(result.newPartition);
      this.options.log(`splits: partition ${partition} split at hash ${result.mid}: it keeps [${result.start}, ${result.mid}), new partition ${result.newPartition} owns [${result.mid}, ${result.end})`);
      if (this.rng.int(2) === 0) this.mergeNext = { partition, newPartition: result.newPartition, tries: MERGE_TRIES };
    } catch (error) {
      this.refused(error instanceof AtollError && error.code === 'SPLIT_REFUSED' ? String(error.details?.['reason']) : error instanceof AtollError ? error.code : 'error', error, partition);
    }
  }

  /**
   * Merges a split back when the table still shows its two sides adjacent. Returns whether it is
   * over: merged, or nothing left to merge (any other change of the table since); false when it
   * was refused or failed and may be tried again.
   */
  private async mergeOne(client: AtollClient, merge: { partition: number; newPartition: number }): Promise<boolean> {
    let info: Awaited<ReturnType<AtollClient['clusterInfo']>>;
    try {
      info = await client.clusterInfo({ timeoutMs: 2_000 });
    } catch (error) {
      this.refused('cluster-info', error);
      return false;
    }
    const table = partitionTableOf(info);
    const at = table.findIndex((partition) => partition.id === merge.partition);
    if (at < 0 || table[at + 1]?.id !== merge.newPartition) return true;
    try {
      const result = await mergeWithLeaderTransfer(client, merge.partition, SPLIT_TIMEOUT_MS, (line) => this.options.log(`merges: ${line}`));
      this.merges.push({ partition: result.partition, mergedPartition: result.mergedPartition, atMs: performance.now() });
      this.options.onMerge?.(result.mergedPartition);
      this.options.log(`merges: partition ${result.mergedPartition} merged into partition ${result.partition}, which owns [${result.start}, ${result.end})`);
      return true;
    } catch (error) {
      const reason = error instanceof AtollError && error.code === 'MERGE_REFUSED' ? `merge-${String(error.details?.['reason'])}` : error instanceof AtollError ? `merge-${error.code}` : 'merge-error';
      this.refused(reason, error, merge.partition, 'merge');
      if (reason === 'merge-replicas-differ') await this.alignReplicas(client, info, merge);
      return false;
    }
  }

  /** Moves one of R's replicas onto a node of L's that R lacks (one move, bounded; failures are counted). */
  private async alignReplicas(client: AtollClient, info: Awaited<ReturnType<AtollClient['clusterInfo']>>, merge: { partition: number; newPartition: number }): Promise<void> {
    const left = info.partitions.find((partition) => partition.id === merge.partition);
    const right = info.partitions.find((partition) => partition.id === merge.newPartition);
    if (left === undefined || right === undefined) return;
    const from = right.replicas.find((node) => !left.replicas.includes(node));
    const to = left.replicas.find((node) => !right.replicas.includes(node));
    if (from === undefined || to === undefined) return;
    try {
      await client.moveReplica(merge.newPartition, from, to, { timeoutMs: SPLIT_TIMEOUT_MS });
      this.options.log(`merges: moved partition ${merge.newPartition}'s replica from node ${from} to node ${to}, beside partition ${merge.partition}'s`);
    } catch (error) {
      this.refused(error instanceof AtollError ? `align-${error.code}` : 'align-error', error, merge.newPartition, 'replica move');
    }
  }

  private refused(reason: string, error: unknown, partition?: number, action = 'split'): void {
    this.refusals[reason] = (this.refusals[reason] ?? 0) + 1;
    const what = partition === undefined ? 'reading the table' : `${action} of partition ${partition}`;
    this.options.log(`splits: ${what} not done (${reason}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}); later`);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}

/** The partitions of a ClusterInfo answer with their ranges, in hash order. */
export function partitionTableOf(info: { readonly partitions: ReadonlyArray<{ readonly id: number; readonly rangeStart: number; readonly rangeEnd: number }> }): TablePartition[] {
  return info.partitions.map((partition) => ({ id: partition.id, start: partition.rangeStart, end: partition.rangeEnd })).sort((a, b) => a.start - b.start);
}
