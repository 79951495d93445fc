/** Every bound on a running script: steps, keys, time, value sizes, parameters. */
import { describe, expect, it } from 'vitest';
import { paramsFromJson } from '../../src/script/index.js';
import { FakeSnapshot, evaluate, expectRunError, failure, run } from './harness.js';

const numbers = (count: number): bigint[] => Array.from({ length: count }, (_, index) => BigInt(index));

describe('the step limit', () => {
  it('counts statements, expressions and loop turns', async () => {
    // `return 1` is two steps: the statement and the literal.
    expect(await evaluate('return 1', undefined, { limits: { maxScriptSteps: 2 } })).toBe(1);
    const error = await expectRunError('return 1', 'SCRIPT_LIMIT', 1, 8, undefined, { limits: { maxScriptSteps: 1 } });
    expect(error.message).toBe('line 1, column 8: the script took more than 1 steps');
    expect(error.details).toMatchObject({ maxScriptSteps: 1 });
    // The statement, the list literal, its two elements, then a turn and an empty body per element.
    expect(await evaluate('for x in [1, 2] do end', undefined, { limits: { maxScriptSteps: 6 } })).toBeNull();
    await expectRunError('for x in [1, 2] do end', 'SCRIPT_LIMIT', 1, 1, undefined, { limits: { maxScriptSteps: 5 } });
  });

  it('stops nested loops over a big list', async () => {
    const source = 'let n = 0\nfor a in @big do\n  for b in @big do\n    for c in @big do\n      let n = n + 1\n    end\n  end\nend\nreturn n';
    const params = paramsFromJson({ big: JSON.stringify(numbers(1000).map(Number)) });
    const error = await expectRunError(source, 'SCRIPT_LIMIT', 5, 15, undefined, { params });
    expect(error.details).toMatchObject({ maxScriptSteps: 100_000 });
  });

  it('charges built-ins one step per list element', async () => {
    const params = { list: numbers(1000) };
    const limits = { maxScriptSteps: 500 };
    await expectRunError('return contains(@list, -1)', 'SCRIPT_LIMIT', 1, 8, undefined, { params, limits });
    await expectRunError('return max(@list)', 'SCRIPT_LIMIT', 1, 8, undefined, { params, limits });
    await expectRunError('return concat(@list, @list)', 'SCRIPT_LIMIT', 1, 8, undefined, { params, limits });
    expect(await evaluate('return len(@list)', undefined, { params, limits })).toBe(1000);
  });
});

describe('the key limit', () => {
  const limits = { maxBatchOps: 2, maxScriptKeys: 3 };

  it('counts distinct keys read or written', async () => {
    const within = 'get "services/a"\nset "services/a" "1"\nexists "services/b"\ndelete "services/c"\nincr "services/b"\n';
    expect(await evaluate(`${within}return 1`, undefined, { limits })).toBe(1);
    const error = await expectRunError(`${within}get "services/d"`, 'SCRIPT_LIMIT', 6, 1, undefined, { limits });
    expect(error.message).toBe('line 6, column 1: the script touched more than 3 keys');
    expect(error.details).toMatchObject({ maxScriptKeys: 3 });
  });

  it('counts the keys a prefix read returns', async () => {
    const snapshot = new FakeSnapshot({ 'services/a': '1', 'services/b': '2', 'services/c': '3' });
    expect(await evaluate('return len(get by prefix "services")', snapshot, { limits })).toBe(3);
    await expectRunError('get "services/z"\nreturn get by prefix "services"', 'SCRIPT_LIMIT', 2, 8, snapshot, { limits });
  });
});

describe('the time limit', () => {
  it('is checked at every step with the given clock', async () => {
    let nowMs = 0;
    const clock = (): number => (nowMs += 1);
    const params = { list: numbers(1000) };
    // The clock passes 50 ms at the 51st step, a loop turn (each turn is 3 steps, after 2 for the start).
    const error = await expectRunError('for x in @list do\n  let y = x\nend', 'SCRIPT_LIMIT', 1, 1, undefined, {
      params,
      clock,
      limits: { maxScriptMs: 50 },
    });
    expect(error.message).toMatch(/the script ran longer than 50 ms/);
    expect(error.details).toMatchObject({ maxScriptMs: 50 });
  });

  it('is checked when a read of the store returns', async () => {
    let nowMs = 0;
    const snapshot = new FakeSnapshot({ 'services/a': '1' });
    const slow = Object.assign(Object.create(snapshot) as FakeSnapshot, {
      get: async (key: string) => {
        nowMs += 5000;
        return snapshot.records.get(key);
      },
    });
    await expectRunError('let a = get "services/a"', 'SCRIPT_LIMIT', 1, 9, slow, { clock: () => nowMs });
  });
});

