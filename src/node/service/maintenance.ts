/**
 * The node's periodic housekeeping: preferred leaders campaign at start and leadership moves back
 * to them (leader balancing), history beyond the retention window is compacted, expired keys are
 * deleted (removeExpiredKeys), idle snapshot data is released, and the other rooms' periodic jobs (usage publication, the history-quota
 * compaction, remote leader refresh) are scheduled from here.
 */
import type { Logger } from 'pino';
import type { Limits } from '../../limits.js';
import { encodeCommand } from '../../mvcc/index.js';
import type { NodeAccess } from './node-access.js';
import { encodeEntryPayload, type PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock, NodeTimers, TimerHandle } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import { compactionFloor } from './snapshot-pins.js';
import type { Router } from './router.js';
import type { StrandedFreezes } from '../cluster/stranded-freezes.js';

const BALANCE_INTERVAL_MS = 1_000;
/** Leadership transfers started per balancing round, at most. */
const MAX_TRANSFERS_PER_ROUND = 8;
/** Snapshot data exported for a follower is dropped once no follower asked for it this long. */
const SNAPSHOT_IDLE_MS = 30_000;
/** Expire entries (each of at most limits.maxBatchOps keys) one partition proposes per round, at most. */
const EXPIRE_ENTRIES_PER_PARTITION = 4;
/** Expire entries the node proposes per round, over all partitions, at most. */
const EXPIRE_ENTRIES_PER_ROUND = 64;
/** An expire proposal not answered within this long no longer holds its partition back. */
const EXPIRE_IN_FLIGHT_MS = 10_000;

export interface MaintenanceOptions {
  readonly id: number;
  /**
   * Each partition's preferred leader now, or undefined for none (rebalancer.ts: from the applied
   * member table and the rebalancer's replicated plan, never the founding node list).
   */
  readonly preferredLeader: (partition: number) => number | undefined;
  /** Where a leader hands a partition's leadership (the preferred leader by a fresh plan), or undefined. */
  readonly transferTarget?: (partition: number) => number | undefined;
  /** Keep this many revisions of history per partition; older versions are compacted. */
  readonly retentionRevisions: number;
  /** Raft's election timeout in ticks (the start-up postponement of non-preferred replicas). */
  readonly electionTicks: number;
  /** Negative control (NodeTestBugs.noStartupCampaigns): only the first iteration's campaign, the old behaviour. */
  readonly noStartupCampaigns?: boolean;
  readonly limits: Limits;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly router: Router;
  readonly access: NodeAccess;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  readonly logger: Logger;
  /** Merges whose freeze was left behind, finished once a second (stranded-freezes.ts). */
  readonly strandedFreezes?: StrandedFreezes;
}

export class Maintenance {
  private readonly timers: TimerHandle[] = [];
  /**
   * Partitions with expire proposals not yet answered, and when they were proposed (monotonic).
   * Invariant: a partition is here only while proposals of it are unanswered (or for at most
   * EXPIRE_IN_FLIGHT_MS), so the same expired keys are not proposed twice at once.
   */
  private readonly expiring = new Map<number, { pending: number; sinceMs: number }>();

  constructor(private readonly options: MaintenanceOptions) {}

