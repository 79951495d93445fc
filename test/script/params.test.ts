/** Parameters (from JSON and given directly), unbound parameters, and routing. */
import { describe, expect, it } from 'vitest';
import { paramsFromJson, parseScript, scriptRoutingTarget, type ScriptParams } from '../../src/script/index.js';
import { FakeSnapshot, evaluate, expectRunError, failure, run } from './harness.js';

describe('paramsFromJson', () => {
  it('reads JSON integers as exact ints and other numbers as floats', () => {
    expect(paramsFromJson({ a: '5', b: '-12', c: '9007199254740993', d: '1.5', e: '1e3', f: '2.0', g: '-9223372036854775808' })).toEqual({
      a: 5n,
      b: -12n,
      c: 9007199254740993n,
      d: 1.5,
      e: 1000,
      f: 2,
      g: -9223372036854775808n,
    });
    expect(typeof paramsFromJson({ f: '2.0' }).f).toBe('number');
  });

  it('reads strings, bools, null and nested lists, integers in lists exact', () => {
    expect(paramsFromJson({ s: '"services/a1"', t: 'true', n: 'null', l: '[1, "2\\"3", [4.5, 9007199254740993], "x7", -8]' })).toEqual({
      s: 'services/a1',
      t: true,
      n: null,
      l: [1n, '2"3', [4.5, 9007199254740993n], 'x7', -8n],
    });
  });

  it('refuses objects, invalid JSON, bad names and integers past int64 with SCRIPT_ERROR', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ o: '{"a": 1}' }, /parameter @o: an object is not a script value/],
      [{ o: '[1, {"a": 1}]' }, /parameter @o: an object is not a script value/],
      [{ j: 'services/a' }, /parameter @j: "services\/a" is not valid JSON/],
      [{ '1bad': '1' }, /parameter @1bad: a name must match/],
      [{ 'a-b': '1' }, /a name must match/],
      [{ big: '9223372036854775808' }, /parameter @big: the integer 9223372036854775808 is outside the 64-bit range/],
    ];
    for (const [json, message] of cases) {
      const error = await failure(() => paramsFromJson(json));
      expect(error.code).toBe('SCRIPT_ERROR');
      expect(error.message).toMatch(message);
      expect(error.details).toMatchObject({ param: Object.keys(json)[0] });
    }
  });

  it('refuses too many parameters and too deep lists with SCRIPT_LIMIT', async () => {
    const many = Object.fromEntries(Array.from({ length: 257 }, (_, index) => [`p${index}`, '1']));
    expect((await failure(() => paramsFromJson(many))).code).toBe('SCRIPT_LIMIT');
    expect(Object.keys(paramsFromJson(Object.fromEntries(Object.entries(many).slice(1))))).toHaveLength(256);
    const deep = await failure(() => paramsFromJson({ d: `${'['.repeat(100_000)}${']'.repeat(100_000)}` }));
    expect(deep.code).toBe('SCRIPT_LIMIT');
    expect(paramsFromJson({ d: `${'['.repeat(64)}${']'.repeat(64)}` }).d).toBeDefined();
  });
});

describe('parameters in scripts', () => {
  it('binds @names to parameter values', async () => {
    const params = paramsFromJson({ key: '"services/a"', value: '"v"', amount: '3', ttl: '5000' });
    const { outcome, writes, ttls } = await run('set @key @value ex @ttl\nreturn incr "services/n" by @amount', undefined, { params });
    expect(outcome.returnValue).toBe(3);
    expect(writes).toEqual({ 'services/a': 'v', 'services/n': '3' });
    expect(ttls).toEqual({ 'services/a': 5000 });
  });

  it('takes parameters given directly as script values', async () => {
    expect(await evaluate('return [@i + 1, @f * 2, @l[1], @s]', undefined, { params: { i: 1n, f: 1.5, l: [1n, 'two'], s: 's' } })).toEqual([
      2,
      3,
      'two',
      's',
    ]);
    const error = await failure(run('return 1', undefined, { params: { o: { a: 1 } as never } }));
    expect(error.code).toBe('SCRIPT_ERROR');
    expect(error.message).toMatch(/parameter @o: an object is not a script value/);
    expect((await failure(run('return 1', undefined, { params: { n: Number.NaN } }))).code).toBe('SCRIPT_ERROR');
    expect((await failure(run('return 1', undefined, { params: { b: 2n ** 63n } }))).code).toBe('SCRIPT_ERROR');
  });

  it('fails on an unbound @param at its first use, before reading anything', async () => {
    const snapshot = new FakeSnapshot({ 'services/a': '1' });
    const error = await expectRunError('let a = get "services/a"\nif true then\n  set @key @value\nend', 'SCRIPT_ERROR', 3, 7, snapshot, {
      params: { value: 'v' },
    });
    expect(error.message).toBe('line 3, column 7: parameter @key is not bound');
    expect(error.details).toMatchObject({ param: 'key' });
    expect(snapshot.reads).toBe(0);
  });

  it('keeps parameter names case-sensitive', async () => {
    await expectRunError('return @Name', 'SCRIPT_ERROR', 1, 8, undefined, { params: { name: 'x' } });
  });
});

describe('scriptRoutingTarget', () => {
  const target = (source: string, params: ScriptParams = {}): unknown => scriptRoutingTarget(parseScript(source), params);

  it('picks the first literal key or prefix in source order', () => {
    const seed = 'let all_services = get by prefix "services"\nif contains(all_services, "services/users") then\n  set "services/users" "x"\nend';
    expect(target(seed)).toEqual({ prefix: 'services' });
    expect(target('set "services/users" "x"\nget by prefix "services"')).toEqual({ key: 'services/users' });
    for (const action of ['get', 'exists', 'delete', 'incr']) expect(target(`${action} "orders/1"`)).toEqual({ key: 'orders/1' });
    expect(target('let x = 1\nif x > 0 then\n  for e in [] do\n    incr "counters/a"\n  end\nend\nget "other/b"')).toEqual({ key: 'counters/a' });
  });

  it('uses a parameter bound to a string, and skips keys not known before the run', () => {
    expect(target('get @key\nget "services/b"', { key: 'accounts/1' })).toEqual({ key: 'accounts/1' });
    expect(target('get by prefix @bucket', { bucket: 'accounts' })).toEqual({ prefix: 'accounts' });
    expect(target('get @key\nget "services/b"')).toEqual({ key: 'services/b' });
    expect(target('get @key\nget "services/b"', { key: 5n })).toEqual({ key: 'services/b' });
    expect(target('let k = "accounts/1"\nget k\nget ("a" + "/b")\nget concat("c", "/d")\nget "services/b"')).toEqual({ key: 'services/b' });
    expect(target('set ("a/" + @x) get "services/v"', { x: 'y' })).toEqual({ key: 'services/v' });
  });

  it('is undefined when no key is known', () => {
    expect(target('return 1')).toBeUndefined();
    expect(target('let k = @k\nget k', { k: 'a/b' })).toBeUndefined();
    expect(target('get 5')).toBeUndefined();
  });
});
