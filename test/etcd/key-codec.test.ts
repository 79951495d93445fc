/**
 * The etcd key encoding (src/etcd/key-codec.ts) preserves etcd's bytewise key order in Atoll's key
 * order (UTF-8 bytes of the key text), round-trips, and keeps every key of an interval under the
 * interval's scan prefix: the properties the keyspace's exact Range, Txn and Watch rely on.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareBytes, decodeKey, decodeKeyBody, encodeKey, encodeKeyBody, etcdKeyPrefix, keyInterval } from '../../src/etcd/key-codec.js';
import { atollLeaseIdOf, decodeStoredValue, encodeStoredValue, etcdLeaseIdOf } from '../../src/etcd/stored-value.js';

/** Bytes weighted towards the codec's edges: 0x00, 0x01, 0x02, 0x7f, 0x80, 0xff. */
const edgeByte = fc.oneof(fc.constantFrom(0x00, 0x01, 0x02, 0x7f, 0x80, 0xff), fc.integer({ min: 0, max: 255 }));
const keyBytes = fc.array(edgeByte, { maxLength: 12 }).map((bytes) => Uint8Array.from(bytes));
const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');

describe('etcd key encoding', () => {
  it('orders encoded keys (as UTF-8 bytes, Atoll\'s order) exactly as etcd orders the bytes', () => {
    fc.assert(
      fc.property(keyBytes, keyBytes, (a, b) => {
        expect(Math.sign(Buffer.compare(utf8(encodeKeyBody(a)), utf8(encodeKeyBody(b))))).toBe(Math.sign(compareBytes(a, b)));
      }),
      { numRuns: 5_000 },
    );
  });

  it('round-trips every key, and the full Atoll key carries the keyspace prefix', () => {
    fc.assert(
      fc.property(keyBytes, (bytes) => {
        expect(decodeKeyBody(encodeKeyBody(bytes))).toEqual(bytes);
        const key = encodeKey(bytes);
        expect(key.startsWith(etcdKeyPrefix)).toBe(true);
        expect(key.includes('\u0000')).toBe(false);
        expect(decodeKey(key)).toEqual(bytes);
      }),
    );
  });

  it('keeps every key of an interval under its scan prefix, and contains() is the exact interval', () => {
    fc.assert(
      fc.property(keyBytes, keyBytes, keyBytes, (from, to, probe) => {
        if (from.length === 0 || to.length === 0) return;
        const interval = keyInterval(from, to);
        // range_end "\0" is etcd's "every key from `from` on".
        const unbounded = to.length === 1 && to[0] === 0;
        const inside = compareBytes(probe, from) >= 0 && (unbounded || compareBytes(probe, to) < 0);
        expect(interval.contains(probe)).toBe(inside);
        if (inside) expect(encodeKey(probe).startsWith(interval.scanPrefix)).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it('reads etcd\'s interval forms: a key alone, [key, "\\0") = from the key on, and prefixes', () => {
    const bytes = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text, 'latin1'));
    expect(keyInterval(bytes('a'), new Uint8Array(0)).single).toEqual(bytes('a'));
    const fromKey = keyInterval(bytes('b'), Uint8Array.of(0));
    expect([fromKey.contains(bytes('a')), fromKey.contains(bytes('b')), fromKey.contains(bytes('\xff\xff'))]).toEqual([false, true, true]);
    expect(fromKey.scanPrefix).toBe(etcdKeyPrefix);
    const prefix = keyInterval(bytes('foo/'), bytes('foo0'));
    expect(prefix.scanPrefix).toBe(`${etcdKeyPrefix}foo`);
    expect([prefix.contains(bytes('foo/x')), prefix.contains(bytes('foo')), prefix.contains(bytes('foo0'))]).toEqual([true, false, false]);
  });

  it('refuses a key too large once encoded: 4089 printable bytes fit, 2045 bytes of 0xff do not', () => {
    expect(() => encodeKey(new Uint8Array(4089).fill(0x61))).not.toThrow();
    expect(() => encodeKey(new Uint8Array(4090).fill(0x61))).toThrow(/at most 4096 bytes once encoded/);
    expect(() => encodeKey(new Uint8Array(2044).fill(0xff))).not.toThrow();
    expect(() => encodeKey(new Uint8Array(2045).fill(0xff))).toThrow(/once encoded/);
  });
});

describe('etcd values and lease ids', () => {
  it('keeps the lease beside the value and maps lease ids both ways', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 16 }), fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }), (value, lease) => {
        expect(decodeStoredValue(encodeStoredValue(value, lease))).toEqual({ value, lease });
      }),
    );
    for (const atoll of ['0.1', '7.2147483647', '4294967295.5']) expect(atollLeaseIdOf(etcdLeaseIdOf(atoll))).toBe(atoll);
    expect(etcdLeaseIdOf('4294967295.2147483647') < 1n << 63n).toBe(true);
    expect(atollLeaseIdOf(0n)).toBeUndefined();
    expect(atollLeaseIdOf(1n << 31n)).toBeUndefined();
  });
});
