/**
 * The host's lease clock (RawNode.enableLeaseClock / leaseStartMs, Raft.leaseQuorumTick), which the
 * node's read barrier measures its lease on (src/node/replica/read-barrier.ts), and the restart rule the
 * lease rests on (Raft.hup: no campaign during the startup quiet period).
 */
import { describe, expect, it } from 'vitest';
import { Harness } from './harness.js';

function leaseGroup(): { h: Harness; clock: { now: number } } {
  const h = new Harness([1, 2, 3], { checkQuorum: true, preVote: true });
  const clock = { now: 1_000 };
  for (const id of [1, 2, 3]) h.node(id).raw.enableLeaseClock(() => clock.now);
  h.campaign(1);
  h.stabilize();
  h.propose(1, 'a');
  h.stabilize();
  return { h, clock };
}

/** One tick of everyone at `clock.now`, then deliver everything. */
function tickAt(h: Harness, clock: { now: number }, ms: number): void {
  clock.now += ms;
  h.tickAll();
  h.stabilize();
}

describe('the lease clock', () => {
  it('starts at the time of the newest tick a quorum acknowledged, and only on a leader that committed in its term', () => {
    const { h, clock } = leaseGroup();
    expect(h.node(2).raw.leaseStartMs()).toBeUndefined();
    for (let i = 0; i < 3; i++) tickAt(h, clock, 100);
    // Every heartbeat round is answered at once here: the quorum's tick is the current one.
    expect(h.node(1).raw.leaseStartMs()).toBe(clock.now);

    // Node 1 loses both followers: its lease start stays put (the node's clock ends it), however
    // many ticks pass.
    const lastAcked = clock.now;
    h.partition([1], [2, 3]);
    for (let i = 0; i < 5; i++) tickAt(h, clock, 100);
    expect(h.node(1).raw.status().role).toBe('leader');
    expect(h.node(1).raw.leaseStartMs()).toBe(lastAcked);

    // Acknowledgements older than the remembered tick times give no lease at all.
    for (let i = 0; i < 70 && h.node(1).raw.status().role === 'leader'; i++) tickAt(h, clock, 1);
    expect(h.node(1).raw.leaseStartMs()).toBeUndefined();
  });

  it('a leadership transfer ends the lease at once', () => {
    const { h, clock } = leaseGroup();
    tickAt(h, clock, 100);
    expect(h.node(1).raw.leaseStartMs()).toBeDefined();
    h.node(1).raw.transferLeadership(2);
    expect(h.node(1).raw.leaseStartMs()).toBeUndefined();
  });

  it('a follower in lease does not adopt a higher term from a mere answer (it would then be free to vote)', () => {
    const { h, clock } = leaseGroup();
    tickAt(h, clock, 100);
    const { term } = h.node(2).raw.status();
    // Node 3 at a higher term answers an old pre-vote request of node 2's, and an old append.
    h.node(2).raw.step({ type: 'preVoteResp', from: 3, to: 2, term: term + 1, reject: true });
    h.node(2).raw.step({ type: 'appResp', from: 3, to: 2, term: term + 1, index: 0 });
    expect(h.node(2).raw.status().term).toBe(term);
    expect(h.node(2).raw.status().lead).toBe(1);
    // Its leader's higher-term messages it still follows; and once its promise ran out (no word
    // from the leader for an election timeout) it adopts the higher term from anything.
    h.partition([1], [2, 3]);
    for (let i = 0; i < 10; i++) h.tick(2);
    h.node(2).raw.step({ type: 'appResp', from: 3, to: 2, term: term + 1, index: 0 });
    expect(h.node(2).raw.status().term).toBe(term + 1);
  });

  it('a restarted node does not campaign when asked during its quiet period (it may be part of a lease)', () => {
    const { h, clock } = leaseGroup();
    tickAt(h, clock, 100);
    const term = h.node(1).raw.status().term;
    expect(term).toBeGreaterThan(1);
    h.restart(2);
    h.campaign(2);
    h.stabilize();
    expect(h.node(2).raw.status().term).toBe(term);
    expect(h.node(2).raw.status().role).toBe('follower');
    // After an election timeout of its own ticks it may (here: node 1 is still heard, so it loses).
    for (let i = 0; i < 10; i++) h.tick(2);
    h.campaign(2);
    expect(['preCandidate', 'candidate']).toContain(h.node(2).raw.status().role);
  });
});
