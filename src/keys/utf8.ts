/**
 * UTF-8 helpers for keys. JavaScript strings are UTF-16 and may hold lone surrogates, which have
 * no UTF-8 form: TextEncoder would silently turn them into U+FFFD, so two different strings could
 * become the same stored key. Keys are therefore checked for well-formedness before encoding.
 */

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const highSurrogateFirst = 0xd800;
const highSurrogateLast = 0xdbff;
const lowSurrogateFirst = 0xdc00;
const lowSurrogateLast = 0xdfff;

function isHighSurrogate(codeUnit: number): boolean {
  return codeUnit >= highSurrogateFirst && codeUnit <= highSurrogateLast;
}

function isLowSurrogate(codeUnit: number): boolean {
  return codeUnit >= lowSurrogateFirst && codeUnit <= lowSurrogateLast;
}

/** True when the string has no lone surrogate, so it has exactly one UTF-8 encoding. */
export function isWellFormedUtf16(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const codeUnit = text.charCodeAt(index);
    if (isHighSurrogate(codeUnit)) {
      if (index + 1 < text.length && isLowSurrogate(text.charCodeAt(index + 1))) {
        index++;
        continue;
      }
      return false;
    }
    if (isLowSurrogate(codeUnit)) return false;
  }
  return true;
}

/**
 * The UTF-8 length of a well-formed string, without allocating. A surrogate pair is one code
 * point of four bytes; each of its two code units is counted as two.
 */
export function utf8ByteLength(text: string): number {
  let byteCount = 0;
  for (let index = 0; index < text.length; index++) {
    const codeUnit = text.charCodeAt(index);
    if (codeUnit < 0x80) byteCount += 1;
    else if (codeUnit < 0x800) byteCount += 2;
    else if (isHighSurrogate(codeUnit) || isLowSurrogate(codeUnit)) byteCount += 2;
    else byteCount += 3;
  }
  return byteCount;
}

export function encodeUtf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/**
 * `text` as UTF-8 in `scratch` when it surely fits (3 bytes a code unit at most), as a view of
 * it that is valid until the next call; else a new array. For callers that read the bytes at once
 * and keep none of them (hashing a bucket name), without an allocation per call.
 */
export function encodeUtf8Transient(text: string, scratch: Uint8Array): Uint8Array {
  if (text.length * 3 > scratch.length) return encoder.encode(text);
  return scratch.subarray(0, encoder.encodeInto(text, scratch).written);
}

/** Decodes UTF-8, throwing a TypeError on malformed input rather than inventing U+FFFD. */
export function decodeUtf8(bytes: Uint8Array): string {
  return strictDecoder.decode(bytes);
}
