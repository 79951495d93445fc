import { describe, expect, it } from 'vitest';
import type { RaftBugs } from '../../src/raft/config.js';
import { isRaftError } from '../../src/raft/errors.js';
import { Harness, text } from './harness.js';

function electLeader(h: Harness, id: number): void {
  h.campaign(id);
  h.stabilize();
  expect(h.leader()).toBe(id);
}

describe('leader election (Raft §5.2)', () => {
  it('a campaign wins with a quorum and everyone follows the one leader of that term', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    const term = h.status(1).term;
    for (const id of [2, 3]) {
      expect(h.status(id).role).toBe('follower');
      expect(h.status(id).lead).toBe(1);
      expect(h.status(id).term).toBe(term);
    }
  });

  it('an election happens by itself after the randomized timeout', () => {
    const h = new Harness([1, 2, 3]);
    h.run(40);
    const leaders = [1, 2, 3].filter((id) => h.status(id).role === 'leader');
    expect(leaders).toHaveLength(1);
  });

  it('a node with a shorter log cannot win (§5.4.1 election restriction)', () => {
    const h = new Harness([1, 2, 3], { preVote: false, checkQuorum: false });
    electLeader(h, 1);
    h.partition([3], [1, 2]);
    h.propose(1, 'x');
    h.stabilize();
    h.heal();
    h.campaign(3);
    h.stabilize();
    expect(h.status(3).role).not.toBe('leader');
  });
});

describe('PreVote (thesis §9.6)', () => {
  it('a partitioned node does not inflate its term and does not depose the leader when it returns', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    const term = h.status(1).term;
    h.partition([3], [1, 2]);
    for (let i = 0; i < 100; i++) {
      h.tickAll();
      h.deliver();
    }
    expect(h.status(3).term).toBe(term);
    h.heal();
    h.run(30);
    expect(h.leader()).toBe(1);
    expect(h.status(1).term).toBe(term);
  });

  it('without PreVote the same partition bumps the term (the disruption PreVote prevents)', () => {
    const h = new Harness([1, 2, 3], { preVote: false });
    electLeader(h, 1);
    const term = h.status(1).term;
    h.partition([3], [1, 2]);
    h.run(100);
    expect(h.status(3).term).toBeGreaterThan(term);
  });
});

describe('CheckQuorum (thesis §6.2)', () => {
  it('a leader cut off from the quorum steps down within two election timeouts', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    h.partition([1], [2, 3]);
    let steppedDownAfter = -1;
    for (let tick = 1; tick <= 25; tick++) {
      h.tickAll();
      h.deliver();
      if (h.status(1).role !== 'leader') {
        steppedDownAfter = tick;
        break;
      }
    }
    expect(steppedDownAfter).toBeGreaterThan(0);
    expect(steppedDownAfter).toBeLessThanOrEqual(20);
  });

  it('followers that hear from a live leader ignore a disruptive candidate (leader stickiness)', () => {
    const h = new Harness([1, 2, 3], { preVote: false });
    electLeader(h, 1);
    const term = h.status(1).term;
    h.node(3).raw.campaign();
    h.flush(3);
    h.stabilize();
    expect(h.status(2).term).toBe(term);
    expect(h.status(1).role).toBe('leader');
  });
});

