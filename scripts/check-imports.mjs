#!/usr/bin/env node
/**
 * Checks the import graph of src/**\/*.ts, with plain Node and no dependencies:
 *
 * 1. No circular import chains among src files. Type-only imports count (a cycle of types is still
 *    a cycle in the design); dynamic `import()` does not, since it loads lazily and never takes
 *    part in module initialisation order.
 * 2. Architecture boundaries:
 *    - The pure core, src/raft/, src/mvcc/ and src/keys/, may import only from those folders, from
 *      the pure storage files (src/storage/ except level-engine.ts), src/errors.ts, src/limits.ts,
 *      and node:assert. The files it may import obey the same rule, so the core can never reach
 *      the file system, the network, LevelDB, gRPC or the logger, even indirectly.
 *    - src/sim/ may import the core, but neither it nor anything it imports (transitively) may use
 *      the file system, networking, child processes, LevelDB, gRPC or pino: a simulation run must
 *      be a pure function of its seed.
 *    - src/sim/node/ and src/sim/node-cli.ts (the whole-node simulator) run the real node, so what it reaches is followed
 *      only through imports that exist at run time: type-only imports (erased by tsc) and dynamic
 *      `import()` (the node loads LevelDB that way, only when it is given no engine) are not
 *      followed, and neither is src/node/peers/peer-secret.ts's file access (it reads secret files only
 *      when a node is given no secrets; the simulator gives them). Its own imports obey the
 *      src/sim rule like every sim file's.
 *    - Only src/storage/level-engine.ts may import `level`.
 *    - src/node/ may not import the layers above it, src/server/ (protobuf, gRPC services) and
 *      src/peer/ (the gRPC transport), directly or through another src file: the node exposes
 *      plain methods and types, and the layers above adapt them to the wire.
 *    - src/api/ (the request, result and error types every layer speaks) and src/wire/ (the
 *      generated protobuf types, the proto loader and the codecs) are at the bottom of the layers:
 *      they may not import src/node/, src/server/, src/peer/, src/client/ or src/cli/, directly or
 *      through another src file.
 *    - src/client/ may not import src/server/ or src/node/, directly or through another src file:
 *      it speaks src/api/ types over src/wire/.
 *    - src/peer/ may not import src/server/, directly or through another src file: the codecs
 *      both use are in src/wire/; nor may src/server/ import src/peer/ or src/etcd/: the server
 *      binary's entry, src/bin/ (flags, then the wiring), imports all three.
 *    - No file outside src/bin/ may import src/bin/: it holds the entry of the atoll-server
 *      binary, which nothing builds on.
 *    - src/cli/ and src/bench/ may not import src/server/ or src/node/, directly or through another
 *      src file: they reach nodes as any client does, or start them as processes.
 *    - src/etcd/ (etcd's v3 API on its own port) may not import the node (atoll-node.ts and every
 *      room but service/, which the server's call scopes reach for their deadline wheel),
 *      src/peer/, src/client/, src/cli/, src/bench/, src/chaos/ or src/sim/, directly or through
 *      another src file: it speaks the NodeApi of src/api/ (src/bin/atoll-server.ts starts it).
 *    - src/txn/ and src/tenancy/ (shared by the client and the node) may not import src/node/,
 *      src/server/ or src/peer/, directly or through another src file: they speak src/api/ types.
 * 3. The rooms of src/node/ (issue 34 item 2): each subsystem of the node is a folder, and a file
 *    of a room may import only its own room, the rooms NODE_ROOMS lists for it and the shared
 *    top-level files (NODE_SHARED_FILES), type-only imports and dynamic import() included. The
 *    table is the import graph as it is, kept as strict as the code allows, and one way (no two
 *    rooms import each other, directly or around a loop; checked at start). The room map:
 *    - top level, shared (NODE_SHARED_FILES): node-config.ts (the node's configuration),
 *      ports.ts (clock, timers, transport, randomness, storage), metrics.ts (the metrics port),
 *      raft-wire.ts (the binary Raft frames the transport carries), shared-ticker.ts (one
 *      periodic timer over the timers port). They import only each other, but for
 *      NODE_ROOM_EXCEPTIONS: node-config.ts names AutoSplitConfig (cluster/auto-split.ts) and
 *      MemberState (cluster/membership-table.ts), type-only.
 *    - top level, wiring: atoll-node.ts (opens the replicas and connects the rooms; any other
 *      top-level file counts as wiring too). It may import every room; no room or shared file
 *      may import it.
 *    - raftlog/: one group's Raft log in the node's LevelDB: raft-log-store.ts, raft-log-codec.ts,
 *      log-window.ts.
 *    - peers/: what the node checks and keeps of its peers: peer-secret.ts, peer-message-check.ts,
 *      peer-refusals.ts, liveness.ts.
 *    - snapshot/: snapshots outside Raft: snapshot-transfer.ts (the protocol), snapshot-sender.ts,
 *      snapshot-receiver.ts, snapshot-transfers.ts, snapshot-staging.ts, held-snapshot.ts,
 *      snapshot-spool.ts, snapshot-payload.ts, snapshot-imports.ts.
 *    - replica/: the per-group state machine around RawNode and the loop that drives the groups:
 *      partition-replica.ts, raft-driver.ts, driven-group.ts, group-activity.ts, group-jobs.ts,
 *      read-barrier.ts, and the entries the replica recognises when it applies: split-entry.ts,
 *      merge-entry.ts, conf-after.ts.
 *    - apply/: what changes the replicas a node holds through the log: split-apply.ts,
 *      merge-apply.ts, split-heal.ts, split-groups.ts, merge-tombstones.ts, and replica-store.ts
 *      (opens and deletes replicas, with those appliers).
 *    - cluster/: members, placement and the shape of partitions: membership.ts,
 *      membership-table.ts, membership-admin.ts, cluster-descriptor.ts, rebalancer.ts,
 *      rebalance-state.ts, replica-moves.ts, move-steps.ts, orphan-learners.ts, voter-holes.ts,
 *      stray-check.ts, range-routing.ts, split-admin.ts, merge-admin.ts, admin-propose.ts,
 *      auto-split.ts, stranded-freezes.ts, leader-transfer.ts.
 *    - service/: client requests and the node's own jobs around them: router.ts, kv-executor.ts,
 *      kv-commands.ts, records.ts, admission.ts, auth.ts, node-access.ts, lease-keeper.ts,
 *      script-runner.ts, script-scheduler.ts, snapshot-pins.ts, watch-service.ts,
 *      deadline-wheel.ts, request-deadline.ts, maintenance.ts, node-reports.ts, leader-changes.ts, memory-view.ts.
 *    A file in a folder of src/node/ that is not a room is reported.
 * Every relative import must also resolve to a file.
 *
 * Usage: node scripts/check-imports.mjs [rootDir]   (rootDir holds src/; default: the repository)
 * Prints `check-imports: N files, no cycles, boundaries ok` and exits 0, or lists every problem and
 * exits 1.
 *
 * Parsing: a small tokenizer (scripts/lib/ts-source.mjs, shared with check-sizes.mjs) skips
 * comments, strings, template literals and regular expressions, so import-like text inside them is
 * never mistaken for an import; the statements are then recognised on the token stream.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { listSourceFiles, toRelative, tokenize } from './lib/ts-source.mjs';

const CORE_DIRS = ['src/raft/', 'src/mvcc/', 'src/keys/'];
const CORE_SHARED_FILES = ['src/errors.ts', 'src/limits.ts'];
const LEVEL_ENGINE = 'src/storage/level-engine.ts';
const CORE_EXTERNALS = new Set(['node:assert', 'node:assert/strict']);
const CORE_RULE =
  'src/raft|mvcc|keys may import only src/raft|mvcc|keys, pure src/storage (not level-engine), src/errors.ts, src/limits.ts and node:assert';
const SIM_RULE = 'src/sim may not use the file system, networking, child processes, LevelDB, gRPC or pino';
const LEVEL_RULE = `only ${LEVEL_ENGINE} may import LevelDB`;
const NODE_RULE = 'src/node may not import src/server or src/peer (the layers above it)';
const ENTRY_DIR = 'src/bin/';
const ENTRY_RULE = 'only src/bin may import src/bin (the atoll-server entry: nothing builds on it)';
/**
 * The layering: a file in one of `from` may not import a file in one of `forbidden`, directly or
 * through other src files (a helper in between brings the wrong-way arrow back).
 */
