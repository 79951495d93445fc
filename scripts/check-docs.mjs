#!/usr/bin/env node
/**
 * Checks that docs/architecture.md names only things that exist, with plain Node and no
 * dependencies (issue 34: the map must not drift from the code):
 *
 * 1. Paths. Every repository path it names, in backticks, as a link target or in plain prose
 *    (`src/node/replica/raft-driver.ts`, [testing](testing.md), test/..., scripts/..., docs/..., proto/...),
 *    must exist; a path ending in `/` must be a directory. Link targets are relative to the
 *    document, the rest to the repository. Globs and elisions (`src/**\/*.ts`, `test/...`) are not
 *    checked. A backticked bare file name (`raft-driver.ts`) must name some file of the repository.
 * 2. Symbols. Every backticked code symbol must be declared in src/**\/*.ts:
 *    - `Name.member()` or `Name.member`, Name in CamelCase or capitals (`KV`): Name is a class,
 *      interface, type, enum, function or const of src/, and when it is a class, an interface or
 *      `const Name = { ... }`, it (or a class or interface it extends or implements) declares the
 *      member; otherwise some body of src/ declares a member of that name. `Service.Rpc` may
 *      instead name an rpc of a service in proto/**\/*.proto (`KV.Put`, `Peer.Forward`).
 *    - `functionName()` or `functionName(args)` (simple arguments, no nested calls): a function,
 *      method, property or const of that name.
 *    - `ClassName` (CamelCase: a capital, then lower case somewhere): a class, interface, type,
 *      enum, function, const or namespace of src/, or a message, enum, service or rpc of proto/.
 *    - `fieldName` (lower camelCase: a capital after the first letter): a field, option, variable
 *      or message type is not always a declaration of its own (`{ needsKeysOnBothSides: true }`,
 *      `type: 'readIndexResp'`), so it need only occur in src/'s code, as a name or a string.
 *    JavaScript's own names (`setInterval()`, `AbortSignal`) pass.
 *    Flags (`--read-mode`), CLI commands (`atoll cluster split P`), constants and codes in capitals
 *    (`NOT_LEADER`), expressions, file names and plain words are not symbols.
 *    In fenced code blocks (diagrams), `Name.member(` is checked the same way.
 *
 * Usage: node scripts/check-docs.mjs [rootDir]   (rootDir holds docs/architecture.md and src/;
 *   default: the repository)
 * Prints `check-docs: docs/architecture.md names N paths and M symbols, all exist` and exits 0, or
 * lists every problem and exits 1.
 *
 * Declarations are found on the token stream of scripts/lib/ts-source.mjs (comments and strings
 * skipped): `class`, `interface`, `type`, `enum`, `namespace`, `function`, `const`, `let`, `var`
 * followed by a name, and the members of class and interface bodies and of `const X = { ... }`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findClasses, findInterfaces, listSourceFiles, matchingClose, tokenize } from './lib/ts-source.mjs';

/** The documents checked, relative to the root. */
const DOCS = ['docs/architecture.md'];
/** The first segments of the repository paths a document may name. */
const PATH_ROOTS = ['src', 'test', 'scripts', 'docs', 'proto', 'deploy', '.ci'];
/** Directories never searched for a bare file name. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.git']);
/** The upper bound on files walked for bare file names, so a wrong root fails fast. */
const MAX_FILES = 50_000;

