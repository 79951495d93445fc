/**
 * Runs the built `atoll` executable (dist/src/cli/atoll.js, from `npm run build`) as a shell user
 * would: arguments, optional stdin bytes, environment; collects stdout as bytes. Every run is
 * bounded by a timeout and killed past it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export const atollMain = resolve(import.meta.dirname, '../../dist/src/cli/atoll.js');

export interface BinaryOutcome {
  readonly code: number | null;
  /** The exact bytes written to stdout. */
  readonly stdoutBytes: Buffer;
  readonly stdout: string;
  readonly stderr: string;
}

export interface BinaryRunOptions {
  readonly env?: Record<string, string>;
  /** Bytes for stdin; stdin is closed at once (empty) when absent. */
  readonly input?: Uint8Array | string;
  readonly timeoutMs?: number;
}

export function runAtollBinary(argv: readonly string[], options: BinaryRunOptions = {}): Promise<BinaryOutcome> {
  if (!existsSync(atollMain)) throw new Error(`${atollMain} is missing: run npm run build`);
  // Only what the CLI reads: no ATOLL_* settings of the machine leak into the test.
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '', ...options.env };
  return new Promise((resolveOutcome, reject) => {
    const child = spawn(process.execPath, [atollMain, ...argv], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 15_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const stdoutBytes = Buffer.concat(out);
      resolveOutcome({ code, stdoutBytes, stdout: stdoutBytes.toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
    // A CLI that does not read stdin may close it first; that is not the test's failure.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input === undefined ? undefined : Buffer.from(options.input));
  });
}
