/**
 * Scripts name keys at run time, so they are mapped into the caller's tenant where they run: every
 * key and prefix a script uses (literal, computed, from a parameter, escaped), its routing bucket
 * and the bucket it names must not reach another tenant's internal keys or the system tenant's.
 * One partition (count 1) so the partition check never hides the tenant check.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { AtollError } from '../../src/errors.js';
import { defaultLimits } from '../../src/limits.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import type { Command } from '../../src/mvcc/index.js';
import type { ExecuteScriptRequest } from '../../src/node/api.js';
import { runScriptAtLeader, scriptBucket } from '../../src/node/script-runner.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { encodeTxnHandle } from '../../src/txn/txn-handle.js';

const encoder = new TextEncoder();
const victims: Record<string, string> = {
  '\u0000acme\u0000users/alice': 'acme-secret',
  '\u0000system\u0000tokens/t1': 'token-record',
  'users/bob': 'default-bob',
};

describe('scripts at the leader, per tenant', () => {
  let store: MvccStore;
  let index = 0;
  const apply = async (command: Command, requestId?: string) => {
    const result = await store.apply(command, { index: ++index, nowMs: Date.now(), ...(requestId !== undefined && { requestId }) });
    if (result.error !== undefined) throw result.error;
    return result;
  };
  const run = (tenant: string, request: ExecuteScriptRequest) =>
    runScriptAtLeader({
      request,
      limits: defaultLimits,
      partitionCount: 1,
      tenant,
      begin: async () => {
        const bucket = `${tenant === 'default' ? '' : `\u0000${tenant}\u0000`}${scriptBucket(request, defaultLimits)}`;
        const handle = { partition: 0, partitionCount: 1, tenant, bucket, snapshotRevision: store.revision, isolation: 'snapshot' as const, startedAtMs: Date.now() };
        return { transaction: encodeTxnHandle(handle), partition: 0, bucket, snapshotRevision: handle.snapshotRevision, isolation: 'snapshot', expiresAtMs: Date.now() + 10_000 };
      },
      mvcc: store,
      propose: (command, requestId) => apply(command, requestId),
      deadlineMs: Date.now() + 10_000,
    });
  const codeOf = (promise: Promise<unknown>): Promise<string | undefined> =>
    promise.then(
      () => undefined,
      (error: AtollError) => error.code,
    );
  const intact = async (): Promise<void> => {
    for (const [key, value] of Object.entries(victims)) {
      const read = await store.get(key, { nowMs: Date.now() });
      expect(new TextDecoder().decode(read.value), key).toBe(value);
    }
    const keys = (await store.getByPrefix('users/', { nowMs: Date.now(), limit: 100 })).items.map((item) => item.key);
    expect(keys).toEqual(['users/bob']);
  };

  beforeEach(async () => {
    store = await MvccStore.open({ engine: new MemoryEngine(), prefix: partitionKeyPrefix('mvcc', 0) });
    index = 0;
    await apply({ type: 'batch', writes: Object.entries(victims).map(([key, value]) => ({ type: 'put' as const, key, value: encoder.encode(value) })) });
  });

  it("refuses U+0000 in a literal prefix, key or bucket (the issue's escape into acme and the system tenant)", async () => {
    for (const tenant of ['default', 'globex']) {
      // Before: the default tenant got acme's keys and values, and every token record.
      expect(await codeOf(run(tenant, { script: 'return get by prefix "\\0acme\\0users"' }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'return get by prefix "\\u0000system\\u0000tokens"' }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'return get by prefix "\\0system\\0tokens"', bucket: 'users' }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'return get "\\0acme\\0users/alice"', bucket: 'users' }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'return get "users/\\0inside"', bucket: 'users' }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'return 1', bucket: '\u0000acme\u0000users' }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'set "\\0acme\\0users/alice" "stolen"\nreturn 1', bucket: 'users' }))).toBe('INVALID_KEY');
    }
    await intact();
  });

  it('refuses U+0000 in keys and prefixes computed at run time, from parameters, or escaped', async () => {
    for (const tenant of ['default', 'globex']) {
      const bucket = 'users';
      expect(await codeOf(run(tenant, { script: 'let p = "\\0acme" + "\\0users"\nreturn get by prefix p', bucket }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'return get by prefix (concat("\\u{0}system", "\\u0000", "tokens"))', bucket }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'return get by prefix @p', params: { p: JSON.stringify('\u0000acme\u0000users') } }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'return get by prefix @p', bucket, params: { p: JSON.stringify('\u0000acme\u0000users') } }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'return get (@k)', bucket, params: { k: JSON.stringify('\u0000acme\u0000users/alice') } }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'set ("\\0acme\\0" + "users/alice") "stolen"\nreturn 1', bucket }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'delete (concat("\\0system\\0", "tokens/t1"))\nreturn 1', bucket }))).toBe('INVALID_KEY');
      expect(await codeOf(run(tenant, { script: 'incr (concat("users/", "\\0")) by 1\nreturn 1', bucket }))).toBe('INVALID_KEY');
    }
    await intact();
  });

  it("reads and writes only the caller's own keys", async () => {
    const mine = await run('default', { script: 'return get by prefix "users"' });
    expect(JSON.parse(mine.resultJson)).toEqual([expect.objectContaining({ key: 'users/bob', value: 'default-bob' })]);
    const globex = await run('globex', { script: 'set "users/carol" "globex"\nreturn get by prefix "users"' });
    expect(JSON.parse(globex.resultJson)).toEqual([expect.objectContaining({ key: 'users/carol', value: 'globex' })]);
    expect((await store.get('\u0000globex\u0000users/carol', { nowMs: Date.now() })).found).toBe(true);
    await intact();
  });

  it("routes by a user bucket: U+0000 in the request's bucket or the routing key is refused", () => {
    expect(scriptBucket({ script: 'return 1', bucket: 'users/x' }, defaultLimits)).toBe('users');
    for (const request of [
      { script: 'return 1', bucket: 'us\u0000ers' },
      { script: 'return get "\\0acme\\0users/alice"' },
      { script: 'return get by prefix @p', params: { p: JSON.stringify('\u0000system\u0000tokens') } },
    ]) {
      expect(() => scriptBucket(request, defaultLimits)).toThrowError(expect.objectContaining({ code: 'INVALID_KEY' }) as Error);
    }
  });
});
