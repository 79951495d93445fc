/**
 * What the scripts/check-*.mjs checkers share, with plain Node and no dependencies: the list of
 * src/**\/*.ts files under a root, and a small TypeScript tokenizer.
 *
 * The tokenizer skips comments, strings, template literals and regular expressions, so text inside
 * them (an import-like line, a brace, the word `class`) is never read as code. It is not a parser:
 * the checkers recognise what they need on the token stream.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** The upper bound on files, so a wrong root (a home directory) fails fast instead of crawling. */
const MAX_FILES = 20_000;

// ------------------------------------------------------------------ files

/** src/**\/*.ts under rootDir as sorted '/'-separated relative paths, or undefined without src/. */
export function listSourceFiles(rootDir) {
  const srcDir = path.join(rootDir, 'src');
  if (!existsSync(srcDir) || !statSync(srcDir).isDirectory()) return undefined;
  const files = [];
  const pending = [srcDir];
  while (pending.length > 0) {
    const dir = pending.pop();
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) pending.push(full);
      else if (entry.isFile() && entry.name.endsWith('.ts')) files.push(toRelative(rootDir, full));
      if (files.length > MAX_FILES) throw new Error(`more than ${MAX_FILES} files under ${srcDir}: wrong root?`);
    }
  }
  return files.sort();
}

export function toRelative(rootDir, absolute) {
  return path.relative(rootDir, absolute).split(path.sep).join('/');
}

// ------------------------------------------------------------------ tokenizer

const valueEndingWords = new Set(['this', 'super', 'null', 'true', 'false', 'undefined']);
const wordStart = /[A-Za-z_$\u00a0-\uffff]/;
const wordPart = /[\w$\u00a0-\uffff]/;

/** Words after which a `/` starts a regular expression, not a division. */
const keywords = new Set([
  'return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else',
  'yield', 'await', 'extends', 'keyof', 'export', 'import', 'default', 'as', 'satisfies',
]);

/**
 * Splits TypeScript source into tokens { kind, value, line }: 'word', 'string' (value: its text),
 * 'template', 'regex', 'number' and 'punct' (one character each), dropping comments and
 * whitespace. Template literals become one 'template' token at their start (their `${}`
 * expressions are tokenized as code, and the braces of `${` `}` are not tokens); regular
 * expression literals become one 'regex' token. `line` is 1-based, the line the token starts on.
 */