const LAYER_RULES = [
  { from: ['src/node/'], forbidden: ['src/server/', 'src/peer/'], rule: NODE_RULE },
  {
    from: ['src/api/', 'src/wire/'],
    forbidden: ['src/node/', 'src/server/', 'src/peer/', 'src/client/', 'src/cli/'],
    rule: 'src/api and src/wire may not import src/node, src/server, src/peer, src/client or src/cli (the layers above them)',
  },
  { from: ['src/client/'], forbidden: ['src/server/', 'src/node/'], rule: 'src/client may not import src/server or src/node (it speaks src/api over src/wire)' },
  { from: ['src/peer/'], forbidden: ['src/server/'], rule: 'src/peer may not import src/server (the layer above it; the codecs both use are in src/wire)' },
  {
    from: ['src/server/'],
    forbidden: ['src/peer/', 'src/etcd/'],
    rule: 'src/server may not import src/peer or src/etcd (the client-facing edge; the entry in src/bin wires the three together)',
  },
  {
    from: ['src/cli/', 'src/bench/'],
    forbidden: ['src/server/', 'src/node/'],
    rule: 'src/cli and src/bench may not import src/server or src/node (they reach nodes as clients do, over src/client and src/wire, or start them as processes)',
  },
  {
    from: ['src/etcd/'],
    // src/node/service/ is left out: the server's call scopes (which src/etcd uses) reach its deadline wheel.
    forbidden: ['src/node/atoll-node.ts', 'src/node/cluster/', 'src/node/replica/', 'src/node/apply/', 'src/node/raftlog/', 'src/node/snapshot/', 'src/node/peers/', 'src/peer/', 'src/client/', 'src/cli/', 'src/bench/', 'src/chaos/', 'src/sim/'],
    rule: 'src/etcd may not import the node (but through the server\'s call scopes), src/peer, src/client, src/cli, src/bench, src/chaos or src/sim (it serves etcd\'s API over the NodeApi of src/api)',
  },
  {
    from: ['src/txn/', 'src/tenancy/'],
    forbidden: ['src/node/', 'src/server/', 'src/peer/'],
    rule: 'src/txn and src/tenancy may not import src/node, src/server or src/peer (they speak src/api types)',
  },
];
/**
 * The rooms of src/node/ (rule 3 above): each room, and what it may import besides itself.
 * 'shared' is NODE_SHARED_FILES. Nothing lists the wiring (atoll-node.ts): only it imports rooms
 * at will. Nothing lists service/ either: only the wiring imports it.
 */
