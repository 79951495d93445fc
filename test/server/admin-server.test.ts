/**
 * The admin HTTP port on its own (no cluster): routes, the readiness rules, the bounds (no body
 * read, GET/HEAD only), and that two nodes' registries in one process stay apart.
 */
import { request } from 'node:http';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { NodeMetricsView, PartitionMetricsView } from '../../src/node/metrics.js';
import { AdminServer, defaultAdminAddress, defaultAdminListen, READY_MAX_APPLY_LAG, readinessProblems } from '../../src/server/admin-server.js';
import { PrometheusNodeMetrics } from '../../src/server/node-metrics.js';
import { tenantMetricsAccess, type TenantMetricsMode } from '../../src/server/admin-auth.js';
import { AtollError } from '../../src/errors.js';
import type { AtollNode } from '../../src/node/atoll-node.js';

const logger = pino({ level: 'silent' });

function partition(id: number, fields: Partial<PartitionMetricsView> = {}): PartitionMetricsView {
  return { partition: id, role: 'follower', term: 2, leader: 1, commitIndex: 10, appliedIndex: 10, logEntries: 10, proposalsPending: 0, requestsPerSecond: 0, keys: 0, bytes: 0, dedupRecords: 0, ...fields };
}

function view(partitions: PartitionMetricsView[]): NodeMetricsView {
  return { nodeId: 1, tasksQueued: 0, partitions, reachable: [{ node: 1, reachable: true }] };
}

