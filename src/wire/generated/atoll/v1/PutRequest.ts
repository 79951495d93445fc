// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface PutRequest {
  /**
   * The key to write. Required.
   */
  'key'?: (string);
  /**
   * The bytes to store (at most 1 MiB; empty is allowed).
   */
  'value'?: (Buffer | Uint8Array | string);
  /**
   * Expire the key this many milliseconds after the write. Without it (and without keep_ttl) the
   * key never expires, even if it had a TTL before.
   */
  'ttlMs'?: (number | string | Long);
  /**
   * Keep the key's current expiry (Redis KEEPTTL). Cannot be combined with ttl_ms.
   */
  'keepTtl'?: (boolean);
  /**
   * Write only if the key is absent (missing, deleted or expired).
   */
  'ifAbsent'?: (boolean);
  /**
   * Write only if the key is present.
   */
  'ifPresent'?: (boolean);
  /**
   * Write only if the key's mod_revision equals this (compare-and-swap); 0 means "only if absent".
   */
  'ifModRevision'?: (number | string | Long);
  /**
   * Write only if the key is present and holds exactly these bytes.
   */
  'ifValue'?: (Buffer | Uint8Array | string);
  /**
   * Return the version this write replaced in PutResponse.previous.
   */
  'returnPrevious'?: (boolean);
  /**
   * Optional idempotency key (1-64 bytes): a retry carrying the same id within the partition's
   * dedup window returns the first attempt's result instead of applying again (exactly-once).
   * A timestamped id, t1.<createdAtMs>.<nonce>, resent after the window is REQUEST_ID_EXPIRED
   * (FAILED_PRECONDITION), never applied twice; a plain id then applies again (docs/api.md).
   */
  'requestId'?: (string);
  /**
   * Attach the key to this lease (the id LeaseResponse.lease returned): the key is deleted when
   * the lease is revoked or expires. The key must be in the lease's partition (else
   * INVALID_ARGUMENT, LEASE_WRONG_PARTITION); an unknown or ended lease is NOT_FOUND
   * (LEASE_NOT_FOUND). A put without a lease detaches the key from any lease.
   */
  'lease'?: (string);
  /**
   * Fenced write: the caller's fencing token (a lock's token, docs/api.md "Locks and fencing").
   * The write fails with FAILED_PRECONDITION (FENCED), changing nothing, when the live key was
   * last written by a fenced write with a higher token (a newer lock holder); otherwise the key
   * remembers the highest token that wrote it while it stays live (a delete or expiry forgets
   * it). At least 1.
   */
  'ifFence'?: (number | string | Long);
  '_ttlMs'?: "ttlMs";
  '_ifModRevision'?: "ifModRevision";
  '_ifValue'?: "ifValue";
  '_requestId'?: "requestId";
  '_lease'?: "lease";
  '_ifFence'?: "ifFence";
}

export interface PutRequest__Output {
  /**
   * The key to write. Required.
   */
  'key': (string);
  /**
   * The bytes to store (at most 1 MiB; empty is allowed).
   */
  'value': (Buffer);
  /**
   * Expire the key this many milliseconds after the write. Without it (and without keep_ttl) the
   * key never expires, even if it had a TTL before.
   */
  'ttlMs'?: (string);
  /**
   * Keep the key's current expiry (Redis KEEPTTL). Cannot be combined with ttl_ms.
   */
  'keepTtl': (boolean);
  /**
   * Write only if the key is absent (missing, deleted or expired).
   */
  'ifAbsent': (boolean);
  /**
   * Write only if the key is present.
   */
  'ifPresent': (boolean);
  /**
   * Write only if the key's mod_revision equals this (compare-and-swap); 0 means "only if absent".
   */
  'ifModRevision'?: (string);
  /**
   * Write only if the key is present and holds exactly these bytes.
   */
  'ifValue'?: (Buffer);
  /**
   * Return the version this write replaced in PutResponse.previous.
   */
  'returnPrevious': (boolean);
  /**
   * Optional idempotency key (1-64 bytes): a retry carrying the same id within the partition's
   * dedup window returns the first attempt's result instead of applying again (exactly-once).
   * A timestamped id, t1.<createdAtMs>.<nonce>, resent after the window is REQUEST_ID_EXPIRED
   * (FAILED_PRECONDITION), never applied twice; a plain id then applies again (docs/api.md).
   */
  'requestId'?: (string);
  /**
   * Attach the key to this lease (the id LeaseResponse.lease returned): the key is deleted when
   * the lease is revoked or expires. The key must be in the lease's partition (else
   * INVALID_ARGUMENT, LEASE_WRONG_PARTITION); an unknown or ended lease is NOT_FOUND
   * (LEASE_NOT_FOUND). A put without a lease detaches the key from any lease.
   */
  'lease'?: (string);
  /**
   * Fenced write: the caller's fencing token (a lock's token, docs/api.md "Locks and fencing").
   * The write fails with FAILED_PRECONDITION (FENCED), changing nothing, when the live key was
   * last written by a fenced write with a higher token (a newer lock holder); otherwise the key
   * remembers the highest token that wrote it while it stays live (a delete or expiry forgets
   * it). At least 1.
   */
  'ifFence'?: (string);
  '_ttlMs'?: "ttlMs";
  '_ifModRevision'?: "ifModRevision";
  '_ifValue'?: "ifValue";
  '_requestId'?: "requestId";
  '_lease'?: "lease";
  '_ifFence'?: "ifFence";
}
