import { describe, expect, it } from 'vitest';
import { validateKey } from '../../src/keys/validate-key.js';
import { bucketOf } from '../../src/keys/bucket.js';

const codeOf = (action: () => unknown): string | undefined => {
  try {
    action();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('validateKey', () => {
  it('accepts non-empty well-formed keys, any character included', () => {
    for (const key of ['a', 'services/auth', '\u0000', 'ÿ', '😀', '/', 'a\u0000/\uffff']) {
      expect(() => validateKey(key)).not.toThrow();
    }
  });

  it('rejects the empty key and non-strings with INVALID_KEY', () => {
    expect(codeOf(() => validateKey(''))).toBe('INVALID_KEY');
    expect(codeOf(() => validateKey(42))).toBe('INVALID_KEY');
  });

  it('rejects lone surrogates with INVALID_KEY', () => {
    for (const key of ['\ud800', 'a\udc00b', '\udbff', '😀'.slice(0, 1), '\udc00\ud800']) {
      expect(codeOf(() => validateKey(key))).toBe('INVALID_KEY');
    }
  });

  it('counts the 4 KiB limit in UTF-8 bytes', () => {
    expect(() => validateKey('a'.repeat(4096))).not.toThrow();
    expect(codeOf(() => validateKey('a'.repeat(4097)))).toBe('KEY_TOO_LARGE');
    // 'é' is 2 bytes, '😀' 4: 2048 * 2 = 4096 fits, one more does not.
    expect(() => validateKey('é'.repeat(2048))).not.toThrow();
    expect(codeOf(() => validateKey('é'.repeat(2049)))).toBe('KEY_TOO_LARGE');
    expect(() => validateKey('😀'.repeat(1024))).not.toThrow();
    expect(codeOf(() => validateKey('😀'.repeat(1024) + 'a'))).toBe('KEY_TOO_LARGE');
    expect(codeOf(() => validateKey('€'.repeat(1366)))).toBe('KEY_TOO_LARGE');
  });
});

describe('bucketOf', () => {
  it('is the text before the first slash, or the whole key', () => {
    expect(bucketOf('services/auth')).toBe('services');
    expect(bucketOf('services/auth/v2')).toBe('services');
    expect(bucketOf('config')).toBe('config');
    expect(bucketOf('/leading')).toBe('');
    expect(bucketOf('trailing/')).toBe('trailing');
  });
});
