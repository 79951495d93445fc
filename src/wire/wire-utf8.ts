/**
 * Key identity on the wire: every string field of a request is checked to be valid UTF-8 in the
 * bytes as they arrived, before protobufjs decodes them. protobufjs decodes strings with
 * replacement, so `bad/\xff` and `bad/\xfe` would both become `bad/\uFFFD` and silently name one
 * key; after decoding, nothing can tell them apart any more.
 *
 * How: from the message descriptors proto-loader gives (packageDefinition), build one plan per
 * message type: which field numbers are strings, which are nested messages, and which wire type
 * each known field must have. `checkedDeserializer` wraps a method's `requestDeserialize` with a
 * walk over the raw bytes that follows the plan, checks each string's byte range with
 * node:buffer's `isUtf8` and skips everything else by length. It never throws: a problem is
 * attached to the decoded message under `wireProblemKey`, and the handlers (unary calls, each
 * request of a KV.Stream, Peer.Forward) answer that request with `wireProblemError` and change
 * nothing. A throw from a deserializer would end a whole KV.Stream, not just one request.
 *
 * The walk must see exactly the byte ranges protobufjs's decoder will read, or a crafted message
 * could show the walk one string and the decoder another. protobufjs reads a known field by its
 * declared type whatever wire type the tag says, and reads 32-bit varints (tags, lengths, int32,
 * uint32, bool, enum) with a shortcut that consumes 10 bytes whenever the first 5 all continue.
 * So the walk is stricter than protobufjs, never looser: a known field with another wire type, a
 * 32-bit varint 6 to 9 bytes long, a tag or length longer than 5 bytes, a field number 0, a group,
 * a field that runs past the end of its message, or nesting deeper than 32 is a malformed message
 * (INVALID_ARGUMENT). Everything the walk accepts, protobufjs reads over the same bytes.
 */
import { isUtf8 } from 'node:buffer';
import { AtollError } from '../errors.js';

/** Why a request was refused before it was decoded. */
export interface WireProblem {
  readonly reason: 'invalid-utf8' | 'malformed';
  /** The dotted proto field path of the offending field ("put.key"), or '' for the message. */
  readonly field: string;
  /** True for fields that name keys: key, prefix, bucket, read_keys, read_prefixes. */
  readonly keyLike: boolean;
  /** For people: what is wrong, without echoing the bytes. */
  readonly detail: string;
}

/** Where a checked deserializer leaves the problem it found on the decoded message. */
export const wireProblemKey: unique symbol = Symbol('atoll.wireProblem');

/**
 * The bytes a well-formed request arrived as, by the message a checked deserializer decoded from
 * them (the received buffer, which the decoded bytes fields already share; kept beside the message,
 * which stays exactly as protobufjs made it): a KV request a node forwards travels as these bytes
 * (a unary call's) or their range of its operation (a KV.Stream request's, `fieldBytes`), not
 * encoded again (src/wire/forward-codec.ts).
 */
export const sentBytes = new WeakMap<object, Uint8Array>();

/** Marks deserializers wrapped by `checkedDeserializer`, so a test can find one left unwrapped. */
export const checkedDeserializerMark: unique symbol = Symbol('atoll.checkedDeserializer');

const fieldKind = Object.freeze({
  string: 0,
  bytes: 1,
  message: 2,
  /** A nested message with no string field anywhere inside: skipped by its length. */
  opaqueMessage: 3,
  varint32: 4,
  varint64: 5,
  fixed32: 6,
  fixed64: 7,
});
type FieldKind = (typeof fieldKind)[keyof typeof fieldKind];

const wireType = Object.freeze({ varint: 0, fixed64: 1, lengthDelimited: 2, startGroup: 3, endGroup: 4, fixed32: 5 });

interface FieldPlan {
  /** The proto field name (snake_case), for error paths. */
  readonly name: string;
  /** Set once; turned from message into opaqueMessage when the nested type has no strings. */
  kind: FieldKind;
  /** The wire type protobufjs reads the field's type with. */
  readonly wireType: number;
  readonly repeated: boolean;
  readonly keyLike: boolean;
  /** For kind message: the nested message's plan (filled in after every plan exists). */
  message: MessagePlan | undefined;
}

