#!/usr/bin/env node
/**
 * Checks the size of src/**\/*.ts, with plain Node and no dependencies (issue 34):
 *
 * 1. No file is longer than 700 lines.
 * 2. No class is longer than 400 lines, counted from the line of its `class` keyword to the line of
 *    its closing brace, both included. Anonymous classes count too, as '(anonymous)'.
 *
 * A file or class over its limit is allowed only by an entry of scripts/size-exceptions.json:
 *
 *   { "file": "src/x/y.ts", "class": "Name", "lines": 812, "reason": "...", "date": "2026-12-07" }
 *
 * ("class" absent for a file exception). `lines` is the most it may have: the count when the
 * exception was granted, so it cannot grow. `reason` says what the code holds and why it is still
 * big (one sentence); `date` is the day the exception was granted (YYYY-MM-DD). An exception whose
 * file or class is gone, or back within the limit, is reported as stale, so the list only shrinks.
 * A class exception names one class; two classes of one name in one file share it.
 *
 * Usage: node scripts/check-sizes.mjs [rootDir]   (rootDir holds src/ and
 *   scripts/size-exceptions.json, which may be absent; default: the repository)
 * Prints `check-sizes: N files, M classes, within limits (K exceptions)` and exits 0, or lists every
 * problem and exits 1.
 *
 * Parsing: the tokenizer of scripts/lib/ts-source.mjs skips comments, strings, template literals and
 * regular expressions, so a brace or the word `class` inside them is never counted.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findClasses, listSourceFiles, tokenize } from './lib/ts-source.mjs';

const MAX_FILE_LINES = 700;
const MAX_CLASS_LINES = 400;
const EXCEPTIONS_FILE = 'scripts/size-exceptions.json';
const ENTRY_KEYS = new Set(['file', 'class', 'lines', 'reason', 'date']);

/** Lines as an editor numbers them: a final newline does not start another line. */
function countLines(text) {
  if (text.length === 0) return 0;
  const newlines = text.split('\n').length - 1;
  return text.endsWith('\n') ? newlines : newlines + 1;
}

/** Every file and class over its limit: { file, className?, line?, lines, limit }. */
function measure(rootDir, files) {
  const over = [];
  let classCount = 0;
  for (const file of files) {
    const source = readFileSync(path.join(rootDir, file), 'utf8');
    const lines = countLines(source);
    if (lines > MAX_FILE_LINES) over.push({ file, lines, limit: MAX_FILE_LINES });
    for (const found of findClasses(tokenize(source))) {
      classCount++;
      const classLines = found.endLine - found.line + 1;
      if (classLines > MAX_CLASS_LINES) over.push({ file, className: found.name, line: found.line, lines: classLines, limit: MAX_CLASS_LINES });
    }
  }
  return { over, classCount };
}

/** Every class in a file by name, for telling a stale class exception from a missing class. */
function classLengths(rootDir, file) {
  const lengths = new Map();
  const source = readFileSync(path.join(rootDir, file), 'utf8');
  for (const found of findClasses(tokenize(source))) {
    lengths.set(found.name, Math.max(lengths.get(found.name) ?? 0, found.endLine - found.line + 1));
  }
  return lengths;
}

