/**
 * Heals a replica that skipped a split entry (docs/architecture.md, "Partition splits"). A split
 * of P at `mid` is one entry in P's log; a replica that applies it founds N = mid locally
 * (split-apply.ts). A replica of P that lags and catches up by installing a snapshot of P taken
 * after the split never applies that entry: its P shrinks to [start, mid) (the range travels in
 * the snapshot), yet N's founding voters (P's voters at the entry) name this node. Without this
 * file N ran on RF - 1 replicas for good.
 *
 * The mechanism: when an install shrinks a replica's range (its end moves down from `holeEnd` to
 * `e`), the node opens an EMPTY replica of partition `e` (the one that starts where the range now
 * ends), as a replica move opens its target (replica-store.ts open(evenIfEmpty)). N's leader has
 * this node among its voters, finds it behind (N cannot quiesce while a voter lags), and sends it
 * a snapshot. The hole [e, holeEnd) may hold several partitions (P split at m1, then at m2 < m1;
 * or N itself split): when the empty replica's first snapshot carries a range that ends before
 * `holeEnd`, the partition that starts there is opened the same way, until the hole is covered.
 *
 * Invariants (asserted or kept below):
 * - A heal record (node keyspace, `0x01 "split-heal" 0x00` + uint32BE(partition), value
 *   uint64BE(holeEnd): a range end may be 2^32) says: this node's next install of `partition` fills a hole that ends at
 *   holeEnd. It is written (a) before an install of a replica that holds state, with the end of
 *   its range, in a write that precedes the import's synced mark (so it is durable whenever the
 *   import began: a crash inside the import empties the store, discardInterruptedInstall, and
 *   only the record still knows the old end), and (b) for the partition after a shrunk range, in
 *   the synced batch that ends the install that shrank it (MvccStore.importSnapshot
 *   alsoWriteFor). The batch that ends an install deletes the partition's own record, and so does
 *   deleting the replica (ReplicaStore.deleteOps). In memory `holes` mirrors the records.
 * - At start every record whose partition the disk does not hold opens an empty replica (a
 *   crash between an install and its open loses nothing: reopen); one whose partition is on disk
 *   keeps its hole for that replica's next install.
 * - Only a replica that held state before the install has a range to shrink (its applied index,
 *   which counts the founding snapshot at index 1, > 0: a founder that never applied an entry owns
 *   its equal-table range): an empty replica a move opened gets today's range, which says nothing
 *   about splits it missed. (One whose first install a crash cut off is reset to a founding state
 *   at index 1 and counts as holding its partition's equal-table range: a later install may open a
 *   partition this node does not belong to, which the stray check deletes.)
 * - A partition this node already hosts is never opened twice (checked at the install and again
 *   in the loop before the group is added).
 *
 * Why this node is a founding voter of N, and when not: the node held P with state from before
 * the split, and P's leader sends snapshots only to members, so the node is a member of P at the
 * snapshot. A split is refused while P has learners, so the node was a voter of P at the split
 * entry, unless it was removed from P before the split without learning it, and then added back
 * by a move whose target kept its stale replica (a rare chain). That case opens a replica nobody
 * names; the stray check (stray-check.ts) removes a heal replica still empty after
 * HEAL_PATIENCE_MS once a peer leads N with voters that leave this node out, and logs the ones it
 * cannot resolve (no peer leads N) at every check, so none stays unnoticed.
 */
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import { equalRangeOf } from '../../keys/partition-table.js';
import { asciiBytes, concatBytes, decodeUint32BE, decodeUint64BE, encodeUint32BE, encodeUint64BE, prefixRange } from '../../storage/bytes.js';
import { nodeKeyPrefix } from '../../storage/keyspace.js';
import type { StorageEngine, WriteOperation } from '../../storage/storage-engine.js';
import type { PartitionReplica } from '../replica/partition-replica.js';

/** A heal replica still empty after this long is looked into by the stray check (stray-check.ts). */
export const HEAL_PATIENCE_MS = 10_000;

const HEAL_PREFIX = concatBytes(nodeKeyPrefix(), asciiBytes('split-heal'), Uint8Array.of(0));

/** The heal record of `partition` (see the file comment). */
export function healKey(partition: number): Uint8Array {
  return concatBytes(HEAL_PREFIX, encodeUint32BE(partition));
}

type HashRange = { readonly start: number; readonly end: number };

/**
 * The partition to open after an install, or undefined: `after` is the range the snapshot carries,
 * `holeEnd` where the range ended before (or the end of the hole this replica was opened to fill).
 * Ranges only shrink by splits, and a split partition's id is its first hash (split-entry.ts). Pure.
 */
export function nextToHeal(input: { after: HashRange | undefined; holeEnd: number | undefined }): { partition: number; holeEnd: number } | undefined {
  const { after, holeEnd } = input;
  if (holeEnd === undefined || after === undefined || after.end >= holeEnd) return undefined;
  return { partition: after.end, holeEnd };
}

/** The node's loop, as far as healing needs it (RaftDriver). */
export interface HealLoop {
  readonly groups: ReadonlyMap<number, PartitionReplica>;
  enqueue(task: () => void): void;
  addGroup(replica: PartitionReplica): void;
}

export interface SplitHealOptions {
  readonly engine: StorageEngine;
  readonly logger: Logger;
  /** The cluster's initial partition count: ids below it own their equal-table place until a split. */
  readonly initialPartitions: number;
  /** Opens `partition`'s replica, empty when the disk holds nothing of it (ReplicaStore.open). */
  readonly openEmpty: (partition: number) => Promise<PartitionReplica | undefined>;
  readonly nowMs: () => number;
  /** Negative control (NodeTestBugs.splitHealDisabled): installs never open the partition after them. */
  readonly disabled?: boolean;
}

