/**
 * The values a script computes with, and how they convert to text, bytes and JSON.
 *
 * - null, booleans, strings;
 * - int: a bigint in the signed 64-bit range (arithmetic past it fails; it never wraps or rounds);
 * - float: a JavaScript number (a literal with a `.` or an exponent, or mixed arithmetic);
 * - list: a readonly array, built only through `makeList` so its size and depth are bounded;
 * - entry: a key as `get` and `get by prefix` return it.
 *
 * Where a scalar is needed (a comparison, `+`, `set`'s value, to_int) an entry counts as its value
 * text; in a key position it counts as its key.
 */
import assert from 'node:assert/strict';
import type { Limits } from '../limits.js';
import { int64Max, int64Min, isInt64 } from '../mvcc/int64-text.js';
import type { TxnRecord } from '../txn/txn-view.js';
import { PIECE_BYTES, type Pace } from './pacing.js';
import { valueError, valueLimitError } from './script-errors.js';

/** How deep blocks, expressions and lists may nest: the parser and evaluator recurse this far. */
export const maxScriptNesting = 64;

export type ScriptValue = null | boolean | bigint | number | string | ScriptEntry | readonly ScriptValue[];

const valueDecoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
const valueEncoder = new TextEncoder();

/**
 * A live key as the script sees it. Own uncommitted writes have revision 0. The record keeps the
 * stored bytes, so `set k e` copies a value exactly even when it is not valid UTF-8.
 */
export class ScriptEntry {
  private text: string | undefined;

  constructor(readonly record: TxnRecord) {}

  /**
   * The value as text (malformed UTF-8 decodes to U+FFFD), decoded when first needed: a prefix
   * read returns up to 10,000 entries in one step. The evaluator decodes a large value in pieces
   * first (decode), so reading it here never decodes more than PIECE_BYTES.
   */
  get value(): string {
    this.text ??= valueDecoder.decode(this.record.value);
    return this.text;
  }

  /** Decodes a value larger than PIECE_BYTES a piece at a time, with `pace` between pieces (the same text). */
  async decode(pace: Pace): Promise<void> {
    const bytes = this.record.value;
    if (this.text !== undefined || bytes.length <= PIECE_BYTES) return;
    const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
    const parts: string[] = [];
    for (let start = 0; start < bytes.length; start += PIECE_BYTES) {
      const wait = pace();
      if (wait !== undefined) await wait;
      parts.push(decoder.decode(bytes.subarray(start, start + PIECE_BYTES), { stream: true }));
    }
    parts.push(decoder.decode());
    this.text = parts.join('');
  }

  get key(): string {
    return this.record.key;
  }
}

/** The fields `entry["name"]` reads, as a script (and its JSON) names them. */
export const entryFields = ['key', 'value', 'revision', 'createRevision', 'version', 'expiresAtMs'] as const;

type EntryField = (typeof entryFields)[number];

function isEntryField(name: string): name is EntryField {
  return (entryFields as readonly string[]).includes(name);
}

function fieldOf(entry: ScriptEntry, name: EntryField): string | number {
  if (name === 'value') return entry.value;
  return entry.record[name === 'revision' ? 'modRevision' : name];
}

export function entryField(entry: ScriptEntry, name: string): ScriptValue {
  if (!isEntryField(name)) throw valueError(`an entry has no field ${JSON.stringify(name)} (it has ${entryFields.join(', ')})`);
  const field = fieldOf(entry, name);
  return typeof field === 'number' ? BigInt(field) : field;
}

export function isList(value: ScriptValue): value is readonly ScriptValue[] {
  return Array.isArray(value);
}

export function typeName(value: ScriptValue): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'float';
  if (typeof value === 'string') return 'string';
  if (value instanceof ScriptEntry) return 'entry';
  return 'list';
}

/** An entry stands for its value text wherever a scalar is needed. */
export function scalarOf(value: ScriptValue): ScriptValue {
  return value instanceof ScriptEntry ? value.value : value;
}