export function tokenize(source) {
  const tokens = [];
  const braces = []; // 'code' for `{`, 'template' for the `${` that opened a template expression
  let line = 1;
  let i = 0;
  const push = (kind, value) => tokens.push({ kind, value, line });

  const previousEndsValue = () => {
    const previous = tokens[tokens.length - 1];
    if (previous === undefined) return false;
    if (previous.kind === 'string' || previous.kind === 'template' || previous.kind === 'regex' || previous.kind === 'number') return true;
    if (previous.kind === 'word') return valueEndingWords.has(previous.value) || !keywords.has(previous.value);
    return previous.value === ')' || previous.value === ']' || previous.value === '}';
  };

  /** Skips a backslash escape at i, counting the line it may continue. */
  const skipEscape = () => {
    if (source[i + 1] === '\n') line++;
    i += 2;
  };

  /** Scans template text from i (just after ` or a closing } of ${}) to its end or the next ${. */
  const scanTemplate = () => {
    while (i < source.length) {
      const char = source[i];
      if (char === '\\') {
        skipEscape();
        continue;
      }
      if (char === '\n') line++;
      if (char === '`') {
        i++;
        return;
      }
      if (char === '$' && source[i + 1] === '{') {
        i += 2;
        braces.push('template');
        return;
      }
      i++;
    }
  };

  while (i < source.length) {
    const char = source[i];
    const next = source[i + 1];
    if (char === '\n') {
      line++;
      i++;
    } else if (/\s/.test(char)) {
      i++;
    } else if (char === '/' && next === '/') {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (char === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      for (let k = i; k < stop; k++) if (source[k] === '\n') line++;
      i = stop;
    } else if (char === "'" || char === '"') {
      const startLine = line;
      let value = '';
      i++;
      while (i < source.length && source[i] !== char && source[i] !== '\n') {
        if (source[i] === '\\') {
          value += source[i + 1] ?? '';
          skipEscape();
        } else {
          value += source[i++];
        }
      }
      i++;
      tokens.push({ kind: 'string', value, line: startLine });
    } else if (char === '`') {
      push('template', '`');
      i++;
      scanTemplate();
    } else if (char === '{') {
      braces.push('code');
      push('punct', char);
      i++;
    } else if (char === '}') {
      const opener = braces.pop();
      i++;
      if (opener === 'template') {
        scanTemplate();
        // The whole template reads as one value, already pushed at its start.
      } else {
        push('punct', char);
      }
    } else if (char === '/' && !previousEndsValue()) {
      // A regular expression literal: skip to the closing slash outside a character class.
      let inClass = false;
      i++;
      while (i < source.length && source[i] !== '\n') {
        const c = source[i];
        if (c === '\\') {
          i += 2;
          continue;
        }
        i++;
        if (c === '[') inClass = true;
        else if (c === ']') inClass = false;
        else if (c === '/' && !inClass) break;
      }
      while (i < source.length && wordPart.test(source[i])) i++;
      push('regex', '/');
    } else if (/[0-9]/.test(char)) {
      while (i < source.length && /[\w.]/.test(source[i])) i++;
      push('number', '0');
    } else if (wordStart.test(char)) {
      let value = '';
      while (i < source.length && wordPart.test(source[i])) value += source[i++];
      push('word', value);
    } else {
      push('punct', char);
      i++;
    }
  }
  return tokens;
}

/**
 * The index of the token that closes the bracket opened at tokens[open] (`{`, `(` or `[`), or -1
 * when the source ends first. Other bracket kinds inside are not matched, only counted through.
 */
export function matchingClose(tokens, open) {
  const opener = tokens[open].value;
  const closer = { '{': '}', '(': ')', '[': ']' }[opener];
  let depth = 0;
  for (let j = open; j < tokens.length; j++) {
    const token = tokens[j];
    if (token.kind !== 'punct') continue;
    if (token.value === opener) depth++;
    else if (token.value === closer && --depth === 0) return j;
  }
  return -1;
}

/**
 * Class declarations and expressions: { name, line, open, close, endLine, heritage } where open
 * and close are the token indexes of the body's braces (close -1 when unclosed), name is
 * '(anonymous)' for `class {` and `class extends X {`, and heritage lists the words of its
 * `extends`/`implements` clauses that start a type name.
 */
export function findClasses(tokens) {
  return findBodies(tokens, 'class');
}

/** Interface declarations, in the same shape as findClasses. */
export function findInterfaces(tokens) {
  return findBodies(tokens, 'interface');
}

function findBodies(tokens, keyword) {
  const found = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token.kind !== 'word' || token.value !== keyword) continue;
    const previous = tokens[i - 1];
    if (previous?.kind === 'punct' && (previous.value === '.' || previous.value === '?')) continue; // x.class, x?.class
    const next = tokens[i + 1];
    if (next === undefined) continue;
    // `class: 1`, `{ class }`, `class?: string`: a property named class, not a declaration.
    const named = next.kind === 'word' && next.value !== 'extends' && next.value !== 'implements';
    if (!(next.kind === 'word' || (keyword === 'class' && next.kind === 'punct' && next.value === '{'))) continue;
    const open = findBodyOpen(tokens, named ? i + 2 : i + 1);
    if (open === -1) continue;
    const close = matchingClose(tokens, open);
    found.push({
      name: named ? next.value : '(anonymous)',
      line: token.line,
      open,
      close,
      endLine: close === -1 ? tokens[tokens.length - 1].line : tokens[close].line,
      heritage: heritageNames(tokens, i + 1, open),
    });
  }
  return found;
}

/**
 * The `{` that opens a class or interface body, searching from `start` (after the name): the
 * first `{` outside the type parameters and heritage clauses' own brackets (`<T extends { a: 1 }>`,
 * `extends mixin(Base, { b: 2 })`). -1 when the tokens are not a declaration after all.
 */
function findBodyOpen(tokens, start) {
  let angle = 0;
  for (let j = start; j < tokens.length && j < start + 10_000; j++) {
    const token = tokens[j];
    if (token.kind !== 'punct') continue;
    if (token.value === '<') angle++;
    else if (token.value === '>' && tokens[j - 1]?.value !== '=') angle = Math.max(0, angle - 1);
    else if (token.value === '(' || token.value === '[' || (token.value === '{' && angle > 0)) {
      const close = matchingClose(tokens, j);
      if (close === -1) return -1;
      j = close;
    } else if (token.value === '{') return j;
    else if (token.value === ';' || token.value === '}' || token.value === ')') return -1;
  }
  return -1;
}

/** The type names named after `extends` and `implements` between two token indexes. */
function heritageNames(tokens, from, to) {
  const names = [];
  let inHeritage = false;
  let angle = 0;
  for (let j = from; j < to; j++) {
    const token = tokens[j];
    if (token.kind === 'word' && (token.value === 'extends' || token.value === 'implements') && angle === 0) {
      inHeritage = true;
      continue;
    }
    if (token.kind === 'punct' && token.value === '<') angle++;
    if (token.kind === 'punct' && token.value === '>' && tokens[j - 1]?.value !== '=') angle = Math.max(0, angle - 1);
    if (!inHeritage || angle > 0 || token.kind !== 'word') continue;
    const previous = tokens[j - 1];
    if (previous?.kind === 'punct' && previous.value === '.') continue; // ns.Base: the last part names it
    const after = tokens[j + 1];
    if (after?.kind === 'punct' && after.value === '.') continue;
    names.push(token.value);
  }
  return names;
}
