/**
 * Runs a parsed script against a transaction's view. The evaluator never commits: it reads and
 * buffers writes through the TxnView, and tells the caller whether to commit them.
 *
 * Bounds (all SCRIPT_LIMIT, with the position where the limit was crossed):
 * - steps: every statement, every expression evaluation and every loop turn is one step, and
 *   built-ins that walk a list add one per element (maxScriptSteps);
 * - keys: distinct keys read or written, keys returned by prefix reads included (maxScriptKeys);
 * - time: the clock is read at every step, after every read of the store and between the pieces
 *   of a long operation (maxScriptMs); the time counted is the script's own, its pauses left out;
 * - values: strings, lists and nesting are capped (values.ts), recursion by the parser's nesting.
 *
 * Turns (pacing.ts): with `turns`, the script gives the event loop back whenever its turn is up,
 * before a step or between the pieces of a long operation, and goes on when the scheduler says.
 * Nothing it reads can change meanwhile: every read is at the view's snapshot revision.
 *
 * Scoping is flat: `let` and `for` bind names for the rest of the run, so a loop can accumulate
 * (`let total = total + x`). A variable whose `let` did not run (a branch not taken) is a
 * SCRIPT_ERROR when read.
 */
import { AtollError } from '../errors.js';
import { defaultLimits, type Limits } from '../limits.js';
import type { TxnRecord, TxnView } from '../txn/txn-view.js';
import type { ActionExpression, BinaryOperator, Expression, Script, Statement } from './ast.js';
import { builtins, type BuiltinContext } from './builtins.js';
import { arithmetic, compareValues, indexValue, negate, valuesEqual } from './operators.js';
import type { Pace, ScriptTurns } from './pacing.js';
import { importParams, type ScriptParams } from './params.js';
import { scriptError, valueError, valueLimitError, withPosition } from './script-errors.js';
import type { SourcePosition } from './source-position.js';
import {
  isList,
  isTruthy,
  jsonText,
  makeList,
  ScriptEntry,
  scriptValueToJson,
  storedBytesOf,
  textOf,
  typeName,
  valueCaps,
  type ScriptValue,
  type ValueCaps,
} from './values.js';

export interface ScriptRunOptions {
  readonly params: ScriptParams;
  readonly view: TxnView;
  readonly limits?: Limits;
  /** Milliseconds, for maxScriptMs; Date.now by default. */
  readonly clock?: () => number;
  /** How the script shares the event loop; without it the script never pauses. */
  readonly turns?: ScriptTurns;
  /** On `clock`: the caller's deadline. Past it the script stops with DEADLINE_EXCEEDED, pauses included. */
  readonly deadlineMs?: number;
}

export interface ScriptOutcome {
  /** False when the script rolled back: the caller must commit nothing. */
  readonly committed: boolean;
  /** The returned value as JSON (scriptValueToJson, built when read); null without a `return` or after a rollback. */
  readonly returnValue: unknown;
  /** JSON.stringify of returnValue, built in pieces within the script's limits: what the caller answers. */
  readonly resultJson: string;
}

/** How a statement list ended early. */
type Completion = { readonly kind: 'return'; readonly value: ScriptValue } | { readonly kind: 'rollback' } | undefined;

/** A thrown value's text is cut to this many characters in the message (details.thrown has it all). */
const maxThrownMessageLength = 1000;

class ScriptRun implements BuiltinContext {
  readonly caps: ValueCaps;
  private readonly variables = new Map<string, ScriptValue>();
  private readonly touchedKeys = new Set<string>();
  private steps = 0;
  private readonly startedMs: number;

  constructor(
    private readonly view: TxnView,
    private readonly params: ReadonlyMap<string, ScriptValue>,
    private readonly limits: Limits,
    private readonly clock: () => number,
    private readonly turns: ScriptTurns | undefined,
    private readonly deadlineMs: number | undefined,
  ) {
    this.caps = valueCaps(limits);
    this.startedMs = clock();
  }

  readonly pace: Pace = () => {
    this.checkTime();
    return this.turns?.due() === true ? this.pause() : undefined;
  };

  /** Gives the loop back until the scheduler lets the script go on. */
  private async pause(): Promise<void> {
    await this.turns!.pause();
    this.checkTime();
  }

  charge(steps: number): void {
    this.steps += steps;
    if (this.steps > this.limits.maxScriptSteps) {
      throw valueLimitError(`the script took more than ${this.limits.maxScriptSteps} steps`, { maxScriptSteps: this.limits.maxScriptSteps });
    }
  }

