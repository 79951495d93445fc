/**
 * Scripts in turns (issue 33, finding 2): the evaluator asks whether its turn is up before every
 * step and between the pieces of every long operation, its time limit counts its own time only,
 * and every operation whose cost grows with its operands works in bounded pieces or refuses
 * before it builds anything past the caps, while giving exactly what the one-piece operation
 * would. Pauses are counted with fake turns, so nothing here depends on the machine's speed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultLimits, makeLimits } from '../../src/limits.js';
import { parseScript, runScript, ScriptEntry, scriptValueToJson, type ScriptParams, type ScriptTurns } from '../../src/script/index.js';
import { PIECE_BYTES, PIECE_UNITS } from '../../src/script/pacing.js';
import { caseMapped, codePointAtIndex, codePointLength } from '../../src/script/text-pieces.js';
import { jsonText, makeList, valueCaps, type ScriptValue } from '../../src/script/values.js';
import { failure, FakeSnapshot, viewOf } from './harness.js';

const M = 1024 * 1024;
const noPace = (): undefined => undefined;

/** Turns that are always up: every ask pauses, and the pauses are counted. */
class CountingTurns implements ScriptTurns {
  pauses = 0;
  pausedMs = 0;
  constructor(private readonly onPause: () => void = () => undefined) {}
  due(): boolean {
    return true;
  }
  async pause(): Promise<void> {
    this.pauses++;
    this.onPause();
  }
}

async function runWith(source: string, options: { turns?: ScriptTurns; params?: ScriptParams; clock?: () => number; deadlineMs?: number; snapshot?: FakeSnapshot; limits?: Parameters<typeof makeLimits>[0] } = {}) {
  const limits = makeLimits(options.limits);
  return runScript(parseScript(source, limits), {
    params: options.params ?? {},
    view: viewOf(options.snapshot ?? new FakeSnapshot(), { limits }),
    limits,
    ...(options.turns !== undefined && { turns: options.turns }),
    ...(options.clock !== undefined && { clock: options.clock }),
    ...(options.deadlineMs !== undefined && { deadlineMs: options.deadlineMs }),
  });
}

/** Characters whose case mapping is unusual: sigmas, case-ignorable marks, expanding and astral ones. */
const interesting = ['Σ', 'σ', 'ς', 'A', 'a', 'Α', 'ω', 'İ', 'ß', 'ΐ', 'µ', ' ', '1', '-', "'", '.', ':', '\u0308', '\u0345', 'ʰ', '\u00ad', '𝐀', '🙂', '\ud800', '\udc00'];
const interestingText = fc.array(fc.constantFrom(...interesting), { maxLength: 40 }).map((parts) => parts.join(''));

describe('case mapping in pieces', () => {
  const caps = valueCaps(makeLimits());

  it('gives exactly what toLowerCase and toUpperCase give, for any piece size (final sigmas across pieces included)', async () => {
    await fc.assert(
      fc.asyncProperty(interestingText, fc.integer({ min: 1, max: 8 }), async (text, pieceUnits) => {
        expect(await caseMapped(text, false, caps, noPace, pieceUnits)).toBe(text.toLowerCase());
        expect(await caseMapped(text, true, caps, noPace, pieceUnits)).toBe(text.toUpperCase());
      }),
      { numRuns: 3000 },
    );
  });

  it('works on a megabyte in pieces, with a pace between them, and refuses an uppercase past the cap as soon as it passes it', async () => {
    const greek = 'ΑΣ Σ\u0308ς'.repeat(M / 6);
    let paces = 0;
    const pace = (): undefined => void paces++;
    expect(await caseMapped(greek, false, caps, pace)).toBe(greek.toLowerCase());
    expect(paces).toBeGreaterThanOrEqual(Math.floor(greek.length / PIECE_UNITS));
    // "ΐ" is three characters in capitals: a million of them would be three million.
    paces = 0;
    const error = await failure(caseMapped('ΐ'.repeat(M), true, caps, pace));
    expect(error.code).toBe('SCRIPT_LIMIT');
    expect(paces).toBeLessThanOrEqual(Math.ceil(M / 3 / PIECE_UNITS) + 1);
  });
});

