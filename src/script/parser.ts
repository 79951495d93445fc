/**
 * A recursive-descent parser for the script language (grammar in docs/script-language.md).
 *
 * Bounded recursion: every place where the parser can recurse into itself goes through `nest`,
 * and left-leaning chains (`a + b + c ...`, `x[0][1]...`) are counted too, so neither the parser
 * nor the evaluator ever recurses more than about maxScriptNesting levels, whatever the input.
 * Past that the script is refused with SCRIPT_LIMIT, never with a stack overflow.
 *
 * Checks made here so that a script fails before it reads anything: unknown functions and wrong
 * argument counts, variables used before any `let` or `for` names them, integer literals outside
 * the 64-bit range, option combinations (`nx` with `xx`, an option twice).
 */
import { AtollError } from '../errors.js';
import { utf8ByteLength } from '../keys/utf8.js';
import { defaultLimits, type Limits } from '../limits.js';
import { int64Max, int64Min } from '../mvcc/int64-text.js';
import type { ActionExpression, BinaryOperator, Expression, KeyOperand, Script, Statement } from './ast.js';
import { builtins } from './builtins.js';
import { tokenize, type Punctuation, type Token } from './lexer.js';
import { limitError, parseError } from './script-errors.js';
import type { SourcePosition } from './source-position.js';
import { maxScriptNesting } from './values.js';

/** Words that can never name a variable. `by`, `prefix`, `nx`, `xx`, `ex`, `cmprev` only matter where they are expected. */
const reservedWords = new Set([
  'let', 'set', 'get', 'exists', 'delete', 'incr', 'if', 'then', 'else', 'end', 'for', 'in', 'do', 'return', 'throw',
  'begin', 'commit', 'rollback', 'and', 'or', 'not', 'true', 'false', 'null', 'found',
]);
const actionWords = new Set(['get', 'set', 'exists', 'delete', 'incr']);
/** Words that close a block, and so also end the statement before them. */
const blockEndWords = new Set(['end', 'else', 'commit', 'rollback']);
const comparisonOperators: ReadonlySet<string> = new Set<BinaryOperator>(['==', '!=', '<', '<=', '>', '>=']);
const additiveOperators: ReadonlySet<string> = new Set<BinaryOperator>(['+', '-']);
const multiplicativeOperators: ReadonlySet<string> = new Set<BinaryOperator>(['*', '/', '%']);

/** The options an action takes, and whether each is followed by an operand. */
const setOptions: ReadonlyMap<string, boolean> = new Map([
  ['nx', false],
  ['xx', false],
  ['ex', true],
  ['cmprev', true],
  ['lease', true],
  ['fence', true],
]);
const incrOptions: ReadonlyMap<string, boolean> = new Map([
  ['by', true],
  ['ex', true],
]);
const deleteOptions: ReadonlyMap<string, boolean> = new Map([['cmprev', true]]);

interface ParsedOption {
  readonly token: Token;
  readonly operand: Expression | undefined;
}

function describe(token: Token): string {
  switch (token.kind) {
    case 'word':
      return `\`${token.text}\``;
    case 'string':
      return 'a string';
    case 'int':
    case 'float':
      return `the number ${token.value}`;
    case 'param':
      return `@${token.name}`;
    case 'punctuation':
      return `\`${token.text}\``;
    case 'newline':
      return 'the end of the line';
    case 'end-of-script':
      return 'the end of the script';
  }
}

function isWord(token: Token, lower: string): boolean {
  return token.kind === 'word' && token.lower === lower;
}

function isPunctuation(token: Token, text: Punctuation): boolean {
  return token.kind === 'punctuation' && token.text === text;
}

function operatorIn(token: Token, operators: ReadonlySet<string>): BinaryOperator | undefined {
  return token.kind === 'punctuation' && operators.has(token.text) ? (token.text as BinaryOperator) : undefined;
}

function at(position: SourcePosition): string {
  return `line ${position.line}, column ${position.column}`;
}

