/**
 * scripts/bench-vs-etcd.sh checks every program it uses before it starts anything (issue 22): on a
 * machine with etcd but not etcdctl (Debian's etcd-server without etcd-client) it used to start
 * the servers and report "etcd not ready" after 60 s. Here it runs with a PATH of chosen programs
 * and must name the missing one at once, exit 2, and start nothing.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const script = resolve(import.meta.dirname, '../../scripts/bench-vs-etcd.sh');
/** The programs the script needs besides etcd and etcdctl, and the ones its first lines use. */
const basicTools = ['node', 'curl', 'awk', 'sed', 'cut', 'seq', 'head', 'tail', 'date', 'sleep', 'mktemp', 'nproc', 'dirname', 'id'];

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A bin directory holding links to `tools` (from this machine's PATH) and a fake `etcd`. */
function binWith(tools: readonly string[], options: { etcd: boolean }): string {
  const bin = mkdtempSync(join(tmpdir(), 'atoll-bench-path-'));
  dirs.push(bin);
  const stub = (name: string, body: string): void => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  for (const tool of tools) {
    const found = spawnSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    // The script stops before it runs most of them: a stub stands in for one this machine lacks.
    if (found === '') stub(tool, 'exit 0');
    else symlinkSync(found, join(bin, tool));
  }
  if (options.etcd) stub('etcd', 'echo "etcd Version: fake"');
  return bin;
}

function runScript(bin: string) {
  const startedAt = Date.now();
  const result = spawnSync('/bin/bash', [script, '--results', join(bin, 'results')], { env: { PATH: bin, HOME: bin }, encoding: 'utf8', timeout: 20_000 });
  return { code: result.status, stderr: result.stderr, stdout: result.stdout, elapsedMs: Date.now() - startedAt };
}

describe('bench-vs-etcd.sh prerequisites', () => {
  it('names etcdctl when only etcd is installed, and exits 2 at once', () => {
    const outcome = runScript(binWith(basicTools, { etcd: true }));
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/bench-vs-etcd: missing etcdctl \(Debian package etcd-client\)/);
    expect(outcome.stderr).not.toMatch(/etcd-server/);
    expect(outcome.stderr).not.toMatch(/starting|not ready/);
    expect(outcome.elapsedMs).toBeLessThan(10_000);
  });

  it('names both etcd programs when neither is installed', () => {
    const outcome = runScript(binWith(basicTools, { etcd: false }));
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/missing etcd \(Debian package etcd-server\) and etcdctl \(Debian package etcd-client\)/);
  });

  it('names any other missing program', () => {
    const outcome = runScript(binWith(basicTools.filter((tool) => tool !== 'curl' && tool !== 'nproc'), { etcd: true }));
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/bench-vs-etcd: missing programs: curl nproc; install them and run again/);
  });
});