  /** Starts the periodic jobs; returns the first loop task (preferred leaders campaign at once). */
  start(): () => void {
    const { driver, router, access, timers, clock } = this.options;
    this.timers.push(
      timers.every(BALANCE_INTERVAL_MS, () =>
        driver.enqueue(() => {
          this.balanceLeaders();
          this.options.strandedFreezes?.sweep(driver.groups);
          this.compactHistory();
          this.removeExpiredKeys();
          access.publishUsage();
          const now = clock.monotonicMs();
          for (const replica of driver.groups.values()) replica.releaseIdleSnapshot(now, SNAPSHOT_IDLE_MS);
        }),
      ),
      timers.every(BALANCE_INTERVAL_MS, () => {
        void router.refreshRemoteLeaders();
        void access.compactHistoryOverQuota();
      }),
    );
    // Preferred leaders campaign at once, so a fresh cluster starts balanced. Peers that start later
    // than this node miss that campaign, and every group then waits for randomized election
    // timeouts, on all three nodes at once: at 1,024 partitions that was an election storm of split
    // votes (tens of seconds to lead them all). So a preferred leader whose group still has no
    // leader campaigns again when the first frame from one of its voters arrives. Pre-vote keeps
    // this harmless where a leader exists (its followers refuse), and a restarted node's core
    // refuses to campaign during its start-up quiet ticks (Raft.hup).
    // The other replicas of such a group postpone their first election by two timeouts, so the
    // preferred leader, once it hears them, campaigns alone instead of against two timers that all
    // 1,024 groups started at the same instant (a group whose preferred leader is down elects after
    // three to four timeouts instead of one to two, at start only).
    if (this.options.noStartupCampaigns === true) return () => this.campaignPreferred(undefined);
    driver.onFirstFrameFrom((peer) => this.campaignPreferred(peer));
    return () => {
      this.campaignPreferred(undefined);
      const { id, electionTicks } = this.options;
      for (const [partition, replica] of driver.groups) {
        const preferred = this.preferredLeaderOf(partition);
        if (preferred !== undefined && preferred !== id && replica.raw.lead === 0 && replica.raw.isVoter(preferred)) replica.raw.postponeElection(2 * electionTicks);
      }
    };
  }

  /** Preferred leaders campaign in their groups that know no leader (with `peer`: only groups it is a voter of). */
  private campaignPreferred(peer: number | undefined): void {
    const { driver, id } = this.options;
    for (const [partition, replica] of driver.groups) {
      if (replica.raw.lead !== 0 || this.preferredLeaderOf(partition) !== id || !replica.raw.isVoter(id)) continue;
      // A candidate's vote round is under way (a second campaign would restart it in a new term);
      // a pre-candidate asks again, the peer that just came up included.
      if (peer !== undefined && (!replica.raw.isVoter(peer) || replica.raw.role === 'candidate')) continue;
      replica.raw.campaign();
    }
  }

  stop(): void {
    for (const timer of this.timers) timer.cancel();
    this.timers.length = 0;
  }

  private preferredLeaderOf(partition: number): number | undefined {
    return this.options.preferredLeader(partition);
  }

  /** Moves leadership back to each partition's preferred leader when it is caught up and reachable. */
  private balanceLeaders(): void {
    const { driver, id } = this.options;
    let transfers = 0;
    for (const [partition, replica] of driver.groups) {
      // Cheap checks first (field reads): only a leader away from its preferred node needs status().
      if (replica.raw.role !== 'leader') continue;
      // A frozen partition serves nothing until its merge applies, which needs it led where its
      // left neighbour is (stranded-freezes.ts): balancing it would pull it away again.
      if (replica.mvcc.frozen !== undefined) continue;
      const preferred = (this.options.transferTarget ?? this.options.preferredLeader)(partition);
      if (preferred === undefined || preferred === id || !replica.raw.isVoter(preferred) || !driver.transport.isReachable(preferred)) continue;
      // Replicas move (replica-moves.ts): the preferred leader (rebalancer.ts) counts only while it is a voter.
      // Invariant (test/node/idle-sweeps.test.ts): a pass over followers and leaders on their
      // preferred node builds no status() (a progress Map and configuration arrays per call).
      const status = replica.raw.status();
      if (status.role !== 'leader' || status.leadTransferee !== 0) continue;
      const progress = status.progress.get(preferred);
      if (!progress || progress.match < status.commit) continue;
      try {
        replica.raw.transferLeadership(preferred);
        transfers++;
      } catch {
        // Not possible right now; the next round tries again.
      }
      if (transfers >= MAX_TRANSFERS_PER_ROUND) break;
    }
  }

