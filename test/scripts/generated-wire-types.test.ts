/**
 * The committed src/wire/generated/ must be exactly what scripts/gen-wire-types.mjs generates
 * from proto/: a .proto change without `npm run gen:wire-types` fails here (stale types).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script, no declarations
import { committedDir, generateWireTypes } from '../../scripts/gen-wire-types.mjs';

const scratch = mkdtempSync(join(tmpdir(), 'atoll-wire-types-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Every file under `root` (relative path to contents); the tree is a few dozen files. */
function readTree(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const pending = [root];
  for (let guard = 0; pending.length > 0 && guard < 10_000; guard++) {
    const directory = pending.pop()!;
    for (const name of readdirSync(directory)) {
      const path = join(directory, name);
      if (statSync(path).isDirectory()) pending.push(path);
      else files.set(relative(root, path), readFileSync(path, 'utf8'));
    }
  }
  return files;
}

describe('generated wire types', () => {
  it('are up to date with proto/', () => {
    const fresh = join(scratch, 'generated');
    (generateWireTypes as (outDir: string) => void)(fresh);
    const expected = readTree(fresh);
    const committed = readTree(committedDir as string);
    expect(expected.size).toBeGreaterThan(40);
    const hint = 'src/wire/generated is stale: run `npm run gen:wire-types` and commit the result';
    expect([...committed.keys()].sort(), hint).toEqual([...expected.keys()].sort());
    for (const [path, contents] of expected) expect(committed.get(path), `${hint} (${path})`).toBe(contents);
  });
});
