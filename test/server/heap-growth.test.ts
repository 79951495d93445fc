/**
 * --heap-growth-percent (src/bin/atoll-server.ts): V8's heap growing factor, set before the node
 * allocates (docs/performance.md, "Memory"). Out-of-range values stop the server with a clear error
 * before it opens anything, and the option is documented in --help with its default.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

function server(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [resolve('dist/src/bin/atoll-server.js'), ...args], { encoding: 'utf8', timeout: 20_000, env: { ...process.env, ATOLL_LOG_LEVEL: 'error' } });
}

describe('atoll-server --heap-growth-percent', () => {
  it('is listed in --help with its default of 50', () => {
    const help = server(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout.replace(/\s+/g, ' ')).toMatch(/--heap-growth-percent <n> .*default 50/);
  });

  it('refuses values above 1000 and below 0, before the node opens', () => {
    const tooBig = server(['--id', '1', '--peers', '1=127.0.0.1:7001', '--heap-growth-percent', '5000', '--data-dir', '/nonexistent/never-created']);
    expect(tooBig.status).toBe(1);
    expect(tooBig.stderr).toMatch(/--heap-growth-percent must be at most 1000/);
    const negative = server(['--id', '1', '--peers', '1=127.0.0.1:7001', '--heap-growth-percent', '-5']);
    expect(negative.status).toBe(1);
    expect(negative.stderr).toMatch(/--heap-growth-percent must be an integer >= 0/);
  });
});
