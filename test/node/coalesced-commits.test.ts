/**
 * Issue 35, items 1 and 2, counted in the whole-node simulator: when the groups a node leads
 * advance together, each follower node gets ONE node-level commit notice carrying every group's
 * commit (not a commit-only append per group), and each follower node answers the appends of one
 * iteration with ONE node-level acknowledgement (not an answer per group). The control: the same
 * seed without coalescing sends one of each per group.
 */
import { describe, expect, it } from 'vitest';
import type { GroupMessage } from '../../src/node/raft-wire.js';
import { simNodeCluster, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3];
const MAX_EVENTS = 2_000_000;

interface Counts {
  /** Groups led by node 1 that got entries in the window. */
  readonly groups: number;
  /** Per follower: node-level commit notices, the commits they carried, and commit-only appends. */
  readonly notices: Map<number, { items: number; commits: number; commitOnly: number }>;
  /** Per follower: node-level acknowledgements of node 1's groups, what they carried, and single answers. */
  readonly acks: Map<number, { items: number; acks: number; single: number }>;
}

async function putTogether(coalesce: boolean): Promise<Counts> {
  const sim = simNodeCluster({ seed: 35, nodes: NODES, partitions: 24, tickMs: 50, coalesceRaftMessages: coalesce });
  const { scheduler, network, cluster } = sim;
  await startAllLed(sim, NODES, 10_000, MAX_EVENTS);
  await scheduler.runUntil(scheduler.now + 3_000, MAX_EVENTS);
  const groups = new Set<number>();
  const notices = new Map(NODES.slice(1).map((id) => [id, { items: 0, commits: 0, commitOnly: 0 }]));
  const acks = new Map(NODES.slice(1).map((id) => [id, { items: 0, acks: 0, single: 0 }]));
  const send = network.send.bind(network);
  network.send = (from, to, messages: GroupMessage[]) => {
    for (const item of messages) {
      const m = item.message;
      if (from.host.node === 1) {
        if (m?.type === 'app' && (m.entries?.length ?? 0) > 0) groups.add(item.group);
        if (m?.type === 'app' && m.commitOnly === true) notices.get(to)!.commitOnly++;
        if (item.batch?.kind === 'commits') {
          notices.get(to)!.items++;
          notices.get(to)!.commits += item.batch.items.length;
        }
      } else if (to === 1) {
        if (m?.type === 'appResp' && m.reject !== true) acks.get(from.host.node)!.single++;
        if (item.batch?.kind === 'acks') {
          acks.get(from.host.node)!.items++;
          acks.get(from.host.node)!.acks += item.batch.items.length;
        }
      }
    }
    return send(from, to, messages);
  };
  // Only node 1's own groups: their entries, answers and commits, counted as they leave.
  const api = cluster.apiOf(1)!;
  const host = cluster.hostOf(1)!;
  const value = new Uint8Array(16).fill(97);
  const puts = Array.from({ length: 48 }, (_, i) => api.put({ key: `${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + ((i * 7) % 26))}-${i}`, value }, { deadlineMs: host.clock.wallMs() + 2_000 }));
  await scheduler.runUntil(scheduler.now + 1_000, MAX_EVENTS);
  await Promise.all(puts);
  network.send = send;
  return { groups: groups.size, notices, acks };
}

describe('coalesced commit notices and acknowledgements', () => {
  it('one notice per follower node for every group that advanced, one acknowledgement per follower node for every group appended', async () => {
    const on = await putTogether(true);
    expect(on.groups).toBeGreaterThanOrEqual(4);
    for (const follower of [2, 3]) {
      const n = on.notices.get(follower)!;
      const a = on.acks.get(follower)!;
      expect(n.commitOnly).toBe(0);
      expect(n.items, `commit notices to node ${follower}`).toBe(1);
      expect(n.commits).toBe(on.groups);
      expect(a.single).toBe(0);
      expect(a.items, `acknowledgement items from node ${follower}`).toBe(1);
      expect(a.acks).toBe(on.groups);
    }
    // The control: a commit-only append and an answer per group and follower.
    const off = await putTogether(false);
    expect(off.groups).toBe(on.groups);
    for (const follower of [2, 3]) {
      expect(off.notices.get(follower)!.items).toBe(0);
      expect(off.notices.get(follower)!.commitOnly).toBeGreaterThanOrEqual(off.groups - 1);
      expect(off.acks.get(follower)!.single).toBe(off.groups);
    }
  }, 60_000);
});
