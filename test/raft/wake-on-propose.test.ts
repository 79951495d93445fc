/**
 * A proposal that wakes a quiesced leader sends its append to every follower and no heartbeat
 * round (issue 18: under load at many partitions most proposals wake their group, and the wake
 * heartbeat and its answers were four of a put's messages). The append alone wakes the quiesced
 * followers, commits, and the group quiesces again; other wakes (a read, a peer's message) still
 * heartbeat at once, a read with its own round only. The tick that quiesces the group sends only
 * the quiesce request's round, and the group needs no round before it to learn its followers'
 * commit (the request carries it).
 */
import { describe, expect, it } from 'vitest';
import { Harness } from './harness.js';

function quiescedGroup(config: { quiesceAfterTicks: number; heartbeatTicks?: number } = { quiesceAfterTicks: 3 }): Harness {
  const h = new Harness([1, 2, 3], config);
  h.campaign(1);
  h.stabilize();
  h.propose(1, 'a');
  h.stabilize();
  h.run(20);
  for (const id of [1, 2, 3]) expect(h.status(id).quiesced).toBe(true);
  h.queue = [];
  return h;
}

describe('waking a quiesced group', () => {
  it('by a proposal: appends to every follower, no heartbeat; the followers wake and apply', () => {
    const h = quiescedGroup();
    h.propose(1, 'b');
    expect(h.queue.map((m) => `${m.type}>${m.to}`).sort()).toEqual(['app>2', 'app>3']);
    h.stabilize();
    for (const id of [1, 2, 3]) {
      expect(h.status(id).quiesced).toBe(false);
      expect(h.appliedTexts(id)).toEqual(['a', 'b']);
    }
    h.run(20);
    for (const id of [1, 2, 3]) expect(h.status(id).quiesced).toBe(true);
  });

  it('the tick that quiesces sends one heartbeat round, the quiesce request, not an ordinary round as well', () => {
    const h = quiescedGroup();
    h.propose(1, 'b');
    h.stabilize();
    let quiescingTick: string[] | undefined;
    for (let tick = 0; tick < 10 && quiescingTick === undefined; tick++) {
      h.tick(1);
      const raft = Reflect.get(h.node(1).raw, 'raft') as { quiesced: boolean };
      const heartbeats = h.queue.filter((m) => m.type === 'heartbeat').map((m) => `${m.to}${m.quiesce === true ? ' quiesce' : ''}`).sort();
      if (raft.quiesced) quiescingTick = heartbeats;
      h.stabilize();
    }
    expect(quiescingTick).toEqual(['2 quiesce', '3 quiesce']);
    for (const id of [1, 2, 3]) expect(h.status(id).quiesced).toBe(true);
  });

  it('after a write the group quiesces with the quiesce round alone: the request carries the commit, so no round first to learn it', () => {
    // The node's settings (replica-store.ts): a heartbeat round every second tick, quiet after two idle ones.
    const h = quiescedGroup({ quiesceAfterTicks: 2, heartbeatTicks: 2 });
    h.propose(1, 'b');
    h.deliver((m) => m.type === 'app' && (m.entries?.length ?? 0) > 0);
    h.deliver((m) => m.type === 'appResp');
    // Node 3 never hears of the commit from an append (the commit-only append is lost): the
    // quiesce request must teach it, or node 3 could not go quiet at the leader's commit.
    h.drop((m) => m.type === 'app' && m.to === 3);
    h.stabilize();
    const heartbeats: string[] = [];
    for (let tick = 0; tick < 10 && !h.status(1).quiesced; tick++) {
      h.tickAll();
      heartbeats.push(...h.queue.filter((m) => m.type === 'heartbeat').map((m) => `${m.to}${m.quiesce === true ? ' quiesce' : ''}`));
      h.stabilize();
    }
    // Before: an ordinary round at the second tick (the leader did not know the followers' commit),
    // then the quiesce round at the third: four heartbeats and four answers.
    expect(heartbeats.sort()).toEqual(['2 quiesce', '3 quiesce']);
    for (const id of [1, 2, 3]) {
      expect(h.status(id).quiesced).toBe(true);
      expect(h.appliedTexts(id)).toEqual(['a', 'b']);
    }
  });

  it('a learner, which never campaigns, must report the commit before its group goes quiet', () => {
    const h = new Harness([1, 2, 3], { quiesceAfterTicks: 2, heartbeatTicks: 2 }, [4]);
    h.campaign(1);
    h.stabilize();
    h.node(1).raw.proposeConfChange({ type: 'addLearner', node: 4 });
    h.flush(1);
    h.stabilize();
    h.run(20);
    for (const id of [1, 2, 3, 4]) expect(h.status(id).quiesced).toBe(true);
    h.propose(1, 'b');
    h.deliver((m) => m.type === 'app' && (m.entries?.length ?? 0) > 0);
    h.deliver((m) => m.type === 'appResp');
    // The learner loses the commit-only append and every quiesce request: had the leader gone quiet
    // without its report, the learner would lag until the group's next write.
    h.drop((m) => m.type === 'app' && m.to === 4);
    h.stabilize();
    for (let tick = 0; tick < 20 && !h.status(1).quiesced; tick++) {
      h.tickAll();
      h.drop((m) => m.type === 'heartbeat' && m.to === 4 && m.quiesce === true);
      h.stabilize();
    }
    expect(h.status(1).quiesced).toBe(true);
    // Quiet, yet the learner has the write: an ordinary round told it the commit first.
    expect(h.appliedTexts(4)).toEqual(['b']);
  });

  it("by a read: heartbeats at once, one round (the read's, which wakes the followers too)", () => {
    const h = quiescedGroup();
    h.readIndex(1, 'r1');
    // Before: a wake round with the old read sequence, then the read's own: four heartbeats.
    expect(h.queue.filter((m) => m.type === 'heartbeat').map((m) => m.to).sort()).toEqual([2, 3]);
    h.stabilize();
    expect(h.node(1).readStates.map((s) => s.context)).toEqual(['r1']);
  });
});
