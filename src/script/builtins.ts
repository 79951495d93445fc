/**
 * The built-in functions. Their names are case-insensitive and their argument counts are checked
 * when the script is parsed. Functions that walk a list charge one step per element, so the step
 * limit measures work, not just syntax; they pace between elements, and string functions whose
 * work grows with a string's length work in pieces or cost at most a few milliseconds at the
 * string cap (pacing.ts), so no call holds the event loop for long.
 */
import type { Pace } from './pacing.js';
import { caseMapped, codePointLength } from './text-pieces.js';
import { valueError, valueLimitError } from './script-errors.js';
import { compareValues, valuesEqual } from './operators.js';
import {
  checkedInt,
  checkJoinedLists,
  checkStringLength,
  isList,
  jsonText,
  makeList,
  makeString,
  scalarOf,
  ScriptEntry,
  textOf,
  typeName,
  type ScriptValue,
  type ValueCaps,
} from './values.js';

export interface BuiltinContext {
  readonly caps: ValueCaps;
  /** Counts `steps` more steps against the script's step limit. */
  charge(steps: number): void;
  /** Between bounded pieces of a long call: the time limit, and the loop's turn (pacing.ts). */
  readonly pace: Pace;
}

export interface Builtin {
  readonly minArgs: number;
  /** Infinity for a function that takes any number of arguments. */
  readonly maxArgs: number;
  apply(args: readonly ScriptValue[], context: BuiltinContext): ScriptValue | Promise<ScriptValue>;
}

function listArgument(name: string, value: ScriptValue): readonly ScriptValue[] {
  if (!isList(value)) throw valueError(`${name} needs a list, got ${typeName(value)}`);
  return value;
}

function textArgument(name: string, value: ScriptValue): string {
  const scalar = scalarOf(value);
  if (typeof scalar !== 'string') throw valueError(`${name} needs a string, got ${typeName(value)}`);
  return scalar;
}

/** An entry element matches on its key; any other element matches when it is == the needle. */
async function containsElement(items: readonly ScriptValue[], needle: ScriptValue, pace: Pace): Promise<boolean> {
  const key = needle instanceof ScriptEntry ? needle.key : needle;
  for (const item of items) {
    const wait = pace();
    if (wait !== undefined) await wait;
    if (item instanceof ScriptEntry ? item.key === key : await valuesEqual(item, needle, pace)) return true;
  }
  return false;
}

function contains(args: readonly ScriptValue[], context: BuiltinContext): ScriptValue | Promise<ScriptValue> {
  const [haystack, needle] = args as [ScriptValue, ScriptValue];
  if (isList(haystack)) {
    context.charge(haystack.length);
    return containsElement(haystack, needle, context.pace);
  }
  // A native search: a few milliseconds at worst for a megabyte string.
  return textArgument('contains', haystack).includes(textArgument('contains', needle));
}

async function len([value]: readonly ScriptValue[], context: BuiltinContext): Promise<ScriptValue> {
  if (isList(value!)) return BigInt(value.length);
  // Characters, not UTF-16 code units: len("é🙂") is 2.
  return BigInt(await codePointLength(textArgument('len', value!), context.pace));
}

async function keys([value]: readonly ScriptValue[], context: BuiltinContext): Promise<ScriptValue> {
  const items = listArgument('keys', value!);
  context.charge(items.length);
  const found: string[] = [];
  for (const item of items) {
    const wait = context.pace();
    if (wait !== undefined) await wait;
    if (!(item instanceof ScriptEntry)) throw valueError(`keys needs a list of entries, found ${typeName(item)}`);
    found.push(item.key);
  }
  return makeList(found, context.caps);
}

const decimalInteger = /^[+-]?[0-9]+$/;
/** Digits of the longest int64 (9223372036854775807), and a number with one more. */
const maxInt64Digits = 19;
const beyondInt64 = 10n ** BigInt(maxInt64Digits);

