import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const script = join(repoRoot, 'scripts/check-imports.mjs');
const fixturesRoot = mkdtempSync(join(tmpdir(), 'atoll-check-imports-'));
let fixtureCounter = 0;
afterAll(() => rmSync(fixturesRoot, { recursive: true, force: true }));

/** A small, valid tree: the pure core, the simulator on top, and a node file using LevelDB. */
const cleanTree: Record<string, string> = {
  'src/errors.ts': `export class AtollError extends Error {}\n`,
  'src/limits.ts': `import assert from 'node:assert/strict';\nexport const limit = 1;\nassert.ok(limit);\n`,
  'src/storage/bytes.ts': `import { AtollError } from '../errors.js';\nexport const x = AtollError;\n`,
  'src/storage/level-engine.ts': `import { Level } from 'level';\nexport const L = Level;\n`,
  'src/raft/types.ts': `export interface Entry { index: number }\n`,
  'src/raft/log.ts': [
    `import assert from 'node:assert/strict';`,
    `import {`,
    `  type Entry,`,
    `} from './types.js';`,
    `import { x } from '../storage/bytes.js';`,
    `import { limit } from '../limits.js';`,
    `export const log: Entry[] = [];`,
    `assert.ok(x && limit);`,
  ].join('\n'),
  'src/raft/index.ts': `export * from './log.js';\nexport type { Entry } from './types.js';\n`,
  'src/sim/cluster.ts': [
    `import { log } from '../raft/index.js';`,
    `import { createHash } from 'node:crypto';`,
    `export const c = [log, createHash];`,
  ].join('\n'),
  'src/node/store.ts': [
    `import { L } from '../storage/level-engine.js';`,
    `import { readFileSync } from 'node:fs';`,
    `import pino from 'pino';`,
    `export const s = [L, readFileSync, pino];`,
  ].join('\n'),
};

function makeTree(files: Record<string, string>): string {
  const root = join(fixturesRoot, `tree-${fixtureCounter++}`);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  return root;
}

function check(root?: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, root === undefined ? [script] : [script, root], { encoding: 'utf8', cwd: tmpdir() });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function checkWith(extra: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  return check(makeTree({ ...cleanTree, ...extra }));
}

