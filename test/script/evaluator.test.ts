/** Running scripts against a real TxnView over a Map-backed snapshot. */
import { describe, expect, it } from 'vitest';
import { FakeSnapshot, expectRunError, evaluate, failure, run, seedExample, seedExampleAsDescribed, snapshotNowMs } from './harness.js';

const services = (): FakeSnapshot =>
  new FakeSnapshot({
    'services/auth': 'localhost:8081',
    'services/matchmaking': 'localhost:8082',
    'services/inventory': 'localhost:8083',
  });

describe('the seed example', () => {
  it('runs exactly as written: nothing to overwrite, so it returns false and writes nothing', async () => {
    const { outcome, writes, view } = await run(seedExample, services());
    expect(outcome).toEqual({ committed: true, returnValue: false, resultJson: 'false' });
    expect(writes).toEqual({});
    expect(view.readPrefixes).toEqual(['services/']);
  });

  it('runs exactly as written when services/users exists: it overwrites it and returns true', async () => {
    const snapshot = services();
    snapshot.put('services/users', 'localhost:9999');
    const { outcome, writes } = await run(seedExample, snapshot);
    expect(outcome).toEqual({ committed: true, returnValue: true, resultJson: 'true' });
    expect(writes).toEqual({ 'services/users': 'localhost:8084' });
  });

  it('with `if not contains`, adds services/users and its second prefix read sees the own write', async () => {
    const { outcome, writes } = await run(seedExampleAsDescribed, services());
    expect(outcome).toEqual({ committed: true, returnValue: true, resultJson: 'true' });
    expect(writes).toEqual({ 'services/users': 'localhost:8084' });
  });

  it('with `if not contains`, leaves an existing services/users alone', async () => {
    const snapshot = services();
    snapshot.put('services/users', 'localhost:9999');
    const { outcome, writes } = await run(seedExampleAsDescribed, snapshot);
    expect(outcome).toEqual({ committed: true, returnValue: true, resultJson: 'true' });
    expect(writes).toEqual({});
  });
});

