/**
 * Exactly-once for scripts with a request id (issue 16): every such script goes through the log,
 * a rolled-back or read-only one as a no-write transaction entry whose note records its outcome,
 * so a resend answers the recorded result, committed flag and revision even after the data
 * changed so that a re-run would answer differently. Without an id nothing changes.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { AtollError } from '../../src/errors.js';
import { defaultLimits } from '../../src/limits.js';
import { validateCommand } from '../../src/mvcc/validate-command.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import type { Command } from '../../src/mvcc/index.js';
import type { ExecuteScriptRequest } from '../../src/api/node-api.js';
import { decodeScriptOutcomeNote, encodeScriptOutcomeNote, runScriptAtLeader, scriptBucket } from '../../src/node/service/script-runner.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { encodeTxnHandle } from '../../src/txn/txn-handle.js';

const encoder = new TextEncoder();
const lockScript = 'if exists "locks/a" then rollback end\nset "locks/a" "me"\nreturn "acquired"';

describe('scripts with a request id record their outcome', () => {
  let store: MvccStore;
  let index = 0;
  let proposals = 0;
  const apply = async (command: Command, requestId?: string) => {
    const result = await store.apply(command, { index: ++index, nowMs: Date.now(), ...(requestId !== undefined && { requestId }) });
    if (result.error !== undefined) throw result.error;
    return result;
  };
  const run = (request: ExecuteScriptRequest) =>
    runScriptAtLeader({
      request,
      limits: defaultLimits,
      partitionCount: 1,
      tenant: 'default',
      begin: async () => {
        const bucket = scriptBucket(request, defaultLimits);
        const handle = { partition: 0, partitionCount: 1, tenant: 'default', bucket, snapshotRevision: store.revision, isolation: 'snapshot' as const, startedAtMs: Date.now() };
        return { transaction: encodeTxnHandle(handle), partition: 0, bucket, snapshotRevision: handle.snapshotRevision, isolation: 'snapshot', expiresAtMs: Date.now() + 10_000 };
      },
      mvcc: store,
      propose: (command, requestId) => {
        proposals++;
        return apply(command, requestId);
      },
      deadlineMs: Date.now() + 10_000,
    });
  const put = (key: string, value: string) => apply({ type: 'put', key, value: encoder.encode(value) });
  const value = async (key: string) => {
    const read = await store.get(key, { nowMs: Date.now() });
    return read.found ? new TextDecoder().decode(read.value) : undefined;
  };

  beforeEach(async () => {
    store = await MvccStore.open({ engine: new MemoryEngine(), prefix: partitionKeyPrefix('mvcc', 0) });
    index = 0;
    proposals = 0;
    await put('users/bob', 'v1');
  });

  it('a rolled-back script answers "rolled back" on resend even when a re-run would now commit', async () => {
    await put('locks/a', 'someone');
    const first = await run({ script: lockScript, requestId: 'lock-1' });
    expect(first).toMatchObject({ committed: false, resultJson: 'null' });
    await apply({ type: 'delete', key: 'locks/a' });
    const revisionBefore = store.revision;
    const resend = await run({ script: lockScript, requestId: 'lock-1' });
    expect(resend).toMatchObject({ committed: false, resultJson: 'null', revision: first.revision });
    // The resend wrote nothing: the lock is still free, the revision did not move.
    expect(await value('locks/a')).toBeUndefined();
    expect(store.revision).toBe(revisionBefore);
    // A new id runs it again, and it commits.
    expect(await run({ script: lockScript, requestId: 'lock-2' })).toMatchObject({ committed: true, resultJson: '"acquired"' });
    expect(await value('locks/a')).toBe('me');
  });

  it('a read-only script answers its recorded result on resend after the data changed', async () => {
    const script = 'return get "users/bob"["value"]';
    const first = await run({ script, requestId: 'read-1' });
    expect(first).toMatchObject({ committed: true, resultJson: '"v1"' });
    await put('users/bob', 'v2');
    const resend = await run({ script, requestId: 'read-1' });
    expect(resend).toMatchObject({ committed: true, resultJson: '"v1"', revision: first.revision });
    expect(await run({ script, requestId: 'read-2' })).toMatchObject({ committed: true, resultJson: '"v2"' });
  });

  it('a committed writing script still answers its plain-JSON note on resend', async () => {
    const first = await run({ script: lockScript, requestId: 'lock-3' });
    expect(first).toMatchObject({ committed: true, resultJson: '"acquired"' });
    await apply({ type: 'delete', key: 'locks/a' });
    const resend = await run({ script: lockScript, requestId: 'lock-3' });
    expect(resend).toMatchObject({ committed: true, resultJson: '"acquired"', revision: first.revision });
    expect(await value('locks/a')).toBeUndefined();
  });

  it('without a request id a read-only or rolled-back script proposes nothing, as before', async () => {
    await put('locks/a', 'someone');
    const revisionBefore = store.revision;
    expect(await run({ script: lockScript })).toMatchObject({ committed: false, resultJson: 'null', revision: revisionBefore });
    expect(await run({ script: 'return get "users/bob"["value"]' })).toMatchObject({ committed: true, resultJson: '"v1"' });
    expect(proposals).toBe(0);
    expect(store.revision).toBe(revisionBefore);
  });

  it('a script with a request id returns at most maxTxnNoteBytes, refused before anything is proposed', async () => {
    await put('users/big', 'x'.repeat(40_000));
    const script = 'return [get "users/big", get "users/big"]';
    const refused = await run({ script, requestId: 'big-1' }).then(
      () => undefined,
      (error: AtollError) => error,
    );
    expect(refused).toMatchObject({ code: 'SCRIPT_LIMIT', details: { maxResultBytes: defaultLimits.maxTxnNoteBytes } });
    expect(proposals).toBe(0);
    // Without an id the larger read-only bound applies, as before.
    expect((await run({ script })).resultJson.length).toBeGreaterThan(defaultLimits.maxTxnNoteBytes);
  });

  it('only a transaction with a note may write nothing', () => {
    const txn = { type: 'txn', snapshotRevision: 1, isolation: 'snapshot', readKeys: [], readPrefixes: [], writes: [] } as const;
    expect(() => validateCommand(txn)).toThrow(/at least one write/);
    expect(() => validateCommand({ ...txn, note: new Uint8Array([0, 1]) })).not.toThrow();
    expect(() => validateCommand({ type: 'batch', writes: [] })).toThrow(/at least one write/);
  });

  it('outcome notes round-trip, and a plain-JSON note (older entries) reads as committed at its entry revision', () => {
    const note = encodeScriptOutcomeNote({ resultJson: '{"a":1}', committed: false, revision: 42 });
    expect(decodeScriptOutcomeNote(note, 7)).toEqual({ resultJson: '{"a":1}', committed: false, revision: 42 });
    expect(decodeScriptOutcomeNote(encoder.encode('"acquired"'), 7)).toEqual({ resultJson: '"acquired"', committed: true, revision: 7 });
  });
});
