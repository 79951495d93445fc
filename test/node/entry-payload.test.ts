/**
 * A put's value on its way into the Raft entry (issue 34 item 4): the executor writes the entry in
 * one pass into one buffer sized for it (encodeCommandEntry), so the value's bytes are copied once,
 * from the request into the entry, and the entry is the same bytes the two-step encoding gives.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeCommand, encodeCheckedCommand } from '../../src/mvcc/index.js';
import type { Command } from '../../src/mvcc/commands.js';
import { encodeCommandEntry, encodeEntryPayload } from '../../src/node/replica/partition-replica.js';
import { ByteReader } from '../../src/storage/byte-codec.js';

/** Bytes copied by Uint8Array#set and #slice while `run` runs (Buffer's copies go through them too). */
function bytesCopiedBy(run: () => Uint8Array): { copied: number; result: Uint8Array } {
  const { set, slice } = Uint8Array.prototype;
  let copied = 0;
  Uint8Array.prototype.set = function (this: Uint8Array, source: ArrayLike<number>, offset?: number) {
    copied += source.length;
    return set.call(this, source, offset);
  } as typeof set;
  Uint8Array.prototype.slice = function (this: Uint8Array, start?: number, end?: number) {
    const sliced = slice.call(this, start, end);
    copied += sliced.length;
    return sliced;
  } as typeof slice;
  try {
    const result = run();
    return { copied, result };
  } finally {
    Uint8Array.prototype.set = set;
    Uint8Array.prototype.slice = slice;
  }
}

const originalSet = Uint8Array.prototype.set;
const originalSlice = Uint8Array.prototype.slice;
afterEach(() => {
  Uint8Array.prototype.set = originalSet;
  Uint8Array.prototype.slice = originalSlice;
});

describe('a put entry', () => {
  const value = new Uint8Array(64 * 1024).map((_, index) => index % 251);
  const put: Command = { type: 'put', key: 'bucket/key', value, ifValue: new Uint8Array([1, 2, 3]), ttlMs: 5_000, returnPrevious: true };

  it('copies the value once, into the entry', () => {
    const { copied, result } = bytesCopiedBy(() => encodeCommandEntry(1_700_000_000_000, put, 'request-1'));
    // The value once, plus the key, the request id and the condition value (a few dozen bytes).
    expect(copied).toBeGreaterThanOrEqual(value.length);
    expect(copied).toBeLessThan(value.length + 256);
    // The value reaches the entry intact.
    const reader = new ByteReader(result, 'entry');
    expect(reader.uint64()).toBe(1_700_000_000_000);
    expect(reader.text()).toBe('request-1');
    const command = decodeCommand(result.subarray(result.length - reader.remaining));
    expect(command).toEqual(put);
  });

  it('is the payload the two-step encoding gives, which copied the value several times', () => {
    const twoStep = bytesCopiedBy(() => encodeEntryPayload(7, encodeCheckedCommand(put), 'r'));
    const onePass = bytesCopiedBy(() => encodeCommandEntry(7, put, 'r'));
    expect(Buffer.from(onePass.result).equals(Buffer.from(twoStep.result))).toBe(true);
    console.log(`bytes copied for a ${value.length}-byte value: two steps ${twoStep.copied}, one pass ${onePass.copied}`);
    expect(twoStep.copied).toBeGreaterThanOrEqual(3 * value.length);
  });

  it('an entry without a request id, and a command other than a put, still decode', () => {
    const compact: Command = { type: 'compact', belowRevision: 12 };
    const entry = encodeCommandEntry(3, compact);
    expect(Buffer.from(entry).equals(Buffer.from(encodeEntryPayload(3, encodeCheckedCommand(compact))))).toBe(true);
  });
});
