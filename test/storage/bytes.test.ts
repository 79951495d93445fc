import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compareBytes,
  concatBytes,
  decodeUint64BE,
  encodeUint64BE,
  prefixUpperBound,
  startsWithBytes,
} from '../../src/storage/bytes.js';
import { escapeOrdered, escapeOrderedBody, unescapeOrdered } from '../../src/storage/ordered-escape.js';
import { ByteReader, ByteWriter } from '../../src/storage/byte-codec.js';
import { AtollError } from '../../src/errors.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';

const sign = (value: number): number => Math.sign(value);
const byteString = fc.uint8Array({ maxLength: 12 }).map((bytes) => Uint8Array.from(bytes));
// Zeros and 0xFF are the interesting bytes for the escape; weight them in.
const trickyBytes = fc
  .array(fc.constantFrom(0x00, 0x01, 0x02, 0xfe, 0xff), { maxLength: 8 })
  .map((values) => Uint8Array.from(values));
const anyBytes = fc.oneof(byteString, trickyBytes);

describe('encodeUint64BE', () => {
  it('round-trips and preserves numeric order', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), fc.maxSafeNat(), (left, right) => {
        expect(decodeUint64BE(encodeUint64BE(left))).toBe(left);
        expect(sign(compareBytes(encodeUint64BE(left), encodeUint64BE(right)))).toBe(sign(left - right));
      }),
    );
  });

  it('writes the layout a DataView writes, for any safe integer', () => {
    fc.assert(
      fc.property(fc.oneof(fc.maxSafeNat(), fc.constantFrom(0, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER)), (value) => {
        const expected = new Uint8Array(8);
        new DataView(expected.buffer).setBigUint64(0, BigInt(value), false);
        expect(encodeUint64BE(value)).toEqual(expected);
      }),
    );
  });

  it('has a fixed layout', () => {
    expect([...encodeUint64BE(258)]).toEqual([0, 0, 0, 0, 0, 0, 1, 2]);
    expect([...encodeUint64BE(2n ** 64n - 1n)]).toEqual(Array(8).fill(0xff));
  });
});

describe('escapeOrdered', () => {
  it('round-trips, also when more bytes follow', () => {
    fc.assert(
      fc.property(anyBytes, anyBytes, (value, suffix) => {
        const decoded = unescapeOrdered(concatBytes(escapeOrdered(value), suffix));
        expect(decoded.bytes).toEqual(value);
        expect(decoded.nextOffset).toBe(escapeOrdered(value).length);
      }),
    );
  });

  it('preserves byte order whatever follows each encoding', () => {
    fc.assert(
      fc.property(anyBytes, anyBytes, anyBytes, anyBytes, (left, right, leftSuffix, rightSuffix) => {
        fc.pre(compareBytes(left, right) !== 0);
        const encodedOrder = compareBytes(concatBytes(escapeOrdered(left), leftSuffix), concatBytes(escapeOrdered(right), rightSuffix));
        expect(sign(encodedOrder)).toBe(sign(compareBytes(left, right)));
      }),
    );
  });

  it('makes "starts with p" one contiguous range', () => {
    fc.assert(
      fc.property(anyBytes, anyBytes, (value, prefix) => {
        expect(startsWithBytes(escapeOrdered(value), escapeOrderedBody(prefix))).toBe(startsWithBytes(value, prefix));
      }),
    );
  });
});

describe('prefixUpperBound', () => {
  it('bounds exactly the keys with the prefix', () => {
    fc.assert(
      fc.property(anyBytes, anyBytes, (prefix, key) => {
        const bound = prefixUpperBound(prefix);
        const inRange = compareBytes(key, prefix) >= 0 && (bound === undefined || compareBytes(key, bound) < 0);
        expect(inRange).toBe(startsWithBytes(key, prefix));
      }),
    );
    expect(prefixUpperBound(Uint8Array.of(1, 0xff))).toEqual(Uint8Array.of(2));
    expect(prefixUpperBound(Uint8Array.of(0xff, 0xff))).toBeUndefined();
  });
});

