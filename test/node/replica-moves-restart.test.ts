/**
 * A move's target that restarts keeps a replica whose applied configuration never named it
 * (replica-moves.ts start()). Its first snapshot may be older than its addition (one the leader held
 * for another follower): before the fix, the set of replicas a move opened here did not survive a
 * restart, so the once-a-second sweep deleted such a replica as "moved away" while the group counted
 * it a voter (found by simulator seed 321, whose schedule has since moved; the control flag
 * movedAwayAfterRestart restores the old behaviour). A replica that did name this node and no
 * longer does (it applied its removal) is still deleted by the sweep.
 */
import type { Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { limits } from '../../src/limits.js';
import type { NodeTestBugs } from '../../src/node/node-config.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import type { RaftDriver } from '../../src/node/replica/raft-driver.js';
import { ReplicaMoves } from '../../src/node/cluster/replica-moves.js';
import type { ReplicaStore } from '../../src/node/apply/replica-store.js';
import type { StorageEngine } from '../../src/storage/storage-engine.js';

const SELF = 5;

function replicaNamedBefore(wasMember: boolean): PartitionReplica {
  return {
    raw: { isMember: () => false, wasMember, status: () => ({ confState: { voters: [2, 3, 4], learners: [] } }), lead: 0 },
    // Not frozen for a merge, not merged away (a frozen R is kept for its merge: keptForMerge).
    mvcc: { frozen: undefined, mergedInto: undefined },
    exporting: false,
    compactingStorage: false,
    failAll: () => undefined,
  } as unknown as PartitionReplica;
}

/** Opens ReplicaMoves over one replica (as after a restart), runs one sweep, and says whether it deleted it. */
function sweepAfterRestart(replica: PartitionReplica, testBugs?: NodeTestBugs): { left: string[] } {
  const left: string[] = [];
  const periodic: Array<{ ms: number; run: () => void }> = [];
  const groups = new Map([[1, replica]]);
  const logger = { info: (_: unknown, msg: string) => void left.push(msg), warn: () => undefined, debug: () => undefined, error: () => undefined } as unknown as Logger;
  const moves = new ReplicaMoves({
    id: SELF,
    partitions: 2,
    replicationFactor: 3,
    limits,
    knownNodes: new Map(),
    driver: { groups, enqueue: (task: () => void) => task(), removeGroup: (p: number) => groups.delete(p) } as unknown as RaftDriver<PartitionReplica>,
    store: { deleteOps: async () => [] } as unknown as ReplicaStore,
    engine: { write: async () => undefined } as unknown as StorageEngine,
    clock: { wallMs: () => 0, monoMs: () => 0 } as never,
    timers: { every: (ms: number, run: () => void) => (periodic.push({ ms, run }), { cancel: () => undefined }), after: () => ({ cancel: () => undefined }) } as never,
    logger,
    notLeader: (partition) => new AtollError('NOT_LEADER', `partition ${partition}`),
    ...(testBugs !== undefined && { testBugs }),
  });
  moves.start();
  periodic.find((timer) => timer.ms === 1_000)?.run();
  moves.stop();
  return { left: left.filter((msg) => msg.startsWith('this node left the partition')) };
}

describe('replica moves after a restart', () => {
  it('keep a replica whose configuration never named this node (a move target with an older first snapshot)', () => {
    expect(sweepAfterRestart(replicaNamedBefore(false)).left).toEqual([]);
    // The old behaviour deletes it: the test fails without the fix.
    expect(sweepAfterRestart(replicaNamedBefore(false), { movedAwayAfterRestart: true }).left).toHaveLength(1);
  });

  it('still delete a replica whose configuration named this node and no longer does', () => {
    expect(sweepAfterRestart(replicaNamedBefore(true)).left).toHaveLength(1);
  });
});
