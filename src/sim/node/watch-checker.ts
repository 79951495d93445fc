/**
 * The watch checker (issue 32). For each watch of the watch workload (watch-workload.ts), over
 * every message it received across all its attempts (the first and each resume after the last
 * revision received), it checks:
 * - exactly-once-in-order: message revisions never go back (an event message's revision is above
 *   every revision received before it, a progress message's at least the last one), every event
 *   of a message carries the message's revision and matches the watched key or prefix, and no
 *   (key, revision) arrives twice;
 * - no-gap: the events with revisions in (max(start, floor), last] are exactly the changes of the
 *   watched keys that the partition now holding them has retained in that range (its
 *   changesSince, read at the end of the run from its most advanced up replica; `floor` is that
 *   replica's compaction floor, below which the history is gone), same key, revision, kind and
 *   value, nothing missing and nothing extra. After a split the keys' history moves with them at
 *   the same revisions; after a merge the right partition's history comes into the left one at its
 *   own revisions and the merged partition continues above max(L, R): the revisions a watch
 *   received before the move stay comparable to the new owner's, which is why a resume after the
 *   last revision received is exact;
 * - acknowledged-writes: every acknowledged put, conditional put and delete of a watched key whose
 *   revision is in (start, last] was delivered, with its value (independent of the replicas);
 * - catches-up: once the faults stopped and the writes settled, every watch still open received
 *   (event or progress) its partition's current revision within the bound (a watch stuck on a
 *   replica that no longer receives its partition's changes misses everything after).
 */
import { bucketOf } from '../../keys/bucket.js';
import { bucketHash, type BucketHashName } from '../../keys/bucket-hash.js';
import { prefixBucket } from '../../keys/prefix-bucket.js';
import type { MvccStore } from '../../mvcc/index.js';
import type { CheckFailure } from './node-checkers.js';
import type { SimCluster } from './sim-cluster.js';
import { targetDescription, type AckedWrite, type ReceivedEvent, type WatchRecord, type WatchTargetSpec } from './watch-workload.js';

interface Owner {
  readonly node: number;
  readonly partition: number;
  readonly appliedIndex: number;
  readonly mvcc: MvccStore;
}

const decoder = new TextDecoder();
/** Failures listed per invariant at most. */
const MAX_LISTED = 3;

function matcher(target: WatchTargetSpec): (key: string) => boolean {
  if ('key' in target) return (key) => key === target.key;
  const { keyPrefix } = prefixBucket(target.prefix);
  return (key) => key.startsWith(keyPrefix);
}

function bucketOfTarget(target: WatchTargetSpec): string {
  return 'key' in target ? bucketOf(target.key) : prefixBucket(target.prefix).bucket;
}

const show = (event: ReceivedEvent): string => `${event.type} ${event.key}@${event.revision}${event.value !== null ? `=${event.value}` : ''}`;

/** The most advanced up replica whose range holds `bucket` (not frozen by a merge, not importing). */
async function ownerOf(cluster: SimCluster, bucket: string, hash: BucketHashName): Promise<Owner | undefined> {
  const h = bucketHash(bucket, hash);
  let best: Owner | undefined;
  for (const node of cluster.nodeIds) {
    const api = cluster.apiOf(node);
    if (api === undefined) continue;
    const found = await api.betweenIterations((replicas) =>
      [...replicas.values()]
        .filter((replica) => !replica.mvcc.needsSnapshot && replica.mvcc.mergedInto === undefined && replica.mvcc.frozen === undefined)
        .filter((replica) => {
          const range = replica.mvcc.hashRange;
          return range !== undefined && range.start <= h && h < range.end;
        })
        .map((replica) => ({ node, partition: replica.id, appliedIndex: replica.appliedIndex, mvcc: replica.mvcc })),
    );
    for (const candidate of found) if (best === undefined || candidate.appliedIndex > best.appliedIndex) best = candidate;
  }
  return best;
}

/** The owner's retained changes of `target` above `after` (paged), as events. */
async function retainedChanges(owner: Owner, target: WatchTargetSpec, after: number): Promise<ReceivedEvent[]> {
  const watched = 'key' in target ? { key: target.key } : { keyPrefix: prefixBucket(target.prefix).keyPrefix };
  const events: ReceivedEvent[] = [];
  let from = after;
  for (let page = 0; page < 1_000; page++) {
    const read = await owner.mvcc.changesSince(watched, from, { maxChanges: 1_000, maxBytes: 1 << 24 });
    for (const change of read.changes) {
      events.push({
        type: change.stored.kind === 'tombstone' ? 'delete' : 'put',
        key: change.key,
        revision: change.revision,
        value: change.stored.kind === 'tombstone' ? null : decoder.decode(change.stored.value),
      });
    }
    if (read.through <= from || read.through >= owner.mvcc.revision) break;
    from = read.through;
  }
  return events;
}