/** null, false, 0, 0.0, NaN, "" and [] are false; everything else (entries included) is true. */
export function isTruthy(value: ScriptValue): boolean {
  if (value === null || value === false || value === 0n || value === '') return false;
  if (typeof value === 'number') return value !== 0 && !Number.isNaN(value);
  if (isList(value)) return value.length > 0;
  return true;
}

// ------------------------------------------------------------------ bounded strings and lists

/** Bounds on the values a script builds, so no operation's work or memory grows without bound. */
export interface ValueCaps {
  /** A string a script builds holds at most this many UTF-16 code units. */
  readonly maxStringLength: number;
  /** A list holds at most this many elements, nested lists' elements included. */
  readonly maxListElements: number;
  /** Lists nest at most this deep. */
  readonly maxListDepth: number;
}

export function valueCaps(limits: Limits): ValueCaps {
  return {
    // A longer string could not be stored as a value anyway.
    maxStringLength: limits.maxValueBytes,
    // A prefix read must fit; building a list element by element costs a step each.
    maxListElements: Math.max(limits.maxScriptSteps, limits.maxTxnPrefixKeys),
    maxListDepth: maxScriptNesting,
  };
}

interface ListShape {
  /** Elements at every depth: [1, [2, 3]] has 4. Shared sublists count every time they appear. */
  readonly elements: number;
  readonly depth: number;
}

/** The shape of every list built through makeList; lists are immutable, so it never changes. */
const listShapes = new WeakMap<readonly ScriptValue[], ListShape>();

function shapeOf(list: readonly ScriptValue[]): ListShape {
  const shape = listShapes.get(list);
  assert(shape !== undefined, 'every script list is built by makeList');
  return shape;
}

/** Whether `value` is a list makeList built (so its size and depth are known to be bounded). */
export function isScriptList(value: readonly unknown[]): boolean {
  return listShapes.has(value as readonly ScriptValue[]);
}

/** The number of elements of a list at every depth (what walking it costs). */
export function listElementCount(list: readonly ScriptValue[]): number {
  return shapeOf(list).elements;
}

export function makeList(items: readonly ScriptValue[], caps: ValueCaps): readonly ScriptValue[] {
  let elements = items.length;
  let depth = 1;
  for (const item of items) {
    if (!isList(item)) continue;
    const shape = shapeOf(item);
    elements += shape.elements;
    depth = Math.max(depth, shape.depth + 1);
  }
  if (elements > caps.maxListElements) {
    throw valueLimitError(`a list holds at most ${caps.maxListElements} elements (nested ones included)`, {
      maxListElements: caps.maxListElements,
    });
  }
  if (depth > caps.maxListDepth) {
    throw valueLimitError(`lists nest at most ${caps.maxListDepth} deep`, { maxListDepth: caps.maxListDepth });
  }
  listShapes.set(items, { elements, depth });
  return items;
}

/** SCRIPT_LIMIT unless a string of `length` code units is within the cap: checked before building one. */
export function checkStringLength(length: number, caps: ValueCaps): void {
  if (length > caps.maxStringLength) {
    throw valueLimitError(`a string holds at most ${caps.maxStringLength} characters`, { maxStringLength: caps.maxStringLength });
  }
}

export function makeString(text: string, caps: ValueCaps): string {
  checkStringLength(text.length, caps);
  return text;
}

/** SCRIPT_LIMIT unless lists of these shapes joined hold at most maxListElements: checked before building one. */
export function checkJoinedLists(lists: readonly (readonly ScriptValue[])[], caps: ValueCaps): void {
  let elements = 0;
  for (const list of lists) elements += shapeOf(list).elements;
  if (elements > caps.maxListElements) {
    throw valueLimitError(`a list holds at most ${caps.maxListElements} elements (nested ones included)`, {
      maxListElements: caps.maxListElements,
    });
  }
}