function fetchText(port: number, path: string, method = 'GET', body?: string): Promise<{ status: number; type: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, timeout: 5_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('readiness', () => {
  it('is ready when serving, every partition has a leader and applied is near commit', () => {
    expect(readinessProblems(true, view([partition(0), partition(1, { role: 'leader' })]))).toEqual([]);
  });

  it('names what is wrong: not serving, partitions without a leader, lagging replicas', () => {
    expect(readinessProblems(false, view([partition(0)]))[0]).toMatch(/not serving/);
    expect(readinessProblems(true, view([partition(0), partition(3, { leader: 0 })]))).toEqual([expect.stringMatching(/no known leader for partition\(s\) 3$/)]);
    const lagging = partition(2, { commitIndex: 5_000, appliedIndex: 5_000 - READY_MAX_APPLY_LAG - 1 });
    expect(readinessProblems(true, view([lagging, partition(4, { commitIndex: 2_000, appliedIndex: 2_000 - READY_MAX_APPLY_LAG })]))).toEqual([expect.stringMatching(/behind commit on partition\(s\) 2$/)]);
  });
});

describe('admin server', () => {
  const servers: AdminServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });

  async function start(state: { serving: boolean; view: NodeMetricsView }, metrics = new PrometheusNodeMetrics({ processMetrics: false })): Promise<{ port: number; metrics: PrometheusNodeMetrics; server: AdminServer }> {
    metrics.attach({ metricsView: () => state.view, tenantUsageForMetrics: async () => [] });
    const server = new AdminServer({ registry: metrics.registry, view: () => state.view, serving: () => state.serving, logger });
    servers.push(server);
    const { port } = await server.listen('127.0.0.1:0');
    return { port, metrics, server };
  }

  it('serves /livez, /readyz (200 or 503 with the reason), /metrics, and refuses the rest', async () => {
    const state = { serving: true, view: view([partition(0), partition(1, { role: 'leader' })]) };
    const { port, metrics, server } = await start(state);
    expect(await fetchText(port, '/livez')).toMatchObject({ status: 200, text: 'ok\n' });
    expect(await fetchText(port, '/readyz')).toMatchObject({ status: 200, text: 'ok\n' });
    state.view = view([partition(0, { leader: 0 })]);
    expect(await fetchText(port, '/readyz')).toMatchObject({ status: 503, text: expect.stringMatching(/no known leader for partition\(s\) 0/) });
    state.serving = false;
    expect((await fetchText(port, '/readyz')).status).toBe(503);
    // Liveness does not depend on readiness: the process runs.
    expect((await fetchText(port, '/livez')).status).toBe(200);

    metrics.rpc('Put', 'OK', 0.002);
    metrics.rpc('Put', 'OK', 0.003);
    metrics.rpc('Get', 'NOT_LEADER', 0.001);
    metrics.executed('commit', 'TXN_CONFLICT', 0.004);
    metrics.raftMessages('sent', 'app', 3);
    const scraped = await fetchText(port, '/metrics?x=1');
    expect(scraped.status).toBe(200);
    expect(scraped.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(scraped.text).toContain('atoll_rpc_requests_total{method="Put",code="OK"} 2');
    expect(scraped.text).toContain('atoll_rpc_requests_total{method="Get",code="NOT_LEADER"} 1');
    expect(scraped.text).toContain('atoll_rpc_duration_seconds_count{method="Put"} 2');
    // Buckets are cumulative and `le` is inclusive: 0.002 and 0.003 are both <= 0.005, 0.002 <= 0.0025.
    expect(scraped.text).toContain('atoll_rpc_duration_seconds_bucket{method="Put",le="0.001"} 0');
    expect(scraped.text).toContain('atoll_rpc_duration_seconds_bucket{method="Put",le="0.0025"} 1');
    expect(scraped.text).toContain('atoll_rpc_duration_seconds_bucket{method="Put",le="0.005"} 2');
    expect(scraped.text).toContain('atoll_rpc_duration_seconds_bucket{method="Put",le="+Inf"} 2');
    expect(scraped.text).toContain('atoll_rpc_duration_seconds_sum{method="Put"} 0.005');
    expect(scraped.text).toContain('# TYPE atoll_rpc_duration_seconds histogram');
    expect(scraped.text).toContain('atoll_transactions_total{outcome="aborted",reason="TXN_CONFLICT"} 1');
    expect(scraped.text).toContain('atoll_raft_messages_total{direction="sent",type="app"} 3');
    expect(scraped.text).toContain('atoll_partition_has_leader{partition="0"} 0');
    // Scraping twice does not double the table-backed counters.
    expect((await fetchText(port, '/metrics')).text).toContain('atoll_rpc_requests_total{method="Put",code="OK"} 2');

    expect(await fetchText(port, '/nope')).toMatchObject({ status: 404 });
    expect(await fetchText(port, '/metrics', 'POST', 'x'.repeat(100_000))).toMatchObject({ status: 405 });
    expect((await fetchText(port, '/livez', 'HEAD')).status).toBe(200);

    // A route added later (the status page will be one) is served too.
    server.route('/hello', () => ({ status: 200, contentType: 'text/plain', body: 'hi' }));
    expect(await fetchText(port, '/hello')).toMatchObject({ status: 200, text: 'hi' });
  });

  it('keeps two nodes in one process apart: one registry each, not the global one', async () => {
    const one = await start({ serving: true, view: view([partition(0)]) });
    const two = await start({ serving: true, view: view([partition(0)]) });
    one.metrics.rpc('Delete', 'OK', 0.001);
    expect((await fetchText(one.port, '/metrics')).text).toContain('atoll_rpc_requests_total{method="Delete",code="OK"} 1');
    expect((await fetchText(two.port, '/metrics')).text).not.toContain('method="Delete"');
  });

  it('exports tenant usage against quota from the node, and a failing usage read only leaves those series out', async () => {
    const metrics = new PrometheusNodeMetrics({ processMetrics: false });
    let fail = false;
    metrics.attach({
      metricsView: () => view([partition(0)]),
      tenantUsageForMetrics: async (max) => {
        expect(max).toBe(200);
        if (fail) throw new Error('usage records unreachable');
        return [{ tenant: 'acme', keys: 5, bytes: 900, historyBytes: 50, requestsPerSecond: 2, leases: 0, quota: { maxKeys: 10, maxBytes: 1_000, maxRequestsPerSecond: 0, maxLeases: 10_000 } }];
      },
    });
    // The tenant series live in a registry of their own (served as --tenant-metrics allows).
    expect(await metrics.registry.metrics()).not.toContain('atoll_tenant_');
    const text = await metrics.tenantRegistry.metrics();
    expect(text).toContain('atoll_tenant_bytes{tenant="acme"} 950');
    expect(text).toContain('atoll_tenant_quota_bytes{tenant="acme"} 1000');
    expect(text).toContain('atoll_tenant_keys{tenant="acme"} 5');
    expect(text).toContain('atoll_tenant_quota_keys{tenant="acme"} 10');
    fail = true;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await metrics.tenantRegistry.metrics()).not.toContain('tenant="acme"');
    expect(await metrics.registry.metrics()).toContain('atoll_partition_has_leader{partition="0"} 1');
  });

  it('serves the tenant series of /metrics as --tenant-metrics says: off, on, or to the cluster admin token', async () => {
    const adminToken = 'atk_admin';
    // A node whose only caller that counts as cluster admin holds adminToken; another token is a tenant's.
    const node = {
      whoAmI: async (context: { authorization?: string }) => {
        if (context.authorization === `Bearer ${adminToken}`) return { tenant: '', role: 'admin', clusterAdmin: true, tokenId: 'a' };
        if (context.authorization === 'Bearer atk_tenant') return { tenant: 'acme', role: 'admin', clusterAdmin: false, tokenId: 't' };
        throw new AtollError('UNAUTHENTICATED', 'no valid token');
      },
    } as unknown as AtollNode;
    const scrape = async (mode: TenantMetricsMode, authorization?: string): Promise<{ status: number; code: unknown; text: string }> => {
      const metrics = new PrometheusNodeMetrics({ processMetrics: false });
      metrics.attach({ metricsView: () => view([partition(0)]), tenantUsageForMetrics: async () => [{ tenant: 'acme', keys: 5, bytes: 900, historyBytes: 0, requestsPerSecond: 1, leases: 0, quota: { maxKeys: 10, maxBytes: 0, maxRequestsPerSecond: 0, maxLeases: 10_000 } }] });
      const server = new AdminServer({ registry: metrics.registry, view: () => view([partition(0)]), serving: () => true, logger, tenantMetrics: { registry: metrics.tenantRegistry, access: tenantMetricsAccess(mode, () => node) } });
      servers.push(server);
      const { port } = await server.listen('127.0.0.1:0');
      const response = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: authorization !== undefined ? { authorization } : {}, signal: AbortSignal.timeout(5_000) });
      return { status: response.status, code: response.headers.get('atoll-code'), text: await response.text() };
    };
    const named = (text: string): boolean => text.includes('atoll_tenant_keys{tenant="acme"} 5');
    for (const authorization of [undefined, `Bearer ${adminToken}`]) {
      const off = await scrape('off', authorization);
      expect(off.status).toBe(200);
      expect(off.text).toContain('atoll_partition_has_leader');
      expect(off.text).not.toContain('atoll_tenant_');
      expect(named((await scrape('on', authorization)).text)).toBe(true);
    }
    const anonymous = await scrape('admin-token');
    expect(anonymous.status).toBe(200);
    expect(anonymous.text).not.toContain('atoll_tenant_');
    expect(named((await scrape('admin-token', `Bearer ${adminToken}`)).text)).toBe(true);
    // A token sent but refused fails the scrape, so a misconfigured Prometheus notices.
    expect(await scrape('admin-token', 'Bearer atk_tenant')).toMatchObject({ status: 403, code: 'PERMISSION_DENIED' });
    expect(await scrape('admin-token', 'Bearer atk_wrong')).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
  });

  it('exports memory by consumer and the bounds that have one', async () => {
    const metrics = new PrometheusNodeMetrics({ processMetrics: false });
    const memory = [
      { consumer: 'version_cache', bytes: 1_000, limitBytes: 4_096 },
      { consumer: 'raft_log', bytes: 2_000, limitBytes: 8_192 },
      { consumer: 'dedup', bytes: 48 },
      { consumer: 'write_behind', bytes: 10 },
    ];
    metrics.attach({ metricsView: () => ({ ...view([partition(0)]), memory }), tenantUsageForMetrics: async () => [] });
    const text = await metrics.registry.metrics();
    expect(text).toContain('atoll_memory_version_cache_bytes 1000');
    expect(text).toContain('atoll_memory_raft_log_bytes 2000');
    expect(text).toContain('atoll_memory_dedup_bytes 48');
    expect(text).toContain('atoll_memory_write_behind_bytes 10');
    expect(text).toContain('atoll_memory_limit_bytes{consumer="version_cache"} 4096');
    expect(text).toContain('atoll_memory_limit_bytes{consumer="raft_log"} 8192');
    expect(text).not.toContain('atoll_memory_limit_bytes{consumer="dedup"}');
    // A consumer the view does not report (an engine without LevelDB) reads 0.
    expect(text).toContain('atoll_memory_leveldb_bytes 0');
  });

  it('advertises the admin address at the client port + 1000 on the client host, and binds it on loopback', () => {
    expect(defaultAdminAddress('127.0.0.1:7001')).toBe('127.0.0.1:8001');
    expect(defaultAdminAddress('0.0.0.0:7001')).toBe('0.0.0.0:8001');
    expect(defaultAdminAddress('[::1]:7003')).toBe('[::1]:8003');
    expect(defaultAdminAddress('node1:0')).toBe('node1:0');
    expect(defaultAdminListen('0.0.0.0:7001')).toBe('127.0.0.1:8001');
    expect(defaultAdminListen('10.1.2.3:7002')).toBe('127.0.0.1:8002');
    expect(defaultAdminListen('node1:0')).toBe('127.0.0.1:0');
  });
});
