import { describe, expect, it } from 'vitest';
import { runNodeSeed } from '../../../src/sim/node/run-seed.js';

/**
 * Seeds past the tuned range 1-1000 that once failed (issue 32, item 6), each named with the
 * class it showed and the fix that made it pass. Replay one with `npm run sim:node -- --seed S`.
 */
const seeds: ReadonlyArray<readonly [number, string]> = [
  [1430, 'a move never finished: a quiesced leader demoted its learner to probe on an unreachable report and never lifted it (raft.ts reportUnreachable)'],
  [1499, 'a merged-away replica stayed beside the merged one: it stored the freeze but a crash lost its apply and commit index (merge-apply.ts absorbedBy)'],
  [30359, 'a grow-shrink never finished: a joiner restarted before its first table refresh reported itself active (membership.ts initialTable)'],
  [60097, 'a fatal stop: a replica opened again for a move resumed the snapshot transfer staged for the replica that had left, whose chunks were deleted (snapshot-receiver.ts)'],
  [2003, 'a run that never ended: a follower at its bound of incoming transfers declined a first chunk, then asked for it again on every later chunk, and the leader resent the window at once, at network speed (snapshot-receiver.ts)'],
  [60766, 'a run that never ended after a node lost its disk and was replaced: the same declined-transfer storm as 2003 (snapshot-receiver.ts)'],
  [50692, 'a merge back refused for good (replicas-differ): the rebalancer moved one side only; the simulator operator now moves the other side as the refusal asks (membership-driver.ts merge)'],
  [50769, 'the same as 50692'],
  [60048, 'the same as 50692'],
  [70142, 'exactly-once: a failed increment applied: a replica that moved away failed its waiting proposals NOT_LEADER (marked not applied) though the entry applied on the others (replica-moves.ts leave)'],
  [20852, 'a fatal stop: an L reset by an interrupted install reported its founding range, so its R was deleted as absorbed before L applied the merge (merge-apply.ts absorbedBy)'],
  [5486, 'digest: a sample taken before a pause read a replica the node deleted as moved away when it resumed (state-digest.ts keeps only replicas still open after the scan)'],
  [60347, 'the same as 5486'],
  [6112, 'the same as 5486'],
  [63748, 'digest: a node paused between a sample\'s moment and its scan resumed and applied a split, so its sample at applied index 3 read the keys as of index 4 (state-digest.ts also drops a sample whose replica changed range or began a snapshot import during the scan)'],
  [71035, 'a merge waited for good: a move took R\'s replica off L\'s leader, which needs R\'s leadership elsewhere, and every merge retry answered leaders-differ and moved it back (merge-admin.ts answers in-progress first; the membership driver moves leadership only on leaders-differ)'],
  [66828, 'a move of R after its freeze opened an empty replica the merge then stranded: the stray check deletes an empty replica once a peer reports its partition merged away (stray-check.ts), and a stale watch is refused by a replica awaiting its first snapshot (watch-service.ts)'],
  [76954, 'a watch barrier enqueued at a leader that a pause then deposed reached the loop as a follower: its ReadIndex went to the new leader and, lost, was never retried or failed; rounds start only at a leader (read-barrier.ts)'],
  [82023, 'a move target whose install a crash discarded had a log below its vote floor: a voter that never campaigns, it kept its leader id after a move took it out and was never a stray-check suspect; the quiet-follower round now asks about voters that cannot campaign (stray-check.ts)'],
  [1302, 'a merge back waited for good: a founder that never applied an entry installed its first snapshot after a split, recorded no hole, and the new partition ran on two replicas (partition-replica.ts: the founding snapshot counts as state)'],
  [8189, 'exactly-once: a merge dropped the right side\'s result for an id the left had refused with PARTITION_MOVED, and a resend applied again (merge-plan.ts)'],
  [8244, 'a replica with RF - 1 copies: a move back to a node reused the replica it had left (not yet swept), which restarted before applying its re-addition and was deleted as moved away (replica-moves.ts prepare opens a new one; raft.ts wasMember ignores configurations at or below the vote floor)'],
  [1836, 'a replica stayed behind: two complete staged transfers the log came to cover held both incoming slots, and other groups\' snapshots were declined for 30 s (snapshot-receiver.ts tick)'],
  [4956, 'a merge back refused for good (below-initial, "partition 1, right of partition 1"): L\'s new leader hosted no R and its routing table did not know R\'s start, so the admin named L as its own right neighbour and never asked to move R (merge-admin.ts names R by L\'s range end, range-routing.ts partitionStartingAt)'],
  [1754, 'a stray replica kept for good: the source of a move, whose log held its removal, campaigned into a term above the leader\'s before it learned the removal committed, so the stray check (which asked for a leader in a term at least the replica\'s) never left it (stray-check.ts: or in an older term but applied further)'],
  [51735, 'a voter that holds no data: a node missed two splits of a partition whose replica there was moved away before it caught up, so nothing on it knew the new partitions (voter-holes.ts: their leader asks the silent voter\'s node to open the replica)'],
  [58907, 'a frozen replica kept for good: a move added a learner to R after R froze for its merge, the merge applied on L\'s voters, and the learner\'s frozen R had no leader to ask (stray-check.ts: L\'s leader reporting a range that covers R\'s says R merged away)'],
  [58111, 'moves refused for good: a move\'s leader lost power right after adding its learner, and every later move of the partition was refused in-progress until the orphan-learner bound, past the run (replica-moves.ts: a move removes a learner no move here uses first)'],
];

describe('whole-node simulator, seeds from wider ranges', () => {
  for (const [seed, what] of seeds) {
    it(`seed ${seed} passes every checker (${what})`, async () => {
      const result = await runNodeSeed(seed, { traceLines: 0 });
      expect(result.failures.map((f) => `${f.checker}/${f.invariant}: ${f.message.split('\n')[0]}`)).toEqual([]);
    }, 120_000);
  }
});

describe('the voter-holes control', () => {
  it('seed 51735 fails rf-replicas-on-distinct-members when leaders never ask a silent voter to open its replica (voterHolesKept)', async () => {
    const result = await runNodeSeed(51735, { traceLines: 0, testBugs: { voterHolesKept: true } });
    expect(result.failures.map((f) => `${f.checker}/${f.invariant}`)).toContain('membership/rf-replicas-on-distinct-members');
  }, 120_000);
});