  async runStatements(statements: readonly Statement[]): Promise<Completion> {
    for (const statement of statements) {
      const completion = await this.runStatement(statement);
      if (completion !== undefined) return completion;
    }
    return undefined;
  }

  // ---------------------------------------------------------------- bounds
  // Limit errors are raised without a position; stepAt gives them the position of the step.

  private step(): void {
    this.charge(1);
    this.checkTime();
  }

  private checkTime(): void {
    const nowMs = this.clock();
    // The script's own time: pauses, the reads' included, are other work's.
    const elapsedMs = nowMs - this.startedMs - (this.turns?.pausedMs ?? 0);
    if (elapsedMs > this.limits.maxScriptMs) {
      throw valueLimitError(`the script ran longer than ${this.limits.maxScriptMs} ms`, { elapsedMs, maxScriptMs: this.limits.maxScriptMs });
    }
    if (this.deadlineMs !== undefined && nowMs > this.deadlineMs) {
      throw new AtollError('DEADLINE_EXCEEDED', `the call's deadline passed while the script ran (${elapsedMs} ms of it its own)`, { elapsedMs });
    }
  }

  /**
   * The returned value as JSON text, under the script's limits: it stops as soon as the text
   * passes limits.maxScriptResultBytes code units (each at least a byte), and the conversion
   * counts toward the script's time limit and paces like any long operation.
   */
  resultJson(value: ScriptValue): Promise<string> {
    const maxBytes = this.limits.maxScriptResultBytes;
    return jsonText(value, maxBytes, this.pace, () =>
      valueLimitError(`the script's result is more than ${maxBytes} bytes of JSON`, { maxResultBytes: maxBytes }),
    );
  }

  private touch(key: string): void {
    if (this.touchedKeys.has(key)) return;
    this.touchedKeys.add(key);
    if (this.touchedKeys.size > this.limits.maxScriptKeys) {
      throw valueLimitError(`the script touched more than ${this.limits.maxScriptKeys} keys`, { maxScriptKeys: this.limits.maxScriptKeys });
    }
  }

  // ---------------------------------------------------------------- statements

  /** One step at `position`: errors from it or from `run` that have no position yet get this one. */
  private async stepAt<T>(position: SourcePosition, run: () => Promise<T>): Promise<T> {
    try {
      this.step();
      if (this.turns?.due() === true) await this.pause();
      return await run();
    } catch (error) {
      throw withPosition(error, position);
    }
  }

  private runStatement(statement: Statement): Promise<Completion> {
    return this.stepAt(statement.position, () => this.executeStatement(statement));
  }

  private async executeStatement(statement: Statement): Promise<Completion> {
    switch (statement.kind) {
      case 'let':
        this.variables.set(statement.name, await this.evaluate(statement.value));
        return undefined;
      case 'action':
        await this.evaluate(statement.action);
        return undefined;
      case 'if': {
        const condition = isTruthy(await this.evaluate(statement.condition));
        return this.runStatements(condition ? statement.then : (statement.otherwise ?? []));
      }
      case 'for':
        return this.runFor(statement);
      case 'return':
        return { kind: 'return', value: statement.value === undefined ? null : await this.evaluate(statement.value) };
      case 'throw': {
        const value = await this.evaluate(statement.value);
        const text = isList(value) ? await jsonText(value, maxThrownMessageLength, this.pace) : textOf(value);
        const shown = text.length > maxThrownMessageLength ? `${text.slice(0, maxThrownMessageLength)}...` : text;
        throw scriptError(`the script threw: ${shown}`, statement.position, { thrown: scriptValueToJson(value) });
      }
      case 'block':
        return this.runStatements(statement.body);
      case 'rollback':
        return { kind: 'rollback' };
    }
  }

  private async runFor(statement: Extract<Statement, { kind: 'for' }>): Promise<Completion> {
    const iterable = await this.evaluate(statement.iterable);
    if (!isList(iterable)) throw withPosition(valueError(`for needs a list, got ${typeName(iterable)}`), statement.iterable.position);
    // Bounded by the list's length, which makeList caps; each turn is a step.
    for (const item of iterable) {
      this.step();
      this.variables.set(statement.name, item);
      const completion = await this.runStatements(statement.body);
      if (completion !== undefined) return completion;
    }
    return undefined;
  }

  // ---------------------------------------------------------------- expressions

  private evaluate(expression: Expression): Promise<ScriptValue> {
    return this.stepAt(expression.position, () => this.evaluateNode(expression));
  }

  private async evaluateAll(expressions: readonly Expression[]): Promise<ScriptValue[]> {
    const values: ScriptValue[] = [];
    for (const expression of expressions) values.push(await this.evaluate(expression));
    return values;
  }

