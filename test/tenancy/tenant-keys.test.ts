/** The (tenant, key) encoding and the mapping of requests into it. */
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/keys/bucket.js';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import { prefixBucket } from '../../src/keys/prefix-bucket.js';
import { tenantOfInternalKey, tenantTag, toInternalKey, toUserKey, validateTenant, validateUserKey, withoutTenantTag } from '../../src/keys/tenant-keys.js';
import { mapOperation, unmapError, unmapResult } from '../../src/tenancy/map-operation.js';
import { anonymousPrincipal, requireClusterAdmin, requireRole } from '../../src/tenancy/principal.js';
import { AtollError } from '../../src/errors.js';
import { encodeTxnHandle } from '../../src/txn/txn-handle.js';

describe('tenant keys', () => {
  it('leaves the default tenant unchanged and gives other tenants their own buckets', () => {
    expect(toInternalKey('default', 'services/auth')).toBe('services/auth');
    const acme = toInternalKey('acme', 'services/auth');
    expect(acme).toBe('\u0000acme\u0000services/auth');
    expect(bucketOf(acme)).toBe('\u0000acme\u0000services');
    expect(tenantOfInternalKey(acme)).toBe('acme');
    expect(tenantOfInternalKey('services/auth')).toBe('default');
    expect(toUserKey('acme', acme)).toBe('services/auth');
    expect(() => toUserKey('globex', acme)).toThrow();
    expect(() => toUserKey('default', acme)).toThrow();
    // Routing hashes (tenant, bucket): some tenant's "services" lands elsewhere than the default's.
    const partitions = ['a', 'b', 'c', 'd', 'e', 'f'].map((t) => partitionOfBucket(bucketOf(toInternalKey(t, 'services/x')), 64));
    expect(new Set(partitions).size).toBeGreaterThan(1);
  });

  it('refuses keys that would name another tenant, and bad tenant names', () => {
    expect(() => validateUserKey('\u0000acme\u0000x')).toThrowError(expect.objectContaining({ code: 'INVALID_KEY' }) as Error);
    // U+0000 is reserved anywhere in a user key, not only first.
    expect(() => validateUserKey('ok/\u0000inside')).toThrowError(expect.objectContaining({ code: 'INVALID_KEY' }) as Error);
    for (const bad of ['', 'Acme', 'a/b', '-x', 'x'.repeat(64), 'a\u0000b']) expect(() => validateTenant(bad)).toThrow();
    validateTenant('acme-2_x');
  });

  it('removes the caller\'s tag from text in raw and JSON-escaped form', () => {
    const tag = tenantTag('acme');
    expect(withoutTenantTag('acme', `key ${JSON.stringify(`${tag}a/b`)} and ${tag}c`)).toBe('key "a/b" and c');
  });
});

describe('mapping requests into a tenant', () => {
  it('maps every key a request names, and unmaps every key an answer names', () => {
    expect(mapOperation('acme', { kind: 'get', request: { key: 'a/b' } })).toEqual({ kind: 'get', request: { key: '\u0000acme\u0000a/b' } });
    const prefix = mapOperation('acme', { kind: 'getByPrefix', request: { prefix: 'a' } });
    expect(prefix).toEqual({ kind: 'getByPrefix', request: { prefix: '\u0000acme\u0000a' } });
    expect(prefixBucket((prefix.request as { prefix: string }).prefix).keyPrefix).toBe('\u0000acme\u0000a/');
    const commit = mapOperation('acme', {
      kind: 'commit',
      request: { transaction: encodeTxnHandle({ partition: 1, partitionCount: 8, tenant: 'acme', bucket: '\u0000acme\u0000a', snapshotRevision: 1, isolation: 'snapshot', startedAtMs: 1 }), writes: [{ key: 'a/1', value: new Uint8Array() }], readKeys: ['a/2'], readPrefixes: ['a'] },
    });
    expect(commit.request).toMatchObject({ writes: [{ key: '\u0000acme\u0000a/1' }], readKeys: ['\u0000acme\u0000a/2'], readPrefixes: ['\u0000acme\u0000a'] });
    expect(() => mapOperation('globex', commit)).toThrowError(expect.objectContaining({ code: 'INVALID_TRANSACTION' }) as Error);
    expect(() => mapOperation('acme', { kind: 'put', request: { key: '\u0000globex\u0000a/1', value: new Uint8Array() } })).toThrowError(
      expect.objectContaining({ code: 'INVALID_KEY' }) as Error,
    );
    const page = unmapResult('acme', {
      kind: 'getByPrefix',
      response: { items: [{ key: '\u0000acme\u0000a/1', value: new Uint8Array(), createRevision: 1, modRevision: 1, version: 1, expiresAtMs: 0 }], revision: 1, nextPageToken: '' },
    });
    expect((page.response as unknown as { items: Array<{ key: string }> }).items[0]!.key).toBe('a/1');
    const error = unmapError('acme', new AtollError('TXN_CONFLICT', `conflict on ${JSON.stringify('\u0000acme\u0000a/1')}`, { key: '\u0000acme\u0000a/1' })) as AtollError;
    expect(error.message).toBe('conflict on "a/1"');
    expect(error.details).toEqual({ key: 'a/1' });
  });

  it('checks roles', () => {
    const reader = { tenant: 'acme', role: 'read' as const, clusterAdmin: false, tokenId: 'x' };
    expect(() => requireRole(reader, 'readwrite', 'put')).toThrowError(expect.objectContaining({ code: 'PERMISSION_DENIED' }) as Error);
    requireRole(reader, 'read', 'get');
    requireRole(anonymousPrincipal, 'admin', 'anything');
    expect(() => requireClusterAdmin({ ...reader, role: 'admin' }, 'quota')).toThrow(/cluster admin/);
  });
});
