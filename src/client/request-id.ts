/**
 * The request ids the client makes: timestamped (mvcc/request-id.ts), `t1.<now>.<random UUID>`,
 * 53 bytes. The partition deduplicates a resend while the first attempt's result is in its window,
 * and refuses one that comes later with REQUEST_ID_EXPIRED instead of applying it again. The
 * creation time is this machine's clock: one far behind makes fresh ids look expired (a definite
 * REQUEST_ID_EXPIRED, nothing applied), one more than a minute ahead makes them INVALID_ARGUMENT.
 */
import { randomUUID } from 'node:crypto';
import { formatTimestampedRequestId } from '../mvcc/request-id.js';

/** A new timestamped request id, for a write the caller may need to resend (WriteCallOptions.requestId). */
export function newRequestId(): string {
  return formatTimestampedRequestId(Date.now(), randomUUID());
}