describe('log replication (Raft §5.3)', () => {
  it('commits a proposal on a quorum and applies it everywhere in order', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    h.propose(1, 'a');
    h.propose(1, 'b');
    h.stabilize();
    for (const id of [1, 2, 3]) expect(h.appliedTexts(id)).toEqual(['a', 'b']);
  });

  it('a follower with a longer conflicting log is truncated to the leader’s log', () => {
    const h = new Harness([1, 2, 3], { preVote: false, checkQuorum: false });
    electLeader(h, 1);
    h.partition([1], [2, 3]);
    for (const data of ['x1', 'x2', 'x3', 'x4']) h.propose(1, data);
    h.campaign(2);
    h.stabilize();
    expect(h.status(2).role).toBe('leader');
    h.propose(2, 'y1');
    h.stabilize();
    expect(h.node(1).storage.lastIndex()).toBeGreaterThan(h.node(2).storage.lastIndex());
    h.heal();
    h.propose(2, 'y2');
    h.stabilize();
    h.run(5);
    expect(h.logTerms(1)).toEqual(h.logTerms(2));
    expect(h.appliedTexts(1)).toEqual(['y1', 'y2']);
  });

  it('flow control: at most maxInflightMessages unacknowledged appends per follower', () => {
    const h = new Harness([1, 2], { maxInflightMessages: 2, maxMessageBytes: 32, maxInflightBytes: 64, maxUncommittedBytes: 1 << 20 });
    electLeader(h, 1);
    h.cutOneWay(2, 1); // follower answers are lost
    for (let i = 0; i < 10; i++) h.propose(1, `p${i}`);
    const appendsTo2 = h.queue.filter((m) => m.type === 'app' && m.to === 2);
    expect(appendsTo2.length).toBe(2);
  });

  it('a proposal is dropped with a typed error on a follower', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    let code = '';
    try {
      h.propose(2, 'nope');
    } catch (error) {
      if (isRaftError(error)) code = error.code;
    }
    expect(code).toBe('PROPOSAL_DROPPED');
  });
});

/**
 * Raft paper Figure 8: an entry from an earlier term stored on a majority can still be overwritten,
 * so a leader commits only by counting replicas of an entry of its own term (§5.4.2).
 */
function figure8(bugs: RaftBugs): { commitAfterReplication: number; conflictingApply: boolean } {
  const h = new Harness([1, 2, 3, 4, 5], { preVote: false, checkQuorum: false, maxMessageBytes: 32, bugs });
  // (a) S1 leads term 2 and replicates index 3 only to S2.
  electLeader(h, 1);
  h.partition([1], [3, 4, 5]);
  h.propose(1, 'A');
  h.stabilize();
  // (b) S1 crashes; S5 wins term 3 with votes from S3, S4 and appends its own index 3, then crashes.
  h.partition([1], [2]);
  h.heal();
  h.partition([1], [2, 3, 4, 5]);
  h.partition([5], [2]);
  const isVote = (m: { type: string }) => m.type === 'vote' || m.type === 'voteResp';
  h.campaign(5);
  h.deliver(isVote);
  h.deliver(isVote);
  expect(h.status(5).role).toBe('leader');
  expect(h.status(5).term).toBe(3);
  h.partition([5], [3, 4]);
  h.stabilize();
  // (c) S5 crashes; S1 restarts, wins term 4, replicates index 3 (term 2) to S3 but not its own entry.
  h.heal();
  h.partition([5], [1, 2, 3, 4]);
  h.restart(1);
  // Term 3 is taken (S3, S4 voted for S5), so S1 needs two campaigns to reach term 4.
  for (let attempt = 0; attempt < 2 && h.status(1).role !== 'leader'; attempt++) {
    h.campaign(1);
    h.deliver(isVote);
    h.deliver(isVote);
  }
  expect(h.status(1).role).toBe('leader');
  expect(h.status(1).term).toBe(4);
  // The term-4 entry reaches nobody who would store it; appends that will be refused (the
  // receiver lacks index 3) get through, so S1 backs off and sends index 3 (term 2) alone.
  const carriesTerm4 = (m: { type: string; to: number; entries?: readonly { term: number }[] }) =>
    m.type === 'app' && (m.entries ?? []).some((e) => e.term === 4) && h.node(m.to).storage.lastIndex() >= 3;
  for (let round = 0; round < 10; round++) {
    h.drop(carriesTerm4);
    h.deliver((m) => !carriesTerm4(m));
  }
  const commitAfterReplication = h.status(1).commit;
  // (d) S1 crashes; S5 returns and wins term 5 (its last term 3 beats term 2), overwriting index 3.
  h.heal();
  h.partition([1], [2, 3, 4, 5]);
  h.queue = h.queue.filter((m) => m.from !== 1 && m.to !== 1);
  h.restart(5);
  // Term 4 is taken too (S2-S4 voted for S1): S5 reaches term 5 on its second campaign.
  for (let attempt = 0; attempt < 2 && h.status(5).role !== 'leader'; attempt++) {
    h.campaign(5);
    h.deliver(isVote);
    h.deliver(isVote);
  }
  expect(h.status(5).role).toBe('leader');
  expect(h.status(5).term).toBe(5);
  h.stabilize();
  h.propose(5, 'B');
  h.stabilize();
  const appliedAt3 = new Set<string>();
  for (const id of [1, 2, 3, 4, 5]) {
    for (const entry of h.node(id).applied) if (entry.index === 3) appliedAt3.add(`${entry.term}:${text(entry)}`);
  }
  // Under the correct rule nothing is applied at index 3 until S5's own entry is committed there.
  const s5Term3 = h.node(5).storage.term(3);
  const conflictingApply = [...appliedAt3].some((value) => !value.startsWith(`${s5Term3}:`)) || h.node(1).applied.some((e) => e.index === 3 && e.term === 2);
  return { commitAfterReplication, conflictingApply };
}

