/**
 * ReadBarrier (src/node/replica/read-barrier.ts) starts ReadIndex rounds only at a leader: a read
 * enqueued while the replica led but reaching the loop after it stepped down is refused NOT_LEADER,
 * not forwarded to the new leader, where a lost message or answer left it waiting for good (the
 * whole-node simulator's seed 76954: a watch's barrier at a paused leader never answered).
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import type { RawNode } from '../../src/raft/rawnode.js';
import { ReadBarrier } from '../../src/node/replica/read-barrier.js';

/** The part of a RawNode the barrier uses, with the ReadIndex calls it made. */
function fakeRaw(role: 'leader' | 'follower'): { raw: RawNode; readIndexCalls: string[] } {
  const readIndexCalls: string[] = [];
  const raw = {
    role,
    committedIndex: 7,
    leaseStartMs: () => undefined,
    noteRead: () => undefined,
    notifyHost: () => undefined,
    readIndex: (context: string) => void readIndexCalls.push(context),
  };
  return { raw: raw as unknown as RawNode, readIndexCalls };
}

function waiter(): { outcome: () => string; resolve(): void; reject(error: unknown): void } {
  let outcome = 'waiting';
  return {
    outcome: () => outcome,
    resolve: () => void (outcome = 'resolved'),
    reject: (error: unknown) => void (outcome = error instanceof AtollError ? error.code : String(error)),
  };
}

describe('ReadBarrier rounds', () => {
  it('refuses the reads of a replica that is no longer the leader, starting no round', () => {
    const { raw, readIndexCalls } = fakeRaw('follower');
    const barrier = new ReadBarrier(3, raw, undefined, () => new AtollError('NOT_LEADER', 'not the leader'));
    const first = waiter();
    const second = waiter();
    barrier.enqueue(first);
    barrier.enqueue(second);
    barrier.startRound(7);
    expect([first.outcome(), second.outcome()]).toEqual(['NOT_LEADER', 'NOT_LEADER']);
    expect(readIndexCalls).toEqual([]);
    expect(barrier.readRounds).toBe(0);
  });

  it("starts a leader's round, and answers it once its read state comes and the index is applied", () => {
    const { raw, readIndexCalls } = fakeRaw('leader');
    const barrier = new ReadBarrier(3, raw, undefined, () => new AtollError('NOT_LEADER', 'not the leader'));
    const read = waiter();
    barrier.enqueue(read);
    barrier.startRound(5);
    expect(readIndexCalls).toEqual(['3:1']);
    expect(read.outcome()).toBe('waiting');
    barrier.onReady([{ index: 7, context: '3:1' }], []);
    barrier.release(6);
    expect(read.outcome()).toBe('waiting');
    barrier.release(7);
    expect(read.outcome()).toBe('resolved');
  });
});
