/** The parser: the tree of every construct, and every syntax error with its code, line and column. */
import { describe, expect, it } from 'vitest';
import { makeLimits } from '../../src/limits.js';
import { parseScript } from '../../src/script/index.js';
import { expectError, failure, seedExample } from './harness.js';
import { show } from './show.js';

const tree = (source: string): string => show(parseScript(source));

async function expectParseError(source: string, line: number, column: number, message?: RegExp | string, code = 'SCRIPT_PARSE_ERROR' as const): Promise<void> {
  const error = await failure(() => parseScript(source));
  expectError(error, code, line, column);
  if (message !== undefined) expect(error.message).toMatch(message);
}

describe('parseScript: statements', () => {
  it('parses the seed example exactly as written', () => {
    expect(tree(seedExample)).toBe(
      '(let all_services (get-by-prefix "services")) ' +
        '(if (contains all_services "services/users") (then (set "services/users" "localhost:8084"))) ' +
        '(let all_services (get-by-prefix "services")) ' +
        '(if (contains all_services "services/users") (then (return true))) ' +
        '(return false)',
    );
  });

  it('parses let, and allows declaring a name again', () => {
    expect(tree('let x = 1\nlet x = x + 1')).toBe('(let x 1) (let x (+ x 1))');
  });

  it('parses set with every option, in any order, the value stopping before them', () => {
    expect(tree('set "services/a" "v"')).toBe('(set "services/a" "v")');
    expect(tree('set "k" "a" + "b" nx ex 100 cmprev 3')).toBe('(set "k" (+ "a" "b") nx ex 100 cmprev 3)');
    expect(tree('let v = 1\nset "k" v CMPREV @rev XX EX -5')).toBe('(let v 1) (set "k" v xx ex -5 cmprev @rev)');
    expect(tree('set @key to_str(1)')).toBe('(set @key (to_str 1))');
  });

  it('parses get, exists, delete, incr and get by prefix', () => {
    expect(tree('get "k"')).toBe('(get "k")');
    expect(tree('exists "k"')).toBe('(exists "k")');
    expect(tree('delete "k"')).toBe('(delete "k")');
    expect(tree('delete "k" cmprev 7')).toBe('(delete "k" cmprev 7)');
    expect(tree('incr "k"')).toBe('(incr "k")');
    expect(tree('incr "k" by 5')).toBe('(incr "k" by 5)');
    expect(tree('incr "k" BY -2 ex 60000')).toBe('(incr "k" by -2 ex 60000)');
    expect(tree('incr "k" ex 10 by @n')).toBe('(incr "k" by @n ex 10)');
    expect(tree('incr "k" by -@n')).toBe('(incr "k" by (- @n))');
    expect(tree('get by prefix "services"')).toBe('(get-by-prefix "services")');
    expect(tree('get by prefix @bucket')).toBe('(get-by-prefix @bucket)');
  });

  it('takes a primary expression as a key', () => {
    expect(tree('get @key')).toBe('(get @key)');
    expect(tree('let k = "a"\nget k')).toBe('(let k "a") (get k)');
    expect(tree('get ("services/" + @name)')).toBe('(get (+ "services/" @name))');
    expect(tree('get concat("services/", @name)')).toBe('(get (concat "services/" @name))');
    expect(tree('let l = []\ndelete (l[0])')).toBe('(let l []) (delete (index l 0))');
    // The key is a primary: what follows it is set's value, or applies to the action's result.
    expect(tree('let x = get "a" + "b"')).toBe('(let x (+ (get "a") "b"))');
    expect(tree('let v = (get "k")["value"]')).toBe('(let v (index (get "k") "value"))');
    expect(tree('let v = get "k"["value"]')).toBe('(let v (index (get "k") "value"))');
    expect(tree('set "k" [1]')).toBe('(set "k" [1])');
    expect(tree('set "k" "v"[0]')).toBe('(set "k" (index "v" 0))');
  });

  it('uses get, set, exists, delete, incr and get by prefix as expressions', () => {
    expect(tree('let ok = set "k" "v" nx')).toBe('(let ok (set "k" "v" nx))');
    expect(tree('let n = incr "c" by 2')).toBe('(let n (incr "c" by 2))');
    expect(tree('let gone = delete "k"')).toBe('(let gone (delete "k"))');
    expect(tree('let here = exists "k" and not exists "j"')).toBe('(let here (and (exists "k") (not (exists "j"))))');
    expect(tree('return len(get by prefix "s")')).toBe('(return (len (get-by-prefix "s")))');
    expect(tree('if set "k" "v" nx then return 1 end')).toBe('(if (set "k" "v" nx) (then (return 1)))');
  });

  it('parses if, else and nesting, on several lines or one', () => {
    expect(tree('if a_ then\n  return 1\nelse\n  return 2\nend'.replace('a_', 'true'))).toBe('(if true (then (return 1)) (else (return 2)))');
    expect(tree('if true then return 1 else return 2 end')).toBe('(if true (then (return 1)) (else (return 2)))');
    expect(tree('if true then end')).toBe('(if true (then))');
    expect(tree('if true\nthen\nif false then rollback end\nend')).toBe('(if true (then (if false (then (rollback)))))');
    expect(tree('if 1 then else end')).toBe('(if 1 (then) (else))');
  });

  it('parses for loops, whose variable is declared for the body', () => {
    expect(tree('for e in get by prefix "s" do\n  delete e\nend')).toBe('(for e (get-by-prefix "s") (do (delete e)))');
    expect(tree('for x in [1, 2] do let y = x end')).toBe('(for x [1 2] (do (let y x)))');
  });

  it('parses return with and without a value; the value must start on its line', () => {
    expect(tree('return')).toBe('(return)');
    expect(tree('return 1 + 2')).toBe('(return (+ 1 2))');
    expect(tree('return\nset "k" "v"')).toBe('(return) (set "k" "v")');
    expect(tree('if true then return end')).toBe('(if true (then (return)))');
    expect(tree('return;')).toBe('(return)');
    expect(tree('begin return commit')).toBe('(begin (return))');
  });

  it('parses throw', () => {
    expect(tree('throw "no such account"')).toBe('(throw "no such account")');
    expect(tree('throw concat("low: ", @n)')).toBe('(throw (concat "low: " @n))');
  });

  it('parses begin ... commit, begin ... rollback and rollback anywhere', () => {
    expect(tree('begin\n  set "a" "1"\ncommit')).toBe('(begin (set "a" "1"))');
    expect(tree('begin\n  set "a" "1"\nrollback')).toBe('(begin (set "a" "1") (rollback))');
    expect(tree('begin if true then rollback end; set "a" "1" commit')).toBe('(begin (if true (then (rollback))) (set "a" "1"))');
    expect(tree('rollback')).toBe('(rollback)');
    expect(tree('begin begin commit commit')).toBe('(begin (begin))');
  });

  it('takes keywords, options and function names in any case', () => {
    expect(tree('LET x = GET BY PREFIX "s"\nIf Contains(x, "s/a") THEN Set "s/a" "v" NX Else Return NULL End')).toBe(
      '(let x (get-by-prefix "s")) (if (contains x "s/a") (then (set "s/a" "v" nx)) (else (return null)))',
    );
    expect(tree('Begin Rollback')).toBe('(begin (rollback))');
    expect(tree('return TRUE Or False')).toBe('(or true false)'.replace(/^/, '(return ').concat(')'));
  });

  it('keeps variable names case-sensitive', async () => {
    await expectParseError('let x = 1\nreturn X', 2, 8, /unknown variable `X`/);
  });

  it('separates statements by new lines or semicolons, and skips comments and blank lines', () => {
    const source = '# a comment\r\nlet a = 1; let b = 2 // another\n\n;;\nreturn a # trailing\n';
    expect(tree(source)).toBe('(let a 1) (let b 2) (return a)');
    expect(tree('')).toBe('');
    expect(tree('  \n\t# nothing\n')).toBe('');
  });

  it('lets contextual words (by, prefix, nx, xx, ex, cmprev) name variables', () => {
    expect(tree('let prefix = "s"\nlet by = 2\nlet nx = "v"\nget by prefix prefix\nincr "k" by by\nset "k" nx nx')).toBe(
      '(let prefix "s") (let by 2) (let nx "v") (get-by-prefix prefix) (incr "k" by by) (set "k" nx nx)',
    );
    expect(tree('let by = "k"\nget by')).toBe('(let by "k") (get by)');
  });
});

