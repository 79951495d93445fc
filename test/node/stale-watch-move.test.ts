/**
 * A stale watch on a replica that a move takes away (issue 32, defect 4), in the whole-node
 * simulator's virtual time on five nodes: the watch served by a follower's own applied history
 * must end, NOT_LEADER with a leader hint, once the node no longer holds the replica it started on,
 * so the client resumes at a replica that has the partition. The old watch captured the replica at
 * its start and skipped every later check: it sent progress at the old revision forever.
 */
import { describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { defaultTenant } from '../../src/keys/tenant-keys.js';
import type { KvOperation } from '../../src/api/operations.js';
import { mapOperation } from '../../src/tenancy/map-operation.js';
import type { NodeTestBugs } from '../../src/node/node-config.js';
import { CollectingSink } from './in-process-cluster.js';
import { simNodeCluster, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3, 4, 5];
const PARTITIONS = 4;
const MAX_EVENTS = 5_000_000;

/** Runs the scenario; returns how the stale watch ended (undefined while it still runs). */
async function moveUnderStaleWatch(testBugs: NodeTestBugs): Promise<{ ended: unknown; moved: boolean; moveError: unknown }> {
  const sim = simNodeCluster({ seed: 7, nodes: NODES, partitions: PARTITIONS, tickMs: 50, traceLines: 400, testBugs });
  const { scheduler, cluster } = sim;
  await startAllLed(sim, NODES, 20_000, MAX_EVENTS);
  // The partition of the watched bucket as the node routes it (tenancy maps keys first).
  const bucket = 'sw0';
  const router = (cluster.apiOf(1) as unknown as { router: { partitionOf(operation: KvOperation, tenant: string): number } }).router;
  const partition = router.partitionOf(mapOperation(defaultTenant, { kind: 'getByPrefix', request: { prefix: `${bucket}/` } }), defaultTenant);
  const hosts = NODES.filter((id) => groupsOf(cluster.apiOf(id)).has(partition));
  const leader = hosts.find((id) => groupsOf(cluster.apiOf(id)).get(partition)!.raw.status().role === 'leader')!;
  const follower = hosts.find((id) => id !== leader)!;
  const target = NODES.find((id) => !hosts.includes(id))!;
  expect(hosts).toHaveLength(3);

  const sink = new CollectingSink();
  const abort = new AbortController();
  let ended: unknown = 'running';
  void cluster
    .apiOf(follower)!
    .watch({ prefix: `${bucket}/`, stale: true, progress: true }, { deadlineMs: cluster.hostOf(follower)!.clock.wallMs() + 3_600_000, signal: abort.signal }, sink)
    .then(
      () => (ended = undefined),
      (error: unknown) => (ended = error),
    );
  await scheduler.runUntil(scheduler.now + 1_000, MAX_EVENTS);
  expect(sink.messages.length, String(ended)).toBeGreaterThan(0);

  // A move answers "repeat it" when a step outlasts its call (as `atoll cluster move` repeats it).
  let moved = false;
  let moveError: unknown;
  for (let attempt = 0; attempt < 10 && !moved; attempt++) {
    let answered = false;
    const leaderNow = hosts.concat(target).find((id) => groupsOf(cluster.apiOf(id)).get(partition)?.raw.status().role === 'leader') ?? leader;
    void cluster
      .apiOf(leaderNow)!
      .moveReplica({ partition, fromNode: follower, toNode: target }, { deadlineMs: cluster.hostOf(leaderNow)!.clock.wallMs() + 8_000 })
      .then(
        () => (moved = true),
        (error: unknown) => (moveError = error),
      )
      .finally(() => (answered = true));
    await scheduler.runUntil(scheduler.now + 30_000, MAX_EVENTS, () => answered);
  }
  await scheduler.runUntil(scheduler.now + 10_000, MAX_EVENTS, () => !groupsOf(cluster.apiOf(follower)).has(partition));
  // Long enough for many progress intervals and leader checks.
  await scheduler.runUntil(scheduler.now + 20_000, MAX_EVENTS, () => ended !== 'running');
  const endedBeforeAbort = ended;
  abort.abort();
  await scheduler.runUntil(scheduler.now + 1_000, MAX_EVENTS);
  return { ended: endedBeforeAbort, moved: moved && !groupsOf(cluster.apiOf(follower)).has(partition), moveError };
}

function groupsOf(node: unknown): Map<number, { raw: { status(): { role: string } } }> {
  return (node as { driver: { groups: Map<number, { raw: { status(): { role: string } } }> } }).driver.groups;
}

describe('stale watches and replica moves', () => {
  it('a stale watch ends NOT_LEADER once a move took its replica from the node', { timeout: 60_000 }, async () => {
    const { ended, moved, moveError } = await moveUnderStaleWatch({});
    expect(moved, String(moveError)).toBe(true);
    expect(isAtollError(ended) ? ended.code : ended).toBe('NOT_LEADER');
  });

  it('control: a stale watch that ignores the removal runs on (the defect this test catches)', { timeout: 60_000 }, async () => {
    const { ended, moved } = await moveUnderStaleWatch({ staleWatchIgnoresRemoval: true });
    expect(moved).toBe(true);
    expect(ended).toBe('running');
  });

  it('a stale watch is refused by a replica that awaits its first snapshot (simulator seed 66828)', { timeout: 60_000 }, async () => {
    const sim = simNodeCluster({ seed: 11, nodes: NODES, partitions: PARTITIONS, tickMs: 50, traceLines: 400 });
    const { scheduler, cluster } = sim;
    await startAllLed(sim, NODES, 20_000, MAX_EVENTS);
    const bucket = 'sw1';
    const router = (cluster.apiOf(1) as unknown as { router: { partitionOf(operation: KvOperation, tenant: string): number } }).router;
    const partition = router.partitionOf(mapOperation(defaultTenant, { kind: 'getByPrefix', request: { prefix: `${bucket}/` } }), defaultTenant);
    const outsider = NODES.find((id) => !groupsOf(cluster.apiOf(id)).has(partition))!;
    // What a move's first step does on its target: an empty replica, here one no leader ever fills.
    let prepared = false;
    void (cluster.apiOf(outsider) as unknown as { prepareReplica(partition: number, floor: { term: number; index: number }): Promise<void> })
      .prepareReplica(partition, { term: 1, index: 1 })
      .then(() => (prepared = true));
    await scheduler.runUntil(scheduler.now + 5_000, MAX_EVENTS, () => prepared);
    expect(groupsOf(cluster.apiOf(outsider)).has(partition)).toBe(true);
    let ended: unknown = 'running';
    const abort = new AbortController();
    void cluster
      .apiOf(outsider)!
      .watch({ prefix: `${bucket}/`, stale: true, progress: true }, { deadlineMs: cluster.hostOf(outsider)!.clock.wallMs() + 3_600_000, signal: abort.signal }, new CollectingSink())
      .then(
        () => (ended = undefined),
        (error: unknown) => (ended = error),
      );
    await scheduler.runUntil(scheduler.now + 3_000, MAX_EVENTS, () => ended !== 'running');
    abort.abort();
    // The replica knows no leader yet: NO_LEADER, which the client treats as NOT_LEADER (try another node).
    expect(isAtollError(ended) ? ended.code : ended).toBe('NO_LEADER');
  });
});
