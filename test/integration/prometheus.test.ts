/**
 * A real Prometheus server (Debian's `prometheus` package; .ci/run installs it) scrapes the admin
 * ports of a three-node cluster every second while the test drives a paced, bounded load of puts.
 * Through Prometheus's HTTP query API the test then checks what it did: the number of puts, their
 * rate, their median latency against the latencies the client measured, and one leader per
 * partition. Skips with the reason printed when prometheus is missing, unless CI is set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePrometheusTool } from '../prometheus-env.js';
import { LocalCluster } from './local-cluster.js';

const PARTITIONS = 4;
/** The load: one put every PACE_MS for LOAD_MS (at most LOAD_MS / PACE_MS puts). */
const PACE_MS = 25;
const LOAD_MS = 10_000;
/** The window the rate and quantile queries look back over, ending at the load's end. */
const WINDOW_S = 8;

const prometheus = requirePrometheusTool('prometheus', 'prometheus scrape');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!prometheus.available)('Prometheus scraping a three-node cluster', () => {
  let cluster: LocalCluster;
  let server: ChildProcess | undefined;
  let dir: string;
  let api: string;
  let serverLog = '';

  /** One instant query; resolves with the vector's samples (labels and value). */
  async function query(expr: string, atS?: number): Promise<Array<{ metric: Record<string, string>; value: number }>> {
    const params = new URLSearchParams({ query: expr, ...(atS !== undefined && { time: atS.toFixed(3) }) });
    const response = await fetch(`${api}/api/v1/query?${params}`, { signal: AbortSignal.timeout(5_000) });
    const body = (await response.json()) as { status: string; error?: string; data: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    if (body.status !== 'success') throw new Error(`query ${expr} failed: ${body.error}`);
    return body.data.result.map((sample) => ({ metric: sample.metric, value: Number(sample.value[1]) }));
  }

  async function scalar(expr: string, atS?: number): Promise<number | undefined> {
    const result = await query(expr, atS);
    return result[0]?.value;
  }

  /** Polls `expr` until `accept` holds, at most `timeoutMs`; returns the last value. */
  async function waitFor(expr: string, accept: (value: number | undefined) => boolean, timeoutMs: number): Promise<number | undefined> {
    const deadline = Date.now() + timeoutMs;
    let value: number | undefined;
    while (Date.now() < deadline) {
      value = await scalar(expr).catch(() => undefined);
      if (accept(value)) return value;
      await sleep(250);
    }
    return value;
  }

  beforeAll(async () => {
    if (!prometheus.available) return;
    cluster = await LocalCluster.start({ partitions: PARTITIONS });
    dir = mkdtempSync(join(tmpdir(), 'atoll-prometheus-'));
    const targets = [...cluster.adminAddresses.values()].map((address) => `'${address}'`).join(', ');
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: atoll\n    static_configs:\n      - targets: [${targets}]\n`,
    );
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    server = spawn(prometheus.path, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer): void => {
      serverLog = (serverLog + chunk.toString()).slice(-4_000);
    };
    server.stdout?.on('data', keep);
    server.stderr?.on('data', keep);
    // Every node scraped successfully.
    const up = await waitFor('sum(up{job="atoll"})', (value) => value === 3, 30_000);
    if (up !== 3) {
      // Prometheus logs failed scrapes only at debug level; its targets API says why each failed.
      const targets = await fetch(`${api}/api/v1/targets`, { signal: AbortSignal.timeout(5_000) })
        .then(async (response) => JSON.stringify(((await response.json()) as { data: { activeTargets: Array<{ scrapeUrl: string; health: string; lastError: string; lastScrapeDuration: number }> } }).data.activeTargets.map(({ scrapeUrl, health, lastError, lastScrapeDuration }) => ({ scrapeUrl, health, lastError, lastScrapeDuration }))))
        .catch((error: unknown) => `targets unavailable: ${String(error)}`);
      // And what each admin port answers the test directly, how fast; and what the nodes logged
      // at warn or above (a failed admin request is logged as "admin request failed").
      const direct = await Promise.all(
        [...cluster.adminAddresses].map(async ([id, address]) => {
          const t0 = performance.now();
          const answer = await fetch(`http://${address}/metrics`, { signal: AbortSignal.timeout(5_000) })
            .then((response) => `HTTP ${response.status}`)
            .catch((error: unknown) => String(error));
          return `node ${id} ${address}: ${answer} in ${(performance.now() - t0).toFixed(0)} ms`;
        }),
      );
      const warnings = [...cluster.adminAddresses.keys()]
        .map((id) => `node ${id}: ${cluster.logOf(id).split('\n').filter((line) => /"level":(4|5|6)0/.test(line)).slice(-5).join('\n')}`)
        .join('\n');
      throw new Error(
        `prometheus did not scrape all three nodes (sum(up) = ${up}); targets: ${targets}; direct: ${direct.join('; ')}; crashes: ${JSON.stringify(cluster.crashes)}; node warnings:\n${warnings}\nits log:\n${serverLog}`,
      );
    }
  }, 60_000);

  afterAll(async () => {
    if (server !== undefined && server.exitCode === null) {
      const exited = new Promise((resolve) => server?.once('exit', resolve));
      server.kill('SIGTERM');
      await Promise.race([exited, sleep(5_000)]);
      if (server.exitCode === null) server.kill('SIGKILL');
    }
    await cluster?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('reports the puts the test made: their count, rate and latency, and one leader per partition', async () => {
    const client = cluster.client();
    const latenciesMs: number[] = [];
    const ackedAtMs: number[] = [];
    const startedMs = Date.now();
    try {
      for (let i = 0; Date.now() - startedMs < LOAD_MS && i < LOAD_MS / PACE_MS; i++) {
        const dueMs = startedMs + i * PACE_MS;
        if (dueMs > Date.now()) await sleep(dueMs - Date.now());
        const t0 = performance.now();
        await client.put(`prom/${i % 50}`, `v${i}`);
        latenciesMs.push(performance.now() - t0);
        ackedAtMs.push(Date.now());
      }
    } finally {
      client.close();
    }
    const endS = Date.now() / 1000;
    const puts = latenciesMs.length;
    expect(puts).toBeGreaterThan(100);

    // The count: every acknowledged put, counted once at the node it arrived at.
    const counted = await waitFor('sum(atoll_rpc_requests_total{job="atoll",method="Put",code="OK"})', (value) => value === puts, 10_000);
    expect(counted).toBe(puts);

    // The rate over the load's last WINDOW_S seconds, against the puts acknowledged in it.
    const inWindow = ackedAtMs.filter((at) => at / 1000 > endS - WINDOW_S).length;
    const expectedRate = inWindow / WINDOW_S;
    const rate = await scalar(`sum(rate(atoll_rpc_requests_total{job="atoll",method="Put",code="OK"}[${WINDOW_S}s]))`, endS);
    expect(rate).toBeDefined();
    expect(Math.abs((rate as number) - expectedRate) / expectedRate).toBeLessThan(0.3);

    // The median from the histogram buckets, against the client's median over the same window: at
    // most the client's (each put's server time is inside its client time) up to the bucket that
    // holds it, and not far below it (the client's own share of a put is small).
    const windowLatenciesMs = latenciesMs.filter((_, i) => (ackedAtMs[i] as number) / 1000 > endS - WINDOW_S).sort((a, b) => a - b);
    const clientMedianS = (windowLatenciesMs[Math.floor(windowLatenciesMs.length / 2)] as number) / 1000;
    const median = await scalar(`histogram_quantile(0.5, sum by (le) (rate(atoll_rpc_duration_seconds_bucket{job="atoll",method="Put"}[${WINDOW_S}s])))`, endS);
    const bucketAbove = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10].find((bound) => bound >= clientMedianS) ?? 10;
    console.log(`prometheus: ${puts} puts, rate ${rate?.toFixed(1)}/s (client ${expectedRate.toFixed(1)}/s), median ${((median ?? 0) * 1000).toFixed(2)} ms (client ${(clientMedianS * 1000).toFixed(2)} ms)`);
    expect(median).toBeGreaterThan(clientMedianS / 10);
    expect(median).toBeLessThanOrEqual(bucketAbove);

    // Leaders: exactly one per partition, and every replica knows it.
    expect(await scalar('sum(atoll_partition_is_leader{job="atoll"})')).toBe(PARTITIONS);
    expect(await scalar('count(atoll_partition_has_leader{job="atoll"} == 1)')).toBe(PARTITIONS * 3);
    expect(await query('sum by (partition) (atoll_partition_is_leader{job="atoll"}) != 1')).toEqual([]);
  });
});
