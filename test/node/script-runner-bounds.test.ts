/**
 * Bounds of scripts at the leader (src/node/service/script-runner.ts): re-runs after a conflict wait in a
 * bounded line per partition, and a read-only script's result is bounded like a writing one's.
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { makeLimits } from '../../src/limits.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { runScriptAtLeader } from '../../src/node/service/script-runner.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { encodeTxnHandle } from '../../src/txn/txn-handle.js';
import type { ExecuteScriptRequest } from '../../src/api/node-api.js';

async function leader(options: { limits: Parameters<typeof makeLimits>[0]; propose: () => Promise<never> }) {
  const mvcc = await MvccStore.open({ engine: new MemoryEngine(), prefix: partitionKeyPrefix('mvcc', 0) });
  const limits = makeLimits(options.limits);
  return (request: ExecuteScriptRequest) =>
    runScriptAtLeader({
      request,
      limits,
      partitionCount: 1,
      tenant: 'default',
      begin: async () => {
        const startedAtMs = Date.now();
        const handle = { tenant: 'default', partition: 0, partitionCount: 1, bucket: 'k', snapshotRevision: mvcc.revision, isolation: 'snapshot' as const, startedAtMs };
        return { transaction: encodeTxnHandle(handle), partition: 0, bucket: 'k', snapshotRevision: mvcc.revision, isolation: 'snapshot', expiresAtMs: startedAtMs + 60_000 };
      },
      mvcc,
      propose: options.propose,
      deadlineMs: Date.now() + 5_000,
    });
}

describe('scripts at the leader', () => {
  it('bounds the scripts waiting to re-run after a conflict (OVERLOADED past it)', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let proposals = 0;
    const run = await leader({
      limits: { maxPendingRequestsPerPartition: 2, maxPendingRequestsPerNode: 20, maxForwardsInFlight: 2, maxStreamRequestsInFlight: 2 },
      // Every commit conflicts; the second attempt of the first script holds its turn until the gate opens.
      propose: async () => {
        if (++proposals > 6) await gate;
        throw new AtollError('TXN_CONFLICT', 'conflict');
      },
    });
    const outcomes = Promise.allSettled(Array.from({ length: 6 }, () => run({ script: 'set "k/a" "1"\nreturn 1' })));
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    const settled = await outcomes;
    const codes = settled.map((result) => (result.status === 'rejected' ? (result.reason as AtollError).code : 'ok'));
    // Six first attempts conflict; two re-runs may wait, the other four are refused at once.
    expect(codes.filter((code) => code === 'OVERLOADED')).toHaveLength(4);
  });

  it("bounds a read-only script's result like a writing one's", async () => {
    const run = await leader({ limits: {}, propose: async () => Promise.reject(new Error('a read-only script proposes nothing')) });
    const params = { s: JSON.stringify('x'.repeat(1_000_000)) };
    const error = await run({ script: 'return [@s, @s, @s]', params, bucket: 'k' }).catch((caught: unknown) => caught as AtollError);
    expect(error).toMatchObject({ code: 'SCRIPT_LIMIT', details: { maxResultBytes: 2 * 1024 * 1024 } });
    const small = await run({ script: 'return [@s, @s]', params, bucket: 'k' });
    expect(small.resultJson.length).toBe(2 * 1_000_002 + 3);
  });
});