const NODE_ROOMS = {
  raftlog: [],
  peers: ['shared'],
  snapshot: ['peers', 'raftlog', 'shared'],
  replica: ['peers', 'raftlog', 'snapshot', 'shared'],
  apply: ['replica', 'raftlog', 'snapshot', 'shared'],
  cluster: ['apply', 'replica', 'raftlog', 'peers', 'shared'],
  service: ['cluster', 'replica', 'peers', 'shared'],
};
/** Top-level files of src/node/ every room may import: the node's configuration and its ports. */
const NODE_SHARED_FILES = new Set(['src/node/node-config.ts', 'src/node/ports.ts', 'src/node/metrics.ts', 'src/node/raft-wire.ts', 'src/node/shared-ticker.ts']);
/** Imports the room table does not allow but the code has, each named with its reason. */
const NODE_ROOM_EXCEPTIONS = [
  { from: 'src/node/node-config.ts', to: 'src/node/cluster/auto-split.ts', typeOnly: true, why: 'AtollNodeConfig.autoSplit is an AutoSplitConfig' },
  { from: 'src/node/node-config.ts', to: 'src/node/cluster/membership-table.ts', typeOnly: true, why: "JoinedCluster's members carry a MemberState" },
];
/** Files whose file-system imports the whole-node simulator may reach (see the rules above). */
const SIM_NODE_FILE_ACCESS_EXEMPT = new Set(['src/node/peers/peer-secret.ts']);

// ------------------------------------------------------------------ classification

function isCoreFile(file) {
  return CORE_DIRS.some((dir) => file.startsWith(dir));
}

function isPureStorageFile(file) {
  return file.startsWith('src/storage/') && file !== LEVEL_ENGINE;
}

/** Files that must stay pure: the core itself and everything it is allowed to import. */
function isPureZoneFile(file) {
  return isCoreFile(file) || isPureStorageFile(file) || CORE_SHARED_FILES.includes(file);
}

function isSimFile(file) {
  return file.startsWith('src/sim/');
}

