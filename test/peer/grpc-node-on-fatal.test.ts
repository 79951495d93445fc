/**
 * The production wiring of a node (issue 18, idle wakeups): the server learns of a node's fatal stop
 * at once (src/bin/atoll-server.ts shuts down on it; openGrpcNode passes its onFatal to the node),
 * so no timer polls node.failure; and the node's periodic jobs share one interval (shared-ticker.ts).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { openGrpcNode } from '../../src/peer/grpc-node.js';
import { driverOf, loneNodeConfig } from '../node/in-process-cluster.js';

describe('openGrpcNode', () => {
  it('arms one interval for all of the node\'s periodic jobs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'atoll-grpc-ticker-'));
    const intervals = vi.spyOn(globalThis, 'setInterval');
    let opened: Awaited<ReturnType<typeof openGrpcNode>> | undefined;
    try {
      opened = await openGrpcNode(loneNodeConfig('grpc-ticker', { peers: new Map([[1, '127.0.0.1:1']]), dataDir: dir }));
      // The tick (20 ms) for everything: without the shared ticker also the lease round (100 ms),
      // maintenance (1 s, two), replica-moves' sweep (1 s) and stranded check (2 s), and the
      // member-table refresh (1 s): 7 intervals.
      expect(intervals.mock.calls.map((call) => call[1])).toEqual([20]);
    } finally {
      intervals.mockRestore();
      await opened?.node.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('tells the caller when the node stops on a fatal error, and leaves process.exitCode to it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'atoll-grpc-fatal-'));
    const exitCodeBefore = process.exitCode;
    const fatal: string[] = [];
    const { node } = await openGrpcNode(
      loneNodeConfig('grpc-fatal', { peers: new Map([[1, '127.0.0.1:1']]), dataDir: dir }),
      undefined,
      (error) => fatal.push(error.message),
    );
    try {
      const driver = driverOf(node);
      driver.enqueue(() => assert.fail('an invariant broke'));
      for (let attempt = 0; attempt < 200 && fatal.length === 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(fatal).toEqual(['an invariant broke']);
      expect(process.exitCode).toBe(exitCodeBefore);
    } finally {
      process.exitCode = exitCodeBefore;
      await node.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
