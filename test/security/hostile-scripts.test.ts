/**
 * A hostile tenant's scripts against a node's event loop (issue 33, finding 2), on a real
 * three-node cluster with authentication: a readwrite tenant builds a 1 MiB string in a script
 * and lowercases it in a loop until the script's 2 s time limit, five scripts at once. Before the
 * fix evaluation never yielded: each script held the leader's event loop for its whole 2 s, so
 * `/livez` on that node took about 2 s, the scripts together held it for about 10 s, followers
 * called elections and another tenant's requests on the node timed out.
 *
 * What is measured, from outside the node: the latency of `/livez` on the leader, asked again and
 * again (one request at a time on one connection) from before the scripts start until they end,
 * and the node's own longest event-loop stall (`nodejs_eventloop_lag_max_seconds`, prom-client's
 * monitorEventLoopDelay, reset by each scrape, less its 100 ms sampling interval, which it
 * reports with every sample). Meanwhile another tenant puts and gets on the same leader. The
 * first 300 probes, before any script, give the machine's noise floor (printed).
 *
 * The bounds, and why they are what they are. The scheduler lets scripts hold the loop for 5 ms
 * per turn of the loop plus one step (src/node/service/script-scheduler.ts; steps cost at most a few ms,
 * scripts/script-step-costs.mjs), so a probe waits about 10 ms at most for scripts, and the
 * median probe must be within the 20 ms. On a quiet machine every probe was (fixed: median
 * 6.5 ms, longest 22 ms, the longest stall the node saw 8-13 ms). Single probes cannot be held to
 * that on the 2-core test machine when it is shared with other runs (load average 8 to 10): a node
 * process is then descheduled or paused by a garbage collection for tens to hundreds of
 * milliseconds now and then (up to 460 ms measured next to other test files, 80 ms with no script
 * running at all). So the other bounds are the ones the unfixed code fails by a wide margin
 * whatever the noise: no probe and no stall reaches 1 s (unfixed: 2,027-2,048 ms and 1,946-2,006 ms,
 * one script's whole limit), and the other tenant sees no error and a p99 under 2 s (fixed: 58-360
 * ms; unfixed: 4.2-6.4 s, or requests timing out at 10 s). Counts and sums, not a timeout: the
 * test takes as long as the scripts do.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient, AtollClientError } from '../../src/client/index.js';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import { newToken } from '../../src/tenancy/token.js';
import { LocalCluster } from '../integration/local-cluster.js';

const PARTITIONS = 8;
/** Sixteen characters doubled sixteen times: 1 MiB, the longest string a script may build. */
const hostileScript = [
  'let s = "0123456789ABCDEF"',
  `for i in [${Array.from({ length: 16 }, (_, index) => index).join(', ')}] do`,
  '  let s = s + s',
  'end',
  `let hundred = [${Array.from({ length: 100 }, (_, index) => index).join(', ')}]`,
  'for a in hundred do',
  '  for b in hundred do',
  '    for c in hundred do',
  '      let t = lower(s)',
  '    end',
  '  end',
  'end',
  'return len(t)',
].join('\n');

interface Probe {
  readonly startedMs: number;
  readonly tookMs: number;
}

/** One GET on a keep-alive connection; resolves with how long it took (ms). */
function timedGet(agent: http.Agent, address: string, path: string): Promise<{ tookMs: number; body: string; status: number }> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  const startedMs = performance.now();
  return new Promise((resolveGet, reject) => {
    const request = http.get({ host, port, path, agent, timeout: 30_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolveGet({ tookMs: performance.now() - startedMs, body: Buffer.concat(chunks).toString('utf8'), status: response.statusCode ?? 0 }));
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`GET ${path} timed out`)));
    request.on('error', reject);
  });
}

