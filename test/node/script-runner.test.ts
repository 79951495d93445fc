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
import type { ExecuteScriptRequest } from '../../src/api/node-api.js';
import { runScriptAtLeader, scriptBucket } from '../../src/node/service/script-runner.js';
import { ScriptScheduler } from '../../src/node/service/script-scheduler.js';
import { compactionFloor } from '../../src/node/service/snapshot-pins.js';
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
  const run = (tenant: string, request: ExecuteScriptRequest, scheduler?: ScriptScheduler) =>
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
      ...(scheduler !== undefined && { scheduler }),
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

  describe('in turns of the event loop (issue 33, finding 2)', () => {
    /** A scheduler whose turns are ours to run, with turns of 0 ms: a script pauses before nearly every step. */
    const loop = (scriptLimits: Partial<typeof defaultLimits> = {}) => {
      const turns: Array<() => void> = [];
      const scheduler = new ScriptScheduler({ limits: { ...defaultLimits, ...scriptLimits }, nowMs: () => 0, nextTurn: (work) => void turns.push(work), turnMs: 0 });
      const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
      return {
        scheduler,
        /** Lets the scripts run until they wait for a turn. */
        settle,
        get waiting(): boolean {
          return turns.length > 0;
        },
        /** Runs turns until `running` settles (at most 10,000). */
        async drive<T>(running: Promise<T>): Promise<T> {
          let settled = false;
          const outcome = running.then(
            (value) => ({ value }),
            (error: unknown) => ({ error }),
          );
          void outcome.then(() => (settled = true));
          for (let turn = 0; turn < 10_000 && !settled; turn++) {
            for (const work of turns.splice(0)) work();
            await settle();
          }
          const result = await outcome;
          if ('error' in result) throw result.error;
          return result.value;
        },
      };
    };

    it('reads one snapshot however long it pauses: writes applied meanwhile are not seen, the commit conflicts and the script runs again', async () => {
      await apply({ type: 'put', key: 'users/x', value: encoder.encode('1') });
      const snapshotRevision = store.revision;
      const turns = loop();
      const running = run('default', { script: 'let a = get "users/x"\nset "users/y" a\nset "users/x" "script"\nreturn a["value"]' }, turns.scheduler);
      await turns.settle();
      expect(turns.waiting).toBe(true);
      // Raft applies while the script is paused; no compaction may pass the script's snapshot.
      await apply({ type: 'put', key: 'users/x', value: encoder.encode('2') });
      expect(compactionFloor(store, store.revision)).toBe(snapshotRevision);
      const response = await turns.drive(running);
      // The first run read "1" at its snapshot and lost to the write; the second read "2".
      expect(response).toMatchObject({ resultJson: '"2"', committed: true, attempts: 2 });
      expect(new TextDecoder().decode((await store.get('users/y', { nowMs: Date.now() })).value)).toBe('2');
      expect(new TextDecoder().decode((await store.get('users/x', { nowMs: Date.now() })).value)).toBe('script');
      expect(compactionFloor(store, store.revision)).toBe(store.revision);
      expect(turns.scheduler.runningScripts).toBe(0);
    });

    it('runs again when a compaction proposed before its pin passes its snapshot while it pauses', async () => {
      const turns = loop();
      const running = run('default', { script: 'let a = get "users/bob"\nlet b = get "users/nobody"\nreturn a["value"]' }, turns.scheduler);
      await turns.settle();
      await apply({ type: 'put', key: 'users/x', value: encoder.encode('1') });
      await apply({ type: 'compact', belowRevision: store.revision });
      expect(await turns.drive(running)).toMatchObject({ resultJson: '"default-bob"', attempts: 2 });
    });

    it("lets a tenant's scripts past its bound wait in line, refuses them past the line, and frees the slot of one that failed", async () => {
      const turns = loop({ maxScriptsPerTenant: 1, maxPendingRequestsPerPartition: 1 });
      const running = run('acme', { script: 'let a = 1\nlet b = 2\nreturn a + b', bucket: 'users' }, turns.scheduler);
      await turns.settle();
      const waiting = run('acme', { script: 'return 4', bucket: 'users' }, turns.scheduler);
      const refused = await run('acme', { script: 'return 1', bucket: 'users' }, turns.scheduler).catch((error: AtollError) => error);
      expect(refused).toMatchObject({ code: 'RESOURCE_EXHAUSTED', details: { reason: 'script-concurrency' } });
      // Another tenant is not affected.
      expect((await turns.drive(run('globex', { script: 'return 2', bucket: 'users' }, turns.scheduler))).resultJson).toBe('2');
      expect((await turns.drive(running)).resultJson).toBe('3');
      expect((await turns.drive(waiting)).resultJson).toBe('4');
      expect(await codeOf(turns.drive(run('acme', { script: 'throw "no"', bucket: 'users' }, turns.scheduler)))).toBe('SCRIPT_ERROR');
      expect((await turns.drive(run('acme', { script: 'return 5', bucket: 'users' }, turns.scheduler))).resultJson).toBe('5');
      expect(turns.scheduler.runningScripts + turns.scheduler.waitingScripts).toBe(0);
    });
  });
});
