/**
 * The built-in functions. Their names are case-insensitive and their argument counts are checked
 * when the script is parsed. Functions that walk a list charge one step per element, so the step
 * limit measures work, not just syntax.
 */
import { valueError } from './script-errors.js';
import { compareValues, valuesEqual } from './operators.js';
import {
  checkedInt,
  isList,
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
}

export interface Builtin {
  readonly minArgs: number;
  /** Infinity for a function that takes any number of arguments. */
  readonly maxArgs: number;
  apply(args: readonly ScriptValue[], context: BuiltinContext): ScriptValue;
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
function containsElement(items: readonly ScriptValue[], needle: ScriptValue): boolean {
  const key = needle instanceof ScriptEntry ? needle.key : needle;
  return items.some((item) => (item instanceof ScriptEntry ? item.key === key : valuesEqual(item, needle)));
}

function contains(args: readonly ScriptValue[], context: BuiltinContext): ScriptValue {
  const [haystack, needle] = args as [ScriptValue, ScriptValue];
  if (isList(haystack)) {
    context.charge(haystack.length);
    return containsElement(haystack, needle);
  }
  return textArgument('contains', haystack).includes(textArgument('contains', needle));
}

function len([value]: readonly ScriptValue[]): ScriptValue {
  if (isList(value!)) return BigInt(value.length);
  // Characters, not UTF-16 code units: len("é🙂") is 2.
  return BigInt(Array.from(textArgument('len', value!)).length);
}

function keys([value]: readonly ScriptValue[], context: BuiltinContext): ScriptValue {
  const items = listArgument('keys', value!);
  context.charge(items.length);
  return makeList(
    items.map((item) => {
      if (!(item instanceof ScriptEntry)) throw valueError(`keys needs a list of entries, found ${typeName(item)}`);
      return item.key;
    }),
    context.caps,
  );
}

const decimalInteger = /^[+-]?[0-9]+$/;

/** An int from an int, a float (truncated toward zero), decimal text, or a bool (1 or 0). */
function toInt([value]: readonly ScriptValue[]): ScriptValue {
  const scalar = scalarOf(value!);
  if (typeof scalar === 'bigint') return scalar;
  if (typeof scalar === 'boolean') return scalar ? 1n : 0n;
  if (typeof scalar === 'number') return checkedInt(BigInt(Math.trunc(scalar)));
  if (typeof scalar === 'string') {
    if (!decimalInteger.test(scalar)) throw valueError(`to_int: ${JSON.stringify(scalar.slice(0, 64))} is not a decimal integer`);
    return checkedInt(BigInt(scalar));
  }
  throw valueError(`to_int needs a number, string or bool, got ${typeName(value!)}`);
}

function concat(args: readonly ScriptValue[], context: BuiltinContext): ScriptValue {
  if (args.length > 0 && args.every(isList)) {
    const items = (args as readonly (readonly ScriptValue[])[]).flat();
    context.charge(items.length);
    return makeList(items, context.caps);
  }
  const texts = args.map((arg) => {
    if (arg === null || isList(arg)) throw valueError(`concat joins strings, numbers, bools and entries, got ${typeName(arg)}`);
    return textOf(arg);
  });
  return makeString(texts.join(''), context.caps);
}

/** min and max of their arguments, or of the elements of their one list argument (null when empty). */
function extreme(name: string, sign: 1 | -1): Builtin['apply'] {
  return (args, context) => {
    const values = args.length === 1 && isList(args[0]!) ? args[0] : args;
    context.charge(values.length);
    let best: ScriptValue = null;
    for (const value of values) {
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

function caseMap(name: string, map: (text: string) => string): Builtin['apply'] {
  return ([value], context) => makeString(map(textArgument(name, value!)), context.caps);
}

export const builtins: ReadonlyMap<string, Builtin> = new Map<string, Builtin>([
  ['found', { minArgs: 1, maxArgs: 1, apply: ([value]) => value !== null }],
  ['contains', { minArgs: 2, maxArgs: 2, apply: contains }],
  ['len', { minArgs: 1, maxArgs: 1, apply: len }],
  ['keys', { minArgs: 1, maxArgs: 1, apply: keys }],
  ['to_int', { minArgs: 1, maxArgs: 1, apply: toInt }],
  ['to_str', { minArgs: 1, maxArgs: 1, apply: ([value], context) => makeString(textOf(value!), context.caps) }],
  ['lower', { minArgs: 1, maxArgs: 1, apply: caseMap('lower', (text) => text.toLowerCase()) }],
  ['upper', { minArgs: 1, maxArgs: 1, apply: caseMap('upper', (text) => text.toUpperCase()) }],
  ['concat', { minArgs: 0, maxArgs: Infinity, apply: concat }],
  ['min', { minArgs: 1, maxArgs: Infinity, apply: extreme('min', 1) }],
  ['max', { minArgs: 1, maxArgs: Infinity, apply: extreme('max', -1) }],
  ['revision', { minArgs: 1, maxArgs: 1, apply: revision }],
]);