/** A metric's value in a Prometheus text page (the first sample of that name). */
function metricOf(page: string, name: string): number {
  const line = page.split('\n').find((candidate) => candidate.startsWith(`${name} `) || candidate.startsWith(`${name}{`));
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

describe('a hostile script against the event loop', () => {
  const adminToken = newToken();
  let cluster: LocalCluster;
  const clients: AtollClient[] = [];
  const tokens: Record<string, string> = {};
  const clientFor = (token: string): AtollClient => {
    const created = new AtollClient({ endpoints: cluster.endpoints, token });
    clients.push(created);
    return created;
  };

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atoll-scripts-'));
    const file = join(dir, 'admin-token');
    writeFileSync(file, `${adminToken}\n`, { mode: 0o600 });
    cluster = await LocalCluster.start({ partitions: PARTITIONS, extraArgs: ['--admin-token-file', file] });
    const admin = clientFor(adminToken);
    for (const tenant of ['evil', 'good']) {
      tokens[tenant] = (await admin.authCall('CreateToken', { tenant, role: 'readwrite', name: tenant }))['token'] as string;
    }
  }, 90_000);

  afterAll(async () => {
    for (const created of clients) created.close();
    await cluster?.stop();
  });

  it('five scripts lowercasing a 1 MiB string until their time limit never stall the leader: /livez answers within the bound throughout', async () => {
    const evil = clientFor(tokens['evil']!);
    const good = clientFor(tokens['good']!);
    // The ordinary tenant's keys: a bucket on the same partition as the hostile scripts', so
    // its requests are served by the same leader.
    const partition = partitionOfBucket('\u0000evil\u0000h', PARTITIONS);
    const goodBucket = Array.from({ length: 1000 }, (_, index) => `g${index}`).find((bucket) => partitionOfBucket(`\u0000good\u0000${bucket}`, PARTITIONS) === partition)!;
    await good.put(`${goodBucket}/k`, 'v0');
    const leader = Number((await evil.clusterInfo()).partitions[partition]!.leader);
    const adminAddress = cluster.adminAddresses.get(leader)!;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const electionsBefore = await Promise.all([...cluster.adminAddresses.values()].map(async (address) => metricOf((await timedGet(agent, address, '/metrics')).body, 'atoll_elections_total')));
    // The scrape resets the node's event-loop delay histogram: what the next scrape reports is this run's.
    await timedGet(agent, adminAddress, '/metrics');

    const probes: Probe[] = [];
    let running = true;
    const probing = (async () => {
      while (running) {
        const startedMs = performance.now();
        const { tookMs, status } = await timedGet(agent, adminAddress, '/livez');
        expect(status).toBe(200);
        probes.push({ startedMs, tookMs });
      }
    })();
    const ordinary: number[] = [];
    const ordinaryErrors: unknown[] = [];
    const ordinaryWork = (async () => {
      for (let index = 0; running; index++) {
        const startedMs = performance.now();
        try {
          await good.put(`${goodBucket}/k`, `v${index}`);
          expect((await good.get(`${goodBucket}/k`)).text()).toBe(`v${index}`);
        } catch (error) {
          ordinaryErrors.push(error);
        }
        ordinary.push(performance.now() - startedMs);
      }
    })();

    // The noise floor first: the same probes and requests, no script (at most 300 probes or 5 s).
    const baselineUntilMs = performance.now() + 5_000;
    while (probes.length < 300 && performance.now() < baselineUntilMs) await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    const baseline = probes.splice(0).map((probe) => probe.tookMs).sort((a, b) => a - b);

    const startedMs = performance.now();
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => evil.executeScript(hostileScript, { bucket: 'h', timeoutMs: 120_000 })));
    const scriptsMs = performance.now() - startedMs;
    running = false;
    await Promise.all([probing, ordinaryWork]);
    const page = (await timedGet(agent, adminAddress, '/metrics')).body;
    // prom-client's monitor samples every 100 ms (src/server/node-metrics.ts) and each sample is the whole interval.
    const loopStallMaxMs = metricOf(page, 'nodejs_eventloop_lag_max_seconds') * 1000 - 100;
    const electionsAfter = await Promise.all([...cluster.adminAddresses.values()].map(async (address) => metricOf((await timedGet(agent, address, '/metrics')).body, 'atoll_elections_total')));
    agent.destroy();

    const codes = outcomes.map((outcome) => {
      if (outcome.status === 'fulfilled') return 'ok';
      const error = outcome.reason as unknown;
      if (!(error instanceof AtollClientError)) return String(error);
      return error.details?.['reason'] === undefined ? error.code : `${error.code}/${String(error.details['reason'])}`;
    });
    const messages = outcomes.map((outcome) => (outcome.status === 'rejected' ? String((outcome.reason as Error).message).slice(0, 100) : ''));
    const latencies = probes.map((probe) => probe.tookMs).sort((a, b) => a - b);
    const ordinarySorted = [...ordinary].sort((a, b) => a - b);
    const over50 = latencies.filter((ms) => ms > 50).length;
    // How much of the scripts' run the probes spent waiting beyond 20 ms.
    const stalledShare = latencies.reduce((sum, ms) => sum + Math.max(0, ms - 20), 0) / scriptsMs;
    const summary = {
      leader,
      baseline: { probes: baseline.length, medianMs: +quantile(baseline, 0.5).toFixed(1), p95Ms: +quantile(baseline, 0.95).toFixed(1), maxMs: +(baseline.at(-1) ?? NaN).toFixed(1) },
      scripts: codes,
      messages,
      scriptsMs: Math.round(scriptsMs),
      probes: latencies.length,
      livezMedianMs: +quantile(latencies, 0.5).toFixed(1),
      livezP95Ms: +quantile(latencies, 0.95).toFixed(1),
      livezMaxMs: +(latencies.at(-1) ?? NaN).toFixed(1),
      livezOver50Ms: over50,
      stalledShare: +stalledShare.toFixed(3),
      loopStallMaxMs: +loopStallMaxMs.toFixed(1),
      ordinaryRequests: ordinary.length,
      ordinaryErrors: ordinaryErrors.map((error) => (error instanceof AtollClientError ? error.code : String(error))),
      ordinaryP99Ms: +quantile(ordinarySorted, 0.99).toFixed(1),
      elections: electionsAfter.map((after, index) => after - electionsBefore[index]!),
      // The leader's garbage collections over the whole life of the node, by kind: [count, over 100 ms].
      gc: Object.fromEntries(
        ['minor', 'major', 'incremental'].map((kind) => [
          kind,
          [metricOf(page, `nodejs_gc_duration_seconds_count{kind="${kind}"}`), metricOf(page, `nodejs_gc_duration_seconds_count{kind="${kind}"}`) - metricOf(page, `nodejs_gc_duration_seconds_bucket{le="0.1",kind="${kind}"}`)],
        ]),
      ),
    };
    console.log('hostile scripts:', JSON.stringify(summary));

    // Each script ran into its time limit, or was refused by the tenant's bound on scripts
    // running at a node or, once the first four ran theirs, by its script time there: nothing else.
    for (const code of codes) expect(['SCRIPT_LIMIT', 'RESOURCE_EXHAUSTED', 'RESOURCE_EXHAUSTED/script-concurrency', 'QUOTA_EXCEEDED/script-cpu']).toContain(code);
    expect(codes.filter((code) => code === 'SCRIPT_LIMIT').length).toBeGreaterThanOrEqual(1);
    // The node answered throughout, the median probe within the design bound, and no stall came
    // near a script's time limit (unfixed: every probe that met a script waited its whole 2 s).
    expect(latencies.length).toBeGreaterThan(100);
    expect(summary.livezMedianMs).toBeLessThanOrEqual(20);
    expect(summary.livezMaxMs).toBeLessThan(1_000);
    expect(loopStallMaxMs).toBeLessThan(1_000);
    // The ordinary tenant on the same leader went on.
    expect(summary.ordinaryErrors).toEqual([]);
    expect(summary.ordinaryP99Ms).toBeLessThan(2_000);
  }, 240_000);
});
