#!/usr/bin/env node
/**
 * How long a script holds the event loop at most in one piece, for the costliest operands the
 * language allows (issue 33, finding 2; docs/security.md, "Scripts and the event loop"). Each case
 * runs one hostile script at the leader's runner with the node's scheduler (in-process, over an
 * in-memory store), and records the longest time between two of the script's asks whether its
 * turn is up: one step, or one piece of a long operation. That is what a turn can overrun its
 * 5 ms by. Parsing a 64 KiB script and decoding parameters happen before the script runs, so
 * they are timed apart.
 *
 * Usage: npm run build && node scripts/script-step-costs.mjs [rounds]   (default 3; the best and
 * worst round are printed, since a shared machine adds its own pauses)
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '..');
const load = (path) => import(pathToFileURL(join(root, 'dist/src', path)).href);
const { MvccStore } = await load('mvcc/mvcc-store.js');
const { MemoryEngine } = await load('storage/memory-engine.js');
const { partitionKeyPrefix } = await load('storage/keyspace.js');
const { encodeTxnHandle } = await load('txn/txn-handle.js');
const { runScriptAtLeader } = await load('node/service/script-runner.js');
const { ScriptScheduler } = await load('node/service/script-scheduler.js');
const { parseScript, paramsFromJson } = await load('script/index.js');
const { defaultLimits } = await load('limits.js');

const rounds = Number(process.argv[2] ?? 3);
const M = 1024 * 1024;
const greek = 'ΑΣ Σ'.repeat(M / 4);
const astral = '🙂'.repeat(M / 2);
const doubling = (list, times = 16) => `let l = [${list}]\nfor i in [${Array.from({ length: times }, (_, index) => index).join(',')}] do\n  let l = l + l\nend`;

/** A scheduler that records the longest time between two asks of `due()` (the longest unit of work). */
class Timed extends ScriptScheduler {
  longestMs = 0;
  lastMs = undefined;
  due() {
    const nowMs = performance.now();
    if (this.lastMs !== undefined) this.longestMs = Math.max(this.longestMs, nowMs - this.lastMs);
    const due = super.due();
    this.lastMs = due ? undefined : nowMs;
    return due;
  }
}

async function storeWith(keys) {
  const mvcc = await MvccStore.open({ engine: new MemoryEngine(), prefix: partitionKeyPrefix('mvcc', 0) });
  let index = 0;
  for (let from = 0; from < keys.length; from += 100) {
    const writes = keys.slice(from, from + 100).map(([key, value]) => ({ type: 'put', key, value: new TextEncoder().encode(value) }));
    await mvcc.apply({ type: 'batch', writes }, { index: ++index, nowMs: Date.now() });
  }
  return mvcc;
}

async function run(mvcc, script, params = {}) {
  const scheduler = new Timed({ limits: defaultLimits, nowMs: () => performance.now() });
  const startedMs = performance.now();
  const outcome = await runScriptAtLeader({
    request: { script, params, bucket: 'k' },
    limits: defaultLimits,
    partitionCount: 1,
    tenant: 'default',
    begin: async () => {
      const startedAtMs = Date.now();
      const handle = { tenant: 'default', partition: 0, partitionCount: 1, bucket: 'k', snapshotRevision: mvcc.revision, isolation: 'snapshot', startedAtMs };
      return { transaction: encodeTxnHandle(handle), partition: 0, bucket: 'k', snapshotRevision: mvcc.revision, isolation: 'snapshot', expiresAtMs: startedAtMs + 60_000 };
    },
    mvcc,
    propose: async () => ({ applied: true, revision: mvcc.revision, writes: [] }),
    deadlineMs: Date.now() + 60_000,
    scheduler,
  }).then(
    () => 'ok',
    (error) => error.code ?? String(error),
  );
  return { longestMs: scheduler.longestMs, outcome, tookMs: performance.now() - startedMs };
}