function inDirs(file, dirs) {
  return typeof file === 'string' && dirs.some((dir) => file.startsWith(dir));
}

function isLevelModule(name) {
  return name === 'level' || name === 'classic-level' || name.startsWith('level/') || name.startsWith('classic-level/');
}

/** Modules that do I/O a simulation (or the core) must never touch. */
function isIoModule(name) {
  const builtinIo = ['node:fs', 'node:net', 'node:tls', 'node:dgram', 'node:child_process', 'node:http', 'node:https', 'node:http2'];
  if (builtinIo.some((io) => name === io || name.startsWith(`${io}/`))) return true;
  if (name.startsWith('@grpc/') || name === 'pino' || name.startsWith('pino-') || name.startsWith('pino/')) return true;
  return isLevelModule(name);
}

const builtins = new Set(builtinModules);

/** 'fs' and 'node:fs' are the same module; name builtins one way. */
function normaliseExternal(specifier) {
  if (specifier.startsWith('node:')) return specifier;
  return builtins.has(specifier) ? `node:${specifier}` : specifier;
}

// ------------------------------------------------------------------ import statements

/** Tokens that may appear between `import`/`export` and `from` in a module declaration. */
function isClauseToken(token) {
  if (token.kind === 'word') return true;
  return token.kind === 'punct' && (token.value === ',' || token.value === '{' || token.value === '}' || token.value === '*');
}

/**
 * Finds `from '<specifier>'` after a clause starting at index `start`; returns the index of the
 * specifier string, or -1 when the tokens are not a module declaration.
 */
function findFrom(tokens, start) {
  const limit = Math.min(tokens.length, start + 2_000);
  for (let j = start; j < limit; j++) {
    const token = tokens[j];
    if (!isClauseToken(token)) return -1;
    if (token.kind === 'word' && token.value === 'from' && tokens[j + 1]?.kind === 'string') {
      // `import from from 'x'` and `import { from } from 'x'`: the last `from` before a string wins.
      return j + 1;
    }
  }
  return -1;
}

/** Every import and re-export of one file: { specifier, line, dynamic }. Type-only ones included. */
function parseImports(source) {
  const tokens = tokenize(source);
  const imports = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token.kind !== 'word' || (token.value !== 'import' && token.value !== 'export')) continue;
    const previous = tokens[i - 1];
    if (previous?.kind === 'punct' && previous.value === '.') continue; // obj.import
    const next = tokens[i + 1];
    if (next === undefined) continue;

    if (token.value === 'import') {
      if (next.kind === 'punct' && next.value === '(') {
        if (tokens[i + 2]?.kind === 'string' && tokens[i + 3]?.value === ')') {
          imports.push({ specifier: tokens[i + 2].value, line: token.line, dynamic: true });
        }
        continue;
      }
      if (next.kind === 'string') {
        imports.push({ specifier: next.value, line: token.line, dynamic: false });
        continue;
      }
      // import.meta, or `import` as a property name in an object literal.
      if (next.kind === 'punct' && next.value !== '{' && next.value !== '*') continue;
      // `import x = require('y')`
      if (tokens[i + 2]?.value === '=' && tokens[i + 3]?.value === 'require' && tokens[i + 5]?.kind === 'string') {
        imports.push({ specifier: tokens[i + 5].value, line: token.line, dynamic: false });
        continue;
      }
      const at = findFrom(tokens, i + 1);
      if (at === -1) continue;
      // `import type X from`, `import type { X } from`, `import type * as X from`: erased when compiled.
      const typeOnly = next.kind === 'word' && next.value === 'type' && tokens[i + 2]?.value !== 'from' && tokens[i + 2]?.value !== ',';
      imports.push({ specifier: tokens[at].value, line: token.line, dynamic: false, typeOnly });
      continue;
    }

    // export ... from, and export type ... from
    let j = i + 1;
    const typeOnly = tokens[j].kind === 'word' && tokens[j].value === 'type';
    if (typeOnly) j++;
    const opener = tokens[j];
    if (opener === undefined || opener.kind !== 'punct' || (opener.value !== '{' && opener.value !== '*')) continue;
    const at = findFrom(tokens, j);
    if (at === -1) continue;
    imports.push({ specifier: tokens[at].value, line: token.line, dynamic: false, typeOnly });
  }
  return imports;
}

