/**
 * NodeEnvironment.onFatal: a node that stops on a fatal error tells the environment instead of
 * setting process.exitCode (a simulator runs many nodes in one process), and still closes.
 */
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { AtollNode } from '../../src/node/atoll-node.js';
import type { PartitionReplica } from '../../src/node/partition-replica.js';
import { systemClock, systemTimers } from '../../src/node/ports.js';
import type { RaftDriver } from '../../src/node/raft-driver.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';

describe('NodeEnvironment.onFatal', () => {
  it('is told of the fatal error; process.exitCode stays as it was; the node closes', async () => {
    const exitCodeBefore = process.exitCode;
    const fatal: Error[] = [];
    const node = await AtollNode.open(
      {
        id: 1,
        peers: new Map([[1, 'a:1']]),
        dataDir: '/nonexistent/atoll-on-fatal',
        partitions: 1,
        replicationFactor: 1,
        tickMs: 20,
        electionTicks: 10,
        retentionRevisions: 1_000,
        snapshotEveryEntries: 1_000,
        peerSecrets: ['p'.repeat(32)],
        logger: pino({ level: 'silent' }),
      },
      {
        transport: () => ({
          send: () => undefined,
          isReachable: () => true,
          forward: () => Promise.reject(new AtollError('UNAVAILABLE', 'no peers')),
          clusterInfo: () => Promise.reject(new AtollError('UNAVAILABLE', 'no peers')),
          close: () => undefined,
        }),
        engine: new MemoryEngine(),
        clock: systemClock,
        timers: systemTimers,
        random: new Rng(5),
        onFatal: (error) => fatal.push(error),
      },
    );
    try {
      const driver = (node as unknown as { driver: RaftDriver<PartitionReplica> }).driver;
      driver.enqueue(() => assert.fail('an invariant broke'));
      for (let attempt = 0; attempt < 100 && !driver.closed; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(fatal.map((error) => error.message)).toEqual(['an invariant broke']);
      expect(process.exitCode).toBe(exitCodeBefore);
      expect(driver.closed).toBe(true);
    } finally {
      process.exitCode = exitCodeBefore;
      await node.close();
    }
  });
});
