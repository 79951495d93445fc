/**
 * Stray replicas: a replica this node still hosts whose group has removed this node, which it never
 * learned (replica-moves.ts deletes a replica once its own applied configuration leaves the node
 * out; this finds the ones that cannot see that). The source of a move learns its removal when the
 * leader's next message carries the commit index; after it applied the removal the leader sends it
 * nothing more. If that message was lost the source waits without a leader forever, and if its
 * group was quiet (a quiesced follower keeps its leader's id) it does not even notice.
 *
 * Every STRANDED_CHECK_MS this asks peers' ClusterInfo about the suspects: replicas without a leader
 * for two checks in a row (every reachable peer is asked), and every FOLLOWER_CHECK_EVERY-th check
 * quiet followers, learners and voters that cannot campaign (only the node they follow is asked).
 * A suspect is handed to `leave` (stop and delete) when a peer leads its partition in a term at
 * least the replica's (or in an older one but applied further), has applied at least as far (so
 * its configuration is at least as new as the one naming this node a voter), and its voters
 * leave this node out; or, for a replica whose own configuration names this node a voter,
 * when a peer that hosts the partition without leading it has applied strictly further and its
 * voters leave this node out (every configuration it applied was committed; its leader may be a
 * member this node does not know). Not for a learner or an outsider: a move's target may hold a
 * snapshot from before its own addition, which a lagging follower has not applied either.
 * A deletion runs only if the suspect is still as it was judged (term, applied and last index).
 * Each peer is asked about the suspects it can answer for only (ClusterInfoRequest.partitions),
 * and a follower check takes at most FOLLOWER_BATCH quiet followers, the next ones at the next
 * (a node with 1,024 partitions covers its ~680 quiet followers in six follower checks, a minute; building and decoding every partition's report twice per peer every
 * ten seconds was most of such a node's idle CPU). Cost on an idle node: field reads per group,
 * one small ClusterInfo per followed node every FOLLOWER_CHECK_EVERY checks; no status() object
 * (test/node/idle-sweeps.test.ts).
 *
 * Empty replicas opened for a skipped split (split-heal.ts) that still await their first snapshot
 * after HEAL_PATIENCE_MS are suspects too (every peer is asked): one is left when a peer leads the
 * partition with voters that leave this node out (it was no founding voter, see split-heal.ts);
 * one no peer leads is logged at every check, so it never waits unnoticed.
 *
 * Empty replicas (no configuration: a move's target awaiting its first snapshot) are asked about
 * too when they are suspects: one is left when a peer reports its partition's start merged away
 * (ClusterInfo mergedStarts). A move of a frozen R may open one just before the merge applies, and
 * then no leader of R is left to fill it or to remove it (whole-node simulator seed 66828).
 */
import type { Logger } from 'pino';
import type { PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock, NodeTimers, TimerHandle } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import { HEAL_PATIENCE_MS } from '../apply/split-heal.js';

/** How often replicas without a leader ask their peers whether they were removed. */
const STRANDED_CHECK_MS = 2_000;
/** Quiet followers are checked too every this many checks (one ClusterInfo per followed node). */
const FOLLOWER_CHECK_EVERY = 5;
/** At most this many quiet followers per follower check; the next check goes on past the last one taken. */
export const FOLLOWER_BATCH = 128;
const CALL_TIMEOUT_MS = 2_000;

export interface StrayCheckOptions {
  readonly driver: RaftDriver<PartitionReplica>;
  readonly id: number;
  readonly knownNodes: ReadonlyMap<number, string>;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  readonly logger: Logger;
  /** Takes a stray replica out of the driver and deletes its data (a loop task). */
  readonly leave: (partition: number, replica: PartitionReplica) => void;
  /** Negative control (NodeTestBugs.mergeLeavesLeftovers): frozen replicas of a merged-away R are kept too. */
  readonly keepMergedAway?: boolean;
  /** Empty replicas opened for a skipped split, with when each was opened (SplitHeal.awaitingFirstSnapshot). */
  readonly healing?: () => ReadonlyMap<number, number>;
}

/** What a suspect's deletion is decided on: its term, applied index and last log index. */
interface JudgedState {
  readonly term: number;
  readonly applied: number;
  readonly last: number;
}

