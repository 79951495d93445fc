/**
 * `atoll bench` against a real three-node cluster (src/chaos/local-cluster.ts, from dist/): every
 * workload counts operations and reports percentiles in the table and in JSON, `--out` writes an
 * SVG, and a workload against a stopped node reports its errors by code and exits 2.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchJson } from '../../src/bench/bench-report.js';
import { workloadNames } from '../../src/bench/workloads.js';
import { LocalCluster } from '../../src/chaos/local-cluster.js';
import { bench } from './bench-cli.js';

let cluster: LocalCluster;
let scratch: string;

beforeAll(async () => {
  cluster = await LocalCluster.start({ nodes: 3, partitions: 4 });
  scratch = mkdtempSync(join(tmpdir(), 'atoll-bench-test-'));
});
afterAll(async () => {
  await cluster?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

/** Short runs: half a second each, no warm-up, a small key space. */
const quick = ['--duration', '0.5', '--warmup', '0', '--keys', '200', '--concurrency', '4'];

describe('atoll bench', () => {
  it('runs every workload and reports ops and percentiles as JSON', async () => {
    const svg = join(scratch, 'latency.svg');
    const result = await bench('--endpoints', cluster.endpoints.join(','), '--json', ...quick, '--out', svg);
    expect(result.stderr).not.toMatch(/^error/m);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as BenchJson;
    expect(report.system).toBe('atoll');
    expect(report.preload).toMatchObject({ keys: 200 + 100 });
    expect(report.runs.map((r) => r.workload)).toEqual([...workloadNames]);
    for (const r of report.runs) {
      expect(r.concurrency).toBe(4);
      expect(r.operations, r.workload).toBeGreaterThan(0);
      expect(r.errors, JSON.stringify(r.errorsByCode)).toBe(0);
      // elapsedSeconds and opsPerSecond are rounded in the JSON: agree within 1%.
      expect(Math.abs(r.opsPerSecond - r.operations / r.elapsedSeconds)).toBeLessThan((r.operations / r.elapsedSeconds) * 0.01 + 0.05);
      expect(Object.keys(r.latencyMs).sort()).toEqual(['count', 'maxMs', 'meanMs', 'p50Ms', 'p90Ms', 'p999Ms', 'p99Ms']);
      const { p50Ms, p90Ms, p99Ms, p999Ms, maxMs } = r.latencyMs;
      expect(0 < p50Ms && p50Ms <= p90Ms && p90Ms <= p99Ms && p99Ms <= p999Ms && p999Ms <= maxMs).toBe(true);
      expect(r.histogram.length).toBeGreaterThan(0);
      expect(r.distribution.length).toBeGreaterThan(1);
    }
    // Progress went to stderr as plain lines (not a terminal here), ending with each run's result.
    expect(result.stderr).toMatch(/^bench: atoll preload: 300 keys of 128 bytes/m);
    expect(result.stderr).toMatch(/^bench: atoll txn c=4: [\d,]+ ops\/s, p50 [\d.]+ ms, p99 [\d.]+ ms, 0 errors$/m);
    const picture = readFileSync(svg, 'utf8');
    expect(picture).toMatch(/^<svg /);
    expect(picture.match(/<g class="panel">/g)).toHaveLength(workloadNames.length);
  });

  it('prints the final table with ops/s, percentiles and errors', async () => {
    const result = await bench('--endpoints', cluster.endpoints.join(','), ...quick, '--no-preload', '--workloads', 'put,stale-get', '--concurrency', '1,8');
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^atoll at 127\.0\.0\.1:\d+,.*: 128-byte values, 200 keys, 0\.5 s per run after 0 s warm-up$/);
    expect(lines[1]!.split(/\s{2,}/)).toEqual(['workload', 'conc', 'ops/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'client cpu%', 'load', 'errors']);
    const rows = lines.slice(2).map((line) => line.split(/\s+/));
    expect(rows.map((row) => [row[0], row[1]])).toEqual([
      ['put', '1'],
      ['put', '8'],
      ['stale-get', '1'],
      ['stale-get', '8'],
    ]);
    for (const row of rows) {
      expect(Number(row[2]!.replace(/,/g, ''))).toBeGreaterThan(0);
      expect(row[row.length - 1]).toBe('0');
    }
  });

  it('counts errors by code against a stopped node, and exits 2 when nothing succeeded', async () => {
    const stoppedAddress = cluster.addresses.get(3)!;
    await cluster.stopNode(3);
    const result = await bench('--endpoints', stoppedAddress, '--timeout', '300', '--json', '--no-preload', '--workloads', 'stale-get', '--duration', '1', '--warmup', '0', '--concurrency', '2');
    expect(result.code).toBe(2);
    const report = JSON.parse(result.stdout) as BenchJson;
    const [r] = report.runs;
    expect(r!.operations).toBe(0);
    expect(r!.errors).toBeGreaterThan(0);
    const codes = Object.keys(r!.errorsByCode);
    expect(codes.length).toBeGreaterThan(0);
    for (const code of codes) expect(['UNAVAILABLE', 'DEADLINE_EXCEEDED']).toContain(code);
    expect(Object.values(r!.errorsByCode).reduce((sum, count) => sum + count, 0)).toBe(r!.errors);
    expect(result.stderr).toMatch(/^error (UNAVAILABLE|DEADLINE_EXCEEDED): stale-get c=2: no operation succeeded/m);
  });

  it('rejects bad options with a usage error', async () => {
    expect((await bench('--workloads', 'nope', '--endpoints', cluster.endpoints[0]!)).stderr).toMatch(/^error INVALID_ARGUMENT: unknown workload "nope"/m);
    expect((await bench('--duration', '1', '--ops', '5')).code).toBe(2);
    expect((await bench('--concurrency', '0')).code).toBe(2);
    expect(existsSync(join(scratch, 'never.svg'))).toBe(false);
  });
});