/** How to walk one message type's wire bytes. */
export interface MessagePlan {
  /** Fully qualified name, "atoll.v1.PutRequest". */
  readonly name: string;
  /** Known fields by field number; holes are unknown fields. */
  readonly fields: (FieldPlan | undefined)[];
  /** Whether any string field is reachable from this message (otherwise there is nothing to check). */
  hasStrings: boolean;
}

/** Fields whose text names keys: their invalid UTF-8 is INVALID_KEY rather than INVALID_ARGUMENT. */
const keyLikeFieldNames: ReadonlySet<string> = new Set(['key', 'prefix', 'bucket', 'read_keys', 'read_prefixes']);

/** Nesting bound of the walk; Atoll's requests nest three deep. */
const maxDepth = 32;

/** Strings this long or longer go to isUtf8 (one subarray); shorter ones are checked in JavaScript. */
const asciiScanMaxBytes = 64;

const kindOfDescriptorType: Readonly<Record<string, FieldKind>> = Object.freeze({
  TYPE_STRING: fieldKind.string,
  TYPE_BYTES: fieldKind.bytes,
  TYPE_MESSAGE: fieldKind.message,
  TYPE_INT32: fieldKind.varint32,
  TYPE_UINT32: fieldKind.varint32,
  TYPE_SINT32: fieldKind.varint32,
  TYPE_BOOL: fieldKind.varint32,
  TYPE_ENUM: fieldKind.varint32,
  TYPE_INT64: fieldKind.varint64,
  TYPE_UINT64: fieldKind.varint64,
  TYPE_SINT64: fieldKind.varint64,
  TYPE_FIXED32: fieldKind.fixed32,
  TYPE_SFIXED32: fieldKind.fixed32,
  TYPE_FLOAT: fieldKind.fixed32,
  TYPE_FIXED64: fieldKind.fixed64,
  TYPE_SFIXED64: fieldKind.fixed64,
  TYPE_DOUBLE: fieldKind.fixed64,
});

// ------------------------------------------------------------------------------ building plans

