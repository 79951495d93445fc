/**
 * --coalesce-raft-messages (ATOLL_COALESCE_RAFT_MESSAGES=1; src/bin/server-flags.ts) turns on
 * AtollNodeConfig.coalesceRaftMessages (issue 35; src/node/replica/node-batch.ts): real nodes
 * started with it carry their commit advances to followers as commit notices, which the followers
 * receive (atoll_raft_messages_total{direction="received",type="commit"}); the control, the same
 * cluster without the flag, receives none (commit-only appends instead). Off by default, listed in
 * --help with the rolling-upgrade rule; the environment variable sets the default, and a value
 * other than 0 or 1 stops the server before it opens anything.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalCluster } from '../../src/chaos/local-cluster.js';

function server(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const base: NodeJS.ProcessEnv = { ...process.env, ATOLL_LOG_LEVEL: 'error' };
  delete base['ATOLL_COALESCE_RAFT_MESSAGES'];
  return spawnSync(process.execPath, [resolve('dist/src/bin/atoll-server.js'), ...args], { encoding: 'utf8', timeout: 20_000, env: { ...base, ...env } });
}

/** Sum over every node's /metrics of atoll_raft_messages_total with these labels. */
async function raftMessages(cluster: LocalCluster, direction: string, type: string): Promise<number> {
  let sum = 0;
  for (const address of cluster.adminAddresses.values()) {
    const text = await (await fetch(`http://${address}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    for (const line of text.split('\n')) {
      if (line.startsWith('atoll_raft_messages_total{') && line.includes(`direction="${direction}"`) && line.includes(`type="${type}"`)) sum += Number(line.split(' ').at(-1));
    }
  }
  return sum;
}

/** Commit notices the nodes received while 40 puts went through a fresh cluster, and how many were appends. */
async function putsOn(extraArgs: string[]): Promise<{ notices: number; appends: number }> {
  const cluster = await LocalCluster.start({ partitions: 4, extraArgs });
  try {
    const client = cluster.client();
    try {
      for (let i = 0; i < 40; i++) await client.put(`coalesce/${i}`, `v${i}`);
    } finally {
      client.close();
    }
    // Followers apply a held notice within 5 ms (MAX_NOTICE_HOLD_MS) or at the next tick.
    await new Promise((done) => setTimeout(done, 300));
    return { notices: await raftMessages(cluster, 'received', 'commit'), appends: await raftMessages(cluster, 'received', 'app') };
  } finally {
    await cluster.stop();
  }
}

describe('atoll-server --coalesce-raft-messages', () => {
  it('is listed in --help, off by default, with the rolling-upgrade rule; the environment sets its default', () => {
    const help = server(['--help']);
    expect(help.status).toBe(0);
    const text = help.stdout.replace(/\s+/g, ' ');
    expect(text).toMatch(/--coalesce-raft-messages .*upgrade EVERY node first.*ATOLL_COALESCE_RAFT_MESSAGES=1/);
    expect(text).not.toMatch(/--coalesce-raft-messages [^-]*\(default: true\)/);
    const on = server(['--help'], { ATOLL_COALESCE_RAFT_MESSAGES: '1' });
    expect(on.stdout.replace(/\s+/g, ' ')).toMatch(/--coalesce-raft-messages [^]*?\(default: true\)/);
    const wrong = server(['--id', '1', '--peers', '1=127.0.0.1:7001', '--data-dir', '/nonexistent/never-created'], { ATOLL_COALESCE_RAFT_MESSAGES: 'yes' });
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toMatch(/ATOLL_COALESCE_RAFT_MESSAGES must be 1 \(on\) or 0 \(off\)/);
  });

  it('makes real nodes send commit notices, which the control without it never does', async () => {
    const on = await putsOn(['--coalesce-raft-messages']);
    const off = await putsOn([]);
    expect(on.appends).toBeGreaterThan(0);
    expect(off.appends).toBeGreaterThan(0);
    expect(on.notices, 'commit notices received with the flag').toBeGreaterThan(0);
    expect(off.notices, 'commit notices received without it').toBe(0);
  }, 90_000);
});
