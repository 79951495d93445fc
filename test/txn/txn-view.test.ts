/**
 * TxnView: the overlay both interactive transactions and scripts read and write through.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { makeLimits } from '../../src/limits.js';
import { encodeTxnHandle, decodeTxnHandle } from '../../src/txn/txn-handle.js';
import { TxnScope } from '../../src/txn/txn-scope.js';
import { compareCodePoints, TxnView, type SnapshotReader, type TxnRecord } from '../../src/txn/txn-view.js';
import { partitionOfBucket } from '../../src/keys/partition-table.js';

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
const bytes = (value: string): Uint8Array => new TextEncoder().encode(value);

function record(key: string, value: string, modRevision = 5, expiresAtMs = 0): TxnRecord {
  return { key, value: bytes(value), createRevision: 1, modRevision, version: 2, expiresAtMs };
}

/** A reader over fixed records that counts how often each key and prefix is read. */
function fakeReader(records: TxnRecord[]): SnapshotReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async get(key) {
      reads.push(`get ${key}`);
      return records.find((r) => r.key === key);
    },
    async getByPrefix(keyPrefix, maxKeys) {
      reads.push(`prefix ${keyPrefix}`);
      const found = records.filter((r) => r.key.startsWith(keyPrefix)).sort((a, b) => (a.key < b.key ? -1 : 1));
      if (found.length > maxKeys) throw new AtollError('RESOURCE_EXHAUSTED', 'too many');
      return found;
    },
  };
}

function view(records: TxnRecord[], extra: Partial<ConstructorParameters<typeof TxnView>[0]> = {}) {
  const reader = fakeReader(records);
  return { reader, view: new TxnView({ reader, nowMs: 1_000_000, ...extra }) };
}

