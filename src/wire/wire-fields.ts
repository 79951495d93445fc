/**
 * The field helpers of the message conversions (convert.ts): one field of a decoded message,
 * checked for its type (an AtollError, INVALID_KEY or INVALID_ARGUMENT, naming the field, when it
 * is not), with the value an absent field means.
 */
import { AtollError } from '../errors.js';
import { validateKey } from '../keys/validate-key.js';
import type { Consistency } from '../api/node-api.js';
import { parseWireCount } from './wire-numbers.js';
import type { ConsistencyName } from './wire-types.js';

/** The required key field (an absent key is the commonest mistake: say so plainly). A request's key is validated at the node (src/tenancy/check-operation.ts). */
export function decodeKey(value: unknown, validate = false): string {
  if (value === undefined || value === null || value === '') throw new AtollError('INVALID_KEY', 'the request has no key: set the `key` field to a non-empty UTF-8 string');
  if (validate || typeof value !== 'string') validateKey(value);
  return value as string;
}

/** A view of the same memory as a plain Uint8Array: callers compare and copy it like any other. */
export function decodeBytes(value: unknown, field: string): Uint8Array {
  if (value === undefined || value === null) return new Uint8Array(0);
  if (!(value instanceof Uint8Array)) throw new AtollError('INVALID_ARGUMENT', `${field} must be bytes`, { field });
  return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}

export function decodeBoolean(value: unknown, field: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new AtollError('INVALID_ARGUMENT', `${field} must be a boolean`, { field });
  return value;
}

export function decodeText(value: unknown, field: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new AtollError('INVALID_ARGUMENT', `${field} must be a string`, { field });
  return value;
}

export function decodeConsistency(value: unknown): Consistency {
  if (value === undefined || value === null || value === 'LINEARIZABLE' || value === 0) return 'linearizable';
  if (value === 'STALE' || value === 1) return 'stale';
  throw new AtollError('INVALID_ARGUMENT', `consistency must be LINEARIZABLE or STALE, got ${String(value)}`);
}

export function encodeConsistency(consistency: Consistency | undefined): ConsistencyName {
  return consistency === 'stale' ? 'STALE' : 'LINEARIZABLE';
}

/** A revision to read at: absent and 0 both mean "the latest", which the API spells as absent. */
export function decodeReadRevision(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  const revision = parseWireCount(value, 'revision');
  return revision === 0 ? undefined : revision;
}

export function decodeOptionalCount(value: unknown, field: string): number | undefined {
  return value === undefined || value === null ? undefined : parseWireCount(value, field);
}

export function decodeCount(value: unknown, field: string): number {
  return parseWireCount(value ?? '0', field);
}

export function decodeRepeated<T>(value: unknown, field: string, decodeItem: (item: unknown) => T): T[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new AtollError('INVALID_ARGUMENT', `${field} must be a list`, { field });
  return value.map(decodeItem);
}

export function decodeMessage<T extends object>(value: unknown, name: string): Partial<T> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object') throw new AtollError('INVALID_ARGUMENT', `${name} must be a message`);
  return value as Partial<T>;
}

export function decodeRequestId(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new AtollError('INVALID_ARGUMENT', 'request_id must be a string');
  return value;
}
