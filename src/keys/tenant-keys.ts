/**
 * Tenants are a dimension of the key space. Internally every key is (tenant, key), encoded as one
 * string so that routing, MVCC, prefix scans, transactions and TTLs work per tenant unchanged:
 *
 *   tenant "default":  the key itself                 services/auth
 *   any other tenant:  U+0000 tenant U+0000 key        \0acme\0services/auth
 *
 * The tenant tag contains no "/", so the internal key's bucket is the tag followed by the user's
 * bucket: routing hashes (tenant, bucket), two tenants' `services` buckets land on unrelated
 * partitions, and a bucket still maps to one partition.
 *
 * Invariants:
 * - U+0000 is reserved: no user key, prefix, bucket or request id contains it anywhere
 *   (validateUserKey, validateUserPrefix, validateUserText refuse it with INVALID_KEY), so no
 *   user key of any tenant can equal or prefix another tenant's internal key, or the system
 *   tenant's: a caller cannot name another tenant's data. (Refusing it only in first position
 *   would be enough for keys, but not for text that is concatenated after a tag or inside a
 *   script; one rule everywhere is easier to keep.)
 * - The default tenant's internal keys are the user keys, so a cluster without authentication
 *   stores exactly what it stored before tenants existed.
 * - toUserKey is only applied to internal keys of the caller's own tenant (asserted).
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';
import { prefixBucket } from './prefix-bucket.js';
import { validateKey } from './validate-key.js';

export const defaultTenant = 'default';

/** The tenant that holds the cluster's own records (tokens, quotas); no token can belong to it. */
export const systemTenant = 'system';

const tenantPattern = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export function validateTenant(tenant: unknown): asserts tenant is string {
  if (typeof tenant !== 'string' || !tenantPattern.test(tenant)) {
    throw new AtollError('INVALID_ARGUMENT', `a tenant name is 1 to 63 characters of a-z, 0-9, "_" and "-", starting with a letter or digit; got ${JSON.stringify(tenant)}`);
  }
}

/** The text every internal key of `tenant` starts with ("" for the default tenant). */
export function tenantTag(tenant: string): string {
  return tenant === defaultTenant ? '' : `\u0000${tenant}\u0000`;
}

/** The character that frames a tenant tag; no user-supplied key text may contain it. */
export const reservedKeyCharacter = '\u0000';

/**
 * Refuses text that will become part of a key (a key, prefix, bucket, script string, counter
 * name) when it contains U+0000 anywhere. `what` names it in the message ("a key", "a prefix").
 */
export function validateUserText(text: string, what: string): void {
  if (text.includes(reservedKeyCharacter)) throw reservedCharacterRefusal(what);
}

/** The refusal of caller text that contains U+0000 (validateUserText's; `what` names the text). */
export function reservedCharacterRefusal(what: string): AtollError {
  return new AtollError('INVALID_KEY', `${what} must not contain U+0000: that character is reserved for the tenant dimension`);
}

/** Checks a key a caller sent: a valid key that does not contain the reserved character. */
export function validateUserKey(key: unknown): asserts key is string {
  validateKey(key);
  validateUserText(key, 'a key');
}

/** Checks a prefix a caller sent (prefixBucket's rules, and no reserved character). */
export function validateUserPrefix(prefix: unknown): asserts prefix is string {
  if (typeof prefix === 'string') validateUserText(prefix, 'a prefix');
  prefixBucket(prefix as string);
}

export function toInternalKey(tenant: string, key: string): string {
  return tenantTag(tenant) + key;
}

export function toUserKey(tenant: string, internalKey: string): string {
  const tag = tenantTag(tenant);
  assert(internalKey.startsWith(tag) && (tag !== '' || !internalKey.startsWith('\u0000')), 'an internal key of another tenant reached a response');
  return internalKey.slice(tag.length);
}

/** The tenant an internal key belongs to. */
export function tenantOfInternalKey(internalKey: string): string {
  if (!internalKey.startsWith('\u0000')) return defaultTenant;
  const end = internalKey.indexOf('\u0000', 1);
  return end === -1 ? defaultTenant : internalKey.slice(1, end);
}

/**
 * Rewrites text meant for the caller (an error message, details) so the caller's own tenant tag
 * disappears from the keys it mentions, in raw and JSON-escaped form.
 */
export function withoutTenantTag(tenant: string, text: string): string {
  const tag = tenantTag(tenant);
  if (tag === '') return text;
  const escaped = JSON.stringify(tag).slice(1, -1);
  return text.split(tag).join('').split(escaped).join('');
}