describe('TxnView', () => {
  it('reads the snapshot once per key and sees its own writes (read-your-writes)', async () => {
    const { reader, view: tx } = view([record('a/x', '1')]);
    expect(text((await tx.get('a/x'))!.value)).toBe('1');
    await tx.get('a/x');
    expect(reader.reads).toEqual(['get a/x']);
    expect(await tx.put('a/x', bytes('2'))).toBe(true);
    const own = await tx.get('a/x');
    expect(text(own!.value)).toBe('2');
    expect(own!.modRevision).toBe(0);
    expect(own!.version).toBe(3);
    expect(await tx.delete('a/x')).toBe(true);
    expect(await tx.get('a/x')).toBeUndefined();
    expect(await tx.exists('a/x')).toBe(false);
    expect(tx.writes()).toEqual([{ type: 'delete', key: 'a/x' }]);
  });

  it('merges own writes into prefix reads, in key order, and drops own deletes', async () => {
    const { view: tx } = view([record('s/auth', 'A'), record('s/inv', 'I'), record('t/other', 'O')]);
    await tx.put('s/users', bytes('U'));
    await tx.delete('s/auth');
    await tx.put('s/a', bytes('first'));
    const keys = (await tx.getByPrefix('s')).map((r) => r.key);
    expect(keys).toEqual(['s/a', 's/inv', 's/users']);
    expect(tx.readPrefixes).toEqual(['s/']);
  });

  it('places own writes among thousands of snapshot keys in code point order, without sorting them all', async () => {
    // Sorted by code point: U+FF61 comes before U+1F642 though its UTF-16 unit is larger.
    const snapshot = [...Array.from({ length: 3000 }, (_, index) => `s/${String(index).padStart(4, '0')}`), 's/\uff61', 's/\u{1f642}'].map((key) => record(key, 'v'));
    const tx = new TxnView({ reader: { get: async (key) => snapshot.find((r) => r.key === key), getByPrefix: async () => snapshot }, nowMs: 1_000_000 });
    await tx.put('s/0000', bytes('replaced'));
    await tx.delete('s/1500');
    await tx.put('s/1500a', bytes('added'));
    await tx.put('s/', bytes('first'));
    await tx.put('s/\u{1f600}', bytes('astral'));
    await tx.put('s/~', bytes('before U+FF61'));
    const keys = (await tx.getByPrefix('s')).map((r) => r.key);
    const expected = [...snapshot.map((r) => r.key).filter((key) => key !== 's/1500'), 's/1500a', 's/', 's/\u{1f600}', 's/~'].sort(compareCodePoints);
    expect(keys).toEqual(expected);
    expect(keys.slice(-4)).toEqual(['s/~', 's/\uff61', 's/\u{1f600}', 's/\u{1f642}']);
    expect(text((await tx.getByPrefix('s'))[1]!.value)).toBe('replaced');
  });

  it('compares strings by code point, whatever their common prefix', () => {
    const naive = (a: string, b: string): number => {
      const [x, y] = [Array.from(a, (c) => c.codePointAt(0)!), Array.from(b, (c) => c.codePointAt(0)!)];
      for (let index = 0; index < Math.min(x.length, y.length); index++) if (x[index] !== y[index]) return x[index]! - y[index]!;
      return x.length - y.length;
    };
    const tail = fc.array(fc.constantFrom('a', 'b', '\ud800', '\udc00', '\ue000', '\uffff', '\u{1d400}', '\u{1f642}'), { maxLength: 40 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.nat(5000), tail, tail, (common, a, b) => {
        const prefix = '\u{1f642}p'.repeat(common);
        expect(Math.sign(compareCodePoints(prefix + a, prefix + b))).toBe(Math.sign(naive(prefix + a, prefix + b)));
      }),
      { numRuns: 2000 },
    );
  });

  it('resolves conditions against the view: nx, xx, cmprev, ifValue', async () => {
    const { view: tx } = view([record('k/live', 'v', 7)]);
    expect(await tx.put('k/live', bytes('x'), { ifAbsent: true })).toBe(false);
    expect(await tx.put('k/new', bytes('x'), { ifPresent: true })).toBe(false);
    expect(await tx.put('k/new', bytes('x'), { ifAbsent: true })).toBe(true);
    expect(await tx.put('k/new', bytes('y'), { ifAbsent: true })).toBe(false);
    expect(await tx.put('k/live', bytes('z'), { ifModRevision: 6 })).toBe(false);
    expect(await tx.put('k/live', bytes('z'), { ifModRevision: 7 })).toBe(true);
    // Own writes have no revision yet: a revision condition on them fails.
    expect(await tx.put('k/live', bytes('w'), { ifModRevision: 7 })).toBe(false);
    expect(await tx.delete('k/live', { ifValue: bytes('nope') })).toBe(false);
    expect(await tx.delete('k/live', { ifValue: bytes('z') })).toBe(true);
    // One final write per key, in first-write order.
    expect(tx.writes().map((w) => [w.type, w.key])).toEqual([
      ['put', 'k/new'],
      ['delete', 'k/live'],
    ]);
  });

  it('folds increments into one put per key and keeps TTLs', async () => {
    const { view: tx } = view([record('c/n', '40', 3, 2_000_000), record('c/text', 'abc')]);
    expect(await tx.increment('c/n', 1n)).toBe(41n);
    expect(await tx.increment('c/n', 1n)).toBe(42n);
    expect(tx.writes()).toEqual([{ type: 'put', key: 'c/n', value: bytes('42'), keepTtl: true }]);
    expect(await tx.increment('c/fresh', -5n, { ttlMs: 500 })).toBe(-5n);
    expect(await tx.increment('c/fresh', 2n)).toBe(-3n);
    const fresh = tx.writes().find((w) => w.key === 'c/fresh');
    expect(fresh).toEqual({ type: 'put', key: 'c/fresh', value: bytes('-3'), ttlMs: 500 });
    expect((await tx.get('c/fresh'))!.expiresAtMs).toBe(1_000_500);
    await expect(tx.increment('c/text', 1n)).rejects.toMatchObject({ code: 'NOT_INTEGER' });
    await tx.put('c/max', bytes('9223372036854775807'));
    await expect(tx.increment('c/max', 1n)).rejects.toMatchObject({ code: 'OVERFLOW' });
    expect(text((await tx.get('c/max'))!.value)).toBe('9223372036854775807');
  });

  it('refuses keys outside its partition before reading or buffering anything', async () => {
    const handle = { partition: partitionOfBucket('bank', 16), partitionCount: 16, tenant: 'default', bucket: 'bank', snapshotRevision: 3, isolation: 'snapshot' as const, startedAtMs: 1 };
    const scope = TxnScope.of(handle);
    let other = 'x0';
    for (let i = 0; partitionOfBucket(other, 16) === handle.partition; i++) other = `x${i}`;
    const { reader, view: tx } = view([], { checkKey: (key) => scope.checkKey(key), checkPrefix: (bucket, prefix) => scope.checkBucket(bucket, prefix) });
    await expect(tx.get(`${other}/k`)).rejects.toMatchObject({ code: 'OUTSIDE_TRANSACTION' });
    const error = await tx.put(`${other}/k`, bytes('v')).catch((e: unknown) => e as AtollError);
    expect(error).toBeInstanceOf(AtollError);
    expect((error as AtollError).message).toContain(`"${other}"`);
    expect((error as AtollError).message).toContain('"bank"');
    await expect(tx.getByPrefix(other)).rejects.toMatchObject({ code: 'OUTSIDE_TRANSACTION' });
    expect(reader.reads).toEqual([]);
    expect(tx.writes()).toEqual([]);
  });

  it('bounds the write set in keys and bytes', async () => {
    const limits = makeLimits({ maxBatchOps: 3 });
    const { view: tx } = view([], { limits });
    for (const k of ['a/1', 'a/2', 'a/3']) await tx.put(k, bytes('v'));
    await tx.put('a/1', bytes('again'));
    await expect(tx.put('a/4', bytes('v'))).rejects.toMatchObject({ code: 'RESOURCE_EXHAUSTED' });
    expect(tx.writeCount).toBe(3);
  });

  it('records read keys for SERIALIZABLE validation', async () => {
    const { view: tx } = view([record('r/a', '1')]);
    await tx.get('r/a');
    await tx.exists('r/b');
    await tx.put('r/c', bytes('x'), { ifAbsent: true });
    expect(tx.readKeys.sort()).toEqual(['r/a', 'r/b', 'r/c']);
  });
});