describe('check-imports', () => {
  it('passes the clean fixture tree', () => {
    const result = check(makeTree(cleanTree));
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe(`check-imports: ${Object.keys(cleanTree).length} files, no cycles, boundaries ok`);
    expect(result.status).toBe(0);
  });

  it('passes the real tree (default root)', () => {
    const result = check();
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^check-imports: \d+ files, no cycles, boundaries ok\n$/);
    expect(result.status).toBe(0);
  });

  it('finds a planted cycle, through a multi-line and a type-only import, and prints it', () => {
    const result = checkWith({
      'src/keys/a.ts': `import { b } from './b.js';\nexport const a = b;\n`,
      'src/keys/b.ts': `import {\n  c,\n} from './c.js';\nexport const b = c;\n`,
      'src/keys/c.ts': `import type { A } from './a.js';\nexport const c = 1 as unknown as A;\n`,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('cycle: src/keys/a.ts -> src/keys/b.ts -> src/keys/c.ts -> src/keys/a.ts');
    expect(result.stderr).toMatch(/1 problem\n$/);
  });

  it('finds a file that imports itself and a cycle made by re-exports', () => {
    const result = checkWith({
      'src/mvcc/self.ts': `export { self } from './self.js';\n`,
      'src/node/x.ts': `export * from './y.js';\n`,
      'src/node/y.ts': `export { x } from './x.js';\n`,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('cycle: src/mvcc/self.ts -> src/mvcc/self.ts');
    expect(result.stderr).toContain('cycle: src/node/x.ts -> src/node/y.ts -> src/node/x.ts');
  });

  it('does not count a dynamic import towards a cycle', () => {
    const result = checkWith({
      'src/node/lazy-a.ts': `import { b } from './lazy-b.js';\nexport const a = b;\n`,
      'src/node/lazy-b.ts': `export const b = 1;\nexport async function later() { return import('./lazy-a.js'); }\n`,
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  // Each planted violation sits in its own file of one tree, so one run checks them all; every
  // case must still be reported on its own line.
  const coreViolations: Array<[string, Record<string, string>, string]> = [
    [
      'the core using the file system',
      { 'src/raft/disk.ts': `import { readFileSync } from 'node:fs';\nexport const d = readFileSync;\n` },
      `src/raft/disk.ts:1 imports 'node:fs'`,
    ],
    [
      'the core using a bare builtin name',
      { 'src/keys/net.ts': `import * as net from 'net';\nexport const n = net;\n` },
      `src/keys/net.ts:1 imports 'net'`,
    ],
    [
      'the core importing LevelEngine',
      { 'src/mvcc/store.ts': `\n\nimport { L } from '../storage/level-engine.js';\nexport const s = L;\n` },
      `src/mvcc/store.ts:3 imports '../storage/level-engine.js' (src/storage/level-engine.ts)`,
    ],
    [
      'the core importing the node layer',
      { 'src/raft/host.ts': `import { s } from '../node/store.js';\nexport const h = s;\n` },
      `src/raft/host.ts:1 imports '../node/store.js' (src/node/store.ts)`,
    ],
    [
      'the core importing pino',
      { 'src/mvcc/log.ts': `import pino from 'pino';\nexport const p = pino;\n` },
      `src/mvcc/log.ts:1 imports 'pino'`,
    ],
    [
      'the core loading a module lazily',
      { 'src/raft/lazy.ts': `export const load = () => import('node:child_process');\n` },
      `src/raft/lazy.ts:1 imports 'node:child_process'`,
    ],
    [
      'a pure storage file using the file system',
      { 'src/storage/disk.ts': `export { readFile } from 'node:fs/promises';\n` },
      `src/storage/disk.ts:1 imports 'node:fs/promises'`,
    ],
    [
      'errors.ts importing the server',
      { 'src/errors.ts': `import { g } from './server/grpc.js';\nexport const e = g;\n`, 'src/server/grpc.ts': `export const g = 1;\n` },
      `src/errors.ts:1 imports './server/grpc.js' (src/server/grpc.ts)`,
    ],
  ];
  let coreResult: ReturnType<typeof check> | undefined;
  it.each(coreViolations)('refuses %s (core boundary)', (_name, _files, expected) => {
    coreResult ??= checkWith(Object.assign({}, ...coreViolations.map(([, files]) => files)));
    expect(coreResult.status).toBe(1);
    expect(coreResult.stderr).toContain(`boundary: ${expected}: src/raft|mvcc|keys may import only src/raft|mvcc|keys`);
    expect(coreResult.stderr).toMatch(new RegExp(`${coreViolations.length} problems\\n$`));
  });

  const simViolations: Array<[string, string, string]> = [
    ['networking', `import { createServer } from 'node:http2';\nexport const s = createServer;\n`, `imports 'node:http2'`],
    ['gRPC', `import * as grpc from '@grpc/grpc-js';\nexport const g = grpc;\n`, `imports '@grpc/grpc-js'`],
    ['LevelEngine', `import { L } from '../storage/level-engine.js';\nexport const l = L;\n`, `imports '../storage/level-engine.js' (src/storage/level-engine.ts)`],
    ['child processes', `import 'node:child_process';\n`, `imports 'node:child_process'`],
  ];
  let simResult: ReturnType<typeof check> | undefined;
  it.each(simViolations.map(([name, text, expected], i) => [name, text, `src/sim/bad-${i}.ts:1 ${expected}`]))(
    'refuses the simulator using %s',
    (_name, _text, expected) => {
      simResult ??= checkWith(Object.fromEntries(simViolations.map(([, text], i) => [`src/sim/bad-${i}.ts`, text])));
      expect(simResult.status).toBe(1);
      expect(simResult.stderr).toContain(`boundary: ${expected}: src/sim may not use`);
      expect(simResult.stderr).toMatch(new RegExp(`${simViolations.length} problems\\n$`));
    },
  );

  it('refuses the simulator reaching I/O through another module, and prints the chain', () => {
    const result = checkWith({
      'src/sim/transport.ts': `import { dial } from '../node/dialer.js';\nexport const t = dial;\n`,
      'src/node/dialer.ts': `import { connect } from './socket.js';\nexport const dial = connect;\n`,
      'src/node/socket.ts': `import { connect } from 'node:net';\nexport { connect };\n`,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      `boundary: src/sim/transport.ts reaches 'node:net' through src/sim/transport.ts -> src/node/dialer.ts -> src/node/socket.ts -> node:net`,
    );
  });

  it('lets the whole-node simulator reach the node through type-only and dynamic imports, and nothing else', () => {
    const node = {
      'src/node/config.ts': `import type { Logger } from 'pino';\nimport type * as grpc from '@grpc/grpc-js';\nexport type C = { l: Logger; g: grpc.Metadata };\n`,
      'src/node/opener.ts': `import type { C } from './config.js';\nexport async function open(c: C) { return import('../storage/level-engine.js'); }\n`,
      'src/node/peers/peer-secret.ts': `import { readFileSync } from 'node:fs';\nexport const read = readFileSync;\n`,
      'src/node/wired.ts': `import { open } from './opener.js';\nimport { read } from './peers/peer-secret.js';\nexport const w = [open, read];\n`,
    };
    const allowed = checkWith({ ...node, 'src/sim/node/run.ts': `import { w } from '../../node/wired.js';\nexport const r = w;\n` });
    expect(allowed.stderr).toBe('');
    expect(allowed.status).toBe(0);
    // The same reach from a plain sim file, or a value import of pino from the node, is refused.
    const refused = checkWith({
      ...node,
      'src/sim/node/run.ts': `import { w } from '../../node/wired.js';\nimport { n } from '../../node/noisy.js';\nexport const r = [w, n];\n`,
      'src/node/noisy.ts': `import pino from 'pino';\nexport const n = pino;\n`,
      'src/sim/plain.ts': `import { w } from '../node/wired.js';\nexport const p = w;\n`,
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`boundary: src/sim/node/run.ts reaches 'pino' through src/sim/node/run.ts -> src/node/noisy.ts -> pino`);
    expect(refused.stderr).toContain(`boundary: src/sim/plain.ts reaches 'pino' through`);
    expect(refused.stderr).toContain(`boundary: src/sim/plain.ts reaches 'node:fs' through`);
    expect(refused.stderr).not.toContain(`src/sim/node/run.ts reaches 'node:fs'`);
  });

  it('refuses src/node importing src/server or src/peer, directly or through a helper below it', () => {
    const result = checkWith({
      'src/server/codec.ts': `import { s } from '../node/store.js';\nexport const codec = s;\n`,
      'src/peer/transport.ts': `import { s } from '../node/store.js';\nexport const transport = s;\n`,
      'src/node/executor.ts': `import type { X } from '../server/codec.js';\nexport const e = 1 as unknown as X;\n`,
      'src/node/driver.ts': `\nimport { transport } from '../peer/transport.js';\nexport const d = transport;\n`,
      'src/node/router.ts': `import { m } from '../tenancy/map.js';\nexport const r = m;\n`,
      'src/tenancy/map.ts': `import { codec } from '../server/codec.js';\nexport const m = codec;\n`,
    });
    expect(result.status).toBe(1);
    const rule = 'src/node may not import src/server or src/peer (the layers above it)';
    expect(result.stderr).toContain(`boundary: src/node/executor.ts:1 imports '../server/codec.js' (src/server/codec.ts): ${rule}`);
    expect(result.stderr).toContain(`boundary: src/node/driver.ts:2 imports '../peer/transport.js' (src/peer/transport.ts): ${rule}`);
    expect(result.stderr).toContain(`boundary: src/node/router.ts reaches 'src/server/codec.ts' through src/node/router.ts -> src/tenancy/map.ts -> src/server/codec.ts: ${rule}`);
    // The layers above may import the node, and a helper below it may be imported freely.
    expect(result.stderr).not.toContain('src/server/codec.ts:1');
    expect(result.stderr).not.toContain('src/peer/transport.ts:1');
  });

  it('keeps src/api and src/wire at the bottom, the client, CLI and bench off the server and node, the peer off the server', () => {
    const apiRule = 'src/api and src/wire may not import src/node, src/server, src/peer, src/client or src/cli (the layers above them)';
    const clientRule = 'src/client may not import src/server or src/node (it speaks src/api over src/wire)';
    const peerRule = 'src/peer may not import src/server (the layer above it; the codecs both use are in src/wire)';
    const sharedRule = 'src/txn and src/tenancy may not import src/node, src/server or src/peer (they speak src/api types)';
    const toolRule = 'src/cli and src/bench may not import src/server or src/node (they reach nodes as clients do, over src/client and src/wire, or start them as processes)';
    // What the layers may do: the server, client and peer use the wire and the API, the peer the node.
    const allowed = {
      'src/api/types.ts': `import type { W } from '../watch/event.js';\nexport type Request = { w: W };\n`,
      'src/watch/event.ts': `export type W = number;\n`,
      'src/wire/codec.ts': `import type { Request } from '../api/types.js';\nimport * as grpc from '@grpc/grpc-js';\nexport const encode = (r: Request) => [r, grpc];\n`,
      'src/server/service.ts': `import { encode } from '../wire/codec.js';\nimport { s } from '../node/store.js';\nexport const service = [encode, s];\n`,
      'src/client/connection.ts': `import { encode } from '../wire/codec.js';\nimport type { Request } from '../api/types.js';\nimport { scope } from '../txn/scope.js';\nexport const c = (r: Request) => [encode(r), scope];\n`,
      'src/peer/transport.ts': `import { encode } from '../wire/codec.js';\nimport { s } from '../node/store.js';\nexport const t = [encode, s];\n`,
      'src/txn/scope.ts': `import type { Request } from '../api/types.js';\nexport const scope = 1 as unknown as Request;\n`,
      'src/cli/main.ts': `import { c } from '../client/connection.js';\nexport const m = [c];\n`,
      'src/bench/run.ts': `import { c } from '../client/connection.js';\nimport { encode } from '../wire/codec.js';\nexport const r = [c, encode];\n`,
    };
    const clean = checkWith(allowed);
    expect(clean.stderr).toBe('');
    expect(clean.status).toBe(0);

    const result = checkWith({
      ...allowed,
      'src/api/node-types.ts': `import type { S } from '../node/store.js';\nexport type N = S;\n`,
      'src/wire/server-codec.ts': `import { service } from '../server/service.js';\nimport { c } from '../client/connection.js';\nimport { m } from '../cli/main.js';\nimport { t } from '../peer/transport.js';\nexport const x = [service, c, m, t];\n`,
      'src/wire/through-watch.ts': `import { hub } from '../watch/hub.js';\nexport const y = hub;\n`,
      'src/watch/hub.ts': `import { s } from '../node/store.js';\nexport const hub = s;\n`,
      'src/client/bad.ts': `import { service } from '../server/service.js';\nimport { s } from '../node/store.js';\nimport { hub } from '../watch/hub.js';\nexport const b = [service, s, hub];\n`,
      'src/peer/bad.ts': `import type { X } from '../server/service.js';\nexport const p = 1 as unknown as X;\n`,
      'src/tenancy/map.ts': `import type { S } from '../node/store.js';\nexport const map = 1 as unknown as S;\n`,
      'src/cli/bad.ts': `import { service } from '../server/service.js';\nexport const cb = service;\n`,
      'src/bench/bad.ts': `import type { S } from '../node/store.js';\nexport const bb = 1 as unknown as S;\n`,
    });
    expect(result.status).toBe(1);
    const expected = [
      `boundary: src/api/node-types.ts:1 imports '../node/store.js' (src/node/store.ts): ${apiRule}`,
      `boundary: src/wire/server-codec.ts:1 imports '../server/service.js' (src/server/service.ts): ${apiRule}`,
      `boundary: src/wire/server-codec.ts:2 imports '../client/connection.js' (src/client/connection.ts): ${apiRule}`,
      `boundary: src/wire/server-codec.ts:3 imports '../cli/main.js' (src/cli/main.ts): ${apiRule}`,
      `boundary: src/wire/server-codec.ts:4 imports '../peer/transport.js' (src/peer/transport.ts): ${apiRule}`,
      `boundary: src/wire/through-watch.ts reaches 'src/node/store.ts' through src/wire/through-watch.ts -> src/watch/hub.ts -> src/node/store.ts: ${apiRule}`,
      `boundary: src/client/bad.ts:1 imports '../server/service.js' (src/server/service.ts): ${clientRule}`,
      `boundary: src/client/bad.ts:2 imports '../node/store.js' (src/node/store.ts): ${clientRule}`,
      `boundary: src/client/bad.ts reaches 'src/node/store.ts' through src/client/bad.ts -> src/watch/hub.ts -> src/node/store.ts: ${clientRule}`,
      `boundary: src/peer/bad.ts:1 imports '../server/service.js' (src/server/service.ts): ${peerRule}`,
      `boundary: src/tenancy/map.ts:1 imports '../node/store.js' (src/node/store.ts): ${sharedRule}`,
      `boundary: src/cli/bad.ts:1 imports '../server/service.js' (src/server/service.ts): ${toolRule}`,
      `boundary: src/bench/bad.ts:1 imports '../node/store.js' (src/node/store.ts): ${toolRule}`,
    ];
    for (const line of expected) expect(result.stderr).toContain(line);
    expect(result.stderr).toMatch(new RegExp(`${expected.length} problems\\n$`));
  });

  it('keeps src/etcd on the NodeApi: not the node, the peer, the client or the cli, directly or through a helper', () => {
    const rule = "src/etcd may not import the node (but through the server's call scopes), src/peer, src/client, src/cli, src/bench, src/chaos or src/sim (it serves etcd's API over the NodeApi of src/api)";
    const allowed = {
      'src/api/types.ts': `export type Api = { get(): void };\n`,
      'src/server/scope.ts': `export const scope = 1;\n`,
      'src/etcd/service.ts': `import type { Api } from '../api/types.js';\nimport { scope } from '../server/scope.js';\nexport const e = [scope] as unknown as Api;\n`,
    };
    const clean = checkWith(allowed);
    expect(clean.stderr).toBe('');
    expect(clean.status).toBe(0);
    const result = checkWith({
      ...allowed,
      'src/etcd/bad.ts': `import { s } from '../node/atoll-node.js';\nimport { h } from '../server/helper.js';\nexport const b = [s, h];\n`,
      'src/node/atoll-node.ts': `export const s = 1;\n`,
      'src/server/helper.ts': `import { c } from '../client/connection.js';\nexport const h = c;\n`,
      'src/client/connection.ts': `export const c = 1;\n`,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`boundary: src/etcd/bad.ts:1 imports '../node/atoll-node.js' (src/node/atoll-node.ts): ${rule}`);
    expect(result.stderr).toContain(`boundary: src/etcd/bad.ts reaches 'src/client/connection.ts' through src/etcd/bad.ts -> src/server/helper.ts -> src/client/connection.ts: ${rule}`);
  });

  it('keeps the server off the peer and etcd, and the entry in src/bin off everything else', () => {
    const serverRule = 'src/server may not import src/peer or src/etcd (the client-facing edge; the entry in src/bin wires the three together)';
    const entryRule = 'only src/bin may import src/bin (the atoll-server entry: nothing builds on it)';
    const allowed = {
      'src/server/service.ts': `export const service = 1;\n`,
      'src/peer/transport.ts': `export const t = 1;\n`,
      'src/etcd/server.ts': `import { service } from '../server/service.js';\nexport const e = service;\n`,
      'src/bin/flags.ts': `export const f = 1;\n`,
      'src/bin/entry.ts': `import { f } from './flags.js';\nimport { service } from '../server/service.js';\nimport { t } from '../peer/transport.js';\nimport { e } from '../etcd/server.js';\nexport const x = [f, service, t, e];\n`,
    };
    const clean = checkWith(allowed);
    expect(clean.stderr).toBe('');
    expect(clean.status).toBe(0);
    const result = checkWith({
      ...allowed,
      'src/server/bad.ts': `import { t } from '../peer/transport.js';\nimport { e } from '../etcd/server.js';\nimport { h } from './helper.js';\nexport const b = [t, e, h];\n`,
      'src/server/helper.ts': `import { f } from '../bin/flags.js';\nexport const h = f;\n`,
    });
    expect(result.status).toBe(1);
    const expected = [
      `boundary: src/server/bad.ts:1 imports '../peer/transport.js' (src/peer/transport.ts): ${serverRule}`,
      `boundary: src/server/bad.ts:2 imports '../etcd/server.js' (src/etcd/server.ts): ${serverRule}`,
      `boundary: src/server/helper.ts:1 imports '../bin/flags.js' (src/bin/flags.ts): ${entryRule}`,
    ];
    for (const line of expected) expect(result.stderr).toContain(line);
    expect(result.stderr).toMatch(new RegExp(`${expected.length} problems\\n$`));
  });

  it('keeps the rooms of src/node one way: a room imports only the rooms its row lists, never the wiring', () => {
    const rooms = {
      'src/node/metrics.ts': `export interface NodeMetrics { n: number }\n`,
      'src/node/ports.ts': `import type { NodeMetrics } from './metrics.js';\nexport type Clock = { m?: NodeMetrics };\n`,
      'src/node/node-config.ts': `import type { AutoSplitConfig } from './cluster/auto-split.js';\nexport type Config = { a?: AutoSplitConfig };\n`,
      'src/node/raftlog/log-store.ts': `export const logStore = 1;\n`,
      'src/node/replica/replica.ts': `import { logStore } from '../raftlog/log-store.js';\nimport type { Clock } from '../ports.js';\nexport const replica = (c?: Clock) => [logStore, c];\n`,
      'src/node/cluster/auto-split.ts': `import { replica } from '../replica/replica.js';\nexport type AutoSplitConfig = { keys: number };\nexport const split = replica;\n`,
      'src/node/service/router.ts': `import { replica } from '../replica/replica.js';\nimport { split } from '../cluster/auto-split.js';\nimport type { Config } from '../node-config.js';\nexport const router = (c?: Config) => [replica, split, c];\n`,
      'src/node/atoll-node.ts': `import { router } from './service/router.js';\nimport { logStore } from './raftlog/log-store.js';\nexport class AtollNode { r = [router, logStore]; }\n`,
    };
    const clean = checkWith(rooms);
    expect(clean.stderr).toBe('');
    expect(clean.status).toBe(0);

    const result = checkWith({
      ...rooms,
      // A room reaching up (a type-only import counts, and so does a dynamic import()), a room
      // importing the wiring, the log store importing a shared file, a shared file importing a
      // room by value, the excepted type import made a value import, and a folder that is no room.
      'src/node/replica/reads.ts': `import type { router } from '../service/router.js';\nexport const reads = async () => [await import('../cluster/auto-split.js'), 0 as unknown as typeof router];\n`,
      'src/node/cluster/admin.ts': `import type { AtollNode } from '../atoll-node.js';\nexport const admin = 1 as unknown as AtollNode;\n`,
      'src/node/raftlog/codec.ts': `import type { Clock } from '../ports.js';\nexport const codec = 1 as unknown as Clock;\n`,
      'src/node/metrics.ts': `import { logStore } from './raftlog/log-store.js';\nexport interface NodeMetrics { n: number }\nexport const m = logStore;\n`,
      'src/node/node-config.ts': `import { split, type AutoSplitConfig } from './cluster/auto-split.js';\nexport type Config = { a?: AutoSplitConfig };\nexport const s = split;\n`,
      'src/node/misc/helper.ts': `export const helper = 1;\n`,
    });
    expect(result.status).toBe(1);
    const roomsNote = '(the rooms of src/node, scripts/check-imports.mjs NODE_ROOMS)';
    const expected = [
      `room: src/node/replica/reads.ts:1 imports '../service/router.js' (src/node/service/router.ts, src/node/service/): src/node/replica/ may import only src/node/peers/, src/node/raftlog/, src/node/snapshot/, the shared top-level files ${roomsNote}`,
      `room: src/node/replica/reads.ts:2 imports '../cluster/auto-split.js' (src/node/cluster/auto-split.ts, src/node/cluster/): src/node/replica/ may import only`,
      `room: src/node/cluster/admin.ts:1 imports '../atoll-node.js' (src/node/atoll-node.ts, the wiring top-level files): src/node/cluster/ may import only src/node/apply/, src/node/replica/, src/node/raftlog/, src/node/peers/, the shared top-level files ${roomsNote}`,
      `room: src/node/raftlog/codec.ts:1 imports '../ports.js' (src/node/ports.ts, the shared top-level files): src/node/raftlog/ may import no other room ${roomsNote}`,
      `room: src/node/metrics.ts:1 imports './raftlog/log-store.js' (src/node/raftlog/log-store.ts, src/node/raftlog/): the shared top-level files of src/node (config, ports, metrics, frames) may import only each other`,
      `room: src/node/node-config.ts:1 imports './cluster/auto-split.js' (src/node/cluster/auto-split.ts, src/node/cluster/): the shared top-level files`,
      `room: src/node/misc/helper.ts is in src/node/misc/, which is no room of NODE_ROOMS`,
    ];
    for (const line of expected) expect(result.stderr).toContain(line);
    expect(result.stderr).toMatch(new RegExp(`${expected.length} problems\\n$`));
    // The wiring imports every room, and the excepted type-only import passes.
    expect(result.stderr).not.toContain('src/node/atoll-node.ts:');
    expect(clean.stderr).not.toContain('node-config.ts');
  });

  it('lets only level-engine.ts import level', () => {
    const result = checkWith({ 'src/node/db.ts': `import { Level } from 'level';\nexport const d = Level;\n` });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`boundary: src/node/db.ts:1 imports 'level': only src/storage/level-engine.ts may import LevelDB`);
  });

  it('reports an import that resolves to no file', () => {
    const result = checkWith({ 'src/node/broken.ts': `import { gone } from './gone.js';\nexport const b = gone;\n` });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`unresolved: src/node/broken.ts:1 imports './gone.js', which matches no file`);
  });

  it('ignores import-like text in comments, strings, templates and regular expressions', () => {
    const result = checkWith({
      'src/raft/tricky.ts': [
        `// import { readFileSync } from 'node:fs';`,
        `/* import net from 'node:net'; */`,
        `export const text = "import pino from 'pino'";`,
        'export const template = `import ${"x"} from \'level\' ${`nested ${1}`}`;',
        `export const pattern = /import '\\/node:http'/g;`,
        `export const ratio = 4 / 2 / 1;`,
        `export const object = { import: 1, export: 2 };`,
        `export const meta = typeof import.meta;`,
        `import { log } from './log.js';`,
        `export const used = log;`,
      ].join('\n'),
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('fails clearly on a root with no src/', () => {
    const result = check(makeTree({ 'README.md': 'nothing here\n' }));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('no src/ directory');
  });
});
