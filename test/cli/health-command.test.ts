/**
 * `atoll health`, the probe of the Docker HEALTHCHECK, docker-compose.yml and the Kubernetes
 * probes, against a real gRPC server around a fake node: exit 0 when SERVING, 1 when NOT_SERVING
 * or (with --leaders) a partition has no leader, 2 when nothing answers.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { leaderlessPartitions } from '../../src/cli/health.js';
import { run } from '../../src/cli/run.js';
import { startNode, type RunningNode } from '../server/harness.js';
import { freePort } from '../docker/docker-env.js';

let running: RunningNode;

beforeAll(async () => {
  running = await startNode({ nodeId: 1, partitionCount: 4 });
});
afterAll(() => running.stop());
beforeEach(() => {
  running.node.leaderId = 1;
  running.services.setServing(true);
});

async function atoll(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { ATOLL_ENDPOINTS: running.address } });
  return { code, stdout, stderr };
}

describe('atoll health', () => {
  it('exits 0 and prints SERVING for a serving node (the first of --endpoints by default)', async () => {
    expect(await atoll('health')).toEqual({ code: 0, stdout: `${running.address} SERVING\n`, stderr: '' });
    expect((await atoll('health', running.address, '--leaders')).code).toBe(0);
  });

  it('exits 1 when the node is shutting down (NOT_SERVING)', async () => {
    running.services.setServing(false);
    expect(await atoll('health', running.address)).toMatchObject({ code: 1, stdout: `${running.address} NOT_SERVING\n` });
  });

  it('with --leaders, exits 1 naming the partitions without a leader', async () => {
    running.node.leaderId = 0;
    expect((await atoll('health', running.address)).code).toBe(0);
    const outcome = await atoll('--json', 'health', running.address, '--leaders');
    expect(outcome.code).toBe(1);
    expect(JSON.parse(outcome.stdout)).toEqual({ address: running.address, status: 'SERVING', partitionsWithoutLeader: [0, 1, 2, 3], healthy: false });
  });

  it('counts the partitions a split created, and a founding one the answer leaves out', () => {
    const partition = (id: number, leader: number) => ({ id, leader, rangeStart: 0, rangeEnd: 0, replicas: [1], term: 1, commitIndex: 0, appliedIndex: 0, revision: 0 });
    // Partition 1 split at hash 0x60000000: the new partition (id = its first hash) has no leader yet.
    const split = { partitionCount: 4, partitions: [partition(0, 1), partition(1, 2), partition(0x60000000, 0), partition(2, 3), partition(3, 1)] };
    expect(leaderlessPartitions(split)).toEqual([0x60000000]);
    expect(leaderlessPartitions({ partitionCount: 4, partitions: [partition(0, 1), partition(1, 2), partition(3, 1)] })).toEqual([2]);
    expect(leaderlessPartitions({ partitionCount: 4, partitions: [] })).toEqual([0]);
  });

  it('exits 2 within the timeout when nothing answers', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const started = Date.now();
    const outcome = await atoll('--timeout', '1000', 'health', address);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(new RegExp(`^error UNAVAILABLE: ${address}: `));
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