const empty = await storeWith([]);
const longKeys = await storeWith(Array.from({ length: 9_900 }, (_, index) => [`k/${'x'.repeat(4000)}${String(index).padStart(6, '0')}`, 'v']));
const bigValue = await storeWith([['k/big', 'Σ'.repeat(M / 2)]]);
const s = JSON.stringify(greek);
const cases = [
  ['lower of 1 MiB ASCII, in a loop', empty, `let s = "0123456789ABCDEF"\n${doubling('1')}\nfor i in [${Array.from({ length: 16 }, (_, index) => index).join(',')}] do\n  let s = s + s\nend\nfor x in l do\n  let t = lower(s)\nend`],
  ['lower of 1 MiB Greek with final sigmas', empty, 'for x in [1, 2, 3] do\n  let t = lower(@s)\nend', { s }],
  ['upper of 1 MiB Greek', empty, 'for x in [1, 2, 3] do\n  let t = upper(@s)\nend', { s }],
  ['upper of "ΐ" x 1M (three times longer: refused)', empty, 'return upper(@s)', { s: JSON.stringify('ΐ'.repeat(M)) }],
  ['len and [-1] of 1 MiB outside the BMP', empty, 'for x in [1, 2, 3] do\n  let n = len(@s)\n  let c = @s[-1]\nend', { s: JSON.stringify(astral) }],
  ['to_int of a million digits', empty, 'return to_int(@s)', { s: JSON.stringify('9'.repeat(M)) }],
  ['contains: worst-case search in 1 MiB', empty, 'return contains(@h, @n)', { h: JSON.stringify('a'.repeat(M)), n: JSON.stringify(`${'a'.repeat(M / 2)}b`) }],
  ['< of two 1 MiB strings equal but the last', empty, 'return @a < @b', { a: JSON.stringify(`${'a'.repeat(M - 1)}a`), b: JSON.stringify(`${'a'.repeat(M - 1)}b`) }],
  ['== of two lists of 65,536 equal 1 MiB strings', empty, `${doubling('@s')}\nlet t = lower(upper(@s))\nlet m = [t]\nfor i in [${Array.from({ length: 16 }, (_, index) => index).join(',')}] do\n  let m = m + m\nend\nreturn l == m`, { s: JSON.stringify('a'.repeat(M)) }],
  ['min of 65,536 1 MiB strings', empty, `${doubling('@s')}\nreturn min(l)`, { s }],
  ['to_str of a list of 65,536 1 MiB strings', empty, `${doubling('@s')}\nreturn to_str(l)`, { s }],
  ['return a list of 65,536 1 MiB strings', empty, `${doubling('@s')}\nreturn l`, { s }],
  ['return a list of 65,536 small ints', empty, `${doubling('7')}\nreturn l`],
  ['throw a list of 65,536 1 MiB strings', empty, `${doubling('@s')}\nthrow l`, { s }],
  ['concat of a 65,536-element list 1,000 times', empty, `${doubling('1')}\nreturn concat(${Array(1000).fill('l').join(', ')})`],
  ['l + l + l: 98,304 elements, near the list cap', empty, `${doubling('1', 15)}\nreturn len(l + l + l)`],
  ['get by prefix: 9,900 keys of 4 KiB and 100 own writes among them', longKeys, `for i in [${Array.from({ length: 100 }, (_, index) => index).join(',')}] do\n  set concat("k/${'x'.repeat(4000)}", to_str(i), "a") "v"\nend\nlet all = get by prefix "k"\nlet all = get by prefix "k"\nreturn len(keys(all))`],
  ['a 1 MiB Greek value, decoded and lowercased', bigValue, 'let e = get "k/big"\nreturn len(lower(e))'],
  ['a parameter of 100,000 ints, imported in turns', empty, 'return len(@n)', { n: JSON.stringify(Array.from({ length: 100_000 }, (_, index) => index * 1000)) }],
];

const results = new Map();
for (let round = 0; round < rounds; round++) {
  for (const [name, store, script, params] of cases) {
    const { longestMs, outcome } = await run(store, script, params);
    const seen = results.get(name) ?? { best: Infinity, worst: 0, outcome };
    results.set(name, { best: Math.min(seen.best, longestMs), worst: Math.max(seen.worst, longestMs), outcome });
  }
}
console.log('longest piece of work between two asks of the scheduler, ms (best and worst of %d rounds), and the outcome:', rounds);
for (const [name, { best, worst, outcome }] of results) console.log(`  ${name.padEnd(64)} ${best.toFixed(1).padStart(6)} ${worst.toFixed(1).padStart(6)}  ${outcome}`);

const timed = (work) => {
  let best = Infinity;
  for (let round = 0; round < rounds; round++) {
    const startedMs = performance.now();
    work();
    best = Math.min(best, performance.now() - startedMs);
  }
  return best.toFixed(1);
};
const source = `let x = [${Array.from({ length: 11_000 }, (_, index) => index).join(',')}]\nreturn x`;
console.log('before a script runs (best of %d), ms:', rounds);
console.log(`  parse a ${(source.length / 1024).toFixed(0)} KiB script${' '.repeat(40)} ${timed(() => parseScript(source, defaultLimits))}`);
const strings = Object.fromEntries(Array.from({ length: 4 }, (_, index) => [`s${index}`, JSON.stringify('x'.repeat(900_000))]));
console.log(`  decode four 0.9 MB string parameters${' '.repeat(27)} ${timed(() => paramsFromJson(strings, defaultLimits))}`);
const numbers = { n: JSON.stringify(Array.from({ length: 100_000 }, (_, index) => index * 1000)) };
console.log(`  decode a parameter of 100,000 ints, in one piece (routing does not)${' '.repeat(0)} ${timed(() => paramsFromJson(numbers, defaultLimits))}`);