/** The parts of a DescriptorProto (as proto-loader renders it) that the plans need. */
interface FieldDescriptor {
  readonly name: string;
  readonly number: number;
  readonly label: string;
  readonly type: string;
  readonly typeName: string;
}
interface MessageDescriptor {
  readonly name: string;
  readonly field?: readonly FieldDescriptor[];
  readonly nestedType?: readonly MessageDescriptor[];
  readonly options?: { readonly mapEntry?: boolean } | null;
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** Every message descriptor of a package definition by full name, nested types included. */
function collectDescriptors(packageDefinition: Readonly<Record<string, unknown>>): Map<string, MessageDescriptor> {
  const descriptors = new Map<string, MessageDescriptor>();
  const add = (fullName: string, descriptor: MessageDescriptor): void => {
    descriptors.set(fullName, descriptor);
    for (const nested of descriptor.nestedType ?? []) add(`${fullName}.${nested.name}`, nested);
  };
  for (const [fullName, entry] of Object.entries(packageDefinition)) {
    const definition = entry as { format?: unknown; type?: unknown };
    if (definition.format === 'Protocol Buffer 3 DescriptorProto') add(fullName, definition.type as MessageDescriptor);
  }
  return descriptors;
}

/** Resolves a type name the protobuf way: from the innermost enclosing scope outwards. */
function resolveTypeName(typeName: string, scope: string, known: ReadonlyMap<string, unknown>): string {
  if (typeName.startsWith('.')) return typeName.slice(1);
  for (let outer = scope; ; outer = outer.slice(0, Math.max(0, outer.lastIndexOf('.')))) {
    const candidate = outer === '' ? typeName : `${outer}.${typeName}`;
    if (known.has(candidate)) return candidate;
    if (outer === '') break;
  }
  throw new Error(`cannot resolve message type ${typeName} from ${scope}`);
}

function fieldPlanOf(field: FieldDescriptor, isMapEntry: boolean): FieldPlan {
  const kind = kindOfDescriptorType[field.type];
  if (kind === undefined) throw new Error(`field ${field.name} has type ${field.type}, which the wire check does not handle`);
  const name = snakeCase(field.name);
  return {
    name,
    kind,
    wireType: naturalWireType(kind),
    repeated: field.label === 'LABEL_REPEATED',
    keyLike: !isMapEntry && keyLikeFieldNames.has(name),
    message: undefined,
  };
}

/**
 * One plan per message type of the package definition (proto-loader's, with keepCase or not),
 * keyed by full name. Throws at load time for a schema the walk cannot follow (groups).
 */
export function messagePlansOf(packageDefinition: Readonly<Record<string, unknown>>): ReadonlyMap<string, MessagePlan> {
  const descriptors = collectDescriptors(packageDefinition);
  const plans = new Map<string, MessagePlan>();
  for (const [name, descriptor] of descriptors) {
    const fields: (FieldPlan | undefined)[] = [];
    for (const field of descriptor.field ?? []) fields[field.number] = fieldPlanOf(field, descriptor.options?.mapEntry === true);
    plans.set(name, { name, fields, hasStrings: fields.some((field) => field?.kind === fieldKind.string) });
  }
  for (const [name, descriptor] of descriptors) {
    const plan = plans.get(name)!;
    for (const field of descriptor.field ?? []) {
      if (field.type !== 'TYPE_MESSAGE') continue;
      plan.fields[field.number]!.message = plans.get(resolveTypeName(field.typeName, name, descriptors))!;
    }
  }
  propagateHasStrings(plans);
  for (const plan of plans.values()) {
    for (const field of plan.fields) {
      if (field?.kind === fieldKind.message && !field.message!.hasStrings) field.kind = fieldKind.opaqueMessage;
    }
  }
  return plans;
}

/** A message has strings when a field of it, or of a message inside it, is a string. */
function propagateHasStrings(plans: ReadonlyMap<string, MessagePlan>): void {
  // Each round marks at least one more message or stops; there are only plans.size messages.
  for (let round = 0; round <= plans.size; round++) {
    let changed = false;
    for (const plan of plans.values()) {
      if (plan.hasStrings) continue;
      if (plan.fields.some((field) => field?.message?.hasStrings === true)) {
        plan.hasStrings = true;
        changed = true;
      }
    }
    if (!changed) return;
  }
}

// ------------------------------------------------------------------------------ the walk

/**
 * The walk's position. Helpers return the position after what they read, or `malformedAt` (-1);
 * a string that is not UTF-8 stops the walk with a WireProblem instead.
 */
const malformedAt = -1;

/** Why the last helper returned malformedAt (set only on that path). */
let malformedDetail = '';

function malformed(detail: string): number {
  malformedDetail = detail;
  return malformedAt;
}

/**
 * A tag or a length, read as protobufjs's uint32() reads it, but only in the forms where the two
 * agree exactly: at most 5 bytes and a value below 2^32. Sets `headerValue`.
 */
let headerValue = 0;
function readHeader(bytes: Uint8Array, position: number, end: number): number {
  let value = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (position >= end) return malformed('a varint is cut off by the end of its message');
    const byte = bytes[position++]!;
    value |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      headerValue = value;
      return position;
    }
  }
  // The fifth byte: protobufjs keeps only its low 4 bits, so anything more is refused.
  if (position >= end) return malformed('a varint is cut off by the end of its message');
  const last = bytes[position++]!;
  if (last >= 16) return malformed('a tag or length is longer than 32 bits');
  headerValue = value + last * 0x10000000;
  return position;
}

