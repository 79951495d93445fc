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
    })),
  );
  const digests: Array<{ digest: ReplicaDigest; mvcc: (typeof moments)[number]['mvcc'] }> = [];
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
    digests.push({ digest: { node, partition: moment.partition, appliedIndex: moment.appliedIndex, digest: hash.digest('hex') }, mvcc: moment.mvcc });
  }
  // The scans ran beside the loop: a replica the node deleted meanwhile (it moved away, or was
  // absorbed by a merge) was read half deleted. Only the replicas still open afterwards count
  // (simulator seed 5486: a paused node resumed, deleted its moved-away replica while its sample,
  // taken before the pause, read it).
  const open = await api.betweenIterations((replicas) => new Set([...replicas.values()].map((replica) => replica.mvcc)));
  return digests.filter((taken) => open.has(taken.mvcc)).map((taken) => taken.digest);
}
