/**
 * The per-group jobs that run beside the node loop (raft-driver.ts): log compaction records,
 * snapshot exports for followers, and bounded physical compaction steps. The loop calls these for
 * the groups it visited in an iteration (GroupActivity), never for all groups at once.
 */
import type { Logger } from 'pino';
import { AtollError } from '../../errors.js';
import type { WriteOperation } from '../../storage/storage-engine.js';
import type { NodeMetrics } from '../metrics.js';
import type { NodeClock } from '../ports.js';
import type { Snapshot } from '../../raft/types.js';

/** What the jobs need of a group (raft-driver.ts's DrivenGroup has it all). */
export interface JobGroup {
  readonly id: number;
  /** True while exportSnapshot runs (one export per group at a time). */
  exporting: boolean;
  needsCompaction(): boolean;
  compactLog(): WriteOperation[];
  needsSnapshotBuild(): boolean;
  exportSnapshot(): Promise<Snapshot | undefined>;
  adoptSnapshot(snapshot: Snapshot): WriteOperation[];
  /** True while a storage compaction step runs beside the loop (one per group at a time). */
  compactingStorage?: boolean;
  /** Whether a physical compaction step is due (state-machine history below its floor). */
  needsStorageCompaction?(): boolean;
  /** One bounded physical compaction step; resolves true when another may follow at once. */
  compactStorageStep?(): Promise<boolean>;
}

export interface GroupJobsHost {
  readonly logger: Logger;
  readonly clock: NodeClock;
  readonly metrics: NodeMetrics;
  isClosed(): boolean;
  /** Log records for the next iteration's synced write. */
  addLogOps(ops: WriteOperation[]): void;
  /** Queues a loop task. */
  enqueue(task: () => void): void;
  /** Marks a group for the next iteration and makes sure one runs. */
  revisit(group: number): void;
}

/**
 * Starts the jobs due for one group. A snapshot export runs beside the loop (the group keeps
 * ticking, replicating and applying); when it finishes, a loop task adopts it, and its log records
 * go into the next iteration's synced write. A physical compaction step is bounded
 * (MvccStore.compactStorageStep), one per group at a time, and the next one starts in a later
 * iteration, so the loop is never held by a whole pass.
 */
export function startGroupJobs(group: JobGroup, host: GroupJobsHost): void {
  startStorageCompaction(group, host);
  if (group.needsCompaction()) host.addLogOps(group.compactLog());
  if (group.exporting || !group.needsSnapshotBuild()) return;
  group.exporting = true;
  const { logger, clock, metrics } = host;
  const exportStartedMs = clock.monotonicMs();
  void group
    .exportSnapshot()
    .then((snapshot) => {
      if (snapshot === undefined) return;
      metrics.snapshot('exported', (clock.monotonicMs() - exportStartedMs) / 1000);
      logger.info({ partition: group.id, index: snapshot.meta.index, bytes: snapshot.data.length }, 'exported a snapshot for a follower');
      host.enqueue(() => host.addLogOps(group.adoptSnapshot(snapshot)));
    })
    .catch((error: unknown) => {
      // An import from the leader replaced the state under the export: the next one will do.
      if (error instanceof AtollError && error.code === 'UNAVAILABLE') logger.debug({ err: error, partition: group.id }, 'snapshot export overtaken');
      else logger.error({ err: error, partition: group.id }, 'snapshot failed');
    })
    .finally(() => {
      group.exporting = false;
      host.revisit(group.id);
    });
}

function startStorageCompaction(group: JobGroup, host: GroupJobsHost): void {
  if (group.compactStorageStep === undefined || group.compactingStorage === true || group.needsStorageCompaction?.() !== true) return;
  const { logger } = host;
  group.compactingStorage = true;
  let more = false;
  void group
    .compactStorageStep()
    .then((again) => {
      more = again;
    })
    .catch((error: unknown) => {
      if (host.isClosed()) logger.debug({ err: error, partition: group.id }, 'storage compaction step stopped by shutdown');
      else logger.error({ err: error, partition: group.id }, 'storage compaction step failed');
    })
    .finally(() => {
      group.compactingStorage = false;
      if (more) host.revisit(group.id);
    });
}