export async function checkWatches(records: readonly WatchRecord[], acked: readonly AckedWrite[], cluster: SimCluster, hash: BucketHashName): Promise<CheckFailure[]> {
  const failures: CheckFailure[] = [];
  const fail = (invariant: string, message: string): void => {
    if (failures.filter((f) => f.invariant === invariant).length < MAX_LISTED) failures.push({ checker: 'watch', invariant, message });
  };
  for (const record of records) {
    const name = `watch ${record.id} (${targetDescription(record.target)}${record.stale ? ', stale' : ''}, from ${record.requestedStart ?? 'now'})`;
    const matches = matcher(record.target);
    // exactly-once-in-order, over the messages in the order the client received them.
    const delivered = new Map<string, ReceivedEvent>();
    let last = record.requestedStart ?? -1;
    for (const message of record.messages) {
      if (message.progress ? message.revision < last : message.revision <= last) {
        fail('exactly-once-in-order', `${name}: attempt ${message.attempt} at node ${message.node} sent ${message.progress ? 'progress' : 'events'} at revision ${message.revision} after revision ${last} (${message.atMs.toFixed(0)} ms)`);
      }
      last = Math.max(last, message.revision);
      for (const event of message.events) {
        if (event.revision !== message.revision || !matches(event.key)) fail('exactly-once-in-order', `${name}: message at revision ${message.revision} carries ${show(event)}`);
        const id = `${event.key}@${event.revision}`;
        if (delivered.has(id)) fail('exactly-once-in-order', `${name}: ${show(event)} delivered twice (again by attempt ${message.attempt} at node ${message.node})`);
        delivered.set(id, event);
      }
    }
    const start = record.startRevision;
    const end = record.lastRevision;
    if (record.caughtUp === false) fail('catches-up', `${name}: received revision ${end ?? 'none'} at most, its partition is at ${record.finalRevision} (attempts ${record.attempts}, last endings ${record.endings.slice(-4).join(', ')})`);
    if (start === undefined || end === undefined || end <= start) continue;
    // acknowledged-writes: independent of what the replicas hold.
    for (const write of acked) {
      if (!matches(write.key) || write.revision <= start || write.revision > end) continue;
      const event = delivered.get(`${write.key}@${write.revision}`);
      if (event === undefined || event.value !== write.value) {
        fail('acknowledged-writes', `${name}: the acknowledged ${write.value === null ? 'delete' : `put ${JSON.stringify(write.value)}`} of ${write.key} at revision ${write.revision} (within (${start}, ${end}]) was ${event === undefined ? 'not delivered' : `delivered as ${show(event)}`}`);
      }
    }
    // no-gap: against the history the keys' partition retained.
    const owner = await ownerOf(cluster, bucketOfTarget(record.target), hash);
    if (owner === undefined) continue;
    const low = Math.max(start, owner.mvcc.compactedRevision);
    if (low >= end) continue;
    const retained = (await retainedChanges(owner, record.target, low)).filter((event) => event.revision <= end);
    const retainedIds = new Set(retained.map((event) => `${event.key}@${event.revision}`));
    const missing = retained.filter((event) => {
      const got = delivered.get(`${event.key}@${event.revision}`);
      return got === undefined || got.type !== event.type || got.value !== event.value;
    });
    const extra = [...delivered.values()].filter((event) => event.revision > low && event.revision <= end && !retainedIds.has(`${event.key}@${event.revision}`));
    if (missing.length > 0 || extra.length > 0) {
      fail(
        'no-gap',
        `${name}: over (${low}, ${end}] partition ${owner.partition} (node ${owner.node}) retains ${retained.length} changes; ` +
          (missing.length > 0 ? `missing or different: ${missing.slice(0, 4).map(show).join(', ')}${missing.length > 4 ? ` (+${missing.length - 4})` : ''}` : '') +
          (missing.length > 0 && extra.length > 0 ? '; ' : '') +
          (extra.length > 0 ? `delivered but not retained: ${extra.slice(0, 4).map(show).join(', ')}` : '') +
          ` (attempts ${record.attempts}, endings ${record.endings.slice(0, 12).join(', ')})`,
      );
    }
  }
  return failures;
}
