/**
 * 64-bit integers cross the wire as decimal text (protos.ts asks proto-loader for strings, because
 * a double silently rounds above 2^53). These helpers turn that text into the number or bigint the
 * API uses, refusing anything malformed or out of range with INVALID_ARGUMENT instead of letting
 * a rounded or negative revision reach the store.
 */
import { AtollError } from '../errors.js';

const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;
const decimalPattern = /^-?\d{1,20}$/;

/** Parses a decoded int64 field (text, or a number from a hand-built object) into a bigint. */
export function parseWireInt64(value: unknown, field: string): bigint {
  let parsed: bigint;
  if (typeof value === 'number' && Number.isSafeInteger(value)) {
    parsed = BigInt(value);
  } else if (typeof value === 'string' && decimalPattern.test(value)) {
    parsed = BigInt(value);
  } else {
    throw new AtollError('INVALID_ARGUMENT', `${field} must be a 64-bit integer, got ${describe(value)}`, { field });
  }
  if (parsed < int64Min || parsed > int64Max) {
    throw new AtollError('INVALID_ARGUMENT', `${field} is outside the 64-bit integer range`, { field });
  }
  return parsed;
}

/**
 * Parses a decoded int64 field that the API holds as a JavaScript number (revisions, TTLs, times):
 * it must be a non-negative integer no larger than 2^53 - 1.
 */
export function parseWireCount(value: unknown, field: string): number {
  const parsed = parseWireInt64(value, field);
  if (parsed < 0n) throw new AtollError('INVALID_ARGUMENT', `${field} must not be negative, got ${parsed}`, { field });
  if (parsed > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new AtollError('INVALID_ARGUMENT', `${field} must be at most 2^53 - 1, got ${parsed}`, { field });
  }
  return Number(parsed);
}

/** Checks a decoded 32-bit field (proto-loader gives numbers for those). */
export function parseWireUint32(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw new AtollError('INVALID_ARGUMENT', `${field} must be a 32-bit unsigned integer, got ${describe(value)}`, { field });
  }
  return value;
}

/** The wire form of an integer (String(1e21) would give exponent notation, so go through bigint). */
export function formatWireInt64(value: number | bigint): string {
  return typeof value === 'bigint' ? value.toString() : BigInt(Math.trunc(value)).toString();
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  return value === null ? 'null' : typeof value;
}
