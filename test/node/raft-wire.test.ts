import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { decodeRaftFrame, encodeRaftFrame, type GroupMessage } from '../../src/node/raft-wire.js';
import { EntryType, type Message } from '../../src/raft/types.js';

const types = ['app', 'appResp', 'vote', 'voteResp', 'preVote', 'preVoteResp', 'heartbeat', 'heartbeatResp', 'snap', 'snapResp', 'timeoutNow', 'readIndex', 'readIndexResp'] as const;
const u = fc.integer({ min: 0, max: 2 ** 40 });
const id = fc.integer({ min: 1, max: 2 ** 31 });
const bytes = fc.uint8Array({ maxLength: 64 });

const message: fc.Arbitrary<Message> = fc
  .record(
    {
      type: fc.constantFrom(...types),
      from: id,
      to: id,
      term: u,
      logTerm: u,
      index: u,
      entries: fc.array(fc.record({ term: u, index: u, type: fc.constantFrom(EntryType.Normal, EntryType.ConfChange), data: bytes }), { minLength: 1, maxLength: 4 }),
      commit: u,
      reject: fc.constant(true),
      rejectHint: u,
      snapshot: fc.record({ index: u, term: u, confState: fc.record({ voters: fc.array(id, { maxLength: 5 }), learners: fc.array(id, { maxLength: 3 }) }) }),
      chunk: fc.record({ offset: u, data: bytes, last: fc.boolean() }),
      offset: u,
      readSeq: u,
      leaseTick: u,
      quiesce: fc.boolean(),
      force: fc.constant(true),
      context: fc.string(),
    },
    { requiredKeys: ['type', 'from', 'to', 'term'] },
  )
  .map((m) => m as Message);

describe('raft wire frames', () => {
  it('round-trip any batch of messages for many groups', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ group: fc.integer({ min: 0, max: 65535 }), message }), { maxLength: 8 }), (batch: GroupMessage[]) => {
        expect(decodeRaftFrame(encodeRaftFrame(batch))).toEqual(batch);
      }),
      { numRuns: 300 },
    );
  });

  it('reject malformed and truncated frames with an operating error, never a crash', () => {
    const frame = encodeRaftFrame([{ group: 3, message: { type: 'app', from: 1, to: 2, term: 5, index: 7, entries: [{ term: 5, index: 8, type: EntryType.Normal, data: new Uint8Array([1, 2, 3]) }] } }]);
    for (let cut = 0; cut < frame.length; cut++) {
      let error: unknown;
      try {
        decodeRaftFrame(frame.subarray(0, cut));
      } catch (caught) {
        error = caught;
      }
      expect(isAtollError(error), `cut at ${cut}`).toBe(true);
    }
    const badType = frame.slice();
    badType[9] = 200; // the message type code of the first message
    expect(() => decodeRaftFrame(badType)).toThrow(/unknown raft message type/);
    const badVersion = frame.slice();
    badVersion[0] = 9;
    expect(() => decodeRaftFrame(badVersion)).toThrow(/version/);
  });

  it('decodes entries into buffers of their own, not views of the frame (the log mirror keeps them)', () => {
    const frame = encodeRaftFrame([
      { group: 3, message: { type: 'app', from: 1, to: 2, term: 4, logTerm: 4, index: 9, commit: 9, entries: [{ term: 4, index: 10, type: EntryType.Normal, data: Uint8Array.of(1, 2, 3) }] } },
    ]);
    // As grpc-js may hand it over: a Buffer carved from a larger shared one (Buffer#slice is a view).
    const pool = Buffer.alloc(8192);
    pool.set(frame, 100);
    const [decoded] = decodeRaftFrame(pool.subarray(100, 100 + frame.length));
    const data = decoded?.message?.entries?.[0]?.data as Uint8Array;
    expect([...data]).toEqual([1, 2, 3]);
    expect(data.buffer).not.toBe(pool.buffer);
    expect(data.buffer.byteLength).toBe(3);
  });
});
