/**
 * The merge's log entries (merge-entry.ts): they round-trip, are told apart from each other, from
 * split entries and from client commands by their first bytes, and malformed bytes (truncated,
 * voters unsorted or absent, a zero freeze index) are INVALID_ARGUMENT, never another error.
 */
import { describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { decodeFreezeEntry, decodeMergeEntry, encodeFreezeEntry, encodeMergeEntry, isFreezeEntry, isMergeEntry, type MergeEntry } from '../../src/node/replica/merge-entry.js';
import { encodeSplitEntry, isSplitEntry } from '../../src/node/replica/split-entry.js';
import { ByteWriter } from '../../src/storage/byte-codec.js';

const merge: MergeEntry = { nowMs: 1_700_000_000_123, right: 3_000_000_000, freezeIndex: 42, rightEnd: 2 ** 32, voters: [1, 2, 5] };

function codeOf(action: () => unknown): string {
  try {
    action();
    return 'ok';
  } catch (error) {
    if (isAtollError(error)) return error.code;
    throw error;
  }
}

describe('merge entries', () => {
  it('round-trip and are told apart from each other, from splits and from client commands', () => {
    const freezeBytes = encodeFreezeEntry({ nowMs: 1_700_000_000_000, into: 7 });
    const mergeBytes = encodeMergeEntry(merge);
    expect(decodeFreezeEntry(freezeBytes)).toEqual({ nowMs: 1_700_000_000_000, into: 7 });
    expect(decodeMergeEntry(mergeBytes)).toEqual(merge);
    const splitBytes = encodeSplitEntry({ nowMs: 1, mid: 9, newId: 9 });
    // A client command starts with its proposer's clock, a u64 whose first byte is 0.
    const command = new ByteWriter().uint64(1_700_000_000_000).uint8(1).finish();
    expect([isFreezeEntry(freezeBytes), isMergeEntry(freezeBytes), isSplitEntry(freezeBytes)]).toEqual([true, false, false]);
    expect([isFreezeEntry(mergeBytes), isMergeEntry(mergeBytes), isSplitEntry(mergeBytes)]).toEqual([false, true, false]);
    expect([isFreezeEntry(splitBytes), isMergeEntry(splitBytes)]).toEqual([false, false]);
    expect([isFreezeEntry(command), isMergeEntry(command)]).toEqual([false, false]);
  });

  it('refuses malformed bytes with INVALID_ARGUMENT', () => {
    const good = encodeMergeEntry(merge);
    for (let length = 0; length < good.length; length++) expect(codeOf(() => decodeMergeEntry(good.subarray(0, length)))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => decodeMergeEntry(encodeMergeEntry({ ...merge, voters: [2, 1] })))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => decodeMergeEntry(encodeMergeEntry({ ...merge, voters: [1, 1] })))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => decodeMergeEntry(encodeMergeEntry({ ...merge, voters: [] })))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => decodeMergeEntry(encodeMergeEntry({ ...merge, freezeIndex: 0 })))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => decodeMergeEntry(Uint8Array.from([...good, 0])))).toBe('INVALID_ARGUMENT');
    const freeze = encodeFreezeEntry({ nowMs: 1, into: 1 });
    for (let length = 0; length < freeze.length; length++) expect(codeOf(() => decodeFreezeEntry(freeze.subarray(0, length)))).toBe('INVALID_ARGUMENT');
    // Random tails after either magic: an AtollError or a decoded entry, never anything else.
    let seed = 12345;
    const next = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % 256;
    for (let round = 0; round < 500; round++) {
      const tail = Array.from({ length: next() % 64 }, next);
      for (const magic of [good.subarray(0, 8), freeze.subarray(0, 8)]) {
        const bytes = Uint8Array.from([...magic, ...tail]);
        const code = codeOf(() => (isMergeEntry(bytes) ? decodeMergeEntry(bytes) : decodeFreezeEntry(bytes)));
        expect(['ok', 'INVALID_ARGUMENT']).toContain(code);
      }
    }
  });
});
