/**
 * A loop task that breaks an invariant stops the node (issue 16): a `node:assert` AssertionError,
 * such as the Raft core's safety checks in step(), sets the node's failure, ends the loop (no
 * further iteration) and closes storage, as a failed synced write does. Expected errors (RaftError,
 * AtollError: src/node/replica/raft-driver.ts isExpectedTaskError) are logged and skipped, and a forged
 * peer message is still dropped before step(), so it cannot stop the node.
 */
import assert from 'node:assert/strict';
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { AtollNode } from '../../src/node/atoll-node.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { systemClock, systemTimers, type TransportEvents } from '../../src/node/ports.js';
import type { RaftDriver } from '../../src/node/replica/raft-driver.js';
import { RaftError } from '../../src/raft/errors.js';
import { Rng } from '../../src/raft/rng.js';
import { EntryType } from '../../src/raft/types.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { closedAfterEach, driverOf, expectAllLed, loneNodeConfig, silentTransport } from './in-process-cluster.js';

const settle = (ms = 50): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Started {
  node: AtollNode;
  driver: RaftDriver<PartitionReplica>;
  events: TransportEvents;
  engineClosed: () => boolean;
}

const nodes = closedAfterEach();

/**
 * Node 1 on a memory engine: alone by default (it leads every partition), or with a silent node 2
 * in every group (`withPeer`: nobody leads, but node 2 is a member whose messages node 1 steps).
 */
async function start(withPeer = false): Promise<Started> {
  const peers: Array<[number, string]> = withPeer ? [[1, 'a:1'], [2, 'a:2']] : [[1, 'a:1']];
  const engine = new MemoryEngine();
  let closed = false;
  const close = engine.close.bind(engine);
  engine.close = async () => {
    closed = true;
    await close();
  };
  let events: TransportEvents | undefined;
  const transport = silentTransport();
  const node = await AtollNode.open(
    loneNodeConfig('loop-failure', { peers: new Map(peers), partitions: 2 }),
    {
      transport: (given) => {
        events = given;
        return transport;
      },
      engine,
      clock: systemClock,
      timers: systemTimers,
      random: new Rng(11),
    },
  );
  nodes.add(node);
  if (!withPeer) await expectAllLed(node, 5_000);
  // The test queues loop tasks as the node's rooms do, through the node's driver.
  const driver = driverOf(node);
  return { node, driver, events: events as TransportEvents, engineClosed: () => closed };
}

/** Runs `task` on the loop and waits until the loop has moved past it. */
async function runTask(driver: RaftDriver<PartitionReplica>, task: () => void): Promise<void> {
  driver.enqueue(task);
  await settle();
}

describe('an error thrown inside a loop task', () => {
  it('an assertion failure in the Raft core stops the node: failure set, no further iteration, storage closed', async () => {
    const { node: started, driver, engineClosed } = await start();
    const group = driver.groups.get(0) as PartitionReplica;
    const { term } = group.raw.status();
    // A snapshot message without its snapshot, stepped past the peer-message check: the Raft core's
    // assertion in step() trips (this is the message the last test sends through the transport).
    await runTask(driver, () => group.raw.step({ type: 'snap', from: 2, to: 1, term: term + 1 }));
    for (let attempt = 0; attempt < 50 && !engineClosed(); attempt++) await settle(20);
    expect(started.failure).toBeInstanceOf(assert.AssertionError);
    expect(driver.closed).toBe(true);
    expect(engineClosed()).toBe(true);
    let ranAfter = false;
    await runTask(driver, () => {
      ranAfter = true;
    });
    expect(ranAfter).toBe(false);
    // A stopped node changes nothing more: a write only runs out its deadline (atoll-server.ts exits the process).
    await expect(started.put({ key: 'k', value: new Uint8Array([1]) }, { deadlineMs: Date.now() + 200 })).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' });
  });

  it('any AssertionError thrown by a task stops the node, and the rest of the loop never runs', async () => {
    const { node: started, driver, engineClosed } = await start();
    let later = 0;
    driver.enqueue(() => assert.fail('an invariant broke'));
    driver.enqueue(() => later++);
    await settle();
    for (let attempt = 0; attempt < 50 && !engineClosed(); attempt++) await settle(20);
    expect(started.failure?.message).toBe('an invariant broke');
    expect(later).toBe(0);
    expect(engineClosed()).toBe(true);
  });

  it('expected errors (RaftError, AtollError) are skipped: the node keeps serving', async () => {
    const { node: started, driver, engineClosed } = await start();
    let later = 0;
    driver.enqueue(() => {
      throw new RaftError('PROPOSAL_DROPPED', 'not the leader');
    });
    driver.enqueue(() => {
      throw new AtollError('UNAVAILABLE', 'a documented operating error');
    });
    driver.enqueue(() => later++);
    await settle();
    expect(later).toBe(1);
    expect(started.failure).toBeUndefined();
    expect(driver.closed).toBe(false);
    expect(engineClosed()).toBe(false);
    const put = await started.put({ key: 'k', value: new Uint8Array([7]) }, { deadlineMs: Date.now() + 5_000 });
    expect(put.applied).toBe(true);
  });

  it('a forged peer message that would trip an assertion is dropped before step(): the node lives', async () => {
    const { node: started, driver, events, engineClosed } = await start(true);
    const group = driver.groups.get(0) as PartitionReplica;
    expect(group.raw.isMember(2)).toBe(true);
    const { term, lastIndex } = group.raw.status();
    // From node 2, a member: a snapshot message without its snapshot, and entries that skip indexes.
    events.onMessages(2, [{ group: 0, message: { type: 'snap', from: 2, to: 1, term: term + 1 } }]);
    const skipped = { index: lastIndex + 3, term: term + 1, type: EntryType.Normal, data: new Uint8Array(0) };
    events.onMessages(2, [{ group: 0, message: { type: 'app', from: 2, to: 1, term: term + 1, index: lastIndex, logTerm: 0, entries: [skipped] } }]);
    await settle();
    expect(started.refusedPeerMessageCount).toBe(2);
    let later = 0;
    await runTask(driver, () => later++);
    expect(later).toBe(1);
    expect(started.failure).toBeUndefined();
    expect(driver.closed).toBe(false);
    expect(engineClosed()).toBe(false);
  });
});