describe('value bounds', () => {
  it('caps the length of a string a script builds', async () => {
    const error = await expectRunError('let s = "0123456789"\nfor i in @list do\n  let s = s + s\nend', 'SCRIPT_LIMIT', 3, 13, undefined, {
      params: { list: numbers(30) },
      limits: { maxValueBytes: 1000 },
    });
    expect(error.message).toMatch(/a string holds at most 1000 characters/);
    await expectRunError('return upper(@s) + "x"', 'SCRIPT_LIMIT', 1, 18, undefined, { params: { s: 'a'.repeat(1000) }, limits: { maxValueBytes: 1000 } });
  });

  it('caps list sizes, counting shared sublists every time, so JSON and == stay bounded', async () => {
    const doubling = await expectRunError('let l = [1]\nfor i in @list do\n  let l = [l, l]\nend\nreturn l', 'SCRIPT_LIMIT', 3, 11, undefined, {
      params: { list: numbers(40) },
    });
    expect(doubling.message).toMatch(/a list holds at most 100000 elements/);
    await expectRunError('let l = [1]\nfor i in @list do\n  let l = l + l\nend', 'SCRIPT_LIMIT', 3, 13, undefined, { params: { list: numbers(40) } });
  });

  it('caps list nesting', async () => {
    const error = await expectRunError('let l = []\nfor i in @list do\n  let l = [l]\nend\nreturn l', 'SCRIPT_LIMIT', 3, 11, undefined, {
      params: { list: numbers(100) },
    });
    expect(error.message).toMatch(/lists nest at most 64 deep/);
  });
});

describe('parameter bounds', () => {
  it('refuses more than maxScriptParams parameters', async () => {
    const params = Object.fromEntries(numbers(4).map((index) => [`p${index}`, index]));
    const error = await failure(run('return 1', undefined, { params, limits: { maxScriptParams: 3 } }));
    expect(error.code).toBe('SCRIPT_LIMIT');
    expect(error.details).toMatchObject({ params: 4, maxScriptParams: 3 });
  });
});

describe('hostile shapes', () => {
  it('refuses 100,000 nested parentheses or brackets without overflowing the stack', async () => {
    for (const [open, close] of [['(', ')'], ['[', ']'], ['-', '']] as const) {
      const source = `return ${open.repeat(100_000)}1${close.repeat(100_000)}`;
      // The default size limit refuses it first; with room for it, the nesting limit does.
      expect((await failure(run(source))).code).toBe('SCRIPT_LIMIT');
      const error = await failure(run(source, undefined, { limits: { maxScriptBytes: 256 * 1024 } }));
      expect(error.code).toBe('SCRIPT_LIMIT');
      expect(error.message).toMatch(/nests deeper than 64 levels/);
    }
  });

  it('bounds the JSON size of a result before building it (one long string repeated)', async () => {
    const params = { s: 'x'.repeat(1_000_000) };
    // 10 x 1 MB, then 100 x 10 MB: a few list elements, but gigabytes of JSON.
    const source = 'let a = [@s, @s, @s, @s, @s, @s, @s, @s, @s, @s]\nlet b = [a, a, a, a, a, a, a, a, a, a]\nreturn [b, b, b, b, b, b, b, b, b, b]';
    const startedMs = Date.now();
    const error = await failure(run(source, undefined, { params }));
    expect(error.code).toBe('SCRIPT_LIMIT');
    expect(error.details).toMatchObject({ maxResultBytes: 2 * 1024 * 1024 });
    expect(Date.now() - startedMs).toBeLessThan(1_000);
    // Under the bound it is returned as it is.
    expect(await evaluate('return [@s, @s]', undefined, { params })).toEqual([params.s, params.s]);
  });

  it('counts the conversion of the result toward the time limit', async () => {
    let nowMs = 0;
    const clock = (): number => (nowMs += 1);
    const params = { list: numbers(10_000) };
    // Returning the list is a handful of steps; converting its 10,000 elements reads the clock
    // every 256 of them, which passes 20 ms.
    const error = await failure(run('return @list', undefined, { params, clock, limits: { maxScriptMs: 20 } }));
    expect(error.code).toBe('SCRIPT_LIMIT');
    expect(error.details).toMatchObject({ maxScriptMs: 20 });
  });
});
