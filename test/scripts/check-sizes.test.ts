import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureTrees, repoRoot, runChecker } from './script-fixtures.js';

const script = join(repoRoot, 'scripts/check-sizes.mjs');
const writeTree = fixtureTrees('atoll-check-sizes-');

interface Exception {
  file: string;
  class?: string;
  lines: number;
  reason?: string;
  date?: string;
}

/** A tree under the fixtures root: files by path, and scripts/size-exceptions.json when given. */
function makeTree(files: Record<string, string>, exceptions?: Exception[] | string): string {
  const all = { ...files };
  if (exceptions !== undefined) {
    all['scripts/size-exceptions.json'] =
      typeof exceptions === 'string'
        ? exceptions
        : JSON.stringify({ exceptions: exceptions.map((e) => ({ reason: 'It is big for a reason worth a sentence.', date: '2026-12-07', ...e })) });
  }
  return writeTree(all);
}

const check = (root?: string): ReturnType<typeof runChecker> => runChecker(script, root);

/** A class of exactly `lines` lines, from its `class` line to its closing brace. */
function classOf(name: string, lines: number, bodyLine = (i: number) => `  readonly field${i} = ${i};`): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => bodyLine(i));
  return [`export class ${name} {`, ...body, '}'].join('\n');
}

/** A file of exactly `lines` lines (ending in a newline). */
function fileOf(lines: number): string {
  return Array.from({ length: lines }, (_, i) => `export const value${i} = ${i};`).join('\n') + '\n';
}

const cleanTree: Record<string, string> = {
  'src/small.ts': `export class Small {\n  get one(): number {\n    return 1;\n  }\n}\n`,
  'src/edge/at-limits.ts': `${classOf('AtLimit', 400)}\n${fileOf(300)}`, // 400 + 300 lines
  'src/edge/anonymous.ts': `export const Made = class {\n  x = 1;\n};\n`,
};

