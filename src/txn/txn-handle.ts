/**
 * The transaction handle BeginTransaction returns: everything a node needs to serve the
 * transaction's reads and validate its commit, so the server keeps no per-transaction state and
 * any leader (after a leader change, another node) can commit it.
 *
 * Form: `atx2.` + base64url(JSON) + `.` + base64url(MAC). The JSON is readable (the client library
 * decodes it to learn the partition and the snapshot clock) but not alterable: the MAC is
 * HMAC-SHA-256 over `atx2.` + the encoded JSON, truncated to 16 bytes, under a key every node of
 * the cluster derives alike (TxnHandleKeys). A node accepts a handle only with a valid MAC and
 * only from the tenant it names, so a caller cannot use another tenant's handle, nor move a
 * handle to another partition, bucket, snapshot revision, isolation or start time.
 *
 * The key comes from the cluster peer secrets when the node has them, else from the admin token;
 * a cluster with neither uses a fixed, public key, so its handles are forgeable (such a cluster
 * has one tenant and no authentication, so a forged handle reaches nothing the caller could not
 * read anyway).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { AtollError } from '../errors.js';
import { tenantTag } from '../keys/tenant-keys.js';
import type { Isolation } from '../api/node-api.js';

export interface TxnHandle {
  readonly partition: number;
  /** The partition count the handle was made for: a handle from another cluster shape is refused. */
  readonly partitionCount: number;
  /** The tenant that began the transaction: only its callers may use the handle. */
  readonly tenant: string;
  /** The internal bucket (the tenant's tag, then the user's bucket). */
  readonly bucket: string;
  readonly snapshotRevision: number;
  readonly isolation: Isolation;
  /** The leader's clock at begin: reads use it as "now", and the lifetime counts from it. */
  readonly startedAtMs: number;
  /**
   * The hash range the partition owned at begin, [start, end) (issue 32): the transaction's scope
   * as of its snapshot. Absent in handles of older nodes, whose scope is the equal table's.
   */
  readonly range?: { readonly start: number; readonly end: number };
}

const handlePrefix = 'atx2.';
/** A handle is small; anything longer is not one (and must not cost a large decode). */
const maxHandleLength = 8192;
/** Bytes of the HMAC-SHA-256 kept in a handle (128 bits). */
const macBytes = 16;
/** What the cluster secret is hashed with, so the handle key is used for nothing else. */
const handleKeyLabel = 'atoll-txn-handle';
/** The key of a cluster with neither peer secrets nor an admin token: public, so forgeable. */
const unauthenticatedSecret = 'atoll-unauthenticated-cluster';

interface HandleJson {
  p: number;
  n: number;
  e: string;
  b: string;
  r: number;
  i: 's' | 'z';
  t: number;
  g?: [number, number];
}

function invalid(reason: string): AtollError {
  return new AtollError('INVALID_TRANSACTION', `not a transaction handle from BeginTransaction: ${reason}`);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function payloadOf(handle: TxnHandle): string {
  const json: HandleJson = {
    p: handle.partition,
    n: handle.partitionCount,
    e: handle.tenant,
    b: handle.bucket,
    r: handle.snapshotRevision,
    i: handle.isolation === 'serializable' ? 'z' : 's',
    t: handle.startedAtMs,
    ...(handle.range !== undefined && { g: [handle.range.start, handle.range.end] as [number, number] }),
  };
  return Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
}

/** The handle's signed text (`atx2.` + payload) and its MAC, without checking either. */
function splitHandle(text: unknown): { signed: string; payload: string; mac: string } {
  if (typeof text !== 'string' || text.length === 0) throw invalid('empty');
  if (text.length > maxHandleLength) throw invalid('too long');
  if (!text.startsWith(handlePrefix)) throw invalid(`it must start with ${handlePrefix}`);
  const dot = text.lastIndexOf('.');
  if (dot < handlePrefix.length) throw invalid('it carries no MAC');
  return { signed: text.slice(0, dot), payload: text.slice(handlePrefix.length, dot), mac: text.slice(dot + 1) };
}

/**
 * Reads a handle's fields WITHOUT checking its MAC: for the client library, which has no key, and
 * for early checks. A node uses TxnHandleKeys.open before trusting a handle.
 */
export function decodeTxnHandle(text: unknown): TxnHandle {
  const { payload } = splitHandle(text);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid('it does not decode');
  }
  if (typeof json !== 'object' || json === null) throw invalid('it does not decode');
  const { p, n, e, b, r, i, t, g } = json as Partial<HandleJson>;
  // A partition a split made has an id past n (its first hash, src/node/replica/split-entry.ts).
  if (!isCount(p) || !isCount(n) || n < 1 || (p >= n && p >= 0xffff_ffff)) throw invalid('bad partition');
  if (typeof e !== 'string' || e.length === 0 || e.length > 63) throw invalid('bad tenant');
  if (typeof b !== 'string') throw invalid('bad bucket');
  if (!isCount(r)) throw invalid('bad snapshot revision');
  if (i !== 's' && i !== 'z') throw invalid('bad isolation');
  if (!isCount(t)) throw invalid('bad start time');
  if (g !== undefined && (!Array.isArray(g) || g.length !== 2 || !isCount(g[0]) || !isCount(g[1]) || g[0] >= g[1] || g[1] > 2 ** 32)) throw invalid('bad range');
  const handle = { partition: p, partitionCount: n, tenant: e, bucket: b, snapshotRevision: r, isolation: i === 'z' ? 'serializable' : 'snapshot', startedAtMs: t } as const;
  return g === undefined ? handle : { ...handle, range: { start: g[0], end: g[1] } };
}

