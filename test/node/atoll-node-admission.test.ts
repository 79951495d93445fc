/**
 * The admission bounds wired into a real AtollNode (one node, one partition, in this process):
 * client requests past the per-partition bound fail at once with OVERLOADED and change nothing,
 * and the bound frees up as requests are answered.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import type { AtollNode } from '../../src/node/atoll-node.js';
import { openGrpcNode } from '../../src/peer/grpc-node.js';

let node: AtollNode;
const context = (): { deadlineMs: number } => ({ deadlineMs: Date.now() + 5_000 });

beforeAll(async () => {
  node = (await openGrpcNode({
    id: 1,
    peers: new Map([[1, '127.0.0.1:1']]),
    dataDir: mkdtempSync(join(tmpdir(), 'atoll-admission-')),
    partitions: 1,
    replicationFactor: 1,
    tickMs: 10,
    electionTicks: 5,
    // Reads that wait (for a ReadIndex round) hold an admission slot; a lease read answered at
    // once holds none (src/node/replica/read-barrier.ts), so this test takes the ReadIndex path throughout.
    readMode: 'safe',
    retentionRevisions: 1_000,
    snapshotEveryEntries: 1_000,
    limits: { maxPendingRequestsPerPartition: 5, maxPendingRequestsPerNode: 5, maxForwardsInFlight: 5, maxStreamRequestsInFlight: 4 },
    logger: pino({ level: 'silent' }),
  })).node;
  for (let attempt = 0; attempt < 200 && !node.allPartitionsLed(); attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
}, 20_000);

afterAll(async () => {
  await node?.close();
});

describe('admission at a node', () => {
  it('refuses client writes and reads past the bound with OVERLOADED, at once, and admits again once they are answered', async () => {
    const writes = await Promise.allSettled(Array.from({ length: 20 }, (_, index) => node.put({ key: `a/${index}`, value: new Uint8Array([index]) }, context())));
    const refused = writes.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
    expect(writes.filter((result) => result.status === 'fulfilled')).toHaveLength(5);
    expect(refused).toHaveLength(15);
    for (const result of refused) {
      expect(result.reason).toBeInstanceOf(AtollError);
      expect(result.reason).toMatchObject({ code: 'OVERLOADED', grpcStatus: 'RESOURCE_EXHAUSTED' });
    }
    // The refused writes changed nothing; the admitted ones applied.
    let found = 0;
    for (let index = 0; index < 20; index++) if ((await node.get({ key: `a/${index}` }, context())).found) found++;
    expect(found).toBe(5);
    // Linearizable reads count the same way.
    const reads = await Promise.allSettled(Array.from({ length: 20 }, () => node.get({ key: 'a/0' }, context())));
    expect(reads.filter((result) => result.status === 'fulfilled')).toHaveLength(5);
    // Everything answered: the whole bound is free again.
    const again = await Promise.allSettled(Array.from({ length: 5 }, (_, index) => node.put({ key: `b/${index}`, value: new Uint8Array([1]) }, context())));
    expect(again.every((result) => result.status === 'fulfilled')).toBe(true);
  });
});
