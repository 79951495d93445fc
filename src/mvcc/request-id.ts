/**
 * The two forms of a request id (ApplyContext.requestId), as the partition tells them apart.
 *
 * - Timestamped: `t1.<createdAtMs>.<nonce>`, createdAtMs the client's clock when it made the id
 *   (decimal Unix epoch milliseconds, positive, no leading zero) and nonce any non-empty text that makes the
 *   id unique (the TypeScript client uses a random UUID). Once such an id's result has left the
 *   partition's dedup window, a resend is refused with REQUEST_ID_EXPIRED instead of applying
 *   again: the partition remembers the newest creation time among the ids it evicted
 *   (dedup-table.ts, `expiredThroughMs`), and an unknown id created at or before it may be one of
 *   them.
 * - Plain: any other text. Deduplicated while its result is in the window; after that a resend
 *   applies again, as before timestamped ids existed (older clients, other languages).
 *
 * A tenant-scoped id (tenancy/map-operation.ts scopedRequestId) is U+0000 followed by a hash; for a
 * timestamped id the scoped form keeps the creation time readable: U+0000 `t1.<createdAtMs>.` hash.
 * So the creation time is parsed with or without that leading U+0000.
 */

/** Starts every timestamped request id (format version 1). */
export const timestampedRequestIdPrefix = 't1.';

/**
 * The largest creation time a timestamped id may have: 15 decimal digits (the year 33658), which
 * keeps every scoped form within the 64-byte bound of a request id.
 */
const maxCreatedAtDigits = 15;

/**
 * How far ahead of the entry's time (ApplyContext.nowMs) a timestamped id's creation time may be.
 * Further ahead is INVALID_ARGUMENT (the client's clock is wrong): such an id, once evicted, would
 * raise the partition's expiry mark above the time of every other client's fresh ids, and they
 * would all be refused as expired until real time caught up.
 */
export const requestIdMaxAheadMs = 60_000;

const scopeMark = '\u0000';

/** The text of a timestamped id (no validation of the nonce beyond being non-empty). */
export function formatTimestampedRequestId(createdAtMs: number, nonce: string): string {
  if (!Number.isSafeInteger(createdAtMs) || createdAtMs < 1 || String(createdAtMs).length > maxCreatedAtDigits) {
    throw new RangeError(`createdAtMs must be a positive integer of at most ${maxCreatedAtDigits} digits`);
  }
  if (nonce === '') throw new RangeError('a request id nonce must not be empty');
  return `${timestampedRequestIdPrefix}${createdAtMs}.${nonce}`;
}

/**
 * The creation time of a timestamped id (plain or tenant-scoped), or undefined for a plain id.
 * Anything that is not exactly `t1.`, 1 to 15 digits without a leading zero (so at least 1), `.`,
 * and a non-empty rest is a plain id. (0 is left out: it stands for "none" in the dedup state.)
 */
export function requestIdCreatedAtMs(requestId: string): number | undefined {
  const start = (requestId.startsWith(scopeMark) ? scopeMark.length : 0) + timestampedRequestIdPrefix.length;
  if (!requestId.startsWith(timestampedRequestIdPrefix, start - timestampedRequestIdPrefix.length)) return undefined;
  const dot = requestId.indexOf('.', start);
  if (dot === -1 || dot === start || dot - start > maxCreatedAtDigits || dot === requestId.length - 1) return undefined;
  const digits = requestId.slice(start, dot);
  if (!/^[1-9][0-9]*$/.test(digits)) return undefined;
  return Number(digits);
}

/** The part of a timestamped id before its nonce (`t1.<createdAtMs>.`), or undefined for a plain id. */
export function timestampedRequestIdHead(requestId: string): string | undefined {
  const createdAtMs = requestIdCreatedAtMs(requestId);
  return createdAtMs === undefined ? undefined : `${timestampedRequestIdPrefix}${createdAtMs}.`;
}
