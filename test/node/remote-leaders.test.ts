/**
 * What a node learns about the leaders of partitions it does not host (Router.refreshRemoteLeaders):
 * only a peer's first-hand answers count, the partitions that peer hosts. A peer reports the others
 * too, with term 0 and its own guesses: a peer that left a partition may still list itself among
 * its voters, and name as leader a node that lost its replica in the same moves. Learned, such an
 * entry made a node hint at itself as the leader of a partition it no longer held, and a stale
 * watch's client went back to it for good (whole-node simulator seed 92397).
 */
import { describe, expect, it } from 'vitest';
import { defaultLimits } from '../../src/limits.js';
import type { ClusterInfoResponse, PartitionInfo } from '../../src/api/node-api.js';
import type { RequestDeadlines } from '../../src/node/service/request-deadline.js';
import { Router, type RouterOptions } from '../../src/node/service/router.js';

function partition(id: number, fields: Partial<PartitionInfo>): PartitionInfo {
  return { id, rangeStart: 0, rangeEnd: 0, replicas: [], learners: [], leader: 0, term: 0, commitIndex: 0, appliedIndex: 0, revision: 0, requestsPerSecond: 0, topKeys: [], ...fields } as PartitionInfo;
}

/** Node 1 of five, hosting none of two partitions; each peer answers ClusterInfo with `reports[peer]`. */
function routerOfNode1(reports: Record<number, PartitionInfo[]>): { router: Router; asked: number[] } {
  const asked: number[] = [];
  const peers = new Map([2, 3, 4, 5].map((id) => [id, `127.0.0.1:${7000 + id}`] as const));
  const driver = {
    groups: new Map(),
    closed: false,
    transport: {
      isReachable: () => true,
      clusterInfo: async (peer: number): Promise<ClusterInfoResponse> => {
        asked.push(peer);
        return { nodeId: peer, partitions: reports[peer] ?? [] } as unknown as ClusterInfoResponse;
      },
    },
  };
  const options = {
    id: 1,
    peers,
    nodeIds: [1, 2, 3, 4, 5],
    partitions: 2,
    replicationFactor: 3,
    tickMs: 100,
    electionTicks: 10,
    limits: defaultLimits,
    testBugs: undefined,
    driver,
    executor: {},
    admission: {},
    clock: { wallMs: () => 1_000_000, monotonicMs: () => 1_000 },
    timers: {},
    deadlines: {} as RequestDeadlines,
  } as unknown as RouterOptions;
  return { router: new Router(options), asked };
}

describe('leaders of partitions this node does not host', () => {
  it("a peer's second-hand entry (term 0) is not learned, even when its guessed voters name the peer and its leader this node", async () => {
    const { router, asked } = routerOfNode1({
      // Node 2 left partition 0 in a move; its table still guesses voters 1, 2, 3 led by node 1 (this node, whose replica the next move took away).
      2: [partition(0, { replicas: [1, 2, 3], leader: 1, term: 0 }), partition(1, { replicas: [2, 3, 4], leader: 3, term: 4 })],
      3: [partition(0, { replicas: [3, 4, 5], leader: 5, term: 7 }), partition(1, { replicas: [2, 3, 4], leader: 3, term: 4 })],
    });
    await router.refreshRemoteLeaders();
    expect(router.remoteLeaderOf(0)).toBe(5);
    expect(router.remoteLeaderOf(1)).toBe(3);
    expect(router.replicasOf(0)).toEqual([3, 4, 5]);
    // Node 2 left partition 0 unlearned, so node 3 was asked too.
    expect(asked).toEqual([2, 3]);
  });

  it('this node is never recorded as the remote leader of a partition it does not host', async () => {
    // A first-hand but stale answer (node 3 has not heard of the new leader yet) names this node.
    const { router } = routerOfNode1({ 3: [partition(0, { replicas: [3, 4, 5], leader: 1, term: 6 })] });
    await router.refreshRemoteLeaders();
    expect(router.remoteLeaderOf(0)).toBeUndefined();
    expect(router.replicasOf(0)).toEqual([3, 4, 5]);
  });
});