/** A varint value of a field of `kind` (undefined: an unknown field), in the lengths protobufjs reads alike. */
function skipVarint(bytes: Uint8Array, position: number, end: number, kind: FieldKind | undefined): number {
  const start = position;
  for (;;) {
    if (position >= end) return malformed('a varint is cut off by the end of its message');
    if (position - start >= 10) return malformed('a varint is longer than 10 bytes');
    if (bytes[position++]! < 0x80) break;
  }
  const length = position - start;
  // protobufjs reads 32-bit varints 5 bytes at a time: 6 to 9 bytes would desynchronise it.
  if (kind === fieldKind.varint32 && length > 5 && length < 10) return malformed(`a 32-bit varint is ${length} bytes long`);
  return position;
}

function skipFixed(position: number, end: number, width: number): number {
  return position + width > end ? malformed('a fixed-width value is cut off by the end of its message') : position + width;
}

/** A length prefix and the bytes it announces; sets `headerValue` to the length. */
function skipLengthDelimited(bytes: Uint8Array, position: number, end: number): number {
  position = readHeader(bytes, position, end);
  if (position === malformedAt) return malformedAt;
  if (headerValue > end - position) return malformed(`a length of ${headerValue} runs past the end of its message`);
  return position + headerValue;
}

function skipUnknown(bytes: Uint8Array, position: number, end: number, type: number): number {
  switch (type) {
    case wireType.varint:
      return skipVarint(bytes, position, end, undefined);
    case wireType.fixed64:
      return skipFixed(position, end, 8);
    case wireType.lengthDelimited:
      return skipLengthDelimited(bytes, position, end);
    case wireType.fixed32:
      return skipFixed(position, end, 4);
    default:
      return malformed(`wire type ${type} is not accepted`);
  }
}

function naturalWireType(kind: FieldKind): number {
  switch (kind) {
    case fieldKind.varint32:
    case fieldKind.varint64:
      return wireType.varint;
    case fieldKind.fixed32:
      return wireType.fixed32;
    case fieldKind.fixed64:
      return wireType.fixed64;
    default:
      return wireType.lengthDelimited;
  }
}

function skipScalar(bytes: Uint8Array, position: number, end: number, kind: FieldKind): number {
  if (kind === fieldKind.fixed32) return skipFixed(position, end, 4);
  if (kind === fieldKind.fixed64) return skipFixed(position, end, 8);
  return skipVarint(bytes, position, end, kind);
}

/** A packed repeated scalar: elements read back to back must end exactly at the length's end. */
function skipPacked(bytes: Uint8Array, position: number, end: number, kind: FieldKind): number {
  position = readHeader(bytes, position, end);
  if (position === malformedAt) return malformedAt;
  if (headerValue > end - position) return malformed(`a length of ${headerValue} runs past the end of its message`);
  const packedEnd = position + headerValue;
  // Each element takes at least one byte, so the loop ends within headerValue rounds.
  while (position < packedEnd) {
    position = skipScalar(bytes, position, packedEnd, kind);
    if (position === malformedAt) return malformedAt;
  }
  return position;
}

/**
 * Whether bytes[start, end) are valid UTF-8. Short strings (keys, mostly ASCII) are checked here
 * in JavaScript, which costs less than a subarray and a call into isUtf8; long ones (scripts,
 * 4 KiB keys) go to isUtf8, which is faster per byte.
 */
export function isUtf8Range(bytes: Uint8Array, start: number, end: number): boolean {
  if (end - start >= asciiScanMaxBytes) return isUtf8(bytes.subarray(start, end));
  let index = start;
  while (index < end) {
    const lead = bytes[index]!;
    if (lead < 0x80) {
      index++;
      continue;
    }
    const length = sequenceLength(bytes, index, end, lead);
    if (length === 0) return false;
    index += length;
  }
  return true;
}

const isContinuation = (byte: number | undefined): boolean => byte !== undefined && (byte & 0xc0) === 0x80;

/**
 * The length of the well-formed UTF-8 sequence starting with `lead` at `index` (at least 0x80),
 * or 0 when it is not one: the table of well-formed sequences of the Unicode standard (section
 * 3.9, table 3-7), which excludes overlong forms, surrogates and code points past U+10FFFF.
 */
