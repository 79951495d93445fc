/**
 * The meta records of range changes (range-ops.ts): the hash range a partition owns once a split
 * or a merge made it data ('range'), and the merge freeze ('merge-freeze').
 */
import assert from 'node:assert/strict';
import { concatBytes, decodeUint64BE, encodeUint64BE } from '../storage/bytes.js';

/** The 'range' meta record: uint64BE(start) uint64BE(end). */
export function encodeOwnedRange(range: { readonly start: number; readonly end: number }): Uint8Array {
  return concatBytes(encodeUint64BE(range.start), encodeUint64BE(range.end));
}

export function decodeOwnedRange(bytes: Uint8Array): { start: number; end: number } {
  assert.equal(bytes.length, 16, 'corrupt partition range record');
  const range = { start: decodeUint64BE(bytes, 0), end: decodeUint64BE(bytes, 8) };
  assert(range.start < range.end && range.end <= 2 ** 32, 'corrupt partition range record');
  return range;
}

/** The 'merge-freeze' meta record: uint64BE(into) uint64BE(index). */
export function encodeFreeze(freeze: { readonly into: number; readonly index: number }): Uint8Array {
  return concatBytes(encodeUint64BE(freeze.into), encodeUint64BE(freeze.index));
}

export function decodeFreeze(bytes: Uint8Array): { into: number; index: number } {
  assert.equal(bytes.length, 16, 'corrupt merge freeze record');
  return { into: decodeUint64BE(bytes, 0), index: decodeUint64BE(bytes, 8) };
}
