/**
 * One etcd key as the etcd layer handles it, and what etcd's Range does to a key list once it has
 * read an interval: the mod/create revision filters, sorting, the limit and keys_only (in etcd's
 * order: filter, sort, truncate; the count is the interval's, before filters and limit).
 */
import type { KeyRecord } from '../api/node-api.js';
import { compareBytes, decodeKey } from './key-codec.js';
import { etcdErrors } from './etcd-errors.js';
import type { KeyValueMessage, RangeRequest, SortOrder, SortTarget } from './etcd-messages.js';
import { int64Of } from './etcd-messages.js';
import { decodeStoredValue } from './stored-value.js';

/** A revision a transaction's own write gets only at commit: filled in afterwards (etcd-txn.ts). */
export interface PendingRevision {
  value: number;
}

export interface EtcdKv {
  readonly key: Uint8Array;
  readonly createRevision: number | PendingRevision;
  readonly modRevision: number | PendingRevision;
  readonly version: number;
  readonly value: Uint8Array;
  /** The etcd lease id, 0n for none. */
  readonly lease: bigint;
}

export function etcdKvOf(record: KeyRecord): EtcdKv {
  const stored = decodeStoredValue(record.value);
  return {
    key: decodeKey(record.key),
    createRevision: record.createRevision,
    modRevision: record.modRevision,
    version: record.version,
    value: stored.value,
    lease: stored.lease,
  };
}

export function revisionOf(revision: number | PendingRevision): number {
  return typeof revision === 'number' ? revision : revision.value;
}

/**
 * A revision for ordering and filtering inside a transaction: a write of the transaction not yet
 * committed will get the commit's revision, above every revision the snapshot holds (so sorting
 * by create or mod revision puts it last, as etcd does).
 */
function orderOf(revision: number | PendingRevision): number {
  if (typeof revision === 'number') return revision;
  return revision.value > 0 ? revision.value : Number.MAX_SAFE_INTEGER;
}

export function kvMessageOf(kv: EtcdKv, keysOnly = false): KeyValueMessage {
  return {
    key: kv.key,
    create_revision: revisionOf(kv.createRevision),
    mod_revision: revisionOf(kv.modRevision),
    version: kv.version,
    value: keysOnly ? new Uint8Array(0) : kv.value,
    lease: kv.lease.toString(),
  };
}

/** A Range's answer before it becomes a message (a transaction fills pending revisions first). */
export interface RangeOutcome {
  readonly kvs: readonly EtcdKv[];
  readonly more: boolean;
  readonly count: number;
  readonly keysOnly: boolean;
}

const sortOrders: readonly SortOrder[] = ['NONE', 'ASCEND', 'DESCEND'];
const sortTargets: readonly SortTarget[] = ['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'];

function enumName<T extends string>(names: readonly T[], value: T | number): T | undefined {
  if (typeof value === 'number') return names[value];
  return names.includes(value) ? value : undefined;
}

/** Checks what etcd checks of a RangeRequest before reading (v3rpc's checkRangeRequest). */
export function checkRangeRequest(request: RangeRequest): void {
  if (request.key.length === 0) throw etcdErrors.emptyKey();
  if (enumName(sortOrders, request.sort_order) === undefined || enumName(sortTargets, request.sort_target) === undefined) {
    throw etcdErrors.invalidSortOption();
  }
  for (const field of ['limit', 'revision', 'min_mod_revision', 'max_mod_revision', 'min_create_revision', 'max_create_revision'] as const) {
    if (Number.isNaN(int64Of(request[field]))) throw etcdErrors.invalid(`${field} must be an integer within ±2^53`);
  }
}

function sortKeyOf(target: SortTarget): (a: EtcdKv, b: EtcdKv) => number {
  switch (target) {
    case 'KEY':
      return (a, b) => compareBytes(a.key, b.key);
    case 'VERSION':
      return (a, b) => a.version - b.version;
    case 'CREATE':
      return (a, b) => orderOf(a.createRevision) - orderOf(b.createRevision);
    case 'MOD':
      return (a, b) => orderOf(a.modRevision) - orderOf(b.modRevision);
    case 'VALUE':
      return (a, b) => compareBytes(a.value, b.value);
  }
}

/** The interval's keys (in key order) shaped as the request asks. */
export function shapeRange(request: RangeRequest, interval: readonly EtcdKv[]): RangeOutcome {
  const minMod = int64Of(request.min_mod_revision);
  const maxMod = int64Of(request.max_mod_revision);
  const minCreate = int64Of(request.min_create_revision);
  const maxCreate = int64Of(request.max_create_revision);
  let kvs = interval.filter(
    (kv) =>
      (minMod === 0 || orderOf(kv.modRevision) >= minMod) &&
      (maxMod === 0 || orderOf(kv.modRevision) <= maxMod) &&
      (minCreate === 0 || orderOf(kv.createRevision) >= minCreate) &&
      (maxCreate === 0 || orderOf(kv.createRevision) <= maxCreate),
  );
  const target = enumName(sortTargets, request.sort_target) ?? 'KEY';
  let order = enumName(sortOrders, request.sort_order) ?? 'NONE';
  // etcd sorts ascending by default when a target other than the key is named.
  if (order === 'NONE' && target !== 'KEY') order = 'ASCEND';
  if (order !== 'NONE') {
    const compare = sortKeyOf(target);
    kvs = [...kvs].sort(order === 'ASCEND' ? compare : (a, b) => compare(b, a));
  }
  const limit = int64Of(request.limit);
  let more = false;
  if (limit > 0 && kvs.length > limit) {
    kvs = kvs.slice(0, limit);
    more = true;
  }
  // etcd reads no keys for count_only, so it never reports more.
  if (request.count_only) return { kvs: [], more: false, count: interval.length, keysOnly: request.keys_only };
  return { kvs, more, count: interval.length, keysOnly: request.keys_only };
}
