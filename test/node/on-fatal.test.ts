/**
 * NodeEnvironment.onFatal: a node that stops on a fatal error tells the environment instead of
 * setting process.exitCode (a simulator runs many nodes in one process), and still closes.
 */
import assert from 'node:assert/strict';
import { describe, expect, it } from 'vitest';
import { AtollNode } from '../../src/node/atoll-node.js';
import { systemClock, systemTimers } from '../../src/node/ports.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { driverOf, loneNodeConfig, silentTransport } from './in-process-cluster.js';

describe('NodeEnvironment.onFatal', () => {
  it('is told of the fatal error; process.exitCode stays as it was; the node closes', async () => {
    const exitCodeBefore = process.exitCode;
    const fatal: Error[] = [];
    const node = await AtollNode.open(loneNodeConfig('on-fatal'), {
      transport: () => silentTransport(),
      engine: new MemoryEngine(),
      clock: systemClock,
      timers: systemTimers,
      random: new Rng(5),
      onFatal: (error) => fatal.push(error),
    });
    try {
      const driver = driverOf(node);
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
