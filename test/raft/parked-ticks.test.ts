/**
 * A host may park a quiesced group (stop ticking it) and settle its ticks later in one step
 * (RawNode with a TickSource, Raft.skipQuiescedTicks). The settled group must be exactly where
 * ticking it one by one would have left it: same counters, same lease clock, same behaviour after
 * it wakes. Otherwise a parked leader's lease clock would stand still (a lease that never expires).
 */
import { describe, expect, it } from 'vitest';
import type { TickSource } from '../../src/raft/rawnode.js';
import { Harness } from './harness.js';

/** The Raft fields ticks move (private: read for the comparison only). */
function clockState(h: Harness, id: number): Record<string, unknown> {
  const raft = Reflect.get(h.node(id).raw, 'raft') as Record<string, unknown> & { progress: Map<number, { recentActive: boolean }> };
  return {
    ticks: raft['ticks'],
    electionElapsed: raft['electionElapsed'],
    heartbeatElapsed: raft['heartbeatElapsed'],
    idleTicks: raft['idleTicks'],
    startupQuietTicks: raft['startupQuietTicks'],
    quiesced: raft['quiesced'],
    recentActive: [...raft.progress].map(([peer, progress]) => [peer, progress.recentActive]),
  };
}

function quiescedGroup(): Harness {
  const h = new Harness([1, 2, 3], { quiesceAfterTicks: 3, readMode: 'lease' });
  h.campaign(1);
  h.stabilize();
  h.propose(1, 'a');
  h.stabilize();
  h.run(20);
  for (const id of [1, 2, 3]) expect(h.status(id).quiesced).toBe(true);
  return h;
}

describe('parked quiesced groups', () => {
  for (const parkedTicks of [1, 7, 10, 23, 1_000]) {
    it(`settling ${parkedTicks} parked ticks at once equals ticking them one by one`, () => {
      const ticked = quiescedGroup();
      const parked = quiescedGroup();
      const source: { ticks: number } & TickSource = { ticks: 0 };
      let activity = 0;
      for (const id of [1, 2, 3]) parked.node(id).raw.attachHost(source, () => activity++);

      ticked.run(parkedTicks);
      source.ticks += parkedTicks;
      // status() settles a quiesced group's owed ticks (and only counters move).
      for (const id of [1, 2, 3]) {
        expect(parked.status(id)).toEqual(ticked.status(id));
        expect(clockState(parked, id)).toEqual(clockState(ticked, id));
      }
      expect(activity).toBe(0);
      // The lease clock moved: a quiet leader's lease expires while parked as it does while ticked.
      expect(parked.status(1).leaseValid).toBe(parkedTicks < 5 ? ticked.status(1).leaseValid : false);

      // Woken by a proposal, both replicate and commit the same way.
      ticked.propose(1, 'b');
      ticked.stabilize();
      parked.propose(1, 'b');
      parked.stabilize();
      expect(activity).toBeGreaterThan(0);
      for (const id of [1, 2, 3]) {
        expect(parked.appliedTexts(id)).toEqual(['a', 'b']);
        expect(parked.status(id).quiesced).toBe(false);
        expect(parked.status(id).commit).toBe(ticked.status(id).commit);
      }
    });
  }
});