function judgedState(replica: PartitionReplica): JudgedState {
  return { term: replica.raw.term, applied: replica.appliedIndex, last: replica.raw.lastIndex() };
}

function sameAsJudged(replica: PartitionReplica, judged: JudgedState | undefined): boolean {
  if (judged === undefined) return false;
  const now = judgedState(replica);
  return now.term === judged.term && now.applied === judged.applied && now.last === judged.last;
}

export class StrayCheck {
  private timer: TimerHandle | undefined;
  private checking = false;
  /** Partitions with no known leader at the previous check. */
  private leaderlessBefore = new Set<number>();
  private checks = 0;
  /** The follower checks go round the partitions in id order: the last one the previous check took. */
  private followerCursor = -1;

  constructor(private readonly options: StrayCheckOptions) {}

  start(): void {
    this.timer = this.options.timers.every(STRANDED_CHECK_MS, () => void this.check());
  }

  stop(): void {
    this.timer?.cancel();
  }

  private async check(): Promise<void> {
    const { driver, id, clock, logger } = this.options;
    if (this.checking || driver.closed) return;
    this.checking = true;
    try {
      // Suspects: voters (by their own configuration) without a leader for two checks in a row,
      // and, every FOLLOWER_CHECK_EVERY-th check, quiet followers too. A quiesced follower keeps
      // its leader's id, and a leader that removed it sends it nothing more (not even the wake-up
      // that would start an election), so without this a source that missed its removal while its
      // group was quiet stayed a stray for good (simulator seed 228: on a node then removed from
      // the cluster, it also kept the node reading an old member table from it).
      const followers = this.checks++ % FOLLOWER_CHECK_EVERY === 0;
      const suspects = new Map<number, { term: number; applied: number; learner: boolean; namedVoter?: boolean }>();
      const leaderlessNow = new Set<number>();
      // Leaderless suspects ask every peer; quiet followers only the node they follow. The
      // partitions each peer is asked about (`everyPeer`: the leaderless and healing ones).
      const ask = new Map<number, number[]>();
      const everyPeer: number[] = [];
      // Quiet followers in id order from past the cursor, wrapping round, at most FOLLOWER_BATCH.
      const quiet = followers ? this.nextFollowers() : undefined;
      // Empty suspects: replicas that never installed a snapshot, asked about their partition's
      // tombstone (see the loop over the answers).
      const empties = new Set<number>();
      for (const [partition, replica] of driver.groups) {
        // Field reads first: a led group (the common case) builds no status() object.
        const lead = replica.raw.lead;
        if (lead === 0) leaderlessNow.add(partition);
        // A learner runs no election timer, so one whose leader stopped writing to it keeps that
        // leader's id without being quiesced: every FOLLOWER_CHECK_EVERY-th check asks about it too.
        const suspect = lead === 0 ? this.leaderlessBefore.has(partition) : quiet?.has(partition) === true;
        if (!suspect) continue;
        // Learners too: a move's target whose removal (the move dropped, or moved on) never reached
        // it waits for a leader forever, as a source does. And a replica whose configuration does
        // not name this node at all but is not empty: after a restart a source that installed a
        // snapshot taken after its removal (wasMember does not survive a restart) is kept as a
        // move's target that may yet be added (replica-moves.ts start()), so only its leader can
        // say it moved away (simulator seed 215 with batched appends).
        const voter = replica.raw.isVoter(id);
        if (!voter && !replica.raw.isMember(id) && replica.raw.voterList().length === 0) {
          // Empty (a move's target awaiting its first snapshot): only a merge can strand it, below.
          empties.add(partition);
          continue;
        }
        // Field reads (test/node/idle-sweeps.test.ts: an idle pass builds no status() object).
        // A following peer's word counts for a voter only (below): its own configuration names it.
        suspects.set(partition, { term: replica.raw.term, applied: replica.appliedIndex, learner: !voter, namedVoter: voter });
        if (lead === 0) everyPeer.push(partition);
        else ask.set(lead, [...(ask.get(lead) ?? []), partition]);
      }
      this.leaderlessBefore = leaderlessNow;
      // Heal replicas still empty past their patience: no term or applied index of their own, so
      // any peer that leads the partition knows a configuration at least as new.
      const healing = new Set<number>();
      for (const [partition, sinceMs] of this.options.healing?.() ?? []) {
        if (clock.monotonicMs() - sinceMs < HEAL_PATIENCE_MS) continue;
        healing.add(partition);
        suspects.set(partition, { term: 0, applied: 0, learner: false });
        everyPeer.push(partition);
      }
      everyPeer.push(...empties);
      if (suspects.size === 0 && empties.size === 0) return;
      // Each suspect as it was judged, before the peers' answers (see the deletion below).
      const judged = new Map<number, JudgedState>();
      for (const partition of suspects.keys()) {
        const replica = driver.groups.get(partition);
        if (replica !== undefined) judged.set(partition, judgedState(replica));
      }
      // Frozen suspects: a replica of R frozen for a merge into L that this node's L never applied
      // (it hosts no L: a move's learner added to R after the freeze, whole-node simulator seed
      // 58907). Once the merge applied R is gone everywhere else, so no peer reports R again; L's
      // leader reporting a range that covers R's says the merge applied (ranges are disjoint, and a
      // frozen R's keys go only to L), and R's replica here is a stray.
      // Not while this node hosts L: its L applies the merge entry itself (or installs a snapshot
      // that absorbs R, merge-apply.ts installed), and the merge reads R's store here (a voter of L
      // that applies the merge hosts R, asserted in MergeApplier.applyMerge). Deleting R first
      // stopped the node when its lagging L reached the entry (chaos seed 210: the node was cut off
      // while the merge committed, its R froze and found no leader, L's leader covered R's range).
      const frozen = new Map<number, { partition: number; start: number; end: number }>();
      for (const partition of suspects.keys()) {
        const mvcc = driver.groups.get(partition)?.mvcc;
        const range = mvcc?.hashRange;
        if (mvcc?.frozen === undefined || range === undefined || this.options.keepMergedAway === true) continue;
        if (driver.groups.has(mvcc.frozen.into)) continue;
        frozen.set(mvcc.frozen.into, { partition, ...range });
      }
      for (const [peer] of this.options.knownNodes) {
        // With a leaderless or healing suspect every peer is asked about every suspect (as before
        // the partitions filter: a peer may lead one this node thinks another leads).
        const asked = [...new Set(everyPeer.length > 0 ? [...suspects.keys(), ...empties] : (ask.get(peer) ?? []))].filter((partition) => suspects.has(partition) || empties.has(partition));
        const about = [...asked, ...[...frozen].filter(([, right]) => asked.includes(right.partition)).map(([left]) => left)];
        if (peer === id || about.length === 0 || !driver.transport.isReachable(peer)) continue;
        const info = await driver.transport.clusterInfo(peer, clock.wallMs() + CALL_TIMEOUT_MS, about).catch(() => undefined);
        // An empty replica whose partition was merged away: a move of a frozen R (allowed, see
        // replica-moves.ts keptForMerge) opened it here after R's freeze, and the merge applied
        // before R's leader sent it a snapshot (whole-node simulator seed 66828). R is gone from
        // every other node, so no leader ever writes to it; its start is a tombstone forever
        // (range-routing.ts: ids are never reused). It holds nothing (no snapshot, no entry), so
        // leaving it loses nothing; the loop task checks it is still empty.
        for (const merged of info?.mergedStarts ?? []) {
          const replica = empties.has(merged.start) ? driver.groups.get(merged.start) : undefined;
          if (replica === undefined) continue;
          empties.delete(merged.start);
          logger.info({ partition: merged.start, into: merged.into, from: peer }, 'an empty replica awaits a snapshot of a partition merged away: deleting it');
          driver.enqueue(() => {
            if (driver.groups.get(merged.start) === replica && replica.raw.voterList().length === 0) this.options.leave(merged.start, replica);
          });
        }
        for (const partition of info?.partitions ?? []) {
          const right = frozen.get(partition.id);
          if (right !== undefined && suspects.has(right.partition) && partition.leader === peer && partition.rangeStart <= right.start && partition.rangeEnd >= right.end) {
            suspects.delete(right.partition);
            const replica = driver.groups.get(right.partition);
            if (replica === undefined) continue;
            logger.info({ partition: right.partition, into: partition.id, leader: peer }, 'the partition was merged away (its left neighbour now owns its range): deleting our frozen replica');
            driver.enqueue(() => this.options.leave(right.partition, replica));
            continue;
          }
          const suspect = suspects.get(partition.id);
          // The peer leads and applied at least as far, in a term at least ours, so its
          // configuration is at least as new as the one that names this node a voter; or in an older
          // term but applied further: every configuration it applied was committed, so one after all
          // this replica applied leaves it out (a re-addition opens a new replica, PrepareReplica).
          // A removed voter that campaigned into a higher term before it learned its removal
          // committed (its log held the entry) was otherwise never left (simulator seed 1754).
          // Or a peer that follows (it hosts the partition: a term) and applied strictly further:
          // the same argument holds, and the leader may be a member this node never learned, whose
          // word it cannot ask for (simulator seed 94747: a source restarted from before a joiner
          // led its partition could not read the member table through its own leaderless replica
          // of the table's partition, so it never learned the joiner, and kept the stray for good).
          if (suspect === undefined || partition.appliedIndex < suspect.applied || partition.replicas.includes(id)) continue;
          if (partition.leader !== peer && !(suspect.namedVoter === true && partition.term > 0 && partition.appliedIndex > suspect.applied)) continue;
          if (partition.term < suspect.term && partition.appliedIndex === suspect.applied) continue;
          // A learner (or an outsider, above) is still wanted while the leader's configuration lists
          // it; a peer that does not report learners (an older server) cannot say, so it stays.
          if (suspect.learner && (partition.learners === undefined || partition.learners.includes(id))) continue;
          suspects.delete(partition.id);
          const replica = driver.groups.get(partition.id);
          if (replica === undefined) continue;
          // Unless the replica moved on while the peers answered (each may take CALL_TIMEOUT_MS):
          // one that heard from a leader since, or took entries, is no longer what was judged.
          const seen = judged.get(partition.id);
          driver.enqueue(() => {
            if (driver.groups.get(partition.id) !== replica || !sameAsJudged(replica, seen)) return;
            logger.info({ partition: partition.id, from: peer, leader: partition.leader, voters: partition.replicas }, "the partition's configuration no longer counts this node among the replicas: deleting ours");
            this.options.leave(partition.id, replica);
          });
        }
      }
      const unresolved = [...healing].filter((partition) => suspects.has(partition));
      if (unresolved.length > 0) logger.warn({ partitions: unresolved }, 'empty replicas opened for a skipped split still wait for their first snapshot, and no peer leads them');
    } finally {
      this.checking = false;
    }
  }

