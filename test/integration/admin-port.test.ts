/**
 * The admin HTTP port of real nodes (src/server/admin-server.ts): /livez and /readyz on a running
 * cluster, the metric families after a known number of requests, ClusterInfo's admin addresses,
 * and that every metric deploy/grafana-dashboard.json and deploy/prometheus-alerts.yml name is one
 * a live node exposes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterStatusJson, clusterStatusText } from '../../src/cli/format.js';
import { LocalCluster } from './local-cluster.js';

const PARTITIONS = 4;
const PUTS = 30;
const GETS = 12;
const root = join(import.meta.dirname, '..', '..');

async function get(address: string, path: string, method = 'GET'): Promise<{ status: number; text: string }> {
  const response = await fetch(`http://${address}${path}`, { method, signal: AbortSignal.timeout(5_000) });
  return { status: response.status, text: await response.text() };
}

/** Sum of the samples of `name` whose labels include every pair of `labels`. */
function sumOf(exposition: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const text = match[2] ?? '';
    if (Object.entries(labels).every(([key, value]) => text.includes(`${key}="${value}"`))) sum += Number(match[3]);
  }
  return sum;
}

/** Metric names a dashboard or rule file uses (atoll_, nodejs_ and process_ families). */
function metricNamesIn(text: string): Set<string> {
  return new Set([...text.matchAll(/\b((?:atoll|nodejs|process)_[a-z0-9_]+)/g)].map((m) => m[1] as string));
}

