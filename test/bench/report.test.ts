/**
 * What the bench shows: the SVG of latency distributions, the progress lines, the text tables and
 * the side-by-side comparison with its `ratio put c=64 atoll/etcd=2.31` lines.
 */
import { describe, expect, it } from 'vitest';
import { benchTable, msPerOpText, runJson, serverCpuMsPerOp, type BenchJson } from '../../src/bench/bench-report.js';
import type { BenchSettings, RunResult } from '../../src/bench/bench-run.js';
import { errorCodeOf } from '../../src/bench/bench-target.js';
import { compareReports, comparisonPanels, comparisonTables, ratioLines, ratioText } from '../../src/bench/compare.js';
import { LatencyHistogram } from '../../src/bench/latency-histogram.js';
import { latencySvg } from '../../src/bench/latency-svg.js';
import { progressLine } from '../../src/bench/progress.js';
import { markdownTable, milliseconds, textTable } from '../../src/bench/text-table.js';
import type { WorkloadName } from '../../src/bench/workloads.js';
import { AtollClientError } from '../../src/client/index.js';

const settings: BenchSettings = {
  workloads: ['put', 'get'],
  concurrencies: [64],
  keys: 100_000,
  valueSize: 128,
  readRatio: 0.5,
  durationMs: 5_000,
  warmupMs: 2_000,
  preload: true,
  seed: 1,
  samplePids: [],
};

/** A run whose every operation took `latencyMs`, `operations` of them in `seconds`. */
function fakeRun(workload: WorkloadName, operations: number, seconds: number, latencyMs: number, errorsByCode: Record<string, number> = {}): RunResult {
  const histogram = new LatencyHistogram();
  for (let i = 0; i < operations; i++) histogram.recordUs(latencyMs * 1000 * (1 + (i % 10) / 100));
  return {
    workload,
    concurrency: 64,
    operations,
    errors: Object.values(errorsByCode).reduce((sum, count) => sum + count, 0),
    errorsByCode,
    elapsedSeconds: seconds,
    opsPerSecond: operations / seconds,
    latency: histogram.summary(),
    clientCpuPercent: 90,
    serverCpuPercent: { '101': 40, '102': 30 },
    loadAverage1m: 1.5,
    histogram,
  };
}

function report(system: string, runs: RunResult[]): BenchJson {
  return { system, endpoints: ['127.0.0.1:1'], settings, machine: { cpus: 2, cpuModel: 'test', node: 'v20' }, preload: null, runs: runs.map(runJson) };
}

describe('latency SVG', () => {
  it('draws one panel per workload and one line per series, with escaped labels', () => {
    const histogram = new LatencyHistogram();
    for (let us = 100; us <= 50_000; us += 100) histogram.recordUs(us);
    const svg = latencySvg('a <title> & more', [
      { title: 'put', series: [{ label: 'c=1 <fast>', points: histogram.distribution() }, { label: 'c=64', points: histogram.distribution(), dashed: true }] },
      { title: 'get', series: [{ label: 'empty', points: [] }] },
    ]);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg.match(/<g class="panel">/g)).toHaveLength(2);
    expect(svg.match(/<path /g)).toHaveLength(2);
    expect(svg).toContain('stroke-dasharray');
    expect(svg).toContain('a &lt;title&gt; &amp; more');
    expect(svg).toContain('c=1 &lt;fast&gt;');
    expect(svg).not.toMatch(/NaN|Infinity|undefined/);
    // Percentile ticks on the x axis, evenly spaced on the log scale.
    for (const label of ['0%', '90%', '99%', '99.9%']) expect(svg).toContain(`>${label}</text>`);
    // Every element opened is closed (a cheap well-formedness check without an XML parser).
    const opened = (svg.match(/<(svg|g|style)[ >]/g) ?? []).length;
    expect((svg.match(/<\/(svg|g|style)>/g) ?? []).length).toBe(opened);
  });
});

describe('progress and tables', () => {
  it('a progress line shows elapsed time, counts, rate and errors', () => {
    expect(progressLine({ label: 'atoll put c=64 measure', durationMs: 10_000, unit: 'ops' }, 4_200, { done: 12_345, errors: 2 }, 2_939.4)).toBe(
      'atoll put c=64 measure  4.2/10 s  12,345 ops  2,939 ops/s  2 errors',
    );
    expect(progressLine({ label: 'atoll preload', total: 100_000, unit: 'keys' }, 1_000, { done: 500, errors: 0 }, 500)).toBe('atoll preload  1.0 s  500/100,000 keys  500 keys/s  0 errors');
  });

  it('text tables align columns; Markdown tables right-align numbers', () => {
    expect(textTable(['name', 'ops/s'], [['put', '1,234'], ['stale-get', '5']])).toEqual(['name       ops/s', 'put        1,234', 'stale-get      5']);
    expect(markdownTable(['name', 'ops/s'], [['put', 1]])).toEqual(['| name | ops/s |', '| --- | ---: |', '| put | 1 |']);
    expect([0.4123, 4.123, 41.23, 412.3].map(milliseconds)).toEqual(['0.412', '4.12', '41.2', '412']);
  });

  it('errors are counted by their stable code', () => {
    expect(errorCodeOf(new AtollClientError('UNAVAILABLE', 'down'))).toBe('UNAVAILABLE');
    class GRPCDeadlineExceededError extends Error {}
    expect(errorCodeOf(new GRPCDeadlineExceededError('slow'))).toBe('DEADLINE_EXCEEDED');
    expect(errorCodeOf(new TypeError('bug'))).toBe('TypeError');
    expect(errorCodeOf('a string')).toBe('UNKNOWN');
  });
});

