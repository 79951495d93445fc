/** Operators, truthiness, indexing and every built-in function. */
import { describe, expect, it } from 'vitest';
import { ScriptEntry, scriptValueToJson } from '../../src/script/index.js';
import { FakeSnapshot, evaluate, expectRunError } from './harness.js';

const value = (expression: string, snapshot?: FakeSnapshot): Promise<unknown> => evaluate(`return ${expression}`, snapshot);

const entries = (): FakeSnapshot =>
  new FakeSnapshot({ 'services/auth': 'localhost:8081', 'services/count': '12', 'services/name': 'Auth' });

describe('arithmetic', () => {
  it('computes with ints exactly, truncating division toward zero', async () => {
    expect(await value('[1 + 2, 7 - 10, 6 * 7, 7 / 2, -7 / 2, 7 % 3, -7 % 3, 2 * 3 + 4, -(3)]')).toEqual([3, -3, 42, 3, -3, 1, -1, 10, -3]);
    expect(await value('9007199254740993 + 0')).toBe('9007199254740993');
  });

  it('mixes ints and floats as floats', async () => {
    expect(await value('[1 + 0.5, 3 / 2.0, 2.5 * 2, 5.5 % 2, -1.5]')).toEqual([1.5, 1.5, 5, 1.5, -1.5]);
  });

  it('concatenates strings and lists with +, entries counting as their value', async () => {
    expect(await value('["a" + "b", [1] + [2, 3], [] + []]')).toEqual(['ab', [1, 2, 3], []]);
    expect(await value('get "services/auth" + "/x"', entries())).toBe('localhost:8081/x');
  });

  it('fails on division by zero, int overflow and float overflow, at the operator', async () => {
    await expectRunError('return 1 / 0', 'SCRIPT_ERROR', 1, 10);
    await expectRunError('return 1 % 0', 'SCRIPT_ERROR', 1, 10);
    await expectRunError('return 1.0 / 0', 'SCRIPT_ERROR', 1, 12);
    const overflow = await expectRunError('return 9223372036854775807 + 1', 'SCRIPT_ERROR', 1, 28);
    expect(overflow.message).toMatch(/integer overflow/);
    await expectRunError('return -9223372036854775807 - 2', 'SCRIPT_ERROR', 1, 29);
    await expectRunError('return 4611686018427387904 * 2', 'SCRIPT_ERROR', 1, 28);
    await expectRunError('return -9223372036854775808 / -1', 'SCRIPT_ERROR', 1, 29);
    await expectRunError('let m = -9223372036854775808\nreturn -m', 'SCRIPT_ERROR', 2, 8);
    await expectRunError('return 1e308 * 10', 'SCRIPT_ERROR', 1, 14);
  });

  it('refuses mixing strings and numbers, and arithmetic on other types', async () => {
    const error = await expectRunError('return "5" + 1', 'SCRIPT_ERROR', 1, 12);
    expect(error.message).toMatch(/strings are not numbers/);
    await expectRunError('return get "services/count" + 1', 'SCRIPT_ERROR', 1, 29, entries());
    await expectRunError('return [1] + "a"', 'SCRIPT_ERROR', 1, 12);
    await expectRunError('return "a" - "b"', 'SCRIPT_ERROR', 1, 12);
    await expectRunError('return null + 1', 'SCRIPT_ERROR', 1, 13);
    await expectRunError('return true * 2', 'SCRIPT_ERROR', 1, 13);
    await expectRunError('return -"a"', 'SCRIPT_ERROR', 1, 8);
  });
});

