/**
 * Structured keys: a tuple of parts turned into one key that no other tuple can produce.
 *
 * Plain joining loses boundaries: ["a:b", "c"] and ["a", "b:c"] both join to "a:b:c". The codec
 * escapes, inside each part, the escape character and the separator, then joins with the
 * separator:
 *
 *   escape(part) = part with "\" replaced by "\\" and then ":" replaced by "\:"
 *   keyOf(bucket)                = bucket
 *   keyOf(bucket, p1, ..., pn)   = bucket + "/" + escape(p1) + ":" + ... + ":" + escape(pn)
 *
 * so ["a:b", "c"] → "b/a\:b:c" and ["a", "b:c"] → "b/a:b\:c". Decoding reads left to right: "\"
 * takes the next character literally, an unescaped ":" ends a part. Decoding is a function, so
 * the encoding is injective; `parseKey` rejects any text that `keyOf` cannot produce, so the two
 * are exact inverses.
 *
 * The bucket is the explicit first part and is written raw before the first "/", which is why it
 * must not contain "/": routing (bucketOf) sees exactly the bucket the caller named. Parts may
 * contain "/" and anything else.
 */
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import { bucketSeparator } from './bucket.js';
import { validateKey } from './validate-key.js';

export const partSeparator = ':';
export const partEscape = '\\';

export interface ParsedKey {
  readonly bucket: string;
  readonly parts: string[];
}

function escapePart(part: string): string {
  let escaped = '';
  for (const character of part) {
    if (character === partEscape || character === partSeparator) escaped += partEscape;
    escaped += character;
  }
  return escaped;
}

function validateBucketName(bucket: unknown): asserts bucket is string {
  if (typeof bucket !== 'string' || bucket.length === 0) {
    throw new AtollError('INVALID_ARGUMENT', 'a structured key needs a non-empty bucket as its first part');
  }
  if (bucket.includes(bucketSeparator)) {
    throw new AtollError('INVALID_ARGUMENT', `a bucket must not contain "${bucketSeparator}": ${JSON.stringify(bucket)}`);
  }
}

function validateParts(parts: unknown[]): asserts parts is string[] {
  if (parts.length > limits.maxKeyParts) {
    throw new AtollError('INVALID_ARGUMENT', `a structured key has at most ${limits.maxKeyParts} parts, got ${parts.length}`);
  }
  for (const part of parts) {
    if (typeof part !== 'string') throw new AtollError('INVALID_ARGUMENT', 'every key part must be a string');
  }
}

function joinParts(parts: string[]): string {
  return parts.map(escapePart).join(partSeparator);
}

/**
 * Encodes a bucket and parts into one key. With no parts the key is the bucket itself; with
 * parts, the bucket is followed by "/". Throws INVALID_ARGUMENT for a bad bucket, INVALID_KEY or
 * KEY_TOO_LARGE when the result is not a valid key.
 *
 * No Unicode normalization: the bucket and parts are used exactly as given, and keys are compared
 * as UTF-8 bytes, so `keyOf('café')` with U+00E9 and with "e" + U+0301 are two different keys.
 * Call `text.normalize('NFC')` on the parts first if your application treats those as equal.
 */
export function keyOf(bucket: string, ...parts: string[]): string {
  validateBucketName(bucket);
  validateParts(parts);
  const key = parts.length === 0 ? bucket : bucket + bucketSeparator + joinParts(parts);
  validateKey(key);
  return key;
}

/**
 * The prefix shared by every structured key in `bucket` whose parts begin with `parts` and go on
 * for at least one more part; pass it to a prefix scan. keyPrefixOf("b", "north") = "b/north:".
 */
export function keyPrefixOf(bucket: string, ...parts: string[]): string {
  validateBucketName(bucket);
  validateParts(parts);
  const prefix = bucket + bucketSeparator + (parts.length === 0 ? '' : joinParts(parts) + partSeparator);
  validateKey(prefix);
  return prefix;
}

/** Inverts keyOf. Throws INVALID_KEY for a key that keyOf cannot have produced. */
export function parseKey(key: string): ParsedKey {
  validateKey(key);
  const separatorIndex = key.indexOf(bucketSeparator);
  if (separatorIndex === -1) return { bucket: key, parts: [] };
  const bucket = key.slice(0, separatorIndex);
  if (bucket.length === 0) throw notStructured(key, 'its bucket is empty');
  const parts: string[] = [];
  let part = '';
  let escaping = false;
  for (const character of key.slice(separatorIndex + 1)) {
    if (escaping) {
      if (character !== partEscape && character !== partSeparator) {
        throw notStructured(key, `"${partEscape}" is followed by ${JSON.stringify(character)}`);
      }
      part += character;
      escaping = false;
    } else if (character === partEscape) {
      escaping = true;
    } else if (character === partSeparator) {
      parts.push(part);
      part = '';
    } else {
      part += character;
    }
  }
  if (escaping) throw notStructured(key, `it ends with a lone "${partEscape}"`);
  parts.push(part);
  return { bucket, parts };
}

function notStructured(key: string, reason: string): AtollError {
  return new AtollError('INVALID_KEY', `not a structured key (${reason})`, { key });
}