describe('server CPU per operation', () => {
  it('is the sampled processes\' CPU over the operations, in the table and the JSON', () => {
    const sampled = { ...settings, samplePids: [101, 102] };
    const run = fakeRun('put', 2_000, 5, 10);
    const table = benchTable({ system: 'atoll', endpoints: ['127.0.0.1:1'], settings: sampled, machine: { cpus: 2, cpuModel: 'test', node: 'v20' }, runs: [run] } as never);
    const header = table[1]!.split(/\s{2,}/);
    expect(header).toContain('server ms/op');
    // 40% + 30% of a core is 700 ms of CPU a second, shared by 400 puts a second.
    expect(table[2]!.trim().split(/\s{2,}/)[header.indexOf('server ms/op')]).toBe('1.8');
    expect(runJson(run).serverCpuMsPerOp).toBeCloseTo(1.75, 6);
    expect(runJson({ ...run, serverCpuPercent: {} }).serverCpuMsPerOp).toBeNull();
    expect(serverCpuMsPerOp(70, 0)).toBeUndefined();
    expect([0.0612, 0.5, 1.75, 3, 9.97, 12.4].map(msPerOpText)).toEqual(['0.061', '0.50', '1.8', '3.0', '10', '12']);
  });
});

describe('side-by-side comparison', () => {
  // Two rounds per system: Atoll 2,000 + 3,000 ops in 2 x 5 s, etcd 1,000 + 1,000.
  const reports = [
    report('atoll', [fakeRun('put', 2_000, 5, 10), fakeRun('get', 5_000, 5, 4)]),
    report('etcd', [fakeRun('put', 1_000, 5, 20), fakeRun('get', 2_000, 5, 8, { DEADLINE_EXCEEDED: 3 })]),
    report('atoll', [fakeRun('put', 3_000, 5, 10), fakeRun('get', 5_000, 5, 4)]),
    report('etcd', [fakeRun('put', 1_000, 5, 20), fakeRun('get', 2_000, 5, 8)]),
  ];
  const comparison = compareReports(reports);

  it('merges the rounds: operations and seconds are summed, histograms added', () => {
    const atollPut = comparison.merged('atoll', 'put', 64)!;
    expect(atollPut.rounds).toBe(2);
    expect(atollPut.operations).toBe(5_000);
    expect(atollPut.opsPerSecond).toBeCloseTo(500, 6);
    expect(atollPut.histogram.count).toBe(5_000);
    expect(atollPut.serverCpuPercent).toBeCloseTo(70, 6);
    // 70% of a core is 700 ms of CPU a second, shared by 500 puts a second.
    expect(atollPut.serverCpuMsPerOp).toBeCloseTo(1.4, 6);
    expect(comparison.merged('etcd', 'put', 64)!.serverCpuMsPerOp).toBeCloseTo(3.5, 6);
    expect(comparison.merged('etcd', 'get', 64)!.errorsByCode).toEqual({ DEADLINE_EXCEEDED: 3 });
  });

  it('prints exactly one ratio line per workload and concurrency', () => {
    expect(ratioLines(comparison)).toEqual(['ratio put c=64 atoll/etcd=2.50', 'ratio get c=64 atoll/etcd=2.50']);
    expect(ratioText(1, 0)).toBe('n/a');
  });

  it('prints a table per workload with both systems and the ratio row', () => {
    const lines = comparisonTables(comparison);
    expect(lines[0]).toBe('== put ==');
    const header = lines.find((line) => line.startsWith('conc'))!;
    expect(header.split(/\s{2,}/)).toEqual(['conc', 'system', 'ops/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'client cpu%', 'server cpu%', 'server ms/op', 'load', 'errors']);
    const ratioRow = lines.find((line) => line.includes('atoll/etcd'))!.trim().split(/\s+/);
    expect(ratioRow.slice(0, 4)).toEqual(['64', 'atoll/etcd', '2.50', '0.50']);
    expect(lines.some((line) => line.includes('DEADLINE_EXCEEDED 3'))).toBe(true);
    // Server CPU per operation for each system, and Atoll's over etcd's in the ratio row.
    const atollRow = lines.find((line) => /^\s*64\s+atoll\s/.test(line))!.trim().split(/\s{2,}/);
    expect(atollRow[header.split(/\s{2,}/).indexOf('server ms/op')]).toBe('1.4');
    expect(ratioRow).toContain('0.40');
    expect(comparisonTables(comparison, 'markdown')[0]).toBe('#### put');
    expect(comparison.settings).toBe('128-byte values, 100,000 keys, 5 s per run after 2 s warm-up');
  });

  it('draws Atoll solid and etcd dashed in one colour per concurrency', () => {
    const [put] = comparisonPanels(comparison);
    expect(put!.series.map((series) => [series.label, series.dashed, series.colorIndex])).toEqual([
      ['atoll c=64: 500 ops/s', false, 0],
      ['etcd c=64: 200 ops/s', true, 0],
    ]);
  });
});
