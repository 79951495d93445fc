/**
 * Moving a request between the caller's key space and the internal (tenant, key) space
 * (src/keys/tenant-keys.ts): at the node that received the call, before routing, every key a
 * request names is checked (validateUserKey) and prefixed with the caller's tenant tag; every key an
 * answer names is stripped of it; error messages lose the tag. Scripts name keys at run time, so
 * they travel unmapped with the tenant beside them and are mapped where they run (script-runner.ts);
 * only their routing bucket is checked here.
 *
 * Request ids are scoped the same way (scopedRequestId): the partition's dedup table is shared by
 * every tenant whose buckets hash to it, so an unscoped id would let one tenant read another's
 * recorded result, or record its own first and make the other's write a no-op.
 */
import { hash } from 'node:crypto';
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import { utf8ByteLength } from '../keys/utf8.js';
import { validateKey } from '../keys/validate-key.js';
import { decodeTxnHandle } from '../txn/txn-handle.js';
import {
  defaultTenant,
  reservedCharacterRefusal,
  reservedKeyCharacter,
  tenantTag,
  toUserKey,
  validateUserKey,
  validateUserPrefix,
  withoutTenantTag,
} from '../keys/tenant-keys.js';
import { timestampedRequestIdHead } from '../mvcc/request-id.js';
import { validateRequestId } from '../mvcc/validate-command.js';
import type { KvOperation, KvResult } from '../api/operations.js';

/**
 * A caller's key in the tenant's internal form. `check`: the request's one validation (the node the
 * call arrived at); a request a peer forwards as it arrived was checked there, and is only mapped.
 */
function mapKey(tenant: string, key: string, check: boolean): string {
  // toInternalKey, inline: this runs for every key of every request.
  const internal = tenantTag(tenant) + key;
  if (!check) return internal;
  // validateUserKey, inline: a valid key without the reserved character (validateUserText's check).
  validateKey(key);
  if (key.includes(reservedKeyCharacter)) throw reservedCharacterRefusal('a key');
  // The tag makes the stored key longer: it too must fit (the limit is on keys as stored).
  if (internal.length !== key.length) {
    const keyBytes = utf8ByteLength(internal);
    if (keyBytes > limits.maxKeyBytes) {
      throw new AtollError('KEY_TOO_LARGE', `a key must be at most ${limits.maxKeyBytes} UTF-8 bytes, got ${keyBytes}`, { keyBytes, maxKeyBytes: limits.maxKeyBytes });
    }
  }
  return internal;
}

function mapPrefix(tenant: string, prefix: string, check: boolean): string {
  if (check) validateUserPrefix(prefix);
  return tenantTag(tenant) + prefix;
}

/**
 * The dedup-table id of a caller's request id. The default tenant's ids are unchanged (a cluster
 * without authentication records what it always did); another tenant's id becomes U+0000 and a
 * SHA-256 of (tenant, id) in base64url, 44 bytes, inside validateRequestId's 64. A timestamped id
 * (mvcc/request-id.ts) keeps its `t1.<createdAtMs>.` head in clear between the two (at most 63
 * bytes), so the partition can still tell an expired resend from a new id. User ids may not
 * contain U+0000, so no caller can send another tenant's scoped id.
 */
export function scopedRequestId(tenant: string, requestId: string, check = true): string {
  if (check) validateRequestId(requestId);
  if (check && requestId.includes(reservedKeyCharacter)) {
    throw new AtollError('INVALID_ARGUMENT', 'a request id must not contain U+0000: that character is reserved for the tenant dimension');
  }
  if (tenant === defaultTenant) return requestId;
  // One-shot over the concatenation: the same digest as three updates of the parts, for a third of the cost.
  const digest = hash('sha256', tenant + reservedKeyCharacter + requestId, 'base64url');
  return reservedKeyCharacter + (timestampedRequestIdHead(requestId) ?? '') + digest;
}

function withRequestId<R extends { readonly requestId?: string }>(tenant: string, request: R, check: boolean): R {
  return request.requestId === undefined ? request : { ...request, requestId: scopedRequestId(tenant, request.requestId, check) };
}

/**
 * A cheap early check that a transaction handle belongs to the caller's tenant. The node verifies
 * the handle's tenant and MAC wherever it uses one (TxnHandleSigner); this keeps the clear error
 * for a handle of another tenant at the node that received the call.
 */
