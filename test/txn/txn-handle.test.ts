/** Transaction handles are signed (HMAC) and name their tenant: forged, altered and foreign handles are refused. */
import { describe, expect, it } from 'vitest';
import { decodeTxnHandle, TxnHandleKeys, type TxnHandle } from '../../src/txn/txn-handle.js';
import { TxnScope } from '../../src/txn/txn-scope.js';

const handle: TxnHandle = {
  partition: 3,
  partitionCount: 8,
  tenant: 'acme',
  bucket: '\u0000acme\u0000bank',
  snapshotRevision: 42,
  isolation: 'snapshot',
  startedAtMs: 1_700_000_000_000,
};
const refused = expect.objectContaining({ code: 'INVALID_TRANSACTION' }) as Error;

/** The handle with its JSON payload changed and the original MAC kept. */
function altered(text: string, change: (json: Record<string, unknown>) => void): string {
  const [prefix, payload, mac] = text.split('.') as [string, string, string];
  const json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  change(json);
  return `${prefix}.${Buffer.from(JSON.stringify(json)).toString('base64url')}.${mac}`;
}

describe('transaction handle MAC', () => {
  const keys = TxnHandleKeys.derive({ peerSecrets: ['secret-1'] });

  it('opens its own handles for their tenant only', () => {
    const text = keys.encode(handle);
    expect(keys.open(text, 'acme')).toEqual(handle);
    expect(decodeTxnHandle(text)).toEqual(handle);
    expect(() => keys.open(text, 'globex')).toThrowError(refused);
    expect(() => keys.open(text, 'default')).toThrowError(refused);
    expect(TxnScope.fromVerified(text, 8, keys, 'acme').handle).toEqual(handle);
    expect(() => TxnScope.fromVerified(text, 8, keys, 'globex')).toThrowError(refused);
  });

  it('refuses a handle whose partition, bucket, tenant, revision, isolation or start time was changed', () => {
    const text = keys.encode(handle);
    const changes: Array<(json: Record<string, unknown>) => void> = [
      (json) => (json['p'] = 4),
      (json) => (json['b'] = '\u0000acme\u0000other'),
      (json) => (json['e'] = 'globex'),
      (json) => (json['r'] = 1),
      (json) => (json['i'] = 'z'),
      (json) => (json['t'] = 1_800_000_000_000),
    ];
    for (const change of changes) {
      const forged = altered(text, change);
      expect(() => decodeTxnHandle(forged)).not.toThrow(); // well-formed: only the MAC tells
      expect(() => keys.open(forged, 'acme')).toThrowError(refused);
      expect(() => keys.open(forged, 'globex')).toThrowError(refused);
    }
    for (const bad of [text.slice(0, -2), `${text}AA`, text.slice(0, text.lastIndexOf('.')), `${text.slice(0, text.lastIndexOf('.'))}.`, `atx1.${text.slice(5)}`]) {
      expect(() => keys.open(bad, 'acme')).toThrowError(refused);
    }
  });

  it('refuses handles signed with another key, and a handle pairing a tenant with another tenant\'s bucket', () => {
    const other = TxnHandleKeys.derive({ peerSecrets: ['secret-2'] });
    expect(() => keys.open(other.encode(handle), 'acme')).toThrowError(refused);
    // A cluster without secrets uses a public key: anyone can sign with it, so another cluster refuses them.
    expect(() => keys.open(TxnHandleKeys.derive({}).encode(handle), 'acme')).toThrowError(refused);
    expect(() => keys.open(keys.encode({ ...handle, tenant: 'globex' }), 'globex')).toThrowError(refused);
    expect(() => keys.open(keys.encode({ ...handle, tenant: 'default' }), 'default')).toThrowError(refused);
  });

  it('derives the key from the peer secrets (first signs, any verifies), else the admin token, else a public constant', () => {
    const rotated = TxnHandleKeys.derive({ peerSecrets: ['secret-new', 'secret-1'] });
    expect(rotated.open(keys.encode(handle), 'acme')).toEqual(handle);
    expect(() => keys.open(rotated.encode(handle), 'acme')).toThrowError(refused);
    expect(TxnHandleKeys.derive({ peerSecrets: ['s'], adminToken: 'a' }).open(TxnHandleKeys.derive({ peerSecrets: ['s'] }).encode(handle), 'acme')).toEqual(handle);
    const byAdmin = TxnHandleKeys.derive({ adminToken: 'admin-token' });
    expect(byAdmin.unforgeable).toBe(true);
    expect(() => byAdmin.open(TxnHandleKeys.derive({ adminToken: 'other-token' }).encode(handle), 'acme')).toThrowError(refused);
    expect(TxnHandleKeys.derive({ peerSecrets: [] }).unforgeable).toBe(false);
    expect(keys.unforgeable).toBe(true);
  });
});
