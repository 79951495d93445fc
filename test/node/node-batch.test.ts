/**
 * Node-level batches (src/node/replica/node-batch.ts, issue 35): every group's commit notices to a peer, and
 * every group's plain acknowledgements to a leader's node, travel as one frame item each; the
 * receiver gets back exactly the messages folded in. Held notices (NoticeHold) leave with the
 * peer's next frame or at the next tick, the newest per group.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { coalesceForPeer, expandBatch, NoticeHold } from '../../src/node/replica/node-batch.js';
import { decodeRaftFrame, encodeRaftFrame, type GroupMessage } from '../../src/node/raft-wire.js';
import type { Message } from '../../src/raft/types.js';

const u = fc.integer({ min: 0, max: 2 ** 40 });
const g = fc.integer({ min: 0, max: 2 ** 32 - 1 });

const notice = (group: number, commit: number, to = 2): GroupMessage => ({ group, message: { type: 'commit', from: 1, to, term: 3, index: commit, logTerm: 3, commit } });
const ack = (group: number, index: number): GroupMessage => ({ group, message: { type: 'appResp', from: 1, to: 2, term: 3, index, commit: index } });

/** Every Raft message of a decoded frame, batches expanded, in order. */
function messagesOf(items: readonly GroupMessage[]): Array<{ group: number; message: Message }> {
  const out: Array<{ group: number; message: Message }> = [];
  for (const item of items) {
    if (item.batch !== undefined) out.push(...expandBatch(item.batch));
    else if (item.message !== undefined) out.push({ group: item.group, message: item.message });
  }
  return out;
}

describe('node-level batches', () => {
  it('fold every commit notice and plain acknowledgement of a frame into one item each, and give them back exactly', () => {
    const item = fc.oneof(
      fc.record({ group: g, term: u, index: u, logTerm: u, commit: u }).map(({ group, term, index, logTerm, commit }) => ({ group, message: { type: 'commit', from: 1, to: 2, term, index, logTerm, commit } as Message })),
      fc.record({ group: g, term: u, index: u, commit: u }).map(({ group, term, index, commit }) => ({ group, message: { type: 'appResp', from: 1, to: 2, term, index, commit } as Message })),
      fc.record({ group: g, term: u, index: u }).map(({ group, term, index }) => ({ group, message: { type: 'appResp', from: 1, to: 2, term, index, reject: true, rejectHint: index, logTerm: term, commit: 0 } as Message })),
      fc.record({ group: g, term: u, commit: u }).map(({ group, term, commit }) => ({ group, message: { type: 'heartbeat', from: 1, to: 2, term, commit } as Message })),
    );
    fc.assert(
      fc.property(fc.array(item, { maxLength: 40 }), (list) => {
        const folded = coalesceForPeer(list, 1, 2);
        expect(folded.filter((i) => i.batch?.kind === 'commits').length).toBe(list.some((i) => i.message.type === 'commit') ? 1 : 0);
        expect(folded.filter((i) => i.batch?.kind === 'acks').length).toBe(list.some((i) => i.message.type === 'appResp' && i.message.reject !== true) ? 1 : 0);
        const back = messagesOf(decodeRaftFrame(encodeRaftFrame(folded)));
        const key = (m: { group: number; message: Message }): string => JSON.stringify([m.group, m.message.type, m.message.term, m.message.index, m.message.commit, m.message.reject ?? false]);
        expect(back.map(key).sort()).toEqual(list.map(key).sort());
        // The rest keep their order.
        expect(back.filter((m) => m.message.type === 'heartbeat').map(key)).toEqual(list.filter((m) => m.message.type === 'heartbeat').map(key));
      }),
    );
  });

  it('an item of an unknown code refuses the frame (what an older node does with a batch)', () => {
    const frame = encodeRaftFrame(coalesceForPeer([notice(5, 9)], 1, 2));
    // The batch code sits right after version (1), count (4) and group (4).
    frame[9] = 0x4f;
    expect(() => decodeRaftFrame(frame)).toThrow(/unknown raft message type code/);
  });

  it('hold notices for the next frame to their peer, the newest per group; an append of the group makes one redundant', () => {
    const hold = new NoticeHold('frame');
    expect(hold.take(2, [notice(5, 9), notice(6, 4)])).toEqual([]);
    expect(hold.take(2, [notice(5, 10)])).toEqual([]);
    expect(hold.peers()).toEqual([2]);
    const app: GroupMessage = { group: 6, message: { type: 'app', from: 1, to: 2, term: 3, index: 4, logTerm: 3, entries: [], commit: 10 } };
    const sent = hold.take(2, [ack(7, 3), app]);
    expect(sent.map((i) => `${i.group}:${i.message?.type}:${i.message?.commit}`)).toEqual(['7:appResp:3', '6:app:10', '5:commit:10']);
    expect(hold.peers()).toEqual([]);

    const tick = new NoticeHold('tick');
    expect(tick.take(3, [notice(5, 9, 3), ack(7, 3)]).map((i) => i.message?.type)).toEqual(['appResp']);
    expect(tick.release(3).map((i) => i.group)).toEqual([5]);

    const now = new NoticeHold('iteration');
    expect(now.take(2, [notice(5, 9)]).map((i) => i.group)).toEqual([5]);
    expect(now.peers()).toEqual([]);
  });
});