function checkHandle(tenant: string, transaction: string | undefined): void {
  if (transaction === undefined) return;
  const handle = decodeTxnHandle(transaction);
  if (handle.tenant !== tenant) throw new AtollError('INVALID_TRANSACTION', 'not a transaction handle from BeginTransaction: it was begun by another caller');
}

/**
 * The operation in the tenant's internal form. `check` (the default): every key, prefix and request
 * id it names is validated on the way, the keys' part of the request's one validation
 * (check-operation.ts adds the sizes). Without it (a request a peer forwarded as it arrived, checked
 * at that peer), the keys are only moved.
 */
export function mapOperation(tenant: string, operation: KvOperation, check = true): KvOperation {
  switch (operation.kind) {
    case 'get':
    case 'exists':
      if (check) checkHandle(tenant, operation.request.transaction);
      return { kind: operation.kind, request: { ...operation.request, key: mapKey(tenant, operation.request.key, check) } } as KvOperation;
    case 'put':
    case 'delete':
    case 'increment':
    case 'extend': {
      // One copy of the request, its request id (checked first, as for every kind) and key in the tenant's form.
      const { requestId } = operation.request;
      const scoped = requestId === undefined ? undefined : scopedRequestId(tenant, requestId, check);
      return { kind: operation.kind, request: { ...operation.request, ...(scoped !== undefined && { requestId: scoped }), key: mapKey(tenant, operation.request.key, check) } } as KvOperation;
    }
    case 'beginTransaction':
      return { kind: operation.kind, request: { ...operation.request, key: mapKey(tenant, operation.request.key, check) } };
    case 'getByPrefix':
      if (check) checkHandle(tenant, operation.request.transaction);
      return { kind: 'getByPrefix', request: { ...operation.request, prefix: mapPrefix(tenant, operation.request.prefix, check) } };
    case 'commit': {
      const request = operation.request;
      if (check) checkHandle(tenant, request.transaction);
      return {
        kind: 'commit',
        request: {
          ...withRequestId(tenant, request, check),
          writes: request.writes.map((write) => ({ ...write, key: mapKey(tenant, write.key, check) })),
          readKeys: request.readKeys.map((key) => mapKey(tenant, key, check)),
          readPrefixes: request.readPrefixes.map((prefix) => mapPrefix(tenant, prefix, check)),
        },
      };
    }
    case 'lease':
      // A grant's key names the lease's partition and tenant; other calls name the lease, whose
      // tenant the leader checks against the caller's.
      return operation.request.action === 'grant'
        ? { kind: 'lease', request: { ...operation.request, key: mapKey(tenant, operation.request.key ?? '', check) } }
        : operation;
    case 'executeScript': {
      // The script's keys are mapped where it runs; its bucket routes it, so it is checked here.
      const { bucket } = operation.request;
      if (check && bucket !== undefined && bucket !== '') validateUserKey(bucket);
      return { kind: 'executeScript', request: withRequestId(tenant, operation.request, check) };
    }
  }
}

export function unmapResult(tenant: string, result: KvResult): KvResult {
  if (tenantTag(tenant) === '') return result;
  switch (result.kind) {
    case 'put': {
      const previous = result.response.previous;
      if (previous === undefined) return result;
      return { kind: 'put', response: { ...result.response, previous: { ...previous, key: toUserKey(tenant, previous.key) } } };
    }
    case 'getByPrefix':
      return {
        kind: 'getByPrefix',
        response: { ...result.response, items: result.response.items.map((item) => ({ ...item, key: toUserKey(tenant, item.key) })) },
      };
    case 'beginTransaction':
      return { kind: 'beginTransaction', response: { ...result.response, bucket: toUserKey(tenant, result.response.bucket) } };
    case 'lease':
      return { kind: 'lease', response: { ...result.response, keys: result.response.keys.map((key) => toUserKey(tenant, key)) } };
    default:
      return result;
  }
}

/** The same error with the caller's tenant tag removed from its message and details. */
export function unmapError(tenant: string, error: unknown): unknown {
  if (!(error instanceof AtollError) || tenantTag(tenant) === '') return error;
  const details = error.details === undefined ? undefined : (JSON.parse(withoutTenantTag(tenant, JSON.stringify(error.details))) as Record<string, unknown>);
  return new AtollError(error.code, withoutTenantTag(tenant, error.message), details);
}