const IDENTIFIER = '[A-Za-z_$][\\w$]*';
const CAMEL_CASE = /^[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*$/;
const LOWER_CAMEL_CASE = /^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/;
/** What may own a member: a CamelCase name or an acronym (`KV.Put`), not `NOT_LEADER` or `this`. */
const OWNER = /^[A-Z][A-Za-z0-9]*$/;
const MEMBER_REF = new RegExp(`^(${IDENTIFIER})\\.(${IDENTIFIER})(\\(([^()]*)\\))?$`);
const CALL_REF = new RegExp(`^(${IDENTIFIER})\\(([^()]*)\\)$`);
const FENCED_MEMBER_REF = new RegExp(`\\b([A-Z][\\w$]*)\\.(${IDENTIFIER})\\(`, 'g');
const PATH_IN_PROSE = new RegExp(`(?<![\\w./-])(?:${PATH_ROOTS.map((root) => root.replace('.', '\\.')).join('|')})/[\\w.@/-]*`, 'g');
const FILE_NAME = /^[\w.-]+\.(ts|mts|mjs|cjs|js|json|md|proto|sh|yml|yaml)$/;

// ------------------------------------------------------------------ declarations in src/

const MODIFIERS = new Set(['public', 'private', 'protected', 'static', 'readonly', 'async', 'get', 'set', 'override', 'abstract', 'declare', 'accessor']);
const MEMBER_FOLLOWERS = new Set(['(', '<', ':', '?', '=', '!', ';']);
const OPENERS = new Set(['{', '(', '[']);
const CLOSERS = new Set(['}', ')', ']']);

/** The names declared at the top level of a body between two braces (members, properties, methods). */
function bodyMembers(tokens, open, close) {
  const members = new Set();
  let depth = 0;
  for (let j = open + 1; j < close; j++) {
    const token = tokens[j];
    if (token.kind === 'punct') {
      if (OPENERS.has(token.value)) depth++;
      else if (CLOSERS.has(token.value)) depth--;
      continue;
    }
    if (depth !== 0 || token.kind !== 'word') continue;
    const next = tokens[j + 1];
    if (next?.kind !== 'punct' || !MEMBER_FOLLOWERS.has(next.value)) continue;
    const previous = tokens[j - 1];
    const startsMember =
      j === open + 1 ||
      previous.line < token.line ||
      (previous.kind === 'punct' && (previous.value === ';' || previous.value === '}' || previous.value === ',' || previous.value === '*')) ||
      (previous.kind === 'word' && MODIFIERS.has(previous.value));
    if (startsMember) members.add(token.value);
  }
  return members;
}

/**
 * Everything src/ declares: `names` (top-level and local declarations), `bodies` (name -> list of
 * { kind, members, heritage } for classes, interfaces and object-literal consts), `anyMember`
 * (every member name of every body) and `used` (every name and string its code holds).
 */
function collectDeclarations(rootDir, files) {
  const names = new Map(); // name -> set of kinds
  const bodies = new Map();
  const anyMember = new Set();
  const used = new Set();
  const declare = (name, kind) => {
    if (!names.has(name)) names.set(name, new Set());
    names.get(name).add(kind);
  };
  const addBody = (name, body) => {
    if (!bodies.has(name)) bodies.set(name, []);
    bodies.get(name).push(body);
    for (const member of body.members) anyMember.add(member);
  };

  for (const file of files) {
    const tokens = tokenize(readFileSync(path.join(rootDir, file), 'utf8'));
    for (const token of tokens) if (token.kind === 'word' || token.kind === 'string') used.add(token.value);
    for (const [kind, found] of [['class', findClasses(tokens)], ['interface', findInterfaces(tokens)]]) {
      for (const body of found) {
        if (body.close === -1) continue;
        declare(body.name, kind);
        addBody(body.name, { kind, members: bodyMembers(tokens, body.open, body.close), heritage: body.heritage });
      }
    }
    for (let i = 0; i < tokens.length - 1; i++) {
      const token = tokens[i];
      if (token.kind !== 'word') continue;
      const previous = tokens[i - 1];
      if (previous?.kind === 'punct' && previous.value === '.') continue;
      let at = i + 1;
      if (token.value === 'function' && tokens[at]?.value === '*') at++;
      const name = tokens[at];
      if (name?.kind !== 'word') continue;
      const after = tokens[at + 1];
      switch (token.value) {
        case 'enum':
        case 'namespace':
        case 'module':
        case 'function':
          declare(name.value, token.value);
          break;
        case 'type':
          if (after?.kind === 'punct' && (after.value === '=' || after.value === '<')) declare(name.value, 'type');
          break;
        case 'const':
        case 'let':
        case 'var': {
          declare(name.value, token.value);
          const open = objectLiteralAfter(tokens, at + 1);
          if (open !== -1) {
            const close = matchingClose(tokens, open);
            if (close !== -1) addBody(name.value, { kind: 'object', members: bodyMembers(tokens, open, close), heritage: [] });
          }
          break;
        }
      }
    }
  }
  return { names, bodies, anyMember, used };
}

/** For `const X = {` or `const X: T = {`: the index of the `{`, or -1. */
function objectLiteralAfter(tokens, from) {
  let angle = 0;
  for (let j = from; j < tokens.length && j < from + 200; j++) {
    const token = tokens[j];
    if (token.kind !== 'punct') continue;
    if (token.value === '<') angle++;
    else if (token.value === '>' && tokens[j - 1]?.value !== '=') angle--;
    else if (token.value === '=' && angle <= 0) return tokens[j + 1]?.kind === 'punct' && tokens[j + 1].value === '{' ? j + 1 : -1;
    else if (token.value === ';' || token.value === ',' || token.value === ')' || (token.value === '{' && angle <= 0)) return -1;
    else if (OPENERS.has(token.value)) {
      const close = matchingClose(tokens, j);
      if (close === -1) return -1;
      j = close;
    }
  }
  return -1;
}

/** Whether a body named `name`, or one it extends or implements, declares `member`. */
function declaresMember(declarations, name, member, seen = new Set()) {
  if (seen.has(name)) return false;
  seen.add(name);
  for (const body of declarations.bodies.get(name) ?? []) {
    if (body.members.has(member)) return true;
    for (const parent of body.heritage) if (declaresMember(declarations, parent, member, seen)) return true;
  }
  return false;
}

// ------------------------------------------------------------------ proto names

/** Services (name -> rpc names) and messages and enums of proto/**\/*.proto under the root. */
function collectProto(rootDir) {
  const services = new Map();
  const types = new Set();
  for (const file of walk(rootDir, 'proto').filter((f) => f.endsWith('.proto'))) {
    const text = readFileSync(path.join(rootDir, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    for (const match of text.matchAll(/\b(message|enum)\s+(\w+)/g)) types.add(match[2]);
    for (const match of text.matchAll(/\bservice\s+(\w+)\s*\{([^}]*)\}/g)) {
      // Two packages may name a service alike (atoll.v1.KV, etcdserverpb.KV): their rpcs add up.
      const rpcs = [...match[2].matchAll(/\brpc\s+(\w+)/g)].map((rpc) => rpc[1]);
      services.set(match[1], new Set([...(services.get(match[1]) ?? []), ...rpcs]));
    }
  }
  return { services, types };
}

/** Files under rootDir/dir (relative to rootDir), skipping dependency and build directories. */
function walk(rootDir, dir) {
  const start = path.join(rootDir, dir);
  if (!existsSync(start)) return [];
  const files = [];
  const pending = [start];
  while (pending.length > 0) {
    const current = pending.pop();
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      if (SKIPPED_DIRS.has(entry.name)) continue;
      const full = path.join(current, entry.name);
      // A symbolic link counts as what it points to (MAX_FILES bounds a link cycle).
      const target = entry.isSymbolicLink() && existsSync(full) ? statSync(full) : entry;
      if (target.isDirectory()) pending.push(full);
      else if (target.isFile()) files.push(path.relative(rootDir, full).split(path.sep).join('/'));
      if (files.length > MAX_FILES) throw new Error(`more than ${MAX_FILES} files under ${start}: wrong root?`);
    }
  }
  return files;
}

// ------------------------------------------------------------------ what a document names

/**
 * The references of one markdown document: { kind: 'path' | 'link' | 'file' | 'symbol' |
 * 'fenced-member', text, line }.
 */
function referencesOf(markdown) {
  const references = [];
  let fence;
  markdown.split('\n').forEach((text, index) => {
    const line = index + 1;
    const fenceMark = /^\s*(```+|~~~+)/.exec(text);
    if (fenceMark !== null) {
      if (fence === undefined) fence = fenceMark[1];
      else if (fenceMark[1].startsWith(fence)) fence = undefined;
      return;
    }
    if (fence !== undefined) {
      for (const match of text.matchAll(FENCED_MEMBER_REF)) references.push({ kind: 'fenced-member', text: `${match[1]}.${match[2]}()`, line });
      return;
    }
    // Code spans first (a path or a bracket inside one is not prose), then links and prose paths.
    const prose = text.replace(/(`+)(.+?)\1/g, (_whole, _ticks, code) => {
      const span = code.trim();
      if (looksLikePath(span)) references.push({ kind: 'path', text: span, line });
      else if (FILE_NAME.test(span)) references.push({ kind: 'file', text: span, line });
      else if (isSymbol(span)) references.push({ kind: 'symbol', text: span, line });
      return ' ';
    });
    for (const match of prose.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1];
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('#')) references.push({ kind: 'link', text: target, line });
    }
    const withoutLinks = prose.replace(/\]\([^)]*\)/g, ' ');
    for (const match of withoutLinks.matchAll(PATH_IN_PROSE)) {
      const after = withoutLinks[match.index + match[0].length];
      if (match[0].includes('...') || after === '*') continue; // `test/...`, src/**: elisions and globs
      references.push({ kind: 'path', text: match[0].replace(/[.,;:]+$/, ''), line });
    }
  });
  return references;
}