describe('strings counted by character in pieces', () => {
  it('len and indexing agree with splitting the string into characters', async () => {
    await fc.assert(
      fc.asyncProperty(interestingText, fc.integer({ min: -45, max: 45 }), async (text, index) => {
        const characters = Array.from(text);
        expect(await codePointLength(text, noPace)).toBe(characters.length);
        if (index >= 0) expect(await codePointAtIndex(text, index, noPace)).toBe(characters[index]);
      }),
      { numRuns: 1000 },
    );
    expect((await runWith('return [len(@s), @s[-1], @s[1], @s[-3]]', { params: { s: 'é🙂\ud800x' } })).returnValue).toEqual([4, 'x', '🙂', '🙂']);
  });

  it('counts a megabyte outside the BMP a piece at a time', async () => {
    const turns = new CountingTurns();
    const s = '🙂'.repeat(M / 2);
    expect((await runWith('return [len(@s), @s[-1]]', { turns, params: { s } })).returnValue).toEqual([M / 2, '🙂']);
    expect(turns.pauses).toBeGreaterThanOrEqual(3 * Math.floor(s.length / PIECE_UNITS));
  });
});

describe('the evaluator in turns', () => {
  it('asks before every step, and goes on where it paused', async () => {
    const turns = new CountingTurns();
    const outcome = await runWith('let n = 0\nfor x in [1, 2, 3] do\n  let n = n + x\nend\nreturn n', { turns });
    expect(outcome.returnValue).toBe(6);
    // One pause per statement and expression: 2 + 5 + 3 x (let, +, n, x) + 2 (a loop turn's
    // body asks right after it), and one more as the result's JSON is built.
    expect(turns.pauses).toBe(22);
  });

  it('counts its own time toward maxScriptMs, not the time it was paused', async () => {
    let nowMs = 0;
    const source = `for x in [${Array.from({ length: 50 }, (_, index) => index).join(', ')}] do\n  let y = x\nend\nreturn 1`;
    // Every pause lasts 100 ms of other work: 150 pauses are 15 s, far past the 2 s limit.
    const turns = new CountingTurns(() => {
      nowMs += 100;
      turns.pausedMs += 100;
    });
    expect((await runWith(source, { turns, clock: () => nowMs })).returnValue).toBe(1);
    expect(nowMs).toBeGreaterThan(defaultLimits.maxScriptMs);
    // The same pauses not reported as pauses are the script's own time.
    nowMs = 0;
    const unreported = new CountingTurns(() => (nowMs += 100));
    expect((await failure(runWith(source, { turns: unreported, clock: () => nowMs }))).code).toBe('SCRIPT_LIMIT');
  });

  it("stops at the caller's deadline, pauses included (DEADLINE_EXCEEDED)", async () => {
    let nowMs = 0;
    const turns = new CountingTurns(() => {
      nowMs += 1_000;
      turns.pausedMs += 1_000;
    });
    const error = await failure(runWith('for x in [1, 2, 3, 4, 5, 6] do\n  let y = x\nend', { turns, clock: () => nowMs, deadlineMs: 5_000 }));
    expect(error.code).toBe('DEADLINE_EXCEEDED');
  });

  it('walks lists one element at a time: ==, contains, min, max, keys, and the JSON of a result', async () => {
    const list = Array.from({ length: 1000 }, (_, index) => BigInt(index));
    const steps = async (source: string, params: ScriptParams, snapshot?: FakeSnapshot): Promise<number> => {
      const turns = new CountingTurns();
      await runWith(source, { turns, params, ...(snapshot !== undefined && { snapshot }) });
      return turns.pauses;
    };
    for (const source of ['return @a == @b', 'return contains(@a, -1)', 'return min(@a)', 'return max(@a)', 'return @a']) {
      expect(await steps(source, { a: list, b: [...list] }), source).toBeGreaterThanOrEqual(1000);
    }
    const snapshot = new FakeSnapshot(Object.fromEntries(Array.from({ length: 300 }, (_, index) => [`services/${index}`, 'v'])));
    expect(await steps('return len(keys(get by prefix "services"))', {}, snapshot)).toBeGreaterThanOrEqual(600);
  });

  it('decodes a large value read from the store in pieces, to the same text as one decode', async () => {
    const value = new Uint8Array([...new TextEncoder().encode('Σ'.repeat(PIECE_BYTES / 2 - 1)), 0xe2, 0x82, 0xac, 0xff, ...new TextEncoder().encode('ω'.repeat(M / 2))]);
    const entry = new ScriptEntry({ key: 'services/big', value, createRevision: 1, modRevision: 1, version: 1, expiresAtMs: 0 });
    let paces = 0;
    await entry.decode(() => void paces++);
    expect(paces).toBe(Math.ceil(value.length / PIECE_BYTES));
    expect(entry.value).toBe(new TextDecoder().decode(value));
  });
});

