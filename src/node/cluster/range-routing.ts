/**
 * The node's partition table (issue 19): which partition owns a hash, now that splits make ranges
 * data. Starts grow, and a merged-away start is a tombstone, forever: a split adds a start (at its
 * split point), a merge removes the right partition's start (only a split start: the equal
 * table's never go, merge-apply.ts), and ids are never reused, so a start once tombstoned is never
 * learned again. A partition's id follows from its start (split-entry.ts): a start of the equal
 * table is partition floor-formula id j, any other start s is partition s. So the table is the
 * set of split starts this node knows minus the tombstones it knows, and
 *
 *   owner(h) = the greatest known split start s with equalStart(j) < s <= h, else j = P-formula(h)
 *
 * Tombstones come from this node's merges (kept on disk, merge-tombstones.ts), from a merged
 * partition's PARTITION_MOVED (details.mergedInto) and from peers' ClusterInfo (mergedStarts). A
 * node that has not learned one routes to the merged-away partition, which no longer exists, so
 * its forward reaches a node that applied the merge and routes by its own table.
 *
 * Invariant: every start in `starts` is a real range start (learned from a group this node hosts,
 * from a partition's PARTITION_MOVED answer naming its range end, or from a peer's ClusterInfo);
 * a node that has not learned a start routes to the partition left of it, which answers
 * PARTITION_MOVED with its range end, so the router learns it and retries (router.ts).
 */
import { AtollError } from '../../errors.js';
import { bucketHash, hashSpaceSize, type BucketHashName } from '../../keys/bucket-hash.js';
import { equalRangeOf, partitionOfHash, partitionTable, type PartitionRange } from '../../keys/partition-table.js';
import { parseLeaseId } from '../../api/lease-id.js';

/** At most this many split starts (the partition count limit bounds a real table far below it). */
const MAX_STARTS = 1_000_000;

/**
 * The id of the partition whose range starts at `start` (a range end some partition reported),
 * by the id rule alone: the equal table's partition j when `start` is its start, else the split
 * partition `start` (a split's new id is its first hash, split-entry.ts). It needs no table, so it
 * names the partition even where the start is not known or already tombstoned (a node that met
 * the partition's freeze, merge-admin.ts).
 */
export function partitionStartingAt(start: number, initialPartitions: number): number {
  const j = partitionOfHash(start, initialPartitions);
  return equalRangeOf(j, initialPartitions).start === start ? j : start;
}

export class RangeRouting {
  /** Known split starts (ids of partitions splits made), ascending, no duplicates, none tombstoned. */
  private starts: number[] = [];
  /** Merged-away starts (never a start again), with the partition each was merged into. */
  private readonly tombstones = new Map<number, number>();

  /** hosted.size when the hosted groups' ids were last learned. */
  private hostedSeen = -1;

  constructor(
    private readonly initialPartitions: number,
    private readonly hash: BucketHashName | undefined,
    /** The groups this node hosts (the driver's): a hosted split partition's id is its start. */
    private readonly hosted: ReadonlyMap<number, unknown> = new Map(),
  ) {}

  /** Learns the ids of hosted split partitions (cheap unless the set of groups changed size). */
  private learnHosted(): void {
    if (this.hosted.size === this.hostedSeen) return;
    this.hostedSeen = this.hosted.size;
    for (const id of this.hosted.keys()) if (id >= this.initialPartitions) this.learn(id);
  }

  /** Whether `start` may be a split partition's start (and so its id) under the id rule. */
  private isSplitStart(start: number): boolean {
    if (!Number.isInteger(start) || start < this.initialPartitions || start <= 0 || start >= hashSpaceSize) return false;
    return partitionStartingAt(start, this.initialPartitions) === start;
  }

  /** Learns a range start (a split partition's id, or a range end some partition reported). Returns whether it was new. */
  learn(start: number): boolean {
    if (!this.isSplitStart(start) || this.tombstones.has(start) || this.starts.length >= MAX_STARTS) return false;
    const at = this.indexAfter(start);
    if (at > 0 && this.starts[at - 1] === start) return false;
    this.starts.splice(at, 0, start);
    return true;
  }

  /**
   * Learns that the partition starting at `start` was merged into `into`: the start is gone for
   * good. Returns whether it was new. Only split starts can be merged away.
   */
  forget(start: number, into: number): boolean {
    if (!this.isSplitStart(start) || this.tombstones.has(start) || this.tombstones.size >= MAX_STARTS) return false;
    this.tombstones.set(start, into);
    // The hosted set shrinks with a merge: look at it afresh, so a group added next is not missed.
    this.hostedSeen = -1;
    const at = this.indexAfter(start);
    if (at > 0 && this.starts[at - 1] === start) this.starts.splice(at - 1, 1);
    return true;
  }

  /** Every merged-away start known, ascending, with the partition it went into (ClusterInfo). */
  mergedStarts(): Array<{ readonly start: number; readonly into: number }> {
    return [...this.tombstones].map(([start, into]) => ({ start, into })).sort((a, b) => a.start - b.start);
  }

  /** The partition `start`'s range was merged into, when it is a known tombstone. */
  mergedInto(start: number): number | undefined {
    return this.tombstones.get(start);
  }

  /** Every split start known, ascending (ClusterInfo, tests). */
  knownStarts(): readonly number[] {
    return this.starts;
  }

  /** The number of starts at or below `hash` (binary search). */
  private indexAfter(hash: number): number {
    let low = 0;
    let high = this.starts.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.starts[middle]! <= hash) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  ownerOfHash(hash: number): number {
    this.learnHosted();
    const j = partitionOfHash(hash, this.initialPartitions);
    const at = this.indexAfter(hash);
    const start = at > 0 ? this.starts[at - 1]! : -1;
    return start > equalRangeOf(j, this.initialPartitions).start ? start : j;
  }

  partitionOfBucket(bucket: string): number {
    return this.ownerOfHash(bucketHash(bucket, this.hash));
  }

  /**
   * The whole table as ranges, in hash order (ClusterInfo): the equal table's ranges cut at every
   * known split start. Invariant (RangeTable.of checks it): contiguous, covering, distinct ids.
   */
  table(): PartitionRange[] {
    this.learnHosted();
    const ranges: PartitionRange[] = [];
    let next = 0;
    for (const range of partitionTable(this.initialPartitions)) {
      // The split starts inside this equal range, ascending: each opens a partition of that id.
      let start = range.start;
      let id = range.id;
      for (; next < this.starts.length && this.starts[next]! < range.end; next++) {
        const split = this.starts[next]!;
        ranges.push({ id, start, end: split });
        start = split;
        id = split;
      }
      ranges.push({ id, start, end: range.end });
    }
    return ranges;
  }

  /** The partition of a lease id (api/lease-id.ts); INVALID_ARGUMENT when it names a partition this table does not know. */
  leasePartition(lease: string | undefined): number {
    const { partition } = parseLeaseId(lease, 0xffff_ffff);
    if (!this.isKnown(partition)) throw new AtollError('INVALID_ARGUMENT', `lease ${String(lease).slice(0, 64)}: no partition ${partition}`, { lease: String(lease).slice(0, 64) });
    return partition;
  }

  /** A partition id this table can route to: one of the equal table's, or a known split start. */
  isKnown(partition: number): boolean {
    this.learnHosted();
    if (Number.isInteger(partition) && partition >= 0 && partition < this.initialPartitions) return true;
    const at = this.indexAfter(partition);
    return at > 0 && this.starts[at - 1] === partition;
  }
}