function sequenceLength(bytes: Uint8Array, index: number, end: number, lead: number): number {
  const second = index + 1 < end ? bytes[index + 1] : undefined;
  if (lead >= 0xc2 && lead <= 0xdf) return isContinuation(second) ? 2 : 0;
  if (second === undefined) return 0;
  let secondLow = 0x80;
  let secondHigh = 0xbf;
  if (lead === 0xe0) secondLow = 0xa0;
  else if (lead === 0xed) secondHigh = 0x9f;
  else if (lead === 0xf0) secondLow = 0x90;
  else if (lead === 0xf4) secondHigh = 0x8f;
  else if (lead < 0xe1 || lead > 0xf3) return 0;
  if (second < secondLow || second > secondHigh) return 0;
  const length = lead < 0xf0 ? 3 : 4;
  if (index + length > end) return 0;
  if (!isContinuation(bytes[index + 2])) return 0;
  if (length === 4 && !isContinuation(bytes[index + 3])) return 0;
  return length;
}

function problemIn(field: FieldPlan, inner: WireProblem): WireProblem {
  return { ...inner, field: inner.field === '' ? field.name : `${field.name}.${inner.field}` };
}

/** Position after one known field's value, or malformedAt, or the WireProblem found inside it. */
function walkField(bytes: Uint8Array, position: number, end: number, field: FieldPlan, type: number, depth: number): number | WireProblem {
  const natural = field.wireType;
  if (type !== natural) {
    // protobufjs takes a repeated scalar packed (wire type 2) or one at a time; anything else it misreads.
    if (field.repeated && type === wireType.lengthDelimited && natural !== wireType.lengthDelimited) return skipPacked(bytes, position, end, field.kind);
    return malformed(`field ${field.name} has wire type ${type}, expected ${natural}`);
  }
  switch (field.kind) {
    case fieldKind.string: {
      const next = skipLengthDelimited(bytes, position, end);
      if (next === malformedAt) return malformedAt;
      if (isUtf8Range(bytes, next - headerValue, next)) return next;
      return { reason: 'invalid-utf8', field: field.name, keyLike: field.keyLike, detail: `${field.name} is not valid UTF-8` };
    }
    case fieldKind.message: {
      const next = skipLengthDelimited(bytes, position, end);
      if (next === malformedAt) return malformedAt;
      if (depth + 1 >= maxDepth) return malformed(`messages nest deeper than ${maxDepth}`);
      const inner = walkMessage(field.message!, bytes, next - headerValue, next, depth + 1);
      return inner === undefined ? next : problemIn(field, inner);
    }
    case fieldKind.bytes:
    case fieldKind.opaqueMessage:
      return skipLengthDelimited(bytes, position, end);
    default:
      return skipScalar(bytes, position, end, field.kind);
  }
}

function walkMessage(plan: MessagePlan, bytes: Uint8Array, position: number, end: number, depth: number): WireProblem | undefined {
  const fields = plan.fields;
  // Every round consumes at least one byte, so the loop ends within end - position rounds.
  while (position < end) {
    position = readHeader(bytes, position, end);
    if (position === malformedAt) return malformedProblem();
    const fieldNumber = headerValue >>> 3;
    const type = headerValue & 7;
    if (fieldNumber === 0) return malformedProblem('field number 0');
    const field = fieldNumber < fields.length ? fields[fieldNumber] : undefined;
    const next = field === undefined ? skipUnknown(bytes, position, end, type) : walkField(bytes, position, end, field, type, depth);
    if (typeof next !== 'number') return next;
    if (next === malformedAt) return field === undefined ? malformedProblem() : malformedProblem(undefined, field);
    position = next;
  }
  return undefined;
}

function malformedProblem(detail = malformedDetail, field?: FieldPlan): WireProblem {
  return { reason: 'malformed', field: field?.name ?? '', keyLike: false, detail };
}

