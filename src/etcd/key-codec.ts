/**
 * etcd keys are arbitrary bytes compared bytewise; Atoll keys are UTF-8 strings compared by their
 * UTF-8 bytes, which is Unicode code point order (src/mvcc/key-layout.ts). A tenant's etcd keyspace
 * lives in the one bucket `etcd`, under `etcd/k/`, each key encoded by a prefix-free code that
 * maps every byte to one or two code points:
 *
 *   byte 0x00          -> U+0001 U+0001
 *   byte 0x01          -> U+0001 U+0002
 *   bytes 0x02 - 0x7F  -> the same code point (ASCII keys stay readable)
 *   bytes 0x80 - 0xFF  -> U+0080 - U+00FF (two UTF-8 bytes each)
 *
 * Why this is exact (the property test in test/etcd/key-codec.test.ts checks it):
 * - Every codeword is a valid, non-NUL code point sequence, so an encoded key is a valid Atoll
 *   key text (U+0000 is reserved for tenants, src/keys/tenant-keys.ts).
 * - The code is prefix-free (U+0001 starts only the two 2-point words, which differ in their
 *   second point) and monotonic (byte a < byte b implies word(a) < word(b), comparing code
 *   points). For a prefix-free monotonic code, encoded sequences compare as the byte sequences
 *   do, proper prefixes first included: so a byte interval [a, b) is the code point interval
 *   [enc(a), enc(b)), and a byte prefix p is the text prefix enc(p).
 * - Decoding reads one codeword at a time; anything not produced by encode is refused.
 *
 * Size: an encoded key is at most `limits.maxKeyBytes` UTF-8 bytes including `etcd/k/` (7 bytes):
 * 4089 bytes of keys made of 0x02-0x7F, 2044 bytes at worst (every byte 0x00, 0x01 or >= 0x80).
 */
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import { compareBytes } from '../storage/bytes.js';

/** The bucket that holds a tenant's etcd keyspace (one bucket, so one partition). */
export const etcdBucket = 'etcd';
/** The text every encoded etcd key starts with. */
export const etcdKeyPrefix = `${etcdBucket}/k/`;
/** Metadata of the keyspace (the compaction floor, the lease registry) lives beside the keys. */
export const etcdMetaPrefix = `${etcdBucket}/m/`;

const escapePoint = 0x01;

/** The Atoll key text of the etcd key bytes, without the bucket prefix. */
export function encodeKeyBody(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) {
    if (byte <= 0x01) text += String.fromCharCode(escapePoint, byte + 1);
    else text += String.fromCharCode(byte);
  }
  return text;
}

/** The Atoll key of an etcd key (checked against the key size limit). */
export function encodeKey(bytes: Uint8Array): string {
  const key = etcdKeyPrefix + encodeKeyBody(bytes);
  if (utf8LengthOfEncoded(key) > limits.maxKeyBytes) {
    throw new AtollError('KEY_TOO_LARGE', `an etcd key may take at most ${limits.maxKeyBytes} bytes once encoded (docs/etcd-api.md, "Keys")`);
  }
  return key;
}

/** UTF-8 length of encoded text: code points above U+007F take two bytes. */
function utf8LengthOfEncoded(text: string): number {
  let length = text.length;
  for (let index = 0; index < text.length; index++) if (text.charCodeAt(index) > 0x7f) length++;
  return length;
}

/** The etcd key bytes of an encoded key body; INVALID_ARGUMENT for text encode never makes. */
export function decodeKeyBody(text: string): Uint8Array {
  const bytes: number[] = [];
  for (let index = 0; index < text.length; index++) {
    const point = text.charCodeAt(index);
    if (point === escapePoint) {
      const next = text.charCodeAt(index + 1);
      if (next !== 0x01 && next !== 0x02) throw notEncoded();
      bytes.push(next - 1);
      index++;
    } else if (point >= 0x02 && point <= 0xff) {
      bytes.push(point);
    } else {
      throw notEncoded();
    }
  }
  return Uint8Array.from(bytes);
}

/** The etcd key of a full Atoll key from the keyspace (the caller's own, without tenant tag). */
export function decodeKey(key: string): Uint8Array {
  if (!key.startsWith(etcdKeyPrefix)) throw notEncoded();
  return decodeKeyBody(key.slice(etcdKeyPrefix.length));
}

function notEncoded(): AtollError {
  return new AtollError('INTERNAL', 'a key of the etcd bucket is not an encoded etcd key');
}

/** Bytewise comparison, as etcd orders keys (the store's own comparison). */
export { compareBytes };

/**
 * An etcd key interval as Atoll sees it: `prefix` is the longest Atoll key prefix every key of
 * the interval shares (one prefix scan of one bucket), and `contains` checks a key exactly.
 */
export interface KeyInterval {
  /** Exactly one key (range_end empty). */
  readonly single?: Uint8Array;
  readonly scanPrefix: string;
  contains(key: Uint8Array): boolean;
}

/**
 * etcd's interval forms: range_end empty is the key alone; range_end "\0" is every key >= key
 * (key "\0" too: every key); otherwise [key, range_end), empty when range_end <= key.
 */
export function keyInterval(key: Uint8Array, rangeEnd: Uint8Array): KeyInterval {
  if (rangeEnd.length === 0) return { single: key, scanPrefix: encodeKey(key), contains: (other) => compareBytes(other, key) === 0 };
  const unbounded = rangeEnd.length === 1 && rangeEnd[0] === 0;
  if (unbounded) return { scanPrefix: etcdKeyPrefix, contains: (other) => compareBytes(other, key) >= 0 };
  const from = encodeKeyBody(key);
  const to = encodeKeyBody(rangeEnd);
  let shared = 0;
  while (shared < from.length && shared < to.length && from[shared] === to[shared]) shared++;
  return {
    scanPrefix: etcdKeyPrefix + from.slice(0, shared),
    contains: (other) => compareBytes(other, key) >= 0 && compareBytes(other, rangeEnd) < 0,
  };
}
