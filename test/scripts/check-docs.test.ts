import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureTrees, repoRoot, runChecker } from './script-fixtures.js';

const script = join(repoRoot, 'scripts/check-docs.mjs');
const makeTree = fixtureTrees('atoll-check-docs-');
const check = (root?: string): ReturnType<typeof runChecker> => runChecker(script, root);

/** A small src/ with a class hierarchy, an interface, functions, consts and a proto service. */
const sources: Record<string, string> = {
  'src/node/driver.ts': [
    `import type { Port } from './ports.js';`,
    `export class BaseDriver {`,
    `  protected start(): void {}`,
    `}`,
    `export class Driver extends BaseDriver implements Port {`,
    `  readonly groups = new Map<number, string>();`,
    `  private wanted = false;`,
    `  static of(id: number): Driver {`,
    `    return new Driver();`,
    `  }`,
    `  async iteration(): Promise<void> {`,
    `    const message = { type: 'readIndexResp' };`,
    `    void message;`,
    `  }`,
    `  get closed(): boolean {`,
    `    return this.wanted;`,
    `  }`,
    `  send(): void {}`,
    `}`,
  ].join('\n'),
  'src/node/ports.ts': `export interface Port {\n  send(): void;\n  readonly onFatal?: (error: Error) => void;\n}\nexport type Clock = () => number;\n`,
  'src/node/jobs.ts': [
    `export function startJobs(): void {}`,
    `export const limits = { maxOps: 1, check() { return true; } };`,
    `export enum Mode { Safe, Lease }`,
    `export const configured = { needsKeysOnBothSides: true };`,
  ].join('\n'),
  'proto/atoll/v1/kv.proto': `syntax = "proto3";\nmessage PutRequest { string key = 1; }\nservice KV {\n  rpc Put(PutRequest) returns (PutRequest);\n}\n`,
  'docs/testing.md': '# Testing\n',
  'test/node/driver.test.ts': '// a test\n',
};

const cleanDoc = [
  '# Architecture',
  '',
  'The driver (`src/node/driver.ts`, in `src/node/`) is tested by test/node/driver.test.ts; see',
  '[testing](testing.md) and [its start](testing.md#testing). The ports live in `ports.ts`.',
  '',
  '```',
  '  client -> KV.Put -> Driver.iteration() -> Port.send(frame)',
  '```',
  '',
  '`Driver` extends `BaseDriver` and implements `Port`; `Driver.iteration()`, `Driver.of`,',
  '`Driver.start()` (inherited), `Driver.closed`, `Port.onFatal`, `limits.maxOps`, `Clock`, `Mode`,',
  '`startJobs()`, `iteration()`, `send(frame)`, `KV.Put`, `PutRequest`, `Put`, `wanted`,',
  '`needsKeysOnBothSides`, `readIndexResp`, `setInterval(tickMs)`, `AbortSignal`.',
  '',
  'Not symbols: `--read-mode`, `NOT_LEADER`, `atoll cluster split P`, `max(node clock, partition clock)`,',
  '`src/**/*.ts`, `test/...`, `term`, `{type: "compact"}`, [a site](https://example.com/src/gone.ts).',
].join('\n');