function intLiteral(value: bigint, position: SourcePosition): Expression {
  if (value < int64Min || value > int64Max) throw parseError(`the integer ${value} is outside the 64-bit range`, position);
  return { kind: 'literal', value, position };
}

class Parser {
  private index = 0;
  /** How many nested constructs enclose the current token. */
  private depth = 0;
  /** How many brackets enclose the current token. */
  private bracketDepth = 0;
  /** Variable names a `let` or `for` before the current token declares. */
  private readonly declared = new Set<string>();
  private readonly params: { name: string; position: SourcePosition }[] = [];
  private readonly keyOperands: KeyOperand[] = [];

  constructor(private readonly tokens: readonly Token[]) {}

  parseScript(): Script {
    const body = this.parseStatements(new Set());
    const sortedKeys = [...this.keyOperands].sort((a, b) => a.expression.position.offset - b.expression.position.offset);
    return { body, params: this.params, keyOperands: sortedKeys };
  }

  // ---------------------------------------------------------------- tokens

  /** The token `ahead` tokens on; inside brackets new lines do not count (and are skipped). */
  private peek(ahead = 0): Token {
    if (this.bracketDepth === 0) return this.tokens[Math.min(this.index + ahead, this.tokens.length - 1)]!;
    while (this.tokens[this.index]!.kind === 'newline') this.index++;
    let at = this.index;
    for (let skipped = 0; skipped < ahead && at < this.tokens.length - 1; skipped++) {
      at++;
      while (this.tokens[at]!.kind === 'newline') at++;
    }
    return this.tokens[at]!;
  }

  /** Parses inside `(...)` or `[...]`, where an expression may run over several lines. */
  private inBrackets<T>(parse: () => T): T {
    this.bracketDepth++;
    try {
      return parse();
    } finally {
      this.bracketDepth--;
    }
  }

  private next(): Token {
    const token = this.peek();
    if (token.kind !== 'end-of-script') this.index++;
    return token;
  }

  private skipNewlines(): void {
    while (this.peek().kind === 'newline') this.next();
  }

  private expectPunctuation(text: Punctuation, context: string): Token {
    this.skipNewlines();
    const token = this.peek();
    if (!isPunctuation(token, text)) throw parseError(`expected \`${text}\` ${context}, found ${describe(token)}`, token.position);
    return this.next();
  }

  private expectWord(lower: string, context: string): Token {
    this.skipNewlines();
    const token = this.peek();
    if (!isWord(token, lower)) throw parseError(`expected \`${lower}\` ${context}, found ${describe(token)}`, token.position);
    return this.next();
  }

  private expectName(context: string): string {
    const token = this.peek();
    if (token.kind !== 'word') throw parseError(`expected a variable name ${context}, found ${describe(token)}`, token.position);
    if (reservedWords.has(token.lower)) {
      throw parseError(`expected a variable name ${context}, found the keyword ${describe(token)}`, token.position);
    }
    this.next();
    return token.text;
  }

