/**
 * The benchmark's preload writes every key the workloads read; a write that failed (a deadline
 * during a stall) is written again, a few passes at most, and the failures are reported. Checked
 * against an in-memory target that fails chosen writes.
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { BenchRun, type BenchSettings } from '../../src/bench/bench-run.js';
import type { BenchTarget } from '../../src/bench/bench-target.js';
import { ProgressDisplay } from '../../src/bench/progress.js';
import { TenantLanes } from '../../src/bench/tenant-lanes.js';

/** Stores puts in a map; `failuresFor(key)` says how many times a key's put fails first. */
class FlakyTarget implements BenchTarget {
  readonly system = 'atoll' as const;
  readonly stored = new Map<string, number>();
  readonly attempts = new Map<string, number>();

  constructor(private readonly failuresFor: (key: string) => number) {}

  async put(key: string, value: Uint8Array): Promise<void> {
    const attempt = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, attempt);
    if (attempt <= this.failuresFor(key)) throw new AtollError('DEADLINE_EXCEEDED', `put ${key}: too slow`);
    this.stored.set(key, value.length);
  }

  async get(key: string): Promise<boolean> {
    return this.stored.has(key);
  }

  async increment(): Promise<void> {}

  async readPrefix(): Promise<number> {
    return 0;
  }

  async readTwoWriteTwo(): Promise<void> {}

  close(): void {}
}

const settings: BenchSettings = {
  workloads: ['get'],
  concurrencies: [2],
  operations: 20,
  warmupMs: 0,
  preload: true,
  seed: 7,
  samplePids: [],
  keys: 500,
  valueSize: 16,
  readRatio: 0.5,
};

function run(target: FlakyTarget): { result: ReturnType<BenchRun['run']>; output: string[] } {
  const output: string[] = [];
  const progress = new ProgressDisplay((text) => output.push(text), false);
  return { result: new BenchRun(target, settings, progress).run(['test:1']), output };
}

describe('bench preload', () => {
  it('writes again the keys whose first write failed, and reports how many', async () => {
    // Every 7th key fails once; every 50th fails twice.
    const failures = (key: string): number => {
      const index = Number(/(\d+)$/.exec(key)?.[1] ?? 0);
      return index % 50 === 0 ? 2 : index % 7 === 0 ? 1 : 0;
    };
    const target = new FlakyTarget(failures);
    const { result, output } = run(target);
    const report = await result;
    expect(target.stored.size).toBe(500);
    const failedFirst = [...target.attempts.keys()].filter((key) => failures(key) > 0).length;
    expect(failedFirst).toBeGreaterThan(50);
    expect(report.preload).toMatchObject({ keys: 500, retriedWrites: failedFirst });
    expect(output.join('')).toMatch(new RegExp(`preload: 500 keys of 16 bytes in [\\d.]+ s; ${failedFirst} writes failed once and were written again \\(DEADLINE_EXCEEDED ${failedFirst}\\)`));
    // The measured run finds every key.
    expect(report.runs[0]?.errors).toBe(0);
  });

  it('with one lane per tenant, writes every key into every tenant, each under its prefix, and the workers use them all', async () => {
    const clients = [new FlakyTarget(() => 0), new FlakyTarget(() => 0)];
    const output: string[] = [];
    const report = await new BenchRun(new TenantLanes(clients), settings, new ProgressDisplay((text) => output.push(text), false), 'atoll-etcd').run(['test:1']);
    expect(report.system).toBe('atoll-etcd');
    expect(report.preload).toMatchObject({ keys: 1_000 });
    expect([...clients[0]!.stored.keys()].every((key) => key.startsWith('tenant-0/bench-'))).toBe(true);
    expect([...clients[1]!.stored.keys()].every((key) => key.startsWith('tenant-1/bench-'))).toBe(true);
    expect(clients.map((client) => client.stored.size)).toEqual([500, 500]);
    expect(report.runs[0]?.errors).toBe(0);
    expect(output.join('')).toMatch(/^bench: atoll-etcd preload: 1,000 keys/m);
  });

  it('gives up with the error code when a key keeps failing', async () => {
    const target = new FlakyTarget((key) => (key === 'bench-3' ? 100 : 0));
    const { result } = run(target);
    await expect(result).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', message: expect.stringMatching(/still failed after 3 retries/) });
    // Four passes: the first and three retries.
    expect(Math.max(...target.attempts.values())).toBe(4);
  });
});