// ------------------------------------------------------------------ files and resolution

/** Resolves a relative specifier the way NodeNext does for TypeScript sources ('./x.js' is ./x.ts). */
function resolveRelative(rootDir, fromFile, specifier) {
  const base = path.resolve(rootDir, path.dirname(fromFile), specifier);
  const candidates = [];
  const sourceExtensions = { '.js': '.ts', '.mjs': '.mts', '.cjs': '.cts', '.jsx': '.tsx' };
  const extension = path.extname(base);
  if (extension in sourceExtensions) candidates.push(base.slice(0, -extension.length) + sourceExtensions[extension]);
  candidates.push(base, `${base}.ts`, path.join(base, 'index.ts'));
  for (const candidate of candidates) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return toRelative(rootDir, candidate);
  }
  return undefined;
}

function isRelative(specifier) {
  return specifier.startsWith('./') || specifier.startsWith('../') || specifier === '.' || specifier === '..';
}

/** The graph: per file, its imports with `target` (a file) or `external` (a module name). */
function buildGraph(rootDir, files) {
  const graph = new Map();
  for (const file of files) {
    const source = readFileSync(path.join(rootDir, file), 'utf8');
    const edges = parseImports(source).map((entry) => {
      if (!isRelative(entry.specifier)) return { ...entry, external: normaliseExternal(entry.specifier) };
      return { ...entry, target: resolveRelative(rootDir, file, entry.specifier) ?? null };
    });
    graph.set(file, edges);
  }
  return graph;
}

// ------------------------------------------------------------------ cycles

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function findCycles(graph) {
  const neighbours = (file) => [...new Set(graph.get(file).filter((e) => !e.dynamic && graph.has(e.target)).map((e) => e.target))].sort();
  const indexOf = new Map();
  const lowLink = new Map();
  const onStack = new Set();
  const stack = [];
  const components = [];
  let counter = 0;

  for (const root of [...graph.keys()].sort()) {
    if (indexOf.has(root)) continue;
    // Iterative DFS, so a long import chain cannot overflow the call stack.
    const work = [{ file: root, next: 0, list: null }];
    while (work.length > 0) {
      const frame = work[work.length - 1];
      if (frame.list === null) {
        frame.list = neighbours(frame.file);
        indexOf.set(frame.file, counter);
        lowLink.set(frame.file, counter);
        counter++;
        stack.push(frame.file);
        onStack.add(frame.file);
      }
      if (frame.next < frame.list.length) {
        const target = frame.list[frame.next++];
        if (!indexOf.has(target)) work.push({ file: target, next: 0, list: null });
        else if (onStack.has(target)) lowLink.set(frame.file, Math.min(lowLink.get(frame.file), indexOf.get(target)));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) lowLink.set(parent.file, Math.min(lowLink.get(parent.file), lowLink.get(frame.file)));
      if (lowLink.get(frame.file) !== indexOf.get(frame.file)) continue;
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.file);
      const selfLoop = component.length === 1 && neighbours(component[0]).includes(component[0]);
      if (component.length > 1 || selfLoop) components.push(component.sort());
    }
  }
  return components.map((component) => shortestCycle(component, neighbours));
}

/** The shortest import chain from the component's first file back to itself (breadth first). */
function shortestCycle(component, neighbours) {
  const members = new Set(component);
  const start = component[0];
  const cameFrom = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift();
    for (const target of neighbours(file)) {
      if (!members.has(target)) continue;
      if (target === start) {
        const chain = [start];
        for (let at = file; at !== start; at = cameFrom.get(at)) chain.unshift(at);
        chain.unshift(start);
        return { chain, size: component.length };
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, file);
        queue.push(target);
      }
    }
  }
  throw new Error(`no cycle through ${start} in its component`);
}

// ------------------------------------------------------------------ rooms of src/node

/**
 * The zone of a src/node file: its room (the folder under src/node/), 'shared' (NODE_SHARED_FILES),
 * 'wiring' (any other top-level file), or `unknown:<folder>`; undefined outside src/node.
 */
function nodeZone(file) {
  if (typeof file !== 'string' || !file.startsWith('src/node/')) return undefined;
  const rest = file.slice('src/node/'.length);
  const slash = rest.indexOf('/');
  if (slash === -1) return NODE_SHARED_FILES.has(file) ? 'shared' : 'wiring';
  const room = rest.slice(0, slash);
  return Object.hasOwn(NODE_ROOMS, room) ? room : `unknown:${room}`;
}

