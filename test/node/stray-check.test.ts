/**
 * The stray check (stray-check.ts) deletes a replica on its leader's word, or on a following
 * peer's that applied strictly further. Voters that missed
 * their removal were covered before; these cases came with batched appends (simulator seed 215): a
 * source that installed a snapshot taken after its removal, then restarted, opens with a
 * configuration that does not name it (kept as a possible move target, replica-moves.ts), and a
 * learner whose removal never reached it. Both must go once the leader lists the node neither as
 * voter nor as learner, and must stay while it lists them (a move still running) or cannot say
 * (a server that does not report learners).
 */
import { describe, expect, it } from 'vitest';
import type * as api from '../../src/api/node-api.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { FOLLOWER_BATCH } from '../../src/node/cluster/stray-check.js';
import { manualStrayCheck } from './stray-check-support.js';

const SELF = 2;
const PARTITION = 7;

type Role = 'voter' | 'learner' | 'outsider' | 'empty';

/** A replica on this node (id 2) as its own applied configuration sees it, with no leader (after a restart). */
function replicaAs(role: Role, lead = 0, promotable = role === 'voter'): PartitionReplica {
  const voters = role === 'empty' ? [] : role === 'voter' ? [1, 2, 3] : [1, 3, 5];
  return {
    id: PARTITION,
    appliedIndex: 65,
    raw: { lead, term: 2, quiesced: false, promotable, isVoter: () => role === 'voter', isMember: () => role === 'voter' || role === 'learner', voterList: () => voters, lastIndex: () => 70 },
  } as unknown as PartitionReplica;
}

/** Runs the check `checks` times against a peer (1) that leads the partition with `leader`'s view; returns the partitions left. */
async function strays(replica: PartitionReplica, leader: { voters: number[]; learners?: number[]; leader?: number; term?: number; applied?: number }, checks = 2): Promise<number[]> {
  const applied = leader.applied ?? 116;
  const partition = { id: PARTITION, rangeStart: 0, rangeEnd: 2 ** 32, replicas: leader.voters, ...(leader.learners !== undefined && { learners: leader.learners }), leader: leader.leader ?? 1, term: leader.term ?? 2, commitIndex: applied, appliedIndex: applied, revision: 96 };
  const info = { partitions: [partition] } as unknown as api.ClusterInfoResponse;
  const strayCheck = manualStrayCheck({ id: SELF, nodes: [1, 2, 3], groups: new Map([[PARTITION, replica]]), info });
  for (let i = 0; i < checks; i++) await strayCheck.check();
  strayCheck.stop();
  return strayCheck.left;
}