  /**
   * Expired keys are deleted, the etcd way: a leader proposes `expire` entries naming keys it sees
   * expired (the store's expiry index, no scan) at max(its clock, the partition clock), and apply
   * deletes those still expired at the entry's replicated time, so every replica deletes the same
   * keys at the same revision. Bounded per round: EXPIRE_ENTRIES_PER_PARTITION entries of at most
   * maxBatchOps keys per partition, EXPIRE_ENTRIES_PER_ROUND entries per node. The versions then
   * go physically with history compaction (compactHistory), like any deleted key's.
   */
  private removeExpiredKeys(): void {
    const { driver, logger, limits, clock } = this.options;
    let proposed = 0;
    const monotonicNow = clock.monotonicMs();
    const wallNow = clock.wallMs();
    for (const replica of driver.groups.values()) {
      if (proposed >= EXPIRE_ENTRIES_PER_ROUND) break;
      if (replica.raw.role !== 'leader') continue;
      const inFlight = this.expiring.get(replica.id);
      if (inFlight !== undefined && monotonicNow - inFlight.sinceMs < EXPIRE_IN_FLIGHT_MS) continue;
      const nowMs = Math.max(wallNow, replica.mvcc.appliedTimeMs);
      const entries = Math.min(EXPIRE_ENTRIES_PER_PARTITION, EXPIRE_ENTRIES_PER_ROUND - proposed);
      const keys = replica.mvcc.expiredKeys(nowMs, entries * limits.maxBatchOps);
      if (keys.length === 0) continue;
      const state = { pending: 0, sinceMs: monotonicNow };
      this.expiring.set(replica.id, state);
      const answered = (): void => {
        state.pending--;
        if (state.pending === 0 && this.expiring.get(replica.id) === state) this.expiring.delete(replica.id);
      };
      for (let start = 0; start < keys.length; start += limits.maxBatchOps) {
        const payload = encodeEntryPayload(nowMs, encodeCommand({ type: 'expire', keys: keys.slice(start, start + limits.maxBatchOps) }, limits));
        state.pending++;
        try {
          replica.propose(payload, {
            resolve: answered,
            reject: (error: unknown) => {
              answered();
              logger.debug({ err: error, partition: replica.id }, 'expired-key removal not applied');
            },
          });
          proposed++;
        } catch {
          // Lost leadership (or the log is full) meanwhile; the next round or leader tries again.
          state.pending--;
          break;
        }
      }
      if (state.pending === 0 && this.expiring.get(replica.id) === state) this.expiring.delete(replica.id);
    }
  }

  /**
   * Retention: a leader whose partition keeps more than `retentionRevisions` of history proposes a
   * compact command. It goes through the log because the floor decides which past reads and
   * snapshot transactions still work, so every replica must move it at the same index.
   */
  private compactHistory(): void {
    const { retentionRevisions: retention, driver, logger } = this.options;
    for (const replica of driver.groups.values()) {
      if (replica.raw.role !== 'leader') continue;
      const { revision, compactedRevision } = replica.mvcc;
      // Wait for a tenth of the window to accumulate so compactions stay occasional.
      if (revision - compactedRevision <= retention + Math.ceil(retention / 10)) continue;
      // Never past a snapshot a running script reads at (snapshot-pins.ts).
      const belowRevision = compactionFloor(replica.mvcc, revision - retention);
      if (belowRevision <= compactedRevision) continue;
      const payload = encodeEntryPayload(this.options.clock.wallMs(), encodeCommand({ type: 'compact', belowRevision }, this.options.limits));
      try {
        replica.propose(payload, {
          resolve: () => undefined,
          reject: (error: unknown) => logger.debug({ err: error, partition: replica.id }, 'compaction not applied'),
        });
      } catch {
        // Lost leadership meanwhile; the next leader compacts.
      }
    }
  }
}
