/**
 * What the tests of the plain-Node checkers (scripts/check-*.mjs) share: trees of files under a
 * temporary folder (removed after the file's tests), and a run of a checker over one.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Writes trees of files (by path) under a fresh temporary folder named after `prefix`. */
export function fixtureTrees(prefix: string): (files: Record<string, string>) => string {
  const fixturesRoot = mkdtempSync(join(tmpdir(), prefix));
  let counter = 0;
  afterAll(() => rmSync(fixturesRoot, { recursive: true, force: true }));
  return (files) => {
    const root = join(fixturesRoot, `tree-${counter++}`);
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), text);
    }
    return root;
  };
}

/** Runs `script` (a path) over `root` (default: the repository it lives in). */
export function runChecker(script: string, root?: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, root === undefined ? [script] : [script, root], { encoding: 'utf8', cwd: tmpdir() });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
