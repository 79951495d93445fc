/**
 * Snapshot imports beside the node loop (issue 16, "Snapshot install"): when a group's Ready
 * carries a snapshot from its leader, the import (many bounded engine writes, then one synced batch
 * that also records the snapshot in the Raft log) runs while the loop goes on driving every other
 * group; the Ready is finished (staged, sent, applied, advanced) by a later iteration. Its one job
 * is the bookkeeping of those imports for RaftDriver.
 *
 * Invariant (the Ready contract: nothing touches a RawNode between ready() and advance()): from
 * claim() until the iteration that advances the import's Ready, the group is `installing`, and the
 * driver skips its ticks, read rounds, Readys, inbound messages (dropped: Raft resends), log and
 * storage compaction and snapshot builds.
 *
 * Invariant (write order): an import starts (startClaimed) only after the iteration that claimed
 * it has written its batch, which holds every log record the group staged before (a compaction's
 * snapshot point, an adopted export); while it is installing the group stages none. So no older
 * record of its log can reach the disk after the import's final batch and overwrite the snapshot
 * that batch records.
 */
import type { Logger } from 'pino';
import type { Ready } from '../../raft/rawnode.js';
import type { NodeMetrics } from '../metrics.js';
import type { NodeClock } from '../ports.js';

/** What an import needs of a group (DrivenGroup has it). */
export interface ImportingGroup {
  readonly id: number;
  /**
   * True while a snapshot from the leader is imported beside the loop: set by begin(), cleared by
   * the driver once it has advanced that Ready.
   */
  installing?: boolean;
  /** Whether a snapshot from the leader is imported beside the loop (else stage() installs it). */
  readonly importsBesideLoop?: boolean;
  /**
   * Starts importing the Ready's snapshot beside the loop; resolves when the import, whose final
   * synced batch records the snapshot in the Raft log, is done.
   */
  beginSnapshotImport?(ready: Ready): Promise<void>;
}

export interface SnapshotImportHost {
  readonly logger: Logger;
  readonly clock: NodeClock;
  readonly metrics: NodeMetrics;
  /** Queues a loop task. */
  enqueue(task: () => void): void;
  /** Whether the node is closing (an import failing then is no news). */
  closing(): boolean;
  /** Stops the node (memory ahead of disk). */
  fail(error: unknown): void;
}

export class SnapshotImports<G extends ImportingGroup> {
  /** Readys whose snapshot is imported, for the next iteration to finish. */
  private finished: Array<{ group: G; ready: Ready }> = [];
  /** Readys claimed in this iteration, whose import starts after its write (startClaimed). */
  private claimed: Array<{ group: G; ready: Ready }> = [];
  private runningCount = 0;

  constructor(private readonly host: SnapshotImportHost) {}

  /** Imports running now (close waits for them). */
  get running(): number {
    return this.runningCount;
  }

  /** The Readys whose import finished since the last call (each returned once). */
  takeFinished(): Array<{ group: G; ready: Ready }> {
    const finished = this.finished;
    this.finished = [];
    return finished;
  }

  /**
   * Claims `group`'s Ready, whose snapshot is imported beside the loop: marks the group installing
   * and returns true (the import starts at startClaimed). False when the Ready has no snapshot or
   * the group installs it in stage() (the Ready then goes through this iteration as usual).
   */
  claim(group: G, ready: Ready): boolean {
    if (ready.snapshot === undefined || group.importsBesideLoop !== true || group.beginSnapshotImport === undefined) return false;
    group.installing = true;
    this.claimed.push({ group, ready });
    return true;
  }

  /** Starts the claimed imports; call once the iteration's batch is written (see the invariants). */
  startClaimed(): void {
    const claimed = this.claimed;
    this.claimed = [];
    for (const { group, ready } of claimed) this.start(group, ready);
  }

  private start(group: G, ready: Ready): void {
    const snapshot = ready.snapshot;
    if (snapshot === undefined || group.beginSnapshotImport === undefined) return;
    // Started synchronously: a throw (a broken invariant) fails the iteration, which stops the node.
    const importing = group.beginSnapshotImport(ready);
    const { logger, clock, metrics } = this.host;
    logger.info({ partition: group.id, index: snapshot.meta.index, bytes: snapshot.data.length }, 'installing a snapshot from the leader beside the loop');
    const startedMs = clock.monotonicMs();
    this.runningCount++;
    importing
      .then(
        () => {
          const tookMs = clock.monotonicMs() - startedMs;
          metrics.snapshot('installed', tookMs / 1000);
          logger.info({ partition: group.id, index: snapshot.meta.index, tookMs: Math.round(tookMs) }, 'installed a snapshot from the leader');
          this.host.enqueue(() => this.finished.push({ group, ready }));
        },
        (error: unknown) => {
          // The Raft core adopted the snapshot in memory, the disk does not have it: stop, as for
          // a failed synced write; the restart reconciles the interrupted import.
          if (this.host.closing()) logger.debug({ err: error, partition: group.id }, 'snapshot import stopped by shutdown');
          else this.host.fail(error);
        },
      )
      .finally(() => {
        this.runningCount--;
      });
  }
}