/** The exceptions file's entries, or problems when it is not a valid list. */
function readExceptions(rootDir) {
  const at = path.join(rootDir, EXCEPTIONS_FILE);
  if (!existsSync(at)) return { entries: [], problems: [] };
  let parsed;
  try {
    parsed = JSON.parse(readFileSync(at, 'utf8'));
  } catch (error) {
    return { entries: [], problems: [`bad exception list: ${EXCEPTIONS_FILE} is not JSON (${error.message})`] };
  }
  const list = Array.isArray(parsed) ? parsed : parsed?.exceptions;
  if (!Array.isArray(list)) return { entries: [], problems: [`bad exception list: ${EXCEPTIONS_FILE} must hold { "exceptions": [...] }`] };
  const entries = [];
  const problems = [];
  const seen = new Set();
  list.forEach((entry, index) => {
    const where = `${EXCEPTIONS_FILE} entry ${index + 1}`;
    const wrong = [];
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      problems.push(`bad exception: ${where} is not an object`);
      return;
    }
    for (const key of Object.keys(entry)) if (!ENTRY_KEYS.has(key)) wrong.push(`unknown field "${key}"`);
    if (typeof entry.file !== 'string' || !entry.file.startsWith('src/') || !entry.file.endsWith('.ts')) wrong.push('"file" must be a src/**/*.ts path');
    if ('class' in entry && (typeof entry.class !== 'string' || entry.class.length === 0)) wrong.push('"class" must be a class name');
    if (!Number.isInteger(entry.lines) || entry.lines <= 0) wrong.push('"lines" must be a positive integer');
    if (typeof entry.reason !== 'string' || entry.reason.trim().length < 10) wrong.push('"reason" must say why (a sentence)');
    if (typeof entry.date !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(entry.date)) wrong.push('"date" must be YYYY-MM-DD');
    if (wrong.length > 0) {
      problems.push(`bad exception: ${where}: ${wrong.join('; ')}`);
      return;
    }
    const key = `${entry.file}\u0000${entry.class ?? ''}`;
    if (seen.has(key)) {
      problems.push(`bad exception: ${where} repeats ${describeEntry(entry)}`);
      return;
    }
    seen.add(key);
    entries.push(entry);
  });
  return { entries, problems };
}

function describeEntry(entry) {
  return entry.class === undefined ? entry.file : `${entry.file} class ${entry.class}`;
}

function check(rootDir, files) {
  const { over, classCount } = measure(rootDir, files);
  const { entries, problems } = readExceptions(rootDir);
  const byKey = new Map(entries.map((entry) => [`${entry.file}\u0000${entry.class ?? ''}`, entry]));
  const used = new Set();

  for (const item of over) {
    const key = `${item.file}\u0000${item.className ?? ''}`;
    const what = item.className === undefined ? `file too long: ${item.file}` : `class too long: ${item.file}:${item.line} class ${item.className}`;
    const exception = byKey.get(key);
    if (exception === undefined) {
      problems.push(`${what} is ${item.lines} lines (limit ${item.limit}); split it, or argue an exception in ${EXCEPTIONS_FILE}`);
      continue;
    }
    used.add(key);
    if (item.lines > exception.lines) {
      problems.push(`${what} is ${item.lines} lines, more than the ${exception.lines} its exception allows (limit ${item.limit}): it may not grow; split it`);
    }
  }

  const fileSet = new Set(files);
  for (const entry of entries) {
    const key = `${entry.file}\u0000${entry.class ?? ''}`;
    if (used.has(key)) continue;
    let why;
    if (!fileSet.has(entry.file)) why = `${entry.file} no longer exists`;
    else if (entry.class === undefined) why = `${entry.file} is within ${MAX_FILE_LINES} lines now`;
    else {
      const length = classLengths(rootDir, entry.file).get(entry.class);
      why = length === undefined ? `${entry.file} has no class ${entry.class}` : `class ${entry.class} is ${length} lines, within ${MAX_CLASS_LINES}`;
    }
    problems.push(`stale exception: remove it: ${describeEntry(entry)} (${EXCEPTIONS_FILE}): ${why}`);
  }
  return { problems, classCount, exceptionCount: entries.length };
}

function main() {
  const scriptDir = path.dirname(fileURLToPath(import.meta.url));
  const rootDir = path.resolve(process.argv[2] ?? path.join(scriptDir, '..'));
  const files = listSourceFiles(rootDir);
  if (files === undefined) {
    console.error(`check-sizes: no src/ directory under ${rootDir}`);
    return 1;
  }
  const { problems, classCount, exceptionCount } = check(rootDir, files);
  if (problems.length === 0) {
    const classes = `${classCount} class${classCount === 1 ? '' : 'es'}`;
    console.log(`check-sizes: ${files.length} files, ${classes}, within limits (${exceptionCount} exception${exceptionCount === 1 ? '' : 's'})`);
    return 0;
  }
  for (const problem of problems) console.error(problem);
  console.error(`check-sizes: ${files.length} files, ${problems.length} problem${problems.length === 1 ? '' : 's'}`);
  return 1;
}

process.exitCode = main();