describe('check-sizes', () => {
  it('passes a clean tree, a class of exactly 400 lines and a file of exactly 700', () => {
    const result = check(makeTree(cleanTree));
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('check-sizes: 3 files, 3 classes, within limits (0 exceptions)');
    expect(result.status).toBe(0);
  });

  it('passes the real tree (default root) with its exceptions', () => {
    const result = check();
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^check-sizes: \d+ files, \d+ classes, within limits \(\d+ exceptions\)\n$/);
    expect(result.status).toBe(0);
  });

  it('catches a class of 401 lines and a file of 701 lines, and lists both', () => {
    const result = check(
      makeTree({
        ...cleanTree,
        'src/node/big-class.ts': `// a comment line first\n${classOf('Big', 401)}\n`,
        'src/node/long-file.ts': fileOf(701),
      }),
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('class too long: src/node/big-class.ts:2 class Big is 401 lines (limit 400)');
    expect(result.stderr).toContain('file too long: src/node/long-file.ts is 701 lines (limit 700)');
    expect(result.stderr).toContain('argue an exception in scripts/size-exceptions.json');
    expect(result.stderr).toMatch(/check-sizes: 5 files, 2 problems\n$/);
  });

  it('counts braces only in code: not in strings, templates, comments or regular expressions', () => {
    // Each body line holds closing braces outside code: counted naively they would close the class
    // at once, and it would pass. The other class's opening braces would keep it open to the end.
    const closers = [
      `  a = '}}';`,
      `  b = "}";`,
      '  c = `}${`}`}`;',
      `  // }`,
      `  /* } */ d = 1;`,
      `  e = /}/g;`,
      '  f = `${ { g: 1 }.g }}`;',
    ];
    const openers = [`  a = '{{';`, `  b = "{";`, '  c = `{${"{"}`;', `  // {`, `  e = /\\{/g;`];
    const result = check(
      makeTree({
        'src/closers.ts': classOf('Closers', 401, (i) => closers[i % closers.length] as string),
        'src/openers.ts': `${classOf('Openers', 20, (i) => openers[i % openers.length] as string)}\n${fileOf(500)}`,
      }),
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('class too long: src/closers.ts:1 class Closers is 401 lines (limit 400)');
    expect(result.stderr).not.toContain('Openers');
    expect(result.stderr).toMatch(/1 problem\n$/);
  });

  it('measures a generic class from its class line, past braces in its type parameters and heritage', () => {
    const body = Array.from({ length: 398 }, (_, i) => `  m${i}(): void {}`);
    const source = [`export abstract class Generic<T extends { a: number }>`, `  extends Base<{ b: string }> {`, ...body, '}', `class Base<T> {}`].join('\n');
    const result = check(makeTree({ 'src/generic.ts': source }));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('class too long: src/generic.ts:1 class Generic is 401 lines (limit 400)');
  });

  it('lets an exception hold a file or class at its size, and refuses it growing', () => {
    const files = { 'src/big.ts': `${classOf('Big', 402)}\n`, 'src/long.ts': fileOf(703) };
    const held = check(makeTree(files, [{ file: 'src/big.ts', class: 'Big', lines: 402 }, { file: 'src/long.ts', lines: 705 }]));
    expect(held.stderr).toBe('');
    expect(held.stdout.trim()).toBe('check-sizes: 2 files, 1 class, within limits (2 exceptions)');
    expect(held.status).toBe(0);

    const grown = check(makeTree(files, [{ file: 'src/big.ts', class: 'Big', lines: 401 }, { file: 'src/long.ts', lines: 702 }]));
    expect(grown.status).toBe(1);
    expect(grown.stderr).toContain('class too long: src/big.ts:1 class Big is 402 lines, more than the 401 its exception allows (limit 400): it may not grow');
    expect(grown.stderr).toContain('file too long: src/long.ts is 703 lines, more than the 702 its exception allows (limit 700): it may not grow');
    // A file exception does not cover the file's classes, nor a class exception its file.
    const wrongKind = check(makeTree(files, [{ file: 'src/big.ts', lines: 500 }, { file: 'src/long.ts', class: 'Long', lines: 800 }]));
    expect(wrongKind.status).toBe(1);
    expect(wrongKind.stderr).toContain('class too long: src/big.ts:1 class Big is 402 lines (limit 400)');
    expect(wrongKind.stderr).toContain('file too long: src/long.ts is 703 lines (limit 700)');
  });

  it('reports a stale exception: its file or class gone, or back within the limit', () => {
    const result = check(
      makeTree({ 'src/shrunk.ts': `${classOf('Shrunk', 300)}\n`, 'src/short.ts': fileOf(10) }, [
        { file: 'src/shrunk.ts', class: 'Shrunk', lines: 450 },
        { file: 'src/shrunk.ts', class: 'Renamed', lines: 450 },
        { file: 'src/short.ts', lines: 800 },
        { file: 'src/deleted.ts', lines: 900 },
      ]),
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('stale exception: remove it: src/shrunk.ts class Shrunk (scripts/size-exceptions.json): class Shrunk is 300 lines, within 400');
    expect(result.stderr).toContain('stale exception: remove it: src/shrunk.ts class Renamed (scripts/size-exceptions.json): src/shrunk.ts has no class Renamed');
    expect(result.stderr).toContain('stale exception: remove it: src/short.ts (scripts/size-exceptions.json): src/short.ts is within 700 lines now');
    expect(result.stderr).toContain('stale exception: remove it: src/deleted.ts (scripts/size-exceptions.json): src/deleted.ts no longer exists');
    expect(result.stderr).toMatch(/4 problems\n$/);
  });

  it('refuses an exception without a reason, date or size, a repeated one, and a list that is not JSON', () => {
    const files = { 'src/long.ts': fileOf(703) };
    const result = check(
      makeTree(
        files,
        JSON.stringify({
          exceptions: [
            { file: 'src/long.ts', lines: 703, date: '2026-12-07' },
            { file: 'src/long.ts', lines: 703, reason: 'Long for a reason worth a sentence.', date: '7 Dec' },
            { file: 'src/long.ts', lines: '703', reason: 'Long for a reason worth a sentence.', date: '2026-12-07' },
            { file: 'src/long.ts', lines: 703, reason: 'Long for a reason worth a sentence.', date: '2026-12-07' },
            { file: 'src/long.ts', lines: 703, reason: 'Long for a reason worth a sentence.', date: '2026-12-07' },
          ],
        }),
      ),
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('bad exception: scripts/size-exceptions.json entry 1: "reason" must say why');
    expect(result.stderr).toContain('bad exception: scripts/size-exceptions.json entry 2: "date" must be YYYY-MM-DD');
    expect(result.stderr).toContain('bad exception: scripts/size-exceptions.json entry 3: "lines" must be a positive integer');
    expect(result.stderr).toContain('bad exception: scripts/size-exceptions.json entry 5 repeats src/long.ts');
    expect(result.stderr).toMatch(/4 problems\n$/);

    const notJson = check(makeTree(files, '{ "exceptions": [ '));
    expect(notJson.status).toBe(1);
    expect(notJson.stderr).toContain('bad exception list: scripts/size-exceptions.json is not JSON');
  });

  it('fails clearly on a root with no src/', () => {
    const result = check(makeTree({ 'README.md': 'nothing here\n' }));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('no src/ directory');
  });
});