describe('Figure 8: committing entries from previous terms (Raft §5.4.2)', () => {
  it('the leader of term 4 does not commit index 3 (term 2) although a majority stores it', () => {
    const result = figure8({});
    expect(result.commitAfterReplication).toBe(2);
    expect(result.conflictingApply).toBe(false);
  });

  it('negative control: counting previous-term replicas commits index 3, which is then overwritten', () => {
    const result = figure8({ commitPreviousTerm: true });
    expect(result.commitAfterReplication).toBe(3);
    expect(result.conflictingApply).toBe(true);
  });
});

describe('a partitioned old leader (Raft §5.4, §6.4)', () => {
  it('neither commits nor answers a linearizable read, then steps down and drops the read', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    h.propose(1, 'before');
    h.stabilize();
    h.partition([1], [2, 3]);
    h.propose(1, 'lost');
    h.readIndex(1, 'stale?');
    h.run(30);
    expect(h.node(1).readStates).toEqual([]);
    expect(h.node(1).droppedReads).toContain('stale?');
    expect(h.appliedTexts(1)).toEqual(['before']);
    expect(h.status(1).role).not.toBe('leader');
    const newLeader = h.leader();
    expect(newLeader === 2 || newLeader === 3).toBe(true);
    h.propose(newLeader as number, 'after');
    h.stabilize();
    h.heal();
    h.run(20);
    expect(h.appliedTexts(1)).toEqual(['before', 'after']);
  });

  function readAtDeposedLeader(bugs: RaftBugs): { answers: number[]; committedElsewhere: number } {
    // Basic Raft timing (no stickiness) so that a new leader is elected while the old one, which
    // has not ticked, still believes it leads: the window in which a stale read could happen.
    const h = new Harness([1, 2, 3], { preVote: false, checkQuorum: false, bugs });
    electLeader(h, 1);
    h.partition([1], [2, 3]);
    h.campaign(2);
    h.stabilize();
    h.propose(2, 'w');
    h.stabilize();
    expect(h.status(1).role).toBe('leader');
    h.readIndex(1, 'r');
    h.stabilize();
    return { answers: h.node(1).readStates.map((r) => r.index), committedElsewhere: h.status(2).commit };
  }

  it('a deposed leader that has not noticed yet does not answer a read', () => {
    expect(readAtDeposedLeader({}).answers).toEqual([]);
  });

  it('negative control: serving ReadIndex without a quorum round returns a stale index', () => {
    const { answers, committedElsewhere } = readAtDeposedLeader({ readIndexWithoutQuorum: true });
    expect(answers).toHaveLength(1);
    expect(answers[0]).toBeLessThan(committedElsewhere);
  });
});