describe('parseScript: expressions', () => {
  const expression = (source: string): string => {
    const printed = tree(`let a = 1\nlet b = 2\nlet c = 3\nlet l = []\nreturn ${source}`);
    return printed.slice(printed.indexOf('(return ') + 8, -1);
  };

  it('follows precedence: or < and < not < comparison < + - < * / % < unary minus < indexing', () => {
    expect(expression('1 + 2 * 3')).toBe('(+ 1 (* 2 3))');
    expect(expression('(1 + 2) * 3')).toBe('(* (+ 1 2) 3)');
    expect(expression('a - b - c')).toBe('(- (- a b) c)');
    expect(expression('a / b % c')).toBe('(% (/ a b) c)');
    expect(expression('-a * b')).toBe('(* (- a) b)');
    expect(expression('- -a')).toBe('(- (- a))');
    expect(expression('-l[0]')).toBe('(- (index l 0))');
    expect(expression('not a == b and c < 3 or b >= 2')).toBe('(or (and (not (== a b)) (< c 3)) (>= b 2))');
    expect(expression('a != b')).toBe('(!= a b)');
    expect(expression('a <= b')).toBe('(<= a b)');
    expect(expression('a > b')).toBe('(> a b)');
    expect(expression('not not a')).toBe('(not (not a))');
  });

  it('parses found(x), not found(x), and the postfix x found / x not found', () => {
    expect(expression('found(a)')).toBe('(found a)');
    expect(expression('not found(a)')).toBe('(not (found a))');
    expect(expression('a found')).toBe('(found a)');
    expect(expression('a not found')).toBe('(not-found a)');
    expect(expression('(get "k") not found and a')).toBe('(and (not-found (get "k")) a)');
    expect(expression('FOUND(a)')).toBe('(found a)');
  });

  it('parses literals: strings in three quotes with escapes, ints, floats, bools, null, lists', () => {
    expect(expression(String.raw`"a\"b\\c\n\t\r\0\/\u00e9\u{1F600}"`)).toBe(JSON.stringify('a"b\\c\n\t\r\0/é😀'));
    expect(expression(`'it''s'`.replace("''", "\\'"))).toBe(JSON.stringify("it's"));
    expect(expression('`my-config`')).toBe('"my-config"');
    expect(expression('0')).toBe('0');
    expect(expression('9223372036854775807')).toBe('9223372036854775807');
    expect(expression('-9223372036854775808')).toBe('-9223372036854775808');
    expect(expression('1.5')).toBe('1.5f');
    expect(expression('-2.5')).toBe('-2.5f');
    expect(expression('1e3')).toBe('1000f');
    expect(expression('2.5E-1')).toBe('0.25f');
    expect(expression('true')).toBe('true');
    expect(expression('null')).toBe('null');
    expect(expression('[]')).toBe('[]');
    expect(expression('[1, "two", [3.5], null,]')).toBe('[1 "two" [3.5f] null]');
  });

  it('parses indexing chains and calls', () => {
    expect(expression('l[0][1]')).toBe('(index (index l 0) 1)');
    expect(expression('(get "k")["revision"]')).toBe('(index (get "k") "revision")');
    expect(expression('concat()')).toBe('(concat)');
    expect(expression('concat(a, b, c)')).toBe('(concat a b c)');
    expect(expression('MAX(1, 2)')).toBe('(max 1 2)');
    expect(expression('min(l)')).toBe('(min l)');
    expect(expression('to_int(to_str(1))')).toBe('(to_int (to_str 1))');
    expect(expression('lower(upper(keys(l)[0]))')).toBe('(lower (upper (index (keys l) 0)))');
    expect(expression('revision(get "k")')).toBe('(revision (get "k"))');
    expect(expression('len(l)')).toBe('(len l)');
  });

  it('lets an expression continue on the next line after an operator or inside brackets', () => {
    expect(expression('a +\n  b')).toBe('(+ a b)');
    expect(expression('(\n a\n + b\n)')).toBe('(+ a b)');
    expect(expression('[\n 1,\n 2\n]')).toBe('[1 2]');
    expect(expression('contains(\n l,\n a\n)')).toBe('(contains l a)');
    expect(expression('a and\n b')).toBe('(and a b)');
    expect(expression('a ==\n b')).toBe('(== a b)');
  });

  it('counts columns in characters, not UTF-16 units', async () => {
    await expectParseError('let x = "😀😀" !', 1, 14, /unexpected character "!"/);
  });
});