  /** Runs `parse` one nesting level deeper, refusing to go past maxScriptNesting. */
  private nest<T>(position: SourcePosition, parse: () => T): T {
    this.checkNesting(1, position);
    this.depth++;
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private checkNesting(extra: number, position: SourcePosition): void {
    if (this.depth + extra > maxScriptNesting) {
      throw limitError(`the script nests deeper than ${maxScriptNesting} levels`, position, { maxNesting: maxScriptNesting });
    }
  }

  // ---------------------------------------------------------------- statements

  /** Statements up to the end of the script or one of `closers` (which is left unconsumed). */
  private parseStatements(closers: ReadonlySet<string>): Statement[] {
    const statements: Statement[] = [];
    // Every turn consumes a token or throws, so the loop ends.
    for (;;) {
      while (this.peek().kind === 'newline' || isPunctuation(this.peek(), ';')) this.next();
      const token = this.peek();
      if (token.kind === 'end-of-script' || (token.kind === 'word' && closers.has(token.lower))) return statements;
      statements.push(this.parseStatement());
      this.expectStatementEnd(closers);
    }
  }

  private expectStatementEnd(closers: ReadonlySet<string>): void {
    const token = this.peek();
    if (token.kind === 'newline' || token.kind === 'end-of-script' || isPunctuation(token, ';')) return;
    if (token.kind === 'word' && closers.has(token.lower)) return;
    const hint = isPunctuation(token, '[') ? ' (a key is a primary expression: index it in parentheses, `get (names[0])`)' : '';
    throw parseError(`expected the end of the statement (a new line or \`;\`), found ${describe(token)}${hint}`, token.position);
  }

  private parseStatement(): Statement {
    const token = this.peek();
    const position = token.position;
    const word = token.kind === 'word' ? token.lower : '';
    switch (word) {
      case 'let':
        return this.parseLet();
      case 'if':
        return this.parseIf();
      case 'for':
        return this.parseFor();
      case 'begin':
        return this.parseBegin();
      case 'return':
        return this.parseReturn();
      case 'throw':
        this.next();
        return { kind: 'throw', value: this.parseExpression(), position };
      case 'rollback':
        this.next();
        return { kind: 'rollback', position };
      case 'commit':
        throw parseError('`commit` without a `begin`', position);
      case 'end':
        throw parseError('`end` without an `if` or `for` to close', position);
      case 'else':
        throw parseError('`else` without an `if`', position);
      default:
        if (actionWords.has(word)) return { kind: 'action', action: this.parseAction(), position };
        throw parseError(`expected a statement, found ${describe(token)}`, position);
    }
  }

  private parseLet(): Statement {
    const position = this.next().position;
    const name = this.expectName('after `let`');
    this.expectPunctuation('=', `after \`let ${name}\``);
    this.skipNewlines();
    const value = this.parseExpression();
    // Declared after its value, so `let x = x + 1` needs an earlier x.
    this.declared.add(name);
    return { kind: 'let', name, value, position };
  }

  private parseBlock(opener: Token, closers: readonly string[]): Statement[] {
    return this.nest(opener.position, () => this.parseStatements(new Set(closers)));
  }

  private expectBlockEnd(opener: Token, closers: readonly string[]): Token {
    const token = this.peek();
    if (token.kind === 'word' && closers.includes(token.lower)) return this.next();
    const expected = closers.map((closer) => `\`${closer}\``).join(' or ');
    const name = opener.kind === 'word' ? opener.lower : '';
    throw parseError(`expected ${expected} to close the \`${name}\` at ${at(opener.position)}, found ${describe(token)}`, token.position);
  }

  private parseIf(): Statement {
    const opener = this.next();
    const condition = this.parseExpression();
    this.expectWord('then', 'after the condition of `if`');
    const then = this.parseBlock(opener, ['else', 'end']);
    let otherwise: Statement[] | undefined;
    if (isWord(this.peek(), 'else')) {
      this.next();
      otherwise = this.parseBlock(opener, ['end']);
    }
    this.expectBlockEnd(opener, ['end']);
    return { kind: 'if', condition, then, otherwise, position: opener.position };
  }

  private parseFor(): Statement {
    const opener = this.next();
    const name = this.expectName('after `for`');
    this.expectWord('in', `after \`for ${name}\``);
    const iterable = this.parseExpression();
    this.expectWord('do', 'after the list of `for`');
    this.declared.add(name);
    const body = this.parseBlock(opener, ['end']);
    this.expectBlockEnd(opener, ['end']);
    return { kind: 'for', name, iterable, body, position: opener.position };
  }

  private parseBegin(): Statement {
    const opener = this.next();
    const body = this.parseBlock(opener, ['commit', 'rollback']);
    const closer = this.expectBlockEnd(opener, ['commit', 'rollback']);
    const rollback: Statement[] = isWord(closer, 'rollback') ? [{ kind: 'rollback', position: closer.position }] : [];
    return { kind: 'block', body: [...body, ...rollback], position: opener.position };
  }

  private parseReturn(): Statement {
    const position = this.next().position;
    const token = this.peek();
    // The value must start on the line of `return`: a `return` alone on its line returns null.
    const bare =
      token.kind === 'newline' ||
      token.kind === 'end-of-script' ||
      isPunctuation(token, ';') ||
      (token.kind === 'word' && blockEndWords.has(token.lower));
    return { kind: 'return', value: bare ? undefined : this.parseExpression(), position };
  }

  // ---------------------------------------------------------------- actions

  private parseAction(): ActionExpression {
    const token = this.next();
    const position = token.position;
    const word = token.kind === 'word' ? token.lower : '';
    if (word === 'get' && isWord(this.peek(), 'by') && isWord(this.peek(1), 'prefix')) {
      this.next();
      this.next();
      return { kind: 'getByPrefix', prefix: this.parseKeyOperand('prefix', 'after `get by prefix`'), position };
    }
    const key = this.parseKeyOperand('key', `after \`${word}\``);
    switch (word) {
      case 'get':
        return { kind: 'get', key, position };
      case 'exists':
        return { kind: 'exists', key, position };
      case 'delete': {
        const options = this.parseOptions(deleteOptions);
        return { kind: 'delete', key, ifModRevision: options.get('cmprev')?.operand, position };
      }
      case 'incr': {
        const options = this.parseOptions(incrOptions);
        return { kind: 'incr', key, delta: options.get('by')?.operand, ttlMs: options.get('ex')?.operand, position };
      }
      default:
        return this.parseSet(key, position);
    }
  }

  private parseSet(key: Expression, position: SourcePosition): ActionExpression {
    const start = this.peek();
    if (start.kind === 'newline' || start.kind === 'end-of-script') {
      throw parseError(`expected a value after the key of \`set\`, found ${describe(start)}`, start.position);
    }
    const value = this.parseExpression();
    const options = this.parseOptions(setOptions);
    const nx = options.get('nx');
    const xx = options.get('xx');
    if (nx !== undefined && xx !== undefined) {
      const later = nx.token.position.offset > xx.token.position.offset ? nx : xx;
      throw parseError('`nx` (only if absent) and `xx` (only if present) cannot be combined', later.token.position);
    }
    return {
      kind: 'set',
      key,
      value,
      ifAbsent: nx !== undefined,
      ifPresent: xx !== undefined,
      ttlMs: options.get('ex')?.operand,
      ifModRevision: options.get('cmprev')?.operand,
      lease: options.get('lease')?.operand,
      fence: options.get('fence')?.operand,
      position,
    };
  }

  /**
   * A key (or prefix) operand: a primary expression (a literal, @param, variable, call or
   * parenthesised expression), so what follows it is the value of `set` or applies to the result
   * (`get "k"["value"]` indexes the entry; an indexed key is written `get (names[0])`).
   */
  private parseKeyOperand(kind: KeyOperand['kind'], context: string): Expression {
    const token = this.peek();
    if (token.kind === 'newline' || token.kind === 'end-of-script' || isPunctuation(token, ';')) {
      throw parseError(`expected a ${kind} ${context}, found ${describe(token)}`, token.position);
    }
    const expression = this.nest(token.position, () => this.parsePrimary());
    this.keyOperands.push({ kind, expression });
    return expression;
  }

  /** Option words on the rest of the line, in any order, each at most once. */
  private parseOptions(allowed: ReadonlyMap<string, boolean>): Map<string, ParsedOption> {
    const options = new Map<string, ParsedOption>();
    for (;;) {
      const token = this.peek();
      const takesOperand = token.kind === 'word' ? allowed.get(token.lower) : undefined;
      if (token.kind !== 'word' || takesOperand === undefined) return options;
      if (options.has(token.lower)) throw parseError(`\`${token.text}\` is given twice`, token.position);
      this.next();
      const operand = takesOperand ? this.nest(token.position, () => this.parseUnary()) : undefined;
      options.set(token.lower, { token, operand });
    }
  }

  // ---------------------------------------------------------------- expressions

  private parseExpression(): Expression {
    return this.nest(this.peek().position, () => this.parseOr());
  }

  /** A left-leaning chain of one precedence level; its length counts as nesting. */
  private parseChain(operatorOf: (token: Token) => BinaryOperator | undefined, operand: () => Expression): Expression {
    let left = operand();
    for (let length = 1; ; length++) {
      const token = this.peek();
      const operator = operatorOf(token);
      if (operator === undefined) return left;
      this.checkNesting(length, token.position);
      this.next();
      this.skipNewlines();
      left = { kind: 'binary', operator, left, right: operand(), position: token.position };
    }
  }

  private parseOr(): Expression {
    return this.parseChain((token) => (isWord(token, 'or') ? 'or' : undefined), () => this.parseAnd());
  }

  private parseAnd(): Expression {
    return this.parseChain((token) => (isWord(token, 'and') ? 'and' : undefined), () => this.parseNot());
  }

  private parseNot(): Expression {
    const token = this.peek();
    if (!isWord(token, 'not')) return this.parseComparison();
    this.next();
    return { kind: 'not', operand: this.nest(token.position, () => this.parseNot()), position: token.position };
  }

  /** One comparison, or a postfix `found` / `not found`; comparisons do not chain. */
  private parseComparison(): Expression {
    const left = this.parseAdditive();
    const token = this.peek();
    if (isWord(token, 'found')) {
      this.next();
      return { kind: 'found', operand: left, negated: false, position: token.position };
    }
    if (isWord(token, 'not') && isWord(this.peek(1), 'found')) {
      this.next();
      this.next();
      return { kind: 'found', operand: left, negated: true, position: token.position };
    }
    const operator = operatorIn(token, comparisonOperators);
    if (operator === undefined) return left;
    this.next();
    this.skipNewlines();
    const right = this.parseAdditive();
    const after = this.peek();
    if (operatorIn(after, comparisonOperators) !== undefined) {
      throw parseError('comparisons do not chain: write `a < b and b < c`', after.position);
    }
    return { kind: 'binary', operator, left, right, position: token.position };
  }

  private parseAdditive(): Expression {
    return this.parseChain((token) => operatorIn(token, additiveOperators), () => this.parseMultiplicative());
  }

  private parseMultiplicative(): Expression {
    return this.parseChain((token) => operatorIn(token, multiplicativeOperators), () => this.parseUnary());
  }

  private parseUnary(): Expression {
    const token = this.peek();
    if (!isPunctuation(token, '-')) return this.parsePostfix();
    this.next();
    const operand = this.peek();
    // A negative literal is one value, so -9223372036854775808 (int64 min) can be written.
    if (operand.kind === 'int' && !isPunctuation(this.peek(1), '[')) {
      this.next();
      return intLiteral(-operand.value, token.position);
    }
    if (operand.kind === 'float' && !isPunctuation(this.peek(1), '[')) {
      this.next();
      return { kind: 'literal', value: -operand.value, position: token.position };
    }
    return { kind: 'negate', operand: this.nest(token.position, () => this.parseUnary()), position: token.position };
  }

  private parsePostfix(): Expression {
    let target = this.parsePrimary();
    for (let length = 1; isPunctuation(this.peek(), '['); length++) {
      const open = this.next();
      this.checkNesting(length, open.position);
      const index = this.inBrackets(() => {
        const inside = this.parseExpression();
        this.expectPunctuation(']', `to close the \`[\` at ${at(open.position)}`);
        return inside;
      });
      target = { kind: 'index', target, index, position: open.position };
    }
    return target;
  }

  private parsePrimary(): Expression {
    const token = this.peek();
    const position = token.position;
    switch (token.kind) {
      case 'string':
        this.next();
        return { kind: 'literal', value: token.value, position };
      case 'int':
        this.next();
        return intLiteral(token.value, position);
      case 'float':
        this.next();
        return { kind: 'literal', value: token.value, position };
      case 'param':
        this.next();
        this.params.push({ name: token.name, position });
        return { kind: 'param', name: token.name, position };
      case 'punctuation':
        if (token.text === '(') return this.parseParenthesised();
        if (token.text === '[') return this.parseList();
        break;
      case 'word':
        return this.parseWord(token);
      default:
        break;
    }
    throw parseError(`expected an expression, found ${describe(token)}`, position);
  }

  private parseParenthesised(): Expression {
    const open = this.next();
    return this.inBrackets(() => {
      const expression = this.parseExpression();
      this.expectPunctuation(')', `to close the \`(\` at ${at(open.position)}`);
      return expression;
    });
  }

  /** Comma-separated expressions up to `close` (a trailing comma is allowed); new lines are free. */
  private parseItems(open: Token, close: Punctuation): Expression[] {
    return this.inBrackets(() => {
      const items: Expression[] = [];
      while (!isPunctuation(this.peek(), close)) {
        items.push(this.parseExpression());
        if (!isPunctuation(this.peek(), ',')) break;
        this.next();
      }
      this.expectPunctuation(close, `to close the \`${open.kind === 'punctuation' ? open.text : ''}\` at ${at(open.position)}`);
      return items;
    });
  }

  private parseList(): Expression {
    const open = this.next();
    return { kind: 'list', items: this.parseItems(open, ']'), position: open.position };
  }

  private parseWord(token: Extract<Token, { kind: 'word' }>): Expression {
    const position = token.position;
    switch (token.lower) {
      case 'true':
      case 'false':
        this.next();
        return { kind: 'literal', value: token.lower === 'true', position };
      case 'null':
        this.next();
        return { kind: 'literal', value: null, position };
      default:
        break;
    }
    if (actionWords.has(token.lower)) return this.parseAction();
    if (token.lower === 'found' && isPunctuation(this.peek(1), '(')) return this.parseCall(token);
    if (reservedWords.has(token.lower)) throw parseError(`expected an expression, found ${describe(token)}`, position);
    if (isPunctuation(this.peek(1), '(')) return this.parseCall(token);
    this.next();
    if (!this.declared.has(token.text)) {
      throw parseError(`unknown variable \`${token.text}\` (no \`let\` or \`for\` before this names it)`, position);
    }
    return { kind: 'variable', name: token.text, position };
  }

  private parseCall(token: Extract<Token, { kind: 'word' }>): Expression {
    const builtin = builtins.get(token.lower);
    if (builtin === undefined) throw parseError(`unknown function \`${token.text}\``, token.position);
    this.next();
    const args = this.parseItems(this.next(), ')');
    if (args.length < builtin.minArgs || args.length > builtin.maxArgs) {
      const expected =
        builtin.maxArgs === Infinity
          ? `at least ${builtin.minArgs}`
          : builtin.minArgs === builtin.maxArgs
            ? `${builtin.minArgs}`
            : `${builtin.minArgs} to ${builtin.maxArgs}`;
      throw parseError(`\`${token.lower}\` takes ${expected} argument${expected === '1' ? '' : 's'}, got ${args.length}`, token.position);
    }
    return { kind: 'call', name: token.lower, args, position: token.position };
  }
}

/**
 * Parses a script. Fails with SCRIPT_PARSE_ERROR (naming the line and column) on a syntax error,
 * or SCRIPT_LIMIT when the source is larger than maxScriptBytes or nests deeper than 64 levels.
 */
export function parseScript(source: string, limits: Limits = defaultLimits): Script {
  if (typeof source !== 'string') throw new AtollError('INVALID_ARGUMENT', 'a script must be a string');
  const scriptBytes = utf8ByteLength(source);
  if (scriptBytes > limits.maxScriptBytes) {
    throw new AtollError('SCRIPT_LIMIT', `a script is at most ${limits.maxScriptBytes} bytes, got ${scriptBytes}`, {
      scriptBytes,
      maxScriptBytes: limits.maxScriptBytes,
    });
  }
  return new Parser(tokenize(source)).parseScript();
}