function describeZone(zone) {
  return zone === 'shared' || zone === 'wiring' ? `the ${zone} top-level files` : `src/node/${zone}/`;
}

function roomRule(zone) {
  if (zone === 'shared') return 'the shared top-level files of src/node (config, ports, metrics, frames) may import only each other';
  const others = NODE_ROOMS[zone].map((other) => (other === 'shared' ? 'the shared top-level files' : `src/node/${other}/`));
  return `src/node/${zone}/ may import ${others.length === 0 ? 'no other room' : `only ${others.join(', ')}`} (the rooms of src/node, scripts/check-imports.mjs NODE_ROOMS)`;
}

/** The room table must point one way: a loop of rooms would make two rooms one. */
function checkRoomTable() {
  const state = new Map();
  const visit = (room, trail) => {
    if (state.get(room) === 'done') return;
    if (state.get(room) === 'open') throw new Error(`check-imports: NODE_ROOMS has a loop: ${[...trail, room].join(' -> ')}`);
    state.set(room, 'open');
    for (const next of NODE_ROOMS[room]) if (next !== 'shared') visit(next, [...trail, room]);
    state.set(room, 'done');
  };
  for (const room of Object.keys(NODE_ROOMS)) visit(room, []);
}

function checkRooms(graph) {
  const problems = [];
  for (const [file, edges] of graph) {
    const zone = nodeZone(file);
    if (zone === undefined || zone === 'wiring') continue;
    if (zone.startsWith('unknown:')) {
      problems.push(`room: ${file} is in src/node/${zone.slice('unknown:'.length)}/, which is no room of NODE_ROOMS (${Object.keys(NODE_ROOMS).join(', ')})`);
      continue;
    }
    for (const edge of edges) {
      const target = nodeZone(edge.target);
      if (target === undefined || target === zone || target.startsWith('unknown:')) continue;
      const allowed = zone === 'shared' ? false : NODE_ROOMS[zone].includes(target);
      if (allowed) continue;
      const excepted = NODE_ROOM_EXCEPTIONS.some((e) => e.from === file && e.to === edge.target && (!e.typeOnly || edge.typeOnly === true));
      if (excepted) continue;
      problems.push(`room: ${file}:${edge.line} imports '${edge.specifier}' (${edge.target}, ${describeZone(target)}): ${roomRule(zone)}`);
    }
  }
  return problems;
}

// ------------------------------------------------------------------ boundaries

function checkBoundaries(graph) {
  const problems = [];
  const describe = (edge) => (edge.external !== undefined ? `'${edge.specifier}'` : `'${edge.specifier}' (${edge.target})`);

  for (const [file, edges] of graph) {
    for (const edge of edges) {
      const where = `${file}:${edge.line}`;
      if (edge.target === null) {
        problems.push(`unresolved: ${where} imports '${edge.specifier}', which matches no file`);
        continue;
      }
      if (edge.external !== undefined && isLevelModule(edge.external) && file !== LEVEL_ENGINE) {
        problems.push(`boundary: ${where} imports ${describe(edge)}: ${LEVEL_RULE}`);
        continue;
      }
      if (isPureZoneFile(file)) {
        const allowed = edge.external !== undefined ? CORE_EXTERNALS.has(edge.external) : isPureZoneFile(edge.target);
        if (!allowed) problems.push(`boundary: ${where} imports ${describe(edge)}: ${CORE_RULE}`);
      } else if (isSimFile(file)) {
        const forbidden = edge.external !== undefined ? isIoModule(edge.external) : edge.target === LEVEL_ENGINE;
        if (forbidden) problems.push(`boundary: ${where} imports ${describe(edge)}: ${SIM_RULE}`);
      }
      if (inDirs(edge.target, [ENTRY_DIR]) && !inDirs(file, [ENTRY_DIR])) problems.push(`boundary: ${where} imports ${describe(edge)}: ${ENTRY_RULE}`);
      for (const layer of LAYER_RULES) {
        if (inDirs(file, layer.from) && inDirs(edge.target, layer.forbidden)) problems.push(`boundary: ${where} imports ${describe(edge)}: ${layer.rule}`);
      }
    }
  }
  problems.push(...checkSimReach(graph));
  for (const layer of LAYER_RULES) problems.push(...checkLayerReach(graph, layer));
  return problems;
}