  /**
   * The next FOLLOWER_BATCH quiet followers (by id, after the cursor, wrapping round): replicas led
   * by another node that are quiesced, or learners (a learner runs no election timer, so one whose
   * leader stopped writing to it keeps that leader's id without being quiesced), or voters that do
   * not campaign: a move's target whose log is below its vote floor (an install a crash discarded)
   * times out without ever electing, so it keeps its leader's id too (simulator seed 82023).
   */
  private nextFollowers(): Set<number> {
    const { driver, id } = this.options;
    const quiet: number[] = [];
    for (const [partition, replica] of driver.groups) {
      const lead = replica.raw.lead;
      if (lead !== 0 && lead !== id && (replica.raw.quiesced || !replica.raw.isVoter(id) || !replica.raw.promotable)) quiet.push(partition);
    }
    if (quiet.length <= FOLLOWER_BATCH) return new Set(quiet);
    quiet.sort((a, b) => a - b);
    const from = quiet.findIndex((partition) => partition > this.followerCursor);
    const start = from < 0 ? 0 : from;
    const taken = [...quiet.slice(start, start + FOLLOWER_BATCH), ...quiet.slice(0, Math.max(0, start + FOLLOWER_BATCH - quiet.length))];
    this.followerCursor = taken[taken.length - 1] as number;
    return new Set(taken);
  }
}