/** Whether the exposition has a family for `name` (a histogram's _bucket/_sum/_count included). */
function exposes(exposition: string, name: string): boolean {
  if (exposition.includes(`# TYPE ${name} `)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && exposition.includes(`# TYPE ${base} histogram`);
}

describe('admin port on a running cluster', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    // The dashboard and the alert rules use the tenant series, which only --tenant-metrics serves.
    cluster = await LocalCluster.start({ partitions: PARTITIONS, extraArgs: ['--tenant-metrics', 'on'] });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('answers /livez and /readyz on every node, and refuses what it does not serve', async () => {
    for (const address of cluster.adminAddresses.values()) {
      expect(await get(address, '/livez')).toEqual({ status: 200, text: 'ok\n' });
      // waitReady saw a leader everywhere, but the nodes may still be moving leaderships to their
      // preferred nodes (a partition is leaderless for a moment during each move): ready within
      // a bounded wait.
      const deadline = Date.now() + 15_000;
      let ready = await get(address, '/readyz');
      while (ready.status !== 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        ready = await get(address, '/readyz');
      }
      expect(ready).toEqual({ status: 200, text: 'ok\n' });
      expect((await get(address, '/metrics', 'POST')).status).toBe(405);
      // Without authentication the status page's JSON needs no token (status-page.test.ts has the
      // authenticated cluster in a browser).
      const status = await get(address, '/status.json');
      expect(status.status).toBe(200);
      expect((JSON.parse(status.text) as { partitions: unknown[] }).partitions).toHaveLength(PARTITIONS);
      expect((await get(address, '/')).text).toContain('<title>Atoll status</title>');
      expect((await get(address, '/unknown')).status).toBe(404);
    }
  });

  it('lists every node\'s admin address in ClusterInfo', async () => {
    const info = await cluster.clusterInfoOf(2);
    expect(Object.fromEntries(info.nodes.map((node) => [node.id, node.adminAddress]))).toEqual(Object.fromEntries(cluster.adminAddresses));
    // `atoll cluster status` shows them, as URLs, through the client library's decoding.
    const client = cluster.client();
    try {
      const decoded = await client.clusterInfo();
      const json = clusterStatusJson(decoded) as { nodes: Array<{ id: number; admin?: string }> };
      expect(json.nodes.map((node) => node.admin)).toEqual([1, 2, 3].map((id) => `http://${cluster.adminAddresses.get(id)}`));
      const text = clusterStatusText(decoded);
      expect(text).toMatch(/node\s+address\s+state\s+admin\s+reachable/);
      for (const address of cluster.adminAddresses.values()) expect(text).toContain(`http://${address}`);
    } finally {
      client.close();
    }
  });

  it('counts requests by method and outcome, times them, and reports leaders and partitions', async () => {
    const client = cluster.client();
    try {
      for (let i = 0; i < PUTS; i++) await client.put(`admin/${i}`, `v${i}`);
      for (let i = 0; i < GETS; i++) await client.get(`admin/${i}`);
    } finally {
      client.close();
    }
    const scrapes = await Promise.all([...cluster.adminAddresses.values()].map(async (address) => (await get(address, '/metrics')).text));
    const total = (name: string, labels: Record<string, string> = {}): number => scrapes.reduce((sum, text) => sum + sumOf(text, name, labels), 0);
    // Every client request is counted once, at the node it arrived at (unary or Stream alike).
    expect(total('atoll_rpc_requests_total', { method: 'Put', code: 'OK' })).toBe(PUTS);
    expect(total('atoll_rpc_requests_total', { method: 'Get', code: 'OK' })).toBe(GETS);
    expect(total('atoll_rpc_duration_seconds_count', { method: 'Put' })).toBe(PUTS);
    // Leaders ran at least the client's puts (the nodes' own system records are puts too).
    expect(total('atoll_leader_requests_total', { kind: 'put', code: 'OK' })).toBeGreaterThanOrEqual(PUTS);
    // One leader per partition, and every replica (3 per partition) knows it.
    expect(total('atoll_partition_is_leader')).toBe(PARTITIONS);
    expect(total('atoll_partition_has_leader')).toBe(PARTITIONS * 3);
    expect(total('atoll_partition_keys')).toBeGreaterThanOrEqual(PUTS * 3);
    expect(total('atoll_raft_messages_total', { direction: 'sent' })).toBeGreaterThan(0);
    expect(total('atoll_storage_write_duration_seconds_count', { synced: 'true' })).toBeGreaterThan(0);
    expect(total('atoll_loop_iteration_duration_seconds_count')).toBeGreaterThan(0);
    expect(total('atoll_leader_changes_total')).toBeGreaterThanOrEqual(PARTITIONS);
    for (const text of scrapes) {
      expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
      expect(text).toMatch(/^nodejs_heap_size_used_bytes /m);
      expect(text).toContain('# TYPE nodejs_gc_duration_seconds histogram');
      // No key ever becomes a label value.
      expect(text).not.toContain('admin/');
    }
  });

  it('exposes every metric the Grafana dashboard and the alert rules use', async () => {
    const exposition = (await get(cluster.adminAddresses.get(1) as string, '/metrics')).text;
    const dashboard = readFileSync(join(root, 'deploy/grafana-dashboard.json'), 'utf8');
    const alerts = readFileSync(join(root, 'deploy/prometheus-alerts.yml'), 'utf8');
    JSON.parse(dashboard);
    const names = new Set([...metricNamesIn(dashboard), ...metricNamesIn(alerts)]);
    expect(names.size).toBeGreaterThan(20);
    const missing = [...names].filter((name) => !exposes(exposition, name));
    expect(missing).toEqual([]);
  });

  // Last: it stops two of the three nodes.
  it('turns /readyz to 503 when the node loses its quorum, while /livez stays 200', async () => {
    const admin = cluster.adminAddresses.get(1) as string;
    await cluster.kill(2);
    await cluster.kill(3);
    const deadline = Date.now() + 20_000;
    let ready = await get(admin, '/readyz');
    while (ready.status === 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      ready = await get(admin, '/readyz');
    }
    expect(ready.status).toBe(503);
    expect(ready.text).toMatch(/^no known leader for partition\(s\) /m);
    expect(await get(admin, '/livez')).toEqual({ status: 200, text: 'ok\n' });
    const metrics = (await get(admin, '/metrics')).text;
    expect(sumOf(metrics, 'atoll_peer_reachable', { peer: '2' }) + sumOf(metrics, 'atoll_peer_reachable', { peer: '3' })).toBe(0);
  }, 30_000);
});
