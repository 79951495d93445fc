/**
 * Snapshot revisions that scripts running at this leader read at (issue 33, finding 2). A script
 * pauses between its turns of the event loop, so Raft applies entries while it runs, compactions
 * included; a compaction past its snapshot would fail its next read with COMPACTED. So a script
 * pins its revision from its begin to its commit, and this leader proposes no compaction above the
 * oldest pinned revision (compactionFloor). A compaction proposed before the pin may still apply
 * meanwhile: the script then fails with COMPACTED before it wrote anything, and the runner runs it
 * again at a newer snapshot (script-runner.ts). A pin blocks nothing else: Raft, applies and
 * snapshots go on.
 */
import type { MvccStore } from '../../mvcc/index.js';

/** Pinned revisions of each partition's store, with how many scripts pinned each. */
const pins = new WeakMap<MvccStore, Map<number, number>>();

/** Pins `revision` of `mvcc` until the returned function is called (once is enough; more are ignored). */
export function pinSnapshot(mvcc: MvccStore, revision: number): () => void {
  let counts = pins.get(mvcc);
  if (counts === undefined) {
    counts = new Map();
    pins.set(mvcc, counts);
  }
  counts.set(revision, (counts.get(revision) ?? 0) + 1);
  let pinned = true;
  return () => {
    if (!pinned) return;
    pinned = false;
    const left = (counts.get(revision) ?? 1) - 1;
    if (left === 0) counts.delete(revision);
    else counts.set(revision, left);
  };
}

/** The compaction floor to propose instead of `wanted`: never above a revision a running script reads at. */
export function compactionFloor(mvcc: MvccStore, wanted: number): number {
  let floor = wanted;
  for (const revision of pins.get(mvcc)?.keys() ?? []) floor = Math.min(floor, revision);
  return floor;
}
