import { describe, expect, it } from 'vitest';
import { prefixBucket } from '../../src/keys/prefix-bucket.js';
import { partitionOf, partitionOfBucket } from '../../src/keys/partition-table.js';

describe('prefixBucket', () => {
  it('reads a bare bucket name as every key under "bucket/"', () => {
    expect(prefixBucket('services')).toEqual({ bucket: 'services', keyPrefix: 'services/' });
  });

  it('reads text with "/" as a raw prefix inside its bucket', () => {
    expect(prefixBucket('services/au')).toEqual({ bucket: 'services', keyPrefix: 'services/au' });
    expect(prefixBucket('services/')).toEqual({ bucket: 'services', keyPrefix: 'services/' });
    expect(prefixBucket('a/b/c')).toEqual({ bucket: 'a', keyPrefix: 'a/b/c' });
  });

  it('keeps every matching key in the bucket partition', () => {
    const { bucket, keyPrefix } = prefixBucket('services/au');
    expect(partitionOf(`${keyPrefix}th`, 64)).toBe(partitionOfBucket(bucket, 64));
  });

  it('refuses the empty prefix, saying why', () => {
    expect(() => prefixBucket('')).toThrow(expect.objectContaining({ code: 'PREFIX_SPANS_BUCKETS', message: expect.stringMatching(/every bucket/) }));
  });

  it('refuses malformed and oversized prefixes', () => {
    expect(() => prefixBucket('\ud800')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => prefixBucket('x'.repeat(4097))).toThrow(expect.objectContaining({ code: 'KEY_TOO_LARGE' }));
  });
});