  private async evaluateNode(expression: Expression): Promise<ScriptValue> {
    switch (expression.kind) {
      case 'literal':
        return expression.value;
      case 'list':
        return makeList(await this.evaluateAll(expression.items), this.caps);
      case 'variable':
        return this.variable(expression.name);
      case 'param':
        // runScript checked that every referenced parameter is bound.
        return this.params.get(expression.name)!;
      case 'negate':
        return negate(await this.evaluate(expression.operand));
      case 'not':
        return !isTruthy(await this.evaluate(expression.operand));
      case 'binary':
        if (expression.operator === 'and' || expression.operator === 'or') return this.logical(expression);
        return this.binary(expression.operator, await this.evaluate(expression.left), await this.evaluate(expression.right));
      case 'found':
        return ((await this.evaluate(expression.operand)) !== null) !== expression.negated;
      case 'index':
        return indexValue(await this.evaluate(expression.target), await this.evaluate(expression.index), this.pace);
      case 'call':
        return await builtins.get(expression.name)!.apply(await this.evaluateAll(expression.args), this);
      default:
        return this.action(expression);
    }
  }

  private variable(name: string): ScriptValue {
    const value = this.variables.get(name);
    if (value === undefined) throw valueError(`variable \`${name}\` has no value here (the \`let\` that sets it did not run)`);
    return value;
  }

  /** `and` / `or`: the right side runs only when the left does not decide; the result is a bool. */
  private async logical(expression: Extract<Expression, { kind: 'binary' }>): Promise<boolean> {
    const left = isTruthy(await this.evaluate(expression.left));
    if (expression.operator === 'and' ? !left : left) return left;
    return isTruthy(await this.evaluate(expression.right));
  }

  private async binary(operator: Exclude<BinaryOperator, 'and' | 'or'>, left: ScriptValue, right: ScriptValue): Promise<ScriptValue> {
    switch (operator) {
      case '==':
        return valuesEqual(left, right, this.pace);
      case '!=':
        return !(await valuesEqual(left, right, this.pace));
      case '<':
        return compareValues(left, right) < 0;
      case '<=':
        return compareValues(left, right) <= 0;
      case '>':
        return compareValues(left, right) > 0;
      case '>=':
        return compareValues(left, right) >= 0;
      default:
        return arithmetic(operator, left, right, this.caps);
    }
  }

  // ---------------------------------------------------------------- the store

  /** A key operand's value: a string, or an entry standing for its key. */
  private async keyOf(expression: Expression): Promise<string> {
    const value = await this.evaluate(expression);
    const key = value instanceof ScriptEntry ? value.key : value;
    if (typeof key !== 'string') throw withPosition(valueError(`a key must be a string, got ${typeName(value)}`), expression.position);
    return key;
  }

  private async intOperand(expression: Expression | undefined, what: string): Promise<bigint | undefined> {
    if (expression === undefined) return undefined;
    const value = await this.evaluate(expression);
    if (typeof value !== 'bigint') throw withPosition(valueError(`${what} must be an int, got ${typeName(value)}`), expression.position);
    return value;
  }

  private async ttlOperand(expression: Expression | undefined): Promise<number | undefined> {
    const ttlMs = await this.intOperand(expression, 'the TTL after `ex` (milliseconds)');
    // The view checks the TTL range (INVALID_ARGUMENT); an int beyond 2^53 is out of it anyway.
    return ttlMs === undefined ? undefined : Number(ttlMs);
  }

  private async revisionOperand(expression: Expression | undefined): Promise<number | undefined> {
    const revision = await this.intOperand(expression, 'the revision after `cmprev`');
    if (revision === undefined) return undefined;
    if (revision < 0n) throw withPosition(valueError(`a revision is >= 0 (0 means absent), got ${revision}`), expression!.position);
    return Number(revision);
  }

  private async leaseOperand(expression: Expression | undefined): Promise<string | undefined> {
    if (expression === undefined) return undefined;
    const lease = await this.evaluate(expression);
    if (typeof lease !== 'string') throw withPosition(valueError(`the lease after \`lease\` must be a string ("<partition>.<n>"), got ${typeName(lease)}`), expression.position);
    return lease;
  }

  private async fenceOperand(expression: Expression | undefined): Promise<number | undefined> {
    const fence = await this.intOperand(expression, 'the fencing token after `fence`');
    if (fence === undefined) return undefined;
    if (fence < 1n || fence > BigInt(Number.MAX_SAFE_INTEGER)) throw withPosition(valueError(`a fencing token is a positive revision, got ${fence}`), expression!.position);
    return Number(fence);
  }

