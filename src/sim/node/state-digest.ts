/**
 * A replica's LOGICAL state digest: every key the workload's buckets hold in the partition, with
 * its value, revisions, version and expiry, read at the replica's current revision as of one
 * moment between loop iterations (so the applied index and the state agree). Physical layout
 * (what compaction has removed yet, the cache, the dedup queue's keys) is left out: replicas may
 * differ there.
 *
 * Every bucket is read in every replica (scanPartition: no ownership check), not only the buckets
 * the replica's range owns: splits move ranges, and a key a split left in the wrong partition must
 * show too. (split-checker.ts checks that every key lies in its partition's range.)
 */
import { createHash } from 'node:crypto';
import type { AtollNode } from '../../node/atoll-node.js';
import type { ReplicaDigest } from './node-checkers.js';

export async function replicaDigests(node: number, api: AtollNode, buckets: readonly string[]): Promise<ReplicaDigest[]> {
  const moments = await api.betweenIterations((replicas) =>
    [...replicas.values()].map((replica) => ({
      partition: replica.id,
      appliedIndex: replica.appliedIndex,
      mvcc: replica.mvcc,
      revision: replica.mvcc.revision,
      compactedRevision: replica.mvcc.compactedRevision,
      importing: replica.mvcc.needsSnapshot,
      shape: shapeOf(replica.mvcc),
    })),
  );
  const digests: Array<{ digest: ReplicaDigest; mvcc: (typeof moments)[number]['mvcc']; shape: string }> = [];
  for (const moment of moments) {
    if (moment.importing) continue;
    const hash = createHash('sha256').update(`revision ${moment.revision} compacted ${moment.compactedRevision}\n`);
    for (const bucket of buckets) {
      let after: string | undefined;
      for (let page = 0; page < 100; page++) {
        // nowMs 0: nothing counts as expired, so the expiry itself is compared, not a clock's view of it.
        const read = await moment.mvcc.scanPartition(`${bucket}/`, { nowMs: 0, revision: moment.revision, limit: 500, ...(after !== undefined && { after }) });
        for (const item of read.items) {
          hash.update(`${item.key}\t${Buffer.from(item.value).toString('hex')}\t${item.createRevision}\t${item.modRevision}\t${item.version}\t${item.expiresAtMs ?? 0}\n`);
        }
        if (!read.more || read.continueAfter === undefined) break;
        after = read.continueAfter;
      }
    }
    digests.push({ digest: { node, partition: moment.partition, appliedIndex: moment.appliedIndex, digest: hash.digest('hex') }, mvcc: moment.mvcc, shape: moment.shape });
  }
  // The scans ran beside the loop, so the replica could change under them in ways the read
  // revision does not hide. Only a replica still open afterwards, with the same shape, counts:
  // - deleted meanwhile (it moved away, or a merge absorbed it), it was read half deleted
  //   (simulator seed 5486: a paused node resumed, deleted its moved-away replica while its
  //   sample, taken before the pause, read it);
  // - a split or a merge applied meanwhile moved keys out or in with their old revisions
  //   (simulator seed 63748: a node paused between its moment and its scan resumed and applied a
  //   split, so its sample at applied index 3 held the keys as of index 4);
  // - a snapshot import began meanwhile and replaced the state.
  const after = await api.betweenIterations((replicas) => new Map([...replicas.values()].map((replica) => [replica.mvcc, shapeOf(replica.mvcc)])));
  return digests.filter((taken) => after.get(taken.mvcc) === taken.shape).map((taken) => taken.digest);
}

/** What changes when a replica's state changes outside its revisions: its range, and snapshot imports. */
function shapeOf(mvcc: { readonly hashRange: { readonly start: number; readonly end: number } | undefined; readonly importsBegun: number; readonly needsSnapshot: boolean }): string {
  return `${mvcc.hashRange?.start ?? '-'}:${mvcc.hashRange?.end ?? '-'}:${mvcc.importsBegun}:${mvcc.needsSnapshot}`;
}
