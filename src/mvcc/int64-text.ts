/**
 * Counters are stored as the canonical decimal text of a signed 64-bit integer: an optional "-",
 * then "0" or digits without a leading zero; "-0", "+1", " 1", "01" and "1.0" are not canonical.
 * Text keeps counters readable by any client that does a plain get.
 */

export const int64Min = -(1n << 63n);
export const int64Max = (1n << 63n) - 1n;

const canonicalInt64Pattern = /^-?(0|[1-9][0-9]{0,18})$/;

export function isInt64(value: bigint): boolean {
  return value >= int64Min && value <= int64Max;
}

/** The integer a stored value holds, or undefined when it is not a canonical int64. */
export function parseCanonicalInt64(bytes: Uint8Array): bigint | undefined {
  // 20 bytes fit "-9223372036854775808"; longer cannot be canonical, and is not worth decoding.
  if (bytes.length === 0 || bytes.length > 20) return undefined;
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  if (!canonicalInt64Pattern.test(text) || text === '-0') return undefined;
  const value = BigInt(text);
  return isInt64(value) ? value : undefined;
}

export function formatInt64(value: bigint): Uint8Array {
  return new TextEncoder().encode(value.toString());
}
