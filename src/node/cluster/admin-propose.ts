/**
 * Proposes one entry to a partition this node leads and waits for its apply, within a deadline:
 * the shared last step of the admin calls that change a partition's shape (split-admin.ts,
 * merge-admin.ts). The proposal runs as a loop task (only the loop touches a RawNode).
 */
import { AtollError } from '../../errors.js';
import type { ApplyResult } from '../../mvcc/index.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock, NodeTimers } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';

export interface ProposeHost {
  readonly driver: RaftDriver<PartitionReplica>;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
}

/** What the split and merge admins both ask of the node. */
export interface PartitionAdminHost extends ProposeHost {
  /** The cluster's initial partition count: ids below it are the equal table's. */
  readonly initialPartitions: number;
  /** True while a replica move of the partition is coordinated here. */
  moveInProgress(partition: number): boolean;
  /** Whether the node's partition table knows the id (range-routing.ts). */
  isKnown(partition: number): boolean;
  /** NOT_LEADER naming the partition's leader as this node knows it (router.ts). */
  notLeader(partition: number): AtollError;
}

/**
 * Resolves with the entry's apply result; rejects with the replica's NOT_LEADER when the proposal
 * is refused, or DEADLINE_EXCEEDED (`what` names the step) when it did not apply in time, in
 * which case the entry may still commit and apply later.
 */
export function proposeAndWait(host: ProposeHost, replica: PartitionReplica, payload: Uint8Array, deadlineMs: number, what: string): Promise<ApplyResult> {
  const { driver, clock, timers } = host;
  return new Promise<ApplyResult>((resolve, reject) => {
    let settled = false;
    const timer = timers.after(Math.max(0, deadlineMs - clock.wallMs()), () => {
      if (settled) return;
      settled = true;
      reject(new AtollError('DEADLINE_EXCEEDED', `partition ${replica.id}: ${what} did not apply within the deadline; check the partition table`));
    });
    const finish = (action: () => void): void => {
      if (settled) return;
      settled = true;
      timer.cancel();
      action();
    };
    driver.enqueue(() => {
      try {
        replica.propose(payload, { resolve: (result) => finish(() => resolve(result)), reject: (error) => finish(() => reject(error)) });
      } catch (error) {
        finish(() => reject(replica.notLeaderError(error)));
      }
    });
  });
}
