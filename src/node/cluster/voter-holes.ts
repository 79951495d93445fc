/**
 * Voters that hold no replica (issue 32; whole-node simulator seed 51735). A split founds the new
 * partition N on every replica of P that applies the split entry, with P's voters as N's voters. A
 * replica of P that missed the entry heals when it installs a later snapshot of P (split-heal.ts).
 * But when P's replica on that node is moved away before it ever catches up (its installs kept
 * failing, then the rebalancer moved P off it), nothing on the node knows of N: N's voters name the
 * node, the node drops N's messages as those of a group it does not host, and N runs on RF - 1
 * copies for good (a second failure loses its quorum).
 *
 * So the leader looks: a voter of a group it leads that has never acknowledged anything in this
 * term (match index 0), for VOTER_HOLE_MS, while its node answers the peer transport, is asked to
 * open an empty replica (Peer.PrepareReplica, as a move opens its target: replica-moves.ts prepare,
 * with the leader's term and commit index as its vote floor). A node that does host the group
 * answers without doing anything (a replica busy installing, a follower restarting); one that
 * does not opens the replica, and the leader's next append finds it behind and sends a snapshot.
 * A voter whose node is down is left alone: it is not a hole, only down.
 *
 * Why it is safe: the empty replica is a member of the configuration the leader replicates to it
 * (it names the node), it votes only for logs that reach the floor (RaftConfig.voteFloor), and a
 * replica nobody names after all (a configuration change raced the request) is deleted by the
 * stray check like any replica its group removed.
 */
import type { Logger } from 'pino';
import type { VoteFloor } from '../../raft/types.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock } from '../ports.js';

/** How long a leader waits for a voter's first acknowledgement in its term before it asks the voter's node to open the replica. */
export const VOTER_HOLE_MS = 10_000;

export interface VoterHolesOptions {
  readonly id: number;
  readonly clock: NodeClock;
  readonly logger: Logger;
  /** Whether the peer transport reaches `node` now. */
  readonly isReachable: (node: number) => boolean;
  /** Asks `node` to open an empty replica of `partition` with `floor` (Peer.PrepareReplica). */
  readonly prepare: (node: number, partition: number, floor: VoteFloor) => Promise<void>;
  /** Overrides VOTER_HOLE_MS (tests). */
  readonly patienceMs?: number;
}

export class VoterHoles {
  /**
   * Per led partition: the term it was observed in, and each silent voter with since when (ms,
   * monotonic) it has been seen silent, or since the last request to its node. Invariant: only
   * partitions this node leads are kept (observe drops the others, prune the ones no longer hosted).
   */
  private readonly silent = new Map<number, { term: number; voters: Map<number, number> }>();

  constructor(private readonly options: VoterHolesOptions) {}

  /** One look at a replica this node hosts as a member (the once-a-second sweep). Field reads unless it leads with a silent voter. */
  observe(partition: number, replica: PartitionReplica): void {
    const raw = replica.raw;
    if (raw.role !== 'leader') {
      if (this.silent.size > 0) this.silent.delete(partition);
      return;
    }
    const term = raw.term;
    let entry = this.silent.get(partition);
    if (entry !== undefined && entry.term !== term) {
      this.silent.delete(partition);
      entry = undefined;
    }
    const { id, clock, isReachable } = this.options;
    for (const voter of raw.voterList()) {
      if (voter === id) continue;
      if ((raw.matchOf(voter) ?? 1) > 0) {
        entry?.voters.delete(voter);
        continue;
      }
      const nowMs = clock.monotonicMs();
      if (entry === undefined) this.silent.set(partition, (entry = { term, voters: new Map() }));
      const since = entry.voters.get(voter);
      if (since === undefined || !isReachable(voter)) {
        entry.voters.set(voter, nowMs);
        continue;
      }
      if (nowMs - since < (this.options.patienceMs ?? VOTER_HOLE_MS)) continue;
      entry.voters.set(voter, nowMs);
      this.ask(voter, partition, { term, index: raw.committedIndex });
    }
    if (entry !== undefined && entry.voters.size === 0) this.silent.delete(partition);
  }

  /** Forgets the partitions no longer hosted here. */
  prune(hosted: ReadonlyMap<number, unknown>): void {
    for (const partition of this.silent.keys()) if (!hosted.has(partition)) this.silent.delete(partition);
  }

  private ask(voter: number, partition: number, floor: VoteFloor): void {
    const { logger } = this.options;
    logger.info({ partition, voter, voteFloor: floor }, 'a voter has answered nothing in this term: asking its node to open the replica');
    void this.options.prepare(voter, partition, floor).catch((error: unknown) => {
      logger.debug({ partition, voter, err: error instanceof Error ? error.message : String(error) }, 'asking a silent voter to open its replica failed; asking again later');
    });
  }
}