/**
 * The first problem in a message's wire bytes: a string field that is not valid UTF-8, or bytes
 * that are not a well-formed message of the plan's type. Undefined when the message is fine.
 */
export function findWireProblem(plan: MessagePlan, bytes: Uint8Array): WireProblem | undefined {
  if (!plan.hasStrings) return undefined;
  return walkMessage(plan, bytes, 0, bytes.length, 0);
}

/**
 * The bytes of field `fieldNumber` of a message whose bytes a checked deserializer accepted (a
 * view, not a copy): the embedded message protobufjs decoded that field from. Undefined when the
 * field is absent, is not length-delimited, or occurs more than once (protobufjs keeps the last
 * occurrence whole, but merging them is what protobuf means: such a request is not sent on as it
 * arrived).
 */
export function fieldBytes(message: Uint8Array, fieldNumber: number): Uint8Array | undefined {
  let found: Uint8Array | undefined;
  let position = 0;
  while (position < message.length) {
    position = readHeader(message, position, message.length);
    if (position === malformedAt) return undefined;
    const field = headerValue >>> 3;
    const type = headerValue & 7;
    const next = skipUnknown(message, position, message.length, type);
    if (next === malformedAt) return undefined;
    if (field === fieldNumber) {
      // skipLengthDelimited left the length in headerValue.
      if (found !== undefined || type !== wireType.lengthDelimited) return undefined;
      found = message.subarray(next - headerValue, next);
    }
    position = next;
  }
  return found;
}

// ------------------------------------------------------------------------------ wrapping and errors

/**
 * Wraps a proto-loader request deserializer: the bytes are walked first; the message is decoded
 * either way (so a KV.Stream request can still be answered by its id), and a problem rides on it
 * under `wireProblemKey`. Never throws: bytes protobufjs cannot decode give an empty message
 * marked malformed.
 */
export function checkedDeserializer(plan: MessagePlan, deserialize: (bytes: Buffer) => unknown): (bytes: Buffer) => unknown {
  const checked = (bytes: Buffer): unknown => {
    let problem = findWireProblem(plan, bytes);
    let message: unknown;
    try {
      message = deserialize(bytes);
    } catch (error) {
      message = {};
      problem ??= { reason: 'malformed', field: '', keyLike: false, detail: error instanceof Error ? error.message : 'undecodable' };
    }
    if (problem === undefined) {
      // The bytes as they arrived, so a node that forwards the request sends them as they are (sentBytes).
      if (typeof message === 'object' && message !== null) sentBytes.set(message, bytes);
      return message;
    }
    if (typeof message !== 'object' || message === null) message = {};
    (message as { [wireProblemKey]?: WireProblem })[wireProblemKey] = problem;
    return message;
  };
  return Object.assign(checked, { [checkedDeserializerMark]: plan.name });
}

/** The problem a checked deserializer attached to a decoded request, if any. */
export function wireProblemOf(message: unknown): WireProblem | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  return (message as { [wireProblemKey]?: WireProblem })[wireProblemKey];
}

/** The error a request with a wire problem is answered with. */
export function wireProblemError(problem: WireProblem): AtollError {
  if (problem.reason === 'invalid-utf8') {
    const code = problem.keyLike ? 'INVALID_KEY' : 'INVALID_ARGUMENT';
    return new AtollError(code, `${problem.field} is not valid UTF-8: text fields must be UTF-8 exactly as sent, and are never repaired`);
  }
  const where = problem.field === '' ? '' : ` (in ${problem.field})`;
  return new AtollError('INVALID_ARGUMENT', `the request is not a well-formed protobuf message${where}: ${problem.detail}`);
}

/** Throws the request's wire problem as an AtollError; call it before reading a decoded request. */
export function throwIfWireProblem(message: unknown): void {
  // wireProblemOf, inline: this runs for every request.
  if (typeof message !== 'object' || message === null) return;
  const problem = (message as { [wireProblemKey]?: WireProblem })[wireProblemKey];
  if (problem !== undefined) throw wireProblemError(problem);
}