describe('transaction handles and scopes', () => {
  it('round-trips and rejects anything else with INVALID_TRANSACTION', () => {
    const handle = { partition: 3, partitionCount: 8, tenant: 'default', bucket: 'bank', snapshotRevision: 42, isolation: 'serializable' as const, startedAtMs: 1_700_000_000_000 };
    expect(decodeTxnHandle(encodeTxnHandle(handle))).toEqual(handle);
    for (const bad of ['', 'atx2.', 'atx2.!!!.x', 'nope', `atx2.${Buffer.from('{"p":9,"n":8}').toString('base64url')}.x`, 'x'.repeat(10_000)]) {
      expect(() => decodeTxnHandle(bad)).toThrowError(expect.objectContaining({ code: 'INVALID_TRANSACTION' }) as Error);
    }
    expect(() => TxnScope.fromText(encodeTxnHandle(handle), 16)).toThrowError(/8 partitions/);
  });

  it('expires after maxTxnDurationMs and builds commands that carry read sets only when serializable', () => {
    const base = { partition: partitionOfBucket('bank', 8), partitionCount: 8, tenant: 'default', bucket: 'bank', snapshotRevision: 4, startedAtMs: 1000 };
    const limits = makeLimits({ maxTxnDurationMs: 500 });
    const snapshot = TxnScope.of({ ...base, isolation: 'snapshot' });
    snapshot.checkAlive(1500, limits);
    expect(() => snapshot.checkAlive(1501, limits)).toThrowError(expect.objectContaining({ code: 'TXN_EXPIRED' }) as Error);
    const request = { writes: [{ key: 'bank/a', value: bytes('1') }, { key: 'bank/b', delete: true }], readKeys: ['bank/c'], readPrefixes: ['bank'] };
    expect(snapshot.commandOf(request)).toMatchObject({ readKeys: [], readPrefixes: [], snapshotRevision: 4 });
    const serializable = TxnScope.of({ ...base, isolation: 'serializable' }).commandOf(request);
    expect(serializable).toMatchObject({ readKeys: ['bank/c'], readPrefixes: ['bank/'], isolation: 'serializable' });
    expect(serializable.writes).toEqual([{ type: 'put', key: 'bank/a', value: bytes('1') }, { type: 'delete', key: 'bank/b' }]);
    expect(() => snapshot.commandOf({ ...request, writes: [...request.writes, { key: 'bank/a', value: bytes('2') }] })).toThrowError(/at most once/);
  });
});
