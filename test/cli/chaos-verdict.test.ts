/**
 * `npm run chaos` prints its verdict last (issue 22): the namespace clean-up used to be logged after
 * `chaos: valid`, so a script reading the last line got the clean-up instead. A short run of the
 * built chaos CLI with a network fault, stdout and stderr into one file in the order written: the
 * last line is the verdict, and the clean-up comes before it. Needs network namespaces (root).
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectNetns } from '../../src/chaos/netns.js';

const chaosMain = resolve(import.meta.dirname, '../../dist/src/chaos/cli.js');
const netns = await detectNetns();

describe('chaos CLI output', () => {
  it.skipIf(!netns.available)('the verdict is the last line, after the namespace clean-up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atoll-chaos-verdict-'));
    const outputPath = join(dir, 'output.txt');
    const output = openSync(outputPath, 'w');
    try {
      const args = [chaosMain, '--nodes', '3', '--partitions', '2', '--duration', '3', '--seed', '5', '--faults', 'split', '--out', dir];
      // Namespaces of its own: test/fault/chaos.test.ts may run at the same time with the default ones.
      args.push('--netns-prefix', 'atollcv', '--netns-subnet', '8');
      const child = spawn(process.execPath, args, { stdio: ['ignore', output, output] });
      const killer = setTimeout(() => child.kill('SIGKILL'), 110_000);
      const code = await new Promise<number | null>((resolveCode) => child.on('close', resolveCode));
      clearTimeout(killer);
      const lines = readFileSync(outputPath, 'utf8').trimEnd().split('\n');
      const last = lines.at(-1) ?? '';
      expect(last).toMatch(/^chaos: (valid|INVALID \(.*\))$/);
      expect(code).toBe(last === 'chaos: valid' ? 0 : 1);
      const cleanup = lines.findIndex((line) => line.includes('removed network namespaces'));
      expect(cleanup).toBeGreaterThanOrEqual(0);
      expect(cleanup).toBeLessThan(lines.length - 1);
    } finally {
      closeSync(output);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
