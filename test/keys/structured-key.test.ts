import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/keys/bucket.js';
import { keyOf, keyPrefixOf, parseKey } from '../../src/keys/structured-key.js';

const bucketArbitrary = fc.string({ minLength: 1, maxLength: 8, unit: 'grapheme' }).filter((bucket) => !bucket.includes('/'));
// Parts drawn from an alphabet rich in the characters the codec must escape.
const trickyPart = fc.string({ maxLength: 6, unit: fc.constantFrom('a', ':', '\\', '/', '\u0000', 'é', '😀') });
const partArbitrary = fc.oneof(trickyPart, fc.string({ maxLength: 6, unit: 'grapheme' }));
const partsArbitrary = fc.array(partArbitrary, { maxLength: 5 });

describe('keyOf', () => {
  it('keeps ["a:b","c"] and ["a","b:c"] apart', () => {
    const left = keyOf('bucket', 'a:b', 'c');
    const right = keyOf('bucket', 'a', 'b:c');
    expect(left).not.toBe(right);
    expect(left).toBe('bucket/a\\:b:c');
    expect(right).toBe('bucket/a:b\\:c');
    expect(parseKey(left)).toEqual({ bucket: 'bucket', parts: ['a:b', 'c'] });
    expect(parseKey(right)).toEqual({ bucket: 'bucket', parts: ['a', 'b:c'] });
  });

  it('keeps the site identity: north/P1 and south/P1 differ', () => {
    expect(keyOf('assets', 'north', 'P1')).not.toBe(keyOf('assets', 'south', 'P1'));
  });

  it('is injective: different tuples never give the same key', () => {
    fc.assert(
      fc.property(bucketArbitrary, partsArbitrary, bucketArbitrary, partsArbitrary, (leftBucket, leftParts, rightBucket, rightParts) => {
        const same = leftBucket === rightBucket && JSON.stringify(leftParts) === JSON.stringify(rightParts);
        expect(keyOf(leftBucket, ...leftParts) === keyOf(rightBucket, ...rightParts)).toBe(same);
      }),
      { numRuns: 2000 },
    );
  });

  it('is injective on near-collisions built from separators and escapes', () => {
    const pieces = ['', 'a', ':', '\\', '\\:', ':\\'];
    const tuples: string[][] = [[]];
    for (const first of pieces) {
      tuples.push([first]);
      for (const second of pieces) tuples.push([first, second]);
    }
    const keys = new Set(tuples.map((parts) => keyOf('b', ...parts)));
    expect(keys.size).toBe(tuples.length);
  });

  it('round-trips through parseKey', () => {
    fc.assert(
      fc.property(bucketArbitrary, partsArbitrary, (bucket, parts) => {
        expect(parseKey(keyOf(bucket, ...parts))).toEqual({ bucket, parts });
      }),
      { numRuns: 1000 },
    );
  });

  it('routes by the bucket: bucketOf(keyOf(b, ...)) === b', () => {
    fc.assert(
      fc.property(bucketArbitrary, partsArbitrary, (bucket, parts) => {
        expect(bucketOf(keyOf(bucket, ...parts))).toBe(bucket);
      }),
      { numRuns: 1000 },
    );
  });

  it('rejects a bucket containing "/" or an empty bucket', () => {
    expect(() => keyOf('a/b', 'c')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => keyOf('', 'c')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('rejects keys that break the key rules', () => {
    expect(() => keyOf('b', 'x'.repeat(5000))).toThrow(expect.objectContaining({ code: 'KEY_TOO_LARGE' }));
    expect(() => keyOf('b', '\ud800')).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
  });
});

describe('keyPrefixOf', () => {
  it('is a prefix of exactly the tuples that extend the given parts', () => {
    fc.assert(
      fc.property(bucketArbitrary, partsArbitrary, partsArbitrary, (bucket, prefixParts, parts) => {
        const extendsParts = parts.length > prefixParts.length && prefixParts.every((part, index) => parts[index] === part);
        expect(keyOf(bucket, ...parts).startsWith(keyPrefixOf(bucket, ...prefixParts))).toBe(extendsParts);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('parseKey', () => {
  it('reads a plain key without escapes', () => {
    expect(parseKey('services')).toEqual({ bucket: 'services', parts: [] });
    expect(parseKey('services/auth')).toEqual({ bucket: 'services', parts: ['auth'] });
    expect(parseKey('services/')).toEqual({ bucket: 'services', parts: [''] });
  });

  it('rejects text keyOf cannot produce', () => {
    for (const key of ['b/a\\', 'b/a\\x', '/a']) {
      expect(() => parseKey(key)).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    }
  });
});