describe('comparison and logic', () => {
  it('compares numbers with numbers and strings with strings (by code point)', async () => {
    expect(await value('[1 < 2, 2 <= 2, 3 > 2.5, 2.0 >= 2, 1 == 1.0, 1 != 2, 0.5 < 1]')).toEqual([true, true, true, true, true, true, true]);
    expect(await value('["a" < "b", "B" < "a", "z" < "é", "\\uFFFF" < "😀", "ab" > "a", "a" == "a"]')).toEqual([true, true, true, true, true, true]);
    expect(await value('9223372036854775807 > 9223372036854775806')).toBe(true);
  });

  it('compares deeply with ==, null with null, and never equates different types', async () => {
    expect(await value('[[1, [2, "x"]] == [1, [2.0, "x"]], [1] == [1, 2], null == null, null == 0, "1" == 1, true == 1, [] == ""]')).toEqual([
      true,
      false,
      true,
      false,
      false,
      false,
      false,
    ]);
  });

  it('compares an entry as its value', async () => {
    expect(await value('[get "services/auth" == "localhost:8081", get "services/name" < "B", get "services/name" == get "services/name"]', entries())).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('refuses ordering values of different kinds', async () => {
    const error = await expectRunError('return 1 < "2"', 'SCRIPT_ERROR', 1, 10);
    expect(error.message).toMatch(/cannot compare int with string/);
    await expectRunError('return null < 1', 'SCRIPT_ERROR', 1, 13);
    await expectRunError('return [1] < [2]', 'SCRIPT_ERROR', 1, 12);
  });

  it('short-circuits and / or, which return bools', async () => {
    expect(await value('[false and 1 / 0, true or 1 / 0, 1 and "x", 0 or "", not 0, not "x"]')).toEqual([false, true, true, false, true, false]);
    await expectRunError('return true and 1 / 0', 'SCRIPT_ERROR', 1, 19);
  });

  it('treats null, false, 0, 0.0, "" and [] as false, and everything else as true', async () => {
    expect(await value('[not null, not false, not 0, not 0.0, not "", not []]')).toEqual([true, true, true, true, true, true]);
    expect(await value('[not "0", not [null], not 0.1, not -1, not get "services/auth"]', entries())).toEqual([false, false, false, false, false]);
  });

  it('tests presence with found(x), x found and x not found', async () => {
    const snapshot = entries();
    expect(await value('[found(get "services/auth"), found(get "services/none"), not found(get "services/none")]', snapshot)).toEqual([true, false, true]);
    expect(await value('[get "services/auth" found, get "services/none" not found, get "services/auth" not found]', snapshot)).toEqual([true, true, false]);
    expect(await value('[found(""), found(false), found(null), 0 found]')).toEqual([true, true, false, true]);
  });
});

describe('indexing', () => {
  it('indexes lists, negative indexes from the end, out of range as null', async () => {
    expect(await value('[[10, 20, 30][0], [10, 20, 30][2], [10, 20, 30][-1], [10, 20, 30][-3], [10, 20, 30][3], [10, 20, 30][-4], [][0]]')).toEqual([
      10,
      30,
      30,
      10,
      null,
      null,
      null,
    ]);
  });

  it('indexes strings by character', async () => {
    expect(await value('["a😀c"[1], "a😀c"[2], "abc"[-1], "abc"[5]]')).toEqual(['😀', 'c', 'c', null]);
  });

  it('reads every field of an entry, and null from a missing one', async () => {
    const snapshot = new FakeSnapshot();
    snapshot.put('services/other', 'x');
    snapshot.put('services/a', 'v1');
    snapshot.put('services/a', 'v2', 7777);
    expect(
      await evaluate(
        'let e = get "services/a"\nreturn [e["key"], e["value"], e["revision"], e["createRevision"], e["version"], e["expiresAtMs"], (get "services/none")["value"]]',
        snapshot,
      ),
    ).toEqual(['services/a', 'v2', 3, 2, 2, 7777, null]);
  });

  it('refuses bad indexes', async () => {
    await expectRunError('return [1]["a"]', 'SCRIPT_ERROR', 1, 11);
    await expectRunError('return [1][0.0]', 'SCRIPT_ERROR', 1, 11);
    const field = await expectRunError('return (get "services/auth")["val"]', 'SCRIPT_ERROR', 1, 29, entries());
    expect(field.message).toMatch(/an entry has no field "val"/);
    await expectRunError('return (get "services/auth")[0]', 'SCRIPT_ERROR', 1, 29, entries());
    await expectRunError('return 5[0]', 'SCRIPT_ERROR', 1, 9);
  });
});

describe('built-in functions', () => {
  it('contains: an entry element matches by key, any other element by ==, a string by substring', async () => {
    const snapshot = entries();
    expect(
      await value(
        '[contains(get by prefix "services", "services/auth"), contains(get by prefix "services", "localhost:8081"), ' +
          'contains(get by prefix "services", get "services/name"), contains([1, "a"], 1.0), contains([[1]], [1]), contains([], null), ' +
          'contains("hello", "ell"), contains(get "services/auth", "8081"), contains("a", "b")]',
        snapshot,
      ),
    ).toEqual([true, false, true, true, true, false, true, true, false]);
    await expectRunError('return contains(null, "a")', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return contains("abc", 1)', 'SCRIPT_ERROR', 1, 8);
  });

  it('len: elements of a list, characters of a string or an entry value', async () => {
    expect(await value('[len([1, [2, 3]]), len(""), len("é😀"), len(get "services/auth")]', entries())).toEqual([2, 0, 2, 14]);
    await expectRunError('return len(null)', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return len(5)', 'SCRIPT_ERROR', 1, 8);
  });

  it('keys: the keys of a list of entries', async () => {
    expect(await value('keys(get by prefix "services")', entries())).toEqual(['services/auth', 'services/count', 'services/name']);
    expect(await value('keys([])')).toEqual([]);
    const error = await expectRunError('return keys(["a"])', 'SCRIPT_ERROR', 1, 8);
    expect(error.message).toMatch(/keys needs a list of entries, found string/);
    await expectRunError('return keys("a")', 'SCRIPT_ERROR', 1, 8);
  });

  it('to_int: from ints, floats (toward zero), decimal text, bools and entries', async () => {
    expect(await value('[to_int(5), to_int(2.9), to_int(-2.9), to_int("42"), to_int("-7"), to_int("+3"), to_int(true), to_int(false), to_int(get "services/count")]', entries())).toEqual([
      5, 2, -2, 42, -7, 3, 1, 0, 12,
    ]);
    expect(await value('to_int("9223372036854775807")')).toBe('9223372036854775807');
    const error = await expectRunError('return to_int("1.5")', 'SCRIPT_ERROR', 1, 8);
    expect(error.message).toMatch(/"1.5" is not a decimal integer/);
    await expectRunError('return to_int(" 1")', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return to_int("9223372036854775808")', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return to_int(1e19)', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return to_int(null)', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return to_int([])', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return to_int(get "services/auth")', 'SCRIPT_ERROR', 1, 8, entries());
  });

  it('to_str: text of every kind of value', async () => {
    expect(await value('[to_str("s"), to_str(-12), to_str(1.5), to_str(2.0), to_str(true), to_str(null), to_str([1, "a", [null]]), to_str(get "services/auth")]', entries())).toEqual([
      's', '-12', '1.5', '2', 'true', 'null', '[1,"a",[null]]', 'localhost:8081',
    ]);
  });

  it('lower and upper, of strings and entries', async () => {
    expect(await value('[lower("AbÉ"), upper("abé"), upper("ß"), lower(get "services/name")]', entries())).toEqual(['abé', 'ABÉ', 'SS', 'auth']);
    await expectRunError('return lower(1)', 'SCRIPT_ERROR', 1, 8);
  });

  it('concat: joins scalars as text, or concatenates lists', async () => {
    expect(await value('[concat(), concat("a"), concat("n=", 5, " f=", 1.5, " ", true, " ", get "services/name"), concat([1], [], [2, [3]])]', entries())).toEqual([
      '', 'a', 'n=5 f=1.5 true Auth', [1, 2, [3]],
    ]);
    await expectRunError('return concat("a", null)', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return concat("a", [1])', 'SCRIPT_ERROR', 1, 8);
  });

  it('min and max: of their arguments or of one list; null for an empty list', async () => {
    expect(await value('[min(3, 1, 2), max(3, 1, 2), min([2.5, 1, 3]), max([1, 2.5]), min("b", "a"), max(["x"]), min([]), max(7), min(get "services/name", "B")]', entries())).toEqual([
      1, 3, 1, 2.5, 'a', 'x', null, 7, 'Auth',
    ]);
    await expectRunError('return max(1, "a")', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return min(1, null)', 'SCRIPT_ERROR', 1, 8);
    await expectRunError('return min([[1]])', 'SCRIPT_ERROR', 1, 8);
  });

  it('revision: an entry\'s modification revision, 0 for an own write, null for not found', async () => {
    const snapshot = entries();
    expect(await evaluate('set "services/new" "x"\nreturn [revision(get "services/name"), revision(get "services/new"), revision(get "services/none")]', snapshot)).toEqual([3, 0, null]);
    await expectRunError('return revision("a")', 'SCRIPT_ERROR', 1, 8);
  });

  it('takes function names in any case', async () => {
    expect(await value('[LEN("ab"), To_Str(1), Found(null)]')).toEqual([2, '1', false]);
  });
});

describe('scriptValueToJson', () => {
  it('turns values into JSON: safe ints as numbers, others as decimal text, non-finite floats as null', () => {
    expect(scriptValueToJson(null)).toBeNull();
    expect(scriptValueToJson(true)).toBe(true);
    expect(scriptValueToJson('s')).toBe('s');
    expect(scriptValueToJson(9007199254740991n)).toBe(9007199254740991);
    expect(scriptValueToJson(-9007199254740991n)).toBe(-9007199254740991);
    expect(scriptValueToJson(9007199254740992n)).toBe('9007199254740992');
    expect(scriptValueToJson(-9223372036854775808n)).toBe('-9223372036854775808');
    expect(scriptValueToJson(1.5)).toBe(1.5);
    expect(scriptValueToJson(Number.NaN)).toBeNull();
    expect(scriptValueToJson(Number.POSITIVE_INFINITY)).toBeNull();
    expect(scriptValueToJson([1n, [2.5, 'x'], null])).toEqual([1, [2.5, 'x'], null]);
    const entry = new ScriptEntry({ key: 'a/b', value: new TextEncoder().encode('v'), createRevision: 1, modRevision: 2, version: 2, expiresAtMs: 0 });
    expect(scriptValueToJson(entry)).toEqual({ key: 'a/b', value: 'v', revision: 2, createRevision: 1, version: 2, expiresAtMs: 0 });
  });
});