/** A repository path to check: globs (`src/**\/*.ts`) and elisions (`test/...`) are not. */
function looksLikePath(span) {
  const root = span.split('/')[0];
  return span.includes('/') && PATH_ROOTS.includes(root) && /^[\w.@/-]+(:\d+)?$/.test(span) && !span.includes('...');
}

function isSymbol(span) {
  const member = MEMBER_REF.exec(span);
  if (member !== null) return OWNER.test(member[1]) && isSimpleArguments(member[4]);
  const call = CALL_REF.exec(span);
  if (call !== null) return isSimpleArguments(call[2]);
  return CAMEL_CASE.test(span) || LOWER_CAMEL_CASE.test(span);
}

/**
 * Arguments a symbol reference may show: comma-separated names, numbers and strings
 * (`advance(ready)`, `deleteOps(R, keepStateMachine)`); prose inside parentheses
 * (`max(node clock, partition clock)`) makes the span an expression, not a symbol.
 */
function isSimpleArguments(text) {
  return text === undefined || text.trim() === '' || text.split(',').every((argument) => /^\s*[\w$.'"]+\s*$/.test(argument));
}

// ------------------------------------------------------------------ checking

/** JavaScript's own names (`import()`, `setInterval()`, `AbortSignal`): not src/'s to declare. */
function isPlatformName(name) {
  return name === 'import' || name in globalThis;
}

function checkPath(rootDir, docFile, reference) {
  const target = reference.text.replace(/#.*$/, '').replace(/:\d+$/, '');
  if (target === '') return undefined;
  const base = reference.kind === 'link' ? path.dirname(path.join(rootDir, docFile)) : rootDir;
  const full = path.resolve(base, decodeURI(target));
  const wantsDirectory = target.endsWith('/');
  if (!existsSync(full)) return 'does not exist';
  if (wantsDirectory && !statSync(full).isDirectory()) return 'is not a directory';
  return undefined;
}

function checkSymbol(declarations, proto, reference) {
  const { text } = reference;
  const member = MEMBER_REF.exec(text);
  if (member !== null) {
    const [, owner, name] = member;
    if (proto.services.has(owner) && proto.services.get(owner).has(name)) return undefined;
    const kinds = declarations.names.get(owner);
    if (kinds === undefined) {
      return proto.services.has(owner) ? `service ${owner} has no rpc ${name} in proto/` : `src/ declares no ${owner}`;
    }
    const scoped = declarations.bodies.has(owner);
    if (scoped ? declaresMember(declarations, owner, name) : declarations.anyMember.has(name) || declarations.names.has(name)) return undefined;
    return scoped ? `${owner} (and what it extends) declares no ${name}` : `src/ declares no ${name}`;
  }
  const call = CALL_REF.exec(text);
  if (call !== null) {
    const name = call[1];
    if (declarations.names.has(name) || declarations.anyMember.has(name) || isPlatformName(name)) return undefined;
    return `src/ declares no function or method ${name}`;
  }
  if (declarations.names.has(text) || isPlatformName(text)) return undefined;
  if (LOWER_CAMEL_CASE.test(text)) return declarations.used.has(text) ? undefined : `src/'s code never names ${text} (as a name or a string)`;
  if (proto.types.has(text) || proto.services.has(text) || [...proto.services.values()].some((rpcs) => rpcs.has(text))) return undefined;
  return `src/ declares no ${text} (and proto/ has no such message, service or rpc)`;
}

function main() {
  const scriptDir = path.dirname(fileURLToPath(import.meta.url));
  const rootDir = path.resolve(process.argv[2] ?? path.join(scriptDir, '..'));
  const files = listSourceFiles(rootDir);
  if (files === undefined) {
    console.error(`check-docs: no src/ directory under ${rootDir}`);
    return 1;
  }
  const declarations = collectDeclarations(rootDir, files);
  const proto = collectProto(rootDir);
  let fileNames;
  const problems = [];
  const counts = { paths: 0, symbols: 0 };

  for (const docFile of DOCS) {
    const at = path.join(rootDir, docFile);
    if (!existsSync(at)) {
      problems.push(`missing document: ${docFile}`);
      continue;
    }
    for (const reference of referencesOf(readFileSync(at, 'utf8'))) {
      const where = `${docFile}:${reference.line}`;
      if (reference.kind === 'path' || reference.kind === 'link') {
        counts.paths++;
        const problem = checkPath(rootDir, docFile, reference);
        if (problem !== undefined) problems.push(`missing path: ${where} names ${reference.text}, which ${problem}`);
      } else if (reference.kind === 'file') {
        counts.paths++;
        fileNames ??= new Set(walk(rootDir, '.').map((file) => file.split('/').pop()));
        if (!fileNames.has(reference.text)) problems.push(`missing path: ${where} names the file ${reference.text}, which no file of the repository is called`);
      } else {
        counts.symbols++;
        const problem = checkSymbol(declarations, proto, reference);
        if (problem !== undefined) problems.push(`missing symbol: ${where} names \`${reference.text}\`: ${problem}`);
      }
    }
  }

  const docs = DOCS.join(', ');
  if (problems.length === 0) {
    console.log(`check-docs: ${docs} names ${counts.paths} paths and ${counts.symbols} symbols, all exist`);
    return 0;
  }
  for (const problem of problems) console.error(problem);
  console.error(`check-docs: ${docs}, ${problems.length} problem${problems.length === 1 ? '' : 's'}`);
  return 1;
}

process.exitCode = main();
