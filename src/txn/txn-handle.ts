/**
 * The transaction handle BeginTransaction returns: everything a node needs to serve the
 * transaction's reads and validate its commit, so the server keeps no per-transaction state and
 * any leader (after a leader change, another node) can commit it.
 *
 * Form: `atx1.` + base64url(JSON). It is not a secret and not a capability: forging one only lets
 * a caller read or commit at a snapshot it could have asked for anyway, and every commit is
 * validated against the partition's state. (With tenants, the tenant comes from the caller's
 * credentials, never from the handle.)
 */
import { AtollError } from '../errors.js';
import type { Isolation } from '../node/api.js';

export interface TxnHandle {
  readonly partition: number;
  /** The partition count the handle was made for: a handle from another cluster shape is refused. */
  readonly partitionCount: number;
  readonly bucket: string;
  readonly snapshotRevision: number;
  readonly isolation: Isolation;
  /** The leader's clock at begin: reads use it as "now", and the lifetime counts from it. */
  readonly startedAtMs: number;
}

const handlePrefix = 'atx1.';
/** A handle is small; anything longer is not one (and must not cost a large decode). */
const maxHandleLength = 8192;

interface HandleJson {
  p: number;
  n: number;
  b: string;
  r: number;
  i: 's' | 'z';
  t: number;
}

export function encodeTxnHandle(handle: TxnHandle): string {
  const json: HandleJson = {
    p: handle.partition,
    n: handle.partitionCount,
    b: handle.bucket,
    r: handle.snapshotRevision,
    i: handle.isolation === 'serializable' ? 'z' : 's',
    t: handle.startedAtMs,
  };
  return handlePrefix + Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
}

function invalid(reason: string): AtollError {
  return new AtollError('INVALID_TRANSACTION', `not a transaction handle from BeginTransaction: ${reason}`);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

export function decodeTxnHandle(text: unknown): TxnHandle {
  if (typeof text !== 'string' || text.length === 0) throw invalid('empty');
  if (text.length > maxHandleLength) throw invalid('too long');
  if (!text.startsWith(handlePrefix)) throw invalid(`it must start with ${handlePrefix}`);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(text.slice(handlePrefix.length), 'base64url').toString('utf8'));
  } catch {
    throw invalid('it does not decode');
  }
  if (typeof json !== 'object' || json === null) throw invalid('it does not decode');
  const { p, n, b, r, i, t } = json as Partial<HandleJson>;
  if (!isCount(p) || !isCount(n) || n < 1 || p >= n) throw invalid('bad partition');
  if (typeof b !== 'string') throw invalid('bad bucket');
  if (!isCount(r)) throw invalid('bad snapshot revision');
  if (i !== 's' && i !== 'z') throw invalid('bad isolation');
  if (!isCount(t)) throw invalid('bad start time');
  return { partition: p, partitionCount: n, bucket: b, snapshotRevision: r, isolation: i === 'z' ? 'serializable' : 'snapshot', startedAtMs: t };
}