export function checkedInt(value: bigint): bigint {
  if (!isInt64(value)) throw valueError(`integer overflow: the result leaves the 64-bit range [${int64Min}, ${int64Max}]`);
  return value;
}

// ------------------------------------------------------------------ text, bytes and JSON

/**
 * The text of a scalar, as to_str, concat and `set` write it. A list has no text here: its text
 * is its JSON, built by jsonText within a bound.
 */
export function textOf(value: Exclude<ScriptValue, readonly ScriptValue[]>): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean' || typeof value === 'bigint' || typeof value === 'number') return String(value);
  return value.value;
}

/** The bytes `set` stores: text as UTF-8, numbers and booleans as their text, an entry's bytes. */
export function storedBytesOf(value: ScriptValue): Uint8Array {
  if (value instanceof ScriptEntry) return value.record.value;
  if (value === null || isList(value)) {
    throw valueError(`set needs a string, number, bool or entry as the value, got ${typeName(value)}`);
  }
  return valueEncoder.encode(textOf(value));
}

/** The JSON text of a value that is not a list (JSON.stringify of scriptValueToJson). */
function scalarJson(value: Exclude<ScriptValue, readonly ScriptValue[]>): string {
  return JSON.stringify(scriptValueToJson(value));
}

/** A lower bound of the length of a scalar's JSON text, in code units, known without building it. */
function scalarJsonLengthAtLeast(value: Exclude<ScriptValue, readonly ScriptValue[]>): number {
  if (typeof value === 'string') return value.length + 2;
  // Every code unit of a value's text comes from at most 3 of its UTF-8 bytes.
  if (value instanceof ScriptEntry) return value.key.length + Math.ceil(value.record.value.length / 3) + 2 * entryFields.length;
  return 1;
}

/**
 * The JSON text of `value`, exactly JSON.stringify(scriptValueToJson(value)), built one value at
 * a time with a pace between them. As soon as the text would pass `maxLength` code units it stops:
 * with the error `tooLong()` gives, or, without `tooLong`, with the text cut at `maxLength` and
 * "..." after it. A list may hold one long string many times over, so its JSON can be far larger
 * than the script's memory; this never builds more than `maxLength` of it (a string is measured
 * before it is converted), and visits at most maxListElements values.
 */
export async function jsonText(value: ScriptValue, maxLength: number, pace: Pace, tooLong?: () => Error): Promise<string> {
  const parts: string[] = [];
  let length = 0;
  const cut = new Error('cut');
  const over = (): never => {
    throw tooLong?.() ?? cut;
  };
  const add = (text: string): void => {
    if (length + text.length > maxLength) {
      parts.push(text.slice(0, maxLength - length));
      length = maxLength;
      over();
    }
    parts.push(text);
    length += text.length;
  };
  const write = async (item: ScriptValue): Promise<void> => {
    const wait = pace();
    if (wait !== undefined) await wait;
    if (!isList(item)) {
      if (tooLong !== undefined && length + scalarJsonLengthAtLeast(item) > maxLength) over();
      add(scalarJson(item));
      return;
    }
    add('[');
    for (let index = 0; index < item.length; index++) {
      if (index > 0) add(',');
      await write(item[index]!);
    }
    add(']');
  };
  try {
    await write(value);
  } catch (error) {
    if (error !== cut) throw error;
    return `${parts.join('')}...`;
  }
  return parts.join('');
}

/**
 * A value as JSON: ints as numbers when they are safe integers and as decimal strings otherwise,
 * floats as numbers (NaN and infinities as null), lists as arrays, entries as objects.
 */
export function scriptValueToJson(value: ScriptValue): unknown {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'bigint') {
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
  }
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (value instanceof ScriptEntry) return Object.fromEntries(entryFields.map((name) => [name, fieldOf(value, name)]));
  return value.map(scriptValueToJson);
}