describe('ReadIndex (thesis §6.4)', () => {
  it('answers after a heartbeat round with the commit index', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    h.propose(1, 'a');
    h.stabilize();
    h.readIndex(1, 'ctx');
    expect(h.node(1).readStates).toEqual([]);
    h.stabilize();
    expect(h.node(1).readStates).toEqual([{ index: h.status(1).commit, context: 'ctx' }]);
  });

  it('a follower read is forwarded to the leader and answered', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    h.propose(1, 'a');
    h.stabilize();
    h.readIndex(3, 'f');
    h.stabilize();
    expect(h.node(3).readStates[0]?.index).toBe(h.status(1).commit);
  });

  it('lease reads skip the round only while a quorum acknowledged recent heartbeats', () => {
    const h = new Harness([1, 2, 3], { readMode: 'lease' });
    electLeader(h, 1);
    h.run(12); // the startup quiet period ends and heartbeats are acknowledged
    expect(h.status(1).leaseValid).toBe(true);
    h.readIndex(1, 'fast');
    expect(h.node(1).readStates.map((r) => r.context)).toEqual(['fast']);
    h.partition([1], [2, 3]);
    h.run(9);
    expect(h.status(1).leaseValid).toBe(false);
    if (h.status(1).role === 'leader') {
      h.readIndex(1, 'slow');
      expect(h.node(1).readStates.map((r) => r.context)).toEqual(['fast']);
    }
  });
});

describe('snapshots (thesis §5)', () => {
  it('a follower behind the compacted log receives a chunked snapshot mid-replication and catches up', () => {
    const h = new Harness([1, 2, 3], { snapshotChunkBytes: 8 });
    electLeader(h, 1);
    h.partition([3], [1, 2]);
    for (let i = 0; i < 20; i++) h.propose(1, `e${i}`);
    h.stabilize();
    const leader = h.node(1);
    const applied = leader.appliedIndex;
    const payload = new TextEncoder().encode('state-machine-at-applied-index-with-some-bytes');
    leader.storage.createSnapshot(applied, h.status(1).confState, payload);
    leader.storage.compact(applied);
    h.heal();
    const chunks: number[] = [];
    let droppedOne = false;
    for (let round = 0; round < 200 && h.node(3).appliedIndex < applied; round++) {
      for (const m of h.queue) if (m.type === 'snap' && m.to === 3) chunks.push(m.chunk?.offset ?? -1);
      // Lose one chunk in the middle: the transfer must resume, not restart from scratch or stall.
      if (!droppedOne && h.queue.some((m) => m.type === 'snap' && (m.chunk?.offset ?? 0) === 16)) {
        h.drop((m) => m.type === 'snap' && (m.chunk?.offset ?? 0) === 16);
        droppedOne = true;
      }
      h.tickAll();
      h.deliver();
    }
    expect(droppedOne).toBe(true);
    expect(new Set(chunks).size).toBeGreaterThan(3);
    expect(h.node(3).storage.snapshot().meta.index).toBe(applied);
    expect(h.node(3).storage.snapshot().data).toEqual(payload);
    h.propose(1, 'after-snapshot');
    h.stabilize();
    expect(h.appliedTexts(3)).toEqual(['after-snapshot']);
    expect(h.status(3).commit).toBe(h.status(1).commit);
  });
});

describe('leadership transfer (thesis §3.10)', () => {
  it('moves leadership to a lagging follower after catching it up, refusing proposals meanwhile', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    h.partition([3], [1, 2]);
    for (let i = 0; i < 5; i++) h.propose(1, `e${i}`);
    h.stabilize();
    h.heal();
    h.node(1).raw.transferLeadership(3);
    h.flush(1);
    expect(() => h.propose(1, 'during')).toThrow(/leadership is moving/);
    h.stabilize();
    expect(h.leader()).toBe(3);
    expect(h.appliedTexts(3)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']);
    expect(h.status(1).role).toBe('follower');
  });
});