/** An int from an int, a float (truncated toward zero), decimal text, or a bool (1 or 0). */
function toInt([value]: readonly ScriptValue[]): ScriptValue {
  const scalar = scalarOf(value!);
  if (typeof scalar === 'bigint') return scalar;
  if (typeof scalar === 'boolean') return scalar ? 1n : 0n;
  if (typeof scalar === 'number') return checkedInt(BigInt(Math.trunc(scalar)));
  if (typeof scalar === 'string') {
    if (!decimalInteger.test(scalar)) throw valueError(`to_int: ${JSON.stringify(scalar.slice(0, 64))} is not a decimal integer`);
    // More than 19 significant digits is outside int64 anyway; BigInt of a million digits takes 100 ms.
    if (scalar.replace(/^[+-]?0*/, '').length > maxInt64Digits) return checkedInt(scalar.startsWith('-') ? -beyondInt64 : beyondInt64);
    return checkedInt(BigInt(scalar));
  }
  throw valueError(`to_int needs a number, string or bool, got ${typeName(value!)}`);
}

function concat(args: readonly ScriptValue[], context: BuiltinContext): ScriptValue {
  if (args.length > 0 && args.every(isList)) {
    const lists = args as readonly (readonly ScriptValue[])[];
    // Measured before anything is copied: a 64 KiB script can name a 100,000-element list thousands of times.
    checkJoinedLists(lists, context.caps);
    const items = lists.flat();
    context.charge(items.length);
    return makeList(items, context.caps);
  }
  let length = 0;
  const texts = args.map((arg) => {
    if (arg === null || isList(arg)) throw valueError(`concat joins strings, numbers, bools and entries, got ${typeName(arg)}`);
    const text = textOf(arg);
    length += text.length;
    // Before the join: a thousand megabyte strings would be a gigabyte first.
    checkStringLength(length, context.caps);
    return text;
  });
  return texts.join('');
}

/** min and max of their arguments, or of the elements of their one list argument (null when empty). */
function extreme(name: string, sign: 1 | -1): Builtin['apply'] {
  return async (args, context) => {
    const values = args.length === 1 && isList(args[0]!) ? args[0] : args;
    context.charge(values.length);
    let best: ScriptValue = null;
    for (const value of values) {
      const wait = context.pace();
      if (wait !== undefined) await wait;
      if (value === null || isList(value)) throw valueError(`${name} compares numbers or strings, got ${typeName(value)}`);
      const scalar = scalarOf(value);
      if (best === null || sign * compareValues(scalar, best) < 0) best = scalar;
    }
    return best;
  };
}

function revision([value]: readonly ScriptValue[]): ScriptValue {
  if (value === null) return null;
  if (!(value instanceof ScriptEntry)) throw valueError(`revision needs an entry (or null), got ${typeName(value!)}`);
  return BigInt(value.record.modRevision);
}

/** upper and lower, in pieces (a megabyte of Greek takes 11 ms to lowercase in one go). */
function caseMap(name: string, toUpper: boolean): Builtin['apply'] {
  return ([value], context) => caseMapped(textArgument(name, value!), toUpper, context.caps, context.pace);
}

/** A value's text; a list's is its JSON, built within the string cap. */
function toStr([value]: readonly ScriptValue[], context: BuiltinContext): ScriptValue | Promise<ScriptValue> {
  if (!isList(value!)) return makeString(textOf(value!), context.caps);
  const { maxStringLength } = context.caps;
  return jsonText(value, maxStringLength, context.pace, () =>
    valueLimitError(`a string holds at most ${maxStringLength} characters`, { maxStringLength }),
  );
}

export const builtins: ReadonlyMap<string, Builtin> = new Map<string, Builtin>([
  ['found', { minArgs: 1, maxArgs: 1, apply: ([value]) => value !== null }],
  ['contains', { minArgs: 2, maxArgs: 2, apply: contains }],
  ['len', { minArgs: 1, maxArgs: 1, apply: len }],
  ['keys', { minArgs: 1, maxArgs: 1, apply: keys }],
  ['to_int', { minArgs: 1, maxArgs: 1, apply: toInt }],
  ['to_str', { minArgs: 1, maxArgs: 1, apply: toStr }],
  ['lower', { minArgs: 1, maxArgs: 1, apply: caseMap('lower', false) }],
  ['upper', { minArgs: 1, maxArgs: 1, apply: caseMap('upper', true) }],
  ['concat', { minArgs: 0, maxArgs: Infinity, apply: concat }],
  ['min', { minArgs: 1, maxArgs: Infinity, apply: extreme('min', 1) }],
  ['max', { minArgs: 1, maxArgs: Infinity, apply: extreme('max', -1) }],
  ['revision', { minArgs: 1, maxArgs: 1, apply: revision }],
]);
