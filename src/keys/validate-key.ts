import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import { isWellFormedUtf16, utf8ByteLength } from './utf8.js';

/**
 * Checks the key promise: a key is a non-empty, well-formed UTF-8 string of at most 4 KiB
 * (counted in UTF-8 bytes, not UTF-16 code units). This is the rule for keys as stored, which
 * include the tenant tag: U+0000 passes here (the storage layout escapes what it must). A key a
 * caller sends is checked with validateUserKey (tenant-keys.ts), which also refuses U+0000
 * anywhere: that character is reserved for the tenant dimension.
 */
export function validateKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') {
    throw new AtollError('INVALID_KEY', `a key must be a string, got ${typeof key}`);
  }
  if (key.length === 0) {
    throw new AtollError('INVALID_KEY', 'a key must not be empty');
  }
  // Checked before well-formedness so a huge key is rejected without scanning it twice.
  if (key.length > limits.maxKeyBytes) {
    throw keyTooLarge(utf8ByteLength(key));
  }
  if (!isWellFormedUtf16(key)) {
    throw new AtollError('INVALID_KEY', 'a key must be well-formed UTF-8 (it contains a lone surrogate)');
  }
  const keyBytes = utf8ByteLength(key);
  if (keyBytes > limits.maxKeyBytes) throw keyTooLarge(keyBytes);
}

function keyTooLarge(keyBytes: number): AtollError {
  return new AtollError(
    'KEY_TOO_LARGE',
    `a key must be at most ${limits.maxKeyBytes} UTF-8 bytes, got ${keyBytes}`,
    { keyBytes, maxKeyBytes: limits.maxKeyBytes },
  );
}
