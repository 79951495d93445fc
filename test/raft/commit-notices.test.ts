/**
 * Commit notices (RaftConfig.commitNotices, src/raft/commit-notice.ts; issue 35): where batchAppends
 * sent a replicating follower an append that only carried the commit index, the leader sends a
 * 'commit' message (term, index, logTerm, commit), which the node coalesces with every other
 * group's for the same peer (src/node/replica/node-batch.ts). A follower commits through min(commit, index)
 * only at the notice's term and only when its log holds (index, logTerm), and never answers.
 */
import { describe, expect, it } from 'vitest';
import type { RaftConfig } from '../../src/raft/config.js';
import type { Message } from '../../src/raft/types.js';
import { Harness } from './harness.js';

const led = (overrides: Partial<RaftConfig> = {}): Harness => Harness.led({ batchAppends: true, commitNotices: true, ...overrides });
const proposeMany = (h: Harness, count: number): void => h.proposeMany(1, count);

describe('commit notices', () => {
  it('replace the commit-only appends: one notice per follower per commit advance, applied, never answered', () => {
    const h = led();
    proposeMany(h, 3);
    h.deliver((m) => m.type === 'app');
    h.deliver((m) => m.type === 'appResp');
    expect(h.queue.filter((m) => m.type === 'app')).toEqual([]);
    const notices = h.queue.filter((m) => m.type === 'commit');
    const { term } = h.status(1);
    expect(notices.map((m) => `${m.to}:${m.term}:${m.index}:${m.logTerm}:${m.commit}`).sort()).toEqual([`2:${term}:6:${term}:6`, `3:${term}:6:${term}:6`]);
    h.deliver();
    expect(h.queue).toEqual([]);
    for (const id of [1, 2, 3]) expect(h.appliedTexts(id)).toEqual(['first', 'v0', 'v1', 'v2']);

    // The control: without commitNotices the same advance sends commit-only appends.
    const control = led({ commitNotices: false });
    proposeMany(control, 3);
    control.deliver((m) => m.type === 'app');
    control.deliver((m) => m.type === 'appResp');
    expect(control.queue.filter((m) => m.type === 'commit')).toEqual([]);
    expect(control.queue.filter((m) => m.commitOnly === true)).toHaveLength(2);
  });

  it('a lost notice is made good by the next heartbeat, and the group still quiesces', () => {
    const h = new Harness([1, 2, 3], { batchAppends: true, commitNotices: true, quiesceAfterTicks: 3 });
    h.campaign(1);
    h.stabilize();
    proposeMany(h, 2);
    h.deliver((m) => m.type === 'app');
    h.deliver((m) => m.type === 'appResp');
    expect(h.drop((m) => m.type === 'commit')).toHaveLength(2);
    expect(h.appliedTexts(2)).toEqual([]);
    h.run(3);
    for (const id of [1, 2, 3]) expect(h.appliedTexts(id)).toEqual(['v0', 'v1']);
    h.run(20);
    for (const id of [1, 2, 3]) expect(h.status(id).quiesced).toBe(true);
  });

  it('a follower whose log lacks the notice entry commits nothing (N2), and is repaired by the heartbeat round', () => {
    const h = led();
    proposeMany(h, 2);
    h.drop((m) => m.type === 'app' && m.to === 3);
    h.deliver((m) => m.type === 'app');
    h.deliver((m) => m.type === 'appResp');
    const toThree = h.queue.filter((m) => m.type === 'commit' && m.to === 3);
    expect(toThree).toHaveLength(1);
    const before = h.status(3).commit;
    h.deliver((m) => m.type === 'commit');
    expect(h.status(3).commit).toBe(before);
    // Not answered, match or not: the heartbeat round finds the gap.
    expect(h.queue.filter((m) => m.from === 3)).toEqual([]);
    h.run(2);
    h.stabilize();
    expect(h.appliedTexts(3)).toEqual(['first', 'v0', 'v1']);
  });

  it('commits through at most the notice index, and only at the follower term (N1, N2)', () => {
    const h = led();
    const { term, lastIndex } = h.status(2);
    const notice = (over: Partial<Message>): Message => ({ type: 'commit', from: 1, to: 2, term, index: lastIndex - 1, logTerm: term, commit: lastIndex, ...over });
    // Follower 2 holds everything, committed through lastIndex already: take a fresh follower state by restarting it.
    h.restart(2);
    const committed = h.status(2).commit;
    expect(committed).toBeLessThanOrEqual(lastIndex);
    h.node(2).raw.step(notice({ term: term + 1 }));
    expect(h.status(2).commit).toBe(committed);
    expect(h.status(2).term).toBe(term);
    h.node(2).raw.step(notice({ logTerm: term + 1 }));
    expect(h.status(2).commit).toBe(committed);
    h.node(2).raw.step(notice({}));
    expect(h.status(2).commit).toBe(Math.max(committed, lastIndex - 1));
    h.flush(2);
    expect(h.queue.filter((m) => m.from === 2)).toEqual([]);
  });

  it('the negative control: a follower that skips the match commits a divergent suffix the leader never committed', () => {
    for (const bug of [false, true]) {
      const h = led(bug ? { bugs: { noticeCommitBeyondMatch: true } } : {});
      // Leader 1 is cut off and appends two entries of its term that never commit.
      h.partition([1], [2, 3]);
      proposeMany(h, 2);
      h.queue = [];
      // Nodes 2 and 3 elect one of them once their promise to leader 1 runs out.
      h.run(40);
      const next = [2, 3].find((id) => h.status(id).role === 'leader');
      expect(next).toBeDefined();
      const l = next as number;
      h.propose(l, 'x');
      h.propose(l, 'y');
      h.stabilize();
      h.heal();
      const leader = h.status(l);
      // Node 1 learns the new term from a heartbeat (whose commit is what leader 2 knows it holds: nothing new).
      h.node(1).raw.step({ type: 'heartbeat', from: l, to: 1, term: leader.term, commit: 0 });
      h.flush(1);
      h.queue = [];
      expect(h.status(1).role).toBe('follower');
      // A notice about the leader's last entry: node 1's entry at that index is its own, of the old term.
      h.node(1).raw.step({ type: 'commit', from: l, to: 1, term: leader.term, index: leader.lastIndex, logTerm: leader.term, commit: leader.commit });
      h.flush(1);
      if (bug) expect(h.appliedTexts(1)).toEqual(['first', 'v0', 'v1']);
      else expect(h.appliedTexts(1)).toEqual(['first']);
      h.queue = [];
      if (!bug) {
        h.run(3);
        h.stabilize();
        expect(h.appliedTexts(1)).toEqual(['first', 'x', 'y']);
      }
    }
  });
});
