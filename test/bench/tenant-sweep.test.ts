/**
 * The etcd comparison's third row and the many-tenant sweep (issue 36): Atoll through etcd's client
 * (`atoll-etcd`) gets its own rows and ratio over etcd; the sweep merges rounds per tenant count and
 * system and shows aggregate puts/s, p50 and p99; scripts/bench-vs-etcd.sh checks its --tenants
 * options before it starts anything. Fake reports, no cluster.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runJson, type BenchJson } from '../../src/bench/bench-report.js';
import type { BenchSettings, RunResult } from '../../src/bench/bench-run.js';
import { compareReports, comparisonPanels, comparisonTables, ratioLines } from '../../src/bench/compare.js';
import { LatencyHistogram } from '../../src/bench/latency-histogram.js';
import { sweepLines, sweepOf, sweepTable } from '../../src/bench/tenant-sweep.js';

const settings: BenchSettings = { workloads: ['put'], concurrencies: [64], keys: 10_000, valueSize: 128, readRatio: 0.5, durationMs: 5_000, warmupMs: 2_000, preload: false, seed: 1, samplePids: [] };

/** `operations` puts in 5 s, every one taking `latencyMs`. */
function report(system: string, operations: number, latencyMs: number, tenants?: number): BenchJson {
  const histogram = new LatencyHistogram();
  for (let i = 0; i < operations; i++) histogram.recordUs(latencyMs * 1000);
  const run: RunResult = {
    workload: 'put',
    concurrency: 64,
    operations,
    errors: 0,
    errorsByCode: {},
    elapsedSeconds: 5,
    opsPerSecond: operations / 5,
    latency: histogram.summary(),
    clientCpuPercent: 50,
    serverCpuPercent: {},
    loadAverage1m: 2,
    histogram,
  };
  return { system, endpoints: ['127.0.0.1:1'], settings: { ...settings, ...(tenants !== undefined && { tenants }) }, machine: { cpus: 2, cpuModel: 'test', node: 'v20' }, preload: null, runs: [runJson(run)] };
}

describe('the comparison with Atoll through etcd\'s client', () => {
  const comparison = compareReports([report('atoll', 5_000, 10), report('atoll-etcd', 2_000, 30), report('etcd', 4_000, 15)]);

  it('shows atoll, atoll-etcd and etcd, and each one\'s ratio over etcd', () => {
    const rows = comparisonTables(comparison).map((line) => line.trim().split(/\s{2,}/));
    expect(rows.filter((row) => row[0] === '64').map((row) => [row[1], row[2]])).toEqual([
      ['atoll', '1,000'],
      ['atoll-etcd', '400'],
      ['etcd', '800'],
      ['atoll/etcd', '1.25'],
      ['atoll-etcd/etcd', '0.50'],
    ]);
    expect(ratioLines(comparison)).toEqual(['ratio put c=64 atoll/etcd=1.25', 'ratio put c=64 atoll-etcd/etcd=0.50']);
    expect(comparisonPanels(comparison)[0]?.series.map((series) => [series.label, series.dashed])).toEqual([
      ['atoll c=64: 1,000 ops/s', false],
      ['atoll-etcd c=64: 400 ops/s', true],
      ['etcd c=64: 800 ops/s', true],
    ]);
  });

  it('keeps one ratio line per workload and concurrency when atoll-etcd was not measured', () => {
    expect(ratioLines(compareReports([report('atoll', 5_000, 10), report('etcd', 4_000, 15)]))).toEqual(['ratio put c=64 atoll/etcd=1.25']);
  });
});

describe('the many-tenant sweep', () => {
  // Two rounds each; Atoll's aggregate grows with the tenants, etcd's stays flat.
  const reports = [1, 8, 64].flatMap((tenants) => [
    report('atoll-etcd', 1_000 * Math.sqrt(tenants), 40 / Math.sqrt(tenants), tenants),
    report('etcd', 3_000, 20, tenants),
    report('atoll-etcd', 1_000 * Math.sqrt(tenants), 40 / Math.sqrt(tenants), tenants),
    report('etcd', 3_000, 20, tenants),
  ]);
  const sweep = sweepOf(reports);

  it('merges the rounds per tenant count and system', () => {
    expect(sweep.tenants).toEqual([1, 8, 64]);
    expect(sweep.merged('atoll-etcd', 64)?.rounds).toBe(2);
    expect(sweep.merged('atoll-etcd', 64)?.opsPerSecond).toBeCloseTo(1_600, 6);
    expect(sweep.merged('etcd', 8)?.opsPerSecond).toBeCloseTo(600, 6);
  });

  it('prints aggregate ops/s, p50 and p99 per count and system, and the ratio to the first count', () => {
    expect(sweepLines(sweep)).toEqual([
      'tenants put c=64 tenants=1 atoll-etcd ops/s=200 p50=40.0 p99=40.0 vs-1=1.00',
      'tenants put c=64 tenants=1 etcd ops/s=600 p50=20.0 p99=20.0 vs-1=1.00',
      'tenants put c=64 tenants=8 atoll-etcd ops/s=566 p50=14.1 p99=14.1 vs-1=2.83',
      'tenants put c=64 tenants=8 etcd ops/s=600 p50=20.0 p99=20.0 vs-1=1.00',
      'tenants put c=64 tenants=64 atoll-etcd ops/s=1600 p50=5.00 p99=5.00 vs-1=8.00',
      'tenants put c=64 tenants=64 etcd ops/s=600 p50=20.0 p99=20.0 vs-1=1.00',
    ]);
    const table = sweepTable(sweep, 'markdown');
    expect(table[0]).toBe('| tenants | system | ops/s | vs first | p50 ms | p99 ms | server ms/op | load | rounds | errors |');
    expect(table).toContain('| 64 | atoll-etcd/etcd | 2.67 |  | 0.25 | 0.25 |  |  |  |  |');
  });
});

describe('scripts/bench-vs-etcd.sh --tenants', () => {
  const script = resolve(import.meta.dirname, '../../scripts/bench-vs-etcd.sh');
  const runScript = (...args: string[]) => spawnSync('bash', [script, ...args], { encoding: 'utf8', timeout: 10_000 });

  it('refuses bad tenant options before it starts anything', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--tenants', '1,x'], /--tenants must be a comma-separated list of positive integers/],
      [['--tenants', '0'], /--tenants must be a comma-separated list/],
      [['--tenants', '8,128'], /--tenants 128 is more than --tenants-concurrency 64/],
      [['--tenants', '4', '--tenants-concurrency', '2'], /--tenants 4 is more than --tenants-concurrency 2/],
      [['--tenants', '', '--tenants-only'], /--tenants-only needs --tenants/],
      [['--tenants-only', '--sweep-only'], /give --sweep-only or --tenants-only, not both/],
    ];
    for (const [args, message] of cases) {
      const result = runScript(...args);
      expect(result.status, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(message);
    }
  });

  it('documents the options in --help', () => {
    const result = runScript('--help');
    expect(result.status).toBe(0);
    for (const option of ['--tenants LIST', '--tenants-concurrency N', '--tenants-only']) expect(result.stdout).toContain(option);
  });
});
