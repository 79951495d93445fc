/**
 * Scripts decide TTLs at their snapshot clock too (issue 16, "Time"): a script begun while a
 * rate-limit window is live and committed after it ended keeps the window's expiry (its `incr`
 * never makes the counter permanent), and a SERIALIZABLE script that read a lease that expired
 * before its commit conflicts and runs again at a new snapshot.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { defaultLimits } from '../../src/limits.js';
import type { Command, TxnIsolation } from '../../src/mvcc/index.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import type { ExecuteScriptRequest } from '../../src/api/node-api.js';
import { runScriptAtLeader, scriptBucket } from '../../src/node/service/script-runner.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { encodeTxnHandle } from '../../src/txn/txn-handle.js';

const S = 1_700_000_000_000;
const encoder = new TextEncoder();

describe('scripts and the partition clock', () => {
  let store: MvccStore;
  let index = 0;
  /** The leader's clock when a script's entry is proposed. */
  let commitAtMs = S;
  const apply = async (command: Command, nowMs = commitAtMs) => {
    const result = await store.apply(command, { index: ++index, nowMs });
    if (result.error !== undefined) throw result.error;
    return result;
  };
  /** Runs a script whose attempts begin at the given snapshot clocks, one per attempt. */
  const run = (request: ExecuteScriptRequest, beginAtMs: number[]) => {
    let attempt = 0;
    return runScriptAtLeader({
      request,
      limits: defaultLimits,
      partitionCount: 1,
      tenant: 'default',
      begin: async () => {
        const bucket = scriptBucket(request, defaultLimits);
        const isolation: TxnIsolation = request.isolation ?? 'snapshot';
        const startedAtMs = beginAtMs[Math.min(attempt++, beginAtMs.length - 1)]!;
        const handle = { partition: 0, partitionCount: 1, tenant: 'default', bucket, snapshotRevision: store.revision, isolation, startedAtMs };
        return { transaction: encodeTxnHandle(handle), partition: 0, bucket, snapshotRevision: store.revision, isolation, expiresAtMs: startedAtMs + 60_000 };
      },
      mvcc: store,
      propose: (command) => apply(command),
      deadlineMs: Date.now() + 10_000,
    });
  };

  beforeEach(async () => {
    store = await MvccStore.open({ engine: new MemoryEngine(), prefix: partitionKeyPrefix('mvcc', 0) });
    index = 0;
  });

  it('an incr begun inside a window and committed after it keeps the window expiry', async () => {
    await apply({ type: 'put', key: 'w/hits', value: encoder.encode('5'), ttlMs: 1_000 }, S);
    commitAtMs = S + 2_000;
    const response = await run({ script: 'return incr "w/hits"' }, [S + 500]);
    expect(response.resultJson).toBe('6');
    const stored = await store.get('w/hits', { nowMs: S + 500 });
    expect(stored.expiresAtMs).toBe(S + 1_000);
    expect((await store.get('w/hits', { nowMs: S + 2_000 })).found).toBe(false);
  });

  it('SERIALIZABLE: a lease read live that expires before the commit conflicts; the rerun sees it gone', async () => {
    await apply({ type: 'put', key: 'l/lease', value: encoder.encode('other'), ttlMs: 1_000 }, S);
    commitAtMs = S + 2_000;
    const script = 'let held = exists "l/lease"\nset "l/seen" held\nreturn held';
    // Attempt 1 begins at S + 500 (lease live) and commits at S + 2000 (lease expired): conflict.
    // Attempt 2 begins at S + 1500, when the lease had expired already.
    const response = await run({ script, isolation: 'serializable' }, [S + 500, S + 1_500]);
    expect(response.attempts).toBe(2);
    expect(response.resultJson).toBe('false');
  });
});
