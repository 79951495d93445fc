/**
 * Starts a partition split on the partition's leader (Cluster.SplitPartition, `atoll cluster
 * split P`): picks the split point and proposes the split entry (split-entry.ts) to the source
 * group; every replica then applies it (split-apply.ts). The point is the median bucket hash of
 * the partition's stored keys (chooseSplitPoint: each side keeps at least one bucket), or the
 * range's midpoint when it holds fewer than two buckets; a bucket never splits, since all its
 * keys share one hash. Refusals change nothing: NOT_LEADER (with the leader's id) on another
 * node, SPLIT_REFUSED 'single-bucket' for a range of one hash, 'in-progress' while a replica move
 * runs (learners, more voters than the replication factor, or a move coordinated here),
 * INVALID_ARGUMENT for a bad partition number.
 */
import type { SplitPartitionResult } from '../../api/node-api.js';
import { AtollError } from '../../errors.js';
import { bucketOf } from '../../keys/bucket.js';
import { bucketHash, type BucketHashName } from '../../keys/bucket-hash.js';
import { chooseSplitPoint } from '../../keys/partition-table.js';
import type { ApplyResult } from '../../mvcc/index.js';
import { proposeAndWait, type PartitionAdminHost } from './admin-propose.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import { encodeSplitEntry, splitIdAllowed, splitPartitionId } from '../replica/split-entry.js';

/** At most this many stored keys are looked at to pick the split point. */
const SPLIT_SAMPLE_KEYS = 100_000;

/** The node's split call as the Cluster service sees it (AtollNode.splitPartition; optional in a fake). */
export interface SplitApi {
  splitPartition?(request: { readonly partition: number }, context: import('../../api/node-api.js').CallContext): Promise<SplitPartitionResult>;
}

export interface SplitAdminOptions extends PartitionAdminHost {
  readonly hashFunction: BucketHashName;
  /**
   * The cluster's replication factor: more voters than this is a move between its promotion and
   * its removal of the source, perhaps coordinated by another node (a former leader); a split
   * then would found the new partition with those extra voters, which no move ever removes.
   */
  readonly replicationFactor?: number;
  /** Whether `hash` is a merged-away start (range-routing.ts): never a partition id again. */
  isMergedStart?(hash: number): boolean;
}

/** At most this many hashes above a merged-away start are tried as the split point. */
const MAX_POINT_SHIFT = 64;

function refused(reason: string, message: string, details: Record<string, unknown> = {}): AtollError {
  return new AtollError('SPLIT_REFUSED', message, { reason, ...details });
}

export class SplitAdmin {
  constructor(private readonly options: SplitAdminOptions) {}

  /**
   * `needsKeysOnBothSides` (automatic splits, auto-split.ts): refuse 'single-bucket' unless the
   * stored keys span at least two bucket hashes, so that each side keeps some of them; a manual
   * split of a range with fewer buckets still cuts at the range's midpoint. `pointHint`: the point
   * to use when it lies inside the range (it is moved clear of the equal table's ids like any).
   */
  async split(partition: number, deadlineMs: number, options: { readonly needsKeysOnBothSides?: boolean; readonly pointHint?: number } = {}): Promise<SplitPartitionResult> {
    const { driver, initialPartitions, hashFunction, clock } = this.options;
    if (!Number.isSafeInteger(partition) || partition < 0 || !this.options.isKnown(partition)) throw new AtollError('INVALID_ARGUMENT', `no partition ${String(partition)}`);
    const replica = driver.groups.get(partition);
    if (replica === undefined) throw this.options.notLeader(partition);
    if (replica.raw.status().role !== 'leader') throw replica.notLeaderError();
    const range = replica.mvcc.hashRange;
    if (range === undefined) throw new AtollError('INVALID_ARGUMENT', `partition ${partition} has no hash range`);
    const { confState } = replica.raw.status();
    const extraVoters = this.options.replicationFactor !== undefined && confState.voters.length > this.options.replicationFactor;
    if (replica.mvcc.frozen !== undefined) throw refused('in-progress', `partition ${partition} is frozen for a merge into partition ${replica.mvcc.frozen.into}`, { partition });
    // A neighbour frozen into this partition merges only while this range still ends where it starts.
    for (const other of driver.groups.values()) if (other.mvcc.frozen?.into === partition) throw refused('in-progress', `partition ${other.id} is frozen for a merge into partition ${partition}: finish the merge first`, { partition });
    if (confState.learners.length > 0 || extraVoters || this.options.moveInProgress(partition)) {
      throw refused('in-progress', `partition ${partition} has a replica move in progress; split it after the move`, { partition });
    }
    const hashes = replica.mvcc.storedKeyNames(SPLIT_SAMPLE_KEYS).map((key) => bucketHash(bucketOf(key), hashFunction));
    if (options.needsKeysOnBothSides === true && new Set(hashes.filter((hash) => hash >= range.start && hash < range.end)).size < 2) {
      throw refused('single-bucket', `partition ${partition}'s keys lie in one bucket: splitting it would not divide them`, { partition });
    }
    // A hint (automatic splits by load: the point that halves the requests, chooseLoadSplitPoint)
    // wins when it lies strictly inside the range; otherwise the stored keys' median.
    const hint = options.pointHint;
    let mid = hint !== undefined && Number.isSafeInteger(hint) && hint > range.start && hint < range.end ? hint : chooseSplitPoint(range, hashes);
    // A new partition's id is its first hash, so a point must be clear of the equal table's ids.
    if (mid !== undefined && !splitIdAllowed(mid, initialPartitions)) mid = Math.max(mid, initialPartitions) < range.end ? Math.max(mid, initialPartitions) : undefined;
    // Ids are never reused: a merged-away start moves the point up (a merge keeps no bucket boundary there).
    for (let shift = 0; mid !== undefined && this.options.isMergedStart?.(mid) === true; shift++) mid = shift < MAX_POINT_SHIFT && mid + 1 < range.end ? mid + 1 : undefined;
    if (mid === undefined || mid <= range.start) {
      throw refused('single-bucket', `partition ${partition}'s range [${range.start}, ${range.end}) cannot split (one bucket)`, { partition });
    }
    const newPartition = splitPartitionId(mid);
    const payload = encodeSplitEntry({ nowMs: clock.wallMs(), mid, newId: newPartition });
    const result = await this.propose(replica, payload, deadlineMs);
    if (result.error !== undefined) throw result.error;
    return { partition, newPartition, start: range.start, mid, end: range.end };
  }

  private propose(replica: PartitionReplica, payload: Uint8Array, deadlineMs: number): Promise<ApplyResult> {
    // The entry may still commit and apply after the deadline: the caller reads ClusterInfo to find out.
    return proposeAndWait(this.options, replica, payload, deadlineMs, 'the split');
  }
}