describe('membership changes (thesis §4.1, §4.2.1, §4.2.2)', () => {
  it('adds a learner that catches up by snapshot, promotes it, and removes the old leader', () => {
    const h = new Harness([1, 2, 3], {}, [4]);
    electLeader(h, 1);
    h.propose(1, 'a');
    h.stabilize();
    h.node(1).raw.proposeConfChange({ type: 'addLearner', node: 4 });
    h.flush(1);
    h.stabilize();
    h.run(5);
    expect(h.status(1).confState).toEqual({ voters: [1, 2, 3], learners: [4] });
    // It had no log at all: the leader sent the snapshot that holds the membership, then the log.
    expect(h.node(4).storage.snapshot().meta.index).toBe(1);
    expect(h.appliedTexts(4)).toEqual(['a']);
    expect(h.status(4).commit).toBe(h.status(1).commit);
    expect(h.status(4).role).toBe('follower');
    h.node(1).raw.proposeConfChange({ type: 'addVoter', node: 4 });
    h.flush(1);
    h.stabilize();
    expect(h.status(2).confState.voters).toEqual([1, 2, 3, 4]);
    h.node(1).raw.proposeConfChange({ type: 'removeNode', node: 1 });
    h.flush(1);
    h.stabilize();
    expect(h.status(1).role).toBe('follower');
    h.heal();
    for (let i = 0; i < 60 && ![2, 3, 4].some((id) => h.status(id).role === 'leader'); i++) h.run(1);
    const leader = [2, 3, 4].find((id) => h.status(id).role === 'leader') as number;
    expect(leader).toBeDefined();
    expect(h.status(leader).confState.voters).toEqual([2, 3, 4]);
    h.propose(leader, 'b');
    h.stabilize();
    expect(h.appliedTexts(4)).toEqual(['a', 'b']);
  });

  it('refuses a second membership change while one is pending', () => {
    const h = new Harness([1, 2, 3], {}, [4]);
    electLeader(h, 1);
    h.node(1).raw.proposeConfChange({ type: 'addLearner', node: 4 });
    expect(() => h.node(1).raw.proposeConfChange({ type: 'addVoter', node: 4 })).toThrow(/still being applied/);
  });
});

describe('quiescence', () => {
  it('an idle group stops sending messages; a proposal wakes it and commits', () => {
    const h = new Harness([1, 2, 3], { quiesceAfterTicks: 3 });
    electLeader(h, 1);
    h.propose(1, 'a');
    h.stabilize();
    h.run(20);
    expect(h.status(1).quiesced).toBe(true);
    const sentBefore = h.sentCount;
    h.run(200);
    expect(h.sentCount).toBe(sentBefore);
    expect(h.status(2).quiesced).toBe(true);
    h.propose(1, 'b');
    h.stabilize();
    expect(h.appliedTexts(2)).toEqual(['a', 'b']);
    expect(h.status(1).quiesced).toBe(false);
  });

  it('an unreachable report to a quiesced leader leaves its follower replicating (simulator seed 1430)', () => {
    // The quiesce heartbeat to a node that just crashed fails and the transport reports it: a
    // probe state set then was never lifted (a quiet group sends no heartbeat), and a move waiting
    // for its learner to be 'replicate' before promoting it waited forever.
    const h = new Harness([1, 2, 3], { quiesceAfterTicks: 3 });
    electLeader(h, 1);
    h.propose(1, 'a');
    h.stabilize();
    h.run(20);
    expect(h.status(1).quiesced).toBe(true);
    h.node(1).raw.reportUnreachable(3);
    h.run(200);
    expect(h.status(1).quiesced).toBe(true);
    expect(h.status(1).progress.get(3)?.state).toBe('replicate');
    h.propose(1, 'b');
    h.stabilize();
    expect(h.appliedTexts(3)).toEqual(['a', 'b']);
  });

  it('followers of a quiesced leader that dies elect a new one once the transport reports it', () => {
    const h = new Harness([1, 2, 3], { quiesceAfterTicks: 3 });
    electLeader(h, 1);
    h.run(20);
    expect(h.status(2).quiesced).toBe(true);
    h.partition([1], [2, 3]);
    h.node(2).raw.reportUnreachable(1);
    h.node(3).raw.reportUnreachable(1);
    h.run(60);
    expect([2, 3].some((id) => h.status(id).role === 'leader')).toBe(true);
  });
});