describe('reads and writes', () => {
  it('returns entries with every field, and null for a missing key', async () => {
    const snapshot = new FakeSnapshot();
    snapshot.put('services/a', 'one');
    snapshot.put('services/a', 'two', snapshotNowMs + 5000);
    expect(await evaluate('return get "services/a"', snapshot)).toEqual({
      key: 'services/a',
      value: 'two',
      revision: 2,
      createRevision: 1,
      version: 2,
      expiresAtMs: snapshotNowMs + 5000,
    });
    expect(await evaluate('return get "services/missing"', snapshot)).toBeNull();
    expect(await evaluate('return exists "services/a"', snapshot)).toBe(true);
    expect(await evaluate('return exists "services/missing"', snapshot)).toBe(false);
  });

  it('reads its own writes in get (revision 0 until committed) and in exists', async () => {
    const snapshot = new FakeSnapshot({ 'services/a': 'old' });
    const { outcome } = await run(
      'set "services/a" "new"\nset "services/b" "made"\nlet a = get "services/a"\nreturn [a["value"], a["revision"], a["version"], exists "services/b"]',
      snapshot,
    );
    expect(outcome.returnValue).toEqual(['new', 0, 2, true]);
    expect(await evaluate('delete "services/a"\nreturn [get "services/a", exists "services/a"]', snapshot)).toEqual([null, false]);
  });

  it('reads its own writes and deletes in prefix reads, in key order', async () => {
    const snapshot = services();
    const result = await evaluate(
      'delete "services/auth"\nset "services/billing" "b"\nset "services/inventory" "i2"\n' +
        'let all = get by prefix "services"\nreturn [keys(all), all[1]["value"], all[1]["revision"]]',
      snapshot,
    );
    expect(result).toEqual([['services/billing', 'services/inventory', 'services/matchmaking'], 'i2', 0]);
  });

  it('reads by a prefix inside a bucket, and returns an empty list when nothing matches', async () => {
    const snapshot = services();
    expect(await evaluate('return keys(get by prefix "services/in")', snapshot)).toEqual(['services/inventory']);
    expect(await evaluate('return get by prefix "services/zzz"', snapshot)).toEqual([]);
  });

  it('set nx writes only when the key is absent, and returns whether it wrote', async () => {
    const snapshot = new FakeSnapshot({ 'services/taken': 'x' });
    const { outcome, writes } = await run('return [set "services/taken" "y" nx, set "services/free" "y" nx]', snapshot);
    expect(outcome.returnValue).toEqual([false, true]);
    expect(writes).toEqual({ 'services/free': 'y' });
  });

  it('set xx writes only when the key is present', async () => {
    const snapshot = new FakeSnapshot({ 'services/taken': 'x' });
    const { outcome, writes } = await run('return [set "services/taken" "y" xx, set "services/free" "y" xx]', snapshot);
    expect(outcome.returnValue).toEqual([true, false]);
    expect(writes).toEqual({ 'services/taken': 'y' });
  });

  it('set cmprev writes only at the given modification revision (0: only if absent)', async () => {
    const snapshot = new FakeSnapshot({ 'services/a': 'x' });
    const revision = snapshot.records.get('services/a')!.modRevision;
    const { outcome, writes } = await run(
      `return [set "services/a" "stale" cmprev ${revision + 1}, set "services/a" "fresh" cmprev ${revision}, ` +
        'set "services/b" "new" cmprev 0, set "services/a" "again" cmprev 0]',
      snapshot,
    );
    expect(outcome.returnValue).toEqual([false, true, true, false]);
    expect(writes).toEqual({ 'services/a': 'fresh', 'services/b': 'new' });
  });

  it('set cmprev against a revision read in the script: compare-and-swap', async () => {
    const snapshot = new FakeSnapshot({ 'services/config': 'v1' });
    const { outcome, writes } = await run(
      'let current = get "services/config"\nreturn set "services/config" current + "+v2" cmprev revision(current)',
      snapshot,
    );
    expect(outcome.returnValue).toBe(true);
    expect(writes).toEqual({ 'services/config': 'v1+v2' });
  });

  it('set ex gives the write a TTL in milliseconds, visible as expiresAtMs', async () => {
    const { outcome, ttls } = await run('set "services/s" "v" ex 30000\nreturn (get "services/s")["expiresAtMs"]');
    expect(ttls).toEqual({ 'services/s': 30000 });
    expect(outcome.returnValue).toBe(snapshotNowMs + 30000);
  });

  it('set stores ints, floats and bools as text, and an entry as its exact bytes', async () => {
    const snapshot = new FakeSnapshot();
    const raw = snapshot.put('services/raw', '');
    snapshot.records.set('services/raw', { ...raw, value: new Uint8Array([0xff, 0x41]) });
    const { writes, view } = await run(
      'set "services/i" 42\nset "services/f" 1.5\nset "services/b" true\nset "services/n" -7\nset "services/copy" get "services/raw"',
      snapshot,
    );
    expect(writes).toMatchObject({ 'services/i': '42', 'services/f': '1.5', 'services/b': 'true', 'services/n': '-7' });
    const copy = view.writes().find((op) => op.key === 'services/copy');
    expect(copy?.type === 'put' && [...copy.value]).toEqual([0xff, 0x41]);
    // Malformed UTF-8 reads as U+FFFD in the script.
    expect(await evaluate('return (get "services/raw")["value"]', snapshot)).toBe('\ufffdA');
  });

  it('refuses null and lists as set values, with the position of set', async () => {
    const error = await expectRunError('let x = null\n  set "services/a" x', 'SCRIPT_ERROR', 2, 3);
    expect(error.message).toMatch(/set needs a string, number, bool or entry as the value, got null/);
    await expectRunError('set "services/a" [1]', 'SCRIPT_ERROR', 1, 1);
  });

  it('incr adds 1 or `by n`, from 0 when absent, and returns the new value', async () => {
    const snapshot = new FakeSnapshot({ 'services/hits': '41' });
    const { outcome, writes } = await run(
      'let a = incr "services/hits"\nlet b = incr "services/new" by -5\nincr "services/new" by @n\nreturn [a, b, to_int(get "services/new")]',
      snapshot,
      { params: { n: 2n } },
    );
    expect(outcome.returnValue).toEqual([42, -5, -3]);
    expect(writes).toEqual({ 'services/hits': '42', 'services/new': '-3' });
  });

  it('incr ex sets a TTL', async () => {
    const { ttls, writes } = await run('incr "services/rate" by 1 ex 1000');
    expect(writes).toEqual({ 'services/rate': '1' });
    expect(ttls).toEqual({ 'services/rate': 1000 });
  });

  it('incr keeps NOT_INTEGER and OVERFLOW from the view, with the position', async () => {
    const snapshot = new FakeSnapshot({ 'services/text': 'abc', 'services/big': '9223372036854775807' });
    const notInteger = await expectRunError('let x = 1\nlet y = incr "services/text"', 'NOT_INTEGER', 2, 9, snapshot);
    expect(notInteger.details).toMatchObject({ key: 'services/text' });
    await expectRunError('incr "services/big"', 'OVERFLOW', 1, 1, snapshot);
    await expectRunError('incr "services/a" by 1.5', 'SCRIPT_ERROR', 1, 22);
  });

  it('delete returns whether a live key was deleted, and takes cmprev', async () => {
    const snapshot = new FakeSnapshot({ 'services/a': '1', 'services/b': '2' });
    const revisionB = snapshot.records.get('services/b')!.modRevision;
    const { outcome, writes } = await run(
      `return [delete "services/a", delete "services/a", delete "services/none", delete "services/b" cmprev ${revisionB + 1}, delete "services/b" cmprev ${revisionB}]`,
      snapshot,
    );
    expect(outcome.returnValue).toEqual([true, false, false, false, true]);
    expect(writes).toEqual({ 'services/a': null, 'services/b': null });
  });

  it('uses an entry in a key position as its key', async () => {
    const { writes } = await run('for e in get by prefix "services" do\n  set e e + "!"\nend\ndelete (get "services/auth")', services());
    expect(writes).toEqual({
      'services/auth': null,
      'services/inventory': 'localhost:8083!',
      'services/matchmaking': 'localhost:8082!',
    });
  });

  it('refuses a key that is not a string, at the key', async () => {
    const error = await expectRunError('get 42', 'SCRIPT_ERROR', 1, 5);
    expect(error.message).toMatch(/a key must be a string, got int/);
    await expectRunError('let p = 1\nreturn get by prefix p', 'SCRIPT_ERROR', 2, 22);
  });

  it('propagates the view\'s OUTSIDE_TRANSACTION with the position, and keeps its message', async () => {
    const error = await expectRunError('set "services/a" "1"\n\nif true then\n    get "orders/1"\nend', 'OUTSIDE_TRANSACTION', 4, 5);
    expect(error.message).toBe('line 4, column 5: key "orders/1" is in bucket orders, not services');
    await expectRunError('return get by prefix "orders"', 'OUTSIDE_TRANSACTION', 1, 8);
    await expectRunError('set "services/a" "x"\nincr "orders/n"', 'OUTSIDE_TRANSACTION', 2, 1);
  });

  it('propagates the view\'s other errors with the position: an invalid key, a bad TTL, a huge prefix read', async () => {
    await expectRunError('return get ""', 'INVALID_KEY', 1, 8);
    await expectRunError('set "services/a" "v" ex 0', 'INVALID_ARGUMENT', 1, 1);
    const many = new FakeSnapshot();
    for (let index = 0; index < 11; index++) many.put(`services/${index}`, 'v');
    await expectRunError('let x = 1\nlet all = get by prefix "services"', 'RESOURCE_EXHAUSTED', 2, 11, many, { limits: { maxTxnPrefixKeys: 10 } });
  });
});

