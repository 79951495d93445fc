/** The key model's single-key promises, on both engines. */
import { describe, expect, it } from 'vitest';
import { engineKinds, fromBytes, Partition, text } from './harness.js';

describe.each(engineKinds)('MvccStore key model on $name', (kind) => {
  describe('presence is separate from value', () => {
    it('answers a missing key with found: false, not an error', async () => {
      const partition = await Partition.create(kind);
      const result = await partition.get('missing');
      expect(result).toEqual({ found: false, createRevision: 0, modRevision: 0, version: 0, revision: 0 });
      expect(await partition.store.exists('missing', { nowMs: partition.nowMs })).toBe(false);
    });

    it('treats a stored "" and "0" as hits', async () => {
      const partition = await Partition.create(kind);
      await partition.put('empty', '');
      await partition.put('zero', '0');
      await partition.put('false', 'false');
      const empty = await partition.get('empty');
      expect(empty.found).toBe(true);
      expect(empty.value).toEqual(new Uint8Array(0));
      expect(fromBytes((await partition.get('zero')).value)).toBe('0');
      expect(await partition.value('false')).toBe('false');
      expect(await partition.store.exists('empty', { nowMs: partition.nowMs })).toBe(true);
    });

    it('stores arbitrary bytes exactly', async () => {
      const partition = await Partition.create(kind);
      const value = Uint8Array.from([0, 255, 1, 0, 128]);
      await partition.applyOk({ type: 'put', key: 'bin', value });
      expect((await partition.get('bin')).value).toEqual(value);
    });
  });

  describe('revisions', () => {
    it('gives every changing write the next revision, and reports create/mod revision and version', async () => {
      const partition = await Partition.create(kind);
      expect((await partition.put('a', '1')).revision).toBe(1);
      expect((await partition.put('b', '1')).revision).toBe(2);
      const third = await partition.put('a', '2');
      expect(third.revision).toBe(3);
      expect(third.writes[0]!.current).toMatchObject({ createRevision: 1, modRevision: 3, version: 2 });
      expect(await partition.get('a')).toMatchObject({ found: true, createRevision: 1, modRevision: 3, version: 2, revision: 3 });
      expect(partition.store.revision).toBe(3);
    });

    it('writes a tombstone on delete and restarts createRevision and version after it', async () => {
      const partition = await Partition.create(kind);
      await partition.put('k', 'v1');
      await partition.put('k', 'v2');
      const deleted = await partition.apply({ type: 'delete', key: 'k' });
      expect(deleted).toMatchObject({ applied: true, revision: 3 });
      expect(deleted.writes[0]).toMatchObject({ deleted: true });
      expect((await partition.get('k')).found).toBe(false);
      // The tombstone hides the key at the latest revision but not in the past.
      expect(await partition.get('k', 2)).toMatchObject({ found: true, version: 2, modRevision: 2 });
      await partition.put('k', 'v3');
      expect(await partition.get('k')).toMatchObject({ found: true, createRevision: 4, modRevision: 4, version: 1 });
    });

    it('creates no revision for a delete of an absent key or a failed condition', async () => {
      const partition = await Partition.create(kind);
      await partition.put('k', 'v');
      const deleteMissing = await partition.apply({ type: 'delete', key: 'missing' });
      expect(deleteMissing).toMatchObject({ applied: true, revision: 1 });
      expect(deleteMissing.writes[0]).toMatchObject({ deleted: false, conditionHeld: true });
      const failed = await partition.put('k', 'other', { ifAbsent: true });
      expect(failed).toMatchObject({ applied: false, revision: 1 });
      expect(partition.store.revision).toBe(1);
      expect(partition.store.appliedIndex).toBe(3);
    });
  });

  describe('conditional writes', () => {
    it('only-if-absent succeeds once', async () => {
      const partition = await Partition.create(kind);
      expect((await partition.put('lock', 'me', { ifAbsent: true })).applied).toBe(true);
      const second = await partition.put('lock', 'you', { ifAbsent: true });
      expect(second.applied).toBe(false);
      expect(second.writes[0]).toMatchObject({ conditionHeld: false });
      expect(second.writes[0]!.current).toBeUndefined();
      expect(await partition.value('lock')).toBe('me');
    });

    it('only-if-present needs a live key', async () => {
      const partition = await Partition.create(kind);
      expect((await partition.put('k', 'v', { ifPresent: true })).applied).toBe(false);
      expect((await partition.get('k')).found).toBe(false);
      await partition.put('k', 'v');
      expect((await partition.put('k', 'w', { ifPresent: true })).applied).toBe(true);
      expect(await partition.value('k')).toBe('w');
    });

    it('compare-and-swap on modRevision: the stale writer loses, 0 means absent', async () => {
      const partition = await Partition.create(kind);
      expect((await partition.put('k', 'first', { ifModRevision: 0 })).applied).toBe(true);
      const seen = (await partition.get('k')).modRevision;
      expect((await partition.put('k', 'winner', { ifModRevision: seen })).applied).toBe(true);
      expect((await partition.put('k', 'loser', { ifModRevision: seen })).applied).toBe(false);
      expect((await partition.put('k', 'again', { ifModRevision: 0 })).applied).toBe(false);
      expect(await partition.value('k')).toBe('winner');
      const current = (await partition.get('k')).modRevision;
      expect((await partition.apply({ type: 'delete', key: 'k', ifModRevision: seen })).applied).toBe(false);
      expect((await partition.apply({ type: 'delete', key: 'k', ifModRevision: current })).applied).toBe(true);
    });

    it('only-if-value compares bytes exactly', async () => {
      const partition = await Partition.create(kind);
      await partition.put('k', 'a');
      expect((await partition.put('k', 'b', { ifValue: text('x') })).applied).toBe(false);
      expect((await partition.put('k', 'b', { ifValue: text('a') })).applied).toBe(true);
      expect((await partition.apply({ type: 'delete', key: 'k', ifValue: text('a') })).applied).toBe(false);
      expect((await partition.apply({ type: 'delete', key: 'k', ifValue: text('b') })).applied).toBe(true);
      expect((await partition.put('k', 'c', { ifValue: new Uint8Array(0) })).applied).toBe(false);
    });

    it('returns the previous version on request, also when the condition fails', async () => {
      const partition = await Partition.create(kind);
      const first = await partition.put('k', 'a', { returnPrevious: true });
      expect(first.writes[0]!.previous).toBeNull();
      const second = await partition.put('k', 'b', { returnPrevious: true });
      expect(second.writes[0]!.previous).toMatchObject({ key: 'k', value: text('a'), modRevision: 1, version: 1 });
      const blocked = await partition.put('k', 'c', { ifAbsent: true, returnPrevious: true });
      expect(blocked.applied).toBe(false);
      expect(fromBytes(blocked.writes[0]!.previous!.value)).toBe('b');
      const deleted = await partition.apply({ type: 'delete', key: 'k', returnPrevious: true });
      expect(fromBytes(deleted.writes[0]!.previous!.value)).toBe('b');
    });
  });

  describe('expiry', () => {
    it('hides a key at once when its TTL runs out', async () => {
      const partition = await Partition.create(kind);
      const written = await partition.put('session', 's', { ttlMs: 1000 });
      expect(written.writes[0]!.current!.expiresAtMs).toBe(partition.nowMs + 1000);
      const expiresAtMs = partition.nowMs + 1000;
      expect(await partition.store.get('session', { nowMs: expiresAtMs - 1 })).toMatchObject({ found: true, expiresAtMs });
      expect((await partition.store.get('session', { nowMs: expiresAtMs })).found).toBe(false);
      expect(await partition.store.exists('session', { nowMs: expiresAtMs })).toBe(false);
    });

    it('treats an expired key as absent for conditions and restarts its history', async () => {
      const partition = await Partition.create(kind);
      await partition.put('k', 'old', { ttlMs: 10 });
      await partition.put('k', 'old2', { keepTtl: true });
      partition.nowMs += 10;
      expect((await partition.put('k', 'x', { ifPresent: true })).applied).toBe(false);
      expect((await partition.put('k', 'x', { ifModRevision: 2 })).applied).toBe(false);
      expect((await partition.apply({ type: 'delete', key: 'k' })).writes[0]).toMatchObject({ deleted: false });
      const fresh = await partition.put('k', 'new', { ifAbsent: true });
      expect(fresh.applied).toBe(true);
      expect(await partition.get('k')).toMatchObject({ found: true, createRevision: 3, modRevision: 3, version: 1 });
      expect((await partition.get('k')).expiresAtMs).toBeUndefined();
    });

    it('clears the TTL on a plain put and keeps it with keepTtl', async () => {
      const partition = await Partition.create(kind);
      const expiresAtMs = partition.nowMs + 5000;
      await partition.put('k', 'a', { ttlMs: 5000 });
      partition.nowMs += 100;
      await partition.put('k', 'b', { keepTtl: true });
      expect(await partition.get('k')).toMatchObject({ found: true, expiresAtMs, version: 2 });
      await partition.put('k', 'c');
      const plain = await partition.get('k');
      expect(plain.expiresAtMs).toBeUndefined();
      expect((await partition.store.get('k', { nowMs: expiresAtMs + 1 })).found).toBe(true);
      // keepTtl on a key without a TTL, or an absent key, keeps "no TTL".
      await partition.put('fresh', 'x', { keepTtl: true });
      expect((await partition.get('fresh')).expiresAtMs).toBeUndefined();
    });

    it('replaces the TTL when a put gives a new one', async () => {
      const partition = await Partition.create(kind);
      await partition.put('k', 'a', { ttlMs: 5000 });
      await partition.put('k', 'b', { ttlMs: 10 });
      expect((await partition.get('k')).expiresAtMs).toBe(partition.nowMs + 10);
    });

    it('extends a live key and refuses an absent one', async () => {
      const partition = await Partition.create(kind);
      await partition.put('k', 'v', { ttlMs: 100 });
      partition.nowMs += 50;
      const extended = await partition.apply({ type: 'extend', key: 'k', ttlMs: 1000 });
      expect(extended.applied).toBe(true);
      expect(await partition.get('k')).toMatchObject({ value: text('v'), version: 2, expiresAtMs: partition.nowMs + 1000 });
      const missing = await partition.apply({ type: 'extend', key: 'missing', ttlMs: 1000 });
      expect(missing).toMatchObject({ applied: false, revision: extended.revision });
      partition.nowMs += 1000;
      expect((await partition.apply({ type: 'extend', key: 'k', ttlMs: 1000 })).applied).toBe(false);
    });

    it('judges expiry by the command clock, so replicas agree', async () => {
      const partition = await Partition.create(kind);
      await partition.put('k', 'v', { ttlMs: 100 });
      // The leader proposed this put with a clock past the expiry, whatever the replica's clock says.
      partition.nowMs += 100;
      expect((await partition.put('k', 'w', { ifAbsent: true })).applied).toBe(true);
    });
  });

  describe('increment', () => {
    it('counts from 0 for a missing key and stores decimal text', async () => {
      const partition = await Partition.create(kind);
      const first = await partition.applyOk({ type: 'increment', key: 'hits', delta: 5n });
      expect(first.writes[0]!.counter).toBe(5n);
      await partition.applyOk({ type: 'increment', key: 'hits', delta: -7n });
      expect(await partition.value('hits')).toBe('-2');
      expect(await partition.get('hits')).toMatchObject({ version: 2, createRevision: 1 });
      await partition.put('zero', '0');
      await partition.applyOk({ type: 'increment', key: 'zero', delta: 1n });
      expect(await partition.value('zero')).toBe('1');
    });

    it('refuses a non-integer value with NOT_INTEGER and changes nothing', async () => {
      const partition = await Partition.create(kind);
      for (const stored of ['abc', '', '01', '-0', '+1', ' 1', '1.5', '1e3', '９', '9223372036854775808']) {
        await partition.put('k', stored);
        const before = await partition.get('k');
        const result = await partition.apply({ type: 'increment', key: 'k', delta: 1n });
        expect(result.error?.code, `stored ${JSON.stringify(stored)}`).toBe('NOT_INTEGER');
        expect(result).toMatchObject({ applied: false, revision: before.revision });
        expect(await partition.get('k')).toEqual(before);
      }
    });

    it('refuses to leave int64 with OVERFLOW and changes nothing', async () => {
      const partition = await Partition.create(kind);
      await partition.put('max', '9223372036854775807');
      const up = await partition.apply({ type: 'increment', key: 'max', delta: 1n });
      expect(up.error?.code).toBe('OVERFLOW');
      expect(await partition.value('max')).toBe('9223372036854775807');
      await partition.put('min', '-9223372036854775808');
      expect((await partition.apply({ type: 'increment', key: 'min', delta: -1n })).error?.code).toBe('OVERFLOW');
      expect((await partition.apply({ type: 'increment', key: 'min', delta: 9223372036854775807n })).writes[0]!.counter).toBe(-1n);
      expect(partition.store.revision).toBe(3);
    });

    it('keeps the TTL unless given a new one', async () => {
      const partition = await Partition.create(kind);
      await partition.applyOk({ type: 'increment', key: 'window', delta: 1n, ttlMs: 1000 });
      const expiresAtMs = partition.nowMs + 1000;
      partition.nowMs += 10;
      await partition.applyOk({ type: 'increment', key: 'window', delta: 1n });
      expect(await partition.get('window')).toMatchObject({ value: text('2'), expiresAtMs });
      partition.nowMs = expiresAtMs;
      await partition.applyOk({ type: 'increment', key: 'window', delta: 1n });
      expect(await partition.get('window')).toMatchObject({ value: text('1'), createRevision: 3 });
      expect((await partition.get('window')).expiresAtMs).toBeUndefined();
    });
  });

  describe('bad input', () => {
    it('fails with a clear error, writes nothing but the applied index', async () => {
      const partition = await Partition.create(kind);
      await partition.put('k', 'v');
      const cases: Array<[unknown, string]> = [
        [{ type: 'put', key: '', value: text('x') }, 'INVALID_KEY'],
        [{ type: 'put', key: 'a'.repeat(4097), value: text('x') }, 'KEY_TOO_LARGE'],
        [{ type: 'put', key: '\ud800', value: text('x') }, 'INVALID_KEY'],
        [{ type: 'put', key: 'k', value: new Uint8Array(1024 * 1024 + 1) }, 'VALUE_TOO_LARGE'],
        [{ type: 'put', key: 'k', value: 'not bytes' }, 'INVALID_ARGUMENT'],
        [{ type: 'put', key: 'k', value: text('x'), ttlMs: 0 }, 'INVALID_ARGUMENT'],
        [{ type: 'put', key: 'k', value: text('x'), ttlMs: 1.5 }, 'INVALID_ARGUMENT'],
        [{ type: 'put', key: 'k', value: text('x'), ttlMs: 10, keepTtl: true }, 'INVALID_ARGUMENT'],
        [{ type: 'put', key: 'k', value: text('x'), ifAbsent: true, ifPresent: true }, 'INVALID_ARGUMENT'],
        [{ type: 'put', key: 'k', value: text('x'), ifModRevision: -1 }, 'INVALID_ARGUMENT'],
        [{ type: 'increment', key: 'k', delta: 1 }, 'INVALID_ARGUMENT'],
        [{ type: 'increment', key: 'k', delta: 2n ** 63n }, 'INVALID_ARGUMENT'],
        [{ type: 'nope', key: 'k' }, 'INVALID_ARGUMENT'],
      ];
      for (const [caseIndex, [command, code]] of cases.entries()) {
        const index = partition.store.appliedIndex;
        const result = await partition.apply(command as never);
        expect(result.error?.code, `case ${caseIndex}`).toBe(code);
        expect(result).toMatchObject({ applied: false, revision: 1 });
        expect(partition.store.appliedIndex).toBe(index + 1);
      }
      expect(await partition.get('k')).toMatchObject({ found: true, value: text('v'), version: 1, revision: 1 });
    });

    it('rejects bad read arguments', async () => {
      const partition = await Partition.create(kind);
      await expect(partition.store.get('', { nowMs: 0 })).rejects.toMatchObject({ code: 'INVALID_KEY' });
      await expect(partition.store.get('k', { nowMs: 0, revision: -1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    });
  });

  describe('replay', () => {
    it('ignores entries at or below the applied index, also after a restart', async () => {
      const partition = await Partition.create(kind);
      await partition.put('k', 'v1');
      await partition.put('counter', '0');
      await partition.applyOk({ type: 'increment', key: 'counter', delta: 1n });
      const replayed = await partition.store.apply({ type: 'increment', key: 'counter', delta: 1n }, { index: 3, nowMs: partition.nowMs });
      expect(replayed).toMatchObject({ replayed: true, applied: false, revision: 3 });
      await partition.reopen(kind);
      expect(partition.store.status()).toEqual({ appliedIndex: 3, revision: 3, compactedRevision: 0, needsSnapshot: false });
      for (let index = 1; index <= 3; index++) {
        const result = await partition.store.apply({ type: 'increment', key: 'counter', delta: 1n }, { index, nowMs: partition.nowMs });
        expect(result.replayed).toBe(true);
      }
      expect(await partition.value('counter')).toBe('1');
      expect(await partition.value('k')).toBe('v1');
      // Indexes may skip (entries that are not commands).
      expect((await partition.store.apply({ type: 'delete', key: 'k' }, { index: 10, nowMs: partition.nowMs })).applied).toBe(true);
      expect(partition.store.appliedIndex).toBe(10);
    });
  });
});