describe('restart (Raft §5.1 persistent state)', () => {
  it('a restarted node keeps its term, vote and log and rejoins', () => {
    const h = new Harness([1, 2, 3]);
    electLeader(h, 1);
    h.propose(1, 'a');
    h.stabilize();
    const term = h.status(2).term;
    h.restart(2);
    expect(h.status(2).term).toBe(term);
    expect(h.status(2).commit).toBeGreaterThanOrEqual(2);
    h.propose(1, 'b');
    h.stabilize();
    h.run(3);
    expect(h.appliedTexts(2)).toEqual(['a', 'b']);
  });
});

describe('commit learned from a vote request (Raft §5.3 Log Matching; issue 32, node simulator seed 611)', () => {
  /** A leader (1) promotes learner 4; the promotion commits at 1 and 2, but its commit never reaches 3 or 4. */
  function promotionUnheardBy34(): { h: Harness; promotion: number } {
    const h = new Harness([1, 2, 3], {}, [4]);
    electLeader(h, 1);
    h.node(1).raw.proposeConfChange({ type: 'addLearner', node: 4 });
    h.flush(1);
    h.stabilize();
    h.run(5);
    expect(h.status(4).confState).toEqual({ voters: [1, 2, 3], learners: [4] });
    const promotion = h.node(1).raw.proposeConfChange({ type: 'addVoter', node: 4 }).index;
    h.flush(1);
    h.deliver((m) => m.type === 'app' && (m.entries?.length ?? 0) > 0);
    h.deliver((m) => m.type === 'appResp');
    expect(h.status(1).commit).toBeGreaterThanOrEqual(promotion);
    h.drop((m) => m.to === 3 || m.to === 4);
    h.deliver((m) => m.to === 2);
    expect(h.status(2).commit).toBeGreaterThanOrEqual(promotion);
    for (const id of [3, 4]) expect(h.status(id).commit).toBeLessThan(promotion);
    expect(h.status(4).confState.voters).not.toContain(4);
    // The leader is gone for good.
    h.partition([1], [2, 3, 4]);
    return { h, promotion };
  }

  it("a voter whose log holds the candidate's last entry commits through the candidate's commit: a promotion it never heard applies", () => {
    const { h, promotion } = promotionUnheardBy34();
    h.campaign(2);
    // Only the (pre)vote requests: no leader has told 3 or 4 anything since.
    h.deliver((m) => m.from === 2 && (m.type === 'vote' || m.type === 'preVote'));
    for (const id of [3, 4]) expect(h.status(id).commit).toBeGreaterThanOrEqual(promotion);
    expect(h.status(4).confState.voters).toEqual([1, 2, 3, 4]);
  });

  it("a voter whose log differs at the candidate's last entry learns no commit from it", () => {
    const { h, promotion } = promotionUnheardBy34();
    // The candidate's last entry (the promotion's index) at a term no other log has there: an
    // impossible log for a real candidate, which is what shows that the guard is the term match.
    const before = h.status(3).commit;
    h.node(2).storage.append([{ term: 99, index: promotion, type: 0, data: new Uint8Array(0) } as never]);
    expect(h.node(2).storage.lastIndex()).toBe(promotion);
    h.restart(2);
    // A restarted node campaigns only after its start-up quiet ticks.
    for (let i = 0; i < 40 && !h.queue.some((m) => m.from === 2 && (m.type === 'vote' || m.type === 'preVote')); i++) h.tick(2);
    expect(h.deliver((m) => m.from === 2 && m.to === 3 && (m.type === 'vote' || m.type === 'preVote'))).toBeGreaterThan(0);
    expect(h.status(3).commit).toBe(before);
    expect(before).toBeLessThan(promotion);
  });
});