describe('ByteWriter and ByteReader', () => {
  it('round-trip every field type', () => {
    const writer = new ByteWriter(1);
    writer.uint8(7).uint16(65535).uint32(2 ** 32 - 1).uint64(Number.MAX_SAFE_INTEGER).int64(-(2n ** 63n)).bytes(Uint8Array.of(0, 255)).text('ü/\u0000');
    const reader = new ByteReader(writer.finish());
    expect([reader.uint8(), reader.uint16(), reader.uint32(), reader.uint64(), reader.int64()]).toEqual([7, 65535, 2 ** 32 - 1, Number.MAX_SAFE_INTEGER, -(2n ** 63n)]);
    expect(reader.bytes()).toEqual(Uint8Array.of(0, 255));
    expect(reader.text()).toBe('ü/\u0000');
    reader.finish();
  });

  it('writes the layout a DataView writes (big-endian), for any values', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 0xffff_ffff }), fc.maxSafeNat(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (u16, u32, u64, i64) => {
        const expected = new DataView(new ArrayBuffer(22));
        expected.setUint16(0, u16, false);
        expected.setUint32(2, u32, false);
        expected.setBigUint64(6, BigInt(u64), false);
        expected.setBigInt64(14, i64, false);
        expect(new ByteWriter().uint16(u16).uint32(u32).uint64(u64).int64(i64).finish()).toEqual(new Uint8Array(expected.buffer));
        const reader = new ByteReader(new Uint8Array(expected.buffer));
        expect([reader.uint16(), reader.uint32(), reader.uint64(), reader.int64()]).toEqual([u16, u32, u64, i64]);
      }),
    );
    // A uint64 past the safe integers is refused by the reader.
    const tooBig = new Uint8Array(8);
    new DataView(tooBig.buffer).setBigUint64(0, 2n ** 53n, false);
    expect(() => new ByteReader(tooBig).uint64()).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => decodeUint64BE(tooBig)).toThrow();
  });

  it('writes text as a uint32 length and its UTF-8, in place or not, and reads it back', () => {
    const utf8 = new TextEncoder();
    const layoutOf = (texts: readonly string[]): Uint8Array => {
      const parts = texts.flatMap((text) => {
        const bytes = utf8.encode(text);
        const length = new Uint8Array(4);
        new DataView(length.buffer).setUint32(0, bytes.length, false);
        return [length, bytes];
      });
      return concatBytes(...parts);
    };
    // Short and long (past the in-place bound of 4,096 code units), ASCII and not, astral included.
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.tuple(fc.constantFrom('a', 'é', '€', '𝄞'), fc.integer({ min: 2040, max: 4200 })).map(([piece, count]) => piece.repeat(count)));
    fc.assert(
      fc.property(fc.array(text, { maxLength: 5 }), fc.integer({ min: 1, max: 64 }), (texts, capacity) => {
        const writer = new ByteWriter(capacity);
        for (const one of texts) writer.text(one);
        const written = writer.finish();
        expect(written).toEqual(layoutOf(texts));
        const reader = new ByteReader(written);
        expect(texts.map(() => reader.text())).toEqual(texts);
        reader.finish();
      }),
      { numRuns: 60 },
    );
    expect(() => new ByteReader(Uint8Array.of(0, 0, 0, 2, 0xc3, 0x28)).text()).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('keeps writers apart while they share a scratch buffer: nested, outgrown, viewed and abandoned ones', () => {
    const onScratch = (writer: ByteWriter): boolean => (writer as unknown as { onScratch: boolean }).onScratch;
    // An encoder that threw leaves its writer unfinished: the next writer takes the scratch anyway.
    const abandoned = new ByteWriter().text('abandoned');
    const outer = new ByteWriter().uint32(1).text('outer');
    expect([onScratch(abandoned), onScratch(outer)]).toEqual([false, true]);
    // A writer made while another is open takes the scratch; the other goes on in a copy of its bytes.
    const inner = new ByteWriter().uint32(2).text('inner');
    expect([onScratch(outer), onScratch(inner)]).toEqual([false, true]);
    outer.uint32(3);
    const innerBytes = inner.finish();
    const outerBytes = outer.finish();
    const innerReader = new ByteReader(innerBytes);
    expect([innerReader.uint32(), innerReader.text()]).toEqual([2, 'inner']);
    const outerReader = new ByteReader(outerBytes);
    expect([outerReader.uint32(), outerReader.text(), outerReader.uint32()]).toEqual([1, 'outer', 3]);
    const abandonedReader = new ByteReader(abandoned.text('!').finish());
    expect([abandonedReader.text(), abandonedReader.text()]).toEqual(['abandoned', '!']);
    // A view taken from a writer on the scratch is a copy: the next writer, on the scratch again, does not overwrite it.
    const viewedWriter = new ByteWriter().text('kept');
    const viewed = viewedWriter.written();
    const next = new ByteWriter();
    expect(onScratch(next)).toBe(true);
    next.text('overwrite?').finish();
    expect(new ByteReader(viewed).text()).toBe('kept');
    // A writer that outgrows the scratch (64 KiB) leaves it, hands it back, and goes on in its own buffer.
    const big = 'b'.repeat(4000);
    const grown = new ByteWriter();
    for (let index = 0; index < 20; index++) grown.text(big);
    expect(onScratch(grown)).toBe(false);
    const meanwhile = new ByteWriter().text('meanwhile');
    expect(onScratch(meanwhile)).toBe(true);
    const grownReader = new ByteReader(grown.finish());
    for (let index = 0; index < 20; index++) expect(grownReader.text()).toBe(big);
    grownReader.finish();
    expect(new ByteReader(meanwhile.finish()).text()).toBe('meanwhile');
    // Writing again after finish() does not change what finish() returned.
    const reused = new ByteWriter().text('first');
    const firstBytes = reused.finish();
    reused.text('second');
    expect(new ByteReader(firstBytes).text()).toBe('first');
    const both = new ByteReader(reused.finish());
    expect([both.text(), both.text()]).toEqual(['first', 'second']);
  });

  it('reports truncated and trailing input as INVALID_ARGUMENT', () => {
    const bytes = new ByteWriter().bytes(Uint8Array.of(1, 2, 3)).finish();
    expect(() => new ByteReader(bytes.subarray(0, 5)).bytes()).toThrow(AtollError);
    const reader = new ByteReader(Uint8Array.of(1, 2));
    reader.uint8();
    expect(() => reader.finish()).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('partitionKeyPrefix', () => {
  it('gives every keyspace and partition a distinct prefix of one length, none a prefix of another', () => {
    const prefixes = [0, 1, 255, 256, 65_535, 2 ** 32 - 1].flatMap((id) => [partitionKeyPrefix('raft', id), partitionKeyPrefix('mvcc', id)]);
    for (const prefix of prefixes) expect(prefix.length).toBe(5);
    expect(new Set(prefixes.map((prefix) => [...prefix].join(','))).size).toBe(prefixes.length);
    expect([...partitionKeyPrefix('mvcc', 258)]).toEqual([0x03, 0, 0, 1, 2]);
  });
});
