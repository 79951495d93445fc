import { describe, expect, it } from 'vitest';
import { checkWatches } from '../../../src/sim/node/watch-checker.js';
import type { SimCluster } from '../../../src/sim/node/sim-cluster.js';
import type { ReceivedMessage, WatchRecord } from '../../../src/sim/node/watch-workload.js';

/** No up node: the checker skips no-gap (no replica to compare with) and judges the rest. */
const noCluster = { nodeIds: [] } as unknown as SimCluster;

function record(messages: Array<Omit<ReceivedMessage, 'attempt' | 'node' | 'atMs'>>, extra: Partial<WatchRecord> = {}): WatchRecord {
  const received = messages.map((message, i) => ({ ...message, attempt: 1 + Math.floor(i / 2), node: 1, atMs: i }));
  return {
    id: 'w1',
    target: { prefix: 'r0' },
    stale: false,
    requestedStart: undefined,
    startRevision: received[0]?.revision,
    lastRevision: received[received.length - 1]?.revision,
    messages: received,
    attempts: 2,
    endings: [],
    ended: 'finished',
    finalRevision: undefined,
    caughtUp: true,
    ...extra,
  };
}

const put = (key: string, revision: number, value: string) => ({ type: 'put' as const, key, revision, value });

describe('watch checker', () => {
  it('passes a watch that received each acknowledged write once, in order, across a resume', async () => {
    const watch = record([
      { revision: 5, progress: true, events: [] },
      { revision: 6, progress: false, events: [put('r0/k0', 6, 'a')] },
      { revision: 6, progress: true, events: [] },
      { revision: 8, progress: false, events: [put('r0/k1', 8, 'b')] },
    ]);
    const failures = await checkWatches([watch], [{ key: 'r0/k0', value: 'a', revision: 6 }, { key: 'r0/k1', value: 'b', revision: 8 }, { key: 'r1/k0', value: 'x', revision: 7 }], noCluster, 'fnv1a32');
    expect(failures).toEqual([]);
  });

  it('fails a duplicate after a resume, a revision that goes back, and an acknowledged write missed', async () => {
    const watch = record([
      { revision: 5, progress: true, events: [] },
      { revision: 6, progress: false, events: [put('r0/k0', 6, 'a')] },
      { revision: 6, progress: false, events: [put('r0/k0', 6, 'a')] },
      { revision: 9, progress: true, events: [] },
    ]);
    const failures = await checkWatches([watch], [{ key: 'r0/k1', value: null, revision: 7 }], noCluster, 'fnv1a32');
    expect(failures.map((f) => `${f.checker}/${f.invariant}`)).toEqual(['watch/exactly-once-in-order', 'watch/exactly-once-in-order', 'watch/acknowledged-writes']);
  });

  it('fails a watch that did not catch up with its partition', async () => {
    const watch = record([{ revision: 5, progress: true, events: [] }], { caughtUp: false, finalRevision: 9 });
    const failures = await checkWatches([watch], [], noCluster, 'fnv1a32');
    expect(failures.map((f) => f.invariant)).toEqual(['catches-up']);
  });
});