describe('no step builds past the caps before it checks them', () => {
  const big = 'x'.repeat(M);
  const doubled = `let l = [@s]\nfor i in [${Array.from({ length: 16 }, (_, index) => index).join(', ')}] do\n  let l = l + l\nend`;

  it('refuses a join of many long strings or big lists before joining', async () => {
    expect((await failure(runWith(`return concat(${Array(8).fill('@s').join(', ')})`, { params: { s: big } }))).code).toBe('SCRIPT_LIMIT');
    const error = await failure(runWith(`${doubled}\nreturn concat(${Array(1000).fill('l').join(', ')})`, { params: { s: 'x' } }));
    expect(error.message).toMatch(/a list holds at most 100000 elements/);
    expect((await failure(runWith(`${doubled}\nlet m = l + l`, { params: { s: 'x' } }))).code).toBe('SCRIPT_LIMIT');
  });

  it('measures JSON while it builds it: to_str, a result and a thrown list stop at their bound', async () => {
    const turns = new CountingTurns();
    // 65,536 references to a megabyte string: 64 GiB of JSON, refused after two of them.
    expect((await failure(runWith(`${doubled}\nreturn to_str(l)`, { turns, params: { s: big } }))).message).toMatch(/a string holds at most/);
    expect((await failure(runWith(`${doubled}\nreturn l`, { params: { s: big } }))).details).toMatchObject({ maxResultBytes: 2 * M });
    const thrown = await failure(runWith(`${doubled}\nthrow l`, { params: { s: big } }));
    expect(thrown.code).toBe('SCRIPT_ERROR');
    expect(thrown.message.length).toBeLessThan(1100);
  });

  it('refuses a million-digit to_int without converting it', async () => {
    expect((await failure(runWith('return to_int(@s)', { params: { s: '9'.repeat(M) } }))).message).toMatch(/integer overflow/);
    expect((await runWith('return to_int(@s)', { params: { s: `-${'0'.repeat(M - 10)}42` } })).returnValue).toBe(-42);
  });

  it('builds the JSON of any value exactly as JSON.stringify of scriptValueToJson', async () => {
    const caps = valueCaps(makeLimits());
    const scalar = fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      fc.double(),
      fc.string(),
      fc.string().map((text) => new ScriptEntry({ key: `k/${text}`, value: new TextEncoder().encode(text), createRevision: 1, modRevision: 2, version: 3, expiresAtMs: 0 })),
    );
    const value = fc.letrec<{ value: ScriptValue }>((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('value'), { maxLength: 5 }).map((items) => makeList(items, caps))),
    })).value;
    await fc.assert(
      fc.asyncProperty(value, async (item) => {
        expect(await jsonText(item, 10 * M, noPace)).toBe(JSON.stringify(scriptValueToJson(item)));
      }),
      { numRuns: 500 },
    );
  });
});
