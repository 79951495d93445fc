/**
 * The node runs on the ports it is given (src/node/ports.ts): a storage engine, a transport, a
 * clock and timers passed in. Nothing reaches the data directory when an engine is passed, Raft
 * traffic goes out through the given transport, and the Raft groups tick only when the given clock
 * moves: a timer firing without time passing starts no election.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { AtollNode } from '../../src/node/atoll-node.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import { systemTimers, type NodeClock, type NodeTimers, type NodeTransport } from '../../src/node/ports.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { closedAfterEach, expectAllLed } from './in-process-cluster.js';

const tickMs = 100;
const electionTicks = 10;

/** A clock the test moves, and interval timers the test fires. */
function manualTime(): { clock: NodeClock; timers: NodeTimers; advance(ms: number): void; fireIntervals(): void } {
  let nowMs = 1_000;
  const intervals = new Set<() => void>();
  return {
    clock: { monotonicMs: () => nowMs, wallMs: () => Date.now() },
    timers: {
      every: (_intervalMs, run) => {
        intervals.add(run);
        return { cancel: () => intervals.delete(run) };
      },
      after: systemTimers.after,
      soon: systemTimers.soon,
    },
    advance: (ms) => {
      nowMs += ms;
    },
    fireIntervals: () => {
      for (const run of intervals) run();
    },
  };
}

/** A transport to nowhere that records what the node sends. */
function recordingTransport(): { transport: NodeTransport; sent: Array<{ peer: number; group: number; type: string }> } {
  const sent: Array<{ peer: number; group: number; type: string }> = [];
  const transport: NodeTransport = {
    send: (peer, messages) => {
      for (const { group, message, transfer } of messages) sent.push({ peer, group, type: message?.type ?? transfer?.kind ?? '' });
    },
    isReachable: () => true,
    forward: () => Promise.reject(new AtollError('UNAVAILABLE', 'no peers in this test')),
    clusterInfo: () => Promise.reject(new AtollError('UNAVAILABLE', 'no peers in this test')),
    close: () => undefined,
  };
  return { transport, sent };
}

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 50));
const dataDir = join(tmpdir(), `atoll-node-ports-never-created-${process.pid}`);
const base = { dataDir, tickMs, electionTicks, retentionRevisions: 1_000, snapshotEveryEntries: 1_000, peerSecrets: ['p'.repeat(32)], logger: pino({ level: 'silent' }) };

const opened = closedAfterEach();

describe('a node on the ports it is given', () => {
  it('serves writes and reads from the engine passed in, and never touches its data directory', async () => {
    const time = manualTime();
    const { transport } = recordingTransport();
    const node = opened.add(
      await AtollNode.open(
        { ...base, id: 1, peers: new Map([[1, 'a:1']]), partitions: 2, replicationFactor: 1 },
        { transport: () => transport, engine: new MemoryEngine(), clock: time.clock, timers: time.timers, random: new Rng(7) },
      ),
    );
    await expectAllLed(node, 5_000);
    const context = { deadlineMs: Date.now() + 5_000 };
    const put = await node.put({ key: 'k/1', value: new Uint8Array([1, 2]) }, context);
    expect(put.applied).toBe(true);
    const got = await node.get({ key: 'k/1' }, context);
    expect(got.found && [...got.value]).toEqual([1, 2]);
    expect(existsSync(dataDir)).toBe(false);
    expect(node.failure).toBeUndefined();
  });

  it('sends Raft traffic through the given transport, and ticks only when the given clock moves', async () => {
    const time = manualTime();
    const { transport, sent } = recordingTransport();
    const partitions = 8;
    opened.add(
      await AtollNode.open(
        { ...base, id: 1, peers: new Map([[1, 'a:1'], [2, 'a:2']]), partitions, replicationFactor: 2 },
        { transport: () => transport, engine: new MemoryEngine(), clock: time.clock, timers: time.timers, random: new Rng(7) },
      ),
    );
    await settle();
    const ledByTwo = [...Array(partitions).keys()].filter((partition) => preferredLeaderOf(partition, [1, 2], 2) === 2);
    const ledByOne = [...Array(partitions).keys()].filter((partition) => preferredLeaderOf(partition, [1, 2], 2) === 1);
    expect(ledByOne.length).toBeGreaterThan(0);
    expect(ledByTwo.length).toBeGreaterThan(0);
    const campaigns = (groups: number[]): number =>
      sent.filter((message) => message.peer === 2 && groups.includes(message.group) && (message.type === 'preVote' || message.type === 'vote')).length;
    // At start the preferred leaders campaign, and only they.
    expect(campaigns(ledByOne)).toBeGreaterThan(0);
    expect(campaigns(ledByTwo)).toBe(0);

    // Timers firing while the clock stands still: no tick, so no election timeout.
    for (let round = 0; round < 5 * electionTicks; round++) time.fireIntervals();
    await settle();
    expect(campaigns(ledByTwo)).toBe(0);

    // Four election timeouts of the given clock later, the other partitions campaign too (their
    // first election is postponed by two timeouts at start, so the preferred leader goes first:
    // maintenance.ts; their random timeout is one to two more).
    for (let tick = 0; tick < 4 * electionTicks; tick++) {
      time.advance(tickMs);
      time.fireIntervals();
    }
    await settle();
    expect(campaigns(ledByTwo)).toBeGreaterThan(0);
  });
});