export class SplitHeal {
  /** The heal records: partition -> the end of the hole its next install fills. */
  private readonly holes = new Map<number, number>();
  /** Empty replicas opened here for a skipped split, and when (the stray check looks into old ones). */
  private readonly opened = new Map<number, number>();
  /** Decided inside an install's final batch, acted on once it is written (installed). */
  private readonly decided = new Map<number, { partition: number; holeEnd: number }>();
  private loop: HealLoop | undefined;

  constructor(private readonly options: SplitHealOptions) {}

  /** The loop to add opened replicas to; without one (a store used alone) nothing is healed. */
  attach(loop: HealLoop): void {
    this.loop = loop;
  }

  private get active(): boolean {
    return this.options.disabled !== true && this.loop !== undefined;
  }

  /**
   * Before `partition`'s install: the operations that record the end of the range it holds now
   * (`before`, undefined when it holds no state), to write before the import begins.
   */
  opsBeforeInstall(partition: number, before: HashRange | undefined): WriteOperation[] {
    if (!this.active || before === undefined) return [];
    const holeEnd = Math.max(before.end, this.holes.get(partition) ?? 0);
    this.holes.set(partition, holeEnd);
    return [{ type: 'put', key: healKey(partition), value: encodeUint64BE(holeEnd) }];
  }

  /**
   * The operations for the synced batch that ends `partition`'s install (MvccStore alsoWriteFor):
   * its own record goes, and the next partition's is written when the range (`carried` by the
   * snapshot; undefined: the equal-table place) ends before the hole. Runs beside the loop while
   * the group's Ready is outstanding; reads only the loop's groups.
   */
  opsAfterInstall(partition: number, carried: HashRange | undefined): WriteOperation[] {
    this.decided.delete(partition);
    const holeEnd = this.holes.get(partition);
    if (holeEnd === undefined) return [];
    const ops: WriteOperation[] = [{ type: 'del', key: healKey(partition) }];
    const after = carried ?? (partition < this.options.initialPartitions ? equalRangeOf(partition, this.options.initialPartitions) : undefined);
    const next = nextToHeal({ after, holeEnd });
    if (next === undefined || this.loop === undefined || this.loop.groups.has(next.partition)) return ops;
    assert.ok(next.partition > partition, `partition ${partition}: the partition after its range starts past its id`);
    this.decided.set(partition, next);
    ops.push({ type: 'put', key: healKey(next.partition), value: encodeUint64BE(next.holeEnd) });
    return ops;
  }

  /** `partition`'s install is on disk: its hole is filled, and what opsAfterInstall chose opens. */
  installed(partition: number): void {
    this.holes.delete(partition);
    this.opened.delete(partition);
    const next = this.decided.get(partition);
    this.decided.delete(partition);
    if (next === undefined) return;
    this.holes.set(next.partition, next.holeEnd);
    void this.open(next.partition, partition);
  }

  /**
   * At start, with `hosted` the partitions opened from disk: loads the records; each whose
   * partition is not on disk opens an empty replica (a crash may have come between an install and
   * its open). Returns those replicas, for the caller to add before the loop runs.
   */
  async reopen(hosted: ReadonlySet<number>): Promise<PartitionReplica[]> {
    const { engine, logger } = this.options;
    const opened: PartitionReplica[] = [];
    for await (const [key, value] of engine.iterate(prefixRange(HEAL_PREFIX))) {
      const partition = decodeUint32BE(key, HEAL_PREFIX.length);
      this.holes.set(partition, decodeUint64BE(value));
      if (hosted.has(partition)) continue;
      const replica = await this.options.openEmpty(partition);
      assert.ok(replica !== undefined, `partition ${partition}: an empty replica opens`);
      this.opened.set(partition, this.options.nowMs());
      opened.push(replica);
    }
    if (opened.length > 0) logger.info({ partitions: opened.map((r) => r.id) }, 'reopened empty replicas of partitions a snapshot install skipped the split of');
    return opened;
  }

  /** Heal replicas still empty, with when each was opened (the stray check looks into old ones). */
  awaitingFirstSnapshot(): ReadonlyMap<number, number> {
    const result = new Map<number, number>();
    for (const [partition, sinceMs] of this.opened) {
      const replica = this.loop?.groups.get(partition);
      if (replica === undefined || !replica.awaitingFirstSnapshot()) continue;
      result.set(partition, sinceMs);
    }
    return result;
  }

  /** The replica left this node (ReplicaStore.deleteOps deletes its record): forget it. */
  forget(partition: number): void {
    this.holes.delete(partition);
    this.opened.delete(partition);
    this.decided.delete(partition);
  }

  private async open(partition: number, after: number): Promise<void> {
    const loop = this.loop;
    assert.ok(loop !== undefined, 'a heal was decided, so the store has a loop');
    try {
      const replica = await this.options.openEmpty(partition);
      assert.ok(replica !== undefined, `partition ${partition}: an empty replica opens`);
      loop.enqueue(() => {
        // Hosted meanwhile (never by a split of ours: this node is past that entry): keep that one;
        // the record then waits for that replica's next install.
        if (loop.groups.has(partition)) return;
        this.opened.set(partition, this.options.nowMs());
        loop.addGroup(replica);
        this.options.logger.info({ partition, after, holeEnd: this.holes.get(partition) }, 'a snapshot install skipped the split that made this partition: opened an empty replica; its leader sends a snapshot');
      });
    } catch (error) {
      // Its record is on disk: the next start opens it.
      this.options.logger.error({ err: error, partition }, 'opening the replica of a skipped split failed; the next start retries');
    }
  }
}
