/**
 * `atoll top` through `run(argv, io)`: one snapshot as JSON from a real gRPC server around a fake
 * node, periodic plain output, exit 2 when no node answers, and the text layout (escaped and cut
 * keys, silent nodes named). The cluster-wide numbers are tested in test/integration/hotkeys.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type CliIo } from '../../src/cli/run.js';
import { topText, type TopSnapshot } from '../../src/cli/top.js';
import { startNode, type RunningNode } from '../server/harness.js';

let running: RunningNode;

beforeAll(async () => {
  running = await startNode({ nodeId: 1, partitionCount: 4 });
});
afterAll(() => running.stop());

async function atoll(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  // run.ts hands its io on to the command, so `isTty` reaches it: plain output even under a terminal.
  const io: CliIo & { isTty: boolean } = { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { ATOLL_ENDPOINTS: running.address }, isTty: false };
  const code = await run(argv, io);
  return { code, stdout, stderr };
}

describe('atoll top', () => {
  it('--once --json prints one snapshot of every node and partition', async () => {
    const { code, stdout, stderr } = await atoll('top', '--once', '--json', '--limit', '2');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const snapshot = JSON.parse(lines[0]!) as TopSnapshot;
    expect(snapshot.nodes).toEqual([{ id: 1, address: running.address, answered: true }]);
    expect(snapshot.partitions).toHaveLength(2);
    expect(snapshot).toMatchObject({ totalRequestsPerSecond: 0, keys: [] });
  });

  it('prints a table per refresh when not on a terminal, and stops after --count', async () => {
    const { code, stdout } = await atoll('top', '--count', '2', '--interval', '100');
    expect(code).toBe(0);
    expect(stdout.match(/^atoll top /gm)).toHaveLength(2);
    expect(stdout).not.toContain('\x1b[');
  });

  it('exits 2 when no node answers', async () => {
    const { code, stderr } = await atoll('--endpoints', '127.0.0.1:1', '--timeout', '300', 'top', '--once');
    expect(code).toBe(2);
    expect(stderr).toMatch(/^error UNAVAILABLE: no node answered/);
  });

  it('lays out partitions and keys, escaping control characters, marking cut keys and silent nodes', () => {
    const snapshot: TopSnapshot = {
      atMs: Date.UTC(2026, 0, 1),
      nodes: [
        { id: 1, address: 'a:1', answered: true },
        { id: 2, address: 'b:1', answered: false },
      ],
      totalRequestsPerSecond: 200,
      partitions: [{ id: 5, leader: 1, requestsPerSecond: 150, share: 0.75 }],
      keys: [
        { key: 'line\nbreak', partition: 5, requestsPerSecond: 100, errorPerSecond: 0.25, share: 0.5, truncated: false },
        { key: 'long-key-start', partition: 5, requestsPerSecond: 20, errorPerSecond: 0, share: 0.1, truncated: true },
      ],
    };
    expect(topText(snapshot)).toBe(
      [
        'atoll top  2026-01-01T00:00:00.000Z  1 of 2 nodes answered  200.0 requests/s',
        'no answer from node 2 (b:1): its share is missing',
        '',
        'partition  leader  req/s  share',
        '5          1       150.0  75.0%',
        '',
        'key              partition  req/s  ±err  share',
        '"line\\nbreak"    5          100.0  0.3   50.0%',
        'long-key-start…  5          20.0   0.0   10.0%',
      ].join('\n'),
    );
  });
});
