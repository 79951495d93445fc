/**
 * A StrayCheck (src/node/cluster/stray-check.ts) over a stand-in driver, run by hand: `check()` runs one
 * periodic check and lets its ClusterInfo calls settle; `left` lists the partitions it handed to
 * `leave`. Shared by the stray-check and split-heal tests.
 */
import { pino } from 'pino';
import type * as api from '../../src/api/node-api.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import type { TimerHandle } from '../../src/node/ports.js';
import type { RaftDriver } from '../../src/node/replica/raft-driver.js';
import { StrayCheck } from '../../src/node/cluster/stray-check.js';

export interface ManualStrayCheck {
  check(): Promise<void>;
  stop(): void;
  readonly left: number[];
  /** Each ClusterInfo call: the peer asked and the partitions named (empty: all). */
  readonly asked: Array<{ peer: number; partitions: readonly number[] }>;
}

export function manualStrayCheck(options: {
  readonly id: number;
  readonly nodes: readonly number[];
  readonly groups: Map<number, PartitionReplica>;
  /** What every peer answers to ClusterInfo (only the partitions asked about, as a node does). */
  readonly info: api.ClusterInfoResponse;
  readonly nowMs?: () => number;
  readonly healing?: () => ReadonlyMap<number, number>;
  /** Runs at each ClusterInfo call, before it answers (what happens while the peers are asked). */
  readonly onAsk?: (peer: number) => void;
}): ManualStrayCheck {
  const asked: Array<{ peer: number; partitions: readonly number[] }> = [];
  const clusterInfo = async (peer: number, _deadlineMs: number, partitions: readonly number[] = []): Promise<api.ClusterInfoResponse> => {
    asked.push({ peer, partitions: [...partitions] });
    options.onAsk?.(peer);
    const only = new Set(partitions);
    return partitions.length === 0 ? options.info : { ...options.info, partitions: options.info.partitions.filter((partition) => only.has(partition.id)) };
  };
  const driver = {
    groups: options.groups,
    closed: false,
    enqueue: (task: () => void) => task(),
    transport: { isReachable: () => true, clusterInfo },
  } as unknown as RaftDriver<PartitionReplica>;
  const nowMs = options.nowMs ?? (() => 0);
  let run: (() => void) | undefined;
  const left: number[] = [];
  const strays = new StrayCheck({
    driver,
    id: options.id,
    knownNodes: new Map(options.nodes.map((node) => [node, `node-${node}`])),
    clock: { monotonicMs: nowMs, wallMs: nowMs },
    timers: {
      every: (_ms: number, callback: () => void): TimerHandle => {
        run = callback;
        return { cancel: () => undefined };
      },
      after: () => ({ cancel: () => undefined }),
      soon: () => undefined,
    },
    logger: pino({ level: 'silent' }),
    leave: (partition) => void left.push(partition),
    ...(options.healing !== undefined && { healing: options.healing }),
  });
  strays.start();
  return {
    check: async () => {
      run?.();
      for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    },
    stop: () => strays.stop(),
    left,
    asked,
  };
}
