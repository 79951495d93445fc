/** The (tenant, key) encoding and the mapping of requests into it. */
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/keys/bucket.js';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import { prefixBucket } from '../../src/keys/prefix-bucket.js';
import { tenantOfInternalKey, tenantTag, toInternalKey, toUserKey, validateTenant, validateUserKey, withoutTenantTag } from '../../src/keys/tenant-keys.js';
import { mapOperation, scopedRequestId, unmapError, unmapResult } from '../../src/tenancy/map-operation.js';
import { requestIdCreatedAtMs } from '../../src/mvcc/request-id.js';
import type { KvOperation } from '../../src/wire/kv-operation.js';
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

  it('refuses U+0000 anywhere in every key, prefix and bucket a request names, for every tenant', () => {
    const invalidKey = expect.objectContaining({ code: 'INVALID_KEY' }) as Error;
    const value = new Uint8Array();
    const probes = ['\u0000acme\u0000users/alice', '\u0000system\u0000tokens/x', 'users/\u0000', 'us\u0000ers/x'];
    for (const tenant of ['default', 'globex']) {
      const handle = encodeTxnHandle({ partition: 1, partitionCount: 8, tenant, bucket: `${tenantTag(tenant)}users`, snapshotRevision: 1, isolation: 'snapshot', startedAtMs: 1 });
      for (const probe of probes) {
        const operations: KvOperation[] = [
          { kind: 'get', request: { key: probe } },
          { kind: 'exists', request: { key: probe } },
          { kind: 'put', request: { key: probe, value } },
          { kind: 'delete', request: { key: probe } },
          { kind: 'increment', request: { key: probe, delta: 1n } },
          { kind: 'extend', request: { key: probe, ttlMs: 1_000 } },
          { kind: 'beginTransaction', request: { key: probe } },
          { kind: 'getByPrefix', request: { prefix: probe } },
          { kind: 'getByPrefix', request: { prefix: probe.replace('/', '') } },
          { kind: 'get', request: { key: probe, transaction: handle } },
          { kind: 'commit', request: { transaction: handle, writes: [{ key: probe, value }], readKeys: [], readPrefixes: [] } },
          { kind: 'commit', request: { transaction: handle, writes: [], readKeys: [probe], readPrefixes: [] } },
          { kind: 'commit', request: { transaction: handle, writes: [], readKeys: [], readPrefixes: [probe] } },
          { kind: 'executeScript', request: { script: 'return 1', bucket: probe } },
        ];
        for (const operation of operations) expect(() => mapOperation(tenant, operation), `${tenant} ${operation.kind} ${JSON.stringify(probe)}`).toThrowError(invalidKey);
      }
    }
  });

  it('scopes request ids by tenant, within the dedup limits, and refuses U+0000 in them', () => {
    expect(scopedRequestId('default', 'req-1')).toBe('req-1');
    const acme = scopedRequestId('acme', 'req-1');
    const globex = scopedRequestId('globex', 'req-1');
    expect(new Set([acme, globex, 'req-1']).size).toBe(3);
    expect(scopedRequestId('acme', 'req-1')).toBe(acme);
    expect(acme.startsWith('\u0000')).toBe(true);
    expect(Buffer.byteLength(scopedRequestId('a'.repeat(63), 'x'.repeat(64)))).toBeLessThanOrEqual(64);
    for (const bad of ['\u0000acme\u0000req-1', 'req\u0000', '', 'x'.repeat(65)]) {
      for (const tenant of ['default', 'acme']) expect(() => scopedRequestId(tenant, bad)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }) as Error);
    }
    // A timestamped id keeps its creation time readable, so the partition can expire it (issue 16).
    const stamped = 't1.999999999999999.8f14e45f-ceea-467f-a0e6-2a8e2c6e4c5e';
    const acmeStamped = scopedRequestId('acme', stamped);
    expect(scopedRequestId('default', stamped)).toBe(stamped);
    expect(acmeStamped.startsWith('\u0000t1.999999999999999.')).toBe(true);
    expect(requestIdCreatedAtMs(acmeStamped)).toBe(999_999_999_999_999);
    expect(Buffer.byteLength(acmeStamped)).toBeLessThanOrEqual(64);
    expect(acmeStamped).not.toBe(scopedRequestId('globex', stamped));
    // Scoped ids are stored (dedup records): the digest may never change between versions.
    expect(acme).toBe('\u0000pjS1kHVT-7UobB172X8ZlOWBS6By-mfCPkeCIOAfZjo');
    expect(acmeStamped).toBe('\u0000t1.999999999999999.A902uRMCAg_HpNhDpp3jnqsqpNts0piNHafpLCv0skQ');
    expect(scopedRequestId('acme', 'Grüße-1')).toBe('\u0000gjKKryQyPlZC0UTM_EEGZJZ4ZD9kGPmPcO_b7tiBrts');
    expect(requestIdCreatedAtMs(acme)).toBeUndefined();
    // Every kind that carries a request id has it mapped.
    const value = new Uint8Array();
    const handle = encodeTxnHandle({ partition: 1, partitionCount: 8, tenant: 'acme', bucket: '\u0000acme\u0000a', snapshotRevision: 1, isolation: 'snapshot', startedAtMs: 1 });
    const operations: KvOperation[] = [
      { kind: 'put', request: { key: 'a/1', value, requestId: 'req-1' } },
      { kind: 'delete', request: { key: 'a/1', requestId: 'req-1' } },
      { kind: 'increment', request: { key: 'a/1', delta: 1n, requestId: 'req-1' } },
      { kind: 'extend', request: { key: 'a/1', ttlMs: 1_000, requestId: 'req-1' } },
      { kind: 'commit', request: { transaction: handle, writes: [], readKeys: [], readPrefixes: [], requestId: 'req-1' } },
      { kind: 'executeScript', request: { script: 'return 1', bucket: 'a', requestId: 'req-1' } },
    ];
    for (const operation of operations) {
      expect((mapOperation('acme', operation).request as { requestId?: string }).requestId, operation.kind).toBe(acme);
      if (operation.kind !== 'commit') expect((mapOperation('default', operation).request as { requestId?: string }).requestId, operation.kind).toBe('req-1');
    }
  });

  it('checks roles', () => {
    const reader = { tenant: 'acme', role: 'read' as const, clusterAdmin: false, tokenId: 'x' };
    expect(() => requireRole(reader, 'readwrite', 'put')).toThrowError(expect.objectContaining({ code: 'PERMISSION_DENIED' }) as Error);
    requireRole(reader, 'read', 'get');
    requireRole(anonymousPrincipal, 'admin', 'anything');
    expect(() => requireClusterAdmin({ ...reader, role: 'admin' }, 'quota')).toThrow(/cluster admin/);
  });
});