export interface TxnHandleSecrets {
  /** Cluster peer secrets, current first (AtollNodeConfig.peerSecrets). */
  readonly peerSecrets?: readonly string[] | undefined;
  readonly adminToken?: string | undefined;
}

/**
 * The keys that sign and verify handles: HMAC(secret, "atoll-txn-handle") for each cluster peer
 * secret (the first signs, any verifies, so a secret can be rotated), else for the admin token,
 * else for a public constant. Every node of a cluster derives the same keys.
 */
export class TxnHandleKeys {
  private constructor(
    private readonly keys: readonly Buffer[],
    /** Whether the key derives from a secret (false: the public constant, handles are forgeable). */
    readonly unforgeable: boolean,
  ) {}

  static derive(secrets: TxnHandleSecrets): TxnHandleKeys {
    const peerSecrets = (secrets.peerSecrets ?? []).filter((secret) => secret.length > 0);
    if (peerSecrets.length > 0) return new TxnHandleKeys(peerSecrets.map(handleKeyOf), true);
    if (secrets.adminToken !== undefined && secrets.adminToken.length > 0) return new TxnHandleKeys([handleKeyOf(secrets.adminToken)], true);
    return new TxnHandleKeys([handleKeyOf(unauthenticatedSecret)], false);
  }

  /** The handle's text, signed with the current key. */
  encode(handle: TxnHandle): string {
    const signed = handlePrefix + payloadOf(handle);
    return `${signed}.${macOf(this.keys[0] as Buffer, signed).toString('base64url')}`;
  }

  /**
   * The handle, once its MAC verifies under one of the keys and it belongs to `tenant`;
   * INVALID_TRANSACTION otherwise (forged, altered, truncated, or another tenant's).
   */
  open(text: unknown, tenant: string): TxnHandle {
    const { signed, mac } = splitHandle(text);
    const given = Buffer.from(mac, 'base64url');
    const verified = given.length === macBytes && this.keys.some((key) => timingSafeEqual(macOf(key, signed), given));
    if (!verified) throw invalid('its MAC does not verify (altered, forged, or from another cluster)');
    const handle = decodeTxnHandle(text);
    if (handle.tenant !== tenant) throw invalid('it was begun by another caller');
    // Asserted by construction at begin; checked here so no handle can pair a tenant with another tenant's bucket.
    const tag = tenantTag(tenant);
    const bucketOurs = tag === '' ? !handle.bucket.startsWith('\u0000') : handle.bucket.startsWith(tag);
    if (!bucketOurs) throw invalid('its bucket is not of its tenant');
    return handle;
  }
}

function handleKeyOf(secret: string): Buffer {
  return createHmac('sha256', secret).update(handleKeyLabel).digest();
}

function macOf(key: Buffer, signed: string): Buffer {
  return createHmac('sha256', key).update(signed).digest().subarray(0, macBytes);
}

/** A handle signed with the keys of a cluster with no secrets (tests and the in-process fake node). */
export function encodeTxnHandle(handle: TxnHandle, keys: TxnHandleKeys = TxnHandleKeys.derive({})): string {
  return keys.encode(handle);
}
