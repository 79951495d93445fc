/**
 * Reading a tenant's etcd keyspace through the NodeApi: one key with `get`, an interval as one
 * prefix scan of the bucket (key-codec.ts: the interval's keys share its scan prefix), paged at
 * one revision and filtered exactly; and the keyspace's compaction floor.
 */
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import type { CallContext, Consistency, NodeApi } from '../api/node-api.js';
import { etcdKvOf, type EtcdKv } from './etcd-kv.js';
import { etcdLimits } from './etcd-limits.js';
import { etcdErrors } from './etcd-errors.js';
import { etcdMetaPrefix, type KeyInterval } from './key-codec.js';

/** Where a read looks: the newest state, a past revision, or a transaction's snapshot. */
export interface ReadAt {
  readonly revision?: number;
  readonly consistency?: Consistency;
  readonly transaction?: string;
}

export interface IntervalRead {
  /** The interval's live keys in key order. */
  readonly kvs: EtcdKv[];
  /** The revision the read was served at. */
  readonly revision: number;
}

function readOptions(at: ReadAt): ReadAt {
  if (at.transaction !== undefined) return { transaction: at.transaction };
  return {
    ...(at.revision !== undefined && at.revision > 0 && { revision: at.revision }),
    ...(at.consistency !== undefined && { consistency: at.consistency }),
  };
}

export async function readInterval(api: NodeApi, interval: KeyInterval, at: ReadAt, context: CallContext): Promise<IntervalRead> {
  if (interval.single !== undefined) {
    const response = await api.get({ key: interval.scanPrefix, ...readOptions(at) }, context);
    if (!response.found) return { kvs: [], revision: response.revision };
    return { kvs: [etcdKvOf({ key: interval.scanPrefix, ...response })], revision: response.revision };
  }
  const kvs: EtcdKv[] = [];
  let pageToken = '';
  let revision = 0;
  let scanned = 0;
  for (;;) {
    const page = await api.getByPrefix({ prefix: interval.scanPrefix, limit: limits.maxPageSize, ...(pageToken !== '' && { pageToken }), ...readOptions(at) }, context);
    if (revision === 0) revision = page.revision;
    for (const record of page.items) {
      const kv = etcdKvOf(record);
      if (interval.contains(kv.key)) kvs.push(kv);
    }
    scanned += page.items.length;
    if (scanned > etcdLimits.maxRangeKeys) {
      throw new AtollError('RESOURCE_EXHAUSTED', `a Range reads at most ${etcdLimits.maxRangeKeys} keys; narrow the interval`);
    }
    if (page.nextPageToken === '') return { kvs, revision };
    pageToken = page.nextPageToken;
  }
}

/** The key that holds the keyspace's compaction floor (etcd's compact revision). */
export const compactionFloorKey = `${etcdMetaPrefix}compacted`;

/** The keyspace's compaction floor: etcd's Compact moved it here; 0 before the first Compact. */
export async function readCompactionFloor(api: NodeApi, at: ReadAt, context: CallContext): Promise<{ floor: number; revision: number }> {
  const response = await api.get({ key: compactionFloorKey, ...readOptions(at) }, context);
  if (!response.found) return { floor: 0, revision: response.revision };
  const floor = Number(new TextDecoder().decode(response.value));
  if (!Number.isSafeInteger(floor) || floor < 0) throw new AtollError('INTERNAL', 'the etcd keyspace\'s compaction floor is damaged');
  return { floor, revision: response.revision };
}

/**
 * Refuses a read below the keyspace's compaction floor, as etcd refuses one below its compact
 * revision; returns the keyspace's current revision, which etcd reports in the header of a read
 * at a past revision (undefined for a read at the newest revision: it reports its own).
 */
export async function checkNotCompacted(api: NodeApi, revision: number, context: CallContext): Promise<number | undefined> {
  if (revision <= 0) return undefined;
  const { floor, revision: current } = await readCompactionFloor(api, {}, context);
  if (revision < floor) throw etcdErrors.compacted();
  return current;
}