describe('StrayCheck', () => {
  it('deletes a voter the leader no longer lists (as before)', async () => {
    expect(await strays(replicaAs('voter'), { voters: [1, 3, 5], learners: [] })).toEqual([PARTITION]);
    expect(await strays(replicaAs('voter'), { voters: [1, 2, 3], learners: [] })).toEqual([]);
  });

  it('deletes a replica whose configuration does not name this node once the leader lists it nowhere', async () => {
    expect(await strays(replicaAs('outsider'), { voters: [1, 3, 5], learners: [] })).toEqual([PARTITION]);
    // A move's target whose first snapshot predates its addition: the leader lists it as a learner.
    expect(await strays(replicaAs('outsider'), { voters: [1, 3, 5], learners: [SELF] })).toEqual([]);
    // A leader that does not report learners cannot say.
    expect(await strays(replicaAs('outsider'), { voters: [1, 3, 5] })).toEqual([]);
    // An empty replica (a move's target before its first snapshot) is no suspect.
    expect(await strays(replicaAs('empty'), { voters: [1, 3, 5], learners: [] })).toEqual([]);
  });

  it('deletes a learner the leader no longer lists, even one that still names its old leader', async () => {
    expect(await strays(replicaAs('learner'), { voters: [1, 3, 5], learners: [] })).toEqual([PARTITION]);
    expect(await strays(replicaAs('learner'), { voters: [1, 3, 5], learners: [SELF] })).toEqual([]);
    // A learner runs no election timer: with its leader's id kept, the quiet-follower round asks.
    expect(await strays(replicaAs('learner', 1), { voters: [1, 3, 5], learners: [] }, 1)).toEqual([PARTITION]);
    expect(await strays(replicaAs('voter', 1), { voters: [1, 3, 5], learners: [] }, 1)).toEqual([]);
  });

  it('asks about a voter that cannot campaign (its log below its vote floor), which keeps its leader id for good (simulator seed 82023)', async () => {
    // A move's target whose install a crash discarded: a voter by its configuration, never campaigning.
    expect(await strays(replicaAs('voter', 1, false), { voters: [1, 3, 5], learners: [] }, 1)).toEqual([PARTITION]);
    expect(await strays(replicaAs('voter', 1, false), { voters: [1, 2, 3], learners: [] }, 1)).toEqual([]);
  });

  it("takes a following peer's word when it applied strictly further: the leader may be a member this node never learned (simulator seed 94747)", async () => {
    // Node 5 leads; this node knows nodes 1 to 3 only. Node 1, a follower, applied past this replica (65).
    expect(await strays(replicaAs('voter'), { voters: [1, 3, 5], learners: [], leader: 5, term: 4, applied: 108 })).toEqual([PARTITION]);
    // Not applied past it: its configuration may be the one this replica holds.
    expect(await strays(replicaAs('voter'), { voters: [1, 3, 5], learners: [], leader: 5, term: 4, applied: 65 })).toEqual([]);
    // A report with no term is a guess about a partition the peer does not host.
    expect(await strays(replicaAs('voter'), { voters: [1, 3, 5], learners: [], leader: 5, term: 0, applied: 108 })).toEqual([]);
    // Still a voter by the follower's configuration: it stays.
    expect(await strays(replicaAs('voter'), { voters: [1, 2, 3], learners: [], leader: 5, term: 4, applied: 108 })).toEqual([]);
    // Only a voter's: a move's target (a learner, or an outsider holding a snapshot from before its
    // own addition) is unknown to a follower that has not applied that addition yet.
    expect(await strays(replicaAs('learner'), { voters: [1, 3, 5], learners: [], leader: 5, term: 4, applied: 108 })).toEqual([]);
    expect(await strays(replicaAs('outsider'), { voters: [1, 3, 5], learners: [], leader: 5, term: 4, applied: 108 })).toEqual([]);
  });

  it('keeps a suspect that moved on while its peers answered (a leader wrote to it meanwhile)', async () => {
    let term = 2;
    const replica = { id: PARTITION, appliedIndex: 65, raw: { lead: 0, get term() { return term; }, quiesced: false, promotable: true, isVoter: () => true, isMember: () => true, voterList: () => [1, 2, 3], lastIndex: () => 70 } } as unknown as PartitionReplica;
    const partition = { id: PARTITION, rangeStart: 0, rangeEnd: 2 ** 32, replicas: [1, 3, 5], learners: [], leader: 1, term: 2, commitIndex: 116, appliedIndex: 116, revision: 96 };
    const strayCheck = manualStrayCheck({ id: SELF, nodes: [1, 2, 3], groups: new Map([[PARTITION, replica]]), info: { partitions: [partition] } as unknown as api.ClusterInfoResponse, onAsk: () => (term = 3) });
    for (let i = 0; i < 2; i++) await strayCheck.check();
    strayCheck.stop();
    expect(strayCheck.left).toEqual([]);
  });

  it('asks each peer about the suspects it leads only, and goes round many quiet followers a batch per follower check', async () => {
    // 300 quiesced followers of node 1 (FOLLOWER_BATCH is 128): one of them, 250, is a stray.
    const COUNT = 300;
    const STRAY = 250;
    const groups = new Map<number, PartitionReplica>();
    for (let partition = 0; partition < COUNT; partition++) {
      groups.set(partition, { id: partition, appliedIndex: 65, raw: { lead: 1, term: 2, quiesced: true, isVoter: () => true, isMember: () => true, voterList: () => [1, 2, 3], lastIndex: () => 70 } } as unknown as PartitionReplica);
    }
    const partitions = Array.from({ length: COUNT }, (_, partition) => ({ id: partition, rangeStart: 0, rangeEnd: 1, replicas: partition === STRAY ? [1, 3, 5] : [1, 2, 3], learners: [], leader: 1, term: 2, commitIndex: 116, appliedIndex: 116, revision: 96 }));
    const strayCheck = manualStrayCheck({ id: SELF, nodes: [1, 2, 3], groups, info: { partitions } as unknown as api.ClusterInfoResponse });
    const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);
    // Checks 0, 5, 10 are follower checks (every fifth); the ones between ask nothing (all led).
    await strayCheck.check();
    expect(strayCheck.asked).toEqual([{ peer: 1, partitions: range(0, FOLLOWER_BATCH) }]);
    expect(strayCheck.left).toEqual([]);
    for (let i = 0; i < 5; i++) await strayCheck.check();
    expect(strayCheck.asked.slice(1)).toEqual([{ peer: 1, partitions: range(FOLLOWER_BATCH, 2 * FOLLOWER_BATCH) }]);
    expect(strayCheck.left).toEqual([STRAY]);
    // The third batch wraps round: the last 44 and the first 84 (listed in the node's group order).
    for (let i = 0; i < 5; i++) await strayCheck.check();
    expect(strayCheck.asked.slice(2)).toEqual([{ peer: 1, partitions: [...range(0, 3 * FOLLOWER_BATCH - COUNT), ...range(2 * FOLLOWER_BATCH, COUNT)] }]);
    strayCheck.stop();
  });

  it("deletes R frozen for a merge once L's leader covers R's range, but not while this node hosts L, whose merge will read it (chaos seed 210)", async () => {
    const L = 2;
    const R = 1_256_513_470;
    const lStart = 1_073_741_824;
    const rEnd = 1_610_612_736;
    // R here froze for the merge into L and has no leader since (the merge applied elsewhere).
    const frozenR = {
      id: R,
      appliedIndex: 35,
      raw: { lead: 0, term: 4, quiesced: false, isVoter: () => true, isMember: () => true, voterList: () => [1, 2, 5], lastIndex: () => 70 },
      mvcc: { frozen: { into: L, index: 35 }, hashRange: { start: R, end: rEnd } },
    } as unknown as PartitionReplica;
    // L here lags: a follower of node 1 that has not applied the merge entry (its range ends at R's start).
    const laggingL = {
      id: L,
      appliedIndex: 130,
      raw: { lead: 1, term: 4, quiesced: false, isVoter: () => true, isMember: () => true, voterList: () => [1, 2, 5], lastIndex: () => 70 },
      mvcc: { frozen: undefined, hashRange: { start: lStart, end: R } },
    } as unknown as PartitionReplica;
    // Node 1 leads L, which owns R's range since it applied the merge; no one reports R.
    const info = { partitions: [{ id: L, rangeStart: lStart, rangeEnd: rEnd, replicas: [1, 2, 5], learners: [], leader: 1, term: 4, commitIndex: 140, appliedIndex: 140, revision: 120 }] } as unknown as api.ClusterInfoResponse;
    const run = async (groups: Map<number, PartitionReplica>): Promise<number[]> => {
      const strayCheck = manualStrayCheck({ id: SELF, nodes: [1, 2, 5], groups, info });
      // The first check sees R leaderless; the second asks about it.
      for (let i = 0; i < 2; i++) await strayCheck.check();
      strayCheck.stop();
      return strayCheck.left;
    };
    // No L here (a learner added to R after its freeze, seed 58907): R is a stray.
    expect(await run(new Map([[R, frozenR]]))).toEqual([R]);
    // L here: R stays for L's merge to read.
    expect(await run(new Map<number, PartitionReplica>([[R, frozenR], [L, laggingL]]))).toEqual([]);
  });

  it('deletes an empty replica (a move target awaiting its first snapshot) once a peer reports its partition merged away, and keeps it before (simulator seed 66828)', async () => {
    const R = 223_608_639;
    // A move of frozen R opened this replica; the merge applied before R's leader sent a snapshot.
    const emptyR = { id: R, appliedIndex: 0, raw: { lead: 0, term: 0, quiesced: false, isVoter: () => false, isMember: () => false, voterList: () => [], lastIndex: () => 0 } } as unknown as PartitionReplica;
    const left = { id: 0, rangeStart: 0, rangeEnd: 1_073_741_824, replicas: [1, 2, 3], learners: [], leader: 1, term: 8, commitIndex: 60, appliedIndex: 60, revision: 50 };
    const run = async (mergedStarts: Array<{ start: number; into: number }>): Promise<number[]> => {
      const info = { partitions: [left], ...(mergedStarts.length > 0 && { mergedStarts }) } as unknown as api.ClusterInfoResponse;
      const strayCheck = manualStrayCheck({ id: 5, nodes: [1, 2, 3, 5], groups: new Map([[R, emptyR]]), info });
      for (let i = 0; i < 2; i++) await strayCheck.check();
      strayCheck.stop();
      return strayCheck.left;
    };
    expect(await run([{ start: R, into: 0 }])).toEqual([R]);
    // A move still under way (no peer knows R merged away): the target waits for its snapshot.
    expect(await run([])).toEqual([]);
    expect(await run([{ start: R + 1, into: 0 }])).toEqual([]);
  });
});
