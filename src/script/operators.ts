/**
 * The operators: arithmetic, comparison, equality and indexing. Strings are never numbers
 * (`"5" + 1` fails; use to_int), ints never silently become floats except when mixed with a
 * float, and no operation produces NaN or an infinity: those fail instead, so every float a
 * script holds is finite.
 */
import { compareCodePoints } from '../txn/txn-view.js';
import type { Pace } from './pacing.js';
import { codePointAtIndex, codePointLength } from './text-pieces.js';
import { valueError } from './script-errors.js';
import {
  checkedInt,
  checkJoinedLists,
  entryField,
  isList,
  makeList,
  makeString,
  scalarOf,
  ScriptEntry,
  typeName,
  type ScriptValue,
  type ValueCaps,
} from './values.js';

export type ArithmeticOperator = '+' | '-' | '*' | '/' | '%';

type ScriptNumber = bigint | number;

function isNumber(value: ScriptValue): value is ScriptNumber {
  return typeof value === 'bigint' || typeof value === 'number';
}

function numbersEqual(a: ScriptNumber, b: ScriptNumber): boolean {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a === b;
  if (typeof a === 'number' && typeof b === 'number') return a === b;
  const [int, float] = typeof a === 'bigint' ? [a, b as number] : [b as bigint, a];
  return Number.isInteger(float) && BigInt(float) === int;
}

/**
 * `==`: numbers by value (1 == 1.0), lists element by element, entries as their value text.
 * Lists are compared one element at a time with a pace between elements: two lists of 100,000
 * equal (but distinct) megabyte strings take seconds, and must not take them in one step. Any
 * other comparison is a native one, well under a millisecond at the string cap.
 */
export async function valuesEqual(a: ScriptValue, b: ScriptValue, pace: Pace): Promise<boolean> {
  const x = scalarOf(a);
  const y = scalarOf(b);
  if (isNumber(x) && isNumber(y)) return numbersEqual(x, y);
  if (!isList(x) || !isList(y)) return x === y;
  if (x.length !== y.length) return false;
  for (let index = 0; index < x.length; index++) {
    const wait = pace();
    if (wait !== undefined) await wait;
    if (!(await valuesEqual(x[index]!, y[index]!, pace))) return false;
  }
  return true;
}

/** Orders two numbers or two strings (by code point); any other pair is an error. */
export function compareValues(a: ScriptValue, b: ScriptValue): number {
  const x = scalarOf(a);
  const y = scalarOf(b);
  // JavaScript compares a bigint with a number exactly.
  if (isNumber(x) && isNumber(y)) return x < y ? -1 : x > y ? 1 : 0;
  if (typeof x === 'string' && typeof y === 'string') return compareCodePoints(x, y);
  throw valueError(`cannot compare ${typeName(a)} with ${typeName(b)}`);
}

function finite(value: number): number {
  if (!Number.isFinite(value)) throw valueError('float overflow: the result is not a finite number');
  return value;
}

// bigint division truncates toward zero and % takes the dividend's sign, as in C and Go.
const intOperations: Readonly<Record<ArithmeticOperator, (x: bigint, y: bigint) => bigint>> = {
  '+': (x, y) => x + y,
  '-': (x, y) => x - y,
  '*': (x, y) => x * y,
  '/': (x, y) => x / y,
  '%': (x, y) => x % y,
};

const floatOperations: Readonly<Record<ArithmeticOperator, (x: number, y: number) => number>> = {
  '+': (x, y) => x + y,
  '-': (x, y) => x - y,
  '*': (x, y) => x * y,
  '/': (x, y) => x / y,
  '%': (x, y) => x % y,
};

function checkDivisor(operator: ArithmeticOperator, isZero: boolean): void {
  if ((operator === '/' || operator === '%') && isZero) throw valueError('division by zero');
}

function intArithmetic(operator: ArithmeticOperator, x: bigint, y: bigint): bigint {
  checkDivisor(operator, y === 0n);
  // Only +, - and * can leave the range, and int64 min / -1.
  return checkedInt(intOperations[operator](x, y));
}

function floatArithmetic(operator: ArithmeticOperator, x: number, y: number): number {
  checkDivisor(operator, y === 0);
  return finite(floatOperations[operator](x, y));
}

/** `+` adds numbers and concatenates strings or lists; `- * / %` take numbers only. */
export function arithmetic(operator: ArithmeticOperator, a: ScriptValue, b: ScriptValue, caps: ValueCaps): ScriptValue {
  const x = scalarOf(a);
  const y = scalarOf(b);
  if (isNumber(x) && isNumber(y)) {
    if (typeof x === 'bigint' && typeof y === 'bigint') return intArithmetic(operator, x, y);
    return floatArithmetic(operator, Number(x), Number(y));
  }
  if (operator === '+' && typeof x === 'string' && typeof y === 'string') return makeString(x + y, caps);
  if (operator === '+' && isList(x) && isList(y)) {
    // Measured before it is built: two lists at the cap would otherwise be copied first.
    checkJoinedLists([x, y], caps);
    return makeList([...x, ...y], caps);
  }
  const hint =
    (typeof x === 'string' && isNumber(y)) || (isNumber(x) && typeof y === 'string')
      ? ' (strings are not numbers: convert with to_int or to_str)'
      : '';
  throw valueError(`cannot apply ${operator} to ${typeName(a)} and ${typeName(b)}${hint}`);
}

export function negate(value: ScriptValue): ScriptValue {
  const x = scalarOf(value);
  if (typeof x === 'bigint') return checkedInt(-x);
  if (typeof x === 'number') return -x;
  throw valueError(`cannot negate ${typeName(value)}`);
}

function elementAt<T>(items: readonly T[], index: ScriptValue, what: string): T | null {
  if (typeof index !== 'bigint') throw valueError(`${what} index must be an int, got ${typeName(index)}`);
  const position = index < 0n ? BigInt(items.length) + index : index;
  if (position < 0n || position >= BigInt(items.length)) return null;
  return items[Number(position)]!;
}

/**
 * `target[index]`: a list element or a string's character (negative indexes count from the end;
 * out of range is null), an entry's field by name; indexing null is null, so
 * `(get k)["value"]` is null for a missing key.
 */
export async function indexValue(target: ScriptValue, index: ScriptValue, pace: Pace): Promise<ScriptValue> {
  if (target === null) return null;
  if (target instanceof ScriptEntry) {
    if (typeof index !== 'string') throw valueError(`an entry is indexed by a field name, got ${typeName(index)}`);
    return entryField(target, index);
  }
  if (isList(target)) return elementAt(target, index, 'a list');
  if (typeof target === 'string') return characterAt(target, index, pace);
  throw valueError(`cannot index ${typeName(target)}`);
}

/** A string's character (code point) at `index`, counted from the end when negative; null out of range. */
async function characterAt(text: string, index: ScriptValue, pace: Pace): Promise<ScriptValue> {
  if (typeof index !== 'bigint') throw valueError(`a string index must be an int, got ${typeName(index)}`);
  // Counted in pieces, never by splitting the string into an array of characters (50-100 ms for a megabyte of Greek).
  const position = index < 0n ? BigInt(await codePointLength(text, pace)) + index : index;
  if (position < 0n || position >= BigInt(text.length)) return null;
  return (await codePointAtIndex(text, Number(position), pace)) ?? null;
}