describe('check-docs', () => {
  it('passes a clean tree', () => {
    const result = check(makeTree({ ...sources, 'docs/architecture.md': cleanDoc }));
    expect(result.stderr).toBe('');
    // Paths: two backticked, one in prose, two links, one file name; symbols: 20 backticked (not
    // `limits.maxOps`, `wanted` or `term`: no CamelCase), 2 in the diagram (not KV.Put: no call).
    expect(result.stdout.trim()).toBe('check-docs: docs/architecture.md names 6 paths and 22 symbols, all exist');
    expect(result.status).toBe(0);
  });

  it('passes the real tree (default root)', () => {
    const result = check();
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^check-docs: docs\/architecture\.md names \d+ paths and \d+ symbols, all exist\n$/);
    expect(result.status).toBe(0);
  });

  it('catches paths that do not exist: backticked, linked, in prose, a directory, a bare file name', () => {
    const doc = [
      'The router is `src/node/router.ts`, tested in test/node/router.test.ts.',
      'See [operations](operations.md) and `src/gone/`; `src/node/driver.ts/` is not a directory.',
      'The loop is in `loop.ts`.',
    ].join('\n');
    const result = check(makeTree({ ...sources, 'docs/architecture.md': doc }));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('missing path: docs/architecture.md:1 names src/node/router.ts, which does not exist');
    expect(result.stderr).toContain('missing path: docs/architecture.md:1 names test/node/router.test.ts, which does not exist');
    expect(result.stderr).toContain('missing path: docs/architecture.md:2 names operations.md, which does not exist');
    expect(result.stderr).toContain('missing path: docs/architecture.md:2 names src/gone/, which does not exist');
    expect(result.stderr).toContain('missing path: docs/architecture.md:2 names src/node/driver.ts/, which is not a directory');
    expect(result.stderr).toContain('missing path: docs/architecture.md:3 names the file loop.ts, which no file of the repository is called');
    expect(result.stderr).toMatch(/6 problems\n$/);
  });

  it('catches symbols that are not declared: a missing method, class, function, field, rpc, and one in a diagram', () => {
    const doc = [
      '`Driver.route()` picks the partition; `Driver.executeOn` runs it.',
      '`GoneClass` and `goneFunction()` and `snapshotWanted` and `KV.Gone` and `Mode.missing`.',
      '```',
      '  Peer.Forward(op) -> Driver.vanished(op) -> Driver.iteration()',
      '```',
    ].join('\n');
    const result = check(makeTree({ ...sources, 'docs/architecture.md': doc }));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('missing symbol: docs/architecture.md:1 names `Driver.route()`: Driver (and what it extends) declares no route');
    expect(result.stderr).toContain('missing symbol: docs/architecture.md:1 names `Driver.executeOn`: Driver (and what it extends) declares no executeOn');
    expect(result.stderr).toContain('missing symbol: docs/architecture.md:2 names `GoneClass`: src/ declares no GoneClass');
    expect(result.stderr).toContain('missing symbol: docs/architecture.md:2 names `goneFunction()`: src/ declares no function or method goneFunction');
    expect(result.stderr).toContain("missing symbol: docs/architecture.md:2 names `snapshotWanted`: src/'s code never names snapshotWanted");
    expect(result.stderr).toContain('missing symbol: docs/architecture.md:2 names `KV.Gone`: service KV has no rpc Gone in proto/');
    expect(result.stderr).toContain('missing symbol: docs/architecture.md:4 names `Driver.vanished()`: Driver (and what it extends) declares no vanished');
    expect(result.stderr).toContain('missing symbol: docs/architecture.md:4 names `Peer.Forward()`: src/ declares no Peer');
    // An enum's members are not collected: `Mode.missing` needs some body of src/ to declare `missing`.
    expect(result.stderr).toContain('missing symbol: docs/architecture.md:2 names `Mode.missing`: src/ declares no missing');
    expect(result.stderr).toMatch(/9 problems\n$/);
  });

  it('does not take names in comments or strings for declarations', () => {
    const result = check(
      makeTree({
        ...sources,
        'src/node/ghosts.ts': `// export class Ghost {}\nexport const text = 'function phantom() {}';\n/* interface Spirit { haunt(): void } */\n`,
        'docs/architecture.md': '`Ghost`, `phantom()`, `Spirit`; `Driver.groups` and `text` are real.\n',
      }),
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('names `Ghost`: src/ declares no Ghost');
    expect(result.stderr).toContain('names `phantom()`: src/ declares no function or method phantom');
    expect(result.stderr).toContain('names `Spirit`: src/ declares no Spirit');
    expect(result.stderr).toMatch(/3 problems\n$/);
  });

  it('fails clearly without the document or without src/', () => {
    const noDoc = check(makeTree(sources));
    expect(noDoc.status).toBe(1);
    expect(noDoc.stderr).toContain('missing document: docs/architecture.md');
    const noSrc = check(makeTree({ 'docs/architecture.md': cleanDoc }));
    expect(noSrc.status).toBe(1);
    expect(noSrc.stderr).toContain('no src/ directory');
  });
});
