/**
 * A StrayCheck (src/node/stray-check.ts) over a stand-in driver, run by hand: `check()` runs one
 * periodic check and lets its ClusterInfo calls settle; `left` lists the partitions it handed to
 * `leave`. Shared by the stray-check and split-heal tests.
 */
import { pino } from 'pino';
import type * as api from '../../src/node/api.js';
import type { PartitionReplica } from '../../src/node/partition-replica.js';
import type { TimerHandle } from '../../src/node/ports.js';
import type { RaftDriver } from '../../src/node/raft-driver.js';
import { StrayCheck } from '../../src/node/stray-check.js';

export interface ManualStrayCheck {
  check(): Promise<void>;
  stop(): void;
  readonly left: number[];
}

export function manualStrayCheck(options: {
  readonly id: number;
  readonly nodes: readonly number[];
  readonly groups: Map<number, PartitionReplica>;
  /** What every peer answers to ClusterInfo. */
  readonly info: api.ClusterInfoResponse;
  readonly nowMs?: () => number;
  readonly healing?: () => ReadonlyMap<number, number>;
}): ManualStrayCheck {
  const driver = {
    groups: options.groups,
    closed: false,
    enqueue: (task: () => void) => task(),
    transport: { isReachable: () => true, clusterInfo: async () => options.info },
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
  };
}