/**
 * What a file of a layer rule reaches through other src files: a node file importing a helper
 * (tenancy, txn, ...) that imports src/server brings the upward arrow back. Direct imports are
 * reported above; a path through another file of the same layer is reported at that file.
 */
function checkLayerReach(graph, layer) {
  const problems = [];
  for (const file of [...graph.keys()].filter((candidate) => inDirs(candidate, layer.from))) {
    const cameFrom = new Map([[file, null]]);
    const queue = [file];
    const reported = new Set();
    for (let head = 0; head < queue.length; head++) {
      const current = queue[head];
      for (const edge of graph.get(current)) {
        if (!edge.target || !graph.has(edge.target) || cameFrom.has(edge.target)) continue;
        if (inDirs(edge.target, layer.forbidden)) {
          if (current === file || reported.has(edge.target)) continue;
          reported.add(edge.target);
          const chain = [edge.target];
          for (let at = current; at !== null; at = cameFrom.get(at)) chain.unshift(at);
          problems.push(`boundary: ${file} reaches '${edge.target}' through ${chain.join(' -> ')}: ${layer.rule}`);
          continue;
        }
        // Other files of the layer are checked on their own; following them would report one path many times.
        if (inDirs(edge.target, layer.from)) continue;
        cameFrom.set(edge.target, current);
        queue.push(edge.target);
      }
    }
  }
  return problems;
}

/**
 * What a sim file reaches through other src files: a sim file importing a harmless-looking module
 * that opens sockets is as bad as opening them itself. Direct imports are reported above.
 */
function checkSimReach(graph) {
  const problems = [];
  for (const file of [...graph.keys()].filter(isSimFile)) {
    const cameFrom = new Map([[file, null]]);
    const queue = [file];
    const reported = new Set();
    // The whole-node simulator follows only the imports that load at run time (see the rules above).
    const runTimeOnly = file.startsWith('src/sim/node/') || file === 'src/sim/node-cli.ts';
    while (queue.length > 0) {
      const current = queue.shift();
      for (const edge of graph.get(current)) {
        if (runTimeOnly && current !== file && (edge.typeOnly === true || edge.dynamic === true)) continue;
        if (runTimeOnly && SIM_NODE_FILE_ACCESS_EXEMPT.has(current) && edge.external === 'node:fs') continue;
        const bad = edge.external !== undefined ? isIoModule(edge.external) : edge.target === LEVEL_ENGINE;
        if (bad) {
          // A forbidden module is a dead end: reported once, its own imports add nothing.
          const name = edge.external ?? edge.target;
          if (current === file || reported.has(name)) continue;
          reported.add(name);
          const chain = [name];
          for (let at = current; at !== null; at = cameFrom.get(at)) chain.unshift(at);
          problems.push(`boundary: ${file} reaches '${name}' through ${chain.join(' -> ')}: ${SIM_RULE}`);
          continue;
        }
        if (edge.target && graph.has(edge.target) && !cameFrom.has(edge.target)) {
          cameFrom.set(edge.target, current);
          queue.push(edge.target);
        }
      }
    }
  }
  return problems;
}

// ------------------------------------------------------------------ main

function main() {
  const scriptDir = path.dirname(fileURLToPath(import.meta.url));
  const rootDir = path.resolve(process.argv[2] ?? path.join(scriptDir, '..'));
  const files = listSourceFiles(rootDir);
  if (files === undefined) {
    console.error(`check-imports: no src/ directory under ${rootDir}`);
    return 1;
  }
  checkRoomTable();
  const graph = buildGraph(rootDir, files);
  const cycles = findCycles(graph);
  const problems = [
    ...cycles.map(({ chain, size }) => {
      const more = size > chain.length - 1 ? ` (one of the cycles among ${size} files)` : '';
      return `cycle: ${chain.join(' -> ')}${more}`;
    }),
    ...checkBoundaries(graph),
    ...checkRooms(graph),
  ];
  if (problems.length === 0) {
    console.log(`check-imports: ${files.length} files, no cycles, boundaries ok`);
    return 0;
  }
  for (const problem of problems) console.error(problem);
  console.error(`check-imports: ${files.length} files, ${problems.length} problem${problems.length === 1 ? '' : 's'}`);
  return 1;
}

process.exitCode = main();