  /** A store call, with the clock checked when it returns. */
  private async store<T>(call: () => Promise<T>): Promise<T> {
    const result = await call();
    this.checkTime();
    return result;
  }

  /** An entry for a record read, its value decoded in pieces when it is large. */
  private async entryOf(record: TxnRecord): Promise<ScriptEntry> {
    const entry = new ScriptEntry(record);
    await entry.decode(this.pace);
    return entry;
  }

  private async action(action: ActionExpression): Promise<ScriptValue> {
    switch (action.kind) {
      case 'get': {
        const key = await this.keyOf(action.key);
        this.touch(key);
        const record = await this.store(() => this.view.get(key));
        return record === undefined ? null : this.entryOf(record);
      }
      case 'exists': {
        const key = await this.keyOf(action.key);
        this.touch(key);
        return this.store(() => this.view.exists(key));
      }
      case 'getByPrefix': {
        const prefix = await this.evaluate(action.prefix);
        if (typeof prefix !== 'string') throw withPosition(valueError(`a prefix must be a string, got ${typeName(prefix)}`), action.prefix.position);
        const records = await this.store(() => this.view.getByPrefix(prefix));
        // Up to 10,000 keys of up to 4 KiB: counted (and hashed) with a pace between them.
        const entries: ScriptEntry[] = [];
        for (const record of records) {
          const wait = this.pace();
          if (wait !== undefined) await wait;
          this.touch(record.key);
          entries.push(await this.entryOf(record));
        }
        return makeList(entries, this.caps);
      }
      case 'delete': {
        const key = await this.keyOf(action.key);
        const ifModRevision = await this.revisionOperand(action.ifModRevision);
        this.touch(key);
        return this.store(() => this.view.delete(key, { ...(ifModRevision !== undefined && { ifModRevision }) }));
      }
      case 'incr': {
        const key = await this.keyOf(action.key);
        const delta = (await this.intOperand(action.delta, 'the amount after `by`')) ?? 1n;
        const ttlMs = await this.ttlOperand(action.ttlMs);
        this.touch(key);
        return this.store(() => this.view.increment(key, delta, { ...(ttlMs !== undefined && { ttlMs }) }));
      }
      case 'set': {
        const key = await this.keyOf(action.key);
        const value = await this.evaluate(action.value);
        const bytes = storedBytesOf(value);
        const ttlMs = await this.ttlOperand(action.ttlMs);
        const ifModRevision = await this.revisionOperand(action.ifModRevision);
        const lease = await this.leaseOperand(action.lease);
        const ifFence = await this.fenceOperand(action.fence);
        this.touch(key);
        const options = {
          ...(action.ifAbsent && { ifAbsent: true }),
          ...(action.ifPresent && { ifPresent: true }),
          ...(ttlMs !== undefined && { ttlMs }),
          ...(ifModRevision !== undefined && { ifModRevision }),
          ...(lease !== undefined && { lease }),
          ...(ifFence !== undefined && { ifFence }),
        };
        return this.store(() => this.view.put(key, bytes, options));
      }
    }
  }
}

/** Fails (SCRIPT_ERROR at its first use) when the script uses a parameter that is not bound. */
function checkParamsBound(script: Script, params: ReadonlyMap<string, ScriptValue>): void {
  for (const reference of script.params) {
    if (!params.has(reference.name)) {
      throw scriptError(`parameter @${reference.name} is not bound`, reference.position, { param: reference.name });
    }
  }
}

/**
 * Runs `script` against `options.view`. Resolves with `committed: false` after a rollback; the
 * caller commits `view.writes()` (with the view's read set) only when `committed` is true.
 * Rejects with SCRIPT_ERROR (a type error, an unbound parameter, `throw`), SCRIPT_LIMIT, or an
 * error of the view (OUTSIDE_TRANSACTION, NOT_INTEGER, ...) with the position added; after a
 * rejection nothing must be committed.
 */
export async function runScript(script: Script, options: ScriptRunOptions): Promise<ScriptOutcome> {
  const limits = options.limits ?? defaultLimits;
  const params = importParams(options.params, limits);
  checkParamsBound(script, params);
  const run = new ScriptRun(options.view, params, limits, options.clock ?? Date.now, options.turns, options.deadlineMs);
  const completion = await run.runStatements(script.body);
  if (completion?.kind === 'rollback') return { committed: false, returnValue: null, resultJson: 'null' };
  const value = completion === undefined ? null : completion.value;
  const resultJson = await run.resultJson(value);
  return {
    committed: true,
    get returnValue() {
      return scriptValueToJson(value);
    },
    resultJson,
  };
}
