/**
 * Script parameters: values bound to `@name` placeholders, so a script is written once and reused
 * with different inputs instead of being built from strings. Over the wire each parameter is JSON
 * text; integers stay exact (a JSON integer becomes an int even past 2^53).
 */
import { AtollError } from '../errors.js';
import { defaultLimits, type Limits } from '../limits.js';
import { isInt64 } from '../mvcc/int64-text.js';
import { valueError, valueLimitError } from './script-errors.js';
import type { Pace } from './pacing.js';
import { isScriptList, makeList, makeString, ScriptEntry, valueCaps, type ScriptValue, type ValueCaps } from './values.js';

export type ScriptParams = Readonly<Record<string, ScriptValue>>;

const paramNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** JSON strings and numbers, in text order; strings are matched whole so digits inside them are skipped. */
const jsonStringOrNumber = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
const jsonInteger = /^-?\d+$/;

function paramError(name: string, message: string): AtollError {
  return new AtollError('SCRIPT_ERROR', `parameter @${name}: ${message}`, { param: name });
}

function checkParamCount(count: number, limits: Limits): void {
  if (count > limits.maxScriptParams) {
    throw new AtollError('SCRIPT_LIMIT', `a script takes at most ${limits.maxScriptParams} parameters, got ${count}`, {
      params: count,
      maxScriptParams: limits.maxScriptParams,
    });
  }
}

function checkParamName(name: string): void {
  if (!paramNamePattern.test(name)) throw paramError(name, 'a name must match [A-Za-z_][A-Za-z0-9_]*');
}

/** Elements of a list imported between two chances to let the loop turn. */
const importPiece = 1024;

/** A parameter value that is not a list, as a script value (see importValue). */
function importScalar(value: unknown, caps: ValueCaps, jsonNumbers?: Iterator<string>): ScriptValue {
  if (value === null || typeof value === 'boolean' || value instanceof ScriptEntry) return value;
  if (typeof value === 'string') return makeString(value, caps);
  if (typeof value === 'number' && jsonNumbers !== undefined) {
    const text = jsonNumbers.next().value as string;
    return jsonInteger.test(text) ? importScalar(BigInt(text), caps) : value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw valueError('a float must be finite');
    return value;
  }
  if (typeof value === 'bigint') {
    if (!isInt64(value)) throw valueError(`the integer ${value} is outside the 64-bit range`);
    return value;
  }
  const kind = typeof value === 'object' ? 'an object' : `a ${typeof value}`;
  throw valueError(`${kind} is not a script value (use a string, number, bool, null or list)`);
}

/**
 * A parameter value as a script value, with every list rebuilt through makeList so it is bounded
 * (a list makeList built already is taken as it is). For a value parsed from JSON, `jsonNumbers`
 * yields the source text of each JSON number in order, so integers are read exactly rather than
 * through a double. A generator that yields every importPiece elements: 100,000 numbers take tens
 * of milliseconds, so the node imports them in turns of the loop (paramsFromJsonInTurns).
 */
function* importValue(value: unknown, caps: ValueCaps, depth: number, jsonNumbers?: Iterator<string>): Generator<void, ScriptValue, void> {
  if (!Array.isArray(value)) return importScalar(value, caps, jsonNumbers);
  if (isScriptList(value)) return value;
  // Checked before descending, so a deeply nested value cannot exhaust the stack.
  if (depth >= caps.maxListDepth) throw valueLimitError(`lists nest at most ${caps.maxListDepth} deep`, { maxListDepth: caps.maxListDepth });
  const items: ScriptValue[] = [];
  for (const item of value as unknown[]) {
    items.push(Array.isArray(item) ? yield* importValue(item, caps, depth + 1, jsonNumbers) : importScalar(item, caps, jsonNumbers));
    if (items.length % importPiece === 0) yield;
  }
  return makeList(items, caps);
}

/** importValue, with the parameter named in any error. */
function* importParam(name: string, value: unknown, caps: ValueCaps, jsonNumbers?: Iterator<string>): Generator<void, ScriptValue, void> {
  try {
    return yield* importValue(value, caps, 0, jsonNumbers);
  } catch (error) {
    if (!(error instanceof AtollError)) throw error;
    throw new AtollError(error.code, `parameter @${name}: ${error.message}`, { ...error.details, param: name });
  }
}

/** The source text of each JSON number in `text`, in order, found as they are asked for. */
function* jsonNumberTexts(text: string): Generator<string, undefined, undefined> {
  for (const match of text.matchAll(jsonStringOrNumber)) if (!match[0].startsWith('"')) yield match[0];
  return undefined;
}

function* parseParams(json: Readonly<Record<string, string>>, limits: Limits): Generator<void, ScriptParams, void> {
  const entries = Object.entries(json);
  checkParamCount(entries.length, limits);
  const caps = valueCaps(limits);
  const params: Record<string, ScriptValue> = Object.create(null) as Record<string, ScriptValue>;
  for (const [name, text] of entries) {
    checkParamName(name);
    if (typeof text !== 'string') throw paramError(name, 'the value must be JSON text');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw paramError(name, `${JSON.stringify(text.slice(0, 64))} is not valid JSON (a string needs quotes: "\\"text\\"")`);
    }
    params[name] = yield* importParam(name, parsed, caps, jsonNumberTexts(text));
    yield;
  }
  return params;
}

function runThrough<T>(steps: Generator<void, T, void>): T {
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
  }
}

/**
 * Parameters from JSON text, one text per name: JSON integers become ints (bigint), other numbers
 * floats, arrays lists; objects are refused (SCRIPT_ERROR), as are names that are not
 * [A-Za-z_][A-Za-z0-9_]*. More than maxScriptParams is SCRIPT_LIMIT.
 */
export function paramsFromJson(json: Readonly<Record<string, string>>, limits: Limits = defaultLimits): ScriptParams {
  return runThrough(parseParams(json, limits));
}

/** paramsFromJson, with `pace` between pieces of at most a thousand values (pacing.ts). */
export async function paramsFromJsonInTurns(json: Readonly<Record<string, string>>, limits: Limits, pace: Pace): Promise<ScriptParams> {
  const steps = parseParams(json, limits);
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
    const wait = pace();
    if (wait !== undefined) await wait;
  }
}

/** Checks and copies parameters given to runScript, so every list in them is a bounded script list. */
export function importParams(params: ScriptParams, limits: Limits): Map<string, ScriptValue> {
  const entries = Object.entries(params);
  checkParamCount(entries.length, limits);
  const caps = valueCaps(limits);
  const imported = new Map<string, ScriptValue>();
  for (const [name, value] of entries) {
    checkParamName(name);
    imported.set(name, runThrough(importParam(name, value, caps)));
  }
  return imported;
}
