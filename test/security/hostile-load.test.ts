/**
 * The hostile load run (src/bench/hostile-load-cli.ts, `npm run hostile-load`) in a reduced form
 * for a few seconds, so that the script cannot rot: it starts its cluster, every hostile pattern
 * runs, the ordinary tenant's operations happen, the report has every field, and nothing is left
 * running. The goal itself (no errors, p99 < 100 ms, RSS < 1 GB, stalls < 50 ms) is not asserted
 * here: a shared test machine cannot measure it; the run asserts it itself (its exit code), on a
 * quiet machine (docs/security.md, "Hostile load run").
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { patternNames } from '../../src/bench/hostile-attacks.js';
import type { HostileLoadReport } from '../../src/bench/hostile-load-report.js';

const root = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'atoll-hostile-load-test-'));
const durationSeconds = 4;
const rate = 50;

afterAll(() => rmSync(work, { recursive: true, force: true }));

function runCli(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [join(root, 'dist/src/bench/hostile-load-cli.js'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`hostile-load did not end within ${timeoutMs} ms:\n${stderr.slice(-4_000)}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolveRun({ code, stdout, stderr });
    });
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the hostile load run, reduced', () => {
  it('runs every hostile pattern against a three-node cluster while the ordinary tenant works, and reports every figure', async () => {
    const out = join(work, 'report.json');
    const run = await runCli(['--duration', String(durationSeconds), '--rate', String(rate), '--reduced', '--partitions', '4', '--progress-every', '2', '--json', '--out', out], 150_000);
    // 0: the goal was met; 1: it was not (a shared machine decides that); 2: the run itself failed.
    expect([0, 1], run.stderr.slice(-4_000)).toContain(run.code);
    const report = JSON.parse(run.stdout) as HostileLoadReport;
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual(report);

    // Progress lines while it ran, and the readable table (on stderr, since the JSON has stdout).
    expect(run.stderr).toMatch(/^hostile-load progress t_s=\d+ ops=\d+ errors=\d+ p99_ms=[\d.]+ .*rss_mb=\d+\/\d+\/\d+ stall_ms=\d+\/\d+\/\d+/m);
    expect(run.stderr).toContain('ordinary tenant "ordinary"');
    expect(run.stderr).toMatch(/result: the goal is (NOT )?met/);

    // The ordinary tenant's operations happened, on schedule: rate x duration were started.
    const { ordinary } = report;
    expect(ordinary.tenant).toBe('ordinary');
    expect(ordinary.targetRate).toBe(rate);
    expect(ordinary.operations).toBeGreaterThanOrEqual(rate * durationSeconds * 0.9);
    expect(ordinary.puts + ordinary.gets).toBeGreaterThan(0);
    expect(ordinary.puts + ordinary.gets).toBeLessThanOrEqual(ordinary.operations);
    expect(ordinary.operations - ordinary.errors).toBeGreaterThan(0);
    expect(Object.values(ordinary.errorsByCode).reduce((sum, count) => sum + count, 0)).toBe(ordinary.errors);
    for (const field of ['p50', 'p90', 'p99', 'max', 'mean'] as const) expect(ordinary.latencyMs[field]).toBeGreaterThan(0);
    expect(ordinary.latencyMs.p50).toBeLessThanOrEqual(ordinary.latencyMs.p99);
    expect(ordinary.latencyMs.p99).toBeLessThanOrEqual(ordinary.latencyMs.max);

    // Every node: peak RSS, longest stall (gauge and histogram), probes; and every node was sampled.
    expect(report.nodes.map((node) => node.id)).toEqual([1, 2, 3]);
    for (const node of report.nodes) {
      expect(node).toEqual(
        expect.objectContaining({
          peakRssBytes: expect.any(Number),
          peakRssMb: expect.any(Number),
          longestStallMs: expect.any(Number),
          lagGaugeMaxMs: expect.any(Number),
          lagHistogramMaxMs: expect.any(Number),
          livezMaxMs: expect.any(Number),
          metricsSamples: expect.any(Number),
          exited: false,
        }),
      );
      expect(node.peakRssBytes).toBeGreaterThan(10 * 1024 * 1024);
      expect(node.metricsSamples).toBeGreaterThan(0);
      expect(node.livezProbes).toBeGreaterThan(0);
      // The histogram's values include its 100 ms sampling interval, which the stall does not.
      expect(node.lagHistogramIntervalMs).toBe(100);
      expect(node.lagHistogramMaxMs).toBeGreaterThanOrEqual(100);
      expect(node.longestStallMs).toBeCloseTo(Math.max(node.lagGaugeMaxMs, node.lagHistogramMaxMs - 100, 0), 2);
      // The run stopped its cluster.
      expect(node.pid).toBeDefined();
      expect(alive(node.pid!)).toBe(false);
    }

    // Every hostile pattern ran.
    expect(report.patterns).toEqual([...patternNames]);
    expect(report.attacks.watches.opened).toBeGreaterThan(0);
    expect(report.attacks.scripts.started).toBeGreaterThan(0);
    expect(report.attacks.admin.opened).toBeGreaterThan(0);
    expect(report.attacks.leases.attempted).toBeGreaterThan(0);
    expect(report.attacks.tokenGuesses.sent).toBeGreaterThan(0);
    // The guesses (raw HTTP/2 calls) reach the node as gRPC calls, and none is let in.
    const guessOutcomes = report.attacks.tokenGuesses.outcomes;
    expect(Object.entries(guessOutcomes).filter(([outcome]) => outcome.startsWith('UNAUTHENTICATED')).reduce((sum, [, count]) => sum + count, 0)).toBeGreaterThan(0);
    expect(guessOutcomes['answered']).toBeUndefined();
    expect(report.attacks.stream.framesWritten).toBeGreaterThan(0);

    // The goal's checks are all there, and the verdict follows from them and the exit code.
    expect(report.goal.checks.map((check) => check.name)).toEqual([
      'the ordinary tenant sees no errors',
      'its p99 latency',
      "every node's peak RSS",
      "every node's longest event-loop stall",
      'every node sampled and up throughout',
      'every hostile pattern ran',
    ]);
    expect(report.goal.checks.find((check) => check.name === 'every hostile pattern ran')?.pass).toBe(true);
    expect(report.goal.met).toBe(report.goal.checks.every((check) => check.pass));
    expect(run.code).toBe(report.goal.met ? 0 : 1);
    expect(report.durationMs).toBeGreaterThanOrEqual(durationSeconds * 1000);
    expect(report.machine.cpus).toBeGreaterThan(0);
    expect(typeof report.generatorStallMs).toBe('number');
  }, 180_000);
});
