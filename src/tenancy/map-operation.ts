/**
 * Moving a request between the caller's key space and the internal (tenant, key) space
 * (src/keys/tenant-keys.ts): at the node that received the call, before routing, every key a
 * request names is checked (validateUserKey) and prefixed with the caller's tenant tag; every key an
 * answer names is stripped of it; error messages lose the tag. Scripts name keys at run time, so
 * they travel unmapped with the tenant beside them and are mapped where they run.
 */
import { AtollError } from '../errors.js';
import { prefixBucket } from '../keys/prefix-bucket.js';
import { decodeTxnHandle } from '../txn/txn-handle.js';
import { tenantTag, toInternalKey, toUserKey, validateUserKey, withoutTenantTag } from '../keys/tenant-keys.js';
import type { KvOperation, KvResult } from '../server/kv-operation.js';

function mapKey(tenant: string, key: string): string {
  validateUserKey(key);
  return toInternalKey(tenant, key);
}

function mapPrefix(tenant: string, prefix: string): string {
  if (typeof prefix === 'string' && prefix.startsWith('\u0000')) validateUserKey(prefix);
  prefixBucket(prefix);
  return tenantTag(tenant) + prefix;
}

/** A transaction handle is only good for the tenant that began it. */
function checkHandle(tenant: string, transaction: string | undefined): void {
  if (transaction === undefined) return;
  const bucket = decodeTxnHandle(transaction).bucket;
  const tag = tenantTag(tenant);
  const ours = tag === '' ? !bucket.startsWith('\u0000') : bucket.startsWith(tag);
  if (!ours) throw new AtollError('INVALID_TRANSACTION', 'not a transaction handle from BeginTransaction: it was begun by another caller');
}

export function mapOperation(tenant: string, operation: KvOperation): KvOperation {
  switch (operation.kind) {
    case 'get':
    case 'exists':
      checkHandle(tenant, operation.request.transaction);
      return { kind: operation.kind, request: { ...operation.request, key: mapKey(tenant, operation.request.key) } } as KvOperation;
    case 'put':
    case 'delete':
    case 'increment':
    case 'extend':
    case 'beginTransaction':
      return { kind: operation.kind, request: { ...operation.request, key: mapKey(tenant, operation.request.key) } } as KvOperation;
    case 'getByPrefix':
      checkHandle(tenant, operation.request.transaction);
      return { kind: 'getByPrefix', request: { ...operation.request, prefix: mapPrefix(tenant, operation.request.prefix) } };
    case 'commit': {
      const request = operation.request;
      checkHandle(tenant, request.transaction);
      return {
        kind: 'commit',
        request: {
          ...request,
          writes: request.writes.map((write) => ({ ...write, key: mapKey(tenant, write.key) })),
          readKeys: request.readKeys.map((key) => mapKey(tenant, key)),
          readPrefixes: request.readPrefixes.map((prefix) => mapPrefix(tenant, prefix)),
        },
      };
    }
    case 'executeScript':
      if (operation.request.bucket !== undefined) validateUserKey(operation.request.bucket);
      return operation;
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