describe('parseScript: errors', () => {
  const cases: [string, string, number, number, RegExp][] = [
    ['unterminated string', 'let x = "abc', 1, 9, /unterminated string/],
    ['string broken by a new line', 'let x = "ab\nc"', 1, 9, /unterminated string/],
    ['unknown escape', 'let x = "a\\qb"', 1, 11, /unknown escape \\q/],
    ['malformed \\u escape', 'let x = "\\u12"', 1, 10, /malformed \\uXXXX/],
    ['malformed \\u{} escape', 'let x = "\\u{110000}"', 1, 10, /malformed/],
    ['unexpected character', 'let x = 1 ! 2', 1, 11, /unexpected character "!" \(use `not`\)/],
    ['&& instead of and', 'let x = true && false', 1, 14, /use `and`/],
    ['malformed number', 'let x = 12abc', 1, 9, /malformed number/],
    ['a float too large', 'let x = 1e999', 1, 9, /too large/],
    ['an int past int64', 'let x = 9223372036854775808', 1, 9, /outside the 64-bit range/],
    ['an int below int64', 'let x = -9223372036854775809', 1, 9, /outside the 64-bit range/],
    ['@ without a name', 'get @ "k"', 1, 5, /parameter name/],
    ['missing then', 'if true\n  set "a" "b"\nend', 2, 3, /expected `then` after the condition of `if`, found `set`/],
    ['missing end of if', 'if true then\n  set "a" "b"', 2, 14, /expected `end` to close the `if` at line 1, column 1, found the end of the script/],
    ['missing end of for', 'for x in [] do\n', 2, 1, /expected `end` to close the `for` at line 1, column 1/],
    ['missing in', 'for x [1] do end', 1, 7, /expected `in` after `for x`/],
    ['missing do', 'for x in [1] end', 1, 14, /expected `do` after the list of `for`/],
    ['begin without commit', 'begin\n  set "a" "b"\n', 3, 1, /expected `commit` or `rollback` to close the `begin` at line 1, column 1/],
    ['commit without begin', 'set "a" "b"\ncommit', 2, 1, /`commit` without a `begin`/],
    ['stray end', 'set "a" "b"\n  end', 2, 3, /`end` without an `if` or `for`/],
    ['stray else', 'else', 1, 1, /`else` without an `if`/],
    ['end closing a begin', 'begin end', 1, 7, /`end` without/],
    ['let without a name', 'let = 5', 1, 5, /expected a variable name after `let`, found `=`/],
    ['let of a keyword', 'let If = 5', 1, 5, /found the keyword `If`/],
    ['for over a keyword', 'for null in [] do end', 1, 5, /expected a variable name after `for`/],
    ['let without =', 'let x 5', 1, 7, /expected `=` after `let x`/],
    ['let without a value', 'let x =', 1, 8, /expected an expression, found the end of the script/],
    ['unknown variable', 'let x = 1\nreturn y + x', 2, 8, /unknown variable `y`/],
    ['variable used in its own let', 'let x = x', 1, 9, /unknown variable `x`/],
    ['unknown function', 'return size([])', 1, 8, /unknown function `size`/],
    ['keyword called', 'return if(1)', 1, 8, /expected an expression, found `if`/],
    ['too many arguments', 'return len([], [])', 1, 8, /`len` takes 1 argument, got 2/],
    ['too few arguments', 'return contains([])', 1, 8, /`contains` takes 2 arguments, got 1/],
    ['min without arguments', 'return min()', 1, 8, /`min` takes at least 1 argument/],
    ['found without parentheses', 'return found', 1, 8, /expected an expression, found `found`/],
    ['chained comparison', 'return 1 < 2 < 3', 1, 14, /comparisons do not chain/],
    ['nx with xx', 'set "k" "v" nx xx', 1, 16, /`nx` \(only if absent\) and `xx` \(only if present\) cannot be combined/],
    ['an option twice', 'set "k" "v" ex 1 EX 2', 1, 18, /`EX` is given twice/],
    ['an option of another action', 'incr "k" nx', 1, 10, /expected the end of the statement/],
    ['get without a key', 'get\nset "a" "b"', 1, 4, /expected a key after `get`, found the end of the line/],
    ['get by prefix without a prefix', 'get by prefix', 1, 14, /expected a prefix after `get by prefix`/],
    ['set without a value', 'set "k"', 1, 8, /expected a value after the key of `set`/],
    ['set with a value on the next line', 'set "k"\n"v"', 1, 8, /expected a value/],
    ['a bare expression', '1 + 2', 1, 1, /expected a statement, found the number 1/],
    ['a bare variable', 'let x = 1\nx', 2, 1, /expected a statement, found `x`/],
    ['two values for set', 'set "a" "b" "c"', 1, 13, /expected the end of the statement \(a new line or `;`\), found a string/],
    ['an indexed key without parentheses', 'let l = []\ndelete l[0]', 2, 9, /found `\[` \(a key is a primary expression: index it in parentheses/],
    ['a computed key without parentheses', 'set "services/" + "a" "v"', 1, 17, /expected an expression, found `\+`/],
    ['unclosed parenthesis', 'return (1 + 2', 1, 14, /expected `\)` to close the `\(` at line 1, column 8/],
    ['unclosed list', 'return [1, 2\nset "a" "b"', 2, 1, /expected `]` to close the `\[` at line 1, column 8, found `set`/],
    ['unclosed index', 'let l = []\nreturn l[0', 2, 11, /expected `]` to close the `\[` at line 2, column 9/],
    ['not without found', 'let x = 1\nreturn x not 2', 2, 10, /expected the end of the statement, found `not`|found `not`/],
    ['a statement after a value on one line', 'let x = 1 let y = 2', 1, 11, /expected the end of the statement/],
    ['a statement after set in a one-line block', 'set "a" "b" rollback', 1, 13, /expected the end of the statement/],
    ['throw without a value', 'throw\n"x"', 1, 6, /expected an expression, found the end of the line/],
    ['an else after else', 'if true then else else end', 1, 19, /`else` without an `if`/],
  ];

  it.each(cases)('%s', async (_name, source, line, column, message) => {
    await expectParseError(source, line, column, message);
  });
});

describe('parseScript: bounds', () => {
  it('refuses a script larger than maxScriptBytes, counting UTF-8 bytes', async () => {
    const limits = makeLimits({ maxScriptBytes: 11 });
    expect(() => parseScript('return "é"', limits)).not.toThrow();
    const error = await failure(() => parseScript('return "éé"', limits));
    expect(error.code).toBe('SCRIPT_LIMIT');
    expect(error.details).toMatchObject({ scriptBytes: 13, maxScriptBytes: 11 });
  });

  const nestingCases: [string, (depth: number) => string][] = [
    ['parentheses', (depth) => `return ${'('.repeat(depth)}1${')'.repeat(depth)}`],
    ['lists', (depth) => `return ${'['.repeat(depth)}${']'.repeat(depth)}`],
    ['not', (depth) => `return ${'not '.repeat(depth)}true`],
    ['unary minus', (depth) => `let a = 1\nreturn ${'-'.repeat(depth)}a`],
    ['if blocks', (depth) => `${'if true then\n'.repeat(depth)}${'end\n'.repeat(depth)}`],
    ['for blocks', (depth) => `${'for x in [] do\n'.repeat(depth)}${'end\n'.repeat(depth)}`],
    ['begin blocks', (depth) => `${'begin\n'.repeat(depth)}${'commit\n'.repeat(depth)}`],
    ['a chain of +', (depth) => `return 1${' + 1'.repeat(depth)}`],
    ['a chain of and', (depth) => `return true${' and true'.repeat(depth)}`],
    ['a chain of indexes', (depth) => `let l = []\nreturn l${'[0]'.repeat(depth)}`],
    ['calls', (depth) => `return ${'len('.repeat(depth)}"x"${')'.repeat(depth)}`],
    ['get of get', (depth) => `return ${'get '.repeat(depth)}"k"`],
  ];

  it.each(nestingCases)('accepts moderate nesting of %s and refuses more than 64 levels with SCRIPT_LIMIT', async (_name, build) => {
    expect(() => parseScript(build(20))).not.toThrow();
    const error = await failure(() => parseScript(build(65)));
    expect(error.code).toBe('SCRIPT_LIMIT');
    expect(error.message).toMatch(/^line \d+, column \d+: the script nests deeper than 64 levels$/);
    expect(error.details).toMatchObject({ maxNesting: 64 });
  });

  it('refuses pathological nesting with SCRIPT_LIMIT, not a stack overflow', async () => {
    for (const [, build] of nestingCases) {
      const error = await failure(() => parseScript(build(20_000)));
      expect(error.code).toBe('SCRIPT_LIMIT');
    }
  });

  it('reports where the nesting went too deep', async () => {
    const error = await failure(() => parseScript(`return ${'('.repeat(70)}1${')'.repeat(70)}`));
    // `return`'s expression is level 1 and the expression inside the k-th `(` (column 7 + k) is
    // level k + 1, starting at column 8 + k: level 65 starts at column 72.
    expectError(error, 'SCRIPT_LIMIT', 1, 72);
  });
});