describe('control flow', () => {
  it('runs if / else branches by truthiness', async () => {
    const script = 'if @x then return "yes" else return "no" end';
    for (const [value, expected] of [
      [true, 'yes'],
      [false, 'no'],
      [null, 'no'],
      [0n, 'no'],
      [0, 'no'],
      ['', 'no'],
      [[], 'no'],
      ['0', 'yes'],
      [-1n, 'yes'],
      [[null], 'yes'],
    ] as const) {
      expect(await evaluate(script, undefined, { params: { x: value } })).toBe(expected);
    }
  });

  it('loops with for over a list, accumulating through flat scoping', async () => {
    expect(await evaluate('let total = 0\nfor x in [1, 2, 3, 4] do\n  if x % 2 == 0 then let total = total + x end\nend\nreturn [total, x]')).toEqual([6, 4]);
    expect(await evaluate('let n = 0\nfor x in [] do let n = n + 1 end\nreturn n')).toBe(0);
  });

  it('fails for over something that is not a list, at the iterable', async () => {
    const error = await expectRunError('for x in "abc" do\nend', 'SCRIPT_ERROR', 1, 10);
    expect(error.message).toMatch(/for needs a list, got string/);
  });

  it('fails reading a variable whose let did not run', async () => {
    const error = await expectRunError('if false then let x = 1 end\nreturn x', 'SCRIPT_ERROR', 2, 8);
    expect(error.message).toMatch(/variable `x` has no value here/);
  });

  it('returns from anywhere, ending the script: later statements do not run', async () => {
    const { outcome, writes } = await run(
      'for x in [1, 2, 3] do\n  set ("services/" + to_str(x)) "v"\n  if x == 2 then return x * 10 end\nend\nset "services/after" "no"',
    );
    expect(outcome).toEqual({ committed: true, returnValue: 20, resultJson: '20' });
    expect(writes).toEqual({ 'services/1': 'v', 'services/2': 'v' });
    expect(await evaluate('set "services/a" "b"')).toBeNull();
    expect(await evaluate('return')).toBeNull();
  });

  it('throw fails with SCRIPT_ERROR carrying the thrown value as text and as JSON', async () => {
    const error = await expectRunError('set "services/a" "1"\nthrow ["insufficient funds", 5]', 'SCRIPT_ERROR', 2, 1);
    expect(error.message).toBe('line 2, column 1: the script threw: ["insufficient funds",5]');
    expect(error.details).toEqual({ line: 2, column: 1, thrown: ['insufficient funds', 5] });
    const text = await expectRunError('throw "no"', 'SCRIPT_ERROR', 1, 1);
    expect(text.message).toBe('line 1, column 1: the script threw: no');
  });

  it('rollback ends the script without committing, anywhere', async () => {
    const { outcome, writes } = await run('set "services/a" "1"\nif true then\n  rollback\nend\nset "services/b" "2"\nreturn 1');
    expect(outcome).toEqual({ committed: false, returnValue: null, resultJson: 'null' });
    // Nothing after the rollback ran; what the view buffered before it the caller discards.
    expect(writes).toEqual({ 'services/a': '1' });
  });

  it('begin ... rollback rolls back; begin ... commit is a block', async () => {
    expect((await run('begin\n  set "services/a" "1"\nrollback\nreturn 1')).outcome).toEqual({ committed: false, returnValue: null, resultJson: 'null' });
    const { outcome, writes } = await run('begin\n  set "services/a" "1"\ncommit\nreturn 1');
    expect(outcome).toEqual({ committed: true, returnValue: 1, resultJson: '1' });
    expect(writes).toEqual({ 'services/a': '1' });
    // A return inside the block commits before the rollback is reached.
    expect((await run('begin\n  set "services/a" "1"\n  return 2\nrollback')).outcome).toEqual({ committed: true, returnValue: 2, resultJson: '2' });
  });

  it('does not commit itself: the caller commits the view\'s writes and read set', async () => {
    const { view } = await run('let a = get "services/a"\nset "services/b" "x"', new FakeSnapshot({ 'services/a': '1' }));
    expect(view.readKeys).toEqual(['services/a']);
    expect(view.writes()).toHaveLength(1);
  });

  it('runs one-line scripts with semicolons', async () => {
    expect(await evaluate('let a = 1; let b = 2; return a + b')).toBe(3);
  });

  it('fails at the operator on a type error, naming both types', async () => {
    const error = await expectRunError('let s = "5"\nreturn s + 1', 'SCRIPT_ERROR', 2, 10);
    expect(error.message).toBe('line 2, column 10: cannot apply + to string and int (strings are not numbers: convert with to_int or to_str)');
  });

  it('a failing script rejects, so its caller commits nothing', async () => {
    const snapshot = new FakeSnapshot();
    const error = await failure(run('set "services/a" "1"\nthrow "stop"', snapshot));
    expect(error.code).toBe('SCRIPT_ERROR');
  });
});
